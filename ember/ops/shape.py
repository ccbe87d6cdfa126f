"""Shape ops. Views share memory (and the version counter) with their base; each view remembers
how to replay itself on another tensor (``_view_fn``), which in-place writes through views and
the backward of slicing both use. Copying shape ops (cat, stack, flip…) follow; last the split
aliases and the in-place view ops (``t_``, ``squeeze_``…, ``as_strided_``) and ``resize_``,
which give a tensor itself a new geometry."""
import builtins
import operator
import warnings as _warnings
import weakref

from .. import _dtype as dt
from .. import _memory_format as _mf
from .._layout import strided as _STRIDED
from . import _dispatch
from ..autograd import forward_ad as _forward_ad
from ._dispatch import CompositeBackward, record_composite
from ._dispatch import (Tensor, Node, needs_grad, record, record_multi, _wrap, wrap_dim,
                        wrap_dim_no_scalar, wrap_dims, device_mismatch)
from ..autograd.grad_mode import _state as _grad_state, no_grad
from ..autograd.graph import _type_name
from .._tensor import _contiguous_strides
from .inplace import check_inplace as _check_inplace
from ..amp import autocast_mode as _autocast

__all__ = ["reshape", "flatten", "unflatten", "squeeze", "unsqueeze", "permute", "transpose",
           "swapaxes", "swapdims", "t", "movedim", "moveaxis", "broadcast_to", "broadcast_shapes",
           "broadcast_tensors", "narrow", "select", "diagonal", "unbind", "split", "tensor_split",
           "chunk", "hsplit", "vsplit", "clone", "cat", "concat", "concatenate", "stack", "hstack",
           "vstack", "dstack", "column_stack", "atleast_1d", "atleast_2d", "atleast_3d", "flip",
           "fliplr", "flipud", "roll", "tile", "repeat_interleave", "tril", "triu", "diag_embed",
           "diag", "diagflat", "meshgrid", "cartesian_prod", "combinations", "block_diag", "rot90",
           "ravel", "split_with_sizes", "unsafe_split", "unsafe_split_with_sizes", "unsafe_chunk",
           "dsplit", "row_stack", "as_strided_", "resize_as_"]
METHODS = ["view", "reshape", "view_as", "reshape_as", "flatten", "unflatten", "squeeze",
           "unsqueeze", "permute", "transpose", "swapaxes", "swapdims", "t", "movedim", "moveaxis",
           "expand", "expand_as", "broadcast_to", "sum_to_size", "narrow", "select", "diagonal",
           "unbind", "tensor_split", "chunk", "hsplit", "vsplit", "clone", "contiguous", "flip",
           "fliplr", "flipud", "roll", "repeat", "tile", "repeat_interleave", "tril", "triu",
           "diag", "diag_embed", "diagflat", "rot90", "ravel", "split_with_sizes", "unsafe_chunk",
           "unsafe_split", "unsafe_split_with_sizes", "dsplit", "resize_", "resize_as_", "resize",
           "resize_as", "t_", "transpose_", "swapaxes_", "swapdims_", "squeeze_", "unsqueeze_",
           "as_strided_"]
INPLACE = ["tril", "triu"]


def _needs(t):
    if _dispatch._dual_active:  # forward AD: a tangent needs the node too
        return _dispatch.needs_grad(t)
    return t._requires_grad and _grad_state.enabled


def make_view(base, data, replay):
    """A tensor over ``data`` (a view of ``base``'s array) that shares ``base``'s version counter."""
    out = _wrap(data, base._dtype, base)
    if _dispatch._dual_active and base._fw_grad is not None:
        out.__dict__["_view_step"] = replay  # forward AD replays this step on the tangent
    root = base._base
    if root is None:
        out._base = base
        out._view_fn = replay
    else:
        prev = base._view_fn
        out._base = root
        out._view_fn = lambda t: replay(prev(t))
        base = root
    vc = base._vc
    if vc is None:
        vc = base._ensure_vc()
    out._vc = vc
    if _grad_state.enabled:
        _register_view(base, out)
    return out


def _register_view(root, view):
    """Remember ``view`` (weakly) on ``root``, so an in-place write to either can refresh its
    history; dead entries are pruned whenever the list has doubled since the last pruning."""
    refs = root.__dict__.get("_views")
    if refs is None:
        refs = root.__dict__["_views"] = []
    refs.append(weakref.ref(view))
    if len(refs) >= root.__dict__.get("_views_limit", 16):
        refs[:] = [r for r in refs if r() is not None]
        root.__dict__["_views_limit"] = builtins.max(16, 2 * len(refs))


def _shape_arg(args):
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    return tuple(operator.index(s) for s in args)


def _varargs_or_keyword(args, value, fn_name, keyword):
    """``f(*sizes)`` / ``f(sizes)`` or torch's keyword form ``f(keyword=sizes)``."""
    if value is None:
        return args
    if args:
        raise TypeError(f"{fn_name}() got multiple values for argument '{keyword}'")
    return (value,)


def _infer_size(shape, numel):
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s}")
            known *= s
    if neg:
        if known == 0 and numel == 0:
            raise RuntimeError(f"cannot reshape tensor of 0 elements into shape {list(shape)} because "
                               "the unspecified dimension size -1 can be any value and is ambiguous")
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape[neg[0]] = numel // known
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return tuple(shape)


# ---------------------------------------------------------------------------------------------
# Views with reshape-like backwards
# ---------------------------------------------------------------------------------------------

class ViewBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        return grad.reshape(self.in_shape)


class UnsafeViewBackward0(ViewBackward0):
    __slots__ = ()

    def jvp(self, t):
        return t.reshape(self.out_shape)  # linear: the same reshape of the tangent


def unsafe_view(input, shape, node=UnsafeViewBackward0):
    """ATen's ``_unsafe_view`` (and the in-place reshapes its composites apply to their own
    fresh results, ``squeeze_``: pass that node): ``input`` reshaped as a new tensor, not a
    view, so it has no view bookkeeping and one ``node`` over ``input``."""
    out = _wrap(input._data.reshape(shape), input._dtype, input)
    if _needs(input):
        record(node, (input,), out, in_shape=input._data.shape, out_shape=out._data.shape)
    return out


def view(input, *shape, size=None, dtype=None):
    if dtype is not None or (len(shape) == 1 and isinstance(shape[0], dt.dtype)):
        if size is not None or len(shape) > (dtype is None):
            raise TypeError("view() takes either a shape or one dtype")
        return _view_dtype(input, dt.check_dtype(dtype, "view") or shape[0])
    shape = _infer_size(_shape_arg(_varargs_or_keyword(shape, size, "view", "size")),
                        input._data.size)
    try:
        data = input._data.reshape(shape, copy=False)
    except ValueError:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.") from None
    out = make_view(input, data, lambda t: t.view(shape))
    if _needs(input):
        record(ViewBackward0, (input,), out, in_shape=input._data.shape)
    return out


