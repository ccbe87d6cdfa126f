"""The lowering table: how a graph node becomes lines of generated code over arrays.

A ``Lowering`` is found by the node's target (``lowering_for(node)``): the Ember function itself
(``ember.nn.functional.linear``, ``ember.add``, ``operator.add``…) or, for ``call_method`` nodes,
the method name. Its ``check(node, args)`` decides from the traced metadata (dtypes, literal
arguments) whether the lowered kernel computes exactly what the eager op would — the same result
dtype and the same arithmetic — and otherwise the node falls back to calling the Ember op
(``codegen.py``). Lowered nodes compute in float32/float64 only: half precision, integer and
mixed-dtype arithmetic take the fallback, whose promotion is the eager op's by construction.

``emit(node, args, e)`` returns source lines that assign the node's array to ``e.name``; ``args``
are the node's arguments bound to the eager function's parameter names (defaults filled in),
rendered with ``e.src``. ``out=True`` lowerings write into a planned buffer ``e.out`` when the
planner gives one (``memory_planning.py``). ``pointwise`` names the in-place array step an
element-wise op contributes to a fused chain (``fx_passes/fusion.py``); ``view`` marks ops whose
result may share its first input's memory (a bool, or a function of the node and its args)."""
import importlib
import inspect
import operator

__all__ = ["Lowering", "lowering_for", "bind_args", "FLOAT_DTYPES"]

FLOAT_DTYPES = None  # filled on first use: ember.float32 and ember.float64


def _floats():
    global FLOAT_DTYPES
    if FLOAT_DTYPES is None:
        from .. import _dtype as dt
        FLOAT_DTYPES = (dt.float32, dt.float64)
    return FLOAT_DTYPES


class Lowering:
    """``name`` identifies the op family (the backward rules are keyed by it)."""
    __slots__ = ("name", "emit", "check", "out", "pointwise", "view")

    def __init__(self, name, emit, check, out=False, pointwise=None, view=False):
        self.name, self.emit, self.check = name, emit, check
        self.out, self.pointwise, self.view = out, pointwise, view

    def __repr__(self):
        return f"Lowering({self.name})"


_TABLE = {}


def lowering_for(node):
    """The Lowering of ``node``'s target, or None."""
    if not _built:
        ensure_table()
    if node.op == "call_function":
        try:
            return _TABLE.get(node.target)
        except TypeError:  # an unhashable callable
            return None
    if node.op == "call_method":
        return _TABLE.get(("method", node.target))
    return None


_SIGNATURES = {}


def bind_args(node):
    """``node``'s args and kwargs by the eager function's parameter names, defaults included;
    None when they do not bind (codegen then falls back)."""
    from .._tensor import Tensor
    target = node.target
    key = ("method", target) if node.op == "call_method" else target
    sig = _SIGNATURES.get(key)
    if sig is None:
        fn = getattr(Tensor, target) if node.op == "call_method" else target
        if fn in _OPERATOR_PARAMS:
            sig = _OPERATOR_PARAMS[fn]
        else:
            try:
                sig = inspect.signature(fn)
            except (TypeError, ValueError):
                return None
        _SIGNATURES[key] = sig
    try:
        bound = sig.bind(*node.args, **node.kwargs)
    except TypeError:
        return None
    bound.apply_defaults()
    return dict(bound.arguments)


def _params(*names):
    return inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_ONLY)
                              for n in names])


_OPERATOR_PARAMS = {operator.add: _params("input", "other"),
                    operator.sub: _params("input", "other"),
                    operator.mul: _params("input", "other"),
                    operator.truediv: _params("input", "other"),
                    operator.matmul: _params("input", "other"), operator.neg: _params("input"),
                    operator.getitem: _params("input", "index")}


def register(name, targets, emit, check, **kw):
    lowering = Lowering(name, emit, check, **kw)
    for t in targets:
        _TABLE[t] = lowering
    return lowering


# ---- checks ----------------------------------------------------------------------------------
def _meta(x):
    from ..fx.node import Node
    if isinstance(x, Node):
        m = x.meta.get("tensor_meta")
        return m if hasattr(m, "dtype") else None
    return None


def _is_node(x):
    from ..fx.node import Node
    return isinstance(x, Node)


def _weak_scalar(x):
    # A Python float/int keeps a float tensor's dtype, in NumPy 2 as in torch.
    return type(x) in (int, float)


