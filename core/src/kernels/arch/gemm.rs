//! The float converter's matrix product (`C = A·B [+ C]`, f32): a cache-blocked GEMM (packed
//! `KC`-deep panels, an `MR × NR` register tile) in safe Rust that the compiler vectorizes across
//! the output columns (SSE2 on x86-64, AVX when the CPU has it, `simd128` in wasm, NEON on AArch64).
//! The float executor's convolutions, fully connected layers and batch matmuls run through it
//! ([`crate::float`]); its reference loops stay beside it and the tests compare the two.
//!
//! # The same sums everywhere
//! Calibration ranges come from these products, and the promise is the same `.mq` from the CLI,
//! the npm package and the web demo. So every output element is computed in one fixed order,
//! whatever the target, the tile size or the vector width: it starts from `c` (with `accumulate`)
//! or `0.0`, and adds `a[i, p] · b[p, j]` for `p = 0, 1, …, k − 1`, each product and each sum
//! rounded to f32 (Rust never fuses them into an FMA, and vector lanes hold different output
//! elements, never parts of one sum). The tiles and the blocking over `k` only change which
//! elements are computed together and where the partial sums wait (in registers or in `c`).

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
        last.is_some_and(|l| l < self.data.len())
    }

    /// Element `(i, j)` (inside the view: checked by `fits` before any call).
    #[inline(always)]
    fn at(&self, i: usize, j: usize) -> f32 {
        self.data[self.offset + i * self.row_stride + j * self.col_stride]
    }
}

/// A matrix product that does not fit its operands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GemmShapeError;

/// Depth of a packed block: a `KC × NR` panel of `b` stays in L1 while the row tiles pass over it.
const KC: usize = 256;
/// Rows of `a` packed together: an `MC × KC` block stays in L2.
const MC: usize = 72;

/// `c[i, j] (+)= Σ_k a[i, k] · b[k, j]` (`[m, k, n]`) for an `m × k` `a`, a `k × n` `b` and a row-major `m × n`
/// `c` (row stride `ldc ≥ n`, from `c[0]`); with `accumulate`, the products are added to what `c`
/// holds (e.g. the bias), otherwise they replace it. Each element is summed in the fixed order of
/// the module docs, so the results are the same bit for bit on every target.
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
    if m == 0 || n == 0 {
        return if a.fits(m, k) && b.fits(k, n) { Ok(()) } else { Err(GemmShapeError) };
    }
    let packed = PackedRhs::new(k, n, b)?;
    sgemm_packed(m, a, &packed, c, ldc, accumulate)
}

/// [`sgemm`] with the right-hand side packed beforehand ([`PackedRhs`]): a convolution packs its
/// filter once for all its blocks of patches.
///
/// # Errors
/// [`GemmShapeError`] if `a` or `c` reaches outside its slice (nothing is written then).
pub(crate) fn sgemm_packed(
    m: usize,
    a: MatRef<'_>,
    b: &PackedRhs,
    c: &mut [f32],
    ldc: usize,
    accumulate: bool,
) -> Result<(), GemmShapeError> {
    let (k, n) = (b.k, b.n);
    let c_fits = m == 0
        || n == 0
        || (ldc >= n && (m - 1).checked_mul(ldc).and_then(|v| v.checked_add(n)).is_some_and(|e| e <= c.len()));
    if !a.fits(m, k) || !c_fits {
        return Err(GemmShapeError);
    }
    if m == 0 || n == 0 {
        return Ok(());
    }
    let problem = Gemm { m, k, n, a, b, ldc, accumulate };
    #[cfg(feature = "std")]
    {
        // Row bands of at least 16 rows side by side (each element is summed by one thread, in
        // the same order: the same results with any number of threads), sharing the packed `b`.
        let threads = crate::parallel::threads_for(m.saturating_mul(k).saturating_mul(n), m / 16);
        if threads > 1 {
            let parts = row_bands(m, threads, ldc, c, |r0, rows| Gemm {
                m: rows,
                a: MatRef { offset: a.offset + r0 * a.row_stride, ..a },
                ..problem
            });
            crate::parallel::run_parts(parts, |(part, c)| part.run_best(c));
            return Ok(());
        }
    }
    problem.run_best(c);
    Ok(())
}

