//! A layer's input patches: cut from its float input activation (the rows a fully-connected
//! layer multiplies, the windows a convolution slides), sampled with a seeded generator, summed
//! into the Gram matrices [`super::problem`] optimizes on.

use alloc::collections::BTreeSet;
use alloc::vec;
use alloc::vec::Vec;

use crate::float::conv::Taps;
use crate::graph::{ConvertError, ConvertErrorKind as Kind};
use crate::kernels::arch::gemm::{MatRef, sgemm};

/// SplitMix64 (Steele, Lea & Flood, 2014): the seeded generator of the patch sampling.
#[derive(Debug, Clone)]
pub(super) struct SplitMix64(u64);

impl SplitMix64 {
    pub(super) fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub(super) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, n)` (Lemire's multiply-shift; `n` > 0).
    pub(super) fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// `count` distinct indices of `[0, total)`, uniformly (Floyd's algorithm), in increasing
/// order; all of them if `count >= total`.
pub(super) fn select(total: u64, count: u64, rng: &mut SplitMix64) -> Vec<u64> {
    if count >= total {
        return (0..total).collect();
    }
    let mut set = BTreeSet::new();
    for j in total - count..total {
        let t = rng.below(j + 1);
        if !set.insert(t) {
            set.insert(j);
        }
    }
    set.into_iter().collect()
}

/// How a layer's patches are cut from its input.
#[derive(Debug, Clone)]
pub(super) enum Cut {
    /// Fully connected: each row of `k` inputs is a patch.
    Rows { k: usize },
    /// Convolution (`[oc, kh, kw, ic]` filters): per output pixel, its taps' input channels
    /// (tap-major, as a filter row); zeros in the padding.
    Conv { taps: Taps, count: usize, images: usize, image: usize, channels: usize },
    /// Depthwise convolution: per output pixel and input channel (one group each), its taps.
    Depthwise { taps: Taps, count: usize, images: usize, image: usize, channels: usize },
}

impl Cut {
    /// Patch length (inputs per weight row).
    pub(super) fn k(&self) -> usize {
        match self {
            Cut::Rows { k } => *k,
            Cut::Conv { count, channels, .. } => count * channels,
            Cut::Depthwise { count, .. } => *count,
        }
    }

    /// Groups of rows with their own patches: the input channels of a depthwise conv, else 1.
    pub(super) fn groups(&self) -> usize {
        match self {
            Cut::Depthwise { channels, .. } => *channels,
            _ => 1,
        }
    }

    /// Patches (positions) in one sample of `len` input values.
    pub(super) fn positions(&self, len: usize) -> usize {
        match self {
            Cut::Rows { k } => len / (*k).max(1),
            Cut::Conv { taps, images, .. } | Cut::Depthwise { taps, images, .. } => images * taps.out[0] * taps.out[1],
        }
    }

    /// Input values of one sample.
    pub(super) fn input_len(&self, len: usize) -> usize {
        match self {
            Cut::Rows { .. } => len,
            Cut::Conv { images, image, channels, .. } | Cut::Depthwise { images, image, channels, .. } => {
                images * image * channels
            }
        }
    }

    /// Patch `pos` of group `group` of input `x` into `out` (`k()` values).
    pub(super) fn patch(&self, x: &[f32], pos: usize, group: usize, out: &mut [f32]) {
        match self {
            Cut::Rows { k } => out.copy_from_slice(&x[pos * k..][..*k]),
            Cut::Conv { taps, image, channels, .. } | Cut::Depthwise { taps, image, channels, .. } => {
                let [oh, ow] = taps.out;
                let b = pos / (oh * ow).max(1);
                let (oy, ox) = ((pos % (oh * ow).max(1)) / ow.max(1), pos % ow.max(1));
                let depthwise = matches!(self, Cut::Depthwise { .. });
                for (t, pixel) in taps.of(oy, ox).enumerate() {
                    let at = pixel.map(|p| (b * image + p) * channels);
                    if depthwise {
                        out[t] = at.map_or(0.0, |a| x[a + group]);
                    } else {
                        let dst = &mut out[t * channels..][..*channels];
                        match at {
                            Some(a) => dst.copy_from_slice(&x[a..][..*channels]),
                            None => dst.iter_mut().for_each(|v| *v = 0.0),
                        }
                    }
                }
            }
        }
    }
}

/// The sampled patches of one layer summed into its groups' Gram matrices.
#[derive(Debug, Clone)]
pub(super) struct Patches {
    cut: Cut,
    /// The chosen patch indices over all samples (`sample · positions + position`), in order.
    chosen: Vec<u64>,
    next: usize,
    positions: usize,
    /// Per group, `Σ x xᵀ` (`k × k`).
    sums: Vec<Vec<f32>>,
    /// Patches summed.
    count: usize,
}

impl Patches {
    /// Up to `patches` of the `samples · positions` patches of `cut`, chosen by `rng`.
    pub(super) fn new(cut: Cut, input_len: usize, samples: usize, patches: usize, rng: &mut SplitMix64) -> Self {
        let positions = cut.positions(input_len);
        let total = (samples as u64).saturating_mul(positions as u64);
        let chosen = select(total, patches as u64, rng);
        let k = cut.k();
        let sums = vec![vec![0f32; k * k]; cut.groups()];
        Self { cut, chosen, next: 0, positions, sums, count: 0 }
    }

    /// Gram memory in values (every group's `k × k`).
    pub(super) fn gram_len(cut: &Cut) -> usize {
        cut.groups().saturating_mul(cut.k().saturating_mul(cut.k()))
    }

    /// Adds the chosen patches of sample `sample` (its input activation `x`).
    ///
    /// # Errors
    /// `InvalidGraph` if `x` does not have the layer's input size.
    pub(super) fn add(&mut self, sample: usize, x: &[f32]) -> Result<(), ConvertError> {
        if x.len() != self.cut.input_len(x.len()) || (matches!(self.cut, Cut::Rows { k } if x.len() % k.max(1) != 0)) {
            return Err(ConvertError::new(
                Kind::InvalidGraph,
                "adaround: a layer input has another size than its shape",
            ));
        }
        let start = sample as u64 * self.positions as u64;
        let end = start + self.positions as u64;
        let mut here = Vec::new();
        while let Some(&c) = self.chosen.get(self.next) {
            if c >= end {
                break;
            }
            if c >= start {
                here.push((c - start) as usize);
            }
            self.next += 1;
        }
        if here.is_empty() {
            return Ok(());
        }
        let k = self.cut.k();
        let mut block = vec![0f32; here.len() * k];
        for group in 0..self.cut.groups() {
            for (row, &pos) in block.chunks_exact_mut(k).zip(&here) {
                self.cut.patch(x, pos, group, row);
            }
            let sum = &mut self.sums[group];
            if k >= 16 {
                // Σ x xᵀ over the block: Xᵀ X through the GEMM (Xᵀ read in place, transposed).
                let xt = MatRef { data: &block, offset: 0, row_stride: 1, col_stride: k };
                sgemm([k, here.len(), k], xt, MatRef::row_major(&block, k), sum, k, true).map_err(|_| {
                    ConvertError::new(Kind::InvalidGraph, "adaround: patch block does not match its Gram matrix")
                })?;
            } else {
                for row in block.chunks_exact(k) {
                    for (i, &a) in row.iter().enumerate() {
                        sum[i * k..][..k].iter_mut().zip(row).for_each(|(s, &b)| *s += a * b);
                    }
                }
            }
        }
        self.count += here.len();
        Ok(())
    }

    /// How the patches are cut.
    pub(super) fn cut(&self) -> &Cut {
        &self.cut
    }

    /// Patches summed.
    pub(super) fn count(&self) -> usize {
        self.count
    }

    /// The groups' Gram matrices, `(1/P) Σ x xᵀ` (the sums taken out).
    pub(super) fn take_grams(&mut self) -> Vec<Vec<f32>> {
        let n = self.count.max(1) as f32;
        let mut grams = core::mem::take(&mut self.sums);
        grams.iter_mut().for_each(|g| g.iter_mut().for_each(|v| *v /= n));
        grams
    }
}
