#!/usr/bin/env python3
"""Float TFLite models converted with a dynamic batch whose reshapes compute their shape at run
time (SHAPE, STRIDED_SLICE, PACK, GATHER, REDUCE_PROD, CONCATENATION on the shape path), and the
TFLite interpreter's outputs (reference kernels): the golden data of the TFLite importer's
shape folding (tests/host/tflite_shapes.rs).

    .venv/bin/python tests/gen/gen_tflite_shapes.py

Writes tests/golden/tflite_import/shapes/:
  flatten_dynamic.tflite  Keras, input (None, 8, 8, 3): Conv2D, a reshape to
                          tf.stack([shape[0], shape[1] * shape[2], shape[3]]), Dense (its
                          Tensordot shape path: SHAPE, GATHER, REDUCE_PROD, CONCATENATION, PACK),
                          a reshape to [tf.shape(x)[0], -1]
  cases.json              3 seeded standard-normal inputs (batch 1) and the interpreter's outputs
  sparse_weights.tflite   Keras Conv2D + Dense whose weights are 80 % zeros, converted with
                          tf.lite.Optimize.EXPERIMENTAL_SPARSITY: the converter stores them sparse
                          (sparsity: traversal_order, dim_metadata DENSE / SPARSE_CSR) behind
                          DENSIFY operators; the importer densifies them (its samples in cases.json)
  sparse_f16.tflite       the sparse_weights Keras model converted with float16 weights as well
                          (Optimize.DEFAULT, supported_types float16): sparse f16 constants behind
                          DENSIFY, then DEQUANTIZE to float32 (as MediaPipe's pose detector ships)
  sparse_int8.tflite      an int8 Dense (64 -> 16, 70 % zeros) converted with EXPERIMENTAL_SPARSITY and
                          full-integer quantization: int8 sparse weights behind DENSIFY; its
                          samples are int8 inputs and the interpreter's int8 outputs (BUILTIN_REF:
                          single rounding)
  reduce_prod_activation.tflite  REDUCE_PROD of a float activation: an operator the importer
                          only folds, on a run-time value (the error must name it and the tensor)

Pinned: tensorflow-cpu 2.21.0, ai-edge-litert 2.3.0, numpy 2.4.6. Deterministic.
"""
import json
import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import goldenio  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from ai_edge_litert.interpreter import Interpreter, OpResolverType  # noqa: E402

PINNED = {"tensorflow-cpu": "2.21.0", "ai-edge-litert": "2.3.0", "numpy": "2.4.6"}
OUT = HERE.parent / "golden" / "tflite_import" / "shapes"


class Flatten3(tf.keras.layers.Layer):
    def call(self, t):
        s = tf.shape(t)
        return tf.reshape(t, tf.stack([s[0], s[1] * s[2], s[3]]))


class Flatten2(tf.keras.layers.Layer):
    def call(self, t):
        return tf.reshape(t, [tf.shape(t)[0], -1])


def flatten_dynamic():
    tf.keras.utils.set_random_seed(2212)
    L = tf.keras.layers
    inp = tf.keras.Input((8, 8, 3), name="x")
    x = L.Conv2D(4, 3, padding="same", activation="relu")(inp)
    x = Flatten3()(x)
    x = L.Dense(5)(x)
    y = Flatten2()(x)
    return tf.keras.Model(inp, y)


def sparse_weights():
    tf.keras.utils.set_random_seed(2213)
    L = tf.keras.layers
    inp = tf.keras.Input((6, 6, 3), batch_size=1, name="x")
    x = L.Conv2D(8, 3, activation="relu")(inp)
    x = L.Flatten()(x)
    y = L.Dense(10)(x)
    m = tf.keras.Model(inp, y)
    r = np.random.default_rng(2213)
    for layer in m.layers:
        w = layer.get_weights()
        if w:
            kernel, bias = w
            keep = r.random(kernel.shape) < 0.2
            layer.set_weights([kernel * keep, r.standard_normal(bias.shape).astype(np.float32) * 0.1])
    return m


