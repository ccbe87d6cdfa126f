"""FX graph mode quantization: ``prepare_fx``, ``prepare_qat_fx``, ``convert_fx``, ``fuse_fx``,
as ``torch.ao.quantization.quantize_fx``, on Ember's graph IR (``ember.fx``).

No stubs are needed: the model is traced, conv/linear-bn-relu patterns are fused in the graph,
and each node gets its QConfig from a ``QConfigMapping`` (global, object type, module name
regex, module name). Observers are inserted as graph nodes calling modules named
``activation_post_process_<i>``, as torch's:

- before a quantized op, on each input that is not already quantized (graph inputs, float
  results);
- after a quantized op (weighted modules, ``add``/``mul``/``cat``), a new observer;
- after an op that only moves values (pooling, flatten, reshape, a lone ReLU...), the *same*
  observer as its input's, since its output keeps the input's qparams;
- after a fixed-range op (sigmoid, tanh, softmax, hardsigmoid), the qconfig's fixed observer.

``convert_fx`` replaces input observers by ``quantize_per_tensor`` calls, swaps weighted
modules for their quantized modules (``from_float`` reading the output observer), runs
binary ops and fixed-range ops on dequantized values requantized to their observed qparams,
and dequantizes wherever a float op (or the output) consumes a quantized value.
"""
import copy
import operator
import re

import ember
from ... import nn
from ...nn import functional as F
from ...fx import GraphModule, Tracer
from ..nn.intrinsic import _FusedModule
from .fuser_method_mappings import get_fuser_method
from .observer import PlaceholderObserver
from .qconfig_mapping import QConfigMapping, _FIXED_QPARAMS_OP_TO_OBSERVER
from .quantization_mappings import (get_default_dynamic_quant_module_mappings,
                                    get_default_qat_module_mappings,
                                    get_default_qconfig_propagation_list,
                                    get_default_static_quant_module_mappings)

__all__ = ["fuse_fx", "prepare_fx", "prepare_qat_fx", "convert_fx", "convert_to_reference_fx"]

# torch's fusion patterns take nn.ReLU and F.relu (not ember.relu nor the .relu() method)
_RELU_FUNCTIONS = (F.relu,)
_BINARY_FUNCTIONS = (operator.add, operator.mul, ember.add, ember.mul)
# ops whose output keeps the input's qparams: they only select, move or clamp values
_SHARED_MODULES = (nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d, nn.AdaptiveAvgPool1d,
                   nn.AdaptiveAvgPool2d, nn.AdaptiveAvgPool3d, nn.AvgPool1d, nn.AvgPool2d,
                   nn.AvgPool3d, nn.Flatten, nn.Identity, nn.ReLU, nn.Dropout, nn.Hardtanh)
_SHARED_FUNCTIONS = (ember.flatten, ember.reshape, ember.squeeze, ember.unsqueeze,
                     ember.transpose, ember.permute, F.max_pool1d, F.max_pool2d, F.max_pool3d,
                     F.adaptive_avg_pool1d, F.adaptive_avg_pool2d, F.avg_pool2d, F.relu,
                     ember.relu, F.dropout, F.hardtanh)
# methods a quantized tensor runs on its integers (shape and view methods)
_QUANTIZED_TENSOR_METHODS = ("flatten", "reshape", "view", "squeeze", "unsqueeze", "transpose",
                             "permute", "contiguous", "detach")
_SHARED_METHODS = ("flatten", "reshape", "view", "squeeze", "unsqueeze", "transpose",
                   "permute", "contiguous", "relu", "relu_", "detach", "clamp", "repeat")


class _QuantizationTracer(Tracer):
    """Keeps Ember's layers, fused and quantization modules, and the modules named
    non-traceable in the prepare config as leaves (``call_module`` nodes)."""

    def __init__(self, skipped_module_names, skipped_module_classes):
        super().__init__()
        self.skipped_module_names = set(skipped_module_names)
        self.skipped_module_classes = tuple(skipped_module_classes)

    def is_leaf_module(self, m, module_qualified_name):
        module = type(m).__module__ or ""
        return (module.startswith("ember.ao.nn") or module.startswith("ember.ao.quantization")
                or module_qualified_name in self.skipped_module_names
                or isinstance(m, self.skipped_module_classes)
                or super().is_leaf_module(m, module_qualified_name))


