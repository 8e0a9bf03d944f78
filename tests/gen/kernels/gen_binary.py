"""Two-input elementwise goldens beyond ADD / MUL: sub.json (int8), sub_16x8.json (int16, zero point
0, general scales), minimum.json / maximum.json (int8 and int16), prelu.json (int8), prelu_16x8.json
(int16 input and output, int8 alpha), div.json (int8),
squared_difference.json (int8).

    .venv/bin/python tests/gen/kernels/gen_all.py sub sub16x8 minimum maximum prelu prelu16x8 div squared_difference
    .venv/bin/python tests/gen/kernels/gen_binary.py models   # tests/golden/tflite_import/binary_ops.json

SUB: each input and the output with its own scale and zero point; shapes broadcast NumPy-style
(the shapes of gen_elementwise.py). The oracles agree on every case (the files' stats); the
``sub_scales_tiny`` cases tell apart multipliers computed in double (what they run) from the
float quotients that some tflite-micro sources write.

MINIMUM / MAXIMUM: TFLite compares the stored integers (no rescaling), which is the real-valued
min / max only when the inputs and the output share one quantization; the cases use shared
parameters, as the converter writes them.
"""
import numpy as np

from common import (ACTIVATIONS, BO, OPT, S, Family, ModelBuilder, case_rng, f32, output_scale_for,
                    quantize_multiplier, tensor_json, uniform_int)
from gen_elementwise import ACT_RANGE, ACTS, IN_ZPS, REAL_ACT, SHAPES, _shape_str


def sub_model(shape1, shape2, s1, zp1, s2, zp2, out_s, out_zp, act, dtype=np.int8):
    out_shape = list(np.broadcast_shapes(tuple(shape1), tuple(shape2)))
    mb = ModelBuilder()
    t1 = mb.tensor("input1", shape1, dtype, [s1], [zp1])
    t2 = mb.tensor("input2", shape2, dtype, [s2], [zp2])
    to = mb.tensor("output", out_shape, dtype, [out_s], [out_zp])
    o = S.SubOptionsT()
    o.fusedActivationFunction = ACTIVATIONS[act]
    o.potScaleInt16 = False  # general scales for int16 (TFLite's 16x8 mode)
    version = 2 if dtype == np.int8 else 3
    mb.operator(BO.SUB, version, [t1, t2], [to], OPT.SubOptions, o)
    return mb.build([t1, t2], [to])


def sub_case(fam, name, shape1, shape2, s1, zp1, s2, zp2, out_s, out_zp, act, dtype=np.int8, data=None,
             must_differ=False):
    rng = case_rng(name)
    info = np.iinfo(dtype)
    if data is not None:
        x1, x2 = data
    else:
        x1 = uniform_int(rng, int(info.min), int(info.max), shape1, dtype)
        x2 = uniform_int(rng, int(info.min), int(info.max), shape2, dtype)
    model = sub_model(shape1, shape2, s1, zp1, s2, zp2, out_s, out_zp, act, dtype)
    fields = {"input1": tensor_json(x1), "input1_scale": f32(s1), "input1_zero_point": zp1,
              "input2": tensor_json(x2), "input2_scale": f32(s2), "input2_zero_point": zp2,
              "output_scale": f32(out_s), "output_zero_point": out_zp, "activation": act}
    return fam.run(name, model, [x1, x2], fields, must_differ=must_differ)


def sub_calibrated_case(fam, name, sh1, sh2, zp1, zp2, act):
    """As gen_elementwise.calibrated_case for ADD: input scales from the activation's range, the
    output's scale and zero point calibrated on the real-valued difference after the activation."""
    rng = case_rng(name + "/q")
    lo, hi = ACT_RANGE[act]
    mag = np.exp(rng.uniform(np.log(lo), np.log(hi)))
    r = np.exp(rng.uniform(np.log(0.3), np.log(3)))
    s1, s2 = np.float32(mag / 128 * np.sqrt(r)), np.float32(mag / 128 / np.sqrt(r))
    drng = case_rng(name)
    x1 = uniform_int(drng, -128, 127, sh1, np.int8)
    x2 = uniform_int(drng, -128, 127, sh2, np.int8)
    pre = float(s1) * (x1.astype(np.float64) - zp1) - float(s2) * (x2.astype(np.float64) - zp2)
    if act in ("RELU", "RELU6") and pre.max() <= 0:
        return False
    real = REAL_ACT[act](pre)
    rmin, rmax = min(0.0, float(real.min())), max(0.0, float(real.max()))
    if rmax - rmin <= 0:
        rmax = 1.0
    out_s = np.float32((rmax - rmin) / 255.0 * rng.uniform(0.9, 1.1))
    ozp = int(np.clip(np.rint(-128 - rmin / float(out_s)), -128, 127))
    return sub_case(fam, name, sh1, sh2, s1, zp1, s2, zp2, out_s, ozp, act, data=(x1, x2))


