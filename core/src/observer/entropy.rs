//! ONNX Runtime's `EntropyCalibrater`: TensorRT's KL-divergence threshold search.

use super::histogram::{Anchor, Binning, Histogram};
use super::{HistState, Observer, ObserverConfig, RangeStats, identity, numpy_sum_f32};
use crate::Error;
use crate::quant::QParams;

/// KL-divergence calibration (TensorRT's method, as ONNX Runtime's `EntropyCalibrater`):
/// a histogram of `x` symmetric around 0, then for each candidate window of
/// `2·i` bins around the zero bin (`i` from `num_quantized_bins / 2` to `N / 2`), the
/// KL divergence between the window's distribution (outliers folded into its end bins) and
/// its quantization to `num_quantized_bins` levels; the window with the smallest divergence
/// gives the range (clipped to the data's min and max).
///
/// Two-pass mode reproduces ORT: histogram `np.histogram(x, N, range=(-amax, amax))`,
/// smoothing, normalization and sums in `f32` with numpy's pairwise summation. The logarithm
/// is `libm`'s `logf` (numpy's SIMD `log` differs from it in the last bit for some inputs), so a
/// near-tie between two windows may resolve differently. ORT's defaults are 128 bins and 128
/// quantized bins (`EntropyObserver::<128>` with `num_quantized_bins = 128`, which always
/// selects the whole range); TensorRT uses 2048 and 128 (this type's default).
#[derive(Debug, Clone)]
pub struct EntropyObserver<const N: usize = 2048> {
    cfg: ObserverConfig,
    num_quantized_bins: usize,
    state: HistState<N>,
    stats: RangeStats,
    two_pass: bool,
}

impl<const N: usize> EntropyObserver<N> {
    /// Default number of quantized bins (ORT and TensorRT: 128).
    pub const DEFAULT_QUANTIZED_BINS: usize = 128;

    fn check(nq: usize) -> Result<(), Error> {
        if nq < 2 || nq / 2 > N / 2 {
            return Err(Error::InvalidArgument { reason: "num_quantized_bins must be in [2, N]" });
        }
        Ok(())
    }
    /// A one-pass (streaming) observer.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] unless `2 <= num_quantized_bins <= N`.
    pub fn new(cfg: ObserverConfig, num_quantized_bins: usize) -> Result<Self, Error> {
        Self::check(num_quantized_bins)?;
        Ok(Self {
            cfg,
            num_quantized_bins,
            state: HistState::Bins(Histogram::streaming(Anchor::Centered)),
            stats: RangeStats::EMPTY,
            two_pass: false,
        })
    }
    /// A two-pass observer (range pass, then ORT's histogram over `[-amax, amax]`).
    ///
    /// # Errors
    /// As [`EntropyObserver::new`].
    pub fn two_pass(cfg: ObserverConfig, num_quantized_bins: usize) -> Result<Self, Error> {
        Self::check(num_quantized_bins)?;
        Ok(Self {
            cfg,
            num_quantized_bins,
            state: HistState::Range(RangeStats::EMPTY),
            stats: RangeStats::EMPTY,
            two_pass: true,
        })
    }
    /// The histogram, once binning has started.
    pub fn histogram(&self) -> Option<&Histogram<N>> {
        match &self.state {
            HistState::Bins(h) => Some(h),
            HistState::Range(_) => None,
        }
    }
}

impl<const N: usize> super::ObserverState for EntropyObserver<N> {
    fn state_len(&self) -> usize {
        super::state::HEAD_LEN + 1 + 4 + self.stats.state_len() + self.state.state_len()
    }
    fn write_state(&self, out: &mut [u8]) -> Result<usize, Error> {
        let mut w = super::state::Writer::new(out);
        w.head(super::state::tag::ENTROPY)?;
        w.u8(u8::from(self.two_pass))?;
        w.u32(self.num_quantized_bins as u32)?;
        super::write_hist_body(&mut w, &self.stats, &self.state)?;
        Ok(w.pos())
    }
    fn read_state(&mut self, bytes: &[u8]) -> Result<usize, Error> {
        let mut r = super::state::Reader::new(bytes);
        r.head(super::state::tag::ENTROPY)?;
        if r.bool()? != self.two_pass {
            return Err(super::state::SETTINGS);
        }
        if r.u32()? as usize != self.num_quantized_bins {
            return Err(super::state::SETTINGS);
        }
        let stats = RangeStats::read_state(&mut r)?;
        let state = HistState::read_state(&mut r, self.two_pass, Anchor::Centered)?;
        self.stats = stats;
        self.state = state;
        Ok(r.pos())
    }
}

