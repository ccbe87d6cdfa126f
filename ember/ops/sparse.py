"""Ops on sparse tensors (``ember.sparse``), each with its backward node beside it.

Products run on the backend's sparse-matrix namespace (``backend.sparse()``: SciPy on the CPU);
index bookkeeping runs on ``xp`` (``ember.sparse.coordinates``). Gradients follow PyTorch:
``torch.mm``/``matmul`` give a sparse input a dense gradient, ``torch.sparse.mm``/``addmm``,
``to_dense`` and ``torch.sparse.sum`` a sparse one with the input's (coalesced) pattern.

The backward formulas of these nodes compute on arrays: a second derivative through a sparse
op is not supported (``create_graph=True`` raises rather than returning a wrong graph).
"""
from .. import _dtype as dt
from .. import _layout
from .._tensor import Tensor, _wrap
from ..autograd.graph import Node
from ..autograd import grad_mode
from ._dispatch import needs_grad, record, device_mismatch, dtype_name
from ..sparse import coordinates
from ..sparse.tensor import SparseTensor, wrap_coo, wrap_csr

__all__ = ["mm", "sparse_mm", "addmm", "smm", "sum", "sparse_sum", "softmax", "log_softmax",
           "to_dense", "values", "coalesce", "mul", "mul_dense", "div", "add", "add_dense_sparse",
           "neg", "transpose", "to", "clone"]

_LOW_PRECISION = (dt.float16, dt.bfloat16)


class _SparseNode(Node):
    def _first_order_only(self):
        if grad_mode.is_grad_enabled():
            raise NotImplementedError(f"{self.name()}: double backward through sparse ops is not "
                                      "supported by Ember")


# ---- helpers ------------------------------------------------------------------------------------
def _is_sparse(t):
    return isinstance(t, SparseTensor)


def _coo_arrays(s):
    """(indices, values) of a COO or CSR tensor, in COO form."""
    if s._layout is _layout.sparse_csr:
        xp = s._backend.xp
        rows = coordinates.csr_rows(xp, s._crow_data)
        return xp.stack([rows, s._indices_data]), s._values_data
    return s._indices_data, s._values_data


def same_pattern(s, values, dtype=None, coalesced=None):
    """A sparse tensor with ``s``'s indices (and layout) and new ``values``."""
    dtype = dtype or s._dtype
    if s._layout is _layout.sparse_csr:
        return wrap_csr(s._crow_data, s._indices_data, values, s._data.shape, dtype, s)
    return wrap_coo(s._indices_data, values, s._data.shape, dtype, s,
                    s._coalesced if coalesced is None else coalesced)


def _values_at(grad, s):
    """The gradient's entries at each stored element of ``s`` (in ``s``'s own order)."""
    if _is_sparse(grad):
        indices, vals = _coo_arrays(grad)
        if grad._layout is _layout.sparse_coo and not grad._coalesced:
            indices, vals = coordinates.coalesce(grad._backend, indices, vals,
                                                 grad._data.shape[:indices.shape[0]])
        wanted, _ = _coo_arrays(s)
        return coordinates.lookup(s._backend, indices, vals, grad._data.shape[:wanted.shape[0]],
                                  wanted)
    wanted, _ = _coo_arrays(s)
    return grad._data[tuple(wanted)]


def _coalesced_pattern(s, values_fn):
    """A gradient for ``s``: ``s``'s coalesced pattern, values from ``values_fn(indices)``.
    PyTorch leaves such a gradient's coalesced flag unset, and so does Ember."""
    if s._layout is _layout.sparse_csr:
        return same_pattern(s, values_fn(_coo_arrays(s)[0]))
    idx = s._indices_data
    if not s._coalesced:
        idx = coordinates.coalesced_indices(s._backend, idx, s._data.shape[:idx.shape[0]])
    return wrap_coo(idx, values_fn(idx), s._data.shape, s._dtype, s, False)


def _scipy_matrix(s):
    if s.sparse_dim() != 2 or s.dense_dim() != 0:
        raise RuntimeError(f"sparse matrix products need a 2-D sparse tensor without dense "
                           f"dimensions, got sparse_dim {s.sparse_dim()}, dense_dim "
                           f"{s.dense_dim()}")
    sp = s._backend.sparse()
    vals = s._values_data
    if s._dtype in _LOW_PRECISION:  # SciPy has no float16/bfloat16 kernels: multiply in float32
        vals = vals.astype(dt.float32.np)
    if s._layout is _layout.sparse_csr:
        return sp.csr_matrix((vals, s._indices_data, s._crow_data), shape=s._data.shape)
    idx = s._indices_data
    return sp.coo_matrix((vals, (idx[0], idx[1])), shape=s._data.shape).tocsr()


