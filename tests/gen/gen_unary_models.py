#!/usr/bin/env python3
"""Small float models with the clamp and sign ops, and the real runtimes' outputs, for
tests/host/unary_models.rs.

    .venv/bin/python tests/gen/gen_unary_models.py

ONNX (onnx.helper, run by ONNX Runtime with graph optimizations disabled): Clip[-1, 1] after a
MatMul (fused into the fully connected op as RELU_N1_TO_1), Clip[0.5, 3], Clip[-inf, 2] (only a
max), Abs, Elu (alpha 1 and 0.5), Neg, Reciprocal; hard swish in pieces as Paddle2ONNX writes it
(x · Clip(x + 3, 0, 6) / 6, two groupings); 1/√x as Reciprocal(Sqrt) and Div(1, Sqrt).
TFLite (tf.function converted by the TFLite converter, run by the TFLite interpreter with the
builtin kernels, no delegates: the reference resolver has no ELU): ABS, NEG, RSQRT, ELU, RELU_N1_TO_1, SQRT (the converter writes
clip_by_value(x, 0, 1) as MINIMUM and RELU, not RELU_0_TO_1).

Writes tests/golden/unary_models/: the models and cases.json (per model its seeded input and the
runtime's float output, and the TFLite builtin operators in the file).

Pinned: numpy 2.4.6, onnx 1.23.2, onnxruntime 1.32.0, tensorflow_cpu 2.21.0, ai-edge-litert 2.3.0.
Deterministic (seeded inputs; the converter's output is stable for a given version).
"""
import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import goldenio  # noqa: E402

PINNED = {"numpy": "2.4.6", "onnx": "1.23.2", "onnxruntime": "1.32.0", "tensorflow_cpu": "2.21.0",
          "ai-edge-litert": "2.3.0"}
OUT = HERE.parent / "golden" / "unary_models"
SHAPE = [1, 6, 16]


def onnx_model(name, nodes, inits, opset=13):
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, SHAPE)], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="gen_unary_models.py")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def f32(name, a):
    return numpy_helper.from_array(np.asarray(a, np.float32), name)


def onnx_specs(rng):
    n = helper.make_node
    w = rng.standard_normal((16, 16)).astype(np.float32) / 4.0
    return [
        ("onnx_fc_clip_n1_1", [n("MatMul", ["x", "w"], ["h"], name="fc"),
                               n("Clip", ["h", "lo", "hi"], ["y"], name="clip")],
         [f32("w", w), f32("lo", -1.0), f32("hi", 1.0)], 2.0),
        ("onnx_clip_0p5_3", [n("Clip", ["x", "lo", "hi"], ["y"], name="clip")], [f32("lo", 0.5), f32("hi", 3.0)], 2.0),
        ("onnx_clip_max_only", [n("Clip", ["x", "", "hi"], ["y"], name="clip")], [f32("hi", 2.0)], 2.0),
        ("onnx_abs", [n("Abs", ["x"], ["y"], name="abs")], [], 2.0),
        ("onnx_elu", [n("Elu", ["x"], ["y"], name="elu")], [], 2.0),
        ("onnx_elu_alpha0p5", [n("Elu", ["x"], ["y"], name="elu", alpha=0.5)], [], 2.0),
        ("onnx_neg", [n("Neg", ["x"], ["y"], name="neg")], [], 2.0),
        ("onnx_reciprocal", [n("Abs", ["x"], ["a"], name="abs"), n("Add", ["a", "one"], ["b"], name="add"),
                             n("Reciprocal", ["b"], ["y"], name="reciprocal")], [f32("one", 1.0)], 2.0),
    ]


