"""Exports small PyTorch models to ONNX for the importer tests (run by gen_onnx_float.py).

Runs under the PyTorch virtualenv (torch 2.15.0, onnx 1.23.2, onnxscript 0.7.2):
    .venv-torch/bin/python tests/gen/gen_onnx_torch.py OUT_DIR
and writes OUT_DIR/<name>_opset<N>.onnx for every model and opset below, plus OUT_DIR/torch.json
listing them. The TorchScript exporter (dynamo=False) writes opsets 11, 13 and 17, keeping
BatchNormalization, Identity, Constant and the Shape/Gather/Unsqueeze/Concat chains of dynamic-batch
reshapes (do_constant_folding=False, dynamic batch axis); the dynamo exporter writes opset 21 (it
folds BatchNormalization into the convolutions itself).
ONNX Runtime's outputs are computed by gen_onnx_float.py (the ONNX Runtime virtualenv).
"""
import io
import json
import pathlib
import sys
import warnings

import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F

assert torch.__version__.startswith("2.15."), torch.__version__
assert onnx.__version__ == "1.23.2", onnx.__version__
warnings.filterwarnings("ignore")


def randomize_bn(m, g):
    for mod in m.modules():
        if isinstance(mod, (nn.BatchNorm1d, nn.BatchNorm2d)):
            n = mod.num_features
            mod.weight.data = torch.rand(n, generator=g) + 0.5
            mod.bias.data = torch.randn(n, generator=g) * 0.2
            mod.running_mean.data = torch.randn(n, generator=g) * 0.3
            mod.running_var.data = torch.rand(n, generator=g) + 0.5


class ConvBnNet(nn.Module):
    """NCHW conv net: conv+BN+ReLU, depthwise+BN+ReLU6 (Clip), 1x1 conv, residual add, max pool,
    flatten of a 4x4 map (C,H,W order) into a Gemm, softmax."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.b1 = nn.BatchNorm2d(8)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False)
        self.b2 = nn.BatchNorm2d(8)
        self.pw = nn.Conv2d(8, 8, 1)
        self.fc = nn.Linear(8 * 4 * 4, 5)

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        z = F.relu6(self.b2(self.dw(y)))
        z = self.pw(z) + y
        z = F.max_pool2d(z, 2)
        return F.softmax(self.fc(z.view(z.size(0), -1)), dim=1)


class DepthMultNet(nn.Module):
    """Depthwise with multiplier 2, stride 2, dilation; average pool with ceil mode; LeakyReLU;
    global average pool; Flatten; Gemm; Tanh."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(2, 4, 3, stride=2, padding=1, groups=2)
        self.d = nn.Conv2d(4, 6, 3, padding=2, dilation=2)
        self.fc = nn.Linear(6, 3)

    def forward(self, x):
        y = F.leaky_relu(self.c(x), 0.1)
        y = F.avg_pool2d(y, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)
        y = torch.sigmoid(self.d(y))
        y = F.adaptive_avg_pool2d(y, 1)
        return torch.tanh(self.fc(torch.flatten(y, 1)))


class HardNet(nn.Module):
    """HardSwish and HardSigmoid (opset < 14 writes HardSwish as HardSigmoid + Mul), a
    squeeze-excite gate, max pool with ceil mode, ReduceMean, Linear with BatchNorm1d."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(3, 6, 3, padding=1)
        self.se = nn.Linear(6, 6)
        self.fc = nn.Linear(6, 4)
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        y = F.hardswish(self.c(x))
        y = F.max_pool2d(y, 2, ceil_mode=True)
        s = F.hardsigmoid(self.se(y.mean(dim=(2, 3))))
        y = y * s[:, :, None, None]
        return self.bn(self.fc(y.mean(dim=(2, 3))))


class ConcatPadNet(nn.Module):
    """Two branches concatenated on channels, constant pad, conv, AvgPool with padding counted,
    flatten, Linear, Sub/Div by constants."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(2, 3, 1)
        self.b = nn.Conv2d(2, 2, 3, padding=1)
        self.c = nn.Conv2d(5, 4, 3)
        self.fc = nn.Linear(4 * 4 * 3, 3)

    def forward(self, x):
        y = torch.cat([F.relu(self.a(x)), self.b(x)], dim=1)
        y = F.pad(y, (1, 0, 2, 1), value=0.0)
        y = self.c(y)
        y = F.avg_pool2d(y, 2, stride=2, padding=1, count_include_pad=True)
        y = self.fc(torch.flatten(y, 1))
        return (y - 0.25) / 2.0


