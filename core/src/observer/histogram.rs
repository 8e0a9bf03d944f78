//! A histogram in a fixed memory budget (`N` bins, a const generic), with exact merging.
//!
//! Two bin layouts:
//! - **Fixed range** `[lo, hi]`: `N` equal bins, filled exactly as the peer tool fills its
//!   histogram ([`Binning::TorchHistc`]: PyTorch's `torch.histc`; [`Binning::Numpy`]:
//!   `np.histogram`, which ONNX Runtime's calibrators use). The range comes from a first pass
//!   over the data ([`super::Pass`]); merging adds counts (exact).
//! - **Streaming** (one pass): bin `j` covers `[(base + j)·2^k, (base + j + 1)·2^k)`, where `k`
//!   is the smallest exponent whose grid holds every value seen so far in `N` bins. When the
//!   data outgrows the grid, `k` grows and neighbouring bins are added together, which is exact
//!   because power-of-two grids nest. The final grid depends only on the overall minimum and
//!   maximum, so any split of the data, merged in any order, gives the same counts as one pass.

use super::NonFinitePolicy;
use crate::Error;

/// How values are assigned to the bins of a fixed range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Binning {
    /// `torch.histc`: `bin = trunc((x - lo) · N / (hi - lo))` in `f32`, `hi` in the last bin;
    /// an empty range becomes `[lo - 1, hi + 1]`.
    TorchHistc,
    /// `np.histogram(x, N, range=(lo, hi))` on `float32`: edges `linspace(lo, hi, N + 1)` in
    /// `f32`, bin `i` holds `edges[i] <= x < edges[i + 1]` (the last bin is closed); an empty
    /// range becomes `[lo - 0.5, hi + 0.5]`.
    Numpy,
}

/// Where bin 0 of a streaming grid sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Anchor {
    /// At the data: `base = floor(min / 2^k)`.
    Free,
    /// Symmetric around 0: `base = -N/2` (bin `N/2` starts at 0).
    Centered,
    /// At 0: `base = 0` (for absolute values).
    Zero,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Grid {
    Unset,
    Fixed { lo: f32, hi: f32, binning: Binning },
    Dyadic { k: i32, base: i64 },
}

/// Smallest grid exponent tried: widths below 2^-126 are not normal `f32` numbers.
const K_MIN: i32 = -126;
/// Exponent bound large enough for any finite `f32` range.
const K_MAX: i32 = 140;

#[inline(always)]
fn pow2_f64(e: i32) -> f64 {
    f64::from_bits(((e + 1023) as u64) << 52)
}

/// `floor(a / 2^d)` for any `d` (an arithmetic shift, saturating to -1 or 0 past 63).
#[inline(always)]
fn shr_floor(a: i64, d: u32) -> i64 {
    a.checked_shr(d).unwrap_or(if a < 0 { -1 } else { 0 })
}

/// `floor(x / 2^k)`, exact (the quotient is a power-of-two scaling of an `f32`).
#[inline(always)]
fn dyadic_index(x: f32, k: i32) -> i64 {
    libm::floor(x as f64 * pow2_f64(-k)) as i64
}

/// A histogram of `N` bins of `u64` counts plus the minimum and maximum of what it counted.
#[derive(Debug, Clone)]
pub struct Histogram<const N: usize> {
    counts: [u64; N],
    grid: Grid,
    anchor: Anchor,
    min: f32,
    max: f32,
    total: u64,
}

impl<const N: usize> Histogram<N> {
    const BINS_OK: () = assert!(N >= 2 && N <= (1 << 24), "a histogram needs 2 to 2^24 bins");

