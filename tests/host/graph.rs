//! The graph IR on tiny graphs built here: validation (and the location its errors report),
//! shape inference for every op, padding arithmetic, producer/consumer maps, MACs, sizes,
//! `Display`, pruning and dequantization.

use microquant::graph::*;

fn q(scale: f32, zp: i32) -> TensorQuant {
    TensorQuant::per_tensor(scale, zp)
}

fn conv(stride: usize, padding: Padding, activation: FusedActivation) -> Op {
    Op::Conv2d(Conv2d { stride_h: stride, stride_w: stride, dilation_h: 1, dilation_w: 1, padding, activation })
}

/// x[1,5,5,2] -conv 3x3 valid-> [1,3,3,4] -reshape-> [1,36] -fc-> [1,3], int8.
fn small_int8() -> Graph {
    let mut g = Graph::new(GraphMetadata::new("test", "built in tests/host/graph.rs"));
    let x = g.add_tensor(Tensor::new("x", vec![1, 5, 5, 2], DType::I8).with_quant(q(0.5, -1))).unwrap();
    let w = g
        .add_tensor(
            Tensor::constant("w", vec![4, 3, 3, 2], ConstData::I8((0..72).map(|i| (i % 7) as i8 - 3).collect()))
                .with_quant(TensorQuant::per_channel(vec![0.1, 0.2, 0.3, 0.4], vec![0; 4], 0)),
        )
        .unwrap();
    let b = g
        .add_tensor(
            Tensor::constant("b", vec![4], ConstData::I32(vec![1, 2, 3, 4])).with_quant(TensorQuant::per_channel(
                vec![0.05, 0.1, 0.15, 0.2],
                vec![0; 4],
                0,
            )),
        )
        .unwrap();
    let y = g.add_tensor(Tensor::new("y", vec![1, 3, 3, 4], DType::I8).with_quant(q(0.25, -128))).unwrap();
    let r = g.add_tensor(Tensor::new("r", vec![1, 36], DType::I8).with_quant(q(0.25, -128))).unwrap();
    let fw =
        g.add_tensor(Tensor::constant("fw", vec![3, 36], ConstData::I8(vec![1; 108])).with_quant(q(0.01, 0))).unwrap();
    let out = g.add_tensor(Tensor::new("out", vec![1, 3], DType::I8).with_quant(q(0.1, 3))).unwrap();
    g.add_node(Node::new(
        "conv",
        conv(1, Padding::Valid, FusedActivation::Relu),
        vec![Some(x), Some(w), Some(b)],
        vec![y],
    ));
    g.add_node(Node::new("flatten", Op::Reshape { new_shape: vec![1, 36] }, vec![Some(y)], vec![r]));
    g.add_node(Node::new(
        "fc",
        Op::FullyConnected(FullyConnected { activation: FusedActivation::None, keep_num_dims: false }),
        vec![Some(r), Some(fw), None],
        vec![out],
    ));
    g.inputs = vec![x];
    g.outputs = vec![out];
    g
}

fn invalid(g: &Graph) -> ConvertError {
    let e = g.validate().expect_err("the graph must be rejected");
    assert_eq!(e.kind(), ConvertErrorKind::InvalidGraph, "{e}");
    e
}

#[test]
fn a_valid_graph_passes_and_reports_macs_and_sizes() {
    let g = small_int8();
    g.validate().unwrap();
    // conv: 36 outputs x (3*3*2) taps; fc: 3 outputs x 36 inputs.
    assert_eq!(g.node_macs(0), 36 * 18);
    assert_eq!(g.node_macs(1), 0);
    assert_eq!(g.node_macs(2), 3 * 36);
    assert_eq!(g.node_macs(99), 0);
    assert_eq!(g.total_macs(), 648 + 108);
    assert_eq!(g.constant_totals(), ConstantTotals { tensors: 3, elements: 72 + 4 + 108, bytes: 72 + 16 + 108 });
}