impl<const N: usize> Observer for EntropyObserver<N> {
    fn observe(&mut self, x: &[f32]) -> Result<(), Error> {
        match &mut self.state {
            HistState::Range(s) => s.add(x, self.cfg.non_finite)?,
            HistState::Bins(h) => h.add(x, identity, self.cfg.non_finite)?,
        }
        self.stats.add(x, self.cfg.non_finite)
    }
    fn merge(&mut self, other: &Self) -> Result<(), Error> {
        if self.two_pass != other.two_pass || self.num_quantized_bins != other.num_quantized_bins {
            return Err(Error::InvalidArgument { reason: "cannot merge entropy observers with different settings" });
        }
        self.state.merge(&other.state)?;
        self.stats.merge(&other.stats);
        Ok(())
    }
    fn range(&self) -> Result<(f32, f32), Error> {
        let h = self.state.bins()?;
        let (dmin, dmax) = self.stats.x.ok_or(Error::NoData)?;
        let (lo, hi) = kl_threshold(h, self.num_quantized_bins)?;
        Ok((if lo < dmin { dmin } else { lo }, if hi > dmax { dmax } else { hi }))
    }
    fn qparams(&self) -> Result<QParams, Error> {
        let (lo, hi) = self.range()?;
        self.cfg.qparams_for(lo, hi)
    }
    fn reset(&mut self) {
        self.state = if self.two_pass {
            HistState::Range(RangeStats::EMPTY)
        } else {
            HistState::Bins(Histogram::streaming(Anchor::Centered))
        };
        self.stats = RangeStats::EMPTY;
    }
    fn passes(&self) -> u32 {
        if self.two_pass { 2 } else { 1 }
    }
    fn end_pass(&mut self) -> Result<(), Error> {
        if let HistState::Range(s) = &self.state {
            let (_, amax) = s.abs.ok_or(Error::NoData)?;
            self.state = HistState::Bins(Histogram::fixed(-amax, amax, Binning::Numpy)?);
        }
        Ok(())
    }
}

/// ORT's `smooth_distribution` on `p` in place (`eps = 0.0001`): zeros become `eps`, the
/// other entries lose `eps · zeros / nonzeros`. `false` if all entries are 0 (ORT: `None`)
/// or the correction reaches 1 (ORT: an assertion).
#[inline(always)]
pub(crate) fn smooth(p: &mut [f32]) -> bool {
    let n_zeros = p.iter().filter(|&&v| v == 0.0).count();
    let n_nonzeros = p.len() - n_zeros;
    if n_nonzeros == 0 {
        return false;
    }
    let eps = 0.0001f64;
    let eps1 = eps * n_zeros as f64 / n_nonzeros as f64;
    if eps1 >= 1.0 {
        return false;
    }
    let (e, e1) = (eps as f32, (-eps1) as f32);
    for v in p.iter_mut() {
        *v += if *v == 0.0 { e } else { e1 };
    }
    true
}

/// One term of [`kl`]'s sum for the smoothed values `pk` and `qk` of a position, normalized
/// there by the sums `sp` and `sq`: `p · log(p / q)` (0 where `p` is 0, infinite where `q` is
/// not positive), the logarithm `libm::logf`'s.
#[inline(always)]
fn kl_term(pk: f32, qk: f32, sp: f32, sq: f32) -> f32 {
    let (a, b) = (pk / sp, qk / sq);
    if a == 0.0 && b >= 0.0 {
        0.0
    } else if a > 0.0 && b > 0.0 {
        a * libm::logf(a / b)
    } else {
        f32::INFINITY
    }
}

