"""RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR goldens: resize_nearest_neighbor.json (int8),
resize_bilinear.json (int8), resize_nearest_neighbor_16x8.json (int16). TFLite Micro has no int16
RESIZE_BILINEAR ("Output type is 7, requires float or int8"), so there is no 16x8 bilinear file.

Each case is an NHWC input, a constant int32 size operand [out_h, out_w] and the options
align_corners / half_pixel_centers. Input and output share scale and zero point (TFLite's
quantization spec requires it; neither runtime requantizes).
"""
import numpy as np

from common import BO, OPT, S, Family, ModelBuilder, case_rng, f32, tensor_json, uniform_int

# (input NHWC, output [h, w]): integer up-scales, fractional ones, down-scales, 1-pixel edges.
SHAPES = [
    ([1, 2, 2, 1], [4, 4]), ([1, 3, 3, 2], [6, 6]), ([1, 4, 5, 3], [8, 10]), ([1, 2, 3, 4], [6, 9]),
    ([1, 3, 4, 2], [5, 7]), ([2, 3, 3, 3], [4, 5]), ([1, 8, 8, 2], [4, 4]), ([1, 7, 5, 1], [3, 2]),
    ([1, 1, 1, 3], [3, 2]), ([1, 4, 4, 1], [1, 1]), ([1, 5, 5, 2], [5, 5]), ([1, 6, 4, 3], [9, 13]),
    ([1, 16, 16, 4], [32, 32]),
]
FLAGS = [(False, False), (True, False), (False, True)]


def _s(shape):
    return "x".join(str(d) for d in shape)


def resize_case(fam, name, nearest, shape, size, align, half, dtype):
    rng = case_rng(name)
    info = np.iinfo(dtype)
    if dtype == np.int8:
        s, zp = np.float32(np.exp(rng.uniform(np.log(0.005), np.log(0.5)))), int(rng.integers(-128, 128))
    else:
        s, zp = np.float32(np.exp(rng.uniform(np.log(2e-5), np.log(2e-3)))), 0
    x = uniform_int(rng, int(info.min), int(info.max), shape, dtype)
    out_shape = [shape[0], size[0], size[1], shape[3]]
    mb = ModelBuilder()
    ti = mb.tensor("input", shape, dtype, [s], [zp])
    tsz = mb.tensor("size", [2], np.int32, data=np.array(size, np.int32))
    to = mb.tensor("output", out_shape, dtype, [s], [zp])
    if nearest:
        o = S.ResizeNearestNeighborOptionsT()
        o.alignCorners, o.halfPixelCenters = align, half
        mb.operator(BO.RESIZE_NEAREST_NEIGHBOR, 4 if dtype == np.int16 else 3, [ti, tsz], [to],
                    OPT.ResizeNearestNeighborOptions, o)
    else:
        o = S.ResizeBilinearOptionsT()
        o.alignCorners, o.halfPixelCenters = align, half
        mb.operator(BO.RESIZE_BILINEAR, 3, [ti, tsz], [to], OPT.ResizeBilinearOptions, o)
    model = mb.build([ti], [to])
    fields = {"input": tensor_json(x), "size": [int(v) for v in size], "align_corners": align,
              "half_pixel_centers": half, "scale": f32(s), "zero_point": zp}
    return fam.run(name, model, [x], fields)


def _family(nearest, dtype):
    op = "RESIZE_NEAREST_NEIGHBOR" if nearest else "RESIZE_BILINEAR"
    tag = "" if dtype == np.int8 else "_16x8"
    fam = Family(f"{op.lower()}{tag}.json", op, "tests/gen/kernels/gen_spatial.py",
                 f"{'int8' if dtype == np.int8 else 'int16'}; input and output share scale and zero point")
    flags = FLAGS + ([(True, True)] if nearest else [])
    shapes = SHAPES if dtype == np.int8 else SHAPES[:6]
    for shape, size in shapes:
        for align, half in flags:
            name = (f"{'nearest' if nearest else 'bilinear'}{tag}_{_s(shape)}_to_{_s(size)}"
                    f"{'_align' if align else ''}{'_half' if half else ''}")
            resize_case(fam, name, nearest, shape, size, align, half, dtype)
    return fam


def gen_resize_nearest_neighbor():
    return _family(True, np.int8)


def gen_resize_bilinear():
    return _family(False, np.int8)


def gen_resize_nearest_neighbor_16x8():
    return _family(True, np.int16)


GENERATORS = {"resize_nearest_neighbor": gen_resize_nearest_neighbor, "resize_bilinear": gen_resize_bilinear}
GENERATORS_16X8 = {"resize_nearest_neighbor16x8": gen_resize_nearest_neighbor_16x8}