/// The left operand of a convolution's product read where it lies, without copying patches
/// (im2col) or packing them: row `i` of `a` is `taps` segments of `seg` values, segment `t` of
/// it `data[offsets[i·taps + t]..][..seg]`, or `seg` zeros where the offset is
/// [`IndirectA::ZEROS`] (a tap in the padding).
#[derive(Debug, Clone, Copy)]
pub(crate) struct IndirectA<'a> {
    pub data: &'a [f32],
    pub seg: usize,
    pub taps: usize,
    pub offsets: &'a [usize],
}

impl IndirectA<'_> {
    /// The offset of a segment of zeros.
    pub(crate) const ZEROS: usize = usize::MAX;

    /// Whether every segment lies in `data`.
    fn fits(&self) -> bool {
        self.taps > 0
            && self.offsets.len() % self.taps == 0
            && self
                .offsets
                .iter()
                .all(|&o| o == Self::ZEROS || o.checked_add(self.seg).is_some_and(|e| e <= self.data.len()))
    }
}

/// A stretch of the depth that lies in one tap's segment and in one packed depth block of `b`:
/// depths `tap·seg + a_start ..` (`len` of them), whose packed rows of panel `j` start at
/// `b_start + j·panel_stride` (one row of `width` values per depth).
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(all(mq_portable, target_arch = "x86_64", feature = "std")), allow(dead_code))] // read by the x86 kernel
pub(crate) struct DepthRun {
    pub tap: usize,
    pub a_start: usize,
    pub len: usize,
    pub b_start: usize,
    pub panel_stride: usize,
}

/// The depth `0..taps·seg` cut at segment ends and at `b`'s depth blocks, in order.
#[cfg_attr(not(all(mq_portable, target_arch = "x86_64", feature = "std")), allow(dead_code))] // read by the x86 kernel
fn depth_runs(seg: usize, taps: usize, b: &PackedRhs) -> alloc::vec::Vec<DepthRun> {
    let panels = b.n.div_ceil(b.width);
    let mut runs = alloc::vec::Vec::new();
    for tap in 0..taps {
        let mut s = 0;
        while s < seg {
            let q = tap * seg + s;
            let (block, within) = (q / KC, q % KC);
            let kcb = KC.min(b.k - block * KC);
            let len = (seg - s).min(KC - within);
            let b_start = block * KC * panels * b.width + within * b.width;
            runs.push(DepthRun { tap, a_start: s, len, b_start, panel_stride: kcb * b.width });
            s += len;
        }
    }
    runs
}

/// What a product's outputs start from and what is done to them at the end.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Epilogue<'a> {
    /// Each row starts from these `n` values (a layer's bias); `None`: from what `c` holds.
    pub start: Option<&'a [f32]>,
    /// Each result clamped to `[lo, hi]` (`v.max(lo).min(hi)`: a fused activation) as it is stored.
    #[cfg_attr(not(all(mq_portable, target_arch = "x86_64", feature = "std")), allow(dead_code))]
    // read by the x86 kernel
    pub clamp: Option<(f32, f32)>,
}

/// `c[i, j] = clamp(start[j] + Σ_p a[i, p] · b[p, j])` with `a` read in place ([`IndirectA`],
/// its rows the patches), each sum in the fixed order of the module docs: the same results bit
/// for bit as [`sgemm_packed`] of the patches accumulating onto `c` filled with `start`, then the
/// clamp. `Ok(false)` (nothing written) where the target has no such kernel: the caller copies
/// and packs the patches then.
///
/// # Errors
/// [`GemmShapeError`] if a segment, `b`, `c` or the start row does not fit (nothing is written
/// then).
pub(crate) fn sgemm_indirect(
    a: &IndirectA<'_>,
    b: &PackedRhs,
    c: &mut [f32],
    ldc: usize,
    epilogue: Epilogue<'_>,
) -> Result<bool, GemmShapeError> {
    let (k, n) = (b.k, b.n);
    if !a.fits() || a.seg.checked_mul(a.taps) != Some(k) || epilogue.start.is_some_and(|s| s.len() != n) {
        return Err(GemmShapeError);
    }
    let m = a.offsets.len() / a.taps;
    let c_fits = m == 0
        || n == 0
        || (ldc >= n && (m - 1).checked_mul(ldc).and_then(|v| v.checked_add(n)).is_some_and(|e| e <= c.len()));
    if !c_fits {
        return Err(GemmShapeError);
    }
    #[cfg(all(mq_portable, target_arch = "x86_64", feature = "std"))]
    if b.reads_in_place() {
        if m == 0 || n == 0 {
            return Ok(true);
        }
        let runs = depth_runs(a.seg, a.taps, b);
        // Rows in bands side by side as `sgemm_packed` (each element summed by one thread).
        let threads = crate::parallel::threads_for(m.saturating_mul(k).saturating_mul(n), m / 16);
        let parts = row_bands(m, threads, ldc, c, |r0, rows| IndirectA {
            offsets: &a.offsets[r0 * a.taps..(r0 + rows) * a.taps],
            ..*a
        });
        crate::parallel::run_parts(parts, |(part, c)| {
            super::x86::float_gemm::sgemm_indirect(&part, &runs, &b.data, n, c, ldc, epilogue);
        });
        return Ok(true);
    }
    Ok(false)
}

