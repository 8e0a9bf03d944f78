"""Data-movement goldens (int8, and int16 where TFLite Micro runs it): slice.json,
strided_slice.json, depth_to_space.json, space_to_depth.json, mirror_pad.json, gather.json,
broadcast_to.json, and the int16 twins slice_16.json, strided_slice_16.json, broadcast_to_16.json.

Every case stores its input, the input's (= output's) scale and zero point, and ``params``: the
op's integer operands flattened in the order its file's note gives (the constant operand tensors
and options of the TFLite operator, as given, negative values included).
"""
import numpy as np

from common import BO, OPT, S, Family, ModelBuilder, case_rng, f32, tensor_json, uniform_int

GEN = "tests/gen/kernels/gen_movement.py"


def _s(shape):
    return "x".join(str(d) for d in shape) if len(shape) else "scalar"


def _l(v):
    return "_".join(str(int(x)).replace("-", "m") for x in v)


def _q(rng, dtype):
    s = np.float32(np.exp(rng.uniform(np.log(0.005), np.log(0.5))))
    zp = int(rng.integers(-128, 128)) if dtype == np.int8 else 0
    return s, zp


def _input(rng, shape, dtype):
    lo, hi = (-128, 127) if dtype == np.int8 else (-32768, 32767)
    return uniform_int(rng, lo, hi, shape, dtype)


def _case(fam, name, dtype, in_shape, out_shape, params, build):
    """One single-op model: ``build(mb, ti, to)`` adds the constant operands and the operator."""
    rng = case_rng(name)
    s, zp = _q(rng, dtype)
    x = _input(rng, in_shape, dtype)
    mb = ModelBuilder()
    ti = mb.tensor("input", in_shape, dtype, [s], [zp])
    to = mb.tensor("output", out_shape, dtype, [s], [zp])
    build(mb, ti, to)
    model = mb.build([ti], [to])
    fields = {"input": tensor_json(x), "params": [int(p) for p in params], "input_scale": f32(s),
              "input_zero_point": zp}
    return fam.run(name, model, [x], fields)


def _i32(mb, name, v):
    v = np.array(v, np.int32)
    return mb.tensor(name, list(v.shape), np.int32, data=v)


# ---------------------------------------------------------------------------------------------
# SLICE: params = begin ++ size

SLICE_CASES = [
    ([7], [2], [3]), ([7], [0], [-1]), ([7], [6], [1]), ([3, 5], [1, 0], [2, 5]), ([3, 5], [0, 2], [-1, -1]),
    ([2, 3, 4], [1, 1, 1], [1, 2, 3]), ([1, 4, 4, 3], [0, 1, 1, 0], [1, 2, 2, 3]),
    ([1, 4, 4, 3], [0, 0, 0, 1], [1, 4, 4, 2]), ([2, 5, 3, 4], [1, 2, 0, 1], [1, -1, 3, 2]),
    ([1, 8, 8, 16], [0, 2, 0, 0], [1, 4, 8, 8]), ([2, 2, 3, 2, 3], [0, 1, 1, 0, 2], [2, 1, 2, 2, 1]),
]


def gen_slice(dtype=np.int8, file="slice.json"):
    fam = Family(file, "SLICE", GEN, f"{np.dtype(dtype).name}; params = begin ++ size (size -1: to the end); "
                 "input and output share quantization")
    version = 2 if dtype == np.int8 else 5
    for shape, begin, size in SLICE_CASES:
        out = [n - b if z == -1 else z for n, b, z in zip(shape, begin, size)]

        def build(mb, ti, to, begin=begin, size=size):
            tb, tz = _i32(mb, "begin", begin), _i32(mb, "size", size)
            mb.operator(BO.SLICE, version, [ti, tb, tz], [to], OPT.SliceOptions, S.SliceOptionsT())
        _case(fam, f"slice_{_s(shape)}_b{_l(begin)}_s{_l(size)}", dtype, shape, out, begin + size, build)
    return fam


def gen_slice_16():
    return gen_slice(np.int16, "slice_16.json")


# ---------------------------------------------------------------------------------------------
# STRIDED_SLICE: params = begin ++ end ++ strides ++ [begin_mask, end_mask, shrink_axis_mask, offset]

