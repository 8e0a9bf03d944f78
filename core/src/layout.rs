//! NumPy-style layout permutations: the one place that transposes row-major data.
//!
//! A permutation `perm` of a tensor's axes follows NumPy's `transpose(data, perm)`: output axis
//! `i` is input axis `perm[i]`, so the output shape is `[shape[perm[0]], shape[perm[1]], ...]`.
//! NCHW stored as NHWC is `[0, 2, 3, 1]`; `channels_last` (with `alloc`) builds it
//! for any rank.
//!
//! Everything here works on slices and fixed-size arrays: no allocation, tensors of up to
//! [`MAX_AXES`] axes. [`Transpose`] validates a shape and permutation once and then walks the
//! input index of every output element ([`Transpose::sources`]) or copies data
//! ([`Transpose::apply`]). With the `alloc` feature, `transpose`, `inverse`, `identity`,
//! `channels_last`, `permute_shape` and `strides` return `Vec`s for the converter.
//!
//! Users: the ONNX importer and exporter (how an ONNX tensor's axes are stored in the graph,
//! constants folded at import), the float reference (`float`), the graph passes and
//! the wasm package (model inputs and outputs in the caller's layout).
//!
//! ```
//! use microquant::layout::{LayoutError, Transpose};
//!
//! // numpy: np.arange(6).reshape(2, 3).transpose(1, 0).ravel() == [0, 3, 1, 4, 2, 5]
//! let data = [0u8, 1, 2, 3, 4, 5];
//! let t = Transpose::new(&[2, 3], &[1, 0])?;
//! assert_eq!(t.output_shape(), [3, 2]);
//! let mut out = [0u8; 6];
//! t.apply(&data, &mut out)?;
//! assert_eq!(out, [0, 3, 1, 4, 2, 5]);
//!
//! // A permutation that repeats an axis is refused, with the axis.
//! assert_eq!(Transpose::new(&[2, 2], &[0, 0]), Err(LayoutError::RepeatedAxis { axis: 0 }));
//! # Ok::<(), LayoutError>(())
//! ```
#![forbid(unsafe_code)]

use core::fmt;

#[cfg(feature = "alloc")]
use alloc::vec;
#[cfg(feature = "alloc")]
use alloc::vec::Vec;

/// The most axes a [`Transpose`] handles (the kernels stop at 6; ONNX constants folded at
/// import may have a few more).
pub const MAX_AXES: usize = 16;

/// Why a shape, permutation or buffer does not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum LayoutError {
    /// The tensor has more than [`MAX_AXES`] axes.
    TooManyAxes {
        /// The tensor's rank.
        rank: usize,
    },
    /// The permutation does not have one entry per axis of the shape.
    RankMismatch {
        /// Entries in the permutation.
        perm: usize,
        /// Axes in the shape.
        rank: usize,
    },
    /// A permutation entry names no axis.
    AxisOutOfRange {
        /// The entry.
        axis: usize,
        /// Axes in the shape.
        rank: usize,
    },
    /// A permutation names the same axis twice.
    RepeatedAxis {
        /// The repeated axis.
        axis: usize,
    },
    /// A buffer does not have the shape's element count (or an output slice is too short).
    LengthMismatch {
        /// Elements required.
        expected: usize,
        /// Elements given.
        actual: usize,
    },
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            LayoutError::TooManyAxes { rank } => write!(f, "{rank} axes (at most {MAX_AXES} supported)"),
            LayoutError::RankMismatch { perm, rank } => {
                write!(f, "permutation of {perm} axes for a shape of {rank}")
            }
            LayoutError::AxisOutOfRange { axis, rank } => {
                write!(f, "permutation entry {axis} out of range for {rank} axes")
            }
            LayoutError::RepeatedAxis { axis } => write!(f, "permutation repeats axis {axis}"),
            LayoutError::LengthMismatch { expected, actual } => {
                write!(f, "{actual} elements, the shape has {expected}")
            }
        }
    }
}

impl core::error::Error for LayoutError {}

/// True if `perm` is the identity (every axis stays).
pub fn is_identity(perm: &[usize]) -> bool {
    perm.iter().enumerate().all(|(i, &p)| i == p)
}

