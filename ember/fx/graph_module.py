"""``GraphModule``: a Module whose forward is generated from a Graph, as
``torch.fx.graph_module``.

It holds the submodules, parameters and buffers its graph reads (the root's own objects, so
``state_dict`` has the root's keys), and ``recompile()`` regenerates ``forward`` after the graph
is edited. Each instance gets its own subclass, so that setting ``forward`` on the class (what
``recompile`` does) affects that one instance, as in torch.fx."""
import copy
import linecache

from ..nn import Module
from .graph import Graph

__all__ = ["GraphModule"]

_next_source_id = [0]


def _copy_attr(from_module, to_module, target):
    """Make ``to_module.<target>`` the object at ``from_module.<target>``, creating empty
    Modules for path prefixes ``to_module`` lacks."""
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:
            return  # the whole submodule is shared already
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    orig = getattr(from_module, field)
    from .._tensor import Tensor
    from ..nn import Parameter
    # Every tensor but a parameter becomes a (persistent) buffer, constants such as
    # ``_tensor_constant0`` too, so that ``.to()``/``state_dict`` carry it, as torch.fx does.
    if isinstance(orig, Tensor) and not isinstance(orig, Parameter):
        to_module.register_buffer(field, orig)
    else:
        setattr(to_module, field, orig)


def _set_attr(to_module, target, value):
    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(to_module, item, None)
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        to_module = t
    from .._tensor import Tensor
    from ..nn import Parameter
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        to_module.register_buffer(field, value)
    else:
        setattr(to_module, field, value)


def _exec_with_source(src, globals_):
    """Compile ``src`` under a unique file name kept in linecache, so that tracebacks through
    the generated forward show its lines."""
    _next_source_id[0] += 1
    filename = f"<eval_with_key>.{_next_source_id[0]}"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    exec(compile(src, filename, "exec"), globals_)


class GraphModule(Module):
    """``GraphModule(root, graph, class_name="GraphModule")``: ``root`` is a Module (the
    attributes the graph names are copied from it) or a dict from qualified name to object."""

    def __new__(cls, *args, **kwargs):
        # One subclass per instance: ``recompile`` sets ``forward`` on it.
        base = cls
        while getattr(base, "_fx_instance_class", False):
            base = base.__bases__[0]
        impl = type(base.__name__, (base,), {"_fx_instance_class": True,
                                             "__module__": base.__module__})
        return super().__new__(impl)

    def __init__(self, root, graph, class_name="GraphModule"):
        super().__init__()
        type(self).__name__ = class_name
        type(self).__qualname__ = class_name
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if not isinstance(node.target, str):
                        raise TypeError(f"Node {node.name} target {node.target} must be a str")
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            targets = {n.target for n in graph.nodes if n.op in ("get_attr", "call_module")}
            for target in sorted(targets, key=lambda t: t.count(".")):
                if target not in root:
                    raise RuntimeError(f"Node {target} referenced target {target} but that "
                                       "target was not provided in ``root``!")
                _set_attr(self, target, root[target])
        else:
            raise RuntimeError(f"Unsupported type {root} passed for root!")
        self.graph = graph

    # ``graph`` is a property so that assigning one re-owns it and regenerates forward.
    @property
    def graph(self):
        return self.__dict__["_graph"]

    @graph.setter
    def graph(self, g):
        if not isinstance(g, Graph):
            raise TypeError(f"Expected a Graph instance, but got {type(g)}")
        self.__dict__["_graph"] = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self):
        """The generated forward's Python source."""
        if "_code" not in self.__dict__:
            raise RuntimeError("Code has not been generated: assign a graph to this "
                               "GraphModule (which compiles it) first")
        return self._code

    def recompile(self):
        """Regenerate ``forward`` from ``self.graph`` (call it after editing the graph)."""
        python_code = self._graph.python_code(root_module="self")
        self.__dict__["_code"] = python_code.src
        globals_ = dict(python_code.globals)
        _exec_with_source(python_code.src, globals_)
        type(self).forward = globals_["forward"]
        return python_code

    def print_readable(self, print_output=True, include_stride=False, include_device=False,
                       colored=False):
        """The module as a readable class definition (nested GraphModules included)."""
        if include_stride or include_device or colored:
            raise NotImplementedError("print_readable: include_stride, include_device and "
                                      "colored are not implemented in Ember; the plain listing "
                                      "is printed without them")
        text = self._readable(type(self).__name__)
        if print_output:
            print(text)
        return text

    def _readable(self, name, indent=0):
        lines = [f"class {name}(ember.nn.Module):"]
        for child_name, child in self.named_children():
            if isinstance(child, GraphModule):
                lines.extend("    " + ln for ln in child._readable(child_name).splitlines())
        code = self.code.strip("\n")
        lines.extend("    " + ln.rstrip() for ln in code.splitlines())
        return "\n".join(" " * indent + ln for ln in lines) + "\n"

    # ---- editing attributes ---------------------------------------------------------------------
    def add_submodule(self, target, m):
        """Install ``m`` at dotted path ``target`` (creating empty Modules on the way)."""
        *prefix, field = target.split(".")
        mod = self
        for item in prefix:
            sub = getattr(mod, item, None)
            if sub is None:
                sub = Module()
                mod.add_module(item, sub)
            if not isinstance(sub, Module):
                return False
            mod = sub
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target):
        *prefix, field = target.split(".")
        mod = self
        for item in prefix:
            if not hasattr(mod, item):
                return False
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                return False
        if not hasattr(mod, field) or not isinstance(getattr(mod, field), Module):
            return False
        delattr(mod, field)
        return True

    def delete_all_unused_submodules(self):
        """Drop the submodules that no node reads (nor any read module lives under)."""
        used = set()
        for node in self.graph.nodes:
            if node.op in ("call_module", "get_attr"):
                atoms = node.target.split(".")
                for i in range(1, len(atoms) + 1):
                    used.add(".".join(atoms[:i]))
                if node.op == "call_module":
                    sub = self.get_submodule(node.target)
                    for name, _ in sub.named_modules():
                        if name:
                            used.add(f"{node.target}.{name}")
        for name, _ in list(self.named_modules()):
            if name and name not in used:
                self.delete_submodule(name)

    def __deepcopy__(self, memo):
        base = type(self).__bases__[0]
        new = base.__new__(base)
        memo[id(self)] = new
        state = {k: v for k, v in self.__dict__.items() if k not in ("_graph", "_code")}
        new.__dict__.update(copy.deepcopy(state, memo))
        type(new).__name__ = type(new).__qualname__ = type(self).__name__
        new.graph = copy.deepcopy(self.graph, memo)
        return new

    def __reduce__(self):
        raise TypeError("Pickling a GraphModule is not supported yet: save its state_dict and "
                        "re-trace the model, or deep-copy it in process")

    def __str__(self):
        return "\n".join([super().__str__(), self.code, "# To see more debug info, please use "
                          "`graph_module.print_readable()`"])