def _config_get(config, key, default):
    if config is None:
        return default
    if isinstance(config, dict):
        return config.get(key, default)
    return getattr(config, key, default)


def _trace(model, prepare_custom_config):
    names = _config_get(prepare_custom_config, "non_traceable_module_name", [])
    classes = _config_get(prepare_custom_config, "non_traceable_module_class", [])
    tracer = _QuantizationTracer(names, classes)
    graph = tracer.trace(model)
    gm = GraphModule(model, graph, type(model).__name__)
    for attr in _config_get(prepare_custom_config, "preserved_attributes", []):
        if hasattr(model, attr):
            setattr(gm, attr, getattr(model, attr))
    return gm


# ---- fusion ------------------------------------------------------------------------------------
def _module(gm, node):
    return gm.get_submodule(node.target) if node.op == "call_module" else None


def _is_relu(gm, node):
    return ((node.op == "call_module" and type(_module(gm, node)) is nn.ReLU)
            or (node.op == "call_function" and node.target in _RELU_FUNCTIONS))


def _single_user_module(gm, node, types):
    if not isinstance(node, ember.fx.Node) or node.op != "call_module" or len(node.users) != 1:
        return None
    mod = _module(gm, node)
    return mod if type(mod) in types else None


_CONVS = (nn.Conv1d, nn.Conv2d, nn.Conv3d)
_BNS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)


def _match(gm, node):
    """The chain of nodes (first to last) of a fusable pattern ending at ``node``, longest
    first: conv-bn-relu, then conv-bn, conv-relu, linear-relu, linear-bn, bn-relu."""
    if _is_relu(gm, node) and node.args:
        prev = node.args[0]
        if _single_user_module(gm, prev, _BNS) and _single_user_module(
                gm, prev.args[0], _CONVS):
            return [prev.args[0], prev, node]
        if _single_user_module(gm, prev, _CONVS + (nn.Linear, nn.BatchNorm2d, nn.BatchNorm3d)):
            return [prev, node]
    if node.op == "call_module" and type(_module(gm, node)) in _BNS and node.args:
        if _single_user_module(gm, node.args[0], _CONVS + (nn.Linear,)):
            relu_next = [u for u in node.users if _is_relu(gm, u)]
            if not (len(node.users) == 1 and relu_next):
                return [node.args[0], node]
    return None


def _fuse_graph(gm, is_qat):
    """Replace each matched chain by the fused module, installed at the first module's name."""
    for node in list(gm.graph.nodes):
        if node.graph is None:
            continue
        chain = _match(gm, node)
        if chain is None:
            continue
        mods = [_module(gm, n) if n.op == "call_module" else nn.ReLU() for n in chain]
        fused = get_fuser_method(tuple(type(m) for m in mods))(is_qat, *mods)
        gm.add_submodule(chain[0].target, fused)
        chain[-1].replace_all_uses_with(chain[0])
        for n in reversed(chain[1:]):
            gm.graph.erase_node(n)
    gm.graph.lint()
    gm.delete_all_unused_submodules()
    gm.recompile()
    return gm


def fuse_fx(model, fuse_custom_config=None, backend_config=None):
    """A GraphModule of ``model`` (in eval mode) with conv/linear-bn-relu patterns fused."""
    if model.training:
        raise AssertionError("fuse_fx only works on models in eval mode (use prepare_qat_fx "
                             "to fuse for training)")
    return _fuse_graph(_trace(model, fuse_custom_config), is_qat=False)


# ---- qconfig per node -------------------------------------------------------------------------
def _object_type(gm, node):
    if node.op == "call_module":
        mod = _module(gm, node)
        # a fused module takes the qconfig set for its first (conv/linear) module's type
        return type(mod[0]) if isinstance(mod, _FusedModule) else type(mod)
    return node.target if node.op in ("call_function", "call_method") else None


