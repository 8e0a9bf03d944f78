"""PyTorch models of the zoo (run by build_zoo.py with .venv-torch's Python, torchvision on the
path): torchvision architectures with random weights (seeded) whose BatchNorm statistics are set
by running the calibration photos through them in train mode, a small ViT, and a GRU and a
transformer encoder trained for a few seconds on scikit-learn's digits (rows as time steps).
Each is exported with torch.onnx (opset 17, fixed batch 1) to <out>/<name>/model.onnx with
calib.npy / eval.npy (NCHW float32, ImageNet normalization) and meta.json.

Usage: zoo_torch.py OUT_DIR INPUTS_NPZ
"""
import json
import pathlib
import sys

import numpy as np
import torch
import torchvision
from torch import nn

MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)


def images(rgb, size):
    """uint8 NHWC 256x256 → float32 NCHW size×size (center crop), ImageNet normalization."""
    o = (256 - size) // 2
    x = rgb[:, o:o + size, o:o + size].astype(np.float32) / 255.0
    return ((x - MEAN) / STD).transpose(0, 3, 1, 2).copy()


def set_batchnorm(model, x):
    """BatchNorm running statistics = the exact mean/var over the photos (momentum None). Only the
    BatchNorm layers are in train mode: dropout and stochastic depth (EfficientNet's) must not
    drop blocks while the statistics are taken, or the statistics do not fit the eval model."""
    model.eval()
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.reset_running_stats()
            m.momentum = None
            m.train()
    with torch.no_grad():
        for i in range(0, len(x), 8):
            model(torch.from_numpy(x[i:i + 8]))
    model.eval()


class SmallViT(nn.Module):
    """A ViT-Tiny-like classifier (patch 16, dim 192, 4 layers, 3 heads, GELU, LayerNorm) on
    PyTorch's own TransformerEncoder."""

    def __init__(self, size=224, dim=192, depth=4, heads=3, classes=1000):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, 16, 16)
        n = (size // 16) ** 2
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, n + 1, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, dim * 4, dropout=0.0, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos
        x = self.norm(self.encoder(x))
        return self.head(x[:, 0])


class DigitsGru(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(8, 32, batch_first=True)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        y, _ = self.gru(x)
        return self.fc(y[:, -1])


class DigitsTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(8, 32)
        self.pos = nn.Parameter(torch.randn(1, 8, 32) * 0.1)
        layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        y = self.encoder(self.embed(x) + self.pos)
        return self.fc(y.mean(1))


def train_digits(model, x, y, epochs):
    opt = torch.optim.Adam(model.parameters(), 3e-3)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    g = torch.Generator().manual_seed(0)
    model.train()
    for _ in range(epochs):
        for idx in torch.randperm(len(x), generator=g).split(64):
            opt.zero_grad()
            nn.functional.cross_entropy(model(xt[idx]), yt[idx]).backward()
            opt.step()
    model.eval()


def export(out, name, model, calib, evals, meta):
    d = out / name
    d.mkdir(parents=True, exist_ok=True)
    torch.onnx.export(model, (torch.from_numpy(calib[:1]),), str(d / "model.onnx"), opset_version=17,
                      input_names=["input"], output_names=["output"], dynamo=False)
    np.save(d / "calib.npy", calib)
    np.save(d / "eval.npy", evals)
    (d / "meta.json").write_text(json.dumps(dict(meta, source=f"torch {torch.__version__}, torchvision "
                                                 f"{torchvision.__version__}", input_layout="NCHW"), indent=1))
    print("torch", name, "ok", flush=True)


def main(out, inputs):
    out = pathlib.Path(out)
    inp = np.load(inputs)
    torch.manual_seed(0)
    tv = torchvision.models
    vision = [
        ("mobilenet_v2", lambda: tv.mobilenet_v2(weights=None), 224),
        ("mobilenet_v3_small", lambda: tv.mobilenet_v3_small(weights=None), 224),
        ("resnet18", lambda: tv.resnet18(weights=None), 224),
        ("squeezenet1_1", lambda: tv.squeezenet1_1(weights=None), 224),
        ("efficientnet_b0", lambda: tv.efficientnet_b0(weights=None), 224),
        ("shufflenet_v2_x0_5", lambda: tv.shufflenet_v2_x0_5(weights=None), 224),
        ("mnasnet0_5", lambda: tv.mnasnet0_5(weights=None), 224),
        ("vit_small", lambda: SmallViT(), 224),
    ]
    only = set(sys.argv[3:])
    for name, make, size in vision:
        if only and name not in only:
            continue
        torch.manual_seed(0)
        model = make()
        calib, evals = images(inp["calib_rgb"], size), images(inp["eval_rgb"], size)
        set_batchnorm(model, calib)
        desc = "random weights (seed 0), BatchNorm statistics from the calibration photos"
        export(out, name, model, calib[:32], evals[:16], {"kind": "classifier", "weights": desc})
    dx, dy = inp["digits_x"], inp["digits_y"]
    rng = np.random.default_rng(0)
    order = rng.permutation(len(dx))
    train, calib, evals = order[:1297], order[1297:1397], order[1397:1597]
    for name, model, epochs in (("gru_digits", DigitsGru(), 30), ("transformer_digits", DigitsTransformer(), 30)):
        if only and name not in only:
            continue
        torch.manual_seed(0)
        train_digits(model, dx[train], dy[train], epochs)
        with torch.no_grad():
            acc = (model(torch.from_numpy(dx[evals])).argmax(1).numpy() == dy[evals]).mean()
        desc = f"trained {epochs} epochs on 1297 sklearn digits (rows = 8 time steps); float accuracy {acc:.3f}"
        export(out, name, model, dx[calib][:64], dx[evals][:64], {"kind": "classifier", "weights": desc})


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
