"""Observers: modules that watch tensors pass and derive quantization parameters from them.

Mirrors ``torch.ao.quantization.observer``. An observer returns its input unchanged; its
``calculate_qparams()`` gives ``(scale, zero_point)`` computed as torch computes them, so a
model calibrated in Ember gets the same qparams (float32 scale, int32 zero point for affine
schemes, int64 for symmetric ones, as torch's) as the same model calibrated in PyTorch.
"""
import functools
import warnings
from abc import ABC, abstractmethod

import numpy as np

import ember
from ... import nn
from . import (per_tensor_affine, per_tensor_symmetric, per_channel_affine,
               per_channel_symmetric, per_channel_affine_float_qparams,
               qint8, quint8, qint32)

__all__ = ["ObserverBase", "UniformQuantizationObserverBase", "MinMaxObserver",
           "MovingAverageMinMaxObserver", "PerChannelMinMaxObserver",
           "MovingAveragePerChannelMinMaxObserver", "HistogramObserver", "FixedQParamsObserver",
           "PlaceholderObserver", "default_fixed_qparams_range_neg1to1_observer",
           "default_fixed_qparams_range_0to1_observer", "default_observer",
           "default_histogram_observer", "default_placeholder_observer", "default_weight_observer",
           "default_per_channel_weight_observer", "default_dynamic_quant_observer",
           "default_float_qparams_observer", "weight_observer_range_neg_127_to_127",
           "per_channel_weight_observer_range_neg_127_to_127", "NoopObserver",
           "ReuseInputObserver", "default_reuse_input_observer"]

_PER_TENSOR = (per_tensor_affine, per_tensor_symmetric)
_PER_CHANNEL = (per_channel_affine, per_channel_symmetric, per_channel_affine_float_qparams)
_SYMMETRIC = (per_tensor_symmetric, per_channel_symmetric)



def _shape_buffers_like(module, state_dict, prefix, names):
    """Replace ``module``'s buffers ``names`` by empty ones shaped as the checkpoint's (their
    length is the channel count, unknown until loaded), so the copy that follows fits."""
    for name in names:
        key = prefix + name
        if key in state_dict:
            setattr(module, name, ember.empty(tuple(state_dict[key].shape),
                                              dtype=getattr(module, name).dtype))

class _PartialWrapper:
    """A constructor with some keywords bound (``Observer.with_args(...)``), called per module."""

    def __init__(self, p):
        self.p = p
        self.callable_args = {}

    def __call__(self, *args, **keywords):
        # callable args are evaluated per instance, unless the caller overrides them
        for name, factory in self.callable_args.items():
            if name not in keywords:
                keywords = {**keywords, name: factory()}
        return self.p(*args, **keywords)

    def __repr__(self):
        return repr(self.p) + repr(self.callable_args)

    def with_args(self, **kwargs):
        return _with_args(self, **kwargs)

    def with_callable_args(self, **kwargs):
        result = _PartialWrapper(self.p)
        result.callable_args = {**self.callable_args, **kwargs}
        return result


def _with_args(cls_or_self, **kwargs):
    return _PartialWrapper(functools.partial(cls_or_self, **kwargs))


def _with_callable_args(cls_or_self, **kwargs):
    return _PartialWrapper(functools.partial(cls_or_self)).with_callable_args(**kwargs)


def _is_signed(dtype):
    return dtype in (qint8, qint32, ember.int8, ember.int16, ember.int32)


def _validate_qmin_qmax(quant_min, quant_max):
    if not quant_min <= 0 <= quant_max:
        raise AssertionError("Used-specified quantization range must include 0.")
    if quant_min >= quant_max:
        raise AssertionError(
            "qmin must be strictly less than qmax for user-specified quantization range.")


