"""Models that ship inside public wheels (run by build_zoo.py with .venv-zoo's Python, where the
wheels of requirements-zoo-models.txt are installed with --no-deps: only their model files are
read), with real inputs:

  ppocr_det / ppocr_cls / ppocr_rec  rapidocr_onnxruntime 1.4.4 (PaddleOCR PP-OCRv4 det and rec,
      PP-OCR mobile v2.0 direction classifier, converted to ONNX by paddle2onnx; Apache-2.0).
      det: scene text (words written with Pillow's default font on the photos of inputs.npz) and,
      for calibration only, square crops of skimage's `page`, at 320x320; cls / rec: text-line
      crops of skimage's `page` (calibration) and `text` (evaluation) pictures, half of the cls
      crops turned upside down.
  silero_vad  silero-vad 6.2.3 (silero_vad.onnx; MIT): 576-sample chunks (64 samples of context +
      512) at 16 kHz of a synthesized speech-like waveform (glottal pulse train with a moving pitch
      through moving formant resonators, syllables separated by pauses, with noise: no audio file
      ships in the wheels at hand). The state input is fixed at zeros and sr at 16000; the chunks
      are consecutive and run as one stream (the state carried from chunk to chunk; the
      `--input-value` zeros are the state the stream starts from).
  mp_*  mediapipe 0.10.14 (mediapipe/modules/*/*.tflite; Apache-2.0): face detection (short
      range), face landmarks, palm detection (lite), hand landmarks (lite), selfie segmentation,
      pose detection, iris landmarks, on the photos resized to each model's input.

Usage: zoo_wheels.py OUT_DIR INPUTS_NPZ [NAME ...]
"""
import importlib.util
import json
import pathlib
import sys

import numpy as np
import scipy.signal as ss
import skimage.data as sd
from skimage.color import gray2rgb
from skimage.transform import resize
from PIL import Image, ImageDraw, ImageFont

N_CALIB, N_EVAL = 32, 16


def package_dir(name):
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise SystemExit(f"{name} is not installed (requirements-zoo-models.txt)")
    return pathlib.Path(spec.origin).parent


def version(dist):
    from importlib.metadata import version as v
    return v(dist)


def save(out, name, src_file, ext, calib, evals, meta):
    d = out / name
    d.mkdir(parents=True, exist_ok=True)
    (d / f"model.{ext}").write_bytes(pathlib.Path(src_file).read_bytes())
    np.save(d / "calib.npy", calib.astype(np.float32))
    np.save(d / "eval.npy", evals.astype(np.float32))
    (d / "meta.json").write_text(json.dumps(meta, indent=1))
    print("wheels", name, "ok", calib.shape, flush=True)


def resized(rgb, h, w):
    return np.stack([resize(x, (h, w), anti_aliasing=True, preserve_range=True) for x in rgb]).astype(np.float32)


def text_lines(picture, n, w_over_h, seed, flip_half=False):
    """n crops of a text picture with the aspect ratio w_over_h, heights 24-48 px, as float 0-255 RGB."""
    p = getattr(sd, picture)()
    p = gray2rgb(p) if p.ndim == 2 else p[..., :3]
    rng = np.random.default_rng(seed)
    H, W = p.shape[:2]
    out = []
    for i in range(n):
        h = int(rng.integers(24, 49))
        w = min(W, int(h * w_over_h))
        y, x = rng.integers(0, H - h + 1), rng.integers(0, W - w + 1)
        c = p[y:y + h, x:x + w].astype(np.float32)
        if flip_half and i % 2:
            c = c[::-1, ::-1]
        out.append(c)
    return out


def text_pages(picture, n, seed, size=320):
    """n square crops of a text picture (side 120 px up to the picture's height, anywhere in it),
    resized to size x size, as float 0-255 RGB: what an OCR detector is given."""
    p = getattr(sd, picture)()
    p = (gray2rgb(p) if p.ndim == 2 else p[..., :3]).astype(np.float32)
    rng = np.random.default_rng(seed)
    H, W = p.shape[:2]
    out = []
    for _ in range(n):
        s = int(rng.integers(120, H + 1))
        y, x = rng.integers(0, H - s + 1), rng.integers(0, W - s + 1)
        out.append(resize(p[y:y + s, x:x + s], (size, size), anti_aliasing=True, preserve_range=True))
    return np.stack(out).astype(np.float32)


SIGN_WORDS = ("quick brown fox jumps over the lazy dog open daily coffee station exit north street market "
              "sale today fresh bread platform hotel city centre parking only 24 hours welcome bus stop").split()


