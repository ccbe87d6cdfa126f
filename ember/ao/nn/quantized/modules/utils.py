"""What the quantized modules share: weight quantization from an observer (with the clamp to
the observer's narrower range), and the repr that hides the packed parameters."""
import abc

import ember
from ember.nn.modules.module import Module, _addindent

__all__ = ["WeightedQuantizedModule"]


class WeightedQuantizedModule(Module, metaclass=abc.ABCMeta):
    """A quantized module with a weight, that can be built from a reference module."""

    @classmethod
    @abc.abstractmethod
    def from_reference(cls, ref_module, output_scale, output_zero_point):
        raise NotImplementedError


def _get_weight_observer(observer):
    # a FakeQuantize holds its observer
    return getattr(observer, "activation_post_process", observer)


def _needs_weight_clamping(observer, dtype):
    observer = _get_weight_observer(observer)
    if dtype in (ember.qint8, ember.quint8, ember.qint32):
        info = ember.iinfo(dtype)
        return observer.quant_min > info.min or observer.quant_max < info.max
    return False


def _clamp_weights(qweight, observer, scale, zp):
    if not _needs_weight_clamping(observer, qweight.dtype):
        return qweight
    observer = _get_weight_observer(observer)
    ints = qweight.int_repr().clamp(observer.quant_min, observer.quant_max)
    if observer.qscheme in (ember.per_tensor_symmetric, ember.per_tensor_affine):
        return ember._make_per_tensor_quantized_tensor(ints, float(scale), int(zp))
    if observer.qscheme in (ember.per_channel_symmetric, ember.per_channel_affine,
                            ember.per_channel_affine_float_qparams):
        return ember._make_per_channel_quantized_tensor(ints, scale, zp, observer.ch_axis)
    raise ValueError(f"Unexpected qscheme {observer.qscheme}")


def _quantize_weight(float_wt, observer):
    """``float_wt`` quantized with the qparams ``observer`` (which has seen it) computes."""
    wt_scale, wt_zp = observer.calculate_qparams()
    if observer.qscheme in (ember.per_tensor_symmetric, ember.per_tensor_affine):
        qweight = ember.quantize_per_tensor(float_wt, float(wt_scale), int(wt_zp), ember.qint8)
    elif observer.qscheme in (ember.per_channel_symmetric, ember.per_channel_affine):
        qweight = ember.quantize_per_channel(float_wt, wt_scale.to(ember.double),
                                             wt_zp.to(ember.int64), observer.ch_axis,
                                             ember.qint8)
    elif observer.qscheme is ember.per_channel_affine_float_qparams:
        qweight = ember.quantize_per_channel(float_wt, wt_scale.to(ember.float),
                                             wt_zp.to(ember.float), observer.ch_axis,
                                             observer.dtype)
    else:
        raise ValueError(f"Unexpected qscheme {observer.qscheme}")
    return _clamp_weights(qweight, observer, wt_scale, wt_zp)


def _ntuple_from_first(n):
    """``x`` as an n-tuple of its first element (nested sequences are unwrapped)."""
    def parse(x):
        import collections.abc
        while isinstance(x, collections.abc.Sequence):
            if len(x) == n:
                break
            x = x[0]
        return (x,) * n
    return parse


_pair_from_first = _ntuple_from_first(2)


def _hide_packed_params_repr(self, params):
    extra_lines = self.extra_repr().split("\n") if self.extra_repr() else []
    child_lines = ["(" + key + "): " + _addindent(repr(module), 2)
                   for key, module in self._modules.items() if not isinstance(module, params)]
    lines = extra_lines + child_lines
    main_str = self._get_name() + "("
    if lines:
        if len(extra_lines) == 1 and not child_lines:
            main_str += extra_lines[0]
        else:
            main_str += "\n  " + "\n  ".join(lines) + "\n"
    return main_str + ")"


def _float_module_type(mod):
    from ember.nn.utils.parametrize import type_before_parametrizations
    return type_before_parametrizations(mod)


def _intrinsic(name, package="ember.ao.nn.intrinsic"):
    """A fused module class of ``ember.ao.nn.intrinsic`` (or its qat), or None when that
    package does not define it."""
    import importlib
    try:
        return getattr(importlib.import_module(package), name, None)
    except ImportError:
        return None
