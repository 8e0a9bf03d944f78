//! Tensor descriptions for the prepare side of the elementwise, activation and data-movement
//! kernels: shapes of up to [`MAX_DIMS`] dimensions, TFLite's numpy-style broadcasting of two
//! shapes and per-tensor quantization parameters.
//!
//! Everything here is allocation-free and runs on the host or on the device; the iteration
//! helpers read inputs through checked accessors, so no index can panic.
#![forbid(unsafe_code)]

use crate::Error;

/// Largest tensor rank these kernels accept (TFLite Micro's `RuntimeShape` inline capacity).
pub const MAX_DIMS: usize = 6;

/// A row-major tensor shape of rank 0 to [`MAX_DIMS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RuntimeShape {
    dims: [usize; MAX_DIMS],
    rank: usize,
}

impl RuntimeShape {
    /// A shape from its extents (outermost first).
    ///
    /// # Errors
    /// [`Error::BadKernelArgument`] if the rank exceeds [`MAX_DIMS`] or the element count
    /// overflows `usize`.
    pub fn new(dims: &[usize]) -> Result<Self, Error> {
        if dims.len() > MAX_DIMS {
            return Err(Error::BadKernelArgument { kernel: "shape", reason: "rank above MAX_DIMS (6)" });
        }
        let mut d = [1usize; MAX_DIMS];
        for (o, &i) in d.iter_mut().zip(dims) {
            *o = i;
        }
        let s = Self { dims: d, rank: dims.len() };
        if s.checked_len().is_none() {
            return Err(Error::BadKernelArgument { kernel: "shape", reason: "element count overflows usize" });
        }
        Ok(s)
    }

    /// The extents, outermost first.
    pub fn dims(&self) -> &[usize] {
        self.dims.get(..self.rank).unwrap_or(&[])
    }

    /// The number of dimensions.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of elements (1 for a scalar).
    pub fn len(&self) -> usize {
        self.checked_len().unwrap_or(0)
    }

    /// True when some extent is zero.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn checked_len(&self) -> Option<usize> {
        self.dims().iter().try_fold(1usize, |acc, &d| acc.checked_mul(d))
    }

    /// The shape right-aligned into `MAX_DIMS` extents, leading ones prepended (TFLite's
    /// `RuntimeShape::ExtendedShape`).
    pub fn extended(&self) -> [usize; MAX_DIMS] {
        let mut out = [1usize; MAX_DIMS];
        let skip = MAX_DIMS - self.rank;
        for (o, &d) in out.iter_mut().skip(skip).zip(self.dims()) {
            *o = d;
        }
        out
    }
}

/// Per-tensor quantization of an activation tensor: `real = scale · (q − zero_point)`.
///
/// Scales are `f32`, as stored in a `.tflite` file; the prepare functions convert them to `f64`
/// exactly where TFLite does, so the derived multipliers match bit for bit.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PerTensorQuant {
    /// Scale (real value of one step), finite and positive.
    pub scale: f32,
    /// Zero point.
    pub zero_point: i32,
}

impl PerTensorQuant {
    /// Quantization parameters from a scale and a zero point.
    pub const fn new(scale: f32, zero_point: i32) -> Self {
        Self { scale, zero_point }
    }

    /// Checks the scale (finite, > 0) and that the zero point fits `[min, max]`.
    pub(crate) fn check(&self, min: i32, max: i32) -> Result<(), Error> {
        if !(self.scale.is_finite() && self.scale > 0.0) {
            return Err(Error::InvalidScale);
        }
        if self.zero_point < min || self.zero_point > max {
            return Err(Error::ZeroPointOutOfRange { zero_point: self.zero_point, min, max });
        }
        Ok(())
    }
}

/// Numpy-style broadcasting of two input shapes of rank ≤ [`MAX_DIMS`], as TFLite's
/// `BroadcastBinaryOpSimple`: shapes are right-aligned, and each pair of extents must be equal or
/// one of them 1. Prepared once; the kernels then walk the output in row-major order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Broadcast {
    /// Fused loop extents, innermost first (`dims` of them are used).
    extent: [usize; MAX_DIMS],
    /// Element strides of input 1 per fused loop (0 where it is broadcast).
    stride1: [usize; MAX_DIMS],
    /// Element strides of input 2 per fused loop.
    stride2: [usize; MAX_DIMS],
    /// Number of fused loops (at least 1).
    loops: usize,
    len1: usize,
    len2: usize,
    out_len: usize,
    out_shape: RuntimeShape,
}

