"""Normalisation layers' functional forms, as ``torch.nn.functional``.

``batch_norm`` (training), ``layer_norm`` and ``instance_norm`` run the fused
``ember.ops.normalize_affine`` op; the rest compose differentiable ops. Running statistics are
updated in place without recording gradients, as PyTorch's kernels do.
"""
import math

import ember
from ... import _memory_format as _mf
from ...ops.elementwise import add_scalar
from ...ops.normalization import (normalize_affine, batch_norm_eval, NativeBatchNormBackward0,
                                  NativeLayerNormBackward0, group_norm as _group_norm)
from ...amp import autocast_mode as _autocast

__all__ = ["batch_norm", "instance_norm", "layer_norm", "group_norm", "rms_norm",
           "local_response_norm", "normalize"]


def _per_channel_view(ndim):
    return lambda n: (1, n) + (1,) * (ndim - 2)


def _check_stat_size(name, t, channels):
    if t is not None and t.numel() != channels:
        raise RuntimeError(f"{name} should contain {channels} elements not {t.numel()}")


def _update_running_stats(running_mean, running_var, mean, invstd, eps, count, momentum):
    """Blend this batch's mean and unbiased variance into the running estimates."""
    with ember.no_grad():
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(mean.reshape(running_mean.shape) * momentum)
        if running_var is not None:
            var = (invstd.pow(-2) - eps) * (count / max(count - 1, 1))
            running_var.mul_(1 - momentum).add_(var.reshape(running_var.shape) * momentum)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    # PyTorch's order: nn.functional's batch size check (which indexes the shape, so a 0-d
    # input is an IndexError), then ATen's, which counts no channels below two dimensions.
    if training:
        count = input.shape[0] * math.prod(input.shape[2:])
        if count == 1:
            raise ValueError("Expected more than 1 value per channel when training, got input "
                             f"size {_size_repr(input)}")
    if input.numel() == 0:
        # ATen returns an empty input early, before any check of the statistics, as a copy
        # times weight[0] plus bias[0] (so torch's graph is Clone, Mul, Add)
        out = input.clone()
        if weight is not None:
            out = out * weight[0]
        if bias is not None:
            out = out + bias[0]
        return out
    channels = input.shape[1] if input.ndim > 1 else 0
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        _check_stat_size(name, t, channels)
    if input.ndim == 1:  # where ATen reads the channel count
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    if input.ndim == 0:
        raise RuntimeError("batch_norm expects an input of at least 2 dimensions, got a 0-d "
                           "tensor")
    view = (1, channels) + (1,) * (input.ndim - 2)
    if training:
        axes = (0,) + tuple(range(2, input.ndim))
        out, mean, invstd = normalize_affine(input, weight, bias, axes, view, eps,
                                             NativeBatchNormBackward0)
        _update_running_stats(running_mean, running_var, mean, invstd, eps, count, momentum)
        return out
    if running_mean is None or running_var is None:
        raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
    return batch_norm_eval(input, running_mean, running_var, weight, bias, eps)


def _size_repr(t):
    return "ember.Size([" + ", ".join(str(s) for s in t.shape) + "])"


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} "
                         "dimensions)")
    channels = input.shape[1]
    if not use_input_stats:
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    spatial = input.numel() // max(input.shape[0] * channels, 1)
    if spatial == 1:
        raise ValueError("Expected more than 1 spatial element when training, got input size "
                         f"{_size_repr(input)}")
    for name, t in (("weight", weight), ("bias", bias)):
        _check_stat_size(name, t, channels)
    # As PyTorch: batch norm of a (1, N*C, ...) view, with the affine parameters repeated.
    batch = input.shape[0]
    planes = input.contiguous().view((1, batch * channels) + tuple(input.shape[2:]))
    out, mean, invstd = normalize_affine(
        planes, None if weight is None else weight.repeat(batch),
        None if bias is None else bias.repeat(batch), (0,) + tuple(range(2, input.ndim)),
        (1, batch * channels) + (1,) * (input.ndim - 2), eps, NativeBatchNormBackward0)
    out = out.view(input.shape)
    mean, invstd = mean.reshape(batch, channels), invstd.reshape(batch, channels)
    if running_mean is not None or running_var is not None:
        # Each instance's statistics, averaged over the batch.
        with ember.no_grad():
            var = (invstd.pow(-2) - eps) * (spatial / max(spatial - 1, 1))
            if running_mean is not None:
                running_mean.mul_(1 - momentum).add_(mean.mean(0).reshape(-1) * momentum)
            if running_var is not None:
                running_var.mul_(1 - momentum).add_(var.mean(0).reshape(-1) * momentum)
    return out