def gen_sub():
    fam = Family("sub.json", "SUB", "tests/gen/kernels/gen_binary.py",
                 "int8, each input and the output with its own scale and zero point; broadcasting")
    i = 0
    for sh1, sh2 in SHAPES:
        act = ACTS[i % 4]
        zp1, zp2 = IN_ZPS[i % len(IN_ZPS)]
        sub_calibrated_case(fam, f"sub_{_shape_str(sh1)}_{_shape_str(sh2)}_{act.lower()}_zp{zp1}_{zp2}", sh1, sh2,
                            zp1, zp2, act)
        i += 1
    for act in ACTS:
        for zp1, zp2 in IN_ZPS[:4]:
            sub_calibrated_case(fam, f"sub_act_{act.lower()}_zp{zp1}_{zp2}", [2, 3, 7], [2, 3, 7], zp1, zp2, act)
    ratios = [("equal", 0.05, 0.05, 0.05), ("in1_x100", 0.5, 0.005, 0.5), ("in2_x100", 0.001, 0.1, 0.1),
              ("out_fine", 0.1, 0.08, 0.002), ("out_coarse", 0.01, 0.02, 1.5), ("tiny", 1e-5, 3e-5, 4e-5),
              ("large", 20.0, 7.0, 30.0)]
    for tag, s1, s2, so in ratios:
        for zp1, zp2, ozp in [(0, 0, 0), (-128, 127, -3)]:
            sub_case(fam, f"sub_scales_{tag}_zp{zp1}_{zp2}_{ozp}", [1, 3, 4, 5], [1, 3, 4, 5], np.float32(s1), zp1,
                     np.float32(s2), zp2, np.float32(so), ozp, "NONE")
    return fam


def gen_sub_16x8():
    fam = Family("sub_16x8.json", "SUB", "tests/gen/kernels/gen_binary.py",
                 "int16 activations with zero point 0, general scales (pot_scale_int16 = false)")
    for i, (sh1, sh2) in enumerate(SHAPES[:8]):
        act = ACTS[i % 4]
        rng = case_rng(f"sub16-scales-{i}")
        out_s = output_scale_for(act, rng, np.int16)
        s1 = np.float32(out_s * np.exp(rng.uniform(np.log(0.3), np.log(3))))
        s2 = np.float32(out_s * np.exp(rng.uniform(np.log(0.3), np.log(3))))
        sub_case(fam, f"sub16_{_shape_str(sh1)}_{_shape_str(sh2)}_{act.lower()}", sh1, sh2, s1, 0, s2, 0, out_s, 0,
                 act, dtype=np.int16)
    ratios = [("equal", 1e-3, 1e-3, 1e-3), ("in1_x100", 1e-2, 1e-4, 1e-2), ("out_fine", 1e-3, 8e-4, 2e-5),
              ("out_coarse", 1e-4, 2e-4, 1e-2), ("large", 2.0, 0.7, 3.0)]
    for tag, s1, s2, so in ratios:
        sub_case(fam, f"sub16_scales_{tag}", [1, 3, 4, 5], [1, 3, 4, 5], np.float32(s1), 0, np.float32(s2), 0,
                 np.float32(so), 0, "NONE", dtype=np.int16)
    return fam


# ---------------------------------------------------------------------------------------------
# MINIMUM / MAXIMUM


