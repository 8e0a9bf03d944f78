//! The int8 / 16x8 kernels' device entry points (each with its prepare functions), by family.

use core::hint::black_box;

use crate::bb;

/// Conv, depthwise conv, fully connected and pooling kernels and their prepare functions.
#[inline(never)]
pub(crate) fn conv_fc_pool_kernels() {
    use microquant::kernels::common::{FusedActivation, Hw, Padding, compute_window, per_channel_multipliers};
    use microquant::kernels::conv::{ConvParams, conv_s8, conv_s8_scratch_len, conv_s16};
    use microquant::kernels::depthwise_conv::{
        DepthwiseConvParams, depthwise_conv_s8, depthwise_conv_s8_scratch_len, depthwise_conv_s16,
    };
    use microquant::kernels::fully_connected::*;
    use microquant::kernels::pooling::{PoolParams, avg_pool_s8, avg_pool_s16, max_pool_s8, max_pool_s16};
    use microquant::kernels::{ActivationRange, Dims4, PerChannelQuant, Rounding};
    let bb = black_box::<usize>;
    let hw = |h, w| Hw::new(bb(h), bb(w));
    let dims = |n, h, w, c| Dims4::new(bb(n), bb(h), bb(w), bb(c));
    let rounding = if black_box(true) { Rounding::Double } else { Rounding::Single };
    let act = ActivationRange::from_fused(
        black_box(FusedActivation::Relu6),
        black_box(0.05),
        black_box(-3),
        ActivationRange::INT8,
    )
    .unwrap_or(ActivationRange::INT8);
    let window = compute_window(black_box(Padding::Same), hw(6, 6), hw(3, 3), hw(1, 1), hw(1, 1));
    let padding = window.map(|w| w.padding).unwrap_or_default();
    let (mut mult, mut shift) = ([0i32; 4], [0i32; 4]);
    let _ = black_box(per_channel_multipliers(
        black_box(0.02),
        black_box(&[0.01, 0.02][..]),
        black_box(0.1),
        &mut mult,
        &mut shift,
    ));
    let quant = PerChannelQuant { multiplier: black_box(&mult[..]), shift: black_box(&shift[..]) };
    let input: &[i8] = black_box(&[1; 144]);
    let input16: &[i16] = black_box(&[1; 144]);
    let filter: &[i8] = black_box(&[1; 144]);
    let mut out = [0i8; 144];
    let mut out16 = [0i16; 144];
    let conv = ConvParams {
        input: dims(1, 6, 6, 4),
        filter: dims(4, 3, 3, 4),
        output: dims(1, 6, 6, 4),
        stride: hw(1, 1),
        dilation: hw(1, 1),
        padding,
        input_offset: black_box(3),
        output_offset: black_box(-2),
        activation: act,
        rounding,
    };
    let mut scratch = [0u8; 1024];
    let scratch_len = conv_s8_scratch_len(&conv).min(scratch.len());
    let _ = black_box(conv_s8(
        &conv,
        &quant,
        input,
        filter,
        black_box(Some(&[7i32; 4][..])),
        &mut out,
        black_box(&mut scratch[..scratch_len]),
    ));
    let _ = black_box(conv_s16(&conv, &quant, input16, filter, black_box(Some(&[7i64; 4][..])), &mut out16));
    let _ = black_box(conv_s16(&conv, &quant, input16, filter, black_box(Some(&[7i32; 4][..])), &mut out16));
    let dw = DepthwiseConvParams {
        input: dims(1, 6, 6, 2),
        filter: hw(3, 3),
        output: dims(1, 6, 6, 4),
        depth_multiplier: bb(2),
        stride: hw(1, 1),
        dilation: hw(1, 1),
        padding,
        input_offset: black_box(3),
        output_offset: black_box(-2),
        activation: act,
        rounding,
    };
    let _ = black_box(depthwise_conv_s8(
        &dw,
        &quant,
        input,
        filter,
        black_box(Some(&[7i32; 4][..])),
        &mut out,
        black_box(&mut scratch[..depthwise_conv_s8_scratch_len(&dw).min(1024)]),
    ));
    let _ = black_box(depthwise_conv_s16(&dw, &quant, input16, filter, black_box(Some(&[7i64; 4][..])), &mut out16));
    let _ = black_box(depthwise_conv_s16(&dw, &quant, input16, filter, black_box(Some(&[7i32; 4][..])), &mut out16));
    let fc = FullyConnectedParams {
        batches: bb(2),
        input_depth: bb(8),
        output_depth: bb(4),
        input_offset: black_box(3),
        output_offset: black_box(-2),
        activation: act,
        rounding,
    };
    let (mut fc_mult, mut fc_shift, mut exact) = ([0i32; 4], [0i32; 4], [ExactMultiplier::default(); 4]);
    let _ = black_box(fully_connected_per_channel_multipliers(
        black_box(0.02),
        black_box(&[0.01, 0.02, 0.03, 0.04][..]),
        black_box(0.1),
        &mut fc_mult,
        &mut fc_shift,
        &mut exact,
    ));
    let fixed = PerChannelQuant { multiplier: black_box(&fc_mult[..]), shift: black_box(&fc_shift[..]) };
    let pc = FullyConnectedPerChannelQuant { fixed, exact: black_box(&exact[..]) };
    if let Ok(q) = fully_connected_multiplier(black_box(0.02), black_box(0.01), black_box(0.1)) {
        let _ = black_box(fully_connected_s8(
            &fc,
            &q,
            input,
            filter,
            black_box(Some(&[7i32; 4][..])),
            &mut out,
            black_box(&mut scratch[..fully_connected_s8_scratch_len(&fc).min(1024)]),
        ));
        let _ = black_box(fully_connected_s16(&fc, &q, input16, filter, black_box(Some(&[7i64; 4][..])), &mut out16));
    }
    let _ = black_box(fully_connected_per_channel_s8(
        &fc,
        &pc,
        input,
        filter,
        black_box(None),
        &mut out,
        black_box(&mut scratch[..]),
    ));
    let _ =
        black_box(fully_connected_per_channel_s16(&fc, &pc, input16, filter, black_box(None::<&[i64]>), &mut out16));
    let _ = black_box(fully_connected_per_channel_s16(
        &fc,
        &pc,
        input16,
        filter,
        black_box(Some(&[7i32; 4][..])),
        &mut out16,
    ));
    let pool = PoolParams {
        input: dims(1, 6, 6, 4),
        output: dims(1, 3, 3, 4),
        filter: hw(2, 2),
        stride: hw(2, 2),
        padding: black_box(Default::default()),
        activation: act,
    };
    let _ = black_box(max_pool_s8(&pool, input, &mut out));
    let _ = black_box(avg_pool_s8(&pool, input, &mut out));
    let _ = black_box(max_pool_s16(&pool, input16, &mut out16));
    let _ = black_box(avg_pool_s16(&pool, input16, &mut out16));
    black_box((&out, &out16));
}

