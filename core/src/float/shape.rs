//! Float data movement and reduction: transpose (through [`crate::layout`]), concatenation, pad,
//! mean.

use alloc::vec;
use alloc::vec::Vec;

use super::KernelError;

use crate::layout::{self, LayoutError, strides};

/// numpy `transpose(data, perm)`: output axis `i` is input axis `perm[i]` ([`crate::layout`]).
pub(crate) fn transpose<T: Copy>(data: &[T], shape: &[usize], perm: &[usize]) -> Result<Vec<T>, KernelError> {
    layout::transpose(data, shape, perm).map_err(|e| {
        KernelError(match e {
            LayoutError::RankMismatch { .. } | LayoutError::LengthMismatch { .. } => {
                "transpose permutation or data does not match the shape"
            }
            LayoutError::RepeatedAxis { .. } => "transpose permutation repeats an axis",
            LayoutError::TooManyAxes { .. } => "transpose of too many axes",
            _ => "transpose permutation out of range",
        })
    })
}

/// Concatenation of `parts` (data and shape) along `axis`.
pub(crate) fn concat(parts: &[(&[f32], &[usize])], axis: usize) -> Result<Vec<f32>, KernelError> {
    let Some(&(_, first)) = parts.first() else { return Err(KernelError("concatenation of nothing")) };
    if axis >= first.len() {
        return Err(KernelError("concatenation axis out of range"));
    }
    let outer: usize = first[..axis].iter().product();
    let total: usize = parts.iter().map(|(d, _)| d.len()).sum();
    let mut out = Vec::with_capacity(total);
    for o in 0..outer {
        for &(data, shape) in parts {
            let chunk: usize = shape.get(axis..).map_or(0, |s| s.iter().product());
            out.extend_from_slice(
                data.get(o * chunk..(o + 1) * chunk).ok_or(KernelError("concatenation input too short"))?,
            );
        }
    }
    Ok(out)
}

/// Constant padding: `paddings[i] = [before, after]` for axis `i`.
pub(crate) fn pad(x: &[f32], shape: &[usize], paddings: &[[usize; 2]], value: f32) -> Result<Vec<f32>, KernelError> {
    if paddings.len() != shape.len() || x.len() != shape.iter().product::<usize>() {
        return Err(KernelError("pad paddings or data do not match the shape"));
    }
    let out_shape: Vec<usize> = shape.iter().zip(paddings).map(|(&d, [b, a])| d + b + a).collect();
    let out_st = strides(&out_shape);
    let mut out = vec![value; out_shape.iter().product()];
    let r = shape.len();
    let inner = shape.last().copied().unwrap_or(1);
    if inner == 0 || r == 0 {
        return Ok(out);
    }
    // Copy each innermost row.
    let rows = x.len() / inner;
    let mut idx = vec![0usize; r.saturating_sub(1)];
    for row in 0..rows {
        let mut off = paddings[r - 1][0];
        for (a, &i) in idx.iter().enumerate() {
            off += (i + paddings[a][0]) * out_st[a];
        }
        out[off..off + inner].copy_from_slice(&x[row * inner..(row + 1) * inner]);
        for a in (0..idx.len()).rev() {
            idx[a] += 1;
            if idx[a] < shape[a] {
                break;
            }
            idx[a] = 0;
        }
    }
    Ok(out)
}

/// Mean over `axes` (sorted, unique); the output keeps the other axes in order.
pub(crate) fn mean(x: &[f32], shape: &[usize], axes: &[usize]) -> Result<Vec<f32>, KernelError> {
    if x.len() != shape.iter().product::<usize>() || axes.iter().any(|&a| a >= shape.len()) {
        return Err(KernelError("mean axes or data do not match the shape"));
    }
    let kept: Vec<usize> = (0..shape.len()).filter(|a| !axes.contains(a)).collect();
    let out_shape: Vec<usize> = kept.iter().map(|&a| shape[a]).collect();
    let n_out: usize = out_shape.iter().product();
    let count: usize = axes.iter().map(|&a| shape[a]).product();
    let out_st = strides(&out_shape);
    // Output offset step per input axis (0 for reduced axes).
    let mut step = vec![0usize; shape.len()];
    for (k, &a) in kept.iter().enumerate() {
        step[a] = out_st[k];
    }
    let mut acc = vec![0f64; n_out];
    let mut idx = vec![0usize; shape.len()];
    let mut dst = 0usize;
    for &v in x {
        acc[dst] += f64::from(v);
        for a in (0..shape.len()).rev() {
            idx[a] += 1;
            dst += step[a];
            if idx[a] < shape[a] {
                break;
            }
            dst -= step[a] * idx[a];
            idx[a] = 0;
        }
    }
    let c = count.max(1) as f64;
    Ok(acc.into_iter().map(|s| (s / c) as f32).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    #[test]
    fn data_movement() {
        let x: Vec<f32> = (0..6).map(|v| v as f32).collect();
        assert_eq!(transpose(&x, &[2, 3], &[1, 0]).unwrap(), [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
        assert_eq!(concat(&[(&x[..2], &[1, 2]), (&x[2..], &[1, 4])], 1).unwrap(), x);
        assert_eq!(pad(&[1.0, 2.0], &[1, 2], &[[0, 1], [1, 0]], 9.0).unwrap(), [9.0, 1.0, 2.0, 9.0, 9.0, 9.0]);
        assert_eq!(mean(&x, &[2, 3], &[1]).unwrap(), [1.0, 4.0]);
        assert_eq!(mean(&x, &[2, 3], &[0]).unwrap(), [1.5, 2.5, 3.5]);
    }
}
