"""``linear`` and ``bilinear``, as ``torch.nn.functional``: PyTorch's argument checks; the
products are ``ember.ops.linear``."""
from ...ops._dispatch import device_mismatch
from ...ops.matmul import _cpp_name
from ...ops import linear as _ops
from ...amp import autocast_mode as _autocast

__all__ = ["linear", "bilinear"]


def linear(input, weight, bias=None):
    """``input @ weight.T + bias``."""
    if _autocast.active and _autocast.enabled_for(input, "linear"):
        return _autocast.run(linear, "linear", input, weight, bias)
    if input.ndim == 0 or weight.ndim == 0:
        raise RuntimeError(f"both arguments to linear need to be at least 1D, but they are "
                           f"{input.ndim}D and {weight.ndim}D")
    for other in (weight, bias):
        if other is not None and other._device is not input._device:
            raise device_mismatch(input, other)
    # dtypes and shapes are checked by the kernel PyTorch's path reaches (addmm, mm, mv or
    # dot), whose messages differ
    return _ops.linear(input, weight, bias)


def bilinear(input1, input2, weight, bias=None):
    """``y[..., o] = input1[..., i] * weight[o, i, j] * input2[..., j] + bias[o]``."""
    if _autocast.active and _autocast.enabled_for(input1, "bilinear"):
        return _autocast.run(bilinear, "bilinear", input1, input2, weight, bias)
    _check_bilinear(input1, input2, weight, bias)
    batch = input1.shape[:-1]
    in1, in2 = input1.shape[-1], input2.shape[-1]
    out = _ops.trilinear(input1.reshape(-1, in1), weight, input2.reshape(-1, in2))
    out = out.reshape(*batch, weight.shape[0])
    return out if bias is None else out + bias


def _check_bilinear(input1, input2, weight, bias):
    """PyTorch's checks in its order. Sizes are read with ``size()``, so a tensor with too few
    dimensions is PyTorch's IndexError (the weight's size is read first, as PyTorch does)."""
    named = [("input1", input1), ("input2", input2), ("weight", weight)]
    if bias is not None:
        named.append(("bias", bias))
    if any(t._dtype is not input1._dtype for _, t in named):
        raise RuntimeError("All tensors must have the same dtype, got " + ", ".join(
            f"{name}: {_cpp_name(t._dtype)}" for name, t in named))
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and "
                           f"{input2.ndim}")
    for i in range(input1.ndim - 1):
        if input1.shape[i] != input2.shape[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: "
                               f"got {input1.shape[i]} and {input2.shape[i]}")
    for name, features, dim in (("input1", input1, 1), ("input2", input2, 2)):
        expected = weight.size(dim)
        if features.size(-1) != expected:
            raise RuntimeError(f"bilinear(): {name} size does not match weight size: got "
                               f"{features.size(-1)} but expected {expected}")
    if bias is not None and bias.size(0) != weight.size(0):
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                           f"{bias.size(0)} but expected {weight.size(0)}")
    if weight.ndim != 3:  # (PyTorch's _trilinear, unsqueezing the weight to input1's rank + 2)
        raise RuntimeError("number of dimensions must match")
