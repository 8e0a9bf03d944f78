//! The golden files of `tests/golden/kernels/` as oracle views (`std`): each JSON file decoded
//! once per process (the decoded tensors live as long as the process), with the functions the
//! test macros call (`conv_2d()`, `fully_connected_16x8()`, ...). The firmware's `build.rs`
//! generates constants with the same names.

use std::sync::OnceLock;

use super::activation::{UnaryCase, UnaryOp};
use super::batch_matmul::BatchMatMulCase;
use super::binary::{BinaryCase, BinaryOp};
use super::conv::ConvCase;
use super::depthwise::DepthwiseConvCase;
use super::elementwise_unary::ElementwiseUnaryCase;
use super::fully_connected::FullyConnectedCase;
use super::leaky_relu::LeakyReluCase;
use super::movement::{MoveOp, MovementCase};
use super::pooling::{Pool, PoolCase};
use super::recurrent::LstmCase;
use super::shape::{ConcatCase, MeanCase, PadCase, ReshapeCase, TransposeCase};
use super::softmax::SoftmaxCase;
use super::spatial::{ReduceCase, ReduceOp, ResizeCase};
use super::transpose_conv::TransposeConvCase;
use super::{Bias, Expected, File, Values};
use crate::golden::Tensor;
use crate::kernels::{self, KernelFile};
use microquant::kernels::resize::ResizeMethod;

fn leak<T>(v: Vec<T>) -> &'static [T] {
    Vec::leak(v)
}

/// A tensor's values (int8 or int16).
pub fn values(t: &Tensor) -> Values<'static> {
    match t.dtype.as_str() {
        "int16" => Values::I16(leak(t.i16())),
        _ => Values::I8(leak(t.i8())),
    }
}

/// An int8 tensor's values.
fn i8s(t: &Tensor) -> &'static [i8] {
    leak(t.i8())
}

/// A bias tensor (int32 or int64), or none.
pub fn bias(t: &Option<Tensor>) -> Bias<'static> {
    match t {
        None => Bias::None,
        Some(t) if t.dtype == "int64" => Bias::I64(leak(t.i64())),
        Some(t) => Bias::I32(leak(t.i32())),
    }
}

