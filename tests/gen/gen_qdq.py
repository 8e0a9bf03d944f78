#!/usr/bin/env python3
"""QDQ ONNX out and in, against ONNX Runtime (tests/host/qdq.rs).

    .venv/bin/python tests/gen/gen_qdq.py

Run after tests/gen/peers/train_and_compare.py (it reuses its float digits models and samples).
Writes tests/golden/qdq/:

  export/<name>.onnx   QDQ models written by OUR exporter: `microquant quantize MODEL --calib CALIB
                       --observer OBS -o x.mq --qdq export/<name>.onnx` (the CLI of this checkout,
                       built here with `cargo build --release -p microquant-cli`); each is checked
                       with onnx.checker (full_check) before it is kept
  import/<name>.onnx   QDQ models written by ONNX Runtime 1.32.0's quantize_static (QuantFormat.QDQ,
                       per_channel=True, weight_type QInt8, MinMax calibration on the same samples;
                       activation_type QInt8, and QUInt8 for the `_u8` model), no pre-processing;
                       and, when PyTorch is available ($TORCH_PYTHON, default
                       .venv-torch/bin/python), a QAT-style export (gen_qdq_torch.py)
  conv_bn_calib.npy, concat_pad_calib.npy, unary_calib.npy, prelu_calib.npy,
  decoder_calib.npy, resize_calib.npy, layer_norm_calib.npy
                       float32 calibration samples of two importer test models (numpy
                       default_rng(7 / 8).standard_normal, NCHW) and of the table-op models of
                       tests/golden/unary (2 · default_rng(9).standard_normal) and of a PRelu
                       model (default_rng(10)) a transposed-convolution decoder (default_rng(11)) and a conv + bilinear resize model
                       (default_rng(12)) and a layer norm (1.5 · default_rng(13).standard_normal + 0.3)
  mobile_float.onnx, mobile_calib.npy
                       a small mobile-CNN-like float model (hard-swish, depthwise conv,
                       squeeze-and-excitation multiply, residual add, average pooling,
                       concatenation, global average pooling) and its calibration samples, from
                       gen_qdq_mobile_torch.py (PyTorch; kept as they are when it is absent)
  export/<name>_w4*.onnx, qdq_int4.json
                       W4A8 exports (`--weight-bits 4`: int4 weights as ONNX INT4 initializers,
                       opset 21; INT4_EXPORTS), with the same ONNX Runtime outputs as the others
                       (tests/host/qdq_int4.rs); `gen_qdq.py --int4-only` regenerates only these
  qdq.json             per model: the float source, the calibration file, the observer (export),
                       and ONNX Runtime's outputs on the first 100 calibration samples, run with
                       the CPU provider twice: default session options (ORT fuses the QDQ patterns
                       into its int8 kernels: QLinearConv, QGemm...) and ORT_DISABLE_ALL (the float
                       ops between QuantizeLinear and DequantizeLinear, as the ONNX spec defines
                       them; stored only when it differs); for exports also every QuantizeLinear
                       output (int8) on the first 4 samples, for the layer-by-layer comparison

Our exports are `microquant quantize --qdq`'s: the int8 layers written to compute the .mq's integers
(core/src/onnx/export/exact.rs), so ONNX Runtime must agree with our .mq exactly, both ways.
The Rust test re-exports with the current code and checks the bytes equal export/<name>.onnx, then
runs our int8 runtime on the same samples and compares with ONNX Runtime's outputs in units of the
output's quantization step; it imports import/<name>.onnx into a .mq with the scales it carries and
does the same.

ONNX Runtime's default run of the import models (its fused int8 kernels, QLinearConv / QGemm) depends
on the CPU: on an AVX2 machine without VNNI it differs from the float-op run by several steps (its
u8s8 products saturate), where the machine that first wrote them had the two agree. Regenerating on
such a machine: keep the committed import entries (`git show HEAD:tests/golden/qdq/qdq.json`) and
take only the export entries, whose ONNX ops are float and double arithmetic, the same on every CPU.

$MQ_CLI names another microquant binary to run instead of building the release one (e.g. a debug
build: the same bytes; the Rust tests check them).

Pinned: numpy 2.4.6, onnx 1.23.2, onnxruntime 1.32.0 (checked); torch 2.15.0 (checked by
gen_qdq_torch.py). Deterministic.
"""
import json
import os
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
from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static  # noqa: E402

