"""SOFTMAX (softmax.json, softmax_16x8.json), LOGISTIC (logistic.json), TANH (tanh.json),
HARD_SWISH (hard_swish.json) and LEAKY_RELU (leaky_relu.json, leaky_relu_16x8.json) goldens.

The elementwise ones (LOGISTIC, TANH, HARD_SWISH) are exhaustive: every case's input holds each of
the 256 int8 values (shuffled, in a few shapes), so a case checks the whole function for its
scale and zero point.

The ``*_split_*`` cases (end of file) are configurations found by a seeded search where TFLite
Micro and the interpreter's reference kernels differ (LOGISTIC, TANH, SOFTMAX 16x8).
"""
import numpy as np

from common import BO, OPT, S, Family, ModelBuilder, case_rng, f32, fmt_num, run_both, split_rng, tensor_json, uniform_int


def all_int8(rng, shape=(1, 256)):
    """Every int8 value once, shuffled, reshaped to ``shape`` (256 elements)."""
    x = np.arange(-128, 128, dtype=np.int16)
    rng.shuffle(x)
    return x.astype(np.int8).reshape(shape)


def unary_model(code, version, shape, dtype, in_s, in_zp, out_s, out_zp, options_type=None, options=None):
    mb = ModelBuilder()
    ti = mb.tensor("input", shape, dtype, [in_s], [in_zp])
    to = mb.tensor("output", shape, dtype, [out_s], [out_zp])
    mb.operator(code, version, [ti], [to], options_type, options)
    return mb.build([ti], [to])


def unary_case(fam, code, version, name, x, in_s, in_zp, out_s, out_zp, options_type=None, options=None,
               extra=None, must_differ=False):
    model = unary_model(code, version, x.shape, x.dtype, in_s, in_zp, out_s, out_zp, options_type, options)
    fields = {"input": tensor_json(x), "input_scale": f32(in_s), "input_zero_point": in_zp}
    if extra:
        fields.update(extra)
    fields.update({"output_scale": f32(out_s), "output_zero_point": out_zp})
    return fam.run(name, model, [x], fields, must_differ=must_differ)


_fmt = fmt_num


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
    _unary_splits(fam, BO.LOGISTIC, "logistic", _sigmoid, 1.0 / 256, -128, LOGISTIC_SPLITS_GIVEN, 4)
    return fam


def gen_tanh():
    fam = Family("tanh.json", "TANH", "tests/gen/kernels/gen_activations.py",
                 "int8, exhaustive inputs; output scale 1/128, zero point 0 (TFLite requires it)")
    _fixed_output(fam, BO.TANH, "tanh", 1.0 / 128, 0)
    _unary_splits(fam, BO.TANH, "tanh", np.tanh, 1.0 / 128, 0, TANH_SPLITS_GIVEN, 4)
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


def softmax_options(beta):
    o = S.SoftmaxOptionsT()
    o.beta = float(np.float32(beta))
    return o


def softmax_case(fam, name, shape, in_s, in_zp, beta, dtype=np.int8, x=None, must_differ=False):
    rng = case_rng(name)
    if x is None:
        info = np.iinfo(dtype)
        x = uniform_int(rng, int(info.min), int(info.max), shape, dtype)
    if dtype == np.int8:
        out_s, out_zp, version = np.float32(1.0 / 256), -128, 2
    else:
        out_s, out_zp, version = np.float32(1.0 / 32768), 0, 3
    return unary_case(fam, BO.SOFTMAX, version, name, x, np.float32(in_s), in_zp, out_s, out_zp,
                      OPT.SoftmaxOptions, softmax_options(beta), extra={"beta": f32(beta)},
                      must_differ=must_differ)


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
    _softmax16_splits(fam)
    return fam


def _calibrated_output(fn, s, zp):
    """Output (scale, zero point) calibrated on the real-valued result of every int8 input
    (min/max including 0), as a converter would."""
    real = fn(s * (np.arange(-128, 128) - zp))
    lo, hi = min(0.0, real.min()), max(0.0, real.max())
    out_s = np.float32((hi - lo) / 255.0)
    out_zp = int(np.clip(np.rint(-128 - lo / float(out_s)), -128, 127))
    return out_s, out_zp


