"""``ember.onnx.export``: an ONNX model from the graph Ember's concrete tracer records.

The model runs once under ``make_fx`` (the tracer under ``jit.trace`` and ``export``); every
recorded Ember op becomes ONNX nodes through the table in ``_ops``. Parameters and buffers
become initializers named by their ``state_dict`` keys.

Dynamic axes: the trace bakes sizes in (``view(5, 4, 4)``), so for each name in
``dynamic_axes`` the model is traced again with that axis one larger, and once more with every
dynamic axis two larger. The traces must be the same graph; every integer argument and every
recorded shape that moved is then an affine function of the dynamic sizes
(``SymInt``: ``const + sum(coef * size)``), checked against the third trace, and is computed in
the ONNX graph from the inputs' ``Shape`` at run time. A size that moves any other way (a
product of two dynamic axes) is allowed only where ONNX infers it, as the one -1 of a Reshape;
anywhere else it raises, as does a graph that changes with the size, naming the node."""
import enum
import functools
import inspect
import os

import numpy as np

from ._ops import BUILDERS

__all__ = ["export", "OnnxExporterError", "UnsupportedOperatorError", "TrainingMode",
           "OperatorExportTypes"]

DEFAULT_OPSET = 17
# The builders use the opset-17 forms (LayerNormalization appears in 17).
_MIN_OPSET = 17


class OnnxExporterError(RuntimeError):
    """Errors raised by the ONNX exporter, as ``torch.onnx.errors.OnnxExporterError``."""


class UnsupportedOperatorError(OnnxExporterError):
    """An op with no ONNX mapping, as ``torch.onnx.errors.UnsupportedOperatorError``."""

    def __init__(self, name, version, supported_version=None, detail=""):
        if supported_version is not None:
            msg = (f"Exporting the operator '{name}' to ONNX opset version {version} is not "
                   f"supported. Support for this operator was added in version "
                   f"{supported_version}, try exporting with this version")
        else:
            msg = f"Exporting the operator '{name}' to ONNX opset version {version} is not " \
                  "supported"
        super().__init__(msg + detail)


class TrainingMode(enum.IntEnum):
    """``torch.onnx.TrainingMode``: the mode the model is traced in."""
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.IntEnum):
    """``torch.onnx.OperatorExportTypes``; Ember exports only standard ONNX ops."""
    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


def _onnx():
    try:
        import onnx
    except ImportError as e:
        raise ImportError("ember.onnx.export needs the 'onnx' package, which is Ember's "
                          "optional extra 'onnx': pip install 'ember[onnx]' (or pip install "
                          "onnx onnxruntime)") from e
    return onnx


class SymInt:
    """A size that follows the dynamic axes: ``const + sum(coef * size of dim)``; ``value``
    is its size in the traced example."""
    __slots__ = ("value", "const", "coefs")

    def __init__(self, value, const, coefs):
        self.value, self.const, self.coefs = value, const, coefs

    @property
    def affine(self):
        return self.coefs is not None

    def __repr__(self):
        if not self.affine:
            return f"<size {self.value}, not affine in the dynamic axes>"
        terms = [f"{c}*{d}" for d, c in self.coefs.items()] + ([str(self.const)]
                                                              if self.const else [])
        return " + ".join(terms)

    def __index__(self):
        raise OnnxExporterError(f"a size that follows dynamic axes ({self!r}) is used where "
                                "the exporter needs a fixed number")


class RepeatedInt:
    """A list of one size repeated a number of times that follows the dynamic axes (an RNN's
    ``batch_sizes``, ``[batch] * steps``): ``value`` and ``count`` are ints or SymInts. Only
    the builders that know the pattern take it; any other use raises."""
    __slots__ = ("value", "count")

    def __init__(self, value, count):
        self.value, self.count = value, count

    def __repr__(self):
        return f"[{self.value!r}] * ({self.count!r})"

    def __iter__(self):
        raise OnnxExporterError(f"a list whose length follows dynamic axes ({self!r}) is used "
                                "where the exporter needs a fixed list")

    __len__ = __getitem__ = __iter__


