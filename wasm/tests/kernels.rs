//! The kernels in wasm (built with `simd128`, see `.cargo/config.toml`), against every golden
//! case of `tests/golden/kernels/` (TFLite Micro and the TFLite interpreter's reference kernels),
//! bit for bit: conv, depthwise conv and fully connected through the dispatched int8 kernels (the
//! wasm SIMD fast paths) and the reference kernels, their 16x8 kernels, pooling, and (module
//! `elementwise`) add, mul, softmax, logistic, tanh, hard-swish, concatenation, pad, mean, reshape
//! and transpose. Then random shapes: the SIMD paths against the reference. Runs under
//! `wasm-pack test --node wasm` and, with `WASM_BINDGEN_USE_BROWSER=1`, `wasm-pack test
//! --headless --chrome wasm`.
#![cfg(target_arch = "wasm32")]

use microquant::kernels::common::{
    Accumulator, FusedActivation, Hw, Padding, Window, compute_window, per_channel_multipliers,
};
use microquant::kernels::conv::{ConvParams, conv_s8, conv_s8_reference, conv_s8_scratch_len, conv_s16};
use microquant::kernels::depthwise_conv::{
    DepthwiseConvParams, depthwise_conv_s8, depthwise_conv_s8_reference, depthwise_conv_s8_scratch_len,
    depthwise_conv_s16,
};
use microquant::kernels::fully_connected::{
    ExactMultiplier, FullyConnectedParams, FullyConnectedPerChannelQuant, fully_connected_multiplier,
    fully_connected_per_channel_multipliers, fully_connected_per_channel_s8, fully_connected_per_channel_s8_reference,
    fully_connected_per_channel_s16, fully_connected_s8, fully_connected_s8_reference, fully_connected_s8_scratch_len,
    fully_connected_s16,
};
use microquant::kernels::pooling::{
    PoolParams, avg_pool_s8, avg_pool_s8_reference, max_pool_s8, max_pool_s8_reference,
};
use microquant::kernels::{ActivationRange, Dims4, PerChannelQuant, Rounding};
use microquant_tests::golden::{Tensor, assert_bit_exact};
use microquant_tests::kernels::{
    self, Activation, ConvCase, DepthwiseConvCase, FullyConnectedCase, KernelCase, Oracle, PoolCase,
};
use microquant_tests::rng::SplitMix64;
use wasm_bindgen_test::wasm_bindgen_test;

#[wasm_bindgen_test]
#[allow(clippy::assertions_on_constants)] // checks the build configuration
fn simd128_is_on() {
    // The fast paths under test are the SIMD ones only if the crate was built with simd128.
    assert!(cfg!(target_feature = "simd128"), "build with -C target-feature=+simd128 (.cargo/config.toml)");
}

fn fused(a: Activation) -> FusedActivation {
    match a {
        Activation::None => FusedActivation::None,
        Activation::Relu => FusedActivation::Relu,
        Activation::Relu6 => FusedActivation::Relu6,
        Activation::ReluN1To1 => FusedActivation::ReluN1To1,
    }
}

fn padding(p: kernels::Padding) -> Padding {
    match p {
        kernels::Padding::Same => Padding::Same,
        kernels::Padding::Valid => Padding::Valid,
    }
}

fn dims(t: &Tensor) -> Dims4 {
    Dims4::new(t.shape[0], t.shape[1], t.shape[2], t.shape[3])
}

const ROUNDINGS: [Rounding; 2] = [Rounding::Double, Rounding::Single];
const ORACLES: [Oracle; 2] = [Oracle::Tflm, Oracle::TfliteRef];

// --- conv ---------------------------------------------------------------------------------------

fn conv_prepare(c: &ConvCase, rounding: Rounding, dtype: ActivationRange) -> (ConvParams, Vec<i32>, Vec<i32>) {
    let (input, filter) = (dims(&c.input), dims(&c.filter));
    let (stride, dilation) = (Hw::new(c.stride_h, c.stride_w), Hw::new(c.dilation_h, c.dilation_w));
    let w =
        compute_window(padding(c.padding), Hw::new(input.h, input.w), Hw::new(filter.h, filter.w), stride, dilation)
            .unwrap();
    let output = Dims4::new(input.n, w.output.h, w.output.w, filter.n);
    assert_eq!(output, dims(&c.expected_tflm), "{}: output shape", c.name);
    let (mut m, mut s) = (vec![0; filter.n], vec![0; filter.n]);
    per_channel_multipliers(c.input_scale, &c.filter_scales, c.output_scale, &mut m, &mut s).unwrap();
    let activation =
        ActivationRange::from_fused(fused(c.activation), c.output_scale, c.output_zero_point, dtype).unwrap();
    let p = ConvParams {
        input,
        filter,
        output,
        stride,
        dilation,
        padding: w.padding,
        input_offset: -c.input_zero_point,
        output_offset: c.output_zero_point,
        activation,
        rounding,
    };
    (p, m, s)
}

#[wasm_bindgen_test]
fn conv_s8_matches_tflite_micro_and_interpreter() {
    let cases = kernels::conv_2d_cases();
    assert!(!cases.is_empty());
    let mut n = 0;
    for c in &cases {
        let (input, filter, bias) = (c.input.i8(), c.filter.i8(), c.bias.as_ref().map(Tensor::i32));
        for rounding in ROUNDINGS {
            let (p, m, s) = conv_prepare(c, rounding, ActivationRange::INT8);
            let q = PerChannelQuant { multiplier: &m, shift: &s };
            let mut fast = vec![0i8; c.expected_tflm.len()];
            let mut scratch = vec![0u8; conv_s8_scratch_len(&p)];
            conv_s8(&p, &q, &input, &filter, bias.as_deref(), &mut fast, &mut scratch).unwrap();
            let mut refr = vec![0i8; fast.len()];
            conv_s8_reference(&p, &q, &input, &filter, bias.as_deref(), &mut refr).unwrap();
            for oracle in ORACLES {
                let e = c.expected(oracle).i8();
                n += assert_bit_exact(&format!("{} {rounding:?} vs {oracle:?} (simd)", c.name), &e, &fast);
                n += assert_bit_exact(&format!("{} {rounding:?} vs {oracle:?} (reference)", c.name), &e, &refr);
            }
        }
    }
    assert!(n > 0, "{} cases, {n} elements", cases.len());
}

fn conv16<B: Accumulator>(c: &ConvCase, rounding: Rounding, bias: Option<&[B]>) -> usize {
    let (p, m, s) = conv_prepare(c, rounding, ActivationRange::INT16);
    let q = PerChannelQuant { multiplier: &m, shift: &s };
    let mut out = vec![0i16; c.expected_tflm.len()];
    conv_s16(&p, &q, &c.input.i16(), &c.filter.i8(), bias, &mut out).unwrap();
    ORACLES
        .iter()
        .map(|&o| assert_bit_exact(&format!("{} {rounding:?} vs {o:?}", c.name), &c.expected(o).i16(), &out))
        .sum()
}

