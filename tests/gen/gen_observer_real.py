#!/usr/bin/env python3
"""Observers pinned to their peers on real tensors (issue 23): activations of real models on real
inputs, and the ranges ONNX Runtime's calibrators and PyTorch's observers compute from them
(tests/host/observers_real.rs).

    .venv/bin/python tests/gen/gen_observer_real.py
        (runs itself again under $TORCH_PYTHON, default .venv-torch/bin/python, for PyTorch)

Pinned (checked at run time; see tests/gen/requirements.txt): numpy 2.4.6, onnx 1.23.2,
onnxruntime 1.32.0, ai-edge-litert 2.3.0, tensorflow-cpu 2.21.0 (JPEG decoding only),
scikit-learn 1.9.1 (its bundled photos); torch 2.15.0 with numpy 2.4.6 in the torch virtualenv.
Deterministic.

Writes tests/golden/observers_real/:

  <name>.npy          float32 [batches, batch_len]: one real tensor, one row per calibration
                      sample (a fixed, seeded subset of the sample's elements, the same positions
                      in every sample, so that each file stays small)
  observers_real.json per tensor: where it comes from, and the ranges the peers compute on it with
                      their own code, fed one row at a time as calibration feeds them:
    - ort: onnxruntime.quantization.calibrate.create_calibrator (MinMax, Entropy, Percentile) on a
      model whose input is the tensor, collect_data over a CalibrationDataReader giving one row
      per get_next(), then compute_data(): range_value. ORT's HistogramCalibrater runs every batch,
      then histograms them all in one HistogramCollector.collect call (np.histogram of the
      whole), which is what our two-pass mode reproduces. (quantize_static's
      CalibMaxIntermediateOutputs, which collects in chunks and widens the histogram between
      them, is not reproduced.)
    - torch: torch.ao.quantization.observer MinMaxObserver, and HistogramObserver (2048 bins)
      fed the whole tensor in one call (histogram_one_batch: what our two-pass mode reproduces)
      and one row per call (histogram_batches: PyTorch re-bins by interpolation between calls,
      so this depends on the split); each [min_val or lo, max_val or hi, scale, zero_point]
      (_non_linear_param_search for the histogram's range, calculate_qparams for the parameters).
    - ort_on_streaming_grid, torch.search_on_streaming_grid: the same peers' threshold searches
      (ORT's HistogramCollector.get_entropy_threshold and compute_percentile, PyTorch's
      HistogramObserver._non_linear_param_search) run on the histogram microquant's streaming
      (one-pass) observers end with: power-of-two bins, whose layout is a documented function
      of the data's min and max (streaming_grid below, from core/src/observer/histogram.rs), so
      the streaming observers are pinned bit for bit too, and the grid's edges are recorded.
      (Only the clamp of PyTorch's result to the data's range is left to the test.)

The tensors (real inputs only; nothing here is computed with microquant's code):
  - digits: the bundled example web-demo/examples/digits_cnn.onnx (a CNN trained on
    scikit-learn's digits) run by ONNX Runtime on its 100 calibration images
    (web-demo/examples/digits_calib.npy, held-out scikit-learn digits): the input (17 discrete
    values, half zeros), conv1 before its ReLU, the ReLU6 (Clip) output with point masses at 0 and
    6, the logits and the softmax probabilities (1e-27 to 1).
  - ic / vww: the float MLPerf Tiny models (models/mlperf-tiny/*_float32.tflite), run by the
    TFLite interpreter with its reference kernels on patches of the two photos scikit-learn
    ships (sklearn/datasets/images/china.jpg, flower.jpg, CC BY 2.0), block-averaged 3x3 and
    rounded to 8-bit pixels: IC (ResNet-8, CIFAR-10-sized 32x32 patches, pixels 0..255) 32
    patches: the input, a batch-normalized conv before the residual add, the shortcut conv (mostly
    negative), the last residual add after its ReLU (76% zeros, long tail); VWW (MobileNetV1,
    96x96, pixels / 255) 16 patches: the input and the next-to-last depthwise conv after its ReLU
    (92% zeros, max 13x the 99th percentile).
  The KWS and AD models have no real input here (no speech or machine-sound data ships with the
  tools), so they are not used.
"""
import contextlib
import io
import json
import math
import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
import goldenio  # noqa: E402

