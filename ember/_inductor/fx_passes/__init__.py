"""The graph passes ``compile_fx`` runs, in order, each on an ``ember.fx.Graph`` in place and
each returning whether it changed the graph: ``eliminate_dead_code``, ``eliminate_common_
subexpressions``, ``fold_constants``, ``fold_batch_norms`` (inference only), ``fuse_elementwise``
(inference only)."""
from .dead_code import eliminate_dead_code, is_random, has_side_effect
from .cse import eliminate_common_subexpressions
from .constant_folding import fold_constants
from .batch_norm_folding import fold_batch_norms
from .fusion import fuse_elementwise, FusedElementwise

__all__ = ["eliminate_dead_code", "eliminate_common_subexpressions", "fold_constants",
           "fold_batch_norms", "fuse_elementwise", "FusedElementwise", "is_random",
           "has_side_effect"]
