"""FULLY_CONNECTED goldens: int8 (fully_connected.json) and 16x8 (fully_connected_16x8.json).

Weights [out, in] symmetric int8, per-tensor or per-channel (quantized_dimension 0); bias int32
(int64 for 16x8) with scale input_scale * filter_scale; activations asymmetric int8 (int16 with
zero point 0 for 16x8). Run by gen_all.py. The ``*_split_*`` cases (end of file) are built or
searched so that TFLite Micro and the interpreter's reference kernels differ.
"""
from fractions import Fraction

import numpy as np

from common import (ACTIVATIONS, int4_weights, pack_int4, BO, OPT, S, Family, bias_scales, case_rng, f32, REGIMES, zero_points, f32s, linear_quant,
                    tensor_json, uniform_int, ModelBuilder, fmt_num, mbqm_double, mbqm_int64_reduced, quantize_multiplier,
                    round_half_away, run_both, split_rng)

ACTS = list(ACTIVATIONS)


def fc_case(fam, name, in_shape, n_out, per_channel, activation, in_zp, out_zp, regime,
            with_bias=True, keep_num_dims=False, act_dtype=np.int8, weight_bits=8):
    """``weight_bits`` 4: INT4 weights in [-8, 7], stored packed (see ``fc_model``)."""
    rng = case_rng(name)
    n_in = in_shape[-1]
    q = linear_quant(rng, regime, n_in, n_out, activation, in_zp, per_channel, act_dtype, 7 if weight_bits == 4 else 127)
    x = uniform_int(rng, q["x_lo"], q["x_hi"], in_shape, act_dtype)
    if weight_bits == 4:
        w = int4_weights(rng, q["w_amp"], (n_out, n_in))
    else:
        w = uniform_int(rng, -q["w_amp"], q["w_amp"], (n_out, n_in), np.int8)
    bias_dtype = np.int32 if act_dtype == np.int8 else np.int64
    bias = uniform_int(rng, -q["bias_amp"], q["bias_amp"], (n_out,), bias_dtype) if with_bias else None
    fc_explicit_case(fam, name, x, q["input_scale"], in_zp, w, q["filter_scales"], bias, q["output_scale"], out_zp,
                     activation, keep_num_dims, weight_bits=weight_bits)