OUT = REPO / "tests" / "golden" / "observers_real"
MLPERF = REPO / "models" / "mlperf-tiny"
DIGITS = REPO / "web-demo" / "examples"

PINNED = {"numpy": "2.4.6", "onnx": "1.23.2", "onnxruntime": "1.32.0", "ai-edge-litert": "2.3.0",
          "tensorflow-cpu": "2.21.0", "scikit-learn": "1.9.1"}
TORCH_PINNED = {"torch": "2.15.0", "numpy": "2.4.6"}

# (name, CalibrationMethod, extra_options): ORT's defaults, the configurations microquant's
# quantizer uses (entropy 2048/128, percentile 99.999 symmetric) and a few more.
ORT_CONFIGS = [
    ("minmax", "MinMax", {}),
    ("entropy_default", "Entropy", {}),  # 128 bins, 128 quantized bins
    ("entropy_2048_128", "Entropy", {"num_bins": 2048, "num_quantized_bins": 128}),
    ("entropy_512_64", "Entropy", {"num_bins": 512, "num_quantized_bins": 64}),
    ("percentile_99_999", "Percentile", {}),  # symmetric, 2048 bins, 99.999
    ("percentile_99_99", "Percentile", {"percentile": 99.99}),
    ("percentile_99_99_asymmetric", "Percentile", {"percentile": 99.99, "symmetric": False}),
    ("percentile_512_99_9", "Percentile", {"num_bins": 512, "percentile": 99.9}),
]

# PyTorch configurations: name -> (dtype, qscheme).
TORCH_CONFIGS = {"quint8_affine": ("quint8", "per_tensor_affine"), "qint8_affine": ("qint8", "per_tensor_affine"),
                 "qint8_symmetric": ("qint8", "per_tensor_symmetric")}


# ---------------------------------------------------------------------------------------------
# Real inputs and tensors
# ---------------------------------------------------------------------------------------------

def photos():
    """scikit-learn's two sample photos as uint8 [427, 640, 3] (decoded by TensorFlow: no PIL here)."""
    import sklearn
    import tensorflow as tf
    d = pathlib.Path(sklearn.__file__).parent / "datasets" / "images"
    return [tf.io.decode_jpeg(tf.io.read_file(str(d / f))).numpy() for f in ("china.jpg", "flower.jpg")]


def patches(imgs, size, rows, cols, factor=3):
    """size x size patches: crops of (size * factor)^2 on a rows x cols grid of each photo,
    block-averaged factor x factor and rounded to 8-bit values (as float32)."""
    c = size * factor
    out = []
    for img in imgs:
        h, w, _ = img.shape
        for r in np.linspace(0, h - c, rows).round().astype(int):
            for q in np.linspace(0, w - c, cols).round().astype(int):
                p = img[r:r + c, q:q + c].astype(np.float64).reshape(size, factor, size, factor, 3).mean(axis=(1, 3))
                out.append(np.round(p).astype(np.float32))
    return np.stack(out)


def tflite_tensors(model, x, ops):
    """Outputs of the ops `ops` (indices) of a float TFLite model, per sample: {op: [S, ...]}."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    it = Interpreter(model_path=str(MLPERF / model), experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
                     experimental_preserve_all_tensors=True)
    it.allocate_tensors()
    det = {o["index"]: o for o in it._get_ops_details()}
    names = {op: it._get_tensor_details(det[op]["outputs"][0], 0)["name"] for op in ops}
    res = {op: [] for op in ops}
    for s in x:
        it.set_tensor(it.get_input_details()[0]["index"], s[None])
        it.invoke()
        for op in ops:
            res[op].append(it.get_tensor(det[op]["outputs"][0]).copy())
    return {op: np.stack(v) for op, v in res.items()}, {op: (det[op]["op_name"], names[op]) for op in ops}


def digits_tensors(names):
    """The digits CNN's tensors `names` (graph names) per calibration image, from ONNX Runtime."""
    import onnx
    import onnxruntime as ort
    m = onnx.load(str(DIGITS / "digits_cnn.onnx"))
    del m.graph.output[:]
    for n in names:
        m.graph.output.append(onnx.helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, None))
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    x = np.load(DIGITS / "digits_calib.npy")
    outs = [s.run(None, {"x": x[i:i + 1]}) for i in range(len(x))]
    return {n: np.stack([o[j] for o in outs]) for j, n in enumerate(names)}


