"""Fake quantization modules for quantization-aware training, as ``torch.ao.quantization``.

A FakeQuantize module observes what passes (updating its ``scale``/``zero_point`` buffers
from its observer) and rounds it to the quantized grid in float, so training sees the
quantization error while gradients flow straight through.

The functions round ``x / scale`` half-to-even (``x`` times the float32 reciprocal, as
torch's kernel), add the zero point, clamp to ``[quant_min, quant_max]`` and map back. The
gradient passes unchanged where the unclamped quantized value lies inside the range and is
zero where clamping cut it: rounding counts as the identity, clamping does not. scale and
zero_point get no gradient (torch's non-learnable fake quantization).
"""
import numbers
from abc import ABC, abstractmethod

import numpy as np

import ember
from ... import nn
from ...autograd import Function
from . import (per_tensor_affine, per_tensor_symmetric, per_channel_affine,
               per_channel_symmetric, per_channel_affine_float_qparams, qint8, quint8, qint32)
from .observer import (FixedQParamsObserver, HistogramObserver, MovingAverageMinMaxObserver,
                       MovingAveragePerChannelMinMaxObserver, _shape_buffers_like, _with_args,
                       _with_callable_args,
                       default_fixed_qparams_range_0to1_observer,
                       default_fixed_qparams_range_neg1to1_observer)

__all__ = ["fake_quantize_per_tensor_affine", "fake_quantize_per_channel_affine",
           "FakeQuantizeBase", "FakeQuantize", "FixedQParamsFakeQuantize", "disable_fake_quant",
           "enable_fake_quant", "disable_observer", "enable_observer", "default_fake_quant",
           "default_weight_fake_quant", "default_dynamic_fake_quant",
           "default_per_channel_weight_fake_quant", "default_embedding_fake_quant",
           "default_histogram_fake_quant", "default_fixed_qparams_range_neg1to1_fake_quant",
           "default_fixed_qparams_range_0to1_fake_quant", "FusedMovingAvgObsFakeQuantize",
           "default_fused_act_fake_quant", "default_fused_wt_fake_quant",
           "default_fused_per_channel_wt_fake_quant"]

_PER_CHANNEL = (per_channel_affine, per_channel_symmetric, per_channel_affine_float_qparams)
_PER_TENSOR = (per_tensor_affine, per_tensor_symmetric)


def _check_range(quant_min, quant_max):
    if quant_min > quant_max:
        raise RuntimeError("`quant_min` should be less than or equal to `quant_max`.")


def _fake_quantize(x, scale, zero_point, quant_min, quant_max, float_zero_point=False):
    # torch multiplies by the reciprocal computed in float32, not divides: same ties broken
    inv_scale = 1.0 / scale.to(ember.float32)
    if float_zero_point:
        # float (embedding) qparams round after the shift, as torch's float-zero-point kernel
        q = ember.round(x * inv_scale + zero_point)
    else:
        q = ember.round(x * inv_scale) + zero_point
    # torch maps back in double and rounds once to float32 (a float32 result even for a
    # float64 input); with a float zero point that single rounding differs from float32 math
    shifted = ember.clamp(q, quant_min, quant_max).to(ember.float64) - zero_point
    out = (shifted * scale.to(ember.float64)).to(ember.float32)
    mask = (q >= quant_min) & (q <= quant_max)
    return out.to(x.dtype), mask


class _FakeQuantize(Function):
    @staticmethod
    def forward(ctx, x, scale, zero_point, quant_min, quant_max, float_zero_point):
        out, mask = _fake_quantize(x, scale, zero_point, quant_min, quant_max, float_zero_point)
        ctx.save_for_backward(mask)
        return out

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        return grad * mask.to(grad.dtype), None, None, None, None, None


def _check_input(x):
    if not x.dtype.is_floating_point:
        raise NotImplementedError(
            f"fake quantization takes a floating-point input, not {x.dtype}")


def fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min, quant_max):
    """Quantize ``input`` with one ``scale``/``zero_point`` and dequantize it back.

    ``scale`` and ``zero_point`` are numbers or one-element tensors (a FakeQuantize's buffers).
    """
    _check_input(input)
    _check_range(quant_min, quant_max)
    if isinstance(scale, ember.Tensor):
        if scale.numel() != 1:
            raise RuntimeError("fake_quantize_per_tensor_affine takes a one-element scale, "
                               f"got {scale.numel()} elements")
        scale = float(scale.reshape(()))
    if isinstance(zero_point, ember.Tensor):
        if zero_point.numel() != 1:
            raise RuntimeError("fake_quantize_per_tensor_affine takes a one-element "
                               f"zero_point, got {zero_point.numel()} elements")
        zero_point = int(zero_point.reshape(()))
    if not isinstance(zero_point, numbers.Integral):
        raise TypeError(f"zero_point must be an integer, not {type(zero_point).__name__}")
    if not quant_min <= zero_point <= quant_max:
        raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")
    scale_t = ember.tensor(float(scale), dtype=ember.float32, device=input.device)
    return _FakeQuantize.apply(input, scale_t, int(zero_point), quant_min, quant_max, False)


def fake_quantize_per_channel_affine(input, scale, zero_point, axis, quant_min, quant_max):
    """Quantize each slice of ``input`` along ``axis`` with its own scale and zero point."""
    _check_input(input)
    if scale.dim() != 1:
        raise RuntimeError("scale should be a 1-D tensor")
    if zero_point.dim() != 1:
        raise RuntimeError("zero point should be a 1-D tensor")
    if scale.numel() != zero_point.numel():
        raise RuntimeError("scale and zero-point need to have the same dimensions")
    if not -input.dim() <= axis < input.dim():
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-input.dim()}, {input.dim() - 1}], but got {axis})")
    if axis < 0:
        # torch refuses a negative axis here, unlike its other dim arguments
        raise RuntimeError("`axis` must be between 0 and number of dimensions of input")
    if scale.numel() != input.shape[axis]:
        raise RuntimeError(
            "dimensions of scale and zero-point are not consistent with input tensor")
    _check_range(quant_min, quant_max)
    float_zp = zero_point.dtype.is_floating_point
    if not float_zp and zero_point.dtype != ember.int32:
        raise RuntimeError(f"Zero-point must be Int32, Float or Half, found "
                           f"{_torch_type_name(zero_point.dtype)}")
    if not float_zp and bool(((zero_point < quant_min) | (zero_point > quant_max)).any()):
        raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")
    shape = [1] * input.dim()
    shape[axis] = -1
    scale = scale.detach().to(ember.float32).reshape(shape)
    zero_point = zero_point.detach().reshape(shape)
    if not float_zp:
        # integer zero points added to the float rounding keep the float dtype
        zero_point = zero_point.to(ember.float32)
    return _FakeQuantize.apply(input, scale, zero_point, quant_min, quant_max, float_zp)


def _torch_type_name(dtype):
    names = {ember.int64: "Long", ember.int16: "Short", ember.int8: "Char", ember.uint8: "Byte"}
    return names.get(dtype, str(dtype))


def _iinfo(dtype):
    return ember.iinfo(dtype)  # a quantized dtype has the range of its int_repr dtype


class FakeQuantizeBase(ABC, nn.Module):
    """Base of fake quantize modules: the ``fake_quant_enabled``/``observer_enabled`` switches."""

    def __init__(self):
        super().__init__()
        self.register_buffer("fake_quant_enabled", ember.tensor([1], dtype=ember.uint8))
        self.register_buffer("observer_enabled", ember.tensor([1], dtype=ember.uint8))

    @abstractmethod
    def forward(self, x):
        pass

    @abstractmethod
    def calculate_qparams(self, **kwargs):
        pass

    def enable_fake_quant(self, enabled=True):
        self.fake_quant_enabled[0] = 1 if enabled else 0

    def disable_fake_quant(self):
        self.enable_fake_quant(False)

    def enable_observer(self, enabled=True):
        self.observer_enabled[0] = 1 if enabled else 0

    def disable_observer(self):
        self.enable_observer(False)

    with_args = classmethod(_with_args)
    with_callable_args = classmethod(_with_callable_args)


