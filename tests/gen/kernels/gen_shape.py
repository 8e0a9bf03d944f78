"""CONCATENATION, PAD, MEAN, RESHAPE and TRANSPOSE goldens (int8): concatenation.json, pad.json,
mean.json, reshape.json, transpose.json.

Axis / paddings / perm / shape operands are constant int32 tensors in the model and are stored
in the case as given (negative axes included).
"""
import numpy as np

from common import BO, OPT, S, Family, ModelBuilder, case_rng, f32, tensor_json, uniform_int


def _s(shape):
    return "x".join(str(d) for d in shape) if len(shape) else "scalar"


def _scale(rng):
    return np.float32(np.exp(rng.uniform(np.log(0.005), np.log(0.5))))


# ---------------------------------------------------------------------------------------------
# CONCATENATION

def concat_case(fam, name, shapes, axis, qparams=None):
    """qparams: None (all inputs and the output share one scale / zero point) or a list of
    (scale, zp) per input plus the output's last."""
    rng = case_rng(name)
    if qparams is None:
        s, zp = _scale(rng), int(rng.integers(-128, 128))
        qparams = [(s, zp)] * (len(shapes) + 1)
    xs = [uniform_int(rng, -128, 127, sh, np.int8) for sh in shapes]
    rank = len(shapes[0])
    ax = axis % rank
    out_shape = list(shapes[0])
    out_shape[ax] = sum(sh[ax] for sh in shapes)
    mb = ModelBuilder()
    tins = [mb.tensor(f"input{k}", sh, np.int8, [qparams[k][0]], [qparams[k][1]]) for k, sh in enumerate(shapes)]
    to = mb.tensor("output", out_shape, np.int8, [qparams[-1][0]], [qparams[-1][1]])
    o = S.ConcatenationOptionsT()
    o.axis = axis
    mb.operator(BO.CONCATENATION, 2, tins, [to], OPT.ConcatenationOptions, o)
    model = mb.build(tins, [to])
    fields = {"inputs": [tensor_json(x) for x in xs], "input_scales": [f32(q[0]) for q in qparams[:-1]],
              "input_zero_points": [int(q[1]) for q in qparams[:-1]], "axis": axis,
              "output_scale": f32(qparams[-1][0]), "output_zero_point": int(qparams[-1][1]), "activation": "NONE"}
    return fam.run(name, model, xs, fields)


def gen_concatenation():
    fam = Family("concatenation.json", "CONCATENATION", "tests/gen/kernels/gen_shape.py",
                 "int8; all inputs and the output share scale and zero point (TFLite Micro requires it)")
    base = {1: [7], 2: [3, 5], 3: [2, 3, 4], 4: [1, 3, 4, 5]}
    for rank, shp in base.items():
        for axis in list(range(rank)) + [-1]:
            for n in [2, 3] if axis != -1 else [4]:
                shapes = []
                for k in range(n):
                    sh = list(shp)
                    sh[axis % rank] = [1, 2, 3, 5][(k + axis) % 4]
                    shapes.append(sh)
                name = f"concat_r{rank}_axis{axis}_" + "_".join(_s(s) for s in shapes)
                concat_case(fam, name, shapes, axis)
    # Single input; zero-size-free realistic channel concat (an inception-style merge).
    concat_case(fam, "concat_single_1x4x4x3_axis3", [[1, 4, 4, 3]], 3)
    concat_case(fam, "concat_real_1x8x8x16_1x8x8x16_1x8x8x32_axis3", [[1, 8, 8, 16], [1, 8, 8, 16], [1, 8, 8, 32]], 3)
    concat_case(fam, "concat_axis-2_2x3x4_2x1x4", [[2, 3, 4], [2, 1, 4]], -2)
    # Differing quantization (requantizing concat): kept only if both oracles accept it.
    concat_case(fam, "concat_diffq_1x2x2x3_1x2x2x2_axis3", [[1, 2, 2, 3], [1, 2, 2, 2]], 3,
                qparams=[(np.float32(0.05), 3), (np.float32(0.1), -20), (np.float32(0.1), -20)])
    return fam


# ---------------------------------------------------------------------------------------------
# PAD

def pad_case(fam, name, shape, paddings, s=None, zp=None):
    rng = case_rng(name)
    if s is None:
        s, zp = _scale(rng), int(rng.integers(-128, 128))
    x = uniform_int(rng, -128, 127, shape, np.int8)
    out_shape = [d + a + b for d, (a, b) in zip(shape, paddings)]
    mb = ModelBuilder()
    ti = mb.tensor("input", shape, np.int8, [s], [zp])
    tp = mb.tensor("paddings", [len(shape), 2], np.int32, data=np.array(paddings, np.int32).reshape(len(shape), 2))
    to = mb.tensor("output", out_shape, np.int8, [s], [zp])
    mb.operator(BO.PAD, 2, [ti, tp], [to], OPT.PadOptions, S.PadOptionsT())
    model = mb.build([ti], [to])
    fields = {"input": tensor_json(x), "paddings": [[int(a), int(b)] for a, b in paddings],
              "input_scale": f32(s), "input_zero_point": zp, "output_scale": f32(s), "output_zero_point": zp}
    return fam.run(name, model, [x], fields)


