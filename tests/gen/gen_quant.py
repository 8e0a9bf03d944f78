#!/usr/bin/env python3
"""Golden data for microquant's quantization core (issue 3), from ONNX, ONNX Runtime, ml_dtypes and
TFLite. PyTorch's goldens come from gen_quant_torch.py (it needs the torch virtualenv).

    .venv/bin/python tests/gen/gen_quant.py            # writes tests/golden/quant/*.json

Pinned versions (asserted below; see tests/gen/requirements.txt): onnx 1.23.2, onnxruntime 1.32.0,
numpy 2.4.6, ml_dtypes 0.7.0, tensorflow-cpu 2.21.0, ai-edge-litert 2.3.0, tflite-micro
0.dev20261023182759.

Files written (all small; big calibration inputs are regenerated from SplitMix64 seeds on both sides):
- onnx_node_tests.json: every ONNX backend node test case of QuantizeLinear, DequantizeLinear and
  DynamicQuantizeLinear from onnx.backend.test.case.node.collect_testcases(), each re-run through
  onnx.reference.ReferenceEvaluator (must agree) and, where it supports the types, ONNX Runtime.
- ort_observers.json: ranges of ORT's MinMax / Entropy / Percentile calibrators on the shared data
  sets, and ORT's quant_utils.compute_scale_zp on them and on a table of (min, max) pairs.
- minifloat.json: ml_dtypes casts of f32 values to float8 e4m3fn / e5m2 (saturating and not, as
  onnx.numpy_helper.saturate_cast / astype) and float4 e2m1, and f32 -> float16.
- tflite_quantize.json: TFLite QUANTIZE kernel outputs (float -> int8/int16, and integer
  requantization int8/uint8/int16 -> int8/int16), from the TFLite interpreter with BUILTIN_REF
  kernels, cross-checked against TFLite Micro.
- requant.json: random (x, multiplier, shift) cases with both TFLite roundings computed by an exact
  Python integer statement of TFLite's definitions (the sample that runs in wasm and on QEMU).
"""
import base64
import json
import pathlib
import sys
import warnings

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import goldenio  # noqa: E402
import gen_quant_data as qd  # noqa: E402

OUT = HERE.parent / "golden" / "quant"

PINNED = {"onnx": "1.23.2", "onnxruntime": "1.32.0", "numpy": "2.4.6", "ml_dtypes": "0.7.0"}


def check_versions():
    import ml_dtypes
    import onnx
    import onnxruntime
    got = {"onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__, "numpy": np.__version__,
           "ml_dtypes": ml_dtypes.__version__}
    for k, v in PINNED.items():
        if got[k] != v:
            raise SystemExit(f"{k} {got[k]} installed, {v} pinned: install the pinned versions")
    return got


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


# ---------------------------------------------------------------------------------------------
# ONNX backend node tests
# ---------------------------------------------------------------------------------------------

def onnx_dtype_name(elem_type):
    from onnx import TensorProto as T
    return {T.FLOAT: "float32", T.FLOAT16: "float16", T.UINT8: "uint8", T.INT8: "int8", T.UINT16: "uint16",
            T.INT16: "int16", T.INT32: "int32", T.UINT4: "uint4", T.INT4: "int4", T.UINT2: "uint2",
            T.INT2: "int2", T.FLOAT8E4M3FN: "float8e4m3fn", T.FLOAT8E5M2: "float8e5m2",
            T.FLOAT4E2M1: "float4e2m1"}[elem_type]


def encode_array(arr, dtype_name):
    """Raw little-endian bytes as ONNX stores the tensor (4-bit: two per byte, low nibble first;
    2-bit: four per byte, lowest pair first)."""
    from onnx import numpy_helper
    a = np.asarray(arr)
    if dtype_name in ("uint4", "int4", "float4e2m1"):
        raw = numpy_helper._pack_4bitx2(a).tobytes()
    elif dtype_name in ("uint2", "int2"):
        raw = numpy_helper._pack_2bitx4(a).tobytes()
    elif dtype_name in ("float8e4m3fn", "float8e5m2"):
        raw = np.ascontiguousarray(a).view(np.uint8).tobytes()
    else:
        np_t = {"float32": "<f4", "float16": "<f2", "uint8": "u1", "int8": "i1", "uint16": "<u2",
                "int16": "<i2", "int32": "<i4"}[dtype_name]
        raw = np.ascontiguousarray(a).astype(np_t).tobytes()
    return raw


