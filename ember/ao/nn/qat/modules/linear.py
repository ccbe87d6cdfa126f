"""``nn.qat.Linear``: a Linear layer whose weight passes through fake quantization."""
from ..... import nn
from .....nn import functional as F

__all__ = ["Linear"]


def _check_from_float(cls, mod):
    if type(mod) is not cls._FLOAT_MODULE:
        raise AssertionError(f"qat.{cls.__name__}.from_float only works for "
                             f"{cls._FLOAT_MODULE.__name__}")
    if not hasattr(mod, "qconfig"):
        raise AssertionError("Input float module must have qconfig defined")
    if not mod.qconfig:
        raise AssertionError("Input float module must have a valid qconfig")


class Linear(nn.Linear):
    """``linear(x, weight_fake_quant(weight), bias)``: training sees the int8 weight's rounding.

    Built by ``prepare_qat`` from a float ``nn.Linear`` carrying a ``qconfig``, sharing its
    weight and bias Parameters (an optimizer made before keeps working).
    """
    _FLOAT_MODULE = nn.Linear

    def __init__(self, in_features, out_features, bias=True, qconfig=None, device=None,
                 dtype=None):
        super().__init__(in_features, out_features, bias, device=device, dtype=dtype)
        if not qconfig:
            raise AssertionError("qconfig must be provided for QAT module")
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight()

    def forward(self, input):
        return F.linear(input, self.weight_fake_quant(self.weight), self.bias)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The QAT module for float ``mod`` (or the Linear of a fused ``LinearReLU``)."""
        _check_from_float(cls, mod)
        qconfig = mod.qconfig
        if isinstance(mod, nn.Sequential):
            mod = mod[0]
        qat_linear = cls(mod.in_features, mod.out_features, bias=mod.bias is not None,
                         qconfig=qconfig)
        qat_linear.weight = mod.weight
        qat_linear.bias = mod.bias
        return qat_linear

    def to_float(self):
        """A float ``nn.Linear`` with this module's (unquantized) weight and bias."""
        linear = nn.Linear(self.in_features, self.out_features, self.bias is not None,
                           device=self.weight.device, dtype=self.weight.dtype)
        linear.weight = nn.Parameter(self.weight.detach())
        if self.bias is not None:
            linear.bias = nn.Parameter(self.bias.detach())
        linear.train(self.training)
        return linear