class Value:
    """An ONNX value: its name, its shape (ints and SymInts) and its Ember dtype."""
    __slots__ = ("name", "shape", "dtype")

    def __init__(self, name, shape, dtype):
        self.name, self.shape, self.dtype = name, shape, dtype

    def __repr__(self):
        return f"Value({self.name}, {self.shape}, {self.dtype})"


def _tensor_type(onnx, dtype):
    return onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype.np))


class _GraphBuilder:
    """Collects ONNX nodes and initializers; what ``_ops``' builders call."""

    def __init__(self, onnx, opset, dim_sources):
        self.onnx, self.opset = onnx, opset
        self.nodes, self.initializers, self.foldable = [], {}, set()
        self.dim_sources = dim_sources  # dim name -> (input name, axis)
        self.node_dtype = self.node_shape = self.node_name = None
        self._names = set()
        self._shapes = {}

    def fresh(self, hint):
        i = len(self._names)
        name = f"{hint}_{i}"
        while name in self._names:
            i += 1
            name = f"{hint}_{i}"
        self._names.add(name)
        return name

    def reserve(self, name):
        self._names.add(name)
        return name

    def op(self, op_type, inputs, outputs=1, **attrs):
        outs = [self.fresh(op_type) for _ in range(outputs)]
        self.nodes.append(self.onnx.helper.make_node(op_type, list(inputs), outs,
                                                     name=self.fresh(f"/{op_type}"), **attrs))
        return outs[0] if outputs == 1 else outs

    def const(self, array, hint="const"):
        name = self.fresh(hint)
        self.initializers[name] = np.asarray(array)
        self.foldable.add(name)
        return name

    def scalar(self, value, dtype):
        return self.const(np.array(value, dtype.np))

    def cast(self, name, dtype):
        return self.op("Cast", [name], to=_tensor_type(self.onnx, dtype))

    def operand(self, x, dtype):
        """An op's operand in ``dtype`` (the op's result dtype, as Ember promoted it)."""
        if isinstance(x, Value):
            return x.name if x.dtype == dtype else self.cast(x.name, dtype)
        if isinstance(x, SymInt):
            return self.cast(self.op("Squeeze", [self._sym(x), self.ints([0])]), dtype)
        if isinstance(x, (bool, int, float)):
            return self.scalar(x, dtype)
        raise OnnxExporterError(f"an operand of type {type(x).__name__} has no ONNX form")

    def ints(self, values, reshape=False):
        """A 1-D int64 tensor of ``values``; SymInts are computed from the inputs' shapes.
        ``reshape``: a Reshape target, where one unknown size may be written -1."""
        values = list(values)
        syms = [v for v in values if isinstance(v, SymInt)]
        if not syms:
            return self.const(np.array(values, np.int64), "ints")
        inferred = None  # the one size Reshape infers (-1)
        if reshape:
            opaque = [v for v in syms if not v.affine]
            inferred = opaque[0] if len(opaque) == 1 else syms[0] if len(syms) == 1 else None
        if inferred is not None and len(syms) == 1:
            return self.const(np.array([-1 if v is inferred else v for v in values], np.int64),
                              "ints")
        pieces, run = [], []
        for v in values:
            if v is inferred:
                run.append(-1)
            elif isinstance(v, SymInt):
                if run:
                    pieces.append(self.const(np.array(run, np.int64), "ints"))
                    run = []
                pieces.append(self._sym(v))
            else:
                run.append(v)
        if run:
            pieces.append(self.const(np.array(run, np.int64), "ints"))
        return pieces[0] if len(pieces) == 1 else self.op("Concat", pieces, axis=0)

    def _sym(self, s):
        """``s`` as a one-element int64 tensor computed at run time."""
        if not s.affine:
            raise OnnxExporterError(
                f"ember.onnx.export: dynamic_axes {sorted(self.dim_sources)}: at node "
                f"{self.node_name!r} the size {s.value} is not an affine function of the "
                "dynamic axes (a product of two of them, or it moves only when several do), "
                "and it is needed where ONNX cannot infer it. Export with fewer dynamic axes")
        total = None
        for dim, coef in s.coefs.items():
            source, axis = self.dim_sources[dim]
            if source not in self._shapes:
                self._shapes[source] = self.op("Shape", [source])
            size = self.op("Gather", [self._shapes[source], self.const(np.array([axis]))],
                           axis=0)
            if coef != 1:
                size = self.op("Mul", [size, self.const(np.array([coef], np.int64))])
            total = size if total is None else self.op("Add", [total, size])
        if s.const:
            total = self.op("Add", [total, self.const(np.array([s.const], np.int64))])
        return total


