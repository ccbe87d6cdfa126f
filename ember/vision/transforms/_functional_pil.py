"""The Pillow kernels behind ``transforms.functional``: each is the Pillow call torchvision
makes, so PIL inputs give torchvision's exact pixels. Pillow comes with the ``vision`` extra
and is imported on first use."""
import numbers

import numpy as np


def _pil():
    try:
        from PIL import Image, ImageEnhance, ImageOps
    except ImportError as e:
        raise ImportError("ember.vision's PIL image support needs Pillow: "
                          "pip install 'ember[vision]'") from e
    return Image, ImageEnhance, ImageOps


def _is_pil_image(img):
    try:
        from PIL import Image
    except ImportError:
        return False
    return isinstance(img, Image.Image)


def _check(img):
    if not _is_pil_image(img):
        raise TypeError(f"img should be PIL Image. Got {type(img)}")


def get_dimensions(img):
    _check(img)
    channels = len(img.getbands()) if hasattr(img, "getbands") else img.channels
    width, height = img.size
    return [channels, height, width]


def get_image_size(img):
    _check(img)
    return list(img.size)


def get_image_num_channels(img):
    _check(img)
    return len(img.getbands())


def hflip(img):
    _check(img)
    return img.transpose(_pil()[0].Transpose.FLIP_LEFT_RIGHT)


def vflip(img):
    _check(img)
    return img.transpose(_pil()[0].Transpose.FLIP_TOP_BOTTOM)


def adjust_brightness(img, brightness_factor):
    _check(img)
    return _pil()[1].Brightness(img).enhance(brightness_factor)


def adjust_contrast(img, contrast_factor):
    _check(img)
    return _pil()[1].Contrast(img).enhance(contrast_factor)


def adjust_saturation(img, saturation_factor):
    _check(img)
    return _pil()[1].Color(img).enhance(saturation_factor)


def adjust_hue(img, hue_factor):
    if not (-0.5 <= hue_factor <= 0.5):
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    _check(img)
    Image = _pil()[0]
    input_mode = img.mode
    if input_mode in {"L", "1", "I", "F"}:
        return img
    h, s, v = img.convert("HSV").split()
    np_h = np.array(h, dtype=np.uint8)
    # Hue is an angle: uint8 arithmetic wraps around, as it should.
    with np.errstate(over="ignore"):
        np_h += np.int8(hue_factor * 255).astype(np.uint8)
    h = Image.fromarray(np_h, "L")
    return Image.merge("HSV", (h, s, v)).convert(input_mode)


def adjust_gamma(img, gamma, gain=1.0):
    _check(img)
    if gamma < 0:
        raise ValueError("Gamma should be a non-negative real number")
    input_mode = img.mode
    img = img.convert("RGB")
    gamma_map = [int((255 + 1 - 1e-3) * gain * pow(ele / 255.0, gamma)) for ele in range(256)]
    gamma_map = gamma_map * 3
    return img.point(gamma_map).convert(input_mode)


def _parse_fill(fill, img, name="fillcolor"):
    num_channels = get_image_num_channels(img)
    if fill is None:
        fill = 0
    if isinstance(fill, (int, float)) and num_channels > 1:
        fill = tuple([fill] * num_channels)
    if isinstance(fill, (list, tuple)):
        if len(fill) == 1:
            fill = fill * num_channels
        elif len(fill) != num_channels:
            raise ValueError(f"The number of elements in 'fill' does not match the number of "
                             f"channels of the image ({len(fill)} != {num_channels})")
        fill = tuple(fill)
    if img.mode != "F":
        fill = tuple(int(x) for x in fill) if isinstance(fill, (list, tuple)) else int(fill)
    return {name: fill}


