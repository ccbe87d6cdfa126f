"""The products under ``nn.functional.linear`` and ``bilinear``.

``linear`` takes PyTorch's path and so records its graph: ``addmm(bias, input, weight.t())``
for a matrix input with a bias, and for any other contiguous input with a vector bias (flattened
to a matrix, the result viewed back); otherwise ``matmul(input, weight.t())``, then the bias
added. ``weight.t()`` is a view, so the product still reaches BLAS without a transposed copy.
``trilinear`` is the bilinear form on matrices, one composite under PyTorch's
``TrilinearBackward0``. Argument checking is the kernels' own, and ``nn.functional``'s
(``functional/_linear.py``).
"""
import math

from ._dispatch import record_composite, CompositeBackward
from .matmul import addmm

__all__ = []


def linear(input, weight, bias=None):
    """``input @ weight.T + bias`` on operands of at least one dimension."""
    weight_t = weight.t()
    if bias is not None and input.ndim == 2:
        return addmm(bias, input, weight_t)
    if bias is not None and _fusable(bias) and input.is_contiguous():
        batch = tuple(input.shape[:-1])
        # (the row count is spelled out: -1 is ambiguous for an input with no features)
        product = addmm(bias, input.reshape(math.prod(batch), input.shape[-1]), weight_t)
        return product.view(batch + (product.shape[-1],))
    out = input.matmul(weight_t)
    return out if bias is None else out + bias


def _fusable(bias):
    """PyTorch's test for a bias ``addmm`` can take on a flattened input: contiguous, and 1-D
    once squeezed (whether or not it then broadcasts against the rows)."""
    return bias.is_contiguous() and (bias.ndim == 1 or sum(s != 1 for s in bias.shape) == 1)


class TrilinearBackward0(CompositeBackward):
    __slots__ = ()


def trilinear(x1, weight, x2):
    """``y[n, o] = x1[n, i] * weight[o, i, j] * x2[n, j]`` for matrices ``x1``, ``x2``."""
    return record_composite(TrilinearBackward0, (x1, weight, x2), _trilinear)


def _trilinear(x1, weight, x2):
    out_features, in1, in2 = weight.shape
    # One matrix product contracts i, a batched one contracts j with each row of x2.
    left = x1.matmul(weight.permute(1, 0, 2).reshape(in1, out_features * in2))
    # A product too, as PyTorch's bmm: half precision rounds once per output, not per term, and
    # an integer bilinear stays in its dtype.
    return left.reshape(x1.shape[0], out_features, in2).matmul(x2.unsqueeze(-1)).squeeze(-1)
