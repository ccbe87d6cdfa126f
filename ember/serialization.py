"""``ember.save`` / ``ember.load``: PyTorch's zip checkpoint format, written and read without torch.

A checkpoint is an uncompressed zip archive (what ``torch.save`` writes since PyTorch 1.6)::

    archive/data.pkl             the object, pickled with protocol 2
    archive/.format_version      "1"
    archive/.storage_alignment   "64"
    archive/byteorder            "little"
    archive/data/<key>           one record per storage: its raw bytes, 64-byte aligned
    archive/version              "3"

Inside ``data.pkl`` a tensor is the call ``torch._utils._rebuild_tensor_v2(storage, offset,
size, stride, requires_grad, backward_hooks)``; its storage is a *persistent id*,
``('storage', torch.FloatStorage, '<key>', 'cpu', numel)``, that names the record holding the
bytes. Tensors viewing one storage name the same key, so the storage is written once and the
views share memory again after loading. Ember writes PyTorch's global names into the pickle
(without importing torch) so that ``torch.load(weights_only=True)`` accepts Ember's files, and
maps those names back to its own functions when it reads.

Loading is safe by default: with ``weights_only=True`` the unpickler admits only an allowlist of
globals (tensor rebuilders, storage types, dtypes, devices, ``Size``, containers, primitive
values), so a file crafted to run code fails with ``pickle.UnpicklingError`` naming the global.
``weights_only=False`` unpickles anything and so runs whatever code the file names: use it only
for files you trust.
"""
import collections
import contextlib
import enum
import io
import mmap as _mmap
import os
import pickle
import secrets
import struct
import sys
import threading
import types
import warnings
import zipfile
import zlib
from _compat_pickle import IMPORT_MAPPING, NAME_MAPPING

import numpy as np

from . import _dtype as dt
from ._device import device as _device
from ._tensor import Tensor, Size, _wrap_with, _contiguous_strides
from . import _qscheme
from .backends import get_backend
from .backends.numpy_backend import memory_owner, array_address

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals",
           "safe_globals", "DEFAULT_PROTOCOL", "config", "LoadEndianness",
           "get_default_load_endianness", "set_default_load_endianness", "get_crc32_options",
           "set_crc32_options", "get_default_mmap_options", "set_default_mmap_options",
           "register_package", "location_tag", "default_restore_location",
           "get_unsafe_globals_in_checkpoint", "skip_data", "SourceChangeWarning", "mkdtemp",
           "check_module_version_greater_or_equal"]

#: Switches trading safety for speed. ``fsync``: ``save`` to a path flushes the new file to the
#: disk before renaming it into place, so the checkpoint survives a power loss, not only a crash
#: of the process. ``check_crc32``: ``load`` (without ``mmap``) checks each storage against its
#: CRC-32, so corrupted tensor data raises instead of loading silently (PyTorch does not check).
#: The rest are PyTorch's settings, set through its functions below: ``compute_crc32``
#: (``set_crc32_options``): ``save`` writes each record's CRC-32, else 0 as torch does, and such
#: records are then read unchecked; ``endianness`` (``set_default_load_endianness``): the byte
#: order ``load`` assumes for a file without a byteorder record; ``mmap_flags``
#: (``set_default_mmap_options``): how ``load(mmap=True)`` maps the file.
config = types.SimpleNamespace(fsync=True, check_crc32=True, compute_crc32=True,
                               endianness=None, mmap_flags=getattr(_mmap, "MAP_PRIVATE", None))

DEFAULT_PROTOCOL = 2
_STORAGE_ALIGNMENT = 64
_FILE_FORMAT_VERSION = b"3\n"

# PyTorch's legacy typed-storage class for each dtype: the name a checkpoint records.
_STORAGE_NAME_BY_DTYPE = {d: name + "Storage" for d, name in dt.SCALAR_TYPE_NAMES.items()}


# =============================================================================================
# Saving
# =============================================================================================

class _Global:
    """A global name written into the pickle verbatim, such as ``torch._utils
    _rebuild_tensor_v2``: PyTorch's reader needs PyTorch's names, and Ember must not import
    torch to look them up the way pickle's own ``save_global`` would."""
    __slots__ = ("module", "name")
    _interned = {}

    def __new__(cls, module, name):
        key = (module, name)
        self = cls._interned.get(key)
        if self is None:  # one instance per name, so pickle's memo writes each name once
            self = cls._interned[key] = object.__new__(cls)
            self.module, self.name = module, name
        return self

    def __call__(self, *args):  # pickle's save_reduce wants a callable; only the name is used
        raise TypeError(f"{self.module}.{self.name} is a name in a checkpoint, not a function")


_REBUILD_TENSOR_V2 = _Global("torch._utils", "_rebuild_tensor_v2")
_REBUILD_PARAMETER = _Global("torch._utils", "_rebuild_parameter")
_REBUILD_QTENSOR = _Global("torch._utils", "_rebuild_qtensor")
_TORCH_SIZE = _Global("torch", "Size")
_TORCH_DEVICE = _Global("torch", "device")


def _save_global_name(pickler, obj):
    # dtypes and qschemes are module-level names of torch (``torch.float32``, ``torch.qint8``,
    # ``torch.per_tensor_affine``)
    name = _Global("torch", obj.name) if isinstance(obj, (dt.dtype, _qscheme.qscheme)) else obj
    if pickler.proto >= 4:
        pickler.save(name.module)
        pickler.save(name.name)
        pickler.write(pickle.STACK_GLOBAL)
    else:
        pickler.write(pickle.GLOBAL + f"{name.module}\n{name.name}\n".encode("utf-8"))
    pickler.memoize(obj)


class _StorageRecord:
    """One storage being saved: the bytes of record ``data/<key>``."""
    __slots__ = ("key", "dtype", "location", "numel", "data")

    def __init__(self, key, dtype, location, numel, data):
        self.key, self.dtype, self.location = key, dtype, location
        self.numel, self.data = numel, data


def _location(dev):
    if dev.type == "cpu":
        return "cpu"
    return f"{dev.type}:{dev.index or 0}"


