"""``nniq.LinearReLU``: the int8 linear layer with ReLU applied before requantization."""
from ......ops import quantized as _ops
from .....nn.quantized.modules.linear import Linear as _QuantizedLinear
from ... import LinearReLU as _nniLinearReLU

__all__ = ["LinearReLU"]


class LinearReLU(_QuantizedLinear):
    """``relu(x W^T + b)`` on quantized tensors, requantized once to ``scale``/``zero_point``
    (the fused observer saw the ReLU's output, so no range is spent on negatives)."""
    _FLOAT_MODULE = (_nniLinearReLU,)

    def _get_name(self):
        return "QuantizedLinearReLU"

    def forward(self, x):
        return _ops.linear_relu(x, self._packed_params._packed_params, self.scale,
                                self.zero_point)

    @classmethod
    def _float_modules(cls):
        return cls._FLOAT_MODULE

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        return super().from_float(mod, use_precomputed_fake_quant)

    @classmethod
    def from_reference(cls, ref_linear_relu, output_scale, output_zero_point):
        return super().from_reference(ref_linear_relu[0], output_scale, output_zero_point)
