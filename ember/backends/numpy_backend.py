"""The CPU backend, on NumPy: the reference implementation of the Backend contract."""
import functools
import math
import warnings

import numpy as np
import ml_dtypes

from . import _cblas, _mkl
from .base import Backend
from ._malloc import keep_freed_memory_for_reuse

# PyTorch never warns about floating-point exceptions (log(0) is -inf, 0/0 is nan). Silence
# NumPy's warnings for calls made from Ember's own modules only: a warnings filter costs nothing
# until a warning fires, where np.errstate would cost ~1 us per op, and the user's own NumPy
# code keeps its warnings.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"ember(\.|$)",
                        message=r"(divide by zero|invalid value|overflow|underflow) encountered")

_LOW_PRECISION = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))
_F32 = np.dtype(np.float32)
_BLAS_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


@functools.lru_cache(maxsize=None)
def _scipy_special():
    """``scipy.special`` where SciPy is installed, else None. SciPy is optional: it makes
    erf/erfinv vectorised C instead of a Python loop. Imported on the first call, not with
    Ember: importing it costs more than all of ``import ember`` (~0.3 s)."""
    try:
        from scipy import special
    except ImportError:  # pragma: no cover - exercised only where SciPy is absent
        return None
    return special


def _erfinv_scalar(y):
    # Giles' single-precision approximation, then two Newton steps on math.erf for double accuracy.
    if y <= -1.0:
        return -math.inf if y == -1.0 else math.nan
    if y >= 1.0:
        return math.inf if y == 1.0 else math.nan
    w = -math.log((1.0 - y) * (1.0 + y))
    if w < 5.0:
        w -= 2.5
        p = 2.81022636e-08
        for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                  -0.00417768164, 0.246640727, 1.50140941):
            p = c + p * w
    else:
        w = math.sqrt(w) - 3.0
        p = -0.000200214257
        for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                  0.00943887047, 1.00167406, 2.83297682):
            p = c + p * w
    x = p * y
    for _ in range(2):
        x -= (math.erf(x) - y) / (2.0 / math.sqrt(math.pi) * math.exp(-x * x))
    return x


_SCATTER_UFUNC = {("sum", False): np.add, ("prod", False): np.multiply,
                  ("amax", False): np.maximum, ("amin", False): np.minimum,
                  ("sum", True): np.logical_or, ("prod", True): np.logical_and,
                  ("amax", True): np.logical_or, ("amin", True): np.logical_and}

_erf_loop = np.vectorize(math.erf, otypes=[np.float64])
_erfc_loop = np.vectorize(math.erfc, otypes=[np.float64])
_erfinv_loop = np.vectorize(_erfinv_scalar, otypes=[np.float64])


def _few_rows_times_transposed(a, b):
    """Whether ``a @ b`` is a few rows times a transposed matrix (``x @ W.T``, a Linear at a
    small batch), which OpenBLAS's gemm runs up to 2.4x slower than the same product written
    ``(W @ x.T).T`` (measured on an AMD EPYC, OpenBLAS 0.3.31: 784x512 at 8 rows 143 vs 78 us,
    ``benchmarks/blas_small_batch.py``); from about 64 rows the two are even."""
    m = a.shape[0]
    return (2 <= m <= 48 and b.flags.f_contiguous and not b.flags.c_contiguous
            and a.dtype in _BLAS_FLOATS and b.dtype == a.dtype
            and a.shape[1] * b.shape[1] >= (262144 if m == 2 else 65536))


@functools.lru_cache(maxsize=None)
def _mkl_gemm():
    """MKL's gemm where it is installed and chosen (``backends/_mkl.py``), else None: looked up
    on the first matrix product, not at import."""
    return _mkl.gemm if _mkl.active() else None


def memory_owner(array):
    """The array at the root of NumPy's view chain: the one whose buffer ``array`` views (what
    a checkpoint writes as one storage)."""
    root = array
    while True:
        base = root.base
        if isinstance(base, np.ndarray):
            root = base
        elif base is not None and isinstance(getattr(base, "base", None), np.ndarray):
            root = base.base  # as_strided's intermediate holder
        else:
            return root


def array_address(array):
    return array.__array_interface__["data"][0]