#[test]
fn display_is_one_line_per_node() {
    let g = small_int8();
    let expected = "\
graph: 3 nodes, 7 tensors (3 constant, 196 bytes), 756 MACs
from: built in tests/host/graph.rs (test)
inputs: t0:i8[1, 5, 5, 2]
outputs: t6:i8[1, 3]
#0 Conv2d(stride 1x1, dilation 1x1, padding valid, relu) t0:i8[1, 5, 5, 2], t1:i8[4, 3, 3, 2]=const, t2:i32[4]=const -> t3:i8[1, 3, 3, 4]  [648 MACs]
#1 Reshape([1,36]) t3:i8[1, 3, 3, 4] -> t4:i8[1, 36]
#2 FullyConnected t4:i8[1, 36], t5:i8[3, 36]=const, - -> t6:i8[1, 3]  [108 MACs]
";
    assert_eq!(g.to_string(), expected);
    let alt = format!("{g:#}");
    assert!(alt.starts_with(expected));
    assert!(alt.contains("t1 i8[4, 3, 3, 2] \"w\" 4 scales on axis 0 const 72 bytes\n"), "{alt}");
    assert!(alt.contains("t0 i8[1, 5, 5, 2] \"x\" scale 0.5 zp -1\n"), "{alt}");
}

#[test]
fn a_shape_mismatch_names_the_node_the_op_and_the_tensor() {
    let mut g = small_int8();
    g.tensors[3].shape = vec![1, 4, 4, 4];
    let e = invalid(&g);
    assert_eq!(e.node_index(), Some(0));
    assert_eq!(e.op(), Some("Conv2d"));
    assert_eq!(e.node_name(), Some("conv"));
    assert_eq!((e.tensor_index(), e.tensor_name()), (Some(3), Some("y")));
    assert_eq!(
        e.to_string(),
        "invalid graph: output 0 has shape [1, 4, 4, 4], inferred [1, 3, 3, 4] from the inputs (node 0 Conv2d \"conv\", tensor 3 \"y\")"
    );
}

#[test]
fn nodes_must_be_in_topological_order() {
    let mut g = small_int8();
    g.nodes.swap(0, 1);
    let e = invalid(&g);
    assert_eq!(e.node_index(), Some(0));
    assert!(e.message().contains("not available yet"), "{e}");
}

#[test]
fn structural_errors_are_reported() {
    // Tensor id out of range.
    let mut g = small_int8();
    g.nodes[1].inputs[0] = Some(TensorId(70));
    assert!(invalid(&g).message().contains("out of range"));
    // Produced twice.
    let mut g = small_int8();
    g.nodes[1].outputs[0] = TensorId(3);
    g.nodes[1].op = Op::Reshape { new_shape: vec![1, 3, 3, 4] };
    let e = invalid(&g);
    assert!(e.message().contains("produced twice") || e.message().contains("not available"), "{e}");
    // Output is a constant / a graph input.
    let mut g = small_int8();
    g.nodes[1].outputs[0] = TensorId(5);
    assert!(invalid(&g).message().contains("is a constant"));
    let mut g = small_int8();
    g.inputs.push(TensorId(4));
    assert!(invalid(&g).message().contains("is a graph input"));
    // A graph output nobody produces; a constant graph input.
    let mut g = small_int8();
    g.outputs = vec![TensorId(4)];
    g.nodes.truncate(1);
    assert!(invalid(&g).message().contains("graph output 0"));
    let mut g = small_int8();
    g.inputs.push(TensorId(1));
    assert!(invalid(&g).message().contains("graph input 1 is a constant"));
}

#[test]
fn arity_and_required_inputs_are_checked() {
    let mut g = small_int8();
    g.nodes[0].inputs[1] = None;
    assert!(invalid(&g).message().contains("input 1 is required"));
    let mut g = small_int8();
    g.nodes[1].inputs.push(Some(TensorId(0)));
    assert!(invalid(&g).message().contains("takes 1..=1 inputs, got 2"));
    let mut g = small_int8();
    g.nodes[2].outputs.push(TensorId(4));
    assert!(invalid(&g).message().contains("outputs"));
}

