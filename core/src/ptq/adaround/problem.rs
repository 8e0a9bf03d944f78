//! One layer's AdaRound problem: its weights in groups of rows that read the same inputs, each
//! group with the Gram matrix of its input patches, and the rounding variables `V` optimized by
//! Adam on the reconstruction error plus the rounding regularizer.
//!
//! The reconstruction error of a layer over patches `x_1..x_P` is, per output row `w`,
//! `(1/P) Σ_p ((w - w̃)·x_p)² = (w - w̃)ᵀ G (w - w̃)` with `G = (1/P) Σ_p x_p x_pᵀ`: the Gram
//! matrix holds every patch, so each step costs `rows × k²` whatever the number of patches, and
//! the error is exact (no mini-batch noise: the optimization is deterministic).

use alloc::vec;
use alloc::vec::Vec;

use super::optimizer::{Adam, LAMBDA, beta_at, rectified_sigmoid, rectified_sigmoid_inverse, regularizer};
use crate::graph::{ConvertError, ConvertErrorKind as Kind};
use crate::kernels::arch::gemm::{MatRef, PackedRhs, sgemm_packed};

/// What a one-step error of the mean weight counts in the loss, against `λ` = 0.01 for the
/// regularizer: `λ / 4`. Measured on KWS with 4-bit weights (100 random samples, 1000 steps):
/// counting it 2λ, λ, λ/2 or λ/4, each layer's reconstruction gains the same within 0.6 dB and
/// the `h(V)` left between 0.1 and 0.9 at the end fall from 1.9 % to 0.1 % of the weights; in
/// the layer's own units (one step costing 20λ to 170λ there), 28 % are left.
const STEP_COST: f64 = 0.01 / 4.0;

/// Groups with at least this many inputs per row multiply through the blocked GEMM; smaller
/// ones (a depthwise channel's 3×3 taps) in plain loops.
const GEMM_MIN_K: usize = 16;

fn gemm_err(_: crate::kernels::arch::gemm::GemmShapeError) -> ConvertError {
    ConvertError::new(Kind::InvalidGraph, "adaround: a Gram matrix does not match its weights")
}

/// Rows of weights that read the same input patches (all the output channels of a conv or a
/// fully-connected layer; the `m` outputs of one input channel of a depthwise conv).
#[derive(Debug, Clone)]
pub(super) struct Group {
    /// Inputs per row (the patch length).
    k: usize,
    /// `G`, `k × k`, row-major.
    gram: Vec<f32>,
    /// `G` packed for the GEMM (`k >= GEMM_MIN_K`).
    packed: Option<PackedRhs>,
    /// The float weights, `rows × k`.
    w: Vec<f32>,
    /// Each row's scale.
    scale: Vec<f32>,
    /// `floor(w / s)`, `rows × k`.
    floor: Vec<f32>,
    /// The rounding variables, `rows × k`.
    v: Vec<f32>,
    adam: Adam,
    /// The largest integer (127 or 7); the smallest is its negative.
    qmax: f32,
    /// Where each weight of `w` is in the layer's weight tensor.
    elements: Vec<usize>,
}

impl Group {
    /// A group of `w.len() / k` rows of `k` weights (`elements[i]`: where weight `i` is in the
    /// layer's tensor), row scales `scale`, Gram matrix `gram` (`k × k`), integers in
    /// `[-qmax, qmax]`, Adam's learning rate `lr`. `V` starts where `h(V)` is the fractional
    /// part of `w / s` (`W̃ = W`).
    ///
    /// # Errors
    /// `InvalidGraph` if the sizes do not match.
    pub(super) fn new(
        k: usize,
        gram: Vec<f32>,
        w: Vec<f32>,
        scale: Vec<f32>,
        elements: Vec<usize>,
        qmax: i32,
        lr: f32,
    ) -> Result<Self, ConvertError> {
        let rows = scale.len();
        if k == 0 || gram.len() != k * k || w.len() != rows * k || elements.len() != w.len() {
            return Err(ConvertError::new(Kind::InvalidGraph, "adaround: a weight group's sizes do not match"));
        }
        let mut floor = Vec::with_capacity(w.len());
        let mut v = Vec::with_capacity(w.len());
        for (i, &x) in w.iter().enumerate() {
            let r = x / scale[i / k];
            let f = libm::floorf(r);
            floor.push(f);
            v.push(rectified_sigmoid_inverse(r - f));
        }
        let packed = if k >= GEMM_MIN_K {
            Some(PackedRhs::new(k, k, MatRef::row_major(&gram, k)).map_err(gemm_err)?)
        } else {
            None
        };
        let n = w.len();
        Ok(Self { k, gram, packed, w, scale, floor, v, adam: Adam::new(n, lr), qmax: qmax as f32, elements })
    }

