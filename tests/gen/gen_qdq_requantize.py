#!/usr/bin/env python3
"""QUANTIZE between integer types (int8 <-> int16, int8 -> int8, int16 -> int16): the op a model
with some layers in 16x8 runs between its int8 and int16 layers (tests/host/qdq_requantize.rs).

    .venv/bin/python tests/gen/gen_qdq_requantize.py

Each case is a one-operator TFLite model (QUANTIZE, written with TFLite's schema object API by
tests/gen/kernels/common.py's ModelBuilder) run by TFLite Micro and by the TFLite interpreter with
its reference kernels (OpResolverType.BUILTIN_REF); both outputs are stored. Inputs: every int8
value (int8 input), or 1,024 int16 values (SplitMix-free: numpy default_rng per case, plus both
extremes and the zero point).

Writes tests/golden/qdq/requantize.json.

Pinned: numpy 2.4.6, flatbuffers 25.12.19, ai-edge-litert 2.3.0, tflite-micro
0.dev20261023182759 (checked by common.check_versions).
"""
import pathlib
import sys
import zlib

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "kernels"))
sys.path.insert(0, str(HERE))
import common  # noqa: E402
import goldenio  # noqa: E402

OUT = HERE.parent / "golden" / "qdq" / "requantize.json"

# (name, input dtype, (scale, zp), output dtype, (scale, zp))
CASES = [
    # What ptq::quantize makes: int8 asymmetric -> int16 symmetric of the same range, and back.
    ("s8_to_s16_same_range", np.int8, (0.0123, -20), np.int16, (0.0123 * 255 / 2 / 32767, 0)),
    ("s16_to_s8_same_range", np.int16, (3.1 / 32767, 0), np.int8, (3.1 / 255, -128)),
    ("s8_to_s16_wide", np.int8, (0.05, 17), np.int16, (0.0004, 0)),
    ("s8_to_s16_saturating", np.int8, (0.5, 0), np.int16, (1e-5, 0)),
    ("s16_to_s8_narrow", np.int16, (0.0001, 0), np.int8, (0.02, 5)),
    ("s16_to_s8_saturating", np.int16, (0.001, 0), np.int8, (0.01, -3)),
    ("s8_to_s8", np.int8, (0.02, -7), np.int8, (0.031, 12)),
    ("s16_to_s16", np.int16, (0.0003, 0), np.int16, (0.00071, 0)),
]


def inputs_for(name, dtype, zp):
    if dtype == np.int8:
        return np.arange(-128, 128, dtype=np.int8)
    r = np.random.default_rng(zlib.crc32(name.encode()))
    x = r.integers(-32768, 32768, 1021).astype(np.int16)
    return np.concatenate([x, np.array([-32768, 32767, zp], np.int16)])


def main():
    common.check_versions()
    BO = common.BO
    cases = []
    for name, it, (si, zi), ot, (so, zo) in CASES:
        x = inputs_for(name, it, zi)
        b = common.ModelBuilder()
        t_in = b.tensor("x", [1, len(x)], it, scales=[si], zero_points=[zi])
        t_out = b.tensor("y", [1, len(x)], ot, scales=[so], zero_points=[zo])
        b.operator(BO.QUANTIZE, 2, [t_in], [t_out])
        model = b.build([t_in], [t_out])
        tflm = common.run_tflm(model, [x[None, :]]).reshape(-1)
        ref = common.run_tflite_ref(model, [x[None, :]]).reshape(-1)
        cases.append({"name": name, "input_scale": float(np.float32(si)), "input_zero_point": zi,
                      "output_scale": float(np.float32(so)), "output_zero_point": zo,
                      "input": goldenio.tensor(x), "tflm": goldenio.tensor(tflm), "tflite_ref": goldenio.tensor(ref)})
        print(name, "TFLM and TFLite agree" if np.array_equal(tflm, ref) else "TFLM and TFLite differ")
    goldenio.write(OUT, {"tools": common.tool_versions(), "cases": cases})


if __name__ == "__main__":
    main()
