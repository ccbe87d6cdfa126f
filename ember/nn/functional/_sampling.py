"""Resampling, as ``torch.nn.functional``: ``interpolate``, ``grid_sample``/``affine_grid``,
pixel and channel shuffles. Here are PyTorch's argument checks and output sizes; the kernels
and their nodes are ``ember.ops.sampling`` (area mode is adaptive average pooling).
"""
import math
import numbers

from ... import _dtype as dt
from ...ops._dispatch import dtype_name
from ...ops import sampling as _ops
from ._pooling import adaptive_avg_pool1d, adaptive_avg_pool2d, \
    adaptive_avg_pool3d
from ...amp import autocast_mode as _autocast
from ..._quantized_tensor import QuantizedTensor, quantized_functional

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "grid_sample",
           "affine_grid", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle",
           "native_channel_shuffle"]

_MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"
_LINEAR_RANK = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}


def _output_sizes(input, size, scale_factor, recompute_scale_factor):
    dims = input.ndim - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        # as in PyTorch, only a sequence's length is checked: a number expands to every
        # spatial dim, however many (or few) the input has
        sizes = [size] * dims if isinstance(size, numbers.Integral) else list(size)
        if not isinstance(size, numbers.Integral) and len(sizes) != dims:
            raise ValueError(
                "Input and output must have the same number of spatial dimensions, but got input "
                f"with spatial dimensions of {list(input.shape[2:])} and output size of "
                f"{size}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and output "
                "size in (o1, o2, ...,oK) format.")
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        return [int(s) for s in sizes], [None] * dims
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    scales = [scale_factor] * dims if isinstance(scale_factor, numbers.Real) else list(scale_factor)
    if not isinstance(scale_factor, numbers.Real) and len(scales) != dims:
        raise ValueError(
            "Input and scale_factor must have the same number of spatial dimensions, but got "
            f"input with spatial dimensions of {list(input.shape[2:])} and scale_factor of "
            f"shape {scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format "
            "and scale_factor in (s1, s2, ...,sK) format.")
    sizes = [math.floor(float(n) * s) for n, s in zip(input.shape[2:], scales)]
    return sizes, ([None] * dims if recompute_scale_factor else [float(s) for s in scales])


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    if input.__class__ is QuantizedTensor:  # torch's QuantizedCPU upsampling kernels
        return quantized_functional().interpolate(input, size, scale_factor, mode,
                                                  align_corners)
    # autocast: the upsample kernels ("area" is adaptive_avg_pool, which has its own entry)
    if _autocast.active and mode != "area" and _autocast.enabled_for(input, "upsample"):
        return _autocast.run(interpolate, "upsample", input, size, scale_factor, mode,
                             align_corners, recompute_scale_factor, antialias)
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    else:
        align_corners = bool(align_corners)
    # PyTorch's order: output sizes, then antialias, then the input's rank for the mode
    sizes, scales = _output_sizes(input, size, scale_factor, recompute_scale_factor)
    if antialias and (mode not in ("bilinear", "bicubic") or input.ndim != 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes "
                         "and requires a 4-D tensor as input")
    known = mode in ("nearest", "nearest-exact", "area") or mode in _LINEAR_RANK
    # bicubic has no message of its own for a wrong rank in PyTorch
    if not known or input.ndim not in (3, 4, 5) or (mode == "bicubic" and input.ndim != 4):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                                  f"{input.ndim}D) for the modes: {_MODES} (got {mode})")
    if mode in _LINEAR_RANK and input.ndim != _LINEAR_RANK[mode]:
        needed = _LINEAR_RANK[mode]
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {needed}D "
                                  "input")
    if input._dtype._kind < 2 or (antialias and input._dtype in (dt.float16, dt.bfloat16)):
        error = _kernel_dtype_error(input, mode, antialias)
        if error is not None:
            raise error
    if mode == "area":
        pool = {3: adaptive_avg_pool1d, 4: adaptive_avg_pool2d, 5: adaptive_avg_pool3d}
        return pool[input.ndim](input, tuple(sizes))
    if mode in ("nearest", "nearest-exact"):
        return _ops.upsample_nearest(input, sizes, scales, mode == "nearest-exact")
    return _ops.upsample_linear(input, sizes, scales, mode, align_corners, antialias)


def _kernel_dtype_error(input, mode, antialias):
    """PyTorch interpolates integers only as uint8 images (nearest modes, and bilinear or
    bicubic of 4-D input), and antialiases no reduced float; otherwise the error names the
    kernel that lacks the dtype."""
    if input._dtype is dt.uint8 and mode in ("nearest", "nearest-exact", "bilinear", "bicubic"):
        return None
    if mode in ("nearest", "nearest-exact"):
        kernel = ("upsample_nearest2d_channels_last" if input.ndim == 4
                  else "compute_indices_weights_nearest")
    elif mode == "area":
        kernel = "adaptive_avg_pool3d_cpu" if input.ndim == 5 else "adaptive_avg_pool2d"
    elif antialias:
        kernel = "compute_index_ranges_weights"
    elif mode == "bicubic":
        kernel = "compute_indices_weights_cubic"
    elif mode == "bilinear":
        kernel = "upsample_bilinear2d_channels_last"
    else:
        kernel = "compute_indices_weights_linear"
    return NotImplementedError(f"\"{kernel}\" not implemented for '{dtype_name(input._dtype)}'")


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ---- grid sampling ---------------------------------------------------------------------------

