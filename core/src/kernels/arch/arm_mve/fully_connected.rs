//! The int8 fully connected kernel on Helium: per input row, two filters per pass of a
//! tail-predicated loop (one input load, two filter loads, two `VMLADAVA.S8` and two `VADDVA.S8`
//! for the filters' sums, which fold the input offset in), then the row requantized 4 outputs
//! at a time ([`requant_row`]).

use super::{RowQuant, clamp_bounds, requant_row};
use crate::kernels::params::FullyConnectedParams;
use core::arch::asm;

/// For the `n` filters from `filter` (rows of `k` bytes), in pairs: `out[2 * i..2 * i + 4] =
/// [dot(x, w_a), dot(x, w_b), sum(w_a), sum(w_b)]` with `w_a`, `w_b` the pair's filters (for an
/// odd `n`, the last pair's second filter is its first again).
///
/// # Safety
/// `n >= 1`, `k >= 1`; `k` bytes from `x` and `n * k` from `filter` are readable; `out` has
/// `4 * n.div_ceil(2)` writable words.
#[inline(always)]
unsafe fn dot_pairs(x: *const i8, filter: *const i8, k: usize, n: usize, out: *mut i32) {
    let kpad = 16 * k.div_ceil(16);
    let pairs = n / 2;
    // Each pair starts from `fa = fb - kpad + k` (where the previous pair's second filter
    // stopped, `kpad` past its start, stepped back to its end): so the first pair's `fb` starts
    // `kpad - k` before the filters.
    let fb0 = filter.wrapping_add(kpad).wrapping_sub(k);
    let xp0 = x.wrapping_add(kpad);
    if pairs > 0 {
        // SAFETY: pair `i < pairs` reads filters `2i` and `2i + 1` (`k` bytes each, within the
        // `n * k` readable) and `k` bytes of `x` (the last pass only its active lanes); the 4
        // words stored per pair are `out[4i..4i + 4]`. `r0`, `r2`, `r4`, `r8` are the
        // accumulators (even registers, as VMLADAVA / VADDVA need), `lr` the loop counter;
        // every `q` register used is declared clobbered; the flags are not declared preserved.
        unsafe {
            asm!(
                "2:",
                "movs r0, #0",
                "movs r2, #0",
                "movs r4, #0",
                "mov.w r8, #0",
                "sub {xp}, {xp}, {kpad}",
                "sub {fa}, {fb}, {kpad}",
                "add {fa}, {fa}, {k}",
                "add {fb}, {fa}, {k}",
                "dlstp.8 lr, {k}",
                "3:",
                "vldrb.u8 q0, [{xp}], #16",
                "vldrb.u8 q1, [{fa}], #16",
                "vmladava.s8 r0, q0, q1",
                "vaddva.s8 r4, q1",
                "vldrb.u8 q2, [{fb}], #16",
                "vmladava.s8 r2, q0, q2",
                "vaddva.s8 r8, q2",
                "letp lr, 3b",
                "stm {out}!, {{r0, r2, r4, r8}}",
                "subs {n}, {n}, #1",
                "bne 2b",
                xp = inout(reg) xp0 => _,
                fa = out(reg) _,
                fb = inout(reg) fb0 => _,
                k = in(reg) k,
                kpad = in(reg) kpad,
                out = inout(reg) out => _,
                n = inout(reg) pairs => _,
                out("r0") _,
                out("r2") _,
                out("r4") _,
                out("r8") _,
                out("lr") _,
                out("q0") _,
                out("q1") _,
                out("q2") _,
                options(nostack),
            );
        }
    }
    if n % 2 == 1 {
        let last = filter.wrapping_add((n - 1) * k);
        // SAFETY: filter `n - 1` (`k` bytes) twice as one pair, within the readable filters;
        // its 4 words are `out[4 * pairs..4 * pairs + 4]`, within `4 * n.div_ceil(2)`.
        unsafe {
            dot_pairs_one(x, last, k, out.wrapping_add(4 * pairs));
        }
    }
}

