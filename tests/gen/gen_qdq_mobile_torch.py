"""A small mobile-CNN-like float model for the QDQ export tests (run by gen_qdq.py, in the
PyTorch virtualenv):

    .venv-torch/bin/python tests/gen/gen_qdq_mobile_torch.py OUT.onnx CALIB.npy

The blocks of MobileNetV3 at toy size, random weights (seed 0) with the BatchNorm statistics of
the calibration samples (train mode, exact averages): a 3x3 stride-2 conv + BN + hard-swish, an
inverted residual (1x1 expand + hard-swish, 3x3 depthwise + BN + ReLU, squeeze-and-excitation:
global average pool, 1x1 conv + ReLU, 1x1 conv + hard-sigmoid, multiply; 1x1 project + BN,
residual add), a 2x2 average pool, a concatenation of two branches with different ranges, a
global average pool and a linear classifier. Input [1, 3, 24, 24]; 48 calibration samples
(numpy default_rng(9): smooth random images, a 4x4 noise field upsampled plus fine noise).
torch.onnx.export (TorchScript exporter), opset 17.

Pinned: torch 2.15.0, onnx 1.23.2, numpy 2.4.6.
"""
import sys
import warnings

import numpy as np
import onnx
import torch
import torch.nn as nn

assert torch.__version__.startswith("2.15."), torch.__version__
assert onnx.__version__ == "1.23.2", onnx.__version__
warnings.filterwarnings("ignore")
torch.set_num_threads(1)


class Mobile(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), nn.Hardswish())
        self.expand = nn.Sequential(nn.Conv2d(8, 16, 1, bias=False), nn.BatchNorm2d(16), nn.Hardswish())
        self.dw = nn.Sequential(nn.Conv2d(16, 16, 3, 1, 1, groups=16, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.se_reduce = nn.Conv2d(16, 4, 1)
        self.se_expand = nn.Conv2d(4, 16, 1)
        self.project = nn.Sequential(nn.Conv2d(16, 8, 1, bias=False), nn.BatchNorm2d(8))
        self.pool = nn.AvgPool2d(2)
        self.branch = nn.Sequential(nn.Conv2d(8, 8, 3, 1, 1), nn.BatchNorm2d(8), nn.ReLU6())
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        x = self.stem(x)
        y = self.dw(self.expand(x))
        s = nn.functional.adaptive_avg_pool2d(y, 1)
        s = nn.functional.hardsigmoid(self.se_expand(torch.relu(self.se_reduce(s))))
        x = x + self.project(y * s)
        x = self.pool(x)
        x = torch.cat([x, self.branch(x)], 1)
        x = nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.head(x)


def main(out, calib_path):
    rng = np.random.default_rng(9)
    coarse = rng.standard_normal((48, 3, 4, 4)).astype(np.float32)
    x = np.repeat(np.repeat(coarse, 6, axis=2), 6, axis=3) + 0.3 * rng.standard_normal((48, 3, 24, 24))
    x = x.astype(np.float32)
    np.save(calib_path, x)
    torch.manual_seed(0)
    m = Mobile()
    for b in m.modules():
        if isinstance(b, nn.BatchNorm2d):
            b.momentum = None
    m.train()
    with torch.no_grad():
        m(torch.from_numpy(x))
    m.eval()
    torch.onnx.export(m, (torch.from_numpy(x[:1]),), out, opset_version=17, input_names=["input"],
                      output_names=["logits"], dynamo=False)
    model = onnx.load(out)
    model.producer_version = "2.15.0"
    onnx.save(model, out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
