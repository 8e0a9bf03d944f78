"""CONV_2D goldens: int8 (conv_2d.json) and 16x8 (conv_2d_16x8.json); the builder is shared with
DEPTHWISE_CONV_2D (gen_depthwise.py).

Filters OHWI [out_c, kh, kw, in_c] symmetric int8, per-channel (quantized_dimension 0; a few cases
per-tensor); depthwise filters [1, kh, kw, in_c * depth_multiplier] per-channel on dimension 3.
Bias int32 (int64 for 16x8) with scale input_scale * filter_scale. Run by gen_all.py.
"""
import numpy as np

from common import (ACTIVATIONS, BO, OPT, PADDINGS, REGIMES, S, Family, ModelBuilder, bias_scales, case_rng,
                    f32, f32s, int4_weights, linear_quant, pack_int4, tensor_json, uniform_int, zero_points)

ACTS = list(ACTIVATIONS)


def out_size(n, k, s, d, padding):
    dk = (k - 1) * d + 1
    if padding == "SAME":
        return (n + s - 1) // s
    return (n - dk + s) // s if n >= dk else 0


def conv_like_case(fam, name, kind, in_shape, out_c, kernel, stride, dilation, padding, activation,
                   in_zp, out_zp, regime, per_channel=True, with_bias=True, depth_multiplier=1,
                   act_dtype=np.int8, weight_bits=8):
    """kind: "conv" (CONV_2D) or "depthwise" (DEPTHWISE_CONV_2D; out_c = in_c * depth_multiplier).
    ``weight_bits`` 4: an INT4 filter (values in [-8, 7], stored packed; the case also gets
    ``filter_packed``, the bytes of the model's buffer). Returns False when the geometry has an
    empty output (case skipped)."""
    n, h, w, in_c = in_shape
    kh, kw = kernel
    sh, sw = stride
    dh, dw = dilation
    oh, ow = out_size(h, kh, sh, dh, padding), out_size(w, kw, sw, dw, padding)
    if oh <= 0 or ow <= 0:
        return False
    rng = case_rng(name)
    if kind == "conv":
        k = kh * kw * in_c
        fshape = (out_c, kh, kw, in_c)
        qdim = 0
    else:
        assert out_c == in_c * depth_multiplier
        k = kh * kw
        fshape = (1, kh, kw, out_c)
        qdim = 3
    q = linear_quant(rng, regime, k, out_c, activation, in_zp, per_channel, act_dtype, 7 if weight_bits == 4 else 127)
    x = uniform_int(rng, q["x_lo"], q["x_hi"], in_shape, act_dtype)
    if weight_bits == 4:
        wts = int4_weights(rng, q["w_amp"], fshape)
    else:
        wts = uniform_int(rng, -q["w_amp"], q["w_amp"], fshape, np.int8)
    bias_dtype = np.int32 if act_dtype == np.int8 else np.int64
    bias = uniform_int(rng, -q["bias_amp"], q["bias_amp"], (out_c,), bias_dtype) if with_bias else None

    mb = ModelBuilder()
    ti = mb.tensor("input", in_shape, act_dtype, [q["input_scale"]], [in_zp])
    nf = len(q["filter_scales"])
    tw = mb.tensor("filter", fshape, "int4" if weight_bits == 4 else np.int8, q["filter_scales"], [0] * nf, qdim,
                   wts)
    ins = [ti, tw]
    if with_bias:
        bs = bias_scales(q["input_scale"], q["filter_scales"])
        ins.append(mb.tensor("bias", bias.shape, bias_dtype, bs, [0] * len(bs), 0, bias))
    # Without bias the operator has two inputs: the interpreter's conv rejects an omitted (-1) third.
    to = mb.tensor("output", [n, oh, ow, out_c], act_dtype, [q["output_scale"]], [out_zp])
    if kind == "conv":
        o = S.Conv2DOptionsT()
        code, opt_type = BO.CONV_2D, OPT.Conv2DOptions
        version = 3 if act_dtype == np.int8 else 4
        if weight_bits == 4:
            version = 7  # INT4 filter (TFLite Micro ignores versions; BUILTIN_REF accepts this one)
    else:
        o = S.DepthwiseConv2DOptionsT()
        o.depthMultiplier = depth_multiplier
        code, opt_type = BO.DEPTHWISE_CONV_2D, OPT.DepthwiseConv2DOptions
        version = 3 if act_dtype == np.int8 else 5
        if weight_bits == 4:
            version = 6  # INT4 filter (the highest version BUILTIN_REF registers; TFLite Micro ignores it)
    o.padding = PADDINGS[padding]
    o.strideH, o.strideW = sh, sw
    o.dilationHFactor, o.dilationWFactor = dh, dw
    o.fusedActivationFunction = ACTIVATIONS[activation]
    mb.operator(code, version, ins, [to], opt_type, o)
    model = mb.build([ti], [to])
    fields = {
        "input": tensor_json(x), "input_scale": f32(q["input_scale"]), "input_zero_point": in_zp,
        "filter": tensor_json(wts), "filter_scales": f32s(q["filter_scales"]),
        "bias": tensor_json(bias) if with_bias else None,
        "output_scale": f32(q["output_scale"]), "output_zero_point": out_zp,
        "padding": padding, "stride_h": sh, "stride_w": sw, "dilation_h": dh, "dilation_w": dw,
    }
    if kind == "depthwise":
        fields["depth_multiplier"] = depth_multiplier
    fields["activation"] = activation
    if weight_bits == 4:
        fields["filter_packed"] = tensor_json(pack_int4(wts))
    return fam.run(name, model, [x], fields)


