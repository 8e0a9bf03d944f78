//! Cross-layer equalization on graphs small enough to equalize by hand: the scales are the
//! paper's `s_i = √(r1_i / r2_i)`, the equalized ranges agree per channel, the float outputs
//! do not move (within 1e-5) wherever only homogeneous ops lie between the layers, clips are
//! not crossed unless ReLU6 is replaced as documented, and zero channels keep their scale.

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use super::*;
use crate::float::FloatExecutor;
use crate::graph::{
    Conv2d, ConvertErrorKind, DepthwiseConv2d, FullyConnected, GraphMetadata, Node, Padding, Pool2d, Tensor,
};
use crate::graph::{DType, Graph};

/// A graph being built; every step may fail with the graph's own errors.
struct Build(Graph);

impl Build {
    fn new() -> Self {
        Self(Graph::new(GraphMetadata::new("cle test", "built by hand")))
    }
    fn input(&mut self, shape: &[usize]) -> Result<TensorId, ConvertError> {
        let id = self.0.add_tensor(Tensor::new("x", shape.to_vec(), DType::F32))?;
        self.0.inputs.push(id);
        Ok(id)
    }
    fn constant(&mut self, name: &str, shape: &[usize], v: &[f32]) -> Result<TensorId, ConvertError> {
        self.0.add_tensor(Tensor::constant(name, shape.to_vec(), ConstData::F32(v.to_vec())))
    }
    fn node(&mut self, name: &str, op: Op, inputs: &[Option<TensorId>]) -> Result<TensorId, ConvertError> {
        let mut n = Node::new(name, op, inputs.to_vec(), Vec::new());
        let shape = self.0.infer_output_shapes(&n)?.into_iter().next().unwrap_or_default();
        let id = self.0.add_tensor(Tensor::new(format!("{name}/out"), shape, DType::F32))?;
        n.outputs.push(id);
        self.0.add_node(n);
        Ok(id)
    }
    fn finish(mut self, outputs: &[TensorId]) -> Result<Graph, ConvertError> {
        self.0.outputs.extend_from_slice(outputs);
        self.0.validate()?;
        Ok(self.0)
    }
}

fn fail(msg: String) -> ConvertError {
    ConvertError::new(ConvertErrorKind::InvalidGraph, msg)
}

fn fc(activation: FusedActivation) -> Op {
    Op::FullyConnected(FullyConnected { activation, keep_num_dims: false })
}

fn conv(activation: FusedActivation) -> Op {
    Op::Conv2d(Conv2d { stride_h: 1, stride_w: 1, dilation_h: 1, dilation_w: 1, padding: Padding::Same, activation })
}

fn depthwise(activation: FusedActivation) -> Op {
    Op::DepthwiseConv2d(DepthwiseConv2d {
        stride_h: 1,
        stride_w: 1,
        dilation_h: 1,
        dilation_w: 1,
        depth_multiplier: 1,
        padding: Padding::Same,
        activation,
    })
}

/// The f32 data of the weight (`slot` 1) or bias (2) of the node named `name`.
fn data(g: &Graph, name: &str, slot: usize) -> Result<Vec<f32>, ConvertError> {
    let node = g.nodes.iter().find(|n| n.name == name).ok_or_else(|| fail(format!("no node {name}")))?;
    let t = node.input(slot).ok_or_else(|| fail(format!("{name} has no input {slot}")))?;
    plain_f32(g, t).map(<[f32]>::to_vec).ok_or_else(|| fail(format!("{name} input {slot} is not f32")))
}

/// Deterministic values in [-2, 2).
fn values(n: usize, seed: u32) -> Vec<f32> {
    (0..n as u32)
        .map(|i| ((i.wrapping_mul(2_654_435_761) ^ seed.wrapping_mul(40_503)) % 4001) as f32 / 1000.25 - 2.0)
        .collect()
}

