#!/usr/bin/env python3
"""Weight-only and dynamic quantization (int8 weights, float activations) against ONNX Runtime
(tests/host/hybrid.rs).

    .venv/bin/python tests/gen/gen_hybrid.py

Writes tests/golden/hybrid/:

  <name>.onnx   models written by OUR exporter: `microquant quantize MODEL --mode weight-only|dynamic
                [--per-tensor] -o <name>.onnx` (the CLI of this checkout, built here with
                `cargo build --release -p microquant-cli`), each checked with onnx.checker
                (full_check) before it is kept
  ic_samples.npy  the inputs of the ic models (below)
  hybrid.json   per model: the mode, the float source, the samples file, and ONNX Runtime's
                outputs (CPU provider, graph optimizations off: the ops as the ONNX spec defines
                them) on the first 50 samples: for the float model (ort_float; for a TFLite
                model the TFLite interpreter's), for the export, and for dynamic models
                quantized per tensor also for ONNX Runtime's OWN
                quantize_dynamic(weight_type=QInt8, per_channel=False) model of the same float model

Checked here, before anything is written (the script fails otherwise):
  - weight-only: every weight of a Conv / Gemm / MatMul of the float model is, in the export, an
    int8 initializer read through DequantizeLinear whose values and scales equal ONNX Runtime
    1.32.0's own weight quantizer, onnxruntime.quantization.quant_utils.quantize_data(w,
    TensorProto.INT8, symmetric=True), per output channel (or on the whole tensor for
    --per-tensor): bit for bit, zero points 0. The float weights are those of the float model
    as ONNX Runtime's basic graph optimizations leave it (batch norms and constant scales folded
    into the convolutions, as our importer folds them). A fully connected layer after a Flatten
    of NCHW data reads NHWC data in the export: its rows hold the same values, columns permuted;
    nothing else of the export is quantized: no QuantizeLinear, float activations.
  - dynamic: the export has one DynamicQuantizeLinear per ConvInteger / MatMulInteger and no
    QuantizeLinear / DequantizeLinear; per tensor, ONNX Runtime's outputs on the export equal,
    bit for bit, its outputs on its own quantize_dynamic model (the same computation). (ONNX
    Runtime quantizes convolution weights per tensor only in dynamic mode; ours per channel are
    checked by running the export.)

The Rust test re-exports with the current code and checks the bytes equal <name>.onnx, and runs
the hybrid graph with our float executor on the same samples: weight-only within 1e-4 of the
output's peak of ONNX Runtime's outputs on the export (float sums in another order), dynamic bit
for bit equal to them (and so to ONNX Runtime's own quantize_dynamic model where stored).

The ic models start from the float TFLite model (models/mlperf-tiny/ic_resnet8_float32.tflite):
their float outputs come from the TFLite interpreter (ai-edge-litert, reference kernels), their
inputs are ic_samples.npy (written here; see ic_samples).

Pinned: numpy 2.4.6, onnx 1.23.2, onnxruntime 1.32.0, ai-edge-litert 2.3.0 (checked).
Deterministic.
"""
import pathlib
import subprocess
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
import goldenio  # noqa: E402

import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnxruntime.quantization import QuantType, quantize_dynamic  # noqa: E402
from onnxruntime.quantization.quant_utils import quantize_data  # noqa: E402

PINNED = {"numpy": "2.4.6", "onnx": "1.23.2", "onnxruntime": "1.32.0", "ai-edge-litert": "2.3.0"}
OUT = REPO / "tests" / "golden" / "hybrid"
PEERS = REPO / "tests" / "golden" / "peers"
EXAMPLES = REPO / "web-demo" / "examples"
MLPERF = REPO / "models" / "mlperf-tiny"
IC_SAMPLES = OUT / "ic_samples.npy"
SAMPLES = 50

# (name, mode, float model, samples, per-channel)
MODELS = [
    ("mlp", "weight-only", PEERS / "mlp_nchw.onnx", PEERS / "test_nchw.npy", True),
    ("cnn", "weight-only", PEERS / "cnn_nchw.onnx", PEERS / "test_nchw.npy", True),
    ("cnn_per_tensor", "weight-only", PEERS / "cnn_nchw.onnx", PEERS / "test_nchw.npy", False),
    ("dscnn_nhwc", "weight-only", PEERS / "dscnn_nhwc.onnx", PEERS / "calib_nhwc.npy", True),
    ("digits", "weight-only", EXAMPLES / "digits_cnn.onnx", EXAMPLES / "digits_calib.npy", True),
    ("dynamic_mlp_per_tensor", "dynamic", PEERS / "mlp_nchw.onnx", PEERS / "test_nchw.npy", False),
    ("dynamic_cnn_per_tensor", "dynamic", PEERS / "cnn_nchw.onnx", PEERS / "test_nchw.npy", False),
    ("dynamic_dscnn_per_tensor", "dynamic", PEERS / "dscnn_nchw.onnx", PEERS / "test_nchw.npy", False),
    ("dynamic_cnn", "dynamic", PEERS / "cnn_nchw.onnx", PEERS / "test_nchw.npy", True),
    ("dynamic_digits", "dynamic", EXAMPLES / "digits_cnn.onnx", EXAMPLES / "digits_calib.npy", True),
    # A float TFLite model (NHWC in and out): the import path, and a residual network.
    ("ic", "weight-only", MLPERF / "ic_resnet8_float32.tflite", IC_SAMPLES, True),
    ("dynamic_ic", "dynamic", MLPERF / "ic_resnet8_float32.tflite", IC_SAMPLES, True),
]
IC_COUNT = 8  # ic samples (32x32x3 each)


