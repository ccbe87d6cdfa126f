"""``torch.cuda.graphs``: capture a sequence of CUDA work once, replay it with one launch, over
CuPy's stream capture (``Stream.begin_capture``/``end_capture`` -> ``cupy.cuda.graph.Graph``).

Memory, as in torch: while a graph captures, every allocation its capturing stream makes comes
from the graph's *private* pool (a ``cupy.cuda.MemoryPool`` of its own, routed by the tracking
allocator of ``memory.py``), so the addresses baked into the graph are never handed to other
tensors; replays write the same static tensors again. The pool lives until ``reset()`` (or the
graph's deletion) of every graph sharing it (``pool=`` another graph's ``pool()`` or a
``graph_pool_handle()``). Its bytes count in ``memory_allocated``/``memory_reserved``.

Capture mode: the private pool takes fresh device memory with cudaMalloc while capture runs,
which CUDA allows only in relaxed mode unless the allocator switches the thread's mode around
the call (torch's does, with cudaThreadExchangeStreamCaptureMode); CuPy 14 exposes no such
switch, so Ember captures in relaxed mode whatever ``capture_error_mode`` says. Illegal work
on the capturing stream (a host synchronization, ``.item()``, a copy to the host) still fails
the capture; what relaxed mode does not catch is an unsafe call made by *another* thread.

Without CUDA, as torch's CPU build: ``CUDAGraph()``, ``graph_pool_handle()`` and
``is_current_stream_capturing()`` raise "Tried to instantiate dummy base class ...".
"""
import gc

__all__ = ["CUDAGraph", "graph", "graph_pool_handle", "is_current_stream_capturing",
           "make_graphed_callables"]

_CAPTURE_MODES = ("global", "thread_local", "relaxed")


def _cupy_or_dummy(name):
    from . import _cupy_or_none
    cupy = _cupy_or_none()
    if cupy is None:
        raise RuntimeError(f"Tried to instantiate dummy base class {name}")
    return cupy


def _tracking_allocator(cupy):
    from .memory import install_tracking_allocator
    return install_tracking_allocator(cupy)


class _GraphPool:
    """The opaque handle ``graph_pool_handle()`` and ``CUDAGraph.pool()`` return: one private
    memory pool, shared by every graph captured into it."""

    def __init__(self, cupy):
        self._pool = cupy.cuda.MemoryPool()
        self._users = 0

    def __repr__(self):
        return f"<ember.cuda graph pool {id(self):#x}>"


def graph_pool_handle():
    """A new private memory pool for graphs to share: pass it as ``pool=`` to several
    captures whose graphs are replayed in the order they were captured."""
    return _GraphPool(_cupy_or_dummy("_graph_pool_handle"))


def is_current_stream_capturing():
    """True while the current stream of the current device is capturing a graph."""
    from .streams import current_stream
    _cupy_or_dummy("_cuda_isCurrentStreamCapturing")
    return bool(current_stream()._native.is_capturing())


