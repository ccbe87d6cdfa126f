"""``fully_shard``: fully sharded data parallelism with the semantics of PyTorch's FSDP2
(``torch.distributed.fsdp.fully_shard``).

``fully_shard(module)`` makes one *parameter group* of the parameters under ``module`` that no
earlier ``fully_shard`` call on a submodule took (so it is applied bottom up: each layer, then
the root). Each parameter is chunked along dim 0 over the ranks as ``torch.chunk`` does (every
rank gets ``ceil(rows / world_size)`` rows, the last ranks fewer or none) and the module's
registered parameter becomes this rank's chunk: ``module.parameters()``, ``state_dict()`` and an
optimizer built on them see only the local shards, so parameter, gradient and optimizer memory
are ``1 / world_size`` of the model's.

Around each call of the module:

* forward pre-hook: one ``all_gather_into_tensor`` per group brings every rank's (padded)
  chunks, which are copied into the full parameters; the module's registered parameters are
  replaced by them for the forward;
* forward hook: with ``reshard_after_forward``, the full parameters' memory is released and the
  shards are registered again;
* full backward pre-hook (the gradients of the module's outputs are known, none of its own
  backward has run): if the memory was released, the group is all-gathered again;
* when the gradients of all the group's full parameters are complete, one
  ``reduce_scatter_tensor`` (AVG) over the group turns them into each rank's shard gradients,
  which accumulate into the shards' ``.grad``, and the full parameters are released.

How this differs from PyTorch
-----------------------------
*No DTensor.* PyTorch's sharded parameter is a ``DTensor`` (``Shard(0)`` on a device mesh)
whose ``to_local()`` is the chunk and which ``full_tensor()`` can gather. Here the sharded
parameter is a plain ``Parameter`` holding the local chunk (its ``shape`` is the chunk's, not
the full shape); the full shape, the chunk layout and the process group live in the module's
FSDP state, and ``module.unshard()`` is the way to see full values (``module.weight`` is then
the full tensor, until ``module.reshard()``). A checkpoint of an FSDP module therefore holds
per-rank chunks, to be loaded back on the same number of ranks.

*How full parameters reach autograd.* PyTorch registers full leaf parameters, lets their
``AccumulateGrad`` fill full gradients, and runs the reduce-scatter from a post-backward hook
(plus a final callback for parameters that got no gradient). Here the full parameters are the
outputs of one autograd function per group whose input is the shards: its backward runs once
per call of the module, when the engine has the gradients of all of them (a parameter that got
none adds zeros to the reduction, and its shard gets no gradient on this rank), reduce-scatters,
and returns the shard gradients, so ``AccumulateGrad`` on the shards does the
accumulation, ``no_grad`` forwards record nothing, and ``autograd.grad`` with respect to the
shards works too. During forward the registered parameters are therefore non-leaf tensors.

*How memory is released.* PyTorch frees the full parameters by resizing their storage to 0 and
re-allocates it for the backward all-gather, so tensors that autograd saved (views of the
weights) see the new data. NumPy arrays cannot change their memory under live views, so each
group's full parameters live in one private anonymous memory mapping: resharding returns its
pages to the operating system (``madvise(MADV_DONTNEED)``: the resident memory really drops,
and the mapping reads as zeros), and the backward all-gather writes the values back into the
same addresses. Should a module's parameters be used in backward without its backward pre-hook
having re-gathered them (they were used outside the module's outputs' reach), the group's
backward raises instead of returning gradients computed on released memory. This needs the
NumPy (CPU) backend; CUDA parameters are refused (CuPy memory held by views cannot be released
in place). There is no prefetching: each all-gather runs when its module is called.
"""
import dataclasses
import math
import mmap
import weakref

import numpy as np

from ... import distributed as dist
from ..._tensor import _wrap_with
from ...autograd.function import Function, once_differentiable
from ...nn.modules.module import Module
from ...nn.parameter import Parameter

__all__ = ["fully_shard", "FSDPModule", "UnshardHandle", "MixedPrecisionPolicy",
           "OffloadPolicy", "CPUOffloadPolicy"]


@dataclasses.dataclass(frozen=True)
class MixedPrecisionPolicy:
    """PyTorch's mixed-precision settings for ``fully_shard``. Only the default (every dtype
    None: compute, gather and reduce in the parameters' own dtype) is supported."""
    param_dtype: object = None
    reduce_dtype: object = None
    output_dtype: object = None
    cast_forward_inputs: bool = True