/// Both oracles' outputs (the interpreter's only where it differs from TFLite Micro's).
pub fn expected(tflm: &'static Tensor, tflite_ref: &Tensor) -> Expected<'static> {
    Expected {
        tflm: values(tflm),
        tflite_ref: if tflm.b64 == tflite_ref.b64 { None } else { Some(values(tflite_ref)) },
        shape: &tflm.shape,
    }
}

/// Decodes `file` into views with `view`; checks that its output values are the file's own count.
fn decode<C: 'static, V: 'static>(
    name: &'static str,
    file: KernelFile<C>,
    view: impl Fn(&'static C) -> V,
    expected: impl Fn(&V) -> &Expected<'static>,
) -> File<V> {
    let file: &'static KernelFile<C> = Box::leak(Box::new(file));
    let cases = leak(file.cases.iter().map(view).collect());
    let elements = cases.iter().map(|c| expected(c).len()).sum();
    assert_eq!(elements, file.stats.elements, "{name}: output values vs the file's stats");
    let cases_differing = cases.iter().filter(|c| expected(c).oracles_differ()).count();
    assert_eq!(cases_differing, file.stats.cases_differing, "{name}: cases where the oracles differ vs stats");
    File { name, cases, elements, cases_differing }
}

macro_rules! files {
    ($($fn:ident: $view:ty = $load:ident, $json:literal, |$c:ident| $body:expr;)*) => {$(
        #[doc = concat!("`golden/kernels/", $json, "`, decoded once.")]
        pub fn $fn() -> File<$view> {
            static FILE: OnceLock<File<$view>> = OnceLock::new();
            *FILE.get_or_init(|| decode($json, kernels::$load(), |$c| $body, |v| &v.expected))
        }
    )*};
}

fn movement(op: MoveOp, c: &'static kernels::MovementCase) -> MovementCase<'static> {
    MovementCase {
        name: &c.name,
        op,
        input: values(&c.input),
        input_shape: &c.input.shape,
        params: &c.params,
        expected: expected(&c.expected_tflm, &c.expected_tflite_ref),
    }
}

fn conv(c: &'static kernels::ConvCase) -> ConvCase<'static> {
    ConvCase {
        name: &c.name,
        input: values(&c.input),
        input_shape: &c.input.shape,
        input_scale: c.input_scale,
        input_zero_point: c.input_zero_point,
        filter: i8s(&c.filter),
        filter_shape: &c.filter.shape,
        filter_scales: &c.filter_scales,
        bias: bias(&c.bias),
        output_scale: c.output_scale,
        output_zero_point: c.output_zero_point,
        padding: c.padding,
        stride: [c.stride_h, c.stride_w],
        dilation: [c.dilation_h, c.dilation_w],
        activation: c.activation,
        expected: expected(&c.expected_tflm, &c.expected_tflite_ref),
    }
}

fn depthwise(c: &'static kernels::DepthwiseConvCase) -> DepthwiseConvCase<'static> {
    DepthwiseConvCase {
        name: &c.name,
        input: values(&c.input),
        input_shape: &c.input.shape,
        input_scale: c.input_scale,
        input_zero_point: c.input_zero_point,
        filter: i8s(&c.filter),
        filter_shape: &c.filter.shape,
        filter_scales: &c.filter_scales,
        bias: bias(&c.bias),
        output_scale: c.output_scale,
        output_zero_point: c.output_zero_point,
        padding: c.padding,
        stride: [c.stride_h, c.stride_w],
        dilation: [c.dilation_h, c.dilation_w],
        depth_multiplier: c.depth_multiplier,
        activation: c.activation,
        expected: expected(&c.expected_tflm, &c.expected_tflite_ref),
    }
}

fn fc(c: &'static kernels::FullyConnectedCase) -> FullyConnectedCase<'static> {
    FullyConnectedCase {
        name: &c.name,
        input: values(&c.input),
        input_scale: c.input_scale,
        input_zero_point: c.input_zero_point,
        filter: i8s(&c.filter),
        filter_shape: [c.filter.shape[0], c.filter.shape[1]],
        filter_scales: &c.filter_scales,
        bias: bias(&c.bias),
        output_scale: c.output_scale,
        output_zero_point: c.output_zero_point,
        activation: c.activation,
        expected: expected(&c.expected_tflm, &c.expected_tflite_ref),
    }
}

fn pool(pool: Pool, c: &'static kernels::PoolCase) -> PoolCase<'static> {
    assert_eq!(
        (c.input_scale, c.input_zero_point),
        (c.output_scale, c.output_zero_point),
        "{}: pooling keeps the quantization",
        c.name
    );
    PoolCase {
        name: &c.name,
        pool,
        input: i8s(&c.input),
        input_shape: &c.input.shape,
        scale: c.output_scale,
        zero_point: c.output_zero_point,
        padding: c.padding,
        stride: [c.stride_h, c.stride_w],
        filter: [c.filter_h, c.filter_w],
        activation: c.activation,
        expected: expected(&c.expected_tflm, &c.expected_tflite_ref),
    }
}

fn binary(op: BinaryOp, c: &'static kernels::BinaryCase) -> BinaryCase<'static> {
    BinaryCase {
        name: &c.name,
        op,
        input1: values(&c.input1),
        input1_shape: &c.input1.shape,
        input1_scale: c.input1_scale,
        input1_zero_point: c.input1_zero_point,
        input2: values(&c.input2),
        input2_shape: &c.input2.shape,
        input2_scale: c.input2_scale,
        input2_zero_point: c.input2_zero_point,
        output_scale: c.output_scale,
        output_zero_point: c.output_zero_point,
        activation: c.activation,
        expected: expected(&c.expected_tflm, &c.expected_tflite_ref),
    }
}

fn softmax_case(c: &'static kernels::SoftmaxCase) -> SoftmaxCase<'static> {
    SoftmaxCase {
        name: &c.name,
        input: values(&c.input),
        depth: *c.input.shape.last().expect("softmax input has a last dimension"),
        input_scale: c.input_scale,
        input_zero_point: c.input_zero_point,
        beta: c.beta,
        output_scale: c.output_scale,
        output_zero_point: c.output_zero_point,
        expected: expected(&c.expected_tflm, &c.expected_tflite_ref),
    }
}

fn unary(op: UnaryOp, c: &'static kernels::UnaryCase) -> UnaryCase<'static> {
    UnaryCase {
        name: &c.name,
        op,
        input: i8s(&c.input),
        input_scale: c.input_scale,
        input_zero_point: c.input_zero_point,
        output_scale: c.output_scale,
        output_zero_point: c.output_zero_point,
        expected: expected(&c.expected_tflm, &c.expected_tflite_ref),
    }
}

fn leaky_relu_case(c: &'static kernels::LeakyReluCase) -> LeakyReluCase<'static> {
    LeakyReluCase {
        name: &c.name,
        input: values(&c.input),
        input_scale: c.input_scale,
        input_zero_point: c.input_zero_point,
        alpha: c.alpha,
        output_scale: c.output_scale,
        output_zero_point: c.output_zero_point,
        expected: expected(&c.expected_tflm, &c.expected_tflite_ref),
    }
}
fn elementwise_unary(c: &'static kernels::ElementwiseUnaryCase) -> ElementwiseUnaryCase<'static> {
    ElementwiseUnaryCase {
        name: &c.name,
        op: &c.op,
        input: values(&c.input),
        input_scale: c.input_scale,
        input_zero_point: c.input_zero_point,
        output_scale: c.output_scale,
        output_zero_point: c.output_zero_point,
        expected: expected(&c.expected_tflm, &c.expected_tflite_ref),
    }
}

fn lstm_case(c: &'static kernels::LstmCase) -> LstmCase<'static> {
    LstmCase {
        name: &c.name,
        dims: [c.batch, c.time, c.n_input, c.n_cell],
        time_major: c.time_major,
        chunks: c.chunks,
        input: values(&c.input),
        input_scale: c.input_scale,
        input_zero_point: c.input_zero_point,
        input_weights: i8s(&c.input_weights),
        input_weight_scales: &c.input_weight_scales,
        recurrent_weights: i8s(&c.recurrent_weights),
        recurrent_weight_scales: &c.recurrent_weight_scales,
        bias: bias(&Some(c.bias.clone())),
        hidden_scale: c.hidden_scale,
        hidden_zero_point: c.hidden_zero_point,
        cell_scale: c.cell_scale,
        cell_clip: c.cell_clip,
        expected: expected(&c.expected_tflm, &c.expected_tflite_ref),
    }
}

fn concat(c: &'static kernels::ConcatCase) -> ConcatCase<'static> {
    ConcatCase {
        name: &c.name,
        inputs: leak(c.inputs.iter().map(i8s).collect()),
        input_shapes: leak(c.inputs.iter().map(|t| &t.shape[..]).collect()),
        input_scales: &c.input_scales,
        input_zero_points: &c.input_zero_points,
        axis: c.axis,
        output_scale: c.output_scale,
        output_zero_point: c.output_zero_point,
        expected: expected(&c.expected_tflm, &c.expected_tflite_ref),
    }
}

files! {
    conv_2d: ConvCase<'static> = conv_2d_file, "conv_2d.json", |c| conv(c);
    conv_2d_16x8: ConvCase<'static> = conv_2d_16x8_file, "conv_2d_16x8.json", |c| conv(c);
    depthwise_conv_2d: DepthwiseConvCase<'static> = depthwise_conv_2d_file, "depthwise_conv_2d.json", |c| depthwise(c);
    depthwise_conv_2d_16x8: DepthwiseConvCase<'static> =
        depthwise_conv_2d_16x8_file, "depthwise_conv_2d_16x8.json", |c| depthwise(c);
    fully_connected: FullyConnectedCase<'static> = fully_connected_file, "fully_connected.json", |c| fc(c);
    fully_connected_16x8: FullyConnectedCase<'static> =
        fully_connected_16x8_file, "fully_connected_16x8.json", |c| fc(c);
    max_pool_2d: PoolCase<'static> = max_pool_2d_file, "max_pool_2d.json", |c| pool(Pool::Max, c);
    average_pool_2d: PoolCase<'static> = average_pool_2d_file, "average_pool_2d.json", |c| pool(Pool::Average, c);
    add: BinaryCase<'static> = add_file, "add.json", |c| binary(BinaryOp::Add, c);
    add_16x8: BinaryCase<'static> = add_16x8_file, "add_16x8.json", |c| binary(BinaryOp::Add, c);
    mul: BinaryCase<'static> = mul_file, "mul.json", |c| binary(BinaryOp::Mul, c);
    sub: BinaryCase<'static> = sub_file, "sub.json", |c| binary(BinaryOp::Sub, c);
    sub_16x8: BinaryCase<'static> = sub_16x8_file, "sub_16x8.json", |c| binary(BinaryOp::Sub, c);
    minimum: BinaryCase<'static> = minimum_file, "minimum.json", |c| binary(BinaryOp::Minimum, c);
    maximum: BinaryCase<'static> = maximum_file, "maximum.json", |c| binary(BinaryOp::Maximum, c);
    prelu: BinaryCase<'static> = prelu_file, "prelu.json", |c| binary(BinaryOp::Prelu, c);
    prelu_16x8: BinaryCase<'static> = prelu_16x8_file, "prelu_16x8.json", |c| binary(BinaryOp::Prelu, c);
    div: BinaryCase<'static> = div_file, "div.json", |c| binary(BinaryOp::Div, c);
    squared_difference: BinaryCase<'static> =
        squared_difference_file, "squared_difference.json", |c| binary(BinaryOp::SquaredDifference, c);
    softmax: SoftmaxCase<'static> = softmax_file, "softmax.json", |c| softmax_case(c);
    softmax_16x8: SoftmaxCase<'static> = softmax_16x8_file, "softmax_16x8.json", |c| softmax_case(c);
    logistic: UnaryCase<'static> = logistic_file, "logistic.json", |c| unary(UnaryOp::Logistic, c);
    tanh: UnaryCase<'static> = tanh_file, "tanh.json", |c| unary(UnaryOp::Tanh, c);
    hard_swish: UnaryCase<'static> = hard_swish_file, "hard_swish.json", |c| unary(UnaryOp::HardSwish, c);
    leaky_relu: LeakyReluCase<'static> = leaky_relu_file, "leaky_relu.json", |c| leaky_relu_case(c);
    leaky_relu_16x8: LeakyReluCase<'static> = leaky_relu_16x8_file, "leaky_relu_16x8.json", |c| leaky_relu_case(c);
    relu: ElementwiseUnaryCase<'static> = relu_file, "relu.json", |c| elementwise_unary(c);
    relu_16x8: ElementwiseUnaryCase<'static> = relu_16x8_file, "relu_16x8.json", |c| elementwise_unary(c);
    abs: ElementwiseUnaryCase<'static> = abs_file, "abs.json", |c| elementwise_unary(c);
    abs_16x8: ElementwiseUnaryCase<'static> = abs_16x8_file, "abs_16x8.json", |c| elementwise_unary(c);
    neg: ElementwiseUnaryCase<'static> = neg_file, "neg.json", |c| elementwise_unary(c);
    rsqrt: ElementwiseUnaryCase<'static> = rsqrt_file, "rsqrt.json", |c| elementwise_unary(c);
    elu: ElementwiseUnaryCase<'static> = elu_file, "elu.json", |c| elementwise_unary(c);
    lstm: LstmCase<'static> = lstm_file, "lstm.json", |c| lstm_case(c);
    lstm_16x8: LstmCase<'static> = lstm_16x8_file, "lstm_16x8.json", |c| lstm_case(c);
    batch_matmul: BatchMatMulCase<'static> = batch_matmul_file, "batch_matmul.json", |c| batch_matmul_case(c);
    batch_matmul_16x8: BatchMatMulCase<'static> =
        batch_matmul_16x8_file, "batch_matmul_16x8.json", |c| batch_matmul_case(c);
    concatenation: ConcatCase<'static> = concatenation_file, "concatenation.json", |c| concat(c);
    pad: PadCase<'static> = pad_file, "pad.json", |c| PadCase {
        name: &c.name,
        input: i8s(&c.input),
        input_shape: &c.input.shape,
        paddings: &c.paddings,
        output_scale: c.output_scale,
        output_zero_point: c.output_zero_point,
        expected: expected(&c.expected_tflm, &c.expected_tflite_ref),
    };
    mean: MeanCase<'static> = mean_file, "mean.json", |c| MeanCase {
        name: &c.name,
        input: i8s(&c.input),
        input_shape: &c.input.shape,
        axis: &c.axis,
        input_scale: c.input_scale,
        input_zero_point: c.input_zero_point,
        output_scale: c.output_scale,
        output_zero_point: c.output_zero_point,
        expected: expected(&c.expected_tflm, &c.expected_tflite_ref),
    };
    reshape: ReshapeCase<'static> = reshape_file, "reshape.json", |c| ReshapeCase {
        name: &c.name,
        input: i8s(&c.input),
        new_shape: &c.new_shape,
        expected: expected(&c.expected_tflm, &c.expected_tflite_ref),
    };
    slice: MovementCase<'static> = slice_file, "slice.json", |c| movement(MoveOp::Slice, c);
    slice_16: MovementCase<'static> = slice_16_file, "slice_16.json", |c| movement(MoveOp::Slice, c);
    strided_slice: MovementCase<'static> =
        strided_slice_file, "strided_slice.json", |c| movement(MoveOp::StridedSlice, c);
    strided_slice_16: MovementCase<'static> =
        strided_slice_16_file, "strided_slice_16.json", |c| movement(MoveOp::StridedSlice, c);
    depth_to_space: MovementCase<'static> =
        depth_to_space_file, "depth_to_space.json", |c| movement(MoveOp::DepthToSpace, c);
    space_to_depth: MovementCase<'static> =
        space_to_depth_file, "space_to_depth.json", |c| movement(MoveOp::SpaceToDepth, c);
    mirror_pad: MovementCase<'static> = mirror_pad_file, "mirror_pad.json", |c| movement(MoveOp::MirrorPad, c);
    gather: MovementCase<'static> = gather_file, "gather.json", |c| movement(MoveOp::Gather, c);
    broadcast_to: MovementCase<'static> =
        broadcast_to_file, "broadcast_to.json", |c| movement(MoveOp::BroadcastTo, c);
    broadcast_to_16: MovementCase<'static> =
        broadcast_to_16_file, "broadcast_to_16.json", |c| movement(MoveOp::BroadcastTo, c);
    transpose: TransposeCase<'static> = transpose_file, "transpose.json", |c| TransposeCase {
        name: &c.name,
        input: i8s(&c.input),
        input_shape: &c.input.shape,
        perm: &c.perm,
        expected: expected(&c.expected_tflm, &c.expected_tflite_ref),
    };
}

fn resize(method: ResizeMethod, c: &'static kernels::ResizeCase) -> ResizeCase<'static> {
    ResizeCase {
        name: &c.name,
        method,
        input: values(&c.input),
        input_shape: &c.input.shape,
        size: c.size,
        align_corners: c.align_corners,
        half_pixel_centers: c.half_pixel_centers,
        expected: expected(&c.expected_tflm, &c.expected_tflite_ref),
    }
}

fn reduce(op: ReduceOp, c: &'static kernels::MeanCase) -> ReduceCase<'static> {
    ReduceCase {
        name: &c.name,
        op,
        input: values(&c.input),
        input_shape: &c.input.shape,
        axis: &c.axis,
        input_scale: c.input_scale,
        input_zero_point: c.input_zero_point,
        output_scale: c.output_scale,
        output_zero_point: c.output_zero_point,
        expected: expected(&c.expected_tflm, &c.expected_tflite_ref),
    }
}

files! {
    reduce_sum: ReduceCase<'static> = reduce_sum_file, "reduce_sum.json", |c| reduce(ReduceOp::Sum, c);
    reduce_sum_16x8: ReduceCase<'static> = reduce_sum_16x8_file, "reduce_sum_16x8.json", |c| reduce(ReduceOp::Sum, c);
    reduce_max: ReduceCase<'static> = reduce_max_file, "reduce_max.json", |c| reduce(ReduceOp::Max, c);
    resize_nearest_neighbor: ResizeCase<'static> =
        resize_nearest_neighbor_file, "resize_nearest_neighbor.json", |c| resize(ResizeMethod::NearestNeighbor, c);
    resize_nearest_neighbor_16x8: ResizeCase<'static> = resize_nearest_neighbor_16x8_file,
        "resize_nearest_neighbor_16x8.json", |c| resize(ResizeMethod::NearestNeighbor, c);
    resize_bilinear: ResizeCase<'static> =
        resize_bilinear_file, "resize_bilinear.json", |c| resize(ResizeMethod::Bilinear, c);
}

fn transpose_conv_case(c: &'static kernels::TransposeConvCase) -> TransposeConvCase<'static> {
    TransposeConvCase {
        name: &c.name,
        input: values(&c.input),
        input_shape: &c.input.shape,
        input_scale: c.input_scale,
        input_zero_point: c.input_zero_point,
        filter: i8s(&c.filter),
        filter_shape: &c.filter.shape,
        filter_scales: &c.filter_scales,
        bias: bias(&c.bias),
        output_scale: c.output_scale,
        output_zero_point: c.output_zero_point,
        output_shape: &c.output_shape,
        padding: c.padding,
        stride: [c.stride_h, c.stride_w],
        activation: c.activation,
        expected: expected(&c.expected_tflm, &c.expected_tflite_ref),
    }
}

files! {
    transpose_conv: TransposeConvCase<'static> = transpose_conv_file, "transpose_conv.json", |c| transpose_conv_case(c);
    transpose_conv_16x8: TransposeConvCase<'static> =
        transpose_conv_16x8_file, "transpose_conv_16x8.json", |c| transpose_conv_case(c);
}

fn batch_matmul_case(c: &'static kernels::BatchMatMulCase) -> BatchMatMulCase<'static> {
    BatchMatMulCase {
        name: &c.name,
        lhs: values(&c.lhs),
        lhs_shape: &c.lhs.shape,
        lhs_scale: c.lhs_scale,
        lhs_zero_point: c.lhs_zero_point,
        rhs: values(&c.rhs),
        rhs_shape: &c.rhs.shape,
        rhs_scale: c.rhs_scale,
        rhs_zero_point: c.rhs_zero_point,
        output_scale: c.output_scale,
        output_zero_point: c.output_zero_point,
        adj_x: c.adj_x,
        adj_y: c.adj_y,
        expected: expected(&c.expected_tflm, &c.expected_tflite_ref),
    }
}