def minmax_model(code, shape1, shape2, s, zp, dtype):
    out_shape = list(np.broadcast_shapes(tuple(shape1), tuple(shape2)))
    mb = ModelBuilder()
    t1 = mb.tensor("input1", shape1, dtype, [s], [zp])
    t2 = mb.tensor("input2", shape2, dtype, [s], [zp])
    to = mb.tensor("output", out_shape, dtype, [s], [zp])
    o = S.MaximumMinimumOptionsT()
    mb.operator(code, 2 if dtype == np.int8 else 4, [t1, t2], [to], OPT.MaximumMinimumOptions, o)
    return mb.build([t1, t2], [to])


def minmax_family(op, code):
    fam = Family(f"{op}.json", op.upper(), "tests/gen/kernels/gen_binary.py",
                 "int8 and int16; inputs and output share one scale and zero point; broadcasting")
    for dtype, tag, zps in ((np.int8, "s8", (-128, 0, 37, 127)), (np.int16, "s16", (0,))):
        for i, (sh1, sh2) in enumerate(SHAPES[:10]):
            zp = zps[i % len(zps)]
            s = np.float32(0.02 if dtype == np.int8 else 1e-4)
            name = f"{op}_{tag}_{_shape_str(sh1)}_{_shape_str(sh2)}_zp{zp}"
            rng = case_rng(name)
            info = np.iinfo(dtype)
            x1 = uniform_int(rng, int(info.min), int(info.max), sh1, dtype)
            x2 = uniform_int(rng, int(info.min), int(info.max), sh2, dtype)
            fields = {"input1": tensor_json(x1), "input1_scale": f32(s), "input1_zero_point": zp,
                      "input2": tensor_json(x2), "input2_scale": f32(s), "input2_zero_point": zp,
                      "output_scale": f32(s), "output_zero_point": zp, "activation": "NONE"}
            fam.run(name, minmax_model(code, sh1, sh2, s, zp, dtype), [x1, x2], fields)
    return fam


def gen_minimum():
    return minmax_family("minimum", BO.MINIMUM)


def gen_maximum():
    return minmax_family("maximum", BO.MAXIMUM)


# ---------------------------------------------------------------------------------------------
# PRELU: input (int8 or int16) and a constant alpha (int8), each with its own scale and zero point;
# alpha broadcasts against the input (per channel, as converters write it, or any NumPy shape).

PRELU_SHAPES = [([1, 4, 4, 3], [3]), ([1, 4, 4, 3], [1, 1, 3]), ([1, 5, 5, 8], [1, 1, 1, 8]), ([2, 7], [7]),
                ([1, 3, 4, 5], [1, 3, 4, 5]), ([6], [1]), ([1, 2, 3, 4], [2, 1, 4])]


def prelu_model(shape, alpha, s_in, zp_in, s_a, zp_a, s_out, zp_out, dtype):
    out_shape = list(np.broadcast_shapes(tuple(shape), alpha.shape))
    mb = ModelBuilder()
    t1 = mb.tensor("input", shape, dtype, [s_in], [zp_in])
    t2 = mb.tensor("alpha", list(alpha.shape), np.int8, [s_a], [zp_a], data=alpha)
    to = mb.tensor("output", out_shape, dtype, [s_out], [zp_out])
    mb.operator(BO.PRELU, 1, [t1, t2], [to])
    return mb.build([t1], [to])


def prelu_case(fam, name, shape, ashape, s_in, zp_in, s_a, zp_a, s_out, zp_out, dtype=np.int8, alpha_range=None):
    rng = case_rng(name)
    info = np.iinfo(dtype)
    x = uniform_int(rng, int(info.min), int(info.max), shape, dtype)
    lo, hi = alpha_range if alpha_range else (-128, 127)
    alpha = uniform_int(rng, lo, hi, ashape, np.int8)
    model = prelu_model(shape, alpha, s_in, zp_in, s_a, zp_a, s_out, zp_out, dtype)
    fields = {"input1": tensor_json(x), "input1_scale": f32(s_in), "input1_zero_point": zp_in,
              "input2": tensor_json(alpha), "input2_scale": f32(s_a), "input2_zero_point": zp_a,
              "output_scale": f32(s_out), "output_zero_point": zp_out, "activation": "NONE"}
    return fam.run(name, model, [x], fields)


