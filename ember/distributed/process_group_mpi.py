"""The "mpi" backend: CPU arrays over mpi4py (any MPI; the ``mpich`` wheel by default).

Communicator. Ranks started by one ``mpiexec`` whose COMM_WORLD holds the whole world use it
(split into the RANK order when that differs from MPI's). Ranks from several MPI jobs (one
``mpiexec`` per node, or an ``mpiexec`` job plus one plain process) find each other through the
store and join with ``Open_port``/``Accept``/``Connect``/``Merge``. Two or more processes that
were not started by an MPI launcher cannot be joined (MPICH singletons fail to connect to each
other), which is detected before MPI is asked, with an error saying how to start them.

Data. Arrays reach MPI without a copy through the buffer protocol; operations that only move
data send bytes, so every dtype moves. Reductions use MPI's types and ops; float16 and bfloat16
have no MPI type, so they are reduced through a float32 staging copy (one rounding at the end),
and bool reduces with logical ops (SUM and MAX are OR, PRODUCT and MIN are AND).

Checks. Before each collective the ranks exchange a fixed 8-int64 header (the operation, dtype,
element count, shape, root, op) with one Allgather and raise a ``ValueError`` on every rank when
they disagree, so mismatched shapes or dtypes never reach MPI (where they would corrupt data or
crash). It costs one small-message latency per collective and makes an ``async_op``
collective start only when all ranks have reached it; ``EMBER_DISTRIBUTED_CHECKS=0`` turns it
off. Point-to-point messages are not checked (MPI reports a message longer than its buffer).

Timeouts. Every operation is nonblocking underneath and waited by polling, so a peer that
never arrives raises ``DistBackendError`` after the group's timeout. The stuck operation stays
posted inside MPI: the group (and usually the job) is unusable afterwards.

Failures. Once a group spans several processes, an uncaught exception prints its traceback
with every line prefixed ``[rankN]:`` and aborts the whole MPI job, so the other ranks never
wait forever on a rank that is gone (mpiexec then exits non-zero).
"""
import os
import sys
import time
import traceback
import zlib

import ml_dtypes
import numpy as np

from .process_group import BackendImpl, Work, timeout_seconds

__all__ = ["ProcessGroupMPI", "mpi_launched_size"]

_MPI = None


def _mpi():
    global _MPI
    if _MPI is None:
        try:
            from mpi4py import MPI
        except ImportError as exc:
            raise ImportError("the MPI backend needs mpi4py and an MPI library: pip install "
                              "'ember[distributed]' (mpi4py and the mpich wheel)") from exc
        _MPI = MPI
    return _MPI


def mpi_launched_size():
    """The size of the MPI job that started this process (from the launcher's environment,
    read without initialising MPI), or None for a plain process."""
    for key in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE"):
        value = os.environ.get(key)
        if value:
            try:
                return int(value)
            except ValueError:
                continue
    if os.environ.get("PMIX_RANK") is not None:
        return -1  # launched, size unknown until MPI says
    return None


_DTYPE_CODES = {np.dtype(n): i + 1 for i, n in enumerate(
    ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64",
     "complex64", "complex128", "uint16", "uint32", "uint64"))}
_DTYPE_CODES[np.dtype(ml_dtypes.bfloat16)] = 20

_OP_NAMES = {0: "SUM", 2: "PRODUCT", 3: "MIN", 4: "MAX", 5: "BAND", 6: "BOR", 7: "BXOR"}
_KINDS = ["allreduce", "broadcast", "reduce", "allgather", "reduce_scatter", "gather", "scatter",
          "alltoall", "barrier"]


def _checks_enabled():
    return os.environ.get("EMBER_DISTRIBUTED_CHECKS", "1") not in ("0", "false", "False")


def _bytes(array):
    """A flat uint8 view (no copy) of a C-contiguous array."""
    return array.reshape(-1).view(np.uint8)


