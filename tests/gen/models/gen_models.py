#!/usr/bin/env python3
"""Golden outputs of the four MLPerf Tiny int8 models (tests/golden/models/mlperf_tiny.json).

    .venv/bin/python tests/gen/models/gen_models.py [MODELS_DIR]

MODELS_DIR defaults to $MQ_MODELS_DIR or <repo>/../shared/models/mlperf-tiny.

For each model (index 0 KWS, 1 IC, 2 VWW, 3 AD) and sample s in 0..20, the input is the int8
tensor filled in row-major order from SplitMix64(seed = model_index * 1000 + s) (the top byte of
each 64-bit output: tests/gen/goldenio.py, tests/src/rng.rs). The inputs are not stored (the
CRC32 of each is, to cross-check the Rust generator); the outputs of both oracles are:

* TFLite Micro (tflite_micro.runtime.Interpreter): the reference for our default rounding;
* the TFLite interpreter with reference kernels (OpResolverType.BUILTIN_REF): the reference for
  single rounding. They differ on IC and AD (per-channel fully connected, see the README).

For sample 0, a per-layer record: each operator's output tensor from both oracles (TFLite with
experimental_preserve_all_tensors=True, TFLM with kPreserveAllTensors) as CRC32 + the first 16
values, and the full tensor when it has at most 1024 elements, so an interpreter mismatch can be
located to a layer; and for every sample the index of the first operator whose output differs
between the two oracles (null when none does).

Pinned tools (tests/gen/requirements.txt; checked before anything runs):
    numpy==2.4.6, ai-edge-litert==2.3.0, tflite-micro==0.dev20261023182759 (pip install --pre)
Deterministic: no randomness besides the seeded SplitMix64.
"""
import hashlib
import importlib.metadata
import os
import pathlib
import sys
import zlib

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent
sys.path.insert(0, str(HERE.parent))  # tests/gen, for goldenio
import goldenio  # noqa: E402

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
from ai_edge_litert.interpreter import Interpreter, OpResolverType  # noqa: E402
from tflite_micro import runtime as tflm_runtime  # noqa: E402

PINNED = {"numpy": "2.4.6", "ai-edge-litert": "2.3.0", "tflite-micro": "0.dev20261023182759"}
MODELS = [  # index = position: part of the seed
    ("kws", "kws_ref_model_int8.tflite"),
    ("ic", "ic_resnet8_int8.tflite"),
    ("vww", "vww_96_int8.tflite"),
    ("ad", "ad01_int8.tflite"),
]
SAMPLES = 20
HEAD = 16
FULL_MAX = 1024
OUT = REPO / "tests" / "golden" / "models" / "mlperf_tiny.json"



def seed_of(model_index, sample):
    return model_index * 1000 + sample


def crc32(a):
    return zlib.crc32(np.ascontiguousarray(a).tobytes()) & 0xFFFFFFFF


def qinfo(d):
    q = d["quantization_parameters"]
    scales = [float(np.float32(s)) for s in q["scales"]]
    zps = [int(z) for z in q["zero_points"]]
    return {"shape": [int(x) for x in d["shape"]], "dtype": np.dtype(d["dtype"]).name,
            "scale": scales[0] if len(scales) == 1 else scales,
            "zero_point": zps[0] if len(zps) == 1 else zps}


def tensor_record(a):
    a = np.asarray(a)
    rec = {"crc32": crc32(a), "head": [int(v) for v in a.reshape(-1)[:HEAD]]}
    rec["full"] = goldenio.tensor(a) if a.size <= FULL_MAX else None
    return rec


