"""``InstanceNorm1d/2d/3d``, as ``torch.nn``: each sample's channels normalised over their own
spatial positions. Running statistics, when tracked, are the batch average of the instances'
statistics and are used in evaluation."""
import warnings

from .. import functional as F
from .batchnorm import _NormBase

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]


class _InstanceNorm(_NormBase):
    _spatial_dims = 0

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)

    def _unbatched_dims(self):
        return self._spatial_dims + 1

    def _check_input_dim(self, input):
        unbatched = self._unbatched_dims()
        if input.dim() not in (unbatched, unbatched + 1):
            raise ValueError(f"expected {unbatched}D or {unbatched + 1}D input (got "
                             f"{input.dim()}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        feature_dim = input.dim() - self._unbatched_dims()
        if input.size(feature_dim) != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match "
                                 f"num_features ({self.num_features}), but got: "
                                 f"{input.size(feature_dim)}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You "
                          "can silence this warning by not passing in num_features, which is "
                          "not used because affine=False", stacklevel=2)
        if input.dim() == self._unbatched_dims():
            return self._normalize(input.unsqueeze(0)).squeeze(0)
        return self._normalize(input)

    def _normalize(self, input):
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight,
                               self.bias, self.training or not self.track_running_stats,
                               self.momentum if self.momentum is not None else 0.0, self.eps)


class InstanceNorm1d(_InstanceNorm):
    _spatial_dims = 1


class InstanceNorm2d(_InstanceNorm):
    _spatial_dims = 2


class InstanceNorm3d(_InstanceNorm):
    _spatial_dims = 3
