"""``DistributedDataParallel``, as ``torch.nn.parallel.distributed``.

Each rank holds a replica of the module and runs it on its part of the batch; gradients are
averaged over the process group during backward, so every replica takes the same optimizer
step. The parts, as in PyTorch:

- Construction broadcasts rank 0's parameters and buffers (after checking that every rank has
  the same parameter shapes) and groups the gradients into *buckets*: flat, contiguous tensors
  of one dtype and device, filled in reverse parameter order (the order backward produces
  gradients) up to ``bucket_cap_mb`` (the first one 1 MB when the cap is the default).
- A post-accumulate-grad hook on every parameter copies its gradient into its bucket, divided
  by the world size. When a bucket is full its all-reduce (SUM, async) starts at once, while
  the rest of backward still runs; buckets start in index order, so all ranks issue their
  collectives in the same order whatever order the gradients come in.
- When the outermost backward finishes (``autograd.engine.queue_callback``), every bucket's
  Work is waited on and the averaged values are copied back into ``param.grad`` — or, with
  ``gradient_as_bucket_view=True``, ``param.grad`` *is* a view of the bucket, with no copy.
- After the first iteration the buckets are rebuilt in the order the gradients actually
  arrived (rank 0's order, broadcast), unless ``find_unused_parameters`` is set.

``no_sync()``, ``find_unused_parameters``, ``static_graph``, ``register_comm_hook`` and
``join()`` (uneven inputs, through ``ember.distributed.algorithms.join``) follow torch's
reducer; the error texts are torch's.
"""
import functools
import inspect
import warnings
import weakref
from contextlib import contextmanager

from ... import _dtype as _dt, ops
from ..._tensor import Tensor
from ...autograd import grad_mode
from ...autograd.engine import queue_callback
from ...autograd.graph import AccumulateGrad
from ...distributed.algorithms.join import Join, Joinable, JoinHook
from ...futures import Future
from ..modules.module import Module
from .data_parallel import _to_device

__all__ = ["DistributedDataParallel"]

_DEFAULT_BUCKET_CAP_MB = 25
_MB_TO_BYTES = 1024 * 1024
_DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024   # torch.distributed._DEFAULT_FIRST_BUCKET_BYTES
_BROADCAST_BUCKET_BYTES = 250 * 1024 * 1024


def _dist():
    # ember.distributed imports the algorithms package, so it is looked up when used.
    from ... import distributed
    return distributed


def _default_group():
    from ...distributed import distributed_c10d
    return distributed_c10d._get_default_group()


def _find_tensors(obj):
    """The tensors in a forward output: nested lists, tuples, dicts and dataclasses."""
    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _find_tensors(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _find_tensors(o)]
    fields = getattr(obj, "__dataclass_fields__", None)
    if fields is not None:
        return [t for name in fields for t in _find_tensors(getattr(obj, name))]
    return []


def _is_alias(a, b):
    return a is b or a.is_set_to(b)


def _broadcast_coalesced(process_group, tensors, bucket_bytes, src):
    """Broadcast ``tensors`` from group rank ``src`` with one collective per chunk of at most
    ``bucket_bytes`` of one dtype and device (torch's ``_broadcast_coalesced``)."""
    dist = _dist()
    groups = {}
    for t in tensors:
        groups.setdefault((t.dtype, t.device), []).append(t)
    with grad_mode.no_grad():
        for chunk_list in groups.values():
            chunk, size = [], 0
            for t in chunk_list + [None]:
                if t is not None and (not chunk or size + t.numel() * t.element_size()
                                      <= bucket_bytes):
                    chunk.append(t)
                    size += t.numel() * t.element_size()
                    continue
                if chunk:
                    flat = ops.cat([c.detach().reshape(-1) for c in chunk])
                    dist.broadcast(flat, group=process_group, group_src=src)
                    offset = 0
                    for c in chunk:
                        n = c.numel()
                        c.detach().copy_(flat[offset:offset + n].view(c.shape))
                        offset += n
                chunk, size = ([t], t.numel() * t.element_size()) if t is not None else ([], 0)


def _verify_param_shape_across_processes(process_group, params):
    """Every rank must hold the same parameters (count, shapes, dtypes); checked with one
    all-gather so that every rank raises the same error, instead of one raising and the
    others hanging in the broadcast that follows."""
    dist = _dist()
    mine = [(tuple(p.shape), str(p.dtype)) for p in params]
    everyone = [None] * dist.get_world_size(process_group)
    dist.all_gather_object(everyone, mine, group=process_group)
    rank = dist.get_rank(process_group)
    for i, theirs in enumerate(everyone):
        if len(theirs) != len(mine):
            raise RuntimeError(f"DDP expects same model across all ranks, but Rank {rank} has "
                               f"{len(mine)} params, while rank {i} has inconsistent "
                               f"{len(theirs)} params.")
    for i, theirs in enumerate(everyone):
        for p, (a, b) in enumerate(zip(mine, theirs)):
            if a[0] != b[0]:
                raise RuntimeError(f"[{rank}]: params[{p}] in this process with sizes "
                                   f"{list(a[0])} appears not to match sizes of the same param "
                                   f"in process {i}.")
            if a[1] != b[1]:
                raise RuntimeError(f"[{rank}]: params[{p}] in this process with dtype {a[1]} "
                                   f"appears not to match the dtype of the same param in "
                                   f"process {i} ({b[1]}).")


def _sync_module_states(module, process_group, broadcast_bucket_size, src,
                        params_and_buffers_to_ignore, broadcast_buffers=True):
    states = [p.detach() for n, p in module.named_parameters()
              if n not in params_and_buffers_to_ignore]
    if broadcast_buffers:
        states += [b.detach() for n, b in module.named_buffers()
                   if n not in params_and_buffers_to_ignore]
    if states:
        _broadcast_coalesced(process_group, states, broadcast_bucket_size, src)


