"""Batching rules of normalisation layers: batch norm folds the vmap batch into the channels
(statistics per example and channel, as each example alone would have them); layer norm and
group norm fold it into the leading dims, with a batched affine applied after."""
from .vmap import batch_rule, bind, call_bound, fallback, unwrap, value_at, _make


def _per_example_channels(t, level, size):
    """A per-channel tensor (C) as the B*C channels of the folded input."""
    if t is None:
        return None
    v, batched = unwrap(t, level)
    return v.reshape(-1) if batched else t.repeat(size)


@batch_rule("batch_norm")
def batch_norm(op, level, args, kwargs, name):
    bound = bind(op, args, kwargs)
    a = bound.arguments
    x = a["input"]
    rm, rv = a["running_mean"], a["running_var"]
    if a["training"] and ((rm is not None and not unwrap(rm, level)[1])
                          or (rv is not None and not unwrap(rv, level)[1])):
        raise RuntimeError(
            "Batch norm got a batched tensor as input while the running_mean or running_var, "
            "which will be updated in place, were not batched.\nIf you are using a module and "
            "do not need eval mode, please set `track_running_stats` to be False.If you are "
            "using a prebuilt module and do not need eval mode, please see the functorch "
            "website for resources on how to patch your module to work with vmap")
    xv = value_at(x, level)
    size = xv.shape[0]
    if x.dim() < 2:
        return fallback(op, level, args, kwargs, name)
    n, c = xv.shape[1], xv.shape[2]
    folded = xv.movedim(0, 1).reshape(n, size * c, *xv.shape[3:])
    out = op(folded, _per_example_channels(rm, level, size), _per_example_channels(rv, level, size),
             _per_example_channels(a["weight"], level, size),
             _per_example_channels(a["bias"], level, size), a["training"], a["momentum"],
             a["eps"])
    return _make(out.reshape(n, size, c, *xv.shape[3:]).movedim(1, 0), level)


@batch_rule("layer_norm", "rms_norm")
def layer_norm(op, level, args, kwargs, name):
    bound = bind(op, args, kwargs)
    a = bound.arguments
    weight, bias = a.get("weight"), a.get("bias")
    affine_batched = any(t is not None and unwrap(t, level)[1] for t in (weight, bias))
    a["input"] = value_at(a["input"], level)
    if not affine_batched:
        return _make(call_bound(op, bound), level)
    a["weight"] = None
    if "bias" in a:
        a["bias"] = None
    out = _make(call_bound(op, bound), level)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


@batch_rule("group_norm")
def group_norm(op, level, args, kwargs, name):
    bound = bind(op, args, kwargs)
    a = bound.arguments
    x, weight, bias = a["input"], a["weight"], a["bias"]
    xv = value_at(x, level)
    size, n = xv.shape[0], xv.shape[1]
    flat = xv.reshape(size * n, *xv.shape[2:])
    affine_batched = any(t is not None and unwrap(t, level)[1] for t in (weight, bias))
    if not affine_batched:
        out = op(flat, a["num_groups"], weight, bias, a["eps"])
        return _make(out.reshape(xv.shape), level)
    out = _make(op(flat, a["num_groups"], None, None, a["eps"]).reshape(xv.shape), level)
    tail = (1,) * (x.dim() - 2)
    if weight is not None:
        out = out * weight.reshape(-1, *tail)
    if bias is not None:
        out = out + bias.reshape(-1, *tail)
    return out


@batch_rule("instance_norm")
def instance_norm(op, level, args, kwargs, name):
    """Statistics per example and channel: the batch folds into N."""
    bound = bind(op, args, kwargs)
    a = bound.arguments
    stats = (a["running_mean"], a["running_var"], a["weight"], a["bias"])
    if any(t is not None and unwrap(t, level)[1] for t in stats) or \
            a["running_mean"] is not None and a["use_input_stats"]:
        return fallback(op, level, args, kwargs, name)
    xv = value_at(a["input"], level)
    size, n = xv.shape[0], xv.shape[1]
    a["input"] = xv.reshape(size * n, *xv.shape[2:])
    return _make(call_bound(op, bound).reshape(xv.shape), level)
