"""DEPTHWISE_CONV_2D goldens: int8 (depthwise_conv_2d.json) and 16x8 (depthwise_conv_2d_16x8.json).

Filter [1, kh, kw, in_c * depth_multiplier] symmetric int8, per-channel on dimension 3 (a few
per-tensor); bias int32 (int64 for 16x8). The model builder is gen_conv.conv_like_case.
"""
import numpy as np

from common import ACTIVATIONS, REGIMES, Family, zero_points
from gen_conv import DILATIONS, HWS, STRIDES, conv_like_case, conv_name

ACTS = list(ACTIVATIONS)
KERNELS = [(1, 1), (3, 3), (2, 3), (5, 5), (3, 1)]
CIN = [1, 3, 4, 8, 5, 16, 2, 7]
MULT = [1, 2, 3]


def _dw(fam, prefix, in_shape, dm, kernel, stride, dilation, padding, act, izp, ozp, regime, pc=True,
        with_bias=True, act_dtype=np.int8):
    out_c = in_shape[3] * dm
    name = conv_name(prefix, in_shape, out_c, kernel, stride, dilation, padding, act, izp, ozp, regime, pc,
                     dm=dm, extra="" if with_bias else "_nobias")
    return conv_like_case(fam, name, "depthwise", in_shape, out_c, kernel, stride, dilation, padding, act, izp,
                          ozp, regime, per_channel=pc, with_bias=with_bias, depth_multiplier=dm,
                          act_dtype=act_dtype)


def gen_int8():
    fam = Family("depthwise_conv_2d.json", "DEPTHWISE_CONV_2D", "tests/gen/kernels/gen_depthwise.py",
                 "int8 activations, int8 weights per-channel on dimension 3 (a few per-tensor), int32 bias")
    # 1. Geometry: input sizes x kernels x padding; strides, dilations, channels, multipliers rotate.
    i = 0
    for hw in HWS:
        for kern in KERNELS:
            for pad in ["SAME", "VALID"]:
                act = ACTS[i % 4]
                izp, ozp = zero_points(i, act)
                _dw(fam, "dw", (1, hw[0], hw[1], CIN[i % len(CIN)]), MULT[(i // 2) % 3], kern,
                    STRIDES[i % len(STRIDES)], DILATIONS[(i // 3) % len(DILATIONS)], pad, act, izp, ozp, "typ")
                i += 1
    # 2. Every stride x dilation x padding on one 9x9 input with a 3x3 kernel.
    for stride in STRIDES:
        for dil in DILATIONS:
            for pad in ["SAME", "VALID"]:
                act = ACTS[i % 4]
                izp, ozp = zero_points(i, act)
                _dw(fam, "dw_sd", (1, 9, 9, 3), 1 + i % 2, (3, 3), stride, dil, pad, act, izp, ozp, "typ")
                i += 1
    # 3. Quantization regimes x activations; depth multipliers 1-3; a few per-tensor filters.
    for regime in REGIMES:
        for act in ACTS:
            if regime == "zeromult" and act not in ("NONE", "RELU"):
                continue
            izp, ozp = zero_points(i, act)
            _dw(fam, "dwq", (1, 6, 5, 5), MULT[i % 3], (3, 3), (1, 1), (1, 1), "SAME", act, izp, ozp, regime)
            i += 1
    for regime in ["typ", "near1", "big"]:
        act = ACTS[i % 4]
        izp, ozp = zero_points(i, act)
        _dw(fam, "dwq", (1, 5, 6, 4), 2, (3, 3), (2, 2), (1, 1), "VALID", act, izp, ozp, regime, pc=False)
        i += 1
    # 4. Corner, no bias (documents the interpreter's rejection), batch > 1, realistic layers.
    _dw(fam, "dw_corner", (1, 4, 4, 3), 1, (3, 3), (1, 1), (1, 1), "SAME", "RELU", 0, 127, "typ")
    _dw(fam, "dw", (1, 6, 6, 4), 1, (3, 3), (1, 1), (1, 1), "SAME", "NONE", 3, -9, "typ", with_bias=False)
    _dw(fam, "dw", (2, 6, 6, 4), 2, (3, 3), (2, 2), (1, 1), "SAME", "RELU", -128, -128, "typ")
    _dw(fam, "dw_real", (1, 16, 16, 16), 1, (3, 3), (1, 1), (1, 1), "SAME", "RELU6", -128, -128, "typ")
    _dw(fam, "dw_real", (1, 16, 16, 8), 1, (3, 3), (2, 2), (1, 1), "SAME", "RELU", 2, -128, "near1")
    _dw(fam, "dw_real", (1, 25, 5, 64), 1, (3, 3), (1, 1), (1, 1), "SAME", "RELU", -128, -128, "typ")
    _dw(fam, "dw_real", (1, 12, 12, 32), 1, (3, 3), (1, 1), (1, 1), "SAME", "NONE", -7, 11, "spread")
    _dw(fam, "dw_real", (1, 10, 10, 8), 3, (5, 5), (1, 1), (1, 1), "SAME", "RELU6", 10, -128, "typ")
    return fam


def gen_16x8():
    fam = Family("depthwise_conv_2d_16x8.json", "DEPTHWISE_CONV_2D", "tests/gen/kernels/gen_depthwise.py",
                 "16x8: int16 activations (zero point 0), int8 weights per-channel on dimension 3, int64 bias")
    i = 0
    for hw in [(1, 1), (5, 5), (7, 4)]:
        for kern in [(1, 1), (3, 3), (2, 3)]:
            for pad in ["SAME", "VALID"]:
                _dw(fam, "dw16", (1, hw[0], hw[1], CIN[i % len(CIN)]), MULT[(i // 2) % 3], kern,
                    STRIDES[i % len(STRIDES)], DILATIONS[(i // 3) % len(DILATIONS)], pad, ACTS[i % 4], 0, 0,
                    "typ", act_dtype=np.int16)
                i += 1
    for regime in REGIMES:
        for act in ACTS:
            if regime == "zeromult" and act != "NONE":
                continue
            _dw(fam, "dw16q", (1, 5, 5, 3), MULT[i % 3], (3, 3), (1, 1), (1, 1), "SAME", act, 0, 0, regime,
                act_dtype=np.int16)
            i += 1
    _dw(fam, "dw16q", (1, 5, 5, 3), 2, (3, 3), (2, 2), (1, 1), "VALID", "NONE", 0, 0, "typ", pc=False,
        act_dtype=np.int16)
    _dw(fam, "dw16_real", (1, 12, 12, 16), 1, (3, 3), (1, 1), (1, 1), "SAME", "RELU", 0, 0, "typ",
        act_dtype=np.int16)
    return fam


GENERATORS = {"depthwise": gen_int8}
GENERATORS_16X8 = {"depthwise16x8": gen_16x8}
