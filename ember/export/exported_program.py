"""``ExportedProgram``: a captured graph with its state and signature, as
``torch.export.exported_program``.

``graph_module``/``graph`` is the lifted form torch exports: parameters, buffers and constant
tensors are placeholders ahead of the user inputs, and ``graph_signature`` says which is
which. ``module()`` is the unlifted form — a module holding the state under the original
names, whose call first checks the inputs against the shapes the program was exported for."""
import copy

from ..fx.graph import Graph
from ..fx.graph_module import GraphModule
from .graph_signature import (InputKind, OutputKind, InputSpec, OutputSpec, TensorArgument,
                              ExportGraphSignature)

__all__ = ["ExportedProgram"]


def _check_inputs(args, guards, names):
    """Raise as torch's exported module does (``AssertionError: Guard failed: …``) when an
    input breaks a guard. ``guards``: per user input, None (not a tensor) or a list of dims,
    each an int (static) or [name, min, max] (dynamic; max None for unbounded)."""
    from .._tensor import Tensor
    if len(args) != len(guards):
        raise TypeError(f"Exported program expects {len(guards)} positional inputs, got "
                        f"{len(args)}")
    seen = {}
    for a, dims, name in zip(args, guards, names):
        if dims is None:
            continue
        if not isinstance(a, Tensor):
            raise AssertionError(f"Guard failed: {name} is a Tensor (got "
                                 f"{type(a).__name__})")
        if a.dim() != len(dims):
            raise AssertionError(f"Guard failed: {name}.dim() == {len(dims)} (got {a.dim()})")
        for d, (size, dim) in enumerate(zip(a.shape, dims)):
            where = f"{name}.size()[{d}]"
            if isinstance(dim, int):
                if size != dim:
                    raise AssertionError(f"Guard failed: {where} == {dim} (got {size})")
                continue
            dim_name, lo, hi = dim
            if size < lo:
                raise AssertionError(f"Guard failed: {where} >= {lo} (got {size})")
            if hi is not None and size > hi:
                raise AssertionError(f"Guard failed: {where} <= {hi} (got {size})")
            if dim_name in seen and seen[dim_name][0] != size:
                raise AssertionError(f"Guard failed: {where} == {seen[dim_name][1]} "
                                     f"(both are {dim_name}; got {size} and "
                                     f"{seen[dim_name][0]})")
            seen.setdefault(dim_name, (size, where))


class _ExportedModule(GraphModule):
    """What ``ExportedProgram.module()`` returns: the graph with its state, guarded."""

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise TypeError("the exported module takes its inputs positionally (got keyword "
                            f"arguments {sorted(kwargs)})")
        _check_inputs(args, self.__dict__["_ember_guards"], self.__dict__["_ember_input_names"])
        return super().__call__(*args)


