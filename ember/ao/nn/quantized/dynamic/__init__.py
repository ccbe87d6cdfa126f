"""``ember.ao.nn.quantized.dynamic``: modules with quantized weights on float tensors, the
activations quantized at run time (torch's ``torch.ao.nn.quantized.dynamic``)."""
from .modules import *  # noqa: F401,F403
from .modules import __all__  # noqa: F401
