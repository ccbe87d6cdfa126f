"""Quantized tensors' maths: quantize and dequantize, the qparams accessors, and the int8
kernels of ``ember.ao.nn.quantized`` (torch's ``quantized::linear``, ``conv2d``, ``add``...).

Rounding follows torch's CPU kernels bit for bit, and they differ by path: a per-tensor
quantize to 8 bits rounds ``x * (1 / scale) + zero_point`` once, in float32 (FBGEMM's fused
multiply-add); to qint32, and per channel, the product is rounded before the zero point is
added; rounding is to nearest even. A per-tensor dequantize is ``(q - zp) * scale`` in
float32, per channel in float64.

The int8 matrix product is exact without an integer BLAS: int8/uint8 values are exact in
float32, and so is a dot product of length K while ``K * 255 * 128 < 2**24``; longer sums are
split into chunks that are, each one BLAS call, summed in int64. Zero points are taken out
afterwards by row and column sums: ``sum_k (a - za)(b - zb) = a.b - za*sum(b) - zb*sum(a) +
K*za*zb``, so the matrices are never shifted. Linear and convolution requantize as FBGEMM's
output pipeline: ``round((acc + bias / (sa * sw)) * (sa * sw / so)) + zo`` in float32.
"""
import math

import numpy as np

from .. import _dtype as dt
from .. import _qscheme as qs
from .._tensor import Tensor, _wrap
from .._quantized_tensor import QuantizedTensor, wrap_quantized, bind_shape_methods, _qparams

__all__ = ["quantize_per_tensor", "quantize_per_channel", "quantize_per_tensor_dynamic",
           "dequantize", "_make_per_tensor_quantized_tensor",
           "_make_per_channel_quantized_tensor", "_empty_affine_quantized",
           "_empty_per_channel_affine_quantized"]
METHODS = ["int_repr", "q_scale", "q_zero_point", "q_per_channel_scales",
           "q_per_channel_zero_points", "q_per_channel_axis", "qscheme", "dequantize"]
INPLACE = []

_PER_TENSOR = (qs.per_tensor_affine, qs.per_tensor_symmetric)
_RANGE = {dt.qint8: (-128, 127), dt.quint8: (0, 255), dt.qint32: (-2**31, 2**31 - 1)}


def _backend_name(t):
    kind = "Quantized" if isinstance(t, QuantizedTensor) else ""
    return kind + ("CPU" if t._device.type == "cpu" else t._device.type.upper())


def _not_for(t, op):
    return NotImplementedError(f"Could not run 'aten::{op}' with arguments from the "
                               f"'{_backend_name(t)}' backend: {op}() is defined for quantized "
                               "tensors only")


def _check_qdtype(dtype, fn):
    if dtype not in _RANGE:
        raise RuntimeError(f"{fn}(): the quantized dtype must be ember.qint8, ember.quint8 or "
                           f"ember.qint32, got {dtype}")


def _float_input(t, fn):
    if not isinstance(t, Tensor):
        raise TypeError(f"{fn}(): argument 'input' must be Tensor, not {type(t).__name__}")
    if isinstance(t, QuantizedTensor) or not t._dtype.is_floating_point:
        raise RuntimeError(f"{fn}(): quantization works on float tensors, got {t._dtype}")
    data = t._data
    return data if data.dtype == np.float32 else data.astype(np.float32)


# ---- array kernels -----------------------------------------------------------------------------

def quantize_array(xp, x, scale, zero_point, dtype):
    """Per-tensor quantization of float32 ``x``, rounded as torch's CPU kernel."""
    lo, hi = _RANGE[dtype]
    inv = np.float32(1.0) / np.float32(scale)
    if dtype is dt.qint32:
        v = xp.rint(np.float32(zero_point) + x * inv).astype(np.float64)
    else:
        # one rounding of x * inv + zp (FBGEMM's fma): exact in float64, then to float32
        v = xp.rint((x.astype(np.float64) * np.float64(inv) + zero_point).astype(np.float32))
    return xp.clip(v, lo, hi).astype(dtype.np)


def quantize_array_per_channel(xp, x, scales, zero_points, axis, dtype):
    """Per-channel quantization along ``axis``: float32 ``1 / scale``, product rounded, then
    the zero point added and rounded."""
    lo, hi = _RANGE[dtype]
    shape = [1] * x.ndim
    shape[axis] = -1
    inv = (np.float32(1.0) / xp.asarray(scales, dtype=np.float32)).reshape(shape)
    zp = xp.asarray(zero_points).astype(np.float32).reshape(shape)
    v = xp.rint(zp + x * inv).astype(np.float64)
    return xp.clip(v, lo, hi).astype(dtype.np)


def dequantize_array(t):
    """The float32 values of quantized tensor ``t``."""
    xp = t._backend.xp
    q = t._data.array
    if t._qscheme in _PER_TENSOR:
        return (q.astype(np.float32) - np.float32(t._zero_point)) * np.float32(t._scale)
    shape = [1] * q.ndim
    shape[t._axis] = -1
    scales = xp.asarray(t._scales, dtype=np.float64).reshape(shape)
    zps = xp.asarray(t._zero_points).astype(np.float64).reshape(shape)
    return ((q.astype(np.float64) - zps) * scales).astype(np.float32)