/// Checks that `perm` is a permutation of `0..perm.len()` (any length: no bound here).
///
/// # Errors
/// [`LayoutError::AxisOutOfRange`] or [`LayoutError::RepeatedAxis`], for the first bad entry.
pub fn check_permutation(perm: &[usize]) -> Result<(), LayoutError> {
    let rank = perm.len();
    for (i, &p) in perm.iter().enumerate() {
        if p >= rank {
            return Err(LayoutError::AxisOutOfRange { axis: p, rank });
        }
        if perm[..i].contains(&p) {
            return Err(LayoutError::RepeatedAxis { axis: p });
        }
    }
    Ok(())
}

/// True if `perm` is a permutation of `0..perm.len()`.
pub fn is_permutation(perm: &[usize]) -> bool {
    check_permutation(perm).is_ok()
}

/// True if transposing a tensor of `shape` by `perm` leaves its row-major data unchanged (only
/// extent-1 axes move: NCHW to NHWC with one channel, say), so a reshape does the job.
pub fn is_data_preserving(shape: &[usize], perm: &[usize]) -> bool {
    let mut last = None;
    for &p in perm {
        if shape.get(p).copied().unwrap_or(1) == 1 {
            continue;
        }
        if last.is_some_and(|l| p < l) {
            return false;
        }
        last = Some(p);
    }
    true
}

/// `inv[perm[i]] = i`, entries of `perm` out of range of `inv` ignored.
fn write_inverse(perm: &[usize], inv: &mut [usize]) {
    for (i, &p) in perm.iter().enumerate() {
        if let Some(slot) = inv.get_mut(p) {
            *slot = i;
        }
    }
}

/// Writes the inverse of `perm` (`out[perm[i]] = i`) into `out[..perm.len()]`: transposing by
/// `perm` and then by its inverse gives the data back.
///
/// # Errors
/// What [`check_permutation`] reports, or [`LayoutError::LengthMismatch`] if `out` is shorter
/// than `perm`.
pub fn inverse_into(perm: &[usize], out: &mut [usize]) -> Result<(), LayoutError> {
    check_permutation(perm)?;
    let actual = out.len();
    let out = out.get_mut(..perm.len()).ok_or(LayoutError::LengthMismatch { expected: perm.len(), actual })?;
    write_inverse(perm, out);
    Ok(())
}

/// Row-major strides of `shape` (saturating), into `out[..shape.len()]` (`out` must be at least
/// that long; extra entries are left alone).
fn write_strides(shape: &[usize], out: &mut [usize]) {
    let mut acc = 1usize;
    for (s, &d) in out.iter_mut().zip(shape).rev() {
        *s = acc;
        acc = acc.saturating_mul(d);
    }
}

/// Writes the row-major strides of `shape` (in elements, saturating) into `out[..shape.len()]`.
///
/// # Errors
/// [`LayoutError::LengthMismatch`] if `out` is shorter than `shape`.
pub fn strides_into(shape: &[usize], out: &mut [usize]) -> Result<(), LayoutError> {
    let actual = out.len();
    let out = out.get_mut(..shape.len()).ok_or(LayoutError::LengthMismatch { expected: shape.len(), actual })?;
    write_strides(shape, out);
    Ok(())
}

/// A validated transpose of a tensor of one shape by one permutation: the output shape and,
/// per output axis, the input stride. `Copy`, no allocation; prepare once and apply to as many
/// buffers of that shape as needed, of any element type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Transpose {
    rank: usize,
    /// Output extents (first `rank` entries used).
    out_shape: [usize; MAX_AXES],
    /// Input stride of each output axis.
    step: [usize; MAX_AXES],
    /// Element count (saturating product of the shape).
    len: usize,
    /// Only extent-1 axes move: the data keeps its order.
    preserving: bool,
}