    /// `R = D G` for `D` (`rows × k`).
    fn times_gram(&self, d: &[f32], r: &mut [f32]) -> Result<(), ConvertError> {
        let k = self.k;
        match &self.packed {
            Some(p) => sgemm_packed(d.len() / k, MatRef::row_major(d, k), p, r, k, false).map_err(gemm_err),
            None => {
                for (drow, rrow) in d.chunks_exact(k).zip(r.chunks_exact_mut(k)) {
                    rrow.iter_mut().for_each(|x| *x = 0.0);
                    for (&di, grow) in drow.iter().zip(self.gram.chunks_exact(k)) {
                        rrow.iter_mut().zip(grow).for_each(|(x, &g)| *x += di * g);
                    }
                }
                Ok(())
            }
        }
    }

    /// `Σ_rows (w̃ - w)ᵀ G (w̃ - w)` for integers `q` (`rows × k`, in this group's order).
    pub(super) fn error(&self, q: &[i32]) -> Result<f64, ConvertError> {
        let d: Vec<f32> =
            q.iter().zip(&self.w).enumerate().map(|(i, (&q, &w))| q as f32 * self.scale[i / self.k] - w).collect();
        self.quadratic(&d)
    }

    /// `Σ_rows wᵀ G w`: the mean energy of the layer's outputs (without bias) over the patches.
    pub(super) fn signal(&self) -> Result<f64, ConvertError> {
        self.quadratic(&self.w)
    }

    fn quadratic(&self, d: &[f32]) -> Result<f64, ConvertError> {
        let mut r = vec![0f32; d.len()];
        self.times_gram(d, &mut r)?;
        Ok(d.iter().zip(&r).map(|(&a, &b)| f64::from(a) * f64::from(b)).sum())
    }

    /// One Adam step on `V` at iteration `t` of `iterations`.
    pub(super) fn step(&mut self, t: usize, iterations: usize, rec_weight: f32) -> Result<(), ConvertError> {
        let beta = beta_at(t, iterations);
        let n = self.w.len();
        let mut h = Vec::with_capacity(n);
        let mut dh = Vec::with_capacity(n);
        let mut d = Vec::with_capacity(n);
        for (i, &v) in self.v.iter().enumerate() {
            let (hv, dv) = rectified_sigmoid(v);
            let q = (self.floor[i] + hv).clamp(-self.qmax, self.qmax);
            h.push(hv);
            dh.push(dv);
            d.push(q * self.scale[i / self.k] - self.w[i]);
        }
        let mut r = vec![0f32; n];
        self.times_gram(&d, &mut r)?;
        // d/dV of (w̃ - w)ᵀ G (w̃ - w): 2 (G (w̃ - w)) · s · dh/dV where the clip does not hold
        // the integer; the regularizer adds λ · d(1 - |2h - 1|^β)/dh · dh/dV.
        let mut grad = r;
        for (i, g) in grad.iter_mut().enumerate() {
            let x = self.floor[i] + h[i];
            let rec =
                if x >= -self.qmax && x <= self.qmax { 2.0 * rec_weight * *g * self.scale[i / self.k] } else { 0.0 };
            let reg = beta.map_or(0.0, |b| LAMBDA * regularizer(h[i], b).1);
            *g = (rec + reg) * dh[i];
        }
        self.adam.step(&mut self.v, &grad);
        Ok(())
    }

