"""Batching rules of matrix products: each is one broadcast ``matmul`` (or ``einsum``) on the
values: a batched operand's examples padded to the other's rank so the batch is a leading
broadcast dim; ``linear`` with a batched weight (ensembles, per-sample gradients) is a batched
product. Vector-shaped ops (``dot``, ``mv``, ``outer``…) are composed from these."""
from .vmap import batch_rule, bind, call_bound, fallback, unwrap, value_at, _make


def _matmul_values(level, a, b):
    av, ab = unwrap(a, level)
    bv, bb = unwrap(b, level)
    ra, rb = a.dim(), b.dim()
    squeeze = []
    if ab and ra == 1:
        av, ra = av.unsqueeze(1), 2
        squeeze.append(-2)
    if bb and rb == 1:
        bv, rb = bv.unsqueeze(-1), 2
        squeeze.append(-1)
    rank = max(ra, rb)
    if ab:
        for _ in range(rank - ra):
            av = av.unsqueeze(1)
    if bb:
        for _ in range(rank - rb):
            bv = bv.unsqueeze(1)
    out = av.matmul(bv)
    # A batched vector operand was made a matrix: its dim goes again (-1 first, then -2).
    for d in sorted(squeeze, reverse=False):
        out = out.squeeze(d)
    return out


@batch_rule("matmul", "__matmul__", "mm", "bmm", "mv")
def matmul(op, level, args, kwargs, name):
    a, b = args[0], args[1] if len(args) > 1 else kwargs.get("other", kwargs.get("mat2",
                                                                              kwargs.get("vec")))
    return _make(_matmul_values(level, a, b), level)


@batch_rule("__rmatmul__")
def rmatmul(op, level, args, kwargs, name):
    return _make(_matmul_values(level, args[1], args[0]), level)


@batch_rule("dot", "vdot", "inner")
def dot(op, level, args, kwargs, name):
    a, b = args[0], args[1]
    if a.dim() > 1 or b.dim() > 1:  # inner of matrices: a product over the last dims
        from .. import einsum as _einsum
        la = "abcdefgh"[:a.dim() - 1]
        lb = "ijklmnop"[:b.dim() - 1]
        return _einsum(f"{la}z,{lb}z->{la}{lb}", a, b)
    if name == "vdot":
        a = a.conj()
    return (a * b).sum(-1)


@batch_rule("outer", "ger")
def outer(op, level, args, kwargs, name):
    return args[0].unsqueeze(-1) * args[1].unsqueeze(-2)


@batch_rule("addmm", "addmv", "baddbmm", "addbmm", "addr")
def add_product(op, level, args, kwargs, name):
    bound = bind(op, args, kwargs)
    arg = bound.arguments
    names = list(arg)
    base, m1, m2 = arg[names[0]], arg[names[1]], arg[names[2]]
    beta, alpha = arg.get("beta", 1), arg.get("alpha", 1)
    if name == "addr":
        prod = m1.unsqueeze(-1) * m2.unsqueeze(-2)
    else:
        prod = m1.matmul(m2)
        if name == "addbmm":
            prod = prod.sum(0)
    out = prod * alpha if alpha != 1 else prod
    return out + (base * beta if beta != 1 else base) if beta != 0 else out


@batch_rule("linear")
def linear(op, level, args, kwargs, name):
    bound = bind(op, args, kwargs)
    x, weight = bound.arguments["input"], bound.arguments["weight"]
    bias = bound.arguments.get("bias")
    w_value, w_batched = unwrap(weight, level)
    b_batched = bias is not None and unwrap(bias, level)[1]
    if not w_batched and not b_batched:
        # The batch is one more leading dim of the input: linear itself handles it.
        return _make(op(value_at(x, level), weight, bias), level)
    x_value = value_at(x, level)
    size = x_value.shape[0]
    lead = tuple(x_value.shape[1:-1])
    flat = x_value.reshape(size, -1, x_value.shape[-1])           # B, M, in
    wt = w_value.transpose(-1, -2) if w_batched else weight.t()  # (B,) in, out
    out = flat.matmul(wt)                                        # B, M, out
    if bias is not None:
        b_value = value_at(bias, level)
        out = out + b_value.unsqueeze(1)
    return _make(out.reshape(size, *lead, out.shape[-1]), level)


@batch_rule("einsum")
def einsum(op, level, args, kwargs, name):
    equation, operands = args[0], args[1:]
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    eq = equation.replace(" ", "")
    if "->" in eq:
        lhs, rhs = eq.split("->")
    else:
        lhs = eq
        letters = [c for c in lhs if c.isalpha()]
        rhs = ("..." if "..." in lhs else "") + "".join(
            sorted(c for c in set(letters) if letters.count(c) == 1))
    terms = lhs.split(",")
    used = set(eq)
    batch = next(c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBAzyxwvutsrqponmlkjihgfedcba"
                 if c not in used)
    new_terms, values = [], []
    for term, t in zip(terms, operands):
        v, batched = unwrap(t, level)
        new_terms.append(batch + term if batched else term)
        values.append(v)
    out = op(",".join(new_terms) + "->" + batch + rhs, *values)
    return _make(out, level)


@batch_rule("tensordot")
def tensordot(op, level, args, kwargs, name):
    bound = bind(op, args, kwargs)
    a, b, dims = bound.arguments["a"], bound.arguments["b"], bound.arguments["dims"]
    if isinstance(dims, int):
        da = list(range(a.dim() - dims, a.dim()))
        db = list(range(dims))
    else:
        da, db = [list(d) if isinstance(d, (list, tuple)) else [d] for d in dims]
    letters = "abcdefghijklmnopqrstuvwxy"
    la = list(letters[:a.dim()])
    lb = list(letters[a.dim():a.dim() + b.dim()])
    for i, j in zip(da, db):
        lb[j % b.dim()] = la[i % a.dim()]
    out = [c for k, c in enumerate(la) if k not in [i % a.dim() for i in da]] + \
        [c for k, c in enumerate(lb) if k not in [j % b.dim() for j in db]]
    from .. import einsum as _einsum
    return _einsum(f"{''.join(la)},{''.join(lb)}->{''.join(out)}", a, b)


@batch_rule("scaled_dot_product_attention", "sdpa")
def attention(op, level, args, kwargs, name):
    """Attention over the trailing (L, E) dims: the batch folds into the leading dim."""
    bound = bind(op, args, kwargs)
    a = bound.arguments
    mask = a["attn_mask"]
    q = a["query"]
    # A mask without the leading dim broadcasts over the folded one as it did over N.
    if (mask is not None and (unwrap(mask, level)[1] or mask.dim() >= q.dim())) or \
            q.dim() < 3 or \
            not (q.dim() == a["key"].dim() == a["value"].dim()):
        return fallback(op, level, args, kwargs, name)
    values = [value_at(a[k], level) for k in ("query", "key", "value")]
    size, n = values[0].shape[0], values[0].shape[1]
    for k, v in zip(("query", "key", "value"), values):
        a[k] = v.reshape(size * n, *v.shape[2:])
    out = call_bound(op, bound)
    return _make(out.reshape(size, n, *out.shape[1:]), level)