def rows(a, per_row, seed):
    """[S, ...] -> float32 [S, per_row]: the same seeded subset of positions (in order) of each
    sample, or all of them."""
    a = a.reshape(a.shape[0], -1).astype(np.float32)
    n = a.shape[1]
    if per_row >= n:
        return np.ascontiguousarray(a)
    pos = np.sort(np.random.default_rng(seed).choice(n, per_row, replace=False))
    return np.ascontiguousarray(a[:, pos])


def real_tensors():
    """[(name, rows [S, m], provenance dict)]."""
    out = []
    dig = {"/conv1/Conv_output_0": ("digits_conv1", "pre-activation: conv1 before its ReLU", 128),
           "/Clip_output_0": ("digits_relu6", "ReLU6 (Clip 0..6) after the depthwise conv: point masses at 0 and 6", 128),
           "/fc2/Gemm_output_0": ("digits_logits", "logits (fc2, before the softmax)", 10),
           "probs": ("digits_probs", "softmax probabilities (1e-27 to 1)", 10)}
    t = digits_tensors(list(dig))
    src = {"model": goldenio.rel(DIGITS / "digits_cnn.onnx"), "runtime": "onnxruntime (CPU, optimizations off)",
           "inputs": goldenio.rel(DIGITS / "digits_calib.npy") + ": 100 held-out scikit-learn digits, pixel / 16"}
    x = np.load(DIGITS / "digits_calib.npy")
    out.append(("digits_input", rows(x, 64, 0), {**src, "tensor": "x", "kind": "model input (17 discrete values, half zeros)"}))
    for seed, (n, (name, kind, m)) in enumerate(dig.items(), start=1):
        out.append((name, rows(t[n], m, seed), {**src, "tensor": n, "kind": kind}))

    imgs = photos()
    photo_src = "patches of scikit-learn's china.jpg and flower.jpg (CC BY 2.0), block-averaged 3x3, rounded to 8 bits"
    ic = patches(imgs, 32, 4, 4)
    ic_ops = {2: ("ic_conv_bn", "pre-activation: batch-normalized conv before the first residual add", 512),
              10: ("ic_shortcut", "pre-activation: the third shortcut conv (83% negative)", 512),
              11: ("ic_add_relu", "the last residual add after its ReLU (76% zeros, long tail)", 512)}
    t, det = tflite_tensors("ic_resnet8_float32.tflite", ic, list(ic_ops))
    src = {"model": goldenio.rel(MLPERF / "ic_resnet8_float32.tflite"), "runtime": "ai-edge-litert, BUILTIN_REF",
           "inputs": f"32 32x32 {photo_src}, pixels 0..255"}
    out.append(("ic_input", rows(ic, 512, 10), {**src, "tensor": "input", "kind": "model input (photo pixels 0..255)"}))
    for op, (name, kind, m) in ic_ops.items():
        out.append((name, rows(t[op], m, 10 + op),
                    {**src, "tensor": f"op {op} {det[op][0]}: {det[op][1]}", "kind": kind}))

    vww = (patches(imgs, 96, 2, 4) / np.float32(255)).astype(np.float32)
    t, det = tflite_tensors("vww_96_float32.tflite", vww, [25])
    src = {"model": goldenio.rel(MLPERF / "vww_96_float32.tflite"), "runtime": "ai-edge-litert, BUILTIN_REF",
           "inputs": f"16 96x96 {photo_src}, pixels / 255"}
    out.append(("vww_input", rows(vww, 1024, 30), {**src, "tensor": "input", "kind": "model input (photo pixels / 255)"}))
    out.append(("vww_dw_relu", rows(t[25], 1024, 55),
                {**src, "tensor": f"op 25 {det[25][0]}: {det[25][1]}",
                 "kind": "depthwise conv after its ReLU (92% zeros, max 13x the 99th percentile)"}))
    return out


# ---------------------------------------------------------------------------------------------
# ONNX Runtime's calibrators
# ---------------------------------------------------------------------------------------------