def gen_prelu():
    fam = Family("prelu.json", "PRELU", "tests/gen/kernels/gen_binary.py",
                 "int8 input and output, int8 constant alpha, each with its own scale and zero point; broadcasting")
    zps = [(0, 0, 0), (-128, 0, -20), (17, -5, 3), (127, 100, -128), (-3, -128, 40)]
    for i, (sh, ash) in enumerate(PRELU_SHAPES):
        zp_in, zp_a, zp_out = zps[i % len(zps)]
        rng = case_rng(f"prelu-scales-{i}")
        s_in = np.float32(np.exp(rng.uniform(np.log(0.01), np.log(0.2))))
        s_a = np.float32(np.exp(rng.uniform(np.log(0.001), np.log(0.01))))
        s_out = np.float32(s_in * np.exp(rng.uniform(np.log(0.5), np.log(1.5))))
        prelu_case(fam, f"prelu_{_shape_str(sh)}_{_shape_str(ash)}_zp{zp_in}_{zp_a}_{zp_out}", sh, ash, s_in, zp_in,
                   s_a, zp_a, s_out, zp_out)
    # Multiplier regimes: output much finer / coarser than the input (shifts > 0 and < 0 for
    # both the identity and the alpha branch); alpha magnitudes above 1 (a learned slope can be).
    regimes = [("out_fine", 0.1, 0.01, 0.01), ("out_coarse", 0.01, 0.005, 0.5), ("alpha_big", 0.05, 0.05, 0.1),
               ("alpha_tiny", 0.05, 1e-5, 0.05), ("equal", 0.02, 0.02, 0.02)]
    for tag, s_in, s_a, s_out in regimes:
        for zp_in, zp_a, zp_out in [(0, 0, 0), (-128, 7, -100)]:
            prelu_case(fam, f"prelu_{tag}_zp{zp_in}_{zp_a}_{zp_out}", [1, 3, 4, 5], [5], np.float32(s_in), zp_in,
                       np.float32(s_a), zp_a, np.float32(s_out), zp_out)
    return fam


def gen_prelu_16x8():
    fam = Family("prelu_16x8.json", "PRELU", "tests/gen/kernels/gen_binary.py",
                 "int16 input and output (zero point 0), int8 constant alpha; broadcasting")
    for i, (sh, ash) in enumerate(PRELU_SHAPES):
        rng = case_rng(f"prelu16-scales-{i}")
        s_in = np.float32(np.exp(rng.uniform(np.log(1e-4), np.log(1e-3))))
        s_a = np.float32(np.exp(rng.uniform(np.log(0.001), np.log(0.01))))
        s_out = np.float32(s_in * np.exp(rng.uniform(np.log(0.5), np.log(1.5))))
        zp_a = [0, -10, 100][i % 3]
        prelu_case(fam, f"prelu16_{_shape_str(sh)}_{_shape_str(ash)}_azp{zp_a}", sh, ash, s_in, 0, s_a, zp_a, s_out,
                   0, dtype=np.int16)
    return fam


# ---------------------------------------------------------------------------------------------
# DIV (int8): TFLite Micro's reference_ops::Div: a Newton reciprocal of the divisor (GetReciprocal),
# normalised by the dividend's headroom, then a rounding shift by
# headroom(a) + recip_bits(b) - output_shift. That shift is undefined in C++ beyond 31 (it happens
# for dividends near 0 over large divisors: the exact quotient rounds to 0, x86 TFLM returns
# garbage), and a divisor equal to its zero point divides by zero (the interpreter refuses it):
# the cases keep clear of both. ``_div_defined`` (integer emulation of the shift only) picks the
# inputs; every expected value comes from the oracles. The interpreter's reference kernel differs
# from TFLite Micro by one step where a quotient lands on a rounding tie (its multiplier is
# computed in float, TFLite Micro's in double: the file's stats).

