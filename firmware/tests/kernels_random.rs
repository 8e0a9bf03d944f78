//! The dispatched int8 kernels (the fast path of the image's target: Arm DSP on mps2-an386/an500
//! and mps2-an505 built with `-C target-cpu=cortex-m33`, Helium on mps3-an547, the portable paths
//! on the micro:bit) against the reference kernels on random shapes (SplitMix64, seeded), bit for
//! bit: what the golden grid of `kernels.rs` does not cover (odd channel counts around the fast
//! paths' groups of 4, 8 and 16, bigger and deeper patches, every padding and stride combination,
//! requantization in every regime). A failure names the case, the path, the position and both
//! values.
#![no_std]
#![no_main]

use microquant_firmware as _; // logger, panic and fault handlers
use microquant_tests::rng::SplitMix64;

#[path = "kernels_random/fully_connected.rs"]
mod fully_connected;

/// Checks `actual` against `expected` (int8 bytes) element by element; on a mismatch, stops with
/// the case, the path, the first differing position and both values. Returns the count checked.
fn check(case: &str, path: &str, expected: &[u8], actual: &[i8]) -> usize {
    if expected.len() != actual.len() {
        defmt::panic!(
            "{=str} ({=str}): length: expected {=usize}, actual {=usize}",
            case,
            path,
            expected.len(),
            actual.len()
        );
    }
    let bad = expected.iter().zip(actual).filter(|(e, a)| **e as i8 != **a).count();
    if let Some((i, (&e, &a))) = expected.iter().zip(actual).enumerate().find(|(_, (e, a))| **e as i8 != **a) {
        defmt::panic!(
            "{=str} ({=str}): position {=usize}: expected {=i8}, actual {=i8} ({=usize} of {=usize} differ)",
            case,
            path,
            i,
            e as i8,
            a,
            bad,
            expected.len()
        );
    }
    expected.len()
}

use microquant::kernels::ActivationRange;

/// Whether this image is for the micro:bit (16 KB of RAM), from the build's `MQ_BOARD`.
const fn on_microbit() -> bool {
    let (a, b) = (env!("MQ_BOARD").as_bytes(), b"microbit");
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Random int8 values, offsets and clamps anywhere in int8, and per-layer requantization in one
/// of three regimes (see `quant`).
struct Draw(SplitMix64);

impl Draw {
    fn below(&mut self, n: usize) -> usize {
        (self.0.next_u64() % n as u64) as usize
    }
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }
    fn i8(&mut self) -> i8 {
        (self.0.next_u64() >> 56) as u8 as i8
    }
    fn fill(&mut self, v: &mut [i8]) {
        self.0.fill_i8(v);
    }
    /// Multipliers in [2^30, 2^31), in one of four regimes per layer: shifts in [-12, 1] (left
    /// shifts and the right shift 1 take the fast paths' general requantization); right shifts
    /// of 2 to 14 (the Arm DSP `SMLAL` form, as TFLite's converters produce); right shifts of 1
    /// to 3 (the Arm DSP convolution's `SMMLAR` epilogue takes the right shift 1 too: effective
    /// scales in [0.5, 1), common with int4 weights); or right shifts of 2 to 31 with some zero
    /// multipliers and biases anywhere in int32 (accumulators anywhere, wrapping like the
    /// reference's).
    fn quant(&mut self, m: &mut [i32], s: &mut [i32], bias: &mut [i32]) {
        let regime = self.below(4);
        for ((m, s), b) in m.iter_mut().zip(s.iter_mut()).zip(bias.iter_mut()) {
            *m = (1 << 30) + (self.0.next_u64() >> 34) as i32;
            match regime {
                0 => {
                    *s = -(self.below(14) as i32) + 1;
                    *b = (self.0.next_u64() as i32) >> 14;
                }
                1 => {
                    *s = -(self.range(2, 14) as i32);
                    *b = (self.0.next_u64() as i32) >> 14;
                }
                2 => {
                    *s = -(self.range(1, 3) as i32);
                    *b = (self.0.next_u64() as i32) >> 18;
                }
                _ => {
                    *s = -(self.range(2, 31) as i32);
                    if self.below(6) == 0 {
                        *m = 0;
                    }
                    *b = self.0.next_u64() as i32;
                }
            }
        }
    }
    fn activation(&mut self) -> ActivationRange {
        let (a, b) = (self.i8() as i32, self.i8() as i32);
        ActivationRange { min: a.min(b), max: a.max(b) }
    }
}

