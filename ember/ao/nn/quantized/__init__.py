"""``ember.ao.nn.quantized``: modules on quantized tensors (int8 weights, quint8 activations),
as ``torch.ao.nn.quantized``; ``functional`` holds their functional forms and ``dynamic`` the
modules that quantize their activations at run time."""
from . import functional  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from . import dynamic  # noqa: F401

__all__ = list(_modules_all)
