//! What the report measures per output: the SQNR and largest error ([`Acc`]) and the top-1
//! agreement and accuracies ([`Top1`]).

use alloc::format;

use crate::graph::{ConvertError, ConvertErrorKind as Kind, Graph, TensorId};

/// Interleaved partial sums of [`Acc::add`].
const ACC_LANES: usize = 8;

#[derive(Clone, Copy, Default)]
pub(super) struct Acc {
    pub(super) signal: f64,
    pub(super) noise: f64,
    pub(super) max_abs: f32,
}

/// `Σ f²`, `Σ (f − q)²` (in f64) and `max |f − q|` over the common length of `f` and `q`, in
/// [`ACC_LANES`] interleaved partial sums folded in lane order (see [`Acc::add`]).
#[inline(always)]
pub(crate) fn squares(f: &[f32], q: &[f32]) -> (f64, f64, f32) {
    let n = f.len().min(q.len());
    let (f, q) = (&f[..n], &q[..n]);
    let mut signal = [0f64; ACC_LANES];
    let mut noise = [0f64; ACC_LANES];
    let mut max_abs = [0f32; ACC_LANES];
    let whole = n - n % ACC_LANES;
    for (fc, qc) in f[..whole].chunks_exact(ACC_LANES).zip(q[..whole].chunks_exact(ACC_LANES)) {
        for l in 0..ACC_LANES {
            let (a, b) = (fc[l], qc[l]);
            let d = f64::from(a) - f64::from(b);
            signal[l] += f64::from(a) * f64::from(a);
            noise[l] += d * d;
            max_abs[l] = max_abs[l].max((a - b).abs());
        }
    }
    for (l, (&a, &b)) in f[whole..].iter().zip(&q[whole..]).enumerate() {
        let d = f64::from(a) - f64::from(b);
        signal[l] += f64::from(a) * f64::from(a);
        noise[l] += d * d;
        max_abs[l] = max_abs[l].max((a - b).abs());
    }
    (signal.iter().sum::<f64>(), noise.iter().sum::<f64>(), max_abs.iter().fold(0f32, |m, &v| m.max(v)))
}

impl Acc {
    /// Adds one output's squares. The sums run in [`ACC_LANES`] interleaved f64 partial sums
    /// (element `i` into lane `i % ACC_LANES`), folded in lane order at the end: a fixed order,
    /// the same on every target, that the compiler can vectorize (a single running sum cannot be).
    pub(super) fn add(&mut self, f: &[f32], q: &[f32]) {
        #[cfg(all(mq_portable, target_arch = "x86_64", feature = "std"))]
        let sums = crate::kernels::arch::x86::stats::squares(f, q).unwrap_or_else(|| squares(f, q));
        #[cfg(not(all(mq_portable, target_arch = "x86_64", feature = "std")))]
        let sums = squares(f, q);
        let (signal, noise, max_abs) = sums;
        self.signal += signal;
        self.noise += noise;
        self.max_abs = self.max_abs.max(max_abs);
    }
    /// Adds the sums of `other`, one sample's [`add`](Self::add) into a zero `Acc`: the same
    /// values as that `add` on `self`, bit for bit (its sums are added once, maxima are exact).
    pub(super) fn fold(&mut self, other: &Acc) {
        self.signal += other.signal;
        self.noise += other.noise;
        self.max_abs = self.max_abs.max(other.max_abs);
    }

    pub(super) fn sqnr(&self) -> Option<f64> {
        if self.noise == 0.0 {
            None
        } else if self.signal == 0.0 {
            Some(f64::NEG_INFINITY)
        } else {
            Some(10.0 * libm::log10(self.signal / self.noise))
        }
    }
}

/// Top-1 agreement and accuracies over the rows (leading axes) of the first graph output.
#[derive(Default)]
pub(super) struct Top1 {
    pub(super) rows: usize,
    pub(super) agree: usize,
    pub(super) float_correct: usize,
    pub(super) quantized_correct: usize,
}

impl Top1 {
    /// One sample's first output `o`: float `f`, quantized model `q` (the same length).
    pub(super) fn add(
        &mut self,
        float: &Graph,
        o: TensorId,
        f: &[f32],
        q: &[f32],
        labels: Option<&[usize]>,
    ) -> Result<(), ConvertError> {
        let depth = float.tensor(o).and_then(|t| t.shape.last().copied()).unwrap_or(1).max(1);
        if depth == 1 {
            return Ok(());
        }
        for (fr, qr) in f.chunks_exact(depth).zip(q.chunks_exact(depth)) {
            let (fa, qa) = (argmax(fr), argmax(qr));
            self.agree += usize::from(fa == qa);
            if let Some(l) = labels {
                let label = *l.get(self.rows).ok_or_else(|| {
                    ConvertError::new(Kind::InvalidGraph, format!("{} labels for more rows", l.len()))
                })?;
                self.float_correct += usize::from(fa == label);
                self.quantized_correct += usize::from(qa == label);
            }
            self.rows += 1;
        }
        Ok(())
    }

    pub(super) fn check_labels(&self, labels: Option<&[usize]>) -> Result<(), ConvertError> {
        match labels {
            Some(l) if l.len() != self.rows => {
                Err(ConvertError::new(Kind::InvalidGraph, format!("{} labels for {} output rows", l.len(), self.rows)))
            }
            _ => Ok(()),
        }
    }

    pub(super) fn frac(&self, n: usize) -> Option<f64> {
        (self.rows > 0).then(|| n as f64 / self.rows as f64)
    }
}

fn argmax(v: &[f32]) -> usize {
    let mut best = 0;
    for (i, &x) in v.iter().enumerate() {
        if x > v[best] {
            best = i;
        }
    }
    best
}
