"""``ember.autograd.Function``: user-defined ops with a hand-written backward, as in PyTorch.

``forward(ctx, *args)`` runs without recording; its tensor outputs get a node whose
``backward`` calls the class's ``backward(ctx, *grads)``. The node *is* the ctx, so
``ctx.save_for_backward`` stores version-checked saved tensors on the graph itself.
"""
import contextlib
import functools
import inspect
import weakref

from . import grad_mode
from .graph import Node, SavedTensor, init_node

__all__ = ["Function", "FunctionCtx", "once_differentiable"]


_NO_CONTEXT = contextlib.nullcontext()


class FunctionCtx:
    """The methods available on ``ctx`` inside ``forward``/``setup_context``/``backward``."""

    def save_for_backward(self, *tensors):
        from .._tensor import Tensor
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError("save_for_backward can only save variables, but argument "
                                f"{i} is of type {type(t).__name__}")
        self._to_save = tensors

    @property
    def saved_tensors(self):
        return Node.saved_tensors.fget(self)

    def save_for_forward(self, *tensors):
        """Tensors ``jvp`` reads back through ``ctx.saved_tensors`` (forward AD)."""
        from .._tensor import Tensor
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError("save_for_forward expects all arguments to be tensors; you "
                                f"should save non-tensors as attributes on ctx. Got {type(t)}.")
        self._saved_for_forward = tensors

    def mark_dirty(self, *tensors):
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        self._non_diff = tensors

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)


class BackwardCFunction(Node, FunctionCtx):
    """The graph node of a custom Function: ``backward`` delegates to the user's class."""
    __slots__ = ()
    _forward_cls = None

    def backward(self, *grads):
        if self.__dict__.get("materialize_grads", True):
            # a non-tensor output (meta None) has no gradient to materialise, as in torch
            grads = tuple(g if g is not None or meta is None else _zeros_for(meta)
                          for g, meta in zip(grads, self._out_meta))
        result = self._forward_cls.backward(self, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        positions = self._tensor_positions
        if len(result) < len(self._arg_count_list):
            raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients "
                               f"(expected {len(self._arg_count_list)}, got {len(result)})")
        extra = result[len(self._arg_count_list):]
        if any(g is not None for g in extra):
            raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients "
                               f"(expected {len(self._arg_count_list)}, got {len(result)})")
        return tuple(result[i] for i in positions)

    def name(self):
        return type(self).__name__


def _zeros_for(meta):
    from ..ops import zeros
    shape, dtype, device = meta
    return zeros(shape, dtype=dtype, device=device)


class _FunctionMeta(type):
    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,),
                                 {"__slots__": (), "_forward_cls": cls})


class Function(metaclass=_FunctionMeta):
    """Subclass with ``@staticmethod forward(ctx, ...)`` and ``backward(ctx, *grads)``, then call
    ``YourFunction.apply(...)``. ``forward(*args)`` plus ``setup_context(ctx, inputs, output)``
    (PyTorch 2's split form) is supported too."""

    generate_vmap_rule = False

    def __init__(self, *args, **kwargs):
        import warnings
        warnings.warn(f"{self.__class__} should not be instantiated. Methods on autograd functions "
                      "are all static, so you should invoke them on the class itself. "
                      "Instantiating an autograd function will raise an error in a future "
                      "version of PyTorch.", DeprecationWarning, stacklevel=2)

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your "
                                  "custom autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use "
            "new-style autograd function with static forward method. (Example: "
            "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @classmethod
    def apply(cls, *args, **kwargs):
        from .._tensor import Tensor
        uses_setup = cls.setup_context is not Function.setup_context
        if uses_setup:
            args, kwargs = _bind_args(cls.forward, args, kwargs, apply_defaults=True), {}
        elif kwargs:
            # Keyword tensors are inputs too: bind them to their positions (ctx comes first).
            bound = inspect.signature(cls.forward).bind(None, *args, **kwargs)
            args, kwargs = bound.args[1:], bound.kwargs
        node_cls = cls._backward_cls
        ctx = node_cls.__new__(node_cls)
        tensor_args = [a for a in args if isinstance(a, Tensor)]
        ctx._tensor_positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx._arg_count_list = args
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
        ctx._to_save = ()
        ctx._dirty = ()
        ctx._non_diff = ()
        from . import forward_ad
        dual = forward_ad._current_level >= 0 and forward_ad.any_tangent(tensor_args)
        # inside a dual level, forward runs on the primals: the tangents come from jvp
        with grad_mode.no_grad(), (forward_ad.suspended() if dual else _NO_CONTEXT):
            if uses_setup:
                outputs = cls.forward(*args)
            else:
                outputs = cls.forward(ctx, *args, **kwargs)
        if uses_setup:
            cls.setup_context(ctx, args, outputs)
        is_tuple = isinstance(outputs, tuple)
        outs = outputs if is_tuple else (outputs,)
        record = grad_mode.is_grad_enabled() and any(t._requires_grad for t in tensor_args)
        init_node(ctx, tensor_args)
        dirty = {id(t) for t in ctx._dirty}
        non_diff = {id(t) for t in ctx._non_diff}
        input_ids = {id(t) for t in tensor_args}
        result = []
        out_meta = []
        for i, o in enumerate(outs):
            if not isinstance(o, Tensor):
                result.append(o)
                out_meta.append(None)
                continue
            differentiable = id(o) not in non_diff
            if id(o) in input_ids and id(o) not in dirty:
                # An input returned unchanged becomes a new alias so it can carry this node.
                o = o.detach()
            if id(o) in dirty:
                if record and o.grad_fn is None and o._requires_grad:
                    raise RuntimeError("a leaf Variable that requires grad has been used in an "
                                       "in-place operation.")
                o._bump_version()
            out_meta.append((o._data.shape, o._dtype, o._device))
            if record and differentiable and (o._dtype.is_floating_point or o._dtype.is_complex):
                o.grad_fn = ctx
                o._requires_grad = True
                o._output_nr = i
            result.append(o)
        ctx._out_meta = out_meta
        ctx.num_outputs = len(outs)
        ctx._saved = tuple(SavedTensor(t, is_output=t.grad_fn is ctx) if t is not None else None
                           for t in ctx._to_save)
        if dual:
            _forward_derivative(cls, ctx, args, result)
        return tuple(result) if is_tuple else result[0]


