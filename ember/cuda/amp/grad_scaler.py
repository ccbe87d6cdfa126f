import warnings

from ...amp.grad_scaler import GradScaler as _GradScaler
from ...amp.grad_scaler import OptState  # noqa: F401  (PyTorch keeps this name here too)

__all__ = ["GradScaler"]


class GradScaler(_GradScaler):
    """``ember.amp.GradScaler("cuda", ...)`` under its deprecated name. Without CUDA it warns
    and disables itself, as the ``ember.amp`` form does."""

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)
