"""QConfig: which observer (or fake quantize) watches a module's activations and its weight.

Mirrors ``torch.ao.quantization.qconfig``: a ``QConfig`` holds two constructors, not
instances, so that each module prepared gets observers of its own. The defaults per backend
use the observers and arguments torch uses for that backend (x86 and fbgemm reduce the
activation range by one bit, qnnpack keeps the full range and a per-tensor weight).
"""
import warnings
from collections import namedtuple

import ember
from ... import nn
from .fake_quantize import (FakeQuantize, FakeQuantizeBase, FusedMovingAvgObsFakeQuantize,
                            default_dynamic_fake_quant, default_embedding_fake_quant,
                            default_fake_quant, default_fused_act_fake_quant,
                            default_fused_per_channel_wt_fake_quant,
                            default_fused_wt_fake_quant, default_per_channel_weight_fake_quant,
                            default_weight_fake_quant)
from .observer import (HistogramObserver, MinMaxObserver, MovingAverageMinMaxObserver,
                       NoopObserver,
                       PerChannelMinMaxObserver, MovingAveragePerChannelMinMaxObserver,
                       PlaceholderObserver, _PartialWrapper, default_dynamic_quant_observer,
                       default_float_qparams_observer, default_observer,
                       default_per_channel_weight_observer, default_placeholder_observer,
                       default_reuse_input_observer, default_weight_observer,
                       per_channel_weight_observer_range_neg_127_to_127,
                       weight_observer_range_neg_127_to_127)
from . import qint8, per_tensor_symmetric, per_channel_symmetric

__all__ = ["QConfig", "QConfigDynamic", "default_qconfig", "default_per_channel_qconfig",
           "default_dynamic_qconfig", "float16_dynamic_qconfig", "float16_static_qconfig",
           "per_channel_dynamic_qconfig", "float_qparams_weight_only_qconfig",
           "default_qat_qconfig", "default_dynamic_qat_qconfig", "default_weight_only_qconfig",
           "default_activation_only_qconfig", "default_qat_qconfig_v2",
           "default_reuse_input_qconfig", "default_symmetric_qnnpack_qconfig",
           "default_per_channel_symmetric_qnnpack_qconfig", "default_embedding_qat_qconfig",
           "default_quint8_weight_qconfig", "default_symmetric_qnnpack_qat_qconfig",
           "default_per_channel_symmetric_qnnpack_qat_qconfig", "get_default_qconfig",
           "get_default_qat_qconfig", "qconfig_equals", "QConfigAny"]

_BACKENDS = ["fbgemm", "x86", "qnnpack", "onednn"]


class QConfig(namedtuple("QConfig", ["activation", "weight"])):
    """How to observe a module: ``QConfig(activation=ObsClass, weight=ObsClass.with_args(...))``.

    Both fields are constructors (a class or ``with_args`` factory); passing an observer
    instance is an error, since every prepared module needs observers of its own.
    """
    __slots__ = ()

    def __new__(cls, activation, weight):
        if isinstance(activation, nn.Module) or isinstance(weight, nn.Module):
            raise ValueError("QConfig received observer instance, please pass observer class "
                             "instead. Use MyObserver.with_args(x=1) to override arguments to "
                             "constructor if needed")
        return super().__new__(cls, activation, weight)


class QConfigDynamic(namedtuple("QConfigDynamic", ["activation", "weight"])):
    """Deprecated spelling of ``QConfig`` for dynamic quantization (torch warns the same)."""
    __slots__ = ()

    def __new__(cls, activation=ember.nn.Identity, weight=ember.nn.Identity):
        if isinstance(weight, nn.Module):
            raise ValueError("QConfigDynamic received observer instance, please pass observer "
                             "class instead. Use MyObserver.with_args(x=1) to override "
                             "arguments to constructor if needed")
        warnings.warn("QConfigDynamic is going to be deprecated in PyTorch 1.12, please use "
                      "QConfig instead", stacklevel=2)
        return super().__new__(cls, activation, weight)


QConfigAny = QConfig  # torch's Optional[QConfig] type alias; None means "leave in float"