def _product(matrix, dense, dtype):
    """``matrix @ dense`` as an array of ``dtype``."""
    if dtype in _LOW_PRECISION:
        dense = dense.astype(dt.float32.np)
    out = matrix @ dense
    return out if out.dtype == dtype.np else out.astype(dtype.np)


def _check_product(s, dense, name):
    if not isinstance(dense, Tensor):
        raise TypeError(f"{name}(): argument 'mat2' (position 2) must be Tensor, not "
                        f"{type(dense).__name__}")
    if dense._device is not s._device:
        raise device_mismatch(s, dense)
    if _is_sparse(dense):
        raise NotImplementedError(f"{name}: sparse @ sparse products are not supported by Ember; "
                                  "convert one operand with to_dense()")
    if s.ndim != 2:
        raise RuntimeError(f"{name}: matrices expected, got {s.ndim}D tensor")
    if dense.ndim != 2:
        raise IndexError("Dimension out of range (expected to be in range of "
                         f"[-{max(dense.ndim, 1)}, {max(dense.ndim, 1) - 1}], but got 1)")
    if dense.shape[0] != s.shape[1]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {s.shape[1]}, got "
                           f"{dense.shape[0]}")
    if dense._dtype is not s._dtype:
        raise RuntimeError(f"expected scalar type {dtype_name(s._dtype)} but found "
                           f"{dtype_name(dense._dtype)}")


# ---- construction -------------------------------------------------------------------------------
class SparseCooTensorWithDimsAndTensorsBackward0(_SparseNode):
    def backward(self, grad):
        self._first_order_only()
        (out,) = self.saved_tensors
        return _wrap(_values_at(grad, out), out._dtype, out)


class SparseCsrTensorBackward0(SparseCooTensorWithDimsAndTensorsBackward0):
    pass


def record_construction(out, values):
    """Connect a sparse tensor built from ``values`` to the values' graph."""
    if needs_grad(values):
        node = (SparseCooTensorWithDimsAndTensorsBackward0 if out._layout is _layout.sparse_coo
                else SparseCsrTensorBackward0)
        record(node, (values,), out, save=(out.detach(),))


class ValuesBackward0(_SparseNode):
    def backward(self, grad):
        self._first_order_only()
        (s,) = self.saved_tensors
        return same_pattern(s, grad._data.astype(s._dtype.np, copy=False))


def values(s):
    out = _wrap(s._values_data, s._dtype, s)
    if needs_grad(s):
        record(ValuesBackward0, (s,), out, save=(s.detach(),))
    return out


# ---- conversions --------------------------------------------------------------------------------
class ToDenseBackward0(_SparseNode):
    def backward(self, grad):
        self._first_order_only()
        (s,) = self.saved_tensors
        if not self.masked_grad:  # the whole gradient, in the input's layout
            full = dense_to_coo(grad.detach(), s.sparse_dim())
            if s._layout is _layout.sparse_csr:
                return coo_to_csr(full)
            full._coalesced = False  # as PyTorch flags it
            return full
        return _coalesced_pattern(s, lambda idx: grad._data[tuple(idx)])


def to_dense(s, masked_grad=None):
    """``Tensor.to_dense``: its gradient keeps the input's pattern unless ``masked_grad=False``."""
    indices, vals = _coo_arrays(s)
    out = _wrap(coordinates.to_dense(s._backend, indices, vals, s._data.shape), s._dtype, s)
    if needs_grad(s):
        record(ToDenseBackward0, (s,), out, save=(s.detach(),),
               masked_grad=masked_grad is None or bool(masked_grad))
    return out


class ToSparseBackward0(_SparseNode):
    def backward(self, grad):
        self._first_order_only()
        return grad.to_dense() if _is_sparse(grad) else grad


def dense_to_coo(t, sparse_dim):
    xp = t._backend.xp
    data = t._data
    dense_size = 1
    for n in data.shape[sparse_dim:]:
        dense_size *= n
    lead = data.reshape(data.shape[:sparse_dim] + (dense_size,))
    nonzero = xp.any(lead != 0, axis=-1) if data.ndim > sparse_dim else data != 0
    indices = xp.stack(xp.nonzero(nonzero)).astype(xp.int64, copy=False).reshape(sparse_dim, -1)
    vals = data[tuple(indices)] if sparse_dim else data[None]
    out = wrap_coo(indices, vals.copy(), data.shape, t._dtype, t, True)
    if needs_grad(t):
        record(ToSparseBackward0, (t,), out)
    return out


class ToSparseCsrBackward0(_SparseNode):
    def backward(self, grad):
        self._first_order_only()
        return csr_to_coo(grad) if _is_sparse(grad) else grad


