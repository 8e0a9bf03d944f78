"""Spiky calibration: the bundled digits CNN calibrated on its 100 images of which a few carry
sensor spikes, and what the peers' calibrators make of it (tests/host/spiky.rs holds
microquant's default to these figures).

    .venv/bin/python tests/gen/gen_spiky_calib.py      # numpy 2.4.6, scikit-learn 1.9.1, onnxruntime 1.32.0

Data (seeded, reproducible):
  - the model and calibration images are the web demo's (web-demo/examples/digits_cnn.onnx,
    digits_calib.npy: the first 100 of scikit-learn's digits held out from training, permutation
    seed 2026, pixel / 16 in [0, 1]);
  - calib_spiky.npy: the same 100 images, of which 4 (chosen with seed 23) have 3 pixels each
    (random positions) set to a sensor spike of 12.0, twelve times the largest clean pixel;
  - eval.npy: 200 further held-out images (held[100:300]), clean, never seen in calibration.

Peers: ONNX Runtime 1.32.0 quantize_static (QDQ, per-channel, int8 activations and weights,
as tests/zoo/bench_zoo.py) with CalibrationMethod MinMax, Entropy, Percentile (99.9, 99.99,
99.999) and Distribution, each calibrated on calib_spiky.npy, and MinMax on the clean images for
reference. Each quantized model runs in ONNX Runtime on eval.npy; the figure is the SQNR of its
output (the softmax probabilities) against the float model's in ONNX Runtime, pooled over all
evaluation samples: 10 log10(sum f^2 / sum (f - q)^2). Written to tests/golden/spiky/peers.json.
"""
import json
import os
import sys
import tempfile

import numpy as np
import onnxruntime as ort
import sklearn
from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType,
                                      quantize_static)
from sklearn.datasets import load_digits

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OUT = os.path.join(ROOT, "tests", "golden", "spiky")
EXAMPLES = os.path.join(ROOT, "web-demo", "examples")
assert np.__version__ == "2.4.6", np.__version__
assert sklearn.__version__ == "1.9.1", sklearn.__version__
assert ort.__version__ == "1.32.0", ort.__version__

SPIKED_SAMPLES = 4
SPIKES_PER_SAMPLE = 3
SPIKE = 12.0
SEED = 23


def data():
    x, _ = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    order = np.random.default_rng(2026).permutation(len(x))
    held = order[1300:]
    calib = x[held[:100]]
    bundled = np.load(os.path.join(EXAMPLES, "digits_calib.npy"))
    assert np.array_equal(calib, bundled), "the bundled calibration images are not held[:100]"
    rng = np.random.default_rng(SEED)
    spiky = calib.copy()
    which = sorted(int(i) for i in rng.choice(len(calib), SPIKED_SAMPLES, replace=False))
    for i in which:
        pix = rng.choice(64, SPIKES_PER_SAMPLE, replace=False)
        spiky[i, 0].reshape(-1)[pix] = SPIKE
    return calib, spiky, x[held[100:300]], which


class Reader(CalibrationDataReader):
    def __init__(self, x):
        self.it = iter([{"x": s[None]} for s in x])

    def get_next(self):
        return next(self.it, None)


def run(path, x):
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return np.concatenate([sess.run(None, {"x": s[None]})[0] for s in x])


def sqnr(ref, q):
    ref, q = ref.astype(np.float64), q.astype(np.float64)
    return float(10 * np.log10(np.sum(ref**2) / np.sum((ref - q) ** 2)))


def main():
    calib, spiky, ev, which = data()
    os.makedirs(OUT, exist_ok=True)
    np.save(os.path.join(OUT, "calib_spiky.npy"), spiky)
    np.save(os.path.join(OUT, "eval.npy"), ev)
    model = os.path.join(EXAMPLES, "digits_cnn.onnx")
    ref = run(model, ev)
    settings = [
        ("minmax", CalibrationMethod.MinMax, {}),
        ("entropy", CalibrationMethod.Entropy, {}),
        ("percentile 99.9", CalibrationMethod.Percentile, {"CalibPercentile": 99.9}),
        ("percentile 99.99", CalibrationMethod.Percentile, {"CalibPercentile": 99.99}),
        ("percentile 99.999", CalibrationMethod.Percentile, {"CalibPercentile": 99.999}),
        ("distribution", CalibrationMethod.Distribution, {}),
    ]
    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        def quantized(name, method, extra, x):
            out = os.path.join(tmp, name.replace(" ", "_") + ".onnx")
            quantize_static(model, out, Reader(x), quant_format=QuantFormat.QDQ, per_channel=True,
                            activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                            calibrate_method=method, extra_options=extra)
            return sqnr(ref, run(out, ev))
        for name, method, extra in settings:
            figures[name] = quantized(name, method, extra, spiky)
            print(f"{name:20} {figures[name]:.2f} dB", file=sys.stderr)
        clean_minmax = quantized("clean minmax", CalibrationMethod.MinMax, {}, calib)
    info = {
        "generator": "tests/gen/gen_spiky_calib.py",
        "versions": {"numpy": np.__version__, "scikit-learn": sklearn.__version__, "onnxruntime": ort.__version__},
        "data": {
            "model": "web-demo/examples/digits_cnn.onnx",
            "calib_spiky.npy": f"web-demo/examples/digits_calib.npy (100 images) with {SPIKES_PER_SAMPLE} pixels "
            f"set to {SPIKE} in each of samples {which} (seed {SEED})",
            "eval.npy": "scikit-learn digits held[100:300] (permutation seed 2026, pixel / 16), clean",
        },
        "peers": "onnxruntime.quantization.quantize_static: QDQ, per_channel, QInt8 activations and weights",
        "metric": "SQNR (dB) of the int8 model's output against the float model's in ONNX Runtime, pooled over eval.npy",
        "spiky_sqnr_db": figures,
        "clean_minmax_sqnr_db": clean_minmax,
    }
    with open(os.path.join(OUT, "peers.json"), "w") as f:
        json.dump(info, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