#[wasm_bindgen_test]
fn conv_s16_matches_tflite_micro_and_interpreter() {
    let cases = kernels::conv_2d_16x8_cases();
    let mut n = 0;
    for c in &cases {
        for rounding in ROUNDINGS {
            n += match c.bias.as_ref().map(|b| b.dtype.as_str()) {
                Some("int32") => conv16(c, rounding, c.bias.as_ref().map(Tensor::i32).as_deref()),
                Some(_) => conv16(c, rounding, c.bias.as_ref().map(Tensor::i64).as_deref()),
                None => conv16::<i64>(c, rounding, None),
            };
        }
    }
    assert!(n > 0 && !cases.is_empty());
}

// --- depthwise ----------------------------------------------------------------------------------

fn dw_prepare(
    c: &DepthwiseConvCase,
    rounding: Rounding,
    dtype: ActivationRange,
) -> (DepthwiseConvParams, Vec<i32>, Vec<i32>) {
    let (input, filter) = (dims(&c.input), dims(&c.filter));
    let (stride, dilation) = (Hw::new(c.stride_h, c.stride_w), Hw::new(c.dilation_h, c.dilation_w));
    let w =
        compute_window(padding(c.padding), Hw::new(input.h, input.w), Hw::new(filter.h, filter.w), stride, dilation)
            .unwrap();
    let output = Dims4::new(input.n, w.output.h, w.output.w, filter.c);
    assert_eq!(output, dims(&c.expected_tflm), "{}: output shape", c.name);
    let (mut m, mut s) = (vec![0; filter.c], vec![0; filter.c]);
    per_channel_multipliers(c.input_scale, &c.filter_scales, c.output_scale, &mut m, &mut s).unwrap();
    let activation =
        ActivationRange::from_fused(fused(c.activation), c.output_scale, c.output_zero_point, dtype).unwrap();
    let p = DepthwiseConvParams {
        input,
        filter: Hw::new(filter.h, filter.w),
        output,
        depth_multiplier: c.depth_multiplier,
        stride,
        dilation,
        padding: w.padding,
        input_offset: -c.input_zero_point,
        output_offset: c.output_zero_point,
        activation,
        rounding,
    };
    (p, m, s)
}

#[wasm_bindgen_test]
fn depthwise_conv_s8_matches_tflite_micro_and_interpreter() {
    let cases = kernels::depthwise_conv_2d_cases();
    assert!(!cases.is_empty());
    let mut n = 0;
    for c in &cases {
        let (input, filter, bias) = (c.input.i8(), c.filter.i8(), c.bias.as_ref().map(Tensor::i32));
        for rounding in ROUNDINGS {
            let (p, m, s) = dw_prepare(c, rounding, ActivationRange::INT8);
            let q = PerChannelQuant { multiplier: &m, shift: &s };
            let mut fast = vec![0i8; c.expected_tflm.len()];
            let mut scratch = vec![0u8; depthwise_conv_s8_scratch_len(&p)];
            depthwise_conv_s8(&p, &q, &input, &filter, bias.as_deref(), &mut fast, &mut scratch).unwrap();
            let mut refr = vec![0i8; fast.len()];
            depthwise_conv_s8_reference(&p, &q, &input, &filter, bias.as_deref(), &mut refr).unwrap();
            for oracle in ORACLES {
                let e = c.expected(oracle).i8();
                n += assert_bit_exact(&format!("{} {rounding:?} vs {oracle:?} (dispatched)", c.name), &e, &fast);
                n += assert_bit_exact(&format!("{} {rounding:?} vs {oracle:?} (reference)", c.name), &e, &refr);
            }
        }
    }
    assert!(n > 0);
}

fn dw16<B: Accumulator>(c: &DepthwiseConvCase, rounding: Rounding, bias: Option<&[B]>) -> usize {
    let (p, m, s) = dw_prepare(c, rounding, ActivationRange::INT16);
    let q = PerChannelQuant { multiplier: &m, shift: &s };
    let mut out = vec![0i16; c.expected_tflm.len()];
    depthwise_conv_s16(&p, &q, &c.input.i16(), &c.filter.i8(), bias, &mut out).unwrap();
    ORACLES
        .iter()
        .map(|&o| assert_bit_exact(&format!("{} {rounding:?} vs {o:?}", c.name), &c.expected(o).i16(), &out))
        .sum()
}

#[wasm_bindgen_test]
fn depthwise_conv_s16_matches_tflite_micro_and_interpreter() {
    let cases = kernels::depthwise_conv_2d_16x8_cases();
    let mut n = 0;
    for c in &cases {
        for rounding in ROUNDINGS {
            n += match c.bias.as_ref().map(|b| b.dtype.as_str()) {
                Some("int32") => dw16(c, rounding, c.bias.as_ref().map(Tensor::i32).as_deref()),
                Some(_) => dw16(c, rounding, c.bias.as_ref().map(Tensor::i64).as_deref()),
                None => dw16::<i64>(c, rounding, None),
            };
        }
    }
    assert!(n > 0 && !cases.is_empty());
}

// --- fully connected ----------------------------------------------------------------------------

/// Double rounding reproduces TFLite Micro, single rounding the interpreter.
fn oracle(rounding: Rounding) -> Oracle {
    match rounding {
        Rounding::Double => Oracle::Tflm,
        Rounding::Single => Oracle::TfliteRef,
    }
}

struct FcPrepared {
    params: FullyConnectedParams,
    m: Vec<i32>,
    s: Vec<i32>,
    exact: Vec<ExactMultiplier>,
}

fn fc_prepare(c: &FullyConnectedCase, rounding: Rounding, dtype: ActivationRange) -> FcPrepared {
    let (out, depth) = (c.filter.shape[0], c.filter.shape[1]);
    let activation =
        ActivationRange::from_fused(fused(c.activation), c.output_scale, c.output_zero_point, dtype).unwrap();
    let params = FullyConnectedParams {
        batches: c.input.len() / depth,
        input_depth: depth,
        output_depth: out,
        input_offset: -c.input_zero_point,
        output_offset: c.output_zero_point,
        activation,
        rounding,
    };
    let (mut m, mut s, mut exact) = (vec![0; out], vec![0; out], vec![ExactMultiplier::default(); out]);
    fully_connected_per_channel_multipliers(
        c.input_scale,
        &c.filter_scales,
        c.output_scale,
        &mut m,
        &mut s,
        &mut exact,
    )
    .unwrap();
    FcPrepared { params, m, s, exact }
}

