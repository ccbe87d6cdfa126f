from .conv_fused import *  # noqa: F401,F403
from .linear_relu import LinearReLU  # noqa: F401
from .linear_fused import LinearBn1d  # noqa: F401
from . import conv_fused as _conv_fused

__all__ = [*_conv_fused.__all__, "LinearReLU", "LinearBn1d"]
