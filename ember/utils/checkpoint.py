"""``ember.utils.checkpoint``, as ``torch.utils.checkpoint``: activation checkpointing.

A checkpointed function keeps none of its intermediate activations after its forward; the
backward runs it again (with the random state of the original forward restored, so dropout
draws the same masks: the CPU generator's, and, as PyTorch's ``get_device_states``, the default
generators of the devices the tensor arguments live on) and differentiates through what it
recomputed. Memory falls from all of the function's activations to its inputs and outputs,
for one more forward per backward.

Two variants, as in PyTorch:

``use_reentrant=False`` (recommended). The function runs with autograd recording as usual, so
the graph is the ordinary one: edges to every tensor the function reads, parameters held in a
closure or a module included. When the function returns, each node it recorded gives up its
saved tensors and other saved state (``Node.release``, then its attributes), and gets a
pre-hook. The first of those nodes that a backward reaches reruns the function, and every
node takes the saved state of its twin in the recomputed graph (twins pair up in creation
order; their count, types and saved tensors' shapes, dtypes and devices are checked:
``determinism_check``). So ``ember.autograd.grad``, ``backward(inputs=...)``, keyword
arguments, inputs that do not require grad, non-tensor and nested outputs, hooks and nesting
all behave as without checkpointing. Differences from PyTorch, which intercepts each saved
tensor as it is packed (saved-tensor hooks, which Ember's autograd does not have):

- during the forward, the function's activations are alive until it returns (PyTorch frees an
  activation as soon as nothing else holds it): the peak is one checkpointed function's
  activations on top of what is kept;
- the recomputation always runs the whole function (``early_stop`` is accepted, and changes
  nothing, since the gradients are the same either way);
- after a backward with ``retain_graph=True`` the recomputed state stays with the graph, so
  a second backward does not recompute again;
- ``debug=True`` lists the autograd nodes recorded by the forward and the recomputation (the
  names of their backward functions), not ATen operators with stack traces.

``use_reentrant=True`` (PyTorch's default when ``use_reentrant`` is not given, with a warning).
An ``autograd.Function`` whose forward runs the function under ``no_grad``; its backward
reruns it on detached copies of the inputs and calls ``ember.autograd.backward`` inside the
running backward. As in PyTorch: the output requires grad only if an input tensor does (else a
warning, and parameters inside get no gradient); parameters' ``.grad`` is accumulated by that
inner backward; keyword arguments raise ``ValueError``; ``autograd.grad`` and
``backward(inputs=...)`` raise ``RuntimeError``; only tensor (or tuple of tensor) outputs.
"""
import contextlib
import sys
import warnings
import weakref

from .._random import (get_rng_state, set_rng_state, draws_on_device,
                       device_default_generator)
from .._tensor import Tensor
from ..autograd import grad_mode
from ..autograd import graph as _graph
from ..autograd.engine import run_backward
from ..autograd.function import Function

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction",
           "check_backward_validity", "detach_variable", "noop_context_fn",
           "set_checkpoint_early_stop", "set_checkpoint_debug_enabled"]

_DEFAULT_DETERMINISM_MODE = "default"
_checkpoint_debug_enabled = None
_enable_checkpoint_early_stop = None

_DEBUG_TIP = """
Tip: To see a more detailed error message, either pass `debug=True` to
`ember.utils.checkpoint.checkpoint(...)` or wrap the code block
with `with ember.utils.checkpoint.set_checkpoint_debug_enabled(True):` to
enable checkpoint-debug mode globally.
"""


class CheckpointError(RuntimeError):
    """The recomputation did not record what the original forward recorded."""


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    """Within the block, ``enabled`` (True/False) overrides every checkpoint's ``debug``
    argument; ``None`` defers to it."""
    global _checkpoint_debug_enabled
    previous = _checkpoint_debug_enabled
    _checkpoint_debug_enabled = enabled
    try:
        yield
    finally:
        _checkpoint_debug_enabled = previous


@contextlib.contextmanager
def set_checkpoint_early_stop(enable):
    """Overrides ``early_stop`` within the block. Ember always recomputes the whole function
    (see the module docstring), so this only records the setting."""
    global _enable_checkpoint_early_stop
    previous = _enable_checkpoint_early_stop
    _enable_checkpoint_early_stop = enable
    try:
        yield
    finally:
        _enable_checkpoint_early_stop = previous


def detach_variable(inputs):
    """``inputs`` (a tuple) with each tensor replaced by a detached one that keeps its
    ``requires_grad``: new leaves to differentiate a recomputation with respect to."""
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    out = []
    for inp in inputs:
        if isinstance(inp, Tensor):
            x = inp.detach()
            x.requires_grad = inp.requires_grad
            inp = x
        out.append(inp)
    return tuple(out)


def check_backward_validity(inputs):
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=2)


