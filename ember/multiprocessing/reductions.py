"""Shared-memory storage for tensors, and the pickling that sends them between processes as
views of the same memory, as ``torch.multiprocessing.reductions``.

A shared tensor's array lies in an ``mmap`` of a RAM-backed file (``SharedStorage``). Under the
``file_descriptor`` strategy (the default on Linux) the file is anonymous (``memfd_create``, or
a ``/dev/shm`` file unlinked at once): it never has a name, the other process receives a
duplicate of its descriptor (``multiprocessing.reduction.DupFd``: inherited by a spawned child,
or passed over a Unix socket), and the kernel frees the memory when the last mapping and
descriptor are gone. Under ``file_system`` the file keeps a name in ``/dev/shm`` that the other
process opens; the creating process unlinks it when its own storage is freed (or when it
exits), so a receiver must map it while the sender still holds it. Under either strategy the
sender must be alive when the receiver unpickles (as in PyTorch's ``file_descriptor``).

``register_reducers`` (run by ``import ember.multiprocessing``) makes ``ForkingPickler``, which
the queues, pipes and spawned processes of ``multiprocessing`` pickle with, use
``reduce_tensor``: it moves the tensor's memory into shared memory (as ``share_memory_``) and
sends only a handle to it plus the tensor's offset, shape and strides.
"""
import ctypes
import mmap
import os
import secrets
import tempfile
import weakref
from multiprocessing.reduction import DupFd, ForkingPickler
from multiprocessing.util import Finalize

import numpy as np

from .. import _dtype as dt
from .._device import device as _device_cls
from .._tensor import Tensor, _wrap_with
from ..backends import get_backend

__all__ = ["SharedStorage", "share_memory_", "is_shared", "reduce_tensor", "rebuild_tensor",
           "register_reducers"]

SHM_DIR = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) \
    else tempfile.gettempdir()
#: the prefix of the files the ``file_system`` strategy names in SHM_DIR
NAME_PREFIX = "ember_shm_"


class SharedStorage(mmap.mmap):
    """A shared mapping of a whole RAM-backed file, with what another process needs to map it
    too: ``fd`` (an open descriptor, ``file_descriptor`` strategy) or ``name`` (a file in
    SHM_DIR, ``file_system`` strategy)."""
    fd = None
    name = None


def _sharing_strategy():
    from . import get_sharing_strategy
    return get_sharing_strategy()


def _new_storage(nbytes):
    nbytes = max(int(nbytes), 1)  # mmap cannot map an empty file
    if _sharing_strategy() == "file_system":
        name = f"{NAME_PREFIX}{os.getpid()}_{secrets.token_hex(8)}"
        path = os.path.join(SHM_DIR, name)
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        try:
            os.ftruncate(fd, nbytes)
            storage = SharedStorage(fd, nbytes)
        except BaseException:
            os.unlink(path)
            raise
        finally:
            os.close(fd)
        storage.name = name
        # multiprocessing's finaliser rather than weakref's: it also runs when a multiprocessing
        # child exits (through os._exit), after that process has joined its own children, and
        # never in a forked process that merely inherited the storage.
        Finalize(storage, _unlink_quietly, args=(path,), exitpriority=-100)
        return storage
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("ember_shm", os.MFD_CLOEXEC)
    else:
        path = os.path.join(SHM_DIR, f"{NAME_PREFIX}{os.getpid()}_{secrets.token_hex(8)}")
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        os.unlink(path)
    try:
        os.ftruncate(fd, nbytes)
    except BaseException:
        os.close(fd)
        raise
    return _storage_owning_fd(fd, nbytes)


def _storage_owning_fd(fd, nbytes):
    """Map ``fd``; the storage keeps the descriptor open (it is what another process is sent)
    and closes it when the storage is collected."""
    try:
        storage = SharedStorage(fd, nbytes)
    except BaseException:
        os.close(fd)
        raise
    storage.fd = fd
    weakref.finalize(storage, os.close, fd)
    return storage


