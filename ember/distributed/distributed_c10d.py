"""``torch.distributed.distributed_c10d``: the default process group, groups, and every
collective, as PyTorch's, over Ember's backends (``mpi`` for CPU tensors, ``nccl`` for CUDA).

A collective checks its arguments as torch does, hands the tensors' arrays to the group's
backend for their device (C-contiguous arrays directly, so MPI reads and writes the tensor's
storage; anything else packed once and copied back on completion), and either waits or
returns the ``Work``. The ops write tensors' storage in place and bump their version counter,
but record no autograd history: c10d ops are not differentiable in torch either.
"""
import datetime
import enum
import io
import operator
import os
import pickle
import socket
import warnings

import numpy as np

from .process_group import (ProcessGroup, backend_impl, register_backend_impl,
                            default_pg_timeout, timeout_seconds)

__all__ = ["Backend", "ReduceOp", "GroupMember", "group", "P2POp", "is_initialized",
           "init_process_group", "destroy_process_group", "new_group", "get_rank",
           "get_world_size", "get_backend",
           "get_process_group_ranks", "get_global_rank", "get_group_rank", "barrier",
           "monitored_barrier", "all_reduce", "broadcast", "reduce", "all_gather",
           "all_gather_into_tensor", "gather", "scatter", "reduce_scatter",
           "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "send", "recv", "isend",
           "irecv", "batch_isend_irecv", "all_gather_object", "broadcast_object_list",
           "scatter_object_list", "gather_object"]

class Backend(str):
    """A backend's name, as ``torch.distributed.Backend``: ``Backend("NCCL") == "nccl"``;
    unknown names come back lower-cased (PyTorch accepts third-party backends by name)."""
    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    XCCL = "xccl"
    UCC = "ucc"
    MPI = "mpi"
    FAKE = "fake"
    backend_list = [UNDEFINED, GLOO, NCCL, XCCL, UCC, MPI, FAKE]
    default_device_backend_map = {"cpu": GLOO, "cuda": NCCL, "xpu": XCCL, "mps": GLOO}

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError("Backend constructor parameter must be string-ish")
        value = getattr(Backend, name.upper(), Backend.UNDEFINED)
        if value == Backend.UNDEFINED:
            value = name.lower()
        return value


class _RedOpType(enum.Enum):
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8

    def __int__(self):
        return self.value

    __index__ = __int__

    def __eq__(self, other):
        if isinstance(other, ReduceOp):
            return self is other.op
        if isinstance(other, int) and not isinstance(other, bool):
            return self.value == other
        return self is other

    def __hash__(self):
        return hash(self.value)


# Named as PyTorch names it, and found by pickle where it is published (ReduceOp.RedOpType).
_RedOpType.__name__ = "RedOpType"
_RedOpType.__qualname__ = "ReduceOp.RedOpType"


class ReduceOp:
    """How a reduction combines values: ``ReduceOp.SUM``, ``AVG``, ``PRODUCT``, ``MIN``,
    ``MAX``, ``BAND``, ``BOR``, ``BXOR``, ``PREMUL_SUM`` (each a ``ReduceOp.RedOpType``);
    ``ReduceOp(op)`` wraps one and compares equal to it."""
    RedOpType = _RedOpType

    def __init__(self, op):
        if not isinstance(op, _RedOpType):
            raise TypeError("__init__(): incompatible constructor arguments. The following "
                            "argument types are supported:\n    1. ReduceOp(arg0: "
                            "ReduceOp.RedOpType)")
        if op is _RedOpType.PREMUL_SUM:
            raise RuntimeError("ReduceOp with PREMUL_SUM needs its scaling factor, which only "
                               "PyTorch's NCCL backend makes (torch.distributed."
                               "_make_nccl_premul_sum); Ember does not make one")
        self.op = op

    def __eq__(self, other):
        other_op = other.op if isinstance(other, ReduceOp) else other
        return self.op == other_op

    def __hash__(self):
        return hash(self.op)

    def __repr__(self):
        return f"<ReduceOp {self.op.name}>"


for _op in _RedOpType:
    setattr(ReduceOp, _op.name, _op)
del _op


_NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call "
                    "init_process_group.")


class GroupMember:
    """``WORLD`` is the default process group (None until one is initialised);
    ``NON_GROUP_MEMBER`` marks a process outside a group."""
    WORLD = None
    NON_GROUP_MEMBER = -100


class group:
    WORLD = None


class _World:
    def __init__(self):
        self.store = None
        self.group_ranks = {}   # ProcessGroup -> {global rank: group rank}
        self.group_count = 0


_world = _World()


def is_initialized():
    """Whether the default process group exists."""
    return GroupMember.WORLD is not None


def _get_default_group():
    if GroupMember.WORLD is None:
        raise ValueError(_NOT_INITIALIZED)
    return GroupMember.WORLD


def _get_default_store():
    """The store the default group rendezvoused with."""
    _get_default_group()
    return _world.store


def _set_world(pg):
    GroupMember.WORLD = group.WORLD = pg


