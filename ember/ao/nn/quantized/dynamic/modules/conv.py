"""``nn.quantized.dynamic.Conv1d/2d/3d``: an int8 weight on float inputs and outputs, the
input quantized per call from its own range (torch's ``torch.ao.nn.quantized.dynamic``'s
convolutions, which ``quantize_dynamic`` uses when its ``mapping`` names them)."""
import warnings

from ember import nn
from ember.ops import quantized as _ops
from ...modules import conv as _static

__all__ = ["Conv1d", "Conv2d", "Conv3d"]


class _DynamicConvNd:
    """What the dynamic convolutions add to the static ones: a float forward."""
    _NNIQAT_CONV_BN_MODULE = None
    _NNI_CONV_RELU_MODULE = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None,
                 reduce_range=True):
        warnings.warn(f"The current implementation of the {self._get_name()} module has poor "
                      "numerical accuracy and its use is not recommended", stacklevel=2)
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype)

    def forward(self, input, reduce_range=True):
        if input.ndim != self._DIMS + 2:
            raise ValueError(f"Input shape must be `{self._SHAPE}`!")
        if self.padding_mode != "zeros":
            pad = tuple(p for p in reversed(self.padding) for _ in range(2))
            input = nn.functional.pad(input, pad, mode=self.padding_mode)
        return _ops.conv_dynamic(input, self._packed_params, reduce_range)


class Conv1d(_DynamicConvNd, _static.Conv1d):
    """A dynamically quantized 1-D convolution on float ``(N, C, L)`` inputs."""
    _SHAPE = "(N, C, L)"

    def _get_name(self):
        return "DynamicQuantizedConv1d"


class Conv2d(_DynamicConvNd, _static.Conv2d):
    """A dynamically quantized 2-D convolution on float ``(N, C, H, W)`` inputs."""
    _SHAPE = "(N, C, H, W)"

    def _get_name(self):
        return "DynamicQuantizedConv2d"


class Conv3d(_DynamicConvNd, _static.Conv3d):
    """A dynamically quantized 3-D convolution on float ``(N, C, D, H, W)`` inputs."""
    _SHAPE = "(N, C, D, H, W)"

    def _get_name(self):
        return "DynamicQuantizedConv3d"
