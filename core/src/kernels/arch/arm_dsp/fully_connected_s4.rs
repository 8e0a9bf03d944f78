//! Fully connected with int4 weights on the Arm DSP path ([`fully_connected_s4`]): the weights
//! are unpacked in registers, two rows per pass, as CMSIS-NN's `_s4` kernels do, with no scratch
//! for them.
//!
//! A word of 4 packed bytes holds 8 weights `n0..n7` (`n0` the low nibble of byte 0). Masking
//! the word with `0xF0F0F0F0` leaves the odd ones as `16 n1, 16 n3, 16 n5, 16 n7` in its bytes;
//! shifting it left by 4 first leaves the even ones, `16 n0, 16 n2, ...`. `SXTB16` of these
//! (plain and rotated by 8) gives the halfword pairs `(16 n0, 16 n4)`, `(16 n2, 16 n6)`,
//! `(16 n1, 16 n5)` and `(16 n3, 16 n7)`; the input row is expanded once per batch row into the
//! matching pairs (`x0, x4`), (`x2, x6`), (`x1, x5`), (`x3, x7`) with the input offset added.
//! `SMLAD` then sums 16 times each product: 4 instructions per 8 weights where int8 weights take
//! 2 loads and 4 sign extensions. The sum divided by 16 (an exact arithmetic shift) is the
//! reference's: with `input_depth <= MAX_DEPTH`, `16 * sum` stays inside int32 (`|w| <= 8`,
//! `|x + offset| <= 255`), so no partial sum wraps where the reference's would not.

use super::{smlad, sxtb16, sxtb16_ror8};
use crate::kernels::fully_connected_s4::S4Layer;

/// Largest input depth this path takes: `16 * 8 * 255 * 65_536 < 2^31`.
const MAX_DEPTH: usize = 65_536;

/// Expands one input row (`row.len()` a multiple of 8) into the halfword pairs the unpacked
/// weights meet, `offset` added: per 8 inputs the words `(x0, x4)`, `(x2, x6)`, `(x1, x5)`,
/// `(x3, x7)` (low halfword first).
fn expand_row_s4(row: &[i8], offset: i32, cols: &mut [u32]) {
    for (x, w) in row.chunks_exact(8).zip(cols.chunks_exact_mut(4)) {
        let (Ok(x), Ok(w)) = (<&[i8; 8]>::try_from(x), <&mut [u32; 4]>::try_from(w)) else { continue };
        let v = x.map(|x| (i32::from(x) + offset) as u16 as u32);
        *w = [v[0] | (v[4] << 16), v[2] | (v[6] << 16), v[1] | (v[5] << 16), v[3] | (v[7] << 16)];
    }
}

/// `acc` plus the products of the 8 weights in `w` (packed) with the expanded inputs `x`, each
/// 16 times over.
#[inline(always)]
fn mac8(acc: i32, w: u32, x: &[u32; 4]) -> i32 {
    let even = (w << 4) & 0xF0F0_F0F0;
    let odd = w & 0xF0F0_F0F0;
    let acc = smlad(sxtb16(even), x[0], acc);
    let acc = smlad(sxtb16_ror8(even), x[1], acc);
    let acc = smlad(sxtb16(odd), x[2], acc);
    smlad(sxtb16_ror8(odd), x[3], acc)
}

/// The packed word at `bytes` (4 of them).
#[inline(always)]
fn word(bytes: &[u8]) -> u32 {
    <[u8; 4]>::try_from(bytes).map_or(0, u32::from_le_bytes)
}

/// Fully connected with int4 weights, validated: `false` (nothing written) when this path does
/// not take the layer (an input depth not a multiple of 8 or above [`MAX_DEPTH`], or a scratch
/// shorter than `input_depth / 2` words). Out of line: its frame is on the stack only while it runs.
#[inline(never)]
pub(crate) fn fully_connected_s4(l: &S4Layer<'_>, output: &mut [i8], scratch: &mut [u32]) -> bool {
    let (p, input, filter) = (l.p, l.input, l.filter);
    let depth = p.input_depth;
    if depth == 0 || depth % 8 != 0 || depth > MAX_DEPTH || p.output_depth == 0 {
        return false;
    }
    let row_bytes = depth / 2;
    let Some(cols) = scratch.get_mut(..row_bytes) else { return false };
    for (in_row, out_row) in input.chunks_exact(depth).zip(output.chunks_exact_mut(p.output_depth)) {
        expand_row_s4(in_row, p.input_offset, cols);
        let cols: &[u32] = cols;
        let mut outs = out_row.chunks_exact_mut(2);
        let mut c = 0;
        // Two rows per pass (adjacent in the filter): each expanded input word read once for both.
        for (pair, rows) in (&mut outs).zip(filter.chunks_exact(2 * row_bytes)) {
            let Some((w0, w1)) = rows.split_at_checked(row_bytes) else { continue };
            let (mut a0, mut a1) = (0i32, 0i32);
            for ((b0, b1), x) in w0.chunks_exact(4).zip(w1.chunks_exact(4)).zip(cols.chunks_exact(4)) {
                let Ok(x) = <&[u32; 4]>::try_from(x) else { continue };
                a0 = mac8(a0, word(b0), x);
                a1 = mac8(a1, word(b1), x);
            }
            if let [o0, o1] = pair {
                *o0 = l.output(c, a0 >> 4);
                *o1 = l.output(c + 1, a1 >> 4);
            }
            c += 2;
        }
        // An odd output depth: the last row alone.
        if let (Some(o), Some(w)) = (outs.into_remainder().first_mut(), filter.chunks_exact(row_bytes).nth(c)) {
            let mut a = 0i32;
            for (b, x) in w.chunks_exact(4).zip(cols.chunks_exact(4)) {
                let Ok(x) = <&[u32; 4]>::try_from(x) else { continue };
                a = mac8(a, word(b), x);
            }
            *o = l.output(c, a >> 4);
        }
    }
    true
}