def choose_qparams(min_val, max_val, qmin, qmax, reduce_range=False, preserve_sparsity=False):
    """FBGEMM's ``ChooseQuantizationParams``: (scale, zero_point) that map ``[min, max]``
    (widened to hold 0) onto ``[qmin, qmax]``, as torch's dynamic quantization picks them."""
    f32 = np.float32
    min_val, max_val = f32(min_val), f32(max_val)
    if min_val > max_val:
        raise RuntimeError("In ChooseQuantizationParams, min should be less than or equal to max")
    if reduce_range:
        qmin, qmax = int(qmin / 2), int(qmax / 2)
    if min_val < 0 and max_val > 0 and preserve_sparsity:
        sym_qmin = -((qmax - qmin) // 2 + 1)
        sym_qmax = (qmax - qmin) // 2
        max_scale = max(abs(float(min_val) / sym_qmin), abs(float(max_val) / sym_qmax))
        min_val, max_val = f32(max_scale * sym_qmin), f32(max_scale * sym_qmax)
    min_val, max_val = min(min_val, f32(0)), max(max_val, f32(0))
    scale = (float(max_val) - float(min_val)) / (qmax - qmin)
    if f32(scale) == 0 or not math.isfinite(1.0 / float(f32(scale))):
        scale = 0.1
    threshold = float(f32(6.1e-5))
    if scale < threshold:
        org_scale = scale
        scale = threshold
        if min_val == 0:
            max_val = f32(threshold * (qmax - qmin))
        elif max_val == 0:
            min_val = f32(-threshold * (qmax - qmin))
        else:
            amplifier = f32(threshold / org_scale)
            min_val, max_val = min_val * amplifier, max_val * amplifier
    zp_from_min = qmin - float(min_val) / scale
    zp_from_max = qmax - float(max_val) / scale
    err_min = abs(qmin) - abs(float(min_val) / scale)
    err_max = abs(qmax) - abs(float(max_val) / scale)
    initial = zp_from_min if err_min < err_max else zp_from_max
    if min_val < 0 and max_val > 0 and preserve_sparsity:
        initial = (qmin + qmax) / 2
    if initial < qmin:
        zero_point = qmin
    elif initial > qmax:
        zero_point = qmax
    else:
        zero_point = int(np.rint(initial))
    return float(scale), zero_point  # a double, as torch's (FBGEMM's kernels round it)


def exact_matmul(backend, a, b, bound):
    """``a @ b`` of integer-valued float32 arrays, exact, as int64: ``bound`` is the largest
    ``|a[i, k] * b[k, j]|``. Float32 sums stay exact below 2**24, so K is split into chunks
    that stay there (or the product done in float64 when that takes many chunks)."""
    k = a.shape[-1]
    chunk = max(1, (2 ** 24 - 1) // max(int(bound), 1))
    if k <= chunk:
        return backend.matmul(a, b).astype(np.int64)
    if -(-k // chunk) > 4:
        # one float64 product is exact too (K * 2**16 < 2**53) and beats many chunks
        return backend.matmul(a.astype(np.float64), b.astype(np.float64)).astype(np.int64)
    acc = None
    for start in range(0, k, chunk):
        part = backend.matmul(a[..., start:start + chunk], b[..., start:start + chunk, :])
        acc = part.astype(np.int64) if acc is None else acc + part.astype(np.int64)
    return acc


def int_matmul(backend, a, b_t, a_zero_point=0, b_zero_points=None, b_sums=None):
    """``sum_k (a[i, k] - za) * (b_t[k, j] - zb[j])`` exactly, as int64 ``(M, N)``, for
    integer arrays ``a`` ``(M, K)`` and ``b_t`` ``(K, N)`` of 8 bits (given as int8/uint8, or
    as float32 holding such values with their NumPy integer dtype unknown: then 255 bounds
    them). ``b_sums`` are ``b_t``'s column sums, when the caller keeps them."""
    xp = backend.xp
    k = a.shape[1]
    bound = _abs_max(a.dtype) * _abs_max(b_t.dtype)
    acc = exact_matmul(backend, a.astype(np.float32, copy=False),
                       b_t.astype(np.float32, copy=False), bound)
    if a_zero_point:
        if b_sums is None:
            b_sums = b_t.sum(axis=0, dtype=np.int64)
        acc -= a_zero_point * b_sums[None, :]
    if b_zero_points is not None:
        zb = xp.asarray(b_zero_points, dtype=np.int64)
        if xp.any(zb):
            acc -= a.sum(axis=1, dtype=np.int64)[:, None] * zb[None, :]
            acc += k * a_zero_point * zb[None, :]
    return acc


def _abs_max(np_dtype):
    if np.dtype(np_dtype).kind == "f":
        return 255
    info = np.iinfo(np_dtype)
    return max(abs(int(info.min)), abs(int(info.max)))


def requantize(xp, acc, act_times_w_scale, bias, out_scale, out_zero_point, out_dtype,
               relu=False):
    """FBGEMM's output pipeline: int64 accumulators ``acc`` with float ``bias`` to
    ``out_dtype`` integers of ``out_scale``/``out_zero_point``: ``round((acc + bias / s) *
    (s / out_scale)) + zp`` in float32, ``s`` the input times weight scale.
    ``act_times_w_scale`` and ``bias`` broadcast against ``acc`` (per channel or scalar)."""
    f32 = np.float32
    scale = xp.asarray(act_times_w_scale, dtype=np.float32)
    multiplier = scale / f32(out_scale)
    x = acc.astype(np.float32)
    if bias is not None:
        x += bias.astype(np.float32, copy=False) / scale
    x *= multiplier
    v = xp.rint(x, out=x) + f32(out_zero_point)
    lo, hi = _RANGE[out_dtype]
    if relu:
        lo = max(lo, out_zero_point)
    return xp.clip(v, lo, hi).astype(out_dtype.np)


# ---- the ops -----------------------------------------------------------------------------------

def _scalar(value, name):
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise RuntimeError(f"quantize_per_tensor(): {name} must be a one-element tensor, got "
                               f"shape {list(value.shape)}")
        return value.item()
    return value


def quantize_per_tensor(input, scale, zero_point, dtype):
    """``clamp(round(input / scale) + zero_point)`` stored as ``dtype`` (qint8, quint8,
    qint32). ``input`` may be a list of tensors, with ``scale`` and ``zero_point`` tensors
    holding one value per tensor; the result is then a tuple."""
    if isinstance(input, (list, tuple)):
        scales = scale.tolist() if isinstance(scale, Tensor) else list(scale)
        zps = zero_point.tolist() if isinstance(zero_point, Tensor) else list(zero_point)
        if not len(input) == len(scales) == len(zps):
            raise RuntimeError("quantize_per_tensor(): expected one scale and one zero_point "
                               f"per tensor, got {len(input)} tensors, {len(scales)} scales and "
                               f"{len(zps)} zero_points")
        return tuple(quantize_per_tensor(t, float(dt.float32.np.type(s)), z, dtype)
                     for t, s, z in zip(input, scales, zps))
    _check_qdtype(dtype, "quantize_per_tensor")
    x = _float_input(input, "quantize_per_tensor")
    scale, zero_point = float(_scalar(scale, "scale")), int(_scalar(zero_point, "zero_point"))
    if scale <= 0 or not math.isfinite(scale):
        raise RuntimeError(f"quantize_per_tensor(): scale must be a positive finite number, got "
                           f"{scale}")
    lo, hi = _RANGE[dtype]
    if not lo <= zero_point <= hi:
        raise RuntimeError(f"quantize_per_tensor(): zero_point {zero_point} is outside the "
                           f"range [{lo}, {hi}] of {dtype}")
    q = quantize_array(input._backend.xp, x, scale, zero_point, dtype)
    return wrap_quantized(q, dtype, input, (qs.per_tensor_affine, scale, zero_point))


def quantize_per_tensor_dynamic(input, dtype, reduce_range):
    """Quantize per tensor with the qparams FBGEMM's dynamic ops choose from ``input``'s range
    (``reduce_range`` halves the integer range)."""
    if dtype not in (dt.qint8, dt.quint8):
        raise RuntimeError(f"quantize_per_tensor_dynamic(): dtype must be ember.qint8 or "
                           f"ember.quint8, got {dtype}")
    x = _float_input(input, "quantize_per_tensor_dynamic")
    lo, hi = _RANGE[dtype]
    mn, mx = (float(x.min()), float(x.max())) if x.size else (0.0, 0.0)
    scale, zp = choose_qparams(mn, mx, lo, hi, reduce_range)
    return quantize_per_tensor(input, scale, zp, dtype)


def _channel_params(scales, zero_points, size, axis, fn):
    if not isinstance(scales, Tensor) or not isinstance(zero_points, Tensor):
        raise TypeError(f"{fn}(): scales and zero_points must be tensors")
    s = scales._backend.to_numpy(scales._data).astype(np.float64).reshape(-1)
    z = zero_points._backend.to_numpy(zero_points._data)
    if scales.ndim != 1 or zero_points.ndim != 1:
        raise RuntimeError(f"{fn}(): scales and zero_points must be 1-D tensors")
    if s.size != size or z.size != size:
        raise RuntimeError(f"{fn}(): expected {size} scales and zero points along axis {axis}, "
                           f"got {s.size} and {z.size}")
    return s, (z.astype(np.float64) if z.dtype.kind == "f" else z.astype(np.int64))


def quantize_per_channel(input, scales, zero_points, axis, dtype):
    """Quantize with one ``scales[c]``/``zero_points[c]`` per slice ``c`` along ``axis``."""
    _check_qdtype(dtype, "quantize_per_channel")
    x = _float_input(input, "quantize_per_channel")
    if not 0 <= axis < x.ndim:
        raise RuntimeError(f"quantize_per_channel(): axis {axis} is out of range for a "
                           f"{x.ndim}-D input")
    s, z = _channel_params(scales, zero_points, x.shape[axis], axis, "quantize_per_channel")
    q = quantize_array_per_channel(input._backend.xp, x, s, z, axis, dtype)
    return wrap_quantized(q, dtype, input, (qs.per_channel_affine, s, z, axis))


_QDTYPE_OF_INT = {dt.int8: dt.qint8, dt.uint8: dt.quint8, dt.int32: dt.qint32}


def _int_input(t, fn):
    if t._dtype not in _QDTYPE_OF_INT:
        raise RuntimeError(f"{fn}(): expected an int8, uint8 or int32 tensor, got {t._dtype}")
    return t._backend.xp.array(t._data, copy=True), _QDTYPE_OF_INT[t._dtype]


def _make_per_tensor_quantized_tensor(input, scale, zero_point):
    """A quantized tensor whose int_repr() is (a copy of) integer tensor ``input``."""
    q, dtype = _int_input(input, "_make_per_tensor_quantized_tensor")
    return wrap_quantized(q, dtype, input, (qs.per_tensor_affine, float(scale), int(zero_point)))


def _make_per_channel_quantized_tensor(input, scale, zero_point, axis):
    q, dtype = _int_input(input, "_make_per_channel_quantized_tensor")
    s, z = _channel_params(scale, zero_point, q.shape[axis], axis,
                           "_make_per_channel_quantized_tensor")
    return wrap_quantized(q, dtype, input, (qs.per_channel_affine, s, z, axis))


def _empty_affine_quantized(size, *, scale=1.0, zero_point=0, dtype=dt.quint8, device=None,
                            layout=None, pin_memory=False, memory_format=None):
    """A per-tensor quantized tensor of ``size`` (its integers zero, where torch's are
    uninitialised)."""
    from .creation import zeros
    _check_qdtype(dtype, "_empty_affine_quantized")
    ints = zeros(*size, dtype=dt.INT_REPR_DTYPE[dtype], device=device)
    return wrap_quantized(ints._data, dtype, ints, (qs.per_tensor_affine, float(scale),
                                                    int(zero_point)))


def _empty_per_channel_affine_quantized(size, *, scales, zero_points, axis, dtype=dt.quint8,
                                        device=None, layout=None, pin_memory=False,
                                        memory_format=None):
    """A per-channel quantized tensor of ``size`` (its integers zero)."""
    from .creation import zeros
    _check_qdtype(dtype, "_empty_per_channel_affine_quantized")
    ints = zeros(*size, dtype=dt.INT_REPR_DTYPE[dtype], device=device)
    s, z = _channel_params(scales, zero_points, ints.shape[axis], axis,
                           "_empty_per_channel_affine_quantized")
    return wrap_quantized(ints._data, dtype, ints, (qs.per_channel_affine, s, z, axis))


def dequantize(input):
    """The float32 values a quantized tensor stands for (a float tensor is returned as it is;
    a list of tensors gives a list)."""
    if isinstance(input, (list, tuple)):
        return [dequantize(t) for t in input]
    if not isinstance(input, QuantizedTensor):
        return input
    return _wrap(dequantize_array(input), dt.float32, input)


def int_repr(self):
    """The stored integers as a plain int8/uint8/int32 tensor (a copy)."""
    if not isinstance(self, QuantizedTensor):
        raise _not_for(self, "int_repr")
    return _wrap(self._data.array.copy(), dt.INT_REPR_DTYPE[self._dtype], self)


def _per_tensor_only(self, op):
    if not isinstance(self, QuantizedTensor):
        raise _not_for(self, op)
    if self._qscheme not in _PER_TENSOR:
        raise RuntimeError(f"Expected quantizer->qscheme() == kPerTensorAffine to be true, but "
                           f"got false. ({op}() of a {self._qscheme} tensor)")


def _per_channel_only(self, op):
    if not isinstance(self, QuantizedTensor):
        raise _not_for(self, op)
    if self._qscheme in _PER_TENSOR:
        raise RuntimeError(f"Expected quantizer->qscheme() == kPerChannelAffine || "
                           f"quantizer->qscheme() == kPerChannelAffineFloatQParams to be true, "
                           f"but got false. ({op}() of a {self._qscheme} tensor)")


def q_scale(self):
    _per_tensor_only(self, "q_scale")
    return self._scale


def q_zero_point(self):
    _per_tensor_only(self, "q_zero_point")
    return self._zero_point


def q_per_channel_scales(self):
    _per_channel_only(self, "q_per_channel_scales")
    xp = self._backend.xp
    return _wrap(xp.asarray(self._scales, dtype=np.float64).copy(), dt.float64, self)


def q_per_channel_zero_points(self):
    _per_channel_only(self, "q_per_channel_zero_points")
    z = self._backend.xp.asarray(self._zero_points).copy()
    return _wrap(z, dt.float64 if z.dtype.kind == "f" else dt.int64, self)


def q_per_channel_axis(self):
    _per_channel_only(self, "q_per_channel_axis")
    return self._axis


def qscheme(self):
    if not isinstance(self, QuantizedTensor):
        raise _not_for(self, "qscheme")
    return self._qscheme


def quantized_cat(tensors, dim=0, scale=None, zero_point=None, out=None):
    """``ember.cat`` of quantized tensors (per tensor, one dtype): the result has the first
    tensor's qparams (or ``scale``/``zero_point``); others with different qparams are
    requantized to them, as torch does (with its warning)."""
    from .shape import cat as float_cat
    ref = tensors[0]
    for i, t in enumerate(tensors):
        if not isinstance(t, QuantizedTensor):
            raise RuntimeError(f"cat(): expected all tensors to be quantized, but tensor {i} is "
                               f"{t._dtype}")
        if t._qscheme not in _PER_TENSOR:
            raise RuntimeError("Only per-tensor quantization is supported in 'cat'!")
        if t._dtype is not ref._dtype:
            raise RuntimeError(f"cat(): expected all quantized tensors to have dtype "
                               f"{ref._dtype}, got {t._dtype} for tensor {i}")
    s = ref._scale if scale is None else float(scale)
    z = ref._zero_point if zero_point is None else int(zero_point)
    if out is not None:
        raise RuntimeError("cat(): out= is not supported for quantized tensors")
    same = all(t._scale == s and t._zero_point == z for t in tensors)
    if same:
        ints = float_cat([t._int_tensor() for t in tensors], dim)
        return wrap_quantized(ints._data, ref._dtype, ref, (qs.per_tensor_affine, s, z))
    import warnings
    warnings.warn("All inputs of this cat operator must share the same quantization "
                  "parameters. Otherwise large numerical inaccuracies may occur.", UserWarning,
                  stacklevel=3)
    values = float_cat([dequantize(t) for t in tensors], dim)
    return quantize_per_tensor(values, s, z, ref._dtype)


# ---- linear: torch.ops.quantized.linear_prepack / linear / linear_dynamic ----------------------

class LinearPackedParams:
    """A quantized linear layer's weight and float bias as the kernels use them (torch's
    ``LinearPackedParamsBase``): the int8 weight transposed to ``(K, N)`` in float32 for BLAS,
    its per-output-channel sums (for the input's zero point), scales and zero points."""

    def __init__(self, weight, bias=None):
        if not isinstance(weight, QuantizedTensor) or weight._dtype is not dt.qint8:
            raise RuntimeError("quantized::linear_prepack (fbgemm): Weight should be a "
                               f"quantized qint8 tensor, got {getattr(weight, 'dtype', weight)}")
        if weight.ndim != 2:
            raise RuntimeError(f"quantized::linear_prepack (fbgemm): Weight tensor rank should be "
                               f"== 2, got {weight.ndim}")
        n = weight.shape[0]
        if bias is not None:
            if isinstance(bias, QuantizedTensor) or not bias._dtype.is_floating_point:
                raise RuntimeError("quantized::linear_prepack: bias should be a float tensor")
            if bias.ndim != 1 or bias.shape[0] != n:
                raise RuntimeError(f"quantized::linear_prepack: bias should be a vector (1D "
                                   f"Tensor) of size {n}, got shape {list(bias.shape)}")
            bias = bias.detach()
        self.weight, self.bias = weight, bias
        self._pack()

    def _pack(self):
        weight = self.weight
        xp = weight._backend.xp
        w = weight._data.array
        n = w.shape[0]
        if weight._qscheme in _PER_TENSOR:
            scales = xp.full(n, weight._scale, dtype=np.float32)
            zps = xp.full(n, weight._zero_point, dtype=np.int64)
        else:
            if weight._axis != 0:
                raise RuntimeError("quantized::linear_prepack: a per-channel weight must be "
                                   f"quantized along axis 0, got axis {weight._axis}")
            scales = xp.asarray(weight._scales, dtype=np.float32)
            zps = xp.asarray(weight._zero_points).astype(np.int64)
        self._w_t = xp.ascontiguousarray(w.T.astype(np.float32))
        self._w_sums = w.sum(axis=1, dtype=np.int64)
        self._w_scales, self._w_zps = scales, zps
        self._bias = None if self.bias is None else self.bias._data.astype(np.float32)

    def unpack(self):
        return self.weight, self.bias

    def __getstate__(self):
        return {"weight": self.weight, "bias": self.bias}

    def __setstate__(self, state):
        self.weight, self.bias = state["weight"], state["bias"]
        self._pack()

    def __repr__(self):
        return repr((self.weight, self.bias))

    def accumulate(self, a, a_zero_point):
        """The exact int64 ``(M, N)`` products of uint8 rows ``a`` ``(M, K)`` with the weight,
        both zero points taken out."""
        backend = self.weight._backend
        acc = exact_matmul(backend, a.astype(np.float32), self._w_t, 255 * 128)
        if a_zero_point:
            acc -= a_zero_point * self._w_sums[None, :]
        zps = self._w_zps
        if backend.xp.any(zps):
            acc -= a.sum(axis=1, dtype=np.int64)[:, None] * zps[None, :]
            acc += a.shape[1] * a_zero_point * zps[None, :]
        return acc


def linear_prepack(weight, bias=None):
    """torch.ops.quantized.linear_prepack: a qint8 ``(out, in)`` weight and float bias packed
    for ``linear``/``linear_dynamic``."""
    return LinearPackedParams(weight, bias)


def linear_unpack(packed):
    """torch.ops.quantized.linear_unpack: ``(weight, bias)``."""
    return packed.unpack()


def _rows(x, k, fn):
    if x.ndim < 1 or x.shape[-1] != k:
        raise RuntimeError(f"{fn}: mat1 and mat2 shapes cannot be multiplied (input of shape "
                           f"{list(x.shape)} with a weight of {k} input features)")
    return x.reshape(-1, k), tuple(x.shape[:-1])


def linear(x, packed, output_scale, output_zero_point, relu=False):
    """torch.ops.quantized.linear: quint8 ``x`` (``(*, in)``, per tensor) times the packed int8
    weight, plus bias, requantized to ``output_scale``/``output_zero_point`` (quint8)."""
    if not isinstance(x, QuantizedTensor) or x._dtype is not dt.quint8:
        raise RuntimeError("quantized::linear (fbgemm): Expected input data type to be quint8, "
                           f"got {getattr(x, 'dtype', type(x).__name__)}")
    if x._qscheme not in _PER_TENSOR:
        raise RuntimeError("quantized::linear (fbgemm): the input must be quantized per tensor")
    k = packed._w_t.shape[0]
    a, lead = _rows(x._data.array, k, "quantized::linear")
    acc = packed.accumulate(a, x._zero_point)
    scale = np.float32(x._scale) * packed._w_scales
    out = requantize(x._backend.xp, acc, scale, packed._bias, output_scale, output_zero_point,
                     dt.quint8, relu)
    return wrap_quantized(out.reshape(lead + (out.shape[-1],)), dt.quint8, x,
                          (qs.per_tensor_affine, float(output_scale), int(output_zero_point)))


def linear_relu(x, packed, output_scale, output_zero_point):
    """torch.ops.quantized.linear_relu: ``linear`` with the ReLU fused (clamped at the output
    zero point)."""
    return linear(x, packed, output_scale, output_zero_point, relu=True)


def linear_dynamic(x, packed, reduce_range=False, relu=False):
    """torch.ops.quantized.linear_dynamic: float ``x`` quantized to quint8 with qparams from its
    own range (FBGEMM's choice; ``reduce_range`` uses 7 bits), multiplied exactly with the
    int8 weight, and the result returned in float32 with the float bias added."""
    if isinstance(x, QuantizedTensor) or not x._dtype.is_floating_point:
        raise RuntimeError("quantized::linear_dynamic: Input tensor should be a float tensor, "
                           f"got {x._dtype}")
    xp = x._backend.xp
    k = packed._w_t.shape[0]
    data = x._data if x._data.dtype == np.float32 else x._data.astype(np.float32)
    rows, lead = _rows(data, k, "quantized::linear_dynamic")
    mn, mx = (float(rows.min()), float(rows.max())) if rows.size else (0.0, 0.0)
    scale, zp = choose_qparams(mn, mx, 0, 255, reduce_range)
    a = quantize_array(xp, rows, scale, zp, dt.quint8)
    acc = packed.accumulate(a, zp)
    out = acc.astype(np.float32)
    out *= np.float32(scale) * packed._w_scales
    if packed._bias is not None:
        out += packed._bias
    if relu:
        xp.maximum(out, 0, out=out)
    return _wrap(out.reshape(lead + (out.shape[-1],)), dt.float32, x)


def linear_relu_dynamic(x, packed, reduce_range=False):
    return linear_dynamic(x, packed, reduce_range, relu=True)


class LinearPackedParamsFP16:
    """A float16-weight linear layer's packed parameters (torch's fp16 ``linear_prepack``):
    the weight rounded to float16 (saturated to its range) and the float bias."""

    def __init__(self, weight, bias=None):
        if isinstance(weight, QuantizedTensor) or not weight._dtype.is_floating_point:
            raise RuntimeError("quantized::linear_prepack_fp16: weight should be a float tensor")
        xp = weight._backend.xp
        big = float(np.finfo(np.float16).max)
        w = xp.clip(weight._data.astype(np.float32), -big, big).astype(np.float16)
        self.weight = _wrap(w.astype(np.float32), dt.float32, weight)
        self.bias = None if bias is None else bias.detach()
        self._w_t = xp.ascontiguousarray(w.astype(np.float32).T)

    def unpack(self):
        return self.weight, self.bias

    def __getstate__(self):
        return {"weight": self.weight, "bias": self.bias}

    def __setstate__(self, state):
        self.__init__(state["weight"], state["bias"])


def linear_prepack_fp16(weight, bias=None):
    return LinearPackedParamsFP16(weight, bias)


def linear_unpack_fp16(packed):
    return packed.unpack()


def linear_dynamic_fp16(x, packed, relu=False):
    """torch.ops.quantized.linear_dynamic_fp16: float32 ``x`` times the float16 weight,
    accumulated in float32, plus bias."""
    backend = x._backend
    k = packed._w_t.shape[0]
    data = x._data if x._data.dtype == np.float32 else x._data.astype(np.float32)
    rows, lead = _rows(data, k, "quantized::linear_dynamic_fp16")
    out = backend.matmul(rows, packed._w_t)
    if packed.bias is not None:
        out += packed.bias._data.astype(np.float32)
    if relu:
        backend.xp.maximum(out, 0, out=out)
    return _wrap(out.reshape(lead + (out.shape[-1],)), dt.float32, x)


# ---- convolution: torch.ops.quantized.conv{1,2,3}d_prepack / conv{1,2,3}d ------------------------

class ConvPackedParams:
    """A quantized convolution's weight ``(out, in / groups, *kernel)`` (qint8), float bias and
    geometry, with the weight laid out for the kernels: per group ``(out / groups, in / groups
    * prod(kernel))`` in float32, its zero points taken out (the weight is small)."""

    def __init__(self, weight, bias, stride, padding, dilation, groups, transposed=False):
        if not isinstance(weight, QuantizedTensor) or weight._dtype is not dt.qint8:
            raise RuntimeError("quantized::conv_prepack (fbgemm): Weight should be a quantized "
                               f"qint8 tensor, got {getattr(weight, 'dtype', weight)}")
        if transposed:
            raise NotImplementedError("quantized transposed convolution (ConvTranspose) is not "
                                      "implemented in Ember")
        dims = weight.ndim - 2
        if dims < 1:
            raise RuntimeError(f"quantized::conv_prepack: weight must have at least 3 dims, got "
                               f"{weight.ndim}")
        self.weight = weight
        self.bias = None if bias is None else bias.detach()
        self.stride = _tuple(stride, dims)
        self.padding = _tuple(padding, dims)
        self.dilation = _tuple(dilation, dims)
        self.groups = int(groups)
        if weight.shape[0] % self.groups:
            raise RuntimeError(f"quantized::conv_prepack: out channels {weight.shape[0]} are not "
                               f"divisible by groups {self.groups}")
        self._pack()

    def _pack(self):
        weight = self.weight
        xp = weight._backend.xp
        w = weight._data.array
        cout = w.shape[0]
        if weight._qscheme in _PER_TENSOR:
            scales = xp.full(cout, weight._scale, dtype=np.float32)
            zps = xp.full(cout, weight._zero_point, dtype=np.int64)
        else:
            if weight._axis != 0:
                raise RuntimeError("quantized::conv_prepack: a per-channel weight must be "
                                   f"quantized along axis 0, got axis {weight._axis}")
            scales = xp.asarray(weight._scales, dtype=np.float32)
            zps = xp.asarray(weight._zero_points).astype(np.int64)
        centered = w.reshape(cout, -1).astype(np.float32) - zps[:, None].astype(np.float32)
        self._w = centered.reshape(self.groups, cout // self.groups, -1)
        self._w_bound = int(xp.abs(centered).max()) if centered.size else 1
        self._w_scales = scales
        self._bias = None if self.bias is None else self.bias._data.astype(np.float32)

    def unpack(self):
        return self.weight, self.bias

    def __getstate__(self):
        return {k: getattr(self, k) for k in ("weight", "bias", "stride", "padding", "dilation",
                                              "groups")}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._pack()

    def __repr__(self):
        return repr((self.weight, self.bias))


def _tuple(value, n):
    if isinstance(value, int):
        return (value,) * n
    value = tuple(int(v) for v in value)
    return value * n if len(value) == 1 else value


def conv_prepack(weight, bias, stride, padding, dilation, groups):
    """torch.ops.quantized.conv{1,2,3}d_prepack."""
    return ConvPackedParams(weight, bias, stride, padding, dilation, groups)


conv1d_prepack = conv2d_prepack = conv3d_prepack = conv_prepack


def conv(x, packed, output_scale, output_zero_point, relu=False):
    """torch.ops.quantized.conv{1,2,3}d: quint8 ``(N, C, *S)`` input, int8 weight, requantized
    to ``output_scale``/``output_zero_point``. The input's zero point is taken out of the
    input before im2col (``O(input)``), so the zero padding stands for the real value 0 as
    FBGEMM pads with the zero point."""
    from .conv import im2col, COLUMN_CACHE, _batch_first
    if not isinstance(x, QuantizedTensor) or x._dtype is not dt.quint8:
        raise RuntimeError("quantized::conv (fbgemm): Expected activation data type to be "
                           f"quint8, got {getattr(x, 'dtype', type(x).__name__)}")
    if x._qscheme not in _PER_TENSOR:
        raise RuntimeError("quantized::conv (fbgemm): the input must be quantized per tensor")
    weight = packed.weight
    dims = weight.ndim - 2
    if x.ndim != dims + 2:
        raise RuntimeError(f"quantized::conv{dims}d: expected a {dims + 2}-D input (N, C, "
                           f"{'*S' if dims > 1 else 'L'}), got shape {list(x.shape)}")
    cin = weight.shape[1] * packed.groups
    if x.shape[1] != cin:
        raise RuntimeError(f"quantized::conv{dims}d: input has {x.shape[1]} channels, the "
                           f"weight expects {cin}")
    backend = x._backend
    xp = backend.xp
    data = x._data.array.astype(np.float32) - np.float32(x._zero_point)
    pads = tuple((p, p) for p in packed.padding)
    kernel = weight.shape[2:]
    cols, out_shape = im2col(backend, data, kernel, packed.stride, pads, packed.dilation)
    g = packed.groups
    columns = cols.shape[1]
    cols_g = cols.reshape(g, -1, columns)
    bound = 255 * packed._w_bound
    acc = xp.concatenate([exact_matmul(backend, packed._w[i], cols_g[i], bound)
                          for i in range(g)]) if g > 1 else exact_matmul(
        backend, packed._w[0], cols_g[0], bound)
    COLUMN_CACHE.give(cols)
    scale = (np.float32(x._scale) * packed._w_scales)[:, None]
    bias = None if packed._bias is None else packed._bias[:, None]
    out = requantize(xp, acc, scale, bias, output_scale, output_zero_point, dt.quint8, relu)
    out = _batch_first(xp, out, x.shape[0], out_shape)
    return wrap_quantized(out, dt.quint8, x,
                          (qs.per_tensor_affine, float(output_scale), int(output_zero_point)))


def conv_relu(x, packed, output_scale, output_zero_point):
    return conv(x, packed, output_scale, output_zero_point, relu=True)


conv1d = conv2d = conv3d = conv
conv1d_relu = conv2d_relu = conv3d_relu = conv_relu


def conv_dynamic(x, packed, reduce_range=False):
    """torch.ops.quantized.conv{1,2,3}d_dynamic: float ``x`` quantized to quint8 with qparams
    from its own range, convolved with the int8 weight and, as FBGEMM's dynamic convolution
    does, requantized to the input's own qparams before the float32 result is returned (the
    loss torch warns of: outputs beyond the input's range saturate)."""
    if isinstance(x, QuantizedTensor) or not x._dtype.is_floating_point:
        raise RuntimeError("quantized::conv_dynamic: Input tensor should be a float tensor, "
                           f"got {x._dtype}")
    data = x._data if x._data.dtype == np.float32 else x._data.astype(np.float32)
    mn, mx = (float(data.min()), float(data.max())) if data.size else (0.0, 0.0)
    scale, zp = choose_qparams(mn, mx, 0, 255, reduce_range)
    q = wrap_quantized(quantize_array(x._backend.xp, data, scale, zp, dt.quint8), dt.quint8, x,
                       (qs.per_tensor_affine, float(scale), int(zp)))
    return dequantize(conv(q, packed, scale, zp))


conv1d_dynamic = conv2d_dynamic = conv3d_dynamic = conv_dynamic


# ---- elementwise: torch.ops.quantized.add / mul / relu ..., and the float round trips ----------

def _dequantize_fused(t):
    """Per-tensor dequantize as torch's vectorised elementwise kernels do it: one rounding of
    ``q * scale + (-zp * scale)`` (a fused multiply-add with the premultiplied zero point)."""
    if t._qscheme not in _PER_TENSOR:
        raise RuntimeError("Only per tensor quantization is supported in this quantized op, got "
                           f"{t._qscheme}")
    s = np.float32(t._scale)
    premul = np.float64(np.float32(-t._zero_point) * s)
    return (t._data.array.astype(np.float64) * np.float64(s) + premul).astype(np.float32)


def _requantize_float(xp, x, scale, zero_point, dtype):
    """``clamp(round(x * (1 / scale)) + zp)``: how torch's elementwise kernels quantize."""
    lo, hi = _RANGE[dtype]
    v = xp.rint(x * (np.float32(1.0) / np.float32(scale))) + np.float32(zero_point)
    return xp.clip(v, lo, hi).astype(dtype.np)


def _check_binary(qa, qb, op):
    for t in (qa, qb):
        if not isinstance(t, QuantizedTensor):
            raise RuntimeError(f"quantized::{op}: expected quantized tensors, got {t.dtype}")
    if qa._dtype is not qb._dtype:
        raise RuntimeError(f"quantized::{op}: both inputs must have the same quantized dtype, "
                           f"got {qa._dtype} and {qb._dtype}")


def _elementwise(qa, qb, scale, zero_point, fn, op, relu):
    _check_binary(qa, qb, op)
    xp = qa._backend.xp
    x = fn(_dequantize_fused(qa), _dequantize_fused(qb))
    if relu:
        xp.maximum(x, 0, out=x)
    out = _requantize_float(xp, x, scale, zero_point, qa._dtype)
    return wrap_quantized(out, qa._dtype, qa, (qs.per_tensor_affine, float(scale),
                                                int(zero_point)))


def add(qa, qb, scale, zero_point):
    """torch.ops.quantized.add: ``qa + qb`` requantized to ``scale``/``zero_point``."""
    return _elementwise(qa, qb, scale, zero_point, np.add, "add", False)


def add_relu(qa, qb, scale, zero_point):
    return _elementwise(qa, qb, scale, zero_point, np.add, "add_relu", True)


def mul(qa, qb, scale, zero_point):
    """torch.ops.quantized.mul: ``qa * qb`` requantized to ``scale``/``zero_point``."""
    return _elementwise(qa, qb, scale, zero_point, np.multiply, "mul", False)


def mul_relu(qa, qb, scale, zero_point):
    return _elementwise(qa, qb, scale, zero_point, np.multiply, "mul_relu", True)


def add_scalar(qa, value):
    """torch.ops.quantized.add_scalar: ``qa + value``: the integers kept and the zero point
    moved against the scalar when it stays in range, as torch's."""
    if not isinstance(qa, QuantizedTensor):
        raise RuntimeError("quantized::add_scalar: expected a quantized tensor")
    xp = qa._backend.xp
    lo, hi = _RANGE[qa._dtype]
    s, z = qa._scale, qa._zero_point
    # torch's rule: the zero point moves against the scalar, clamped to the range; values that
    # leave the range saturate
    shift = int(np.rint(value / s))
    new_z = z - shift
    if lo <= new_z <= hi:
        out = qa._data.array.copy()
        return wrap_quantized(out, qa._dtype, qa, (qs.per_tensor_affine, s, new_z))
    # the shifted range no longer holds 0 at an integer: new qparams over it (torch's scale
    # differs from these in the 4th digit; the values agree within one step)
    new_s, new_z = choose_qparams((lo - z) * s + value, (hi - z) * s + value, lo, hi)
    x = _dequantize_fused(qa) + np.float32(value)
    return wrap_quantized(_requantize_float(xp, x, new_s, new_z, qa._dtype), qa._dtype, qa,
                          (qs.per_tensor_affine, new_s, new_z))


def mul_scalar(qa, value):
    """torch.ops.quantized.mul_scalar: ``qa * value`` by the scale (the integers stay; a
    negative scalar mirrors them about the range)."""
    if not isinstance(qa, QuantizedTensor):
        raise RuntimeError("quantized::mul_scalar: expected a quantized tensor")
    lo, hi = _RANGE[qa._dtype]
    s, z = qa._scale, qa._zero_point
    value = float(value)
    if value == 0:
        out = qa._backend.xp.zeros_like(qa._data.array)
        return wrap_quantized(out, qa._dtype, qa, (qs.per_tensor_affine, 1.0, 0))
    if value > 0:
        return wrap_quantized(qa._data.array.copy(), qa._dtype, qa,
                              (qs.per_tensor_affine, s * value, z))
    mirrored = (hi - qa._data.array.astype(np.int64) + lo).astype(qa._dtype.np)
    return wrap_quantized(mirrored, qa._dtype, qa,
                          (qs.per_tensor_affine, s * -value, hi - z + lo))


def relu(q):
    """``relu`` of a quantized tensor: the integers clamped at the zero point, qparams kept."""
    if not isinstance(q, QuantizedTensor) or q._qscheme not in _PER_TENSOR:
        raise RuntimeError("quantized relu expects a per-tensor quantized tensor")
    xp = q._backend.xp
    out = xp.maximum(q._data.array, np.array(q._zero_point).astype(q._dtype.np))
    return wrap_quantized(out, q._dtype, q, (qs.per_tensor_affine, q._scale, q._zero_point))


def relu6(q):
    """``relu6`` of a quantized tensor, qparams kept (6 quantized with them is the top)."""
    if not isinstance(q, QuantizedTensor) or q._qscheme not in _PER_TENSOR:
        raise RuntimeError("quantized relu6 expects a per-tensor quantized tensor")
    xp = q._backend.xp
    lo, hi = _RANGE[q._dtype]
    six = int(np.clip(np.rint(np.float32(6.0) / np.float32(q._scale)) + q._zero_point, lo, hi))
    out = xp.clip(q._data.array, q._zero_point, six).astype(q._dtype.np)
    return wrap_quantized(out, q._dtype, q, (qs.per_tensor_affine, q._scale, q._zero_point))


def via_float(q, fn, scale=None, zero_point=None):
    """``fn`` (a float function on arrays) of a quantized tensor, requantized to
    ``scale``/``zero_point`` (default: ``q``'s own): how torch's quantized activations and
    normalisations compute."""
    if not isinstance(q, QuantizedTensor):
        raise RuntimeError(f"expected a quantized tensor, got {getattr(q, 'dtype', q)}")
    scale = q._scale if scale is None else float(scale)
    zero_point = q._zero_point if zero_point is None else int(zero_point)
    xp = q._backend.xp
    y = fn(_dequantize_fused(q))
    out = _requantize_float(xp, y.astype(np.float32, copy=False), scale, zero_point, q._dtype)
    return wrap_quantized(out, q._dtype, q, (qs.per_tensor_affine, scale, zero_point))


def matmul(qa, qb, scale, zero_point):
    """torch.ops.quantized.matmul: the product of the dequantized operands in float32,
    quantized to ``scale``/``zero_point`` (torch's CPU kernel does the same)."""
    _check_binary(qa, qb, "matmul")
    backend = qa._backend
    y = backend.matmul(dequantize_array(qa), dequantize_array(qb))
    out = quantize_array(backend.xp, y, scale, zero_point, qa._dtype)
    return wrap_quantized(out, qa._dtype, qa, (qs.per_tensor_affine, float(scale),
                                                int(zero_point)))


def cat(tensors, dim=0, scale=None, zero_point=None):
    """torch.ops.quantized.cat: quantized tensors joined along ``dim``, requantized to
    ``scale``/``zero_point``."""
    return quantized_cat(list(tensors), dim, scale, zero_point)



# ---- torch's QuantizedCPU kernels of the ordinary ops ----------------------------------------
# The ops torch runs on a quantized tensor directly, as methods of ``QuantizedTensor`` (class
# attributes: the float path pays nothing). Each works on the integers where the op is
# monotone or a selection (max, sort, pooling by max, clamp, relu) and so is exact; the others
# dequantize, compute in float32 and requantize as torch's vectorised kernels do. Output qparams
# are torch's: the input's, except the fixed-range activations (sigmoid, tanh, hardsigmoid)
# whose output range is known in advance.

_PER_TENSOR_ERROR = ("Expected quantizer->qscheme() == kPerTensorAffine to be true, but got "
                     "false.  (Could this error message be improved?  If so, please report an "
                     "enhancement request to PyTorch.)")


def _require_per_tensor(q, message=_PER_TENSOR_ERROR):
    if q._qscheme not in _PER_TENSOR:
        raise RuntimeError(message)


def _same_params(q, ints):
    """A quantized tensor around integer array ``ints`` with ``q``'s dtype and qparams."""
    return wrap_quantized(ints, q._dtype, q, _qparams(q))


def _in_place(q, result):
    """Write ``result``'s integers (same dtype and qparams) into ``q``'s memory."""
    q._data.array[...] = result._data.array
    return q


def _quantize_scalar(q, value):
    """``value`` as one of ``q``'s integers (round half to even, clamped)."""
    lo, hi = _RANGE[q._dtype]
    v = np.rint(np.float32(value) * (np.float32(1.0) / np.float32(q._scale)))
    return int(np.clip(v + q._zero_point, lo, hi))


def q_relu(q):
    _require_per_tensor(q)
    return relu(q)


def q_relu_(q):
    return _in_place(q, q_relu(q))


def q_clamp(q, min=None, max=None):
    """``clamp`` on the integers: the bounds quantized with the tensor's qparams."""
    _require_per_tensor(q)
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    for bound in (min, max):
        if isinstance(bound, Tensor):
            raise RuntimeError("clamp of a quantized tensor takes Python number bounds, got a "
                               "tensor bound")
    lo, hi = _RANGE[q._dtype]
    lo = lo if min is None else _quantize_scalar(q, min)
    hi = hi if max is None else _quantize_scalar(q, max)
    out = q._backend.xp.minimum(q._backend.xp.maximum(q._data.array, lo), hi)
    return _same_params(q, out.astype(q._dtype.np))


def q_clamp_min(q, min):
    return q_clamp(q, min, None)


def q_clamp_max(q, max):
    return q_clamp(q, None, max)


def q_hardtanh(q, min_val=-1.0, max_val=1.0):
    return q_clamp(q, min_val, max_val)


# sigmoid and hardsigmoid map into [0, 1], tanh into [-1, 1]: torch fixes the output qparams so
# that range fills the integers
_FIXED_QPARAMS = {
    "sigmoid": {dt.quint8: (1.0 / 256, 0), dt.qint8: (1.0 / 256, -128),
                dt.qint32: (2.0 ** -32, 0)},
    "tanh": {dt.quint8: (2.0 / 256, 128), dt.qint8: (2.0 / 256, 0),
             dt.qint32: (2.0 ** -31, 0)},
}
_FIXED_QPARAMS["hardsigmoid"] = _FIXED_QPARAMS["sigmoid"]


def _fixed_range(q, fn, name):
    _require_per_tensor(q)
    scale, zero_point = _FIXED_QPARAMS[name][q._dtype]
    return via_float(q, fn, scale, zero_point)


def _sigmoid_array(x):
    return (np.float32(1) / (np.float32(1) + np.exp(-x))).astype(np.float32)


def q_sigmoid(q):
    return _fixed_range(q, _sigmoid_array, "sigmoid")


def q_tanh(q):
    return _fixed_range(q, lambda x: np.tanh(x), "tanh")


def q_hardsigmoid(q):
    return _fixed_range(q, lambda x: np.clip(x / np.float32(6) + np.float32(0.5), 0, 1),
                        "hardsigmoid")


def _reduce_float(q, fn):
    """A float reduction of ``q``'s values, quantized back with its qparams (torch's qmean and
    qstd dequantize, reduce in float and quantize with the input's quantizer)."""
    _require_per_tensor(q)
    values = _wrap(dequantize_array(q), dt.float32, q)
    out = fn(values)
    return quantize_per_tensor(out, q._scale, q._zero_point, q._dtype)


def q_mean(q, dim=None, keepdim=False, *, dtype=None):
    from .reduce import mean as float_mean
    if dtype is not None and dtype is not q._dtype:
        raise RuntimeError(f"mean(): a quantized tensor's mean keeps its dtype {q._dtype}, got "
                           f"dtype={dtype}")
    _require_per_tensor(q)
    dims = (tuple(range(q.ndim)) if dim is None or (isinstance(dim, (list, tuple)) and not dim)
            else (dim,) if isinstance(dim, int) else tuple(dim))
    dims = sorted(d % max(q.ndim, 1) for d in dims)
    if dims == list(range(q.ndim - len(dims), q.ndim)):
        # over the innermost dims torch averages the stored integers and rounds half to even
        # (the zero point cancels); elsewhere it averages the dequantized values
        xp = q._backend.xp
        axes = tuple(dims)
        m = q._data.array.astype(np.float64).mean(axis=axes, keepdims=bool(keepdim))
        lo, hi = _RANGE[q._dtype]
        return _same_params(q, xp.clip(xp.rint(m), lo, hi).astype(q._dtype.np))
    return _reduce_float(q, lambda v: float_mean(v, dim, keepdim))


def q_std(q, dim=None, unbiased=None, keepdim=False, *, correction=None):
    from .reduce import std as float_std
    return _reduce_float(q, lambda v: float_std(v, dim, unbiased, keepdim,
                                                correction=correction))


def _ints(q):
    """``q``'s integers as an int64 tensor: the order of the values (scale > 0)."""
    return _wrap(q._data.array.astype(np.int64), dt.int64, q)


def _back(q, int_result):
    return _same_params(q, int_result._data.astype(q._dtype.np))


def _extreme(q, which, dim, keepdim, other):
    from . import reduce
    from .reduce import _NO_DIM
    name = "Max" if which == "max" else "Min"
    _require_per_tensor(q, f"{name} operator for quantized tensors only works for per tensor "
                           "quantized tensors. Please open an issue on "
                           "https://github.com/pytorch/pytorch/issues if you need per channel "
                           "quantized tensor support.")
    if other is not None:
        raise _unsupported_op(q, f"{which}imum.out")
    fn = getattr(reduce, which)
    if dim is _NO_DIM:
        return _back(q, fn(_ints(q)))
    return _named_pair(fn(_ints(q), dim, keepdim), q)


def _named_pair(result, q):
    values, indices = result
    return type(result)((_back(q, values), indices))


def _unsupported_op(q, op):
    return NotImplementedError(f"Could not run 'aten::{op}' with arguments from the "
                               f"'{_backend_name(q)}' backend.")


def q_max(q, dim=None, keepdim=False, *, other=None):
    from .reduce import _NO_DIM
    if isinstance(dim, Tensor):
        other, dim = dim, None
    return _extreme(q, "max", _NO_DIM if dim is None else dim, keepdim, other)


def q_min(q, dim=None, keepdim=False, *, other=None):
    from .reduce import _NO_DIM
    if isinstance(dim, Tensor):
        other, dim = dim, None
    return _extreme(q, "min", _NO_DIM if dim is None else dim, keepdim, other)


def q_sort(q, dim=-1, descending=False, stable=None):
    from .indexing import sort as int_sort
    _require_per_tensor(q)
    return _named_pair(int_sort(_ints(q), dim, descending, stable), q)


def q_argsort(q, dim=-1, descending=False, stable=False):
    from .indexing import argsort as int_argsort
    _require_per_tensor(q)
    return int_argsort(_ints(q), dim, descending, stable)


def q_topk(q, k, dim=-1, largest=True, sorted=True):
    from .indexing import topk as int_topk
    _require_per_tensor(q, "Top-K is only supported on per-tensor quantization")
    return _named_pair(int_topk(_ints(q), k, dim, largest, sorted), q)


def _uniform_only(q):
    # torch builds these results with explicit strides, which only a per-tensor quantizer allows
    _require_per_tensor(q, "Setting strides is possible only on uniformly quantized tensor")


def _integer_op(name, check=_uniform_only):
    """A data-movement method (flip, repeat...) run on the integers, qparams kept."""
    def method(self, *args, **kwargs):
        check(self)
        out = getattr(Tensor, name)(self._int_tensor(), *args, **kwargs)
        return _same_params(self, out._data)
    method.__name__ = name
    method.__qualname__ = f"QuantizedTensor.{name}"
    method.__doc__ = f"``Tensor.{name}`` on the integer representation; keeps the quantizer."
    return method


def _index_select_check(q):
    _require_per_tensor(q, "Only per_tensor quantized quantized tensors are supported by "
                           "index_select.")


def q_masked_fill(q, mask, value):
    _require_per_tensor(q, "masked_fill__quantized_cpu for quantized tensors is currently only "
                           "supported for per tensor quantized tensors")
    if isinstance(value, Tensor):
        value = value.item()
    filled = Tensor.masked_fill(q._int_tensor(), mask, _quantize_scalar(q, value))
    return _same_params(q, filled._data.astype(q._dtype.np))


def q_masked_fill_(q, mask, value):
    return _in_place(q, q_masked_fill(q, mask, value))


def q_fill_(q, value):
    """Every element set to ``value`` quantized with the tensor's qparams (per channel: each
    channel's own)."""
    xp = q._backend.xp
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError("fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value.ndim} dimensions.")
        value = value.item()
    x = xp.full(q.shape, value, dtype=np.float32)
    return _write_values(q, x)


def _write_values(q, x):
    """Float values ``x`` (``q``'s shape) quantized with ``q``'s own qparams into its memory."""
    xp = q._backend.xp
    if q._qscheme in _PER_TENSOR:
        ints = quantize_array(xp, x, q._scale, q._zero_point, q._dtype)
    else:
        ints = quantize_array_per_channel(xp, x, q._scales, q._zero_points, q._axis, q._dtype)
    q._data.array[...] = ints
    return q


def q_copy_(q, src, non_blocking=False):
    """From a float tensor: its values quantized with ``q``'s qparams. From a quantized tensor
    of the same dtype: its integers, and (as torch) its quantizer."""
    xp = q._backend.xp
    if isinstance(src, QuantizedTensor):
        if src._dtype is not q._dtype:
            raise RuntimeError("Expected self.scalar_type() == src.scalar_type() to be true, but "
                               "got false.  (Could this error message be improved?  If so, "
                               "please report an enhancement request to PyTorch.)")
        q._data.array[...] = xp.broadcast_to(src._backend.to_numpy(src._data.array)
                                             if src._device != q._device else src._data.array,
                                             q.shape)
        params = _qparams(src)
        q._qscheme = params[0]
        if len(params) == 3:
            q._scale, q._zero_point = params[1], params[2]
        else:
            q._scales, q._zero_points, q._axis = params[1], params[2], params[3]
        return q
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' must be Tensor, not {type(src).__name__}")
    x = xp.broadcast_to(_float_input(src, "copy_"), q.shape)
    return _write_values(q, x)


def q_stack(tensors, dim=0, out=None):
    """``stack`` of per-tensor quantized tensors: ``cat`` of them unsqueezed."""
    tensors = list(tensors)
    for t in tensors:
        if isinstance(t, QuantizedTensor) and t._qscheme not in _PER_TENSOR:
            raise RuntimeError("Only per-tensor quantization is supported in 'cat'!")
    dim = dim + tensors[0].ndim + 1 if dim < 0 else dim
    return quantized_cat([t.unsqueeze(dim) for t in tensors], dim, out=out)


def q_equal(q, other):
    """``equal`` of a quantized tensor, as torch's: the same dtype, shape, quantization scheme,
    qparams and integers (a float tensor is never equal to it)."""
    if not isinstance(other, Tensor):
        raise TypeError(f"equal(): argument 'other' (position 2) must be Tensor, not "
                        f"{type(other).__name__}")
    if (not isinstance(other, QuantizedTensor) or other._dtype is not q._dtype
            or other.shape != q.shape or other._qscheme is not q._qscheme):
        return False
    a, b = _qparams(q), _qparams(other)
    if not all(np.array_equal(x, y) for x, y in zip(a[1:], b[1:])):
        return False
    return bool((q._data.array == other._data.array).all())


def _comparison(name):
    """``eq``/``lt``... of a quantized tensor: its values (and a quantized other's) compared in
    floating point, as torch's QuantizedCPU comparisons; the result is a bool tensor."""
    def method(self, other):
        other = dequantize(other) if isinstance(other, QuantizedTensor) else other
        return getattr(Tensor, name)(dequantize(self), other)
    method.__name__ = name
    method.__qualname__ = f"QuantizedTensor.{name}"
    return method


_COMPARISONS = {name: _comparison(name) for name in ("eq", "ne", "lt", "le", "gt", "ge")}
_COMPARISONS.update({f"__{name}__": fn for name, fn in _COMPARISONS.items()})

# name -> kernel, bound as QuantizedTensor methods
QUANTIZED_METHODS = {
    "equal": q_equal, **_COMPARISONS,
    "relu": q_relu, "relu_": q_relu_, "clamp": q_clamp, "clip": q_clamp,
    "clamp_min": q_clamp_min, "clamp_max": q_clamp_max,
    "sigmoid": q_sigmoid, "tanh": q_tanh, "mean": q_mean, "std": q_std, "max": q_max,
    "min": q_min, "sort": q_sort, "argsort": q_argsort, "topk": q_topk,
    "masked_fill": q_masked_fill, "masked_fill_": q_masked_fill_, "fill_": q_fill_,
    "copy_": q_copy_,
}
INTEGER_METHODS = {"flip": _uniform_only, "repeat": _uniform_only,
                   "repeat_interleave": _uniform_only, "diagonal": _uniform_only,
                   "unfold": _uniform_only, "as_strided": _uniform_only,
                   "index_select": _index_select_check}


def bind_quantized_methods():
    for name, fn in QUANTIZED_METHODS.items():
        setattr(QuantizedTensor, name, fn)
    for name, check in INTEGER_METHODS.items():
        setattr(QuantizedTensor, name, _integer_op(name, check))

bind_shape_methods()
bind_quantized_methods()
