"""``DistributedDataParallel``, as ``torch.nn.parallel.distributed``: it synchronises gradients
over a process group, and Ember cannot create one yet (``ember.distributed`` has no backend),
so constructing it raises PyTorch's error for a missing default group, or says why a given
group cannot be used."""
from ... import distributed as dist
from ..modules.module import Module

__all__ = ["DistributedDataParallel"]


class DistributedDataParallel(Module):
    """Data parallelism over processes, as ``torch.nn.parallel.DistributedDataParallel``.
    Needs an initialised process group, which no Ember process can have yet."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=True, init_sync=True, process_group=None,
                 bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None,
                 mixed_precision=None, device_mesh=None, skip_all_reduce_unused_params=False,
                 bucket_cap_mb_list=None, batched_grad_copy=False, forward_sync_buffers=None):
        super().__init__()
        if (delay_all_reduce_named_params is not None) != (param_to_hook_all_reduce is not None):
            raise ValueError("delay_all_reduce_named_params and param_to_hook_all_reduce need to "
                             "be set at the same time.")
        if process_group is not None and device_mesh is not None:
            raise RuntimeError("Cannot specify both process_group and device_mesh arguments.")
        if process_group is None and device_mesh is None:
            dist._get_default_group()
        raise RuntimeError("DistributedDataParallel: ember.distributed has no communication "
                           "backend yet, so no process group or device mesh can be used")
