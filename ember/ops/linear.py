"""The products under ``nn.functional.linear`` and ``bilinear``.

``linear`` records the graph PyTorch records: ``addmm(bias, input, weight.t())`` for a matrix
input (``mm`` without a bias), other ranks flattened to a matrix by a view and viewed back.
``weight.t()`` is a view, so the product still reaches BLAS without a transposed copy.
``trilinear`` is the bilinear form on matrices, one composite under PyTorch's
``TrilinearBackward0``. Argument checking is ``nn.functional``'s (``functional/_linear.py``).
"""
from ._dispatch import needs_grad, record, _wrap, CompositeBackward, record_composite
from .matmul import addmm
from .shape import UnsafeViewBackward0, SqueezeBackward4

__all__ = []


def linear(input, weight, bias=None):
    """``input @ weight.T + bias`` on checked operands."""
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


class TrilinearBackward0(CompositeBackward):
    __slots__ = ()


def trilinear(x1, weight, x2):
    """``y[n, o] = x1[n, i] * weight[o, i, j] * x2[n, j]`` for matrices ``x1``, ``x2``."""
    return record_composite(TrilinearBackward0, (x1, weight, x2), _trilinear)


def _trilinear(x1, weight, x2):
    out_features, in1, in2 = weight.shape
    # One matrix product contracts i; the j contraction is a row-wise dot with x2.
    left = x1.matmul(weight.permute(1, 0, 2).reshape(in1, out_features * in2))
    # (summed in the operands' dtype: PyTorch's integer bilinear stays in that dtype)
    return (left.reshape(-1, out_features, in2) * x2.unsqueeze(1)).sum(-1, dtype=left.dtype)
