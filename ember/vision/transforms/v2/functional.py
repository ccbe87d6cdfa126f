"""``transforms.v2.functional``: v2's names for the image kernels, on Ember tensors and PIL
images. The kernels are v1's (``transforms.functional``), with v2's defaults and its own
``to_dtype``/``to_image``/``get_size``. torchvision's ``tv_tensors`` (bounding boxes, masks,
videos) do not exist in Ember: these functions take images only."""
import numpy as np

import ember

from .. import functional as _F
from .._functional_pil import _is_pil_image
from ..functional import (  # noqa: F401  (re-exported under v2's names)
    InterpolationMode, adjust_brightness, adjust_contrast, adjust_gamma, adjust_hue,
    adjust_saturation, adjust_sharpness, affine, autocontrast, center_crop, convert_image_dtype,
    crop, elastic_transform, equalize, erase, five_crop, gaussian_blur, get_dimensions,
    get_image_num_channels, get_image_size, hflip, invert, normalize, pad, perspective,
    pil_to_tensor, posterize, resized_crop, rgb_to_grayscale, rotate, solarize, ten_crop,
    to_grayscale, to_pil_image, to_tensor, vflip)

horizontal_flip = hflip
vertical_flip = vflip
elastic = elastic_transform
get_num_channels = get_image_num_channels


def is_pure_tensor(inpt):
    return isinstance(inpt, ember.Tensor)


def get_size(inpt):
    """``[height, width]``."""
    _, h, w = get_dimensions(inpt)
    return [h, w]


def resize(inpt, size, interpolation=InterpolationMode.BILINEAR, max_size=None,
           antialias=True):
    """v2's resize: ``size=None`` with ``max_size`` bounds the longer edge."""
    if size is None:
        if max_size is None:
            raise ValueError("resize: size=None needs max_size")
        _, h, w = get_dimensions(inpt)
        out = _F._compute_resized_output_size((h, w), None, max_size, allow_size_none=True)
        return _F.resize(inpt, out, interpolation, None, antialias)
    return _F.resize(inpt, size, interpolation, max_size, antialias)


def to_image(inpt):
    """A ``CHW`` image tensor from a PIL image, an ``HWC`` ndarray or a tensor."""
    if isinstance(inpt, np.ndarray):
        arr = np.atleast_3d(inpt)
        return ember.from_numpy(np.ascontiguousarray(arr.transpose(2, 0, 1)))
    if _is_pil_image(inpt):
        return pil_to_tensor(inpt)
    if isinstance(inpt, ember.Tensor):
        return inpt
    raise TypeError(f"Input can either be a pure Tensor, a numpy array, or a PIL image, but got "
                    f"{type(inpt)} instead.")


def _num_value_bits(dtype):
    bits = {ember.uint8: 8, ember.int8: 7, ember.int16: 15, ember.int32: 31, ember.int64: 63}
    if dtype not in bits:
        raise TypeError(f"Number of value bits is only defined for integer dtypes, but got "
                        f"{dtype}.")
    return bits[dtype]


def to_dtype(inpt, dtype=ember.float32, scale=False):
    """Cast; with ``scale=True`` integer and float value ranges are mapped onto each other
    (integer to integer by bit shifts, as v2 does)."""
    if inpt.dtype == dtype:
        return inpt
    if not scale:
        return inpt.to(dtype)
    float_input, float_output = inpt.is_floating_point(), dtype.is_floating_point
    if float_input:
        if float_output:
            return inpt.to(dtype)
        if ((inpt.dtype == ember.float32 and dtype in (ember.int32, ember.int64))
                or (inpt.dtype == ember.float64 and dtype == ember.int64)):
            raise RuntimeError(f"The conversion from {inpt.dtype} to {dtype} cannot be "
                               f"performed safely.")
        eps = 1e-3
        max_value = float(ember.iinfo(dtype).max)
        return inpt.mul(max_value + 1.0 - eps).to(dtype)
    bits_in = _num_value_bits(inpt.dtype)
    if float_output:
        return inpt.to(dtype).mul(1.0 / ember.iinfo(inpt.dtype).max)
    bits_out = _num_value_bits(dtype)
    if bits_in > bits_out:
        return ember.bitwise_right_shift(inpt, bits_in - bits_out).to(dtype)
    return ember.bitwise_left_shift(inpt.to(dtype), bits_out - bits_in)


def grayscale_to_rgb(inpt):
    """A one-channel image repeated to three channels (three-channel images unchanged)."""
    if _is_pil_image(inpt):
        return inpt.convert("RGB")
    if inpt.shape[-3] >= 3:
        return inpt
    return inpt.expand(*inpt.shape[:-3], 3, *inpt.shape[-2:]).clone()


def permute_channels(inpt, permutation):
    """Reorder the channels of an image tensor (PIL images go through a tensor)."""
    if _is_pil_image(inpt):
        return to_pil_image(permute_channels(pil_to_tensor(inpt), permutation))
    return inpt[..., list(permutation), :, :]


def gaussian_noise(inpt, mean=0.0, sigma=0.1, clip=True):
    """Add Gaussian noise to a float image tensor (clipped to ``[0, 1]`` by default)."""
    if not inpt.is_floating_point():
        raise ValueError(f"Input tensor is expected to be in float dtype, got dtype={inpt.dtype}")
    if sigma < 0:
        raise ValueError(f"sigma shouldn't be negative. Got {sigma}")
    noise = mean + ember.randn_like(inpt) * sigma
    out = inpt + noise
    return out.clamp(0, 1) if clip else out