class NumpyBackend(Backend):
    device_type = "cpu"
    xp = np

    def __init__(self, index=0):
        super().__init__(index)
        keep_freed_memory_for_reuse()

    def asarray(self, data, np_dtype=None, copy=None):
        return np.array(data, dtype=np_dtype, copy=copy) if copy else np.asarray(data, dtype=np_dtype)

    def to_numpy(self, array):
        return array

    def data_ptr(self, array):
        return array.__array_interface__["data"][0]

    def matmul(self, a, b):
        # A stack of rows times one matrix, (..., T, K) @ (K, N), is one matrix product: NumPy
        # would otherwise make one BLAS call per leading index, many times slower for the
        # Linear-on-sequences products of RNNs and Transformers.
        if a.ndim > 2 and b.ndim == 2:
            rows = a.reshape(-1, a.shape[-1])
            return self.matmul(rows, b).reshape(a.shape[:-1] + (b.shape[-1],))
        # NumPy has no BLAS path for float16/bfloat16 (bfloat16 matmul even returns float32):
        # multiply in float32 and round back, which is what PyTorch's CPU kernels do.
        if a.dtype in _LOW_PRECISION:
            return np.matmul(a.astype(_F32), b.astype(_F32)).astype(a.dtype)
        if a.ndim == 2 and b.ndim == 2:
            if _mkl_gemm() is not None:
                product = _mkl.gemm(a, b)
                if product is not None:
                    return product
            elif _few_rows_times_transposed(a, b):
                return np.ascontiguousarray(np.matmul(b.T, a.T).T)
        return np.matmul(a, b)

    def matmul_into(self, out, a, b, accumulate=False):
        if _mkl_gemm() is not None and a.dtype not in _LOW_PRECISION:
            if _mkl.gemm(a, b, out, accumulate) is not None:
                return
        elif a.ndim == 2 and b.ndim == 2 and _few_rows_times_transposed(a, b):
            product = np.matmul(b.T, a.T).T
            if accumulate:
                out += product
            else:
                out[...] = product
            return
        if accumulate:
            out += self.matmul(a, b)
        elif a.dtype in _LOW_PRECISION:
            out[...] = self.matmul(a, b)
        else:
            np.matmul(a, b, out=out)

    def axpby(self, y, alpha, x, beta=1.0):
        # One threaded BLAS pass (MKL's where it computes the products, else NumPy's own
        # OpenBLAS) where both arrays are whole contiguous float32/float64 blocks; elsewhere
        # the reference's ufuncs.
        dtype = y.dtype
        if (x.dtype == dtype and y.flags.c_contiguous and x.flags.c_contiguous
                and y.flags.writeable and x.shape == y.shape and y.size
                and not np.may_share_memory(x, y)):
            if _mkl_gemm() is not None and _mkl.axpby(y, alpha, x, beta):
                return
            if beta == 1.0:
                fn = _cblas.lookup("axpy", dtype)
                if fn is not None:
                    fn(y.size, alpha, x.ctypes.data, 1, y.ctypes.data, 1)
                    return
            else:
                fn = _cblas.lookup("axpby", dtype)
                if fn is not None:
                    fn(y.size, alpha, x.ctypes.data, 1, beta, y.ctypes.data, 1)
                    return
        super().axpby(y, alpha, x, beta)

    def index_add(self, target, index, values):
        np.add.at(target, index, values)

    def scatter_reduce(self, target, index, values, reduce):
        _SCATTER_UFUNC[reduce, target.dtype == np.bool_].at(target, index, values)

    def sliding_view(self, array, shape, strides):
        return np.lib.stride_tricks.as_strided(array, shape=shape, strides=strides,
                                               writeable=False)

    def cumulative(self, name, array, axis):
        if array.size == 0:
            return array.copy()
        return getattr(np, name).accumulate(array, axis=axis)

    def erf(self, x):
        special = _scipy_special()
        if special is not None:
            return special.erf(x)
        return _erf_loop(x).astype(x.dtype, copy=False)

    def erfc(self, x):
        special = _scipy_special()
        if special is not None:
            return special.erfc(x)
        return _erfc_loop(x).astype(x.dtype, copy=False)

    def erfinv(self, x):
        special = _scipy_special()
        if special is not None:
            return special.erfinv(x)
        return _erfinv_loop(x).astype(x.dtype, copy=False)

    # -- host transfers ----------------------------------------------------------------------
    # The host is this device: a transfer is a copy, and memory is shared across processes
    # array by array (ember/multiprocessing/reductions.py decides), never pinned by the CPU
    # itself (the accelerator's backend pins host memory).
    dlpack_device_type = 1  # kDLCPU

    def to_host(self, array, non_blocking=False):
        return np.array(array, copy=True)

    def sparse(self):
        # Imported here, not at module level: SciPy is an optional extra and slow to import.
        try:
            import scipy.sparse
        except ImportError as exc:
            raise ImportError("Ember's sparse tensors compute on SciPy (scipy.sparse), which is "
                              "not installed: pip install 'ember[sparse]'") from exc
        return scipy.sparse
