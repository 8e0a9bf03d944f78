"""SOFTMAX (softmax.json, softmax_16x8.json), LOGISTIC (logistic.json), TANH (tanh.json) and
HARD_SWISH (hard_swish.json) goldens.

The elementwise ones (LOGISTIC, TANH, HARD_SWISH) are exhaustive: every case's input holds each of
the 256 int8 values (shuffled, in a few shapes), so a case checks the whole function for its
scale and zero point.
"""
import numpy as np

from common import BO, OPT, S, Family, ModelBuilder, case_rng, f32, tensor_json, uniform_int


def all_int8(rng, shape=(1, 256)):
    """Every int8 value once, shuffled, reshaped to ``shape`` (256 elements)."""
    x = np.arange(-128, 128, dtype=np.int16)
    rng.shuffle(x)
    return x.astype(np.int8).reshape(shape)


def unary_case(fam, code, version, name, x, in_s, in_zp, out_s, out_zp, options_type=None, options=None,
               extra=None):
    dtype = x.dtype
    mb = ModelBuilder()
    ti = mb.tensor("input", x.shape, dtype, [in_s], [in_zp])
    to = mb.tensor("output", x.shape, dtype, [out_s], [out_zp])
    mb.operator(code, version, [ti], [to], options_type, options)
    model = mb.build([ti], [to])
    fields = {"input": tensor_json(x), "input_scale": f32(in_s), "input_zero_point": in_zp}
    if extra:
        fields.update(extra)
    fields.update({"output_scale": f32(out_s), "output_zero_point": out_zp})
    return fam.run(name, model, [x], fields)


def _fmt(v):
    return f"{float(np.float32(v)):.6g}".replace("-", "m").replace(".", "p")


SHAPES_256 = [(1, 256), (256,), (2, 8, 16), (1, 4, 8, 8)]
IN_SCALES = [0.001, 0.01, 0.03125, 0.05, 0.1, 0.2, 0.5, 1.0, 3.0]
IN_ZPS = [-128, 0, 127, 37]


def _fixed_output(fam, code, prefix, out_s, out_zp):
    i = 0
    for s in IN_SCALES:
        for zp in IN_ZPS:
            name = f"{prefix}_in_s{_fmt(s)}_zp{zp}"
            rng = case_rng(name)
            x = all_int8(rng, SHAPES_256[i % len(SHAPES_256)])
            unary_case(fam, code, 2, name, x, np.float32(s), zp, np.float32(out_s), out_zp)
            i += 1
    # Scales that are not round numbers.
    for k in range(6):
        rng = case_rng(f"{prefix}-odd-{k}")
        s = np.float32(np.exp(rng.uniform(np.log(0.002), np.log(2.0))))
        zp = int(rng.integers(-128, 128))
        name = f"{prefix}_in_s{_fmt(s)}_zp{zp}"
        unary_case(fam, code, 2, name, all_int8(case_rng(name)), s, zp, np.float32(out_s), out_zp)


def gen_logistic():
    fam = Family("logistic.json", "LOGISTIC", "tests/gen/kernels/gen_activations.py",
                 "int8, exhaustive inputs; output scale 1/256, zero point -128 (TFLite requires it)")
    _fixed_output(fam, BO.LOGISTIC, "logistic", 1.0 / 256, -128)
    return fam


def gen_tanh():
    fam = Family("tanh.json", "TANH", "tests/gen/kernels/gen_activations.py",
                 "int8, exhaustive inputs; output scale 1/128, zero point 0 (TFLite requires it)")
    _fixed_output(fam, BO.TANH, "tanh", 1.0 / 128, 0)
    return fam


def _hswish(r):
    return r * np.clip(r + 3.0, 0.0, 6.0) / 6.0


def gen_hard_swish():
    fam = Family("hard_swish.json", "HARD_SWISH", "tests/gen/kernels/gen_activations.py",
                 "int8, exhaustive inputs; free input and output scales and zero points")
    i = 0
    # Output qparams calibrated on the real-valued result (min/max incl. 0), as a converter would.
    for s in [0.005, 0.02, 0.05, 0.1, 0.3, 1.0]:
        for zp in IN_ZPS:
            real = _hswish(s * (np.arange(-128, 128) - zp))
            lo, hi = min(0.0, real.min()), max(0.0, real.max())
            out_s = np.float32((hi - lo) / 255.0)
            out_zp = int(np.clip(np.rint(-128 - lo / float(out_s)), -128, 127))
            name = f"hard_swish_in_s{_fmt(s)}_zp{zp}_out_s{_fmt(out_s)}_zp{out_zp}"
            x = all_int8(case_rng(name), SHAPES_256[i % len(SHAPES_256)])
            unary_case(fam, BO.HARD_SWISH, 1, name, x, np.float32(s), zp, out_s, out_zp)
            i += 1
    # Output scale much finer / coarser than the input's (requantization shifts at both ends),
    # output zero points at the extremes.
    for s, zp, out_s, out_zp in [(0.05, 0, 0.0005, 0), (0.05, 0, 0.5, 0), (0.1, -20, 0.002, -128),
                                 (0.02, 50, 2.0, 127), (0.1, 0, 0.05, 127), (0.1, 0, 0.05, -128),
                                 (0.5, 3, 0.01, -100), (0.003, -128, 0.0001, -128), (2.0, 0, 0.3, -30)]:
        name = f"hard_swish_in_s{_fmt(s)}_zp{zp}_out_s{_fmt(out_s)}_zp{out_zp}"
        unary_case(fam, BO.HARD_SWISH, 1, name, all_int8(case_rng(name)), np.float32(s), zp, np.float32(out_s),
                   out_zp)
    return fam


