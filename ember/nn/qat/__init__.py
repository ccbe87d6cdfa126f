"""``ember.nn.qat``: torch's older path for ``ember.ao.nn.qat`` (the same modules)."""
from ...ao.nn.qat import *  # noqa: F401,F403
from ...ao.nn.qat import __all__  # noqa: F401