class CUDAGraph:
    """One captured CUDA graph: ``capture_begin()``, the work, ``capture_end()``, then
    ``replay()`` as often as needed (replays reuse the captured tensors' memory: copy new
    inputs into the static input tensors before each replay)."""

    def __init__(self, keep_graph=False):
        self._cupy = _cupy_or_dummy("CUDAGraph")
        self.keep_graph = keep_graph
        self._graph = None  # cupy.cuda.graph.Graph, instantiated by end_capture
        self._pool = None
        self._capture_stream = None
        self._debug = False

    def capture_begin(self, pool=None, capture_error_mode="global", check_input_liveness=False):
        """Start capturing the current stream's work (it must not be the default stream)."""
        from .streams import current_stream
        if check_input_liveness:
            raise NotImplementedError(
                "check_input_liveness=True needs torch's allocator history of which blocks "
                "the captured kernels read; CuPy's pool keeps none")
        if capture_error_mode not in _CAPTURE_MODES:
            raise RuntimeError(f"Unknown capture error mode. Expected `global`, `thread_local`, "
                               f"or `relaxed`, got {capture_error_mode}")
        if self._graph is not None or self._capture_stream is not None:
            raise RuntimeError("This CUDAGraph instance already owns a captured graph. To "
                               "capture a new graph, create a new instance.")
        stream = current_stream()
        if stream.cuda_stream == 0:
            raise RuntimeError("CUDA graphs must be captured on a non-default stream. (However, "
                               "after capture, it's ok to replay them on the default stream.)")
        cupy = self._cupy
        self._pool = pool if pool is not None else _GraphPool(cupy)
        self._pool._users += 1
        allocator = _tracking_allocator(cupy)
        allocator.private_pools[id(self._pool._pool)] = self._pool._pool
        allocator.capture_pools[stream.cuda_stream] = self._pool._pool
        self._capture_stream = stream
        try:
            stream._native.begin_capture(cupy.cuda.runtime.streamCaptureModeRelaxed)
        except BaseException:
            self._end_routing(allocator)
            self._release_pool(allocator)
            raise

    def capture_end(self):
        """Stop capturing; the graph is instantiated and ready to ``replay``."""
        if self._capture_stream is None:
            raise RuntimeError("capture_end() called without a matching capture_begin()")
        allocator = _tracking_allocator(self._cupy)
        try:
            self._graph = self._capture_stream._native.end_capture()
        finally:
            self._end_routing(allocator)

    def _end_routing(self, allocator):
        allocator.capture_pools.pop(self._capture_stream.cuda_stream, None)
        self._capture_stream = None

    def instantiate(self):
        """Instantiate the captured graph. CuPy's ``end_capture`` already instantiates it,
        so after ``capture_end`` this only checks there is one."""
        if self._graph is None:
            raise RuntimeError("instantiate() requires a captured graph: call capture_end() "
                               "first")

    def replay(self):
        """Launch the captured work on the current stream."""
        from .streams import current_stream
        if self._graph is None:
            raise RuntimeError("Called CUDAGraph::replay without a preceding successful "
                               "capture.")
        self._graph.launch(current_stream()._native)

    def reset(self):
        """Drop the graph and, when no other graph shares it, its private pool."""
        self._graph = None
        if self._pool is not None:
            self._release_pool(_tracking_allocator(self._cupy))

    def _release_pool(self, allocator):
        pool, self._pool = self._pool, None
        pool._users -= 1
        if pool._users == 0:
            # Captured tensors a script still holds keep their blocks (and stay counted in
            # memory_allocated); the pool's cache goes back to the driver.
            pool._pool.free_all_blocks()
            if pool._pool.used_bytes() == 0:
                allocator.private_pools.pop(id(pool._pool), None)

    def pool(self):
        """This graph's private pool, to share with a later capture (``pool=``)."""
        if self._pool is None:
            raise RuntimeError("pool() requires a graph that has begun capture")
        return self._pool

    def enable_debug_mode(self):
        """Keep what ``debug_dump`` writes (CuPy's graph always keeps it)."""
        self._debug = True

    def debug_dump(self, debug_path):
        """Write the captured graph as a Graphviz DOT file (cudaGraphDebugDotPrint)."""
        if not self._debug:
            raise RuntimeError("CUDA Graphs debug dump is only available in debug mode: call "
                               "enable_debug_mode() before capture")
        if self._graph is None:
            raise RuntimeError("debug_dump() requires a captured graph")
        with open(debug_path, "w") as f:
            f.write(self._graph.debug_dot_str())

    def raw_cuda_graph(self):
        """The ``cudaGraph_t`` as an int."""
        if self._graph is None:
            raise RuntimeError("raw_cuda_graph() requires a captured graph")
        return self._graph.graph

    def raw_cuda_graph_exec(self):
        """The ``cudaGraphExec_t`` as an int."""
        if self._graph is None:
            raise RuntimeError("raw_cuda_graph_exec() requires a captured graph")
        return self._graph.graphExec

    def __del__(self):
        try:
            if self._pool is not None and self._capture_stream is None:
                self.reset()
        except Exception:  # at interpreter exit the modules may be gone already
            pass


class graph:
    """``with ember.cuda.graph(g):`` captures the body into ``g``, on ``stream`` (default: a
    side stream kept for capture), after synchronizing the device and freeing cached memory,
    as torch's does."""

    default_capture_stream = None

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode="global",
                 enable_annotations=False, check_input_liveness=False):
        from .streams import Stream, StreamContext
        if enable_annotations:
            raise NotImplementedError(
                "enable_annotations=True labels graph nodes through torch's profiler hooks, "
                "which Ember does not have")
        self.check_input_liveness = check_input_liveness
        if graph.default_capture_stream is None:
            graph.default_capture_stream = Stream()
        self.pool = () if pool is None else (pool,)
        self.capture_stream = stream if stream is not None else graph.default_capture_stream
        self.stream_ctx = StreamContext(self.capture_stream)
        self.cuda_graph = cuda_graph
        self.capture_error_mode = capture_error_mode

    def __enter__(self):
        from . import synchronize
        from .memory import empty_cache
        synchronize()
        gc.collect()
        empty_cache()
        self.stream_ctx.__enter__()
        self.cuda_graph.capture_begin(*self.pool, capture_error_mode=self.capture_error_mode,
                                      check_input_liveness=self.check_input_liveness)

    def __exit__(self, *exc):
        try:
            self.cuda_graph.capture_end()
        finally:
            self.stream_ctx.__exit__(*exc)
        return False


def make_graphed_callables(callables, sample_args, num_warmup_iters=3, allow_unused_input=False,
                           pool=None):
    """Not available: torch graphs the forward *and* the backward, replaying the backward
    from an autograd Function whose gradient buffers are static. Ember's autograd engine
    allocates each gradient as it runs and its backward runs outside any capture, so there is
    no captured backward to replay; capture the whole training step with ``ember.cuda.graph``
    instead (forward, backward and ``optimizer.step()`` on static tensors)."""
    raise NotImplementedError(
        "ember.cuda.make_graphed_callables is not implemented: Ember's autograd engine "
        "allocates gradients as backward runs, so it cannot replay a captured backward from "
        "static buffers as torch's does. Capture the whole step (forward, backward, "
        "optimizer.step()) inside `with ember.cuda.graph(g):` and replay g instead.")
