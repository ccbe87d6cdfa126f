"""The allocation history behind ``ember.cuda.memory._record_memory_history`` / ``_snapshot``.

While recording, the tracking allocator (``memory.TrackingAllocator``) hands each allocation
to ``MemoryHistory.allocated``, which returns CuPy's pointer wrapped so that its release is
seen: the array gets a ``MemoryPointer`` over ``cupy.cuda.UnownedMemory`` whose owner is a
small ``_Allocation`` object holding the pool's own pointer. When the array dies, its pointer,
the unowned memory and then the owner go; the owner's ``__del__`` records the free and lets
the pool's pointer go back to the pool, exactly when CuPy would have had it back. Outside
recording nothing is wrapped (the allocator tests one attribute).

The snapshot is torch's format (what https://pytorch.org/memory_viz reads): ``segments``, a
list of segments with their ``blocks``, and ``device_traces``, one list of actions per device
(``alloc``, ``free_requested``, ``free_completed``), each with ``addr``, ``size``, ``stream``,
``time_us`` and Python ``frames`` (innermost first). CuPy does not expose the arenas its pool
carves blocks from, so each live block is reported as its own segment, and there are no
``segment_alloc``/``segment_free`` actions."""
import collections
import sys
import time
import weakref

__all__ = ["MemoryHistory"]

# CuPy rounds each request up to this many bytes (as memory.py's _ALLOCATION_UNIT)
_UNIT = 512
# torch's boundary between its small and large pools
_SMALL_SEGMENT = 1 << 20


def _python_frames(skip):
    frames = []
    f = sys._getframe(skip)
    while f is not None:
        frames.append({"filename": f.f_code.co_filename, "line": f.f_lineno,
                       "name": f.f_code.co_name})
        f = f.f_back
    return frames


class _Allocation:
    """Owner of one recorded allocation: keeps the pool's pointer alive for as long as the
    array's memory lives, and reports the release when it goes."""

    __slots__ = ("history", "pointer", "addr", "size", "requested", "device", "stream",
                 "frames", "__weakref__")

    def __del__(self):
        history = self.history
        if history is not None:
            history.freed(self)


class MemoryHistory:
    def __init__(self, cupy, enabled="all", context="all", stacks="all",
                 max_entries=sys.maxsize):
        self.cupy = cupy
        self.configure(enabled, context, stacks, max_entries)
        # (device, addr) -> the live recorded block's _Allocation, by weak reference: the
        # history must not keep an array's memory alive
        self.blocks = {}
        self.traces = collections.defaultdict(self._new_trace)

    def configure(self, enabled, context, stacks, max_entries):
        if enabled not in ("state", "all"):
            raise ValueError(f"enabled must be None, 'state' or 'all', got {enabled!r}")
        if context not in (None, "state", "alloc", "all"):
            raise ValueError(f"context must be None, 'state', 'alloc' or 'all', got {context!r}")
        if stacks not in ("python", "all"):
            raise ValueError(f"stacks must be 'python' or 'all', got {stacks!r}")
        self.recording = True
        self.trace = enabled == "all"
        self.context = context
        self.stacks = stacks
        self.max_entries = max_entries
        if hasattr(self, "traces"):
            for device, trace in list(self.traces.items()):
                self.traces[device] = collections.deque(trace, maxlen=self._maxlen())

    def _maxlen(self):
        return None if self.max_entries >= sys.maxsize else max(int(self.max_entries), 0)

    def _new_trace(self):
        return collections.deque(maxlen=self._maxlen())

    def clear(self):
        self.traces.clear()

    def allocated(self, pointer, size, device):
        """The pointer the array gets for the pool's ``pointer`` (``size`` bytes asked)."""
        cupy = self.cupy
        owner = _Allocation()
        owner.history = self
        owner.pointer = pointer
        owner.addr = int(pointer.ptr)
        owner.requested = int(size)
        owner.size = -(-int(size) // _UNIT) * _UNIT
        owner.device = device
        owner.stream = int(cupy.cuda.get_current_stream().ptr)
        owner.frames = _python_frames(3) if self.context in ("state", "alloc", "all") else []
        self.blocks[(device, owner.addr)] = weakref.ref(owner)
        if self.trace:
            self._record("alloc", owner, owner.frames if self.context in ("alloc", "all")
                         else [])
        memory = cupy.cuda.UnownedMemory(owner.addr, owner.requested, owner, device)
        return cupy.cuda.MemoryPointer(memory, 0)

    def freed(self, owner):
        self.blocks.pop((owner.device, owner.addr), None)
        if self.trace and self.recording:
            frames = _python_frames(2) if self.context == "all" else []
            self._record("free_requested", owner, frames)
            self._record("free_completed", owner, frames)
        owner.history = owner.pointer = None  # the pool's pointer goes back to the pool now

    def _record(self, action, owner, frames):
        self.traces[owner.device].append({
            "action": action, "addr": owner.addr, "size": owner.size, "stream": owner.stream,
            "time_us": time.time_ns() // 1000, "frames": frames})

    def snapshot(self, device_count):
        segments = []
        for (device, addr), ref in sorted(self.blocks.items()):
            b = ref()
            if b is None:
                continue
            segments.append({
                "device": device, "address": addr, "total_size": b.size,
                "allocated_size": b.size, "active_size": b.size, "requested_size": b.requested,
                "stream": b.stream,
                "segment_type": "small" if b.size <= _SMALL_SEGMENT else "large",
                "segment_pool_id": (0, 0), "is_expandable": False, "frames": [],
                "blocks": [{"address": addr, "size": b.size, "requested_size": b.requested,
                            "state": "active_allocated", "frames": b.frames}]})
        devices = max([device_count] + [d + 1 for d in self.traces] +
                      [d + 1 for d, _ in self.blocks])
        return {"segments": segments,
                "device_traces": [list(self.traces.get(d, ())) for d in range(devices)],
                "allocator_settings": {}, "external_annotations": []}