#[wasm_bindgen_test]
fn fully_connected_s8_matches_tflite_micro_and_interpreter() {
    let cases = kernels::fully_connected_cases();
    assert!(!cases.is_empty());
    let mut n = 0;
    for c in &cases {
        let (input, filter, bias) = (c.input.i8(), c.filter.i8(), c.bias.as_ref().map(Tensor::i32));
        for rounding in ROUNDINGS {
            let p = fc_prepare(c, rounding, ActivationRange::INT8);
            let pc = FullyConnectedPerChannelQuant {
                fixed: PerChannelQuant { multiplier: &p.m, shift: &p.s },
                exact: &p.exact,
            };
            let e = c.expected(oracle(rounding)).i8();
            let name = format!("{} {rounding:?}", c.name);
            let mut out = vec![0i8; e.len()];
            let mut scratch = vec![0u8; fully_connected_s8_scratch_len(&p.params)];
            fully_connected_per_channel_s8(&p.params, &pc, &input, &filter, bias.as_deref(), &mut out, &mut scratch)
                .unwrap();
            n += assert_bit_exact(&format!("{name} per-channel (simd)"), &e, &out);
            fully_connected_per_channel_s8_reference(&p.params, &pc, &input, &filter, bias.as_deref(), &mut out)
                .unwrap();
            n += assert_bit_exact(&format!("{name} per-channel (reference)"), &e, &out);
            if let [fs] = c.filter_scales[..] {
                let q = fully_connected_multiplier(c.input_scale, fs, c.output_scale).unwrap();
                fully_connected_s8(&p.params, &q, &input, &filter, bias.as_deref(), &mut out, &mut scratch).unwrap();
                n += assert_bit_exact(&format!("{name} per-tensor (simd)"), &e, &out);
                fully_connected_s8_reference(&p.params, &q, &input, &filter, bias.as_deref(), &mut out).unwrap();
                n += assert_bit_exact(&format!("{name} per-tensor (reference)"), &e, &out);
            }
        }
    }
    assert!(n > 0);
}

fn fc16<B: Accumulator>(c: &FullyConnectedCase, rounding: Rounding, bias: Option<&[B]>) -> usize {
    let p = fc_prepare(c, rounding, ActivationRange::INT16);
    let pc =
        FullyConnectedPerChannelQuant { fixed: PerChannelQuant { multiplier: &p.m, shift: &p.s }, exact: &p.exact };
    let e = c.expected(oracle(rounding)).i16();
    let (input, filter) = (c.input.i16(), c.filter.i8());
    let mut out = vec![0i16; e.len()];
    fully_connected_per_channel_s16(&p.params, &pc, &input, &filter, bias, &mut out).unwrap();
    let mut n = assert_bit_exact(&format!("{} {rounding:?} per-channel", c.name), &e, &out);
    if let [fs] = c.filter_scales[..] {
        let q = fully_connected_multiplier(c.input_scale, fs, c.output_scale).unwrap();
        fully_connected_s16(&p.params, &q, &input, &filter, bias, &mut out).unwrap();
        n += assert_bit_exact(&format!("{} {rounding:?} per-tensor", c.name), &e, &out);
    }
    n
}

#[wasm_bindgen_test]
fn fully_connected_s16_matches_tflite_micro_and_interpreter() {
    let cases = kernels::fully_connected_16x8_cases();
    let mut n = 0;
    for c in &cases {
        for rounding in ROUNDINGS {
            n += match c.bias.as_ref().map(|b| b.dtype.as_str()) {
                Some("int32") => fc16(c, rounding, c.bias.as_ref().map(Tensor::i32).as_deref()),
                Some(_) => fc16(c, rounding, c.bias.as_ref().map(Tensor::i64).as_deref()),
                None => fc16::<i64>(c, rounding, None),
            };
        }
    }
    assert!(n > 0 && !cases.is_empty());
}

// --- pooling ------------------------------------------------------------------------------------

type PoolKernel = fn(&PoolParams, &[i8], &mut [i8]) -> Result<(), microquant::Error>;

fn pool_file(cases: &[PoolCase], kernel: PoolKernel) -> usize {
    assert!(!cases.is_empty());
    let mut n = 0;
    for c in cases {
        let input = dims(&c.input);
        let (filter, stride) = (Hw::new(c.filter_h, c.filter_w), Hw::new(c.stride_h, c.stride_w));
        let w = compute_window(padding(c.padding), Hw::new(input.h, input.w), filter, stride, Hw::square(1)).unwrap();
        let activation = ActivationRange::from_fused(
            fused(c.activation),
            c.output_scale,
            c.output_zero_point,
            ActivationRange::INT8,
        )
        .unwrap();
        let output = Dims4::new(input.n, w.output.h, w.output.w, input.c);
        let p = PoolParams { input, output, filter, stride, padding: w.padding, activation };
        let mut out = vec![0i8; c.expected_tflm.len()];
        kernel(&p, &c.input.i8(), &mut out).unwrap();
        for o in ORACLES {
            n += assert_bit_exact(&format!("{} vs {o:?}", c.name), &c.expected(o).i8(), &out);
        }
    }
    n
}

#[wasm_bindgen_test]
fn max_pool_s8_matches_tflite_micro_and_interpreter() {
    assert!(pool_file(&kernels::max_pool_2d_cases(), max_pool_s8) > 0);
}

#[wasm_bindgen_test]
fn avg_pool_s8_matches_tflite_micro_and_interpreter() {
    assert!(pool_file(&kernels::average_pool_2d_cases(), avg_pool_s8) > 0);
}

// --- random shapes: SIMD paths against the reference ---------------------------------------------

struct Draw(SplitMix64);

impl Draw {
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.0.next_u64() % (hi - lo + 1) as u64) as usize
    }
    fn bytes(&mut self, n: usize) -> Vec<i8> {
        let mut v = vec![0i8; n];
        self.0.fill_i8(&mut v);
        v
    }
    fn i8(&mut self) -> i32 {
        (self.0.next_u64() >> 56) as u8 as i8 as i32
    }
    /// Multipliers in [2^30, 2^31), shifts in [-13, 1], biases up to +-2^17.
    fn quant(&mut self, n: usize) -> (Vec<i32>, Vec<i32>, Vec<i32>) {
        let m = (0..n).map(|_| (1 << 30) + (self.0.next_u64() >> 34) as i32).collect();
        let s = (0..n).map(|_| 1 - self.range(0, 14) as i32).collect();
        let b = (0..n).map(|_| (self.0.next_u64() as i32) >> 14).collect();
        (m, s, b)
    }
    fn activation(&mut self) -> ActivationRange {
        let (a, b) = (self.i8(), self.i8());
        ActivationRange { min: a.min(b), max: a.max(b) }
    }
}

