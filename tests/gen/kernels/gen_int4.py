"""W4A8 goldens: CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED with INT4 weights
(conv_2d_int4.json, depthwise_conv_2d_int4.json, fully_connected_int4.json).

The weights are an INT4 tensor (TensorType 17) whose buffer holds them packed two per byte as
TFLite stores INT4 (``common.pack_int4``: row-major, element 2i in the low nibble of byte i);
symmetric (zero point 0), values in [-8, 7]; per-channel for conv (dimension 0) and depthwise
(dimension 3), a few per-tensor. Activations int8, bias int32. Each case stores the weights twice:
``filter`` (the int8 values) and ``filter_packed`` (the uint8 bytes of the model's buffer, what
the kernels under test read).

What the oracles accept (tflite-micro 0.dev20261023182759, ai-edge-litert 2.3.0):
* CONV_2D and DEPTHWISE_CONV_2D with INT4 weights: both, per-channel and per-tensor;
* FULLY_CONNECTED with INT4 weights: TFLite Micro only per-tensor (per-channel INT4 fails its
  Prepare, fully_connected_common.cc: "(input->type == kTfLiteInt8 && filter->type !=
  kTfLiteInt4) ... was not true"); the interpreter both. The per-channel configurations are
  kept in the file's ``rejected`` list with that message.
Run by gen_all.py (families conv_int4, depthwise_int4, fc_int4).
"""
import numpy as np

from common import ACTIVATIONS, REGIMES, Family, zero_points
from gen_conv import DILATIONS, STRIDES, conv_like_case, conv_name
from gen_fc import _name, fc_case

ACTS = list(ACTIVATIONS)
NOTE = ("int8 activations, INT4 weights (packed two per byte as TFLite stores them; `filter_packed` is the "
        "model's buffer, `filter` the values), int32 bias")


def _conv(fam, prefix, in_shape, out_c, kernel, stride, dilation, padding, act, izp, ozp, regime, pc=True,
          with_bias=True):
    name = conv_name(prefix, in_shape, out_c, kernel, stride, dilation, padding, act, izp, ozp, regime, pc,
                     extra="" if with_bias else "_nobias")
    return conv_like_case(fam, name, "conv", in_shape, out_c, kernel, stride, dilation, padding, act, izp, ozp,
                          regime, per_channel=pc, with_bias=with_bias, weight_bits=4)


def _dw(fam, prefix, in_shape, dm, kernel, stride, dilation, padding, act, izp, ozp, regime, pc=True,
        with_bias=True):
    out_c = in_shape[3] * dm
    name = conv_name(prefix, in_shape, out_c, kernel, stride, dilation, padding, act, izp, ozp, regime, pc, dm=dm,
                     extra="" if with_bias else "_nobias")
    return conv_like_case(fam, name, "depthwise", in_shape, out_c, kernel, stride, dilation, padding, act, izp,
                          ozp, regime, per_channel=pc, with_bias=with_bias, depth_multiplier=dm, weight_bits=4)