class ProcessGroupMPI(BackendImpl):
    name = "mpi"
    supported_devices = ("cpu",)

    def __init__(self, store, rank, size, timeout=None, device_index=None, comm=None):
        super().__init__(rank, size, timeout)
        self._seq = 0
        world = comm is None
        if world:
            comm = _world_comm(store, rank, size, self.timeout)
        self.comm = comm
        self._world = world
        if comm.Get_size() != size or comm.Get_rank() != rank:
            raise RuntimeError(f"MPI communicator has rank {comm.Get_rank()} of "
                               f"{comm.Get_size()}, expected {rank} of {size}")
        if world and size > 1:
            _install_abort_hook(rank, comm)

    # -- helpers ------------------------------------------------------------------------------
    def _work(self, request, what, on_complete=None, outputs=(), status=None):
        self._seq += 1
        description = f"MPI {what} (SeqNum={self._seq})"
        if status is None:
            return Work(request.Test, on_complete, outputs, self.timeout, description, self.rank)
        work = None

        def test():
            done = request.Test(status)
            if done:
                work._source_rank = status.Get_source()
            return done
        work = Work(test, on_complete, outputs, self.timeout, description, self.rank)
        return work

    def _check(self, kind, array, root=-1, op=-1, same_shape=True):
        """Raise ValueError on every rank when the ranks' headers disagree."""
        if self.size == 1 or not _checks_enabled():
            return
        MPI = _mpi()
        header = np.zeros(8, np.int64)
        header[0] = _KINDS.index(kind)
        header[1] = -1 if array is None else _DTYPE_CODES.get(array.dtype, 99)
        if array is not None and same_shape:
            header[2] = array.size
            header[3] = array.ndim
            header[4] = zlib.crc32(repr(tuple(array.shape)).encode())
        header[5], header[6] = root, op
        headers = np.empty((self.size, 8), np.int64)
        request = self.comm.Iallgather([header, MPI.INT64_T], [headers, MPI.INT64_T])
        Work(request.Test, None, (), self.timeout, f"MPI {kind} (metadata check)",
             self.rank).wait()
        # ranks without an array (barrier) send zeros; every field must agree
        ok = bool((headers == headers[0]).all())
        if not ok:
            names = {v: str(k) for k, v in _DTYPE_CODES.items()}
            described = []
            for r, h in enumerate(headers):
                kind_r = _KINDS[h[0]] if 0 <= h[0] < len(_KINDS) else "?"
                described.append(f"rank {r}: {kind_r} dtype={names.get(int(h[1]), '?')} "
                                 f"numel={int(h[2])} root={int(h[5])} op={int(h[6])}")
            raise ValueError(f"[Rank {self.rank}] ranks disagree on MPI {kind} "
                             f"(SeqNum={self._seq + 1}): every rank must call the same "
                             "collective with tensors of the same shape and dtype; got "
                             + "; ".join(described))

    def _reduction(self, array, op):
        """(array to hand MPI, MPI datatype, MPI op, copy-back or None)."""
        MPI = _mpi()
        op_value = int(op)
        dtype = array.dtype
        if dtype == np.bool_:
            mpi_op = {0: MPI.LOR, 2: MPI.LAND, 3: MPI.LAND, 4: MPI.LOR, 5: MPI.BAND, 6: MPI.BOR,
                      7: MPI.BXOR}[op_value]
            return array.view(np.uint8), MPI.UINT8_T if op_value >= 5 else MPI.C_BOOL, \
                mpi_op, None
        mpi_op = {0: MPI.SUM, 2: MPI.PROD, 3: MPI.MIN, 4: MPI.MAX, 5: MPI.BAND, 6: MPI.BOR,
                  7: MPI.BXOR}[op_value]
        if dtype in (np.float16, ml_dtypes.bfloat16):
            staged = array.astype(np.float32)

            def back():
                array[...] = staged.astype(dtype)
            return staged, MPI.FLOAT, mpi_op, back
        mtype = _MPI_TYPES().get(dtype)
        if mtype is None:
            raise TypeError(f"the MPI backend cannot reduce {dtype} tensors")
        return array, mtype, mpi_op, None

    # -- collectives --------------------------------------------------------------------------
    def allreduce(self, array, op):
        self._check("allreduce", array, op=int(op))
        MPI = _mpi()
        buf, mtype, mop, back = self._reduction(array, op)
        request = self.comm.Iallreduce(MPI.IN_PLACE, [buf.reshape(-1), mtype], mop)
        return self._work(request, f"allreduce {_OP_NAMES[int(op)]}", back, [array])

    def broadcast(self, array, root):
        self._check("broadcast", array, root=root)
        request = self.comm.Ibcast([_bytes(array), _mpi().BYTE], root)
        return self._work(request, "broadcast", None, [array])

    def reduce(self, array, root, op):
        self._check("reduce", array, root=root, op=int(op))
        MPI = _mpi()
        buf, mtype, mop, back = self._reduction(array, op)
        flat = [buf.reshape(-1), mtype]
        if self.rank == root:
            request = self.comm.Ireduce(MPI.IN_PLACE, flat, mop, root)
        else:
            request = self.comm.Ireduce(flat, None, mop, root)
            back = None
        return self._work(request, f"reduce {_OP_NAMES[int(op)]}", back, [array])

    def allgather(self, out, inp):
        self._check("allgather", inp)
        byte = _mpi().BYTE
        request = self.comm.Iallgather([_bytes(inp), byte], [_bytes(out), byte])
        return self._work(request, "allgather", None, [out])

    def reduce_scatter(self, out, inp, op):
        self._check("reduce_scatter", out, op=int(op))
        buf, mtype, mop, _ = self._reduction(inp, op)
        obuf, _, _, back = self._reduction(out, op)
        request = self.comm.Ireduce_scatter_block([buf.reshape(-1), mtype],
                                                  [obuf.reshape(-1), mtype], mop)
        return self._work(request, f"reduce_scatter {_OP_NAMES[int(op)]}", back, [out])

    def gather(self, out, inp, root):
        self._check("gather", inp, root=root)
        byte = _mpi().BYTE
        recv = [_bytes(out), byte] if self.rank == root else None
        request = self.comm.Igather([_bytes(inp), byte], recv, root)
        return self._work(request, "gather", None, [out] if out is not None else [])

    def scatter(self, out, inp, root):
        self._check("scatter", out, root=root)
        byte = _mpi().BYTE
        send = [_bytes(inp), byte] if self.rank == root else None
        request = self.comm.Iscatter(send, [_bytes(out), byte], root)
        return self._work(request, "scatter", None, [out])

    def alltoall(self, out, inp, out_splits, in_splits):
        MPI = _mpi()
        out_splits = np.asarray(out_splits, np.int64)
        in_splits = np.asarray(in_splits, np.int64)
        self._check("alltoall", inp, same_shape=False)
        if self.size > 1 and _checks_enabled():
            # what rank r sends me must be what I expect from r
            sent = np.empty(self.size, np.int64)
            request = self.comm.Ialltoall([in_splits, MPI.INT64_T], [sent, MPI.INT64_T])
            Work(request.Test, None, (), self.timeout, "MPI alltoall (split check)",
                 self.rank).wait()
            if not (sent == out_splits).all():
                raise ValueError(f"[Rank {self.rank}] all_to_all split sizes disagree: rank r "
                                 f"sends {sent.tolist()} elements to this rank, which expects "
                                 f"{out_splits.tolist()}")
        item = inp.dtype.itemsize
        send_counts, recv_counts = in_splits * item, out_splits * item
        send_displs = np.concatenate([[0], np.cumsum(send_counts)[:-1]])
        recv_displs = np.concatenate([[0], np.cumsum(recv_counts)[:-1]])
        if send_counts.max(initial=0) > np.iinfo(np.int32).max or \
                recv_counts.max(initial=0) > np.iinfo(np.int32).max:
            raise RuntimeError("all_to_all: a split over 2 GiB exceeds MPI's int counts")
        request = self.comm.Ialltoallv(
            [_bytes(inp), (send_counts.tolist(), send_displs.tolist()), MPI.BYTE],
            [_bytes(out), (recv_counts.tolist(), recv_displs.tolist()), MPI.BYTE])
        return self._work(request, "alltoall", None, [out])

    def send(self, array, dst, tag):
        request = self.comm.Isend([_bytes(array), _mpi().BYTE], dst, tag)
        return self._work(request, f"send to {dst}", None, [array])

    def recv(self, array, src, tag):
        MPI = _mpi()
        source = MPI.ANY_SOURCE if src is None else src
        status = MPI.Status()
        request = self.comm.Irecv([_bytes(array), MPI.BYTE], source, tag)
        return self._work(request, f"recv from {'any' if src is None else src}", None,
                          [array], status=status)

    def barrier(self):
        self._check("barrier", None)
        return self._work(self.comm.Ibarrier(), "barrier")

    def split(self, ranks, group_rank):
        member = group_rank is not None
        MPI = _mpi()
        sub = self.comm.Split(0 if member else MPI.UNDEFINED, group_rank if member else 0)
        if not member:
            return None
        return ProcessGroupMPI(None, group_rank, len(ranks), self.timeout, comm=sub)

    def shutdown(self):
        global _ABORT_COMM
        comm, self.comm = self.comm, None
        if self._world and comm is _ABORT_COMM:
            _ABORT_COMM = None
        if comm is not None and comm != _mpi().COMM_WORLD and comm != _mpi().COMM_NULL:
            try:
                comm.Free()
            except Exception:
                pass  # a communicator MPI already tore down (job ending) has nothing to free