/// `scipy.stats.entropy(p, q)` as ORT's copy computes it, in `f32`: both normalized by their
/// (pairwise) sums, then `sum(p · log(p / q))`. `p` is overwritten with the terms (`q` is left
/// as it was). The logarithms are taken [`LOG_LANES`] at a time ([`logf_lanes`], `libm::logf`
/// bit for bit); a group of [`LOG_LANES`] positions that all hold the same pair of values (the
/// empty stretches of a histogram, smoothed to `eps` in both) has [`kl_term`]'s one value in
/// each, computed once: the same terms as position by position.
#[inline(always)]
fn kl<K: KlLanes>(p: &mut [f32], q: &[f32]) -> f32 {
    let sp = K::sum(p);
    let sq = K::sum(q);
    let mut pc = p.chunks_exact_mut(LOG_LANES);
    let mut qc = q.chunks_exact(LOG_LANES);
    // The last uniform group's pair (bits) and term.
    let mut uniform: Option<(u32, u32, f32)> = None;
    for (a, b) in (&mut pc).zip(&mut qc) {
        let (Ok(a), Ok(b)) = (<&mut [f32; LOG_LANES]>::try_from(a), <&[f32; LOG_LANES]>::try_from(b)) else {
            continue; // always whole
        };
        let (p0, q0) = (a[0].to_bits(), b[0].to_bits());
        if K::uniform(a, b) {
            let t = match uniform {
                Some((pu, qu, t)) if (pu, qu) == (p0, q0) => t,
                _ => {
                    let t = kl_term(a[0], b[0], sp, sq);
                    uniform = Some((p0, q0, t));
                    t
                }
            };
            a.fill(t);
            continue;
        }
        K::terms(a, b, sp, sq);
    }
    for (a, &b) in pc.into_remainder().iter_mut().zip(qc.remainder()) {
        *a = kl_term(*a, b, sp, sq);
    }
    K::sum(p)
}

/// The steps of the window search that run over whole windows, per build: the portable ones
/// ([`PortableLanes`]) and SIMD copies of them that give the same values bit for bit (the same
/// `f32` operations in the same order).
pub(crate) trait KlLanes {
    /// [`numpy_sum_f32`].
    fn sum(a: &[f32]) -> f32;
    /// [`smooth`].
    fn smooth(p: &mut [f32]) -> bool;
    /// True if every position of `a` holds `a[0]`'s bits and every one of `b` `b[0]`'s.
    fn uniform(a: &[f32; LOG_LANES], b: &[f32; LOG_LANES]) -> bool;
    /// [`kl_terms_lanes`].
    fn terms(a: &mut [f32; LOG_LANES], b: &[f32; LOG_LANES], sp: f32, sq: f32);
}

/// The portable steps (the reference of the SIMD ones; the AVX2 build compiles these).
pub(crate) struct PortableLanes;

impl KlLanes for PortableLanes {
    #[inline(always)]
    fn sum(a: &[f32]) -> f32 {
        numpy_sum_f32(a)
    }

    #[inline(always)]
    fn smooth(p: &mut [f32]) -> bool {
        smooth(p)
    }

    #[inline(always)]
    fn uniform(a: &[f32; LOG_LANES], b: &[f32; LOG_LANES]) -> bool {
        let (p0, q0) = (a[0].to_bits(), b[0].to_bits());
        let mut same = true;
        for j in 1..LOG_LANES {
            same &= a[j].to_bits() == p0 && b[j].to_bits() == q0;
        }
        same
    }

    #[inline(always)]
    fn terms(a: &mut [f32; LOG_LANES], b: &[f32; LOG_LANES], sp: f32, sq: f32) {
        kl_terms_lanes(a, b, sp, sq);
    }
}

