//! The kernels in wasm (built with `simd128`, see `.cargo/config.toml`), against every golden
//! case of `tests/golden/kernels/` (TFLite Micro and the TFLite interpreter's reference kernels),
//! bit for bit: the golden tests of `microquant_tests::oracle` (conv, depthwise conv and fully
//! connected through the dispatched int8 kernels, i.e. the wasm SIMD fast paths, and the reference
//! kernels, their 16x8 kernels, pooling, add, mul, softmax, logistic, tanh, hard-swish,
//! concatenation, pad, mean, reshape and transpose), instantiated for wasm. Then random shapes: the SIMD paths against the reference. Runs under
//! `wasm-pack test --node wasm` and, with `WASM_BINDGEN_USE_BROWSER=1`, `wasm-pack test
//! --headless --chrome wasm`.
#![cfg(target_arch = "wasm32")]

use microquant::kernels::common::{Hw, Padding, Window, compute_window};
use microquant::kernels::conv::{ConvParams, conv_s8, conv_s8_reference, conv_s8_scratch_len};
use microquant::kernels::depthwise_conv::{DepthwiseConvParams, depthwise_conv_s8, depthwise_conv_s8_reference};
use microquant::kernels::fully_connected::{
    FullyConnectedParams, FullyConnectedPerChannelQuant, fully_connected_per_channel_s8,
    fully_connected_per_channel_s8_reference,
};
use microquant::kernels::pooling::{
    PoolParams, avg_pool_s8, avg_pool_s8_reference, max_pool_s8, max_pool_s8_reference,
};
use microquant::kernels::{ActivationRange, Dims4, PerChannelQuant, Rounding};
use microquant_tests::golden::assert_bit_exact;
use microquant_tests::oracle::{Std, golden};
use microquant_tests::rng::SplitMix64;
use wasm_bindgen_test::wasm_bindgen_test;

#[wasm_bindgen_test]
#[allow(clippy::assertions_on_constants)] // checks the build configuration
fn simd128_is_on() {
    // The fast paths under test are the SIMD ones only if the crate was built with simd128.
    assert!(cfg!(target_feature = "simd128"), "build with -C target-feature=+simd128 (.cargo/config.toml)");
}

// --- the golden cases: microquant_tests::oracle, instantiated for wasm ----------------------------
// Every case of every file of tests/golden/kernels/, in both rounding modes, through every kernel
// path (the dispatched int8 conv, depthwise and fully connected kernels are the wasm SIMD fast
// paths; only int8 ADD of equal shapes has a fast path among the elementwise kernels).

microquant_tests::conv_golden_tests!(mod conv; #[wasm_bindgen_test] target Std; files golden);
microquant_tests::depthwise_golden_tests!(mod depthwise; #[wasm_bindgen_test] target Std; files golden);
microquant_tests::fully_connected_golden_tests!(mod fully_connected; #[wasm_bindgen_test] target Std; files golden);
microquant_tests::pool_golden_tests!(mod pooling; #[wasm_bindgen_test] target Std; files golden);
microquant_tests::binary_golden_tests!(mod binary; #[wasm_bindgen_test] target Std; files golden);
microquant_tests::softmax_golden_tests!(mod softmax; #[wasm_bindgen_test] target Std; files golden);
microquant_tests::activation_golden_tests!(mod activation; #[wasm_bindgen_test] target Std; files golden);
microquant_tests::leaky_relu_golden_tests!(mod leaky_relu; #[wasm_bindgen_test] target Std; files golden);
microquant_tests::elementwise_unary_golden_tests!(mod elementwise_unary; #[wasm_bindgen_test] target Std; files golden);
microquant_tests::shape_golden_tests!(mod shape; #[wasm_bindgen_test] target Std; files golden);
microquant_tests::spatial_golden_tests!(mod spatial; #[wasm_bindgen_test] target Std; files golden);
microquant_tests::lstm_golden_tests!(mod recurrent; #[wasm_bindgen_test] target Std; files golden);
microquant_tests::transpose_conv_golden_tests!(mod transpose_conv; #[wasm_bindgen_test] target Std; files golden);
microquant_tests::batch_matmul_golden_tests!(mod batch_matmul; #[wasm_bindgen_test] target Std; files golden);

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
    use microquant::kernels::tensor::PerTensorQuant;
    let mut d = Draw(SplitMix64::new(0x6164_6473));
    let mut checked = 0;
    for case in 0..400 {
        let mut scale = || 0.001 + d.range(0, 9_999) as f32 * 1e-4;
        let (s1, s2, so) = (scale(), scale(), scale() * 2.0);
        let s2 = if case % 5 == 0 { s1 } else { s2 };
        let (q1, q2, qo) =
            (PerTensorQuant::new(s1, d.i8()), PerTensorQuant::new(s2, d.i8()), PerTensorQuant::new(so, d.i8()));
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
