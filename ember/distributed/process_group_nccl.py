"""The "nccl" backend: CUDA arrays over NCCL, through CuPy (``cupy.cuda.nccl``).

Communicator. Rank 0 makes NCCL's unique id and puts it in the group's store; every rank reads
it, says it has arrived, and builds ``NcclCommunicator(size, uid, rank)`` on its device once all
have: NCCL's own initialisation blocks until every rank joins, so a rank that never comes is
caught by the store's count (a ``DistBackendError`` after the timeout) rather than hanging there.

Streams. As torch's ProcessGroupNCCL: each operation runs on the group's own communication
stream, after an event says the caller's current stream has produced its inputs, and records an
event when it is done. ``Work.wait()`` makes the caller's current stream wait on that event and
returns at once (the host does not block: later kernels queue behind the communication);
``is_completed()`` asks the event. Blocking host waits: ``barrier``, ``wait(timeout=...)``, and
every ``wait()`` when ``TORCH_NCCL_BLOCKING_WAIT=1``, each raising ``DistBackendError`` at its
timeout. The arrays of an operation are held until its event has fired, so CuPy's pool cannot
hand their memory to new work while NCCL still reads or writes it.

Data. Operations that only move data (broadcast, all-gather, gather, scatter, all-to-all,
send/recv) move bytes, so every dtype moves. Reductions use NCCL's types: int8, uint8, int32,
uint32, int64, uint64, float16, bfloat16, float32, float64; bool as uint8 (SUM and MAX are OR,
PRODUCT and MIN are AND, as torch maps them); complex as pairs of reals (SUM and AVG only).
Other dtypes (int16) raise torch's TypeError, BAND/BOR/BXOR torch's ValueError. AVG is NCCL's
own ``ncclAvg``. Gather, scatter and all-to-all are grouped sends and receives
(``groupStart``/``groupEnd``). NCCL has no tags (ignored, as in torch) and no receive from any
source.

Checks. NCCL does not compare shapes across ranks (neither does torch's): checking would add a
host round trip to every collective. ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` or
``EMBER_DISTRIBUTED_CHECKS=1`` turns on the MPI backend's header exchange (one small
all-gather, waited on the host) and its ValueError on every rank when they disagree.

Failures. A watchdog thread (groups of two or more ranks) looks at the pending operations; one
that outlives the group's timeout, or an asynchronous NCCL error, aborts the communicator (so
the stuck kernels end) and, as torch's default ``TORCH_NCCL_ASYNC_ERROR_HANDLING=3``, prints
``[Rank N] Watchdog caught collective operation timeout: ...`` and takes the process down (exit
status 1), since its GPU state can no longer be trusted; the launcher then ends the job naming
the rank. With ``TORCH_NCCL_ASYNC_ERROR_HANDLING=0`` or ``2`` the process lives, and every later
``wait()`` and operation on the group raises that ``DistBackendError``.

CuPy is optional (``pip install 'ember[cuda]'``), and CuPy finds NCCL only where its library is
installed (the ``nvidia-nccl-cu12``/``-cu13`` wheel); both are looked up when a group is made.
"""
import importlib
import os
import sys
import threading
import time
import zlib

import ml_dtypes
import numpy as np

from .process_group import BackendImpl, DistBackendError, Work

__all__ = ["ProcessGroupNCCL", "is_nccl_available"]

_MISSING = "NCCL backend needs CuPy with NCCL: pip install 'ember[cuda]'"

# How often the watchdog looks at the pending operations.
_WATCHDOG_INTERVAL = 0.1

_OP_NAMES = {0: "SUM", 1: "AVG", 2: "PRODUCT", 3: "MIN", 4: "MAX", 5: "BAND", 6: "BOR",
             7: "BXOR", 8: "PREMUL_SUM"}
