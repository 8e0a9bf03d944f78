"""Trains the four digits models in PyTorch and exports them to float ONNX (NCHW); run by
train_and_compare.py, which prepared the data:

    .venv-torch/bin/python tests/gen/peers/train_torch.py WORK_DIR OUT_DIR

Reads WORK_DIR/{train_x,train_y}.npy (float32 [N, 1, 8, 8] in [0, 1], int64 labels), writes
OUT_DIR/<model>_nchw.onnx (TorchScript exporter, opset 17, dynamic batch, BatchNormalization
folded into the convolutions as the exporter does in eval mode) and WORK_DIR/<model>_weights.npz
(every parameter and batch-norm statistic, to build the same network in Keras).

Pinned: torch 2.15.0 (CPU, deterministic algorithms, one thread), onnx 1.23.2, numpy 2.4.6.

Models (input [N, 1, 8, 8]):
  mlp      Flatten, Linear 64-64 ReLU, Linear 64-32 ReLU, Linear 32-10
  cnn      Conv 3x3 1-8 ReLU, Conv 3x3 8-16 ReLU, MaxPool 2, Flatten, Linear 256-10
  dscnn    Conv 3x3 1-16 BN ReLU; depthwise-separable block (DW 3x3 BN ReLU, PW 1x1 BN) + residual
           add, ReLU; MaxPool 2; DW 3x3 BN ReLU, PW 1x1 16-32 BN ReLU; global average pool; Linear 32-10
  outlier  the trained cnn with a 9th channel in its first conv that fires on a pattern (a nearly
           saturated 3x3 block) present at exactly one position of one calibration sample, with a
           huge gain: one huge activation among ~10^5 ordinary ones in that layer's output. The next
           conv ignores the channel (zero weights), so the float model computes the same logits as
           the cnn; only the activation range of the first layer changes. Min/max calibration puts
           the int8 scale of that tensor at the outlier and crushes every ordinary value into a
           few steps; histogram, entropy and percentile calibration clip it.
"""
import json
import pathlib
import sys
import warnings

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F

assert torch.__version__.startswith("2.15."), torch.__version__
assert onnx.__version__ == "1.23.2", onnx.__version__
assert np.__version__ == "2.4.6", np.__version__
warnings.filterwarnings("ignore")
torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 64)
        self.fc2 = nn.Linear(64, 32)
        self.fc3 = nn.Linear(32, 10)

    def forward(self, x):
        x = torch.flatten(x, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class Cnn(nn.Module):
    def __init__(self, c1=8):
        super().__init__()
        self.conv1 = nn.Conv2d(1, c1, 3, padding=1)
        self.conv2 = nn.Conv2d(c1, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


class DsCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv0 = nn.Conv2d(1, 16, 3, padding=1, bias=False)
        self.bn0 = nn.BatchNorm2d(16)
        self.dw1 = nn.Conv2d(16, 16, 3, padding=1, groups=16, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.pw1 = nn.Conv2d(16, 16, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.dw2 = nn.Conv2d(16, 16, 3, padding=1, groups=16, bias=False)
        self.bn3 = nn.BatchNorm2d(16)
        self.pw2 = nn.Conv2d(16, 32, 1, bias=False)
        self.bn4 = nn.BatchNorm2d(32)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        y = F.relu(self.bn0(self.conv0(x)))
        z = self.bn2(self.pw1(F.relu(self.bn1(self.dw1(y)))))
        y = F.max_pool2d(F.relu(z + y), 2)
        y = F.relu(self.bn4(self.pw2(F.relu(self.bn3(self.dw2(y))))))
        return self.fc(torch.mean(y, dim=(2, 3)))


def train(make, x, y, epochs, seed):
    torch.manual_seed(seed)
    model = make()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    n = len(x)
    for epoch in range(epochs):
        model.train()
        perm = torch.randperm(n)
        for i in range(0, n, 32):
            idx = perm[i:i + 32]
            opt.zero_grad()
            loss = F.cross_entropy(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
    model.eval()
    return model


def export(model, path):
    x = torch.zeros(1, 1, 8, 8)
    torch.onnx.export(model, x, str(path), opset_version=17, dynamo=False, input_names=["x"],
                      output_names=["logits"], dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}})
    m = onnx.load(str(path))
    m.producer_version = torch.__version__.split("+")[0]
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, str(path))


def outlier_from(cnn, calib):
    """The cnn with a 9th first-layer channel: gain * relu(box3x3(x) - threshold), the threshold
    between the largest and second-largest 3x3 box sum of the calibration images, so it fires at
    exactly one position of one calibration sample."""
    box = F.conv2d(calib, torch.ones(1, 1, 3, 3), padding=1).flatten()
    top = torch.topk(box, 2).values
    threshold = float((top[0] + top[1]) / 2)
    margin = float(top[0]) - threshold
    gain = 1000.0 / margin  # the outlier activation is 1000
    m = Cnn(c1=9)
    with torch.no_grad():
        m.conv1.weight[:8] = cnn.conv1.weight
        m.conv1.bias[:8] = cnn.conv1.bias
        m.conv1.weight[8] = gain
        m.conv1.bias[8] = -gain * threshold
        m.conv2.weight.zero_()
        m.conv2.weight[:, :8] = cnn.conv2.weight
        m.conv2.bias[:] = cnn.conv2.bias
        m.fc.weight[:] = cnn.fc.weight
        m.fc.bias[:] = cnn.fc.bias
    m.eval()
    return m, {"threshold": threshold, "gain": gain, "outlier": 1000.0}


def main():
    work, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    x = torch.from_numpy(np.load(work / "train_x.npy"))
    y = torch.from_numpy(np.load(work / "train_y.npy"))
    calib = torch.from_numpy(np.load(work / "calib_x.npy"))
    models = {
        "mlp": train(Mlp, x, y, 40, 1),
        "cnn": train(Cnn, x, y, 30, 2),
        "dscnn": train(DsCnn, x, y, 30, 3),
    }
    models["outlier"], info = outlier_from(models["cnn"], calib)
    with torch.no_grad():
        same = float((models["outlier"](calib) - models["cnn"](calib)).abs().max())
        acts = F.relu(models["outlier"].conv1(calib))
        fired = int((acts[:, 8] > 0).sum())
    info.update({"max_logit_difference_from_cnn": same, "outlier_positions_in_calibration": fired,
                 "first_layer_max_without_outlier": float(acts[:, :8].max())})
    for name, m in models.items():
        export(m, out / f"{name}_nchw.onnx")
        sd = {k: v.detach().numpy() for k, v in m.state_dict().items() if v.dtype == torch.float32}
        np.savez(work / f"{name}_weights.npz", **sd)
    (work / "torch_info.json").write_text(json.dumps({"outlier": info}))


if __name__ == "__main__":
    main()