/// The two-input elementwise kernels beyond ADD / MUL (SUB, MINIMUM, MAXIMUM, PRELU, DIV,
/// SQUARED_DIFFERENCE) and their prepare
/// functions.
#[inline(never)]
pub(crate) fn binary_kernels() {
    use microquant::kernels::div::{DivParams, div_s8};
    use microquant::kernels::minimum_maximum::{MinMaxOp, MinMaxParams, min_max_s8, min_max_s16};
    use microquant::kernels::prelu::{PreluParams, prelu_s8, prelu_s16};
    use microquant::kernels::squared_difference::{SquaredDifferenceParams, squared_difference_s8};
    use microquant::kernels::sub::{SubParams, sub_s8, sub_s16};
    use microquant::kernels::tensor::PerTensorQuant;
    use microquant::kernels::{ActivationRange, Rounding};
    let r = if black_box(true) { Rounding::Double } else { Rounding::Single };
    let q = |s: f32, z: i32| PerTensorQuant::new(black_box(s), black_box(z));
    let shape_a: &[usize] = black_box(&[2, 3, 4]);
    let shape_b: &[usize] = black_box(&[3, 1]);
    let a: &[i8] = black_box(&[3; 24]);
    let b: &[i8] = black_box(&[-5; 3]);
    let a16: &[i16] = black_box(&[300; 24]);
    let b16: &[i16] = black_box(&[-500; 3]);
    let mut out = [0i8; 64];
    let mut out16 = [0i16; 64];
    let act = black_box(ActivationRange::INT8);
    if let Ok(p) = SubParams::prepare_s8(q(0.1, 3), q(0.2, -7), q(0.3, 1), act, shape_a, shape_b, r) {
        let _ = black_box(sub_s8(&p, a, b, &mut out[..24]));
    }
    if let Ok(p) =
        SubParams::prepare_s16(q(0.001, 0), q(0.002, 0), q(0.003, 0), ActivationRange::INT16, shape_a, shape_b, r)
    {
        let _ = black_box(sub_s16(&p, a16, b16, &mut out16[..24]));
    }
    let op = if black_box(true) { MinMaxOp::Minimum } else { MinMaxOp::Maximum };
    if let Ok(p) = MinMaxParams::prepare(op, q(0.1, 3), q(0.1, 3), q(0.1, 3), shape_a, shape_b) {
        let _ = black_box(min_max_s8(&p, a, b, &mut out[..24]));
        let _ = black_box(min_max_s16(&p, a16, b16, &mut out16[..24]));
    }
    if let Ok(p) = DivParams::prepare_s8(q(0.1, 3), q(0.2, -7), q(0.3, 1), act, shape_a, shape_b, r) {
        let _ = black_box(div_s8(&p, a, b, &mut out[..24]));
    }
    if let Ok(p) = SquaredDifferenceParams::prepare_s8(q(0.1, 3), q(0.2, -7), q(0.3, 1), shape_a, shape_b, r) {
        let _ = black_box(squared_difference_s8(&p, a, b, &mut out[..24]));
    }
    if let Ok(p) = PreluParams::prepare_s8(q(0.1, 3), q(0.01, -7), q(0.08, 1), shape_a, shape_b, r) {
        let _ = black_box(prelu_s8(&p, a, b, &mut out[..24]));
    }
    if let Ok(p) = PreluParams::prepare_s16(q(0.001, 0), q(0.01, 2), q(0.002, 0), shape_a, shape_b, r) {
        let _ = black_box(prelu_s16(&p, a16, b, &mut out16[..24]));
    }
    black_box((&out, &out16));
}

