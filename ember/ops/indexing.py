"""Indexing: ``tensor[key]`` and ``tensor[key] = value``, gather/scatter, index_select/index_add,
masks, nonzero and sorting, index_reduce, unravel_index, fill_diagonal_. Basic indexing (ints,
slices, None, ...) returns views; tensor and list indices follow NumPy's advanced-indexing
rules, which PyTorch shares."""
import builtins
import math
import operator
from numbers import Integral as _Integral

from numpy import generic as _np_generic, iinfo as _np_iinfo

from .. import _dtype as dt
from . import _dispatch
from ._dispatch import Tensor, Node, needs_grad, record, _wrap, wrap_dim, device_mismatch, cast, \
    dtype_name, wrap_dim_no_scalar, checked_int_scalar
from .shape import make_view, SliceBackward0, SelectBackward0, UnsqueezeBackward0, \
    scatter_into_view, cat, broadcast_shapes
from .elementwise import where, _not_implemented, _require_tensor
from .reduce import _sort_result, _topk_result  # noqa: F401 (named tuples)
from ..autograd.grad_mode import _state as _grad_state, no_grad
from ._dispatch import check_same_device as _check_same_device
from ._dispatch import CompositeBackward, record_composite
from ..amp import autocast_mode as _autocast

__all__ = ["index_put", "index_put_", "gather", "scatter", "scatter_add", "index_select",
           "index_add", "masked_fill", "masked_select", "take_along_dim", "take", "nonzero",
           "argwhere", "index_fill", "index_copy", "put", "masked_scatter", "scatter_reduce",
           "sort", "argsort", "msort", "topk", "unravel_index", "index_reduce"]
METHODS = ["gather", "scatter", "scatter_add", "index_select", "index_add", "index_put",
           "index_put_", "masked_fill", "masked_select", "take_along_dim", "take", "nonzero",
           "argwhere", "sort", "argsort", "msort", "topk", "scatter_reduce", "index_fill",
           "index_copy", "put", "masked_scatter", "index_reduce", "fill_diagonal_"]
INPLACE = ["masked_fill", "scatter", "scatter_add", "index_add", "scatter_reduce", "index_fill",
           "index_copy", "put", "masked_scatter", "index_reduce"]


def _needs(t):
    if _dispatch._dual_active:  # forward AD: a tangent needs the node too
        return _dispatch.needs_grad(t)
    return t._requires_grad and _grad_state.enabled


# ---------------------------------------------------------------------------------------------
# tensor[key]
# ---------------------------------------------------------------------------------------------

def _convert_key(input, key):
    """Split a user key into a backend key; report whether it is basic (so a view)."""
    if isinstance(key, list) and any(k is None or k is Ellipsis or isinstance(
            k, (list, tuple, slice, Tensor)) for k in key):
        key = tuple(key)  # PyTorch's (deprecated) reading of x[[seq, seq]] as x[seq, seq]
    if not isinstance(key, tuple):
        key = (key,)
    ndim = input._data.ndim
    # PyTorch counts the indexed dims before it reads any element of the key
    if len(key) > ndim and ndim and _dims_named(key) > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    if key.count(Ellipsis) > 1:
        key = _resolve_ellipses(input, key)
    out = []
    basic = True
    float_index = False
    xp = input._backend.xp
    for k in key:
        if k is None or k is Ellipsis or isinstance(k, slice):
            if isinstance(k, slice):
                if k.step is not None and operator.index(k.step) <= 0:
                    raise ValueError("step must be greater than zero")
                k = slice(*(None if v is None else operator.index(v) for v in (k.start, k.stop, k.step)))
            out.append(k)
        elif isinstance(k, Tensor):
            if k._device is not input._device:
                raise device_mismatch(input, k)
            if k._dtype._kind >= 2:  # reported after the slices, as PyTorch checks them first
                float_index = True
                continue
            data = k._data
            if k._dtype is dt.uint8:
                data = data.astype(bool)
            if k._data.ndim == 0 and k._dtype._kind == 1 and k._dtype is not dt.uint8:
                out.append(int(k.item()))  # a 0-d integer tensor indexes like an int: a view
                continue
            out.append(data)
            basic = False
        elif isinstance(k, bool):
            out.append(xp.asarray(k))
            basic = False
        elif isinstance(k, (list, tuple, range)):
            # A tuple inside the key is a sequence index, as a list is (PyTorch: x[(0, 1), 2]
            # is x[[0, 1], 2]).
            out.append(_sequence_index(xp, list(k)))
            basic = False
        else:
            try:
                out.append(operator.index(k))
            except TypeError:
                raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or "
                                 "byte Variables are valid indices (got "
                                 f"{type(k).__name__})") from None
    if float_index:
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    if not basic and ndim == _dims_named(key) and any(k is Ellipsis for k in out):
        # An Ellipsis that spans no dim does not part two advanced indices in PyTorch (it
        # places index results by the dims they index); in NumPy it would move them first.
        out = [k for k in out if k is not Ellipsis]
    return tuple(out), basic


def _dims_named(key):
    """How many of the tensor's dims the key elements index (a bool mask counts its own)."""
    count = 0
    for k in key:
        if k is None or k is Ellipsis or isinstance(k, bool):
            continue
        if isinstance(k, Tensor) and k._dtype in (dt.bool, dt.uint8):
            count += k._data.ndim
        else:
            count += 1
    return count


def _is_full_slice(k):
    """``:`` or ``0::1``, which PyTorch skips without looking at the dim."""
    return (isinstance(k, slice) and k.start in (None, 0) and k.stop is None
            and k.step in (None, 1))


# The size PyTorch reads for a dim past a view's last one. It reads beyond the view's sizes in
# c10's SizesAndStrides: the zeros of its inline storage for views of up to five dims (what Ember
# follows), a stride or memory beyond the sizes otherwise (undefined; Ember does not copy it).
_PAST_END_SIZE = 0


def _resolve_ellipses(input, key):
    """A key with several Ellipses as PyTorch reads it, rewritten without them. PyTorch moves
    its dim counter past the dims the key leaves out at every Ellipsis, not just the first, so
    what follows a later one may land past the last dim: a slice there that starts at 0 with
    step 1 and stops at or past ``_PAST_END_SIZE`` is skipped, anything else fails as
    ``select``/``slice``/``unsqueeze``/``index`` fail on a dim out of range. The result spells each Ellipsis as the full slices it spans in range and
    leaves out the skipped slices; errors are raised here, in PyTorch's order and words (an
    int's error names its place in the key). A key element of no index type is left for
    ``_convert_key`` to refuse."""
    xp = input._backend.xp
    spanned = input._data.ndim - _dims_named(key)
    if spanned < 0:  # (the check in _convert_key leaves 0-d tensors to this)
        raise IndexError(f"too many indices for tensor of dimension {input._data.ndim}")
    sizes = list(input._data.shape)  # of the view so far
    out = []
    d = 0
    last_index = None  # the dim of the last tensor index PyTorch records
    for place, k in enumerate(key):
        entry = _index_kind(xp, k)
        if entry is None:
            return key
        kind, n = entry[0], len(sizes)
        if kind == "ellipsis":
            out.extend([slice(None)] * builtins.max(0, builtins.min(spanned, n - d)))
            d += spanned
        elif kind in ("none", "bool"):  # a bool unsqueezes, then indexes the new dim
            if d > n:
                raise _dim_out_of_range(d, n + 1)
            sizes.insert(d, 1)
            out.append(k)
            if kind == "bool":
                last_index = d
            d += 1
        elif kind == "select":
            i = entry[1]
            size = sizes[d] if d < n else _PAST_END_SIZE
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for dimension {place} with size "
                                 f"{size}")
            if d >= n:
                raise _dim_out_of_range(d, n)
            del sizes[d]
            out.append(k)
        elif kind == "slice":
            start, stop, step = entry[1:]
            if step <= 0:
                raise ValueError("step must be greater than zero")
            if d < n:
                sizes[d] = len(range(*slice(start, stop, step).indices(sizes[d])))
                out.append(k)
            else:
                if not (start == 0 and step == 1 and (stop is None or _PAST_END_SIZE <= stop)):
                    raise _dim_out_of_range(d, n)
            d += 1
        else:  # an index tensor (or sequence): PyTorch records it and moves past its dims
            out.append(k)
            last_index = d
            d += entry[1]
    if last_index is not None and last_index >= len(sizes):
        raise IndexError(f"too many indices for tensor of dimension {len(sizes)} (got "
                         f"{last_index + 1})")
    return tuple(out)


