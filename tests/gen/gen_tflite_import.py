"""Golden data for the TFLite importer (tests/host/tflite_import.rs).

For every model it reads, it records what TFLite itself sees in the file, using
  - the TFLite interpreter (ai-edge-litert, reference op resolver): get_tensor_details() for tensor
    names, shapes, shape signatures, dtypes and quantization (scales, zero points, quantized
    dimension); _get_ops_details() for each operator's name and input/output tensor indices
    (-1 = absent optional input); get_input_details()/get_output_details(); get_tensor() for the
    bytes of every constant tensor (their CRC-32), after allocate_tensors();
  - TFLite's own generated flatbuffer reader (ai_edge_litert.schema_py_generated, object API) for
    the builtin options of each operator (strides, padding, fused activation, ...), which the
    interpreter does not expose.
and, per conv/depthwise/fully-connected operator, the multiply-accumulate count from those shapes.

Models:
  - the eight MLPerf Tiny models bundled in models/mlperf-tiny/ (int8 and float32; read only);
  - small models this script builds with the TFLite converter and commits next to the JSON:
    ops_float / ops_int8 / ops_16x8 (every op of the importer: CONV_2D ... DEQUANTIZE; the converter
    lowers tf.squeeze to RESHAPE, so one RESHAPE is turned back into SQUEEZE with the object API),
    buffer_offset (a float model whose constant data is stored after the flatbuffer, converted with
    `_experimental_use_buffer_offset`);
  - variants edited with the schema's object API: deprecated_code_only (operator codes only in
    `deprecated_builtin_code`), builtin_code_only (only in `builtin_code`);
  - error models (errors/*.tflite, expectations in errors.json): an unsupported op (EXP) and an
    unsupported op with an extended code (> 127, deprecated code = 127 placeholder), asymmetric
    int8 weights, per-channel weight scales on the wrong axis, an int8 activation without
    scales, two subgraphs, a dynamic non-batch axis.

Run: .venv/bin/python tests/gen/gen_tflite_import.py   (versions pinned below and in
tests/gen/requirements.txt; the script refuses to run with others).
"""
import collections
import json
import os
import pathlib
import sys
import zlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import flatbuffers  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import ai_edge_litert  # noqa: E402
from ai_edge_litert import schema_py_generated as schema  # noqa: E402
from ai_edge_litert.interpreter import Interpreter, OpResolverType  # noqa: E402

PINNED = {"tensorflow": "2.21.0", "ai-edge-litert": "2.3.0", "numpy": "2.4.6", "flatbuffers": "25.12.19"}
FOUND = {"tensorflow": tf.__version__, "ai-edge-litert": ai_edge_litert.__version__, "numpy": np.__version__,
         "flatbuffers": flatbuffers.__version__}
if FOUND != PINNED:
    sys.exit(f"gen_tflite_import.py needs {PINNED}, found {FOUND}")

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "golden" / "tflite_import"
MLPERF = ["kws_ref_model_int8", "kws_ref_model_float32", "ic_resnet8_int8", "ic_resnet8_float32",
          "vww_96_int8", "vww_96_float32", "ad01_int8", "ad01_float32"]
GENERATOR = "tests/gen/gen_tflite_import.py"

# Arrays longer than this are recorded as a CRC-32 of their little-endian bytes.
INLINE_MAX = 16


def crc32(b):
    return zlib.crc32(bytes(b)) & 0xFFFFFFFF


def digest(values, dtype):
    a = np.ascontiguousarray(np.asarray(values, dtype=dtype).astype(np.dtype(dtype).newbyteorder("<")))
    d = {"n": int(a.size), "crc32": crc32(a.tobytes())}
    if a.size <= INLINE_MAX:
        d["values"] = a.tolist()
    return d


DTYPES = {np.float32: "f32", np.float16: "f16", np.int8: "i8", np.uint8: "u8", np.int16: "i16", np.int32: "i32",
          np.int64: "i64", np.bool_: "bool"}

ACTIVATIONS = {v: k for k, v in vars(schema.ActivationFunctionType).items() if not k.startswith("_")}
PADDINGS = {v: k for k, v in vars(schema.Padding).items() if not k.startswith("_")}


