"""QAT convolutions with BatchNorm folded in during training, as torch's ``nniqat``.

``ConvBn2d`` trains the weight that inference will use: ``conv(x, fq(w * s))`` with
``s = bn.weight / running_std``, rescaled by ``1/s`` so that the BatchNorm that follows sees
the unfolded convolution and updates its batch statistics as it would in float (torch's
one-pass approximation; ``_enable_slow_path_for_better_numerical_stability`` selects the
two-pass form from Krishnamoorthi 2018 that also handles ``bn.weight == 0``). Frozen
BatchNorm statistics (``freeze_bn_stats``) make it the inference computation exactly.
"""
import math

import ember
from ...... import nn
from ......nn import functional as F, init
from ......nn.utils.fusion import fuse_conv_bn_weights
from ... import ConvBn1d as _nniConvBn1d, ConvBn2d as _nniConvBn2d, ConvBn3d as _nniConvBn3d
from ... import (ConvBnReLU1d as _nniConvBnReLU1d, ConvBnReLU2d as _nniConvBnReLU2d,
                 ConvBnReLU3d as _nniConvBnReLU3d, ConvReLU1d as _nniConvReLU1d,
                 ConvReLU2d as _nniConvReLU2d, ConvReLU3d as _nniConvReLU3d, _FusedModule)
from ....qat.modules.conv import _ConvNd as _QATConvNd
from ....qat.modules.linear import _check_from_float
from .linear_fused import LinearBn1d

__all__ = ["ConvBn1d", "ConvBn2d", "ConvBn3d", "ConvBnReLU1d", "ConvBnReLU2d", "ConvBnReLU3d",
           "ConvReLU1d", "ConvReLU2d", "ConvReLU3d", "update_bn_stats", "freeze_bn_stats"]


