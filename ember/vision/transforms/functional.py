"""``transforms.functional``: every image operation on Ember tensors ``(..., C, H, W)`` and on
PIL images, dispatching on the input's type to ``_functional_tensor`` or
``_functional_pil`` as torchvision does, with torchvision's argument checks and errors."""
import math
import numbers
import sys
import warnings
from enum import Enum

import numpy as np

import ember

from . import _functional_pil as F_pil
from . import _functional_tensor as F_t


class InterpolationMode(Enum):
    """Interpolation modes, named as torchvision's; the values are ``interpolate``'s modes
    for tensors. Box, Hamming and Lanczos exist only for PIL images."""
    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


# Pillow's resampling filter numbers for each mode.
pil_modes_mapping = {
    InterpolationMode.NEAREST: 0,
    InterpolationMode.BILINEAR: 2,
    InterpolationMode.BICUBIC: 3,
    InterpolationMode.NEAREST_EXACT: 0,
    InterpolationMode.BOX: 4,
    InterpolationMode.HAMMING: 5,
    InterpolationMode.LANCZOS: 1,
}

_PIL_INT_TO_MODE = {0: InterpolationMode.NEAREST, 2: InterpolationMode.BILINEAR,
                    3: InterpolationMode.BICUBIC, 4: InterpolationMode.BOX,
                    5: InterpolationMode.HAMMING, 1: InterpolationMode.LANCZOS}


def _interpolation_modes_from_int(i):
    return _PIL_INT_TO_MODE[i]


def _check_interpolation(interpolation):
    if isinstance(interpolation, int):
        return _interpolation_modes_from_int(interpolation)
    if not isinstance(interpolation, InterpolationMode):
        raise TypeError("Argument interpolation should be a InterpolationMode or a "
                        "corresponding Pillow integer constant")
    return interpolation


def _is_numpy(img):
    return isinstance(img, np.ndarray)


def _is_numpy_image(img):
    return img.ndim in {2, 3}


def _is_tensor(img):
    return isinstance(img, ember.Tensor)


def get_dimensions(img):
    """``[channels, height, width]`` of a tensor or PIL image."""
    if _is_tensor(img):
        return F_t.get_dimensions(img)
    return F_pil.get_dimensions(img)


def get_image_size(img):
    """``[width, height]``."""
    if _is_tensor(img):
        return F_t.get_image_size(img)
    return F_pil.get_image_size(img)


def get_image_num_channels(img):
    if _is_tensor(img):
        return F_t.get_image_num_channels(img)
    return F_pil.get_image_num_channels(img)


def to_tensor(pic):
    """A PIL image or ``HWC`` ndarray as a ``CHW`` tensor; uint8 data is scaled to float in
    ``[0, 1]``, other types keep their values."""
    if not (F_pil._is_pil_image(pic) or _is_numpy(pic)):
        raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
    if _is_numpy(pic) and not _is_numpy_image(pic):
        raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
    default_float_dtype = ember.get_default_dtype()
    if isinstance(pic, np.ndarray):
        if pic.ndim == 2:
            pic = pic[:, :, None]
        img = ember.from_numpy(np.ascontiguousarray(pic.transpose((2, 0, 1))))
        if img.dtype == ember.uint8:
            return img.to(dtype=default_float_dtype).div(255)
        return img
    mode_to_nptype = {"I": np.int32, "I;16" if sys.byteorder == "little" else "I;16B": np.int16,
                      "F": np.float32}
    arr = np.array(pic, mode_to_nptype.get(pic.mode, np.uint8), copy=True)
    if pic.mode == "1":
        arr = 255 * arr
    arr = arr.reshape(pic.size[1], pic.size[0], F_pil.get_image_num_channels(pic))
    img = ember.from_numpy(np.ascontiguousarray(arr.transpose(2, 0, 1)))
    if img.dtype == ember.uint8:
        return img.to(dtype=default_float_dtype).div(255)
    return img