#[test]
fn data_types_are_checked() {
    let mut g = small_int8();
    g.tensors[3].dtype = DType::I16;
    g.tensors[3].quant = Some(q(0.25, 0));
    let e = invalid(&g);
    assert_eq!(e.node_index(), Some(0));
    assert!(e.message().contains("Conv2d: input i8, weights i8, bias i32, output i16"), "{e}");
    // int8 conv with a float bias.
    let mut g = small_int8();
    g.tensors[2] = Tensor::constant("b", vec![4], ConstData::F32(vec![0.0; 4]));
    assert!(invalid(&g).message().contains("bias f32"));
    // Reshape must keep the type.
    let mut g = small_int8();
    g.tensors[4].dtype = DType::I16;
    g.tensors[4].quant = Some(q(0.25, 0));
    assert!(invalid(&g).message().contains("output is i16, input 0 is i8"));
}

#[test]
fn constants_and_quantization_parameters_are_checked() {
    let mut g = small_int8();
    g.tensors[1].data = Some(ConstData::I8(vec![0; 71]));
    let e = invalid(&g);
    assert_eq!((e.tensor_index(), e.node_index()), (Some(1), None));
    assert!(e.message().contains("71 elements, shape [4, 3, 3, 2] needs 72"), "{e}");
    let mut g = small_int8();
    g.tensors[1].data = Some(ConstData::F32(vec![0.0; 72]));
    assert!(invalid(&g).message().contains("constant data is f32, tensor is i8"));
    let mut g = small_int8();
    g.tensors[1].quant.as_mut().unwrap().axis = Some(3);
    assert!(invalid(&g).message().contains("4 per-channel scales on axis 3, which has extent 2"));
    let mut g = small_int8();
    g.tensors[0].quant = Some(q(0.0, 0));
    assert!(invalid(&g).message().contains("scale 0 is 0"));
    let mut g = small_int8();
    g.tensors[0].quant = Some(q(1.0, 128));
    assert!(invalid(&g).message().contains("zero point 0 is 128, outside i8 range [-128, 127]"));
    let mut g = small_int8();
    g.tensors[0].quant = Some(TensorQuant { scales: vec![1.0, 2.0], zero_points: vec![0], axis: None });
    assert!(invalid(&g).message().contains("2 scales and 1 zero points"));
}

fn infer(op: Op, inputs: &[Option<&[usize]>]) -> Result<Vec<usize>, String> {
    op.infer_shapes(inputs).map(|mut v| v.remove(0)).map_err(|e| e.message().to_string())
}

