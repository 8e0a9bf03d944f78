#!/usr/bin/env python3
"""Golden data for the foundation smoke test: ONNX QuantizeLinear -> DequantizeLinear.

Expected values come from onnx's reference evaluator (onnx.reference.ReferenceEvaluator), i.e.
straight from the operator's definition, cross-checked against ONNX Runtime.

    .venv/bin/python tests/gen/gen_smoke.py   # writes tests/golden/smoke/quantize_linear.json
"""
import json
import pathlib

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

OUT = pathlib.Path(__file__).resolve().parent.parent / "golden" / "smoke" / "quantize_linear.json"


def model(zp_type):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None])
    q = helper.make_tensor_value_info("q", zp_type, [None])
    dq = helper.make_tensor_value_info("dq", TensorProto.FLOAT, [None])
    s = helper.make_tensor_value_info("s", TensorProto.FLOAT, [])
    zp = helper.make_tensor_value_info("zp", zp_type, [])
    g = helper.make_graph(
        [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"]),
         helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["dq"])],
        "smoke", [x, s, zp], [q, dq])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    m.ir_version = 10
    onnx.checker.check_model(m)
    return m


def main():
    rng = np.random.default_rng(20261202)
    cases = []
    m = model(TensorProto.INT8)
    ref = ReferenceEvaluator(m)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    for name, scale, zp in [("unit_zp0", 1.0, 0), ("scale_0p05_zp_m3", 0.05, -3),
                            ("scale_0p0078_zp_127", 0.0078125, 127), ("scale_3_zp_m128", 3.0, -128)]:
        s = np.float32(scale)
        # Exact ties (k + 0.5) * scale exercise round-half-to-even; big values exercise saturation.
        ties = (np.arange(-6, 6, dtype=np.float32) + np.float32(0.5)) * s
        rand = rng.normal(0.0, 80.0 * scale, 20).astype(np.float32)
        x = np.concatenate([ties, rand, np.array([0.0, 1e6, -1e6], np.float32)]).astype(np.float32)
        feeds = {"x": x, "s": np.array(s, np.float32), "zp": np.array(zp, np.int8)}
        q, dq = ref.run(None, feeds)
        q2, dq2 = sess.run(None, feeds)
        assert np.array_equal(q, q2) and np.array_equal(dq, dq2), name
        cases.append({"name": name, "scale": float(s), "zero_point": int(zp),
                      "x": [float(v) for v in x], "q": [int(v) for v in q], "dq": [float(v) for v in dq]})
    doc = {"generator": "tests/gen/gen_smoke.py", "oracle": "onnx.reference.ReferenceEvaluator (== onnxruntime)",
           "versions": {"onnx": onnx.__version__, "onnxruntime": ort.__version__, "numpy": np.__version__},
           "op": "QuantizeLinear(opset 21) -> DequantizeLinear, int8", "cases": cases}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {OUT} ({len(cases)} cases)")


if __name__ == "__main__":
    main()