/// [`dot_pairs`] for one filter `w`: `out[0..4] = [dot(x, w), dot(x, w), sum(w), sum(w)]`.
///
/// # Safety
/// `k >= 1` bytes from `x` and `w` are readable; `out` has 4 writable words.
#[inline(always)]
unsafe fn dot_pairs_one(x: *const i8, w: *const i8, k: usize, out: *mut i32) {
    let (mut d, mut s): (i32, i32) = (0, 0);
    // SAFETY: the tail-predicated loop reads `k` bytes from `x` and from `w` (the last pass only
    // its active lanes); `r0`, `r2` are the accumulators (even registers), `lr` the counter.
    unsafe {
        asm!(
            "dlstp.8 lr, {k}",
            "2:",
            "vldrb.u8 q0, [{xp}], #16",
            "vldrb.u8 q1, [{wp}], #16",
            "vmladava.s8 r0, q0, q1",
            "vaddva.s8 r2, q1",
            "letp lr, 2b",
            xp = inout(reg) x => _,
            wp = inout(reg) w => _,
            k = in(reg) k,
            inout("r0") d,
            inout("r2") s,
            out("lr") _,
            out("q0") _,
            out("q1") _,
            options(readonly, nostack),
        );
        out.write(d);
        out.wrapping_add(1).write(d);
        out.wrapping_add(2).write(s);
        out.wrapping_add(3).write(s);
    }
}

/// Outputs per block (the stack tables' length).
const BLOCK: usize = 64;

/// Fully connected on Helium with fixed-point requantization: `multiplier` and `shift` hold one
/// entry (per-tensor) or one per output; outputs in blocks of [`BLOCK`]. Preconditions (else
/// `false`, nothing written): shifts in `[-31, 30]`, a clamp that overlaps int8, lengths that
/// fit.
pub(crate) fn fully_connected_s8(
    p: &FullyConnectedParams,
    multiplier: &[i32],
    shift: &[i32],
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    output: &mut [i8],
) -> bool {
    let (k, n) = (p.input_depth, p.output_depth);
    let Some((lo, hi)) = clamp_bounds(p.activation) else { return false };
    let per_channel = multiplier.len() == n && shift.len() == n;
    let per_tensor = multiplier.len() == 1 && shift.len() == 1;
    if k == 0
        || n == 0
        || !(per_channel || per_tensor)
        || !RowQuant::shifts_valid(shift)
        || filter.len() < n * k
        || input.len() < p.batches * k
        || output.len() < p.batches * n
        || bias.is_some_and(|b| b.len() < n)
    {
        return false;
    }
    // Per-tensor parameters repeated over a block; a zero bias where there is none.
    let (m_t, s_t) = ([multiplier.first().copied().unwrap_or(0); BLOCK], [shift.first().copied().unwrap_or(0); BLOCK]);
    let zero = [0i32; BLOCK];
    let mut raw = [0i32; 2 * BLOCK];
    let mut acc = [0i32; BLOCK];
    for row in 0..p.batches {
        // (No zip of chunk iterators: its out-of-line `Zip::new` keeps a division check.)
        let (Some(x), Some(out)) = (input.get(row * k..(row + 1) * k), output.get_mut(row * n..(row + 1) * n)) else {
            break;
        };
        let mut f0 = 0;
        while f0 < n {
            let nb = (n - f0).min(BLOCK);
            // SAFETY: `nb` in `[1, BLOCK]`, `k >= 1`; `x` holds `k` bytes; filters `f0..f0 + nb`
            // lie within `filter` (`n * k <= filter.len()`); `raw` has `2 * BLOCK >= 4 *
            // nb.div_ceil(2)` words.
            unsafe { dot_pairs(x.as_ptr(), filter.as_ptr().wrapping_add(f0 * k), k, nb, raw.as_mut_ptr()) };
            for (i, a) in acc.iter_mut().enumerate().take(nb) {
                let (d, s) = (raw.get(4 * (i / 2) + i % 2), raw.get(4 * (i / 2) + 2 + i % 2));
                if let (Some(&d), Some(&s)) = (d, s) {
                    *a = d.wrapping_add(p.input_offset.wrapping_mul(s));
                }
            }
            let q = RowQuant {
                multiplier: if per_tensor { &m_t } else { multiplier.get(f0..).unwrap_or(&[]) },
                shift: if per_tensor { &s_t } else { shift.get(f0..).unwrap_or(&[]) },
                bias: match bias {
                    Some(b) => b.get(f0..).unwrap_or(&[]),
                    None => &zero,
                },
                output_offset: p.output_offset,
                lo,
                hi,
            };
            if let Some(o) = out.get_mut(f0..f0 + nb) {
                requant_row(&acc, &q, o);
            }
            f0 += nb;
        }
    }
    true
}