#[wasm_bindgen_test]
fn simd_paths_match_reference_on_random_shapes() {
    let mut d = Draw(SplitMix64::new(0x7761736d));
    let (mut convs, mut dws, mut fcs) = (0, 0, 0);
    for _ in 0..300 {
        let (h, w) = (d.range(1, 12), d.range(1, 12));
        let (kh, kw) = (d.range(1, 4), d.range(1, 4));
        let (stride, dilation) = (Hw::new(d.range(1, 3), d.range(1, 3)), Hw::new(d.range(1, 2), d.range(1, 2)));
        let pad = if d.range(0, 1) == 0 { Padding::Same } else { Padding::Valid };
        let Ok(win) = compute_window(pad, Hw::new(h, w), Hw::new(kh, kw), stride, dilation) else { continue };
        let (in_off, out_off, act) = (-d.i8(), d.i8(), d.activation());
        let n = d.range(1, 2);

        let (in_c, out_c) = (d.range(1, 40), d.range(1, 20));
        let (m, s, b) = d.quant(out_c);
        let p = ConvParams {
            input: Dims4::new(n, h, w, in_c),
            filter: Dims4::new(out_c, kh, kw, in_c),
            output: Dims4::new(n, win.output.h, win.output.w, out_c),
            stride,
            dilation,
            padding: win.padding,
            input_offset: in_off,
            output_offset: out_off,
            activation: act,
            rounding: Rounding::Double,
        };
        let (x, f) = (d.bytes(n * h * w * in_c), d.bytes(out_c * kh * kw * in_c));
        let q = PerChannelQuant { multiplier: &m, shift: &s };
        let len = p.output.checked_len().unwrap();
        let (mut want, mut got) = (vec![0i8; len], vec![0i8; len]);
        conv_s8_reference(&p, &q, &x, &f, Some(&b), &mut want).unwrap();
        conv_s8(&p, &q, &x, &f, Some(&b), &mut got, &mut vec![0u8; conv_s8_scratch_len(&p)]).unwrap();
        assert_bit_exact(&format!("random conv {p:?}"), &want, &got);
        convs += 1;

        let c = d.range(1, 70);
        let (m, s, b) = d.quant(c);
        let p = DepthwiseConvParams {
            input: Dims4::new(n, h, w, c),
            filter: Hw::new(kh, kw),
            output: Dims4::new(n, win.output.h, win.output.w, c),
            depth_multiplier: 1,
            stride,
            dilation,
            padding: win.padding,
            input_offset: in_off,
            output_offset: out_off,
            activation: act,
            rounding: Rounding::Double,
        };
        let (x, f) = (d.bytes(n * h * w * c), d.bytes(kh * kw * c));
        let q = PerChannelQuant { multiplier: &m, shift: &s };
        let len = p.output.checked_len().unwrap();
        let (mut want, mut got) = (vec![0i8; len], vec![0i8; len]);
        depthwise_conv_s8_reference(&p, &q, &x, &f, Some(&b), &mut want).unwrap();
        depthwise_conv_s8(&p, &q, &x, &f, Some(&b), &mut got, &mut []).unwrap();
        assert_bit_exact(&format!("random depthwise {p:?}"), &want, &got);
        dws += 1;

        let (depth, out_d) = (d.range(1, 300), d.range(1, 40));
        let (m, s, b) = d.quant(out_d);
        let p = FullyConnectedParams {
            batches: n,
            input_depth: depth,
            output_depth: out_d,
            input_offset: in_off,
            output_offset: out_off,
            activation: act,
            rounding: Rounding::Double,
        };
        let (x, f) = (d.bytes(n * depth), d.bytes(out_d * depth));
        let pc = FullyConnectedPerChannelQuant { fixed: PerChannelQuant { multiplier: &m, shift: &s }, exact: &[] };
        let (mut want, mut got) = (vec![0i8; n * out_d], vec![0i8; n * out_d]);
        fully_connected_per_channel_s8_reference(&p, &pc, &x, &f, Some(&b), &mut want).unwrap();
        fully_connected_per_channel_s8(&p, &pc, &x, &f, Some(&b), &mut got, &mut []).unwrap();
        assert_bit_exact(&format!("random fully connected {p:?}"), &want, &got);
        fcs += 1;
    }
    assert!(convs > 200 && dws > 200 && fcs > 200, "{convs} {dws} {fcs}");
}

/// Draws the data of one random case: mostly uniform bytes, sometimes only the int8 extremes.
fn extreme_or_uniform(d: &mut Draw, n: usize) -> Vec<i8> {
    match d.range(0, 3) {
        0 => (0..n).map(|_| if d.range(0, 1) == 0 { -128 } else { 127 }).collect(),
        1 => vec![-128; n],
        _ => d.bytes(n),
    }
}

/// Runs `reference` and `fast` into outputs of `len` values and checks them bit for bit.
fn compare_edge(
    what: &str,
    len: Option<usize>,
    reference: impl FnOnce(&mut [i8]) -> Result<(), microquant::Error>,
    fast: impl FnOnce(&mut [i8]) -> Result<(), microquant::Error>,
) {
    let len = len.unwrap_or_else(|| panic!("{what}: output size overflows"));
    let (mut want, mut got) = (vec![0i8; len], vec![0i8; len]);
    reference(&mut want).unwrap_or_else(|e| panic!("{what}: reference: {e}"));
    fast(&mut got).unwrap_or_else(|e| panic!("{what}: fast path: {e}"));
    assert_bit_exact(what, &want, &got);
}

/// Per-channel requantization over the whole of the fast paths' contract: multipliers of
/// either sign (0 and `i32::MAX` included, sometimes `i32::MIN`, which the fast paths decline),
/// right shifts down to -31 and small left shifts (the accumulators of these small layers keep
/// `acc * 2^shift` in range, as TFLite's contract asks).
fn wide_quant(d: &mut Draw, n: usize) -> (Vec<i32>, Vec<i32>, Vec<i32>) {
    let m = (0..n)
        .map(|_| match d.range(0, 9) {
            0 => 0,
            1 => i32::MAX,
            2 => -((1 << 30) + (d.0.next_u64() >> 34) as i32),
            3 if d.range(0, 7) == 0 => i32::MIN,
            _ => (1 << 30) + (d.0.next_u64() >> 34) as i32,
        })
        .collect();
    let s = (0..n).map(|_| if d.range(0, 5) == 0 { d.range(0, 2) as i32 } else { -(d.range(0, 31) as i32) }).collect();
    let b = (0..n).map(|_| (d.0.next_u64() as i32) >> d.range(8, 20)).collect();
    (m, s, b)
}

/// What the conv and depthwise layers of one random case share: batch, image, stride,
/// dilation, padding, offsets and clamp.
struct Layer {
    n: usize,
    h: usize,
    w: usize,
    stride: Hw,
    dilation: Hw,
    pad: Padding,
    in_off: i32,
    out_off: i32,
    act: ActivationRange,
}

/// A random conv of `layer` with `out_c` filters of `kh x kw x in_c` (quantization from
/// [`wide_quant`], extreme or uniform data, a bias two times in three), compared with the
/// reference; `false` if the window does not fit the image (nothing compared).
fn compare_conv(d: &mut Draw, what: &str, l: &Layer, in_c: usize, out_c: usize, (kh, kw): (usize, usize)) -> bool {
    let Some(e) = EdgeData::draw(d, l, (kh, kw), out_c, in_c, out_c * kh * kw * in_c) else { return false };
    let p = ConvParams {
        input: Dims4::new(l.n, l.h, l.w, in_c),
        filter: Dims4::new(out_c, kh, kw, in_c),
        output: Dims4::new(l.n, e.win.output.h, e.win.output.w, out_c),
        stride: l.stride,
        dilation: l.dilation,
        padding: e.win.padding,
        input_offset: l.in_off,
        output_offset: l.out_off,
        activation: l.act,
        rounding: Rounding::Double,
    };
    let (q, bias) = (e.quant(), e.bias());
    compare_edge(
        &format!("{what} conv {p:?}"),
        p.output.checked_len(),
        |y| conv_s8_reference(&p, &q, &e.x, &e.f, bias, y),
        |y| conv_s8(&p, &q, &e.x, &e.f, bias, y, &mut vec![0u8; conv_s8_scratch_len(&p)]),
    );
    true
}

