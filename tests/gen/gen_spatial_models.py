#!/usr/bin/env python3
"""Models with spatial ops (Resize) and their outputs from real runtimes, for the importers, the
float executor and end-to-end quantization (tests/host/spatial_models.rs).

    .venv/bin/python tests/gen/gen_spatial_models.py

Writes tests/golden/spatial/:
  onnx/*.onnx        onnx.helper models: Resize in every mode combination TFLite can express
                     (nearest: asymmetric/floor, align_corners/round_prefer_ceil,
                     tf_half_pixel_for_nn/floor, half_pixel and pytorch_half_pixel with the
                     default round_prefer_floor (where no coordinate is a tie, or where the
                     ties round to the pixels another TFLite rule reads) and with
                     round_prefer_ceil; linear: asymmetric, align_corners, half_pixel,
                     pytorch_half_pixel), scales or sizes, opsets 11, 13 and 18, and a small
                     Conv -> Resize -> Conv network for end-to-end quantization; ReduceSum and
                     ReduceMax (axes attribute or input, keepdims 0 and 1) and a Conv -> ReduceMax
                     -> Conv -> ReduceSum network; Softmax over axes 0, 1, 2 and -1 (opset 11:
                     the flattened semantics) and a Conv -> Softmax(axis 1) network
  onnx_errors/*.onnx combinations TFLite cannot express (cubic, linear tf_half_pixel_for_nn,
                     nearest asymmetric/ceil on a 2x up-scale, tf_crop_and_resize, a resize of the
                     channel axis)
  onnx.json          per model: 3 seeded standard-normal inputs and ONNX Runtime 1.32.0's outputs
                     (CPU, graph optimizations disabled); per error model, the attribute the
                     error must name
  resize_keras_float.tflite, resize_keras_int8.tflite
                     a Keras model (Conv2D, UpSampling2D bilinear, tf.image.resize nearest with
                     half-pixel centers, Conv2D) converted by TensorFlow 2.21.0's TFLiteConverter,
                     float and full-integer int8 (representative data: 32 seeded normal inputs)
  reduce_keras_int8.tflite, tflite_reduce.json
                     a Keras model with tf.reduce_max (channels) and tf.reduce_sum (H, W), full
                     int8 (REDUCE_MAX, SUM), 3 inputs and TFLite Micro's outputs
  tflite.json        3 inputs each; the float model's outputs from the TFLite interpreter
                     (BUILTIN_REF), the int8 model's from TFLite Micro and from BUILTIN_REF

Pinned: numpy 2.4.6, onnx 1.23.2, onnxruntime 1.32.0, tensorflow-cpu 2.21.0, ai-edge-litert 2.3.0,
tflite-micro 0.dev20261023182759. Deterministic (the int8 conversion's calibration is seeded).
"""
import os
import pathlib
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import goldenio  # noqa: E402

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

PINNED = {"numpy": "2.4.6", "onnx": "1.23.2", "onnxruntime": "1.32.0", "tensorflow-cpu": "2.21.0",
          "ai-edge-litert": "2.3.0", "tflite-micro": "0.dev20261023182759"}
OUT = goldenio.REPO / "tests" / "golden" / "spatial"
SAMPLES = 3


def f32(a):
    return np.asarray(a, dtype=np.float32)


def make(name, nodes, inputs, outputs, inits, opset):
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="onnx.helper")
    m.ir_version = 7 if opset <= 13 else 8
    onnx.checker.check_model(m, full_check=True)
    return m


def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def resize_model(name, opset, in_shape, mode, coord=None, nearest=None, scales=None, sizes=None):
    """One Resize of an NCHW input, scales (f32) or sizes (int64) as constant inputs."""
    inits = [numpy_helper.from_array(np.zeros(0, np.float32), "roi")]
    ins = ["x", "roi"]
    if scales is not None:
        inits.append(numpy_helper.from_array(f32(scales), "scales"))
        ins.append("scales")
        out = [int(d * s) for d, s in zip(in_shape, scales)]
    else:
        inits.append(numpy_helper.from_array(np.zeros(0, np.float32), "no_scales"))
        inits.append(numpy_helper.from_array(np.array(sizes, np.int64), "sizes"))
        ins += ["no_scales", "sizes"]
        out = list(sizes)
    attrs = {"mode": mode}
    if coord:
        attrs["coordinate_transformation_mode"] = coord
    if nearest:
        attrs["nearest_mode"] = nearest
    node = helper.make_node("Resize", ins, ["y"], name="resize", **attrs)
    return make(name, [node], [vi("x", in_shape)], [vi("y", out)], inits, opset)


