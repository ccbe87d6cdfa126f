"""Rows for ``ember/ops/distance.py``, called as ``nn.functional``: ``F.pairwise_distance``
(every ``p``, ``eps``, ``keepdim``, broadcasting, unbatched vectors), ``F.cosine_similarity``
(``dim``, ``eps``, broadcasting) and ``F.pdist``. (``ops_cumulative.py`` holds the ``torch.``
spellings' basic rows and ``torch.cdist``, which ``ops/cumulative.py`` implements.)
"""
import math

from .core import OpInfo, Sample

DTYPES = ("float32", "float64", "bfloat16")


def F(lib):
    return lib.nn.functional


def _errors(name, fn, samples):
    """Calls torch refuses: Ember raises the same exception type."""
    return OpInfo(name, fn, samples, dtypes=("float32",), grad=False, gradcheck=False)


def _pairwise(lib, a, b, **kw):
    return F(lib).pairwise_distance(a, b, **kw)


def _cosine(lib, a, b, **kw):
    return F(lib).cosine_similarity(a, b, **kw)


PAIRWISE = [
    Sample([(4, 3), (4, 3)]),
    Sample([(4, 3), (4, 3)], {"p": 1.0}),
    Sample([(4, 3), (4, 3)], {"p": 3.0}),
    Sample([(4, 3), (4, 3)], {"p": 0.5}),
    Sample([(4, 3), (4, 3)], {"p": math.inf}),
    Sample([(4, 3), (4, 3)], {"eps": 0.1, "keepdim": True}),
    Sample([(4, 3), (3,)]),                    # broadcast
    Sample([(2, 4, 3), (4, 3)], {"keepdim": True}),
    Sample([(3,), (3,)]),                      # unbatched
    Sample([(0, 3), (0, 3)]),                  # empty batch
    Sample([(4, 3), (4, 3)], noncontig=True),
]
COSINE = [
    Sample([(4, 3), (4, 3)]),
    Sample([(4, 3), (4, 3)], {"dim": 0}),
    Sample([(2, 4, 3), (4, 3)], {"dim": -1}),  # broadcast
    Sample([(2, 4, 3), (2, 1, 3)], {"dim": 2, "eps": 0.5}),
    Sample([(3,), (3,)], {"dim": 0}),          # unbatched
    Sample([(0, 3), (0, 3)]),                  # empty batch
    Sample([(4, 0), (4, 0)]),                  # empty vectors: the norms clamp to eps
    Sample([(4, 3), (4, 3)], noncontig=True),
]
PDIST = [
    Sample([(5, 3)]),
    Sample([(5, 3)], {"p": 1.0}),
    Sample([(5, 3)], {"p": 3.0}),
    Sample([(5, 3)], {"p": math.inf}),
    Sample([(2, 3)]),
    Sample([(1, 3)]),                          # no pairs
    Sample([(5, 3)], noncontig=True),
]

OPS = [
    OpInfo("F.pairwise_distance", _pairwise, PAIRWISE, dtypes=DTYPES),
    OpInfo("F.cosine_similarity", _cosine, COSINE, dtypes=DTYPES),
    OpInfo("F.pdist", lambda lib, x, **kw: F(lib).pdist(x, **kw), PDIST, dtypes=DTYPES),
    # Forward only: torch's pdist backward of an input with no rows crashes the process.
    OpInfo("F.pdist_no_rows", lambda lib, x: F(lib).pdist(x), [Sample([(0, 3)])],
           dtypes=DTYPES, grad=False, gradcheck=False),
    _errors("F.cosine_similarity_errors", _cosine, [
        Sample([(4, 3), (2, 3)]),              # shapes do not broadcast
        Sample([(4, 3), (4, 3)], {"eps": -1.0}),
    ]),
    _errors("F.pdist_errors", lambda lib, x, **kw: F(lib).pdist(x, **kw), [
        Sample([(2, 5, 3)]),
        Sample([(5, 3)], {"p": -1.0}),
    ]),
]
