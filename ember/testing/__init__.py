"""``ember.testing``: comparing results and making test inputs, as ``torch.testing``.

``assert_close`` compares tensors, scalars and (nested) sequences and mappings of them with
torch's rules and messages; ``make_tensor`` makes a random tensor of a given shape, dtype and
device in torch's value ranges; ``assert_allclose`` is the deprecated older form.
"""
from ._comparison import assert_close, assert_allclose  # noqa: F401
from ._creation import make_tensor  # noqa: F401

__all__ = ["assert_close", "make_tensor", "assert_allclose"]
