#!/usr/bin/env python3
"""Models with a MatMul of two activations (attention's Q·Kᵀ and attn·V) for
tests/host/batch_matmul_models.rs: ONNX models written with onnx.helper, run by ONNX Runtime, and
TFLite float models with BATCH_MATMUL converted by TensorFlow from tf.linalg.matmul of two
tensors, run by the TFLite interpreter.

    .venv/bin/python tests/gen/gen_batch_matmul_models.py
    .venv/bin/python tests/gen/gen_batch_matmul_models.py qdq   # ONNX Runtime on the exact QDQ exports

Writes tests/golden/batch_matmul/: the models and cases.json: per model its file, its seeded
inputs (numpy default_rng) and the runtime's float output (ONNX Runtime with graph optimizations
disabled; the TFLite interpreter with its reference kernels, BUILTIN_REF).

ONNX models:
  attn_single_head  x [1, 8, 16] -> Q, K, V projections (MatMul with constant weights), Q·Kᵀ
                    (Transpose of K, then MatMul), scaled by 1/√d, Softmax, ·V;
  attn_multi_head   x [1, 10, 24], 4 heads of 6: projections, Reshape + Transpose to
                    [1, 4, 10, 6] (K to [1, 4, 6, 10]), rank-4 Q·Kᵀ, Softmax, ·V, heads merged
                    back (Transpose + Reshape), output projection: what PyTorch's
                    nn.MultiheadAttention exports;
  matmul_broadcast  two inputs a [2, 3, 4, 5], b [3, 5, 6]: batch dimensions broadcast;
  matmul_transposed two inputs a [7, 9], b [5, 9]: a · Transpose(b).
TFLite models (float32):
  tfl_bmm_adj_y     a [2, 4, 6], b [2, 5, 6]: tf.linalg.matmul(a, b, transpose_b=True);
  tfl_attention     q [1, 2, 8, 4], k [1, 2, 8, 4], v [1, 2, 8, 4]: softmax(q·kᵀ / 2)·v.

Pinned: numpy 2.4.6, onnx 1.23.2, onnxruntime 1.32.0, tensorflow-cpu 2.21.0, ai-edge-litert 2.3.0
(tests/gen/requirements.txt). Deterministic.
"""
import os
import pathlib
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import goldenio  # noqa: E402

PINNED = {"numpy": "2.4.6", "onnx": "1.23.2", "onnxruntime": "1.32.0", "tensorflow-cpu": "2.21.0",
          "ai-edge-litert": "2.3.0"}
OUT = HERE.parent / "golden" / "batch_matmul"
n = helper.make_node


def init(name, a, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(a, dtype), name)


def proj(rng, d_in, d_out):
    return rng.standard_normal((d_in, d_out)) / np.sqrt(d_in)


def attn_single_head(rng):
    t, d = 8, 16
    inits = [init("wq", proj(rng, d, d)), init("wk", proj(rng, d, d)), init("wv", proj(rng, d, d)),
             init("scale", 1.0 / np.sqrt(d))]
    nodes = [n("MatMul", ["x", "wq"], ["q"], name="q_proj"),
             n("MatMul", ["x", "wk"], ["k"], name="k_proj"),
             n("MatMul", ["x", "wv"], ["v"], name="v_proj"),
             n("Transpose", ["k"], ["kt"], perm=[0, 2, 1], name="k_t"),
             n("MatMul", ["q", "kt"], ["s"], name="qk"),
             n("Mul", ["s", "scale"], ["ss"], name="scaled"),
             n("Softmax", ["ss"], ["p"], axis=-1, name="softmax"),
             n("MatMul", ["p", "v"], ["y"], name="pv")]
    return {"x": [1, t, d]}, {"y": [1, t, d]}, nodes, inits