    /// An empty streaming histogram.
    pub fn streaming(anchor: Anchor) -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::BINS_OK;
        Self { counts: [0; N], grid: Grid::Unset, anchor, min: f32::INFINITY, max: f32::NEG_INFINITY, total: 0 }
    }

    /// An empty histogram over the fixed range `[lo, hi]` (expanded as `binning` does when
    /// `lo == hi`).
    ///
    /// # Errors
    /// [`Error::InvalidRange`] if a bound is not finite or `lo > hi`.
    pub fn fixed(lo: f32, hi: f32, binning: Binning) -> Result<Self, Error> {
        #[allow(clippy::let_unit_value)]
        let () = Self::BINS_OK;
        if !(lo.is_finite() && hi.is_finite()) || lo > hi {
            return Err(Error::InvalidRange);
        }
        let (lo, hi) = if lo == hi {
            match binning {
                Binning::TorchHistc => ((lo as f64 - 1.0) as f32, (hi as f64 + 1.0) as f32),
                Binning::Numpy => (lo - 0.5, hi + 0.5),
            }
        } else {
            (lo, hi)
        };
        if !(hi - lo).is_finite() {
            return Err(Error::InvalidRange);
        }
        Ok(Self {
            counts: [0; N],
            grid: Grid::Fixed { lo, hi, binning },
            anchor: Anchor::Free,
            min: f32::INFINITY,
            max: f32::NEG_INFINITY,
            total: 0,
        })
    }

    /// The counts.
    pub fn counts(&self) -> &[u64; N] {
        &self.counts
    }
    /// Number of values counted.
    pub fn total(&self) -> u64 {
        self.total
    }
    /// Smallest and largest value counted, or `None` if none was.
    pub fn data_range(&self) -> Option<(f32, f32)> {
        if self.total == 0 { None } else { Some((self.min, self.max)) }
    }
    /// The left edge of bin 0 and the right edge of bin `N - 1` (`None` before any value of
    /// a streaming histogram).
    pub fn bounds(&self) -> Option<(f32, f32)> {
        match self.grid {
            Grid::Unset => None,
            Grid::Fixed { lo, hi, .. } => Some((lo, hi)),
            Grid::Dyadic { k, base } => {
                Some(((base as f64 * pow2_f64(k)) as f32, ((base + N as i64) as f64 * pow2_f64(k)) as f32))
            }
        }
    }
    /// The bin width of a streaming grid (`2^k`), `None` otherwise.
    pub fn dyadic_width(&self) -> Option<f64> {
        match self.grid {
            Grid::Dyadic { k, .. } => Some(pow2_f64(k)),
            _ => None,
        }
    }

    /// Edge `i` (`0..=N`) as the peer computes it: `np.linspace` in `f32` for
    /// [`Binning::Numpy`], `lo + i · (hi - lo) / N` otherwise (exact for streaming grids).
    pub fn edge(&self, i: usize) -> f32 {
        match self.grid {
            Grid::Unset => 0.0,
            Grid::Fixed { lo, hi, binning: Binning::Numpy } => numpy_edge::<N>(lo, hi, i),
            Grid::Fixed { lo, hi, binning: Binning::TorchHistc } => {
                if i >= N {
                    hi
                } else {
                    lo + i as f32 * ((hi - lo) / N as f32)
                }
            }
            Grid::Dyadic { k, base } => ((base + i as i64) as f64 * pow2_f64(k)) as f32,
        }
    }

    /// Forgets all counts (a fixed range stays).
    pub fn clear(&mut self) {
        self.counts = [0; N];
        self.min = f32::INFINITY;
        self.max = f32::NEG_INFINITY;
        self.total = 0;
        if let Grid::Dyadic { .. } = self.grid {
            self.grid = Grid::Unset;
        }
    }

    fn base_for(&self, k: i32, min: f32) -> i64 {
        match self.anchor {
            Anchor::Free => dyadic_index(min, k),
            Anchor::Centered => -((N / 2) as i64),
            Anchor::Zero => 0,
        }
    }

    fn fits(&self, k: i32, min: f32, max: f32) -> bool {
        let amax = if -min > max { -min } else { max };
        // Keep absolute indices far inside i64.
        if amax as f64 * pow2_f64(-k) >= pow2_f64(60) {
            return false;
        }
        let base = self.base_for(k, min);
        let lo = dyadic_index(min, k);
        let hi = dyadic_index(max, k);
        lo >= base && hi < base + N as i64
    }

    /// Moves the counts of a streaming grid to exponent `k_new >= k` and base `base_new`,
    /// in place. Needs `base_new <= base >> (k_new - k)` and every count to land inside the
    /// new grid (true when the new grid holds the data).
    fn regrid(&mut self, k_new: i32, base_new: i64) {
        let Grid::Dyadic { k, base } = self.grid else {
            self.grid = Grid::Dyadic { k: k_new, base: base_new };
            return;
        };
        let d = (k_new - k) as u32;
        let coarse0 = shr_floor(base, d);
        if d > 0 {
            // Pass 1: coarsen relative to the old base. Target t(j) <= j, and t is
            // non-decreasing, so a forward sweep never overwrites an unread bin.
            for j in 0..N {
                let t = (shr_floor(base + j as i64, d) - coarse0) as usize;
                let c = self.counts.get_mut(j).map(core::mem::take).unwrap_or(0);
                if let Some(slot) = self.counts.get_mut(t) {
                    *slot += c;
                }
            }
        }
        // Pass 2: shift toward higher indices by the change of base.
        let delta = (coarse0 - base_new).max(0) as usize;
        if delta > 0 {
            for j in (0..N).rev() {
                let v = if j >= delta { self.counts.get(j - delta).copied().unwrap_or(0) } else { 0 };
                if let Some(slot) = self.counts.get_mut(j) {
                    *slot = v;
                }
            }
        }
        self.grid = Grid::Dyadic { k: k_new, base: base_new };
    }

    /// Grows a streaming grid (never finer than exponent `k_floor`) until it holds
    /// `[min, max]`.
    fn grow_to(&mut self, min: f32, max: f32, k_floor: i32) -> Result<(), Error> {
        let k0 = match self.grid {
            Grid::Dyadic { k, .. } => k,
            _ => K_MIN,
        };
        let mut k = if k0 > k_floor { k0 } else { k_floor };
        while !self.fits(k, min, max) {
            k += 1;
            if k > K_MAX {
                return Err(Error::InvalidRange);
            }
        }
        let base_new = self.base_for(k, min);
        self.regrid(k, base_new);
        Ok(())
    }

    #[inline(always)]
    fn bin_of(&self, x: f32) -> Option<usize> {
        match self.grid {
            Grid::Unset => None,
            Grid::Fixed { lo, hi, binning } => {
                if !(x >= lo && x <= hi) {
                    return None;
                }
                let i = match binning {
                    Binning::TorchHistc => {
                        let pos = ((x - lo) * N as f32 / (hi - lo)) as usize;
                        if pos >= N { N - 1 } else { pos }
                    }
                    Binning::Numpy => {
                        let f = (x - lo) / (hi - lo) * N as f32;
                        let mut i = f as usize;
                        if i >= N {
                            i = N - 1;
                        }
                        if x < numpy_edge::<N>(lo, hi, i) && i > 0 {
                            i -= 1;
                        }
                        if i != N - 1 && x >= numpy_edge::<N>(lo, hi, i + 1) {
                            i += 1;
                        }
                        i
                    }
                };
                Some(i)
            }
            Grid::Dyadic { k, base } => {
                let j = dyadic_index(x, k) - base;
                if j < 0 || j >= N as i64 { None } else { Some(j as usize) }
            }
        }
    }

    /// Counts the finite values of `x` (through `map`, e.g. `f32::abs`), all or nothing:
    /// on error nothing is counted.
    ///
    /// # Errors
    /// [`Error::NonFinite`] (policy [`NonFinitePolicy::Error`]); for a fixed range,
    /// [`Error::InvalidArgument`] if a value lies outside it (the range pass must cover the
    /// same data).
    pub fn add(&mut self, x: &[f32], map: fn(f32) -> f32, policy: NonFinitePolicy) -> Result<(), Error> {
        let Some((bmin, bmax)) = super::batch_range(x, map, policy)? else {
            return Ok(());
        };
        match self.grid {
            Grid::Fixed { lo, hi, .. } => {
                if bmin < lo || bmax > hi {
                    return Err(Error::InvalidArgument {
                        reason: "value outside the fixed histogram range (the range pass must see the same data)",
                    });
                }
            }
            _ => {
                let lo = if bmin < self.min { bmin } else { self.min };
                let hi = if bmax > self.max { bmax } else { self.max };
                self.grow_to(lo, hi, K_MIN)?;
            }
        }
        for &v in x {
            if !v.is_finite() {
                continue;
            }
            let m = map(v);
            if let Some(slot) = self.bin_of(m).and_then(|i| self.counts.get_mut(i)) {
                *slot = slot.saturating_add(1);
                self.total = self.total.saturating_add(1);
            }
        }
        self.min = if bmin < self.min { bmin } else { self.min };
        self.max = if bmax > self.max { bmax } else { self.max };
        Ok(())
    }

    /// Adds `other`'s counts: exact for equal fixed ranges and for streaming grids.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the layouts differ (different fixed ranges, fixed vs
    /// streaming, different anchors).
    pub fn merge(&mut self, other: &Self) -> Result<(), Error> {
        if other.total == 0 {
            return Ok(());
        }
        match (self.grid, other.grid) {
            (Grid::Fixed { lo: a, hi: b, binning: x }, Grid::Fixed { lo: c, hi: d, binning: y }) => {
                if (a, b, x) != (c, d, y) {
                    return Err(Error::InvalidArgument {
                        reason: "cannot merge histograms over different fixed ranges",
                    });
                }
                for (s, o) in self.counts.iter_mut().zip(other.counts.iter()) {
                    *s = s.saturating_add(*o);
                }
            }
            (Grid::Unset | Grid::Dyadic { .. }, Grid::Dyadic { k: ko, base: bo }) => {
                if self.anchor != other.anchor {
                    return Err(Error::InvalidArgument {
                        reason: "cannot merge streaming histograms with different anchors",
                    });
                }
                let lo = if other.min < self.min { other.min } else { self.min };
                let hi = if other.max > self.max { other.max } else { self.max };
                // The merged grid is the smallest that holds both data sets: no finer than
                // either grid (each is the smallest for its own data).
                self.grow_to(lo, hi, ko)?;
                let Grid::Dyadic { k, base } = self.grid else {
                    return Err(Error::InvalidRange);
                };
                let d = (k - ko) as u32;
                for (j, &c) in other.counts.iter().enumerate() {
                    if c == 0 {
                        continue;
                    }
                    let t = shr_floor(bo + j as i64, d) - base;
                    if let Some(slot) = usize::try_from(t).ok().and_then(|t| self.counts.get_mut(t)) {
                        *slot = slot.saturating_add(c);
                    }
                }
            }
            _ => {
                return Err(Error::InvalidArgument {
                    reason: "cannot merge a fixed-range histogram with a streaming one",
                });
            }
        }
        self.total = self.total.saturating_add(other.total);
        self.min = if other.min < self.min { other.min } else { self.min };
        self.max = if other.max > self.max { other.max } else { self.max };
        Ok(())
    }
}