# ----------------------------------------------------------------------------- tracing

def _capture(model, args):
    from ..autograd.grad_mode import no_grad
    from ..jit._trace import _capture as capture
    with no_grad():
        return capture(model, args)


def _resized(args, dims_of_inputs, sizes):
    """``args`` with the dynamic axes moved to ``sizes`` (fresh values: only shapes matter)."""
    from ..export import _resized as resized
    return tuple(resized(args, dims_of_inputs, sizes.__getitem__))


def _structure_error(dims, node, why):
    return OnnxExporterError(
        f"ember.onnx.export: dynamic_axes {sorted(dims)}: {why} at node {node.name!r}. "
        "Ember's tracer records the ops that ran at the example's sizes; a size that changes "
        "the graph, or that the graph uses other than as an affine function of each dynamic "
        "axis, cannot be dynamic. Export without it in dynamic_axes (one model per size)")


class _Merger:
    """Merges the base trace with the traces at other sizes into SymInts."""

    def __init__(self, dims, base, node):
        self.dims, self.base, self.node = dims, base, node

    def leaf(self, v0, vs, vc):
        coefs = {d: vk - v0 for d, vk in zip(self.dims, vs) if vk != v0}
        if not coefs:
            return v0 if vc == v0 else SymInt(v0, None, None)
        const = v0 - sum(c * self.base[d] for d, c in coefs.items())
        if const + sum(c * (self.base[d] + 2) for d, c in coefs.items()) != vc:
            # Not affine (a product of two dynamic sizes): usable only where ONNX can infer
            # it, as the one -1 of a Reshape.
            return SymInt(v0, None, None)
        return SymInt(v0, const, coefs)

    def merge(self, x0, xs, xc):
        from ..fx.node import Node
        if isinstance(x0, Node) or isinstance(x0, bool):
            return x0
        if isinstance(x0, int):
            return self.leaf(x0, xs, xc)
        if isinstance(x0, (tuple, list)):
            if isinstance(x0, list) and _repeated(x0) and all(
                    isinstance(x, list) and _repeated(x) for x in (*xs, xc)):
                if any(len(x) != len(x0) for x in (*xs, xc)):  # [size] * count: both move
                    return RepeatedInt(self.leaf(x0[0], [x[0] for x in xs], xc[0]),
                                       self.leaf(len(x0), [len(x) for x in xs], len(xc)))
            if any(not isinstance(x, (tuple, list)) or len(x) != len(x0) for x in (*xs, xc)):
                raise _structure_error(self.dims, self.node, "the graph changes with the size")
            merged = [self.merge(a, [x[i] for x in xs], xc[i]) for i, a in enumerate(x0)]
            return merged if isinstance(x0, list) else tuple(merged)
        if isinstance(x0, slice):
            return slice(*(self.merge(getattr(x0, f), [getattr(x, f) for x in xs],
                                      getattr(xc, f)) for f in ("start", "stop", "step")))
        if isinstance(x0, dict):
            return {k: self.merge(v, [x[k] for x in xs], xc[k]) for k, v in x0.items()}
        return x0


def _repeated(values):
    """A non-empty list of one int repeated."""
    return bool(values) and type(values[0]) is int and values.count(values[0]) == len(values)


def _shape_of(meta):
    from ..fx.passes.shape_prop import TensorMetadata
    if isinstance(meta, TensorMetadata):
        return tuple(int(s) for s in meta.shape)
    if isinstance(meta, (tuple, list)):
        return tuple(_shape_of(m) for m in meta)
    return None


