"""``ember.finfo``/``ember.iinfo`` (numeric limits of a dtype) and the process-wide switches
torch exposes at its top level: float32 matmul precision, deterministic algorithms, warn-always,
the BLAS thread count.

The limits come from NumPy's (and ``ml_dtypes``' for bfloat16) description of the storage type,
which is the same IEEE format torch uses, so every field equals torch's.
"""
import builtins
import math
import operator
import warnings

import numpy as np
import ml_dtypes

from . import _dtype as dt

__all__ = ["finfo", "iinfo", "set_float32_matmul_precision", "get_float32_matmul_precision",
           "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
           "get_deterministic_debug_mode", "set_warn_always", "is_warn_always_enabled"]


def _limits_argument(cls_name, args, kwargs):
    """torch's argument parsing for ``finfo(type)``/``iinfo(type)``: one dtype, named ``type``."""
    if set(kwargs) - {"type"}:
        raise TypeError(f'{cls_name}() missing 1 required positional arguments: "type"')
    if len(args) + len(kwargs) > 1:
        raise TypeError(f"{cls_name}() takes at most 1 argument (type)")
    value = args[0] if args else kwargs.get("type", _MISSING)
    if value is _MISSING:
        if cls_name == "finfo":
            return dt.get_default_dtype()
        raise TypeError(f'{cls_name}() missing 1 required positional arguments: "type"')
    if not isinstance(value, dt.dtype):
        raise TypeError(f"{cls_name}(): argument 'type' (position 1) must be ember.dtype, not "
                        f"{type(value).__name__}")
    return value


_MISSING = object()


class finfo:
    """The limits of a floating point dtype, as ``torch.finfo``: ``bits, eps, max, min, tiny,
    smallest_normal, resolution, dtype``. A complex dtype answers for its real component;
    ``finfo()`` describes the default dtype."""
    __slots__ = ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype")
    __hash__ = None  # torch's finfo compares by value and is unhashable

    def __init__(self, *args, **kwargs):
        d = _limits_argument("finfo", args, kwargs)
        if not (d.is_floating_point or d.is_complex):
            raise TypeError("ember.finfo() requires a floating point input type. Use ember.iinfo "
                            "to handle 'ember.finfo'")
        real = d.to_real()
        info = (ml_dtypes.finfo(real.np) if real is dt.bfloat16 else np.finfo(real.np))
        self.bits = real.itemsize * 8
        self.eps = builtins.float(info.eps)
        self.max = builtins.float(info.max)
        self.min = builtins.float(info.min)
        self.smallest_normal = builtins.float(info.smallest_normal)
        self.tiny = self.smallest_normal
        # 10 ** -(decimal digits the format holds exactly), as C++'s numeric_limits::digits10
        self.resolution = 10.0 ** -builtins.int(-math.log10(self.eps))
        self.dtype = real.name

    def __eq__(self, other):
        if not isinstance(other, finfo):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in finfo.__slots__)

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
                f"tiny={self.tiny:g}, dtype={self.dtype})")

    __str__ = __repr__


class iinfo:
    """The limits of an integer dtype, as ``torch.iinfo``: ``bits, max, min, dtype``."""
    __slots__ = ("bits", "max", "min", "dtype")
    __hash__ = None

    def __init__(self, *args, **kwargs):
        d = _limits_argument("iinfo", args, kwargs)
        if d is dt.bool:
            raise TypeError("ember.bool is not supported by ember.iinfo")
        if d.is_floating_point or d.is_complex:
            raise TypeError("ember.iinfo() requires an integer input type. Use ember.finfo to "
                            "handle 'ember.iinfo'")
        info = np.iinfo(d.np)
        self.bits = info.bits
        self.max = builtins.int(info.max)
        self.min = builtins.int(info.min)
        self.dtype = d.name

    def __eq__(self, other):
        if not isinstance(other, iinfo):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in iinfo.__slots__)

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"

    __str__ = __repr__


# ---- float32 matmul precision --------------------------------------------------------------
_matmul_precision = "highest"
_matmul_precision_chosen = False  # torch reports fp32_precision "none" until one is chosen


