"""The contract every backend implements.

A backend owns one device's arrays. Ops reach it as ``tensor._backend`` and use two things:

* ``xp`` — an array namespace with NumPy's API (``numpy`` for the CPU, ``cupy`` for CUDA).
  Element-wise maths, reductions and shape changes are written once against ``xp``.
* The primitives below, for everything where array libraries differ or where NumPy alone gives a
  wrong or slow answer (low-precision matmul, scatter-add, special functions, host
  transfer). A backend for new hardware overrides these and supplies its ``xp``.

The NumPy backend is the reference implementation of this contract.
"""


class BackendUnavailableError(RuntimeError):
    """Raised when a device type is known but its array library or hardware is missing."""


class CudaNotCompiledError(BackendUnavailableError, AssertionError):
    """CUDA asked for where CuPy is not installed. torch's CPU build raises
    ``AssertionError("Torch not compiled with CUDA enabled")`` there, and scripts catch that
    type; this is both that and a BackendUnavailableError."""


class Backend:
    #: the device type this backend serves, e.g. "cpu"
    device_type = None
    #: the NumPy-compatible array namespace
    xp = None
    #: the NumPy dtypes this backend has arrays of (a frozenset), or None for every dtype
    #: Ember has; what a missing one lacks is said by ``dtype_support_note``
    supported_dtypes = None
    dtype_support_note = ""

    def __init__(self, index=0):
        self.index = index

    # -- memory -----------------------------------------------------------------------------
    def asarray(self, data, np_dtype=None, copy=None):
        """Make a device array from host data (nested lists, scalars, NumPy arrays)."""
        raise NotImplementedError

    def to_numpy(self, array):
        """A host NumPy array with the contents of ``array`` (no copy where already on the host)."""
        raise NotImplementedError

    def data_ptr(self, array):
        """The address of ``array``'s first element; used for strides/storage offsets."""
        raise NotImplementedError

    def synchronize(self):
        """Wait for queued work on this device (a no-op for synchronous backends)."""

    def supports_dtype(self, np_dtype):
        return self.supported_dtypes is None or np_dtype in self.supported_dtypes

    def check_dtype(self, np_dtype, what):
        """Raise torch's TypeError for a dtype this device cannot hold, naming the device,
        ``what`` was asked (the op) and why, before the array library fails on its own."""
        if not self.supports_dtype(np_dtype):
            raise TypeError(f"{what}: {getattr(np_dtype, 'name', np_dtype)} is not supported on "
                            f"{self.device_type}:{self.index}"
                            + (f" ({self.dtype_support_note})" if self.dtype_support_note else ""))

    # -- compute primitives --------------------------------------------------------------------
    def matmul(self, a, b):
        raise NotImplementedError

    def matmul_into(self, out, a, b, accumulate=False):
        """``out[...] = a @ b`` (``out += a @ b`` with ``accumulate``) for 2-D operands, ``out``
        not overlapping them: the recurrent layers' per-step products, which a backend may do
        with no temporary (the NumPy backend through MKL's gemm)."""
        product = self.matmul(a, b)
        if accumulate:
            out += product
        else:
            out[...] = product

    def index_add(self, target, index, values):
        """``target[index] += values`` with repeated indices accumulating (scatter-add)."""
        raise NotImplementedError

    def scatter_reduce(self, target, index, values, reduce):
        """``target[index] = reduce(target[index], values)`` in place, repeated indices
        combining: ``reduce`` is "sum", "prod", "amax" or "amin" (for bool arrays: or, and,
        or, and). ``index`` is a tuple of integer arrays (or ``()`` for a 0-d target)."""
        raise NotImplementedError

    def sliding_view(self, array, shape, strides):
        """A strided view of ``array`` whose elements may overlap (convolution and pooling
        windows), for reading only: where the library can (NumPy) the view is read-only, since
        a write through overlapping windows would corrupt the input."""
        raise NotImplementedError

    def cumulative(self, name, array, axis):
        """The inclusive scan ``numpy.<name>.accumulate(array, axis)`` for ``name`` in "add",
        "multiply", "maximum", "minimum", "logaddexp", with NumPy's result dtype (``array``'s,
        but bools and small integers summed or multiplied in int64, as ``cumsum`` does) and
        its NaN propagation (what torch's cummax/cummin/logcumsumexp need). ``array`` has at
        least one dimension; an empty one comes back as a copy."""
        raise NotImplementedError

    def erf(self, x):
        raise NotImplementedError

    def erfc(self, x):
        """``1 - erf(x)`` without the cancellation where ``erf(x)`` is near 1."""
        raise NotImplementedError

    def erfinv(self, x):
        raise NotImplementedError

    def axpby(self, y, alpha, x, beta=1.0):
        """``y = alpha * x + beta * y`` in place, for ``x`` and ``y`` of one shape and dtype
        (the optimizers' running averages and updates). This reference is two passes and a
        temporary; a backend may do it in one (the NumPy backend: BLAS ``axpby``/``axpy``)."""
        xp = self.xp
        if beta != 1.0:
            xp.multiply(y, beta, out=y)
        xp.add(y, x if alpha == 1.0 else xp.multiply(x, alpha), out=y)

    # -- random numbers ------------------------------------------------------------------------
    #: True where samplers on this device draw on the device itself: each of its devices then
    #: has its own default generator (``ember.Generator(device=...)`` for one of them), whose
    #: state is a Philox (seed, offset) pair as PyTorch's CUDA generators keep. False: samplers
    #: draw on the host from a CPU-kind generator and copy (the NumPy backend, whose host is its
    #: device, and third-party NumPy-backed devices registered without a generator of their own).
    draws_on_device = False

    def random_bits(self, key, first_block, blocks):
        """``4 * blocks`` uint32 words of Philox4x32-10 under the 64-bit ``key`` for counters
        ``first_block ..``, as one flat device array. The reference is element-wise ``xp``
        arithmetic (``backends/_philox.py``); a backend may override it with a fused kernel that
        gives the same words."""
        from ._philox import philox4x32
        return philox4x32(self.xp, key, first_block, blocks)

    # -- host transfers, pinned memory, sharing ----------------------------------------------
    #: The DLPack device type of this device's arrays (``DLDeviceType``'s value: 1 for the CPU,
    #: 2 for CUDA), which ``Tensor.__dlpack_device__`` reports; None to ask the array itself.
    dlpack_device_type = None
    #: True where this device's memory reaches another process without a copy (so ``is_shared``
    #: is True and ``share_memory_`` has nothing to do). A NumPy-backed device decides per array
    #: (whether it lies in a shared mapping); a backend whose tensors are pickled by value: False.
    memory_shared_across_processes = False
    #: True where this backend, as the accelerator, provides page-locked host memory
    #: (``Tensor.pin_memory()``, ``DataLoader(pin_memory=True)``) to copy from asynchronously.
    pins_host_memory = False

    def from_host(self, host, np_dtype, non_blocking=False):
        """A new device array holding a copy of the NumPy array ``host`` in ``np_dtype``. With
        ``non_blocking`` and ``host`` in page-locked memory the copy may be queued on the
        device's current stream and return before it finishes; otherwise it is finished."""
        return self.asarray(host, np_dtype, copy=True)

    def to_host(self, array, non_blocking=False):
        """A NumPy array with ``array``'s contents, a copy the caller may keep. With
        ``non_blocking`` the copy may be queued on the current stream into page-locked memory
        (PyTorch's ``.to("cpu", non_blocking=True)``): read it after synchronising."""
        return self.to_numpy(array)

    def pin_memory(self, host):
        """A copy of the NumPy array ``host`` in page-locked host memory."""
        raise RuntimeError(f"the {self.device_type} backend does not provide page-locked host "
                           "memory")

    def is_pinned(self, host):
        """Whether the NumPy array ``host`` lies in page-locked memory this backend registered."""
        return False

    # -- sparse matrices -----------------------------------------------------------------------
    def sparse(self):
        """A SciPy-API sparse-matrix namespace whose matrices hold this device's arrays
        (``scipy.sparse`` on the CPU, ``cupyx.scipy.sparse`` for CuPy): sparse tensors compute
        their products on it. Imported on first use; raises ImportError naming the pip extra
        when the library is missing."""
        raise NotImplementedError

    def __repr__(self):
        return f"<{type(self).__name__} {self.device_type}:{self.index}>"