#[test]
fn shape_inference_of_every_op() {
    let x: &[usize] = &[1, 6, 6, 4];
    // Conv: SAME keeps ceil(6 / 2) = 3; VALID 3x3 stride 2 gives (6 - 3) / 2 + 1 = 2.
    let f: &[usize] = &[8, 3, 3, 4];
    assert_eq!(infer(conv(2, Padding::Same, FusedActivation::None), &[Some(x), Some(f)]), Ok(vec![1, 3, 3, 8]));
    assert_eq!(
        infer(conv(2, Padding::Valid, FusedActivation::None), &[Some(x), Some(f), Some(&[8])]),
        Ok(vec![1, 2, 2, 8])
    );
    assert!(
        infer(conv(1, Padding::Same, FusedActivation::None), &[Some(x), Some(&[8, 3, 3, 3])])
            .unwrap_err()
            .contains("3 input channels")
    );
    assert!(
        infer(conv(1, Padding::Same, FusedActivation::None), &[Some(x), Some(f), Some(&[7])])
            .unwrap_err()
            .contains("bias shape [7]")
    );
    assert!(
        infer(conv(0, Padding::Same, FusedActivation::None), &[Some(x), Some(f)]).unwrap_err().contains("stride 0x0")
    );
    // Dilated VALID: effective filter (3 - 1) * 2 + 1 = 5, output 6 - 5 + 1 = 2.
    let dil = Op::Conv2d(Conv2d {
        stride_h: 1,
        stride_w: 1,
        dilation_h: 2,
        dilation_w: 2,
        padding: Padding::Valid,
        activation: FusedActivation::None,
    });
    assert_eq!(infer(dil, &[Some(x), Some(f)]), Ok(vec![1, 2, 2, 8]));
    // Explicit padding.
    let pad = Padding::Explicit(PaddingValues { top: 1, bottom: 0, left: 2, right: 2 });
    assert_eq!(infer(conv(1, pad, FusedActivation::None), &[Some(x), Some(f)]), Ok(vec![1, 5, 8, 8]));
    // Depthwise, multiplier 2.
    let dw = |m| {
        Op::DepthwiseConv2d(DepthwiseConv2d {
            stride_h: 1,
            stride_w: 1,
            dilation_h: 1,
            dilation_w: 1,
            depth_multiplier: m,
            padding: Padding::Same,
            activation: FusedActivation::Relu6,
        })
    };
    assert_eq!(infer(dw(2), &[Some(x), Some(&[1, 3, 3, 8]), Some(&[8])]), Ok(vec![1, 6, 6, 8]));
    assert!(infer(dw(1), &[Some(x), Some(&[1, 3, 3, 8])]).unwrap_err().contains("depth_multiplier 1"));
    assert!(infer(dw(2), &[Some(x), Some(&[2, 3, 3, 8])]).unwrap_err().contains("extent 1 on axis 0"));
    // Fully connected, both output conventions.
    let fc = |keep| Op::FullyConnected(FullyConnected { activation: FusedActivation::None, keep_num_dims: keep });
    assert_eq!(infer(fc(false), &[Some(&[2, 3, 10]), Some(&[5, 10])]), Ok(vec![6, 5]));
    assert_eq!(infer(fc(true), &[Some(&[2, 3, 10]), Some(&[5, 10])]), Ok(vec![2, 3, 5]));
    assert!(infer(fc(false), &[Some(&[1, 7]), Some(&[5, 10])]).unwrap_err().contains("not a multiple"));
    // Pooling.
    let pool = Pool2d {
        filter_h: 2,
        filter_w: 3,
        stride_h: 2,
        stride_w: 3,
        padding: Padding::Valid,
        activation: FusedActivation::None,
    };
    assert_eq!(infer(Op::MaxPool2d(pool), &[Some(x)]), Ok(vec![1, 3, 2, 4]));
    assert_eq!(infer(Op::AvgPool2d(Pool2d { padding: Padding::Same, ..pool }), &[Some(x)]), Ok(vec![1, 3, 2, 4]));
    // Broadcasting binary ops.
    let add = Op::Add { activation: FusedActivation::None };
    assert_eq!(infer(add.clone(), &[Some(x), Some(&[4])]), Ok(vec![1, 6, 6, 4]));
    assert_eq!(
        infer(Op::Mul { activation: FusedActivation::None }, &[Some(&[1, 6, 1, 4]), Some(&[5, 1])]),
        Ok(vec![1, 6, 5, 4])
    );
    assert!(
        infer(Op::Sub { activation: FusedActivation::None }, &[Some(x), Some(&[3])])
            .unwrap_err()
            .contains("do not broadcast")
    );
    assert!(infer(add, &[Some(x)]).unwrap_err().contains("takes 2..=2 inputs"));
    // Elementwise.
    for op in [
        Op::Softmax { beta: 1.0 },
        Op::Logistic,
        Op::Tanh,
        Op::HardSwish,
        Op::Relu,
        Op::Relu6,
        Op::LeakyRelu { alpha: 0.1 },
        Op::Quantize,
        Op::Dequantize,
    ] {
        assert_eq!(infer(op, &[Some(x)]), Ok(x.to_vec()));
    }
    // Concatenation.
    let cat = Op::Concatenation { axis: 3, activation: FusedActivation::None };
    assert_eq!(infer(cat.clone(), &[Some(x), Some(&[1, 6, 6, 2]), Some(&[1, 6, 6, 1])]), Ok(vec![1, 6, 6, 7]));
    assert!(infer(cat, &[Some(x), Some(&[1, 5, 6, 2])]).unwrap_err().contains("outside axis 3"));
    assert!(
        infer(Op::Concatenation { axis: 4, activation: FusedActivation::None }, &[Some(x)])
            .unwrap_err()
            .contains("out of range")
    );
    // Pad, with and without a constant value.
    let pad = Op::Pad { paddings: vec![[0, 0], [1, 2], [0, 1], [0, 0]] };
    assert_eq!(infer(pad.clone(), &[Some(x)]), Ok(vec![1, 9, 7, 4]));
    assert_eq!(infer(pad.clone(), &[Some(x), Some(&[1])]), Ok(vec![1, 9, 7, 4]));
    assert!(infer(pad, &[Some(x), Some(&[2])]).unwrap_err().contains("one element"));
    assert!(infer(Op::Pad { paddings: vec![[0, 0]] }, &[Some(x)]).unwrap_err().contains("rank 4"));
    // Mean.
    assert_eq!(infer(Op::Mean { axes: vec![1, 2], keep_dims: true }, &[Some(x)]), Ok(vec![1, 1, 1, 4]));
    assert_eq!(infer(Op::Mean { axes: vec![1, 2], keep_dims: false }, &[Some(x)]), Ok(vec![1, 4]));
    assert!(
        infer(Op::Mean { axes: vec![2, 1], keep_dims: false }, &[Some(x)]).unwrap_err().contains("sorted and unique")
    );
    // Reshape, transpose, squeeze.
    assert_eq!(infer(Op::Reshape { new_shape: vec![36, 4] }, &[Some(x)]), Ok(vec![36, 4]));
    assert!(infer(Op::Reshape { new_shape: vec![35, 4] }, &[Some(x)]).unwrap_err().contains("element count"));
    assert_eq!(infer(Op::Transpose { perm: vec![0, 3, 1, 2] }, &[Some(&[1, 6, 5, 4])]), Ok(vec![1, 4, 6, 5]));
    assert!(infer(Op::Transpose { perm: vec![0, 1, 1, 2] }, &[Some(x)]).unwrap_err().contains("not a permutation"));
    assert_eq!(infer(Op::Squeeze { axes: vec![0, 2] }, &[Some(&[1, 3, 1, 2])]), Ok(vec![3, 2]));
    assert!(infer(Op::Squeeze { axes: vec![1] }, &[Some(&[1, 3, 1, 2])]).unwrap_err().contains("extent 3, not 1"));
}