#[defmt_test::tests]
mod tests {
    use super::{Draw, check};
    use microquant::kernels::common::{Hw, Padding, compute_window};
    use microquant::kernels::conv::{ConvParams, conv_s8, conv_s8_reference, conv_s8_scratch_len};
    use microquant::kernels::depthwise_conv::{DepthwiseConvParams, depthwise_conv_s8, depthwise_conv_s8_reference};
    use microquant::kernels::fully_connected::{
        ExactMultiplier, FullyConnectedMultiplier, FullyConnectedParams, FullyConnectedPerChannelQuant,
        fully_connected_per_channel_s8, fully_connected_per_channel_s8_reference, fully_connected_s8,
        fully_connected_s8_reference, fully_connected_s8_scratch_len,
    };
    use microquant::kernels::{ActivationRange, Dims4, PerChannelQuant, Rounding};
    use microquant::requant::QuantizedMultiplier;

    /// Random shapes through the dispatched kernels (fast paths) and the reference kernels.
    #[test]
    fn fast_paths_match_reference_on_random_shapes() {
        const IN: usize = 1600;
        const OUT: usize = 1024;
        const CH: usize = 24;
        let mut d = Draw(super::SplitMix64::new(0x6b65726e656c73));
        let (mut x, mut w, mut want, mut got) = ([0i8; IN], [0i8; 2304], [0i8; OUT], [0i8; OUT]);
        let (mut m, mut s, mut bias) = ([0i32; CH], [0i32; CH], [0i32; CH]);
        let mut scratch = [0u8; 1024];
        let (mut convs, mut dws, mut fcs, mut elements) = (0, 0, 0, 0);
        for _ in 0..150 {
            let (h, wd) = (d.range(1, 9), d.range(1, 9));
            let (kh, kw) = (d.range(1, 3), d.range(1, 3));
            let stride = Hw::new(d.range(1, 2), d.range(1, 2));
            let dilation = Hw::new(d.range(1, 2), d.range(1, 2));
            let pad = if d.below(2) == 0 { Padding::Same } else { Padding::Valid };
            let Ok(win) = compute_window(pad, Hw::new(h, wd), Hw::new(kh, kw), stride, dilation) else { continue };
            let (in_off, out_off) = (-(d.i8() as i32), d.i8() as i32);
            let act = d.activation();

            // Conv: in_c and out_c around the groups of 4 and the 8-value patch padding.
            let (in_c, out_c) = (d.range(1, 12), d.range(1, 9));
            let input = Dims4::new(1, h, wd, in_c);
            let output = Dims4::new(1, win.output.h, win.output.w, out_c);
            let (nin, nf, nout) = (h * wd * in_c, out_c * kh * kw * in_c, win.output.h * win.output.w * out_c);
            if nin <= IN && nf <= w.len() && nout <= OUT {
                d.fill(&mut x[..nin]);
                d.fill(&mut w[..nf]);
                d.quant(&mut m[..out_c], &mut s[..out_c], &mut bias[..out_c]);
                let p = ConvParams {
                    input,
                    filter: Dims4::new(out_c, kh, kw, in_c),
                    output,
                    stride,
                    dilation,
                    padding: win.padding,
                    input_offset: in_off,
                    output_offset: out_off,
                    activation: act,
                    rounding: Rounding::Double,
                };
                let q = PerChannelQuant { multiplier: &m[..out_c], shift: &s[..out_c] };
                let len = conv_s8_scratch_len(&p);
                if len <= scratch.len() {
                    conv_s8_reference(&p, &q, &x[..nin], &w[..nf], Some(&bias[..out_c]), &mut want[..nout]).unwrap();
                    conv_s8(&p, &q, &x[..nin], &w[..nf], Some(&bias[..out_c]), &mut got[..nout], &mut scratch[..len])
                        .unwrap();
                    elements += check("random conv", "dispatched", bytemuck::cast_slice(&want[..nout]), &got[..nout]);
                    convs += 1;
                }
            }

            // Depthwise (multiplier 1): channels around the groups of 4.
            let c = d.range(1, CH);
            let (nin, nf, nout) = (h * wd * c, kh * kw * c, win.output.h * win.output.w * c);
            if nin <= IN && nout <= OUT {
                d.fill(&mut x[..nin]);
                d.fill(&mut w[..nf]);
                d.quant(&mut m[..c], &mut s[..c], &mut bias[..c]);
                let p = DepthwiseConvParams {
                    input: Dims4::new(1, h, wd, c),
                    filter: Hw::new(kh, kw),
                    output: Dims4::new(1, win.output.h, win.output.w, c),
                    depth_multiplier: 1,
                    stride,
                    dilation,
                    padding: win.padding,
                    input_offset: in_off,
                    output_offset: out_off,
                    activation: act,
                    rounding: Rounding::Double,
                };
                let q = PerChannelQuant { multiplier: &m[..c], shift: &s[..c] };
                let b = if d.below(4) == 0 { None } else { Some(&bias[..c]) };
                depthwise_conv_s8_reference(&p, &q, &x[..nin], &w[..nf], b, &mut want[..nout]).unwrap();
                depthwise_conv_s8(&p, &q, &x[..nin], &w[..nf], b, &mut got[..nout], &mut []).unwrap();
                elements += check("random depthwise", "dispatched", bytemuck::cast_slice(&want[..nout]), &got[..nout]);
                dws += 1;
            }

            // Fully connected: depths around the groups of 4, odd output counts, 1-2 rows.
            let (batches, depth, out_d) = (d.range(1, 2), d.range(1, 96), d.range(1, CH));
            d.fill(&mut x[..batches * depth]);
            d.fill(&mut w[..out_d * depth]);
            d.quant(&mut m[..out_d], &mut s[..out_d], &mut bias[..out_d]);
            let p = FullyConnectedParams {
                batches,
                input_depth: depth,
                output_depth: out_d,
                input_offset: in_off,
                output_offset: out_off,
                activation: act,
                rounding: Rounding::Double,
            };
            let pc = FullyConnectedPerChannelQuant {
                fixed: PerChannelQuant { multiplier: &m[..out_d], shift: &s[..out_d] },
                exact: &[],
            };
            let (xs, ws, n) = (&x[..batches * depth], &w[..out_d * depth], batches * out_d);
            fully_connected_per_channel_s8_reference(&p, &pc, xs, ws, Some(&bias[..out_d]), &mut want[..n]).unwrap();
            let len = fully_connected_s8_scratch_len(&p);
            fully_connected_per_channel_s8(&p, &pc, xs, ws, Some(&bias[..out_d]), &mut got[..n], &mut scratch[..len])
                .unwrap();
            elements += check("random fully connected", "dispatched", bytemuck::cast_slice(&want[..n]), &got[..n]);
            fcs += 1;
        }
        defmt::info!(
            "random shapes: {=usize} conv, {=usize} depthwise, {=usize} fully connected, {=usize} elements: dispatched == reference",
            convs,
            dws,
            fcs,
            elements
        );
        defmt::assert!(convs > 50 && dws > 50 && fcs > 50);
    }

