"""Matrix decompositions, solvers, determinants and matrix norms: ``torch.linalg`` and the
top-level and ``Tensor`` spellings of the same ops (``inverse``, ``det``, ``svd``...), LAPACK's
compact QR (``geqrf``, ``orgqr``, ``ormqr``) and ``dist``, ``renorm``, ``trace``.

Each forward is one batched call of the backend's ``xp.linalg`` (NumPy's gufuncs take stacks of
matrices, so there is no loop over batch entries). Backward formulas are written in Ember ops,
so they can be differentiated again. Several gradients are undefined at degenerate inputs, as in
PyTorch: ``svd`` (and ``svdvals`` through it) with repeated singular values and, when ``U`` or
``Vh`` are used, with zero singular values of a non-square matrix; ``eigh`` with repeated
eigenvalues; ``cholesky`` off the positive-definite cone; ``qr`` with a rank-deficient input;
``inv``, ``solve``, ``slogdet`` at singular matrices. ``det`` at a singular matrix does have a
gradient (the adjugate), which is computed through the SVD there; PyTorch 2.13's CPU kernel
returns zeros when the determinant is exactly 0 (and fails its own gradcheck there), so Ember
differs from it at exactly singular inputs and agrees everywhere else.

NumPy has no LU factorisation: ``lu_factor``/``lu``/``lu_solve`` run LAPACK's unblocked
algorithm as a loop over the columns, each step one vectorised update of the whole batch.

The ops are written for real floating-point inputs: a complex input passes through NumPy's
forward where it is defined, but its gradient is refused (the formulas use transposes, not
conjugate transposes), and ``linalg.eig``/``eigvals`` are not provided. float16/bfloat16 are
refused with PyTorch's CPU errors, except where PyTorch's CPU kernels accept them
(``matrix_exp``, ``matrix_power``, ``cross``, ``multi_dot``, ``vecdot``, the fro/1/inf norms).
"""
import functools
import math
import operator
import warnings

import numpy as np  # constants (finfo, Padé coefficients) only; array maths goes through xp

from .matmul import _broadcast_batch as _matmul_batch
from .. import _dtype as dt
from .. import return_types
from .._memory_format import contiguous_format as _contiguous
from ..autograd import grad_mode
from ._dispatch import CompositeBackward, record_composite
from ._dispatch import (Tensor, Node, needs_grad, record, record_multi, _wrap, device_mismatch,
                        dtype_name, wrap_dim, wrap_dim_no_scalar)
from .matmul import matmul, vdot
from .elementwise import _conj, where
from .shape import cat
from .reduce import norm as _p_norm, _quiet
from ..amp import autocast_mode as _autocast

__all__ = ["inverse", "det", "logdet", "slogdet", "cholesky", "cholesky_solve",
           "cholesky_inverse", "qr", "svd", "pinverse", "matrix_power", "matrix_exp",
           "triangular_solve", "cross", "chain_matmul", "lu", "lu_unpack", "lu_solve",
           "norm_except_dim", "dist", "renorm", "trace", "geqrf", "orgqr", "ormqr"]

METHODS = ["inverse", "det", "logdet", "slogdet", "cholesky", "cholesky_solve",
           "cholesky_inverse", "qr", "svd", "pinverse", "matrix_power", "matrix_exp",
           "triangular_solve", "cross", "lu", "lu_solve", "dist", "renorm", "trace",
           "geqrf", "orgqr", "ormqr"]
INPLACE = ["renorm"]

# The ``ember.linalg`` functions (bound there by ``ember/linalg.py``).
LINALG = ["norm", "vector_norm", "matrix_norm", "inv", "inv_ex", "solve", "solve_ex", "det",
          "slogdet", "cholesky", "cholesky_ex", "qr", "svd", "svdvals", "eigh", "eigvalsh",
          "pinv", "lstsq", "matrix_power", "matrix_rank", "cross", "multi_dot", "vecdot",
          "matrix_exp", "solve_triangular", "diagonal", "matmul", "vander", "lu_factor",
          "lu_factor_ex", "lu", "lu_solve", "eig", "eigvals", "LinAlgError"]

_LOW = (dt.float16, dt.bfloat16)


class LinAlgError(RuntimeError):
    """Raised when a decomposition or solver fails on its input (a singular matrix, a matrix
    that is not positive-definite...), as ``torch.linalg.LinAlgError``."""


# ---------------------------------------------------------------------------------------------
# Named results, like torch.return_types.linalg_*
# ---------------------------------------------------------------------------------------------

def _from_fields(result_cls):
    """Builds ``result_cls`` from its fields given one by one (the class itself takes one
    sequence, as torch's does)."""
    return lambda *fields: result_cls(fields)


def _fills_named_out(out_cls):
    """``out=`` for an op with a named result, as torch's: ``out`` is a tuple of tensors, one
    per field, each of the field's dtype (resized to its shape, with torch's warning when it
    held elements), and the op returns them as ``out_cls`` (``return_types.<name>_out``)."""
    def decorate(fn):
        name = out_cls.__name__[:-len("_out")]

        @functools.wraps(fn)
        def op(*args, out=None, **kwargs):
            if out is None:
                return fn(*args, **kwargs)
            if not isinstance(out, (tuple, list)):
                raise TypeError(f"{name}(): argument 'out' must be tuple of Tensors, not "
                                f"{type(out).__name__}")
            if len(out) != len(out_cls._fields):
                raise TypeError(f"expected tuple of {len(out_cls._fields)} elements but got "
                                f"{len(out)}")
            tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)]
            if grad_mode.is_grad_enabled() and any(t.requires_grad for t in tensors):
                raise RuntimeError(f"{name}(): functions with out=... arguments don't support "
                                   "automatic differentiation, but one of the arguments "
                                   "requires grad.")
            result = fn(*args, **kwargs)
            for field, target in zip(result, out):
                if target.dtype is not field.dtype:
                    raise RuntimeError(f"Expected out tensor to have dtype "
                                       f"{dtype_name(field.dtype).lower()}, but got "
                                       f"{dtype_name(target.dtype).lower()} instead")
            written = []
            for field, target in zip(result, out):
                if target.shape != field.shape:
                    if target.numel():
                        warnings.warn(
                            f"An output with one or more elements was resized since it had "
                            f"shape {list(target.shape)}, which does not match the required "
                            f"output shape {list(field.shape)}. This behavior is deprecated, "
                            "and in a future PyTorch release outputs will not be resized unless "
                            "they have zero elements. You can explicitly reuse an out tensor t "
                            "by resizing it, inplace, to zero elements with t.resize_(0).",
                            UserWarning, stacklevel=2)
                    target.resize_(0)
                written.append(_finish_out(field, target))
            return out_cls(written)
        return op
    return decorate


_slogdet_result = _from_fields(return_types.linalg_slogdet)
_torch_slogdet_result = _from_fields(return_types.slogdet)
_qr_result = _from_fields(return_types.linalg_qr)
_torch_qr_result = _from_fields(return_types.qr)
_svd_result = _from_fields(return_types.linalg_svd)
_torch_svd_result = _from_fields(return_types.svd)
_eigh_result = _from_fields(return_types.linalg_eigh)
_eig_result = _from_fields(return_types.linalg_eig)
_lstsq_result = _from_fields(return_types.linalg_lstsq)
_inv_ex_result = _from_fields(return_types.linalg_inv_ex)
_solve_ex_result = _from_fields(return_types.linalg_solve_ex)
_cholesky_ex_result = _from_fields(return_types.linalg_cholesky_ex)
_triangular_solve_result = _from_fields(return_types.triangular_solve)
_lu_factor_result = _from_fields(return_types.linalg_lu_factor)
_lu_factor_ex_result = _from_fields(return_types.linalg_lu_factor_ex)
_lu_result = _from_fields(return_types.linalg_lu)
_lu_unpack_result = _from_fields(return_types.lu_unpack)


# ---------------------------------------------------------------------------------------------
# Argument checks, shared by the ops
# ---------------------------------------------------------------------------------------------

def _kernel_error(kernel, dtype):
    return NotImplementedError(f"\"{kernel}\" not implemented for '{dtype_name(dtype)}'")


def _check_matrix(A, name, *, square=True, low=None, arg="A", kernel=None):
    """PyTorch's checks on a (batch of) matrix input. ``low`` says how float16/bfloat16 are
    refused: "message" (linalg's own error) or a CPU kernel's name (its dispatch error); None
    accepts them. ``kernel`` names the kernel whose dispatch error refuses integer inputs (where
    PyTorch reaches the kernel before checking the dtype)."""
    if not isinstance(A, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' must be Tensor, not {type(A).__name__}")
    if A._dtype._kind < 2:
        if kernel is not None:
            raise _kernel_error(kernel, A._dtype)
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. "
                           f"Got {dtype_name(A._dtype)}")
    if A._dtype in _LOW and low == "message":
        raise RuntimeError(f"{name}: Low precision dtypes not supported. Got "
                           f"{dtype_name(A._dtype)}")
    _refuse_complex_grad(A, name)
    if A._data.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor {arg} must have at least 2 dimensions.")
    m, n = A._data.shape[-2:]
    if square and m != n:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are {m} by "
                           f"{n} matrices")
    # A kernel's dispatch error needs the kernel to run, which an empty input skips.
    if A._dtype in _LOW and low not in (None, "message") and A._data.size:
        raise _kernel_error(low, A._dtype)


def _refuse_complex_grad(A, name):
    # The backward formulas here are the real ones (transposes, not conjugate transposes).
    if A._dtype._kind == 3 and needs_grad(A):
        raise NotImplementedError(f"ember.{name}: gradients for complex inputs are not "
                                  "implemented")


def _check_same_device(a, b):
    if a._device is not b._device:
        raise device_mismatch(a, b)


def _batch_prefix(index, batch_shape):
    return f"(Batch element {index}): " if batch_shape else ""


def _first_failure(info):
    """(flat batch index, info value) of the first failing matrix."""
    flat = info.reshape(-1)
    index = int((flat != 0).nonzero()[0][0])
    return index, int(flat[index])


def _linalg_errors(xp):
    err = getattr(getattr(xp, "linalg", None), "LinAlgError", None)
    return err if err is not None else ()


def _lapack_array(t):
    """``t``'s array in a dtype LAPACK takes: half precision (which reaches a solver only when
    empty; PyTorch refuses it otherwise) is widened to float32."""
    return t._data.astype(np.float32) if t._dtype in _LOW else t._data


def _eye(like, n):
    xp = like._backend.xp
    return _wrap(xp.eye(n, dtype=like._dtype.np), like._dtype, like)


def _finish_out(res, out):
    if out is None:
        return res
    from .inplace import copy_into_out
    return copy_into_out(out, res)


def _as_int(n, fn, arg, position):
    if isinstance(n, bool) or not isinstance(n, int):
        if hasattr(n, "__index__") and not isinstance(n, bool):
            return operator.index(n)
        raise TypeError(f"{fn}(): argument '{arg}' (position {position}) must be int, not "
                        f"{type(n).__name__}")
    return n


# ---------------------------------------------------------------------------------------------
# Failure diagnostics: LAPACK's ``info`` for the matrices NumPy refused as a whole
# ---------------------------------------------------------------------------------------------

def _lu_info(xp, a):
    """getrf's ``info`` per matrix: the 1-based index of the first exactly-zero pivot of LU with
    partial pivoting, 0 when there is none. A loop over columns, vectorised over the batch; it
    only runs once NumPy has reported a singular matrix."""
    batch_shape, n = a.shape[:-2], a.shape[-1]
    work = a.reshape((-1, n, n)).astype(a.dtype, copy=True)
    rows = xp.arange(work.shape[0])
    info = xp.zeros(work.shape[0], dtype=xp.int32)
    for k in range(n):
        pivot_row = xp.argmax(xp.abs(work[:, k:, k]), axis=1) + k
        top = work[rows, k].copy()
        work[rows, k] = work[rows, pivot_row]
        work[rows, pivot_row] = top
        pivot = work[:, k, k]
        info = xp.where((pivot == 0) & (info == 0), k + 1, info).astype(xp.int32)
        factors = work[:, k + 1:, k] / xp.where(pivot == 0, 1, pivot)[:, None]
        work[:, k + 1:, k:] -= factors[:, :, None] * work[:, None, k, k:]
    return info.reshape(batch_shape)


def _cholesky_partial(xp, a):
    """potrf's result and ``info`` per matrix: columns are factored until the first leading
    minor that is not positive-definite; that minor's pivot is left in place, as LAPACK does."""
    batch_shape, n = a.shape[:-2], a.shape[-1]
    lower = xp.tril(a.reshape((-1, n, n))).astype(a.dtype, copy=True)
    info = xp.zeros(lower.shape[0], dtype=xp.int32)
    for j in range(n):
        active = info == 0
        d = lower[:, j, j] - (lower[:, j, :j] ** 2).sum(axis=-1)
        bad = active & ~(d > 0)
        info = xp.where(bad, j + 1, info).astype(xp.int32)
        ok = active & ~bad
        root = xp.sqrt(xp.where(ok, d, 1))
        lower[:, j, j] = xp.where(ok, root, xp.where(bad, d, lower[:, j, j]))
        below = (lower[:, j + 1:, j]
                 - (lower[:, j + 1:, :j] * lower[:, None, j, :j]).sum(axis=-1)) / root[:, None]
        lower[:, j + 1:, j] = xp.where(ok[:, None], below, lower[:, j + 1:, j])
    return lower.reshape(a.shape), info.reshape(batch_shape)


