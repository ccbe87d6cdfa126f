"""The modules of ``ember.utils.benchmark``, named as torch's ``torch.utils.benchmark.utils``."""
from . import common, compare, timer  # noqa: F401