    /// Fully connected layers with few outputs (or no scratch), through the Arm DSP path's
    /// direct rows: `fully_connected::direct_rows`.
    #[test]
    fn fully_connected_direct_rows_match_reference() {
        super::fully_connected::direct_rows();
    }

    /// Fully connected layers with int4 weights: `fully_connected::int4_rows`.
    #[test]
    fn fully_connected_int4_rows_match_reference() {
        super::fully_connected::int4_rows();
    }

    /// Per-tensor fully connected layers through the Arm DSP path's wide rows:
    /// `fully_connected::wide_rows`.
    #[test]
    fn fully_connected_wide_rows_match_reference() {
        super::fully_connected::wide_rows();
    }

    /// Random deep and wide layers, against the reference, around the Helium path's limits
    /// (`core/src/kernels/arch/arm_mve/`; on the other boards they check the DSP and portable
    /// paths the same way): patches of 1 to 400 values (tail-predicated loops over depths that
    /// are not multiples of 16), 1 to 80 filters (more than one block of 64), 4 to 40 output
    /// pixels; depthwise 1 to 80 channels with 1x1 to 5x5 taps, strides and dilations 1-2 and
    /// both paddings; fully connected depths 1 to 700 and 1 to 150 outputs (blocks of 64,
    /// odd counts), per-channel and per-tensor. Requantization beyond TFLite's converters:
    /// negative multipliers, `i32::MIN`, left shifts up to 12.
    #[test]
    fn deep_layers_match_reference() {
        // The micro:bit's 16 KB of RAM hold none of these layers: there the buffers shrink to
        // nothing and the test says it skipped.
        const SMALL: bool = super::on_microbit();
        const IN: usize = if SMALL { 16 } else { 4096 };
        const OUT: usize = if SMALL { 16 } else { 4096 };
        const CH: usize = 160;
        const W: usize = if SMALL { 16 } else { 16384 };
        if SMALL {
            defmt::info!("deep layers: skipped on the micro:bit (16 KB of RAM)");
            return;
        }
        let mut d = Draw(super::SplitMix64::new(0x6d76652d6465));
        let (mut x, mut w, mut want, mut got) = ([0i8; IN], [0i8; W], [0i8; OUT], [0i8; OUT]);
        let (mut m, mut s, mut bias) = ([0i32; CH], [0i32; CH], [0i32; CH]);
        let mut scratch = [0u8; IN];
        let (mut convs, mut dws, mut fcs, mut elements) = (0, 0, 0, 0);
        // The draw's requantization, sometimes with negative or `i32::MIN` multipliers and left
        // shifts (small biases then keep most outputs off the clamp).
        let quant = |d: &mut Draw, m: &mut [i32], s: &mut [i32], b: &mut [i32]| {
            d.quant(m, s, b);
            if d.below(4) == 0 {
                for ((m, s), b) in m.iter_mut().zip(s.iter_mut()).zip(b.iter_mut()) {
                    match d.below(4) {
                        0 => *m = -*m,
                        1 => *m = i32::MIN,
                        2 => {
                            *s = d.range(0, 12) as i32;
                            *b >>= 12;
                        }
                        _ => {}
                    }
                }
            }
        };
        for _ in 0..120 {
            let (in_off, out_off) = (-(d.i8() as i32), d.i8() as i32);
            let act = if d.below(2) == 0 { ActivationRange::INT8 } else { d.activation() };
            // Conv: deep patches, many filters.
            let (kh, kw) = (d.range(1, 3), d.range(1, 3));
            let in_c = [1, 3, 8, 15, 16, 17, 32, 33, 40][d.below(9)];
            let out_c = d.range(1, 80);
            let (h, wd) = (d.range(2, 8), d.range(2, 8));
            let stride = Hw::new(d.range(1, 2), d.range(1, 2));
            let dilation = Hw::new(1, d.range(1, 2));
            let pad = if d.below(2) == 0 { Padding::Same } else { Padding::Valid };
            if let Ok(win) = compute_window(pad, Hw::new(h, wd), Hw::new(kh, kw), stride, dilation) {
                let (nin, nf) = (h * wd * in_c, out_c * kh * kw * in_c);
                let nout = win.output.h * win.output.w * out_c;
                if nin <= IN && nf <= w.len() && nout <= OUT {
                    d.fill(&mut x[..nin]);
                    d.fill(&mut w[..nf]);
                    quant(&mut d, &mut m[..out_c], &mut s[..out_c], &mut bias[..out_c]);
                    let p = ConvParams {
                        input: Dims4::new(1, h, wd, in_c),
                        filter: Dims4::new(out_c, kh, kw, in_c),
                        output: Dims4::new(1, win.output.h, win.output.w, out_c),
                        stride,
                        dilation,
                        padding: win.padding,
                        input_offset: in_off,
                        output_offset: out_off,
                        activation: act,
                        rounding: Rounding::Double,
                    };
                    let q = PerChannelQuant { multiplier: &m[..out_c], shift: &s[..out_c] };
                    let b = if d.below(4) == 0 { None } else { Some(&bias[..out_c]) };
                    let len = conv_s8_scratch_len(&p);
                    if len <= scratch.len() {
                        conv_s8_reference(&p, &q, &x[..nin], &w[..nf], b, &mut want[..nout]).unwrap();
                        conv_s8(&p, &q, &x[..nin], &w[..nf], b, &mut got[..nout], &mut scratch[..len]).unwrap();
                        elements += check("deep conv", "dispatched", bytemuck::cast_slice(&want[..nout]), &got[..nout]);
                        convs += 1;
                    }
                }
            }

            // Depthwise: many channels, up to 5x5 taps.
            let c = d.range(1, 80);
            let (kh, kw) = (d.range(1, 5), d.range(1, 5));
            let (h, wd) = (d.range(1, 10), d.range(1, 10));
            let dilation = Hw::new(d.range(1, 2), d.range(1, 2));
            if let Ok(win) = compute_window(pad, Hw::new(h, wd), Hw::new(kh, kw), stride, dilation) {
                let (nin, nf, nout) = (h * wd * c, kh * kw * c, win.output.h * win.output.w * c);
                if nin <= IN && nout <= OUT && nf <= w.len() {
                    d.fill(&mut x[..nin]);
                    d.fill(&mut w[..nf]);
                    quant(&mut d, &mut m[..c], &mut s[..c], &mut bias[..c]);
                    let p = DepthwiseConvParams {
                        input: Dims4::new(1, h, wd, c),
                        filter: Hw::new(kh, kw),
                        output: Dims4::new(1, win.output.h, win.output.w, c),
                        depth_multiplier: 1,
                        stride,
                        dilation,
                        padding: win.padding,
                        input_offset: in_off,
                        output_offset: out_off,
                        activation: act,
                        rounding: Rounding::Double,
                    };
                    let q = PerChannelQuant { multiplier: &m[..c], shift: &s[..c] };
                    let b = if d.below(4) == 0 { None } else { Some(&bias[..c]) };
                    depthwise_conv_s8_reference(&p, &q, &x[..nin], &w[..nf], b, &mut want[..nout]).unwrap();
                    depthwise_conv_s8(&p, &q, &x[..nin], &w[..nf], b, &mut got[..nout], &mut []).unwrap();
                    elements +=
                        check("deep depthwise", "dispatched", bytemuck::cast_slice(&want[..nout]), &got[..nout]);
                    dws += 1;
                }
            }

            // Fully connected: deep rows, many outputs, per-channel or per-tensor.
            let (batches, depth, out_d) = (d.range(1, 2), d.range(1, 700), d.range(1, 150));
            if batches * depth <= IN && out_d * depth <= w.len() && out_d <= CH {
                d.fill(&mut x[..batches * depth]);
                d.fill(&mut w[..out_d * depth]);
                quant(&mut d, &mut m[..out_d], &mut s[..out_d], &mut bias[..out_d]);
                let p = FullyConnectedParams {
                    batches,
                    input_depth: depth,
                    output_depth: out_d,
                    input_offset: in_off,
                    output_offset: out_off,
                    activation: act,
                    rounding: Rounding::Double,
                };
                let (xs, ws, n) = (&x[..batches * depth], &w[..out_d * depth], batches * out_d);
                let b = if d.below(4) == 0 { None } else { Some(&bias[..out_d]) };
                let len = fully_connected_s8_scratch_len(&p).min(scratch.len());
                if d.below(3) == 0 {
                    let q = FullyConnectedMultiplier {
                        fixed: QuantizedMultiplier { multiplier: m[0], shift: s[0] },
                        exact: ExactMultiplier::from_f64(0.5).unwrap(),
                    };
                    fully_connected_s8_reference(&p, &q, xs, ws, b, &mut want[..n]).unwrap();
                    fully_connected_s8(&p, &q, xs, ws, b, &mut got[..n], &mut scratch[..len]).unwrap();
                } else {
                    let pc = FullyConnectedPerChannelQuant {
                        fixed: PerChannelQuant { multiplier: &m[..out_d], shift: &s[..out_d] },
                        exact: &[],
                    };
                    fully_connected_per_channel_s8_reference(&p, &pc, xs, ws, b, &mut want[..n]).unwrap();
                    fully_connected_per_channel_s8(&p, &pc, xs, ws, b, &mut got[..n], &mut scratch[..len]).unwrap();
                }
                elements += check("deep fully connected", "dispatched", bytemuck::cast_slice(&want[..n]), &got[..n]);
                fcs += 1;
            }
        }
        defmt::info!(
            "deep layers: {=usize} conv, {=usize} depthwise, {=usize} fully connected, {=usize} elements: dispatched == reference",
            convs,
            dws,
            fcs,
            elements
        );
        defmt::assert!(convs > 40 && dws > 40 && fcs > 40);
    }