def _view_dtype(input, dtype):
    """The same bytes read as ``dtype``. With a different element size the last dim must be
    contiguous and is rescaled; PyTorch's checks come first so its errors, not NumPy's, show."""
    if dtype.itemsize != input._dtype.itemsize:
        _check_view_dtype(input, dtype)
    out = make_view(input, input._data.view(dtype.np), lambda t: t.view(dtype))
    out._dtype = dtype
    return out


def _check_view_dtype(input, dtype):
    from ._dispatch import dtype_name
    how = (f"to view {dtype_name(input._dtype)} as {dtype_name(dtype)} (different element "
           "sizes)")
    if input._data.ndim == 0:
        raise RuntimeError(f"self.dim() cannot be 0 {how}")
    strides = input.stride()
    if dtype.itemsize > input._dtype.itemsize:
        ratio = dtype.itemsize // input._dtype.itemsize
        for what, value in (("self.size(-1)", input._data.shape[-1]),
                            ("self.storage_offset()", input.storage_offset())):
            if value % ratio:
                raise RuntimeError(f"{what} must be divisible by {ratio} {how}, but got {value}")
    if strides[-1] != 1:
        raise RuntimeError(f"self.stride(-1) must be 1 {how}, but got {strides[-1]}")
    if dtype.itemsize > input._dtype.itemsize:
        for i, stride in enumerate(strides[:-1]):
            if stride % ratio:
                raise RuntimeError(f"self.stride({i}) must be divisible by {ratio} {how}, but "
                                   f"got {stride}")


class ReshapeAliasBackward0(ViewBackward0):
    """``reshape`` of a non-contiguous input that is still a view."""
    __slots__ = ()


def reshape(input, *shape_args, shape=None):
    shape = _infer_size(_shape_arg(_varargs_or_keyword(shape_args, shape, "reshape", "shape")),
                        input._data.size)
    try:
        data = input._data.reshape(shape, copy=False)
    except ValueError:
        # Not a view: as PyTorch, a contiguous clone, reshaped without another copy.
        if not _needs(input):
            return _wrap(input._data.reshape(shape), input._dtype, input)
        copy = clone(input, memory_format=_mf.contiguous_format)
        out = _wrap(copy._data.reshape(shape), input._dtype, input)
        record(UnsafeViewBackward0, (copy,), out, in_shape=copy._data.shape,
               out_shape=out._data.shape)
        return out
    out = make_view(input, data, lambda t: t.reshape(shape))
    if _needs(input):
        node = ViewBackward0 if input.is_contiguous() else ReshapeAliasBackward0
        record(node, (input,), out, in_shape=input._data.shape)
    return out


def view_as(input, other):
    return view(input, other._data.shape)


def reshape_as(input, other):
    return reshape(input, other._data.shape)


def flatten(input, start_dim=0, end_dim=-1):
    nd = input._data.ndim
    s, e = wrap_dim(start_dim, nd), wrap_dim(end_dim, nd)
    if nd == 0:
        return reshape(input, (1,))
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    shape = input._data.shape
    merged = 1
    for size in shape[s:e + 1]:
        merged *= size
    return reshape(input, shape[:s] + (merged,) + shape[e + 1:])


def unflatten(input, dim, sizes):
    nd = input._data.ndim
    d = wrap_dim(dim, nd)
    if nd == 0:
        raise RuntimeError(f"unflatten: Dimension specified as {dim} but tensor has no dimensions")
    shape = input._data.shape
    sizes = tuple(sizes)
    known = 1
    for size in sizes:
        known *= size if size != -1 else 1
    if -1 not in sizes and known != shape[d]:
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size "
                           f"of dim {dim} ({shape[d]}) in the input tensor")
    inferred = _infer_size(sizes, shape[d])
    return view(input, shape[:d] + inferred + shape[d + 1:])


class SqueezeBackward0(ViewBackward0):
    __slots__ = ()


# PyTorch numbers squeeze's nodes by overload: all size-1 dims, one dim, a tuple of dims; 4 is
# the in-place one-dim form that matmul applies to its own fresh result.
class SqueezeBackward1(SqueezeBackward0):
    __slots__ = ()


class SqueezeBackward2(SqueezeBackward0):
    __slots__ = ()


class SqueezeBackward4(SqueezeBackward0):
    __slots__ = ()


# The other in-place forms (``squeeze_()``, ``squeeze_(dims)``): same backward, own names.
class SqueezeBackward3(SqueezeBackward0):
    __slots__ = ()


class SqueezeBackward5(SqueezeBackward0):
    __slots__ = ()


def squeeze(input, dim=None):
    shape = input._data.shape
    if dim is None:
        axes = tuple(i for i, s in enumerate(shape) if s == 1)
        node = SqueezeBackward0
    else:
        dims = wrap_dims(dim, len(shape))
        axes = tuple(d for d in dims if d < len(shape) and shape[d] == 1)
        node = SqueezeBackward2 if isinstance(dim, (tuple, list)) else SqueezeBackward1
    new = tuple(s for i, s in enumerate(shape) if i not in axes)
    out = make_view(input, input._data.reshape(new), lambda t: t.squeeze(dim))
    if _needs(input):
        record(node, (input,), out, in_shape=shape)
    return out


class UnsqueezeBackward0(ViewBackward0):
    __slots__ = ()


class UnsqueezeBackward1(UnsqueezeBackward0):  # unsqueeze_
    __slots__ = ()


def unsqueeze(input, dim):
    nd = input._data.ndim
    d = wrap_dim(dim, nd + 1)
    shape = input._data.shape
    out = make_view(input, input._data.reshape(shape[:d] + (1,) + shape[d:]),
                    lambda t: t.unsqueeze(d))
    if _needs(input):
        record(UnsqueezeBackward0, (input,), out, in_shape=shape)
    return out


class PermuteBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        inverse = [0] * len(self.dims)
        for i, d in enumerate(self.dims):
            inverse[d] = i
        return grad.permute(inverse)


def permute(input, *dims_args, dims=None):
    dims = _shape_arg(_varargs_or_keyword(dims_args, dims, "permute", "dims"))
    nd = input._data.ndim
    if len(dims) != nd:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not "
                           f"match the length of the desired ordering of dimensions i.e. input.dim() "
                           f"= {nd} is not equal to len(dims) = {len(dims)}")
    dims = tuple(wrap_dim(d, nd) for d in dims)
    if len(set(dims)) != len(dims):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    out = make_view(input, input._data.transpose(dims), lambda t: t.permute(dims))
    if _needs(input):
        record(PermuteBackward0, (input,), out, dims=dims)
    return out


class TransposeBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        return grad.transpose(self.d0, self.d1)


class TBackward0(TransposeBackward0):
    __slots__ = ()

    def backward(self, grad):
        return transposed_gradient(grad) if grad._data.ndim == 2 else grad  # t() of a vector


class TransposeBackward1(TransposeBackward0):  # transpose_
    __slots__ = ()


class TBackward1(TBackward0):  # t_
    __slots__ = ()


