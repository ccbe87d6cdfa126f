"""``torch.cuda.memory``: memory statistics, the cache, and ``OutOfMemoryError``, on CuPy's pool.

What is counted. Ember's CUDA tensors are CuPy arrays, allocated from CuPy's default
``MemoryPool`` (and, while a graph is being captured, from that graph's private pool, see
``graphs.py``). On its first use on a device the CUDA backend installs a *tracking allocator*
(``install_tracking_allocator``) in front of the pool, with ``cupy.cuda.set_allocator``:

* ``memory_allocated`` is the bytes the pools hand out and have not got back
  (``MemoryPool.used_bytes()``): every live CuPy array on the device, Ember's tensors and the
  temporaries of the op running now, each rounded up to CuPy's 512-byte allocation unit. torch
  counts its tensors' blocks, rounded to 512 bytes too, so the two agree for tensors; CuPy's
  own scratch buffers (cuBLAS workspaces excepted) are included here as torch includes its.
* ``memory_reserved`` is the bytes the pools hold from the driver, in use or cached
  (``MemoryPool.total_bytes()``); ``empty_cache`` returns the unused ones.
* The peaks are taken at each allocation, when the figures can only have grown; frees return
  memory to the pool without passing through an allocator, which is why the *current* figures
  are read from the pool and only the peaks and totals are kept here.
* An allocation that fails raises ``ember.cuda.OutOfMemoryError`` (a ``RuntimeError``, as
  torch's) with torch's message; CuPy's own ``OutOfMemoryError`` is its ``__cause__``. CuPy has
  already freed the cached blocks and retried once before it gives up.

How this differs from torch's caching allocator: there are no separate small and large pools,
no block splitting statistics and no per-stream accounting, so ``memory_stats`` holds only
the keys above that Ember can answer (torch's names). The allocation history
(``_record_memory_history``, ``_snapshot``, ``_dump_snapshot``, ``memory_snapshot``) is
kept by the tracking allocator while recording is on (``_memory_history.py``); a
snapshot's segments are the live blocks, since CuPy does not expose its pool's arenas.

An allocator a script installs itself with ``cupy.cuda.set_allocator`` after Ember's first
use replaces the tracking one: from then on the peaks stop moving (and no history is kept)
while the current figures still read the default pool.

Without CUDA the functions answer as torch's CPU build does: the figures are 0,
``memory_stats()`` is empty, ``empty_cache()`` does nothing, and the calls that need a device
raise "Torch not compiled with CUDA enabled".
"""
import collections
import sys
import warnings

__all__ = ["OutOfMemoryError", "memory_allocated", "max_memory_allocated", "memory_reserved",
           "max_memory_reserved", "memory_cached", "max_memory_cached", "reset_peak_memory_stats",
           "reset_max_memory_allocated", "reset_max_memory_cached",
           "reset_accumulated_memory_stats", "empty_cache", "memory_stats",
           "memory_stats_as_nested_dict", "memory_summary", "mem_get_info",
           "set_per_process_memory_fraction", "get_per_process_memory_fraction",
           "install_tracking_allocator", "memory_snapshot"]

# CuPy rounds every request up to this many bytes (``cupy.cuda.memory._allocation_unit_size``).
_ALLOCATION_UNIT = 512


class OutOfMemoryError(RuntimeError):
    """A CUDA allocation failed: the device has no room for the request (torch's
    ``torch.cuda.OutOfMemoryError``, also ``torch.OutOfMemoryError``)."""


def _format_size(size):
    # torch's format (c10's format_size): bytes up to 1 KiB, then KiB, MiB, GiB with 2 decimals
    if size <= 1024:
        return f"{size} bytes"
    if size <= 1048576:
        return f"{size / 1024:.2f} KiB"
    if size <= 1073741824:
        return f"{size / 1048576:.2f} MiB"
    return f"{size / 1073741824:.2f} GiB"


class _DeviceCounters:
    __slots__ = ("peak_allocated", "peak_reserved", "allocated_bytes", "allocations",
                 "num_ooms", "base_allocated")

    def __init__(self):
        self.peak_allocated = self.peak_reserved = 0
        self.allocated_bytes = self.allocations = self.num_ooms = 0
        self.base_allocated = 0  # bytes in use when the accumulated totals were last reset


