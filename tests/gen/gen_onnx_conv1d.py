#!/usr/bin/env python3
"""Float ONNX models with 1-D convolutions (Conv over [N, C, W], as PyTorch's Conv1d exports and
audio front ends such as Silero VAD's STFT use) and ONNX Runtime's outputs, for the ONNX importer's
Conv1d path (tests/host/onnx_conv1d.rs).

    .venv/bin/python tests/gen/gen_onnx_conv1d.py

Writes tests/golden/onnx_conv1d/*.onnx (written with onnx.helper, opset 17) and conv1d.json: per
model its calibration-like input batch (numpy default_rng(crc32(name)).standard_normal, float32,
[8, C, W]: 8 samples of the model's [1, C, W] input) and ONNX Runtime's outputs on each sample (CPU,
graph optimizations disabled). Forms: strides, dilations, explicit pads, auto_pad SAME_UPPER,
depthwise (group = C), with and without bias, followed by Relu and a second Conv1d.

Pinned: numpy 2.4.6, onnx 1.23.2, onnxruntime 1.32.0. Deterministic.
"""
import json
import pathlib
import sys
import zlib

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
import goldenio  # noqa: E402

import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

PINNED = {"numpy": "2.4.6", "onnx": "1.23.2", "onnxruntime": "1.32.0"}
OUT = REPO / "tests" / "golden" / "onnx_conv1d"
SAMPLES = 8

# name, channels in, width, [(out channels, kernel, attributes, bias)], relu between
MODELS = [
    ("k3_s1", 4, 32, [(8, 3, {}, True)]),
    ("k5_s2_pads", 3, 40, [(6, 5, {"strides": [2], "pads": [2, 1]}, True)]),
    ("k3_dil2_nobias", 4, 30, [(5, 3, {"dilations": [2]}, False)]),
    ("same_upper", 2, 17, [(4, 4, {"auto_pad": "SAME_UPPER", "strides": [2]}, True)]),
    ("depthwise", 6, 24, [(6, 3, {"group": 6, "pads": [1, 1]}, True)]),
    ("stft_like_two_layers", 1, 64, [(16, 8, {"strides": [4]}, False), (8, 3, {"pads": [1, 1]}, True)]),
]


def model(name, c, w, layers):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    nodes, inits = [], []
    x, cin, w_in = "x", c, w
    for i, (m, k, attrs, bias) in enumerate(layers):
        g = attrs.get("group", 1)
        wt = (rng.standard_normal((m, cin // g, k)) / np.sqrt(cin // g * k)).astype(np.float32)
        inits.append(numpy_helper.from_array(wt, f"w{i}"))
        ins = [x, f"w{i}"]
        if bias:
            inits.append(numpy_helper.from_array((0.1 * rng.standard_normal(m)).astype(np.float32), f"b{i}"))
            ins.append(f"b{i}")
        s, d = attrs.get("strides", [1])[0], attrs.get("dilations", [1])[0]
        if attrs.get("auto_pad") == "SAME_UPPER":
            w = -(-w // s)
        else:
            pb, pe = attrs.get("pads", [0, 0])
            w = (w + pb + pe - d * (k - 1) - 1) // s + 1
        y = f"conv{i}"
        nodes.append(helper.make_node("Conv", ins, [y], name=y, kernel_shape=[k], **attrs))
        if i + 1 < len(layers):
            nodes.append(helper.make_node("Relu", [y], [f"relu{i}"], name=f"relu{i}"))
            y = f"relu{i}"
        x, cin = y, m
    nodes.append(helper.make_node("Identity", [x], ["y"], name="out"))
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, w_in])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, cin, w])], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="microquant gen_onnx_conv1d")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def main():
    goldenio.check_pins(PINNED)
    OUT.mkdir(parents=True, exist_ok=True)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    entries = []
    for name, c, w, layers in MODELS:
        m = model(name, c, w, layers)
        path = OUT / f"{name}.onnx"
        path.write_bytes(m.SerializeToString())
        x = np.random.default_rng(zlib.crc32(("x" + name).encode())).standard_normal((SAMPLES, 1, c, w)).astype(np.float32)
        s = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        y = np.stack([s.run(["y"], {"x": xi})[0] for xi in x])
        entries.append({"name": name, "file": path.name, "inputs": goldenio.tensor(x[:, 0]),
                        "outputs": goldenio.tensor(y[:, 0])})
        print(name, x.shape, y.shape)
    doc = {"generator": "tests/gen/gen_onnx_conv1d.py", "tools": PINNED, "models": entries}
    (OUT / "conv1d.json").write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
