"""``ember.nn.intrinsic.quantized``: torch's older path for ``ember.ao.nn.intrinsic.quantized``."""
from ....ao.nn.intrinsic.quantized import *  # noqa: F401,F403
from ....ao.nn.intrinsic.quantized import __all__  # noqa: F401
