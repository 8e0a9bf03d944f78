//! An observer's statistics as bytes, so calibration split over Web Workers, threads or
//! processes can ship each part's statistics to one place and [`merge`](super::Observer::merge)
//! them there.
//!
//! Only the statistics travel, never the configuration: the receiving observer is created
//! with the same constructor and arguments as the sender (that is what makes them mergeable)
//! and [`ObserverState::read_state`] checks that the settings recorded with the statistics
//! (kind, bins, two-pass, percentile...) are its own. Nothing here allocates.
//!
//! The encoding (version [`STATE_VERSION`]) is little-endian: a kind tag byte, the observer's
//! settings, then its statistics. Histogram counts are written sparsely (the non-zero bins
//! only), so a 2048-bin histogram of a ReLU output takes a few hundred bytes, not 16 KiB.
//!
//! ```
//! use microquant::observer::{HistogramObserver, Observer, ObserverConfig, ObserverState};
//! use microquant::quant::{QScheme, QuantDType};
//! let cfg = ObserverConfig::new(QuantDType::Int8, QScheme::Affine);
//! // A worker observes its share and sends the bytes.
//! let mut worker = HistogramObserver::<256>::new(cfg);
//! worker.observe(&[0.5, -1.0, 2.0]).unwrap();
//! let mut buf = [0u8; 4096];
//! let n = worker.write_state(&mut buf).unwrap();
//! assert_eq!(n, worker.state_len());
//! // The main thread rebuilds it and merges it with its own.
//! let mut received = HistogramObserver::<256>::new(cfg);
//! received.read_state(&buf[..n]).unwrap();
//! let mut main = HistogramObserver::<256>::new(cfg);
//! main.observe(&[3.0, 0.25]).unwrap();
//! main.merge(&received).unwrap();
//! assert_eq!(main.range().unwrap().1, 3.0);
//! ```

use crate::Error;

/// Version of the state encoding (bump on any incompatible change).
pub const STATE_VERSION: u8 = 1;

/// Statistics as bytes (see the [module docs](self)).
pub trait ObserverState {
    /// Bytes [`write_state`](Self::write_state) writes.
    fn state_len(&self) -> usize;

    /// Writes the statistics (and the settings they depend on) to the start of `out`; returns
    /// the number of bytes written.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] if `out` is shorter than [`state_len`](Self::state_len).
    fn write_state(&self, out: &mut [u8]) -> Result<usize, Error>;

    /// Replaces this observer's statistics with those `write_state` wrote (from an observer
    /// built with the same settings); returns the number of bytes read. All or nothing: on
    /// error the observer is unchanged.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for bytes that are truncated, of another observer kind or
    /// version, of different settings, or with invalid values.
    fn read_state(&mut self, bytes: &[u8]) -> Result<usize, Error>;
}

/// Kind tags (the first byte of every state).
pub(crate) mod tag {
    pub(crate) const MIN_MAX: u8 = 1;
    pub(crate) const MOVING_AVERAGE: u8 = 2;
    pub(crate) const HISTOGRAM: u8 = 3;
    pub(crate) const ENTROPY: u8 = 4;
    pub(crate) const PERCENTILE: u8 = 5;
    /// `ptq`'s automatic range choice (statistics of its candidates).
    #[cfg(feature = "alloc")]
    pub(crate) const AUTO: u8 = 6;
}

pub(crate) const TRUNCATED: Error = Error::InvalidArgument { reason: "observer state: truncated" };
pub(crate) const WRONG_KIND: Error =
    Error::InvalidArgument { reason: "observer state: written by another kind of observer or format version" };
pub(crate) const SETTINGS: Error =
    Error::InvalidArgument { reason: "observer state: written by an observer with different settings" };
pub(crate) const INVALID: Error = Error::InvalidArgument { reason: "observer state: invalid value" };