def conv_resize_model(opset, r):
    """Conv 3x3 (3 -> 4, pads 1) -> Relu -> Resize linear half_pixel x2 -> Conv 3x3 (4 -> 2) ->
    Resize nearest asymmetric x2: a decoder-style upsampling path."""
    w1, b1 = f32(r.standard_normal((4, 3, 3, 3)) * 0.4), f32(r.standard_normal(4) * 0.1)
    w2, b2 = f32(r.standard_normal((2, 4, 3, 3)) * 0.3), f32(r.standard_normal(2) * 0.1)
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], kernel_shape=[3, 3], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Resize", ["r1", "roi", "s2"], ["u1"], mode="linear",
                         coordinate_transformation_mode="half_pixel", name="up_linear"),
        helper.make_node("Conv", ["u1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], kernel_shape=[3, 3], name="conv2"),
        helper.make_node("Resize", ["c2", "roi", "s2"], ["y"], mode="nearest",
                         coordinate_transformation_mode="asymmetric", nearest_mode="floor", name="up_nearest"),
    ]
    inits = [numpy_helper.from_array(a, n) for n, a in
             [("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2), ("roi", np.zeros(0, np.float32)),
              ("s2", f32([1, 1, 2, 2]))]]
    return make(f"conv_resize_opset{opset}", nodes, [vi("x", [1, 3, 6, 8])], [vi("y", [1, 2, 24, 32])], inits, opset)


def reduce_model(name, opset, op, in_shape, axes, keepdims):
    """One ReduceSum / ReduceMax of an NCHW input; axes an attribute or (ReduceSum from opset 13,
    ReduceMax from 18) a constant input."""
    rank = len(in_shape)
    norm = sorted({a % rank for a in axes}) if axes is not None else list(range(rank))
    out = [1 if d in norm else n for d, n in enumerate(in_shape)] if keepdims else \
        [n for d, n in enumerate(in_shape) if d not in norm]
    inits, ins, attrs = [], ["x"], {"keepdims": keepdims}
    if axes is not None:
        if opset >= (13 if op == "ReduceSum" else 18):
            inits.append(numpy_helper.from_array(np.array(axes, np.int64), "axes"))
            ins.append("axes")
        else:
            attrs["axes"] = axes
    node = helper.make_node(op, ins, ["y"], name=op.lower(), **attrs)
    return make(name, [node], [vi("x", in_shape)], [vi("y", out)], inits, opset)


def conv_reduce_model(opset, r):
    """Conv 3x3 (3 -> 4) -> Relu -> ReduceMax over channels (keepdims) -> Conv 1x1 (1 -> 2) ->
    ReduceSum over H and W (keepdims 0): a pooling-style head."""
    w1, b1 = f32(r.standard_normal((4, 3, 3, 3)) * 0.4), f32(r.standard_normal(4) * 0.1)
    w2, b2 = f32(r.standard_normal((2, 1, 1, 1))), f32(r.standard_normal(2) * 0.1)
    ins_max, ins_sum, inits = ["r1"], ["c2"], []
    max_attrs, sum_attrs = {"keepdims": 1}, {"keepdims": 0}
    if opset >= 18:
        inits.append(numpy_helper.from_array(np.array([1], np.int64), "max_axes"))
        ins_max.append("max_axes")
    else:
        max_attrs["axes"] = [1]
    if opset >= 13:
        inits.append(numpy_helper.from_array(np.array([2, 3], np.int64), "sum_axes"))
        ins_sum.append("sum_axes")
    else:
        sum_attrs["axes"] = [2, 3]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], kernel_shape=[3, 3], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("ReduceMax", ins_max, ["m"], name="channel_max", **max_attrs),
        helper.make_node("Conv", ["m", "w2", "b2"], ["c2"], kernel_shape=[1, 1], name="conv2"),
        helper.make_node("ReduceSum", ins_sum, ["y"], name="spatial_sum", **sum_attrs),
    ]
    inits += [numpy_helper.from_array(a, n) for n, a in [("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2)]]
    return make(f"conv_reduce_opset{opset}", nodes, [vi("x", [1, 3, 6, 8])], [vi("y", [1, 2])], inits, opset)


def softmax_model(name, opset, in_shape, axis):
    """One Softmax of an NCHW input over `axis` (before opset 13: over every axis from `axis` on,
    flattened)."""
    node = helper.make_node("Softmax", ["x"], ["y"], name="softmax", axis=axis)
    return make(name, [node], [vi("x", in_shape)], [vi("y", in_shape)], [], opset)


def conv_softmax_model(opset, r):
    """Conv 3x3 (3 -> 5) -> Softmax over the channels (axis 1; per pixel, a segmentation head)."""
    w, b = f32(r.standard_normal((5, 3, 3, 3)) * 0.5), f32(r.standard_normal(5) * 0.2)
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], kernel_shape=[3, 3], name="conv"),
        helper.make_node("Softmax", ["c"], ["y"], axis=1, name="softmax"),
    ]
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")]
    return make(f"conv_softmax_opset{opset}", nodes, [vi("x", [1, 3, 6, 8])], [vi("y", [1, 5, 6, 8])], inits, opset)