def _calculate_qmin_qmax(quant_min, quant_max, has_customized_qrange, dtype, reduce_range):
    if has_customized_qrange:
        length = quant_max - quant_min + 1
        if dtype in (qint8, ember.int8) and not 0 < length <= 256:
            raise AssertionError("quantization range should be positive and not exceed the "
                                 "maximum bit range (=256).")
        if dtype in (qint32, ember.int32) and not 0 < length <= 2**32:
            raise AssertionError("quantization range should be positive and not exceed the "
                                 "maximum bit range (=4294967296).")
        # torch halves a customised range too under reduce_range; mirrored for equal qparams
        if reduce_range:
            quant_min, quant_max = quant_min // 2, quant_max // 2
        return quant_min, quant_max
    if dtype in (qint8, ember.int8):
        return (-64, 63) if reduce_range else (-128, 127)
    if dtype in (quint8, ember.uint8):
        return (0, 127) if reduce_range else (0, 255)
    if dtype in (qint32, ember.int32):
        return -2**31, 2**31 - 1
    if dtype == ember.int16:
        return -2**15, 2**15 - 1
    raise AssertionError(f"no default quantization range for dtype {dtype}")


class ObserverBase(ABC, nn.Module):
    """Base observer: ``forward`` records statistics, ``calculate_qparams`` turns them into qparams.

    Args:
        dtype: the quantized dtype the qparams are for (``qint8``, ``quint8``, ``ember.int8``...)
        is_dynamic: whether the observer is for dynamic quantization (qparams per call)
    """

    def __init__(self, dtype, is_dynamic=False):
        super().__init__()
        self.dtype = dtype
        self.is_dynamic = is_dynamic

    @abstractmethod
    def forward(self, x):
        pass

    @abstractmethod
    def calculate_qparams(self, **kwargs):
        pass

    with_args = classmethod(_with_args)
    with_callable_args = classmethod(_with_callable_args)


_ALLOWED_DTYPES = (qint8, quint8, qint32, ember.int8, ember.uint8, ember.int16, ember.int32)


class UniformQuantizationObserverBase(ObserverBase):
    """Observers whose qparams follow from a (per-tensor or per-channel) min and max."""

    def __init__(self, dtype=quint8, qscheme=per_tensor_affine, reduce_range=False,
                 quant_min=None, quant_max=None, factory_kwargs=None,
                 eps=ember.finfo(ember.float32).eps, is_dynamic=False, **kwargs):
        super().__init__(dtype=dtype, is_dynamic=is_dynamic, **kwargs)
        factory_kwargs = factory_kwargs or {}
        self.qscheme = qscheme
        if reduce_range:
            warnings.warn("Please use quant_min and quant_max to specify the range for "
                          "observers. reduce_range will be deprecated in a future release of "
                          "PyTorch.", stacklevel=2)
        self.reduce_range = reduce_range
        self.register_buffer("eps", ember.tensor([eps], **factory_kwargs))
        if qscheme not in _PER_TENSOR + _PER_CHANNEL:
            raise AssertionError(
                "Default Observer only works for per_tensor_affine, per_tensor_symmetric, "
                "per_channel_affine, per_channel_symmetric and per_channel_float_qparams "
                "quantization scheme")
        if dtype not in _ALLOWED_DTYPES:
            raise AssertionError(f"Default Observer only works for {_ALLOWED_DTYPES} data type")
        self.has_customized_qrange = quant_min is not None and quant_max is not None
        if self.has_customized_qrange:
            _validate_qmin_qmax(quant_min, quant_max)
        self.quant_min, self.quant_max = _calculate_qmin_qmax(
            quant_min, quant_max, self.has_customized_qrange, dtype, reduce_range)

    def _calculate_qparams(self, min_val, max_val):
        if not _check_min_max_valid(min_val, max_val):
            return (ember.tensor([1.0], device=min_val.device),
                    ember.tensor([0], device=min_val.device))
        quant_min, quant_max = self.quant_min, self.quant_max
        min_val_neg = ember.minimum(min_val, ember.zeros_like(min_val))
        max_val_pos = ember.maximum(max_val, ember.zeros_like(max_val))
        device = min_val_neg.device
        zero_point = ember.zeros(min_val_neg.shape, dtype=ember.int64, device=device)
        if self.qscheme in _SYMMETRIC:
            max_val_pos = ember.maximum(-min_val_neg, max_val_pos)
            scale = max_val_pos / (float(quant_max - quant_min) / 2)
            scale = ember.maximum(scale, self.eps)
            if self.dtype in (quint8, ember.uint8):
                # a customised range is centred on its rounded-down midpoint
                mid = (quant_min + quant_max) // 2 if self.has_customized_qrange else 128
                zero_point = ember.full(zero_point.shape, mid, dtype=ember.int64, device=device)
        elif self.qscheme == per_channel_affine_float_qparams:
            scale = (max_val - min_val) / float(quant_max - quant_min)
            scale = ember.where(scale > self.eps, scale, ember.ones_like(scale))
            # zero point -min/scale makes quantization round((x - min) / scale)
            zero_point = -1 * min_val / scale
        else:
            scale = (max_val_pos - min_val_neg) / float(quant_max - quant_min)
            scale = ember.maximum(scale, self.eps)
            zero_point = quant_min - ember.round(min_val_neg / scale).to(ember.int32)
            zero_point = ember.clamp(zero_point, quant_min, quant_max)
        # a per-tensor observer still returns shape (1,), the shape of FakeQuantize's buffers
        if scale.dim() == 0:
            scale = scale.reshape(1)
        if zero_point.dim() == 0:
            zero_point = zero_point.reshape(1)
        return scale, zero_point

    def reset_min_max_vals(self):
        raise NotImplementedError("Cannot reset min/max values in the given observer.")