def gen_conv():
    fam = Family("conv_2d_int4.json", "CONV_2D", "tests/gen/kernels/gen_int4.py", NOTE)
    i = 0
    # 1. Geometry: filters with an odd number of weights (the last byte half used), odd input
    # depths (a filter row starting in a high nibble), strides, dilations, padding.
    for hw in [(1, 1), (5, 5), (7, 4), (9, 9)]:
        for kern in [(1, 1), (3, 3), (2, 3), (5, 5)]:
            for pad in ["SAME", "VALID"]:
                act = ACTS[i % 4]
                izp, ozp = zero_points(i, act)
                _conv(fam, "conv4", (1, hw[0], hw[1], [1, 3, 4, 5, 8][i % 5]), [1, 3, 4, 7][(i // 3) % 4], kern,
                      STRIDES[i % len(STRIDES)], DILATIONS[(i // 2) % len(DILATIONS)], pad, act, izp, ozp, "typ")
                i += 1
    # 2. Quantization regimes x activations; a few per-tensor filters.
    for regime in REGIMES:
        for act in ACTS:
            if regime == "zeromult" and act not in ("NONE", "RELU"):
                continue
            izp, ozp = zero_points(i, act)
            _conv(fam, "conv4q", (1, 6, 5, 5), 7, (3, 3), (1, 1), (1, 1), "SAME", act, izp, ozp, regime)
            i += 1
    for regime in ["typ", "near1", "big"]:
        izp, ozp = zero_points(i, ACTS[i % 4])
        _conv(fam, "conv4q", (1, 5, 6, 3), 5, (3, 3), (2, 2), (1, 1), "VALID", ACTS[i % 4], izp, ozp, regime,
              pc=False)
        i += 1
    # 3. No bias, batch > 1, realistic layers.
    _conv(fam, "conv4", (1, 6, 6, 4), 5, (3, 3), (1, 1), (1, 1), "SAME", "NONE", 3, -9, "typ", with_bias=False)
    _conv(fam, "conv4", (2, 6, 6, 3), 6, (3, 3), (2, 2), (1, 1), "SAME", "RELU", -128, -128, "typ")
    _conv(fam, "conv4_real", (1, 16, 16, 8), 16, (3, 3), (1, 1), (1, 1), "SAME", "RELU6", -128, -128, "typ")
    _conv(fam, "conv4_real", (1, 12, 12, 16), 24, (1, 1), (1, 1), (1, 1), "VALID", "NONE", -128, 0, "spread")
    _conv(fam, "conv4_real", (1, 49, 10, 1), 16, (10, 4), (2, 2), (1, 1), "SAME", "RELU", 83, -128, "typ")
    return fam


def gen_depthwise():
    fam = Family("depthwise_conv_2d_int4.json", "DEPTHWISE_CONV_2D", "tests/gen/kernels/gen_int4.py", NOTE)
    i = 0
    # 1. Geometry; odd channel counts put a pixel's taps across byte boundaries.
    for hw in [(1, 1), (5, 5), (7, 4), (9, 9)]:
        for kern in [(1, 1), (3, 3), (2, 3), (5, 5)]:
            for pad in ["SAME", "VALID"]:
                act = ACTS[i % 4]
                izp, ozp = zero_points(i, act)
                _dw(fam, "dw4", (1, hw[0], hw[1], [1, 3, 4, 5, 8][i % 5]), [1, 2, 3][(i // 2) % 3], kern,
                    STRIDES[i % len(STRIDES)], DILATIONS[(i // 3) % len(DILATIONS)], pad, act, izp, ozp, "typ")
                i += 1
    # 2. Quantization regimes x activations; a few per-tensor filters.
    for regime in REGIMES:
        for act in ACTS:
            if regime == "zeromult" and act not in ("NONE", "RELU"):
                continue
            izp, ozp = zero_points(i, act)
            _dw(fam, "dw4q", (1, 6, 5, 5), [1, 2, 3][i % 3], (3, 3), (1, 1), (1, 1), "SAME", act, izp, ozp, regime)
            i += 1
    for regime in ["typ", "near1", "big"]:
        act = ACTS[i % 4]
        izp, ozp = zero_points(i, act)
        _dw(fam, "dw4q", (1, 5, 6, 3), 2, (3, 3), (2, 2), (1, 1), "VALID", act, izp, ozp, regime, pc=False)
        i += 1
    # 3. No bias, batch > 1, realistic layers.
    _dw(fam, "dw4", (1, 6, 6, 5), 1, (3, 3), (1, 1), (1, 1), "SAME", "NONE", 3, -9, "typ", with_bias=False)
    _dw(fam, "dw4", (2, 6, 6, 3), 2, (3, 3), (2, 2), (1, 1), "SAME", "RELU", -128, -128, "typ")
    _dw(fam, "dw4_real", (1, 16, 16, 16), 1, (3, 3), (1, 1), (1, 1), "SAME", "RELU6", -128, -128, "typ")
    _dw(fam, "dw4_real", (1, 25, 5, 64), 1, (3, 3), (1, 1), (1, 1), "SAME", "RELU", -128, -128, "typ")
    _dw(fam, "dw4_real", (1, 12, 12, 32), 1, (3, 3), (1, 1), (1, 1), "SAME", "NONE", -7, 11, "spread")
    return fam


def gen_fc():
    fam = Family("fully_connected_int4.json", "FULLY_CONNECTED", "tests/gen/kernels/gen_int4.py", NOTE)
    i = 0
    # 1. Shapes (odd input depths: rows starting in a high nibble), per-tensor; each with a
    # per-channel twin, which TFLite Micro refuses (kept in `rejected`).
    for n_in in [1, 3, 4, 9, 17, 64]:
        for n_out in [1, 5, 16]:
            batch = 1 + i % 3
            act = ACTS[i % 4]
            izp, ozp = zero_points(i, act)
            for pc in [False, True]:
                fc_case(fam, _name("fc4", [batch, n_in], n_out, pc, act, izp, ozp, "typ"), [batch, n_in], n_out, pc,
                        act, izp, ozp, "typ", weight_bits=4)
            i += 1
    # 2. Quantization regimes x activations (per-tensor).
    for regime in REGIMES:
        if regime == "spread":
            continue  # per-channel only
        for act in ACTS:
            if regime == "zeromult" and act not in ("NONE", "RELU"):
                continue
            izp, ozp = zero_points(i, act)
            i += 1
            fc_case(fam, _name("fc4q", [2, 25], 7, False, act, izp, ozp, regime), [2, 25], 7, False, act, izp, ozp,
                    regime, weight_bits=4)
    # 3. Options: no bias, keep_num_dims, a 4-D input flattened; realistic sizes.
    fc_case(fam, _name("fc4_nobias", [3, 11], 6, False, "NONE", -5, 9, "typ"), [3, 11], 6, False, "NONE", -5, 9,
            "typ", with_bias=False, weight_bits=4)
    fc_case(fam, _name("fc4_keepdims", [2, 3, 9], 5, False, "RELU", 12, -100, "typ"), [2, 3, 9], 5, False, "RELU", 12,
            -100, "typ", keep_num_dims=True, weight_bits=4)
    fc_case(fam, _name("fc4_flatten4d", [1, 2, 2, 7], 4, False, "NONE", 0, -128, "typ"), [1, 2, 2, 7], 4, False,
            "NONE", 0, -128, "typ", weight_bits=4)
    fc_case(fam, _name("fc4_rounding", [8, 32], 16, False, "NONE", -3, 2, "near1"), [8, 32], 16, False, "NONE", -3, 2,
            "near1", weight_bits=4)
    fc_case(fam, _name("fc4_real", [1, 256], 64, False, "RELU", -128, -128, "typ"), [1, 256], 64, False, "RELU",
            -128, -128, "typ", weight_bits=4)
    fc_case(fam, _name("fc4_real", [1, 65], 12, False, "NONE", -128, 20, "typ"), [1, 65], 12, False, "NONE", -128,
            20, "typ", weight_bits=4)
    return fam


GENERATORS = {"conv_int4": gen_conv, "depthwise_int4": gen_depthwise, "fc_int4": gen_fc}
