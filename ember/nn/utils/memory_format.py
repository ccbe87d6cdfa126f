"""Laying convolution weights out in a memory format, as ``torch.nn.utils.memory_format``:
only the (transposed) convolutions' weights change layout, recursively through the module
tree; shapes and values stay the same."""
from ..modules.conv import Conv2d, Conv3d, ConvTranspose2d, ConvTranspose3d

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert_weights(module, memory_format, classes):
    if isinstance(module, classes):
        # A copy laid out in ``memory_format`` (channels_last: NHWC strides) becomes the
        # parameter's data; the Parameter object, and so any optimizer holding it, is kept.
        module.weight.data = module.weight.detach().clone(memory_format=memory_format)
    for child in module.children():
        _convert_weights(child, memory_format, classes)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """Give every ``Conv2d``/``ConvTranspose2d`` weight in ``module`` (itself included) the
    layout ``memory_format``, e.g. ``ember.channels_last``; returns ``module``."""
    return _convert_weights(module, memory_format, (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module, memory_format):
    """Give every ``Conv3d``/``ConvTranspose3d`` weight in ``module`` (itself included) the
    layout ``memory_format``, e.g. ``ember.channels_last_3d``; returns ``module``."""
    return _convert_weights(module, memory_format, (Conv3d, ConvTranspose3d))