def _check_min_max_valid(min_val, max_val):
    if min_val.numel() == 0 or max_val.numel() == 0:
        warnings.warn("must run observer before calling calculate_qparams. "
                      "Returning default values.", stacklevel=3)
        return False
    if min_val.dim() == 0 or max_val.dim() == 0:
        if float(min_val) == float("inf") and float(max_val) == float("-inf"):
            warnings.warn("must run observer before calling calculate_qparams. "
                          "Returning default values.", stacklevel=3)
            return False
        if float(min_val) > float(max_val):
            raise AssertionError(f"min {min_val} should be less than max {max_val}")
    elif bool((min_val > max_val).any()):
        raise AssertionError(f"min {min_val} should be less than max {max_val}")
    return True


class MinMaxObserver(UniformQuantizationObserverBase):
    """Qparams from the running minimum and maximum of every tensor seen."""

    def __init__(self, dtype=quint8, qscheme=per_tensor_affine, reduce_range=False,
                 quant_min=None, quant_max=None, factory_kwargs=None,
                 eps=ember.finfo(ember.float32).eps, is_dynamic=False, **kwargs):
        if qscheme not in _PER_TENSOR:
            raise NotImplementedError(
                "MinMaxObserver's qscheme only support torch.per_tensor_symmetric "
                "and torch.per_tensor_affine.")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max,
                         factory_kwargs=factory_kwargs, eps=eps, is_dynamic=is_dynamic,
                         **kwargs)
        factory_kwargs = factory_kwargs or {}
        self.register_buffer("min_val", ember.tensor(float("inf"), **factory_kwargs))
        self.register_buffer("max_val", ember.tensor(float("-inf"), **factory_kwargs))
        if qscheme == per_tensor_symmetric and reduce_range and dtype == quint8:
            raise NotImplementedError("Cannot reduce range for symmetric quantization for quint8")

    def forward(self, x_orig):
        """Records the running minimum and maximum of ``x``."""
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach().to(self.min_val.dtype)
        min_cur, max_cur = ember.aminmax(x)
        self.min_val.copy_(ember.minimum(min_cur, self.min_val))
        self.max_val.copy_(ember.maximum(max_cur, self.max_val))
        return x_orig

    def calculate_qparams(self):
        return self._calculate_qparams(self.min_val, self.max_val)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"

    def reset_min_max_vals(self):
        self.min_val.fill_(float("inf"))
        self.max_val.fill_(float("-inf"))