def _merged_nodes(gm, others, dims, base):
    """``[(node, args, kwargs, shape)]`` of the base trace, with SymInts where sizes follow
    the dynamic axes; ``others``: the traces with each dim moved by one, then all by two."""
    nodes = list(gm.graph.nodes)
    other_nodes = [list(o.graph.nodes) for o in others]
    out = []
    for i, node in enumerate(nodes):
        if not others:
            out.append((node, node.args, node.kwargs, _shape_of(node.meta.get("tensor_meta"))))
            continue
        peers = [o[i] if i < len(o) else None for o in other_nodes]
        if any(p is None or p.op != node.op or p.target != node.target or p.name != node.name
               for p in peers) or any(len(o) != len(nodes) for o in other_nodes):
            raise _structure_error(dims, node, "the traced graph changes with the size")
        m = _Merger(dims, base, node)
        *vs, vc = peers
        args = m.merge(node.args, [p.args for p in vs], vc.args)
        kwargs = m.merge(dict(node.kwargs), [dict(p.kwargs) for p in vs], dict(vc.kwargs))
        shapes = [_shape_of(p.meta.get("tensor_meta")) for p in peers]
        shape0 = _shape_of(node.meta.get("tensor_meta"))
        shape = None if shape0 is None else m.merge(shape0, shapes[:-1], shapes[-1])
        out.append((node, args, kwargs, shape))
    return out


# ----------------------------------------------------------------------------- emission

@functools.lru_cache(maxsize=None)
def _signature(target):
    try:
        return inspect.signature(target)
    except (TypeError, ValueError):
        return None


def _op_key(node):
    if node.op == "call_method":
        return node.target, f"Tensor.{node.target}"
    target = node.target
    if getattr(target, "__module__", None) in ("_operator", "operator"):
        return f"operator.{target.__name__}", f"operator.{target.__name__}"
    name = getattr(target, "__name__", repr(target))
    return name, f"{getattr(target, '__module__', '?')}.{name}"


def _bind(node, args, kwargs):
    from .._tensor import Tensor
    target = getattr(Tensor, node.target) if node.op == "call_method" else node.target
    sig = _signature(target)
    if sig is None:
        return {**{i: a for i, a in enumerate(args)}, **kwargs}
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def _attr(gm, target):
    return functools.reduce(getattr, target.split("."), gm)


def _uniform_fill(t):
    flat = t.detach().cpu().numpy().reshape(-1)
    if flat.size and (flat == flat[0]).all():
        return flat[:1]
    return None


def _flatten_outputs(x, out):
    if isinstance(x, (tuple, list)):
        for item in x:
            _flatten_outputs(item, out)
    else:
        out.append(x)
    return out


