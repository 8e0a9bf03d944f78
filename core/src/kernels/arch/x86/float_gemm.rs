//! The float converter's convolutions as a matrix product whose left operand is read where it
//! lies ([`IndirectA`]: each patch row a list of pointers to its taps' input pixels), with AVX
//! and `6 × 16` register tiles: no im2col copy and no packing of the patches, which cost as much
//! as the products themselves on layers with few output channels. Each output element starts
//! from `c` and adds its products in depth order, each product and sum rounded to `f32` (no
//! FMA): the same results bit for bit as the packed GEMM ([`crate::kernels::arch::gemm`]), which
//! its tests check.

use core::arch::x86_64::{
    __m256, _mm256_add_ps, _mm256_broadcast_ss, _mm256_loadu_ps, _mm256_mul_ps, _mm256_setzero_ps, _mm256_storeu_ps,
};

use crate::kernels::arch::gemm::{DepthRun, Epilogue, IndirectA};

/// Rows of the register tile.
const MR: usize = 6;
/// Columns of the register tile: the packed panels' width (two 8-lane registers).
pub(crate) const NR: usize = 16;

/// `c[i, j] = clamp(start + Σ_p a[i, p] · b[p, j])` for the rows of `a` ([`Epilogue`]; the
/// caller checked that every segment of `a` lies in its data, that `c` holds `rows` rows of
/// `ldc ≥ n` and the start row `n` values); `b` the packed panels of
/// [`crate::kernels::arch::gemm::PackedRhs`], `runs` its depth cut at segment and block ends.
/// Returns without writing if a run reaches outside `b`. Call only when the CPU has AVX.
pub(crate) fn sgemm_indirect(
    a: &IndirectA<'_>,
    runs: &[DepthRun],
    b: &[f32],
    n: usize,
    c: &mut [f32],
    ldc: usize,
    epilogue: Epilogue<'_>,
) {
    let m = a.offsets.len() / a.taps.max(1);
    let panels = n.div_ceil(NR);
    let fits_b = |r: &DepthRun| {
        (panels.saturating_sub(1))
            .checked_mul(r.panel_stride)
            .and_then(|v| v.checked_add(r.b_start))
            .and_then(|v| v.checked_add(r.len.checked_mul(NR)?))
            .is_some_and(|end| end <= b.len())
    };
    let fits_a = |r: &DepthRun| r.tap < a.taps && r.a_start.checked_add(r.len).is_some_and(|e| e <= a.seg);
    if m == 0 || epilogue.start.is_some_and(|s| s.len() < n) || !runs.iter().all(|r| fits_b(r) && fits_a(r)) {
        return;
    }
    let zeros = std::vec![0f32; a.seg];
    let mut rows = std::vec![[core::ptr::null::<f32>(); MR]; a.taps];
    let mut acc = [[0f32; NR]; MR];
    for r0 in (0..m).step_by(MR) {
        let height = MR.min(m - r0);
        for (t, ptrs) in rows.iter_mut().enumerate() {
            for (r, p) in ptrs.iter_mut().enumerate() {
                // Rows past the last compute on the first row's data; they are not stored.
                let o = a.offsets[(r0 + if r < height { r } else { 0 }) * a.taps + t];
                *p = if o == IndirectA::ZEROS { zeros.as_ptr() } else { a.data[o..].as_ptr() };
            }
        }
        for panel in 0..panels {
            let j0 = panel * NR;
            let width = NR.min(n - j0);
            for (r, row) in acc.iter_mut().enumerate().take(height) {
                match epilogue.start {
                    Some(start) => row[..width].copy_from_slice(&start[j0..j0 + width]),
                    None => row[..width].copy_from_slice(&c[(r0 + r) * ldc + j0..][..width]),
                }
            }
            // SAFETY: AVX is present (the caller's contract: `sgemm_indirect` in `gemm.rs` checks
            // `has_avx`). Every pointer of `rows` starts a segment of `a.seg` values (an offset
            // checked by `IndirectA::fits` against `a.data`, or `zeros`), and each run reads
            // `a_start .. a_start + len ≤ a.seg` of them (`fits_a`); each run's packed rows of
            // this panel end inside `b` (`fits_b`, for the last panel).
            unsafe { tile_panel(&rows, runs, b.as_ptr(), panel, &mut acc) };
            for (r, row) in acc.iter().enumerate().take(height) {
                let dst = &mut c[(r0 + r) * ldc + j0..][..width];
                match epilogue.clamp {
                    None => dst.copy_from_slice(&row[..width]),
                    Some((lo, hi)) => dst.iter_mut().zip(&row[..width]).for_each(|(d, &v)| *d = v.max(lo).min(hi)),
                }
            }
        }
    }
}

/// `acc[r][j] += Σ a[r, p] · b[p, j]` over the depth runs, in order, for one row tile and one
/// panel of `b`.
///
/// # Safety
/// The CPU has AVX; for every run, `rows[run.tap][r] + run.a_start + run.len` stays inside one
/// allocation for each `r`, and `b + run.b_start + panel·run.panel_stride + run.len·NR` too.
#[target_feature(enable = "avx")]
unsafe fn tile_panel(
    rows: &[[*const f32; MR]],
    runs: &[DepthRun],
    b: *const f32,
    panel: usize,
    acc: &mut [[f32; NR]; MR],
) {
    let mut v: [[__m256; 2]; MR] = [[_mm256_setzero_ps(); 2]; MR];
    for (r, lanes) in v.iter_mut().enumerate() {
        // SAFETY: `acc[r]` holds NR = 16 values: two loads of 8.
        *lanes = unsafe { [_mm256_loadu_ps(acc[r].as_ptr()), _mm256_loadu_ps(acc[r].as_ptr().add(8))] };
    }
    for run in runs {
        let ptrs = &rows[run.tap];
        // SAFETY: within the segments and the panel (the function's contract).
        let a: [*const f32; MR] = core::array::from_fn(|r| unsafe { ptrs[r].add(run.a_start) });
        let mut bp = unsafe { b.add(run.b_start + panel * run.panel_stride) };
        for p in 0..run.len {
            // SAFETY: `p < run.len`: inside the segments and the panel's rows (the contract).
            let (b0, b1) = unsafe { (_mm256_loadu_ps(bp), _mm256_loadu_ps(bp.add(8))) };
            for r in 0..MR {
                let x = unsafe { _mm256_broadcast_ss(&*a[r].add(p)) };
                v[r][0] = _mm256_add_ps(v[r][0], _mm256_mul_ps(x, b0));
                v[r][1] = _mm256_add_ps(v[r][1], _mm256_mul_ps(x, b1));
            }
            bp = unsafe { bp.add(NR) };
        }
    }
    for (r, lanes) in v.iter().enumerate() {
        // SAFETY: `acc[r]` holds 16 values.
        unsafe {
            _mm256_storeu_ps(acc[r].as_mut_ptr(), lanes[0]);
            _mm256_storeu_ps(acc[r].as_mut_ptr().add(8), lanes[1]);
        }
    }
}
