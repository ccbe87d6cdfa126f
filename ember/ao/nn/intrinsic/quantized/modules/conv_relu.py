"""``nniq.ConvReLU1d/2d/3d``: int8 convolutions with ReLU applied before requantization."""
from .....nn.quantized.modules.conv import Conv1d as _QConv1d, Conv2d as _QConv2d
from .....nn.quantized.modules.conv import Conv3d as _QConv3d
from ... import ConvReLU1d as _nniConvReLU1d, ConvReLU2d as _nniConvReLU2d
from ... import ConvReLU3d as _nniConvReLU3d

__all__ = ["ConvReLU1d", "ConvReLU2d", "ConvReLU3d"]


class _ConvReLUMixin:
    # the quantized convolution clamps its int32 accumulator at the zero point's value
    # before requantizing: relu costs nothing and no output range is spent on negatives
    _RELU = True

    @classmethod
    def from_reference(cls, ref_qconv, output_scale, output_zero_point):
        return super().from_reference(ref_qconv[0], output_scale, output_zero_point)


class ConvReLU1d(_ConvReLUMixin, _QConv1d):
    """``relu(conv1d(x))`` on quantized inputs, from a fused (or QAT) ConvReLU1d."""
    _FLOAT_MODULE = _nniConvReLU1d

    def _get_name(self):
        return "QuantizedConvReLU1d"


class ConvReLU2d(_ConvReLUMixin, _QConv2d):
    """``relu(conv2d(x))`` on quantized inputs, from a fused (or QAT) ConvReLU2d."""
    _FLOAT_MODULE = _nniConvReLU2d

    def _get_name(self):
        return "QuantizedConvReLU2d"


class ConvReLU3d(_ConvReLUMixin, _QConv3d):
    """``relu(conv3d(x))`` on quantized inputs, from a fused (or QAT) ConvReLU3d."""
    _FLOAT_MODULE = _nniConvReLU3d

    def _get_name(self):
        return "QuantizedConvReLU3d"
