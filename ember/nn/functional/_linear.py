"""``linear`` and ``bilinear``, as ``torch.nn.functional``: PyTorch's argument checks; the
products are ``ember.ops.linear``."""
from ...ops._dispatch import device_mismatch
from ...ops.matmul import _cpp_name
from ...ops import linear as _ops

__all__ = ["linear", "bilinear"]


def _check_linear(input, weight, bias):
    for other in (weight, bias):
        if other is not None and other._device is not input._device:
            raise device_mismatch(input, other)
    if input._dtype is not weight._dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_cpp_name(input._dtype)} != {_cpp_name(weight._dtype)}")
    if input.ndim == 0 or weight.ndim != 2 or input.shape[-1] != weight.shape[1]:
        cols = input.shape[-1] if input.ndim else 1
        rows = input.numel() // cols if cols else 0
        w_rows, w_cols = weight.shape[-1], (weight.shape[0] if weight.ndim == 2 else 1)
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{cols} and "
                           f"{w_rows}x{w_cols})")


def linear(input, weight, bias=None):
    """``input @ weight.T + bias``."""
    _check_linear(input, weight, bias)
    return _ops.linear(input, weight, bias)


def bilinear(input1, input2, weight, bias=None):
    """``y[..., o] = input1[..., i] * weight[o, i, j] * input2[..., j] + bias[o]``."""
    out_features, in1, in2 = weight.shape
    if input1.shape[-1] != in1:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {in1}")
    if input2.shape[-1] != in2:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {in2}")
    for i, (a, b) in enumerate(zip(input1.shape[:-1], input2.shape[:-1])):
        if a != b:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: "
                               f"got {a} and {b}")
    batch = input1.shape[:-1]
    out = _ops.trilinear(input1.reshape(-1, in1), weight, input2.reshape(-1, in2))
    out = out.reshape(*batch, out_features)
    return out if bias is None else out + bias
