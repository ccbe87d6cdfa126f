"""``torch.conv2d``, ``torch.layer_norm``… — the layer functions torch exposes at its top level
with ATen's argument lists — called the same way on both libraries."""
import numpy as np
import pytest
import torch

import ember
from torch_compare import assert_same


def _pair(*shapes, seed=0, positive=False):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    if positive:
        arrays = [np.abs(a) + 0.1 for a in arrays]
    return [torch.tensor(a) for a in arrays], [ember.tensor(a) for a in arrays]


CASES = {
    "conv1d": (lambda lib, x, w: lib.conv1d(x, w, None, 1, 1), [(2, 3, 9), (4, 3, 3)]),
    "conv2d": (lambda lib, x, w: lib.conv2d(x, w, padding="same"), [(2, 3, 7, 7), (4, 3, 3, 3)]),
    "conv3d": (lambda lib, x, w: lib.conv3d(x, w, stride=2), [(1, 2, 5, 5, 5), (3, 2, 3, 3, 3)]),
    "conv_transpose2d": (lambda lib, x, w: lib.conv_transpose2d(x, w, stride=2),
                         [(2, 3, 4, 4), (3, 2, 3, 3)]),
    "conv_tbc": (lambda lib, x, w, b: lib.conv_tbc(x, w, b, 1), [(9, 2, 3), (3, 3, 4), (4,)]),
    "max_pool1d": (lambda lib, x: lib.max_pool1d(x, 2), [(2, 3, 8)]),
    "max_pool2d": (lambda lib, x: lib.max_pool2d(x, 3, 2, 1), [(2, 3, 8, 8)]),
    "max_pool3d": (lambda lib, x: lib.max_pool3d(x, 2), [(1, 2, 4, 4, 4)]),
    "max_pool1d_with_indices": (lambda lib, x: lib.max_pool1d_with_indices(x, 2)[0], [(2, 3, 8)]),
    "adaptive_max_pool1d": (lambda lib, x: lib.adaptive_max_pool1d(x, 3)[0], [(2, 3, 8)]),
    "adaptive_avg_pool1d": (lambda lib, x: lib.adaptive_avg_pool1d(x, 3), [(2, 3, 8)]),
    "avg_pool1d": (lambda lib, x: lib.avg_pool1d(x, 3, 2, 1), [(2, 3, 8)]),
    "dropout_eval": (lambda lib, x: lib.dropout(x, 0.5, False), [(4, 5)]),
    "alpha_dropout_eval": (lambda lib, x: lib.alpha_dropout(x, 0.5, False), [(4, 5)]),
    "feature_alpha_dropout_eval": (lambda lib, x: lib.feature_alpha_dropout(x, 0.5, False),
                                   [(2, 4, 5)]),
    "embedding": (lambda lib, w: lib.embedding(w, lib.tensor([[0, 3], [4, 0]]), 0), [(5, 3)]),
    "batch_norm": (lambda lib, x, w, b: lib.batch_norm(x, w, b, None, None, True, 0.1, 1e-5, False),
                   [(4, 3, 5), (3,), (3,)]),
    "instance_norm": (lambda lib, x, w, b: lib.instance_norm(x, w, b, None, None, True, 0.1, 1e-5,
                                                             False), [(2, 3, 6), (3,), (3,)]),
    "layer_norm": (lambda lib, x, w, b: lib.layer_norm(x, (6,), w, b, 1e-5, True),
                   [(2, 3, 6), (6,), (6,)]),
    "group_norm": (lambda lib, x, w, b: lib.group_norm(x, 2, w, b), [(2, 4, 5), (4,), (4,)]),
    "rms_norm": (lambda lib, x, w: lib.rms_norm(x, (6,), w), [(2, 3, 6), (6,)]),
    "bilinear": (lambda lib, a, b, w: lib.bilinear(a, b, w), [(4, 3), (4, 2), (5, 3, 2)]),
    "prelu": (lambda lib, x, w: lib.prelu(x, w), [(2, 3, 4), (3,)]),
    "hardshrink": (lambda lib, x: lib.hardshrink(x, 0.3), [(3, 4)]),
    "pixel_shuffle": (lambda lib, x: lib.pixel_shuffle(x, 2), [(1, 8, 3, 3)]),
    "pixel_unshuffle": (lambda lib, x: lib.pixel_unshuffle(x, 2), [(1, 2, 4, 4)]),
    "channel_shuffle": (lambda lib, x: lib.channel_shuffle(x, 2), [(1, 4, 3, 3)]),
    "bce_with_logits": (lambda lib, x, t: lib.binary_cross_entropy_with_logits(x, t.sigmoid(),
                                                                               None, None, 2),
                        [(4, 3), (4, 3)]),
    "cosine_embedding_loss": (lambda lib, a, b: lib.cosine_embedding_loss(
        a, b, lib.tensor([1.0, -1.0, 1.0]), 0.1, 0), [(3, 5), (3, 5)]),
    "hinge_embedding_loss": (lambda lib, x: lib.hinge_embedding_loss(
        x, lib.tensor([1.0, -1.0, 1.0]), 1.0, 1), [(3,)]),
    "kl_div": (lambda lib, x, t: lib.kl_div(x.log_softmax(-1), t.softmax(-1), 2),
               [(3, 4), (3, 4)]),
    "margin_ranking_loss": (lambda lib, a, b: lib.margin_ranking_loss(
        a, b, lib.tensor([1.0, -1.0, 1.0]), 0.2, 1), [(3,), (3,)]),
    "poisson_nll_loss": (lambda lib, x, t: lib.poisson_nll_loss(x, t.abs(), True, True, 1e-8, 0),
                         [(3, 4), (3, 4)]),
    "triplet_margin_loss": (lambda lib, a, p, n: lib.triplet_margin_loss(a, p, n),
                            [(3, 5), (3, 5), (3, 5)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch_forward_and_backward(name):
    fn, shapes = CASES[name]
    torch_inputs, ember_inputs = _pair(*shapes)
    for t in torch_inputs:
        t.requires_grad_(True)
    for e in ember_inputs:
        e.requires_grad_(True)
    expected, actual = fn(torch, *torch_inputs), fn(ember, *ember_inputs)
    assert_same(expected, actual, rtol=1e-4, atol=1e-5)
    if expected.requires_grad:
        cotangent = np.random.default_rng(1).standard_normal(tuple(expected.shape)).astype(np.float32)
        expected.backward(torch.tensor(cotangent))
        actual.backward(ember.tensor(cotangent))
        for t, e in zip(torch_inputs, ember_inputs):
            if t.grad is None:
                assert e.grad is None or not e.grad.any().item()
            else:
                assert_same(t.grad, e.grad, rtol=1e-4, atol=1e-5)


def test_native_channel_shuffle_forward():
    (t,), (e,) = _pair((1, 4, 3, 3))
    assert_same(torch.native_channel_shuffle(t, 2), ember.native_channel_shuffle(e, 2))


def test_ctc_loss_int_reduction():
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((6, 2, 4)).astype(np.float32)
    targets = np.array([[1, 2], [3, 1]])
    results = []
    for lib in (torch, ember):
        log_probs = lib.tensor(logits).log_softmax(-1)
        results.append(lib.ctc_loss(log_probs, lib.tensor(targets), [6, 5], [2, 2], 0, 2))
    assert_same(*results, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fn", [
    lambda lib, a: lib.triplet_margin_loss(a, a + 1, a - 1),
    lambda lib, a: lib.cosine_embedding_loss(a, a + 1, lib.tensor([1.0, -1.0, 1.0])),
    lambda lib, a: lib.kl_div(a, a),
    lambda lib, a: lib.binary_cross_entropy_with_logits(a, a.sigmoid()),
])
def test_default_reduction_is_none_like_torch(fn):
    _, (e,) = _pair((3, 5))
    (t,) = _pair((3, 5))[0]
    assert_same(fn(torch, t), fn(ember, e), rtol=1e-5, atol=1e-6)


def test_invalid_reduction_code():
    x = ember.zeros(3)
    with pytest.raises(ValueError, match="5 is not a valid value for reduction"):
        ember.kl_div(x, x, 5)