class TrackingAllocator:
    """CuPy's allocator interface (``size -> MemoryPointer``) over the default pool, keeping
    each device's peaks and totals and translating out-of-memory errors; while a stream of
    this process is capturing a graph, that stream's allocations come from the graph's
    private pool (``graphs.py`` registers it in ``capture_pools``)."""

    def __init__(self, cupy):
        self.cupy = cupy
        self.pool = cupy.get_default_memory_pool()
        self.forward = cupy.cuda.get_allocator()  # the pool's malloc unless a script chose
        self.counters = collections.defaultdict(_DeviceCounters)
        self.capture_pools = {}  # capturing stream's ptr -> that graph's private MemoryPool
        self.private_pools = {}  # id(pool) -> pool, for every live graph pool
        self.history = None  # a MemoryHistory while _record_memory_history is on

    def __call__(self, size):
        cupy = self.cupy
        device = cupy.cuda.runtime.getDevice()
        malloc = self.forward
        if self.capture_pools:
            pool = self.capture_pools.get(cupy.cuda.get_current_stream().ptr)
            if pool is not None:
                malloc = pool.malloc
        try:
            memory = malloc(size)
        except cupy.cuda.memory.OutOfMemoryError as exc:
            self.counters[device].num_ooms += 1
            raise OutOfMemoryError(self._oom_message(size, device)) from exc
        counters = self.counters[device]
        counters.allocated_bytes += -(-size // _ALLOCATION_UNIT) * _ALLOCATION_UNIT
        counters.allocations += 1
        allocated, reserved = self.in_use(), self.held()
        if allocated > counters.peak_allocated:
            counters.peak_allocated = allocated
        if reserved > counters.peak_reserved:
            counters.peak_reserved = reserved
        if self.history is not None and self.history.recording:
            return self.history.allocated(memory, size, device)
        return memory

    # The pools answer for the current device; callers make the device they ask about current.
    # CuPy 14 keeps both figures as counters (not a walk over its blocks), so reading them at
    # every allocation costs the same however many arrays are alive.
    def in_use(self):
        return self.pool.used_bytes() + sum(p.used_bytes() for p in self.private_pools.values())

    def held(self):
        return self.pool.total_bytes() + sum(p.total_bytes() for p in self.private_pools.values())

    def _oom_message(self, size, device):
        free, total = self.cupy.cuda.runtime.memGetInfo()
        allocated, reserved = self.in_use(), self.held()
        limit = self.pool.get_limit()
        capacity = (f"GPU {device} has a total capacity of {_format_size(total)} of which "
                    f"{_format_size(free)} is free.")
        if limit:
            capacity += (f" The memory pool's limit (set_per_process_memory_fraction or "
                         f"CUPY_GPU_MEMORY_LIMIT) is {_format_size(limit)}.")
        return (f"CUDA out of memory. Tried to allocate {_format_size(size)}. {capacity} Of the "
                f"allocated memory {_format_size(allocated)} is allocated by Ember, and "
                f"{_format_size(reserved - allocated)} is reserved by Ember but unallocated.")


_ALLOCATORS = {}  # id(cupy module) -> its TrackingAllocator


def install_tracking_allocator(cupy):
    """Put the tracking allocator in front of ``cupy``'s pool, once per CuPy module (the CUDA
    backend calls this when it starts). Returns it."""
    allocator = _ALLOCATORS.get(id(cupy))
    if allocator is None:
        allocator = _ALLOCATORS[id(cupy)] = TrackingAllocator(cupy)
        cupy.cuda.set_allocator(allocator)
    return allocator


def _allocator_or_none():
    from . import _cupy_or_none
    cupy = _cupy_or_none()  # starting the backend installs the allocator
    return None if cupy is None else _ALLOCATORS.get(id(cupy))


def _device_index(device):
    from . import _index
    return _index(device)


def _on_device(allocator, index):
    """Device ``index`` made current for a ``with``: the pools answer for the current device."""
    return allocator.cupy.cuda.Device(index)


def memory_stats(device=None):
    """The statistics of ``device``'s memory, under torch's key names, sorted as torch sorts
    them: only those Ember can answer (see the module docstring). Empty without CUDA."""
    allocator = _allocator_or_none()
    if allocator is None:
        return collections.OrderedDict()
    index = _device_index(device)
    with _on_device(allocator, index):
        allocated, reserved = allocator.in_use(), allocator.held()
    counters = allocator.counters[index]
    freed = counters.allocated_bytes - (allocated - counters.base_allocated)  # net = in - out
    stats = {
        "allocated_bytes.all.current": allocated,
        "allocated_bytes.all.peak": max(counters.peak_allocated, allocated),
        "allocated_bytes.all.allocated": counters.allocated_bytes,
        "allocated_bytes.all.freed": freed,
        "allocation.all.allocated": counters.allocations,
        "num_ooms": counters.num_ooms,
        "reserved_bytes.all.current": reserved,
        "reserved_bytes.all.peak": max(counters.peak_reserved, reserved),
    }
    return collections.OrderedDict(sorted(stats.items()))


def memory_stats_as_nested_dict(device=None):
    """``memory_stats`` with each dotted key split into nested dicts, as torch's."""
    nested = {}
    for key, value in memory_stats(device).items():
        *parents, leaf = key.split(".")
        level = nested
        for part in parents:
            level = level.setdefault(part, {})
        level[leaf] = value
    return nested


def memory_allocated(device=None):
    """Bytes in use on ``device`` by live CuPy arrays (Ember's tensors), 512-byte rounded."""
    return memory_stats(device).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device=None):
    """The peak of ``memory_allocated`` since the start or ``reset_peak_memory_stats``."""
    return memory_stats(device).get("allocated_bytes.all.peak", 0)


