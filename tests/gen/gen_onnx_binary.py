#!/usr/bin/env python3
"""Small float ONNX models of the two-input elementwise ops (Sub of two activations, Min, Max,
a constant broadcast per channel in NCHW, PRelu with a per-channel and a shared slope, Div of two activations and of a constant by an
activation) and their ONNX Runtime outputs, for the end-to-end test
tests/host/binary_ops.rs (import, float execution, quantization, the int8 interpreter).

    .venv/bin/python tests/gen/gen_onnx_binary.py

Writes tests/golden/onnx/binary/*.onnx and tests/golden/onnx/binary_models.json (the schema of
float_models.json: 3 seeded standard-normal inputs per model, ONNX Runtime 1.32.0's outputs,
CPU, graph optimizations disabled). Pinned: numpy 2.4.6, onnx 1.23.2, onnxruntime 1.32.0.
Deterministic.
"""
import pathlib
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import goldenio  # noqa: E402
from gen_onnx_float import const, f32, golden_entry, make, rng_for, vi  # noqa: E402
from onnx import helper  # noqa: E402

import onnx  # noqa: E402

PINNED = {"numpy": "2.4.6", "onnx": "1.23.2", "onnxruntime": "1.32.0"}
OUT = HERE.parent / "golden" / "onnx"


def sub_min_max_model(opset):
    """Two NCHW inputs; a conv on each (so the operands are computed activations), then
    Sub(a, b), Min(d, x) with a graph input, Max of three operands (one a per-channel constant
    [1, C, 1, 1]), Sub(constant, m), Min with a scalar constant."""
    name = f"sub_min_max_opset{opset}"
    r = rng_for(name)
    w1 = f32(r.standard_normal((4, 3, 3, 3)) * 0.3)
    w2 = f32(r.standard_normal((4, 3, 3, 3)) * 0.3)
    ch = f32(r.standard_normal((1, 4, 1, 1)) * 0.3)
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1], kernel_shape=[3, 3], name="conv_a"),
        helper.make_node("Conv", ["y", "w2"], ["b"], pads=[1, 1, 1, 1], kernel_shape=[3, 3], name="conv_b"),
        helper.make_node("Sub", ["a", "b"], ["d"], name="sub_ab"),
        helper.make_node("Min", ["d", "a"], ["m1"], name="min_da"),
        helper.make_node("Max", ["m1", "b", "ch"], ["m2"], name="max3"),
        helper.make_node("Sub", ["one", "m2"], ["s"], name="one_minus"),
        helper.make_node("Min", ["s", "half"], ["z"], name="min_half"),
    ]
    inits = [const("w1", w1), const("w2", w2), const("ch", ch), const("one", f32(1.0)), const("half", f32(0.5))]
    return make(name, nodes, [vi("x", [1, 3, 6, 6]), vi("y", [1, 3, 6, 6])], [vi("z", [1, 4, 6, 6])], inits, opset)


def prelu_model(opset):
    """PRelu as PyTorch exports nn.PReLU(C) (slope [C, 1, 1]) after a conv, and PRelu with one
    shared slope ([1]) after a second conv."""
    name = f"prelu_opset{opset}"
    r = rng_for(name)
    w1 = f32(r.standard_normal((6, 3, 3, 3)) * 0.3)
    w2 = f32(r.standard_normal((4, 6, 1, 1)) * 0.3)
    s1 = f32(r.uniform(0.05, 0.4, (6, 1, 1)))
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1], kernel_shape=[3, 3], name="conv1"),
        helper.make_node("PRelu", ["a", "s1"], ["p1"], name="prelu_channel"),
        helper.make_node("Conv", ["p1", "w2"], ["b"], kernel_shape=[1, 1], name="conv2"),
        helper.make_node("PRelu", ["b", "s2"], ["z"], name="prelu_shared"),
    ]
    inits = [const("w1", w1), const("w2", w2), const("s1", s1), const("s2", f32([0.25]))]
    return make(name, nodes, [vi("x", [1, 3, 6, 6])], [vi("z", [1, 4, 6, 6])], inits, opset)


def div_model(opset):
    """Div of two computed activations (a conv over a positive divisor: sigmoid + 0.5, as a
    normalisation divides by a spread) and a constant over an activation (a reciprocal)."""
    name = f"div_opset{opset}"
    r = rng_for(name)
    w1 = f32(r.standard_normal((4, 3, 3, 3)) * 0.3)
    w2 = f32(r.standard_normal((4, 3, 3, 3)) * 0.3)
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1], kernel_shape=[3, 3], name="conv_a"),
        helper.make_node("Conv", ["y", "w2"], ["b"], pads=[1, 1, 1, 1], kernel_shape=[3, 3], name="conv_b"),
        helper.make_node("Sigmoid", ["b"], ["sb"], name="sigmoid"),
        helper.make_node("Add", ["sb", "half"], ["d"], name="spread"),
        helper.make_node("Div", ["a", "d"], ["q"], name="div_ad"),
        helper.make_node("Div", ["two", "d"], ["rcp"], name="two_over_d"),
        helper.make_node("Add", ["q", "rcp"], ["z"], name="sum"),
    ]
    inits = [const("w1", w1), const("w2", w2), const("half", f32(0.5)), const("two", f32(2.0))]
    return make(name, nodes, [vi("x", [1, 3, 6, 6]), vi("y", [1, 3, 6, 6])], [vi("z", [1, 4, 6, 6])], inits, opset)


def main():
    goldenio.check_pins(PINNED)
    (OUT / "binary").mkdir(parents=True, exist_ok=True)
    entries = []
    for m in [sub_min_max_model(13), sub_min_max_model(17), prelu_model(13), prelu_model(17), div_model(13), div_model(17)]:
        rel = f"binary/{m.graph.name}.onnx"
        onnx.save(m, str(OUT / rel))
        entries.append(golden_entry(m.graph.name, rel, m, None))
    doc = {"generator": "tests/gen/gen_onnx_binary.py", "versions": PINNED,
           "ort": "CPUExecutionProvider, ORT_DISABLE_ALL", "models": entries}
    goldenio.write(OUT / "binary_models.json", doc)
    print(f"{len(entries)} models")


if __name__ == "__main__":
    main()