#[test]
fn padding_follows_tflite() {
    // SAME: output ceil(in / stride); total padding split with the smaller half first.
    let w = Padding::Same.resolve_h(6, 3, 2, 1).unwrap();
    assert_eq!((w.output, w.pad_before, w.pad_after), (3, 0, 1));
    let w = Padding::Same.resolve_w(5, 3, 2, 1).unwrap();
    assert_eq!((w.output, w.pad_before, w.pad_after), (3, 1, 1));
    let w = Padding::Same.resolve_h(7, 1, 2, 1).unwrap();
    assert_eq!((w.output, w.pad_before, w.pad_after), (4, 0, 0));
    let w = Padding::Same.resolve_h(10, 3, 1, 2).unwrap();
    assert_eq!((w.output, w.pad_before, w.pad_after), (10, 2, 2));
    let w = Padding::Valid.resolve_w(7, 3, 2, 1).unwrap();
    assert_eq!((w.output, w.pad_before, w.pad_after), (3, 0, 0));
    let p = Padding::Explicit(PaddingValues { top: 1, bottom: 2, left: 3, right: 0 });
    assert_eq!(p.resolve_h(4, 3, 1, 1).unwrap(), AxisWindow { output: 5, pad_before: 1, pad_after: 2 });
    assert_eq!(p.resolve_w(4, 3, 2, 1).unwrap(), AxisWindow { output: 3, pad_before: 3, pad_after: 0 });
    // Windows that cannot be placed, and degenerate parameters.
    assert_eq!(Padding::Valid.resolve_h(2, 3, 1, 1), None);
    assert_eq!(Padding::Same.resolve_h(5, 3, 0, 1), None);
    assert_eq!(Padding::Same.resolve_h(5, 3, 1, 0), None);
    assert_eq!(Padding::Same.resolve_h(5, 0, 1, 1), None);
    assert_eq!(Padding::Same.resolve_h(5, usize::MAX, 1, 2), None);
}

