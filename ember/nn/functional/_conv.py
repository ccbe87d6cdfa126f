"""Convolutions and ``unfold``/``fold``: argument handling as PyTorch; the maths is
``ember.ops.conv``."""
from ... import _dtype as dt
from ...ops import conv as _ops
from ..._tensor import wrap_dim_no_scalar
from ...ops._dispatch import dtype_name, device_mismatch
from ...amp import autocast_mode as _autocast

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "unfold", "fold", "conv_tbc"]


_CONV_LENGTH_ERROR = ("expected {name} to be a single integer value or a list of {n} values to "
                      "match the convolution dimensions, but got {name}={value}")


def expand_param(value, n, name="stride", length_error=_CONV_LENGTH_ERROR):
    """An int or a 1- or n-sequence as an n-tuple; another length raises PyTorch's error,
    ``length_error`` formatted with ``name``, ``n`` and the ``value`` as a list (pooling
    passes its own)."""
    if isinstance(value, int):
        return (value,) * n
    value = tuple(value)
    if len(value) == 1:
        return value * n
    if len(value) != n:
        raise RuntimeError(length_error.format(name=name, n=n, value=list(value)))
    return value


def _check_operands(name, input, weight, bias, n, transposed, groups):
    batched_rank = n + 2
    if input.ndim not in (batched_rank - 1, batched_rank):
        raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to {name}, "
                           f"but got input of size: {list(input.shape)}")
    if input._device is not weight._device:
        raise device_mismatch(input, weight)
    if weight.ndim != batched_rank:
        raise RuntimeError(f"Expected {weight.ndim}-dimensional input for {weight.ndim}-dimensional "
                           f"weight {list(weight.shape)}, but got {input.ndim}-dimensional input "
                           f"of size {list(input.shape)} instead")
    if input._dtype is not weight._dtype:
        raise RuntimeError(f"expected scalar type {dtype_name(input._dtype)} but found "
                           f"{dtype_name(weight._dtype)}")
    if bias is not None and bias._dtype is not input._dtype:
        raise RuntimeError(f"Input type ({dt.TYPE_META_NAMES[input._dtype.name]}) and bias type "
                           f"({dt.TYPE_META_NAMES[bias._dtype.name]}) should be the same")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    shown = list(input.shape) if input.ndim == batched_rank else [1] + list(input.shape)
    channels = shown[1]
    if transposed:
        if weight.shape[0] % groups:
            raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by "
                               f"{groups} at dimension 0, but got weight of size "
                               f"[{list(weight.shape)}] instead")
        if channels != weight.shape[0]:
            raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, "
                               f"expected input{shown} to have {weight.shape[0]} channels, but "
                               f"got {channels} channels instead")
        out_channels = weight.shape[1] * groups
    else:
        if weight.shape[0] % groups:
            raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by "
                               f"{groups} at dimension 0, but got weight of size "
                               f"[{list(weight.shape)}] instead")
        if channels != weight.shape[1] * groups:
            raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, "
                               f"expected input{shown} to have {weight.shape[1] * groups} "
                               f"channels, but got {channels} channels instead")
        out_channels = weight.shape[0]
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != out_channels):
        raise RuntimeError(f"Given weight of size {list(weight.shape)}, expected bias to be "
                           f"1-dimensional with {out_channels} elements, but got bias of size "
                           f"{list(bias.shape)} instead")


def _check_geometry(stride, pads, dilation):
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(lo < 0 or hi < 0 for lo, hi in pads):
        raise RuntimeError("negative padding is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")


def _is_empty(input, n):
    """PyTorch sends a zero-batch or zero-channel input to no kernel, so no dtype is refused."""
    batched = input.shape if input.ndim == n + 2 else (1,) + tuple(input.shape)
    return batched[0] == 0 or batched[1] == 0


def _refuse_dtype(input, n, transposed, dilated):
    """PyTorch's error where its CPU kernel for this convolution lacks the input's dtype: the
    plain kernels take every integer dtype but not bool; the dilated and transposed ones take
    int64 as their only integer dtype."""
    dtype = input.dtype
    if dtype._kind >= 2 or _is_empty(input, n):
        return
    if transposed:
        kernel = f"slow_conv_transpose{3 if n == 3 else 2}d_out_cpu"
    elif dilated:
        kernel = "slow_conv_dilated<>"
    else:
        kernel = "compute_columns3d" if n == 3 else "slow_conv2d_cpu"
    if dtype is dt.bool or ((transposed or dilated) and dtype is not dt.int64):
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{dtype_name(dtype)}'")