def pil_to_tensor(pic):
    """A PIL image as a ``CHW`` tensor of its own pixel type, unscaled."""
    if not F_pil._is_pil_image(pic):
        raise TypeError(f"pic should be PIL Image. Got {type(pic)}")
    arr = np.array(pic, copy=True)
    arr = arr.reshape(pic.size[1], pic.size[0], F_pil.get_image_num_channels(pic))
    return ember.from_numpy(np.ascontiguousarray(arr.transpose(2, 0, 1)))


def convert_image_dtype(image, dtype=None):
    """Cast an image tensor to ``dtype``, rescaling between the integer range and ``[0, 1]``."""
    if not isinstance(image, ember.Tensor):
        raise TypeError("Input img should be Tensor Image")
    return F_t.convert_image_dtype(image, ember.float32 if dtype is None else dtype)


def _image_from_array(arr, mode):
    # Pillow >= 11.3 infers the mode from the array; torchvision's to_pil_image relies on
    # the array's bytes being read *as* ``mode`` (e.g. three uint8 channels as HSV), which
    # frombuffer still does.
    from PIL import Image
    inferred = Image.fromarray(arr)
    if inferred.mode == mode:
        return inferred
    arr = np.ascontiguousarray(arr)
    size = (arr.shape[1], arr.shape[0])
    return Image.frombuffer(mode, size, arr.tobytes(), "raw", mode, 0, 1)


def to_pil_image(pic, mode=None):
    """A ``CHW`` tensor or ``HWC`` ndarray as a PIL image; float data is taken as ``[0, 1]``
    and scaled to uint8 unless ``mode="F"``."""
    if isinstance(pic, ember.Tensor):
        if pic.ndim == 3:
            pic = pic.permute((1, 2, 0))
        pic = pic.detach().cpu().numpy()
    elif not isinstance(pic, np.ndarray):
        raise TypeError(f"pic should be Tensor or ndarray. Got {type(pic)}.")
    if pic.ndim == 2:
        pic = np.expand_dims(pic, 2)
    if pic.ndim != 3:
        raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
    if pic.shape[-1] > 4:
        raise ValueError(f"pic should not have > 4 channels. Got {pic.shape[-1]} channels.")
    npimg = pic
    if np.issubdtype(npimg.dtype, np.floating) and mode != "F":
        npimg = (npimg * 255).astype(np.uint8)
    if npimg.shape[2] == 1:
        expected_mode = None
        npimg = npimg[:, :, 0]
        if npimg.dtype == np.uint8:
            expected_mode = "L"
        elif npimg.dtype == np.int16:
            expected_mode = "I;16" if sys.byteorder == "little" else "I;16B"
        elif npimg.dtype == np.int32:
            expected_mode = "I"
        elif npimg.dtype == np.float32:
            expected_mode = "F"
        if mode is not None and mode != expected_mode:
            raise ValueError(f"Incorrect mode ({mode}) supplied for input type {np.dtype}. "
                             f"Should be {expected_mode}")
        mode = expected_mode
    elif npimg.shape[2] == 2:
        if mode is not None and mode not in ["LA"]:
            raise ValueError("Only modes ['LA'] are supported for 2D inputs")
        if mode is None and npimg.dtype == np.uint8:
            mode = "LA"
    elif npimg.shape[2] == 4:
        permitted = ["RGBA", "CMYK", "RGBX"]
        if mode is not None and mode not in permitted:
            raise ValueError(f"Only modes {permitted} are supported for 4D inputs")
        if mode is None and npimg.dtype == np.uint8:
            mode = "RGBA"
    else:
        permitted = ["RGB", "YCbCr", "HSV"]
        if mode is not None and mode not in permitted:
            raise ValueError(f"Only modes {permitted} are supported for 3D inputs")
        if mode is None and npimg.dtype == np.uint8:
            mode = "RGB"
    if mode is None:
        raise TypeError(f"Input type {npimg.dtype} is not supported")
    return _image_from_array(npimg, mode)


