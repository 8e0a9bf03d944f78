//! Part of `build.rs`: the kernel golden files (`tests/golden/kernels/`) as constants of the
//! oracle's case views (`microquant_tests::oracle`), for `tests/kernels.rs`, with the functions
//! the golden test macros call (`conv_2d()`, ...): every case of every file on boards with
//! megabytes of flash, on the micro:bit (256 KB flash, 16 KB RAM) a spread-out subset of the
//! small cases of each file.
use microquant_tests::oracle::activation::{UnaryCase, UnaryOp};
use microquant_tests::oracle::batch_matmul::BatchMatMulCase;
use microquant_tests::oracle::binary::BinaryCase;
use microquant_tests::oracle::conv::ConvCase;
use microquant_tests::oracle::depthwise::DepthwiseConvCase;
use microquant_tests::oracle::elementwise_unary::ElementwiseUnaryCase;
use microquant_tests::oracle::fully_connected::FullyConnectedCase;
use microquant_tests::oracle::golden;
use microquant_tests::oracle::leaky_relu::LeakyReluCase;
use microquant_tests::oracle::movement::MovementCase;
use microquant_tests::oracle::pooling::{Pool, PoolCase};
use microquant_tests::oracle::recurrent::LstmCase;
use microquant_tests::oracle::shape::{ConcatCase, MeanCase, PadCase, ReshapeCase, TransposeCase};
use microquant_tests::oracle::softmax::SoftmaxCase;
use microquant_tests::oracle::spatial::{ReduceCase, ResizeCase};
use microquant_tests::oracle::transpose_conv::TransposeConvCase;
use microquant_tests::oracle::{Activation, Bias, Expected, File, Padding, Values};
use std::fmt::Write as _;
use std::path::Path;

/// On the micro:bit, per file: cases with at most this many bytes of tensors, outputs of at most
/// `SMALL_OUT` values and scratch of at most `SMALL_SCRATCH` bytes, at most `SMALL_CASES` of them
/// (`SMALL_CASES_OTHER` for the files beyond conv, depthwise, fully connected and pooling int8),
/// spread evenly over the file (so every kind of case the file holds can be picked).
const SMALL_BYTES: usize = 900;
const SMALL_OUT: usize = 512;
const SMALL_SCRATCH: usize = 1024;
const SMALL_CASES: usize = 24;
const SMALL_CASES_OTHER: usize = 2;

fn i8s(v: &[i8]) -> String {
    let mut s = String::from("as_i8(b\"");
    for &b in v {
        write!(s, "\\x{:02x}", b as u8).unwrap();
    }
    s.push_str("\")");
    s
}
fn values(v: &Values) -> String {
    match v {
        Values::I8(v) => format!("Values::I8({})", i8s(v)),
        Values::I16(v) => format!("Values::I16(&{v:?})"),
    }
}
fn f(x: f32) -> String {
    format!("f32::from_bits({:#010x})", x.to_bits())
}
fn f32s(v: &[f32]) -> String {
    format!("&[{}]", v.iter().map(|&x| f(x)).collect::<Vec<_>>().join(","))
}
fn bias(b: &Bias) -> String {
    match b {
        Bias::None => "Bias::None".into(),
        Bias::I32(v) => format!("Bias::I32(&{v:?})"),
        Bias::I64(v) => format!("Bias::I64(&{v:?})"),
    }
}
fn expected(e: &Expected) -> String {
    let r = match &e.tflite_ref {
        None => "None".to_string(),
        Some(v) => format!("Some({})", values(v)),
    };
    format!("Expected {{ tflm: {}, tflite_ref: {r}, shape: &{:?} }}", values(&e.tflm), e.shape)
}
fn act(a: Activation) -> String {
    format!("Activation::{a:?}")
}
fn pad(p: Padding) -> String {
    format!("Padding::{p:?}")
}

/// Sizes a case needs on the device.
#[derive(Default, Clone, Copy)]
struct Need {
    /// Bytes of tensors in flash.
    bytes: usize,
    /// int8 output values.
    out_i8: usize,
    /// int16 output values.
    out_i16: usize,
    /// Kernel scratch bytes (an upper bound of the target's).
    scratch: usize,
    /// Per-channel multipliers.
    channels: usize,
    /// MEAN accumulators.
    acc: usize,
}

