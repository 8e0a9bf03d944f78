#!/usr/bin/env python3
"""ONNX Runtime's outputs for layer normalization, as the ONNX op (opset 17 LayerNormalization)
and in the pieces PyTorch writes below opset 17 (ReduceMean, Sub, Pow 2, ReduceMean, Add, Sqrt,
Div, Mul, Add), for tests/host/layer_norm.rs.

    .venv/bin/python tests/gen/gen_layer_norm.py

Writes tests/golden/layer_norm/: <name>.onnx float models and cases.json: per model its seeded
input (numpy default_rng) and ONNX Runtime's float output (graph optimizations disabled).

Pinned: numpy 2.4.6, onnx 1.23.2, onnxruntime 1.32.0 (tests/gen/requirements.txt). Deterministic.
"""
import pathlib
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import goldenio  # noqa: E402

PINNED = {"numpy": "2.4.6", "onnx": "1.23.2", "onnxruntime": "1.32.0"}
OUT = HERE.parent / "golden" / "layer_norm"


def init(name, a):
    return numpy_helper.from_array(np.asarray(a, np.float32), name)


def layer_norm_op(shape, axis, eps, bias, rng, opset=17):
    """x -> LayerNormalization(axis, epsilon) -> y, scale (and bias) random."""
    norm_shape = shape[axis:]
    inits = [init("scale", 1.0 + 0.3 * rng.standard_normal(norm_shape))]
    ins = ["x", "scale"]
    if bias:
        inits.append(init("bias", 0.2 * rng.standard_normal(norm_shape)))
        ins.append("bias")
    node = helper.make_node("LayerNormalization", ins, ["y"], axis=axis, epsilon=eps, name="ln")
    return [node], inits, opset


def transformer_mlp(shape, rng):
    """A transformer block's feed-forward half: x [1, T, D] -> MatMul W1 -> Gelu-free Relu ->
    MatMul W2 -> Add x (residual) -> LayerNormalization (post-norm, as BERT)."""
    d = shape[-1]
    inits = [init("w1", rng.standard_normal((d, 2 * d)) / np.sqrt(d)), init("w2", rng.standard_normal((2 * d, d)) / np.sqrt(2 * d)),
             init("scale", 1.0 + 0.1 * rng.standard_normal(d)), init("bias", 0.1 * rng.standard_normal(d))]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
             helper.make_node("Relu", ["h"], ["hr"], name="relu"),
             helper.make_node("MatMul", ["hr", "w2"], ["o"], name="fc2"),
             helper.make_node("Add", ["o", "x"], ["res"], name="residual"),
             helper.make_node("LayerNormalization", ["res", "scale", "bias"], ["y"], axis=-1, epsilon=1e-5, name="ln")]
    return nodes, inits, 17


def decomposed(shape, eps, rng):
    """What torch.onnx writes for nn.LayerNorm below opset 17."""
    d = shape[-1]
    inits = [init("two", 2.0), init("eps", eps), init("scale", 1.0 + 0.3 * rng.standard_normal(d)),
             init("bias", 0.2 * rng.standard_normal(d))]
    n = helper.make_node
    nodes = [n("ReduceMean", ["x"], ["mean"], axes=[-1], keepdims=1, name="mean"),
             n("Sub", ["x", "mean"], ["d"], name="sub"),
             n("Pow", ["d", "two"], ["sq"], name="pow"),
             n("ReduceMean", ["sq"], ["var"], axes=[-1], keepdims=1, name="var"),
             n("Add", ["var", "eps"], ["ve"], name="add_eps"),
             n("Sqrt", ["ve"], ["std"], name="sqrt"),
             n("Div", ["d", "std"], ["nrm"], name="div"),
             n("Mul", ["nrm", "scale"], ["sc"], name="mul"),
             n("Add", ["sc", "bias"], ["y"], name="add")]
    return nodes, inits, 13


def model(name, shape, nodes, inits, opset):
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="gen_layer_norm.py")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def main():
    goldenio.check_pins(PINNED)
    rng = np.random.default_rng(17)
    specs = [
        ("ln_last_axis", [1, 10, 32], lambda: layer_norm_op([1, 10, 32], -1, 1e-5, True, rng), 1.5, 0.3),
        ("ln_no_bias_eps6", [2, 5, 16], lambda: layer_norm_op([2, 5, 16], 2, 1e-6, False, rng), 2.0, -0.5),
        ("ln_chw", [1, 8, 4, 4], lambda: layer_norm_op([1, 8, 4, 4], 1, 1e-5, True, rng), 1.0, 0.0),
        ("ln_transformer_mlp", [1, 12, 24], lambda: transformer_mlp([1, 12, 24], rng), 1.0, 0.0),
        ("ln_decomposed_opset13", [1, 10, 32], lambda: decomposed([1, 10, 32], 1e-5, rng), 1.5, 0.3),
    ]
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    cases = []
    for name, shape, make, spread, offset in specs:
        nodes, inits, opset = make()
        m = model(name, shape, nodes, inits, opset)
        path = OUT / f"{name}.onnx"
        path.parent.mkdir(parents=True, exist_ok=True)
        onnx.save(m, path)
        x = (offset + spread * rng.standard_normal(shape)).astype(np.float32)
        sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        y = sess.run(None, {"x": x})[0]
        cases.append({"name": name, "file": f"{name}.onnx", "input": goldenio.tensor(x), "ort": goldenio.tensor(y)})
        print(name, x.shape, "->", y.shape)
    tools = {p: v for p, v in PINNED.items()}
    goldenio.write(OUT / "cases.json", {"generator": "tests/gen/gen_layer_norm.py", "tools": tools, "models": cases})


if __name__ == "__main__":
    main()
