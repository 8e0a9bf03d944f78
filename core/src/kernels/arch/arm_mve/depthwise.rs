//! The int8 depthwise convolution (depth multiplier 1) on Helium, one channel at a time: the
//! channel's input is gathered into a plane padded with the zero point (so every tap reads a
//! value and the input offset folds into the bias: `sum((x + offset) * w) = sum(x * w) + offset
//! * sum(w)`, a padded tap contributing `(zp + offset) * w = 0` either way), the channel's taps
//! are one vector of weights (up to 16 taps, zeros past them), and each output is one byte
//! gather of its taps from the plane (`VLDRB.U8 Q, [R, Q]`, the taps' offsets in the lanes) and
//! one `VMLADAV.S8`; each output row is then requantized 4 outputs at a time with the channel's
//! parameters as scalars and scattered to its pixels (`VSTRB.32 Q, [R, Q]`).

use super::{MAX_CHANNELS, RowQuant, clamp_bounds};
use crate::kernels::PerChannelQuant;
use crate::kernels::params::DepthwiseConvParams;
use core::arch::asm;

/// Largest padded plane (bytes) of one channel, on the stack.
const PLANE_MAX: usize = 4096;
/// Largest output row (values).
const ROW_MAX: usize = 256;
/// Accumulators of a band of output rows (one channel).
const ACC_MAX: usize = 512;

/// Gathers `rows` rows of `w` values of one channel (row `y` from `src + y * src_row`, its
/// values `c` bytes apart) into the plane (row `y` at `dst + y * pw`), 8 values per pass (a
/// 16-bit-offset gather and a narrowing store).
///
/// # Safety
/// `rows >= 1`, `w >= 1`, `c <= 9362` (`7 * c` fits the 16-bit offsets); bytes `src + y *
/// src_row + i * c` are readable and `dst + y * pw + i` writable (`y < rows`, `i < w`); `offs`
/// points to the 8 halfwords `[0, c, .., 7c]`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn gather_plane(
    src: *const i8,
    src_row: usize,
    c: usize,
    w: usize,
    rows: usize,
    dst: *mut u8,
    pw: usize,
    offs: *const u16,
) {
    // SAFETY: per row, the tail-predicated loop (16-bit lanes) gathers `w` values at `src + y *
    // src_row + i * c` and stores `w` bytes from `dst + y * pw` (the last pass only its active
    // lanes), as the caller guarantees. The narrowing store takes a low register: `r0`.
    unsafe {
        asm!(
            "vldrh.u16 q1, [{o}]",
            "2:",
            "mov {s}, {srow}",
            "mov r0, {drow}",
            "dlstp.16 lr, {n}",
            "3:",
            "vldrb.u16 q0, [{s}, q1]",
            "vstrb.16 q0, [r0], #8",
            "add {s}, {s}, {c8}",
            "letp lr, 3b",
            "add {srow}, {srow}, {sstep}",
            "add {drow}, {drow}, {pw}",
            "subs {rows}, {rows}, #1",
            "bne 2b",
            o = in(reg) offs,
            s = out(reg) _,
            srow = inout(reg) src => _,
            sstep = in(reg) src_row,
            c8 = in(reg) 8 * c,
            n = in(reg) w,
            rows = inout(reg) rows => _,
            drow = inout(reg) dst => _,
            pw = in(reg) pw,
            out("r0") _,
            out("lr") _,
            out("q0") _,
            out("q1") _,
            options(nostack),
        );
    }
}

/// `acc[y * n + i] = sum_t w[t] * base[y * row_step + i * step + offs[t]]` for `y < rows`, `i <
/// n`: per output one gather of the 16 tap bytes and one `VMLADAV.S8`.
///
/// # Safety
/// `n >= 1`, `rows >= 1`; every byte those addresses name (lanes `t < 16`) is readable; `w`
/// and `offs` point to 16 bytes; `acc` has `rows * n` writable words.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn dot_plane(
    base: *const u8,
    step: usize,
    n: usize,
    rows: usize,
    row_step: usize,
    w: *const i8,
    offs: *const u8,
    acc: *mut i32,
) {
    // SAFETY: each output gathers 16 bytes at `base + offs[t]` (readable by the contract) and
    // stores one word to `acc` (`rows * n` in all); `r0` is the sum (an even register), `lr` the
    // inner count.
    unsafe {
        asm!(
            "vldrb.u8 q1, [{w}]",
            "vldrb.u8 q2, [{o}]",
            "2:",
            "mov {b}, {brow}",
            "dls lr, {n}",
            "3:",
            "vldrb.u8 q0, [{b}, q2]",
            "vmladav.s8 r0, q0, q1",
            "str r0, [{acc}], #4",
            "add {b}, {b}, {step}",
            "le lr, 3b",
            "add {brow}, {brow}, {rstep}",
            "subs {rows}, {rows}, #1",
            "bne 2b",
            w = in(reg) w,
            o = in(reg) offs,
            n = in(reg) n,
            b = out(reg) _,
            brow = inout(reg) base => _,
            step = in(reg) step,
            rstep = in(reg) row_step,
            rows = inout(reg) rows => _,
            acc = inout(reg) acc => _,
            out("r0") _,
            out("lr") _,
            out("q0") _,
            out("q1") _,
            out("q2") _,
            options(nostack),
        );
    }
}