/// Elementwise, activation, softmax and data-movement kernels and their prepare functions (both
/// rounding modes, so the float table generation is covered too).
#[inline(never)]
pub(crate) fn elementwise_activation_shape_kernels() {
    use microquant::kernels::add::{AddParams, add_s8, add_s16};
    use microquant::kernels::concat::{ConcatInput, ConcatParams, concat, concat_s8};
    use microquant::kernels::hard_swish::{HardSwishParams, hard_swish_s8};
    use microquant::kernels::logistic::{LogisticParams, logistic_s8};
    use microquant::kernels::mul::{MulParams, mul_s8, mul_s16};
    use microquant::kernels::pad::{PadParams, pad_s8, pad_s16};
    use microquant::kernels::reduce::{MeanParams, mean_s8, mean_s16, mean_scratch_len};
    use microquant::kernels::reshape::{reshape_output_shape, reshape_s8};
    use microquant::kernels::softmax::*;
    use microquant::kernels::tanh::{TanhParams, tanh_s8};
    use microquant::kernels::tensor::PerTensorQuant;
    use microquant::kernels::transpose::{TransposeParams, transpose_s8, transpose_s16, transpose_s32};
    use microquant::kernels::{ActivationRange, Rounding};
    let rounding = if black_box(true) { Rounding::Double } else { Rounding::Single };
    let other = if black_box(false) { Rounding::Double } else { Rounding::Single };
    let q = |s: f32, z: i32| PerTensorQuant::new(black_box(s), black_box(z));
    let shape_a: &[usize] = black_box(&[2, 3, 4]);
    let shape_b: &[usize] = black_box(&[3, 1]);
    let a: &[i8] = black_box(&[3; 24]);
    let b: &[i8] = black_box(&[-5; 3]);
    let a16: &[i16] = black_box(&[300; 24]);
    let b16: &[i16] = black_box(&[-500; 3]);
    let mut out = [0i8; 64];
    let mut out16 = [0i16; 64];
    let mut out32 = [0i32; 64];
    let act = black_box(ActivationRange::INT8);
    for r in [rounding, other] {
        if let Ok(p) = AddParams::prepare_s8(q(0.1, 3), q(0.2, -7), q(0.3, 1), act, shape_a, shape_b, r) {
            let _ = black_box(add_s8(&p, a, b, &mut out[..24]));
        }
        if let Ok(p) =
            AddParams::prepare_s16(q(0.001, 0), q(0.002, 0), q(0.003, 0), ActivationRange::INT16, shape_a, shape_b, r)
        {
            let _ = black_box(add_s16(&p, a16, b16, &mut out16[..24]));
        }
        if let Ok(p) = MulParams::prepare_s8(q(0.1, 3), q(0.2, -7), q(0.3, 1), act, shape_a, shape_b, r) {
            let _ = black_box(mul_s8(&p, a, b, &mut out[..24]));
        }
        if let Ok(p) =
            MulParams::prepare_s16(q(0.001, 0), q(0.002, 0), q(0.003, 0), ActivationRange::INT16, shape_a, shape_b, r)
        {
            let _ = black_box(mul_s16(&p, a16, b16, &mut out16[..24]));
        }
        if let Ok(p) = SoftmaxParams::prepare_s8(q(0.1, 3), q(1.0 / 256.0, -128), black_box(1.0), bb(4), r) {
            let _ = black_box(softmax_s8(&p, a, &mut out[..24]));
        }
        if let Ok(p) = SoftmaxParams::prepare_s8_s16(q(0.1, 3), q(1.0 / 65536.0, -32768), black_box(1.0), bb(4), r) {
            let _ = black_box(softmax_s8_s16(&p, a, &mut out16[..24]));
        }
        let luts = SoftmaxS16Luts::new(r);
        if let Ok(p) = SoftmaxS16Params::prepare(q(0.001, 0), q(1.0 / 32768.0, 0), black_box(1.0), bb(4), r, &luts) {
            let _ = black_box(softmax_s16(&p, a16, &mut out16[..24]));
        }
        if let Ok(p) = LogisticParams::prepare_s8(q(0.1, 3), q(1.0 / 256.0, -128), r) {
            let _ = black_box(logistic_s8(&p, a, &mut out[..24]));
        }
        if let Ok(p) = TanhParams::prepare_s8(q(0.1, 3), q(1.0 / 128.0, 0), r) {
            let _ = black_box(tanh_s8(&p, a, &mut out[..24]));
        }
        if let Ok(p) = HardSwishParams::prepare_s8(q(0.1, 3), q(0.05, -10), r) {
            let _ = black_box(hard_swish_s8(&p, a, &mut out[..24]));
        }
        if let Ok(p) = MeanParams::prepare_s8(shape_a, black_box(&[1, -1][..]), q(0.1, 3), q(0.05, -10), r) {
            let mut scratch = [0i32; 8];
            let n = mean_scratch_len(shape_a, black_box(&[1, -1][..])).unwrap_or(0);
            let _ = black_box(mean_s8(&p, a, &mut out[..n.min(64)], &mut scratch));
            let _ = black_box(mean_s16(&p, a16, &mut out16[..n.min(64)], &mut scratch));
        }
    }
    let inputs = [
        ConcatInput::copy(bb(2)),
        ConcatInput::prepare_s8(bb(1), q(0.1, 3), q(0.2, 0)).unwrap_or(ConcatInput::copy(1)),
    ];
    if let Ok(p) = ConcatParams::new(black_box(&[4, 3, 2][..]), black_box(-2), &inputs) {
        let (x, y): (&[i8], &[i8]) = (black_box(&[1; 16]), black_box(&[2; 8]));
        let _ = black_box(concat_s8(&p, &[x, y], &mut out[..24]));
        let (x, y): (&[i16], &[i16]) = (black_box(&[1; 16]), black_box(&[2; 8]));
        let _ = black_box(concat(&p, &[x, y], &mut out16[..24]));
    }
    if let Ok(p) = PadParams::prepare_s8(shape_a, black_box(&[[1, 0], [0, 2], [1, 1]][..]), q(0.1, 3), black_box(None))
    {
        let _ = black_box(pad_s8(&p, a, &mut out[..]));
        let _ = black_box(pad_s16(&p, a16, &mut out16[..]));
    }
    if let Ok(p) = TransposeParams::new(shape_a, black_box(&[2, 0, 1][..])) {
        let _ = black_box(transpose_s8(&p, a, &mut out[..24]));
        let _ = black_box(transpose_s16(&p, a16, &mut out16[..24]));
        let _ = black_box(transpose_s32(&p, black_box(&[7i32; 24][..]), &mut out32[..24]));
    }
    let _ = black_box(reshape_output_shape(bb(24), black_box(&[-1, 6][..])));
    let _ = black_box(reshape_s8(a, &mut out[..24]));
    black_box((&out, &out16, &out32));
}

