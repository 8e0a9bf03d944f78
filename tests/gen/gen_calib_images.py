"""Golden data of `microquant quantize --calib DIR --preprocess SPEC` (cli/src/preprocess.rs):
small PNG and JPEG images and what Pillow and numpy make of them, the way a PyTorch input
pipeline built on Pillow does:

    img = Image.open(path).convert("RGB")               # mode=gray: convert("L")
    img = img.resize((W, H), Image.BILINEAR)            # resize=WxH
    x = np.asarray(img, np.float32) * np.float32(scale)
    x = (x - mean) / std                                # float32, per channel
    x = x.transpose(2, 0, 1)                            # layout=nchw

Writes tests/golden/calib_images/: the images, one `<case>.npy` per case (the samples, stacked
in file-name order, as `--calib DIR` reads them) and cases.json (specs, files, tolerances: 0 for
PNG, bit for bit; JPEG decoders round their IDCT and upsampling differently, so a JPEG gets a
tolerance of a few 8-bit steps after the normalization).

Run with the repository's oracle venv (Pillow and numpy pinned in tests/gen/requirements.txt):
    .venv/bin/python tests/gen/gen_calib_images.py
"""

import json
import os

import numpy as np
import PIL
from PIL import Image

PILLOW = "13.0.0"
NUMPY = "2.4.6"
assert PIL.__version__ == PILLOW, f"Pillow {PIL.__version__}, expected {PILLOW}"
assert np.__version__ == NUMPY, f"numpy {np.__version__}, expected {NUMPY}"

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden", "calib_images")
rng = np.random.default_rng(20261206)


def smooth_noise(h, w, c):
    """Gradients plus noise: edges and flat parts for the resampling filter."""
    y, x = np.mgrid[0:h, 0:w]
    planes = [x * 255 // max(w - 1, 1), y * 255 // max(h - 1, 1), ((x + y) * 97) % 256, 255 - (x * 7 % 256)]
    base = np.stack(planes, -1)[..., :c]
    noise = rng.integers(-40, 41, size=(h, w, c))
    return np.clip(base + noise, 0, 255).astype(np.uint8)


def save(name, arr, mode):
    img = Image.fromarray(arr.squeeze(-1) if arr.shape[-1] == 1 else arr, mode)
    if mode == "P":
        img = Image.fromarray(arr[..., 0], "L").convert("P")
    path = os.path.join(OUT, name)
    if name.endswith(".jpg"):
        img.save(path, quality=90)
    else:
        img.save(path)
    return name


def preprocess(path, spec):
    img = Image.open(os.path.join(OUT, path))
    img = img.convert("L" if spec.get("mode") == "gray" else "RGB")
    if "resize" in spec:
        img = img.resize(spec["resize"], Image.BILINEAR)
    x = np.asarray(img, np.float32)
    if x.ndim == 2:
        x = x[..., None]
    x = x * np.float32(spec.get("scale", 1.0))
    mean = np.array(spec.get("mean", [0.0]), np.float32)
    std = np.array(spec.get("std", [1.0]), np.float32)
    x = (x - mean) / std
    if spec.get("layout", "nchw") == "nchw":
        x = x.transpose(2, 0, 1)
    return np.ascontiguousarray(x, np.float32)


def spec_text(spec):
    parts = []
    if "resize" in spec:
        parts.append(f"resize={spec['resize'][0]}x{spec['resize'][1]}")
    for k in ("mode", "layout"):
        if k in spec:
            parts.append(f"{k}={spec[k]}")
    if "scale_text" in spec:
        parts.append(f"scale={spec['scale_text']}")
    for k in ("mean", "std"):
        if k in spec:
            parts.append(f"{k}=" + "/".join(repr(v) for v in spec[k]))
    return ",".join(parts)


def main():
    os.makedirs(OUT, exist_ok=True)
    cases = []

    # RGB, NCHW, ImageNet normalization: shrink, enlarge, same size, RGBA, gray and palette
    # sources, a strong shrink (wide filter), a JPEG.
    rgb = "rgb_nchw"
    files = [
        save(f"{rgb}/a_rgb_40x30.png", smooth_noise(30, 40, 3), "RGB"),
        save(f"{rgb}/b_rgb_7x5.png", smooth_noise(5, 7, 3), "RGB"),
        save(f"{rgb}/c_rgb_16x12.png", smooth_noise(12, 16, 3), "RGB"),
        save(f"{rgb}/d_rgba_33x50.png", smooth_noise(50, 33, 4), "RGBA"),
        save(f"{rgb}/e_gray_20x20.png", smooth_noise(20, 20, 1), "L"),
        save(f"{rgb}/f_palette_25x9.png", smooth_noise(9, 25, 1), "P"),
        save(f"{rgb}/g_rgb_130x97.png", smooth_noise(97, 130, 3), "RGB"),
        save(f"{rgb}/h_photo_48x36.jpg", smooth_noise(36, 48, 3), "RGB"),
    ]
    spec = {
        "resize": (16, 12),
        "layout": "nchw",
        "scale": 1 / 255,
        "scale_text": "1/255",
        "mean": [0.485, 0.456, 0.406],
        "std": [0.229, 0.224, 0.225],
    }
    cases.append((rgb, spec, files))

    # Gray, NCHW [1, 8, 8]: the input of tests/golden/peers/cnn_nchw.onnx (the CLI test
    # quantizes it from these images and from this .npy and expects the same .mq).
    gray = "gray_8x8"
    files = [
        save(f"{gray}/img_{i:02d}.png", smooth_noise(h, w, c), mode)
        for i, (h, w, c, mode) in enumerate(
            [(28, 28, 1, "L"), (10, 14, 3, "RGB"), (8, 8, 1, "L"), (31, 17, 3, "RGB"), (5, 6, 4, "RGBA"), (64, 48, 3, "RGB")]
        )
    ]
    spec = {"resize": (8, 8), "mode": "gray", "scale": 1 / 255, "scale_text": "1/255", "mean": [0.5], "std": [0.25]}
    cases.append((gray, spec, files))

    # RGB, NHWC, no normalization, a tall target.
    nhwc = "rgb_nhwc"
    files = [
        save(f"{nhwc}/a_{w}x{h}.png", smooth_noise(h, w, 3), "RGB") for (w, h) in [(9, 40), (30, 11), (3, 3)]
    ]
    spec = {"resize": (9, 13), "layout": "nhwc"}
    cases.append((nhwc, spec, files))

    out = {
        "generator": f"tests/gen/gen_calib_images.py (Pillow {PILLOW}, numpy {NUMPY})",
        "cases": [],
    }
    for name, spec, files in cases:
        xs = np.stack([preprocess(f, spec) for f in files])
        np.save(os.path.join(OUT, f"{name}.npy"), xs)
        out["cases"].append(
            {
                "name": name,
                "spec": spec_text(spec),
                "expected": f"{name}.npy",
                "images": [{"file": f, "tolerance": 0.0 if f.endswith(".png") else 0.1} for f in files],
            }
        )
    with open(os.path.join(OUT, "cases.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    for d in ("rgb_nchw", "gray_8x8", "rgb_nhwc"):
        os.makedirs(os.path.join(OUT, d), exist_ok=True)
    main()