def ort_ranges(batches, tmp):
    """{config: [lo, hi]} from ORT's calibrators fed one row of `batches` per get_next()."""
    import onnx
    from onnx import TensorProto, helper
    from onnxruntime.quantization.calibrate import CalibrationDataReader, CalibrationMethod, create_calibrator

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{"x": b} for b in batches])

        def get_next(self):
            return next(self.it, None)

    m = batches.shape[1]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [m])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [m])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["t"]), helper.make_node("Sub", ["x", "t"], ["y"])],
                          "calib", [x], [y])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp / "calib.onnx"
    onnx.save(model, str(path))
    res = {}
    for name, method, opts in ORT_CONFIGS:
        with contextlib.redirect_stdout(io.StringIO()):
            cal = create_calibrator(str(path), augmented_model_path=str(tmp / "aug.onnx"),
                                    calibrate_method=getattr(CalibrationMethod, method), extra_options=opts)
            cal.collect_data(Reader())
            r = cal.compute_data()
        lo, hi = (np.asarray(v, dtype=np.float32).reshape(()) for v in r["x"].range_value[:2])
        res[name] = [float(lo), float(hi)]
    return res


# ---------------------------------------------------------------------------------------------
# The peers' searches on microquant's streaming grid
# ---------------------------------------------------------------------------------------------