default_qconfig = QConfig(activation=default_observer, weight=default_weight_observer)
default_per_channel_qconfig = QConfig(activation=default_observer,
                                      weight=default_per_channel_weight_observer)
default_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer,
                                  weight=default_weight_observer)
float16_dynamic_qconfig = QConfig(
    activation=PlaceholderObserver.with_args(dtype=ember.float16, is_dynamic=True),
    weight=PlaceholderObserver.with_args(dtype=ember.float16))
float16_static_qconfig = QConfig(activation=PlaceholderObserver.with_args(dtype=ember.float16),
                                 weight=PlaceholderObserver.with_args(dtype=ember.float16))
per_channel_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer,
                                      weight=default_per_channel_weight_observer)
float_qparams_weight_only_qconfig = QConfig(activation=default_placeholder_observer,
                                            weight=default_float_qparams_observer)
default_qat_qconfig = QConfig(activation=default_fake_quant, weight=default_weight_fake_quant)
default_dynamic_qat_qconfig = QConfig(activation=default_dynamic_fake_quant,
                                      weight=default_weight_fake_quant)
default_weight_only_qconfig = QConfig(activation=ember.nn.Identity,
                                      weight=default_weight_fake_quant)
default_activation_only_qconfig = QConfig(activation=default_fake_quant,
                                          weight=ember.nn.Identity)
default_qat_qconfig_v2 = QConfig(activation=default_fused_act_fake_quant,
                                 weight=default_fused_wt_fake_quant)
default_reuse_input_qconfig = QConfig(activation=default_reuse_input_observer,
                                      weight=NoopObserver)
# signed activations and weights restricted to [-127, 127] (xnnpack's requantization limits)
default_symmetric_qnnpack_qconfig = QConfig(
    activation=HistogramObserver.with_args(dtype=qint8, reduce_range=False, eps=2**-12),
    weight=weight_observer_range_neg_127_to_127)
default_per_channel_symmetric_qnnpack_qconfig = QConfig(
    activation=HistogramObserver.with_args(dtype=qint8, reduce_range=False, eps=2**-12),
    weight=per_channel_weight_observer_range_neg_127_to_127)
default_embedding_qat_qconfig = QConfig(activation=NoopObserver.with_args(dtype=ember.float32),
                                        weight=default_embedding_fake_quant)
default_quint8_weight_qconfig = QConfig(activation=HistogramObserver, weight=MinMaxObserver)


def _check_backend(backend):
    if backend not in _BACKENDS:
        raise AssertionError(f"backend: {backend} not supported. backend must be one of "
                             f"{_BACKENDS}")


def get_default_qconfig(backend="x86", version=0):
    """The default post-training QConfig for ``backend`` ("x86", "fbgemm", "qnnpack", "onednn")."""
    _check_backend(backend)
    if version != 0:
        raise AssertionError(f"Version number: {version} in get_default_qconfig is not "
                             "supported. Version number must be 0")
    if backend in ("x86", "fbgemm"):
        # x86 int8 kernels accumulate pairs in int16 (vpmaddubsw): 7-bit activations avoid
        # saturating them
        return QConfig(activation=HistogramObserver.with_args(reduce_range=True),
                       weight=default_per_channel_weight_observer)
    if backend == "qnnpack":
        return QConfig(activation=HistogramObserver.with_args(reduce_range=False),
                       weight=default_weight_observer)
    return QConfig(activation=HistogramObserver.with_args(reduce_range=False),
                   weight=default_per_channel_weight_observer)


def get_default_qat_qconfig(backend="x86", version=1):
    """The default quantization-aware-training QConfig for ``backend``.

    ``version=1`` (the default) uses the fused observer + fake quantize modules, ``0`` the
    separate ``FakeQuantize``; both compute the same values.
    """
    _check_backend(backend)
    if version == 0:
        fake_quant, per_tensor_wt, per_channel_wt = (
            FakeQuantize, default_weight_fake_quant, default_per_channel_weight_fake_quant)
    elif version == 1:
        fake_quant, per_tensor_wt, per_channel_wt = (
            FusedMovingAvgObsFakeQuantize, default_fused_wt_fake_quant,
            default_fused_per_channel_wt_fake_quant)
    else:
        raise AssertionError(f"Version number: {version}in get_default_qat_qconfig is not "
                             "supported. Version number must be 0 or 1")
    activation_kwargs = dict(observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255)
    if backend in ("x86", "fbgemm"):
        activation_kwargs["reduce_range"] = True
    elif backend == "qnnpack":
        activation_kwargs["reduce_range"] = False
    weight = per_tensor_wt if backend == "qnnpack" else per_channel_wt
    return QConfig(activation=fake_quant.with_args(**activation_kwargs), weight=weight)


