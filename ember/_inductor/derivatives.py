"""The graph's own backward: reverse-mode differentiation of a lowered graph, generated as one
function over arrays.

``BackwardGenerator`` walks the forward graph from its outputs back to its inputs. Each lowered
node with a rule here adds its inputs' gradient contributions as array expressions (the closed
forms of the eager nodes' ``backward``, ``kernels.py``); a contribution to a value read by
several nodes is summed. What a rule reads of the forward (an input, the result, a kernel's
side output such as layer norm's ``invstd``) is recorded, and the forward keeps exactly those
arrays for the backward. A node without a rule ran through its Ember op with autograd on
(``codegen.py``): its part of the backward is one ``autograd.grad`` call on its leaves.

The generated backward is the partitioned backward graph of torch's AOT autograd; it is built
from the forward graph and these rules rather than by tracing the eager backward, because
Ember's backward nodes compute on arrays that a tracer cannot see."""
from ..fx.node import Node
from .lowering import _meta

__all__ = ["BackwardGenerator", "has_vjp"]


def _need(b, x):
    return isinstance(x, Node) and x in b.requires


class _Ctx:
    """What a rule sees: ``g`` (the gradient of the node's value), ``fwd(x)`` (a forward value,
    kept for the backward), ``side(suffix)`` (a kernel's side output), ``acc(x, expr)``."""

    def __init__(self, gen, node):
        self.gen, self.node = gen, node
        self.g = gen.grad_name(node)
        self.requires = gen.requires

    def need(self, x):
        return _need(self, x)

    def fwd(self, x):
        if isinstance(x, Node):
            self.gen.saved.add(x.name)
            return x.name
        return self.gen.lowering.lit(x)

    def side(self, suffix):
        name = f"{self.node.name}__{suffix}"
        self.gen.saved.add(name)
        return name

    def shape(self, x):
        return tuple(_meta(x).shape)

    def acc(self, x, expr):
        self.gen.accumulate(x, expr)

    def line(self, text):
        self.gen.lines.append(text)

    def to_shape(self, x, expr):
        """``expr`` (shaped like this node's value) summed back to ``x``'s shape."""
        if self.shape(x) == tuple(_meta(self.node).shape):
            return expr
        return f"__K.sum_to({expr}, {self.shape(x)!r})"


# ---- rules: rule(ctx, args) ------------------------------------------------------------------
def _add(c, a):
    for k in ("input", "other"):
        if c.need(a[k]):
            c.acc(a[k], c.to_shape(a[k], c.g))


def _sub(c, a):
    if c.need(a["input"]):
        c.acc(a["input"], c.to_shape(a["input"], c.g))
    if c.need(a["other"]):
        c.acc(a["other"], c.to_shape(a["other"], f"-{c.g}"))


def _mul(c, a):
    x, y = a["input"], a["other"]
    if c.need(x):
        c.acc(x, c.to_shape(x, f"{c.g} * {c.fwd(y)}"))
    if c.need(y):
        c.acc(y, c.to_shape(y, f"{c.g} * {c.fwd(x)}"))


def _div(c, a):
    x, y = a["input"], a["other"]
    if c.need(x):
        c.acc(x, c.to_shape(x, f"{c.g} / {c.fwd(y)}"))
    if c.need(y):
        c.acc(y, c.to_shape(y, f"-{c.g} * {c.fwd(x)} / ({c.fwd(y)} * {c.fwd(y)})"))


def _unary(expr):
    """A rule ``d input = expr`` with ``{g}``, ``{x}`` (the input) and ``{y}`` (the result)."""
    def rule(c, a):
        x = a["input"]
        if c.need(x):
            fields = {"g": c.g}
            if "{x}" in expr:
                fields["x"] = c.fwd(x)
            if "{y}" in expr:
                fields["y"] = c.fwd(c.node)
            c.acc(x, expr.format(**fields))
    return rule