def hardswish_specs(rng):
    """Hard swish as Paddle2ONNX writes it (PP-OCR, PP-LCNet): x · Clip(x + 3, 0, 6) / 6, after a
    layer with weights (here a MatMul and an Add of a bias), and the other grouping
    x · (Clip(x + 3, 0, 6) / 6); microquant fuses both into one HardSwish."""
    n = helper.make_node
    w = (rng.standard_normal((16, 16)) / 2.0).astype(np.float32)
    b = (rng.standard_normal(16) / 4.0).astype(np.float32)
    consts = [f32("w", w), f32("b", b), f32("three", 3.0), f32("zero", 0.0), f32("six", 6.0)]
    conv = [n("MatMul", ["x", "w"], ["p"], name="fc"), n("Add", ["p", "b"], ["c"], name="bias")]
    return [
        ("onnx_hardswish_paddle", conv + [n("Add", ["c", "three"], ["a"], name="add"),
                                   n("Clip", ["a", "zero", "six"], ["r"], name="clip"),
                                   n("Mul", ["c", "r"], ["m"], name="mul"), n("Div", ["m", "six"], ["y"], name="div")],
         consts, 1.0),
        ("onnx_hardswish_gate", conv + [n("Add", ["three", "c"], ["a"], name="add"),
                                 n("Clip", ["a", "zero", "six"], ["r"], name="clip"),
                                 n("Div", ["r", "six"], ["h"], name="div"), n("Mul", ["h", "c"], ["y"], name="mul")],
         consts, 1.0),
    ]


def rsqrt_specs():
    """1/√x as PyTorch exports torch.rsqrt: Reciprocal(Sqrt(x)) and Div(1, Sqrt(x)) (after Abs and
    + 0.5, to stay positive); microquant fuses both into one RSQRT."""
    n = helper.make_node
    pre = [n("Abs", ["x"], ["a"], name="abs"), n("Add", ["a", "half"], ["p"], name="add"),
           n("Sqrt", ["p"], ["s"], name="sqrt")]
    return [
        ("onnx_rsqrt_reciprocal", pre + [n("Reciprocal", ["s"], ["y"], name="reciprocal")], [f32("half", 0.5)], 2.0),
        ("onnx_rsqrt_div", pre + [n("Div", ["one", "s"], ["y"], name="div")], [f32("half", 0.5), f32("one", 1.0)], 2.0),
    ]


def tflite_specs():
    import tensorflow as tf
    return [
        ("tflite_abs", lambda x: tf.abs(x)),
        ("tflite_neg", lambda x: tf.negative(x)),
        ("tflite_rsqrt", lambda x: tf.math.rsqrt(tf.abs(x) + 0.5)),
        ("tflite_elu", lambda x: tf.nn.elu(x)),
        ("tflite_relu_n1_to_1", lambda x: tf.clip_by_value(x, -1.0, 1.0)),
        ("tflite_sqrt", lambda x: tf.sqrt(tf.abs(x))),
    ]


def convert(fn):
    import tensorflow as tf
    f = tf.function(fn, input_signature=[tf.TensorSpec(SHAPE, tf.float32)])
    conv = tf.lite.TFLiteConverter.from_concrete_functions([f.get_concrete_function()], f)
    return conv.convert()


def run_tflite(model, x):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    it = Interpreter(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    ops = [d["op_name"] for d in it._get_ops_details()]
    return it.get_tensor(it.get_output_details()[0]["index"]), ops


def main():
    goldenio.check_pins(PINNED)
    rng = np.random.default_rng(2026)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    cases = []
    OUT.mkdir(parents=True, exist_ok=True)

    def onnx_case(name, nodes, inits, spread, rng):
        m = onnx_model(name, nodes, inits)
        path = OUT / f"{name}.onnx"
        onnx.save(m, path)
        x = (spread * rng.standard_normal(SHAPE)).astype(np.float32)
        y = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        cases.append({"name": name, "file": path.name, "input": goldenio.tensor(x), "expected": goldenio.tensor(y),
                      "ops": [nd.op_type for nd in nodes]})
        print(name, [nd.op_type for nd in nodes])

    for spec in onnx_specs(rng):
        onnx_case(*spec, rng)
    for name, fn in tflite_specs():
        model = convert(fn)
        path = OUT / f"{name}.tflite"
        path.write_bytes(model)
        x = (2.0 * rng.standard_normal(SHAPE)).astype(np.float32)
        y, ops = run_tflite(model, x)
        cases.append({"name": name, "file": path.name, "input": goldenio.tensor(x), "expected": goldenio.tensor(y),
                      "ops": ops})
        print(name, ops)
    # The hard swish models came later, from their own seed (the earlier cases stay as they were).
    rng2 = np.random.default_rng(2027)
    for spec in hardswish_specs(rng2) + rsqrt_specs():
        onnx_case(*spec, rng2)
    goldenio.write(OUT / "cases.json", {"generator": "tests/gen/gen_unary_models.py", "tools": PINNED, "models": cases})


if __name__ == "__main__":
    main()