/// Both graphs on the same inputs: outputs within `tol · max(1, |y|)`.
fn same_function(before: &Graph, after: &Graph, tol: f32) -> Result<(), ConvertError> {
    let (a, b) = (FloatExecutor::new(before)?, FloatExecutor::new(after)?);
    for seed in 0..4 {
        let inputs: Vec<Vec<f32>> = before
            .inputs
            .iter()
            .enumerate()
            .map(|(k, &t)| values(before.tensor(t).and_then(Tensor::num_elements).unwrap_or(0), seed * 7 + k as u32))
            .collect();
        let refs: Vec<&[f32]> = inputs.iter().map(Vec::as_slice).collect();
        for (ya, yb) in a.run(&refs)?.iter().zip(&b.run(&refs)?) {
            for (u, v) in ya.iter().zip(yb) {
                if (u - v).abs() > tol * u.abs().max(1.0) {
                    return Err(fail(format!("outputs differ: {u} before, {v} after")));
                }
            }
        }
    }
    Ok(())
}

fn close(a: &[f32], b: &[f32], tol: f32) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= tol * x.abs().max(1.0))
}

/// fc1 (ReLU) → fc2, two channels. Output rows of W1 have ranges r1 = [4, 1], input columns of
/// W2 have r2 = [1, 4]: s = √(r1 / r2) = [2, 1/2], so W1 rows and b1 are divided by [2, 1/2] and
/// W2's columns multiplied by them; every range becomes √(r1 r2) = 2. All values are powers of
/// two apart, so the results are exact.
fn two_fc(activation: FusedActivation) -> Result<Graph, ConvertError> {
    let mut b = Build::new();
    let x = b.input(&[1, 2])?;
    let w1 = b.constant("w1", &[2, 2], &[4.0, -2.0, 1.0, 0.5])?;
    let b1 = b.constant("b1", &[2], &[2.0, -1.0])?;
    let h = b.node("fc1", fc(activation), &[Some(x), Some(w1), Some(b1)])?;
    let w2 = b.constant("w2", &[2, 2], &[1.0, -4.0, 0.5, 2.0])?;
    let b2 = b.constant("b2", &[2], &[0.1, 0.2])?;
    let y = b.node("fc2", fc(FusedActivation::None), &[Some(h), Some(w2), Some(b2)])?;
    b.finish(&[y])
}

