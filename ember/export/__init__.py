"""``ember.export``: whole-graph capture for deployment, as ``torch.export``.

``export(model, args, dynamic_shapes=...)`` records the Ember ops the model runs on ``args``
(the concrete tracer ``make_fx``, the one under ``jit.trace``) into an ``ExportedProgram``.
Ember's tracer records fixed sizes, so a dimension is allowed to be dynamic only when the
graph captured at another size is the same graph (nothing baked the size: no ``view(5, 4)``,
no size-shaped constant); a dynamic dimension the graph specialised raises
``NotImplementedError`` at export, naming it. ``save``/``load`` write and read a ``.pt2``-style
zip of Ember's own format (graph as data, tensors as ``.npy``; nothing executable)."""
import inspect

from .dynamic_shapes import Dim, dims  # noqa: F401
from .exported_program import ExportedProgram  # noqa: F401
from .graph_signature import (ExportGraphSignature, InputKind, InputSpec, OutputKind,  # noqa
                              OutputSpec, TensorArgument, ConstantArgument)
from . import dynamic_shapes as _dynamic_shapes

__all__ = ["export", "save", "load", "Dim", "dims", "ExportedProgram", "ExportGraphSignature",
           "InputKind", "InputSpec", "OutputKind", "OutputSpec", "TensorArgument",
           "ConstantArgument"]