def _object_type_qconfig(mapping, object_type, default):
    # the QAT module of a float type (after prepare_qat_fx's swap) keeps that type's qconfig
    if object_type in mapping.object_type_qconfigs:
        return mapping.object_type_qconfigs[object_type]
    float_type = getattr(object_type, "_FLOAT_MODULE", None)
    if isinstance(float_type, type):
        if issubclass(float_type, _FusedModule):
            return default
        return mapping.object_type_qconfigs.get(float_type, default)
    return default


def _node_qconfig(gm, node, mapping):
    qconfig = _object_type_qconfig(mapping, _object_type(gm, node), mapping.global_qconfig)
    module_path = node.target if node.op == "call_module" else ""
    for regex, regex_qconfig in mapping.module_name_regex_qconfigs.items():
        if module_path and re.match(regex, module_path):
            qconfig = regex_qconfig
            break
    # the module's own name, else its closest named parent
    parts = module_path.split(".") if module_path else []
    for i in range(len(parts), 0, -1):
        name = ".".join(parts[:i])
        if name in mapping.module_name_qconfigs:
            qconfig = mapping.module_name_qconfigs[name]
            break
    return qconfig


def _as_mapping(qconfig_mapping):
    if qconfig_mapping is None:
        return QConfigMapping()
    if isinstance(qconfig_mapping, dict):
        return QConfigMapping.from_dict(qconfig_mapping)
    return qconfig_mapping


# ---- observer insertion -----------------------------------------------------------------------
def _is_dynamic(qconfig):
    act = qconfig.activation()
    return getattr(act, "is_dynamic", False) or (
        isinstance(act, PlaceholderObserver) and act.dtype == ember.float16)


def _kind(gm, node, static_types):
    """How quantization treats ``node``: "weighted", "binary", "cat", "shared", "fixed", None."""
    if node.op == "call_module":
        mod = _module(gm, node)
        if type(mod) in (nn.Sigmoid, nn.Tanh, nn.Softmax, nn.Hardsigmoid):
            return "fixed"
        if isinstance(mod, _SHARED_MODULES):
            return "shared"
        if type(mod) in static_types:
            return "weighted"
        return None
    if node.op == "call_function":
        if node.target in _BINARY_FUNCTIONS:
            return "binary"
        if node.target is ember.cat:
            return "cat"
        if node.target in _FIXED_QPARAMS_OP_TO_OBSERVER:
            return "fixed"
        if node.target in _SHARED_FUNCTIONS:
            return "shared"
        return None
    if node.op == "call_method":
        if node.target in _FIXED_QPARAMS_OP_TO_OBSERVER:
            return "fixed"
        if node.target in _SHARED_METHODS:
            return "shared"
    return None


def _tensor_inputs(node, kind):
    if kind == "cat":
        return [a for a in node.args[0] if isinstance(a, ember.fx.Node)]
    if kind == "binary":
        return [a for a in node.args[:2] if isinstance(a, ember.fx.Node)]
    return [node.args[0]] if node.args and isinstance(node.args[0], ember.fx.Node) else []


class _ObserverNamer:
    def __init__(self, gm):
        self.gm = gm
        self.count = 0

    def add(self, observer, after):
        name = f"activation_post_process_{self.count}"
        self.count += 1
        setattr(self.gm, name, observer)
        with self.gm.graph.inserting_after(after):
            return self.gm.graph.call_module(name, (after,))


def _insert_observers(gm, qconfigs, static_types):
    """Observer nodes as described in the module docstring; returns the set of observer
    nodes, each mapped to the kind of node it observes the output of (None: an input)."""
    graph = gm.graph
    namer = _ObserverNamer(gm)
    observer_of = {}          # node -> the observer node watching its output
    observed = {}             # observer node -> "input" or the producing node's kind
    for node in list(graph.nodes):
        if node.op not in ("call_module", "call_function", "call_method"):
            continue
        qconfig = qconfigs.get(node.name)
        kind = _kind(gm, node, static_types)
        if kind is None or qconfig is None or _is_dynamic(qconfig):
            continue
        for arg in _tensor_inputs(node, kind):
            if arg in observed:
                continue
            if arg not in observer_of:
                observer_of[arg] = namer.add(qconfig.activation(), arg)
                observed[observer_of[arg]] = "input"
            node.replace_input_with(arg, observer_of[arg])
        if kind == "shared":
            source = gm.get_submodule(_tensor_inputs(node, kind)[0].target)
            out_observer = source  # the very same module: qparams shared with the input
        else:
            out_observer = qconfig.activation()
        users = list(node.users)
        obs_node = namer.add(out_observer, node)
        for user in users:
            user.replace_input_with(node, obs_node)
        observer_of[node] = obs_node
        observed[obs_node] = kind
    graph.lint()
    gm.recompile()
    return observed