def transposed_gradient(grad):
    """``grad.mT`` inside a backward formula. Unless the backward builds a graph
    (``create_graph``), the result is the engine's own value, so it needs no view bookkeeping;
    without it, AccumulateGrad can adopt a contiguous result (a Linear weight's gradient: a
    product computed transposed, transposed back) instead of copying it."""
    if _grad_state.enabled:
        return grad.mT
    return _wrap(grad._data.swapaxes(-1, -2), grad._dtype, grad)


def transpose(input, dim0, dim1, *, _node=TransposeBackward0):
    if input._layout is not _STRIDED:
        from .sparse import transpose as sparse_transpose
        return sparse_transpose(input, dim0, dim1)
    nd = input._data.ndim
    d0, d1 = wrap_dim(dim0, nd), wrap_dim(dim1, nd)
    out = make_view(input, input._data.swapaxes(d0, d1), lambda t: t.transpose(d0, d1))
    if _needs(input):
        record(_node, (input,), out, d0=d0, d1=d1)
    return out


def swapaxes(input, axis0, axis1):
    return transpose(input, axis0, axis1)


def swapdims(input, dim0, dim1):
    return transpose(input, dim0, dim1)


def t(input):
    if input._layout is not _STRIDED:
        from .sparse import transpose as sparse_transpose
        return sparse_transpose(input, 0, 1, name="t")
    nd = input._data.ndim
    if nd > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {nd}D")
    if nd == 2:
        return transpose(input, 0, 1, _node=TBackward0)
    # Like PyTorch, a 0-d or 1-d input gives a new view, not the input itself.
    out = make_view(input, input._data.view(), lambda v: v.t())
    if _needs(input):
        record(TBackward0, (input,), out)
    return out


def movedim(input, source, destination):
    nd = input._data.ndim
    if isinstance(source, int) != isinstance(destination, int):
        raise TypeError("movedim() received an invalid combination of arguments: source and "
                        "destination must both be ints or both be tuples of ints")
    source = (source,) if isinstance(source, int) else tuple(source)
    destination = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(source) != len(destination):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(source)} "
                           f"dims) should contain the same number of dims as destination "
                           f"({list(destination)} dims)")
    src = wrap_dims(source, nd)
    dst = wrap_dims(destination, nd)
    if nd == 0:  # a 0-d tensor's dims 0 and -1 are the same (no) dimension
        return permute(input, ())
    order = [d for d in range(nd) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(input, order)


moveaxis = movedim


class ExpandBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        return grad.sum_to_size(self.in_shape)


def expand(input, *sizes, size=None):
    sizes = _shape_arg(_varargs_or_keyword(sizes, size, "expand", "size"))
    shape = input._data.shape
    nd = len(shape)
    if len(sizes) < nd:
        raise RuntimeError(f"expand({_type_name(input._dtype, input._device)}{{{list(shape)}}}, "
                           f"size={list(sizes)}): the number "
                           f"of sizes provided ({len(sizes)}) must be greater or equal to the number "
                           f"of dimensions in the tensor ({nd})")
    lead = len(sizes) - nd
    target = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise RuntimeError(f"The expanded size of the tensor ({s}) isn't allowed in a leading, "
                                   "non-existing dimension 0")
            target.append(s)
        else:
            cur = shape[i - lead]
            if s == -1:
                s = cur
            elif (cur != s and cur != 1) or s < 0:
                raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing "
                                   f"size ({cur}) at non-singleton dimension {i}.  Target sizes: "
                                   f"{list(sizes)}.  Tensor sizes: {list(shape)}")
            target.append(s)
    target = tuple(target)
    if target == shape:
        data = input._data.view()
    else:
        # Unlike NumPy's read-only broadcast_to, a writable view: PyTorch lets fill_ write into
        # expanded memory and refuses other in-place writes itself (see inplace._store).
        strides = (0,) * lead + tuple(0 if cur != size else stride for cur, size, stride
                                      in zip(shape, target[lead:], input._data.strides))
        data = input._backend.xp.lib.stride_tricks.as_strided(input._data, target, strides)
    out = make_view(input, data, lambda x: x.expand(target))
    if _needs(input):
        record(ExpandBackward0, (input,), out, in_shape=shape)
    return out


def expand_as(input, other):
    return expand(input, other._data.shape)


def broadcast_to(input, size):
    return expand(input, size)


def broadcast_shapes(*shapes):
    result = []
    for shape in shapes:
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        for i, s in enumerate(reversed(shape)):
            if i >= len(result):
                result.insert(0, s)
            else:
                cur = result[-1 - i]
                if cur == 1:
                    result[-1 - i] = s
                elif s != 1 and s != cur:
                    raise RuntimeError("Shape mismatch: objects cannot be broadcast to a single shape")
    from .._tensor import Size
    return Size(result)


def broadcast_tensors(*tensors):
    shape = broadcast_shapes(*(t._data.shape for t in tensors))
    return tuple(expand(t, shape) for t in tensors)


class SumToSizeBackward(Node):
    __slots__ = ()

    def backward(self, grad):
        return grad.expand(self.in_shape)


def sum_to_size(input, *size):
    """Sum ``input`` down to ``size`` (the inverse of broadcasting); the engine uses it to reduce
    broadcast gradients."""
    size = _shape_arg(size)
    shape = input._data.shape
    if shape == size:
        return input
    lead = len(shape) - len(size)
    if lead < 0:
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(size)
                                      if s == 1 and shape[i + lead] != 1)
    for i, s in enumerate(size):
        if s != 1 and s != shape[i + lead]:
            raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    data = input._data
    if input._dtype in (dt.float16, dt.bfloat16):
        data = data.astype("float32").sum(axis=axes).astype(data.dtype)
    else:
        data = data.sum(axis=axes)
    data = data.reshape(size) if hasattr(data, "reshape") else data
    out = _wrap(input._backend.xp.asarray(data).reshape(size), input._dtype, input)
    if _needs(input):
        record(SumToSizeBackward, (input,), out, in_shape=shape)
    return out


# ---------------------------------------------------------------------------------------------
# Views whose backward scatters into zeros (slicing, select, narrow, diagonal)
# ---------------------------------------------------------------------------------------------

class ScatterIntoViewBackward(Node):
    """Backward of ``zeros_like(base)`` with ``replay(zeros)`` set to the input: ``replay(grad)``."""
    __slots__ = ()

    def backward(self, grad):
        return self.replay(grad)

    def jvp(self, t):
        # linear: the tangent written into zeros at the same region
        return scatter_into_view(t, self.base_shape, self.replay)


class DiagEmbedBackward0(ScatterIntoViewBackward):
    __slots__ = ()


def scatter_into_view(grad, base_shape, replay, node=ScatterIntoViewBackward):
    """``zeros(base_shape)`` with the region ``replay`` selects set to ``grad`` (differentiable);
    ``node`` names the op it serves."""
    xp = grad._backend.xp
    z = _wrap(xp.zeros(base_shape, dtype=grad._data.dtype), grad._dtype, grad)
    with _NoGrad():
        region = replay(z)
    region._data[...] = grad._data
    if _needs(grad):
        record(node, (grad,), z, replay=replay, base_shape=tuple(base_shape))
    return z