class MovingAverageMinMaxObserver(MinMaxObserver):
    """Qparams from an exponential moving average of each tensor's min and max."""

    def __init__(self, averaging_constant=0.01, dtype=quint8, qscheme=per_tensor_affine,
                 reduce_range=False, quant_min=None, quant_max=None,
                 eps=ember.finfo(ember.float32).eps, is_dynamic=False, **kwargs):
        if qscheme not in _PER_TENSOR:
            raise NotImplementedError(
                "MovingAverageMinMaxObserver's qscheme only support torch.per_tensor_symmetric "
                f"and torch.per_tensor_affine. but got: {qscheme}")
        self.averaging_constant = averaging_constant
        if is_dynamic and averaging_constant != 1:
            raise NotImplementedError(
                "MovingAverageMinMaxObserver doesn't support dynamic quantization for "
                f"averaging constant of {averaging_constant}")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max, eps=eps,
                         is_dynamic=is_dynamic, **kwargs)

    def forward(self, x_orig):
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach().to(self.min_val.dtype)
        min_val, max_val = self.min_val, self.max_val
        if float(min_val) == float("inf") and float(max_val) == float("-inf"):
            min_val, max_val = ember.aminmax(x)
        else:
            min_cur, max_cur = ember.aminmax(x)
            min_val = min_val + self.averaging_constant * (min_cur - min_val)
            max_val = max_val + self.averaging_constant * (max_cur - max_val)
        self.min_val.copy_(min_val)
        self.max_val.copy_(max_val)
        return x_orig


def _channels_first_rows(x, ch_axis):
    # one row per channel: swap ch_axis to the front as torch does, then flatten the rest
    order = list(range(x.dim()))
    order[ch_axis], order[0] = 0, order[ch_axis]
    return ember.flatten(x.permute(order), start_dim=1)


class PerChannelMinMaxObserver(UniformQuantizationObserverBase):
    """Qparams per slice along ``ch_axis``, from each channel's running min and max."""

    def __init__(self, ch_axis=0, dtype=quint8, qscheme=per_channel_affine, reduce_range=False,
                 quant_min=None, quant_max=None, factory_kwargs=None,
                 eps=ember.finfo(ember.float32).eps, is_dynamic=False, **kwargs):
        if qscheme not in _PER_CHANNEL:
            raise NotImplementedError(
                "PerChannelMinMaxObserver's qscheme only support torch.per_channel_symmetric, "
                "torch.per_channel_affine and torch.per_channel_affine_float_qparams.")
        if is_dynamic:
            raise NotImplementedError(
                "PerChannelMinMaxObserver doesn't support dynamic quantization")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max,
                         factory_kwargs=factory_kwargs, eps=eps, is_dynamic=is_dynamic,
                         **kwargs)
        factory_kwargs = factory_kwargs or {}
        self.ch_axis = ch_axis
        self.register_buffer("min_val", ember.tensor([], **factory_kwargs))
        self.register_buffer("max_val", ember.tensor([], **factory_kwargs))
        if qscheme == per_channel_symmetric and reduce_range and dtype == quint8:
            raise NotImplementedError("Cannot reduce range for symmetric quantization for quint8")

    def forward(self, x_orig):
        if x_orig.numel() == 0:
            return x_orig
        rows = _channels_first_rows(x_orig.detach(), self.ch_axis).to(self.min_val.dtype)
        min_cur, max_cur = ember.aminmax(rows, dim=1)
        self._update(min_cur, max_cur)
        return x_orig

    def _update(self, min_cur, max_cur):
        if self.min_val.numel() == 0 or self.max_val.numel() == 0:
            min_val, max_val = min_cur, max_cur
        else:
            min_val = ember.minimum(min_cur, self.min_val)
            max_val = ember.maximum(max_cur, self.max_val)
        self._store(min_val, max_val)

    def _store(self, min_val, max_val):
        # the buffers start empty and take the channel count of the first tensor seen
        self.min_val = min_val.detach().clone()
        self.max_val = max_val.detach().clone()

    def calculate_qparams(self):
        return self._calculate_qparams(self.min_val, self.max_val)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict,
                              missing_keys, unexpected_keys, error_msgs):
        # a checkpoint's per-channel stats replace the empty buffers whatever their length
        _shape_buffers_like(self, state_dict, prefix, ("min_val", "max_val"))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                      missing_keys, unexpected_keys, error_msgs)

    def reset_min_max_vals(self):
        self.min_val = ember.tensor([])
        self.max_val = ember.tensor([])