def leaky_relu_options(alpha):
    o = S.LeakyReluOptionsT()
    o.alpha = float(np.float32(alpha))
    return o


LEAKY_ALPHAS = [0.01, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0, -0.25]


def gen_leaky_relu():
    fam = Family("leaky_relu.json", "LEAKY_RELU", "tests/gen/kernels/gen_activations.py",
                 "int8, exhaustive inputs; free input and output scales and zero points, alpha from 0.01 to 2 "
                 "and one negative")

    def case(alpha, s, zp, out_s, out_zp, shape=(1, 256)):
        name = f"leaky_relu_a{_fmt(alpha)}_in_s{_fmt(s)}_zp{zp}_out_s{_fmt(out_s)}_zp{out_zp}"
        unary_case(fam, BO.LEAKY_RELU, 1, name, all_int8(case_rng(name), shape), np.float32(s), zp,
                   np.float32(out_s), out_zp, OPT.LeakyReluOptions, leaky_relu_options(alpha),
                   extra={"alpha": f32(alpha)})

    i = 0
    for alpha in LEAKY_ALPHAS:
        for s, zp in [(0.02, 0), (0.1, -128), (0.05, 37), (0.3, 127)]:
            out_s, out_zp = _calibrated_output(lambda r: np.where(r > 0, r, alpha * r), s, zp)
            case(alpha, s, zp, out_s, out_zp, SHAPES_256[i % len(SHAPES_256)])
            i += 1
    # Output scales much finer / coarser than the input's, zero points at the extremes, scales
    # that are not round numbers.
    for alpha, s, zp, out_s, out_zp in [(0.1, 0.05, 0, 0.0005, 0), (0.1, 0.05, 0, 0.5, 0), (0.2, 0.1, -20, 0.002, -128),
                                        (0.01, 0.02, 50, 2.0, 127), (0.3, 0.1, 0, 0.05, 127),
                                        (0.3, 0.1, 0, 0.05, -128), (0.125, 0.0371, 11, 0.0293, -77)]:
        case(alpha, s, zp, out_s, out_zp)
    return fam


def gen_leaky_relu_16x8():
    # LEAKY_RELU version 2 (int16): the interpreter's BUILTIN_REF resolver has no later version.
    fam = Family("leaky_relu_16x8.json", "LEAKY_RELU", "tests/gen/kernels/gen_activations.py",
                 "int16 input and output, zero points 0 (TFLite requires it); random inputs with the extremes")
    for alpha in [0.01, 0.2, 0.5, 2.0]:
        for s, out_s in [(1e-4, 1e-4), (3e-4, 1e-4), (1e-3, 5e-3), (2.0 ** -12, 2.0 ** -10)]:
            name = f"leaky_relu16_a{_fmt(alpha)}_in_s{_fmt(s)}_out_s{_fmt(out_s)}"
            x = uniform_int(case_rng(name), -32768, 32767, (2, 64), np.int16)
            x.flat[:4] = [-32768, -1, 0, 32767]
            unary_case(fam, BO.LEAKY_RELU, 2, name, x, np.float32(s), 0, np.float32(out_s), 0,
                       OPT.LeakyReluOptions, leaky_relu_options(alpha), extra={"alpha": f32(alpha)})
    return fam


# ---------------------------------------------------------------------------------------------
# Cases where TFLite Micro and the interpreter differ (``*_split_*``), so the golden files tell
# the two rounding modes apart. The oracles decide: a configuration is kept only when their
# outputs differ (``must_differ``); the float64 "near a rounding boundary" test below only picks
# which candidates are worth running. Searches are seeded (``split_rng``), so deterministic.
#
# LOGISTIC / TANH int8: TFLite Micro evaluates the function in gemmlowp fixed point, the
# interpreter reads a table built in float (expf / tanhf, then std::round); they part only where
# the real output lies within about 1e-5 of an output step's midpoint, which the round scales of
# the grid above never hit. Input scales given by their float32 bits.

LOGISTIC_SPLITS_GIVEN = [(0x3D9B1458, 0), (0x3E5EE7B0, -7)]
TANH_SPLITS_GIVEN = [(0x3E5EE7B0, 0), (0x3F33A4FE, -128)]
UNARY_SPLIT_MAX_RUNS = 400  # oracle runs one search may spend before giving up


def _sigmoid(r):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-r))


