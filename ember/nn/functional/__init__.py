"""``ember.nn.functional``: the stateless form of every layer and loss.

The maths lives in ``ember.ops`` (an op's forward next to its backward); these files hold the
PyTorch-facing functions, argument checking and composites, one file per family."""
from ..._submodules import import_parts

import_parts(__name__, ["_activation", "_linear", "_conv", "_pooling", "_padding", "_sampling",
                        "_normalization", "_dropout", "_sparse", "_distance", "_loss", "_attention"], globals())