default_symmetric_qnnpack_qat_qconfig = QConfig(
    activation=FusedMovingAvgObsFakeQuantize.with_args(
        observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=qint8,
        reduce_range=False, eps=2**-12),
    weight=FusedMovingAvgObsFakeQuantize.with_args(
        observer=MovingAverageMinMaxObserver, quant_min=-127, quant_max=127, dtype=qint8,
        qscheme=per_tensor_symmetric, eps=2**-12))
default_per_channel_symmetric_qnnpack_qat_qconfig = QConfig(
    activation=FusedMovingAvgObsFakeQuantize.with_args(
        observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=qint8,
        reduce_range=False, eps=2**-12),
    weight=FusedMovingAvgObsFakeQuantize.with_args(
        observer=MovingAveragePerChannelMinMaxObserver, quant_min=-127, quant_max=127,
        dtype=qint8, qscheme=per_channel_symmetric, eps=2**-12))


def _assert_valid_qconfig(qconfig, mod):
    """Per-channel weight observers are not supported for transposed convolutions (torch's rule)."""
    if qconfig is None or qconfig.weight is None:
        return
    if isinstance(mod, (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)):
        example_observer = qconfig.weight()
        if isinstance(example_observer, (PerChannelMinMaxObserver,
                                         MovingAveragePerChannelMinMaxObserver)):
            raise AssertionError("Per channel weight observer is not supported yet for "
                                 "ConvTranspose{n}d.")


def _module_device(module):
    devices = {p.device for p in module.parameters()} | {b.device for b in module.buffers()}
    if len(devices) > 1:
        raise AssertionError("prepare only works with cpu or single-device CUDA modules, but "
                             f"got devices {devices}")
    return next(iter(devices)) if devices else None


def _add_module_to_qconfig_obs_ctr(qconfig, module):
    """The qconfig whose constructors put observers on ``module``'s device (when not CPU)."""
    if module is None or qconfig is None or qconfig._fields != ("activation", "weight"):
        return qconfig
    device = _module_device(module)
    if device is None or device.type == "cpu":
        return qconfig

    def on_device(ctr):
        def make():
            return ctr().to(device)
        return make
    return QConfig(on_device(qconfig.activation), on_device(qconfig.weight))


def _partial_wrapper_equals(a, b):
    a_kw, b_kw = dict(a.p.keywords), dict(b.p.keywords)
    if "observer" in a_kw and "observer" in b_kw:
        if not _obs_or_fq_ctr_equals(a_kw.pop("observer"), b_kw.pop("observer")):
            return False
    return a.p.func == b.p.func and a_kw == b_kw and a.callable_args == b.callable_args


def _obs_or_fq_ctr_equals(a, b):
    if isinstance(a, _PartialWrapper) and isinstance(b, _PartialWrapper):
        return _partial_wrapper_equals(a, b)
    return a == b


def qconfig_equals(q1, q2):
    """Whether two QConfigs build the same observers (``with_args`` factories compared by
    their class and keywords, not identity)."""
    if q1 is None or q2 is None:
        return q1 == q2
    return (_obs_or_fq_ctr_equals(q1.activation, q2.activation)
            and _obs_or_fq_ctr_equals(q1.weight, q2.weight))


def _activation_is_memoryless(qconfig):
    """Whether the activation observer keeps no history (a moving average with constant 1):
    then it can watch the module's input before forward instead of its output."""
    act = qconfig.activation()
    if isinstance(act, FakeQuantizeBase) and hasattr(act, "activation_post_process"):
        act = act.activation_post_process
    return getattr(act, "averaging_constant", None) == 1
