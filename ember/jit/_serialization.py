"""Graphs as data: the archive ``jit.save`` and ``export.save`` write, and its safe reader.

An archive is one zip: ``graph.json`` (format version, the nodes in order — op, name, target,
args and kwargs with node references and typed constants, tensor metadata — plus whatever the
writer adds, e.g. an export's signature) and one ``tensors/<i>.npy`` per parameter, buffer or
constant (``numpy.save`` with ``allow_pickle=False``). Nothing in the file is executed: a
target is a qualified name, resolved on load to an object that must be in the allow-list of
Ember ops, ``operator`` functions and public ``Tensor`` methods, or a custom operator
(``ember.library.custom_op``) saved as ``custom_op:ns::name`` and found in the loading
process's registry (as TorchScript needs the op's library loaded); any other name is refused.
So a process that never imports the model's defining module can load and run the graph."""
import builtins
import functools
import io
import json
import math
import operator
import zipfile

import numpy as np

__all__ = []

FORMAT = "ember.graph"
VERSION = 1

_OPERATOR_FUNCTIONS = {getattr(operator, n) for n in dir(operator) if not n.startswith("_")}
_BUILTIN_FUNCTIONS = {builtins.getattr}


def _allowed_functions():
    from ..fx.experimental.proxy_tensor import _recorded_functions
    return _recorded_functions() | _OPERATOR_FUNCTIONS | _BUILTIN_FUNCTIONS


def _custom_op(fn):
    """The ``ns::name`` of a custom operator's overload or packet (``ember.library``), else
    None: those are saved by name and found again in the loading process's registry, as
    TorchScript finds a custom op in the libraries loaded there."""
    from ..library import _custom_ops
    if isinstance(fn, (_custom_ops.OpOverload, _custom_ops.OpOverloadPacket)):
        return fn._op._qualname
    return None


def _qualified_name(fn):
    custom = _custom_op(fn)
    if custom is not None:
        return f"custom_op:{custom}"
    module = getattr(fn, "__module__", None)
    if fn in _OPERATOR_FUNCTIONS:  # ``operator.add.__module__`` is ``_operator``
        module = "operator"
    elif fn in _BUILTIN_FUNCTIONS:
        module = "builtins"
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if module is None or name is None:
        raise RuntimeError(f"cannot serialize the graph: {fn!r} has no qualified name")
    if name.startswith("_") and module.startswith("ember."):
        # an op defined under a private name and exposed under torch's (``ember.linalg.norm``
        # is ``ember.ops.linalg._linalg_norm``): saved by the public path, which loads
        return _public_names().get(id(fn), f"{module}.{name}")
    return f"{module}.{name}"


@functools.lru_cache(maxsize=None)
def _public_names():
    # once per process: Ember's public namespaces are fixed once imported
    import ember
    names = {}
    for mod in (ember.linalg, ember.special, ember.fft, ember.nn.functional, ember):
        for k, v in vars(mod).items():
            if not k.startswith("_") and callable(v):
                names.setdefault(id(v), f"{mod.__name__}.{k}")
    return names


def _resolve_function(qualname, allowed):
    """The allow-listed object named ``qualname``; importing only ``ember`` modules."""
    import importlib
    if qualname.startswith("custom_op:"):
        from ..library import _custom_ops
        op = _custom_ops._lookup(qualname[len("custom_op:"):], missing_ok=True)
        if op is None:
            raise RuntimeError(f"cannot load the graph: custom operator "
                               f"{qualname[len('custom_op:'):]!r} is not registered in this "
                               "process: import or define the library that registers it "
                               "(ember.library.custom_op) before loading")
        return op._opoverload
    module, _, name = qualname.rpartition(".")
    if not (module in ("operator", "builtins") or module == "ember"
            or module.startswith("ember.")):
        raise RuntimeError(f"cannot load the graph: target {qualname!r} is not an Ember op, "
                           "an operator function or a Tensor method (only those are allowed)")
    try:
        obj = importlib.import_module(module)
        for part in name.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        raise RuntimeError(f"cannot load the graph: unknown target {qualname!r}") from None
    from ..fx._symbolic_trace import _ORIGINAL
    obj = getattr(obj, _ORIGINAL, obj)
    if obj not in allowed and obj not in _allowed_functions():  # its module just imported
        raise RuntimeError(f"cannot load the graph: target {qualname!r} is not an Ember op, "
                           "an operator function or a Tensor method (only those are allowed)")
    return obj


