"""The "nccl" backend (ember/distributed/process_group_nccl.py).

Without a GPU: the clear error where CuPy or NCCL is missing, and every operation of the
backend run by ranks in threads over the CuPy conformance namespace (tests/conformance: NumPy
memory behind CuPy's API) and a stand-in for ``cupy.cuda.nccl`` that reduces and moves the bytes
behind NCCL's pointers as NCCL defines it. That proves the backend's pointers, byte offsets,
dtype and op mapping, grouping and error paths; it says nothing about NCCL itself, CUDA streams
or speed. On a GPU (``cuda`` marker): world size 1 through ``init_process_group("nccl")`` on
Ember tensors, and 2 ranks on 2 GPUs where the machine has two.
"""
import ctypes
import datetime
import os
import sys
import threading
import time
import types

import ml_dtypes
import numpy as np
import pytest

from ember.distributed import ReduceOp
from ember.distributed import process_group_nccl as pgn
from ember.distributed.process_group import DistBackendError

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, TESTS_DIR)

from conformance import strict_cupy  # noqa: E402

xp = strict_cupy.xp
BF16 = np.dtype(ml_dtypes.bfloat16)


# ---------------------------------------------------------------------------------------------
# A stand-in for cupy.cuda.nccl: ranks are threads of this process
# ---------------------------------------------------------------------------------------------

_TYPES = {0: np.int8, 1: np.uint8, 2: np.int32, 3: np.uint32, 4: np.int64, 5: np.uint64,
          6: np.float16, 7: np.float32, 8: np.float64, 9: BF16}


def _reduce(arrays, op):
    wide = [a.astype(np.float32) if a.dtype in (np.float16, BF16) else a for a in arrays]
    stacked = np.stack(wide)
    out = {0: lambda: stacked.sum(0), 1: lambda: stacked.prod(0), 2: lambda: stacked.max(0),
           3: lambda: stacked.min(0), 4: lambda: stacked.sum(0) / len(arrays)}[op]()
    return out.astype(arrays[0].dtype)


def _memory(ptr, count, datatype):
    """The ``count`` elements of NCCL type ``datatype`` at address ``ptr`` (a writable view)."""
    dtype = np.dtype(_TYPES[datatype])
    raw = (ctypes.c_char * (count * dtype.itemsize)).from_address(ptr)
    return np.frombuffer(raw, dtype=np.uint8).view(dtype)


class _World:
    def __init__(self, size):
        self.size = size
        self.barrier = threading.Barrier(size, timeout=10)
        self.slots = [None] * size
        self.mail = {}
        self.cond = threading.Condition()
        self.calls = []


