"""BATCH_MATMUL goldens: batch_matmul.json (int8) and batch_matmul_16x8.json (int16).

    .venv/bin/python tests/gen/kernels/gen_all.py batch_matmul batch_matmul16x8

``output[..., i, j] = clamp(requant(sum_k (lhs[..., i, k] - lhs_zp) * (rhs[..., k, j] - rhs_zp)) + out_zp)``
with ``adj_x`` / ``adj_y`` transposing the last two dimensions of lhs / rhs first, and NumPy-style
broadcasting of the batch dimensions (ranks 2 to 5, the two ranks may differ). Both operands are
activations (no constant tensor).

int8: TFLite (both oracles) takes any zero point on either operand and the output; the cases
rotate through the extremes. The multiplier ``lhs_scale * rhs_scale / output_scale`` goes through
the regimes ``typ`` (outputs spread over the int8 range), ``near1`` (M in [0.25, 1)), ``big``
(M > 1, operands a few steps from their zero points) and ``tiny`` (M ~ 2^-20).

int16 (16x8 in TFLite's naming, here 16x16: both operands int16): zero points must be 0 (TFLite
Micro's Prepare refuses others); the accumulator is int64 and the multiplier the Q15-reduced one.
"""
import numpy as np

from common import BO, OPT, S, Family, ModelBuilder, case_rng, f32, tensor_json, uniform_int

# (lhs shape, rhs shape, adj_x, adj_y): shapes as stored (before the adjoint).
SHAPES = [
    ([3, 5], [5, 4], False, False),
    ([1, 8], [8, 6], False, False),
    ([7, 16], [16, 1], False, False),
    ([5, 3], [5, 4], True, False),
    ([3, 5], [4, 5], False, True),
    ([5, 3], [4, 5], True, True),
    ([2, 4, 6], [2, 6, 3], False, False),
    ([2, 4, 6], [6, 3], False, False),
    ([4, 6], [3, 6, 5], False, False),
    ([1, 4, 6], [3, 6, 5], False, False),
    ([3, 4, 6], [1, 6, 5], False, False),
    ([3, 6, 4], [1, 5, 6], True, True),
    ([2, 4, 9], [2, 7, 9], False, True),
    ([2, 9, 4], [2, 9, 7], True, False),
    ([2, 3, 4, 5], [2, 3, 5, 6], False, False),
    ([2, 1, 4, 5], [1, 3, 5, 2], False, False),
    ([1, 2, 16, 8], [1, 2, 8, 16], False, False),
    ([1, 2, 16, 8], [1, 2, 16, 8], False, True),
    ([1, 4, 10, 10], [1, 4, 10, 8], False, False),
    ([2, 3, 4, 5], [1, 5, 6], False, False),
    ([3, 4, 6], [2, 1, 6, 5], False, False),
    ([2, 3, 5, 4], [2, 3, 6, 5], True, True),
    ([1, 2, 3, 4, 5], [2, 1, 1, 5, 3], False, False),
    ([2, 2, 2, 3, 4], [2, 2, 2, 4, 3], False, False),
]

# (lhs zp, rhs zp, output zp)
ZPS = [(0, 0, 0), (-128, 127, 5), (127, -128, -128), (3, -7, 127), (-1, 0, -20), (60, 60, -60)]

REGIMES = ("typ", "near1", "big", "tiny")


def _shape_str(s):
    return "x".join(str(d) for d in s)


def out_shape(lhs_shape, rhs_shape, adj_x, adj_y):
    rank = max(len(lhs_shape), len(rhs_shape))
    le = [1] * (rank - len(lhs_shape)) + list(lhs_shape)
    re = [1] * (rank - len(rhs_shape)) + list(rhs_shape)
    batch = list(np.broadcast_shapes(tuple(le[:-2]), tuple(re[:-2])))
    rows = le[-1] if adj_x else le[-2]
    cols = re[-2] if adj_y else re[-1]
    return batch + [rows, cols]


def bmm_model(lhs_shape, rhs_shape, adj_x, adj_y, sl, zl, sr, zr, so, zo, dtype):
    mb = ModelBuilder()
    tl = mb.tensor("lhs", lhs_shape, dtype, [sl], [zl])
    tr = mb.tensor("rhs", rhs_shape, dtype, [sr], [zr])
    to = mb.tensor("output", out_shape(lhs_shape, rhs_shape, adj_x, adj_y), dtype, [so], [zo])
    o = S.BatchMatMulOptionsT()
    o.adjX = bool(adj_x)
    o.adjY = bool(adj_y)
    o.asymmetricQuantizeInputs = False
    mb.operator(BO.BATCH_MATMUL, 2 if dtype == np.int8 else 3, [tl, tr], [to], OPT.BatchMatMulOptions, o)
    return mb.build([tl, tr], [to])


