"""Benchmark of the real-model zoo (run by scripts/bench-zoo.sh with the repository's .venv:
onnxruntime 1.32.0, ai-edge-litert 2.3.0, tf2onnx 1.17.0).

For each model of the zoo (build_zoo.py), on the same calibration samples (<= 32) and evaluation
samples (<= 16):
  microquant  `microquant quantize` with default options (+ the model's --input-shape /
              --input-value), `microquant run` of the .mq on the evaluation samples, and
              ONNX Runtime running the `--qdq` export (the exact form) on them;
  ORT         onnxruntime.quantization.quantize_static (QuantFormat.QDQ, per_channel=True,
              CalibrationMethod.MinMax, int8 activations and weights) of the float ONNX model
              (of a TFLite model: its tf2onnx conversion), run by ONNX Runtime;
  TFLite int8 (Keras models) the TFLite converter's full-integer quantization, same samples.
A streaming model (the meta's `stream`: Silero VAD) runs its evaluation samples in order as one
sequence everywhere: ONNX Runtime feeds each step the state the last returned (and calibrates its
quantize_static on those states), microquant's .mq keeps its LSTM state between invokes (and
calibrates the same way, its default). A model whose top-level If depends only on a fixed input
(the meta's `ort_if_branch`) reaches quantize_static with that branch inlined.
Compared with the float model's output 0 (ONNX Runtime for ONNX models, the TFLite interpreter for
TFLite models): SQNR over all evaluation outputs, top-1 agreement for classifiers; the QDQ export
against the .mq: fraction of output elements within one quantization step, and the largest
difference in steps. One failing model does not stop the others: its error text is recorded.

Usage: bench_zoo.py --zoo DIR --cli PATH [--work DIR] [--md FILE] [--json FILE] [--only NAME ...]
"""
import argparse
import json
import pathlib
import subprocess
import sys
import time
import traceback

import numpy as np

N_CALIB, N_EVAL = 32, 16
TIMEOUT = 1800


def sqnr(ref, x):
    ref, x = np.asarray(ref, np.float64).ravel(), np.asarray(x, np.float64).ravel()
    if ref.shape != x.shape:
        raise ValueError(f"output sizes differ: {ref.shape} vs {x.shape}")
    noise = np.sum((ref - x) ** 2)
    return float("inf") if noise == 0 else float(10 * np.log10(np.sum(ref ** 2) / noise))


def median_sqnr(ref, x):
    """The median over samples of each sample's SQNR: one sample far outside the calibration range
    (a random-weight network's logits on an unusual picture) dominates the pooled figure."""
    return float(np.median([sqnr(r, y) for r, y in zip(ref, np.asarray(x).reshape(len(ref), -1))]))


def top1(ref, x):
    n = len(ref)
    return float(np.mean(ref.reshape(n, -1).argmax(1) == np.asarray(x).reshape(n, -1).argmax(1)))


def extra_inputs(meta):
    """The inputs fixed by the meta (e.g. Silero's sr and state) as numpy arrays."""
    out = {}
    for name, v in meta.get("input_values", {}).items():
        out[name] = np.array(v["value"], dtype=v["dtype"]).reshape(v["shape"])
    return out


