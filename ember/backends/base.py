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


class Backend:
    #: the device type this backend serves, e.g. "cpu"
    device_type = None
    #: the NumPy-compatible array namespace
    xp = None

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

    # -- compute primitives --------------------------------------------------------------------
    def matmul(self, a, b):
        raise NotImplementedError

    def index_add(self, target, index, values):
        """``target[index] += values`` with repeated indices accumulating (scatter-add)."""
        raise NotImplementedError

    def scatter_reduce(self, target, index, values, reduce):
        """``target[index] = reduce(target[index], values)`` in place, repeated indices
        combining: ``reduce`` is "sum", "prod", "amax" or "amin" (for bool arrays: or, and,
        or, and). ``index`` is a tuple of integer arrays (or ``()`` for a 0-d target)."""
        raise NotImplementedError

    def erf(self, x):
        raise NotImplementedError

    def erfc(self, x):
        """``1 - erf(x)`` without the cancellation where ``erf(x)`` is near 1."""
        raise NotImplementedError

    def erfinv(self, x):
        raise NotImplementedError

    # -- sparse matrices -----------------------------------------------------------------------
    def sparse(self):
        """A SciPy-API sparse-matrix namespace whose matrices hold this device's arrays
        (``scipy.sparse`` on the CPU, ``cupyx.scipy.sparse`` for CuPy): sparse tensors compute
        their products on it. Imported on first use; raises ImportError naming the pip extra
        when the library is missing."""
        raise NotImplementedError

    def __repr__(self):
        return f"<{type(self).__name__} {self.device_type}:{self.index}>"
