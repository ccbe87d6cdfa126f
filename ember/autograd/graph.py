"""The autograd graph: ``Node`` (a tensor's ``grad_fn``), saved tensors with version checks,
and ``AccumulateGrad``, the node that writes a leaf's ``.grad``.

An op that records itself creates one Node subclass instance. ``_edges`` holds, per input, the
edge ``(node, output_nr)`` its gradient flows to (``None`` for inputs that need no gradient;
the public ``next_functions`` shows those as ``(None, 0)``, as PyTorch does); ``_in_meta`` holds each input's (shape, dtype) so that the engine, not every op,
sum-reduces broadcast gradients and casts them back to the input's dtype.
"""
import itertools
import sys
import re

from .. import _dtype as dt
from . import grad_mode
from . import anomaly_mode

__all__ = ["Node", "AccumulateGrad", "SavedTensor", "VersionCounter"]

_sequence = itertools.count()


class VersionCounter:
    """Shared by a tensor and all its views; bumped by every in-place write."""
    __slots__ = ("value",)

    def __init__(self):
        self.value = 0


class _Freed:
    """Marks a node whose saved tensors were released after a backward without retain_graph."""


FREED = _Freed()


def freed_graph_error():
    return RuntimeError(
        "Trying to backward through the graph a second time (or directly access saved tensors "
        "after they have already been freed). Saved intermediate values of the graph are freed "
        "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
        "backward through the graph a second time or if you need to access saved tensors after "
        "calling backward.")


class SavedTensor:
    """A tensor kept for backward, with the version it had when saved.

    An op's own output is kept as its array plus metadata rather than as the Tensor, so the
    output does not keep its grad_fn alive through a reference cycle; unpacking rebuilds a tensor
    whose grad_fn is the saving node, which is what double backward needs."""
    __slots__ = ("tensor", "data", "version", "vc", "is_output", "meta")

    def __init__(self, t, is_output=False):
        vc = t._vc
        if vc is None:
            vc = t._vc = VersionCounter()
        self.vc = vc
        self.version = vc.value
        self.is_output = is_output
        if is_output:
            self.tensor = None
            self.data = t._data
            self.meta = (t._dtype, t._device, t._backend, t._output_nr)
        else:
            self.tensor = t

    def unpack(self, node):
        if self.vc.value != self.version:
            if self.is_output:
                dtype, device = self.meta[0], self.meta[1]
                where = f", which is output {self.meta[3]} of {_op_name(node)},"
                shape = tuple(self.data.shape)
            else:
                t = self.tensor
                dtype, device, shape = t._dtype, t._device, tuple(t._data.shape)
                where = (f", which is output {t._output_nr} of {_op_name(t.grad_fn)},"
                         if t.grad_fn is not None else "")
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: [{_type_name(dtype, device)} {list(shape)}]{where} is at "
                f"version {self.vc.value}; expected version {self.version} instead. Hint: enable "
                "anomaly detection to find the operation that failed to compute its gradient, "
                "with ember.autograd.set_detect_anomaly(True, check_nan=False).")
        if not self.is_output:
            return self.tensor
        from .._tensor import _wrap_with
        dtype, device, backend, output_nr = self.meta
        t = _wrap_with(self.data, dtype, device, backend)
        t._vc = self.vc
        t.requires_grad = True
        t.grad_fn = node
        t._output_nr = output_nr
        fw = node.__dict__.get("_fw_out")
        if fw is not None:  # the output's forward AD tangent, which its rebuilt tensor keeps
            from . import forward_ad
            forward_ad.restore_saved_tangent(t, fw, output_nr)
        return t


def _op_name(node):
    """The forward op a node belongs to, as PyTorch names it in errors ("Exp" for ExpBackward0)."""
    return re.sub(r"Backward\d*$", "", node.name())