class MovingAveragePerChannelMinMaxObserver(PerChannelMinMaxObserver):
    """Per-channel qparams from moving averages of each channel's min and max."""

    def __init__(self, averaging_constant=0.01, ch_axis=0, dtype=quint8,
                 qscheme=per_channel_affine, reduce_range=False, quant_min=None, quant_max=None,
                 eps=ember.finfo(ember.float32).eps, is_dynamic=False, **kwargs):
        if qscheme not in _PER_CHANNEL:
            raise NotImplementedError(
                "MovingAveragePerChannelMinMaxObserver's qscheme only support "
                "torch.per_channel_symmetric, torch.per_channel_affine and "
                "torch.per_channel_affine_float_qparams.")
        if is_dynamic:
            raise NotImplementedError(
                "MovingAveragePerChannelMinMaxObserver doesn't support dynamic quantization")
        super().__init__(ch_axis=ch_axis, dtype=dtype, qscheme=qscheme,
                         reduce_range=reduce_range, quant_min=quant_min, quant_max=quant_max,
                         eps=eps, is_dynamic=is_dynamic, **kwargs)
        self.averaging_constant = averaging_constant

    def _update(self, min_cur, max_cur):
        if self.min_val.numel() == 0 or self.max_val.numel() == 0:
            min_val, max_val = min_cur, max_cur
        else:
            c = self.averaging_constant
            min_val = self.min_val + c * (min_cur - self.min_val)
            max_val = self.max_val + c * (max_cur - self.max_val)
        self._store(min_val, max_val)


def _bits(dtype):
    return ember.iinfo(dtype).bits


