#!/usr/bin/env python3
"""The demo's input batch: the first three golden KWS inputs (SplitMix64 seeds 0, 1, 2, as in
tests/golden/models/mlperf_tiny.json), so the demo's outputs are the golden TFLite Micro ones.

    .venv/bin/python tests/gen/gen_demo_inputs.py   # writes models/examples/kws_samples.npy
"""
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from goldenio import SplitMix64  # noqa: E402

OUT = pathlib.Path(__file__).resolve().parents[2] / "models" / "examples" / "kws_samples.npy"
x = np.stack([SplitMix64(s).int8s(49 * 10).reshape(1, 49, 10, 1) for s in range(3)])
np.save(OUT, x)
print(f"wrote {OUT} {x.shape} {x.dtype}")
