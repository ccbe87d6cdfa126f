"""``ScriptModule``, ``script``, ``save``/``load`` and the ``ignore``/``unused``/``export``
markers, as ``torch.jit._script`` and ``torch.jit._serialization``.

A ScriptModule here is a GraphModule: its forward is Python generated from an ``ember.fx``
graph of Ember ops (``.code`` shows that Python; there is no TorchScript language in Ember).
``script`` captures a module by symbolic tracing, so it takes the modules whose forward
``ember.fx.symbolic_trace`` can capture and names the construct it cannot otherwise."""
import functools
import threading

from ..fx.graph_module import GraphModule
from . import _serialization

__all__ = ["ScriptModule", "ScriptFunction", "RecursiveScriptModule", "script", "save", "load",
           "ignore", "unused", "export", "is_scripting"]

_state = threading.local()


class ScriptModule(GraphModule):
    """A module that runs from its graph. ``graph`` is the ``ember.fx.Graph``; ``code`` is the
    generated forward's Python source (Ember's Python, not TorchScript)."""

    def __init__(self, root, graph, class_name="ScriptModule", original_name=None):
        super().__init__(root, graph, class_name)
        self.__dict__["original_name"] = original_name or class_name

    @property
    def inlined_graph(self):
        return self.graph

    def save(self, f, _extra_files=None):
        """``torch.jit.save(self, f)``."""
        save(self, f, _extra_files)

    def _constant_names(self):
        return getattr(self, "_ember_constant_names", set())

    def __deepcopy__(self, memo):
        new = super().__deepcopy__(memo)
        new.__dict__["original_name"] = self.original_name
        return new


class RecursiveScriptModule(ScriptModule):
    """What ``jit.script`` and ``jit.load`` return (torch's name for a scripted module)."""


class ScriptFunction(ScriptModule):
    """A traced or scripted free function: a ScriptModule without parameters."""


# ---- decorators --------------------------------------------------------------------------------

def ignore(drop=False, **kwargs):
    """``@jit.ignore``: the function stays Python. Ember's capture runs Python anyway, so an
    ignored function is traced through (``trace``) or symbolically run (``script``) like any
    other; ``@jit.ignore(drop=True)`` is ``@jit.unused``."""
    if callable(drop):
        drop._ember_jit_ignore = True
        return drop
    if kwargs:
        raise TypeError(f"ignore() got unexpected keyword arguments {sorted(kwargs)}")

    def decorator(fn):
        return unused(fn) if drop else ignore(fn)
    return decorator


def unused(fn):
    """``@jit.unused``: the scripted module must not run it. Calling it while ``script``
    captures a forward raises (torch raises when the scripted code reaches it)."""
    if isinstance(fn, property):
        return property(unused(fn.fget), fn.fset, fn.fdel, fn.__doc__)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if getattr(_state, "scripting", False):
            raise RuntimeError(f"'{fn.__qualname__}' was marked @torch.jit.unused: the scripted "
                               "module cannot call it")
        return fn(*args, **kwargs)
    wrapper._ember_jit_unused = True
    return wrapper


def export(fn):
    """``@jit.export``: torch compiles the method besides forward. Ember's scripted module is
    one graph of forward, so ``script`` refuses a module with exported methods."""
    fn._ember_jit_export = True
    return fn


def is_scripting():
    """False: Ember never runs code compiled from TorchScript (``script`` captures a graph and
    runs generated Python, in which this is never called)."""
    return False


# ---- script ------------------------------------------------------------------------------------

def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """``torch.jit.script(module)``: the module captured by ``ember.fx.symbolic_trace``.

    Raises ``RuntimeError`` naming the construct when the forward cannot be captured (data-
    dependent control flow, ``len`` of a traced value…): use ``jit.trace`` for those."""
    from ..nn import Module
    from ..fx import symbolic_trace
    from ..fx.proxy import TraceError
    if optimize is not None:
        raise TypeError("script(): `optimize` is deprecated in torch and has no effect; "
                        "remove it")
    if isinstance(obj, ScriptModule):
        return obj
    if not isinstance(obj, Module):
        if callable(obj):
            raise NotImplementedError(
                f"jit.script({getattr(obj, '__name__', obj)!r}): Ember scripts Modules only "
                "(free functions have no TorchScript compiler here); wrap it in a Module or use "
                "jit.trace with example inputs")
        raise RuntimeError(f"jit.script: cannot script an object of type {type(obj).__name__}")
    exported = [name for name in dir(type(obj)) if name != "forward"
                and getattr(getattr(type(obj), name, None), "_ember_jit_export", False)]
    if exported:
        raise NotImplementedError(f"jit.script: methods marked @jit.export ({exported}) are not "
                                  "supported: Ember's scripted module holds forward only")
    _state.scripting = True
    try:
        gm = _inlined_symbolic_trace(obj)
        if gm is None:
            gm = symbolic_trace(obj)
    except (TraceError, TypeError, NotImplementedError) as e:
        raise RuntimeError(f"jit.script could not capture {type(obj).__name__}.forward: {e}. "
                           "Use jit.trace with example inputs for code that depends on "
                           "tensor values or shapes") from e
    finally:
        _state.scripting = False
    from ._trace import _copy_unread_state
    scripted = RecursiveScriptModule(gm, gm.graph, type(obj).__name__)
    _copy_unread_state(obj, scripted)
    return scripted


