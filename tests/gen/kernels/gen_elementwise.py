"""ADD and MUL goldens: add.json, mul.json (int8) and add_16x8.json (int16, zero point 0).

Each input has its own scale and zero point; shapes broadcast NumPy-style (ranks up to 4). The
``mul_split_*`` cases (end of file) are found by a seeded search where TFLite Micro and the
interpreter's reference kernels differ.
"""
import numpy as np

from common import (ACTIVATIONS, BO, OPT, S, Family, ModelBuilder, case_rng, f32, fmt_num, mbqm_double, output_scale_for,
                    quantize_multiplier, run_both, split_rng, tensor_json, uniform_int)

ACTS = list(ACTIVATIONS)

# (shape1, shape2): equal shapes, scalars, channel broadcast, broadcast on both sides.
SHAPES = [
    ([1, 4, 4, 3], [1, 4, 4, 3]),
    ([2, 5], [2, 5]),
    ([7], [7]),
    ([1, 1, 1, 1], [1, 1, 1, 1]),
    ([1, 4, 4, 3], [1, 1, 1, 3]),
    ([1, 4, 4, 3], [1]),
    ([1], [3, 5]),
    ([2, 1, 3], [1, 4, 1]),
    ([1, 3, 1, 5], [2, 1, 4, 1]),
    ([4], [3, 4]),
    ([2, 3, 4, 5], [2, 3, 4, 5]),
    ([1, 5, 5, 8], [1, 5, 1, 8]),
]


def binary_model(code, shape1, shape2, s1, zp1, s2, zp2, out_s, out_zp, act, dtype=np.int8, version=2):
    out_shape = list(np.broadcast_shapes(tuple(shape1), tuple(shape2)))
    mb = ModelBuilder()
    t1 = mb.tensor("input1", shape1, dtype, [s1], [zp1])
    t2 = mb.tensor("input2", shape2, dtype, [s2], [zp2])
    to = mb.tensor("output", out_shape, dtype, [out_s], [out_zp])
    if code == BO.ADD:
        o = S.AddOptionsT()
        o.potScaleInt16 = False  # general scales for int16 (TFLite's 16x8 mode)
        otype = OPT.AddOptions
    else:
        o = S.MulOptionsT()
        otype = OPT.MulOptions
    o.fusedActivationFunction = ACTIVATIONS[act]
    mb.operator(code, version, [t1, t2], [to], otype, o)
    return mb.build([t1, t2], [to])


def binary_case(fam, code, name, shape1, shape2, s1, zp1, s2, zp2, out_s, out_zp, act, dtype=np.int8,
                ranges=None, version=2, data=None, must_differ=False):
    rng = case_rng(name)
    info = np.iinfo(dtype)
    r1, r2 = ranges if ranges else ((int(info.min), int(info.max)), (int(info.min), int(info.max)))
    if data is not None:
        x1, x2 = data
    else:
        x1 = uniform_int(rng, r1[0], r1[1], shape1, dtype)
        x2 = uniform_int(rng, r2[0], r2[1], shape2, dtype)
    model = binary_model(code, shape1, shape2, s1, zp1, s2, zp2, out_s, out_zp, act, dtype, version)
    fields = {"input1": tensor_json(x1), "input1_scale": f32(s1), "input1_zero_point": zp1,
              "input2": tensor_json(x2), "input2_scale": f32(s2), "input2_zero_point": zp2,
              "output_scale": f32(out_s), "output_zero_point": out_zp, "activation": act}
    return fam.run(name, model, [x1, x2], fields, must_differ=must_differ)


def _shape_str(s):
    return "x".join(str(d) for d in s)


def _act_zp(act, zp):
    return -128 if act in ("RELU", "RELU6") and zp > 64 else zp