/// The random parts of an edge case over a `Layer`: the filter's window, the output channels'
/// multipliers, shifts and biases (a bias 3 times in 4), and the input and filter data.
struct EdgeData {
    win: Window,
    m: Vec<i32>,
    sh: Vec<i32>,
    b: Vec<i32>,
    x: Vec<i8>,
    f: Vec<i8>,
    with_bias: bool,
}

impl EdgeData {
    /// `None` if the window does not fit the image. The input has `in_c` channels per pixel,
    /// the filter `f_len` values, the output `out_c` channels.
    fn draw(
        d: &mut Draw,
        l: &Layer,
        (kh, kw): (usize, usize),
        out_c: usize,
        in_c: usize,
        f_len: usize,
    ) -> Option<Self> {
        let win = compute_window(l.pad, Hw::new(l.h, l.w), Hw::new(kh, kw), l.stride, l.dilation).ok()?;
        let (m, sh, b) = wide_quant(d, out_c);
        let x = extreme_or_uniform(d, l.n * l.h * l.w * in_c);
        let f = extreme_or_uniform(d, f_len);
        let with_bias = d.range(0, 3) != 0;
        Some(Self { win, m, sh, b, x, f, with_bias })
    }
    fn quant(&self) -> PerChannelQuant<'_> {
        PerChannelQuant { multiplier: &self.m, shift: &self.sh }
    }
    fn bias(&self) -> Option<&[i32]> {
        self.with_bias.then_some(&self.b[..])
    }
}

/// As [`compare_conv`], a depthwise conv of `layer` with `c` channels, depth multiplier `dm`
/// and a `kh x kw` filter.
fn compare_depthwise(d: &mut Draw, what: &str, l: &Layer, c: usize, dm: usize, (kh, kw): (usize, usize)) -> bool {
    let Some(e) = EdgeData::draw(d, l, (kh, kw), c * dm, c, kh * kw * c * dm) else { return false };
    let p = DepthwiseConvParams {
        input: Dims4::new(l.n, l.h, l.w, c),
        filter: Hw::new(kh, kw),
        output: Dims4::new(l.n, e.win.output.h, e.win.output.w, c * dm),
        depth_multiplier: dm,
        stride: l.stride,
        dilation: l.dilation,
        padding: e.win.padding,
        input_offset: l.in_off,
        output_offset: l.out_off,
        activation: l.act,
        rounding: Rounding::Double,
    };
    let (q, bias) = (e.quant(), e.bias());
    compare_edge(
        &format!("{what} depthwise {p:?}"),
        p.output.checked_len(),
        |y| depthwise_conv_s8_reference(&p, &q, &e.x, &e.f, bias, y),
        |y| depthwise_conv_s8(&p, &q, &e.x, &e.f, bias, y, &mut []),
    );
    true
}

#[wasm_bindgen_test]
fn simd_conv_and_depthwise_match_reference_on_edge_shapes() {
    let mut d = Draw(SplitMix64::new(0x6564_6765));
    let (mut convs, mut dws) = (0, 0);
    for case in 0..400 {
        let (h, w) = (d.range(1, 20), d.range(1, 20));
        let (kh, kw) = if case % 3 == 0 { (3, 3) } else { (d.range(1, 5), d.range(1, 5)) };
        let s = if case % 2 == 0 { 2 } else { d.range(1, 3) };
        let stride = Hw::new(s, if d.range(0, 3) == 0 { d.range(1, 3) } else { s });
        let dilation = if d.range(0, 5) == 0 { Hw::new(d.range(1, 2), d.range(1, 2)) } else { Hw::new(1, 1) };
        let pad = if d.range(0, 2) == 0 { Padding::Valid } else { Padding::Same };
        let in_off = match d.range(0, 3) {
            0 => 128,
            1 => -127,
            _ => -d.i8().max(-127),
        };
        let out_off = d.i8();
        let act = if d.range(0, 1) == 0 { ActivationRange::INT8 } else { d.activation() };
        let layer = Layer { n: d.range(1, 2), h, w, stride, dilation, pad, in_off, out_off, act };

        // conv: 3-channel inputs often, odd filter counts, 1x1 layers
        let in_c = match d.range(0, 3) {
            0 => 3,
            1 => d.range(1, 9),
            _ => d.range(1, 48),
        };
        let out_c = d.range(1, 37);
        let k_c = if case % 5 == 0 { (1, 1) } else { (kh, kw) };
        convs += usize::from(compare_conv(&mut d, "edge", &layer, in_c, out_c, k_c));

        // depthwise: odd channel counts, depth multipliers (> 1 runs the reference)
        let c = match d.range(0, 3) {
            0 => d.range(1, 7),
            1 => 8 * d.range(1, 6),
            _ => d.range(1, 70),
        };
        let dm = if d.range(0, 4) == 0 { d.range(2, 3) } else { 1 };
        dws += usize::from(compare_depthwise(&mut d, "edge", &layer, c, dm, (kh, kw)));
    }
    assert!(convs > 250 && dws > 250, "{convs} {dws}");
}

/// The wider layers the edge shapes above do not reach, against the reference: convolutions
/// with many filters (the channels-in-lanes path packs up to 256 filters in blocks of 8, with a
/// partial last block; patches up to 640 values, longer ones and more than 256 filters take the
/// tiled path), 1x1 layers with odd pixel counts, 3-channel first layers, and depthwise layers
/// with many channels (blocks of 16, a tail of 1-15) and filters up to 7x7 (larger ones run the
/// reference); offsets 128 / -127, extreme data, multipliers and shifts over the whole contract.
#[wasm_bindgen_test]
fn simd_wide_layers_match_reference() {
    let mut d = Draw(SplitMix64::new(0x7769_6465));
    let (mut convs, mut dws) = (0, 0);
    for case in 0..120 {
        let (h, w) = (d.range(1, 9), d.range(1, 9));
        let s = d.range(1, 2);
        let stride = Hw::new(s, s);
        let pad = if d.range(0, 2) == 0 { Padding::Valid } else { Padding::Same };
        let in_off = match case % 3 {
            0 => 128,
            1 => -127,
            _ => -d.i8().max(-127),
        };
        let out_off = d.i8();
        let act = if d.range(0, 1) == 0 { ActivationRange::INT8 } else { d.activation() };
        let layer = Layer { n: d.range(1, 2), h, w, stride, dilation: Hw::square(1), pad, in_off, out_off, act };

        let (kh, kw, in_c) = match d.range(0, 3) {
            0 => (1, 1, d.range(1, 300)),
            1 => (3, 3, 3),
            2 => (d.range(1, 3), d.range(1, 3), d.range(1, 80)),
            _ => (d.range(1, 10), d.range(1, 4), 1),
        };
        let out_c = match d.range(0, 3) {
            0 => d.range(33, 64),
            1 => d.range(65, 128),
            2 => d.range(129, 260),
            _ => 8 * d.range(1, 32),
        };
        convs += usize::from(compare_conv(&mut d, "wide", &layer, in_c, out_c, (kh, kw)));

        let c = match d.range(0, 2) {
            0 => 16 * d.range(1, 16),
            1 => 16 * d.range(1, 8) + d.range(1, 15),
            _ => d.range(1, 300),
        };
        let k = match d.range(0, 3) {
            0 => (3, 3),
            1 => (d.range(1, 7), d.range(1, 7)),
            2 => (5, 5),
            _ => (d.range(7, 9), d.range(7, 9)),
        };
        dws += usize::from(compare_depthwise(&mut d, "wide", &layer, c, 1, k));
    }
    assert!(convs > 60 && dws > 60, "{convs} {dws}");
}

