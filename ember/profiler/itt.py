"""``torch.profiler.itt``: Intel ITT ranges for VTune. Ember does not link Intel's ITT library,
so ``is_available()`` is False and the range calls raise, saying so."""
import contextlib

__all__ = ["is_available", "range_push", "range_pop", "mark", "range"]

_NO_ITT = ("ITT functions not available: Ember does not use Intel's ITT library (for Nsight "
           "Systems ranges use ember.autograd.profiler.emit_nvtx / ember.cuda.nvtx)")


def is_available():
    """False: Ember has no ITT instrumentation."""
    return False


def range_push(msg):
    raise RuntimeError(_NO_ITT)


def range_pop():
    raise RuntimeError(_NO_ITT)


def mark(msg):
    raise RuntimeError(_NO_ITT)


@contextlib.contextmanager
def range(msg, *args, **kwargs):
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()
