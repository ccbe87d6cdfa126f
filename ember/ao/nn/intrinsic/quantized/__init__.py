"""``ember.ao.nn.intrinsic.quantized``: int8 fused modules (linear+relu, conv+relu), as
``torch.ao.nn.intrinsic.quantized``: subclasses of the quantized Linear/Conv that apply the
ReLU before requantizing."""
from .modules import *  # noqa: F401,F403
from .modules import __all__  # noqa: F401
