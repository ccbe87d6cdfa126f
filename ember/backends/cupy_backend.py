"""The CUDA backend, on CuPy: the Backend contract for NVIDIA GPUs.

``xp`` is ``cupy``, so the ops written against ``xp`` run on the GPU unchanged; this file holds
only what CuPy does differently from NumPy: host transfers, the scatter primitive
(``cupyx.scatter_add``: CuPy's ``ufunc.at`` exists only for add, subtract, maximum, minimum and
the bitwise ufuncs), the special functions (``cupyx.scipy.special``), and the device each array
lives on. Every CuPy call runs on CuPy's *current* device, so the backend for ``cuda:N`` makes
device N current around the calls it makes itself; ops that compute on ``cuda:1`` tensors while
another device is current are CuPy's to resolve (peer access), as they would be for a CuPy user.

The modules are looked up when the backend is built, not imported at module level: CuPy is an
optional extra (``pip install 'ember[cuda]'``), and the CuPy conformance device of the test
suite builds this same class over its strict, NumPy-backed stand-in for CuPy.
"""
import functools
import importlib

from .base import Backend, BackendUnavailableError


@functools.lru_cache(maxsize=None)
def import_cupy_or_none():
    """``cupy`` where it is installed, else None (imported on first use: CuPy takes a second
    to import, and most scripts never touch CUDA). Cached: without CuPy every
    ``ember.cuda.is_available()`` would search sys.path again."""
    try:
        return importlib.import_module("cupy")
    except ImportError:
        return None


def _import_cupy():
    try:
        cupy = importlib.import_module("cupy")
        cupyx = importlib.import_module("cupyx")
        importlib.import_module("cupyx.scipy.special")
    except ImportError as exc:
        raise BackendUnavailableError(
            "CUDA is not available: Ember's CUDA backend needs CuPy, which is not installed "
            "(pip install 'ember[cuda]')") from exc
    return cupy, cupyx


def device_count(cupy):
    """How many CUDA devices CuPy sees; 0 where the driver or a device is missing (CuPy
    raises then, as torch.cuda.device_count() does not)."""
    try:
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:  # CUDARuntimeError without a driver; anything else means "none" too
        return 0


class CupyBackend(Backend):
    device_type = "cuda"

    def __init__(self, index=0, modules=None):
        super().__init__(index)
        cupy, cupyx = modules if modules is not None else _import_cupy()
        count = device_count(cupy)
        if count == 0:
            raise BackendUnavailableError(
                "CUDA is not available: CuPy is installed but finds no CUDA device (is the "
                "NVIDIA driver loaded?)")
        if not 0 <= index < count:
            raise RuntimeError(f"CUDA error: invalid device ordinal (cuda:{index} requested, "
                               f"{count} device{'s' if count != 1 else ''} present)")
        self.xp = cupy
        self._cupyx = cupyx
        self._device = cupy.cuda.Device(index)

    # -- memory -----------------------------------------------------------------------------
    def asarray(self, data, np_dtype=None, copy=None):
        with self._device:
            if copy:
                return self.xp.array(data, dtype=np_dtype, copy=True)
            return self.xp.asarray(data, dtype=np_dtype)

    def to_numpy(self, array):
        if not isinstance(array, self.xp.ndarray):  # already on the host
            return array
        return self.xp.asnumpy(array)

    def data_ptr(self, array):
        return array.data.ptr

    def synchronize(self):
        self._device.synchronize()

    # -- compute primitives ----------------------------------------------------------------
    def matmul(self, a, b):
        # Low-precision products stay in their dtype: cuBLAS's half-precision GEMMs accumulate
        # in float32 (PyTorch's CUDA default too); the GPU check compares them with torch CUDA.
        return self.xp.matmul(a, b)

    def index_add(self, target, index, values):
        self._cupyx.scatter_add(target, index, values)

    def scatter_reduce(self, target, index, values, reduce):
        xp = self.xp
        if target.dtype != xp.bool_:
            if reduce == "sum":
                return self._cupyx.scatter_add(target, index, values)
            if reduce in ("amax", "amin"):
                scatter = self._cupyx.scatter_max if reduce == "amax" else self._cupyx.scatter_min
                return scatter(target, index, values)
        self._scatter_in_rounds(target, index, values, reduce)

    def _scatter_in_rounds(self, target, index, values, reduce):
        """The reductions CuPy has no atomic scatter for (a product; or/and on bools): sort
        the targets, then combine in rounds where each round holds at most one value per
        target, so plain indexed writes suffice. The rounds number the largest multiplicity
        of one target (not the element count), and each is one vectorised gather and write."""
        xp = self.xp
        if values.size == 0:
            return
        if target.ndim == 0:
            flat_index = xp.zeros(values.size, dtype=xp.int64)
        else:
            flat_index = xp.ravel_multi_index(
                tuple(xp.broadcast_to(i, values.shape).reshape(-1) for i in index), target.shape)
        flat_target = xp.ascontiguousarray(target).reshape(-1)
        order = xp.argsort(flat_index, kind="stable")
        flat_index, flat_values = flat_index[order], values.reshape(-1)[order]
        first = xp.concatenate((xp.ones(1, dtype=xp.bool_), flat_index[1:] != flat_index[:-1]))
        segment = xp.cumsum(first) - 1
        rank = xp.arange(flat_index.size) - xp.flatnonzero(first)[segment]
        is_bool = target.dtype == xp.bool_
        combine = {"prod": xp.logical_and if is_bool else xp.multiply, "sum": xp.logical_or,
                   "amax": xp.logical_or, "amin": xp.logical_and}[reduce]
        for r in range(int(rank.max()) + 1):  # one host sync: the number of rounds
            chosen = rank == r
            where = flat_index[chosen]
            flat_target[where] = combine(flat_target[where], flat_values[chosen])
        target[...] = flat_target.reshape(target.shape)

    def erf(self, x):
        return self._cupyx.scipy.special.erf(x)

    def erfc(self, x):
        return self._cupyx.scipy.special.erfc(x)

    def erfinv(self, x):
        return self._cupyx.scipy.special.erfinv(x)

    def sparse(self):
        try:
            return importlib.import_module("cupyx.scipy.sparse")
        except ImportError as exc:  # pragma: no cover - part of every CuPy wheel
            raise ImportError("Ember's sparse CUDA tensors compute on cupyx.scipy.sparse, "
                              "which this CuPy lacks") from exc

    def __repr__(self):
        return f"<CupyBackend cuda:{self.index}>"