def memory_reserved(device=None):
    """Bytes CuPy's pools hold on ``device``: in use plus cached for reuse."""
    return memory_stats(device).get("reserved_bytes.all.current", 0)


def max_memory_reserved(device=None):
    """The peak of ``memory_reserved`` since the start or ``reset_peak_memory_stats``."""
    return memory_stats(device).get("reserved_bytes.all.peak", 0)


def memory_cached(device=None):
    """Deprecated: ``memory_reserved``."""
    warnings.warn("`torch.cuda.memory_cached` has been renamed to `torch.cuda.memory_reserved`",
                  FutureWarning, stacklevel=2)
    return memory_reserved(device)


def max_memory_cached(device=None):
    """Deprecated: ``max_memory_reserved``."""
    warnings.warn("`torch.cuda.max_memory_cached` has been renamed to "
                  "`torch.cuda.max_memory_reserved`", FutureWarning, stacklevel=2)
    return max_memory_reserved(device)


def _require_allocator():
    allocator = _allocator_or_none()
    if allocator is None:
        # torch's CPU build fails here too, reaching for a CUDA binding it lacks (an
        # AttributeError from torch._C); Ember says why in torch's own words.
        from . import _NOT_COMPILED
        raise AssertionError(_NOT_COMPILED)
    return allocator


def reset_peak_memory_stats(device=None):
    """Restart the peaks (``max_memory_allocated``, ``max_memory_reserved``) from the current
    figures."""
    allocator = _require_allocator()
    index = _device_index(device)
    with _on_device(allocator, index):
        counters = allocator.counters[index]
        counters.peak_allocated, counters.peak_reserved = allocator.in_use(), allocator.held()


def reset_accumulated_memory_stats(device=None):
    """Zero the running totals: bytes allocated and freed, allocation count, OOM count."""
    allocator = _require_allocator()
    index = _device_index(device)
    with _on_device(allocator, index):
        counters = allocator.counters[index]
        counters.allocated_bytes = counters.allocations = counters.num_ooms = 0
        counters.base_allocated = allocator.in_use()


def reset_max_memory_allocated(device=None):
    """Deprecated: resets every peak, as ``reset_peak_memory_stats``."""
    warnings.warn("torch.cuda.reset_max_memory_allocated now calls "
                  "torch.cuda.reset_peak_memory_stats, which resets /all/ peak memory stats.",
                  FutureWarning, stacklevel=2)
    reset_peak_memory_stats(device)


def reset_max_memory_cached(device=None):
    """Deprecated: resets every peak, as ``reset_peak_memory_stats``."""
    warnings.warn("torch.cuda.reset_max_memory_cached now calls "
                  "torch.cuda.reset_peak_memory_stats, which resets /all/ peak memory stats.",
                  FutureWarning, stacklevel=2)
    reset_peak_memory_stats(device)


def empty_cache():
    """Return the pool's cached, unused blocks on every device to the driver (what
    ``nvidia-smi`` shows drops; ``memory_allocated`` does not change). Without CUDA, nothing."""
    allocator = _allocator_or_none()
    if allocator is None:
        return
    from . import device_count
    for index in range(device_count()):
        with _on_device(allocator, index):
            allocator.pool.free_all_blocks()


def mem_get_info(device=None):
    """``(free, total)`` bytes of ``device`` as the driver reports them (cudaMemGetInfo)."""
    from . import _lazy_init
    cupy = _lazy_init()
    with cupy.cuda.Device(_device_index(device)):
        return tuple(cupy.cuda.runtime.memGetInfo())


def set_per_process_memory_fraction(fraction, device=None):
    """Cap the pool on ``device`` at ``fraction`` of its total memory: an allocation beyond
    it raises ``OutOfMemoryError`` (``MemoryPool.set_limit(fraction=...)``)."""
    allocator = _require_allocator()
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if not 0 <= fraction <= 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    with _on_device(allocator, _device_index(device)):
        allocator.pool.set_limit(fraction=fraction)


def get_per_process_memory_fraction(device=None):
    """The fraction of ``device``'s memory the pool may use (1.0 when unlimited)."""
    allocator = _require_allocator()
    index = _device_index(device)
    with _on_device(allocator, index):
        limit = allocator.pool.get_limit()
        total = allocator.cupy.cuda.runtime.memGetInfo()[1]
    return 1.0 if limit == 0 else limit / total


