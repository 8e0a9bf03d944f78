"""W4A8 model goldens (tests/golden/int4_models/): small TFLite models with INT4 weights, run by
TFLite Micro and the TFLite interpreter; the importer's and the interpreter's tests
(tests/host/int4_models.rs) read the committed .tflite files and outputs.

Models (written directly with TFLite's flatbuffer schema object API, tests/gen/kernels/common.py's
ModelBuilder: the TFLite converter writes INT4 weights only from its experimental low-bit paths,
and a hand-built model pins every scale):
  w4a8_cnn.tflite  input [1, 10, 10, 3] int8
                   -> CONV_2D 3x3 SAME, 8 filters, INT4 per-channel, RELU
                   -> DEPTHWISE_CONV_2D 3x3 stride 2 SAME, INT4 per-channel, RELU6
                   -> FULLY_CONNECTED 200 -> 10, INT4 per-tensor (TFLite Micro refuses per-channel
                      INT4 fully connected: see tests/gen/kernels/gen_int4.py)
                   -> output [1, 10] int8
INT4 weights are packed two per byte as TFLite stores them (common.pack_int4).

Inputs: SplitMix64 (tests/gen/goldenio.py, shared with tests/src/rng.rs), seeds 0..N, stored too.
Outputs: `expected_tflm` (TFLite Micro: double rounding everywhere) and `expected_tflite_ref` (the
interpreter's reference kernels: its fully connected rounds once).

Pinned tools (tests/gen/requirements.txt; checked at start):
    numpy==2.4.6  flatbuffers==25.12.19  ai-edge-litert==2.3.0  tflite-micro==0.dev20261023182759

Run: .venv/bin/python tests/gen/gen_int4_models.py
"""
import pathlib
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "kernels"))
import common  # noqa: E402
from common import ACTIVATIONS, BO, OPT, PADDINGS, S, ModelBuilder, bias_scales  # noqa: E402
import goldenio  # noqa: E402

OUT = HERE.parent / "golden" / "int4_models"
SAMPLES = 8


def qscale(amax, qmax):
    return np.float32(amax / qmax)


def conv_options(kind, stride, activation, depth_multiplier=1):
    o = S.Conv2DOptionsT() if kind == "conv" else S.DepthwiseConv2DOptionsT()
    if kind != "conv":
        o.depthMultiplier = depth_multiplier
    o.padding = PADDINGS["SAME"]
    o.strideH = o.strideW = stride
    o.dilationHFactor = o.dilationWFactor = 1
    o.fusedActivationFunction = ACTIVATIONS[activation]
    return o


def int4_per_channel(w_float, axis):
    """Symmetric per-channel int4 of float weights along ``axis``: scale max|w| / 7, values
    round(w / scale) in [-7, 7] (how the weights were chosen; the oracles read the result)."""
    red = tuple(i for i in range(w_float.ndim) if i != axis)
    amax = np.max(np.abs(w_float), axis=red)
    scales = (amax / 7.0).astype(np.float32)
    shape = [1] * w_float.ndim
    shape[axis] = -1
    q = np.clip(np.round(w_float / scales.reshape(shape)), -8, 7).astype(np.int8)
    return q, scales


def build_cnn(rng):
    mb = ModelBuilder()
    in_s, in_zp = qscale(2.0, 255.0), -1
    t_in = mb.tensor("input", [1, 10, 10, 3], np.int8, [in_s], [in_zp])

    w1f = rng.normal(0, 0.3, (8, 3, 3, 3)).astype(np.float32)
    w1, s1 = int4_per_channel(w1f, 0)
    b1 = rng.integers(-200, 200, 8).astype(np.int32)
    c1_s, c1_zp = np.float32(0.02), -128
    t_w1 = mb.tensor("conv/filter", w1.shape, "int4", s1, [0] * 8, 0, w1)
    bs1 = bias_scales(in_s, s1)
    t_b1 = mb.tensor("conv/bias", [8], np.int32, bs1, [0] * 8, 0, b1)
    t_c1 = mb.tensor("conv/out", [1, 10, 10, 8], np.int8, [c1_s], [c1_zp])
    mb.operator(BO.CONV_2D, 7, [t_in, t_w1, t_b1], [t_c1], OPT.Conv2DOptions, conv_options("conv", 1, "RELU"))

    w2f = rng.normal(0, 0.4, (1, 3, 3, 8)).astype(np.float32)
    w2, s2 = int4_per_channel(w2f, 3)
    b2 = rng.integers(-300, 300, 8).astype(np.int32)
    c2_s, c2_zp = np.float32(6.0 / 255.0), -128
    t_w2 = mb.tensor("dw/filter", w2.shape, "int4", s2, [0] * 8, 3, w2)
    bs2 = bias_scales(c1_s, s2)
    t_b2 = mb.tensor("dw/bias", [8], np.int32, bs2, [0] * 8, 0, b2)
    t_c2 = mb.tensor("dw/out", [1, 5, 5, 8], np.int8, [c2_s], [c2_zp])
    mb.operator(BO.DEPTHWISE_CONV_2D, 6, [t_c1, t_w2, t_b2], [t_c2], OPT.DepthwiseConv2DOptions,
                conv_options("dw", 2, "RELU6"))

    w3f = rng.normal(0, 0.1, (10, 200)).astype(np.float32)
    s3 = np.float32(np.max(np.abs(w3f)) / 7.0)
    w3 = np.clip(np.round(w3f / s3), -8, 7).astype(np.int8)
    b3 = rng.integers(-500, 500, 10).astype(np.int32)
    o_s, o_zp = np.float32(0.05), 3
    t_w3 = mb.tensor("fc/weights", w3.shape, "int4", [s3], [0], 0, w3)
    t_b3 = mb.tensor("fc/bias", [10], np.int32, bias_scales(c2_s, [s3]), [0], 0, b3)
    t_out = mb.tensor("output", [1, 10], np.int8, [o_s], [o_zp])
    o = S.FullyConnectedOptionsT()
    mb.operator(BO.FULLY_CONNECTED, 10, [t_c2, t_w3, t_b3], [t_out], OPT.FullyConnectedOptions, o)
    return mb.build([t_in], [t_out])


def main():
    common.check_versions()
    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(2024)
    model = build_cnn(rng)
    path = OUT / "w4a8_cnn.tflite"
    path.write_bytes(model)
    samples = []
    for seed in range(SAMPLES):
        x = goldenio.SplitMix64(seed).int8s(300).reshape(1, 10, 10, 3)
        a = common.run_tflm(model, [x])
        b = common.run_tflite_ref(model, [x])
        samples.append({"seed": seed, "input": goldenio.tensor(x), "expected_tflm": goldenio.tensor(a),
                        "expected_tflite_ref": goldenio.tensor(b)})
        print(f"sample {seed}: tflm {a.reshape(-1).tolist()} ref {b.reshape(-1).tolist()}")
    doc = {"generator": "tests/gen/gen_int4_models.py", "tools": common.tool_versions(),
           "models": [{"file": path.name, "bytes": len(model), "samples": samples}]}
    goldenio.write(OUT / "w4a8_models.json", doc)
    print(f"{path.name}: {len(model)} bytes")


if __name__ == "__main__":
    main()