def _rng_snapshot(args):
    """The CPU generator's state, and the (generator, state) of the default generator of each
    device the tensors in ``args`` (nested in lists, tuples and dicts too) live on, where that
    device draws on the device: what PyTorch saves for the recomputation."""
    devices = {}

    def visit(arg):
        if isinstance(arg, Tensor):
            device = arg.device
            if device.type != "cpu" and draws_on_device(device):
                devices[device.type, device.index] = device
        elif isinstance(arg, (list, tuple)):
            for item in arg:
                visit(item)
        elif isinstance(arg, dict):
            for item in arg.values():
                visit(item)

    visit(args)
    generators = [device_default_generator(d) for d in devices.values()]
    return get_rng_state(), [(g, g.get_state()) for g in generators]


def _restore(snapshot):
    cpu_state, device_states = snapshot
    set_rng_state(cpu_state)
    for generator, state in device_states:
        generator.set_state(state)


@contextlib.contextmanager
def _forked_rng(snapshot):
    """Replay from ``snapshot`` (None: don't touch the generators), restoring the caller's
    streams afterwards so that recomputing draws nothing from them."""
    if snapshot is None:
        yield
        return
    outer = (get_rng_state(), [(g, g.get_state()) for g, _ in snapshot[1]])
    _restore(snapshot)
    try:
        yield
    finally:
        _restore(outer)


# ---- use_reentrant=True ------------------------------------------------------------------

def _is_checkpoint_valid():
    """False inside ``autograd.grad`` or ``backward(inputs=...)``: a backward restricted to
    some inputs, which a nested backward accumulating into every leaf would break. The
    running engine call is the innermost ``run_backward`` frame on the stack."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is run_backward.__code__:
            return frame.f_locals.get("inputs") is None
        frame = frame.f_back
    return True


class CheckpointFunction(Function):
    """The reentrant checkpoint: forward under ``no_grad``, backward by recomputation and a
    nested ``ember.autograd.backward``."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            ctx.fwd_cpu_state, ctx.fwd_device_states = _rng_snapshot(args)
        # Non-tensor arguments stay on ctx; tensors are saved (version-checked) in their place.
        ctx.inputs = [None if isinstance(arg, Tensor) else arg for arg in args]
        ctx.tensor_indices = [i for i, arg in enumerate(args) if isinstance(arg, Tensor)]
        ctx.save_for_backward(*(args[i] for i in ctx.tensor_indices))
        # An output that got no gradient contributes nothing to the inner backward, so there is
        # no need for zeros (which Function cannot make for a non-tensor output such as an
        # LSTM's (h, c) tuple).
        ctx.set_materialize_grads(False)
        with grad_mode.no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        if not _is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, ember.utils.checkpoint is incompatible with .grad() or "
                "passing an `inputs` parameter to .backward(). To resolve this error, you can "
                "either set use_reentrant=False, or call .backward() without passing the "
                "`inputs` argument.")
        from ..autograd import backward as autograd_backward
        inputs = list(ctx.inputs)
        for i, tensor in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = tensor
        snapshot = ((ctx.fwd_cpu_state, ctx.fwd_device_states) if ctx.preserve_rng_state
                    else None)
        with _forked_rng(snapshot):
            detached_inputs = detach_variable(tuple(inputs))
            with grad_mode.enable_grad():
                outputs = ctx.run_function(*detached_inputs)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        pairs = [(out, grad) for out, grad in zip(outputs, grads)
                 if isinstance(out, Tensor) and out.requires_grad and grad is not None]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not "
                               "necessary")
        autograd_backward([out for out, _ in pairs], [grad for _, grad in pairs])
        return (None, None) + tuple(inp.grad if isinstance(inp, Tensor) else None
                                    for inp in detached_inputs)


# ---- use_reentrant=False -----------------------------------------------------------------

# Each node whose saved state a checkpoint dropped, mapped to that checkpoint: a checkpoint
# nested in another keeps its own nodes, and the outer one leaves them alone.
_owner = weakref.WeakKeyDictionary()

# What a node keeps when it gives up its saved state: the engine reads these before the node
# runs (it sizes a node's gradient buffer by num_outputs) and _metadata belongs to the user.
_STRUCTURAL_KEYS = ("num_outputs", "_metadata")


