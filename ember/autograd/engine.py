"""The backward engine: dependency counting over the graph, then a ready queue.

The walk is iterative (a chain of 100,000 ops backpropagates without recursion). Gradients
arriving at a node from several consumers are summed in its input buffer; a gradient whose
shape or dtype differs from the input it flows to (broadcasting, type promotion) is reduced
with ``sum_to_size`` and cast here, once, so individual ops never do it.
"""
import heapq
import threading

from . import grad_mode, anomaly_mode
from .graph import AccumulateGrad, accumulate_grad_node, run_tensor_hooks

__all__ = ["run_backward", "queue_callback"]

# Per thread: how deep backward passes are nested, and the callbacks queued for the end of the
# outermost one (a backward run inside a hook is part of the outer pass, as DDP needs).
_final = threading.local()

#: ``ember.autograd.profiler`` sets this while a profile records; its ``enter(node)``,
#: ``called(token)`` and ``exit(token)`` bracket a node's run and the routing of its gradients.
_node_profiler = None


def queue_callback(callback):
    """Run ``callback()`` once, when the backward pass now running has finished (torch's
    ``Variable._execution_engine.queue_callback``); DDP finalises its buckets this way.
    Callbacks run in the order queued, after every gradient was accumulated; a callback may
    queue more. A backward that raises drops its callbacks."""
    if not getattr(_final, "depth", 0):
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    _final.callbacks.append(callback)


def run_backward(tensors, grad_tensors, retain_graph, create_graph, inputs=None,
                 allow_unused=False, accumulate=True):
    depth = getattr(_final, "depth", 0)
    if depth == 0:
        _final.callbacks = []
    _final.depth = depth + 1
    try:
        results = _run_backward(tensors, grad_tensors, retain_graph, create_graph, inputs,
                                allow_unused, accumulate)
        if depth == 0:
            callbacks = _final.callbacks
            while callbacks:
                callbacks.pop(0)()
    finally:
        _final.depth = depth
        if depth == 0:
            _final.callbacks = []
    return results


def _root_edge(t):
    if t.grad_fn is not None:
        return t.grad_fn, t._output_nr
    if t.requires_grad:
        return accumulate_grad_node(t), 0
    return None


def _collect(roots, targets):
    """Count each node's incoming edges; with ``targets``, keep only nodes that reach one."""
    children = {}
    stack = list(roots)
    while stack:
        node = stack.pop()
        if node in children:
            continue
        nexts = []
        for e in node._edges:
            if e is not None:
                child = e[0]
                nexts.append(child)
                if child not in children:
                    stack.append(child)
        children[node] = nexts
    needed = None
    if targets is not None:
        parents = {}
        for node, nexts in children.items():
            for child in nexts:
                parents.setdefault(child, []).append(node)
        needed = set(targets)
        stack = list(targets)
        while stack:
            for parent in parents.get(stack.pop(), ()):
                if parent not in needed:
                    needed.add(parent)
                    stack.append(parent)
    deps = {}
    get = deps.get
    if needed is None:
        for nexts in children.values():
            for child in nexts:
                deps[child] = get(child, 0) + 1
        return deps, needed
    for node, nexts in children.items():
        if node not in needed:
            continue
        for child in nexts:
            if child in needed:
                deps[child] = get(child, 0) + 1
    return deps, needed


def _is_expandable_to(shape, desired):
    if len(shape) > len(desired):
        return False
    return all(s == 1 or s == d for s, d in zip(reversed(shape), reversed(desired)))


def _adjust(grad, meta, node, index):
    shape, dtype, device = meta
    if grad._data.shape != shape:
        if not _is_expandable_to(shape, grad._data.shape):
            raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index "
                               f"{index} - got {list(grad._data.shape)} but expected shape "
                               f"compatible with {list(shape)}")
        grad = grad.sum_to_size(shape)
    if grad._dtype is not dtype:
        if grad._dtype._kind == 3 and dtype._kind != 3:
            grad = grad.real  # a real input takes the real part, as in PyTorch
        grad = grad.to(dtype)
    if grad._device is not device:
        grad = grad.to(device)
    return grad


