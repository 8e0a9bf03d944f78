#!/usr/bin/env python3
"""Small float ONNX models and int8 TFLite models of the data-movement ops (Slice, Split,
StridedSlice, ...) with their reference outputs, for tests/host/movement_models.rs:

    .venv/bin/python tests/gen/gen_movement_models.py

Writes tests/golden/movement/:
  *.onnx            float models written with onnx.helper (NCHW inputs: the importer keeps
                    activations NHWC, so the model's axes must be mapped)
  *.tflite          int8 models written with TFLite's schema (tests/gen/kernels/common.py)
  models.json       per model: SAMPLES seeded inputs (numpy default_rng(crc32(name))
                    .standard_normal for ONNX, uniform int8 for TFLite) and the outputs of ONNX
                    Runtime 1.32.0 (CPU, graph optimizations disabled) or of the TFLite
                    interpreter (ai-edge-litert 2.3.0, BUILTIN_REF kernels)

Pinned: numpy 2.4.6, onnx 1.23.2, onnxruntime 1.32.0, ai-edge-litert 2.3.0, flatbuffers 25.12.19.
"""
import json
import pathlib
import sys
import zlib

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "kernels"))
import goldenio  # noqa: E402

PINNED = {"numpy": "2.4.6", "onnx": "1.23.2", "onnxruntime": "1.32.0", "ai-edge-litert": "2.3.0",
          "flatbuffers": "25.12.19"}
goldenio.check_pins(PINNED)

import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from common import BO, OPT, S, ModelBuilder, run_tflite_ref  # noqa: E402

OUT = HERE.parent / "golden" / "movement"
SAMPLES = 8
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1


def rng_for(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def ints(name, v):
    return numpy_helper.from_array(np.asarray(v, np.int64), name)


def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def make(name, nodes, inputs, outputs, inits, opset):
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="onnx.helper")
    m.ir_version = 7 if opset <= 13 else 8 if opset <= 17 else 10
    onnx.checker.check_model(m, full_check=True)
    return m


# ---------------------------------------------------------------------------------------------
# ONNX models

def slice_split_opset13():
    """NCHW [1, 6, 5, 8]: a Slice over C and W with a negative step, a Split over C into [1, 2, 3]
    (the split input), one part sliced again over H with a step of 2 and ends past the extent."""
    nodes = [
        helper.make_node("Slice", ["x", "s_starts", "s_ends", "s_axes", "s_steps"], ["a"], name="slice_cw"),
        helper.make_node("Split", ["x", "split"], ["p0", "p1", "p2"], axis=1, name="split_c"),
        helper.make_node("Slice", ["p2", "t_starts", "t_ends", "t_axes", "t_steps"], ["b"], name="slice_h"),
    ]
    inits = [ints("s_starts", [1, -1]), ints("s_ends", [5, I64_MIN]), ints("s_axes", [1, -1]),
             ints("s_steps", [1, -3]), ints("split", [1, 2, 3]),
             ints("t_starts", [1]), ints("t_ends", [I64_MAX]), ints("t_axes", [2]), ints("t_steps", [2])]
    return make("slice_split_opset13", nodes, [vi("x", [1, 6, 5, 8])],
                [vi("a", [1, 4, 5, 3]), vi("p0", [1, 1, 5, 8]), vi("p1", [1, 2, 5, 8]), vi("b", [1, 3, 2, 8])],
                inits, 13)


def split_num_outputs_opset18():
    """NCHW [1, 4, 3, 8]: Split over the last axis into num_outputs = 3 (3, 3, 2), a Slice with
    neither axes nor steps, and a Relu after the middle part."""
    nodes = [
        helper.make_node("Split", ["x"], ["p0", "p1", "p2"], axis=-1, num_outputs=3, name="split_w"),
        helper.make_node("Relu", ["p1"], ["r1"], name="relu"),
        helper.make_node("Slice", ["p0", "starts", "ends"], ["a"], name="slice_default"),
    ]
    inits = [ints("starts", [0, 1, 0, 1]), ints("ends", [1, 3, 2, 3])]
    return make("split_num_outputs_opset18", nodes, [vi("x", [1, 4, 3, 8])],
                [vi("a", [1, 2, 2, 2]), vi("r1", [1, 4, 3, 3]), vi("p2", [1, 4, 3, 2])], inits, 18)