def raw_bytes(a):
    a = np.ascontiguousarray(np.asarray(a))
    return a.reshape(-1).view(np.uint8).tobytes() if a.ndim else a.reshape(1).view(np.uint8).tobytes()


def value_to_array(v):
    from onnx import numpy_helper, TensorProto
    if isinstance(v, TensorProto):
        return numpy_helper.to_array(v)
    return np.asarray(v)


def onnx_node_tests():
    import onnx
    import onnxruntime as ort
    from onnx import helper
    from onnx.backend.test.case.node import collect_testcases
    from onnx.reference import ReferenceEvaluator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        all_cases = collect_testcases(None)
    wanted = [c for c in all_cases if c.name.startswith(("test_quantizelinear", "test_dequantizelinear",
                                                          "test_dynamicquantizelinear"))]
    out = []
    ort_checked = 0
    for c in wanted:
        m = c.model
        op = "DynamicQuantizeLinear" if "dynamicquantize" in c.name else m.graph.node[-1].op_type
        # The "_expanded" variants spell DynamicQuantizeLinear as a subgraph of primitive ops;
        # their expected outputs are the same operator's.
        nodes = [n for n in m.graph.node if n.op_type == op]
        attrs = {a.name: helper.get_attribute_value(a) for a in nodes[0].attribute} if nodes else {}
        ins = [(i.name, i.type.tensor_type.elem_type) for i in m.graph.input]
        outs = [(o.name, o.type.tensor_type.elem_type) for o in m.graph.output]
        assert len(c.data_sets) == 1, c.name
        in_vals, out_vals = c.data_sets[0]
        in_arrs = [value_to_array(v) for v in in_vals]
        out_arrs = [value_to_array(v) for v in out_vals]
        # The reference evaluator must reproduce the stored expected outputs.
        ref = ReferenceEvaluator(m)
        got = ref.run(None, {n: a for (n, _), a in zip(ins, in_arrs)})
        for g, e in zip(got, out_arrs):
            assert raw_bytes(g) == raw_bytes(e) and np.asarray(g).dtype == np.asarray(e).dtype, c.name
        try:
            sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
            og = sess.run(None, {n: a for (n, _), a in zip(ins, in_arrs)})
            same = all(raw_bytes(g) == raw_bytes(e)
                       for g, e in zip(og, out_arrs))
            ort_note = "same" if same else "differs"
            ort_checked += 1
        except Exception as ex:  # types ORT's CPU provider does not implement
            ort_note = "unsupported: " + str(ex).splitlines()[0][:80]
        tensors_in = []
        for (name, et), a in zip(ins, in_arrs):
            dn = onnx_dtype_name(et)
            tensors_in.append({"name": name, "dtype": dn, "shape": list(a.shape), "b64": b64(encode_array(a, dn))})
        tensors_out = []
        for (name, et), a in zip(outs, out_arrs):
            dn = onnx_dtype_name(et)
            tensors_out.append({"name": name, "dtype": dn, "shape": list(a.shape), "b64": b64(encode_array(a, dn))})
        out.append({"name": c.name, "op": op, "opset": m.opset_import[0].version,
                    "attrs": {k: int(v) for k, v in attrs.items() if isinstance(v, int)},
                    "inputs": tensors_in, "outputs": tensors_out, "onnxruntime": ort_note})
    print(f"onnx node tests: {len(out)} cases (ORT ran {ort_checked})")
    return out


# ---------------------------------------------------------------------------------------------
# ONNX Runtime calibrators and compute_scale_zp
# ---------------------------------------------------------------------------------------------

