"""Keras applications of the zoo (run by build_zoo.py with the repository's .venv Python:
tensorflow_cpu 2.21.0): MobileNetV2 and MobileNetV3Small with random weights (seeded; weights=None,
no download) whose BatchNorm moving statistics are set to the statistics of the calibration
photos (one training-mode pass over them with momentum 0), converted to float TFLite with
tf.lite.TFLiteConverter. Also written: model_tflite_int8.tflite, the TFLite converter's own
full-integer quantization (int8 in and out) with the same calibration samples as the
representative dataset, so the benchmark has a reference quantizer for these TFLite models.

Usage: zoo_keras.py OUT_DIR INPUTS_NPZ [NAME ...]
"""
import json
import pathlib
import sys

import numpy as np
import tensorflow as tf

N_CALIB, N_EVAL = 32, 16


def set_batchnorm(model, x):
    for layer in model.layers:
        if isinstance(layer, tf.keras.layers.BatchNormalization):
            layer.momentum = 0.0
    model(tf.constant(x), training=True)


def main(out, inputs, only):
    out = pathlib.Path(out)
    inp = np.load(inputs)
    o = (256 - 224) // 2
    crop = lambda rgb: rgb[:, o:o + 224, o:o + 224].astype(np.float32)  # noqa: E731
    apps = tf.keras.applications
    models = {
        # MobileNetV2 expects [-1, 1] (its preprocess_input); MobileNetV3 rescales 0-255 itself.
        "keras_mobilenet_v2": (lambda: apps.MobileNetV2(input_shape=(224, 224, 3), weights=None,
                                                        classifier_activation=None),
                               lambda x: x / 127.5 - 1.0, "[-1, 1]"),
        "keras_mobilenet_v3_small": (lambda: apps.MobileNetV3Small(input_shape=(224, 224, 3), weights=None,
                                                                         classifier_activation=None),
                                     lambda x: x, "[0, 255] (the model rescales itself)"),
    }
    for name, (make, prep, rng_text) in models.items():
        if only and name not in only:
            continue
        tf.keras.utils.set_random_seed(0)
        model = make()
        calib, evals = prep(crop(inp["calib_rgb"]))[:N_CALIB], prep(crop(inp["eval_rgb"]))[:N_EVAL]
        set_batchnorm(model, calib)
        d = out / name
        d.mkdir(parents=True, exist_ok=True)
        conv = tf.lite.TFLiteConverter.from_keras_model(model)
        (d / "model.tflite").write_bytes(conv.convert())
        conv = tf.lite.TFLiteConverter.from_keras_model(model)
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = lambda: ([calib[i:i + 1]] for i in range(len(calib)))
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        conv.inference_input_type = tf.int8
        conv.inference_output_type = tf.int8
        (d / "model_tflite_int8.tflite").write_bytes(conv.convert())
        np.save(d / "calib.npy", calib)
        np.save(d / "eval.npy", evals)
        (d / "meta.json").write_text(json.dumps(dict(
            source=f"tensorflow {tf.__version__}: tf.keras.applications, converted by tf.lite.TFLiteConverter",
            license="Apache-2.0 (architecture); weights random, seed 0", kind="classifier", input_layout="NHWC",
            weights="random (seed 0, weights=None), BatchNorm statistics from the calibration photos",
            inputs=f"photos of inputs.npz, center 224x224, {rng_text}"), indent=1))
        print("keras", name, "ok", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], set(sys.argv[3:]))