fn out_need(e: &Expected) -> Need {
    let bytes = e.tflm.len() * if matches!(e.tflm, Values::I16(_)) { 2 } else { 1 };
    match e.tflm {
        Values::I8(v) => Need { bytes, out_i8: v.len(), ..Need::default() },
        Values::I16(v) => Need { bytes, out_i16: v.len(), ..Need::default() },
    }
}

/// The generated constants and the largest needs over what was embedded.
struct Gen {
    src: String,
    max: Need,
    files: Vec<&'static str>,
}

impl Gen {
    /// Embeds `file` (all cases, or the micro:bit's subset of at most `small` cases).
    /// `func` and `ty`: the generated function's name and the case view's type.
    fn file<C>(
        &mut self,
        (func, ty): (&str, &str),
        file: File<C>,
        small: Option<usize>,
        need: impl Fn(&C) -> Need,
        expected: impl Fn(&C) -> &Expected<'static>,
        lit: impl Fn(&C) -> String,
    ) {
        let needs: Vec<Need> = file.cases.iter().map(&need).collect();
        let picked: Vec<usize> = match small {
            None => (0..needs.len()).collect(),
            Some(max_cases) => {
                let fits: Vec<usize> = (0..needs.len())
                    .filter(|&i| {
                        let n = needs[i];
                        n.bytes <= SMALL_BYTES && n.out_i8.max(n.out_i16) <= SMALL_OUT && n.scratch <= SMALL_SCRATCH
                    })
                    .collect();
                let n = fits.len().min(max_cases);
                (0..n).map(|j| fits[j * fits.len() / n]).collect()
            }
        };
        let konst = func.to_uppercase();
        writeln!(self.src, "pub const {konst}: &[{ty}<'static>] = &[").unwrap();
        let (mut elements, mut differing) = (0, 0);
        for &i in &picked {
            let c = &file.cases[i];
            let n = needs[i];
            let m = &mut self.max;
            m.out_i8 = m.out_i8.max(n.out_i8);
            m.out_i16 = m.out_i16.max(n.out_i16);
            m.scratch = m.scratch.max(n.scratch);
            m.channels = m.channels.max(n.channels);
            m.acc = m.acc.max(n.acc);
            elements += expected(c).len();
            differing += usize::from(expected(c).oracles_differ());
            writeln!(self.src, "{},", lit(c)).unwrap();
        }
        writeln!(self.src, "];").unwrap();
        writeln!(
            self.src,
            "/// `{name}` ({} of its {} cases).\npub fn {func}() -> File<{ty}<'static>> {{\n    \
             File {{ name: {name:?}, cases: {konst}, elements: {elements}, cases_differing: {differing} }}\n}}",
            picked.len(),
            file.cases.len(),
            name = file.name,
        )
        .unwrap();
        self.files.push(file.name);
    }
}

