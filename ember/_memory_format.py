"""``ember.memory_format``: the order a dense tensor's elements lie in memory, as torch's.

``channels_last`` keeps an NCHW tensor's channels adjacent (NHWC order in memory) while its
shape stays NCHW; ``channels_last_3d`` does the same for NCDHW. Ember stores such a tensor as
a NumPy view with those strides, so ``stride()`` and ``is_contiguous()`` answer as torch's, and
every op computes on it as on any strided view.
"""

from ._layout import _NamedSingleton

__all__ = ["memory_format", "contiguous_format", "channels_last", "channels_last_3d",
           "preserve_format"]


class memory_format(_NamedSingleton):
    __slots__ = ()


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")

# The dimension order, outermost first, in which each format lays elements out in memory.
_CHANNELS_LAST_ORDER = {channels_last: (0, 2, 3, 1), channels_last_3d: (0, 2, 3, 4, 1)}
_TORCH_NAME = {contiguous_format: "Contiguous", channels_last: "ChannelsLast",
               channels_last_3d: "ChannelsLast3d", preserve_format: "Preserve"}


def check(fmt, ndim=None):
    """Raise torch's error if ``fmt`` is not a memory format or needs a rank other than
    ``ndim`` (None: check only the type)."""
    if not isinstance(fmt, memory_format):
        raise TypeError(f"memory_format must be ember.memory_format, not {type(fmt).__name__}")
    order = _CHANNELS_LAST_ORDER.get(fmt)
    if order is not None and ndim is not None and ndim != len(order):
        raise RuntimeError(f"required rank {len(order)} tensor to use {fmt._name} format")


def is_contiguous_in(shape, strides, fmt):
    """Whether element ``strides`` lay ``shape`` out densely in ``fmt``'s order (size-1
    dimensions may have any stride), as torch computes it."""
    if fmt is contiguous_format or fmt is preserve_format:
        order = range(len(shape))
    else:
        order = _CHANNELS_LAST_ORDER[fmt]
        if len(shape) != len(order):
            return False
    numel = 1
    for s in shape:
        numel *= s
    if numel <= 1 and fmt is contiguous_format:
        return True
    expected = 1
    for d in reversed(tuple(order)):
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


def element_strides(array, itemsize):
    return tuple(s // itemsize for s in array.strides)


def _is_dense(shape, strides):
    """Non-overlapping and dense: some permutation of the dims is C-contiguous."""
    dims = sorted((d for d in range(len(shape)) if shape[d] != 1), key=lambda d: strides[d])
    expected = 1
    for d in dims:
        if strides[d] != expected:
            return False
        expected *= shape[d]
    return True


def suggest(shape, strides):
    """The format torch infers from strides (``suggest_memory_format``): channels_last(_3d)
    when the strides rank the dims in that order, contiguous in every ambiguous case."""
    for fmt, order in _CHANNELS_LAST_ORDER.items():
        if len(shape) == len(order) and _strides_like(shape, strides, order):
            return fmt
    return contiguous_format


def _strides_like(shape, strides, order):
    """torch's is_channels_last_strides test: visiting the dims innermost first, the strides
    never decrease, with ties involving size-1 dims resolved towards contiguous."""
    channel = order[-1]
    if strides[channel] == 0:
        return False
    smallest = 0
    for d in reversed(order):
        if shape[d] == 0 or strides[d] < smallest:
            return False
        if d == 0 and smallest == strides[channel]:
            return False  # N111-like: as contiguous as it is channels-last
        smallest = strides[d] * (shape[d] if shape[d] > 1 else 1)
    return True


def arrange(xp, array, fmt):
    """``array``'s values laid out in ``fmt`` (a copy; ``fmt`` must not be preserve_format)."""
    order = _CHANNELS_LAST_ORDER.get(fmt)
    if order is None:
        # Not ascontiguousarray: it hands a C-contiguous array back uncopied (``clone`` would
        # then share memory with its input) and turns a 0-d array into a 1-d one.
        return array.copy(order="C")
    # A fresh copy: ascontiguousarray would keep a view whose size-1 dims have other strides.
    physical = array.transpose(order).copy(order="C")
    return physical.transpose(_inverse(order))


def empty_in(xp, shape, np_dtype, fmt, fill="empty"):
    """A new array of ``shape`` laid out in ``fmt``, made by ``xp.empty``/``zeros``/``ones``."""
    order = _CHANNELS_LAST_ORDER.get(fmt)
    make = getattr(xp, fill)
    if order is None:
        return make(shape, dtype=np_dtype)
    physical = make(tuple(shape[d] for d in order), dtype=np_dtype)
    return physical.transpose(_inverse(order))


def like_layout(xp, shape, strides, np_dtype, fmt, fill="empty"):
    """A new array of ``shape`` in ``fmt`` for a ``*_like`` factory whose input has element
    ``strides``: ``preserve_format`` keeps a dense input's strides exactly and otherwise takes
    the format torch would suggest."""
    if fmt is None or fmt is preserve_format:
        if 0 not in shape and _is_dense(shape, strides):
            # Outermost first; among equal strides a size-1 dim goes inside, as torch places it.
            order = tuple(sorted(range(len(shape)), key=lambda d: (-strides[d], shape[d] == 1)))
            physical = getattr(xp, fill)(tuple(shape[d] for d in order), dtype=np_dtype)
            return physical.transpose(_inverse(order))
        fmt = suggest(shape, strides)
    check(fmt, len(shape))
    return empty_in(xp, shape, np_dtype, fmt, fill)


def _inverse(order):
    inverse = [0] * len(order)
    for i, d in enumerate(order):
        inverse[d] = i
    return tuple(inverse)