def _allowed_method(name):
    from .._tensor import Tensor
    if not isinstance(name, str) or name.startswith("_") or not callable(getattr(Tensor, name,
                                                                                  None)):
        raise RuntimeError(f"cannot load the graph: {name!r} is not a public Tensor method")
    return name


# ---- values ------------------------------------------------------------------------------------

def _encode(value, allowed):
    """A node argument as JSON: nodes, containers and literals are tagged."""
    from ..fx.node import Node
    from .. import _dtype
    from .._device import device
    from .._memory_format import memory_format
    if isinstance(value, Node):
        return {"node": value.name}
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return {"float": repr(value)}
    if isinstance(value, complex):
        return {"complex": [value.real, value.imag]}
    if value is Ellipsis:
        return {"ellipsis": True}
    if isinstance(value, tuple):
        return {"tuple": [_encode(v, allowed) for v in value]}
    if isinstance(value, list):
        return [_encode(v, allowed) for v in value]
    if isinstance(value, dict):
        return {"dict": [[_encode(k, allowed), _encode(v, allowed)] for k, v in value.items()]}
    if isinstance(value, slice):
        return {"slice": [_encode(v, allowed) for v in (value.start, value.stop, value.step)]}
    if isinstance(value, _dtype.dtype):
        return {"dtype": str(value).rpartition(".")[2]}
    if isinstance(value, device):
        return {"device": str(value)}
    if isinstance(value, memory_format):
        return {"memory_format": str(value).rpartition(".")[2]}
    if callable(value) and value in allowed:
        return {"function": _qualified_name(value)}
    raise RuntimeError(f"cannot serialize the graph: the argument {value!r} of type "
                       f"{type(value).__name__} has no data form (only tensors, numbers, "
                       "strings, dtypes, devices, containers of them and Ember ops do)")


def _decode(data, nodes, allowed):
    import ember
    if isinstance(data, list):
        return [_decode(v, nodes, allowed) for v in data]
    if not isinstance(data, dict):
        return data
    (tag, v), = data.items()
    if tag == "node":
        return nodes[v]
    if tag == "float":
        return float(v)
    if tag == "complex":
        return complex(*v)
    if tag == "ellipsis":
        return Ellipsis
    if tag == "tuple":
        return tuple(_decode(x, nodes, allowed) for x in v)
    if tag == "dict":
        return {_decode(k, nodes, allowed): _decode(x, nodes, allowed) for k, x in v}
    if tag == "slice":
        return slice(*(_decode(x, nodes, allowed) for x in v))
    if tag == "dtype":
        value = getattr(ember, v, None)
        if not isinstance(value, ember.dtype):
            raise RuntimeError(f"cannot load the graph: unknown dtype {v!r}")
        return value
    if tag == "device":
        return ember.device(v)
    if tag == "memory_format":
        value = getattr(ember, v, None)
        if not isinstance(value, ember.memory_format):
            raise RuntimeError(f"cannot load the graph: unknown memory format {v!r}")
        return value
    if tag == "function":
        return _resolve_function(v, allowed)
    raise RuntimeError(f"cannot load the graph: unknown value tag {tag!r}")


def _encode_meta(node):
    meta = node.meta.get("tensor_meta")
    if meta is None or not hasattr(meta, "shape"):
        return {}
    return {"shape": list(meta.shape), "dtype": str(meta.dtype).rpartition(".")[2]}


# ---- graphs ------------------------------------------------------------------------------------

def graph_to_data(graph):
    allowed = _allowed_functions()
    nodes = []
    for node in graph.nodes:
        if node.op == "call_function":
            if node.target not in allowed and _custom_op(node.target) is None:
                raise RuntimeError(f"cannot serialize the graph: node {node.name} calls "
                                   f"{node.target!r}, which is not an Ember op")
            target = _qualified_name(node.target)
        elif node.op == "call_module":
            raise RuntimeError(f"cannot serialize the graph: node {node.name} calls submodule "
                               f"{node.target!r} (a module jit.script kept whole, since its "
                               "forward does not trace symbolically); saved programs hold "
                               "Ember ops only: use jit.trace, which records the module's ops")
        else:
            target = node.target
        nodes.append({"op": node.op, "name": node.name, "target": target,
                      "args": _encode(node.args, allowed)["tuple"],
                      "kwargs": _encode(dict(node.kwargs), allowed)["dict"],
                      "meta": _encode_meta(node)})
    return nodes