# The dtypes with a legacy Python tensor class that PyTorch's messages name ("torch.FloatTensor");
# they name the others by the C++ type of device and dtype ("CPUBoolType").
_LEGACY_CLASS_DTYPES = frozenset(("float32", "float64", "float16", "int64", "int32", "int16",
                                  "int8", "uint8"))


def _type_name(dtype, device):
    """A tensor's type as PyTorch's autograd and shape errors print it."""
    scalar = dt.SCALAR_TYPE_NAMES[dtype.name]
    if dtype.name in _LEGACY_CLASS_DTYPES:
        return "ember." + scalar + "Tensor"
    return device.type.upper() + scalar + "Type"


_NO_EDGE = (None, 0)


class Node:
    """A backward function. Subclasses implement ``backward(*grad_outputs) -> tuple``, written in
    differentiable Ember ops so that ``create_graph=True`` can differentiate it again."""
    __slots__ = ("_edges", "_in_meta", "_seq", "_saved", "_pre_hooks", "_hooks",
                 "_tensor_pre_hooks", "_retained", "_trace", "__weakref__", "__dict__")
    #: how many outputs the forward produced (multi-output ops override)
    num_outputs = 1

    def name(self):
        return type(self).__name__

    @property
    def next_functions(self):
        return tuple(e if e is not None else _NO_EDGE for e in self._edges)

    def __repr__(self):
        return f"<{self.name()} object at {id(self):#x}>"

    @property
    def saved_tensors(self):
        saved = self._saved
        if saved is FREED:
            raise freed_graph_error()
        return tuple(s.unpack(self) if s is not None else None for s in saved)

    def save(self, *tensors):
        self._saved = tuple(SavedTensor(t) if t is not None else None for t in tensors)

    def backward(self, *grad_outputs):
        raise NotImplementedError(f"{self.name()} does not implement backward")

    def release(self):
        if self._saved:
            self._saved = FREED

    # hooks, as torch.autograd.graph.Node
    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` runs after this node computed its input gradients."""
        from ..utils.hooks import RemovableHandle
        if self._hooks is None:
            self._hooks = {}
        handle = RemovableHandle(self._hooks)
        self._hooks[handle.id] = fn
        return handle

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` runs before this node; it may return replacement gradients."""
        from ..utils.hooks import RemovableHandle
        if self._pre_hooks is None:
            self._pre_hooks = {}
        handle = RemovableHandle(self._pre_hooks)
        self._pre_hooks[handle.id] = fn
        return handle

    @property
    def metadata(self):
        return self.__dict__.setdefault("_metadata", {})


def run_tensor_hooks(hooks, grad):
    """Apply ``Tensor.register_hook`` hooks in order; a hook may return a replacement gradient
    of the same shape and dtype."""
    from .._tensor import Tensor
    for hook in list(hooks.values()):
        result = hook(grad)
        if result is None:
            continue
        if not isinstance(result, Tensor):
            raise TypeError(f"expected Variable, but hook returned '{type(result).__name__}'")
        name = getattr(hook, "__name__", type(hook).__name__)
        if result._data.shape != grad._data.shape:
            raise RuntimeError(f"hook '{name}' has changed the size of value")
        if result._dtype is not grad._dtype:
            raise RuntimeError(f"hook '{name}' has changed the type of value (was "
                               f"{_type_name(grad._dtype, grad._device)} got "
                               f"{_type_name(result._dtype, result._device)})")
        grad = result
    return grad


def init_node(node, inputs):
    """Fill the graph fields of a freshly made node from its input tensors."""
    # One explicit loop, not two generator expressions: every recorded op passes here, and a
    # generator's frame and resumptions cost more than the tuples it builds.
    edges = []
    meta = []
    for t in inputs:
        if t is None:
            edges.append(None)
            meta.append(None)
            continue
        if t.requires_grad:
            fn = t.grad_fn
            edges.append((fn, t._output_nr) if fn is not None else (accumulate_grad_node(t), 0))
        else:
            edges.append(None)
        meta.append((t._data.shape, t._dtype, t._device))
    node._edges = tuple(edges)
    node._in_meta = tuple(meta)
    node._seq = next(_sequence)
    node._saved = ()
    node._pre_hooks = node._hooks = node._tensor_pre_hooks = node._retained = None
    node._trace = anomaly_mode.forward_trace() if anomaly_mode._enabled else None
    return node


def _edge(t):
    fn = t.grad_fn
    if fn is not None:
        return (fn, t._output_nr)
    return (accumulate_grad_node(t), 0)


def _private_array(t):
    """Whether ``t``'s array is referenced by ``t`` alone (three counts: ``t``'s slot, the local
    and getrefcount's argument) and owns plain writeable memory; a plain tensor with no version
    counter has never been saved for backward nor had views taken."""
    data = t._data
    if not (type(t).__name__ == "Tensor" and t._vc is None and not t.__dict__
            and sys.getrefcount(data) == 3
            and getattr(getattr(data, "flags", None), "writeable", False)):
        return False
    base = getattr(data, "base", True)
    if base is None:
        return True
    # A contiguous view of the whole of a base that nothing else references (the view, the
    # local and getrefcount's argument) owns that memory as much as the base would: this is a
    # Linear weight's gradient, a product computed transposed and transposed back.
    return (getattr(base, "base", True) is None and sys.getrefcount(base) == 3
            and data.flags.c_contiguous and data.size == base.size)


def accumulate_grad_node(t):
    """The single AccumulateGrad node of leaf ``t`` (held weakly by the tensor, as in PyTorch)."""
    ref = t._grad_acc
    node = ref() if ref is not None else None
    if node is None:
        import weakref
        node = AccumulateGrad(t)
        t._grad_acc = weakref.ref(node)
    return node


class AccumulateGrad(Node):
    __slots__ = ("variable",)

    def __init__(self, variable):
        self.variable = variable
        self._edges = ()
        self._in_meta = ()
        # PyTorch gives AccumulateGrad the maximum sequence number, so it runs first among
        # ready nodes: a gradient reaches .grad and the post-accumulate hooks as soon as it is
        # complete, which is what lets DDP start a bucket's all-reduce while backward goes on.
        self._seq = float("inf")
        self._saved = ()
        self._pre_hooks = self._hooks = self._tensor_pre_hooks = self._retained = None
        self._trace = None

    def name(self):
        # PyTorch names this node by its C++ class, unlike the generated backward nodes.
        return "torch::autograd::AccumulateGrad"

    def accumulate(self, grad, create_graph):
        var = self.variable
        # References to a gradient nothing else holds: the engine's local, this argument and
        # getrefcount's own argument (a hook's fresh result has no engine local).
        sole_refs = 3
        if var._backward_hooks:
            hooked = run_tensor_hooks(var._backward_hooks, grad)
            if hooked is not grad:
                grad, sole_refs = hooked, 2
        if grad_mode.is_grad_enabled() and create_graph:
            var.grad = grad if var.grad is None else var.grad + grad
        elif var.grad is None:
            # .grad is accumulated in place later, so it must not share memory with anything:
            # a gradient may be shared (add's backward hands one tensor to both inputs, the
            # user passed their own `gradient`). Adopt it only when provably private, as
            # PyTorch does, else own a copy.
            if sys.getrefcount(grad) <= sole_refs and _private_array(grad):
                var.grad = grad.detach()
            else:
                var.grad = grad.detach().clone()
        elif grad._layout is not var.grad._layout and var.grad.is_sparse:
            # a dense gradient joining a sparse .grad replaces it by the dense sum, as PyTorch's
            var.grad = (grad + var.grad).detach()
        elif var.grad.requires_grad:
            var.grad = (var.grad + grad).detach()
        else:
            var.grad.add_(grad.detach())
        for hook in list((var._post_acc_hooks or {}).values()):
            hook(var)