class _NoGrad:
    def __enter__(self):
        self.prev = _grad_state.enabled
        _grad_state.enabled = False

    def __exit__(self, *exc):
        _grad_state.enabled = self.prev


class SliceBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        return scatter_into_view(grad, self.in_shape, self.replay)


class SelectBackward0(SliceBackward0):
    __slots__ = ()


class DiagonalBackward0(SliceBackward0):
    __slots__ = ()


def _record_slice(node_cls, input, out, replay):
    if _needs(input):
        record(node_cls, (input,), out, in_shape=input._data.shape, replay=replay)
    return out


def narrow(input, dim, start, length):
    nd = input._data.ndim
    if nd == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, nd)
    size = input._data.shape[d]
    start = operator.index(start)
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got "
                         f"{start})")
    if start < 0:
        start += size
    if not 0 <= start <= size or length < 0 or start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    key = (slice(None),) * d + (slice(start, start + length),)
    replay = lambda x: x.narrow(d, start, length)  # noqa: E731
    return _record_slice(SliceBackward0, input, make_view(input, input._data[key], replay), replay)


def select(input, dim, index):
    nd = input._data.ndim
    if nd == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, nd)
    size = input._data.shape[d]
    index = operator.index(index)
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(input._data.shape)} at dimension {d}")
    if index < 0:
        index += size
    data = input._data[(slice(None),) * d + (index, Ellipsis)]
    replay = lambda x: x.select(d, index)  # noqa: E731
    return _record_slice(SelectBackward0, input, make_view(input, data, replay), replay)


def diagonal(input, offset=0, dim1=0, dim2=1):
    nd = input._data.ndim
    d1, d2 = wrap_dim(dim1, nd), wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    arr = input._data
    shape, strides = arr.shape, arr.strides
    if offset >= 0:
        n = builtins.max(0, builtins.min(shape[d1], shape[d2] - offset))
        start = offset * strides[d2]
    else:
        n = builtins.max(0, builtins.min(shape[d1] + offset, shape[d2]))
        start = -offset * strides[d1]
    rest = [i for i in range(nd) if i not in (d1, d2)]
    new_shape = tuple(shape[i] for i in rest) + (n,)
    new_strides = tuple(strides[i] for i in rest) + (strides[d1] + strides[d2],)
    data = _as_strided_bytes(input._backend, arr, new_shape, new_strides, start if n else 0)
    replay = lambda x: x.diagonal(offset, d1, d2)  # noqa: E731
    return _record_slice(DiagonalBackward0, input, make_view(input, data, replay), replay)


def _as_strided_bytes(backend, arr, shape, strides, byte_offset):
    xp = backend.xp
    flat = arr.view()
    if byte_offset:
        # Move the start by a whole number of elements through a 1-element slice of the buffer.
        itemsize = arr.itemsize
        first = xp.lib.stride_tricks.as_strided(arr, shape=(byte_offset // itemsize + 1,),
                                                strides=(itemsize,))
        flat = first[byte_offset // itemsize:]
    return xp.lib.stride_tricks.as_strided(flat, shape=shape, strides=strides)


def unbind(input, dim=0):
    nd = input._data.ndim
    if nd == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = wrap_dim(dim, nd)
    n = input._data.shape[d]
    outs = []
    for i in range(n):
        # The trailing Ellipsis keeps a 0-d result a view (a bare int index gives a NumPy scalar).
        key = (slice(None),) * d + (i, Ellipsis)
        outs.append(make_view(input, input._data[key], lambda x, i=i: x.select(d, i)))
    if _needs(input):
        record_multi(UnbindBackward0, (input,), outs, dim=d)
    return tuple(outs)


class UnbindBackward0(Node):
    __slots__ = ()

    def backward(self, *grads):
        ref = next(g for g in grads if g is not None)
        grads = [g if g is not None else ref * 0 for g in grads]
        return stack(grads, self.dim)

    def jvp(self, t):
        return t.unbind(self.dim)  # each piece's tangent is the same piece of the tangent


def split(input, split_size_or_sections, dim=0):
    nd = input._data.ndim
    if nd == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = wrap_dim(dim, nd)
    size = input._data.shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step < 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got split_size={step}")
        if step == 0 and size != 0:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension "
                               f"size of {size}")
        # An empty dimension still splits into one (empty) piece.
        sections = [builtins.min(step, size - s) for s in range(0, size, step)] or [0]
    else:
        sections = [operator.index(s) for s in split_size_or_sections]
        if sum(sections) != size:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} "
                               f"(input tensor's size at dimension {dim}), but got "
                               f"split_sizes={sections}")
    outs, start = [], 0
    for length in sections:
        key = (slice(None),) * d + (slice(start, start + length),)
        outs.append(make_view(input, input._data[key],
                              lambda x, s=start, n=length: x.narrow(d, s, n)))
        start += length
    if _needs(input):
        node = (SplitBackward0 if isinstance(split_size_or_sections, int)
                else SplitWithSizesBackward0)
        record_multi(node, (input,), outs, dim=d, sizes=sections)
    return tuple(outs)


class SplitBackward0(Node):
    __slots__ = ()

    def backward(self, *grads):
        ref = next(g for g in grads if g is not None)
        full = []
        for g, n in zip(grads, self.sizes):
            if g is None:
                shape = list(ref.shape)
                shape[self.dim] = n
                g = ref.new_zeros(shape)
            full.append(g)
        return cat(full, self.dim)

    def jvp(self, t):
        return t.split(list(self.sizes), self.dim)


class SplitWithSizesBackward0(SplitBackward0):
    __slots__ = ()


def tensor_split(input, indices_or_sections, dim=0):
    if input._data.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    d = wrap_dim(dim, input._data.ndim)
    size = input._data.shape[d]
    if isinstance(indices_or_sections, Tensor) and indices_or_sections.ndim == 0:
        indices_or_sections = int(indices_or_sections.item())
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        if n <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {n}")
        q, r = divmod(size, n)
        idx = [builtins.min(i, r) * (q + 1) + builtins.max(i - r, 0) * q for i in range(n + 1)]
    else:
        # Each index bounds a slice, so a negative one counts from the end.
        bounds = [int(i) + size if int(i) < 0 else int(i) for i in indices_or_sections]
        idx = [0] + [builtins.min(builtins.max(i, 0), size) for i in bounds] + [size]
    # As PyTorch, each piece is its own slice of the input (one SliceBackward0 each).
    return tuple(narrow(input, d, a, builtins.max(b - a, 0)) for a, b in zip(idx, idx[1:]))


