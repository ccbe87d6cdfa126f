"""Utilities, as ``torch.utils``."""
from . import data  # noqa: F401
from . import dlpack, safetensors  # noqa: F401,E402  (safetensors imports its package lazily)


def __getattr__(name):
    # ember.utils is imported by `import ember` before the tensor and autograd modules that
    # checkpoint needs exist, so it loads on first use (which also keeps `import ember` fast).
    if name == "checkpoint":
        import importlib
        return importlib.import_module(f"{__name__}.checkpoint")
    raise AttributeError(f"module '{__name__}' has no attribute '{name}'")