def _compute_bucket_assignment_by_size(params, order, size_limits):
    """Parameter indices grouped into buckets, taking ``order`` (indices into ``params``)
    as given: a bucket per (dtype, device) grows until it reaches its size limit, the limits
    advancing through ``size_limits`` (the last one repeats). Buckets come out in the order
    of their first member in ``order``."""
    result = []
    open_buckets = {}
    limit_index = {}
    for i in order:
        p = params[i]
        key = (p.dtype, p.device)
        bucket = open_buckets.setdefault(key, [[], 0])
        bucket[0].append(i)
        bucket[1] += p.numel() * p.element_size()
        k = limit_index.setdefault(key, 0)
        if bucket[1] >= size_limits[k]:
            result.append(bucket[0])
            del open_buckets[key]
            limit_index[key] = min(k + 1, len(size_limits) - 1)
    result.extend(b[0] for b in open_buckets.values() if b[0])
    position = {i: n for n, i in enumerate(order)}
    result.sort(key=lambda indices: position[indices[0]])
    return result


class GradBucket:
    """What a communication hook receives (``torch.distributed.GradBucket``): one bucket's
    flat gradient ``buffer()``, its ``parameters()`` and per-parameter ``gradients()``
    (views of the buffer), its ``index()``, and whether it ``is_last()`` to be reduced."""

    def __init__(self, index, bucket_count, buffer, offsets, lengths, sizes, parameters):
        self._index = index
        self._bucket_count = bucket_count
        self._buffer = buffer
        self._offsets = offsets
        self._lengths = lengths
        self._sizes = sizes
        self._parameters = parameters

    def index(self):
        return self._index

    def buffer(self):
        return self._buffer

    def set_buffer(self, buffer):
        self._buffer = buffer

    def gradients(self):
        return [self._buffer[o:o + n].view(s)
                for o, n, s in zip(self._offsets, self._lengths, self._sizes)]

    def parameters(self):
        return list(self._parameters)

    def is_last(self):
        return self._index == self._bucket_count - 1


class _Bucket:
    __slots__ = ("index", "indices", "buffer", "views", "offsets", "lengths", "pending",
                 "work", "future")

    def __init__(self, index, indices, params):
        self.index = index
        self.indices = indices
        first = params[indices[0]]
        self.lengths = [params[i].numel() for i in indices]
        self.offsets = []
        total = 0
        for n in self.lengths:
            self.offsets.append(total)
            total += n
        self.buffer = ops.zeros(total, dtype=first.dtype, device=first.device)
        self.views = [self.buffer[o:o + n].view(params[i].shape)
                      for o, n, i in zip(self.offsets, self.lengths, indices)]
        self.pending = len(indices)
        self.work = self.future = None


def _fire_autograd_hook(reducer_ref, index, param):
    reducer = reducer_ref()
    if reducer is not None:
        reducer._autograd_hook(index)


def _remove_handles(handles):
    for handle in handles:
        handle.remove()


