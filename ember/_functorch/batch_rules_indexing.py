"""Batching rules of indexing: ``x[idx]`` with ints, slices, ``None``, ``...`` and unbatched
index tensors is the same index behind a ``:`` for the batch; batched index tensors are joined
by an ``arange`` over the batch as the first advanced index; ``gather``/``scatter``/
``take_along_dim`` shift their dim with every operand batched."""
from .._tensor import Tensor
from .vmap import (RULES, batch_rule, bind, call_bound, fallback, inplace_error, level_size,
                   pad_value, shift_dim, unwrap, value_at, _make)


def _as_tuple(idx):
    return idx if isinstance(idx, tuple) else (idx,)


def _is_advanced(i):
    return isinstance(i, (Tensor, list)) or (hasattr(i, "shape") and hasattr(i, "dtype")
                                              and not isinstance(i, (int, slice)))


def _advanced_leading(idx):
    """Whether the advanced indices (tensors; ints beside them) come first and together."""
    seen_basic = False
    for i in idx:
        if _is_advanced(i) or (isinstance(i, int) and not isinstance(i, bool)):
            if seen_basic:
                return False
        else:
            seen_basic = True
    return True


def _batched_index(level, x, idx):
    """The value-level index for ``x`` batched at ``level`` (a batched index included)."""
    if not any(type(i).__name__ == "BatchedTensor" and unwrap(i, level)[1] for i in idx):
        advanced = [k for k, i in enumerate(idx) if _is_advanced(i)]
        if advanced and advanced != list(range(advanced[0], advanced[-1] + 1)):
            return None  # separated advanced indices move their dims to the front
        return (slice(None),) + idx
    if not _advanced_leading(idx) or any(i is None or i is Ellipsis for i in idx):
        return None
    from .. import arange
    rank = max((i.dim() for i in idx if isinstance(i, Tensor)), default=0)
    size = level_size(level)
    ar = arange(size, device=x.device).reshape(size, *([1] * rank))
    fixed = []
    for i in idx:
        v, batched = unwrap(i, level) if isinstance(i, Tensor) else (i, False)
        fixed.append(pad_value(v, rank) if batched else i)
    return (ar,) + tuple(fixed)


@batch_rule("__getitem__", "getitem")
def getitem(op, level, args, kwargs, name):
    x, idx = args[0], _as_tuple(args[1])
    if any(isinstance(i, bool) for i in idx):
        return fallback(op, level, args, kwargs, name)
    value = value_at(x, level)
    index = _batched_index(level, x, idx)
    if index is None:
        return fallback(op, level, args, kwargs, name)
    return _make(op(value, index), level)


@batch_rule("__setitem__", "setitem")
def setitem(op, level, args, kwargs, name):
    x, idx, v = args[0], _as_tuple(args[1]), args[2]
    value, batched = unwrap(x, level)
    if not batched:
        raise inplace_error()
    index = _batched_index(level, x, idx)
    if index is None or any(isinstance(i, bool) for i in idx):
        return fallback(op, level, args, kwargs, name)
    v_value, v_batched = unwrap(v, level) if isinstance(v, Tensor) else (v, False)
    if v_batched:
        target_rank = value[index].dim() - 1
        v_value = pad_value(v_value, target_rank)
    op(value, index, v_value)
    return None


def _all_batched_dim_op(op, level, args, kwargs, name):
    """An op whose tensor operands must line up example for example: all made batched."""
    bound = bind(op, args, kwargs)
    first = next(iter(bound.arguments))
    x = bound.arguments[first]
    in_place = name.endswith("_")
    if in_place and not unwrap(x, level)[1]:
        raise inplace_error()
    n = x.dim()
    for k, a in list(bound.arguments.items()):
        if isinstance(a, Tensor):
            bound.arguments[k] = value_at(a, level)
    d = bound.arguments.get("dim")
    if isinstance(d, int):
        bound.arguments["dim"] = shift_dim(d, n)
    elif d is None and name == "take_along_dim":
        bound.arguments[first] = bound.arguments[first].reshape(level_size(level), -1)
        idx = bound.arguments["indices"]
        bound.arguments["indices"] = idx.reshape(idx.shape[0], -1)
        bound.arguments["dim"] = 1
    out = call_bound(op, bound)
    return x if in_place else _make(out, level)


for _n in ("gather", "scatter", "scatter_add", "scatter_reduce", "take_along_dim", "scatter_",
           "scatter_add_", "scatter_reduce_"):
    RULES[_n] = _all_batched_dim_op


@batch_rule("index_select", "index_add", "index_copy", "index_fill", "index_add_",
            "index_copy_", "index_fill_")
def index_dim(op, level, args, kwargs, name):
    bound = bind(op, args, kwargs)
    index = bound.arguments.get("index")
    if isinstance(index, Tensor) and unwrap(index, level)[1]:
        return fallback(op, level, args, kwargs, name)
    first = next(iter(bound.arguments))
    x = bound.arguments[first]
    if name.endswith("_") and not unwrap(x, level)[1]:
        raise inplace_error()
    n = x.dim()
    for k, a in list(bound.arguments.items()):
        if isinstance(a, Tensor) and k != "index":
            bound.arguments[k] = value_at(a, level)
    bound.arguments["dim"] = shift_dim(bound.arguments["dim"], n)
    out = call_bound(op, bound)
    return x if name.endswith("_") else _make(out, level)


@batch_rule("embedding")
def embedding(op, level, args, kwargs, name):
    bound = bind(op, args, kwargs)
    indices, weight = bound.arguments["input"], bound.arguments["weight"]
    w_value, w_batched = unwrap(weight, level)
    if not w_batched:
        bound.arguments["input"] = value_at(indices, level)
        return _make(call_bound(op, bound), level)
    if bound.arguments.get("max_norm") is not None:
        return fallback(op, level, args, kwargs, name)
    # A batched table: each example looks up its own table.
    from .. import arange
    i_value = value_at(indices, level)
    size = level_size(level)
    ar = arange(size, device=weight.device).reshape(size, *([1] * indices.dim()))
    return _make(w_value[ar, i_value], level)