def _emit(onnx, g, gm, merged, input_names, opset, export_params, constants):
    from .._tensor import Tensor
    from ..fx.node import Node, map_aggregate
    env = {}
    graph_inputs, param_inputs = [], []
    params = {n for n, _ in gm.named_parameters()} | {n for n, _ in gm.named_buffers()}
    user_inputs = iter(input_names)
    for node, *_ in merged:  # the state_dict names are kept: no generated name may take one
        if node.op == "get_attr":
            g.reserve(node.target)

    def value(x):
        return map_aggregate(x, lambda n: env[n] if isinstance(n, Node) else n)

    for node, args, kwargs, shape in merged:
        meta = node.meta.get("tensor_meta")
        if node.op == "placeholder":
            if node.meta.get("type") is not None and issubclass(node.meta["type"], Tensor):
                name = g.reserve(next(user_inputs))
                env[node] = Value(name, list(shape), meta.dtype)
                graph_inputs.append(env[node])
            else:
                env[node] = None  # a Python value: the trace baked it in
        elif node.op == "get_attr":
            g.node_name = node.name
            obj = _attr(gm, node.target)
            if not isinstance(obj, Tensor):
                env[node] = obj
                continue
            name = node.target
            if any(isinstance(s, SymInt) for s in shape):
                fill = _uniform_fill(obj)
                if fill is None:
                    raise _structure_error(list(g.dim_sources), node, "a constant tensor "
                                           "shaped by a dynamic axis holds varying values")
                g.nodes.append(onnx.helper.make_node(
                    "ConstantOfShape", [g.ints(shape)], [name], name=g.fresh("/ConstantOfShape"),
                    value=onnx.numpy_helper.from_array(fill)))
            elif node.target in params and node.target not in constants:
                if export_params:
                    g.initializers[name] = obj.detach().cpu().numpy()
                else:
                    param_inputs.append(Value(name, list(shape), obj.dtype))
            else:
                g.initializers[name] = obj.detach().cpu().numpy()
                g.foldable.add(name)
            env[node] = Value(name, list(shape), obj.dtype)
        elif node.op in ("call_function", "call_method"):
            key, qualname = _op_key(node)
            builder = BUILDERS.get(key)
            if builder is None:
                raise UnsupportedOperatorError(
                    f"ember::{key.rsplit('.', 1)[-1]}", opset, None,
                    f" (node {node.name!r} calls {qualname}, which has no ONNX mapping in "
                    "ember.onnx)")
            a = _bind(node, value(args), value(kwargs))
            g.node_dtype, g.node_name = getattr(meta, "dtype", None), node.name
            one_tensor = isinstance(shape, tuple) and not isinstance(meta, tuple)
            g.node_shape = list(shape) if one_tensor else shape
            result = builder(g, a)
            env[node] = _wrap(result, meta, shape)
        elif node.op == "output":
            outs = _flatten_outputs(value(args[0]), [])
            for o in outs:
                if not isinstance(o, Value):
                    raise OnnxExporterError(f"ember.onnx.export: the model returns "
                                            f"{type(o).__name__}, which is not a tensor; ONNX "
                                            "outputs are tensors")
            return graph_inputs, param_inputs, outs
        else:
            raise OnnxExporterError(f"ember.onnx.export: node kind {node.op!r} "
                                    f"({node.name}) cannot be exported")


def _wrap(result, meta, shape):
    if isinstance(result, Value) or result is None:
        return result
    if isinstance(result, str):
        return Value(result, list(shape) if shape is not None else None,
                     getattr(meta, "dtype", None))
    return tuple(_wrap(r, m, s) for r, m, s in zip(result, meta, shape))


def _fold_constants(onnx, g, output_names):
    """Evaluate the nodes whose inputs are all constants (not parameters, which keep their
    state_dict names) once, here, with ONNX's reference evaluator."""
    from onnx.reference import ReferenceEvaluator
    kept = []
    for node in g.nodes:
        inputs = [i for i in node.input if i]
        if inputs and all(i in g.foldable for i in inputs) \
                and not set(node.output) & output_names:
            graph = onnx.helper.make_graph(
                [node], "fold",
                [onnx.helper.make_tensor_value_info(i, onnx.helper.np_dtype_to_tensor_dtype(
                    g.initializers[i].dtype), g.initializers[i].shape) for i in inputs],
                [onnx.helper.make_empty_tensor_value_info(o) for o in node.output])
            model = onnx.helper.make_model(
                graph, opset_imports=[onnx.helper.make_opsetid("", g.opset)])
            results = ReferenceEvaluator(model).run(
                None, {i: g.initializers[i] for i in inputs})
            for name, r in zip(node.output, results):
                g.initializers[name] = np.asarray(r)
                g.foldable.add(name)
        else:
            kept.append(node)
    g.nodes = kept


def _value_info(onnx, name, v, dims_of):
    dims = []
    for axis, s in enumerate(v.shape):
        if axis in dims_of:
            dims.append(dims_of[axis])
        elif isinstance(s, SymInt):
            dims.append(next(iter(s.coefs)) if s.coefs and len(s.coefs) == 1 and s.const == 0
                        and next(iter(s.coefs.values())) == 1 else f"{name}_dim_{axis}")
        else:
            dims.append(s)
    return onnx.helper.make_tensor_value_info(name, _tensor_type(onnx, v.dtype), dims)