def _index_kind(xp, k):
    """How PyTorch's indexing loop treats one key element: ``("ellipsis",)``, ``("none",)``,
    ``("bool",)`` (a Python or 0-d bool), ``("select", i)``, ``("slice", start, stop, step)``
    (``stop`` None when open) or ``("index", dims it spans)``; None for no index type."""
    if k is Ellipsis:
        return ("ellipsis",)
    if k is None:
        return ("none",)
    if isinstance(k, bool):
        return ("bool",)
    if isinstance(k, slice):
        def as_int(v, default):
            return default if v is None else operator.index(v)
        return ("slice", as_int(k.start, 0), None if k.stop is None else operator.index(k.stop),
                as_int(k.step, 1))
    if isinstance(k, Tensor):
        if k._dtype in (dt.bool, dt.uint8):
            return ("bool",) if k._data.ndim == 0 else ("index", k._data.ndim)
        if k._data.ndim == 0 and k._dtype._kind == 1:
            return ("select", int(k.item()))
        return ("index", 1)
    if isinstance(k, (list, tuple, range)):
        arr = _sequence_index(xp, list(k))
        return ("index", arr.ndim if arr.dtype.kind == "b" else 1)
    try:
        return ("select", operator.index(k))
    except TypeError:
        return None


def _dim_out_of_range(d, n):
    return IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but "
                      f"got {d})")


def _sequence_index(xp, seq):
    """A list or tuple inside an index as PyTorch converts it: a bool mask when every element
    is a bool, otherwise int64 indices (floats truncated toward zero)."""
    try:
        arr = xp.asarray(seq)
    except ValueError:  # ragged
        if any(isinstance(v, Tensor) for v in seq):
            # PyTorch reads a tensor beside numbers as a number: one integer (or bool) element
            return _sequence_index(xp, [_tensor_as_index_number(v) for v in seq])
        # PyTorch reads the nested sequence as a number
        inner = next(v for v in seq if isinstance(v, (list, tuple)))
        raise TypeError(f"'{type(inner).__name__}' object cannot be interpreted as an "
                        "integer") from None
    if arr.dtype.kind == "b":
        return arr
    if arr.dtype.kind in "iuf":
        return arr.astype("int64", copy=False)
    if arr.dtype.kind in "US":
        raise TypeError("new(): invalid data type 'str'")
    odd = next((v for v in arr.reshape(-1) if not isinstance(v, (int, float, bool))), None)
    raise RuntimeError(f"Could not infer dtype of {type(odd).__name__}")


def _tensor_as_index_number(v):
    if not isinstance(v, Tensor):
        return v
    if v.numel() != 1 or v._dtype._kind >= 2:
        raise TypeError("only integer tensors of a single element can be converted to an index")
    return int(v.item())


def _basic_index(xp, arr, key):
    try:
        data = arr[key]
    except IndexError as exc:
        raise (_out_of_bounds(arr.shape, key)
               or IndexError(str(exc).replace("axis", "dimension"))) from None
    if isinstance(data, _np_generic):
        # Every dim indexed by an int: NumPy returns a scalar; a trailing ... keeps a 0-d view.
        data = arr[tuple(k for k in key if k is not Ellipsis) + (Ellipsis,)]
    if any(k is None for k in key):
        data = xp.lib.stride_tricks.as_strided(data, data.shape, _unsqueezed_strides(arr, key, data))
    return data


def _out_of_bounds(shape, key):
    """PyTorch's error for the first int of a basic key outside its dim, which it names by the
    int's place in the key (not the dim's): None if every int is in range."""
    specified = builtins.sum(1 for k in key if k is not None and k is not Ellipsis)
    d = 0
    for place, k in enumerate(key):
        if k is Ellipsis:
            d += len(shape) - specified
        elif k is not None:
            if type(k) is int and d < len(shape) and not -shape[d] <= k < shape[d]:
                return IndexError(f"index {k} is out of bounds for dimension {place} with size "
                                  f"{shape[d]}")
            d += 1
    return None


def _unsqueezed_strides(arr, key, data):
    """Byte strides of ``arr[key]`` with each ``None`` dim strided as PyTorch's ``unsqueeze`` does
    it, applied left to right: the size times the stride of the next input dim not yet indexed
    (NumPy gives these dims stride 0)."""
    strides = list(data.strides)
    consuming = builtins.sum(1 for k in key if k is not None and k is not Ellipsis)
    in_dim = out_dim = 0
    for k in key:
        if k is None:
            strides[out_dim] = (arr.shape[in_dim] * arr.strides[in_dim] if in_dim < arr.ndim
                                else arr.itemsize)
            out_dim += 1
        elif k is Ellipsis:
            in_dim += arr.ndim - consuming
            out_dim += arr.ndim - consuming
        else:
            in_dim += 1
            out_dim += isinstance(k, slice)
    return tuple(strides)


def _basic_node(key, k):
    """The node PyTorch records for a key of one basic entry ``k``: a lone slice is always
    sliced (even ``x[:]``), but a tuple's full slices are skipped, which leaves an alias."""
    if type(k) is int:
        return SelectBackward0
    if k is None:
        return _UnsqueezeByIndexBackward
    if k is Ellipsis or (isinstance(key, (tuple, list)) and _is_full_slice(k)):
        return AliasBackward0
    return SliceBackward0


# `x[None]` is named like unsqueeze, though its backward is the slicing one.
_UnsqueezeByIndexBackward = type("UnsqueezeBackward0", (SliceBackward0,), {"__slots__": ()})


class AliasBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        return grad


def _alias(input):
    out = make_view(input, input._data[...], _alias)
    if _needs(input):
        record(AliasBackward0, (input,), out)
    return out


def _basic_steps(shape, nkey):
    """The views PyTorch's ``applySlicing`` takes for a basic key, in order, as ``(step,
    dim)`` or ``(step, dim, entry)``. A slice that keeps the whole dim (start 0, step 1, stop
    past the end) is skipped, as PyTorch skips it."""
    sizes = list(shape)
    steps = []
    d = 0
    for k in nkey:
        if k is None:
            steps.append((_unsqueeze_step, d))
            sizes.insert(d, 1)
            d += 1
        elif k is Ellipsis:
            d += len(shape) - builtins.sum(1 for e in nkey if e is not None and e is not Ellipsis)
        elif type(k) is int:
            steps.append((_select_step, d, k))
            del sizes[d]
        else:
            if not (k.start in (None, 0) and k.step in (None, 1)
                    and (k.stop is None or k.stop >= sizes[d])):
                steps.append((_slice_step, d, k))
            d += 1
    return steps


def _select_step(input, d, i):
    return _step_view(input, (slice(None),) * d + (i, Ellipsis), SelectBackward0,
                      lambda t: _select_step(t, d, i))


def _slice_step(input, d, k):
    return _step_view(input, (slice(None),) * d + (k,), SliceBackward0,
                      lambda t: _slice_step(t, d, k))


def _unsqueeze_step(input, d):
    # PyTorch's unsqueeze strides (the size times the stride of the dim it lands before)
    key = (slice(None),) * d + (None,)
    data = _basic_index(input._backend.xp, input._data, key)
    out = make_view(input, data, lambda t: _unsqueeze_step(t, d))
    if _needs(input):
        record(UnsqueezeBackward0, (input,), out, in_shape=input._data.shape)
    return out


def _step_view(input, key, node_cls, replay):
    out = make_view(input, input._data[key], replay)
    if _needs(input):
        record(node_cls, (input,), out, in_shape=input._data.shape, replay=replay)
    return out


