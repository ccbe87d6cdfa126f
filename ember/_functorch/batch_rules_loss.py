"""Batching rules of losses: the loss runs once with ``reduction='none'`` on the batched values
(class-index losses with the batch folded into N), then each example's losses are reduced as
``reduction`` says, with the same denominators torch uses (weights, ignored targets)."""
from .._tensor import Tensor
from .vmap import batch_rule, bind, call_bound, fallback, pad_value, unwrap, value_at, _make

_POINTWISE = ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
              "binary_cross_entropy_with_logits", "kl_div", "soft_margin_loss",
              "poisson_nll_loss", "gaussian_nll_loss", "hinge_embedding_loss")


def _legacy(bound):
    return bound.arguments.get("size_average") is not None or \
        bound.arguments.get("reduce") is not None


def _reduce(losses, reduction, denom=None):
    """Per-example reduction of a value whose dim 0 is the batch."""
    if reduction == "none":
        return losses
    flat = losses.reshape(losses.shape[0], -1)
    if reduction == "sum":
        return flat.sum(1)
    if denom is not None:
        return flat.sum(1) / denom
    return flat.mean(1)


@batch_rule(*_POINTWISE)
def pointwise_loss(op, level, args, kwargs, name):
    bound = bind(op, args, kwargs)
    if _legacy(bound) or "reduction" not in bound.arguments:
        return fallback(op, level, args, kwargs, name)
    reduction = bound.arguments["reduction"]
    rank = max(t.dim() for t in bound.arguments.values() if isinstance(t, Tensor))
    first = None
    for k, t in list(bound.arguments.items()):
        if isinstance(t, Tensor):
            if first is None:
                first = t
            v, batched = unwrap(t, level)
            bound.arguments[k] = pad_value(v, rank) if batched else t
    if not any(unwrap(t, level)[1] for t in (args + tuple(kwargs.values()))
               if isinstance(t, Tensor)):
        return fallback(op, level, args, kwargs, name)
    bound.arguments["reduction"] = "none"
    losses = call_bound(op, bound)
    if reduction == "batchmean":
        n = first.shape[0] if first.dim() else 1
        return _make(losses.reshape(losses.shape[0], -1).sum(1) / n, level)
    return _make(_reduce(losses, reduction), level)


@batch_rule("nll_loss", "cross_entropy")
def class_loss(op, level, args, kwargs, name):
    bound = bind(op, args, kwargs)
    a = bound.arguments
    if _legacy(bound) or "reduction" not in a:
        return fallback(op, level, args, kwargs, name)
    weight = a.get("weight")
    if weight is not None and unwrap(weight, level)[1]:
        return fallback(op, level, args, kwargs, name)
    if weight is not None and a.get("label_smoothing", 0.0):
        return fallback(op, level, args, kwargs, name)
    reduction = a["reduction"]
    x, target = a["input"], a["target"]
    xv, tv = value_at(x, level), value_at(target, level)
    size = xv.shape[0]
    probabilities = target.is_floating_point()
    if x.dim() == 1:  # one example of C classes: the vmap batch is its N
        inp, tgt = xv, tv
    else:
        inp = xv.reshape(size * xv.shape[1], *xv.shape[2:])
        tgt = tv.reshape(size * tv.shape[1], *tv.shape[2:])
    a["input"], a["target"], a["reduction"] = inp, tgt, "none"
    losses = call_bound(op, bound)
    if reduction == "none":
        return _make(losses.reshape(size, *target.shape[1 if probabilities else 0:]
                                    if x.dim() > 1 else ()), level)
    losses = losses.reshape(size, -1)
    if reduction != "mean":
        return _make(_reduce(losses, reduction), level)
    if probabilities:
        return _make(losses.mean(1), level)
    flat_t = tv.reshape(size, -1)
    keep = flat_t != a["ignore_index"]
    if weight is None:
        denom = keep.sum(1).to(losses.dtype)
    else:
        denom = (weight[flat_t.clamp(min=0)] * keep).sum(1)
    return _make(losses.sum(1) / denom, level)