def conv_name(prefix, in_shape, out_c, kernel, stride, dilation, padding, act, izp, ozp, regime, pc=True,
              dm=None, extra=""):
    n, h, w, c = in_shape
    b = f"b{n}_" if n != 1 else ""
    m = f"_m{dm}" if dm is not None else ""
    return (f"{prefix}_{b}{h}x{w}x{c}_o{out_c}{m}_k{kernel[0]}x{kernel[1]}_s{stride[0]}x{stride[1]}"
            f"_d{dilation[0]}x{dilation[1]}_{padding.lower()}_{act.lower()}_izp{izp}_ozp{ozp}_{regime}"
            f"{'' if pc else '_pt'}{extra}")


def _conv(fam, prefix, in_shape, out_c, kernel, stride, dilation, padding, act, izp, ozp, regime, pc=True,
          with_bias=True, act_dtype=np.int8):
    name = conv_name(prefix, in_shape, out_c, kernel, stride, dilation, padding, act, izp, ozp, regime, pc,
                     extra="" if with_bias else "_nobias")
    return conv_like_case(fam, name, "conv", in_shape, out_c, kernel, stride, dilation, padding, act, izp,
                          ozp, regime, per_channel=pc, with_bias=with_bias, act_dtype=act_dtype)


HWS = [(1, 1), (5, 5), (7, 4), (3, 8), (9, 9)]
KERNELS = [(1, 1), (3, 3), (2, 3), (5, 5), (1, 3)]
STRIDES = [(1, 1), (2, 2), (3, 3), (1, 2), (2, 1)]
DILATIONS = [(1, 1), (2, 2), (1, 2)]
CIN = [1, 3, 4, 8, 5, 16, 2, 7]
COUT = [1, 4, 5, 8, 3, 12, 16, 2]


