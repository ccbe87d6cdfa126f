"""Operands that don't broadcast: PyTorch's RuntimeError and message, for every binary op."""
import pytest
import torch

import ember

CASES = [
    ("add", lambda lib, a, b: a + b),
    ("sub", lambda lib, a, b: lib.sub(a, b)),
    ("mul", lambda lib, a, b: lib.multiply(a, b)),
    ("div", lambda lib, a, b: a / b),
    ("floor_divide", lambda lib, a, b: a // b),
    ("remainder", lambda lib, a, b: a % b),
    ("pow", lambda lib, a, b: a ** b),
    ("atan2", lambda lib, a, b: lib.atan2(a, b)),
    ("maximum", lambda lib, a, b: lib.maximum(a, b)),
    ("eq", lambda lib, a, b: a == b),
    ("gt", lambda lib, a, b: lib.greater(a, b)),
    ("logical_and", lambda lib, a, b: lib.logical_and(a, b)),
    ("where", lambda lib, a, b: lib.where(a > 0, a, b)),
    ("add_", lambda lib, a, b: a.clone().add_(b)),
]
SHAPES = [((3,), (4,)), ((2, 3), (4, 1, 2)), ((5, 1, 3), (2, 4))]


@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("shape_a,shape_b", SHAPES)
def test_non_broadcastable_operands(name, fn, shape_a, shape_b):
    with pytest.raises(RuntimeError) as torch_error:
        fn(torch, torch.ones(shape_a), torch.ones(shape_b))
    with pytest.raises(RuntimeError) as ember_error:
        fn(ember, ember.ones(shape_a), ember.ones(shape_b))
    if "must match the size" in str(torch_error.value):
        assert str(ember_error.value) == str(torch_error.value)