def chunk(input, chunks, dim=0):
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    if input._data.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    d = wrap_dim(dim, input._data.ndim)
    size = input._data.shape[d]
    if size == 0:
        return split(input, [0] * chunks, d)
    return split(input, -(-size // chunks), d)


def _split_checked(name, input, sections, d, min_dims):
    if input.ndim < min_dims:
        raise RuntimeError(f"ember.{name} requires a tensor with at least {min_dims} dimension, "
                           f"but got a tensor with {input.ndim} dimensions!")
    if isinstance(sections, int) and sections != 0 and input.shape[d] % sections:
        raise RuntimeError(f"ember.{name} attempted to split along dimension {d}, but the size "
                           f"of the dimension {input.shape[d]} is not divisible by the "
                           f"split_size {sections}!")
    return tensor_split(input, sections, d)


def hsplit(input, sections):
    return _split_checked("hsplit", input, sections, 1 if input.ndim > 1 else 0, 1)


def vsplit(input, sections):
    return _split_checked("vsplit", input, sections, 0, 2)


# ---------------------------------------------------------------------------------------------
# Copies
# ---------------------------------------------------------------------------------------------

class CloneBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        return grad

    def jvp(self, t):
        return t.clone()


def clone(input, *, memory_format=None):
    if memory_format is None or memory_format is _mf.preserve_format:
        # order="K" keeps a dense input's stride order, as PyTorch's preserve_format does.
        data = input._data.copy(order="K")
    else:
        _mf.check(memory_format, input._data.ndim)
        data = _mf.arrange(input._backend.xp, input._data, memory_format)
    out = _wrap(data, input._dtype, input)
    if _needs(input):
        record(CloneBackward0, (input,), out)
    return out


def contiguous(input, memory_format=None):
    # As torch's: the input itself when it already lies in the format, else its clone in it.
    if memory_format is None or memory_format is _mf.contiguous_format:
        if input.is_contiguous():
            return input
        memory_format = _mf.contiguous_format
    else:
        if input.is_contiguous(memory_format=memory_format):
            return input
        if memory_format is _mf.preserve_format:
            raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    return clone(input, memory_format=memory_format)


class CatBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        outs, start = [], 0
        for n, needed in zip(self.sizes, self._edges):
            if n is None:  # a skipped legacy empty input
                outs.append(grad.new_zeros(0) if needed is not None else None)
                continue
            outs.append(grad.narrow(self.dim, start, n) if needed is not None else None)
            start += n
        return tuple(outs)

    def jvp(self, *tangents):
        # linear: the same cat of the tangents (zeros for inputs without one)
        parts = [t if t is not None else _zero_tangent(meta)
                 for t, n, meta in zip(tangents, self.sizes, self._in_meta) if n is not None]
        return cat(parts, self.dim)


def _zero_tangent(meta):
    """Zeros shaped like an input without a tangent, from its recorded (shape, dtype, device)."""
    from .creation import zeros
    shape, dtype, device = meta
    return zeros(shape, dtype=dtype, device=device)


def cat(tensors, dim=0, *, out=None):
    """Concatenate tensors along an existing dimension ``dim``.

    >>> import ember
    >>> ember.cat([ember.zeros(1, 2), ember.ones(2, 2)]).shape
    ember.Size([3, 2])
    """
    if _autocast.active and _autocast.enabled_for(tensors, "cat"):
        return _autocast.run(cat, "cat", tensors, dim, out=out)
    tensors = _tensor_list(tensors, "cat")
    if not tensors:
        raise ValueError("ember.cat(): expected a non-empty list of Tensors")
    # Legacy: 1-D empty tensors are skipped, as in PyTorch.
    live = [t for t in tensors if not (t._data.ndim == 1 and t._data.shape[0] == 0)] or tensors[:1]
    ref = live[0]
    nd = ref._data.ndim
    if nd == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    d = wrap_dim(dim, nd)
    rt = ref._dtype
    for i, t in enumerate(live):
        if t._device is not ref._device:
            raise device_mismatch(ref, t)
        if t._data.ndim != nd:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {nd} and {t._data.ndim}")
        for k in range(nd):
            if k != d and t._data.shape[k] != ref._data.shape[k]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected "
                                   f"size {ref._data.shape[k]} but got size {t._data.shape[k]} for "
                                   f"tensor number {i} in the list.")
        rt = dt.promote_types(rt, t._dtype)
    xp = ref._backend.xp
    data = xp.concatenate([t._data.astype(rt.np, copy=False) for t in live], axis=d)
    res = _wrap(data, rt, ref)
    if needs_grad(*tensors):
        live_ids = {id(t) for t in live}
        sizes = [t._data.shape[d] if id(t) in live_ids else None for t in tensors]
        record(CatBackward0, tensors, res, dim=d, sizes=sizes)
    if out is not None:
        from .inplace import copy_into_out
        return copy_into_out(out, res)
    return res


concat = concatenate = cat


def stack(tensors, dim=0, *, out=None):
    """Join tensors of one shape along a new dimension ``dim``.

    >>> import ember
    >>> ember.stack([ember.tensor([1, 2]), ember.tensor([3, 4])], dim=1)
    tensor([[1, 3],
            [2, 4]])
    """
    if _autocast.active and _autocast.enabled_for(tensors, "stack"):
        return _autocast.run(stack, "stack", tensors, dim, out=out)
    tensors = _tensor_list(tensors, "stack")
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    shape = tensors[0]._data.shape
    for i, t in enumerate(tensors):
        if t._data.shape != shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(shape)} at "
                               f"entry 0 and {list(t._data.shape)} at entry {i}")
    d = wrap_dim(dim, len(shape) + 1)
    ref = tensors[0]
    rt = ref._dtype
    for t in tensors:
        if t._device is not ref._device:
            raise device_mismatch(ref, t)
        rt = dt.promote_types(rt, t._dtype)
    data = ref._backend.xp.stack([t._data.astype(rt.np, copy=False) for t in tensors], axis=d)
    res = _wrap(data, rt, ref)
    if needs_grad(*tensors):
        record(StackBackward0, tensors, res, dim=d)
    if out is not None:
        from .inplace import copy_into_out
        return copy_into_out(out, res)
    return res


class StackBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        return grad.unbind(self.dim)

    def jvp(self, *tangents):
        return stack([t if t is not None else _zero_tangent(meta)
                      for t, meta in zip(tangents, self._in_meta)], self.dim)


def _tensor_list(tensors, name, nonempty=False):
    """``tensors`` as a list, with PyTorch's errors for a lone tensor, a non-tensor element and
    (when ``nonempty``) an empty list."""
    if isinstance(tensors, Tensor):
        raise TypeError(f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, "
                        "not Tensor")
    tensors = list(tensors)
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")
    if nonempty and not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return tensors


def hstack(tensors):
    tensors = [atleast_1d(t) for t in _tensor_list(tensors, "hstack", nonempty=True)]
    return cat(tensors, 0 if tensors[0].ndim == 1 else 1)


def vstack(tensors):
    return cat([atleast_2d(t) for t in _tensor_list(tensors, "vstack", nonempty=True)], 0)


def dstack(tensors):
    return cat([atleast_3d(t) for t in _tensor_list(tensors, "dstack", nonempty=True)], 2)


def column_stack(tensors):
    tensors = _tensor_list(tensors, "column_stack", nonempty=True)
    return hstack([t.reshape(-1, 1) if t.ndim <= 1 else t for t in tensors])


