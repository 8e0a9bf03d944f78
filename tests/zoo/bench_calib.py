"""The calibration engine on the real-model zoo (run by scripts/bench-calib.sh with the repository's
.venv: onnxruntime 1.32.0, ai-edge-litert 2.3.0, tf2onnx 1.17.0): speed against ONNX Runtime and
the SQNR of every observer.

For each model of the zoo (build_zoo.py), on the same calibration samples (<= 32) and evaluation
samples (<= 16) as bench_zoo.py, side by side in one run on the same machine:
  time        `microquant quantize MODEL --calib calib.npy -o model.mq` (default options: what a
              user runs; it also evaluates the result for its report) against ONNX Runtime's
              quantize_static (QuantFormat.QDQ, per_channel=True, int8, MinMax), both with the
              machine's threads (ONNX Runtime's default session; microquant's default --threads 0),
              wall-clock, each the best of --repeat runs;
  SQNR        of the int8 output against the float model's (ONNX Runtime; the TFLite interpreter
              for TFLite models) on the evaluation samples, for microquant's default and for each
              `--observer` (minmax, histogram, entropy, percentile), and for ONNX Runtime's MinMax
              and Entropy calibrators (the latter also timed; with 2048 bins: see
              ort_quantize_entropy, quantize_static's default Entropy is its MinMax).
TFLite models reach ONNX Runtime as their tf2onnx conversion (as in bench_zoo.py); a streaming
model (Silero VAD) runs its samples as one sequence everywhere.

Usage: bench_calib.py --zoo DIR --cli PATH [--work DIR] [--md FILE] [--json FILE] [--only NAME ...]
                      [--observers minmax,histogram,...] [--repeat N] [--no-ort-entropy] [--keep]
"""
import argparse
import json
import pathlib
import sys
import time
import traceback

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bench_zoo as bz  # noqa: E402  (the zoo benchmark's runners: ONNX Runtime, TFLite, the CLI)

OBSERVERS = ["minmax", "histogram", "entropy", "percentile"]


def ort_quantize(float_onnx, calib, extra, out, method, stream=None):
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static
    t0 = time.time()
    reader = bz.CalibReader(float_onnx, calib, extra, stream)
    quantize_static(str(float_onnx), str(out), reader, quant_format=QuantFormat.QDQ,
                    per_channel=True, activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                    calibrate_method=getattr(CalibrationMethod, method))
    return time.time() - t0


def ort_quantize_entropy(float_onnx, calib, extra, out, stream=None):
    """ONNX Runtime's entropy calibration as it calibrates when asked to: its calibrator
    (create_calibrator, Entropy) with 2048 bins and 128 quantized bins (TensorRT's setting, our
    `entropy` observer's), its ranges handed to quantize_static through its calibration cache.
    quantize_static's own Entropy keeps the calibrator's defaults, 128 bins and 128 quantized
    bins, whose only candidate threshold is the whole range: the MinMax model, byte for byte."""
    import tempfile
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.calibrate import create_calibrator, save_tensors_data
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        cal = create_calibrator(str(float_onnx), None, augmented_model_path=f"{tmp}/augmented.onnx",
                                calibrate_method=CalibrationMethod.Entropy,
                                extra_options={"num_bins": 2048, "num_quantized_bins": 128})
        cal.collect_data(bz.CalibReader(float_onnx, calib, extra, stream))
        save_tensors_data(cal.compute_data(), f"{tmp}/ranges.json")
        del cal
        quantize_static(str(float_onnx), str(out), None, quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                        calibrate_method=CalibrationMethod.Entropy, calibration_cache_path=f"{tmp}/ranges.json")
    return time.time() - t0


def mq_sqnr(clip, w, mq, evals, ref, log):
    bz.cli([clip, "run", mq, "--input", w / "eval.npy", "-o", w / "calib_out.npy"], log)
    insp = json.loads(bz.cli([clip, "inspect", "--json", mq], log)[0])
    q = insp["tensors"][insp["outputs"][0]]["quant"]
    yq = np.load(w / "calib_out.npy").reshape(len(evals), -1).astype(np.float32)
    return bz.sqnr(ref, (yq - q["zero_point"]) * q["scale"])


