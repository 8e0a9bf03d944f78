//! W4A8 kernels (int4 weights packed two per byte, int8 activations) against TFLite Micro and the
//! TFLite interpreter's reference kernels, bit for bit: `tests/golden/kernels/conv_2d_int4.json`,
//! `depthwise_conv_2d_int4.json`, `fully_connected_int4.json` (written by
//! `tests/gen/kernels/gen_int4.py`: one-op models with an `INT4` weight tensor, run by
//! tflite-micro 0.dev20261023182759 and ai-edge-litert 2.3.0).
//!
//! The kernels read `filter_packed`, the bytes of the model's weight buffer, so these tests also
//! check that we read TFLite's int4 layout (nibble order, sign extension, packing across rows) as
//! the oracles do. Conv and depthwise cases also run the way the interpreter runs them: the
//! filter unpacked (`int4::unpack`, into the op's scratch there) and the int8 kernel with its
//! fast path and scratch (`conv_s8`, `depthwise_conv_s8`), bit for bit the same; fully connected
//! cases run without and with scratch (its fast paths read the weights packed).
//! Conv and depthwise round twice in both oracles; fully connected rounds twice
//! in TFLite Micro (`Rounding::Double`) and once in the interpreter (`Rounding::Single`).

use microquant::kernels::common::{Hw, compute_window, per_channel_multipliers};
use microquant::kernels::conv::{conv_s8, conv_s8_scratch_len};
use microquant::kernels::conv_s4::{ConvParams, conv_s4};
use microquant::kernels::depthwise_conv::{depthwise_conv_s8, depthwise_conv_s8_scratch_len};
use microquant::kernels::depthwise_conv_s4::{DepthwiseConvParams, depthwise_conv_s4};
use microquant::kernels::fully_connected::{
    ExactMultiplier, FullyConnectedParams, FullyConnectedPerChannelQuant, fully_connected_multiplier,
    fully_connected_per_channel_multipliers, fully_connected_per_channel_s8, fully_connected_s8,
    fully_connected_s8_scratch_len,
};
use microquant::kernels::fully_connected_s4::{fully_connected_per_channel_s4, fully_connected_s4};
use microquant::kernels::{ActivationRange, Dims4, PerChannelQuant, Rounding, int4};
use microquant_tests::golden::{Tensor, assert_bit_exact};
use microquant_tests::kernels::{self, Activation, KernelFile, Oracle, Padding};

fn dims4(s: &[usize]) -> Dims4 {
    assert_eq!(s.len(), 4, "4-D shape expected, got {s:?}");
    Dims4::new(s[0], s[1], s[2], s[3])
}

/// The filter unpacked, as the interpreter unpacks it before the int8 kernel.
fn unpacked(packed: &[u8], n: usize) -> Vec<i8> {
    let mut out = vec![0i8; n];
    int4::unpack(packed, &mut out).unwrap();
    out
}

/// The packed weights, after checking they hold the same values as `filter`.
fn packed(case: &str, filter: &Tensor, packed: &Option<Tensor>) -> Vec<u8> {
    let packed = packed.as_ref().unwrap_or_else(|| panic!("{case}: no filter_packed"));
    let bytes = packed.u8();
    let values = filter.i8();
    assert_eq!(bytes.len(), int4::packed_len(values.len()), "{case}: packed length");
    let mut unpacked = vec![0i8; values.len()];
    int4::unpack(&bytes, &mut unpacked).unwrap();
    assert_eq!(unpacked, values, "{case}: filter_packed does not hold filter's values");
    bytes
}

fn activation(a: Activation, scale: f32, zp: i32) -> ActivationRange {
    ActivationRange::from_fused(a.fused(), scale, zp, ActivationRange::INT8).unwrap()
}

fn window(padding: Padding, input: Dims4, filter: Hw, stride: Hw, dilation: Hw) -> microquant::kernels::common::Window {
    compute_window(padding.kernel(), Hw::new(input.h, input.w), filter, stride, dilation).unwrap()
}

fn expected(c: &impl kernels::KernelCase, oracle: Oracle) -> Vec<i8> {
    c.expected(oracle).i8()
}

fn check_file_nonempty<C>(f: &KernelFile<C>, min: usize) {
    assert!(f.cases.len() >= min, "{}: {} cases, expected at least {min}", f.op, f.cases.len());
}