def slice_rank3_opset11():
    """[2, 6, 5] (no layout change): Slice with negative steps on axes 0 and 2 and clamped
    starts, then a Split (attribute form) over axis 1."""
    nodes = [
        helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["a"], name="slice_neg"),
        helper.make_node("Split", ["a"], ["p0", "p1"], axis=1, split=[1, 3], name="split_attr"),
    ]
    inits = [ints("starts", [100, 4, -2]), ints("ends", [-100, 0, -6]), ints("axes", [0, 2, 1]),
             ints("steps", [-1, -2, -1])]
    return make("slice_rank3_opset11", nodes, [vi("x", [2, 6, 5])], [vi("p0", [2, 1, 2]), vi("p1", [2, 3, 2])],
                inits, 11)


def depth_space_opset13():
    """NCHW [1, 8, 3, 4]: DepthToSpace in DCR and CRD modes (block 2), SpaceToDepth of the DCR
    result (block 2, back to the input), and a SpaceToDepth of block 3 after a Slice."""
    nodes = [
        helper.make_node("DepthToSpace", ["x"], ["dcr"], blocksize=2, mode="DCR", name="d2s_dcr"),
        helper.make_node("DepthToSpace", ["x"], ["crd"], blocksize=2, mode="CRD", name="d2s_crd"),
        helper.make_node("SpaceToDepth", ["dcr"], ["back"], blocksize=2, name="s2d"),
        helper.make_node("Slice", ["dcr", "starts", "ends", "axes"], ["cut"], name="cut"),
        helper.make_node("SpaceToDepth", ["cut"], ["s3"], blocksize=3, name="s2d3"),
    ]
    inits = [ints("starts", [0, 2]), ints("ends", [6, 8]), ints("axes", [2, 3])]
    return make("depth_space_opset13", nodes, [vi("x", [1, 8, 3, 4])],
                [vi("dcr", [1, 2, 6, 8]), vi("crd", [1, 2, 6, 8]), vi("back", [1, 8, 3, 4]), vi("s3", [1, 18, 2, 2])],
                inits, 13)


def pad_modes_opset13():
    """NCHW [1, 3, 4, 5]: Pad in reflect mode (H and W, up to extent - 1) and in edge mode (every
    axis, wider than the input)."""
    nodes = [
        helper.make_node("Pad", ["x", "r_pads"], ["r"], mode="reflect", name="reflect"),
        helper.make_node("Pad", ["x", "e_pads"], ["e"], mode="edge", name="edge"),
    ]
    inits = [ints("r_pads", [0, 0, 3, 1, 0, 0, 2, 4]), ints("e_pads", [0, 1, 6, 0, 1, 2, 0, 7])]
    return make("pad_modes_opset13", nodes, [vi("x", [1, 3, 4, 5])], [vi("r", [1, 3, 9, 10]), vi("e", [2, 6, 10, 12])],
                inits, 13)


def pad_axes_opset18():
    """[2, 5, 6]: Pad in reflect mode on axes [-1, 1] only (opset 18's axes input)."""
    nodes = [helper.make_node("Pad", ["x", "pads", "", "axes"], ["y"], mode="reflect", name="reflect_axes")]
    inits = [ints("pads", [2, 1, 5, 4]), ints("axes", [-1, 1])]
    return make("pad_axes_opset18", nodes, [vi("x", [2, 5, 6])], [vi("y", [2, 10, 13])], inits, 18)


def gather_opset13():
    """NCHW [1, 6, 4, 5]: Gather over the channels (negative index included), a scalar index over H
    (the axis goes), and a 2-D index over W (the axis becomes two)."""
    nodes = [
        helper.make_node("Gather", ["x", "ic"], ["c"], axis=1, name="gather_c"),
        helper.make_node("Gather", ["x", "ih"], ["h"], axis=-2, name="gather_h"),
        helper.make_node("Gather", ["x", "iw"], ["w"], axis=3, name="gather_w"),
    ]
    inits = [ints("ic", [5, 0, -1, 2]), numpy_helper.from_array(np.array(-1, np.int64), "ih"),
             ints("iw", [[0, 4], [2, 2]])]
    return make("gather_opset13", nodes, [vi("x", [1, 6, 4, 5])],
                [vi("c", [1, 4, 4, 5]), vi("h", [1, 6, 5]), vi("w", [1, 6, 4, 2, 2])], inits, 13)