class _ConvBnNd(_FusedModule):
    """Shared by ConvBn and ConvBnReLU: a convolution owning ``weight``/``bias`` and ``bn``."""
    _FLOAT_MODULE = None
    _FLOAT_CONV_MODULE = None
    _FLOAT_BN_MODULE = None
    _FLOAT_RELU_MODULE = None
    _version = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=None, padding_mode="zeros", eps=1e-05, momentum=0.1,
                 freeze_bn=False, qconfig=None):
        # the convolution's own bias is kept apart from the folded weight (added after the
        # rescale), so the conv is built without one
        self._FLOAT_CONV_MODULE.__init__(self, in_channels, out_channels, kernel_size, stride,
                                         padding, dilation, groups, False, padding_mode)
        if not qconfig:
            raise AssertionError("qconfig must be provided for QAT module")
        self.qconfig = qconfig
        self.freeze_bn = freeze_bn if self.training else True
        self.bn = self._FLOAT_BN_MODULE(out_channels, eps, momentum, True, True)
        self.weight_fake_quant = self.qconfig.weight()
        if bias:
            self.bias = nn.Parameter(ember.empty(out_channels))
        else:
            self.register_parameter("bias", None)
        self.reset_bn_parameters()
        if self.training and not freeze_bn:
            self.update_bn_stats()
        else:
            self.freeze_bn_stats()
        self._enable_slow_path_for_better_numerical_stability = False

    def reset_running_stats(self):
        self.bn.reset_running_stats()

    def reset_bn_parameters(self):
        self.bn.reset_running_stats()
        init.uniform_(self.bn.weight)
        init.zeros_(self.bn.bias)
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in)
            init.uniform_(self.bias, -bound, bound)

    def update_bn_stats(self):
        self.freeze_bn = False
        self.bn.training = True
        return self

    def freeze_bn_stats(self):
        self.freeze_bn = True
        self.bn.training = False
        return self

    def _shapes(self):
        weight_shape = [1] * self.weight.ndim
        weight_shape[0] = -1
        bias_shape = [1] * self.weight.ndim
        bias_shape[1] = -1
        return weight_shape, bias_shape

    def _forward(self, input):
        if self._enable_slow_path_for_better_numerical_stability:
            return self._forward_slow(input)
        return self._forward_approximate(input)

    def _forward_approximate(self, input):
        weight_shape, bias_shape = self._shapes()
        running_std = ember.sqrt(self.bn.running_var + self.bn.eps)
        scale_factor = self.bn.weight / running_std
        scaled_weight = self.weight_fake_quant(self.weight * scale_factor.reshape(weight_shape))
        zero_bias = ember.zeros(self.out_channels, device=scaled_weight.device,
                                dtype=input.dtype)
        conv = self._conv_forward(input, scaled_weight, zero_bias)
        conv_orig = conv / scale_factor.reshape(bias_shape)
        if self.bias is not None:
            conv_orig = conv_orig + self.bias.reshape(bias_shape)
        return self.bn(conv_orig)

    def _forward_slow(self, input):
        weight_shape, bias_shape = self._shapes()
        zero_bias = ember.zeros(self.out_channels, device=self.weight.device, dtype=input.dtype)
        if self.bn.training:
            conv_out = self._conv_forward(input, self.weight, zero_bias)
            # the float pass only updates the running statistics
            with ember.no_grad():
                self.bn(conv_out if self.bias is None
                        else conv_out + self.bias.reshape(bias_shape))
            running_std = ember.sqrt(self.bn.running_var + self.bn.eps)
            scale_factor = self.bn.weight / running_std
            scaled_weight = self.weight_fake_quant(
                self.weight * scale_factor.reshape(weight_shape))
            conv_bn = self._conv_forward(input, scaled_weight, zero_bias)
            avg_dims = [0] + list(range(2, self.weight.ndim))
            batch_mean = conv_out.mean(avg_dims)
            batch_var = ember.square(conv_out - batch_mean.reshape(bias_shape)).mean(avg_dims)
            batch_std = ember.sqrt(batch_var + self.bn.eps)
            conv_bn = conv_bn * (running_std / batch_std).reshape(bias_shape)
            fused_mean, fused_std = batch_mean, batch_std
        else:
            running_std = ember.sqrt(self.bn.running_var + self.bn.eps)
            scale_factor = self.bn.weight / running_std
            scaled_weight = self.weight_fake_quant(
                self.weight * scale_factor.reshape(weight_shape))
            conv_bn = self._conv_forward(input, scaled_weight, zero_bias)
            fused_mean = self.bn.running_mean - (self.bias if self.bias is not None else 0)
            fused_std = running_std
        fused_bias = self.bn.bias - self.bn.weight * fused_mean / fused_std
        return conv_bn + fused_bias.reshape(bias_shape)

    def forward(self, input):
        return self._forward(input)

    def train(self, mode=True):
        # a frozen BatchNorm stays in eval mode when the model is put back to training
        self.training = mode
        if not self.freeze_bn:
            for module in self.children():
                module.train(mode)
        return self

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The QAT module for a fused float ``ConvBn``/``ConvBnReLU`` carrying a qconfig; it
        shares the float modules' Parameters and running statistics."""
        _check_from_float(cls, mod)
        conv, bn = mod[0], mod[1]
        qat_convbn = cls(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride,
                         conv.padding, conv.dilation, conv.groups, conv.bias is not None,
                         conv.padding_mode, bn.eps, bn.momentum, False, mod.qconfig)
        qat_convbn.weight = conv.weight
        qat_convbn.bias = conv.bias
        qat_convbn.bn.weight = bn.weight
        qat_convbn.bn.bias = bn.bias
        qat_convbn.bn.running_mean = bn.running_mean
        qat_convbn.bn.running_var = bn.running_var
        qat_convbn.bn.num_batches_tracked = bn.num_batches_tracked
        return qat_convbn

    def to_float(self):
        """The float convolution with the BatchNorm folded in (then its ReLU, if fused)."""
        cls = type(self)
        conv = cls._FLOAT_CONV_MODULE(self.in_channels, self.out_channels, self.kernel_size,
                                      self.stride, self.padding, self.dilation, self.groups,
                                      self.bias is not None, self.padding_mode)
        conv.weight = nn.Parameter(self.weight.detach())
        if self.bias is not None:
            conv.bias = nn.Parameter(self.bias.detach())
        conv.weight, conv.bias = fuse_conv_bn_weights(
            conv.weight, conv.bias, self.bn.running_mean, self.bn.running_var, self.bn.eps,
            self.bn.weight, self.bn.bias)
        if cls._FLOAT_RELU_MODULE is not None:
            float_conv = _RELU_FUSED[cls._FLOAT_CONV_MODULE](conv, cls._FLOAT_RELU_MODULE())
        else:
            float_conv = conv
        float_conv.train(self.training)
        return float_conv


