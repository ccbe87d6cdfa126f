"""``ember.cpu.amp``: PyTorch's deprecated CPU spellings of ``ember.amp`` (``autocast``,
``GradScaler``), each warning with PyTorch's FutureWarning and then doing what the
``ember.amp`` form with ``"cpu"`` does."""
from .autocast_mode import autocast
from .grad_scaler import GradScaler

__all__ = ["autocast", "GradScaler"]