# ---------------------------------------------------------------------------------------------
# inv
# ---------------------------------------------------------------------------------------------

class LinalgInvExBackward0(Node):
    __slots__ = ()

    def backward(self, grad, *_):
        (inverse,) = self.saved_tensors
        inv_t = inverse.mT
        return -matmul(matmul(inv_t, grad), inv_t)

    def jvp(self, t):
        # d(A^-1) = -A^-1 dA A^-1
        (inverse,) = self.saved_tensors
        return -matmul(matmul(inverse, t), inverse)


def _inverse_with_info(A):
    xp = A._backend.xp
    a = A._data
    try:
        return xp.linalg.inv(a), None
    except _linalg_errors(xp):
        info = _lu_info(xp, a)
    # The invertible matrices still get their inverse; the others are NaN (PyTorch leaves
    # unspecified LU leftovers there).
    singular = (info != 0)[..., None, None]
    eye = xp.eye(a.shape[-1], dtype=a.dtype)
    data = xp.linalg.inv(xp.where(singular, eye, a))
    return xp.where(singular, xp.nan, data).astype(a.dtype), info


def _raise_singular_inverse(info, batch_shape, name="linalg.inv"):
    index, pivot = _first_failure(info)
    raise LinAlgError(f"{name}: {_batch_prefix(index, batch_shape)}The diagonal element {pivot} "
                      "is zero, the inversion could not be completed because the input matrix "
                      "is singular.")


def _inv(A, check_errors, name="linalg.inv"):
    data, info = _inverse_with_info(A)
    if info is not None and check_errors:
        _raise_singular_inverse(info, A._data.shape[:-2], name)
    res = _wrap(data, A._dtype, A)
    if needs_grad(A):
        record(LinalgInvExBackward0, (A,), res, save_out=True)
    return res, info


def inv(A, *, out=None):
    if _autocast.active and _autocast.enabled_for(A, "linalg_inv"):
        return _autocast.run(inv, "linalg_inv", A, out=out)
    _check_matrix(A, "linalg.inv", low="message")
    return _finish_out(_inv(A, True)[0], out)


@_fills_named_out(return_types.linalg_inv_ex_out)
def inv_ex(A, *, check_errors=False, out=None):
    if _autocast.active and _autocast.enabled_for(A, "linalg_inv_ex"):
        return _autocast.run(inv_ex, "linalg_inv_ex", A, check_errors=check_errors, out=out)
    _check_matrix(A, "linalg.inv", low="message")
    res, info = _inv(A, check_errors, "linalg.inv_ex")
    return _with_info(_inv_ex_result, res, info, A)


def _with_info(result_cls, res, info, like):
    xp = like._backend.xp
    if info is None:
        info = xp.zeros(like._data.shape[:-2], dtype=xp.int32)
    return result_cls(res, _wrap(xp.asarray(info, dtype=xp.int32), dt.int32, like))


def inverse(input, *, out=None):
    if _autocast.active and _autocast.enabled_for(input, "inverse"):
        return _autocast.run(inverse, "inverse", input, out=out)
    return inv(input, out=out)


# ---------------------------------------------------------------------------------------------
# det, slogdet, logdet
# ---------------------------------------------------------------------------------------------

class LinalgDetBackward0(Node):
    """d det(A) = det(A) tr(A^-1 dA), i.e. the cofactor matrix. Where some matrix is singular
    the cofactors come from the SVD (adj(A) = det(U Vh) V diag(prod_{j!=i} s_j) U^T), which is
    defined everywhere."""
    __slots__ = ()

    def backward(self, grad):
        A, det_ = self.saved_tensors
        scale = (grad * det_).unsqueeze(-1).unsqueeze(-1)
        if not bool((det_ == 0).any()):
            return scale * inv(A).mT
        U, S, Vh = _linalg_svd(A, full_matrices=False)
        ones = S[..., :1] * 0 + 1
        before = cat([ones, S[..., :-1]], -1).cumprod(-1)
        after = cat([S[..., 1:], ones], -1).flip(-1).cumprod(-1).flip(-1)
        orientation = (det(U.detach()) * det(Vh.detach())).unsqueeze(-1).unsqueeze(-1)
        cofactors = orientation * matmul(U * (before * after).unsqueeze(-2), Vh)
        return grad.unsqueeze(-1).unsqueeze(-1) * cofactors

    def jvp(self, t):
        # det(A) tr(A^-1 dA); a singular matrix has no A^-1: the cofactor route of the backward
        A, det_ = self.saved_tensors
        if bool((det_ == 0).any()):
            return NotImplemented
        return det_ * solve(A, t).diagonal(0, -2, -1).sum(-1)


def det(A, *, out=None):
    _check_matrix(A, "linalg.det", low="lu_cpu")
    xp = A._backend.xp
    res = _wrap(xp.asarray(xp.linalg.det(_lapack_array(A)), dtype=A._dtype.np), A._dtype, A)
    if needs_grad(A):
        record(LinalgDetBackward0, (A,), res, save=(A,), save_out=True)
    return _finish_out(res, out)


class LinalgSlogdetBackward0(Node):
    """Only ``logabsdet`` carries a gradient, A^-T; ``sign`` is piecewise constant."""
    __slots__ = ()

    def backward(self, grad_sign, grad_logabsdet):
        if grad_logabsdet is None:
            return None
        (A,) = self.saved_tensors
        return grad_logabsdet.unsqueeze(-1).unsqueeze(-1) * inv(A).mT

    def jvp(self, t):
        # logabsdet moves by tr(A^-1 dA) (real A); the sign is piecewise constant
        (A,) = self.saved_tensors
        if A._dtype._kind == 3:
            return NotImplemented
        return None, solve(A, t).diagonal(0, -2, -1).sum(-1)


def _slogdet(A, result_cls, name):
    _check_matrix(A, name, low="message")
    xp = A._backend.xp
    sign, logabs = xp.linalg.slogdet(A._data)
    outs = (_wrap(xp.asarray(sign, dtype=A._dtype.np), A._dtype, A),
            _wrap(xp.asarray(logabs, dtype=A._dtype.np), A._dtype, A))
    if needs_grad(A):
        record_multi(LinalgSlogdetBackward0, (A,), outs, save=(A,))
    return result_cls(*outs)


@_fills_named_out(return_types.linalg_slogdet_out)
def _linalg_slogdet(A, *, out=None):
    return _slogdet(A, _slogdet_result, "linalg.slogdet")


def slogdet(input):
    return _slogdet(input, _torch_slogdet_result, "linalg.slogdet")


def logdet(input):
    """log(det(A)): NaN for a negative determinant, -inf for a singular matrix."""
    _check_matrix(input, "logdet", low="message")
    sign, logabsdet = _slogdet(input, _torch_slogdet_result, "logdet")
    if sign._dtype._kind > 2:
        return logabsdet + sign.detach().log()
    # torch's composite: NaN where the determinant is negative (its log is -inf where it is 0).
    return where(sign == -1.0, math.nan, logabsdet)


# ---------------------------------------------------------------------------------------------
# solve
# ---------------------------------------------------------------------------------------------

class LinalgSolveExBackward0(Node):
    """X = A^-1 B: gB = A^-T gX, gA = -gB X^T (batch dims are summed by the engine)."""
    __slots__ = ()

    def backward(self, grad, *_):
        A, X = self.saved_tensors
        left = self.__dict__.get("left", True)
        if not left:  # X A = B is A^T X^T = B^T: the left formulas on the transposes
            A, grad, X = A.mT, grad.mT, X.mT
        if self.vector:
            grad, X = grad.unsqueeze(-1), X.unsqueeze(-1)
        gB = solve(A.mT, grad)
        gA = -matmul(gB, X.mT) if self._edges[0] is not None else None
        if self.vector:
            gB = gB.squeeze(-1)
        if not left:
            gA = gA.mT if gA is not None else None
            gB = gB.mT
        return gA, gB

    def jvp(self, tA, tB):
        # dX = A^-1 (dB - dA X); X A = B is A^T X^T = B^T
        A, X = self.saved_tensors
        left = self.__dict__.get("left", True)
        if not left:
            A, X = A.mT, X.mT
            tA, tB = (tA.mT if tA is not None else None), (tB.mT if tB is not None else None)
        if self.vector:
            X = X.unsqueeze(-1)
            tB = tB.unsqueeze(-1) if tB is not None else None
        rhs = -matmul(tA, X) if tA is not None else None
        if tB is not None:
            rhs = tB if rhs is None else rhs + tB
        dX = solve(A, rhs)
        if self.vector:
            dX = dX.squeeze(-1)
        return dX if left else dX.mT


def _solve_is_vector(A, B):
    return B._data.ndim == 1 or (B._data.ndim == A._data.ndim - 1
                                 and B._data.shape == A._data.shape[:-1])


def _solve(A, B, left, check_errors, name="linalg.solve"):
    _check_matrix(A, name, low="lu_cpu")
    if not isinstance(B, Tensor):
        raise TypeError(f"{name}(): argument 'B' (position 2) must be Tensor, not "
                        f"{type(B).__name__}")
    _check_same_device(A, B)
    if B._dtype._kind < 2:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. "
                           f"Got {dtype_name(B._dtype)}")
    if A._dtype is not B._dtype:
        raise RuntimeError(f"{name}: Expected A and B to have the same dtype, but found A of "
                           f"type {dtype_name(A._dtype)} and B of type {dtype_name(B._dtype)} "
                           "instead")
    vector = _solve_is_vector(A, B)
    n = A._data.shape[-1]
    if vector:  # B is a column: its length for AX = B, 1 for XA = B
        b_rows = B._data.shape[-1] if left else 1
    else:
        b_rows = B._data.shape[-2 if left else -1]
    if b_rows != n:
        shape_b = f"{B._data.shape[-1]}x1" if vector else "x".join(map(str, B._data.shape[-2:]))
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation {eq} "
                           f"({n}x{n} and {shape_b})")
    if vector and not left:
        raise RuntimeError(f"{name}: Vector broadcasting of the left hand side is not supported "
                           "for left=False. In this case linalg.solve is equivalent to "
                           "B / A.squeeze(-1)")
    if not left:
        # torch's kernel solves the transposed system itself and records one node over A, B.
        with grad_mode.no_grad():
            X, info = _solve(A.mT, B.mT, True, check_errors, name)
        res = _wrap(X._data.swapaxes(-1, -2), A._dtype, A)
        if needs_grad(A, B):
            record(LinalgSolveExBackward0, (A, B), res, save=(A,), save_out=True, vector=False,
                   left=False)
        return res, info
    xp = A._backend.xp
    b = _lapack_array(B)
    b = b[..., None] if vector else b
    _broadcast_batch(b.shape[:-2], A._data.shape[:-2])
    info = None
    try:
        data = xp.linalg.solve(_lapack_array(A), b)
    except _linalg_errors(xp):
        info = _lu_info(xp, A._data)
        batch = xp.broadcast_shapes(A._data.shape[:-2], b.shape[:-2])
        info = xp.broadcast_to(info, batch)
        if check_errors:
            index, _ = _first_failure(info)
            raise LinAlgError(f"ember.linalg.solve: {_batch_prefix(index, batch)}The solver "
                              "failed because the input matrix is singular.")
        singular = (info != 0)[..., None, None]
        eye = xp.eye(n, dtype=A._data.dtype)
        data = xp.linalg.solve(xp.where(singular, eye, A._data), b)
        data = xp.where(singular, xp.nan, data).astype(A._data.dtype)
    if vector:
        data = data[..., 0]
    res = _wrap(data.astype(A._dtype.np, copy=False), A._dtype, A)
    if needs_grad(A, B):
        record(LinalgSolveExBackward0, (A, B), res, save=(A,), save_out=True, vector=vector)
    return res, info


def _broadcast_batch(a_batch, b_batch):
    """The broadcast batch shape of two operands, with matmul's error (as a tuple)."""
    return tuple(_matmul_batch(a_batch, b_batch))


def solve(A, B, *, left=True, out=None):
    if _autocast.active and _autocast.enabled_for(A, "linalg_solve"):
        return _autocast.run(solve, "linalg_solve", A, B, left=left, out=out)
    return _finish_out(_solve(A, B, left, True)[0], out)


@_fills_named_out(return_types.linalg_solve_ex_out)
def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    res, info = _solve(A, B, left, check_errors)
    batch = res._data.shape[:-1] if _solve_is_vector(A, B) else res._data.shape[:-2]
    xp = A._backend.xp
    if info is None:
        info = xp.zeros(batch, dtype=xp.int32)
    return _solve_ex_result(res, _wrap(xp.asarray(info, dtype=xp.int32), dt.int32, A))


# ---------------------------------------------------------------------------------------------
# Triangular solves
# ---------------------------------------------------------------------------------------------

