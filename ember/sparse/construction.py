"""Making sparse tensors: ``sparse_coo_tensor``, ``sparse_csr_tensor`` and the conversions
between layouts (``to_sparse``, ``to_sparse_csr``), with PyTorch's invariant checks.

Ember always checks the index invariants (PyTorch skips them unless ``check_invariants=True``
and then reads memory out of bounds): the checks are a few whole-array reductions.
"""
from .. import _dtype as dt
from .. import _layout
from .._tensor import Tensor
from . import coordinates
from .tensor import SparseTensor, wrap_coo, wrap_csr

__all__ = ["sparse_coo_tensor", "sparse_csr_tensor", "to_sparse", "to_sparse_csr"]


def _as_tensor(data, dtype=None, device=None):
    from ..ops.creation import as_tensor
    if isinstance(data, Tensor):
        if device is not None:
            data = data.to(device)
        return data if dtype is None else data.to(dtype)
    return as_tensor(data, dtype=dtype, device=device)


def _index_array(t, like):
    if t._device is not like._device:
        from ..ops._dispatch import device_mismatch
        raise device_mismatch(like, t)
    data = t._data
    return data if data.dtype == dt.int64.np else data.astype(dt.int64.np)


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None, is_coalesced=None):
    values = _as_tensor(values, dtype, device)
    indices = _as_tensor(indices, device=values._device)
    if isinstance(indices, SparseTensor) or isinstance(values, SparseTensor):
        raise RuntimeError("sparse_coo_tensor: indices and values must be strided tensors")
    if indices.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(indices.shape)}")
    idx = _index_array(indices, values)
    sparse_dim, nnz = idx.shape
    vshape = tuple(values.shape)
    if not vshape or vshape[0] != nnz:
        raise RuntimeError("indices and values must have same nnz, but got nnz from indices: "
                           f"{nnz}, nnz from values: {vshape[0] if vshape else 1}")
    xp = values._backend.xp
    if size is None:
        sparse_sizes = tuple(int(s) + 1 for s in xp.max(idx, axis=1)) if nnz else (0,) * sparse_dim
        size = sparse_sizes + vshape[1:]
    size = tuple(int(s) for s in size)
    dense_dim = len(vshape) - 1
    if len(size) != sparse_dim + dense_dim:
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = "
                           f"{len(size)}, sparse_dim = {sparse_dim}, dense_dim = {dense_dim}")
    if size[sparse_dim:] != vshape[1:]:
        raise RuntimeError(f"values has incorrect size, expected {[nnz, *size[sparse_dim:]]}, "
                           f"got {list(vshape)}")
    if nnz:
        _check_coo_indices(xp, idx, size[:sparse_dim])
    coalesced = nnz <= 1 if is_coalesced is None else is_coalesced
    out = wrap_coo(idx, values._data, size, values._dtype, values, coalesced)
    from ..ops.sparse import record_construction
    record_construction(out, values)
    if requires_grad:
        out.requires_grad_(True)
    return out


def _check_coo_indices(xp, idx, sparse_sizes):
    low = xp.min(idx, axis=1)
    high = xp.max(idx, axis=1)
    for dim, size in enumerate(sparse_sizes):  # a loop over dimensions, not non-zeros
        if int(low[dim]) < 0:
            raise RuntimeError(f"found negative index {int(low[dim])} for dim {dim}")
        if int(high[dim]) >= size:
            raise RuntimeError(f"size is inconsistent with indices: for dim {dim}, size is {size} "
                               f"but found index {int(high[dim])}")


def sparse_csr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None, device=None,
                      pin_memory=False, requires_grad=False, check_invariants=None):
    values = _as_tensor(values, dtype, device)
    crow_t = _as_tensor(crow_indices, device=values._device)
    col_t = _as_tensor(col_indices, device=values._device)
    if crow_t.ndim != 1 or col_t.ndim != 1 or values.ndim != 1:
        raise NotImplementedError("Ember's CSR tensors are matrices: crow_indices, col_indices "
                                  "and values must be 1-D (batched or hybrid CSR is not "
                                  "supported)")
    crow, col = _index_array(crow_t, values), _index_array(col_t, values)
    xp = values._backend.xp
    nnz = values.shape[0]
    if size is None:
        size = (crow.shape[0] - 1, int(xp.max(col)) + 1 if col.shape[0] else 0)
    size = tuple(int(s) for s in size)
    if len(size) != 2:
        raise NotImplementedError(f"Ember's CSR tensors are matrices, got size {size}")
    _check_csr(xp, crow, col, nnz, size)
    out = wrap_csr(crow, col, values._data, size, values._dtype, values)
    from ..ops.sparse import record_construction
    record_construction(out, values)
    if requires_grad:
        out.requires_grad_(True)
    return out