class HistogramObserver(UniformQuantizationObserverBase):
    """Qparams from a running histogram: the range that minimises the L2 quantization error.

    The histogram (``bins`` bins over the running min..max) is re-binned when the range grows,
    and ``calculate_qparams`` narrows the range bin by bin from either end, as torch's search.
    """

    def __init__(self, bins=2048, dtype=quint8, qscheme=per_tensor_affine, reduce_range=False,
                 quant_min=None, quant_max=None, factory_kwargs=None,
                 eps=ember.finfo(ember.float32).eps, is_dynamic=False, **kwargs):
        if qscheme not in _PER_TENSOR:
            raise NotImplementedError(
                "HistogramObserver's qscheme only support torch.per_tensor_symmetric "
                "and torch.per_tensor_affine.")
        if is_dynamic:
            raise NotImplementedError("HistogramObserver doesn't support dynamic quantization")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max,
                         factory_kwargs=factory_kwargs, eps=eps, is_dynamic=is_dynamic,
                         **kwargs)
        factory_kwargs = factory_kwargs or {}
        self.bins = bins
        self.register_buffer("histogram", ember.zeros(bins, **factory_kwargs))
        self.register_buffer("min_val", ember.tensor(float("inf"), **factory_kwargs))
        self.register_buffer("max_val", ember.tensor(float("-inf"), **factory_kwargs))
        self.dst_nbins = 2 ** _bits(dtype)
        # source bins are split this finely when re-binned into a wider range
        self.upsample_rate = 16

    @staticmethod
    def _get_norm(delta_begin, delta_end, density):
        # integral of x^2 over [delta_begin, delta_end], times the bin's density
        norm = (delta_end * delta_end * delta_end - delta_begin * delta_begin * delta_begin) / 3
        return density * norm

    def _compute_quantization_error(self, next_start_bin, next_end_bin):
        bin_width = (float(self.max_val) - float(self.min_val)) / self.bins
        dst_bin_width = bin_width * (next_end_bin - next_start_bin + 1) / self.dst_nbins
        if dst_bin_width == 0.0:
            return 0.0
        device = self.histogram.device
        src_bin = ember.arange(self.bins, device=device)
        src_bin_begin = (src_bin - next_start_bin) * bin_width
        src_bin_end = src_bin_begin + bin_width
        dst_bin_of_begin = ember.clamp(
            ember.div(src_bin_begin, dst_bin_width, rounding_mode="floor"), 0,
            self.dst_nbins - 1)
        dst_bin_of_begin_center = (dst_bin_of_begin + 0.5) * dst_bin_width
        dst_bin_of_end = ember.clamp(
            ember.div(src_bin_end, dst_bin_width, rounding_mode="floor"), 0,
            self.dst_nbins - 1)
        density = self.histogram / bin_width
        norm = ember.zeros(self.bins, device=device)
        delta_begin = src_bin_begin - dst_bin_of_begin_center
        norm += self._get_norm(delta_begin,
                               ember.ones(self.bins, device=device) * (dst_bin_width / 2),
                               density)
        # 0-d float32 tensors, not Python floats: torch rounds this norm in float32
        half = ember.tensor(dst_bin_width / 2, device=device)
        norm += (dst_bin_of_end - dst_bin_of_begin - 1) * self._get_norm(-half, half, density)
        dst_bin_of_end_center = dst_bin_of_end * dst_bin_width + dst_bin_width / 2
        delta_end = src_bin_end - dst_bin_of_end_center
        norm += self._get_norm(-half, delta_end, density)
        return float(norm.sum())

    def _non_linear_param_search(self):
        if self.histogram.shape[0] != self.bins:
            raise AssertionError("bins mismatch")
        bin_width = (self.max_val - self.min_val) / self.bins
        total = float(ember.sum(self.histogram))
        # torch compares the float32 cumsum with each bound cast to float32
        c_sum = ember.cumsum(self.histogram, dim=0).cpu().numpy().astype(np.float32)
        stepsize = 1e-5
        alpha, beta = 0.0, 1.0
        start_bin, end_bin = 0, self.bins - 1
        norm_min = float("inf")
        while alpha < beta:
            next_alpha, next_beta = alpha + stepsize, beta - stepsize
            lo_bound, hi_bound = np.float32(next_alpha * total), np.float32(next_beta * total)
            l, r = start_bin, end_bin
            while l < end_bin and c_sum[l] < lo_bound:
                l += 1
            while r > start_bin and c_sum[r] > hi_bound:
                r -= 1
            # cut from the end that drops more bins this step
            next_start_bin, next_end_bin = start_bin, end_bin
            if (l - start_bin) > (end_bin - r):
                next_start_bin, alpha = l, next_alpha
            else:
                next_end_bin, beta = r, next_beta
            if next_start_bin == start_bin and next_end_bin == end_bin:
                continue
            norm = self._compute_quantization_error(next_start_bin, next_end_bin)
            if norm > norm_min:
                break
            norm_min = norm
            start_bin, end_bin = next_start_bin, next_end_bin
        new_min = self.min_val + bin_width * start_bin
        new_max = self.min_val + bin_width * (end_bin + 1)
        return new_min, new_max

    def _upscale_histogram(self, histogram, orig_min, orig_max, update_min, update_max):
        # spread each old bin's count evenly over upsample_rate points, then re-bin them
        histogram = histogram.repeat_interleave(self.upsample_rate) / self.upsample_rate
        n = self.bins * self.upsample_rate
        bin_size = (orig_max - orig_min) / n
        mid_points = ember.linspace(orig_min, orig_max, n + 1, device=orig_min.device)[:-1] + 0.5 * bin_size
        boundaries = ember.linspace(update_min, update_max, self.bins + 1,
                                    device=update_min.device)
        buckets = ember.bucketize(mid_points, boundaries, right=True) - 1
        buckets = ember.clamp(buckets, 0, self.bins - 1)
        return ember.bincount(buckets, weights=histogram, minlength=self.bins)

    def _combine_histograms(self, orig_hist, orig_min, orig_max, update_hist, update_min,
                            update_max):
        if bool(update_min == orig_min) and bool(update_max == orig_max):
            return orig_hist + update_hist
        if bool(orig_min == orig_max):
            bin_value = ember.sum(orig_hist)
            moved = ember.histc(orig_min.reshape(1), bins=self.bins, min=float(update_min),
                                max=float(update_max)) * bin_value
            return moved + update_hist
        if bool(update_min > orig_min):
            raise AssertionError("update_min must be <= orig_min")
        if bool(update_max < orig_max):
            raise AssertionError("update_max must be >= orig_max")
        return update_hist + self._upscale_histogram(orig_hist, orig_min, orig_max,
                                                     update_min, update_max)

    def reset_histogram(self, x, min_val, max_val):
        if min_val.numel() != 1 or max_val.numel() != 1:
            raise AssertionError("histogram min/max values must be scalar.")
        self.min_val = min_val.detach().clone().reshape(())
        self.max_val = max_val.detach().clone().reshape(())
        self.histogram = ember.histc(x, self.bins, min=float(min_val), max=float(max_val))

    def forward(self, x_orig):
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach()
        x_min, x_max = ember.aminmax(x)
        if float(x_min) == float("-inf") or float(x_max) == float("inf"):
            warnings.warn("torch.inf detected in input tensor, ignoring input", stacklevel=2)
            x = x[x.abs() != float("inf")]
            if x.numel() == 0:
                return x_orig
            x_min, x_max = ember.aminmax(x)
        current_min, current_max = self.min_val, self.max_val
        if float(current_min) == float("inf") or float(current_max) == float("-inf"):
            self.reset_histogram(x, x_min, x_max)
            return x_orig
        new_min = ember.minimum(current_min, x_min).detach()
        new_max = ember.maximum(current_max, x_max).detach()
        update = ember.histc(x, self.bins, min=float(new_min), max=float(new_max))
        if bool(new_min == current_min) and bool(new_max == current_max):
            self.histogram = self.histogram + update
        else:
            self.histogram = self._combine_histograms(self.histogram, current_min, current_max,
                                                      update, new_min, new_max)
            self.min_val, self.max_val = new_min.clone(), new_max.clone()
        return x_orig

    def calculate_qparams(self):
        if float(self.min_val) == float("inf") and float(self.max_val) == float("-inf"):
            warnings.warn("must run observer before calling calculate_qparams. Returning "
                          "default scale and zero point ", stacklevel=2)
            return (ember.tensor([1.0], device=self.min_val.device),
                    ember.tensor([0], device=self.min_val.device))
        if self.bins != len(self.histogram):
            raise AssertionError("The number of bins in histogram should be equal to the "
                                 "number of bins supplied while making this observer")
        return self._calculate_qparams(*self._non_linear_param_search())

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"