def _inlined_symbolic_trace(m):
    """``m`` traced through every submodule whose forward traces symbolically (a graph of
    Ember ops, which ``save`` can write); a submodule that does not (the input checks of
    BatchNorm or attention branch on shapes; a layer calling its function through a class
    attribute the tracer does not see) stays a leaf. None when ``m`` itself does not trace."""
    from ..fx import Tracer, GraphModule
    from ..fx.proxy import TraceError
    traces = {}

    class _Inlining(Tracer):
        def is_leaf_module(self, module, qualified_name):
            if id(module) not in traces:
                try:
                    _Inlining().trace(module)
                    traces[id(module)] = True
                except (TraceError, TypeError, NotImplementedError):
                    traces[id(module)] = False
            return not traces[id(module)]
    try:
        graph = _Inlining().trace(m)
    except (TraceError, TypeError, NotImplementedError):
        return None
    return GraphModule(m, graph, type(m).__name__)


# ---- save / load -------------------------------------------------------------------------------

def _module_tensors(m):
    """Every tensor the graph reads: {qualified name: (tensor, role)}."""
    tensors = {}
    constants = m._constant_names() if isinstance(m, ScriptModule) else set()
    for name, p in m.named_parameters():
        tensors[name] = (p, "parameter")
    for name, b in m.named_buffers():
        *prefix, field = name.split(".")
        owner = m.get_submodule(".".join(prefix))
        persistent = field not in owner._non_persistent_buffers_set
        role = "constant" if name in constants else ("buffer" if persistent else
                                                       "buffer_non_persistent")
        tensors[name] = (b, role)
    return tensors


def save(m, f, _extra_files=None):
    """``torch.jit.save``: one zip of the graph (as data) and its tensors; no pickled code."""
    if not isinstance(m, ScriptModule):
        raise RuntimeError(f"jit.save expects a ScriptModule (from jit.trace, jit.script or "
                           f"jit.load), got {type(m).__name__}")
    if _extra_files:
        raise NotImplementedError("jit.save: _extra_files is not supported by Ember's archive")
    for node in m.graph.nodes:
        if node.op == "get_attr":
            from .._tensor import Tensor
            value = m
            for part in node.target.split("."):
                value = getattr(value, part)
            if not isinstance(value, Tensor):
                raise RuntimeError(f"jit.save: node {node.name} reads {node.target!r}, a "
                                   f"{type(value).__name__} that has no data form")
    header = {"graph": _serialization.graph_to_data(m.graph), "class_name": type(m).__name__,
              "original_name": m.original_name, "training": m.training,
              "script_class": type(m).__bases__[0].__name__}
    _serialization.write_archive(f, "jit", header, _module_tensors(m))


_CLASSES = {"ScriptModule": ScriptModule, "RecursiveScriptModule": RecursiveScriptModule,
            "ScriptFunction": ScriptFunction}


def _check_map_location(map_location):
    from .._device import device
    if map_location is not None and not isinstance(map_location, (str, device)):
        raise NotImplementedError("load: map_location must be a device or a device string in "
                                  "Ember")


def load(f, map_location=None, _extra_files=None):
    """``torch.jit.load``: rebuild the module from an archive ``jit.save`` wrote. Only Ember
    ops are resolved from the file; the model's own Python is never needed or imported."""
    _check_map_location(map_location)
    if _extra_files:
        raise NotImplementedError("jit.load: _extra_files is not supported by Ember's archive")
    header, tensors = _serialization.read_archive(f, "jit", map_location)
    graph = _serialization.graph_from_data(header["graph"])
    cls = _CLASSES.get(header.get("script_class"), RecursiveScriptModule)
    if cls is ScriptModule:
        cls = RecursiveScriptModule
    m = cls({name: t for name, (t, _) in tensors.items()}, graph, header["class_name"],
            header.get("original_name"))
    from ..fx.graph_module import _set_attr
    have = {n for n, _ in m.named_parameters()} | {n for n, _ in m.named_buffers()}
    for name, (t, _) in tensors.items():
        if name not in have:  # state the graph never reads (num_batches_tracked…)
            _set_attr(m, name, t)
    _restore_roles(m, tensors)
    m.train(header.get("training", False))
    return m


def _restore_roles(m, tensors):
    constants = set()
    for name, (_, role) in tensors.items():
        *prefix, field = name.split(".")
        owner = m.get_submodule(".".join(prefix))
        if role in ("constant", "buffer_non_persistent"):
            owner._non_persistent_buffers_set.add(field)
        if role == "constant":
            constants.add(name)
    m.__dict__["_ember_constant_names"] = constants
