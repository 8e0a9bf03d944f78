#!/usr/bin/env python3
"""Transposed-convolution models and their reference outputs, for tests/host/transpose_conv.rs.

    .venv/bin/python tests/gen/gen_transpose_conv_models.py

Writes tests/golden/transpose_conv/:

* ``onnx_*.onnx``: ONNX ``ConvTranspose`` models (opset 17) written with onnx.helper: strides
  2x2, 2x1 and 1x1, ``pads``, ``output_padding``, ``output_shape``, ``auto_pad`` SAME_UPPER /
  SAME_LOWER / VALID, with and without bias, and a small decoder (Conv, Relu, ConvTranspose,
  Relu, ConvTranspose) as PP-OCR's DB head upsamples; outputs by ONNX Runtime (graph
  optimizations disabled);
* ``tflite_*.tflite``: float Keras models with ``Conv2DTranspose`` (SAME and VALID, strides 2 and
  (2, 1), ReLU), converted by TensorFlow's TFLiteConverter (TRANSPOSE_CONV with its bias and fused
  activation); outputs by the TFLite interpreter (ai_edge_litert, reference kernels);
* ``mediapipe_*.tflite``: MediaPipe's custom ``Convolution2DTransposeBias`` (CUSTOM op, inputs
  input / OHWI weights / bias, custom options TfLiteTransposeConvParams: int32 padding (1 SAME,
  2 VALID), stride_width, stride_height), written with TFLite's flatbuffer schema. No installed
  interpreter has the op (it is registered by MediaPipe's graph runner), so the expected output is
  ONNX Runtime's ``ConvTranspose`` with the padding MediaPipe's kernel applies (its Prepare/Eval:
  total SAME padding ``max(0, k - (in - 1) % s - 1)``, half of it, rounded down, before).

``onnx_bad_*.onnx``: ConvTranspose with group 2 and with dilations 2, which the importer refuses.

cases.json: per model its file, format, seeded input (in the model's own layout: NCHW for ONNX,
NHWC for TFLite) and the reference output.

Pinned: numpy 2.4.6, onnx 1.23.2, onnxruntime 1.32.0, tensorflow-cpu 2.21.0, ai-edge-litert
2.3.0, flatbuffers 25.12.19 (tests/gen/requirements.txt). Deterministic.
"""
import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import flatbuffers  # noqa: E402
import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import goldenio  # noqa: E402

PINNED = {"numpy": "2.4.6", "onnx": "1.23.2", "onnxruntime": "1.32.0", "tensorflow-cpu": "2.21.0",
          "ai-edge-litert": "2.3.0", "flatbuffers": "25.12.19"}
OUT = HERE.parent / "golden" / "transpose_conv"


def ort_run(model_bytes, x):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def onnx_model(name, x_shape, nodes, inits):
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", "c", "h", "w"])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                          producer_name="gen_transpose_conv_models.py")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def f32(name, a):
    return numpy_helper.from_array(np.asarray(a, np.float32), name)


def conv_transpose(rng, x_shape, m, k, bias=True, **attrs):
    c = x_shape[1]
    w = rng.standard_normal((c, m, k[0], k[1])) / np.sqrt(c * k[0] * k[1] / 2)
    inits = [f32("w", w)]
    ins = ["x", "w"]
    if bias:
        inits.append(f32("b", 0.3 * rng.standard_normal(m)))
        ins.append("b")
    node = helper.make_node("ConvTranspose", ins, ["y"], name="deconv", kernel_shape=list(k), **attrs)
    return [node], inits


