"""The quantized modules, as ``torch.ao.nn.quantized.modules``; ``Quantize`` and
``DeQuantize`` (what ``convert`` puts for QuantStub/DeQuantStub) are defined here."""
import ember
from ember.nn.modules.module import Module
from .activation import ELU, Hardswish, LeakyReLU, ReLU6, Sigmoid, Softmax
from .batchnorm import BatchNorm2d, BatchNorm3d
from .conv import Conv1d, Conv2d, Conv3d
from .dropout import Dropout
from .functional_modules import FloatFunctional, FXFloatFunctional, QFunctional
from .linear import Linear
from .normalization import GroupNorm, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, LayerNorm

__all__ = ["BatchNorm2d", "BatchNorm3d", "Conv1d", "Conv2d", "Conv3d", "DeQuantize", "ELU",
           "Dropout", "FloatFunctional", "FXFloatFunctional", "GroupNorm", "Hardswish",
           "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LayerNorm", "LeakyReLU",
           "Linear", "QFunctional", "Quantize", "ReLU6", "Sigmoid", "Softmax"]


class Quantize(Module):
    """Quantizes a float input per tensor with ``scale``/``zero_point`` (buffers) to ``dtype``."""

    def __init__(self, scale, zero_point, dtype, factory_kwargs=None):
        super().__init__()
        self.register_buffer("scale", ember.tensor([scale]))
        self.register_buffer("zero_point", ember.tensor([zero_point], dtype=ember.long))
        self.dtype = dtype

    def forward(self, X):
        return ember.quantize_per_tensor(X, float(self.scale), int(self.zero_point), self.dtype)

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant=False):
        if not hasattr(mod, "activation_post_process"):
            raise AssertionError("Quantize.from_float expects a module with an observer")
        scale, zero_point = mod.activation_post_process.calculate_qparams()
        return Quantize(scale.float().item(), zero_point.long().item(),
                        mod.activation_post_process.dtype)

    def extra_repr(self):
        return f"scale={self.scale}, zero_point={self.zero_point}, dtype={self.dtype}"


class DeQuantize(Module):
    """Dequantizes a quantized input to float32."""

    def forward(self, Xq):
        return Xq.dequantize()

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant=False):
        return DeQuantize()
