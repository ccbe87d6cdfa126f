"""``ember.linalg``: torch.linalg's functions. The ops live in ``ember/ops/linalg.py``
(with their backward formulas); this module only gives them their ``linalg`` names."""
from .ops import linalg as _linalg_ops
from .ops.matmul import matmul  # noqa: F401
from .amp import autocast_mode as _autocast

LinAlgError = _linalg_ops.LinAlgError

for _name in _linalg_ops.LINALG:
    if _name in ("matmul", "LinAlgError"):
        continue
    globals()[_name] = _linalg_ops.LINALG_OVERRIDES.get(_name) or getattr(_linalg_ops, _name)
del _name

__all__ = list(_linalg_ops.LINALG)

__all__ += ["cond", "tensorinv", "tensorsolve", "householder_product"]


def householder_product(A, tau):
    """The first columns of the product of Householder reflectors (LAPACK's orgqr)."""
    if _autocast.active and _autocast.enabled_for(A, "linalg_householder_product"):
        return _autocast.run(householder_product, "linalg_householder_product", A, tau)
    return _linalg_ops.orgqr(A, tau)


def cond(A, p=None):
    """The condition number of ``A`` in the norm ``p`` (2 by default: the ratio of the extreme
    singular values)."""
    if _autocast.active and _autocast.enabled_for(A, "linalg_cond"):
        return _autocast.run(cond, "linalg_cond", A, p)
    if A.ndim < 2:
        raise RuntimeError("linalg.cond: The input tensor must have at least 2 dimensions.")
    if p in (None, 2, -2):
        singular = svdvals(A)  # noqa: F821 (bound from the ops table above)
        largest, smallest = singular[..., 0], singular[..., -1]
        return largest / smallest if p in (None, 2) else smallest / largest
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.cond(ord={p}): A must be batches of square matrices, but they "
                           f"are {A.shape[-2]} by {A.shape[-1]} matrices")
    return matrix_norm(A, p) * matrix_norm(inv(A), p)  # noqa: F821


def tensorinv(A, ind=2):
    """The inverse of ``A`` seen as a linear map from its last dims to its first ``ind`` dims."""
    if _autocast.active and _autocast.enabled_for(A, "linalg_tensorinv"):
        return _autocast.run(tensorinv, "linalg_tensorinv", A, ind)
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    out_shape, in_shape = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    rows, cols = _prod(out_shape), _prod(in_shape)
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    return inv(A.reshape(rows, cols)).reshape(in_shape + out_shape)  # noqa: F821


def tensorsolve(A, B, dims=None):
    """``X`` with ``tensordot(A, X, X.ndim) == B``."""
    if _autocast.active and _autocast.enabled_for(A, "linalg_tensorsolve"):
        return _autocast.run(tensorsolve, "linalg_tensorsolve", A, B, dims)
    if dims is not None:
        dims = [d % A.ndim for d in dims]
        A = A.permute([d for d in range(A.ndim) if d not in dims] + dims)
    result_shape = tuple(A.shape[B.ndim:])
    rows, cols = B.numel(), _prod(result_shape)
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement "
                           f"prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim]), but "
                           f"got {cols} != {rows}")
    return solve(A.reshape(rows, cols), B.reshape(rows)).reshape(result_shape)  # noqa: F821


def _prod(shape):
    total = 1
    for n in shape:
        total *= n
    return total

