#!/usr/bin/env python3
"""Float ONNX models and their ONNX Runtime outputs, for the ONNX importer and the float executor
(tests/host/onnx_import.rs, tests/host/float_exec.rs); float outputs of the MLPerf Tiny float
TFLite models from the TFLite interpreter.

    .venv/bin/python tests/gen/gen_onnx_float.py

Writes tests/golden/onnx/:
  torch/*.onnx       PyTorch exports (tests/gen/gen_onnx_torch.py, run with $TORCH_PYTHON,
                     default .venv-torch/bin/python: torch 2.15.0, onnx 1.23.2), opsets 11, 13,
                     17 (TorchScript exporter) and 21 (dynamo exporter)
  helper/*.onnx      models written with onnx.helper for opsets 11, 13, 17, 21: the attribute vs.
                     input forms of Squeeze/Unsqueeze/ReduceMean/Pad/Clip, tf2onnx-style NHWC
                     inputs behind a Transpose, Softmax's pre-13 semantics, every other op
  tf2onnx/*.onnx     tf2onnx 1.17.0 conversions of small Keras CNNs (TensorFlow 2.21.0, NHWC:
                     transposes around every conv), opsets 13 and 17
  sklearn/*.onnx     skl2onnx 1.20.0 conversions of scikit-learn MLPs (trained on load_digits)
  errors/*.onnx      models the importer must reject (unsupported op, dynamic dims, ...)
  float_models.json  per model: 3 seeded inputs (numpy default_rng(seed).standard_normal, in the
                     model's own layout) and ONNX Runtime 1.32.0's outputs (CPU, graph
                     optimizations disabled), compared with onnx.reference
                     (printed when they differ: its BatchNormalization before opset 14 is wrong)
  tflite_float_mlperf.json  the four MLPerf Tiny *_float32.tflite models run by the TFLite
                     interpreter (ai-edge-litert 2.3.0, BUILTIN_REF kernels) on 3 inputs each
                     (KWS float's hybrid int8 weights dequantized to float32 first, see
                     dequantize_hybrid: TFLite's hybrid kernels quantize activations at run time):
                     input s of model i is SplitMix64(seed = 5000 + 1000 i + s).int8s(n), mapped to
                     floats with the int8 model's input scale and zero point (so the values have
                     the model's real input range), the same generator as tests/src/rng.rs

Pinned: numpy 2.4.6, onnx 1.23.2, onnxruntime 1.32.0, scikit-learn 1.9.1, ai-edge-litert 2.3.0,
flatbuffers 25.12.19,
tensorflow-cpu 2.21.0, skl2onnx 1.20.0 and tf2onnx 1.17.0 (pip install --no-deps skl2onnx==1.20.0
tf2onnx==1.17.0: they need nothing beyond what the pins above install). Deterministic.
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
import goldenio  # noqa: E402

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

PINNED = {"numpy": "2.4.6", "onnx": "1.23.2", "onnxruntime": "1.32.0", "scikit-learn": "1.9.1",
          "ai-edge-litert": "2.3.0", "skl2onnx": "1.20.0",
          "flatbuffers": "25.12.19", "tensorflow-cpu": "2.21.0", "tf2onnx": "1.17.0"}
OUT = REPO / "tests" / "golden" / "onnx"
SAMPLES = 3
OPSETS = (11, 13, 17, 21)


def rng_for(name):
    return np.random.default_rng(sum(ord(c) * (i + 1) for i, c in enumerate(name)))


def const(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def f32(a):
    return np.asarray(a, dtype=np.float32)


def make(name, nodes, inputs, outputs, inits, opset):
    used = {i for n in nodes for i in n.input}
    g = helper.make_graph(nodes, name, inputs, outputs, [t for t in inits if t.name in used])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="onnx.helper")
    m.ir_version = 7 if opset <= 13 else 8 if opset <= 17 else 10
    onnx.checker.check_model(m, full_check=True)
    return m


def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


# ---------------------------------------------------------------------------------------------
# Helper-built models (one per opset).

def nhwc_model(opset, r):
    """tf2onnx style: an NHWC input transposed to NCHW, conv SAME_UPPER stride 2, BatchNorm,
    Clip(0, 6) with min/max inputs, transpose back, reshape with a constant shape, MatMul + Add,
    Softmax on the last axis."""
    w = f32(r.standard_normal((4, 3, 3, 3)) * 0.4)
    scale, bias = f32(r.uniform(0.5, 1.5, 4)), f32(r.standard_normal(4) * 0.2)
    mean, var = f32(r.standard_normal(4) * 0.3), f32(r.uniform(0.5, 1.5, 4))
    fc, fcb = f32(r.standard_normal((3 * 3 * 4, 5)) * 0.3), f32(r.standard_normal(5) * 0.1)
    nodes = [
        helper.make_node("Transpose", ["x"], ["x_nchw"], perm=[0, 3, 1, 2], name="to_nchw"),
        helper.make_node("Conv", ["x_nchw", "w"], ["c"], auto_pad="SAME_UPPER", strides=[2, 2], kernel_shape=[3, 3], name="conv"),
        helper.make_node("BatchNormalization", ["c", "bn_s", "bn_b", "bn_m", "bn_v"], ["bn"], epsilon=1e-3, name="bn"),
        helper.make_node("Clip", ["bn", "zero", "six"], ["r6"], name="relu6"),
        helper.make_node("Transpose", ["r6"], ["r6_nhwc"], perm=[0, 2, 3, 1], name="to_nhwc"),
        helper.make_node("Reshape", ["r6_nhwc", "flat_shape"], ["flat"], name="flatten"),
        helper.make_node("MatMul", ["flat", "fc"], ["mm"], name="matmul"),
        helper.make_node("Add", ["mm", "fcb"], ["logits"], name="bias"),
        helper.make_node("Softmax", ["logits"], ["y"], axis=-1, name="softmax"),
    ]
    inits = [const("w", w), const("bn_s", scale), const("bn_b", bias), const("bn_m", mean), const("bn_v", var),
             const("zero", f32(0.0)), const("six", f32(6.0)), const("flat_shape", np.array([1, -1], np.int64)),
             const("fc", fc), const("fcb", fcb)]
    return make(f"nhwc_opset{opset}", nodes, [vi("x", [1, 6, 5, 3])], [vi("y", [1, 5])], inits, opset)


def shapes_model(opset, r):
    """Identity, Dropout, a Shape/Gather/Unsqueeze/Concat chain into Reshape, Unsqueeze and
    Squeeze of activations (attribute or input axes by opset), ReduceMean (keepdims 0), Sub/Div
    by constants, Concat with a constant, Gemm with transB 0, alpha and beta, Cast to float."""
    axes_as_input = opset >= 13
    w = f32(r.standard_normal((6, 3)) * 0.5)
    c = f32(r.standard_normal((3,)) * 0.5)
    nodes = [
        helper.make_node("Identity", ["x"], ["xi"], name="identity"),
        helper.make_node("Dropout", ["xi"], ["xd"], name="dropout"),
        helper.make_node("Shape", ["xd"], ["shp"], name="shape"),
        helper.make_node("Gather", ["shp", "idx0"], ["n"], axis=0, name="gather"),
    ]
    if axes_as_input:
        nodes.append(helper.make_node("Unsqueeze", ["n", "ax0"], ["n1"], name="unsq_n"))
    else:
        nodes.append(helper.make_node("Unsqueeze", ["n"], ["n1"], axes=[0], name="unsq_n"))
    nodes += [
        helper.make_node("Concat", ["n1", "c4", "minus1"], ["target"], axis=0, name="concat_shape"),
        helper.make_node("Reshape", ["xd", "target"], ["r"], name="reshape"),  # [1, 4, 15]
    ]
    if axes_as_input:
        nodes += [helper.make_node("Unsqueeze", ["r", "ax2"], ["u"], name="unsq"),
                  helper.make_node("Squeeze", ["u", "ax2"], ["s"], name="sq")]
    else:
        nodes += [helper.make_node("Unsqueeze", ["r"], ["u"], axes=[2], name="unsq"),
                  helper.make_node("Squeeze", ["u"], ["s"], axes=[2], name="sq")]
    if opset >= 18:
        nodes.append(helper.make_node("ReduceMean", ["s", "ax2"], ["m"], keepdims=0, name="mean"))
    else:
        nodes.append(helper.make_node("ReduceMean", ["s"], ["m"], axes=[2], keepdims=0, name="mean"))
    nodes += [
        helper.make_node("Sub", ["m", "sub_c"], ["m1"], name="sub"),
        helper.make_node("Div", ["m1", "div_c"], ["m2"], name="div"),
        helper.make_node("Concat", ["m2", "extra"], ["cat"], axis=1, name="concat"),  # [1, 6]
        helper.make_node("Gemm", ["cat", "w", "c"], ["g"], alpha=0.5, beta=2.0, transB=0, name="gemm"),
        helper.make_node("Cast", ["g"], ["y"], to=TensorProto.FLOAT, name="cast"),
    ]
    inits = [const("idx0", np.array(0, np.int64)), const("ax0", np.array([0], np.int64)),
             const("ax2", np.array([2], np.int64)), const("c4", np.array([4], np.int64)),
             const("minus1", np.array([-1], np.int64)), const("sub_c", f32(r.standard_normal(4))),
             const("div_c", f32(r.uniform(1.0, 3.0, (1, 4)))), const("extra", f32([[0.5, -1.0]])),
             const("w", w), const("c", c)]
    return make(f"shapes_opset{opset}", nodes, [vi("x", [1, 4, 3, 5])], [vi("y", [1, 3])], inits, opset)


def activations_model(opset, r):
    """Softmax over axis 1 of a 4-D tensor (before opset 13: over C·H·W flattened), LeakyRelu,
    HardSigmoid (non-default alpha/beta), HardSwish (opset >= 14), Tanh, Sigmoid, Pad with a
    constant value (opset >= 18: with axes), MaxPool SAME_LOWER, AveragePool with pads,
    GlobalMaxPool, GlobalAveragePool, Add and Mul of two activations, a depthwise conv."""
    dw = f32(r.standard_normal((3, 1, 3, 3)) * 0.5)
    dwb = f32(r.standard_normal(3) * 0.1)
    nodes = [
        helper.make_node("Conv", ["x", "dw", "dwb"], ["d"], group=3, pads=[1, 1, 1, 1], name="depthwise"),
        helper.make_node("Softmax", ["d"], ["sm"], axis=1, name="softmax"),
        helper.make_node("LeakyRelu", ["d"], ["lr"], alpha=0.3, name="leaky"),
        helper.make_node("HardSigmoid", ["lr"], ["hs"], alpha=0.3, beta=0.4, name="hsig"),
    ]
    if opset >= 14:
        nodes.append(helper.make_node("HardSwish", ["d"], ["hw"], name="hswish"))
    else:
        nodes.append(helper.make_node("Tanh", ["d"], ["hw"], name="tanh_instead"))
    nodes += [
        helper.make_node("Mul", ["hs", "hw"], ["p"], name="mul"),
        helper.make_node("Add", ["p", "sm"], ["q"], name="add"),
        helper.make_node("Sigmoid", ["q"], ["sg"], name="sigmoid"),
    ]
    if opset >= 18:
        nodes.append(helper.make_node("Pad", ["sg", "pads", "pad_value", "pad_axes"], ["pd"], mode="constant", name="pad"))
    else:
        nodes.append(helper.make_node("Pad", ["sg", "pads", "pad_value"], ["pd"], mode="constant", name="pad"))
    nodes += [
        helper.make_node("MaxPool", ["pd"], ["mp"], kernel_shape=[2, 3], strides=[2, 1], auto_pad="SAME_LOWER", name="maxpool"),
        helper.make_node("AveragePool", ["mp"], ["ap"], kernel_shape=[3, 3], pads=[1, 0, 1, 2], strides=[1, 2], name="avgpool"),
        helper.make_node("GlobalMaxPool", ["ap"], ["gm"], name="gmp"),
        helper.make_node("GlobalAveragePool", ["ap"], ["ga"], name="gap"),
        helper.make_node("Concat", ["gm", "ga"], ["cat"], axis=1, name="concat"),
        helper.make_node("Tanh", ["cat"], ["y"], name="tanh"),
    ]
    pads = [0, 0, 1, 2, 0, 0, 0, 1] if opset < 18 else [1, 2, 0, 1]
    inits = [const("dw", dw), const("dwb", dwb), const("pads", np.array(pads, np.int64)), const("pad_value", f32(0.5))]
    if opset >= 18:
        inits.append(const("pad_axes", np.array([2, 3], np.int64)))
    return make(f"activations_opset{opset}", nodes, [vi("x", [1, 3, 5, 6])], [vi("y", [1, 6, 1, 1])], inits, opset)


def helper_models():
    out = []
    for opset in OPSETS:
        for fn in (nhwc_model, shapes_model, activations_model):
            m = fn(opset, rng_for(f"{fn.__name__}{opset}"))
            out.append(m)
    return out


# ---------------------------------------------------------------------------------------------
# Models the importer must reject.

def error_models():
    r = np.random.default_rng(7)
    x = vi("x", [1, 4, 5, 5])
    w = const("w", f32(r.standard_normal((4, 4, 3, 3))))
    models = {}
    models["unsupported_op"] = make("unsupported_op", [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
        helper.make_node("Hardmax", ["c"], ["y"], name="my_hardmax")], [x], [vi("y", [1, 4, 3, 3])], [w], 13)
    models["dynamic_dims"] = make("dynamic_dims", [helper.make_node("Relu", ["x"], ["y"], name="relu")],
                                  [vi("x", ["batch", 4, "height", 5])], [vi("y", ["batch", 4, "height", 5])], [], 13)
    models["grouped_conv"] = make("grouped_conv", [
        helper.make_node("Conv", ["x", "wg"], ["y"], group=2, name="grouped")], [x], [vi("y", [1, 4, 3, 3])],
        [const("wg", f32(r.standard_normal((4, 2, 3, 3))))], 13)
    # Once refused (only ReLU's and ReLU6's ranges were supported); a Clip to [-1, 2] now imports as a
    # clamp (tests/host/onnx_import.rs checks that). Kept so the committed file stays the same.
    models["clip_range"] = make("clip_range", [helper.make_node("Clip", ["x", "lo", "hi"], ["y"], name="clip")],
                                [x], [vi("y", [1, 4, 5, 5])], [const("lo", f32(-1.0)), const("hi", f32(2.0))], 13)
    m = make("old_opset", [helper.make_node("Relu", ["x"], ["y"], name="relu")], [x], [vi("y", [1, 4, 5, 5])], [], 9)
    models["old_opset"] = m
    ml = helper.make_graph([helper.make_node("Normalizer", ["x2"], ["y"], norm="L2", domain="ai.onnx.ml", name="norm")],
                           "ml", [vi("x2", [1, 4])], [vi("y", [1, 4])])
    models["ml_domain"] = helper.make_model(ml, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("ai.onnx.ml", 3)])
    # Weights stored in an external file (not shipped).
    ext = make("external", [helper.make_node("Conv", ["x", "w"], ["y"], name="conv")], [x], [vi("y", [1, 4, 3, 3])], [w], 13)
    t = ext.graph.initializer[0]
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    t.external_data.add(key="location", value="weights.bin")
    models["external_data"] = ext
    models["int_input"] = make("int_input", [helper.make_node("Cast", ["ids"], ["y"], to=TensorProto.FLOAT, name="cast")],
                               [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 4])], [vi("y", [1, 4])], [], 13)
    models["matmul_two_activations"] = make("matmul_two_activations", [
        helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")], [vi("a", [1, 2, 3]), vi("b", [1, 3, 2])], [vi("y", [1, 2, 2])], [], 13)
    return models


# ---------------------------------------------------------------------------------------------
# scikit-learn via skl2onnx.

def sklearn_models():
    import warnings
    warnings.filterwarnings("ignore")
    from sklearn.datasets import load_digits
    from sklearn.neural_network import MLPClassifier, MLPRegressor
    from skl2onnx import to_onnx
    X, y = load_digits(return_X_y=True)
    X = (X / 16.0).astype(np.float32)
    clf = MLPClassifier(hidden_layer_sizes=(24,), max_iter=60, random_state=0).fit(X, y)
    reg = MLPRegressor(hidden_layer_sizes=(12, 8), activation="tanh", max_iter=60, random_state=0).fit(X, X[:, :3] @ np.ones(3))
    out = []
    for opset in (13, 17):
        m = to_onnx(clf, X[:1], options={id(clf): {"zipmap": False}}, target_opset={"": opset, "ai.onnx.ml": 3})
        m.graph.name = f"mlp_classifier_opset{opset}"
        out.append((m, ["probabilities"]))
    m = to_onnx(reg, X[:1], target_opset=17)
    m.graph.name = "mlp_regressor_opset17"
    out.append((m, None))
    return out


# ---------------------------------------------------------------------------------------------
# TensorFlow / Keras via tf2onnx (NHWC models: tf2onnx transposes to NCHW around each conv).

def canonical_names(model):
    """Renames tf2onnx's intermediate tensors and nodes in graph order (its generated names carry
    a process-dependent counter), so that reruns write identical files. Graph inputs and outputs
    keep their names; nothing else changes."""
    g = model.graph
    keep = {i.name for i in g.input} | {o.name for o in g.output}
    rename = {}
    for k, t in enumerate(g.initializer):
        rename[t.name] = f"const{k}"
        t.name = rename[t.name]
    for k, n in enumerate(g.node):
        n.name = f"{n.op_type}_{k}"
        for j, o in enumerate(n.output):
            if o and o not in keep:
                rename[o] = f"{n.op_type}_{k}:{j}"
                n.output[j] = rename[o]
    for n in g.node:
        for j, i in enumerate(n.input):
            n.input[j] = rename.get(i, i)
    del g.value_info[:]
    onnx.checker.check_model(model, full_check=True)
    return model


def keras_models():
    import tensorflow as tf
    import tf2onnx
    L = tf.keras.layers
    out = []
    for i, opset in enumerate((13, 17)):
        tf.keras.utils.set_random_seed(300 + i)
        inp = tf.keras.Input((8, 8, 3), batch_size=1, name="x")
        x = L.Conv2D(6, 3, padding="same", use_bias=False)(inp)
        x = L.BatchNormalization()(x)
        x = L.ReLU(6.0)(x)
        d = L.DepthwiseConv2D(3, padding="same", depth_multiplier=2)(x)
        d = L.LeakyReLU(negative_slope=0.2)(d)
        p = L.Conv2D(12, 1, activation="sigmoid")(x)
        x = L.Add()([d, p])
        x = L.MaxPooling2D(2)(x)
        a = L.AveragePooling2D(3, strides=1, padding="same")(x)
        b = L.ZeroPadding2D(((1, 0), (0, 1)))(x)
        b = L.Conv2D(4, 2, activation="tanh")(b)
        x = L.Concatenate()([a, b])
        g = L.GlobalAveragePooling2D()(x)
        f = L.Flatten()(x)
        x = L.Concatenate()([g, f])
        x = L.Dense(8, activation="hard_sigmoid")(x)
        y = L.Dense(4, activation="softmax", name="y")(x)
        m = tf.keras.Model(inp, y)
        # Non-trivial batch-norm statistics.
        bn = [l for l in m.layers if isinstance(l, L.BatchNormalization)][0]
        r = np.random.default_rng(400 + i)
        bn.set_weights([f32(r.uniform(0.5, 1.5, 6)), f32(r.standard_normal(6) * 0.2),
                        f32(r.standard_normal(6) * 0.3), f32(r.uniform(0.5, 1.5, 6))])
        spec = (tf.TensorSpec((1, 8, 8, 3), tf.float32, name="x"),)
        proto, _ = tf2onnx.convert.from_keras(m, input_signature=spec, opset=opset)
        proto.graph.name = f"keras_cnn_opset{opset}"
        out.append((canonical_names(proto), None))
    return out


# ---------------------------------------------------------------------------------------------

def ort_outputs(model_bytes, feeds, outputs):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])
    return sess.run(outputs, feeds)


def golden_entry(name, rel, model, selected):
    g = model.graph
    inits = {i.name for i in g.initializer}
    ins = [i for i in g.input if i.name not in inits]
    outs = selected or [o.name for o in g.output]
    r = rng_for(name)
    data = model.SerializeToString()
    ref = ReferenceEvaluator(model)
    samples = []
    for s in range(SAMPLES):
        feeds = {}
        for i in ins:
            shape = [d.dim_value if d.dim_value > 0 else 1 for d in i.type.tensor_type.shape.dim]
            feeds[i.name] = f32(r.standard_normal(shape))
        got = ort_outputs(data, feeds, outs)
        want = ref.run(outs, feeds)
        for a, b, o in zip(got, want, outs):
            err = float(np.max(np.abs(np.asarray(a, np.float64) - b))) if np.size(a) else 0.0
            if err > 1e-4 * max(1.0, float(np.max(np.abs(a)))):
                # Known: onnx.reference's BatchNormalization-9 (opsets 9-13) is wrong; ORT is
                # checked against numpy's (x - mean) / sqrt(var + eps) * scale + B instead.
                print(f"note: {name} {o}: ORT and onnx.reference differ by {err:.3g}")
        samples.append({"inputs": [goldenio.tensor(feeds[i.name]) for i in ins],
                        "outputs": [goldenio.tensor(np.asarray(v, np.float32)) for v in got]})
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    return {"name": name, "file": rel, "opset": opset, "producer": f"{model.producer_name} {model.producer_version}".strip(),
            "inputs": [i.name for i in ins], "outputs": outs, "ops": sorted({n.op_type for n in g.node}), "samples": samples}


def dequantize_hybrid(path):
    """The model with the int8 weights of hybrid ops (float input, int8 weights: KWS float's
    convolutions) replaced by float32 data, scale * (q - zero_point) computed in float64 and
    rounded once, per channel. TFLite runs hybrid ops by quantizing the activations at run time,
    so the hybrid model is not a float reference; the rewritten one is. Returns (bytes, count)."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as S
    m = S.ModelT.InitFromPackedBuf(pathlib.Path(path).read_bytes(), 0)
    sg = m.subgraphs[0]
    weighted = {S.BuiltinOperator.CONV_2D, S.BuiltinOperator.DEPTHWISE_CONV_2D, S.BuiltinOperator.FULLY_CONNECTED}
    count = 0
    for op in sg.operators:
        code = m.operatorCodes[op.opcodeIndex]
        kind = max(code.builtinCode, code.deprecatedBuiltinCode)
        if kind not in weighted or sg.tensors[op.inputs[0]].type != S.TensorType.FLOAT32:
            continue
        t = sg.tensors[op.inputs[1]]
        if t.type != S.TensorType.INT8:
            continue
        q = np.frombuffer(bytes(m.buffers[t.buffer].data), np.int8).reshape(t.shape).astype(np.float64)
        qp = t.quantization
        scale = np.asarray(qp.scale, np.float32).astype(np.float64)
        zp = np.asarray(qp.zeroPoint, np.int64).astype(np.float64)
        if scale.size > 1:
            shape = [1] * q.ndim
            shape[qp.quantizedDimension] = -1
            scale, zp = scale.reshape(shape), zp.reshape(shape)
        w = ((q - zp) * scale).astype(np.float32)
        m.buffers[t.buffer].data = np.frombuffer(w.tobytes(), np.uint8)
        t.type = S.TensorType.FLOAT32
        t.quantization = None
        count += 1
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output()), count


