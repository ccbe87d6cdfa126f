"""``ZeroRedundancyOptimizer``: optimizer state sharded across ranks (ZeRO stage 1), as
``torch.distributed.optim.ZeroRedundancyOptimizer``.

Every rank keeps the whole model, but each parameter is *owned* by one rank, and only the owner
holds its optimizer state and runs its update. ``step`` runs the wrapped optimizer on this rank's
parameters, then broadcasts every parameter from its owner, so all replicas leave the step equal;
optimizer memory per rank is about ``1 / world_size`` of a plain optimizer's.

The partition is PyTorch's, parameter for parameter, so checkpoints and per-rank behaviour match:
group by group, parameters sorted by size (largest first) go greedily to the rank with the fewest
elements so far (ties to the lowest rank). A parameter is never split across ranks.

``consolidate_state_dict(to)`` gathers the local optimizers' state dicts on one rank (PyTorch
sends them with ``broadcast``, for NCCL's sake; so does this, over the same public collectives),
and ``state_dict`` on that rank then returns PyTorch's global layout: what a plain optimizer over
all parameters would return, parameters numbered in group order.

``overlap_with_ddp=True`` is refused: it runs the step from inside DDP's gradient-bucket
communication hook (``ddp_zero_hook.py``) with functional optimizers, and Ember has neither.
"""
import collections
import copy
import io
from itertools import chain

from ... import distributed as dist
from ... import _dtype as dt
from ..._device import device as _device
from ..._tensor import Tensor
from ...ops.creation import empty, frombuffer, tensor
from ...optim.optimizer import Optimizer, _typename
from ...serialization import load, save

__all__ = ["ZeroRedundancyOptimizer"]


def _recursive_copy_to_device(value, device):
    """Copies of every tensor in nested lists, tuples and dicts, on ``device``; other values
    as they are. (Real copies: a local optimizer must never update, in place, tensors that
    belong to a state dict the caller still holds.)"""
    if isinstance(value, Tensor):
        return value.to(device).clone()
    if isinstance(value, (list, tuple)):
        values = [_recursive_copy_to_device(v, device) for v in value]
        return values if isinstance(value, list) else tuple(values)
    if isinstance(value, collections.abc.Mapping):
        return {k: _recursive_copy_to_device(v, device) for k, v in value.items()}
    return value


def _is_trainable(param):
    return param.requires_grad


def _broadcast_object(obj, src_rank, group, device):
    """``obj`` from ``src_rank`` to every rank of ``group`` (the source passes it, the others
    get it back): its serialised bytes travel as a uint8 tensor after their length, as PyTorch's
    helper does. Only tensors, containers and plain values are accepted on the way in
    (``weights_only``): an optimizer state dict needs nothing else, and unpickling a peer's
    bytes must not run code."""
    if dist.get_rank() == src_rank:
        buffer = io.BytesIO()
        save(obj, buffer)
        data = bytearray(buffer.getbuffer())
        length = tensor([len(data)], dtype=dt.int64, device=device)
        payload = frombuffer(data, dtype=dt.uint8).to(device)
        dist.broadcast(length, src=src_rank, group=group)
        dist.broadcast(payload, src=src_rank, group=group)
        return obj
    length = tensor([0], dtype=dt.int64, device=device)
    dist.broadcast(length, src=src_rank, group=group)
    payload = empty(int(length.item()), dtype=dt.uint8, device=device)
    dist.broadcast(payload, src=src_rank, group=group)
    return load(io.BytesIO(payload.cpu().numpy().tobytes()), map_location=device,
                weights_only=True)


def _global_rank(group, group_rank):
    """The default-group rank of ``group_rank`` in ``group``; collectives name their source by
    global rank, as in PyTorch."""
    if group is None or group is dist.group.WORLD:
        return group_rank
    return dist.get_global_rank(group, group_rank)


def _get_min_index(values):
    """``values.index(min(values))``: the first rank with the fewest elements."""
    min_index, min_value = -1, float("inf")
    for i, value in enumerate(values):
        if value < min_value:
            min_index, min_value = i, value
    return min_index