def onnx_models():
    cases = []
    for opset in (11, 13, 18):
        o = opset
        cases += [
            resize_model(f"nearest_asym_floor_x2_opset{o}", o, [1, 3, 4, 5], "nearest", "asymmetric", "floor",
                         scales=[1, 1, 2, 2]),
            resize_model(f"nearest_default_sizes_opset{o}", o, [1, 2, 3, 4], "nearest", sizes=[1, 2, 6, 8]),
            resize_model(f"nearest_align_ceil_opset{o}", o, [1, 2, 4, 5], "nearest", "align_corners",
                         "round_prefer_ceil", sizes=[1, 2, 7, 9]),
            resize_model(f"nearest_tfhalf_floor_x3_opset{o}", o, [1, 2, 3, 3], "nearest", "tf_half_pixel_for_nn",
                         "floor", scales=[1, 1, 3, 3]),
            resize_model(f"nearest_half_ceil_down_opset{o}", o, [1, 2, 8, 6], "nearest", "half_pixel",
                         "round_prefer_ceil", sizes=[1, 2, 4, 3]),
            # Every source coordinate a tie (2x + 0.5) rounded down: the pixels asymmetric reads.
            resize_model(f"nearest_half_floor_down_opset{o}", o, [1, 2, 8, 8], "nearest", "half_pixel",
                         "round_prefer_floor", sizes=[1, 2, 4, 4]),
            resize_model(f"nearest_pytorch_half_ceil_opset{o}", o, [1, 1, 5, 4], "nearest", "pytorch_half_pixel",
                         "round_prefer_ceil", sizes=[1, 1, 7, 10]),
            resize_model(f"linear_asym_x2_opset{o}", o, [1, 3, 4, 5], "linear", "asymmetric", scales=[1, 1, 2, 2]),
            resize_model(f"linear_align_opset{o}", o, [1, 2, 4, 5], "linear", "align_corners", sizes=[1, 2, 7, 9]),
            resize_model(f"linear_half_x2_opset{o}", o, [1, 3, 4, 4], "linear", "half_pixel", scales=[1, 1, 2, 2]),
            resize_model(f"linear_half_frac_opset{o}", o, [1, 2, 5, 3], "linear", "half_pixel", sizes=[1, 2, 7, 8]),
            resize_model(f"linear_half_down_opset{o}", o, [1, 2, 8, 8], "linear", "half_pixel", sizes=[1, 2, 4, 3]),
            resize_model(f"linear_pytorch_half_opset{o}", o, [1, 2, 3, 4], "linear", "pytorch_half_pixel",
                         sizes=[1, 2, 6, 10]),
            conv_resize_model(o, np.random.default_rng(opset)),
            reduce_model(f"reducesum_c_keep_opset{o}", o, "ReduceSum", [1, 3, 4, 5], [1], 1),
            reduce_model(f"reducesum_hw_drop_opset{o}", o, "ReduceSum", [2, 3, 4, 5], [2, -1], 0),
            reduce_model(f"reducesum_all_opset{o}", o, "ReduceSum", [1, 2, 3, 4], None, 0),
            reduce_model(f"reducemax_c_drop_opset{o}", o, "ReduceMax", [1, 3, 4, 5], [-3], 0),
            reduce_model(f"reducemax_nh_keep_opset{o}", o, "ReduceMax", [2, 3, 4, 5], [0, 2], 1),
            reduce_model(f"reducemax_3d_opset{o}", o, "ReduceMax", [2, 6, 5], [1], 1),
            conv_reduce_model(o, np.random.default_rng(100 + opset)),
            softmax_model(f"softmax_axis1_opset{o}", o, [1, 4, 3, 5], 1),
            softmax_model(f"softmax_axis2_opset{o}", o, [2, 3, 4, 5], 2),
            softmax_model(f"softmax_axis0_opset{o}", o, [3, 4, 2], 0),
            softmax_model(f"softmax_last_opset{o}", o, [2, 3, 6], -1),
            conv_softmax_model(o, np.random.default_rng(200 + opset)),
        ]
    errors = [
        (resize_model("err_cubic", 13, [1, 1, 4, 4], "cubic", scales=[1, 1, 2, 2]), "cubic"),
        (resize_model("err_linear_tfhalf", 13, [1, 1, 4, 4], "linear", "tf_half_pixel_for_nn", scales=[1, 1, 2, 2]),
         "tf_half_pixel_for_nn"),
        (resize_model("err_nearest_asym_ceil", 13, [1, 1, 4, 4], "nearest", "asymmetric", "ceil",
                      sizes=[1, 1, 8, 8]), "ceil"),
        (resize_model("err_crop_and_resize", 13, [1, 1, 4, 4], "linear", "tf_crop_and_resize",
                      scales=[1, 1, 2, 2]), "tf_crop_and_resize"),
        (resize_model("err_channel_axis", 13, [1, 2, 4, 4], "nearest", "asymmetric", "floor",
                      scales=[1, 2, 2, 2]), "spatial axes"),
    ]
    return cases, errors