class FakeNccl(types.SimpleNamespace):
    """``cupy.cuda.nccl``'s names, NCCL's constants, and a communicator whose operations run at
    once (the conformance streams are eager), synchronising the rank threads."""

    def __init__(self):
        consts = dict(NCCL_SUM=0, NCCL_PROD=1, NCCL_MAX=2, NCCL_MIN=3, NCCL_AVG=4, NCCL_INT8=0,
                      NCCL_CHAR=0, NCCL_UINT8=1, NCCL_INT32=2, NCCL_INT=2, NCCL_UINT32=3,
                      NCCL_INT64=4, NCCL_UINT64=5, NCCL_FLOAT16=6, NCCL_HALF=6,
                      NCCL_FLOAT32=7, NCCL_FLOAT=7, NCCL_FLOAT64=8, NCCL_DOUBLE=8,
                      NCCL_BFLOAT16=9)
        super().__init__(available=True, **consts)
        self.worlds = {}
        self.lock = threading.Lock()
        self.local = threading.local()
        fake = self

        class NcclCommunicator:
            def __init__(self, ndev, commId, rank):
                assert isinstance(commId, bytes) and len(commId) == 128
                with fake.lock:
                    self.world = fake.worlds.setdefault(commId, _World(ndev))
                assert self.world.size == ndev
                self.rank = rank
                self.aborted = self.destroyed = False

            def _exchange(self, contribution, compute):
                w = self.world
                w.slots[self.rank] = contribution
                w.barrier.wait()
                result = compute(w.slots)
                w.barrier.wait()
                return result

            def allReduce(self, sendbuf, recvbuf, count, datatype, op, stream):
                self.world.calls.append(("allReduce", self.rank, datatype, op))
                result = self._exchange(_memory(sendbuf, count, datatype).copy(),
                                        lambda slots: _reduce(slots, op))
                _memory(recvbuf, count, datatype)[...] = result

            def broadcast(self, sendbuff, recvbuff, count, datatype, root, stream):
                mine = _memory(sendbuff, count, datatype).copy() if self.rank == root else None
                result = self._exchange(mine, lambda slots: slots[root])
                _memory(recvbuff, count, datatype)[...] = result

            def reduce(self, sendbuf, recvbuf, count, datatype, op, root, stream):
                result = self._exchange(_memory(sendbuf, count, datatype).copy(),
                                        lambda slots: _reduce(slots, op))
                if self.rank == root:
                    _memory(recvbuf, count, datatype)[...] = result

            def allGather(self, sendbuf, recvbuf, count, datatype, stream):
                result = self._exchange(_memory(sendbuf, count, datatype).copy(), np.concatenate)
                _memory(recvbuf, count * self.world.size, datatype)[...] = result

            def reduceScatter(self, sendbuf, recvbuf, recvcount, datatype, op, stream):
                n = self.world.size
                result = self._exchange(_memory(sendbuf, recvcount * n, datatype).copy(),
                                        lambda slots: _reduce(slots, op))
                _memory(recvbuf, recvcount, datatype)[...] = \
                    result[self.rank * recvcount:(self.rank + 1) * recvcount]

            def send(self, sendbuf, count, datatype, peer, stream):
                data = _memory(sendbuf, count, datatype).copy()
                with self.world.cond:
                    self.world.mail.setdefault((self.rank, peer), []).append(data)
                    self.world.cond.notify_all()

            def recv(self, recvbuf, count, datatype, peer, stream):
                target = _memory(recvbuf, count, datatype)

                def deliver():
                    with self.world.cond:
                        box = (peer, self.rank)
                        assert self.world.cond.wait_for(lambda: self.world.mail.get(box), 30)
                        data = self.world.mail[box].pop(0)
                    assert data.nbytes == target.nbytes, (data.nbytes, target.nbytes)
                    target[...] = data.view(target.dtype)
                if fake._depth() > 0:
                    fake.local.deferred.append(deliver)
                else:
                    deliver()

            def check_async_error(self):
                pass

            def abort(self):
                self.aborted = True

            def destroy(self):
                self.destroyed = True

        self.NcclCommunicator = NcclCommunicator

    def _depth(self):
        return getattr(self.local, "depth", 0)

    def get_unique_id(self):
        return os.urandom(128)

    def groupStart(self):
        if self._depth() == 0:
            self.local.deferred = []
        self.local.depth = self._depth() + 1

    def groupEnd(self):
        self.local.depth -= 1
        if self.local.depth == 0:
            for deliver in self.local.deferred:
                deliver()


class DictStore:
    """The store calls the backend makes (set, get, add), for ranks that are threads."""

    def __init__(self):
        self.data, self.cond = {}, threading.Condition()

    def set(self, key, value):
        with self.cond:
            self.data[key] = value if isinstance(value, bytes) else str(value).encode()
            self.cond.notify_all()

    def get(self, key):
        with self.cond:
            assert self.cond.wait_for(lambda: key in self.data, 30), key
            return self.data[key]

    def add(self, key, amount):
        with self.cond:
            value = int(self.data.get(key, b"0")) + amount
            self.data[key] = str(value).encode()
            self.cond.notify_all()
            return value


