"""Moving large arrays from worker processes to the main process through shared memory.

A worker writes a batch into a file in ``/dev/shm`` (RAM-backed) that it has mapped, and sends
only the file's name, offset, shape and dtype through the pipe; the main process maps the same
file (no copy) and unlinks it, so the memory is freed once the last array using it dies.

Only worker processes pickle this way: ``register_reducers`` is called in the worker, so the
main process's own multiprocessing is untouched. Each file name starts with a per-iterator
prefix, so when an iterator shuts down, files sent but never received are removed by name.
"""
import glob
import itertools
import mmap
import os
import pickle
import tempfile
import threading
from multiprocessing.reduction import ForkingPickler

import numpy as np

#: arrays smaller than this are cheaper to pickle through the pipe than to give a file
THRESHOLD_BYTES = 64 * 1024

SHM_DIR = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) \
    else tempfile.gettempdir()
# The writer pre-faults its fresh pages in one call; the reader maps lazily, touching only
# what it reads.
_WRITER_FLAGS = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)

_prefix = None
_counter = itertools.count()
_received = threading.local()


class SharedMapping(mmap.mmap):
    """A mapping of a shared-memory file that remembers the file's name."""
    name = None


def set_prefix(prefix):
    """Name the files this process creates ``<prefix><n>``; ``None`` disables sharing."""
    global _prefix
    _prefix = prefix


def sharing_enabled():
    return _prefix is not None


def empty(shape, dtype):
    """A new array in a shared-memory file (a plain array below the threshold or outside a
    worker)."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if _prefix is None or nbytes < THRESHOLD_BYTES:
        return np.empty(shape, dtype)
    name = f"{_prefix}{next(_counter)}"
    path = os.path.join(SHM_DIR, name)
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    try:
        os.ftruncate(fd, nbytes)
        mapping = SharedMapping(fd, nbytes, flags=_WRITER_FLAGS)
    finally:
        os.close(fd)
    mapping.name = name
    return np.frombuffer(mapping, dtype=dtype).reshape(shape)


def _shared_origin(array):
    """``(mapping, byte offset)`` if ``array`` is contiguous memory inside a shared mapping."""
    if not array.flags.c_contiguous:
        return None
    root = array
    while isinstance(root, np.ndarray):
        root = root.base
    if isinstance(root, memoryview):
        root = root.obj
    if not isinstance(root, SharedMapping):
        return None
    start = np.frombuffer(root, dtype=np.uint8).ctypes.data
    return root, array.ctypes.data - start


def _reduce_ndarray(array):
    if type(array) is not np.ndarray or array.nbytes < THRESHOLD_BYTES or array.dtype.hasobject:
        return array.__reduce_ex__(pickle.DEFAULT_PROTOCOL)
    origin = _shared_origin(array)
    if origin is None:
        copy = empty(array.shape, array.dtype)
        np.copyto(copy, array)
        origin = _shared_origin(copy)
    mapping, offset = origin
    return _rebuild_ndarray, (mapping.name, offset, array.shape, array.dtype)


def _rebuild_ndarray(name, offset, shape, dtype):
    mappings = _received.__dict__.setdefault("mappings", {})
    mapping = mappings.get(name)
    if mapping is None:
        path = os.path.join(SHM_DIR, name)
        fd = os.open(path, os.O_RDWR)
        try:
            mapping = SharedMapping(fd, os.fstat(fd).st_size)
        finally:
            os.close(fd)
        mapping.name = name
        mappings[name] = mapping
    count = int(np.prod(shape, dtype=np.int64))
    return np.frombuffer(mapping, dtype=dtype, count=count, offset=offset).reshape(shape)


def release_received():
    """Unlink the files of the message just unpickled: the mappings keep the memory alive for
    as long as arrays use it."""
    mappings = _received.__dict__.pop("mappings", None)
    if mappings:
        for name in mappings:
            try:
                os.unlink(os.path.join(SHM_DIR, name))
            except FileNotFoundError:
                pass


def remove_leftovers(prefix):
    """Unlink files a shut-down iterator's workers created that were never received."""
    for path in glob.glob(os.path.join(SHM_DIR, glob.escape(prefix) + "*")):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def _reduce_tensor(tensor):
    from ...._tensor import _rebuild_tensor
    data = tensor._backend.to_numpy(tensor.detach()._data)
    return _rebuild_tensor, (data, tensor._dtype.name, str(tensor._device), tensor._requires_grad)


def register_reducers():
    """Make this process's multiprocessing pickling send large arrays and tensors through
    shared memory."""
    from ...._tensor import Tensor
    ForkingPickler.register(np.ndarray, _reduce_ndarray)
    ForkingPickler.register(Tensor, _reduce_tensor)