def ort_run(model, feeds):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def write_onnx():
    cases, errors = onnx_models()
    entries = []
    for m in cases:
        name = m.graph.name
        path = OUT / "onnx" / f"{name}.onnx"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(m.SerializeToString())
        shape = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
        r = np.random.default_rng(sum(ord(c) * (i + 1) for i, c in enumerate(name)))
        samples = []
        for _ in range(SAMPLES):
            x = f32(r.standard_normal(shape))
            y = ort_run(m, {"x": x})
            samples.append({"input": goldenio.tensor(x), "output": goldenio.tensor(f32(y))})
        entries.append({"name": name, "file": goldenio.rel(path), "samples": samples})
    errs = []
    for m, needle in errors:
        path = OUT / "onnx_errors" / f"{m.graph.name}.onnx"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(m.SerializeToString())
        errs.append({"name": m.graph.name, "file": goldenio.rel(path), "message_contains": needle})
    goldenio.write(OUT / "onnx.json", {"generator": "tests/gen/gen_spatial_models.py",
                                       "tools": {p: v for p, v in PINNED.items() if p in ("onnx", "onnxruntime")},
                                       "models": entries, "errors": errs})
    print(f"onnx.json: {len(entries)} models, {len(errs)} error models")


def write_tflite():
    import tensorflow as tf
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    from tflite_micro import runtime as tflm_runtime

    tf.keras.utils.set_random_seed(5)
    inp = tf.keras.Input((6, 8, 3), batch_size=1)
    x = tf.keras.layers.Conv2D(4, 3, padding="same", activation="relu")(inp)
    x = tf.keras.layers.UpSampling2D(2, interpolation="bilinear")(x)
    x = tf.keras.layers.Conv2D(4, 3, padding="same")(x)
    x = tf.keras.layers.Lambda(lambda t: tf.image.resize(t, (18, 20), method="nearest"))(x)
    x = tf.keras.layers.Conv2D(2, 1)(x)
    x = tf.keras.layers.Lambda(lambda t: tf.compat.v1.image.resize_bilinear(t, (9, 10), align_corners=True))(x)
    model = tf.keras.Model(inp, x)
    rng = np.random.default_rng(11)
    rep = [f32(rng.standard_normal((1, 6, 8, 3))) for _ in range(32)]

    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    flt = conv.convert()
    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = lambda: ([r] for r in rep)
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    conv.inference_input_type = tf.int8
    conv.inference_output_type = tf.int8
    q = conv.convert()
    (OUT / "resize_keras_float.tflite").write_bytes(flt)
    (OUT / "resize_keras_int8.tflite").write_bytes(q)

    def interp(model_bytes, x):
        it = Interpreter(model_content=model_bytes, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
        it.allocate_tensors()
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()
        return np.array(it.get_tensor(it.get_output_details()[0]["index"]))

    it = Interpreter(model_content=q)
    qi = it.get_input_details()[0]["quantization"]
    samples = []
    for s in range(SAMPLES):
        xf = f32(rng.standard_normal((1, 6, 8, 3)))
        xq = np.clip(np.round(xf / qi[0]) + qi[1], -128, 127).astype(np.int8)
        tflm = tflm_runtime.Interpreter.from_bytes(q, arena_size=1 << 20)
        tflm.set_input(xq, 0)
        tflm.invoke()
        samples.append({"float_input": goldenio.tensor(xf), "float_output": goldenio.tensor(f32(interp(flt, xf))),
                        "int8_input": goldenio.tensor(xq), "int8_tflm": goldenio.tensor(np.array(tflm.get_output(0))),
                        "int8_tflite_ref": goldenio.tensor(interp(q, xq))})
    ops = sorted({op["op_name"] for op in Interpreter(model_content=q)._get_ops_details()})
    goldenio.write(OUT / "tflite.json", {"generator": "tests/gen/gen_spatial_models.py",
                                         "tools": {p: v for p, v in PINNED.items() if p != "onnx"},
                                         "float_model": goldenio.rel(OUT / "resize_keras_float.tflite"),
                                         "int8_model": goldenio.rel(OUT / "resize_keras_int8.tflite"),
                                         "int8_ops": ops, "samples": samples})
    print(f"tflite.json: int8 ops {ops}")


def write_tflite_reduce():
    """A Keras model with tf.reduce_sum and tf.reduce_max, converted to int8 (SUM, REDUCE_MAX), run
    by TFLite Micro (the interpreter's reference SUM is not an oracle: tests/src/oracle/spatial.rs)."""
    import tensorflow as tf
    from tflite_micro import runtime as tflm_runtime

    tf.keras.utils.set_random_seed(6)
    inp = tf.keras.Input((6, 8, 3), batch_size=1)
    x = tf.keras.layers.Conv2D(4, 3, padding="same", activation="relu")(inp)
    x = tf.keras.layers.Lambda(lambda t: tf.reduce_max(t, axis=3, keepdims=True))(x)
    x = tf.keras.layers.Conv2D(2, 1)(x)
    x = tf.keras.layers.Lambda(lambda t: tf.reduce_sum(t, axis=[1, 2]))(x)
    model = tf.keras.Model(inp, x)
    rng = np.random.default_rng(12)
    rep = [f32(rng.standard_normal((1, 6, 8, 3))) for _ in range(32)]
    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = lambda: ([r] for r in rep)
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    conv.inference_input_type = tf.int8
    conv.inference_output_type = tf.int8
    q = conv.convert()
    (OUT / "reduce_keras_int8.tflite").write_bytes(q)
    from ai_edge_litert.interpreter import Interpreter
    it = Interpreter(model_content=q)
    qi = it.get_input_details()[0]["quantization"]
    ops = sorted({op["op_name"] for op in it._get_ops_details()})
    samples = []
    for _ in range(SAMPLES):
        xq = np.clip(np.round(f32(rng.standard_normal((1, 6, 8, 3))) / qi[0]) + qi[1], -128, 127).astype(np.int8)
        tflm = tflm_runtime.Interpreter.from_bytes(q, arena_size=1 << 20)
        tflm.set_input(xq, 0)
        tflm.invoke()
        samples.append({"int8_input": goldenio.tensor(xq), "int8_tflm": goldenio.tensor(np.array(tflm.get_output(0)))})
    goldenio.write(OUT / "tflite_reduce.json", {"generator": "tests/gen/gen_spatial_models.py",
                                                "int8_model": goldenio.rel(OUT / "reduce_keras_int8.tflite"),
                                                "int8_ops": ops, "samples": samples})
    print(f"tflite_reduce.json: int8 ops {ops}")


def main():
    goldenio.check_pins(PINNED)
    write_onnx()
    write_tflite()
    write_tflite_reduce()


if __name__ == "__main__":
    main()