impl Transpose {
    /// Prepares numpy's `transpose(data, perm)` for data of `shape`.
    ///
    /// # Errors
    /// [`LayoutError::TooManyAxes`] beyond [`MAX_AXES`], [`LayoutError::RankMismatch`] if `perm`
    /// and `shape` differ in length, and what [`check_permutation`] reports.
    pub fn new(shape: &[usize], perm: &[usize]) -> Result<Self, LayoutError> {
        let rank = shape.len();
        if rank > MAX_AXES {
            return Err(LayoutError::TooManyAxes { rank });
        }
        if perm.len() != rank {
            return Err(LayoutError::RankMismatch { perm: perm.len(), rank });
        }
        check_permutation(perm)?;
        let mut in_strides = [0usize; MAX_AXES];
        write_strides(shape, &mut in_strides[..rank]);
        let mut out_shape = [1usize; MAX_AXES];
        let mut step = [0usize; MAX_AXES];
        for ((o, s), &p) in out_shape.iter_mut().zip(step.iter_mut()).zip(perm) {
            // `p < rank` (checked above), so both reads are in range.
            *o = shape.get(p).copied().unwrap_or(1);
            *s = in_strides.get(p).copied().unwrap_or(0);
        }
        let len = shape.iter().fold(1usize, |a, &d| a.saturating_mul(d));
        Ok(Self { rank, out_shape, step, len, preserving: is_data_preserving(shape, perm) })
    }

    /// The output shape: `shape[perm[i]]` for each axis `i`.
    pub fn output_shape(&self) -> &[usize] {
        &self.out_shape[..self.rank]
    }

    /// The element count of the input (and of the output).
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if the tensor has no element (an axis of extent 0).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// True if the data keeps its row-major order (only extent-1 axes move): a copy transposes.
    pub fn is_data_preserving(&self) -> bool {
        self.preserving
    }

    /// The input index of each output element, in output (row-major) order.
    pub fn sources(&self) -> Sources {
        Sources { t: *self, idx: [0; MAX_AXES], src: 0, remaining: self.len }
    }

    /// Writes the transpose of `input` into `output`.
    ///
    /// # Errors
    /// [`LayoutError::LengthMismatch`] if `input` or `output` does not have [`len`](Self::len)
    /// elements.
    pub fn apply<T: Copy>(&self, input: &[T], output: &mut [T]) -> Result<(), LayoutError> {
        self.check_len(input.len())?;
        self.check_len(output.len())?;
        if self.preserving {
            output.copy_from_slice(input);
            return Ok(());
        }
        for (o, s) in output.iter_mut().zip(self.sources()) {
            if let Some(&v) = input.get(s) {
                *o = v;
            }
        }
        Ok(())
    }

    /// Checks that a buffer of `actual` elements fits the shape.
    ///
    /// # Errors
    /// [`LayoutError::LengthMismatch`] if it does not.
    pub fn check_len(&self, actual: usize) -> Result<(), LayoutError> {
        if actual == self.len { Ok(()) } else { Err(LayoutError::LengthMismatch { expected: self.len, actual }) }
    }
}

/// The input index of each output element of a [`Transpose`], in output order (from
/// [`Transpose::sources`]). Not generic: every element type shares it.
#[derive(Debug, Clone)]
pub struct Sources {
    t: Transpose,
    /// The output index being visited, per axis.
    idx: [usize; MAX_AXES],
    /// The input index of the output element at `idx`.
    src: usize,
    remaining: usize,
}

impl Sources {
    /// Moves to the next output element (last axis fastest), keeping `src` in step.
    fn advance(&mut self) {
        let rank = self.t.rank;
        for ((i, &n), &step) in
            self.idx[..rank].iter_mut().zip(&self.t.out_shape[..rank]).zip(&self.t.step[..rank]).rev()
        {
            *i += 1;
            self.src += step;
            if *i < n {
                break;
            }
            self.src -= step * *i;
            *i = 0;
        }
    }
}