def coo_to_csr(s):
    xp = s._backend.xp
    indices, vals = s._indices_data, s._values_data
    if not s._coalesced:
        indices, vals = coordinates.coalesce(s._backend, indices, vals, s._data.shape)
    crow = coordinates.rows_to_crow(xp, indices[0], s._data.shape[0])
    out = wrap_csr(crow, indices[1], vals, s._data.shape, s._dtype, s)
    if needs_grad(s):
        record(ToSparseCsrBackward0, (s,), out)
    return out


class CsrToCooBackward0(_SparseNode):
    def backward(self, grad):
        self._first_order_only()
        if _is_sparse(grad):
            return grad.to_sparse_csr()
        return grad


def csr_to_coo(s):
    indices, vals = _coo_arrays(s)
    out = wrap_coo(indices, vals, s._data.shape, s._dtype, s, True)
    if needs_grad(s):
        record(CsrToCooBackward0, (s,), out)
    return out


class CoalesceBackward0(_SparseNode):
    def backward(self, grad):
        return grad


def coalesce(s):
    if s._coalesced:
        return s
    k = s._indices_data.shape[0]
    indices, vals = coordinates.coalesce(s._backend, s._indices_data, s._values_data,
                                         s._data.shape[:k])
    out = wrap_coo(indices, vals, s._data.shape, s._dtype, s, True)
    if needs_grad(s):
        record(CoalesceBackward0, (s,), out)
    return out


class ToCopyBackward0(_SparseNode):
    def backward(self, grad):
        return grad.to(self.src_dtype)


def to(s, *args, copy=False, non_blocking=False, memory_format=None, **kwargs):
    from .creation import _parse_to, resolve_device
    device, dtype = _parse_to(args, kwargs)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    if device is not None and resolve_device(device) is not s._device:
        raise NotImplementedError("moving sparse tensors between devices is not supported by "
                                  "Ember yet; rebuild it from indices and values on the device")
    dtype = dtype or s._dtype
    if dtype is s._dtype and not copy:
        return s
    vals = s._values_data.astype(dtype.np, copy=True)
    out = same_pattern(s, vals, dtype)
    if needs_grad(s) and dtype._kind >= 2:
        record(ToCopyBackward0, (s,), out, src_dtype=s._dtype)
    return out


class CloneBackward0(_SparseNode):
    def backward(self, grad):
        return grad


def clone(s):
    out = same_pattern(s, s._values_data.copy())
    if needs_grad(s):
        record(CloneBackward0, (s,), out)
    return out


# ---- element-wise -------------------------------------------------------------------------------
def _scalar_operand(other, op):
    if isinstance(other, Tensor):
        if _is_sparse(other) or other.ndim:
            raise NotImplementedError(f"{op}: Ember multiplies sparse tensors by scalars (or "
                                      "0-d tensors) only")
        if needs_grad(other):
            raise NotImplementedError(f"{op}: Ember does not differentiate a sparse {op} with "
                                      "respect to its 0-d tensor factor")
        return other.item(), other._dtype
    if isinstance(other, (bool, int, float, complex)):
        return other, None
    raise TypeError(f"unsupported operand type for a sparse {op}: '{type(other).__name__}'")


def _result_dtype(s, scalar, scalar_dtype):
    probe = _wrap(s._backend.xp.zeros((1,), dtype=s._dtype.np), s._dtype, s)
    return dt.result_type(probe, scalar if scalar_dtype is None else
                          _wrap(s._backend.xp.zeros((), dtype=scalar_dtype.np), scalar_dtype, s))


class MulBackward0(_SparseNode):
    def backward(self, grad):
        return grad * self.scalar


class _SparseDenseMulBackward(_SparseNode):
    """``sparse * dense``: the sparse factor's gradient is ``grad * dense``, the dense factor's a
    sparse tensor on the sparse factor's pattern, as PyTorch's."""
    def backward(self, grad):
        self._first_order_only()
        s, other = self.saved_tensors
        grad_s = grad_d = None
        if self._edges[0] is not None:
            grad_s = grad * other
        if self._edges[1] is not None:
            picked = _values_at(grad, s)
            grad_d = same_pattern(s, (picked * s._values_data).astype(other._dtype.np, copy=False),
                                  other._dtype)
            if s._layout is _layout.sparse_csr:
                grad_d = csr_to_coo(grad_d)
            if tuple(other.shape) != tuple(s.shape):
                grad_d = grad_d.to_dense()  # the engine sums a broadcast factor's gradient down
        return grad_s, grad_d


_SparseDenseMulBackward.__name__ = _SparseDenseMulBackward.__qualname__ = "MulBackward0"


