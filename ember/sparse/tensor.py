"""Sparse tensors: ``Tensor`` objects of layout ``sparse_coo`` or ``sparse_csr``.

A sparse tensor is an ``ember.Tensor`` (isinstance holds, autograd treats it as any tensor),
whose ``_data`` is a ``SparseData`` record of its shape and dtype instead of an array: the
autograd engine reads shapes and dtypes from ``_data`` alike for both layouts, and a dense op
handed a sparse tensor by mistake fails with a clear error instead of computing on nothing.

The stored arrays live beside it: ``_indices_data`` (sparse_dim, nnz) and ``_values_data``
(nnz, *dense_shape) for COO; ``_crow_data``, ``_indices_data`` (the column indices) and
``_values_data`` for CSR. The ops on them, with their backward nodes, are ``ember.ops.sparse``.
"""
from .. import _layout
from .._tensor import Tensor, _new
from .._tensor_str import _body_str, PRINT_OPTS

__all__ = ["SparseTensor", "SparseData", "wrap_coo", "wrap_csr"]

_LAYOUT_NAME = {_layout.sparse_coo: "Sparse", _layout.sparse_csr: "SparseCsr"}


class SparseData:
    """What a sparse tensor holds where a dense one holds its array: the metadata the engine and
    ``Tensor``'s shape methods read. Array operations on it raise, naming the layout."""
    __slots__ = ("shape", "dtype", "layout")

    def __init__(self, shape, np_dtype, layout):
        self.shape = tuple(shape)
        self.dtype = np_dtype
        self.layout = layout

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    def _unsupported(self):
        return RuntimeError(
            f"this operation is not supported on tensors of layout {self.layout} in Ember; "
            "convert with Tensor.to_dense() first")

    def __array__(self, dtype=None, copy=None):
        raise TypeError(f"can't convert {_LAYOUT_NAME[self.layout]} layout tensor to numpy. "
                        "Use Tensor.to_dense() first.")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        raise self._unsupported()

    def __array_function__(self, func, types, args, kwargs):
        raise self._unsupported()

    def __getattr__(self, name):
        raise AttributeError(f"'{name}' is not available on tensors of layout {self.layout}: "
                             "Ember computes this operation on strided tensors only; convert "
                             "with Tensor.to_dense() first")


def _wrap_sparse(layout, shape, dtype, like):
    t = _new(SparseTensor)
    t._data = SparseData(shape, dtype.np, layout)
    t._dtype = dtype
    t._device = like._device
    t._backend = like._backend
    t._requires_grad = False
    t.grad_fn = None
    t._layout = layout
    return t


def wrap_coo(indices, values, shape, dtype, like, coalesced=False):
    """A new COO tensor on ``like``'s device around int64 ``indices`` and ``values`` arrays."""
    t = _wrap_sparse(_layout.sparse_coo, shape, dtype, like)
    t._indices_data = indices
    t._values_data = values
    t._crow_data = None
    t._coalesced = bool(coalesced)
    return t


def wrap_csr(crow, col, values, shape, dtype, like):
    """A new CSR matrix on ``like``'s device around its three arrays."""
    t = _wrap_sparse(_layout.sparse_csr, shape, dtype, like)
    t._crow_data = crow
    t._indices_data = col
    t._values_data = values
    t._coalesced = True
    return t


def _index_tensor(array, like):
    from .._tensor import _wrap
    from .. import _dtype as dt
    return _wrap(array, dt.int64, like)


