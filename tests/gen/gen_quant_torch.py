#!/usr/bin/env python3
"""PyTorch golden data for microquant's quantization core (issue 3): observers, the choose-qparams
formulas, quantize_per_tensor/per_channel and fake quantization with its straight-through mask.

    .venv-torch/bin/python tests/gen/gen_quant_torch.py    # writes tests/golden/quant/torch.json

Pinned: torch 2.15.0 (CPU), numpy 2.4.6 (asserted below). The calibration data is regenerated from
SplitMix64 seeds (tests/gen/gen_quant_data.py, mirrored in tests/src/quant.rs), so only results
are stored.
"""
import base64
import pathlib
import sys
import warnings

import numpy as np
import torch
from torch.ao.quantization import observer as O

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import goldenio  # noqa: E402
import gen_quant_data as qd  # noqa: E402

OUT = HERE.parent / "golden" / "quant"
PINNED = {"torch": "2.15.0", "numpy": "2.4.6"}

torch.set_num_threads(1)
warnings.simplefilter("ignore")


def check_versions():
    got = {"torch": torch.__version__.split("+")[0], "numpy": np.__version__}
    for k, v in PINNED.items():
        if got[k] != v:
            raise SystemExit(f"{k} {got[k]} installed, {v} pinned")
    return {"torch": torch.__version__, "numpy": np.__version__}


def b64(a):
    return base64.b64encode(np.ascontiguousarray(a).tobytes()).decode()


def f(x):
    return float(np.float32(x))


# name: (dtype, qscheme, reduce_range, quant_min, quant_max)
CONFIGS = {
    "quint8_affine": (torch.quint8, torch.per_tensor_affine, False, None, None),
    "qint8_affine": (torch.qint8, torch.per_tensor_affine, False, None, None),
    "qint8_symmetric": (torch.qint8, torch.per_tensor_symmetric, False, None, None),
    "quint8_symmetric": (torch.quint8, torch.per_tensor_symmetric, False, None, None),
    "qint8_affine_reduce_range": (torch.qint8, torch.per_tensor_affine, True, None, None),
    "quint8_affine_reduce_range": (torch.quint8, torch.per_tensor_affine, True, None, None),
    "qint8_symmetric_restricted": (torch.qint8, torch.per_tensor_symmetric, False, -127, 127),
    "qint32_affine": (torch.qint32, torch.per_tensor_affine, False, None, None),
}
PER_CHANNEL = {
    "quint8_affine": (torch.quint8, torch.per_channel_affine, False, None, None),
    "qint8_affine": (torch.qint8, torch.per_channel_affine, False, None, None),
    "qint8_symmetric": (torch.qint8, torch.per_channel_symmetric, False, None, None),
    "qint8_symmetric_restricted": (torch.qint8, torch.per_channel_symmetric, False, -127, 127),
}


def make(cls, cfg, **kw):
    dt, qs, rr, qmin, qmax = cfg
    args = dict(dtype=dt, qscheme=qs, reduce_range=rr, **kw)
    if qmin is not None:
        args.update(quant_min=qmin, quant_max=qmax)
    return cls(**args)


def qp(obs):
    s, z = obs.calculate_qparams()
    return [f(s.reshape(-1)[0]), int(z.reshape(-1)[0])]


def per_tensor_observers():
    out = []
    for ds in qd.DATASETS:
        batches = [torch.from_numpy(b) for b in qd.dataset(ds)]
        whole = torch.cat(batches)
        for cname, cfg in CONFIGS.items():
            row = {"dataset": ds, "config": cname}
            o = make(O.MinMaxObserver, cfg)
            for b in batches:
                o(b)
            row["minmax"] = [f(o.min_val), f(o.max_val)] + qp(o)
            if cname != "qint32_affine":
                o = make(O.MovingAverageMinMaxObserver, cfg)
                for b in batches:
                    o(b)
                row["moving_average"] = [f(o.min_val), f(o.max_val)] + qp(o)
            if cname in ("quint8_affine", "qint8_affine", "qint8_symmetric", "quint8_affine_reduce_range"):
                h = make(O.HistogramObserver, cfg)
                h(whole)
                lo, hi = h._non_linear_param_search()
                row["histogram_one_batch"] = [f(lo), f(hi)] + qp(h)
                h = make(O.HistogramObserver, cfg)
                for b in batches:
                    h(b)
                lo, hi = h._non_linear_param_search()
                row["histogram_batches"] = [f(lo), f(hi)] + qp(h)
            out.append(row)
        print(f"  torch observers: {ds}")
    return out


def histc_fingerprints():
    """torch.histc(x, 2048, min, max) of two whole data sets (the histogram HistogramObserver builds),
    as little-endian uint16 counts."""
    out = {}
    for ds in ("normal", "heavy"):
        x = torch.from_numpy(np.concatenate(qd.dataset(ds)))
        h = torch.histc(x, 2048, min=float(x.min()), max=float(x.max()))
        assert h.max() < 65536
        out[ds] = b64(h.numpy().astype("<u2"))
    return out