def mul_dense(s, other):
    """``sparse * dense`` (either order): a sparse result on ``s``'s pattern, each stored value
    times the dense entry at its position (``other`` broadcasts to ``s``'s shape)."""
    if other._device is not s._device:
        raise device_mismatch(s, other)
    xp = s._backend.xp
    try:
        full = xp.broadcast_to(other._data, s._data.shape)
    except ValueError:
        raise RuntimeError(f"mul: the dense operand of shape {list(other.shape)} does not "
                           f"broadcast to the sparse operand's shape {list(s.shape)}") from None
    dtype = dt.promote_types(s._dtype, other._dtype)
    indices, vals = _coo_arrays(s)
    picked = full[tuple(indices)]
    out = same_pattern(s, (vals.astype(dtype.np, copy=False) * picked).astype(dtype.np,
                                                                               copy=False), dtype)
    if needs_grad(s, other):
        record(_SparseDenseMulBackward, (s, other), out, save=(s.detach(), other.detach()))
    return out


def mul(s, other):
    if isinstance(other, Tensor) and not _is_sparse(other) and other.ndim:
        return mul_dense(s, other)
    scalar, scalar_dtype = _scalar_operand(other, "mul")
    dtype = _result_dtype(s, scalar, scalar_dtype)
    vals = (s._values_data * scalar).astype(dtype.np, copy=False)
    out = same_pattern(s, vals, dtype)
    if needs_grad(s):
        record(MulBackward0, (s,), out, scalar=scalar)
    return out


class DivBackward0(_SparseNode):
    def backward(self, grad):
        return grad / self.scalar


def div(s, other):
    scalar, scalar_dtype = _scalar_operand(other, "div")
    dtype = _result_dtype(s, scalar, scalar_dtype)
    if dtype._kind < 2:
        dtype = dt.get_default_dtype()  # true division of integers gives floats, as in PyTorch
    vals = (s._values_data / scalar).astype(dtype.np, copy=False)
    out = same_pattern(s, vals, dtype)
    if needs_grad(s):
        record(DivBackward0, (s,), out, scalar=scalar)
    return out


class AddBackward0(_SparseNode):
    def backward(self, grad):
        return grad, (grad if self.alpha == 1 else grad * self.alpha)


def add(s, other, *, alpha=1):
    if not isinstance(other, Tensor):
        raise TypeError(f"add: a sparse tensor adds tensors, got '{type(other).__name__}'")
    if not _is_sparse(other):
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
    if other._device is not s._device:
        raise device_mismatch(s, other)
    if tuple(s.shape) != tuple(other.shape):
        raise RuntimeError(f"add: expected sizes of 'self' and 'other' to match, but "
                           f"{list(s.shape)} != {list(other.shape)}")
    if other._layout is not s._layout or s.sparse_dim() != other.sparse_dim():
        raise NotImplementedError(f"add: Ember adds sparse tensors of one layout and sparse_dim, "
                                  f"got {s._layout} and {other._layout}")
    dtype = dt.promote_types(s._dtype, other._dtype)
    if other is s:  # as PyTorch: a tensor added to itself keeps its pattern
        out = same_pattern(s, s._values_data * (1 + alpha))
        if needs_grad(s):
            record(AddBackward0, (s, s), out, alpha=alpha)
        return out
    (ia, va), (ib, vb) = _coo_arrays(s), _coo_arrays(other)
    xp = s._backend.xp
    vb = vb * alpha if alpha != 1 else vb
    indices = xp.concatenate([ia, ib], axis=1)
    vals = xp.concatenate([va.astype(dtype.np, copy=False), vb.astype(dtype.np, copy=False)])
    coalesced = s._coalesced and other._coalesced
    if coalesced or s._layout is _layout.sparse_csr:
        # As PyTorch: two coalesced operands give a coalesced sum, others are concatenated.
        indices, vals = coordinates.coalesce(s._backend, indices, vals,
                                             s._data.shape[:indices.shape[0]])
    out = wrap_coo(indices, vals, s._data.shape, dtype, s, coalesced)
    if s._layout is _layout.sparse_csr:
        out = coo_to_csr(out)
    if needs_grad(s, other):
        record(AddBackward0, (s, other), out, alpha=alpha)
    return out


def scatter_add_into(data, s, alpha=1):
    """``data += alpha * s`` in place, for a dense array ``data`` of ``s``'s shape and dtype
    (``dense.add_(sparse)``, gradient accumulation, optimizer steps): repeated positions add
    up, and nothing of the size of ``data`` is allocated."""
    indices, vals = _coo_arrays(s)
    if not indices.shape[1]:
        return
    if alpha != 1:
        vals = vals * alpha
    s._backend.index_add(data, tuple(indices), vals.astype(data.dtype, copy=False))


