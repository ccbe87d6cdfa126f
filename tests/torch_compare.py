"""Helpers for tests that run the same function on torch and on Ember and compare the results."""
import numpy as np
import pytest
import torch

import ember


def assert_same(expected, actual, rtol=1e-5, atol=1e-6):
    """``expected`` (from torch) and ``actual`` (from Ember) agree: tensors by shape, dtype and
    value, containers element by element, anything else by equality."""
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, ember.Tensor), f"expected a tensor, got {actual!r}"
        assert tuple(actual.shape) == tuple(expected.shape)
        assert str(actual.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
        np.testing.assert_allclose(np.asarray(actual.detach()), expected.detach().numpy(),
                                   rtol=rtol, atol=atol)
    elif isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)) and len(actual) == len(expected), actual
        for e, a in zip(expected, actual):
            assert_same(e, a, rtol, atol)
    elif isinstance(expected, dict):
        assert list(actual) == list(expected)
        for key in expected:
            assert_same(expected[key], actual[key], rtol, atol)
    else:
        assert actual == expected


def compare(fn, **tol):
    assert_same(fn(torch), fn(ember), **tol)


def compare_error(fn, gist=None):
    """Both libraries raise the same exception type; Ember's message contains PyTorch's (with
    "torch" read as "ember"), or ``gist`` when only part of it is meant to match."""
    with pytest.raises(Exception) as torch_error:
        fn(torch)
    with pytest.raises(Exception) as ember_error:
        fn(ember)
    assert type(ember_error.value) is type(torch_error.value), ember_error.value
    expected = gist if gist is not None else str(torch_error.value).replace("torch", "ember")
    assert gist is None or gist in str(torch_error.value)
    assert expected in str(ember_error.value)


def compare_writing_into_self(call):
    """``call(x, y)`` returns ``x`` itself, written in place, with torch's values."""
    def fn(lib):
        x = lib.tensor([[1.5, -2.0, 0.0], [3.0, 0.25, -1.0]], dtype=lib.float64)
        y = lib.tensor([[-1.0, 2.0, 0.5], [0.0, -3.0, 4.0]], dtype=lib.float64)
        ptr = x.data_ptr()
        out = call(x, y)
        assert out is x and x.data_ptr() == ptr
        return x
    compare(fn)