class _Reducer:
    """torch's C++ ``Reducer``: the buckets, the per-parameter hooks, and the bookkeeping
    that tells which gradients of this iteration are ready, reduced or unused."""

    def __init__(self, params, names, process_group, bucket_bytes_cap, first_bucket_bytes_cap,
                 find_unused_parameters, gradient_as_bucket_view):
        self.params = params
        self.names = names
        self.process_group = process_group
        self.world_size = _dist().get_world_size(process_group)
        self.bucket_bytes_cap = bucket_bytes_cap
        self.first_bucket_bytes_cap = first_bucket_bytes_cap
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = False
        self.comm_hook = None
        self.device = params[0].device

        self.expect_autograd_hooks = False
        self.require_finalize = False
        self.first_autograd_hook_called = False
        self.num_iterations = 0
        self.num_bwd_calls = 0
        self.next_bucket = 0
        self.ready_this_iteration = set()
        self.unused_parameters = []
        self.has_marked_unused_parameters = False
        self.div_factor = None
        self.forward_work = None
        self.divide_by_initial_world_size = True
        self.pending_works = []   # Join's counting all-reduces: waited at the end of backward
        self.warned_no_unused = False
        self.warned_create_graph = False

        # 1 where this rank produced a gradient this iteration (find_unused / static graph).
        self.local_used = ops.zeros(len(params), dtype=_dt.int32, device=self.device)
        self.local_used_dev = None      # a copy of it being all-reduced (MPI owns the buffer)
        self.local_used_work = None
        self.local_used_reduced = False
        self.local_used_host = None     # read once per finalize (one device sync, not one each)
        self.global_used_host = None

        self.hook_counts = [0] * len(params)       # static graph: hooks per iteration
        self.hook_counts_left = [0] * len(params)
        self.delay_all_reduce_queued = False

        self.has_rebuilt_buckets = False
        self.rebuilt_order = []

        self.buckets = []
        self.locators = {}
        n = len(params)
        limits = ([first_bucket_bytes_cap, bucket_bytes_cap]
                  if first_bucket_bytes_cap < bucket_bytes_cap else [bucket_bytes_cap])
        self._initialize_buckets(_compute_bucket_assignment_by_size(
            params, list(reversed(range(n))), limits))

        ref = weakref.ref(self)
        self.hook_handles = [p.register_post_accumulate_grad_hook(
            functools.partial(_fire_autograd_hook, ref, i)) for i, p in enumerate(params)]
        # A module wrapped again later must not keep this reducer's hooks.
        weakref.finalize(self, _remove_handles, list(self.hook_handles))

    # ---- buckets --------------------------------------------------------------------------
    def _initialize_buckets(self, assignment):
        self.buckets = [_Bucket(b, indices, self.params) for b, indices in enumerate(assignment)]
        self.locators = {i: (bucket, j) for bucket in self.buckets
                         for j, i in enumerate(bucket.indices)}
        if self.gradient_as_bucket_view:
            # Gradients that already exist move into their bucket and become its views.
            with grad_mode.no_grad():
                for bucket in self.buckets:
                    for i, view in zip(bucket.indices, bucket.views):
                        p = self.params[i]
                        if p.grad is not None and not _is_alias(p.grad, view):
                            view.copy_(p.grad)
                            p.grad = view

    def _should_rebuild_buckets(self):
        return (self.static_graph or not self.find_unused_parameters) and \
            not self.has_rebuilt_buckets

    def rebuild_buckets(self):
        """At the start of the second iteration: buckets in the order gradients arrived in the
        first (rank 0's order, so that all ranks agree). True if they were rebuilt."""
        self.ensure_prior_reduction_finished()
        if not self._should_rebuild_buckets() or not self.rebuilt_order:
            return False
        if len(self.rebuilt_order) != len(self.params):
            raise RuntimeError("rebuilt parameter indices size is not same as original model "
                               f"parameters size.Original model param size is: "
                               f"{len(self.params)} while rebuilt param size is: "
                               f"{len(self.rebuilt_order)}.")
        assignment = _compute_bucket_assignment_by_size(
            self.params, self.rebuilt_order, [self.first_bucket_bytes_cap, self.bucket_bytes_cap])
        assignment = self._sync_bucket_indices(assignment)
        self.has_rebuilt_buckets = True
        self.rebuilt_order = []
        self._initialize_buckets(assignment)
        return True

    def _sync_bucket_indices(self, assignment):
        n = len(self.params)
        payload = [len(assignment)] + [len(b) for b in assignment]
        payload += [i for b in assignment for i in b]
        payload += [0] * (1 + 2 * n - len(payload))
        message = ops.tensor(payload, dtype=_dt.int64, device=self.device)
        _dist().broadcast(message, group=self.process_group, group_src=0)
        values = message.tolist()
        count, sizes = values[0], values[1:1 + values[0]]
        flat = values[1 + count:]
        result, offset = [], 0
        for s in sizes:
            result.append(flat[offset:offset + s])
            offset += s
        return result

    def push_all_rebuilt_params(self):
        if self._should_rebuild_buckets() and not self.rebuilt_order:
            self.rebuilt_order = list(range(len(self.params)))

    # ---- one iteration ----------------------------------------------------------------------
    def _static_graph_first_iteration(self):
        return self.static_graph and self.num_bwd_calls == 1

    def _static_graph_after_first_iteration(self):
        return self.static_graph and self.num_bwd_calls > 1

    def _dynamic_graph_find_unused(self):
        return not self.static_graph and self.find_unused_parameters

    def prepare_for_forward(self):
        self.num_iterations += 1

    def prepare_for_backward(self, outputs):
        self.expect_autograd_hooks = True
        self.next_bucket = 0
        for bucket in self.buckets:
            bucket.pending = len(bucket.indices)
        if self.static_graph:
            self.hook_counts_left = list(self.hook_counts)
        self.has_marked_unused_parameters = False
        self.ready_this_iteration = set()
        self.delay_all_reduce_queued = False
        if self._dynamic_graph_find_unused():
            self.unused_parameters = self._search_unused_parameters(outputs)

    def _search_unused_parameters(self, outputs):
        seen = set()
        stack = [t.grad_fn for t in outputs if t.grad_fn is not None]
        used = set()
        while stack:
            node = stack.pop()
            for edge in node._edges:
                if edge is None or id(edge[0]) in seen:
                    continue
                child = edge[0]
                seen.add(id(child))
                if type(child) is AccumulateGrad:
                    used.add(id(child.variable))
                else:
                    stack.append(child)
        unused = [i for i, p in enumerate(self.params) if id(p) not in used]
        if not unused and not self.warned_no_unused:
            self.warned_no_unused = True
            warnings.warn(
                "find_unused_parameters=True was specified in DDP constructor, but did not find "
                "any unused parameters in the forward pass. This flag results in an extra "
                "traversal of the autograd graph every iteration,  which can adversely affect "
                "performance. If your model indeed never has any unused parameters in the "
                "forward pass, consider turning this flag off. Note that this warning may be a "
                "false positive if your model has flow control causing later iterations to have "
                "unused parameters.", stacklevel=4)
        return unused

    def _autograd_hook(self, index):
        if not self.first_autograd_hook_called:
            self.first_autograd_hook_called = True
            self.num_bwd_calls += 1
        # no_sync() or backward on a graph DDP did not prepare: accumulate locally.
        if not self.expect_autograd_hooks:
            return
        if self._dynamic_graph_find_unused() or self._static_graph_first_iteration():
            if self.params[index].grad is not None:
                self.local_used[index] = 1
        if self._static_graph_first_iteration():
            self.hook_counts[index] += 1
            if not self.delay_all_reduce_queued:
                self.delay_all_reduce_queued = True
                queue_callback(self._delay_all_reduce)
            return
        if not self.has_marked_unused_parameters:
            self.has_marked_unused_parameters = True
            for unused in self.unused_parameters:
                self._mark_variable_ready(unused)
        if self._static_graph_after_first_iteration():
            if self.hook_counts_left[index] <= 0:
                raise RuntimeError(
                    "Your training graph has changed in this iteration, e.g., one parameter is "
                    "unused in first iteration, but then got used in the second iteration. "
                    "this is not compatible with static_graph set to True.")
            self.hook_counts_left[index] -= 1
            if self.hook_counts_left[index] == 0:
                if self._should_rebuild_buckets():
                    self.rebuilt_order.append(index)
                self._mark_variable_ready(index)
        else:
            if self._should_rebuild_buckets():
                self.rebuilt_order.append(index)
            self._mark_variable_ready(index)

    def _set_divide_factor(self):
        if self.div_factor is not None:
            return
        self.div_factor = self.world_size
        if self.forward_work is not None and not self.divide_by_initial_world_size:
            # Join: average over the ranks still training (counted in the forward pass).
            work = self.forward_work
            work.wait()
            self.div_factor = int(work.result()[0].item())

    def _mark_variable_ready(self, index):
        if index in self.ready_this_iteration:
            raise RuntimeError(
                "Expected to mark a variable ready only once. This error is caused by one of "
                "the following reasons: 1) Use of a module parameter outside the `forward` "
                "function. Please make sure model parameters are not shared across multiple "
                "concurrent forward-backward passes. or try to use _set_static_graph() as a "
                "workaround if this module graph does not change during training loop.2) "
                "Reused parameters in multiple reentrant backward passes. For example, if you "
                "use multiple `checkpoint` functions to wrap the same part of your model, it "
                "would result in the same set of parameters been used by different reentrant "
                "backward passes multiple times, and hence marking a variable ready multiple "
                "times. DDP does not support such use cases in default. You can try to use "
                "_set_static_graph() as a workaround if your module graph does not change over "
                f"iterations.\nParameter at index {index} with name {self.names[index]} has been "
                "marked as ready twice. This means that multiple autograd engine  hooks have "
                "fired for this particular parameter during this iteration.")
        self.ready_this_iteration.add(index)
        self.require_finalize = True
        bucket, _ = self.locators[index]
        self._set_divide_factor()
        self._mark_variable_ready_dense(index)
        bucket.pending -= 1
        if bucket.pending == 0:
            self._mark_bucket_ready(bucket.index)
        if self.next_bucket == len(self.buckets):
            if self._dynamic_graph_find_unused():
                self._all_reduce_local_used_map()
            queue_callback(self._finalize_callback)

    def _mark_variable_ready_dense(self, index):
        bucket, j = self.locators[index]
        param = self.params[index]
        view = bucket.views[j]
        grad = param.grad
        with grad_mode.no_grad():
            if grad is None:
                # No gradient this iteration: its share of the bucket is zero.
                view.zero_()
                return
            if grad.is_sparse:
                raise RuntimeError(f"Gradient of parameter {self.names[index]} is sparse: "
                                   "Ember's DistributedDataParallel reduces dense gradients "
                                   "only (use sparse=False in Embedding / EmbeddingBag)")
            if grad.shape != view.shape or grad.dtype != view.dtype or \
                    grad.device != view.device:
                raise RuntimeError(f"Gradient of parameter {self.names[index]} has shape "
                                   f"{list(grad.shape)}, dtype {grad.dtype} and device "
                                   f"{grad.device}, but DDP's bucket expects "
                                   f"{list(view.shape)}, {view.dtype} and {view.device}")
            if _is_alias(grad, view):
                if self.comm_hook is None:
                    view.div_(self.div_factor)
                return
            if self.comm_hook is None:
                if grad.requires_grad and not self.warned_create_graph:
                    self.warned_create_graph = True
                    warnings.warn("Using DistributedDataParallel with create_graph=True is not "
                                  "well-supported. The higher-order gradient will not be "
                                  "synchronized across ranks, and backpropagation through "
                                  "all_reduce operations will not occur.", stacklevel=2)
                # Divide while copying: one pass over the gradient.
                ops.mul(grad.detach(), 1.0 / self.div_factor, out=view)
            else:
                view.copy_(grad)
            if self.gradient_as_bucket_view:
                param.grad = view

    def _mark_bucket_ready(self, bucket_index):
        # Buckets start strictly in index order, so every rank issues the same sequence of
        # collectives even when gradients arrive in different orders.
        if bucket_index > self.next_bucket:
            return
        while self.next_bucket < len(self.buckets) and \
                self.buckets[self.next_bucket].pending == 0:
            self._all_reduce_bucket(self.buckets[self.next_bucket])
            self.next_bucket += 1

    def _grad_bucket(self, bucket, buffer):
        return GradBucket(bucket.index, len(self.buckets), buffer, bucket.offsets,
                          bucket.lengths, [v.shape for v in bucket.views],
                          [self.params[i] for i in bucket.indices])

    def _all_reduce_bucket(self, bucket):
        if self.comm_hook is None:
            bucket.work = _dist().all_reduce(bucket.buffer, group=self.process_group,
                                             async_op=True)
            bucket.future = None
        else:
            bucket.work = None
            bucket.future = self._run_comm_hook(self._grad_bucket(bucket, bucket.buffer))

    def _run_comm_hook(self, grad_bucket):
        hook, state = self.comm_hook
        fut = hook(state, grad_bucket)
        if not callable(getattr(fut, "wait", None)):
            raise RuntimeError("Communication hook must return a torch.futures.Future "
                               f"(ember.futures.Future), but got {type(fut).__name__}")
        return fut

    def _all_reduce_local_used_map(self):
        self.local_used_reduced = False
        self.global_used_host = None
        self.local_used_dev = self.local_used.clone()
        self.local_used_work = _dist().all_reduce(self.local_used_dev, group=self.process_group,
                                                  async_op=True)

    def _delay_all_reduce(self):
        """Static graph, first iteration: nothing was reduced during backward (the hooks only
        counted themselves); now every gradient goes into its bucket and all are reduced."""
        self.unused_parameters = [i for i, c in enumerate(self.hook_counts) if c == 0]
        self.require_finalize = True
        self._set_divide_factor()
        self._all_reduce_local_used_map()
        for index in range(len(self.params)):
            self._mark_variable_ready_dense(index)
        for bucket in self.buckets:
            self._all_reduce_bucket(bucket)
        self.next_bucket = len(self.buckets)
        self.finalize_backward()

    def _finalize_callback(self):
        if self._static_graph_after_first_iteration() and self._should_rebuild_buckets():
            self.rebuilt_order.extend(self.unused_parameters)
        self.finalize_backward()

    def _globally_unused(self, index):
        # Waits for the used-map reduction only when some gradient is unused on this rank.
        if self.local_used_host is None:
            self.local_used_host = self.local_used.tolist()
        if self.local_used_host[index] != 0:
            return False
        if not self.local_used_reduced:
            self.local_used_work.wait()
            self.local_used_reduced = True
        if self.global_used_host is None:
            self.global_used_host = self.local_used_dev.tolist()
        return self.global_used_host[index] == 0

    def finalize_backward(self):
        self.expect_autograd_hooks = False
        self.first_autograd_hook_called = False
        self.require_finalize = False
        check_unused = self.static_graph or self.find_unused_parameters
        self.local_used_host = None
        with grad_mode.no_grad():
            for bucket in self.buckets:
                if bucket.future is not None:
                    result = bucket.future.wait()
                    if not isinstance(result, Tensor):
                        raise RuntimeError(
                            "Communication hook's Future must hold a single Tensor (the "
                            f"bucket's new contents), but it holds a {type(result).__name__}")
                    if result.numel() != bucket.buffer.numel():
                        raise RuntimeError(
                            f"Communication hook returned a tensor of {result.numel()} "
                            f"elements for bucket {bucket.index} of {bucket.buffer.numel()}")
                else:
                    bucket.work.wait()
                    result = bucket.buffer
                bucket.work = bucket.future = None
                self._finalize_bucket_dense(bucket, result, check_unused)
            self.div_factor = None
            if (self._dynamic_graph_find_unused() or self._static_graph_first_iteration()) \
                    and not self.local_used_reduced and self.local_used_work is not None:
                self.local_used_work.wait()
                self.local_used_reduced = True
            if self._dynamic_graph_find_unused():
                self.local_used.zero_()
                self.local_used_reduced = False
                self.local_used_work = None
        self.wait_pending_works()

    def _finalize_bucket_dense(self, bucket, result, check_unused):
        if result is bucket.buffer:
            views_out = bucket.views
        else:
            flat = result.reshape(-1)
            views_out = [flat[o:o + n].view(v.shape)
                         for o, n, v in zip(bucket.offsets, bucket.lengths, bucket.views)]
        for index, view_in, view_out in zip(bucket.indices, bucket.views, views_out):
            param = self.params[index]
            # A gradient unused on every rank stays as it was (None stays None), as torch's.
            global_unused = check_unused and self._globally_unused(index)
            if not self.gradient_as_bucket_view:
                if global_unused:
                    continue
                if param.grad is None:
                    grad = ops.empty_like(param, requires_grad=False)
                    grad.copy_(view_out)
                    param.grad = grad
                else:
                    param.grad.copy_(view_out)
                continue
            if view_out is not view_in:
                view_in.copy_(view_out)
            if global_unused:
                continue
            if param.grad is None:
                param.grad = view_in
            elif not _is_alias(param.grad, view_in):
                raise RuntimeError("Detected at least one parameter gradient is not the "
                                   "expected DDP bucket view with gradient_as_bucket_view=True. "
                                   "This may happen (for example) if multiple allreduce hooks "
                                   "were registered onto the same parameter. If you hit this "
                                   "error, please file an issue with a minimal repro.")

    def wait_pending_works(self):
        works, self.pending_works = self.pending_works, []
        for work in works:
            work.wait()
        self.forward_work = None

    def ensure_prior_reduction_finished(self):
        if not self.require_finalize:
            return
        unmarked = [i for i in range(len(self.params)) if i not in self.ready_this_iteration]
        if self.static_graph:
            message = ("Expected to have finished reduction in the prior iteration before "
                       "starting a new one. This error indicates that your training graph has "
                       "changed in this iteration, e.g., one parameter is used in first "
                       "iteration, but then got unused in the second iteration. this is not "
                       "compatible with static_graph set to True.")
        else:
            outputs_msg = ("making sure all `forward` function outputs participate in "
                           "calculating loss. ")
            bug_msg = ("\nIf you already have done the above, then the distributed data "
                       "parallel module wasn't able to locate the output tensors in the return "
                       "value of your module's `forward` function. Please include the loss "
                       "function and the structure of the return value of `forward` of your "
                       "module when reporting this issue (e.g. list, dict, iterable).")
            message = ("Expected to have finished reduction in the prior iteration before "
                       "starting a new one. This error indicates that your module has "
                       "parameters that were not used in producing loss. ")
            if not self.find_unused_parameters:
                message += ("You can enable unused parameter detection by passing the keyword "
                            "argument `find_unused_parameters=True` to "
                            "`torch.nn.parallel.DistributedDataParallel`, and by \n"
                            + outputs_msg + bug_msg)
            else:
                message += ("Since `find_unused_parameters=True` is enabled, this likely  "
                            "means that not all `forward` outputs participate in computing "
                            "loss. You can fix this by " + outputs_msg + bug_msg)
        rank = _dist().get_rank(self.process_group)
        message += (f"\nParameter indices which did not receive grad for rank {rank}: "
                    f"{' '.join(map(str, unmarked))}"
                    f"\nParameters which did not receive grad for rank {rank}: "
                    f"{', '.join(self.names[i] for i in unmarked)}")
        raise RuntimeError(message)

    def zeros_like_grad_buckets(self):
        return [self._grad_bucket(b, ops.zeros_like(b.buffer)) for b in self.buckets]

    def remove_autograd_hooks(self):
        for handle in self.hook_handles:
            handle.remove()
        self.hook_handles = []


