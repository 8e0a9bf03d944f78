#!/usr/bin/env python3
"""ONNX models with dynamic input axes, shape computations, If on a shape-derived or input
condition and non-float side inputs, with ONNX Runtime's outputs for fixed input shapes and
values: the golden data of the importer's ImportOptions::input_shapes / input_values
(tests/host/onnx_shapes.rs, cli/tests/shapes.rs, wasm/tests/api.rs).

    .venv/bin/python tests/gen/gen_onnx_shapes.py

Writes tests/golden/onnx/shapes/:
  *.onnx        models written with onnx.helper (onnx.checker full_check passes):
                dyn_conv_opset13/18  input x [batch, 3, height, width]: Conv, Relu, then
                              Shape -> Gather / Slice -> ReduceProd -> Unsqueeze -> Concat ->
                              Reshape to [N, 4, H*W], Transpose, MatMul, ReduceMean, and a
                              gain Cast(Gather(Shape)) / 10 (arithmetic on shapes)
                if_shape      If(Greater(Gather(Shape(x), 1), 8)): the then branch reads an
                              outer initializer and reshapes with an outer Shape; the else branch
                              a Sigmoid
                if_flag       If on a bool graph input `flag`
                audio_sr      float x [1, samples], int64 sample rate `sr` (scalar) and float
                              `gain` [1]: hop = sr / 1000, Reshape(x, [1, -1, hop]),
                              ReduceMean, times Cast(sr) / 16000 and gain
                cast_shape    Reshape(x, Cast(y, INT64)): a shape computed from an activation
                              (the importer must name the node and the tensor)
                range_dynamic Range(x, 10, 1) of a float input: an op evaluated only at
                              conversion, on a value known at run time
  cases.json    per model and case: the input shapes and values given to the importer, seeded
                standard-normal data for the float inputs (model layout) and ONNX Runtime
                1.32.0's outputs (CPU, graph optimizations disabled)

Pinned: numpy 2.4.6, onnx 1.23.2, onnxruntime 1.32.0. Deterministic.
"""
import pathlib
import shutil
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
import goldenio  # noqa: E402

import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

PINNED = {"numpy": "2.4.6", "onnx": "1.23.2", "onnxruntime": "1.32.0"}
OUT = REPO / "tests" / "golden" / "onnx" / "shapes"


def const(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def f32(a):
    return np.asarray(a, dtype=np.float32)


def i64(a):
    return np.asarray(a, dtype=np.int64)


def vi(name, shape, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, shape)


def make(name, nodes, inputs, outputs, inits, opset):
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="onnx.helper")
    m.ir_version = 7 if opset <= 13 else 8 if opset <= 17 else 9
    onnx.checker.check_model(m, full_check=True)
    return m