/// [`kl_term`] of [`LOG_LANES`] positions in place (`a` the smoothed `p`, `b` the smoothed `q`,
/// `sp` and `sq` their sums), the logarithms by [`logf_lanes`]: the portable terms, which the
/// SIMD ones equal bit for bit.
#[inline(always)]
pub(crate) fn kl_terms_lanes(a: &mut [f32; LOG_LANES], b: &[f32; LOG_LANES], sp: f32, sq: f32) {
    let term = |pk: f32, qk: f32, log: f32| {
        if pk == 0.0 && qk >= 0.0 {
            0.0
        } else if pk > 0.0 && qk > 0.0 {
            pk * log
        } else {
            f32::INFINITY
        }
    };
    let mut ratio = [1f32; LOG_LANES];
    let mut bn = [0f32; LOG_LANES];
    for j in 0..LOG_LANES {
        a[j] /= sp;
        bn[j] = b[j] / sq;
        if a[j] > 0.0 && bn[j] > 0.0 {
            ratio[j] = a[j] / bn[j];
        }
    }
    let logs = logf_lanes(ratio);
    for j in 0..LOG_LANES {
        a[j] = term(a[j], bn[j], logs[j]);
    }
}

/// Logarithms per call of [`logf_lanes`].
pub(crate) const LOG_LANES: usize = 8;

/// `libm::logf`'s constants, by their bits ([`logf_lanes`] and the SIMD copies of it).
pub(crate) mod logf_consts {
    pub(crate) const LN2_HI: f32 = f32::from_bits(0x3f31_7180);
    pub(crate) const LN2_LO: f32 = f32::from_bits(0x3717_f7d1);
    pub(crate) const LG1: f32 = f32::from_bits(0x3f2a_aaaa);
    pub(crate) const LG2: f32 = f32::from_bits(0x3ecc_ce13);
    pub(crate) const LG3: f32 = f32::from_bits(0x3e91_e9ee);
    pub(crate) const LG4: f32 = f32::from_bits(0x3e78_9e26);
}

/// `libm::logf` of each value, bit for bit: its algorithm (FreeBSD's `e_logf.c`: the argument
/// reduced to `[√2/2, √2]`, then a rational approximation) written lane by lane with the same
/// `f32` operations in the same order, which the compiler turns into vector instructions;
/// zeros, negatives, subnormals, infinities, NaN and 1 take `libm::logf` itself.
#[inline(always)]
pub(crate) fn logf_lanes(x: [f32; LOG_LANES]) -> [f32; LOG_LANES] {
    use logf_consts::*;
    let mut out = [0f32; LOG_LANES];
    let mut special = false;
    for (o, &v) in out.iter_mut().zip(&x) {
        let ix = v.to_bits();
        special |= !(0x0080_0000..0x7f80_0000).contains(&ix) || ix == 0x3f80_0000;
        let ix = ix.wrapping_add(0x3f80_0000 - 0x3f35_04f3);
        let k = ((ix >> 23) as i32).wrapping_sub(0x7f);
        let f = f32::from_bits((ix & 0x007f_ffff) + 0x3f35_04f3) - 1.0;
        let s = f / (2.0 + f);
        let z = s * s;
        let w = z * z;
        let t1 = w * (LG2 + w * LG4);
        let t2 = z * (LG1 + w * LG3);
        let r = t2 + t1;
        let hfsq = 0.5 * f * f;
        let dk = k as f32;
        *o = s * (hfsq + r) + dk * LN2_LO - hfsq + f + dk * LN2_HI;
    }
    if special {
        for (o, &v) in out.iter_mut().zip(&x) {
            let ix = v.to_bits();
            if !(0x0080_0000..0x7f80_0000).contains(&ix) || ix == 0x3f80_0000 {
                *o = libm::logf(v);
            }
        }
    }
    out
}

