"""``Graph``: the FX intermediate representation, as ``torch.fx.graph``.

A doubly linked list of ``Node``s in execution order (placeholders first, one output last),
with the editing API (insertion points, erase, copy), checks (``lint``), dead-code elimination
and Python code generation: ``python_code`` turns the graph into the source of a ``forward``
that a ``GraphModule`` compiles and runs."""
import builtins
import contextlib
import copy
import inspect
import keyword
import math
import operator
import re

from .node import Node, map_arg, _qualified_name, _format_arg

__all__ = ["Graph", "PythonCode", "CodeGen"]

# Operator functions written as Python operators in generated code (torch.fx prints the same).
_BINARY_OPERATORS = {
    operator.add: "{} + {}", operator.sub: "{} - {}", operator.mul: "{} * {}",
    operator.floordiv: "{} // {}", operator.truediv: "{} / {}", operator.mod: "{} % {}",
    operator.pow: "{} ** {}", operator.lshift: "{} << {}", operator.rshift: "{} >> {}",
    operator.and_: "{} & {}", operator.or_: "{} | {}", operator.xor: "{} ^ {}",
    operator.matmul: "{} @ {}", operator.eq: "{} == {}", operator.ne: "{} != {}",
    operator.lt: "{} < {}", operator.gt: "{} > {}", operator.le: "{} <= {}",
    operator.ge: "{} >= {}",
}
_UNARY_OPERATORS = {operator.neg: "-{}", operator.pos: "+{}", operator.invert: "~{}"}


class _Namespace:
    """Unique Python identifiers for nodes: ``add``, ``add_1``, ``add_2``…; a name that would
    shadow a builtin or be a keyword starts at ``_1`` (``sum_1``, ``getattr_1``)."""

    def __init__(self):
        self._used = set()
        self._next_suffix = {}

    def create_name(self, candidate):
        candidate = re.sub(r"[^0-9a-zA-Z_]+", "_", candidate) or "_"
        if candidate[0].isdigit():
            candidate = f"_{candidate}"
        match = re.fullmatch(r"(.*)_(\d+)", candidate)
        base = match.group(1) if match and match.group(1) else candidate
        if candidate not in self._used and not self._is_reserved(candidate):
            self._used.add(candidate)
            return candidate
        suffix = self._next_suffix.get(base, 1)
        while f"{base}_{suffix}" in self._used:
            suffix += 1
        self._next_suffix[base] = suffix + 1
        name = f"{base}_{suffix}"
        self._used.add(name)
        return name

    def _is_reserved(self, name):
        return (keyword.iskeyword(name) or hasattr(builtins, name)
                or name in ("self", "ember", "operator", "inf", "nan", "device"))

    def remove(self, name):
        self._used.discard(name)


class _NodeList:
    """The graph's nodes in order, as a view: iteration survives erasing the current node."""

    def __init__(self, graph, direction="_next"):
        self._graph = graph
        self._direction = direction

    def __len__(self):
        return self._graph._len

    def __iter__(self):
        root = self._graph._root
        cur = getattr(root, self._direction)
        while cur is not root:
            if not cur._erased:
                yield cur
            cur = getattr(cur, self._direction)

    def __reversed__(self):
        return _NodeList(self._graph, "_prev" if self._direction == "_next" else "_next")

    def __repr__(self):
        return repr(list(self))


class PythonCode:
    """What ``Graph.python_code`` returns: ``src`` (the module-level source of ``forward``)
    and ``globals`` (the names that source reads besides builtins)."""

    def __init__(self, src, globals_):
        self.src = src
        self.globals = globals_


def _literal(value, add_global):
    """``value`` (a non-node argument) as Python source that evaluates to it."""
    from .._dtype import dtype as _dtype
    from .._device import device as _device
    from .._memory_format import memory_format as _memory_format
    from .._tensor import Size
    if isinstance(value, Node):
        return value.name
    if isinstance(value, Size):
        return _literal(tuple(value), add_global)
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        items = ", ".join(_literal(v, add_global) for v in value)
        return f"({items},)" if len(value) == 1 else f"({items})"
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v, add_global) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_literal(k, add_global)}: {_literal(v, add_global)}"
                               for k, v in value.items()) + "}"
    if isinstance(value, slice):
        return (f"slice({_literal(value.start, add_global)}, {_literal(value.stop, add_global)}, "
                f"{_literal(value.step, add_global)})")
    if isinstance(value, float) and not math.isfinite(value):
        return ("-inf" if value < 0 else "inf") if math.isinf(value) else "nan"
    if isinstance(value, (_dtype, _memory_format)):
        return repr(value)  # ``ember.float32``: the generated code's globals hold ``ember``
    if isinstance(value, _device):
        add_global("device", _device)
        return repr(value)
    if value is Ellipsis:
        return "..."
    if isinstance(value, (str, int, float, bool, complex, type(None))):
        return repr(value)
    if callable(value):
        return add_global(_global_name(value), value)
    if hasattr(value, "_fields"):  # a namedtuple instance
        cls_name = add_global(type(value).__name__, type(value))
        return f"{cls_name}(" + ", ".join(_literal(v, add_global) for v in value) + ")"
    raise NotImplementedError(f"Cannot generate Python source for an argument of type "
                              f"{type(value).__name__}: {value!r}")


