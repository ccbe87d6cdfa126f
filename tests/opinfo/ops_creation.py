"""Rows for the factories of ember/ops/creation.py that have a tensor to compare: vander (built
from one) and tril_indices/triu_indices (whose one tensor argument names the device). The other
factories are tested in tests/test_creation.py."""
from .core import OpInfo, Sample


def _refused(name, fn, *shapes, dtypes=("float32",)):
    """A row whose inputs PyTorch refuses: Ember must raise the same exception type."""
    return OpInfo(name, fn, [Sample(shapes)], dtypes=dtypes, grad=False, gradcheck=False)


OPS = [
    OpInfo("vander", lambda lib, x, **kw: lib.vander(x, **kw),
           [Sample(((4,),)), Sample(((4,),), {"N": 3, "increasing": True}),
            Sample(((3,),), {"N": 1}), Sample(((3,),), {"N": 0}), Sample(((0,),)),
            Sample(((4,),), noncontig=True)],
           # PyTorch's own backward of vander fails (it writes into a saved view); Ember's
           # gradient is checked by gradcheck here and against torch.pow in test_creation.py.
           dtypes=("float32", "float64", "float16", "int64", "int32", "bool"), grad=False),
    _refused("vander_2d", lambda lib, x: lib.vander(x), (2, 2)),
    _refused("vander_negative_n", lambda lib, x: lib.vander(x, -1), (3,)),
    # Factories: the one tensor argument only names the device to build on.
    OpInfo("tril_indices",
           lambda lib, like, *a, **kw: lib.tril_indices(*a, **kw, device=like.device),
           [Sample(((1,),), args=(3, 4)), Sample(((1,),), args=(4, 3, 1)),
            Sample(((1,),), args=(4, 3, -2)), Sample(((1,),), args=(0, 3)),
            Sample(((1,),), args=(5, 2, 7))],
           dtypes=("float32",), grad=False, gradcheck=False),
    OpInfo("triu_indices",
           lambda lib, like, *a, **kw: lib.triu_indices(*a, **kw, device=like.device),
           [Sample(((1,),), args=(3, 4)), Sample(((1,),), args=(4, 3, 1)),
            Sample(((1,),), args=(4, 3, -2)), Sample(((1,),), args=(3, 0)),
            Sample(((1,),), args=(5, 2, -7))],
           dtypes=("float32",), grad=False, gradcheck=False),
    OpInfo("tril_indices_int32",
           lambda lib, like: lib.tril_indices(3, 3, dtype=lib.int32, device=like.device),
           [Sample(((1,),))], dtypes=("float32",), grad=False, gradcheck=False),
    _refused("tril_indices_negative", lambda lib: lib.tril_indices(-1, 3)),
    _refused("triu_indices_float", lambda lib: lib.triu_indices(3, 3, dtype=lib.float32)),
]
