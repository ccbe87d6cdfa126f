"""Process groups, their pending operations (``Work``) and the contract of a communication
backend.

A ``ProcessGroup`` is what ``torch.distributed`` hands out: a set of ranks. It owns one
``BackendImpl`` per device type ("mpi" serves cpu tensors, "nccl" cuda tensors) and sends each
collective to the one that matches the tensors' device. The front end
(``distributed_c10d``) checks arguments and packs tensors into C-contiguous backend arrays, so a
``BackendImpl`` only moves arrays; every one of its operations returns a ``Work``.

A ``Work`` completes by polling: ``test()`` is asked repeatedly, so ``wait()`` can give up at
its timeout and raise instead of blocking forever inside a communication library. It spins as
MPI's own wait does (MPI moves a large message only while someone polls it, so sleeping between
polls would cut bandwidth), yielding the CPU every few polls so that ranks sharing cores with
other processes still let them run.
"""
import datetime
import os
import time

__all__ = ["default_pg_timeout", "timeout_seconds", "DistError", "DistBackendError",
           "DistNetworkError", "DistStoreError",
           "Work", "BackendImpl", "ProcessGroup", "register_backend_impl", "backend_impl"]


# torch.distributed.constants.default_pg_timeout
default_pg_timeout = datetime.timedelta(minutes=30)


def timeout_seconds(timeout):
    """Seconds (float) from a timedelta or a number; None stays None (no limit)."""
    if timeout is None:
        return None
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        return float(timeout)
    raise TypeError(f"timeout must be a datetime.timedelta, got {type(timeout).__name__}")


class DistError(RuntimeError):
    """torch.distributed.DistError: the base of the distributed errors."""


class DistBackendError(DistError):
    """A communication backend failed (or timed out), as torch.distributed.DistBackendError."""


class DistNetworkError(DistError):
    """A network operation (store, rendezvous) failed, as torch.distributed.DistNetworkError."""


class DistStoreError(DistError):
    """A store operation failed or timed out, as torch.distributed.DistStoreError."""


# Polls between a clock check and a yield of the CPU.
_POLLS_PER_YIELD = 16


class Work:
    """An operation in flight, as ``torch.distributed.Work``.

    ``test()`` advances the operation and says whether it finished (it may raise the backend's
    error); ``on_complete()``, run once when it has, finishes the front end's part (copying a
    packed buffer back into a non-contiguous tensor, dividing a sum for AVG). ``outputs`` is what
    ``result()`` returns. ``timeout`` (seconds, None: forever) bounds ``wait()``;
    ``description`` names the operation in a timeout's message."""

    def __init__(self, test=None, on_complete=None, outputs=(), timeout=None, description="",
                 rank=None):
        self._test = test
        self._on_complete = on_complete
        self._outputs = list(outputs)
        self._timeout = timeout
        self._description = description
        self._rank = rank
        self._done = test is None
        self._finished = False
        self._exception = None
        self._source_rank = None
        if self._done:
            self._finish()

    @classmethod
    def completed(cls, outputs=(), on_complete=None):
        """A Work for an operation that already finished."""
        return cls(None, on_complete, outputs)

    def _finish(self):
        if self._finished:
            return
        self._finished = True
        if self._on_complete is not None:
            try:
                self._on_complete()
            except BaseException as exc:
                self._exception = exc
                raise

    def _poll(self):
        if self._exception is not None:
            raise self._exception
        if not self._done:
            try:
                self._done = bool(self._test())
            except BaseException as exc:
                self._exception = exc
                raise
            if self._done:
                self._finish()
        return self._done

    def is_completed(self):
        """Whether the operation finished (successfully or not); never blocks."""
        try:
            return self._poll()
        except Exception:
            return True

    def is_success(self):
        return self.is_completed() and self._exception is None

    def exception(self):
        """The error the operation ended with, or None."""
        self.is_completed()
        return self._exception

    def wait(self, timeout=None):
        """Block until the operation finishes; True. Raises the backend's error, or
        ``DistBackendError`` after ``timeout`` (a timedelta or seconds; default: the group's).
        After a timeout the operation is still pending in the backend: the group should be
        considered broken (as torch's watchdog does, which tears the process down)."""
        limit = self._timeout if timeout is None else timeout_seconds(timeout)
        start = time.monotonic()
        polls = 0
        while not self._poll():
            polls += 1
            if polls % _POLLS_PER_YIELD:
                continue
            elapsed = time.monotonic() - start
            if limit is not None and elapsed > limit:
                prefix = f"[Rank {self._rank}] " if self._rank is not None else ""
                self._exception = DistBackendError(
                    f"{prefix}{self._description or 'operation'} ran for "
                    f"{int(elapsed * 1000)} milliseconds before timing out (timeout "
                    f"{int(limit * 1000)} ms): a peer never took part. The process group may "
                    "be unusable now.")
                raise self._exception
            os.sched_yield()
        return True

    def result(self):
        """The operation's output tensors (or arrays, for a bare backend's Work)."""
        self.wait()
        return list(self._outputs)

    def get_future(self):
        """An ``ember.futures.Future`` holding ``result()`` once the operation completes.
        Communication progresses when waited on, so the Future completes when it (or a Future
        chained on it with ``then``) is waited on, or at once if the operation already has."""
        from ..futures import Future
        future = getattr(self, "_future", None)
        if future is not None:
            return future
        future = self._future = Future()

        def drive():
            self.wait()
            if not future.done():
                future.set_result(self.result())
        if self._done and self._exception is None:
            future.set_result(list(self._outputs))
        else:
            future._driver = drive
        return future

    def chain(self, on_complete, outputs):
        """A Work that finishes this one, then runs ``on_complete()`` (the front end's part:
        copying back a packed tensor, dividing for AVG), with ``outputs`` as its result.
        ``wait`` is this Work's own (a CUDA backend's makes the stream wait, not the host)."""
        return _Chained(self, on_complete, outputs)

    def source_rank(self):
        """For a ``recv`` from any source: the rank that sent it."""
        if self._source_rank is None:
            raise RuntimeError("source_rank() is only available on a Work returned by a recv "
                               "that has completed")
        return self._source_rank

    def synchronize(self):
        self.wait()

    def __repr__(self):
        state = "completed" if self._done else "pending"
        return f"<Work {self._description or 'operation'} ({state})>"