def gen_pad():
    fam = Family("pad.json", "PAD", "tests/gen/kernels/gen_shape.py",
                 "int8; padded elements hold the zero point; input and output share quantization")
    cases = [
        ([5], [[2, 3]]), ([5], [[0, 0]]), ([3, 4], [[1, 0], [0, 2]]), ([2, 3, 4], [[0, 1], [2, 2], [1, 0]]),
        ([1, 4, 4, 3], [[0, 0], [1, 1], [1, 1], [0, 0]]), ([1, 4, 4, 3], [[0, 0], [0, 1], [0, 1], [0, 0]]),
        ([1, 5, 3, 2], [[0, 0], [2, 0], [0, 3], [0, 0]]), ([1, 3, 3, 2], [[0, 0], [0, 0], [0, 0], [1, 2]]),
        ([2, 2, 3, 1], [[1, 1], [0, 0], [0, 0], [0, 0]]), ([1, 1, 1, 1], [[0, 0], [3, 3], [3, 3], [0, 0]]),
        ([1, 2, 2, 4], [[1, 2], [3, 1], [2, 3], [1, 1]]), ([1, 16, 16, 8], [[0, 0], [1, 1], [1, 1], [0, 0]]),
        ([1, 7, 7, 3], [[0, 0], [0, 1], [0, 1], [0, 0]]),
    ]
    for shape, pads in cases:
        for zp in [-128, 127, None]:
            tag = "rand" if zp is None else f"zp{zp}"
            name = f"pad_{_s(shape)}_" + "_".join(f"{a}{b}" for a, b in pads) + f"_{tag}"
            pad_case(fam, name, shape, pads, None if zp is None else np.float32(0.07), zp)
    return fam


# ---------------------------------------------------------------------------------------------
# MEAN

def mean_case(fam, name, shape, axis, keep_dims, in_q, out_q):
    rng = case_rng(name)
    x = uniform_int(rng, -128, 127, shape, np.int8)
    rank = len(shape)
    axes = sorted({a % rank for a in axis})
    out_shape = [1 if d in axes else n for d, n in enumerate(shape)] if keep_dims else \
        [n for d, n in enumerate(shape) if d not in axes]
    mb = ModelBuilder()
    ti = mb.tensor("input", shape, np.int8, [in_q[0]], [in_q[1]])
    ta = mb.tensor("axis", [len(axis)], np.int32, data=np.array(axis, np.int32))
    to = mb.tensor("output", out_shape, np.int8, [out_q[0]], [out_q[1]])
    o = S.ReducerOptionsT()
    o.keepDims = keep_dims
    mb.operator(BO.MEAN, 2, [ti, ta], [to], OPT.ReducerOptions, o)
    model = mb.build([ti], [to])
    fields = {"input": tensor_json(x), "axis": [int(a) for a in axis], "keep_dims": keep_dims,
              "input_scale": f32(in_q[0]), "input_zero_point": in_q[1],
              "output_scale": f32(out_q[0]), "output_zero_point": out_q[1]}
    return fam.run(name, model, [x], fields)


def gen_mean():
    fam = Family("mean.json", "MEAN", "tests/gen/kernels/gen_shape.py",
                 "int8; input and output quantization equal or different (requantizing mean)")
    configs = [
        ([1, 4, 4, 3], [1, 2]), ([1, 5, 3, 8], [1, 2]), ([2, 3, 3, 5], [1, 2]), ([1, 1, 1, 7], [1, 2]),
        ([1, 4, 4, 3], [2, 1]), ([1, 4, 4, 3], [-3, -2]), ([1, 4, 4, 3], [3]), ([1, 4, 4, 3], [-1]),
        ([1, 4, 4, 3], [1]), ([2, 3, 4, 5], [0]), ([2, 3, 4, 5], [0, 1, 2, 3]), ([2, 3, 4, 5], [1, 3]),
        ([3, 6], [1]), ([3, 6], [0]), ([10], [0]), ([2, 3, 5], [1, 2]), ([1, 8, 8, 64], [1, 2]),
    ]
    for k, (shape, axis) in enumerate(configs):
        for keep in [True, False]:
            for mode in ["same", "diff"]:
                name = f"mean_{_s(shape)}_axis{'_'.join(map(str, axis))}_{'keep' if keep else 'drop'}_{mode}"
                rng = case_rng(name + "/q")
                in_q = (_scale(rng), [-128, 127, 0, int(rng.integers(-128, 128))][k % 4])
                if mode == "same":
                    out_q = in_q
                else:
                    out_q = (np.float32(float(in_q[0]) * np.exp(rng.uniform(np.log(0.25), np.log(4)))),
                             int(rng.integers(-128, 128)))
                mean_case(fam, name, shape, axis, keep, in_q, out_q)
    # Requantization at the ends: output scale 100x finer / coarser.
    for tag, f in [("out_fine", 0.01), ("out_coarse", 100.0)]:
        mean_case(fam, f"mean_1x4x4x3_axis1_2_keep_{tag}", [1, 4, 4, 3], [1, 2], True, (np.float32(0.05), 0),
                  (np.float32(0.05 * f), -10))
    return fam