// ---- state (de)serialization (`super::state`) ----

impl<const N: usize> Histogram<N> {
    /// Bytes of [`write_state`](Self::write_state): layout, data range, total, then the
    /// non-zero bins as `(index, count)` pairs.
    pub(crate) fn state_len(&self) -> usize {
        let grid = match self.grid {
            Grid::Unset => 1,
            Grid::Fixed { .. } => 10,
            Grid::Dyadic { .. } => 13,
        };
        let nonzero = self.counts.iter().filter(|&&c| c != 0).count();
        4 + grid + 1 + 4 + 4 + 8 + 4 + 12 * nonzero
    }

    pub(crate) fn write_state(&self, w: &mut super::state::Writer<'_>) -> Result<(), Error> {
        w.u32(N as u32)?;
        match self.grid {
            Grid::Unset => w.u8(0)?,
            Grid::Fixed { lo, hi, binning } => {
                w.u8(1)?;
                w.f32(lo)?;
                w.f32(hi)?;
                w.u8(match binning {
                    Binning::TorchHistc => 0,
                    Binning::Numpy => 1,
                })?;
            }
            Grid::Dyadic { k, base } => {
                w.u8(2)?;
                w.i32(k)?;
                w.i64(base)?;
            }
        }
        w.u8(match self.anchor {
            Anchor::Free => 0,
            Anchor::Centered => 1,
            Anchor::Zero => 2,
        })?;
        w.f32(self.min)?;
        w.f32(self.max)?;
        w.u64(self.total)?;
        let nonzero = self.counts.iter().filter(|&&c| c != 0).count();
        w.u32(nonzero as u32)?;
        for (i, &c) in self.counts.iter().enumerate() {
            if c != 0 {
                w.u32(i as u32)?;
                w.u64(c)?;
            }
        }
        Ok(())
    }