# ---------------------------------------------------------------------------------------------
# SUM and REDUCE_MAX over any axes (TFLite Micro reduce.cc): reduce_sum.json, reduce_sum_16x8.json,
# reduce_max.json.

REDUCE_CONFIGS = [
    ([1, 4, 4, 3], [1, 2]), ([1, 4, 4, 3], [3]), ([1, 4, 4, 3], [-1]), ([1, 4, 4, 3], [0, 1, 2, 3]),
    ([2, 3, 4, 5], [0]), ([2, 3, 4, 5], [1, 3]), ([2, 3, 4, 5], [2, 0]), ([3, 6], [1]), ([3, 6], [0]),
    ([10], [0]), ([2, 3, 5], [1, 2]), ([2, 3, 5], [-2]), ([1, 8, 8, 16], [1, 2]),
]


def reduce_case(fam, name, op, shape, axis, keep_dims, in_q, out_q, dtype):
    rng = case_rng(name)
    info = np.iinfo(dtype)
    x = uniform_int(rng, int(info.min), int(info.max), shape, dtype)
    rank = len(shape)
    axes = sorted({a % rank for a in axis})
    if out_q is None:
        # A sum: an output scale and zero point that cover the real sums (x 0.8 to 1.25).
        real = (x.astype(np.float64) - in_q[1]).sum(axis=tuple(axes)) * float(in_q[0])
        lo, hi = min(0.0, float(real.min())), max(0.0, float(real.max()))
        span = float(info.max) - float(info.min)
        scale = max(hi - lo, float(in_q[0])) / span * np.exp(rng.uniform(np.log(0.8), np.log(1.25)))
        zp = 0 if dtype == np.int16 else int(np.clip(round(float(info.min) - lo / scale), info.min, info.max))
        out_q = (np.float32(scale), zp)
    out_shape = [1 if d in axes else n for d, n in enumerate(shape)] if keep_dims else \
        [n for d, n in enumerate(shape) if d not in axes]
    mb = ModelBuilder()
    ti = mb.tensor("input", shape, dtype, [in_q[0]], [in_q[1]])
    ta = mb.tensor("axis", [len(axis)], np.int32, data=np.array(axis, np.int32))
    to = mb.tensor("output", out_shape, dtype, [out_q[0]], [out_q[1]])
    o = S.ReducerOptionsT()
    o.keepDims = keep_dims
    mb.operator(op, 2, [ti, ta], [to], OPT.ReducerOptions, o)
    model = mb.build([ti], [to])
    fields = {"input": tensor_json(x), "axis": [int(a) for a in axis], "keep_dims": keep_dims,
              "input_scale": f32(in_q[0]), "input_zero_point": in_q[1],
              "output_scale": f32(out_q[0]), "output_zero_point": out_q[1]}
    return fam.run(name, model, [x], fields)


def _reduce_family(sum_, dtype):
    op = BO.SUM if sum_ else BO.REDUCE_MAX
    opname = "SUM" if sum_ else "REDUCE_MAX"
    tag = "" if dtype == np.int8 else "_16x8"
    fam = Family(f"reduce_{'sum' if sum_ else 'max'}{tag}.json", opname, "tests/gen/kernels/gen_spatial.py",
                 ("int8" if dtype == np.int8 else "int16") +
                 ("; output scale and zero point cover the real sums (a requantizing sum); the TFLite "
                   "interpreter's reference SUM is recorded but not an oracle (see tests/src/oracle/spatial.rs)"
                   if sum_ else
                  "; input and output share scale and zero point (TFLite Micro requires it)"))
    for k, (shape, axis) in enumerate(REDUCE_CONFIGS):
        for keep in [True, False]:
            name = (f"{'sum' if sum_ else 'max'}{tag}_{_s(shape)}_axis{'_'.join(map(str, axis))}"
                    f"_{'keep' if keep else 'drop'}")
            rng = case_rng(name + "/q")
            if dtype == np.int8:
                in_q = (np.float32(np.exp(rng.uniform(np.log(0.005), np.log(0.5)))),
                        [-128, 127, 0, int(rng.integers(-128, 128))][k % 4])
            else:
                in_q = (np.float32(np.exp(rng.uniform(np.log(2e-5), np.log(2e-3)))), 0)
            reduce_case(fam, name, op, shape, axis, keep, in_q, None if sum_ else in_q, dtype)
    return fam


def gen_reduce_sum():
    return _reduce_family(True, np.int8)


def gen_reduce_sum_16x8():
    return _reduce_family(True, np.int16)


def gen_reduce_max():
    return _reduce_family(False, np.int8)


GENERATORS.update({"reduce_sum": gen_reduce_sum, "reduce_max": gen_reduce_max})
GENERATORS_16X8.update({"reduce_sum16x8": gen_reduce_sum_16x8})
