"""``pad``, as ``torch.nn.functional``: the function is ``ember.ops.conv.pad`` (constant,
reflect, replicate and circular padding, each as PyTorch records it)."""
from ...ops.conv import pad

__all__ = ["pad"]