    /// Reads what [`write_state`](Self::write_state) wrote, checking the bin count and the
    /// anchor against `expected_anchor` (fixed-range histograms keep [`Anchor::Free`]).
    pub(crate) fn read_state(r: &mut super::state::Reader<'_>, expected_anchor: Anchor) -> Result<Self, Error> {
        use super::state::{INVALID, SETTINGS};
        if r.u32()? as usize != N {
            return Err(SETTINGS);
        }
        let grid = match r.u8()? {
            0 => Grid::Unset,
            1 => {
                let (lo, hi) = (r.f32()?, r.f32()?);
                let binning = match r.u8()? {
                    0 => Binning::TorchHistc,
                    1 => Binning::Numpy,
                    _ => return Err(INVALID),
                };
                if !(lo.is_finite() && hi.is_finite() && lo < hi && (hi - lo).is_finite()) {
                    return Err(INVALID);
                }
                Grid::Fixed { lo, hi, binning }
            }
            2 => {
                let (k, base) = (r.i32()?, r.i64()?);
                if !(K_MIN..=K_MAX).contains(&k) || base.unsigned_abs() > (1u64 << 62) {
                    return Err(INVALID);
                }
                Grid::Dyadic { k, base }
            }
            _ => return Err(INVALID),
        };
        let anchor = match r.u8()? {
            0 => Anchor::Free,
            1 => Anchor::Centered,
            2 => Anchor::Zero,
            _ => return Err(INVALID),
        };
        let fixed = matches!(grid, Grid::Fixed { .. });
        if anchor != if fixed { Anchor::Free } else { expected_anchor } {
            return Err(SETTINGS);
        }
        let (min, max, total) = (r.f32()?, r.f32()?, r.u64()?);
        let empty = min == f32::INFINITY && max == f32::NEG_INFINITY;
        if !(empty || (min.is_finite() && max.is_finite() && min <= max)) || (total > 0 && empty) {
            return Err(INVALID);
        }
        let mut counts = [0u64; N];
        let nonzero = r.u32()? as usize;
        if nonzero > N || (nonzero > 0 && matches!(grid, Grid::Unset)) {
            return Err(INVALID);
        }
        let mut next = 0usize;
        for _ in 0..nonzero {
            let (i, c) = (r.u32()? as usize, r.u64()?);
            let slot = counts.get_mut(i).filter(|_| i >= next && c != 0).ok_or(INVALID)?;
            *slot = c;
            next = i + 1;
        }
        Ok(Self { counts, grid, anchor, min, max, total })
    }
}