def attn_multi_head(rng):
    t, d, h = 10, 24, 4
    dh = d // h
    inits = [init("wq", proj(rng, d, d)), init("wk", proj(rng, d, d)), init("wv", proj(rng, d, d)),
             init("wo", proj(rng, d, d)), init("bo", 0.1 * rng.standard_normal(d)),
             init("heads", [1, t, h, dh], np.int64), init("merged", [1, t, d], np.int64),
             init("scale", 1.0 / np.sqrt(dh))]
    nodes = []
    for w in ("q", "k", "v"):
        nodes += [n("MatMul", ["x", f"w{w}"], [f"{w}_p"], name=f"{w}_proj"),
                  n("Reshape", [f"{w}_p", "heads"], [f"{w}_h"], name=f"{w}_split")]
    nodes += [n("Transpose", ["q_h"], ["q_t"], perm=[0, 2, 1, 3], name="q_heads"),
              n("Transpose", ["k_h"], ["k_t"], perm=[0, 2, 3, 1], name="k_heads_t"),
              n("Transpose", ["v_h"], ["v_t"], perm=[0, 2, 1, 3], name="v_heads"),
              n("MatMul", ["q_t", "k_t"], ["s"], name="qk"),
              n("Mul", ["s", "scale"], ["ss"], name="scaled"),
              n("Softmax", ["ss"], ["p"], axis=-1, name="softmax"),
              n("MatMul", ["p", "v_t"], ["o"], name="pv"),
              n("Transpose", ["o"], ["o_t"], perm=[0, 2, 1, 3], name="merge_t"),
              n("Reshape", ["o_t", "merged"], ["o_m"], name="merge"),
              n("MatMul", ["o_m", "wo"], ["o_p"], name="out_proj"),
              n("Add", ["o_p", "bo"], ["y"], name="out_bias")]
    return {"x": [1, t, d]}, {"y": [1, t, d]}, nodes, inits


def matmul_broadcast(rng):
    return {"a": [2, 3, 4, 5], "b": [3, 5, 6]}, {"y": [2, 3, 4, 6]}, [n("MatMul", ["a", "b"], ["y"], name="mm")], []


def matmul_transposed(rng):
    nodes = [n("Transpose", ["b"], ["bt"], perm=[1, 0], name="b_t"), n("MatMul", ["a", "bt"], ["y"], name="mm")]
    return {"a": [7, 9], "b": [5, 9]}, {"y": [7, 5]}, nodes, []