class FixedQParamsObserver(ObserverBase):
    """Observes nothing: qparams fixed in advance (outputs of sigmoid, tanh... of known range)."""

    def __init__(self, scale, zero_point, dtype=quint8, qscheme=per_tensor_affine, quant_min=0,
                 quant_max=255, is_dynamic=False, **kwargs):
        if is_dynamic:
            raise NotImplementedError("FixedQParamsObserver doesn't support dynamic quantization")
        super().__init__(dtype=dtype, is_dynamic=is_dynamic, **kwargs)
        self.quant_min, self.quant_max = quant_min, quant_max
        self.register_buffer("scale", ember.tensor([scale], dtype=ember.float32))
        self.register_buffer("zero_point", ember.tensor([zero_point], dtype=ember.int32))
        self.qscheme = qscheme

    def forward(self, X):
        return X

    def calculate_qparams(self):
        return self.scale, self.zero_point


class PlaceholderObserver(ObserverBase):
    """Records nothing: marks where a dtype conversion goes (e.g. float16, or dynamic quant)."""

    def __init__(self, dtype=ember.float32, custom_op_name="", compute_dtype=None,
                 quant_min=None, quant_max=None, qscheme=None, eps=None, is_dynamic=False):
        super().__init__(dtype=dtype, is_dynamic=is_dynamic)
        if qscheme is None:
            qscheme = per_tensor_affine
        if eps is None:
            eps = ember.finfo(ember.float32).eps
        self.quant_min, self.quant_max = quant_min, quant_max
        self.qscheme, self.eps = qscheme, eps
        self.custom_op = custom_op_name
        if compute_dtype:
            # torch's old keyword spelling for a dynamic observer
            is_dynamic = True
            warnings.warn("Please use `is_dynamic` instead of `compute_dtype`. `compute_dtype` "
                          "will be deprecated in a future release of PyTorch.", stacklevel=2)
        self.is_dynamic = is_dynamic

    def forward(self, x):
        return x

    def extra_repr(self):
        return f"dtype={self.dtype}, is_dynamic={self.is_dynamic}"

    def calculate_qparams(self):
        raise Exception("calculate_qparams should not be called for PlaceholderObserver")