class LinalgSolveTriangularBackward0(Node):
    """X = A^-1 B with A triangular: gB = A^-T gX, gA = -gB X^T restricted to A's triangle."""
    __slots__ = ()

    def backward(self, grad):
        A, X = self.saved_tensors
        upper, unit = self.upper, self.unitriangular
        left = self.__dict__.get("left", True)
        if not left:  # X A = B is A^T X^T = B^T, with the other triangle of A^T
            A, grad, X, upper = A.mT, grad.mT, X.mT, not upper
        gB = solve_triangular(A.mT, grad, upper=not upper, unitriangular=unit)
        gA = None
        if self._edges[0] is not None:
            full = -matmul(gB, X.mT)
            offset = 1 if unit else 0
            gA = full.triu(offset) if upper else full.tril(-offset)
        if not left:
            gA = gA.mT if gA is not None else None
            gB = gB.mT
        return gA, gB

    def jvp(self, tA, tB):
        # dX = A^-1 (dB - dA X), dA read in A's triangle only (without a unit diagonal)
        A, X = self.saved_tensors
        upper, unit = self.upper, self.unitriangular
        left = self.__dict__.get("left", True)
        if not left:
            A, X, upper = A.mT, X.mT, not upper
            tA, tB = (tA.mT if tA is not None else None), (tB.mT if tB is not None else None)
        rhs = None
        if tA is not None:
            offset = 1 if unit else 0
            rhs = -matmul(tA.triu(offset) if upper else tA.tril(-offset), X)
        if tB is not None:
            rhs = tB if rhs is None else rhs + tB
        dX = solve_triangular(A, rhs, upper=upper, unitriangular=unit)
        return dX if left else dX.mT


def _triangle(xp, a, upper, unitriangular):
    tri = xp.triu(a) if upper else xp.tril(a)
    if unitriangular:
        n = a.shape[-1]
        eye = xp.eye(n, dtype=bool)
        tri = xp.where(eye, xp.ones((), dtype=a.dtype), tri)
    return tri


def _substitute(xp, tri, b, upper):
    """Back/forward substitution, one row at a time over the whole batch: trsm's semantics
    (inf/NaN, no error) for the singular triangles that LU refuses."""
    n = tri.shape[-1]
    shape = xp.broadcast_shapes(tri.shape[:-2], b.shape[:-2]) + b.shape[-2:]
    x = xp.zeros(shape, dtype=b.dtype)
    order = range(n - 1, -1, -1) if upper else range(n)
    for i in order:
        acc = b[..., i, :] - (tri[..., i, :, None] * x).sum(axis=-2)
        x[..., i, :] = acc / tri[..., i, i, None]
    return x


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    name = "linalg.solve_triangular"
    _check_matrix(A, name, low="triangular_solve_cpu", kernel="triangular_solve_cpu")
    if not isinstance(B, Tensor):
        raise TypeError(f"{name}(): argument 'B' must be Tensor, not {type(B).__name__}")
    _check_same_device(A, B)
    if B._data.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor B must have at least 2 dimensions.")
    if A._dtype is not B._dtype:
        raise RuntimeError(f"{name}: Expected A and B to have the same dtype, but found A of "
                           f"type {dtype_name(A._dtype)} and B of type {dtype_name(B._dtype)} "
                           "instead")
    n = A._data.shape[-1]
    if B._data.shape[-2 if left else -1] != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation {eq} "
                           f"({n}x{n} and {B._data.shape[-2]}x{B._data.shape[-1]})")
    if not left:
        # torch's kernel solves the transposed system itself and records one node over A, B.
        with grad_mode.no_grad():
            X = solve_triangular(A.mT, B.mT, upper=not upper, unitriangular=unitriangular)
        res = _wrap(X._data.swapaxes(-1, -2), A._dtype, A)
        if needs_grad(A, B):
            record(LinalgSolveTriangularBackward0, (A, B), res, save=(A,), save_out=True,
                   upper=upper, unitriangular=unitriangular, left=False)
        return _finish_out(res, out)
    _broadcast_batch(B._data.shape[:-2], A._data.shape[:-2])
    xp = A._backend.xp
    tri = _triangle(xp, A._data, upper, unitriangular)
    try:
        data = xp.linalg.solve(tri, B._data) if n else \
            xp.zeros(xp.broadcast_shapes(tri.shape[:-2], B._data.shape[:-2]) + B._data.shape[-2:],
                     dtype=B._data.dtype)
    except _linalg_errors(xp):
        data = _substitute(xp, tri, B._data, upper)
    res = _wrap(xp.asarray(data, dtype=A._dtype.np), A._dtype, A)
    if needs_grad(A, B):
        record(LinalgSolveTriangularBackward0, (A, B), res, save=(A,), save_out=True,
               upper=upper, unitriangular=unitriangular)
    return _finish_out(res, out)


@_fills_named_out(return_types.triangular_solve_out)
def triangular_solve(input, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """The deprecated ``torch.triangular_solve(b, A)``: solves op(A) X = b, op = transpose when
    asked, and returns a copy of A along."""
    if _autocast.active and _autocast.enabled_for(input, "triangular_solve"):
        return _autocast.run(triangular_solve, "triangular_solve", input, A, upper, transpose,
                             unitriangular, out=out)
    if input._data.ndim >= 2 and A._data.ndim >= 2 and \
            input._data.shape[-2] != A._data.shape[-1]:
        raise RuntimeError(f"Incompatible matrix sizes for triangular_solve: each A matrix is "
                           f"{A._data.shape[-2]} by {A._data.shape[-1]} but each b matrix is "
                           f"{input._data.shape[-2]} by {input._data.shape[-1]}")
    def composition(input, A):
        coefficient = A.mT if transpose else A
        X = solve_triangular(coefficient, input, upper=upper != bool(transpose),
                             unitriangular=unitriangular)
        return X, A.clone()
    return _triangular_solve_result(*record_composite(TriangularSolveBackward0, (input, A),
                                                      composition))


class TriangularSolveBackward0(CompositeBackward):
    __slots__ = ()


# ---------------------------------------------------------------------------------------------
# cholesky, cholesky_solve, cholesky_inverse
# ---------------------------------------------------------------------------------------------

class LinalgCholeskyExBackward0(Node):
    """A = L L^T: gA = sym(L^-T Phi(L^T tril(gL)) L^-1), Phi = lower triangle, halved diagonal."""
    __slots__ = ()

    def backward(self, grad, *_):
        (L,) = self.saved_tensors
        if self.__dict__.get("upper"):  # the node saved U = L^T and receives U's gradient
            L, grad = L.mT, grad.mT
        phi = matmul(L.mT, grad.tril()).tril()
        phi = phi - 0.5 * phi.diagonal(0, -2, -1).diag_embed()
        left = solve_triangular(L.mT, phi, upper=True)
        gA = solve_triangular(L, left, upper=False, left=False)
        return 0.5 * (gA + gA.mT)

    def jvp(self, t):
        # dL = L Phi(L^-1 dA L^-T), Phi the lower triangle with the diagonal halved (real A)
        (L,) = self.saved_tensors
        upper = self.__dict__.get("upper")
        if L._dtype._kind == 3:
            return NotImplemented
        if upper:
            L = L.mT
        left = solve_triangular(L, t, upper=False)
        inner = solve_triangular(L, left.mT, upper=False).mT
        phi = inner.tril() - 0.5 * inner.diagonal(0, -2, -1).diag_embed()
        dL = matmul(L, phi)
        return dL.mT if upper else dL


def _cholesky(A, upper, check_errors, name="linalg.cholesky"):
    _check_matrix(A, name, low="cholesky_cpu")
    xp = A._backend.xp
    a = _lapack_array(A)
    info = None
    try:
        data = xp.linalg.cholesky(a)
    except _linalg_errors(xp):
        data, info = _cholesky_partial(xp, a)
        if check_errors:
            index, order = _first_failure(info)
            raise LinAlgError(f"{name}: {_batch_prefix(index, a.shape[:-2])}The factorization "
                              "could not be completed because the input is not positive-definite "
                              f"(the leading minor of order {order} is not positive-definite).")
    if upper:  # PyTorch's kernel writes U itself: one node, no transpose node after it
        data = xp.ascontiguousarray(xp.swapaxes(data, -1, -2))
    res = _wrap(xp.asarray(data, dtype=A._dtype.np), A._dtype, A)
    if needs_grad(A):
        record(LinalgCholeskyExBackward0, (A,), res, save_out=True, upper=upper)
    return res, info


def _linalg_cholesky(A, *, upper=False, out=None):
    if _autocast.active and _autocast.enabled_for(A, "linalg_cholesky"):
        return _autocast.run(_linalg_cholesky, "linalg_cholesky", A, upper=upper, out=out)
    return _finish_out(_cholesky(A, upper, True)[0], out)


@_fills_named_out(return_types.linalg_cholesky_ex_out)
def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    if _autocast.active and _autocast.enabled_for(A, "linalg_cholesky_ex"):
        return _autocast.run(cholesky_ex, "linalg_cholesky_ex", A, upper=upper,
                             check_errors=check_errors, out=out)
    res, info = _cholesky(A, upper, check_errors, "linalg.cholesky_ex")
    return _with_info(_cholesky_ex_result, res, info, A)


def cholesky(input, upper=False, *, out=None):
    if _autocast.active and _autocast.enabled_for(input, "cholesky"):
        return _autocast.run(cholesky, "cholesky", input, upper, out=out)
    if input._dtype._kind < 2:  # the deprecated op has no integer kernel (linalg's checks dtype)
        raise NotImplementedError(f"\"cholesky_cpu\" not implemented for "
                                  f"'{dtype_name(input._dtype)}'")
    res = record_composite(CholeskyBackward0, (input,),
                           lambda A: _cholesky(A, upper, True, name="cholesky")[0])
    return _finish_out(res, out)


class CholeskyBackward0(CompositeBackward):
    __slots__ = ()


class CholeskyInverseBackward0(CompositeBackward):
    __slots__ = ()


class CholeskySolveBackward0(Node):
    """X = (L L^T)^-1 B, L read as a full matrix (PyTorch's formula): gB = (L L^T)^-1 gX,
    gL = -(gB X^T + X gB^T) L (or L (...) for an upper factor)."""
    __slots__ = ()

    def backward(self, grad):
        L, X = self.saved_tensors
        gB = cholesky_solve(grad, L, self.upper)
        gL = None
        if self._edges[1] is not None:
            common = matmul(gB, X.mT)
            common = common + common.mT
            gL = -(matmul(L, common) if self.upper else matmul(common, L))
        return gB, gL

    def jvp(self, tB, tL):
        # dX = K^-1 (dB - dK X), K = L L^T (or U^T U) with L read as the backward reads it
        L, X = self.saved_tensors
        rhs = tB
        if tL is not None:
            dK = matmul(tL.mT, L) if self.upper else matmul(tL, L.mT)
            term = -matmul(dK + dK.mT, X)
            rhs = term if rhs is None else rhs + term
        return cholesky_solve(rhs, L, self.upper)


def cholesky_solve(input, input2, upper=False, *, out=None):
    if _autocast.active and _autocast.enabled_for(input, "cholesky_solve"):
        return _autocast.run(cholesky_solve, "cholesky_solve", input, input2, upper, out=out)
    B, L = input, input2
    _check_same_device(B, L)
    if B._data.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {B._data.ndim} "
                           "dimensions instead")
    if L._data.ndim < 2:
        raise RuntimeError(f"u should have at least 2 dimensions, but has {L._data.ndim} "
                           "dimensions instead")
    if B._dtype is not L._dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{dtype_name(B._dtype)} and A of type {dtype_name(L._dtype)} instead.")
    if L._dtype._kind < 2 or L._dtype in _LOW:
        raise _kernel_error("cholesky_solve_cpu", L._dtype)
    n = L._data.shape[-1]
    if L._data.shape[-2] != n or B._data.shape[-2] != n:
        raise RuntimeError(f"Incompatible matrix sizes for cholesky_solve: each A matrix is "
                           f"{L._data.shape[-2]} by {n} but each b matrix is "
                           f"{B._data.shape[-2]} by {B._data.shape[-1]}")
    _broadcast_batch(B._data.shape[:-2], L._data.shape[:-2])
    xp = L._backend.xp
    tri = xp.triu(L._data) if upper else xp.tril(L._data)
    factor = xp.matmul(xp.swapaxes(tri, -1, -2), tri) if upper else \
        xp.matmul(tri, xp.swapaxes(tri, -1, -2))
    try:
        data = xp.linalg.solve(factor, B._data)
    except _linalg_errors(xp):
        first = _substitute(xp, xp.swapaxes(tri, -1, -2) if upper else tri, B._data, False)
        data = _substitute(xp, tri if upper else xp.swapaxes(tri, -1, -2), first, True)
    res = _wrap(xp.asarray(data, dtype=L._dtype.np), L._dtype, L)
    if needs_grad(B, L):
        record(CholeskySolveBackward0, (B, L), res, save=(L,), save_out=True, upper=upper)
    return _finish_out(res, out)


def cholesky_inverse(input, upper=False, *, out=None):
    if _autocast.active and _autocast.enabled_for(input, "cholesky_inverse"):
        return _autocast.run(cholesky_inverse, "cholesky_inverse", input, upper, out=out)
    L = input
    if L._dtype._kind < 2 or L._dtype in _LOW:
        raise _kernel_error("cholesky_inverse_out_cpu", L._dtype)
    if L._data.ndim < 2:
        raise RuntimeError("cholesky_inverse: The input tensor A must have at least 2 dimensions.")
    m, n = L._data.shape[-2:]
    if m != n:
        raise RuntimeError(f"cholesky_inverse: A must be batches of square matrices, but they "
                           f"are {m} by {n} matrices")
    eye = _eye(L, n).expand(L._data.shape)
    res = record_composite(CholeskyInverseBackward0, (L,), lambda L: cholesky_solve(eye, L, upper))
    return _finish_out(res, out)


# ---------------------------------------------------------------------------------------------
# LU with partial pivoting
# ---------------------------------------------------------------------------------------------

