"""``ember.ao.nn``: the module families of quantization, as ``torch.ao.nn``.

``intrinsic`` (fused float modules), ``qat`` and ``intrinsic.qat`` (fake-quantized training
modules), ``quantized`` and ``intrinsic.quantized`` (int8 modules). Each is imported on first
use, since the quantized kernels are not needed to prepare a model.
"""
import importlib

_SUBMODULES = frozenset({"intrinsic", "qat", "quantized"})


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *_SUBMODULES})
