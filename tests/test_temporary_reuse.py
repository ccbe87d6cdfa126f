"""Operators on large temporaries reuse the temporary's buffer, as NumPy does: results must equal
PyTorch's, and no tensor that anything can still see may change."""
import sys

import numpy as np
import pytest
import torch

import ember
from ember.ops import _dispatch

N = 256 * 1024  # float32 elements: 1 MiB, above the reuse threshold
SUPPORTED = sys.implementation.name == "cpython" and sys.version_info < (3, 14)


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32)


@pytest.fixture
def reuses(monkeypatch):
    """A list that gets True for each result that was written into its left operand's buffer."""
    seen = []
    wrap = _dispatch._wrap

    def spy(array, dtype, like):
        seen.append(array is like._data)
        return wrap(array, dtype, like)
    monkeypatch.setattr(_dispatch, "_wrap", spy)
    return seen


def _check(e, t):
    assert str(e.dtype) == str(t.dtype).replace("torch", "ember")
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-6, atol=1e-6)


def test_reuse_switches_itself_on_only_where_it_is_sound():
    assert (_dispatch._TEMPORARY_REFS is not None) == SUPPORTED


def test_chain_of_temporaries_matches_torch_and_reuses_buffers(data, reuses):
    ex, ey = ember.tensor(data[0]), ember.tensor(data[1])
    tx, ty = torch.tensor(data[0]), torch.tensor(data[1])
    _check(((ex * 1.5 + ey) * ex - 2.0) / ey, ((tx * 1.5 + ty) * tx - 2.0) / ty)
    if SUPPORTED:
        assert reuses.count(True) == 4  # +, *, -, /: every operator but the first
    np.testing.assert_array_equal(ex.numpy(), data[0])
    np.testing.assert_array_equal(ey.numpy(), data[1])


def test_named_operands_and_aliases_are_never_written(data, reuses):
    ex, ey = ember.tensor(data[0]), ember.tensor(data[1])
    named = ex * 2.0
    before = named.numpy().copy()
    kept = [ex * 2.0]
    alias = named.detach()  # shares the buffer
    view = named[:10]
    _ = named + ey
    _ = ember.Tensor.__add__(named, 1.0)  # an explicit call hands over the caller's reference
    _ = named.__mul__(3.0)
    _ = kept[0] + 1.0
    _ = named.detach() + 1.0
    _ = named.detach().view(-1) + 1.0
    np.testing.assert_array_equal(named.numpy(), before)
    np.testing.assert_array_equal(alias.numpy(), before)
    np.testing.assert_array_equal(view.numpy(), before[:10])
    np.testing.assert_array_equal(kept[0].numpy(), before)
    assert not any(reuses)


def test_from_numpy_buffer_is_not_written(data):
    array = data[0].copy()
    _ = ember.from_numpy(array) + 1.0
    np.testing.assert_array_equal(array, data[0])


def test_gradients_through_temporaries_match_torch(data):
    ex, ey = ember.tensor(data[0], requires_grad=True), ember.tensor(data[1], requires_grad=True)
    tx, ty = torch.tensor(data[0], requires_grad=True), torch.tensor(data[1], requires_grad=True)
    e_out = ((ex.detach() * 2.0) * ey + ex) * ex
    t_out = ((tx.detach() * 2.0) * ty + tx) * tx
    e_out.sum().backward()
    t_out.sum().backward()
    _check(e_out, t_out)
    _check(ex.grad, tx.grad)
    _check(ey.grad, ty.grad)


@pytest.mark.parametrize("dtype", ["float64", "int64", "bool"])
def test_other_dtypes_keep_torch_semantics(dtype):
    values = (np.arange(N) % 7).astype(dtype)
    ex, tx = ember.tensor(values), torch.tensor(values)
    if dtype == "bool":
        with pytest.raises(RuntimeError, match="Subtraction"):
            _ = (ex & ex) - ex
        _check((ex & ex) + ex, (tx & tx) + tx)
        return
    _check((ex * 3) / 2, (tx * 3) / 2)
    _check((ex + 1) - 0.5, (tx + 1) - 0.5)
    _check((ex * 2) * ember.tensor(3), (tx * 2) * torch.tensor(3))
    _check((ex * 2) + ember.ones(1, dtype=ex.dtype), (tx * 2) + torch.ones(1, dtype=tx.dtype))
