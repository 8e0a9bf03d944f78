"""The host side of wasm/bench/chromium_calib.mjs, for one zoo model: the samples and options that
tests/zoo/bench_zoo.py uses, and ONNX Runtime's quantize_static timed by bench_zoo's own ort_quantize
(QDQ, per_channel=True, QInt8/QInt8, MinMax).

  1. writes WORK/calib.npy: the first 32 rows of the model's calib.npy as float32 (bench_zoo's N_CALIB);
  2. times ort_quantize on them (a TFLite model through its tf2onnx conversion, made once into
     WORK/tf2onnx.onnx and not timed, as bench_zoo; a meta `ort_if_branch` inlined first, a meta
     `stream` calibrated as one sequence, as bench_zoo);
  3. prints one JSON line: the CLI options bench_zoo derives from the meta (its `cli_options`), the
     package's loadModel options for the same (`load_options`), `ort_time_s` or `ort_error`.

Usage: chromium_calib_ort.py ZOO_MODEL_DIR WORK_DIR [--no-ort]
Run with the repository's .venv (onnxruntime 1.32.0, tf2onnx 1.17.0), as bench_zoo.py.
"""
import json
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tests" / "zoo"))
import bench_zoo  # noqa: E402


def load_options(meta, fmt):
    """The same as the package's loadModel options (inputShapes, inputValues, outputNames)."""
    o = {"name": f"model.{fmt}"}
    if meta.get("input_shape"):
        o["inputShapes"] = {k: list(v) for k, v in meta["input_shape"].items()}
    if meta.get("input_values"):
        o["inputValues"] = {k: (v["value"][0] if v["shape"] == [] else list(v["value"]))
                            for k, v in meta["input_values"].items()}
    if meta.get("outputs"):
        o["outputNames"] = list(meta["outputs"])
    return o


def main():
    d, w = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    run_ort = "--no-ort" not in sys.argv[3:]
    w.mkdir(parents=True, exist_ok=True)
    meta = json.loads((d / "meta.json").read_text())
    fmt = "onnx" if (d / "model.onnx").exists() else "tflite"
    model = d / f"model.{fmt}"
    calib = np.load(d / "calib.npy")[:bench_zoo.N_CALIB].astype(np.float32)
    np.save(w / "calib.npy", calib)
    out = {"format": fmt, "samples": int(len(calib)), "cli_options": bench_zoo.cli_options(meta),
           "load_options": load_options(meta, fmt)}
    if run_ort:
        try:
            float_onnx, how = bench_zoo.ort_float_model(model, fmt, meta, w)
            if how:
                out["ort_on"] = how
            out["ort_time_s"] = bench_zoo.ort_quantize(float_onnx, calib, bench_zoo.extra_inputs(meta),
                                                       w / "ort_qdq.onnx", meta.get("stream"))
        except Exception as e:  # recorded, the other columns still run
            out["ort_error"] = bench_zoo.short(e)
    print("CHROMIUM_CALIB " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