# -- init and groups --------------------------------------------------------------------------
def _parse_backend(backend):
    """{device type: backend name} from ``backend`` (None, "mpi", "cpu:mpi,cuda:nccl")."""
    if backend is None or str(backend).lower() == "undefined":
        mapping = {"cpu": "mpi"}
        if _cuda_usable():
            mapping["cuda"] = "nccl"
        return mapping
    text = str(backend).lower()
    if ":" not in text:
        devices, _ = backend_impl(text)
        return {d: text for d in devices}
    mapping = {}
    for part in text.split(","):
        device, sep, name = part.strip().partition(":")
        if not sep or not device or not name:
            raise ValueError(f"Invalid backend string '{backend}': expected a backend name or "
                             "'<device>:<backend>,<device>:<backend>'")
        devices, _ = backend_impl(name)
        if device not in devices:
            raise ValueError(f"backend '{name}' does not support device type '{device}' (it "
                             f"serves {', '.join(devices)})")
        mapping[device] = name
    return mapping


def _cuda_usable():
    try:
        from .. import cuda
        return bool(cuda.is_available())
    except Exception:
        return False


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None):
    """Create the default process group, as ``torch.distributed.init_process_group``.

    ``backend``: "mpi" (CPU tensors), "nccl" (CUDA tensors), "cpu:mpi,cuda:nccl", or None for
    mpi plus nccl where CuPy sees a GPU; Ember has no gloo. The rendezvous is ``store`` or
    ``init_method`` (env://, tcp://, file://); under ``mpiexec`` without either (and without
    MASTER_ADDR), rank and world size come from MPI and rank 0 serves a TCPStore whose address
    MPI broadcasts."""
    if GroupMember.WORLD is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if store is not None and init_method is not None:
        raise AssertionError("Cannot specify both init_method and store.")
    if pg_options is not None:
        raise ValueError("pg_options are not supported by Ember's backends (mpi, nccl)")
    mapping = _parse_backend(backend)
    if "cuda" in mapping and not _cuda_usable():
        raise RuntimeError("ProcessGroupNCCL is only supported with GPUs, no GPUs found!")
    timeout = default_pg_timeout if timeout is None else timeout
    if not isinstance(timeout, datetime.timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got "
                        f"{type(timeout)}")
    from .store import PrefixStore
    if mapping.get("cpu") == "mpi" and _mpi_launched():
        # MPI_Init waits for the rest of its mpiexec job while holding the GIL, so it runs
        # before this process serves any store: a peer's store request it blocked, while that
        # peer is the one MPI_Init waits for, would deadlock the job.
        from .process_group_mpi import _mpi
        _mpi()
    if store is not None:
        if world_size <= 0:
            raise AssertionError("world_size must be positive if using store")
        if rank < 0:
            raise AssertionError("rank must be non-negative if using store")
    elif init_method is None and "MASTER_ADDR" not in os.environ and _mpi_launched():
        store, rank, world_size = _store_over_mpi(rank, world_size, timeout)
    else:
        from .rendezvous import rendezvous
        store, rank, world_size = next(rendezvous(init_method or "env://", rank, world_size,
                                                  timeout=timeout))
    pg = ProcessGroup(PrefixStore("default_pg", store), rank, world_size, range(world_size),
                      mapping, timeout=timeout, group_name=group_name or "0",
                      group_desc="default_pg")
    if device_id is not None:
        pg.bound_device_id = device_id
    # the CPU communicator is made now, by every rank together; others on first use
    if "cpu" in mapping:
        pg._get_backend("cpu")
    if device_id is not None and getattr(device_id, "type", None) in mapping:
        pg._get_backend(device_id)
    _world.store = store
    _world.group_ranks[pg] = {r: r for r in range(world_size)}
    _world.group_count = 1
    _set_world(pg)


def _mpi_launched():
    from .process_group_mpi import mpi_launched_size
    return mpi_launched_size() is not None


def _store_over_mpi(rank, world_size, timeout):
    from .process_group_mpi import _mpi
    from .store import TCPStore
    comm = _mpi().COMM_WORLD
    env_rank, env_size = os.environ.get("RANK"), os.environ.get("WORLD_SIZE")
    rank = rank if rank >= 0 else int(env_rank) if env_rank is not None else comm.Get_rank()
    world_size = (world_size if world_size > 0 else
                  int(env_size) if env_size is not None else comm.Get_size())
    if world_size != comm.Get_size():
        raise ValueError(f"world_size={world_size} but mpiexec started {comm.Get_size()} "
                         "processes: without MASTER_ADDR/MASTER_PORT or an init_method the "
                         "world must be the one mpiexec started")
    master = comm.allgather(rank).index(0) if world_size > 1 else 0
    address = None
    store = None
    if comm.Get_rank() == master:
        # the server listens on every interface; peers reach it by this host's name
        store = TCPStore("127.0.0.1" if world_size == 1 else socket.gethostname(), 0,
                         world_size, True, timeout=timeout, wait_for_workers=False)
        address = (store.host, store.port)
    address = comm.bcast(address, root=master)
    if store is None:
        store = TCPStore(address[0], address[1], world_size, False, timeout=timeout)
    return store, rank, world_size