/// Writes the constants for `board` to `path`.
pub fn write(board: &str, path: &Path) {
    let small = board == "microbit";
    let (main, other) = if small { (Some(SMALL_CASES), Some(SMALL_CASES_OTHER)) } else { (None, None) };
    let mut g = Gen {
        src: String::from(
            "// Generated by build.rs (build_kernels.rs) from tests/golden/kernels/*.json\n\
             use microquant_tests::oracle::activation::{UnaryCase, UnaryOp};\n\
             use microquant_tests::oracle::binary::{BinaryCase, BinaryOp};\n\
             use microquant_tests::oracle::conv::ConvCase;\n\
             use microquant_tests::oracle::depthwise::DepthwiseConvCase;\n\
             use microquant_tests::oracle::fully_connected::FullyConnectedCase;\n\
             use microquant_tests::oracle::movement::{MoveOp, MovementCase};\n\
             use microquant_tests::oracle::leaky_relu::LeakyReluCase;\n\
             use microquant_tests::oracle::batch_matmul::BatchMatMulCase;\n\
             use microquant_tests::oracle::elementwise_unary::ElementwiseUnaryCase;\n\
             use microquant_tests::oracle::pooling::{Pool, PoolCase};\n\
             use microquant_tests::oracle::recurrent::LstmCase;\n\
             use microquant_tests::oracle::shape::{ConcatCase, MeanCase, PadCase, ReshapeCase, TransposeCase};\n\
             use microquant_tests::oracle::softmax::SoftmaxCase;\n\
             use microquant_tests::oracle::{Activation, Bias, Expected, File, Padding, Values, as_i8};\n",
        ),
        max: Need::default(),
        files: Vec::new(),
    };

    let conv_need = |c: &ConvCase| {
        let k = c.filter_shape[1] * c.filter_shape[2] * c.filter_shape[3];
        Need {
            bytes: c.input.len() + c.filter.len() + out_need(&c.expected).bytes,
            scratch: 4 * 8 * k.div_ceil(8) * 2 + 4,
            channels: c.filter_shape[0],
            ..out_need(&c.expected)
        }
    };
    let conv_lit = |c: &ConvCase| {
        format!(
            "ConvCase {{ name: {:?}, input: {}, input_shape: &{:?}, input_scale: {}, input_zero_point: {}, filter: {}, \
             filter_shape: &{:?}, filter_scales: {}, bias: {}, output_scale: {}, output_zero_point: {}, padding: {}, \
             stride: {:?}, dilation: {:?}, activation: {}, expected: {} }}",
            c.name,
            values(&c.input),
            c.input_shape,
            f(c.input_scale),
            c.input_zero_point,
            i8s(c.filter),
            c.filter_shape,
            f32s(c.filter_scales),
            bias(&c.bias),
            f(c.output_scale),
            c.output_zero_point,
            pad(c.padding),
            c.stride,
            c.dilation,
            act(c.activation),
            expected(&c.expected)
        )
    };
    g.file(("conv_2d", "ConvCase"), golden::conv_2d(), main, conv_need, |c| &c.expected, conv_lit);
    g.file(("conv_2d_16x8", "ConvCase"), golden::conv_2d_16x8(), other, conv_need, |c| &c.expected, conv_lit);

    let dw_need = |c: &DepthwiseConvCase| Need {
        bytes: c.input.len() + c.filter.len() + out_need(&c.expected).bytes,
        scratch: microquant_tests::oracle::depthwise::scratch_len(c),
        channels: c.filter_shape[3],
        ..out_need(&c.expected)
    };
    let dw_lit = |c: &DepthwiseConvCase| {
        format!(
            "DepthwiseConvCase {{ name: {:?}, input: {}, input_shape: &{:?}, input_scale: {}, input_zero_point: {}, \
             filter: {}, filter_shape: &{:?}, filter_scales: {}, bias: {}, output_scale: {}, output_zero_point: {}, \
             padding: {}, stride: {:?}, dilation: {:?}, depth_multiplier: {}, activation: {}, expected: {} }}",
            c.name,
            values(&c.input),
            c.input_shape,
            f(c.input_scale),
            c.input_zero_point,
            i8s(c.filter),
            c.filter_shape,
            f32s(c.filter_scales),
            bias(&c.bias),
            f(c.output_scale),
            c.output_zero_point,
            pad(c.padding),
            c.stride,
            c.dilation,
            c.depth_multiplier,
            act(c.activation),
            expected(&c.expected)
        )
    };
    g.file(
        ("depthwise_conv_2d", "DepthwiseConvCase"),
        golden::depthwise_conv_2d(),
        main,
        dw_need,
        |c| &c.expected,
        dw_lit,
    );
    let dw16 = golden::depthwise_conv_2d_16x8();
    g.file(("depthwise_conv_2d_16x8", "DepthwiseConvCase"), dw16, other, dw_need, |c| &c.expected, dw_lit);

    let fc_need = |c: &FullyConnectedCase| Need {
        bytes: c.input.len() + c.filter.len() + out_need(&c.expected).bytes,
        scratch: 8 * c.filter_shape[1].div_ceil(8) * 2 + 4,
        channels: c.filter_shape[0],
        ..out_need(&c.expected)
    };
    let fc_lit = |c: &FullyConnectedCase| {
        format!(
            "FullyConnectedCase {{ name: {:?}, input: {}, input_scale: {}, input_zero_point: {}, filter: {}, \
             filter_shape: {:?}, filter_scales: {}, bias: {}, output_scale: {}, output_zero_point: {}, activation: {}, \
             expected: {} }}",
            c.name,
            values(&c.input),
            f(c.input_scale),
            c.input_zero_point,
            i8s(c.filter),
            c.filter_shape,
            f32s(c.filter_scales),
            bias(&c.bias),
            f(c.output_scale),
            c.output_zero_point,
            act(c.activation),
            expected(&c.expected)
        )
    };
    g.file(
        ("fully_connected", "FullyConnectedCase"),
        golden::fully_connected(),
        main,
        fc_need,
        |c| &c.expected,
        fc_lit,
    );
    let fc16 = golden::fully_connected_16x8();
    g.file(("fully_connected_16x8", "FullyConnectedCase"), fc16, other, fc_need, |c| &c.expected, fc_lit);

    let pool_need = |c: &PoolCase| Need { bytes: c.input.len() + out_need(&c.expected).bytes, ..out_need(&c.expected) };
    let pool_lit = |c: &PoolCase| {
        format!(
            "PoolCase {{ name: {:?}, pool: Pool::{}, input: {}, input_shape: &{:?}, scale: {}, zero_point: {}, \
             padding: {}, stride: {:?}, filter: {:?}, activation: {}, expected: {} }}",
            c.name,
            if c.pool == Pool::Max { "Max" } else { "Average" },
            i8s(c.input),
            c.input_shape,
            f(c.scale),
            c.zero_point,
            pad(c.padding),
            c.stride,
            c.filter,
            act(c.activation),
            expected(&c.expected)
        )
    };
    g.file(("max_pool_2d", "PoolCase"), golden::max_pool_2d(), main, pool_need, |c| &c.expected, pool_lit);
    g.file(("average_pool_2d", "PoolCase"), golden::average_pool_2d(), main, pool_need, |c| &c.expected, pool_lit);

    let bin_need = |c: &BinaryCase| Need {
        bytes: 2 * (c.input1.len() + c.input2.len()) + out_need(&c.expected).bytes,
        ..out_need(&c.expected)
    };
    let bin_lit = |c: &BinaryCase| {
        format!(
            "BinaryCase {{ name: {:?}, op: BinaryOp::{:?}, input1: {}, input1_shape: &{:?}, input1_scale: {}, \
             input1_zero_point: {}, input2: {}, input2_shape: &{:?}, input2_scale: {}, input2_zero_point: {}, \
             output_scale: {}, output_zero_point: {}, activation: {}, expected: {} }}",
            c.name,
            c.op,
            values(&c.input1),
            c.input1_shape,
            f(c.input1_scale),
            c.input1_zero_point,
            values(&c.input2),
            c.input2_shape,
            f(c.input2_scale),
            c.input2_zero_point,
            f(c.output_scale),
            c.output_zero_point,
            act(c.activation),
            expected(&c.expected)
        )
    };
    g.file(("add", "BinaryCase"), golden::add(), other, bin_need, |c| &c.expected, bin_lit);
    g.file(("add_16x8", "BinaryCase"), golden::add_16x8(), other, bin_need, |c| &c.expected, bin_lit);
    g.file(("mul", "BinaryCase"), golden::mul(), other, bin_need, |c| &c.expected, bin_lit);
    g.file(("sub", "BinaryCase"), golden::sub(), other, bin_need, |c| &c.expected, bin_lit);
    g.file(("sub_16x8", "BinaryCase"), golden::sub_16x8(), other, bin_need, |c| &c.expected, bin_lit);
    g.file(("minimum", "BinaryCase"), golden::minimum(), other, bin_need, |c| &c.expected, bin_lit);
    g.file(("maximum", "BinaryCase"), golden::maximum(), other, bin_need, |c| &c.expected, bin_lit);
    g.file(("prelu", "BinaryCase"), golden::prelu(), other, bin_need, |c| &c.expected, bin_lit);
    g.file(("prelu_16x8", "BinaryCase"), golden::prelu_16x8(), other, bin_need, |c| &c.expected, bin_lit);
    g.file(("div", "BinaryCase"), golden::div(), other, bin_need, |c| &c.expected, bin_lit);
    g.file(
        ("squared_difference", "BinaryCase"),
        golden::squared_difference(),
        other,
        bin_need,
        |c| &c.expected,
        bin_lit,
    );

    let sm_need =
        |c: &SoftmaxCase| Need { bytes: 2 * c.input.len() + out_need(&c.expected).bytes, ..out_need(&c.expected) };
    let sm_lit = |c: &SoftmaxCase| {
        format!(
            "SoftmaxCase {{ name: {:?}, input: {}, depth: {}, input_scale: {}, input_zero_point: {}, beta: {}, \
             output_scale: {}, output_zero_point: {}, expected: {} }}",
            c.name,
            values(&c.input),
            c.depth,
            f(c.input_scale),
            c.input_zero_point,
            f(c.beta),
            f(c.output_scale),
            c.output_zero_point,
            expected(&c.expected)
        )
    };
    g.file(("softmax", "SoftmaxCase"), golden::softmax(), other, sm_need, |c| &c.expected, sm_lit);
    g.file(("softmax_16x8", "SoftmaxCase"), golden::softmax_16x8(), other, sm_need, |c| &c.expected, sm_lit);

    let un_need = |c: &UnaryCase| Need { bytes: c.input.len() + out_need(&c.expected).bytes, ..out_need(&c.expected) };
    let un_lit = |c: &UnaryCase| {
        let op = match c.op {
            UnaryOp::Logistic => "Logistic",
            UnaryOp::Tanh => "Tanh",
            UnaryOp::HardSwish => "HardSwish",
        };
        format!(
            "UnaryCase {{ name: {:?}, op: UnaryOp::{op}, input: {}, input_scale: {}, input_zero_point: {}, \
             output_scale: {}, output_zero_point: {}, expected: {} }}",
            c.name,
            i8s(c.input),
            f(c.input_scale),
            c.input_zero_point,
            f(c.output_scale),
            c.output_zero_point,
            expected(&c.expected)
        )
    };
    g.file(("logistic", "UnaryCase"), golden::logistic(), other, un_need, |c| &c.expected, un_lit);
    g.file(("tanh", "UnaryCase"), golden::tanh(), other, un_need, |c| &c.expected, un_lit);
    g.file(("hard_swish", "UnaryCase"), golden::hard_swish(), other, un_need, |c| &c.expected, un_lit);

    let lr_need = |c: &LeakyReluCase| {
        let w = if matches!(c.input, Values::I16(_)) { 2 } else { 1 };
        Need { bytes: w * c.input.len() + out_need(&c.expected).bytes, ..out_need(&c.expected) }
    };
    let lr_lit = |c: &LeakyReluCase| {
        format!(
            "LeakyReluCase {{ name: {:?}, input: {}, input_scale: {}, input_zero_point: {}, alpha: {}, \
             output_scale: {}, output_zero_point: {}, expected: {} }}",
            c.name,
            values(&c.input),
            f(c.input_scale),
            c.input_zero_point,
            f(c.alpha),
            f(c.output_scale),
            c.output_zero_point,
            expected(&c.expected)
        )
    };
    g.file(("leaky_relu", "LeakyReluCase"), golden::leaky_relu(), other, lr_need, |c| &c.expected, lr_lit);
    g.file(("leaky_relu_16x8", "LeakyReluCase"), golden::leaky_relu_16x8(), other, lr_need, |c| &c.expected, lr_lit);

    let eu_need = |c: &ElementwiseUnaryCase| {
        let w = if matches!(c.input, Values::I16(_)) { 2 } else { 1 };
        Need { bytes: w * c.input.len() + out_need(&c.expected).bytes, ..out_need(&c.expected) }
    };
    let eu_lit = |c: &ElementwiseUnaryCase| {
        format!(
            "ElementwiseUnaryCase {{ name: {:?}, op: {:?}, input: {}, input_scale: {}, input_zero_point: {}, \
             output_scale: {}, output_zero_point: {}, expected: {} }}",
            c.name,
            c.op,
            values(&c.input),
            f(c.input_scale),
            c.input_zero_point,
            f(c.output_scale),
            c.output_zero_point,
            expected(&c.expected)
        )
    };
    for (file, cases) in [
        ("relu", golden::relu()),
        ("relu_16x8", golden::relu_16x8()),
        ("abs", golden::abs()),
        ("abs_16x8", golden::abs_16x8()),
        ("neg", golden::neg()),
        ("rsqrt", golden::rsqrt()),
        ("elu", golden::elu()),
    ] {
        g.file((file, "ElementwiseUnaryCase"), cases, other, eu_need, |c| &c.expected, eu_lit);
    }

    let concat_need = |c: &ConcatCase| Need {
        bytes: c.inputs.iter().map(|v| v.len()).sum::<usize>() + out_need(&c.expected).bytes,
        ..out_need(&c.expected)
    };
    let concat_lit = |c: &ConcatCase| {
        let inputs: Vec<String> = c.inputs.iter().map(|v| i8s(v)).collect();
        let shapes: Vec<String> = c.input_shapes.iter().map(|s| format!("&{s:?}")).collect();
        format!(
            "ConcatCase {{ name: {:?}, inputs: &[{}], input_shapes: &[{}], input_scales: {}, input_zero_points: &{:?}, \
             axis: {}, output_scale: {}, output_zero_point: {}, expected: {} }}",
            c.name,
            inputs.join(", "),
            shapes.join(", "),
            f32s(c.input_scales),
            c.input_zero_points,
            c.axis,
            f(c.output_scale),
            c.output_zero_point,
            expected(&c.expected)
        )
    };
    g.file(("concatenation", "ConcatCase"), golden::concatenation(), other, concat_need, |c| &c.expected, concat_lit);
    let pad_lit = |c: &PadCase| {
        format!(
            "PadCase {{ name: {:?}, input: {}, input_shape: &{:?}, paddings: &{:?}, output_scale: {}, \
             output_zero_point: {}, expected: {} }}",
            c.name,
            i8s(c.input),
            c.input_shape,
            c.paddings,
            f(c.output_scale),
            c.output_zero_point,
            expected(&c.expected)
        )
    };
    let pad_need = |c: &PadCase| Need { bytes: c.input.len() + out_need(&c.expected).bytes, ..out_need(&c.expected) };
    g.file(("pad", "PadCase"), golden::pad(), other, pad_need, |c| &c.expected, pad_lit);
    let mean_lit = |c: &MeanCase| {
        format!(
            "MeanCase {{ name: {:?}, input: {}, input_shape: &{:?}, axis: &{:?}, input_scale: {}, input_zero_point: {}, \
             output_scale: {}, output_zero_point: {}, expected: {} }}",
            c.name,
            i8s(c.input),
            c.input_shape,
            c.axis,
            f(c.input_scale),
            c.input_zero_point,
            f(c.output_scale),
            c.output_zero_point,
            expected(&c.expected)
        )
    };
    let mean_need = |c: &MeanCase| Need {
        bytes: c.input.len() + out_need(&c.expected).bytes,
        acc: c.expected.len(),
        ..out_need(&c.expected)
    };
    g.file(("mean", "MeanCase"), golden::mean(), other, mean_need, |c| &c.expected, mean_lit);
    let reshape_lit = |c: &ReshapeCase| {
        format!(
            "ReshapeCase {{ name: {:?}, input: {}, new_shape: &{:?}, expected: {} }}",
            c.name,
            i8s(c.input),
            c.new_shape,
            expected(&c.expected)
        )
    };
    let reshape_need =
        |c: &ReshapeCase| Need { bytes: c.input.len() + out_need(&c.expected).bytes, ..out_need(&c.expected) };
    g.file(("reshape", "ReshapeCase"), golden::reshape(), other, reshape_need, |c| &c.expected, reshape_lit);
    let transpose_lit = |c: &TransposeCase| {
        format!(
            "TransposeCase {{ name: {:?}, input: {}, input_shape: &{:?}, perm: &{:?}, expected: {} }}",
            c.name,
            i8s(c.input),
            c.input_shape,
            c.perm,
            expected(&c.expected)
        )
    };
    let transpose_need =
        |c: &TransposeCase| Need { bytes: c.input.len() + out_need(&c.expected).bytes, ..out_need(&c.expected) };
    g.file(("transpose", "TransposeCase"), golden::transpose(), other, transpose_need, |c| &c.expected, transpose_lit);
    movement_files(&mut g, other);

    g.src.push_str(
        "use microquant::kernels::resize::ResizeMethod;\nuse microquant_tests::oracle::spatial::ResizeCase;\n",
    );
    let resize_lit = |c: &ResizeCase| {
        format!(
            "ResizeCase {{ name: {:?}, method: ResizeMethod::{:?}, input: {}, input_shape: &{:?}, size: {:?}, \
             align_corners: {}, half_pixel_centers: {}, expected: {} }}",
            c.name,
            c.method,
            values(&c.input),
            c.input_shape,
            c.size,
            c.align_corners,
            c.half_pixel_centers,
            expected(&c.expected)
        )
    };
    let resize_need = |c: &ResizeCase| {
        let o = out_need(&c.expected);
        let input = c.input.len() * if matches!(c.input, Values::I16(_)) { 2 } else { 1 };
        Need { bytes: input + o.bytes, ..o }
    };
    for (func, file) in [
        ("resize_nearest_neighbor", golden::resize_nearest_neighbor()),
        ("resize_nearest_neighbor_16x8", golden::resize_nearest_neighbor_16x8()),
        ("resize_bilinear", golden::resize_bilinear()),
    ] {
        g.file((func, "ResizeCase"), file, other, resize_need, |c| &c.expected, resize_lit);
    }
    g.src.push_str("use microquant_tests::oracle::spatial::{ReduceCase, ReduceOp};\n");
    let reduce_lit = |c: &ReduceCase| {
        format!(
            "ReduceCase {{ name: {:?}, op: ReduceOp::{:?}, input: {}, input_shape: &{:?}, axis: &{:?}, \
             input_scale: {}, input_zero_point: {}, output_scale: {}, output_zero_point: {}, expected: {} }}",
            c.name,
            c.op,
            values(&c.input),
            c.input_shape,
            c.axis,
            f(c.input_scale),
            c.input_zero_point,
            f(c.output_scale),
            c.output_zero_point,
            expected(&c.expected)
        )
    };
    let reduce_need = |c: &ReduceCase| {
        let o = out_need(&c.expected);
        let input = c.input.len() * if matches!(c.input, Values::I16(_)) { 2 } else { 1 };
        Need { bytes: input + o.bytes, acc: c.expected.len(), ..o }
    };
    for (func, file) in [
        ("reduce_sum", golden::reduce_sum()),
        ("reduce_sum_16x8", golden::reduce_sum_16x8()),
        ("reduce_max", golden::reduce_max()),
    ] {
        g.file((func, "ReduceCase"), file, other, reduce_need, |c| &c.expected, reduce_lit);
    }

    // LSTM: the output, then the hidden state (int8 in out_i8, int16 after the output in
    // out_i16) and the cell state (int16) in the output buffers.
    let lstm_need = |c: &LstmCase| {
        let state = c.dims[0] * c.dims[3];
        let weights = c.input_weights.len() + c.recurrent_weights.len() + 4 * c.dims[3] * 8;
        let n = c.expected.len();
        let (out_i8, out_i16) = match c.expected.tflm {
            Values::I8(_) => (n + state, state),
            Values::I16(_) => (0, n + 2 * state),
        };
        Need { bytes: 2 * c.input.len() + weights + out_need(&c.expected).bytes, out_i8, out_i16, ..Need::default() }
    };
    let lstm_lit = |c: &LstmCase| {
        format!(
            "LstmCase {{ name: {:?}, dims: {:?}, time_major: {}, chunks: {}, input: {}, input_scale: {}, \
             input_zero_point: {}, input_weights: {}, input_weight_scales: {}, recurrent_weights: {}, \
             recurrent_weight_scales: {}, bias: {}, hidden_scale: {}, hidden_zero_point: {}, cell_scale: {}, \
             cell_clip: {}, expected: {} }}",
            c.name,
            c.dims,
            c.time_major,
            c.chunks,
            values(&c.input),
            f(c.input_scale),
            c.input_zero_point,
            i8s(c.input_weights),
            f32s(c.input_weight_scales),
            i8s(c.recurrent_weights),
            f32s(c.recurrent_weight_scales),
            bias(&c.bias),
            f(c.hidden_scale),
            c.hidden_zero_point,
            f(c.cell_scale),
            f(c.cell_clip),
            expected(&c.expected)
        )
    };
    g.file(("lstm", "LstmCase"), golden::lstm(), other, lstm_need, |c| &c.expected, lstm_lit);
    g.file(("lstm_16x8", "LstmCase"), golden::lstm_16x8(), other, lstm_need, |c| &c.expected, lstm_lit);

    // TRANSPOSE_CONV: an i32 (16x8: i64) accumulator per output element in the scratch.
    g.src.push_str("use microquant_tests::oracle::transpose_conv::TransposeConvCase;\n");
    let tconv_need = |c: &TransposeConvCase| {
        let o = out_need(&c.expected);
        let wide = matches!(c.input, Values::I16(_));
        let n = c.expected.len();
        Need {
            bytes: c.input.len() * if wide { 2 } else { 1 } + c.filter.len() + o.bytes,
            scratch: if wide { 8 * n + 7 } else { 4 * n + 3 },
            channels: c.filter_shape[0],
            ..o
        }
    };
    let tconv_lit = |c: &TransposeConvCase| {
        format!(
            "TransposeConvCase {{ name: {:?}, input: {}, input_shape: &{:?}, input_scale: {}, input_zero_point: {}, \
             filter: {}, filter_shape: &{:?}, filter_scales: {}, bias: {}, output_scale: {}, output_zero_point: {}, \
             output_shape: &{:?}, padding: {}, stride: {:?}, activation: {}, expected: {} }}",
            c.name,
            values(&c.input),
            c.input_shape,
            f(c.input_scale),
            c.input_zero_point,
            i8s(c.filter),
            c.filter_shape,
            f32s(c.filter_scales),
            bias(&c.bias),
            f(c.output_scale),
            c.output_zero_point,
            c.output_shape,
            pad(c.padding),
            c.stride,
            act(c.activation),
            expected(&c.expected)
        )
    };
    let (tc, tc16) = (golden::transpose_conv(), golden::transpose_conv_16x8());
    g.file(("transpose_conv", "TransposeConvCase"), tc, other, tconv_need, |c| &c.expected, tconv_lit);
    g.file(("transpose_conv_16x8", "TransposeConvCase"), tc16, other, tconv_need, |c| &c.expected, tconv_lit);
    let bmm_need = |c: &BatchMatMulCase| {
        let w = if matches!(c.lhs, Values::I16(_)) { 2 } else { 1 };
        Need { bytes: w * (c.lhs.len() + c.rhs.len()) + out_need(&c.expected).bytes, ..out_need(&c.expected) }
    };
    let bmm_lit = |c: &BatchMatMulCase| {
        format!(
            "BatchMatMulCase {{ name: {:?}, lhs: {}, lhs_shape: &{:?}, lhs_scale: {}, lhs_zero_point: {}, rhs: {}, \
             rhs_shape: &{:?}, rhs_scale: {}, rhs_zero_point: {}, output_scale: {}, output_zero_point: {}, \
             adj_x: {}, adj_y: {}, expected: {} }}",
            c.name,
            values(&c.lhs),
            c.lhs_shape,
            f(c.lhs_scale),
            c.lhs_zero_point,
            values(&c.rhs),
            c.rhs_shape,
            f(c.rhs_scale),
            c.rhs_zero_point,
            f(c.output_scale),
            c.output_zero_point,
            c.adj_x,
            c.adj_y,
            expected(&c.expected)
        )
    };
    g.file(("batch_matmul", "BatchMatMulCase"), golden::batch_matmul(), other, bmm_need, |c| &c.expected, bmm_lit);
    g.file(
        ("batch_matmul_16x8", "BatchMatMulCase"),
        golden::batch_matmul_16x8(),
        other,
        bmm_need,
        |c| &c.expected,
        bmm_lit,
    );

    let m = g.max;
    writeln!(
        g.src,
        "/// The largest int8 and int16 outputs (values), scratch (bytes), channel count and MEAN\n\
         /// accumulators of the embedded cases: the device's workspace.\n\
         pub const MAX_OUT_I8: usize = {};\npub const MAX_OUT_I16: usize = {};\npub const MAX_SCRATCH: usize = {};\n\
         pub const MAX_CHANNELS: usize = {};\npub const MAX_ACC: usize = {};",
        m.out_i8, m.out_i16, m.scratch, m.channels, m.acc
    )
    .unwrap();
    std::fs::write(path, g.src).unwrap();
    for f in g.files {
        println!("cargo:rerun-if-changed=../tests/golden/kernels/{f}");
    }
    println!("cargo:rerun-if-changed=build_kernels.rs");
}

