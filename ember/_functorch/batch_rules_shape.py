"""Batching rules of shape and view ops: dim arithmetic on the value, whose dim 0 is the batch
(``permute(1, 0)`` is ``permute(0, 2, 1)``, ``view(6)`` is ``view(B, 6)``); the results are
views of the value wherever the op's are views of its input."""
from .._tensor import Tensor
from .vmap import (RULES, batch_rule, bind, call_bound, fallback, pad_value, shift_dim, unwrap,
                   value_at, wrap_outputs, _make)

_DIM_PARAMS = ("dim", "dims", "dim0", "dim1", "dim2", "source", "destination", "dimension",
               "start_dim", "end_dim", "axis0", "axis1")
# Ops whose dims index the result, which has one dim more than the example.
_ONE_MORE = {"unsqueeze", "diag_embed"}


def _sizes(args, keyword):
    """A shape given as ``*sizes`` or as one sequence (``view(2, 3)``, ``view((2, 3))``)."""
    if keyword is not None:
        return tuple(keyword)
    if len(args) == 1 and isinstance(args[0], (tuple, list)) or \
            len(args) == 1 and hasattr(args[0], "__len__") and not isinstance(args[0], int):
        return tuple(args[0])
    return tuple(args)


@batch_rule("view", "reshape")
def view(op, level, args, kwargs, name):
    value, batched = unwrap(args[0], level)
    if not batched or "dtype" in kwargs:
        return fallback(op, level, args, kwargs, name)
    shape = _sizes(args[1:], kwargs.get("size", kwargs.get("shape")))
    try:
        out = op(value, value.shape[0], *shape)
    except RuntimeError:
        if name != "view":
            raise
        out = value.reshape(value.shape[0], *shape)  # a value strided by the batch move
    return _make(out, level)


@batch_rule("view_as", "reshape_as")
def view_as(op, level, args, kwargs, name):
    x, other = args[0], args[1] if len(args) > 1 else kwargs["other"]
    return (x.view if name == "view_as" else x.reshape)(*other.shape)


@batch_rule("permute")
def permute(op, level, args, kwargs, name):
    x = args[0]
    value, batched = unwrap(x, level)
    if not batched:
        return fallback(op, level, args, kwargs, name)
    dims = _sizes(args[1:], kwargs.get("dims"))
    n = x.dim()
    return _make(value.permute(0, *[shift_dim(d, n) for d in dims]), level)


@batch_rule("expand", "broadcast_to")
def expand(op, level, args, kwargs, name):
    x = args[0]
    value, batched = unwrap(x, level)
    if not batched:
        return fallback(op, level, args, kwargs, name)
    sizes = _sizes(args[1:], kwargs.get("size"))
    value = pad_value(value, len(sizes))
    return _make(value.expand(value.shape[0], *sizes), level)


@batch_rule("expand_as")
def expand_as(op, level, args, kwargs, name):
    other = args[1] if len(args) > 1 else kwargs["other"]
    return args[0].expand(*other.shape)


@batch_rule("repeat", "tile")
def repeat(op, level, args, kwargs, name):
    x = args[0]
    value, batched = unwrap(x, level)
    if not batched:
        return fallback(op, level, args, kwargs, name)
    reps = _sizes(args[1:], kwargs.get("repeats", kwargs.get("dims")))
    if name == "tile" and len(reps) < x.dim():
        reps = (1,) * (x.dim() - len(reps)) + tuple(reps)
    value = pad_value(value, len(reps))
    return _make(value.repeat(1, *reps), level)


@batch_rule("t")
def t(op, level, args, kwargs, name):
    x = args[0]
    return x if x.dim() < 2 else x.transpose(0, 1)


@batch_rule("adjoint")
def adjoint(op, level, args, kwargs, name):
    return args[0].transpose(-2, -1).conj()


@batch_rule("squeeze")
def squeeze(op, level, args, kwargs, name):
    x = args[0]
    value, batched = unwrap(x, level)
    if not batched:
        return fallback(op, level, args, kwargs, name)
    bound = bind(op, args, kwargs)
    d = bound.arguments.get("dim")
    n = x.dim()
    if d is None:
        dims = tuple(i + 1 for i, s in enumerate(x.shape) if s == 1)
    elif isinstance(d, int):
        dims = (shift_dim(d, n),)
    else:
        dims = tuple(shift_dim(i, n) for i in d)
    if n == 0 or not dims:
        return _make(value, level)
    return _make(value.squeeze(dims if len(dims) > 1 else dims[0]), level)


@batch_rule("flatten", "ravel")
def flatten(op, level, args, kwargs, name):
    x = args[0]
    value, batched = unwrap(x, level)
    if not batched:
        return fallback(op, level, args, kwargs, name)
    if name == "ravel" or x.dim() == 0:
        return _make(value.reshape(value.shape[0], -1), level)
    return dim_shift(op, level, args, kwargs, name)


