//! The int8 ADD on Helium (equal shapes), 4 elements per pass of a tail-predicated loop: each
//! input widened (`VLDRB.S32`), offset, shifted left by 20 and rescaled (`VQRDMULH` and the
//! exact rounding right shift, as in [`requant_row`](super::requant_row)), the sum requantized
//! the same way with the output's multiplier (any shift in `[-31, 30]`), offset and clamped.

use super::{RowQuant, clamp_bounds};
use crate::kernels::params::AddParams;
use core::arch::asm;

/// int8 ADD without broadcasting on Helium. Preconditions (else `false`, nothing written):
/// int8 parameters (`left_shift == 20`), equal shapes and lengths matching them, input shifts in
/// `[-31, 0]`, the output shift in `[-31, 30]`, a clamp that overlaps int8.
pub(crate) fn add_s8(p: &AddParams, in1: &[i8], in2: &[i8], out: &mut [i8]) -> bool {
    let n = p.broadcast.output_len();
    let (m1, m2, mo) = (p.input1_multiplier, p.input2_multiplier, p.output_multiplier);
    let Some((lo, hi)) = clamp_bounds(p.activation) else { return false };
    if p.left_shift != 20
        || !p.broadcast.is_elementwise()
        || in1.len() != n
        || in2.len() != n
        || out.len() != n
        || !(-31..=0).contains(&m1.shift)
        || !(-31..=0).contains(&m2.shift)
        || !RowQuant::shifts_valid(&[mo.shift])
    {
        return false;
    }
    if n == 0 {
        return true;
    }
    let (r1, r2, ro) = (m1.shift, m2.shift, mo.shift.min(0));
    // The vector constants: each right shift (as a negative left shift), the clamp bounds.
    let consts: [i32; 20] = [r1, r1, r1, r1, r2, r2, r2, r2, ro, ro, ro, ro, lo, lo, lo, lo, hi, hi, hi, hi];
    // SAFETY: the tail-predicated loop (32-bit lanes) reads `n` bytes from each input and writes
    // `n` bytes to `out` (the last pass only its active lanes), all three `n` long (checked);
    // `consts` is 20 readable words, read through `lr` before it becomes the loop counter. The
    // widening loads and the narrowing store take low registers (`r0`-`r2`). Every register
    // written is declared; every `q` register is declared clobbered.
    unsafe {
        asm!(
            "vldrw.u32 q7, [lr]",
            "vldrw.u32 q6, [lr, #16]",
            "vldrw.u32 q5, [lr, #32]",
            "vldrw.u32 q4, [lr, #48]",
            "vldrw.u32 q3, [lr, #64]",
            "dlstp.32 lr, r3",
            "2:",
            "vldrb.s32 q0, [r0], #4",
            "vadd.i32 q0, q0, r4",
            "vshl.i32 q0, q0, #20",
            "vqrdmulh.s32 q0, q0, r5",
            "vand q2, q0, q7",
            "vshr.s32 q2, q2, #31",
            "vadd.i32 q0, q0, q2",
            "vrshl.s32 q0, q0, q7",
            "vldrb.s32 q1, [r1], #4",
            "vadd.i32 q1, q1, r8",
            "vshl.i32 q1, q1, #20",
            "vqrdmulh.s32 q1, q1, r9",
            "vand q2, q1, q6",
            "vshr.s32 q2, q2, #31",
            "vadd.i32 q1, q1, q2",
            "vrshl.s32 q1, q1, q6",
            "vadd.i32 q0, q0, q1",
            "vshl.s32 q0, r10",
            "vqrdmulh.s32 q0, q0, r11",
            "vand q2, q0, q5",
            "vshr.s32 q2, q2, #31",
            "vadd.i32 q0, q0, q2",
            "vrshl.s32 q0, q0, q5",
            "vadd.i32 q0, q0, r12",
            "vmax.s32 q0, q0, q4",
            "vmin.s32 q0, q0, q3",
            "vstrb.32 q0, [r2], #4",
            "letp lr, 2b",
            inout("r0") in1.as_ptr() => _,
            inout("r1") in2.as_ptr() => _,
            inout("r2") out.as_mut_ptr() => _,
            in("r3") n,
            in("r4") p.input1_offset,
            in("r5") m1.multiplier,
            in("r8") p.input2_offset,
            in("r9") m2.multiplier,
            in("r10") mo.shift.max(0),
            in("r11") mo.multiplier,
            in("r12") p.output_offset,
            inout("lr") consts.as_ptr() => _,
            out("q0") _,
            out("q1") _,
            out("q2") _,
            out("q3") _,
            out("q4") _,
            out("q5") _,
            out("q6") _,
            out("q7") _,
            options(nostack),
        );
    }
    true
}