class _DDPJoinHook(JoinHook):
    """What a rank that ran out of inputs does each iteration: take part in the collectives
    the training ranks issue in forward and backward, with zeros."""

    def __init__(self, ddp, divide_by_initial_world_size):
        if not isinstance(ddp, DistributedDataParallel):
            raise AssertionError("DDP join hook requires passing in a DistributedDataParallel "
                                 f"instance as the state, got {type(ddp).__name__}")
        self.ddp = ddp
        self.ddp._divide_by_initial_world_size = divide_by_initial_world_size
        super().__init__()

    def main_hook(self):
        ddp = self.ddp
        ddp.reducer.rebuild_buckets()
        ddp._check_and_sync_module_buffers()
        should_sync_backwards = ddp._check_global_requires_backward_grad_sync(
            is_joined_rank=True)
        ddp.require_forward_param_sync = should_sync_backwards
        if not should_sync_backwards:
            return
        ddp._match_all_reduce_for_bwd_pass()
        if ddp.find_unused_parameters:
            ddp._match_unused_params_allreduce()
        ddp.reducer.push_all_rebuilt_params()

    def post_hook(self, is_last_joiner):
        self.ddp._sync_final_model(is_last_joiner)


class DistributedDataParallel(Module, Joinable):
    """Data parallelism over the processes of a group, as
    ``torch.nn.parallel.DistributedDataParallel``: wrap the replica of ``module`` on each
    rank; backward averages the gradients over the group (see the module docstring)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=None, init_sync=True, process_group=None,
                 bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None,
                 mixed_precision=None, device_mesh=None, skip_all_reduce_unused_params=False,
                 bucket_cap_mb_list=None, batched_grad_copy=False, forward_sync_buffers=None):
        super().__init__()
        Joinable.__init__(self)
        if (delay_all_reduce_named_params is not None) != (param_to_hook_all_reduce is not None):
            raise ValueError("delay_all_reduce_named_params and param_to_hook_all_reduce need to "
                             "be set at the same time.")
        for name, value in (("delay_all_reduce_named_params", delay_all_reduce_named_params),
                            ("mixed_precision", mixed_precision),
                            ("bucket_cap_mb_list", bucket_cap_mb_list)):
            if value is not None:
                raise NotImplementedError(f"DistributedDataParallel({name}=...) is not "
                                          "implemented in Ember")
        if skip_all_reduce_unused_params:
            raise NotImplementedError("DistributedDataParallel(skip_all_reduce_unused_params="
                                      "True) is not implemented in Ember")
        if process_group and device_mesh is not None:
            raise RuntimeError("Cannot specify both process_group and device_mesh arguments.")
        if device_mesh is not None:
            raise NotImplementedError("DistributedDataParallel(device_mesh=...): Ember has no "
                                      "DeviceMesh; pass process_group")
        self.process_group = _default_group() if process_group is None else process_group

        self.parameters_to_ignore = set(getattr(module, "_ddp_params_and_buffers_to_ignore", ()))
        self._module_parameters = [p for n, p in module.named_parameters()
                                   if n not in self.parameters_to_ignore]
        if not any(p.requires_grad for p in self._module_parameters):
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        if device_ids is not None and len(device_ids) > 1:
            raise ValueError("device_ids can only be None or contain a single element.")
        self.is_multi_device_module = len({p.device for p in self._module_parameters}) > 1
        distinct_device_types = {p.device.type for p in self._module_parameters}
        if len(distinct_device_types) != 1:
            raise ValueError("DistributedDataParallel's input module must be on the same type "
                             "of devices, but input module parameters locate in "
                             f"{distinct_device_types}.")
        self.device_type = next(iter(distinct_device_types))
        if (device_ids is None or len(device_ids) == 0 or self.device_type == "cpu"
                or self.is_multi_device_module):
            if device_ids or output_device:
                devices = {p.device for p in self._module_parameters}
                raise ValueError("DistributedDataParallel device_ids and output_device "
                                 "arguments only work with single-device/multiple-device GPU "
                                 "modules or CPU modules, but got device_ids "
                                 f"{device_ids}, output_device {output_device}, and module "
                                 f"parameters {devices}.")
            self.device_ids = None
            self.output_device = None
        else:
            from .data_parallel import _device_index
            self.device_ids = [_device_index(x) for x in device_ids]
            self.output_device = _device_index(device_ids[0] if output_device is None
                                               else output_device)
        self.static_graph = False
        self.dim = dim
        self.module = module
        self.device = self._module_parameters[0].device

        if broadcast_buffers is not None:
            if forward_sync_buffers is not None:
                warnings.warn("Both `broadcast_buffers` and `forward_sync_buffers` were "
                              "specified. `broadcast_buffers` is deprecated and its value is "
                              "ignored when `forward_sync_buffers` is provided.", FutureWarning,
                              stacklevel=2)
            else:
                warnings.warn("`broadcast_buffers` is deprecated. Use `forward_sync_buffers` "
                              "instead. IMPORTANT: unlike `broadcast_buffers=False`, "
                              "`forward_sync_buffers=False` still syncs buffers at init. If "
                              "you rely on buffers NOT being synced at init (e.g. rank-local "
                              "buffers), keep using `broadcast_buffers=False` until "
                              "`init_sync_buffers` is available.", FutureWarning, stacklevel=2)
        if forward_sync_buffers is not None:
            self.forward_sync_buffers = forward_sync_buffers
            init_sync_buffers = True
        else:
            effective = broadcast_buffers if broadcast_buffers is not None else True
            self.forward_sync_buffers = effective
            init_sync_buffers = effective
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.mixed_precision = None
        if check_reduction:
            warnings.warn("The `check_reduction` argument in `DistributedDataParallel` module "
                          "is deprecated. Please avoid using it.", FutureWarning, stacklevel=2)
        from ..parameter import UninitializedParameter
        for param in self._module_parameters:
            if isinstance(param, UninitializedParameter):
                raise RuntimeError("Modules with uninitialized parameters can't be used with "
                                   "`DistributedDataParallel`. Run a dummy forward pass to "
                                   "correctly initialize the modules")
        self.broadcast_bucket_size = _BROADCAST_BUCKET_BYTES
        using_default = bucket_cap_mb is None
        bucket_cap_mb = _DEFAULT_BUCKET_CAP_MB if using_default else bucket_cap_mb
        self.bucket_bytes_cap = int(bucket_cap_mb * _MB_TO_BYTES)
        first_bucket_bytes_cap = (_DEFAULT_FIRST_BUCKET_BYTES if using_default
                                  else self.bucket_bytes_cap)
        self.bucket_bytes_cap_default = first_bucket_bytes_cap < self.bucket_bytes_cap
        self._first_bucket_bytes_cap = first_bucket_bytes_cap

        parameters, names = self._build_params_for_reducer()
        if init_sync:
            _verify_param_shape_across_processes(self.process_group, parameters)
            _sync_module_states(self.module, self.process_group, self.broadcast_bucket_size,
                                0, self.parameters_to_ignore, broadcast_buffers=init_sync_buffers)
        self.reducer = _Reducer(parameters, names, self.process_group, self.bucket_bytes_cap,
                                first_bucket_bytes_cap, find_unused_parameters,
                                gradient_as_bucket_view)
        self._comm_hooks = []
        self._has_rebuilt_buckets = False
        self._divide_by_initial_world_size = True
        if static_graph:
            self._set_static_graph()

    # ---- construction helpers ------------------------------------------------------------
    def _build_params_for_reducer(self):
        params, names, memo = [], [], set()
        for module_name, module in self.module.named_modules():
            for param_name, param in module.named_parameters(recurse=False):
                fqn = f"{module_name}.{param_name}" if module_name else param_name
                if not param.requires_grad or fqn in self.parameters_to_ignore or \
                        id(param) in memo:
                    continue
                memo.add(id(param))
                params.append(param)
                names.append(fqn)
        self._assign_modules_buffers()
        return params, names

    def _assign_modules_buffers(self):
        named = [(n, b) for n, b in self.module.named_buffers()
                 if n not in self.parameters_to_ignore]
        self.modules_buffers = [b for _, b in named]
        self.named_module_buffers = dict(named)

    @property
    def broadcast_buffers(self):
        return self.forward_sync_buffers

    @broadcast_buffers.setter
    def broadcast_buffers(self, value):
        self.forward_sync_buffers = value

    @staticmethod
    def _set_params_and_buffers_to_ignore_for_model(module, params_and_buffers_to_ignore):
        """Exclude these parameter and buffer names from synchronisation (set before
        wrapping the module)."""
        module._ddp_params_and_buffers_to_ignore = params_and_buffers_to_ignore
        for name, param in module.named_parameters():
            if name in params_and_buffers_to_ignore:
                param._ddp_ignored = True
        for name, buffer in module.named_buffers():
            if name in params_and_buffers_to_ignore:
                buffer._ddp_ignored = True

    def _set_static_graph(self):
        if self.static_graph:
            warnings.warn("You've set static_graph to be True, no need to set it again.",
                          stacklevel=2)
            return
        self.static_graph = True
        self.reducer.static_graph = True
        if self.find_unused_parameters:
            warnings.warn("You passed find_unused_parameters=true to DistributedDataParallel, "
                          "`_set_static_graph` will detect unused parameters automatically, so "
                          "you do not need to set find_unused_parameters=true, just be sure "
                          "these unused parameters will not change during training loop while "
                          "calling `_set_static_graph`.", stacklevel=2)

    # ---- forward ----------------------------------------------------------------------------
    @contextmanager
    def no_sync(self):
        """Inside, forward and backward do not communicate: gradients accumulate locally and
        the first synchronised backward after it reduces the accumulated sum."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def _pre_forward(self, *inputs, **kwargs):
        grad_enabled = grad_mode.is_grad_enabled()
        if grad_enabled and self.require_backward_grad_sync:
            self.reducer.prepare_for_forward()
        work = Join.notify_join_context(self)
        if work:
            self.reducer.pending_works.append(work)
            self.reducer.forward_work = work
            self.reducer.divide_by_initial_world_size = self._divide_by_initial_world_size
        if grad_enabled and self.reducer.rebuild_buckets():
            self._has_rebuilt_buckets = True
        if self._check_sync_bufs_pre_fwd():
            self._sync_buffers()
        if self._join_config.enable:
            self._check_global_requires_backward_grad_sync(is_joined_rank=False)
        if self.device_ids:
            from ..._device import device as _device
            target = _device(self.device_type, self.device_ids[0])
            return _to_device(inputs, target), _to_device(kwargs, target)
        return inputs, kwargs

    def _post_forward(self, output):
        if grad_mode.is_grad_enabled() and self.require_backward_grad_sync:
            self.require_forward_param_sync = True
            if self.find_unused_parameters and not self.static_graph:
                self.reducer.prepare_for_backward(_find_tensors(output))
            else:
                self.reducer.prepare_for_backward([])
        else:
            self.require_forward_param_sync = False
        return output

    def forward(self, *inputs, **kwargs):
        inputs, kwargs = self._pre_forward(*inputs, **kwargs)
        output = self.module(*inputs, **kwargs)
        return self._post_forward(output)

    def train(self, mode=True):
        super().train(mode)
        return self

    # ---- buffers ------------------------------------------------------------------------------
    def will_sync_module_buffers(self):
        return (self.require_forward_param_sync and self.forward_sync_buffers
                and len(self.modules_buffers) > 0)

    def _check_sync_bufs_pre_fwd(self):
        return self.will_sync_module_buffers()

    @property
    def _distributed_rank(self):
        return _dist().get_rank(self.process_group)

    def _find_common_rank(self, input_rank, rank_cond):
        dist = _dist()
        rank_to_use = ops.tensor([input_rank if rank_cond else -1], device=self.device)
        dist.all_reduce(rank_to_use, op=dist.ReduceOp.MAX, group=self.process_group)
        if rank_to_use.item() == -1:
            raise ValueError("BUG! Expected rank_cond to be true for at least one process. This "
                             "indicates a bug in PyTorch, please report an issue.")
        return int(rank_to_use.item())

    def _sync_buffers(self):
        with grad_mode.no_grad():
            if self._join_config.enable:
                authoritative_rank = self._find_common_rank(self._distributed_rank, True)
            else:
                authoritative_rank = 0
            self._assign_modules_buffers()
            self._sync_module_buffers(authoritative_rank)

    def _sync_module_buffers(self, authoritative_rank):
        _broadcast_coalesced(self.process_group, self.modules_buffers,
                             self.broadcast_bucket_size, authoritative_rank)

    def _check_and_sync_module_buffers(self):
        if self._check_sync_bufs_pre_fwd():
            authoritative_rank = self._find_common_rank(self._distributed_rank, False)
            self._sync_module_buffers(authoritative_rank)

    # ---- join -------------------------------------------------------------------------------
    def _check_global_requires_backward_grad_sync(self, is_joined_rank):
        dist = _dist()
        if not is_joined_rank and self.require_backward_grad_sync:
            requires_sync = ops.ones(1, device=self.device)
        else:
            requires_sync = ops.zeros(1, device=self.device)
        work = dist.all_reduce(requires_sync, group=self.process_group, async_op=True)
        if is_joined_rank:
            work.wait()
            return requires_sync.item() != 0
        self.reducer.pending_works.append(work)
        return None

    def _match_all_reduce_for_bwd_pass(self):
        reducer = self.reducer
        works = []
        for grad_bucket in reducer.zeros_like_grad_buckets():
            if reducer.comm_hook is None:
                works.append(_dist().all_reduce(grad_bucket.buffer(), group=self.process_group,
                                                async_op=True))
            else:
                works.append(reducer._run_comm_hook(grad_bucket))
        for work in works:
            work.wait()

    def _match_unused_params_allreduce(self):
        _dist().all_reduce(self.reducer.local_used, group=self.process_group)

    def _sync_final_model(self, is_last_joiner):
        self._authoritative_rank = self._find_common_rank(self._distributed_rank,
                                                          is_last_joiner)
        _sync_module_states(self.module, self.process_group, self.broadcast_bucket_size,
                            self._authoritative_rank, self.parameters_to_ignore,
                            broadcast_buffers=self.forward_sync_buffers)

    def join(self, divide_by_initial_world_size=True, enable=True,
             throw_on_early_termination=False):
        """A ``Join`` context for training with uneven inputs across ranks (see
        ``ember.distributed.algorithms.Join``): ranks that run out of batches shadow the
        others' all-reduces with zeros; ``divide_by_initial_world_size=False`` averages over
        the ranks still training instead."""
        return Join([self], enable, throw_on_early_termination,
                    divide_by_initial_world_size=divide_by_initial_world_size)

    def join_hook(self, **kwargs):
        return _DDPJoinHook(self, divide_by_initial_world_size=kwargs.get(
            "divide_by_initial_world_size", True))

    @property
    def join_device(self):
        return self.device

    @property
    def join_process_group(self):
        return self.process_group

    # ---- communication hooks ----------------------------------------------------------------
    def _check_comm_hook(self, hook):
        if not callable(hook):
            raise TypeError("Communication hook must be callable.")
        sig = inspect.signature(hook)
        bucket = sig.parameters.get("bucket")
        if bucket is not None and bucket.annotation is not inspect.Parameter.empty and \
                bucket.annotation is not GradBucket:
            raise ValueError("Communication hook: bucket annotation should be dist.GradBucket.")
        if sig.return_annotation is not inspect.Signature.empty and \
                sig.return_annotation != Future[Tensor]:
            raise ValueError("Communication hook: return annotation should be "
                             "torch.futures.Future[torch.Tensor].")

    def register_comm_hook(self, state, hook):
        """Reduce each bucket with ``hook(state, bucket) -> Future`` (of the bucket's new
        flat tensor) instead of the default average; the bucket is not pre-divided. Only one
        hook may be registered, before the first backward."""
        self._check_comm_hook(hook)
        if self.reducer.comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be "
                               "called once.")
        self._comm_hooks.append((hook, state))
        self.reducer.comm_hook = (hook, state)

    # ---- checks -------------------------------------------------------------------------------
    def _check_reducer_finalized(self):
        """Raise if the last backward did not reduce every bucket (as after a backward over
        a graph that left a parameter without a gradient)."""
        if self.reducer.require_finalize:
            raise RuntimeError("Expected to have finished reduction in the prior iteration "
                               "before starting a new one. This error indicates that your "
                               "module has parameters that were not used in producing loss.")

    def _remove_autograd_hooks(self):
        self.reducer.remove_autograd_hooks()

    def _check_default_group(self):
        try:
            default = _default_group()
        except (RuntimeError, ValueError):
            default = None
        if default is None or self.process_group is not default:
            raise RuntimeError("DDP Pickling/Unpickling are only supported when using DDP with "
                               "the default process group. That is, when you have called "
                               "init_process_group and have not passed process_group argument "
                               "to DDP constructor")

    def __getstate__(self):
        # The group and the reducer (its buckets and hooks on the parameters) belong to this
        # process; unpickling makes new ones over the default group, without init sync.
        self._check_default_group()
        attrs = dict(self.__dict__)
        del attrs["process_group"]
        del attrs["reducer"]
        return attrs

    def __setstate__(self, state):
        super().__setstate__(state)
        self.process_group = _default_group()
        parameters, names = self._build_params_for_reducer()
        self.reducer = _Reducer(parameters, names, self.process_group, self.bucket_bytes_cap,
                                self._first_bucket_bytes_cap, self.find_unused_parameters,
                                self.gradient_as_bucket_view)
        self.reducer.static_graph = self.static_graph
        if self._comm_hooks:
            self.reducer.comm_hook = self._comm_hooks[-1]
