"""The worker process: receive index batches, fetch and collate them, send the batches back.
Also ``get_worker_info`` and the wrapper that carries a worker's exception to the main process."""
import faulthandler
import os
import random
import signal
import sys
import traceback
from dataclasses import dataclass

import numpy as np

from .... import _random
from ....backends._malloc import keep_freed_memory_for_reuse
from . import shared_memory
from .fetch import create_fetcher

__all__ = ["WorkerInfo", "get_worker_info", "ExceptionWrapper"]

#: how often an idle worker checks that the main process is still alive (seconds)
WATCHDOG_INTERVAL = 1.0

_worker_info = None


@dataclass(frozen=True)
class WorkerInfo:
    """What a worker knows about itself: ``id``, ``num_workers``, ``seed`` (this worker's, also
    given to ``random`` and ``ember.manual_seed``) and its copy of the ``dataset``."""
    id: int
    num_workers: int
    seed: int
    dataset: object


def get_worker_info():
    """This worker's ``WorkerInfo`` inside a DataLoader worker process, ``None`` in the main
    process. An ``IterableDataset`` uses it to give each worker its own share of the data."""
    return _worker_info


class ExceptionWrapper:
    """An exception's type and formatted traceback, which (unlike the traceback object) can be
    pickled to another process and re-raised there."""

    def __init__(self, exc_info=None, where="in background"):
        exc_info = exc_info if exc_info is not None else sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            # KeyError shows repr() of its argument, which would print the traceback as one line.
            msg = _KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            # Exception types whose constructor needs other arguments.
            raise RuntimeError(msg) from None
        raise exception


class _KeyErrorMessage(str):
    def __repr__(self):
        return self


class _IterableDatasetStopIteration:
    """Sent by a worker whose copy of an IterableDataset is exhausted."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


class _ResumeIteration:
    """Sent to persistent workers at the start of a new epoch, and echoed back once reset."""


def numpy_seed(base_seed, worker_id):
    """The seed for NumPy's global RNG: a SeedSequence hash of (worker id, base seed), so that
    nearby base seeds give unrelated NumPy streams."""
    return np.random.SeedSequence([worker_id, base_seed & 0xffff_ffff, base_seed >> 32]).generate_state(4)


def _parent_alive(parent_pid):
    return os.getppid() == parent_pid


def worker_loop(is_iterable, dataset, index_conn, result_conn, auto_collation, collate_fn,
                drop_last, base_seed, init_fn, worker_id, num_workers, shm_prefix, parent_pid):
    global _worker_info
    # Ctrl-C reaches the whole process group; the main process handles it and stops us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    faulthandler.enable()
    keep_freed_memory_for_reuse()
    seed = base_seed + worker_id
    random.seed(seed)
    _random.manual_seed(seed)
    np.random.seed(numpy_seed(base_seed, worker_id))
    _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
    shared_memory.set_prefix(shm_prefix)
    shared_memory.register_reducers()
    where = f"in DataLoader worker process {worker_id}"

    init_exception = None
    fetcher = None
    try:
        if init_fn is not None:
            init_fn(worker_id)
        fetcher = create_fetcher(is_iterable, dataset, auto_collation, collate_fn, drop_last)
    except Exception:
        init_exception = ExceptionWrapper(where=where)

    iteration_end = False
    while True:
        try:
            if not index_conn.poll(WATCHDOG_INTERVAL):
                if not _parent_alive(parent_pid):
                    break
                continue
            message = index_conn.recv()
        except (EOFError, OSError):
            break
        if message is None:
            break
        if isinstance(message, _ResumeIteration):
            if init_exception is None:
                fetcher = create_fetcher(is_iterable, dataset, auto_collation, collate_fn, drop_last)
            iteration_end = False
            result_conn.send((message, None))
            continue
        if iteration_end:
            continue
        send_idx, index = message
        if init_exception is not None:
            data, init_exception = init_exception, None
        else:
            try:
                data = fetcher.fetch(index)
            except StopIteration:
                if not is_iterable:
                    data = ExceptionWrapper(where=where)
                else:
                    data = _IterableDatasetStopIteration(worker_id)
                    iteration_end = True
            except Exception:
                data = ExceptionWrapper(where=where)
        try:
            result_conn.send((send_idx, data))
        except (BrokenPipeError, ConnectionResetError):
            break
        except Exception:
            # The batch itself could not be pickled: report that instead.
            result_conn.send((send_idx, ExceptionWrapper(where=where)))
        del data
