"""scripts/bench-wasm.sh's ONNX Runtime (Python) side, onnxruntime 1.32.0, one intra-op thread:

1. calibration throughput of `onnxruntime.quantization` on the digits CNN and its 100 calibration
   images (web-demo/examples/), MinMax and Entropy, as samples per second of the calibrator's
   `collect_data` (the pass over the data), and the wall time of a whole `quantize_static` call
   (QDQ, per-channel weights, int8 activations and weights);
2. ONNX Runtime's own QDQ model of the digits CNN (quantize_static, MinMax), for the inference
   comparison in bench.mjs;
3. the QDQ ONNX files our exporter wrote (argument directory): checked with onnx.checker; a file
   whose node names repeat is rewritten with unique names (ONNX Runtime rejects repeated node
   names; the graph is unchanged), and the rewrite is reported.

Usage: python ort_python.py WORK_DIR OUT_JSON
"""
import json
import os
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime.quantization import CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType, quantize_static
from onnxruntime.quantization.calibrate import create_calibrator

assert ort.__version__ == "1.32.0", ort.__version__
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "../.."))


class Reader(CalibrationDataReader):
    def __init__(self, x):
        self.x = x
        self.i = 0

    def get_next(self):
        if self.i >= len(self.x):
            return None
        self.i += 1
        return {"x": self.x[self.i - 1 : self.i]}

    def rewind(self):
        self.i = 0


def session_options():
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    return so


def main(work, out_json):
    model = os.path.join(ROOT, "web-demo/examples/digits_cnn.onnx")
    x = np.load(os.path.join(ROOT, "web-demo/examples/digits_calib.npy"))
    result = {"onnxruntime": ort.__version__, "calibration": [], "qdq_fixes": {}}
    for name, method in [("minmax", CalibrationMethod.MinMax), ("entropy", CalibrationMethod.Entropy)]:
        with tempfile.TemporaryDirectory() as tmp:
            # The calibration pass alone: best of 5.
            best = None
            for _ in range(5):
                cal = create_calibrator(model, None, augmented_model_path=os.path.join(tmp, "aug.onnx"),
                                        calibrate_method=method, extra_options={})
                cal.infer_session = ort.InferenceSession(cal.model.SerializeToString(), session_options(),
                                                         providers=["CPUExecutionProvider"])
                t0 = time.perf_counter()
                cal.collect_data(Reader(x))
                cal.compute_data()
                dt = time.perf_counter() - t0
                best = dt if best is None else min(best, dt)
            # A whole quantize_static (calibration, quantization, writing the model).
            out = os.path.join(work, f"digits_ort_{name}.qdq.onnx")
            t0 = time.perf_counter()
            quantize_static(model, out, Reader(x), quant_format=QuantFormat.QDQ, per_channel=True,
                            activation_type=QuantType.QInt8, weight_type=QuantType.QInt8, calibrate_method=method)
            whole = time.perf_counter() - t0
        result["calibration"].append({"model": "digits", "observer": name, "samples": len(x),
                                      "collect_and_compute_s": best, "samples_per_s": len(x) / best,
                                      "quantize_static_s": whole})
        print(f"onnxruntime {name}: {len(x) / best:.0f} samples/s calibrating, quantize_static {whole * 1000:.0f} ms")
    for f in sorted(os.listdir(work)):
        if not f.endswith(".ours.qdq.onnx"):
            continue
        p = os.path.join(work, f)
        m = onnx.load(p)
        seen, renamed = {}, 0
        for n in m.graph.node:
            if n.name in seen:
                seen[n.name] += 1
                n.name = f"{n.name}__{seen[n.name]}"
                renamed += 1
            else:
                seen[n.name] = 0
        onnx.checker.check_model(m)
        if renamed:
            onnx.save(m, p)
            result["qdq_fixes"][f] = f"{renamed} repeated node names made unique"
    with open(out_json, "w") as fh:
        json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