def ort_session(path, exact=False):
    """An ONNX Runtime session on one thread. `exact`: graph optimizations off, so a QDQ model runs
    as written (each DequantizeLinear, the float op, each QuantizeLinear): its quantization's own
    figure, the same on every CPU. With them on (the default), ONNX Runtime fuses QDQ groups into
    its int8 kernels, whose results depend on the CPU: without AVX-512 VNNI its u8s8 `vpmaddubsw`
    path saturates int16 pair sums, which costs its int8 models up to 8 dB here."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    if exact:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def ort_feeds(sess, x, extra):
    """One feed per sample: the first input not fixed by the meta gets the sample."""
    names = [i.name for i in sess.get_inputs()]
    main = [n for n in names if n not in extra]
    if len(main) != 1:
        raise ValueError(f"inputs {names}: expected one sample input besides {sorted(extra)}")
    for s in x:
        yield {main[0]: s[None].astype(np.float32), **{k: v for k, v in extra.items() if k in names}}


def ort_stream(sess, x, extra, stream):
    """A streaming model (the meta's `stream`: {"state_in": ..., "state_out": ...}) run over the
    samples in order as one sequence, each step fed the state the last one returned (the first
    the meta's fixed value): the outputs 0, and the feeds used."""
    outs = [o.name for o in sess.get_outputs()]
    state = None
    ys, feeds = [], []
    for f in ort_feeds(sess, x, extra):
        if state is not None:
            f[stream["state_in"]] = state
        y0, state = sess.run([outs[0], stream["state_out"]], f)
        ys.append(y0.reshape(1, -1))
        feeds.append(f)
    return np.concatenate(ys), feeds


def ort_run(path, x, extra, stream=None, exact=False):
    sess = ort_session(path, exact)
    if stream:
        return ort_stream(sess, x, extra, stream)[0]
    return np.concatenate([sess.run(None, f)[0].reshape(1, -1) for f in ort_feeds(sess, x, extra)])


def qdq_run(path, x, extra):
    """Our `--qdq` export over the samples: an export with an LSTM carries its state as extra
    inputs `<node>/h_in`, `<node>/c_in` and outputs `<node>/h_out`, `<node>/c_out` (their
    defaults start the stream): each call is fed the state the last returned, as the .mq keeps it."""
    sess = ort_session(path)
    # The state inputs have initializers (their start values): ONNX Runtime lists them apart.
    ins = [i.name for i in sess.get_inputs()] + [i.name for i in sess.get_overridable_initializers()]
    state = [n for n in ins if n.endswith("/h_in") or n.endswith("/c_in")]
    if not state:
        return np.concatenate([sess.run(None, f)[0].reshape(1, -1) for f in ort_feeds(sess, x, extra)])
    outs = [o.name for o in sess.get_outputs()]
    main = [n for n in ins if n not in state and n not in extra]
    carried, ys = {}, []
    for s in x:
        feed = {main[0]: s[None].astype(np.float32), **carried}
        r = sess.run([outs[0]] + [n[:-3] + "_out" for n in state], feed)
        ys.append(r[0].reshape(1, -1))
        carried = dict(zip(state, r[1:]))
    return np.concatenate(ys)


def inline_if(src, dst, branch):
    """The model at `src` with its (one) top-level If replaced by the nodes of `branch`
    ("then_branch" / "else_branch"): for a model whose If condition depends only on an input the
    meta fixes (Silero's sample rate), which ONNX Runtime's quantize_static does not look into."""
    import onnx
    from onnx import helper
    m = onnx.load(str(src))
    g = m.graph
    k = next(i for i, n in enumerate(g.node) if n.op_type == "If")
    node = g.node[k]
    body = next(helper.get_attribute_value(a) for a in node.attribute if a.name == branch)
    new = list(body.node) + [helper.make_node("Identity", [o.name], [name], name=f"{node.name}/{name}")
                             for o, name in zip(body.output, node.output)]
    g.initializer.extend(body.initializer)
    nodes = list(g.node[:k]) + new + list(g.node[k + 1:])
    del g.node[:]
    g.node.extend(nodes)
    onnx.save(m, str(dst))


def tflite_run(path, x):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    try:  # the default resolver also has MediaPipe's Convolution2DTransposeBias
        it = Interpreter(str(path), num_threads=1)
        it.allocate_tensors()
    except RuntimeError:  # the XNNPACK delegate fails to prepare some graphs the builtin kernels run
        it = Interpreter(str(path), num_threads=1,
                         experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
        it.allocate_tensors()
    i, o = it.get_input_details()[0], it.get_output_details()[0]
    ys = []
    for s in x:
        v = s[None]
        if i["dtype"] == np.int8:
            sc, zp = i["quantization"]
            v = np.clip(np.round(v / sc) + zp, -128, 127).astype(np.int8)
        it.set_tensor(i["index"], v.astype(i["dtype"]))
        it.invoke()
        y = it.get_tensor(o["index"])
        if o["dtype"] == np.int8:
            sc, zp = o["quantization"]
            y = (y.astype(np.float32) - zp) * sc
        ys.append(y.reshape(1, -1))
    return np.concatenate(ys)


def cli(args, log):
    t0 = time.time()
    r = subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT)
    dt = time.time() - t0
    log.write(f"$ {' '.join(map(str, args))}\n{r.stdout}\n{r.stderr}\n(exit {r.returncode}, {dt:.1f} s)\n\n")
    log.flush()
    if r.returncode != 0:
        lines = [ln for ln in (r.stderr.strip() or r.stdout.strip()).splitlines() if ln.strip()]
        raise RuntimeError(" / ".join(lines[-3:]) if lines else f"exit {r.returncode}")
    return r.stdout, dt


def short(e):
    s = str(e).strip().replace("\n", " ").replace(str(pathlib.Path.cwd()) + "/", "")
    return s if len(s) < 400 else s[:400] + "..."


class CalibReader:
    def __init__(self, sess_path, x, extra, stream=None):
        sess = ort_session(sess_path)
        # A streaming model calibrates on the states the float model passes along the sequence.
        feeds = ort_stream(sess, x, extra, stream)[1] if stream else ort_feeds(sess, x, extra)
        self.it = iter(list(feeds))

    def get_next(self):
        return next(self.it, None)


def ort_quantize(float_onnx, calib, extra, out, stream=None, method="MinMax"):
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static
    t0 = time.time()
    reader = CalibReader(float_onnx, calib, extra, stream)
    quantize_static(str(float_onnx), str(out), reader, quant_format=QuantFormat.QDQ,
                    per_channel=True, activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                    calibrate_method=getattr(CalibrationMethod, method))
    return time.time() - t0


def cli_options(meta):
    """microquant's options for a zoo model's meta: --input-shape, --input-value, --output-name."""
    opts = []
    for name, dims in meta.get("input_shape", {}).items():
        opts += ["--input-shape", f"{name}={'x'.join(map(str, dims))}"]
    for name, v in meta.get("input_values", {}).items():
        vals = ",".join(str(float(x)) if v["dtype"].startswith("float") else str(int(x)) for x in v["value"])
        opts += ["--input-value", f"{name}={vals}"]
    for name in meta.get("outputs", []):
        opts += ["--output-name", name]
    return opts


def ort_float_model(model, fmt, meta, w):
    """The float ONNX model ONNX Runtime's quantize_static gets, and how it was made (None: the
    model itself): a TFLite model's tf2onnx conversion (made once into w), a model whose If
    depends only on a fixed input with that branch inlined."""
    float_onnx, how = model, None
    if fmt == "tflite":
        import tf2onnx
        float_onnx = w / "tf2onnx.onnx"
        if not float_onnx.exists():
            tf2onnx.convert.from_tflite(str(model), opset=17, output_path=str(float_onnx))
        how = "tf2onnx"
    if meta.get("ort_if_branch"):
        inline_if(model, w / "ort_float.onnx", meta["ort_if_branch"])
        float_onnx, how = w / "ort_float.onnx", f"the If's {meta['ort_if_branch']} inlined"
    return float_onnx, how


def bench(d, clip, work, log, observers=(), ort_methods=()):
    meta = json.loads((d / "meta.json").read_text())
    fmt = "onnx" if (d / "model.onnx").exists() else "tflite"
    model = d / f"model.{fmt}"
    row = {"model": d.name, "format": fmt, "kind": meta.get("kind", ""), "source": meta.get("source", ""),
           "license": meta.get("license", "")}
    w = work / d.name
    w.mkdir(parents=True, exist_ok=True)
    calib = np.load(d / "calib.npy")[:N_CALIB].astype(np.float32)
    evals = np.load(d / "eval.npy")[:N_EVAL].astype(np.float32)
    np.save(w / "calib.npy", calib)
    np.save(w / "eval.npy", evals)
    row["samples"] = f"{len(calib)}/{len(evals)}"
    extra = extra_inputs(meta)
    stream = meta.get("stream")
    ref = ort_run(model, evals, extra, stream) if fmt == "onnx" else tflite_run(model, evals)
    row["output_elems"] = int(ref.shape[1])
    classifier = meta.get("kind") == "classifier"

    # microquant
    opts = cli_options(meta)
    row["mq_options"] = " ".join(o if len(o) < 60 else o[:40] + "...(" + str(o.count(",") + 1) + " values)" for o in opts)
    args = [clip, "quantize", model, "--calib", w / "calib.npy", "-o", w / "model.mq", "--report", w / "report.json",
            "--qdq", w / "model_qdq.onnx"] + opts
    try:
        try:
            _, row["mq_time_s"] = cli(args, log)
        except RuntimeError as e:
            if "QDQ export" not in str(e):
                raise
            # The .mq is fine, its QDQ form is not: record why and quantize again without --qdq.
            row["qdq_error"] = short(e)
            _, row["mq_time_s"] = cli(args[:9] + args[11:], log)
        row["import"] = "ok"
    except Exception as e:
        row["import"] = "fail"
        row["mq_error"] = short(e)
    if row["import"] == "ok":
        try:
            cli([clip, "run", w / "model.mq", "--input", w / "eval.npy", "-o", w / "mq_out.npy"], log)
            insp = json.loads(cli([clip, "inspect", "--json", w / "model.mq"], log)[0])
            q = insp["tensors"][insp["outputs"][0]]["quant"]
            row["mq_bytes"], row["mq_arena"], row["macs"] = insp["file_bytes"], insp["arena_bytes"], insp["macs"]
            yq = np.load(w / "mq_out.npy").reshape(len(evals), -1).astype(np.float32)
            y = (yq - q["zero_point"]) * q["scale"]
            row["mq_sqnr"] = sqnr(ref, y)
            row["mq_sqnr_median"] = median_sqnr(ref, y)
            if classifier:
                row["mq_top1"] = top1(ref, y)
            row["run"] = "ok"
        except Exception as e:
            row["run"] = "fail"
            row["mq_error"] = short(e)
        if row.get("run") == "ok" and "qdq_error" not in row:
            try:
                yx = qdq_run(w / "model_qdq.onnx", evals, extra)
                steps = np.abs(np.round(yx / q["scale"]) + q["zero_point"] - yq)
                row["qdq_within1"] = float(np.mean(steps <= 1))
                row["qdq_maxdiff"] = int(steps.max())
            except Exception as e:
                row["qdq_error"] = short(e)
        # The default against each explicit observer (same samples, no QDQ export).
        for obs in observers:
            try:
                cli([clip, "quantize", model, "--calib", w / "calib.npy", "-o", w / f"model_{obs}.mq",
                     "--observer", obs] + opts, log)
                cli([clip, "run", w / f"model_{obs}.mq", "--input", w / "eval.npy", "-o", w / f"mq_out_{obs}.npy"], log)
                insp = json.loads(cli([clip, "inspect", "--json", w / f"model_{obs}.mq"], log)[0])
                qo = insp["tensors"][insp["outputs"][0]]["quant"]
                yo = np.load(w / f"mq_out_{obs}.npy").reshape(len(evals), -1).astype(np.float32)
                row[f"mq_sqnr_{obs}"] = sqnr(ref, (yo - qo["zero_point"]) * qo["scale"])
            except Exception as e:
                row[f"mq_error_{obs}"] = short(e)
        if row.get("run") == "ok":
            try:
                rep = json.loads((w / "report.json").read_text())
                choices = {}
                for layer in rep["layers"]:
                    if "choice" in layer:
                        choices[layer["choice"]] = choices.get(layer["choice"], 0) + 1
                row["mq_auto_choices"] = choices
            except Exception as e:
                row["mq_error_report"] = short(e)

    # ONNX Runtime quantize_static
    try:
        float_onnx, how = ort_float_model(model, fmt, meta, w)
        if how:
            row["ort_on"] = how
        row["ort_time_s"] = ort_quantize(float_onnx, calib, extra, w / "ort_qdq.onnx", stream)
        import onnx
        row["ort_quantize_nodes"] = sum(n.op_type == "QuantizeLinear" for n in onnx.load(str(w / "ort_qdq.onnx")).graph.node)
        # The figure compared with ours: ONNX Runtime's quantized model as written (exact QDQ);
        # beside it, what its fused int8 kernels give on this CPU.
        yo = ort_run(w / "ort_qdq.onnx", evals, extra, stream, exact=True)
        row["ort_sqnr"] = sqnr(ref, yo)
        row["ort_sqnr_cpu"] = sqnr(ref, ort_run(w / "ort_qdq.onnx", evals, extra, stream))
        row["ort_sqnr_median"] = median_sqnr(ref, yo)
        if classifier:
            row["ort_top1"] = top1(ref, yo)
    except Exception as e:
        row["ort_error"] = short(e)
    for method in ort_methods:
        key = "ort_sqnr_" + method.lower()
        try:
            float_onnx = w / "tf2onnx.onnx" if fmt == "tflite" else model
            if meta.get("ort_if_branch"):
                float_onnx = w / "ort_float.onnx"
            ort_quantize(float_onnx, calib, extra, w / f"ort_qdq_{method.lower()}.onnx", stream, method)
            row[key] = sqnr(ref, ort_run(w / f"ort_qdq_{method.lower()}.onnx", evals, extra, stream, exact=True))
        except Exception as e:
            row["ort_error_" + method.lower()] = short(e)

    # TFLite converter int8 (Keras models)
    if (d / "model_tflite_int8.tflite").exists():
        try:
            yt = tflite_run(d / "model_tflite_int8.tflite", evals)
            row["tflite_sqnr"] = sqnr(ref, yt)
            row["tflite_sqnr_median"] = median_sqnr(ref, yt)
            if classifier:
                row["tflite_top1"] = top1(ref, yt)
        except Exception as e:
            row["tflite_error"] = short(e)
    return row


def f1(v, fmt="{:.1f}"):
    return "–" if v is None else fmt.format(v)


def markdown(rows):
    head = ("| model | format | import + quantize | run | SQNR microquant (dB) | SQNR ORT (dB) | Δ (dB) | top-1 mq / ORT "
            "| QDQ export vs .mq: within 1 step, max | time mq / ORT (s) |")

    def sq(r, k):
        if k not in r:
            return "–"
        return f"{r[k]:.1f}" + (f" (med {r[k + '_median']:.1f})" if k + "_median" in r else "")

    out = [head, "|" + "|".join(["---"] * (head.count("|") - 1)) + "|"]
    for r in rows:
        d = r["mq_sqnr"] - r["ort_sqnr"] if "mq_sqnr" in r and "ort_sqnr" in r else None
        t1 = "–"
        if "mq_top1" in r or "ort_top1" in r:
            t1 = f"{f1(r.get('mq_top1'), '{:.2f}')} / {f1(r.get('ort_top1'), '{:.2f}')}"
        qdq = (f"{100 * r['qdq_within1']:.2f} %, {r['qdq_maxdiff']}" if "qdq_within1" in r
               else ("no QDQ form (error below)" if "qdq_error" in r else "–"))
        ort = sq(r, "ort_sqnr") + (f" ({r['ort_on']})" if r.get("ort_on") and "ort_sqnr" in r else "")
        if "ort_sqnr_cpu" in r:
            ort += f"; fused {r['ort_sqnr_cpu']:.1f}"
        if "ort_error" in r:
            ort = "error"
        elif r.get("ort_quantize_nodes") == 0:
            ort = "not quantized"
            d = None
        if "tflite_sqnr" in r:
            ort += f"; TFLite int8 {sq(r, 'tflite_sqnr')}"
            t1 += f"; TFLite {f1(r.get('tflite_top1'), '{:.2f}')}"
        out.append(f"| {r['model']} | {r['format']} | {r.get('import', 'error')} | {r.get('run', '–')} "
                   f"| {sq(r, 'mq_sqnr')} | {ort} | {f1(d, '{:+.1f}')} | {t1} | {qdq} "
                   f"| {f1(r.get('mq_time_s'))} / {f1(r.get('ort_time_s'))} |")
    notes = []
    for r in rows:
        for key, what in (("error", "benchmark"), ("mq_error", "microquant"), ("qdq_error", "microquant --qdq"),
                          ("ort_error", "ONNX Runtime quantize_static"), ("tflite_error", "TFLite int8")):
            if key in r:
                notes.append(f"- **{r['model']}**, {what}: `{r[key]}`")
        if r.get("ort_quantize_nodes") == 0:
            notes.append(f"- **{r['model']}**, ONNX Runtime quantize_static: the model came back without a "
                         f"QuantizeLinear (nothing quantized), so its SQNR is not a quantization figure")
    if notes:
        out += ["", "Errors, as the tools printed them:", ""] + notes
    return "\n".join(out)


def markdown_calibration(rows, observers, ort_methods):
    """The default calibration against microquant's other observers (`--observers`, e.g. auto) and
    ONNX Runtime's calibrators, SQNR (dB) on the same evaluation samples."""
    cols = ["default"] + observers + [f"ORT {m}" for m in ["MinMax"] + ort_methods]
    keys = ["mq_sqnr"] + [f"mq_sqnr_{o}" for o in observers] + ["ort_sqnr"] + [f"ort_sqnr_{m.lower()}" for m in ort_methods]
    head = "| model | " + " | ".join(cols) + " | default − best ORT | auto's choices (layers) |"
    out = [head, "|" + "|".join(["---"] * (head.count("|") - 1)) + "|"]
    for r in rows:
        if not any(k in r for k in keys[1:]):
            continue
        ort = [r[k] for k in keys if k.startswith("ort_") and k in r and r.get("ort_quantize_nodes")]
        d = r["mq_sqnr"] - max(ort) if "mq_sqnr" in r and ort else None
        ch = ", ".join(f"{k} {v}" for k, v in sorted(r.get("mq_auto_choices", {}).items(), key=lambda kv: -kv[1]))
        out.append(f"| {r['model']} | " + " | ".join(f1(r.get(k)) for k in keys) + f" | {f1(d, '{:+.1f}')} | {ch} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--zoo", required=True)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--work")
    ap.add_argument("--md")
    ap.add_argument("--json")
    ap.add_argument("--only", nargs="*", default=[])
    ap.add_argument("--observers", default="", help="comma-separated microquant observers to compare with the default")
    ap.add_argument("--ort-methods", default="", help="comma-separated further ONNX Runtime CalibrationMethods (Entropy, ...)")
    a = ap.parse_args()
    observers = [o for o in a.observers.split(",") if o]
    ort_methods = [m for m in a.ort_methods.split(",") if m]
    zoo = pathlib.Path(a.zoo)
    work = pathlib.Path(a.work or zoo.parent / "zoo-bench")
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    with open(work / "bench.log", "a" if a.only else "w") as log:
        for d in sorted(p.parent for p in zoo.glob("*/meta.json")):
            if a.only and d.name not in a.only:
                continue
            t0 = time.time()
            try:
                row = bench(d, a.cli, work, log, observers, ort_methods)
            except Exception as e:
                traceback.print_exc()
                row = {"model": d.name, "format": "?", "error": short(e)}
            rows.append(row)
            print(f"[bench_zoo] {d.name} ({time.time() - t0:.0f} s):",
                  {k: v for k, v in row.items() if k not in ("source", "license", "mq_options")}, flush=True)
    if a.only and a.json and pathlib.Path(a.json).exists():
        # A partial run updates its models' rows of the previous full run.
        done = {r["model"] for r in rows}
        rows = sorted([r for r in json.loads(pathlib.Path(a.json).read_text())["models"] if r["model"] not in done] + rows,
                      key=lambda r: r["model"])
    md = markdown(rows)
    ok = [r for r in rows if r.get("run") == "ok"]
    summary = (f"{len(ok)}/{len(rows)} models import, quantize and run in microquant; "
               f"{sum(1 for r in ok if r.get('ort_quantize_nodes') and r['mq_sqnr'] >= r['ort_sqnr'] - 0.5)}/"
               f"{sum(1 for r in ok if r.get('ort_quantize_nodes'))} (those ONNX Runtime quantized) within 0.5 dB of ONNX Runtime or better; "
               f"{sum(1 for r in ok if r.get('qdq_within1', 0) >= 0.99)}/{len(ok)} with the QDQ export within one step "
               f"of the .mq on >= 99 % of output elements")
    if observers or ort_methods:
        md += "\n\n" + markdown_calibration(rows, observers, ort_methods)
    print(md + "\n\n" + summary)
    if a.md:
        pathlib.Path(a.md).write_text(md + "\n\n" + summary + "\n")
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps({"summary": summary, "models": rows}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