    /// Random elementwise int8 ADDs (scales, zero points, clamps, lengths 1 to 700) through the
    /// dispatched kernel (Helium on the M55, the DSP path on M4/M7/M33) against the reference.
    #[test]
    fn add_matches_reference_on_random_scales() {
        use microquant::kernels::add::{AddParams, add_s8, add_s8_reference};
        use microquant::kernels::tensor::PerTensorQuant;
        let mut d = Draw(super::SplitMix64::new(0x616464));
        let (mut x1, mut x2, mut want, mut got) = ([0i8; 700], [0i8; 700], [0i8; 700], [0i8; 700]);
        let (mut cases, mut elements) = (0, 0);
        for case in 0..150 {
            let scale = |d: &mut Draw| 0.001 + d.below(10_000) as f32 * 1e-4;
            let zp = |d: &mut Draw| d.i8() as i32;
            let q1 = PerTensorQuant::new(scale(&mut d), zp(&mut d));
            let q2 = if case % 5 == 0 {
                PerTensorQuant::new(q1.scale, zp(&mut d))
            } else {
                PerTensorQuant::new(scale(&mut d), zp(&mut d))
            };
            let qo = PerTensorQuant::new(scale(&mut d) * 2.0, zp(&mut d));
            let act = if d.below(2) == 0 { ActivationRange::INT8 } else { d.activation() };
            let n = d.range(1, 700);
            let Ok(p) = AddParams::prepare_s8(q1, q2, qo, act, &[n], &[n], Rounding::Double) else { continue };
            d.fill(&mut x1[..n]);
            d.fill(&mut x2[..n]);
            add_s8_reference(&p, &x1[..n], &x2[..n], &mut want[..n]).unwrap();
            add_s8(&p, &x1[..n], &x2[..n], &mut got[..n]).unwrap();
            elements += check("random add", "dispatched", bytemuck::cast_slice(&want[..n]), &got[..n]);
            cases += 1;
        }
        defmt::info!("random add: {=usize} cases, {=usize} elements: dispatched == reference", cases, elements);
        defmt::assert!(cases > 100);
    }

