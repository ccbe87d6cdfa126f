"""Resampling kernels: interpolation, grid sampling and affine grids, pixel and channel shuffles.

Every linear interpolation mode (linear, bilinear, trilinear, bicubic, area) is separable, so
it is one small ``(out, in)`` weight matrix per spatial dim applied by a batched matrix
product; nearest modes gather with ``index_select``. Both are Ember ops, so gradients (of any
order) come for free. ``grid_sample`` and ``affine_grid`` are compositions of Ember ops under
PyTorch's one node; each shuffle is a permutation with its own node. The argument checks are
``nn.functional``'s (``nn/functional/_sampling.py``), but for ``pixel_shuffle``'s channel count,
which its caller in ``pixel_unshuffle``'s backward needs too.
"""
import itertools
import math

from .. import _dtype as dt
from ..autograd.grad_mode import no_grad
from ._dispatch import Node, needs_grad, record, _wrap, CompositeBackward, record_composite
from .conv import gather_dims, gather_dims_node
from .pooling import separable_map, SeparableMapBackward

__all__ = []

_CUBIC_A = -0.75


# ---- interpolation ---------------------------------------------------------------------------

def _compute_dtype(input):
    """The precision PyTorch computes source coordinates in: float for every float type but
    double."""
    return input._dtype.np.type if input._dtype is dt.float64 else dt.float32.np.type