# Input zero-point pairs: both extremes, mixed, centred.
IN_ZPS = [(-128, 127), (127, -128), (0, 0), (-128, -128), (127, 127), (-5, 17), (3, -100)]
# Real-valued input magnitude per activation, so RELU6 / RELU_N1_TO_1 clamps bind.
ACT_RANGE = {"NONE": (0.5, 20.0), "RELU": (0.5, 20.0), "RELU6": (3.0, 6.0), "RELU_N1_TO_1": (0.5, 1.0)}
REAL_ACT = {"NONE": lambda r: r, "RELU": lambda r: np.maximum(r, 0), "RELU6": lambda r: np.clip(r, 0, 6),
            "RELU_N1_TO_1": lambda r: np.clip(r, -1, 1)}


def calibrated_case(fam, code, name, sh1, sh2, zp1, zp2, act):
    """Inputs with the given zero points and scales from the activation's range; the output's scale
    and zero point calibrated on the real-valued result after the activation (min/max including 0,
    with a +-10 % margin so some outputs saturate), as a converter would: output zero points at the
    extremes come out of one-sided ranges (e.g. RELU -> -128)."""
    rng = case_rng(name + "/q")
    lo, hi = ACT_RANGE[act]
    mag = np.exp(rng.uniform(np.log(lo), np.log(hi)))
    if code == BO.MUL:
        mag = np.sqrt(mag)  # the product has magnitude mag^2
    r = np.exp(rng.uniform(np.log(0.3), np.log(3)))
    s1, s2 = np.float32(mag / 128 * np.sqrt(r)), np.float32(mag / 128 / np.sqrt(r))
    drng = case_rng(name)
    x1 = uniform_int(drng, -128, 127, sh1, np.int8)
    x2 = uniform_int(drng, -128, 127, sh2, np.int8)
    a = float(s1) * (x1.astype(np.float64) - zp1)
    b = float(s2) * (x2.astype(np.float64) - zp2)
    pre = a + b if code == BO.ADD else a * b
    if act in ("RELU", "RELU6") and pre.max() <= 0:
        return False  # every output would be the zero point: not worth a case
    real = REAL_ACT[act](pre)
    rmin, rmax = min(0.0, float(real.min())), max(0.0, float(real.max()))
    if rmax - rmin <= 0:
        rmax = 1.0
    out_s = np.float32((rmax - rmin) / 255.0 * rng.uniform(0.9, 1.1))
    ozp = int(np.clip(np.rint(-128 - rmin / float(out_s)), -128, 127))
    return binary_case(fam, code, name, sh1, sh2, s1, zp1, s2, zp2, out_s, ozp, act, data=(x1, x2))