def _each_tensor(fn):
    """PyTorch's atleast_nd also takes several tensors, or one sequence, and returns a tuple."""
    def op(*tensors):
        if len(tensors) == 1 and isinstance(tensors[0], Tensor):
            return fn(tensors[0])
        if len(tensors) == 1:
            tensors = tensors[0]
        return tuple(fn(t) for t in tensors)
    op.__name__ = op.__qualname__ = fn.__name__
    return op


@_each_tensor
def atleast_1d(t):
    return t.reshape(1) if t.ndim == 0 else t


@_each_tensor
def atleast_2d(t):
    if t.ndim == 1:
        return unsqueeze(t, 0)
    return t.reshape(1, 1) if t.ndim == 0 else t


@_each_tensor
def atleast_3d(t):
    if t.ndim == 0:
        return t.reshape(1, 1, 1)
    if t.ndim == 1:
        return t.reshape(1, -1, 1)
    if t.ndim == 2:
        return t.unsqueeze(-1)
    return t


class FlipBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        return grad.flip(self.dims)

    def jvp(self, t):
        return t.flip(self.dims)  # a permutation: the same one of the tangent


def flip(input, *dims):
    dims = wrap_dims(_shape_arg(dims), input._data.ndim)
    # PyTorch has no negative strides, so flip copies.
    if dims and input._data.ndim:
        data = input._backend.xp.flip(input._data, dims).copy()
    else:
        data = input._data.copy()
    out = _wrap(data, input._dtype, input)
    if _needs(input):
        record(FlipBackward0, (input,), out, dims=dims)
    return out


def fliplr(input):
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, 1)


def flipud(input):
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, 0)


class RollBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        shifts = tuple(-s for s in self.shifts) if isinstance(self.shifts, tuple) else -self.shifts
        return grad.roll(shifts, self.dims)

    def jvp(self, t):
        return t.roll(self.shifts, self.dims)


def roll(input, shifts, dims=None):
    xp = input._backend.xp
    if dims is None:
        data = xp.roll(input._data.reshape(-1), shifts).reshape(input._data.shape)
    else:
        if isinstance(shifts, int):
            shifts = (shifts,)
        dims_t = (dims,) if isinstance(dims, int) else tuple(dims)
        if len(shifts) != len(dims_t):
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims_t)}")
        if input._data.ndim == 0:
            for d in dims_t:
                wrap_dim_no_scalar(d, 0)
        dims_t = wrap_dims(dims_t, input._data.ndim)
        data = xp.roll(input._data, tuple(shifts), dims_t)
        shifts = tuple(shifts)
    out = _wrap(data, input._dtype, input)
    if _needs(input):
        record(RollBackward0, (input,), out, shifts=shifts, dims=dims)
    return out


class RepeatBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        # Split each repeated axis into (repeats, size) and sum the repeats away.
        reps, in_shape = self.repeats, self.in_shape
        lead = len(reps) - len(in_shape)
        shape = (1,) * lead + tuple(in_shape)
        split_shape = []
        for r, s in zip(reps, shape):
            split_shape += [r, s]
        g = grad.reshape(split_shape)
        g = g.sum(tuple(range(0, 2 * len(reps), 2)))
        return g.reshape(in_shape)

    def jvp(self, t):
        return t.repeat(self.repeats)  # linear


def repeat(input, *repeats_args, repeats=None):
    repeats = _shape_arg(_varargs_or_keyword(repeats_args, repeats, "repeat", "repeats"))
    nd = input._data.ndim
    if len(repeats) < nd:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of "
                           "dimensions of tensor")
    data = input._backend.xp.tile(input._data.reshape((1,) * (len(repeats) - nd) + input._data.shape),
                                  repeats)
    out = _wrap(data, input._dtype, input)
    if _needs(input):
        record(RepeatBackward0, (input,), out, repeats=repeats, in_shape=input._data.shape)
    return out


def tile(input, *dims_args, dims=None):
    dims = _shape_arg(_varargs_or_keyword(dims_args, dims, "tile", "dims"))
    nd = input._data.ndim
    if len(dims) < nd:
        dims = (1,) * (nd - len(dims)) + dims
    return repeat(input, dims)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    from .indexing import index_select
    if repeats is None:  # repeat_interleave(repeats_tensor): indices
        counts = input
        xp = counts._backend.xp
        return _wrap(xp.repeat(xp.arange(counts._data.shape[0]), counts._data), dt.int64, counts)
    if dim is None:
        input = input.flatten()
        dim = 0
    if not isinstance(repeats, Tensor):
        return _repeat_each(input, operator.index(repeats), wrap_dim(dim, input._data.ndim))
    d = wrap_dim(dim, input._data.ndim)
    n = input._data.shape[d]
    xp = input._backend.xp
    reps = repeats._data if isinstance(repeats, Tensor) else repeats
    if isinstance(repeats, Tensor) and repeats._data.ndim and repeats._data.shape[0] not in (1, n):
        raise RuntimeError(f"repeats must have the same size as input along dim, but got "
                           f"repeats.size(0) = {repeats._data.shape[0]} and input.size({d}) = {n}")
    idx = xp.repeat(xp.arange(n), reps)
    return index_select(input, d, _wrap(idx, dt.int64, input))


def _repeat_each(input, repeats, d):
    """Each slice along ``d`` repeated ``repeats`` times, as PyTorch's composite for an integer
    count: a new axis after ``d``, broadcast, copied once, and merged into ``d``."""
    if repeats < 0:
        raise RuntimeError("Repeats must be non-negative")
    wide = unsqueeze(input, d + 1)
    sizes = list(wide._data.shape)
    sizes[d + 1] = repeats
    copied = clone(expand(wide, sizes), memory_format=_mf.contiguous_format)
    return flatten(copied, d, d + 1)


class TrilBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        return grad.tril(self.k) if self.lower else grad.triu(self.k)

    def jvp(self, t):
        return t.tril(self.k) if self.lower else t.triu(self.k)  # linear: a mask


class TriuBackward0(TrilBackward0):
    __slots__ = ()


def tril(input, diagonal=0):
    if input._data.ndim < 2:
        raise RuntimeError("tril: input tensor must have at least 2 dimensions")
    out = _wrap(input._backend.xp.tril(input._data, diagonal), input._dtype, input)
    if _needs(input):
        record(TrilBackward0, (input,), out, k=diagonal, lower=True)
    return out


def triu(input, diagonal=0):
    if input._data.ndim < 2:
        raise RuntimeError("triu: input tensor must have at least 2 dimensions")
    out = _wrap(input._backend.xp.triu(input._data, diagonal), input._dtype, input)
    if _needs(input):
        record(TriuBackward0, (input,), out, k=diagonal, lower=False)
    return out


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    nd = input._data.ndim + 1
    d1, d2 = wrap_dim(dim1, nd), wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = input._data.shape[-1] + builtins.abs(offset)
    shape = list(input._data.shape[:-1])
    for d in sorted((d1, d2)):
        shape.insert(d, n)
    # The output is zeros whose (offset, d1, d2) diagonal is the input.
    return scatter_into_view(input, tuple(shape), lambda x: x.diagonal(offset, d1, d2),
                             DiagEmbedBackward0)