#[test]
fn broadcasting_follows_numpy() {
    assert_eq!(broadcast_shapes(&[2, 1, 3], &[4, 1]), Some(vec![2, 4, 3]));
    assert_eq!(broadcast_shapes(&[], &[3]), Some(vec![3]));
    assert_eq!(broadcast_shapes(&[2, 3], &[3, 3]), None);
    assert_eq!(num_elements(&[]), Some(1));
    assert_eq!(num_elements(&[usize::MAX, 2]), None);
}

#[test]
fn producers_and_consumers() {
    let mut g = small_int8();
    // A second reader of y: an Add of y with itself (read twice by one node = listed once).
    let z = g.add_tensor(Tensor::new("z", vec![1, 3, 3, 4], DType::I8).with_quant(q(0.5, 0))).unwrap();
    g.add_node(Node::new(
        "twice",
        Op::Add { activation: FusedActivation::None },
        vec![Some(TensorId(3)), Some(TensorId(3))],
        vec![z],
    ));
    g.outputs.push(z);
    g.validate().unwrap();
    assert_eq!(g.producer(TensorId(3)), Some(0));
    assert_eq!(g.producer(TensorId(0)), None);
    assert_eq!(g.consumers(TensorId(3)), vec![1, 3]);
    let p = g.producer_map();
    assert_eq!(p, vec![None, None, None, Some(0), Some(1), None, Some(2), Some(3)]);
    let c = g.consumer_map();
    assert_eq!(c[3], vec![1, 3]);
    assert_eq!(c[1], vec![0]);
    assert!(c[6].is_empty());
    assert_eq!(g.infer_output_shapes(&g.nodes[3]).unwrap(), vec![vec![1, 3, 3, 4]]);
}

#[test]
fn pruning_unused_tensors_renumbers_the_rest() {
    let mut g = small_int8();
    let unused = g.add_tensor(Tensor::constant("unused", vec![2], ConstData::I32(vec![1, 36]))).unwrap();
    // Put it in the middle by swapping with the last used tensor's slot order: insert another after.
    let late = g.add_tensor(Tensor::new("late", vec![1, 3], DType::I8).with_quant(q(0.1, 0))).unwrap();
    g.add_node(Node::new("relu", Op::Relu, vec![Some(TensorId(6))], vec![late]));
    g.outputs = vec![late];
    let map = g.prune_unused_tensors();
    assert_eq!(map.len(), 9);
    assert_eq!(map[unused.index()], None);
    assert_eq!(map[late.index()], Some(TensorId(7)));
    assert_eq!(g.tensors.len(), 8);
    assert_eq!(g.outputs, vec![TensorId(7)]);
    assert_eq!(g.nodes[3].outputs, vec![TensorId(7)]);
    g.validate().unwrap();
    // Nothing left to prune.
    let again = g.prune_unused_tensors();
    assert!(again.iter().enumerate().all(|(i, m)| *m == Some(TensorId(i as u32))));
}