def _float_same(node, args, tensor_params, scalar_params=()):
    """The output and every tensor argument in ``tensor_params`` share one float32/float64
    dtype (a None argument allowed), and ``scalar_params`` are Python ints/floats."""
    out = _meta(node)
    if out is None or out.dtype not in _floats():
        return False
    for p in tensor_params:
        a = args.get(p)
        if a is None:
            continue
        m = _meta(a)
        if m is None or m.dtype is not out.dtype:
            return False
    for p in scalar_params:
        a = args.get(p)
        if _is_node(a):
            m = _meta(a)
            if m is None or m.dtype is not out.dtype:
                return False
        elif not _weak_scalar(a):
            return False
    return True


def _check_binary(node, args):
    if args.get("alpha", 1) != 1 or args.get("out") is not None or \
            args.get("rounding_mode") is not None:
        return False
    a, b = args["input"], args["other"]
    if not (_is_node(a) or _is_node(b)):
        return False
    return _float_same(node, args, (), ("input", "other"))


def _check_unary(node, args):
    if args.get("inplace") or args.get("out") is not None:
        return False
    return _float_same(node, args, ("input",))


# ---- element-wise ----------------------------------------------------------------------------
_BINARY_UFUNC = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "true_divide"}


def _pointwise_emit(ufunc, arity):
    def emit(node, args, e):
        operands = [e.src(args["input"])] + ([e.src(args["other"])] if arity == 2 else [])
        if ufunc == "maximum":
            operands.append("0")
        out = f", out={e.out}" if e.out else ""
        return [f"{e.name} = xp.{ufunc}({', '.join(operands)}{out})"]
    return emit


def _binary(name, targets):
    ufunc = _BINARY_UFUNC[name]
    register(ufunc, targets, _pointwise_emit(ufunc, 2), _check_binary, out=True,
             pointwise=(ufunc, 2))


def _unary(ufunc, targets):
    register(ufunc, targets, _pointwise_emit(ufunc, 1), _check_unary, out=True,
             pointwise=(ufunc, 1))


def _emit_call(expr):
    """An emitter assigning ``expr.format(**rendered args, name=…)``."""
    def emit(node, args, e):
        rendered = {k: e.src(v) for k, v in args.items()}
        return [f"{e.name} = " + expr.format(**rendered)]
    return emit


# ---- views (any dtype: they move no values) --------------------------------------------------
def _check_view(node, args):
    return _meta(node) is not None and _meta(args.get("input")) is not None


def _emit_reshape(node, args, e):
    return [f"{e.name} = {e.src(args['input'])}.reshape({tuple(_meta(node).shape)!r})"]


def _emit_transpose(node, args, e):
    return [f"{e.name} = xp.swapaxes({e.src(args['input'])}, {args['dim0']!r}, {args['dim1']!r})"]


def _check_transpose(node, args):
    return _check_view(node, args) and all(type(args[k]) is int for k in ("dim0", "dim1"))


def _permute_dims(args):
    dims = args.get("dims")
    if dims is None:
        dims = args.get("dims_args", ())
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = dims[0]
    return tuple(dims)


def _check_permute(node, args):
    return _check_view(node, args) and all(type(d) is int for d in _permute_dims(args))


def _emit_permute(node, args, e):
    return [f"{e.name} = {e.src(args['input'])}.transpose({_permute_dims(args)!r})"]


def _emit_t(node, args, e):
    return [f"{e.name} = {e.src(args['input'])}.T"]


def _emit_expand(node, args, e):
    return [f"{e.name} = xp.broadcast_to({e.src(args['input'])}, {tuple(_meta(node).shape)!r})"]


def _emit_contiguous(node, args, e):
    return [f"{e.name} = xp.ascontiguousarray({e.src(args['input'])})"]


def _check_contiguous(node, args):
    from .. import contiguous_format
    return _check_view(node, args) and args.get("memory_format") in (None, contiguous_format)


def _basic_index(index):
    """An index of ints, slices of ints/None, None and Ellipsis only: NumPy's basic indexing,
    which is torch's for these."""
    items = index if isinstance(index, tuple) else (index,)
    for i in items:
        if i is None or i is Ellipsis or type(i) is int:
            continue
        if isinstance(i, slice) and all(v is None or type(v) is int
                                        for v in (i.start, i.stop, i.step)):
            if i.step is not None and i.step <= 0:
                return False
            continue
        return False
    return True


def _check_getitem(node, args):
    src = args["input"]
    if not _is_node(src):
        return False
    if src.meta.get("type") in (tuple, list):
        return type(args["index"]) is int
    return _check_view(node, args) and _basic_index(args["index"])


def _emit_getitem(node, args, e):
    return [f"{e.name} = {e.src(args['input'])}[{e.lit(args['index'])}]"]


def _dropout_active(args):
    return bool(args.get("training", True)) and args.get("p") != 0


