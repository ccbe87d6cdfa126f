import warnings

from ... import _dtype as dt
from ...amp import autocast_mode as _autocast_mode
from ...amp import custom_fwd_bwd as _custom_fwd_bwd

__all__ = ["autocast", "custom_fwd", "custom_bwd"]


class autocast(_autocast_mode.autocast):
    """``ember.autocast("cuda", ...)`` under its deprecated name (float16 by default)."""

    def __init__(self, enabled=True, dtype=dt.float16, cache_enabled=True):
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """``ember.amp.custom_fwd(..., device_type="cuda")`` under its deprecated name."""
    warnings.warn("`torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_fwd(args..., device_type='cuda')` instead.", FutureWarning,
                  stacklevel=2)
    return _custom_fwd_bwd.custom_fwd(fwd=fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd):
    """``ember.amp.custom_bwd(..., device_type="cuda")`` under its deprecated name."""
    warnings.warn("`torch.cuda.amp.custom_bwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_bwd(args..., device_type='cuda')` instead.", FutureWarning,
                  stacklevel=2)
    return _custom_fwd_bwd.custom_bwd(bwd, device_type="cuda")
