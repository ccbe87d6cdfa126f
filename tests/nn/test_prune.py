"""nn.utils.prune against torch.nn.utils.prune: masks (ties included), layouts, hooks,
repeated pruning, gradients and error messages."""
import numpy as np
import pytest
import torch
import torch.nn.utils.prune as tprune

import ember
from ember.nn.utils import prune
from ember.nn.utils.prune import _torch_topk_indices


def _pair(kind, *args, weight=None):
    """The same layer in ember and torch, with ``weight`` (float32 NumPy) when given."""
    t = getattr(torch.nn, kind)(*args)
    e = getattr(ember.nn, kind)(*args)
    w = t.weight.detach().numpy().copy() if weight is None else weight.astype(np.float32)
    with torch.no_grad():
        t.weight.copy_(torch.from_numpy(w))
    with ember.no_grad():
        e.weight.copy_(ember.tensor(w))
        e.bias.copy_(ember.tensor(t.bias.detach().numpy()))
    return e, t


def _np(x):
    return x.detach().cpu().numpy() if isinstance(x, ember.Tensor) else x.detach().numpy()


def _tied(shape, levels, seed):
    """float32 weights with only ``levels`` distinct magnitudes (many ties), signs mixed."""
    rng = np.random.default_rng(seed)
    mags = rng.integers(1, levels + 1, shape).astype(np.float32) / levels
    return mags * rng.choice(np.array([-1.0, 1.0], np.float32), shape)


def _errors_match(fe, ft):
    with pytest.raises(Exception) as te:
        ft()
    with pytest.raises(type(te.value)) as ee:
        fe()
    assert str(ee.value).replace("ember", "torch") == str(te.value).replace("ember", "torch") \
        or str(ee.value) == str(te.value)