def _check_dropout(node, args):
    p = args.get("p")
    if args.get("inplace") or not _weak_scalar(p) or not 0 <= p < 1:
        return False
    if not _dropout_active(args):
        return _check_view(node, args)
    return _float_same(node, args, ("input",))


def _emit_dropout(node, args, e):
    if not _dropout_active(args):
        return _emit_identity(node, args, e)
    # The mask is drawn by the eager op's own draw (same generator, same order), so a compiled
    # graph keeps every random number of eager; only the product and its gradient are lowered.
    meta = _meta(node)
    return [f"{e.name}__mask = __K.dropout_mask(__like, {tuple(meta.shape)!r}, "
            f"{e.gen.dtype_src(meta)}, {args['p']!r})",
            f"{e.name} = xp.multiply({e.src(args['input'])}, {e.name}__mask)"]


def _emit_identity(node, args, e):
    return [f"{e.name} = {e.src(args['input'])}"]


# ---- products --------------------------------------------------------------------------------
def _check_linear(node, args):
    w = _meta(args.get("weight"))
    x = _meta(args.get("input"))
    return _float_same(node, args, ("input", "weight", "bias")) and w is not None and \
        len(w.shape) == 2 and x is not None and len(x.shape) >= 2 and \
        (args.get("bias") is None or len(_meta(args["bias"]).shape) == 1)


def _emit_linear(node, args, e):
    return [f"{e.name} = __K.linear(__be, {e.src(args['input'])}, {e.src(args['weight'])}, "
            f"{e.src(args['bias'])}, {e.out})"]


def _check_matmul(node, args):
    a, b = _meta(args.get("input")), _meta(args.get("other"))
    return _float_same(node, args, ("input", "other")) and a is not None and b is not None and \
        len(a.shape) >= 2 and len(b.shape) >= 2 and args.get("out") is None


def _emit_matmul(node, args, e):
    return [f"{e.name} = __K.matmul(__be, {e.src(args['input'])}, {e.src(args['other'])}, "
            f"{e.out})"]


# ---- layers ----------------------------------------------------------------------------------
def _check_gelu(node, args):
    return _float_same(node, args, ("input",)) and args.get("approximate") in ("none", "tanh")


def _check_softmax(node, args):
    return _float_same(node, args, ("input",)) and args.get("dtype") is None and \
        type(args.get("dim")) is int and len(_meta(node).shape) > 0


def _softmax_emit(log):
    def emit(node, args, e):
        dim = args["dim"] % len(_meta(node).shape)
        return [f"{e.name} = __K.softmax(xp, {e.src(args['input'])}, {dim}, {log})"]
    return emit


def _check_layer_norm(node, args):
    shape = args.get("normalized_shape")
    x = _meta(args.get("input"))
    if x is None or not isinstance(shape, (tuple, list)) or \
            tuple(x.shape[len(x.shape) - len(shape):]) != tuple(shape):
        return False
    return _float_same(node, args, ("input", "weight", "bias")) and _weak_scalar(args.get("eps"))


def _emit_layer_norm(node, args, e):
    nd = len(args["normalized_shape"])
    call = (f"__K.layer_norm(xp, {e.src(args['input'])}, {e.src(args['weight'])}, "
            f"{e.src(args['bias'])}, {nd}, {args['eps']!r})")
    if e.training:
        return [f"{e.name}, {e.name}__mean, {e.name}__invstd = {call}"]
    return [f"{e.name} = {call}[0]"]


def _check_batch_norm_eval(node, args):
    x = _meta(args.get("input"))
    return args.get("training") is False and x is not None and len(x.shape) >= 2 and \
        _float_same(node, args, ("input", "running_mean", "running_var", "weight", "bias")) and \
        _is_node(args.get("running_mean")) and _is_node(args.get("running_var")) and \
        _weak_scalar(args.get("eps"))


def _emit_batch_norm_eval(node, args, e):
    return [f"{e.name} = __K.batch_norm_eval(xp, {e.src(args['input'])}, "
            f"{e.src(args['running_mean'])}, {e.src(args['running_var'])}, "
            f"{e.src(args['weight'])}, {e.src(args['bias'])}, {args['eps']!r})"]


def _int_tuple(v, n):
    if type(v) is int:
        return (v,) * n
    if isinstance(v, (tuple, list)) and len(v) == n and all(type(i) is int for i in v):
        return tuple(v)
    return None


def _check_conv2d(node, args):
    x = _meta(args.get("input"))
    if x is None or len(x.shape) != 4 or type(args.get("groups")) is not int:
        return False
    if any(_int_tuple(args.get(k), 2) is None for k in ("stride", "padding", "dilation")):
        return False
    return _float_same(node, args, ("input", "weight", "bias"))