def ic_samples():
    """IC_COUNT inputs of the IC model: SplitMix64(seed = 9000 + s) int8 values mapped to floats
    with the int8 model's input scale and zero point (so they have the model's real input range,
    as tests/gen/gen_onnx_float.py makes its TFLite inputs)."""
    from ai_edge_litert.interpreter import Interpreter
    q = Interpreter(model_path=str(MLPERF / "ic_resnet8_int8.tflite"))
    d = q.get_input_details()[0]
    scale, zp = d["quantization"]
    n = int(np.prod(d["shape"]))
    x = np.stack([((goldenio.SplitMix64(9000 + s).int8s(n).astype(np.float32) - np.float32(zp)) * np.float32(scale))
                  .astype(np.float32).reshape(d["shape"][1:]) for s in range(IC_COUNT)])
    np.save(IC_SAMPLES, x)


def run_float(path, x):
    """The float model's outputs: ONNX Runtime for an ONNX model; for a TFLite model the TFLite
    interpreter (ai-edge-litert, BUILTIN_REF: the reference kernels)."""
    if path.suffix != ".tflite":
        return run(path, x)
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    it = Interpreter(model_path=str(path), experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    d, o = it.get_input_details()[0], it.get_output_details()[0]
    out = []
    for i in range(len(x)):
        it.set_tensor(d["index"], x[i:i + 1])
        it.invoke()
        out.append(it.get_tensor(o["index"]).astype(np.float32))
    return np.concatenate(out)


def run(path, x):
    m = onnx.load(str(path))
    name = m.graph.input[0].name
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return np.concatenate([s.run(None, {name: x[i:i + 1]})[0] for i in range(len(x))]).astype(np.float32)


def weights_of(model):
    """{initializer name: (values, channel axis)} for the weights of Conv, Gemm and MatMul."""
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    out = {}
    for n in model.graph.node:
        if n.op_type not in ("Conv", "Gemm", "MatMul") or len(n.input) < 2 or n.input[1] not in inits:
            continue
        axis = 0
        if n.op_type == "Gemm":
            trans_b = next((a.i for a in n.attribute if a.name == "transB"), 0)
            axis = 0 if trans_b else 1
        elif n.op_type == "MatMul":
            axis = 1
        out[n.input[1]] = (inits[n.input[1]], axis)
    return out


def ort_quantized(w, axis, per_channel):
    """ONNX Runtime's int8 symmetric weights and scales (per channel of `axis`, or one)."""
    if not per_channel:
        zp, scale, q = quantize_data(w.ravel(), onnx.TensorProto.INT8, True)
        return q.reshape(w.shape).astype(np.int8), np.array([scale], dtype=np.float32), [int(zp)]
    qs, scales, zps = [], [], []
    moved = np.moveaxis(w, axis, 0)
    for c in range(moved.shape[0]):
        zp, scale, q = quantize_data(moved[c].ravel(), onnx.TensorProto.INT8, True)
        qs.append(np.asarray(q).reshape(moved[c].shape))
        scales.append(np.float32(scale))
        zps.append(int(zp))
    return np.moveaxis(np.stack(qs), 0, axis).astype(np.int8), np.array(scales, dtype=np.float32), zps


def ort_folded(path):
    """The float model as ONNX Runtime's basic graph optimizations leave it (constant folding,
    a BatchNorm or a constant Mul / Add after a Conv folded into its weights and bias, as our
    importer and `prepare` fold them): the weights that get quantized."""
    folded = OUT / "tmp_folded.onnx"
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    so.optimized_model_filepath = str(folded)
    ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return folded


def check_export(name, float_model, export, per_channel):
    """The export's weights equal ORT's quantizer's; nothing else is quantized."""
    e = onnx.load(str(export))
    inits = {i.name: numpy_helper.to_array(i) for i in e.graph.initializer}
    if any(n.op_type == "QuantizeLinear" for n in e.graph.node):
        raise SystemExit(f"{name}: the export quantizes an activation")
    dq = {n.output[0]: n for n in e.graph.node if n.op_type == "DequantizeLinear"}
    # A weight of the float model is found by its values: the export reads the weight of the
    # same node kind through a DequantizeLinear.
    exported = []
    for n in e.graph.node:
        if n.op_type in ("Conv", "Gemm", "MatMul") and len(n.input) > 1 and n.input[1] in dq:
            d = dq[n.input[1]]
            axis = next((a.i for a in d.attribute if a.name == "axis"), 1)
            exported.append((n.op_type, inits[d.input[0]], inits[d.input[1]], inits[d.input[2]], axis))
    weights = weights_of(onnx.load(str(ort_folded(float_model))))
    if len(exported) != len(weights):
        raise SystemExit(f"{name}: {len(exported)} quantized weights in the export, {len(weights)} in the model")
    for wname, (w, axis) in weights.items():
        q, scales, zps = ort_quantized(w, axis, per_channel)
        match = [x for x in exported if x[1].shape == q.shape and np.array_equal(x[1], q)]
        if not match and q.ndim == 2:
            # A Gemm after a Flatten of NCHW data: the export reads the flattened NHWC data (a
            # Transpose first), so each output channel's weights are the same values with the
            # columns permuted; they may also be written [in, out] instead of [out, in].
            rows = np.sort(np.moveaxis(q, axis, 0), axis=1)
            match = [x for x in exported if x[1].ndim == 2 and any(
                o.shape == rows.shape and np.array_equal(np.sort(o, axis=1), rows) for o in (x[1], x[1].T))]
        if len(match) != 1:
            raise SystemExit(f"{name}: weight {wname}: no exported weight equals ONNX Runtime's quantization")
        _, _, s, z, _ = match[0]
        if not np.array_equal(np.atleast_1d(s).astype(np.float32), scales) or np.any(np.atleast_1d(z) != 0):
            raise SystemExit(f"{name}: weight {wname}: scales or zero points differ from ONNX Runtime's")
        if np.any(np.array(zps) != 0):
            raise SystemExit(f"{name}: weight {wname}: ORT's zero points are not 0")
    (OUT / "tmp_folded.onnx").unlink()
    print(f"{name}: {len(weights)} weights equal ONNX Runtime's quantize_data, bit for bit")


def check_dynamic(name, export):
    ops = [n.op_type for n in onnx.load(str(export)).graph.node]
    layers = ops.count("ConvInteger") + ops.count("MatMulInteger")
    if layers == 0 or ops.count("DynamicQuantizeLinear") != layers or "QuantizeLinear" in ops or "DequantizeLinear" in ops:
        raise SystemExit(f"{name}: not a dynamic model: {ops}")


def main():
    goldenio.check_pins(PINNED)
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "microquant-cli"], cwd=REPO, check=True)
    cli = REPO / "target" / "release" / "microquant"
    OUT.mkdir(parents=True, exist_ok=True)
    ic_samples()
    entries = []
    for name, mode, model, samples, per_channel in MODELS:
        export = OUT / f"{name}.onnx"
        cmd = [str(cli), "quantize", str(model), "--mode", mode, "-o", str(export)]
        if not per_channel:
            cmd.append("--per-tensor")
        subprocess.run(cmd, cwd=REPO, check=True, stdout=subprocess.DEVNULL)
        onnx.checker.check_model(onnx.load(str(export)), full_check=True)
        x = np.load(samples)[:SAMPLES].astype(np.float32)
        ort_export = run(export, x)
        entry = {
            "name": name,
            "mode": mode,
            "float_model": goldenio.rel(model),
            "samples": goldenio.rel(samples),
            "per_channel": per_channel,
            "ort_float": goldenio.tensor(run_float(model, x)),
            "ort_export": goldenio.tensor(ort_export),
            "ort_reference": None,
        }
        if mode == "weight-only" and model.suffix == ".tflite":
            # ONNX Runtime cannot fold a TFLite model's weights for check_export; the same
            # quantizer is checked on the ONNX models above. Here: the import, the export's
            # layout (NHWC in and out) and its run in ONNX Runtime.
            print(f"{name}: a TFLite source; its weights are not compared with ORT's quantize_data")
        elif mode == "weight-only":
            check_export(name, model, export, per_channel)
        else:
            check_dynamic(name, export)
            if not per_channel:
                own = OUT / "tmp_ort_dynamic.onnx"
                quantize_dynamic(str(model), str(own), weight_type=QuantType.QInt8, per_channel=False)
                reference = run(own, x)
                own.unlink()
                if not np.array_equal(reference, ort_export):
                    raise SystemExit(f"{name}: ONNX Runtime's own quantize_dynamic model gives other outputs "
                                     f"(max diff {np.abs(reference - ort_export).max()})")
                entry["ort_reference"] = goldenio.tensor(reference)
                print(f"{name}: the export runs as ONNX Runtime's own quantize_dynamic model, bit for bit")
        entries.append(entry)
    goldenio.write(OUT / "hybrid.json", {
        "generator": "tests/gen/gen_hybrid.py",
        "versions": PINNED,
        "samples": SAMPLES,
        "models": entries,
    })
    print(f"wrote {goldenio.rel(OUT)}")


if __name__ == "__main__":
    main()