def diag(input, diagonal=0):
    nd = input._data.ndim
    if nd == 1:
        return diag_embed(input, diagonal)
    if nd == 2:
        return record_composite(DiagonalBackward0_copy, (input,),
                                lambda input: input.diagonal(diagonal).clone())
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {nd}D")


class DiagonalBackward0_copy(CompositeBackward):  # noqa: N801 (PyTorch's diagonal_copy node)
    __slots__ = ()


def diagflat(input, offset=0):
    return diag(input.reshape(-1), offset)


# ---------------------------------------------------------------------------------------------
# Tensors built from several (meshgrid, cartesian_prod, combinations, block_diag), rot90, ravel
# ---------------------------------------------------------------------------------------------

def _tensor_arguments(tensors):
    """The tensors of ``f(*tensors)``, which torch also accepts as one list: ``f([a, b])``."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return list(tensors[0])
    return list(tensors)


def meshgrid(*tensors, indexing=None):
    tensors = _tensor_arguments(tensors)
    if indexing is None:
        import warnings
        warnings.warn("ember.meshgrid: in an upcoming release, it will be required to pass the "
                      "indexing argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError("ember.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                               f"got a tensor of shape {list(t.shape)}")
        if t._dtype is not tensors[0]._dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
        if t._device is not tensors[0]._device:
            raise RuntimeError("meshgrid expects all tensors to have the same device")
    if indexing not in ("xy", "ij"):
        raise RuntimeError(f"ember.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    swap = indexing == "xy" and len(tensors) >= 2
    if swap:
        tensors[0], tensors[1] = tensors[1], tensors[0]
    sizes = [t.numel() for t in tensors]
    grids = []
    for k, t in enumerate(tensors):
        shape = [1] * len(tensors)
        shape[k] = sizes[k]
        grids.append(t.view(shape).expand(sizes))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def cartesian_prod(*tensors):
    tensors = _tensor_arguments(tensors)
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)


def combinations(input, r=2, with_replacement=False):
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    r = operator.index(r)
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty((0,))
    n = input.shape[0]
    xp = input._backend.xp
    # PyTorch's composite: the r-fold meshgrid of the input, each grid masked to the r-tuples
    # of positions that increase (do not decrease, with replacement), stacked as columns.
    positions = xp.indices((n,) * r, dtype=dt.int64.np)
    keep = xp.ones((n,) * r, dtype=bool)
    for k in range(r - 1):
        keep &= ((positions[k] <= positions[k + 1]) if with_replacement
                 else (positions[k] < positions[k + 1]))
    mask = _wrap(keep, dt.bool, input)
    columns = [grid.masked_select(mask) for grid in meshgrid([input] * r, indexing="ij")]
    return stack(columns, 1)


def block_diag(*tensors):
    tensors = list(tensors)
    matrices = []
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError("ember.block_diag: Input tensors must have 2 or fewer dimensions. "
                               f"Input {i} has {t.ndim} dimensions")
        if t._device is not tensors[0]._device:
            raise device_mismatch(tensors[0], t)
        matrices.append(t.reshape(1, -1) if t.ndim < 2 else t)
    if not matrices:
        from .creation import empty
        return empty((1, 0))
    result_dtype = matrices[0]._dtype
    for m in matrices[1:]:
        result_dtype = dt.promote_types(result_dtype, m._dtype)
    total_cols = builtins.sum(m.shape[1] for m in matrices)

    def composition(*tensors):
        rows, left = [], 0
        for t in tensors:
            m = (t.reshape(1, -1) if t.ndim < 2 else t).to(result_dtype)
            cols = m.shape[1]
            pieces = [m.new_zeros((m.shape[0], left)), m,
                      m.new_zeros((m.shape[0], total_cols - left - cols))]
            rows.append(cat(pieces, 1))
            left += cols
        return cat(rows, 0)
    return record_composite(BlockDiagBackward0, tuple(tensors), composition)


class BlockDiagBackward0(CompositeBackward):
    __slots__ = ()


def rot90(input, k=1, dims=(0, 1)):
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    nd = input.ndim
    if nd < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {nd}")
    if dims[0] == dims[1] or builtins.abs(dims[0] - dims[1]) == nd:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} and "
                           f"dim1 = {dims[1]}")
    d0, d1 = wrap_dim(dims[0], nd), wrap_dim(dims[1], nd)
    k = operator.index(k) % 4
    with no_grad():
        if k == 1:
            res = input.flip(d1).transpose(d0, d1)
        elif k == 2:
            res = input.flip(d0, d1)
        elif k == 3:
            res = input.flip(d0).transpose(d0, d1)
        else:
            res = input.clone()
        if res._base is not None:  # a transposed view of the flipped copy: not a view of input
            res = _wrap(res._data, res._dtype, res)
    if needs_grad(input):
        record(Rot90Backward0, (input,), res, k=k, dims=(d0, d1))
    return res


class Rot90Backward0(Node):
    """A rotation's adjoint is the opposite rotation."""
    __slots__ = ()

    def backward(self, grad):
        return (rot90(grad, -self.k, self.dims),)

    def jvp(self, t):
        return rot90(t, self.k, self.dims)



def ravel(input):
    return input.contiguous().view(-1)


# ---------------------------------------------------------------------------------------------
# Split aliases and row_stack
# ---------------------------------------------------------------------------------------------

def split_with_sizes(input, split_sizes, dim=0):
    return split(input, [operator.index(s) for s in split_sizes], dim)


# PyTorch's unsafe_* variants return pieces that share the input's memory but are not tracked
# as views: each may be modified in place (a split's views may not), at the caller's risk.
def _untracked(pieces, input, sizes, dim, node):
    outs = tuple(_wrap(p._data, p._dtype, p) for p in pieces)
    vc = input._ensure_vc()
    for out in outs:
        out._vc = vc
    if needs_grad(input):
        record_multi(node, (input,), outs, dim=wrap_dim(dim, input._data.ndim), sizes=sizes)
    return outs


def _split_node(name):
    """PyTorch's nodes for the unsafe splits: split's backward under their own names."""
    return type(name, (SplitBackward0,), {"__slots__": ()})


UnsafeSplitBackward0 = _split_node("UnsafeSplitBackward0")
UnsafeSplitWithSizesBackward0 = _split_node("UnsafeSplitWithSizesBackward0")


def unsafe_split(input, split_size, dim=0):
    pieces = split(input.detach(), split_size, dim)
    return _untracked(pieces, input, [p._data.shape[wrap_dim(dim, input._data.ndim)]
                                      for p in pieces], dim, UnsafeSplitBackward0)


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    sizes = [operator.index(s) for s in split_sizes]
    return _untracked(split(input.detach(), sizes, dim), input, sizes, dim,
                      UnsafeSplitWithSizesBackward0)