/// The data-movement kernels (strided slice, ...) on opaque shapes and parameters.
#[inline(never)]
pub(crate) fn movement_kernels() {
    use microquant::kernels::Dims4;
    use microquant::kernels::depth_to_space::{SpaceDepthMode, SpaceDepthParams, space_depth_s8, space_depth_s16};
    use microquant::kernels::gather::{GatherParams, gather_s8, gather_s16};
    use microquant::kernels::mirror_pad::{MirrorPadMode, MirrorPadParams, mirror_pad_s8, mirror_pad_s16};
    use microquant::kernels::slice::{SliceParams, StridedSliceMasks, slice_s8, slice_s16};
    use microquant::kernels::tile::{TileParams, tile_s8, tile_s16};
    let shape: &[usize] = black_box(&[2, 3, 4]);
    let a: &[i8] = black_box(&[3; 24]);
    let a16: &[i16] = black_box(&[300; 24]);
    let mut out = [0i8; 64];
    let mut out16 = [0i16; 64];
    let masks = StridedSliceMasks { begin: black_box(1), ..StridedSliceMasks::default() };
    let p = SliceParams::tflite_strided_slice(shape, black_box(&[1, -1, 0]), &[2, 0, 4], &[1, -1, 2], masks);
    if let Ok(p) = p.or_else(|_| SliceParams::tflite_slice(shape, black_box(&[0, 1, 1]), black_box(&[2, 2, -1]))) {
        let n = p.output_len().min(64);
        let _ = black_box(slice_s8(&p, a, &mut out[..n]));
        let _ = black_box(slice_s16(&p, a16, &mut out16[..n]));
    }
    let mode = if black_box(true) { SpaceDepthMode::DepthToSpaceCrd } else { SpaceDepthMode::SpaceToDepth };
    if let Ok(p) = SpaceDepthParams::new(Dims4::new(bb(1), bb(2), bb(3), bb(4)), bb(2), mode) {
        let _ = black_box(space_depth_s8(&p, a, &mut out[..24]));
        let _ = black_box(space_depth_s16(&p, a16, &mut out16[..24]));
    }
    if let Ok(p) = TileParams::new(black_box(&[3, 1][..]), black_box(&[2, 3, 4][..])) {
        let n = p.output_len().min(64);
        let _ = black_box(tile_s8(&p, black_box(&[3i8; 3][..]), &mut out[..n]));
        let _ = black_box(tile_s16(&p, black_box(&[300i16; 3][..]), &mut out16[..n]));
    }
    let idx: &[i32] = black_box(&[2, 0, 1, 1]);
    if let Ok(p) = GatherParams::new(shape, bb(2), idx) {
        let n = p.output_len().min(64);
        let _ = black_box(gather_s8(&p, a, idx, &mut out[..n]));
        let _ = black_box(gather_s16(&p, a16, idx, &mut out16[..n]));
    }
    let mode = MirrorPadMode::from_code(black_box(2)).unwrap_or(MirrorPadMode::Reflect);
    if let Ok(p) = MirrorPadParams::new(shape, black_box(&[[1, 0], [0, 2], [1, 1]][..]), mode) {
        let _ = black_box(mirror_pad_s8(&p, a, &mut out[..]));
        let _ = black_box(mirror_pad_s16(&p, a16, &mut out16[..]));
    }
    black_box((&out, &out16));
}

