"""Trains the digits CNN and exports it to ONNX (run by gen_digits.py under the PyTorch
virtualenv: torch 2.15.0, onnx 1.23.2). Argument: a directory holding data.npz (x [N, 1, 8, 8]
float32, y [N] int64); writes digits_cnn.onnx and torch.json there."""
import json
import os
import sys

import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F

assert torch.__version__.startswith("2.15."), torch.__version__
assert onnx.__version__ == "1.23.2", onnx.__version__


class DigitsCnn(nn.Module):
    """conv 3x3 (8) + BN + ReLU, depthwise 3x3 + ReLU6, conv 1x1 (16) stride 2 + ReLU, max pool 2,
    flatten, FC 32 + ReLU, FC 10, softmax: the op families of the MLPerf Tiny models, small."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.pw = nn.Conv2d(8, 16, 1, stride=2)
        self.fc1 = nn.Linear(16 * 2 * 2, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu6(self.dw(y))
        y = F.relu(self.pw(y))
        y = F.max_pool2d(y, 2)
        y = F.relu(self.fc1(torch.flatten(y, 1)))
        return F.softmax(self.fc2(y), dim=1)


def main(out):
    d = __import__("numpy").load(os.path.join(out, "data.npz"))
    x, y = torch.from_numpy(d["x"]), torch.from_numpy(d["y"])
    torch.manual_seed(7)
    model = DigitsCnn()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    epochs, batch = 40, 64
    for _ in range(epochs):
        perm = torch.randperm(len(x))
        model.train()
        for i in range(0, len(x), batch):
            idx = perm[i : i + batch]
            p = model(x[idx])
            loss = F.nll_loss(torch.log(p + 1e-9), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    model.eval()
    with torch.no_grad():
        train_acc = float((model(x).argmax(1) == y).float().mean())
    path = os.path.join(out, "digits_cnn.onnx")
    torch.onnx.export(model, (x[:1],), path, opset_version=13, dynamo=False, input_names=["x"],
                      output_names=["probs"])
    m = onnx.load(path)
    onnx.checker.check_model(m)
    m.graph.name = "digits_cnn"
    m.producer_name, m.producer_version = "pytorch", torch.__version__
    onnx.save(m, path)
    with open(os.path.join(out, "torch.json"), "w") as f:
        json.dump({"versions": {"torch": torch.__version__, "onnx": onnx.__version__},
                   "training": {"seed": 7, "epochs": epochs, "batch": batch, "optimizer": "Adam lr 0.01",
                                "train_accuracy": train_acc}}, f)


if __name__ == "__main__":
    main(sys.argv[1])