def _normalized_shape(normalized_shape):
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    return tuple(normalized_shape)


def _check_normalized_shape(input, shape, separator=", "):
    k = len(shape)
    if k == 0 or input.ndim < k or tuple(input.shape[input.ndim - k:]) != shape:
        listed = ", ".join(str(s) for s in shape)
        raise RuntimeError(f"Given normalized_shape=[{listed}], expected input with shape "
                           f"[*{separator}{listed}], but got input of size"
                           + "[" + ", ".join(str(s) for s in input.shape) + "]")


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    if _autocast.active and _autocast.enabled_for(input, "layer_norm"):
        return _autocast.run(layer_norm, "layer_norm", input, normalized_shape, weight, bias, eps)
    shape = _normalized_shape(normalized_shape)
    _check_normalized_shape(input, shape)
    for t in (weight, bias):
        if t is not None and tuple(t.shape) != shape:
            raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but "
                               f"got weight of shape {list(t.shape)} and normalized_shape = "
                               f"{list(shape)}")
    lead = input.ndim - len(shape)
    out, _, _ = normalize_affine(input, weight, bias, tuple(range(lead, input.ndim)),
                                 (1,) * lead + shape, eps, NativeLayerNormBackward0)
    return out


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    if _autocast.active and _autocast.enabled_for(input, "group_norm"):
        return _autocast.run(group_norm, "group_norm", input, num_groups, weight, bias, eps)
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.ndim}")
    channels = input.shape[1]
    if channels % num_groups:
        raise RuntimeError("Expected number of channels in input to be divisible by num_groups, "
                           f"but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    # As ATen, the kernel takes its tensors dense, the input in the layout its strides suggest.
    input = input.contiguous(memory_format=_mf.suggest(tuple(input.shape), input.stride()))
    weight = None if weight is None else weight.contiguous()
    bias = None if bias is None else bias.contiguous()
    return _group_norm(input, num_groups, weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    shape = _normalized_shape(normalized_shape)
    _check_normalized_shape(input, shape, separator="")  # PyTorch's rms_norm message has no comma
    if eps is None:
        eps = _MACHINE_EPSILON[input.dtype]
    axes = tuple(range(input.ndim - len(shape), input.ndim))
    out = input * add_scalar(input.pow(2).mean(axes, keepdim=True), eps).rsqrt()
    return out * weight if weight is not None else out


_MACHINE_EPSILON = {ember.float16: 0.0009765625, ember.bfloat16: 0.0078125,
        ember.float32: 1.1920928955078125e-07, ember.float64: 2.220446049250313e-16}


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """Each channel divided by ``(k + alpha * mean of squares over the size neighbouring
    channels) ** beta``; the window is zero-padded at the channel edges."""
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          input "
                         f"(got {input.ndim} dimensions)")
    if input.numel() == 0:
        return input
    # PyTorch's composition (so the graph is its graph): the window mean of the squares is an
    # average pool over the zero-padded channel axis.
    from ._padding import pad
    from ._pooling import avg_pool2d, avg_pool3d
    div = input.mul(input)
    before, after = size // 2, (size - 1) // 2
    if input.ndim == 3:
        div = pad(div.unsqueeze(1), (0, 0, before, after))
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        shape = input.shape
        div = div.view(shape[0], 1, shape[1], shape[2], -1)
        div = pad(div, (0, 0, 0, 0, before, after))
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1).view(shape)
    div = div.mul(alpha).add(k).pow(beta)
    return input / div


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    norm = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    result = input / norm
    if out is not None:
        return out.copy_(result)
    return result