class NoopObserver(ObserverBase):
    """Records nothing and gives no qparams: marks a tensor left in ``dtype`` (e.g. float32)."""

    def __init__(self, dtype=ember.float16, custom_op_name=""):
        super().__init__(dtype=dtype)
        self.dtype = dtype
        self.custom_op = custom_op_name

    def forward(self, x):
        return x

    def calculate_qparams(self):
        raise Exception("calculate_qparams should not be called for NoopObserver")


class ReuseInputObserver(ObserverBase):
    """Records nothing: an op whose output takes its input's qparams (``reshape``...)."""

    def __init__(self):
        super().__init__(quint8, is_dynamic=False)

    def forward(self, x):
        return x

    def calculate_qparams(self):
        raise Exception("calculate_qparams should not be called for ReuseInputObserver")


default_observer = MinMaxObserver.with_args(quant_min=0, quant_max=127)
default_placeholder_observer = PlaceholderObserver
default_fixed_qparams_range_neg1to1_observer = FixedQParamsObserver.with_args(
    scale=2.0 / 256.0, zero_point=128, dtype=quint8, quant_min=0, quant_max=255)
default_fixed_qparams_range_0to1_observer = FixedQParamsObserver.with_args(
    scale=1.0 / 256.0, zero_point=0, dtype=quint8, quant_min=0, quant_max=255)
default_histogram_observer = HistogramObserver.with_args(quant_min=0, quant_max=127)
default_weight_observer = MinMaxObserver.with_args(dtype=qint8, qscheme=per_tensor_symmetric)
weight_observer_range_neg_127_to_127 = MinMaxObserver.with_args(
    dtype=qint8, qscheme=per_tensor_symmetric, quant_min=-127, quant_max=127, eps=2**-12)
default_per_channel_weight_observer = PerChannelMinMaxObserver.with_args(
    dtype=qint8, qscheme=per_channel_symmetric)
per_channel_weight_observer_range_neg_127_to_127 = PerChannelMinMaxObserver.with_args(
    dtype=qint8, qscheme=per_channel_symmetric, quant_min=-127, quant_max=127, eps=2**-12)
default_dynamic_quant_observer = PlaceholderObserver.with_args(dtype=quint8, quant_min=0,
                                                               quant_max=255, is_dynamic=True)
default_float_qparams_observer = PerChannelMinMaxObserver.with_args(
    dtype=quint8, qscheme=per_channel_affine_float_qparams, ch_axis=0)
default_reuse_input_observer = ReuseInputObserver
