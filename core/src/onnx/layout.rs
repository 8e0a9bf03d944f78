//! Axis permutations: how an ONNX tensor's axes are stored in the graph.
//!
//! A layout is a permutation `perm`: graph axis `i` is ONNX axis `perm[i]`, so the graph shape
//! is `[onnx_shape[perm[0]], onnx_shape[perm[1]], ...]`. NCHW stored as NHWC is `[0, 2, 3, 1]`.

use alloc::vec;
use alloc::vec::Vec;

/// The identity permutation of `rank` axes.
pub(crate) fn identity(rank: usize) -> Vec<usize> {
    (0..rank).collect()
}

/// True if `perm` is the identity.
pub(crate) fn is_identity(perm: &[usize]) -> bool {
    perm.iter().enumerate().all(|(i, &p)| i == p)
}

/// NCHW → NHWC (and any rank ≥ 3: channels last).
pub(crate) fn channels_last(rank: usize) -> Vec<usize> {
    let mut p = vec![0];
    p.extend(2..rank);
    if rank >= 2 {
        p.push(1);
    }
    p
}

/// The inverse permutation (`inv[perm[i]] = i`). Entries out of range are ignored.
pub(crate) fn inverse(perm: &[usize]) -> Vec<usize> {
    let mut inv = vec![0; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        if let Some(slot) = inv.get_mut(p) {
            *slot = i;
        }
    }
    inv
}

/// True if `perm` is a permutation of `0..perm.len()`.
pub(crate) fn is_permutation(perm: &[usize]) -> bool {
    let mut seen = vec![false; perm.len()];
    perm.iter().all(|&p| match seen.get_mut(p) {
        Some(s) if !*s => {
            *s = true;
            true
        }
        _ => false,
    })
}

/// `shape` permuted: `out[i] = shape[perm[i]]`.
pub(crate) fn permute_shape(shape: &[usize], perm: &[usize]) -> Vec<usize> {
    perm.iter().map(|&p| shape.get(p).copied().unwrap_or(1)).collect()
}

/// Row-major strides of `shape`.
pub(crate) fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1].saturating_mul(shape[i + 1]);
    }
    s
}

/// Transposes row-major `data` of `shape`: output axis `i` is input axis `perm[i]` (numpy
/// `transpose(data, perm)`). `perm` must be a permutation of `0..shape.len()` and `data` must
/// have the shape's element count (the callers check both).
pub(crate) fn transpose_data<T: Copy>(data: &[T], shape: &[usize], perm: &[usize]) -> Vec<T> {
    if is_identity(perm) {
        return data.to_vec();
    }
    let mut walk = Walk::new(shape, perm);
    let n = data.len();
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        if let Some(&v) = data.get(walk.src) {
            out.push(v);
        }
        walk.step();
    }
    out
}

/// The input index of each output element of [`transpose_data`], in output order. Not generic
/// (the element types share it).
struct Walk {
    /// Stride in the input of each output axis.
    step: Vec<usize>,
    out_shape: Vec<usize>,
    idx: Vec<usize>,
    /// The input index of the output element at `idx`.
    src: usize,
}

impl Walk {
    fn new(shape: &[usize], perm: &[usize]) -> Self {
        let in_strides = strides(shape);
        let out_shape = permute_shape(shape, perm);
        let step: Vec<usize> = perm.iter().map(|&p| in_strides.get(p).copied().unwrap_or(0)).collect();
        let idx = vec![0usize; out_shape.len()];
        Self { step, out_shape, idx, src: 0 }
    }

    /// Moves to the next output element (last axis fastest), keeping `src` in step.
    #[inline(never)]
    fn step(&mut self) {
        for a in (0..self.out_shape.len()).rev() {
            self.idx[a] += 1;
            self.src += self.step[a];
            if self.idx[a] < self.out_shape[a] {
                break;
            }
            self.src -= self.step[a] * self.idx[a];
            self.idx[a] = 0;
        }
    }
}

/// True if transposing a tensor of `shape` by `perm` leaves its row-major data unchanged (only
/// extent-1 axes move), so a reshape does the job.
pub(crate) fn is_data_preserving(shape: &[usize], perm: &[usize]) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    #[test]
    fn transpose_matches_numpy() {
        // numpy: np.arange(24).reshape(2,3,4).transpose(1,2,0).ravel()
        let data: Vec<u32> = (0..24).collect();
        let t = transpose_data(&data, &[2, 3, 4], &[1, 2, 0]);
        assert_eq!(t, [0, 12, 1, 13, 2, 14, 3, 15, 4, 16, 5, 17, 6, 18, 7, 19, 8, 20, 9, 21, 10, 22, 11, 23]);
        let back = transpose_data(&t, &[3, 4, 2], &inverse(&[1, 2, 0]));
        assert_eq!(back, data);
    }

    #[test]
    fn layouts() {
        assert_eq!(channels_last(4), [0, 2, 3, 1]);
        assert_eq!(inverse(&[0, 2, 3, 1]), [0, 3, 1, 2]);
        assert!(is_permutation(&[2, 0, 1]) && !is_permutation(&[0, 0]) && !is_permutation(&[3]));
        assert!(is_data_preserving(&[1, 8, 1, 1], &[0, 2, 3, 1]));
        assert!(!is_data_preserving(&[1, 8, 2, 1], &[0, 2, 3, 1]));
    }
}