    /// Random wider images (up to 40 columns) through the conv fast path, against the reference:
    /// 1x1 convolutions over the same grid, rows whose 4 tile pixels lie inside the image, 1 to 3
    /// channels (raw patches, a last filter whose word would overrun), tiles of the image's last
    /// pixels overlapping the one before, narrow clamps.
    #[test]
    fn conv_wide_rows_match_reference() {
        const IN: usize = 1600;
        const OUT: usize = 2048;
        let mut d = Draw(super::SplitMix64::new(0x636f6e7677));
        let (mut x, mut w, mut want, mut got) = ([0i8; IN], [0i8; 4096], [0i8; OUT], [0i8; OUT]);
        let (mut m, mut s, mut bias) = ([0i32; 24], [0i32; 24], [0i32; 24]);
        let mut scratch = [0u8; 2048];
        let (mut cases, mut elements) = (0, 0);
        while cases < 80 {
            let c = [1, 3, 4, 8, 16, 2][d.below(6)];
            let wd = d.range(4, 40);
            let h = d.range(1, (IN / (wd * c)).min(6));
            let (kh, kw) = match d.below(4) {
                0 => (1, 1),
                1 => (3, 3),
                _ => (d.range(1, 5), d.range(1, 5)),
            };
            let stride = Hw::new(d.range(1, 2), d.range(1, 2));
            let dilation = if d.below(5) == 0 { Hw::new(d.range(1, 2), d.range(1, 2)) } else { Hw::square(1) };
            let pad = if d.below(3) == 0 { Padding::Valid } else { Padding::Same };
            let out_c = d.range(1, 24);
            let Ok(win) = compute_window(pad, Hw::new(h, wd), Hw::new(kh, kw), stride, dilation) else { continue };
            let (nin, nf, nout) = (h * wd * c, out_c * kh * kw * c, win.output.h * win.output.w * out_c);
            if nin > IN || nf > w.len() || nout > OUT || nout == 0 {
                continue;
            }
            d.fill(&mut x[..nin]);
            d.fill(&mut w[..nf]);
            d.quant(&mut m[..out_c], &mut s[..out_c], &mut bias[..out_c]);
            let p = ConvParams {
                input: Dims4::new(1, h, wd, c),
                filter: Dims4::new(out_c, kh, kw, c),
                output: Dims4::new(1, win.output.h, win.output.w, out_c),
                stride,
                dilation,
                padding: win.padding,
                input_offset: -(d.i8() as i32),
                output_offset: d.i8() as i32,
                activation: if d.below(2) == 0 { ActivationRange::INT8 } else { d.activation() },
                rounding: Rounding::Double,
            };
            let q = PerChannelQuant { multiplier: &m[..out_c], shift: &s[..out_c] };
            let len = conv_s8_scratch_len(&p);
            if len > scratch.len() {
                continue;
            }
            let b = if d.below(4) == 0 { None } else { Some(&bias[..out_c]) };
            conv_s8_reference(&p, &q, &x[..nin], &w[..nf], b, &mut want[..nout]).unwrap();
            conv_s8(&p, &q, &x[..nin], &w[..nf], b, &mut got[..nout], &mut scratch[..len]).unwrap();
            elements += check("wide conv", "dispatched", bytemuck::cast_slice(&want[..nout]), &got[..nout]);
            cases += 1;
        }
        defmt::info!("wide conv: {=usize} cases, {=usize} elements: dispatched == reference", cases, elements);
    }

