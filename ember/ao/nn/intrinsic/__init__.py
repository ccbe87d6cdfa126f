"""``ember.ao.nn.intrinsic``: fused float modules (conv+bn+relu...), as ``torch.ao.nn.intrinsic``.

``qat`` and ``quantized`` hold their fake-quantized and int8 forms."""
from .modules import *  # noqa: F401,F403
from .modules import _FusedModule, __all__  # noqa: F401


def __getattr__(name):
    # the QAT and int8 forms load on first use, as in ember.ao.nn
    if name in ("qat", "quantized"):
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