def div_model(shape1, shape2, s1, zp1, s2, zp2, so, zpo, act):
    out_shape = list(np.broadcast_shapes(tuple(shape1), tuple(shape2)))
    mb = ModelBuilder()
    t1 = mb.tensor("input1", shape1, np.int8, [s1], [zp1])
    t2 = mb.tensor("input2", shape2, np.int8, [s2], [zp2])
    to = mb.tensor("output", out_shape, np.int8, [so], [zpo])
    o = S.DivOptionsT()
    o.fusedActivationFunction = ACTIVATIONS[act]
    mb.operator(BO.DIV, 2, [t1, t2], [to], OPT.DivOptions, o)
    return mb.build([t1, t2], [to])


def _clrsb(v):
    v = int(v)
    return 31 - (~v if v < 0 else v).bit_length()


def _div_defined(x1, x2, zp1, zp2, shift):
    a = x1.astype(np.int64) - zp1
    b = x2.astype(np.int64) - zp2
    a, b = np.where(b < 0, -a, a), np.abs(b)
    hr = np.vectorize(_clrsb)(a)
    recip = np.vectorize(lambda v: int(v).bit_length() - 1)(b)
    return (b != 0) & (hr + recip - shift <= 31)


def div_case(fam, name, sh1, sh2, s1, zp1, s2, zp2, so, zpo, act):
    rng = case_rng(name)
    out_shape = list(np.broadcast_shapes(tuple(sh1), tuple(sh2)))
    assert list(sh1) == out_shape, name  # dividends are moved out of the undefined region
    x1 = uniform_int(rng, -128, 127, sh1, np.int8)
    x2 = uniform_int(rng, -128, 127, sh2, np.int8)
    x2 = np.where(x2 == zp2, np.int8(zp2 + 1 if zp2 < 127 else zp2 - 1), x2).astype(np.int8)
    _, shift = quantize_multiplier(float(np.float32(s1 / (s2 * so))))
    ok = _div_defined(x1, np.broadcast_to(x2, out_shape), zp1, zp2, shift)
    far = np.int8(zp1 - 100 if zp1 >= -28 else zp1 + 100)
    x1 = np.where(ok, x1, far).astype(np.int8)
    assert _div_defined(x1, np.broadcast_to(x2, out_shape), zp1, zp2, shift).all(), name
    model = div_model(sh1, sh2, s1, zp1, s2, zp2, so, zpo, act)
    fields = {"input1": tensor_json(x1), "input1_scale": f32(s1), "input1_zero_point": zp1,
              "input2": tensor_json(x2), "input2_scale": f32(s2), "input2_zero_point": zp2,
              "output_scale": f32(so), "output_zero_point": zpo, "activation": act}
    return fam.run(name, model, [x1, x2], fields)


def gen_div():
    fam = Family("div.json", "DIV", "tests/gen/kernels/gen_binary.py",
                 "int8, each input and the output with its own scale and zero point; broadcasting; inputs "
                 "clear of zero divisors and of TFLite Micro's undefined shifts (see gen_binary.py)")
    shapes = [([1, 4, 4, 3], [1, 4, 4, 3]), ([2, 5], [2, 5]), ([1, 4, 4, 3], [1, 1, 1, 3]), ([1, 4, 4, 3], [1]),
              ([2, 3, 4], [3, 1]), ([2, 3, 4, 5], [2, 3, 4, 5])]
    zps = [(0, 0, 0), (-128, -128, -128), (5, -100, 20), (127, 30, -7), (-20, 0, 100), (60, -128, 0)]
    # (s1, s2, s_out): quotient multipliers s1 / (s2 s_out) from 1 to 10^4 (LayerNorm-like:
    # a centred value over a positive spread), all >= 1 so that moved dividends stay defined.
    scales = [(0.05, 0.02, 0.1), (0.02, 0.01, 0.05), (0.1, 0.004, 0.2), (0.03, 0.05, 0.01), (0.2, 0.001, 1.5),
              (0.01, 0.01, 0.02)]
    for i, (sh1, sh2) in enumerate(shapes):
        for k in range(2):
            j = (2 * i + k) % len(scales)
            s1, s2, so = (np.float32(v) for v in scales[j])
            zp1, zp2, zpo = zps[(i + k) % len(zps)]
            act = ACTS[(i + k) % 4]
            if act in ("RELU", "RELU6") and zpo > 64:
                zpo = -128
            div_case(fam, f"div_{_shape_str(sh1)}_{_shape_str(sh2)}_{act.lower()}_{j}_zp{zp1}_{zp2}_{zpo}", sh1, sh2,
                     s1, zp1, s2, zp2, so, zpo, act)
    return fam