def memory_summary(device=None, abbreviated=False):
    """A table of ``memory_stats`` for ``device``, laid out as torch's; ``abbreviated`` is
    accepted for torch's signature (Ember has no per-pool breakdown to leave out)."""
    _require_allocator()
    stats = memory_stats(device)
    index = _device_index(device)
    rule = "|" + "=" * 75 + "|"
    thin = "|" + "-" * 75 + "|"

    def row(name, cur, peak, alloc, freed, fmt):
        cells = [fmt(v) if v is not None else "" for v in (cur, peak, alloc, freed)]
        return "| " + f"{name:<24}" + "".join(f"| {c:>10} " for c in cells) + "|"

    lines = [rule, "|" + f"Ember CUDA memory summary, device ID {index}".center(75) + "|",
             thin, "|" + "CUDA OOMs: {:<13d}".format(stats["num_ooms"]).center(75) + "|", rule,
             "| " + f"{'Metric':<24}" + "".join(f"| {h:>10} " for h in
                                                 ("Cur Usage", "Peak Usage", "Tot Alloc",
                                                  "Tot Freed")) + "|", thin,
             row("Allocated memory", stats["allocated_bytes.all.current"],
                 stats["allocated_bytes.all.peak"], stats["allocated_bytes.all.allocated"],
                 stats["allocated_bytes.all.freed"], _format_size_short), thin,
             row("Reserved memory", stats["reserved_bytes.all.current"],
                 stats["reserved_bytes.all.peak"], None, None, _format_size_short), thin,
             row("Allocations", None, None, stats["allocation.all.allocated"], None, str), rule]
    return "\n".join(lines) + "\n"


def _record_memory_history(enabled="all", context="all", stacks="all", max_entries=sys.maxsize,
                           device=None, clear_history=False, compile_context=False,
                           global_record_annotations=False, skip_actions=None):
    """Start (``enabled='all'``: live blocks and a trace of actions; ``'state'``: live blocks
    only) or stop (``enabled=None``) recording allocations, as torch's. ``context`` says which
    actions keep their Python stack (None, 'state': live blocks only, 'alloc', 'all');
    ``stacks`` may be 'python' or 'all' (Ember has no C++ frames: both give Python's);
    ``max_entries`` bounds each device's trace. Every device is recorded (``device`` is
    accepted for torch's signature)."""
    from ._memory_history import MemoryHistory
    allocator = _require_allocator()
    if compile_context or global_record_annotations or skip_actions:
        raise NotImplementedError("_record_memory_history: compile_context, "
                                  "global_record_annotations and skip_actions need torch's "
                                  "compiler and record_function annotations in the trace")
    history = allocator.history
    if enabled is None:
        if history is not None:
            history.recording = False  # blocks and trace stay readable until cleared
            if clear_history:
                history.clear()
        return
    if history is None:
        allocator.history = MemoryHistory(allocator.cupy, enabled, context, stacks, max_entries)
    else:
        history.configure(enabled, context, stacks, max_entries)
        if clear_history:
            history.clear()


def _snapshot(device=None, augment_with_fx_traces=False):
    """The recorded state, as torch's snapshot dict: ``segments`` (each live block recorded
    since recording began, as its own segment) and ``device_traces`` (one list of actions per
    device). Empty lists when nothing was recorded."""
    allocator = _require_allocator()
    if augment_with_fx_traces:
        raise NotImplementedError("_snapshot(augment_with_fx_traces=True): Ember's traces "
                                  "carry no FX node annotations")
    from . import device_count
    if allocator.history is None:
        return {"segments": [], "device_traces": [[] for _ in range(device_count())],
                "allocator_settings": {}, "external_annotations": []}
    return allocator.history.snapshot(device_count())


def _dump_snapshot(filename="dump_snapshot.pickle", augment_with_fx_traces=False):
    """``_snapshot()`` pickled to ``filename``: drag it onto https://pytorch.org/memory_viz."""
    import pickle
    snapshot = _snapshot(augment_with_fx_traces=augment_with_fx_traces)
    with open(filename, "wb") as f:
        pickle.dump(snapshot, f)


def memory_snapshot(mempool_id=None, include_traces=True):
    """The snapshot's segments (``_snapshot()['segments']``)."""
    if mempool_id is not None:
        raise NotImplementedError("memory_snapshot(mempool_id=...): Ember's graph pools are "
                                  "CuPy pools without torch's pool ids")
    return _snapshot()["segments"]


def _format_size_short(size):
    # torch's summary cells: step up a unit while the figure is at least 768 of the next one
    unit = "B  "
    for bigger in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        if size < 768 * 1024:
            break
        unit, size = bigger, size // 1024
    return f"{size:6d} {unit}"