def run_threads(size, body, timeout=60):
    """``body(rank)`` on ``size`` threads; their results by rank, or the first rank's error."""
    results, errors = [None] * size, [None] * size

    def main(rank):
        try:
            results[rank] = body(rank)
        except BaseException as exc:  # noqa: BLE001 - reported with its rank below
            errors[rank] = exc
    threads = [threading.Thread(target=main, args=(r,), daemon=True) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
        assert not t.is_alive(), "a rank thread hung"
    for rank, exc in enumerate(errors):
        if exc is not None:
            raise AssertionError(f"rank {rank} failed: {exc!r}") from exc
    return results


def make_groups(size, store=None, nccl=None, timeout=None):
    store, nccl = store or DictStore(), nccl or FakeNccl()
    groups = run_threads(size, lambda r: pgn.ProcessGroupNCCL(
        store, r, size, timeout, 0, modules=(xp, nccl)))
    return groups, nccl


def host(array):
    return array.get()


# ---------------------------------------------------------------------------------------------
# Without CuPy or without NCCL: a clear error
# ---------------------------------------------------------------------------------------------

def test_missing_cupy_gives_the_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy raises ImportError
    monkeypatch.delitem(sys.modules, "cupy.cuda.nccl", raising=False)
    with pytest.raises(RuntimeError, match=r"^NCCL backend needs CuPy with NCCL: pip install "
                                           r"'ember\[cuda\]' \(CuPy is not installed\)"):
        pgn.ProcessGroupNCCL(DictStore(), 0, 1, None, None)
    assert pgn.is_nccl_available() is False


def test_cupy_without_the_nccl_library_says_which_wheel(monkeypatch):
    cupy = types.ModuleType("cupy")
    cupy.__version__ = "14.2.0"
    cupy_cuda = types.ModuleType("cupy.cuda")
    nccl = types.ModuleType("cupy.cuda.nccl")
    nccl.available = False  # what cupy.cuda.nccl says when libnccl.so.2 cannot be loaded
    for name, module in (("cupy", cupy), ("cupy.cuda", cupy_cuda), ("cupy.cuda.nccl", nccl)):
        monkeypatch.setitem(sys.modules, name, module)
    with pytest.raises(RuntimeError, match=r"NCCL backend needs CuPy with NCCL.*cannot load the "
                                           r"NCCL library: pip install nvidia-nccl-cu13"):
        pgn.ProcessGroupNCCL(DictStore(), 0, 1, None, None)
    assert pgn.is_nccl_available() is False


def test_no_cuda_device_is_refused_before_any_communication():
    runtime = types.SimpleNamespace(getDeviceCount=lambda: 0)
    cupy = types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=runtime))
    with pytest.raises(RuntimeError, match="NCCL backend needs a CUDA device: CuPy finds none"):
        pgn.ProcessGroupNCCL(DictStore(), 0, 1, None, None, modules=(cupy, FakeNccl()))


# ---------------------------------------------------------------------------------------------
# Every operation on the stand-in, two ranks and one
# ---------------------------------------------------------------------------------------------

def _values(rank, shape, dtype):
    n = int(np.prod(shape))
    base = np.arange(n).reshape(shape) + 10 * rank + 1
    if np.dtype(dtype) == np.bool_:
        return (base + rank) % 3 == 0
    if np.dtype(dtype).kind == "c":
        return (base + 1j * (base - rank)).astype(dtype)
    return base.astype(dtype)