def softmax_case(fam, name, shape, in_s, in_zp, beta, dtype=np.int8, x=None):
    rng = case_rng(name)
    if x is None:
        info = np.iinfo(dtype)
        x = uniform_int(rng, int(info.min), int(info.max), shape, dtype)
    o = S.SoftmaxOptionsT()
    o.beta = float(np.float32(beta))
    if dtype == np.int8:
        out_s, out_zp, version = np.float32(1.0 / 256), -128, 2
    else:
        out_s, out_zp, version = np.float32(1.0 / 32768), 0, 3
    return unary_case(fam, BO.SOFTMAX, version, name, x, np.float32(in_s), in_zp, out_s, out_zp,
                      OPT.SoftmaxOptions, o, extra={"beta": f32(beta)})


def _sname(prefix, shape, s, zp, beta, tag=""):
    return f"{prefix}_{'x'.join(map(str, shape))}_s{_fmt(s)}_zp{zp}_beta{_fmt(beta)}{tag}"


def gen_softmax():
    fam = Family("softmax.json", "SOFTMAX", "tests/gen/kernels/gen_activations.py",
                 "int8 input; int8 output with scale 1/256, zero point -128 (TFLite requires it); "
                 "softmax over the last dimension")
    shapes = [(1, 10), (2, 7), (1, 1), (3, 1, 17), (1, 2, 3, 12), (1, 1000), (1, 2), (1, 12), (5, 3)]
    for k, shape in enumerate(shapes):
        for s, zp in [(0.1, -128), (0.0625, 27)] if k % 2 == 0 else [(0.05, 0), (0.25, 127)]:
            softmax_case(fam, _sname("softmax", shape, s, zp, 1.0), shape, s, zp, 1.0)
    for s in [0.001, 0.01, 0.05, 0.1, 0.25, 1.0, 4.0]:
        for beta in [1.0, 0.5, 2.0]:
            softmax_case(fam, _sname("softmax_scale", (4, 16), s, -7, beta), (4, 16), s, -7, beta)
    for zp in [-128, 0, 127, 99]:
        softmax_case(fam, _sname("softmax_zp", (2, 10), 0.08, zp, 1.0), (2, 10), 0.08, zp, 1.0)
    # Rows with all-equal values, one dominant value, extremes.
    x = np.stack([np.full(8, v, np.int8) for v in [-128, 0, 127]] + [np.array([-128] * 7 + [127], np.int8)])
    softmax_case(fam, _sname("softmax_rows", x.shape, 0.1, 0, 1.0, "_flat_and_peaked"), x.shape, 0.1, 0, 1.0, x=x)
    softmax_case(fam, _sname("softmax_rows", x.shape, 0.01, -128, 1.0, "_flat_and_peaked"), x.shape, 0.01, -128,
                 1.0, x=x)
    # The MLPerf Tiny heads: KWS [1,12] (input 1/256-ish scales), IC [1,10], VWW [1,2].
    for shape, s, zp in [((1, 12), 0.1733, 22), ((1, 10), 0.1284, 13), ((1, 2), 0.0501, -3)]:
        softmax_case(fam, _sname("softmax_real", shape, s, zp, 1.0), shape, s, zp, 1.0)
    return fam


def gen_softmax_16x8():
    fam = Family("softmax_16x8.json", "SOFTMAX", "tests/gen/kernels/gen_activations.py",
                 "int16 input (zero point 0); int16 output with scale 1/32768, zero point 0 (TFLite requires "
                 "it); softmax over the last dimension")
    shapes = [(1, 10), (2, 7), (1, 1), (3, 1, 17), (1, 2, 3, 12), (1, 300), (5, 3)]
    for k, shape in enumerate(shapes):
        s = [1e-4, 3e-4, 1e-3][k % 3]
        softmax_case(fam, _sname("softmax16", shape, s, 0, 1.0), shape, s, 0, 1.0, dtype=np.int16)
    for s in [1e-5, 1e-4, 2.0 ** -12, 3e-4, 1e-3]:
        for beta in [1.0, 0.5, 2.0]:
            softmax_case(fam, _sname("softmax16_scale", (4, 16), s, 0, beta), (4, 16), s, 0, beta, dtype=np.int16)
    x = np.stack([np.full(8, v, np.int16) for v in [-32768, 0, 32767]] +
                 [np.array([-32768] * 7 + [32767], np.int16)])
    softmax_case(fam, _sname("softmax16_rows", x.shape, 3e-4, 0, 1.0, "_flat_and_peaked"), x.shape, 3e-4, 0, 1.0,
                 dtype=np.int16, x=x)
    return fam


GENERATORS = {"softmax": gen_softmax, "logistic": gen_logistic, "tanh": gen_tanh, "hard_swish": gen_hard_swish}
GENERATORS_16X8 = {"softmax16x8": gen_softmax_16x8}
