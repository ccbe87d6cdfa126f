"""Rows for ``ember/ops/linear.py``: ``F.linear`` (the ``addmm`` / ``mm`` forms, every input
rank, with and without a bias) and ``F.bilinear`` / ``torch.bilinear`` (the trilinear product).

Tensor arguments are (input, weight[, bias]) and (input1, input2, weight[, bias]).
"""
from .core import OpInfo, Sample

DTYPES = ("float32", "float64", "bfloat16")


def F(lib):
    return lib.nn.functional


def _errors(name, fn, samples):
    """Calls torch refuses: Ember raises the same exception type."""
    return OpInfo(name, fn, samples, dtypes=("float32",), grad=False, gradcheck=False)


def _linear(lib, x, w, b=None):
    return F(lib).linear(x, w, b)


def _bilinear(lib, x1, x2, w, b=None):
    return F(lib).bilinear(x1, x2, w, b)


LINEAR = [
    Sample([(3, 4), (5, 4), (5,)]),            # addmm
    Sample([(3, 4), (5, 4)]),                  # mm
    Sample([(2, 3, 4), (5, 4), (5,)]),         # flattened to a matrix and viewed back
    Sample([(2, 3, 4), (5, 4)]),
    Sample([(2, 1, 3, 4), (2, 4), (2,)]),
    Sample([(4,), (5, 4), (5,)]),              # unbatched
    Sample([(4,), (5, 4)]),
    Sample([(3, 4), (5, 4), ()]),              # a 0-d bias broadcasts
    Sample([(0, 4), (5, 4), (5,)]),            # empty batch
    Sample([(2, 0, 4), (5, 4)]),
    Sample([(3, 0), (5, 0), (5,)]),            # no input features: the bias alone
    Sample([(3, 4), (5, 4), (5,)], noncontig=True),
    Sample([(2, 3, 4), (5, 4), (5,)], noncontig=True),  # matmul, then the bias added
    Sample([(2, 3, 4), (5, 4)], noncontig=True),
]
# A 1-D weight without a bias is matmul's matrix-vector (or dot) product in PyTorch.
LINEAR_VECTOR_WEIGHT = [
    Sample([(3, 4), (4,)]),
    Sample([(2, 3, 4), (4,)]),
    Sample([(4,), (4,)]),
    Sample([(4,), (4,), ()]),                  # a 1-D input still takes a 0-d bias
    Sample([(0, 4), (4,)]),
    Sample([(3, 4), (4,)], noncontig=True),
]
BILINEAR = [
    Sample([(3, 4), (3, 2), (5, 4, 2), (5,)]),
    Sample([(3, 4), (3, 2), (5, 4, 2)]),
    Sample([(2, 3, 4), (2, 3, 2), (5, 4, 2), (5,)]),
    Sample([(4,), (2,), (5, 4, 2), (5,)]),     # unbatched
    Sample([(0, 4), (0, 2), (5, 4, 2), (5,)]),  # empty batch
    Sample([(3, 4), (3, 2), (5, 4, 2), (5,)], noncontig=True),
]

OPS = [
    OpInfo("F.linear", _linear, LINEAR, dtypes=DTYPES),
    OpInfo("F.linear_vector_weight", _linear, LINEAR_VECTOR_WEIGHT, dtypes=DTYPES),
    OpInfo("F.bilinear", _bilinear, BILINEAR, dtypes=DTYPES),
    OpInfo("torch.bilinear", lambda lib, x1, x2, w, b: lib.bilinear(x1, x2, w, b),
           [Sample([(3, 4), (3, 2), (5, 4, 2), (5,)])], dtypes=("float32", "float64")),
    _errors("F.linear_errors", _linear, [
        Sample([(3, 4), (5, 3)]),              # in_features
        Sample([(), (5, 4)]),                  # 0-d input
        Sample([(3, 4), (4,), (3,)]),          # a 1-D weight with a bias (addmm's mat2)
        Sample([(3, 4), ()]),                  # 0-d weight
        Sample([(3, 4), (2, 5, 4)]),           # 3-D weight
    ]),
    _errors("F.bilinear_errors", _bilinear, [
        Sample([(3, 3), (3, 2), (5, 4, 2)]),   # input1 features
        Sample([(3, 4), (3, 3), (5, 4, 2)]),   # input2 features
        Sample([(3, 4), (2, 2), (5, 4, 2)]),   # batch dimensions
    ]),
]