def _prepare(model, qconfig_mapping, is_qat, example_inputs, prepare_custom_config):
    if example_inputs is None:
        raise ValueError("prepare_fx needs example_inputs (a tuple of the model's inputs), as "
                         "torch's")
    mapping = _as_mapping(qconfig_mapping)
    gm = _fuse_graph(_trace(model, prepare_custom_config), is_qat)
    qconfigs = {node.name: _node_qconfig(gm, node, mapping) for node in gm.graph.nodes}
    if is_qat:
        qat_mapping = get_default_qat_module_mappings()
        for node in gm.graph.nodes:
            mod = _module(gm, node)
            if mod is not None and qconfigs[node.name] is not None and type(mod) in qat_mapping:
                mod.qconfig = qconfigs[node.name]
                gm.add_submodule(node.target, qat_mapping[type(mod)].from_float(mod))
    # the types eager prepare observes: those with a quantized, QAT or dynamic counterpart
    static_types = get_default_qconfig_propagation_list() - {nn.Sequential}
    observed = _insert_observers(gm, qconfigs, static_types)
    gm._node_name_to_qconfig = qconfigs
    gm._observed_kinds = {n.name: k for n, k in observed.items()}
    gm._is_qat = is_qat
    return gm


def prepare_fx(model, qconfig_mapping, example_inputs, prepare_custom_config=None,
               _equalization_config=None, backend_config=None):
    """A GraphModule of ``model`` (eval mode) with observers inserted for calibration.

    Args:
        qconfig_mapping: a ``QConfigMapping`` (or a legacy qconfig dict)
        example_inputs: a tuple of example positional inputs (as torch's signature requires)
        prepare_custom_config: ``{"non_traceable_module_name": [...],
            "non_traceable_module_class": [...], "preserved_attributes": [...]}``
    """
    if backend_config is not None:
        raise NotImplementedError("Ember's FX quantization has its fixed x86-like backend "
                                  "rules; a custom backend_config is not supported")
    if model.training:
        raise AssertionError("prepare_fx only works on models in eval mode (use "
                             "prepare_qat_fx for training)")
    return _prepare(model, qconfig_mapping, False, example_inputs, prepare_custom_config)


def prepare_qat_fx(model, qconfig_mapping, example_inputs, prepare_custom_config=None,
                   backend_config=None):
    """``prepare_fx`` for quantization-aware training: a training-mode model, fused modules
    and weighted layers swapped for QAT modules, fake-quantize nodes inserted."""
    if backend_config is not None:
        raise NotImplementedError("a custom backend_config is not supported")
    if not model.training:
        raise AssertionError("prepare_qat_fx only works on models in training mode")
    return _prepare(model, qconfig_mapping, True, example_inputs, prepare_custom_config)


# ---- convert -----------------------------------------------------------------------------------
def _requantized(fn):
    """``fn`` on dequantized tensors, its result quantized to ``scale``/``zero_point``."""
    def run(*args, scale, zero_point, dtype, **kwargs):
        def deq(a):
            if isinstance(a, (list, tuple)):
                return type(a)(deq(x) for x in a)
            return a.dequantize() if getattr(a, "is_quantized", False) else a
        out = fn(*deq(args), **kwargs)
        return ember.quantize_per_tensor(out, scale, zero_point, dtype)
    run.__name__ = f"quantized_{getattr(fn, '__name__', 'op')}"
    run.__qualname__ = run.__name__
    return run


_REQUANTIZED = {}


def _requantized_target(fn):
    if fn not in _REQUANTIZED:
        _REQUANTIZED[fn] = _requantized(fn)
    return _REQUANTIZED[fn]


def _qparams(observer):
    scale, zero_point = observer.calculate_qparams()
    return float(scale), int(zero_point), observer.dtype