def graph_from_data(node_list):
    from ..fx.graph import Graph
    allowed = _allowed_functions()
    graph = Graph()
    nodes = {}
    for entry in node_list:
        op, target = entry["op"], entry["target"]
        if op == "call_function":
            target = _resolve_function(target, allowed)
        elif op == "call_method":
            target = _allowed_method(target)
        elif op not in ("placeholder", "get_attr", "output"):
            raise RuntimeError(f"cannot load the graph: node op {op!r} is not allowed")
        args = tuple(_decode({"tuple": entry["args"]}, nodes, allowed))
        kwargs = _decode({"dict": entry["kwargs"]}, nodes, allowed)
        if op == "output":
            node = graph.output(args[0])
        else:
            node = graph.create_node(op, target, args, kwargs, name=entry["name"])
        meta = entry.get("meta") or {}
        if meta:
            node.meta["saved_tensor_meta"] = meta
        nodes[entry["name"]] = node
    return graph


# ---- archives ----------------------------------------------------------------------------------

def write_archive(f, kind, header, tensors):
    """``tensors``: {name: (tensor, role)}; role is "parameter", "buffer" or "constant"."""
    table = []
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        for i, (name, (t, role)) in enumerate(tensors.items()):
            array = t.detach().cpu().numpy()
            if array.dtype.kind == "V" and t.is_floating_point():
                # bfloat16 & co have no .npy form; float32 holds them exactly, and the load
                # casts back to the recorded dtype.
                array = t.detach().cpu().float().numpy()
            if array.dtype == object or array.dtype.kind == "V":
                raise RuntimeError(f"cannot save tensor {name!r} of dtype {t.dtype}: it has no "
                                   "NumPy form")
            blob = io.BytesIO()
            np.save(blob, np.ascontiguousarray(array), allow_pickle=False)
            z.writestr(f"tensors/{i}.npy", blob.getvalue())
            table.append({"name": name, "file": f"tensors/{i}.npy", "role": role,
                          "dtype": str(t.dtype).rpartition(".")[2],
                          "requires_grad": bool(t.requires_grad)})
        z.writestr("graph.json", json.dumps({"format": FORMAT, "version": VERSION, "kind": kind,
                                             "tensors": table, **header}, indent=1))
    data = buffer.getvalue()
    if hasattr(f, "write"):
        f.write(data)
    else:
        with open(f, "wb") as out:
            out.write(data)


def read_archive(f, kind, map_location=None):
    """(header, {name: (tensor, role)}) from an archive ``write_archive`` made."""
    import ember
    from ..nn import Parameter
    source = f if hasattr(f, "read") else open(f, "rb")
    try:
        try:
            z = zipfile.ZipFile(io.BytesIO(source.read()))
        except zipfile.BadZipFile:
            raise RuntimeError("not an Ember graph archive (not a zip file)") from None
    finally:
        if source is not f:
            source.close()
    with z:
        try:
            header = json.loads(z.read("graph.json"))
        except KeyError:
            raise RuntimeError("not an Ember graph archive (no graph.json)") from None
        if header.get("format") != FORMAT:
            raise RuntimeError("not an Ember graph archive (unknown format)")
        if header.get("version", 0) > VERSION:
            raise RuntimeError(f"this archive has format version {header['version']}; this "
                               f"Ember reads up to {VERSION}")
        if header.get("kind") != kind:
            raise RuntimeError(f"this archive holds a {header.get('kind')!r} program, not a "
                               f"{kind!r} one")
        tensors = {}
        for entry in header["tensors"]:
            array = np.load(io.BytesIO(z.read(entry["file"])), allow_pickle=False)
            t = ember.from_numpy(array.copy())
            dtype = getattr(ember, entry["dtype"], None)
            if isinstance(dtype, ember.dtype) and t.dtype is not dtype:
                t = t.to(dtype)
            if map_location is not None:
                t = t.to(map_location)
            if entry["role"] == "parameter":
                t = Parameter(t, requires_grad=entry["requires_grad"])
            tensors[entry["name"]] = (t, entry["role"])
    return header, tensors