def run_model(index, name, path):
    data = path.read_bytes()
    ref = Interpreter(model_content=data, experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
                      experimental_preserve_all_tensors=True)
    ref.allocate_tensors()
    (din,), (dout,) = ref.get_input_details(), ref.get_output_details()
    in_shape, in_dtype = tuple(din["shape"]), np.dtype(din["dtype"])
    assert in_dtype == np.int8, (name, in_dtype)
    n_in = int(np.prod(in_shape))
    samples = []
    stats = {"samples": SAMPLES, "samples_differing": 0, "elements": 0, "elements_differing": 0,
             "max_abs_diff": 0}
    layers = None
    for s in range(SAMPLES):
        seed = seed_of(index, s)
        x = goldenio.SplitMix64(seed).int8s(n_in).reshape(in_shape)
        ref.set_tensor(din["index"], x)
        ref.invoke()
        y_ref = np.array(ref.get_tensor(dout["index"]))
        micro = tflm_runtime.Interpreter.from_bytes(
            data, intrepreter_config=tflm_runtime.InterpreterConfig.kPreserveAllTensors)
        micro.set_input(x, 0)
        micro.invoke()
        y_tflm = np.array(micro.get_output(0))
        assert y_tflm.shape == y_ref.shape and y_tflm.dtype == y_ref.dtype
        d = np.abs(y_tflm.astype(np.int64) - y_ref.astype(np.int64))
        nd = int(np.count_nonzero(d))
        stats["elements"] += int(y_ref.size)
        stats["elements_differing"] += nd
        stats["samples_differing"] += int(nd > 0)
        stats["max_abs_diff"] = max(stats["max_abs_diff"], int(d.max()))
        first_diff = None
        for op in ref._get_ops_details():
            if any(not np.array_equal(np.array(ref.get_tensor(int(t))).reshape(-1),
                                      np.array(micro.GetTensor(int(t), 0)["tensor_data"]).reshape(-1))
                   for t in op["outputs"]):
                first_diff = int(op["index"])
                break
        samples.append({"sample": s, "seed": seed, "input_crc32": crc32(x), "first_differing_op": first_diff,
                        "expected_tflm": goldenio.tensor(y_tflm), "expected_tflite_ref": goldenio.tensor(y_ref)})
        if s == 0:
            layers = []
            for op in ref._get_ops_details():
                outs = []
                for t in op["outputs"]:
                    t = int(t)
                    det = next(dd for dd in ref.get_tensor_details() if dd["index"] == t)
                    a_ref = np.array(ref.get_tensor(t))
                    a_tflm = np.array(micro.GetTensor(t, 0)["tensor_data"]).reshape(a_ref.shape)
                    assert a_tflm.dtype == a_ref.dtype
                    outs.append({"tensor": t, "name": det["name"], **qinfo(det),
                                 "elements_differing": int(np.count_nonzero(a_ref != a_tflm)),
                                 "tflite_ref": tensor_record(a_ref), "tflm": tensor_record(a_tflm)})
                layers.append({"op_index": int(op["index"]), "op": op["op_name"],
                               "inputs": [int(i) for i in op["inputs"]], "outputs": outs})
    firsts = sorted({smp["first_differing_op"] for smp in samples if smp["first_differing_op"] is not None})
    print(f"{name}: first differing ops over the samples: {firsts}")
    print(f"{name}: {SAMPLES} samples, {stats['samples_differing']} differ between TFLM and BUILTIN_REF "
          f"({stats['elements_differing']}/{stats['elements']} elements, max {stats['max_abs_diff']}); "
          f"{len(layers)} layers, first differing layer: "
          f"{next((l['op_index'] for l in layers if any(o['elements_differing'] for o in l['outputs'])), None)}")
    return {"index": index, "name": name, "file": path.name, "sha256": hashlib.sha256(data).hexdigest(),
            "file_crc32": zlib.crc32(data) & 0xFFFFFFFF, "bytes": len(data),
            "input": qinfo(din), "output": qinfo(dout), "stats": stats, "samples": samples,
            "layers_sample0": layers}


def main(argv):
    goldenio.check_pins(PINNED)
    default = os.environ.get("MQ_MODELS_DIR", str(REPO.parent / "shared" / "models" / "mlperf-tiny"))
    models_dir = pathlib.Path(argv[0] if argv else default)
    doc = {"generator": "tests/gen/models/gen_models.py",
           "tools": {p: importlib.metadata.version(p) for p in PINNED},
           "seed_scheme": "input = SplitMix64(model_index * 1000 + sample).int8s(len), row-major; "
                          "model_index: 0 kws, 1 ic, 2 vww, 3 ad; sample 0..19",
           "crc": "CRC-32/ISO-HDLC (zlib.crc32) of the tensor's little-endian bytes",
           "models": [run_model(i, name, models_dir / file) for i, (name, file) in enumerate(MODELS)]}
    p = goldenio.write(OUT, doc)
    print(f"wrote {p} ({p.stat().st_size} bytes)")


if __name__ == "__main__":
    main(sys.argv[1:])