def _f32_from_bits(bits):
    return np.array([bits], np.uint32).view(np.float32)[0]


def _unary_splits(fam, code, prefix, fn, out_s, out_zp, given, n_search):
    """The ``given`` (scale bits, zero point) pairs, then ``n_search`` more found by a random
    search over input scales (log-uniform in [0.002, 4]) and zero points."""
    out_s = np.float32(out_s)
    for i, (bits, zp) in enumerate(given):
        s = _f32_from_bits(bits)
        name = f"{prefix}_split_in_s{_fmt(s)}_zp{zp}"
        x = all_int8(case_rng(name), SHAPES_256[i % len(SHAPES_256)])
        unary_case(fam, code, 2, name, x, s, zp, out_s, out_zp, must_differ=True)
    rng = split_rng(prefix)
    q = np.arange(-128, 128)
    grid = q.astype(np.int8).reshape(1, 256)
    found, runs = 0, 0
    while found < n_search:
        scales = np.exp(rng.uniform(np.log(0.002), np.log(4.0), 4096)).astype(np.float32)
        zps = rng.integers(-128, 128, 4096)
        v = fn(scales[:, None].astype(np.float64) * (q[None, :] - zps[:, None])) / float(out_s)
        near = np.abs(v - np.floor(v) - 0.5).min(axis=1) < 5e-5
        for s, zp in zip(scales[near], zps[near].tolist()):
            runs += 1
            if runs > UNARY_SPLIT_MAX_RUNS:
                raise SystemExit(f"{prefix}: found {found} of {n_search} splitting scales in {runs - 1} runs")
            out = run_both(unary_model(code, 2, grid.shape, np.int8, s, zp, out_s, out_zp), [grid])
            if out is None or np.array_equal(*out):
                continue
            name = f"{prefix}_split_in_s{_fmt(s)}_zp{zp}"
            if name in fam.names:
                continue
            x = all_int8(case_rng(name), SHAPES_256[(len(given) + found) % len(SHAPES_256)])
            unary_case(fam, code, 2, name, x, s, zp, out_s, out_zp, must_differ=True)
            found += 1
            if found == n_search:
                break


# SOFTMAX 16x8: TFLite Micro builds its exp and 1/(1+x) tables in float32, the interpreter in
# float64; a few entries differ by one, and rows whose computation reads them part by one. Per
# configuration (input scale, beta, depth): 4096 random rows through both oracles, the case keeps
# four rows where they differ and one where they agree. The first holds a known splitting row.
SOFTMAX16_SPLITS = [(2.0 ** -11, 1.0, 4), (1e-4, 1.0, 4), (3e-4, 1.0, 10), (5e-5, 1.0, 6), (2.0 ** -12, 0.5, 8),
                    (1e-4, 2.0, 5)]
SOFTMAX16_KNOWN_ROW = [30835, -16829, 29695, -24360]


def _softmax16_splits(fam):
    for k, (s, beta, depth) in enumerate(SOFTMAX16_SPLITS):
        name = _sname("softmax16_split", (5, depth), s, 0, beta)
        pool = uniform_int(split_rng(name), -32768, 32767, (4096, depth), np.int16)
        if k == 0:
            pool[0] = SOFTMAX16_KNOWN_ROW
        model = unary_model(BO.SOFTMAX, 3, pool.shape, np.int16, np.float32(s), 0, np.float32(1.0 / 32768), 0,
                            OPT.SoftmaxOptions, softmax_options(beta))
        a, b = run_both(model, [pool])
        rows_differ = (a != b).any(axis=1)
        differ, agree = np.nonzero(rows_differ)[0], np.nonzero(~rows_differ)[0]
        assert len(differ) >= 4, f"{name}: only {len(differ)} rows of 4096 split the oracles"
        x = pool[np.concatenate([differ[:4], agree[:1]])]
        softmax_case(fam, name, x.shape, s, 0, beta, dtype=np.int16, x=x, must_differ=True)


GENERATORS = {"softmax": gen_softmax, "logistic": gen_logistic, "tanh": gen_tanh, "hard_swish": gen_hard_swish,
              "leaky_relu": gen_leaky_relu}
GENERATORS_16X8 = {"softmax16x8": gen_softmax_16x8, "leaky_relu16x8": gen_leaky_relu_16x8}