def _global_name(fn):
    """A function's name in generated code: its module and qualified name, as torch.fx
    spells it (``mymodule_helper``), so that it cannot collide with a node's name."""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", type(fn).__name__)
    module = getattr(fn, "__module__", None)
    return f"{module}_{name}" if module else name


class CodeGen:
    """Turns a Graph into ``forward``'s source. Each value is released (``x = None``) right
    after its last use, so a generated forward holds no more memory than eager code."""

    def gen_fn_def(self, free_vars, root_module="self"):
        return f"def forward({', '.join([root_module] + free_vars)}):"

    def generate(self, graph, root_module="self"):
        import ember
        globals_ = {"ember": ember, "operator": operator, "inf": math.inf, "nan": math.nan,
                    "getattr": getattr}
        taken = set(globals_) | {n.name for n in graph.nodes}

        def add_global(name, obj):
            if name.startswith("ember.") and _resolves(name, obj):
                return name
            for existing, value in globals_.items():
                if value is obj:
                    return existing
            base = re.sub(r"[^0-9a-zA-Z_]", "_", name) or "fn"
            name, i = base, 1
            while name in taken or keyword.iskeyword(name) or hasattr(builtins, name):
                name = f"{base}_{i}"
                i += 1
            taken.add(name)
            globals_[name] = obj
            return name

        # Last use of each value: walking backwards, the first reader seen is the last one.
        last_reader = {}
        for node in reversed(graph.nodes):
            for inp in node.all_input_nodes:
                last_reader.setdefault(inp, node)
        released_after = {}
        for value, reader in last_reader.items():
            released_after.setdefault(reader, []).append(value)

        free_vars, body = [], []
        for node in graph.nodes:
            line = self._emit(node, free_vars, add_global, root_module)
            if line is None:
                continue
            dead = [] if node.op == "output" else list(released_after.get(node, []))
            if node.op not in ("placeholder", "output") and not node.users:
                dead.append(node)
            if dead:
                line += ";  " + " = ".join(n.name for n in dead) + " = None"
            body.append(line)
        if not any(n.op == "output" for n in graph.nodes):
            body.append("pass")
        src = self.gen_fn_def(free_vars, root_module) + "\n" + \
            "".join(f"    {line}\n" for line in body) + "    "
        return PythonCode("\n\n\n" + src, globals_)

    def _emit(self, node, free_vars, add_global, root_module):
        def lit(a):
            return _literal(a, add_global)

        def operand(a):
            # ``(-2) ** x``, not ``-2 ** x`` (which is ``-(2 ** x)``).
            text = lit(a)
            return f"({text})" if not isinstance(a, Node) and text.startswith("-") else text

        def call_args(args, kwargs):
            parts = [lit(a) for a in args] + [f"{k} = {lit(v)}" for k, v in kwargs.items()]
            return ", ".join(parts)

        op, target, args, kwargs = node.op, node.target, node.args, node.kwargs
        if op == "placeholder":
            if target.startswith("*"):
                free_vars.append(target)  # ``*args``: a default has no meaning there
            else:
                free_vars.append(f"{target} = {lit(args[0])}" if args else target)
            # A placeholder named differently from its argument (concrete args) is bound here.
            raw = target.lstrip("*")
            return None if raw == node.name else f"{node.name} = {raw}"
        if op == "get_attr":
            return f"{node.name} = {_attr_path(root_module, target)}"
        if op == "call_module":
            return f"{node.name} = {_attr_path(root_module, target)}({call_args(args, kwargs)})"
        if op == "call_method":
            self_arg, rest = args[0], args[1:]
            return f"{node.name} = {lit(self_arg)}.{target}({call_args(rest, kwargs)})"
        if op == "call_function":
            if target in _BINARY_OPERATORS and len(args) == 2 and not kwargs:
                return f"{node.name} = " + _BINARY_OPERATORS[target].format(operand(args[0]),
                                                                           operand(args[1]))
            if target in _UNARY_OPERATORS and len(args) == 1 and not kwargs:
                return f"{node.name} = " + _UNARY_OPERATORS[target].format(operand(args[0]))
            if target is operator.getitem and len(args) == 2 and not kwargs:
                return f"{node.name} = {lit(args[0])}[{_index(args[1], lit)}]"
            if target is getattr and len(args) == 2 and not kwargs and \
                    isinstance(args[1], str) and args[1].isidentifier():
                return f"{node.name} = {lit(args[0])}.{args[1]}"
            qualified = _qualified_name(target)
            if qualified.startswith("builtins.") and getattr(builtins, target.__name__, None) \
                    is target:
                name = target.__name__
            elif qualified.startswith("operator."):
                name = qualified
            else:
                name = add_global(qualified if qualified.startswith("ember.")
                                  else _global_name(target), target)
            return f"{node.name} = {name}({call_args(args, kwargs)})"
        if op == "output":
            return f"return {lit(args[0])}"
        raise NotImplementedError(f"node {node.name}: unknown op {op!r}")