def add_dense_sparse(dense, s, alpha=1, subtract=False):
    """``dense + alpha * sparse`` (``-`` with ``subtract``): a dense result, as PyTorch's (no
    broadcasting)."""
    if not isinstance(dense, Tensor):
        raise TypeError(f"add: expected a Tensor, got '{type(dense).__name__}'")
    if dense._device is not s._device:
        raise device_mismatch(dense, s)
    if tuple(dense.shape) != tuple(s.shape):
        raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has "
                           f"size {list(dense.shape)} while other has size {list(s.shape)} "
                           "(FYI: dense-sparse addition does not currently support "
                           "broadcasting)")
    from .elementwise import AddBackward0 as DenseAddBackward0, SubBackward0
    rt = dt.promote_types(dense._dtype, s._dtype)
    indices, vals = _coo_arrays(s)
    data = dense._data.astype(rt.np, copy=True)
    vals = vals.astype(rt.np, copy=False)
    scale = -alpha if subtract else alpha
    if scale != 1:
        vals = (vals * scale).astype(rt.np, copy=False)
    if indices.shape[1]:
        s._backend.index_add(data, tuple(indices), vals)
    out = _wrap(data, rt, dense)
    if needs_grad(dense, s):
        record(SubBackward0 if subtract else DenseAddBackward0, (dense, s), out, alpha=alpha)
    return out


def add_function(input, other, alpha=1, out=None, name="add"):
    """``ember.add``/``sub`` (and the operators) when an operand is sparse: sparse + sparse stays
    sparse, dense + sparse is dense, sparse + dense raises PyTorch's error."""
    if out is not None:
        raise NotImplementedError(f"{name}: out= with a sparse operand is not supported by Ember")
    if _is_sparse(input):
        return add(input, other, alpha=-alpha if name == "sub" else alpha)
    return add_dense_sparse(input, other, alpha, subtract=name == "sub")


def mul_function(input, other, out=None):
    """``ember.mul`` with a sparse operand (either side)."""
    if out is not None:
        raise NotImplementedError("mul: out= with a sparse operand is not supported by Ember")
    if _is_sparse(input):
        return mul(input, other)
    if isinstance(input, Tensor) and input.ndim:
        return mul_dense(other, input)
    return mul(other, input)


def neg(s):
    return mul(s, -1)


# ---- shape --------------------------------------------------------------------------------------
class TBackward0(_SparseNode):
    def backward(self, grad):
        return grad.transpose(self.dim0, self.dim1)


class TransposeBackward0(TBackward0):
    pass


def transpose(s, dim0, dim1, name="transpose"):
    if s._layout is _layout.sparse_csr:
        # PyTorch's transpose of a CSR matrix is a CSC matrix; Ember, without CSC, gives the
        # same matrix in CSR form.
        return coo_to_csr(transpose(csr_to_coo(s), dim0, dim1, name))
    ndim = s.ndim
    if name == "t":
        if s.sparse_dim() > 2 or s.dense_dim():
            raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, "
                               f"but got {s.sparse_dim()} sparse and {s.dense_dim()} dense "
                               "dimensions")
        if ndim < 2:
            return s
    for d in (dim0, dim1):
        if not -ndim <= d < ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, "
                             f"{ndim - 1}], but got {d})")
    dim0, dim1 = dim0 % ndim, dim1 % ndim
    k = s.sparse_dim()
    if dim0 >= k or dim1 >= k:
        raise NotImplementedError("sparse transpose: Ember transposes sparse dimensions only, "
                                  f"got sparse_dim {k}, dims {dim0} and {dim1}")
    order = list(range(k))
    order[dim0], order[dim1] = order[dim1], order[dim0]
    shape = list(s._data.shape)
    shape[dim0], shape[dim1] = shape[dim1], shape[dim0]
    out = wrap_coo(s._indices_data[order], s._values_data, shape, s._dtype, s,
                   s._coalesced and dim0 == dim1)
    if needs_grad(s):
        record(TBackward0 if name == "t" else TransposeBackward0, (s,), out, dim0=dim0,
               dim1=dim1)
    return out


# ---- reductions ---------------------------------------------------------------------------------
class SumBackward0(_SparseNode):
    """``Tensor.sum()`` of a sparse tensor: a dense gradient, as in PyTorch."""
    def backward(self, grad):
        return grad.expand(self.shape)