def tile_expand_opset13():
    """NCHW [1, 3, 1, 4]: Tile by [2, 1, 3, 2], Expand to [2, 3, 5, 4] (same rank) and to
    [2, 1, 3, 1, 4] (one more axis, a target extent of 1 kept as the input's)."""
    nodes = [
        helper.make_node("Tile", ["x", "reps"], ["t"], name="tile"),
        helper.make_node("Expand", ["x", "shape4"], ["e4"], name="expand4"),
        helper.make_node("Expand", ["x", "shape5"], ["e5"], name="expand5"),
    ]
    inits = [ints("reps", [2, 1, 3, 2]), ints("shape4", [2, 3, 5, 4]), ints("shape5", [2, 1, 3, 1, 1])]
    return make("tile_expand_opset13", nodes, [vi("x", [1, 3, 1, 4])],
                [vi("t", [2, 3, 3, 8]), vi("e4", [2, 3, 5, 4]), vi("e5", [2, 1, 3, 1, 4])], inits, 13)


def concat_axes_opset13():
    """NCHW [1, 4, 3, 5]: Concat on every axis (0, 1, -2, 3) of the input with itself and slices of
    itself; Unsqueeze at [0, 3], Squeeze back, Flatten at axis 2."""
    nodes = [
        helper.make_node("Slice", ["x", "s0", "e0", "a0"], ["part"], name="part"),
        helper.make_node("Concat", ["x", "x"], ["c0"], axis=0, name="concat0"),
        helper.make_node("Concat", ["x", "part", "x"], ["c1"], axis=1, name="concat1"),
        helper.make_node("Concat", ["x", "x"], ["c2"], axis=-2, name="concat2"),
        helper.make_node("Slice", ["x", "s3", "e3", "a3"], ["part3"], name="part3"),
        helper.make_node("Concat", ["part3", "x"], ["c3"], axis=3, name="concat3"),
        helper.make_node("Unsqueeze", ["x", "ua"], ["u"], name="unsqueeze"),
        helper.make_node("Squeeze", ["u", "sa"], ["sq"], name="squeeze"),
        helper.make_node("Flatten", ["sq"], ["f"], axis=2, name="flatten"),
    ]
    inits = [ints("s0", [1]), ints("e0", [3]), ints("a0", [1]), ints("s3", [3]), ints("e3", [5]), ints("a3", [3]),
             ints("ua", [0, 3]), ints("sa", [3, 0])]
    return make("concat_axes_opset13", nodes, [vi("x", [1, 4, 3, 5])],
                [vi("c0", [2, 4, 3, 5]), vi("c1", [1, 10, 3, 5]), vi("c2", [1, 4, 6, 5]), vi("c3", [1, 4, 3, 7]),
                 vi("u", [1, 1, 4, 1, 3, 5]), vi("f", [4, 15])], inits, 13)


ONNX_MODELS = [slice_split_opset13, split_num_outputs_opset18, slice_rank3_opset11, depth_space_opset13,
               pad_modes_opset13, pad_axes_opset18, gather_opset13, tile_expand_opset13, concat_axes_opset13]


def onnx_entry(build):
    m = build()
    name = m.graph.name
    path = OUT / f"{name}.onnx"
    path.write_bytes(m.SerializeToString())
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    rng = rng_for(name)
    shape = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
    samples = []
    for _ in range(SAMPLES):
        x = rng.standard_normal(shape).astype(np.float32)
        ys = sess.run(None, {m.graph.input[0].name: x})
        samples.append({"inputs": [goldenio.tensor(x)], "outputs": [goldenio.tensor(y) for y in ys]})
    return {"name": name, "file": path.name, "format": "onnx", "samples": samples}


# ---------------------------------------------------------------------------------------------
# int8 TFLite models (quantized already: the importer keeps them as they are)

