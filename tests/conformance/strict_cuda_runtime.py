"""CuPy 14.2 beyond the array namespace, emulated on the CPU for the CuPy conformance device.

This is part of a conformance device, not a GPU. It gives Ember's CUDA code (``ember.cuda``,
the device RNG, pinned memory) the parts of CuPy it calls besides ``xp``: ``cupy.cuda``
(devices, streams, events, memory pools, allocators, pinned memory, the runtime queries,
NVTX ranges, stream capture into graphs), ``cupy.random`` and ``cupyx``'s pinned arrays. Names,
signatures and exception types are CuPy's (``cupy14_api.json``'s "classes" and "modules";
``test_strict_cuda_runtime.py`` compares every emulated member with them), and the texts of
CUDA errors are the ones CuPy printed when the spec was written.

Semantics emulated, as CuPy documents them:

* devices: ``configure()`` sets how many, their memory and compute capability; the current
  device is per thread; ``Device(n)`` of a missing device fails on use (cudaErrorInvalidDevice).
* streams: ``Stream.null``, ``Stream.ptds`` and new streams; ``with stream:`` makes it current
  for its device and thread, restoring the previous one after. Work runs eagerly on the CPU, so
  every stream is always ``done`` and synchronising has nothing to wait for.
* events carry the host clock's time when recorded: ``get_elapsed_time`` answers milliseconds
  between two recorded, timing-enabled events and raises CuPy's CUDARuntimeError otherwise.
* memory: every device array the conformance namespace creates is allocated through the
  current allocator (``set_allocator``; by default the default ``MemoryPool``), and its memory
  goes back when the array dies. A pool's ``used_bytes`` counts its live allocations (rounded
  up as CuPy rounds), ``total_bytes`` adds its cached free blocks; ``set_limit`` makes an
  allocation beyond the limit raise ``OutOfMemoryError`` (after freeing the cache, as CuPy
  does), and so does one beyond the configured device capacity; ``runtime.memGetInfo``
  answers from that capacity.
* pinned memory: ``PinnedMemoryPool``, ``alloc_pinned_memory``, ``cupyx.empty_pinned`` and
  friends return host NumPy arrays whose memory the pool hands out and takes back;
  ``runtime.pointerGetAttributes`` tells pinned, device and ordinary host memory apart.
* stream capture: between ``begin_capture`` and ``end_capture`` on a non-default stream, every
  call into the conformance namespace made while that stream is current is recorded (and still
  runs once, as it must for its result to exist); ``Graph.launch`` replays the calls in order
  over the same memory, writing each result into the array the capture returned, so a graph
  reads its inputs' current contents as a CUDA graph does. Synchronising or copying to the host
  while capturing raises cudaErrorStreamCaptureUnsupported, as CUDA does.
* ``cupy.random``: CuPy's RandomState/Generator/bit-generator API and signatures over NumPy's
  generators; float draws only in float32/float64, as CuPy.

What this cannot prove: anything about kernels, precision or speed on a GPU; real concurrency
between streams (work never overlaps, so a missing ``wait_event`` goes unnoticed); CuPy's exact
random bits (the draws are NumPy's); the pool's block splitting and merging (free blocks are
reused only at the same rounded size); what a CUDA graph would refuse to capture beyond host
synchronisation; the driver's own memory use.
"""
import inspect
import itertools
import threading
import time
import weakref

import numpy as np

from . import strict_cupy
from .strict_cupy import DeviceArray, SPEC

_FACTS = SPEC["cuda"]
_CONSTANTS = _FACTS["constants"]
_UNIT = _FACTS["memory_pool_rounding"]


class _Config:
    device_count = 1
    total_memory = 80 * 1024 ** 3
    compute_capability = (9, 0)
    multi_processor_count = 132
    name = "CuPy conformance device (CPU emulation, not a GPU)"


def configure(device_count=None, total_memory=None, compute_capability=None):
    """Set the emulated machine: device count, each device's memory in bytes, and the
    compute capability ``(major, minor)``. Tests change it and restore it."""
    previous = (_Config.device_count, _Config.total_memory, _Config.compute_capability)
    if device_count is not None:
        _Config.device_count = int(device_count)
    if total_memory is not None:
        _Config.total_memory = int(total_memory)
    if compute_capability is not None:
        _Config.compute_capability = tuple(compute_capability)
    return previous


class CUDARuntimeError(RuntimeError):
    """``cupy_backends.cuda.api.runtime.CUDARuntimeError``: the status and CUDA's text."""

    def __init__(self, status):
        self.status = status
        super().__init__(_FACTS["runtime_errors"].get(str(status), f"CUDA error {status}"))

    def __reduce__(self):
        return (type(self), (self.status,))


_INVALID_VALUE, _MEMORY_ALLOCATION, _INVALID_DEVICE = 1, 2, 101
_INVALID_HANDLE, _CAPTURE_UNSUPPORTED = 400, 900


class OutOfMemoryError(MemoryError):
    """``cupy.cuda.memory.OutOfMemoryError(size, total, limit=0)``, with CuPy's text."""

    def __init__(self, size, total, limit=0):
        message = f"Out of memory allocating {size:,} bytes (allocated so far: {total:,} bytes"
        if limit:
            message += f", limit set to: {limit:,} bytes"
        super().__init__(message + ").")
        self._args = (size, total, limit)

    def __reduce__(self):
        return (type(self), self._args)