def options_of(op):
    """The builtin options of an operator (object API), as a small dict of what the importer reads."""
    o = op.builtinOptions
    if o is None:
        return {}
    fields = {
        "padding": lambda v: PADDINGS[v], "strideW": int, "strideH": int, "dilationWFactor": int,
        "dilationHFactor": int, "depthMultiplier": int, "filterWidth": int, "filterHeight": int,
        "fusedActivationFunction": lambda v: ACTIVATIONS[v], "keepNumDims": bool, "weightsFormat": int,
        "beta": float, "alpha": float, "axis": int, "keepDims": bool, "potScaleInt16": bool,
        "squeezeDims": lambda v: [int(x) for x in v] if v is not None else [],
        "newShape": lambda v: [int(x) for x in v] if v is not None else None,
    }
    return {k: conv(getattr(o, k)) for k, conv in fields.items() if hasattr(o, k)}


def macs(name, ins, outs, shapes):
    out = int(np.prod(shapes[outs[0]]))
    if name == "CONV_2D":
        _, kh, kw, ci = shapes[ins[1]]
        return out * int(kh) * int(kw) * int(ci)
    if name == "DEPTHWISE_CONV_2D":
        _, kh, kw, _ = shapes[ins[1]]
        return out * int(kh) * int(kw)
    if name == "FULLY_CONNECTED":
        return out * int(shapes[ins[1]][1])
    return 0