def normalize(tensor, mean, std, inplace=False):
    """``(tensor - mean) / std`` per channel of a float image tensor."""
    if not isinstance(tensor, ember.Tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(tensor)}")
    return F_t.normalize(tensor, mean=mean, std=std, inplace=inplace)


def _compute_resized_output_size(image_size, size, max_size=None, allow_size_none=False):
    h, w = image_size
    short, long = (w, h) if w <= h else (h, w)
    if size is None:
        if not allow_size_none:
            raise ValueError("This should never happen!!")
        if not isinstance(max_size, int):
            raise ValueError(f"max_size must be an integer when size is None, but got "
                             f"{max_size} instead.")
        new_short, new_long = int(max_size * short / long), max_size
        new_w, new_h = (new_short, new_long) if w <= h else (new_long, new_short)
    elif len(size) == 1:
        requested_new_short = size if isinstance(size, int) else size[0]
        new_short, new_long = requested_new_short, int(requested_new_short * long / short)
        if max_size is not None:
            if max_size <= requested_new_short:
                raise ValueError(f"max_size = {max_size} must be strictly greater than the "
                                 f"requested size for the smaller edge size = {size}")
            if new_long > max_size:
                new_short, new_long = int(max_size * new_short / new_long), max_size
        new_w, new_h = (new_short, new_long) if w <= h else (new_long, new_short)
    else:
        new_w, new_h = size[1], size[0]
    return [new_h, new_w]


_TENSOR_RESIZE_MODES = ("nearest", "nearest-exact", "bilinear", "bicubic")