/// The transposed convolution kernels (int8 and 16x8) and their prepare.
#[inline(never)]
pub(crate) fn transpose_conv_kernels() {
    use microquant::kernels::common::{Hw, Padding};
    use microquant::kernels::transpose_conv::{
        TransposeConvParams, transpose_conv_padding, transpose_conv_s8, transpose_conv_s8_scratch_len,
        transpose_conv_s16, transpose_conv_s16_scratch_len,
    };
    use microquant::kernels::{ActivationRange, Dims4, PerChannelQuant, Rounding};
    let bb = black_box::<usize>;
    let (out, filter, stride) = (Hw::new(bb(8), bb(8)), Hw::new(bb(3), bb(3)), Hw::new(bb(2), bb(2)));
    let padding = transpose_conv_padding(black_box(Padding::Same), out, filter, stride).unwrap_or_default();
    let p = TransposeConvParams {
        input: Dims4::new(bb(1), bb(4), bb(4), bb(2)),
        filter: Dims4::new(bb(2), bb(3), bb(3), bb(2)),
        output: Dims4::new(bb(1), bb(8), bb(8), bb(2)),
        stride,
        padding,
        input_offset: black_box(3),
        output_offset: black_box(-2),
        activation: ActivationRange::INT8,
        rounding: if black_box(true) { Rounding::Double } else { Rounding::Single },
    };
    let q = PerChannelQuant { multiplier: black_box(&[1 << 30, 1 << 29][..]), shift: black_box(&[-3, -2][..]) };
    let (x8, x16): (&[i8], &[i16]) = (black_box(&[7; 32]), black_box(&[700; 32]));
    let w: &[i8] = black_box(&[-5; 36]);
    let (b32, b64): (&[i32], &[i64]) = (black_box(&[10, -10]), black_box(&[10, -10]));
    let mut scratch = [0u8; 1040];
    let (mut o8, mut o16) = ([0i8; 128], [0i16; 128]);
    let n8 = transpose_conv_s8_scratch_len(&p).min(scratch.len());
    let _ = black_box(transpose_conv_s8(&p, &q, x8, w, Some(b32), &mut o8, &mut scratch[..n8]));
    let p16 = TransposeConvParams { input_offset: 0, output_offset: 0, activation: ActivationRange::INT16, ..p };
    let n16 = transpose_conv_s16_scratch_len(&p16).min(scratch.len());
    let _ = black_box(transpose_conv_s16(&p16, &q, x16, w, Some(b64), &mut o16, &mut scratch[..n16]));
    black_box((&o8, &o16));
}