def _lu_arrays(xp, a):
    """getrf on every matrix of the batch: (packed LU, 1-based pivots, info). NumPy has no LU,
    so this is LAPACK's unblocked algorithm: a loop over the min(m, n) columns, each step one
    vectorised rank-1 update of the whole batch."""
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = a.shape[:-2]
    work = a.reshape((-1, m, n)).astype(a.dtype, copy=True)
    rows = xp.arange(work.shape[0])
    pivots = xp.zeros((work.shape[0], k), dtype=xp.int32)
    info = xp.zeros(work.shape[0], dtype=xp.int32)
    for j in range(k):
        pivot_row = xp.argmax(xp.abs(work[:, j:, j]), axis=1) + j
        pivots[:, j] = pivot_row + 1
        top = work[rows, j].copy()
        work[rows, j] = work[rows, pivot_row]
        work[rows, pivot_row] = top
        pivot = work[:, j, j]
        zero = pivot == 0
        info = xp.where(zero & (info == 0), j + 1, info).astype(xp.int32)
        factors = work[:, j + 1:, j] / xp.where(zero, 1, pivot)[:, None]
        work[:, j + 1:, j] = factors
        work[:, j + 1:, j + 1:] -= factors[:, :, None] * work[:, None, j, j + 1:]
    return (work.reshape(a.shape), pivots.reshape(batch + (k,)),
            info.reshape(batch))


def _permutation_arrays(xp, pivots, m, dtype):
    """The permutation matrices P (A = P L U) of 1-based LAPACK pivots."""
    batch, k = pivots.shape[:-1], pivots.shape[-1]
    flat = pivots.reshape((-1, k)).astype(xp.int64) - 1
    perm = xp.broadcast_to(xp.arange(m), (flat.shape[0], m)).copy()
    rows = xp.arange(flat.shape[0])
    for j in range(k):
        target = flat[:, j]
        current = perm[rows, j].copy()
        perm[rows, j] = perm[rows, target]
        perm[rows, target] = current
    # Row i of P^T A is row perm[i] of A, so P[perm[i], i] = 1.
    P = xp.zeros((flat.shape[0], m, m), dtype=dtype)
    P[rows[:, None], perm, xp.arange(m)[None, :]] = 1
    return P.reshape(batch + (m, m))


def _unpack_arrays(xp, lu, m, n):
    k = min(m, n)
    L = xp.tril(lu[..., :, :k], -1) + xp.eye(m, k, dtype=lu.dtype)
    U = xp.triu(lu[..., :k, :])
    return L, U


def _lu_square_grad(L, U, gL, gU):
    """gradient w.r.t. P^T A of the square LU: L^-T [tril(L^T gL, -1) + triu(gU U^T)] U^-T."""
    inner = 0
    if gL is not None:
        inner = matmul(L.mT, gL).tril(-1)
    if gU is not None:
        inner = inner + matmul(gU, U.mT).triu()
    left = solve_triangular(L.mT, inner, upper=True, unitriangular=True)
    return solve_triangular(U.mT, left, upper=False, left=False)


def _lu_grad(P, L, U, gL, gU):
    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    if m == n:
        g = _lu_square_grad(L, U, gL, gU)
    elif m < n:
        # A = P L [U1 | U2]: U2 = L^-1 P^T A2 adds to A2 and, through L, to the square part.
        U1, U2 = U[..., :, :k], U[..., :, k:]
        gU1 = gU2 = None
        if gU is not None:
            gU1, gU2 = gU[..., :, :k], gU[..., :, k:]
        gL_total = gL
        g2 = None
        if gU2 is not None:
            g2 = solve_triangular(L.mT, gU2, upper=True, unitriangular=True)
            extra = -matmul(g2, U2.mT)
            gL_total = extra if gL_total is None else gL_total + extra
        g1 = _lu_square_grad(L, U1, gL_total, gU1)
        g = cat([g1, g2 if g2 is not None else U2.detach() * 0], -1)
    else:
        # P^T A = [L1; L2] U: L2 = (P^T A)_2 U^-1 adds to the bottom rows and, through U, above.
        L1, L2 = L[..., :k, :], L[..., k:, :]
        gL1 = gL2 = None
        if gL is not None:
            gL1, gL2 = gL[..., :k, :], gL[..., k:, :]
        gU_total = gU
        g2 = None
        if gL2 is not None:
            g2 = solve_triangular(U.mT, gL2, upper=False, left=False)
            extra = -matmul(L2.mT, g2)
            gU_total = extra if gU_total is None else gU_total + extra
        g1 = _lu_square_grad(L1, U, gL1, gU_total)
        g = cat([g1, g2 if g2 is not None else L2.detach() * 0], -2)
    return matmul(P, g)


class LinalgLuBackward0(Node):
    __slots__ = ()

    def backward(self, gP, gL, gU):
        P, L, U = self.saved_tensors
        return _lu_grad(P.detach(), L, U, gL, gU)


class LinalgLuFactorExBackward0(Node):
    __slots__ = ()

    def backward(self, gLU, *_):
        (LU,) = self.saved_tensors
        xp = LU._backend.xp
        m, n = LU.shape[-2:]
        k = min(m, n)
        P = _wrap(_permutation_arrays(xp, self.pivots, m, LU._data.dtype), LU._dtype, LU)
        L = LU[..., :, :k].tril(-1) + _wrap(xp.eye(m, k, dtype=LU._data.dtype), LU._dtype, LU)
        U = LU[..., :k, :].triu()
        return _lu_grad(P, L, U, gLU[..., :, :k].tril(-1), gLU[..., :k, :].triu())


def _check_lu_input(A, name, pivot):
    if A._data.ndim < 2:
        raise RuntimeError(f"{name}: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(A._data.shape)} instead")
    if A._dtype._kind < 2 or (A._dtype in _LOW and A._data.size):
        raise _kernel_error("lu_cpu", A._dtype)
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")


def _lu_factor(A, pivot, name):
    _check_lu_input(A, name, pivot)
    xp = A._backend.xp
    lu, pivots, info = _lu_arrays(xp, _lapack_array(A))
    LU = _wrap(lu.astype(A._dtype.np, copy=False), A._dtype, A)
    if needs_grad(A):
        record(LinalgLuFactorExBackward0, (A,), LU, save_out=True, pivots=pivots)
    return (LU, _wrap(pivots, dt.int32, A), _wrap(info, dt.int32, A))


@_fills_named_out(return_types.linalg_lu_factor_ex_out)
def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    LU, pivots, info = _lu_factor(A, pivot, "ember.lu_factor")
    if check_errors and bool((info._data != 0).any()):
        _raise_lu_singular(info, "linalg.lu_factor_ex")
    return _lu_factor_ex_result(LU, pivots, info)


def _raise_lu_singular(info, name):
    index, value = _first_failure(info._data)
    prefix = _batch_prefix(index, info._data.shape)
    raise RuntimeError(f"ember.{name}: {prefix}U[{value},{value}] is zero and using it on "
                       "lu_solve would result in a division by zero. If you still want to "
                       "perform the factorization, consider calling linalg.lu(A, pivot) or "
                       "linalg.lu_factor_ex(A, pivot)")


@_fills_named_out(return_types.linalg_lu_factor_out)
def lu_factor(A, *, pivot=True, out=None):
    LU, pivots, info = _lu_factor(A, pivot, "ember.lu_factor")
    if bool((info._data != 0).any()):
        _raise_lu_singular(info, "linalg.lu_factor")
    return _lu_factor_result(LU, pivots)


@_fills_named_out(return_types.linalg_lu_out)
def _linalg_lu(A, *, pivot=True, out=None):
    _check_lu_input(A, "linalg.lu", pivot)
    xp = A._backend.xp
    a = _lapack_array(A)
    m, n = a.shape[-2:]
    lu, pivots, _ = _lu_arrays(xp, a)
    L, U = _unpack_arrays(xp, lu, m, n)
    P = _permutation_arrays(xp, pivots, m, a.dtype)
    outs = tuple(_wrap(x.astype(A._dtype.np, copy=False), A._dtype, A) for x in (P, L, U))
    if needs_grad(A):
        record_multi(LinalgLuBackward0, (A,), outs, save=outs)
        outs[0]._requires_grad = False
        outs[0].grad_fn = None
    return _lu_result(*outs)


@_fills_named_out(return_types.lu_unpack_out)
def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """P, L, U from a packed factorisation; L and U are differentiable functions of LU_data."""
    if LU_data._data.ndim < 2:
        raise RuntimeError("torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(LU_data._data.shape)} instead".replace("torch.", "ember."))
    xp = LU_data._backend.xp
    m, n = LU_data._data.shape[-2:]
    k = min(m, n)

    def empty():
        return _wrap(xp.zeros((0,), dtype=LU_data._data.dtype), LU_data._dtype, LU_data)
    P = empty()
    if not unpack_data:
        L, U = empty(), empty()
        if needs_grad(LU_data):  # PyTorch records its node even over the empty L and U
            record_multi(_NotUnpackedLuUnpackBackward, (LU_data,), (L, U))
    else:
        def composition(LU_data):
            return (LU_data[..., :, :k].tril(-1) + _eye_rect(LU_data, m, k),
                    LU_data[..., :k, :].triu())
        L, U = record_composite(LuUnpackBackward0, (LU_data,), composition)
    if unpack_pivots:
        P = _wrap(_permutation_arrays(xp, LU_pivots._data, m, LU_data._data.dtype),
                  LU_data._dtype, LU_data)
    return _lu_unpack_result(P, L, U)


class LuUnpackBackward0(CompositeBackward):
    __slots__ = ()


class _NotUnpackedLuUnpackBackward(Node):
    """PyTorch's ``LuUnpackBackward0`` over the empty L and U of ``unpack_data=False``: its
    formula takes ``triu``/``tril`` of their 1-D gradients, which refuse them."""
    __slots__ = ()

    def backward(self, grad_L, grad_U):
        op = "triu" if grad_U is not None else "tril"
        raise RuntimeError(f"{op}: input tensor must have at least 2 dimensions")


_NotUnpackedLuUnpackBackward.__name__ = "LuUnpackBackward0"
_NotUnpackedLuUnpackBackward.__qualname__ = "LuUnpackBackward0"


def _eye_rect(like, m, k):
    xp = like._backend.xp
    return _wrap(xp.eye(m, k, dtype=like._data.dtype), like._dtype, like)


def _lu_solve(LU, pivots, B, left=True, adjoint=False):
    name = "linalg.lu_solve"
    _check_same_device(LU, B)
    if B._data.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor B must have at least 2 dimensions.")
    n = LU._data.shape[-1]
    rows = B._data.shape[-2 if left else -1]
    if LU._data.shape[-2] != n:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{LU._data.shape[-2]} by {n} matrices")
    if rows != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation {eq} "
                           f"({n}x{n} and {B._data.shape[-2]}x{B._data.shape[-1]})")
    return record_composite(LinalgLuSolveBackward0, (LU, B),
                            lambda LU, B: _lu_solve_steps(LU, pivots, B, left, adjoint))


class LinalgLuSolveBackward0(CompositeBackward):
    __slots__ = ()


def _lu_solve_steps(LU, pivots, B, left, adjoint):
    """X from two triangular solves and the row permutation (torch runs one getrs kernel)."""
    if not left:
        # X A = B  <=>  A^T X^T = B^T (adjoint flips too).
        return _lu_solve_steps(LU, pivots, B.mT, True, not adjoint).mT
    n = LU._data.shape[-1]
    xp = LU._backend.xp
    P = _wrap(_permutation_arrays(xp, pivots._data, n, LU._data.dtype), LU._dtype, LU)
    if adjoint:
        # A^T = U^T L^T P^T: X = P L^-T U^-T B.
        y = solve_triangular(LU.mT, B, upper=False)
        y = solve_triangular(LU.mT, y, upper=True, unitriangular=True)
        return matmul(P, y)
    y = solve_triangular(LU, matmul(P.mT, B), upper=False, unitriangular=True)
    return solve_triangular(LU, y, upper=True)


def _linalg_lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    return _finish_out(_lu_solve(LU, pivots, B, left, adjoint), out)


def lu_solve(b, LU_data, LU_pivots, *, out=None):
    if _autocast.active and _autocast.enabled_for(b, "lu_solve"):
        return _autocast.run(lu_solve, "lu_solve", b, LU_data, LU_pivots, out=out)
    return _finish_out(_lu_solve(LU_data, LU_pivots, b), out)


def lu(A, pivot=True, get_infos=False, out=None):
    """The deprecated ``torch.lu``: (LU, pivots) or, with ``get_infos``, (LU, pivots, infos)."""
    LU, pivots, info = _lu_factor(A, pivot, "ember.lu_factor")
    if get_infos:
        return LU, pivots, info
    if bool((info._data != 0).any()):
        _raise_lu_singular(info, "lu_factor")
    return LU, pivots


# ---------------------------------------------------------------------------------------------
# qr
# ---------------------------------------------------------------------------------------------

def _copyltu(M):
    """The symmetric matrix whose lower triangle is M's."""
    return M.tril() + M.tril(-1).mT


