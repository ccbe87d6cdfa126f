"""Quantized activations: the float function on the dequantized values, requantized to the
output qparams (``ReLU6`` clamps the integers directly), as torch's kernels compute them."""
import numpy as np

import ember
from ember.ops import quantized as _ops

__all__ = ["ReLU6", "Hardswish", "ELU", "LeakyReLU", "Sigmoid", "Softmax"]


def _output_qparams(mod):
    scale, zero_point = mod.activation_post_process.calculate_qparams()
    return float(scale), int(zero_point)


class ReLU6(ember.nn.ReLU):
    """``min(max(0, x), 6)`` on a quantized tensor, keeping its qparams (a ReLU subclass, as
    torch's)."""

    def __init__(self, inplace=False):
        super().__init__(inplace)
        self.inplace = inplace

    def forward(self, input):
        return _ops.relu6(input)

    def _get_name(self):
        return "QuantizedReLU6"

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant=False):
        return ReLU6(mod.inplace)


class Hardswish(ember.nn.Hardswish):
    """``x * relu6(x + 3) / 6`` on a quantized tensor, requantized to ``scale``/``zero_point``."""

    def __init__(self, scale, zero_point, device=None, dtype=None):
        super().__init__()
        # buffers, as torch's (so the scale is a float32 value)
        self.register_buffer("scale", ember.tensor(scale))
        self.register_buffer("zero_point", ember.tensor(zero_point))

    def forward(self, input):
        return _ops.via_float(input, lambda x: x * np.clip(x + np.float32(3), 0, 6)
                              / np.float32(6), float(self.scale), int(self.zero_point))

    def _get_name(self):
        return "QuantizedHardswish"

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant=False):
        return Hardswish(*_output_qparams(mod))

    @classmethod
    def from_reference(cls, mod, scale, zero_point):
        return cls(float(scale), int(zero_point))


class ELU(ember.nn.ELU):
    """ELU on a quantized tensor, requantized to ``scale``/``zero_point``."""

    def __init__(self, scale, zero_point, alpha=1.0):
        super().__init__(alpha)
        self.scale, self.zero_point = float(scale), int(zero_point)

    def forward(self, input):
        alpha = np.float32(self.alpha)
        return _ops.via_float(input, lambda x: np.where(x > 0, x, alpha * np.expm1(x)),
                              self.scale, self.zero_point)

    def _get_name(self):
        return "QuantizedELU"

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant=False):
        return ELU(*_output_qparams(mod), mod.alpha)

    @classmethod
    def from_reference(cls, mod, scale, zero_point):
        return cls(float(scale), int(zero_point), mod.alpha)


class LeakyReLU(ember.nn.LeakyReLU):
    """LeakyReLU on a quantized tensor, requantized to ``scale``/``zero_point``."""

    def __init__(self, scale, zero_point, negative_slope=1e-2, inplace=False, device=None,
                 dtype=None):
        super().__init__(negative_slope, inplace)
        self.register_buffer("scale", ember.tensor(scale))
        self.register_buffer("zero_point", ember.tensor(zero_point))

    def forward(self, input):
        slope = np.float32(self.negative_slope)
        return _ops.via_float(input, lambda x: np.where(x > 0, x, x * slope), float(self.scale),
                              int(self.zero_point))

    def _get_name(self):
        return "QuantizedLeakyReLU"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        return cls(*_output_qparams(mod), mod.negative_slope, mod.inplace)

    @classmethod
    def from_reference(cls, mod, scale, zero_point):
        return cls(float(scale), int(zero_point), mod.negative_slope, mod.inplace)


class Sigmoid(ember.nn.Sigmoid):
    """Sigmoid on a quantized tensor, requantized to ``output_scale``/``output_zero_point``."""

    def __init__(self, output_scale, output_zero_point):
        super().__init__()
        self.output_scale, self.output_zero_point = float(output_scale), int(output_zero_point)

    def forward(self, input):
        return _ops.via_float(input, lambda x: (1 / (1 + np.exp(-x))).astype(np.float32),
                              self.output_scale, self.output_zero_point)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        return cls(*_output_qparams(mod))


class Softmax(ember.nn.Softmax):
    """Softmax over ``dim`` of a quantized tensor, requantized to ``scale``/``zero_point``."""

    def __init__(self, dim=None, scale=1.0, zero_point=0):
        super().__init__()
        self.dim, self.scale, self.zero_point = dim, float(scale), int(zero_point)

    def forward(self, input):
        dim = self.dim
        if dim is None:  # torch's legacy choice of dim
            dim = 0 if input.ndim in (0, 1, 3) else 1

        def softmax(x):
            e = np.exp(x - x.max(axis=dim, keepdims=True))
            return (e / e.sum(axis=dim, keepdims=True)).astype(np.float32)
        return _ops.via_float(input, softmax, self.scale, self.zero_point)

    def _get_name(self):
        return "QuantizedSoftmax"

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant=False):
        return Softmax(mod.dim, *_output_qparams(mod))

    @classmethod
    def from_reference(cls, mod, scale, zero_point):
        return cls(mod.dim, float(scale), int(zero_point))