_NCCL_OPS = {0: "NCCL_SUM", 1: "NCCL_AVG", 2: "NCCL_PROD", 3: "NCCL_MIN", 4: "NCCL_MAX"}
# bool travels as uint8 0/1: OR is MAX, AND is MIN.
_BOOL_OPS = {0: "NCCL_MAX", 2: "NCCL_MIN", 3: "NCCL_MIN", 4: "NCCL_MAX"}
_NCCL_TYPES = {np.dtype(np.int8): "NCCL_INT8", np.dtype(np.uint8): "NCCL_UINT8",
               np.dtype(np.int32): "NCCL_INT32", np.dtype(np.uint32): "NCCL_UINT32",
               np.dtype(np.int64): "NCCL_INT64", np.dtype(np.uint64): "NCCL_UINT64",
               np.dtype(np.float16): "NCCL_FLOAT16", np.dtype(ml_dtypes.bfloat16): "NCCL_BFLOAT16",
               np.dtype(np.float32): "NCCL_FLOAT32", np.dtype(np.float64): "NCCL_FLOAT64"}
_COMPLEX_PARTS = {np.dtype(np.complex64): np.dtype(np.float32),
                  np.dtype(np.complex128): np.dtype(np.float64)}
_KINDS = ["allreduce", "broadcast", "reduce", "allgather", "reduce_scatter", "gather", "scatter",
          "alltoall", "barrier"]


def _import_nccl():
    """(cupy, cupy.cuda.nccl), or the RuntimeError saying what is missing."""
    try:
        cupy = importlib.import_module("cupy")
    except ImportError as exc:
        raise RuntimeError(f"{_MISSING} (CuPy is not installed)") from exc
    try:
        nccl = importlib.import_module("cupy.cuda.nccl")
    except ImportError as exc:
        raise RuntimeError(f"{_MISSING} (cupy.cuda.nccl cannot be imported: {exc})") from exc
    if not getattr(nccl, "available", False):
        raise RuntimeError(f"{_MISSING} (CuPy {getattr(cupy, '__version__', '?')} cannot load "
                           "the NCCL library: pip install nvidia-nccl-cu13, or -cu12 for "
                           "CUDA 12)")
    return cupy, nccl


def is_nccl_available():
    """Whether the NCCL backend can be built here: CuPy is installed and loads NCCL (a GPU is
    not asked for, as torch's answer is about the build)."""
    try:
        _import_nccl()
    except RuntimeError:
        return False
    return True


def _env_flag(name, default="0"):
    return os.environ.get(name, default).strip().lower() in ("1", "true", "yes", "on")


def _checks_enabled():
    return (_env_flag("EMBER_DISTRIBUTED_CHECKS")
            or os.environ.get("TORCH_DISTRIBUTED_DEBUG", "").upper() == "DETAIL")


def _tears_down():
    """TORCH_NCCL_ASYNC_ERROR_HANDLING: 1 and 3 (the default) end the process on a timeout or
    an NCCL error; 0 and 2 leave it running with the group broken."""
    return os.environ.get("TORCH_NCCL_ASYNC_ERROR_HANDLING", "3").strip() in ("1", "3")


class _NcclWork(Work):
    """A Work whose completion is a CUDA event on the group's stream."""

    def __init__(self, group, event, description, outputs, blocking):
        self._event = event
        self._group = group
        self._blocking = blocking
        super().__init__(self._query, None, outputs, group.timeout, description, group.rank)

    def _query(self):
        failure = self._group._failure
        if failure is not None and not self._event.done:
            raise failure
        return self._event.done

    def wait(self, timeout=None):
        """Without a timeout (and without TORCH_NCCL_BLOCKING_WAIT), the caller's current
        stream waits on the operation; the host does not. With one, the host waits up to it."""
        if self._exception is not None:
            raise self._exception
        if self._group._failure is not None and not self._event.done:
            self._exception = self._group._failure
            raise self._exception
        if self._blocking or timeout is not None or _env_flag("TORCH_NCCL_BLOCKING_WAIT"):
            return super().wait(timeout)
        with self._group._device:
            self._group._cupy.cuda.get_current_stream().wait_event(self._event)
        self._finish()
        return True