@dataclasses.dataclass
class OffloadPolicy:
    """No offloading (the default of ``fully_shard``)."""


@dataclasses.dataclass
class CPUOffloadPolicy(OffloadPolicy):
    """PyTorch's policy that keeps shards on the CPU and moves them to the GPU for compute;
    ``fully_shard`` refuses it (Ember's FSDP runs on the CPU backend only)."""
    pin_memory: bool = True


# ---- parameters and groups --------------------------------------------------------------------
class _FSDPParam:
    """One managed parameter: where it is registered (``owners``: every ``(module, name)``
    holding it, so tied weights stay tied), its full shape, its chunk layout, its sharded
    ``Parameter`` and its slot in the group's full-parameter memory."""

    def __init__(self, owners, param, rank, world_size, offset):
        self.owners = owners
        self.name = owners[0][1]
        self.shape = tuple(param.shape)
        # A 0-d parameter is sharded as one row.
        self.rows = self.shape[0] if self.shape else 1
        self.row_numel = math.prod(self.shape[1:])
        self.chunk_rows = (self.rows + world_size - 1) // world_size
        self.chunk_numel = self.chunk_rows * self.row_numel
        start = min(rank * self.chunk_rows, self.rows)
        stop = min(start + self.chunk_rows, self.rows)
        self.local_rows = stop - start
        self.local_shape = (self.local_rows,) + self.shape[1:]
        self.offset = offset  # in a rank's segment of the group's flat all-gather buffer
        data = param.detach()._data.reshape(self.rows, self.row_numel)[start:stop]
        sharded = _wrap_with(data.reshape(self.local_shape).copy(), param._dtype,
                             param._device, param._backend)
        self.sharded = Parameter(sharded, requires_grad=param.requires_grad)
        self.full_padded = None  # (world_size * chunk_rows, row_numel) view of group memory

    def full_view(self):
        return self.full_padded[:self.rows].reshape(self.shape)

    def register(self, value):
        for module, name in self.owners:
            module._parameters[name] = value