ORT_CONFIGS = [  # (name, CalibrationMethod name, extra_options)
    ("minmax", "MinMax", {}),
    ("minmax_symmetric", "MinMax", {"symmetric": True}),
    ("entropy_default", "Entropy", {}),                       # 128 bins, 128 quantized bins
    ("entropy_2048_128", "Entropy", {"num_bins": 2048, "num_quantized_bins": 128}),
    ("entropy_512_64", "Entropy", {"num_bins": 512, "num_quantized_bins": 64}),
    ("percentile_default", "Percentile", {}),                 # symmetric, 2048 bins, 99.999
    ("percentile_asymmetric", "Percentile", {"symmetric": False}),
    ("percentile_512_99_9", "Percentile", {"num_bins": 512, "percentile": 99.9}),
]

# (name, onnx type, symmetric flag of compute_scale_zp, reduce_range): qmin/qmax from ORT's own
# get_qmin_qmax_for_qType, as its quantizer calls it.
ORT_QTYPES = [("uint8", "UINT8", False, False), ("int8", "INT8", False, False),
              ("int8_symmetric", "INT8", True, False), ("uint8_symmetric", "UINT8", True, False),
              ("int16", "INT16", False, False), ("uint16", "UINT16", False, False),
              ("int16_symmetric", "INT16", True, False), ("int8_reduce_range", "INT8", False, True),
              ("uint8_reduce_range", "UINT8", False, True)]


def ort_compute(rmin, rmax, qtype):
    from onnx import TensorProto
    from onnxruntime.quantization import quant_utils as qu
    _, tname, sym, rr = qtype
    qmin, qmax = qu.get_qmin_qmax_for_qType(getattr(TensorProto, tname), reduce_range=rr, symmetric=sym)
    zp, scale = qu.compute_scale_zp(np.array(rmin, np.float32), np.array(rmax, np.float32), qmin, qmax, symmetric=sym)
    return {"qmin": int(qmin), "qmax": int(qmax), "scale": float(np.float32(scale)), "zero_point": int(zp)}


class _Reader:
    def __init__(self, batches):
        self.it = iter([{"x": b} for b in batches])

    def get_next(self):
        return next(self.it, None)


def ort_observers(tmp):
    import contextlib
    import io
    import onnx
    from onnx import TensorProto, helper
    from onnxruntime.quantization.calibrate import CalibrationDataReader, CalibrationMethod, create_calibrator

    class Reader(_Reader, CalibrationDataReader):
        pass

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [qd.BATCH])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [qd.BATCH])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["t"]), helper.make_node("Sub", ["x", "t"], ["y"])],
                          "calib", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = tmp / "calib.onnx"
    onnx.save(m, str(path))
    results = []
    for ds in qd.DATASETS:
        batches = qd.dataset(ds)
        for name, method, opts in ORT_CONFIGS:
            with contextlib.redirect_stdout(io.StringIO()):
                cal = create_calibrator(str(path), augmented_model_path=str(tmp / "aug.onnx"),
                                        calibrate_method=getattr(CalibrationMethod, method), extra_options=opts)
                cal.collect_data(Reader(batches))
                r = cal.compute_data()
            lo, hi = (np.asarray(v, dtype=np.float32).reshape(()) for v in r["x"].range_value[:2])
            results.append({"dataset": ds, "config": name, "method": method, "options": opts,
                            "range": [float(lo), float(hi)],
                            "qparams": [[ort_compute(lo, hi, q)["scale"], ort_compute(lo, hi, q)["zero_point"]]
                                        for q in ORT_QTYPES]})
            print(f"  ORT {ds:9s} {name:22s} [{float(lo):.6g}, {float(hi):.6g}]")
    return results


def ort_compute_table():
    """Rows [min, max, [scale, zp] per ORT_QTYPES entry] (qmin/qmax per qtype are in "qtypes")."""
    rows = []
    for lo, hi in qd.minmax_pairs():
        rows.append([lo, hi] + [[ort_compute(lo, hi, q)["scale"], ort_compute(lo, hi, q)["zero_point"]]
                                for q in ORT_QTYPES])
    qtypes = []
    for q in ORT_QTYPES:
        c = ort_compute(-1.0, 1.0, q)
        qtypes.append({"name": q[0], "qmin": c["qmin"], "qmax": c["qmax"], "symmetric": q[2], "reduce_range": q[3]})
    return {"qtypes": qtypes, "rows": rows}