def destroy_process_group(group=None):
    """Destroy ``group`` (default: the default group, and with it every group)."""
    if group == GroupMember.NON_GROUP_MEMBER:
        return
    pg = GroupMember.WORLD if group is None else group
    if pg is None:
        raise AssertionError("Process group cannot be None")
    if pg not in _world.group_ranks:
        raise ValueError("Invalid process group specified")
    if pg is GroupMember.WORLD:
        for other in list(_world.group_ranks):
            if other is not pg:
                other.shutdown()
        pg.shutdown()
        _world.group_ranks.clear()
        _world.store = None
        _world.group_count = 0
        _set_world(None)
    else:
        pg.shutdown()
        del _world.group_ranks[pg]


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization=False, group_desc=None, device_id=None,
              sort_ranks=True):
    """A group of the global ``ranks`` (default: all), made by every rank of the default
    group together; a rank outside it gets ``GroupMember.NON_GROUP_MEMBER``."""
    world = _get_default_group()
    if use_local_synchronization:
        raise ValueError("use_local_synchronization=True is not supported by Ember: every "
                         "rank of the default group calls new_group")
    world_size = world.size()
    ranks = list(range(world_size)) if ranks is None or len(ranks) == 0 else \
        [operator.index(r) for r in ranks]
    if sort_ranks:
        ranks = sorted(ranks)
    for r in ranks:
        if r < 0 or r >= world_size:
            raise ValueError("The new group's rank should be within the world_size set by "
                             "init_process_group")
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"new_group ranks {ranks} contain duplicates")
    mapping = dict(world._backends) if backend is None else _parse_backend(backend)
    timeout = world._timeout if timeout is None else timeout
    name = str(_world.group_count)
    _world.group_count += 1
    my_rank = world.rank()
    group_rank = ranks.index(my_rank) if my_rank in ranks else None
    impls = {}
    for device_type, bname in mapping.items():
        if world._backends.get(device_type) != bname:
            if bname == "mpi":
                raise ValueError(f"new_group(backend={backend!r}): an MPI sub-group is split "
                                 "from the default group's MPI communicator, and the default "
                                 f"group has {world.name()}; initialise it with "
                                 "backend='cpu:mpi,cuda:nccl'")
            continue  # made on the group's first use, from the group's prefixed store
        if device_type != "cpu" and device_type not in world._created_impls():
            continue
        parent = world._get_backend(device_type)
        made = parent.split(ranks, group_rank)
        if made is not NotImplemented and made is not None:
            made.timeout = timeout_seconds(timeout)
            impls[device_type] = made
    if group_rank is None:
        return GroupMember.NON_GROUP_MEMBER
    from .store import PrefixStore
    pg = ProcessGroup(PrefixStore(f"group_{name}", _world.store), group_rank, len(ranks),
                      ranks, mapping, timeout=timeout, group_name=name,
                      group_desc=group_desc or "undefined", impls=impls)
    _world.group_ranks[pg] = {g: i for i, g in enumerate(ranks)}
    return pg


def _rank_not_in_group(group):
    return group is not None and group == GroupMember.NON_GROUP_MEMBER


def _warn_not_in_group(op_name):
    global_rank = -1 if GroupMember.WORLD is None else GroupMember.WORLD.rank()
    warnings.warn(f"Running {op_name} on global rank {global_rank} which does not belong to "
                  "the given group.", stacklevel=3)


def _group_or_default(group):
    if group is None or group is GroupMember.WORLD:
        return _get_default_group()
    if not isinstance(group, ProcessGroup):
        raise ValueError(f"Expecting a ProcessGroup, but got a {type(group)}.")
    if group not in _world.group_ranks:
        raise ValueError("Invalid process group specified or has been destroyed.")
    return group


def get_rank(group=None):
    """This process's rank in ``group`` (-1 outside it)."""
    if _rank_not_in_group(group):
        return -1
    default = _get_default_group()
    if group is None or group is GroupMember.WORLD:
        return default.rank()
    return get_group_rank(group, default.rank())


def get_world_size(group=None):
    """The number of ranks in ``group`` (-1 for a rank outside it)."""
    if _rank_not_in_group(group):
        return -1
    return _group_or_default(group).size()


def get_backend(group=None):
    """The backend's name of ``group`` ("mpi", "nccl", or "cpu:mpi,cuda:nccl")."""
    if _rank_not_in_group(group):
        raise ValueError("Invalid process group specified")
    pg = _group_or_default(group)
    if pg not in _world.group_ranks:
        raise ValueError("Invalid process group specified")
    return Backend(pg.name()) if "," not in pg.name() else pg.name()


def _registered(group):
    if group not in _world.group_ranks:
        raise ValueError(f"Group {group} is not registered, please create group with "
                         "torch.distributed.new_group API")
    return _world.group_ranks[group]


def get_group_rank(group, global_rank):
    if group is GroupMember.WORLD:
        return global_rank
    ranks = _registered(group)
    if global_rank not in ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return ranks[global_rank]


def get_global_rank(group, group_rank):
    if group is GroupMember.WORLD:
        return group_rank
    for rank, grp_rank in _registered(group).items():
        if grp_rank == group_rank:
            return rank
    raise ValueError(f"Group rank {group_rank} is not part of group {group}")


def get_process_group_ranks(group):
    """The global ranks in ``group``, in group-rank order."""
    if group is None or group is GroupMember.WORLD:
        group = _get_default_group()
    return list(_registered(group).keys())


def _canonical_rank(group, global_rank, group_rank):
    """The group rank from exactly one of a global and a group rank."""
    if group_rank is not None:
        if global_rank is not None:
            raise ValueError("Can't specify both group_rank and global_rank")
        if not 0 <= group_rank < group.size():
            raise ValueError(f"Group rank {group_rank} is not part of group {group}")
        return group_rank
    if global_rank is None:
        raise ValueError("Must specify global_rank or group_rank")
    if group is _get_default_group():
        if not 0 <= global_rank < group.size():
            raise ValueError(f"Global rank {global_rank} is not part of group {group}")
        return global_rank
    return get_group_rank(group, global_rank)


# -- tensors to arrays ------------------------------------------------------------------------
def _tensor_type():
    from .._tensor import Tensor
    return Tensor


def _check_single_tensor(param, name):
    if not isinstance(param, _tensor_type()):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"ember.Tensor\n             but got {type(param)} instead.")