def resize(img, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
    """Resize to ``size`` (``(h, w)``, or the smaller edge's length keeping the aspect
    ratio). Tensors resize with ``interpolate`` (antialiased by default for bilinear and
    bicubic), PIL images with Pillow (always antialiased)."""
    interpolation = _check_interpolation(interpolation)
    if isinstance(size, (list, tuple)):
        if len(size) not in [1, 2]:
            raise ValueError(f"Size must be an int or a 1 or 2 element tuple/list, not a "
                             f"{len(size)} element tuple/list")
        if max_size is not None and len(size) != 1:
            raise ValueError("max_size should only be passed if size specifies the length of "
                             "the smaller edge, i.e. size should be an int or a sequence of "
                             "length 1 in torchscript mode.")
    _, image_height, image_width = get_dimensions(img)
    if isinstance(size, int):
        size = [size]
    output_size = _compute_resized_output_size((image_height, image_width), size, max_size)
    if [image_height, image_width] == output_size:
        return img
    if not isinstance(img, ember.Tensor):
        if antialias is False:
            warnings.warn("Anti-alias option is always applied for PIL Image input. Argument "
                          "antialias is ignored.")
        return F_pil.resize(img, size=output_size,
                            interpolation=pil_modes_mapping[interpolation])
    if interpolation.value not in _TENSOR_RESIZE_MODES:
        raise ValueError(f"Interpolation mode {interpolation} is unsupported with Tensor "
                         f"input: use one of {_TENSOR_RESIZE_MODES} or a PIL image")
    return F_t.resize(img, size=output_size, interpolation=interpolation.value,
                      antialias=antialias)


def pad(img, padding, fill=0, padding_mode="constant"):
    """Pad the borders: ``padding`` is one int, ``(left/right, top/bottom)`` or
    ``(left, top, right, bottom)``; mode ``constant``, ``edge``, ``reflect`` or ``symmetric``."""
    if not isinstance(img, ember.Tensor):
        return F_pil.pad(img, padding=padding, fill=fill, padding_mode=padding_mode)
    return F_t.pad(img, padding=padding, fill=fill, padding_mode=padding_mode)


def crop(img, top, left, height, width):
    """The ``height x width`` window at ``(top, left)``; outside the image reads 0."""
    if not isinstance(img, ember.Tensor):
        return F_pil.crop(img, top, left, height, width)
    return F_t.crop(img, top, left, height, width)


def center_crop(img, output_size):
    """The central window of ``output_size``, zero-padded first if the image is smaller."""
    if isinstance(output_size, numbers.Number):
        output_size = (int(output_size), int(output_size))
    elif isinstance(output_size, (tuple, list)) and len(output_size) == 1:
        output_size = (output_size[0], output_size[0])
    _, image_height, image_width = get_dimensions(img)
    crop_height, crop_width = output_size
    if crop_width > image_width or crop_height > image_height:
        padding_ltrb = [
            (crop_width - image_width) // 2 if crop_width > image_width else 0,
            (crop_height - image_height) // 2 if crop_height > image_height else 0,
            (crop_width - image_width + 1) // 2 if crop_width > image_width else 0,
            (crop_height - image_height + 1) // 2 if crop_height > image_height else 0,
        ]
        img = pad(img, padding_ltrb, fill=0)
        _, image_height, image_width = get_dimensions(img)
        if crop_width == image_width and crop_height == image_height:
            return img
    crop_top = int(round((image_height - crop_height) / 2.0))
    crop_left = int(round((image_width - crop_width) / 2.0))
    return crop(img, crop_top, crop_left, crop_height, crop_width)


def resized_crop(img, top, left, height, width, size, interpolation=InterpolationMode.BILINEAR,
                 antialias=True):
    """``crop`` then ``resize``."""
    img = crop(img, top, left, height, width)
    return resize(img, size, interpolation, antialias=antialias)


def hflip(img):
    if not isinstance(img, ember.Tensor):
        return F_pil.hflip(img)
    return F_t.hflip(img)


def vflip(img):
    if not isinstance(img, ember.Tensor):
        return F_pil.vflip(img)
    return F_t.vflip(img)


def five_crop(img, size):
    """The four corner crops and the centre crop, in torchvision's order
    ``(tl, tr, bl, br, center)``."""
    if isinstance(size, numbers.Number):
        size = (int(size), int(size))
    elif isinstance(size, (tuple, list)) and len(size) == 1:
        size = (size[0], size[0])
    if len(size) != 2:
        raise ValueError("Please provide only two dimensions (h, w) for size.")
    _, image_height, image_width = get_dimensions(img)
    crop_height, crop_width = size
    if crop_width > image_width or crop_height > image_height:
        raise ValueError(f"Requested crop size {size} is bigger than input size "
                         f"{(image_height, image_width)}")
    tl = crop(img, 0, 0, crop_height, crop_width)
    tr = crop(img, 0, image_width - crop_width, crop_height, crop_width)
    bl = crop(img, image_height - crop_height, 0, crop_height, crop_width)
    br = crop(img, image_height - crop_height, image_width - crop_width, crop_height,
              crop_width)
    center = center_crop(img, [crop_height, crop_width])
    return tl, tr, bl, br, center


def ten_crop(img, size, vertical_flip=False):
    """``five_crop`` of the image and of its flip (horizontal unless ``vertical_flip``)."""
    if isinstance(size, numbers.Number):
        size = (int(size), int(size))
    elif isinstance(size, (tuple, list)) and len(size) == 1:
        size = (size[0], size[0])
    if len(size) != 2:
        raise ValueError("Please provide only two dimensions (h, w) for size.")
    first_five = five_crop(img, size)
    img = vflip(img) if vertical_flip else hflip(img)
    return first_five + five_crop(img, size)


def adjust_brightness(img, brightness_factor):
    if not isinstance(img, ember.Tensor):
        return F_pil.adjust_brightness(img, brightness_factor)
    return F_t.adjust_brightness(img, brightness_factor)


def adjust_contrast(img, contrast_factor):
    if not isinstance(img, ember.Tensor):
        return F_pil.adjust_contrast(img, contrast_factor)
    return F_t.adjust_contrast(img, contrast_factor)


def adjust_saturation(img, saturation_factor):
    if not isinstance(img, ember.Tensor):
        return F_pil.adjust_saturation(img, saturation_factor)
    return F_t.adjust_saturation(img, saturation_factor)


def adjust_hue(img, hue_factor):
    if not isinstance(img, ember.Tensor):
        return F_pil.adjust_hue(img, hue_factor)
    return F_t.adjust_hue(img, hue_factor)


def adjust_gamma(img, gamma, gain=1):
    if not isinstance(img, ember.Tensor):
        return F_pil.adjust_gamma(img, gamma, gain)
    return F_t.adjust_gamma(img, gamma, gain)


def _get_inverse_affine_matrix(center, angle, translate, scale, shear, inverted=True):
    # The affine map is T * C * RotateScaleShear * C^-1 (T translation, C the centre);
    # image warps need its inverse, which has this closed form.
    rot = math.radians(angle)
    sx = math.radians(shear[0])
    sy = math.radians(shear[1])
    cx, cy = center
    tx, ty = translate
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    if inverted:
        matrix = [x / scale for x in (d, -b, 0.0, -c, a, 0.0)]
        matrix[2] += matrix[0] * (-cx - tx) + matrix[1] * (-cy - ty)
        matrix[5] += matrix[3] * (-cx - tx) + matrix[4] * (-cy - ty)
        matrix[2] += cx
        matrix[5] += cy
    else:
        matrix = [x * scale for x in (a, b, 0.0, c, d, 0.0)]
        matrix[2] += matrix[0] * (-cx) + matrix[1] * (-cy)
        matrix[5] += matrix[3] * (-cx) + matrix[4] * (-cy)
        matrix[2] += cx + tx
        matrix[5] += cy + ty
    return matrix


def rotate(img, angle, interpolation=InterpolationMode.NEAREST, expand=False, center=None,
           fill=None):
    """Rotate by ``angle`` degrees counter-clockwise about ``center`` (the image centre by
    default); ``expand`` grows the output to hold the whole rotated image."""
    interpolation = _check_interpolation(interpolation)
    if not isinstance(angle, (int, float)):
        raise TypeError("Argument angle should be int or float")
    if center is not None and not isinstance(center, (list, tuple)):
        raise TypeError("Argument center should be a sequence")
    if not isinstance(img, ember.Tensor):
        return F_pil.rotate(img, angle=angle, interpolation=pil_modes_mapping[interpolation],
                            expand=expand, center=center, fill=fill)
    center_f = [0.0, 0.0]
    if center is not None:
        _, height, width = get_dimensions(img)
        center_f = [1.0 * (c - s * 0.5) for c, s in zip(center, [width, height])]
    matrix = _get_inverse_affine_matrix(center_f, -angle, [0.0, 0.0], 1.0, [0.0, 0.0])
    return F_t.rotate(img, matrix=matrix, interpolation=interpolation.value, expand=expand,
                      fill=fill)


def affine(img, angle, translate, scale, shear, interpolation=InterpolationMode.NEAREST,
           fill=None, center=None):
    """Affine transformation keeping the image centre (or ``center``) invariant: rotation by
    ``angle``, ``translate`` in pixels, ``scale``, and ``shear`` in degrees (x, or (x, y))."""
    interpolation = _check_interpolation(interpolation)
    if not isinstance(angle, (int, float)):
        raise TypeError("Argument angle should be int or float")
    if not isinstance(translate, (list, tuple)):
        raise TypeError("Argument translate should be a sequence")
    if len(translate) != 2:
        raise ValueError("Argument translate should be a sequence of length 2")
    if scale <= 0.0:
        raise ValueError("Argument scale should be positive")
    if not isinstance(shear, (numbers.Number, list, tuple)):
        raise TypeError("Shear should be either a single value or a sequence of two values")
    if isinstance(angle, int):
        angle = float(angle)
    translate = list(translate)
    if isinstance(shear, numbers.Number):
        shear = [shear, 0.0]
    shear = list(shear)
    if len(shear) == 1:
        shear = [shear[0], shear[0]]
    if len(shear) != 2:
        raise ValueError(f"Shear should be a sequence containing two values. Got {shear}")
    if center is not None and not isinstance(center, (list, tuple)):
        raise TypeError("Argument center should be a sequence")
    _, height, width = get_dimensions(img)
    if not isinstance(img, ember.Tensor):
        if center is None:
            center = [width * 0.5, height * 0.5]
        matrix = _get_inverse_affine_matrix(center, angle, translate, scale, shear)
        return F_pil.affine(img, matrix=matrix, interpolation=pil_modes_mapping[interpolation],
                            fill=fill)
    center_f = [0.0, 0.0]
    if center is not None:
        center_f = [1.0 * (c - s * 0.5) for c, s in zip(center, [width, height])]
    translate_f = [1.0 * t for t in translate]
    matrix = _get_inverse_affine_matrix(center_f, angle, translate_f, scale, shear)
    return F_t.affine(img, matrix=matrix, interpolation=interpolation.value, fill=fill)


def _get_perspective_coeffs(startpoints, endpoints):
    # The 8 homography coefficients mapping output to input pixels, by least squares on the
    # four point correspondences (as torchvision: float64 solve, float32 result).
    if len(startpoints) != 4 or len(endpoints) != 4:
        raise ValueError(f"Please provide exactly four corners, got {len(startpoints)} "
                         f"startpoints and {len(endpoints)} endpoints.")
    a = np.zeros((8, 8), dtype=np.float64)
    for i, (p1, p2) in enumerate(zip(endpoints, startpoints)):
        a[2 * i] = [p1[0], p1[1], 1, 0, 0, 0, -p2[0] * p1[0], -p2[0] * p1[1]]
        a[2 * i + 1] = [0, 0, 0, p1[0], p1[1], 1, -p2[1] * p1[0], -p2[1] * p1[1]]
    b = np.asarray(startpoints, dtype=np.float64).reshape(8)
    res = np.linalg.lstsq(a, b, rcond=None)[0].astype(np.float32)
    return res.tolist()


def perspective(img, startpoints, endpoints, interpolation=InterpolationMode.BILINEAR,
                fill=None):
    """The projective warp taking the four ``startpoints`` (corners, ``[x, y]``) to
    ``endpoints``."""
    coeffs = _get_perspective_coeffs(startpoints, endpoints)
    interpolation = _check_interpolation(interpolation)
    if not isinstance(img, ember.Tensor):
        return F_pil.perspective(img, coeffs, interpolation=pil_modes_mapping[interpolation],
                                 fill=fill)
    return F_t.perspective(img, coeffs, interpolation=interpolation.value, fill=fill)


def to_grayscale(img, num_output_channels=1):
    """A PIL image in grayscale (``L``), or as three equal channels."""
    if isinstance(img, ember.Tensor):
        raise TypeError("Input should be PIL Image; use rgb_to_grayscale for tensors")
    return F_pil.to_grayscale(img, num_output_channels)


def rgb_to_grayscale(img, num_output_channels=1):
    """Luma ``0.2989 R + 0.587 G + 0.114 B`` (ITU-R 601-2), as 1 or 3 channels."""
    if not isinstance(img, ember.Tensor):
        return F_pil.to_grayscale(img, num_output_channels)
    return F_t.rgb_to_grayscale(img, num_output_channels)


def erase(img, i, j, h, w, v, inplace=False):
    """Overwrite the ``h x w`` window at ``(i, j)`` of an image tensor with ``v``."""
    if not isinstance(img, ember.Tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(img)}")
    return F_t.erase(img, i, j, h, w, v, inplace=inplace)


def gaussian_blur(img, kernel_size, sigma=None):
    """Gaussian blur with an odd ``kernel_size`` and ``sigma`` per axis (by default
    ``0.3 * ((ksize - 1) * 0.5 - 1) + 0.8``, i.e. ``0.15 * ksize + 0.35``); borders reflect."""
    if not isinstance(kernel_size, (int, list, tuple)):
        raise TypeError(f"kernel_size should be int or a sequence of integers. Got "
                        f"{type(kernel_size)}")
    if isinstance(kernel_size, int):
        kernel_size = [kernel_size, kernel_size]
    if len(kernel_size) != 2:
        raise ValueError(f"If kernel_size is a sequence its length should be 2. Got "
                         f"{len(kernel_size)}")
    for ksize in kernel_size:
        if ksize % 2 == 0 or ksize < 0:
            raise ValueError(f"kernel_size should have odd and positive integers. Got "
                             f"{kernel_size}")
    if sigma is None:
        sigma = [ksize * 0.15 + 0.35 for ksize in kernel_size]
    if sigma is not None and not isinstance(sigma, (int, float, list, tuple)):
        raise TypeError(f"sigma should be either float or sequence of floats. Got {type(sigma)}")
    if isinstance(sigma, (int, float)):
        sigma = [float(sigma), float(sigma)]
    if isinstance(sigma, (list, tuple)) and len(sigma) == 1:
        sigma = [sigma[0], sigma[0]]
    if len(sigma) != 2:
        raise ValueError(f"If sigma is a sequence, its length should be 2. Got {len(sigma)}")
    for s in sigma:
        if s <= 0.0:
            raise ValueError(f"sigma should have positive values. Got {sigma}")
    t_img = img
    if not isinstance(img, ember.Tensor):
        if not F_pil._is_pil_image(img):
            raise TypeError(f"img should be PIL Image or Tensor. Got {type(img)}")
        t_img = pil_to_tensor(img)
    output = F_t.gaussian_blur(t_img, kernel_size, sigma)
    if not isinstance(img, ember.Tensor):
        output = to_pil_image(output, mode=img.mode)
    return output


def invert(img):
    if not isinstance(img, ember.Tensor):
        return F_pil.invert(img)
    return F_t.invert(img)


def posterize(img, bits):
    if not (0 <= bits <= 8):
        raise ValueError(f"The number if bits should be between 0 and 8. Got {bits}")
    if not isinstance(img, ember.Tensor):
        return F_pil.posterize(img, bits)
    return F_t.posterize(img, bits)


def solarize(img, threshold):
    if not isinstance(img, ember.Tensor):
        return F_pil.solarize(img, threshold)
    return F_t.solarize(img, threshold)


def adjust_sharpness(img, sharpness_factor):
    if not isinstance(img, ember.Tensor):
        return F_pil.adjust_sharpness(img, sharpness_factor)
    return F_t.adjust_sharpness(img, sharpness_factor)


def autocontrast(img):
    if not isinstance(img, ember.Tensor):
        return F_pil.autocontrast(img)
    return F_t.autocontrast(img)


def equalize(img):
    if not isinstance(img, ember.Tensor):
        return F_pil.equalize(img)
    return F_t.equalize(img)


def elastic_transform(img, displacement, interpolation=InterpolationMode.BILINEAR, fill=None):
    """Resample the image at the identity grid plus ``displacement`` (``(1, H, W, 2)`` in
    ``grid_sample``'s normalised coordinates). PIL images go through a tensor."""
    interpolation = _check_interpolation(interpolation)
    if not isinstance(displacement, ember.Tensor):
        raise TypeError("Argument displacement should be a Tensor")
    t_img = img
    if not isinstance(img, ember.Tensor):
        if not F_pil._is_pil_image(img):
            raise TypeError(f"img should be PIL Image or Tensor. Got {type(img)}")
        t_img = pil_to_tensor(img)
    shape = t_img.shape
    shape = (1,) + shape[-2:] + (2,)
    if tuple(displacement.shape) != shape:
        raise ValueError(f"Argument displacement shape should be {shape}, but given "
                         f"{tuple(displacement.shape)}")
    output = F_t.elastic_transform(t_img, displacement, interpolation=interpolation.value,
                                   fill=fill)
    if not isinstance(img, ember.Tensor):
        output = to_pil_image(output, mode=img.mode)
    return output