class TokenMlp(nn.Module):
    """A tiny token mixer: flatten(2).transpose(1, 2) to [batch, tokens, channels], a 3-D
    Linear (MatMul + Add), GELU-free MLP with ReLU, mean over tokens, Linear, softmax."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 2, stride=2)
        self.l1 = nn.Linear(8, 16)
        self.l2 = nn.Linear(16, 8)
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        t = self.stem(x).flatten(2).transpose(1, 2)
        t = t + self.l2(F.relu(self.l1(t)))
        return F.softmax(self.head(t.mean(dim=1)), dim=-1)


class Mlp(nn.Module):
    """Fully connected: Linear, LeakyReLU, Linear, ReLU6 (Clip), Dropout, Linear, Sigmoid."""

    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(16, 32)
        self.l2 = nn.Linear(32, 24)
        self.drop = nn.Dropout(0.5)
        self.l3 = nn.Linear(24, 6)

    def forward(self, x):
        y = F.leaky_relu(self.l1(x), 0.2)
        y = self.drop(F.relu6(self.l2(y)))
        return torch.sigmoid(self.l3(y))


MODELS = [
    ("conv_bn", ConvBnNet, [1, 3, 8, 8]),
    ("depth_mult", DepthMultNet, [1, 2, 13, 11]),
    ("hard", HardNet, [1, 3, 7, 7]),
    ("concat_pad", ConcatPadNet, [1, 2, 6, 6]),
    ("token_mlp", TokenMlp, [1, 3, 8, 8]),
    ("mlp", Mlp, [1, 16]),
]


def export(model, shape, opset):
    x = torch.randn(*shape)
    f = io.BytesIO()
    if opset <= 17:
        torch.onnx.export(model, (x,), f, opset_version=opset, dynamo=False, do_constant_folding=False,
                          input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
        return f.getvalue()
    prog = torch.onnx.export(model, (x,), dynamo=True, opset_version=opset, input_names=["x"], output_names=["y"])
    proto = prog.model_proto
    # The dynamo exporter records each node's Python stack trace (absolute paths of this machine's
    # files) in its metadata: dropped, so the committed models name no machine-specific path.
    for node in proto.graph.node:
        keep = [(p.key, p.value) for p in node.metadata_props if p.key != "pkg.torch.onnx.stack_trace"]
        del node.metadata_props[:]
        for key, value in keep:
            node.metadata_props.add(key=key, value=value)
    return proto.SerializeToString()


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    listing = []
    for i, (name, cls, shape) in enumerate(MODELS):
        g = torch.Generator().manual_seed(100 + i)
        torch.manual_seed(100 + i)
        m = cls()
        randomize_bn(m, g)
        m.eval()
        for opset in (11, 13, 17, 21):
            data = export(m, shape, opset)
            proto = onnx.load_from_string(data)
            onnx.checker.check_model(proto)
            file = f"{name}_opset{opset}.onnx"
            (out / file).write_bytes(data)
            listing.append({"name": f"{name}_opset{opset}", "file": file, "opset": opset, "input_shape": shape,
                            "exporter": "torch.onnx.export(dynamo=%s) torch %s" % (opset > 17, torch.__version__),
                            "ops": sorted({n.op_type for n in proto.graph.node})})
            print(file, len(data), "bytes", listing[-1]["ops"])
    (out / "torch.json").write_text(json.dumps(listing, indent=1))


if __name__ == "__main__":
    main()