def _dynamic_axes_of(dynamic_axes, input_names, output_names):
    out = {}
    for name, axes in (dynamic_axes or {}).items():
        if name not in input_names and name not in output_names:
            raise ValueError(f"dynamic_axes: {name!r} is neither an input name "
                             f"{list(input_names)} nor an output name {list(output_names)}")
        if isinstance(axes, dict):
            out[name] = {int(k): str(v) for k, v in axes.items()}
        elif isinstance(axes, (list, tuple)):
            out[name] = {int(k): f"{name}_dynamic_axes_{i + 1}" for i, k in enumerate(axes)}
        else:
            raise TypeError(f"dynamic_axes[{name!r}] must be a dict {{axis: name}} or a list "
                            f"of axes, got {type(axes).__name__}")
    return out


def export(model, args=(), f=None, *, kwargs=None, export_params=True, verbose=None,
           training=TrainingMode.EVAL, input_names=None, output_names=None,
           operator_export_type=OperatorExportTypes.ONNX, opset_version=None,
           do_constant_folding=True, dynamic_axes=None, keep_initializers_as_inputs=None,
           custom_opsets=None, export_modules_as_functions=False, autograd_inlining=True,
           dynamo=False, external_data=True, dynamic_shapes=None, **unsupported):
    """``torch.onnx.export`` (the TorchScript exporter's arguments): write ``model`` traced on
    ``args`` to ``f`` (a path or a binary file-like object) as an ONNX model.

    ``dynamo`` is accepted either way: Ember has one capture (its concrete tracer). When ``f``
    is None the ``onnx.ModelProto`` is returned instead of written."""
    onnx = _onnx()
    from ..nn import Module
    from .._tensor import Tensor
    from ..export import _user_input_names
    if unsupported:
        raise TypeError(f"export() got unexpected keyword arguments {sorted(unsupported)}")
    if not isinstance(model, Module):
        raise TypeError(f"ember.onnx.export expects an ember.nn.Module, got "
                        f"{type(model).__name__}")
    if isinstance(args, Tensor):
        args = (args,)
    args = tuple(args)
    if args and isinstance(args[-1], dict):
        if args[-1]:
            raise NotImplementedError("ember.onnx.export: keyword inputs (a trailing dict in "
                                      "args) are not supported; pass them positionally")
        args = args[:-1]
    if kwargs:
        raise NotImplementedError("ember.onnx.export: kwargs are not supported; pass the "
                                  "inputs positionally in args")
    if dynamic_shapes is not None:
        raise NotImplementedError("ember.onnx.export: dynamic_shapes is the dynamo exporter's "
                                  "spelling; use dynamic_axes")
    if operator_export_type != OperatorExportTypes.ONNX:
        raise NotImplementedError("ember.onnx.export: only OperatorExportTypes.ONNX exists: "
                                  "Ember has no ATen ops to fall back to")
    if custom_opsets or export_modules_as_functions:
        raise NotImplementedError("ember.onnx.export: custom_opsets and "
                                  "export_modules_as_functions are not supported")
    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    newest = onnx.defs.onnx_opset_version()
    if not _MIN_OPSET <= opset <= newest:
        raise ValueError(f"Unsupported ONNX opset version: {opset}. ember.onnx exports "
                         f"opsets {_MIN_OPSET} to {newest}")
    # one tensor passed as two arguments is two ONNX inputs (make_fx traces a repeat as a copy)
    tensor_args = [a for a in args if isinstance(a, Tensor)]
    default_names = _user_input_names(model, len(args))
    default_names = [n for n, a in zip(default_names, args) if isinstance(a, Tensor)]
    input_names = list(input_names or [])
    if len(input_names) > len(tensor_args):
        raise ValueError(f"input_names has {len(input_names)} names but the model has "
                         f"{len(tensor_args)} tensor inputs")
    input_names += default_names[len(input_names):]
    output_names = list(output_names or [])
    axes = _dynamic_axes_of(dynamic_axes, input_names, output_names)

    # The modes to trace in, restored afterwards.
    modes = [(m, m.training) for m in model.modules()]
    try:
        if training == TrainingMode.EVAL:
            model.train(False)
        elif training == TrainingMode.TRAINING:
            model.train(True)
        gm, constants, merged, dim_sources = _trace(model, args, input_names, axes)
    finally:
        for m, mode in modes:
            m.training = mode

    g = _GraphBuilder(onnx, opset, dim_sources)
    for n in output_names:
        g.reserve(n)
    graph_inputs, param_inputs, outs = _emit(onnx, g, gm, merged, input_names, opset,
                                             export_params, constants)
    if len(output_names) > len(outs):
        raise ValueError(f"output_names has {len(output_names)} names but the model has "
                         f"{len(outs)} outputs")
    # Name the outputs: rename the value where a node made it, else copy it (Identity).
    produced = {o: node for node in g.nodes for o in node.output}
    final, renames = [], {}
    for i, v in enumerate(outs):
        want = output_names[i] if i < len(output_names) else None
        name = v.name
        taken = name in renames or name in final or name not in produced
        if want is None and not taken:
            final.append(name)
            continue
        target = want or g.fresh("output")
        if taken:
            g.nodes.append(onnx.helper.make_node("Identity", [renames.get(name, name)],
                                                 [target], name=g.fresh("/Identity")))
        else:
            renames[name] = target
        final.append(target)
    for node in g.nodes:
        node.input[:] = [renames.get(i, i) for i in node.input]
        node.output[:] = [renames.get(o, o) for o in node.output]
    if do_constant_folding:
        _fold_constants(onnx, g, set(final))
    used = {i for node in g.nodes for i in node.input} | set(final)
    # (np.ascontiguousarray would make a 0-d constant 1-d: a Gather index would keep its axis)
    initializers = [onnx.numpy_helper.from_array(np.asarray(a, order="C"), name)
                    for name, a in g.initializers.items() if name in used]
    inputs = [_value_info(onnx, v.name, v, axes.get(v.name, {})) for v in graph_inputs]
    inputs += [_value_info(onnx, v.name, v, {}) for v in param_inputs]
    if keep_initializers_as_inputs:
        inputs += [onnx.helper.make_tensor_value_info(t.name, t.data_type, t.dims)
                   for t in initializers]
    outputs = [_value_info(onnx, name, v, axes.get(name, {})) for name, v in zip(final, outs)]
    graph = onnx.helper.make_graph(g.nodes, "main_graph", inputs, outputs, initializers)
    from .. import __version__
    proto = onnx.helper.make_model(
        graph, opset_imports=[onnx.helper.make_opsetid("", opset)], producer_name="ember",
        producer_version=str(__version__),
        ir_version=onnx.helper.find_min_ir_version_for([onnx.helper.make_opsetid("", opset)]))
    if verbose:
        print(onnx.helper.printable_graph(proto.graph))
    if f is None:
        return proto
    data = proto.SerializeToString()
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as out:
            out.write(data)
    elif hasattr(f, "write"):
        f.write(data)
    else:
        raise TypeError(f"f must be a path or a binary file-like object, got "
                        f"{type(f).__name__}")
    return None