class SparseSumBackward0(_SparseNode):
    """``torch.sparse.sum``: a sparse gradient with the input's coalesced pattern."""
    def backward(self, grad):
        self._first_order_only()
        (s,) = self.saved_tensors
        return _coalesced_pattern(s, lambda idx: self._spread(grad, s, idx))

    def _spread(self, grad, s, idx):
        xp = s._backend.xp
        kept, summed_dense = self.kept_sparse, self.summed_dense
        dense_shape = s._data.shape[s.sparse_dim():]
        if _is_sparse(grad):
            g_idx, g_vals = _coo_arrays(grad)
            if not grad._coalesced:
                g_idx, g_vals = coordinates.coalesce(grad._backend, g_idx, g_vals,
                                                     grad._data.shape[:g_idx.shape[0]])
            per_element = coordinates.lookup(s._backend, g_idx, g_vals,
                                             grad._data.shape[:len(kept)], idx[kept])
        elif kept:
            per_element = grad._data[tuple(idx[kept])]
        else:
            per_element = xp.broadcast_to(grad._data, (idx.shape[1],) + grad._data.shape)
        # put the summed dense dimensions back as size-1 axes, then broadcast over them
        full = list((idx.shape[1],) + dense_shape)
        kept_shape = [n for i, n in enumerate(full) if i == 0 or (i - 1) not in summed_dense]
        per_element = per_element.reshape(kept_shape)
        expand_shape = [1 if (i and (i - 1) in summed_dense) else n for i, n in enumerate(full)]
        return xp.broadcast_to(per_element.reshape(expand_shape), full).astype(s._dtype.np)


def sum(s, dim=None, keepdim=False, *, dtype=None):
    """``Tensor.sum`` on a sparse tensor."""
    if keepdim:
        raise NotImplementedError("sum of a sparse tensor with keepdim=True is not supported")
    if dim is not None:
        return sparse_sum(s, dim, dtype=dtype)
    dtype = dtype or (dt.int64 if s._dtype._kind <= 1 else s._dtype)
    total = s._backend.xp.sum(s._values_data, dtype=dtype.np)
    out = _wrap(s._backend.xp.asarray(total), dtype, s)
    if needs_grad(s):
        record(SumBackward0, (s,), out, shape=tuple(s._data.shape))
    return out


def sparse_sum(s, dim=None, *, dtype=None):
    """``torch.sparse.sum(input, dim=None, dtype=None)``."""
    if not _is_sparse(s) or s._layout is not _layout.sparse_coo:
        got = "Strided" if not _is_sparse(s) else "SparseCsr"
        raise RuntimeError(f"coalesce expected sparse coordinate tensor layout but got {got}")
    xp = s._backend.xp
    ndim, k = s.ndim, s.sparse_dim()
    dims = range(ndim) if dim is None else ((dim,) if isinstance(dim, int) else tuple(dim))
    wrapped = set()
    for d in dims:
        if not -ndim <= d < ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, "
                             f"{ndim - 1}], but got {d})")
        wrapped.add(d % ndim)
    out_dtype = dtype or s._dtype
    vals = s._values_data.astype(out_dtype.np, copy=False)
    summed_dense = tuple(sorted(d - k for d in wrapped if d >= k))
    if summed_dense:
        vals = xp.sum(vals, axis=tuple(d + 1 for d in summed_dense))
    kept = [d for d in range(k) if d not in wrapped]
    shape = tuple(n for d, n in enumerate(s._data.shape) if d not in wrapped)
    if not kept:
        out = _wrap(xp.asarray(xp.sum(vals, axis=0)), out_dtype, s)
        node = SumBackward0 if dim is None else SparseSumBackward0
    else:
        idx = s._indices_data[kept]
        idx, vals = coordinates.coalesce(s._backend, idx, vals, shape[:len(kept)])
        out = wrap_coo(idx, vals, shape, out_dtype, s, True)
        node = SparseSumBackward0
    if needs_grad(s):
        if node is SumBackward0:
            record(_SparseTotalBackward, (s,), out, save=(s.detach(),), kept_sparse=[],
                   summed_dense=tuple(range(s.dense_dim())))
        else:
            record(SparseSumBackward0, (s,), out, save=(s.detach(),), kept_sparse=kept,
                   summed_dense=summed_dense)
    return out


class _SparseTotalBackward(SparseSumBackward0):
    """``torch.sparse.sum(s)`` of everything: a sparse gradient like ``SparseSumBackward0``'s,
    but PyTorch names the node ``SumBackward0`` (``grad_fn`` reprs show the name)."""


_SparseTotalBackward.__name__ = _SparseTotalBackward.__qualname__ = "SumBackward0"


# ---- products -----------------------------------------------------------------------------------
class MmBackward0(_SparseNode):
    """``torch.mm(sparse, dense)``: the sparse input gets a dense gradient."""
    def backward(self, grad):
        self._first_order_only()
        s, dense = self.saved_tensors
        grad_s = grad_d = None
        if self._edges[0] is not None:
            grad_s = grad.matmul(dense.t())
        if self._edges[1] is not None:
            grad_d = _wrap(_product(_scipy_matrix(s).T, grad._data, s._dtype), s._dtype, s)
        return grad_s, grad_d


