//! The automatic observer's statistics as bytes (the layout of [`crate::observer::state`]): how
//! calibration split over Web Workers or processes ships them to be merged.

use alloc::boxed::Box;
use alloc::vec::Vec;

use super::{AutoObserver, CANDIDATES, Errors, Phase};
use crate::Error;
use crate::observer::ObserverState;
use crate::observer::state::{self, Reader, Writer};

impl AutoObserver {
    pub(crate) fn state_len(&self) -> usize {
        state::HEAD_LEN
            + 1
            + match &self.phase {
                Phase::Stats(s) => {
                    12 + s.mse.state_len() + s.entropy.state_len() + s.percentile.state_len() + 4 + 8 * s.samples.len()
                }
                Phase::Errors(e) => 8 * CANDIDATES + 8 + 8 + 4 + 8 * CANDIDATES * e.errors.len(),
            }
    }

    pub(crate) fn write_state(&self, out: &mut [u8]) -> Result<usize, Error> {
        let mut w = Writer::new(out);
        w.head(state::tag::AUTO)?;
        match &self.phase {
            Phase::Stats(s) => {
                w.u8(0)?;
                let mut buf = Vec::new();
                for o in [&s.mse as &dyn ObserverState, &s.entropy, &s.percentile] {
                    buf.resize(o.state_len(), 0);
                    let n = o.write_state(&mut buf)?;
                    w.u32(n as u32)?;
                    w.bytes(buf.get(..n).unwrap_or(&[]))?;
                }
                w.u32(s.samples.len() as u32)?;
                for &(lo, hi) in &s.samples {
                    w.f32(lo)?;
                    w.f32(hi)?;
                }
            }
            Phase::Errors(e) => {
                w.u8(1)?;
                for &(lo, hi) in &e.ranges {
                    w.f32(lo)?;
                    w.f32(hi)?;
                }
                w.f32(e.fences.0)?;
                w.f32(e.fences.1)?;
                w.u64(e.outliers)?;
                w.u32(e.errors.len() as u32)?;
                for row in &e.errors {
                    for &v in row {
                        w.f64(v)?;
                    }
                }
            }
        }
        Ok(w.pos())
    }

    pub(crate) fn read_state(&mut self, bytes: &[u8]) -> Result<usize, Error> {
        let mut r = Reader::new(bytes);
        r.head(state::tag::AUTO)?;
        let phase = match r.u8()? {
            0 => {
                let mut s = match &self.phase {
                    Phase::Stats(s) => s.clone(),
                    Phase::Errors(_) => match Self::new(self.cfg)?.phase {
                        Phase::Stats(s) => s,
                        Phase::Errors(_) => return Err(state::INVALID),
                    },
                };
                for o in [&mut s.mse as &mut dyn ObserverState, &mut s.entropy, &mut s.percentile] {
                    let n = r.u32()? as usize;
                    let body = r.rest().get(..n).ok_or(state::TRUNCATED)?;
                    if o.read_state(body)? != n {
                        return Err(state::INVALID);
                    }
                    r.skip(n)?;
                }
                let count = r.u32()? as usize;
                if count > r.rest().len() / 8 {
                    return Err(state::TRUNCATED);
                }
                s.samples.clear();
                for _ in 0..count {
                    let (lo, hi) = (r.f32()?, r.f32()?);
                    if !(lo.is_finite() && hi.is_finite() && lo <= hi) {
                        return Err(state::INVALID);
                    }
                    s.samples.push((lo, hi));
                }
                s.kept = None;
                Phase::Stats(s)
            }
            1 => {
                let mut ranges = [(0f32, 0f32); CANDIDATES];
                for rg in &mut ranges {
                    let (lo, hi) = (r.f32()?, r.f32()?);
                    if !(lo.is_finite() && hi.is_finite() && lo <= hi) {
                        return Err(state::INVALID);
                    }
                    *rg = (lo, hi);
                }
                let fences = (r.f32()?, r.f32()?);
                if fences.0.is_nan() || fences.1.is_nan() {
                    return Err(state::INVALID);
                }
                let outliers = r.u64()?;
                let count = r.u32()? as usize;
                if count > r.rest().len() / (8 * CANDIDATES) {
                    return Err(state::TRUNCATED);
                }
                let mut errors = Vec::with_capacity(count);
                for _ in 0..count {
                    let mut row = [0f64; CANDIDATES];
                    for v in &mut row {
                        *v = r.f64()?;
                        if !(v.is_finite() && *v >= 0.0) {
                            return Err(state::INVALID);
                        }
                    }
                    errors.push(row);
                }
                Phase::Errors(Box::new(Errors { ranges, fences, errors, outliers, replay: None }))
            }
            _ => return Err(state::INVALID),
        };
        self.phase = phase;
        Ok(r.pos())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptq::auto::tests::CFG;
    use alloc::vec;

    #[test]
    fn state_errors() -> Result<(), Error> {
        let mut o = AutoObserver::new(CFG)?;
        assert!(o.range().is_err());
        o.observe(&[1.0, 2.0])?;
        let mut buf = vec![0u8; o.state_len()];
        o.write_state(&mut buf)?;
        let mut r = AutoObserver::new(CFG)?;
        assert_eq!(r.read_state(&buf[..buf.len() - 1]), Err(state::TRUNCATED));
        assert_eq!(r.read_state(&buf), Ok(buf.len()));
        // Pass 2 cannot merge with pass 1.
        let mut p2 = o.clone();
        p2.end_pass()?;
        assert!(p2.merge(&o).is_err());
        Ok(())
    }
}