def _collectives(pg, rank, size, xp=xp):
    """Runs every operation on this rank (``xp``: the array namespace, the conformance one or
    CuPy); returns what was checked, for the caller to count."""
    checked = []
    # all-reduce: each op on each reducing dtype
    for dtype in (np.float32, np.float64, np.float16, BF16, np.int32, np.int64, np.uint8,
                  np.int8, np.bool_, np.complex64):
        ops = ([ReduceOp.SUM, ReduceOp.AVG] if np.dtype(dtype).kind == "c" else
               [ReduceOp.SUM, ReduceOp.PRODUCT, ReduceOp.MIN, ReduceOp.MAX] if dtype == np.bool_
               else [ReduceOp.SUM, ReduceOp.PRODUCT, ReduceOp.MIN, ReduceOp.MAX, ReduceOp.AVG])
        for op in ops:
            everyone = [_values(r, (2, 3), dtype) for r in range(size)]
            a = xp.asarray(everyone[rank])
            work = pg.allreduce(a, op)
            assert work.wait() is True and work.is_completed() and work.is_success()
            stacked = np.stack([e.astype(np.float64) if e.dtype == BF16 else e
                                for e in everyone])
            expected = {ReduceOp.SUM: lambda: stacked.sum(0), ReduceOp.PRODUCT:
                        lambda: stacked.prod(0), ReduceOp.MIN: lambda: stacked.min(0),
                        ReduceOp.MAX: lambda: stacked.max(0),
                        ReduceOp.AVG: lambda: stacked.sum(0) / size}[op]()
            if dtype == np.bool_:
                expected = {ReduceOp.SUM: stacked.any(0), ReduceOp.MAX: stacked.any(0),
                            ReduceOp.PRODUCT: stacked.all(0), ReduceOp.MIN: stacked.all(0)}[op]
            got = host(a)
            assert got.dtype == np.dtype(dtype)
            if np.dtype(dtype).kind in "iub":
                np.testing.assert_array_equal(got, np.asarray(expected).astype(dtype))
            else:
                wide = np.complex128 if np.dtype(dtype).kind == "c" else np.float64
                np.testing.assert_allclose(got.astype(wide), expected,
                                           rtol=1e-2 if dtype in (np.float16, BF16) else 1e-6)
            checked.append(("allreduce", str(np.dtype(dtype)), op.name))
    # broadcast from each root, any dtype (bytes)
    for root in range(size):
        for dtype in (np.float32, np.int16, np.bool_, np.complex128, BF16):
            a = xp.asarray(_values(rank, (5,), dtype))
            pg.broadcast(a, root).wait()
            np.testing.assert_array_equal(host(a), _values(root, (5,), dtype))
            checked.append(("broadcast", root))
    # reduce onto each root
    for root in range(size):
        a = xp.asarray(_values(rank, (4,), np.float32))
        pg.reduce(a, root, ReduceOp.SUM).wait()
        if rank == root:
            np.testing.assert_allclose(host(a), sum(_values(r, (4,), np.float32)
                                                    for r in range(size)))
        checked.append(("reduce", root))
    # all-gather, reduce-scatter
    for dtype in (np.float32, np.int16):
        inp = xp.asarray(_values(rank, (2, 3), dtype))
        out = xp.empty((size, 2, 3), dtype=dtype)
        pg.allgather(out, inp).wait()
        np.testing.assert_array_equal(host(out), np.stack([_values(r, (2, 3), dtype)
                                                           for r in range(size)]))
    everyone = [_values(r, (size, 3), np.float64) for r in range(size)]
    out = xp.empty((3,), dtype=np.float64)
    pg.reduce_scatter(out, xp.asarray(everyone[rank]), ReduceOp.MAX).wait()
    np.testing.assert_array_equal(host(out), np.stack(everyone).max(0)[rank])
    checked += [("allgather",), ("reduce_scatter",)]
    # gather and scatter onto / from each root
    for root in range(size):
        inp = xp.asarray(_values(rank, (3,), np.int64))
        out = xp.empty((size, 3), dtype=np.int64) if rank == root else None
        work = pg.gather(out, inp, root)
        work.wait()
        if rank == root:
            np.testing.assert_array_equal(host(out), np.stack([_values(r, (3,), np.int64)
                                                               for r in range(size)]))
            assert work.result()[0] is out
        source = xp.asarray(np.arange(size * 2, dtype=np.float32).reshape(size, 2) + root) \
            if rank == root else None
        out = xp.empty((2,), dtype=np.float32)
        pg.scatter(out, source, root).wait()
        np.testing.assert_array_equal(host(out), np.arange(rank * 2, rank * 2 + 2) + root)
        checked += [("gather", root), ("scatter", root)]
    # all-to-all with unequal element counts (rank r sends r + 1 + d elements to rank d)
    in_splits = [rank + 1 + d for d in range(size)]
    out_splits = [s + 1 + rank for s in range(size)]
    sent = [np.full(n, 100 * rank + d, np.int32) for d, n in enumerate(in_splits)]
    out = xp.empty((sum(out_splits),), dtype=np.int32)
    pg.alltoall(out, xp.asarray(np.concatenate(sent)), out_splits, in_splits).wait()
    np.testing.assert_array_equal(host(out), np.concatenate(
        [np.full(out_splits[s], 100 * s + rank, np.int32) for s in range(size)]))
    checked.append(("alltoall",))
    # point to point: a ring
    if size > 1:
        right, left = (rank + 1) % size, (rank - 1) % size
        buf = xp.empty((4,), dtype=BF16)
        # the stand-in buffers a send, as NCCL does for small messages
        pg.send(xp.asarray(_values(rank, (4,), BF16)), right, 0).wait()
        work = pg.recv(buf, left, 0)
        work.wait()
        assert work.source_rank() == left
        np.testing.assert_array_equal(host(buf), _values(left, (4,), BF16))
        checked.append(("send/recv",))
    # barrier
    work = pg.barrier()
    assert work.wait() is True
    checked.append(("barrier",))
    return checked