def gen_add():
    fam = Family("add.json", "ADD", "tests/gen/kernels/gen_elementwise.py",
                 "int8, each input and the output with its own scale and zero point; broadcasting")
    i = 0
    # 1. Shapes (broadcasting) x activations; input zero points rotate through the extremes;
    #    output qparams calibrated on the result.
    for sh1, sh2 in SHAPES:
        for k in range(2):
            act = ACTS[i % 4]
            zp1, zp2 = IN_ZPS[i % len(IN_ZPS)]
            name = f"add_{_shape_str(sh1)}_{_shape_str(sh2)}_{act.lower()}_zp{zp1}_{zp2}_{k}"
            calibrated_case(fam, BO.ADD, name, sh1, sh2, zp1, zp2, act)
            i += 1
    # 2. Every activation with every input zero-point pair.
    for act in ACTS:
        for zp1, zp2 in IN_ZPS:
            calibrated_case(fam, BO.ADD, f"add_act_{act.lower()}_zp{zp1}_{zp2}", [2, 3, 7], [2, 3, 7], zp1, zp2, act)
    # 3. Explicit scale ratios: equal scales, one input 100x the other, output much finer or
    #    coarser than the inputs (shifts at both ends; saturation), tiny and large scales.
    ratios = [("equal", 0.05, 0.05, 0.05), ("eq_in_fine_out", 0.05, 0.05, 0.2),
              ("in1_x100", 0.5, 0.005, 0.5), ("in2_x100", 0.001, 0.1, 0.1),
              ("out_fine", 0.1, 0.08, 0.002), ("out_coarse", 0.01, 0.02, 1.5),
              ("tiny", 1e-5, 3e-5, 4e-5), ("large", 20.0, 7.0, 30.0), ("out_x1000", 0.01, 0.01, 10.0)]
    for tag, s1, s2, so in ratios:
        for zp1, zp2, ozp in [(0, 0, 0), (-128, 127, -3)]:
            name = f"add_scales_{tag}_zp{zp1}_{zp2}_{ozp}"
            binary_case(fam, BO.ADD, name, [1, 3, 4, 5], [1, 3, 4, 5], np.float32(s1), zp1, np.float32(s2), zp2,
                        np.float32(so), ozp, "NONE")
    # 4. A realistic residual add (IC ResNet-8 style) and a corner (RELU, output zero point 127).
    binary_case(fam, BO.ADD, "add_real_1x16x16x16_relu", [1, 16, 16, 16], [1, 16, 16, 16], np.float32(0.0712),
                -128, np.float32(0.0451), -3, np.float32(0.0853), -128, "RELU")
    binary_case(fam, BO.ADD, "add_corner_relu_ozp127", [1, 2, 2, 3], [1, 2, 2, 3], np.float32(0.1), 0,
                np.float32(0.1), 0, np.float32(0.1), 127, "RELU")
    return fam


def gen_mul():
    fam = Family("mul.json", "MUL", "tests/gen/kernels/gen_elementwise.py",
                 "int8, each input and the output with its own scale and zero point; broadcasting")
    i = 0
    for sh1, sh2 in SHAPES:
        for k in range(2):
            act = ACTS[i % 4]
            zp1, zp2 = IN_ZPS[i % len(IN_ZPS)]
            name = f"mul_{_shape_str(sh1)}_{_shape_str(sh2)}_{act.lower()}_zp{zp1}_{zp2}_{k}"
            calibrated_case(fam, BO.MUL, name, sh1, sh2, zp1, zp2, act)
            i += 1
    for act in ACTS:
        for zp1, zp2 in IN_ZPS:
            calibrated_case(fam, BO.MUL, f"mul_act_{act.lower()}_zp{zp1}_{zp2}", [2, 3, 7], [2, 3, 7], zp1, zp2, act)
    # Multiplier regimes: M = s1 * s2 / out from tiny to > 1 (op version 3 when >= 1).
    regimes = [("m_tiny", 1e-3, 2e-3, 0.5, None), ("m_small", 0.02, 0.03, 0.01, None),
               ("m_near1", 0.1, 0.1, 0.0125, ((-20, 20), (-20, 20))),
               ("m_ge1", 0.5, 0.4, 0.1, ((-6, 6), (-6, 6))), ("m_big", 2.0, 3.0, 0.05, ((-3, 3), (-3, 3))),
               ("m_zero", 1e-6, 1e-6, 10.0, None)]
    for tag, s1, s2, so, ranges in regimes:
        for zp1, zp2, ozp in [(0, 0, 0), (-128, 127, -5)]:
            if ranges and (zp1, zp2) != (0, 0):
                rr = ((max(-128, zp1 + ranges[0][0]), min(127, zp1 + ranges[0][1])),
                      (max(-128, zp2 + ranges[1][0]), min(127, zp2 + ranges[1][1])))
            else:
                rr = ranges
            m = float(np.float32(s1)) * float(np.float32(s2)) / float(np.float32(so))
            name = f"mul_{tag}_zp{zp1}_{zp2}_{ozp}"
            binary_case(fam, BO.MUL, name, [2, 3, 4, 5], [2, 3, 4, 5], np.float32(s1), zp1, np.float32(s2), zp2,
                        np.float32(so), ozp, "NONE", ranges=rr, version=3 if m >= 1 else 2)
    binary_case(fam, BO.MUL, "mul_real_1x8x8x32_by_channel", [1, 8, 8, 32], [1, 1, 1, 32], np.float32(0.03), -128,
                np.float32(0.004), 0, np.float32(0.02), -128, "NONE")
    _mul_splits(fam)
    return fam