class _StorageTable:
    """Assigns each tensor a storage record, one per distinct memory block, so views of one
    block are written once and share memory again when loaded."""

    def __init__(self):
        self.records = []
        self._by_owner = {}  # id(owner array) -> (owner, record); owner kept alive while saving

    def _new_record(self, dtype, location, data):
        record = _StorageRecord(str(len(self.records)), dtype, location,
                                data.nbytes // dtype.itemsize, data)
        self.records.append(record)
        return record

    def place(self, tensor):
        """(record, storage_offset, size, stride) describing ``tensor`` in the archive."""
        dtype, array = tensor._dtype, tensor._data
        location = _location(tensor._device)
        if not isinstance(array, np.ndarray):
            array = tensor._backend.to_numpy(array)  # another device's memory: a host copy
        shape = tuple(array.shape)
        itemsize = dtype.itemsize
        if array.size:
            owner = memory_owner(array)
            placed = self._place_in_owner(array, owner, dtype, location, itemsize)
            if placed is not None:
                return placed
        copy = np.ascontiguousarray(array).reshape(-1)
        record = self._new_record(dtype, location, copy.view(np.uint8))
        return record, 0, shape, _contiguous_strides(shape)

    def _place_in_owner(self, array, owner, dtype, location, itemsize):
        if not (owner.flags.c_contiguous or owner.flags.f_contiguous):
            return None
        start, ptr = array_address(owner), array_address(array)
        byte_offset, owner_nbytes = ptr - start, owner.nbytes
        if byte_offset < 0 or byte_offset % itemsize or owner_nbytes % itemsize:
            return None
        strides, last = [], byte_offset + itemsize
        for n, s in zip(array.shape, array.strides):
            if n == 1:
                strides.append(1 if s <= 0 or s % itemsize else s // itemsize)
                continue
            if s < 0 or s % itemsize:
                return None  # a layout PyTorch cannot express: written as a copy
            strides.append(s // itemsize)
            last += (n - 1) * s
        if last > owner_nbytes:
            return None
        entry = self._by_owner.get(id(owner))
        if entry is None:
            flat = owner.ravel(order="K").view(np.uint8)
            record = self._new_record(dtype, location, flat)
            self._by_owner[id(owner)] = (owner, record)
        else:
            record = entry[1]
            if record.location != location:
                return None  # one host buffer behind tensors of two devices: written twice
            if record.dtype is not dtype:
                raise RuntimeError("Cannot save multiple tensors or storages that view the same "
                                   "data as different types")
        return record, byte_offset // itemsize, tuple(array.shape), tuple(strides)


class _Pickler(pickle._Pickler):
    """Pickle's Python implementation, with Ember's tensors, dtypes, devices and sizes written
    under PyTorch's names; the storages' bytes go to the archive, not the pickle."""
    dispatch = pickle._Pickler.dispatch.copy()
    dispatch[_Global] = _save_global_name
    dispatch[dt.dtype] = _save_global_name
    dispatch[_qscheme.qscheme] = _save_global_name

    def __init__(self, file, protocol, storages):
        super().__init__(file, protocol)
        self._storages = storages

    def persistent_id(self, obj):
        if type(obj) is _StorageRecord:
            storage_type = _Global("torch", _STORAGE_NAME_BY_DTYPE[obj.dtype.name])
            return ("storage", storage_type, obj.key, obj.location, obj.numel)
        return None

    def reducer_override(self, obj):
        if isinstance(obj, Tensor):
            return self._reduce_tensor(obj)
        cls = type(obj)
        if cls is Size:
            return (_TORCH_SIZE, (tuple(obj),))
        if cls is _device:
            return (_TORCH_DEVICE, (str(obj),))
        return NotImplemented

    def _reduce_tensor(self, tensor):
        from .nn.parameter import Parameter
        backward_hooks = collections.OrderedDict()
        if isinstance(tensor, Parameter):
            return (_REBUILD_PARAMETER, (tensor.detach(), tensor.requires_grad, backward_hooks))
        if tensor.is_quantized:
            return self._reduce_quantized(tensor, backward_hooks)
        record, offset, size, stride = self._storages.place(tensor)
        return (_REBUILD_TENSOR_V2,
                (record, offset, size, stride, tensor.requires_grad, backward_hooks))


    def _reduce_quantized(self, tensor, backward_hooks):
        # torch's layout: the integers in a QInt8/QUInt8/QInt32 storage, and the quantizer as
        # (qscheme, scale, zero_point) or (qscheme, scales, zero_points, axis)
        from ._quantized_tensor import _qparams
        ints = _wrap_with(tensor._data.array, tensor._dtype, tensor._device, tensor._backend)
        record, offset, size, stride = self._storages.place(ints)
        params = _qparams(tensor)
        if len(params) == 4:
            channels = tensor.q_per_channel_scales(), tensor.q_per_channel_zero_points()
            params = (params[0], *channels, params[3])
        return (_REBUILD_QTENSOR,
                (record, offset, size, stride, params, False, backward_hooks))


_THREADED_CRC_BYTES = 1 << 20
_CRC_POOL = None
_CRC_POOL_PID = None


def _fast_crc32():
    """zlib's CRC-32 runs at about 4 GB/s; ISA-L's and zlib-ng's (same checksum, SIMD carry-less
    multiplication) at about 20 GB/s, which keeps the check from dominating a load from the page
    cache. Either comes with the ``fast`` extra; plain zlib otherwise."""
    for module in ("isal.isal_zlib", "zlib_ng.zlib_ng"):
        try:
            return __import__(module, fromlist=["crc32"]).crc32
        except ImportError:
            continue
    return zlib.crc32


_crc32 = _fast_crc32()


_INTEROP_THREADS = None  # set_num_interop_threads; None: min(4, CPU count)
_INTEROP_STARTED_PID = None  # the process whose inter-op pools (CRC-32s, jit.fork) have started


def _interop_pool_started():
    """A pool of the inter-op size started in this process: its size can no longer change."""
    global _INTEROP_STARTED_PID
    _INTEROP_STARTED_PID = os.getpid()


def _interop_threads():
    """The inter-op pools' size (the CRC-32 pool here, jit.fork's), as
    ``get_num_interop_threads`` reports."""
    return _INTEROP_THREADS or min(4, os.cpu_count() or 1)


def _set_interop_threads(n):
    global _INTEROP_THREADS
    import operator
    n = operator.index(n)
    if n <= 0:
        raise RuntimeError("set_num_interop_threads expects a positive integer")
    if _INTEROP_STARTED_PID == os.getpid():
        raise RuntimeError("Error: cannot set number of interop threads after parallel work has "
                           "started or set_num_interop_threads called")
    _INTEROP_THREADS = n


def _crc_pool():
    """Threads computing CRC-32s of large buffers (the CRC functions release the GIL) while the
    main thread moves data to or from the file. Made once per process: threads do not survive
    fork, and a forked DataLoader worker that loads a checkpoint needs a pool of its own."""
    global _CRC_POOL, _CRC_POOL_PID
    if _CRC_POOL_PID != os.getpid():
        from concurrent.futures import ThreadPoolExecutor
        _CRC_POOL = ThreadPoolExecutor(max_workers=_interop_threads(),
                                       thread_name_prefix="ember-crc32")
        _CRC_POOL_PID = os.getpid()
        _interop_pool_started()
    return _CRC_POOL


def _crc_job(data):
    """The CRC-32 of ``data``: a future for large buffers, computed in the pool, else a value."""
    data = memoryview(data).cast("B")
    if data.nbytes < _THREADED_CRC_BYTES:
        return _crc32(data)
    return _crc_pool().submit(_crc32, data)


def _crc_value(job):
    return job if isinstance(job, int) else job.result()


class _ZipWriter:
    """Writes an uncompressed zip archive sequentially (no seeking, so any binary stream will
    do), each member's data aligned to 64 bytes from the archive's start as PyTorch does, so a
    reader can memory-map it. As PyTorch's writer, each member's CRC-32 and sizes follow its
    data in a data descriptor, which lets the checksum of a large member be computed on a
    second thread while the member is written. Zip64 records are used where sizes or offsets
    need them."""
    _LOCAL = struct.Struct("<4sHHHHHIIIHH")
    _CENTRAL = struct.Struct("<4sHHHHHHIIIHHHHHII")
    _FLAGS = 0x0808  # bit 3: CRC-32 and sizes in a data descriptor; bit 11: UTF-8 names
    _DOS_DATE = (1 << 5) | 1  # 1980-01-01: fixed, so equal objects give equal files

    def __init__(self, file, force_zip64=False):
        self._file = file
        self._offset = 0
        self._members = []
        self._force_zip64 = force_zip64

    def _write(self, data):
        self._file.write(data)
        self._offset += len(data)

    def add(self, name, data, crc=None):
        """Append member ``name`` holding ``data``; ``crc`` is its ``_crc_job`` if started.
        ``data`` may be an int: that many zero bytes, with CRC 0 (``skip_data``'s records)."""
        if isinstance(data, int):
            size, data = data, None
        else:
            data = memoryview(data).cast("B")
            size = data.nbytes
        name_bytes = name.encode("utf-8")
        zip64 = self._force_zip64 or size >= 0xFFFFFFFF
        extra = struct.pack("<HHQQ", 1, 16, 0, 0) if zip64 else b""
        header_end = self._offset + self._LOCAL.size + len(name_bytes) + len(extra) + 4
        padding = -header_end % _STORAGE_ALIGNMENT
        extra += struct.pack("<HH", 0x4246, padding) + b"Z" * padding
        header_offset = self._offset
        size32 = 0xFFFFFFFF if zip64 else 0
        self._write(self._LOCAL.pack(b"PK\x03\x04", 45 if zip64 else 20, self._FLAGS, 0, 0,
                                     self._DOS_DATE, 0, size32, size32, len(name_bytes),
                                     len(extra)) + name_bytes + extra)
        if data is None:
            crc = 0
            zeros = bytes(min(size, 1 << 20))
            for start in range(0, size, len(zeros) or 1):
                self._file.write(zeros[:size - start])
        elif not config.compute_crc32:
            crc = 0  # as torch with set_crc32_options(False): the field is left 0
            self._file.write(data)
        else:
            crc = _crc_job(data) if crc is None else crc
            self._file.write(data)
            crc = _crc_value(crc)
        self._offset += size
        self._write(struct.pack("<4sIQQ" if zip64 else "<4sIII", b"PK\x07\x08", crc, size, size))
        self._members.append((name_bytes, crc, size, header_offset))

    def close(self):
        directory_start = self._offset
        for name_bytes, crc, size, header_offset in self._members:
            big_size = self._force_zip64 or size >= 0xFFFFFFFF
            big_offset = self._force_zip64 or header_offset >= 0xFFFFFFFF
            extra_fields = (([size, size] if big_size else [])
                            + ([header_offset] if big_offset else []))
            extra = (struct.pack(f"<HH{len(extra_fields)}Q", 1, 8 * len(extra_fields),
                                 *extra_fields) if extra_fields else b"")
            size32 = 0xFFFFFFFF if big_size else size
            version = 45 if extra else 20
            self._write(self._CENTRAL.pack(b"PK\x01\x02", version, version, self._FLAGS, 0, 0,
                                           self._DOS_DATE, crc, size32, size32, len(name_bytes),
                                           len(extra), 0, 0, 0, 0,
                                           0xFFFFFFFF if big_offset else header_offset)
                        + name_bytes + extra)
        directory_size = self._offset - directory_start
        count = len(self._members)
        if (self._force_zip64 or count >= 0xFFFF or directory_start >= 0xFFFFFFFF
                or directory_size >= 0xFFFFFFFF):
            zip64_end = self._offset
            self._write(struct.pack("<4sQHHIIQQQQ", b"PK\x06\x06", 44, 45, 45, 0, 0, count,
                                    count, directory_size, directory_start))
            self._write(struct.pack("<4sIQI", b"PK\x06\x07", 0, zip64_end, 1))
        self._write(struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, min(count, 0xFFFF),
                                min(count, 0xFFFF), min(directory_size, 0xFFFFFFFF),
                                min(directory_start, 0xFFFFFFFF), 0))


def _is_path(f):
    return isinstance(f, (str, os.PathLike))


def _write_archive(obj, file, protocol, force_zip64=False, byteorder_record=True):
    storages = _StorageTable()
    pickled = io.BytesIO()
    _Pickler(pickled, protocol, storages).dump(obj)
    writer = _ZipWriter(file, force_zip64=force_zip64)
    writer.add("archive/data.pkl", pickled.getbuffer())
    writer.add("archive/.format_version", b"1")
    writer.add("archive/.storage_alignment", str(_STORAGE_ALIGNMENT).encode())
    if byteorder_record:
        writer.add("archive/byteorder", sys.byteorder.encode())
    if _skip_data_state.active:
        # skip_data: each record keeps its place and size, but holds zeros (CRC 0), as torch's.
        for record in storages.records:
            writer.add(f"archive/data/{record.key}", record.data.nbytes)
    else:
        crcs = ([_crc_job(record.data) for record in storages.records]  # all started at once
                if config.compute_crc32 else [0] * len(storages.records))
        for record, crc in zip(storages.records, crcs):
            writer.add(f"archive/data/{record.key}", record.data, crc)
    writer.add("archive/version", _FILE_FORMAT_VERSION)
    writer.close()


def _replace_atomically(path, write):
    """Run ``write(file)`` on a new file beside ``path``, then rename it over ``path``: a crash
    at any point leaves either the old file or the complete new one, never a partial file."""
    path = os.path.realpath(path)  # through a symlink to its target, as a plain write goes
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        raise RuntimeError(f"Parent directory {folder} does not exist.")
    temp = os.path.join(folder, f".{os.path.basename(path)}.{secrets.token_hex(6)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies
    try:
        with os.fdopen(fd, "wb") as file:
            write(file)
            file.flush()
            if config.fsync:
                os.fsync(file.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    if not config.fsync:
        return
    with contextlib.suppress(OSError):  # make the rename itself durable
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def save(obj, f, pickle_module=pickle, pickle_protocol=DEFAULT_PROTOCOL,
         _use_new_zipfile_serialization=True, _disable_byteorder_record=False):
    """Save ``obj`` to ``f`` (a path or a writable binary file) in PyTorch's zip format.

    Tensors (every dtype, views, non-contiguous layouts), ``Parameter``\\ s, ``Size``, dtypes,
    devices, containers and plain Python values are written under PyTorch's names, so
    ``torch.load(f, weights_only=True)`` reads the file. Views of one memory block are written
    once. Saving to a path writes a temporary file in the same folder, flushes it to disk and
    renames it into place, so an interrupted save leaves any previous file intact.
    """
    if pickle_module is not pickle:
        raise NotImplementedError("ember.save writes with the standard pickle module only")
    if not _use_new_zipfile_serialization:
        raise NotImplementedError("ember.save writes only the zip format "
                                  "(_use_new_zipfile_serialization=True)")
    if pickle_protocol < 2:
        raise ValueError(f"pickle_protocol must be at least 2, got {pickle_protocol}")
    def write(file):
        _write_archive(obj, file, pickle_protocol,
                       byteorder_record=not _disable_byteorder_record)
    if _is_path(f):
        _replace_atomically(f, write)
    else:
        write(f)


# =============================================================================================
# Loading
# =============================================================================================

class _StorageType:
    """What a checkpoint's ``torch.<Type>Storage`` global stands for: the storage's dtype."""
    __slots__ = ("name", "dtype")

    def __init__(self, name, dtype):
        self.name, self.dtype = name, dtype

    def __repr__(self):
        return f"torch.{self.name}"


class _Storage:
    """A loaded storage: a flat array on a device. It is what a ``map_location`` callable
    receives (on the CPU, as PyTorch's) and may return moved with ``cpu()``, ``cuda()`` or
    ``to()``."""

    def __init__(self, array, dtype, dev):
        self.array, self.dtype, self.device = array, dtype, dev

    def nbytes(self):
        return self.array.size * self.dtype.itemsize

    def size(self):
        return self.array.size

    __len__ = size

    def to(self, device):
        from .ops.creation import resolve_device
        dev = resolve_device(device)  # "cuda" is a device with an index, as a tensor's is
        if dev == self.device:
            return self
        backend = _restore_backend(dev)
        host = get_backend(self.device).to_numpy(self.array)
        return _Storage(backend.from_host(host, self.dtype.np), self.dtype, dev)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to(_device("cuda", device) if isinstance(device, int) else device or "cuda")

    def __repr__(self):
        return f"<ember storage of {self.array.size} {self.dtype.name} on {self.device}>"


def _restore_backend(dev):
    """The backend a storage is restored onto, or torch's errors for a device this machine
    lacks (torch's ``_validate_device``): the device type's backend cannot start (no CuPy, no
    GPU), or it has fewer devices than the index."""
    from .backends import BackendUnavailableError
    try:
        return get_backend(dev)
    except BackendUnavailableError:
        raise RuntimeError(
            f"Attempting to deserialize object on a {dev.type.upper()} device but "
            f"ember.{dev.type}.is_available() is False. If you are running on a CPU-only "
            "machine, please use ember.load with map_location=ember.device('cpu') to map your "
            "storages to the CPU.") from None
    except RuntimeError:
        from .accelerator import _count
        count = _count(dev.type)
        if count and (dev.index or 0) < count:
            raise
        raise RuntimeError(
            f"Attempting to deserialize object on {dev.type.upper()} device {dev.index or 0} "
            f"but ember.{dev.type}.device_count() is {count}. Please use ember.load with "
            "map_location to map your storages to an existing device.") from None


def _check_layout(storage_numel, offset, size, stride):
    """Refuse tensor geometry that would reach outside its storage (a corrupt or malicious
    file): the tensor is built as a strided view, which NumPy does not bounds-check."""
    ints = (offset, *size, *stride)
    if (len(size) != len(stride) or any(type(v) is not int for v in ints)
            or offset < 0 or any(v < 0 for v in size) or any(v < 0 for v in stride)):
        raise RuntimeError(f"ember.load: invalid tensor geometry (offset {offset}, size "
                           f"{tuple(size)}, stride {tuple(stride)}): the file is corrupted")
    if 0 in size:
        return
    last = offset + sum((n - 1) * s for n, s in zip(size, stride))
    if last >= storage_numel:
        raise RuntimeError(f"ember.load: a tensor of size {tuple(size)}, stride {tuple(stride)} "
                           f"and offset {offset} reaches past the end of its storage of "
                           f"{storage_numel} elements: the file is corrupted")


def _tensor_on_storage(storage, offset, size, stride, dtype=None):
    if not isinstance(storage, _Storage) or not isinstance(dtype or storage.dtype, dt.dtype):
        raise pickle.UnpicklingError(f"ember.load: a tensor rebuilt from {storage!r} as "
                                     f"{dtype!r}: the file is corrupted")
    array = storage.array
    dtype = dtype or storage.dtype
    if dtype is not storage.dtype:  # an untyped (byte) storage read as ``dtype``
        array = array.view(dtype.np)
    size, stride = tuple(size), tuple(stride)
    _check_layout(array.size, offset, size, stride)
    backend = get_backend(storage.device)
    itemsize = dtype.itemsize
    data = backend.xp.lib.stride_tricks.as_strided(
        array[offset:] if array.size else array, shape=size,
        strides=tuple(s * itemsize for s in stride))
    return _wrap_with(data, dtype, storage.device, backend)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False,
                       backward_hooks=None, metadata=None):
    tensor = _tensor_on_storage(storage, storage_offset, size, stride)
    if requires_grad:
        tensor.requires_grad_(True)
    return tensor


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                       dtype, metadata=None):
    tensor = _tensor_on_storage(storage, storage_offset, size, stride, dtype)
    if requires_grad:
        tensor.requires_grad_(True)
    return tensor


def _rebuild_tensor(storage, storage_offset, size, stride):
    return _tensor_on_storage(storage, storage_offset, size, stride)


def _rebuild_qtensor(storage, storage_offset, size, stride, quantizer_params,
                     requires_grad=False, backward_hooks=None):
    """A quantized tensor: its integers on a quantized storage, with ``quantizer_params``
    ``(qscheme, scale, zero_point)`` or ``(qscheme, scales, zero_points, axis)``."""
    from ._quantized_tensor import wrap_quantized
    tensor = _tensor_on_storage(storage, storage_offset, size, stride)
    if tensor._dtype not in dt.QUANTIZED:
        raise pickle.UnpicklingError(f"ember.load: a quantized tensor on a {tensor._dtype} "
                                     "storage: the file is corrupted")
    if not isinstance(quantizer_params, tuple) or not quantizer_params:
        raise pickle.UnpicklingError("ember.load: invalid quantizer parameters")
    scheme = quantizer_params[0]
    if scheme in (_qscheme.per_tensor_affine, _qscheme.per_tensor_symmetric) and len(
            quantizer_params) == 3:
        params = (_qscheme.per_tensor_affine, float(quantizer_params[1]),
                  int(quantizer_params[2]))
    elif scheme in (_qscheme.per_channel_affine, _qscheme.per_channel_symmetric,
                    _qscheme.per_channel_affine_float_qparams) and len(quantizer_params) == 4:
        _, scales, zero_points, axis = quantizer_params
        if not isinstance(scales, Tensor) or not isinstance(zero_points, Tensor):
            raise pickle.UnpicklingError("ember.load: invalid per-channel quantizer parameters")
        z = zero_points._backend.to_numpy(zero_points._data)
        params = (scheme, scales._backend.to_numpy(scales._data).astype(np.float64),
                  z.astype(np.float64 if z.dtype.kind == "f" else np.int64), int(axis))
    else:
        raise RuntimeError(f"ember.load: unsupported quantizer {scheme!r} with "
                           f"{len(quantizer_params)} parameters")
    return wrap_quantized(tensor._data, tensor._dtype, tensor, params)


def _rebuild_parameter(data, requires_grad, backward_hooks=None):
    from .nn.parameter import Parameter
    return Parameter(data, requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    param = _rebuild_parameter(data, requires_grad)
    _set_python_state(param, state)
    return param


def _set_python_state(obj, state):
    """A tensor's Python attributes, as saved; never special (dunder) names."""
    if not state:
        return
    slots = None
    if isinstance(state, tuple) and len(state) == 2:  # (dict state, slot state)
        state, slots = state
    for attributes in (slots, state):
        for k, v in (attributes or {}).items():
            if not isinstance(k, str) or k.startswith("__"):
                raise pickle.UnpicklingError(f"ember.load: refused to set attribute {k!r}")
            setattr(obj, k, v)


def _rebuild_from_type_v2(func, new_type, args, state):
    """A tensor subclass or a tensor with Python attributes: rebuilt plain, then retyped."""
    tensor = func(*args)
    if new_type is not Tensor and type(tensor) is not new_type:
        from ._tensor import _as_subclass
        if not (isinstance(new_type, type) and issubclass(new_type, Tensor)):
            raise pickle.UnpicklingError(f"cannot rebuild a tensor as {new_type!r}")
        tensor = _as_subclass(tensor, new_type)
    _set_python_state(tensor, state)
    return tensor


def _unsupported(what):
    def rebuild(*args, **kwargs):
        raise RuntimeError(f"ember.load: the file holds {what}, which Ember does not support")
    rebuild.__name__ = f"rebuild_{what.replace(' ', '_')}"
    return rebuild


def _bytes_from_text(text, encoding="utf-8"):
    """``_codecs.encode`` as protocol-2 pickles use it for ``bytes``: text to bytes, with the
    two text encodings pickle writes, so a file cannot reach other codecs."""
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1", "utf-8", "utf8"):
        raise pickle.UnpicklingError(f"weights_only load: refused _codecs.encode of "
                                     f"{type(text).__name__} with encoding {encoding!r}")
    return text.encode(encoding)


def _torch_names():
    """PyTorch's global names that a checkpoint may hold, mapped to what Ember rebuilds them
    with. Everything here is safe to call with any arguments: it is the ``weights_only``
    allowlist."""
    from .nn.parameter import Parameter
    names = {
        "collections.OrderedDict": collections.OrderedDict,
        "collections.Counter": collections.Counter,
        "builtins.set": set,
        "builtins.frozenset": frozenset,
        "builtins.complex": complex,
        "builtins.bytearray": bytearray,
        "_codecs.encode": _bytes_from_text,
        "torch.Size": Size,
        "torch.device": _device,
        "torch.Tensor": Tensor,
        "torch.nn.parameter.Parameter": Parameter,
        "torch._utils._rebuild_tensor": _rebuild_tensor,
        "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
        "torch._utils._rebuild_tensor_v3": _rebuild_tensor_v3,
        "torch._utils._rebuild_parameter": _rebuild_parameter,
        "torch._utils._rebuild_parameter_with_state": _rebuild_parameter_with_state,
        "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
        "torch._utils._rebuild_sparse_tensor": _unsupported("a sparse tensor"),
        "torch._utils._rebuild_qtensor": _rebuild_qtensor,
        "torch._utils._rebuild_nested_tensor": _unsupported("a nested tensor"),
        "torch._utils._rebuild_meta_tensor_no_storage": _unsupported("a meta tensor"),
        "torch._utils._rebuild_wrapper_subclass": _unsupported("a wrapper tensor subclass"),
        "torch._utils._rebuild_device_tensor_from_numpy": _unsupported("a device tensor"),
        "torch.storage.UntypedStorage": _StorageType("UntypedStorage", dt.uint8),
        "torch.UntypedStorage": _StorageType("UntypedStorage", dt.uint8),
    }
    for scheme in _qscheme.__all__[1:]:
        names[f"torch.{scheme}"] = getattr(_qscheme, scheme)
    for d in dt._ALL + dt.QUANTIZED:
        names[f"torch.{d.name}"] = d
        storage = _STORAGE_NAME_BY_DTYPE[d.name]
        names[f"torch.{storage}"] = names[f"torch.cuda.{storage}"] = _StorageType(storage, d)
    return names


_TORCH_NAMES = None
_SAFE_GLOBALS = {}  # "module.name" -> object, added by add_safe_globals


def _known_names():
    global _TORCH_NAMES
    if _TORCH_NAMES is None:
        _TORCH_NAMES = _torch_names()
    return _TORCH_NAMES


def _global_name(obj):
    if isinstance(obj, tuple):  # (object, "module.name"), as PyTorch accepts
        return obj[1]
    return f"{obj.__module__}.{obj.__qualname__}"


def add_safe_globals(safe_globals):
    """Allow these globals (classes or functions, or ``(obj, "module.name")`` pairs) in
    ``weights_only=True`` loads, as ``torch.serialization.add_safe_globals``."""
    for obj in safe_globals:
        _SAFE_GLOBALS[_global_name(obj)] = obj[0] if isinstance(obj, tuple) else obj


def get_safe_globals():
    return list(_SAFE_GLOBALS.values())


def clear_safe_globals():
    _SAFE_GLOBALS.clear()


@contextlib.contextmanager
def safe_globals(safe_globals):
    """``with ember.serialization.safe_globals([...]):`` allows them for the block only."""
    saved = dict(_SAFE_GLOBALS)
    add_safe_globals(safe_globals)
    try:
        yield
    finally:
        _SAFE_GLOBALS.clear()
        _SAFE_GLOBALS.update(saved)


def _python3_name(module, name):
    # Protocol-2 pickles name Python 2's modules ("__builtin__ set"); pickle maps them the same.
    if (module, name) in NAME_MAPPING:
        return NAME_MAPPING[(module, name)]
    return IMPORT_MAPPING.get(module, module), name


class _ArchiveLoading:
    """What both unpicklers share: persistent ids resolved to storages read from the archive,
    placed by ``map_location``, each read once."""

    def _setup(self, archive, restore):
        self._archive = archive
        self._restore = restore
        self._storages = {}

    def persistent_load(self, pid):
        if (not isinstance(pid, tuple) or len(pid) != 5 or pid[0] != "storage"
                or not isinstance(pid[1], _StorageType) or not isinstance(pid[2], str)
                or not isinstance(pid[3], str) or type(pid[4]) is not int or pid[4] < 0):
            raise pickle.UnpicklingError(f"ember.load: unsupported persistent id {pid!r}")
        _, storage_type, key, location, numel = pid
        storage = self._storages.get(key)
        if storage is None:
            if storage_type.dtype is None:
                raise RuntimeError(f"ember.load: the file holds a torch.{storage_type.name}, "
                                   "a dtype Ember does not have")
            array = self._archive.read_storage(key, storage_type.dtype, numel)
            storage = self._restore(_Storage(array, storage_type.dtype, _device("cpu")),
                                    location)
            self._storages[key] = storage
        return storage


class _WeightsOnlyUnpickler(_ArchiveLoading, pickle._Unpickler):
    """Pickle's Python unpickler restricted to an allowlist of globals, and to setting state
    (the BUILD opcode) only on ordered dicts, whose ``_metadata`` a ``state_dict`` carries."""
    dispatch = pickle._Unpickler.dispatch.copy()

    def find_class(self, module, name):
        module, name = _python3_name(module, name)
        full = f"{module}.{name}"
        obj = _known_names().get(full)
        if obj is None:
            obj = _SAFE_GLOBALS.get(full)
        if obj is None:
            if module == "torch" and name.endswith("Storage"):
                return _StorageType(name, None)
            raise pickle.UnpicklingError(
                f"Weights only load failed: the file refers to the global {full}, which "
                f"ember.load(weights_only=True) does not allow. Re-running ember.load with "
                f"weights_only=False will likely succeed, but it can result in arbitrary code "
                f"execution: do it only if you got the file from a trusted source. To allow "
                f"this global, use ember.serialization.add_safe_globals([{name}]) or the "
                f"ember.serialization.safe_globals([{name}]) context manager.")
        return obj

    def _load_build(self):
        if len(self.stack) < 2:
            raise pickle.UnpicklingError("ember.load: BUILD with nothing to build: the file is "
                                         "corrupted")
        inst = self.stack[-2]
        if type(inst) not in (collections.OrderedDict, collections.Counter):
            if _global_name(type(inst)) in _SAFE_GLOBALS:
                return pickle._Unpickler.load_build(self)
            raise pickle.UnpicklingError(f"Weights only load failed: the file sets the state of "
                                         f"a {type(inst).__name__}, which is not allowed")
        state = self.stack.pop()
        if isinstance(state, tuple) and len(state) == 2 and state[1] is None:
            state = state[0]
        if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
            raise pickle.UnpicklingError("Weights only load failed: invalid state for an "
                                         "OrderedDict")
        inst.__dict__.update(state)

    dispatch[pickle.BUILD[0]] = _load_build


class _FullUnpickler(_ArchiveLoading, pickle.Unpickler):
    """The unrestricted unpickler (``weights_only=False``): PyTorch's names map to Ember's,
    ``torch.x.y`` falls back to ``ember.x.y``, and any other global is imported as pickle
    does. Running such a file runs the code it names."""

    def find_class(self, module, name):
        module, name = _python3_name(module, name)
        full = f"{module}.{name}"
        obj = _known_names().get(full)
        if obj is not None:
            return obj
        if module == "torch" or module.startswith("torch."):
            try:
                return super().find_class("ember" + module[len("torch"):], name)
            except (ImportError, AttributeError):
                if module == "torch" and name.endswith("Storage"):
                    return _StorageType(name, None)
                raise pickle.UnpicklingError(f"ember.load: the file needs {full}, which has no "
                                             "Ember counterpart") from None
        return super().find_class(module, name)


def _corrupt(name, reason):
    return RuntimeError(f"ember.load: failed reading zip archive {name}: {reason}. The "
                        "checkpoint is truncated or corrupted: it was not saved completely, "
                        "was transferred incorrectly, or was modified after saving.")


class _Archive:
    """A checkpoint's zip archive, open for reading records."""
    _LOCAL = struct.Struct("<4s22xHH")  # signature, then file name and extra field lengths

    def __init__(self, file, name, mmap_path=None):
        self._file = file
        self.name = name
        try:
            self._zip = zipfile.ZipFile(file)
        except zipfile.BadZipFile as exc:
            raise _corrupt(name, f"{exc} (no zip central directory found)") from None
        except (OSError, EOFError, ValueError, struct.error) as exc:
            raise _corrupt(name, str(exc)) from None
        self._members = {info.filename: info for info in self._zip.infolist()}
        pickles = [n for n in self._members if n.endswith("/data.pkl") and n.count("/") == 1]
        if len(pickles) != 1:
            if any(n.endswith("constants.pkl") for n in self._members):
                raise RuntimeError(f"ember.load: {name} is a TorchScript archive "
                                   "(torch.jit.save), which Ember cannot load")
            raise RuntimeError(f"ember.load: {name} is a zip archive but not a checkpoint: "
                               "it has no <archive>/data.pkl record")
        self.prefix = pickles[0][:-len("data.pkl")]
        self._pending_crcs = []
        self._mmap = None
        if mmap_path is not None:
            # MAP_SHARED (set_default_mmap_options) writes changes to the tensors back to the
            # file; the default, MAP_PRIVATE, keeps them in the process (copy-on-write).
            shared = _MAP_SHARED is not None and config.mmap_flags == _MAP_SHARED
            with open(mmap_path, "r+b" if shared else "rb") as f:
                self._mmap = _mmap.mmap(f.fileno(), 0, access=_mmap.ACCESS_WRITE if shared
                                        else _mmap.ACCESS_COPY)
        self._swap = self._file_byteorder() not in (None, sys.byteorder)

    def _file_byteorder(self):
        """The byte order of the storages, as torch decides it: the byteorder record, else the
        default load endianness (None or LITTLE: little; BIG: big; NATIVE: this machine's)."""
        if self.prefix + "byteorder" in self._members:
            byteorder = self.read_record("byteorder")
            if byteorder not in (b"little", b"big"):
                raise ValueError("Unknown endianness type: " + byteorder.decode())
            return byteorder.decode()
        endianness = config.endianness
        if endianness is None or endianness == LoadEndianness.LITTLE:
            if endianness is None and sys.byteorder == "big":
                warnings.warn("The default load endianness for checkpoints without a byteorder "
                              "mark on big endian machines was changed from 'native' to "
                              "'little' endian, to avoid this behavior please use "
                              "ember.serialization.set_default_load_endianness to set the "
                              "desired default load endianness", UserWarning)
            return "little"
        if endianness == LoadEndianness.BIG:
            return "big"
        if endianness == LoadEndianness.NATIVE:
            return None
        raise ValueError("Invalid load endianness type")

    def _member(self, record):
        info = self._members.get(self.prefix + record)
        if info is None:
            raise _corrupt(self.name, f"record {self.prefix + record} is missing")
        return info

    def read_record(self, record):
        info = self._member(record)
        if info.CRC == 0 and info.compress_type == zipfile.ZIP_STORED and info.file_size:
            # Written without its CRC-32 (torch's set_crc32_options(False)): zipfile would
            # reject it, so the bytes are read directly, as torch reads them.
            buffer = bytearray(info.file_size)
            self._read_into(buffer, self._data_offset(info), info)
            return bytes(buffer)
        try:
            return self._zip.read(info)
        except (zipfile.BadZipFile, EOFError, OSError, zlib.error) as exc:
            raise _corrupt(self.name, f"record {info.filename}: {exc}") from None

    def _data_offset(self, info):
        self._file.seek(info.header_offset)
        header = self._file.read(self._LOCAL.size)
        if len(header) != self._LOCAL.size:
            raise _corrupt(self.name, f"record {info.filename} is cut off")
        signature, name_length, extra_length = self._LOCAL.unpack(header)
        if signature != b"PK\x03\x04":
            raise _corrupt(self.name, f"bad local header for record {info.filename}")
        return info.header_offset + self._LOCAL.size + name_length + extra_length

    def read_storage(self, key, dtype, numel):
        """Storage ``key`` as a flat array of ``numel`` ``dtype`` elements: mapped from the file
        with ``mmap`` (copy-on-write), otherwise read into new memory and checked against the
        record's CRC-32."""
        info = self._member(f"data/{key}")
        nbytes = numel * dtype.itemsize
        if info.file_size < nbytes:
            raise _corrupt(self.name, f"record {info.filename} holds {info.file_size} bytes, "
                                      f"but its storage needs {nbytes}")
        if _skip_data_state.active:
            return np.empty(numel, dtype.np)  # skip_data: storages are made, not filled
        if info.compress_type != zipfile.ZIP_STORED:
            array = np.frombuffer(bytearray(self.read_record(f"data/{key}")[:nbytes]), dtype.np)
        else:
            offset = self._data_offset(info)
            if self._mmap is not None:
                if offset + nbytes > len(self._mmap):
                    raise _corrupt(self.name, f"record {info.filename} is cut off")
                array = np.frombuffer(self._mmap, dtype.np, numel, offset)
            else:
                array = np.empty(numel, dtype.np)
                self._read_into(array.view(np.uint8), offset, info)
        if self._swap:
            array = array.byteswap(inplace=array.flags.writeable)
        return array

    def _read_into(self, buffer, offset, info):
        self._file.seek(offset)
        view, done = memoryview(buffer), 0
        while done < len(view):
            n = self._file.readinto(view[done:])
            if not n:
                raise _corrupt(self.name, f"record {info.filename} is cut off")
            done += n
        if info.file_size != len(view) or not config.check_crc32 or info.CRC == 0:
            return  # (a storage record longer than its storage: only a prefix is read)
        # Large records are checked while the next ones are read; ``finish`` waits for them.
        self._pending_crcs.append((_crc_job(view), info))

    def _check_crc(self, crc, info):
        if crc != info.CRC:
            raise _corrupt(self.name, f"record {info.filename} fails its CRC-32 check")

    def finish(self):
        """Wait for the storages' pending CRC-32 checks; raise if one fails."""
        pending, self._pending_crcs = self._pending_crcs, []
        for job, info in pending:
            self._check_crc(_crc_value(job), info)

    def close(self):
        self._zip.close()


def _restorer(map_location):
    """The function placing each loaded (CPU) storage, as ``map_location`` asks."""
    def restore(storage, location):
        if map_location is None:
            target = location
        elif isinstance(map_location, dict):
            target = map_location.get(location, location)
        elif isinstance(map_location, (str, bytes, _device)):
            target = map_location.decode() if isinstance(map_location, bytes) else map_location
        elif callable(map_location):
            result = map_location(storage, location)
            if result is None:
                target = location
            elif isinstance(result, _Storage):
                return result
            else:
                raise TypeError(f"map_location must return a storage or None, got "
                                f"{type(result).__name__}")
        else:
            raise ValueError(f"map_location should be a string, an ember.device, a dict or a "
                             f"callable, got {type(map_location).__name__}")
        return default_restore_location(storage, str(target))
    return restore


@contextlib.contextmanager
def _open_for_reading(f):
    if _is_path(f):
        with open(f, "rb", buffering=0) as file:
            yield file, os.fspath(f)
        return
    if not (hasattr(f, "read") and hasattr(f, "seek")):
        raise TypeError(f"ember.load expects a path or a readable, seekable binary file, got "
                        f"{type(f).__name__}")
    name = getattr(f, "name", None) or type(f).__name__
    if not getattr(f, "seekable", lambda: True)():
        f = io.BytesIO(f.read())
    yield f, str(name)


class _NotACheckpointError(pickle.UnpicklingError, RuntimeError):
    """A file that is no checkpoint at all. torch's unpickler fails on such bytes with
    ``pickle.UnpicklingError``; Ember's checks have always raised RuntimeError, so it is both."""


_TRUE_VALUES = ("1", "y", "yes", "true")


def _resolve_weights_only(weights_only, pickle_module):
    """``weights_only`` after torch's defaults and its two environment switches.

    ``TORCH_FORCE_WEIGHTS_ONLY_LOAD`` forces True even over an explicit ``weights_only=False``;
    ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD`` forces False only where the call did not pass
    ``weights_only``, and warns that it did so; both set is an error."""
    not_set = weights_only is None
    if not_set:
        weights_only = pickle_module is None
    force = os.getenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "0").lower() in _TRUE_VALUES
    force_no = os.getenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0").lower() in _TRUE_VALUES
    if force and force_no:
        raise RuntimeError("Only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD` or "
                           "`TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD` should be set, but both were set.")
    if force:
        return True
    if force_no and not_set:
        warnings.warn("Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected, since the"
                      "`weights_only` argument was not explicitly passed to `ember.load`, forcing "
                      "weights_only=False.", UserWarning, stacklevel=3)
        return False
    return weights_only


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None,
         **pickle_load_args):
    """Load an object saved by ``ember.save`` or ``torch.save`` (zip format).

    ``weights_only=True`` (the default, unless a ``pickle_module`` is given) admits only
    tensors, storages, dtypes, devices, sizes, containers and primitive values: a file that
    names anything else raises ``pickle.UnpicklingError`` naming the global, and never runs
    it. ``weights_only=False`` trusts the file: unpickling it can run arbitrary code.

    ``map_location``: ``"cpu"``, a device, a dict from saved location to new location, or a
    callable ``(storage, location) -> storage or None``. ``mmap=True`` (``f`` must be a path)
    maps the storages copy-on-write instead of reading them. Without ``mmap`` each storage's
    CRC-32 is checked (``ember.serialization.config.check_crc32``); a truncated or corrupted
    file raises ``RuntimeError`` saying so, before any object is returned.
    """
    weights_only = _resolve_weights_only(weights_only, pickle_module)
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    if pickle_module is not None and pickle_module is not pickle:
        raise NotImplementedError("ember.load reads with the standard pickle module only")
    if mmap and not _is_path(f):
        raise ValueError("f must be a file path in order to use the mmap argument")
    pickle_load_args.setdefault("encoding", "utf-8")
    if _is_path(f) and os.fspath(f).endswith(".safetensors"):
        return _load_safetensors(f, map_location)

    with _open_for_reading(f) as (file, name):
        start = file.tell()
        head = file.read(4)
        file.seek(start)
        if not head:
            raise EOFError(f"Ran out of input: {name} is empty (a truncated checkpoint?)")
        if head[:2] != b"PK":
            if head[:1] == b"\x80":
                raise RuntimeError(f"ember.load: {name} is in PyTorch's legacy (pre-1.6) "
                                   "format, which Ember does not read; re-save it with "
                                   "torch.save from PyTorch 1.6 or later")
            if b"PK\x03\x04".startswith(head):
                raise _corrupt(name, "not a zip archive")  # a zip cut off in its first bytes
            raise _NotACheckpointError(
                f"ember.load: {name} is not a checkpoint: it is not a zip archive "
                f"(torch.save's format) nor a legacy pickle file (it starts with {head!r}); "
                "the file is truncated or corrupted, or is another kind of file.")
        archive = _Archive(file, name, mmap_path=os.fspath(f) if mmap else None)
        try:
            pickled = io.BytesIO(archive.read_record("data.pkl"))
            if weights_only:
                unpickler = _WeightsOnlyUnpickler(pickled, encoding=pickle_load_args["encoding"])
            else:
                unpickler = _FullUnpickler(pickled, **pickle_load_args)
            unpickler._setup(archive, _restorer(map_location))
            try:
                result = unpickler.load()
            except EOFError:
                raise _corrupt(name, "data.pkl ends early") from None
            archive.finish()
            return result
        finally:
            archive.close()


def _load_safetensors(path, map_location):
    if isinstance(map_location, dict) or (callable(map_location)
                                          and not isinstance(map_location, _device)):
        raise RuntimeError("Loading safetensors file with a dict or callable map_location is "
                           "not supported. Use a device string or ember.device instead.")
    from .utils.safetensors import load_file
    return load_file(path, device=str(map_location) if map_location is not None else "cpu")


# =============================================================================================
# torch.serialization's settings and helpers
# =============================================================================================

class SourceChangeWarning(Warning):
    """Warned by torch when a pickled module's source changed since it was saved (Ember does
    not pickle module source, so it never warns this itself; the class is here for code that
    filters or raises it)."""


class LoadEndianness(enum.Enum):
    """The byte order ``load`` assumes for a checkpoint without a byteorder record."""
    NATIVE = 1
    LITTLE = 2
    BIG = 3


def get_default_load_endianness():
    """The byte order assumed for checkpoints without a byteorder record (None: little)."""
    return config.endianness


def set_default_load_endianness(endianness):
    """Set the byte order ``load`` assumes for checkpoints without a byteorder record: a
    ``LoadEndianness``, or None for torch's default (little-endian)."""
    if not isinstance(endianness, LoadEndianness) and endianness is not None:
        raise TypeError("Invalid argument type in function set_default_load_endianness")
    config.endianness = endianness


def get_crc32_options():
    """Whether ``save`` computes each record's CRC-32."""
    return config.compute_crc32


def set_crc32_options(compute_crc32):
    """Whether ``save`` computes each record's CRC-32 (True by default). Without it the CRC
    fields are 0, as torch writes them, which saves time on large checkpoints; ``load`` reads
    such records unchecked."""
    config.compute_crc32 = compute_crc32


_MAP_PRIVATE = getattr(_mmap, "MAP_PRIVATE", None)
_MAP_SHARED = getattr(_mmap, "MAP_SHARED", None)


def get_default_mmap_options():
    """The ``mmap`` flags ``load(mmap=True)`` uses (``mmap.MAP_PRIVATE`` by default)."""
    return config.mmap_flags


class set_default_mmap_options:
    """Set the flags of ``load(mmap=True)``'s mapping: ``mmap.MAP_PRIVATE`` (the default:
    changes to the loaded tensors stay in the process) or ``mmap.MAP_SHARED`` (they are written
    to the file, whose records then no longer match their CRC-32s: a later load without
    ``mmap`` raises unless ``config.check_crc32`` is False). Takes effect at once; used as a
    context manager, the previous flags come back at the end of the block."""

    def __init__(self, flags):
        if sys.platform == "win32":
            raise RuntimeError("Changing the default mmap options is currently not supported "
                               "for Windows")
        if flags != _MAP_PRIVATE and flags != _MAP_SHARED:
            raise ValueError("Invalid argument in function set_default_mmap_options, expected "
                             f"mmap.MAP_PRIVATE or mmap.MAP_SHARED, but got {flags}")
        self.prev = config.mmap_flags
        config.mmap_flags = flags

    def __enter__(self):
        pass

    def __exit__(self, exc_type, exc_value, traceback):
        config.mmap_flags = self.prev


def _device_tag(obj):
    """The location of a storage (or tensor) on any of Ember's devices: "cpu", "cuda:0"..."""
    dev = getattr(obj, "device", None)
    return _location(dev) if isinstance(dev, _device) else None


def _device_deserialize(storage, location):
    """``storage`` moved to ``location`` where that names a device Ember has, else None."""
    try:
        dev = _device(location)
    except (RuntimeError, ValueError, TypeError):
        return None
    from .backends import is_known_device_type
    if not is_known_device_type(dev.type):
        return None  # another deserializer may know it; else "don't know how to restore"
    return storage.to(dev)  # a known device this machine lacks raises torch's error there


# (priority, tagger, deserializer), tried in priority order, as torch's registry.
_package_registry = [(10, _device_tag, _device_deserialize)]


def register_package(priority, tagger, deserializer):
    """Register how storages of another kind are tagged when saved and restored when loaded:
    ``tagger(storage)`` returns a location string or None, ``deserializer(storage, location)``
    the restored storage or None; lower priorities are tried first (Ember's devices: 10)."""
    _package_registry.append((priority, tagger, deserializer))
    _package_registry.sort(key=lambda entry: entry[0])


def location_tag(storage):
    """The location string a storage is saved under, from the first tagger that names one."""
    for _, tagger, _ in _package_registry:
        location = tagger(storage)
        if location:
            return location
    from . import typename
    raise RuntimeError("don't know how to determine data location of " + typename(storage))


def default_restore_location(storage, location):
    """``storage`` restored to ``location`` by the first registered deserializer that can."""
    for _, _, deserialize in _package_registry:
        result = deserialize(storage, location)
        if result is not None:
            return result
    from . import typename
    raise RuntimeError("don't know how to restore data location of " + typename(storage)
                       + " (tagged with " + location + ")")


_STRING_OPS = {"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE", "SHORT_BINSTRING",
               "BINSTRING", "STRING"}


def _globals_in_pickle(data):
    """Every ``module.name`` global the pickle ``data`` refers to, read from its opcodes
    (nothing is unpickled): GLOBAL's argument, and STACK_GLOBAL's two strings, followed
    through the memo."""
    import pickletools
    found, memo, strings = set(), {}, []
    try:
        for opcode, arg, _ in pickletools.genops(data):
            name = opcode.name
            if name == "GLOBAL":
                module, _, qualname = arg.partition(" ")
                found.add(f"{module}.{qualname}")
            elif name in _STRING_OPS:
                strings.append(arg)
            elif name == "MEMOIZE":
                memo[len(memo)] = strings[-1] if strings else None
            elif name in ("PUT", "BINPUT", "LONG_BINPUT"):
                memo[arg] = strings[-1] if strings else None
            elif name in ("GET", "BINGET", "LONG_BINGET"):
                strings.append(memo.get(arg))
            elif name == "STACK_GLOBAL":
                if len(strings) >= 2 and None not in strings[-2:]:
                    found.add(f"{strings[-2]}.{strings[-1]}")
            if name not in _STRING_OPS and name not in ("GET", "BINGET", "LONG_BINGET",
                                                         "MEMOIZE", "PUT", "BINPUT",
                                                         "LONG_BINPUT"):
                strings.clear()  # only strings pushed right before STACK_GLOBAL name it
    except ValueError as exc:
        raise pickle.UnpicklingError(f"the pickle in the checkpoint is malformed: {exc}") from None
    return found


def get_unsafe_globals_in_checkpoint(f):
    """The globals in checkpoint ``f`` that ``load(weights_only=True)`` would refuse: those
    neither in Ember's allowlist nor added by ``add_safe_globals``. The pickle is scanned, not
    run, so this is safe on any file."""
    with _open_for_reading(f) as (file, name):
        start = file.tell()
        head = file.read(4)
        file.seek(start)
        if head[:2] != b"PK":
            raise ValueError("Expected input to be a checkpoint returned by torch.save")
        try:
            zip_file = zipfile.ZipFile(file)
        except zipfile.BadZipFile:
            raise ValueError("Expected input to be a checkpoint returned by torch.save") from None
        with zip_file:
            names = zip_file.namelist()
            if any(n.endswith("constants.pkl") for n in names):
                raise ValueError("Expected input to be a checkpoint returned by torch.save but "
                                 "got a torchscript checkpoint")
        archive = _Archive(file, name)
        try:
            data = archive.read_record("data.pkl")
        finally:
            archive.close()
    safe = set(_known_names()) | set(_SAFE_GLOBALS)
    return list(_globals_in_pickle(data) - safe)


class _SkipDataState(threading.local):
    active = False


_skip_data_state = _SkipDataState()


class skip_data:
    """Within this block ``save`` writes every storage record at its full size but without its
    bytes (zeros, CRC 0), as torch does, to be filled in a separate pass; ``load`` builds the
    tensors with their storages but does not read them (their values are undefined).
    ``materialize_fake_tensors`` is torch's switch for its FakeTensors, which Ember does not
    have: only False is accepted."""

    def __init__(self, materialize_fake_tensors=False):
        if materialize_fake_tensors:
            raise NotImplementedError("skip_data(materialize_fake_tensors=True): Ember has no "
                                      "fake tensors to materialize")
        self.materialize_fake_tensors = materialize_fake_tensors

    def __enter__(self):
        self._old_active = _skip_data_state.active
        _skip_data_state.active = True

    def __exit__(self, type, value, traceback):
        _skip_data_state.active = self._old_active


@contextlib.contextmanager
def mkdtemp():
    """A new temporary directory for the block; removed with its contents afterwards."""
    import shutil
    import tempfile
    path = tempfile.mkdtemp()
    try:
        yield path
    finally:
        shutil.rmtree(path)


def check_module_version_greater_or_equal(module, req_version_tuple, error_if_malformed=True):
    """Whether ``module.__version__`` is at least ``req_version_tuple`` (compared field by
    field, each field cast to the type of the required one). A version that cannot be compared
    raises RuntimeError, or with ``error_if_malformed=False`` warns and counts as met."""
    try:
        version_strs = module.__version__.split(".")
        module_version = tuple(type(required)(version_strs[i])
                               for i, required in enumerate(req_version_tuple))
        requirement_is_met = module_version >= req_version_tuple
    except Exception as exc:
        message = (f"'{module.__name__}' module version string is malformed "
                   f"'{module.__version__}' and cannot be compared with tuple "
                   f"{str(req_version_tuple)}")
        if error_if_malformed:
            raise RuntimeError(message) from exc
        warnings.warn(message + ", but continuing assuming that requirement is met",
                      stacklevel=2)
        requirement_is_met = True
    return requirement_is_met