def fc_model(in_shape, in_s, in_zp, w, filter_scales, bias, out_s, out_zp, activation="NONE", keep_num_dims=False,
             act_dtype=np.int8, weight_bits=8):
    """A one-op FULLY_CONNECTED model (weights and bias constant, ``bias`` None for none);
    ``weight_bits`` 4: an INT4 weight tensor, packed two per byte (``common.pack_int4``)."""
    n_out, n_in = w.shape
    with_bias = bias is not None
    bias_dtype = np.int32 if act_dtype == np.int8 else np.int64
    if keep_num_dims:
        out_shape = list(in_shape[:-1]) + [n_out]
    else:
        out_shape = [int(np.prod(in_shape)) // n_in, n_out]

    mb = ModelBuilder()
    ti = mb.tensor("input", in_shape, act_dtype, [in_s], [in_zp])
    tw = mb.tensor("filter", w.shape, "int4" if weight_bits == 4 else np.int8, filter_scales, [0] * len(filter_scales),
                   0, w)
    inputs = [ti, tw]
    if with_bias:
        bs = bias_scales(in_s, filter_scales)
        inputs.append(mb.tensor("bias", bias.shape, bias_dtype, bs, [0] * len(bs), 0, bias))
    else:
        inputs.append(-1)
    to = mb.tensor("output", out_shape, act_dtype, [out_s], [out_zp])
    o = S.FullyConnectedOptionsT()
    o.fusedActivationFunction = ACTIVATIONS[activation]
    o.keepNumDims = keep_num_dims
    if act_dtype == np.int16:
        version = 7
    elif not with_bias:
        version = 6
    elif keep_num_dims:
        version = 5
    else:
        version = 4
    if weight_bits == 4:
        version = 10  # INT4 weights (TFLite Micro ignores versions; BUILTIN_REF accepts this one)
    mb.operator(BO.FULLY_CONNECTED, version, inputs, [to], OPT.FullyConnectedOptions, o)
    return mb.build([ti], [to])


def fc_explicit_case(fam, name, x, in_s, in_zp, w, filter_scales, bias, out_s, out_zp, activation="NONE",
                     keep_num_dims=False, must_differ=False, weight_bits=8):
    """A case with the given data and quantization (activation dtype from ``x``)."""
    model = fc_model(x.shape, in_s, in_zp, w, filter_scales, bias, out_s, out_zp, activation, keep_num_dims, x.dtype,
                     weight_bits)
    fields = {
        "input": tensor_json(x), "input_scale": f32(in_s), "input_zero_point": in_zp,
        "filter": tensor_json(w), "filter_scales": f32s(filter_scales),
        "bias": tensor_json(bias) if bias is not None else None,
        "output_scale": f32(out_s), "output_zero_point": out_zp,
        "activation": activation, "keep_num_dims": keep_num_dims,
    }
    if weight_bits == 4:
        fields["filter_packed"] = tensor_json(pack_int4(w))
    return fam.run(name, model, [x], fields, must_differ=must_differ)




def _name(prefix, in_shape, n_out, per_channel, act, izp, ozp, regime, extra=""):
    shp = "x".join(str(d) for d in in_shape)
    pc = "pc" if per_channel else "pt"
    return f"{prefix}_in{shp}_out{n_out}_{pc}_{act.lower()}_izp{izp}_ozp{ozp}_{regime}{extra}"


def gen_int8():
    fam = Family("fully_connected.json", "FULLY_CONNECTED", "tests/gen/kernels/gen_fc.py",
                 "int8 activations, int8 weights (per-tensor or per-channel), int32 bias")
    # 1. Shapes: input depth x output count x batch.
    i = 0
    for n_in in [1, 3, 4, 8, 17, 64, 255]:
        for n_out in [1, 5, 16, 33]:
            batch = 1 + i % 3
            act = ACTS[i % 4]
            izp, ozp = zero_points(i, act)
            pc = i % 3 != 2
            fc_case(fam, _name("fc", [batch, n_in], n_out, pc, act, izp, ozp, "typ"),
                    [batch, n_in], n_out, pc, act, izp, ozp, "typ")
            i += 1
    # 2. Quantization: regimes x activations x per-tensor/per-channel, zero points at extremes.
    i = 0
    for regime in REGIMES:
        for act in ACTS:
            for pc in [True, False]:
                if (regime == "spread" and not pc) or (regime == "zeromult" and act not in ("NONE", "RELU")):
                    continue
                izp, ozp = zero_points(i, act)
                i += 1
                fc_case(fam, _name("fcq", [2, 24], 7, pc, act, izp, ozp, regime),
                        [2, 24], 7, pc, act, izp, ozp, regime)
    # 3. Options and layouts.
    for pc in [True, False]:
        fc_case(fam, _name("fc_nobias", [3, 10], 6, pc, "NONE", -5, 9, "typ"), [3, 10], 6, pc,
                "NONE", -5, 9, "typ", with_bias=False)
        fc_case(fam, _name("fc_keepdims", [2, 3, 9], 5, pc, "RELU", 12, -100, "typ"), [2, 3, 9], 5, pc,
                "RELU", 12, -100, "typ", keep_num_dims=True)
        fc_case(fam, _name("fc_flatten4d", [1, 2, 2, 6], 4, pc, "NONE", 0, -128, "typ"),
                [1, 2, 2, 6], 4, pc, "NONE", 0, -128, "typ")
    fc_case(fam, _name("fc_flatten4d_batch", [2, 1, 3, 4], 3, True, "RELU6", -128, -128, "typ"),
            [2, 1, 3, 4], 3, True, "RELU6", -128, -128, "typ")
    # Many outputs with shift 0 / -1, where single and double rounding part most often.
    for pc in [True, False]:
        fc_case(fam, _name("fc_rounding", [8, 32], 16, pc, "NONE", -3, 2, "near1"), [8, 32], 16, pc, "NONE",
                -3, 2, "near1")
    # Corner: RELU with output zero point 127 leaves no positive range (every output is 127).
    fc_case(fam, _name("fc_corner", [2, 6], 3, True, "RELU", 0, 127, "typ"), [2, 6], 3, True, "RELU", 0,
            127, "typ")
    # 4. Realistic sizes (an AD-autoencoder-like layer, a KWS/IC-like classifier head).
    fc_case(fam, _name("fc_real", [1, 256], 64, True, "RELU", -128, -128, "typ"), [1, 256], 64, True,
            "RELU", -128, -128, "typ")
    fc_case(fam, _name("fc_real", [1, 64], 12, False, "NONE", -128, 20, "typ"), [1, 64], 12, False,
            "NONE", -128, 20, "typ")
    fc_case(fam, _name("fc_real", [4, 128], 32, True, "NONE", 3, -3, "spread"), [4, 128], 32, True,
            "NONE", 3, -3, "spread")
    _fc_tie_cases(fam, "fc", np.int8)
    _fc_pt_product_cases(fam, "fc", np.int8)
    return fam


def gen_16x8():
    fam = Family("fully_connected_16x8.json", "FULLY_CONNECTED", "tests/gen/kernels/gen_fc.py",
                 "16x8: int16 activations (zero point 0), int8 weights, int64 bias")
    i = 0
    for n_in in [1, 5, 16, 33]:
        for n_out in [1, 4, 9]:
            act = ACTS[i % 3]  # RELU_N1_TO_1 is covered below
            pc = i % 2 == 0
            fc_case(fam, _name("fc16", [1 + i % 2, n_in], n_out, pc, act, 0, 0, "typ"),
                    [1 + i % 2, n_in], n_out, pc, act, 0, 0, "typ", act_dtype=np.int16)
            i += 1
    for regime in REGIMES:
        for act in ACTS:
            for pc in [True, False]:
                if (regime == "spread" and not pc) or (regime == "zeromult" and act != "NONE"):
                    continue
                fc_case(fam, _name("fc16q", [2, 20], 6, pc, act, 0, 0, regime), [2, 20], 6, pc, act, 0, 0,
                        regime, act_dtype=np.int16)
    fc_case(fam, _name("fc16_nobias", [2, 12], 5, True, "NONE", 0, 0, "typ"), [2, 12], 5, True, "NONE",
            0, 0, "typ", with_bias=False, act_dtype=np.int16)
    fc_case(fam, _name("fc16_keepdims", [2, 2, 7], 3, True, "NONE", 0, 0, "typ"), [2, 2, 7], 3, True,
            "NONE", 0, 0, "typ", keep_num_dims=True, act_dtype=np.int16)
    fc_case(fam, _name("fc16_real", [1, 128], 32, True, "RELU", 0, 0, "typ"), [1, 128], 32, True,
            "RELU", 0, 0, "typ", act_dtype=np.int16)
    _fc_tie_cases(fam, "fc16", np.int16)
    _fc_pt_product_cases(fam, "fc16", np.int16)
    return fam


# ---------------------------------------------------------------------------------------------
# Cases where TFLite Micro and the interpreter differ (``*_split_*``), so the golden files tell the
# two rounding modes apart beyond the random grid above. The oracles decide: every case is run
# through both and must differ (``must_differ``); integer emulations (common.py) only choose
# candidates. Seeded (``split_rng`` / ``case_rng``), so deterministic.
#
# 1. Exact ties. With power-of-two input and output scales and filter scales E / 8, the effective
#    scale E = n / 2^d (n odd) is exact in every path, and an accumulator that is an odd multiple
#    of 2^(d-1) lands exactly on a half: acc * E = k + 1/2. TFLite Micro rounds such a negative
#    tie up (gemmlowp's SaturatingRoundingDoublingHighMul; the 16x8 path's `+ 2^(s-1) >> s`), the
#    interpreter's round() away from zero: E = 0.75, acc = -2 gives -1 in TFLite Micro, -2 in the
#    interpreter. With a right shift (E < 0.5) the tie is in TFLite Micro's first rounding (of
#    acc * E * 2^shift), which its second rounding compounds: E = 0.375, acc = 6 gives
#    4.5 -> 5 -> 2.5 -> 3 in TFLite Micro, round(2.25) = 2 in the interpreter. Each channel's
#    weights are multiples of 2^d, so every row's accumulator is congruent to the bias mod 2^d:
#    the biases put row 0 on the target accumulators, and the other rows fall on ties (or not) as
#    row 0 does. Some targets are not ties, for contrast.

FC_TIES = [  # (tag, effective scales: one = per-tensor, or one per channel; row-0 accumulators; output zp)
    ("pt_e0p75", [0.75], [-2, 2, -6, 6, -10, -1, -3, 0], 0),
    ("pt_e1p5", [1.5], [-1, 1, -3, -5, 3, -7, -2, 4], -5),
    ("pt_e0p375", [0.375], [6, 14, -2, -10, 22, -4, 4, 8], 0),
    ("pc", [0.75, 0.625, 0.375, 1.5, 0.5, 0.3125, 0.09375, 1.25], [-2, -4, 6, -1, -1, 4, 26, -2], 3),
]


def _fc_tie_cases(fam, prefix, act_dtype):
    is16 = act_dtype == np.int16
    # input 2^-4 / output 2^-7 (int8), 2^-10 / 2^-13 (16x8): E = input * filter / output = 8 * filter.
    in_s, out_s = (np.float32(2.0 ** -10), np.float32(2.0 ** -13)) if is16 else (np.float32(2.0 ** -4),
                                                                                  np.float32(2.0 ** -7))
    for tag, effective, targets, out_zp in FC_TIES:
        name = f"{prefix}_split_tie_{tag}"
        rng = case_rng(name)
        n_out, depth, batch = len(targets), 4, 3
        es = effective if len(effective) == n_out else effective * n_out
        filter_scales = [np.float32(e / 8) for e in effective]
        in_zp = 0 if is16 else -3
        amp = 300 if is16 else 2
        x = uniform_int(rng, in_zp - amp, in_zp + amp, (batch, depth), act_dtype)
        step = np.array([Fraction(e).denominator for e in es], np.int64)  # 2^d per channel
        w = (uniform_int(rng, -2, 2, (n_out, depth), np.int64) * step[:, None]).astype(np.int8)
        dot0 = w.astype(np.int64) @ (x[0].astype(np.int64) - in_zp)
        bias = (np.array(targets, np.int64) - dot0).astype(np.int64 if is16 else np.int32)
        fc_explicit_case(fam, name, x, in_s, in_zp, w, filter_scales, bias, out_s, 0 if is16 else out_zp,
                         must_differ=True)


# 2. Per-tensor multipliers where the float32 product input_scale * filter_scale matters. TFLite's
#    shared GetQuantizedConvolutionMultipler source computes the per-tensor multiplier as
#    (double)(input_scale * filter_scale) / output_scale, the product rounded to float first,
#    while per-channel code (and the interpreter's float requantization) uses the all-double
#    input_scale * filter_scale / output_scale. A random search over scale triples keeps those
#    whose two Q31 multipliers (Q15-reduced ones in 16x8) differ and, on row 0 (through the
#    biases), puts up to three accumulators where the two multipliers give different fixed-point
#    results (so the case shows which one TFLite Micro uses) and up to two where the all-double
#    fixed point differs from round(acc * E) (so the oracles differ there), plus a free channel
#    and a free row. Observed with the pinned TFLite Micro (0.dev20261023182759): on every such
#    accumulator it follows the all-double multiplier, never the float-product one.

FC_PT_PRODUCT_SPLITS = 3
FC_PT_PRODUCT_MAX_TRIES = 200_000  # scale triples drawn (cheap) before giving up


def _fc_pt_product_cases(fam, prefix, act_dtype):
    is16 = act_dtype == np.int16
    emulate = mbqm_int64_reduced if is16 else mbqm_double
    limit = 30000 if is16 else 100  # |acc * E| of the targets, so outputs do not saturate
    rng = split_rng(prefix + "_pt_product")
    found = tries = 0
    while found < FC_PT_PRODUCT_SPLITS:
        tries += 1
        if tries > FC_PT_PRODUCT_MAX_TRIES:
            raise SystemExit(f"{prefix}: found {found} of {FC_PT_PRODUCT_SPLITS} per-tensor product splits in "
                             f"{tries - 1} triples")
        in_s = np.float32(np.exp(rng.uniform(*(np.log([2e-5, 2e-3]) if is16 else np.log([0.005, 0.2])))))
        f_s = np.float32(np.exp(rng.uniform(np.log(0.001), np.log(0.05))))
        m = np.exp(rng.uniform(np.log(2.0 ** -6 if is16 else 2.0 ** -12), np.log(0.9)))
        out_s = np.float32(float(in_s) * float(f_s) / m)
        q_float = quantize_multiplier(float(np.float32(in_s * f_s)) / float(out_s))
        q_double = quantize_multiplier(float(in_s) * float(f_s) / float(out_s))
        if q_float == q_double or (is16 and _q15(q_float) == _q15(q_double)):
            continue
        e = float(in_s) * float(f_s) / float(out_s)
        span = min(int(limit / e), 1 << 22)
        acc = np.arange(-span, span + 1, dtype=np.int64)
        t_double = emulate(acc, *q_double)
        by_product = acc[emulate(acc, *q_float) != t_double]
        by_rounding = acc[t_double != round_half_away(acc.astype(np.float64) * e)]
        if len(by_product) == 0 or len(by_rounding) == 0:
            continue
        pick = [a[np.sort(rng.choice(len(a), min(k, len(a)), replace=False))]
                for a, k in ((by_product, 3), (by_rounding, 2))]
        name = f"{prefix}_split_ptproduct_s{fmt_num(in_s)}_{fmt_num(f_s)}_out{fmt_num(out_s)}"
        crng = case_rng(name)
        acc0 = np.concatenate(pick + [crng.integers(-span, span + 1, 1)])
        info = np.iinfo(act_dtype)
        n_out, depth = len(acc0), 8
        in_zp = 0 if is16 else int(crng.integers(-128, 128))
        x = uniform_int(crng, int(info.min), int(info.max), (2, depth), act_dtype)
        w = uniform_int(crng, -127, 127, (n_out, depth), np.int8)
        dot0 = w.astype(np.int64) @ (x[0].astype(np.int64) - in_zp)
        bias = (acc0 - dot0).astype(np.int64 if is16 else np.int32)
        out = run_both(fc_model(x.shape, in_s, in_zp, w, [f_s], bias, out_s, 0, act_dtype=act_dtype), [x])
        if out is None or np.array_equal(*out):
            continue
        fc_explicit_case(fam, name, x, in_s, in_zp, w, [f_s], bias, out_s, 0, must_differ=True)
        found += 1


def _q15(q):
    """The Q15-reduced multiplier and shift TFLite's 64-bit MultiplyByQuantizedMultiplier uses."""
    m, shift = q
    return ((m + (1 << 15)) >> 16 if m < 0x7FFF0000 else 0x7FFF), shift


GENERATORS = {"fc": gen_int8}
GENERATORS_16X8 = {"fc16x8": gen_16x8}
