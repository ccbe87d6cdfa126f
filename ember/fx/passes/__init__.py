"""Graph passes over GraphModules, as ``torch.fx.passes``."""
from . import shape_prop  # noqa: F401
