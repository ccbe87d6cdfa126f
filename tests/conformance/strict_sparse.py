"""``cupyx.scipy.sparse`` for the CuPy conformance device: CuPy 14.2's COO/CSR/CSC matrices over
SciPy's, with CuPy's strictness. A conformance device, not a GPU.

What Ember's sparse tensors call (``backend.sparse()`` in ember/ops/sparse.py): the
``coo_matrix((data, (row, col)), shape=)`` and ``csr_matrix((data, indices, indptr), shape=)``
constructors, ``tocsr``/``tocoo``/``tocsc``, ``.T``/``transpose``, ``@``/``dot`` with a dense
device array. Refused as CuPy refuses them (its own checks, in cupyx/scipy/sparse/_coo.py and
_compressed.py): host NumPy arrays as the parts (CuPy's ``isdense`` is ``cupy.ndarray`` only),
data dtypes other than bool, float32, float64, complex64 and complex128 (ValueError "Only bool,
float32, float64, complex64 and complex128 are supported"), and a product with a host array.
Not mimicked: cuSPARSE's summation order (the products are SciPy's), index dtype choice beyond
int32.
"""
import numpy as np

from .strict_cupy import DeviceArray, VERSION, _wrap

_DATA_DTYPES = frozenset(np.dtype(c) for c in "?fdFD")
_DTYPE_ERROR = "Only bool, float32, float64, complex64 and complex128 are supported"


def _scipy():
    import scipy.sparse
    return scipy.sparse


def _device_part(x, message):
    if type(x) is not DeviceArray:
        raise ValueError(message)
    return x._a


def _check_dtype(dtype):
    if np.dtype(dtype) not in _DATA_DTYPES:
        raise ValueError(_DTYPE_ERROR)


class _Matrix:
    """The part every format shares: a SciPy matrix inside, device arrays outside."""
    format = None

    def __init__(self, arg1, shape=None, dtype=None, copy=False):
        if isinstance(arg1, _Matrix):
            matrix = arg1._m.asformat(self.format, copy=copy)
        else:
            matrix = self._build(arg1, shape, copy)
        if dtype is not None:
            _check_dtype(dtype)
            matrix = matrix.astype(dtype)
        _check_dtype(matrix.dtype)
        self._m = matrix

    @classmethod
    def _from(cls, matrix):
        out = cls.__new__(cls)
        out._m = matrix
        return out

    shape = property(lambda self: self._m.shape)
    dtype = property(lambda self: self._m.dtype)
    nnz = property(lambda self: self._m.nnz)
    ndim = property(lambda self: 2)
    data = property(lambda self: _wrap(self._m.data))

    @property
    def T(self):
        return self.transpose()

    def transpose(self, axes=None, copy=False):
        if axes is not None:
            raise ValueError("Sparse matrices do not support an 'axes' parameter because "
                             "swapping dimensions is the only logical permutation.")
        return _wrap_matrix(self._m.transpose(copy=copy))

    def tocoo(self, copy=False):
        return coo_matrix._from(self._m.tocoo(copy=copy))

    def tocsr(self, copy=False):
        return csr_matrix._from(self._m.tocsr(copy=copy))

    def tocsc(self, copy=False):
        return csc_matrix._from(self._m.tocsc(copy=copy))

    def toarray(self, order=None, out=None):
        dense = self._m.toarray(order=order)
        if out is not None:
            out._a[...] = dense
            return out
        return _wrap(dense)

    def todense(self, order=None, out=None):
        return self.toarray(order, out)

    def astype(self, dtype, copy=True):
        _check_dtype(dtype)
        return _wrap_matrix(self._m.astype(dtype, copy=copy))

    def copy(self):
        return _wrap_matrix(self._m.copy())

    def get(self, stream=None):
        return self._m.copy()  # cupyx's get: the scipy.sparse matrix on the host

    def sum(self, axis=None, dtype=None, out=None):
        return _wrap(np.asarray(self._m.sum(axis=axis, dtype=dtype)))

    def multiply(self, other):
        if isinstance(other, _Matrix):
            return _wrap_matrix(self._m.multiply(other._m))
        return _wrap_matrix(_scipy().csr_matrix(self._m.multiply(
            _device_part(other, "cupyx.scipy.sparse multiplies device arrays only"))))

    def dot(self, other):
        if isinstance(other, _Matrix):
            return _wrap_matrix(self._m @ other._m)
        if type(other) is not DeviceArray:
            if isinstance(other, np.ndarray):
                raise TypeError(f"a host numpy.ndarray was passed to CuPy {VERSION}'s sparse "
                                f"product, which takes cupy.ndarray (CuPy conformance device)")
            return _wrap_matrix(self._m * other)  # a scalar
        return _wrap(np.asarray(self._m @ other._a))

    def __matmul__(self, other):
        return self.dot(other)

    def __rmatmul__(self, other):
        if type(other) is not DeviceArray:
            return NotImplemented
        return _wrap(np.asarray(other._a @ self._m))

    def __repr__(self):
        return f"<CuPy {VERSION} conformance {type(self).__name__} {self.shape}, nnz={self.nnz}>"


