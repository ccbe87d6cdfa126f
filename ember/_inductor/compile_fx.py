"""``compile_fx``: the back end of ``ember.compile`` (torch's ``torch._inductor.compile_fx``).

``compile_fx(gm, example_inputs, **options)`` takes a graph captured by the front end
(``ember/_dynamo``) and returns a callable with ``gm``'s signature. The graph goes through the
passes (``fx_passes/``: dead code, common subexpressions, constant folding, and for inference
conv/linear + batch-norm folding and element-wise fusion), then is lowered to generated Python
over the backend's arrays (``codegen.py``) with planned buffers (``memory_planning.py``).

One compiled object serves both ways a graph is run: without gradients (``no_grad``, or no
input or parameter requiring grad) it runs the inference code; with them it runs the
forward/backward pair of ``_functorch/aot_autograd.py`` as one autograd node. Each variant is
generated on its first use (the training one per pattern of ``requires_grad`` flags) and kept.

Options (torch's names where torch has them):
- ``freezing`` (default False): treat parameters and buffers as constants (folded at compile
  time, never re-read), as ``torch._inductor.config.freezing``. Without it, batch-norm folding
  re-folds when a folded tensor's version counter moves, and nothing else reads a parameter
  before the call.
- ``fusion``, ``buffer_planning``, ``passes`` (each default True): turn the element-wise fusion,
  the buffer reuse, or every graph pass off (for debugging a difference from eager).
- ``mode``: torch's compile modes (``"default"``, ``"reduce-overhead"``, ``"max-autotune"``,
  ``"max-autotune-no-cudagraphs"``) are accepted and compile the same code: their differences in
  torch are kernel autotuning and CUDA graphs, which this back end does not do.
"""
import copy

from .._tensor import Tensor
from ..autograd import grad_mode
from . import fx_passes
from .codegen import GraphLowering

__all__ = ["compile_fx", "aot_eager", "CompiledGraph", "resolve_attrs"]

_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs", None)
_OPTIONS = {"freezing": False, "fusion": True, "buffer_planning": True, "passes": True,
            "mode": None}


def resolve_attrs(gm, graph):
    """``{get_attr target: the object gm holds there}`` for ``graph``'s get_attr nodes."""
    attrs = {}
    for n in graph.nodes:
        if n.op == "get_attr" and n.target not in attrs:
            obj = gm
            for part in n.target.split("."):
                obj = getattr(obj, part)
            attrs[n.target] = obj
    return attrs


def _has_mutation(graph):
    """Whether a node writes into a value (an in-place op or ``setitem``): generated code on
    arrays cannot keep the eager aliasing and version-counter semantics of such a write."""
    for n in graph.nodes:
        if n.op in ("call_function", "call_method") and n.is_impure():
            return True
        if n.op in ("call_function", "call_method") and n.kwargs.get("inplace") is True:
            return True
        if n.op in ("call_function", "call_method") and n.kwargs.get("out") is not None:
            return True
    return False


