"""MAX_POOL_2D and AVERAGE_POOL_2D goldens (int8): max_pool_2d.json, average_pool_2d.json.

Input and output share scale and zero point (the TFLite int8 spec for pooling). Padded positions
are left out (the average divides by the number of valid positions).
"""
import numpy as np

from common import (ACTIVATIONS, BO, OPT, PADDINGS, S, Family, ModelBuilder, case_rng, f32, output_scale_for,
                    tensor_json, uniform_int, zero_points)
from gen_conv import STRIDES, out_size

ACTS = list(ACTIVATIONS)
HWS = [(1, 1), (5, 5), (7, 4), (3, 8), (9, 9), (6, 6)]
FILTERS = [(1, 1), (2, 2), (3, 3), (2, 3), (3, 1)]
CHANNELS = [1, 3, 4, 8, 5, 16, 2, 7]


def pool_case(fam, code, prefix, in_shape, filt, stride, padding, act, zp, out_scale_zp=None, x_range=None):
    n, h, w, c = in_shape
    fh, fw = filt
    sh, sw = stride
    oh, ow = out_size(h, fh, sh, 1, padding), out_size(w, fw, sw, 1, padding)
    if oh <= 0 or ow <= 0:
        return False
    b = f"b{n}_" if n != 1 else ""
    extra = "" if out_scale_zp is None else "_diffq"
    name = (f"{prefix}_{b}{h}x{w}x{c}_f{fh}x{fw}_s{sh}x{sw}_{padding.lower()}_{act.lower()}_zp{zp}"
            f"{'_narrow' if x_range else ''}{extra}")
    rng = case_rng(name)
    scale = output_scale_for(act, rng)
    if x_range:
        x = uniform_int(rng, x_range[0], x_range[1], in_shape, np.int8)
    elif act == "NONE":
        x = uniform_int(rng, -128, 127, in_shape, np.int8)
    else:
        # Around the zero point, spread a bit wider than the clamp window, so the clamp binds
        # on some outputs and not on others.
        steps = {"RELU": 40.0, "RELU6": 6.0 / float(scale), "RELU_N1_TO_1": 1.0 / float(scale)}[act]
        x = np.clip(np.rint(zp + rng.normal(0.0, 1.2 * steps, in_shape)), -128, 127).astype(np.int8)
    o_scale, o_zp = (scale, zp) if out_scale_zp is None else out_scale_zp
    mb = ModelBuilder()
    ti = mb.tensor("input", in_shape, np.int8, [scale], [zp])
    to = mb.tensor("output", [n, oh, ow, c], np.int8, [o_scale], [o_zp])
    o = S.Pool2DOptionsT()
    o.padding = PADDINGS[padding]
    o.strideH, o.strideW = sh, sw
    o.filterHeight, o.filterWidth = fh, fw
    o.fusedActivationFunction = ACTIVATIONS[act]
    mb.operator(code, 2, [ti], [to], OPT.Pool2DOptions, o)
    model = mb.build([ti], [to])
    fields = {"input": tensor_json(x), "input_scale": f32(scale), "input_zero_point": zp,
              "output_scale": f32(o_scale), "output_zero_point": o_zp, "padding": padding,
              "stride_h": sh, "stride_w": sw, "filter_h": fh, "filter_w": fw, "activation": act}
    return fam.run(name, model, [x], fields)


def _gen(file, op, code, prefix):
    fam = Family(file, op, "tests/gen/kernels/gen_pool.py",
                 "int8; input and output share scale and zero point")
    i = 0
    # 1. Geometry: sizes x filters x padding; strides, channels, activations, zero points rotate.
    for hw in HWS:
        for filt in FILTERS:
            for pad in ["SAME", "VALID"]:
                act = ACTS[i % 4]
                zp = zero_points(i, act)[i % 2]
                if act in ("RELU", "RELU6") and zp > 64:
                    zp = -zp
                pool_case(fam, code, prefix, (1, hw[0], hw[1], CHANNELS[i % len(CHANNELS)]), filt,
                          STRIDES[i % len(STRIDES)], pad, act, zp)
                i += 1
    # 2. Every stride on one input, both paddings; filters larger than the input (SAME).
    for stride in STRIDES:
        for pad in ["SAME", "VALID"]:
            pool_case(fam, code, prefix + "_s", (1, 8, 7, 3), (3, 3), stride, pad, "NONE", [-128, 127, 0][i % 3])
            i += 1
    pool_case(fam, code, prefix, (1, 3, 3, 4), (5, 5), (1, 1), "SAME", "NONE", 10)
    pool_case(fam, code, prefix, (1, 4, 2, 3), (4, 4), (2, 2), "SAME", "RELU", -20)
    # 3. Activations that bind, narrow input ranges near the zero point (rounding of averages).
    for act in ACTS:
        for zp in [-128, 0, 127]:
            if act in ("RELU", "RELU6") and zp == 127:
                continue
            pool_case(fam, code, prefix + "_act", (1, 6, 6, 5), (3, 3), (2, 2), "SAME", act, zp)
    for zp in [-128, 0, 100]:
        pool_case(fam, code, prefix, (1, 7, 7, 6), (2, 3), (1, 2), "SAME", "NONE", zp,
                  x_range=(max(-128, zp - 2), min(127, zp + 2)))
    # 4. Batch > 1; the global pools of the MLPerf Tiny models (KWS 25x5x64, IC 8x8x64,
    #    VWW 3x3x256) and a 2x2 stride 2 pooling of a larger map.
    pool_case(fam, code, prefix, (2, 5, 5, 3), (2, 2), (2, 2), "VALID", "NONE", -3)
    pool_case(fam, code, prefix + "_real", (1, 25, 5, 64), (25, 5), (1, 1), "VALID", "NONE", -128)
    pool_case(fam, code, prefix + "_real", (1, 8, 8, 64), (8, 8), (8, 8), "VALID", "NONE", -128)
    pool_case(fam, code, prefix + "_real", (1, 3, 3, 256), (3, 3), (1, 1), "VALID", "NONE", -128)
    pool_case(fam, code, prefix + "_real", (1, 16, 16, 16), (2, 2), (2, 2), "VALID", "RELU", -128)
    # 5. Output qparams different from the input's (outside the spec): kept only if both oracles run
    #    it; both then ignore the difference (the kernels copy/average raw values).
    pool_case(fam, code, prefix, (1, 4, 4, 2), (2, 2), (2, 2), "VALID", "NONE", 3,
              out_scale_zp=(np.float32(0.05), -10))
    return fam


def gen_max():
    return _gen("max_pool_2d.json", "MAX_POOL_2D", BO.MAX_POOL_2D, "maxpool")


def gen_avg():
    return _gen("average_pool_2d.json", "AVERAGE_POOL_2D", BO.AVERAGE_POOL_2D, "avgpool")


GENERATORS = {"maxpool": gen_max, "avgpool": gen_avg}