def _linear_rule(c, a):
    x, w, b = a["input"], a["weight"], a["bias"]
    nx, nw, nb = c.need(x), c.need(w), c.need(b)
    if not (nx or nw or nb):
        return
    t = f"{c.node.name}__gs"
    xs = c.fwd(x) if (nw or len(c.shape(x)) != 2) else "None"
    c.line(f"{t} = __K.linear_backward(__be, {c.g}, {xs}, {c.fwd(w) if nx else 'None'}, "
           f"{nx}, {nw}, {nb})")
    if nx:
        c.acc(x, f"{t}[0]")
    if nw:
        c.acc(w, f"{t}[1]")
    if nb:
        c.acc(b, f"{t}[2]")


def _matmul(c, a):
    x, y = a["input"], a["other"]
    nx, ny = c.need(x), c.need(y)
    t = f"{c.node.name}__gs"
    c.line(f"{t} = __K.matmul_backward(__be, {c.g}, {c.fwd(x)}, {c.fwd(y)}, {nx}, {ny})")
    if nx:
        c.acc(x, f"{t}[0]")
    if ny:
        c.acc(y, f"{t}[1]")


def _softmax(log):
    def rule(c, a):
        x = a["input"]
        if c.need(x):
            dim = a["dim"] % len(c.shape(c.node))
            c.acc(x, f"__K.softmax_backward(xp, {c.g}, {c.fwd(c.node)}, {dim}, {log})")
    return rule


def _gelu(c, a):
    if c.need(a["input"]):
        c.acc(a["input"], f"__K.gelu_backward(__be, {c.g}, {c.fwd(a['input'])}, "
                          f"{a['approximate']!r})")


def _layer_norm(c, a):
    x, w, b = a["input"], a["weight"], a["bias"]
    nx, nw, nb = c.need(x), c.need(w), c.need(b)
    if not (nx or nw or nb):
        return
    t = f"{c.node.name}__gs"
    nd = len(a["normalized_shape"])
    c.line(f"{t} = __K.layer_norm_backward(xp, {c.g}, {c.fwd(x)}, {c.fwd(w)}, "
           f"{c.side('mean')}, {c.side('invstd')}, {nd}, {nx}, {nw}, {nb})")
    if nx:
        c.acc(x, f"{t}[0]")
    if nw:
        c.acc(w, f"{t}[1]")
    if nb:
        c.acc(b, f"{t}[2]")


def _cross_entropy(c, a):
    if c.need(a["input"]):
        c.acc(a["input"], f"__K.cross_entropy_backward(xp, {c.g}, {c.side('lsm')}, "
                          f"{c.fwd(a['target'])}, {c.side('valid')}, {c.side('count')}, "
                          f"{a['reduction']!r})")


def _nll_loss(c, a):
    if c.need(a["input"]):
        c.acc(a["input"], f"__K.nll_loss_backward(xp, {c.g}, {c.fwd(a['input'])}, "
                          f"{c.fwd(a['target'])}, {c.side('valid')}, {c.side('count')}, "
                          f"{a['reduction']!r})")


def _attention(c, a):
    q, k, v = a["query"], a["key"], a["value"]
    nq, nk, nv = c.need(q), c.need(k), c.need(v)
    if not (nq or nk or nv):
        return
    t = f"{c.node.name}__gs"
    c.line(f"{t} = __K.attention_backward(__be, {c.g}, {c.fwd(q)}, {c.fwd(k)}, {c.fwd(v)}, "
           f"{c.side('probs')}, {a['scale']!r}, {nq}, {nk}, {nv})")
    for i, (x, need) in enumerate(((q, nq), (k, nk), (v, nv))):
        if need:
            c.acc(x, f"{t}[{i}]")


def _mse(c, a):
    x, y = a["input"], a["target"]
    if c.need(x) or c.need(y):
        t = f"{c.node.name}__gx"
        c.line(f"{t} = __K.mse_loss_backward({c.g}, {c.fwd(x)}, {c.fwd(y)}, "
               f"{a['reduction']!r})")
        if c.need(x):
            c.acc(x, t)
        if c.need(y):
            c.acc(y, f"-{t}")


