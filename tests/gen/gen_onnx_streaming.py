#!/usr/bin/env python3
"""A streaming recurrent model and ONNX Runtime running it as a stream, for the LSTM state carried
between calls (tests/host/onnx_streaming.rs).

    .venv/bin/python tests/gen/gen_onnx_streaming.py

The model, written with onnx.helper, is shaped like a voice-activity detector's back end (Silero
VAD's): a feature frame x [1, 12] → MatMul + Add (12 → 8) → Relu → one LSTM step (hidden 16,
layout 0, the state as graph inputs h0, c0 [1, 1, 16] and outputs hN, cN) → MatMul + Add
(16 → 1) → Sigmoid → y [1, 1]. ONNX Runtime (CPU, graph optimizations disabled) runs it over a
stream of 48 frames, each step fed the hN, cN the previous step returned (the first step zeros):
the y of every step is the expected output of a model that keeps its state between calls. Also
written: y when every frame starts from the zero state (what a stateless run gives), and a
calibration stream of 96 other frames.

Writes tests/golden/onnx_streaming/: lstm_stream.onnx, stream.npy [48, 12], calibration.npy
[96, 12], expected_streamed.npy and expected_stateless.npy [48, 1], and cases.json naming them
(the CLI's tests read the .npy files as a user's pipeline would).

Pinned: numpy 2.4.6, onnx 1.23.2, onnxruntime 1.32.0. Deterministic (seeded).
"""
import pathlib
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import goldenio  # noqa: E402

import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

PINNED = {"numpy": "2.4.6", "onnx": "1.23.2", "onnxruntime": "1.32.0"}
OUT = HERE.parent / "golden" / "onnx_streaming"
N_IN, N_FEAT, HIDDEN = 12, 8, 16


def model(rng):
    c = lambda name, a: numpy_helper.from_array(np.asarray(a, np.float32), name)  # noqa: E731
    bias = rng.uniform(-0.5, 0.5, (1, 8 * HIDDEN))
    bias[0, 2 * HIDDEN:3 * HIDDEN] += 2.0  # the forget gate (ONNX order i, o, f, c) mostly open: a long memory
    inits = [
        c("w1", rng.uniform(-0.5, 0.5, (N_IN, N_FEAT))), c("b1", rng.uniform(-0.2, 0.2, N_FEAT)),
        c("W", rng.uniform(-0.6, 0.6, (1, 4 * HIDDEN, N_FEAT))), c("R", rng.uniform(-0.6, 0.6, (1, 4 * HIDDEN, HIDDEN))),
        c("B", bias), c("w2", rng.uniform(-1.5, 1.5, (HIDDEN, 1))), c("b2", [0.1]),
        numpy_helper.from_array(np.array([1, 1, N_FEAT], np.int64), "seq_shape"),
        numpy_helper.from_array(np.array([1, HIDDEN], np.int64), "h_shape"),
    ]
    n = helper.make_node
    nodes = [
        n("MatMul", ["x", "w1"], ["f0"], name="features"), n("Add", ["f0", "b1"], ["f1"], name="features_bias"),
        n("Relu", ["f1"], ["f2"], name="features_relu"), n("Reshape", ["f2", "seq_shape"], ["seq"], name="to_seq"),
        n("LSTM", ["seq", "W", "R", "B", "", "h0", "c0"], ["Y", "hN", "cN"], hidden_size=HIDDEN, name="rnn"),
        n("Reshape", ["hN", "h_shape"], ["h"], name="last"),
        n("MatMul", ["h", "w2"], ["l0"], name="head"), n("Add", ["l0", "b2"], ["l1"], name="head_bias"),
        n("Sigmoid", ["l1"], ["y"], name="prob"),
    ]
    vi = helper.make_tensor_value_info
    state = [1, 1, HIDDEN]
    g = helper.make_graph(nodes, "lstm_stream",
                          [vi("x", TensorProto.FLOAT, [1, N_IN]), vi("h0", TensorProto.FLOAT, state),
                           vi("c0", TensorProto.FLOAT, state)],
                          [vi("y", TensorProto.FLOAT, [1, 1]), vi("hN", TensorProto.FLOAT, state),
                           vi("cN", TensorProto.FLOAT, state)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)], producer_name="gen_onnx_streaming.py")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def frames(rng, n):
    """A slowly moving feature stream: a mean-reverting random walk (AR(1), 0.9) plus noise, so
    the state matters and calibration and evaluation streams cover the same values."""
    x = np.zeros((n, N_IN))
    for t in range(1, n):
        x[t] = 0.9 * x[t - 1] + rng.normal(0, 0.45, N_IN)
    return (x + rng.normal(0, 0.3, (n, N_IN))).astype(np.float32)


def main():
    goldenio.check_pins(PINNED)
    rng = np.random.default_rng(2026_12_06)
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "lstm_stream.onnx"
    onnx.save(model(rng), path)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    zero = np.zeros((1, 1, HIDDEN), np.float32)
    stream = frames(rng, 48)
    calib = frames(rng, 96)
    h, c = zero, zero
    streamed, stateless = [], []
    for f in stream:
        y, h, c = sess.run(None, {"x": f[None], "h0": h, "c0": c})
        streamed.append(y.ravel())
        stateless.append(sess.run(["y"], {"x": f[None], "h0": zero, "c0": zero})[0].ravel())
    arrays = {"stream": stream, "calibration": calib, "expected_streamed": np.stack(streamed),
              "expected_stateless": np.stack(stateless)}
    for name, a in arrays.items():
        np.save(OUT / f"{name}.npy", a.astype(np.float32))
    goldenio.write(OUT / "cases.json", {
        "generator": "tests/gen/gen_onnx_streaming.py", "tools": PINNED, "file": path.name,
        **{name: f"{name}.npy" for name in arrays},
    })
    print("streamed", np.round(np.concatenate(streamed)[:8], 3), "stateless", np.round(np.concatenate(stateless)[:8], 3))


if __name__ == "__main__":
    main()
