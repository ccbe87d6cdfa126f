from .linear_relu import LinearReLU  # noqa: F401
from .conv_relu import ConvReLU1d, ConvReLU2d, ConvReLU3d  # noqa: F401

__all__ = ["LinearReLU", "ConvReLU1d", "ConvReLU2d", "ConvReLU3d"]