# -- threads: current device and current stream ----------------------------------------------
_local = threading.local()


def _current_device_id():
    return getattr(_local, "device", 0)


def _check_device(device_id):
    if not 0 <= device_id < _Config.device_count:
        raise CUDARuntimeError(_INVALID_DEVICE)


def _stream_stacks():
    stacks = getattr(_local, "streams", None)
    if stacks is None:
        stacks = _local.streams = {}
    return stacks


# -- runtime ---------------------------------------------------------------------------------
class PointerAttributes:
    """``cupy.cuda.runtime.PointerAttributes(device, devicePointer, hostPointer, type=-1)``."""

    def __init__(self, device, devicePointer, hostPointer, type=-1):
        self.device, self.devicePointer, self.hostPointer = device, devicePointer, hostPointer
        self.type = type


class _Runtime:
    """``cupy.cuda.runtime``: the queries Ember makes, answered from ``configure()``."""
    CUDARuntimeError = CUDARuntimeError
    PointerAttributes = PointerAttributes
    locals().update(_CONSTANTS)

    @staticmethod
    def getDeviceCount():
        return _Config.device_count

    @staticmethod
    def getDevice():
        return _current_device_id()

    @staticmethod
    def setDevice(device):
        _check_device(int(device))
        _local.device = int(device)

    @staticmethod
    def memGetInfo():
        """(free, total) bytes of the current device: the configured capacity less what the
        emulated allocations hold (pools' cached blocks included, as on a GPU)."""
        device = _current_device_id()
        total = _Config.total_memory
        return total - _device_bytes.get(device, 0), total

    @staticmethod
    def getDeviceProperties(device):
        _check_device(int(device))
        major, minor = _Config.compute_capability
        return {"name": _Config.name.encode(), "totalGlobalMem": _Config.total_memory,
                "major": major, "minor": minor,
                "multiProcessorCount": _Config.multi_processor_count, "warpSize": 32,
                "maxThreadsPerBlock": 1024, "pciBusID": int(device), "pciDeviceID": 0,
                "pciDomainID": 0, "uuid": int(device).to_bytes(16, "little"),
                "isMultiGpuBoard": 0, "integrated": 0}

    @staticmethod
    def deviceSynchronize():
        _refuse_if_capturing()

    @staticmethod
    def runtimeGetVersion():
        return 13000  # the cupy-cuda13x wheel the spec was written from

    @staticmethod
    def driverGetVersion():
        return 13000

    @staticmethod
    def pointerGetAttributes(ptr):
        """Pinned host memory (type 1), an emulated device allocation (2), else unregistered
        host memory (0), as CUDA 11+ answers for an ordinary host pointer."""
        for base, (size, kind, device) in list(_pointers.items()):
            if base <= ptr < base + max(size, 1):
                return PointerAttributes(device, ptr, ptr if kind == 1 else 0, kind)
        return PointerAttributes(-2, 0, ptr, _CONSTANTS["memoryTypeUnregistered"])

    @staticmethod
    def pointerGetMemoryType(ptr):
        return _Runtime.pointerGetAttributes(ptr).type


runtime = _Runtime

# Live emulated allocations by address: (size, memory type, device), for pointerGetAttributes.
_pointers = {}
# Bytes each device's memory holds (pools' blocks, cached or used, and raw allocations).
_device_bytes = {}


# -- devices -------------------------------------------------------------------------------
class Device:
    """``cupy.cuda.Device(device=None)``: the current device by default."""

    def __init__(self, device=None):
        if device is None:
            device = _current_device_id()
        self.id = int(getattr(device, "id", device))
        self._previous = []

    def use(self):
        runtime.setDevice(self.id)

    def __enter__(self):
        self._previous.append(_current_device_id())
        self.use()
        return self

    def __exit__(self, *args):
        _local.device = self._previous.pop()

    def synchronize(self):
        _check_device(self.id)
        _refuse_if_capturing()

    @property
    def compute_capability(self):
        _check_device(self.id)
        return "".join(str(v) for v in _Config.compute_capability)

    @property
    def mem_info(self):
        with self:
            return runtime.memGetInfo()

    @property
    def pci_bus_id(self):
        _check_device(self.id)
        return f"0000:{self.id:02x}:00.0"

    @classmethod
    def from_pci_bus_id(cls, pci_bus_id):
        device = cls(int(pci_bus_id.split(":")[1], 16))
        _check_device(device.id)
        return device

    @property
    def attributes(self):
        properties = runtime.getDeviceProperties(self.id)
        return {"MultiProcessorCount": properties["multiProcessorCount"],
                "WarpSize": properties["warpSize"],
                "ComputeCapabilityMajor": properties["major"],
                "ComputeCapabilityMinor": properties["minor"]}

    def __int__(self):
        return self.id

    def __index__(self):
        return self.id

    def __eq__(self, other):
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self):
        return hash(("cupy.cuda.Device", self.id))

    def __repr__(self):
        return f"<CUDA Device {self.id}>"


# -- streams, events, graphs -------------------------------------------------------------------
_stream_ids = itertools.count(0x1000)
_capturing = []  # the streams capturing now (strict_cupy records calls while one is current)


