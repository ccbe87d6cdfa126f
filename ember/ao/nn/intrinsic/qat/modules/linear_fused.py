"""``nniqat.LinearBn1d``: QAT Linear with its BatchNorm1d folded into the fake-quantized weight,
the linear counterpart of ``ConvBn2d`` (same one-pass rescaling)."""

import ember
from ...... import nn
from ......nn import functional as F, init
from ... import LinearBn1d as _nniLinearBn1d, _FusedModule
from ....qat.modules.linear import _check_from_float

__all__ = ["LinearBn1d"]


class LinearBn1d(nn.Linear, _FusedModule):
    """``bn(linear(x, fq(w * s)) / s + b)`` with ``s = bn.weight / running_std``: training sees
    the folded int8 weight while the BatchNorm keeps its batch statistics."""
    _FLOAT_MODULE = _nniLinearBn1d

    def __init__(self, in_features, out_features, bias=True, eps=1e-05, momentum=0.1,
                 freeze_bn=False, qconfig=None):
        nn.Linear.__init__(self, in_features, out_features, bias)
        if not qconfig:
            raise AssertionError("qconfig must be provided for QAT module")
        self.qconfig = qconfig
        self.freeze_bn = freeze_bn if self.training else True
        self.bn = nn.BatchNorm1d(out_features, eps, momentum, True, True)
        self.weight_fake_quant = self.qconfig.weight()
        self.reset_bn_parameters()
        if self.training and not freeze_bn:
            self.update_bn_stats()
        else:
            self.freeze_bn_stats()

    def reset_running_stats(self):
        self.bn.reset_running_stats()

    def reset_bn_parameters(self):
        self.bn.reset_running_stats()
        init.uniform_(self.bn.weight)
        init.zeros_(self.bn.bias)

    def update_bn_stats(self):
        self.freeze_bn = False
        self.bn.training = True
        return self

    def freeze_bn_stats(self):
        self.freeze_bn = True
        self.bn.training = False
        return self

    def forward(self, input):
        running_std = ember.sqrt(self.bn.running_var + self.bn.eps)
        scale_factor = self.bn.weight / running_std
        scaled_weight = self.weight_fake_quant(self.weight * scale_factor.reshape(-1, 1))
        zero_bias = ember.zeros(self.out_features, device=scaled_weight.device,
                                dtype=input.dtype)
        linear_out = F.linear(input, scaled_weight, zero_bias) / scale_factor.reshape(1, -1)
        if self.bias is not None:
            linear_out = linear_out + self.bias.reshape(1, -1)
        return self.bn(linear_out)

    def train(self, mode=True):
        self.training = mode
        if not self.freeze_bn:
            for module in self.children():
                module.train(mode)
        return self

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The QAT module for a fused float ``LinearBn1d`` carrying a qconfig."""
        _check_from_float(cls, mod)
        linear, bn = mod[0], mod[1]
        qat = cls(linear.in_features, linear.out_features, linear.bias is not None, bn.eps,
                  bn.momentum, False, mod.qconfig)
        qat.weight = linear.weight
        qat.bias = linear.bias
        qat.bn.weight = bn.weight
        qat.bn.bias = bn.bias
        qat.bn.running_mean = bn.running_mean
        qat.bn.running_var = bn.running_var
        qat.bn.num_batches_tracked = bn.num_batches_tracked
        return qat


