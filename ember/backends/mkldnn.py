"""``ember.backends.mkldnn``: torch.backends.mkldnn's flags and queries.

Ember runs no oneDNN (MKL-DNN) kernels, so ``is_available()`` is False; the flags keep torch's
defaults and are read back by scripts and ``flags()``. ``deterministic`` needs nothing more:
every Ember kernel is deterministic."""
import contextlib

from . import _flag_module as _fm

__all__ = ["is_available", "VERBOSE_OFF", "VERBOSE_ON", "VERBOSE_ON_CREATION", "verbose",
           "set_flags", "flags", "enabled", "deterministic", "allow_tf32", "fp32_precision"]

VERBOSE_OFF = 0
VERBOSE_ON = 1
VERBOSE_ON_CREATION = 2

_PRECISIONS = ("none", "ieee", "tf32", "bf16")


def _check_precision(value):
    if value not in _PRECISIONS:
        raise RuntimeError(f"Unknown precision: {value}")
    return value


def _check_allow_tf32(value):
    if not isinstance(value, bool):
        raise RuntimeError(f"set_onednn_allow_tf32 expects a bool, but got {type(value).__name__}")
    return value


# torch's CPU build reports allow_tf32 as None until it is set.
_state = {"enabled": True, "deterministic": False, "allow_tf32": None, "fp32_precision": "none"}


def is_available():
    """False: Ember has no oneDNN kernels."""
    return False


class verbose:
    """``with verbose(VERBOSE_ON):`` turns on oneDNN's verbose log for the block, as torch's;
    ``VERBOSE_OFF`` changes nothing. Turning it on raises, since Ember runs no oneDNN."""

    def __init__(self, level):
        self.level = level

    def __enter__(self):
        if self.level == VERBOSE_OFF:
            return self
        raise RuntimeError("oneDNN verbose mode is not available in Ember: Ember runs no oneDNN "
                           "(MKL-DNN) kernels.")

    def __exit__(self, exc_type, exc_val, exc_tb):
        return False


def _module():
    import sys
    return sys.modules[__name__]


def set_flags(_enabled=None, _deterministic=None, _allow_tf32=None, _fp32_precision="none"):
    previous = tuple(_state[k] for k in ("enabled", "deterministic", "allow_tf32",
                                          "fp32_precision"))
    _fm.set_given(_module(), enabled=_enabled, deterministic=_deterministic,
                  allow_tf32=_allow_tf32, fp32_precision=_fp32_precision)
    return previous


@contextlib.contextmanager
def flags(enabled=False, deterministic=False, allow_tf32=True, fp32_precision="none"):
    """Set the oneDNN flags for the body of a ``with`` block, restoring them afterwards."""
    previous = set_flags(enabled, deterministic, allow_tf32, fp32_precision)
    try:
        yield
    finally:
        # Restore exactly, None included (set_flags skips None).
        _state.update(zip(("enabled", "deterministic", "allow_tf32", "fp32_precision"), previous))


class _MkldnnModule(_fm.FlagModule):
    enabled = _fm.bool_flag("enabled", "set_enabled_mkldnn", "Whether oneDNN may be used.")
    deterministic = _fm.bool_flag("deterministic", "set_deterministic_mkldnn",
                                  "Whether oneDNN must be deterministic; Ember's kernels are.")
    allow_tf32 = _fm.value_flag("allow_tf32", _check_allow_tf32,
                                "Whether oneDNN may compute float32 in TF32.")
    fp32_precision = _fm.value_flag("fp32_precision", _check_precision,
                                    "float32 precision of oneDNN ops.")


_fm.install(__name__, _MkldnnModule)
