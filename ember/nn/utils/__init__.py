"""``ember.nn.utils``: gradient clipping, parameter/vector conversion, parametrizations, fusion,
the hook-based ``weight_norm``/``spectral_norm``, ``skip_init`` and the convolution-weight
memory-format converters, and ``prune``."""
from ..._submodules import import_parts

import_parts(__name__, ["clip_grad", "convert_parameters", "fusion", "weight_norm",
                       "spectral_norm", "init", "memory_format"], globals())
# Reached as ``nn.utils.parametrize.register_parametrization`` (not re-exported), as in PyTorch.
import_parts(__name__, ["parametrize", "parametrizations", "rnn", "prune", "stateless"], {})
