//! `kernels_random`'s fully connected cases: the Arm DSP path's direct rows (`fc_direct`) and
//! wide rows (`fc_rows8_asm`) against the reference on random layers.

use super::{Draw, check};
use microquant::kernels::fully_connected::{
    ExactMultiplier, FullyConnectedMultiplier, FullyConnectedParams, FullyConnectedPerChannelQuant,
    fully_connected_per_channel_s8, fully_connected_per_channel_s8_reference, fully_connected_s8,
    fully_connected_s8_reference, fully_connected_s8_scratch_len,
};
use microquant::kernels::{ActivationRange, PerChannelQuant, Rounding};
use microquant::requant::QuantizedMultiplier;

/// Fully connected layers with few outputs (or no scratch), where the Arm DSP path runs 2
/// filter rows per pass on the raw input (`fc_direct`): depths that are multiples of 4 (so
/// that path applies) with every mix of the groups of 8 and 16 its loops take, input rows at
/// each offset from a word boundary (word aligned: `LDRD`; not: `LDR`), filters aligned or
/// not, per-tensor and per-channel requantization in each regime of `Draw::quant` (the
/// right-shift form, and others that take the general requantization), with and without
/// bias, narrow clamps, 1 to 3 batches; against the reference, bit for bit.
pub fn direct_rows() {
    #[repr(C, align(4))]
    struct Words<const N: usize>([i8; N]);
    const MAX_OUT: usize = 13;
    let mut d = Draw(super::SplitMix64::new(0x6663646972));
    let (mut xb, mut wb) = (Words([0i8; 3 * 260 + 4]), Words([0i8; MAX_OUT * 260 + 4]));
    let (mut want, mut got) = ([0i8; 3 * MAX_OUT], [0i8; 3 * MAX_OUT]);
    let (mut m, mut s, mut bias) = ([0i32; MAX_OUT], [0i32; MAX_OUT], [0i32; MAX_OUT]);
    let mut scratch = Words([0i8; 2 * 264 + 4]);
    let (mut cases, mut unaligned, mut elements) = (0, 0, 0);
    for i in 0..160 {
        let depth = 4 * [1, 2, 7, 8, 9, 15, 16, 17, 24, 32, 33, 40, 64, 65][d.below(14)];
        let out_d = [1, 2, 3, 4, 5, 10, 11, 12, 13][d.below(9)];
        let batches = d.range(1, 3);
        // Input offset `i % 4` from a word boundary: every fourth case is aligned.
        let (xo, wo) = (i % 4, if d.below(3) == 0 { d.range(1, 3) } else { 0 });
        let (nx, nw, n) = (batches * depth, out_d * depth, batches * out_d);
        let x = &mut xb.0[xo..xo + nx];
        let w = &mut wb.0[wo..wo + nw];
        d.fill(x);
        d.fill(w);
        d.quant(&mut m[..out_d], &mut s[..out_d], &mut bias[..out_d]);
        let (x, w): (&[i8], &[i8]) = (x, w);
        let p = FullyConnectedParams {
            batches,
            input_depth: depth,
            output_depth: out_d,
            input_offset: -(d.i8() as i32),
            output_offset: d.i8() as i32,
            activation: if d.below(2) == 0 { ActivationRange::INT8 } else { d.activation() },
            rounding: Rounding::Double,
        };
        let b = if d.below(4) == 0 { None } else { Some(&bias[..out_d]) };
        // Without scratch the direct path takes every output count.
        let len = if d.below(3) == 0 { 0 } else { fully_connected_s8_scratch_len(&p) };
        let scratch = &mut scratch.0[..len];
        let scratch = bytemuck::cast_slice_mut::<i8, u8>(scratch);
        if d.below(3) == 0 {
            let q = FullyConnectedMultiplier {
                fixed: QuantizedMultiplier { multiplier: m[0], shift: s[0] },
                exact: ExactMultiplier::from_f64(0.5).unwrap(),
            };
            fully_connected_s8_reference(&p, &q, x, w, b, &mut want[..n]).unwrap();
            fully_connected_s8(&p, &q, x, w, b, &mut got[..n], scratch).unwrap();
        } else {
            let pc = FullyConnectedPerChannelQuant {
                fixed: PerChannelQuant { multiplier: &m[..out_d], shift: &s[..out_d] },
                exact: &[],
            };
            fully_connected_per_channel_s8_reference(&p, &pc, x, w, b, &mut want[..n]).unwrap();
            fully_connected_per_channel_s8(&p, &pc, x, w, b, &mut got[..n], scratch).unwrap();
        }
        elements += check("direct fully connected", "dispatched", bytemuck::cast_slice(&want[..n]), &got[..n]);
        cases += 1;
        unaligned += usize::from(!(x.as_ptr() as usize).is_multiple_of(4));
    }
    defmt::info!(
        "direct fully connected: {=usize} cases ({=usize} with an unaligned input row), {=usize} elements: dispatched == reference",
        cases,
        unaligned,
        elements
    );
    defmt::assert!(unaligned > 0 && unaligned < cases);
}

