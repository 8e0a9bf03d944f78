//! The pieces of AdaRound's objective that do not depend on the layer (Nagel et al., "Up or
//! Down? Adaptive Rounding for Post-Training Quantization", ICML 2020, section 4): the rectified
//! sigmoid `h(V)`, the rounding regularizer and its annealed exponent, and the Adam update.

/// Stretch of the rectified sigmoid: `ζ` (the paper's value, 1.1).
pub(super) const ZETA: f32 = 1.1;
/// Stretch of the rectified sigmoid: `γ` (the paper's value, -0.1).
pub(super) const GAMMA: f32 = -0.1;
/// Weight `λ` of the rounding regularizer (the paper's value, 0.01).
pub(super) const LAMBDA: f32 = 0.01;
/// The regularizer's exponent `β` at the end of the warm-up.
pub(super) const BETA_START: f32 = 20.0;
/// The regularizer's exponent `β` at the last iteration.
pub(super) const BETA_END: f32 = 2.0;
/// The share of the iterations before the regularizer starts (the reconstruction alone).
pub(super) const WARM_UP: f32 = 0.2;

/// Adam's moment decays and epsilon (Kingma & Ba's defaults).
const ADAM_BETA1: f32 = 0.9;
const ADAM_BETA2: f32 = 0.999;
const ADAM_EPS: f32 = 1e-8;

fn sigmoid(v: f32) -> f32 {
    1.0 / (1.0 + libm::expf(-v))
}

/// The rectified sigmoid `h(V) = clip(σ(V)·(ζ - γ) + γ, 0, 1)` and its derivative `dh/dV`
/// (0 where the clip holds it at 0 or 1).
pub(super) fn rectified_sigmoid(v: f32) -> (f32, f32) {
    let s = sigmoid(v);
    let raw = s * (ZETA - GAMMA) + GAMMA;
    if raw <= 0.0 {
        (0.0, 0.0)
    } else if raw >= 1.0 {
        (1.0, 0.0)
    } else {
        (raw, s * (1.0 - s) * (ZETA - GAMMA))
    }
}

/// The `V` whose `h(V)` is `h` (for `h` in `[0, 1)`; AdaRound starts each weight at the
/// fractional part of `w / s`, so that `W̃ = W` before the first step).
pub(super) fn rectified_sigmoid_inverse(h: f32) -> f32 {
    let s = ((h - GAMMA) / (ZETA - GAMMA)).clamp(1e-6, 1.0 - 1e-6);
    libm::logf(s / (1.0 - s))
}

/// One weight's term of the rounding regularizer, `1 - |2h - 1|^β`, and its derivative in `h`.
/// 0 at `h` = 0 or 1, 1 at `h` = 0.5: summed over the weights, it pushes every `h` to 0 or 1.
pub(super) fn regularizer(h: f32, beta: f32) -> (f32, f32) {
    let d = 2.0 * h - 1.0;
    let a = d.abs();
    let value = 1.0 - libm::powf(a, beta);
    if a == 0.0 {
        return (value, 0.0);
    }
    // d/dh (1 - |2h - 1|^β) = -2β |2h - 1|^(β - 1) sign(2h - 1).
    let grad = -2.0 * beta * libm::powf(a, beta - 1.0) * d.signum();
    (value, grad)
}

/// The regularizer's exponent at iteration `t` of `iterations`: `None` during the warm-up (the
/// first [`WARM_UP`] of the iterations: no regularizer), then `β` falling linearly from
/// [`BETA_START`] to [`BETA_END`] at the last iteration.
pub(super) fn beta_at(t: usize, iterations: usize) -> Option<f32> {
    let warm = (iterations as f32 * WARM_UP) as usize;
    if t < warm {
        return None;
    }
    let span = iterations.saturating_sub(1).saturating_sub(warm);
    let rel = if span == 0 { 1.0 } else { (t - warm) as f32 / span as f32 };
    Some(BETA_END + (BETA_START - BETA_END) * (1.0 - rel.min(1.0)))
}

/// Adam (Kingma & Ba, 2015) over a vector of parameters.
#[derive(Debug, Clone)]
pub(super) struct Adam {
    m: alloc::vec::Vec<f32>,
    v: alloc::vec::Vec<f32>,
    t: i32,
    lr: f32,
}

impl Adam {
    /// Zero moments for `n` parameters, learning rate `lr`.
    pub(super) fn new(n: usize, lr: f32) -> Self {
        Self { m: alloc::vec![0.0; n], v: alloc::vec![0.0; n], t: 0, lr }
    }

    /// One step: `params -= lr · m̂ / (√v̂ + ε)` with the bias-corrected moments of `grad`.
    pub(super) fn step(&mut self, params: &mut [f32], grad: &[f32]) {
        self.t = self.t.saturating_add(1);
        let c1 = 1.0 - libm::powf(ADAM_BETA1, self.t as f32);
        let c2 = 1.0 - libm::powf(ADAM_BETA2, self.t as f32);
        let step = self.lr / c1;
        let c2_sqrt = libm::sqrtf(c2);
        for (((p, &g), m), v) in params.iter_mut().zip(grad).zip(&mut self.m).zip(&mut self.v) {
            *m = ADAM_BETA1 * *m + (1.0 - ADAM_BETA1) * g;
            *v = ADAM_BETA2 * *v + (1.0 - ADAM_BETA2) * g * g;
            *p -= step * *m / (libm::sqrtf(*v) / c2_sqrt + ADAM_EPS);
        }
    }
}
