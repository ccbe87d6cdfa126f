"""Batching rules of pooling, padding and resampling: the layer sees (N, C, *spatial) images,
so the vmap batch is folded into N (an example without N has the batch as its N); one call."""
from .vmap import RULES, fallback, unwrap, _make, wrap_outputs

_SPATIAL = {}
for _kind in ("max_pool", "avg_pool", "adaptive_avg_pool", "adaptive_max_pool", "lp_pool",
              "fractional_max_pool"):
    for _d in (1, 2, 3):
        _SPATIAL[f"{_kind}{_d}d"] = _d
_SPATIAL.update({"interpolate": None, "upsample": None, "upsample_nearest": None,
                 "upsample_bilinear": None, "grid_sample": None})


def fold_into_n(op, level, args, kwargs, name):
    return _fold(op, level, args, kwargs, name, _SPATIAL.get(name))


def _fold(op, level, args, kwargs, name, spatial):
    """``spatial``: the layer's spatial rank (None: it always takes N)."""
    x = args[0]
    value, batched = unwrap(x, level)
    if not batched or any(unwrap(a, level)[1] for a in list(args[1:]) + list(kwargs.values())):
        return fallback(op, level, args, kwargs, name)
    has_n = spatial is None or x.dim() == spatial + 2
    if not has_n:
        return wrap_outputs(op(value, *args[1:], **kwargs), level)
    size, n = value.shape[0], value.shape[1]
    out = op(value.reshape(size * n, *value.shape[2:]), *args[1:], **kwargs)

    def unfold(o):
        return o.reshape(size, n, *o.shape[1:])
    if isinstance(out, tuple):
        return wrap_outputs(tuple(unfold(o) for o in out), level)
    return _make(unfold(out), level)


def pad(op, level, args, kwargs, name):
    x = args[0]
    value, batched = unwrap(x, level)
    mode = kwargs.get("mode", args[2] if len(args) > 2 else "constant")
    if not batched:
        return fallback(op, level, args, kwargs, name)
    if mode == "constant":
        # Constant padding of the trailing dims does not care about the leading batch.
        return _make(op(value, *args[1:], **kwargs), level)
    spatial = len(args[1] if len(args) > 1 else kwargs["pad"]) // 2
    return _fold(op, level, args, kwargs, name, spatial)


def trailing_dims(op, level, args, kwargs, name):
    """Ops on the last three dims (C, H, W), whatever leads them."""
    value, batched = unwrap(args[0], level)
    if not batched:
        return fallback(op, level, args, kwargs, name)
    return _make(op(value, *args[1:], **kwargs), level)


for _n in _SPATIAL:
    RULES[_n] = fold_into_n
RULES["pad"] = pad
for _n in ("pixel_shuffle", "pixel_unshuffle"):
    RULES[_n] = trailing_dims