/// `m` rows of `c` (row stride `ldc`) cut into at most `threads` bands of consecutive rows,
/// each with the problem `part(first row, rows)` makes for it: the parts of a product that
/// threads compute side by side (each element by one thread, in the same order: the same results
/// with any number of threads).
#[cfg(feature = "std")]
fn row_bands<P>(
    m: usize,
    threads: usize,
    ldc: usize,
    c: &mut [f32],
    part: impl Fn(usize, usize) -> P,
) -> alloc::vec::Vec<(P, &mut [f32])> {
    let band = m.div_ceil(threads.max(1)).max(1);
    let mut parts = alloc::vec::Vec::with_capacity(threads);
    let mut rest = c;
    for r0 in (0..m).step_by(band) {
        let rows = band.min(m - r0);
        let (mine, others) = if r0 + rows < m { rest.split_at_mut(rows * ldc) } else { (rest, &mut [][..]) };
        rest = others;
        parts.push((part(r0, rows), mine));
    }
    parts
}

/// The columns of the register tile the target's best kernel uses (16 with AVX on x86-64, else 8):
/// the width [`PackedRhs::new`] packs for.
fn best_width() -> usize {
    #[cfg(all(mq_portable, target_arch = "x86_64", feature = "std"))]
    if super::x86::has_avx() {
        return 16;
    }
    8
}

/// The right-hand side `b` (`k × n`) of a matrix product, packed for the register tiles: for each
/// depth block of [`KC`] rows, `ceil(n / width)` column panels of `kc × width` values (zeros past
/// `n`), one after the other.
#[derive(Clone)]
pub(crate) struct PackedRhs {
    data: alloc::vec::Vec<f32>,
    k: usize,
    n: usize,
    width: usize,
}

impl PackedRhs {
    /// `b` packed for the target's best kernel.
    ///
    /// # Errors
    /// [`GemmShapeError`] if `b` reaches outside its slice.
    pub(crate) fn new(k: usize, n: usize, b: MatRef<'_>) -> Result<Self, GemmShapeError> {
        Self::with_width(k, n, b, best_width())
    }

    /// `b` packed for the target's best kernel, for a layer's weights `[n, k]` (row-major: each
    /// output's `k` weights contiguous, read as the `k × n` right-hand side).
    ///
    /// # Errors
    /// [`GemmShapeError`] if `weights` is not `k · n` long.
    pub(crate) fn weights(weights: &[f32], k: usize, n: usize) -> Result<Self, GemmShapeError> {
        if k.checked_mul(n) != Some(weights.len()) {
            return Err(GemmShapeError);
        }
        Self::new(k, n, MatRef { data: weights, offset: 0, row_stride: 1, col_stride: k })
    }

    /// Whether [`sgemm_indirect`] runs with this right-hand side on this CPU (else it returns
    /// `Ok(false)` and the caller had better not build the offsets).
    pub(crate) fn reads_in_place(&self) -> bool {
        #[cfg(all(mq_portable, target_arch = "x86_64", feature = "std"))]
        if self.width == super::x86::float_gemm::NR && super::x86::has_avx() {
            return true;
        }
        false
    }

    /// The columns (`n` of `k × n`).
    pub(crate) fn n(&self) -> usize {
        self.n
    }

