"""``ember.vision.io``, as ``torchvision.io``'s image half: reading, decoding and encoding
PNG and JPEG (and what else Pillow opens) to and from ``(C, H, W)`` uint8 tensors. Pillow
does the coding (the ``vision`` extra), where torchvision links libpng and libjpeg: PNG
pixels are identical, JPEG pixels are Pillow's libjpeg's. Ember reads no video."""
from .image import (ImageReadMode, decode_image, decode_jpeg, decode_png, decode_webp,
                    encode_jpeg, encode_png, read_file, read_image, write_file, write_jpeg,
                    write_png)

__all__ = ["ImageReadMode", "decode_image", "decode_jpeg", "decode_png", "decode_webp",
           "encode_jpeg", "encode_png", "read_file", "read_image", "write_file", "write_jpeg",
           "write_png"]