def _check_tensor_list(param, name):
    if not isinstance(param, list):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"List[ember.Tensor]\n             but got {type(param)} instead.")
    if not all(isinstance(p, _tensor_type()) for p in param):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"List[ember.Tensor]\n             but got {type(param)} with elements "
                        f"of type {[type(p) for p in param]}.")


def _same_dtype(tensors):
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) > 1:
        a, b = sorted(dtypes, key=str)[:2]
        raise ValueError(f"Invalid usage of tensors with different dtypesFound {a} and  {b}")


class _Packed:
    """A tensor's array as a backend wants it: the storage itself when C-contiguous, else a
    packed copy that ``finish`` writes back (``write``: the op changes the tensor)."""
    __slots__ = ("tensor", "array", "copied", "write")

    def __init__(self, tensor, write):
        array = tensor._data
        self.tensor, self.write = tensor, write
        self.copied = not array.flags.c_contiguous
        self.array = tensor._backend.xp.ascontiguousarray(array) if self.copied else array

    def finish(self):
        if self.write:
            if self.copied:
                self.tensor._data[...] = self.array
            self.tensor._bump_version()


def _impl(group, tensor):
    return group._get_backend(tensor._device)


def _front(work, finish, outputs, async_op):
    """Chain the front end's completion after the backend's; wait unless ``async_op``."""
    if finish is not None or outputs is not None:
        work = work.chain(finish, outputs if outputs is not None else work._outputs)
    if async_op:
        return work
    work.wait()
    return None


def _red_op(op, dtype, what):
    """The RedOpType for ``op`` on ``dtype``, refusing what torch refuses."""
    from .. import _dtype as dt
    red = op.op if isinstance(op, ReduceOp) else op
    if not isinstance(red, ReduceOp.RedOpType):
        raise TypeError(f"{what}: op must be a ReduceOp, got {op!r}")
    if red is ReduceOp.PREMUL_SUM:
        raise RuntimeError(f"{what}: ReduceOp.PREMUL_SUM needs NCCL's scaling factor; Ember "
                           "does not support it")
    if dtype.is_complex and red not in (ReduceOp.SUM, ReduceOp.AVG, ReduceOp.PRODUCT):
        raise ValueError(f"{what} does not support {op} on complex tensors")
    if red in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and (
            dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"Cannot use ReduceOp.{red.name} with {dtype} tensors: bitwise "
                           "reductions need integer or bool tensors")
    if red is ReduceOp.AVG and dtype is dt.bool:
        raise RuntimeError("Cannot use ReduceOp.AVG with bool tensors")
    return red


def _average(array, size):
    if array.dtype.kind in "iu":
        # integer average truncates toward zero, as NCCL's
        q = np.abs(array) // size
        array[...] = np.where(array < 0, -q, q)
    elif array.dtype.kind in "fc" and array.dtype.itemsize >= 4:
        array /= size
    else:
        array[...] = (array.astype(np.float32) / size).astype(array.dtype)


