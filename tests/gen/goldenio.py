"""Writing golden files in the shared format read by tests/src/golden.rs.

A tensor is {"dtype": "int8", "shape": [...], "b64": base64(little-endian bytes)}.
"""
import base64
import importlib.metadata
import json
import pathlib

import numpy as np

_DTYPES = {np.dtype(np.int8): "int8", np.dtype(np.uint8): "uint8", np.dtype(np.int16): "int16",
           np.dtype(np.int32): "int32", np.dtype(np.int64): "int64", np.dtype(np.float32): "float32"}


def tensor(a):
    a = np.asarray(a)
    name = _DTYPES[a.dtype]
    return {"dtype": name, "shape": list(a.shape),
            "b64": base64.b64encode(np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes()).decode()}


def check_pins(pinned):
    """Stops unless every package of `pinned` ({name: version}) is installed at that version:
    the golden data must come from the pinned tools."""
    bad = []
    for p, v in pinned.items():
        try:
            have = importlib.metadata.version(p)
        except importlib.metadata.PackageNotFoundError:
            have = None
        if have != v:
            bad.append(f"{p}: have {have}, want {v}")
    if bad:
        raise SystemExit("tool versions differ from the pins:\n  " + "\n  ".join(bad))


REPO = pathlib.Path(__file__).resolve().parent.parent.parent


def rel(path):
    """`path` relative to the repository, as golden files name the files they were made from."""
    return str(pathlib.Path(path).resolve().relative_to(REPO))


def write(path, doc):
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, separators=(",", ":"), sort_keys=False) + "\n")
    return path


class SplitMix64:
    """The deterministic generator shared with tests/src/rng.rs (and the firmware), so model
    inputs need not be stored: SplitMix64 (Steele, Lea, Flood 2014)."""

    MASK = (1 << 64) - 1

    def __init__(self, seed):
        self.state = seed & self.MASK

    def next_u64(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & self.MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & self.MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & self.MASK
        return z ^ (z >> 31)

    def int8s(self, n):
        """n int8 values: the top byte of each 64-bit output."""
        return np.array([(self.next_u64() >> 56) for _ in range(n)], dtype=np.uint8).view(np.int8)