class _Chained(Work):
    def __init__(self, inner, on_complete, outputs):
        super().__init__(inner._poll, on_complete, outputs, inner._timeout, inner._description,
                         inner._rank)
        self._inner = inner

    def wait(self, timeout=None):
        if self._exception is not None:
            raise self._exception
        try:
            self._inner.wait(timeout)
        except BaseException as exc:
            self._exception = exc
            raise
        self._done = True
        self._finish()
        return True

    def source_rank(self):
        if self._source_rank is None and self._inner._source_rank is not None:
            return self._inner._source_rank
        return super().source_rank()


class BackendImpl:
    """One device type's communicator within a process group (the "mpi" backend for cpu
    arrays, "nccl" for cuda arrays).

    Every operation takes backend arrays (numpy or cupy), C-contiguous, packed by the front end,
    and returns a ``Work`` (give it this backend's ``timeout`` and ``rank``). ``op`` is a
    ``ReduceOp.RedOpType`` and never AVG (the front end sums then divides) or PREMUL_SUM.
    Ranks are ranks within this group. A backend that cannot do an operation raises
    ``RuntimeError`` naming it, before communicating. A backend's ``Work`` may override
    ``wait`` (a CUDA one makes the current stream wait instead of the host); the front end's
    completion step runs after that ``wait`` (``Work.chain``). Factories are called as
    ``factory(store, rank, size, timeout, device_index)``: ``timeout`` a timedelta,
    ``device_index`` the index of the first tensor's device, or None."""
    name = "undefined"
    supported_devices = ()

    def __init__(self, rank, size, timeout=None):
        self.rank = rank
        self.size = size
        self.timeout = timeout_seconds(default_pg_timeout if timeout is None else timeout)

    def _missing(self, what):
        raise RuntimeError(f"the {self.name} backend does not implement {what}")

    def allreduce(self, array, op):
        """In place: every rank ends with the reduction of all ranks' ``array``."""
        self._missing("allreduce")

    def broadcast(self, array, root):
        """In place: every rank ends with ``root``'s ``array``."""
        self._missing("broadcast")

    def reduce(self, array, root, op):
        """In place on ``root`` (other ranks' ``array`` is left as it was or scratch)."""
        self._missing("reduce")

    def allgather(self, out, inp):
        """``out`` (size, *inp.shape): ``out[r]`` is rank r's ``inp``."""
        self._missing("allgather")

    def reduce_scatter(self, out, inp, op):
        """``inp`` (size, *out.shape): ``out`` is the reduction over ranks of ``inp[rank]``."""
        self._missing("reduce_scatter")

    def gather(self, out, inp, root):
        """``out`` (size, *inp.shape) on root, None elsewhere."""
        self._missing("gather")

    def scatter(self, out, inp, root):
        """``inp`` (size, *out.shape) on root, None elsewhere."""
        self._missing("scatter")

    def alltoall(self, out, inp, out_splits, in_splits):
        """1-D arrays: ``in_splits[r]`` elements of ``inp`` go to rank r, ``out_splits[r]``
        elements of ``out`` come from rank r, in rank order (element counts, not rows)."""
        self._missing("alltoall")

    def send(self, array, dst, tag):
        self._missing("send")

    def recv(self, array, src, tag):
        """``src`` None: from any rank; the Work's ``source_rank()`` says which."""
        self._missing("recv")

    def barrier(self):
        self._missing("barrier")

    def shutdown(self):
        """Release the communicator; no operation may follow."""

    def split(self, ranks, group_rank):
        """Optionally, a communicator for the sub-group ``ranks`` (ranks of this group), made
        now by every rank of this group together: the new BackendImpl for a member, None for a
        non-member. Backends that return NotImplemented (the default) get theirs from their
        factory on the sub-group's first use instead, with a store prefixed per group."""
        return NotImplemented


