"""``ember.nn.quantized``: torch's older path for ``ember.ao.nn.quantized`` (the same modules)."""
from ...ao.nn.quantized import *  # noqa: F401,F403
from ...ao.nn.quantized import __all__, functional  # noqa: F401
from . import dynamic  # noqa: F401