def unsafe_chunk(input, chunks, dim=0):
    pieces = chunk(input.detach(), chunks, dim)
    return _untracked(pieces, input, [p._data.shape[wrap_dim(dim, input._data.ndim)]
                                      for p in pieces], dim, UnsafeSplitBackward0)


def dsplit(input, indices_or_sections):
    if input._data.ndim < 3:
        raise RuntimeError(f"ember.dsplit requires a tensor with at least 3 dimension, but got "
                           f"a tensor with {input._data.ndim} dimensions!")
    if isinstance(indices_or_sections, int) and indices_or_sections != 0 \
            and input.shape[2] % indices_or_sections:
        raise RuntimeError(f"ember.dsplit attempted to split along dimension 2, but the size of "
                           f"the dimension {input.shape[2]} is not divisible by the split_size "
                           f"{indices_or_sections}!")
    return tensor_split(input, indices_or_sections, 2)


def row_stack(tensors, *, out=None):
    res = vstack(tensors)
    if out is None:
        return res
    from .inplace import copy_into_out
    return copy_into_out(out, res)


# ---------------------------------------------------------------------------------------------
# In-place view ops: self takes the view's metadata and (when recording) its history
# ---------------------------------------------------------------------------------------------

def _inplace_view(self, undo, view_op, *args, node=None):
    """Give ``self`` the geometry (and, when recording, the history) of ``view_op(self)``.
    ``undo`` maps a tensor of the new geometry back to the old one: views taken of ``self``
    earlier replay themselves through it, since their replay functions start from ``self``.
    ``node`` is PyTorch's name for the in-place overload (``TransposeBackward1``…), a subclass
    of the out-of-place node with the same backward."""
    _check_inplace(self)
    result = view_op(self, *args)
    if node is not None and result.grad_fn is not None:
        result.grad_fn.__class__ = node
    self._data = result._data
    if self._base is not None:
        self._view_fn = result._view_fn
    else:
        _replay_views_through(self, undo, result)
    if _grad_state.enabled and result._requires_grad:
        self.grad_fn = result.grad_fn
        self._requires_grad = True
        self.__dict__.pop("_output_nr", None)
    if result._fw_grad is not None:  # forward AD: the tangent takes the new geometry too
        _forward_ad.set_tangent(self, result._fw_grad)
    self._bump_version()
    return self


def _replay_views_through(root, undo, skip):
    refs = root.__dict__.get("_views")
    if not refs:
        return
    for ref in refs:
        view = ref()
        if view is not None and view is not skip:
            view._view_fn = lambda t, replay=view._view_fn: replay(undo(t))


def _reshape_back(self):
    shape = tuple(self._data.shape)
    return lambda t: t.reshape(shape)


def t_(self):
    if self._data.ndim > 2:
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is "
                           f"{self._data.ndim}D")
    undo = (lambda t: t.t()) if self._data.ndim == 2 else (lambda t: t)
    return _inplace_view(self, undo, t, node=TBackward1)


def transpose_(self, dim0, dim1):
    return _inplace_view(self, lambda t: t.transpose(dim0, dim1), transpose, dim0, dim1,
                         node=TransposeBackward1)


swapaxes_ = swapdims_ = transpose_


def squeeze_(self, dim=None):
    node = (SqueezeBackward3 if dim is None else
            SqueezeBackward5 if isinstance(dim, (tuple, list)) else SqueezeBackward4)
    return _inplace_view(self, _reshape_back(self), squeeze, dim, node=node)


def unsqueeze_(self, dim):
    return _inplace_view(self, _reshape_back(self), unsqueeze, dim,
                         node=UnsqueezeBackward1)


def as_strided_(self, size, stride, storage_offset=None):
    if self._base is None:
        # Ember's storage is a root tensor's whole array, and self's new geometry may cover
        # only part of it: a hidden root takes over self's array, history and views, and
        # self becomes a view of it.
        _check_inplace(self)
        _hand_storage_to_hidden_root(self)
    from .cumulative import as_strided  # a later family
    return _inplace_view(self, None, as_strided, size, stride, storage_offset)


def _hand_storage_to_hidden_root(self):
    root = _wrap(self._data, self._dtype, self)
    root._requires_grad = self._requires_grad
    root.grad_fn = self.grad_fn
    if self._output_nr:
        root._output_nr = self._output_nr
    root._vc = self._ensure_vc()
    for key in ("_views", "_views_limit"):
        if key in self.__dict__:
            root.__dict__[key] = self.__dict__.pop(key)
    for ref in root.__dict__.get("_views", ()):
        view = ref()
        if view is not None:
            view._base = root
    root.__dict__.setdefault("_views", []).append(weakref.ref(self))
    self._base = root
    self._view_fn = lambda t: t


# ---------------------------------------------------------------------------------------------
# resize_
# ---------------------------------------------------------------------------------------------

def resize_(self, *sizes, memory_format=None):
    if self._requires_grad and _grad_state.enabled:
        raise RuntimeError("cannot resize variables that require grad")
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    shape = tuple(operator.index(s) for s in sizes)
    if builtins.any(s < 0 for s in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(shape)}: "
                           f"{list(shape)}")
    numel = 1
    for s in shape:
        numel *= s
    xp = self._backend.xp
    root = self._base if self._base is not None else self
    root_data = root._data
    if root_data.flags.c_contiguous and (self is root or self.is_contiguous()):
        # Like PyTorch, the tensor reads its storage from its own offset on, contiguously.
        offset = self.storage_offset()
        flat = root_data.reshape(-1)
        if offset + numel <= flat.size:
            if self._base is None and numel == flat.size:
                old_shape = tuple(self._data.shape)
                _replay_views_through(self, lambda t: t.reshape(old_shape), None)
            elif self._base is None:
                _hand_storage_to_hidden_root(self)
            self._data = flat[offset:offset + numel].reshape(shape)
            if self._base is not None:
                strides = _contiguous_strides(shape)
                self._view_fn = lambda t: t.as_strided(shape, strides, offset)
            self._bump_version()
            return self
        grown = xp.empty(offset + numel, dtype=root_data.dtype)
        grown[:flat.size] = flat
        data = grown[offset:offset + numel].reshape(shape)
    else:
        old = self._data.reshape(-1)
        data = xp.empty(numel, dtype=old.dtype)
        kept = builtins.min(numel, old.size)
        data[:kept] = old[:kept]
        data = data.reshape(shape)
    # The storage grew: the tensor now owns a new one, no longer shared with its views/base.
    self._data = data
    for attr in ("_base", "_view_fn", "_vc"):
        self.__dict__.pop(attr, None)
    self._bump_version()
    return self


def resize_as_(self, the_template, memory_format=None):
    return resize_(self, tuple(the_template.shape))


def resize(self, *sizes):
    _warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    out = self.detach().clone() if self._requires_grad else self.clone()
    return resize_(out, *sizes)


def resize_as(self, tensor):
    _warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    return resize(self, tuple(tensor.shape))
