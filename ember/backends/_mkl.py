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

Two BLAS thread pools in one process lose more than MKL gains: after each product a pool's
threads spin, waiting for the next, while the other pool's threads want the same cores (the MLP
step measured 2.8x slower with both pools at two threads). So while MKL computes the products,
NumPy's OpenBLAS pool is held at one thread, the optimizers' ``axpby`` passes go through MKL
too, and ``ember.set_num_threads`` sizes MKL's pool.
"""
import ctypes
import functools
import os
import sys

import numpy as np

__all__ = ["gemm", "axpby", "active", "set_num_threads", "get_num_threads"]

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
_INT_MAX = 2 ** 31 - 1


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
    """MKL's routines by dtype ((gemm, axpy, axpby)) and its library, or None where it is not
    installed or not chosen. Loading it sizes OpenBLAS's pool down to one thread."""
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
        i, p = ctypes.c_int, ctypes.c_void_p
        routines = {}
        for prefix, real in (("s", ctypes.c_float), ("d", ctypes.c_double)):
            gemm_fn = getattr(lib, f"cblas_{prefix}gemm")
            gemm_fn.argtypes = [i, i, i, i, i, i, real, p, i, p, i, real, p, i]
            axpy = getattr(lib, f"cblas_{prefix}axpy")
            axpy.argtypes = [i, real, p, i, p, i]
            axpby_fn = getattr(lib, f"cblas_{prefix}axpby")
            axpby_fn.argtypes = [i, real, p, i, real, p, i]
            for fn in (gemm_fn, axpy, axpby_fn):
                fn.restype = None
            routines[np.dtype(real)] = (gemm_fn, axpy, axpby_fn)
        lib.MKL_Set_Num_Threads.argtypes, lib.MKL_Set_Num_Threads.restype = [i], None
        lib.MKL_Get_Max_Threads.argtypes, lib.MKL_Get_Max_Threads.restype = [], i
        routines["library"] = lib
        from . import _cblas
        _cblas.set_num_threads(1)
        return routines
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
    if dtype != b.dtype or dtype not in routines:
        return None
    fn = routines[dtype][0]
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


def axpby(y, alpha, x, beta):
    """``y = alpha x + beta y`` in place through MKL for whole contiguous float32/float64
    arrays of one shape (the caller has checked); False where MKL is not active."""
    routines = _routines()
    if routines is None or y.size > _INT_MAX or y.dtype not in routines:
        return False
    _, axpy, axpby_fn = routines[y.dtype]
    if beta == 1.0:
        axpy(y.size, alpha, x.ctypes.data, 1, y.ctypes.data, 1)
    else:
        axpby_fn(y.size, alpha, x.ctypes.data, 1, beta, y.ctypes.data, 1)
    return True


def set_num_threads(n):
    """Size MKL's pool; False where MKL is not active."""
    routines = _routines()
    if routines is None:
        return False
    routines["library"].MKL_Set_Num_Threads(int(n))
    return True


def get_num_threads():
    """MKL's pool size, or None where MKL is not active."""
    routines = _routines()
    return None if routines is None else routines["library"].MKL_Get_Max_Threads()
