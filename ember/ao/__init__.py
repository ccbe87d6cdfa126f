"""``ember.ao``: architecture optimisation (quantization), as ``torch.ao``."""
from . import quantization  # noqa: F401
