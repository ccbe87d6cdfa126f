"""``ember.distributed``: the names of ``torch.distributed``, so that scripts which import it
unconditionally run, and which report truthfully that no communication backend exists yet.

Ember has no process-group backend yet (MPI through mpi4py and NCCL through CuPy are planned),
so ``is_available()`` is False, no process group can exist, and everything that needs one
raises what PyTorch raises before ``init_process_group``: the ValueError "Default process group
has not been initialized…" (``destroy_process_group``: PyTorch's AssertionError).
``init_process_group`` itself raises a RuntimeError saying there is no backend.
``Backend``, ``ReduceOp``, ``group`` and ``GroupMember`` are PyTorch's constants.
"""
import enum
import os

__all__ = ["is_available", "is_initialized", "is_mpi_available", "is_nccl_available",
           "is_gloo_available", "is_ucc_available", "is_xccl_available",
           "is_torchelastic_launched", "Backend", "ReduceOp", "group", "GroupMember",
           "init_process_group", "destroy_process_group", "new_group", "get_rank",
           "get_world_size", "get_backend", "get_process_group_ranks", "barrier",
           "monitored_barrier", "all_reduce", "broadcast", "reduce", "all_gather", "gather",
           "scatter", "reduce_scatter", "all_to_all", "all_to_all_single",
           "all_gather_into_tensor", "reduce_scatter_tensor", "send", "recv", "isend", "irecv",
           "all_gather_object", "broadcast_object_list", "scatter_object_list", "gather_object"]

_NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call "
                    "init_process_group.")


def is_available():
    """False: Ember has no distributed backend yet."""
    return False


def is_initialized():
    """Whether the default process group exists (never, without a backend)."""
    return False


def is_mpi_available():
    return False


def is_nccl_available():
    return False


def is_gloo_available():
    return False


def is_ucc_available():
    return False


def is_xccl_available():
    return False


def is_torchelastic_launched():
    """Whether this process was started by ``torchrun`` (which sets TORCHELASTIC_RUN_ID)."""
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


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
                               "_make_nccl_premul_sum); Ember has no NCCL backend yet")
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


class GroupMember:
    """``WORLD`` is the default process group (None until one is initialised);
    ``NON_GROUP_MEMBER`` marks a process outside a group."""
    WORLD = None
    NON_GROUP_MEMBER = -100


class group:
    WORLD = None


def _get_default_group():
    raise ValueError(_NOT_INITIALIZED)


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None):
    raise RuntimeError(
        f"ember.distributed has no communication backend yet, so init_process_group"
        f"(backend={backend!r}) cannot create a process group: Ember's MPI (mpi4py) and NCCL "
        "(CuPy) backends are not written yet. Run with a single process, or use "
        "ember.multiprocessing for processes on one machine.")


def destroy_process_group(group=None):
    if group == GroupMember.NON_GROUP_MEMBER:
        return
    raise AssertionError("Process group cannot be None")


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization=False, group_desc=None, device_id=None,
              sort_ranks=True):
    _get_default_group()


def get_rank(group=None):
    _get_default_group()


def get_world_size(group=None):
    _get_default_group()


def get_backend(group=None):
    _get_default_group()


def get_process_group_ranks(group):
    _get_default_group()


def barrier(group=None, async_op=False, device_ids=None, timeout=None):
    _get_default_group()


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    _get_default_group()


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    _get_default_group()


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    _get_default_group()


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    _get_default_group()


def all_gather(tensor_list, tensor, group=None, async_op=False):
    _get_default_group()


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    _get_default_group()


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    _get_default_group()


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    _get_default_group()


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    _get_default_group()


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None, async_op=False):
    _get_default_group()


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    _get_default_group()


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    _get_default_group()


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    _get_default_group()


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    _get_default_group()


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    _get_default_group()


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    _get_default_group()


def all_gather_object(object_list, obj, group=None):
    _get_default_group()


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    _get_default_group()


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None,
                        group=None, group_src=None):
    _get_default_group()


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    _get_default_group()
