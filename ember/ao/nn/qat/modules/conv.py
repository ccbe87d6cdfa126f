"""``nn.qat.Conv1d/2d/3d``: convolutions whose weight passes through fake quantization."""
from ..... import nn
from .linear import _check_from_float

__all__ = ["Conv1d", "Conv2d", "Conv3d"]


class _ConvNd:
    """The QAT behaviour shared by the convolution classes (mixed in before ``nn.ConvNd``)."""
    _FLOAT_MODULE = None
    _FLOAT_CONV_MODULE = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", qconfig=None, device=None,
                 dtype=None):
        self._FLOAT_CONV_MODULE.__init__(self, in_channels, out_channels, kernel_size,
                                         stride=stride, padding=padding, dilation=dilation,
                                         groups=groups, bias=bias, padding_mode=padding_mode,
                                         device=device, dtype=dtype)
        if not qconfig:
            raise AssertionError("qconfig must be provided for QAT module")
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight()

    def forward(self, input):
        return self._conv_forward(input, self.weight_fake_quant(self.weight), self.bias)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The QAT module for float ``mod`` (or the convolution of a fused ``ConvReLU``)."""
        _check_from_float(cls, mod)
        qconfig = mod.qconfig
        if isinstance(mod, nn.Sequential):
            mod = mod[0]
        qat_conv = cls(mod.in_channels, mod.out_channels, mod.kernel_size, stride=mod.stride,
                       padding=mod.padding, dilation=mod.dilation, groups=mod.groups,
                       bias=mod.bias is not None, padding_mode=mod.padding_mode,
                       qconfig=qconfig)
        qat_conv.weight = mod.weight
        qat_conv.bias = mod.bias
        return qat_conv

    def to_float(self):
        """The float convolution (followed by its ReLU for a fused class) with these weights."""
        cls = type(self)
        conv = cls._FLOAT_CONV_MODULE(self.in_channels, self.out_channels, self.kernel_size,
                                      self.stride, self.padding, self.dilation, self.groups,
                                      self.bias is not None, self.padding_mode)
        conv.weight = nn.Parameter(self.weight.detach())
        if self.bias is not None:
            conv.bias = nn.Parameter(self.bias.detach())
        relu = getattr(cls, "_FLOAT_RELU_MODULE", None)
        if relu is not None:
            fused = cls._FLOAT_MODULE(conv, relu())
            fused.train(self.training)
            return fused
        conv.train(self.training)
        return conv


class Conv1d(_ConvNd, nn.Conv1d):
    _FLOAT_MODULE = nn.Conv1d
    _FLOAT_CONV_MODULE = nn.Conv1d


class Conv2d(_ConvNd, nn.Conv2d):
    """``conv2d(x, weight_fake_quant(weight), bias)``, from a float Conv2d with a qconfig."""
    _FLOAT_MODULE = nn.Conv2d
    _FLOAT_CONV_MODULE = nn.Conv2d


class Conv3d(_ConvNd, nn.Conv3d):
    _FLOAT_MODULE = nn.Conv3d
    _FLOAT_CONV_MODULE = nn.Conv3d