/// ORT's `get_entropy_threshold`: the edges `(edge[start], edge[end])` of the best window.
pub(crate) fn kl_threshold<const N: usize>(h: &Histogram<N>, nq: usize) -> Result<(f32, f32), Error> {
    if nq == 0 || nq / 2 > N / 2 {
        return Err(Error::InvalidArgument { reason: "num_quantized_bins must be in [2, N]" });
    }
    let (_, s, e) = kl_search(h.counts(), nq).ok_or(Error::NoData)?;
    Ok((h.edge(s), h.edge(e)))
}

/// The window search of [`kl_threshold`]: the least divergence and its window `(start, end)`.
/// On x86-64 with AVX2 (checked at run time) the same code compiled for it
/// ([`crate::kernels::arch`]): the same `f32` operations in the same order, 8 lanes where the
/// portable build has 4, so the same result bit for bit. In wasm with `simd128`, the terms of
/// the divergences in `f32x4` ([`crate::kernels::arch::wasm_simd`]): again the same operations
/// in the same order (the logarithm is `libm::logf`'s algorithm in every build), the same
/// result bit for bit.
pub(crate) fn kl_search<const N: usize>(hist: &[u64; N], nq: usize) -> Option<(f32, usize, usize)> {
    #[cfg(all(mq_portable, target_arch = "x86_64", feature = "std"))]
    if let Some(best) = crate::kernels::arch::x86::kl_search(hist, nq) {
        return best;
    }
    #[cfg(mq_wasm_simd)]
    type Lanes = crate::kernels::arch::wasm_simd::KlSimd;
    #[cfg(not(mq_wasm_simd))]
    type Lanes = PortableLanes;
    kl_search_windows::<N, Lanes>(hist, nq)
}

/// [`kl_search`] with the portable terms ([`kl_terms_lanes`]) in every build: the reference the
/// SIMD paths are tested against (in wasm: `wasm/tests/entropy.rs`).
#[doc(hidden)]
pub fn kl_search_portable<const N: usize>(hist: &[u64; N], nq: usize) -> Option<(f32, usize, usize)> {
    kl_search_windows::<N, PortableLanes>(hist, nq)
}

/// [`kl_search`] as the observers run it (the SIMD path of the build, if any): for the wasm
/// tests against [`kl_search_portable`].
#[doc(hidden)]
pub fn kl_search_dispatched<const N: usize>(hist: &[u64; N], nq: usize) -> Option<(f32, usize, usize)> {
    kl_search(hist, nq)
}

/// The lane-wise logarithm the build's [`kl_search`] takes (`libm::logf` bit for bit; in wasm
/// with `simd128`, the `f32x4` one): for the wasm tests against `libm::logf`.
#[doc(hidden)]
pub fn logf_lanes_dispatched(x: [f32; LOG_LANES]) -> [f32; LOG_LANES] {
    #[cfg(mq_wasm_simd)]
    let log = crate::kernels::arch::wasm_simd::logf_lanes;
    #[cfg(not(mq_wasm_simd))]
    let log = logf_lanes;
    log(x)
}