    /// Random convolutions over many channels (20 to 64) against the reference: patches long
    /// enough that the Arm DSP tile loops its body more than once (over 196 values), and tiles
    /// at the image's edges whose filter rows' spans do not all fit the stack rows at once (more
    /// than 256 words), so they are gathered a few rows at a time.
    #[test]
    fn conv_deep_patches_match_reference() {
        const IN: usize = 1600;
        const OUT: usize = 1024;
        let mut d = Draw(super::SplitMix64::new(0x64656570));
        let (mut x, mut w, mut want, mut got) = ([0i8; IN], [0i8; 4096], [0i8; OUT], [0i8; OUT]);
        let (mut m, mut s, mut bias) = ([0i32; 16], [0i32; 16], [0i32; 16]);
        let mut scratch = [0u8; 3584];
        let (mut cases, mut long, mut split, mut elements) = (0, 0, 0, 0);
        while cases < 100 {
            let c = [32, 48, 64, 20][d.below(4)];
            let wd = d.range(4, 12);
            let h = d.range(1, (IN / (wd * c)).min(5));
            let (kh, kw) = (d.range(1, 3), d.range(1, 3));
            let stride = Hw::new(d.range(1, 2), d.range(1, 2));
            let dilation = if d.below(5) == 0 { Hw::new(d.range(1, 2), d.range(1, 2)) } else { Hw::square(1) };
            let same = d.below(3) != 0;
            let pad = if same { Padding::Same } else { Padding::Valid };
            let Ok(win) = compute_window(pad, Hw::new(h, wd), Hw::new(kh, kw), stride, dilation) else { continue };
            let k = kh * kw * c;
            let out_c = d.range(1, (w.len() / k).min(16));
            let (nin, nf, nout) = (h * wd * c, out_c * k, win.output.h * win.output.w * out_c);
            if nin > IN || nf > w.len() || nout > OUT || nout == 0 {
                continue;
            }
            d.fill(&mut x[..nin]);
            d.fill(&mut w[..nf]);
            d.quant(&mut m[..out_c], &mut s[..out_c], &mut bias[..out_c]);
            let p = ConvParams {
                input: Dims4::new(1, h, wd, c),
                filter: Dims4::new(out_c, kh, kw, c),
                output: Dims4::new(1, win.output.h, win.output.w, out_c),
                stride,
                dilation,
                padding: win.padding,
                input_offset: -(d.i8() as i32),
                output_offset: d.i8() as i32,
                activation: if d.below(2) == 0 { ActivationRange::INT8 } else { d.activation() },
                rounding: Rounding::Double,
            };
            let q = PerChannelQuant { multiplier: &m[..out_c], shift: &s[..out_c] };
            let len = conv_s8_scratch_len(&p);
            if len > scratch.len() {
                continue;
            }
            let b = if d.below(4) == 0 { None } else { Some(&bias[..out_c]) };
            conv_s8_reference(&p, &q, &x[..nin], &w[..nf], b, &mut want[..nout]).unwrap();
            conv_s8(&p, &q, &x[..nin], &w[..nf], b, &mut got[..nout], &mut scratch[..len]).unwrap();
            elements += check("deep conv", "dispatched", bytemuck::cast_slice(&want[..nout]), &got[..nout]);
            cases += 1;
            long += (k > 196) as usize;
            split += (same && dilation.w == 1 && (3 * stride.w + kw) * (c / 4) * kh > 256) as usize;
        }
        defmt::info!(
            "deep conv: {=usize} cases ({=usize} patches over 196 values, {=usize} with edge rows split), {=usize} elements: dispatched == reference",
            cases,
            long,
            split,
            elements
        );
        defmt::assert!(long > 0 && split > 0);
    }