def _unlink_quietly(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _open_storage(handle_kind, handle, nbytes):
    """Map, in this process, a storage another process sent."""
    if handle_kind == "fd":
        return _storage_owning_fd(handle.detach(), nbytes)
    path = os.path.join(SHM_DIR, handle)
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        raise RuntimeError(
            f"shared memory file {path} is gone: under the 'file_system' sharing strategy the "
            "sending process must keep the tensor alive until the receiver has it") from None
    try:
        storage = SharedStorage(fd, nbytes)
    finally:
        os.close(fd)
    storage.name = handle
    return storage


def _root_buffer(array):
    """The object at the bottom of ``array``'s chain of bases (an mmap for shared memory)."""
    root = array
    while isinstance(root, np.ndarray):
        root = root.base
    if isinstance(root, memoryview):
        root = root.obj
    return root


def _is_shared_mapping(buffer):
    if isinstance(buffer, SharedStorage):
        return True
    # Batches a DataLoader worker sent arrive in its own shared-memory files.
    from ..utils.data._utils.shared_memory import SharedMapping
    return isinstance(buffer, SharedMapping)


def _address(buffer):
    return np.frombuffer(buffer, dtype=np.uint8).ctypes.data


def is_shared(tensor):
    data = tensor._data
    if not isinstance(data, np.ndarray):
        # The backend knows whether its memory reaches other processes: PyTorch's CUDA memory
        # does (IPC handles); Ember sends device tensors by value, so its backends say False.
        return tensor._backend.memory_shared_across_processes
    return _is_shared_mapping(_root_buffer(data))


def share_memory_(tensor):
    """Move ``tensor``'s memory, with every live view of it, into a new ``SharedStorage``
    (nothing to do when it is shared already).

    Ember has no storage object that all tensors on the same memory point to: the views found
    are those the root tracks (taken while grad mode was on). Views taken under ``no_grad`` and
    aliases from ``.data``/``detach()`` keep the old, private memory."""
    root = tensor._base if tensor._base is not None else tensor
    data = root._data
    if not isinstance(data, np.ndarray):
        if tensor._backend.memory_shared_across_processes:
            return tensor
        raise RuntimeError(f"share_memory_: tensors on device '{tensor._device}' cannot be moved "
                           "to shared memory (Ember sends them to other processes by value)")
    if not _is_shared_mapping(_root_buffer(data)):
        _move_to_new_storage(root)
    return tensor


def _move_to_new_storage(root):
    """Copy the bytes ``root``'s array spans into a new storage and point ``root`` and its
    tracked views at the same places in it, so views stay views and offsets stay offsets."""
    byte_bounds = np.lib.array_utils.byte_bounds
    data = root._data
    # Only views still inside the root's allocation alias it (``set_`` can re-point a root).
    owner = data
    while isinstance(owner.base, np.ndarray):
        owner = owner.base
    start, end = byte_bounds(owner)
    low, high = byte_bounds(data)
    views = []
    for view in (ref() for ref in root.__dict__.get("_views", ())):
        if view is None or not isinstance(view._data, np.ndarray):
            continue
        v_low, v_high = byte_bounds(view._data)
        if start <= v_low and v_high <= end:
            views.append(view)
            low, high = min(low, v_low), max(high, v_high)
    storage = _new_storage(high - low)
    if high > low:
        old = np.ctypeslib.as_array((ctypes.c_char * (high - low)).from_address(low))
        np.frombuffer(storage, dtype=np.uint8, count=high - low)[:] = old.view(np.uint8)
    for t in [root] + views:
        t._data = _array_in(storage, t._data.ctypes.data - low, t._data)
    return storage


def _array_in(storage, offset, like):
    return np.ndarray(like.shape, like.dtype, buffer=storage, offset=offset, strides=like.strides)


def _storage_of(tensor):
    """``(storage, byte offset)`` of a tensor in shared memory that can be sent to another
    process, moving it into a new storage first when it has none."""
    buffer = _root_buffer(tensor._data)
    if not isinstance(buffer, SharedStorage):
        # Not shared, or a DataLoader batch whose file is already unlinked: no handle to send.
        root = tensor._base if tensor._base is not None else tensor
        buffer = _move_to_new_storage(root)
    return buffer, tensor._data.ctypes.data - _address(buffer)


def reduce_tensor(tensor):
    if tensor._requires_grad and tensor.grad_fn is not None:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd "
            "does not support crossing process boundaries.  If you just want to transfer the "
            "data, call detach() on the tensor before serializing (e.g., putting it on the queue).")
    if not isinstance(tensor._data, np.ndarray):
        return tensor.__reduce_ex__(2)  # no shared memory off the CPU: sent by value
    storage, offset = _storage_of(tensor)
    if storage.name is not None:
        handle_kind, handle = "name", storage.name
    else:
        handle_kind, handle = "fd", DupFd(storage.fd)
    data = tensor._data
    return rebuild_tensor, (type(tensor), handle_kind, handle, len(storage), offset, data.shape,
                            data.strides, tensor._dtype.name, str(tensor._device),
                            tensor._requires_grad)


def rebuild_tensor(cls, handle_kind, handle, nbytes, offset, shape, strides, dtype_name,
                   device_str, requires_grad):
    storage = _open_storage(handle_kind, handle, nbytes)
    dtype = dt._BY_NAME[dtype_name]
    device = _device_cls(device_str)
    array = np.ndarray(shape, dtype.np, buffer=storage, offset=offset, strides=strides)
    tensor = _wrap_with(array, dtype, device, get_backend(device))
    if cls is not Tensor:
        from ..nn.parameter import Parameter
        if issubclass(cls, Parameter):
            return cls(tensor, requires_grad)
        from .._tensor import _as_subclass
        tensor = _as_subclass(tensor, cls)
    tensor._requires_grad = requires_grad
    return tensor


def register_reducers():
    from ..nn.parameter import Parameter
    ForkingPickler.register(Tensor, reduce_tensor)
    ForkingPickler.register(Parameter, reduce_tensor)