def _i32(mb, name, v):
    v = np.array(v, np.int32)
    return mb.tensor(name, list(v.shape), np.int32, data=v)


def tflite_strided_masks():
    """[2, 4, 6, 3] int8: STRIDED_SLICE with an ellipsis, a new axis and a shrunk axis
    (x[1, ..., tf.newaxis, ::-2] over the last axis), then SLICE of the input."""
    mb = ModelBuilder()
    s, zp = np.float32(0.05), 3
    x = mb.tensor("x", [2, 4, 6, 3], np.int8, [s], [zp])
    y = mb.tensor("y", [4, 6, 1, 2], np.int8, [s], [zp])
    z = mb.tensor("z", [1, 2, 3, 3], np.int8, [s], [zp])
    o = S.StridedSliceOptionsT()
    # Spec [1, ..., newaxis, ::-2]: shrink bit 0, ellipsis bit 1, new axis bit 2, begin/end mask bit 3.
    o.shrinkAxisMask, o.ellipsisMask, o.newAxisMask, o.beginMask, o.endMask = 1, 2, 4, 8, 8
    mb.operator(BO.STRIDED_SLICE, 2, [x, _i32(mb, "b", [1, 0, 0, 0]), _i32(mb, "e", [2, 0, 0, 0]),
                                       _i32(mb, "st", [1, 1, 1, -2])], [y], OPT.StridedSliceOptions, o)
    mb.operator(BO.SLICE, 2, [x, _i32(mb, "sb", [1, 1, 2, 0]), _i32(mb, "ss", [1, 2, 3, -1])], [z],
                OPT.SliceOptions, S.SliceOptionsT())
    return "tflite_strided_masks", mb.build([x], [y, z]), [x], ([2, 4, 6, 3],)


def tflite_split():
    """[1, 4, 4, 6] int8: SPLIT over the channels into 3, SPLIT_V over the height into
    [1, -1, 2] (the -1 inferred)."""
    mb = ModelBuilder()
    s, zp = np.float32(0.1), -5
    x = mb.tensor("x", [1, 4, 4, 6], np.int8, [s], [zp])
    outs = [mb.tensor(f"c{k}", [1, 4, 4, 2], np.int8, [s], [zp]) for k in range(3)]
    o = S.SplitOptionsT()
    o.numSplits = 3
    mb.operator(BO.SPLIT, 2, [_i32(mb, "axis", [3]), x], outs, OPT.SplitOptions, o)
    hs = [mb.tensor(f"h{k}", [1, h, 4, 6], np.int8, [s], [zp]) for k, h in enumerate([1, 1, 2])]
    ov = S.SplitVOptionsT()
    ov.numSplits = 3
    mb.operator(BO.SPLIT_V, 2, [x, _i32(mb, "sizes", [1, -1, 2]), _i32(mb, "vaxis", [-3])], hs,
                OPT.SplitVOptions, ov)
    return "tflite_split", mb.build([x], outs + hs), [x], ([1, 4, 4, 6],)


def tflite_depth_space():
    """[1, 2, 3, 8] int8: DEPTH_TO_SPACE (block 2), then SPACE_TO_DEPTH back (block 2)."""
    mb = ModelBuilder()
    s, zp = np.float32(0.02), -100
    x = mb.tensor("x", [1, 2, 3, 8], np.int8, [s], [zp])
    y = mb.tensor("y", [1, 4, 6, 2], np.int8, [s], [zp])
    z = mb.tensor("z", [1, 2, 3, 8], np.int8, [s], [zp])
    o = S.DepthToSpaceOptionsT()
    o.blockSize = 2
    mb.operator(BO.DEPTH_TO_SPACE, 1, [x], [y], OPT.DepthToSpaceOptions, o)
    o = S.SpaceToDepthOptionsT()
    o.blockSize = 2
    mb.operator(BO.SPACE_TO_DEPTH, 2, [y], [z], OPT.SpaceToDepthOptions, o)
    return "tflite_depth_space", mb.build([x], [y, z]), [x], ([1, 2, 3, 8],)