def _check_csr(xp, crow, col, nnz, size):
    nrows, ncols = size
    if crow.shape[0] != nrows + 1:
        raise RuntimeError("crow_indices.shape[-1] must be equal to the number of rows + 1 "
                           f"(={nrows + 1}), but got {crow.shape[0]}")
    if col.shape[0] != nnz:
        raise RuntimeError(f"col_indices.shape[-1] must be equal to nnz (={nnz}) as defined by "
                           f"values.shape[0], but got {col.shape[0]}")
    if int(crow[0]) != 0:
        raise RuntimeError("`crow_indices[..., 0] == 0` is not satisfied.")
    if int(crow[-1]) != nnz:
        raise RuntimeError("`crow_indices[..., -1] == nnz` is not satisfied.")
    steps = xp.diff(crow)
    if steps.shape[0] and (int(xp.min(steps)) < 0 or int(xp.max(steps)) > ncols):
        raise RuntimeError("`0 <= crow_indices[..., 1:] - crow_indices[..., :-1] <= ncols` is "
                           "not satisfied.")
    if nnz and (int(xp.min(col)) < 0 or int(xp.max(col)) >= ncols):
        raise RuntimeError("`0 <= col_indices < ncols` is not satisfied.")
    if nnz > 1:
        rows = coordinates.csr_rows(xp, crow)
        same_row = rows[1:] == rows[:-1]
        if bool(xp.any(same_row & (col[1:] <= col[:-1]))):
            raise RuntimeError(
                "`col_indices[..., crow_indices[..., i - 1]:crow_indices[..., i]] for all i = 1, "
                "..., nrows are sorted and distinct along the last dimension values` is not "
                "satisfied.")


# ---- conversions ------------------------------------------------------------------------------
def to_sparse(t, *args, layout=None, blocksize=None, dense_dim=None):
    """``Tensor.to_sparse(sparse_dim)`` or ``to_sparse(layout=...)``."""
    if args and layout is not None:
        raise TypeError("to_sparse() got both sparse_dim and layout")
    if layout is not None and layout is not _layout.sparse_coo:
        _layout.check_supported(layout)
        return to_sparse_csr(t, dense_dim)
    sparse_dim = args[0] if args else None
    from ..ops import sparse as sparse_ops
    if isinstance(t, SparseTensor):
        if t.is_sparse_csr:
            return sparse_ops.csr_to_coo(t)
        if sparse_dim is not None and sparse_dim != t.sparse_dim():
            raise RuntimeError("to_sparse: conversion from Sparse to Sparse with sparse_dim "
                               "argument !=self.sparse_dim() is not supported")
        return t
    ndim = t.ndim
    if sparse_dim is None:
        sparse_dim = ndim
    if not 0 <= sparse_dim <= ndim:
        raise RuntimeError(f"dense_to_sparse: sparse_dim argument must be in [0,{ndim}] range, "
                           f"but {sparse_dim} is given")
    return sparse_ops.dense_to_coo(t, sparse_dim)


def to_sparse_csr(t, dense_dim=None):
    from ..ops import sparse as sparse_ops
    if dense_dim:
        raise NotImplementedError("Ember's CSR tensors have no dense dimensions")
    if isinstance(t, SparseTensor):
        if t.is_sparse_csr:
            return t
        if t.sparse_dim() != 2 or t.dense_dim():
            raise RuntimeError("coo_to_sparse_csr: conversion from Sparse to SparseCsr for input "
                               "tensors with sparse_dim()!=2 is not supported")
        return sparse_ops.coo_to_csr(t)
    if t.ndim != 2:
        raise NotImplementedError(f"Ember's CSR tensors are matrices, got a {t.ndim}-D tensor "
                                  "(batched CSR is not supported)")
    return sparse_ops.coo_to_csr(sparse_ops.dense_to_coo(t, 2))
