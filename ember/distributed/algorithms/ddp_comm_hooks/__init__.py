"""DDP communication hooks, as ``torch.distributed.algorithms.ddp_comm_hooks``:
``default_hooks`` (all-reduce, fp16/bf16 compression), ``DDPCommHookType`` and
``register_ddp_comm_hook``. PyTorch's PowerSGD, quantization and debugging hooks are not in
Ember, so their ``DDPCommHookType`` members do not exist."""
import sys
from enum import Enum
from functools import partial

from . import default_hooks as default

__all__ = ["DDPCommHookType", "register_ddp_comm_hook"]


def _ddp_comm_hook_wrapper(comm_hook, model, state):
    model.register_comm_hook(state, comm_hook)


if sys.version_info >= (3, 11):
    from enum import member as _enum_member
else:  # before 3.11 a partial in an Enum body is already a member
    def _enum_member(x):
        return x


class DDPCommHookType(Enum):
    """The built-in hooks by name: ``DDPCommHookType.ALLREDUCE.value(model=ddp,
    state=process_group)`` registers the all-reduce hook."""
    ALLREDUCE = _enum_member(partial(_ddp_comm_hook_wrapper, comm_hook=default.allreduce_hook))
    FP16_COMPRESS = _enum_member(partial(_ddp_comm_hook_wrapper,
                                         comm_hook=default.fp16_compress_hook))
    BF16_COMPRESS = _enum_member(partial(_ddp_comm_hook_wrapper,
                                         comm_hook=default.bf16_compress_hook))


def register_ddp_comm_hook(comm_hook_type, model, state=None):
    """Register the hook ``comm_hook_type`` (a ``DDPCommHookType``) on the DDP ``model``."""
    comm_hook_type.value(model=model, state=state)