    /// Whether this is a `k × n` right-hand side.
    pub(crate) fn is(&self, k: usize, n: usize) -> bool {
        (self.k, self.n) == (k, n)
    }

    /// `b` packed in panels `width` columns wide.
    fn with_width(k: usize, n: usize, b: MatRef<'_>, width: usize) -> Result<Self, GemmShapeError> {
        if !b.fits(k, n) || width == 0 {
            return Err(GemmShapeError);
        }
        let panels = n.div_ceil(width);
        let mut data = alloc::vec![0f32; panels * width * k];
        let mut blocks = data.chunks_mut((KC * panels * width).max(1));
        for p0 in (0..k).step_by(KC) {
            let kc = KC.min(k - p0);
            let Some(block) = blocks.next() else { break };
            for (panel, j0) in block.chunks_exact_mut(kc * width).zip((0..n).step_by(width)) {
                let cols = width.min(n - j0);
                if b.row_stride == 1 {
                    // Each column's `kc` values are contiguous (a filter read as `k × oc`).
                    for jj in 0..cols {
                        let start = b.offset + (j0 + jj) * b.col_stride + p0;
                        let Some(col) = b.data.get(start..start + kc) else { continue };
                        for (dst, &v) in panel.iter_mut().skip(jj).step_by(width).zip(col) {
                            *dst = v;
                        }
                    }
                } else if b.col_stride == 1 {
                    for (p, row) in panel.chunks_exact_mut(width).enumerate() {
                        let start = b.offset + (p0 + p) * b.row_stride + j0;
                        if let (Some(dst), Some(src)) = (row.get_mut(..cols), b.data.get(start..start + cols)) {
                            dst.copy_from_slice(src);
                        }
                    }
                } else {
                    for (p, row) in panel.chunks_exact_mut(width).enumerate() {
                        for (jj, v) in row.iter_mut().enumerate().take(cols) {
                            *v = b.at(p0 + p, j0 + jj);
                        }
                    }
                }
            }
        }
        Ok(Self { data, k, n, width })
    }
}

impl core::fmt::Debug for PackedRhs {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "PackedRhs({} x {}, panels {} wide)", self.k, self.n, self.width)
    }
}

/// A checked matrix product (the operands fit their slices).
#[derive(Clone, Copy)]
pub(crate) struct Gemm<'a> {
    m: usize,
    k: usize,
    n: usize,
    a: MatRef<'a>,
    b: &'a PackedRhs,
    ldc: usize,
    accumulate: bool,
}