impl Broadcast {
    /// Broadcasts `shape1` against `shape2`.
    ///
    /// # Errors
    /// [`Error::BadKernelArgument`] if a rank exceeds [`MAX_DIMS`] or two extents differ and
    /// neither is 1.
    pub fn new(shape1: &[usize], shape2: &[usize]) -> Result<Self, Error> {
        let s1 = RuntimeShape::new(shape1)?;
        let s2 = RuntimeShape::new(shape2)?;
        let rank = s1.rank().max(s2.rank());
        let (e1, e2) = (s1.extended(), s2.extended());
        let mut out = [1usize; MAX_DIMS];
        for ((o, &a), &b) in out.iter_mut().zip(&e1).zip(&e2) {
            *o = if a == b || b == 1 {
                a
            } else if a == 1 {
                b
            } else {
                return Err(Error::BadKernelArgument {
                    kernel: "broadcast",
                    reason: "extents differ and neither is 1",
                });
            };
        }
        let out_shape = RuntimeShape::new(out.get(MAX_DIMS - rank..).unwrap_or(&[]))?;
        let mut b = Self {
            extent: [1; MAX_DIMS],
            stride1: [0; MAX_DIMS],
            stride2: [0; MAX_DIMS],
            loops: 1,
            len1: s1.len(),
            len2: s2.len(),
            out_len: out_shape.len(),
            out_shape,
        };
        if b.out_len == 0 {
            return Ok(b);
        }
        // Fuse loops from the innermost outwards while both inputs keep the same access pattern
        // (contiguous continuation, or broadcast over both), as TFLite's CanFuseLoops.
        let (mut acc1, mut acc2) = (1usize, 1usize);
        let mut n = 0usize; // index of the current fused loop + 1
        for d in (0..MAX_DIMS).rev() {
            let (a, c, o) = (at(&e1, d), at(&e2, d), at(&out, d));
            if o == 1 {
                continue;
            }
            let st1 = if a == 1 { 0 } else { acc1 };
            let st2 = if c == 1 { 0 } else { acc2 };
            let fuse = n > 0 && {
                let i = n - 1;
                let ok = |st: usize, acc: usize, prev: usize, prev_ext: usize| {
                    if prev == 0 { st == 0 } else { st != 0 && st == prev.saturating_mul(prev_ext) && st == acc }
                };
                ok(st1, acc1, at(&b.stride1, i), at(&b.extent, i)) && ok(st2, acc2, at(&b.stride2, i), at(&b.extent, i))
            };
            if fuse {
                if let Some(e) = b.extent.get_mut(n - 1) {
                    *e = e.saturating_mul(o);
                }
            } else if let (Some(e), Some(x1), Some(x2)) =
                (b.extent.get_mut(n), b.stride1.get_mut(n), b.stride2.get_mut(n))
            {
                *e = o;
                *x1 = st1;
                *x2 = st2;
                n += 1;
            }
            acc1 = acc1.saturating_mul(a);
            acc2 = acc2.saturating_mul(c);
        }
        b.loops = n.max(1);
        Ok(b)
    }

    /// The broadcast output shape.
    pub fn output_shape(&self) -> RuntimeShape {
        self.out_shape
    }
    /// Number of output elements.
    pub fn output_len(&self) -> usize {
        self.out_len
    }
    /// Number of elements of input 1.
    pub fn input1_len(&self) -> usize {
        self.len1
    }
    /// Number of elements of input 2.
    pub fn input2_len(&self) -> usize {
        self.len2
    }
    /// True when both inputs have the output's element count (no broadcasting: a flat
    /// elementwise loop).
    pub fn is_elementwise(&self) -> bool {
        self.len1 == self.out_len && self.len2 == self.out_len
    }

    /// Applies `f` to every output position: `out[i] = f(in1[j1(i)], in2[j2(i)])`. Slice
    /// lengths must have been checked against [`Self::input1_len`] etc. by the caller.
    #[inline]
    pub(crate) fn for_each<A: Copy + Default, B: Copy + Default, O>(
        &self,
        in1: &[A],
        in2: &[B],
        out: &mut [O],
        mut f: impl FnMut(A, B) -> O,
    ) {
        if self.is_elementwise() {
            for ((o, &a), &b) in out.iter_mut().zip(in1).zip(in2) {
                *o = f(a, b);
            }
            return;
        }
        let inner = at(&self.extent, 0);
        let (s1, s2) = (at(&self.stride1, 0), at(&self.stride2, 0));
        if inner == 0 {
            return;
        }
        let mut idx = [0usize; MAX_DIMS];
        let (mut base1, mut base2) = (0usize, 0usize);
        for row in out.chunks_mut(inner) {
            let (mut j1, mut j2) = (base1, base2);
            for o in row.iter_mut() {
                *o = f(get_or_default(in1, j1), get_or_default(in2, j2));
                j1 = j1.wrapping_add(s1);
                j2 = j2.wrapping_add(s2);
            }
            // Odometer over the outer fused loops.
            let mut l = 1;
            while l < self.loops {
                let (Some(i), e) = (idx.get_mut(l), at(&self.extent, l)) else { break };
                *i += 1;
                base1 = base1.wrapping_add(at(&self.stride1, l));
                base2 = base2.wrapping_add(at(&self.stride2, l));
                if *i < e {
                    break;
                }
                *i = 0;
                base1 = base1.wrapping_sub(at(&self.stride1, l).wrapping_mul(e));
                base2 = base2.wrapping_sub(at(&self.stride2, l).wrapping_mul(e));
                l += 1;
            }
        }
    }
}

