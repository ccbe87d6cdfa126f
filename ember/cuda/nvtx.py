"""``torch.cuda.nvtx``: NVTX ranges and marks for profilers (Nsight Systems), over
``cupy.cuda.nvtx``.

``range_push``/``range_pop`` return the zero-based depth of the range they start or end, as
torch's do; CuPy's calls return nothing, so the depth is counted here, per thread (NVTX ranges
are per thread). Ranges pushed with ``cupy.cuda.nvtx`` directly are not in that count.
Without CUDA, or with a CuPy built without NVTX, every call raises torch's CPU-build error.
"""
import contextlib
import threading

__all__ = ["range_push", "range_pop", "range_start", "range_end", "mark", "range"]

_NOT_INSTALLED = "NVTX functions not installed. Are you sure you have a CUDA build?"
_depth = threading.local()


def _nvtx():
    from . import _cupy_or_none
    cupy = _cupy_or_none()
    if cupy is None or not cupy.cuda.nvtx.available:
        raise RuntimeError(_NOT_INSTALLED)
    return cupy.cuda.nvtx


def range_push(msg):
    """Push a range onto this thread's stack of nested ranges; returns its zero-based depth."""
    _nvtx().RangePush(msg)
    level = getattr(_depth, "level", 0)
    _depth.level = level + 1
    return level


def range_pop():
    """Pop this thread's innermost range; returns the zero-based depth of the range ended
    (-1 when none was open, as nvtxRangePop answers)."""
    nvtx = _nvtx()
    level = getattr(_depth, "level", 0)
    if level == 0:
        return -1
    nvtx.RangePop()
    _depth.level = level - 1
    return level - 1


def range_start(msg):
    """Start a range that may end on another thread; returns its id for ``range_end``."""
    return _nvtx().RangeStart(msg, -1)


def range_end(range_id):
    """End the range ``range_start`` returned ``range_id`` for."""
    _nvtx().RangeEnd(range_id)


def mark(msg):
    """An instantaneous marker in the profile."""
    _nvtx().Mark(msg, -1)


@contextlib.contextmanager
def range(msg, *args, **kwargs):
    """Context manager (and decorator) for a range named ``msg.format(*args, **kwargs)``."""
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()