def _tensors_in(value):
    """The tensors in a (possibly nested) output."""
    if isinstance(value, Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _tensors_in(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors_in(v)


def _recorded_between(outputs, start, end):
    """The nodes created between sequence numbers ``start`` and ``end`` that the outputs'
    gradients pass through, in creation order, less those another checkpoint owns."""
    found = set()
    stack = [t.grad_fn for t in _tensors_in(outputs)
             if t.grad_fn is not None and start < t.grad_fn._seq < end]
    while stack:
        node = stack.pop()
        if node in found:
            continue
        found.add(node)
        stack.extend(edge[0] for edge in node._edges
                     if edge is not None and start < edge[0]._seq < end)
    return sorted((n for n in found if n not in _owner), key=lambda n: n._seq)


def _saved_metadata(node, metadata_fn):
    if node._saved is _graph.FREED:  # the function ran a backward through it itself
        return []
    metas = []
    for s in node._saved:
        if s is None:
            metas.append(None)
        elif s.is_output:
            dtype, device = s.meta[0], s.meta[1]
            metas.append(metadata_fn(_SavedInfo(s.data.shape, dtype, device)))
        else:
            metas.append(metadata_fn(s.tensor))
    return metas


class _SavedInfo:
    """Shape, dtype and device of a saved output, which is stored as its bare array."""

    def __init__(self, shape, dtype, device):
        from .._tensor import Size
        self.shape, self.dtype, self.device = Size(shape), dtype, device


def _default_meta_extractor(x):
    return {"shape": x.shape, "dtype": x.dtype, "device": x.device}


_allowed_determinism_checks_to_fns = {
    _DEFAULT_DETERMINISM_MODE: _default_meta_extractor,
    "none": lambda _: None,
}


def _strip(node):
    """Free what ``node`` saved for its backward, keeping its place in the graph."""
    node.release()  # a node's own way to free (convolution gives its columns back to the pool)
    keep = {k: node.__dict__[k] for k in _STRUCTURAL_KEYS if k in node.__dict__}
    node.__dict__.clear()
    node.__dict__.update(keep)
    node._saved = ()


class _CheckpointFrame:
    """One non-reentrant checkpoint call: what it needs to recompute, and the nodes waiting
    for their saved state."""

    def __init__(self, function, args, kwargs, rng_state, recompute_context, metadata_fn,
                 debug):
        self.function, self.kwargs = function, kwargs
        # Version-checked, so an input modified in place before the recomputation raises
        # autograd's error instead of recomputing from the wrong values.
        self.args = [_graph.SavedTensor(a) if isinstance(a, Tensor) else a for a in args]
        self.rng_state = rng_state
        self.recompute_context = recompute_context
        self.metadata_fn = metadata_fn
        self.debug = debug
        self.nodes = []     # weak references: the graph owns its nodes, not the checkpoint
        self.forward_names = []
        self.forward_metas = []
        self.handles = []
        self.recomputed = False

    def take_over(self, nodes):
        for node in nodes:
            _owner[node] = self
            self.nodes.append(weakref.ref(node))
            self.forward_names.append(node.name())
            self.forward_metas.extend(_saved_metadata(node, self.metadata_fn))
            _strip(node)
            self.handles.append(node.register_prehook(self._before_backward))

    def _before_backward(self, grad_outputs):
        if not self.recomputed:
            self.recompute()

    def recompute(self):
        self.recomputed = True
        for handle in self.handles:
            handle.remove()
        self.handles = []
        with _forked_rng(self.rng_state), grad_mode.enable_grad(), self.recompute_context:
            start = next(_graph._sequence)
            args = [a.unpack(None) if isinstance(a, _graph.SavedTensor) else a
                    for a in self.args]
            outputs = self.function(*args, **self.kwargs)
            end = next(_graph._sequence)
        twins = _recorded_between(outputs, start, end)
        self._check(twins)
        # Under create_graph the recomputed graph is differentiated again (the saved tensors
        # lead into it), so it keeps its state; otherwise the originals are its only users.
        keep_twins = grad_mode.is_grad_enabled()
        for ref, twin in zip(self.nodes, twins):
            node = ref()
            if node is None:
                continue
            node._saved = twin._saved
            node.__dict__.update(twin.__dict__)
            if not keep_twins:
                twin._saved = ()
                keep = {k: twin.__dict__[k] for k in _STRUCTURAL_KEYS if k in twin.__dict__}
                twin.__dict__.clear()
                twin.__dict__.update(keep)

    def _check(self, twins):
        names = [twin.name() for twin in twins]
        metas = [m for twin in twins for m in _saved_metadata(twin, self.metadata_fn)]
        if len(metas) > len(self.forward_metas):
            self._fail("ember.utils.checkpoint: trying to save more tensors during "
                       "recomputation than during the original forward pass.\n", names)
        if len(metas) < len(self.forward_metas):
            self._fail("ember.utils.checkpoint: A different number of tensors was saved during "
                       "the original forward and recomputation.\n"
                       f"Number of tensors saved during forward: {len(self.forward_metas)}\n"
                       f"Number of tensors saved during recomputation: {len(metas)}.\n", names)
        different = [(i, before, after) for i, (before, after)
                     in enumerate(zip(self.forward_metas, metas)) if before != after]
        if different:
            listing = "".join(f"tensor at position {i}:\nsaved metadata: {before}\n"
                              f"recomputed metadata: {after}\n" for i, before, after in different)
            self._fail("ember.utils.checkpoint: Recomputed values for the following tensors "
                       f"have different metadata than during the forward pass.\n{listing}.\n",
                       names)
        if names != self.forward_names:
            self._fail("ember.utils.checkpoint: the recomputation recorded different operations "
                       "than the original forward (autograd nodes "
                       f"{self.forward_names} during the forward, {names} during the "
                       "recomputation).\n", names)

    def _fail(self, message, recomputed_names):
        if self.debug:
            forward = "\n".join(self.forward_names)
            recompute = "\n".join(recomputed_names)
            raise CheckpointError(
                f"{message}\nYou are seeing the operations because you passed `debug=True` to "
                "checkpoint.\nAutograd nodes recorded during the original forward:\n\n"
                f"{forward}\n\nAutograd nodes recorded during recomputation:\n\n{recompute}\n")
        raise CheckpointError(message + _DEBUG_TIP)


def _checkpoint_without_reentrant(function, preserve_rng_state, context_fn, determinism_check,
                                  debug, args, kwargs):
    if _checkpoint_debug_enabled if _checkpoint_debug_enabled is not None else debug:
        if context_fn is not noop_context_fn:
            raise ValueError("debug=True is incompatible with non-default context_fn")
        debug = True
    else:
        debug = False
    if determinism_check not in _allowed_determinism_checks_to_fns:
        raise ValueError("determinism_check should be one of "
                         f"{[k for k in _allowed_determinism_checks_to_fns]}, but got "
                         f"{determinism_check}")
    forward_context, recompute_context = context_fn()
    if not grad_mode.is_grad_enabled():
        return function(*args, **kwargs)
    frame = _CheckpointFrame(function, args, kwargs,
                             _rng_snapshot(args) if preserve_rng_state else None,
                             recompute_context,
                             _allowed_determinism_checks_to_fns[determinism_check], debug)
    completed = False
    with forward_context:
        start = next(_graph._sequence)
        outputs = function(*args, **kwargs)
        end = next(_graph._sequence)
        completed = True
    if not completed:
        raise RuntimeError("ember.utils.checkpoint: the forward context provided by context_fn "
                           "suppressed an exception raised during the checkpointed forward. "
                           "This is not supported because checkpoint cannot return a value for "
                           "a failed forward.")
    frame.take_over(_recorded_between(outputs, start, end))
    return outputs


# ---- the public functions ----------------------------------------------------------------

def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn,
               determinism_check=_DEFAULT_DETERMINISM_MODE, debug=False, early_stop=True,
               **kwargs):
    """Run ``function(*args, **kwargs)`` keeping none of its intermediate activations; the
    backward recomputes them. See the module docstring for the two variants
    (``use_reentrant=False`` is recommended and has to be passed: ``None`` warns and means
    ``True``, as in PyTorch 2.13). ``preserve_rng_state`` (default True) replays the forward's
    random draws in the recomputation. ``context_fn`` returns two context managers, for the
    forward and for the recomputation. ``determinism_check``: ``"default"`` compares the
    shapes, dtypes and devices of what the recomputation saved with the forward's, ``"none"``
    only their number. ``debug=True`` puts the recorded operations in those errors.

    >>> import ember
    >>> from ember.utils.checkpoint import checkpoint
    >>> x = ember.tensor([1.0, 2.0], requires_grad=True)
    >>> y = checkpoint(lambda t: (t * t).sin(), x, use_reentrant=False)
    >>> y.sum().backward()  # runs the lambda again, then differentiates it
    >>> x.grad
    tensor([ 1.0806, -2.6146])
    """
    if use_reentrant is None:
        warnings.warn("ember.utils.checkpoint: the use_reentrant parameter should be passed "
                      "explicitly. Starting in PyTorch 2.9, calling checkpoint without "
                      "use_reentrant will raise an exception. use_reentrant=False is "
                      "recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the "
                      "differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    return _checkpoint_without_reentrant(function, preserve, context_fn, determinism_check,
                                         debug, args, kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run ``functions`` (an ``nn.Sequential`` or a list of callables) on ``input`` in
    ``segments`` chunks, checkpointing every chunk but the last."""
    from ..nn import Sequential
    if use_reentrant is None:
        warnings.warn("ember.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter "
                      "should be passed explicitly. In version 2.9 we will raise an exception if "
                      "use_reentrant is not passed. use_reentrant=False is recommended, but if "
                      "you need to preserve the current default behavior, you can pass "
                      "use_reentrant=True. Refer to docs for more details on the differences "
                      "between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input
        return forward

    if isinstance(functions, Sequential):
        functions = [*functions.children()]
    segment_size = len(functions) // segments
    end = -1
    # The last segment runs unchecked: its activations are needed right away by the backward.
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