def pad(img, padding, fill=0, padding_mode="constant"):
    _check(img)
    Image, _, ImageOps = _pil()
    if not isinstance(padding, (numbers.Number, tuple, list)):
        raise TypeError("Got inappropriate padding arg")
    if fill is not None and not isinstance(fill, (numbers.Number, tuple, list)):
        raise TypeError("Got inappropriate fill arg")
    if not isinstance(padding_mode, str):
        raise TypeError("Got inappropriate padding_mode arg")
    if isinstance(padding, list):
        padding = tuple(padding)
    if isinstance(padding, tuple) and len(padding) not in (1, 2, 4):
        raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple, not a "
                         f"{len(padding)} element tuple")
    if isinstance(padding, tuple) and len(padding) == 1:
        padding = padding[0]
    if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
    if padding_mode == "constant":
        opts = _parse_fill(fill, img, name="fill")
        if img.mode == "P":
            palette = img.getpalette()
            image = ImageOps.expand(img, border=padding, **opts)
            image.putpalette(palette)
            return image
        return ImageOps.expand(img, border=padding, **opts)
    if isinstance(padding, int):
        pad_left = pad_right = pad_top = pad_bottom = padding
    elif len(padding) == 2:
        pad_left = pad_right = padding[0]
        pad_top = pad_bottom = padding[1]
    else:
        pad_left, pad_top, pad_right, pad_bottom = padding
    p = [-pad_left, -pad_top, -pad_right, -pad_bottom]
    cropping = [max(v, 0) for v in p]
    if any(cropping):
        img = img.crop((cropping[0], cropping[1], img.width - cropping[2],
                        img.height - cropping[3]))
    pad_left, pad_top, pad_right, pad_bottom = (max(-v, 0) for v in p)
    palette = img.getpalette() if img.mode == "P" else None
    arr = np.asarray(img)
    widths = ((pad_top, pad_bottom), (pad_left, pad_right))
    if arr.ndim == 3:
        widths = widths + ((0, 0),)
    arr = np.pad(arr, widths, mode=padding_mode)
    out = Image.fromarray(arr)
    if palette is not None:
        out.putpalette(palette)
    return out


def crop(img, top, left, height, width):
    _check(img)
    return img.crop((left, top, left + width, top + height))


def resize(img, size, interpolation):
    _check(img)
    if not (isinstance(size, list) and len(size) == 2):
        raise TypeError(f"Got inappropriate size arg: {size}")
    return img.resize(tuple(size[::-1]), interpolation)


def affine(img, matrix, interpolation, fill=None):
    _check(img)
    return img.transform(img.size, _pil()[0].AFFINE, matrix, interpolation,
                         **_parse_fill(fill, img))


def rotate(img, angle, interpolation, expand=False, center=None, fill=None):
    _check(img)
    return img.rotate(angle, interpolation, expand, center, **_parse_fill(fill, img))


def perspective(img, perspective_coeffs, interpolation, fill=None):
    _check(img)
    return img.transform(img.size, _pil()[0].PERSPECTIVE, perspective_coeffs, interpolation,
                         **_parse_fill(fill, img))


def to_grayscale(img, num_output_channels):
    _check(img)
    Image = _pil()[0]
    if num_output_channels == 1:
        return img.convert("L")
    if num_output_channels == 3:
        np_img = np.array(img.convert("L"), dtype=np.uint8)
        return Image.fromarray(np.dstack([np_img, np_img, np_img]), "RGB")
    raise ValueError("num_output_channels should be either 1 or 3")


def invert(img):
    _check(img)
    return _pil()[2].invert(img)


def posterize(img, bits):
    _check(img)
    return _pil()[2].posterize(img, bits)


def solarize(img, threshold):
    _check(img)
    return _pil()[2].solarize(img, threshold)


def adjust_sharpness(img, sharpness_factor):
    _check(img)
    return _pil()[1].Sharpness(img).enhance(sharpness_factor)


def autocontrast(img):
    _check(img)
    return _pil()[2].autocontrast(img)


def equalize(img):
    _check(img)
    return _pil()[2].equalize(img)
