//! Batched matrix multiplication of two quantized activations (TFLite `BATCH_MATMUL`, ONNX
//! `MatMul` with two non-constant operands): int8, and int16 (16x16, zero points 0).
//!
//! ```text
//! output[b.., i, j] = clamp(zp_out + requant(sum_k (lhs[b.., i, k] − zp_lhs) · (rhs[b.., k, j] − zp_rhs)))
//! ```
//!
//! with `adj_x` / `adj_y` reading lhs / rhs transposed in their last two dimensions (`lhs` stored
//! `[.., k, i]`, `rhs` stored `[.., j, k]`), and the batch dimensions (all but the last two)
//! broadcast NumPy-style: right-aligned, each pair equal or one of them 1. Ranks 2 to 5, as
//! TFLite Micro's Prepare accepts; the ranks of the two operands may differ.
//!
//! The multiplier `lhs_scale · rhs_scale / output_scale` is computed in `f64` from the `f32`
//! scales (TFLite's `GetQuantizedConvolutionMultipler`) and split by `QuantizeMultiplier`. int8
//! accumulates in `i32` (wrapping, as TFLite's `int32_t` sum) and requantizes with the Q31
//! double-rounding `MultiplyByQuantizedMultiplier`; int16 accumulates in `i64` and uses the
//! Q15-reduced 64-bit one. There is no fused activation: the clamp is the type's range.
//!
//! TFLite transposes the rhs (unless `adj_y`) and an `adj_x` lhs into buffers before its kernel
//! runs; these kernels read both operands in place with strides instead, so they need no scratch.
//! The sum is the same integer in any order (two's-complement addition is associative), so the
//! result is bit-exact with TFLite Micro and with the TFLite interpreter's reference kernel (the
//! two oracles agree on every case of `tests/golden/kernels/batch_matmul*.json`; neither has a
//! single-rounding variant for this op, so there is no [`Rounding`](super::Rounding) parameter).
//!
//! ```
//! use microquant::kernels::batch_matmul::{BatchMatMulParams, batch_matmul_s8};
//! use microquant::kernels::tensor::PerTensorQuant;
//! // [1, 2] x [2, 2] with scales 0.5 · 0.5 / 0.25 = 1 and zero points 0.
//! let q = PerTensorQuant::new(0.5, 0);
//! let p = BatchMatMulParams::prepare_s8(q, q, PerTensorQuant::new(0.25, 0), &[1, 2], &[2, 2], false, false)?;
//! let mut out = [0i8; 2];
//! batch_matmul_s8(&p, &[1, 2], &[3, 4, 5, 6], &mut out)?;
//! assert_eq!(out, [13, 16]);
//! # Ok::<(), microquant::Error>(())
//! ```
#![forbid(unsafe_code)]

use super::ActivationRange;
use super::common::{ActivationElement, ensure};
use super::tensor::{PerTensorQuant, RuntimeShape, check_same_len};
use crate::Error;
use crate::requant::{QuantizedMultiplier, multiply_by_quantized_multiplier, multiply_by_quantized_multiplier_i64};

/// Largest operand rank (TFLite Micro's limit).
pub const MAX_RANK: usize = 5;
/// Batch dimensions of the largest rank.
const NB: usize = MAX_RANK - 2;

/// The shapes of a batched matrix multiplication, prepared: broadcast batch extents and the
/// element strides of both operands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BatchMatMulShape {
    /// Output batch extents, right-aligned to three (leading ones).
    batch: [usize; NB],
    /// lhs element stride per batch dimension (0 where it is broadcast).
    lhs_batch_stride: [usize; NB],
    /// rhs element stride per batch dimension (0 where it is broadcast).
    rhs_batch_stride: [usize; NB],
    /// Output rows (`i`), columns (`j`) and accumulation depth (`k`).
    rows: usize,
    cols: usize,
    depth: usize,
    /// lhs strides along `i` and `k`; rhs strides along `k` and `j`.
    lhs_i: usize,
    lhs_k: usize,
    rhs_k: usize,
    rhs_j: usize,
    lhs_len: usize,
    rhs_len: usize,
    out_len: usize,
    /// The output shape (rank `max(lhs rank, rhs rank)`).
    out_dims: [usize; MAX_RANK],
    out_rank: usize,
}

const K: &str = "batch_matmul";