#[test]
fn dequantizing_constants_uses_the_channel_axis() {
    // Depthwise-style weights [1, 1, 2, 3], per-channel on axis 3.
    let t = Tensor::constant("w", vec![1, 1, 2, 3], ConstData::I8(vec![1, 2, 3, -1, -2, -3]))
        .with_quant(TensorQuant::per_channel(vec![0.5, 0.25, 2.0], vec![0, 0, 1], 3));
    assert_eq!(t.dequantized_data(), Some(vec![0.5, 0.5, 4.0, -0.5, -0.5, -8.0]));
    // Conv-style weights [2, 1, 1, 2], per-channel on axis 0.
    let t = Tensor::constant("w", vec![2, 1, 1, 2], ConstData::I8(vec![1, 2, 3, 4]))
        .with_quant(TensorQuant::per_channel(vec![0.5, 0.25], vec![0, 0], 0));
    assert_eq!(t.dequantized_data(), Some(vec![0.5, 1.0, 0.75, 1.0]));
    // Per tensor with a zero point; f32 passes through; int data without quantization is None.
    let t = Tensor::constant("a", vec![3], ConstData::I16(vec![-2, 0, 5])).with_quant(q(0.5, 1));
    assert_eq!(t.dequantized_data(), Some(vec![-1.5, -0.5, 2.0]));
    assert_eq!(Tensor::constant("f", vec![1], ConstData::F32(vec![1.5])).dequantized_data(), Some(vec![1.5]));
    assert_eq!(Tensor::constant("i", vec![1], ConstData::I32(vec![1])).dequantized_data(), None);
    assert_eq!(Tensor::new("x", vec![1], DType::I8).with_quant(q(1.0, 0)).dequantized_data(), None);
}

/// x(f32)[1,4] -fc(i8 weights)-> [1,2], and the same weights in an int8 fc.
fn hybrid() -> Graph {
    let mut g = Graph::default();
    let x = g.add_tensor(Tensor::new("x", vec![1, 4], DType::F32)).unwrap();
    let w = g
        .add_tensor(
            Tensor::constant("w", vec![2, 4], ConstData::I8(vec![1, -1, 2, -2, 3, -3, 4, -4])).with_quant(q(0.5, 0)),
        )
        .unwrap();
    let y = g.add_tensor(Tensor::new("y", vec![1, 2], DType::F32)).unwrap();
    let fc = Op::FullyConnected(FullyConnected { activation: FusedActivation::None, keep_num_dims: false });
    g.add_node(Node::new("fc", fc, vec![Some(x), Some(w)], vec![y]));
    g.inputs = vec![x];
    g.outputs = vec![y];
    g
}

#[test]
fn hybrid_weights_dequantize_to_a_float_graph() {
    let mut g = hybrid();
    g.validate().unwrap();
    // Hybrid weights must be quantized.
    let mut bad = hybrid();
    bad.tensors[1].quant = None;
    assert!(invalid(&bad).message().contains("f32/i8 (quantized)/f32"));

    assert_eq!(g.dequantize_hybrid_weights(), 1);
    let w = &g.tensors[1];
    assert_eq!((w.dtype, w.quant.is_none()), (DType::F32, true));
    assert_eq!(w.data, Some(ConstData::F32(vec![0.5, -0.5, 1.0, -1.0, 1.5, -1.5, 2.0, -2.0])));
    g.validate().unwrap();

    // Weights shared with an int8 op stay int8.
    let mut g = hybrid();
    let xi = g.add_tensor(Tensor::new("xi", vec![1, 4], DType::I8).with_quant(q(1.0, 0))).unwrap();
    let yi = g.add_tensor(Tensor::new("yi", vec![1, 2], DType::I8).with_quant(q(1.0, 0))).unwrap();
    let fc = Op::FullyConnected(FullyConnected { activation: FusedActivation::None, keep_num_dims: false });
    g.add_node(Node::new("fc8", fc, vec![Some(xi), Some(TensorId(1))], vec![yi]));
    g.inputs.push(xi);
    g.outputs.push(yi);
    g.validate().unwrap();
    assert_eq!(g.dequantize_hybrid_weights(), 0);
}