def _user_input_names(mod, n):
    try:
        params = list(inspect.signature(mod.forward).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(names) < n or len(set(names)) != len(names):
        return [f"args_{i}" for i in range(n)]
    return names[:n]


def _structure(gm):
    """What must not change between captures at two sizes for a dim to be dynamic."""
    shapes = []
    for node in gm.graph.nodes:
        if node.op == "get_attr" and node.target.startswith("_tensor_constant"):
            value = getattr(gm, node.target)
            shapes.append(tuple(value.shape))
    return str(gm.graph), shapes


def _other_size_inputs(args, dims_per_input):
    """``args`` with every dynamic dim of the same Dim moved to another size in its range."""
    new_size = {}
    for dims_of, a in zip(dims_per_input, args):
        for d, dim in dims_of.items():
            if dim.__name__ not in new_size:
                size = a.shape[d]
                new_size[dim.__name__] = size + 1 if size + 1 <= dim.max else size - 1
                if new_size[dim.__name__] < max(dim.min, 0):
                    new_size[dim.__name__] = None  # a range of one size: nothing to vary
    return _resized(args, dims_per_input, lambda dim: new_size[dim.__name__]), new_size


def _resized(args, dims_per_input, size_of):
    """``args`` with each dynamic axis moved to ``size_of(dim)`` (None: kept), as fresh values
    (a capture at another size only needs the shapes). ``dims_per_input``: per argument,
    {axis: dim}."""
    import ember
    out = []
    for dims_of, a in zip(dims_per_input, args):
        if not dims_of:
            out.append(a)
            continue
        shape = list(a.shape)
        for axis, dim in dims_of.items():
            if size_of(dim) is not None:
                shape[axis] = size_of(dim)
        if a.is_floating_point():
            out.append(ember.randn(*shape, dtype=a.dtype, device=a.device))
        else:
            out.append(ember.zeros(*shape, dtype=a.dtype, device=a.device))
    return out


def export(mod, args, kwargs=None, *, dynamic_shapes=None, strict=False,
           preserve_module_call_signature=()):
    """``torch.export.export``: an ExportedProgram of ``mod`` on ``args``.

    ``strict`` is accepted either way: Ember has one capture (the concrete tracer), which
    records only Ember ops and bakes in Python control flow, as both of torch's modes do."""
    from ..nn import Module
    from .._tensor import Tensor
    from ..jit._trace import _capture
    if not isinstance(mod, Module):
        raise ValueError(f"Expected `mod` to be an instance of `torch.nn.Module`, got "
                         f"{type(mod)}.")
    if not isinstance(args, tuple):
        raise ValueError(f"Expecting `args` to be a tuple of example positional inputs, got "
                         f"{type(args)}")
    if kwargs:
        raise NotImplementedError("export: keyword inputs are not supported in Ember; pass "
                                  "them positionally in args")
    if preserve_module_call_signature:
        raise NotImplementedError("export: preserve_module_call_signature is not supported: "
                                  "Ember's program is one flat graph")
    dims_per_input = _dynamic_shapes._normalize(mod, args, dynamic_shapes)
    gm, constants = _capture(mod, args)
    if any(dims_per_input):
        others, sizes = _other_size_inputs(args, dims_per_input)
        if any(s is not None for s in sizes.values()):
            try:
                other_gm, _ = _capture(mod, tuple(others))
                same = _structure(other_gm) == _structure(gm)
            except Exception as e:  # the model itself refuses the other size
                same, why = False, f" (at the other size the model raised: {e})"
            else:
                why = ""
            if not same:
                names = sorted(sizes)
                raise NotImplementedError(
                    f"export: the dims marked dynamic ({', '.join(names)}) were specialised by "
                    f"the traced graph{why}: Ember's tracer records fixed sizes, and this "
                    "model's graph bakes them (a view/reshape to literal sizes or a constant "
                    "shaped by them), so a program captured at one size cannot run at "
                    "another. Export without these dims in dynamic_shapes (one program per "
                    "size), or use a model whose graph does not depend on them")
    tensors = {}
    for name, p in gm.named_parameters():
        tensors[name] = (p, "parameter")
    for name, b in gm.named_buffers():
        *prefix, field = name.split(".")
        owner = gm.get_submodule(".".join(prefix))
        if name in constants:
            role = "constant"
        elif field in owner._non_persistent_buffers_set:
            role = "buffer_non_persistent"
        else:
            role = "buffer"
        tensors[name] = (b, role)
    for node in gm.graph.nodes:
        if node.op == "get_attr" and node.target not in tensors:
            raise RuntimeError(f"export: node {node.name} reads {node.target!r}, which is not a "
                               "tensor; Ember can export only graphs of tensors and Ember ops")
    guards = []
    for a, dims_of in zip(args, dims_per_input):
        if not isinstance(a, Tensor):
            guards.append(None)
            continue
        guards.append([[dims_of[d].__name__, dims_of[d].min,
                        None if dims_of[d].max == float("inf") else dims_of[d].max]
                       if d in dims_of else int(s) for d, s in enumerate(a.shape)])
    return ExportedProgram(gm.graph, tensors, _user_input_names(mod, len(args)), guards,
                           example_inputs=(args, {}))


def save(ep, f, *, extra_files=None, opset_version=None, pickle_protocol=None):
    """``torch.export.save``: one zip (Ember's format: graph as data, tensors as .npy)."""
    from ..jit import _serialization
    if not isinstance(ep, ExportedProgram):
        raise TypeError(f"The 'ep' parameter must be an instance of 'ExportedProgram', got "
                        f"'{type(ep).__name__}' instead.")
    if extra_files or opset_version:
        raise NotImplementedError("export.save: extra_files and opset_version are not "
                                  "supported by Ember's archive")
    header = {"graph": _serialization.graph_to_data(ep._module_graph),
              "user_inputs": ep._user_input_names, "guards": ep._guards}
    _serialization.write_archive(f, "export", header, ep._tensors)


def load(f, *, extra_files=None, expected_opset_version=None):
    """``torch.export.load``: the ExportedProgram ``save`` wrote; only Ember ops are resolved
    from the file, and the model's Python is never needed."""
    from ..jit import _serialization
    if extra_files or expected_opset_version:
        raise NotImplementedError("export.load: extra_files and expected_opset_version are "
                                  "not supported by Ember's archive")
    header, tensors = _serialization.read_archive(f, "export")
    graph = _serialization.graph_from_data(header["graph"])
    return ExportedProgram(graph, tensors, header["user_inputs"], header["guards"])
