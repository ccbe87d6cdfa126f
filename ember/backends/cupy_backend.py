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

import ml_dtypes

from .base import Backend, BackendUnavailableError, CudaNotCompiledError


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
        if import_cupy_or_none() is None:  # cached: a missing CuPy is looked for once
            raise ImportError("No module named 'cupy'")
        cupy = importlib.import_module("cupy")
        cupyx = importlib.import_module("cupyx")
        importlib.import_module("cupyx.scipy.special")
    except ImportError as exc:
        raise CudaNotCompiledError(
            "Torch not compiled with CUDA enabled: Ember's CUDA backend needs CuPy, which is "
            "not installed (pip install 'ember[cuda]')") from exc
    return cupy, cupyx


def device_count(cupy):
    """How many CUDA devices CuPy sees; 0 where the driver or a device is missing (CuPy
    raises then, as torch.cuda.device_count() does not)."""
    try:
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:  # CUDARuntimeError without a driver; anything else means "none" too
        return 0


_BFLOAT16 = ml_dtypes.bfloat16
_CUPY_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32",
                "float64", "complex64", "complex128")


def _dtypes_of(cupy):
    """The dtypes of Ember's that this CuPy has arrays of, and what a missing one lacks.
    bfloat16 (``ml_dtypes.bfloat16``, Ember's storage for it) arrays came with CuPy 14; even
    there only some kernels have bfloat16 loops, and an op without one raises CuPy's own
    TypeError. A CuPy that does not say its version is taken to be the 14.x this backend is
    written against."""
    import numpy as np
    import ml_dtypes
    dtypes = {np.dtype(name) for name in _CUPY_DTYPES}
    version = str(getattr(cupy, "__version__", "14"))
    major = int(version.split(".")[0]) if version.split(".")[0].isdigit() else 14
    if major >= 14:
        return frozenset(dtypes | {np.dtype(ml_dtypes.bfloat16)}), ""
    return frozenset(dtypes), (f"CuPy {version} has no bfloat16 arrays: CuPy 14 holds them "
                               f"as ml_dtypes.bfloat16")


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
        self.supported_dtypes, self.dtype_support_note = _dtypes_of(cupy)
        # Before the first tensor: the peaks of ember.cuda.max_memory_allocated and torch's
        # OutOfMemoryError come from this allocator (ember/cuda/memory.py).
        from ..cuda.memory import install_tracking_allocator
        install_tracking_allocator(cupy)

    def device_count(self):
        return device_count(self.xp)

    # -- memory -----------------------------------------------------------------------------
    def asarray(self, data, np_dtype=None, copy=None):
        with self._device:
            # blocking=True: CuPy's default queues the copy from host memory and returns before
            # it has read ``data`` (see "host transfers" below).
            if copy:
                return self.xp.array(data, dtype=np_dtype, copy=True, blocking=True)
            return self.xp.asarray(data, dtype=np_dtype, blocking=True)

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
        if a.dtype.char in "fF" or b.dtype.char in "fF":
            self._apply_float32_matmul_precision()
        if a.dtype == _BFLOAT16:
            if CupyBackend._bfloat16_gemm:
                try:
                    return self.xp.matmul(a, b)
                except TypeError:
                    # This CuPy has no bfloat16 GEMM (the CuPy conformance device refuses
                    # it: whether CuPy 14.2 has one is not established without a GPU).
                    CupyBackend._bfloat16_gemm = False
            # Multiply in float32 and round once: what a bfloat16 GEMM accumulating in
            # float32 (cuBLAS's, torch's) gives.
            f32 = self.xp.float32
            return self.xp.matmul(a.astype(f32), b.astype(f32)).astype(a.dtype)
        return self.xp.matmul(a, b)

    _bfloat16_gemm = True  # until CuPy refuses one

    def _apply_float32_matmul_precision(self):
        """Make CuPy's float32 GEMMs follow ``ember.set_float32_matmul_precision`` (and its
        spelling ``ember.backends.cuda.matmul.allow_tf32``): "highest" computes in float32,
        "high" and "medium" let cuBLAS use TF32 tensor cores, as torch's CUDA matmuls do.
        CuPy keeps the choice per process (``cupy._core.set_compute_type``; below compute
        capability 8.0 it warns and stays in float32), so it is set only when it changes."""
        from .._type_info_and_switches import get_float32_matmul_precision
        precision = get_float32_matmul_precision()
        if precision != CupyBackend._applied_precision.get(id(self.xp)):
            linalg = self.xp._core._routines_linalg
            compute_type = (linalg.COMPUTE_TYPE_DEFAULT if precision == "highest"
                            else linalg.COMPUTE_TYPE_TF32)
            with self._device:
                self.xp._core.set_compute_type(self.xp.float32, compute_type)
            CupyBackend._applied_precision[id(self.xp)] = precision

    _applied_precision = {}  # id(CuPy module) -> the precision its compute type was set for

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

    def sliding_view(self, array, shape, strides):
        # CuPy's as_strided has no ``writeable``: its arrays have no read-only flag, so the
        # windows are an ordinary view that the ops only read.
        return self.xp.lib.stride_tricks.as_strided(array, shape=shape, strides=strides)

    def cumulative(self, name, array, axis):
        xp = self.xp
        if array.size == 0:
            return array.copy()
        if name == "add":  # CuPy's accumulate for these two, under NumPy's dtype rules
            return xp.cumsum(array, axis=axis)
        if name == "multiply":
            return xp.cumprod(array, axis=axis)
        return self._log_step_scan(getattr(xp, name), array, axis)

    @staticmethod
    def _log_step_scan(combine, array, axis):
        """An inclusive scan by Hillis and Steele's log-step method, for the associative
        ufuncs CuPy has no ``accumulate`` for (maximum, minimum, logaddexp): step k combines
        every element with the one 2**k before it, so ceil(log2(n)) whole-array steps replace
        n - 1 sequential ones. Each step's right side is a new array, read before the write."""
        out = array.copy()
        n = out.shape[axis]
        before = (slice(None),) * (axis % out.ndim)
        shift = 1
        while shift < n:
            later, earlier = before + (slice(shift, None),), before + (slice(None, n - shift),)
            out[later] = combine(out[later], out[earlier])
            shift *= 2
        return out

    def erf(self, x):
        return self._cupyx.scipy.special.erf(x)

    def erfc(self, x):
        return self._cupyx.scipy.special.erfc(x)

    def erfinv(self, x):
        return self._cupyx.scipy.special.erfinv(x)

    # -- random numbers ------------------------------------------------------------------------
    # Samplers draw here, from this device's Philox generators (ember/_random.py), with the
    # contract's element-wise random_bits run on this device.
    draws_on_device = True

    def random_bits(self, key, first_block, blocks):
        with self._device:
            return super().random_bits(key, first_block, blocks)

    # -- host transfers and pinned memory ------------------------------------------------------
    # A synchronous copy passes ``blocking=True``: CuPy's own default queues a host-to-device
    # copy on the current stream and returns at once, where torch's ``non_blocking=False`` has
    # finished when it returns. Only a copy from page-locked memory is queued (non_blocking),
    # as in torch: from pageable memory the driver has to stage it synchronously anyway.
    # Tensors on this device are pickled by value (no CUDA IPC handles yet), so their memory is
    # not shared with other processes.
    dlpack_device_type = 2  # kDLCUDA
    pins_host_memory = True

    def from_host(self, host, np_dtype, non_blocking=False):
        blocking = not (non_blocking and self.is_pinned(host))
        with self._device:
            return self.xp.array(host, dtype=np_dtype, copy=True, blocking=blocking)

    def to_host(self, array, non_blocking=False):
        if not isinstance(array, self.xp.ndarray):
            return array.copy()
        with self._device:
            if not non_blocking:
                return array.get()
            # torch's non_blocking device-to-host copy lands in page-locked memory, queued on
            # the current stream; the contiguous source is CuPy's requirement for ``out``.
            array = self.xp.ascontiguousarray(array)
            out = self._cupyx.empty_pinned(array.shape, dtype=array.dtype)
            return array.get(stream=self.xp.cuda.get_current_stream(), out=out, blocking=False)

    def pin_memory(self, host):
        out = self._cupyx.empty_pinned(host.shape, dtype=host.dtype)
        out[...] = host
        return out

    def is_pinned(self, host):
        if host.size == 0:
            return False  # an empty array has no memory to be page-locked
        runtime = self.xp.cuda.runtime
        # The driver answers from the pointer itself: memory pinned by CuPy's pool, by
        # cudaHostRegister or by another library (torch) all count, as torch's is_pinned.
        return runtime.pointerGetMemoryType(host.ctypes.data) == runtime.memoryTypeHost

    def sparse(self):
        try:
            return importlib.import_module("cupyx.scipy.sparse")
        except ImportError as exc:  # pragma: no cover - part of every CuPy wheel
            raise ImportError("Ember's sparse CUDA tensors compute on cupyx.scipy.sparse, "
                              "which this CuPy lacks") from exc

    def __repr__(self):
        return f"<CupyBackend cuda:{self.index}>"