def _refusals(pg):
    a = xp.asarray(np.ones(3, np.float32))
    with pytest.raises(ValueError, match=r"^Cannot use ReduceOp.BAND with NCCL$"):
        pg.allreduce(xp.asarray(np.ones(3, np.int32)), ReduceOp.BAND)
    with pytest.raises(TypeError, match=r"^Input tensor data type is not supported for NCCL "
                                        r"process group: int16$"):
        pg.allreduce(xp.asarray(np.ones(3, np.int16)), ReduceOp.SUM)
    with pytest.raises(TypeError, match=r"^Cannot use ReduceOp.AVG with boolean inputs$"):
        pg.allreduce(xp.asarray(np.ones(3, np.bool_)), ReduceOp.AVG)
    with pytest.raises(ValueError, match="does not support ReduceOp.MAX on complex"):
        pg.allreduce(xp.asarray(np.ones(3, np.complex64)), ReduceOp.MAX)
    with pytest.raises(RuntimeError, match="does not support recv from any source"):
        pg.recv(a, None, 0)
    with pytest.raises(ValueError, match="works on CUDA tensors, got a ndarray"):
        pg.allreduce(np.ones(3, np.float32), ReduceOp.SUM)
    with pytest.raises(ValueError, match="split sizes sum to"):
        pg.alltoall(xp.empty((3,), dtype=np.float32), a, [1] * pg.size, [1] * pg.size)


def test_two_ranks_every_operation_matches_its_definition():
    from ember.distributed.store import HashStore, PrefixStore
    groups, nccl = make_groups(2, PrefixStore("default_pg/", HashStore()))
    checked = run_threads(2, lambda r: _collectives(groups[r], r, 2))
    assert checked[0] == checked[1] and len(checked[0]) > 60
    # the reductions went to NCCL in NCCL's own types and ops: bool as uint8 with MAX for SUM,
    # bfloat16 as NCCL_BFLOAT16, complex64 as twice the float32s, AVG as ncclAvg
    world = next(iter(nccl.worlds.values()))
    calls = set(world.calls)
    assert ("allReduce", 0, nccl.NCCL_UINT8, nccl.NCCL_MAX) in calls
    assert ("allReduce", 0, nccl.NCCL_BFLOAT16, nccl.NCCL_AVG) in calls
    assert ("allReduce", 0, nccl.NCCL_FLOAT32, nccl.NCCL_SUM) in calls
    _refusals(groups[0])  # refused before communicating: one rank alone is enough
    for g in groups:
        g.shutdown()
        assert g.comm.destroyed and not g.comm.aborted
        with pytest.raises(RuntimeError, match="was shut down"):
            g.barrier()


def test_one_rank_every_operation_and_a_second_group_on_the_same_store():
    store = DictStore()
    (pg,), _ = make_groups(1, store)
    assert _collectives(pg, 0, 1)
    (second,), _ = make_groups(1, store)
    assert second.comm is not pg.comm  # a fresh unique id: the store keys do not collide
    assert "nccl/2/unique_id" in store.data
    assert repr(pg) == "<ProcessGroupNCCL rank 0/1 on cuda:0>"
    pg.shutdown(), second.shutdown()


def test_mismatched_shapes_raise_on_every_rank_when_checks_are_on(monkeypatch):
    monkeypatch.setenv("EMBER_DISTRIBUTED_CHECKS", "1")
    groups, _ = make_groups(2)

    def body(rank):
        with pytest.raises(ValueError, match=r"ranks disagree on NCCL allreduce .*rank 0: "
                                             r"allreduce numel=3 .*rank 1: allreduce numel=4"):
            groups[rank].allreduce(xp.asarray(np.ones(3 + rank, np.float32)), ReduceOp.SUM)
        a = xp.asarray(np.ones(3, np.float32))
        groups[rank].allreduce(a, ReduceOp.SUM).wait()  # agreeing shapes still pass
        return host(a)
    for result in run_threads(2, body):
        np.testing.assert_array_equal(result, [2, 2, 2])