def _resolves(dotted, obj):
    """Whether ``dotted`` (``ember.relu``) reads as ``obj`` from the ``ember`` module."""
    import ember
    value = ember
    for atom in dotted.split(".")[1:]:
        try:
            value = getattr(value, atom)
        except AttributeError:
            return False
    value = getattr(value, "__fx_original__", value)
    return value is obj


def _index(idx, lit):
    """An index as written between brackets: ``x[0]``, ``x[:, 1:2]``."""
    def one(i):
        if isinstance(i, slice):
            parts = ["" if p is None else lit(p) for p in (i.start, i.stop, i.step)]
            return ":".join(parts[:2]) + (f":{parts[2]}" if i.step is not None else "")
        return lit(i)
    if isinstance(idx, tuple) and idx:
        return ", ".join(one(i) for i in idx) + ("," if len(idx) == 1 else "")
    return one(idx)


def _attr_path(root, target):
    out = root
    for atom in target.split("."):
        out = f"{out}.{atom}" if atom.isidentifier() and not keyword.iskeyword(atom) \
            else f'getattr({out}, "{atom}")'
    return out


class Graph:
    """An editable program of Nodes, as ``torch.fx.Graph``."""

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras=None):
        self._root = Node(self, "", "root", "", (), {})
        self._len = 0
        self._namespace = _Namespace()
        self._insert = self._root.prepend
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras
        self._codegen = CodeGen()

    @property
    def owning_module(self):
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod):
        self._owning_module = mod

    @property
    def nodes(self):
        return _NodeList(self)

    def find_nodes(self, *, op, target=None, sort=True):
        """The nodes with this ``op`` (and ``target``, when given), in graph order."""
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    # ---- building -----------------------------------------------------------------------------
    def create_node(self, op, target, args=None, kwargs=None, name=None, type_expr=None):
        """Make a node at the current insertion point (the end, unless ``inserting_*``)."""
        args = () if args is None else tuple(args)
        kwargs = {} if kwargs is None else dict(kwargs)
        candidate = name if name is not None else self._target_to_str(target)
        name = self._namespace.create_name(candidate)
        node = Node(self, name, op, target, args, kwargs, type_expr)
        self._insert(node)
        self._len += 1
        return node

    def _target_to_str(self, target):
        op = getattr(target, "__name__", type(target).__name__) if callable(target) else target
        if op.startswith("*"):
            return "_" + op.lstrip("*")  # ``*args`` names its node ``_args``, as torch.fx
        if len(op) > 4 and op.startswith("__") and op.endswith("__"):
            op = op[2:-2]  # ``__add__`` names its node ``add``
        return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", op).lower()

    def placeholder(self, name, type_expr=None, default_value=inspect.Signature.empty):
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args=args, type_expr=type_expr)

    def get_attr(self, qualified_name, type_expr=None):
        mod = self.owning_module
        if mod is not None and not _has_attr_path(mod, qualified_name):
            import warnings
            warnings.warn(f"Attempted to insert a get_attr Node with no underlying reference in "
                          f"the owning GraphModule! Call GraphModule.add_submodule to add the "
                          f"necessary submodule, GraphModule.add_parameter to add the necessary "
                          f"Parameter, or nn.Module.register_buffer to add the necessary buffer")
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name, args=None, kwargs=None, type_expr=None):
        mod = self.owning_module
        if mod is not None and not _has_attr_path(mod, module_name):
            import warnings
            warnings.warn("Attempted to insert a call_module Node with no underlying reference "
                          "in the owning GraphModule! Call GraphModule.add_submodule to add the "
                          "necessary submodule")
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_function", the_function, args, kwargs,
                                type_expr=type_expr)

    def output(self, result, type_expr=None):
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def node_copy(self, node, arg_transform=lambda x: x):
        """A copy of ``node`` (from any graph) here, its node arguments mapped through
        ``arg_transform``; ``meta`` is copied too."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        result = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        result.meta = copy.copy(node.meta)
        return result

    def graph_copy(self, g, val_map, return_output_node=False):
        """Copy every node of ``g`` but its output here, filling ``val_map`` (old node → new);
        returns the copied output value (or node, with ``return_output_node``)."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return (rv, node) if return_output_node else rv
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo=None):
        memo = memo if memo is not None else {}
        g = Graph(tracer_cls=self._tracer_cls)
        out = g.graph_copy(self, {}, return_output_node=True)
        if out is not None:
            rv, old_output = out
            g.output(rv, type_expr=getattr(old_output, "type", None))
        return g

    # ---- editing ------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _insert_point(self, insert):
        previous = self._insert
        self._insert = insert
        try:
            yield
        finally:
            self._insert = previous

    def inserting_before(self, n=None):
        """Context manager: new nodes go before ``n`` (the start of the graph when None)."""
        if n is None:
            return self.inserting_after(self._root)
        if n.graph is not self:
            raise ValueError("Node to insert before is not in graph.")
        return self._insert_point(n.prepend)

    def inserting_after(self, n=None):
        """Context manager: new nodes go after ``n`` (in creation order; the end when None)."""
        if n is None:
            return self.inserting_before(self._root)
        if n.graph is not self:
            raise ValueError("Node to insert after is not in graph.")
        # Insert before n's successor as it is now, so several new nodes keep their order.
        return self._insert_point(n.next.prepend)

    def erase_node(self, to_erase):
        """Remove a node nobody reads any more."""
        if len(to_erase.users) > 0:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had "
                               f"{len(to_erase.users)} users in the graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            import warnings
            warnings.warn(f"erase_node({to_erase}) on an already erased node")
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        self._namespace.remove(to_erase.name)
        # Drop its reads, so that its inputs no longer list it among their users.
        to_erase._update_args_kwargs((), {})

    def eliminate_dead_code(self, is_impure_node=None):
        """Erase every pure node whose value nobody reads; returns whether anything changed."""
        self.lint()
        changed = False
        for node in reversed(self.nodes):
            impure = is_impure_node(node) if is_impure_node is not None else node.is_impure()
            if not impure and len(node.users) == 0:
                self.erase_node(node)
                changed = True
        return changed

    # ---- checking -----------------------------------------------------------------------------
    def lint(self):
        """Check the graph's invariants: nodes belong to it, names are unique, every argument
        is defined before it is read, the user links agree, and (with an owning module) every
        get_attr/call_module target exists."""
        seen_names, seen_nodes = set(), set()
        for node in self.nodes:
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            if node.op not in ("placeholder", "get_attr", "call_function", "call_method",
                               "call_module", "output"):
                raise RuntimeError(f"Node {node} had unknown opcode {node.op}!")
            for arg in node.all_input_nodes:
                if arg._erased:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' was erased")
                if arg.graph is not self:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' does not belong to "
                                       "this Graph, but was used as an argument! If you are "
                                       "copying nodes from another graph, make sure to use "
                                       "``arg_transform`` on node_copy() to remap values\n"
                                       f"{self}")
                if arg not in seen_nodes:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' was used before it "
                                       "has been defined! Please check that Nodes in the graph "
                                       "are topologically ordered\n{self}")
                if node not in arg.users:
                    raise RuntimeError(f"Node '{node}' reads '{arg}' but is not among its users")
            if node.name in seen_names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            seen_names.add(node.name)
            seen_nodes.add(node)
        outputs = [n for n in self.nodes if n.op == "output"]
        if len(outputs) > 1:
            raise RuntimeError("Graph has more than one output node")
        if outputs and outputs[0].next is not self._root:
            raise RuntimeError("The output node must be the last node of the Graph")
        mod = self.owning_module
        if mod is not None:
            for node in self.nodes:
                if node.op in ("get_attr", "call_module") and \
                        not _has_attr_path(mod, node.target):
                    raise RuntimeError(f"Node {node} target {node.target} references "
                                       "nonexistent attribute of the owning module")

    # ---- code ---------------------------------------------------------------------------------
    def python_code(self, root_module="self"):
        """Source of a ``forward`` computing this graph (and the globals it reads)."""
        return self._codegen.generate(self, root_module)

    def __str__(self):
        lines = ["graph():"]
        for node in self.nodes:
            lines.append("    " + node.format_node())
        return "\n".join(lines)

    def print_tabular(self):
        """Print the nodes as a table: opcode, name, target, args, kwargs."""
        rows = [["opcode", "name", "target", "args", "kwargs"]]
        for n in self.nodes:
            target = _qualified_name(n.target) if callable(n.target) else n.target
            rows.append([n.op, n.name, str(target), _format_arg(n.args), _format_arg(n.kwargs)])
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip()
                 for row in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        print("\n".join(lines))


def _has_attr_path(mod, target):
    obj = mod
    for atom in target.split("."):
        if not hasattr(obj, atom):
            return False
        obj = getattr(obj, atom)
    return True