_TYPES = None


def _MPI_TYPES():
    global _TYPES
    if _TYPES is None:
        MPI = _mpi()
        _TYPES = {np.dtype(k): v for k, v in (
            ("float32", MPI.FLOAT), ("float64", MPI.DOUBLE), ("int64", MPI.INT64_T),
            ("int32", MPI.INT32_T), ("int16", MPI.INT16_T), ("int8", MPI.INT8_T),
            ("uint8", MPI.UINT8_T), ("uint16", MPI.UINT16_T), ("uint32", MPI.UINT32_T),
            ("uint64", MPI.UINT64_T), ("complex64", MPI.C_FLOAT_COMPLEX),
            ("complex128", MPI.C_DOUBLE_COMPLEX))}
    return _TYPES


# -- making the world communicator ------------------------------------------------------------
def _world_comm(store, rank, size, timeout):
    launched = mpi_launched_size()
    if launched is not None and launched > size:
        raise ValueError(f"world_size={size} but mpiexec started {launched} processes: pass "
                         "world_size equal to the number of processes (or leave it unset "
                         "under mpiexec)")
    if size > 1 and launched != size:
        _check_joinable(store, rank, size, launched)
    world = _mpi().COMM_WORLD
    if world.Get_size() > size:
        raise ValueError(f"world_size={size} but mpiexec started {world.Get_size()} "
                         "processes: pass world_size equal to the number of processes (or "
                         "leave it unset under mpiexec)")
    if world.Get_size() == size:
        return _reordered(world, rank, size)
    return _join_jobs(store, world, rank, size, timeout)