def _apply_steps(input, steps):
    for step, *args in steps:
        input = step(input, *args)
    return input


class IndexBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        return index_put(grad.new_zeros(self.in_shape), self.key, grad, accumulate=True,
                         _converted=True)

    def jvp(self, t):
        return getitem_converted(t, self.key)  # linear: the same elements of the tangent


def getitem(input, key):
    nkey, basic = _convert_key(input, key)
    if not basic:
        return _advanced_getitem(input, nkey)
    if input._data.ndim == 0 and any(isinstance(k, int) for k in nkey):
        raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                         "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
    if len(nkey) == 1 or not _needs(input):
        # One entry is one view (and without a graph, so is any basic key).
        data = _basic_index(input._backend.xp, input._data, nkey)
        rkey = nkey[0] if type(key) is slice else nkey  # a lone slice is no tuple's slice
        replay = lambda t: getitem(t, rkey)  # noqa: E731
        out = make_view(input, data, replay)
        if _needs(input):
            record(_basic_node(key, nkey[0]), (input,), out, in_shape=input._data.shape,
                   replay=replay)
        return out
    steps = _basic_steps(input._data.shape, nkey)
    return _checked_steps(input, nkey, steps) if steps else _alias(input)


def _checked_steps(input, key, steps):
    try:
        return _apply_steps(input, steps)
    except IndexError:
        _basic_index(input._backend.xp, input._data, key)  # PyTorch's message for the key
        raise


def _advanced_getitem(input, nkey):
    """PyTorch's order: the key's basic entries as views first (ints as ``select``, so unlike
    in NumPy an int never counts as an advanced index that moves the indexed dims to the
    front), then one advanced index over what is left."""
    if not _takes_views(nkey):
        return getitem_converted(input, nkey)
    basic_key, advanced_key = _split_basic(input._backend.xp, nkey)
    steps = _basic_steps(input._data.shape, basic_key)
    if not steps:
        return getitem_converted(input, advanced_key)
    if _needs(input):
        sliced = _checked_steps(input, basic_key, steps)
    else:
        sliced = make_view(input, _basic_index(input._backend.xp, input._data, basic_key),
                           lambda t: getitem(t, basic_key))
    return getitem_converted(sliced, advanced_key)


def _takes_views(nkey):
    """Whether a key's basic entries do anything before its advanced ones (a quick test that
    passes ``x[idx]``, ``x[:, idx]``, ``x[..., mask]`` straight to the index)."""
    for k in nkey:
        if k is None or type(k) is int:
            return True
        if isinstance(k, slice):
            if not _is_full_slice(k):
                return True
        elif k is not Ellipsis and not k.ndim:  # a 0-d bool: unsqueeze, then index
            return True
    return False


def _split_basic(xp, nkey):
    """(the basic entries, the advanced key left for the view they make). A 0-d bool index is
    PyTorch's unsqueeze then an index of ``[0]`` (True) or ``[]`` (False) into the new dim."""
    basic, advanced = [], []
    for k in nkey:
        if type(k) is int:
            basic.append(k)
        elif k is Ellipsis:
            basic.append(k)
            advanced.append(k)
        elif k is None or isinstance(k, slice):
            basic.append(k)
            advanced.append(slice(None))
        elif k.ndim == 0 and k.dtype.kind == "b":
            basic.append(None)
            advanced.append(xp.zeros(1 if k else 0, dtype="int64"))
        else:  # an index array; a boolean one spans as many dims as it has
            basic.extend([slice(None)] * (k.ndim if k.dtype.kind == "b" else 1))
            advanced.append(k)
    return tuple(basic), tuple(advanced)


def _split_integers(xp, nkey):
    """PyTorch applies integer indices as ``select`` before advanced indexing, so unlike in NumPy
    an int never counts as an advanced index (which would move the indexed dims to the front).
    Returns ``_split_basic``'s (basic key, advanced key), or (None, None) without ints."""
    if not any(type(k) is int for k in nkey):
        return None, None
    return _split_basic(xp, nkey)


class IndexPutBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        key = self.key
        g_self = None
        if self._edges[0] is not None:
            g_self = grad if self.accumulate else index_put(grad, key, 0.0, _converted=True)
        g_value = None
        if self._edges[1] is not None:
            g_value = getitem_converted(grad, key)
        return g_self, g_value

    def jvp(self, t_self, t_value):
        # the written tangent over the input's, as the write itself
        if t_self is None:
            t_self = t_value.new_zeros(self._in_meta[0][0])
        if t_value is None:
            return t_self.clone() if self.accumulate else index_put(t_self, self.key, 0.0,
                                                                    _converted=True)
        return index_put(t_self, self.key, t_value, accumulate=self.accumulate, _converted=True)


def getitem_converted(t, nkey):
    try:
        data = t._data[nkey]
    except IndexError as exc:
        raise IndexError(str(exc).replace("axis", "dimension")) from None
    out = _wrap(data, t._dtype, t)
    if _needs(t):
        record(IndexBackward0, (t,), out, in_shape=t._data.shape, key=nkey)
    return out


def index_put(input, indices, values, accumulate=False, *, _converted=False):
    if _autocast.active and not _converted and _autocast.enabled_for(input, "index_put"):
        return _autocast.run(index_put, "index_put", input, indices, values, accumulate)
    if not _converted:  # the public op takes a sequence of index tensors, nothing else
        for i, k in enumerate(indices):
            if k is not None and not isinstance(k, Tensor):
                raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                                f"{type(k).__name__}")
    nkey = indices if _converted else _convert_key(input, tuple(indices) if isinstance(
        indices, list) else indices)[0]
    vt = values if isinstance(values, Tensor) else None
    if vt is not None and vt._device is not input._device:
        raise device_mismatch(input, vt)
    data = input._data.copy()
    v = cast(vt._data, input._dtype) if vt is not None else values
    if accumulate:
        target_shape = data[nkey].shape
        xp = input._backend.xp
        input._backend.index_add(data, nkey, xp.broadcast_to(xp.asarray(v, dtype=data.dtype), target_shape))
    else:
        try:
            data[nkey] = v
        except ValueError as exc:
            raise RuntimeError(f"shape mismatch: value tensor of shape {list(getattr(v, 'shape', ()))} "
                               f"cannot be broadcast to indexing result of shape "
                               f"{list(data[nkey].shape)}") from exc
    out = _wrap(data, input._dtype, input)
    if needs_grad(input, vt):
        record(IndexPutBackward0, (input, vt), out, key=nkey, accumulate=accumulate)
    return out


def setitem(input, key, value):
    from .inplace import inplace, copy_
    nkey, basic = _convert_key(input, key)
    if basic:
        copy_(getitem(input, nkey), value)
        return
    basic_key, advanced_key = _split_integers(input._backend.xp, nkey)
    if basic_key is not None:
        input, nkey = getitem(input, basic_key), advanced_key
    if isinstance(value, Tensor) and value._dtype is not input._dtype:
        # PyTorch casts only a 0-d value written through a lone boolean mask (a masked_fill).
        lone_mask = len(nkey) == 1 and getattr(nkey[0], "dtype", None) == bool
        if value._data.ndim or not lone_mask:
            raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                               f"{dtype_name(input._dtype)} for the destination and "
                               f"{dtype_name(value._dtype)} for the source.")
        value = value.to(input._dtype)
    inplace(input, index_put, nkey, value, _converted=True)


def index_put_(input, indices, values, accumulate=False):
    from .inplace import inplace
    return inplace(input, index_put, indices, values, accumulate)


# ---------------------------------------------------------------------------------------------
# gather / scatter
# ---------------------------------------------------------------------------------------------

def _coords(xp, index_arr, d):
    """Full index arrays addressing, along ``d``, the positions in ``index_arr``."""
    nd = index_arr.ndim
    coords = []
    for k in range(nd):
        if k == d:
            coords.append(index_arr)
        else:
            shape = [1] * nd
            shape[k] = index_arr.shape[k]
            coords.append(xp.arange(index_arr.shape[k]).reshape(shape))
    return tuple(coords)


