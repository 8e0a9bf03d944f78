"""Builds the real-model zoo: pinned virtual environments (created here, idempotently), real
inputs, then every model as <out>/<name>/model.{onnx,tflite} + calib.npy + eval.npy + meta.json.

  .venv-torch  (tests/zoo/requirements-torch.txt)   zoo_torch.py: torchvision / ViT / GRU / transformer
  .venv-zoo    (tests/zoo/requirements-zoo.txt, + requirements-zoo-models.txt with --no-deps)
               zoo_inputs.py (photos, digits, waveform), zoo_wheels.py (PP-OCR, Silero VAD, MediaPipe)
  .venv        (the repository's oracle venv, tests/gen/requirements.txt: tensorflow_cpu 2.21.0; made
               here only if absent) zoo_keras.py: Keras applications; also bench_zoo.py's venv

The venvs live at the repository root (git-ignored). A venv is (re)installed only when its
requirement files changed (their hash is kept in the venv); a model is rebuilt only when its
meta.json is missing. Run with any Python >= 3.10:

  python3 tests/zoo/build_zoo.py [--out target/zoo] [--only NAME ...]
"""
import argparse
import hashlib
import pathlib
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent

VENVS = {
    ".venv-torch": (["requirements-torch.txt"], []),
    ".venv-zoo": (["requirements-zoo.txt"], ["requirements-zoo-models.txt"]),
}

TORCH_MODELS = ["mobilenet_v2", "mobilenet_v3_small", "resnet18", "squeezenet1_1", "efficientnet_b0",
                "shufflenet_v2_x0_5", "mnasnet0_5", "vit_small", "gru_digits", "transformer_digits"]
WHEEL_MODELS = ["ppocr_det", "ppocr_cls", "ppocr_rec", "silero_vad", "mp_face_detection", "mp_face_landmark",
                "mp_palm_detection", "mp_hand_landmark", "mp_selfie_segmentation", "mp_pose_detection",
                "mp_iris_landmark"]
KERAS_MODELS = ["keras_mobilenet_v2", "keras_mobilenet_v3_small"]


def log(*a):
    print("[build_zoo]", *a, flush=True)


def ensure_venv(name):
    """Creates ROOT/name and installs its pinned requirements unless the same pins are installed."""
    reqs, nodeps = VENVS[name]
    venv = ROOT / name
    h = hashlib.sha256()
    for r in reqs + nodeps:
        h.update((HERE / r).read_bytes())
    stamp = venv / ".zoo-requirements.sha256"
    py = venv / "bin" / "python"
    if py.exists() and stamp.exists() and stamp.read_text().strip() == h.hexdigest():
        return py
    t0 = time.time()
    log(f"installing {name} (pinned: {', '.join(reqs + nodeps)})")
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    for r in reqs:
        subprocess.run(pip + ["-r", str(HERE / r)], check=True)
    for r in nodeps:
        subprocess.run(pip + ["--no-deps", "-r", str(HERE / r)], check=True)
    stamp.write_text(h.hexdigest() + "\n")
    log(f"{name} ready in {time.time() - t0:.0f} s")
    return py


def ensure_oracle_venv():
    """The repository's oracle venv (.venv, tests/gen/requirements.txt: tensorflow_cpu, ai-edge-litert,
    onnxruntime, tf2onnx): used as it is when present, created from those pins when not."""
    py = ROOT / ".venv" / "bin" / "python"
    if py.exists():
        return py
    log("installing .venv (tests/gen/requirements.txt, + tf2onnx 1.17.0 with --no-deps)")
    subprocess.run([sys.executable, "-m", "venv", str(ROOT / ".venv")], check=True)
    pip = [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run(pip + ["-r", str(ROOT / "tests" / "gen" / "requirements.txt")], check=True)
    subprocess.run(pip + ["--no-deps", "tf2onnx==1.17.0"], check=True)
    return py


def missing(out, names, only):
    return [n for n in names if (not only or n in only) and not (out / n / "meta.json").exists()]


def run(py, script, *args):
    t0 = time.time()
    r = subprocess.run([str(py), str(HERE / script), *map(str, args)])
    log(f"{script} {' '.join(map(str, args[2:]))}: exit {r.returncode} in {time.time() - t0:.0f} s")
    return r.returncode == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(ROOT / "target" / "zoo"))
    ap.add_argument("--only", nargs="*", default=[])
    ap.add_argument("--venvs-only", action="store_true", help="only create the venvs")
    a = ap.parse_args()
    if a.venvs_only:
        ensure_venv(".venv-zoo"), ensure_venv(".venv-torch"), ensure_oracle_venv()
        return
    out = pathlib.Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    only = set(a.only)
    ok = True
    zoo_py = ensure_venv(".venv-zoo")
    inputs = out / "inputs.npz"
    if not inputs.exists():
        ok &= run(zoo_py, "zoo_inputs.py", inputs)
    todo = missing(out, WHEEL_MODELS, only)
    if todo:
        ok &= run(zoo_py, "zoo_wheels.py", out, inputs, *todo)
    todo = missing(out, KERAS_MODELS, only)
    if todo:
        ok &= run(ensure_oracle_venv(), "zoo_keras.py", out, inputs, *todo)
    todo = missing(out, TORCH_MODELS, only)
    if todo:
        ok &= run(ensure_venv(".venv-torch"), "zoo_torch.py", out, inputs, *todo)
    built = sorted(p.parent.name for p in out.glob("*/meta.json"))
    log(f"{len(built)} models in {out}: {' '.join(built)}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