class ZeroRedundancyOptimizer(Optimizer):
    """Wraps ``optimizer_class`` and shards its state across the ranks of ``process_group``
    (default: the default group), as ``torch.distributed.optim.ZeroRedundancyOptimizer``.

    ``parameters_as_bucket_view=True`` packs each rank's parameters into one flat tensor (their
    ``.data`` become views of it), so the post-step synchronisation is one broadcast per rank
    instead of one per parameter. ``**defaults`` go to ``optimizer_class``. Every method that
    communicates (``step``, ``add_param_group``, ``consolidate_state_dict``) must be called on
    all ranks, in the same order. Typical use, after ``init_process_group``::

        opt = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=ember.optim.Adam,
                                      lr=0.01)
        ddp(inputs).sum().backward()
        opt.step()
    """

    def __init__(self, params, optimizer_class, process_group=None,
                 parameters_as_bucket_view=False, overlap_with_ddp=False, **defaults):
        if overlap_with_ddp:
            raise NotImplementedError(
                "ZeroRedundancyOptimizer(overlap_with_ddp=True) is not supported by Ember: it "
                "steps from inside DistributedDataParallel's gradient-bucket communication hook "
                "(torch's ddp_zero_hook.hook_with_zero_step) with a functional optimizer, and "
                "Ember has neither; use overlap_with_ddp=False and call step() after backward")
        params = self._verify_and_init_params(params)
        self._verify_same_dense_param_type()
        # The base constructor calls add_param_group, which re-partitions only once this
        # instance is fully built.
        self.initialized = False
        Optimizer.__init__(self, params, defaults)

        self._param_to_rank_cache = {}
        self._param_to_index_cache = {}
        self._partition_parameters_cache = []
        self._index_to_param_cache = []
        self._device_to_params_per_rank_cache = {}
        self._is_trainable_mask = self._get_is_trainable_mask()
        self._default_device = self._all_params[0].device

        self.process_group = process_group if process_group is not None else dist.group.WORLD
        self.world_size = dist.get_world_size(self.process_group)
        self.rank = dist.get_rank(self.process_group)
        self.global_rank = _global_rank(self.process_group, self.rank)
        self._overlap_with_ddp = False
        self._optim_defaults = defaults
        self._optim_constructor = optimizer_class
        self._init_local_optimizer()

        self.parameters_as_bucket_view = parameters_as_bucket_view
        self._buckets = []
        self._build_param_buckets()
        # Filled only on the rank a consolidate_state_dict call targets.
        self._all_state_dicts = []
        self.initialized = True

    # ---- construction checks ------------------------------------------------------------
    def _verify_and_init_params(self, params):
        if isinstance(params, Tensor):
            raise TypeError("`params` argument should be an iterable of Tensors, but got "
                            f"{_typename(params)}")
        try:
            all_params = list(params)
        except TypeError as e:
            raise TypeError("`params` argument should be an iterable of Tensors or dicts, but "
                            f"got {_typename(params)}") from e
        if len(all_params) == 0:
            raise ValueError("ZeroRedundancyOptimizer got an empty parameter list")
        all_tensors = all(isinstance(p, Tensor) for p in all_params)
        all_dicts = all(isinstance(p, dict) for p in all_params)
        if not all_tensors and not all_dicts:
            raise TypeError("`params` argument should be an iterable of Tensors or dicts")
        if all_tensors:
            self._all_params = all_params
        else:
            self._all_params = []
            for param_group in all_params:
                if "params" not in param_group:
                    raise ValueError("Each parameter group passed-in via `params` must have a "
                                     "'params' key mapping to the parameters in the group")
                self._all_params.extend(param_group["params"])
        return all_params

    def _verify_same_dense_param_type(self):
        """One dense type for all parameters (the buckets are single flat tensors)."""
        typename = _typename(self._all_params[0])
        if self._all_params[0].is_sparse:
            raise ValueError("ZeroRedundancyOptimizer only supports using the same dense type "
                             f"for all parameters but got {typename}")
        for param in self._all_params[1:]:
            other_typename = _typename(param)
            if other_typename != typename:
                raise ValueError("ZeroRedundancyOptimizer only supports using the same dense "
                                 f"type for all parameters but got both {typename} and "
                                 f"{other_typename}")

    def _get_is_trainable_mask(self):
        return [_is_trainable(p) for p in self._all_params]

    def _init_local_optimizer(self):
        # The local optimizer gets one group per global group, empty ones included, so group
        # indices agree between the two (and the empty-list check of a plain constructor is
        # not triggered by a rank that owns nothing).
        param_groups = self._partition_parameters()[self.rank]
        self.optim = self._optim_constructor(param_groups, **self._optim_defaults)
        self._sync_param_groups(self.optim.param_groups, self.param_groups)

    # ---- the partition ---------------------------------------------------------------------
    def _clear_cache(self):
        self._partition_parameters_cache.clear()
        self._param_to_rank_cache.clear()
        self._index_to_param_cache.clear()
        self._param_to_index_cache.clear()
        self._device_to_params_per_rank_cache.clear()

    def _partition_parameters(self):
        """Per rank, its list of parameter groups (copies of the global groups holding only
        that rank's parameters), by PyTorch's sorted greedy rule."""
        if len(self._partition_parameters_cache) == 0:
            self._partition_parameters_cache = [[] for _ in range(self.world_size)]
            sizes = [0] * self.world_size
            for param_group in self.param_groups:
                params_per_rank = [[] for _ in range(self.world_size)]
                for param in sorted(param_group["params"], key=lambda t: t.numel(),
                                    reverse=True):
                    rank = _get_min_index(sizes)
                    params_per_rank[rank].append(param)
                    sizes[rank] += param.numel()
                for rank, params in enumerate(params_per_rank):
                    rank_param_group = copy.copy(param_group)
                    rank_param_group["params"] = params
                    self._partition_parameters_cache[rank].append(rank_param_group)
        return self._partition_parameters_cache

    @property
    def _param_to_rank(self):
        if len(self._param_to_rank_cache) == 0:
            for rank, param_groups in enumerate(self._partition_parameters()):
                for param_group in param_groups:
                    for param in param_group["params"]:
                        self._param_to_rank_cache[param] = rank
        return self._param_to_rank_cache

    @property
    def _param_to_index(self):
        """Each parameter's index in the global state dict (group order)."""
        if len(self._param_to_index_cache) == 0:
            self._param_to_index_cache = {
                p: i for i, p in enumerate(chain.from_iterable(g["params"]
                                                               for g in self.param_groups))}
        return self._param_to_index_cache

    @property
    def _index_to_param(self):
        if len(self._index_to_param_cache) == 0:
            self._index_to_param_cache = list(chain.from_iterable(g["params"]
                                                                  for g in self.param_groups))
        return self._index_to_param_cache

    @property
    def _device_to_params_per_rank(self):
        """``{device: [params of rank 0, params of rank 1, ...]}``: a bucket holds one device's
        parameters."""
        if len(self._device_to_params_per_rank_cache) == 0:
            for rank, param_groups in enumerate(self._partition_parameters()):
                for param_group in param_groups:
                    for param in param_group["params"]:
                        per_rank = self._device_to_params_per_rank_cache.setdefault(
                            param.device, [[] for _ in range(self.world_size)])
                        per_rank[rank].append(param)
        return self._device_to_params_per_rank_cache

    def add_param_group(self, param_group):
        """Add a group on every rank (all ranks must call it: the partition, and so who
        broadcasts what, changes). Parameters already placed keep their owner."""
        super().add_param_group(param_group)
        if self.initialized:
            self._clear_cache()
            param_groups = self._partition_parameters()[self.rank]
            if len(param_groups) == len(self.optim.param_groups) + 1:
                self.optim.add_param_group(param_groups[-1])
            if self.parameters_as_bucket_view:
                self._build_param_buckets()

    # ---- buckets ------------------------------------------------------------------------------
    def _build_param_buckets(self):
        """With ``parameters_as_bucket_view``, one flat tensor per (device, rank) holding that
        rank's trainable parameters, whose ``.data`` become views into it."""
        if not self.parameters_as_bucket_view:
            return
        self._buckets = []
        for device, params_per_rank in self._device_to_params_per_rank.items():
            device_buckets = []
            for params in params_per_rank:
                trainable = [p for p in params if _is_trainable(p)]
                for param in params:
                    if not _is_trainable(param):
                        # A frozen parameter may still be a view of an old bucket.
                        param.data = param.data.detach().clone()
                size = sum(p.numel() for p in trainable)
                if size == 0:
                    bucket = empty(1, dtype=params[0].dtype if params else
                                   self._all_params[0].dtype, device=device).zero_()
                else:
                    bucket = empty(size, dtype=trainable[0].dtype, device=device)
                    offset = 0
                    for param in trainable:
                        end = offset + param.numel()
                        bucket[offset:end].copy_(param.data.flatten())
                        param.data = bucket[offset:end].view_as(param.data)
                        offset = end
                device_buckets.append(bucket)
            self._buckets.append(device_buckets)

    # ---- step ---------------------------------------------------------------------------------
    @staticmethod
    def _sync_param_groups(src_param_groups, dst_param_groups):
        """Copy every hyperparameter (not the parameters) from one list of groups to the other:
        a scheduler writes ``lr`` into the exposed groups, the local optimizer reads its own."""
        if len(src_param_groups) != len(dst_param_groups):
            raise AssertionError("Mismatch between number of source and destination parameter "
                                 "groups")
        for src, dst in zip(src_param_groups, dst_param_groups):
            for key in src:
                if key != "params":
                    dst[key] = src[key]

    def _local_step(self, closure=None, **kwargs):
        is_trainable_mask = self._get_is_trainable_mask()
        if is_trainable_mask != self._is_trainable_mask:
            # Frozen parameters leave the buckets (and thawed ones join them).
            self._build_param_buckets()
            self._is_trainable_mask = is_trainable_mask
        self._sync_param_groups(self.param_groups, self.optim.param_groups)
        loss = (self.optim.step(**kwargs) if closure is None
                else self.optim.step(closure=closure, **kwargs))
        self._sync_param_groups(self.optim.param_groups, self.param_groups)
        return loss

    def _broadcast_params_from_rank(self, rank):
        """Async broadcasts of ``rank``'s parameters (or its buckets) from it; their Works."""
        src = _global_rank(self.process_group, rank)
        if self.parameters_as_bucket_view:
            return [dist.broadcast(device_buckets[rank], src=src, group=self.process_group,
                                   async_op=True)
                    for device_buckets in self._buckets]
        return [dist.broadcast(param.data, src=src, group=self.process_group, async_op=True)
                for param_group in self._partition_parameters()[rank]
                for param in param_group["params"]]

    def _sync_params(self):
        """Every rank's updated parameters to every other rank."""
        handles = []
        for rank in range(self.world_size):
            handles.extend(self._broadcast_params_from_rank(rank))
        for handle in handles:
            handle.wait()

    def step(self, closure=None, **kwargs):
        """Step this rank's parameters, then broadcast every parameter from its owner. Extra
        keyword arguments go to the local optimizer's ``step``."""
        loss = self._local_step(closure=closure, **kwargs)
        self._sync_params()
        return loss

    # ---- checkpoints --------------------------------------------------------------------------
    def consolidate_state_dict(self, to=0):
        """Collect every rank's local optimizer state on rank ``to`` (of the process group);
        call it on all ranks, then ``state_dict()`` on ``to``."""
        self._sync_param_groups(self.param_groups, self.optim.param_groups)
        cpu = _device("cpu")
        empty_messenger = tensor([0], dtype=dt.uint8, device=self._default_device)
        self._all_state_dicts = []
        for rank in range(self.world_size):
            global_rank = _global_rank(self.process_group, rank)
            if self.rank == to:
                if rank == self.rank:
                    local_state_dict = self.optim.state_dict()
                else:
                    local_state_dict = _broadcast_object(
                        empty_messenger, src_rank=global_rank, group=self.process_group,
                        device=self._default_device)
                self._all_state_dicts.append(_recursive_copy_to_device(local_state_dict, cpu))
            elif rank == self.rank:
                _broadcast_object(self.optim.state_dict(), src_rank=self.global_rank,
                                  group=self.process_group, device=self._default_device)
            elif rank != to:
                # broadcast reaches every rank; the bystanders receive and drop it.
                _broadcast_object(empty_messenger, src_rank=global_rank,
                                  group=self.process_group, device=self._default_device)

    def state_dict(self):
        """The global state (PyTorch's layout, as a plain optimizer over all parameters gives
        it) last consolidated on this rank; RuntimeError if none was."""
        if len(self._all_state_dicts) == 0:
            raise RuntimeError("Optimizer state has not been consolidated on this rank. Please "
                               f"call `consolidate_state_dict(to={self.rank})` on all ranks "
                               "beforehand if you meant to save the global state.")
        state_dict = super().state_dict()
        for rank, local_state_dict in enumerate(self._all_state_dicts):
            local_param_groups = local_state_dict["param_groups"]
            global_param_groups = self._partition_parameters()[rank]
            if len(local_param_groups) != len(global_param_groups):
                raise AssertionError("Mismatch between number of local and global parameter "
                                     "groups")
            for local_group, global_group in zip(local_param_groups, global_param_groups):
                # The local group numbers its parameters; the global one holds the tensors.
                local_indices = local_group["params"]
                global_params = global_group["params"]
                if len(local_indices) != len(global_params):
                    raise AssertionError("Mismatch between number of local and global "
                                         "parameters in parameter group")
                for local_index, global_param in zip(local_indices, global_params):
                    if local_index in local_state_dict["state"]:
                        state_dict["state"][self._param_to_index[global_param]] = (
                            local_state_dict["state"][local_index])
        state_dict["state"] = dict(sorted(state_dict["state"].items()))
        return state_dict

    def load_state_dict(self, state_dict):
        """Load a global state dict (as ``state_dict`` returns) on every rank: each local
        optimizer takes the state of the parameters its rank owns."""
        # A shallow copy, so the caller's dict keeps the other ranks' entries (PyTorch
        # overwrites them with None in the dict it was given).
        state_dict = dict(state_dict, state=dict(state_dict["state"]))
        for index, value in state_dict["state"].items():
            param = self._index_to_param[index]
            if self._param_to_rank[param] != self.rank:
                state_dict["state"][index] = None
            else:
                local = _recursive_copy_to_device(value, param.device)
                # Scalar state (Adam's step) lives on the CPU, as PyTorch keeps it.
                for name, item in local.items():
                    if isinstance(item, Tensor) and item.dim() == 0:
                        local[name] = item.cpu()
                self.optim.state[param] = local
        super().load_state_dict(state_dict)
        self._sync_param_groups(state_dict["param_groups"], self.param_groups)
        self._sync_param_groups(self.param_groups, self.optim.param_groups)