def _reordered(comm, rank, size):
    ranks = comm.allgather(rank)
    if sorted(ranks) != list(range(size)):
        raise ValueError(f"rank arguments {ranks} (by MPI rank) are not each of 0..{size - 1} "
                         "once: every process needs its own rank")
    if ranks == list(range(size)):
        return comm
    return comm.Split(0, rank)


def _check_joinable(store, rank, size, launched):
    """Ranks from several jobs: every rank says whether an MPI launcher started it. Plain
    processes can't connect to each other, so more than one of them is refused here, on every
    rank alike, before MPI is touched."""
    if store is None:
        raise RuntimeError(_NO_LAUNCHER.format(size=size))
    store.set(f"mpi_launched/{rank}", "0" if launched is None else "1")
    kinds = _gather_from_store(store, "mpi_launched", size)
    plain = [r for r, k in enumerate(kinds) if k == b"0"]
    if len(plain) > 1:
        # rank 0 (whose process serves a TCPStore) leaves last, once every rank has read
        store.add("mpi_launched/read", 1)
        deadline = time.monotonic() + timeout_seconds(store.timeout)
        while rank == 0 and store.add("mpi_launched/read", 0) < size and \
                time.monotonic() < deadline:
            time.sleep(0.01)
        raise RuntimeError(_NO_LAUNCHER.format(size=size) + f" (ranks {plain} were not)")


