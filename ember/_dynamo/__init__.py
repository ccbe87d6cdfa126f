"""``torch._dynamo`` for Ember: the front end of ``ember.compile``.

``ember.compile(fn_or_module)`` records a call of the function (``convert_frame``: the concrete
tracer, graph breaks at data-dependent Python, a watcher for effects a replay would skip), cuts
the recording into graphs that a backend compiles (``backends/registry.py``: ``"inductor"``,
``"eager"``, ``"aot_eager"`` or any callable), and replays them on later calls whose guards hold
(``guards.py``, ``eval_frame.py``), falling back to eager where it must."""
from . import config, exc, utils  # noqa: F401
from .backends.registry import register_backend, lookup_backend, list_backends  # noqa: F401
from .eval_frame import (optimize, disable, allow_in_graph, reset, explain,  # noqa: F401
                         is_compiling, OptimizedModule)

__all__ = ["compile", "optimize", "disable", "allow_in_graph", "reset", "explain", "config",
           "exc", "register_backend", "lookup_backend", "list_backends", "is_compiling",
           "mark_dynamic", "maybe_mark_dynamic", "mark_static", "OptimizedModule", "utils",
           "is_dynamo_supported"]


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None,
            options=None, disable=False):
    """``torch.compile``: ``model`` (a function or a Module) recorded into graphs on its first
    call and replayed from them while its guards hold; a decorator without ``model``.

    ``fullgraph=True`` raises ``ember._dynamo.exc.Unsupported`` at the first graph break (naming
    what broke it and the source line) or at an effect that needs an eager fallback. ``dynamic``
    as torch's: None (automatic dynamic), the first graph is specialised and a recompile caused
    by a size change makes the changed dims symbolic, so that graph serves every size >= 2;
    True, every dim symbolic from the first call; False, every shape specialised (a new shape
    records a new graph, up to ``config.recompile_limit``). ``mark_dynamic``/``mark_static``
    override it per dimension. Sizes 0 and 1 are always specialised, as in torch. ``mode`` is
    one of torch's (None, "default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs",
    "max-autotune"); it and ``options`` are passed to the backend as keyword arguments.
    ``disable=True`` returns ``model`` unchanged."""
    from .eval_frame import _compile, _backend_options
    lookup_backend(backend)
    _backend_options(backend, mode, options)   # the mode/options checks, before any call
    if dynamic not in (None, True, False):
        raise TypeError(f"dynamic must be None, True or False, got {dynamic!r}")
    if model is None:
        def decorate(m):
            return compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                           options=options, disable=disable)
        return decorate
    return _compile(model, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                    options=options, disable=disable)


def mark_dynamic(t, index, *, min=None, max=None):
    """Mark dimension(s) ``index`` of ``t`` dynamic, as torch does (``t._dynamo_dynamic_indices``):
    the first graph recorded with ``t`` serves every size >= 2 of those dims, whatever
    ``compile(dynamic=...)`` says. Where the function reads the size into Python (Ember has no
    symbolic integers) the dim is specialised, with a warning. ``min``/``max`` are accepted and
    not checked."""
    dims = [index] if isinstance(index, int) else list(index)
    marked = set(getattr(t, "_dynamo_dynamic_indices", ()) or ())
    marked.update(d % t.dim() if t.dim() else d for d in dims)
    t._dynamo_dynamic_indices = marked


def maybe_mark_dynamic(t, index):
    """A hint that ``index`` may vary: as torch's, it is dynamic where it can be and specialised
    (without a warning) where it cannot; Ember's automatic dynamic treats it so anyway."""
    t._dynamo_weak_dynamic_indices = set(getattr(t, "_dynamo_weak_dynamic_indices", ()) or ()) \
        | ({index} if isinstance(index, int) else set(index))


def mark_static(t, index=None):
    """Mark dimension(s) ``index`` (all when None) of ``t`` static: specialised even under
    ``dynamic=True`` or automatic dynamic."""
    dims = getattr(t, "_dynamo_dynamic_indices", None)
    if dims:
        dims.difference_update(range(t.dim()) if index is None else
                               ([index] if isinstance(index, int) else index))
    t._dynamo_static_indices = set(range(t.dim()) if index is None else
                                   ([index] if isinstance(index, int) else index))


def is_dynamo_supported():
    return True