# name -> (device types, factory(store, rank, size, timeout, device_index) -> BackendImpl)
_BACKEND_IMPLS = {}


def register_backend_impl(name, factory, devices):
    _BACKEND_IMPLS[name.lower()] = (tuple(devices), factory)


def _create_mpi(store, rank, size, timeout, device_index=None):
    from .process_group_mpi import ProcessGroupMPI
    return ProcessGroupMPI(store, rank, size, timeout)


def _create_nccl(store, rank, size, timeout, device_index=None):
    from .process_group_nccl import ProcessGroupNCCL
    return ProcessGroupNCCL(store, rank, size, timeout, device_index)


register_backend_impl("mpi", _create_mpi, ("cpu",))
register_backend_impl("nccl", _create_nccl, ("cuda",))


def backend_impl(name):
    """The (device types, factory) registered for backend ``name``."""
    try:
        return _BACKEND_IMPLS[name.lower()]
    except KeyError:
        if name.lower() == "gloo":
            raise RuntimeError("Ember has no gloo backend: use backend='mpi' for CPU tensors "
                               "(mpi4py; start the ranks with mpiexec or "
                               "`python -m ember.distributed.run`)") from None
        raise ValueError(f"Invalid backend: '{name}'; Ember has "
                         f"{', '.join(sorted(_BACKEND_IMPLS))}") from None


class ProcessGroup:
    """A group of ranks, as ``torch.distributed.ProcessGroup``: ``rank()`` and ``size()``
    within the group, ``name()`` (the backend's name), the global ranks it holds.

    ``backends`` maps a device type to a backend name; the BackendImpl for a device type is
    made on first use by its factory (or given ready, as ``impls``, by a ``split``)."""

    def __init__(self, store, rank, size, global_ranks, backends, timeout=None, group_name="",
                 group_desc="undefined", impls=None):
        self._store = store
        self._rank = rank
        self._size = size
        self._global_ranks = list(global_ranks)
        self._backends = dict(backends)
        self._timeout = timeout
        self.group_name = group_name
        self.group_desc = group_desc
        self._impls = dict(impls or {})
        self.bound_device_id = None
        self._shut_down = False

    def rank(self):
        return self._rank

    def size(self):
        return self._size

    def name(self):
        """The backend's name ("mpi"; "cpu:mpi,cuda:nccl" style for several)."""
        names = sorted(set(self._backends.values()))
        if len(names) == 1:
            return names[0]
        return ",".join(f"{d}:{b}" for d, b in sorted(self._backends.items()))

    def _get_backend_name(self):
        return self.name()

    @property
    def global_ranks(self):
        return list(self._global_ranks)

    def _get_backend(self, device):
        """The BackendImpl for ``device`` (a device, its type, or a tensor's device)."""
        device_type = getattr(device, "type", device)
        index = getattr(device, "index", None)
        impl = self._impls.get(device_type)
        if impl is not None:
            return impl
        if self._shut_down:
            raise RuntimeError(f"process group {self.group_name} has been shut down")
        name = self._backends.get(device_type)
        if name is None:
            raise RuntimeError(f"No backend type associated with device type {device_type}: "
                               f"this process group has {self.name()} (for "
                               f"{', '.join(sorted(self._backends))} tensors)")
        _, factory = backend_impl(name)
        impl = factory(self._store, self._rank, self._size, self._timeout, index)
        self._impls[device_type] = impl
        return impl

    def _created_impls(self):
        return dict(self._impls)

    def shutdown(self):
        self._shut_down = True
        for impl in self._impls.values():
            impl.shutdown()
        self._impls.clear()

    def __repr__(self):
        return (f"<ProcessGroup {self.group_name or '(unnamed)'} {self.name()} rank "
                f"{self._rank}/{self._size}>")
