#!/usr/bin/env python3
"""ONNX Runtime's outputs for the elementwise functions microquant runs as a 256-entry int8 table
(`.mq` kind LUT: Exp, Sqrt, Erf, Neg, Softplus, Sin, Cos, Pow with a constant exponent, Gelu
(opset 20, approximate none / tanh; and written in pieces with Erf), x*Sigmoid(x) (SiLU),
HardSigmoid), for
tests/host/unary_lut.rs.

    .venv/bin/python tests/gen/gen_unary_lut.py

Writes tests/golden/unary/:
  qdq.json    per case: the function, its input and output quantization (float32 scales, exact;
              the output's calibrated on the function's real values over the input range, as a
              converter would) and ONNX Runtime's int8 output for every int8 input (-128..127, in
              that order) of the QDQ model  x:int8 -> DequantizeLinear -> f -> QuantizeLinear,
              run with graph optimizations disabled (the ONNX spec's float ops between Q and DQ)
              and with all of them (what a deployment runs); the two are stored separately.
  <name>.onnx float models (one function each, [2, 64] float input) and
  float.json  their seeded inputs (numpy default_rng(seed).standard_normal, times a per-function
              spread) and ONNX Runtime's float outputs (optimizations disabled).

Pinned: numpy 2.4.6, onnx 1.23.2, onnxruntime 1.32.0 (tests/gen/requirements.txt). Deterministic.
"""
import json
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
OUT = HERE.parent / "golden" / "unary"
OPSET = 20


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def erf(x):
    from math import erf as e
    return np.vectorize(e)(x)


# name -> (ONNX nodes from "x" to "y" and their initializers, float64 reference for calibration,
# (input scale, zero point) pairs)
def fn_nodes(name, p=None):
    n = helper.make_node
    if name == "Pow":
        return [n("Pow", ["x", "e"], ["y"])], [numpy_helper.from_array(np.array(p, np.float32), "e")]
    if name == "Gelu":
        return [n("Gelu", ["x"], ["y"], approximate="none")], []
    if name == "GeluTanh":
        return [n("Gelu", ["x"], ["y"], approximate="tanh")], []
    if name == "GeluPieces":
        # PyTorch's export before opset 20: x * 0.5 * (1 + erf(x / sqrt(2))).
        c = [numpy_helper.from_array(np.array(v, np.float32), k)
             for k, v in [("sqrt2", np.sqrt(2.0)), ("one", 1.0), ("half", 0.5)]]
        return [n("Div", ["x", "sqrt2"], ["d"]), n("Erf", ["d"], ["e"]), n("Add", ["e", "one"], ["a"]),
                n("Mul", ["x", "half"], ["h"]), n("Mul", ["h", "a"], ["y"])], c
    if name == "Silu":
        return [n("Sigmoid", ["x"], ["s"]), n("Mul", ["x", "s"], ["y"])], []
    if name == "HardSigmoid":
        return [n("HardSigmoid", ["x"], ["y"], alpha=p[0], beta=p[1])], []
    return [n(name, ["x"], ["y"])], []


def reference(name, x, p=None):
    with np.errstate(all="ignore"):
        return {
            "Exp": np.exp, "Sqrt": np.sqrt, "Erf": erf, "Neg": np.negative, "Sin": np.sin, "Cos": np.cos,
            "Softplus": lambda v: np.log1p(np.exp(v)),
            "Pow": lambda v: np.power(v, p), "Silu": lambda v: v * sigmoid(v),
            "Gelu": lambda v: 0.5 * v * (1 + erf(v / np.sqrt(2))),
            "GeluTanh": lambda v: 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3))),
            "HardSigmoid": lambda v: np.clip(p[0] * v + p[1], 0, 1) if p else None,
        }[name](x)


# (name, parameter, [(input scale, input zero point)], float spread)
CASES = [
    ("Exp", None, [(0.02, 0), (0.05, 60), (0.1, -20)], 1.0),
    ("Sqrt", None, [(0.05, -128), (0.01, -128), (0.3, -100)], 1.0),
    ("Erf", None, [(0.02, 0), (0.015, 10), (0.05, -30)], 1.0),
    ("Neg", None, [(0.03, 5), (0.1, -128)], 1.0),
    ("Softplus", None, [(0.05, 0), (0.1, 40)], 2.0),
    ("Sin", None, [(0.03, 0), (0.08, -10)], 2.0),
    ("Cos", None, [(0.03, 0), (0.08, 17)], 2.0),
    ("Pow", 2.0, [(0.02, 0), (0.05, -50)], 1.0),
    ("Pow", 3.0, [(0.015, 3)], 1.0),
    ("Pow", 0.5, [(0.04, -128)], 1.0),
    ("Gelu", None, [(0.03, 0), (0.05, 40), (0.02, -100)], 2.0),
    ("GeluTanh", None, [(0.03, 0), (0.05, 40)], 2.0),
    ("Silu", None, [(0.04, 0), (0.08, 60), (0.03, -90)], 2.0),
    ("GeluPieces", None, [], 2.0),  # float model only: the pass fuse_gelu makes it one Gelu
    ("HardSigmoid", (0.2, 0.5), [(0.05, 0), (0.03, -40)], 2.0),
]


