"""Distances between vectors: ``pairwise_distance``, ``cosine_similarity`` and ``pdist``, each
composed as PyTorch's C++ composes it, under PyTorch's node where its kernel records one.

``torch.<name>`` and ``torch.nn.functional.<name>`` are these same functions
(``ops/cumulative.py`` exports them; ``nn/functional/_distance.py`` names them).
"""
from .. import _dtype as dt
from ..autograd.grad_mode import no_grad
from ._dispatch import _wrap, CompositeBackward, record_composite, dtype_name
from .elementwise import add_scalar, broadcast_error
from .linalg import vector_norm
from .shape import broadcast_shapes
from ..amp import autocast_mode as _autocast

__all__ = []


class NormBackward1(CompositeBackward):
    """PyTorch's ``norm.ScalarOpt_dim`` node, which its C++ pairwise_distance records."""
    __slots__ = ()


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The ``p``-norm of ``x1 - x2 + eps`` over the last dimension (``eps`` keeps the norm's
    gradient finite when the vectors are equal)."""
    dim = max(x1.ndim, x2.ndim) - 1
    if dim < 0:
        return (x1 - x2 + eps).abs()
    shifted = add_scalar(x1 - x2, eps)
    return record_composite(NormBackward1, (shifted,),
                            lambda x: x.norm(p, dim, keepdim=keepdim))


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """PyTorch's composite, op for op: integer operands converted, both expanded to a common
    shape (unless already equal), each scaled to unit length before the dot product (which
    keeps the result within [-1, 1] in floating point)."""
    if _autocast.active and _autocast.enabled_for(x1, "cosine_similarity"):
        return _autocast.run(cosine_similarity, "cosine_similarity", x1, x2, dim, eps)
    common = dt.result_type(x1, x2)
    if common._kind != 2:
        raise RuntimeError("expected common dtype to be floating point, yet common dtype is "
                           f"{dtype_name(common)}")
    if not eps >= 0:
        raise RuntimeError(f"eps must be non-negative, got: {eps:g}")
    if x1._dtype._kind < 2:
        x1 = x1.to(common)
    if x2._dtype._kind < 2:
        x2 = x2.to(common)
    if x1.shape != x2.shape:
        shape1, shape2 = tuple(x1.shape), tuple(x2.shape)
        error = broadcast_error(shape1, shape2)
        if error is not None:
            raise error
        shape = broadcast_shapes(shape1, shape2)
        x1, x2 = x1.expand(shape), x2.expand(shape)
    # A norm below eps is taken as eps, clamped in place on a copy without a record: the
    # gradient flows to the norm as if unclamped, as in PyTorch.
    norm1 = vector_norm(x1, 2, dim, keepdim=True).clone()
    norm2 = vector_norm(x2, 2, dim, keepdim=True).clone()
    with no_grad():
        norm1.clamp_min_(eps)
        norm2.clamp_min_(eps)
    return ((x1 / norm1) * (x2 / norm2)).sum(dim)


class PdistBackward0(CompositeBackward):
    __slots__ = ()


def pdist(input, p=2):
    """Distances between every pair of rows ``i < j`` of a 2-D input, in row-major order.
    In PyTorch ``nn.functional.pdist`` is ``torch.pdist``, so the checks are ``torch.pdist``'s."""
    if _autocast.active and _autocast.enabled_for(input, "pdist"):
        return _autocast.run(pdist, "pdist", input, p)
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if input._dtype._kind != 2:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if not p >= 0:
        raise RuntimeError("pdist only supports non-negative p values")
    rows = input.shape[0]
    # PyTorch's kernel handles only float and double, and is not reached when there is no pair
    # or the rows are empty (the result is then empty, or zeros).
    if rows > 1 and input.shape[1] > 0 and input._dtype not in (dt.float32, dt.float64):
        raise NotImplementedError(f"\"pdist\" not implemented for '{dtype_name(input._dtype)}'")
    if not input.is_contiguous():  # PyTorch's kernel reads a contiguous copy (CloneBackward0)
        input = input.contiguous()
    first, second = input._backend.xp.triu_indices(rows, 1)
    first = _wrap(first.astype(dt.int64.np), dt.int64, input)
    second = _wrap(second.astype(dt.int64.np), dt.int64, input)
    return record_composite(
        PdistBackward0, (input,),
        lambda input: (input.index_select(0, first) - input.index_select(0, second)).norm(p, 1))
