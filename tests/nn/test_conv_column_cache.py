"""The im2col column cache: buffers of finished convolutions are reused by the next ones, and
reuse never changes a result. The cache's size floor is lowered so small layers exercise it."""
import numpy as np
import pytest
import torch

import ember
from ember.ops import conv as conv_ops
from torch_compare import assert_same


@pytest.fixture
def every_column_cached(monkeypatch):
    monkeypatch.setattr(conv_ops.COLUMN_CACHE, "MIN_BYTES", 1)
    conv_ops.COLUMN_CACHE.clear()
    yield conv_ops.COLUMN_CACHE
    conv_ops.COLUMN_CACHE.clear()


def _net(lib):
    return lib.nn.Sequential(lib.nn.Conv2d(3, 8, 3, padding=1), lib.nn.ReLU(),
                             lib.nn.Conv2d(8, 8, 3, padding=1, groups=2), lib.nn.ReLU(),
                             lib.nn.Conv2d(8, 4, 3, stride=2))


def test_training_steps_match_torch_with_reused_columns(every_column_cached):
    torch.manual_seed(0)
    t_net = _net(torch)
    e_net = _net(ember)
    e_net.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in
                           t_net.state_dict().items()})
    rng = np.random.default_rng(0)
    kept = []
    for step in range(3):
        x = rng.standard_normal((4, 3, 9, 9)).astype(np.float32)
        outs = []
        for lib, net in ((torch, t_net), (ember, e_net)):
            net.zero_grad()
            out = net(lib.tensor(x))
            out.square().sum().backward()
            outs.append((out.detach(), [p.grad for p in net.parameters()]))
        assert_same(*outs, rtol=1e-4, atol=1e-5)
        kept.append((outs[0][0], outs[1][0]))
        assert every_column_cached._bytes > 0  # the released columns came back
    for expected, actual in kept:  # earlier outputs were not overwritten by later steps
        assert_same(expected, actual, rtol=1e-4, atol=1e-5)


def test_retained_graph_and_double_backward_with_reused_columns(every_column_cached):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 7, 7))
    w = rng.standard_normal((4, 3, 3, 3))
    results = []
    for lib in (torch, ember):
        xt, wt = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
        out = lib.nn.functional.conv2d(xt, wt, padding=1)
        loss = out.square().sum()
        first = lib.autograd.grad(loss, (xt, wt), retain_graph=True)
        second = lib.autograd.grad(loss, (xt, wt), create_graph=True)
        penalty = sum(g.square().sum() for g in second)
        results.append(first + second + lib.autograd.grad(penalty, (xt, wt)))
    assert_same(*results, rtol=1e-7, atol=1e-8)


def test_unfold_output_is_not_recycled(every_column_cached):
    x = ember.randn(1, 2, 5, 5)
    patches = ember.nn.functional.unfold(x, 3)
    snapshot = patches.clone()
    ember.nn.functional.conv2d(ember.randn(1, 2, 5, 5), ember.randn(3, 2, 3, 3))
    assert ember.equal(patches, snapshot)