def scene_text(photos, seed, size=320):
    """The photos at size x size with 3-6 lines of 1-3 words written on them (Pillow's default
    font, 16-40 px, dark on light backgrounds and light on dark): scene text, as a sign or a
    label shows it."""
    rng = np.random.default_rng(seed)
    out = []
    for p in resized(photos, size, size):
        im = Image.fromarray(np.clip(p, 0, 255).astype(np.uint8))
        d = ImageDraw.Draw(im)
        for _ in range(int(rng.integers(3, 7))):
            fs = int(rng.integers(16, 41))
            font = ImageFont.load_default(size=fs)
            words = " ".join(rng.choice(SIGN_WORDS, int(rng.integers(1, 4))))
            x, y = int(rng.integers(0, size // 3)), int(rng.integers(0, size - fs))
            b = d.textbbox((x, y), words, font=font)
            under = np.asarray(im)[b[1]:min(b[3], size), b[0]:min(b[2], size)]
            d.text((x, y), words, font=font, fill=(20, 20, 20) if under.size == 0 or under.mean() > 110 else (240, 240, 240))
        out.append(np.asarray(im, np.float32))
    return np.stack(out)


def ocr_batch(crops, h, w):
    """PaddleOCR's cls/rec preprocessing: resize to height h keeping the ratio (at most w), pad
    right with zeros, (x/255 - 0.5)/0.5, NCHW."""
    b = np.zeros((len(crops), 3, h, w), np.float32)
    for i, c in enumerate(crops):
        cw = min(w, max(1, int(round(c.shape[1] * h / c.shape[0]))))
        r = resize(c, (h, cw), anti_aliasing=True, preserve_range=True) / 255.0
        b[i, :, :, :cw] = ((r - 0.5) / 0.5).transpose(2, 0, 1)
    return b


def speech_like(seconds, seed, sr=16000):
    """Syllables: a glottal pulse train (pitch gliding 90-220 Hz) through two formant resonators
    whose frequencies move, 80-300 ms long, separated by 50-400 ms of low noise."""
    rng = np.random.default_rng(seed)
    out = []
    while sum(len(o) for o in out) < seconds * sr:
        n = int(rng.uniform(0.08, 0.3) * sr)
        f0 = np.linspace(rng.uniform(90, 220), rng.uniform(90, 220), n)
        phase = np.cumsum(f0 / sr)
        src = (np.diff(np.floor(phase), prepend=0) > 0).astype(np.float64)
        y = src
        for f1, f2, bw in ((rng.uniform(300, 900), rng.uniform(300, 900), 80), (rng.uniform(900, 2500), rng.uniform(900, 2500), 120)):
            f = (f1 + f2) / 2
            r = np.exp(-np.pi * bw / sr)
            y = ss.lfilter([1 - r], [1, -2 * r * np.cos(2 * np.pi * f / sr), r * r], y)
        env = np.sin(np.linspace(0, np.pi, n)) ** 0.5
        out.append(y * env / (np.abs(y).max() + 1e-9) * rng.uniform(0.2, 0.8))
        out.append(rng.normal(0, 0.003, int(rng.uniform(0.05, 0.4) * sr)))
    x = np.concatenate(out)[:seconds * sr]
    return (x + rng.normal(0, 0.002, len(x))).astype(np.float32)


def chunks(x, n, size=576, hop=512):
    return np.stack([x[i * hop:i * hop + size] for i in range(n)])


def main(out, inputs, only):
    out = pathlib.Path(out)
    inp = np.load(inputs)
    calib_rgb, eval_rgb = inp["calib_rgb"][:N_CALIB], inp["eval_rgb"][:N_EVAL]
    want = lambda n: not only or n in only  # noqa: E731
    failed = []

    def build(name, fn):
        if not want(name):
            return
        try:
            fn(name)
        except Exception as e:  # one missing wheel or model must not stop the others
            failed.append(name)
            print("wheels", name, "FAILED", repr(e), flush=True)

    # RapidOCR (PP-OCR) ------------------------------------------------------------------------
    def ocr(name):
        models = package_dir("rapidocr_onnxruntime") / "models"
        src = "rapidocr_onnxruntime " + version("rapidocr_onnxruntime")
        lic = "Apache-2.0 (PaddleOCR models, packaged by RapidOCR)"
        if name == "ppocr_det":
            # RapidOCR's det preprocessing: x / 255, mean 0.5, std 0.5.
            norm = lambda rgb: ((rgb / 255.0 - 0.5) / 0.5).transpose(0, 3, 1, 2)  # noqa: E731
            half = N_CALIB // 2
            calib = np.concatenate([text_pages("page", half, 5), scene_text(calib_rgb[:N_CALIB - half], 7)])
            save(out, name, models / "ch_PP-OCRv4_det_infer.onnx", "onnx", norm(calib), norm(scene_text(eval_rgb, 8)),
                 dict(source=src + ": models/ch_PP-OCRv4_det_infer.onnx", license=lic, kind="segmenter",
                      input_layout="NCHW", input_shape={"x": [1, 3, 320, 320]},
                      inputs="calibration: square crops of skimage page and photos with words written on them; "
                             "evaluation: other photos with other words; 320x320, RapidOCR's normalization"))
        elif name == "ppocr_cls":
            save(out, name, models / "ch_ppocr_mobile_v2.0_cls_infer.onnx", "onnx",
                 ocr_batch(text_lines("page", N_CALIB, 4, 1, True), 48, 192),
                 ocr_batch(text_lines("text", N_EVAL, 4, 2, True), 48, 192),
                 dict(source=src + ": models/ch_ppocr_mobile_v2.0_cls_infer.onnx", license=lic, kind="classifier",
                      input_layout="NCHW", input_shape={"x": [1, 3, 48, 192]},
                      inputs="text-line crops of skimage page (calib) / text (eval), half upside down"))
        else:
            save(out, name, models / "ch_PP-OCRv4_rec_infer.onnx", "onnx",
                 ocr_batch(text_lines("page", N_CALIB, 6.67, 3), 48, 320),
                 ocr_batch(text_lines("text", N_EVAL, 6.67, 4), 48, 320),
                 dict(source=src + ": models/ch_PP-OCRv4_rec_infer.onnx", license=lic, kind="sequence",
                      input_layout="NCHW", input_shape={"x": [1, 3, 48, 320]},
                      inputs="text-line crops of skimage page (calib) / text (eval), 48x320"))

    for n in ("ppocr_det", "ppocr_cls", "ppocr_rec"):
        build(n, ocr)

    # Silero VAD -------------------------------------------------------------------------------
    def vad(name):
        f = package_dir("silero_vad") / "data" / "silero_vad.onnx"
        save(out, name, f, "onnx", chunks(speech_like(2, 10), N_CALIB), chunks(speech_like(2, 11), N_EVAL),
             dict(source="silero-vad " + version("silero-vad") + ": silero_vad/data/silero_vad.onnx", license="MIT",
                  kind="regressor", input_layout="NC", input_shape={"input": [1, 576]},
                  input_values={"sr": {"dtype": "int64", "shape": [], "value": [16000]},
                                "state": {"dtype": "float32", "shape": [2, 1, 128], "value": [0.0] * 256}},
                  outputs=["output"],
                  # A stream: each chunk continues from the state the previous one returned.
                  stream={"state_in": "state", "state_out": "stateN"},
                  # Its If (on sr == 16000) is left whole by quantize_static: give it the branch.
                  ort_if_branch="then_branch",
                  inputs="consecutive 576-sample chunks (64 samples of context + 512) at 16 kHz of a synthesized "
                         "speech-like waveform (zoo_wheels.speech_like), run as one stream"))

    build("silero_vad", vad)

    # MediaPipe --------------------------------------------------------------------------------
    mp = {  # name: (file under mediapipe/modules, size, input range)
        "mp_face_detection": ("face_detection/face_detection_short_range.tflite", 128, (-1, 1)),
        "mp_face_landmark": ("face_landmark/face_landmark.tflite", 192, (0, 1)),
        "mp_palm_detection": ("palm_detection/palm_detection_lite.tflite", 192, (0, 1)),
        "mp_hand_landmark": ("hand_landmark/hand_landmark_lite.tflite", 224, (0, 1)),
        "mp_selfie_segmentation": ("selfie_segmentation/selfie_segmentation.tflite", 256, (0, 1)),
        "mp_pose_detection": ("pose_detection/pose_detection.tflite", 224, (-1, 1)),
        "mp_iris_landmark": ("iris_landmark/iris_landmark.tflite", 64, (0, 1)),
    }

    def mediapipe(name):
        rel, size, (lo, hi) = mp[name]
        f = package_dir("mediapipe") / "modules" / rel
        prep = lambda rgb: resized(rgb, size, size) / 255.0 * (hi - lo) + lo  # noqa: E731
        kind = "segmenter" if "segmentation" in name else "detector" if "detection" in name else "landmarks"
        save(out, name, f, "tflite", prep(calib_rgb), prep(eval_rgb),
             dict(source="mediapipe " + version("mediapipe") + ": mediapipe/modules/" + rel, license="Apache-2.0",
                  kind=kind, input_layout="NHWC",
                  inputs=f"photos of inputs.npz resized to {size}x{size}, scaled to [{lo}, {hi}]"))

    for n in mp:
        build(n, mediapipe)
    if failed:
        sys.exit(f"failed: {' '.join(failed)}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], set(sys.argv[3:]))
