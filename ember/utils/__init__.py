"""Utilities, as ``torch.utils``."""
from . import data  # noqa: F401
from . import dlpack, safetensors  # noqa: F401,E402  (safetensors imports its package lazily)
