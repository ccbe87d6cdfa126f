"""``torch.cuda.streams``: CUDA streams and events, over CuPy's.

Ember's CUDA ops are CuPy calls, and CuPy launches every kernel and copy on its *current*
stream of the current device. ``set_stream`` and ``with ember.cuda.stream(s):`` make ``s``'s
CuPy stream current on its device (``cupy.cuda.Stream.use``), so everything an op does inside
queues there, as torch's ops queue on torch's current stream. As in torch:

* the default stream is the legacy NULL stream (``cuda_stream == 0``), which synchronizes with
  every other blocking stream;
* a new ``Stream`` is created non-blocking (torch's stream pool uses ``cudaStreamNonBlocking``):
  work on it does not wait for the default stream, so a script orders them with
  ``wait_stream``/``wait_event``, and keeps a tensor made on one stream alive until the other
  is done with it (CuPy's pool, like torch's allocator, may reuse a block as soon as it is freed
  on the stream that allocated it);
* an ``Event`` is created on the device of the stream that first records it.

Without CUDA these raise torch's CPU-build errors: ``Stream()`` "torch.cuda.Stream requires CUDA
support", ``Event()`` "Tried to instantiate dummy base class Event", ``current_stream`` and
``default_stream`` "Torch not compiled with CUDA enabled"; ``set_stream(None)`` and
``stream(None)`` do nothing.
"""
from .._device import device as _device

__all__ = ["Stream", "ExternalStream", "Event", "StreamContext", "stream", "current_stream",
           "default_stream", "set_stream"]


def _cupy_for_streams(what):
    from . import _cupy_or_none
    cupy = _cupy_or_none()
    if cupy is None:
        raise RuntimeError(what)
    return cupy


def _device_index(device):
    from . import _index
    return _index(device)


class Stream:
    """A CUDA stream: an ordered queue of work on one device.

    ``priority``: lower numbers run first; the driver clamps it to the device's range
    (``cudaStreamCreateWithPriority``), as torch does."""

    def __init__(self, device=None, priority=0):
        cupy = _cupy_for_streams("torch.cuda.Stream requires CUDA support")
        index = _device_index(device)
        with cupy.cuda.Device(index):
            native = cupy.cuda.Stream(non_blocking=True, priority=priority)
        self._bind(cupy, native, index)

    def _bind(self, cupy, native, index):
        self._cupy = cupy
        self._native = native  # the cupy.cuda.Stream every call goes to
        self.device_index = index

    @classmethod
    def _wrap(cls, cupy, native, index):
        """An Ember stream for an existing CuPy stream (the current or the NULL one)."""
        stream = cls.__new__(cls)
        Stream._bind(stream, cupy, native, index)
        return stream

    @property
    def device(self):
        return _device("cuda", self.device_index)

    @property
    def cuda_stream(self):
        """The raw ``cudaStream_t`` as an int (0 for the default stream)."""
        return self._native.ptr

    @property
    def priority(self):
        return self._native.priority

    @staticmethod
    def priority_range():
        """``(lowest, highest)`` priority this device allows, torch's order (e.g. ``(0, -5)``)."""
        raise NotImplementedError(
            "Stream.priority_range needs cudaDeviceGetStreamPriorityRange, which CuPy 14's "
            "runtime module does not expose; pass any int as priority: the driver clamps it")

    def query(self):
        """True if all work queued on this stream has finished."""
        return self._native.done

    def synchronize(self):
        """Block the host until all work queued on this stream has finished."""
        self._native.synchronize()

    def wait_event(self, event):
        """Make all future work on this stream wait for ``event`` (no host block)."""
        if event._native is not None:  # an event never recorded is complete: nothing to wait
            self._native.wait_event(event._native)

    def wait_stream(self, stream):
        """Make all future work on this stream wait for what ``stream`` has queued so far."""
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        """Record ``event`` (a new one if None) on this stream, and return it."""
        if event is None:
            event = Event()
        event.record(self)
        return event

    def __enter__(self):
        self._context = StreamContext(self)
        self._context.__enter__()
        return self

    def __exit__(self, *exc):
        context, self._context = self._context, None
        return context.__exit__(*exc)

    def __eq__(self, other):
        if not isinstance(other, Stream):
            return NotImplemented
        return self.cuda_stream == other.cuda_stream and self.device_index == other.device_index

    def __hash__(self):
        return hash((self.cuda_stream, self.device_index))

    def __repr__(self):
        return (f"<ember.cuda.Stream device={self.device} cuda_stream={self.cuda_stream:#x}>")

    @property
    def _as_parameter_(self):  # ctypes passes a Stream as its cudaStream_t, as torch's
        import ctypes
        return ctypes.c_void_p(self.cuda_stream)


class ExternalStream(Stream):
    """A stream allocated outside Ember (another library's ``cudaStream_t``, as an int). The
    caller keeps it alive while Ember uses it."""

    def __init__(self, stream_ptr, device=None):
        cupy = _cupy_for_streams("torch.cuda.Stream requires CUDA support")
        index = _device_index(device)
        self._bind(cupy, cupy.cuda.ExternalStream(stream_ptr, index), index)


