"""Ember's positional encodings (no PyTorch counterpart), tested by their defining properties:
the sinusoid formula, the layouts, dropout; for rotary embeddings, that a rotation preserves
norms, that the query-key dot product depends only on the position difference (shift
equivariance), the two pairings (rotate-half and interleaved, the latter equal to multiplying
complex numbers by e^{i*pos*theta}), offsets, and gradients (float64 gradcheck)."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
from ember.nn import RotaryEmbedding, SinusoidalPositionalEncoding, apply_rotary_emb

rng = np.random.default_rng(0)


def _reference_sinusoids(num_positions, d_model, base=10000.0):
    table = np.zeros((num_positions, d_model))
    for pos in range(num_positions):
        for i in range(d_model):
            angle = pos / base ** (2 * (i // 2) / d_model)
            table[pos, i] = math.sin(angle) if i % 2 == 0 else math.cos(angle)
    return table


@pytest.mark.parametrize("d_model", [1, 6, 7, 16])
def test_sinusoid_table_is_the_formula(d_model):
    pe = SinusoidalPositionalEncoding(d_model, max_len=50, dtype=ember.float64)
    np.testing.assert_allclose(np.asarray(pe.pe), _reference_sinusoids(50, d_model),
                               rtol=1e-12, atol=1e-12)
    assert pe.pe.dtype == ember.float64
    assert list(pe.state_dict()) == []  # recomputed, never saved
    base = SinusoidalPositionalEncoding(d_model, max_len=9, base=100.0, dtype=ember.float64)
    np.testing.assert_allclose(np.asarray(base.pe), _reference_sinusoids(9, d_model, 100.0),
                               rtol=1e-12, atol=1e-12)


def test_sinusoid_added_along_the_sequence_dimension():
    d_model, length, batch = 8, 5, 3
    table = _reference_sinusoids(length, d_model).astype(np.float32)
    x = rng.standard_normal((length, batch, d_model)).astype(np.float32)
    pe = SinusoidalPositionalEncoding(d_model, max_len=20)
    out = np.asarray(pe(ember.tensor(x)))
    np.testing.assert_allclose(out, x + table[:, None], rtol=1e-6, atol=1e-6)
    first = SinusoidalPositionalEncoding(d_model, max_len=20, batch_first=True)
    xb = x.transpose(1, 0, 2).copy()
    np.testing.assert_allclose(np.asarray(first(ember.tensor(xb))), xb + table[None], rtol=1e-6,
                               atol=1e-6)
    np.testing.assert_allclose(np.asarray(pe(ember.tensor(x[:, 0]))), x[:, 0] + table,
                               rtol=1e-6, atol=1e-6)
    with pytest.raises(RuntimeError, match="exceeds max_len=20"):
        pe(ember.zeros(21, 1, d_model))
    with pytest.raises(RuntimeError, match="d_model=8"):
        pe(ember.zeros(3, 1, 4))


def test_sinusoid_dropout_and_gradient():
    pe = SinusoidalPositionalEncoding(4, max_len=10, dropout=0.5)
    assert "(dropout): Dropout(p=0.5, inplace=False)" in repr(pe)
    x = ember.ones(6, 2, 4, requires_grad=True)
    out = pe(x)
    values = np.asarray(out.detach())
    assert (values == 0).any()
    out.sum().backward()
    grad = np.asarray(x.grad)
    assert set(np.unique(grad)) <= {0.0, 2.0}
    pe.eval()
    expected = np.broadcast_to(1 + _reference_sinusoids(6, 4)[:, None], (6, 2, 4))
    np.testing.assert_allclose(np.asarray(pe(x).detach()), expected, rtol=1e-6)


@settings(max_examples=25, deadline=None)
@given(m=st.integers(0, 200), n=st.integers(0, 200), shift=st.integers(-50, 500),
       interleaved=st.booleans())
def test_rotary_dot_product_depends_only_on_position_difference(m, n, shift, interleaved):
    rope = RotaryEmbedding(8, interleaved=interleaved)
    seeds = np.random.default_rng(m * 1000 + n)
    q = ember.tensor(seeds.standard_normal((1, 8)))
    k = ember.tensor(seeds.standard_normal((1, 8)))
    shift = max(shift, -min(m, n))

    def score(pos_q, pos_k):
        rq = rope(q, positions=ember.tensor([pos_q]))
        rk = rope(k, positions=ember.tensor([pos_k]))
        return float((rq * rk).sum())
    assert score(m, n) == pytest.approx(score(m + shift, n + shift), rel=1e-9, abs=1e-9)


def test_rotary_preserves_norms_and_fixes_position_zero():
    rope = RotaryEmbedding(16)
    x = ember.tensor(rng.standard_normal((2, 3, 10, 16)))
    out = rope(x)
    np.testing.assert_allclose(np.linalg.norm(np.asarray(out), axis=-1),
                               np.linalg.norm(np.asarray(x), axis=-1), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(out)[..., 0, :], np.asarray(x)[..., 0, :], rtol=1e-12)
    assert out.dtype == ember.float64 and out.shape == x.shape


@pytest.mark.parametrize("interleaved", [False, True])
def test_rotary_is_a_complex_rotation(interleaved):
    dim, length = 8, 6
    rope = RotaryEmbedding(dim, base=100.0, interleaved=interleaved)
    x = rng.standard_normal((length, dim))
    theta = 100.0 ** (-np.arange(0, dim, 2) / dim)
    angles = np.arange(length)[:, None] * theta
    if interleaved:
        z = x[:, 0::2] + 1j * x[:, 1::2]
    else:
        z = x[:, :dim // 2] + 1j * x[:, dim // 2:]
    rotated = z * np.exp(1j * angles)
    expected = np.empty_like(x)
    if interleaved:
        expected[:, 0::2], expected[:, 1::2] = rotated.real, rotated.imag
    else:
        expected[:, :dim // 2], expected[:, dim // 2:] = rotated.real, rotated.imag
    # inv_freq is float32, as in common implementations; compare at that precision.
    np.testing.assert_allclose(np.asarray(rope(ember.tensor(x))), expected, rtol=1e-5,
                               atol=1e-5)


def test_rotary_offset_positions_and_cos_sin():
    rope = RotaryEmbedding(4)
    x = ember.tensor(rng.standard_normal((3, 7, 4)))
    full = rope(x)
    tail = rope(x[:, 4:], offset=4)
    np.testing.assert_allclose(np.asarray(tail), np.asarray(full)[:, 4:], rtol=1e-12)
    explicit = rope(x, positions=ember.arange(7))
    np.testing.assert_allclose(np.asarray(explicit), np.asarray(full), rtol=1e-12)
    cos, sin = rope.cos_sin(7, dtype=ember.float64)
    assert cos.shape == (7, 4) and sin.shape == (7, 4)
    np.testing.assert_allclose(np.asarray(apply_rotary_emb(x, cos, sin)), np.asarray(full),
                               rtol=1e-12)
    assert repr(rope) == "RotaryEmbedding(dim=4, base=10000.0, interleaved=False)"
    assert list(rope.state_dict()) == []


def test_rotary_gradcheck_and_errors():
    rope = RotaryEmbedding(6)
    x = ember.tensor(rng.standard_normal((2, 4, 6)), requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: rope(t), [x])
    cos, sin = RotaryEmbedding(6, interleaved=True).cos_sin(4, dtype=ember.float64)
    assert ember.autograd.gradcheck(lambda t: apply_rotary_emb(t, cos, sin, interleaved=True),
                                    [x])
    with pytest.raises(ValueError, match="positive even dim"):
        RotaryEmbedding(5)
    with pytest.raises(RuntimeError, match="dim=6"):
        rope(ember.zeros(2, 4))
    with pytest.raises(RuntimeError, match="even feature size"):
        apply_rotary_emb(ember.zeros(2, 3), ember.zeros(2, 3), ember.zeros(2, 3))


def test_rotary_attention_scores_are_relative():
    """Rotated queries and keys through scaled_dot_product_attention: shifting all positions
    leaves the attention output unchanged."""
    rope = RotaryEmbedding(8)
    q, k, v = (ember.tensor(rng.standard_normal((1, 2, 5, 8))) for _ in range(3))

    def attend(offset):
        return ember.nn.functional.scaled_dot_product_attention(
            rope(q, offset=offset), rope(k, offset=offset), v, is_causal=True)
    np.testing.assert_allclose(np.asarray(attend(0)), np.asarray(attend(37)), rtol=1e-9,
                               atol=1e-12)