/// One channel's requantization parameters as scalars, and the row's constants.
#[derive(Clone, Copy)]
struct ChannelScalars {
    bias: i32,
    left: i32,
    multiplier: i32,
    /// 1 if the right shift is nonzero (negative values then step down by 1 first), else 0.
    fix: i32,
    /// `-e` (the right shift as a rounding left shift).
    right: i32,
}

/// Requantizes `n` accumulators of one channel and stores them `c` bytes apart from `out`:
/// `consts` holds `[lo; 4], [hi; 4], [0, c, 2c, 3c]`.
///
/// # Safety
/// `n >= 1`; `acc` has `n` readable words; bytes `out + i * c` (`i < n`) are writable.
#[inline(always)]
unsafe fn requant_strided(
    acc: *const i32,
    n: usize,
    ch: ChannelScalars,
    off: i32,
    out: *mut i8,
    c: usize,
    consts: &[i32; 12],
) {
    // SAFETY: the tail-predicated loop (32-bit lanes) reads `n` words from `acc` and scatters
    // `n` bytes to `out + i * c` (the last pass only its active lanes), as the caller
    // guarantees; `consts` is 12 readable words. Every `q` register used is declared clobbered.
    unsafe {
        asm!(
            "vldrw.u32 q6, [{k}]",
            "vldrw.u32 q5, [{k}, #16]",
            "vldrw.u32 q4, [{k}, #32]",
            "dlstp.32 lr, {n}",
            "2:",
            "vldrw.u32 q0, [{acc}], #16",
            "vadd.i32 q0, q0, {bias}",
            "vshl.s32 q0, {left}",
            "vqrdmulh.s32 q0, q0, {m}",
            "vshr.s32 q1, q0, #31",
            "vmla.i32 q0, q1, {fix}",
            "vrshl.s32 q0, {right}",
            "vadd.i32 q0, q0, {off}",
            "vmax.s32 q0, q0, q6",
            "vmin.s32 q0, q0, q5",
            "vstrb.32 q0, [{out}, q4]",
            "add {out}, {out}, {c4}",
            "letp lr, 2b",
            k = in(reg) consts.as_ptr(),
            n = in(reg) n,
            acc = inout(reg) acc => _,
            bias = in(reg) ch.bias,
            left = in(reg) ch.left,
            m = in(reg) ch.multiplier,
            fix = in(reg) ch.fix,
            right = in(reg) ch.right,
            off = in(reg) off,
            out = inout(reg) out => _,
            c4 = in(reg) 4 * c,
            out("lr") _,
            out("q0") _,
            out("q1") _,
            out("q4") _,
            out("q5") _,
            out("q6") _,
            options(nostack),
        );
    }
}