# ---------------------------------------------------------------------------------------------
# MUL cases where TFLite Micro and the interpreter differ (``mul_split_*``), so the golden file
# tells the two rounding modes apart. TFLite Micro computes the multiplier s1 * s2 / s_out in
# double, the interpreter in float; the two Q31 multipliers differ by a few dozen units, which
# moves an output only when the product (x1 - zp1) * (x2 - zp2) lands next to a rounding step
# (e.g. 190 * 0.41184 = 78.25 in the given case: TFLM 78, the interpreter 79 through its double
# rounding 156.5 -> 157 -> 78.5 -> 79).
#
# The oracles decide: each scale triple is run on all 65,536 int8 pairs through both, and the case
# keeps the pairs where they differ (at most 24) and 8 where they agree. Which triples are worth
# that run is chosen by an integer emulation of the two multipliers (a prefilter, never an
# expected value). The search is seeded (``split_rng``), so deterministic.

MUL_SPLITS_GIVEN = [(0.107265994, 0, 0.064118, 0, 0.0166998, 0)]  # (s1, zp1, s2, zp2, s_out, zp_out)
MUL_SPLITS_SEARCHED = [("zp0", 2), ("zpany", 3)]  # (search, cases): zero points all 0, or uniform
MUL_SPLIT_MAX_RUNS = 200  # oracle runs the search may spend before giving up
_I8 = np.arange(-128, 128)


def _mul_grid(s1, zp1, s2, zp2, so, zpo):
    """Both oracles on every pair of int8 inputs: outputs [256, 256], or None if refused."""
    x1 = _I8.astype(np.int8).reshape(256, 1)
    x2 = _I8.astype(np.int8).reshape(1, 256)
    model = binary_model(BO.MUL, [256, 1], [1, 256], s1, zp1, s2, zp2, so, zpo, "NONE")
    return run_both(model, [x1, x2])


def _mul_multipliers_part(s1, zp1, s2, zp2, so, zpo):
    """Prefilter: do the double (TFLM) and float (interpreter) multipliers give different outputs
    for some product of this quantization?"""
    qd = quantize_multiplier(float(s1) * float(s2) / float(so))
    qs = quantize_multiplier(float(s1 * s2 / so))
    if qd == qs:
        return False
    p = np.outer(_I8 - zp1, _I8 - zp2)
    yd = np.clip(zpo + mbqm_double(p, *qd), -128, 127)
    ys = np.clip(zpo + mbqm_double(p, *qs), -128, 127)
    return bool((yd != ys).any())


def _mul_split_case(fam, s1, zp1, s2, zp2, so, zpo, grid):
    a, b = grid
    name = f"mul_split_s{fmt_num(s1)}_{fmt_num(s2)}_out{fmt_num(so)}_zp{zp1}_{zp2}_{zpo}"
    rng = case_rng(name)
    differ = np.argwhere(a != b)
    agree = np.argwhere(a == b)
    if len(differ) > 24:
        differ = differ[np.sort(rng.choice(len(differ), 24, replace=False))]
    pairs = np.concatenate([differ, agree[rng.choice(len(agree), 8, replace=False)]])
    pairs = pairs[rng.permutation(len(pairs))]
    x1 = _I8[pairs[:, 0]].astype(np.int8)
    x2 = _I8[pairs[:, 1]].astype(np.int8)
    n = len(pairs)
    binary_case(fam, BO.MUL, name, [n], [n], s1, zp1, s2, zp2, so, zpo, "NONE", data=(x1, x2), must_differ=True)
    return name