impl BatchMatMulShape {
    /// Prepares the shapes (TFLite `BATCH_MATMUL` Prepare's checks).
    ///
    /// # Errors
    /// [`Error::BadKernelArgument`] if a rank is outside 2..=5, the batch dimensions do not
    /// broadcast, the accumulation depths differ, or a size overflows.
    pub fn new(lhs_shape: &[usize], rhs_shape: &[usize], adj_x: bool, adj_y: bool) -> Result<Self, Error> {
        let (lr, rr) = (lhs_shape.len(), rhs_shape.len());
        ensure((2..=MAX_RANK).contains(&lr) && (2..=MAX_RANK).contains(&rr), K, "operand rank outside 2..=5")?;
        let (l, r) = (RuntimeShape::new(lhs_shape)?, RuntimeShape::new(rhs_shape)?);
        let mut le = [1usize; MAX_RANK];
        let mut re = [1usize; MAX_RANK];
        for (o, &d) in le.iter_mut().skip(MAX_RANK - lr).zip(lhs_shape) {
            *o = d;
        }
        for (o, &d) in re.iter_mut().skip(MAX_RANK - rr).zip(rhs_shape) {
            *o = d;
        }
        let [_, _, _, l_m, l_n] = le;
        let [_, _, _, r_m, r_n] = re;
        let (rows, depth) = if adj_x { (l_n, l_m) } else { (l_m, l_n) };
        let (depth_r, cols) = if adj_y { (r_n, r_m) } else { (r_m, r_n) };
        ensure(depth == depth_r, K, "lhs and rhs accumulation depths differ")?;
        let (lhs_i, lhs_k) = if adj_x { (1, l_n) } else { (l_n, 1) };
        let (rhs_k, rhs_j) = if adj_y { (1, r_n) } else { (r_n, 1) };
        // Element strides of the batch dimensions (row-major), 0 where broadcast.
        let mut batch = [1usize; NB];
        let mut lhs_batch_stride = [0usize; NB];
        let mut rhs_batch_stride = [0usize; NB];
        let (mut ls, mut rs) = (l_m.saturating_mul(l_n), r_m.saturating_mul(r_n));
        for d in (0..NB).rev() {
            let (a, b) = (le.get(d).copied().unwrap_or(1), re.get(d).copied().unwrap_or(1));
            let o = if a == b || b == 1 {
                a
            } else if a == 1 {
                b
            } else {
                return Err(Error::BadKernelArgument { kernel: K, reason: "batch dimensions do not broadcast" });
            };
            if let Some(x) = batch.get_mut(d) {
                *x = o;
            }
            if let Some(x) = lhs_batch_stride.get_mut(d) {
                *x = if a == 1 { 0 } else { ls };
            }
            if let Some(x) = rhs_batch_stride.get_mut(d) {
                *x = if b == 1 { 0 } else { rs };
            }
            ls = ls.saturating_mul(a);
            rs = rs.saturating_mul(b);
        }
        let out_rank = lr.max(rr);
        let mut out_dims = [1usize; MAX_RANK];
        for (i, o) in out_dims.iter_mut().enumerate().take(out_rank) {
            let d = i + MAX_RANK - out_rank;
            *o = if d < NB {
                batch.get(d).copied().unwrap_or(1)
            } else if d == NB {
                rows
            } else {
                cols
            };
        }
        let out = RuntimeShape::new(out_dims.get(..out_rank).unwrap_or(&[]))?;
        Ok(Self {
            batch,
            lhs_batch_stride,
            rhs_batch_stride,
            rows,
            cols,
            depth,
            lhs_i,
            lhs_k,
            rhs_k,
            rhs_j,
            lhs_len: l.len(),
            rhs_len: r.len(),
            out_len: out.len(),
            out_dims,
            out_rank,
        })
    }

    /// The output shape: the broadcast batch dimensions, then `[rows, cols]`.
    pub fn output_shape(&self) -> &[usize] {
        self.out_dims.get(..self.out_rank).unwrap_or(&[])
    }

    /// The number of output elements.
    pub fn output_len(&self) -> usize {
        self.out_len
    }

    /// The accumulation depth `k`.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// The element strides along `k` of the lhs and of the rhs.
    pub fn depth_strides(&self) -> (usize, usize) {
        (self.lhs_k, self.rhs_k)
    }

