"""``torch.jit.fork`` / ``torch.jit.wait``: asynchronous calls on Ember's inter-op thread pool.

``fork(fn, *args, **kwargs)`` queues ``fn(*args, **kwargs)`` on a pool of
``ember.get_num_interop_threads()`` threads and returns an ``ember.futures.Future`` at once;
``wait(future)`` returns the value, or raises the exception ``fn`` raised. NumPy's kernels and
BLAS release the GIL, so independent branches of a model really run side by side (PyTorch's
eager ``jit.fork`` runs ``fn`` synchronously; only TorchScript code forks for real).

As in PyTorch's ``at::launch``, a task runs under the caller's thread-local state as it was at
``fork``: grad mode, inference mode and autocast (enabled device types, their dtypes, the
weight-cache switch). The worker's own state is put back when the task ends.

Waiting never deadlocks on a busy pool: ``wait`` on a task no worker has started yet runs it in
the waiting thread, so a forked task may fork and wait on its own children however many
threads the pool has.

While a trace records ops in the calling thread (``jit.trace``, ``make_fx``, or arguments that
are ``fx`` proxies), ``fork`` runs ``fn`` at once in that thread, so the trace records its ops
as PyTorch's tracer records the forked subgraph.

On CUDA a task runs on the thread's current CuPy stream, the worker's default stream: Ember does
not yet give a forked task a stream of its own.
"""
import os
import threading

from ..futures import Future

__all__ = ["fork", "wait"]

_POOL = None
_POOL_PID = None
_POOL_LOCK = threading.Lock()


def _pool():
    """The fork pool, made on first use in each process (threads do not survive ``os.fork``,
    so a DataLoader worker that forks tasks gets a pool of its own)."""
    global _POOL, _POOL_PID
    with _POOL_LOCK:
        if _POOL_PID != os.getpid():
            from concurrent.futures import ThreadPoolExecutor
            from .. import serialization
            # the size is fixed from here on: set_num_interop_threads refuses, as torch's does
            # once parallel work has started
            serialization._interop_pool_started()
            _POOL = ThreadPoolExecutor(max_workers=serialization._interop_threads(),
                                       thread_name_prefix="ember-interop")
            _POOL_PID = os.getpid()
        return _POOL


class _CallerState:
    """The thread-local state a forked task inherits, captured at ``fork``."""

    def __init__(self):
        from ..autograd import grad_mode
        from ..amp import autocast_mode
        grad, amp = grad_mode._state, autocast_mode._state
        self.grad = (grad.enabled, grad.inference)
        self.autocast_enabled = dict(amp.enabled)
        self.autocast_dtype = dict(amp.dtype)
        self.autocast_cache_enabled = amp.cache_enabled
        self.autocast_nesting = amp.nesting

    def run(self, fn, args, kwargs):
        from ..autograd import grad_mode
        from ..amp import autocast_mode
        grad, amp = grad_mode._state, autocast_mode._state
        saved_grad = (grad.enabled, grad.inference)
        saved_amp = (dict(amp.enabled), amp.dtype, amp.cache_enabled, amp.nesting, amp.cache,
                     amp.excluded)
        grad.enabled, grad.inference = self.grad
        self._set_autocast_enabled(self.autocast_enabled)
        # The task's casts go to a cache of its own, dropped when it ends: the caller's cache
        # belongs to the caller's thread and region.
        amp.dtype, amp.cache_enabled = dict(self.autocast_dtype), self.autocast_cache_enabled
        amp.nesting, amp.cache, amp.excluded = self.autocast_nesting, {}, False
        try:
            return fn(*args, **kwargs)
        finally:
            grad.enabled, grad.inference = saved_grad
            self._set_autocast_enabled(saved_amp[0])
            amp.dtype, amp.cache_enabled, amp.nesting, amp.cache, amp.excluded = saved_amp[1:]

    @staticmethod
    def _set_autocast_enabled(enabled):
        # Through set_autocast_enabled, which keeps the process-wide "some thread has autocast
        # on" count right.
        from ..amp import autocast_mode
        for device_type in set(autocast_mode._state.enabled) | set(enabled):
            autocast_mode.set_autocast_enabled(device_type, enabled.get(device_type, False))


def _tracing_here(args, kwargs):
    """Whether a trace records this thread's ops (so ``fn`` must run in this thread)."""
    from . import _trace
    from ..fx.experimental import proxy_tensor
    from ..fx.node import map_aggregate
    from ..fx.proxy import Proxy
    if _trace.is_tracing() or getattr(proxy_tensor._state, "tracer", None) is not None:
        return True
    found = []
    map_aggregate((args, kwargs), lambda x: found.append(x) if isinstance(x, Proxy) else None)
    return bool(found)


def fork(func, *args, **kwargs):
    """Call ``func(*args, **kwargs)`` asynchronously; return an ``ember.futures.Future`` of its
    result, as ``torch.jit.fork``. ``wait(future)`` (or ``future.wait()``) returns the value, or
    raises the exception ``func`` raised."""
    if not callable(func):
        raise TypeError(f"Object of type '{type(func).__name__}' is not an instance of "
                        f"'function'")
    future = Future()
    state = _CallerState()
    claim = threading.Lock()

    def run():
        # Whichever comes first runs the task: a pool thread, or a thread waiting on it.
        if not claim.acquire(blocking=False):
            return
        try:
            result = state.run(func, args, kwargs)
        except Exception as exc:
            future.set_exception(exc)
        except BaseException as exc:  # KeyboardInterrupt, SystemExit: no waiter may hang
            future.set_exception(RuntimeError(f"the forked call was interrupted by "
                                              f"{type(exc).__name__}"))
            raise
        else:
            future.set_result(result)

    if _tracing_here(args, kwargs):
        run()
        return future
    future._driver = run  # wait() before a pool thread starts the task runs it in the waiter
    _pool().submit(run)
    return future


def wait(future):
    """The value of a Future returned by ``fork`` (waiting for it), as ``torch.jit.wait``; the
    exception the forked call raised is raised here."""
    if not isinstance(future, Future):
        raise TypeError(f"wait(): expected an ember.futures.Future, got "
                        f"{type(future).__name__}")
    return future.wait()
