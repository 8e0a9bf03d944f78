#!/usr/bin/env python3
"""Float ONNX LSTM and GRU models (written with onnx.helper) and ONNX Runtime's outputs, for the ONNX
LSTM importer and the float executor (tests/host/onnx_recurrent.rs).

    .venv/bin/python tests/gen/gen_onnx_recurrent.py

Writes tests/golden/onnx_recurrent/*.onnx, errors/*.onnx (forms the importer must refuse) and
recurrent.json: per model its inputs (seeded
numpy default_rng(crc32(name)).standard_normal, float32) and ONNX Runtime's outputs (CPU,
graph optimizations disabled; the onnx reference evaluator for layout 1, which ONNX Runtime's
CPU LSTM refuses). Models: forward LSTMs with layout 0 and 1, with and without B,
initial_h / initial_c as initializers and as graph inputs, a one-step sequence whose Y_h is a
graph output, and a keyword-spotting-sized layer (input 10, hidden 16, 20 steps); the same forms of GRU, with
linear_before_reset 0 and 1.

Pinned: numpy 2.4.6, onnx 1.23.2, onnxruntime 1.32.0. Deterministic.
"""
import json
import pathlib
import sys
import zlib

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
import goldenio  # noqa: E402

import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

PINNED = {"numpy": "2.4.6", "onnx": "1.23.2", "onnxruntime": "1.32.0"}
OUT = REPO / "tests" / "golden" / "onnx_recurrent"


def lstm_model(name, seq, batch, n_in, hidden, layout=0, bias=True, init="none", y_h=False, opset=14):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    w = rng.uniform(-0.6, 0.6, (1, 4 * hidden, n_in)).astype(np.float32)
    r = rng.uniform(-0.6, 0.6, (1, 4 * hidden, hidden)).astype(np.float32)
    b = rng.uniform(-0.5, 0.5, (1, 8 * hidden)).astype(np.float32)
    x_shape = [seq, batch, n_in] if layout == 0 else [batch, seq, n_in]
    s_shape = [1, batch, hidden] if layout == 0 else [batch, 1, hidden]
    y_shape = [seq, 1, batch, hidden] if layout == 0 else [batch, seq, 1, hidden]
    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(r, "R")]
    if bias:
        inits.append(numpy_helper.from_array(b, "B"))
    graph_inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)]
    feeds = {"x": rng.standard_normal(x_shape).astype(np.float32)}
    h0 = (0.5 * rng.standard_normal(s_shape)).astype(np.float32)
    c0 = rng.standard_normal(s_shape).astype(np.float32)
    if init == "const":
        inits += [numpy_helper.from_array(h0, "h0"), numpy_helper.from_array(c0, "c0")]
    elif init == "input":
        graph_inputs += [helper.make_tensor_value_info("h0", TensorProto.FLOAT, s_shape),
                         helper.make_tensor_value_info("c0", TensorProto.FLOAT, s_shape)]
        feeds["h0"], feeds["c0"] = h0, c0
    node_inputs = ["x", "W", "R", "B" if bias else ""]
    if init != "none":
        node_inputs += ["", "h0", "c0"]
    outputs = ["Y", "Y_h" if y_h else ""]
    attrs = {"hidden_size": hidden}
    if layout:
        attrs["layout"] = 1
    node = helper.make_node("LSTM", node_inputs, outputs, name="lstm", **attrs)
    graph_outputs = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, y_shape)]
    if y_h:
        graph_outputs.append(helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, s_shape))
    g = helper.make_graph([node], name, graph_inputs, graph_outputs, initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="microquant gen_onnx_recurrent")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m, feeds


def gru_model(name, seq, batch, n_in, hidden, layout=0, bias=True, init="none", lbr=0, y_h=False, opset=14):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    w = rng.uniform(-0.6, 0.6, (1, 3 * hidden, n_in)).astype(np.float32)
    r = rng.uniform(-0.6, 0.6, (1, 3 * hidden, hidden)).astype(np.float32)
    b = rng.uniform(-0.5, 0.5, (1, 6 * hidden)).astype(np.float32)
    x_shape = [seq, batch, n_in] if layout == 0 else [batch, seq, n_in]
    s_shape = [1, batch, hidden] if layout == 0 else [batch, 1, hidden]
    y_shape = [seq, 1, batch, hidden] if layout == 0 else [batch, seq, 1, hidden]
    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(r, "R")]
    if bias:
        inits.append(numpy_helper.from_array(b, "B"))
    graph_inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)]
    feeds = {"x": rng.standard_normal(x_shape).astype(np.float32)}
    h0 = (0.5 * rng.standard_normal(s_shape)).astype(np.float32)
    if init == "const":
        inits.append(numpy_helper.from_array(h0, "h0"))
    elif init == "input":
        graph_inputs.append(helper.make_tensor_value_info("h0", TensorProto.FLOAT, s_shape))
        feeds["h0"] = h0
    node_inputs = ["x", "W", "R", "B" if bias else ""]
    if init != "none":
        node_inputs += ["", "h0"]
    attrs = {"hidden_size": hidden, "linear_before_reset": lbr}
    if layout:
        attrs["layout"] = 1
    node = helper.make_node("GRU", node_inputs, ["Y", "Y_h" if y_h else ""], name="gru", **attrs)
    graph_outputs = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, y_shape)]
    if y_h:
        graph_outputs.append(helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, s_shape))
    g = helper.make_graph([node], name, graph_inputs, graph_outputs, initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="microquant gen_onnx_recurrent")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m, feeds