def describe(model_bytes, rel_path):
    """What TFLite sees in one model file."""
    it = Interpreter(model_content=model_bytes, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    details = it.get_tensor_details()  # before allocation: only the model's own tensors
    ops = it._get_ops_details()
    n_tensors = len(details)
    produced = {int(t) for o in ops for t in o["outputs"]}
    inputs = [int(d["index"]) for d in it.get_input_details()]
    outputs = [int(d["index"]) for d in it.get_output_details()]
    it.allocate_tensors()
    obj = schema.ModelT.InitFromPackedBuf(bytearray(model_bytes), 0)
    sg = obj.subgraphs[0]
    assert len(sg.operators) == len(ops), "interpreter and schema reader disagree on the operator count"

    shapes = {}
    tensors = []
    for d in details:
        i = int(d["index"])
        assert i < n_tensors
        shapes[i] = [int(x) for x in d["shape"]]
        q = d["quantization_parameters"]
        t = {"index": i, "name": d["name"], "shape": shapes[i],
             "shape_signature": [int(x) for x in d["shape_signature"]], "dtype": DTYPES[d["dtype"]]}
        if len(q["scales"]) > 0:
            t["quant"] = {"scales": digest(q["scales"], np.float32), "zero_points": digest(q["zero_points"], np.int32),
                          "quantized_dimension": int(q["quantized_dimension"])}
        if i not in produced and i not in inputs:
            data = it.get_tensor(i)
            if data.size > 0:
                t["const"] = digest(data.reshape(-1), data.dtype)
                t["const"]["bytes"] = int(data.nbytes)
        tensors.append(t)

    op_list = []
    for o, ot in zip(ops, sg.operators):
        ins = [int(x) for x in o["inputs"]]
        outs = [int(x) for x in o["outputs"]]
        assert ins == [int(x) for x in ot.inputs] and outs == [int(x) for x in ot.outputs]
        op_list.append({"index": int(o["index"]), "op": o["op_name"], "inputs": ins, "outputs": outs,
                        "options": options_of(ot), "macs": macs(o["op_name"], ins, outs, shapes)})
    # Hybrid ops (float input, quantized int8 weights): the weights' real values, as TFLite's
    # reference Dequantize computes them: float(double(scale) * (q - zero_point)).
    for o in op_list:
        if o["op"] in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED") and len(o["inputs"]) > 1:
            x, w = tensors[o["inputs"][0]], tensors[o["inputs"][1]]
            if x["dtype"] == "f32" and w["dtype"] == "i8":
                d = details[o["inputs"][1]]["quantization_parameters"]
                q = it.get_tensor(o["inputs"][1]).astype(np.float64)
                axis = int(d["quantized_dimension"])
                shape = [1] * q.ndim
                if len(d["scales"]) > 1:
                    shape[axis] = len(d["scales"])
                scale = np.asarray(d["scales"], dtype=np.float64).reshape(shape)
                zp = np.asarray(d["zero_points"], dtype=np.float64).reshape(shape)
                w["dequantized"] = digest(((q - zp) * scale).astype(np.float32).reshape(-1), np.float32)
    buffers_with_offset = sum(1 for b in (obj.buffers or []) if b.offset > 1)
    return {"generator": GENERATOR, "versions": PINNED, "model": rel_path, "file_bytes": len(model_bytes),
            "file_crc32": crc32(model_bytes), "buffers_with_offset": buffers_with_offset, "inputs": inputs,
            "outputs": outputs, "tensors": tensors, "ops": op_list}


def write_json(name, doc):
    path = OUT / f"{name}.json"
    path.write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    return path


# ---------------------------------------------------------------------------------------------
# Small models covering every op the importer converts.

def op_zoo_module(for_16x8=False):
    """Every op of the importer. The 16x8 variant has no HARD_SWISH (the converter has no 16x8
    HARD_SWISH) and pads with 0 instead of 0.5 (its 16x8 PADV2 keeps a float32 constant value)."""
    rng = np.random.default_rng(20240611)

    def c(*shape, s=0.3):
        return tf.constant(rng.normal(0.0, s, size=shape).astype(np.float32))

    class OpZoo(tf.Module):
        def __init__(self):
            super().__init__()
            self.w, self.b = c(3, 3, 4, 8), c(8)
            self.dw, self.db = c(3, 3, 8, 1), c(8)
            self.fw, self.fb = c(32, 6), c(6)

        @tf.function(input_signature=[tf.TensorSpec([1, 8, 8, 4], tf.float32)])
        def __call__(self, x):
            y = tf.nn.relu(tf.nn.conv2d(x, self.w, 1, "SAME") + self.b)              # CONV_2D (relu)
            d = tf.nn.depthwise_conv2d(y, self.dw, [1, 1, 1, 1], "SAME") + self.db     # DEPTHWISE_CONV_2D
            m = tf.nn.max_pool2d(d, 2, 2, "VALID")                                     # MAX_POOL_2D
            a = tf.nn.avg_pool2d(d, 2, 2, "VALID")                                     # AVERAGE_POOL_2D
            cc = tf.concat([m - a, m * a], axis=3)                                     # SUB, MUL, CONCATENATION
            lr = tf.nn.leaky_relu(cc, 0.2)                                             # LEAKY_RELU
            sg = tf.nn.relu(tf.transpose(tf.sigmoid(lr), [0, 2, 1, 3]))                # LOGISTIC, TRANSPOSE, RELU
            th = tf.tanh(lr)                                                           # TANH
            hs = th * th if for_16x8 else th * tf.nn.relu6(th + 3.0) / 6.0             # HARD_SWISH
            add = sg + tf.transpose(hs, [0, 2, 1, 3])                                  # ADD
            pd = tf.pad(add, [[0, 0], [1, 1], [0, 2], [0, 0]])                         # PAD
            pv = 0.0 if for_16x8 else 0.5
            pd2 = tf.pad(add, [[0, 0], [0, 1], [1, 0], [0, 0]], constant_values=pv)    # PADV2
            mean = tf.nn.relu6(tf.reduce_mean(pd, axis=[1, 2], keepdims=True))        # MEAN, RELU6
            sq = tf.squeeze(mean, axis=[1, 2])                                         # SQUEEZE
            flat = tf.concat([sq, tf.reduce_mean(pd2, axis=[1, 2])], axis=-1)          # [1, 32]
            fc = tf.matmul(flat, self.fw) + self.fb                                    # FULLY_CONNECTED
            return tf.reshape(tf.nn.softmax(fc), [1, 2, 3])                            # SOFTMAX, RESHAPE

    return OpZoo()


def representative(shape, n=32, seed=7):
    def gen():
        r = np.random.default_rng(seed)
        for _ in range(n):
            yield [r.uniform(-1.0, 1.0, size=shape).astype(np.float32)]
    return gen


def convert(module, kind, shape, buffer_offset=False):
    cf = module.__call__.get_concrete_function()
    cv = tf.lite.TFLiteConverter.from_concrete_functions([cf], module)
    if kind != "float":
        cv.optimizations = [tf.lite.Optimize.DEFAULT]
        cv.representative_dataset = representative(shape)
        cv.target_spec.supported_ops = [
            tf.lite.OpsSet.TFLITE_BUILTINS_INT8 if kind == "int8"
            else tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8]
    if buffer_offset:
        cv._experimental_use_buffer_offset = True
    return bytes(cv.convert())


def small_conv_module():
    rng = np.random.default_rng(99)

    class SmallConv(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.constant(rng.normal(0, 0.5, size=(3, 3, 3, 8)).astype(np.float32))
            self.b = tf.constant(rng.normal(0, 0.1, size=(8,)).astype(np.float32))
            self.fw = tf.constant(rng.normal(0, 0.5, size=(8, 4)).astype(np.float32))

        @tf.function(input_signature=[tf.TensorSpec([1, 6, 6, 3], tf.float32)])
        def __call__(self, x):
            y = tf.nn.relu(tf.nn.conv2d(x, self.w, 2, "SAME") + self.b)
            return tf.matmul(tf.reduce_mean(y, axis=[1, 2]), self.fw)

    return SmallConv()


def with_squeeze(model_bytes):
    """The converter lowers tf.squeeze to RESHAPE; turn the [1,1,1,C] -> [1,C] RESHAPE into the
    SQUEEZE (squeeze_dims [1, 2]) it came from, with the schema's object API."""
    m = unpack(model_bytes)
    sg = m.subgraphs[0]
    code = schema.OperatorCodeT()
    code.deprecatedBuiltinCode = code.builtinCode = schema.BuiltinOperator.SQUEEZE
    code.version = 1
    m.operatorCodes.append(code)
    for o in sg.operators:
        oc = m.operatorCodes[o.opcodeIndex]
        x, y = sg.tensors[o.inputs[0]], sg.tensors[o.outputs[0]]
        if max(oc.builtinCode, oc.deprecatedBuiltinCode) == schema.BuiltinOperator.RESHAPE \
                and len(x.shape) == 4 and list(x.shape[1:3]) == [1, 1] and len(y.shape) == 2:
            o.opcodeIndex = len(m.operatorCodes) - 1
            o.inputs = [o.inputs[0]]
            opts = schema.SqueezeOptionsT()
            opts.squeezeDims = [1, 2]
            o.builtinOptionsType, o.builtinOptions = schema.BuiltinOptions.SqueezeOptions, opts
            return packed(m)
    raise RuntimeError("no [1,1,1,C] -> [1,C] RESHAPE to turn into SQUEEZE")


def check_runs(model_bytes):
    """TFLite's reference kernels accept and run the model (zeros in)."""
    it = Interpreter(model_content=model_bytes, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    for d in it.get_input_details():
        it.set_tensor(d["index"], np.zeros(d["shape"], dtype=d["dtype"]))
    it.invoke()


def packed(model_t):
    b = flatbuffers.Builder(1024)
    b.Finish(model_t.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def unpack(model_bytes):
    return schema.ModelT.InitFromPackedBuf(bytearray(model_bytes), 0)


def tensor_t(name, shape, ttype, buffer, scale=None, zero_point=None, dim=0):
    t = schema.TensorT()
    t.name, t.shape, t.type, t.buffer = name, list(shape), ttype, buffer
    if scale is not None:
        q = schema.QuantizationParametersT()
        q.scale, q.zeroPoint, q.quantizedDimension = list(scale), list(zero_point), dim
        t.quantization = q
    return t


def float_model_t(op_codes, ops, n_tensors):
    """A float model with tensors t0..t{n-1} of shape [1, 4] and the given (code, ins, outs) ops."""
    m = schema.ModelT()
    m.version, m.description = 3, "microquant test model"
    m.buffers = [schema.BufferT() for _ in range(n_tensors + 1)]
    m.operatorCodes = []
    for dep, code in op_codes:
        oc = schema.OperatorCodeT()
        oc.deprecatedBuiltinCode, oc.builtinCode, oc.version = dep, code, 1
        m.operatorCodes.append(oc)
    sg = schema.SubGraphT()
    sg.tensors = [tensor_t(f"t{i}", [1, 4], schema.TensorType.FLOAT32, i + 1) for i in range(n_tensors)]
    sg.inputs, sg.outputs = [0], [n_tensors - 1]
    sg.operators = []
    for opcode_index, ins, outs, opt_type, opt in ops:
        o = schema.OperatorT()
        o.opcodeIndex, o.inputs, o.outputs = opcode_index, ins, outs
        o.builtinOptionsType, o.builtinOptions = opt_type, opt
        sg.operators.append(o)
    sg.name = "main"
    m.subgraphs = [sg]
    return m


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "errors").mkdir(exist_ok=True)
    summary = {}

    for name in MLPERF:
        rel = f"models/mlperf-tiny/{name}.tflite"
        doc = describe((ROOT / rel).read_bytes(), rel)
        write_json(name, doc)
        summary[name] = collections.Counter(o["op"] for o in doc["ops"])

    zoo = op_zoo_module()
    built = {
        "ops_float": with_squeeze(convert(zoo, "float", (1, 8, 8, 4))),
        "ops_int8": with_squeeze(convert(zoo, "int8", (1, 8, 8, 4))),
        "ops_16x8": with_squeeze(convert(op_zoo_module(for_16x8=True), "16x8", (1, 8, 8, 4))),
        # The converter keeps buffer offsets only without quantization (the int8 path
        # re-serializes the model with inline buffers).
        "buffer_offset": convert(small_conv_module(), "float", (1, 6, 6, 3), buffer_offset=True),
    }

    # Operator codes only in the deprecated field, or only in the extended one.
    base = built["ops_int8"]
    m = unpack(base)
    for oc in m.operatorCodes:
        oc.deprecatedBuiltinCode, oc.builtinCode = max(oc.deprecatedBuiltinCode, oc.builtinCode), 0
    built["deprecated_code_only"] = packed(m)
    m = unpack(base)
    for oc in m.operatorCodes:
        oc.deprecatedBuiltinCode, oc.builtinCode = 0, max(oc.deprecatedBuiltinCode, oc.builtinCode)
    built["builtin_code_only"] = packed(m)

    for name, b in built.items():
        check_runs(b)
        rel = f"tests/golden/tflite_import/{name}.tflite"
        (ROOT / rel).write_bytes(b)
        doc = describe(b, rel)
        write_json(name, doc)
        summary[name] = collections.Counter(o["op"] for o in doc["ops"])
    ops_covered = set().union(*(set(summary[k]) for k in ("ops_float", "ops_int8", "ops_16x8")))

    # Error models. Each entry: file, expected error kind, operator index/op name when the
    # error is about an operator, and a fragment of the message.
    errors = []
    BO = schema.BuiltinOperator
    add_opts = schema.AddOptionsT()

    def add_error(name, model_bytes, kind, op_index=None, op=None, fragment=None):
        rel = f"tests/golden/tflite_import/errors/{name}.tflite"
        (ROOT / rel).write_bytes(model_bytes)
        # For information: how far TFLite's own interpreter gets with the file.
        try:
            it = Interpreter(model_content=model_bytes, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
            try:
                it.allocate_tensors()
                tflite = "loads and allocates"
            except Exception as e:  # noqa: BLE001 - recorded, not judged
                tflite = "loads, allocate_tensors fails: " + str(e).strip().splitlines()[0][:200]
        except Exception as e:  # noqa: BLE001
            tflite = "does not load: " + str(e).strip().splitlines()[0][:200]
        errors.append({"file": rel, "kind": kind, "op_index": op_index, "op": op, "fragment": fragment,
                       "tflite_interpreter": tflite})

    # ADD then EXP: EXP (code 47) is not supported; it is operator 1.
    m = float_model_t([(BO.ADD, BO.ADD), (BO.EXP, BO.EXP)],
                      [(0, [0, 0], [1], schema.BuiltinOptions.AddOptions, add_opts), (1, [1], [2], 0, None)], 3)
    add_error("unsupported_op", packed(m), "UnsupportedOp", 1, "EXP", "EXP is not supported")
    # An extended code (> 127) with the deprecated field at its placeholder 127.
    gelu = BO.GELU
    assert gelu > 127
    m = float_model_t([(127, gelu)], [(0, [0], [1], 0, None)], 2)
    add_error("unsupported_op_extended_code", packed(m), "UnsupportedOp", 0, "GELU", "GELU is not supported")

    q = built["buffer_offset"]
    # Int8 models edited: asymmetric weights, per-channel scales on the wrong axis, missing scales.
    plain_int8 = convert(small_conv_module(), "int8", (1, 6, 6, 3))
    m = unpack(plain_int8)
    sg = m.subgraphs[0]
    conv_index = next(i for i, o in enumerate(sg.operators)
                      if m.operatorCodes[o.opcodeIndex].builtinCode == BO.CONV_2D)
    conv = sg.operators[conv_index]
    w = sg.tensors[conv.inputs[1]]
    w.quantization.zeroPoint = [3] * len(w.quantization.zeroPoint)
    add_error("asymmetric_weights", packed(m), "UnsupportedQuantization", conv_index, "CONV_2D", "asymmetric")

    m = unpack(plain_int8)
    sg = m.subgraphs[0]
    w = sg.tensors[sg.operators[conv_index].inputs[1]]
    in_c = w.shape[3]
    w.quantization.scale = list(w.quantization.scale[:in_c])
    w.quantization.zeroPoint = [0] * in_c
    w.quantization.quantizedDimension = 3
    add_error("per_channel_wrong_axis", packed(m), "UnsupportedQuantization", conv_index, "CONV_2D", "axis 3")

    m = unpack(plain_int8)
    sg = m.subgraphs[0]
    x = sg.operators[conv_index].inputs[0]
    sg.tensors[x].quantization = None
    # The first operator that touches the tensor reports it (the QUANTIZE that produces it).
    first = next(i for i, o in enumerate(sg.operators) if x in list(o.inputs) + list(o.outputs))
    first_code = m.operatorCodes[sg.operators[first].opcodeIndex]
    first_name = next(k for k, v in vars(BO).items()
                      if v == max(first_code.builtinCode, first_code.deprecatedBuiltinCode))
    add_error("missing_scales", packed(m), "UnsupportedQuantization", first, first_name,
              "without quantization scales")

    # Two subgraphs (as control-flow models have).
    m = float_model_t([(BO.ADD, BO.ADD)], [(0, [0, 0], [1], schema.BuiltinOptions.AddOptions, add_opts)], 2)
    m.subgraphs.append(unpack(packed(m)).subgraphs[0])
    add_error("two_subgraphs", packed(m), "Unsupported", None, None, "2 subgraphs")

    # A dynamic axis other than the batch axis.
    m = float_model_t([(BO.ADD, BO.ADD)], [(0, [0, 0], [1], schema.BuiltinOptions.AddOptions, add_opts)], 2)
    for t in m.subgraphs[0].tensors:
        t.shapeSignature = [1, -1]
    add_error("dynamic_axis", packed(m), "Unsupported", None, None, "dynamic")

    # Buffer-offset model whose file is cut inside the last constant stored after the flatbuffer.
    ends = [b.offset + b.size for b in unpack(q).buffers if b.offset > 1]
    assert ends, "the buffer_offset model has no buffers stored after the flatbuffer"
    cut = q[: max(ends) - 4]
    add_error("buffer_offset_cut", cut, "Truncated", None, None, "past the end")

    (OUT / "errors.json").write_text(json.dumps({"generator": GENERATOR, "versions": PINNED, "cases": errors},
                                                indent=1) + "\n")

    for name, c in summary.items():
        print(f"{name}: {sum(c.values())} ops {dict(c)}")
    print("ops covered by ops_float/int8/16x8:", sorted(ops_covered))
    for e in errors:
        print("error model", e["file"], e["kind"], "| TFLite:", e["tflite_interpreter"])


if __name__ == "__main__":
    main()