def _emit_conv2d(node, args, e):
    from ..ops.conv import conv_params
    pad = _int_tuple(args["padding"], 2)
    params = conv_params(_int_tuple(args["stride"], 2), tuple((p, p) for p in pad),
                         _int_tuple(args["dilation"], 2), args["groups"])
    return [f"{e.name} = __K.conv2d(__be, {e.src(args['input'])}, {e.src(args['weight'])}, "
            f"{e.src(args['bias'])}, {e.lit(params)})"]


def _check_cross_entropy(node, args):
    x, t = _meta(args.get("input")), _meta(args.get("target"))
    from .. import _dtype as dt
    return (x is not None and t is not None and len(x.shape) == 2 and len(t.shape) == 1
            and t.dtype is dt.int64 and args.get("weight") is None
            and args.get("size_average") is None and args.get("reduce") is None
            and args.get("reduction") in ("mean", "sum") and args.get("label_smoothing") == 0.0
            and type(args.get("ignore_index")) is int and _float_same(node, args, ("input",)))


def _emit_cross_entropy(node, args, e):
    call = (f"__K.cross_entropy(xp, {e.src(args['input'])}, {e.src(args['target'])}, "
            f"{args['ignore_index']!r}, {args['reduction']!r})")
    if e.training:
        return [f"{e.name}, {e.name}__lsm, {e.name}__valid, {e.name}__count = {call}"]
    return [f"{e.name} = {call}[0]"]


def _check_nll_loss(node, args):
    return _check_cross_entropy(node, dict(args, label_smoothing=0.0))


def _emit_nll_loss(node, args, e):
    call = (f"__K.nll_loss(xp, {e.src(args['input'])}, {e.src(args['target'])}, "
            f"{args['ignore_index']!r}, {args['reduction']!r})")
    if e.training:
        return [f"{e.name}, {e.name}__valid, {e.name}__count = {call}"]
    return [f"{e.name} = {call}[0]"]


def _check_attention(node, args):
    q, k, v = (_meta(args.get(n)) for n in ("query", "key", "value"))
    if q is None or k is None or v is None or not len(q.shape) == len(k.shape) == len(v.shape) \
            == 4 or q.shape[:2] != k.shape[:2] or k.shape[:3] != v.shape[:3] or \
            q.shape[-1] != k.shape[-1]:
        return False
    return (args.get("attn_mask") is None and args.get("dropout_p") == 0 and
            args.get("is_causal") is False and args.get("enable_gqa") is False and
            args.get("nan_rows") is False and k.shape[-2] > 0 and q.shape[-2] > 0 and
            (args.get("scale") is None or _weak_scalar(args.get("scale"))) and
            _float_same(node, args, ("query", "key", "value")))


def _emit_attention(node, args, e):
    call = (f"__K.attention(__be, {e.src(args['query'])}, {e.src(args['key'])}, "
            f"{e.src(args['value'])}, {args['scale']!r})")
    if e.training:
        return [f"{e.name}, {e.name}__probs = {call}"]
    return [f"{e.name} = {call}[0]"]


def _check_mse(node, args):
    return args.get("size_average") is None and args.get("reduce") is None and \
        args.get("weight") is None and args.get("reduction") in ("mean", "sum", "none") and \
        _float_same(node, args, ("input", "target")) and \
        _meta(args["input"]).shape == _meta(args["target"]).shape


def _emit_mse(node, args, e):
    return [f"{e.name} = __K.mse_loss({e.src(args['input'])}, {e.src(args['target'])}, "
            f"{args['reduction']!r})"]


# ---- reductions and joins --------------------------------------------------------------------
def _reduce_axes(args, ndim):
    dim = args.get("dim")
    if dim is None:
        return None
    dims = (dim,) if type(dim) is int else tuple(dim)
    if not all(type(d) is int for d in dims):
        return False
    return tuple(sorted(d % max(ndim, 1) for d in dims))


def _check_reduce(node, args):
    x = _meta(args.get("input"))
    return x is not None and args.get("dtype") is None and \
        _reduce_axes(args, len(x.shape)) is not False and type(args.get("keepdim")) is bool and \
        _float_same(node, args, ("input",))


def _reduce_emit(fn):
    def emit(node, args, e):
        axes = _reduce_axes(args, len(_meta(args["input"]).shape))
        return [f"{e.name} = xp.asarray({e.src(args['input'])}.{fn}(axis={axes!r}, "
                f"keepdims={args['keepdim']!r}))"]
    return emit