def onnx_model(name, ins, outs, nodes, inits):
    vi = lambda k, s: helper.make_tensor_value_info(k, TensorProto.FLOAT, s)  # noqa: E731
    graph = helper.make_graph(nodes, name, [vi(k, s) for k, s in ins.items()], [vi(k, s) for k, s in outs.items()],
                              inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="gen_batch_matmul_models.py")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def tflite_models():
    import tensorflow as tf
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    def bmm_adj_y(a, b):
        return tf.linalg.matmul(a, b, transpose_b=True)

    def attention(q, k, v):
        s = tf.linalg.matmul(q, k, transpose_b=True) * 0.5
        return tf.linalg.matmul(tf.nn.softmax(s, axis=-1), v)

    specs = [("tfl_bmm_adj_y", bmm_adj_y, {"a": [2, 4, 6], "b": [2, 5, 6]}),
             ("tfl_attention", attention, {"q": [1, 2, 8, 4], "k": [1, 2, 8, 4], "v": [1, 2, 8, 4]})]
    out = []
    for name, fn, shapes in specs:
        sig = [tf.TensorSpec(s, tf.float32, name=k) for k, s in shapes.items()]
        f = tf.function(fn, input_signature=sig)
        conv = tf.lite.TFLiteConverter.from_concrete_functions([f.get_concrete_function()], f)
        data = conv.convert()
        it = Interpreter(model_content=data, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
        it.allocate_tensors()
        ops = {d["op_name"] for d in it._get_ops_details()}
        assert "BATCH_MATMUL" in ops, (name, ops)
        print(name, sorted(ops))
        out.append((name, data, shapes, it))
    return out


def main():
    goldenio.check_pins(PINNED)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    cases = []
    OUT.mkdir(parents=True, exist_ok=True)
    for name, make in [("attn_single_head", attn_single_head), ("attn_multi_head", attn_multi_head),
                       ("matmul_broadcast", matmul_broadcast), ("matmul_transposed", matmul_transposed)]:
        rng = np.random.default_rng(len(cases) + 100)
        ins, outs, nodes, inits = make(rng)
        m = onnx_model(name, ins, outs, nodes, inits)
        path = OUT / f"{name}.onnx"
        onnx.save(m, path)
        feeds = {k: rng.standard_normal(s).astype(np.float32) for k, s in ins.items()}
        sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        y = sess.run(None, feeds)[0]
        cases.append({"name": name, "file": path.name, "format": "onnx",
                      "inputs": [goldenio.tensor(feeds[k]) for k in ins], "expected": goldenio.tensor(y)})
        print(name, {k: v.shape for k, v in feeds.items()}, "->", y.shape)
    for name, data, shapes, it in tflite_models():
        path = OUT / f"{name}.tflite"
        path.write_bytes(data)
        rng = np.random.default_rng(len(cases) + 100)
        details = it.get_input_details()
        feeds = {}
        for k, s in shapes.items():
            feeds[k] = rng.standard_normal(s).astype(np.float32)
        # The interpreter's inputs, in the model's order (matched by name).
        order = []
        for d in details:
            k = next(k for k in shapes if d["name"].endswith(k) or k in d["name"])
            it.set_tensor(d["index"], feeds[k])
            order.append(k)
        assert order == list(shapes), (name, order)
        it.invoke()
        y = it.get_tensor(it.get_output_details()[0]["index"])
        cases.append({"name": name, "file": path.name, "format": "tflite",
                      "inputs": [goldenio.tensor(feeds[k]) for k in order], "expected": goldenio.tensor(y)})
        print(name, {k: v.shape for k, v in feeds.items()}, "->", y.shape)
    goldenio.write(OUT / "cases.json", {"generator": "tests/gen/gen_batch_matmul_models.py", "tools": PINNED,
                                        "models": cases})


def qdq():
    """ONNX Runtime's outputs on the exact QDQ exports (<name>.qdq.onnx, written by the test
    batch_matmul_models::exact_qdq_export_runs_bit_exact_in_onnx_runtime with MQ_BLESS=1), with
    graph optimizations off and on (which must agree), on each model's inputs of cases.json."""
    goldenio.check_pins({k: v for k, v in PINNED.items() if k in ("numpy", "onnx", "onnxruntime")})
    import json
    import base64
    doc = json.loads((OUT / "cases.json").read_text())
    out = []
    for c in doc["models"]:
        path = OUT / f"{c['name']}.qdq.onnx"
        if c["format"] != "onnx":
            continue
        m = onnx.load(path)
        feeds = {}
        for vi, t in zip(m.graph.input, c["inputs"]):
            a = np.frombuffer(base64.b64decode(t["b64"]), np.float32).reshape(t["shape"])
            feeds[vi.name] = a
        ys = []
        for level in (ort.GraphOptimizationLevel.ORT_DISABLE_ALL, ort.GraphOptimizationLevel.ORT_ENABLE_ALL):
            so = ort.SessionOptions()
            so.graph_optimization_level = level
            sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
            ys.append(sess.run(None, feeds)[0])
        assert np.array_equal(ys[0], ys[1]), c["name"]
        out.append({"name": c["name"], "file": path.name, "ort": goldenio.tensor(ys[0])})
        print(c["name"], "->", ys[0].shape)
    goldenio.write(OUT / "qdq_exact.json", {"generator": "tests/gen/gen_batch_matmul_models.py qdq",
                                            "tools": {k: PINNED[k] for k in ("numpy", "onnx", "onnxruntime")},
                                            "models": out})


if __name__ == "__main__":
    if sys.argv[1:] == ["qdq"]:
        qdq()
    else:
        main()
