"""``ember.ao.nn.quantized.functional``: the functional forms of the quantized modules, as
``torch.ao.nn.quantized.functional``. Pooling runs on the integers (max exactly, averages
rounded), the activations through ``ember.ops.quantized``."""
import numpy as np

import ember
from ember._tensor import _wrap
from ember._quantized_tensor import QuantizedTensor, wrap_quantized, _qparams
from ember.ops import quantized as _ops

__all__ = ["linear", "conv1d", "conv2d", "conv3d", "max_pool1d", "max_pool2d", "avg_pool2d",
           "adaptive_avg_pool2d", "hardswish", "elu", "leaky_relu", "hardtanh", "clamp",
           "threshold", "hardsigmoid", "celu", "relu6", "dropout", "interpolate", "upsample",
           "upsample_nearest", "upsample_bilinear"]


def _quantized(input, fn):
    if not isinstance(input, QuantizedTensor):
        raise ValueError(f"Input to 'quantized.{fn}' must be quantized!")


def linear(input, weight, bias=None, scale=None, zero_point=None):
    """``input W^T + b`` for quint8 ``input`` and qint8 ``weight``, quantized to ``scale``/
    ``zero_point`` (default: the input's)."""
    scale = input.q_scale() if scale is None else scale
    zero_point = input.q_zero_point() if zero_point is None else zero_point
    return _ops.linear(input, _ops.linear_prepack(weight, bias), scale, zero_point)


def _conv(dims, input, weight, bias, stride, padding, dilation, groups, padding_mode, scale,
          zero_point, dtype):
    if padding_mode != "zeros":
        raise NotImplementedError("Only zero-padding is supported!")
    if dtype is not ember.quint8:
        raise NotImplementedError("Only torch.quint8 is supported for activation tensor!")
    if weight.dtype is not ember.qint8:
        raise NotImplementedError("Only torch.qint8 is supported for weight tensor!")
    if input.ndim != dims + 2:
        raise ValueError(f"Input shape must be {dims + 2}-D, got {list(input.shape)}")
    packed = _ops.conv_prepack(weight, bias, stride, padding, dilation, groups)
    return _ops.conv(input, packed, scale, zero_point)


def conv1d(input, weight, bias, stride=1, padding=0, dilation=1, groups=1,
           padding_mode="zeros", scale=1.0, zero_point=0, dtype=ember.quint8):
    return _conv(1, input, weight, bias, stride, padding, dilation, groups, padding_mode, scale,
                 zero_point, dtype)


def conv2d(input, weight, bias, stride=1, padding=0, dilation=1, groups=1,
           padding_mode="zeros", scale=1.0, zero_point=0, dtype=ember.quint8):
    return _conv(2, input, weight, bias, stride, padding, dilation, groups, padding_mode, scale,
                 zero_point, dtype)


def conv3d(input, weight, bias, stride=1, padding=0, dilation=1, groups=1,
           padding_mode="zeros", scale=1.0, zero_point=0, dtype=ember.quint8):
    return _conv(3, input, weight, bias, stride, padding, dilation, groups, padding_mode, scale,
                 zero_point, dtype)


def _on_integers(input, fn, name):
    """``fn`` (a float op) on the integers as float32 (exact), the result back in the input's
    dtype and qparams."""
    _quantized(input, name)
    ints = _wrap(input._data.array.astype(np.float32), ember.float32, input)
    out = fn(ints)
    data = input._backend.xp.rint(out._data).astype(input.dtype.np)
    return wrap_quantized(data, input.dtype, input, _qparams(input))


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    if return_indices:
        raise NotImplementedError("return_indices is not yet implemented!")
    return _on_integers(input, lambda x: ember.nn.functional.max_pool1d(
        x, kernel_size, stride, padding, dilation, ceil_mode), "max_pool1d")


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    if return_indices:
        raise NotImplementedError("return_indices is not yet implemented!")
    return _on_integers(input, lambda x: ember.nn.functional.max_pool2d(
        x, kernel_size, stride, padding, dilation, ceil_mode), "max_pool2d")