def _qr_backward_square(Q, R, gQ, gR):
    """A = QR with A m x n, m >= n (Q m x n, R n x n): gA = (gQ + Q copyltu(M)) R^-T with
    M = R gR^T - gQ^T Q."""
    M = None
    if gR is not None:
        M = matmul(R, gR.mT)
    if gQ is not None:
        term = matmul(gQ.mT, Q)
        M = -term if M is None else M - term
    b = matmul(Q, _copyltu(M))
    if gQ is not None:
        b = b + gQ
    return solve_triangular(R.mT, b, upper=False, left=False)


class LinalgQrBackward0(Node):
    __slots__ = ()

    def backward(self, gQ, gR):
        if self.mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed "
                               "when mode='r'. Please use linalg.qr(A, mode='reduced') if you "
                               "are going to differentiate through linalg.qr.")
        Q, R = self.saved_tensors
        m, n = self.shape
        if self.mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' "
                               "and nrows > ncols.")
        if m >= n:
            return _qr_backward_square(Q, R, gQ, gR)
        # A = [X | Y] with X = Q U square: Y = Q V contributes gY = Q gV and Y gV^T to gQ.
        U = R[..., :, :m]
        gU = gV = None
        if gR is not None:
            gU, gV = gR[..., :, :m], gR[..., :, m:]
        A = matmul(Q, R)
        Y = A[..., :, m:]
        gQ_x = gQ
        if gV is not None:
            extra = matmul(Y, gV.mT)
            gQ_x = extra if gQ_x is None else gQ_x + extra
        gX = _qr_backward_square(Q, U, gQ_x, gU)
        gY = matmul(Q, gV) if gV is not None else Y.detach() * 0
        return cat([gX, gY], -1)

    def jvp(self, t):
        # real A, m >= n: with dX = Q^T dA R^-1 and dC = Q^T dQ its skew part built from the
        # strict lower triangle, dR = (dX - dC) R and dQ = dA R^-1 - Q (dX - dC)
        Q, R = self.saved_tensors
        m, n = self.shape
        if self.mode == "r" or Q._dtype._kind == 3 or m < n or (
                self.mode == "complete" and m > n):
            return NotImplemented  # the fallback (or the backward's error)
        t_Rinv = solve_triangular(R, t, upper=True, left=False)
        dX = matmul(Q.mT, t_Rinv)
        low = dX.tril(-1)
        upper = dX - (low - low.mT)
        return t_Rinv - matmul(Q, upper), matmul(upper, R)


def _qr(A, mode, result_cls):
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           "'reduced' (default), 'r', or 'complete'")
    _check_matrix(A, "linalg.qr", square=False, low="geqrf_cpu")
    xp = A._backend.xp
    a = A._data
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    if a.size == 0:
        k = min(m, n)
        q_cols = m if mode == "complete" else k
        q = xp.zeros(batch + (m, q_cols), dtype=a.dtype)
        if q_cols:
            q[...] = xp.eye(m, q_cols, dtype=a.dtype)
        r = xp.zeros(batch + ((m if mode == "complete" else k), n), dtype=a.dtype)
    elif mode == "r":
        r = xp.linalg.qr(a, mode="r")
        q = xp.zeros((0,), dtype=a.dtype)
    else:
        q, r = xp.linalg.qr(a, mode=mode)
    if mode == "r":
        q = xp.zeros((0,), dtype=a.dtype)
    outs = (_wrap(xp.asarray(q, dtype=a.dtype), A._dtype, A),
            _wrap(xp.asarray(r, dtype=a.dtype), A._dtype, A))
    if needs_grad(A):
        record_multi(LinalgQrBackward0, (A,), outs, save=outs, mode=mode, shape=(m, n))
    return result_cls(*outs)


@_fills_named_out(return_types.linalg_qr_out)
def _linalg_qr(A, mode="reduced", *, out=None):
    if _autocast.active and _autocast.enabled_for(A, "linalg_qr"):
        return _autocast.run(_linalg_qr, "linalg_qr", A, mode, out=out)
    return _qr(A, mode, _qr_result)


@_fills_named_out(return_types.qr_out)
def qr(input, some=True, *, out=None):
    if _autocast.active and _autocast.enabled_for(input, "qr"):
        return _autocast.run(qr, "qr", input, some, out=out)
    return _qr(input, "reduced" if some else "complete", _torch_qr_result)


# ---------------------------------------------------------------------------------------------
# geqrf, orgqr, ormqr: QR in LAPACK's compact Householder form
# ---------------------------------------------------------------------------------------------

class GeqrfBackward0(Node):
    __slots__ = ()

    def backward(self, *grads):
        raise NotImplementedError("the derivative for 'geqrf' is not implemented.")


def _check_lapack_dtype(name, d):
    if d._kind < 2 or d in (dt.float16, dt.bfloat16):
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{dtype_name(d)}'")


def geqrf(input, *, out=None):
    if _autocast.active and _autocast.enabled_for(input, "geqrf"):
        return _autocast.run(geqrf, "geqrf", input, out=out)
    if input._data.ndim < 2:
        raise RuntimeError("ember.geqrf: input must have at least 2 dimensions.")
    _check_lapack_dtype("geqrf", input._dtype)
    xp = input._backend.xp
    m, n = input._data.shape[-2:]
    batch = input._data.shape[:-2]
    if m == 0 or n == 0:
        h = xp.zeros(input._data.shape, dtype=input._dtype.np)
        tau = xp.zeros(batch + (0,), dtype=input._dtype.np)
    else:
        # NumPy's "raw" QR is LAPACK's geqrf, returned in Fortran (transposed) layout.
        raw, tau = xp.linalg.qr(input._data, mode="raw")
        h = xp.ascontiguousarray(xp.swapaxes(raw, -1, -2)).astype(input._dtype.np, copy=False)
        tau = tau.astype(input._dtype.np, copy=False)
    a_t, tau_t = _wrap(h, input._dtype, input), _wrap(tau, input._dtype, input)
    if needs_grad(input):
        record_multi(GeqrfBackward0, (input,), (a_t, tau_t))
    res = return_types.geqrf((a_t, tau_t))
    if out is not None:
        _finish_out(a_t, out[0])
        _finish_out(tau_t, out[1])
        return return_types.geqrf_out(out)
    return res


def _reflectors(input, tau):
    """(V, T^-1) with H_1 ... H_k = I - V T V^H: V the unit lower-trapezoidal reflector vectors
    stored below input's diagonal, T upper triangular, T^-1 = diag(1 / tau) + striu(V^H V).
    A reflector with tau = 0 is the identity: its vector is zeroed and its tau replaced by 1."""
    from .. import ops
    m = input._data.shape[-2]
    k = tau._data.shape[-1]
    cols = input[..., :, :k]
    eye = ops.eye(m, k, dtype=input._dtype, device=input._device)
    vectors = ops.tril(cols, -1) + eye
    identity = tau == 0
    vectors = ops.where(identity.unsqueeze(-2), ops.zeros_like(vectors), vectors)
    safe_tau = ops.where(identity, ops.ones_like(tau), tau)
    gram = ops.matmul(vectors.mH if vectors._dtype._kind == 3 else vectors.mT, vectors)
    t_inverse = ops.triu(gram, 1) + ops.diag_embed(1 / safe_tau)
    return vectors, t_inverse


def _apply_q(input, tau, other, left, adjoint):
    """op(Q) @ other (``left``) or other @ op(Q), op the conjugate transpose when ``adjoint``."""
    from .. import ops
    vectors, t_inverse = _reflectors(input, tau)
    vh = vectors.mH if vectors._dtype._kind == 3 else vectors.mT
    if left:
        # Q other = other - V T V^H other;  Q^H other = other - V T^H V^H other
        projected = ops.matmul(vh, other)
        solved = solve_triangular(t_inverse.mH if adjoint else t_inverse, projected,
                                         upper=not adjoint)
        return other - ops.matmul(vectors, solved)
    # other Q = other - (other V) T V^H;  other Q^H = other - (other V) T^H V^H
    projected = ops.matmul(other, vectors)
    solved = solve_triangular(t_inverse.mH if adjoint else t_inverse, projected,
                                     upper=not adjoint, left=False)
    return other - ops.matmul(solved, vh)


def _check_householder(name, input, tau):
    _check_same_device(input, tau)
    if input._data.ndim < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if tau._data.shape[:-1] != input._data.shape[:-2] or tau._data.ndim != input._data.ndim - 1:
        raise RuntimeError(f"{name}: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {list(tau._data.shape[:-1])}")
    if tau._dtype is not input._dtype:
        raise RuntimeError(f"{name}: tau dtype {dtype_name(tau._dtype)} does not match input "
                           f"dtype {dtype_name(input._dtype)}")
    _check_lapack_dtype("orgqr" if "householder" in name else "ormqr", input._dtype)


def orgqr(input, tau):
    """The first n columns of Q = H_1 ... H_k from geqrf's output (linalg.householder_product)."""
    if _autocast.active and _autocast.enabled_for(input, "orgqr"):
        return _autocast.run(orgqr, "orgqr", input, tau)
    name = "ember.linalg.householder_product"
    if input._data.ndim < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    m, n = input._data.shape[-2:]
    if m < n:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if n < tau._data.shape[-1]:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    _check_householder(name, input, tau)
    from .. import ops
    eye = ops.eye(m, n, dtype=input._dtype, device=input._device)
    eye = eye.expand(input._data.shape[:-2] + (m, n))
    return record_composite(LinalgHouseholderProductBackward0, (input, tau),
                            lambda input, tau: _apply_q(input, tau, eye, True, False))


class LinalgHouseholderProductBackward0(CompositeBackward):
    __slots__ = ()


class OrmqrBackward0(CompositeBackward):
    __slots__ = ()


def ormqr(input, tau, other, left=True, transpose=False, *, out=None):
    if _autocast.active and _autocast.enabled_for(input, "ormqr"):
        return _autocast.run(ormqr, "ormqr", input, tau, other, left, transpose, out=out)
    name = "ember.ormqr"
    if input._data.ndim < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if other._data.ndim < 2:
        raise RuntimeError(f"{name}: other must have at least 2 dimensions.")
    _check_same_device(input, other)
    m = input._data.shape[-2]
    side = -2 if left else -1
    if other._data.shape[side] != m:
        raise RuntimeError(f"{name}: other.shape[{side}] must be equal to input.shape[-2]")
    k = tau._data.shape[-1]
    if k > min(other._data.shape[side], input._data.shape[-1]):
        raise RuntimeError(f"{name}: tau.shape[-1] must be equal to min(other.shape[{side}], "
                           "input.shape[-1])")
    _check_householder(name, input, tau)
    if other._dtype is not input._dtype:
        raise RuntimeError(f"{name}: Expected input and other to have the same dtype, but "
                           f"input has dtype {dtype_name(input._dtype)} and other has dtype "
                           f"{dtype_name(other._dtype)}")
    res = record_composite(OrmqrBackward0, (input, tau, other),
                           lambda input, tau, other: _apply_q(input, tau, other, left, transpose))
    return _finish_out(res, out)


# ---------------------------------------------------------------------------------------------
# svd, svdvals
# ---------------------------------------------------------------------------------------------

class LinalgSvdBackward0(Node):
    """A = U diag(S) Vh (k = min(m, n) columns): with E_ij = s_j^2 - s_i^2,
    gA = U [skew(U^T gU)/E S + S skew(V^T gV)/E + diag(gS)] Vh
         + (I - U U^T) gU S^-1 Vh + U S^-1 gV^T (I - V V^T).
    Undefined (inf/NaN) for repeated singular values, as in PyTorch."""
    __slots__ = ()

    def backward(self, gU, gS, gVh):
        U, S, Vh = self.saved_tensors
        k = S.shape[-1]
        if self.full_matrices:
            U, Vh = U[..., :, :k], Vh[..., :k, :]
            gU = None if gU is None else gU[..., :, :k]
            gVh = None if gVh is None else gVh[..., :k, :]
        if gU is None and gVh is None:
            return matmul(U * gS.unsqueeze(-2), Vh)
        m, n = U.shape[-2], Vh.shape[-1]
        S2 = S * S
        E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + _eye(S, k)
        inner = 0
        if gS is not None:
            inner = gS.diag_embed()
        V = Vh.mT
        gV = None if gVh is None else gVh.mT
        UtgU = VtgV = None
        if gU is not None:
            UtgU = matmul(U.mT, gU)
            inner = inner + ((UtgU - UtgU.mT) / E) * S.unsqueeze(-2)
        if gV is not None:
            VtgV = matmul(V.mT, gV)
            inner = inner + S.unsqueeze(-1) * ((VtgV - VtgV.mT) / E)
        gA = matmul(matmul(U, inner), Vh)
        if gU is not None and m > k:
            gA = gA + matmul((gU - matmul(U, UtgU)) / S.unsqueeze(-2), Vh)
        if gV is not None and n > k:
            gA = gA + matmul(U, ((gV - matmul(V, VtgV)) / S.unsqueeze(-2)).mT)
        return gA

    def jvp(self, t):
        # real A, m >= n (else on A^T = V S U^T): with dP = U^T dA V and E as above,
        # dS = diag(dP), dU = U (dP S + S dP^T) / E + (I - U U^T) dA V S^-1,
        # dV = V (S dP + dP^T S) / E, the diagonals of both quotients 0
        U, S, Vh = self.saved_tensors
        m, n = U.shape[-2], Vh.shape[-1]
        if U._dtype._kind == 3 or (self.full_matrices and m != n):
            return NotImplemented
        transposed = m < n
        if transposed:
            U, Vh, t = Vh.mT, U.mT, t.mT
        V = Vh.mT
        k = S.shape[-1]
        eye = _eye(S, k)
        tV = matmul(t, V)
        dP = matmul(U.mT, tV)
        S2 = S * S
        E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + eye
        dPS = dP * S.unsqueeze(-2)
        SdP = S.unsqueeze(-1) * dP
        dU = matmul(U, (dPS + dPS.mT) / E * (1 - eye))
        dV = matmul(V, (SdP + SdP.mT) / E * (1 - eye))
        if U.shape[-2] > k:
            dU = dU + (tV - matmul(U, dP)) / S.unsqueeze(-2)
        if transposed:
            dU, dV = dV, dU
        return dU, dP.diagonal(0, -2, -1), dV.mT


