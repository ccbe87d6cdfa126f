"""Dropout variants, as ``torch.nn.functional``: the kernels are ``ember.ops.dropout``; the
channel variants ``dropout1d/2d/3d`` check their input's rank here, with PyTorch's warnings."""
import warnings

from ...ops import dropout as _ops
from ...ops.dropout import dropout, alpha_dropout, feature_alpha_dropout

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
           "feature_alpha_dropout"]

_SPATIAL_WORDS = {1: "1 spatial dimension", 2: "2 spatial dimensions", 3: "3 spatial dimensions"}


def _channel_dropout(name, spatial, input, p, training, inplace):
    _ops.check_p(p)
    ndim = input.ndim
    batched, unbatched = spatial + 2, spatial + 1
    note = (f"Note that {name} exists to provide channel-wise dropout on inputs with "
            f"{_SPATIAL_WORDS[spatial]}, a channel dimension, and an optional batch dimension "
            f"(i.e. {unbatched}D or {batched}D inputs).")
    if ndim not in (unbatched, batched):
        if spatial == 1:
            raise RuntimeError(f"{name}: Expected {unbatched}D or {batched}D input, but received "
                               f"a {ndim}D input. {note}")
        warnings.warn(f"{name}: Received a {ndim}-D input to {name}, which is deprecated and will "
                      "result in an error in a future release. To retain the behavior and silence "
                      f"this warning, please use dropout instead. {note}", stacklevel=3)
    if ndim == unbatched and spatial == 2:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise "
                      "1D dropout behavior is desired - input is interpreted as shape (N, C, L), "
                      "where C is the channel dim. This behavior will change in a future release "
                      "to interpret the input as one without a batch dimension, i.e. shape "
                      "(C, H, W). To maintain the 1D channel-wise dropout behavior, please switch "
                      "to using dropout1d instead.", stacklevel=3)
    # dropout1d/3d take any rank short of the batched one as unbatched (dropout3d even below
    # 4-D, as PyTorch) and wrap the call in a batch dimension (in place for an in-place call),
    # so even a no-op returns a new view with PyTorch's Unsqueeze/Squeeze nodes.
    add_batch = spatial != 2 and ndim != batched
    if add_batch:
        input = input.unsqueeze_(0) if inplace else input.unsqueeze(0)
    result = _ops.feature_dropout(input, p, training, inplace)
    if add_batch:
        result = result.squeeze_(0) if inplace else result.squeeze(0)
    return result


def dropout1d(input, p=0.5, training=True, inplace=False):
    return _channel_dropout("dropout1d", 1, input, p, training, inplace)


def dropout2d(input, p=0.5, training=True, inplace=False):
    return _channel_dropout("dropout2d", 2, input, p, training, inplace)


def dropout3d(input, p=0.5, training=True, inplace=False):
    return _channel_dropout("dropout3d", 3, input, p, training, inplace)