def _rounded_back(input, shifted_mean, z):
    # torch averages the stored integers themselves (padding stands for the zero point) and
    # rounds that mean half to even, so the zero point is added back before the rounding
    lo, hi = _ops._RANGE[input.dtype]
    data = input._backend.xp.clip(np.rint(shifted_mean + z), lo, hi).astype(input.dtype.np)
    return wrap_quantized(data, input.dtype, input, _qparams(input))


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """Average pooling on the integers (the zero point shifts out), rounded to nearest."""
    _quantized(input, "avg_pool2d")
    z = np.float32(input.q_zero_point())
    ints = _wrap(input._data.array.astype(np.float32) - z, ember.float32, input)
    out = ember.nn.functional.avg_pool2d(ints, kernel_size, stride, padding, ceil_mode,
                                         count_include_pad, divisor_override)
    return _rounded_back(input, out._data, z)


def adaptive_avg_pool2d(input, output_size):
    """Adaptive average pooling on the integers, rounded to nearest."""
    _quantized(input, "adaptive_avg_pool2d")
    z = np.float32(input.q_zero_point())
    ints = _wrap(input._data.array.astype(np.float32) - z, ember.float32, input)
    out = ember.nn.functional.adaptive_avg_pool2d(ints, output_size)
    return _rounded_back(input, out._data, z)


def _avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
                count_include_pad=True):
    """``nn.AvgPool1d`` of a quantized tensor: the 2-d pooling over a unit height."""
    def one(v):
        return v if isinstance(v, int) else v[0]
    out = avg_pool2d(input.unsqueeze(-2), (1, one(kernel_size)),
                     None if stride is None else (1, one(stride)), (0, one(padding)),
                     ceil_mode, count_include_pad)
    return out.squeeze(-2)


def _adaptive_avg_pool1d(input, output_size):
    size = output_size if isinstance(output_size, int) else output_size[0]
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1, size)).squeeze(-2)


def hardswish(input, scale, zero_point):
    _quantized(input, "hardswish")
    return _ops.via_float(input, lambda x: x * np.clip(x + np.float32(3), 0, 6) / np.float32(6),
                          scale, zero_point)


def elu(input, scale, zero_point, alpha=1.0):
    _quantized(input, "elu")
    a = np.float32(alpha)
    return _ops.via_float(input, lambda x: np.where(x > 0, x, a * np.expm1(x)), scale,
                          zero_point)


def celu(input, scale, zero_point, alpha=1.0):
    _quantized(input, "celu")
    a = np.float32(alpha)
    return _ops.via_float(input, lambda x: np.where(x > 0, x, a * np.expm1(x / a)), scale,
                          zero_point)


def _result(input, out, inplace):
    """``out``, or with ``inplace`` written into ``input`` (its integers and qparams, which
    hardsigmoid fixes), as torch's in-place quantized kernels do."""
    if not inplace:
        return out
    input._scale, input._zero_point = out._scale, out._zero_point
    return _ops._in_place(input, out)