def per_channel_observers():
    out = []
    for ds, (_, shape, axis, _) in qd.CHANNEL_DATASETS.items():
        batches = [torch.from_numpy(b) for b in qd.channel_dataset(ds)]
        for cname, cfg in PER_CHANNEL.items():
            row = {"dataset": ds, "config": cname, "axis": axis}
            for key, cls in (("minmax", O.PerChannelMinMaxObserver), ("moving_average", O.MovingAveragePerChannelMinMaxObserver)):
                o = make(cls, cfg, ch_axis=axis)
                for b in batches:
                    o(b)
                s, z = o.calculate_qparams()
                row[key] = {"min": [f(v) for v in o.min_val], "max": [f(v) for v in o.max_val],
                            "scales": [f(v) for v in s], "zero_points": [int(v) for v in z]}
            out.append(row)
    return out


def choose_table():
    """PyTorch's formula on (min, max): a MinMaxObserver fed the tensor [min, max]."""
    rows = []
    for lo, hi in qd.minmax_pairs():
        r = [lo, hi]
        for cfg in CONFIGS.values():
            o = make(O.MinMaxObserver, cfg)
            o(torch.tensor([lo, hi], dtype=torch.float32))
            r.append(qp(o))
        rows.append(r)
    return {"configs": list(CONFIGS), "rows": rows}


def ties(scale, zp, n=40):
    s = np.float32(scale)
    k = np.arange(-n // 2, n // 2, dtype=np.float32)
    return np.concatenate([(k + np.float32(0.5)) * s, (k + np.float32(0.5)) * s + np.float32(zp) * 0]).astype(np.float32)


def quantize_cases():
    """quantize_per_tensor / fake_quantize_per_tensor_affine(_cachemask) on data, exact ties and
    saturating values, and their per-channel versions."""
    out = []
    specs = [("normal", 0.0247, 3, -128, 127, torch.qint8), ("heavy", 0.3, -10, -128, 127, torch.qint8),
             ("relu", 0.0278, 0, 0, 255, torch.quint8), ("uniform", 0.7843, 128, 0, 255, torch.quint8),
             ("normal", 0.05, 0, -64, 63, torch.qint8), ("tiny", 2.4e-5, -1, -128, 127, torch.qint8)]
    for ds, scale, zp, qmin, qmax, dt in specs:
        # Saturating values stay within +-2^31 steps: beyond, torch.quantize_per_tensor's vectorized
        # float->int32 conversion overflows (it returns 127 for -1e6 at scale 2.4e-5), where
        # microquant saturates.
        big = np.array([1e4 * scale, -1e4 * scale, 0.0, -0.0], np.float32)
        x = np.concatenate([qd.batch(ds, 0)[:100], ties(scale, zp), big])
        xt = torch.from_numpy(x)
        fq, mask = torch.ops.aten.fake_quantize_per_tensor_affine_cachemask(xt, scale, zp, qmin, qmax)
        q = torch.quantize_per_tensor(xt, scale, zp, dt).int_repr().numpy().astype(np.int32)
        out.append({"kind": "per_tensor", "dataset": ds, "scale": f(scale), "zero_point": zp, "qmin": qmin,
                    "qmax": qmax, "dtype": "int8" if dt == torch.qint8 else "uint8", "n": int(x.size),
                    "x": b64(x.astype("<f4")), "fake": b64(fq.numpy().astype("<f4")),
                    "mask": b64(mask.numpy().astype(np.uint8)), "quantize": b64(q.astype("<i4"))})
    for ds, (_, shape, axis, _) in qd.CHANNEL_DATASETS.items():
        x = qd.channel_dataset(ds)[0]
        c = shape[axis]
        scales = np.array([0.01 + 0.013 * i for i in range(c)], np.float32)
        zps = np.array([(i * 37) % 21 - 10 for i in range(c)], np.int32)
        xt = torch.from_numpy(x)
        st, zt = torch.from_numpy(scales), torch.from_numpy(zps)
        fq, mask = torch.ops.aten.fake_quantize_per_channel_affine_cachemask(xt, st, zt, axis, -128, 127)
        q = torch.quantize_per_channel(xt, st, zt.to(torch.int64), axis, torch.qint8).int_repr().numpy().astype(np.int32)
        out.append({"kind": "per_channel", "dataset": ds, "axis": axis, "shape": list(shape),
                    "scales": [f(v) for v in scales], "zero_points": [int(v) for v in zps], "qmin": -128, "qmax": 127,
                    "dtype": "int8", "n": int(x.size), "x": b64(x.astype("<f4").reshape(-1)),
                    "fake": b64(fq.numpy().astype("<f4").reshape(-1)),
                    "mask": b64(mask.numpy().astype(np.uint8).reshape(-1)), "quantize": b64(q.astype("<i4").reshape(-1))})
    return out


def main():
    versions = check_versions()
    doc = {"generator": "tests/gen/gen_quant_torch.py", "versions": versions,
           "data": "tests/gen/gen_quant_data.py (SplitMix64; regenerated by tests/src/quant.rs)",
           "configs": {k: {"dtype": str(v[0]).replace("torch.", ""), "qscheme": str(v[1]).replace("torch.", ""),
                           "reduce_range": v[2], "quant_min": v[3], "quant_max": v[4]} for k, v in CONFIGS.items()},
           "per_tensor": per_tensor_observers(), "per_channel": per_channel_observers(),
           "histc": histc_fingerprints(), "choose": choose_table(), "quantize": quantize_cases()}
    goldenio.write(OUT / "torch.json", doc)
    print("wrote", OUT / "torch.json")


if __name__ == "__main__":
    main()