/// The LSTM kernels (int8 and 16x8) and their prepare.
#[inline(never)]
pub(crate) fn recurrent_kernels() {
    use microquant::kernels::lstm::{
        LstmDims, LstmParams, LstmQuant, LstmWeights, TableInputScaling, lstm_reset_state, lstm_s8, lstm_s16,
        sigmoid_s16, tanh_s16,
    };
    use microquant::kernels::tensor::PerTensorQuant;
    let dims = LstmDims {
        batch: black_box(2),
        time: black_box(3),
        input: black_box(2),
        cell: black_box(3),
        time_major: black_box(false),
    };
    let quant = LstmQuant {
        input: PerTensorQuant::new(black_box(0.05), black_box(3)),
        input_weight_scales: black_box([0.01; 4]),
        recurrent_weight_scales: black_box([0.02; 4]),
        hidden: PerTensorQuant::new(black_box(1.0 / 128.0), black_box(-2)),
        cell_scale: black_box(1.0 / 2048.0),
        cell_clip: black_box(3.0),
    };
    let (wi, wr): (&[i8], &[i8]) = (black_box(&[5; 24]), black_box(&[-7; 36]));
    let (b32, b64): (&[i32], &[i64]) = (black_box(&[100; 12]), black_box(&[100; 12]));
    let (x8, x16): (&[i8], &[i16]) = (black_box(&[9; 12]), black_box(&[900; 12]));
    let (mut h8, mut h16, mut c, mut o8, mut o16) = ([0i8; 6], [0i16; 6], [0i16; 6], [0i8; 18], [0i16; 18]);
    if let Ok(p) = LstmParams::prepare_s8(dims, &quant) {
        let _ = black_box(lstm_reset_state(&p, &mut h8, &mut c));
        let w = LstmWeights { input: wi, recurrent: wr, bias: b32 };
        let _ = black_box(lstm_s8(&p, &w, x8, &mut h8, &mut c, &mut o8));
    }
    let quant16 = LstmQuant {
        input: PerTensorQuant::new(black_box(0.0005), 0),
        hidden: PerTensorQuant::new(black_box(1.0 / 32768.0), 0),
        ..quant
    };
    if let Ok(p) = LstmParams::prepare_s16(dims, &quant16) {
        let _ = black_box(lstm_reset_state(&p, &mut h16, &mut c));
        let w = LstmWeights { input: wi, recurrent: wr, bias: b64 };
        let _ = black_box(lstm_s16(&p, &w, x16, &mut h16, &mut c, &mut o16));
    }
    black_box(sigmoid_s16(black_box(1234)));
    if let Some(s) = TableInputScaling::for_power_of_two(black_box(-11)) {
        black_box(tanh_s16(s, black_box(-1234)));
    }
    black_box((&o8, &o16, &h8, &h16, &c));
}

