"""``ember.multiprocessing``: the standard library's ``multiprocessing``, with tensors sent
through its queues, pipes and to spawned processes as views of shared memory, as
``torch.multiprocessing``.

Everything ``multiprocessing`` exports is re-exported unchanged (``Process``, ``Queue``,
``Pool``, ``get_context``…); importing this module registers the tensor reducers
(``reductions.py``) with ``multiprocessing.reduction.ForkingPickler``, which every context's
queues and pipes use, so ``import ember.multiprocessing as mp`` is all a script needs.
``spawn``/``start_processes`` (``spawn.py``) run ``fn(i, *args)`` in ``nprocs`` processes and
re-raise a child's failure in the parent.
"""
import multiprocessing
import sys
from multiprocessing import *  # noqa: F401,F403

from .reductions import register_reducers
from .spawn import (ProcessContext, ProcessExitedException, ProcessRaisedException,  # noqa: F401
                    SpawnContext, spawn, start_processes)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies"]
__all__ += multiprocessing.__all__

if sys.platform in ("darwin", "win32"):
    _sharing_strategy = "file_system"
    _all_sharing_strategies = {"file_system"}
else:
    _sharing_strategy = "file_descriptor"
    _all_sharing_strategies = {"file_descriptor", "file_system"}


def set_sharing_strategy(new_strategy):
    """Choose how tensors made shared from now on are handed to other processes:
    ``"file_descriptor"`` (a duplicated descriptor of an anonymous file) or ``"file_system"``
    (a named file in ``/dev/shm``)."""
    global _sharing_strategy
    if new_strategy not in _all_sharing_strategies:
        raise AssertionError(f"invalid sharing strategy {new_strategy!r}, "
                             f"expected one of {_all_sharing_strategies}")
    _sharing_strategy = new_strategy


def get_sharing_strategy():
    return _sharing_strategy


def get_all_sharing_strategies():
    return _all_sharing_strategies


register_reducers()
