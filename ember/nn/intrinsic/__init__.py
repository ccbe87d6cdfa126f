"""``ember.nn.intrinsic``: torch's older path for ``ember.ao.nn.intrinsic`` (the same modules)."""
from ...ao.nn.intrinsic import *  # noqa: F401,F403
from ...ao.nn.intrinsic import __all__, _FusedModule  # noqa: F401
from . import qat, quantized  # noqa: F401
