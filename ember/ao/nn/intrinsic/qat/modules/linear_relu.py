"""``nniqat.LinearReLU``: QAT Linear (fake-quantized weight) followed by ReLU."""
from ...... import nn
from ......nn import functional as F
from ... import LinearReLU as _nniLinearReLU, _FusedModule
from ....qat.modules.linear import Linear as _QATLinear

__all__ = ["LinearReLU"]


class LinearReLU(_QATLinear, _FusedModule):
    """``relu(linear(x, weight_fake_quant(weight), bias))``, from a fused float LinearReLU."""
    _FLOAT_MODULE = _nniLinearReLU

    def forward(self, input):
        return F.relu(F.linear(input, self.weight_fake_quant(self.weight), self.bias))

    def to_float(self):
        return _nniLinearReLU(_QATLinear.to_float(self), nn.ReLU())