def _refuse_if_capturing():
    if _capturing:
        raise CUDARuntimeError(_CAPTURE_UNSUPPORTED)


class Stream:
    """``cupy.cuda.Stream(null=False, non_blocking=False, ptds=False, priority=None)``."""
    null = ptds = None  # set below: the singletons

    def __init__(self, null=False, non_blocking=False, ptds=False, priority=None):
        if null:
            self.ptr, self.device_id = _FACTS["null_stream_ptr"], -1
        elif ptds:
            self.ptr, self.device_id = _FACTS["ptds_stream_ptr"], -1
        else:
            self.ptr, self.device_id = next(_stream_ids), _current_device_id()
        self._non_blocking = bool(non_blocking) and not (null or ptds)
        self._priority = 0 if priority is None else int(priority)
        self._previous = []
        self._graph = None

    @property
    def priority(self):
        return self._priority

    @property
    def is_non_blocking(self):
        return self._non_blocking

    @property
    def done(self):
        if self._graph is not None:
            raise CUDARuntimeError(_CAPTURE_UNSUPPORTED)
        return True  # work runs eagerly: nothing is ever pending

    def _device(self):
        return _current_device_id() if self.device_id == -1 else self.device_id

    def use(self):
        stack = _stream_stacks().setdefault(self._device(), [])
        if stack:
            stack[-1] = self
        else:
            stack.append(self)
        return self

    def __enter__(self):
        stack = _stream_stacks().setdefault(self._device(), [])
        self._previous.append(list(stack))
        stack.append(self)
        return self

    def __exit__(self, *args):
        _stream_stacks()[self._device()] = self._previous.pop()

    def synchronize(self):
        if self._graph is not None:
            raise CUDARuntimeError(_CAPTURE_UNSUPPORTED)
        _refuse_if_capturing()

    def record(self, event=None):
        if event is None:
            event = Event()
        event.record(self)
        return event

    def wait_event(self, event):
        if not isinstance(event, Event):
            raise TypeError(f"Argument 'event' has incorrect type (expected cupy.cuda.Event, "
                            f"got {type(event).__name__})")

    def add_callback(self, callback, arg):
        callback(self, 0, arg)  # status 0: the preceding work succeeded (it already ran)

    def launch_host_func(self, callback, arg):
        callback(arg)

    def begin_capture(self, mode=None):
        if self.ptr == _FACTS["null_stream_ptr"]:
            raise CUDARuntimeError(_CAPTURE_UNSUPPORTED)  # the legacy stream cannot capture
        if self._graph is not None:
            raise CUDARuntimeError(_CONSTANTS.get("cudaErrorIllegalState", 401))
        if mode is not None and mode not in (_CONSTANTS["streamCaptureModeGlobal"],
                                             _CONSTANTS["streamCaptureModeThreadLocal"],
                                             _CONSTANTS["streamCaptureModeRelaxed"]):
            raise CUDARuntimeError(_INVALID_VALUE)
        self._graph = []
        _capturing.append(self)

    def is_capturing(self):
        return self._graph is not None

    def end_capture(self):
        if self._graph is None:
            raise CUDARuntimeError(_INVALID_VALUE)
        nodes, self._graph = self._graph, None
        _capturing.remove(self)
        return Graph(nodes)

    @classmethod
    def from_external(cls, obj):
        return ExternalStream(obj.cuda_stream if hasattr(obj, "cuda_stream") else obj.ptr)

    def __eq__(self, other):
        return isinstance(other, Stream) and other.ptr == self.ptr and \
            other.device_id == self.device_id

    def __hash__(self):
        return hash((self.ptr, self.device_id))

    def __repr__(self):
        return f"<Stream {self.ptr} (device {self.device_id})>"


Stream.null = Stream(null=True)
Stream.ptds = Stream(ptds=True)


class ExternalStream(Stream):
    """``cupy.cuda.ExternalStream(ptr, device_id=-1)``: a stream made elsewhere."""

    def __init__(self, ptr, device_id=-1):
        super().__init__()
        self.ptr, self.device_id = int(ptr), int(device_id)


def get_current_stream(device_id=-1):
    device = _current_device_id() if device_id == -1 else device_id
    stack = _stream_stacks().get(device)
    return stack[-1] if stack else Stream.null


def _capturing_stream():
    """The stream whose capture records the calls made now, if any (strict_cupy asks)."""
    if not _capturing:
        return None
    stream = get_current_stream()
    return stream if stream._graph is not None else None


def record_call(replay, result):
    """Called by the conformance namespace for each call made while capturing: ``replay``
    recomputes the call over the same memory; ``result`` is what the capture returned."""
    stream = _capturing_stream()
    if stream is not None:
        stream._graph.append((replay, result))


def refuse_host_sync():
    """Device-to-host copies (``get``, ``item``, ``float()``...) while a capture is current."""
    if _capturing_stream() is not None:
        raise CUDARuntimeError(_CAPTURE_UNSUPPORTED)


def _write_back(target, value):
    if isinstance(target, DeviceArray):
        if target._a is not value:
            target._a[...] = value
    elif isinstance(target, (tuple, list)):
        for t, v in zip(target, value):
            _write_back(t, v)