def mm(s, dense, name="mm"):
    """``torch.mm``/``matmul`` with a sparse first operand: a dense result."""
    vector = name == "matmul" and isinstance(dense, Tensor) and dense.ndim == 1
    if vector:
        dense = dense.unsqueeze(1)
    _check_product(s, dense, name)
    out = _wrap(_product(_scipy_matrix(s), dense._data, s._dtype), s._dtype, s)
    if needs_grad(s, dense):
        record(MmBackward0, (s, dense), out, save=(s.detach(), dense.detach()))
    return out.squeeze(1) if vector else out


class DenseSparseMmBackward0(_SparseNode):
    def backward(self, grad):
        self._first_order_only()
        dense, s = self.saved_tensors
        grad_d = grad_s = None
        if self._edges[0] is not None:  # (G @ S^T) = (S @ G^T)^T
            grad_d = _wrap(_product(_scipy_matrix(s), grad._data.T, s._dtype).T, s._dtype, s)
        if self._edges[1] is not None:
            grad_s = dense.t().matmul(grad)
        return grad_d, grad_s


# PyTorch calls both orders of a sparse-dense product's node MmBackward0.
DenseSparseMmBackward0.__name__ = DenseSparseMmBackward0.__qualname__ = "MmBackward0"


def dense_mm(dense, s):
    """``dense @ sparse``: computed as ``(sparse^T @ dense^T)^T``."""
    if dense.ndim != 2 or s.ndim != 2 or dense.shape[1] != s.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({dense.shape[0]}x"
                           f"{dense.shape[-1]} and {s.shape[0]}x{s.shape[-1]})")
    if dense._dtype is not s._dtype:
        raise RuntimeError(f"expected scalar type {dtype_name(dense._dtype)} but found "
                           f"{dtype_name(s._dtype)}")
    out = _wrap(_product(_scipy_matrix(s).T, dense._data.T, s._dtype).T, s._dtype, s)
    if needs_grad(dense, s):
        record(DenseSparseMmBackward0, (dense, s), out, save=(dense.detach(), s.detach()))
    return out


class SparseAddmmBackward0(_SparseNode):
    """``torch.sparse.mm``/``addmm``: the sparse input gets a sparse gradient on its pattern."""
    def backward(self, grad):
        self._first_order_only()
        s, dense = self.saved_tensors
        alpha, beta = self.alpha, self.beta
        grad_in = grad_s = grad_d = None
        if self._edges[0] is not None:
            grad_in = grad if beta == 1 else grad * beta
        if self._edges[1] is not None:
            g, d = grad._data, dense._data

            def row_dots(idx):  # d(out[i, :]) / d(s[i, j]) = dense[j, :]
                return (alpha * (g[idx[0]] * d[idx[1]]).sum(-1)).astype(s._dtype.np)
            grad_s = _coalesced_pattern(s, row_dots)
        if self._edges[2] is not None:
            prod = _product(_scipy_matrix(s).T, grad._data, s._dtype)
            grad_d = _wrap(prod if alpha == 1 else prod * alpha, s._dtype, s)
        return grad_in, grad_s, grad_d


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """``torch.sparse.addmm``: ``beta * input + alpha * (mat1 @ mat2)``, mat1 sparse."""
    if not _is_sparse(mat1):
        raise RuntimeError(f"addmm: expected mat1 to be a sparse tensor, got layout "
                           f"{mat1.layout}")
    _check_product(mat1, mat2, "addmm")
    prod = _product(_scipy_matrix(mat1), mat2._data, mat1._dtype)
    data = prod if alpha == 1 else prod * alpha
    if input is not None:
        if input._device is not mat1._device:
            raise device_mismatch(mat1, input)
        bias = input._data if beta == 1 else input._data * beta
        data = data + bias
    out = _wrap(data.astype(mat1._dtype.np, copy=False), mat1._dtype, mat1)
    if needs_grad(input, mat1, mat2):
        record(SparseAddmmBackward0, (input, mat1, mat2), out,
               save=(mat1.detach(), mat2.detach()), alpha=alpha, beta=beta)
    return out


def sparse_mm(mat1, mat2, reduce=None):
    """``torch.sparse.mm``: sparse @ dense or dense @ sparse, a dense result (Ember has no
    sparse @ sparse product: that raises NotImplementedError)."""
    if reduce is not None:
        raise NotImplementedError("torch.sparse.mm(..., reduce=...) is not supported by Ember")
    if not _is_sparse(mat1):
        if _is_sparse(mat2):
            return dense_mm(mat1, mat2)
        from .matmul import mm as dense_product
        return dense_product(mat1, mat2)  # as torch: two dense operands are multiplied densely
    return addmm(None, mat1, mat2)