/// Pooling (the channels-inner loop in wasm) against the reference on random shapes: windows
/// partly in the padding, global pools, channel counts across the 64-channel blocks, clamps and
/// extreme data.
#[wasm_bindgen_test]
fn pooling_matches_reference_on_random_shapes() {
    let mut d = Draw(SplitMix64::new(0x706f_6f6c));
    let mut checked = 0;
    for case in 0..300 {
        let (h, w) = (d.range(1, 12), d.range(1, 12));
        let (kh, kw) = if case % 5 == 0 { (h, w) } else { (d.range(1, 4), d.range(1, 4)) };
        let stride = Hw::new(d.range(1, 3), d.range(1, 3));
        let pad = if d.range(0, 1) == 0 { Padding::Valid } else { Padding::Same };
        let Ok(win) = compute_window(pad, Hw::new(h, w), Hw::new(kh, kw), stride, Hw::square(1)) else { continue };
        let c = match d.range(0, 2) {
            0 => d.range(1, 8),
            1 => 64 * d.range(1, 3) + d.range(0, 1),
            _ => d.range(1, 200),
        };
        let n = d.range(1, 2);
        let activation = if d.range(0, 1) == 0 { ActivationRange::INT8 } else { d.activation() };
        let p = PoolParams {
            input: Dims4::new(n, h, w, c),
            output: Dims4::new(n, win.output.h, win.output.w, c),
            filter: Hw::new(kh, kw),
            stride,
            padding: win.padding,
            activation,
        };
        let x = extreme_or_uniform(&mut d, n * h * w * c);
        compare_edge(
            &format!("avg pool {p:?}"),
            p.output.checked_len(),
            |y| avg_pool_s8_reference(&p, &x, y),
            |y| avg_pool_s8(&p, &x, y),
        );
        compare_edge(
            &format!("max pool {p:?}"),
            p.output.checked_len(),
            |y| max_pool_s8_reference(&p, &x, y),
            |y| max_pool_s8(&p, &x, y),
        );
        checked += 1;
    }
    assert!(checked > 200, "{checked}");
}

/// The runtime's input quantization (`QTensor.fromFloat`, the path `run` takes for floats: the
/// TFLite convention prepared once per tensor) is `QParams::quantize_one` for every value: ties
/// (`k + 0.5` of both signs), values far outside the range, tiny and huge scales, int8 and int16.
#[wasm_bindgen_test]
fn input_quantization_matches_quantize_one() {
    use microquant::quant::{Convention, QParams, QuantDType};
    use microquant_wasm::QTensor;
    let mut d = Draw(SplitMix64::new(0x7175_616e));
    let mut checked = 0;
    for case in 0..200 {
        let (dtype, name) = if case % 3 == 0 { (QuantDType::Int16, "int16") } else { (QuantDType::Int8, "int8") };
        let scale = match case % 4 {
            0 => 1.0 / 256.0,
            1 => 1e-7,
            2 => 3e4,
            _ => 1e-3 + (d.0.next_u64() % 100_000) as f32 * 1e-5,
        };
        let zp = if dtype == QuantDType::Int16 { 0 } else { d.i8() };
        let p = QParams::new(scale, zp, dtype).unwrap().with_convention(Convention::TfLite);
        let x: Vec<f32> = (0..257)
            .map(|i| match i % 5 {
                0 => ((d.range(0, 600) as f32) - 300.0 + 0.5) * scale, // ties (as far as f32 allows)
                1 => (d.0.next_u64() as i64 as f32) * 1e-12,
                2 => f32::from_bits((d.0.next_u64() as u32) & 0x7f7f_ffff) * if i % 2 == 0 { 1.0 } else { -1.0 },
                _ => ((d.0.next_u64() % 2_000_000) as f32 - 1e6) * scale * 1e-3,
            })
            .collect();
        let t = QTensor::from_float(
            js_sys::Float32Array::from(x.as_slice()).into(),
            js_sys::Array::of1(&(x.len() as u32).into()).into(),
            scale as f64,
            zp as f64,
            Some(name.into()),
        )
        .unwrap();
        let got: Vec<i32> = match dtype {
            QuantDType::Int16 => js_sys::Int16Array::from(t.data()).to_vec().into_iter().map(i32::from).collect(),
            _ => js_sys::Int8Array::from(t.data()).to_vec().into_iter().map(i32::from).collect(),
        };
        let want: Vec<i32> = x.iter().map(|&v| p.quantize_one(v)).collect();
        assert_eq!(want, got, "case {case}: scale {scale} zero point {zp} {name}");
        checked += x.len();
    }
    assert!(checked > 50_000);
}

/// int8 ADD's SIMD path (equal shapes) against the reference kernel on random scales, zero
/// points, clamps and lengths (1 to 300: whole 16-element steps and every tail length), with
/// equal input scales every fifth case (ResNet's residual adds).
#[wasm_bindgen_test]
fn add_s8_simd_matches_reference_on_random_cases() {
    use microquant::kernels::add::{AddParams, add_s8, add_s8_reference};
    use microquant::kernels::tensor::TensorQuant;
    let mut d = Draw(SplitMix64::new(0x6164_6473));
    let mut checked = 0;
    for case in 0..400 {
        let mut scale = || 0.001 + d.range(0, 9_999) as f32 * 1e-4;
        let (s1, s2, so) = (scale(), scale(), scale() * 2.0);
        let s2 = if case % 5 == 0 { s1 } else { s2 };
        let (q1, q2, qo) = (TensorQuant::new(s1, d.i8()), TensorQuant::new(s2, d.i8()), TensorQuant::new(so, d.i8()));
        let act = if case % 3 == 0 { ActivationRange::INT8 } else { d.activation() };
        let n = d.range(1, 300);
        let Ok(p) = AddParams::prepare_s8(q1, q2, qo, act, &[n], &[n], Rounding::Double) else { continue };
        let (x1, x2) = (d.bytes(n), d.bytes(n));
        let (mut want, mut got) = (vec![0i8; n], vec![0i8; n]);
        add_s8_reference(&p, &x1, &x2, &mut want).unwrap();
        add_s8(&p, &x1, &x2, &mut got).unwrap();
        assert_eq!(want, got, "case {case}: n {n} scales {s1} {s2} {so}");
        checked += n;
    }
    assert!(checked > 40_000, "{checked} values checked");
}

// --- elementwise, activation, softmax and data-movement kernels -----------------------------------
// Every case of add, add_16x8, mul, softmax, softmax_16x8, logistic, tanh, hard_swish,
// concatenation, pad, mean, reshape and transpose, both rounding modes: Double against TFLite
// Micro, Single against the TFLite interpreter (only int8 ADD has a fast path, for equal shapes:
// the others run the reference).

