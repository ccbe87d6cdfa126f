"""Random ops under vmap's ``randomness``: 'error' refuses them (torch's message), 'different'
draws independently per example (one draw of the batched shape where the op allows it, else
one draw per example), 'same' draws once for the example and shares it across the batch."""
from .._tensor import Tensor
from .vmap import (RANDOM_OPS, RULES, _levels, bind, fallback, unwrap, _make,
                   _stack_results)

_FACTORIES = {"rand", "randn", "randint", "randperm", "normal", "poisson", "multinomial",
              "bernoulli", "rand_like", "randn_like", "randint_like"}
_DROPOUT = {"dropout", "alpha_dropout", "feature_alpha_dropout", "dropout1d", "dropout2d",
            "dropout3d", "feature_dropout", "rrelu"}
_IN_PLACE = {"uniform_", "normal_", "bernoulli_", "exponential_", "geometric_", "log_normal_",
             "cauchy_", "random_"}
# Channel dropouts by spatial rank: an example with N has this many dims plus two.
_FEATURE_RANKS = {"dropout1d": 1, "dropout2d": 2, "dropout3d": 3}
RANDOM_OPS.update(_FACTORIES | _DROPOUT | _IN_PLACE)


def _error():
    return RuntimeError(
        "vmap: called random operation while in randomness error mode. Please either use the "
        "'same' or 'different' randomness flags on vmap or perform the randomness operation out "
        "of vmap")


def _not_random(bound, name):
    """Dropout in eval mode (or p=0) draws nothing."""
    a = bound.arguments
    return name in _DROPOUT and (a.get("training") is False or a.get("p") == 0)


def _randomness():
    return _levels()[-1].randomness


def unbatched_random(op, args, kwargs, name):
    """A random op on no batched tensor (``rand(3)``) inside vmap."""
    try:
        bound = bind(op, args, kwargs)
    except TypeError:
        bound = None
    if bound is not None and _not_random(bound, name):
        return op.fn(*args, **kwargs)
    mode = _randomness()
    if mode == "error":
        raise _error()
    if mode == "same":
        return op.fn(*args, **kwargs)
    if name in _IN_PLACE:
        return op.fn(*args, **kwargs)  # a captured tensor filled once: the same for the batch
    level = _levels()[-1]
    if name in ("rand", "randn") and args:
        shape = tuple(args[0]) if len(args) == 1 and isinstance(args[0], (tuple, list)) \
            else tuple(args)
        if all(isinstance(s, int) for s in shape):
            return _make(op.fn(level.size, *shape, **kwargs), level.level)  # one draw
    # Other factories: one draw per example, stacked.
    return _stack_results([op.fn(*args, **kwargs) for _ in range(level.size)], level.level,
                          name)


def random_rule(op, level, args, kwargs, name):
    try:
        bound = bind(op, args, kwargs)
    except TypeError:
        bound = None
    if bound is not None and _not_random(bound, name):
        return _make(op(unwrap(args[0], level)[0], *args[1:], **kwargs), level)
    mode = next(lv.randomness for lv in _levels() if lv.level == level)
    if mode == "error":
        raise _error()
    x = args[0]
    value, batched = unwrap(x, level)
    if name in _IN_PLACE:
        if not batched:
            from .vmap import inplace_error
            raise inplace_error()
        if mode == "different":
            op(value, *args[1:], **kwargs)
        else:
            op(value[0], *args[1:], **kwargs)
            value.copy_(value[0].unsqueeze(0).expand(value.shape))
        return x
    if mode == "same":
        if name in _DROPOUT:
            from .. import ones
            mask = op(ones(*x.shape, dtype=x.dtype, device=x.device), *args[1:], **kwargs)
            return x * mask
        if name in ("rand_like", "randn_like", "randint_like"):
            return op(value[0], *args[1:], **kwargs)
        if name == "bernoulli" and len(args) == 1 and not kwargs:
            from .. import rand
            return (rand(*x.shape, dtype=x.dtype, device=x.device) < x).to(x.dtype)
        return fallback(op, level, args, kwargs, name)
    if name in _FEATURE_RANKS and x.dim() == _FEATURE_RANKS[name] + 2:
        # Channel dropout of (N, C, *spatial) examples: the batch folds into N.
        size, n = value.shape[0], value.shape[1]
        out = op(value.reshape(size * n, *value.shape[2:]), *args[1:], **kwargs)
        return _make(out.reshape(value.shape), level)
    if name == "multinomial" and x.dim() > 1:
        return fallback(op, level, args, kwargs, name)
    if not isinstance(x, Tensor) or not batched:
        return fallback(op, level, args, kwargs, name)
    return _make(op(value, *args[1:], **kwargs), level)


for _n in RANDOM_OPS:
    RULES[_n] = random_rule
