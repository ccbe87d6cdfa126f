"""``Node``: one operation of an FX ``Graph``, as ``torch.fx.node``.

A node is a value: its ``args``/``kwargs`` name the nodes it reads, and ``users`` the nodes that
read it. Both directions are kept in step by the ``args``/``kwargs`` setters, so any edit made
through them leaves the graph consistent for codegen, dead-code elimination and rewriting."""
import builtins
import operator

__all__ = ["Node", "map_arg", "map_aggregate", "Argument", "Target"]

Argument = object  # what may sit in args: a Node, a literal, or a tuple/list/dict/slice of them
Target = object  # a str (module path, method name, attribute path) or a callable

_OPCODES = ("placeholder", "call_method", "call_module", "call_function", "get_attr", "output",
            "root")

# Functions whose result must be kept even when nobody reads it: they exist for their effect.
_side_effectful_functions = {operator.setitem}


def has_side_effect(fn):
    """Mark ``fn`` as impure, so that ``eliminate_dead_code`` keeps its calls, as torch.fx's."""
    _side_effectful_functions.add(fn)
    return fn


def map_aggregate(a, fn):
    """Apply ``fn`` to every leaf of ``a``, rebuilding tuples (named ones too), lists, dicts and
    slices around the results."""
    if isinstance(a, tuple):
        mapped = tuple(map_aggregate(elem, fn) for elem in a)
        # A namedtuple's constructor takes its fields one by one.
        return mapped if type(a) is tuple or not hasattr(a, "_fields") else type(a)(*mapped)
    if isinstance(a, list):
        return [map_aggregate(elem, fn) for elem in a]
    if isinstance(a, dict):
        return {k: map_aggregate(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn),
                     map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a, fn):
    """Apply ``fn`` to every Node inside ``a`` (leaving literals as they are)."""
    if not callable(fn):
        raise TypeError("torch.fx.map_arg(a, fn): fn must be a callable")
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def _qualified_name(fn):
    """A dotted name that reads as the callable in generated code and printed graphs."""
    if getattr(builtins, getattr(fn, "__name__", ""), None) is fn:
        return f"builtins.{fn.__name__}"
    if getattr(operator, getattr(fn, "__name__", ""), None) is fn:
        return f"operator.{fn.__name__}"
    from ._symbolic_trace import _public_ember_name
    public = _public_ember_name(fn)
    if public is not None:
        return public
    module = getattr(fn, "__module__", None) or "__main__"
    return f"{module}.{getattr(fn, '__qualname__', getattr(fn, '__name__', repr(fn)))}"


def _format_arg(arg, max_list_len=float("inf")):
    """A node argument as torch.fx prints it in a graph: nodes as ``%name``."""
    if isinstance(arg, Node):
        return "%" + arg.name
    if isinstance(arg, tuple) and not hasattr(arg, "_fields"):
        items = ", ".join(_format_arg(a) for a in arg)
        return f"({items},)" if len(arg) == 1 else f"({items})"
    if isinstance(arg, list):
        return "[" + ", ".join(_format_arg(a) for a in arg) + "]"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items()) + "}"
    return str(arg)