    /// Rows and columns of each output matrix.
    pub fn rows_cols(&self) -> (usize, usize) {
        (self.rows, self.cols)
    }

    /// The element strides of the lhs along its rows and along `k`, and of the rhs along `k`
    /// and along its columns: lhs `(i, k)` is at `start + i·lhs.0 + k·lhs.1`, rhs `(k, j)` at
    /// `start + k·rhs.0 + j·rhs.1`.
    pub fn matrix_strides(&self) -> ((usize, usize), (usize, usize)) {
        ((self.lhs_i, self.lhs_k), (self.rhs_k, self.rhs_j))
    }

    /// Calls `f(lhs_start, rhs_start)` for every output matrix (batch) in order: the offsets of
    /// its operands' first elements (its output is the next `rows · cols` values).
    pub fn for_each_batch(&self, mut f: impl FnMut(usize, usize)) {
        let [n0, n1, n2] = self.batch;
        let [l0s, l1s, l2s] = self.lhs_batch_stride;
        let [r0s, r1s, r2s] = self.rhs_batch_stride;
        for b0 in 0..n0 {
            for b1 in 0..n1 {
                for b2 in 0..n2 {
                    f(b0 * l0s + b1 * l1s + b2 * l2s, b0 * r0s + b1 * r1s + b2 * r2s);
                }
            }
        }
    }

    /// Calls `f(lhs_start, rhs_start)` for every output element in row-major order: the offsets
    /// of the first lhs and rhs elements of its dot product (element `k` is at `start + k ·`
    /// [`depth_strides`](Self::depth_strides)).
    #[inline(always)]
    pub fn for_each_output(&self, mut f: impl FnMut(usize, usize)) {
        let [n0, n1, n2] = self.batch;
        let [l0s, l1s, l2s] = self.lhs_batch_stride;
        let [r0s, r1s, r2s] = self.rhs_batch_stride;
        for b0 in 0..n0 {
            for b1 in 0..n1 {
                for b2 in 0..n2 {
                    let lb = b0 * l0s + b1 * l1s + b2 * l2s;
                    let rb = b0 * r0s + b1 * r1s + b2 * r2s;
                    for i in 0..self.rows {
                        for j in 0..self.cols {
                            f(lb + i * self.lhs_i, rb + j * self.rhs_j);
                        }
                    }
                }
            }
        }
    }
}

/// Prepared parameters of [`batch_matmul_s8`] / [`batch_matmul_s16`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BatchMatMulParams {
    /// `-lhs_zero_point`.
    pub lhs_offset: i32,
    /// `-rhs_zero_point`.
    pub rhs_offset: i32,
    /// `output_zero_point`.
    pub output_offset: i32,
    /// `lhs_scale · rhs_scale / output_scale` as TFLite's `QuantizeMultiplier` splits it.
    pub multiplier: QuantizedMultiplier,
    /// The output clamp (the type's range: BATCH_MATMUL has no fused activation).
    pub range: ActivationRange,
    /// The shapes.
    pub shape: BatchMatMulShape,
}

impl BatchMatMulParams {
    #[allow(clippy::too_many_arguments)]
    fn prepare(
        range: ActivationRange,
        lhs: PerTensorQuant,
        rhs: PerTensorQuant,
        output: PerTensorQuant,
        lhs_shape: &[usize],
        rhs_shape: &[usize],
        adj_x: bool,
        adj_y: bool,
    ) -> Result<Self, Error> {
        for q in [lhs, rhs, output] {
            q.check(range.min, range.max)?;
        }
        let shape = BatchMatMulShape::new(lhs_shape, rhs_shape, adj_x, adj_y)?;
        let real = lhs.scale as f64 * rhs.scale as f64 / output.scale as f64;
        let multiplier = crate::requant::quantize_multiplier(real);
        ensure(multiplier.shift <= 30, K, "multiplier above 2^30")?;
        Ok(Self {
            lhs_offset: -lhs.zero_point,
            rhs_offset: -rhs.zero_point,
            output_offset: output.zero_point,
            multiplier,
            range,
            shape,
        })
    }