def _ss_shape(shape, begin, end, strides, bm, em, sm, offset):
    """The output shape TFLite documents (numpy's slicing), for the output tensor's declaration;
    the oracles compute the values."""
    out = []
    for d, n in enumerate(shape):
        b, e, s = begin[d], end[d], strides[d]
        if sm >> d & 1:
            continue
        if offset:
            e = b + e
        sl = slice(None if bm >> d & 1 else b, None if em >> d & 1 else e, s)
        out.append(len(range(n)[sl]))
    return out


SS_CASES = [
    # shape, begin, end, strides, begin_mask, end_mask, shrink_mask, offset
    ([7], [1], [6], [2], 0, 0, 0, 0), ([7], [-1], [0], [-1], 0, 0, 0, 0), ([7], [-2], [-8], [-2], 0, 0, 0, 0),
    ([7], [5], [100], [1], 0, 0, 0, 0), ([7], [0], [0], [-1], 1, 1, 0, 0), ([7], [3], [0], [1], 0, 0, 1, 0),
    ([7], [-100], [3], [1], 0, 0, 0, 0),
    ([3, 5], [0, 1], [3, 5], [1, 2], 0, 0, 0, 0), ([3, 5], [2, 4], [0, 0], [-1, -3], 0, 2, 0, 0),
    ([3, 5], [1, 0], [2, 5], [1, 1], 0, 0, 1, 0), ([3, 5], [0, -1], [3, 5], [1, 1], 0, 0, 2, 0),
    ([2, 3, 4], [0, 0, 3], [2, 3, -5], [1, 1, -1], 0, 0, 0, 0), ([2, 3, 4], [1, 0, 3], [2, 3, 0], [1, 2, -2], 0, 0, 0, 0),
    ([1, 4, 4, 3], [0, 0, 0, 0], [1, 4, 4, 3], [1, 2, 2, 1], 0, 0, 0, 0),
    ([1, 4, 4, 3], [0, 1, 1, 0], [1, 4, 4, 3], [1, 2, 2, 1], 0, 0, 0, 0),
    ([1, 4, 4, 3], [0, 0, 0, 2], [1, 4, 4, 3], [1, 1, 1, 1], 15, 7, 0, 0),
    ([1, 4, 4, 3], [0, 3, 0, 0], [1, 0, 4, 3], [1, -1, 1, 1], 0, 0, 1, 0),
    ([1, 4, 4, 3], [0, 0, 0, 1], [1, 4, 4, 2], [1, 1, 1, 1], 0, 0, 9, 0),
    ([2, 5, 3, 4], [1, -1, 0, 3], [2, -6, 3, 0], [1, -2, 1, -1], 0, 0, 0, 0),
    ([1, 8, 8, 16], [0, 0, 0, 8], [1, 8, 8, 16], [1, 1, 1, 1], 0, 0, 0, 0),
    ([2, 2, 3, 2, 3], [0, 1, 0, 0, 2], [2, 2, 3, 2, 0], [1, 1, 2, 1, -1], 0, 0, 0, 0),
]


def gen_strided_slice(dtype=np.int8, file="strided_slice.json"):
    fam = Family(file, "STRIDED_SLICE", GEN,
                 f"{np.dtype(dtype).name}; params = begin ++ end ++ strides ++ [begin_mask, end_mask, "
                 "shrink_axis_mask, offset]; input and output share quantization")
    version = 2 if dtype == np.int8 else 4
    for shape, begin, end, strides, bm, em, sm, off in SS_CASES:
        out = _ss_shape(shape, begin, end, strides, bm, em, sm, off)

        def build(mb, ti, to, begin=begin, end=end, strides=strides, bm=bm, em=em, sm=sm, off=off):
            tb, te, ts = _i32(mb, "begin", begin), _i32(mb, "end", end), _i32(mb, "strides", strides)
            o = S.StridedSliceOptionsT()
            o.beginMask, o.endMask, o.shrinkAxisMask, o.offset = bm, em, sm, bool(off)
            mb.operator(BO.STRIDED_SLICE, 8 if off else version, [ti, tb, te, ts], [to],
                        OPT.StridedSliceOptions, o)
        name = f"strided_slice_{_s(shape)}_b{_l(begin)}_e{_l(end)}_s{_l(strides)}_m{bm}_{em}_{sm}_{off}"
        _case(fam, name, dtype, shape, out, begin + end + strides + [bm, em, sm, off], build)
    return fam


