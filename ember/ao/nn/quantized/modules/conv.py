"""``nn.quantized.Conv1d/2d/3d``: int8 weight, quint8 input and output (FBGEMM's kernels:
im2col and the exact int8 product of ``ember.ops.quantized``)."""
import ember
from ember.nn.modules import conv as _float_conv
from ember.nn.utils.fusion import fuse_conv_bn_weights
from ember.ops import quantized as _ops
from .utils import WeightedQuantizedModule, _quantize_weight, _intrinsic

__all__ = ["Conv1d", "Conv2d", "Conv3d"]

_SUPPORTED_PADDING = {"zeros", "reflect"}
_NUMPY_PAD_MODE = {"reflect": "reflect"}


def _ntuple(value, n):
    if isinstance(value, int):
        return (value,) * n
    value = tuple(value)
    return value * n if len(value) == 1 else value


class _ConvNd(WeightedQuantizedModule):
    _DIMS = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        n = self._DIMS
        self._init(in_channels, out_channels, _ntuple(kernel_size, n), _ntuple(stride, n),
                   _ntuple(padding, n), _ntuple(dilation, n), False, (0,) * n, groups, bias,
                   padding_mode)

    def _init(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
              transposed, output_padding, groups, bias, padding_mode="zeros"):
        if out_channels <= 0:
            raise ValueError(f"out_channels must be greater than 0, got {out_channels}")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode not in _SUPPORTED_PADDING:
            raise ValueError(f"'padding_mode' {padding_mode} is not supported by quantized "
                             "convolution")
        if isinstance(padding, str):
            raise ValueError("string padding ('same', 'valid') is not supported by quantized "
                             "convolution")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride = kernel_size, stride
        self.padding, self.dilation = padding, dilation
        self.transposed, self.output_padding = transposed, output_padding
        self.groups, self.padding_mode = groups, padding_mode
        weight = ember._make_per_tensor_quantized_tensor(
            ember.zeros(out_channels, in_channels // groups, *kernel_size, dtype=ember.int8),
            1.0, 0)
        bias_float = ember.zeros(out_channels, dtype=ember.float) if bias else None
        self.set_weight_bias(weight, bias_float)
        self.scale = 1.0
        self.zero_point = 0

    def set_weight_bias(self, qweight, bias_float):
        pad = (0,) * self._DIMS if self.padding_mode != "zeros" else self.padding
        self._packed_params = _ops.conv_prepack(qweight, bias_float, self.stride, pad,
                                                self.dilation, self.groups)

    def _weight_bias(self):
        return self._packed_params.unpack()

    def weight(self):
        return self._weight_bias()[0]

    def bias(self):
        return self._weight_bias()[1]

    def extra_repr(self):
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}, scale={self.scale}, zero_point={self.zero_point}")
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias() is None:
            s += ", bias=False"
        return s

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        w, b = self._weight_bias()
        destination[prefix + "weight"] = w
        destination[prefix + "bias"] = b
        destination[prefix + "scale"] = ember.tensor(self.scale)
        destination[prefix + "zero_point"] = ember.tensor(self.zero_point)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        self.set_weight_bias(state_dict.pop(prefix + "weight"), state_dict.pop(prefix + "bias"))
        self.scale = float(state_dict.pop(prefix + "scale"))
        self.zero_point = int(state_dict.pop(prefix + "zero_point"))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)

    def _padded(self, input):
        if self.padding_mode == "zeros":
            return input
        # torch pads a quantized input with F.pad first; the integers pad as the values do
        xp = input._backend.xp
        width = ((0, 0), (0, 0)) + tuple((p, p) for p in self.padding)
        ints = xp.pad(input._data.array, width, mode=_NUMPY_PAD_MODE[self.padding_mode])
        from ember._quantized_tensor import wrap_quantized, _qparams
        return wrap_quantized(ints, input.dtype, input, _qparams(input))

    def forward(self, input):
        if input.ndim != self._DIMS + 2:
            raise ValueError(f"Input shape must be `(N, C, {'L' if self._DIMS == 1 else '*S'})`!"
                             f" got {list(input.shape)}")
        return _ops.conv(self._padded(input), self._packed_params, self.scale, self.zero_point,
                         relu=self._RELU)

    _RELU = False

    @classmethod
    def get_qconv(cls, mod, activation_post_process, weight_post_process=None):
        if weight_post_process is None:
            weight_post_process = mod.qconfig.weight()
        weight_post_process(mod.weight)
        if weight_post_process.dtype is not ember.qint8:
            raise AssertionError("Weight observer must have a dtype of qint8, got "
                                 f"{weight_post_process.dtype}")
        qweight = _quantize_weight(mod.weight.float(), weight_post_process)
        qconv = cls(mod.in_channels, mod.out_channels, mod.kernel_size, mod.stride, mod.padding,
                    mod.dilation, mod.groups, mod.bias is not None, mod.padding_mode)
        qconv.set_weight_bias(qweight, mod.bias)
        if activation_post_process is None or activation_post_process.dtype is ember.float:
            return qconv  # dynamic quantization needs no output qparams
        act_scale, act_zp = activation_post_process.calculate_qparams()
        qconv.scale = float(act_scale)
        qconv.zero_point = int(act_zp)
        return qconv

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The quantized module of an observed float convolution (or its fused ConvReLU, or
        a QAT ConvBn whose batch norm is folded into the weight first)."""
        n = cls._DIMS
        if hasattr(mod, "weight_fake_quant"):
            conv_bn = _intrinsic(f"ConvBn{n}d", "ember.ao.nn.intrinsic.qat")
            conv_bn_relu = _intrinsic(f"ConvBnReLU{n}d", "ember.ao.nn.intrinsic.qat")
            if type(mod) in tuple(m for m in (conv_bn, conv_bn_relu) if m is not None):
                mod.weight, mod.bias = fuse_conv_bn_weights(
                    mod.weight, mod.bias, mod.bn.running_mean, mod.bn.running_var, mod.bn.eps,
                    mod.bn.weight, mod.bn.bias)
            if not hasattr(mod, "activation_post_process"):
                raise AssertionError("Input QAT module must have observer attached")
            return cls.get_qconv(mod, mod.activation_post_process, mod.weight_fake_quant)
        fused = tuple(m for m in (_intrinsic(f"ConvReLU{n}d"), _intrinsic(f"ConvAdd{n}d"),
                                  _intrinsic(f"ConvAddReLU{n}d")) if m is not None)
        if type(mod) is not cls._FLOAT_MODULE and type(mod) not in fused:
            raise AssertionError(f"nnq.{cls.__name__}.from_float only works for "
                                 f"{cls._FLOAT_MODULE.__name__} but got: {type(mod).__name__}")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined.")
        activation_post_process = getattr(mod, "activation_post_process", None)
        if type(mod) in fused:
            mod = mod[0]
        return cls.get_qconv(mod, activation_post_process, mod.qconfig.weight())

    @classmethod
    def from_reference(cls, ref_qconv, output_scale, output_zero_point):
        """The quantized module of a reference quantized convolution."""
        qconv = cls(ref_qconv.in_channels, ref_qconv.out_channels, ref_qconv.kernel_size,
                    ref_qconv.stride, ref_qconv.padding, ref_qconv.dilation, ref_qconv.groups,
                    ref_qconv.bias is not None, ref_qconv.padding_mode)
        qconv.set_weight_bias(ref_qconv.get_quantized_weight(), ref_qconv.bias)
        qconv.scale = float(output_scale)
        qconv.zero_point = int(output_zero_point)
        return qconv


class Conv1d(_ConvNd):
    """A 1-D convolution on quantized ``(N, C, L)`` inputs."""
    _DIMS = 1
    _FLOAT_MODULE = _float_conv.Conv1d

    def _get_name(self):
        return "QuantizedConv1d"


class Conv2d(_ConvNd):
    """A 2-D convolution on quantized ``(N, C, H, W)`` inputs."""
    _DIMS = 2
    _FLOAT_MODULE = _float_conv.Conv2d

    def _get_name(self):
        return "QuantizedConv2d"


class Conv3d(_ConvNd):
    """A 3-D convolution on quantized ``(N, C, D, H, W)`` inputs."""
    _DIMS = 3
    _FLOAT_MODULE = _float_conv.Conv3d

    def _get_name(self):
        return "QuantizedConv3d"