PINNED = {"numpy": "2.4.6", "onnx": "1.23.2", "onnxruntime": "1.32.0"}
OUT = REPO / "tests" / "golden" / "qdq"
PEERS = REPO / "tests" / "golden" / "peers"
ONNX = REPO / "tests" / "golden" / "onnx"
UNARY = REPO / "tests" / "golden" / "unary"
TCONV = REPO / "tests" / "golden" / "transpose_conv"
SPATIAL = REPO / "tests" / "golden" / "spatial" / "onnx"
LAYER_NORM = REPO / "tests" / "golden" / "layer_norm"

# (name, float model, calibration file, observer)
EXPORTS = [
    ("mlp_minmax", PEERS / "mlp_nchw.onnx", PEERS / "calib_nchw.npy", "minmax"),
    ("cnn_minmax", PEERS / "cnn_nchw.onnx", PEERS / "calib_nchw.npy", "minmax"),
    ("dscnn_percentile", PEERS / "dscnn_nchw.onnx", PEERS / "calib_nchw.npy", "percentile"),
    ("dscnn_nhwc_histogram", PEERS / "dscnn_nhwc.onnx", PEERS / "calib_nhwc.npy", "histogram"),
    ("outlier_entropy", PEERS / "outlier_nchw.onnx", PEERS / "calib_nchw.npy", "entropy"),
    ("conv_bn_minmax", ONNX / "torch" / "conv_bn_opset17.onnx", OUT / "conv_bn_calib.npy", "minmax"),
    ("concat_pad_minmax", ONNX / "torch" / "concat_pad_opset17.onnx", OUT / "concat_pad_calib.npy", "minmax"),
    ("mobile_minmax", OUT / "mobile_float.onnx", OUT / "mobile_calib.npy", "minmax"),
    # Table ops (the .mq's 256-entry tables written as Gather): gen_unary_lut.py's float models.
    ("silu_minmax", UNARY / "silu.onnx", OUT / "unary_calib.npy", "minmax"),
    ("gelu_minmax", UNARY / "gelu.onnx", OUT / "unary_calib.npy", "minmax"),
    ("hardsigmoid_minmax", UNARY / "hardsigmoid_0p2_0p5.onnx", OUT / "unary_calib.npy", "minmax"),
    # PRELU (TFLite's integer form: both branches requantized, chosen with Where).
    ("prelu_minmax", ONNX / "binary" / "prelu_opset13.onnx", OUT / "prelu_calib.npy", "minmax"),
    # TRANSPOSE_CONV (ConvTranspose of the integers): gen_transpose_conv_models.py's decoder.
    ("decoder_minmax", TCONV / "onnx_decoder.onnx", OUT / "decoder_calib.npy", "minmax"),
    # RESIZE_BILINEAR (TFLite's integer taps, Gather and double sums): gen_spatial_models.py's conv + resize.
    ("conv_resize_minmax", SPATIAL / "conv_resize_opset13.onnx", OUT / "resize_calib.npy", "minmax"),
    # SUB of two activations (TFLite's integer sub), MEAN, the rstd table: gen_layer_norm.py's layer norm.
    ("layer_norm_minmax", LAYER_NORM / "ln_last_axis.onnx", OUT / "layer_norm_calib.npy", "minmax"),
]
# (name, float model, calibration file, observer): quantized with `--weight-bits 4` (W4A8).
INT4_EXPORTS = [
    ("cnn_w4_minmax", PEERS / "cnn_nchw.onnx", PEERS / "calib_nchw.npy", "minmax"),
    ("dscnn_w4_percentile", PEERS / "dscnn_nchw.onnx", PEERS / "calib_nchw.npy", "percentile"),
]
# (name, float model, calibration file, activation type)
IMPORTS = [
    ("ort_mlp", PEERS / "mlp_nchw.onnx", PEERS / "calib_nchw.npy", QuantType.QInt8),
    ("ort_cnn", PEERS / "cnn_nchw.onnx", PEERS / "calib_nchw.npy", QuantType.QInt8),
    ("ort_cnn_u8", PEERS / "cnn_nchw.onnx", PEERS / "calib_nchw.npy", QuantType.QUInt8),
    ("ort_dscnn", PEERS / "dscnn_nchw.onnx", PEERS / "calib_nchw.npy", QuantType.QInt8),
    ("ort_dscnn_nhwc", PEERS / "dscnn_nhwc.onnx", PEERS / "calib_nhwc.npy", QuantType.QInt8),
]