def _check_index(input, dim, index, name):
    nd = builtins.max(input._data.ndim, 1)
    d = wrap_dim(dim, nd)
    if index._dtype not in (dt.int64, dt.int32):
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")
    if index._data.ndim != input._data.ndim and not (index._data.ndim <= 1 and input._data.ndim <= 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    if index._device is not input._device:
        raise device_mismatch(input, index)
    size = input._data.shape[d] if input._data.ndim else 1
    _check_bounds(index._data, d, size)
    return d


def _check_bounds(index_data, d, size):
    """Gather/scatter-style indices are not wrapped: each must lie in [0, size)."""
    if index_data.size:
        lo, hi = int(index_data.min()), int(index_data.max())
        if lo < 0 or hi >= size:
            raise RuntimeError(f"index {hi if hi >= size else lo} is out of bounds for dimension {d} "
                               f"with size {size}")


def _fill_value(xp, value, np_dtype):
    """A Python scalar as a 0-d array of ``np_dtype``, converted by PyTorch's checked rule for
    integer dtypes (floats truncate, negative ints wrap into unsigned ones, overflow raises)."""
    if np_dtype.kind in "iu" and isinstance(value, (int, float)):
        value = checked_int_scalar(value, dt.from_numpy_dtype(np_dtype))
    return xp.asarray(value, dtype=np_dtype)


class GatherBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (index,) = self.saved_tensors
        return grad.new_zeros(self.in_shape).scatter_add(self.dim, index, grad)

    def jvp(self, t):
        (index,) = self.saved_tensors
        return gather(t, self.dim, index)


def gather(input, dim, index, *, sparse_grad=False):
    d = _check_index(input, dim, index, "gather")
    xp = input._backend.xp
    idx = index._data
    data = input._data
    if data.ndim == 0:
        out_data = xp.broadcast_to(data, idx.shape).copy()
    else:
        for k in range(idx.ndim):
            if k != d and idx.shape[k] > data.shape[k]:
                raise RuntimeError(f"Size does not match at dimension {k} expected index "
                                   f"{list(idx.shape)} to be no larger than self "
                                   f"{list(data.shape)} apart from dimension {d}")
        out_data = data[_coords(xp, idx, d)]
    out = _wrap(out_data, input._dtype, input)
    if _needs(input):
        record(GatherBackward0, (input,), out, save=(index,), dim=d, in_shape=input._data.shape)
    return out


class ScatterBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (index,) = self.saved_tensors
        d = self.dim
        g_self = g_src = None
        if self._edges[0] is not None:
            g_self = grad if self.add else grad.scatter(d, index, 0.0)
        if len(self._edges) > 1 and self._edges[1] is not None:
            g_src = _pad_to(grad.gather(d, index), self.src_shape)
        return (g_self, g_src)[:len(self._edges)]

    def jvp(self, t_self, t_src=None):
        # linear in (input, src) for a plain or adding scatter: the same scatter of the tangents
        (index,) = self.saved_tensors
        d = self.dim
        if t_self is None:
            t_self = t_src.new_zeros(self._in_meta[0][0])
        if self.add:
            return t_self.clone() if t_src is None else t_self.scatter_add(d, index, t_src)
        return t_self.scatter(d, index, t_src if t_src is not None else 0.0)


class ScatterBackward1(ScatterBackward0):
    """``scatter`` of a number: one edge, to the input."""
    __slots__ = ()


class ScatterAddBackward0(ScatterBackward0):
    __slots__ = ()


def _pad_to(g, shape):
    if tuple(g.shape) == tuple(shape):
        return g
    region = tuple(slice(0, n) for n in g.shape)
    return scatter_into_view(g, tuple(shape), lambda t: t[region])


def _scatter(input, dim, index, src, add, reduce=None):
    d = _check_index(input, dim, index, "scatter_add" if add else "scatter")
    xp = input._backend.xp
    data = input._data.copy()
    idx = index._data
    st = src if isinstance(src, Tensor) else None
    for k in range(idx.ndim if data.ndim else 0):
        too_big_for_src = st is not None and st._data.ndim and idx.shape[k] > st._data.shape[k]
        if (k != d and idx.shape[k] > data.shape[k]) or too_big_for_src:
            raise RuntimeError(f"Expected index {list(idx.shape)} to be no larger than self "
                               f"{list(data.shape)} apart from dimension {d} and to be no larger "
                               f"size than src {list(st._data.shape) if st is not None else []}")
    if st is not None:
        if st._device is not input._device:
            raise device_mismatch(input, st)
        if st._dtype is not input._dtype:
            raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
        region = tuple(slice(0, n) for n in idx.shape)
        values = st._data[region] if st._data.ndim else st._data
    else:
        values = _fill_value(xp, src, data.dtype)
    if data.ndim == 0:
        coords = ()
    else:
        coords = _coords(xp, idx, d)
    values = xp.broadcast_to(values, idx.shape)
    if add or reduce in ("add", "sum"):
        input._backend.index_add(data, coords, values)
    elif reduce in ("multiply", "prod"):
        input._backend.scatter_reduce(data, coords, values, "prod")
    elif reduce is None:
        data[coords] = values
    else:
        raise RuntimeError(f"reduce argument must be either add or multiply, got {reduce}")
    out = _wrap(data, input._dtype, input)
    if needs_grad(input, st):
        if reduce is not None and reduce not in ("add", "sum"):
            raise NotImplementedError("the gradient of scatter with reduce='multiply' is not implemented")
        node, inputs = ScatterBackward0, (input, st)
        if add:
            node = ScatterAddBackward0
        elif st is None:
            node, inputs = ScatterBackward1, (input,)
        record(node, inputs, out, save=(index,), dim=d, add=add or reduce is not None,
               src_shape=st._data.shape if st is not None else None)
    return out


def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    if src is None:
        src = value
    return _scatter(input, dim, index, src, False, reduce)


def scatter_add(input, dim, index, src):
    if _autocast.active and _autocast.enabled_for(input, "scatter_add"):
        return _autocast.run(scatter_add, "scatter_add", input, dim, index, src)
    return _scatter(input, dim, index, src, True)


class IndexSelectBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (index,) = self.saved_tensors
        return grad.new_zeros(self.in_shape).index_add(self.dim, index, grad)

    def jvp(self, t):
        (index,) = self.saved_tensors
        return index_select(t, self.dim, index)


def index_select(input, dim, index):
    if index._data.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if index._dtype not in (dt.int64, dt.int32):
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    if index._device is not input._device:
        raise device_mismatch(input, index)
    nd = input._data.ndim
    d = wrap_dim(dim, nd)
    xp = input._backend.xp
    idx = index._data.reshape(-1)
    size = input._data.shape[d] if nd else 1
    if not nd and idx.size > 1:
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {idx.size} "
                           "value(s)")
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= size):
        raise IndexError("index out of range in self")
    if nd:
        data = xp.take(input._data, idx, axis=d)
    else:
        data = xp.take(input._data.reshape(1), idx, axis=0).reshape(() if index._data.ndim == 0 else (-1,))
    out = _wrap(data, input._dtype, input)
    if _needs(input):
        record(IndexSelectBackward0, (input,), out, save=(index,), dim=d, in_shape=input._data.shape)
    return out


class IndexAddBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (index,) = self.saved_tensors
        g_src = None
        if self._edges[1] is not None:
            g_src = grad.index_select(self.dim, index)
            if self.alpha != 1:
                g_src = g_src * self.alpha
        return grad, g_src

    def jvp(self, t_input, t_source):
        # linear in both: the same index_add on the tangents
        (index,) = self.saved_tensors
        if t_source is None:
            return t_input
        if t_input is None:
            t_input = t_source.new_zeros(self._in_meta[0][0])
        return index_add(t_input, self.dim, index, t_source, alpha=self.alpha)