    /// The 3x3 stride-1 depthwise on tap pairs (`arm_dsp/depthwise_3x3_s1.rs`) against the
    /// reference: SAME and VALID padding; lines along rows and along columns (images taller than
    /// wide), of lengths that are and are not multiples of 4; strips (more lines than the stack
    /// planes hold); channel counts around the groups of 4 (odd ones: the last channels take the
    /// per-channel loop); shifts of -1 and -2 to -22 (its domain) and, in some cases, one channel
    /// outside it or a bias of 2^29 or more (then another path runs); narrow clamps; no bias.
    #[test]
    fn depthwise_3x3_stride1_pairs_match_reference() {
        const IN: usize = 1600;
        const OUT: usize = 1024;
        const C: usize = 20;
        let mut d = Draw(super::SplitMix64::new(0x7061697273));
        let (mut x, mut w, mut want, mut got) = ([0i8; IN], [0i8; 9 * C], [0i8; OUT], [0i8; OUT]);
        let (mut m, mut s, mut bias) = ([0i32; C], [0i32; C], [0i32; C]);
        let (mut cases, mut elements) = (0, 0);
        while cases < 80 {
            let c = [4, 8, 5, 7, 12, 16, 20, 1, 3][d.below(9)];
            let (h, wd) = match d.below(4) {
                0 => (d.range(8, 62), d.range(1, 9)),
                1 => (d.range(1, 9), d.range(8, 62)),
                2 => (d.range(3, 16), d.range(3, 16)),
                _ => (d.range(8, 40), d.range(8, 40)),
            };
            if h * wd * c > IN {
                continue;
            }
            let pad = if d.below(3) == 0 { Padding::Valid } else { Padding::Same };
            let Ok(win) = compute_window(pad, Hw::new(h, wd), Hw::square(3), Hw::square(1), Hw::square(1)) else {
                continue;
            };
            let nout = win.output.h * win.output.w * c;
            if nout == 0 || nout > OUT {
                continue;
            }
            let (nin, nf) = (h * wd * c, 9 * c);
            d.fill(&mut x[..nin]);
            d.fill(&mut w[..nf]);
            for ((m, s), b) in m.iter_mut().zip(s.iter_mut()).zip(bias.iter_mut()).take(c) {
                *m = (1 << 30) + (d.0.next_u64() >> 34) as i32;
                *s = if d.below(8) == 0 { -1 } else { -(d.range(2, 22) as i32) };
                *b = (d.0.next_u64() as i32) >> [3, 12, 20][d.below(3)];
            }
            if d.below(8) == 0 {
                // Outside the domain: a bias of 2^29 or a shift of 0 in one channel.
                let ch = d.below(c);
                if d.below(2) == 0 { bias[ch] = 1 << 29 } else { s[ch] = 0 }
            }
            if d.below(10) == 0 {
                m[d.below(c)] = 0;
            }
            let p = DepthwiseConvParams {
                input: Dims4::new(1, h, wd, c),
                filter: Hw::square(3),
                output: Dims4::new(1, win.output.h, win.output.w, c),
                depth_multiplier: 1,
                stride: Hw::square(1),
                dilation: Hw::square(1),
                padding: win.padding,
                input_offset: -(d.i8() as i32),
                output_offset: d.i8() as i32,
                activation: if d.below(3) == 0 { d.activation() } else { ActivationRange::INT8 },
                rounding: Rounding::Double,
            };
            let q = PerChannelQuant { multiplier: &m[..c], shift: &s[..c] };
            let b = if d.below(6) == 0 { None } else { Some(&bias[..c]) };
            depthwise_conv_s8_reference(&p, &q, &x[..nin], &w[..nf], b, &mut want[..nout]).unwrap();
            depthwise_conv_s8(&p, &q, &x[..nin], &w[..nf], b, &mut got[..nout], &mut []).unwrap();
            elements +=
                check("3x3 stride-1 depthwise", "dispatched", bytemuck::cast_slice(&want[..nout]), &got[..nout]);
            cases += 1;
        }
        defmt::info!(
            "3x3 stride-1 depthwise: {=usize} cases, {=usize} elements: dispatched == reference",
            cases,
            elements
        );
    }