    /// Prepares an int8 batched matmul: each operand and the output with its own scale and zero
    /// point (TFLite accepts any zero points here).
    ///
    /// # Errors
    /// [`Error::InvalidScale`] / [`Error::ZeroPointOutOfRange`] for bad quantization parameters,
    /// [`Error::BadKernelArgument`] for shapes [`BatchMatMulShape::new`] refuses or a multiplier
    /// above 2^30.
    #[allow(clippy::too_many_arguments)]
    pub fn prepare_s8(
        lhs: PerTensorQuant,
        rhs: PerTensorQuant,
        output: PerTensorQuant,
        lhs_shape: &[usize],
        rhs_shape: &[usize],
        adj_x: bool,
        adj_y: bool,
    ) -> Result<Self, Error> {
        Self::prepare(ActivationRange::INT8, lhs, rhs, output, lhs_shape, rhs_shape, adj_x, adj_y)
    }

    /// Prepares an int16 batched matmul (both operands and the output int16): every zero point
    /// must be 0, as TFLite Micro's Prepare requires.
    ///
    /// # Errors
    /// As [`BatchMatMulParams::prepare_s8`], and [`Error::BadKernelArgument`] for a non-zero
    /// zero point.
    #[allow(clippy::too_many_arguments)]
    pub fn prepare_s16(
        lhs: PerTensorQuant,
        rhs: PerTensorQuant,
        output: PerTensorQuant,
        lhs_shape: &[usize],
        rhs_shape: &[usize],
        adj_x: bool,
        adj_y: bool,
    ) -> Result<Self, Error> {
        ensure(
            lhs.zero_point == 0 && rhs.zero_point == 0 && output.zero_point == 0,
            K,
            "int16 batch matmul needs zero points 0",
        )?;
        Self::prepare(ActivationRange::INT16, lhs, rhs, output, lhs_shape, rhs_shape, adj_x, adj_y)
    }
}

/// The accumulation of one element type: `i32` (wrapping) for int8, `i64` for int16.
trait Acc: ActivationElement {
    fn dot(p: &BatchMatMulParams, lhs: &[Self], l0: usize, rhs: &[Self], r0: usize) -> i32;
}

impl Acc for i8 {
    #[inline(always)]
    fn dot(p: &BatchMatMulParams, lhs: &[i8], l0: usize, rhs: &[i8], r0: usize) -> i32 {
        let s = &p.shape;
        let mut total = 0i32;
        for k in 0..s.depth {
            let a = lhs.get(l0 + k * s.lhs_k).copied().unwrap_or(0) as i32 + p.lhs_offset;
            let b = rhs.get(r0 + k * s.rhs_k).copied().unwrap_or(0) as i32 + p.rhs_offset;
            total = total.wrapping_add(a.wrapping_mul(b));
        }
        multiply_by_quantized_multiplier(total, p.multiplier.multiplier, p.multiplier.shift)
    }
}

impl Acc for i16 {
    #[inline(always)]
    fn dot(p: &BatchMatMulParams, lhs: &[i16], l0: usize, rhs: &[i16], r0: usize) -> i32 {
        let s = &p.shape;
        let mut total = 0i64;
        for k in 0..s.depth {
            let a = lhs.get(l0 + k * s.lhs_k).copied().unwrap_or(0) as i64;
            let b = rhs.get(r0 + k * s.rhs_k).copied().unwrap_or(0) as i64;
            total = total.wrapping_add(a * b);
        }
        let (m, shift) = (p.multiplier.multiplier, p.multiplier.shift);
        if shift > 7 {
            // As `Accumulator for i64`: the shift-7 form on `total · 2^(shift-7)`.
            multiply_by_quantized_multiplier_i64(total.wrapping_shl((shift - 7) as u32), m, 7)
        } else {
            multiply_by_quantized_multiplier_i64(total, m, shift)
        }
    }
}

fn run<T: Acc>(p: &BatchMatMulParams, lhs: &[T], rhs: &[T], output: &mut [T]) -> Result<(), Error> {
    let s = &p.shape;
    check_same_len(K, "lhs length != lhs shape", lhs.len(), s.lhs_len)?;
    check_same_len(K, "rhs length != rhs shape", rhs.len(), s.rhs_len)?;
    check_same_len(K, "output length != output shape", output.len(), s.out_len)?;
    let mut out = output.iter_mut();
    s.for_each_output(|l0, r0| {
        let acc = T::dot(p, lhs, l0, rhs, r0);
        let y = p.range.apply(acc.wrapping_add(p.output_offset));
        if let Some(o) = out.next() {
            *o = T::from_clamped(y);
        }
    });
    Ok(())
}