def leaky_relu(input, negative_slope=0.01, inplace=False, scale=None, zero_point=None):
    _quantized(input, "leaky_relu")
    s = np.float32(negative_slope)
    if inplace and scale is not None:
        raise ValueError("quantized leaky_relu: an in-place call keeps the input's qparams; "
                         "pass scale/zero_point only with inplace=False")
    return _result(input, _ops.via_float(input, lambda x: np.where(x > 0, x, x * s), scale,
                                         zero_point), inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    _quantized(input, "hardtanh")
    return _result(input, _ops.q_hardtanh(input, min_val, max_val), inplace)


def clamp(input, min_, max_):
    _quantized(input, "clamp")
    return _ops.q_clamp(input, min_, max_)


def threshold(input, threshold, value):
    _quantized(input, "threshold")
    if threshold is None or value is None:
        raise ValueError("Input to 'threshold' must be specified!")
    return _ops.via_float(input, lambda x: np.where(x > np.float32(threshold), x,
                                                    np.float32(value)))


def hardsigmoid(input, inplace=False):
    _quantized(input, "hardsigmoid")
    # torch's quantized hardsigmoid, like sigmoid, fixes the output qparams to [0, 1]
    return _result(input, _ops.q_hardsigmoid(input), inplace)


def relu6(input, inplace=False):
    _quantized(input, "relu6")
    return _result(input, _ops.relu6(input), inplace)


def dropout(input, p=0.5, training=False, inplace=False):
    """Dropout of a quantized tensor at inference: the input itself."""
    if training:
        raise NotImplementedError("dropout of a quantized tensor runs at inference only")
    return input


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Resampling on the dequantized values, requantized with the input's qparams
    (``nearest`` copies integers, so it is exact)."""
    _quantized(input, "interpolate")
    if mode not in ("bilinear", "nearest"):
        raise ValueError("Input quantized interpolate supports only bilinear and nearest modes")
    if mode == "nearest":
        return _on_integers(input, lambda x: ember.nn.functional.interpolate(
            x, size, scale_factor, mode), "interpolate")

    return _bilinear(input, size, scale_factor, bool(align_corners))


def _source_index(out_size, in_size, scale_factor, align_corners, xp):
    """Per output index: the lower source index, the step to the upper one (0 at the edge)
    and the upper weight, as torch's quantized bilinear kernel computes them (float32)."""
    f32 = np.float32
    if align_corners:
        scale = f32((in_size - 1) / (out_size - 1)) if out_size > 1 else f32(0)
    elif scale_factor is not None:
        scale = f32(1.0 / scale_factor)
    else:
        scale = f32(in_size / out_size)
    dst = xp.arange(out_size, dtype=np.float32)
    if align_corners:
        src = scale * dst
    else:
        src = xp.maximum(scale * (dst + f32(0.5)) - f32(0.5), f32(0))
    low = src.astype(np.int64)
    step = (low < in_size - 1).astype(np.int64)
    upper = (src - low.astype(np.float32)).astype(np.float32)
    return low, step, upper, (f32(1) - upper).astype(np.float32)


def _bilinear(input, size, scale_factor, align_corners):
    """Bilinear resampling of the stored integers themselves, rounded half to even: torch's
    quantized kernel (``h0 * (w0 * p00 + w1 * p01) + h1 * (w0 * p10 + w1 * p11)`` in float32),
    so the qparams are kept."""
    if input.ndim != 4:
        raise ValueError(f"Input Error: Only 4D input Tensors are supported for quantized "
                         f"bilinear upsampling (got {input.ndim}D)")
    xp = input._backend.xp
    h, w = input.shape[2:]
    if size is not None:
        out_h, out_w = (size, size) if isinstance(size, int) else tuple(size)
        sf = (None, None)
    else:
        sf = (scale_factor, scale_factor) if not isinstance(scale_factor, (tuple, list)) \
            else tuple(scale_factor)
        out_h, out_w = int(np.floor(h * sf[0])), int(np.floor(w * sf[1]))
    hl, hs, h1, h0 = _source_index(out_h, h, sf[0], align_corners, xp)
    wl, ws, w1, w0 = _source_index(out_w, w, sf[1], align_corners, xp)
    p = input._data.array.astype(np.float32)
    top, bottom = p[:, :, hl, :], p[:, :, hl + hs, :]
    w0, w1 = w0[None, None, None, :], w1[None, None, None, :]
    h0, h1 = h0[None, None, :, None], h1[None, None, :, None]
    row0 = w0 * top[..., wl] + w1 * top[..., wl + ws]
    row1 = w0 * bottom[..., wl] + w1 * bottom[..., wl + ws]
    value = h0 * row0 + h1 * row1
    lo, hi = _ops._RANGE[input.dtype]
    data = xp.clip(xp.rint(value), lo, hi).astype(input.dtype.np)
    return wrap_quantized(data, input.dtype, input, _qparams(input))


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_bilinear(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def upsample_nearest(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="nearest")