/// Per-tensor fully connected layers for the Arm DSP path's passes of 2 rows x 8 inputs
/// (`fc_rows8_asm`): depths that are multiples of 8 (1 to 90 blocks: every entry point of
/// its 16-block loop body, one or several iterations) and a few that are not, 8 to 45
/// outputs (4-output passes plus the last 1-3), multipliers at or above 2^30 and below it
/// (both epilogues' `SMMLAR` forms), some zero, right shifts of 2 to 31 and a few others,
/// biases anywhere in int32 or none, clamps of int8 (no clamp) and narrower ones, filters
/// word aligned (the path) or not (the old one), 1 to 2 batches; against the reference, bit
/// for bit.
pub fn wide_rows() {
    #[repr(C, align(4))]
    struct Words<const N: usize>([i8; N]);
    const MAX_D: usize = 720;
    const MAX_OUT: usize = 45;
    let mut d = Draw(super::SplitMix64::new(0x7769646538));
    let mut xb = Words([0i8; 2 * MAX_D + 4]);
    let mut wb = Words([0i8; 8 * 1024]);
    let (mut want, mut got) = ([0i8; 2 * MAX_OUT], [0i8; 2 * MAX_OUT]);
    let mut bias = [0i32; MAX_OUT];
    let mut scratch = Words([0i8; 2 * MAX_D + 16]);
    let (mut cases, mut wide, mut elements) = (0, 0, 0);
    for _ in 0..120 {
        let depth = if d.below(8) == 0 { 4 * d.range(1, 40) } else { 8 * d.range(1, 90) };
        let out_d = d.range(8, MAX_OUT.min((wb.0.len() - 4) / depth));
        let batches = d.range(1, 2);
        let wo = if d.below(5) == 0 { d.range(1, 3) } else { 0 };
        let (nx, nw, n) = (batches * depth, out_d * depth, batches * out_d);
        let x = &mut xb.0[..nx];
        let w = &mut wb.0[wo..wo + nw];
        d.fill(x);
        d.fill(w);
        let m = match d.below(4) {
            0 => (1 << 30) + (d.0.next_u64() >> 34) as i32,
            1 => (d.0.next_u64() >> 34) as i32,
            2 => (d.0.next_u64() >> 44) as i32,
            _ => [0, 1, (1 << 30) - 1, 1 << 30, i32::MAX][d.below(5)],
        };
        let shift = if d.below(10) == 0 { d.range(0, 4) as i32 - 2 } else { -(d.range(2, 31) as i32) };
        for b in bias.iter_mut() {
            *b = if d.below(2) == 0 { (d.0.next_u64() as i32) >> 12 } else { d.0.next_u64() as i32 };
        }
        let (x, w): (&[i8], &[i8]) = (x, w);
        let p = FullyConnectedParams {
            batches,
            input_depth: depth,
            output_depth: out_d,
            input_offset: -(d.i8() as i32),
            output_offset: d.i8() as i32,
            activation: if d.below(2) == 0 { ActivationRange::INT8 } else { d.activation() },
            rounding: Rounding::Double,
        };
        let b = if d.below(8) == 0 { None } else { Some(&bias[..out_d]) };
        let len = fully_connected_s8_scratch_len(&p);
        let scratch = bytemuck::cast_slice_mut::<i8, u8>(&mut scratch.0[..len]);
        let q = FullyConnectedMultiplier {
            fixed: QuantizedMultiplier { multiplier: m, shift },
            exact: ExactMultiplier::from_f64(0.5).unwrap(),
        };
        fully_connected_s8_reference(&p, &q, x, w, b, &mut want[..n]).unwrap();
        fully_connected_s8(&p, &q, x, w, b, &mut got[..n], scratch).unwrap();
        elements += check("wide fully connected", "dispatched", bytemuck::cast_slice(&want[..n]), &got[..n]);
        cases += 1;
        wide += usize::from(depth % 8 == 0 && wo == 0 && b.is_some() && shift <= -2);
    }
    defmt::info!(
        "wide fully connected: {=usize} cases ({=usize} for the 2x8 passes), {=usize} elements: dispatched == reference",
        cases,
        wide,
        elements
    );
    defmt::assert!(wide > 40 && cases > wide);
}