class Event:
    """A CUDA event: a marker in a stream, to wait for or to time with.

    ``enable_timing`` lets ``elapsed_time`` measure between two events; ``blocking`` makes
    ``synchronize`` sleep instead of spinning; ``interprocess`` is accepted for torch's
    signature but IPC handles are not offered (see ``ipc_handle``)."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False, external=False):
        from . import is_available
        if not is_available():
            raise RuntimeError("Tried to instantiate dummy base class Event")
        if external:
            raise NotImplementedError(
                "Event(external=True) records with cudaEventRecordExternal inside graph "
                "capture; CuPy 14's Event.record has no flags, so Ember cannot make one")
        self.enable_timing = enable_timing
        self.blocking = blocking
        self.interprocess = interprocess
        self._native = None  # created on the device of the first stream that records it
        self.device_index = None

    def record(self, stream=None):
        """Record this event on ``stream`` (default: the current stream)."""
        if stream is None:
            stream = current_stream()
        if self._native is None:
            cupy = stream._cupy
            with cupy.cuda.Device(stream.device_index):
                self._native = cupy.cuda.Event(block=self.blocking,
                                               disable_timing=not self.enable_timing,
                                               interprocess=self.interprocess)
            self.device_index = stream.device_index
            self._cupy = cupy
        elif stream.device_index != self.device_index:
            raise RuntimeError(f"Event device {self.device} does not match recording stream's "
                               f"device {stream.device}.")
        self._native.record(stream._native)

    def wait(self, stream=None):
        """Make all future work on ``stream`` (default: the current one) wait for this event."""
        if stream is None:
            stream = current_stream()
        stream.wait_event(self)

    def query(self):
        """True if the work before this event's record has finished (or it was never
        recorded)."""
        return True if self._native is None else self._native.done

    def synchronize(self):
        """Block the host until the work before this event's record has finished."""
        if self._native is not None:
            self._native.synchronize()

    def elapsed_time(self, end_event):
        """Milliseconds between this event's record and ``end_event``'s (both recorded, both
        made with ``enable_timing=True``, and complete: call ``synchronize`` first)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self._native is None or end_event._native is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return float(self._cupy.cuda.get_elapsed_time(self._native, end_event._native))

    @property
    def device(self):
        return None if self.device_index is None else _device("cuda", self.device_index)

    @property
    def cuda_event(self):
        """The raw ``cudaEvent_t`` as an int (0 before the first record)."""
        return 0 if self._native is None else self._native.ptr

    def ipc_handle(self):
        raise NotImplementedError(
            "Event.ipc_handle: CuPy 14 cannot build an Event from an IPC handle, so Ember does "
            "not share events between processes")

    @classmethod
    def from_ipc_handle(cls, device, handle):
        raise NotImplementedError(
            "Event.from_ipc_handle: CuPy 14 cannot build an Event from an IPC handle, so Ember "
            "does not share events between processes")

    def __repr__(self):
        if self._native is None:
            return "<ember.cuda.Event uninitialized>"
        return f"<ember.cuda.Event {self.cuda_event:#x}>"


def current_stream(device=None):
    """The stream ops on ``device`` (default: the current device) queue on now."""
    from . import _lazy_init
    cupy = _lazy_init()
    index = _device_index(device)
    return Stream._wrap(cupy, cupy.cuda.get_current_stream(index), index)


def default_stream(device=None):
    """``device``'s default stream: the legacy NULL stream (``cuda_stream == 0``)."""
    from . import _lazy_init
    cupy = _lazy_init()
    return Stream._wrap(cupy, cupy.cuda.Stream.null, _device_index(device))


def set_stream(stream):
    """Make ``stream`` current on its device; ``None`` changes nothing. Prefer the
    ``stream`` context manager, which restores the previous one."""
    if stream is None:
        return
    with stream._cupy.cuda.Device(stream.device_index):
        stream._native.use()


class StreamContext:
    """Context manager that makes ``stream`` current (and its device current) for its body,
    restoring both afterwards; ``None`` changes nothing."""

    def __init__(self, stream):
        self.stream = stream
        self.idx = -1 if stream is None else stream.device_index
        self.src_prev_stream = self.dst_prev_stream = None
        self._device = None

    def __enter__(self):
        target = self.stream
        if target is None or self.idx == -1:
            return
        from . import device
        self.src_prev_stream = current_stream(None)
        if self.src_prev_stream.device_index != target.device_index:
            self.dst_prev_stream = current_stream(target.device_index)
        self._device = device(target.device_index)
        self._device.__enter__()
        set_stream(target)

    def __exit__(self, *exc):
        if self.stream is None or self.idx == -1:
            return False
        if self.dst_prev_stream is not None:
            set_stream(self.dst_prev_stream)
        set_stream(self.src_prev_stream)
        self._device.__exit__(*exc)
        return False


def stream(stream):
    """``with ember.cuda.stream(s):`` runs the body's ops on ``s``; ``None`` changes nothing."""
    return StreamContext(stream)