/// int8 batched matmul, bit-exact with TFLite Micro and the TFLite interpreter. Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn batch_matmul_s8(p: &BatchMatMulParams, lhs: &[i8], rhs: &[i8], output: &mut [i8]) -> Result<(), Error> {
    ensure(p.range == ActivationRange::INT8, K, "parameters not prepared for int8")?;
    #[cfg(all(mq_portable, target_arch = "x86_64", feature = "std"))]
    {
        let s = &p.shape;
        check_same_len(K, "lhs length != lhs shape", lhs.len(), s.lhs_len)?;
        check_same_len(K, "rhs length != rhs shape", rhs.len(), s.rhs_len)?;
        check_same_len(K, "output length != output shape", output.len(), s.out_len)?;
        if run_s8_x86(p, lhs, rhs, output) {
            return Ok(());
        }
    }
    run(p, lhs, rhs, output)
}

/// [`batch_matmul_s8`] on the x86-64 host's `vpmaddwd` tiles (`arch::x86::matmul_s8`), one
/// product per batch, in [`BatchMatMulShape::for_each_output`]'s order; `false` if the fast path
/// declines (it does for all batches or none).
#[cfg(all(mq_portable, target_arch = "x86_64", feature = "std"))]
fn run_s8_x86(p: &BatchMatMulParams, lhs: &[i8], rhs: &[i8], output: &mut [i8]) -> bool {
    let s = &p.shape;
    let [n0, n1, n2] = s.batch;
    let [l0s, l1s, l2s] = s.lhs_batch_stride;
    let [r0s, r1s, r2s] = s.rhs_batch_stride;
    let (lo, ro) = (p.lhs_offset as i16, p.rhs_offset as i16); // in [-127, 128]
    let mut blocks = output.chunks_mut((s.rows * s.cols).max(1));
    for b in 0..n0 * n1 * n2 {
        let (b0, b1, b2) = (b / (n1 * n2), b / n2 % n1, b % n2);
        let (lb, rb) = (b0 * l0s + b1 * l1s + b2 * l2s, b0 * r0s + b1 * r1s + b2 * r2s);
        let Some(out) = blocks.next() else { return b > 0 };
        let a = |i: usize, k: usize| i16::from(lhs.get(lb + i * s.lhs_i + k * s.lhs_k).copied().unwrap_or(0)) + lo;
        let w = |k: usize, j: usize| i16::from(rhs.get(rb + k * s.rhs_k + j * s.rhs_j).copied().unwrap_or(0)) + ro;
        let (m, sh) = (p.multiplier.multiplier, p.multiplier.shift);
        if !super::arch::x86::matmul_s8([s.rows, s.depth, s.cols], a, w, m, sh, p.output_offset, p.range, out) {
            return false; // declined on the first batch (the same for all): nothing written
        }
    }
    true
}