def _scale(in_size, out_size, scale_factor, align_corners):
    """Output-to-input coordinate ratio, as PyTorch's ``area_pixel_compute_scale``."""
    if align_corners:
        return (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    if scale_factor is not None and scale_factor > 0:
        return 1.0 / scale_factor
    return in_size / out_size


def _nearest_index(xp, in_size, out_size, scale_factor, exact):
    ftype = xp.float32
    scale = ftype(1.0 / scale_factor if scale_factor else in_size / out_size)
    positions = xp.arange(out_size, dtype=ftype)
    if exact:
        positions = positions + ftype(0.5)
    if not exact and out_size == in_size:
        return xp.arange(out_size)
    index = xp.floor(positions * scale).astype(xp.int64)
    return xp.minimum(index, in_size - 1)


def _linear_matrix(xp, ftype, in_size, out_size, scale_factor, align_corners, cubic):
    scale = ftype(_scale(in_size, out_size, scale_factor, align_corners))
    dst = xp.arange(out_size, dtype=ftype)
    if align_corners:
        src = dst * scale
    else:
        src = (dst + ftype(0.5)) * scale - ftype(0.5)
        if not cubic:
            src = xp.maximum(src, ftype(0))
    base = xp.floor(src)
    t = src - base
    base = base.astype(xp.int64)
    if cubic:
        a = ftype(_CUBIC_A)

        def near(x):  # |x| <= 1
            return ((a + 2) * x - (a + 3)) * x * x + 1

        def far(x):  # 1 < |x| < 2
            return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
        taps = [(base - 1, far(t + 1)), (base, near(t)), (base + 1, near(1 - t)),
                (base + 2, far(2 - t))]
    else:
        taps = [(base, 1 - t), (xp.minimum(base + 1, in_size - 1), t)]
    columns = xp.arange(in_size)[None, :]
    matrix = xp.zeros((out_size, in_size), dtype=ftype)
    for index, weight in taps:
        index = xp.clip(index, 0, in_size - 1)
        matrix = matrix + (columns == index[:, None]) * weight[:, None]
    return matrix


def _antialias_matrix(xp, ftype, in_size, out_size, scale_factor, align_corners, cubic):
    """PyTorch's (and PIL's) antialiased resampling weights: when shrinking, the filter is
    stretched by the scale so every input pixel contributes, and each row is normalised to sum
    to one. Bicubic uses Keys' A = -0.5 here, not the -0.75 of plain bicubic."""
    scale = ftype(_scale(in_size, out_size, scale_factor, align_corners))
    taps = 4 if cubic else 2
    support = taps * ftype(0.5) * (scale if scale >= 1 else ftype(1))
    inverse_scale = ftype(1) / scale if scale >= 1 else ftype(1)
    centers = scale * (xp.arange(out_size, dtype=ftype) + ftype(0.5))
    # the window each output reads, truncated toward zero as in PyTorch's integer casts
    first = xp.maximum((centers - support + ftype(0.5)).astype(xp.int64), 0)
    last = xp.minimum((centers + support + ftype(0.5)).astype(xp.int64), in_size)
    last = xp.minimum(last, first + int(math.ceil(support)) * 2 + 1)
    columns = xp.arange(in_size)
    distance = xp.abs((columns[None, :] - centers[:, None] + ftype(0.5)) * inverse_scale)
    if cubic:
        a = ftype(-0.5)
        near = ((a + 2) * distance - (a + 3)) * distance * distance + 1
        far = ((a * distance - 5 * a) * distance + 8 * a) * distance - 4 * a
        weights = xp.where(distance < 1, near, xp.where(distance < 2, far, ftype(0)))
    else:
        weights = xp.maximum(ftype(1) - distance, ftype(0))
    window = (columns[None, :] >= first[:, None]) & (columns[None, :] < last[:, None])
    weights = xp.where(window, weights, ftype(0)).astype(ftype)
    totals = weights.sum(axis=1, keepdims=True)
    return xp.where(totals != 0, weights / xp.where(totals != 0, totals, ftype(1)), weights)


def _int16_weights(xp, matrix):
    """PIL's fixed-point weights, which PyTorch's uint8 kernels use: the most fractional bits
    (up to 22) for which the largest weight still fits in int16 with a bit to spare, and each
    weight rounded half away from zero."""
    largest = float(matrix.max())
    precision = 0
    while precision < 22 and int(0.5 + largest * (1 << (precision + 1))) < (1 << 15):
        precision += 1
    scaled = matrix.astype(xp.float64) * (1 << precision)
    rounded = xp.where(scaled < 0, xp.trunc(scaled - 0.5), xp.trunc(scaled + 0.5))
    return rounded.astype(xp.int64), precision


def _resample_uint8(xp, data, matrices):
    """uint8 bilinear/bicubic as PyTorch computes it: one pass per spatial dim, the last
    (horizontal) first, each an integer dot product with fixed-point weights, rounded by adding
    half before the shift and clamped to [0, 255] before the next pass."""
    out = data.astype(xp.int64)
    for i in reversed(range(len(matrices))):
        weights, precision = _int16_weights(xp, matrices[i])
        moved = xp.moveaxis(out, 2 + i, -1)
        total = xp.matmul(moved, weights.T) + (1 << precision >> 1)
        out = xp.moveaxis(xp.clip(total >> precision, 0, 255), -1, 2 + i)
    return out.astype(xp.uint8)


# PyTorch's node of each resampling kernel, by mode and number of spatial dims (or antialias).
_NEAREST_NODES = {(mode, n): gather_dims_node(f"Upsample{name}{n}DBackward0")
                  for mode, name in (("nearest", "Nearest"), ("nearest-exact", "NearestExact"))
                  for n in (1, 2, 3)}
_LINEAR_NODES = {
    (mode, aa): type(f"Upsample{name}{'Aa' if aa else ''}Backward0", (SeparableMapBackward,),
                     {"__slots__": ()})
    for mode, name in (("linear", "Linear1D"), ("bilinear", "Bilinear2D"),
                       ("bicubic", "Bicubic2D"), ("trilinear", "Trilinear3D"))
    for aa in (False, True)}


def upsample_nearest(input, sizes, scales, exact):
    """``interpolate``'s nearest and nearest-exact modes: one index gather per spatial dim."""
    xp = input._backend.xp
    spatial = input.shape[2:]
    gathers = [(2 + i, _wrap(_nearest_index(xp, n, o, s, exact), dt.int64, input))
               for i, (n, o, s) in enumerate(zip(spatial, sizes, scales))]
    mode = "nearest-exact" if exact else "nearest"
    return gather_dims(input, gathers, _NEAREST_NODES[mode, len(spatial)])


def upsample_linear(input, sizes, scales, mode, align_corners, antialias):
    """``interpolate``'s linear, bilinear, bicubic and trilinear modes (``antialias`` for the
    4-D bilinear and bicubic ones): one weight matrix per spatial dim."""
    xp = input._backend.xp
    # uint8 weights are computed in double, as PyTorch's integer kernels do
    ftype = xp.float64 if input._dtype is dt.uint8 else _compute_dtype(input)
    matrices = []
    for n, o, s in zip(input.shape[2:], sizes, scales):
        if antialias:
            matrix = _antialias_matrix(xp, ftype, n, o, s, align_corners, mode == "bicubic")
        else:
            matrix = _linear_matrix(xp, ftype, n, o, s, align_corners, mode == "bicubic")
        matrices.append(matrix)
    if input._dtype is dt.uint8:
        return _wrap(_resample_uint8(xp, input._data, matrices), dt.uint8, input)
    matrices = [_wrap(xp.asarray(m, dtype=input._dtype.np), input._dtype, input) for m in matrices]
    return separable_map(input, matrices, _LINEAR_NODES[mode, antialias])


# ---- grid sampling ---------------------------------------------------------------------------

def _unnormalize(coord, size, align_corners):
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _reflect(coord, twice_low, twice_high):
    if twice_low == twice_high:
        return coord * 0
    low = twice_low / 2
    span = (twice_high - twice_low) / 2
    coord = (coord - low).abs()
    extra = coord.fmod(span)
    flips = (coord / span).detach().floor()
    return (extra + low).where(flips.remainder(2) == 0, span - extra + low)


def _source_coordinates(coord, size, padding_mode, align_corners, normalized=True):
    if normalized:
        coord = _unnormalize(coord, size, align_corners)
    if padding_mode == "border":
        coord = coord.clamp(0, size - 1)
    elif padding_mode == "reflection":
        if align_corners:
            coord = _reflect(coord, 0, 2 * (size - 1))
        else:
            coord = _reflect(coord, -1, 2 * size - 1)
        coord = coord.clamp(0, size - 1)
    return coord


def _gather(input, indices):
    """``input[n, :, i_1, …, i_d]`` for one integer index tensor per spatial dim (each shaped
    like the grid without its last dim), with zeros where the point lies outside the input."""
    n, c = input.shape[:2]
    points = math.prod(indices[0].shape[1:])
    inside = flat = None
    for index, size in zip(indices, input.shape[2:]):
        in_range = (index >= 0) & (index < size)
        inside = in_range if inside is None else inside & in_range
        clamped = index.clamp(0, size - 1)
        flat = clamped if flat is None else flat * size + clamped
    # sizes spelt out, not -1: an empty batch or channel dim leaves -1 ambiguous
    gather_index = flat.reshape(n, 1, points).expand(n, c, points)
    values = input.reshape(n, c, math.prod(input.shape[2:])).gather(2, gather_index)
    values = values.reshape((n, c) + tuple(indices[0].shape[1:]))
    return values * inside.unsqueeze(1).to(input.dtype)


def _cubic_weights(t):
    """The four cubic-convolution weights (A = -0.75) of taps at offsets -1, 0, 1, 2."""
    a = _CUBIC_A

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _bounded_tap(index, size, padding_mode, align_corners):
    """A bicubic tap's integer coordinate after padding: PyTorch pads each of the 4x4 taps,
    not the sampling point."""
    if padding_mode == "zeros":
        return index
    return _source_coordinates(index.to(dt.float32), size, padding_mode, align_corners,
                               normalized=False).long()


class GridSampler2DBackward0(CompositeBackward):
    __slots__ = ()


class GridSampler3DBackward0(CompositeBackward):
    __slots__ = ()


def grid_sampler(input, grid, mode, padding_mode, align_corners):
    """``input`` (N, C, *S) sampled at ``grid``'s (N, *out, len(S)) normalised coordinates."""
    node = GridSampler2DBackward0 if input.ndim == 4 else GridSampler3DBackward0
    # only an empty output reaches here with an integer input or a grid of another dtype;
    # PyTorch's is still of the input's dtype
    return record_composite(node, (input, grid), lambda input, grid: _grid_sample(
        input, grid, mode, padding_mode, align_corners).to(input.dtype))


def _grid_sample(input, grid, mode, padding_mode, align_corners):
    spatial = tuple(input.shape[2:])
    # grid's last dim lists x (the last spatial dim) first
    coords = [grid[..., len(spatial) - 1 - i] for i in range(len(spatial))]
    if mode == "bicubic":
        points = [_unnormalize(c, n, align_corners) for c, n in zip(coords, spatial)]
        bases = [p.detach().floor() for p in points]
        weights = [_cubic_weights(p - b) for p, b in zip(points, bases)]
        taps = [[_bounded_tap(b.long() + k - 1, n, padding_mode, align_corners) for k in range(4)]
                for b, n in zip(bases, spatial)]
        out = 0
        for (y, wy), (x, wx) in itertools.product(zip(taps[0], weights[0]),
                                                   zip(taps[1], weights[1])):
            out = out + _gather(input, (y, x)) * (wy * wx).unsqueeze(1)
        return out
    points = [_source_coordinates(c, n, padding_mode, align_corners)
              for c, n in zip(coords, spatial)]
    if mode == "nearest":
        out = _gather(input, [p.detach().round().long() for p in points])
        # PyTorch gives the grid a zero gradient here, not none
        return out + (sum(points) * 0).unsqueeze(1) if grid.requires_grad else out
    # (bi/tri)linear: the 2^d corners around each point, weighted by the opposite volumes
    lows = [p.detach().floor() for p in points]
    fractions = [p - low for p, low in zip(points, lows)]
    lows = [low.long() for low in lows]
    out = 0
    for corner in itertools.product((0, 1), repeat=len(spatial)):
        weight = None
        for upper, fraction in zip(corner, fractions):
            factor = fraction if upper else 1 - fraction
            weight = factor if weight is None else weight * factor
        out = out + _gather(input, [low + upper for low, upper in zip(lows, corner)]) * \
            weight.unsqueeze(1)
    return out


def _base_coordinates(xp, ftype, size, align_corners):
    if size <= 1:
        return xp.zeros(max(size, 0), dtype=ftype)
    coords = xp.linspace(-1, 1, size, dtype=ftype)
    return coords if align_corners else coords * ftype((size - 1) / size)


class AffineGridGeneratorBackward0(CompositeBackward):
    __slots__ = ()


def affine_grid_generator(theta, size, align_corners):
    """The sampling grid of the affine maps ``theta`` (N, d, d + 1) for an output of ``size``
    (N, C, *S): the base coordinates times each map, one batched matrix product."""
    spatial_dims = len(size) - 2
    xp = theta._backend.xp
    ftype = theta._dtype.np.type
    spatial = size[2:]
    axes = [_base_coordinates(xp, ftype, n, align_corners) for n in spatial]
    # coordinates are listed x first (the last spatial dim), then a column of ones
    mesh = xp.meshgrid(*axes, indexing="ij")
    base = xp.stack([m for m in reversed(mesh)] + [xp.ones(spatial, dtype=ftype)], -1)
    base = _wrap(base.reshape(1, -1, spatial_dims + 1), theta._dtype, theta)
    return record_composite(AffineGridGeneratorBackward0, (theta,), lambda theta: base.matmul(
        theta.transpose(1, 2)).reshape((size[0],) + tuple(spatial) + (spatial_dims,)))


# ---- shuffles --------------------------------------------------------------------------------

# Each shuffle is a permutation of the elements, so its gradient is the inverse shuffle of the
# output's gradient: one node, as PyTorch records.
class PixelShuffleBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        return (pixel_unshuffle(grad, self.factor),)

    def jvp(self, t):
        return pixel_shuffle(t, self.factor)  # a permutation: the same one of the tangent


class PixelUnshuffleBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        return (pixel_shuffle(grad, self.factor),)

    def jvp(self, t):
        return pixel_unshuffle(t, self.factor)


class ChannelShuffleBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        return (channel_shuffle(grad, grad.shape[1] // self.groups),)

    def jvp(self, t):
        return channel_shuffle(t, self.groups)


def _shuffled(node, input, shuffle, **attrs):
    with no_grad():
        res = shuffle(input)
        if res._base is not None:  # a trivial shuffle is a view: PyTorch returns a new tensor
            res = res.clone()
    if needs_grad(input):
        record(node, (input,), res, **attrs)
    return res


def pixel_shuffle(input, r):
    """``(*, C * r * r, H, W)`` to ``(*, C, H * r, W * r)``."""
    c, h, w = input.shape[-3:]
    # checked here, not in nn.functional: pixel_unshuffle's backward (an empty input's gradient
    # keeps that input's shape) must refuse as PyTorch's does
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    lead = tuple(input.shape[:-3])
    k = len(lead)

    def shuffle(x):
        x = x.reshape(lead + (c // (r * r), r, r, h, w))
        x = x.permute(tuple(range(k)) + (k, k + 3, k + 1, k + 4, k + 2))
        return x.reshape(lead + (c // (r * r), h * r, w * r))
    return _shuffled(PixelShuffleBackward0, input, shuffle, factor=r)


def pixel_unshuffle(input, r):
    """``(*, C, H * r, W * r)`` to ``(*, C * r * r, H, W)``."""
    c, h, w = input.shape[-3:]
    lead = tuple(input.shape[:-3])
    k = len(lead)

    def unshuffle(x):
        if x.numel() == 0:  # PyTorch returns an empty input's shape unchanged
            return x.clone()
        x = x.reshape(lead + (c, h // r, r, w // r, r))
        x = x.permute(tuple(range(k)) + (k, k + 2, k + 4, k + 1, k + 3))
        return x.reshape(lead + (c * r * r, h // r, w // r))
    return _shuffled(PixelUnshuffleBackward0, input, unshuffle, factor=r)


def channel_shuffle(input, groups):
    """The channels (dim 1) as a ``(groups, C / groups)`` grid, transposed."""
    n, c = input.shape[:2]
    rest = tuple(input.shape[2:])

    def shuffle(x):
        return x.reshape((n, groups, c // groups) + rest).transpose(1, 2).reshape((n, c) + rest)
    return _shuffled(ChannelShuffleBackward0, input, shuffle, groups=groups)