def _forward_derivative(cls, ctx, args, outputs):
    """Forward AD through a custom Function: ``cls.jvp(ctx, *tangents)`` (one per forward
    argument, None where it has none) gives the outputs' tangents."""
    from .._tensor import Tensor
    from . import forward_ad
    if cls.jvp is Function.jvp:
        Function.jvp(ctx)  # PyTorch's error
    tangents = [a._fw_grad if isinstance(a, Tensor) else None for a in args]
    saved = getattr(ctx, "_saved_for_forward", None)
    if saved is not None:  # ctx.saved_tensors in jvp reads what save_for_forward kept
        kept = ctx._saved
        ctx._saved = tuple(SavedTensor(t) if t is not None else None for t in saved)
    try:
        with forward_ad.suspended():
            result = cls.jvp(ctx, *tangents)
    finally:
        if saved is not None:
            ctx._saved = kept
    if not isinstance(result, tuple):
        result = (result,)
    tensor_outs = [o for o in outputs if isinstance(o, Tensor)]
    if len(result) != len(outputs) and len(result) != len(tensor_outs):
        raise RuntimeError(f"function {cls.__name__}_jvp returned an incorrect number of "
                           f"forward gradients (expected {len(outputs)}, got {len(result)})")
    pairs = zip(outputs, result) if len(result) == len(outputs) else zip(tensor_outs, result)
    for out, tangent in pairs:
        if isinstance(out, Tensor) and tangent is not None and out._dtype._kind >= 2:
            forward_ad.set_tangent(out, tangent)


_signatures = weakref.WeakKeyDictionary()  # forward function -> (signature, plain arity)


def _bind_args(func, args, kwargs, apply_defaults):
    entry = _signatures.get(func)
    if entry is None:
        signature = inspect.signature(func)
        kinds = [p.kind for p in signature.parameters.values()]
        # positional arguments that bind to themselves: all of them (forward(*args)), exactly
        # as many as the parameters, or (-1) none without binding
        if kinds == [inspect.Parameter.VAR_POSITIONAL]:
            plain = None
        elif all(k in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                 for k in kinds):
            plain = len(kinds)
        else:
            plain = -1
        entry = (signature, plain)
        try:
            _signatures[func] = entry
        except TypeError:  # not weakly referenceable: bound again next time
            pass
    signature, plain = entry
    if not kwargs and (plain is None or len(args) == plain):
        return args
    bound = signature.bind(*args, **kwargs)
    if apply_defaults:
        bound.apply_defaults()
    return bound.args


def once_differentiable(fn):
    """Marks a backward that computes on raw values: it runs without recording a graph, and
    differentiating its results again (``create_graph=True``) raises when reached."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with grad_mode.no_grad():
            outputs = fn(ctx, *args)
        if not grad_mode.is_grad_enabled():
            return outputs
        from .._tensor import Tensor
        if not any(isinstance(a, Tensor) and a._requires_grad for a in args):
            return outputs
        is_tuple = isinstance(outputs, tuple)
        outs = outputs if is_tuple else (outputs,)
        err_node = init_node(DelayedError.__new__(DelayedError), ())
        err_node.num_outputs = len(outs)
        aliases = []
        for i, o in enumerate(outs):
            if isinstance(o, Tensor):
                o = o.detach()
                o.grad_fn = err_node
                o._requires_grad = True
                o._output_nr = i
            aliases.append(o)
        return tuple(aliases) if is_tuple else aliases[0]
    return wrapper


class DelayedError(Node):
    """Stands in for a backward that cannot be differentiated; fails only if reached."""
    __slots__ = ()

    def backward(self, *grads):
        raise RuntimeError("trying to differentiate twice a function that was marked with "
                           "@once_differentiable")


class InplaceFunction(Function):
    def __init__(self, inplace=False):
        self.inplace = inplace


class NestedIOFunction(Function):
    pass