/// int16 batched matmul (int64 accumulator), bit-exact with TFLite Micro and the TFLite
/// interpreter. Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn batch_matmul_s16(p: &BatchMatMulParams, lhs: &[i16], rhs: &[i16], output: &mut [i16]) -> Result<(), Error> {
    ensure(p.range == ActivationRange::INT16, K, "parameters not prepared for int16")?;
    run(p, lhs, rhs, output)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: f32, zp: i32) -> PerTensorQuant {
        PerTensorQuant::new(s, zp)
    }

    /// The dispatched kernel (the x86-64 host's `vpmaddwd` tiles where they apply) against the
    /// reference loop bit for bit: ranks 2 to 4 with broadcast batches, both adjoints, depths and
    /// columns around the tiles' blocks, every zero point and multipliers across the shifts.
    #[test]
    fn dispatched_matches_the_reference() {
        let mut state = 0x9e37_79b9u64;
        let mut next = move |n: usize| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 33) as usize) % n.max(1)
        };
        for case in 0..400 {
            let (rows, depth, cols) = (1 + next(9), 1 + next(40), 1 + next(40));
            let (adj_x, adj_y) = (next(2) == 1, next(2) == 1);
            let (b_l, b_r) = match case % 3 {
                0 => (alloc::vec![], alloc::vec![]),
                1 => (alloc::vec![2, 1 + next(3)], alloc::vec![1 + next(2)]),
                _ => (alloc::vec![3], alloc::vec![3]),
            };
            let mut ls = b_l.clone();
            ls.extend(if adj_x { [depth, rows] } else { [rows, depth] });
            let mut rs = b_r.clone();
            rs.extend(if adj_y { [cols, depth] } else { [depth, cols] });
            if case % 3 == 1 && b_r[0] != 1 && b_r[0] != b_l[1] {
                rs[0] = 1; // broadcastable
            }
            let (zl, zr, zo) = (next(256) as i32 - 128, next(256) as i32 - 128, next(256) as i32 - 128);
            let scale = [0.002f32, 0.05, 0.9, 3.0][next(4)];
            let Ok(p) = BatchMatMulParams::prepare_s8(q(0.1, zl), q(0.2, zr), q(scale, zo), &ls, &rs, adj_x, adj_y)
            else {
                continue;
            };
            let lhs: alloc::vec::Vec<i8> = (0..ls.iter().product::<usize>()).map(|_| next(256) as u8 as i8).collect();
            let rhs: alloc::vec::Vec<i8> = (0..rs.iter().product::<usize>()).map(|_| next(256) as u8 as i8).collect();
            let n = p.shape.output_len();
            let (mut want, mut got) = (alloc::vec![0i8; n], alloc::vec![0i8; n]);
            run(&p, &lhs, &rhs, &mut want).unwrap();
            batch_matmul_s8(&p, &lhs, &rhs, &mut got).unwrap();
            assert_eq!(want, got, "case {case}: {ls:?} x {rs:?} adj {adj_x} {adj_y}");
        }
    }

    #[test]
    fn shapes_broadcast_and_adjoints() {
        let s = BatchMatMulShape::new(&[2, 1, 4, 5], &[3, 5, 6], false, false).unwrap();
        assert_eq!(s.output_shape(), &[2, 3, 4, 6]);
        let s = BatchMatMulShape::new(&[5, 4], &[6, 5], true, true).unwrap();
        assert_eq!(s.output_shape(), &[4, 6]);
        assert_eq!(s.output_len(), 24);
    }

    #[test]
    fn errors() {
        let e = |r: Result<BatchMatMulShape, Error>| matches!(r, Err(Error::BadKernelArgument { .. }));
        assert!(e(BatchMatMulShape::new(&[4], &[4, 2], false, false)));
        assert!(e(BatchMatMulShape::new(&[1, 1, 1, 1, 2, 3], &[3, 2], false, false)));
        assert!(e(BatchMatMulShape::new(&[2, 3], &[4, 2], false, false)));
        assert!(e(BatchMatMulShape::new(&[2, 2, 3], &[3, 3, 2], false, false)));
        let p = BatchMatMulParams::prepare_s8(q(0.1, 0), q(0.1, 0), q(0.1, 0), &[2, 3], &[3, 2], false, false).unwrap();
        let mut out = [0i8; 4];
        assert!(batch_matmul_s8(&p, &[0; 5], &[0; 6], &mut out).is_err());
        assert!(batch_matmul_s8(&p, &[0; 6], &[0; 6], &mut out[..3]).is_err());
        assert!(batch_matmul_s16(&p, &[0; 6], &[0; 6], &mut [0i16; 4]).is_err());
        assert!(matches!(
            BatchMatMulParams::prepare_s8(q(0.0, 0), q(0.1, 0), q(0.1, 0), &[2, 3], &[3, 2], false, false),
            Err(Error::InvalidScale)
        ));
        assert!(
            BatchMatMulParams::prepare_s16(q(0.1, 1), q(0.1, 0), q(0.1, 0), &[2, 3], &[3, 2], false, false).is_err()
        );
        assert!(
            BatchMatMulParams::prepare_s8(q(0.1, 200), q(0.1, 0), q(0.1, 0), &[2, 3], &[3, 2], false, false).is_err()
        );
    }

    #[test]
    fn adjoint_reads_transposed() {
        // lhs [[1, 2, 3]] stored as [3, 1] with adj_x; rhs [[1], [1], [1]] stored as [1, 3] with adj_y.
        let p = BatchMatMulParams::prepare_s8(q(1.0, 0), q(1.0, 0), q(1.0, 0), &[3, 1], &[1, 3], true, true).unwrap();
        let mut out = [0i8; 1];
        batch_matmul_s8(&p, &[1, 2, 3], &[1, 1, 1], &mut out).unwrap();
        assert_eq!(out, [6]);
    }
}
