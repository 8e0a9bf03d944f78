//! The float converter's matrix product (`C = A·B [+ C]`, f32): a safe, bounds-checked wrapper
//! around [`matrixmultiply::sgemm`], a cache-blocked GEMM with packed panels and SIMD micro-kernels
//! (AVX/FMA and SSE2 chosen at run time on x86-64 with `std`, NEON on AArch64, an autovectorized
//! kernel elsewhere, `simd128` in wasm). The float executor's convolutions, fully connected layers
//! and batch matmuls run through it ([`crate::float`]); its reference loops stay beside it and the
//! tests compare the two.

#![allow(unsafe_code)]

/// A row-major or strided `rows × cols` matrix view: element `(i, j)` is
/// `data[offset + i·row_stride + j·col_stride]`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MatRef<'a> {
    pub data: &'a [f32],
    pub offset: usize,
    pub row_stride: usize,
    pub col_stride: usize,
}

impl<'a> MatRef<'a> {
    /// Row-major `[rows, cols]` from the start of `data`.
    pub(crate) fn row_major(data: &'a [f32], cols: usize) -> Self {
        Self { data, offset: 0, row_stride: cols, col_stride: 1 }
    }

    /// Whether every element of a `rows × cols` view lies in `data`.
    fn fits(&self, rows: usize, cols: usize) -> bool {
        if rows == 0 || cols == 0 {
            return true;
        }
        let last = (rows - 1)
            .checked_mul(self.row_stride)
            .zip((cols - 1).checked_mul(self.col_stride))
            .and_then(|(a, b)| a.checked_add(b))
            .and_then(|v| v.checked_add(self.offset));
        last.is_some_and(|l| l < self.data.len()) && isize::try_from(self.row_stride.max(self.col_stride)).is_ok()
    }
}

/// A matrix product that does not fit its operands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GemmShapeError;

/// `c[i, j] (+)= Σ_k a[i, k] · b[k, j]` (`[m, k, n]`) for an `m × k` `a`, a `k × n` `b` and a row-major `m × n`
/// `c` (row stride `ldc ≥ n`, from `c[0]`); with `accumulate`, the products are added to what `c`
/// holds (e.g. the bias), otherwise they replace it. Sums are f32, in the blocked order of the
/// GEMM (not the plain left-to-right order of the reference loops).
///
/// # Errors
/// [`GemmShapeError`] if a view reaches outside its slice (nothing is written then).
pub(crate) fn sgemm(
    [m, k, n]: [usize; 3],
    a: MatRef<'_>,
    b: MatRef<'_>,
    c: &mut [f32],
    ldc: usize,
    accumulate: bool,
) -> Result<(), GemmShapeError> {
    let c_fits = m == 0
        || n == 0
        || (ldc >= n && (m - 1).checked_mul(ldc).and_then(|v| v.checked_add(n)).is_some_and(|e| e <= c.len()));
    if !a.fits(m, k) || !b.fits(k, n) || !c_fits || isize::try_from(ldc).is_err() {
        return Err(GemmShapeError);
    }
    if m == 0 || n == 0 {
        return Ok(());
    }
    if k == 0 {
        if !accumulate {
            c.chunks_mut(ldc).take(m).for_each(|row| row[..n].fill(0.0));
        }
        return Ok(());
    }
    // The strides fit in isize (checked above).
    let s = |v: usize| v as isize;
    // SAFETY: every element `matrixmultiply` reads is `a.data[a.offset + i·rsa + p·csa]` for
    // i < m, p < k (and likewise for `b`, p < k, j < n), and every element it writes is
    // `c[i·ldc + j]` for i < m, j < n: `fits` and `c_fits` checked that the largest of these
    // indices is inside each slice, the strides are non-negative and fit in isize, and `c` is
    // borrowed mutably here, so it aliases neither `a` nor `b`. With `beta = 0`, `c` is only
    // written (its old values, even NaN, are not read).
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            a.data.as_ptr().add(a.offset),
            s(a.row_stride),
            s(a.col_stride),
            b.data.as_ptr().add(b.offset),
            s(b.row_stride),
            s(b.col_stride),
            if accumulate { 1.0 } else { 0.0 },
            c.as_mut_ptr(),
            s(ldc),
            1,
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(m: usize, k: usize, n: usize, a: &MatRef<'_>, b: &MatRef<'_>) -> alloc::vec::Vec<f64> {
        let mut out = alloc::vec![0f64; m * n];
        for i in 0..m {
            for j in 0..n {
                out[i * n + j] = (0..k)
                    .map(|p| {
                        f64::from(a.data[a.offset + i * a.row_stride + p * a.col_stride])
                            * f64::from(b.data[b.offset + p * b.row_stride + j * b.col_stride])
                    })
                    .sum();
            }
        }
        out
    }

    #[test]
    fn strided_products_match_the_plain_sums() {
        let mut state = 7u64;
        let mut next = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        for &(m, k, n) in &[(1, 1, 1), (5, 3, 7), (33, 70, 17), (64, 9, 130), (3, 300, 2)] {
            let a: alloc::vec::Vec<f32> = (0..m * k + 5).map(|_| next()).collect();
            let b: alloc::vec::Vec<f32> = (0..k * n + 3).map(|_| next()).collect();
            // a row-major with an offset; b transposed (column-major).
            let av = MatRef { data: &a, offset: 5, row_stride: k, col_stride: 1 };
            let bv = MatRef { data: &b, offset: 3, row_stride: 1, col_stride: k };
            let mut c = alloc::vec![f32::NAN; m * n];
            sgemm([m, k, n], av, bv, &mut c, n, false).unwrap();
            let want = naive(m, k, n, &av, &bv);
            for (x, w) in c.iter().zip(&want) {
                assert!((f64::from(*x) - w).abs() <= 1e-5 * (1.0 + w.abs()), "{m}x{k}x{n}: {x} vs {w}");
            }
            // Accumulating onto c adds the product again.
            sgemm([m, k, n], av, bv, &mut c, n, true).unwrap();
            for (x, w) in c.iter().zip(&want) {
                assert!((f64::from(*x) - 2.0 * w).abs() <= 2e-5 * (1.0 + w.abs()));
            }
        }
    }

    #[test]
    fn views_outside_their_slices_are_refused() {
        let a = [1.0f32; 6];
        let mut c = [0f32; 4];
        let ok = MatRef::row_major(&a, 3);
        assert!(sgemm([2, 3, 2], ok, MatRef::row_major(&a, 2), &mut c, 2, false).is_ok());
        assert_eq!(sgemm([3, 3, 2], ok, MatRef::row_major(&a, 2), &mut c, 2, false), Err(GemmShapeError));
        assert_eq!(sgemm([2, 3, 2], ok, MatRef::row_major(&a, 2), &mut c[..3], 2, false), Err(GemmShapeError));
        let shifted = MatRef { offset: 1, ..ok };
        assert_eq!(sgemm([2, 3, 2], shifted, MatRef::row_major(&a, 2), &mut c, 2, false), Err(GemmShapeError));
    }
}