    /// Random wider images (up to 48 columns) through the depthwise fast path, which runs rows
    /// whose windows lie inside the image in place and the rest through stack strips, against
    /// the reference.
    #[test]
    fn depthwise_wide_rows_match_reference() {
        const IN: usize = 1600;
        const OUT: usize = 1024;
        let mut d = Draw(super::SplitMix64::new(0x7769646572));
        let (mut x, mut w, mut want, mut got) = ([0i8; IN], [0i8; 9 * 12], [0i8; OUT], [0i8; OUT]);
        let (mut m, mut s, mut bias) = ([0i32; 12], [0i32; 12], [0i32; 12]);
        let (mut cases, mut elements) = (0, 0);
        while cases < 60 {
            let c = [4, 8, 5, 12][d.below(4)];
            let wd = d.range(10, 48);
            let h = d.range(1, (IN / (wd * c)).min(8));
            let (kh, kw) = if d.below(5) == 0 { (d.range(1, 3), d.range(1, 3)) } else { (3, 3) };
            let stride = Hw::new(d.range(1, 2), d.range(1, 2));
            let dilation = if d.below(4) == 0 { Hw::new(d.range(1, 2), d.range(1, 2)) } else { Hw::square(1) };
            let pad = if d.below(3) == 0 { Padding::Valid } else { Padding::Same };
            let Ok(win) = compute_window(pad, Hw::new(h, wd), Hw::new(kh, kw), stride, dilation) else { continue };
            let nout = win.output.h * win.output.w * c;
            if h * wd * c > IN || nout > OUT || nout == 0 {
                continue;
            }
            let (nin, nf) = (h * wd * c, kh * kw * c);
            d.fill(&mut x[..nin]);
            d.fill(&mut w[..nf]);
            d.quant(&mut m[..c], &mut s[..c], &mut bias[..c]);
            let p = DepthwiseConvParams {
                input: Dims4::new(1, h, wd, c),
                filter: Hw::new(kh, kw),
                output: Dims4::new(1, win.output.h, win.output.w, c),
                depth_multiplier: 1,
                stride,
                dilation,
                padding: win.padding,
                input_offset: -(d.i8() as i32),
                output_offset: d.i8() as i32,
                activation: if d.below(2) == 0 { ActivationRange::INT8 } else { d.activation() },
                rounding: Rounding::Double,
            };
            let q = PerChannelQuant { multiplier: &m[..c], shift: &s[..c] };
            depthwise_conv_s8_reference(&p, &q, &x[..nin], &w[..nf], Some(&bias[..c]), &mut want[..nout]).unwrap();
            depthwise_conv_s8(&p, &q, &x[..nin], &w[..nf], Some(&bias[..c]), &mut got[..nout], &mut []).unwrap();
            elements += check("wide depthwise", "dispatched", bytemuck::cast_slice(&want[..nout]), &got[..nout]);
            cases += 1;
        }
        defmt::info!("wide depthwise: {=usize} cases, {=usize} elements: dispatched == reference", cases, elements);
    }
}
