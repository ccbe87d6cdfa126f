"""``ember.cuda.amp``: PyTorch's deprecated CUDA spellings of ``ember.amp`` (``autocast``,
``GradScaler``, ``custom_fwd``, ``custom_bwd``), each warning with PyTorch's FutureWarning and
then doing what the ``ember.amp`` form with ``"cuda"`` does."""
from .autocast_mode import autocast, custom_bwd, custom_fwd
from .common import amp_definitely_not_available
from .grad_scaler import GradScaler

__all__ = ["amp_definitely_not_available", "autocast", "custom_bwd", "custom_fwd", "GradScaler"]