/// The element at `i` of a small fixed array, or 0 if out of range (never happens for the
/// indices used here; it keeps the code panic-free).
#[inline(always)]
pub(crate) fn at(a: &[usize; MAX_DIMS], i: usize) -> usize {
    a.get(i).copied().unwrap_or(0)
}

/// `s[i]`, or `T::default()` when `i` is out of range. Kernels check every length before they
/// iterate, so the default is never taken; it only keeps the loops free of panics.
#[inline(always)]
pub(crate) fn get_or_default<T: Copy + Default>(s: &[T], i: usize) -> T {
    debug_assert!(i < s.len(), "index {i} out of range {}", s.len());
    match s.get(i) {
        Some(v) => *v,
        None => T::default(),
    }
}

/// Returns `Err(BadKernelArgument)` unless `actual == expected`.
#[inline]
pub(crate) fn check_same_len(
    kernel: &'static str,
    reason: &'static str,
    actual: usize,
    expected: usize,
) -> Result<(), Error> {
    if actual == expected { Ok(()) } else { Err(Error::BadKernelArgument { kernel, reason }) }
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::vec::Vec;

    /// Naive numpy broadcasting (right-aligned, index arithmetic per element).
    fn naive(s1: &[usize], s2: &[usize]) -> Vec<(usize, usize)> {
        let rank = s1.len().max(s2.len());
        let ext = |s: &[usize]| {
            let mut v = std::vec![1; rank - s.len()];
            v.extend_from_slice(s);
            v
        };
        let (a, b) = (ext(s1), ext(s2));
        let out: Vec<usize> = a.iter().zip(&b).map(|(&x, &y)| x.max(y)).collect();
        let n: usize = out.iter().product();
        (0..n)
            .map(|mut flat| {
                let mut idx = std::vec![0; rank];
                for d in (0..rank).rev() {
                    idx[d] = flat % out[d];
                    flat /= out[d];
                }
                let off = |s: &[usize]| {
                    let mut o = 0;
                    for d in 0..rank {
                        o = o * s[d] + if s[d] == 1 { 0 } else { idx[d] };
                    }
                    o
                };
                (off(&a), off(&b))
            })
            .collect()
    }

    #[test]
    fn broadcast_matches_naive_on_many_shape_pairs() {
        let shapes: &[&[usize]] = &[
            &[],
            &[1],
            &[3],
            &[2, 3],
            &[2, 1],
            &[1, 3],
            &[4, 1, 3],
            &[4, 2, 3],
            &[1, 2, 1],
            &[2, 1, 2, 3],
            &[2, 4, 1, 1],
            &[1, 1, 1, 3],
            &[2, 1, 2, 1, 3],
            &[1, 2, 1, 2, 1, 3],
            &[2, 2, 2, 2, 2, 3],
        ];
        let mut checked = 0;
        for a in shapes {
            for b in shapes {
                let Ok(bc) = Broadcast::new(a, b) else { continue };
                let want = naive(a, b);
                let la: usize = a.iter().product();
                let lb: usize = b.iter().product();
                let in1: Vec<usize> = (0..la).collect();
                let in2: Vec<usize> = (0..lb).collect();
                let mut out = std::vec![(usize::MAX, usize::MAX); bc.output_len()];
                bc.for_each(&in1, &in2, &mut out, |x, y| (x, y));
                assert_eq!(out, want, "{a:?} vs {b:?}");
                checked += 1;
            }
        }
        assert!(checked > 100);
    }

    #[test]
    fn incompatible_and_oversized_shapes_are_errors() {
        assert!(Broadcast::new(&[2, 3], &[3, 2]).is_err());
        assert!(Broadcast::new(&[1; 7], &[1]).is_err());
        assert!(RuntimeShape::new(&[usize::MAX, 2]).is_err());
    }

    #[test]
    fn empty_output() {
        let bc = Broadcast::new(&[0, 3], &[1, 3]).unwrap();
        assert_eq!(bc.output_len(), 0);
        let mut out: [u8; 0] = [];
        bc.for_each(&[0u8; 0], &[0u8; 3], &mut out, |a, _| a);
    }
}