def _checked_params(n, input, weight, bias, stride, padding, dilation, groups):
    """``conv{n}d``'s checks, in PyTorch's order, and the convolution's parameters."""
    name = f"conv{n}d"
    _check_operands(name, input, weight, bias, n, False, groups)
    stride = expand_param(stride, n, "stride")
    dilation = expand_param(dilation, n, "dilation")
    _refuse_dtype(input, n, False, any(d != 1 for d in dilation))
    kernel = tuple(weight.shape[2:])
    if isinstance(padding, str):
        if padding == "valid":
            pads = ((0, 0),) * n
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            # PyTorch puts the odd extra element of 'same' padding after the input
            totals = [d * (k - 1) for d, k in zip(dilation, kernel)]
            pads = tuple((t // 2, t - t // 2) for t in totals)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        pads = tuple((p, p) for p in expand_param(padding, n, "padding"))
    _check_geometry(stride, pads, dilation)
    padded = [s + lo + hi for s, (lo, hi) in zip(input.shape[input.ndim - n:], pads)]
    dilated = [d * (k - 1) + 1 for d, k in zip(dilation, kernel)]
    if any(p < k for p, k in zip(padded, dilated)):
        raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
                           f"Kernel size: ({' x '.join(map(str, dilated))}). Kernel size can't be "
                           "greater than actual input size")
    return _ops.conv_params(stride, pads, dilation, groups)


def _convnd(n, input, weight, bias, stride, padding, dilation, groups):
    params = _checked_params(n, input, weight, bias, stride, padding, dilation, groups)
    unbatched = input.ndim == n + 1
    if unbatched:
        input = input.unsqueeze(0)
    out = _ops.convolution(input, weight, bias, params)
    return out.squeeze(0) if unbatched else out


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    if _autocast.active and _autocast.enabled_for(input, "conv1d"):
        return _autocast.run(conv1d, "conv1d", input, weight, bias, stride, padding, dilation,
                             groups)
    return _convnd(1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    if _autocast.active and _autocast.enabled_for(input, "conv2d"):
        return _autocast.run(conv2d, "conv2d", input, weight, bias, stride, padding, dilation,
                             groups)
    return _convnd(2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    if _autocast.active and _autocast.enabled_for(input, "conv3d"):
        return _autocast.run(conv3d, "conv3d", input, weight, bias, stride, padding, dilation,
                             groups)
    return _convnd(3, input, weight, bias, stride, padding, dilation, groups)


def _conv_transposend(n, input, weight, bias, stride, padding, output_padding, groups,
                      dilation):
    name = f"conv_transpose{n}d"
    _check_operands(name, input, weight, bias, n, True, groups)
    stride = expand_param(stride, n, "stride")
    dilation = expand_param(dilation, n, "dilation")
    padding = expand_param(padding, n, "padding")
    output_padding = expand_param(output_padding, n, "output_padding")
    pads = tuple((p, p) for p in padding)
    _check_geometry(stride, pads, dilation)
    _refuse_dtype(input, n, True, any(d != 1 for d in dilation))
    if any(op >= s and op >= d for op, s, d in zip(output_padding, stride, dilation)):
        axes = ["depth", "height", "width"][3 - n:] if n > 1 else ["width"]
        raise RuntimeError(
            "output padding must be smaller than either stride or dilation, but got "
            + " ".join(f"output_padding_{a}: {v}" for a, v in zip(axes, output_padding)) + " "
            + " ".join(f"stride_{a}: {v}" for a, v in zip(axes, stride)) + " "
            + " ".join(f"dilation_{a}: {v}" for a, v in zip(axes, dilation)))
    unbatched = input.ndim == n + 1
    if unbatched:
        input = input.unsqueeze(0)
    kernel = weight.shape[2:]
    spatial = tuple((i - 1) * s - 2 * p + d * (k - 1) + op + 1 for i, s, p, d, k, op
                    in zip(input.shape[2:], stride, padding, dilation, kernel, output_padding))
    if any(s <= 0 for s in spatial):
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, input.shape[2:]))}). "
                           f"Calculated output size per channel: ({' x '.join(map(str, spatial))}). "
                           "Output size is too small")
    out = _ops.convolution_transpose(input, weight, bias, spatial,
                                     _ops.conv_params(stride, pads, dilation, groups))
    return out.squeeze(0) if unbatched else out


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    if _autocast.active and _autocast.enabled_for(input, "conv_transpose1d"):
        return _autocast.run(conv_transpose1d, "conv_transpose1d", input, weight, bias, stride,
                             padding, output_padding, groups, dilation)
    return _conv_transposend(1, input, weight, bias, stride, padding, output_padding, groups,
                             dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    if _autocast.active and _autocast.enabled_for(input, "conv_transpose2d"):
        return _autocast.run(conv_transpose2d, "conv_transpose2d", input, weight, bias, stride,
                             padding, output_padding, groups, dilation)
    return _conv_transposend(2, input, weight, bias, stride, padding, output_padding, groups,
                             dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    if _autocast.active and _autocast.enabled_for(input, "conv_transpose3d"):
        return _autocast.run(conv_transpose3d, "conv_transpose3d", input, weight, bias, stride,
                             padding, output_padding, groups, dilation)
    return _conv_transposend(3, input, weight, bias, stride, padding, output_padding, groups,
                             dilation)


def _pair(value, name):
    if isinstance(value, int):
        return (value, value)
    value = tuple(value)
    if len(value) != 2:
        raise RuntimeError(f"{name} must be an int or a tuple of 2 ints")
    return value


def _block_args(kernel_size, dilation, padding, stride):
    """unfold's and fold's block geometry as pairs, and the padding as (before, after) pairs."""
    kernel, dilation = _pair(kernel_size, "kernel_size"), _pair(dilation, "dilation")
    padding, stride = _pair(padding, "padding"), _pair(stride, "stride")
    return kernel, dilation, padding, stride, tuple((p, p) for p in padding)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding ``kernel_size`` blocks of an ``(N, C, H, W)`` input as columns
    ``(N, C * kH * kW, L)``."""
    if input.ndim < 3:  # PyTorch's kernel reads size(1) and size(2) before checking the rank
        wrap_dim_no_scalar(1, input.ndim)
        wrap_dim_no_scalar(2, input.ndim)
    if input.ndim not in (3, 4):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with possibly 0 batch size "
                           f"and other non-zero dimensions for input, but got: "
                           f"{list(input.shape)}")
    if input.dtype._kind == 1:  # integers (bool has a kernel)
        raise NotImplementedError(f"\"im2col_out_cpu\" not implemented for "
                                  f"'{dtype_name(input.dtype)}'")
    kernel, dilation, padding, stride, pads = _block_args(kernel_size, dilation, padding, stride)
    spatial = input.shape[-2:]
    blocks = [_ops.conv_output_size(n, k, s, p, d) for n, k, s, p, d
              in zip(spatial, kernel, stride, pads, dilation)]
    if any(b < 1 for b in blocks):
        raise RuntimeError(
            f"Given input with spatial size ({spatial[0]}, {spatial[1]}), "
            f"kernel_size=({kernel[0]}, {kernel[1]}), dilation=({dilation[0]}, {dilation[1]}), "
            f"padding=({padding[0]}, {padding[1]}), calculated shape of the array of sliding "
            f"blocks as ({blocks[0]}, {blocks[1]}), but its components must be at least one.")
    return _ops.im2col_op(input, kernel, stride, pads, dilation)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Sums columns ``(N, C * kH * kW, L)`` back into an ``(N, C, *output_size)`` tensor: the
    adjoint of ``unfold``."""
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
                           f"batch size and non-zero dimensions for input, but got: "
                           f"{list(input.shape)}")
    if input.dtype._kind == 1:  # integers (bool has a kernel)
        raise NotImplementedError(f"\"col2im_out_cpu\" not implemented for "
                                  f"'{dtype_name(input.dtype)}'")
    output_size = _pair(output_size, "output_size")
    kernel, dilation, padding, stride, pads = _block_args(kernel_size, dilation, padding, stride)
    kernel_count = kernel[0] * kernel[1]
    rows, columns = input.shape[-2:]
    if rows % kernel_count:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product "
                           f"of kernel_size, but got input.size(1)={rows} and "
                           f"kernel_size=({kernel[0]}, {kernel[1]}).")
    blocks = [_ops.conv_output_size(n, k, s, p, d) for n, k, s, p, d
              in zip(output_size, kernel, stride, pads, dilation)]
    if blocks[0] * blocks[1] != columns:
        raise RuntimeError(
            f"Given output_size=({output_size[0]}, {output_size[1]}), kernel_size=({kernel[0]}, "
            f"{kernel[1]}), dilation=({dilation[0]}, {dilation[1]}), padding=({padding[0]}, "
            f"{padding[1]}), stride=({stride[0]}, {stride[1]}), expected size of input's "
            f"dimension 2 to match the calculated number of sliding blocks {blocks[0]} * "
            f"{blocks[1]} = {blocks[0] * blocks[1]}, but got input.size(2)={columns}.")
    return _ops.col2im_op(input, output_size, kernel, stride, pads, dilation)


def conv_tbc(input, weight, bias, pad=0):
    """1-D convolution on (time, batch, channels) input with a (kernel, in, out) weight."""
    if _autocast.active and _autocast.enabled_for(input, "conv_tbc"):
        return _autocast.run(conv_tbc, "conv_tbc", input, weight, bias, pad)
    if input.ndim != 3:
        raise RuntimeError(f"Input must have 3 dims: time, batch, in_channel, but got "
                           f"{input.ndim} dims")
    if weight.ndim != 3:
        raise RuntimeError(f"Weight tensor must have 3 dims: kernel_width, in_channels, "
                           f"out_channels, but got {weight.ndim} dims")
    if bias.ndim != 1:
        raise RuntimeError(f"Bias must be 1-D, but got {bias.ndim} dims")
    # conv1d's checks, on the (batch, channels, time) views the op convolves
    params = _checked_params(1, input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, 1, pad,
                             1, 1)
    return _ops.conv_tbc(input, weight, bias, params)