def _svd_arrays(A, full_matrices, name="linalg.svd"):
    xp = A._backend.xp
    a = A._data
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    k = min(m, n)
    if a.size == 0:
        u_cols, vh_rows = (m, n) if full_matrices else (k, k)
        return (xp.broadcast_to(xp.eye(m, u_cols, dtype=a.dtype), batch + (m, u_cols)).copy(),
                xp.zeros(batch + (k,), dtype=a.dtype),
                xp.broadcast_to(xp.eye(vh_rows, n, dtype=a.dtype), batch + (vh_rows, n)).copy())
    try:
        return xp.linalg.svd(a, full_matrices=full_matrices)
    except _linalg_errors(xp):
        raise LinAlgError(f"{name}: The algorithm failed to converge because the input matrix "
                          "contained non-finite values.") from None


def _svd(A, full_matrices, name="linalg.svd"):
    _check_matrix(A, name, square=False, low="linalg_svd_cpu")
    u, s, vh = _svd_arrays(A, full_matrices, name)
    dtype = A._dtype
    outs = tuple(_wrap(A._backend.xp.asarray(x, dtype=dtype.np), dtype, A) for x in (u, s, vh))
    if needs_grad(A):
        record_multi(LinalgSvdBackward0, (A,), outs, save=outs, full_matrices=full_matrices)
    return outs


@_fills_named_out(return_types.linalg_svd_out)
def _linalg_svd(A, full_matrices=True, *, driver=None, out=None):
    if _autocast.active and _autocast.enabled_for(A, "linalg_svd"):
        return _autocast.run(_linalg_svd, "linalg_svd", A, full_matrices, driver=driver, out=out)
    return _svd_result(*_svd(A, full_matrices))


@_fills_named_out(return_types.svd_out)
def svd(input, some=True, compute_uv=True, *, out=None):
    """``torch.svd``: returns V (not Vh); with ``compute_uv=False``, U and V are zero-filled
    full-size matrices and only S is differentiable."""
    if _autocast.active and _autocast.enabled_for(input, "svd"):
        return _autocast.run(svd, "svd", input, some, compute_uv, out=out)
    if not compute_uv:
        S = svdvals(input)
        xp = input._backend.xp
        m, n = input._data.shape[-2:]
        batch = input._data.shape[:-2]
        zeros = [_wrap(xp.zeros(batch + (r, r), dtype=input._dtype.np), input._dtype, input)
                 for r in (m, n)]
        return _torch_svd_result(zeros[0], S, zeros[1])
    U, S, Vh = _svd(input, not some)
    return _torch_svd_result(U, S, Vh.mT)


def svdvals(A, *, driver=None, out=None):
    if _autocast.active and _autocast.enabled_for(A, "linalg_svdvals"):
        return _autocast.run(svdvals, "linalg_svdvals", A, driver=driver, out=out)
    if needs_grad(A):  # the gradient U diag(gS) Vh needs the vectors: take them from svd
        return _finish_out(_svd(A, False, "linalg.svd")[1], out)
    _check_matrix(A, "linalg.svd", square=False, low="linalg_svd_cpu")
    xp = A._backend.xp
    a = A._data
    if a.size == 0:
        data = xp.zeros(a.shape[:-2] + (min(a.shape[-2:]),), dtype=a.dtype)
    else:
        try:
            data = xp.linalg.svd(a, compute_uv=False)
        except _linalg_errors(xp):
            raise LinAlgError("linalg.svd: The algorithm failed to converge because the input "
                              "matrix contained non-finite values.") from None
    return _finish_out(_wrap(xp.asarray(data, dtype=a.dtype), A._dtype, A), out)


# ---------------------------------------------------------------------------------------------
# eigh, eigvalsh
# ---------------------------------------------------------------------------------------------

class LinalgEighBackward0(Node):
    """A = V diag(L) V^T: gA = V (diag(gL) + skew(V^T gV)/2 / E) V^T, E_ij = L_j - L_i.
    Undefined for repeated eigenvalues, as in PyTorch."""
    __slots__ = ()

    def backward(self, gL, gV):
        L, V = self.saved_tensors
        inner = 0
        if gL is not None:
            inner = gL.diag_embed()
        if gV is not None:
            E = L.unsqueeze(-2) - L.unsqueeze(-1) + _eye(L, L.shape[-1])
            VtgV = matmul(V.mT, gV)
            inner = inner + 0.5 * (VtgV - VtgV.mT) / E
        return matmul(matmul(V, inner), V.mT)

    def jvp(self, t):
        # with P = V^T dA V: dL = diag(P), dV = V (P / E) off the diagonal, E_ij = L_j - L_i
        L, V = self.saved_tensors
        if V._dtype._kind == 3:
            return NotImplemented
        P = matmul(matmul(V.mT, t), V)
        n = L.shape[-1]
        eye = _eye(L, n)
        E = L.unsqueeze(-2) - L.unsqueeze(-1) + eye
        return P.diagonal(0, -2, -1), matmul(V, P * (1 - eye) / E)


def _check_uplo(UPLO):
    if not isinstance(UPLO, str) or UPLO.upper() not in ("L", "U") or len(UPLO) != 1:
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")


def _eigh(A, UPLO, name="linalg.eigh"):
    _check_uplo(UPLO)
    _check_matrix(A, name, low="linalg_eigh_cpu", kernel="linalg_eigh_cpu")
    xp = A._backend.xp
    a = A._data
    if a.size == 0:
        w = xp.zeros(a.shape[:-1], dtype=a.dtype)
        v = xp.zeros(a.shape, dtype=a.dtype)
    else:
        try:
            w, v = xp.linalg.eigh(a, UPLO=UPLO.upper())
        except _linalg_errors(xp):
            raise LinAlgError(f"{name}: The algorithm failed to converge because the input "
                              "matrix is ill-conditioned or has too many repeated eigenvalues.") \
                from None
    outs = (_wrap(xp.asarray(w, dtype=a.dtype), A._dtype, A),
            _wrap(xp.asarray(v, dtype=a.dtype), A._dtype, A))
    if needs_grad(A):
        record_multi(LinalgEighBackward0, (A,), outs, save=outs)
    return outs


@_fills_named_out(return_types.linalg_eigh_out)
def eigh(A, UPLO="L", *, out=None):
    if _autocast.active and _autocast.enabled_for(A, "linalg_eigh"):
        return _autocast.run(eigh, "linalg_eigh", A, UPLO, out=out)
    return _eigh_result(*_eigh(A, UPLO))


def eigvalsh(A, UPLO="L", *, out=None):
    if _autocast.active and _autocast.enabled_for(A, "linalg_eigvalsh"):
        return _autocast.run(eigvalsh, "linalg_eigvalsh", A, UPLO, out=out)
    if needs_grad(A):
        return _finish_out(_eigh(A, UPLO)[0], out)
    _check_uplo(UPLO)
    _check_matrix(A, "linalg.eigh", low="linalg_eigh_cpu", kernel="linalg_eigh_cpu")
    xp = A._backend.xp
    a = A._data
    if a.size == 0:
        w = xp.zeros(a.shape[:-1], dtype=a.dtype)
    else:
        try:
            w = xp.linalg.eigvalsh(a, UPLO=UPLO.upper())
        except _linalg_errors(xp):
            raise LinAlgError("linalg.eigh: The algorithm failed to converge because the input "
                              "matrix is ill-conditioned or has too many repeated eigenvalues.") \
                from None
    return _finish_out(_wrap(xp.asarray(w, dtype=a.dtype), A._dtype, A), out)


# ---------------------------------------------------------------------------------------------
# eig, eigvals (general matrices: complex results; forward only)
# ---------------------------------------------------------------------------------------------

class LinalgEigBackward0(Node):
    __slots__ = ()

    def backward(self, *grads):
        raise NotImplementedError("ember.linalg.eig: the gradient of the non-symmetric "
                                  "eigendecomposition is not implemented; use linalg.eigh for "
                                  "symmetric matrices")


def _eig(A, name, vectors):
    if A._dtype._kind < 2:
        raise RuntimeError(f"Unknown Complex ScalarType for {dtype_name(A._dtype)}")
    _check_matrix(A, name, low="linalg_eig_out_cpu")
    xp = A._backend.xp
    a = A._data
    complex_dtype = dt.complex128 if a.dtype == np.float64 or a.dtype == np.complex128 \
        else dt.complex64
    if a.size == 0:
        w = xp.zeros(a.shape[:-1], dtype=complex_dtype.np)
        v = xp.zeros(a.shape, dtype=complex_dtype.np)
    elif vectors:
        w, v = xp.linalg.eig(a)
    else:
        w, v = xp.linalg.eigvals(a), None
    outs = [_wrap(xp.asarray(w, dtype=complex_dtype.np), complex_dtype, A)]
    if vectors:
        outs.append(_wrap(xp.asarray(v, dtype=complex_dtype.np), complex_dtype, A))
    if needs_grad(A):
        record_multi(LinalgEigBackward0, (A,), outs)
    return outs


@_fills_named_out(return_types.linalg_eig_out)
def eig(A, *, out=None):
    if _autocast.active and _autocast.enabled_for(A, "linalg_eig"):
        return _autocast.run(eig, "linalg_eig", A, out=out)
    return _eig_result(*_eig(A, "linalg.eig", True))


def eigvals(A, *, out=None):
    if _autocast.active and _autocast.enabled_for(A, "linalg_eigvals"):
        return _autocast.run(eigvals, "linalg_eigvals", A, out=out)
    return _eig(A, "linalg.eigvals", False)[0]


# ---------------------------------------------------------------------------------------------
# Tolerances (pinv, matrix_rank, lstsq)
# ---------------------------------------------------------------------------------------------

def _tolerance_arrays(A, atol, rtol, smax):
    """max(atol, rtol * smax) per matrix, with PyTorch's defaults: rtol = eps * max(m, n) when
    neither is given, 0 when only a positive atol is."""
    xp = A._backend.xp
    dtype = A._data.dtype

    def value(x):
        if x is None:
            return None
        if isinstance(x, Tensor):
            _check_same_device(A, x)
            return x._data.astype(dtype, copy=False)
        return xp.asarray(x, dtype=dtype)
    atol_a, rtol_a = value(atol), value(rtol)
    if rtol_a is None:
        eps = np.finfo(dtype).eps * max(A._data.shape[-2:])
        if atol_a is None:
            rtol_a = xp.asarray(eps, dtype=dtype)
        else:
            rtol_a = xp.where(atol_a > 0, xp.zeros((), dtype=dtype), eps).astype(dtype)
    if atol_a is None:
        atol_a = xp.zeros((), dtype=dtype)
    return xp.maximum(atol_a, rtol_a * smax)


def _check_pinv_input(A, name="linalg.pinv"):
    if not isinstance(A, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(A).__name__}")
    if A._data.ndim < 2 or A._dtype._kind < 2 or A._dtype in _LOW:
        shape = ", ".join(map(str, A._data.shape))
        raise RuntimeError(f"{name}({dtype_name(A._dtype)}{{[{shape}]}}): expected a tensor with "
                           "2 or more dimensions of float, double, cfloat or cdouble types")


def _check_float_double(A):
    if A._dtype not in (dt.float32, dt.float64):
        raise RuntimeError("This function doesn't handle types other than float and double")


# ---------------------------------------------------------------------------------------------
# pinv
# ---------------------------------------------------------------------------------------------

class LinalgPinvBackward0(Node):
    """PyTorch's pinv gradient (valid where the rank is locally constant), as matrix products of
    A, its pseudo-inverse P and the incoming gradient G."""
    __slots__ = ()

    def backward(self, grad):
        A, P = self.saved_tensors
        m, n = A.shape[-2], A.shape[-1]
        Gt = grad.mT
        if m <= n:
            K = matmul(Gt, P)
            KPt = matmul(K, P.mT)
            return (-matmul(P, K).mT + KPt - matmul(matmul(A, P), KPt)
                    + matmul(matmul(P.mT, P), Gt - matmul(K, A)))
        K = matmul(P, Gt)
        PtK = matmul(P.mT, K)
        return (-matmul(K, P).mT + PtK - matmul(matmul(PtK, P), A)
                + matmul(Gt - matmul(A, K), matmul(P, P.mT)))

    def jvp(self, t):
        # where the rank is locally constant (real A):
        # dP = -P dA P + P P^T dA^T (I - A P) + (I - P A) dA^T P^T P
        A, P = self.saved_tensors
        if A._dtype._kind == 3:
            return NotImplemented
        tT = t.mT
        return (-matmul(matmul(P, t), P)
                + matmul(matmul(P, P.mT), tT - matmul(matmul(tT, A), P))
                + matmul(tT - matmul(P, matmul(A, tT)), matmul(P.mT, P)))