SAMPLES = 100  # calibration samples whose outputs are compared
LAYER_SAMPLES = 4  # samples whose every quantized activation is kept (exports)


def sample(m, x, i):
    """Sample i of the batch x as the model's first input takes it: with a leading batch axis of
    1, or as it is when the input has no batch axis (the [2, 64] table-op models)."""
    rank = len(m.graph.input[0].type.tensor_type.shape.dim)
    return x[i] if x.ndim - 1 == rank else x[i:i + 1]


def ort_outputs(path, x):
    m = onnx.load(str(path))
    name = m.graph.input[0].name
    x = x[:SAMPLES]
    ys = {}
    for key, level in (("ort", ort.GraphOptimizationLevel.ORT_ENABLE_ALL),
                       ("ort_noopt", ort.GraphOptimizationLevel.ORT_DISABLE_ALL)):
        so = ort.SessionOptions()
        so.graph_optimization_level = level
        s = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        ys[key] = np.concatenate([s.run(None, {name: sample(m, x, i)})[0] for i in range(len(x))]).astype(np.float32)
    # The unoptimized run is stored only when it differs from the default one.
    same = np.array_equal(ys["ort"], ys["ort_noopt"])
    return {"ort": goldenio.tensor(ys["ort"]), "ort_noopt": None if same else goldenio.tensor(ys["ort_noopt"])}


def ort_layers(path, x):
    """Every quantized activation (int8) of one of our exported models, run by ONNX Runtime
    without graph optimizations, keyed by the tensor name: the outputs of QuantizeLinear and of
    the int8 Cast / Gather / Concat ending an exactly written layer (our exporter names them
    `<tensor>/quantized`; 4-D activations are NCHW inside the model)."""
    m = onnx.load(str(path))
    name = m.graph.input[0].name
    qs = [n.output[0] for n in m.graph.node if n.op_type == "QuantizeLinear"
          or (n.op_type in ("Cast", "Gather", "Concat") and n.output[0].endswith("/quantized"))]
    del m.graph.output[:]
    for q in qs:
        m.graph.output.append(onnx.helper.make_tensor_value_info(q, onnx.TensorProto.INT8, None))
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    runs = [s.run(None, {name: sample(m, x, i)}) for i in range(LAYER_SAMPLES)]
    return {q[: -len("/quantized")]: goldenio.tensor(np.concatenate([r[k] for r in runs]))
            for k, q in enumerate(qs) if q.endswith("/quantized")}


class Reader:
    def __init__(self, x, name):
        self.rows = [{name: x[i:i + 1]} for i in range(len(x))]
        self.i = 0

    def get_next(self):
        if self.i >= len(self.rows):
            return None
        self.i += 1
        return self.rows[self.i - 1]

    def rewind(self):
        self.i = 0


def export_entry(cli, name, model, calib, observer, extra=()):
    """One of our exports: the CLI's --qdq of `model` calibrated on `calib`, checked by onnx.checker,
    with ONNX Runtime's outputs (and, on the first samples, every quantized activation)."""
    qdq = OUT / "export" / f"{name}.onnx"
    mq = OUT / "export" / f"{name}.mq.tmp"
    subprocess.run([str(cli), "quantize", str(model), "--calib", str(calib), "--observer", observer, *extra,
                    "-o", str(mq), "--qdq", str(qdq)], check=True, stdout=subprocess.DEVNULL)
    mq.unlink()
    onnx.checker.check_model(onnx.load(str(qdq)), full_check=True)
    x = np.load(calib)
    e = {"name": name, "kind": "export", "file": goldenio.rel(qdq), "float_model": goldenio.rel(model), "calib": goldenio.rel(calib),
         "observer": observer}
    e.update(ort_outputs(qdq, x))
    e["layers"] = ort_layers(qdq, x)
    print("export", name, "ok")
    return e


