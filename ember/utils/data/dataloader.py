"""``DataLoader``: batches from a dataset, in the main process or in worker processes.

With ``num_workers > 0`` the main process sends index batches to the workers round-robin
(``prefetch_factor`` per worker in flight), each over its own pipe; each worker fetches and
collates, and sends the batch back over its own result pipe, large arrays through shared memory
(``_utils/shared_memory.py``). The main process waits on all result pipes and on the workers'
process sentinels at once, so a dead worker is noticed as soon as it dies, and hands batches
out in send order (``in_order=True``) or as they arrive.

Only the process that started an iterator's workers stops them: a copy of the iterator that a
forked process inherited (a worker of another loader, a user's child) is finalised there by
dropping its references, silently, leaving the workers to their owner.
"""
import atexit
import itertools
import math
import multiprocessing
import multiprocessing.connection
import os
import secrets
import time
import warnings
import weakref

from ... import _dtype as dt
from ...ops.creation import empty
from ._utils import shared_memory
from ._utils.collate import default_collate, default_convert
from ._utils.fetch import create_fetcher
from ._utils.pin_memory import PinMemoryThread, pin_memory
from ._utils.worker import (ExceptionWrapper, _IterableDatasetStopIteration, _ResumeIteration,
                            worker_loop)
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info", "default_collate", "default_convert"]

from ._utils.worker import get_worker_info  # noqa: E402

#: how long shutdown waits for a worker to exit by itself before terminating it (seconds)
_JOIN_TIMEOUT = 2.0


class _InfiniteConstantSampler(Sampler):
    """The sampler of an IterableDataset: the keys are meaningless, the dataset decides when
    to stop."""

    def __iter__(self):
        while True:
            yield None


class DataLoader:
    """Iterate over ``dataset`` in batches, as ``torch.utils.data.DataLoader``.

    >>> import ember
    >>> from ember.utils.data import DataLoader, TensorDataset
    >>> data = TensorDataset(ember.arange(10.0), ember.arange(10) % 2)
    >>> [tuple(y.tolist()) for x, y in DataLoader(data, batch_size=4)]
    [(0, 1, 0, 1), (0, 1, 0, 1), (0, 1)]

    ``pin_memory=True`` copies each batch into page-locked memory of the current accelerator
    (with worker processes, in a thread of the main process); without an accelerator it has no
    effect, with PyTorch's warning.
    """

    __initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; "
                             "use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing, otherwise set "
                             "prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            self._dataset_kind_iterable = True
            # Every worker iterates its own copy, so keys from a sampler would mean nothing.
            if shuffle not in {False, None}:
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
            self._dataset_kind_iterable = False

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")

        if sampler is None:
            if self._dataset_kind_iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.__initialized = True
        self._IterableDataset_len_called = None
        self._iterator = None
        self.check_worker_number_rationality()

    @property
    def multiprocessing_context(self):
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, multiprocessing_context):
        if multiprocessing_context is not None:
            if self.num_workers > 0:
                if isinstance(multiprocessing_context, str):
                    valid_start_methods = multiprocessing.get_all_start_methods()
                    if multiprocessing_context not in valid_start_methods:
                        raise ValueError(
                            "multiprocessing_context option should specify a valid start method "
                            f"in {valid_start_methods!r}, but got "
                            f"multiprocessing_context={multiprocessing_context!r}")
                    multiprocessing_context = multiprocessing.get_context(multiprocessing_context)
                if not isinstance(multiprocessing_context, multiprocessing.context.BaseContext):
                    raise TypeError("multiprocessing_context option should be a valid context "
                                    "object or a string specifying the start method, but got "
                                    f"multiprocessing_context={multiprocessing_context}")
            else:
                raise ValueError("multiprocessing_context can only be used with multi-process "
                                 f"loading (num_workers > 0), but got num_workers={self.num_workers}")
        self.__multiprocessing_context = multiprocessing_context

    def __setattr__(self, attr, val):
        if self.__initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last",
                                           "dataset", "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after "
                             f"{self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self.check_worker_number_rationality()
        return _MultiProcessingDataLoaderIter(self)

    def __iter__(self):
        # Persistent workers live as long as the loader: one iterator, reset each epoch.
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self):
        if self._dataset_kind_iterable:
            # Trusted as given; iterating past it warns (see _BaseDataLoaderIter.__next__).
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)

    def check_worker_number_rationality(self):
        if self.num_workers == 0:
            return
        try:
            max_workers = len(os.sched_getaffinity(0))
            cpuset_checked = True
        except AttributeError:
            max_workers = os.cpu_count()
            cpuset_checked = False
        if max_workers is not None and self.num_workers > max_workers:
            warnings.warn(
                f"This DataLoader will create {self.num_workers} worker processes in total. Our "
                f"suggested max number of worker in current system is {max_workers}"
                f"{', which is max number of cpus could be used by current process' if cpuset_checked else ''}"
                ", which is smaller than what this DataLoader is going to create. Please be aware "
                "that excessive worker creation might get DataLoader running slow or even freeze, "
                "lower the worker number to avoid potential slowness/freeze if necessary.",
                stacklevel=2)