_NO_LAUNCHER = ("the MPI backend needs its {size} ranks started by an MPI launcher: two or more "
                "plain processes cannot connect to each other over MPI (MPICH singletons). "
                "Start them with `mpiexec -n {size} python script.py` or "
                "`python -m ember.distributed.run --nproc-per-node {size} script.py`")


def _gather_from_store(store, prefix, size):
    keys = [f"{prefix}/{r}" for r in range(size)]
    store.wait(keys)
    return [store.get(k) for k in keys]


def _join_jobs(store, world, rank, size, timeout):
    """Merge several MPI jobs (each a COMM_WORLD) into one communicator, in rank order."""
    if store is None:
        raise RuntimeError(f"world_size={size} spans several MPI jobs (this one has "
                           f"{world.Get_size()} processes); joining them needs a store "
                           "(init_method or store=)")
    MPI = _mpi()
    leader = min(world.allgather(rank))
    store.set(f"mpi_job/{rank}", str(leader))
    leaders = sorted({int(v) for v in _gather_from_store(store, "mpi_job", size)})
    job = leaders.index(leader)
    comm = world
    if job > 0:
        port = store.get(f"mpi_port/{job}").decode() if world.Get_rank() == 0 else None
        inter = world.Connect(port, root=0)
        comm = inter.Merge(high=True)
        inter.Disconnect()
    for joining in range(job + 1, len(leaders)):
        port = None
        if comm.Get_rank() == 0:
            port = MPI.Open_port()
            store.set(f"mpi_port/{joining}", port)
        inter = comm.Accept(port, root=0)
        merged = inter.Merge(high=False)
        inter.Disconnect()
        if comm.Get_rank() == 0:
            MPI.Close_port(port)
        comm = merged
    return _reordered(comm, rank, size)


# -- failure: a rank's uncaught exception ends the job ----------------------------------------
_HOOKED = False
_ABORT_COMM = None
_ABORT_RANK = None


def _install_abort_hook(rank, comm):
    """The world communicator is the one aborted: when it joins several MPI jobs,
    COMM_WORLD would end only this rank's job."""
    global _HOOKED, _ABORT_COMM, _ABORT_RANK
    _ABORT_COMM, _ABORT_RANK = comm, rank
    if _HOOKED:
        return
    _HOOKED = True

    def hook(kind, value, tb):
        text = "".join(traceback.format_exception(kind, value, tb))
        prefix = f"[rank{_ABORT_RANK}]: "
        sys.stderr.write("".join(f"{prefix}{line}\n" for line in text.splitlines()))
        sys.stderr.flush()
        sys.stdout.flush()
        world = _mpi().COMM_WORLD
        comm = _ABORT_COMM or world
        if comm.Get_size() == world.Get_size():
            # One mpiexec job: a rank that exits non-zero makes Hydra end the others, and on
            # that path Hydra forwards every byte the rank wrote; MPI_Abort tears the job down
            # at once and, on a loaded machine, the traceback above could be lost with it.
            os._exit(1)
        try:
            comm.Abort(1)
        finally:
            os._exit(1)
    sys.excepthook = hook
