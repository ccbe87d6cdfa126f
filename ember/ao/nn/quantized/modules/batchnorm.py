"""Quantized batch norm (inference): the running statistics applied to the dequantized input
in float32, requantized to ``scale``/``zero_point``, as torch's ``quantized::batch_norm``."""
import ember
from ember.ops import quantized as _ops
from .utils import _intrinsic

__all__ = ["BatchNorm2d", "BatchNorm3d"]


class _BatchNorm:
    def __init__(self, num_features, eps=1e-5, momentum=0.1, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, True, True)
        self.register_buffer("scale", ember.tensor(1.0))
        self.register_buffer("zero_point", ember.tensor(0))

    def forward(self, input):
        if input.ndim != self._DIMS + 2:
            dims = "H, W" if self._DIMS == 2 else "D, H, W"
            raise ValueError(f"Input shape must be `(N, C, {dims})`!")
        shape = (1, -1) + (1,) * self._DIMS
        inv = (self.running_var + self.eps).rsqrt()
        w = (self.weight * inv) if self.weight is not None else inv
        b = (self.bias - self.running_mean * w) if self.bias is not None else -self.running_mean * w
        w = w.detach()._data.astype("float32").reshape(shape)
        b = b.detach()._data.astype("float32").reshape(shape)
        return _ops.via_float(input, lambda x: x * w + b, float(self.scale),
                              int(self.zero_point))

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        relu_fused = _intrinsic(f"BNReLU{cls._DIMS}d")
        if relu_fused is not None and type(mod) is relu_fused:
            observer = mod[1].activation_post_process
            mod = mod[0]
        else:
            observer = mod.activation_post_process
        scale, zero_point = observer.calculate_qparams()
        new_mod = cls(mod.num_features, mod.eps)
        new_mod.weight, new_mod.bias = mod.weight, mod.bias
        new_mod.running_mean, new_mod.running_var = mod.running_mean, mod.running_var
        new_mod.scale, new_mod.zero_point = scale, zero_point
        return new_mod

    @classmethod
    def from_reference(cls, bn, output_scale, output_zero_point):
        qbn = cls(bn.num_features, bn.eps, bn.momentum)
        qbn.weight, qbn.bias = bn.weight, bn.bias
        qbn.running_mean, qbn.running_var = bn.running_mean, bn.running_var
        qbn.scale = ember.tensor(float(output_scale))
        qbn.zero_point = ember.tensor(int(output_zero_point))
        return qbn


class BatchNorm2d(_BatchNorm, ember.nn.BatchNorm2d):
    """BatchNorm2d (running statistics) on a quantized ``(N, C, H, W)`` tensor."""
    _DIMS = 2

    def _get_name(self):
        return "QuantizedBatchNorm2d"


class BatchNorm3d(_BatchNorm, ember.nn.BatchNorm3d):
    """BatchNorm3d (running statistics) on a quantized ``(N, C, D, H, W)`` tensor."""
    _DIMS = 3

    def _get_name(self):
        return "QuantizedBatchNorm3d"
