from .linear import Linear  # noqa: F401
from .conv import Conv1d, Conv2d, Conv3d  # noqa: F401

__all__ = ["Linear", "Conv1d", "Conv2d", "Conv3d"]
