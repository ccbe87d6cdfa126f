"""Level-1 BLAS from the OpenBLAS that NumPy's wheels already carry, through ctypes.

NumPy exposes BLAS only through ``matmul``/``dot``; an optimizer step written with ufuncs
makes several passes over every parameter and allocates temporaries (``buf = m * buf + g`` then
``p -= lr * buf`` is five passes and two arrays), where BLAS's ``axpby``/``axpy`` do each line
in one multi-threaded pass. The library is NumPy's own (``libscipy_openblas64_`` in
``numpy.libs`` or ``numpy/.dylibs``, symbols prefixed ``scipy_`` with 64-bit integers), so this
adds no dependency; where it is not found (another NumPy build), ``lookup`` answers None and
callers keep their ufunc path.
"""
import ctypes
import functools
import glob
import os

import numpy as np

__all__ = ["lookup", "set_num_threads"]

_TYPES = {np.dtype(np.float32): ("s", ctypes.c_float), np.dtype(np.float64): ("d", ctypes.c_double)}


@functools.lru_cache(maxsize=None)
def _library():
    root = os.path.dirname(np.__file__)
    patterns = [os.path.join(root, os.pardir, "numpy.libs", "libscipy_openblas64_*"),
                os.path.join(root, ".dylibs", "libscipy_openblas64_*")]
    for pattern in patterns:
        for path in sorted(glob.glob(pattern)):
            try:
                return ctypes.CDLL(path)
            except OSError:
                continue
    return None


@functools.lru_cache(maxsize=None)
def lookup(name, dtype):
    """The cblas routine ``name`` ("axpy", "axpby") for ``dtype`` (float32/float64) as a ctypes
    function taking the arrays' addresses, or None where NumPy's OpenBLAS is not at hand."""
    if os.environ.get("EMBER_CBLAS", "1") == "0" or dtype not in _TYPES:
        return None
    lib = _library()
    if lib is None:
        return None
    prefix, real = _TYPES[dtype]
    try:
        fn = getattr(lib, f"scipy_cblas_{prefix}{name}64_")
    except AttributeError:
        return None
    n, ptr = ctypes.c_int64, ctypes.c_void_p
    fn.argtypes = {"axpy": [n, real, ptr, n, ptr, n],
                   "axpby": [n, real, ptr, n, real, ptr, n]}[name]
    fn.restype = None
    return fn


def set_num_threads(n):
    """Size NumPy's OpenBLAS pool (when MKL computes the products, its pool is kept at one
    thread, so that two pools never spin against each other); False where it is not found."""
    lib = _library()
    fn = getattr(lib, "scipy_openblas_set_num_threads64_", None) if lib is not None else None
    if fn is None:
        return False
    fn.argtypes, fn.restype = [ctypes.c_int], None
    fn(int(n))
    return True