impl Iterator for Sources {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        let s = self.src;
        if self.remaining > 0 {
            self.advance();
        }
        Some(s)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for Sources {}

/// numpy `transpose(data, perm)` of row-major `data` of `shape`, into a new vector.
///
/// # Errors
/// What [`Transpose::new`] reports, or [`LayoutError::LengthMismatch`] if `data` does not have
/// the shape's element count.
#[cfg(feature = "alloc")]
pub fn transpose<T: Copy>(data: &[T], shape: &[usize], perm: &[usize]) -> Result<Vec<T>, LayoutError> {
    let t = Transpose::new(shape, perm)?;
    t.check_len(data.len())?;
    if t.is_data_preserving() {
        return Ok(data.to_vec());
    }
    Ok(t.sources().filter_map(|s| data.get(s).copied()).collect())
}

/// The identity permutation of `rank` axes.
#[cfg(feature = "alloc")]
pub fn identity(rank: usize) -> Vec<usize> {
    (0..rank).collect()
}

/// Channels last: NCHW → NHWC `[0, 2, 3, 1]`, and for any rank ≥ 2 the second axis moved last.
#[cfg(feature = "alloc")]
pub fn channels_last(rank: usize) -> Vec<usize> {
    let mut p = vec![0];
    p.extend(2..rank);
    if rank >= 2 {
        p.push(1);
    }
    p
}

/// The inverse permutation (`inv[perm[i]] = i`), any length. `perm` should be a permutation
/// ([`check_permutation`]); entries out of range are ignored (their slots stay 0).
#[cfg(feature = "alloc")]
pub fn inverse(perm: &[usize]) -> Vec<usize> {
    let mut inv = vec![0; perm.len()];
    write_inverse(perm, &mut inv);
    inv
}

/// `shape` permuted: `out[i] = shape[perm[i]]` (1 for an entry out of range), any length.
#[cfg(feature = "alloc")]
pub fn permute_shape(shape: &[usize], perm: &[usize]) -> Vec<usize> {
    perm.iter().map(|&p| shape.get(p).copied().unwrap_or(1)).collect()
}

/// Row-major strides of `shape` (in elements, saturating), any length.
#[cfg(feature = "alloc")]
pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    write_strides(shape, &mut s);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition: output element at multi-index `o` reads input element `i` with
    /// `i[perm[k]] = o[k]`, for every output element in row-major order.
    fn naive(shape: &[usize], perm: &[usize], out: &mut [usize]) {
        let rank = shape.len();
        let mut in_strides = [0usize; MAX_AXES];
        strides_into(shape, &mut in_strides).unwrap();
        let mut o = [0usize; MAX_AXES];
        for slot in out.iter_mut() {
            *slot = (0..rank).map(|k| o[k] * in_strides[perm[k]]).sum();
            for k in (0..rank).rev() {
                o[k] += 1;
                if o[k] < shape[perm[k]] {
                    break;
                }
                o[k] = 0;
            }
        }
    }

    #[test]
    fn transpose_matches_numpy() {
        // numpy: np.arange(24).reshape(2,3,4).transpose(1,2,0).ravel()
        let data: [u32; 24] = core::array::from_fn(|i| i as u32);
        let t = Transpose::new(&[2, 3, 4], &[1, 2, 0]).unwrap();
        assert_eq!(t.output_shape(), [3, 4, 2]);
        let mut out = [0u32; 24];
        t.apply(&data, &mut out).unwrap();
        assert_eq!(out, [0, 12, 1, 13, 2, 14, 3, 15, 4, 16, 5, 17, 6, 18, 7, 19, 8, 20, 9, 21, 10, 22, 11, 23]);
        let mut inv = [0usize; 3];
        inverse_into(&[1, 2, 0], &mut inv).unwrap();
        let mut back = [0u32; 24];
        Transpose::new(&[3, 4, 2], &inv).unwrap().apply(&out, &mut back).unwrap();
        assert_eq!(back, data);
    }

    #[test]
    fn sources_match_the_definition() {
        let cases: &[(&[usize], &[usize])] = &[
            (&[1, 1, 8, 8], &[0, 2, 3, 1]),
            (&[1, 3, 4, 5], &[0, 2, 3, 1]),
            (&[2, 1, 3, 1], &[1, 0, 3, 2]),
            (&[2, 3, 1, 4], &[0, 2, 1, 3]),
            (&[2, 3, 4], &[2, 1, 0]),
            (&[2, 1, 2, 1, 3, 2], &[5, 3, 1, 4, 0, 2]),
            (&[5], &[0]),
            (&[], &[]),
            (&[3, 0, 2], &[2, 0, 1]),
        ];
        for &(shape, perm) in cases {
            let t = Transpose::new(shape, perm).unwrap();
            let n = t.len();
            assert_eq!(n, shape.iter().product::<usize>());
            let mut want = [0usize; 64];
            naive(shape, perm, &mut want[..n]);
            let mut got = [0usize; 64];
            let sources = t.sources();
            assert_eq!(sources.len(), n);
            for (g, s) in got.iter_mut().zip(sources) {
                *g = s;
            }
            assert_eq!(got[..n], want[..n], "shape {shape:?} perm {perm:?}");
            // `apply` (which copies when the order is kept) agrees with the walk.
            let input: [usize; 64] = core::array::from_fn(|i| i);
            let mut out = [0usize; 64];
            t.apply(&input[..n], &mut out[..n]).unwrap();
            assert_eq!(out[..n], want[..n], "shape {shape:?} perm {perm:?} (apply)");
        }
    }