def set_float32_matmul_precision(precision):
    """Record the precision float32 matrix products may use ("highest", "high", "medium").

    Ember's CPU matrix products always run in full float32 (NumPy's BLAS has no TF32 or bfloat16
    shortcut), which is what "highest" promises; the lower settings allow, but never require, a
    faster path, so computing at "highest" honours all three, as torch's CPU kernels do."""
    global _matmul_precision, _matmul_precision_chosen
    if not isinstance(precision, str):
        raise RuntimeError(f"set_float32_matmul_precision expects a str, but got "
                           f"{type(precision).__name__}")
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _matmul_precision = precision
    _matmul_precision_chosen = True


def get_float32_matmul_precision():
    return _matmul_precision


# ---- deterministic algorithms --------------------------------------------------------------
_deterministic = False
_deterministic_warn_only = False


def _check_bool(value, what):
    if not isinstance(value, builtins.bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument {what} must be bool, not "
                        f"{type(value).__name__}")


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Require deterministic algorithms, as ``torch.use_deterministic_algorithms``.

    Every Ember CPU kernel is deterministic (NumPy's reductions and scatter-adds run in a fixed
    order), so no op needs to refuse or warn. The visible effect torch has on a CPU is kept:
    while the mode is on, ``empty``/``empty_like``/``new_empty`` fill the memory they return
    with NaN (floating point) or the dtype's largest value (integers), so that reading it is
    reproducible, as ``torch.utils.deterministic.fill_uninitialized_memory`` does by default."""
    global _deterministic, _deterministic_warn_only
    _check_bool(mode, "'mode' (position 1)")
    _check_bool(warn_only, "'warn_only'")
    _deterministic = mode
    _deterministic_warn_only = warn_only


def are_deterministic_algorithms_enabled():
    return _deterministic


def is_deterministic_algorithms_warn_only_enabled():
    return _deterministic_warn_only


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode):
    """0/"default": off; 1/"warn": deterministic, warn only; 2/"error": deterministic."""
    if not isinstance(debug_mode, (builtins.int, str)):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, "
                               f"`error`, but got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    if not _deterministic:
        return 0
    return 1 if _deterministic_warn_only else 2


def fills_uninitialized_memory():
    """Whether ``empty``-style factories must fill their result (deterministic mode is on)."""
    return _deterministic


def uninitialized_fill_value(d):
    """What deterministic mode writes into uninitialised memory of dtype ``d``, as torch."""
    if d.is_floating_point or d.is_complex:
        return np.nan
    if d is dt.bool:
        return True
    return np.iinfo(d.np).max


# ---- warn always ---------------------------------------------------------------------------
_warn_always = False


def set_warn_always(b):
    """When True, warnings torch issues once per process are issued every time; Ember's
    warnings go through Python's ``warnings`` module, whose filters decide repetition, and this
    flag is reported back by ``is_warn_always_enabled`` as in torch."""
    global _warn_always
    if not isinstance(b, builtins.bool):
        raise RuntimeError(f"setWarnOnlyOnce expects a bool, but got {type(b).__name__}")
    _warn_always = b


def is_warn_always_enabled():
    return _warn_always


# ---- BLAS thread pools ---------------------------------------------------------------------

def get_num_threads():
    """The number of threads the BLAS library (where NumPy's heavy work runs) may use, read
    through threadpoolctl when it is installed; otherwise the CPU count."""
    from .backends import _mkl
    if _mkl.active():
        return _mkl.get_num_threads()
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return _cpu_count()
    blas = [p["num_threads"] for p in threadpool_info() if p.get("user_api") == "blas"]
    return blas[0] if blas else _cpu_count()


_thread_limiter = None


def set_num_threads(int):
    """Limit the BLAS thread pools to ``int`` threads (through threadpoolctl; without it,
    Ember has no pool it can resize and raises), and C++ extensions' ``at::parallel_for``."""
    n = operator.index(int)
    if n <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    import sys
    extensions = sys.modules.get("ember.utils._cpp_extension.abi")
    if extensions is not None:  # C++ extensions' at::parallel_for (read at load otherwise)
        extensions.set_num_threads(n)
    from .backends import _mkl
    if _mkl.set_num_threads(n):
        return  # MKL computes the products; OpenBLAS's pool stays at one thread
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        raise RuntimeError("set_num_threads needs the threadpoolctl package to resize NumPy's "
                           "BLAS thread pool") from None
    global _thread_limiter
    if _thread_limiter is None:
        _thread_limiter = ThreadpoolController()
    _thread_limiter.limit(limits=n, user_api="blas")


def _cpu_count():
    import os
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1