impl Gemm<'_> {
    /// [`Self::run`] with the tiles `b` was packed for (AVX's on x86-64 when the CPU has it).
    fn run_best(&self, c: &mut [f32]) {
        #[cfg(all(mq_portable, target_arch = "x86_64", feature = "std"))]
        if self.b.width == 16 && super::x86::sgemm(self, c) {
            return;
        }
        self.run::<4, 8>(c);
    }

    /// The blocked product with `MR × NR` register tiles (`NR` the packed width; nothing is
    /// written otherwise). Inlined into each caller so that the tile loops are compiled with
    /// the caller's target features (see `arch::x86`).
    #[inline(always)]
    pub(crate) fn run<const MR: usize, const NR: usize>(&self, c: &mut [f32]) {
        let Self { m, k, n, a, b, ldc, accumulate } = *self;
        if b.width != NR {
            return;
        }
        if k == 0 {
            if !accumulate {
                c.chunks_mut(ldc).take(m).for_each(|row| row[..n].fill(0.0));
            }
            return;
        }
        let panels = n.div_ceil(NR);
        let mut packed_a = alloc::vec![0f32; MC.min(m).next_multiple_of(MR) * KC.min(k)];
        for (p0, packed_b) in (0..k).step_by(KC).zip(b.data.chunks(KC * panels * NR)) {
            let kc = KC.min(k - p0);
            // Start from c when summing on (an earlier depth block, or `accumulate`), else from 0.
            let from_c = p0 > 0 || accumulate;
            for i0 in (0..m).step_by(MC) {
                let mc = MC.min(m - i0);
                let tiles = mc.div_ceil(MR);
                // Pack a[i0.., p0..] as `tiles` row tiles of `kc × MR`, interleaved by depth.
                for (tile, t) in packed_a.chunks_exact_mut(kc * MR).zip(0..tiles) {
                    let r0 = i0 + t * MR;
                    let height = MR.min(m - r0);
                    if a.col_stride == 1 {
                        for r in 0..MR {
                            let start = a.offset + (r0 + r) * a.row_stride + p0;
                            let row = if r < height { a.data.get(start..start + kc) } else { None };
                            let dst = tile.iter_mut().skip(r).step_by(MR);
                            match row {
                                Some(row) => dst.zip(row).for_each(|(d, &v)| *d = v),
                                None => dst.for_each(|d| *d = 0.0),
                            }
                        }
                    } else {
                        for (p, col) in tile.chunks_exact_mut(MR).enumerate() {
                            for (r, v) in col.iter_mut().enumerate() {
                                *v = if r < height { a.at(r0 + r, p0 + p) } else { 0.0 };
                            }
                        }
                    }
                }
                for (panel, j0) in packed_b.chunks_exact(kc * NR).zip((0..n).step_by(NR)) {
                    let width = NR.min(n - j0);
                    for (tile, t) in packed_a.chunks_exact(kc * MR).zip(0..tiles) {
                        let r0 = i0 + t * MR;
                        let height = MR.min(m - r0);
                        let mut acc = [[0f32; NR]; MR];
                        if from_c {
                            for (r, row) in acc.iter_mut().enumerate().take(height) {
                                let at = (r0 + r) * ldc + j0;
                                row[..width].copy_from_slice(&c[at..at + width]);
                            }
                        }
                        tile_product::<MR, NR>(tile, panel, &mut acc);
                        for (r, row) in acc.iter().enumerate().take(height) {
                            let at = (r0 + r) * ldc + j0;
                            c[at..at + width].copy_from_slice(&row[..width]);
                        }
                    }
                }
            }
        }
    }
}