def _check_grid(input, grid, mode):
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but "
                           f"got input with sizes {list(input.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    if grid.shape[-1] != input.ndim - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.ndim - 2} in last "
                           f"dimension, but got grid with sizes {list(grid.shape)}")
    for i in range(2, input.ndim):
        if input.shape[i] == 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial "
                               f"dimensions, but input has sizes {list(input.shape)} with "
                               f"dimension {i} being empty")
    if input.ndim not in (4, 5) or grid.ndim != input.ndim:
        expected = 4 if input.ndim == 4 else 5  # what PyTorch's message names
        raise RuntimeError(f"grid_sampler(): expected {expected}D input and grid with same number of "
                           f"dimensions, but got input with sizes {list(input.shape)} and grid "
                           f"with sizes {list(grid.shape)}")
    if mode == "bicubic" and input.ndim != 4:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    if _autocast.active and _autocast.enabled_for(input, "grid_sampler"):
        return _autocast.run(grid_sample, "grid_sampler", input, grid, mode, padding_mode,
                             align_corners)
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    _check_grid(input, grid, mode)
    # PyTorch's 3-D kernel checks the dtype up front; the 2-D one, and the grid's dtype, only
    # once there is an output element to compute
    empty = input.shape[0] * input.shape[1] * math.prod(grid.shape[1:-1]) == 0
    if not input.dtype.is_floating_point and (input.ndim == 5 or not empty):
        kernel = "grid_sampler_2d_cpu_kernel_impl" if input.ndim == 4 else "grid_sampler3d_cpu"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{dtype_name(input.dtype)}'")
    if grid.dtype != input.dtype and not empty:
        raise RuntimeError(f"expected scalar type {dtype_name(input.dtype)} but found "
                           f"{dtype_name(grid.dtype)}")
    return _ops.grid_sampler(input, grid, mode, padding_mode, bool(align_corners))


def affine_grid(theta, size, align_corners=None):
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    align_corners = bool(align_corners)
    given, size = size, tuple(size)  # messages show the size as it was passed, as PyTorch's do
    spatial_dims = len(size) - 2
    if spatial_dims not in (2, 3):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {given}.")
    if theta.ndim != 3 or tuple(theta.shape[1:]) != (spatial_dims, spatial_dims + 1):
        raise ValueError(f"Expected a batch of {spatial_dims}D affine matrices of shape Nx"
                         f"{spatial_dims}x{spatial_dims + 1} for size {given}. Got "
                         f"{theta.shape}.")
    # a unit-size grid with align_corners only warns in PyTorch, even beside an empty batch
    if not (align_corners and min(size[2:]) == 1) and min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {given}")
    if min(size[2:]) == 1 and theta._dtype in (dt.float16, dt.bfloat16):
        # PyTorch builds a unit-size axis with at::tensor, which has no reduced-float kernel
        raise NotImplementedError(f"\"tensor_cpu\" not implemented for "
                                  f"'{dtype_name(theta._dtype)}'")
    if theta.shape[0] != size[0]:  # the batched product's check, in PyTorch
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{size[0]}, {spatial_dims + 1}] but got: [{theta.shape[0]}, "
                           f"{spatial_dims + 1}].")
    return _ops.affine_grid_generator(theta, size, align_corners)


# ---- shuffles --------------------------------------------------------------------------------

def _rank_error(name, input):
    return RuntimeError(f"{name} expects input to have at least 3 dimensions, but got input with "
                        f"{input.ndim} dimension(s)")


def pixel_shuffle(input, upscale_factor):
    if input.ndim < 3:
        raise _rank_error("pixel_shuffle", input)
    return _ops.pixel_shuffle(input, upscale_factor)  # which checks the channel count


def pixel_unshuffle(input, downscale_factor):
    if input.ndim < 3:
        raise _rank_error("pixel_unshuffle", input)
    r = downscale_factor
    h, w = input.shape[-2:]
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, "
                           f"but input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, "
                           f"but input.size(-1)={w} is not divisible by {r}")
    return _ops.pixel_unshuffle(input, r)


def channel_shuffle(input, groups):
    if input.ndim < 3:
        raise _rank_error("channel_shuffle", input)
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    c = input.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    return _ops.channel_shuffle(input, groups)


native_channel_shuffle = channel_shuffle
