"""Batching rules of reductions and other ops along a ``dim`` (softmax, cumulative ops,
sorting): the logical dim becomes the value's dim + 1; "all dims" (``dim=None``) becomes the
example's dims 1..n, or a reduction over the flattened example for ops that take one dim."""
from .._tensor import Tensor
from .vmap import RULES, bind, call_bound, pad_value, shift_dim, unwrap, wrap_outputs

# dim=None (or absent) reduces the whole example; these take a tuple of dims.
_MULTI_DIM = {"sum", "mean", "nansum", "nanmean", "amax", "amin", "std", "var", "std_mean",
              "var_mean", "logsumexp", "count_nonzero", "norm", "all", "any", "vector_norm"}
# These take one dim: over the whole example they reduce the flattened example.
_ONE_DIM = {"max", "min", "argmax", "argmin", "prod", "median", "nanmedian", "aminmax"}
# Ops along a dim that keep the shape (or only change that dim).
_ALONG_DIM = {"softmax", "log_softmax", "cumsum", "cumprod", "logcumsumexp", "cummax",
              "cummin", "sort", "argsort", "topk", "kthvalue", "mode", "diff", "renorm",
              "normalize", "glu", "cross", "msort", "matrix_norm"}
_DIM_PARAMS = ("dim", "axis")


def _dims_value(bound):
    for p in _DIM_PARAMS:
        if p in bound.arguments:
            return p, bound.arguments[p]
    return None, None


def reduce_along(op, level, args, kwargs, name):
    bound = bind(op, args, kwargs)
    first = next(iter(bound.arguments))
    if name in ("max", "min") and isinstance(bound.arguments.get("dim"), Tensor):
        from .batch_rules_elementwise import elementwise
        return elementwise(op, level, args, kwargs, name)  # the binary form: max(a, b)
    x = bound.arguments[first]
    value, batched = unwrap(x, level)
    if not batched:
        from .vmap import fallback
        return fallback(op, level, args, kwargs, name)
    n = x.dim()
    for k, a in list(bound.arguments.items()):
        # A second batched operand (``cross(a, b)``): its example padded to the first's rank.
        if k != first and isinstance(a, Tensor) and unwrap(a, level)[1]:
            bound.arguments[k] = pad_value(a._value, n)
    param, d = _dims_value(bound)
    keepdim = bound.arguments.get("keepdim", False)
    squeeze_back = False
    if n == 0:
        # A 0-d example: reduce a size-1 dim made for it.
        value = value.unsqueeze(1)
        d_new = 1 if (d is None or not isinstance(d, (tuple, list)) or len(d)) else (1,)
        if "keepdim" in bound.arguments:
            squeeze_back = bool(keepdim)
            bound.arguments["keepdim"] = False
        elif name in _ALONG_DIM or name in _ONE_DIM:
            squeeze_back = True
    elif isinstance(d, int) and not isinstance(d, bool):
        d_new = shift_dim(d, n)
    elif isinstance(d, (tuple, list)) and len(d):
        d_new = tuple(shift_dim(i, n) for i in d)
    elif name in _ALONG_DIM:
        # No dim: an op-specific default (cross: the first dim of size 3) the loop resolves.
        from .vmap import fallback
        return fallback(op, level, args, kwargs, name)
    elif name in _MULTI_DIM or name in ("amax", "amin"):
        d_new = tuple(range(1, n + 1))
    else:  # one-dim reduction over the whole example
        value = value.reshape(value.shape[0], -1)
        d_new = 1
        if name in ("max", "min", "median", "nanmedian"):
            # Without a dim these give the value alone, not (values, indices).
            out = _call(op, bound, first, value, param or "dim", d_new)[0]
            return wrap_outputs(out.reshape(-1, *((1,) * n)) if keepdim else out, level)
        if keepdim:
            bound.arguments["keepdim"] = False
            out = _call(op, bound, first, value, param, d_new)
            return wrap_outputs(_reshape_all(out, (-1,) + (1,) * n), level)
    if param is None:
        param = "dim"
    out = _call(op, bound, first, value, param, d_new)
    if squeeze_back:
        out = _squeeze_all(out, 1)
    return wrap_outputs(out, level)


def _call(op, bound, first, value, param, d_new):
    bound.arguments[first] = value
    bound.arguments[param] = d_new
    return call_bound(op, bound)


def _reshape_all(out, shape):
    if isinstance(out, tuple):
        return type(out)([o.reshape(*shape) for o in out])
    return out.reshape(*shape)


def _squeeze_all(out, dim):
    if isinstance(out, tuple):
        return type(out)([o.squeeze(dim) for o in out])
    return out.squeeze(dim)


for _n in _MULTI_DIM | _ONE_DIM | _ALONG_DIM:
    RULES[_n] = reduce_along