def test_topk_selection_matches_torch_with_ties_and_nan():
    rng = np.random.default_rng(0)
    for trial in range(600):
        n = int(rng.integers(1, 300)) if trial % 3 else int(rng.integers(200, 2000))
        v = rng.integers(0, int(rng.integers(1, 6)), n).astype(np.float32)
        if trial % 5 == 0:
            v[rng.random(n) < 0.1] = np.nan
        k = int(rng.integers(1, n + 1)) if trial % 2 else int(rng.integers(1, n // 64 + 2))
        k = min(k, n)
        largest = bool(trial % 4 < 2)
        want = torch.topk(torch.from_numpy(v), k, largest=largest).indices.numpy()
        assert set(_torch_topk_indices(v, k, largest).tolist()) == set(want.tolist())


@pytest.mark.parametrize("amount", [0, 1, 7, 0.3, 0.5, 1.0, 12])
@pytest.mark.parametrize("tied", [False, True])
def test_l1_unstructured_mask_equals_torch(amount, tied):
    w = _tied((3, 4), 3, 1) if tied else None
    e, t = _pair("Linear", 4, 3, weight=w)
    prune.l1_unstructured(e, "weight", amount)
    tprune.l1_unstructured(t, "weight", amount)
    np.testing.assert_array_equal(_np(e.weight_mask), _np(t.weight_mask))
    np.testing.assert_array_equal(_np(e.weight), _np(t.weight))


def test_l1_unstructured_large_tied_and_importance_scores():
    # 64 * k <= n takes torch's partial_sort path; n large, few levels: heavy ties.
    w = _tied((40, 70), 4, 2)
    e, t = _pair("Linear", 70, 40, weight=w)
    prune.l1_unstructured(e, "weight", 20)
    tprune.l1_unstructured(t, "weight", 20)
    np.testing.assert_array_equal(_np(e.weight_mask), _np(t.weight_mask))
    scores = _tied((40, 70), 3, 3)
    e, t = _pair("Linear", 70, 40)
    prune.l1_unstructured(e, "weight", 0.6, importance_scores=ember.tensor(scores))
    tprune.l1_unstructured(t, "weight", 0.6, importance_scores=torch.from_numpy(scores))
    np.testing.assert_array_equal(_np(e.weight_mask), _np(t.weight_mask))


@pytest.mark.parametrize("n", [1, 2, 3, float("inf"), float("-inf"), "fro"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_ln_structured_mask_equals_torch(n, dim):
    for seed, amount in ((4, 0.5), (5, 2), (6, 0.0), (7, 1.0)):
        w = np.random.default_rng(seed).standard_normal((6, 5)).astype(np.float32)
        w[2] = w[0]  # tied rows
        w[:, 3] = w[:, 1]  # tied columns
        e, t = _pair("Linear", 5, 6, weight=w)
        prune.ln_structured(e, "weight", amount, n, dim)
        tprune.ln_structured(t, "weight", amount, n, dim)
        np.testing.assert_array_equal(_np(e.weight_mask), _np(t.weight_mask))


def test_ln_structured_conv_and_importance_scores():
    w = _tied((8, 3, 3, 3), 2, 7)
    e, t = _pair("Conv2d", 3, 8, 3, weight=w)
    prune.ln_structured(e, "weight", 3, 1, 0)
    tprune.ln_structured(t, "weight", 3, 1, 0)
    np.testing.assert_array_equal(_np(e.weight_mask), _np(t.weight_mask))
    s = _tied((8, 3, 3, 3), 2, 8)
    e, t = _pair("Conv2d", 3, 8, 3)
    prune.ln_structured(e, "weight", 0.5, 2, 1, importance_scores=ember.tensor(s))
    tprune.ln_structured(t, "weight", 0.5, 2, 1, importance_scores=torch.from_numpy(s))
    np.testing.assert_array_equal(_np(e.weight_mask), _np(t.weight_mask))


def test_custom_from_mask_and_identity():
    mask = (np.random.default_rng(9).random((3, 4)) > 0.5).astype(np.float32)
    e, t = _pair("Linear", 4, 3)
    prune.custom_from_mask(e, "weight", ember.tensor(mask))
    tprune.custom_from_mask(t, "weight", torch.from_numpy(mask))
    np.testing.assert_array_equal(_np(e.weight_mask), _np(t.weight_mask))
    np.testing.assert_array_equal(_np(e.weight), _np(t.weight))
    e, t = _pair("Linear", 4, 3)
    prune.identity(e, "weight")
    tprune.identity(t, "weight")
    np.testing.assert_array_equal(_np(e.weight_mask), _np(t.weight_mask))
    assert list(e.state_dict()) == list(t.state_dict())


def test_repeated_pruning_container_equals_torch():
    w = _tied((6, 8), 3, 10)
    e, t = _pair("Linear", 8, 6, weight=w)
    steps = [("l1_unstructured", dict(amount=0.3)),
             ("ln_structured", dict(amount=2, n=1, dim=0)),
             ("l1_unstructured", dict(amount=5)),
             ("ln_structured", dict(amount=0.25, n=2, dim=1)),
             ("custom_from_mask", None)]
    for fn, kw in steps:
        if kw is None:
            m = np.ones((6, 8), np.float32)
            m[:, 0] = 0
            prune.custom_from_mask(e, "weight", ember.tensor(m))
            tprune.custom_from_mask(t, "weight", torch.from_numpy(m))
        else:
            getattr(prune, fn)(e, "weight", **kw)
            getattr(tprune, fn)(t, "weight", **kw)
        np.testing.assert_array_equal(_np(e.weight_mask), _np(t.weight_mask))
    hooks = [h for h in e._forward_pre_hooks.values()]
    assert len(hooks) == 1 and isinstance(hooks[0], prune.PruningContainer)
    assert [type(m).__name__ for m in hooks[0]] == [
        "L1Unstructured", "LnStructured", "L1Unstructured", "LnStructured", "CustomFromMask"]
    assert len(hooks[0]) == 5 and hooks[0][-1] is list(hooks[0])[-1]


def test_global_unstructured_equals_torch():
    e1, t1 = _pair("Linear", 6, 5, weight=_tied((5, 6), 3, 11))
    e2, t2 = _pair("Conv2d", 2, 4, 3, weight=_tied((4, 2, 3, 3), 3, 12))
    prune.l1_unstructured(e1, "weight", 4)  # a mask already there is honoured
    tprune.l1_unstructured(t1, "weight", 4)
    prune.global_unstructured([(e1, "weight"), (e2, "weight"), (e2, "bias")],
                              pruning_method=prune.L1Unstructured, amount=0.4)
    tprune.global_unstructured([(t1, "weight"), (t2, "weight"), (t2, "bias")],
                               pruning_method=tprune.L1Unstructured, amount=0.4)
    for em, tm, name in ((e1, t1, "weight"), (e2, t2, "weight"), (e2, t2, "bias")):
        np.testing.assert_array_equal(_np(getattr(em, name + "_mask")),
                                      _np(getattr(tm, name + "_mask")))
    scores_np = _tied((5, 6), 2, 13)
    e1, t1 = _pair("Linear", 6, 5)
    e2, t2 = _pair("Linear", 5, 4)
    prune.global_unstructured(
        iter([(e1, "weight"), (e2, "weight")]), prune.L1Unstructured, amount=10,
        importance_scores={(e1, "weight"): ember.tensor(scores_np)})
    tprune.global_unstructured(
        [(t1, "weight"), (t2, "weight")], tprune.L1Unstructured, amount=10,
        importance_scores={(t1, "weight"): torch.from_numpy(scores_np)})
    np.testing.assert_array_equal(_np(e1.weight_mask), _np(t1.weight_mask))
    np.testing.assert_array_equal(_np(e2.weight_mask), _np(t2.weight_mask))


def test_state_dict_layout_forward_remove_and_is_pruned():
    e, t = _pair("Linear", 4, 3)
    assert not prune.is_pruned(e)
    prune.l1_unstructured(e, "weight", 5)
    tprune.l1_unstructured(t, "weight", 5)
    prune.l1_unstructured(e, "bias", 1)
    tprune.l1_unstructured(t, "bias", 1)
    assert list(e.state_dict()) == list(t.state_dict())
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in e.named_buffers()] == [n for n, _ in t.named_buffers()]
    seq = ember.nn.Sequential(e)
    assert prune.is_pruned(seq)
    x = np.random.default_rng(14).standard_normal((2, 4)).astype(np.float32)
    np.testing.assert_allclose(_np(e(ember.tensor(x))), _np(t(torch.from_numpy(x))),
                               rtol=1e-6, atol=1e-6)
    # The pre-hook recomputes the weight from a changed _orig.
    with ember.no_grad():
        e.weight_orig.mul_(2.0)
    with torch.no_grad():
        t.weight_orig.mul_(2.0)
    np.testing.assert_allclose(_np(e(ember.tensor(x))), _np(t(torch.from_numpy(x))),
                               rtol=1e-6, atol=1e-6)
    orig = e.weight_orig
    prune.remove(e, "weight")
    tprune.remove(t, "weight")
    assert list(e.state_dict()) == list(t.state_dict())
    assert e.weight is orig and isinstance(e.weight, ember.nn.Parameter)
    np.testing.assert_array_equal(_np(e.weight), _np(t.weight))
    prune.remove(e, "bias")
    tprune.remove(t, "bias")
    assert list(e.state_dict()) == list(t.state_dict()) == ["weight", "bias"]
    assert not prune.is_pruned(seq)


def test_gradients_reach_orig_masked_as_torch():
    w = _tied((3, 5), 3, 15)
    e, t = _pair("Linear", 5, 3, weight=w)
    prune.ln_structured(e, "weight", 1, 2, 0)
    tprune.ln_structured(t, "weight", 1, 2, 0)
    prune.l1_unstructured(e, "weight", 0.4)
    tprune.l1_unstructured(t, "weight", 0.4)
    x = np.random.default_rng(16).standard_normal((4, 5)).astype(np.float32)
    (e(ember.tensor(x)) ** 2).sum().backward()
    (t(torch.from_numpy(x)) ** 2).sum().backward()
    np.testing.assert_allclose(_np(e.weight_orig.grad), _np(t.weight_orig.grad),
                               rtol=1e-5, atol=1e-6)
    assert (_np(e.weight_orig.grad)[_np(e.weight_mask) == 0] == 0).all()
    assert e.weight_mask.grad is None and not e.weight_mask.requires_grad


def test_prune_method_without_module():
    w = _tied((4, 6), 3, 17)
    got = prune.L1Unstructured(amount=9).prune(ember.tensor(w))
    want = tprune.L1Unstructured(amount=9).prune(torch.from_numpy(w))
    np.testing.assert_array_equal(_np(got), _np(want))
    s = _tied((4, 6), 2, 18)
    got = prune.LnStructured(0.5, 1, dim=1).prune(ember.tensor(w), importance_scores=ember.tensor(s))
    want = tprune.LnStructured(0.5, 1, dim=1).prune(torch.from_numpy(w),
                                                    importance_scores=torch.from_numpy(s))
    np.testing.assert_array_equal(_np(got), _np(want))


def test_random_methods_structure():
    ember.manual_seed(0)
    e, _ = _pair("Linear", 10, 6)
    prune.random_unstructured(e, "weight", 0.25)
    assert int((_np(e.weight_mask) == 0).sum()) == 15
    prune.random_unstructured(e, "weight", 9)  # only among the 45 still kept
    assert int((_np(e.weight_mask) == 0).sum()) == 24
    e, _ = _pair("Conv2d", 3, 8, 3)
    prune.random_structured(e, "weight", 3, dim=0)
    m = _np(e.weight_mask)
    per_channel = m.reshape(8, -1)
    assert ((per_channel == 0).all(1) | (per_channel == 1).all(1)).all()
    assert int((per_channel == 0).all(1).sum()) == 3
    prune.random_structured(e, "weight", 0.5, dim=1)
    m = _np(e.weight_mask)
    pruned_in = (m.transpose(1, 0, 2, 3).reshape(3, -1) == 0).all(1)
    assert int(pruned_in.sum()) == 2  # round(0.5 * 3) of the 3 input channels
    assert int((m.reshape(8, -1) == 0).all(1).sum()) == 3
    assert not _np(e.weight)[m == 0].any()


def test_error_messages_match_torch():
    e, t = _pair("Linear", 4, 3)
    cases = [
        (lambda: prune.l1_unstructured(e, "weight", -1),
         lambda: tprune.l1_unstructured(t, "weight", -1)),
        (lambda: prune.l1_unstructured(e, "weight", 1.5),
         lambda: tprune.l1_unstructured(t, "weight", 1.5)),
        (lambda: prune.l1_unstructured(e, "weight", "x"),
         lambda: tprune.l1_unstructured(t, "weight", "x")),
        (lambda: prune.l1_unstructured(e, "weight", 13),
         lambda: tprune.l1_unstructured(t, "weight", 13)),
        (lambda: prune.ln_structured(e, "bias", 1, 2, 0),
         lambda: tprune.ln_structured(t, "bias", 1, 2, 0)),
        (lambda: prune.ln_structured(e, "weight", 1, 2, 2),
         lambda: tprune.ln_structured(t, "weight", 1, 2, 2)),
        (lambda: prune.global_unstructured(5, prune.L1Unstructured, amount=1),
         lambda: tprune.global_unstructured(5, tprune.L1Unstructured, amount=1)),
        (lambda: prune.global_unstructured([(e, "weight")], prune.L1Unstructured,
                                           importance_scores=[1], amount=1),
         lambda: tprune.global_unstructured([(t, "weight")], tprune.L1Unstructured,
                                            importance_scores=[1], amount=1)),
    ]
    for fe, ft in cases:
        _errors_match(fe, ft)
        # A failed first pruning leaves the module unpruned (torch re-registers the weight
        # last, and so does Ember).
        assert list(e.state_dict()) == list(t.state_dict())
        assert sorted(e.state_dict()) == ["bias", "weight"] and not e._forward_pre_hooks
    with pytest.raises(ValueError, match="has to be pruned before pruning can be removed"):
        prune.remove(e, "weight")
    with pytest.raises(TypeError, match='Only "unstructured" PRUNING_TYPE supported'):
        prune.global_unstructured([(e, "weight")], prune.LnStructured, amount=1, n=1, dim=0)
    with pytest.raises(AssertionError, match="importance_scores should have the same shape"):
        prune.l1_unstructured(e, "weight", 1, importance_scores=ember.ones(2, 2))
    with pytest.raises(TypeError, match="is not a BasePruningMethod subclass"):
        _container("weight").add_pruning_method(3)
    other = prune.L1Unstructured(1)
    other._tensor_name = "bias"
    with pytest.raises(ValueError, match="Can only add pruning methods acting on"):
        _container("weight").add_pruning_method(other)


def _container(name):
    c = prune.PruningContainer()
    c._tensor_name = name
    return c


def test_ember_semi_structured_2_4():
    w = np.random.default_rng(19).standard_normal((4, 2, 2, 2)).astype(np.float32)
    w.reshape(-1, 4)[0] = 0.5  # a tied group: the lower indices win
    e, _ = _pair("Conv2d", 2, 4, 2, weight=w)
    prune.ember_semi_structured(e, "weight")
    m = _np(e.weight_mask).reshape(-1, 4)
    assert (m.sum(1) == 2).all()
    groups = np.abs(w.reshape(-1, 4))
    for g, mg in zip(groups[1:], m[1:]):
        assert set(np.flatnonzero(mg)) == set(np.argsort(-g, kind="stable")[:2])
    np.testing.assert_array_equal(m[0], [1, 1, 0, 0])
    # On top of an earlier pruning: pruned entries count towards the zeros, never revive.
    e, _ = _pair("Linear", 8, 3)
    prune.l1_unstructured(e, "weight", 12)
    before = _np(e.weight_mask).copy()
    prune.ember_semi_structured(e, "weight", n=2, m=4)
    after = _np(e.weight_mask)
    assert (after <= before).all() and (after.reshape(-1, 4).sum(1) <= 2).all()
    assert (after.reshape(-1, 4).sum(1) == np.minimum(before.reshape(-1, 4).sum(1), 2)).all()
    np.testing.assert_array_equal(_np(e.weight), _np(e.weight_orig) * after)
    e, _ = _pair("Linear", 6, 3)
    with pytest.raises(ValueError, match="divisible by 4"):
        prune.ember_semi_structured(e, "weight")
    with pytest.raises(ValueError, match="0 <= n <= m"):
        prune.EmberSemiStructured(n=5, m=4)
    assert list(e.state_dict()) == ["bias", "weight"]