/// Depthwise convolution on Helium. Preconditions (else `false`, nothing written): depth
/// multiplier 1, at most 16 taps whose offsets in the padded plane fit a byte, the plane within
/// [`PLANE_MAX`] bytes, output rows of at most [`ROW_MAX`] values, at most [`MAX_CHANNELS`]
/// channels, shifts in `[-31, 30]`, a clamp that overlaps int8.
pub(crate) fn depthwise_conv_s8(
    p: &DepthwiseConvParams,
    quant: &PerChannelQuant<'_>,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    output: &mut [i8],
) -> bool {
    let (ind, outd) = (p.input, p.output);
    let c = ind.c;
    let taps = p.filter.h * p.filter.w;
    let (oh, ow) = (outd.h, outd.w);
    let Some((lo, hi)) = clamp_bounds(p.activation) else { return false };
    if p.depth_multiplier != 1 || outd.c != c || taps == 0 || taps > 16 || oh == 0 || ow == 0 || ow > ROW_MAX {
        return false;
    }
    // The plane: every input position a tap reads, rows `-pad_top..`, columns `-pad_left..`.
    let ph = (oh - 1) * p.stride.h + (p.filter.h - 1) * p.dilation.h + 1;
    let pw = (ow - 1) * p.stride.w + (p.filter.w - 1) * p.dilation.w + 1;
    let last_tap = (p.filter.h - 1) * p.dilation.h * pw + (p.filter.w - 1) * p.dilation.w;
    if !(1..=MAX_CHANNELS).contains(&c)
        || ph * pw > PLANE_MAX
        || last_tap > 255
        || quant.multiplier.len() != c
        || quant.shift.len() != c
        || !RowQuant::shifts_valid(quant.shift)
        || bias.is_some_and(|b| b.len() != c)
        || filter.len() < taps * c
    {
        return false;
    }
    let in_image = ind.h * ind.w * c;
    let out_image = oh * ow * c;
    let zp = (-p.input_offset) as u8;
    let mut plane = [zp; PLANE_MAX];
    // The part of the plane the input covers: input rows `y0..y1`, columns `x0..x1`.
    let (pt, pl) = (p.padding.top, p.padding.left);
    let (y1, x1) = (ind.h.min(ph.saturating_sub(pt)), ind.w.min(pw.saturating_sub(pl)));
    let mut offs = [0u8; 16];
    for (t, o) in offs.iter_mut().enumerate().take(taps) {
        let fw = p.filter.w.max(1);
        let (ky, kx) = (t / fw, t % fw);
        *o = (ky * p.dilation.h * pw + kx * p.dilation.w) as u8;
    }
    let coffs: [u16; 8] = core::array::from_fn(|i| (i * c) as u16);
    if 7 * c > u16::MAX as usize {
        return false;
    }
    let consts: [i32; 12] = [lo, lo, lo, lo, hi, hi, hi, hi, 0, c as i32, 2 * c as i32, 3 * c as i32];
    let mut acc = [0i32; ACC_MAX];
    for b in 0..ind.n {
        let (Some(in_b), Some(out_b)) =
            (input.get(b * in_image..(b + 1) * in_image), output.get_mut(b * out_image..(b + 1) * out_image))
        else {
            break;
        };
        for ch in 0..c {
            // The channel's taps as one vector, zeros past them; its sum folds the offset in.
            let mut w = [0i8; 16];
            let mut sum = 0i32;
            for (t, wt) in w.iter_mut().enumerate().take(taps) {
                *wt = filter.get(t * c + ch).copied().unwrap_or(0);
                sum += *wt as i32;
            }
            let (Some(&m), Some(&s)) = (quant.multiplier.get(ch), quant.shift.get(ch)) else { return true };
            let scalars = ChannelScalars {
                bias: bias.and_then(|b| b.get(ch)).copied().unwrap_or(0).wrapping_add(p.input_offset.wrapping_mul(sum)),
                left: s.max(0),
                multiplier: m,
                fix: (s < 0) as i32,
                right: s.min(0),
            };
            // The channel's input into the plane (the padding keeps the zero point).
            if y1 > 0 && x1 > 0 {
                let last_in = ((y1 - 1) * ind.w + x1 - 1) * c + ch;
                let last_plane = (y1 - 1 + pt) * pw + pl + x1 - 1;
                if last_in >= in_b.len() || last_plane >= PLANE_MAX {
                    return true;
                }
                // SAFETY: `7 * c` fits a halfword (checked); the values read, `ch + (y * w_in +
                // x) * c` for `y < y1`, `x < x1`, are at most `last_in`, within `in_b`; the
                // bytes written, `(y + pt) * pw + pl + x`, at most `last_plane`, within the plane.
                unsafe {
                    gather_plane(
                        in_b.as_ptr().wrapping_add(ch),
                        ind.w * c,
                        c,
                        x1,
                        y1,
                        plane.as_mut_ptr().wrapping_add(pt * pw + pl),
                        pw,
                        coffs.as_ptr(),
                    )
                };
            }
            // Bands of output rows, as many as `acc` holds.
            let band = (ACC_MAX / ow.max(1)).max(1);
            let mut oy = 0;
            while oy < oh {
                let rows = band.min(oh - oy);
                // SAFETY: output `(oy, ox)` reads plane bytes `oy * sh * pw + ox * sw + offs[t]
                // <= (oh - 1) * sh * pw + (ow - 1) * sw + last_tap = ph * pw - 1` (lanes past
                // the taps read offset 0), within the plane; `acc` has `ACC_MAX >= rows * ow`
                // words.
                unsafe {
                    dot_plane(
                        plane.as_ptr().wrapping_add(oy * p.stride.h * pw),
                        p.stride.w,
                        ow,
                        rows,
                        p.stride.h * pw,
                        w.as_ptr(),
                        offs.as_ptr(),
                        acc.as_mut_ptr(),
                    )
                };
                let n = rows * ow;
                let Some(out) = out_b.get_mut(oy * ow * c + ch..) else { return true };
                if out.len() <= (n - 1) * c {
                    return true;
                }
                // SAFETY: `n >= 1` words of `acc` were written above; bytes `out + i * c` for `i
                // < n` are within `out` (checked).
                unsafe { requant_strided(acc.as_ptr(), n, scalars, p.output_offset, out.as_mut_ptr(), c, &consts) };
                oy += rows;
            }
        }
    }
    true
}
