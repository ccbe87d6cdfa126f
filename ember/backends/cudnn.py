"""``ember.backends.cudnn``: torch.backends.cudnn's flags and queries.

Ember runs no cuDNN kernels (its CUDA backend computes through CuPy's array functions), so
``is_available()`` is False and ``version()`` None everywhere. The flags keep torch's defaults
and are read back by scripts and ``flags()``: ``deterministic`` is honest without doing anything
more, because every Ember kernel is deterministic, and ``benchmark`` has no autotuner to switch
on since Ember has one convolution algorithm per device.
"""
import contextlib
import warnings

from . import _flag_module as _fm

__all__ = ["is_available", "version", "is_acceptable", "set_flags", "flags", "enabled",
           "benchmark", "benchmark_limit", "deterministic", "allow_tf32", "fp32_precision",
           "depthwise_kernel"]

_PRECISIONS = ("none", "ieee", "tf32")


def _check_precision(value):
    if value not in _PRECISIONS:
        raise RuntimeError(f"Unknown precision: {value}")
    return value


def _check_limit(value):
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise TypeError(f"benchmark_limit expects an int, but got {type(value).__name__}")
    return value


def _check_depthwise(value):
    if not isinstance(value, str):
        raise RuntimeError(f"set_cudnn_depthwise_kernel expects a str, but got "
                           f"{type(value).__name__}")
    return value


_state = {"enabled": True, "benchmark": False, "benchmark_limit": None, "deterministic": False,
          "allow_tf32": True, "fp32_precision": "none", "depthwise_kernel": "auto"}


def is_available():
    """False: Ember has no cuDNN kernels (see the module docstring)."""
    return False


def version():
    """cuDNN's version number, or None where cuDNN is not available (always, in Ember)."""
    return None


def is_acceptable(tensor):
    """Whether cuDNN would run an op on ``tensor``: never in Ember."""
    from .. import _dtype as dt
    module = _module()
    if not module.enabled:
        return False
    if tensor.device.type != "cuda" or tensor.dtype not in (dt.float16, dt.float32, dt.float64):
        return False
    warnings.warn("Ember has no cuDNN/MIOpen support: its CUDA backend computes through CuPy's "
                  "array functions.", stacklevel=2)
    return False


def _module():
    import sys
    return sys.modules[__name__]


def set_flags(_enabled=None, _benchmark=None, _benchmark_limit=None, _deterministic=None,
              _allow_tf32=None, _fp32_precision="none", _depthwise_kernel=None):
    """Set the flags given (None leaves one alone); returns the previous values as a tuple in
    this argument order, as torch's."""
    module = _module()
    previous = tuple(_state[k] for k in ("enabled", "benchmark", "benchmark_limit",
                                          "deterministic", "allow_tf32", "fp32_precision",
                                          "depthwise_kernel"))
    _fm.set_given(module, enabled=_enabled, benchmark=_benchmark, deterministic=_deterministic,
                  allow_tf32=_allow_tf32, fp32_precision=_fp32_precision,
                  depthwise_kernel=_depthwise_kernel)
    # As in torch, the benchmark limit only exists where cuDNN is available.
    if _benchmark_limit is not None and is_available():
        module.benchmark_limit = _benchmark_limit
    return previous


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False,
          allow_tf32=True, fp32_precision="none", depthwise_kernel="auto"):
    """Set the cuDNN flags for the body of a ``with`` block, restoring them afterwards."""
    previous = set_flags(enabled, benchmark, benchmark_limit, deterministic, allow_tf32,
                         fp32_precision, depthwise_kernel)
    try:
        yield
    finally:
        set_flags(*previous)


class _CudnnModule(_fm.FlagModule):
    enabled = _fm.bool_flag("enabled", "set_enabled_cudnn", "Whether cuDNN may be used.")
    benchmark = _fm.bool_flag("benchmark", "set_benchmark_cudnn",
                              "Whether cuDNN autotunes convolution algorithms.")
    deterministic = _fm.bool_flag(
        "deterministic", "set_deterministic_cudnn",
        "Whether cuDNN must choose deterministic algorithms; Ember's kernels always are.")
    allow_tf32 = _fm.bool_flag("allow_tf32", "set_allow_tf32_cublas",
                               "Whether cuDNN convolutions may use TF32 tensor cores.")
    benchmark_limit = _fm.value_flag("benchmark_limit", _check_limit,
                                     "How many algorithms cudnn.benchmark tries (None: no cuDNN).")
    fp32_precision = _fm.value_flag("fp32_precision", _check_precision,
                                    "float32 precision of cuDNN ops: 'none', 'ieee' or 'tf32'.")
    depthwise_kernel = _fm.value_flag("depthwise_kernel", _check_depthwise,
                                      "Which kernel depthwise convolutions use ('auto').")


_fm.install(__name__, _CudnnModule)