def decoder(rng, x_shape):
    """Conv 3x3 -> Relu -> ConvTranspose 2x2 s2 -> Relu -> ConvTranspose 2x2 s2 (+ bias): the
    upsampling tail of PP-OCR's DB head (which ends in a sigmoid, left out here)."""
    c = x_shape[1]
    n = helper.make_node
    inits = [f32("w0", rng.standard_normal((8, c, 3, 3)) / np.sqrt(9 * c / 2)), f32("b0", 0.1 * rng.standard_normal(8)),
             f32("w1", rng.standard_normal((8, 4, 2, 2)) / np.sqrt(8 * 4 / 2)), f32("b1", 0.1 * rng.standard_normal(4)),
             f32("w2", rng.standard_normal((4, 1, 2, 2)) / np.sqrt(4 * 4 / 2)), f32("b2", 0.1 * rng.standard_normal(1))]
    nodes = [n("Conv", ["x", "w0", "b0"], ["h0"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             n("Relu", ["h0"], ["r0"], name="relu0"),
             n("ConvTranspose", ["r0", "w1", "b1"], ["h1"], name="deconv1", kernel_shape=[2, 2], strides=[2, 2]),
             n("Relu", ["h1"], ["r1"], name="relu1"),
             n("ConvTranspose", ["r1", "w2", "b2"], ["y"], name="deconv2", kernel_shape=[2, 2], strides=[2, 2])]
    return nodes, inits


def onnx_cases(rng):
    specs = [
        ("onnx_k2s2_db_head", [1, 8, 6, 6], lambda: conv_transpose(rng, [1, 8, 6, 6], 4, (2, 2), strides=[2, 2])),
        ("onnx_k3s2_pads_outpad", [1, 4, 5, 4],
         lambda: conv_transpose(rng, [1, 4, 5, 4], 6, (3, 3), strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1])),
        ("onnx_k4s2_pads1_nobias", [1, 3, 4, 5],
         lambda: conv_transpose(rng, [1, 3, 4, 5], 5, (4, 4), bias=False, strides=[2, 2], pads=[1, 1, 1, 1])),
        ("onnx_k3s21_asym_pads", [2, 3, 4, 3],
         lambda: conv_transpose(rng, [2, 3, 4, 3], 4, (3, 2), strides=[2, 1], pads=[0, 1, 2, 0])),
        ("onnx_k3s1_same", [1, 5, 5, 5], lambda: conv_transpose(rng, [1, 5, 5, 5], 3, (3, 3), pads=[1, 1, 1, 1])),
        ("onnx_output_shape", [1, 4, 3, 3],
         lambda: conv_transpose(rng, [1, 4, 3, 3], 4, (3, 3), strides=[2, 2], output_shape=[6, 6])),
        ("onnx_same_upper", [1, 4, 3, 4],
         lambda: conv_transpose(rng, [1, 4, 3, 4], 4, (3, 3), strides=[2, 2], auto_pad="SAME_UPPER")),
        ("onnx_same_lower", [1, 4, 3, 4],
         lambda: conv_transpose(rng, [1, 4, 3, 4], 4, (3, 3), strides=[2, 2], auto_pad="SAME_LOWER")),
        ("onnx_valid", [1, 2, 3, 3], lambda: conv_transpose(rng, [1, 2, 3, 3], 3, (3, 3), strides=[2, 2],
                                                             auto_pad="VALID")),
        ("onnx_decoder", [1, 6, 8, 8], lambda: decoder(rng, [1, 6, 8, 8])),
    ]
    cases = []
    for name, shape, make in specs:
        nodes, inits = make()
        m = onnx_model(name, shape, nodes, inits)
        data = m.SerializeToString()
        (OUT / f"{name}.onnx").write_bytes(data)
        x = rng.standard_normal(shape).astype(np.float32)
        y = ort_run(data, x)
        cases.append({"name": name, "file": f"{name}.onnx", "format": "onnx", "oracle": "onnxruntime",
                      "input": goldenio.tensor(x), "expected": goldenio.tensor(y)})
        print(name, x.shape, "->", y.shape)
    return cases


def tflite_cases(rng):
    import tensorflow as tf
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    specs = [
        ("tflite_same_s2_relu", (6, 6, 8), dict(filters=4, kernel_size=3, strides=2, padding="same",
                                                 activation="relu")),
        ("tflite_valid_s2", (5, 4, 3), dict(filters=5, kernel_size=2, strides=2, padding="valid")),
        ("tflite_same_s21_k4_nobias", (4, 5, 4), dict(filters=3, kernel_size=4, strides=(2, 1), padding="same",
                                                       use_bias=False)),
        ("tflite_valid_s1", (4, 4, 2), dict(filters=3, kernel_size=3, strides=1, padding="valid")),
    ]
    cases = []
    for i, (name, shape, kw) in enumerate(specs):
        tf.keras.utils.set_random_seed(100 + i)
        inp = tf.keras.Input(shape=shape, batch_size=1)
        layer = tf.keras.layers.Conv2DTranspose(**kw, bias_initializer="random_normal")
        model = tf.keras.Model(inp, layer(inp))
        conv = tf.lite.TFLiteConverter.from_keras_model(model)
        data = conv.convert()
        (OUT / f"{name}.tflite").write_bytes(data)
        x = rng.standard_normal((1,) + shape).astype(np.float32)
        it = Interpreter(model_content=data, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
        it.allocate_tensors()
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()
        y = it.get_tensor(it.get_output_details()[0]["index"])
        ops = {d["op_name"] for d in it._get_ops_details()}
        assert "TRANSPOSE_CONV" in ops, (name, ops)
        cases.append({"name": name, "file": f"{name}.tflite", "format": "tflite", "oracle": "tflite interpreter",
                      "input": goldenio.tensor(x), "expected": goldenio.tensor(y)})
        print(name, x.shape, "->", y.shape, sorted(ops))
    return cases


def mediapipe_model(x_shape, w, b, padding, stride, out_shape):
    from ai_edge_litert import schema_py_generated as S

    def tensor(name, shape, buf):
        t = S.TensorT()
        t.name, t.shape, t.type, t.buffer = name, list(shape), S.TensorType.FLOAT32, buf
        return t

    buffers = [S.BufferT()]
    for a in (w, b):
        bb = S.BufferT()
        bb.data = np.frombuffer(np.ascontiguousarray(a, "<f4").tobytes(), np.uint8)
        buffers.append(bb)
    tensors = [tensor("x", x_shape, 0), tensor("w", w.shape, 1), tensor("b", b.shape, 2),
               tensor("y", out_shape, 0)]
    oc = S.OperatorCodeT()
    oc.builtinCode = oc.deprecatedBuiltinCode = S.BuiltinOperator.CUSTOM
    oc.customCode = "Convolution2DTransposeBias"
    oc.version = 1
    op = S.OperatorT()
    op.opcodeIndex, op.inputs, op.outputs = 0, [0, 1, 2], [3]
    op.customOptions = np.frombuffer(np.array([padding, stride[1], stride[0]], "<i4").tobytes(), np.uint8)
    sg = S.SubGraphT()
    sg.name, sg.tensors, sg.inputs, sg.outputs, sg.operators = "main", tensors, [0], [3], [op]
    m = S.ModelT()
    m.version, m.description, m.operatorCodes, m.subgraphs, m.buffers = 3, "mediapipe custom op", [oc], [sg], buffers
    fb = flatbuffers.Builder(4096)
    fb.Finish(m.Pack(fb), file_identifier=b"TFL3")
    return bytes(fb.Output())


def mediapipe_cases(rng):
    specs = [("mediapipe_same_k4s2", (1, 4, 4, 6), 4, (4, 4), 1, (2, 2)),
             ("mediapipe_same_k3s2_odd", (1, 5, 3, 4), 3, (3, 3), 1, (2, 2)),
             ("mediapipe_valid_k2s2", (1, 3, 4, 5), 2, (2, 2), 2, (2, 2))]
    cases = []
    for name, x_shape, m, k, padding, stride in specs:
        n, h, wd, c = x_shape
        w = (rng.standard_normal((m, k[0], k[1], c)) / np.sqrt(c * k[0] * k[1] / 2)).astype(np.float32)
        b = (0.3 * rng.standard_normal(m)).astype(np.float32)
        # MediaPipe's Prepare/Eval: total SAME padding, output size, leading half.
        pads, out = [], []
        for size, kk, s in ((h, k[0], stride[0]), (wd, k[1], stride[1])):
            total = max(0, kk - (size - 1) % s - 1) if padding == 1 else 0
            out.append(s * (size - 1) + kk - total)
            pads.append((total // 2, total - total // 2))
        out_shape = (n, out[0], out[1], m)
        data = mediapipe_model(x_shape, w, b, padding, stride, out_shape)
        (OUT / f"{name}.tflite").write_bytes(data)
        x = rng.standard_normal(x_shape).astype(np.float32)
        # ONNX Runtime's ConvTranspose with the same weights ([C, M, kh, kw]) and padding, NCHW.
        node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], kernel_shape=list(k), strides=list(stride),
                                pads=[pads[0][0], pads[1][0], pads[0][1], pads[1][1]])
        ref = onnx_model(name, [n, c, h, wd], [node], [f32("w", w.transpose(3, 0, 1, 2)), f32("b", b)])
        y = ort_run(ref.SerializeToString(), x.transpose(0, 3, 1, 2)).transpose(0, 2, 3, 1)
        assert y.shape == out_shape, (y.shape, out_shape)
        cases.append({"name": name, "file": f"{name}.tflite", "format": "tflite",
                      "oracle": "onnxruntime ConvTranspose with MediaPipe's padding",
                      "input": goldenio.tensor(x), "expected": goldenio.tensor(np.ascontiguousarray(y))})
        print(name, x.shape, "->", y.shape)
    return cases


def rejected_cases(rng):
    """Models the importer refuses (group 2, dilations 2): written, not run."""
    out = []
    for name, attrs, w_shape in [("onnx_bad_group", dict(group=2), (4, 2, 3, 3)),
                                 ("onnx_bad_dilation", dict(dilations=[2, 2]), (4, 4, 3, 3))]:
        node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="deconv", kernel_shape=[3, 3], **attrs)
        m = onnx_model(name, [1, 4, 3, 3], [node], [f32("w", rng.standard_normal(w_shape))])
        (OUT / f"{name}.onnx").write_bytes(m.SerializeToString())
        out.append({"name": name, "file": f"{name}.onnx"})
    return out


def main():
    goldenio.check_pins(PINNED)
    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(61)
    cases = onnx_cases(rng) + mediapipe_cases(rng) + tflite_cases(rng)
    rejected = rejected_cases(rng)
    goldenio.write(OUT / "cases.json", {"generator": "tests/gen/gen_transpose_conv_models.py", "tools": dict(PINNED),
                                        "models": cases, "rejected": rejected})


if __name__ == "__main__":
    main()
