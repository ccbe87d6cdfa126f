"""Image files to and from tensors through Pillow."""
import io
import os
from enum import Enum

import numpy as np

import ember


def _pil():
    try:
        from PIL import Image, ImageOps
    except ImportError as e:
        raise ImportError("ember.vision.io codes images with Pillow: pip install "
                          "'ember[vision]'") from e
    return Image, ImageOps


class ImageReadMode(Enum):
    """The channels to decode to: as stored, gray, gray with alpha, RGB, RGB with alpha."""
    UNCHANGED = 0
    GRAY = 1
    GRAY_ALPHA = 2
    RGB = 3
    RGB_ALPHA = 4
    RGBA = RGB_ALPHA


_MODE_TO_PIL = {ImageReadMode.GRAY: "L", ImageReadMode.GRAY_ALPHA: "LA",
                ImageReadMode.RGB: "RGB", ImageReadMode.RGB_ALPHA: "RGBA"}


def read_file(path):
    """The bytes of a file as a 1-D uint8 tensor."""
    with open(os.fspath(path), "rb") as f:
        data = f.read()
    return ember.from_numpy(np.frombuffer(data, dtype=np.uint8).copy())


def write_file(filename, data):
    """Write a 1-D uint8 tensor's bytes to ``filename``."""
    _check_bytes(data, "write_file")
    with open(os.fspath(filename), "wb") as f:
        f.write(data.cpu().numpy().tobytes())


def _check_bytes(data, name):
    if not isinstance(data, ember.Tensor) or data.dtype != ember.uint8 or data.ndim != 1:
        raise RuntimeError(f"{name}: expected a 1-D uint8 tensor of encoded bytes, got "
                           f"{getattr(data, 'dtype', type(data))} of shape "
                           f"{tuple(getattr(data, 'shape', ()))}")


def _to_mode(img, mode):
    if isinstance(mode, str):
        mode = ImageReadMode[mode.upper()]
    if mode == ImageReadMode.UNCHANGED:
        if img.mode == "P":
            # Palette images decode to their colours, with alpha when the palette has it.
            return img.convert("RGBA" if "transparency" in img.info else "RGB")
        if img.mode in ("1", "CMYK", "YCbCr", "I;16B"):
            return img.convert("L" if img.mode == "1" else "RGB")
        return img
    return img.convert(_MODE_TO_PIL[mode])


def _pil_to_tensor(img):
    if img.mode in ("I;16", "I;16L", "I;16B", "I"):
        # torchvision returns uint16 for 16-bit PNGs; Ember has no uint16 dtype.
        raise NotImplementedError(f"decoding a 16-bit ({img.mode}) image needs uint16, which "
                                  f"Ember does not have: decode with ImageReadMode.GRAY or "
                                  f"ImageReadMode.RGB for 8 bits")
    arr = np.array(img)
    arr = arr.reshape(img.size[1], img.size[0], -1)
    return ember.from_numpy(np.ascontiguousarray(arr.transpose(2, 0, 1)))


def _decode(data, mode, apply_exif_orientation, expect=None):
    Image, ImageOps = _pil()
    if isinstance(data, (str, os.PathLike)):
        data = read_file(data)
    _check_bytes(data, "decode_image")
    img = Image.open(io.BytesIO(data.cpu().numpy().tobytes()))
    if expect is not None and img.format not in expect:
        raise RuntimeError(f"Expected a {'/'.join(expect)} image, got {img.format}")
    if apply_exif_orientation:
        img = ImageOps.exif_transpose(img)
    img.load()
    return _pil_to_tensor(_to_mode(img, mode))


def decode_image(input, mode=ImageReadMode.UNCHANGED, apply_exif_orientation=False):
    """Decode an encoded image (a 1-D uint8 tensor, or a path) to ``(C, H, W)`` uint8."""
    return _decode(input, mode, apply_exif_orientation)


def decode_png(input, mode=ImageReadMode.UNCHANGED, apply_exif_orientation=False):
    return _decode(input, mode, apply_exif_orientation, expect=("PNG",))


def decode_jpeg(input, mode=ImageReadMode.UNCHANGED, device="cpu",
                apply_exif_orientation=False):
    """Decode JPEG bytes (or a list of them) on the CPU; ``device`` places the result."""
    if isinstance(input, (list, tuple)):
        return [decode_jpeg(x, mode, device, apply_exif_orientation) for x in input]
    return _decode(input, mode, apply_exif_orientation, expect=("JPEG", "MPO")).to(device)


def decode_webp(input, mode=ImageReadMode.UNCHANGED):
    return _decode(input, mode, False, expect=("WEBP",))


def read_image(path, mode=ImageReadMode.UNCHANGED, apply_exif_orientation=False):
    """``decode_image(read_file(path))``."""
    return decode_image(read_file(path), mode, apply_exif_orientation)


def _tensor_to_pil(input, name):
    Image = _pil()[0]
    if not isinstance(input, ember.Tensor) or input.ndim != 3:
        raise RuntimeError(f"{name}: expected a (C, H, W) tensor, got "
                           f"{tuple(getattr(input, 'shape', ()))}")
    if input.dtype != ember.uint8 or input.shape[0] not in (1, 3, 4, 2):
        raise RuntimeError(f"{name}: expected a uint8 image with 1, 2, 3 or 4 channels, got "
                           f"{input.dtype} with {input.shape[0]} channels")
    arr = np.ascontiguousarray(input.cpu().numpy().transpose(1, 2, 0))
    return Image.fromarray(arr[:, :, 0] if arr.shape[2] == 1 else arr)


def _encode(img, fmt, **options):
    buf = io.BytesIO()
    img.save(buf, format=fmt, **options)
    return ember.from_numpy(np.frombuffer(buf.getvalue(), dtype=np.uint8).copy())


def encode_png(input, compression_level=6):
    """PNG bytes of a ``(C, H, W)`` uint8 image, as a 1-D uint8 tensor."""
    if not 0 <= compression_level <= 9:
        raise ValueError(f"Compression level should be between 0 and 9, got "
                         f"{compression_level}")
    return _encode(_tensor_to_pil(input, "encode_png"), "PNG", compress_level=compression_level)


def write_png(input, filename, compression_level=6):
    write_file(filename, encode_png(input, compression_level))


def encode_jpeg(input, quality=75):
    """JPEG bytes of a ``(C, H, W)`` uint8 image with 1 or 3 channels (or of a list)."""
    if not 1 <= quality <= 100:
        raise ValueError("Image quality should be a positive number between 1 and 100")
    if isinstance(input, (list, tuple)):
        return [encode_jpeg(x, quality) for x in input]
    if input.shape[0] not in (1, 3):
        raise RuntimeError(f"encode_jpeg: expected 1 or 3 channels, got {input.shape[0]}")
    return _encode(_tensor_to_pil(input, "encode_jpeg"), "JPEG", quality=quality)


def write_jpeg(input, filename, quality=75):
    write_file(filename, encode_jpeg(input, quality))