def smm(s, dense):
    """``torch.smm``: sparse @ dense with a sparse COO result. As torch's, it stores every
    column of each row where ``s`` stores anything (zeros included) and is flagged uncoalesced
    unless empty."""
    if not _is_sparse(s):
        raise RuntimeError("tensor.sspaddmm(...) can only be called on sparse tensors")
    product = sparse_mm(s, dense)
    xp = s._backend.xp
    rows = xp.unique(_coo_arrays(s)[0][0])
    ncols = product.shape[1]
    indices = xp.stack([xp.repeat(rows, ncols), xp.tile(xp.arange(ncols, dtype=xp.int64),
                                                         rows.shape[0])])
    out = wrap_coo(indices, product._data[rows].reshape(-1), product.shape, product._dtype, s,
                   indices.shape[1] == 0)
    if needs_grad(product):
        record(ToSparseBackward0, (product,), out)
    return out


# ---- softmax over the stored elements -----------------------------------------------------------
def _softmax_groups(s, dim):
    """For each stored element of coalesced ``s``, the id of its slice along ``dim``."""
    xp = s._backend.xp
    idx = s._indices_data
    others = [d for d in range(idx.shape[0]) if d != dim]
    shape = [s._data.shape[d] for d in others]
    linear = coordinates.linear_index(xp, idx[others], shape)
    _, groups = xp.unique(linear, return_inverse=True)
    return groups.reshape(-1)


def _group_sum(s, groups, vals):
    xp = s._backend.xp
    n = int(groups.max()) + 1 if groups.shape[0] else 0
    sums = xp.zeros((n,) + vals.shape[1:], dtype=vals.dtype)
    s._backend.index_add(sums, groups, vals)
    return sums[groups]


def _group_max(s, groups, vals):
    xp = s._backend.xp
    # the last of each group after sorting by (group, value) is the group's maximum
    order = xp.lexsort((vals, groups))
    sorted_groups = groups[order]
    last = xp.ones(order.shape[0], dtype=bool)
    last[:-1] = sorted_groups[1:] != sorted_groups[:-1]
    maxima = xp.zeros(int(groups.max()) + 1 if groups.shape[0] else 0, dtype=vals.dtype)
    maxima[sorted_groups[last]] = vals[order[last]]
    return maxima[groups]


class SoftmaxBackward0(_SparseNode):
    def backward(self, grad):
        self._first_order_only()
        (s, y) = self.saved_tensors
        g = _values_at(grad, y)
        yv = y._values_data
        if self.log:
            gv = g - y._backend.xp.exp(yv) * _group_sum(y, self.groups, g)
        else:
            gv = yv * (g - _group_sum(y, self.groups, g * yv))
        return same_pattern(y, gv.astype(y._dtype.np, copy=False), coalesced=False)


class LogSoftmaxBackward0(SoftmaxBackward0):
    pass


def _softmax(s, dim, dtype, log):
    if not _is_sparse(s) or s._layout is not _layout.sparse_coo:
        raise RuntimeError("softmax: expected a sparse COO tensor")
    if s.dense_dim():
        raise NotImplementedError("sparse softmax of hybrid tensors is not supported by Ember")
    ndim = s.ndim
    if not -ndim <= dim < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, "
                         f"{ndim - 1}], but got {dim})")
    if dtype is not None:
        s = s.to(dtype)
    c = coalesce(s)
    groups = _softmax_groups(c, dim % ndim)
    vals = c._values_data
    xp = c._backend.xp
    shifted = vals - _group_max(c, groups, vals) if vals.shape[0] else vals
    e = xp.exp(shifted)
    total = _group_sum(c, groups, e)
    out_vals = shifted - xp.log(total) if log else e / total
    out = wrap_coo(c._indices_data, out_vals.astype(c._dtype.np, copy=False), c._data.shape,
                   c._dtype, c, True)
    if needs_grad(c):
        record(LogSoftmaxBackward0 if log else SoftmaxBackward0, (c,), out,
               save=(c.detach(), out.detach()), groups=groups, log=log)
    return out


def softmax(input, dim, *, dtype=None):
    return _softmax(input, dim, dtype, log=False)


def log_softmax(input, dim, *, dtype=None):
    return _softmax(input, dim, dtype, log=True)


def spmm(input, mat2):
    """Dense ``input @ mat2`` (PyTorch's sparse-times-dense product, given dense operands)."""
    from .matmul import mm as dense_mm
    return dense_mm(input, mat2)
