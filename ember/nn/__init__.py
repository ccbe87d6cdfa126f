"""``ember.nn``: modules, parameters, functional, init and utils, as ``torch.nn``."""
from .._submodules import import_parts

import_parts(__name__, ["parameter"], globals())
from .modules import *  # noqa: E402,F401,F403
from . import functional  # noqa: E402,F401
from . import modules  # noqa: E402,F401
import_parts(__name__, ["init"], {})
import_parts(__name__, ["utils"], {})


def __getattr__(name):
    import importlib
    if name in ("init", "utils", "parameter", "parallel", "quantized", "intrinsic", "qat"):
        return importlib.import_module(f"{__name__}.{name}")
    if name == "DataParallel":
        return importlib.import_module(f"{__name__}.parallel").DataParallel
    raise AttributeError(f"module 'ember.nn' has no attribute '{name}'")