/// [`kl_search`]'s body: each candidate window of `2·i` bins around the zero bin (`i` from
/// `nq / 2` to `N / 2`), its divergence, the first least one (`np.argmin`).
#[inline(always)]
pub(crate) fn kl_search_windows<const N: usize, K: KlLanes>(hist: &[u64; N], nq: usize) -> Option<(f32, usize, usize)> {
    let zero = N / 2;
    let half_q = nq / 2;
    if nq == 0 || half_q > zero {
        return None;
    }
    let mut p = [0f32; N];
    let mut q = [0f32; N];
    let mut best: Option<(f32, usize, usize)> = None;
    let mut histf = [0f32; N];
    for (f, &c) in histf.iter_mut().zip(hist) {
        *f = c as f32;
    }
    // The counts left and right of the window, updated as it widens by a bin on each side.
    let window = |i: usize| (zero - i, if zero + i + 1 < N { zero + i + 1 } else { N });
    let (first_start, first_end) = window(half_q);
    let mut left: u64 = hist.iter().take(first_start).sum();
    let mut right: u64 = hist.iter().skip(first_end).sum();
    let mut prev_end = first_end;
    for i in half_q..=zero {
        let (start, end) = window(i);
        if i > half_q {
            left -= hist.get(start).copied().unwrap_or(0);
            if end > prev_end {
                right -= hist.get(prev_end).copied().unwrap_or(0);
            }
            prev_end = end;
        }
        let Some(sliced) = hist.get(start..end) else { continue };
        let len = sliced.len();
        let (Some(p), Some(q)) = (p.get_mut(..len), q.get_mut(..len)) else { continue };
        // Reference distribution p: the window with the outliers folded into its end bins (the
        // other bins' counts converted once, before the loop).
        let last = len - 1;
        if let Some(hf) = histf.get(start..end) {
            p.copy_from_slice(hf);
        }
        let end_bin = |k: usize| {
            let mut v = sliced.get(k).copied().unwrap_or(0);
            if k == 0 {
                v += left;
            }
            if k == last {
                v += right;
            }
            v as f32
        };
        if let Some(v) = p.first_mut() {
            *v = end_bin(0);
        }
        if let Some(v) = p.last_mut() {
            *v = end_bin(last);
        }
        // Candidate q: the window merged into nq bins (the remainder into the last one), each
        // divided by the number of non-zero positions of p in it (truncated: ORT stores it in
        // an int64 array) and assigned to every position of the merged bin, as ORT does.
        let merged = len / nq;
        q.fill(0.0);
        if merged > 0 {
            for index in 0..nq {
                let s = index * merged;
                let e = s + merged;
                let mut qb: u64 = sliced.get(s..e).map_or(0, |w| w.iter().sum());
                if index == nq - 1 {
                    qb += sliced.get(nq * merged..).map_or(0, |w| w.iter().sum());
                }
                let norm = p.get(s..e).map_or(0, |w| w.iter().filter(|&&v| v != 0.0).count());
                if norm != 0 {
                    let val = (qb as f64 / norm as f64) as u64 as f32;
                    if let Some(w) = q.get_mut(s..e) {
                        w.fill(val);
                    }
                }
            }
        }
        let div = if K::smooth(p) && K::smooth(q) { kl::<K>(p, q) } else { f32::INFINITY };
        // np.argmin: the first minimum.
        if best.is_none_or(|(b, _, _)| div < b) {
            best = Some((div, start, end));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The search as it was written first (ORT's loop: the outlier counts summed per window, every
    /// logarithm taken): the oracle of [`kl_search`].
    fn kl_search_reference<const N: usize>(hist: &[u64; N], nq: usize) -> Option<(f32, usize, usize)> {
        let zero = N / 2;
        let mut best: Option<(f32, usize, usize)> = None;
        for i in nq / 2..=zero {
            let start = zero - i;
            let end = if zero + i + 1 < N { zero + i + 1 } else { N };
            let sliced = &hist[start..end];
            let len = sliced.len();
            let left: u64 = hist.iter().take(start).sum();
            let right: u64 = hist.iter().skip(end).sum();
            let mut p: alloc::vec::Vec<f32> = sliced.iter().map(|&c| c as f32).collect();
            p[0] = (sliced[0] + left) as f32;
            p[len - 1] = (sliced[len - 1] + right + if len == 1 { left } else { 0 }) as f32;
            let mut q = alloc::vec![0f32; len];
            let merged = len / nq;
            if merged > 0 {
                for index in 0..nq {
                    let (s, e) = (index * merged, index * merged + merged);
                    let mut qb: u64 = sliced[s..e].iter().sum();
                    if index == nq - 1 {
                        qb += sliced[nq * merged..].iter().sum::<u64>();
                    }
                    let norm = p[s..e].iter().filter(|&&v| v != 0.0).count();
                    if norm != 0 {
                        q[s..e].fill((qb as f64 / norm as f64) as u64 as f32);
                    }
                }
            }
            let div = if smooth(&mut p) && smooth(&mut q) {
                let (sp, sq) = (numpy_sum_f32(&p), numpy_sum_f32(&q));
                for (a, b) in p.iter_mut().zip(&mut q) {
                    *a /= sp;
                    *b /= sq;
                    let (pk, qk) = (*a, *b);
                    *a = if pk == 0.0 && qk >= 0.0 {
                        0.0
                    } else if pk > 0.0 && qk > 0.0 {
                        pk * libm::logf(pk / qk)
                    } else {
                        f32::INFINITY
                    };
                }
                numpy_sum_f32(&p)
            } else {
                f32::INFINITY
            };
            if best.is_none_or(|(b, _, _)| div < b) {
                best = Some((div, start, end));
            }
        }
        best
    }

    /// The search (the running outlier counts, the uniform groups computed once, the AVX2 build
    /// where the CPU has it) finds the reference's divergence and window bit for bit: dense,
    /// one-sided (a ReLU's: the negative half empty), sparse and spiky histograms.
    #[test]
    fn kl_search_matches_the_reference() {
        let mut s = 0x9e37_79b9u32;
        let mut next = move || {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            s >> 8
        };
        fn check<const N: usize>(hist: &[u64; N], nq: usize, what: &str) {
            let want = kl_search_reference(hist, nq);
            let bits = |r: Option<(f32, usize, usize)>| r.map(|(d, a, b)| (d.to_bits(), a, b));
            assert_eq!(bits(kl_search(hist, nq)), bits(want), "{what}, nq {nq}");
            assert_eq!(bits(kl_search_windows::<N, PortableLanes>(hist, nq)), bits(want), "{what}, nq {nq} (portable)");
        }
        for case in 0..12 {
            let mut h = [0u64; 2048];
            for (k, v) in h.iter_mut().enumerate() {
                let x = (k as f64 - 1024.0) / 64.0;
                let dense = (20_000.0 * libm::exp(-x * x / (2.0 + case as f64))) as u64;
                *v = match case % 4 {
                    0 => dense + u64::from(next() % 3),
                    1 if k < 1024 => 0,
                    1 => dense,
                    2 => u64::from(next() % 7 == 0) * u64::from(next() % 50),
                    _ => dense / 8 + u64::from(k % 97 == 0) * 1000,
                };
            }
            if case % 3 == 0 {
                h[2047] += 5; // an outlier at the end
            }
            check(&h, 128, "2048 bins");
        }
        let mut small = [0u64; 128];
        for (k, v) in small.iter_mut().enumerate().skip(64) {
            *v = u64::from(next() % 100) + k as u64;
        }
        check(&small, 128, "128 bins");
        check(&small, 16, "128 bins");
        check(&[0u64; 64], 8, "empty");
    }

    /// The lane-wise logarithm equals `libm::logf` bit for bit: values across the exponent
    /// range (reduction boundaries, around 1, `√2/2`, the largest and smallest normals) and the
    /// special ones.
    #[test]
    fn logf_lanes_is_libm_bit_for_bit() {
        let mut values = alloc::vec![
            1.0f32,
            0.0,
            -0.0,
            -1.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MIN_POSITIVE,
            f32::MAX,
            1e-40,
            0.707_106_77,
            core::f32::consts::FRAC_1_SQRT_2,
            core::f32::consts::SQRT_2,
            1.000_000_1,
            0.999_999_94,
            2.0,
            0.5,
        ];
        let mut s = 0x1234_5678u32;
        for _ in 0..200_000 {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            // Positive normal numbers over every exponent, and some of everything else.
            let bits = if s % 16 == 0 { s } else { (s % 0x7f00_0000) + 0x0080_0000 };
            values.push(f32::from_bits(bits));
        }
        for chunk in values.chunks(LOG_LANES) {
            let mut lanes = [1f32; LOG_LANES];
            lanes[..chunk.len()].copy_from_slice(chunk);
            let got = logf_lanes(lanes);
            for (&v, g) in lanes.iter().zip(got) {
                let want = libm::logf(v);
                assert!(
                    g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()),
                    "logf({v:e}): {g:e} vs {want:e}"
                );
            }
        }
    }
}