/// The data-movement files (`oracle::movement`): one case view for all of them; on the micro:bit
/// one small case of each (its flash holds no more).
fn movement_files(g: &mut Gen, other: Option<usize>) {
    let other = other.map(|_| 1);
    let lit = |c: &MovementCase| {
        format!(
            "MovementCase {{ name: {:?}, op: MoveOp::{:?}, input: {}, input_shape: &{:?}, params: &{:?}, expected: {} }}",
            c.name,
            c.op,
            values(&c.input),
            c.input_shape,
            c.params,
            expected(&c.expected)
        )
    };
    let need = |c: &MovementCase| {
        let o = out_need(&c.expected);
        let w = if matches!(c.input, Values::I16(_)) { 2 } else { 1 };
        Need { bytes: c.input.len() * w + o.bytes, ..o }
    };
    type Loader = fn() -> File<MovementCase<'static>>;
    let files: [(&str, Loader); 10] = [
        ("slice", golden::slice),
        ("slice_16", golden::slice_16),
        ("strided_slice", golden::strided_slice),
        ("strided_slice_16", golden::strided_slice_16),
        ("depth_to_space", golden::depth_to_space),
        ("space_to_depth", golden::space_to_depth),
        ("mirror_pad", golden::mirror_pad),
        ("gather", golden::gather),
        ("broadcast_to", golden::broadcast_to),
        ("broadcast_to_16", golden::broadcast_to_16),
    ];
    for (func, load) in files {
        g.file((func, "MovementCase"), load(), other, need, |c| &c.expected, lit);
    }
}