class FakeQuantize(FakeQuantizeBase):
    """Observe ``X``, refresh ``scale``/``zero_point`` from the observer, fake-quantize ``X``.

    Args:
        observer: observer class (or ``with_args`` factory) built with ``observer_kwargs``
        quant_min, quant_max: the quantized range, passed on to the observer
        is_dynamic: passed on to the observer
    """

    def __init__(self, observer=MovingAverageMinMaxObserver, quant_min=None, quant_max=None,
                 is_dynamic=False, **observer_kwargs):
        super().__init__()
        if quant_min is not None and quant_max is not None:
            if quant_min > quant_max:
                raise AssertionError("quant_min must be less than or equal to quant_max")
            dtype = observer_kwargs.get("dtype", quint8)
            if hasattr(observer, "p"):
                dtype = getattr(observer.p, "keywords", {}).get("dtype", dtype)
            if _iinfo(dtype).min > quant_min:
                raise AssertionError("quant_min out of bound")
            if quant_max > _iinfo(dtype).max:
                raise AssertionError("quant_max out of bound")
            observer_kwargs.update({"quant_min": quant_min, "quant_max": quant_max})
        observer_kwargs["is_dynamic"] = is_dynamic
        self.activation_post_process = observer(**observer_kwargs)
        self.quant_min = self.activation_post_process.quant_min
        self.quant_max = self.activation_post_process.quant_max
        self.is_dynamic = self.activation_post_process.is_dynamic
        zero_point_dtype = (ember.float32
                            if self.activation_post_process.qscheme
                            == per_channel_affine_float_qparams else ember.int32)
        self.register_buffer("scale", ember.tensor([1.0], dtype=ember.float32))
        self.register_buffer("zero_point", ember.tensor([0], dtype=zero_point_dtype))
        self.dtype = self.activation_post_process.dtype
        self.qscheme = self.activation_post_process.qscheme
        self.ch_axis = getattr(self.activation_post_process, "ch_axis", -1)
        if self.qscheme not in _PER_CHANNEL + _PER_TENSOR:
            raise AssertionError("Only per channel and per tensor quantization are supported "
                                 f"in fake quantize got qscheme: {self.qscheme}")
        self.is_per_channel = self.qscheme in _PER_CHANNEL

    def calculate_qparams(self):
        return self.activation_post_process.calculate_qparams()

    def forward(self, X):
        if int(self.observer_enabled[0]) == 1:
            self.activation_post_process(X.detach())
            scale, zero_point = self.calculate_qparams()
            # in place, keeping the buffers' dtypes (int32 zero point) and any aliasing; a new
            # per-channel shape (the first batch) replaces them
            if tuple(self.scale.shape) != tuple(scale.shape):
                self.scale = ember.empty(tuple(scale.shape), dtype=self.scale.dtype,
                                         device=self.scale.device)
                self.zero_point = ember.empty(tuple(zero_point.shape),
                                              dtype=self.zero_point.dtype,
                                              device=self.zero_point.device)
            self.scale.copy_(scale.detach())
            self.zero_point.copy_(zero_point.detach())
        if int(self.fake_quant_enabled[0]) == 1:
            app = self.activation_post_process
            if self.is_per_channel:
                X = fake_quantize_per_channel_affine(X, self.scale, self.zero_point,
                                                     self.ch_axis, app.quant_min, app.quant_max)
            else:
                X = fake_quantize_per_tensor_affine(X, self.scale, self.zero_point,
                                                    app.quant_min, app.quant_max)
        return X

    def extra_repr(self):
        app = self.activation_post_process
        return (f"fake_quant_enabled={self.fake_quant_enabled}, "
                f"observer_enabled={self.observer_enabled}, quant_min={app.quant_min}, "
                f"quant_max={app.quant_max}, dtype={self.dtype}, qscheme={self.qscheme}, "
                f"ch_axis={self.ch_axis}, scale={self.scale}, zero_point={self.zero_point}")

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict,
                              missing_keys, unexpected_keys, error_msgs):
        # per-channel qparams in a checkpoint have their own length: take it before copying
        _shape_buffers_like(self, state_dict, prefix, ("scale", "zero_point"))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                      missing_keys, unexpected_keys, error_msgs)


class FixedQParamsFakeQuantize(FakeQuantize):
    """Fake quantization with the fixed qparams of a FixedQParamsObserver (per tensor only)."""

    def __init__(self, observer):
        super().__init__(observer=observer)
        if type(self.activation_post_process) is not FixedQParamsObserver:
            raise AssertionError(f"{type(self).__name__}'s observer must be a "
                                 f"{FixedQParamsObserver.__name__}")
        self._observer_ctr = observer
        self.scale = self.activation_post_process.scale
        self.zero_point = self.activation_post_process.zero_point
        if self.qscheme not in _PER_TENSOR:
            raise AssertionError("Only per tensor quantization is supported "
                                 f"FixedQParamsFakeQuantize module, got qscheme:{self.qscheme}")

    def calculate_qparams(self):
        return self.scale, self.zero_point

    def extra_repr(self):
        app = self.activation_post_process
        return (f"fake_quant_enabled={self.fake_quant_enabled}, "
                f"observer_enabled={self.observer_enabled}, scale={self.scale}, "
                f"zero_point={self.zero_point}, dtype={self.dtype}, quant_min={app.quant_min}, "
                f"quant_max={app.quant_max}, qscheme={self.qscheme}")