class Graph:
    """``cupy.cuda.graph.Graph``: the calls a capture recorded, replayed by ``launch``."""

    def __init__(self, nodes=()):
        self._nodes = list(nodes)

    def launch(self, stream=None):
        if stream is not None and not isinstance(stream, Stream):
            raise TypeError(f"stream must be a cupy.cuda.Stream, got {type(stream).__name__}")
        for replay, result in self._nodes:
            _write_back(result, replay())

    def upload(self, stream=None):
        """CUDA uploads the graph's executable to the device ahead of its first launch: here
        it is always ready to run."""

    def debug_dot_str(self, flags=0):
        lines = [f'  n{i} [label="{getattr(replay, "__qualname__", "call")}"];'
                 for i, (replay, _) in enumerate(self._nodes)]
        lines += [f"  n{i} -> n{i + 1};" for i in range(len(self._nodes) - 1)]
        return "digraph conformance_graph {\n" + "\n".join(lines) + "\n}\n"

    @property
    def graph(self):
        return id(self)

    @property
    def graphExec(self):
        return id(self._nodes)

    @property
    def host_funcargs(self):
        return set()


class graph:
    Graph = Graph


class Event:
    """``cupy.cuda.Event(block=False, disable_timing=False, interprocess=False)``."""

    def __init__(self, block=False, disable_timing=False, interprocess=False):
        if interprocess and not disable_timing:
            raise CUDARuntimeError(_INVALID_VALUE)  # CUDA: interprocess needs no timing
        self._disable_timing = bool(disable_timing)
        self._time = None
        self.ptr = next(_stream_ids)

    def record(self, stream=None):
        if stream is None:
            stream = get_current_stream()
        self._time = time.perf_counter()

    def synchronize(self):
        _refuse_if_capturing()

    @property
    def done(self):
        return True  # the recorded work ran before record returned


def get_elapsed_time(start_event, end_event):
    """Milliseconds from ``start_event`` to ``end_event``, both recorded with timing on."""
    for event in (start_event, end_event):
        if event._disable_timing or event._time is None:
            raise CUDARuntimeError(_INVALID_HANDLE)
    return (end_event._time - start_event._time) * 1e3


