"""TRANSPOSE_CONV goldens: int8 (transpose_conv.json) and 16x8 (transpose_conv_16x8.json).

A TFLite TRANSPOSE_CONV has the inputs ``[output_shape, filter, input, bias (optional)]``:
``output_shape`` an int32 ``[4]`` constant (NHWC), the filter ``[out_c, kh, kw, in_c]`` (OHWI)
symmetric int8 per-channel on dimension 0 (a few cases per-tensor), the input ``[n, h, w, in_c]``,
the bias ``[out_c]`` int32 (int64 for 16x8) with scale input_scale * filter_scale. Options:
padding (SAME / VALID), strides, fused activation (TransposeConvOptions.fused_activation_function,
TFLite 2.x). Dilation is always 1.

Both oracles size the padding from the output as a convolution would from its input
(``ComputePaddingHeightWidth(stride, 1, out_h, out_w, kh, kw, padding)``, only the leading
padding used), so the output height may be anything from which that works: the generator takes
the natural ``(in - 1) * stride + k`` for VALID / ``in * stride`` for SAME, plus an ``extra``
of up to ``stride - 1`` for VALID (TensorFlow's ``output_padding``) or minus up to ``stride - 1``
for SAME (an odd size upsampled): the TFLite interpreter checks that the convolution of the output
size gives back the input size.
Run by gen_all.py; the models of some cases are also written to tests/golden/transpose_conv_models/
(``SAVED``) for the importer's end-to-end test.
"""
import numpy as np

from common import (ACTIVATIONS, BO, GOLDEN, OPT, PADDINGS, REGIMES, S, Family, ModelBuilder, bias_scales,
                    case_rng, f32, f32s, linear_quant, tensor_json, uniform_int, zero_points)

# Some cases' .tflite models, for the importer's end-to-end test (tests/host/transpose_conv.rs:
# import, compile, invoke == expected_tflm): the cases whose name has one of these parts.
MODELS = GOLDEN.parent / "transpose_conv_models"
SAVED = ("tconv_s_", "tconv_real", "_b2_", "_nobias", "tconv16q_", "tconv16_real", "_pt")

ACTS = list(ACTIVATIONS)


def natural_out(n, k, s, padding):
    return n * s if padding == "SAME" else (n - 1) * s + k