def tflite_mirror_pad():
    """[1, 3, 4, 2] int8: MIRROR_PAD in REFLECT and SYMMETRIC modes."""
    mb = ModelBuilder()
    s, zp = np.float32(0.03), 17
    x = mb.tensor("x", [1, 3, 4, 2], np.int8, [s], [zp])
    y = mb.tensor("y", [1, 7, 6, 2], np.int8, [s], [zp])
    z = mb.tensor("z", [1, 6, 8, 3], np.int8, [s], [zp])
    pads_r = np.array([[0, 0], [2, 2], [1, 1], [0, 0]], np.int32)
    pads_s = np.array([[0, 0], [3, 0], [2, 2], [0, 1]], np.int32)
    for out, pads, mode in [(y, pads_r, 0), (z, pads_s, 1)]:
        o = S.MirrorPadOptionsT()
        o.mode = mode
        tp = mb.tensor(f"pads{mode}", [4, 2], np.int32, data=pads)
        mb.operator(BO.MIRROR_PAD, 2, [x, tp], [out], OPT.MirrorPadOptions, o)
    return "tflite_mirror_pad", mb.build([x], [y, z]), [x], ([1, 3, 4, 2],)


def tflite_gather():
    """[2, 5, 3] int8: GATHER over axis 1 by [4, 0, 4], and over axis -1 by [[2, 0]]."""
    mb = ModelBuilder()
    s, zp = np.float32(0.07), -20
    x = mb.tensor("x", [2, 5, 3], np.int8, [s], [zp])
    y = mb.tensor("y", [2, 3, 3], np.int8, [s], [zp])
    z = mb.tensor("z", [2, 5, 1, 2], np.int8, [s], [zp])
    for out, axis, pos in [(y, 1, [4, 0, 4]), (z, -1, [[2, 0]])]:
        o = S.GatherOptionsT()
        o.axis = axis
        mb.operator(BO.GATHER, 1, [x, _i32(mb, f"pos{axis}", pos)], [out], OPT.GatherOptions, o)
    return "tflite_gather", mb.build([x], [y, z]), [x], ([2, 5, 3],)


def tflite_tile():
    """[2, 1, 3] int8: TILE by [1, 4, 2] (TFLite Micro has none: the interpreter is the oracle)
    and BROADCAST_TO [2, 2, 5, 3]."""
    mb = ModelBuilder()
    s, zp = np.float32(0.04), 9
    x = mb.tensor("x", [2, 1, 3], np.int8, [s], [zp])
    y = mb.tensor("y", [2, 4, 6], np.int8, [s], [zp])
    z = mb.tensor("z", [2, 2, 5, 3], np.int8, [s], [zp])
    mb.operator(BO.TILE, 1, [x, _i32(mb, "multiples", [1, 4, 2])], [y], OPT.TileOptions, S.TileOptionsT())
    mb.operator(BO.BROADCAST_TO, 2, [x, _i32(mb, "shape", [2, 2, 5, 3])], [z])
    return "tflite_tile", mb.build([x], [y, z]), [x], ([2, 1, 3],)


TFLITE_MODELS = [tflite_strided_masks, tflite_split, tflite_depth_space, tflite_mirror_pad, tflite_gather,
                 tflite_tile]


def tflite_entry(build):
    name, model, _, (shape,) = build()
    path = OUT / f"{name}.tflite"
    path.write_bytes(model)
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    it = Interpreter(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    rng = rng_for(name)
    samples = []
    for _ in range(SAMPLES):
        x = rng.integers(-128, 128, shape, dtype=np.int8)
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()
        ys = [np.array(it.get_tensor(d["index"])) for d in it.get_output_details()]
        samples.append({"inputs": [goldenio.tensor(x)], "outputs": [goldenio.tensor(y) for y in ys]})
    assert run_tflite_ref is not None
    return {"name": name, "file": path.name, "format": "tflite", "samples": samples}


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    models = [onnx_entry(b) for b in ONNX_MODELS] + [tflite_entry(b) for b in TFLITE_MODELS]
    doc = {"generator": "tests/gen/gen_movement_models.py", "tools": PINNED, "models": models}
    goldenio.write(OUT / "models.json", doc)
    for m in models:
        print(m["name"], [o["shape"] for o in m["samples"][0]["outputs"]])


if __name__ == "__main__":
    main()