def cli_binary():
    if os.environ.get("MQ_CLI"):
        return pathlib.Path(os.environ["MQ_CLI"]).resolve()
    subprocess.run(["cargo", "build", "-q", "--release", "-p", "microquant-cli"], cwd=REPO, check=True)
    return REPO / "target" / "release" / "microquant"


def int4_exports(cli):
    entries = [export_entry(cli, *case, extra=("--weight-bits", "4")) for case in INT4_EXPORTS]
    (OUT / "qdq_int4.json").write_text(json.dumps({"tools": PINNED, "weight_bits": 4, "models": entries}, indent=1) + "\n")


def main():
    goldenio.check_pins(PINNED)
    if sys.argv[1:] == ["--int4-only"]:
        int4_exports(cli_binary())
        return
    (OUT / "export").mkdir(parents=True, exist_ok=True)
    (OUT / "import").mkdir(parents=True, exist_ok=True)
    np.save(OUT / "conv_bn_calib.npy", np.random.default_rng(7).standard_normal((32, 3, 8, 8)).astype(np.float32))
    np.save(OUT / "concat_pad_calib.npy", np.random.default_rng(8).standard_normal((32, 2, 6, 6)).astype(np.float32))
    np.save(OUT / "resize_calib.npy", np.random.default_rng(12).standard_normal((32, 3, 6, 8)).astype(np.float32))
    np.save(OUT / "decoder_calib.npy", np.random.default_rng(11).standard_normal((32, 6, 8, 8)).astype(np.float32))
    np.save(OUT / "prelu_calib.npy", np.random.default_rng(10).standard_normal((32, 3, 6, 6)).astype(np.float32))
    np.save(OUT / "unary_calib.npy", (2 * np.random.default_rng(9).standard_normal((32, 2, 64))).astype(np.float32))
    np.save(OUT / "layer_norm_calib.npy",
            (1.5 * np.random.default_rng(13).standard_normal((32, 1, 10, 32)) + 0.3).astype(np.float32))
    torch_py = os.environ.get("TORCH_PYTHON", str(REPO / ".venv-torch" / "bin" / "python"))
    if pathlib.Path(torch_py).exists():
        subprocess.run([torch_py, str(HERE / "gen_qdq_mobile_torch.py"), str(OUT / "mobile_float.onnx"),
                        str(OUT / "mobile_calib.npy")], check=True)
    cli = cli_binary()
    entries = [export_entry(cli, *case) for case in EXPORTS]
    int4_exports(cli)
    for name, model, calib, act in IMPORTS:
        qdq = OUT / "import" / f"{name}.onnx"
        x = np.load(calib)
        inp = onnx.load(str(model)).graph.input[0].name
        quantize_static(str(model), str(qdq), Reader(x, inp), quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=act, weight_type=QuantType.QInt8, calibrate_method=CalibrationMethod.MinMax)
        m = onnx.load(str(qdq))
        m.producer_version = "1.32.0"
        onnx.save(m, str(qdq))
        e = {"name": name, "kind": "import", "file": goldenio.rel(qdq), "float_model": goldenio.rel(model), "calib": goldenio.rel(calib)}
        e.update(ort_outputs(qdq, x))
        entries.append(e)
        print("import", name, "ok")
    if pathlib.Path(torch_py).exists():
        qat = OUT / "import" / "torch_qat_cnn.onnx"
        calib = PEERS / "calib_nchw.npy"
        subprocess.run([torch_py, str(HERE / "gen_qdq_torch.py"), str(calib), str(qat)], check=True)
        e = {"name": "torch_qat_cnn", "kind": "import", "file": goldenio.rel(qat), "float_model": None, "calib": goldenio.rel(calib)}
        e.update(ort_outputs(qat, np.load(calib)))
        entries.append(e)
        print("import torch_qat_cnn ok")
    (OUT / "qdq.json").write_text(json.dumps({"tools": PINNED, "models": entries}, indent=1) + "\n")


if __name__ == "__main__":
    main()
