#!/usr/bin/env python3
"""A tiny int8 TFLite model for the Cortex-M0 (micro:bit, 16 KB RAM) and its golden outputs.

    .venv/bin/python tests/gen/models/gen_tiny.py

The MLPerf Tiny models need 2.5-100 KB of arena or 270+ KB of flash, more than the micro:bit has,
so the M0 runs this one instead: a small DS-CNN-like classifier with the op set of the MLPerf
models (CONV_2D, DEPTHWISE_CONV_2D, ADD, MAX_POOL_2D, AVERAGE_POOL_2D, RESHAPE, FULLY_CONNECTED,
SOFTMAX), input [1, 16, 16, 1] int8, output [1, 4] int8. Its weights are random (seeded): it
classifies nothing in particular, it exists to check the numbers bit for bit.

Writes:
* tests/golden/models/tiny_m0_int8.tflite: the model (Keras -> TFLiteConverter, full integer
  quantization with int8 input and output, calibrated on 32 seeded normal samples);
* tests/golden/models/tiny_m0.json: the same schema as mlperf_tiny.json (gen_models.py's
  `run_model`), one model with index 4: the outputs of TFLite Micro and of the TFLite
  interpreter's reference kernels on 20 inputs, sample s being SplitMix64(4 * 1000 + s).

Pinned tools (tests/gen/requirements.txt): tensorflow-cpu 2.21.0 for the conversion, plus gen_models.py's
pins (numpy, ai-edge-litert, tflite-micro). Deterministic: seeded weights and calibration data.
"""
import importlib.metadata
import os
import pathlib
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import gen_models  # noqa: E402
import goldenio  # noqa: E402
import tensorflow as tf  # noqa: E402

PINNED = {**gen_models.PINNED, "tensorflow-cpu": "2.21.0"}
INDEX = 4
NAME = "tiny"
OUT_DIR = REPO / "tests" / "golden" / "models"
MODEL = OUT_DIR / "tiny_m0_int8.tflite"
GOLDEN = OUT_DIR / "tiny_m0.json"



def build_model():
    tf.keras.utils.set_random_seed(20240601)
    L = tf.keras.layers
    x = L.Input(shape=(16, 16, 1), batch_size=1, name="x")
    a = L.Conv2D(8, 3, strides=2, padding="same", activation="relu", name="conv0")(x)          # 8x8x8
    b = L.DepthwiseConv2D(3, padding="same", activation="relu", name="dw1")(a)                 # 8x8x8
    b = L.Conv2D(8, 1, activation="relu", name="pw1")(b)                                      # 8x8x8
    c = L.Add(name="residual")([a, b])                                                        # ADD
    c = L.MaxPooling2D(2, name="maxpool")(c)                                                  # 4x4x8
    c = L.Conv2D(12, 3, padding="valid", activation="relu6", name="conv2")(c)                 # 2x2x12
    c = L.AveragePooling2D(2, name="avgpool")(c)                                              # 1x1x12
    c = L.Flatten(name="flatten")(c)                                                          # RESHAPE
    c = L.Dense(4, name="fc")(c)
    y = L.Softmax(name="softmax")(c)
    return tf.keras.Model(x, y)


def convert(model):
    rng = np.random.default_rng(7)
    calib = [rng.normal(0.0, 1.0, size=(1, 16, 16, 1)).astype(np.float32) for _ in range(32)]
    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = lambda: ([c] for c in calib)
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    conv.inference_input_type = tf.int8
    conv.inference_output_type = tf.int8
    return conv.convert()


def main():
    goldenio.check_pins(PINNED)
    MODEL.parent.mkdir(parents=True, exist_ok=True)
    MODEL.write_bytes(convert(build_model()))
    rec = gen_models.run_model(INDEX, NAME, MODEL)
    rec["file"] = MODEL.name
    doc = {"generator": "tests/gen/models/gen_tiny.py",
           "tools": {p: importlib.metadata.version(p) for p in PINNED},
           "seed_scheme": f"input = SplitMix64({INDEX} * 1000 + sample).int8s(len), row-major; sample 0..19",
           "crc": "CRC-32/ISO-HDLC (zlib.crc32) of the tensor's little-endian bytes",
           "models": [rec]}
    p = goldenio.write(GOLDEN, doc)
    ops = [l["op"] for l in rec["layers_sample0"]]
    print(f"wrote {MODEL} ({MODEL.stat().st_size} bytes), ops {ops}")
    print(f"wrote {p} ({p.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