def bench(d, clip, work, observers, repeat, ort_entropy, log):
    meta = json.loads((d / "meta.json").read_text())
    fmt = "onnx" if (d / "model.onnx").exists() else "tflite"
    model = d / f"model.{fmt}"
    row = {"model": d.name}
    w = work / d.name
    w.mkdir(parents=True, exist_ok=True)
    calib = np.load(d / "calib.npy")[:bz.N_CALIB].astype(np.float32)
    evals = np.load(d / "eval.npy")[:bz.N_EVAL].astype(np.float32)
    np.save(w / "calib.npy", calib)
    np.save(w / "eval.npy", evals)
    extra = bz.extra_inputs(meta)
    stream = meta.get("stream")
    ref = bz.ort_run(model, evals, extra, stream) if fmt == "onnx" else bz.tflite_run(model, evals)
    opts = bz.cli_options(meta)

    float_onnx, _ = bz.ort_float_model(model, fmt, meta, w)

    # Time, side by side: ours (default options) then ONNX Runtime MinMax, `repeat` rounds.
    mq_times, ort_times = [], []
    for _ in range(repeat):
        try:
            mq_times.append(bz.cli([clip, "quantize", model, "--calib", w / "calib.npy", "-o", w / "default.mq"] + opts,
                                   log)[1])
        except Exception as e:
            row["mq_error"] = bz.short(e)
            break
        try:
            ort_times.append(ort_quantize(float_onnx, calib, extra, w / "ort_minmax.onnx", "MinMax", stream))
        except Exception as e:
            row["ort_error"] = bz.short(e)
            break
    if mq_times:
        row["mq_time_s"] = min(mq_times)
    if ort_times:
        row["ort_time_s"] = min(ort_times)

    if "mq_error" not in row:
        try:
            row["sqnr_default"] = mq_sqnr(clip, w, w / "default.mq", evals, ref, log)
        except Exception as e:
            row["mq_error"] = bz.short(e)
        for obs in observers:
            try:
                mq = w / f"{obs}.mq"
                bz.cli([clip, "quantize", model, "--calib", w / "calib.npy", "-o", mq, "--observer", obs] + opts, log)
                row[f"sqnr_{obs}"] = mq_sqnr(clip, w, mq, evals, ref, log)
            except Exception as e:
                row[f"error_{obs}"] = bz.short(e)
    if ort_times:
        row["sqnr_ort_minmax"] = bz.sqnr(ref, bz.ort_run(w / "ort_minmax.onnx", evals, extra, stream, exact=True))
    if ort_entropy and "ort_error" not in row:
        try:
            row["ort_entropy_time_s"] = ort_quantize_entropy(float_onnx, calib, extra, w / "ort_entropy.onnx", stream)
            row["sqnr_ort_entropy"] = bz.sqnr(ref, bz.ort_run(w / "ort_entropy.onnx", evals, extra, stream, exact=True))
        except Exception as e:
            row["ort_entropy_error"] = bz.short(e)
    return row


