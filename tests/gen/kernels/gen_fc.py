"""FULLY_CONNECTED goldens: int8 (fully_connected.json) and 16x8 (fully_connected_16x8.json).

Weights [out, in] symmetric int8, per-tensor or per-channel (quantized_dimension 0); bias int32
(int64 for 16x8) with scale input_scale * filter_scale; activations asymmetric int8 (int16 with
zero point 0 for 16x8). Run by gen_all.py.
"""
import numpy as np

from common import (ACTIVATIONS, BO, OPT, S, Family, bias_scales, case_rng, f32, REGIMES, zero_points, f32s, linear_quant,
                    tensor_json, uniform_int, ModelBuilder)

ACTS = list(ACTIVATIONS)


def fc_case(fam, name, in_shape, n_out, per_channel, activation, in_zp, out_zp, regime,
            with_bias=True, keep_num_dims=False, act_dtype=np.int8):
    rng = case_rng(name)
    n_in = in_shape[-1]
    q = linear_quant(rng, regime, n_in, n_out, activation, in_zp, per_channel, act_dtype)
    x = uniform_int(rng, q["x_lo"], q["x_hi"], in_shape, act_dtype)
    w = uniform_int(rng, -q["w_amp"], q["w_amp"], (n_out, n_in), np.int8)
    bias_dtype = np.int32 if act_dtype == np.int8 else np.int64
    bias = uniform_int(rng, -q["bias_amp"], q["bias_amp"], (n_out,), bias_dtype) if with_bias else None
    if keep_num_dims:
        out_shape = list(in_shape[:-1]) + [n_out]
    else:
        out_shape = [int(np.prod(in_shape)) // n_in, n_out]

    mb = ModelBuilder()
    ti = mb.tensor("input", in_shape, act_dtype, [q["input_scale"]], [in_zp])
    tw = mb.tensor("filter", w.shape, np.int8, q["filter_scales"], [0] * len(q["filter_scales"]), 0, w)
    inputs = [ti, tw]
    if with_bias:
        bs = bias_scales(q["input_scale"], q["filter_scales"])
        inputs.append(mb.tensor("bias", bias.shape, bias_dtype, bs, [0] * len(bs), 0, bias))
    else:
        inputs.append(-1)
    to = mb.tensor("output", out_shape, act_dtype, [q["output_scale"]], [out_zp])
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
    mb.operator(BO.FULLY_CONNECTED, version, inputs, [to], OPT.FullyConnectedOptions, o)
    model = mb.build([ti], [to])
    fields = {
        "input": tensor_json(x), "input_scale": f32(q["input_scale"]), "input_zero_point": in_zp,
        "filter": tensor_json(w), "filter_scales": f32s(q["filter_scales"]),
        "bias": tensor_json(bias) if with_bias else None,
        "output_scale": f32(q["output_scale"]), "output_zero_point": out_zp,
        "activation": activation, "keep_num_dims": keep_num_dims,
    }
    fam.run(name, model, [x], fields)




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
    return fam


GENERATORS = {"fc": gen_int8}
GENERATORS_16X8 = {"fc16x8": gen_16x8}