def index_add(input, dim, index, source, *, alpha=1):
    nd = input._data.ndim
    d = wrap_dim(dim, nd)
    if source._device is not input._device or index._device is not input._device:
        raise device_mismatch(input, source if source._device is not input._device else index)
    if index._dtype not in (dt.int64, dt.int32):
        raise RuntimeError(f"index_add_(): Expected dtype int32/int64 for index but got: "
                           f"{dtype_name(index._dtype)}")
    if source._dtype is not input._dtype:
        raise RuntimeError(f"index_add_(): self ({dtype_name(input._dtype)}) and source "
                           f"({dtype_name(source._dtype)}) must have the same scalar type")
    if index._data.ndim > 1:
        raise IndexError("index_add_(): Index is supposed to be a vector")
    n_index = index._data.size
    src_dims = source._data.shape
    if source._data.ndim != nd or any(src_dims[k] != input._data.shape[k]
                                      for k in range(nd) if k != d):
        raise RuntimeError("source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(input._data.shape)} "
                           f"source.shape = {list(src_dims)}")
    src_count = src_dims[d] if source._data.ndim else 1
    if n_index != src_count and not source._data.ndim:
        wrap_dim_no_scalar(d, 0)  # PyTorch asks a 0-d source for its size along dim
    if n_index != src_count:
        raise RuntimeError(f"index_add_(): Number of indices ({n_index}) should be equal to "
                           f"source.size(dim): ({src_count}), for dim: {d}")
    if nd:
        _check_bounds(index._data, d, input._data.shape[d])
    elif index._data.size and (int(index._data.min()) != 0 or int(index._data.max()) != 0):
        raise IndexError("index out of range in self")
    xp = input._backend.xp
    data = input._data.copy()
    src = source._data
    if alpha != 1:
        src = src * alpha
    key = (slice(None),) * d + (index._data.reshape(-1),)
    if nd == 0:
        data = data + src.reshape(())
    else:
        input._backend.index_add(data, key, src)
    out = _wrap(xp.asarray(data), input._dtype, input)
    if needs_grad(input, source):
        record(IndexAddBackward0, (input, source), out, save=(index,), dim=d, alpha=alpha)
    return out


class MaskedFillBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (mask,) = self.saved_tensors
        g_self = grad.masked_fill(mask, 0) if self._edges[0] is not None else None
        g_val = None
        if len(self._edges) > 1 and self._edges[1] is not None:
            g_val = (grad * mask.to(grad.dtype)).sum()
        return (g_self, g_val)[:len(self._edges)]

    def jvp(self, t_self, t_value=None):
        # the input's tangent where the mask is clear, the value's where it is set
        (mask,) = self.saved_tensors
        if t_self is None:
            t_self = t_value.new_zeros(self._in_meta[0][0])
        return masked_fill(t_self, mask, t_value if t_value is not None else 0.0)


class MaskedFillBackward1(MaskedFillBackward0):
    """``masked_fill`` with a 0-d tensor value, which gets a gradient too (edges: input,
    value); filling a number has the one edge to the input."""
    __slots__ = ()


def masked_fill(input, mask, value):
    if mask._dtype is not dt.bool:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{mask._dtype}")
    if mask._device is not input._device:
        raise device_mismatch(input, mask)
    xp = input._backend.xp
    vt = value if isinstance(value, Tensor) else None
    if vt is not None and vt._data.ndim != 0:
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {vt._data.ndim} dimension(s).")
    if vt is not None:
        v = vt._data.astype(input._data.dtype)
    else:
        v = _fill_value(xp, value, input._data.dtype)
    # Out of place, PyTorch broadcasts the input and the mask together (a 0-d input filled
    # through a matrix mask gives a matrix); the in-place form checks the shape on writing.
    if mask._data.shape != input._data.shape:
        from .elementwise import broadcast_error
        error = broadcast_error(mask._data.shape, input._data.shape)
        if error is not None:
            raise error
    data = xp.where(mask._data, v, input._data)
    out = _wrap(data, input._dtype, input)
    if needs_grad(input, vt):
        if vt is None:
            record(MaskedFillBackward0, (input,), out, save=(mask,))
        else:
            record(MaskedFillBackward1, (input, vt), out, save=(mask,))
    return out


def masked_select(input, mask):
    from .shape import broadcast_tensors
    if mask._dtype is not dt.bool:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    with no_grad():
        a, m = broadcast_tensors(input, mask)
        res = getitem(a, m)
    if _needs(input):
        record(MaskedSelectBackward0, (input,), res, mask=m, shape=tuple(a.shape))
    return res


class MaskedSelectBackward0(Node):
    """The selected elements' gradients go back where the (broadcast) mask is set; the engine
    sums a broadcast input's gradient back to its shape."""
    __slots__ = ()

    def backward(self, grad):
        return (masked_scatter(grad.new_zeros(self.shape), self.mask, grad),)

    def jvp(self, t):
        return masked_select(t, self.mask)  # linear


def take_along_dim(input, indices, dim=None):
    if dim is None:  # PyTorch views (a non-viewable input raises view's error)
        return input.view(-1).gather(0, indices.view(-1))
    if input._data.ndim != indices._data.ndim:
        raise RuntimeError(f"ember.take_along_dim(): input and indices should have the same number "
                           f"of dimensions, but got {input._data.ndim} dimensions for input, and "
                           f"{indices._data.ndim} dimensions for indices")
    d = wrap_dim_no_scalar(dim, input._data.ndim)
    shape_in = list(input.shape)
    shape_idx = list(indices.shape)
    shape_in[d] = 1
    shape_idx[d] = 1
    b = list(broadcast_shapes(shape_in, shape_idx))
    bi = b.copy()
    bi[d] = input.shape[d]
    bx = b.copy()
    bx[d] = indices.shape[d]
    return input.expand(bi).gather(d, indices.expand(bx))


def take(input, index):
    numel = input.numel()
    if index.numel() and not -numel <= int(index._data.min()) <= int(index._data.max()) < numel:
        bad = int(index._data.max()) if int(index._data.max()) >= numel else int(index._data.min())
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {numel} "
                         "elements.")
    with no_grad():
        res = input.reshape(-1)[index]
    if _needs(input):
        record(TakeBackward0, (input,), res, index=index, shape=tuple(input.shape))
    return res


class TakeBackward0(Node):
    """Each taken element's gradient is added back at its flat index (negative ones wrap)."""
    __slots__ = ()

    def backward(self, grad):
        numel = 1
        for n in self.shape:
            numel *= n
        flat = self.index.reshape(-1).long() % builtins.max(numel, 1)
        return (grad.new_zeros((numel,)).index_add(0, flat, grad.reshape(-1)).reshape(self.shape),)

    def jvp(self, t):
        return take(t, self.index)  # linear


def nonzero(input, *, as_tuple=False):
    xp = input._backend.xp
    data = input._data
    if as_tuple:
        if data.ndim == 0:
            return (_wrap(xp.nonzero(data.reshape(1))[0].astype("int64"), dt.int64, input),)
        return tuple(_wrap(a.astype("int64"), dt.int64, input) for a in xp.nonzero(data))
    return _wrap(xp.argwhere(data).astype("int64"), dt.int64, input)


def argwhere(input):
    return nonzero(input)


# ---------------------------------------------------------------------------------------------
# Index writes: index_fill, index_copy, put, masked_scatter, scatter_reduce
# ---------------------------------------------------------------------------------------------

def _dim_slices(d, index):
    return (slice(None),) * d + (index,)


def _dim_index(input, dim, index, name, expected_error, wrap_negative):
    """``dim`` wrapped and ``index``'s array checked as PyTorch's index_fill/index_copy do."""
    if index._device is not input._device:
        raise device_mismatch(input, index)
    if index._dtype is not dt.int64:
        raise expected_error
    if index.ndim > 1:
        if name == "index_fill_":
            raise RuntimeError("Index has to be a vector/scalar")
        raise IndexError(f"{name}(): Index should have dimension 1 or 0 (got {index.ndim})")
    nd = input.ndim
    d = wrap_dim(dim, nd)
    size = input.shape[d] if nd else 1
    idx = index._data.reshape(-1)
    if idx.size:
        lo, hi = int(idx.min()), int(idx.max())
        bad = hi if hi >= size else (lo if lo < (-size if wrap_negative else 0) else None)
        if bad is not None:
            prefix = "" if name == "index_fill_" else f"{name}(): "
            raise IndexError(f"{prefix}index {bad} is out of bounds for dimension {d} with size "
                             f"{size}")
    if wrap_negative:
        idx = input._backend.xp.where(idx < 0, idx + size, idx)
    return d, idx


class IndexFillBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (index,) = self.saved_tensors
        d = self.dim
        g_self = grad.index_fill(d, index, 0) if self._edges[0] is not None else None
        g_value = None
        if len(self._edges) > 1 and self._edges[1] is not None:
            # A position listed twice is filled once: it counts once towards the value's grad.
            unique = _wrap(grad._backend.xp.unique(index._data), dt.int64, index)
            g_value = grad.index_select(d, unique).sum() if grad.ndim else grad.sum()
        return (g_self, g_value)[:len(self._edges)]

    def jvp(self, t_self, t_value=None):
        # the filled positions take the value's tangent
        (index,) = self.saved_tensors
        if t_self is None:
            t_self = t_value.new_zeros(self._in_meta[0][0])
        return index_fill(t_self, self.dim, index, t_value if t_value is not None else 0.0)


class IndexFillBackward1(IndexFillBackward0):
    """``index_fill`` with a 0-d tensor value (edges: input, value); filling a number has
    the one edge to the input."""
    __slots__ = ()


def index_fill(input, dim, index, value):
    d, idx = _dim_index(input, dim, index, "index_fill_",
                        IndexError("index_fill_(): Expected dtype int64 for index."), True)
    vt = value if isinstance(value, Tensor) else None
    if vt is not None:
        if vt.ndim != 0:
            raise RuntimeError("index_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {vt.ndim} dimension(s).")
        if vt._device is not input._device:
            raise device_mismatch(input, vt)
        fill = vt._data.astype(input._data.dtype)
    else:
        fill = _fill_value(input._backend.xp, value, input._data.dtype)
    data = input._data.copy()
    if data.ndim == 0:
        if idx.size:
            data[...] = fill
    else:
        data[_dim_slices(d, idx)] = fill
    res = _wrap(data, input._dtype, input)
    if needs_grad(input, vt):
        node, inputs = ((IndexFillBackward0, (input,)) if vt is None
                        else (IndexFillBackward1, (input, vt)))
        record(node, inputs, res, save=(_wrap(idx, dt.int64, index),), dim=d)
    return res


class IndexCopyBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (index,) = self.saved_tensors
        d = self.dim
        g_self = grad.index_fill(d, index, 0) if self._edges[0] is not None else None
        g_source = None
        if self._edges[1] is not None:
            g_source = (grad.index_select(d, index) if grad.ndim else grad).reshape(self.source_shape)
        return g_self, g_source

    def jvp(self, t_self, t_source):
        (index,) = self.saved_tensors
        if t_self is None:
            t_self = t_source.new_zeros(self._in_meta[0][0])
        if t_source is None:
            return t_self.index_fill(self.dim, index, 0) if t_self.ndim else t_self * 0
        return index_copy(t_self, self.dim, index, t_source)


def index_copy(input, dim, index, source):
    if _autocast.active and _autocast.enabled_for(input, "index_copy"):
        return _autocast.run(index_copy, "index_copy", input, dim, index, source)
    d, idx = _dim_index(input, dim, index, "index_copy_", RuntimeError(
        f"index_copy_(): Expected a long tensor for index, but got {dtype_name(index._dtype)}"),
        False)
    if source._device is not input._device:
        raise device_mismatch(input, source)
    if source._dtype is not input._dtype:
        raise RuntimeError("index_copy_(): self and source expected to have the same dtype, but "
                           f"got (self) {dtype_name(input._dtype)} and (source) "
                           f"{dtype_name(source._dtype)}")
    if source.ndim != input.ndim and source.ndim and input.ndim:
        raise IndexError("index_copy_(): When source and destination are not scalars, their "
                         f"dimensionality must match. Source dimensionality ({source.ndim}), "
                         f"destination dimensionality ({input.ndim})")
    source_len = source.shape[d] if source.ndim else 1
    if idx.size != source_len:
        raise IndexError(f"index_copy_(): Number of indices ({idx.size}) should be equal to "
                         f"source.size(dim) ({source_len})")
    for k in range(input.ndim):
        if k != d and source.ndim and source.shape[k] != input.shape[k]:
            raise RuntimeError("index_copy_(): Source/destination tensor must have same slice "
                               f"shapes. Destination slice shape: {input.shape[k]} at dimension "
                               f"{k} and source slice shape: {source.shape[k]} at dimension {k}.")
    data = input._data.copy()
    if data.ndim == 0:
        data[...] = source._data.reshape(())
    else:
        data[_dim_slices(d, idx)] = source._data.reshape(
            tuple(source.shape) if source.ndim else (1,) * data.ndim)
    res = _wrap(data, input._dtype, input)
    if needs_grad(input, source):
        record(IndexCopyBackward0, (input, source), res, save=(_wrap(idx, dt.int64, index),),
               dim=d, source_shape=tuple(source.shape))
    return res


class PutBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (index,) = self.saved_tensors
        g_self = g_source = None
        if self._edges[0] is not None:
            g_self = grad if self.accumulate else grad.put(
                index, grad.new_zeros(tuple(index.shape)))
        if self._edges[1] is not None:
            g_source = grad.reshape(-1).index_select(0, index.reshape(-1)).reshape(self.source_shape)
        return g_self, g_source

    def jvp(self, t_self, t_source):
        (index,) = self.saved_tensors
        if t_self is None:
            t_self = t_source.new_zeros(self._in_meta[0][0])
        if t_source is None:
            t_source = t_self.new_zeros(self.source_shape)
        return put(t_self, index, t_source, accumulate=self.accumulate)


def put(input, index, source, accumulate=False):
    if index._dtype is not dt.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got "
                           f"{dtype_name(index._dtype)}")
    if source._dtype is not input._dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {dtype_name(input._dtype)} and source.dtype = "
                           f"{dtype_name(source._dtype)}")
    for t in (index, source):
        if t._device is not input._device:
            raise device_mismatch(input, t)
    if source.numel() != index.numel():
        raise IndexError("put_(): Expected source and index to have the same number of "
                         f"elements, but got source.numel() = {source.numel()}, index.numel() = "
                         f"{index.numel()}")
    numel = input.numel()
    idx = index._data.reshape(-1)
    if idx.size:
        lo, hi = int(idx.min()), int(idx.max())
        if hi >= numel or lo < -numel:
            bad = hi if hi >= numel else lo
            raise IndexError(f"out of range: tried to access index {bad} on a tensor of {numel} "
                             "elements.")
    xp = input._backend.xp
    idx = xp.where(idx < 0, idx + numel, idx)
    flat = input._data.reshape(-1).copy()
    values = source._data.reshape(-1)
    if accumulate:
        input._backend.index_add(flat, (idx,), values)
    else:
        flat[idx] = values
    res = _wrap(flat.reshape(input._data.shape), input._dtype, input)
    if needs_grad(input, source):
        record(PutBackward0, (input, source), res, save=(_wrap(idx, dt.int64, index),),
               accumulate=accumulate, source_shape=tuple(source.shape))
    return res


class MaskedScatterBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (mask,) = self.saved_tensors
        g_self = grad.masked_fill(mask, 0) if self._edges[0] is not None else None
        g_source = None
        if self._edges[1] is not None:
            taken = grad.masked_select(mask)
            numel = math.prod(self.source_shape)
            if taken.numel() < numel:
                taken = cat([taken, taken.new_zeros((numel - taken.numel(),))])
            g_source = taken.reshape(self.source_shape)
        return g_self, g_source

    def jvp(self, t_self, t_source):
        (mask,) = self.saved_tensors
        if t_self is None:
            t_self = t_source.new_zeros(self._in_meta[0][0])
        if t_source is None:
            return t_self.masked_fill(mask, 0)
        return masked_scatter(t_self, mask, t_source)