def _dropout(c, a):
    from .lowering import _dropout_active
    if not c.need(a["input"]):
        return
    c.acc(a["input"], f"{c.g} * {c.side('mask')}" if _dropout_active(a) else c.g)


def _identity(c, a):
    if c.need(a["input"]):
        c.acc(a["input"], c.g)


def _reshape(c, a):
    if c.need(a["input"]):
        c.acc(a["input"], f"{c.g}.reshape({c.shape(a['input'])!r})")


def _transpose(c, a):
    if c.need(a["input"]):
        c.acc(a["input"], f"xp.swapaxes({c.g}, {a['dim0']!r}, {a['dim1']!r})")


def _permute(c, a):
    from .lowering import _permute_dims
    if c.need(a["input"]):
        dims = [d % len(c.shape(c.node)) for d in _permute_dims(a)]
        inverse = tuple(sorted(range(len(dims)), key=dims.__getitem__))
        c.acc(a["input"], f"{c.g}.transpose({inverse!r})")


def _t(c, a):
    if c.need(a["input"]):
        c.acc(a["input"], f"{c.g}.T")


def _expand(c, a):
    if c.need(a["input"]):
        c.acc(a["input"], f"__K.sum_to({c.g}, {c.shape(a['input'])!r})")


def _getitem(c, a):
    src = a["input"]
    if not c.need(src):
        return
    if src.meta.get("type") in (tuple, list):
        c.gen.accumulate_item(src, a["index"], c.g)
        return
    z = f"{c.node.name}__gz"
    meta = _meta(src)
    c.line(f"{z} = xp.zeros({tuple(meta.shape)!r}, dtype={c.gen.lowering.dtype_src(meta)}.np)")
    c.line(f"{z}[{c.gen.lowering.lit(a['index'])}] = {c.g}")
    c.acc(src, z)


def _reduce(mean):
    def rule(c, a):
        x = a["input"]
        if not c.need(x):
            return
        from .lowering import _reduce_axes
        shape = c.shape(x)
        axes = _reduce_axes(a, len(shape))
        g = c.g
        if axes is not None and not a["keepdim"] and shape:
            g = f"xp.expand_dims({g}, {axes!r})"
        expr = f"xp.broadcast_to({g}, {shape!r})"
        if mean:
            count = 1
            for i, s in enumerate(shape):
                if axes is None or i in axes:
                    count *= s
            expr = f"({expr} / {max(count, 1)})"
        c.acc(x, expr)
    return rule


def _cat(c, a):
    dim = a["dim"] % len(c.shape(c.node))
    start = 0
    for t in a["tensors"]:
        size = c.shape(t)[dim]
        if c.need(t):
            index = (slice(None),) * dim + (slice(start, start + size),)
            c.acc(t, f"{c.g}[{c.gen.lowering.lit(index)}]")
        start += size


_RULES = {
    "add": _add, "subtract": _sub, "multiply": _mul, "true_divide": _div,
    "negative": _unary("-{g}"), "tanh": _unary("{g} * (1 - {y} * {y})"),
    "exp": _unary("{g} * {y}"), "log": _unary("{g} / {x}"), "sqrt": _unary("{g} / (2 * {y})"),
    "absolute": _unary("{g} * xp.sign({x})"), "maximum": _unary("xp.where({y} > 0, {g}, 0)"),
    "sigmoid": _unary("{g} * {y} * (1 - {y})"), "silu": _unary("__K.silu_backward(xp, {g}, {x})"),
    "gelu": _gelu, "linear": _linear_rule, "matmul": _matmul, "softmax": _softmax(False),
    "log_softmax": _softmax(True), "layer_norm": _layer_norm, "cross_entropy": _cross_entropy,
    "nll_loss": _nll_loss, "attention": _attention,
    "mse_loss": _mse, "dropout": _dropout, "reshape": _reshape, "transpose": _transpose,
    "permute": _permute, "t": _t, "expand": _expand, "contiguous": _identity,
    "getitem": _getitem, "sum": _reduce(False), "mean": _reduce(True), "cat": _cat,
}