def _choose_qparams_fused(min_val, max_val, quant_min, quant_max, symmetric):
    """torch's fused kernel's qparams (ATen's ``ChooseQuantizationParams``), per element.

    Not the observers' formula: a symmetric scale is ``max(|min|/128, max/127)`` (a range
    split at the middle of ``[qmin, qmax]``), scales under 6.1e-5 are raised to it (widening
    the range), and the zero point comes from whichever end loses less precision. float32
    inputs, float64 intermediates, float32 scale, as the kernel.
    """
    f32, f64 = np.float32, np.float64
    lo = np.asarray(min_val, dtype=f32).reshape(-1).copy()
    hi = np.asarray(max_val, dtype=f32).reshape(-1).copy()
    if symmetric:
        sym_min = -((quant_max - quant_min) // 2 + 1)
        sym_max = (quant_max - quant_min) // 2
        both = (lo < 0) & (hi > 0)
        max_scale = np.maximum(np.abs(lo / f32(sym_min)), np.abs(hi / f32(sym_max))).astype(f64)
        lo = np.where(both, (max_scale * sym_min).astype(f32), lo)
        hi = np.where(both, (max_scale * sym_max).astype(f32), hi)
    else:
        both = np.zeros(lo.shape, dtype=bool)
    lo, hi = np.minimum(lo, f32(0)), np.maximum(hi, f32(0))
    scale = (hi.astype(f64) - lo.astype(f64)) / (quant_max - quant_min)
    with np.errstate(divide="ignore"):
        degenerate = (scale.astype(f32) == 0) | np.isinf(f32(1) / scale.astype(f32))
    scale = np.where(degenerate, 0.1, scale)
    threshold = f32(6.1e-5)
    small = scale < threshold
    org_scale = scale.astype(f32)
    with np.errstate(divide="ignore", invalid="ignore"):
        amplifier = threshold / org_scale
    lo_small = np.where(lo == 0, lo, np.where(hi == 0, -threshold * f32(quant_max - quant_min),
                                               lo * amplifier))
    hi_small = np.where(lo == 0, threshold * f32(quant_max - quant_min),
                        np.where(hi == 0, hi, hi * amplifier))
    lo, hi = np.where(small, lo_small, lo), np.where(small, hi_small, hi)
    scale = np.where(small, f64(threshold), scale)
    zp_from_min = quant_min - lo / scale
    zp_from_max = quant_max - hi / scale
    err_min = abs(quant_min) - np.abs(lo / scale)
    err_max = abs(quant_max) - np.abs(hi / scale)
    zero_point = np.where(err_min < err_max, zp_from_min, zp_from_max)
    zero_point = np.where(both & bool(symmetric), (quant_min + quant_max) / 2, zero_point)
    zero_point = np.clip(np.rint(zero_point), quant_min, quant_max)
    return scale.astype(f32), zero_point.astype(np.int32)


class FusedMovingAvgObsFakeQuantize(FakeQuantize):
    """FakeQuantize over a moving-average min/max observer, as torch's fused module.

    torch runs observation, qparams and fake quantization as one kernel
    (``fused_moving_avg_obs_fake_quant``): the running min/max update is the observer's, but
    the qparams follow ATen's ``ChooseQuantizationParams`` (``_choose_qparams_fused``), not
    the observer's ``calculate_qparams``, so the fake-quantized values are torch's fused
    module's. The switches are int64, as torch's fused module holds them.
    """

    def __init__(self, observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255,
                 **observer_kwargs):
        super().__init__(observer, quant_min, quant_max, **observer_kwargs)
        if not isinstance(self.activation_post_process,
                          (MovingAverageMinMaxObserver, MovingAveragePerChannelMinMaxObserver)):
            raise AssertionError("Fused observer+fake_quant module only works with "
                                 "MovingAverageMinMaxObserver")
        self.register_buffer("fake_quant_enabled", ember.tensor([1], dtype=ember.int64))
        self.register_buffer("observer_enabled", ember.tensor([1], dtype=ember.int64))
        self.is_symmetric_quant = self.activation_post_process.qscheme in (
            per_tensor_symmetric, per_channel_symmetric)

    def extra_repr(self):
        app = self.activation_post_process
        return (f"fake_quant_enabled={self.fake_quant_enabled}, "
                f"observer_enabled={self.observer_enabled}, scale={self.scale}, "
                f"zero_point={self.zero_point}, dtype={self.dtype}, quant_min={app.quant_min}, "
                f"quant_max={app.quant_max}, qscheme={self.qscheme}, "
                f"reduce_range={app.reduce_range}")

    def forward(self, X):
        app = self.activation_post_process
        if int(self.observer_enabled[0]) == 1:
            app(X.detach())
        elif self.is_per_channel and app.min_val.numel() == 0:
            # the kernel sizes the (empty) running range on first sight, observing or not
            size = X.shape[self.ch_axis]
            app.min_val = ember.full((size,), float("inf"), device=X.device)
            app.max_val = ember.full((size,), float("-inf"), device=X.device)
        if int(self.fake_quant_enabled[0]) != 1:
            return X
        scale, zero_point = _choose_qparams_fused(
            app.min_val.detach().cpu().numpy(), app.max_val.detach().cpu().numpy(),
            app.quant_min, app.quant_max, self.is_symmetric_quant)
        if tuple(self.scale.shape) != scale.shape:
            self.scale = ember.empty(scale.shape, dtype=self.scale.dtype,
                                     device=self.scale.device)
            self.zero_point = ember.empty(zero_point.shape, dtype=self.zero_point.dtype,
                                          device=self.zero_point.device)
        self.scale.copy_(ember.tensor(scale, device=self.scale.device))
        self.zero_point.copy_(ember.tensor(zero_point, device=self.zero_point.device))
        if self.is_per_channel:
            return fake_quantize_per_channel_affine(X, self.scale, self.zero_point, self.ch_axis,
                                                    app.quant_min, app.quant_max)
        return fake_quantize_per_tensor_affine(X, self.scale, self.zero_point, app.quant_min,
                                               app.quant_max)


def disable_fake_quant(mod):
    """``model.apply(disable_fake_quant)``: turn fake quantization off in every FakeQuantize."""
    if isinstance(mod, FakeQuantizeBase):
        mod.disable_fake_quant()


def enable_fake_quant(mod):
    """``model.apply(enable_fake_quant)``: turn fake quantization on in every FakeQuantize."""
    if isinstance(mod, FakeQuantizeBase):
        mod.enable_fake_quant()


def disable_observer(mod):
    """``model.apply(disable_observer)``: freeze the qparams of every FakeQuantize."""
    if isinstance(mod, FakeQuantizeBase):
        mod.disable_observer()


def enable_observer(mod):
    """``model.apply(enable_observer)``: let every FakeQuantize update its qparams again."""
    if isinstance(mod, FakeQuantizeBase):
        mod.enable_observer()


default_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, dtype=quint8,
    qscheme=per_tensor_affine, reduce_range=True)
