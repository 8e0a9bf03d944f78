#!/usr/bin/env python3
"""Proof against peers, same models, same data: trains small models on scikit-learn's digits,
exports them to float ONNX in NCHW (PyTorch) and NHWC (the same network in Keras, tf2onnx), and
quantizes each with ONNX Runtime's quantize_static (QDQ, per-channel int8, MinMax and Percentile)
and with the TFLite converter (full int8), on the same calibration samples; writes the peers'
int8 test accuracy and the SQNR of their logits against the float model's.

    .venv/bin/python tests/gen/peers/train_and_compare.py

(PyTorch runs in its own virtualenv: $TORCH_PYTHON, default .venv-torch/bin/python, through
tests/gen/peers/train_torch.py.)

Writes tests/golden/peers/:
  <model>_nchw.onnx   PyTorch 2.15.0 export (TorchScript exporter, opset 17, dynamic batch)
  <model>_nhwc.onnx   the same weights in a Keras 3 model (TensorFlow 2.21.0), tf2onnx 1.17.0
                      opset 17, intermediate names canonicalised (deterministic files)
  calib_nchw.npy, calib_nhwc.npy   float32 [200, 1, 8, 8] / [200, 8, 8, 1]: the calibration
                      samples (the same bytes: one channel), calib_labels.npy int64 [200]
  test_nchw.npy, test_labels.npy   float32 [500, 1, 8, 8], int64 [500]: the test set
  results.json        per model: float accuracy (ONNX Runtime on the NCHW model), and per peer
                      (onnxruntime-minmax, onnxruntime-percentile on both layouts; tflite) its int8
                      test accuracy, the SQNR (dB) of its logits against the float logits,
                      10 log10(sum f^2 / sum (f - q)^2) over all test logits, and its top-1
                      agreement with the float model (fraction of test samples with the same
                      arg-max)

Data: load_digits (1,797 8x8 images, 0..16, scaled to [0, 1]), shuffled with
numpy.random.default_rng(0); the first 1,297 train (their first 200 calibrate), the last 500
test. Models: see train_torch.py (mlp, cnn, dscnn with batch norm and a residual add, and outlier,
the cnn with one huge rare activation in its first layer).

Peers' settings:
  ONNX Runtime 1.32.0: quantize_static(QuantFormat.QDQ, per_channel=True, activation_type=QInt8,
    weight_type=QInt8, calibrate_method=MinMax | Percentile (99.999, ORT's default)), no
    pre-processing; run on the CPU provider with default session options.
  TFLite (TensorFlow 2.21.0 converter): from_keras_model, Optimize.DEFAULT, representative dataset =
    the 200 calibration samples, TFLITE_BUILTINS_INT8 (full int8, float input/output); run by
    ai-edge-litert 2.3.0 with the reference kernels (OpResolverType.BUILTIN_REF).

Pinned: numpy 2.4.6, onnx 1.23.2, onnxruntime 1.32.0, scikit-learn 1.9.1, tensorflow-cpu 2.21.0,
keras 3.15.1, tf2onnx 1.17.0, ai-edge-litert 2.3.0; torch 2.15.0 (checked by train_torch.py).
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent
sys.path.insert(0, str(HERE.parent))  # tests/gen, for goldenio
import goldenio  # noqa: E402
OUT = REPO / "tests" / "golden" / "peers"
PINNED = {"numpy": "2.4.6", "onnx": "1.23.2", "onnxruntime": "1.32.0", "scikit-learn": "1.9.1",
          "tensorflow-cpu": "2.21.0", "keras": "3.15.1", "tf2onnx": "1.17.0", "ai-edge-litert": "2.3.0"}
MODELS = ["mlp", "cnn", "dscnn", "outlier"]
N_TRAIN, N_CALIB, N_TEST = 1297, 200, 500


def data():
    from sklearn.datasets import load_digits
    d = load_digits()
    x = (d.images / 16.0).astype(np.float32)[:, None, :, :]
    y = d.target.astype(np.int64)
    perm = np.random.default_rng(0).permutation(len(x))
    x, y = x[perm], y[perm]
    assert len(x) == N_TRAIN + N_TEST
    return x[:N_TRAIN], y[:N_TRAIN], x[N_TRAIN:], y[N_TRAIN:]


def sqnr(f, q):
    f, q = np.asarray(f, np.float64), np.asarray(q, np.float64)
    return float(10 * np.log10(np.sum(f * f) / np.sum((f - q) ** 2)))


def accuracy(logits, labels):
    return float(np.mean(np.argmax(logits, axis=1) == labels))


def score(q, float_logits, labels):
    return {"accuracy": accuracy(q, labels), "sqnr_db": sqnr(float_logits, q),
            "agreement": float(np.mean(np.argmax(q, axis=1) == np.argmax(float_logits, axis=1)))}


def ort_run(path_or_bytes, x, name="x"):
    import onnxruntime as ort
    s = ort.InferenceSession(path_or_bytes, providers=["CPUExecutionProvider"])
    return s.run(None, {name: x})[0]


def keras_model(name, w):
    import tensorflow as tf
    L = tf.keras.layers
    inp = tf.keras.Input((8, 8, 1), name="x")
    conv_k = lambda t: t.transpose(2, 3, 1, 0)          # OIHW -> HWIO
    dw_k = lambda t: t.transpose(2, 3, 0, 1)            # [C, 1, kh, kw] -> [kh, kw, C, 1]
    bn_w = lambda p: [w[f"{p}.weight"], w[f"{p}.bias"], w[f"{p}.running_mean"], w[f"{p}.running_var"]]
    sets = []
    if name == "mlp":
        x = L.Flatten()(inp)
        for i, (units, act) in enumerate([(64, "relu"), (32, "relu"), (10, None)]):
            layer = L.Dense(units, activation=act, name=f"fc{i + 1}")
            x = layer(x)
            sets.append((layer, [w[f"fc{i + 1}.weight"].T, w[f"fc{i + 1}.bias"]]))
    elif name in ("cnn", "outlier"):
        c1 = w["conv1.weight"].shape[0]
        l1 = L.Conv2D(c1, 3, padding="same", activation="relu", name="conv1")
        l2 = L.Conv2D(16, 3, padding="same", activation="relu", name="conv2")
        fc = L.Dense(10, name="fc")
        x = fc(L.Flatten()(L.MaxPooling2D(2)(l2(l1(inp)))))
        # PyTorch flattens (C, H, W), Keras (H, W, C).
        fw = w["fc.weight"].reshape(10, 16, 4, 4).transpose(2, 3, 1, 0).reshape(256, 10)
        sets += [(l1, [conv_k(w["conv1.weight"]), w["conv1.bias"]]),
                 (l2, [conv_k(w["conv2.weight"]), w["conv2.bias"]]), (fc, [fw, w["fc.bias"]])]
    elif name == "dscnn":
        def bn(p):
            layer = L.BatchNormalization(epsilon=1e-5, name=p)
            sets.append((layer, bn_w(p)))
            return layer

        def conv(p, c, k):
            layer = L.Conv2D(c, k, padding="same", use_bias=False, name=p)
            sets.append((layer, [conv_k(w[f"{p}.weight"])]))
            return layer

        def dw(p):
            layer = L.DepthwiseConv2D(3, padding="same", use_bias=False, name=p)
            sets.append((layer, [dw_k(w[f"{p}.weight"])]))
            return layer

        y = L.ReLU()(bn("bn0")(conv("conv0", 16, 3)(inp)))
        z = bn("bn2")(conv("pw1", 16, 1)(L.ReLU()(bn("bn1")(dw("dw1")(y)))))
        y = L.MaxPooling2D(2)(L.ReLU()(L.Add()([z, y])))
        y = L.ReLU()(bn("bn4")(conv("pw2", 32, 1)(L.ReLU()(bn("bn3")(dw("dw2")(y))))))
        fc = L.Dense(10, name="fc")
        x = fc(L.GlobalAveragePooling2D()(y))
        sets.append((fc, [w["fc.weight"].T, w["fc.bias"]]))
    m = tf.keras.Model(inp, x)
    for layer, ws in sets:
        layer.set_weights([np.asarray(a, np.float32) for a in ws])
    return m


def canonical_names(model):
    """tf2onnx's generated names carry a process-dependent counter: rename intermediates in graph
    order so reruns write identical files (graph inputs and outputs keep their names)."""
    import onnx
    g = model.graph
    keep = {i.name for i in g.input} | {o.name for o in g.output}
    rename = {}
    # Initializers in order of first use (tf2onnx's own order varies between runs).
    inits = {t.name: t for t in g.initializer}
    order = []
    for n in g.node:
        for i in n.input:
            if i in inits and i not in rename:
                rename[i] = f"const{len(order)}"
                order.append(inits[i])
    for t in order:
        t.name = rename[t.name]
    del g.initializer[:]
    g.initializer.extend(order)
    for k, n in enumerate(g.node):
        n.name = f"{n.op_type}_{k}"
        for j, o in enumerate(n.output):
            if o and o not in keep:
                rename[o] = f"{n.op_type}_{k}:{j}"
                n.output[j] = rename[o]
    for n in g.node:
        for j, i in enumerate(n.input):
            n.input[j] = rename.get(i, i)
    del g.value_info[:]
    onnx.checker.check_model(model, full_check=True)
    return model


def to_onnx_nhwc(m, path):
    import onnx
    import tensorflow as tf
    import tf2onnx
    spec = (tf.TensorSpec((None, 8, 8, 1), tf.float32, name="x"),)
    proto, _ = tf2onnx.convert.from_keras(m, input_signature=spec, opset=17)
    # The output is called "logits", as in the PyTorch export.
    old = proto.graph.output[0].name
    for n in proto.graph.node:
        n.output[:] = ["logits" if o == old else o for o in n.output]
    proto.graph.output[0].name = "logits"
    proto.graph.name = path.stem
    onnx.save(canonical_names(proto), str(path))


class Reader:
    def __init__(self, x):
        self.rows = [{"x": x[i:i + 1]} for i in range(len(x))]
        self.i = 0

    def get_next(self):
        if self.i >= len(self.rows):
            return None
        self.i += 1
        return self.rows[self.i - 1]

    def rewind(self):
        self.i = 0


def ort_quantize(src, dst, calib, method):
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static
    quantize_static(str(src), str(dst), Reader(calib), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                    calibrate_method={"minmax": CalibrationMethod.MinMax,
                                      "percentile": CalibrationMethod.Percentile}[method])


def tflite_int8(m, calib_nhwc):
    import tensorflow as tf
    conv = tf.lite.TFLiteConverter.from_keras_model(m)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = lambda: ([calib_nhwc[i:i + 1]] for i in range(len(calib_nhwc)))
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    return conv.convert()


def tflite_run(model_bytes, x_nhwc):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    it = Interpreter(model_content=model_bytes, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    i, o = it.get_input_details()[0]["index"], it.get_output_details()[0]["index"]
    out = []
    for k in range(len(x_nhwc)):
        it.set_tensor(i, x_nhwc[k:k + 1])
        it.invoke()
        out.append(it.get_tensor(o)[0].copy())
    return np.stack(out)


def main():
    goldenio.check_pins(PINNED)
    OUT.mkdir(parents=True, exist_ok=True)
    xtr, ytr, xte, yte = data()
    calib, calib_y = xtr[:N_CALIB], ytr[:N_CALIB]
    np.save(OUT / "calib_nchw.npy", calib)
    np.save(OUT / "calib_nhwc.npy", np.ascontiguousarray(calib.transpose(0, 2, 3, 1)))
    np.save(OUT / "calib_labels.npy", calib_y)
    np.save(OUT / "test_nchw.npy", xte)
    np.save(OUT / "test_labels.npy", yte)
    xte_nhwc = np.ascontiguousarray(xte.transpose(0, 2, 3, 1))
    calib_nhwc = np.ascontiguousarray(calib.transpose(0, 2, 3, 1))
    results = {"tools": PINNED | {"torch": "2.15.0"}, "samples": {"calibration": N_CALIB, "test": N_TEST},
               "models": {}}
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        np.save(work / "train_x.npy", xtr)
        np.save(work / "train_y.npy", ytr)
        np.save(work / "calib_x.npy", calib)
        torch_py = os.environ.get("TORCH_PYTHON", str(REPO / ".venv-torch" / "bin" / "python"))
        subprocess.run([torch_py, str(HERE / "train_torch.py"), str(work), str(OUT)], check=True)
        info = json.loads((work / "torch_info.json").read_text())
        results["outlier"] = info["outlier"]
        for name in MODELS:
            w = dict(np.load(work / f"{name}_weights.npz"))
            nchw, nhwc = OUT / f"{name}_nchw.onnx", OUT / f"{name}_nhwc.onnx"
            float_logits = ort_run(str(nchw), xte)
            km = keras_model(name, w)
            keras_logits = km.predict(xte_nhwc, verbose=0)
            diff = float(np.abs(keras_logits - float_logits).max())
            assert diff < 1e-3, f"{name}: Keras and PyTorch logits differ by {diff}"
            to_onnx_nhwc(km, nhwc)
            nhwc_logits = ort_run(str(nhwc), xte_nhwc)
            r = {"float_accuracy": accuracy(float_logits, yte),
                 "float_nhwc_accuracy": accuracy(nhwc_logits, yte),
                 "keras_vs_torch_max_abs_diff": diff, "peers": {}}
            for method in ("minmax", "percentile"):
                per = {}
                for layout, src, x in (("nchw", nchw, xte), ("nhwc", nhwc, xte_nhwc)):
                    dst = work / f"{name}_{layout}_{method}.onnx"
                    ort_quantize(src, dst, calib if layout == "nchw" else calib_nhwc, method)
                    q = ort_run(str(dst), x)
                    per[layout] = score(q, float_logits, yte)
                r["peers"][f"onnxruntime-{method}"] = per
            tfl = tflite_int8(km, calib_nhwc)
            q = tflite_run(tfl, xte_nhwc)
            r["peers"]["tflite"] = {"nhwc": score(q, float_logits, yte)}
            results["models"][name] = r
            print(name, json.dumps(r))
    (OUT / "results.json").write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