    #[test]
    fn bad_permutations_and_buffers() {
        assert_eq!(Transpose::new(&[2, 3], &[0]), Err(LayoutError::RankMismatch { perm: 1, rank: 2 }));
        assert_eq!(Transpose::new(&[2, 3], &[0, 2]), Err(LayoutError::AxisOutOfRange { axis: 2, rank: 2 }));
        assert_eq!(Transpose::new(&[2, 3, 4], &[1, 0, 1]), Err(LayoutError::RepeatedAxis { axis: 1 }));
        let big = [1usize; MAX_AXES + 1];
        let perm: [usize; MAX_AXES + 1] = core::array::from_fn(|i| i);
        assert_eq!(Transpose::new(&big, &perm), Err(LayoutError::TooManyAxes { rank: MAX_AXES + 1 }));
        let t = Transpose::new(&[2, 3], &[1, 0]).unwrap();
        let mut out = [0u8; 6];
        assert_eq!(t.apply(&[0u8; 5], &mut out), Err(LayoutError::LengthMismatch { expected: 6, actual: 5 }));
        assert_eq!(t.apply(&[0u8; 6], &mut out[..4]), Err(LayoutError::LengthMismatch { expected: 6, actual: 4 }));
        let mut short = [0usize; 1];
        assert_eq!(inverse_into(&[1, 0], &mut short), Err(LayoutError::LengthMismatch { expected: 2, actual: 1 }));
        assert_eq!(strides_into(&[2, 3], &mut short), Err(LayoutError::LengthMismatch { expected: 2, actual: 1 }));
        assert!(is_permutation(&[2, 0, 1]) && !is_permutation(&[0, 0]) && !is_permutation(&[3]));
        assert!(is_permutation(&[]));
    }

    #[test]
    fn permutation_helpers() {
        assert!(is_identity(&[0, 1, 2]) && !is_identity(&[0, 2, 1]));
        assert!(is_data_preserving(&[1, 8, 1, 1], &[0, 2, 3, 1]));
        assert!(!is_data_preserving(&[1, 8, 2, 1], &[0, 2, 3, 1]));
        assert!(Transpose::new(&[1, 1, 8, 8], &[0, 2, 3, 1]).unwrap().is_data_preserving());
        let mut inv = [9usize; 5];
        inverse_into(&[0, 2, 3, 1], &mut inv).unwrap();
        assert_eq!(inv, [0, 3, 1, 2, 9]);
        let mut s = [0usize; 4];
        strides_into(&[2, 3, 4, 5], &mut s).unwrap();
        assert_eq!(s, [60, 20, 5, 1]);
    }

    #[cfg(feature = "alloc")]
    #[test]
    fn vec_helpers() {
        assert_eq!(channels_last(4), [0, 2, 3, 1]);
        assert_eq!(channels_last(3), [0, 2, 1]);
        assert_eq!(channels_last(1), [0]);
        assert_eq!(identity(3), [0, 1, 2]);
        assert_eq!(inverse(&[0, 2, 3, 1]), [0, 3, 1, 2]);
        assert_eq!(permute_shape(&[1, 3, 8, 8], &[0, 2, 3, 1]), [1, 8, 8, 3]);
        assert_eq!(strides(&[2, 3, 4]), [12, 4, 1]);
        let x: Vec<f32> = (0..6).map(|v| v as f32).collect();
        assert_eq!(transpose(&x, &[2, 3], &[1, 0]).unwrap(), [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
        assert_eq!(transpose(&x, &[2, 3], &[0, 0]), Err(LayoutError::RepeatedAxis { axis: 0 }));
        assert_eq!(transpose(&x[..5], &[2, 3], &[1, 0]), Err(LayoutError::LengthMismatch { expected: 6, actual: 5 }));
    }
}