def masked_scatter(input, mask, source):
    if mask._dtype is not dt.bool:
        raise RuntimeError("masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{dtype_name(mask._dtype)}")
    if source._dtype is not input._dtype:
        raise RuntimeError("masked_scatter: expected self and source to have same dtypes but got"
                           f"{dtype_name(input._dtype)} and {dtype_name(source._dtype)}")
    for t in (mask, source):
        if t._device is not input._device:
            raise device_mismatch(input, t)
    xp = input._backend.xp
    shape = broadcast_shapes(tuple(input.shape), tuple(mask.shape))
    data = xp.broadcast_to(input._data, shape).copy()
    m = xp.broadcast_to(mask._data, shape)
    count = int(m.sum())
    if count > source.numel():
        raise RuntimeError("Number of elements of source < number of ones in mask")
    data[m] = source._data.reshape(-1)[:count]
    res = _wrap(data, input._dtype, input)
    if needs_grad(input, source):
        record(MaskedScatterBackward0, (input, source), res,
               save=(_wrap(m, dt.bool, mask),), source_shape=tuple(source.shape))
    return res


_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")
_REDUCTION_ALIASES = {"max": "amax", "min": "amin"}  # accepted by PyTorch, though undocumented


def _identity(reduce, np_dtype):
    """What an element starts from when ``include_self=False`` (overwritten by the reduction)."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if np_dtype.kind == "b":
        return reduce == "amin"
    if np_dtype.kind in "iu":
        info = _np_iinfo(np_dtype)
        return info.min if reduce == "amax" else info.max
    return -math.inf if reduce == "amax" else math.inf


class ScatterReduceBackward0(Node):
    """PyTorch's ``scatter_reduce_backward``, rule for rule."""
    __slots__ = ()

    def backward(self, grad):
        x, index, src, result = self.saved_tensors
        d, reduce, include_self = self.dim, self.reduce, self.include_self
        if reduce == "sum":
            g_self, g_src = grad, grad.gather(d, index)
        elif reduce == "mean":
            counts = (x.new_ones(x.shape) if include_self else x.new_zeros(x.shape))
            counts = counts.scatter_add(d, index, src.new_ones(src.shape))
            counts = counts.masked_fill(counts == 0, 1)
            g_self = grad / counts
            g_src = g_self.gather(d, index)
        elif reduce == "prod":
            self_zero = x == 0
            masked_self = x.masked_fill(self_zero, 1)
            masked_self_result = masked_self.scatter_reduce(d, index, src, reduce,
                                                            include_self=include_self)
            g_self = grad * masked_self_result / masked_self
            src_zero = src == 0
            zeros_per_target = x.new_zeros(x.shape).scatter_add(d, index, src_zero.to(x.dtype))
            single_zero = src_zero & (zeros_per_target.gather(d, index) == 1)
            masked_src_result = x.scatter_reduce(d, index, src.masked_fill(single_zero, 1), reduce,
                                                 include_self=include_self)
            g_src = where(single_zero, (grad * masked_src_result).gather(d, index),
                          (grad * result).gather(d, index) / src.masked_fill(src_zero, 1))
        else:  # amax, amin: split evenly between every element equal to the result
            value = result.gather(d, index)
            self_is_result = (x == result).to(grad.dtype)
            src_is_result = (src == value).to(grad.dtype)
            shares = self_is_result.scatter_add(d, index, src_is_result)
            distributed = grad / shares
            g_self = self_is_result * distributed
            g_src = src_is_result * distributed.gather(d, index)
        if not include_self:
            g_self = g_self.scatter(d, index, 0)
        if self._edges[0] is None:
            g_self = None
        g_src = _pad_to(g_src, self.src_shape) if self._edges[1] is not None else None
        return g_self, g_src

    def jvp(self, t_self, t_src):
        # sum and mean are linear; amax/amin take the mean tangent over the elements equal to
        # the result (the backward's even split); prod keeps the double-backward fallback
        x, index, src, result = self.saved_tensors
        d, reduce, include_self = self.dim, self.reduce, self.include_self
        if reduce == "prod" or x.ndim == 0:
            return NotImplemented
        t_self = t_self if t_self is not None else x.new_zeros(x.shape)
        region = tuple(slice(0, n) for n in index.shape)
        t_src = t_src[region] if t_src is not None else src.new_zeros(src.shape)
        if reduce in ("sum", "mean"):
            if not include_self:
                t_self = t_self.scatter(d, index, 0)
            out = t_self.scatter_add(d, index, t_src)
            if reduce == "sum":
                return out
            counts = (x.new_ones(x.shape) if include_self else x.new_zeros(x.shape))
            counts = counts.scatter_add(d, index, src.new_ones(src.shape))
            return out / counts.masked_fill(counts == 0, 1)
        self_is_result = (x == result).to(t_self.dtype)
        src_is_result = (src == result.gather(d, index)).to(t_self.dtype)
        shares = self_is_result.scatter_add(d, index, src_is_result)
        own = self_is_result * t_self
        if not include_self:
            own = own.scatter(d, index, 0)
        return own.scatter_add(d, index, src_is_result * t_src) / shares


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    reduce = _REDUCTION_ALIASES.get(reduce, reduce)
    if reduce not in _REDUCTIONS:
        raise RuntimeError("reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    _require_tensor("scatter_reduce", "src", 4, src)
    d = _check_index(input, dim, index, "scatter")
    if src._device is not input._device:
        raise device_mismatch(input, src)
    if src._dtype is not input._dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if reduce == "mean" and input._dtype is dt.bool:
        raise _not_implemented("scatter_gather_tensor_cpu_reduce_mean", dt.bool)
    xp = input._backend.xp
    data = input._data.copy()
    idx = index._data
    if data.ndim:
        for k in range(idx.ndim):
            if (k != d and idx.shape[k] > data.shape[k]) or (src.ndim and idx.shape[k] > src.shape[k]):
                raise RuntimeError(f"Expected index {list(idx.shape)} to be no larger than self "
                                   f"{list(data.shape)} apart from dimension {d} and to be no "
                                   f"larger size than src {list(src.shape)}")
    region = tuple(slice(0, n) for n in idx.shape)
    src_region = src[region] if src.ndim else src
    values = src_region._data
    coords = _coords(xp, idx, d) if data.ndim else ()
    if data.ndim == 0:
        values = values.reshape(())
        idx = idx.reshape(())
    low = input._dtype in (dt.float16, dt.bfloat16)
    work = data.astype(dt.float32.np) if low else data
    vals = values.astype(dt.float32.np) if low else values
    if not include_self:
        work[coords] = _identity(reduce, work.dtype)
    # The backend's scatter: CuPy has ufunc.at for few ufuncs, so no op here names one.
    input._backend.scatter_reduce(work, coords, vals, "sum" if reduce == "mean" else reduce)
    if reduce == "mean":
        counts = xp.ones(work.shape, dtype=dt.int64.np) if include_self else \
            xp.zeros(work.shape, dtype=dt.int64.np)
        input._backend.index_add(counts, coords, xp.ones(idx.shape, dtype=dt.int64.np))
        counts = xp.where(counts == 0, 1, counts)
        if work.dtype.kind in "iub":
            work = xp.floor_divide(work, counts).astype(work.dtype)
        else:
            work = (work / counts).astype(work.dtype)
    res = _wrap(work.astype(data.dtype, copy=False), input._dtype, input)
    if needs_grad(input, src):
        record(ScatterReduceBackward0, (input, src), res,
               save=(input, _wrap(idx, index._dtype, index), src_region), save_out=True, dim=d,
               reduce=reduce, include_self=include_self, src_shape=tuple(src.shape))
    return res


# ---------------------------------------------------------------------------------------------
# sorting
# ---------------------------------------------------------------------------------------------

class SortBackward0(Node):
    __slots__ = ()

    def backward(self, grad, _indices_grad=None):
        (indices,) = self.saved_tensors
        if grad is None:
            return None
        return grad.new_zeros(self.in_shape).scatter(self.dim, indices, grad)

    def jvp(self, t):
        # each value is one input element: its tangent, in the same order
        (indices,) = self.saved_tensors
        return t.gather(self.dim, indices) if t.ndim else t.clone()


class SortBackward1(SortBackward0):  # the overload with ``stable``
    __slots__ = ()


class TopkBackward0(SortBackward0):
    __slots__ = ()


def _argsort(xp, data, d, descending):
    if data.ndim == 0:
        return xp.zeros((), dtype="int64")
    if descending:
        n = data.shape[d]
        # A stable ascending sort of the reversed data, reversed back, keeps equal values in their
        # original order; NaN, sorting last ascending, comes first (as in PyTorch).
        idx = xp.argsort(xp.flip(data, d), axis=d, kind="stable")
        return (n - 1 - xp.flip(idx, d)).astype("int64")
    return xp.argsort(data, axis=d, kind="stable").astype("int64")


def sort(input, dim=-1, descending=False, stable=None):
    if isinstance(dim, bool):
        raise TypeError("sort(): argument 'dim' must be int, not bool")
    nd = input._data.ndim
    d = wrap_dim(dim, nd)
    xp = input._backend.xp
    idx = _argsort(xp, input._data, d, descending)
    vals = xp.take_along_axis(input._data, idx, axis=d) if nd else input._data.copy()
    values = _wrap(vals, input._dtype, input)
    indices = _wrap(idx, dt.int64, input)
    if _needs(input):
        record(SortBackward0 if stable is None else SortBackward1, (input,), values,
               save=(indices,), dim=d, in_shape=input._data.shape)
    return _sort_result((values, indices))


def argsort(input, dim=-1, descending=False, stable=False):
    d = wrap_dim(dim, input._data.ndim)
    return _wrap(_argsort(input._backend.xp, input._data, d, descending), dt.int64, input)


def msort(input):
    return sort(input, 0).values


def topk(input, k, dim=-1, largest=True, sorted=True):
    if input._dtype is dt.bool:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    nd = input._data.ndim
    d = wrap_dim(dim, nd)
    size = input._data.shape[d] if nd else 1
    if not 0 <= k <= size:
        raise RuntimeError("selected index k out of range")
    xp = input._backend.xp
    idx = _argsort(xp, input._data, d, largest)
    if nd:
        idx = xp.take(idx, xp.arange(k), axis=d)
        vals = xp.take_along_axis(input._data, idx, axis=d)
    else:
        vals = input._data.copy()
    values = _wrap(vals, input._dtype, input)
    indices = _wrap(idx.astype("int64"), dt.int64, input)
    if _needs(input):
        record(TopkBackward0, (input,), values, save=(indices,), dim=d, in_shape=input._data.shape)
    return _topk_result((values, indices))


# ---------------------------------------------------------------------------------------------
# unravel_index
# ---------------------------------------------------------------------------------------------

def unravel_index(indices, shape):
    if not isinstance(indices, Tensor):
        raise AttributeError(f"'{type(indices).__name__}' object has no attribute 'is_complex'")
    if indices._dtype._kind > 1 or indices._dtype is dt.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got "
                        f"{_torch_dtype_name(indices._dtype)}")
    if isinstance(shape, _Integral):
        shape = (int(shape),)
    shape = tuple(operator.index(s) for s in shape)
    if builtins.any(s < 0 for s in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    if 0 in shape and indices._data.size:
        raise RuntimeError("ZeroDivisionError")
    # PyTorch applies floor division and modulo without a range check: out-of-range and
    # negative indices wrap around (-1 is the last element).
    flat = indices._data.astype("int64")
    coords = []
    for size in reversed(shape):
        coords.append(flat % size if size else flat)
        flat = flat // size if size else flat
    return tuple(_wrap(c, dt.int64, indices) for c in reversed(coords))


def _torch_dtype_name(d):
    return f"ember.{d.name}"


# ---------------------------------------------------------------------------------------------
# index_reduce
# ---------------------------------------------------------------------------------------------

_INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")
_warned_index_reduce = False


def index_reduce(input, dim, index, source, reduce, *, include_self=True, out=None):
    global _warned_index_reduce
    if not _warned_index_reduce:
        _warned_index_reduce = True
        import warnings
        warnings.warn("index_reduce() is in beta and the API may change at any time.",
                      UserWarning, stacklevel=2)
    if reduce not in _INDEX_REDUCTIONS:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    _check_same_device(input, index, source)
    if index._dtype not in (dt.int64, dt.int32):
        raise RuntimeError(f"index_reduce_(): Expected dtype int32/int64 for index but got: "
                           f"{dtype_name(index._dtype)}")
    if index._data.ndim > 1:
        raise IndexError(f"index_reduce_(): Index is supposed to be a vector, but got dim: "
                         f"{index._data.ndim} with type: {dtype_name(index._dtype)} and size: "
                         f"{list(index._data.shape)}")
    if input._dtype is not source._dtype:
        raise RuntimeError(f"index_reduce_(): self ({dtype_name(input._dtype)}) and source "
                           f"({dtype_name(source._dtype)}) must have the same scalar type")
    if input._dtype is dt.bool and (reduce == "mean" or not include_self):
        kernel = "index_func_" if include_self else "index_reduce_func_exclude_input_init"
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")
    nd = input._data.ndim
    d = wrap_dim(dim, nd)
    source_shape = source._data.shape
    if builtins.max(len(source_shape), 1) != builtins.max(nd, 1) or builtins.any(
            s != t for i, (s, t) in enumerate(zip(source_shape, input._data.shape)) if i != d):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(input._data.shape)} "
                           f"source.shape = {list(source_shape)}")
    n_index = index._data.size
    source_len = source_shape[d] if source_shape else 1
    if n_index != source_len and not source_shape:
        # PyTorch asks a 0-d source for its size along dim
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if n_index != source_len:
        raise RuntimeError(f"index_reduce_(): Number of indices ({n_index}) should be equal to "
                           f"source.size(dim): ({source_len}), for dim: {dim}")
    size = input._data.shape[d] if nd else 1
    if n_index:
        lo, hi = int(index._data.min()), int(index._data.max())
        if lo < -size or hi >= size:
            raise IndexError("index out of range in self")
    if nd == 0:
        return scatter_reduce(input, 0, index.reshape(()).to(dt.int64), source, reduce,
                                     include_self=include_self) if n_index else input.clone()
    shape = [1] * nd
    shape[d] = n_index
    wrapped = index.to(dt.int64)
    xp = index._backend.xp
    wrapped = _wrap(xp.where(wrapped._data < 0, wrapped._data + size, wrapped._data), dt.int64,
                    index)
    scatter_index = wrapped.reshape(shape).expand(source._data.shape)
    res = record_composite(IndexReduceBackward0, (input, source), lambda input, source: scatter_reduce(input, d, scatter_index, source, reduce, include_self=include_self))
    if out is None:
        return res
    from .inplace import copy_into_out
    return copy_into_out(out, res)


class IndexReduceBackward0(CompositeBackward):
    __slots__ = ()


# ---------------------------------------------------------------------------------------------
# fill_diagonal_
# ---------------------------------------------------------------------------------------------

def fill_diagonal_(self, fill_value, wrap=False):
    shape = self._data.shape
    nd = len(shape)
    if nd < 2:
        raise RuntimeError("dimensions must larger than 1")
    if nd > 2 and builtins.any(s != shape[0] for s in shape):
        raise RuntimeError("all dimensions of input must be of equal length")
    xp = self._backend.xp
    numel = self._data.size
    if nd == 2:
        height, width = shape
        step = width + 1
        stop = numel if wrap else builtins.min(height, width) * width
    else:
        step = builtins.sum(shape[0] ** k for k in builtins.range(nd))
        stop = numel
    mask = xp.zeros(numel, dtype=bool)
    mask[0:stop:step] = True
    mask_t = _wrap(mask.reshape(shape), dt.bool, self)
    from .inplace import inplace
    return inplace(self, masked_fill, mask_t, fill_value)