def sparse_convert(m):
    c = tf.lite.TFLiteConverter.from_keras_model(m)
    c.optimizations = [tf.lite.Optimize.EXPERIMENTAL_SPARSITY]
    return c.convert()


def sparse_int8():
    tf.keras.utils.set_random_seed(2214)
    inp = tf.keras.Input((64,), batch_size=1, name="x")
    d = tf.keras.layers.Dense(16)
    m = tf.keras.Model(inp, d(inp))
    r = np.random.default_rng(2214)
    w, _ = d.get_weights()
    d.set_weights([w * (r.random(w.shape) < 0.3), r.standard_normal(16).astype(np.float32) * 0.1])
    return m


def sparse_int8_convert(m):
    r = np.random.default_rng(2215)
    c = tf.lite.TFLiteConverter.from_keras_model(m)
    c.optimizations = [tf.lite.Optimize.DEFAULT, tf.lite.Optimize.EXPERIMENTAL_SPARSITY]
    c.representative_dataset = lambda: ([r.standard_normal((1, 64)).astype(np.float32)] for _ in range(32))
    c.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    c.inference_input_type = tf.int8
    c.inference_output_type = tf.int8
    return c.convert()


def sparse_f16_convert(m):
    c = tf.lite.TFLiteConverter.from_keras_model(m)
    c.optimizations = [tf.lite.Optimize.DEFAULT, tf.lite.Optimize.EXPERIMENTAL_SPARSITY]
    c.target_spec.supported_types = [tf.float16]
    return c.convert()


def reduce_prod_activation():
    inp = tf.keras.Input((4, 3), name="x", batch_size=1)
    y = tf.keras.layers.Lambda(lambda t: tf.reduce_prod(t, axis=1))(inp)
    return tf.keras.Model(inp, y)


def main():
    goldenio.check_pins(PINNED)
    OUT.mkdir(parents=True, exist_ok=True)
    models = []
    plain = lambda m: tf.lite.TFLiteConverter.from_keras_model(m).convert()  # noqa: E731
    for name, build, convert in [("flatten_dynamic", flatten_dynamic, plain),
                                 ("sparse_weights", sparse_weights, sparse_convert),
                                 ("sparse_int8", sparse_int8, sparse_int8_convert),
                                 ("sparse_f16", sparse_weights, sparse_f16_convert)]:
        content = convert(build())
        (OUT / f"{name}.tflite").write_bytes(content)
        it = Interpreter(model_content=content, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
        it.allocate_tensors()
        d, o = it.get_input_details()[0], it.get_output_details()[0]
        ops = sorted({op["op_name"] for op in it._get_ops_details()})
        r = np.random.default_rng(sum(ord(c) for c in name))
        samples = []
        for _ in range(3):
            if d["dtype"] == np.int8:
                x = r.integers(-128, 128, d["shape"]).astype(np.int8)
            else:
                x = r.standard_normal(d["shape"]).astype(np.float32)
            it.set_tensor(d["index"], x)
            it.invoke()
            samples.append({"input": goldenio.tensor(x), "output": goldenio.tensor(it.get_tensor(o["index"]))})
        models.append({"name": name, "file": f"{name}.tflite", "ops": ops,
                       "input_signature": [int(v) for v in d["shape_signature"]], "samples": samples})
    (OUT / "reduce_prod_activation.tflite").write_bytes(
        tf.lite.TFLiteConverter.from_keras_model(reduce_prod_activation()).convert())
    goldenio.write(OUT / "cases.json", {"generator": "tests/gen/gen_tflite_shapes.py", "versions": PINNED,
                                        "interpreter": "BUILTIN_REF", "models": models})
    print(json.dumps([(m["name"], m["ops"]) for m in models]))


if __name__ == "__main__":
    main()