def gen_conv_int8():
    fam = Family("conv_2d.json", "CONV_2D", "tests/gen/kernels/gen_conv.py",
                 "int8 activations, int8 weights per-channel (a few per-tensor), int32 bias")
    # 1. Geometry: input sizes x kernel sizes x padding; strides and dilations rotate.
    i = 0
    for hw in HWS:
        for kern in KERNELS:
            for pad in ["SAME", "VALID"]:
                stride = STRIDES[i % len(STRIDES)]
                dil = DILATIONS[(i // 2) % len(DILATIONS)]
                izp, ozp = zero_points(i, ACTS[i % 4])
                _conv(fam, "conv", (1, hw[0], hw[1], CIN[i % len(CIN)]), COUT[(i // 3) % len(COUT)], kern,
                      stride, dil, pad, ACTS[i % 4], izp, ozp, "typ")
                i += 1
    # 2. Every stride x dilation x padding on one 9x9 input with a 3x3 kernel.
    for stride in STRIDES:
        for dil in DILATIONS:
            for pad in ["SAME", "VALID"]:
                izp, ozp = zero_points(i, ACTS[i % 4])
                _conv(fam, "conv_sd", (1, 9, 9, 3), 4, (3, 3), stride, dil, pad, ACTS[i % 4], izp, ozp, "typ")
                i += 1
    # 3. Quantization: regimes x activations, extreme zero points; some per-tensor filters.
    for regime in REGIMES:
        for act in ACTS:
            if regime == "zeromult" and act not in ("NONE", "RELU"):
                continue
            izp, ozp = zero_points(i, act)
            _conv(fam, "convq", (1, 6, 5, 5), 7, (3, 3), (1, 1), (1, 1), "SAME", act, izp, ozp, regime)
            i += 1
    for regime in ["typ", "near1", "tiny", "big"]:
        izp, ozp = zero_points(i, ACTS[i % 4])
        _conv(fam, "convq", (1, 5, 6, 4), 6, (3, 3), (2, 2), (1, 1), "VALID", ACTS[i % 4], izp, ozp, regime,
              pc=False)
        i += 1
    # 4. Corner (RELU with output zero point 127: every output 127), no bias (the TFLite
    # interpreter rejects a quantized conv without bias: kept to document it), batch > 1,
    # realistic sizes.
    _conv(fam, "conv_corner", (1, 4, 4, 3), 3, (3, 3), (1, 1), (1, 1), "SAME", "RELU", 0, 127, "typ")
    _conv(fam, "conv", (1, 6, 6, 4), 5, (3, 3), (1, 1), (1, 1), "SAME", "NONE", 3, -9, "typ", with_bias=False)
    _conv(fam, "conv", (2, 6, 6, 4), 6, (3, 3), (2, 2), (1, 1), "SAME", "RELU", -128, -128, "typ")
    _conv(fam, "conv_real", (1, 16, 16, 8), 16, (3, 3), (1, 1), (1, 1), "SAME", "RELU6", -128, -128, "typ")
    _conv(fam, "conv_real", (1, 16, 16, 8), 16, (3, 3), (2, 2), (1, 1), "SAME", "RELU", 2, -128, "near1")
    _conv(fam, "conv_real", (1, 12, 12, 16), 24, (1, 1), (1, 1), (1, 1), "VALID", "NONE", -128, 0, "spread")
    _conv(fam, "conv_real", (1, 24, 24, 3), 8, (3, 3), (1, 1), (1, 1), "SAME", "RELU", -128, -128, "typ")
    _conv(fam, "conv_real", (1, 49, 10, 1), 16, (10, 4), (2, 2), (1, 1), "SAME", "RELU", 83, -128, "typ")
    _conv(fam, "conv_real", (1, 8, 8, 32), 32, (3, 3), (1, 1), (1, 1), "SAME", "NONE", -7, 11, "near1")
    return fam


def gen_conv_16x8():
    fam = Family("conv_2d_16x8.json", "CONV_2D", "tests/gen/kernels/gen_conv.py",
                 "16x8: int16 activations (zero point 0), int8 weights per-channel, int64 bias")
    i = 0
    for hw in [(1, 1), (5, 5), (7, 4)]:
        for kern in [(1, 1), (3, 3), (2, 3)]:
            for pad in ["SAME", "VALID"]:
                stride = STRIDES[i % len(STRIDES)]
                dil = DILATIONS[(i // 2) % len(DILATIONS)]
                _conv(fam, "conv16", (1, hw[0], hw[1], CIN[i % len(CIN)]), COUT[(i // 3) % len(COUT)], kern,
                      stride, dil, pad, ACTS[i % 3], 0, 0, "typ", act_dtype=np.int16)
                i += 1
    for regime in REGIMES:
        for act in ACTS:
            if regime == "zeromult" and act != "NONE":
                continue
            _conv(fam, "conv16q", (1, 5, 5, 3), 4, (3, 3), (1, 1), (1, 1), "SAME", act, 0, 0, regime,
                  act_dtype=np.int16)
    _conv(fam, "conv16q", (1, 5, 5, 3), 4, (3, 3), (2, 2), (1, 1), "VALID", "NONE", 0, 0, "typ", pc=False,
          act_dtype=np.int16)
    _conv(fam, "conv16", (1, 5, 5, 3), 4, (3, 3), (1, 1), (1, 1), "SAME", "NONE", 0, 0, "typ", with_bias=False,
          act_dtype=np.int16)
    _conv(fam, "conv16_real", (1, 12, 12, 8), 16, (3, 3), (1, 1), (1, 1), "SAME", "RELU", 0, 0, "typ",
          act_dtype=np.int16)
    return fam


GENERATORS = {"conv": gen_conv_int8}
GENERATORS_16X8 = {"conv16x8": gen_conv_16x8}