def gen_strided_slice_16():
    return gen_strided_slice(np.int16, "strided_slice_16.json")


# ---------------------------------------------------------------------------------------------
# DEPTH_TO_SPACE / SPACE_TO_DEPTH: params = [block_size]

D2S_CASES = [([1, 1, 1, 4], 2), ([1, 2, 3, 8], 2), ([2, 3, 2, 12], 2), ([1, 2, 2, 18], 3), ([1, 4, 4, 16], 2),
             ([1, 2, 2, 32], 4), ([1, 3, 3, 27], 3), ([1, 5, 4, 4], 1)]
S2D_CASES = [([1, 2, 2, 1], 2), ([1, 4, 6, 2], 2), ([2, 4, 4, 3], 2), ([1, 6, 6, 2], 3), ([1, 8, 8, 4], 2),
             ([1, 8, 4, 1], 4), ([1, 3, 3, 5], 1)]


def gen_depth_to_space(dtype=np.int8, file="depth_to_space.json"):
    fam = Family(file, "DEPTH_TO_SPACE", GEN, f"{np.dtype(dtype).name}; NHWC; params = [block_size]; "
                 "input and output share quantization")
    for shape, b in D2S_CASES:
        n, h, w, c = shape
        out = [n, h * b, w * b, c // (b * b)]

        def build(mb, ti, to, b=b):
            o = S.DepthToSpaceOptionsT()
            o.blockSize = b
            mb.operator(BO.DEPTH_TO_SPACE, 1, [ti], [to], OPT.DepthToSpaceOptions, o)
        _case(fam, f"depth_to_space_{_s(shape)}_b{b}", dtype, shape, out, [b], build)
    return fam


def gen_space_to_depth(dtype=np.int8, file="space_to_depth.json"):
    fam = Family(file, "SPACE_TO_DEPTH", GEN, f"{np.dtype(dtype).name}; NHWC; params = [block_size]; "
                 "input and output share quantization")
    for shape, b in S2D_CASES:
        n, h, w, c = shape
        out = [n, h // b, w // b, c * b * b]

        def build(mb, ti, to, b=b):
            o = S.SpaceToDepthOptionsT()
            o.blockSize = b
            mb.operator(BO.SPACE_TO_DEPTH, 2, [ti], [to], OPT.SpaceToDepthOptions, o)
        _case(fam, f"space_to_depth_{_s(shape)}_b{b}", dtype, shape, out, [b], build)
    return fam


# ---------------------------------------------------------------------------------------------
# MIRROR_PAD: params = [mode (0 REFLECT, 1 SYMMETRIC)] ++ paddings (before, after per dimension)

MP_CASES = [
    ([5], [[2, 3]]), ([5], [[0, 0]]), ([3, 4], [[1, 2], [3, 0]]), ([2, 3, 4], [[1, 1], [2, 2], [0, 3]]),
    ([1, 4, 4, 3], [[0, 0], [1, 1], [1, 1], [0, 0]]), ([1, 4, 4, 3], [[0, 0], [3, 2], [2, 3], [0, 0]]),
    ([2, 5, 3, 2], [[1, 0], [0, 4], [2, 1], [1, 1]]), ([1, 8, 8, 4], [[0, 0], [2, 2], [2, 2], [0, 0]]),
]


def gen_mirror_pad(dtype=np.int8, file="mirror_pad.json"):
    fam = Family(file, "MIRROR_PAD", GEN, f"{np.dtype(dtype).name}; params = [mode (0 REFLECT, 1 SYMMETRIC)] ++ "
                 "[before, after] per dimension; input and output share quantization")
    for mode in [0, 1]:
        for shape, pads in MP_CASES:
            if mode == 0 and any(max(p) > n - 1 for n, p in zip(shape, pads)):
                pads = [[min(b, n - 1), min(a, n - 1)] for n, (b, a) in zip(shape, pads)]
            out = [n + b + a for n, (b, a) in zip(shape, pads)]

            def build(mb, ti, to, pads=pads, mode=mode):
                tp = mb.tensor("paddings", [len(pads), 2], np.int32, data=np.array(pads, np.int32))
                o = S.MirrorPadOptionsT()
                o.mode = mode
                mb.operator(BO.MIRROR_PAD, 2 if dtype == np.int8 else 3, [ti, tp], [to], OPT.MirrorPadOptions, o)
            name = f"mirror_pad_{['reflect', 'symmetric'][mode]}_{_s(shape)}_" + "_".join(f"{b}{a}" for b, a in pads)
            _case(fam, name, dtype, shape, out, [mode] + [v for p in pads for v in p], build)
    return fam


# ---------------------------------------------------------------------------------------------
# GATHER (batch_dims 0, constant int32 positions): params = [axis, indices rank] ++ indices shape
# ++ indices

GATHER_CASES = [
    ([7], 0, [3]), ([7], 0, [[0, 6], [6, 1]]), ([4, 5], 0, [3, 0, 3]), ([4, 5], 1, [4, 2]), ([4, 5], -1, 2),
    ([2, 3, 4], 1, [2, 2, 0, 1]), ([2, 3, 4], 2, [[1, 3, 0]]), ([1, 4, 4, 6], 3, [5, 4, 3, 2, 1, 0]),
    ([1, 4, 4, 6], 1, [0, 3]), ([10, 8], 0, [[9, 0], [1, 2], [4, 4]]), ([2, 3, 2, 3, 2], 3, [1]),
]


def gen_gather(dtype=np.int8, file="gather.json"):
    fam = Family(file, "GATHER", GEN, f"{np.dtype(dtype).name}; batch_dims 0; params = [axis, rank of the "
                 "indices] ++ their shape ++ the indices (int32 constant); input and output share quantization")
    for shape, axis, idx in GATHER_CASES:
        idx = np.array(idx, np.int32)
        ax = axis % len(shape)
        out = list(shape[:ax]) + list(idx.shape) + list(shape[ax + 1:])

        def build(mb, ti, to, axis=axis, idx=idx):
            tp = mb.tensor("positions", list(idx.shape) or [1], np.int32, data=idx.reshape(list(idx.shape) or [1]))
            mb.tensors[tp].shape = list(idx.shape)
            o = S.GatherOptionsT()
            o.axis, o.batchDims = axis, 0
            mb.operator(BO.GATHER, 1, [ti, tp], [to], OPT.GatherOptions, o)
        name = f"gather_{_s(shape)}_axis{axis}_idx{_s(idx.shape)}_" + _l(idx.reshape(-1))
        _case(fam, name, dtype, shape, out, [axis, idx.ndim] + list(idx.shape) + list(idx.reshape(-1)), build)
    return fam


# ---------------------------------------------------------------------------------------------
# BROADCAST_TO: params = the output shape. (TFLite Micro has no TILE: the converter's TFLite
# TILE is checked against the TFLite interpreter in tests/gen/gen_movement_models.py.)

BCAST_CASES = [([1], [5]), ([3], [2, 3]), ([2, 1], [2, 4]), ([1, 3], [4, 3]), ([1, 1, 3], [2, 4, 3]),
               ([2, 1, 1, 3], [2, 3, 4, 3]), ([1, 4, 1, 2], [3, 4, 5, 2]), ([4, 1], [2, 3, 4, 6])]


def gen_broadcast_to(dtype=np.int8, file="broadcast_to.json"):
    fam = Family(file, "BROADCAST_TO", GEN, f"{np.dtype(dtype).name}; params = the output shape (a constant "
                 "int32 operand); input and output share quantization")
    for shape, out in BCAST_CASES:
        def build(mb, ti, to, out=out):
            mb.operator(BO.BROADCAST_TO, 2, [ti, _i32(mb, "shape", out)], [to])
        _case(fam, f"broadcast_to_{_s(shape)}_to_{_s(out)}", dtype, shape, out, out, build)
    return fam


GENERATORS = {"slice": gen_slice, "strided_slice": gen_strided_slice, "depth_to_space": gen_depth_to_space,
              "space_to_depth": gen_space_to_depth, "mirror_pad": gen_mirror_pad,
              "gather": gen_gather, "broadcast_to": gen_broadcast_to}
# TFLite Micro's DEPTH_TO_SPACE, SPACE_TO_DEPTH, MIRROR_PAD and GATHER take no int16.
GENERATORS_16X8 = {"slice16": gen_slice_16, "strided_slice16": gen_strided_slice_16,
                   "broadcast_to16": lambda: gen_broadcast_to(np.int16, "broadcast_to_16.json")}
