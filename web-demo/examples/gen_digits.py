"""The demo's bundled example: a small CNN trained on scikit-learn's digits (8x8 grayscale
images of handwritten digits, a data set that ships inside scikit-learn), exported to ONNX by
PyTorch, with real calibration images and their labels.

    .venv/bin/python web-demo/examples/gen_digits.py      # scikit-learn 1.9.1, numpy 2.4.6, onnxruntime 1.32.0
        (runs gen_digits_torch.py under TORCH_PYTHON, default .venv-torch/bin/python: torch 2.15.0, onnx 1.23.2)

Writes, next to this script:
  digits_cnn.onnx        the float model (opset 13, NCHW input "x" [1, 1, 8, 8], output "probs" [1, 10])
  digits_calib.npy       float32 [100, 1, 8, 8]: 100 held-out images (pixel / 16), calibration data
  digits_labels.npy      int64 [100]: their labels
  digits.json            provenance: versions, seeds, float accuracy (ONNX Runtime) on the 100 images
                         and on all 497 held-out ones
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort
import sklearn
from sklearn.datasets import load_digits

HERE = os.path.dirname(os.path.abspath(__file__))
assert sklearn.__version__ == "1.9.1", sklearn.__version__
assert np.__version__ == "2.4.6", np.__version__
assert ort.__version__ == "1.32.0", ort.__version__


def main():
    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    y = y.astype(np.int64)
    rng = np.random.default_rng(2026)
    order = rng.permutation(len(x))
    train, held = order[:1300], order[1300:]
    with tempfile.TemporaryDirectory() as tmp:
        np.savez(os.path.join(tmp, "data.npz"), x=x[train], y=y[train])
        torch_python = os.environ.get("TORCH_PYTHON", os.path.join(HERE, "..", "..", ".venv-torch", "bin", "python"))
        subprocess.run([torch_python, os.path.join(HERE, "gen_digits_torch.py"), tmp], check=True)
        with open(os.path.join(tmp, "digits_cnn.onnx"), "rb") as f:
            model = f.read()
        torch_info = json.load(open(os.path.join(tmp, "torch.json")))
    with open(os.path.join(HERE, "digits_cnn.onnx"), "wb") as f:
        f.write(model)
    calib = held[:100]
    np.save(os.path.join(HERE, "digits_calib.npy"), x[calib])
    np.save(os.path.join(HERE, "digits_labels.npy"), y[calib])

    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    def accuracy(idx):
        hits = 0
        for i in idx:
            p = sess.run(None, {"x": x[i : i + 1]})[0]
            hits += int(np.argmax(p) == y[i])
        return hits / len(idx)
    info = {
        "generator": "web-demo/examples/gen_digits.py",
        "data": "sklearn.datasets.load_digits (1797 images 8x8, pixel / 16); permutation seed 2026: "
        "1300 train, 497 held out; the first 100 held-out images are digits_calib.npy",
        "versions": {"scikit-learn": sklearn.__version__, "numpy": np.__version__, "onnxruntime": ort.__version__,
                     **torch_info["versions"]},
        "training": torch_info["training"],
        "float_accuracy_onnxruntime": {"calib_100": accuracy(calib), "held_out_497": accuracy(held)},
    }
    with open(os.path.join(HERE, "digits.json"), "w") as f:
        json.dump(info, f, indent=1)
        f.write("\n")
    print(json.dumps(info["float_accuracy_onnxruntime"]))


if __name__ == "__main__":
    main()