class ExportedProgram:
    """Build with ``ember.export.export``; run with ``module()`` (a direct call raises, as
    torch's)."""

    def __init__(self, module_graph, tensors, user_input_names, guards, example_inputs=None):
        """``module_graph``: the unlifted graph (``get_attr`` for state); ``tensors``:
        {qualified name: (tensor, role)} with role parameter / buffer /
        buffer_non_persistent / constant; ``guards``: see ``_check_inputs``."""
        self._module_graph = module_graph
        self._tensors = dict(tensors)
        self._user_input_names = list(user_input_names)
        self._guards = guards
        self.example_inputs = example_inputs
        self._graph_module, self._graph_signature = self._lift()
        self._module = None

    # ---- the lifted graph ----------------------------------------------------------------------
    def _lift(self):
        graph = Graph()
        env = {}
        order = {"parameter": 0, "buffer": 1, "buffer_non_persistent": 1, "constant": 2}
        prefix = {"parameter": "p_", "buffer": "b_", "buffer_non_persistent": "b_",
                  "constant": "c_"}
        kinds = {"parameter": InputKind.PARAMETER, "buffer": InputKind.BUFFER,
                 "buffer_non_persistent": InputKind.BUFFER, "constant": InputKind.CONSTANT_TENSOR}
        read = []
        for node in self._module_graph.nodes:
            if node.op == "get_attr" and node.target not in read:
                read.append(node.target)
        read.sort(key=lambda t: order[self._tensors[t][1]])
        specs = []
        placeholder_of = {}
        for target in read:
            role = self._tensors[target][1]
            ph = graph.placeholder(prefix[role] + target.replace(".", "_").lower())
            placeholder_of[target] = ph
            persistent = None if role in ("parameter", "constant") else role == "buffer"
            specs.append(InputSpec(kinds[role], TensorArgument(ph.name), target, persistent))
        users = iter(self._user_input_names)
        for node in self._module_graph.nodes:
            if node.op == "placeholder":
                ph = graph.placeholder(next(users))
                ph.meta = dict(node.meta)
                env[node] = ph
                specs.append(InputSpec(InputKind.USER_INPUT, TensorArgument(ph.name), None))
            elif node.op == "get_attr":
                env[node] = placeholder_of[node.target]
            else:
                env[node] = graph.node_copy(node, lambda n: env[n])
        outputs = []
        out_node = next(n for n in graph.nodes if n.op == "output")

        def collect(a):
            if hasattr(a, "op"):
                outputs.append(OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(a.name), None))
            elif isinstance(a, (tuple, list)):
                for x in a:
                    collect(x)
        collect(out_node.args[0])
        return GraphModule({}, graph, "GraphModule"), ExportGraphSignature(specs, outputs)

    # ---- torch's properties --------------------------------------------------------------------
    @property
    def graph_module(self):
        return self._graph_module

    @property
    def graph(self):
        return self._graph_module.graph

    @property
    def graph_signature(self):
        return self._graph_signature

    @property
    def state_dict(self):
        """Parameters and persistent buffers by their original names."""
        return {k: t for k, (t, role) in self._tensors.items() if role in ("parameter", "buffer")}

    @property
    def constants(self):
        """Constant tensors and non-persistent buffers (torch keeps both out of state_dict)."""
        return {k: t for k, (t, role) in self._tensors.items()
                if role in ("constant", "buffer_non_persistent")}

    @property
    def range_constraints(self):
        out = {}
        for dims in self._guards:
            for dim in dims or ():
                if not isinstance(dim, int):
                    out[dim[0]] = (dim[1], dim[2])
        return out

    def parameters(self):
        yield from (t for t, role in self._tensors.values() if role == "parameter")

    def named_parameters(self):
        yield from ((k, t) for k, (t, role) in self._tensors.items() if role == "parameter")

    def buffers(self):
        yield from (t for t, role in self._tensors.values() if role.startswith("buffer"))

    def named_buffers(self):
        yield from ((k, t) for k, (t, role) in self._tensors.items() if role.startswith("buffer"))

    def module(self):
        """A runnable module: the graph with the state under the original names; calling it
        with a shape the program was not exported for raises ``AssertionError``."""
        m = _ExportedModule({k: t for k, (t, _) in self._tensors.items()},
                            copy.deepcopy(self._module_graph), "GraphModule")
        for name, (_, role) in self._tensors.items():
            if role in ("constant", "buffer_non_persistent"):
                *prefix, field = name.split(".")
                m.get_submodule(".".join(prefix))._non_persistent_buffers_set.add(field)
        m.__dict__["_ember_guards"] = self._guards
        m.__dict__["_ember_input_names"] = self._user_input_names
        m.eval()
        return m

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Unable to call ExportedProgram directly. You should use "
                           "`exported_program.module()` instead.")

    def run_decompositions(self, decomp_table=None, decompose_custom_triton_ops=False):
        raise NotImplementedError("run_decompositions: an Ember program is made of Ember ops, "
                                  "which have no ATen decompositions")

    def __str__(self):
        return (f"ExportedProgram:\n{self._graph_module.print_readable(print_output=False)}\n"
                f"Graph signature:\n{self._graph_signature}\nRange constraints: "
                f"{self.range_constraints}\n")

    __repr__ = __str__
