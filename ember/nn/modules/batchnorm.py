"""``BatchNorm1d/2d/3d``, as ``torch.nn``.

In training, each channel is normalised with the batch's statistics and the running estimates
are updated: ``running = (1 - momentum) * running + momentum * batch`` (the variance unbiased),
or, with ``momentum=None``, a cumulative average over the ``num_batches_tracked`` batches seen.
In evaluation the running estimates are used, unless the layer tracks none.
"""
from ... import _dtype as dt
from ... import ops as _ops
from ...autograd.grad_mode import no_grad
from .. import functional as F
from .module import Module
from .normalization import _register_affine, _reset_affine

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]


class _NormBase(Module):
    """State shared by batch and instance normalisation: optional per-channel affine
    parameters and optional running statistics."""
    _version = 2
    __constants__ = ["track_running_stats", "momentum", "eps", "num_features", "affine"]

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        like = dict(device=device, dtype=dtype)
        _register_affine(self, num_features, affine, bias, device, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", _ops.zeros(num_features, **like))
            self.register_buffer("running_var", _ops.ones(num_features, **like))
            self.register_buffer("num_batches_tracked",
                                 _ops.tensor(0, dtype=dt.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            _reset_affine(self)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    _expected_dims = ()

    def _check_input_dim(self, input):
        if input.dim() not in self._expected_dims:
            expected = " or ".join(f"{d}D" for d in self._expected_dims)
            raise ValueError(f"expected {expected} input (got {input.dim()}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # a cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked)
        use_batch_stats = self.training or (self.running_mean is None
                                            and self.running_var is None)
        # Batch statistics in evaluation (no running estimates) must not update anything.
        update = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if update else None,
                            self.running_var if update else None, self.weight, self.bias,
                            use_batch_stats, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    _expected_dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    _expected_dims = (4,)


class BatchNorm3d(_BatchNorm):
    _expected_dims = (5,)