#[test]
fn conv_s4_matches_tflite_micro_and_the_interpreter() {
    let file = kernels::conv_2d_int4_file();
    check_file_nonempty(&file, 50);
    let mut elements = 0;
    for c in &file.cases {
        let filter = packed(&c.name, &c.filter, &c.filter_packed);
        let (input, fd) = (dims4(&c.input.shape), dims4(&c.filter.shape));
        let (stride, dilation) = (Hw::new(c.stride_h, c.stride_w), Hw::new(c.dilation_h, c.dilation_w));
        let w = window(c.padding, input, Hw::new(fd.h, fd.w), stride, dilation);
        let (mut m, mut s) = (vec![0; fd.n], vec![0; fd.n]);
        per_channel_multipliers(c.input_scale, &c.filter_scales, c.output_scale, &mut m, &mut s).unwrap();
        let bias = c.bias.as_ref().map(|b| b.i32());
        let x = c.input.i8();
        for rounding in [Rounding::Double, Rounding::Single] {
            let p = ConvParams {
                input,
                filter: fd,
                output: Dims4::new(input.n, w.output.h, w.output.w, fd.n),
                stride,
                dilation,
                padding: w.padding,
                input_offset: -c.input_zero_point,
                output_offset: c.output_zero_point,
                activation: activation(c.activation, c.output_scale, c.output_zero_point),
                rounding,
            };
            let mut out = vec![0i8; c.expected_tflm.len()];
            let q = PerChannelQuant { multiplier: &m, shift: &s };
            conv_s4(&p, &q, &x, &filter, bias.as_deref(), &mut out).unwrap();
            let mut fast = vec![0i8; out.len()];
            let mut scratch = vec![0u8; conv_s8_scratch_len(&p)];
            let f8 = unpacked(&filter, c.filter.i8().len());
            conv_s8(&p, &q, &x, &f8, bias.as_deref(), &mut fast, &mut scratch).unwrap();
            for oracle in [Oracle::Tflm, Oracle::TfliteRef] {
                elements += assert_bit_exact(&c.name, &expected(c, oracle), &out);
                elements += assert_bit_exact(&c.name, &expected(c, oracle), &fast);
            }
        }
    }
    println!("conv_s4: {} cases, {elements} output values compared", file.cases.len());
}

#[test]
fn depthwise_conv_s4_matches_tflite_micro_and_the_interpreter() {
    let file = kernels::depthwise_conv_2d_int4_file();
    check_file_nonempty(&file, 50);
    let mut elements = 0;
    for c in &file.cases {
        let filter = packed(&c.name, &c.filter, &c.filter_packed);
        let (input, fd) = (dims4(&c.input.shape), dims4(&c.filter.shape));
        let (stride, dilation) = (Hw::new(c.stride_h, c.stride_w), Hw::new(c.dilation_h, c.dilation_w));
        let w = window(c.padding, input, Hw::new(fd.h, fd.w), stride, dilation);
        let out_c = fd.c;
        let (mut m, mut s) = (vec![0; out_c], vec![0; out_c]);
        per_channel_multipliers(c.input_scale, &c.filter_scales, c.output_scale, &mut m, &mut s).unwrap();
        let bias = c.bias.as_ref().map(|b| b.i32());
        let x = c.input.i8();
        let p = DepthwiseConvParams {
            input,
            filter: Hw::new(fd.h, fd.w),
            output: Dims4::new(input.n, w.output.h, w.output.w, out_c),
            stride,
            dilation,
            padding: w.padding,
            depth_multiplier: c.depth_multiplier,
            input_offset: -c.input_zero_point,
            output_offset: c.output_zero_point,
            activation: activation(c.activation, c.output_scale, c.output_zero_point),
            rounding: Rounding::Double,
        };
        let mut out = vec![0i8; c.expected_tflm.len()];
        let q = PerChannelQuant { multiplier: &m, shift: &s };
        depthwise_conv_s4(&p, &q, &x, &filter, bias.as_deref(), &mut out).unwrap();
        let mut fast = vec![0i8; out.len()];
        let mut scratch = vec![0u8; depthwise_conv_s8_scratch_len(&p)];
        let f8 = unpacked(&filter, c.filter.i8().len());
        depthwise_conv_s8(&p, &q, &x, &f8, bias.as_deref(), &mut fast, &mut scratch).unwrap();
        for oracle in [Oracle::Tflm, Oracle::TfliteRef] {
            elements += assert_bit_exact(&c.name, &expected(c, oracle), &out);
            elements += assert_bit_exact(&c.name, &expected(c, oracle), &fast);
        }
    }
    println!("depthwise_conv_s4: {} cases, {elements} output values compared", file.cases.len());
}