@batch_rule("flip")
def flip(op, level, args, kwargs, name):
    x = args[0]
    value, batched = unwrap(x, level)
    if not batched:
        return fallback(op, level, args, kwargs, name)
    dims = _sizes(args[1:], kwargs.get("dims"))
    return _make(value.flip(*[shift_dim(d, x.dim()) for d in dims]), level)


@batch_rule("roll")
def roll(op, level, args, kwargs, name):
    x = args[0]
    value, batched = unwrap(x, level)
    if not batched:
        return fallback(op, level, args, kwargs, name)
    bound = bind(op, args, kwargs)
    dims = bound.arguments.get("dims")
    if dims is None or dims == ():
        flat = value.reshape(value.shape[0], -1).roll(bound.arguments["shifts"], 1)
        return _make(flat.reshape(value.shape), level)
    return dim_shift(op, level, args, kwargs, name)


@batch_rule("tril", "triu")
def triangle(op, level, args, kwargs, name):
    value, batched = unwrap(args[0], level)
    if not batched:
        return fallback(op, level, args, kwargs, name)
    return _make(op(value, *args[1:], **kwargs), level)


def dim_shift(op, level, args, kwargs, name):
    """An op on its first argument whose dim parameters are shifted past the batch."""
    bound = bind(op, args, kwargs)
    first = next(iter(bound.arguments))
    x = bound.arguments[first]
    value, batched = unwrap(x, level)
    if not batched:
        return fallback(op, level, args, kwargs, name)
    n = x.dim() + (1 if name in _ONE_MORE else 0)
    bound.arguments[first] = value
    for p in _DIM_PARAMS:
        d = bound.arguments.get(p)
        if isinstance(d, int) and not isinstance(d, bool):
            bound.arguments[p] = shift_dim(d, n)
        elif isinstance(d, (tuple, list)) and all(isinstance(i, int) for i in d):
            bound.arguments[p] = type(d)(shift_dim(i, n) for i in d)
    return wrap_outputs(call_bound(op, bound), level)


for _n in ("unsqueeze", "transpose", "swapaxes", "swapdims", "movedim", "moveaxis", "narrow",
           "select", "unbind", "split", "chunk", "unsafe_chunk", "unsafe_split", "tensor_split",
           "split_with_sizes", "unflatten", "diagonal", "unfold", "diag_embed", "narrow_copy",
           "hsplit", "vsplit", "dsplit"):
    RULES[_n] = dim_shift


@batch_rule("cat", "concat", "concatenate", "stack")
def cat(op, level, args, kwargs, name):
    bound = bind(op, args, kwargs)
    tensors = list(bound.arguments["tensors"])
    rank = max(t.dim() for t in tensors)
    # Every operand becomes batched (an unbatched one is the same for every example).
    values = [value_at(t, level) for t in tensors]
    n = rank + (1 if name == "stack" else 0)
    d = bound.arguments.get("dim", 0)
    bound.arguments["tensors"] = values
    bound.arguments["dim"] = shift_dim(d, n) if name == "stack" or rank else 0
    return _make(call_bound(op, bound), level)


@batch_rule("hstack", "vstack", "dstack", "column_stack", "row_stack")
def stacks(op, level, args, kwargs, name):
    tensors = args[0]
    # As torch defines them: cat after lifting each operand to 1/2/3 dims.
    from .. import atleast_1d, atleast_2d, atleast_3d, cat
    if name == "hstack":
        ts = [atleast_1d(t) for t in tensors]
        return cat(ts, 0 if ts[0].dim() == 1 else 1)
    if name in ("vstack", "row_stack"):
        return cat([atleast_2d(t) for t in tensors], 0)
    if name == "dstack":
        return cat([atleast_3d(t) for t in tensors], 2)
    ts = [t.reshape(-1, 1) if t.dim() <= 1 else t for t in tensors]
    return cat(ts, 1)


@batch_rule("atleast_1d", "atleast_2d", "atleast_3d")
def atleast(op, level, args, kwargs, name):
    want = int(name[-2])
    if len(args) != 1 or not isinstance(args[0], Tensor):
        return fallback(op, level, args, kwargs, name)
    x = args[0]
    if x.dim() >= want:
        return x
    if want == 3 and x.dim() == 2:
        return x.unsqueeze(-1)
    for _ in range(want - x.dim()):
        x = x.unsqueeze(0)
    return x


@batch_rule("new_zeros", "new_ones", "new_full", "new_empty", "new_tensor")
def new_factory(op, level, args, kwargs, name):
    # The new tensor has the given shape, whatever the batch: it is not batched.
    value, _ = unwrap(args[0], level)
    return op(value, *args[1:], **kwargs)