# -- device memory -------------------------------------------------------------------------
def _round(size):
    return -(-size // _UNIT) * _UNIT


_addresses = itertools.count(0x7F0000000000, _UNIT)


class _DeviceBlock:
    """Device memory: an address range booked against its device's capacity. Its bytes exist
    only once a MemoryPointer reads or writes them (memset, copies): a device array's data is
    the NumPy array the conformance namespace holds, so a block that only books the array's
    size needs none."""

    def __init__(self, size, device_id):
        free, _ = _device_free(device_id)
        if size > free:
            raise OutOfMemoryError(size, _device_bytes.get(device_id, 0))
        self.size, self.device_id = size, device_id
        self.ptr = next(_addresses)
        if size > _UNIT:  # the rest of the block's addresses
            next(itertools.islice(_addresses, -(-size // _UNIT) - 2, None), None)
        self._bytes = None
        _device_bytes[device_id] = _device_bytes.get(device_id, 0) + size
        _pointers[self.ptr] = (size, _CONSTANTS["memoryTypeDevice"], device_id)

    @property
    def _storage(self):
        if self._bytes is None:
            self._bytes = np.zeros(max(self.size, 1), dtype=np.uint8)
        return self._bytes

    def __del__(self):
        if "ptr" in self.__dict__:  # not when __init__ raised OutOfMemoryError
            _release_block(self.ptr, self.size, self.device_id)


def _device_free(device_id):
    return _Config.total_memory - _device_bytes.get(device_id, 0), _Config.total_memory


def _release_block(ptr, size, device_id):
    _device_bytes[device_id] = _device_bytes.get(device_id, 0) - size
    _pointers.pop(ptr, None)


class MemoryPointer:
    """``cupy.cuda.MemoryPointer(mem, offset)``: a place in device memory."""

    def __init__(self, mem, offset):
        self.mem, self.ptr = mem, mem.ptr + offset
        self.device_id = mem.device_id

    @property
    def device(self):
        return Device(self.device_id)

    def _host_view(self, size):
        start = self.ptr - self.mem.ptr
        return self.mem._storage[start:start + size]

    def memset(self, value, size):
        self._host_view(size)[...] = value

    def memset_async(self, value, size, stream=None):
        self.memset(value, size)

    def copy_from_device(self, src, size):
        self._host_view(size)[...] = src._host_view(size)

    def copy_from_device_async(self, src, size, stream=None):
        self.copy_from_device(src, size)

    def copy_from_host(self, mem, size):
        refuse_host_sync()
        self._host_view(size)[...] = np.frombuffer(_host_buffer(mem, size), np.uint8, size)

    def copy_from_host_async(self, mem, size, stream=None):
        self.copy_from_host(mem, size)

    def copy_to_host(self, mem, size):
        refuse_host_sync()
        np.frombuffer(_host_buffer(mem, size), np.uint8, size)[...] = self._host_view(size)

    def copy_to_host_async(self, mem, size, stream=None):
        self.copy_to_host(mem, size)

    def copy_from(self, mem, size):
        if isinstance(mem, MemoryPointer):
            self.copy_from_device(mem, size)
        else:
            self.copy_from_host(mem, size)

    def copy_from_async(self, mem, size, stream=None):
        self.copy_from(mem, size)

    def __int__(self):
        return self.ptr


def _host_buffer(mem, size):
    if isinstance(mem, PinnedMemoryPointer):
        return mem._view(size)
    if isinstance(mem, int):
        raise TypeError("the CuPy conformance device copies from and to host buffers, not raw "
                        "integer addresses")
    return memoryview(mem).cast("B")


def _raw_malloc(size):
    """The allocator without a pool (``set_allocator(None)``): one block per request."""
    return MemoryPointer(_DeviceBlock(size, _current_device_id()), 0)


class _PooledBlock(_DeviceBlock):
    pass


class _PooledPointer(MemoryPointer):
    """A pool's pointer: when it dies its block goes back to the pool's cache."""

    def __del__(self):
        self._pool._give_back(self.mem, self.mem.size, self.device_id)


class MemoryPool:
    """``cupy.cuda.MemoryPool(allocator=None)``: caches freed blocks for reuse, per device."""

    def __init__(self, allocator=None):
        self._allocator = allocator
        self._used = {}      # device -> bytes in live pointers
        self._free = {}      # device -> {rounded size: [blocks]}
        self._limit = {}     # device -> bytes, 0 for none
        self._blocks = {}    # device -> bytes in blocks this pool holds

    def malloc(self, size):
        device = _current_device_id()
        size = _round(int(size))
        if size == 0:
            return MemoryPointer(_DeviceBlock(0, device), 0)
        free_list = self._free.setdefault(device, {}).get(size)
        block = free_list.pop() if free_list else None
        if block is None:
            block = self._new_block(size, device)
        self._used[device] = self._used.get(device, 0) + size
        pointer = _PooledPointer(block, 0)
        pointer._pool = self
        return pointer

    def _new_block(self, size, device):
        limit = self._limit.get(device, 0)
        held = self._blocks.get(device, 0)
        if limit and held + size > limit:
            self.free_all_blocks()
            held = self._blocks.get(device, 0)
            if held + size > limit:
                raise OutOfMemoryError(size, held, limit)
        try:
            block = _PooledBlock(size, device)
        except OutOfMemoryError:
            self.free_all_blocks()  # CuPy frees its cache and retries once
            block = _PooledBlock(size, device)
        self._blocks[device] = self._blocks.get(device, 0) + size
        return block

    def _give_back(self, block, size, device):
        self._used[device] -= size
        self._free.setdefault(device, {}).setdefault(size, []).append(block)

    def free_all_blocks(self, stream=None):
        device = _current_device_id()
        freed = sum(b.size for blocks in self._free.get(device, {}).values() for b in blocks)
        self._free[device] = {}
        self._blocks[device] = self._blocks.get(device, 0) - freed

    def free_all_free(self):
        self.free_all_blocks()

    def n_free_blocks(self):
        return sum(len(b) for b in self._free.get(_current_device_id(), {}).values())

    def used_bytes(self):
        return self._used.get(_current_device_id(), 0)

    def free_bytes(self):
        return sum(b.size for blocks in self._free.get(_current_device_id(), {}).values()
                   for b in blocks)

    def total_bytes(self):
        return self.used_bytes() + self.free_bytes()

    def set_limit(self, size=None, fraction=None):
        if size is not None and fraction is not None:
            raise ValueError("size and fraction cannot be specified at one time")
        if fraction is not None:
            if not 0 <= fraction <= 1:
                raise ValueError(f"memory limit fraction out of range: {fraction}")
            size = int(_Config.total_memory * fraction)
        if size is None:
            size = 0
        if size < 0:
            raise ValueError(f"memory limit size out of range: {size}")
        self._limit[_current_device_id()] = int(size)

    def get_limit(self):
        return self._limit.get(_current_device_id(), 0)


_default_pool = MemoryPool()
_allocator = [_default_pool.malloc]


def get_default_memory_pool():
    return _default_pool


def set_allocator(allocator=None):
    """The function every device allocation calls with a byte count; None allocates without a
    pool, as in CuPy."""
    _allocator[0] = _raw_malloc if allocator is None else allocator


def get_allocator():
    return _allocator[0]


def alloc(size):
    return _allocator[0](size)


# Keeps each device array's allocation alive for as long as the array's memory lives.
_live = {}


def track(array):
    """Allocate a new device array's bytes through the current allocator; the memory goes back
    when the NumPy array holding the data is collected."""
    pointer = _allocator[0](array.nbytes)
    key = id(array)
    _live[key] = (pointer, weakref.ref(array, lambda ref, key=key: _live.pop(key, None)))


# -- pinned (page-locked) host memory --------------------------------------------------------
class PinnedMemory:
    """``cupy.cuda.PinnedMemory(size, flags=0)``: page-locked host memory."""

    def __init__(self, size, flags=0):
        self.size = int(size)
        self._storage = np.empty(max(self.size, 1), dtype=np.uint8)
        self.ptr = self._storage.ctypes.data
        _pointers[self.ptr] = (self.size, _CONSTANTS["memoryTypeHost"], -2)
        weakref.finalize(self, _pointers.pop, self.ptr, None)


class PinnedMemoryPointer:
    """``cupy.cuda.PinnedMemoryPointer(mem, offset)``; supports NumPy's buffer protocol
    through ``__array_interface__`` (CuPy's supports Python's buffer protocol)."""

    def __init__(self, mem, offset):
        self.mem, self.ptr = mem, mem.ptr + offset
        self._offset = offset

    def size(self):
        return self.mem.size - self._offset

    def _view(self, size=None):
        return self.mem._storage[self._offset:self._offset + (self.size() if size is None
                                                              else size)]

    @property
    def __array_interface__(self):
        return {"shape": (self.size(),), "typestr": "|u1", "data": (self.ptr, False),
                "version": 3}


def _pinned_malloc(size):
    return PinnedMemoryPointer(PinnedMemory(size), 0)


class PinnedMemoryPool:
    """``cupy.cuda.PinnedMemoryPool(allocator=_malloc)``: caches freed pinned blocks."""

    def __init__(self, allocator=None):
        self._allocator = allocator or _pinned_malloc
        self._free = {}

    def malloc(self, size):
        size = _round(int(size))
        free = self._free.get(size)
        mem = free.pop() if free else self._allocator(size).mem
        pointer = PinnedMemoryPointer(mem, 0)
        weakref.finalize(pointer, self._give_back, mem, size)
        return pointer

    def _give_back(self, mem, size):
        self._free.setdefault(size, []).append(mem)

    def free_all_blocks(self):
        self._free = {}

    def n_free_blocks(self):
        return sum(len(v) for v in self._free.values())


_default_pinned_pool = PinnedMemoryPool()
_pinned_allocator = [_default_pinned_pool.malloc]


def get_default_pinned_memory_pool():
    return _default_pinned_pool


def set_pinned_memory_allocator(allocator=None):
    _pinned_allocator[0] = _pinned_malloc if allocator is None else allocator


def alloc_pinned_memory(size):
    return _pinned_allocator[0](size)


def empty_pinned(shape, dtype=float, order="C"):
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    pointer = alloc_pinned_memory(nbytes)
    # The array's base is the pointer, so the pinned block lives as long as the array.
    return np.ndarray(shape, dtype, buffer=np.asarray(pointer)[:nbytes] if nbytes else None,
                      order=order) if nbytes else np.ndarray(shape, dtype, order=order)


def zeros_pinned(shape, dtype=float, order="C"):
    out = empty_pinned(shape, dtype, order)
    out[...] = 0
    return out


def _like(a, dtype, order, shape):
    dtype = a.dtype if dtype is None else dtype
    shape = a.shape if shape is None else shape
    if order in ("A", "K"):
        order = "F" if a.flags.f_contiguous and not a.flags.c_contiguous else "C"
    return shape, dtype, order


def empty_like_pinned(a, dtype=None, order="K", subok=None, shape=None):
    return empty_pinned(*_like(a, dtype, order, shape))


def zeros_like_pinned(a, dtype=None, order="K", subok=None, shape=None):
    return zeros_pinned(*_like(a, dtype, order, shape))


# -- NVTX ------------------------------------------------------------------------------------
class nvtx:
    """``cupy.cuda.nvtx``: ranges are kept per thread, and every push, pop and mark goes to
    ``log`` so tests can see what a profiler would."""
    available = True
    log = []
    _range_ids = itertools.count(1)

    @staticmethod
    def _stack():
        stack = getattr(_local, "nvtx", None)
        if stack is None:
            stack = _local.nvtx = []
        return stack

    @staticmethod
    def RangePush(message, id_color=-1):
        nvtx._stack().append(message)
        nvtx.log.append(("push", message))

    @staticmethod
    def RangePushC(message, color=0):
        nvtx.RangePush(message)

    @staticmethod
    def RangePop():
        stack = nvtx._stack()
        # NVTX returns an error code for a pop without a push; CuPy ignores it.
        nvtx.log.append(("pop", stack.pop() if stack else None))

    @staticmethod
    def Mark(message, id_color=-1):
        nvtx.log.append(("mark", message))

    @staticmethod
    def MarkC(message, color=0):
        nvtx.Mark(message)

    @staticmethod
    def RangeStart(message, color=0):
        range_id = next(nvtx._range_ids)
        nvtx.log.append(("start", message, range_id))
        return range_id

    @staticmethod
    def RangeEnd(range_id):
        nvtx.log.append(("end", range_id))


# -- cupy.random -----------------------------------------------------------------------------
_FLOAT_DRAWS = frozenset({
    "rand", "randn", "random_sample", "random", "ranf", "sample", "uniform", "normal",
    "standard_normal", "standard_exponential", "exponential", "gamma", "standard_gamma",
    "beta", "lognormal", "laplace", "logistic", "gumbel", "rayleigh", "pareto", "power",
    "weibull", "wald", "vonmises", "standard_cauchy", "standard_t", "chisquare",
    "noncentral_chisquare", "f", "noncentral_f", "triangular", "dirichlet",
    "multivariate_normal"})


def _device(result):
    return strict_cupy._wrap(np.asarray(result)) if not isinstance(result, DeviceArray) \
        else result


def _draw(numpy_method, name, record):
    """One CuPy draw method over NumPy's: CuPy's ``dtype`` parameter, which NumPy's legacy
    methods lack, casts the draw; float draws take only float32 and float64, as in CuPy."""
    params = record["params"]
    # rand(*size, dtype=float) and randn take their size as varargs and only dtype by keyword.
    allowed = params + ["dtype"] if record["kwargs"] else params
    takes_dtype = "dtype" in allowed

    def method(self, *args, **kwargs):
        for key in kwargs:
            if key not in allowed:
                raise TypeError(f"{name}() got an unexpected keyword argument '{key}'")
        dtype = None
        if takes_dtype:
            index = params.index("dtype") if "dtype" in params else len(args)
            if len(args) > index:
                dtype, args = args[index], args[:index] + args[index + 1:]
            dtype = kwargs.pop("dtype", dtype)
        args = [a.get() if isinstance(a, DeviceArray) else a for a in args]
        kwargs = {k: v.get() if isinstance(v, DeviceArray) else v for k, v in kwargs.items()}
        if name in _FLOAT_DRAWS:
            dtype = np.dtype(float if dtype is None else dtype)
            if dtype.char not in "fd":
                raise TypeError(f"cupy.random only supports float32 and float64, got {dtype}")
        source = getattr(self._numpy, numpy_method)
        if name in ("rand", "randn"):
            result = source(*args)
        elif name == "randint" and dtype is not None:
            result = source(*args, dtype=dtype, **kwargs)
            dtype = None
        else:
            result = source(*args, **kwargs)
        result = np.asarray(result)
        if dtype is not None:
            result = result.astype(dtype)
        return _device(result)
    method.__name__ = name
    # The method takes CuPy's parameters (it refuses others above): it says so to inspect.
    kind = inspect.Parameter
    method.__signature__ = inspect.Signature(
        [kind("self", kind.POSITIONAL_OR_KEYWORD)] +
        [kind(p, kind.POSITIONAL_OR_KEYWORD) for p in params] +
        ([kind("size", kind.VAR_POSITIONAL)] if record["varargs"] else []) +
        ([kind("kwarg", kind.VAR_KEYWORD)] if record["kwargs"] else []))
    return method


_RANDOM_STATE = SPEC["classes"]["cupy.random.RandomState"]["members"]


class RandomState:
    """``cupy.random.RandomState(seed=None, method=CURAND_RNG_PSEUDO_DEFAULT)`` over NumPy's
    legacy RandomState: CuPy's API and dtypes, NumPy's numbers (not cuRAND's)."""

    def __init__(self, seed=None, method=100):
        self.method = method
        self.seed(seed)

    def seed(self, seed=None):
        if isinstance(seed, DeviceArray):
            seed = seed.get()
        self._numpy = np.random.RandomState(
            None if seed is None else np.asarray(seed).astype(np.uint64) % (2 ** 32))

    def permutation(self, a):
        if isinstance(a, DeviceArray):
            a = a.get()
        return _device(self._numpy.permutation(a))

    def shuffle(self, a):
        if not isinstance(a, DeviceArray):
            raise TypeError("The array must be cupy.ndarray")
        self._numpy.shuffle(a._a)

    def choice(self, a, size=None, replace=True, p=None):
        a = a.get() if isinstance(a, DeviceArray) else a
        p = p.get() if isinstance(p, DeviceArray) else p
        return _device(self._numpy.choice(a, size=size, replace=replace, p=p))

    def tomaxint(self, size=None):
        return _device(self._numpy.randint(0, np.iinfo(np.int64).max, size=size,
                                           dtype=np.int64))


for _name, _record in _RANDOM_STATE.items():
    if _record["kind"] == "method" and not _name.startswith("_") and \
            _name not in vars(RandomState) and hasattr(np.random.RandomState, _name):
        setattr(RandomState, _name, _draw(_name, _name, _record))

_random_state = {}


def get_random_state():
    device = _current_device_id()
    state = _random_state.get(device)
    if state is None:
        state = _random_state[device] = RandomState()
    return state


def set_random_state(rs):
    _random_state[_current_device_id()] = rs


def reset_states():
    _random_state.clear()


def seed(seed=None):
    get_random_state().seed(seed)


class BitGenerator:
    """``cupy.random.BitGenerator(seed=None)``: here over NumPy's Philox (not cuRAND)."""

    def __init__(self, seed=None):
        if isinstance(seed, DeviceArray):
            seed = seed.get()
        self._numpy = np.random.Philox(seed)

    def random_raw(self, size=None, output=True):
        raw = self._numpy.random_raw(size)
        raw = np.asarray(raw, dtype=np.uint64) & 0xFFFFFFFF  # cuRAND draws 32-bit words
        return _device(raw) if output else None


class XORWOW(BitGenerator):
    def __init__(self, seed=None, *, size=-1):
        super().__init__(seed)
        self.generator = 101  # CURAND_RNG_PSEUDO_XORWOW

    def state(self):
        return id(self._numpy)


class MRG32k3a(XORWOW):
    pass


class Philox4x3210(XORWOW):
    pass


class Generator:
    """``cupy.random.Generator(bit_generator)`` (``default_rng``), over NumPy's Generator."""

    def __init__(self, bit_generator):
        if not isinstance(bit_generator, BitGenerator):
            raise TypeError("Generator requires a cupy.random.BitGenerator")
        self.bit_generator = bit_generator
        self._numpy = np.random.Generator(bit_generator._numpy)

    def random(self, size=None, dtype=np.float64, out=None):
        return self._float("random", size, dtype, out)

    def standard_normal(self, size=None, dtype=np.float64, out=None):
        return self._float("standard_normal", size, dtype, out)

    def standard_exponential(self, size=None, dtype=np.float64, method="inv", out=None):
        return self._float("standard_exponential", size, dtype, out)

    def standard_gamma(self, shape, size=None, dtype=np.float64, out=None):
        return self._float("standard_gamma", size, dtype, out, shape)

    def _float(self, name, size, dtype, out, *leading):
        dtype = np.dtype(dtype)
        if dtype.char not in "fd":
            raise TypeError(f"cupy.random only supports float32 and float64, got {dtype}")
        if out is not None:
            size = out.shape
        values = getattr(self._numpy, name)(*leading, size=size).astype(dtype)
        if out is not None:
            out._a[...] = values
            return out
        return _device(values)

    def uniform(self, low=0.0, high=1.0, size=None, dtype=np.float64):
        return _device(self._numpy.uniform(low, high, size).astype(dtype))

    def beta(self, a, b, size=None, dtype=np.float64):
        return _device(self._numpy.beta(a, b, size).astype(dtype))

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        return _device(self._numpy.integers(low, high, size, dtype=dtype, endpoint=endpoint))


def _generator_draw(name, params):
    def draw(self, *args, **kwargs):
        args = [a.get() if isinstance(a, DeviceArray) else a for a in args]
        return _device(getattr(self._numpy, name)(*args, **kwargs))
    kind = inspect.Parameter
    draw.__name__ = name
    draw.__signature__ = inspect.Signature(
        [kind("self", kind.POSITIONAL_OR_KEYWORD)] +
        [kind(p, kind.POSITIONAL_OR_KEYWORD) for p in params])
    return draw


for _name, _record in SPEC["classes"]["cupy.random._generator_api.Generator"]["members"].items():
    if _record["kind"] == "method" and not _name.startswith("_") and \
            _name not in vars(Generator):
        setattr(Generator, _name, _generator_draw(_name, _record["params"]))


def default_rng(seed=None):
    if isinstance(seed, Generator):
        return seed
    if isinstance(seed, BitGenerator):
        return Generator(seed)
    return Generator(XORWOW(seed))


def _module_draw(name):
    def draw(*args, **kwargs):
        return getattr(get_random_state(), name)(*args, **kwargs)
    draw.__name__ = name
    return draw


class random:
    """``cupy.random``: the module functions draw from the current device's RandomState."""
    RandomState, BitGenerator, XORWOW = RandomState, BitGenerator, XORWOW
    MRG32k3a, Philox4x3210 = MRG32k3a, Philox4x3210
    default_rng = staticmethod(default_rng)
    get_random_state = staticmethod(get_random_state)
    set_random_state = staticmethod(set_random_state)
    reset_states = staticmethod(reset_states)
    seed = staticmethod(seed)


for _name, _record in SPEC["modules"]["cupy.random"].items():
    if _record["kind"] == "function" and not hasattr(random, _name) and \
            hasattr(RandomState, {"random": "random_sample", "ranf": "random_sample",
                                  "sample": "random_sample"}.get(_name, _name)):
        setattr(random, _name, staticmethod(_module_draw(
            {"random": "random_sample", "ranf": "random_sample",
             "sample": "random_sample"}.get(_name, _name))))


# -- the cupy.cuda module ----------------------------------------------------------------------
class memory:
    MemoryPool, MemoryPointer, OutOfMemoryError = MemoryPool, MemoryPointer, OutOfMemoryError
    PinnedMemoryPool = PinnedMemoryPool
    alloc, set_allocator, get_allocator = staticmethod(alloc), staticmethod(set_allocator), \
        staticmethod(get_allocator)


class pinned_memory:
    PinnedMemory, PinnedMemoryPointer = PinnedMemory, PinnedMemoryPointer
    PinnedMemoryPool = PinnedMemoryPool
    alloc_pinned_memory = staticmethod(alloc_pinned_memory)
    set_pinned_memory_allocator = staticmethod(set_pinned_memory_allocator)


class stream:
    Stream, ExternalStream, Event = Stream, ExternalStream, Event
    get_current_stream = staticmethod(get_current_stream)
    get_elapsed_time = staticmethod(get_elapsed_time)


class cuda:
    """``cupy.cuda`` as the conformance device provides it."""
    Device, Stream, ExternalStream, Event = Device, Stream, ExternalStream, Event
    MemoryPool, MemoryPointer, PinnedMemoryPool = MemoryPool, MemoryPointer, PinnedMemoryPool
    PinnedMemory, PinnedMemoryPointer, Graph = PinnedMemory, PinnedMemoryPointer, Graph
    runtime, memory, pinned_memory, stream, nvtx, graph = \
        runtime, memory, pinned_memory, stream, nvtx, graph
    get_current_stream = staticmethod(get_current_stream)
    get_elapsed_time = staticmethod(get_elapsed_time)
    set_allocator, get_allocator = staticmethod(set_allocator), staticmethod(get_allocator)
    set_pinned_memory_allocator = staticmethod(set_pinned_memory_allocator)
    alloc_pinned_memory, alloc = staticmethod(alloc_pinned_memory), staticmethod(alloc)

    @staticmethod
    def is_available():
        return _Config.device_count > 0

    @staticmethod
    def get_device_id():
        return _current_device_id()