    /// The integers: `floor(w / s)` plus 1 where `h(V) >= 0.5`, clipped to `[-qmax, qmax]`.
    pub(super) fn rounded(&self) -> Vec<i32> {
        let q = self.qmax as i32;
        self.v
            .iter()
            .zip(&self.floor)
            .map(|(&v, &f)| (f as i32 + i32::from(rectified_sigmoid(v).0 >= 0.5)).clamp(-q, q))
            .collect()
    }

    /// `Σ s² G_ii` over the weights: what moving each weight by one step alone would add to the
    /// reconstruction error, summed.
    fn step_costs(&self) -> f64 {
        let k = self.k;
        (0..self.w.len())
            .map(|i| {
                let s = f64::from(self.scale[i / k]);
                s * s * f64::from(self.gram[(i % k) * (k + 1)])
            })
            .sum()
    }

    /// Where each weight is in the layer's tensor.
    pub(super) fn elements(&self) -> &[usize] {
        &self.elements
    }
}

/// A layer's groups and where the optimization is.
#[derive(Debug, Clone)]
pub(super) struct LayerProblem {
    pub(super) groups: Vec<Group>,
    pub(super) iterations: usize,
    pub(super) done: usize,
    /// The reconstruction term's weight: 1 / the mean over the weights of `s² G_ii`.
    rec_weight: f32,
}

impl LayerProblem {
    /// The problem of a layer's `groups`, `iterations` steps.
    ///
    /// The reconstruction term is measured in units of the layer's mean one-step error `c` (the
    /// mean over its weights of `s² G_ii`, what moving one weight by one step alone adds), one
    /// `c` counting [`STEP_COST`]: the paper weighs `λ = 0.01` against the error in the layer's
    /// own units, so the balance depends on the scale of its activations and weights. With
    /// KWS's (`c` from 0.2 to 1.7), the rounding does not settle: at the end 28 % of the `h(V)`
    /// (up to 57 % in a layer) are still between 0.1 and 0.9, and rounding those leaves two
    /// layers worse than nearest. In these units the balance is the same for every layer.
    pub(super) fn new(groups: Vec<Group>, iterations: usize) -> Self {
        let (costs, n) = groups.iter().fold((0.0, 0), |(c, n), g| (c + g.step_costs(), n + g.w.len()));
        let mean = costs / n.max(1) as f64;
        let rec_weight = if mean > 0.0 && mean.is_finite() { (STEP_COST / mean) as f32 } else { 1.0 };
        Self { groups, iterations, done: 0, rec_weight }
    }

    /// Up to `n` more iterations (all groups each); returns how many ran.
    pub(super) fn run(&mut self, n: usize) -> Result<usize, ConvertError> {
        let todo = n.min(self.iterations - self.done);
        for _ in 0..todo {
            for g in &mut self.groups {
                g.step(self.done, self.iterations, self.rec_weight)?;
            }
            self.done += 1;
        }
        Ok(todo)
    }

    /// Whether every iteration ran.
    pub(super) fn finished(&self) -> bool {
        self.done >= self.iterations
    }

    /// The layer's integers, in its tensor's order (`len` weights), from each group's.
    pub(super) fn scatter(&self, len: usize, per_group: impl Fn(&Group) -> Vec<i32>) -> Vec<i32> {
        let mut out = vec![0i32; len];
        for g in &self.groups {
            for (&e, q) in g.elements().iter().zip(per_group(g)) {
                if let Some(o) = out.get_mut(e) {
                    *o = q;
                }
            }
        }
        out
    }

    /// The reconstruction error of integers `q` (in the tensor's order).
    pub(super) fn error(&self, q: &[i32]) -> Result<f64, ConvertError> {
        let mut sum = 0.0;
        for g in &self.groups {
            let gq: Vec<i32> = g.elements().iter().map(|&e| q.get(e).copied().unwrap_or(0)).collect();
            sum += g.error(&gq)?;
        }
        Ok(sum)
    }

    /// The layer's output energy over the patches.
    pub(super) fn signal(&self) -> Result<f64, ConvertError> {
        self.groups.iter().map(Group::signal).sum()
    }
}