class SparseTensor(Tensor):
    """A ``Tensor`` of layout ``sparse_coo`` or ``sparse_csr`` (``type`` differs from PyTorch,
    where every layout is ``torch.Tensor``; ``isinstance(x, ember.Tensor)`` holds)."""
    __slots__ = ("_layout", "_indices_data", "_values_data", "_crow_data", "_coalesced")

    # ---- layout metadata -------------------------------------------------------------------
    @property
    def layout(self):
        return self._layout

    @property
    def is_sparse(self):
        return self._layout is _layout.sparse_coo

    @property
    def is_sparse_csr(self):
        return self._layout is _layout.sparse_csr

    def _layout_error(self, name, expected):
        kind = {"coo": "sparse coordinate", "csr": "sparse row compressed"}[expected]
        return RuntimeError(f"{name} expected {kind} tensor layout but got "
                            f"{_LAYOUT_NAME[self._layout]}")

    def sparse_dim(self):
        return self._indices_data.shape[0] if self.is_sparse else 2

    def dense_dim(self):
        return len(self._data.shape) - self.sparse_dim()

    def _nnz(self):
        return self._values_data.shape[0]

    def is_coalesced(self):
        if not self.is_sparse:
            raise self._layout_error("is_coalesced", "coo")
        return self._coalesced

    def _indices(self):
        if not self.is_sparse:
            raise self._layout_error("_indices", "coo")
        return _index_tensor(self._indices_data, self)

    def indices(self):
        if not self.is_sparse:
            raise self._layout_error("indices", "coo")
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return _index_tensor(self._indices_data, self)

    def _values(self):
        if not self.is_sparse:
            raise self._layout_error("_values", "coo")
        from .._tensor import _wrap
        return _wrap(self._values_data, self._dtype, self)

    def values(self):
        if self.is_sparse and not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return sparse_ops.values(self)

    def crow_indices(self):
        if not self.is_sparse_csr:
            raise self._layout_error("crow_indices", "csr")
        return _index_tensor(self._crow_data, self)

    def col_indices(self):
        if not self.is_sparse_csr:
            raise self._layout_error("col_indices", "csr")
        return _index_tensor(self._indices_data, self)

    @property
    def data(self):
        return self.detach()

    @data.setter
    def data(self, value):
        if not isinstance(value, SparseTensor) or value._layout is not self._layout:
            raise RuntimeError(f"data: a tensor of layout {self._layout} takes data of the same "
                               "layout")
        self._data = value._data
        self._dtype = value._dtype
        self._take_arrays(value)

    def _take_arrays(self, other):
        """Hold ``other``'s stored entries (a sparse tensor of this layout) as this tensor's."""
        self._indices_data = other._indices_data
        self._values_data = other._values_data
        self._crow_data = other._crow_data
        self._coalesced = other._coalesced

    # ---- what a sparse tensor does not have ------------------------------------------------
    def is_contiguous(self, memory_format=None):
        return False

    def stride(self, dim=None):
        raise RuntimeError(f"Tensors of layout {self._layout} do not have strides")

    def data_ptr(self):
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    def storage_offset(self):
        raise RuntimeError(f"Tensors of layout {self._layout} do not have storage offsets")

    def numpy(self, *, force=False):
        raise TypeError(f"can't convert {_LAYOUT_NAME[self._layout]} layout tensor to numpy. "
                        "Use Tensor.to_dense() first.")

    def item(self):
        return self.to_dense().item()

    def tolist(self):
        raise TypeError(f"tolist() is not supported for tensors of layout {self._layout}; "
                        "use Tensor.to_dense().tolist()")

    # ---- conversions -----------------------------------------------------------------------
    def to_dense(self, dtype=None, *, masked_grad=None):
        out = sparse_ops.to_dense(self, masked_grad)
        return out if dtype is None else out.to(dtype)

    def coalesce(self):
        if not self.is_sparse:
            raise self._layout_error("coalesce", "coo")
        return sparse_ops.coalesce(self)

    # to_sparse / to_sparse_coo / to_sparse_csr are Tensor's: construction handles both layouts

    def to(self, *args, **kwargs):
        return sparse_ops.to(self, *args, **kwargs)

    def double(self, memory_format=None):
        return sparse_ops.to(self, _dt.float64)

    def float(self, memory_format=None):
        return sparse_ops.to(self, _dt.float32)

    def half(self, memory_format=None):
        return sparse_ops.to(self, _dt.float16)

    def bfloat16(self, memory_format=None):
        return sparse_ops.to(self, _dt.bfloat16)

    def long(self, memory_format=None):
        return sparse_ops.to(self, _dt.int64)

    def int(self, memory_format=None):
        return sparse_ops.to(self, _dt.int32)

    def bool(self, memory_format=None):
        return sparse_ops.to(self, _dt.bool)

    def cpu(self, memory_format=None):
        return sparse_ops.to(self, "cpu")

    def type(self, dtype=None, non_blocking=False, **kwargs):
        if dtype is None:
            if not self.is_sparse:
                raise RuntimeError("Unimplemented backend SparseCsrCPU")
            from ..ops.creation import _TENSOR_TYPE_NAMES
            return "ember.sparse." + _TENSOR_TYPE_NAMES[self._dtype.name]
        return sparse_ops.to(self, dtype)

    def detach(self):
        out = sparse_ops.same_pattern(self, self._values_data)
        out._vc = self._ensure_vc()
        return out

    def clone(self, *, memory_format=None):
        return sparse_ops.clone(self)

    def __copy__(self):
        return self.detach()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        out = self.detach().clone()
        out._requires_grad = self._requires_grad
        memo[id(self)] = out
        return out

    def __reduce_ex__(self, protocol):
        raise TypeError(f"pickling tensors of layout {self._layout} is not supported by Ember")

    # ---- arithmetic --------------------------------------------------------------------------
    def mul(self, other):
        return sparse_ops.mul(self, other)

    multiply = mul
    __mul__ = mul
    __rmul__ = mul

    def div(self, other):
        return sparse_ops.div(self, other)

    divide = true_divide = __truediv__ = div

    def __neg__(self):
        return sparse_ops.mul(self, -1)

    neg = negative = __neg__

    def add(self, other, *, alpha=1):
        return sparse_ops.add(self, other, alpha=alpha)

    def __add__(self, other):
        return sparse_ops.add(self, other)

    def sub(self, other, *, alpha=1):
        return sparse_ops.add(self, other, alpha=-alpha)

    def __sub__(self, other):
        return sparse_ops.add(self, other, alpha=-1)

    def zero_(self):
        """No stored entries left (``optimizer.zero_grad(set_to_none=False)`` on a sparse
        gradient), as PyTorch's: the shape stays, the tensor counts as coalesced."""
        xp = self._backend.xp
        if self.is_sparse:
            self._indices_data = xp.zeros((self._indices_data.shape[0], 0), dtype=xp.int64)
        else:
            self._crow_data = xp.zeros_like(self._crow_data)
            self._indices_data = xp.zeros((0,), dtype=xp.int64)
        self._values_data = xp.zeros((0,) + self._values_data.shape[1:],
                                     dtype=self._values_data.dtype)
        self._coalesced = True
        self._bump_version()
        return self

    def mul_(self, other):
        """In place, as gradient clipping scales a sparse gradient: the pattern is kept."""
        result = sparse_ops.mul(self.detach(), other.detach() if isinstance(other, Tensor)
                                else other)
        if result._dtype is not self._dtype:
            from ..ops._dispatch import dtype_name as name
            raise RuntimeError(f"dtype of values ({name(result._dtype)}) must match dtype of "
                               f"sparse tensor ({name(self._dtype)})")
        self._values_data = result._values_data
        self._bump_version()
        return self

    def add_(self, other, *, alpha=1):
        """In place, as gradient accumulation needs: the result's arrays replace this tensor's."""
        result = sparse_ops.add(self.detach(), other.detach() if isinstance(other, Tensor)
                                else other, alpha=alpha)
        if not isinstance(result, SparseTensor) or result._layout is not self._layout:
            raise RuntimeError(f"add_: the result of adding {type(other).__name__} to a tensor of "
                               f"layout {self._layout} is not of that layout")
        self._take_arrays(result)
        self._bump_version()
        return self

    def sum(self, dim=None, keepdim=False, *, dtype=None):
        return sparse_ops.sum(self, dim, keepdim, dtype=dtype)

    def t(self):
        return sparse_ops.transpose(self, 0, 1, name="t")

    def transpose(self, dim0, dim1):
        return sparse_ops.transpose(self, dim0, dim1)

    def mm(self, mat2):
        return sparse_ops.mm(self, mat2)

    def matmul(self, other):
        return sparse_ops.mm(self, other, name="matmul")

    def __matmul__(self, other):
        if not isinstance(other, Tensor):
            return NotImplemented
        return sparse_ops.mm(self, other, name="matmul")

    def __rmatmul__(self, other):
        if not isinstance(other, Tensor):
            return NotImplemented
        return sparse_ops.dense_mm(other, self)

    def smm(self, mat2):
        return sparse_ops.smm(self, mat2)

    def __repr__(self, *, tensor_contents=None):
        return sparse_repr(self)

    __str__ = __repr__

    def __len__(self):
        if not self._data.shape:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __bool__(self):
        if self._data.size != 1:
            return Tensor.__bool__(self.to_dense())
        return bool(self.to_dense().item())