def onnx_dynamic_quantize_table():
    """ONNX DynamicQuantizeLinear (reference evaluator and ONNX Runtime) on the first 64 values of
    each data set: the ONNX convention of choose_qparams."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None])
    outs = [helper.make_tensor_value_info("y", TensorProto.UINT8, [None]),
            helper.make_tensor_value_info("s", TensorProto.FLOAT, []),
            helper.make_tensor_value_info("z", TensorProto.UINT8, [])]
    g = helper.make_graph([helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])], "dq", [x], outs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)])
    m.ir_version = 8
    ref = ReferenceEvaluator(m)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    rows = []
    for ds in qd.DATASETS:
        for b in range(2):
            xs = qd.batch(ds, b)[:64]
            y, s, z = ref.run(None, {"x": xs})
            y2, s2, z2 = sess.run(None, {"x": xs})
            rows.append({"dataset": ds, "batch": b, "n": 64, "scale": float(s), "zero_point": int(z),
                         "y": b64(np.asarray(y, np.uint8).tobytes()),
                         "onnxruntime_same": bool(np.array_equal(y, y2) and s == s2 and z == z2)})
    return rows


# ---------------------------------------------------------------------------------------------
# ml_dtypes: float8 / float4 / float16 casts
# ---------------------------------------------------------------------------------------------

def minifloat_values():
    import ml_dtypes
    vals = [0.0, -0.0, np.inf, -np.inf, np.nan]
    for t in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.float4_e2m1fn):
        codes = np.arange(256 if t is not ml_dtypes.float4_e2m1fn else 16, dtype=np.uint8)
        v = np.sort(codes.view(t).astype(np.float32)) if t is not ml_dtypes.float4_e2m1fn else \
            np.sort(codes.view(t).astype(np.float32))
        v = v[np.isfinite(v)]
        v = np.unique(v)
        mids = ((v[:-1].astype(np.float64) + v[1:].astype(np.float64)) / 2).astype(np.float32)
        vals += v.tolist() + mids.tolist()
        vals += np.nextafter(mids, np.float32(np.inf)).tolist() + np.nextafter(mids, np.float32(-np.inf)).tolist()
        top = v.max()
        vals += [float(top) * k for k in (1.03, 1.0625, 1.07, 1.125, 1.2, 2.0, 100.0)]
    vals += [65504.0, 65519.0, 65520.0, 65536.0, 1e5, 2.0 ** -25, 2.0 ** -24, 3 * 2.0 ** -26, 6.1e-5,
             float(np.nextafter(np.float32(65520.0), np.float32(0)))]
    u = qd.uniforms(515151, 800).reshape(400, 2)
    for a, e in u:
        vals.append(float((a * np.float32(2) - 1) * np.float32(2.0) ** np.float32(np.floor(e * 60) - 30)))
    return np.array(vals, dtype=np.float32)


def minifloat_table():
    import ml_dtypes
    from onnx import numpy_helper
    x = minifloat_values()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e4 = numpy_helper.saturate_cast(x, ml_dtypes.float8_e4m3fn).view(np.uint8)
        e4n = x.astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
        e5 = numpy_helper.saturate_cast(x, ml_dtypes.float8_e5m2).view(np.uint8)
        e5n = x.astype(ml_dtypes.float8_e5m2).view(np.uint8)
        fin = x[~np.isnan(x)]
        f4 = fin.astype(ml_dtypes.float4_e2m1fn).view(np.uint8) & 0x0F
        f16 = x.astype(np.float16).view(np.uint16)
    return {"n": int(x.size), "x": b64(x.astype("<f4").tobytes()),
            "e4m3fn_saturate": b64(e4.tobytes()), "e4m3fn": b64(e4n.tobytes()),
            "e5m2_saturate": b64(e5.tobytes()), "e5m2": b64(e5n.tobytes()),
            "e2m1_of_non_nan": b64(f4.astype(np.uint8).tobytes()), "float16": b64(f16.astype("<u2").tobytes())}


# ---------------------------------------------------------------------------------------------
# TFLite QUANTIZE kernel: float -> int (half away from zero) and integer requantization
# ---------------------------------------------------------------------------------------------

def tflite_quantize_cases():
    import os
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import flatbuffers
    from ai_edge_litert import schema_py_generated as S
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    from tflite_micro import runtime as tflm

    TT = {np.dtype(np.float32): S.TensorType.FLOAT32, np.dtype(np.int8): S.TensorType.INT8,
          np.dtype(np.uint8): S.TensorType.UINT8, np.dtype(np.int16): S.TensorType.INT16}

    def model(n, in_t, in_q, out_t, out_q, version):
        tensors = []
        for name, t, q in (("in", in_t, in_q), ("out", out_t, out_q)):
            tt = S.TensorT()
            tt.name = name
            tt.shape = [1, n]
            tt.type = TT[np.dtype(t)]
            tt.buffer = 0
            if q is not None:
                qp = S.QuantizationParametersT()
                qp.scale = [float(np.float32(q[0]))]
                qp.zeroPoint = [int(q[1])]
                tt.quantization = qp
            tensors.append(tt)
        oc = S.OperatorCodeT()
        oc.builtinCode = S.BuiltinOperator.QUANTIZE
        oc.deprecatedBuiltinCode = S.BuiltinOperator.QUANTIZE
        oc.version = version
        op = S.OperatorT()
        op.opcodeIndex = 0
        op.inputs = [0]
        op.outputs = [1]
        sg = S.SubGraphT()
        sg.tensors = tensors
        sg.inputs = [0]
        sg.outputs = [1]
        sg.operators = [op]
        sg.name = "main"
        m = S.ModelT()
        m.version = 3
        m.operatorCodes = [oc]
        m.subgraphs = [sg]
        m.buffers = [S.BufferT()]
        b = flatbuffers.Builder(1024)
        b.Finish(m.Pack(b), file_identifier=b"TFL3")
        return bytes(b.Output())

    def run_ref(mb, x):
        it = Interpreter(model_content=mb, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
        it.allocate_tensors()
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()
        return np.array(it.get_tensor(it.get_output_details()[0]["index"]))

    def run_tflm(mb, x):
        it = tflm.Interpreter.from_bytes(mb, arena_size=1 << 20)
        it.set_input(x, 0)
        it.invoke()
        return np.array(it.get_output(0))

    rng = np.random.default_rng(20261203)
    cases = []
    ints = {"int8": np.int8, "uint8": np.uint8, "int16": np.int16}
    # float -> integer: exact ties (k + 0.5) * scale and random values, both signs, saturation.
    for i, (tname, scale, zp) in enumerate([("int8", 0.05, -3), ("int8", 1.0, 0), ("int8", 0.0078125, 127),
                                            ("int8", 0.37, -128), ("int16", 0.001, 0), ("int16", 0.5, 0),
                                            ("uint8", 0.1, 128)]):
        t = ints[tname]
        s = np.float32(scale)
        ties = (np.arange(-20, 20, dtype=np.float32) + np.float32(0.5)) * s
        rand = rng.normal(0, 60 * scale, 60).astype(np.float32)
        # Saturating values stay within +-2^31 steps: beyond, TFLite's static_cast<int32_t> of
        # the rounded quotient is undefined (x86 gives INT_MIN, so -1e9 / 0.05 came out as 127);
        # microquant saturates.
        big = np.array([1e4 * scale, -1e4 * scale, 0.0, -0.0], np.float32)
        x = np.concatenate([ties, rand, big]).astype(np.float32)
        ver = 4 if t is np.int16 else 2
        mb = model(x.size, np.float32, None, t, (s, zp), ver)
        y = run_ref(mb, x.reshape(1, -1))
        try:
            y2 = run_tflm(mb, x.reshape(1, -1))
            tflm_same = bool(np.array_equal(y, y2))
        except Exception as ex:  # noqa: BLE001
            tflm_same = "unsupported: " + str(ex)[:60]
        cases.append({"name": f"quantize_f32_to_{tname}_{i}", "in_dtype": "float32", "out_dtype": tname,
                      "in_scale": None, "in_zero_point": None, "out_scale": float(s), "out_zero_point": zp,
                      "x": b64(x.astype("<f4").tobytes()), "n": int(x.size),
                      "y": b64(y.astype(np.dtype(t).newbyteorder("<")).tobytes()), "tflm_same": tflm_same})
    # integer -> integer requantization (TFLite's Requantize: MultiplyByQuantizedMultiplier).
    req = [("int8", 0.5, 10, "int8", 0.25, -5), ("int8", 0.02, 0, "int8", 0.0213, 3),
           ("int8", 0.1, -128, "int8", 0.3, 127), ("int8", 1.0, 0, "int8", 1.0 / 1024, 0),
           ("int8", 0.01, 5, "int8", 1.3, -2), ("uint8", 0.05, 128, "int8", 0.05, 0),
           ("int8", 0.05, 0, "uint8", 0.05, 128), ("int16", 0.001, 0, "int16", 0.0017, 0),
           ("int16", 0.0005, 0, "int8", 0.03, -7), ("int8", 0.04, 2, "int16", 0.0003, 0),
           ("int16", 0.002, 0, "int16", 0.000611, 0), ("uint8", 0.07, 100, "uint8", 0.011, 3)]
    for i, (ti, si, zi, to, so, zo) in enumerate(req):
        tin, tout = ints[ti], ints[to]
        info = np.iinfo(tin)
        x = rng.integers(info.min, info.max, 96, endpoint=True).astype(tin)
        x[:4] = [info.min, info.max, zi, min(info.max, zi + 1)]
        ver = 4 if (tin is np.int16 or tout is np.int16) else 2
        mb = model(x.size, tin, (si, zi), tout, (so, zo), ver)
        try:
            y = run_ref(mb, x.reshape(1, -1))
        except Exception as ex:  # noqa: BLE001
            print(f"  TFLite rejects requantize {ti}->{to}: {str(ex)[:80]}")
            continue
        try:
            y2 = run_tflm(mb, x.reshape(1, -1))
            tflm_same = bool(np.array_equal(y, y2))
        except Exception as ex:  # noqa: BLE001
            tflm_same = "unsupported: " + str(ex)[:60]
        cases.append({"name": f"requantize_{ti}_to_{to}_{i}", "in_dtype": ti, "out_dtype": to,
                      "in_scale": float(np.float32(si)), "in_zero_point": zi,
                      "out_scale": float(np.float32(so)), "out_zero_point": zo,
                      "x": b64(x.astype(np.dtype(tin).newbyteorder("<")).tobytes()), "n": int(x.size),
                      "y": b64(y.astype(np.dtype(tout).newbyteorder("<")).tobytes()), "tflm_same": tflm_same})
    print(f"TFLite QUANTIZE: {len(cases)} cases; TFLM agrees on "
          f"{sum(1 for c in cases if c['tflm_same'] is True)}")
    return cases


# ---------------------------------------------------------------------------------------------
# TFLite converter: the parameters it chooses from calibrated ranges (inputs) and weights
# ---------------------------------------------------------------------------------------------

def tflite_converter_qparams():
    """Full-integer post-training quantization with tf.lite.TFLiteConverter: a model with 8
    independent inputs, each calibrated on a representative data set spanning exactly one
    (min, max) pair, each feeding its own Dense(2) layer. Records the int8 input parameters the
    converter chose (its activation formula) and each Dense layer's per-channel int8 weights
    (its symmetric narrow-range weight formula and rounding)."""
    import os
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import contextlib
    import io
    import tensorflow as tf
    tf.keras.utils.set_random_seed(20261203)
    # Ranges narrower than 1e-6 (the converter widens them), exact zero-point ties (k + 0.5 at
    # a power-of-two scale: half away from zero vs half to even), then the shared table.
    probes = [(-4e-7, 4e-7), (-6e-7, 6e-7), (0.0, 9e-7), (0.0, 1.1e-6), (5e-7, 1.4e-6), (-9.9e-7, 0.0),
              (-3e-7, -1e-7), (2e-6, 2.5e-6), (-125.5 / 128, 129.5 / 128), (-127.5 / 128, 127.5 / 128),
              (-1.5 / 128, 253.5 / 128), (-3.5 / 64, 251.5 / 64), (-1.5, 1.49609375), (-0.7, 200.3),
              (-123.456, 0.001), (-0.001, 123.456)]
    probes = [(float(np.float32(a)), float(np.float32(b))) for a, b in probes]
    pairs = probes + [p for p in qd.minmax_pairs() if p[0] != p[1]][:40]
    inputs, weights = [], []
    for g in range(0, len(pairs), 8):
        group = pairs[g:g + 8]
        ins = [tf.keras.Input(shape=(4,), name=f"x{i}") for i in range(len(group))]
        outs = [tf.keras.layers.Dense(2, name=f"d{i}")(x) for i, x in enumerate(ins)]
        m = tf.keras.Model(ins, outs)
        rng = np.random.default_rng(g)

        def rep():
            for k in range(8):
                d = {}
                for i, (lo, hi) in enumerate(group):
                    v = rng.uniform(lo, hi, (1, 4)).astype(np.float32)
                    if k == 0:
                        v[0, 0], v[0, 1] = np.float32(lo), np.float32(hi)
                    d[f"x{i}"] = np.clip(v, np.float32(lo), np.float32(hi))
                yield d

        conv = tf.lite.TFLiteConverter.from_keras_model(m)
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = rep
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        conv.inference_input_type = tf.int8
        conv.inference_output_type = tf.int8
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            model = conv.convert()
        from ai_edge_litert.interpreter import Interpreter
        it = Interpreter(model_content=model)
        it.allocate_tensors()
        for d in it.get_input_details():
            i = int(d["name"].split("_x")[-1].split(":")[0])
            s, z = d["quantization"]
            inputs.append({"min": group[i][0], "max": group[i][1], "scale": float(np.float32(s)), "zero_point": int(z)})
        kernels = {layer.name: layer.get_weights()[0] for layer in m.layers if layer.name.startswith("d")}
        for t in it.get_tensor_details():
            qp = t["quantization_parameters"]
            if t["dtype"] == np.int8 and len(qp["scales"]) == 2 and "MatMul" in t["name"]:
                name = [n for n in kernels if f"/{n}_1/" in t["name"] or f"/{n}/" in t["name"]][0]
                w = kernels[name].T.astype(np.float32)  # TFLite FC weights are [out, in]
                q = it.get_tensor(t["index"])
                weights.append({"w": [float(v) for v in w.reshape(-1)], "shape": list(w.shape),
                                "scales": [float(np.float32(v)) for v in qp["scales"]],
                                "zero_points": [int(v) for v in qp["zero_points"]],
                                "q": [int(v) for v in q.reshape(-1)]})
    print(f"TFLite converter: {len(inputs)} input ranges, {len(weights)} weight tensors")
    return {"inputs": inputs, "weights": weights}


# ---------------------------------------------------------------------------------------------
# Requantization sample: exact integer statements of TFLite's two roundings
# ---------------------------------------------------------------------------------------------

def srdhm(a, b):
    """gemmlowp SaturatingRoundingDoublingHighMul: (a*b + nudge) / 2^31 truncated toward zero,
    nudge = 2^30 if a*b >= 0 else 1 - 2^30; the one overflow saturates."""
    if a == b == -2**31:
        return 2**31 - 1
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    q = abs(ab + nudge) // (1 << 31)
    return q if ab + nudge >= 0 else -q


def rdbpot(x, e):
    """gemmlowp RoundingDivideByPOT: round(x / 2^e), ties away from zero."""
    mask = (1 << e) - 1
    rem = x & mask
    thr = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> e) + (1 if rem > thr else 0)


def mbqm_double(x, m, shift):
    left = shift if shift > 0 else 0
    right = -shift if shift < 0 else 0
    xs = x * (1 << left)
    assert -2**31 <= xs < 2**31
    return rdbpot(srdhm(xs, m), right)


def mbqm_single(x, m, shift):
    t = 31 - shift
    return (x * m + (1 << (t - 1))) >> t


def requant_cases():
    r = goldenio.SplitMix64(777)
    rows = []
    edge_x = [0, 1, -1, 2**31 - 1, -2**31, -2**31 + 1, 127, -128, 1 << 20, -(1 << 20)]
    edge_m = [0, 1, 1 << 30, (1 << 30) + 1, 2**31 - 1, 1518500250]
    for x in edge_x:
        for m in edge_m:
            for s in (-31, -1, 0):
                rows.append((x, m, s))
    for s in (1, 7, 30):
        lim = (2**31 - 1) >> s
        for x in (lim, -lim, 1):
            rows.append((x, 1 << 30, s))
    while len(rows) < 1024:
        s = int(r.next_u64() % 62) - 31
        m = int(r.next_u64() % (1 << 31))
        lim = (2**31 - 1) >> s if s > 0 else 2**31 - 1
        x = int(r.next_u64() % (2 * lim + 1)) - lim
        rows.append((x, m, s))
    out = []
    for x, m, s in rows:
        d = mbqm_double(x, m, s)
        sg = mbqm_single(x, m, s)
        single_ok = -2**31 <= sg < 2**31
        out.append([x, m, s, d, sg if single_ok else None])
    return out


def main():
    versions = check_versions()
    OUT.mkdir(parents=True, exist_ok=True)
    cases = onnx_node_tests()
    goldenio.write(OUT / "onnx_node_tests.json", {
        "generator": "tests/gen/gen_quant.py", "versions": versions,
        "source": "onnx.backend.test.case.node.collect_testcases(): every QuantizeLinear, DequantizeLinear and "
                  "DynamicQuantizeLinear case; expected outputs re-checked with onnx.reference.ReferenceEvaluator",
        "count": len(cases), "cases": cases})
    import tempfile
    tmp = pathlib.Path(tempfile.mkdtemp())
    goldenio.write(OUT / "ort_observers.json", {
        "generator": "tests/gen/gen_quant.py", "versions": versions,
        "data": "tests/gen/gen_quant_data.py (SplitMix64; regenerated by tests/src/quant.rs)",
        "calibrators": ort_observers(tmp), "compute_scale_zp": ort_compute_table(),
        "dynamic_quantize_linear": onnx_dynamic_quantize_table()})
    goldenio.write(OUT / "minifloat.json", {"generator": "tests/gen/gen_quant.py", "versions": versions,
                                             "source": "ml_dtypes casts as ONNX's reference uses them "
                                                       "(onnx.numpy_helper.saturate_cast for saturate=1)",
                                             **minifloat_table()})
    import importlib.metadata as md
    tfl_versions = {k: md.version(k) for k in ("ai-edge-litert", "tflite-micro", "tensorflow-cpu")}
    goldenio.write(OUT / "tflite_quantize.json", {"generator": "tests/gen/gen_quant.py",
                                                   "versions": {**versions, **tfl_versions},
                                                   "oracle": "TFLite interpreter, OpResolverType.BUILTIN_REF "
                                                             "(tflm_same: TFLite Micro agrees); converter: "
                                                             "tf.lite.TFLiteConverter full-integer post-training "
                                                             "quantization",
                                                   "cases": tflite_quantize_cases(),
                                                   "converter": tflite_converter_qparams()})
    goldenio.write(OUT / "requant.json", {
        "generator": "tests/gen/gen_quant.py",
        "rule": "TFLite MultiplyByQuantizedMultiplier: double = RoundingDivideByPOT(SaturatingRoundingDoublingHighMul"
                "(x * 2^max(shift,0), m), max(-shift,0)); single = (x*m + 2^(30-shift)) >> (31-shift); exact Python "
                "integers; single is null where it overflows int32",
        "columns": ["x", "multiplier", "shift", "double", "single"], "cases": requant_cases()})


if __name__ == "__main__":
    main()