def _data_and_scales(rng, regime, k, zl, zr, dtype):
    """Operands and scales: the multiplier M = sl * sr / so chosen for the regime from the rough rms
    of the accumulator."""
    info = np.iinfo(dtype)
    lo, hi = int(info.min), int(info.max)
    target = 50.0 if dtype == np.int8 else 8000.0
    if regime == "big":
        l_lo, l_hi = max(lo, zl - 3), min(hi, zl + 3)
        r_lo, r_hi = max(lo, zr - 3), min(hi, zr + 3)
    elif regime == "near1":
        m = rng.uniform(0.25, 0.99)
        amp = int(np.clip(round(np.sqrt(3.0 * target / (m * np.sqrt(k)))), 1, hi))
        l_lo, l_hi = max(lo, zl - amp), min(hi, zl + amp)
        r_lo, r_hi = max(lo, zr - amp), min(hi, zr + amp)
    else:
        l_lo, l_hi, r_lo, r_hi = lo, hi, lo, hi

    def rms(a, b, zp):
        mean = (a + b) / 2.0
        var = ((b - a + 1) ** 2 - 1) / 12.0
        return np.sqrt(var + (mean - zp) ** 2)

    acc_rms = max(1.0, np.sqrt(k) * rms(l_lo, l_hi, zl) * rms(r_lo, r_hi, zr))
    if regime in ("typ", "big"):
        m = target / acc_rms
    elif regime == "tiny":
        m = 2.0 ** -20 * rng.uniform(1, 2)
    sl = np.float32(np.exp(rng.uniform(np.log(0.005), np.log(0.1))))
    sr = np.float32(np.exp(rng.uniform(np.log(0.005), np.log(0.1))))
    so = np.float32(float(sl) * float(sr) / m)
    return (l_lo, l_hi, r_lo, r_hi), (sl, sr, so)


def bmm_case(fam, name, lhs_shape, rhs_shape, adj_x, adj_y, zl, zr, zo, regime, dtype):
    rng = case_rng(name)
    k = lhs_shape[-2] if adj_x else lhs_shape[-1]
    (l_lo, l_hi, r_lo, r_hi), (sl, sr, so) = _data_and_scales(rng, regime, k, zl, zr, dtype)
    lhs = uniform_int(rng, l_lo, l_hi, lhs_shape, dtype)
    rhs = uniform_int(rng, r_lo, r_hi, rhs_shape, dtype)
    model = bmm_model(lhs_shape, rhs_shape, adj_x, adj_y, sl, zl, sr, zr, so, zo, dtype)
    fields = {"lhs": tensor_json(lhs), "lhs_scale": f32(sl), "lhs_zero_point": zl,
              "rhs": tensor_json(rhs), "rhs_scale": f32(sr), "rhs_zero_point": zr,
              "output_scale": f32(so), "output_zero_point": zo, "adj_x": bool(adj_x), "adj_y": bool(adj_y)}
    return fam.run(name, model, [lhs, rhs], fields)


def _tag(sh_l, sh_r, adj_x, adj_y):
    return f"{_shape_str(sh_l)}_{_shape_str(sh_r)}" + ("_adjx" if adj_x else "") + ("_adjy" if adj_y else "")


def gen_batch_matmul():
    fam = Family("batch_matmul.json", "BATCH_MATMUL", "tests/gen/kernels/gen_batch_matmul.py",
                 "int8, both operands activations with their own scale and zero point; adj_x / adj_y; "
                 "ranks 2-5 with broadcast batch dimensions")
    for i, (sl, sr, ax, ay) in enumerate(SHAPES):
        zl, zr, zo = ZPS[i % len(ZPS)]
        bmm_case(fam, f"bmm_{_tag(sl, sr, ax, ay)}_zp{zl}_{zr}_{zo}", sl, sr, ax, ay, zl, zr, zo, "typ", np.int8)
    for regime in REGIMES[1:]:
        for i, (sl, sr, ax, ay) in enumerate(SHAPES[::4]):
            zl, zr, zo = ZPS[(i + 1) % len(ZPS)]
            bmm_case(fam, f"bmm_{regime}_{_tag(sl, sr, ax, ay)}_zp{zl}_{zr}_{zo}", sl, sr, ax, ay, zl, zr, zo, regime,
                     np.int8)
    for zl, zr, zo in ZPS:
        bmm_case(fam, f"bmm_zp{zl}_{zr}_{zo}", [2, 6, 11], [2, 11, 5], False, False, zl, zr, zo, "typ", np.int8)
    return fam


def gen_batch_matmul_16x8():
    fam = Family("batch_matmul_16x8.json", "BATCH_MATMUL", "tests/gen/kernels/gen_batch_matmul.py",
                 "int16 operands and output, zero points 0; int64 accumulator")
    for i, (sl, sr, ax, ay) in enumerate(SHAPES[::2]):
        regime = ("typ", "near1", "big", "tiny")[i % 4]
        bmm_case(fam, f"bmm16_{regime}_{_tag(sl, sr, ax, ay)}", sl, sr, ax, ay, 0, 0, 0, regime, np.int16)
    return fam


GENERATORS = {"batch_matmul": gen_batch_matmul}
GENERATORS_16X8 = {"batch_matmul16x8": gen_batch_matmul_16x8}