def dyn_conv(opset, r):
    w = f32(r.standard_normal((4, 3, 3, 3)) * 0.4)
    b = f32(r.standard_normal(4) * 0.1)
    fc = f32(r.standard_normal((4, 5)) * 0.5)
    N = helper.make_node
    nodes = [
        N("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        N("Relu", ["c"], ["r"], name="relu"),
        N("Shape", ["r"], ["s"], name="shape"),
        N("Gather", ["s", "i0"], ["n"], axis=0, name="gather_n"),
        N("Slice", ["s", "two", "four"], ["hw_dims"], name="slice_hw"),
    ]
    if opset >= 18:
        nodes += [N("ReduceProd", ["hw_dims", "ax0"], ["hw"], keepdims=1, name="prod_hw"),
                  N("Unsqueeze", ["n", "ax0"], ["n1"], name="unsq_n")]
    else:
        nodes += [N("ReduceProd", ["hw_dims"], ["hw"], axes=[0], keepdims=1, name="prod_hw"),
                  N("Unsqueeze", ["n", "ax0"], ["n1"], name="unsq_n")]
    nodes += [
        N("Concat", ["n1", "c4", "hw"], ["target"], axis=0, name="concat_shape"),
        N("Reshape", ["r", "target"], ["flat"], name="reshape"),  # [N, 4, H*W]
        N("Transpose", ["flat"], ["t"], perm=[0, 2, 1], name="transpose"),  # [N, H*W, 4]
        N("MatMul", ["t", "fc"], ["m"], name="matmul"),  # [N, H*W, 5]
    ]
    if opset >= 18:
        nodes.append(N("ReduceMean", ["m", "ax1"], ["mean"], keepdims=0, name="mean"))
    else:
        nodes.append(N("ReduceMean", ["m"], ["mean"], axes=[1], keepdims=0, name="mean"))
    nodes += [
        N("Gather", ["s", "i2"], ["h"], axis=0, name="gather_h"),
        N("Cast", ["h"], ["hf"], to=TensorProto.FLOAT, name="cast_h"),
        N("Div", ["hf", "ten"], ["gain"], name="gain"),
        N("Mul", ["mean", "gain"], ["y"], name="scale"),
    ]
    inits = [const("w", w), const("b", b), const("fc", fc), const("i0", i64(0)), const("i2", i64(2)),
             const("two", i64([2])), const("four", i64([4])), const("ax0", i64([0])), const("c4", i64([4])),
             const("ten", f32(10.0))] + ([const("ax1", i64([1]))] if opset >= 18 else [])
    m = make(f"dyn_conv_opset{opset}", nodes, [vi("x", ["batch", 3, "height", "width"])], [vi("y", ["batch", 5])],
             inits, opset)
    cases = [{"input_shapes": {"x": [1, 3, 12, 10]}}, {"input_shapes": {"x": [2, 3, 6, 8]}},
             {"input_shapes": {"x": [1, 3, 7, 9]}}]
    return m, cases


def if_shape(r):
    N = helper.make_node
    # then: Reshape(x * two, Shape(x)) + 1 (outer initializer, outer tensor), else: Sigmoid(x).
    then_g = helper.make_graph(
        [N("Mul", ["x", "two_f"], ["tm"], name="then_mul"),
         N("Shape", ["x"], ["tshape"], name="then_shape"),
         N("Reshape", ["tm", "tshape"], ["tr"], name="then_reshape"),
         N("Add", ["tr", "one_f"], ["then_out"], name="then_add")],
        "then", [], [vi("then_out", None)], [const("one_f", f32(1.0))])
    else_g = helper.make_graph([N("Sigmoid", ["x"], ["else_out"], name="else_sigmoid")], "else", [],
                               [vi("else_out", None)])
    nodes = [
        N("Shape", ["x"], ["s"], name="shape"),
        N("Gather", ["s", "i1"], ["len"], axis=0, name="gather_len"),
        N("Greater", ["len", "eight"], ["long"], name="is_long"),
        N("If", ["long"], ["branch"], then_branch=then_g, else_branch=else_g, name="if_long"),
        N("Tanh", ["branch"], ["y"], name="tanh"),
    ]
    inits = [const("i1", i64(1)), const("eight", i64(8)), const("two_f", f32(2.0))]
    m = make("if_shape", nodes, [vi("x", [1, "n"])], [vi("y", [1, "n"])], inits, 13)
    return m, [{"input_shapes": {"x": [1, 12]}}, {"input_shapes": {"x": [1, 5]}}]


def if_flag(r):
    N = helper.make_node
    then_g = helper.make_graph([N("Relu", ["x"], ["a"], name="then_relu")], "then", [], [vi("a", [1, 6])])
    else_g = helper.make_graph([N("Sigmoid", ["x"], ["b"], name="else_sigmoid")], "else", [], [vi("b", [1, 6])])
    nodes = [N("If", ["flag"], ["branch"], then_branch=then_g, else_branch=else_g, name="if_flag"),
             N("Mul", ["branch", "k"], ["y"], name="mul")]
    m = make("if_flag", nodes, [vi("x", [1, 6]), vi("flag", [], TensorProto.BOOL)], [vi("y", [1, 6])],
             [const("k", f32(r.standard_normal(6)))], 17)
    return m, [{"input_values": {"flag": [1]}}, {"input_values": {"flag": [0]}}]


def audio_sr(r):
    N = helper.make_node
    nodes = [
        N("Div", ["sr", "k1000"], ["hop"], name="hop"),
        N("Unsqueeze", ["hop", "ax0"], ["hop1"], name="unsq_hop"),
        N("Concat", ["one", "minus1", "hop1"], ["target"], axis=0, name="frame_shape"),
        N("Reshape", ["x", "target"], ["frames"], name="frames"),
        N("ReduceMean", ["frames"], ["energy"], axes=[2], keepdims=0, name="mean"),
        N("Cast", ["sr"], ["srf"], to=TensorProto.FLOAT, name="cast_sr"),
        N("Div", ["srf", "f16k"], ["ratio"], name="ratio"),
        N("Mul", ["energy", "ratio"], ["e2"], name="scale_sr"),
        N("Mul", ["e2", "gain"], ["y"], name="scale_gain"),
    ]
    inits = [const("k1000", i64(1000)), const("ax0", i64([0])), const("one", i64([1])), const("minus1", i64([-1])),
             const("f16k", f32(16000.0))]
    m = make("audio_sr", nodes, [vi("x", [1, "samples"]), vi("sr", [], TensorProto.INT64), vi("gain", [1])],
             [vi("y", [1, "frames"])], inits, 13)
    return m, [{"input_shapes": {"x": [1, 160]}, "input_values": {"sr": [16000], "gain": [0.5]}},
               {"input_shapes": {"x": [1, 64]}, "input_values": {"sr": [8000], "gain": [-1.25]}}]


def cast_shape(r):
    N = helper.make_node
    nodes = [N("Cast", ["y"], ["yi"], to=TensorProto.INT64, name="to_int"),
             N("Reshape", ["x", "yi"], ["z"], name="reshape")]
    m = make("cast_shape", nodes, [vi("x", [1, 4, 4]), vi("y", [2])], [vi("z", ["a", "b"])], [], 13)
    return m, []


def range_dynamic(r):
    N = helper.make_node
    nodes = [N("Range", ["x", "ten", "one"], ["y"], name="range")]
    m = make("range_dynamic", nodes, [vi("x", [])], [vi("y", ["n"])], [const("ten", f32(10.0)), const("one", f32(1.0))],
             13)
    return m, []


ONNX_TYPES = {TensorProto.INT64: np.int64, TensorProto.BOOL: np.bool_, TensorProto.FLOAT: np.float32}


def run_cases(name, model, cases):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    r = np.random.default_rng(sum(ord(c) * (i + 1) for i, c in enumerate(name)))
    out = []
    for case in cases:
        shapes, values = case.get("input_shapes", {}), case.get("input_values", {})
        feeds, data = {}, []
        for i in model.graph.input:
            t = i.type.tensor_type
            if i.name in values:
                shape = shapes.get(i.name, [d.dim_value for d in t.shape.dim])
                feeds[i.name] = np.asarray(values[i.name], ONNX_TYPES[t.elem_type]).reshape(shape)
            else:
                shape = shapes.get(i.name, [d.dim_value for d in t.shape.dim])
                feeds[i.name] = f32(r.standard_normal(shape))
                data.append((i.name, feeds[i.name]))
        got = sess.run(None, feeds)
        out.append({"input_shapes": shapes, "input_values": values,
                    "inputs": [{"name": n, **goldenio.tensor(a)} for n, a in data],
                    "outputs": [goldenio.tensor(np.asarray(g, np.float32)) for g in got]})
    return out


def main():
    goldenio.check_pins(PINNED)
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    r = np.random.default_rng(2212)
    built = [dyn_conv(13, r), dyn_conv(18, r), if_shape(r), if_flag(r), audio_sr(r), cast_shape(r), range_dynamic(r)]
    entries = []
    for m, cases in built:
        name = m.graph.name
        onnx.save(m, str(OUT / f"{name}.onnx"))
        entries.append({"name": name, "file": f"{name}.onnx", "cases": run_cases(name, m, cases)})
    goldenio.write(OUT / "cases.json", {"generator": "tests/gen/gen_onnx_shapes.py", "versions": PINNED,
                                        "ort": "CPUExecutionProvider, ORT_DISABLE_ALL", "models": entries})
    total = sum(p.stat().st_size for p in OUT.rglob("*") if p.is_file())
    print(f"{len(entries)} models, {total} bytes in {OUT}")


if __name__ == "__main__":
    main()