def _dequantize_float_consumers(gm, quantized):
    """A ``dequantize`` before every use of a quantized value by a float op or the output."""
    graph = gm.graph
    for node in list(graph.nodes):
        if node in quantized or node.op == "placeholder":
            continue
        for arg in list(node.all_input_nodes):
            if arg in quantized:
                with graph.inserting_before(node):
                    deq = graph.call_method("dequantize", (arg,))
                node.replace_input_with(arg, deq)


def convert_fx(graph_module, convert_custom_config=None, _remove_qconfig=True,
               qconfig_mapping=None, backend_config=None):
    """The quantized GraphModule of a calibrated (or QAT-trained) ``prepare_fx`` result."""
    if not hasattr(graph_module, "_observed_kinds"):
        raise AssertionError("convert_fx expects the GraphModule returned by prepare_fx or "
                             "prepare_qat_fx")
    gm = copy.deepcopy(graph_module)
    graph = gm.graph
    kinds = graph_module._observed_kinds
    qconfigs = graph_module._node_name_to_qconfig
    static_mapping = get_default_static_quant_module_mappings()
    quantized = set()
    for node in list(graph.nodes):
        if node.name in kinds:
            observer = gm.get_submodule(node.target)
            producer = node.args[0]
            kind = kinds[node.name]
            if kind == "input":
                scale, zero_point, dtype = _qparams(observer)
                with graph.inserting_before(node):
                    q = graph.call_function(ember.quantize_per_tensor,
                                            (producer, scale, zero_point, dtype))
                node.replace_all_uses_with(q)
                quantized.add(q)
            else:
                node.replace_all_uses_with(producer)
                quantized.add(producer)
                if kind == "weighted":
                    mod = gm.get_submodule(producer.target)
                    for part in mod.modules():  # a fused module's conv/linear reads it too
                        part.qconfig = qconfigs[producer.name]
                    mod.activation_post_process = observer
                    qmod = static_mapping[type(mod)].from_float(mod)
                    gm.add_submodule(producer.target, qmod)
                elif kind == "shared" and producer.op == "call_method" and \
                        producer.target in _QUANTIZED_TENSOR_METHODS:
                    pass  # the quantized tensor's own method keeps its qparams
                elif kind in ("binary", "cat", "fixed", "shared"):
                    # a shared op's observer is its input's: requantizing to the same qparams
                    # gives exactly the integer result (max, select, move only)
                    scale, zero_point, dtype = _qparams(observer)
                    if producer.op == "call_module":
                        fn, args = gm.get_submodule(producer.target), producer.args
                        producer.op, producer.target = "call_function", _requantized_target(fn)
                    elif producer.op == "call_method":
                        method = getattr(ember.Tensor, producer.target)
                        producer.op = "call_function"
                        producer.target = _requantized_target(method)
                    else:
                        producer.target = _requantized_target(producer.target)
                    producer.kwargs = {**producer.kwargs, "scale": scale,
                                       "zero_point": zero_point, "dtype": dtype}
            graph.erase_node(node)
    # dynamic qconfigs: weighted modules become dynamically quantized modules
    dynamic_mapping = None
    for node in graph.nodes:
        qconfig = qconfigs.get(node.name)
        if node.op == "call_module" and qconfig is not None and _is_dynamic(qconfig):
            dynamic_mapping = dynamic_mapping or get_default_dynamic_quant_module_mappings()
            mod = gm.get_submodule(node.target)
            if type(mod) in dynamic_mapping:
                mod.qconfig = qconfig
                gm.add_submodule(node.target, dynamic_mapping[type(mod)].from_float(mod))
    _dequantize_float_consumers(gm, quantized)
    graph.lint()
    gm.delete_all_unused_submodules()
    gm.recompile()
    for attr in ("_observed_kinds", "_node_name_to_qconfig", "_is_qat"):
        if attr in gm.__dict__:
            delattr(gm, attr)
    return gm


def convert_to_reference_fx(graph_module, convert_custom_config=None, _remove_qconfig=True,
                            qconfig_mapping=None, backend_config=None):
    """Reference (quantize-dequantize around float ops) models are not built by Ember."""
    raise NotImplementedError("Ember has no reference quantized modules; use convert_fx")