/// Writes little-endian values into a byte slice.
pub(crate) struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl<'a> Writer<'a> {
    pub(crate) fn new(buf: &'a mut [u8]) -> Self {
        Self { buf, pos: 0 }
    }
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }
    pub(crate) fn bytes(&mut self, b: &[u8]) -> Result<(), Error> {
        let available = self.buf.len();
        let dst = self
            .buf
            .get_mut(self.pos..self.pos + b.len())
            .ok_or(Error::LengthMismatch { expected: self.pos + b.len(), actual: available })?;
        dst.copy_from_slice(b);
        self.pos += b.len();
        Ok(())
    }
    pub(crate) fn u8(&mut self, v: u8) -> Result<(), Error> {
        self.bytes(&[v])
    }
    pub(crate) fn u32(&mut self, v: u32) -> Result<(), Error> {
        self.bytes(&v.to_le_bytes())
    }
    pub(crate) fn i32(&mut self, v: i32) -> Result<(), Error> {
        self.bytes(&v.to_le_bytes())
    }
    pub(crate) fn u64(&mut self, v: u64) -> Result<(), Error> {
        self.bytes(&v.to_le_bytes())
    }
    pub(crate) fn i64(&mut self, v: i64) -> Result<(), Error> {
        self.bytes(&v.to_le_bytes())
    }
    pub(crate) fn f32(&mut self, v: f32) -> Result<(), Error> {
        self.bytes(&v.to_le_bytes())
    }
    pub(crate) fn f64(&mut self, v: f64) -> Result<(), Error> {
        self.bytes(&v.to_le_bytes())
    }
    /// A range: a presence byte, then `lo` and `hi`.
    pub(crate) fn range(&mut self, r: Option<(f32, f32)>) -> Result<(), Error> {
        match r {
            None => self.u8(0),
            Some((lo, hi)) => {
                self.u8(1)?;
                self.f32(lo)?;
                self.f32(hi)
            }
        }
    }
    /// The common head of every state: kind tag and version.
    pub(crate) fn head(&mut self, tag: u8) -> Result<(), Error> {
        self.u8(tag)?;
        self.u8(STATE_VERSION)
    }
}

/// Bytes of [`Writer::range`].
pub(crate) const fn range_len(r: Option<(f32, f32)>) -> usize {
    if r.is_some() { 9 } else { 1 }
}

/// Bytes of [`Writer::head`].
pub(crate) const HEAD_LEN: usize = 2;

