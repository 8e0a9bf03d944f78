"""Calibration data shared by gen_quant.py, gen_quant_torch.py and the Rust tests
(tests/src/quant.rs regenerates the same f32 values bit for bit): SplitMix64 draws turned into
float32 with exact operations only, so nothing large is stored in the golden files.

u      = (next_u64() >> 40) * 2^-24                       (exact float32 in [0, 1))
z      = ((((u0 + u1) + u2) + u3) - 2) * 1.7320508        (float32 ops in this order)

Data sets (4 batches of 4096 values, seed = base seed + batch index):
  normal    z                                   (draws u0..u3 per value)
  heavy     z, times 30 when u4 < 0.01          (draws u0..u4 per value: ~1% outliers)
  relu      max(z * 2 + 0.5, 0)
  positive  z * 0.25 + 3                        (all > 0: the range must be widened to 0)
  tiny      z * 0.001
  uniform   (u0 * 2 - 1) * 100                  (one draw per value)
Channel data sets: z * (0.5 * (c + 1)) + (0.25 * c - 0.5), c the index along the channel axis.
"""
import numpy as np

from goldenio import SplitMix64

SQRT3 = np.float32(1.7320508)
BATCHES = 4
BATCH = 4096

DATASETS = {  # name: (seed, draws per value)
    "normal": (1001, 4),
    "heavy": (2002, 5),
    "relu": (3003, 4),
    "positive": (4004, 4),
    "tiny": (5005, 4),
    "uniform": (6006, 1),
}


def uniforms(seed, n):
    r = SplitMix64(seed)
    ints = np.array([r.next_u64() >> 40 for _ in range(n)], dtype=np.int64)
    return (ints.astype(np.float32) * np.float32(2.0 ** -24)).astype(np.float32)


def _z(u):
    s = u[:, 0] + u[:, 1]
    s = s + u[:, 2]
    s = s + u[:, 3]
    s = s - np.float32(2.0)
    return (s * SQRT3).astype(np.float32)


def batch(name, b, n=BATCH):
    seed, k = DATASETS[name]
    u = uniforms(seed + b, n * k).reshape(n, k)
    if name == "uniform":
        return ((u[:, 0] * np.float32(2.0) - np.float32(1.0)) * np.float32(100.0)).astype(np.float32)
    z = _z(u)
    if name == "normal":
        return z
    if name == "heavy":
        return np.where(u[:, 4] < np.float32(0.01), z * np.float32(30.0), z).astype(np.float32)
    if name == "relu":
        v = z * np.float32(2.0) + np.float32(0.5)
        return np.where(v > 0, v, np.float32(0.0)).astype(np.float32)
    if name == "positive":
        return (z * np.float32(0.25) + np.float32(3.0)).astype(np.float32)
    if name == "tiny":
        return (z * np.float32(0.001)).astype(np.float32)
    raise KeyError(name)


def dataset(name):
    """The list of batches of a data set."""
    return [batch(name, b) for b in range(BATCHES)]


# Channel data sets: name -> (seed, batch shape, channel axis, batches)
CHANNEL_DATASETS = {
    "act_nchw_axis1": (7007, (2, 6, 5, 5), 1, 3),
    "weights_oihw_axis0": (8008, (8, 3, 3, 3), 0, 1),
    "act_nhwc_axis3": (9009, (1, 4, 4, 5), 3, 2),
}


def channel_dataset(name):
    seed, shape, axis, nb = CHANNEL_DATASETS[name]
    out = []
    for b in range(nb):
        n = int(np.prod(shape))
        z = _z(uniforms(seed + b, n * 4).reshape(n, 4)).reshape(shape)
        cshape = [1] * len(shape)
        cshape[axis] = shape[axis]
        c = np.arange(shape[axis], dtype=np.float32).reshape(cshape)
        f = np.float32(0.5) * (c + np.float32(1.0))
        o = np.float32(0.25) * c - np.float32(0.5)
        out.append((z * f + o).astype(np.float32))
    return out


def minmax_pairs():
    """(min, max) pairs for the choose-qparams formula tables: edge cases, then random ones."""
    pairs = [(0.0, 0.0), (-1.0, 1.0), (-1.0, 3.0), (0.5, 2.0), (-7.0, -0.25), (-1e-30, 1e-30), (1e-6, 1e-6),
             (-0.0, 0.0), (-3.4e37, 3.4e37), (-128.0, 127.0), (0.0, 255.0), (-0.1, 25.4), (-1e-7, 1e-7),
             (-6.0, 6.0), (-2.0, 896.0), (-1.0, 127.0 / 128.0), (0.0, 255.0 / 256.0)]
    u = uniforms(424242, 200).reshape(100, 2)
    e = uniforms(434343, 100)
    for i in range(100):
        mag = np.float32(10.0) ** np.float32(np.floor(e[i] * 12) - 6)  # 1e-6 .. 1e5
        a = (u[i, 0] * np.float32(2.0) - np.float32(1.0)) * mag
        b = (u[i, 1] * np.float32(2.0) - np.float32(1.0)) * mag
        lo, hi = (a, b) if a <= b else (b, a)
        pairs.append((float(np.float32(lo)), float(np.float32(hi))))
    return [(float(np.float32(a)), float(np.float32(b))) for a, b in pairs]