class _FSDPParamGroup:
    """The parameters one ``fully_shard`` call manages, communicated together: one all-gather
    and one reduce-scatter each, over a flat buffer whose rank ``r`` segment is the
    concatenation of every parameter's (padded) chunk ``r``."""

    def __init__(self, named_params, group, module_name):
        self.group = group
        self.world_size = dist.get_world_size(group)
        self.rank = dist.get_rank(group)
        self.module_name = module_name
        first = named_params[0][0]
        self.dtype, self.device, self.backend = first._dtype, first._device, first._backend
        self.np_dtype = first._data.dtype
        self.params = []
        offset = 0
        for param, owners in named_params:
            name = owners[0][1]
            if param._dtype is not self.dtype:
                raise NotImplementedError(
                    f"fully_shard({module_name}): the parameters of one group are gathered in one "
                    f"buffer and must share a dtype, but {name} is {param.dtype} and others "
                    f"{first.dtype}; call fully_shard on the submodules separately")
            fsdp_param = _FSDPParam(owners, param, self.rank, self.world_size, offset)
            offset += fsdp_param.chunk_numel
            self.params.append(fsdp_param)
        self.segment_numel = offset
        # All full parameters, each padded to world_size chunks, in one private anonymous
        # mapping: its pages can be returned to the system while views of it stay valid.
        total = self.world_size * self.segment_numel
        self._mapping = mmap.mmap(-1, max(total * self.np_dtype.itemsize, 1),
                                  flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        memory = np.frombuffer(self._mapping, dtype=self.np_dtype, count=total)
        start = 0
        for p in self.params:
            size = self.world_size * p.chunk_numel
            p.full_padded = memory[start:start + size].reshape(
                self.world_size * p.chunk_rows, p.row_numel)
            start += size
        self.is_unsharded = False  # the mapping holds the gathered values
        for p in self.params:
            p.register(p.sharded)

    # ---- all-gather ---------------------------------------------------------------------
    def _wrap(self, array):
        return _wrap_with(array, self.dtype, self.device, self.backend)

    def gather(self):
        """All-gather the shards into the full parameters' memory."""
        xp = self.backend.xp
        ws, segment = self.world_size, self.segment_numel
        send = xp.zeros(segment, dtype=self.np_dtype)
        for p in self.params:
            local = p.sharded._data
            if tuple(local.shape) != p.local_shape or local.dtype != self.np_dtype:
                # (a cast or a replaced .data after fully_shard would otherwise be gathered
                # silently into the group's original dtype or layout)
                raise RuntimeError(f"fully_shard({self.module_name}): the shard of {p.name} is "
                                   f"{p.sharded.dtype} of shape {tuple(local.shape)}, but this "
                                   f"rank's chunk of it was sharded as {self.dtype} of shape "
                                   f"{p.local_shape}")
            send[p.offset:p.offset + local.size] = local.reshape(-1)
        received = xp.empty(ws * segment, dtype=self.np_dtype)
        dist.all_gather_into_tensor(self._wrap(received), self._wrap(send), group=self.group)
        by_rank = received.reshape(ws, segment)
        for p in self.params:
            xp.copyto(p.full_padded.reshape(ws, p.chunk_numel),
                      by_rank[:, p.offset:p.offset + p.chunk_numel])
        self.is_unsharded = True

    def full_tensors(self):
        """New tensors over the full parameters' memory (the forward's ``module.weight``)."""
        return tuple(self._wrap(p.full_view()) for p in self.params)

    def release(self):
        """Return the full parameters' memory to the system and register the shards."""
        if self.is_unsharded:
            self._mapping.madvise(mmap.MADV_DONTNEED)
            self.is_unsharded = False
        for p in self.params:
            p.register(p.sharded)

    # ---- reduce-scatter -------------------------------------------------------------------
    def reduce_gradients(self, grads):
        """The shard gradients (AVG over ranks) of the full gradients ``grads`` (None: zero)."""
        xp = self.backend.xp
        ws, segment = self.world_size, self.segment_numel
        send = xp.zeros((ws, segment), dtype=self.np_dtype)
        for p, grad in zip(self.params, grads):
            if grad is None:
                continue
            rows = grad._data.reshape(p.rows, p.row_numel)
            chunks = send[:, p.offset:p.offset + p.chunk_numel].reshape(ws, p.chunk_rows,
                                                                        p.row_numel)
            for r in range(ws):
                lo = r * p.chunk_rows
                hi = min(lo + p.chunk_rows, p.rows)
                if hi > lo:
                    chunks[r, :hi - lo] = rows[lo:hi]
        received = xp.empty(segment, dtype=self.np_dtype)
        dist.reduce_scatter_tensor(self._wrap(received), self._wrap(send.reshape(-1)),
                                   op=dist.ReduceOp.AVG, group=self.group)
        out = []
        for p, grad in zip(self.params, grads):
            if grad is None or not p.sharded.requires_grad:
                out.append(None)
                continue
            local = received[p.offset:p.offset + p.local_rows * p.row_numel]
            out.append(self._wrap(local.reshape(p.local_shape).copy()))
        return out


class _UnshardParams(Function):
    """Shards in, full parameters out; backward reduce-scatters the full gradients."""

    @staticmethod
    def forward(ctx, param_group, *shards):
        ctx.param_group = param_group
        ctx.set_materialize_grads(False)
        param_group.gather()
        fulls = param_group.full_tensors()
        ctx.mark_non_differentiable(*[f for f, s in zip(fulls, shards) if not s.requires_grad])
        return fulls

    @staticmethod
    @once_differentiable
    def backward(ctx, *grads):
        group = ctx.param_group
        if not group.is_unsharded:
            raise RuntimeError(
                f"fully_shard({group.module_name}): gradients were computed with this module's "
                "parameters resharded (their memory released after forward), because its "
                "backward pre-hook did not run before they were used: the parameters were used "
                "by operations outside the module's tensor outputs. Use "
                "reshard_after_forward=False for this module, or return the tensors that "
                "depend on its parameters from its forward")
        shard_grads = group.reduce_gradients(grads)
        group.release()
        return (None, *shard_grads)


# ---- the module state and hooks -----------------------------------------------------------
class _FSDPState:
    """The FSDP bookkeeping of one module that ``fully_shard`` was applied to."""

    # The state whose forward is running as the root of the current forward, if any.
    _current_root = None

    def __init__(self, module, param_group, reshard_after_forward):
        self.module = module
        self._param_group = param_group
        self._auto_reshard_after_forward = reshard_after_forward is None
        self.reshard_after_forward = True if reshard_after_forward is None else \
            reshard_after_forward
        self._is_root = None
        # Prepended, as PyTorch does: user pre-hooks registered earlier see the full parameters.
        module.register_forward_pre_hook(self._pre_forward, prepend=True)
        # always_call: a forward that raised must still release and end the root's forward.
        module.register_forward_hook(self._post_forward, always_call=True)
        module.register_full_backward_pre_hook(self._pre_backward)

    def _lazy_init(self):
        """The first forward names this module root of the FSDP modules below it, and (if
        the caller left ``reshard_after_forward`` to FSDP) keeps the root's parameters
        gathered after forward, as PyTorch does: backward needs them first."""
        if self._is_root is not None:
            return
        for sub in self.module.modules():
            state = getattr(sub, "_fsdp_state", None)
            if state is not None:
                state._is_root = state is self
        if self._auto_reshard_after_forward:
            self.reshard_after_forward = False

    def _pre_forward(self, module, args):
        if _FSDPState._current_root is None:
            _FSDPState._current_root = self
            self._lazy_init()
        group = self._param_group
        if group is None:
            return None
        fulls = _UnshardParams.apply(group, *(p.sharded for p in group.params))
        for p, full in zip(group.params, fulls):
            p.register(full)
        return None

    def _post_forward(self, module, args, output):
        try:
            if self._param_group is not None and self.reshard_after_forward:
                self._param_group.release()
        finally:
            if _FSDPState._current_root is self:
                _FSDPState._current_root = None
        return None

    def _pre_backward(self, module, grad_output):
        group = self._param_group
        if group is not None and not group.is_unsharded:
            group.gather()
        return None


class UnshardHandle:
    """What ``unshard(async_op=True)`` returns. Ember's all-gather has completed when
    ``unshard`` returns, so ``wait()`` has nothing left to wait for."""

    def wait(self):
        return None


def _unimplemented_deepcopy(*args, **kwargs):
    raise AssertionError("FSDP does not support deepcopy. Please use state dict for "
                         "serialization.")


class FSDPModule:
    """Mixed into the class of a module ``fully_shard`` was applied to (``Linear`` becomes
    ``FSDPLinear``), as in PyTorch."""

    __deepcopy__ = _unimplemented_deepcopy

    def __new__(cls, *args, **kwargs):
        # A container that builds a new instance of its own class (``Sequential`` slicing)
        # gets a plain module: only fully_shard makes FSDP modules.
        orig_cls = cls.__mro__[2]
        self = orig_cls.__new__(orig_cls, *args, **kwargs)
        self.__init__(*args, **kwargs)
        return self

    def _get_fsdp_state(self):
        return self._fsdp_state

    def unshard(self, async_op=False):
        """All-gather this module's parameter group and register the full parameters (no
        autograd record: for inspection, export or a manual forward). ``async_op=True``
        returns an ``UnshardHandle``."""
        group = self._fsdp_state._param_group
        if group is not None:
            group.gather()
            for p, full in zip(group.params, group.full_tensors()):
                p.register(full)
        return UnshardHandle() if async_op else None

    def reshard(self):
        """Release this module's full parameters and register its shards again."""
        group = self._fsdp_state._param_group
        if group is not None:
            group.release()

    def set_reshard_after_forward(self, reshard_after_forward, recurse=True):
        """Whether to release the full parameters after forward (for this module and, with
        ``recurse``, the FSDP modules below it)."""
        if not isinstance(reshard_after_forward, bool):
            raise ValueError(f"reshard_after_forward should be a bool, got "
                             f"{type(reshard_after_forward)}")
        modules = self.modules() if recurse else [self]
        for module in modules:
            state = getattr(module, "_fsdp_state", None)
            if state is not None:
                state._auto_reshard_after_forward = False
                state.reshard_after_forward = reshard_after_forward


_fsdp_classes = {}


def _fsdp_class(cls):
    """``FSDP<Name>``: the FSDPModule mix-in first, then the module's own class."""
    if cls not in _fsdp_classes:
        _fsdp_classes[cls] = type("FSDP" + cls.__name__, (FSDPModule, cls),
                                  {"__module__": cls.__module__})
    return _fsdp_classes[cls]


# ---- the entry point ------------------------------------------------------------------------
def _process_group_of(mesh):
    if mesh is None:
        return dist.group.WORLD
    ndim = getattr(mesh, "ndim", None)
    if ndim is None or not hasattr(mesh, "get_group"):
        raise TypeError(f"fully_shard: mesh must be a DeviceMesh, got {type(mesh).__name__}")
    if ndim != 1:
        raise NotImplementedError(
            f"fully_shard: a {ndim}-D mesh (HSDP: replicate across one dimension, shard across "
            "the other) is not supported by Ember; pass a 1-D mesh or mesh=None")
    return mesh.get_group()


# The original parameters fully_shard replaced by shards: one of them met again (registered
# outside the module that was sharded) would be trained apart from its shard. Keyed by id
# (tensors compare elementwise, so no weak set can hold them); an entry leaves with its tensor.
_replaced = {}


def _mark_replaced(param):
    key = id(param)
    _replaced[key] = weakref.ref(param, lambda _, key=key: _replaced.pop(key, None))


def _was_replaced(param):
    ref = _replaced.get(id(param))
    return ref is not None and ref() is param


def _managed_params(module, ignored_ids):
    """``(parameter, [(owning module, attribute name), ...])`` for every parameter under
    ``module`` that no FSDP module below it manages and that is not ignored."""
    found = {}
    stack = [module]
    while stack:
        sub = stack.pop(0)
        if sub is not module and isinstance(sub, FSDPModule):
            continue
        for name, param in sub._parameters.items():
            if param is None or id(param) in ignored_ids:
                continue
            if _was_replaced(param):
                raise ValueError(
                    f"fully_shard: {type(sub).__name__}.{name} is a parameter that an earlier "
                    "fully_shard call already sharded (it is shared with a module sharded "
                    "separately); shared parameters must belong to one group: call fully_shard "
                    "on a module that contains all their users")
            found.setdefault(id(param), (param, []))[1].append((sub, name))
        stack.extend(m for m in sub._modules.values() if m is not None)
    return list(found.values())


def fully_shard(module, *, mesh=None, reshard_after_forward=None, shard_placement_fn=None,
                mp_policy=MixedPrecisionPolicy(), offload_policy=OffloadPolicy(),
                ignored_params=None):
    """Shard ``module``'s parameters (those not already managed by a ``fully_shard`` below it)
    along dim 0 over the ranks of ``mesh`` (a 1-D device mesh; default: the default process
    group), in place, and return ``module``, now an ``FSDPModule``.

    ``reshard_after_forward``: True releases the full parameters after forward and gathers them
    again in backward; False keeps them until the backward is done; None (default) is True for
    every module except the root (the outermost one called), as in PyTorch.
    ``ignored_params`` are left whole on every rank and their gradients are not reduced.
    ``shard_placement_fn``, mixed precision and CPU offload are not supported (a clear error).
    """
    if isinstance(module, (list, tuple)):
        raise NotImplementedError("fully_shard on a list of modules (one group for several "
                                  "modules) is not supported by Ember; call it on one module")
    if not isinstance(module, Module):
        raise ValueError(f"fully_shard does not support containers that do not implement "
                         f"forward: {module}")
    if isinstance(module, FSDPModule):
        raise RuntimeError(f"fully_shard was already applied to {type(module).__name__}")
    if reshard_after_forward is not None and not isinstance(reshard_after_forward, bool):
        raise NotImplementedError(
            "fully_shard(reshard_after_forward=<int>) (resharding to a smaller world after "
            "forward) is not supported by Ember; pass True, False or None")
    if shard_placement_fn is not None:
        raise NotImplementedError("fully_shard(shard_placement_fn=...) is not supported by "
                                  "Ember: parameters are always sharded on dim 0")
    if mp_policy != MixedPrecisionPolicy():
        raise NotImplementedError("fully_shard(mp_policy=...) with a non-default mixed "
                                  "precision policy is not supported by Ember")
    if isinstance(offload_policy, CPUOffloadPolicy):
        raise NotImplementedError("fully_shard(offload_policy=CPUOffloadPolicy()) is not "
                                  "supported by Ember")
    group = _process_group_of(mesh)
    named_params = _managed_params(module, {id(p) for p in (ignored_params or ())})
    for param, ((_, name), *_) in named_params:
        if param.device.type != "cpu":
            raise NotImplementedError(
                f"fully_shard: parameter {name} is on {param.device}; Ember's FSDP runs on the "
                "CPU backend only (it releases the gathered parameters' memory in place, which "
                "CuPy memory referenced by autograd's views does not allow)")
    module_name = type(module).__name__
    param_group = _FSDPParamGroup(named_params, group, module_name) if named_params else None
    for param, _ in named_params:
        _mark_replaced(param)
    module._fsdp_state = _FSDPState(module, param_group, reshard_after_forward)
    module.__class__ = _fsdp_class(type(module))
    return module