/// Resize (nearest neighbour int8 / int16, bilinear int8), SUM and REDUCE_MAX, and their prepare.
#[inline(never)]
pub(crate) fn spatial_kernels() {
    use microquant::kernels::resize::{ResizeMethod, ResizeParams, resize_s8, resize_s16};
    let input = [bb(1), bb(3), bb(4), bb(2)];
    let size = [bb(5), bb(7)];
    let (a, a16): (&[i8], &[i16]) = (black_box(&[7; 24]), black_box(&[-300; 24]));
    let (mut out, mut out16) = ([0i8; 70], [0i16; 70]);
    for method in [ResizeMethod::NearestNeighbor, ResizeMethod::Bilinear] {
        let m = black_box(method);
        if let Ok(p) = ResizeParams::prepare(m, input, size, black_box(false), black_box(true)) {
            let _ = black_box(resize_s8(&p, a, &mut out));
            let _ = black_box(resize_s16(&p, a16, &mut out16));
        }
    }
    use microquant::kernels::Rounding;
    use microquant::kernels::reduce::{MeanParams, ReduceMaxParams, mean_s8, mean_s16, reduce_max_s8, reduce_max_s16};
    use microquant::kernels::tensor::PerTensorQuant;
    let shape: &[usize] = black_box(&[2, 3, 4]);
    let axes: &[i32] = black_box(&[0, -1]);
    if let Ok(p) = ReduceMaxParams::new(shape, axes) {
        let _ = black_box(reduce_max_s8(&p, a, &mut out[..3]));
        let _ = black_box(reduce_max_s16(&p, a16, &mut out16[..3]));
    }
    let q = |s: f32, z: i32| PerTensorQuant::new(black_box(s), black_box(z));
    let mut scratch = [0i32; 8];
    if let Ok(p) = MeanParams::prepare_sum_s8(shape, axes, q(0.1, 3), q(0.5, -7), Rounding::Double) {
        let _ = black_box(mean_s8(&p, a, &mut out[..3], &mut scratch));
    }
    if let Ok(p) = MeanParams::prepare_sum_s16(shape, axes, q(0.001, 0), q(0.01, 0), Rounding::Single) {
        let _ = black_box(mean_s16(&p, a16, &mut out16[..3], &mut scratch));
    }
    black_box((&out, &out16));
}

/// LEAKY_RELU (int8, int16) in both rounding modes, alpha positive and negative.
#[inline(never)]
pub(crate) fn unary_activation_kernels() {
    use microquant::kernels::Rounding;
    use microquant::kernels::leaky_relu::{LeakyReluParams, leaky_relu_s8, leaky_relu_s16};
    use microquant::kernels::tensor::PerTensorQuant;
    let q = |s: f32, z: i32| PerTensorQuant::new(black_box(s), black_box(z));
    let a: &[i8] = black_box(&[3, -7, 0, 127, -128, 5]);
    let a16: &[i16] = black_box(&[300, -32768, 32767, 0, -1, 5]);
    let mut out = [0i8; 6];
    let mut out16 = [0i16; 6];
    for r in [Rounding::Double, Rounding::Single] {
        for alpha in [black_box(0.1f32), black_box(-0.3f32)] {
            if let Ok(p) = LeakyReluParams::prepare_s8(q(0.1, 3), q(0.05, -10), alpha, r) {
                let _ = black_box(leaky_relu_s8(&p, a, &mut out));
            }
            if let Ok(p) = LeakyReluParams::prepare_s16(q(0.001, 0), q(0.002, 0), alpha, r) {
                let _ = black_box(leaky_relu_s16(&p, a16, &mut out16));
            }
        }
    }
    clamp_sign_kernels();
}