class coo_matrix(_Matrix):
    """``cupyx.scipy.sparse.coo_matrix(arg1, shape=None, dtype=None, copy=False)``."""
    format = "coo"

    def _build(self, arg1, shape, copy):
        if not (isinstance(arg1, tuple) and len(arg1) == 2):
            raise TypeError("invalid input format (the CuPy conformance device builds COO "
                            "matrices from (data, (row, col)) or another sparse matrix)")
        data, (row, col) = arg1
        message = "row, column, and data arrays must be 1-D"
        data, row, col = (_device_part(x, message) for x in (data, row, col))
        if not (data.ndim == row.ndim == col.ndim == 1):
            raise ValueError(message)
        if not len(data) == len(row) == len(col):
            raise ValueError("row, column, and data array must all be the same length")
        _check_dtype(data.dtype)
        return _scipy().coo_matrix((data, (row, col)), shape=shape, copy=copy)

    row = property(lambda self: _wrap(self._m.row))
    col = property(lambda self: _wrap(self._m.col))

    def sum_duplicates(self):
        self._m.sum_duplicates()


class _Compressed(_Matrix):
    def _build(self, arg1, shape, copy):
        if not (isinstance(arg1, tuple) and len(arg1) == 3):
            raise TypeError("invalid input format (the CuPy conformance device builds "
                            "compressed matrices from (data, indices, indptr))")
        message = "data, indices, and indptr should be 1-D"
        data, indices, indptr = (_device_part(x, message) for x in arg1)
        if not (data.ndim == indices.ndim == indptr.ndim == 1):
            raise ValueError(message)
        _check_dtype(data.dtype)
        build = _scipy().csr_matrix if self.format == "csr" else _scipy().csc_matrix
        return build((data, indices, indptr), shape=shape, copy=copy)

    indices = property(lambda self: _wrap(self._m.indices))
    indptr = property(lambda self: _wrap(self._m.indptr))
    has_canonical_format = property(lambda self: self._m.has_canonical_format)

    def sum_duplicates(self):
        self._m.sum_duplicates()


class csr_matrix(_Compressed):
    """``cupyx.scipy.sparse.csr_matrix(arg1, shape=None, dtype=None, copy=False)``."""
    format = "csr"


class csc_matrix(_Compressed):
    """``cupyx.scipy.sparse.csc_matrix(arg1, shape=None, dtype=None, copy=False)``."""
    format = "csc"


def _wrap_matrix(matrix):
    return {"coo": coo_matrix, "csr": csr_matrix, "csc": csc_matrix}[matrix.format]._from(matrix)


def issparse(x):
    return isinstance(x, _Matrix)


isspmatrix = issparse