# -- collectives ------------------------------------------------------------------------------
def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` across the group in place on every rank."""
    _check_single_tensor(tensor, "tensor")
    if _rank_not_in_group(group):
        _warn_not_in_group("all_reduce")
        return None
    pg = _group_or_default(group)
    red = _red_op(op, tensor.dtype, "all_reduce")
    packed = _Packed(tensor, True)
    impl = _impl(pg, tensor)
    work = impl.allreduce(packed.array, ReduceOp.SUM if red is ReduceOp.AVG else red)

    def finish():
        if red is ReduceOp.AVG:
            _average(packed.array, pg.size())
        packed.finish()
    return _front(work, finish, [tensor], async_op)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copy ``src``'s ``tensor`` into every rank's."""
    _check_single_tensor(tensor, "tensor")
    if _rank_not_in_group(group):
        _warn_not_in_group("broadcast")
        return None
    pg = _group_or_default(group)
    root = _canonical_rank(pg, src, group_src)
    packed = _Packed(tensor, True)
    work = _impl(pg, tensor).broadcast(packed.array, root)
    return _front(work, packed.finish, [tensor], async_op)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduce ``tensor`` across the group into ``dst``'s."""
    _check_single_tensor(tensor, "tensor")
    if _rank_not_in_group(group):
        _warn_not_in_group("reduce")
        return None
    pg = _group_or_default(group)
    root = _canonical_rank(pg, dst, group_dst)
    red = _red_op(op, tensor.dtype, "reduce")
    is_root = pg.rank() == root
    packed = _Packed(tensor, is_root)
    work = _impl(pg, tensor).reduce(packed.array, root,
                                    ReduceOp.SUM if red is ReduceOp.AVG else red)

    def finish():
        if is_root and red is ReduceOp.AVG:
            _average(packed.array, pg.size())
        packed.finish()
    return _front(work, finish, [tensor], async_op)


def _stacked_empty(tensor, size):
    xp = tensor._backend.xp
    return xp.empty((size,) + tuple(tensor._data.shape), dtype=tensor._data.dtype)


def _write_rows(rows, tensors):
    for row, t in zip(rows, tensors):
        t._data[...] = row
        t._bump_version()


def _check_list_len(tensors, size, name):
    if len(tensors) != size:
        raise ValueError(f"{name} must hold one tensor per rank of the group: expected "
                         f"{size}, got {len(tensors)}")


def _check_like(tensors, tensor, what):
    for t in tensors:
        if tuple(t.shape) != tuple(tensor.shape):
            raise ValueError(f"{what}: every tensor must have the shape of the input "
                             f"{tuple(tensor.shape)}, got {tuple(t.shape)}")
        if t._device != tensor._device:
            raise ValueError(f"{what}: tensors must be on one device, got {t._device} and "
                             f"{tensor._device}")


def _one_per_rank(tensors, tensor, name, group, op):
    """The checks all_gather and reduce_scatter share: ``tensors`` holds one tensor per rank,
    each like ``tensor``. The group, or None for a rank outside it."""
    _check_tensor_list(tensors, name)
    _check_single_tensor(tensor, "tensor" if op == "all_gather" else "output")
    _same_dtype(tensors + [tensor])
    if _rank_not_in_group(group):
        _warn_not_in_group(op)
        return None
    pg = _group_or_default(group)
    _check_list_len(tensors, pg.size(), name)
    _check_like(tensors, tensor, op)
    return pg


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """``tensor_list[r]`` becomes rank r's ``tensor``."""
    pg = _one_per_rank(tensor_list, tensor, "tensor_list", group, "all_gather")
    if pg is None:
        return None
    packed = _Packed(tensor, False)
    out = _stacked_empty(tensor, pg.size())
    work = _impl(pg, tensor).allgather(out, packed.array)
    return _front(work, lambda: _write_rows(out, tensor_list), tensor_list, async_op)


def _rows_view(tensor, size, other, what, role):
    """``tensor`` as (size, *other.shape): its first dim is ``size`` times ``other``'s, or it
    is stacked. The packed array and its (size, ...) view."""
    shape, oshape = tuple(tensor.shape), tuple(other.shape)
    if tensor.dtype != other.dtype:
        raise ValueError(f"Invalid usage of tensors with different dtypesFound {tensor.dtype} "
                         f"and  {other.dtype}")
    stacked = (size,) + oshape
    concatenated = ((size * oshape[0],) + oshape[1:]) if oshape else None
    if shape != stacked and shape != concatenated:
        raise ValueError(f"{what}: the {role} tensor must have shape {concatenated or stacked}"
                         f" (world size times the other tensor's first dimension) or "
                         f"{stacked}, got {shape}")
    return stacked


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """``output_tensor`` becomes every rank's ``input_tensor`` concatenated along dim 0 (or
    stacked, for an output of shape (world_size, *input.shape))."""
    _check_single_tensor(input_tensor, "input_tensor")
    _check_single_tensor(output_tensor, "output_tensor")
    if _rank_not_in_group(group):
        _warn_not_in_group("all_gather_into_tensor")
        return None
    pg = _group_or_default(group)
    stacked = _rows_view(output_tensor, pg.size(), input_tensor, "all_gather_into_tensor",
                         "output")
    packed_in = _Packed(input_tensor, False)
    packed_out = _Packed(output_tensor, True)
    work = _impl(pg, input_tensor).allgather(packed_out.array.reshape(stacked), packed_in.array)
    return _front(work, packed_out.finish, [output_tensor], async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """``output`` becomes the reduction over ranks of this rank's slice of ``input`` (slices
    along dim 0, or rows of a (world_size, *output.shape) input)."""
    _check_single_tensor(output, "output")
    _check_single_tensor(input, "input")
    if _rank_not_in_group(group):
        _warn_not_in_group("reduce_scatter_tensor")
        return None
    pg = _group_or_default(group)
    red = _red_op(op, output.dtype, "reduce_scatter_tensor")
    stacked = _rows_view(input, pg.size(), output, "reduce_scatter_tensor", "input")
    return _reduce_scatter_rows(pg, output, _Packed(input, False).array.reshape(stacked), red,
                                async_op)


def _reduce_scatter_rows(pg, output, rows, red, async_op):
    """``output`` becomes the reduction of every rank's row ``rank`` of ``rows`` (an array of
    shape (world_size, *output.shape)); AVG is a SUM divided once the data is in."""
    packed_out = _Packed(output, True)
    work = _impl(pg, output).reduce_scatter(packed_out.array, rows,
                                            ReduceOp.SUM if red is ReduceOp.AVG else red)

    def finish():
        if red is ReduceOp.AVG:
            _average(packed_out.array, pg.size())
        packed_out.finish()
    return _front(work, finish, [output], async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """``output`` becomes the reduction over ranks of their ``input_list[rank]``."""
    pg = _one_per_rank(input_list, output, "input_list", group, "reduce_scatter")
    if pg is None:
        return None
    red = _red_op(op, output.dtype, "reduce_scatter")
    rows = output._backend.xp.stack([t._data for t in input_list])
    return _reduce_scatter_rows(pg, output, rows, red, async_op)


def _rooted_list(tensor, tensors, group, root_rank, group_root, name, role, op):
    """The checks gather and scatter share, as torch's: ``tensors`` (``gather_list`` or
    ``scatter_list``) is given on the root rank only, one tensor per rank, each like
    ``tensor``. Returns (group, root, whether this rank is the root, the list), or None for a
    rank outside ``group``."""
    _check_single_tensor(tensor, "tensor")
    if tensors:
        _check_tensor_list(tensors, name)
    else:
        tensors = []
    _same_dtype(tensors + [tensor])
    if _rank_not_in_group(group):
        _warn_not_in_group(op)
        return None
    pg = _group_or_default(group)
    root = _canonical_rank(pg, root_rank, group_root)
    is_root = pg.rank() == root
    if is_root:
        if not tensors:
            raise ValueError(f"Argument ``{name}`` must be specified on {role} rank.")
        _check_list_len(tensors, pg.size(), name)
        _check_like(tensors, tensor, op)
    elif tensors:
        raise ValueError(f"Argument ``{name}`` must NOT be specified on non-{role} ranks.")
    return pg, root, is_root, tensors


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """``dst``'s ``gather_list[r]`` becomes rank r's ``tensor``."""
    checked = _rooted_list(tensor, gather_list, group, dst, group_dst, "gather_list",
                           "destination", "gather")
    if checked is None:
        return None
    pg, root, is_root, gather_list = checked
    packed = _Packed(tensor, False)
    out = _stacked_empty(tensor, pg.size()) if is_root else None
    work = _impl(pg, tensor).gather(out, packed.array, root)
    finish = (lambda: _write_rows(out, gather_list)) if is_root else None
    return _front(work, finish, gather_list, async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """Every rank's ``tensor`` becomes ``src``'s ``scatter_list[rank]``."""
    checked = _rooted_list(tensor, scatter_list, group, src, group_src, "scatter_list",
                           "source", "scatter")
    if checked is None:
        return None
    pg, root, is_root, scatter_list = checked
    inp = tensor._backend.xp.stack([t._data for t in scatter_list]) if is_root else None
    packed = _Packed(tensor, True)
    work = _impl(pg, tensor).scatter(packed.array, inp, root)
    return _front(work, packed.finish, [tensor], async_op)


def _splits(sizes, tensor, size, role):
    """Element counts per rank from row counts along dim 0 (equal rows when None)."""
    rows = tensor.shape[0] if tensor.dim() else 1
    per_row = tensor.numel() // rows if rows else 0
    if sizes is None or len(sizes) == 0:
        if rows % size:
            raise ValueError(f"all_to_all_single: the {role} tensor's first dimension ({rows}) "
                             f"must divide evenly by the group size ({size}) when no split "
                             "sizes are given")
        sizes = [rows // size] * size
    sizes = [int(s) for s in sizes]
    if len(sizes) != size:
        raise ValueError(f"all_to_all_single: {role}_split_sizes must have one entry per rank "
                         f"({size}), got {len(sizes)}")
    if sum(sizes) != rows or min(sizes) < 0:
        raise ValueError(f"all_to_all_single: {role}_split_sizes {sizes} must be non-negative "
                         f"and sum to the {role} tensor's first dimension ({rows})")
    return [s * per_row for s in sizes]


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None, async_op=False):
    """Rank r receives the r-th slice (along dim 0) of every rank's ``input`` into
    ``output``, slices sized by the split sizes (equal when None)."""
    _check_single_tensor(output, "output")
    _check_single_tensor(input, "input")
    _same_dtype([output, input])
    if _rank_not_in_group(group):
        _warn_not_in_group("all_to_all_single")
        return None
    pg = _group_or_default(group)
    out_splits = _splits(output_split_sizes, output, pg.size(), "output")
    in_splits = _splits(input_split_sizes, input, pg.size(), "input")
    packed_in = _Packed(input, False)
    packed_out = _Packed(output, True)
    work = _impl(pg, input).alltoall(packed_out.array, packed_in.array, out_splits, in_splits)
    return _front(work, packed_out.finish, [output], async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Rank r's ``output_tensor_list[s]`` becomes rank s's ``input_tensor_list[r]``."""
    _check_tensor_list(output_tensor_list, "output_tensor_list")
    _check_tensor_list(input_tensor_list, "input_tensor_list")
    _same_dtype(output_tensor_list + input_tensor_list)
    if _rank_not_in_group(group):
        _warn_not_in_group("all_to_all")
        return None
    pg = _group_or_default(group)
    _check_list_len(output_tensor_list, pg.size(), "output_tensor_list")
    _check_list_len(input_tensor_list, pg.size(), "input_tensor_list")
    first = input_tensor_list[0]
    xp = first._backend.xp
    inp = xp.concatenate([t._data.reshape(-1) for t in input_tensor_list])
    out = xp.empty(sum(t.numel() for t in output_tensor_list), dtype=first._data.dtype)
    out_splits = [t.numel() for t in output_tensor_list]
    work = _impl(pg, first).alltoall(out, inp, out_splits, [t.numel() for t in input_tensor_list])

    def finish():
        offset = 0
        for t, n in zip(output_tensor_list, out_splits):
            t._data[...] = out[offset:offset + n].reshape(t._data.shape)
            t._bump_version()
            offset += n
    return _front(work, finish, output_tensor_list, async_op)


# -- point to point ---------------------------------------------------------------------------
def _check_peer(pg, peer):
    if pg.rank() == peer:
        raise ValueError("Invalid destination rank: destination rank should not be the same "
                         "as the rank of the current process.")


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send ``tensor`` to ``dst``; the Work finishes when the buffer may be reused."""
    _check_single_tensor(tensor, "tensor")
    if _rank_not_in_group(group):
        _warn_not_in_group("isend")
        return None
    pg = _group_or_default(group)
    peer = _canonical_rank(pg, dst, group_dst)
    _check_peer(pg, peer)
    packed = _Packed(tensor, False)
    return _impl(pg, tensor).send(packed.array, peer, tag)


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into ``tensor`` from ``src`` (None: any rank; the Work's ``source_rank()``)."""
    _check_single_tensor(tensor, "tensor")
    if _rank_not_in_group(group):
        _warn_not_in_group("irecv")
        return None
    pg = _group_or_default(group)
    peer = None if src is None and group_src is None else _canonical_rank(pg, src, group_src)
    packed = _Packed(tensor, True)
    work = _impl(pg, tensor).recv(packed.array, peer, tag)
    front = work.chain(packed.finish, [tensor])
    if peer is not None:
        front._source_rank = peer
    return front


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send ``tensor`` to ``dst`` and wait until it was taken."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into ``tensor``; return the sender's rank (global, or the group rank with
    ``group_src``), -1 outside the group."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    pg = _group_or_default(group)
    sender = work.source_rank()
    if group_src is not None:
        return sender
    return get_global_rank(pg, sender) if pg is not _get_default_group() else sender


class P2POp:
    """One send or receive for ``batch_isend_irecv``: ``op`` is ``isend`` or ``irecv``."""

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type "
                             "``torch.distributed.isend`` or ``torch.distributed.irecv``.")
        _check_single_tensor(tensor, "tensor")
        self.op, self.tensor, self.peer, self.group = op, tensor, peer, group
        self.tag, self.group_peer = tag, group_peer

    def __repr__(self):
        return (f"P2POp(op={self.op.__name__}, tensor=<{tuple(self.tensor.shape)}>, "
                f"peer={self.peer}, tag={self.tag})")


def batch_isend_irecv(p2p_op_list):
    """Post every send and receive at once (so pairs cannot deadlock); their Works."""
    if not isinstance(p2p_op_list, list) or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type "
                         "``torch.distributed.P2POp``.")
    if not p2p_op_list:
        raise ValueError("batch_isend_irecv needs at least one P2POp")
    first = p2p_op_list[0].group
    if not all(first == p.group for p in p2p_op_list):
        raise ValueError("All ops need to use the same group.")
    works = []
    for p in p2p_op_list:
        if p.op is isend:
            works.append(isend(p.tensor, p.peer, p.group, p.tag, p.group_peer))
        else:
            works.append(irecv(p.tensor, p.peer, p.group, p.tag, p.group_peer))
    return works


# -- barriers ---------------------------------------------------------------------------------
def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every rank of the group reaches the barrier."""
    if _rank_not_in_group(group):
        _warn_not_in_group("barrier")
        return None
    pg = _group_or_default(group)
    device = "cpu" if "cpu" in pg._backends else next(iter(pg._backends))
    work = pg._get_backend(device).barrier()
    return _front(work, None, None, async_op)


_MONITOR_TAG = 0x3EB0


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """A barrier whose rank 0 names the ranks that failed to arrive within ``timeout``
    (torch implements it for gloo; Ember for its CPU backend, with messages to rank 0)."""
    if _rank_not_in_group(group):
        _warn_not_in_group("monitored_barrier")
        return None
    pg = _group_or_default(group)
    if "cpu" not in pg._backends:
        raise ValueError("monitored_barrier is only implemented for Ember's CPU (mpi) backend.")
    limit = timeout_seconds(pg._timeout if timeout is None else timeout)
    impl = pg._get_backend("cpu")
    token = np.zeros(1, np.int64)
    if pg.rank() != 0:
        impl.send(token, 0, _MONITOR_TAG).wait(limit)
        impl.recv(token, 0, _MONITOR_TAG).wait()
        return None
    works = {r: impl.recv(np.zeros(1, np.int64), r, _MONITOR_TAG) for r in range(1, pg.size())}
    import time
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and not all(w.is_completed() for w in works.values()):
        time.sleep(0.001)
    missing = [r for r, w in works.items() if not w.is_completed()]
    if missing:
        ms = int(limit * 1000)
        if wait_all_ranks:
            raise RuntimeError(f"Ranks {', '.join(map(str, missing))} failed to pass "
                               f"monitoredBarrier in {ms} ms")
        raise RuntimeError(f"Rank {missing[0]} failed to pass monitoredBarrier in {ms} ms")
    for r in range(1, pg.size()):
        impl.send(token, r, _MONITOR_TAG).wait()
    return None


# -- object collectives -----------------------------------------------------------------------
def _object_device(pg):
    from .._device import device
    return device("cpu") if "cpu" in pg._backends else device("cuda", _cuda_index())


def _cuda_index():
    from .. import cuda
    return cuda.current_device()


def _object_to_tensor(obj, dev):
    import ember
    buffer = io.BytesIO()
    pickle.Pickler(buffer).dump(obj)
    data = np.frombuffer(buffer.getvalue(), dtype=np.uint8).copy()
    return ember.from_numpy(data).to(dev), data.size


def _tensor_to_object(tensor, size):
    data = tensor.cpu().numpy()[:size].tobytes()
    return pickle.Unpickler(io.BytesIO(data)).load()


def _padded_pickle(obj, pg):
    """``obj`` pickled into a uint8 tensor padded to the longest pickle of the group's ranks
    (whose byte counts are gathered first, as torch's): (device, tensor, sizes, longest)."""
    import ember
    dev = _object_device(pg)
    tensor, n = _object_to_tensor(obj, dev)
    sizes = ember.zeros(pg.size(), dtype=ember.int64, device=dev)
    all_gather_into_tensor(sizes, ember.tensor([n], dtype=ember.int64, device=dev), group=pg)
    sizes = [int(s) for s in sizes.tolist()]
    longest = max(sizes)
    padded = ember.zeros(longest, dtype=ember.uint8, device=dev)
    padded[:n] = tensor
    return dev, padded, sizes, longest


def all_gather_object(object_list, obj, group=None):
    """``object_list[r]`` becomes rank r's picklable ``obj``."""
    import ember
    if _rank_not_in_group(group):
        _warn_not_in_group("all_gather_object")
        return None
    pg = _group_or_default(group)
    dev, padded, sizes, longest = _padded_pickle(obj, pg)
    out = ember.empty(pg.size() * longest, dtype=ember.uint8, device=dev)
    all_gather_into_tensor(out, padded, group=pg)
    for r, size in enumerate(sizes):
        object_list[r] = _tensor_to_object(out[r * longest:(r + 1) * longest], size)


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    """``dst``'s ``object_gather_list[r]`` becomes rank r's ``obj``."""
    import ember
    if _rank_not_in_group(group):
        _warn_not_in_group("gather_object")
        return None
    pg = _group_or_default(group)
    root = _canonical_rank(pg, dst, group_dst)
    is_root = pg.rank() == root
    if is_root and object_gather_list is None:
        raise AssertionError("Must provide object_gather_list on dst rank")
    if not is_root and object_gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination "
                         "ranks.")
    dev, padded, sizes, longest = _padded_pickle(obj, pg)
    outs = [ember.empty(longest, dtype=ember.uint8, device=dev) for _ in range(pg.size())] \
        if is_root else None
    gather(padded, outs, group=pg, group_dst=root)
    if is_root:
        for r, size in enumerate(sizes):
            object_gather_list[r] = _tensor_to_object(outs[r], size)


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Every rank's ``object_list`` becomes ``src``'s (same length on every rank)."""
    import ember
    if _rank_not_in_group(group):
        _warn_not_in_group("broadcast_object_list")
        return None
    pg = _group_or_default(group)
    root = _canonical_rank(pg, src, group_src)
    dev = _object_device(pg) if device is None else ember.device(device)
    if pg.rank() == root:
        pairs = [_object_to_tensor(o, dev) for o in object_list]
        sizes = ember.tensor([n for _, n in pairs], dtype=ember.int64, device=dev)
    else:
        sizes = ember.zeros(len(object_list), dtype=ember.int64, device=dev)
    broadcast(sizes, group=pg, group_src=root)
    counts = [int(s) for s in sizes.tolist()]
    if pg.rank() == root:
        payload = ember.cat([t for t, _ in pairs]) if pairs else \
            ember.empty(0, dtype=ember.uint8, device=dev)
    else:
        payload = ember.empty(sum(counts), dtype=ember.uint8, device=dev)
    broadcast(payload, group=pg, group_src=root)
    if pg.rank() != root:
        offset = 0
        for i, n in enumerate(counts):
            object_list[i] = _tensor_to_object(payload[offset:offset + n], n)
            offset += n


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None,
                        group=None, group_src=None):
    """``scatter_object_output_list[0]`` becomes ``src``'s
    ``scatter_object_input_list[rank]``."""
    import ember
    if _rank_not_in_group(group):
        _warn_not_in_group("scatter_object_list")
        return None
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at "
                         "least 1.")
    pg = _group_or_default(group)
    root = _canonical_rank(pg, src, group_src)
    dev = _object_device(pg)
    is_root = pg.rank() == root
    longest = ember.zeros(1, dtype=ember.int64, device=dev)
    if is_root:
        if scatter_object_input_list is None:
            raise ValueError("source rank must provide non-None scatter_object_input_list")
        _check_list_len(scatter_object_input_list, pg.size(), "scatter_object_input_list")
        pairs = [_object_to_tensor(o, dev) for o in scatter_object_input_list]
        longest.fill_(max(n for _, n in pairs))
    broadcast(longest, group=pg, group_src=root)
    width = int(longest.item())
    rows = None
    if is_root:
        rows = []
        for t, n in pairs:
            row = ember.zeros(width, dtype=ember.uint8, device=dev)
            row[:n] = t
            rows.append(row)
        sizes_in = [ember.tensor([n], dtype=ember.int64, device=dev) for _, n in pairs]
    mine = ember.empty(width, dtype=ember.uint8, device=dev)
    my_size = ember.zeros(1, dtype=ember.int64, device=dev)
    scatter(mine, rows, group=pg, group_src=root)
    scatter(my_size, sizes_in if is_root else None, group=pg, group_src=root)
    scatter_object_output_list[0] = _tensor_to_object(mine, int(my_size.item()))


def _register_backend(name, func, extended_api=False, devices=None):
    """``Backend.register_backend``: ``func(store, rank, size, timeout)`` (or, with
    ``extended_api``, ``func(dist_backend_opts, backend_options)``, which Ember cannot supply)
    returns an ``ember.distributed.process_group.BackendImpl`` for ``devices``."""
    if extended_api:
        raise ValueError("extended_api backends take torch's C++ options objects; Ember's "
                         "backends are BackendImpl subclasses made from (store, rank, size, "
                         "timeout)")
    if hasattr(Backend, name.upper()):
        raise ValueError(f"{name.upper()} c10d backend already exist")
    devices = ["cpu", "cuda"] if devices is None else \
        [devices] if isinstance(devices, str) else list(devices)
    setattr(Backend, name.upper(), name.lower())
    Backend.backend_list.append(name.lower())
    for d in devices:
        Backend.default_device_backend_map[d] = name.lower()

    def factory(store, rank, size, timeout, device_index=None):
        return func(store, rank, size, datetime.timedelta(seconds=timeout_seconds(
            timeout if timeout is not None else default_pg_timeout)))
    register_backend_impl(name, factory, devices)


Backend.register_backend = staticmethod(_register_backend)
