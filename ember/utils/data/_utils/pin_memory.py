"""Page-locked batches for ``DataLoader(pin_memory=True)``, as ``torch.utils.data._utils.pin_memory``.

``pin_memory(data)`` copies every tensor of a batch into page-locked host memory, through
dicts, lists, tuples, named tuples and any object with its own ``pin_memory()``, so that the
batch's ``.to(device, non_blocking=True)`` is an asynchronous copy. With worker processes a
thread of the main process does it (``PinMemoryThread``): it receives the workers' batches
from their result pipes, pins them, and queues them for the iterator, so pinning one batch
overlaps the training step on the previous one.
"""
import collections.abc
import copy
import queue
import threading

import multiprocessing.connection

from . import shared_memory
from .worker import ExceptionWrapper, _IterableDatasetStopIteration, _ResumeIteration

#: how often the thread looks at its stop flag while no batch arrives (seconds)
_POLL_INTERVAL = 0.1


def pin_memory(data, device=None):
    """``data`` with each tensor in it replaced by its page-locked copy."""
    from ...._tensor import Tensor
    if isinstance(data, Tensor) or hasattr(data, "pin_memory"):
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        pinned = {key: pin_memory(value, device) for key, value in data.items()}
        try:
            if isinstance(data, collections.abc.MutableMapping):
                # A copy keeps a subclass's other state (an OrderedDict's order, a defaultdict's
                # factory), which rebuilding from the items would lose.
                clone = copy.copy(data)
                clone.update(pinned)
                return clone
            return type(data)(pinned)
        except TypeError:  # a mapping that cannot be copied or built from a dict
            return pinned
    if isinstance(data, tuple):
        items = [pin_memory(item, device) for item in data]
        return type(data)(*items) if hasattr(data, "_fields") else type(data)(items)
    if isinstance(data, collections.abc.Sequence):
        items = [pin_memory(item, device) for item in data]
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                clone[:] = items
                return clone
            return type(data)(items)
        except TypeError:  # e.g. a range: no constructor from a list
            return items
    return data


class PinMemoryThread:
    """Receives the workers' ``(send index, batch)`` messages from ``connections``, pins each
    batch and puts it on ``out`` (a ``queue.Queue``). A batch that fails to pin is passed on
    as an ``ExceptionWrapper``, raised by the iterator as a worker's error would be; the
    workers' own messages (errors, an iterable dataset's end, an epoch's echo) pass as they
    are. ``stop()`` ends and joins the thread before the pipes are closed."""

    def __init__(self, connections, device_index, device_type):
        self.out = queue.Queue()
        self._connections = list(connections)
        self._done = threading.Event()
        self._device = (device_type, device_index)
        self._thread = threading.Thread(target=self._loop, name="ember_data_pin", daemon=True)
        self._thread.start()

    def _loop(self):
        from .... import accelerator
        device_type, index = self._device
        accelerator.set_device_index(index)
        while not self._done.is_set() and self._connections:
            for conn in multiprocessing.connection.wait(self._connections, _POLL_INTERVAL):
                try:
                    message = conn.recv()
                except (EOFError, OSError):
                    # The worker exited or its pipe closed: the iterator notices the worker's
                    # exit from its sentinel.
                    self._connections.remove(conn)
                    continue
                finally:
                    shared_memory.release_received()
                self.out.put(self._pinned(message, device_type))

    def _pinned(self, message, device_type):
        idx, data = message
        if self._done.is_set() or isinstance(data, (ExceptionWrapper,
                                                    _IterableDatasetStopIteration)):
            return message
        if isinstance(idx, _ResumeIteration):
            return message
        try:
            return idx, pin_memory(data, device_type)
        except Exception:
            return idx, ExceptionWrapper(where=f"in pin memory thread for device "
                                               f"{self._device[1]}")

    def is_alive(self):
        return self._thread.is_alive()

    def stop(self):
        self._done.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()
