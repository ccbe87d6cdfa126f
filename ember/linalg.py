"""``ember.linalg``: torch.linalg's functions. The ops live in ``ember/ops/decompositions.py``
(with their backward formulas); this module only gives them their ``linalg`` names."""
from .ops import decompositions as _decompositions
from .ops.linalg import matmul  # noqa: F401

LinAlgError = _decompositions.LinAlgError

for _name in _decompositions.LINALG:
    if _name in ("matmul", "LinAlgError"):
        continue
    globals()[_name] = _decompositions.LINALG_OVERRIDES.get(_name) or getattr(_decompositions,
                                                                              _name)
del _name

__all__ = list(_decompositions.LINALG)