_RELU_FUSED = {nn.Conv1d: _nniConvReLU1d, nn.Conv2d: _nniConvReLU2d, nn.Conv3d: _nniConvReLU3d}


def _conv_bn_class(name, float_module, conv, bn, relu):
    forward = (lambda self, input: F.relu(self._forward(input))) if relu else _ConvBnNd.forward
    return type(name, (_ConvBnNd, conv), {
        "_FLOAT_MODULE": float_module, "_FLOAT_CONV_MODULE": conv, "_FLOAT_BN_MODULE": bn,
        "_FLOAT_RELU_MODULE": nn.ReLU if relu else None, "forward": forward,
        "__module__": __name__,
        "__doc__": f"QAT {conv.__name__} with its {bn.__name__} folded into the fake-quantized "
                   f"weight{', then ReLU' if relu else ''}."})


ConvBn1d = _conv_bn_class("ConvBn1d", _nniConvBn1d, nn.Conv1d, nn.BatchNorm1d, False)
ConvBn2d = _conv_bn_class("ConvBn2d", _nniConvBn2d, nn.Conv2d, nn.BatchNorm2d, False)
ConvBn3d = _conv_bn_class("ConvBn3d", _nniConvBn3d, nn.Conv3d, nn.BatchNorm3d, False)
ConvBnReLU1d = _conv_bn_class("ConvBnReLU1d", _nniConvBnReLU1d, nn.Conv1d, nn.BatchNorm1d, True)
ConvBnReLU2d = _conv_bn_class("ConvBnReLU2d", _nniConvBnReLU2d, nn.Conv2d, nn.BatchNorm2d, True)
ConvBnReLU3d = _conv_bn_class("ConvBnReLU3d", _nniConvBnReLU3d, nn.Conv3d, nn.BatchNorm3d, True)


def _conv_relu_class(name, float_module, conv):
    def forward(self, input):
        return F.relu(self._conv_forward(input, self.weight_fake_quant(self.weight), self.bias))
    return type(name, (_QATConvNd, conv, _FusedModule), {
        "_FLOAT_MODULE": float_module, "_FLOAT_CONV_MODULE": conv,
        "_FLOAT_RELU_MODULE": nn.ReLU, "forward": forward, "__module__": __name__,
        "__doc__": f"QAT {conv.__name__} with fake-quantized weight, then ReLU."})


ConvReLU1d = _conv_relu_class("ConvReLU1d", _nniConvReLU1d, nn.Conv1d)
ConvReLU2d = _conv_relu_class("ConvReLU2d", _nniConvReLU2d, nn.Conv2d)
ConvReLU3d = _conv_relu_class("ConvReLU3d", _nniConvReLU3d, nn.Conv3d)

_BN_FOLDING_CLASSES = (ConvBn1d, ConvBn2d, ConvBn3d, ConvBnReLU1d, ConvBnReLU2d, ConvBnReLU3d,
                       LinearBn1d)


def update_bn_stats(mod):
    """``model.apply(update_bn_stats)``: let every fused QAT BatchNorm update its statistics."""
    if type(mod) in _BN_FOLDING_CLASSES:
        mod.update_bn_stats()


def freeze_bn_stats(mod):
    """``model.apply(freeze_bn_stats)``: freeze every fused QAT BatchNorm's statistics."""
    if type(mod) in _BN_FOLDING_CLASSES:
        mod.freeze_bn_stats()