/// Fully connected layers with int4 weights (packed two per byte) through the target's path
/// (Arm DSP: `SMLAD` on weights unpacked in registers, two rows per pass, for depths that are
/// multiples of 8; the byte pairs for other even depths; the reference for odd ones): depths
/// of 1 to 260, 1 to 13 outputs (odd counts: the last row alone), packed filters starting at
/// any byte, per-channel requantization in each regime of `Draw::quant`, with and without bias
/// and scratch, narrow clamps, 1 to 3 batches; against the reference, bit for bit.
pub fn int4_rows() {
    use microquant::kernels::fully_connected_s4::{
        fully_connected_per_channel_s4, fully_connected_per_channel_s4_reference,
    };
    use microquant::kernels::int4;
    const MAX_D: usize = 260;
    const MAX_OUT: usize = 13;
    let mut d = Draw(super::SplitMix64::new(0x696e7434));
    let mut x = [0i8; 3 * MAX_D];
    let mut values = [0i8; MAX_OUT * MAX_D];
    let mut packed = [0u8; MAX_OUT * MAX_D / 2 + 4];
    let (mut want, mut got) = ([0i8; 3 * MAX_OUT], [0i8; 3 * MAX_OUT]);
    let (mut m, mut s, mut bias) = ([0i32; MAX_OUT], [0i32; MAX_OUT], [0i32; MAX_OUT]);
    let mut scratch = [0u8; 2 * MAX_D + 16];
    let (mut cases, mut octets, mut elements) = (0, 0, 0);
    for _ in 0..150 {
        let depth = if d.below(2) == 0 { 8 * d.range(1, MAX_D / 8) } else { d.range(1, MAX_D) };
        let out_d = d.range(1, MAX_OUT);
        let batches = d.range(1, 3);
        let (nx, nw, n) = (batches * depth, out_d * depth, batches * out_d);
        d.fill(&mut x[..nx]);
        d.fill(&mut values[..nw]);
        for v in &mut values[..nw] {
            *v >>= 4; // [-8, 7]
        }
        let po = d.below(3);
        let w = &mut packed[po..po + int4::packed_len(nw)];
        int4::pack(&values[..nw], w).unwrap();
        let w: &[u8] = w;
        d.quant(&mut m[..out_d], &mut s[..out_d], &mut bias[..out_d]);
        let p = FullyConnectedParams {
            batches,
            input_depth: depth,
            output_depth: out_d,
            input_offset: -(d.i8() as i32),
            output_offset: d.i8() as i32,
            activation: if d.below(2) == 0 { ActivationRange::INT8 } else { d.activation() },
            rounding: Rounding::Double,
        };
        let b = if d.below(4) == 0 { None } else { Some(&bias[..out_d]) };
        let len = if d.below(4) == 0 { 0 } else { fully_connected_s8_scratch_len(&p) };
        let pc = FullyConnectedPerChannelQuant {
            fixed: PerChannelQuant { multiplier: &m[..out_d], shift: &s[..out_d] },
            exact: &[],
        };
        fully_connected_per_channel_s4_reference(&p, &pc, &x[..nx], w, b, &mut want[..n]).unwrap();
        fully_connected_per_channel_s4(&p, &pc, &x[..nx], w, b, &mut got[..n], &mut scratch[..len]).unwrap();
        elements += check("int4 fully connected", "dispatched", bytemuck::cast_slice(&want[..n]), &got[..n]);
        cases += 1;
        octets += usize::from(depth % 8 == 0 && len > 0);
    }
    defmt::info!(
        "int4 fully connected: {=usize} cases ({=usize} with depths of 8s and scratch), {=usize} elements: dispatched == reference",
        cases,
        octets,
        elements
    );
    defmt::assert!(octets > 20 && octets < cases);
}
