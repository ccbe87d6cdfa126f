"""``ember.sparse``: PyTorch's ``torch.sparse`` namespace.

Sparse tensors themselves (layouts ``ember.sparse_coo`` and ``ember.sparse_csr``) are
``ember.Tensor`` objects (``ember/sparse/tensor.py``), made by ``ember.sparse_coo_tensor``,
``ember.sparse_csr_tensor`` or ``Tensor.to_sparse()`` (``construction.py``); their ops and
gradients are ``ember/ops/sparse.py``. Products compute on the backend's sparse-matrix
namespace, SciPy on the CPU: ``pip install 'ember[sparse]'``.
"""
from ..ops.sparse import addmm, log_softmax, softmax, sparse_mm as mm, sparse_sum as sum

__all__ = ["addmm", "mm", "sum", "softmax", "log_softmax"]