class Node:
    """One operation of a Graph: ``op`` is one of placeholder, get_attr, call_function,
    call_method, call_module, output; ``target`` what it calls or reads; ``meta`` a free dict
    that passes (ShapeProp, export) fill, e.g. ``meta["tensor_meta"]``."""

    def __init__(self, graph, name, op, target, args, kwargs, return_type=None):
        if op not in _OPCODES:
            raise ValueError(f"Node op must be one of {_OPCODES[:-1]}, got {op!r}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                             f"{type(target)} but a Callable is expected")
        if op in ("call_method", "call_module", "get_attr", "placeholder") and \
                not isinstance(target, str):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                             f"{type(target)} but a str is expected")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes = {}
        self._args = ()
        self._kwargs = {}
        self.users = {}
        self.type = return_type
        self._prev = self
        self._next = self
        self._erased = False
        self.meta = {}
        self._update_args_kwargs(args, kwargs)

    # ---- position in the graph's list ---------------------------------------------------------
    @property
    def next(self):
        return self._next

    @property
    def prev(self):
        return self._prev

    def _remove_from_list(self):
        p, n = self._prev, self._next
        p._next, n._prev = n, p

    def prepend(self, x):
        """Move (or insert) node ``x`` just before this one."""
        if x is self:
            raise RuntimeError("Trying to prepend a node to itself")
        if x.graph is not self.graph:
            raise RuntimeError("Attempting to move a Node into a different Graph")
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x):
        """Move (or insert) node ``x`` just after this one."""
        self._next.prepend(x)

    # ---- inputs and users ----------------------------------------------------------------------
    @property
    def args(self):
        return self._args

    @args.setter
    def args(self, a):
        self._update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self):
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k):
        self._update_args_kwargs(self._args, k)

    @property
    def all_input_nodes(self):
        return list(self._input_nodes)

    def _update_args_kwargs(self, new_args, new_kwargs):
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._input_nodes = {}
        self._args = map_arg(tuple(new_args), self._collect_input)
        self._kwargs = map_arg(dict(new_kwargs), self._collect_input)
        for new in self._input_nodes:
            new.users.setdefault(self, None)

    def _collect_input(self, n):
        if n.graph is not self.graph:
            raise RuntimeError(f"Node '{n}' of another graph cannot be an argument of Node "
                               f"'{self}'")
        self._input_nodes.setdefault(n)
        return n

    def update_arg(self, idx, arg):
        args = list(self.args)
        args[idx] = arg
        self.args = tuple(args)

    def insert_arg(self, idx, arg):
        args = list(self.args)
        args.insert(idx, arg)
        self.args = tuple(args)

    def update_kwarg(self, key, arg):
        self.kwargs = {**self.kwargs, key: arg}

    def replace_all_uses_with(self, replace_with, delete_user_cb=lambda user: True, *,
                              propagate_meta=False):
        """Make every user of this node (for which ``delete_user_cb`` holds) read
        ``replace_with`` instead; returns the users changed."""
        if propagate_meta:
            if replace_with.meta:
                raise AssertionError("Called node.replace_all_uses_with(replace_with, "
                                     "propagate_meta=True), but replace_with already has "
                                     ".meta keys")
            replace_with.meta.update(self.meta)
        to_process = [u for u in self.users if delete_user_cb(u)]
        for user in to_process:
            user.replace_input_with(self, replace_with)
        return to_process

    def replace_input_with(self, old_input, new_input):
        """Read ``new_input`` wherever this node read ``old_input``."""
        def swap(n):
            return new_input if n is old_input else n
        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    # ---- properties of the operation ------------------------------------------------------------
    def is_impure(self):
        """Whether the node has an effect beyond its value (so dead-code elimination keeps it)."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            return self.target in _side_effectful_functions
        if self.op == "call_method":
            # An in-place method (``add_``) writes into its first argument.
            return self.target.endswith("_") and not self.target.endswith("__")
        if self.op == "call_module":
            owner = self.graph.owning_module
            if owner is None:
                return False
            target_mod = owner.get_submodule(self.target)
            return getattr(target_mod, "_is_impure", False)
        return False

    def format_node(self, placeholder_names=None, maybe_return_typename=None):
        """The line torch.fx prints for this node in ``str(graph)``."""
        if self.op == "placeholder":
            default = f"(default={self.args[0]})" if self.args else ""
            return (f"%{self.name} : [num_users={len(self.users)}] = "
                    f"placeholder[target={self.target}]{default}")
        if self.op == "get_attr":
            return (f"%{self.name} : [num_users={len(self.users)}] = "
                    f"get_attr[target={self.target}]")
        if self.op == "output":
            return f"return {self.args[0]}"
        target = _qualified_name(self.target) if callable(self.target) else self.target
        return (f"%{self.name} : [num_users={len(self.users)}] = {self.op}[target={target}]"
                f"(args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})")

    def __repr__(self):
        return self.name

    # Nodes are identities: equality must not be overloaded (they key dicts everywhere).
    __hash__ = object.__hash__