def tconv_case(fam, name, in_shape, out_c, kernel, stride, padding, activation, in_zp, out_zp, regime,
               per_channel=True, with_bias=True, extra=(0, 0), act_dtype=np.int8):
    n, h, w, in_c = in_shape
    kh, kw = kernel
    sh, sw = stride
    oh = natural_out(h, kh, sh, padding) + extra[0]
    ow = natural_out(w, kw, sw, padding) + extra[1]
    rng = case_rng(name)
    # Accumulated products per output: about kh * kw * in_c / (sh * sw) (each output pixel sees
    # the filter taps that land on it).
    k = max(1, (kh * kw * in_c) // (sh * sw))
    q = linear_quant(rng, regime, k, out_c, activation, in_zp, per_channel, act_dtype)
    x = uniform_int(rng, q["x_lo"], q["x_hi"], in_shape, act_dtype)
    fshape = (out_c, kh, kw, in_c)
    wts = uniform_int(rng, -q["w_amp"], q["w_amp"], fshape, np.int8)
    bias_dtype = np.int32 if act_dtype == np.int8 else np.int64
    bias = uniform_int(rng, -q["bias_amp"], q["bias_amp"], (out_c,), bias_dtype) if with_bias else None

    mb = ModelBuilder()
    out_shape = np.array([n, oh, ow, out_c], np.int32)
    ts = mb.tensor("output_shape", [4], np.int32, data=out_shape)
    nf = len(q["filter_scales"])
    tw = mb.tensor("filter", fshape, np.int8, q["filter_scales"], [0] * nf, 0, wts)
    ti = mb.tensor("input", in_shape, act_dtype, [q["input_scale"]], [in_zp])
    ins = [ts, tw, ti]
    if with_bias:
        bs = bias_scales(q["input_scale"], q["filter_scales"])
        ins.append(mb.tensor("bias", bias.shape, bias_dtype, bs, [0] * len(bs), 0, bias))
    to = mb.tensor("output", [n, oh, ow, out_c], act_dtype, [q["output_scale"]], [out_zp])
    o = S.TransposeConvOptionsT()
    o.padding = PADDINGS[padding]
    o.strideH, o.strideW = sh, sw
    o.fusedActivationFunction = ACTIVATIONS[activation]
    # Versions as TFLite's op_version.cc: 2 int8, 3 with a bias, 4 with a fused activation.
    version = 4 if activation != "NONE" else (3 if with_bias or act_dtype == np.int16 else 2)
    mb.operator(BO.TRANSPOSE_CONV, version, ins, [to], OPT.TransposeConvOptions, o)
    model = mb.build([ti], [to])
    fields = {
        "input": tensor_json(x), "input_scale": f32(q["input_scale"]), "input_zero_point": in_zp,
        "filter": tensor_json(wts), "filter_scales": f32s(q["filter_scales"]),
        "bias": tensor_json(bias) if with_bias else None,
        "output_scale": f32(q["output_scale"]), "output_zero_point": out_zp,
        "output_shape": [int(v) for v in out_shape],
        "padding": padding, "stride_h": sh, "stride_w": sw, "activation": activation,
    }
    kept = fam.run(name, model, [x], fields)
    if kept and any(part in name for part in SAVED):
        MODELS.mkdir(parents=True, exist_ok=True)
        (MODELS / f"{name}.tflite").write_bytes(model)
    return kept


def tconv_name(prefix, in_shape, out_c, kernel, stride, padding, act, izp, ozp, regime, pc=True, with_bias=True,
               extra=(0, 0)):
    n, h, w, c = in_shape
    b = f"b{n}_" if n != 1 else ""
    e = f"_e{extra[0]}x{extra[1]}".replace("-", "m") if extra != (0, 0) else ""
    return (f"{prefix}_{b}{h}x{w}x{c}_o{out_c}_k{kernel[0]}x{kernel[1]}_s{stride[0]}x{stride[1]}"
            f"_{padding.lower()}_{act.lower()}_izp{izp}_ozp{ozp}_{regime}{'' if pc else '_pt'}"
            f"{'' if with_bias else '_nobias'}{e}")


def _tconv(fam, prefix, in_shape, out_c, kernel, stride, padding, act, izp, ozp, regime, pc=True,
           with_bias=True, extra=(0, 0), act_dtype=np.int8):
    name = tconv_name(prefix, in_shape, out_c, kernel, stride, padding, act, izp, ozp, regime, pc, with_bias,
                      extra)
    return tconv_case(fam, name, in_shape, out_c, kernel, stride, padding, act, izp, ozp, regime,
                      per_channel=pc, with_bias=with_bias, extra=extra, act_dtype=act_dtype)


HWS = [(1, 1), (3, 3), (4, 5), (2, 7)]
KERNELS = [(1, 1), (2, 2), (3, 3), (4, 4), (3, 2)]
STRIDES = [(1, 1), (2, 2), (2, 1), (1, 2), (3, 3)]
CIN = [1, 3, 4, 8, 5, 16, 2]
COUT = [1, 4, 5, 8, 3, 12, 2]


def _extra(i, stride, padding):
    """Every third case takes the farthest output size from the natural one that the TFLite
    interpreter accepts (it checks that the convolution of the output size gives back the input
    size): ``stride - 1`` more for VALID, ``stride - 1`` fewer for SAME."""
    return extra_for(stride, padding) if i % 3 == 2 else (0, 0)


def extra_for(stride, padding):
    sign = 1 if padding == "VALID" else -1
    return (sign * (stride[0] - 1), sign * (stride[1] - 1))


def gen_transpose_conv_int8():
    fam = Family("transpose_conv.json", "TRANSPOSE_CONV", "tests/gen/kernels/gen_transpose_conv.py",
                 "int8 activations, int8 weights per-channel (a few per-tensor), int32 bias; inputs "
                 "[output_shape, filter OHWI, input, bias]")
    # 1. Geometry: input sizes x kernel sizes x padding; strides, channels, activations rotate.
    i = 0
    for hw in HWS:
        for kern in KERNELS:
            for pad in ["SAME", "VALID"]:
                stride = STRIDES[i % len(STRIDES)]
                izp, ozp = zero_points(i, ACTS[i % 4])
                _tconv(fam, "tconv", (1, hw[0], hw[1], CIN[i % len(CIN)]), COUT[(i // 3) % len(COUT)], kern,
                       stride, pad, ACTS[i % 4], izp, ozp, "typ", extra=_extra(i, stride, pad))
                i += 1
    # 2. Every stride x padding x extra output on one 4x4 input with a 3x3 kernel.
    for stride in STRIDES:
        for pad in ["SAME", "VALID"]:
            for extra in sorted({(0, 0), extra_for(stride, pad)}):
                izp, ozp = zero_points(i, ACTS[i % 4])
                _tconv(fam, "tconv_s", (1, 4, 4, 3), 4, (3, 3), stride, pad, ACTS[i % 4], izp, ozp, "typ",
                       extra=extra)
                i += 1
    # 3. Quantization: regimes x activations, extreme zero points; some per-tensor filters.
    for regime in REGIMES:
        for act in ACTS:
            if regime == "zeromult" and act not in ("NONE", "RELU"):
                continue
            izp, ozp = zero_points(i, act)
            _tconv(fam, "tconvq", (1, 4, 3, 5), 7, (3, 3), (2, 2), "SAME", act, izp, ozp, regime)
            i += 1
    for regime in ["typ", "near1", "tiny", "big"]:
        izp, ozp = zero_points(i, ACTS[i % 4])
        _tconv(fam, "tconvq", (1, 3, 4, 4), 6, (2, 2), (2, 2), "VALID", ACTS[i % 4], izp, ozp, regime, pc=False)
        i += 1
    # 4. No bias, batch 2, realistic decoder layers (PP-OCR's DB head and MediaPipe's selfie
    # segmenter upsample with 2x2 / 3x3 kernels at stride 2).
    _tconv(fam, "tconv", (1, 4, 4, 4), 5, (3, 3), (2, 2), "SAME", "NONE", 3, -9, "typ", with_bias=False)
    _tconv(fam, "tconv", (1, 3, 5, 2), 3, (2, 3), (1, 2), "VALID", "RELU", -128, -128, "typ", with_bias=False)
    _tconv(fam, "tconv", (2, 3, 3, 4), 6, (3, 3), (2, 2), "SAME", "RELU", -128, -128, "typ")
    _tconv(fam, "tconv", (2, 2, 3, 3), 2, (2, 2), (2, 1), "VALID", "NONE", 5, -7, "near1", extra=(1, 0))
    _tconv(fam, "tconv_real", (1, 8, 8, 16), 8, (2, 2), (2, 2), "VALID", "RELU", -128, -128, "typ")
    _tconv(fam, "tconv_real", (1, 8, 8, 8), 8, (4, 4), (2, 2), "SAME", "NONE", -128, 4, "typ")
    _tconv(fam, "tconv_real", (1, 6, 6, 16), 16, (3, 3), (2, 2), "SAME", "RELU6", -128, -128, "near1")
    _tconv(fam, "tconv_real", (1, 5, 5, 12), 4, (2, 2), (2, 2), "SAME", "NONE", 7, 0, "spread")
    return fam


def gen_transpose_conv_16x8():
    fam = Family("transpose_conv_16x8.json", "TRANSPOSE_CONV", "tests/gen/kernels/gen_transpose_conv.py",
                 "16x8: int16 activations (zero point 0), int8 weights per-channel, int64 bias; inputs "
                 "[output_shape, filter OHWI, input, bias]")
    i = 0
    for hw in [(1, 1), (3, 3), (2, 5)]:
        for kern in [(1, 1), (2, 2), (3, 3)]:
            for pad in ["SAME", "VALID"]:
                stride = STRIDES[i % len(STRIDES)]
                _tconv(fam, "tconv16", (1, hw[0], hw[1], CIN[i % len(CIN)]), COUT[(i // 3) % len(COUT)], kern,
                       stride, pad, ACTS[i % 3], 0, 0, "typ", extra=_extra(i, stride, pad), act_dtype=np.int16)
                i += 1
    for regime in REGIMES:
        for act in ACTS:
            if regime == "zeromult" and act != "NONE":
                continue
            _tconv(fam, "tconv16q", (1, 3, 3, 3), 4, (3, 3), (2, 2), "SAME", act, 0, 0, regime,
                   act_dtype=np.int16)
    _tconv(fam, "tconv16q", (1, 3, 3, 3), 4, (2, 2), (2, 2), "VALID", "NONE", 0, 0, "typ", pc=False,
           act_dtype=np.int16)
    _tconv(fam, "tconv16", (1, 3, 3, 3), 4, (3, 3), (1, 1), "SAME", "NONE", 0, 0, "typ", with_bias=False,
           act_dtype=np.int16)
    _tconv(fam, "tconv16", (2, 3, 2, 3), 5, (3, 3), (2, 1), "SAME", "RELU", 0, 0, "typ", act_dtype=np.int16)
    _tconv(fam, "tconv16_real", (1, 6, 6, 8), 8, (2, 2), (2, 2), "VALID", "RELU", 0, 0, "typ",
           act_dtype=np.int16)
    return fam


GENERATORS = {"transpose_conv": gen_transpose_conv_int8}
GENERATORS_16X8 = {"transpose_conv16x8": gen_transpose_conv_16x8}