default_weight_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=qint8,
    qscheme=per_tensor_symmetric, reduce_range=False)
default_dynamic_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, is_dynamic=True,
    dtype=quint8, averaging_constant=1)
default_per_channel_weight_fake_quant = FakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127,
    dtype=qint8, qscheme=per_channel_symmetric, reduce_range=False, ch_axis=0)
default_embedding_fake_quant = FakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, qscheme=per_channel_affine_float_qparams,
    dtype=quint8, quant_min=0, quant_max=255, ch_axis=0, averaging_constant=1)
default_histogram_fake_quant = FakeQuantize.with_args(
    observer=HistogramObserver, quant_min=0, quant_max=255, dtype=quint8,
    qscheme=per_tensor_affine, reduce_range=True)
default_fixed_qparams_range_neg1to1_fake_quant = FixedQParamsFakeQuantize.with_args(
    observer=default_fixed_qparams_range_neg1to1_observer)
default_fixed_qparams_range_0to1_fake_quant = FixedQParamsFakeQuantize.with_args(
    observer=default_fixed_qparams_range_0to1_observer)
default_fused_act_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, dtype=quint8)
default_fused_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=qint8,
    qscheme=per_tensor_symmetric)
default_fused_per_channel_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127,
    dtype=qint8, qscheme=per_channel_symmetric)
