#!/usr/bin/env python3
"""The int8 LSTM in our exact QDQ export, run by ONNX Runtime as a stream (tests/host/qdq_lstm.rs).

    .venv/bin/python tests/gen/gen_qdq_lstm.py

`microquant quantize --qdq` writes an int8 LSTM as ONNX ops computing TFLite Micro's integer
LSTM exactly, every time step unrolled, its hidden and cell state carried between calls through
the graph inputs `<node>/h_in` (int8), `<node>/c_in` (int16) and outputs `<node>/h_out`,
`<node>/c_out` (core/src/onnx/export/lstm.rs). This script exports four models with the CLI of
this checkout (built here with `cargo build --release -p microquant-cli`), checks each with
onnx.checker (full_check), and runs it with ONNX Runtime over a stream of calls, each call fed
the state the previous one returned (the first call: the start state, the initializers of the
state inputs' names, which are also what a call that does not feed them gets):

  lstm_stream   tests/golden/onnx_streaming/lstm_stream.onnx (a frame -> FC -> ReLU -> one LSTM
                step, hidden 16 -> FC -> sigmoid) quantized with its state inputs fixed at zero
                (`--input-value h0=0,... c0=0,... --output-name y`) on
                tests/golden/onnx_streaming/calibration.npy; the stream: that folder's
                stream.npy (48 frames, one per call)
  lstm_s20_b1   tests/golden/onnx_recurrent/lstm_l0_s20_b1_i10_h16.onnx (20 steps, time-major),
                6 calls
  lstm_s5_b2    lstm_l0_s5_b2_i3_h4.onnx (5 steps, batch 2, time-major), 8 calls
  lstm_l1_s4_b3 lstm_l1_s4_b3_i2_h3.onnx (4 steps, batch 3, batch-major: layout 1), 8 calls

The recurrent models are calibrated on seeded standard-normal samples (numpy default_rng(21, 23,
25), 32 samples) and streamed with others (default_rng(22, 24, 26)), written as .npy here.

Writes tests/golden/qdq_lstm/: export/<name>.onnx (our export), <name>_calib.npy and
<name>_stream.npy (the recurrent models'), and qdq_lstm.json: per model the float model, the
CLI's extra arguments, the calibration and stream files, and ONNX Runtime's results on every
call of the stream: the int8 values of the model's output (the int8 tensor its final
DequantizeLinear reads, in the model's layout), and the int8 h_out of the call; run with default graph optimizations
("ort") and with ORT_DISABLE_ALL ("ort_noopt", stored only when it differs).

Pinned: numpy 2.4.6, onnx 1.23.2, onnxruntime 1.32.0 (checked). Deterministic.
"""
import json
import pathlib
import subprocess
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
import goldenio  # noqa: E402

import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import numpy_helper  # noqa: E402

PINNED = {"numpy": "2.4.6", "onnx": "1.23.2", "onnxruntime": "1.32.0"}
OUT = REPO / "tests" / "golden" / "qdq_lstm"
STREAMING = REPO / "tests" / "golden" / "onnx_streaming"
RECURRENT = REPO / "tests" / "golden" / "onnx_recurrent"

ZEROS16 = ",".join(["0"] * 16)
# (name, float model, extra CLI arguments, calibration, stream)
CASES = [
    ("lstm_stream", STREAMING / "lstm_stream.onnx",
     ["--input-value", f"h0={ZEROS16}", "--input-value", f"c0={ZEROS16}", "--output-name", "y"],
     STREAMING / "calibration.npy", STREAMING / "stream.npy"),
]
# (name, float model, model input shape, calibration seed, stream seed, calls)
RECURRENT_CASES = [
    ("lstm_s20_b1", "lstm_l0_s20_b1_i10_h16.onnx", (20, 1, 10), 21, 22, 6),
    ("lstm_s5_b2", "lstm_l0_s5_b2_i3_h4.onnx", (5, 2, 3), 23, 24, 8),
    ("lstm_l1_s4_b3", "lstm_l1_s4_b3_i2_h3.onnx", (3, 4, 2), 25, 26, 8),
]
CALIB_SAMPLES = 32


def int8_output(m, name):
    """The int8 tensor whose DequantizeLinear gives graph output `name`, and the ops between them
    (Identity, Reshape, Transpose: 4-D activations are NCHW inside our exports), to apply to its
    values in that order."""
    producer = {o: n for n in m.graph.node for o in n.output}
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    path = []
    v = name
    while True:
        n = producer[v]
        if n.op_type == "DequantizeLinear":
            return n.input[0], path[::-1]
        if n.op_type == "Transpose":
            perm = next(list(a.ints) for a in n.attribute if a.name == "perm")
            path.append(lambda a, perm=perm: np.transpose(a, perm))
        elif n.op_type == "Reshape":
            path.append(lambda a, shape=inits[n.input[1]]: a.reshape(shape))
        elif n.op_type != "Identity":
            raise SystemExit(f"{name}: reached {n.op_type} before a DequantizeLinear")
        v = n.input[0]