def has_vjp(node, args):
    from .lowering import lowering_for
    low = lowering_for(node)
    return low is not None and low.name in _RULES


class BackwardGenerator:
    """Generates ``backward(ctx, *grads)`` for a ``GraphLowering`` of a training graph.
    ``outputs``: the flat output nodes (one gradient each); ``inputs``: the differentiable
    inputs in the autograd Function's order, each a list of the graph nodes that read it (a
    parameter read by two get_attr nodes sums both)."""

    def __init__(self, lowering, outputs, inputs):
        self.lowering = lowering
        self.requires = lowering.requires
        self.outputs = outputs
        self.inputs = inputs
        self.saved = lowering.saved
        self.lines = []
        self.grads = {}  # node -> grad variable name (assigned once something flows in)
        self.items = {}  # tuple-valued node -> {index: grad expression var}

    def grad_name(self, node):
        return f"g__{node.name}"

    def accumulate(self, node, expr):
        name = self.grad_name(node)
        if node in self.grads:
            self.lines.append(f"{name} = {name} + {expr}")
        else:
            self.lines.append(f"{name} = {expr}")
            self.grads[node] = name

    def accumulate_item(self, node, index, expr):
        items = self.items.setdefault(node, {})
        name = f"g__{node.name}__{index}"
        if index in items:
            self.lines.append(f"{name} = {name} + {expr}")
        else:
            self.lines.append(f"{name} = {expr}")
            items[index] = name
        self.grads[node] = None

    def generate(self):
        low = self.lowering
        for i, out in enumerate(self.outputs):
            if out in self.requires:
                self.accumulate(out, f"__grads[{i}]._data")
        for n in reversed(low.nodes):
            if n not in self.grads or n.op not in ("call_function", "call_method"):
                continue
            d = low.decisions[n]
            if d is None:
                self._fallback(n)
            else:
                lowering, args = d
                _RULES[lowering.name](_Ctx(self, n), args)
        ret = []
        for readers in self.inputs:
            names = [self.grads[r] for r in readers if self.grads.get(r)]
            if not names:
                ret.append("None")
                continue
            meta = _meta(readers[0])
            ret.append(f"__W({' + '.join(names)}, {low.dtype_src(meta)}, __like)")
        saved = sorted(self.saved)
        head = [f"({', '.join(saved)}{',' if saved else ''}) = ctx.__arrays" if saved else "pass",
                "ctx.__arrays = None"]
        body = head + self.lines + [f"return ({', '.join(ret)}{',' if ret else ''})"]
        return ("def backward(ctx, *__grads):\n"
                "    if ctx.__arrays is None:\n"
                "        raise RuntimeError(__SECOND_BACKWARD)\n" +
                "".join(f"    {line}\n" for line in body)), saved

    def _fallback(self, n):
        """Hand the node's backward to the engine: ``autograd.grad`` of its recorded result."""
        low = self.lowering
        leaves = low.fallback_leaves.get(n, [])
        if not leaves:
            return
        self.saved.add(f"{n.name}__r")
        self.saved.add(f"{n.name}__leaves")
        kind = low.value_kind(n)
        if kind == "tuple":
            items = self.items.get(n, {})
            idx = sorted(items)
            metas = n.meta["tensor_meta"]
            outs = ", ".join(f"{n.name}__r[{i}]" for i in idx)
            gouts = ", ".join(f"__W({items[i]}, {low.dtype_src(metas[i])}, __like)" for i in idx)
        else:
            outs = f"{n.name}__r"
            gouts = f"__W({self.grad_name(n)}, {low.dtype_src(_meta(n))}, __like)"
        t = f"{n.name}__lg"
        self.lines.append(f"{t} = __grad(({outs},), {n.name}__leaves, ({gouts},), "
                          "allow_unused=True)")
        for i, leaf in enumerate(leaves):
            meta = _meta(leaf)
            self.accumulate(leaf, f"__K.grad_data(xp, {t}[{i}], {tuple(meta.shape)!r}, "
                                  f"{low.dtype_src(meta)})")