def markdown(rows, observers):
    f1 = bz.f1
    cols = ["default"] + observers
    head = ("| model | quantize mq / ORT MinMax (s) | ratio | "
            + " | ".join(f"mq {c}" for c in cols) + " | ORT MinMax | ORT Entropy (time s) | default − best ORT |")
    out = [head, "|" + "|".join(["---"] * (head.count("|") - 1)) + "|"]
    for r in rows:
        ratio = r["mq_time_s"] / r["ort_time_s"] if "mq_time_s" in r and "ort_time_s" in r else None
        ort = [r[k] for k in ("sqnr_ort_minmax", "sqnr_ort_entropy") if k in r]
        delta = r["sqnr_default"] - max(ort) if ort and "sqnr_default" in r else None
        ent = f1(r.get("sqnr_ort_entropy")) + (f" ({r['ort_entropy_time_s']:.0f})" if "ort_entropy_time_s" in r else "")
        out.append(f"| {r['model']} | {f1(r.get('mq_time_s'))} / {f1(r.get('ort_time_s'))} | {f1(ratio, '{:.2f}')} | "
                   + " | ".join(f1(r.get(f"sqnr_{c}")) for c in cols)
                   + f" | {f1(r.get('sqnr_ort_minmax'))} | {ent} | {f1(delta, '{:+.1f}')} |")
    notes = [f"- **{r['model']}**, {k}: `{v}`" for r in rows for k, v in r.items() if "error" in k]
    if notes:
        out += ["", "Errors, as the tools printed them:", ""] + notes
    return "\n".join(out)


def summary(rows):
    timed = [r for r in rows if "mq_time_s" in r and "ort_time_s" in r]
    faster = [r for r in timed if r["mq_time_s"] <= r["ort_time_s"]]
    both = [r for r in rows if "sqnr_default" in r and "sqnr_ort_minmax" in r]
    gain = np.mean([r["sqnr_default"] - r["sqnr_ort_minmax"] for r in both]) if both else float("nan")
    best = [r for r in both if r["sqnr_default"] >= max(r["sqnr_ort_minmax"], r.get("sqnr_ort_entropy", -1e9)) - 1e-9]
    return (f"quantize time: microquant no slower than ONNX Runtime on {len(faster)}/{len(timed)} models "
            f"(median ratio {np.median([r['mq_time_s'] / r['ort_time_s'] for r in timed]) if timed else float('nan'):.2f}); "
            f"SQNR: the default at least the best of ONNX Runtime's MinMax and Entropy on {len(best)}/{len(both)}, "
            f"on average {gain:+.1f} dB against ONNX Runtime's MinMax")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--zoo", required=True)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--work")
    ap.add_argument("--md")
    ap.add_argument("--json")
    ap.add_argument("--only", nargs="*", default=[])
    ap.add_argument("--observers", default=",".join(OBSERVERS))
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--no-ort-entropy", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the previous run's figures this run does not measure")
    a = ap.parse_args()
    observers = [o for o in a.observers.split(",") if o]
    zoo = pathlib.Path(a.zoo)
    work = pathlib.Path(a.work or zoo.parent / "zoo-bench")
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    with open(work / "calib.log", "a" if a.only else "w") as log:
        for d in sorted(p.parent for p in zoo.glob("*/meta.json")):
            if a.only and d.name not in a.only:
                continue
            t0 = time.time()
            try:
                row = bench(d, a.cli, work, observers, a.repeat, not a.no_ort_entropy, log)
            except Exception as e:
                traceback.print_exc()
                row = {"model": d.name, "error": bz.short(e)}
            rows.append(row)
            print(f"[bench_calib] {d.name} ({time.time() - t0:.0f} s): {row}", flush=True)
    if a.json and pathlib.Path(a.json).exists() and (a.only or a.keep):
        # Update the previous run's rows: this run's figures replace theirs, the others stay
        # (--keep: e.g. the observers' columns of a run with --observers "" --no-ort-entropy).
        old = {r["model"]: r for r in json.loads(pathlib.Path(a.json).read_text())["models"]}
        for r in rows:
            prev = old.get(r["model"], {}) if a.keep else {}
            old[r["model"]] = {**prev, **r}
        rows = sorted(old.values(), key=lambda r: r["model"])
    # Every observer column any row has (a --keep run of fewer observers shows the kept ones).
    shown = [o for o in OBSERVERS if any(f"sqnr_{o}" in r for r in rows)] + [
        o for o in observers if o not in OBSERVERS]
    md = markdown(rows, shown)
    s = summary(rows)
    print(md + "\n\n" + s)
    if a.md:
        pathlib.Path(a.md).write_text(md + "\n\n" + s + "\n")
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps({"summary": s, "models": rows}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