# ---------------------------------------------------------------------------------------------
# SQUARED_DIFFERENCE (int8; TensorFlow writes it inside LayerNorm / variance computations). The
# int16 kernel of TFLite Micro squares a difference of up to 65535 in int32 (it overflows), so
# only int8 is covered.

def sqdiff_model(shape1, shape2, s1, zp1, s2, zp2, so, zpo):
    out_shape = list(np.broadcast_shapes(tuple(shape1), tuple(shape2)))
    mb = ModelBuilder()
    t1 = mb.tensor("input1", shape1, np.int8, [s1], [zp1])
    t2 = mb.tensor("input2", shape2, np.int8, [s2], [zp2])
    to = mb.tensor("output", out_shape, np.int8, [so], [zpo])
    mb.operator(BO.SQUARED_DIFFERENCE, 2, [t1, t2], [to], OPT.SquaredDifferenceOptions, S.SquaredDifferenceOptionsT())
    return mb.build([t1, t2], [to])


def gen_squared_difference():
    fam = Family("squared_difference.json", "SQUARED_DIFFERENCE", "tests/gen/kernels/gen_binary.py",
                 "int8, each input and the output with its own scale and zero point; broadcasting")
    for i, (sh1, sh2) in enumerate(SHAPES):
        zp1, zp2 = IN_ZPS[i % len(IN_ZPS)]
        name = f"sqdiff_{_shape_str(sh1)}_{_shape_str(sh2)}_zp{zp1}_{zp2}"
        rng = case_rng(name + "/q")
        s1 = np.float32(np.exp(rng.uniform(np.log(0.005), np.log(0.1))))
        s2 = np.float32(s1 * np.exp(rng.uniform(np.log(0.3), np.log(3))))
        drng = case_rng(name)
        x1 = uniform_int(drng, -128, 127, sh1, np.int8)
        x2 = uniform_int(drng, -128, 127, sh2, np.int8)
        d = float(s1) * (x1.astype(np.float64) - zp1) - float(s2) * (x2.astype(np.float64) - zp2)
        hi = float((d * d).max()) * rng.uniform(0.6, 1.1)  # some outputs saturate
        so = np.float32(max(hi, 1e-6) / 255.0)
        fields = {"input1": tensor_json(x1), "input1_scale": f32(s1), "input1_zero_point": zp1,
                  "input2": tensor_json(x2), "input2_scale": f32(s2), "input2_zero_point": zp2,
                  "output_scale": f32(so), "output_zero_point": -128, "activation": "NONE"}
        fam.run(name, sqdiff_model(sh1, sh2, s1, zp1, s2, zp2, so, -128), [x1, x2], fields)
    for tag, s1, s2, so, zpo in [("equal", 0.02, 0.02, 0.01, -128), ("fine_out", 0.05, 0.01, 1e-4, -128),
                                 ("coarse_out", 0.01, 0.02, 2.0, 0), ("x100", 0.5, 0.005, 1.0, -100)]:
        name = f"sqdiff_scales_{tag}"
        drng = case_rng(name)
        x1 = uniform_int(drng, -128, 127, [2, 3, 7], np.int8)
        x2 = uniform_int(drng, -128, 127, [2, 3, 7], np.int8)
        s1, s2, so = np.float32(s1), np.float32(s2), np.float32(so)
        fields = {"input1": tensor_json(x1), "input1_scale": f32(s1), "input1_zero_point": 3,
                  "input2": tensor_json(x2), "input2_scale": f32(s2), "input2_zero_point": -9,
                  "output_scale": f32(so), "output_zero_point": zpo, "activation": "NONE"}
        fam.run(name, sqdiff_model([2, 3, 7], [2, 3, 7], s1, 3, s2, -9, so, zpo), [x1, x2], fields)
    return fam


GENERATORS = {"sub": gen_sub, "minimum": gen_minimum, "maximum": gen_maximum, "prelu": gen_prelu, "div": gen_div,
              "squared_difference": gen_squared_difference}
