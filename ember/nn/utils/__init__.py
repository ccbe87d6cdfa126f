"""``ember.nn.utils``: gradient clipping, parameter/vector conversion, parametrizations."""
from .._submodules import import_parts

import_parts(__name__, ["clip_grad", "convert_parameters"], globals())