#[test]
fn fully_connected_s4_double_matches_tflite_micro_single_the_interpreter() {
    let file = kernels::fully_connected_int4_file();
    check_file_nonempty(&file, 40);
    assert!(file.stats.cases_differing > 0, "the oracles agree everywhere: the rounding modes are not told apart");
    assert!(
        file.rejected.iter().all(|r| r.name.contains("_pc_") && r.reason.contains("kTfLiteInt4")),
        "only per-channel INT4 fully connected is refused (by TFLite Micro): {:?}",
        file.rejected
    );
    let mut elements = 0;
    for c in &file.cases {
        let filter = packed(&c.name, &c.filter, &c.filter_packed);
        let [out_d, depth] = c.filter.shape[..] else { panic!("{}: filter not 2-D", c.name) };
        let (mut m, mut s, mut e) = (vec![0; out_d], vec![0; out_d], vec![ExactMultiplier::default(); out_d]);
        fully_connected_per_channel_multipliers(
            c.input_scale,
            &c.filter_scales,
            c.output_scale,
            &mut m,
            &mut s,
            &mut e,
        )
        .unwrap();
        let bias = c.bias.as_ref().map(|b| b.i32());
        let x = c.input.i8();
        for (rounding, oracle) in [(Rounding::Double, Oracle::Tflm), (Rounding::Single, Oracle::TfliteRef)] {
            let p = FullyConnectedParams {
                batches: x.len() / depth,
                input_depth: depth,
                output_depth: out_d,
                input_offset: -c.input_zero_point,
                output_offset: c.output_zero_point,
                activation: activation(c.activation, c.output_scale, c.output_zero_point),
                rounding,
            };
            let want = expected(c, oracle);
            let mut out = vec![0i8; want.len()];
            let pc = FullyConnectedPerChannelQuant { fixed: PerChannelQuant { multiplier: &m, shift: &s }, exact: &e };
            fully_connected_per_channel_s4(&p, &pc, &x, &filter, bias.as_deref(), &mut out, &mut []).unwrap();
            elements += assert_bit_exact(&c.name, &want, &out);
            out.fill(0);
            let mut fc_scratch = vec![0u8; fully_connected_s8_scratch_len(&p)];
            fully_connected_per_channel_s4(&p, &pc, &x, &filter, bias.as_deref(), &mut out, &mut fc_scratch).unwrap();
            elements += assert_bit_exact(&c.name, &want, &out);
            let f8 = unpacked(&filter, out_d * depth);
            let mut scratch = vec![0u8; fully_connected_s8_scratch_len(&p)];
            out.fill(0);
            fully_connected_per_channel_s8(&p, &pc, &x, &f8, bias.as_deref(), &mut out, &mut scratch).unwrap();
            elements += assert_bit_exact(&c.name, &want, &out);
            if let [fs] = c.filter_scales[..] {
                let q = fully_connected_multiplier(c.input_scale, fs, c.output_scale).unwrap();
                out.fill(0);
                fully_connected_s4(&p, &q, &x, &filter, bias.as_deref(), &mut out, &mut fc_scratch).unwrap();
                elements += assert_bit_exact(&c.name, &want, &out);
                out.fill(0);
                fully_connected_s8(&p, &q, &x, &f8, bias.as_deref(), &mut out, &mut scratch).unwrap();
                elements += assert_bit_exact(&c.name, &want, &out);
            }
        }
    }
    println!("fully_connected_s4: {} cases, {elements} output values compared", file.cases.len());
}

#[test]
fn s4_kernels_reject_a_packed_filter_of_the_wrong_length() {
    let file = kernels::fully_connected_int4_file();
    let c = &file.cases[0];
    let filter = packed(&c.name, &c.filter, &c.filter_packed);
    let [out_d, depth] = c.filter.shape[..] else { panic!("filter not 2-D") };
    let q = fully_connected_multiplier(c.input_scale, c.filter_scales[0], c.output_scale).unwrap();
    let x = c.input.i8();
    let p = FullyConnectedParams {
        batches: x.len() / depth,
        input_depth: depth,
        output_depth: out_d,
        input_offset: -c.input_zero_point,
        output_offset: c.output_zero_point,
        activation: ActivationRange::INT8,
        rounding: Rounding::Double,
    };
    let mut out = vec![0i8; x.len() / depth * out_d];
    let short = &filter[..filter.len() - 1];
    let err = fully_connected_s4(&p, &q, &x, short, None, &mut out, &mut []).unwrap_err();
    assert!(matches!(err, microquant::Error::BadKernelArgument { kernel: "fully_connected_s4", .. }), "{err:?}");
}
