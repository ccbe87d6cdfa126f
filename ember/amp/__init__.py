"""torch.amp: autocast (``autocast_mode.py``), ``GradScaler`` (``grad_scaler.py``) and
``custom_fwd``/``custom_bwd`` (``custom_fwd_bwd.py``).

``ember.ops`` imports ``autocast_mode`` while ``import ember`` runs (the ops' autocast test),
so this package's own import must not import the rest of Ember: ``grad_scaler`` imports
``ember.ops``, which is still half-initialised at that point. Those names are bound on first
use by the module ``__getattr__`` below.
"""
import importlib as _importlib

from . import autocast_mode
from .autocast_mode import autocast, is_autocast_available

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available", "GradScaler"]

_LAZY = {"GradScaler": "grad_scaler", "custom_fwd": "custom_fwd_bwd",
         "custom_bwd": "custom_fwd_bwd", "grad_scaler": None, "custom_fwd_bwd": None}


def __getattr__(name):
    if name in _LAZY:
        module = _importlib.import_module(f"{__name__}.{_LAZY[name] or name}")
        value = module if _LAZY[name] is None else getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'ember.amp' has no attribute '{name}'")


def __dir__():
    return sorted({*globals(), *_LAZY})