GRU_MODELS = [
    dict(name="gru_l0_s5_b2_i3_h4_lbr0", seq=5, batch=2, n_in=3, hidden=4, lbr=0),
    dict(name="gru_l0_s5_b2_i3_h4_lbr1", seq=5, batch=2, n_in=3, hidden=4, lbr=1),
    dict(name="gru_l0_s6_b1_i4_h5_nobias_lbr1", seq=6, batch=1, n_in=4, hidden=5, bias=False, lbr=1),
    dict(name="gru_l0_s4_b3_i2_h3_init_input_lbr0", seq=4, batch=3, n_in=2, hidden=3, init="input", lbr=0),
    dict(name="gru_l0_s4_b2_i3_h4_init_const_lbr1", seq=4, batch=2, n_in=3, hidden=4, init="const", lbr=1),
    dict(name="gru_l1_s4_b3_i2_h3_lbr1", seq=4, batch=3, n_in=2, hidden=3, layout=1, lbr=1),
    dict(name="gru_l0_s1_b2_i3_h4_yh_lbr0", seq=1, batch=2, n_in=3, hidden=4, y_h=True, lbr=0),
    dict(name="gru_l0_s20_b1_i10_h16_lbr1", seq=20, batch=1, n_in=10, hidden=16, lbr=1),
]

MODELS = [
    dict(name="lstm_l0_s5_b2_i3_h4", seq=5, batch=2, n_in=3, hidden=4),
    dict(name="lstm_l0_s6_b1_i4_h5_nobias", seq=6, batch=1, n_in=4, hidden=5, bias=False),
    dict(name="lstm_l0_s4_b2_i3_h4_init_const", seq=4, batch=2, n_in=3, hidden=4, init="const"),
    dict(name="lstm_l0_s4_b3_i2_h3_init_input", seq=4, batch=3, n_in=2, hidden=3, init="input"),
    dict(name="lstm_l1_s4_b3_i2_h3", seq=4, batch=3, n_in=2, hidden=3, layout=1),
    dict(name="lstm_l1_s5_b2_i3_h4_init_input", seq=5, batch=2, n_in=3, hidden=4, layout=1, init="input"),
    dict(name="lstm_l0_s1_b2_i3_h4_yh", seq=1, batch=2, n_in=3, hidden=4, y_h=True),
    dict(name="lstm_l0_s20_b1_i10_h16", seq=20, batch=1, n_in=10, hidden=16),
]


def error_models():
    """Models the importer must refuse, naming why: a bidirectional LSTM, clip, and Y_c read."""
    (OUT / "errors").mkdir(parents=True, exist_ok=True)
    for tag, attrs, outputs in [("bidirectional", {"direction": "bidirectional"}, ["Y"]),
                                ("clip", {"clip": 3.0}, ["Y"]), ("yc_used", {}, ["Y", "", "Y_c"])]:
        dirs = 2 if tag == "bidirectional" else 1
        rng = np.random.default_rng(zlib.crc32(tag.encode()))
        w = rng.uniform(-0.5, 0.5, (dirs, 8, 2)).astype(np.float32)
        r = rng.uniform(-0.5, 0.5, (dirs, 8, 2)).astype(np.float32)
        node = helper.make_node("LSTM", ["x", "W", "R"], outputs, name="lstm", hidden_size=2, **attrs)
        outs = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [3, dirs, 1, 2])]
        if "Y_c" in outputs:
            outs.append(helper.make_tensor_value_info("Y_c", TensorProto.FLOAT, [1, 1, 2]))
        g = helper.make_graph([node], tag, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 1, 2])], outs,
                              initializer=[numpy_helper.from_array(w, "W"), numpy_helper.from_array(r, "R")])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)], producer_name="microquant gen_onnx_recurrent")
        m.ir_version = 8
        onnx.checker.check_model(m)
        (OUT / "errors" / f"lstm_{tag}.onnx").write_bytes(m.SerializeToString())


def main():
    goldenio.check_pins(PINNED)
    OUT.mkdir(parents=True, exist_ok=True)
    error_models()
    models = []
    for make, spec in [(lstm_model, s) for s in MODELS] + [(gru_model, s) for s in GRU_MODELS]:
        m, feeds = make(**spec)
        path = OUT / f"{spec['name']}.onnx"
        path.write_bytes(m.SerializeToString())
        names = [o.name for o in m.graph.output]
        if spec.get("layout", 0) == 0:
            so = ort.SessionOptions()
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
            outs = sess.run(names, feeds)
            oracle = "onnxruntime"
        else:
            # ONNX Runtime's CPU LSTM refuses layout 1 ("Batchwise recurrent operations (layout
            # == 1) are not supported"): the onnx reference evaluator runs those.
            outs = ReferenceEvaluator(m).run(names, feeds)
            oracle = "onnx.reference"
        models.append({"name": spec["name"], "file": path.name, "oracle": oracle,
                       "inputs": [goldenio.tensor(v) for v in feeds.values()],
                       "input_names": list(feeds), "output_names": names,
                       "outputs": [goldenio.tensor(np.asarray(o, np.float32)) for o in outs]})
        print(spec["name"], [o.shape for o in outs])
    doc = {"generator": "tests/gen/gen_onnx_recurrent.py", "tools": {p: v for p, v in PINNED.items()}, "models": models}
    (OUT / "recurrent.json").write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