#[test]
fn const_data_typed_accessors() {
    let d = ConstData::from_le_bytes(DType::I16, &[1, 0, 0xff, 0xff]).unwrap();
    assert_eq!(d, ConstData::I16(vec![1, -1]));
    assert_eq!(d.as_i16(), Some(&[1i16, -1][..]));
    assert_eq!(d.as_i8(), None);
    assert_eq!((d.len(), d.byte_len(), d.dtype()), (2, 4, DType::I16));
    assert_eq!(d.to_i64_vec(), Some(vec![1, -1]));
    assert_eq!(ConstData::from_le_bytes(DType::F32, &[0; 6]), None);
    let f = ConstData::from_le_bytes(DType::F32, &1.5f32.to_le_bytes()).unwrap();
    assert_eq!(f.as_f32(), Some(&[1.5f32][..]));
    assert_eq!(f.to_i64_vec(), None);
    assert_eq!(ConstData::from_le_bytes(DType::Bool, &[0, 2]).unwrap(), ConstData::Bool(vec![false, true]));
    assert_eq!(ConstData::Bool(vec![false, true]).to_le_bytes(), vec![0, 1]);
    for dt in [DType::F32, DType::F16, DType::I8, DType::U8, DType::I16, DType::I32, DType::I64, DType::Bool] {
        let bytes: Vec<u8> = (0..dt.size() as u8 * 3).collect();
        let d = ConstData::from_le_bytes(dt, &bytes).unwrap();
        assert_eq!(d.dtype(), dt);
        if dt != DType::Bool {
            assert_eq!(d.to_le_bytes(), bytes, "{dt}");
        }
    }
}

#[test]
fn convert_errors_print_their_location() {
    let e = ConvertError::new(ConvertErrorKind::UnsupportedOp, "EXP is not supported").at_node(4, "EXP");
    assert_eq!(e.to_string(), "unsupported op: EXP is not supported (operator 4 EXP)");
    let e = ConvertError::new(ConvertErrorKind::Truncated, "cut").at_offset(12).with_tensor(3, "w");
    assert_eq!(e.to_string(), "truncated model: cut (tensor 3 \"w\", byte offset 12)");
    let e = ConvertError::new(ConvertErrorKind::Malformed, "bad").or_at_node(1, "ADD").or_at_node(2, "SUB");
    assert_eq!((e.node_index(), e.op()), (Some(1), Some("ADD")));
    assert_eq!(ConvertError::new(ConvertErrorKind::Unsupported, "x").to_string(), "unsupported model feature: x");
    let boxed: Box<dyn std::error::Error> = Box::new(e);
    assert!(boxed.to_string().contains("bad"));
}

#[test]
fn op_metadata() {
    assert_eq!(conv(1, Padding::Same, FusedActivation::Relu6).activation(), Some(FusedActivation::Relu6));
    assert_eq!(Op::Tanh.activation(), None);
    assert!(Op::Reshape { new_shape: vec![] }.is_view());
    assert!(!Op::Transpose { perm: vec![] }.is_view());
    let a = Op::Concatenation { axis: 0, activation: FusedActivation::None }.arity();
    assert_eq!((a.min_inputs, a.max_inputs, a.optional_from), (1, usize::MAX, usize::MAX));
    let a = Op::FullyConnected(FullyConnected { activation: FusedActivation::None, keep_num_dims: true }).arity();
    assert_eq!((a.min_inputs, a.max_inputs, a.optional_from, a.outputs), (2, 3, 2, 1));
    assert_eq!(FusedActivation::Relu6.float_range(), Some((0.0, 6.0)));
    assert_eq!(Op::Pad { paddings: vec![[0, 1], [2, 3]] }.to_string(), "Pad(0+1, 2+3)");
    assert_eq!(Op::Mean { axes: vec![1, 2], keep_dims: true }.to_string(), "Mean(axes [1,2], keep_dims)");
}