GENERATORS_16X8 = {"sub16x8": gen_sub_16x8, "prelu16x8": gen_prelu_16x8}


# ---------------------------------------------------------------------------------------------
# Whole models for the TFLite importer (tests/host/binary_ops.rs): a few of the cases above as
# .tflite files, with TFLite Micro's outputs, in tests/golden/tflite_import/binary_ops.json
# (the model bytes as a uint8 tensor). Written by ``gen_binary.py models``.

def tflite_models():
    from common import run_tflm
    import goldenio
    out = []
    rng = case_rng("binary-tflite-models")
    specs = [
        ("sub_s8_broadcast_relu", sub_model([1, 4, 4, 3], [1, 1, 1, 3], np.float32(0.05), -3, np.float32(0.02), 7,
                                            np.float32(0.04), -128, "RELU"), np.int8, ([1, 4, 4, 3], [1, 1, 1, 3])),
        ("sub_s16", sub_model([2, 5], [2, 5], np.float32(3e-4), 0, np.float32(1e-4), 0, np.float32(4e-4), 0, "NONE",
                              dtype=np.int16), np.int16, ([2, 5], [2, 5])),
        ("minimum_s8", minmax_model(BO.MINIMUM, [2, 3, 4], [3, 1], np.float32(0.02), 5, np.int8), np.int8,
         ([2, 3, 4], [3, 1])),
        ("maximum_s16", minmax_model(BO.MAXIMUM, [1, 6], [1, 6], np.float32(1e-4), 0, np.int16), np.int16,
         ([1, 6], [1, 6])),
    ]
    alpha = uniform_int(rng, -128, 127, [1, 1, 3], np.int8)
    specs.append(("prelu_s8", prelu_model([1, 2, 2, 3], alpha, np.float32(0.05), 4, np.float32(0.004), -2,
                                          np.float32(0.04), -10, np.int8), np.int8, ([1, 2, 2, 3],)))
    specs.append(("div_s8_broadcast_relu", div_model([1, 2, 2, 3], [3], np.float32(0.05), 3, np.float32(0.02), -128,
                                                     np.float32(0.1), -128, "RELU"), np.int8, ([1, 2, 2, 3], [3])))
    specs.append(("squared_difference_s8", sqdiff_model([2, 3, 4], [3, 1], np.float32(0.03), 5, np.float32(0.05), -9,
                                                        np.float32(0.04), -128), np.int8, ([2, 3, 4], [3, 1])))
    alpha = uniform_int(rng, -128, 127, [5], np.int8)
    specs.append(("prelu_s16", prelu_model([2, 5], alpha, np.float32(3e-4), 0, np.float32(0.01), 3,
                                           np.float32(2e-4), 0, np.int16), np.int16, ([2, 5],)))
    for name, model, dtype, shapes in specs:
        info = np.iinfo(dtype)
        xs = [uniform_int(rng, int(info.min), int(info.max), s, dtype) for s in shapes]
        if name.startswith("div"):
            # Divisors above their zero point (-128) by 64 or more, dividends far from theirs:
            # clear of zero divisors and of TFLite Micro's undefined shifts (see DIV above).
            xs = [np.clip(xs[0], 40, 127).astype(np.int8), np.clip(xs[1], -64, 127).astype(np.int8)]
        y = run_tflm(model, xs)
        out.append({"name": name, "model": goldenio.tensor(np.frombuffer(model, np.uint8)),
                    "inputs": [goldenio.tensor(x) for x in xs], "expected_tflm": goldenio.tensor(y)})
    return out


if __name__ == "__main__":
    import sys
    import goldenio
    from common import GOLDEN, check_versions, tool_versions
    if sys.argv[1:] != ["models"]:
        raise SystemExit("usage: gen_binary.py models   (the kernel goldens: gen_all.py sub sub16x8 minimum maximum)")
    check_versions()
    doc = {"generator": "tests/gen/kernels/gen_binary.py models", "tools": tool_versions(), "models": tflite_models()}
    goldenio.write(GOLDEN.parent / "tflite_import" / "binary_ops.json", doc)
