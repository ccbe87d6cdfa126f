"""``ember.nn.utils``: gradient clipping, parameter/vector conversion, parametrizations, fusion,
and the hook-based ``weight_norm``/``spectral_norm``."""
from ..._submodules import import_parts

import_parts(__name__, ["clip_grad", "convert_parameters", "fusion", "weight_norm",
                       "spectral_norm"], globals())
# Reached as ``nn.utils.parametrize.register_parametrization`` (not re-exported), as in PyTorch.
import_parts(__name__, ["parametrize", "parametrizations", "rnn", "stateless"], {})