def _field(name, t):
    """``name=tensor(...)`` as torch prints one of a sparse tensor's member tensors."""
    prefix = f"{name}=tensor("
    values = t._backend.to_numpy(t._data)
    if values.size == 0:
        return f"{prefix}[], size={tuple(values.shape)})"
    return prefix + _body_str(values, t._dtype, len("tensor(") + len(prefix)) + ")"


def sparse_repr(t):
    indent = len("tensor(")
    suffixes = []
    if t._device.type != "cpu":
        suffixes.append(f"device='{t._device}'")
    suffixes.append(f"size={tuple(t._data.shape)}")
    suffixes.append(f"nnz={t._nnz()}")
    if t._dtype not in (_dt.get_default_dtype(), _dt.default_complex_dtype(), _dt.int64, _dt.bool):
        suffixes.append(f"dtype={t._dtype}")
    from .._tensor import _wrap
    values = _field("values", _wrap(t._values_data, t._dtype, t))
    if t.is_sparse:
        fields = [_field("indices", t._indices()), values]
    else:
        fields = [_field("crow_indices", t.crow_indices()), _field("col_indices", t.col_indices()),
                  values]
    body = "tensor(" + (",\n" + " " * indent).join(fields)
    suffixes.append(f"layout={t._layout}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{type(t.grad_fn).__name__}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes_forced(body, suffixes, indent, force_newline=t.is_sparse)


def _add_suffixes_forced(text, suffixes, indent, force_newline):
    # As torch's printer: a COO tensor starts its suffixes on a new line whatever their length.
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if force_newline or last_line_len + len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
            force_newline = False
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


from .. import _dtype as _dt  # noqa: E402
from ..ops import sparse as sparse_ops  # noqa: E402
