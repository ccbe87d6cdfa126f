"""``ember.distributed``: ``torch.distributed`` over MPI (mpi4py, CPU tensors) and NCCL (CuPy,
CUDA tensors).

The process groups and collectives live in ``distributed_c10d``, the backends in
``process_group_mpi`` / ``process_group_nccl``, the key-value stores in ``store`` and the
``init_method`` URLs in ``rendezvous``. Ember has no gloo backend: "mpi" serves CPU tensors.
"""
import importlib.util
import os

from .process_group import (DistError, DistBackendError, DistNetworkError, DistStoreError,
                            ProcessGroup, Work)
from .distributed_c10d import *  # noqa: F401,F403  (torch's public names)
from .distributed_c10d import __all__ as _c10d_all
from .store import Store, TCPStore, FileStore, HashStore, PrefixStore
from .rendezvous import rendezvous, register_rendezvous_handler

__all__ = ["is_available", "is_mpi_available", "is_nccl_available", "is_gloo_available",
           "is_ucc_available", "is_xccl_available", "is_torchelastic_launched", "DistError",
           "DistBackendError", "DistNetworkError", "DistStoreError", "ProcessGroup", "Work",
           "Store", "TCPStore", "FileStore", "HashStore", "PrefixStore", "rendezvous",
           "register_rendezvous_handler", *_c10d_all]


def is_mpi_available():
    """Whether mpi4py can be imported (checked without initialising MPI)."""
    return importlib.util.find_spec("mpi4py") is not None


def is_nccl_available():
    """Whether CuPy is installed and loads NCCL (no GPU is needed, as torch's answer is
    about the build)."""
    if importlib.util.find_spec("cupy") is None:
        return False
    from .process_group_nccl import is_nccl_available as loads
    return loads()


def is_available():
    """Whether a communication backend is installed (mpi4py or CuPy's NCCL)."""
    return is_mpi_available() or is_nccl_available()


def is_gloo_available():
    return False  # Ember has no gloo: the "mpi" backend serves CPU tensors


def is_ucc_available():
    return False


def is_xccl_available():
    return False


def is_torchelastic_launched():
    """Whether this process was started by ``torchrun`` (which sets TORCHELASTIC_RUN_ID)."""
    return os.getenv("TORCHELASTIC_RUN_ID") is not None