def test_a_rank_that_never_arrives_fails_the_init_after_the_timeout():
    store = DictStore()
    start = time.monotonic()
    with pytest.raises(DistBackendError, match=r"^\[Rank 0\] NCCL communicator initialisation: "
                                               r"only 1 of 2 ranks arrived within 0.3 s"):
        pgn.ProcessGroupNCCL(store, 0, 2, datetime.timedelta(seconds=0.3), 0,
                             modules=(xp, FakeNccl()))
    assert time.monotonic() - start < 5


class _NeverDone(xp.cuda.Event):
    """A CUDA event for work that never finishes (a peer that never joined)."""
    done = False


def test_watchdog_aborts_a_collective_that_outlives_the_timeout(monkeypatch):
    monkeypatch.setenv("TORCH_NCCL_ASYNC_ERROR_HANDLING", "0")  # keep the process alive
    groups, _ = make_groups(2, timeout=datetime.timedelta(seconds=0.3))
    pg = groups[0]
    cuda = types.SimpleNamespace(**{k: getattr(xp.cuda, k) for k in ("get_current_stream",)},
                                 Event=_NeverDone)
    pg._cupy = types.SimpleNamespace(ndarray=xp.ndarray, cuda=cuda)
    # the stand-in's all-reduce would wait for rank 1: rank 0's NCCL call is only enqueued
    pg.comm.allReduce = lambda *args: None
    work = pg.allreduce(xp.asarray(np.ones(2, np.float32)), ReduceOp.SUM)
    start = time.monotonic()
    deadline = start + 10
    while pg._failure is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert pg.comm.aborted
    with pytest.raises(DistBackendError, match=r"^\[Rank 0\] Watchdog caught collective operation "
                                               r"timeout: WorkNCCL\(SeqNum=1, OpType=ALLREDUCE "
                                               r"SUM\) ran for \d+ milliseconds"):
        work.wait()
    with pytest.raises(DistBackendError, match="Watchdog caught"):
        pg.barrier()  # the group is broken from now on
    groups[1].shutdown()
    pg.shutdown()


def test_blocking_wait_times_out_on_the_host(monkeypatch):
    (pg,), _ = make_groups(1, timeout=datetime.timedelta(seconds=0.2))
    cuda = types.SimpleNamespace(get_current_stream=xp.cuda.get_current_stream, Event=_NeverDone)
    pg._cupy = types.SimpleNamespace(ndarray=xp.ndarray, cuda=cuda)
    work = pg.allreduce(xp.asarray(np.ones(2, np.float32)), ReduceOp.SUM)
    assert not work.is_completed()
    message = (r"^\[Rank 0\] WorkNCCL\(SeqNum={}, OpType=ALLREDUCE SUM\) ran for \d+ "
               r"milliseconds before timing out")
    with pytest.raises(DistBackendError, match=message.format(1)):
        work.wait(timeout=datetime.timedelta(seconds=0.1))  # the host waits up to a timeout
    monkeypatch.setenv("TORCH_NCCL_BLOCKING_WAIT", "1")
    work = pg.allreduce(xp.asarray(np.ones(2, np.float32)), ReduceOp.SUM)
    with pytest.raises(DistBackendError, match=message.format(2)):
        work.wait()  # and, with TORCH_NCCL_BLOCKING_WAIT, up to the group's timeout


# ---------------------------------------------------------------------------------------------
# On a GPU
# ---------------------------------------------------------------------------------------------

def _gpu_count():
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001 - no CuPy, no driver
        return 0