def streaming_grid(v, n, anchor):
    """The histogram a streaming observer ends with, from its documented definition
    (core/src/observer/histogram.rs): bin j covers [(base + j) 2^k, (base + j + 1) 2^k), k the
    smallest exponent (from -126) whose grid holds [min, max] in n bins, base floor(min / 2^k)
    ("free"), -n/2 ("centered") or 0 ("zero"). Returns (int64 counts, float32 edges)."""
    v = np.asarray(v, dtype=np.float64).reshape(-1)
    lo, hi = float(v.min()), float(v.max())
    for k in range(-126, 141):
        w = 2.0 ** k
        if max(-lo, hi) / w >= 2.0 ** 60:
            continue
        base = {"free": math.floor(lo / w), "centered": -(n // 2), "zero": 0}[anchor]
        if math.floor(lo / w) >= base and math.floor(hi / w) < base + n:
            break
    idx = np.floor(v / w).astype(np.int64) - base
    counts = np.bincount(idx, minlength=n).astype(np.int64)
    assert counts.size == n
    edges = ((base + np.arange(n + 1, dtype=np.float64)) * w).astype(np.float32)
    assert np.all(edges.astype(np.float64) == (base + np.arange(n + 1)) * w)
    return counts, edges


def ort_on_streaming_grid(a):
    """{config: {"range": [lo, hi], "grid": [first edge, last edge]}}: ORT's own threshold
    searches (HistogramCollector.get_entropy_threshold, compute_percentile) on the histogram a
    streaming observer of the same configuration ends with."""
    from onnxruntime.quantization.calibrate import HistogramCollector
    x = a.reshape(-1)
    mn, mx = x.min(), x.max()
    res = {}
    for name, method, opts in ORT_CONFIGS:
        if method == "Entropy":
            n, nq = opts.get("num_bins", 128), opts.get("num_quantized_bins", 128)
            counts, edges = streaming_grid(x, n, "centered")
            c = HistogramCollector("entropy", False, n, nq, None, None)
            with contextlib.redirect_stdout(io.StringIO()):
                lo, hi = c.get_entropy_threshold((counts, edges, mn, mx, edges[-1]), nq)
        elif method == "Percentile":
            n, sym = opts.get("num_bins", 2048), opts.get("symmetric", True)
            counts, edges = streaming_grid(np.abs(x) if sym else x, n, "zero" if sym else "centered")
            c = HistogramCollector("percentile", sym, n, None, opts.get("percentile", 99.999), None)
            c.histogram_dict = {"x": (counts, edges, mn, mx)}
            with contextlib.redirect_stdout(io.StringIO()):
                lo, hi = c.compute_percentile()["x"][:2]
        else:
            continue
        res[name] = {"range": [float(np.float32(lo)), float(np.float32(hi))],
                     "grid": [float(edges[0]), float(edges[-1])]}
    return res


# ---------------------------------------------------------------------------------------------
# PyTorch's observers (run under the torch virtualenv: `--torch DIR NAME...`)
# ---------------------------------------------------------------------------------------------

def torch_main(folder, names):
    import torch
    from torch.ao.quantization import observer as O
    goldenio.check_pins(TORCH_PINNED)
    torch.set_num_threads(1)

    def f(v):
        return float(np.float32(v))

    def make(cls, cfg):
        dt, qs = TORCH_CONFIGS[cfg]
        return cls(dtype=getattr(torch, dt), qscheme=getattr(torch, qs))

    def qp(o):
        s, z = o.calculate_qparams()
        return [f(s.reshape(-1)[0]), int(z.reshape(-1)[0])]

    out = {}
    for name in names:
        a = np.load(pathlib.Path(folder) / f"{name}.npy")
        batches = [torch.from_numpy(np.ascontiguousarray(r)) for r in a]
        whole = torch.from_numpy(np.ascontiguousarray(a.reshape(-1)))
        row = {"minmax": {}, "histogram_one_batch": {}, "histogram_batches": {}}
        for cfg in TORCH_CONFIGS:
            o = make(O.MinMaxObserver, cfg)
            for b in batches:
                o(b)
            row["minmax"][cfg] = [f(o.min_val), f(o.max_val)] + qp(o)
            h = make(O.HistogramObserver, cfg)
            h(whole)
            lo, hi = h._non_linear_param_search()
            row["histogram_one_batch"][cfg] = [f(lo), f(hi)] + qp(h)
            h = make(O.HistogramObserver, cfg)
            for b in batches:
                h(b)
            lo, hi = h._non_linear_param_search()
            row["histogram_batches"][cfg] = [f(lo), f(hi)] + qp(h)
        # HistogramObserver's search on the streaming grid (the same for every 8-bit config).
        counts, edges = streaming_grid(a, 2048, "free")
        h = make(O.HistogramObserver, "quint8_affine")
        h.histogram = torch.from_numpy(counts.astype(np.float32))
        h.min_val = torch.tensor(edges[0])
        h.max_val = torch.tensor(edges[-1])
        lo, hi = h._non_linear_param_search()
        row["search_on_streaming_grid"] = {"range": [f(lo), f(hi)], "grid": [float(edges[0]), float(edges[-1])]}
        out[name] = row
    json.dump({"versions": {"torch": torch.__version__, "numpy": np.__version__}, "results": out}, sys.stdout)


def torch_results(names):
    torch_py = os.environ.get("TORCH_PYTHON", str(REPO / ".venv-torch" / "bin" / "python"))
    r = subprocess.run([torch_py, str(pathlib.Path(__file__).resolve()), "--torch", str(OUT), *names],
                       check=True, stdout=subprocess.PIPE, text=True)
    return json.loads(r.stdout)


def main():
    goldenio.check_pins(PINNED)
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.npy"):
        old.unlink()
    tensors = real_tensors()
    tmp = pathlib.Path(tempfile.mkdtemp())
    entries = []
    for name, a, prov in tensors:
        assert a.dtype == np.float32 and a.ndim == 2 and np.isfinite(a).all()
        np.save(OUT / f"{name}.npy", a)
        e = {"name": name, "file": f"{name}.npy", "batches": int(a.shape[0]), "batch_len": int(a.shape[1]), **prov,
             "ort": ort_ranges(a, tmp), "ort_on_streaming_grid": ort_on_streaming_grid(a)}
        entries.append(e)
        print(f"  {name:14s} {a.shape} [{a.min():.6g}, {a.max():.6g}]  ORT entropy_2048_128 {e['ort']['entropy_2048_128']}"
              f"  percentile_99_999 {e['ort']['percentile_99_999']}")
    t = torch_results([e["name"] for e in entries])
    for e in entries:
        e["torch"] = t["results"][e["name"]]
    versions = {p: v for p, v in PINNED.items()}
    versions.update({"torch": t["versions"]["torch"]})
    goldenio.write(OUT / "observers_real.json", {
        "generator": "tests/gen/gen_observer_real.py", "versions": versions,
        "ort_configs": [{"name": n, "method": m, "options": o} for n, m, o in ORT_CONFIGS],
        "torch_configs": {k: {"dtype": v[0], "qscheme": v[1]} for k, v in TORCH_CONFIGS.items()},
        "tensors": entries})
    size = sum(p.stat().st_size for p in OUT.iterdir())
    print(f"wrote {goldenio.rel(OUT)}: {len(entries)} tensors, {size} bytes")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--torch":
        torch_main(sys.argv[2], sys.argv[3:])
    else:
        main()