#[test]
fn two_layers_with_a_relu_get_the_papers_scales_and_equal_ranges() -> Result<(), ConvertError> {
    let before = two_fc(FusedActivation::Relu)?;
    let mut g = before.clone();
    let r = equalize(&mut g, &CleOptions::default())?;
    assert_eq!(data(&g, "fc1", 1)?, [2.0, -1.0, 2.0, 1.0]);
    assert_eq!(data(&g, "fc1", 2)?, [1.0, -2.0]);
    assert_eq!(data(&g, "fc2", 1)?, [2.0, -2.0, 1.0, 1.0]);
    assert_eq!(data(&g, "fc2", 2)?, [0.1, 0.2], "the second bias stays");
    assert_eq!(r.pairs.len(), 1);
    let p = &r.pairs[0];
    assert_eq!((p.first.as_str(), p.second.as_str(), p.channels), ("fc1", "fc2", 2));
    assert_eq!(p.through, "relu");
    assert_eq!(p.scales, (0.5, 2.0));
    // One sweep rescales, the second finds every scale 1.
    assert_eq!((r.sweeps, r.converged), (2, true));
    // fc1: channel ranges [4, 1] -> [2, 2] (precision 5/8 -> 1); fc2's rows [4, 2] -> [2, 1].
    assert_eq!(r.layers.len(), 2);
    assert_eq!((r.layers[0].precision_before, r.layers[0].precision_after), (0.625, 1.0));
    assert_eq!((r.layers[0].max_before, r.layers[0].max_after), (4.0, 2.0));
    assert_eq!((r.layers[1].precision_before, r.layers[1].precision_after), (0.75, 0.75));
    let text = r.to_string();
    assert!(text.contains("#0 fc1 -> #1 fc2 (2 channels, through relu): scales 0.5000..2.0000"), "{text}");
    assert!(text.contains("0.625 -> 1.000   4.0000 -> 2.0000"), "{text}");
    let json = r.to_json();
    assert!(json.starts_with(r#"{"pairs":[{"first":"fc1","second":"fc2","first_index":0,"second_index":1,"channels":2,"through":"relu","scale_min":0.5,"scale_max":2}]"#), "{json}");
    assert!(json.ends_with(r#""skipped":[],"relu6_replaced":[],"sweeps":2,"converged":true}"#), "{json}");
    same_function(&before, &g, 1e-5)
}

#[test]
fn no_activation_is_crossed_too() -> Result<(), ConvertError> {
    let before = two_fc(FusedActivation::None)?;
    let mut g = before.clone();
    let r = equalize(&mut g, &CleOptions::default())?;
    assert_eq!(r.pairs.len(), 1);
    assert_eq!(r.pairs[0].through, "none");
    assert_eq!(data(&g, "fc1", 1)?, [2.0, -1.0, 2.0, 1.0]);
    same_function(&before, &g, 1e-5)
}

/// conv 1×1 (ReLU) → depthwise 3×3 (ReLU) → conv 1×1, two channels. The products of the three
/// ranges per channel, r_conv1 · r_dw · r_conv2, are invariant (conv1 is divided by s1, the
/// depthwise multiplied by s1 and divided by s2, conv2 multiplied by s2), and at the fixed point
/// all three are equal: each becomes the cube root of the product. Ranges conv1 [8, 1], depthwise
/// [1, 1], conv2 input channels [1, 8]: every range becomes ∛8 = 2.
#[test]
fn a_conv_depthwise_conv_chain_converges_to_the_cube_root() -> Result<(), ConvertError> {
    let mut b = Build::new();
    let x = b.input(&[1, 4, 4, 3])?;
    // conv1 [2, 1, 1, 3]: rows with max |w| 8 and 1.
    let w1 = b.constant("w1", &[2, 1, 1, 3], &[8.0, -3.0, 1.0, 0.25, -1.0, 0.5])?;
    let b1 = b.constant("b1", &[2], &[0.5, -0.25])?;
    let h1 = b.node("conv1", conv(FusedActivation::Relu), &[Some(x), Some(w1), Some(b1)])?;
    // depthwise [1, 3, 3, 2]: both channels with max |w| 1.
    let dw: Vec<f32> =
        (0..18).map(|k| if k % 2 == 0 { [1.0, -0.5, 0.25][k % 3] } else { [-1.0, 0.75, 0.5][k % 3] }).collect();
    let w2 = b.constant("w2", &[1, 3, 3, 2], &dw)?;
    let b2 = b.constant("b2", &[2], &[0.125, 0.375])?;
    let h2 = b.node("dw", depthwise(FusedActivation::Relu), &[Some(h1), Some(w2), Some(b2)])?;
    // conv2 [3, 1, 1, 2]: input columns with max |w| 1 and 8.
    let w3 = b.constant("w3", &[3, 1, 1, 2], &[1.0, 8.0, -0.5, -2.0, 0.25, 4.0])?;
    let y = b.node("conv2", conv(FusedActivation::None), &[Some(h2), Some(w3), None])?;
    let before = b.finish(&[y])?;
    let mut g = before.clone();
    let r = equalize(&mut g, &CleOptions { tolerance: 1e-7, ..CleOptions::default() })?;
    assert!(r.converged, "{r}");
    assert_eq!(r.pairs.len(), 2);
    assert_eq!((r.pairs[0].first.as_str(), r.pairs[0].second.as_str()), ("conv1", "dw"));
    assert_eq!((r.pairs[1].first.as_str(), r.pairs[1].second.as_str()), ("dw", "conv2"));
    let ranges_out = |v: &[f32], inner: usize| -> Vec<f32> {
        v.chunks(inner).map(|c| c.iter().fold(0f32, |m, x| m.max(x.abs()))).collect()
    };
    let per_channel = |v: &[f32], c: usize| -> Vec<f32> {
        (0..c).map(|i| v.iter().skip(i).step_by(c).fold(0f32, |m, x| m.max(x.abs()))).collect()
    };
    let (g1, g2, g3) = (data(&g, "conv1", 1)?, data(&g, "dw", 1)?, data(&g, "conv2", 1)?);
    for (what, got) in
        [("conv1 out", ranges_out(&g1, 3)), ("dw", per_channel(&g2, 2)), ("conv2 in", per_channel(&g3, 2))]
    {
        if !close(&got, &[2.0, 2.0], 1e-5) {
            return Err(fail(format!("{what} ranges {got:?}, expected [2, 2]")));
        }
    }
    // conv1 channel 0 was divided by 4 in all (8 -> 2), channel 1 multiplied by 2 (1 -> 2).
    assert!(close(&data(&g, "conv1", 2)?, &[0.125, -0.5], 1e-5));
    assert!(close(&[r.pairs[0].scales.0, r.pairs[0].scales.1], &[0.5, 4.0], 1e-5), "{r}");
    same_function(&before, &g, 1e-5)
}

#[test]
fn relu6_is_not_crossed_unless_replaced() -> Result<(), ConvertError> {
    let before = two_fc(FusedActivation::Relu6)?;
    let mut g = before.clone();
    let r = equalize(&mut g, &CleOptions::default())?;
    assert!(r.pairs.is_empty());
    assert_eq!(g, before, "nothing changes");
    assert_eq!(
        r.skipped,
        [SkippedPair {
            first: "fc1".into(),
            first_index: 0,
            second: "fc2".into(),
            second_index: 1,
            clip: "relu6".into()
        }]
    );
    // Replaced: the pair is equalized as with a ReLU, and fc1's activation is now ReLU.
    let r = equalize(&mut g, &CleOptions { relu6_as_relu: true, ..CleOptions::default() })?;
    assert_eq!(r.relu6_replaced, ["fc1"]);
    assert_eq!(r.pairs.len(), 1);
    assert_eq!(g.nodes[0].op, fc(FusedActivation::Relu));
    assert_eq!(data(&g, "fc1", 1)?, [2.0, -1.0, 2.0, 1.0]);
    same_function(&two_fc(FusedActivation::Relu)?, &g, 1e-5)
}

#[test]
fn a_separate_relu6_or_clip_stops_the_pair() -> Result<(), ConvertError> {
    for (op, skipped) in [(Op::Relu6, true), (Op::Clip { min: -1.0, max: 3.0 }, false)] {
        let mut b = Build::new();
        let x = b.input(&[1, 2])?;
        let w1 = b.constant("w1", &[2, 2], &[4.0, -2.0, 1.0, 0.5])?;
        let h = b.node("fc1", fc(FusedActivation::None), &[Some(x), Some(w1), None])?;
        let c = b.node("clip", op, &[Some(h)])?;
        let w2 = b.constant("w2", &[2, 2], &[1.0, -4.0, 0.5, 2.0])?;
        let y = b.node("fc2", fc(FusedActivation::None), &[Some(c), Some(w2), None])?;
        let before = b.finish(&[y])?;
        let mut g = before.clone();
        let r = equalize(&mut g, &CleOptions::default())?;
        assert!(r.pairs.is_empty());
        assert_eq!(r.skipped.len(), usize::from(skipped));
        assert_eq!(g, before);
    }
    Ok(())
}

/// A dead output channel of the first layer (r1 = 0) and an unused input channel of the second
/// (r2 = 0) keep scale 1; the other channel is equalized.
#[test]
fn zero_channels_keep_their_scale() -> Result<(), ConvertError> {
    let mut b = Build::new();
    let x = b.input(&[1, 2])?;
    // fc1 rows: [0, 0] (dead, bias 3), [2, -1], [1, 1]; fc2 columns: [4, 2], [1, -1], [0, 0].
    let w1 = b.constant("w1", &[3, 2], &[0.0, 0.0, 2.0, -1.0, 1.0, 1.0])?;
    let b1 = b.constant("b1", &[3], &[3.0, 1.0, 1.0])?;
    let h = b.node("fc1", fc(FusedActivation::Relu), &[Some(x), Some(w1), Some(b1)])?;
    let w2 = b.constant("w2", &[2, 3], &[4.0, 1.0, 0.0, 2.0, -1.0, 0.0])?;
    let y = b.node("fc2", fc(FusedActivation::None), &[Some(h), Some(w2), None])?;
    let before = b.finish(&[y])?;
    let mut g = before.clone();
    let r = equalize(&mut g, &CleOptions::default())?;
    // Channel 1: r1 = 2, r2 = 1: s = √2; channels 0 and 2: s = 1.
    let s = core::f32::consts::SQRT_2;
    assert!(close(&data(&g, "fc1", 1)?, &[0.0, 0.0, 2.0 / s, -1.0 / s, 1.0, 1.0], 1e-6));
    assert!(close(&data(&g, "fc1", 2)?, &[3.0, 1.0 / s, 1.0], 1e-6));
    assert!(close(&data(&g, "fc2", 1)?, &[4.0, s, 0.0, 2.0, -s, 0.0], 1e-6));
    assert!(close(&[r.pairs[0].scales.0, r.pairs[0].scales.1], &[1.0, s], 1e-6));
    same_function(&before, &g, 1e-5)
}

/// Pooling, zero padding, a mean and a flatten between a conv and a fully-connected layer are
/// crossed (the flattened feature map's element k is channel k mod C), as is a leaky ReLU.
#[test]
fn homogeneous_ops_between_layers_are_crossed() -> Result<(), ConvertError> {
    let mut b = Build::new();
    let x = b.input(&[1, 4, 4, 2])?;
    let w1 = b.constant("w1", &[3, 1, 1, 2], &[5.0, -1.0, 0.1, 0.2, -2.0, 1.0])?;
    let b1 = b.constant("b1", &[3], &[0.5, -0.5, 0.25])?;
    let h = b.node("conv1", conv(FusedActivation::None), &[Some(x), Some(w1), Some(b1)])?;
    let h = b.node("leaky", Op::LeakyRelu { alpha: 0.1 }, &[Some(h)])?;
    let pool = Pool2d {
        filter_h: 2,
        filter_w: 2,
        stride_h: 2,
        stride_w: 2,
        padding: Padding::Valid,
        activation: FusedActivation::Relu,
    };
    let h = b.node("max", Op::MaxPool2d(pool), &[Some(h)])?;
    let h = b.node("pad", Op::Pad { paddings: vec![[0, 0], [1, 0], [0, 1], [0, 0]] }, &[Some(h)])?;
    let h = b.node("avg", Op::AvgPool2d(Pool2d { activation: FusedActivation::None, ..pool }), &[Some(h)])?;
    let h = b.node("flat", Op::Reshape { new_shape: vec![1, 3] }, &[Some(h)])?;
    let w2 = b.constant("w2", &[2, 3], &[0.5, 3.0, -1.0, 0.25, -0.5, 2.0])?;
    let y = b.node("fc", fc(FusedActivation::None), &[Some(h), Some(w2), None])?;
    let before = b.finish(&[y])?;
    let mut g = before.clone();
    let r = equalize(&mut g, &CleOptions::default())?;
    assert_eq!(r.pairs.len(), 1, "{r}");
    assert_eq!(r.pairs[0].through, "none, LeakyRelu, MaxPool2d, Pad, AvgPool2d, Reshape");
    // conv1 rows [5, 0.2, 2], fc columns [0.5, 3, 2]: s = √(r1 / r2) = [√10, √(1/15), 1].
    let want = [libm::sqrtf(10.0), libm::sqrtf(0.2 / 3.0), 1.0];
    assert!(close(&[r.pairs[0].scales.0, r.pairs[0].scales.1], &[want[1], want[0]], 1e-5), "{r}");
    same_function(&before, &g, 1e-5)
}

/// A layer whose output is read twice, or is a graph output, does not pair up.
#[test]
fn branches_and_graph_outputs_are_not_equalized() -> Result<(), ConvertError> {
    let mut b = Build::new();
    let x = b.input(&[1, 2])?;
    let w1 = b.constant("w1", &[2, 2], &[4.0, -2.0, 1.0, 0.5])?;
    let h = b.node("fc1", fc(FusedActivation::Relu), &[Some(x), Some(w1), None])?;
    let w2 = b.constant("w2", &[2, 2], &[1.0, -4.0, 0.5, 2.0])?;
    let y = b.node("fc2", fc(FusedActivation::None), &[Some(h), Some(w2), None])?;
    let z = b.node("fc3", fc(FusedActivation::None), &[Some(h), Some(w2), None])?;
    let before = b.finish(&[y, z])?;
    let mut g = before.clone();
    assert!(equalize(&mut g, &CleOptions::default())?.pairs.is_empty());
    assert_eq!(g, before);
    let before = two_fc(FusedActivation::Relu)?;
    let mut g = before.clone();
    let h = g.nodes[0].output(0).ok_or_else(|| fail("fc1 has no output".into()))?;
    g.outputs.push(h);
    let kept = g.clone();
    assert!(equalize(&mut g, &CleOptions::default())?.pairs.is_empty());
    assert_eq!(g, kept);
    Ok(())
}

/// A weight shared with a layer outside the pair is copied: that layer keeps its weights.
#[test]
fn shared_weights_are_copied() -> Result<(), ConvertError> {
    let mut b = Build::new();
    let x = b.input(&[1, 2])?;
    let w1 = b.constant("w1", &[2, 2], &[4.0, -2.0, 1.0, 0.5])?;
    let h = b.node("fc1", fc(FusedActivation::Relu), &[Some(x), Some(w1), None])?;
    let w2 = b.constant("w2", &[2, 2], &[1.0, -4.0, 0.5, 2.0])?;
    let y = b.node("fc2", fc(FusedActivation::None), &[Some(h), Some(w2), None])?;
    let z = b.node("other", fc(FusedActivation::None), &[Some(x), Some(w1), None])?;
    let before = b.finish(&[y, z])?;
    let mut g = before.clone();
    let r = equalize(&mut g, &CleOptions::default())?;
    assert_eq!(r.pairs.len(), 1, "{r}");
    assert_eq!(data(&g, "other", 1)?, [4.0, -2.0, 1.0, 0.5]);
    assert_eq!(data(&g, "fc1", 1)?, [2.0, -1.0, 2.0, 1.0]);
    assert_ne!(g.nodes[0].input(1), g.nodes[2].input(1));
    same_function(&before, &g, 1e-5)
}

/// Weights that carry quantization parameters (a QDQ model's) are left alone.
#[test]
fn carried_quantization_is_left_alone() -> Result<(), ConvertError> {
    let mut g = two_fc(FusedActivation::Relu)?;
    let w = g.nodes[1].input(1).ok_or_else(|| fail("fc2 has no weights".into()))?;
    if let Some(t) = g.tensor_mut(w) {
        t.quant = Some(crate::graph::TensorQuant::per_tensor(4.0 / 127.0, 0));
    }
    let before = g.clone();
    assert!(equalize(&mut g, &CleOptions::default())?.pairs.is_empty());
    assert_eq!(g, before);
    Ok(())
}

/// A depthwise layer with depth multiplier 2 as the second layer: its input channel i feeds its
/// output channels 2i and 2i + 1, so both are multiplied by s_i. conv rows r1 = [4, 1]; the
/// depthwise channels' ranges [1, 0.5 | 4, 2] give input channel ranges r2 = [1, 4]:
/// s = √(r1 / r2) = [2, 1/2].
#[test]
fn a_depthwise_multiplier_scales_each_input_channels_outputs() -> Result<(), ConvertError> {
    let mut b = Build::new();
    let x = b.input(&[1, 3, 3, 2])?;
    let w1 = b.constant("w1", &[2, 1, 1, 2], &[4.0, -1.0, 0.5, 1.0])?;
    let h = b.node("conv", conv(FusedActivation::Relu), &[Some(x), Some(w1), None])?;
    let op = Op::DepthwiseConv2d(DepthwiseConv2d {
        stride_h: 1,
        stride_w: 1,
        dilation_h: 1,
        dilation_w: 1,
        depth_multiplier: 2,
        padding: Padding::Valid,
        activation: FusedActivation::None,
    });
    let w2 = b.constant("w2", &[1, 1, 1, 4], &[1.0, -0.5, 4.0, 2.0])?;
    let b2 = b.constant("b2", &[4], &[0.5, 0.25, -0.5, 1.0])?;
    let y = b.node("dw", op, &[Some(h), Some(w2), Some(b2)])?;
    let before = b.finish(&[y])?;
    let mut g = before.clone();
    let r = equalize(&mut g, &CleOptions::default())?;
    assert_eq!(r.pairs.len(), 1, "{r}");
    assert_eq!(data(&g, "conv", 1)?, [2.0, -0.5, 1.0, 2.0]);
    assert_eq!(data(&g, "dw", 1)?, [2.0, -1.0, 2.0, 1.0]);
    assert_eq!(data(&g, "dw", 2)?, [0.5, 0.25, -0.5, 1.0], "the second layer's bias stays");
    same_function(&before, &g, 1e-5)
}