def _pinning_device(loader):
    """``(pin?, device type)`` for an iterator, with torch's warnings: ``pin_memory_device`` is
    deprecated (the current accelerator pins), and without an accelerator nothing is pinned."""
    if not loader.pin_memory:
        return False, None
    from ... import accelerator
    if loader.pin_memory_device:
        warnings.warn("pin_memory_device is deprecated, the current accelerator will be used as "
                      f"the device,ignore pin_memory_device='{loader.pin_memory_device}'.",
                      stacklevel=3)
    acc = accelerator.current_accelerator(check_available=True)
    if acc is None:
        warnings.warn("'pin_memory' argument is set as true but no accelerator is found, "
                      "then device pinned memory won't be used.", stacklevel=3)
        return False, None
    from ...backends import get_backend
    from ..._device import device
    if not get_backend(device(acc.type, accelerator.current_device_index())).pins_host_memory:
        # torch's answer for an accelerator without pinned memory (MPS): warn, do not pin.
        warnings.warn(f"'pin_memory' argument is set as true but not supported on {acc.type} "
                      "now, then device pinned memory won't be used.", stacklevel=3)
        return False, None
    return True, acc.type


class _BaseDataLoaderIter:
    def __init__(self, loader):
        self._dataset = loader.dataset
        self._is_iterable = loader._dataset_kind_iterable
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._pin_memory, self._pin_memory_device = _pinning_device(loader)
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = int(empty((), dtype=dt.int64).random_(generator=loader.generator).item())
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    def __iter__(self):
        return self

    def _reset(self, loader, first_iter=False):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_index(self):
        return next(self._sampler_iter)

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        if (self._is_iterable and self._IterableDataset_len_called is not None
                and self._num_yielded > self._IterableDataset_len_called):
            msg = (f"Length of IterableDataset {self._dataset} was reported to be "
                   f"{self._IterableDataset_len_called}(when accessing len(dataloader)), but "
                   f"{self._num_yielded} samples have been fetched. ")
            if self._num_workers > 0:
                msg += ("For multiprocessing data-loading, this could be caused by not properly "
                        "configuring the IterableDataset replica at each worker. Please see "
                        "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset "
                        "for examples.")
            warnings.warn(msg, stacklevel=2)
        return data

    def __len__(self):
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError("{} cannot be pickled", self.__class__.__name__)


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._dataset_fetcher = create_fetcher(self._is_iterable, self._dataset,
                                               self._auto_collation, self._collate_fn,
                                               self._drop_last)

    def _next_data(self):
        index = self._next_index()
        data = self._dataset_fetcher.fetch(index)
        if self._pin_memory:
            data = pin_memory(data, self._pin_memory_device)
        return data


_live_iterators = weakref.WeakSet()


@atexit.register
def _shutdown_live_iterators():
    for iterator in list(_live_iterators):
        iterator._shutdown_workers()


