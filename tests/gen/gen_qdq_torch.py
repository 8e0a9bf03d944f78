"""A QAT-style QDQ export from PyTorch (run by gen_qdq.py, in the PyTorch virtualenv):

    .venv-torch/bin/python tests/gen/gen_qdq_torch.py CALIB.npy OUT.onnx

The digits `cnn` of tests/golden/peers/ (its float weights read from cnn_nchw.onnx, next to the
calibration file), in eager-mode quantization-aware form: QuantStub, Conv+ReLU fused twice, max
pool, Linear, DeQuantStub, with FakeQuantize modules (activations: per-tensor affine int8,
moving-average min/max; weights: per-channel symmetric int8). The calibration samples go through
it in training mode (observers on, no gradient step: the weights stay the float model's), then
torch.onnx.export (TorchScript exporter, opset 17) writes each FakeQuantize as a
QuantizeLinear -> DequantizeLinear pair, the weights as float constants -> QuantizeLinear (axis 0)
-> DequantizeLinear: the format QAT toolchains hand to inference engines.

Pinned: torch 2.15.0, onnx 1.23.2, numpy 2.4.6.
"""
import pathlib
import sys
import warnings

import numpy as np
import onnx
import torch
import torch.ao.quantization as tq
import torch.nn as nn
from onnx import numpy_helper

assert torch.__version__.startswith("2.15."), torch.__version__
assert onnx.__version__ == "1.23.2", onnx.__version__
warnings.filterwarnings("ignore")
torch.set_num_threads(1)
torch.manual_seed(0)


class QatCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.relu2 = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(256, 10)
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        x = self.relu1(self.conv1(self.quant(x)))
        x = self.pool(self.relu2(self.conv2(x)))
        return self.dequant(self.fc(torch.flatten(x, 1)))


def main():
    calib_path, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    src = onnx.load(str(calib_path.parent / "cnn_nchw.onnx"))
    weights = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy()) for t in src.graph.initializer}
    m = QatCnn()
    with torch.no_grad():
        for name, p in m.named_parameters():
            p.copy_(weights[name])
    act = tq.FakeQuantize.with_args(observer=tq.MovingAverageMinMaxObserver, quant_min=-128, quant_max=127,
                                    dtype=torch.qint8, qscheme=torch.per_tensor_affine)
    wt = tq.FakeQuantize.with_args(observer=tq.MovingAveragePerChannelMinMaxObserver, quant_min=-128,
                                   quant_max=127, dtype=torch.qint8, qscheme=torch.per_channel_symmetric, ch_axis=0)
    m.qconfig = tq.QConfig(activation=act, weight=wt)
    m.eval()
    tq.fuse_modules_qat(m, [["conv1", "relu1"], ["conv2", "relu2"]], inplace=True)
    m.train()
    tq.prepare_qat(m, inplace=True)
    x = torch.from_numpy(np.load(calib_path))
    with torch.no_grad():
        for i in range(len(x)):
            m(x[i:i + 1])
    m.apply(tq.disable_observer)  # freeze the scales: the export sees fixed fake-quantization
    m.eval()
    torch.onnx.export(m, x[:1], str(out), opset_version=17, dynamo=False, input_names=["x"],
                      output_names=["logits"])
    model = onnx.load(str(out))
    model.producer_version = torch.__version__.split("+")[0]
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(out))


if __name__ == "__main__":
    main()