# ---------------------------------------------------------------------------------------------
# RESHAPE

def reshape_case(fam, name, shape, new_shape):
    rng = case_rng(name)
    s, zp = _scale(rng), int(rng.integers(-128, 128))
    x = uniform_int(rng, -128, 127, shape, np.int8)
    n = int(np.prod(shape))
    known = int(np.prod([d for d in new_shape if d != -1])) if new_shape else 1
    out_shape = [n // known if d == -1 else d for d in new_shape]
    mb = ModelBuilder()
    ti = mb.tensor("input", shape, np.int8, [s], [zp])
    ts = mb.tensor("shape", [len(new_shape)], np.int32, data=np.array(new_shape, np.int32))
    to = mb.tensor("output", out_shape, np.int8, [s], [zp])
    o = S.ReshapeOptionsT()
    o.newShape = list(new_shape)
    mb.operator(BO.RESHAPE, 1, [ti, ts], [to], OPT.ReshapeOptions, o)
    model = mb.build([ti], [to])
    fields = {"input": tensor_json(x), "new_shape": [int(d) for d in new_shape], "input_scale": f32(s),
              "input_zero_point": zp, "output_scale": f32(s), "output_zero_point": zp}
    return fam.run(name, model, [x], fields)


def gen_reshape():
    fam = Family("reshape.json", "RESHAPE", "tests/gen/kernels/gen_shape.py",
                 "int8; a copy with a new shape (the output shape is expected_*.shape)")
    for shape, new in [([1, 1, 1, 64], [1, 64]), ([1, 4, 4, 3], [1, 48]), ([1, 4, 4, 3], [-1, 12]),
                       ([2, 6], [3, 4]), ([2, 6], [12]), ([24], [2, 3, 4]), ([2, 3, 4], [4, -1]),
                       ([1, 5, 1, 12], [1, 60]), ([3, 1, 5], [1, 3, 5, 1]), ([1, 1], [1])]:
        reshape_case(fam, f"reshape_{_s(shape)}_to_{'x'.join(map(str, new))}", shape, new)
    return fam


# ---------------------------------------------------------------------------------------------
# TRANSPOSE

def transpose_case(fam, name, shape, perm):
    rng = case_rng(name)
    s, zp = _scale(rng), int(rng.integers(-128, 128))
    x = uniform_int(rng, -128, 127, shape, np.int8)
    out_shape = [shape[p] for p in perm]
    mb = ModelBuilder()
    ti = mb.tensor("input", shape, np.int8, [s], [zp])
    tp = mb.tensor("perm", [len(perm)], np.int32, data=np.array(perm, np.int32))
    to = mb.tensor("output", out_shape, np.int8, [s], [zp])
    version = 4 if len(shape) > 4 else 2
    mb.operator(BO.TRANSPOSE, version, [ti, tp], [to], OPT.TransposeOptions, S.TransposeOptionsT())
    model = mb.build([ti], [to])
    fields = {"input": tensor_json(x), "perm": [int(p) for p in perm], "input_scale": f32(s),
              "input_zero_point": zp, "output_scale": f32(s), "output_zero_point": zp}
    return fam.run(name, model, [x], fields)


def gen_transpose():
    import itertools
    fam = Family("transpose.json", "TRANSPOSE", "tests/gen/kernels/gen_shape.py",
                 "int8; output[i_perm[0], ...] = input[i_0, ...], i.e. out.shape[k] = in.shape[perm[k]]")
    transpose_case(fam, "transpose_7_perm0", [7], [0])
    for perm in itertools.permutations(range(2)):
        transpose_case(fam, f"transpose_3x5_perm{''.join(map(str, perm))}", [3, 5], list(perm))
    for perm in itertools.permutations(range(3)):
        transpose_case(fam, f"transpose_2x3x4_perm{''.join(map(str, perm))}", [2, 3, 4], list(perm))
    for perm in itertools.permutations(range(4)):
        transpose_case(fam, f"transpose_2x3x4x5_perm{''.join(map(str, perm))}", [2, 3, 4, 5], list(perm))
    for perm in [[0, 3, 1, 2], [0, 2, 3, 1]]:
        transpose_case(fam, f"transpose_1x8x8x16_perm{''.join(map(str, perm))}", [1, 8, 8, 16], perm)
    for perm in [[4, 3, 2, 1, 0], [0, 2, 1, 4, 3], [1, 0, 2, 3, 4]]:
        transpose_case(fam, f"transpose_2x3x2x3x2_perm{''.join(map(str, perm))}", [2, 3, 2, 3, 2], perm)
    return fam


GENERATORS = {"concatenation": gen_concatenation, "pad": gen_pad, "mean": gen_mean, "reshape": gen_reshape,
              "transpose": gen_transpose}
