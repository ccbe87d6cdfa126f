"""``ember.ao.nn.qat``: modules for quantization-aware training, as ``torch.ao.nn.qat``.

Each holds a ``weight_fake_quant`` built from its ``qconfig.weight`` and is made from the
float module by ``from_float`` (``prepare_qat`` does this for a whole model)."""
from .modules import *  # noqa: F401,F403
from .modules import __all__  # noqa: F401