def _check_cat(node, args):
    tensors = args.get("tensors")
    if not isinstance(tensors, (tuple, list)) or not tensors or type(args.get("dim")) is not int \
            or args.get("out") is not None:
        return False
    out = _meta(node)
    return out is not None and out.dtype in _floats() and \
        all(_meta(t) is not None and _meta(t).dtype is out.dtype for t in tensors)


def _emit_cat(node, args, e):
    parts = ", ".join(e.src(t) for t in args["tensors"])
    dim = args["dim"] % len(_meta(node).shape)
    out = f", out={e.out}" if e.out else ""
    return [f"{e.name} = xp.concatenate(({parts},), axis={dim}{out})"]


def _build_table():
    import ember
    import ember.nn.functional as F
    m = lambda *names: [("method", n) for n in names]  # noqa: E731
    _binary("add", [operator.add, ember.add] + m("add"))
    _binary("sub", [operator.sub, ember.sub] + m("sub"))
    _binary("mul", [operator.mul, ember.mul] + m("mul"))
    _binary("div", [operator.truediv, ember.div] + m("div"))
    _unary("negative", [operator.neg, ember.neg] + m("neg"))
    _unary("tanh", [ember.tanh, F.tanh] + m("tanh"))
    _unary("exp", [ember.exp] + m("exp"))
    _unary("log", [ember.log] + m("log"))
    _unary("sqrt", [ember.sqrt] + m("sqrt"))
    _unary("absolute", [ember.abs] + m("abs"))
    _unary("maximum", [ember.relu, F.relu] + m("relu"))
    register("sigmoid", [ember.sigmoid, F.sigmoid] + m("sigmoid"),
             _emit_call("__K.sigmoid(xp, {input})"), _check_unary)
    register("silu", [F.silu], _emit_call("__K.silu(xp, {input})"), _check_unary)
    register("gelu", [F.gelu], _emit_call("__K.gelu(__be, {input}, {approximate})"), _check_gelu)
    register("linear", [F.linear], _emit_linear, _check_linear, out=True)
    register("matmul", [ember.matmul, operator.matmul] + m("matmul"), _emit_matmul, _check_matmul,
             out=True)
    register("softmax", [F.softmax, ember.softmax] + m("softmax"), _softmax_emit(False),
             _check_softmax)
    register("log_softmax", [F.log_softmax, ember.log_softmax] + m("log_softmax"),
             _softmax_emit(True), _check_softmax)
    register("layer_norm", [F.layer_norm], _emit_layer_norm, _check_layer_norm)
    register("batch_norm_eval", [F.batch_norm], _emit_batch_norm_eval, _check_batch_norm_eval)
    register("conv2d", [F.conv2d], _emit_conv2d, _check_conv2d)
    register("cross_entropy", [F.cross_entropy], _emit_cross_entropy, _check_cross_entropy)
    register("nll_loss", [F.nll_loss], _emit_nll_loss, _check_nll_loss)
    from ..ops.attention import sdpa
    register("attention", [sdpa], _emit_attention, _check_attention)
    loss_ops = importlib.import_module("ember.ops.loss")  # (not ember.ops' attribute: ops
    # are bound there by name, and a family module's name may be an op's too)
    register("mse_loss", [F.mse_loss, loss_ops.mse_loss], _emit_mse, _check_mse)
    register("dropout", [F.dropout], _emit_dropout, _check_dropout,
             view=lambda node, args: not _dropout_active(args))
    register("sum", [ember.sum] + m("sum"), _reduce_emit("sum"), _check_reduce)
    register("mean", [ember.mean] + m("mean"), _reduce_emit("mean"), _check_reduce)
    register("cat", [ember.cat], _emit_cat, _check_cat, out=True)
    register("reshape", m("view", "reshape", "flatten", "unflatten", "unsqueeze", "squeeze") +
             [ember.reshape, ember.flatten, ember.unsqueeze, ember.squeeze],
             _emit_reshape, _check_view, view=True)
    register("transpose", m("transpose") + [ember.transpose], _emit_transpose, _check_transpose,
             view=True)
    register("permute", m("permute") + [ember.permute], _emit_permute, _check_permute, view=True)
    register("t", m("t") + [ember.t], _emit_t, _check_view, view=True)
    register("expand", m("expand"), _emit_expand, _check_view, view=True)
    register("contiguous", m("contiguous"), _emit_contiguous, _check_contiguous, view=True)
    register("getitem", [operator.getitem], _emit_getitem, _check_getitem, view=True)


_built = False


def ensure_table():
    global _built
    if not _built:
        _build_table()
        _built = True