def _pinv(A, atol, rtol, hermitian):
    """The pseudo-inverse (recorded for autograd) and, when computed, the singular values."""
    xp = A._backend.xp
    a = A._data
    m, n = a.shape[-2:]
    s = None
    if a.size == 0:
        data = xp.zeros(a.shape[:-2] + (n, m), dtype=a.dtype)
    elif hermitian:
        w, v = xp.linalg.eigh(a)
        tol = _tolerance_arrays(A, atol, rtol, xp.abs(w).max(axis=-1))
        inv_w = xp.where(xp.abs(w) > tol[..., None], 1 / xp.where(w == 0, 1, w), 0)
        data = xp.matmul(v * inv_w[..., None, :].astype(a.dtype), xp.swapaxes(v, -1, -2))
    else:
        u, s, vh = xp.linalg.svd(a, full_matrices=False)
        tol = _tolerance_arrays(A, atol, rtol, s[..., 0])
        inv_s = xp.where(s > tol[..., None], 1 / xp.where(s == 0, 1, s), 0).astype(a.dtype)
        data = xp.matmul(xp.swapaxes(vh, -1, -2) * inv_s[..., None, :], xp.swapaxes(u, -1, -2))
    res = _wrap(xp.asarray(data, dtype=a.dtype), A._dtype, A)
    if needs_grad(A):
        record(LinalgPinvBackward0, (A,), res, save=(A,), save_out=True)
    return res, s


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None, rcond=None):
    if A._data.ndim < 2 and isinstance(atol, (int, float)) and rtol is None and rcond is None:
        # PyTorch's overload for a Python-number atol asks for A.size(-2) before any check.
        wrap_dim_no_scalar(-2, A._data.ndim)
    _check_pinv_input(A)
    _refuse_complex_grad(A, "linalg.pinv")
    if rcond is not None:
        rtol = rcond
    return _finish_out(_pinv(A, atol, rtol, hermitian)[0], out)


def pinverse(input, rcond=1e-15):
    if _autocast.active and _autocast.enabled_for(input, "pinverse"):
        return _autocast.run(pinverse, "pinverse", input, rcond)
    return pinv(input, rtol=rcond)


# ---------------------------------------------------------------------------------------------
# matrix_rank, lstsq
# ---------------------------------------------------------------------------------------------

def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None, tol=None):
    if _autocast.active and _autocast.enabled_for(A, "linalg_matrix_rank"):
        return _autocast.run(matrix_rank, "linalg_matrix_rank", A, atol=atol, rtol=rtol,
                             hermitian=hermitian, out=out, tol=tol)
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg.matrix_rank(): argument 'input' must be Tensor, not "
                        f"{type(A).__name__}")
    if A._data.ndim < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at least "
                           "2 dimensions.".replace("torch.", "ember."))
    if A._dtype in _LOW and A._data.size and (atol is not None or rtol is not None
                                               or tol is not None):
        # With explicit tolerances PyTorch goes straight to the decomposition's kernel.
        raise _kernel_error("linalg_eigh_cpu" if hermitian else "linalg_svd_cpu", A._dtype)
    _check_float_double(A)
    if tol is not None:
        if atol is not None or rtol is not None:
            raise TypeError("linalg.matrix_rank(): received an invalid combination of "
                            "arguments: tol cannot be given with atol or rtol")
        atol, rtol = tol, 0.0
    xp = A._backend.xp
    a = A._data
    if a.size == 0:
        rank = xp.zeros(a.shape[:-2], dtype=xp.int64)
    else:
        s = xp.abs(xp.linalg.eigvalsh(a)) if hermitian else xp.linalg.svd(a, compute_uv=False)
        tol_a = _tolerance_arrays(A, atol, rtol, s.max(axis=-1))
        rank = (s > tol_a[..., None]).sum(axis=-1).astype(xp.int64)
    return _finish_out(_wrap(xp.asarray(rank, dtype=xp.int64), dt.int64, A), out)


_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


class LinalgLstsqBackward0(CompositeBackward):
    __slots__ = ()


def lstsq(A, B, rcond=None, *, driver=None):
    """Least squares through the SVD (the minimum-norm solution, which every LAPACK driver gives
    for full-rank input). Which of residuals, rank and singular values are filled follows the
    driver, as in PyTorch (default "gelsy")."""
    if _autocast.active and _autocast.enabled_for(A, "linalg_lstsq"):
        return _autocast.run(lstsq, "linalg_lstsq", A, B, rcond, driver=driver)
    name = "ember.linalg.lstsq"
    if driver is not None and driver not in _LSTSQ_DRIVERS:
        raise RuntimeError(f"{name}: parameter `driver` should be one of "
                           "(gels, gelsy, gelsd, gelss)")
    driver = driver or "gelsy"
    _check_same_device(A, B)
    if A._dtype is not B._dtype:
        raise RuntimeError(f"{name}: Expected input and other to have the same dtype, but got "
                           f"input's dtype {dtype_name(A._dtype)} and other's dtype "
                           f"{dtype_name(B._dtype)}")
    _check_float_double(A)
    if A._data.ndim < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    vector = B._data.ndim == A._data.ndim - 1
    if B._data.ndim < 1 or B._data.shape[-1 if vector else -2] != A._data.shape[-2]:
        raise RuntimeError(f"{name}: input.size(-2) should match other.size(-{1 if vector else 2})")
    m, n = A._data.shape[-2:]
    b_batch = B._data.shape[:-1] if vector else B._data.shape[:-2]
    _broadcast_batch(A._data.shape[:-2], b_batch)
    xp = A._backend.xp
    if rcond is None:
        rcond = float(np.finfo(A._data.dtype).eps) * max(m, n)
    batch = xp.broadcast_shapes(A._data.shape[:-2], b_batch)
    found = {}

    def composition(A, B):
        # One SVD gives the solution (through the pseudo-inverse), the rank and singular values.
        Bm = B.unsqueeze(-1) if vector else B
        pseudo_inverse, s = _pinv(A, None, rcond, False)
        solution = matmul(pseudo_inverse, Bm)
        if s is None:
            s = xp.zeros(A._data.shape[:-2] + (min(m, n),), dtype=A._data.dtype)
        if s.shape[-1]:
            counts = (s > rcond * s.max(axis=-1, keepdims=True)).sum(axis=-1)
        else:
            counts = xp.zeros(s.shape[:-1], dtype=xp.int64)
        found.update(s=s, counts=counts)
        # Empty when not computed, but still an output of the node (as in PyTorch).
        residuals = solution.reshape(-1)[:0]
        if driver != "gelsy" and m > n and bool((counts == n).all()):
            residuals = ((matmul(A, solution) - Bm) ** 2).sum(-2)
        return (solution.squeeze(-1) if vector else solution), residuals

    solution, residuals = record_composite(LinalgLstsqBackward0, (A, B), composition)
    s, full_rank_counts = found["s"], found["counts"]
    if driver == "gels":
        rank = xp.zeros((0,), dtype=xp.int64)
    else:
        rank = xp.broadcast_to(full_rank_counts.astype(xp.int64), batch)
    empty = xp.zeros((0,), dtype=A._data.dtype)
    singular_values = s if driver in ("gelsd", "gelss") else empty
    return _lstsq_result(solution, residuals,
                         _wrap(xp.asarray(rank, dtype=xp.int64), dt.int64, A),
                         _wrap(xp.asarray(singular_values, dtype=A._data.dtype), A._dtype, A))


# ---------------------------------------------------------------------------------------------
# matrix_power, matrix_exp, multi_dot, vecdot, cross, vander, diagonal
# ---------------------------------------------------------------------------------------------

def matrix_power(A, n, *, out=None):
    n = _as_int(n, "linalg_matrix_power", "n", 2)
    if A._data.ndim < 2:
        raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 "
                           "dimensions.")
    rows, cols = A._data.shape[-2:]
    if rows != cols:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they "
                           f"are {rows} by {cols} matrices")
    if n == 0:
        # torch's composite: a copy of A overwritten by the identity, so the gradient is zero.
        res = A.clone(memory_format=_contiguous).copy_(_eye(A, rows).expand(A._data.shape))
        return _finish_out(res, out)
    if n < 0:
        A = inv(A)
        n = -n
    if n == 3:  # torch's special case, (A A) A, rather than the square-and-multiply order
        return _finish_out(matmul(matmul(A, A), A), out)
    # Square-and-multiply: the products reach BLAS and their gradients come from matmul.
    result, base = None, A
    while True:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if not n:
            break
        base = matmul(base, base)
    return _finish_out(result if result is not A else A.clone(), out)


_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
           40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def _expm_arrays(xp, a):
    """exp of each matrix: Higham's degree-13 Padé approximant after scaling by 2^-s (s chosen
    per matrix), then s squarings, applied where each matrix still needs them."""
    n = a.shape[-1]
    norm1 = xp.abs(a).sum(axis=-2).max(axis=-1)
    with _quiet(xp):
        s = xp.ceil(xp.log2(norm1 / _THETA13))
    s = xp.where(xp.isfinite(s) & (s > 0), s, 0).astype(xp.int64)
    a = a / (2.0 ** s).astype(a.dtype)[..., None, None]
    b = _PADE13
    eye = xp.eye(n, dtype=a.dtype)
    a2 = xp.matmul(a, a)
    a4 = xp.matmul(a2, a2)
    a6 = xp.matmul(a4, a2)
    u = xp.matmul(a, xp.matmul(a6, b[13] * a6 + b[11] * a4 + b[9] * a2)
                  + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * eye)
    v = xp.matmul(a6, b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 \
        + b[2] * a2 + b[0] * eye
    r = xp.linalg.solve(v - u, v + u)
    steps = int(s.max()) if s.size else 0
    for i in range(steps):
        r = xp.where((s > i)[..., None, None], xp.matmul(r, r), r)
    return r


class LinalgMatrixExpBackward0(Node):
    """The adjoint of d exp at A is d exp at A^T, read off the block exponential
    exp([[A^T, G], [0, A^T]]) (upper-right block), itself differentiable."""
    __slots__ = ()

    def backward(self, grad):
        (A,) = self.saved_tensors
        n = A.shape[-1]
        At = A.mT
        top = cat([At, grad], -1)
        bottom = cat([grad * 0, At], -1)
        return matrix_exp(cat([top, bottom], -2))[..., :n, n:]

    def jvp(self, t):
        # d exp at A along dA: the upper-right block of exp([[A, dA], [0, A]])
        (A,) = self.saved_tensors
        n = A.shape[-1]
        top = cat([A, t], -1)
        bottom = cat([t * 0, A], -1)
        return matrix_exp(cat([top, bottom], -2))[..., :n, n:]


def matrix_exp(A):
    _check_matrix(A, "linalg.matrix_exp")
    xp = A._backend.xp
    a = A._data
    work = a.astype(np.float32) if A._dtype in _LOW else a
    data = work.copy() if a.size == 0 else _expm_arrays(xp, work)
    res = _wrap(xp.asarray(data).astype(a.dtype, copy=False), A._dtype, A)
    if needs_grad(A):
        record(LinalgMatrixExpBackward0, (A,), res, save=(A,))
    return res


def _matrix_chain_order(dims):
    """Cheapest parenthesisation of a chain of matrices with sizes dims[i] x dims[i+1]
    (the textbook dynamic programme)."""
    count = len(dims) - 1
    cost = [[0] * count for _ in range(count)]
    split = [[0] * count for _ in range(count)]
    for length in range(1, count):
        for i in range(count - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def multi_dot(tensors, *, out=None):
    if _autocast.active and _autocast.enabled_for(tensors, "linalg_multi_dot"):
        return _autocast.run(multi_dot, "linalg_multi_dot", tensors, out=out)
    tensors = list(tensors)
    count = len(tensors)
    if count < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {count}")
    for i, t in enumerate(tensors):
        nd = t._data.ndim
        if i == 0 and nd not in (1, 2):
            raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {nd}D")
        if i == count - 1 and nd not in (1, 2):
            raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {nd}D")
        if 0 < i < count - 1 and nd != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {nd}D")
    from .matmul import _cpp_name
    for i, t in enumerate(tensors[1:], 1):
        _check_same_device(tensors[0], t)
        if t._dtype is not tensors[0]._dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor "
                               f"0 is {_cpp_name(tensors[0]._dtype)} and tensor {i} "
                               f"{_cpp_name(t._dtype)}")
    first_vec, last_vec = tensors[0].ndim == 1, tensors[-1].ndim == 1
    mats = list(tensors)
    if first_vec:
        mats[0] = mats[0].unsqueeze(0)
    if last_vec:
        mats[-1] = mats[-1].unsqueeze(-1)
    for i in range(count - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes "
                               f"{list(tensors[i].shape)} and {list(tensors[i + 1].shape)} "
                               "cannot be multiplied")
    dims = [mats[0].shape[0]] + [t.shape[1] for t in mats]
    split = _matrix_chain_order(dims)

    def product(i, j):
        if i == j:
            return mats[i]
        k = split[i][j]
        return matmul(product(i, k), product(k + 1, j))
    res = product(0, count - 1)
    # torch's composite always ends in a view to the output shape, even an unchanged one.
    shape = res.shape[1 if first_vec else 0:-1 if last_vec else None]
    return _finish_out(res.view(shape), out)


def chain_matmul(*matrices, out=None):
    if _autocast.active and _autocast.enabled_for(matrices, "chain_matmul"):
        return _autocast.run(chain_matmul, "chain_matmul", *matrices, out=out)
    if len(matrices) == 1:
        return matrices[0].clone()
    return multi_dot(matrices, out=out)


def vecdot(x, y, *, dim=-1, out=None):
    if _autocast.active and _autocast.enabled_for(x, "linalg_vecdot"):
        return _autocast.run(vecdot, "linalg_vecdot", x, y, dim=dim, out=out)
    _check_same_device(x, y)
    if x._dtype is not y._dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x "
                           f"of type {dtype_name(x._dtype)} and y of type {dtype_name(y._dtype)} "
                           "instead")
    if x._dtype._kind < 2:
        raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as "
                           f"input. Got {dtype_name(x._dtype)}")
    if x._data.ndim == 1 and y._data.ndim == 1 and x._data.shape != y._data.shape:
        a, b = x._data.shape[0], y._data.shape[0]
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{a}] and src [{b}] to "
                           f"have the same number of elements, but got {a} and {b} elements "
                           "respectively")
    if x._data.ndim == 1 and y._data.ndim == 1:
        # torch's kernel for two vectors, which (as torch does) looks at no ``dim``
        return _finish_out(vdot(x, y), out)
    return _finish_out((_conj(x) * y).sum(dim), out)