def _trace(model, args, input_names, axes):
    """The base trace merged with the traces at other sizes of the dynamic input axes."""
    from .._tensor import Tensor
    gm, constants = _capture(model, args)
    tensor_pos = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
    dims_of_inputs = [{} for _ in args]
    dim_sources, base = {}, {}
    for name, pos in zip(input_names, tensor_pos):
        for axis, dim in axes.get(name, {}).items():
            a = args[pos]
            if not -a.dim() <= axis < a.dim():
                raise ValueError(f"dynamic_axes[{name!r}]: axis {axis} is out of range for an "
                                 f"input of {a.dim()} dims")
            axis %= a.dim()
            size = int(a.shape[axis])
            if base.setdefault(dim, size) != size:
                raise ValueError(f"dynamic_axes: dim {dim!r} is {base[dim]} in one input and "
                                 f"{size} in {name!r}; one name is one size")
            dims_of_inputs[pos][axis] = dim
            dim_sources.setdefault(dim, (name, axis))
    dims = list(base)
    others = []
    if dims:
        for d in dims:
            others.append(_capture(model, _resized(args, dims_of_inputs,
                                                   {**base, d: base[d] + 1}))[0])
        others.append(_capture(model, _resized(args, dims_of_inputs,
                                               {k: v + 2 for k, v in base.items()}))[0])
    return gm, constants, _merged_nodes(gm, others, dims, base), dim_sources