def _run_backward(tensors, grad_tensors, retain_graph, create_graph, inputs=None,
                  allow_unused=False, accumulate=True):
    """Backpropagate ``grad_tensors`` from ``tensors``.

    ``accumulate=True`` (``Tensor.backward``) adds into leaves' ``.grad`` — restricted to
    ``inputs`` if given. ``accumulate=False`` (``autograd.grad``) returns the gradients of
    ``inputs`` instead and leaves every ``.grad`` untouched."""
    roots = []
    for i, (t, g) in enumerate(zip(tensors, grad_tensors)):
        edge = _root_edge(t)
        if edge is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a "
                               "grad_fn")
        roots.append((edge, g))

    captures = None  # node -> list of (output_nr, slot in result)
    targets = None
    if inputs is not None:
        captures = {}
        for i, t in enumerate(inputs):
            if not t.requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            edge = _root_edge(t)
            captures.setdefault(edge[0], []).append((edge[1], i))
        targets = list(captures)
    results = [None] * (len(inputs) if inputs is not None else 0)

    deps, needed = _collect([e[0] for e, _ in roots], targets)
    buffers = {}
    for (node, nr), g in roots:
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * node.num_outputs
        buf[nr] = g if buf[nr] is None else buf[nr] + g
    ready = []
    for node in buffers:
        if deps.get(node, 0) == 0:
            heapq.heappush(ready, (-node._seq, id(node), node))

    prev_mode = grad_mode._state.enabled
    grad_mode._state.enabled = bool(create_graph)
    try:
        while ready:
            _, _, node = heapq.heappop(ready)
            grads = buffers.pop(node)
            is_leaf_node = type(node) is AccumulateGrad
            if needed is not None:
                if node not in needed:
                    continue
                slots = captures.get(node)
                if slots is not None:
                    # As in PyTorch, a captured gradient has passed the tensor hooks only when
                    # the node itself will not run (the hooks then run here instead).
                    if is_leaf_node:
                        executes = accumulate
                    else:
                        executes = any(e is not None and e[0] in needed
                                       for e in node._edges)
                    if not executes:
                        grads = _call_tensor_pre_hooks(node, grads)
                    for nr, slot in slots:
                        results[slot] = grads[nr]
                    if not executes:
                        continue
            if is_leaf_node:
                # Hand the gradient over holding no other reference to it, so AccumulateGrad can
                # tell a gradient nothing else sees (and adopt it without a copy).
                grad, grads = grads[0], None
                if accumulate and grad is not None:
                    if _node_profiler is None:
                        node.accumulate(grad, create_graph)
                    else:
                        _node_profiler.run(node, node.accumulate, grad, create_graph)
                grad = None
                continue
            if (node._tensor_pre_hooks is not None or node._retained is not None
                    or node._pre_hooks is not None):
                grads = _call_pre_hooks(node, grads)
            profiler = _node_profiler
            token = None if profiler is None else profiler.enter(node, grads)
            try:
                grad_inputs = _call_node(node, grads)
            except Exception:
                if token is not None:
                    profiler.exit(token)
                if anomaly_mode._enabled:
                    anomaly_mode.warn_forward_trace(node)
                raise
            if token is not None:
                profiler.called(token)
            if not retain_graph:
                node.release()
            i = -1
            for edge, g in zip(node._edges, grad_inputs):
                i += 1
                if edge is None:
                    continue
                child, nr = edge
                if needed is not None and child not in needed:
                    continue
                if g is not None:
                    meta = node._in_meta[i]
                    # the usual gradient already matches its input: skip _adjust's frame
                    if (g._data.shape != meta[0] or g._dtype is not meta[1]
                            or g._device is not meta[2]):
                        g = _adjust(g, meta, node, i)
                    buf = buffers.get(child)
                    if buf is None:
                        buf = buffers[child] = [None] * child.num_outputs
                    buf[nr] = g if buf[nr] is None else buf[nr] + g
                remaining = deps[child] - 1
                deps[child] = remaining
                if remaining == 0:
                    if child not in buffers:
                        buffers[child] = [None] * child.num_outputs
                    heapq.heappush(ready, (-child._seq, id(child), child))
            if token is not None:
                profiler.exit(token)
            g = grad_inputs = buf = None  # no stale references to gradients routed onwards
    finally:
        grad_mode._state.enabled = prev_mode

    if inputs is not None and accumulate:
        # backward(inputs=[non_leaf]) accumulates into that tensor's .grad too.
        for t, r in zip(inputs, results):
            if t.grad_fn is not None and r is not None:
                r = r if create_graph else r.detach()
                t.grad = r if t.grad is None else t.grad + r
    if inputs is not None and not accumulate:
        for i, r in enumerate(results):
            if r is None and not allow_unused:
                raise RuntimeError(
                    f"The differentiated Tensor at index {i} appears to not have been used in the "
                    "graph. Set allow_unused=True if this is the desired behavior.")
    return results


def _call_tensor_pre_hooks(node, grads):
    """Hooks registered on the tensors this node produced, then ``retain_grad``."""
    if type(node) is AccumulateGrad:
        hooks = node.variable._backward_hooks
        if hooks and grads[0] is not None:
            grads[0] = run_tensor_hooks(hooks, grads[0])
        return grads
    if node._tensor_pre_hooks:
        for nr, hooks in node._tensor_pre_hooks.items():
            if grads[nr] is not None:
                grads[nr] = run_tensor_hooks(hooks, grads[nr])
    if node._retained:
        for nr, ref in node._retained.items():
            t = ref()
            if t is not None and grads[nr] is not None:
                t.grad = grads[nr] if t.grad is None else t.grad + grads[nr]
                if not grad_mode._state.enabled:
                    t.grad = t.grad.detach()
    return grads


def _call_pre_hooks(node, grads):
    grads = _call_tensor_pre_hooks(node, grads)
    if node._pre_hooks:
        for hook in list(node._pre_hooks.values()):
            out = hook(tuple(grads))
            if out is not None:
                grads = list(_check_hook_tuple(hook, out, len(grads)))
    return grads


def _check_hook_tuple(hook, out, expected):
    if not isinstance(out, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(out).__name__}'")
    if len(out) != expected:
        raise RuntimeError(f"hook '{getattr(hook, '__name__', type(hook).__name__)}' has returned "
                           f"an incorrect number of values (got {len(out)}, but expected "
                           f"{expected})")
    return out


def _call_node(node, grads):
    for g in grads:
        if g is not None:
            break
    else:
        return (None,) * len(node._edges)
    out = node.backward(*grads)
    if out.__class__ is not tuple:
        out = out if isinstance(out, tuple) else (out,)
    n_edges = len(node._edges)
    if len(out) != n_edges:
        raise RuntimeError(f"function {node.name()} returned an incorrect number of gradients "
                           f"(expected {n_edges}, got {len(out)})")
    if anomaly_mode._enabled and anomaly_mode._check_nan:
        for i, g in enumerate(out):
            if g is not None and g.isnan().any().item():
                raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th "
                                   "output.")
    if node._hooks:
        for hook in list(node._hooks.values()):
            res = hook(out, tuple(grads))
            if res is not None:
                out = _check_hook_tuple(hook, res, len(out))
    return out