def _front_end_checks(dist, ember, device):
    """ember.distributed's collectives on ``device`` tensors in a world of one NCCL rank."""
    assert dist.get_world_size() == 1 and dist.get_rank() == 0
    for dtype in (ember.float32, ember.float16, ember.bfloat16, ember.int64, ember.bool):
        for op in ((ReduceOp.SUM, ReduceOp.MAX) if dtype is ember.bool else
                   (ReduceOp.SUM, ReduceOp.AVG, ReduceOp.MIN, ReduceOp.PRODUCT)):
            t = ember.arange(6, device=device).reshape(2, 3).to(dtype)
            before = t.cpu()
            dist.all_reduce(t, op=op)
            assert t.device.type == device and t.dtype is dtype
            assert ember.equal(t.cpu(), before), (dtype, op)
    x = ember.randn(4, 5, device=device)
    work = dist.all_reduce(x, async_op=True)
    assert work.wait() is True and work.is_completed()
    nc = x.t()  # non-contiguous: packed, then written back
    dist.broadcast(nc, src=0)
    assert ember.equal(nc, x.t())
    out = ember.empty(4, 5, device=device)
    dist.all_gather_into_tensor(out, x)
    assert ember.equal(out, x)
    out.zero_()
    dist.reduce_scatter_tensor(out, x)
    assert ember.equal(out, x)
    gathered = [ember.empty(4, 5, device=device)]
    dist.all_gather(gathered, x)
    assert ember.equal(gathered[0], x)
    out.zero_()
    dist.gather(x, [out], dst=0)
    assert ember.equal(out, x)
    out.zero_()
    dist.scatter(out, [x], src=0)
    assert ember.equal(out, x)
    flat = ember.empty(20, device=device)
    dist.all_to_all_single(flat, x.reshape(-1))
    assert ember.equal(flat, x.reshape(-1))
    dist.barrier()


def test_front_end_on_the_conformance_device_world_size_one(monkeypatch):
    """The front end's packing, AVG and write-back reach this backend as on a GPU: the backend
    serves the conformance device ("cupyconf") over the stand-in, registered for this test."""
    import ember
    import ember.distributed as dist
    from ember.backends import is_known_device_type, register_backend
    from ember.distributed import process_group
    from ember.distributed.store import HashStore
    from conformance.backend import CupyConformanceBackend
    if not is_known_device_type("cupyconf"):
        register_backend("cupyconf", CupyConformanceBackend)
    made = []

    def factory(store, rank, size, timeout, device_index=None):
        made.append(pgn.ProcessGroupNCCL(store, rank, size, timeout, device_index or 0,
                                         modules=(xp, FakeNccl())))
        return made[-1]
    monkeypatch.setitem(process_group._BACKEND_IMPLS, "fakenccl", (("cupyconf",), factory))
    dist.init_process_group("cupyconf:fakenccl", store=HashStore(), rank=0, world_size=1)
    try:
        _front_end_checks(dist, ember, "cupyconf")
    finally:
        dist.destroy_process_group()
    assert len(made) == 1 and made[0].comm.destroyed


@pytest.mark.cuda
def test_cuda_world_size_one_through_init_process_group():
    if not pgn.is_nccl_available():
        pytest.skip("CuPy cannot load NCCL here")
    import ember
    import ember.distributed as dist
    from ember.distributed.store import HashStore
    dist.init_process_group("nccl", store=HashStore(), rank=0, world_size=1)
    try:
        assert dist.get_backend() == "nccl"
        _front_end_checks(dist, ember, "cuda")
    finally:
        dist.destroy_process_group()


@pytest.mark.cuda
def test_cuda_backend_directly_every_operation_world_size_one():
    if not pgn.is_nccl_available():
        pytest.skip("CuPy cannot load NCCL here")
    import cupy
    pg = pgn.ProcessGroupNCCL(DictStore(), 0, 1, datetime.timedelta(seconds=60), 0)
    try:
        assert _collectives(pg, 0, 1, xp=cupy)  # the stand-in's checks, on CuPy's arrays
    finally:
        pg.shutdown()


@pytest.mark.cuda
def test_cuda_two_ranks_on_two_gpus():
    if _gpu_count() < 2:
        pytest.skip("needs 2 GPUs")
    from ranks import run_ranks
    run_ranks("""
        import ember, ember.distributed as dist
        rank = int(os.environ["RANK"])
        dist.init_process_group("nccl")
        x = ember.full((1000,), float(rank + 1), device=f"cuda:{rank}")
        dist.all_reduce(x)
        assert ember.equal(x.cpu(), ember.full((1000,), 3.0)), x
        out = ember.empty(2, 1000, device=f"cuda:{rank}")
        dist.all_gather_into_tensor(out, x)
        w = dist.all_reduce(x, op=dist.ReduceOp.MAX, async_op=True)
        w.wait()
        assert float(x[0].item()) == 3.0
        dist.barrier()
        dist.destroy_process_group()
    """, nprocs=2, timeout=240)
