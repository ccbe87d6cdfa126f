"""Utilities, as ``torch.utils``."""
from . import dlpack, safetensors  # noqa: F401,E402  (safetensors imports its package lazily)
from .backend_registration import (  # noqa: F401
    rename_privateuse1_backend, generate_methods_for_privateuse1_backend)

# Loaded on first use (``ember.utils.data`` and ``from ember.utils.data import …`` both work):
# ember.utils is imported by `import ember` before the tensor and autograd modules that
# checkpoint needs exist, and neither the DataLoader's process machinery, checkpointing nor the
# C++ extension loader should be paid for by a script that never uses them.
_LAZY = frozenset({"data", "checkpoint", "cpp_extension", "tensorboard", "benchmark", "memory"})


def __getattr__(name):
    if name in _LAZY:
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module '{__name__}' has no attribute '{name}'")