/// Edge `i` of `np.linspace(lo, hi, N + 1)` computed in `f32` as numpy does
/// (`i · step + lo` with `step = (hi - lo) / N`, the last edge set to `hi`).
#[inline(always)]
fn numpy_edge<const N: usize>(lo: f32, hi: f32, i: usize) -> f32 {
    if i >= N {
        return hi;
    }
    let delta = hi - lo;
    let step = delta / N as f32;
    if step == 0.0 {
        // numpy's branch for denormal steps: y = (i / div) · delta.
        return (i as f32 / N as f32) * delta + lo;
    }
    i as f32 * step + lo
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streaming_split_then_merge_equals_one_pass() {
        let data: [f32; 12] = [0.1, -3.0, 2.5, 7.75, -0.001, 100.0, 3.0, 3.0, -50.0, 0.0, 1e-3, 42.0];
        let mut one = Histogram::<16>::streaming(Anchor::Free);
        one.add(&data, |v| v, NonFinitePolicy::Error).unwrap();
        for cut in 0..data.len() {
            let (a, b) = data.split_at(cut);
            let mut ha = Histogram::<16>::streaming(Anchor::Free);
            let mut hb = Histogram::<16>::streaming(Anchor::Free);
            ha.add(a, |v| v, NonFinitePolicy::Error).unwrap();
            hb.add(b, |v| v, NonFinitePolicy::Error).unwrap();
            let mut m = hb.clone();
            m.merge(&ha).unwrap();
            assert_eq!(m.counts(), one.counts(), "cut {cut}");
            assert_eq!(m.bounds(), one.bounds());
            // Sequential batches also give the same grid.
            let mut s = Histogram::<16>::streaming(Anchor::Free);
            s.add(a, |v| v, NonFinitePolicy::Error).unwrap();
            s.add(b, |v| v, NonFinitePolicy::Error).unwrap();
            assert_eq!(s.counts(), one.counts());
        }
        assert_eq!(one.total(), 12);
    }

    #[test]
    fn numpy_binning_uses_linspace_edges() {
        let mut h = Histogram::<4>::fixed(0.0, 1.0, Binning::Numpy).unwrap();
        h.add(&[0.0, 0.25, 0.5, 0.74, 1.0], |v| v, NonFinitePolicy::Error).unwrap();
        assert_eq!(h.counts(), &[1, 1, 2, 1]);
        assert!(h.add(&[1.5], |v| v, NonFinitePolicy::Error).is_err());
        assert_eq!(h.total(), 5);
    }
}
