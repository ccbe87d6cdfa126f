"""``linear`` and ``bilinear``.

``linear`` records the graph PyTorch records: ``addmm(bias, input, weight.t())`` for a matrix
input (``mm`` without a bias), other ranks flattened to a matrix by a view and viewed back.
``weight.t()`` is a view, so the product still reaches BLAS without a transposed copy.
"""
from ...ops._dispatch import needs_grad, record, _wrap, device_mismatch, CompositeBackward, \
    record_composite
from ...ops.matmul import _cpp_name, addmm
from ...ops.shape import UnsafeViewBackward0, SqueezeBackward4

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
    weight_t = weight.t()
    if input.ndim == 2:
        return input.mm(weight_t) if bias is None else addmm(bias, input, weight_t)
    out_shape = tuple(input.shape[:-1]) + (weight.shape[0],)
    if bias is not None:
        if input.is_contiguous():
            return addmm(bias, input.reshape(-1, weight.shape[1]), weight_t).view(out_shape)
        # PyTorch's non-contiguous input: matmul (a copy folded into mm), then the bias added
        return linear(input, weight) + bias
    if input.ndim == 1:
        return _result_view(input.unsqueeze(0).mm(weight_t), out_shape, SqueezeBackward4)
    return _result_view(input.reshape(-1, weight.shape[1]).mm(weight_t), out_shape,
                        UnsafeViewBackward0)


def _result_view(product, shape, node):
    """``product`` (a fresh result) reshaped, under the node PyTorch's matmul records for it."""
    res = _wrap(product._data.reshape(shape), product._dtype, product)
    if needs_grad(product):
        record(node, (product,), res, in_shape=product._data.shape)
    return res


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
    x1 = input1.reshape(-1, in1)
    x2 = input2.reshape(-1, in2)

    def trilinear(x1, weight, x2):
        # One matrix product contracts i; the j contraction is a row-wise dot with input2.
        left = x1.matmul(weight.permute(1, 0, 2).reshape(in1, out_features * in2))
        # (summed in the operands' dtype: PyTorch's integer bilinear stays in that dtype)
        return (left.reshape(-1, out_features, in2) * x2.unsqueeze(1)).sum(-1, dtype=left.dtype)
    out = record_composite(TrilinearBackward0, (x1, weight, x2), trilinear)
    out = out.reshape(*batch, out_features)
    return out if bias is None else out + bias


class TrilinearBackward0(CompositeBackward):
    __slots__ = ()