/// Reads little-endian values from a byte slice.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }
    /// The bytes not read yet.
    #[cfg(feature = "alloc")]
    pub(crate) fn rest(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or(&[])
    }
    /// Skips `n` bytes (read through [`rest`](Self::rest)).
    #[cfg(feature = "alloc")]
    pub(crate) fn skip(&mut self, n: usize) -> Result<(), Error> {
        if self.pos + n > self.buf.len() {
            return Err(TRUNCATED);
        }
        self.pos += n;
        Ok(())
    }
    fn take<const K: usize>(&mut self) -> Result<[u8; K], Error> {
        let s = self.buf.get(self.pos..self.pos + K).ok_or(TRUNCATED)?;
        let mut a = [0u8; K];
        a.copy_from_slice(s);
        self.pos += K;
        Ok(a)
    }
    pub(crate) fn u8(&mut self) -> Result<u8, Error> {
        Ok(self.take::<1>()?[0])
    }
    pub(crate) fn bool(&mut self) -> Result<bool, Error> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(INVALID),
        }
    }
    pub(crate) fn u32(&mut self) -> Result<u32, Error> {
        Ok(u32::from_le_bytes(self.take()?))
    }
    pub(crate) fn i32(&mut self) -> Result<i32, Error> {
        Ok(i32::from_le_bytes(self.take()?))
    }
    pub(crate) fn u64(&mut self) -> Result<u64, Error> {
        Ok(u64::from_le_bytes(self.take()?))
    }
    pub(crate) fn i64(&mut self) -> Result<i64, Error> {
        Ok(i64::from_le_bytes(self.take()?))
    }
    pub(crate) fn f32(&mut self) -> Result<f32, Error> {
        Ok(f32::from_le_bytes(self.take()?))
    }
    pub(crate) fn f64(&mut self) -> Result<f64, Error> {
        Ok(f64::from_le_bytes(self.take()?))
    }
    /// A range written by [`Writer::range`]: finite bounds with `lo <= hi`.
    pub(crate) fn range(&mut self) -> Result<Option<(f32, f32)>, Error> {
        if !self.bool()? {
            return Ok(None);
        }
        let (lo, hi) = (self.f32()?, self.f32()?);
        if !(lo.is_finite() && hi.is_finite() && lo <= hi) {
            return Err(INVALID);
        }
        Ok(Some((lo, hi)))
    }
    /// Checks the head written by [`Writer::head`].
    pub(crate) fn head(&mut self, tag: u8) -> Result<(), Error> {
        if self.u8()? != tag || self.u8()? != STATE_VERSION {
            return Err(WRONG_KIND);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{
        EntropyObserver, HistogramObserver, MinMaxObserver, MovingAverageMinMaxObserver, Observer, ObserverConfig,
        PercentileObserver,
    };
    use super::*;
    use crate::quant::{QScheme, QuantDType};

    const CFG: ObserverConfig = ObserverConfig::new(QuantDType::Int8, QScheme::Affine);

    fn data(seed: u32, n: usize) -> [f32; 64] {
        let mut x = [0f32; 64];
        let mut s = seed.wrapping_mul(2654435761).wrapping_add(1);
        for v in x.iter_mut().take(n) {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            *v = (s % 20001) as f32 / 1000.0 - 7.5;
        }
        x
    }

    /// Splitting over two "workers", shipping one side's state as bytes and merging gives the
    /// same range as one observer over all the data, for every pass.
    fn ship_and_merge<O: Observer + ObserverState + Clone>(make: impl Fn() -> O) {
        let (a, b) = (data(1, 64), data(2, 40));
        let mut whole = make();
        let mut merged = make();
        for _ in 0..whole.passes() {
            whole.observe(&a).unwrap();
            whole.observe(&b[..40]).unwrap();
            let mut w1 = merged.clone();
            let mut w2 = merged.clone();
            w1.observe(&a).unwrap();
            w2.observe(&b[..40]).unwrap();
            let mut buf = [0u8; 40_000];
            let n = w2.write_state(&mut buf).unwrap();
            assert_eq!(n, w2.state_len());
            let mut shipped = merged.clone();
            assert_eq!(shipped.read_state(&buf[..n]).unwrap(), n);
            w1.merge(&shipped).unwrap();
            merged = w1;
            whole.end_pass().unwrap();
            merged.end_pass().unwrap();
        }
        assert_eq!(whole.range().unwrap(), merged.range().unwrap());
        // Round trip of the final state.
        let mut buf = [0u8; 40_000];
        let n = merged.write_state(&mut buf).unwrap();
        let mut back = make();
        back.read_state(&buf[..n]).unwrap();
        assert_eq!(back.range().unwrap(), merged.range().unwrap());
        // Every truncation is an error and leaves the observer as it was (under Miri about 50 of
        // them, and the last).
        for cut in (0..n).step_by(crate::test_support::stride(n)).chain([n - 1]) {
            let mut o = make();
            assert!(o.read_state(&buf[..cut]).is_err(), "cut {cut}");
            assert!(o.range().is_err());
        }
        // Too small an output buffer.
        assert!(matches!(merged.write_state(&mut buf[..n - 1]), Err(Error::LengthMismatch { .. })));
    }

    /// Histogram bins of the observers shipped in [`every_observer_ships_and_merges_exactly`]:
    /// half under Miri (the same code; the entropy search's work grows with the square of it).
    const BINS: usize = if cfg!(miri) { 256 } else { 512 };

    #[test]
    fn every_observer_ships_and_merges_exactly() -> Result<(), Error> {
        ship_and_merge(|| MinMaxObserver::new(CFG));
        ship_and_merge(|| MovingAverageMinMaxObserver::new(CFG));
        ship_and_merge(|| HistogramObserver::<BINS>::new(CFG));
        ship_and_merge(|| HistogramObserver::<BINS>::two_pass(CFG));
        // Fresh observers are clones of one built (and checked) here.
        let entropy = EntropyObserver::<BINS>::new(CFG, 128)?;
        ship_and_merge(|| entropy.clone());
        let entropy = EntropyObserver::<BINS>::two_pass(CFG, 128)?;
        ship_and_merge(|| entropy.clone());
        let percentile = PercentileObserver::<BINS>::new(CFG, 99.9, true)?;
        ship_and_merge(|| percentile.clone());
        let percentile = PercentileObserver::<BINS>::two_pass(CFG, 99.9, false)?;
        ship_and_merge(|| percentile.clone());
        Ok(())
    }

    #[test]
    fn other_kinds_and_settings_are_rejected() {
        let mut buf = [0u8; 40_000];
        let mut h = HistogramObserver::<512>::new(CFG);
        h.observe(&data(3, 64)).unwrap();
        let n = h.write_state(&mut buf).unwrap();
        assert_eq!(MinMaxObserver::new(CFG).read_state(&buf[..n]), Err(WRONG_KIND));
        assert_eq!(HistogramObserver::<512>::two_pass(CFG).read_state(&buf[..n]), Err(SETTINGS));
        assert_eq!(HistogramObserver::<256>::new(CFG).read_state(&buf[..n]), Err(SETTINGS));
        let mut p = PercentileObserver::<512>::new(CFG, 99.9, true).unwrap();
        p.observe(&data(4, 64)).unwrap();
        let n = p.write_state(&mut buf).unwrap();
        assert_eq!(PercentileObserver::<512>::new(CFG, 99.0, true).unwrap().read_state(&buf[..n]), Err(SETTINGS));
        // A bin index past the end.
        let mut m = MinMaxObserver::new(CFG);
        m.observe(&[1.0, 2.0]).unwrap();
        let n = m.write_state(&mut buf).unwrap();
        buf[3..7].copy_from_slice(&f32::NAN.to_le_bytes());
        assert_eq!(MinMaxObserver::new(CFG).read_state(&buf[..n]), Err(INVALID));
    }
}