def tflite_float_mlperf():
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    models = [("kws", "kws_ref_model"), ("ic", "ic_resnet8"), ("vww", "vww_96"), ("ad", "ad01")]
    out = []
    for i, (name, stem) in enumerate(models):
        fp = REPO / "models" / "mlperf-tiny" / f"{stem}_float32.tflite"
        q = Interpreter(model_path=str(REPO / "models" / "mlperf-tiny" / f"{stem}_int8.tflite"))
        scale, zp = q.get_input_details()[0]["quantization"]
        content, hybrid = dequantize_hybrid(fp)
        it = Interpreter(model_content=content, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
        it.allocate_tensors()
        d, o = it.get_input_details()[0], it.get_output_details()[0]
        n = int(np.prod(d["shape"]))
        samples = []
        for s in range(SAMPLES):
            seed = 5000 + 1000 * i + s
            qx = goldenio.SplitMix64(seed).int8s(n).astype(np.float32)
            x = ((qx - np.float32(zp)) * np.float32(scale)).astype(np.float32).reshape(d["shape"])
            it.set_tensor(d["index"], x)
            it.invoke()
            samples.append({"seed": seed, "output": goldenio.tensor(it.get_tensor(o["index"]).astype(np.float32))})
        out.append({"name": name, "file": f"models/mlperf-tiny/{stem}_float32.tflite", "input_shape": [int(v) for v in d["shape"]],
                    "input_scale": float(np.float32(scale)), "input_zero_point": int(zp),
                    "hybrid_weights_dequantized": hybrid, "samples": samples})
    return out


def main():
    # tf2onnx names nodes in set-iteration order: fix Python's string hashing so that reruns
    # write identical files.
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.execve(sys.executable, [sys.executable] + sys.argv, {**os.environ, "PYTHONHASHSEED": "0"})
    goldenio.check_pins(PINNED)
    for sub in ("torch", "helper", "tf2onnx", "sklearn", "errors"):
        shutil.rmtree(OUT / sub, ignore_errors=True)
        (OUT / sub).mkdir(parents=True)
    torch_python = os.environ.get("TORCH_PYTHON", str(REPO / ".venv-torch" / "bin" / "python"))
    subprocess.run([torch_python, str(HERE / "gen_onnx_torch.py"), str(OUT / "torch")], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    listing = json.loads((OUT / "torch" / "torch.json").read_text())
    (OUT / "torch" / "torch.json").unlink()
    entries = []
    for t in listing:
        path = OUT / "torch" / t["file"]
        entries.append(golden_entry(t["name"], f"torch/{t['file']}", onnx.load(str(path)), None))
    for m in helper_models():
        rel = f"helper/{m.graph.name}.onnx"
        onnx.save(m, str(OUT / rel))
        entries.append(golden_entry(m.graph.name, rel, m, None))
    for m, sel in keras_models():
        rel = f"tf2onnx/{m.graph.name}.onnx"
        onnx.save(m, str(OUT / rel))
        entries.append(golden_entry(m.graph.name, rel, m, sel))
    for m, sel in sklearn_models():
        rel = f"sklearn/{m.graph.name}.onnx"
        onnx.save(m, str(OUT / rel))
        entries.append(golden_entry(m.graph.name, rel, m, sel))
    for name, m in error_models().items():
        onnx.save(m, str(OUT / "errors" / f"{name}.onnx"))
    doc = {"generator": "tests/gen/gen_onnx_float.py", "versions": PINNED, "ort": "CPUExecutionProvider, ORT_DISABLE_ALL",
           "models": entries}
    goldenio.write(OUT / "float_models.json", doc)
    goldenio.write(OUT / "tflite_float_mlperf.json", {"generator": "tests/gen/gen_onnx_float.py", "versions": PINNED,
                                                      "models": tflite_float_mlperf()})
    total = sum(p.stat().st_size for p in OUT.rglob("*") if p.is_file())
    print(f"{len(entries)} models, {total} bytes in {OUT}")


if __name__ == "__main__":
    main()