/// RELU (any clamp), ABS, NEG, RSQRT, ELU.
#[inline(never)]
pub(crate) fn clamp_sign_kernels() {
    use microquant::kernels::Rounding;
    use microquant::kernels::abs::{SignParams, abs_s8, abs_s16, neg_s8, neg_s16};
    use microquant::kernels::elu::{EluParams, elu_s8};
    use microquant::kernels::relu::{ReluParams, relu_s8, relu_s16};
    use microquant::kernels::rsqrt::{RsqrtParams, rsqrt_s8};
    use microquant::kernels::tensor::PerTensorQuant;
    let q = |s: f32, z: i32| PerTensorQuant::new(black_box(s), black_box(z));
    let a: &[i8] = black_box(&[3, -7, 0, 127, -128, 5]);
    let a16: &[i16] = black_box(&[300, -32768, 32767, 0, -1, 5]);
    let mut out = [0i8; 6];
    let mut out16 = [0i16; 6];
    for r in [Rounding::Double, Rounding::Single] {
        let (lo, hi) = (black_box(-1.0f32), black_box(f32::INFINITY));
        if let Ok(p) = ReluParams::prepare_s8(q(0.1, 3), q(0.05, -10), lo, hi, r) {
            let _ = black_box(relu_s8(&p, a, &mut out));
        }
        if let Ok(p) = ReluParams::prepare_s16(q(0.001, 0), q(0.002, 0), lo, hi, r) {
            let _ = black_box(relu_s16(&p, a16, &mut out16));
        }
        if let Ok(p) = SignParams::prepare_s8(q(0.1, 3), q(0.05, -10), r) {
            let _ = black_box(abs_s8(&p, a, &mut out));
            let _ = black_box(neg_s8(&p, a, &mut out));
        }
        if let Ok(p) = SignParams::prepare_s16(q(0.001, 0), q(0.002, 0), r) {
            let _ = black_box(abs_s16(&p, a16, &mut out16));
            let _ = black_box(neg_s16(&p, a16, &mut out16));
        }
        if let Ok(p) = RsqrtParams::prepare_s8(q(0.1, -128), q(0.05, -128), r) {
            let _ = black_box(rsqrt_s8(&p, a, &mut out));
        }
    }
    if let Ok(p) = ReluParams::prepare_relu6_tflm(q(0.05, 3), black_box(false)) {
        let _ = black_box(relu_s8(&p, a, &mut out));
    }
    if let Ok(p) = EluParams::prepare_s8(q(0.1, 3), q(0.05, -10)) {
        let _ = black_box(elu_s8(&p, a, &mut out));
    }
}

/// BATCH_MATMUL (int8, int16) with opaque shapes, adjoints and quantization.
#[inline(never)]
pub(crate) fn batch_matmul_kernels() {
    use microquant::kernels::batch_matmul::{BatchMatMulParams, batch_matmul_s8, batch_matmul_s16};
    use microquant::kernels::tensor::PerTensorQuant;
    let q = |s: f32, z: i32| PerTensorQuant::new(black_box(s), black_box(z));
    let ls: &[usize] = black_box(&[2, 1, 3, 4]);
    let rs: &[usize] = black_box(&[3, 4, 2]);
    let (ax, ay) = (black_box(false), black_box(true));
    let a: &[i8] = black_box(&[3; 24]);
    let b: &[i8] = black_box(&[-7; 24]);
    let a16: &[i16] = black_box(&[300; 24]);
    let b16: &[i16] = black_box(&[-32768; 24]);
    let mut out = [0i8; 36];
    let mut out16 = [0i16; 36];
    if let Ok(p) = BatchMatMulParams::prepare_s8(q(0.1, 3), q(0.05, -10), q(0.2, 7), ls, rs, ax, ay) {
        let _ = black_box(batch_matmul_s8(&p, a, b, black_box(&mut out[..])));
    }
    if let Ok(p) = BatchMatMulParams::prepare_s16(q(0.001, 0), q(0.002, 0), q(0.01, 0), ls, rs, ax, ay) {
        let _ = black_box(batch_matmul_s16(&p, a16, b16, black_box(&mut out16[..])));
    }
}