def run_stream(path, stream):
    """ONNX Runtime over the stream, the state fed back: {key: {"y": int8 [calls, ...],
    "h_out": int8 [calls, ...]}}."""
    m = onnx.load(str(path))
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    inputs = [i.name for i in m.graph.input]
    states = [n for n in inputs if n.endswith("/h_in") or n.endswith("/c_in")]
    x_name = [n for n in inputs if n not in states]
    assert len(x_name) == 1 and len(states) == 2, inputs
    y_name = m.graph.output[0].name
    q, ops = int8_output(m, y_name)
    m.graph.output.append(onnx.helper.make_tensor_value_info(q, onnx.TensorProto.INT8, None))
    names = [o.name for o in m.graph.output]
    res = {}
    for key, level in (("ort", ort.GraphOptimizationLevel.ORT_ENABLE_ALL),
                       ("ort_noopt", ort.GraphOptimizationLevel.ORT_DISABLE_ALL)):
        so = ort.SessionOptions()
        so.graph_optimization_level = level
        so.log_severity_level = 3  # the state inputs' default initializers are meant to be overridden
        s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
        state = {n: inits[n] for n in states}
        ys, hs = [], []
        for x in stream:
            out = dict(zip(names, s.run(None, {x_name[0]: x, **state})))
            for n in states:
                state[n] = out[n[: -len("_in")] + "_out"]
            y = out[q]
            for op in ops:
                y = op(y)
            ys.append(y)
            hs.append(next(state[n] for n in states if n.endswith("/h_in")))
        res[key] = {"y": np.stack(ys), "h_out": np.stack(hs)}
    same = all(np.array_equal(res["ort"][k], res["ort_noopt"][k]) for k in ("y", "h_out"))
    return res, same


def main():
    goldenio.check_pins(PINNED)
    (OUT / "export").mkdir(parents=True, exist_ok=True)
    cases = list(CASES)
    for name, model, shape, cseed, sseed, calls in RECURRENT_CASES:
        calib = OUT / f"{name}_calib.npy"
        stream = OUT / f"{name}_stream.npy"
        np.save(calib, np.random.default_rng(cseed).standard_normal((CALIB_SAMPLES, *shape)).astype(np.float32))
        np.save(stream, np.random.default_rng(sseed).standard_normal((calls, *shape)).astype(np.float32))
        cases.append((name, RECURRENT / model, [], calib, stream))
    subprocess.run(["cargo", "build", "-q", "--release", "-p", "microquant-cli"], cwd=REPO, check=True)
    cli = REPO / "target" / "release" / "microquant"
    entries = []
    for name, model, extra, calib, stream in cases:
        qdq = OUT / "export" / f"{name}.onnx"
        mq = OUT / "export" / f"{name}.mq.tmp"
        subprocess.run([str(cli), "quantize", str(model), "--calib", str(calib), *extra, "-o", str(mq),
                        "--qdq", str(qdq)], check=True, stdout=subprocess.DEVNULL)
        mq.unlink()
        onnx.checker.check_model(onnx.load(str(qdq)), full_check=True)
        x = np.load(stream)
        # One call per row of the stream, as the model input takes it ([1, 12] frames for the
        # streaming model, whose stream has no batch axis).
        m = onnx.load(str(qdq))
        rank = len(m.graph.input[0].type.tensor_type.shape.dim)
        calls = [x[i] if x.ndim - 1 == rank else x[i:i + 1] for i in range(len(x))]
        res, same = run_stream(qdq, calls)
        e = {"name": name, "file": goldenio.rel(qdq), "float_model": goldenio.rel(model), "args": extra,
             "calib": goldenio.rel(calib), "stream": goldenio.rel(stream),
             "ort": {k: goldenio.tensor(v) for k, v in res["ort"].items()},
             "ort_noopt": None if same else {k: goldenio.tensor(v) for k, v in res["ort_noopt"].items()}}
        entries.append(e)
        print(name, "ok", "(default and ORT_DISABLE_ALL agree)" if same else "(the two runs differ)")
    (OUT / "qdq_lstm.json").write_text(json.dumps({"generator": "tests/gen/gen_qdq_lstm.py", "tools": PINNED,
                                                   "models": entries}, indent=1) + "\n")


if __name__ == "__main__":
    main()