/// `acc[r][j] += Σ_p tile[p·MR + r] · panel[p·NR + j]`, `p` in order: the register tile.
#[inline(always)]
fn tile_product<const MR: usize, const NR: usize>(tile: &[f32], panel: &[f32], acc: &mut [[f32; NR]; MR]) {
    for (col, row) in tile.chunks_exact(MR).zip(panel.chunks_exact(NR)) {
        for r in 0..MR {
            let x = col[r];
            for j in 0..NR {
                acc[r][j] += x * row[j];
            }
        }
    }
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

    /// The order the module docs promise, written plainly.
    fn ordered(
        m: usize,
        k: usize,
        n: usize,
        a: &MatRef<'_>,
        b: &MatRef<'_>,
        c: &[f32],
        acc: bool,
    ) -> alloc::vec::Vec<f32> {
        let mut out = alloc::vec![0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                let mut s = if acc { c[i * n + j] } else { 0.0 };
                for p in 0..k {
                    s += a.at(i, p) * b.at(p, j);
                }
                out[i * n + j] = s;
            }
        }
        out
    }

    #[test]
    fn every_tile_size_and_vector_width_sums_in_the_same_order() {
        let mut state = 11u64;
        let mut next = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 40) as f32 / (1u64 << 20) as f32 - 8.0
        };
        // Depths past one KC block, rows past one MC block, ragged edges.
        for &(m, k, n) in &[(1, 1, 1), (7, 5, 9), (80, 300, 21), (150, 530, 40), (5, 1000, 3)] {
            // Data long enough for every layout below (offset 3, strides up to 2 per element).
            let a: alloc::vec::Vec<f32> = (0..2 * m * k + 8).map(|_| next()).collect();
            let b: alloc::vec::Vec<f32> = (0..2 * k * n + 8).map(|_| next()).collect();
            let bias: alloc::vec::Vec<f32> = (0..m * n).map(|_| next()).collect();
            // Each packing path: rows contiguous, columns contiguous, neither.
            let a_views = [
                MatRef::row_major(&a, k),
                MatRef { data: &a, offset: 3, row_stride: 1, col_stride: m },
                MatRef { data: &a, offset: 3, row_stride: 2 * k, col_stride: 2 },
            ];
            let b_views = [
                MatRef { data: &b, offset: 0, row_stride: 1, col_stride: k },
                MatRef { data: &b, offset: 3, row_stride: n, col_stride: 1 },
                MatRef { data: &b, offset: 3, row_stride: 2 * n, col_stride: 2 },
            ];
            for (av, bv) in a_views.iter().flat_map(|a| b_views.iter().map(move |b| (*a, *b))) {
                for accumulate in [false, true] {
                    let want = ordered(m, k, n, &av, &bv, &bias, accumulate);
                    let mut dispatched = bias.clone();
                    sgemm([m, k, n], av, bv, &mut dispatched, n, accumulate).unwrap();
                    let (narrow, broad) =
                        (PackedRhs::with_width(k, n, bv, 8).unwrap(), PackedRhs::with_width(k, n, bv, 16).unwrap());
                    let mut small = bias.clone();
                    Gemm { m, k, n, a: av, b: &narrow, ldc: n, accumulate }.run::<4, 8>(&mut small);
                    let mut wide = bias.clone();
                    Gemm { m, k, n, a: av, b: &broad, ldc: n, accumulate }.run::<6, 16>(&mut wide);
                    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<alloc::vec::Vec<_>>();
                    let layout = (av.row_stride, av.col_stride, bv.row_stride, bv.col_stride);
                    assert_eq!(bits(&dispatched), bits(&want), "{m}x{k}x{n} {layout:?} dispatched");
                    assert_eq!(bits(&small), bits(&want), "{m}x{k}x{n} {layout:?} 4x8");
                    assert_eq!(bits(&wide), bits(&want), "{m}x{k}x{n} {layout:?} 6x16");
                }
            }
        }
    }

    /// Rows read in place (segments anywhere in the data, zeros for padding) sum as the copied
    /// rows do, bit for bit; offsets, starts and outputs that do not fit are refused.
    #[test]
    fn indirect_rows_sum_as_copied_rows() -> Result<(), GemmShapeError> {
        let mut state = 5u64;
        let mut next = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 40) as f32 / (1u64 << 20) as f32 - 8.0
        };
        for &(m, seg, taps, n) in &[(1, 1, 1, 1), (13, 5, 3, 17), (40, 300, 2, 33), (7, 90, 9, 16)] {
            let data: alloc::vec::Vec<f32> = (0..seg * 50).map(|_| next()).collect();
            let offsets: alloc::vec::Vec<usize> =
                (0..m * taps).map(|i| if i % 7 == 3 { IndirectA::ZEROS } else { (i * 31 % 50) * seg }).collect();
            let k = seg * taps;
            let bm: alloc::vec::Vec<f32> = (0..k * n).map(|_| next()).collect();
            let b = PackedRhs::weights(&bm, k, n)?;
            let start: alloc::vec::Vec<f32> = (0..n).map(|_| next()).collect();
            let mut rows = alloc::vec::Vec::new();
            for &o in &offsets {
                match o {
                    IndirectA::ZEROS => rows.extend(core::iter::repeat_n(0.0, seg)),
                    o => rows.extend_from_slice(&data[o..o + seg]),
                }
            }
            let mut want: alloc::vec::Vec<f32> = (0..m).flat_map(|_| start.iter().copied()).collect();
            sgemm_packed(m, MatRef::row_major(&rows, k), &b, &mut want, n, true)?;
            let a = IndirectA { data: &data, seg, taps, offsets: &offsets };
            let mut got = alloc::vec![f32::NAN; m * n];
            let epilogue = Epilogue { start: Some(&start), clamp: None };
            if sgemm_indirect(&a, &b, &mut got, n, epilogue)? {
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<alloc::vec::Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "{m} rows of {taps} x {seg}, {n} columns");
            }
            let mut short = alloc::vec![0f32; m * n - 1];
            assert_eq!(sgemm_indirect(&a, &b, &mut short, n, epilogue), Err(GemmShapeError));
            let bad_start = Epilogue { start: Some(&start[1..]), clamp: None };
            assert_eq!(sgemm_indirect(&a, &b, &mut got, n, bad_start), Err(GemmShapeError));
            let mut far = offsets.clone();
            far[0] = data.len() - seg + 1;
            let outside = IndirectA { offsets: &far, ..a };
            assert_eq!(sgemm_indirect(&outside, &b, &mut got, n, epilogue), Err(GemmShapeError));
        }
        Ok(())
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
