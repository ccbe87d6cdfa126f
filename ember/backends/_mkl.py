"""Matrix products through Intel's MKL, where the ``mkl`` wheel is installed (the ``fast`` extra
on x86-64) and the CPU is Intel's.

Which BLAS NumPy gets is a packaging choice: its wheels carry OpenBLAS, and on Intel CPUs MKL's
``sgemm`` is 1.3-1.5x faster on the shapes of small networks (784x512, 512x512 at batch 128) and
up to 2x on the thin per-step products of an LSTM (32x256 by 256x1024), which is where PyTorch's
CPU wheels (MKL inside) gain on NumPy (``docs/benchmarks.md``, issue 26). The library is reached
through ctypes (``cblas_?gemm`` in ``libmkl_rt``), so NumPy stays as it is and everything but
the float32/float64 2-D products keeps using NumPy's OpenBLAS.

``EMBER_BLAS`` chooses: ``auto`` (the default: MKL on Intel CPUs where installed), ``mkl``
(wherever installed), ``openblas`` (never MKL).
"""
import ctypes
import functools
import os
import sys

import numpy as np

__all__ = ["gemm", "active"]

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
_INT_MAX = 2 ** 31 - 1
_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)


def _intel_cpu():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("vendor_id"):
                    return "GenuineIntel" in line
    except OSError:
        pass
    return False


def _library_paths():
    """Where pip puts ``libmkl_rt`` (the wheel's data files land in the environment's lib)."""
    names = ("libmkl_rt.so.2", "libmkl_rt.so.3", "libmkl_rt.so", "libmkl_rt.2.dylib",
             "mkl_rt.2.dll", "mkl_rt.3.dll")
    roots = {sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(sys.executable))}
    for root in sorted(roots):
        for sub in ("lib", os.path.join("Library", "bin")):
            for name in names:
                path = os.path.join(root, sub, name)
                if os.path.exists(path):
                    yield path


@functools.lru_cache(maxsize=None)
def _routines():
    """(sgemm, dgemm) from MKL, or None where it is not installed or not chosen."""
    choice = os.environ.get("EMBER_BLAS", "auto").lower()
    if choice not in ("auto", "mkl", "openblas"):
        raise ValueError(f"EMBER_BLAS must be 'auto', 'mkl' or 'openblas', not {choice!r}")
    if choice == "openblas" or (choice == "auto" and not _intel_cpu()):
        return None
    for path in _library_paths():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        routines = []
        for name, real in (("cblas_sgemm", ctypes.c_float), ("cblas_dgemm", ctypes.c_double)):
            fn = getattr(lib, name)
            i, p = ctypes.c_int, ctypes.c_void_p
            fn.argtypes = [i, i, i, i, i, i, real, p, i, p, i, real, p, i]
            fn.restype = None
            routines.append(fn)
        return tuple(routines)
    return None


def active():
    """Whether matrix products go through MKL in this process."""
    return _routines() is not None


def _operand(x):
    """(transpose flag, leading dimension) for a 2-D operand BLAS can read in place, or None."""
    if x.flags.c_contiguous:
        return _NO_TRANS, max(x.shape[1], 1)
    if x.flags.f_contiguous:
        return _TRANS, max(x.shape[0], 1)
    return None


def gemm(a, b, out=None, accumulate=False):
    """``a @ b`` for 2-D float32/float64 arrays of one dtype through MKL, into ``out`` (a
    C-contiguous array of the result's shape and dtype) when given, added to what ``out`` holds
    with ``accumulate``; None where MKL is not active or the operands are not ones it takes
    (the caller then uses NumPy)."""
    routines = _routines()
    if routines is None:
        return None
    dtype = a.dtype
    if dtype is not b.dtype and dtype != b.dtype:
        return None
    if dtype == _F32:
        fn = routines[0]
    elif dtype == _F64:
        fn = routines[1]
    else:
        return None
    m, k = a.shape
    n = b.shape[1]
    if m == 0 or n == 0 or k == 0 or max(m, n, k) > _INT_MAX:
        return None
    ta, tb = _operand(a), _operand(b)
    if ta is None or tb is None:
        return None
    if out is None:
        if accumulate:
            return None
        out = np.empty((m, n), dtype)
    elif not (out.flags.c_contiguous and out.flags.writeable and out.shape == (m, n)
              and out.dtype == dtype) or np.may_share_memory(out, a) or np.may_share_memory(out, b):
        return None
    fn(_ROW_MAJOR, ta[0], tb[0], m, n, k, 1.0, a.ctypes.data, ta[1], b.ctypes.data, tb[1],
       1.0 if accumulate else 0.0, out.ctypes.data, max(n, 1))
    return out
