"""Real inputs of the zoo (run by build_zoo.py with .venv-zoo's Python): the photos that ship in
the scikit-image wheel and scikit-learn's bundled digits, written to <out>/inputs.npz.

Photos are split by picture: calibration crops come from one set of pictures, evaluation crops
from others, so the evaluation samples were never seen by any calibration.

  calib_rgb, eval_rgb   uint8 [N, 256, 256, 3] random square crops (scale 0.5-1 of the short
                        side, random flips) of the pictures, resized to 256x256
  digits_x, digits_y    float32 [1797, 8, 8] in [0, 1] and int64 labels (sklearn load_digits)
"""
import sys

import numpy as np
import skimage.data as sd
from skimage.color import gray2rgb, rgba2rgb
from skimage.transform import resize
from sklearn.datasets import load_digits

# Every picture of the wheel that needs no download (skimage.data: part of the distribution).
CALIB_PICTURES = ["astronaut", "coffee", "hubble_deep_field", "immunohistochemistry", "retina", "camera", "coins",
                  "moon", "brick", "gravel", "horse", "page"]
EVAL_PICTURES = ["chelsea", "rocket", "colorwheel", "logo", "clock", "grass", "text", "stereo_motorcycle"]


def picture(name):
    x = getattr(sd, name)()
    if isinstance(x, tuple):  # stereo_motorcycle: (left, right, disparity)
        x = x[0]
    if x.ndim == 2:
        x = gray2rgb(x)
    if x.shape[-1] == 4:
        x = rgba2rgb(x)
    x = np.asarray(x)
    if x.dtype != np.uint8:
        x = (np.clip(x, 0, 1) * 255).round().astype(np.uint8)
    return x


def crops(names, n, seed, size=256):
    rng = np.random.default_rng(seed)
    pics = [picture(p) for p in names]
    out = np.empty((n, size, size, 3), np.uint8)
    for i in range(n):
        p = pics[i % len(pics)]
        h, w = p.shape[:2]
        s = int(min(h, w) * rng.uniform(0.5, 1.0))
        y, x = rng.integers(0, h - s + 1), rng.integers(0, w - s + 1)
        c = p[y:y + s, x:x + s]
        if rng.random() < 0.5:
            c = c[:, ::-1]
        out[i] = (resize(c, (size, size), anti_aliasing=True, preserve_range=True)).round().clip(0, 255).astype(np.uint8)
    return out


def main(out):
    d = load_digits()
    np.savez_compressed(out, calib_rgb=crops(CALIB_PICTURES, 48, 1), eval_rgb=crops(EVAL_PICTURES, 24, 2),
                        digits_x=(d.images / 16.0).astype(np.float32), digits_y=d.target.astype(np.int64))


if __name__ == "__main__":
    main(sys.argv[1])