class CompiledGraph:
    """What ``compile_fx`` returns: call it like the GraphModule. ``source`` is the inference
    code, ``sources`` every variant generated so far, ``graph`` the graph after the passes."""

    def __init__(self, gm, example_inputs, options, aot_eager=False):
        self.gm = gm
        self.options = options
        self.aot_eager = aot_eager
        self.is_tensor = [isinstance(x, Tensor) for x in example_inputs]
        self._example = [x if not isinstance(x, Tensor) else None for x in example_inputs]
        first = next((x for x in example_inputs if isinstance(x, Tensor)), None)
        if first is None:
            first = next((p for p in gm.parameters()), None) or next(gm.buffers(), None)
        self.like = None if first is None else first.new_empty(0)
        self.base_graph = copy.deepcopy(gm.graph)
        self.attrs = resolve_attrs(gm, self.base_graph)
        self.eager_only = self.like is None or _has_mutation(self.base_graph)
        self.param_tensors = [v for v in self.attrs.values() if isinstance(v, Tensor)]
        self._inference = None
        self._training = {}
        self.sources = {}
        self.graph = None
        # A graph the front end runs at several sizes (dynamic shapes): the generated code
        # bakes shapes in (reshapes, broadcasts, buffer sizes), so each input shape gets its
        # own variant, made from the graph with its shapes propagated anew.
        self.dynamic = getattr(gm, "_ember_dynamic", False) and not self.eager_only
        if self.dynamic:
            self._shape_key = _shape_key(example_inputs)
            self._by_shape = {}

    # ---- variants ----------------------------------------------------------------------------
    def _passes(self, training):
        graph = copy.deepcopy(self.base_graph)
        attrs = dict(self.attrs)
        opts = self.options
        if self.aot_eager or not opts["passes"]:
            return graph, attrs
        fx_passes.eliminate_dead_code(graph)
        fx_passes.eliminate_common_subexpressions(graph)
        fx_passes.fold_constants(graph, attrs, freezing=opts["freezing"] and not training)
        if not training:
            fx_passes.fold_batch_norms(graph, attrs, freezing=opts["freezing"])
            if opts["fusion"]:
                fx_passes.fuse_elementwise(graph)
        fx_passes.eliminate_dead_code(graph)
        return graph, attrs

    def _compile_inference(self):
        if self.aot_eager:
            self._inference = self.gm
            return
        graph, attrs = self._passes(training=False)
        self.graph = graph
        examples = [self.like if t else x for t, x in zip(self.is_tensor, self._example)]
        lowering = GraphLowering(graph, attrs, self.like, example_inputs=examples,
                                 plan=self.options["buffer_planning"])
        source = lowering.inference_source()
        fn, _ = lowering.compile(source, "forward")
        self.sources["inference"] = source
        self.buffer_plan = lowering.buffer_plan
        self._thread_buffers = lowering.thread_buffers
        self._inference = fn

    def _compile_training(self, args, key):
        from .._functorch.aot_autograd import aot_compile_training, EAGER
        graph, attrs = self._passes(training=True)
        compiled = aot_compile_training(graph, attrs, self.like, list(args),
                                        plan=self.options["buffer_planning"] and
                                        not self.aot_eager)
        if compiled is None:  # nothing to differentiate: the inference code serves
            if self._inference is None:
                self._compile_inference()
            compiled = self._inference
        elif compiled == EAGER:
            compiled = self.gm
        else:
            self.sources[f"training{key}"] = compiled.source
        self._training[key] = compiled
        return compiled

    def _respecialise(self, args):
        """A compiled graph for inputs of other sizes: ``gm`` with its ``tensor_meta``
        propagated at ``args``' shapes (one eager run, with the random generators put back)."""
        from .. import _random
        from ..fx.graph_module import GraphModule
        from ..fx.passes.shape_prop import ShapeProp
        # the same parameters and buffers (a deepcopy would train copies), a fresh graph
        graph = copy.deepcopy(self.gm.graph)
        gm = GraphModule(resolve_attrs(self.gm, graph), graph, type(self.gm).__name__)
        saved = _random.default_states()
        try:
            with grad_mode.no_grad():
                ShapeProp(gm).propagate(*[a.detach() if isinstance(a, Tensor) else a
                                          for a in args])
        finally:
            _random.restore_default_states(saved)
        return CompiledGraph(gm, list(args), self.options, aot_eager=self.aot_eager)

    @property
    def buffers(self):
        """The calling thread's planned buffers of the inference code (reused every call)."""
        if self._inference is None and not self.eager_only:
            self._compile_inference()
        tb = getattr(self, "_thread_buffers", None)
        return [] if tb is None else tb()

    @property
    def source(self):
        """The generated inference code (generated now if it has not run yet)."""
        if self.eager_only:
            return self.gm.code
        if self._inference is None:
            self._compile_inference()
        return self.sources.get("inference", getattr(self.gm, "code", ""))

    # ---- calling -----------------------------------------------------------------------------
    def __call__(self, *args):
        if self.eager_only:
            return self.gm(*args)
        if self.dynamic:
            key = _shape_key(args)
            if key != self._shape_key:
                variant = self._by_shape.get(key)
                if variant is None:
                    variant = self._by_shape[key] = self._respecialise(args)
                return variant(*args)
        if grad_mode._state.enabled:
            key = None
            for a in args:
                if isinstance(a, Tensor) and a._requires_grad:
                    key = True
                    break
            if key is None:
                for p in self.param_tensors:
                    if p._requires_grad:
                        key = True
                        break
            if key:
                key = (tuple(isinstance(a, Tensor) and a._requires_grad for a in args),
                       tuple(p._requires_grad for p in self.param_tensors))
                fn = self._training.get(key)
                if fn is None:
                    fn = self._compile_training(args, key)
                return fn(*args)
        fn = self._inference
        if fn is None:
            self._compile_inference()
            fn = self._inference
        return fn(*args)


def _shape_key(args):
    return tuple(a._data.shape if isinstance(a, Tensor) else None for a in args)


def _options(options):
    for key in options:
        if key not in _OPTIONS and key != "config_patches":
            # torch.compile(options=...)'s error for a name its inductor config lacks
            raise RuntimeError(f"Unexpected optimization option {key}, known options are "
                               f"{sorted(_OPTIONS)}")
    merged = dict(_OPTIONS)
    merged.update(options.pop("config_patches", None) or {})
    merged.update(options)
    if merged["mode"] not in _MODES:
        raise RuntimeError(f"Unrecognized mode={merged['mode']}, should be one of: "
                           f"{', '.join(m for m in _MODES if m)}")
    return merged


def compile_fx(gm, example_inputs, **options):
    """The compiled form of ``gm`` (an ``ember.fx.GraphModule`` from the concrete tracer),
    callable with the same flat positional inputs and returning what ``gm`` returns."""
    return CompiledGraph(gm, list(example_inputs), _options(dict(options)))


def aot_eager(gm, example_inputs, **options):
    """torch's ``"aot_eager"`` back end: the forward/backward split of AOT autograd (one autograd
    node, the graph's own backward) with none of the other passes; without gradients the graph
    runs as captured."""
    return CompiledGraph(gm, list(example_inputs), _options(dict(options)), aot_eager=True)