mod elementwise {
    use microquant::kernels::add::{AddParams, add_s8, add_s16};
    use microquant::kernels::common::FusedActivation;
    use microquant::kernels::concat::{ConcatInput, ConcatParams, concat_s8};
    use microquant::kernels::hard_swish::{HardSwishParams, hard_swish_s8};
    use microquant::kernels::logistic::{LogisticParams, logistic_s8};
    use microquant::kernels::mul::{MulParams, mul_s8};
    use microquant::kernels::pad::{PadParams, pad_s8};
    use microquant::kernels::reduce::{MeanParams, mean_s8, mean_scratch_len};
    use microquant::kernels::reshape::{reshape_output_shape, reshape_s8};
    use microquant::kernels::softmax::{SoftmaxParams, SoftmaxS16Luts, SoftmaxS16Params, softmax_s8, softmax_s16};
    use microquant::kernels::tanh::{TanhParams, tanh_s8};
    use microquant::kernels::tensor::TensorQuant;
    use microquant::kernels::transpose::{TransposeParams, transpose_s8};
    use microquant::kernels::{ActivationRange, Rounding};
    use microquant_tests::golden::assert_bit_exact;
    use microquant_tests::kernels::{self, Activation, BinaryCase, KernelCase, KernelFile, Oracle, UnaryCase};
    use wasm_bindgen_test::wasm_bindgen_test;

    const MODES: [(Rounding, Oracle); 2] = [(Rounding::Double, Oracle::Tflm), (Rounding::Single, Oracle::TfliteRef)];

    fn fused(a: Activation) -> FusedActivation {
        match a {
            Activation::None => FusedActivation::None,
            Activation::Relu => FusedActivation::Relu,
            Activation::Relu6 => FusedActivation::Relu6,
            Activation::ReluN1To1 => FusedActivation::ReluN1To1,
        }
    }

    fn tq(scale: f32, zero_point: i32) -> TensorQuant {
        TensorQuant::new(scale, zero_point)
    }

    /// Every case of a binary-op file in both modes; asserts that every element of the file was
    /// compared in each mode.
    fn binary_file(
        file: KernelFile<BinaryCase>,
        dtype: ActivationRange,
        mut run: impl FnMut(&BinaryCase, Rounding, ActivationRange, Oracle) -> usize,
    ) {
        assert!(!file.cases.is_empty());
        let mut checked = [0usize; 2];
        for c in &file.cases {
            let act =
                ActivationRange::from_fused(fused(c.activation), c.output_scale, c.output_zero_point, dtype).unwrap();
            for (i, &(rounding, oracle)) in MODES.iter().enumerate() {
                checked[i] += run(c, rounding, act, oracle);
            }
        }
        assert_eq!(checked, [file.stats.elements; 2], "{}: elements checked", file.op);
    }

    #[wasm_bindgen_test]
    fn add_s8_matches_both_oracles() {
        binary_file(kernels::add_file(), ActivationRange::INT8, |c, rounding, act, oracle| {
            let (q1, q2, qo) = (
                tq(c.input1_scale, c.input1_zero_point),
                tq(c.input2_scale, c.input2_zero_point),
                tq(c.output_scale, c.output_zero_point),
            );
            let p = AddParams::prepare_s8(q1, q2, qo, act, &c.input1.shape, &c.input2.shape, rounding).unwrap();
            let e = c.expected(oracle);
            let mut out = vec![0i8; e.len()];
            add_s8(&p, &c.input1.i8(), &c.input2.i8(), &mut out).unwrap();
            assert_bit_exact(&format!("{} ({rounding:?} vs {oracle:?})", c.name), &e.i8(), &out)
        });
    }

    #[wasm_bindgen_test]
    fn add_s16_matches_both_oracles() {
        binary_file(kernels::add_16x8_file(), ActivationRange::INT16, |c, rounding, act, oracle| {
            let (q1, q2, qo) = (
                tq(c.input1_scale, c.input1_zero_point),
                tq(c.input2_scale, c.input2_zero_point),
                tq(c.output_scale, c.output_zero_point),
            );
            let p = AddParams::prepare_s16(q1, q2, qo, act, &c.input1.shape, &c.input2.shape, rounding).unwrap();
            let e = c.expected(oracle);
            let mut out = vec![0i16; e.len()];
            add_s16(&p, &c.input1.i16(), &c.input2.i16(), &mut out).unwrap();
            assert_bit_exact(&format!("{} ({rounding:?} vs {oracle:?})", c.name), &e.i16(), &out)
        });
    }

    #[wasm_bindgen_test]
    fn mul_s8_matches_both_oracles() {
        binary_file(kernels::mul_file(), ActivationRange::INT8, |c, rounding, act, oracle| {
            let (q1, q2, qo) = (
                tq(c.input1_scale, c.input1_zero_point),
                tq(c.input2_scale, c.input2_zero_point),
                tq(c.output_scale, c.output_zero_point),
            );
            let p = MulParams::prepare_s8(q1, q2, qo, act, &c.input1.shape, &c.input2.shape, rounding).unwrap();
            let e = c.expected(oracle);
            let mut out = vec![0i8; e.len()];
            mul_s8(&p, &c.input1.i8(), &c.input2.i8(), &mut out).unwrap();
            assert_bit_exact(&format!("{} ({rounding:?} vs {oracle:?})", c.name), &e.i8(), &out)
        });
    }

    #[wasm_bindgen_test]
    fn softmax_s8_matches_both_oracles() {
        let file = kernels::softmax_file();
        assert!(!file.cases.is_empty());
        let mut checked = [0usize; 2];
        for c in &file.cases {
            let depth = *c.input.shape.last().unwrap();
            for (i, &(rounding, oracle)) in MODES.iter().enumerate() {
                let p = SoftmaxParams::prepare_s8(
                    tq(c.input_scale, c.input_zero_point),
                    tq(c.output_scale, c.output_zero_point),
                    c.beta,
                    depth,
                    rounding,
                )
                .unwrap();
                let e = c.expected(oracle);
                let mut out = vec![0i8; e.len()];
                softmax_s8(&p, &c.input.i8(), &mut out).unwrap();
                checked[i] += assert_bit_exact(&format!("{} ({rounding:?} vs {oracle:?})", c.name), &e.i8(), &out);
            }
        }
        assert_eq!(checked, [file.stats.elements; 2]);
    }

    #[wasm_bindgen_test]
    fn softmax_s16_matches_both_oracles() {
        let file = kernels::softmax_16x8_file();
        assert!(!file.cases.is_empty());
        let luts = [SoftmaxS16Luts::new(Rounding::Double), SoftmaxS16Luts::new(Rounding::Single)];
        let mut checked = [0usize; 2];
        for c in &file.cases {
            let depth = *c.input.shape.last().unwrap();
            for (i, &(rounding, oracle)) in MODES.iter().enumerate() {
                let p = SoftmaxS16Params::prepare(
                    tq(c.input_scale, c.input_zero_point),
                    tq(c.output_scale, c.output_zero_point),
                    c.beta,
                    depth,
                    rounding,
                    &luts[i],
                )
                .unwrap();
                let e = c.expected(oracle);
                let mut out = vec![0i16; e.len()];
                softmax_s16(&p, &c.input.i16(), &mut out).unwrap();
                checked[i] += assert_bit_exact(&format!("{} ({rounding:?} vs {oracle:?})", c.name), &e.i16(), &out);
            }
        }
        assert_eq!(checked, [file.stats.elements; 2]);
    }

