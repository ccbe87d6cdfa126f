import warnings

from ... import _dtype as dt
from ...amp import autocast_mode as _autocast_mode

__all__ = ["autocast"]


class autocast(_autocast_mode.autocast):
    """``ember.autocast("cpu", ...)`` under its deprecated name (bfloat16 by default)."""

    def __init__(self, enabled=True, dtype=dt.bfloat16, cache_enabled=True):
        warnings.warn("`torch.cpu.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cpu', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)