class LinalgCrossBackward0(Node):
    """d(a x b) = da x b + a x db: ga = b x g, gb = g x a."""
    __slots__ = ()

    def backward(self, grad):
        a, b = self.saved_tensors
        ga = _linalg_cross(b, grad, dim=self.dim) if self._edges[0] is not None else None
        gb = _linalg_cross(grad, a, dim=self.dim) if self._edges[1] is not None else None
        return ga, gb

    def jvp(self, ta, tb):
        a, b = self.saved_tensors
        terms = [_linalg_cross(ta, b, dim=self.dim) if ta is not None else None,
                 _linalg_cross(a, tb, dim=self.dim) if tb is not None else None]
        terms = [x for x in terms if x is not None]
        return terms[0] if len(terms) == 1 else terms[0] + terms[1]


def _linalg_cross(input, other, *, dim=-1, out=None):
    _check_same_device(input, other)
    if input._data.ndim != other._data.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    d = wrap_dim(dim, input._data.ndim)
    if input._data.shape[d] != 3 or other._data.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{input._data.shape[d]} and {other._data.shape[d]}")
    if input._dtype is not other._dtype:
        raise RuntimeError(f"expected scalar type {dtype_name(input._dtype)} but found "
                           f"{dtype_name(other._dtype)}")
    if input._dtype is dt.bool:
        raise NotImplementedError("\"cross\" not implemented for 'Bool'")
    _broadcast_batch(input._data.shape, other._data.shape)
    xp = input._backend.xp
    a, b = input._data, other._data
    low = input._dtype in _LOW
    if low:
        a, b = a.astype(np.float32), b.astype(np.float32)
    data = xp.cross(a, b, axis=d)
    res = _wrap(xp.asarray(data).astype(input._dtype.np, copy=False), input._dtype, input)
    if needs_grad(input, other):
        record(LinalgCrossBackward0, (input, other), res, save=(input, other), dim=d)
    return _finish_out(res, out)


def cross(input, other, dim=None, *, out=None):
    """``torch.cross``: without ``dim``, the first dimension of size 3 (deprecated in PyTorch,
    kept for compatibility)."""
    if _autocast.active and _autocast.enabled_for(input, "cross"):
        return _autocast.run(cross, "cross", input, other, dim, out=out)
    if dim is None:
        shape = _broadcast_batch(input._data.shape, other._data.shape) \
            if input._data.ndim == other._data.ndim else input._data.shape
        sizes = [i for i, s in enumerate(shape) if s == 3]
        if not sizes:
            raise RuntimeError("no dimension of size 3 in input")
        dim = sizes[0]
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease "
                      "either pass the dim explicitly or simply use torch.linalg.cross.\nThe "
                      "default value of dim will change to agree with that of linalg.cross in a "
                      "future release.", UserWarning, stacklevel=2)
        if input._data.ndim == other._data.ndim and input._data.shape != other._data.shape:
            shape = tuple(shape)
            input, other = input.expand(*shape), other.expand(*shape)
    return _linalg_cross(input, other, dim=dim, out=out)


def vander(x, N=None):
    if x._dtype is dt.bool:
        raise RuntimeError("linalg.vander supports floating point, complex, and integer tensors, "
                           "but got Bool")
    if x._data.ndim == 0:  # PyTorch reads a 0-d x as one point: a (1, N) matrix
        x = x.reshape(1)
    n = x._data.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    if x._dtype._kind == 1 and x._dtype is not dt.int64:
        x = x.to(dt.int64)
    powers = x.unsqueeze(-1).expand(*x.shape, n - 1).cumprod(-1)
    xp = x._backend.xp
    ones = _wrap(xp.ones(x._data.shape + (1,), dtype=x._data.dtype), x._dtype, x)
    return cat([ones, powers], -1)


def _linalg_diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    return A.diagonal(offset, dim1, dim2)


# ---------------------------------------------------------------------------------------------
# Norms: vector norms come from reduce.norm; matrix norms build on it and on svdvals
# ---------------------------------------------------------------------------------------------

def _check_norm_dtype(A, dtype, name):
    if A._dtype._kind < 2:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{dtype_name(A._dtype)}")
    if dtype is None:
        return A
    dtype = dt.check_dtype(dtype, name.replace(".", "_"))
    if dtype._kind < 2:
        raise RuntimeError(f"{name}: dtype should be floating point or complex, but got "
                           f"{dtype_name(dtype)}")
    if dt.promote_types(A._dtype, dtype) is not dtype:
        raise RuntimeError(f"{name}: the dtype of the input ({dtype_name(A._dtype)}) should be "
                           f"convertible without narrowing to the specified dtype "
                           f"({dtype_name(dtype)})")
    return A.to(dtype)


def norm_except_dim(v, pow=2, dim=0):
    """The ``pow``-norm of ``v`` over every dim but ``dim``, kept with size 1 (``dim=-1``: the
    norm of all of ``v``, as a 0-d tensor): weight normalisation's norm."""
    if dim == -1:
        return vector_norm(v, pow)
    others = tuple(d for d in range(v.dim()) if d != dim)
    return vector_norm(v, pow, dim=others, keepdim=True)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    if _autocast.active and dtype is None and _autocast.enabled_for(x, "linalg_vector_norm"):
        return _autocast.run(vector_norm, "linalg_vector_norm", x, ord, dim, keepdim, out=out)
    if isinstance(ord, str) or not isinstance(ord, (int, float)):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' (position 2) must be Number, not "
                        f"{type(ord).__name__}")
    x = _check_norm_dtype(x, dtype, "linalg.vector_norm")
    if isinstance(dim, list):
        dim = tuple(dim)
    return _finish_out(_p_norm(x, ord, dim, keepdim), out)


_MATRIX_ORDS = ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    if _autocast.active and dtype is None and _autocast.enabled_for(A, "linalg_matrix_norm"):
        return _autocast.run(matrix_norm, "linalg_matrix_norm", A, ord, dim, keepdim, out=out)
    name = "linalg.matrix_norm"
    if isinstance(dim, int):
        raise TypeError("linalg_matrix_norm(): argument 'dim' must be tuple of ints, not int")
    dim = tuple(dim)
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg_matrix_norm(): argument 'input' must be Tensor, not "
                        f"{type(A).__name__}")
    if A._dtype._kind < 2:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{dtype_name(A._dtype)}")
    if A._data.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if len(dim) != 2:
        raise RuntimeError(f"{name}: dim must be a 2-tuple. Got {' '.join(map(str, dim))}")
    d0, d1 = (wrap_dim(d, A._data.ndim) for d in dim)
    if d0 == d1:
        raise RuntimeError(f"{name}: dims must be different. Got ({dim[0]}, {dim[1]})")
    if ord not in _MATRIX_ORDS or isinstance(ord, bool):
        raise RuntimeError(f"{name}: Order {_ord_text(ord)} not supported.")
    if ord in ("nuc", 2, -2) and A._dtype in _LOW:
        raise RuntimeError(f"{name}: Low precision dtypes not supported. Got "
                           f"{dtype_name(A._dtype)}")
    A = _check_norm_dtype(A, dtype, name)
    if ord == "fro":
        return _finish_out(_p_norm(A, 2, (d0, d1), keepdim), out)
    if ord in ("nuc", 2, -2):
        # torch's composite: the two dims moved last, reduced with keepdim, then one unsqueeze
        # and the inverse permutation put them back.
        s = svdvals(A.movedim((d0, d1), (-2, -1)))
        if s.shape[-1] == 0 or ord == "nuc":
            res = s.sum(-1, keepdim=keepdim)
        else:
            res = s.amax(-1, keepdim) if ord == 2 else s.amin(-1, keepdim)
        if keepdim:
            order = [d for d in range(A._data.ndim) if d not in (d0, d1)] + [d0, d1]
            inverse = [0] * len(order)
            for i, d in enumerate(order):
                inverse[d] = i
            res = res.unsqueeze(-1).permute(inverse)
        return _finish_out(res, out)
    # 1 / -1: the max/min over columns of the columns' 1-norms; inf / -inf: over rows.
    sum_dim, pick_dim = (d0, d1) if abs(ord) == 1 else (d1, d0)
    if not keepdim and sum_dim < pick_dim:
        pick_dim -= 1
    sums = _p_norm(A, 1, (sum_dim,), keepdim)
    res = sums.amax(pick_dim, keepdim) if ord > 0 else sums.amin(pick_dim, keepdim)
    return _finish_out(res, out)


def _ord_text(ord):
    if isinstance(ord, float) and ord.is_integer():
        return str(int(ord))
    return str(ord)


def _linalg_norm(A, ord=None, dim=None, keepdim=False, *, out=None, dtype=None):
    if dim is not None:
        dim = (dim,) if isinstance(dim, int) else tuple(dim)
    if isinstance(ord, str):
        if dim is not None and len(dim) != 2:
            raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got "
                               f"{' '.join(map(str, dim))}")
        return matrix_norm(A, ord, dim if dim is not None else (-2, -1), keepdim, dtype=dtype,
                           out=out)
    if dim is not None:
        if len(dim) not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. "
                               f"Got {list(dim)}")
    elif ord is not None and A._data.ndim not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be "
                           f"1D or 2D. Got {A._data.ndim}D.")
    if ord is not None and ((dim is not None and len(dim) == 2)
                            or (dim is None and A._data.ndim == 2)):
        return matrix_norm(A, ord, dim if dim is not None else (0, 1), keepdim, dtype=dtype,
                           out=out)
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype, out=out)


# ---------------------------------------------------------------------------------------------
# dist, renorm, trace
# ---------------------------------------------------------------------------------------------

def dist(input, other, p=2):
    if _autocast.active and _autocast.enabled_for(input, "dist"):
        return _autocast.run(dist, "dist", input, other, p)
    _check_same_device(input, other)
    diff = input - other
    if diff._dtype._kind < 2:
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. "
                           f"Got {dtype_name(diff._dtype)} instead.")
    return record_composite(DistBackward0, (input, other),
                            lambda a, b: vector_norm(a - b, p))


class DistBackward0(CompositeBackward):
    __slots__ = ()


class RenormBackward0(CompositeBackward):
    __slots__ = ()


def renorm(input, p, dim, maxnorm):
    if _autocast.active and _autocast.enabled_for(input, "renorm"):
        return _autocast.run(renorm, "renorm", input, p, dim, maxnorm)
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if input._dtype._kind < 2:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {dtype_name(input._dtype)}")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    nd = input._data.ndim
    if nd <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {nd} dimensions")
    d = wrap_dim(dim, nd)
    from .. import ops
    others = tuple(i for i in range(nd) if i != d)

    def scaled(input):
        norms = vector_norm(input, p, dim=others, keepdim=True)
        # PyTorch scales by maxnorm / (norm + 1e-7) where the norm exceeds maxnorm, and its
        # gradient flows through the norm as well.
        factor = ops.where(norms > maxnorm, maxnorm / (norms + 1e-7), ops.ones_like(norms))
        return input * factor
    return record_composite(RenormBackward0, (input,), scaled)


def trace(input):
    if _autocast.active and _autocast.enabled_for(input, "trace"):
        return _autocast.run(trace, "trace", input)
    if input._dtype is dt.bool:
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    if input._data.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim "
                           f"{input._data.ndim}")
    from .. import ops
    with grad_mode.no_grad():
        res = ops.diagonal(input).sum()
    if needs_grad(input):
        record(TraceBackward0, (input,), res, shape=tuple(input.shape))
    return res


class TraceBackward0(Node):
    """The gradient is ``grad`` on the diagonal, 0 elsewhere."""
    __slots__ = ()

    def backward(self, grad):
        rows, cols = self.shape
        from .. import ops
        eye = ops.eye(rows, cols, dtype=grad.dtype, device=grad.device)
        return (eye * grad,)

    def jvp(self, t):
        return t.diagonal().sum()  # linear: the trace of the tangent


# ``ember.linalg`` spellings that differ from the top-level functions of the same name.
LINALG_OVERRIDES = {"norm": _linalg_norm, "qr": _linalg_qr, "svd": _linalg_svd,
                    "cholesky": _linalg_cholesky, "cross": _linalg_cross,
                    "diagonal": _linalg_diagonal, "slogdet": _linalg_slogdet,
                    "lu": _linalg_lu, "lu_solve": _linalg_lu_solve}