    type Unary = fn(&UnaryCase, TensorQuant, TensorQuant, Rounding, &mut [i8]) -> Result<(), microquant::Error>;

    fn unary_file(file: KernelFile<UnaryCase>, run: Unary) {
        assert!(!file.cases.is_empty());
        let mut checked = [0usize; 2];
        for c in &file.cases {
            let (i_q, o_q) = (tq(c.input_scale, c.input_zero_point), tq(c.output_scale, c.output_zero_point));
            for (i, &(rounding, oracle)) in MODES.iter().enumerate() {
                let e = c.expected(oracle);
                let mut out = vec![0i8; e.len()];
                run(c, i_q, o_q, rounding, &mut out).unwrap();
                checked[i] += assert_bit_exact(&format!("{} ({rounding:?} vs {oracle:?})", c.name), &e.i8(), &out);
            }
        }
        assert_eq!(checked, [file.stats.elements; 2]);
    }

    #[wasm_bindgen_test]
    fn logistic_s8_matches_both_oracles() {
        unary_file(kernels::logistic_file(), |c, i, o, r, out| {
            logistic_s8(&LogisticParams::prepare_s8(i, o, r)?, &c.input.i8(), out)
        });
    }

    #[wasm_bindgen_test]
    fn tanh_s8_matches_both_oracles() {
        unary_file(kernels::tanh_file(), |c, i, o, r, out| {
            tanh_s8(&TanhParams::prepare_s8(i, o, r)?, &c.input.i8(), out)
        });
    }

    #[wasm_bindgen_test]
    fn hard_swish_s8_matches_both_oracles() {
        unary_file(kernels::hard_swish_file(), |c, i, o, r, out| {
            hard_swish_s8(&HardSwishParams::prepare_s8(i, o, r)?, &c.input.i8(), out)
        });
    }

    #[wasm_bindgen_test]
    fn concatenation_s8_matches_both_oracles() {
        let file = kernels::concatenation_file();
        assert!(!file.cases.is_empty());
        let mut checked = [0usize; 2];
        for c in &file.cases {
            let out_q = tq(c.output_scale, c.output_zero_point);
            let rank = c.expected_tflm.shape.len() as i32;
            let axis = if c.axis < 0 { c.axis + rank } else { c.axis } as usize;
            let metas: Vec<ConcatInput> = c
                .inputs
                .iter()
                .zip(c.input_scales.iter().zip(&c.input_zero_points))
                .map(|(t, (&s, &z))| ConcatInput::prepare_s8(t.shape[axis], tq(s, z), out_q).unwrap())
                .collect();
            let p = ConcatParams::new(&c.expected_tflm.shape, c.axis, &metas).unwrap();
            let data: Vec<Vec<i8>> = c.inputs.iter().map(|t| t.i8()).collect();
            let slices: Vec<&[i8]> = data.iter().map(|v| &v[..]).collect();
            for (i, &(rounding, oracle)) in MODES.iter().enumerate() {
                let e = c.expected(oracle);
                let mut out = vec![0i8; e.len()];
                concat_s8(&p, &slices, &mut out).unwrap();
                checked[i] += assert_bit_exact(&format!("{} ({rounding:?} vs {oracle:?})", c.name), &e.i8(), &out);
            }
        }
        assert_eq!(checked, [file.stats.elements; 2]);
    }

    #[wasm_bindgen_test]
    fn pad_s8_matches_both_oracles() {
        let file = kernels::pad_file();
        assert!(!file.cases.is_empty());
        let mut checked = [0usize; 2];
        for c in &file.cases {
            let p = PadParams::prepare_s8(&c.input.shape, &c.paddings, tq(c.output_scale, c.output_zero_point), None)
                .unwrap();
            for (i, &(rounding, oracle)) in MODES.iter().enumerate() {
                let e = c.expected(oracle);
                let mut out = vec![0i8; e.len()];
                pad_s8(&p, &c.input.i8(), &mut out).unwrap();
                checked[i] += assert_bit_exact(&format!("{} ({rounding:?} vs {oracle:?})", c.name), &e.i8(), &out);
            }
        }
        assert_eq!(checked, [file.stats.elements; 2]);
    }

    #[wasm_bindgen_test]
    fn mean_s8_matches_both_oracles() {
        let file = kernels::mean_file();
        assert!(!file.cases.is_empty());
        let mut checked = [0usize; 2];
        for c in &file.cases {
            let (iq, oq) = (tq(c.input_scale, c.input_zero_point), tq(c.output_scale, c.output_zero_point));
            let scratch_len = mean_scratch_len(&c.input.shape, &c.axis).unwrap();
            for (i, &(rounding, oracle)) in MODES.iter().enumerate() {
                let p = MeanParams::prepare_s8(&c.input.shape, &c.axis, iq, oq, rounding).unwrap();
                let e = c.expected(oracle);
                let mut out = vec![0i8; e.len()];
                let mut scratch = vec![0i32; scratch_len];
                mean_s8(&p, &c.input.i8(), &mut out, &mut scratch).unwrap();
                checked[i] += assert_bit_exact(&format!("{} ({rounding:?} vs {oracle:?})", c.name), &e.i8(), &out);
            }
        }
        assert_eq!(checked, [file.stats.elements; 2]);
    }

    #[wasm_bindgen_test]
    fn reshape_s8_matches_both_oracles() {
        let file = kernels::reshape_file();
        assert!(!file.cases.is_empty());
        let mut checked = [0usize; 2];
        for c in &file.cases {
            let shape = reshape_output_shape(c.input.len(), &c.new_shape).unwrap();
            for (i, &(rounding, oracle)) in MODES.iter().enumerate() {
                let e = c.expected(oracle);
                assert_eq!(shape.dims(), &e.shape[..], "{}: output shape", c.name);
                let mut out = vec![0i8; e.len()];
                reshape_s8(&c.input.i8(), &mut out).unwrap();
                checked[i] += assert_bit_exact(&format!("{} ({rounding:?} vs {oracle:?})", c.name), &e.i8(), &out);
            }
        }
        assert_eq!(checked, [file.stats.elements; 2]);
    }

    #[wasm_bindgen_test]
    fn transpose_s8_matches_both_oracles() {
        let file = kernels::transpose_file();
        assert!(!file.cases.is_empty());
        let mut checked = [0usize; 2];
        for c in &file.cases {
            let p = TransposeParams::new(&c.input.shape, &c.perm).unwrap();
            for (i, &(rounding, oracle)) in MODES.iter().enumerate() {
                let e = c.expected(oracle);
                let mut out = vec![0i8; e.len()];
                transpose_s8(&p, &c.input.i8(), &mut out).unwrap();
                checked[i] += assert_bit_exact(&format!("{} ({rounding:?} vs {oracle:?})", c.name), &e.i8(), &out);
            }
        }
        assert_eq!(checked, [file.stats.elements; 2]);
    }
}