def _mul_splits(fam):
    for s1, zp1, s2, zp2, so, zpo in MUL_SPLITS_GIVEN:
        s1, s2, so = np.float32(s1), np.float32(s2), np.float32(so)
        _mul_split_case(fam, s1, zp1, s2, zp2, so, zpo, _mul_grid(s1, zp1, s2, zp2, so, zpo))
    for tag, wanted in MUL_SPLITS_SEARCHED:
        rng = split_rng("mul/" + tag)
        found = runs = 0
        while found < wanted:
            s1, s2 = np.exp(rng.uniform(np.log(0.005), np.log(0.5), 2)).astype(np.float32)
            m = np.exp(rng.uniform(np.log(0.02), np.log(1.0)))
            so = np.float32(float(s1) * float(s2) / m)
            zp1, zp2, zpo = (0, 0, 0) if tag == "zp0" else (int(z) for z in rng.integers(-128, 128, 3))
            if not _mul_multipliers_part(s1, zp1, s2, zp2, so, zpo):
                continue
            runs += 1
            if runs > MUL_SPLIT_MAX_RUNS:
                raise SystemExit(f"mul/{tag}: found {found} of {wanted} splitting triples in {runs - 1} runs")
            grid = _mul_grid(s1, zp1, s2, zp2, so, zpo)
            if grid is None or np.array_equal(*grid):
                continue
            _mul_split_case(fam, s1, zp1, s2, zp2, so, zpo, grid)
            found += 1


def gen_add_16x8():
    fam = Family("add_16x8.json", "ADD", "tests/gen/kernels/gen_elementwise.py",
                 "int16 activations with zero point 0, general scales (pot_scale_int16 = false)")
    i = 0
    for sh1, sh2 in SHAPES:
        act = ACTS[i % 4]
        rng = case_rng(f"add16-scales-{i}")
        out_s = output_scale_for(act, rng, np.int16)
        s1 = np.float32(out_s * np.exp(rng.uniform(np.log(0.3), np.log(3))))
        s2 = np.float32(out_s * np.exp(rng.uniform(np.log(0.3), np.log(3))))
        name = f"add16_{_shape_str(sh1)}_{_shape_str(sh2)}_{act.lower()}"
        binary_case(fam, BO.ADD, name, sh1, sh2, s1, 0, s2, 0, out_s, 0, act, dtype=np.int16, version=3)
        i += 1
    ratios = [("equal", 1e-3, 1e-3, 1e-3), ("in1_x100", 1e-2, 1e-4, 1e-2), ("out_fine", 1e-3, 8e-4, 2e-5),
              ("out_coarse", 1e-4, 2e-4, 1e-2), ("pot", 2.0 ** -10, 2.0 ** -12, 2.0 ** -9),
              ("tiny", 1e-7, 3e-7, 4e-7), ("large", 2.0, 0.7, 3.0)]
    for tag, s1, s2, so in ratios:
        for act in ["NONE", "RELU"] if tag in ("equal", "out_fine") else ["NONE"]:
            binary_case(fam, BO.ADD, f"add16_scales_{tag}_{act.lower()}", [1, 3, 4, 5], [1, 3, 4, 5], np.float32(s1),
                        0, np.float32(s2), 0, np.float32(so), 0, act, dtype=np.int16, version=3)
    for act in ACTS:
        rng = case_rng(f"add16-act-{act}")
        out_s = output_scale_for(act, rng, np.int16)
        binary_case(fam, BO.ADD, f"add16_act_{act.lower()}", [2, 3, 7], [2, 3, 7], np.float32(out_s * 0.8), 0,
                    np.float32(out_s * 1.3), 0, out_s, 0, act, dtype=np.int16, version=3)
    return fam


GENERATORS = {"add": gen_add, "mul": gen_mul}
GENERATORS_16X8 = {"add16x8": gen_add_16x8}