class ProcessGroupNCCL(BackendImpl):
    name = "nccl"
    supported_devices = ("cuda",)

    def __init__(self, store, rank, size, timeout=None, device_index=None, modules=None):
        """``modules``: (cupy, cupy.cuda.nccl) to use instead of importing them (the test
        suite passes stand-ins)."""
        super().__init__(rank, size, timeout)
        cupy, nccl = modules if modules is not None else _import_nccl()
        self._cupy, self._nccl = cupy, nccl
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:  # CUDARuntimeError without a driver
            raise RuntimeError(f"NCCL backend needs a CUDA device: CuPy finds none ({exc})") \
                from exc
        if count == 0:
            raise RuntimeError("NCCL backend needs a CUDA device: CuPy finds none")
        if device_index is None:
            device_index = cupy.cuda.runtime.getDevice()
        if not 0 <= device_index < count:
            raise RuntimeError(f"NCCL backend: cuda:{device_index} requested, {count} CUDA "
                               f"device{'s' if count != 1 else ''} present")
        self.device_index = device_index
        self._device = cupy.cuda.Device(device_index)
        self._seq = 0
        self._failure = None
        self._pending = []  # (work, arrays kept alive, start time)
        self._lock = threading.Lock()
        self._closed = False
        uid = self._exchange_unique_id(store)
        with self._device:
            self.comm = nccl.NcclCommunicator(size, uid, rank)
            # Non-blocking: communication must not wait for the legacy default stream.
            self._stream = cupy.cuda.Stream(non_blocking=True)
        self._stop = threading.Event()
        self._watchdog = None
        if size > 1:
            self._watchdog = threading.Thread(target=self._watch, daemon=True,
                                              name=f"ember-nccl-watchdog-rank{rank}")
            self._watchdog.start()

    def _exchange_unique_id(self, store):
        # Groups are made in the same order on every rank, so each rank's own count names the
        # same group everywhere (the store may be shared by several NCCL groups).
        number = store.add(f"nccl/groups_made/rank{self.rank}", 1)
        key = f"nccl/{number}"
        if self.rank == 0:
            uid = self._nccl.get_unique_id()
            store.set(f"{key}/unique_id", uid)
        else:
            uid = store.get(f"{key}/unique_id")
        uid = bytes(uid.encode("latin-1") if isinstance(uid, str) else uid)
        store.add(f"{key}/arrived", 1)
        start, sleep = time.monotonic(), 1e-4
        while True:
            arrived = store.add(f"{key}/arrived", 0)
            if arrived >= self.size:
                return uid
            if self.timeout is not None and time.monotonic() - start > self.timeout:
                raise DistBackendError(
                    f"[Rank {self.rank}] NCCL communicator initialisation: only {arrived} of "
                    f"{self.size} ranks arrived within {self.timeout:g} s")
            time.sleep(sleep)
            sleep = min(2 * sleep, 0.05)

    # -- the watchdog -------------------------------------------------------------------------
    def _watch(self):
        while not self._stop.wait(_WATCHDOG_INTERVAL):
            with self._lock:
                pending = list(self._pending)
            now = time.monotonic()
            for work, _, start in pending:
                if self._timed_out(work, start, now):
                    self._fail(DistBackendError(
                        f"[Rank {self.rank}] Watchdog caught collective operation timeout: "
                        f"{work._description} ran for {int((now - start) * 1000)} milliseconds "
                        f"before timing out (Timeout(ms)={int(self.timeout * 1000)})."))
                    return
            try:
                self.comm.check_async_error()
            except Exception as exc:  # NcclError: a peer or the network failed
                self._fail(DistBackendError(f"[Rank {self.rank}] NCCL communicator hit an "
                                            f"asynchronous error: {exc}"))
                return

    def _timed_out(self, work, start, now):
        return (self.timeout is not None and now - start > self.timeout
                and not work._event.done)

    def _fail(self, error):
        """Abort the communicator (its kernels end) and break the group; end the process unless
        TORCH_NCCL_ASYNC_ERROR_HANDLING says otherwise."""
        with self._lock:
            if self._failure is not None:
                return
            self._failure = error
        try:
            self.comm.abort()
        except Exception:  # noqa: BLE001 - aborting a broken communicator may itself fail
            pass
        if _tears_down():
            sys.stderr.write(f"{error} To avoid data inconsistency, the process is taken down "
                             "(TORCH_NCCL_ASYNC_ERROR_HANDLING=0 keeps it running).\n")
            sys.stderr.flush()
            os._exit(1)

    # -- helpers ------------------------------------------------------------------------------
    def _usable(self, *arrays):
        if self._failure is not None:
            raise self._failure
        if self._closed:
            raise RuntimeError(f"[Rank {self.rank}] the NCCL process group was shut down")
        for array in arrays:
            if array is None:
                continue
            if not isinstance(array, self._cupy.ndarray):
                raise ValueError(f"NCCL backend works on CUDA tensors, got a "
                                 f"{type(array).__name__} (a CPU tensor needs the mpi backend: "
                                 "init_process_group(backend='cpu:mpi,cuda:nccl'))")
            index = getattr(getattr(array, "device", None), "id", None)
            if index is not None and index != self.device_index:
                raise ValueError(f"NCCL process group rank {self.rank} was made for "
                                 f"cuda:{self.device_index}, got a tensor on cuda:{index}")

    def _prune(self):
        with self._lock:
            self._pending = [p for p in self._pending if not p[0]._event.done]

    def _enqueue(self, what, launch, outputs, keep, blocking=False):
        """Run ``launch(stream_ptr)`` on the communication stream after the current stream's
        work; a Work for it."""
        self._prune()
        self._seq += 1
        cuda = self._cupy.cuda
        with self._device:
            ready = cuda.Event(disable_timing=True)
            ready.record(cuda.get_current_stream())
            self._stream.wait_event(ready)
            launch(self._stream.ptr)
            done = cuda.Event(disable_timing=True)
            done.record(self._stream)
        work = _NcclWork(self, done, f"WorkNCCL(SeqNum={self._seq}, OpType={what})", outputs,
                         blocking)
        with self._lock:
            self._pending.append((work, keep, time.monotonic()))
        return work

    def _grouped(self, calls):
        """``calls``: (launch(stream_ptr)) run between groupStart and groupEnd."""
        def launch(stream):
            self._nccl.groupStart()
            try:
                for call in calls:
                    call(stream)
            finally:
                self._nccl.groupEnd()
        return launch

    def _reduction(self, array, op, what):
        """(element count, NCCL datatype, NCCL op) for reducing ``array`` with ``op``."""
        op = int(op)
        name = _OP_NAMES.get(op, str(op))
        if op in (5, 6, 7):
            raise ValueError(f"Cannot use ReduceOp.{name} with NCCL")
        if op not in _NCCL_OPS:
            raise ValueError(f"NCCL {what}: ReduceOp.{name} is not supported (its scaling "
                             "factor comes from torch's _make_nccl_premul_sum, which Ember "
                             "does not have)")
        nccl, dtype, count = self._nccl, array.dtype, array.size
        if dtype == np.bool_:
            if op == 1:
                raise TypeError("Cannot use ReduceOp.AVG with boolean inputs")
            return count, nccl.NCCL_UINT8, getattr(nccl, _BOOL_OPS[op])
        if dtype in _COMPLEX_PARTS:
            if op not in (0, 1):
                raise ValueError(f"NCCL {what} does not support ReduceOp.{name} on complex "
                                 "tensors (they are reduced as pairs of reals: SUM and AVG)")
            dtype, count = _COMPLEX_PARTS[dtype], 2 * count
        if dtype not in _NCCL_TYPES:
            raise TypeError(f"Input tensor data type is not supported for NCCL process group: "
                            f"{dtype}")
        return count, getattr(nccl, _NCCL_TYPES[dtype]), getattr(nccl, _NCCL_OPS[op])

    def _check(self, kind, array, root=-1, op=-1):
        """With the checks on: raise ValueError on every rank when the ranks' headers
        disagree (one small all-gather, waited on the host)."""
        if self.size == 1 or not _checks_enabled():
            return
        header = np.zeros(8, np.int64)
        header[0] = _KINDS.index(kind)
        if array is not None:
            header[1] = zlib.crc32(str(array.dtype).encode())
            header[2], header[3] = array.size, array.ndim
            header[4] = zlib.crc32(repr(tuple(array.shape)).encode())
        else:
            header[1] = -1
        header[5], header[6] = root, op
        with self._device:
            mine = self._cupy.asarray(header)
            everyone = self._cupy.empty((self.size, 8), dtype=np.int64)
        comm, char = self.comm, self._nccl.NCCL_CHAR
        self._enqueue(f"{kind} check", lambda s: comm.allGather(
            mine.data.ptr, everyone.data.ptr, mine.nbytes, char, s), [everyone],
            (mine, everyone), blocking=True).wait()
        headers = everyone.get()
        with_array = headers[:, 1] != -1
        if not (headers[:, [0, 5, 6]] == headers[0, [0, 5, 6]]).all() or \
                len({tuple(h[1:5]) for h in headers[with_array]}) > 1:
            described = [f"rank {r}: {_KINDS[h[0]] if 0 <= h[0] < len(_KINDS) else '?'} "
                         f"numel={int(h[2])} ndim={int(h[3])} root={int(h[5])} op={int(h[6])}"
                         for r, h in enumerate(headers)]
            raise ValueError(f"[Rank {self.rank}] ranks disagree on NCCL {kind} "
                             f"(SeqNum={self._seq + 1}): every rank must call the same collective "
                             "with tensors of the same shape and dtype; got "
                             + "; ".join(described))

    # -- collectives --------------------------------------------------------------------------
    def allreduce(self, array, op):
        self._usable(array)
        count, dtype, nccl_op = self._reduction(array, op, "allreduce")
        self._check("allreduce", array, op=int(op))
        ptr, comm = array.data.ptr, self.comm
        return self._enqueue(f"ALLREDUCE {_OP_NAMES[int(op)]}", lambda s: comm.allReduce(
            ptr, ptr, count, dtype, nccl_op, s), [array], (array,))

    def broadcast(self, array, root):
        self._usable(array)
        self._check("broadcast", array, root=root)
        ptr, nbytes, comm, char = array.data.ptr, array.nbytes, self.comm, self._nccl.NCCL_CHAR
        return self._enqueue("BROADCAST", lambda s: comm.broadcast(
            ptr, ptr, nbytes, char, root, s), [array], (array,))

    def reduce(self, array, root, op):
        self._usable(array)
        count, dtype, nccl_op = self._reduction(array, op, "reduce")
        self._check("reduce", array, root=root, op=int(op))
        ptr, comm = array.data.ptr, self.comm
        return self._enqueue(f"REDUCE {_OP_NAMES[int(op)]}", lambda s: comm.reduce(
            ptr, ptr, count, dtype, nccl_op, root, s), [array], (array,))

    def allgather(self, out, inp):
        self._usable(out, inp)
        self._check("allgather", inp)
        comm, char = self.comm, self._nccl.NCCL_CHAR
        src, dst, nbytes = inp.data.ptr, out.data.ptr, inp.nbytes
        return self._enqueue("ALLGATHER", lambda s: comm.allGather(src, dst, nbytes, char, s),
                             [out], (out, inp))

    def reduce_scatter(self, out, inp, op):
        self._usable(out, inp)
        count, dtype, nccl_op = self._reduction(out, op, "reduce_scatter")
        self._check("reduce_scatter", out, op=int(op))
        comm, src, dst = self.comm, inp.data.ptr, out.data.ptr
        return self._enqueue(f"REDUCE_SCATTER {_OP_NAMES[int(op)]}", lambda s: comm.reduceScatter(
            src, dst, count, dtype, nccl_op, s), [out], (out, inp))

    def gather(self, out, inp, root):
        self._usable(out, inp)
        self._check("gather", inp, root=root)
        comm, char, nbytes = self.comm, self._nccl.NCCL_CHAR, inp.nbytes
        src = inp.data.ptr
        calls = [lambda s: comm.send(src, nbytes, char, root, s)]
        if self.rank == root:
            dst = out.data.ptr
            calls += [lambda s, r=r: comm.recv(dst + r * nbytes, nbytes, char, r, s)
                      for r in range(self.size)]
        return self._enqueue("GATHER", self._grouped(calls), [out] if out is not None else [],
                             (out, inp))

    def scatter(self, out, inp, root):
        self._usable(out, inp)
        self._check("scatter", out, root=root)
        comm, char, nbytes = self.comm, self._nccl.NCCL_CHAR, out.nbytes
        dst = out.data.ptr
        calls = []
        if self.rank == root:
            src = inp.data.ptr
            calls += [lambda s, r=r: comm.send(src + r * nbytes, nbytes, char, r, s)
                      for r in range(self.size)]
        calls.append(lambda s: comm.recv(dst, nbytes, char, root, s))
        return self._enqueue("SCATTER", self._grouped(calls), [out], (out, inp))

    def alltoall(self, out, inp, out_splits, in_splits):
        self._usable(out, inp)
        self._check("alltoall", None)
        in_splits, out_splits = [int(n) for n in in_splits], [int(n) for n in out_splits]
        if len(in_splits) != self.size or len(out_splits) != self.size:
            raise ValueError(f"NCCL alltoall: split sizes must have one entry per rank "
                             f"({self.size}), got {len(in_splits)} and {len(out_splits)}")
        if sum(in_splits) != inp.size or sum(out_splits) != out.size:
            raise ValueError(f"NCCL alltoall: split sizes sum to {sum(in_splits)} and "
                             f"{sum(out_splits)} elements, the arrays hold {inp.size} and "
                             f"{out.size}")
        comm, char = self.comm, self._nccl.NCCL_CHAR
        send_item, recv_item = inp.itemsize, out.itemsize
        src, dst = inp.data.ptr, out.data.ptr
        calls, sent, received = [], 0, 0
        for r in range(self.size):
            n_send, n_recv = in_splits[r] * send_item, out_splits[r] * recv_item
            if n_send:
                calls.append(lambda s, r=r, at=sent, n=n_send: comm.send(src + at, n, char, r, s))
            if n_recv:
                calls.append(lambda s, r=r, at=received, n=n_recv:
                             comm.recv(dst + at, n, char, r, s))
            sent, received = sent + n_send, received + n_recv
        return self._enqueue("ALLTOALL", self._grouped(calls), [out], (out, inp))

    def send(self, array, dst, tag):
        self._usable(array)
        comm, char, ptr, nbytes = self.comm, self._nccl.NCCL_CHAR, array.data.ptr, array.nbytes
        return self._enqueue("SEND", lambda s: comm.send(ptr, nbytes, char, dst, s), [array],
                             (array,))

    def recv(self, array, src, tag):
        self._usable(array)
        if src is None:
            raise RuntimeError("ProcessGroupNCCL does not support recv from any source "
                               "(recvAnysource): NCCL needs the sending rank (src=...)")
        comm, char, ptr, nbytes = self.comm, self._nccl.NCCL_CHAR, array.data.ptr, array.nbytes
        work = self._enqueue("RECV", lambda s: comm.recv(ptr, nbytes, char, src, s), [array],
                             (array,))
        work._source_rank = src
        return work

    def barrier(self):
        """An all-reduce of one element whose Work the host waits on, as torch's NCCL
        barrier."""
        self._usable()
        with self._device:
            one = self._cupy.zeros(1, dtype=np.int32)
        comm, ptr = self.comm, one.data.ptr
        nccl = self._nccl
        return self._enqueue("BARRIER", lambda s: comm.allReduce(
            ptr, ptr, 1, nccl.NCCL_INT32, nccl.NCCL_SUM, s), [], (one,), blocking=True)

    def shutdown(self):
        """Finish the pending operations (up to the timeout) and destroy the communicator;
        abort it instead where they do not finish or the group failed."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        if self._watchdog is not None:
            self._watchdog.join()
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        while self._failure is None:
            self._prune()
            if not self._pending:
                break
            if deadline is not None and time.monotonic() > deadline:
                self._failure = DistBackendError(
                    f"[Rank {self.rank}] NCCL shutdown: {len(self._pending)} operations still "
                    "pending after the timeout; the communicator was aborted")
                break
            time.sleep(0.001)
        if self._failure is not None:
            self.comm.abort()
        else:
            self.comm.destroy()
        self._pending = []

    def __repr__(self):
        return (f"<ProcessGroupNCCL rank {self.rank}/{self.size} on cuda:{self.device_index}"
                f"{' (failed)' if self._failure is not None else ''}>")