def f32(v):
    return float(np.float32(v))


def tag(v):
    return f"{float(np.float32(v)):.6g}".replace("-", "m").replace(".", "p")


def calibrated_output(name, p, s, zp):
    x = np.float32(s) * (np.arange(-128, 128) - zp).astype(np.float64)
    y = reference(name, x, p)
    y = y[np.isfinite(y)]
    lo, hi = min(0.0, y.min()), max(0.0, y.max())
    out_s = np.float32((hi - lo) / 255.0)
    out_zp = int(np.clip(np.rint(-128 - lo / float(out_s)), -128, 127))
    return out_s, out_zp


def qdq_model(name, p, s, zp, out_s, out_zp):
    nodes, inits = fn_nodes(name, p)
    nodes = [helper.make_node("DequantizeLinear", ["xq", "s_in", "zp_in"], ["x"])] + nodes + [
        helper.make_node("QuantizeLinear", ["y", "s_out", "zp_out"], ["yq"])]
    inits = inits + [numpy_helper.from_array(np.array(s, np.float32), "s_in"),
                     numpy_helper.from_array(np.array(zp, np.int8), "zp_in"),
                     numpy_helper.from_array(np.array(out_s, np.float32), "s_out"),
                     numpy_helper.from_array(np.array(out_zp, np.int8), "zp_out")]
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("xq", TensorProto.INT8, [1, 256])],
                          [helper.make_tensor_value_info("yq", TensorProto.INT8, [1, 256])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=10)
    onnx.checker.check_model(m)
    return m


def float_model(name, p):
    nodes, inits = fn_nodes(name, p)
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 64])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=10)
    onnx.checker.check_model(m)
    return m


def run(m, x, optimize):
    so = ort.SessionOptions()
    so.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimize
                                   else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


def main():
    goldenio.check_pins(PINNED)
    OUT.mkdir(parents=True, exist_ok=True)
    grid = np.arange(-128, 128, dtype=np.int16).astype(np.int8).reshape(1, 256)
    qdq, floats, seen = [], [], set()
    for k, (name, p, quants, spread) in enumerate(CASES):
        for s, zp in quants:
            s = np.float32(s)
            out_s, out_zp = calibrated_output(name, p, s, zp)
            m = qdq_model(name, p, s, zp, out_s, out_zp)
            spec, opt = run(m, grid, False), run(m, grid, True)
            ptag = "" if p is None else "_" + "_".join(tag(v) for v in np.atleast_1d(p))
            qdq.append({"name": f"{name.lower()}{ptag}_in_s{tag(s)}_zp{zp}_out_s{tag(out_s)}_zp{out_zp}",
                        "function": name, "parameters": [f32(v) for v in np.atleast_1d(p)] if p is not None else [],
                        "input_scale": f32(s), "input_zero_point": zp, "output_scale": f32(out_s),
                        "output_zero_point": out_zp, "ort": goldenio.tensor(spec.reshape(256)),
                        "ort_optimized": goldenio.tensor(opt.reshape(256))})
        key = (name, p)
        if key in seen:
            continue
        seen.add(key)
        fname = f"{name.lower()}{'' if p is None else '_' + '_'.join(tag(v) for v in np.atleast_1d(p))}"
        m = float_model(name, p)
        onnx.save(m, OUT / f"{fname}.onnx")
        x = (np.random.default_rng(100 + k).standard_normal((2, 64)) * spread).astype(np.float32)
        if name == "Sqrt" or (name == "Pow" and p == 0.5):
            x = np.abs(x)
        y = run(m, x, False)
        floats.append({"name": fname, "file": f"{fname}.onnx", "input": goldenio.tensor(x),
                       "ort": goldenio.tensor(y)})
    tools = {k: __import__("importlib.metadata").metadata.version(k) for k in PINNED}
    goldenio.write(OUT / "qdq.json", {"generator": "tests/gen/gen_unary_lut.py", "tools": tools, "cases": qdq})
    goldenio.write(OUT / "float.json", {"generator": "tests/gen/gen_unary_lut.py", "tools": tools, "models": floats})
    print(f"{len(qdq)} QDQ cases, {len(floats)} float models")


if __name__ == "__main__":
    main()