def _disown_inherited_workers():
    """In a child forked by ``os.fork``, stop ``multiprocessing`` from treating the parent's
    workers as this process's children: its exit handler would terminate and join them, ending
    the parent's epoch. (Children that ``multiprocessing`` starts reset that set themselves.)"""
    children = multiprocessing.process._children
    for iterator in list(_live_iterators):
        for worker in iterator._workers:
            children.discard(worker)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_disown_inherited_workers)


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    # Class defaults, so that __del__ of an iterator whose __init__ failed early has nothing to do.
    _shutdown = True
    _owner_pid = None  # the process that started the workers, the only one that may stop them
    _pin_memory_thread = None

    def __init__(self, loader):
        super().__init__(loader)
        self._owner_pid = os.getpid()
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        self._shutdown = True  # until the workers exist
        self._pending_messages = []  # received but not yet handed out, in arrival order
        context = loader.multiprocessing_context or multiprocessing.get_context()
        self._shm_prefix = f"ember_dl_{os.getpid()}_{secrets.token_hex(6)}_"
        self._workers, self._index_conns, self._result_conns = [], [], []
        _live_iterators.add(self)
        try:
            for worker_id in range(self._num_workers):
                index_reader, index_writer = context.Pipe(duplex=False)
                result_reader, result_writer = context.Pipe(duplex=False)
                worker = context.Process(
                    target=worker_loop,
                    args=(self._is_iterable, self._dataset, index_reader, result_writer,
                          self._auto_collation, self._collate_fn, self._drop_last,
                          self._base_seed, loader.worker_init_fn, worker_id, self._num_workers,
                          f"{self._shm_prefix}w{worker_id}_", os.getpid()),
                    daemon=True)
                self._workers.append(worker)
                self._index_conns.append(index_writer)
                self._result_conns.append(result_reader)
                self._shutdown = False
                worker.start()
                # The worker holds its own ends now.
                index_reader.close()
                result_writer.close()
        except BaseException:
            self._shutdown_workers()
            raise
        self._reader_worker = {conn: i for i, conn in enumerate(self._result_conns)}
        self._sentinel_worker = {w.sentinel: i for i, w in enumerate(self._workers)}
        if self._pin_memory:
            # The thread receives from the result pipes from now on; the iterator reads its
            # queue (see _receive).
            from ... import accelerator
            self._pin_memory_thread = PinMemoryThread(
                self._result_conns, accelerator.current_device_index(), self._pin_memory_device)
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter=False):
        super()._reset(loader, first_iter)
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info = {}  # send index -> (worker id,) or (worker id, data) once arrived
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            # Drain what the workers still had for the previous epoch, up to their echo.
            for conn in self._index_conns:
                conn.send(_ResumeIteration())
            pending = self._num_workers
            while pending > 0:
                idx, _ = self._get_data()
                if isinstance(idx, _ResumeIteration):
                    pending -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _receive(self, deadline):
        """The next ``(send index, data)`` from any worker; raises if one died or the deadline
        passed."""
        if self._pin_memory_thread is not None:
            return self._receive_pinned(deadline)
        while True:
            if self._pending_messages:
                return self._pending_messages.pop(0)
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready = multiprocessing.connection.wait(
                self._result_conns + list(self._sentinel_worker), remaining)
            if not ready:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
            conns = [r for r in ready if r in self._reader_worker]
            for conn in conns:
                try:
                    message = conn.recv()
                except (EOFError, OSError):
                    continue  # the worker died: its sentinel says so below
                finally:
                    shared_memory.release_received()
                self._pending_messages.append(message)
            if self._pending_messages:
                continue
            self._check_dead_workers()

    def _receive_pinned(self, deadline):
        """``_receive`` when the pinning thread reads the pipes: its queue, looking at the
        workers' health and the deadline between polls."""
        import queue
        out = self._pin_memory_thread.out
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            wait = 0.1 if remaining is None else min(0.1, remaining)
            try:
                return out.get(timeout=wait)
            except queue.Empty:
                pass
            if out.empty():
                self._check_dead_workers()  # a dead worker is the cause to report, if any
            if not self._pin_memory_thread.is_alive() and out.empty():
                self._shutdown_workers()
                raise RuntimeError("Pin memory thread exited unexpectedly")
            if remaining is not None and remaining <= 0 and out.empty():
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")

    def _check_dead_workers(self):
        dead = [w for i, w in enumerate(self._workers)
                if self._workers_status[i] and w.exitcode is not None]
        if dead:
            pids = ", ".join(str(w.pid) for w in dead)
            reasons = "; ".join(_exit_reason(w) for w in dead)
            self._shutdown_workers()
            raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly{reasons}")
        for i, w in enumerate(self._workers):
            if not self._workers_status[i] and w.exitcode is not None:
                self._drop_worker_handles(i)

    def _drop_worker_handles(self, worker_id):
        """Stop waiting on a worker that was told to exit."""
        self._sentinel_worker.pop(self._workers[worker_id].sentinel, None)

    def _get_data(self):
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        try:
            return self._receive(deadline)
        except RuntimeError:
            raise
        except BaseException:
            # Ctrl-C or another interruption while waiting: do not leave workers behind.
            self._shutdown_workers()
            raise

    def _next_data(self):
        while True:
            # Skip batches that will never come: sent to a worker whose IterableDataset ended.
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info:
                    worker_id = info[0]
                    if len(info) == 2 or self._workers_status[worker_id]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration

            if len(self._task_info[self._rcvd_idx]) == 2:
                worker_id, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if self._is_iterable and isinstance(data, _IterableDatasetStopIteration):
                if self._persistent_workers:
                    self._workers_status[data.worker_id] = False
                else:
                    self._mark_worker_as_unavailable(data.worker_id)
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                if not self._in_order:
                    worker_id = self._task_info.pop(idx)[0]
                    return self._process_data(data, worker_id)
                self._task_info[idx] += (data,)
            else:
                worker_id = self._task_info.pop(idx)[0]
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

    def _try_put_index(self):
        max_tasks = self._prefetch_factor * self._num_workers
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):
            worker_id = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker_id]:
                if self._in_order:
                    break
                # Out of order, a slow worker should not hold more than its share.
                if self._workers_num_tasks[worker_id] < max_tasks // sum(self._workers_status):
                    break
        else:
            return
        self._index_conns[worker_id].send((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_id,)
        self._workers_num_tasks[worker_id] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _process_data(self, data, worker_id):
        self._workers_num_tasks[worker_id] -= 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return data

    def _mark_worker_as_unavailable(self, worker_id):
        """An exhausted worker of an IterableDataset is told to exit."""
        self._workers_status[worker_id] = False
        try:
            self._index_conns[worker_id].send(None)
        except OSError:
            pass

    def _shutdown_workers(self):
        if self._shutdown:
            return
        self._shutdown = True
        _live_iterators.discard(self)
        if os.getpid() != self._owner_pid:
            # A copy inherited through fork (a worker of another loader, a user's child process)
            # being finalised: the workers, pipes and shared-memory files belong to the process
            # that started them, which still uses them. Telling the workers to stop would end
            # its epoch, and joining them is not even allowed here; only drop the references.
            self._workers, self._index_conns, self._result_conns = [], [], []
            self._pending_messages = []
            self._task_info = {}
            return
        if self._pin_memory_thread is not None:
            # Stopped before the pipes it reads are closed.
            self._pin_memory_thread.stop()
        for conn in self._index_conns:
            try:
                conn.send(None)
            except OSError:
                pass
        deadline = time.monotonic() + _JOIN_TIMEOUT
        for worker in self._workers:
            if worker.pid is None:
                continue
            worker.join(max(0.0, deadline - time.monotonic()))
            if worker.is_alive():
                worker.terminate()
                worker.join(1.0)
                if worker.is_alive():
                    worker.kill()
                    worker.join()
        for conn in self._index_conns + self._result_conns:
            conn.close()
        shared_memory.remove_leftovers(self._shm_prefix)

    def __del__(self):
        self._shutdown_workers()


def _exit_reason(worker):
    code = worker.exitcode
    if code is not None and code < 0:
        try:
            import signal
            return f". Worker {worker.pid} was killed by signal: {signal.Signals(-code).name}."
        except ValueError:
            pass
    return f". Worker {worker.pid} exited with code {code}."
