#!/usr/bin/env python3
"""Writes every single-op kernel golden file in tests/golden/kernels/ and summary.json.

    .venv/bin/python tests/gen/kernels/gen_all.py            # all families
    .venv/bin/python tests/gen/kernels/gen_all.py conv fc    # some (keeps the others' summary rows)

Pinned tools (tests/gen/requirements.txt; checked before anything runs):
    numpy==2.4.6, flatbuffers==25.12.19, ai-edge-litert==2.3.0,
    tflite-micro==0.dev20261023182759 (pip install --pre)

Deterministic: every case draws its data from a numpy generator seeded with the CRC32 of its name,
and the searches for the ``*_split_*`` cases (where TFLite Micro and the interpreter differ) from
one seeded with their tag.
See tests/golden/kernels/README.md for the file format.
"""
import json
import sys

import common

GENERATORS = {}


MODULES = [
    "gen_fc",
    "gen_conv",
    "gen_depthwise",
    "gen_pool",
    "gen_elementwise",
    "gen_activations",
    "gen_shape",
    "gen_spatial",
    "gen_movement",
    "gen_binary",
    "gen_lstm",
    "gen_transpose_conv",
    "gen_batch_matmul",
    "gen_unary",
    "gen_int4",
]


def _register():
    mods = [__import__(m) for m in MODULES]
    for m in mods:
        GENERATORS.update(m.GENERATORS)
    for m in mods:
        GENERATORS.update(getattr(m, "GENERATORS_16X8", {}))


def main(argv):
    common.check_versions()
    _register()
    wanted = argv or list(GENERATORS)
    unknown = [w for w in wanted if w not in GENERATORS]
    if unknown:
        raise SystemExit(f"unknown families {unknown}; known: {list(GENERATORS)}")
    summary_path = common.GOLDEN / "summary.json"
    rows = {}
    if summary_path.exists() and argv:
        rows = {r["key"]: r for r in json.loads(summary_path.read_text())["families"]}
    for key in wanted:
        fam = GENERATORS[key]()
        row = fam.write()
        rows[key] = {"key": key, **row, "rejected_cases": fam.rejected}
    order = [k for k in GENERATORS if k in rows]
    total = sum(rows[k]["bytes"] for k in order)
    doc = {"tools": common.tool_versions(), "total_bytes": total, "families": [rows[k] for k in order]}
    summary_path.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"total {total} bytes in {len(order)} files")


if __name__ == "__main__":
    main(sys.argv[1:])
