"""Dropout (mask statistics, scaling, channel masks, evaluation mode), embeddings (against
PyTorch with its weights copied in), ``one_hot`` and the distance layers."""
import warnings

import numpy as np
import pytest
import torch

import ember
from torch_compare import assert_same, compare_error

rng = np.random.default_rng(0)


def _array(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _np(t):
    return np.asarray(t.detach())


# ---------------------------------------------------------------------------------------------
# Dropout
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("p", [0.2, 0.5, 0.8])
def test_dropout_mask_statistics_and_scaling(p):
    x = ember.ones(200, 100, requires_grad=True)
    y = ember.nn.functional.dropout(x, p)
    values = _np(y)
    kept = values != 0
    # Survivors are scaled by 1 / (1 - p); the kept fraction is 1 - p within 4 sigma.
    np.testing.assert_allclose(values[kept], 1 / (1 - p), rtol=1e-6)
    sigma = np.sqrt(p * (1 - p) / values.size)
    assert abs(kept.mean() - (1 - p)) < 4 * sigma
    y.sum().backward()
    np.testing.assert_array_equal(_np(x.grad), values)  # the gradient uses the same mask


@pytest.mark.parametrize("cls", ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d",
                                 "AlphaDropout", "FeatureAlphaDropout"])
def test_dropout_eval_and_p_zero_are_identity(cls):
    x = {"Dropout1d": ember.randn(2, 3, 4), "Dropout3d": ember.randn(2, 3, 4, 5, 2)}.get(
        cls, ember.randn(2, 3, 4, 5))
    layer = getattr(ember.nn, cls)(0.5)
    layer.eval()
    assert layer(x) is x
    # An unbatched input goes through unsqueeze/squeeze: a new view, as in PyTorch.
    torch_input = torch.randn(3, 4, 5, 2)
    unbatched = ember.nn.Dropout3d(0.5).eval()(ember.tensor(torch_input.numpy()))
    assert_same(torch.nn.Dropout3d(0.5).eval()(torch_input), unbatched)
    layer = getattr(ember.nn, cls)(0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert layer(x) is x
    assert repr(layer) == repr(getattr(torch.nn, cls)(0.0))
    assert ember.nn.functional.dropout(x, 0.5, training=False) is x


def test_dropout_p_one_zeroes_everything():
    x = ember.randn(3, 4, requires_grad=True)
    y = ember.nn.functional.dropout(x, 1.0)
    assert not _np(y).any()
    y.sum().backward()
    assert not _np(x.grad).any()


@pytest.mark.parametrize("fn,shape,channel_dims", [
    ("dropout1d", (20, 30, 8), 2), ("dropout1d", (600, 8), 1),
    ("dropout2d", (20, 30, 4, 4), 2), ("dropout3d", (20, 30, 2, 1, 2), 2),
    ("dropout3d", (600, 2, 1, 2), 1),
])
def test_channel_dropout_zeroes_whole_channels(fn, shape, channel_dims):
    y = _np(getattr(ember.nn.functional, fn)(ember.ones(*shape), 0.4))
    per_channel = y.reshape(shape[:channel_dims] + (-1,))
    # Every channel is either dropped entirely or kept entirely, scaled by 1 / 0.6.
    assert np.all((per_channel == 0).all(-1) | np.isclose(per_channel, 1 / 0.6).all(-1))
    dropped = (per_channel == 0).all(-1).mean()
    assert abs(dropped - 0.4) < 0.1  # over 4 standard deviations for 600 channels


def test_dropout_inplace_writes_into_input():
    x = ember.ones(50, 40)
    y = ember.nn.Dropout(0.5, inplace=True)(x)
    assert y is x
    assert set(np.unique(_np(x)).tolist()) == {0.0, 2.0}


@pytest.mark.parametrize("fn,shape", [("alpha_dropout", (200, 200)),
                                      ("feature_alpha_dropout", (400, 100, 2))])
def test_alpha_dropout_keeps_zero_mean_unit_variance(fn, shape):
    x = ember.randn(*shape)
    y = _np(getattr(ember.nn.functional, fn)(x, 0.3, training=True))
    assert abs(y.mean()) < 0.03 and abs(y.std() - 1) < 0.03
    # Dropped entries all take the same value: SELU's saturation after the affine correction.
    alpha = 1.7580993408473766
    a = 1 / np.sqrt((alpha ** 2 * 0.3 + 1) * 0.7)
    dropped = np.isclose(y, -alpha * a + alpha * a * 0.3, atol=1e-6)
    assert abs(dropped.mean() - 0.3) < 0.03
    if fn == "feature_alpha_dropout":
        assert np.all(dropped.all(-1) | ~dropped.any(-1))


def test_dropout_errors_and_warnings():
    compare_error(lambda lib: lib.nn.functional.dropout(lib.ones(3), 1.5))
    compare_error(lambda lib: lib.nn.Dropout(-0.1))
    compare_error(lambda lib: lib.nn.functional.alpha_dropout(lib.ones(3), 1.5))
    compare_error(lambda lib: lib.nn.functional.dropout1d(lib.ones(3, 3, 3, 3)))
    compare_error(lambda lib: lib.nn.functional.feature_alpha_dropout(lib.ones(3), 0.5, True))
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        ember.nn.functional.dropout2d(ember.ones(3, 4))


@pytest.mark.parametrize("call", [
    "lib.dropout(lib.ones(3), 1.5, True)", "lib.dropout(lib.ones(3), 1.5, False)",
    "lib.dropout_(lib.ones(3), 1.5, True)", "lib.alpha_dropout(lib.ones(3), -0.5, True)",
    "lib.alpha_dropout_(lib.ones(3), 1.5, False)",
    "lib.feature_alpha_dropout(lib.ones(2, 3), 1.5, False)",
    "lib.feature_alpha_dropout_(lib.ones(2, 3), -0.5, True)",
    "lib.dropout(lib.ones(3), float('nan'), True)",
    "lib.nn.functional.dropout(lib.ones(3), float('nan'))",
    "lib.nn.functional.dropout(lib.ones(3), 1.5, False)",
])
def test_dropout_probability_errors_follow_the_spelling(call):
    """torch's ATen spellings (torch.dropout, torch.dropout_…) raise RuntimeError for a p
    outside [0, 1], before looking at ``train``; nn.functional raises ValueError, except for a
    NaN, which its own check lets through to ATen's."""
    compare_error(lambda lib: eval(call, {"lib": lib}))
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        ember.nn.functional.dropout2d(ember.ones(3, 4, 2))


# ---------------------------------------------------------------------------------------------
# Embedding, EmbeddingBag, one_hot
# ---------------------------------------------------------------------------------------------

def _embedding_pair(make, weight):
    t_layer, e_layer = make(torch), make(ember)
    with torch.no_grad():
        t_layer.weight.copy_(torch.tensor(weight))
    e_layer.load_state_dict({"weight": ember.tensor(weight)})
    assert repr(e_layer) == repr(t_layer)
    return t_layer, e_layer


def _lookup(lib, layer, arrays):
    args = [lib.tensor(a) if a is not None else None for a in arrays]
    if len(args) == 3 and args[2] is not None:
        args[2].requires_grad_(True)
    out = layer(*args)
    upstream = lib.tensor(np.linspace(-1, 1, out.numel(), dtype=np.float32)
                          .reshape(tuple(out.shape)))
    (out * upstream).sum().backward()
    extra = [args[2].grad] if len(args) == 3 and args[2] is not None else []
    return [out, layer.weight.grad, layer.weight] + extra


@pytest.mark.parametrize("options", [{}, {"padding_idx": 1}, {"padding_idx": -2},
                                     {"scale_grad_by_freq": True},
                                     {"max_norm": 1.0}, {"max_norm": 0.5, "norm_type": 1.0}],
                         ids=str)
def test_embedding(options):
    weight = _array(7, 3, scale=2.0)
    indices = np.array([[1, 2, 5, 1], [6, 5, 1, 0]])
    layers = _embedding_pair(lambda lib: lib.nn.Embedding(7, 3, **options), weight)
    assert_same(_lookup(torch, layers[0], [indices]), _lookup(ember, layers[1], [indices]))


def test_embedding_default_init_and_padding_row():
    layer = ember.nn.Embedding(2000, 8, padding_idx=3)
    w = _np(layer.weight)
    assert not w[3].any()
    assert abs(w.mean()) < 0.02 and abs(w.std() - 1) < 0.02  # N(0, 1)
    assert list(layer.state_dict()) == ["weight"]


def test_embedding_from_pretrained():
    weight = _array(4, 3)
    for freeze in (True, False):
        t = torch.nn.Embedding.from_pretrained(torch.tensor(weight), freeze=freeze, padding_idx=0)
        e = ember.nn.Embedding.from_pretrained(ember.tensor(weight), freeze=freeze, padding_idx=0)
        assert e.weight.requires_grad == t.weight.requires_grad
        assert repr(e) == repr(t)
        assert_same(t(torch.tensor([0, 3])), e(ember.tensor([0, 3])))
    bag = ember.nn.EmbeddingBag.from_pretrained(ember.tensor(weight), mode="sum")
    assert_same(torch.nn.EmbeddingBag.from_pretrained(torch.tensor(weight), mode="sum")(
        torch.tensor([[0, 1], [2, 3]])), bag(ember.tensor([[0, 1], [2, 3]])))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("layout", ["2d", "offsets", "last_offset", "padding"])
def test_embedding_bag(mode, layout):
    weight = _array(8, 3)
    flat = np.array([1, 2, 4, 5, 4, 3, 2, 7, 0])
    options, arrays = {}, [flat.reshape(3, 3)]
    if layout == "offsets":
        arrays = [flat, np.array([0, 2, 2, 6])]  # the second bag is empty
    elif layout == "last_offset":
        options = {"include_last_offset": True}
        arrays = [flat, np.array([0, 3, 3, 7, 9])]
    elif layout == "padding":
        options = {"padding_idx": 4}
        arrays = [flat, np.array([0, 3, 5])]
    layers = _embedding_pair(lambda lib: lib.nn.EmbeddingBag(8, 3, mode=mode, **options),
                             weight)
    assert_same(_lookup(torch, layers[0], arrays), _lookup(ember, layers[1], arrays))


def test_embedding_bag_per_sample_weights():
    weight = _array(6, 2)
    arrays = [np.array([0, 2, 5, 5, 1]), np.array([0, 1, 3]),
              np.array([0.5, 2.0, -1.0, 0.3, 1.5], np.float32)]
    layers = _embedding_pair(lambda lib: lib.nn.EmbeddingBag(6, 2, mode="sum"), weight)
    assert_same(_lookup(torch, layers[0], arrays), _lookup(ember, layers[1], arrays))


def test_embedding_errors():
    compare_error(lambda lib: lib.nn.functional.embedding(lib.tensor([1.0]), lib.ones(3, 2)))
    compare_error(lambda lib: lib.nn.functional.embedding(lib.tensor([5]), lib.ones(3, 2)))
    compare_error(lambda lib: lib.nn.Embedding(3, 2, padding_idx=5))
    compare_error(lambda lib: lib.nn.Embedding(3, 2, padding_idx=-4))
    bag = "embedding_bag"
    compare_error(lambda lib: getattr(lib.nn.functional, bag)(
        lib.tensor([[1, 2]]), lib.ones(3, 2), lib.tensor([0])),
        gist="if input is 2D, then offsets has to be None")
    compare_error(lambda lib: getattr(lib.nn.functional, bag)(lib.tensor([1, 2]), lib.ones(3, 2)))
    compare_error(lambda lib: getattr(lib.nn.functional, bag)(
        lib.tensor([1, 2]), lib.ones(3, 2), lib.tensor([0]), mode="mean",
        per_sample_weights=lib.ones(2)))
    compare_error(lambda lib: getattr(lib.nn.functional, bag)(
        lib.tensor([1, 2]), lib.ones(3, 2), lib.tensor([0]), mode="foo"))
    compare_error(lambda lib: lib.nn.Embedding.from_pretrained(lib.ones(3)))


def test_one_hot():
    for args in [([0, 2, 1],), ([[0, 3], [1, 1]], 5), ([], 3)]:
        assert_same(torch.nn.functional.one_hot(torch.tensor(args[0], dtype=torch.long),
                                                *args[1:]),
                    ember.nn.functional.one_hot(ember.tensor(args[0], dtype=ember.long),
                                                *args[1:]))
    compare_error(lambda lib: lib.nn.functional.one_hot(lib.tensor([1.0])))
    compare_error(lambda lib: lib.nn.functional.one_hot(lib.tensor([], dtype=lib.long)))
    compare_error(lambda lib: lib.nn.functional.one_hot(lib.tensor([-1])))
    compare_error(lambda lib: lib.nn.functional.one_hot(lib.tensor([3]), 2))


# ---------------------------------------------------------------------------------------------
# Distances
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("make,shapes", [
    (lambda lib: lib.nn.PairwiseDistance(), [(4, 5), (4, 5)]),
    (lambda lib: lib.nn.PairwiseDistance(1.0, keepdim=True), [(2, 4, 5), (4, 5)]),
    (lambda lib: lib.nn.PairwiseDistance(3.0, eps=0.1), [(5,), (5,)]),
    (lambda lib: lib.nn.CosineSimilarity(), [(4, 5), (4, 5)]),
    (lambda lib: lib.nn.CosineSimilarity(dim=-1, eps=1e-3), [(3, 4, 5), (1, 5)]),
], ids=lambda v: "" if callable(v) else str(v))
def test_distance_layers(make, shapes):
    arrays = [_array(*s) for s in shapes]

    def run(lib):
        layer = make(lib)
        tensors = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = layer(*tensors)
        (out * out).sum().backward()
        return [out] + [t.grad for t in tensors] + [repr(layer)]
    assert_same(run(torch), run(ember), rtol=1e-4, atol=1e-5)


def test_pdist():
    x = _array(5, 3)

    def run(lib):
        t = lib.tensor(x, requires_grad=True)
        out = lib.nn.functional.pdist(t) + lib.nn.functional.pdist(t, 1.0)
        out.sum().backward()
        return out, t.grad
    assert_same(run(torch), run(ember), rtol=1e-5, atol=1e-6)


def test_dropout_inplace_functions():
    for name, train in [("dropout_", True), ("alpha_dropout_", True),
                        ("feature_alpha_dropout_", True), ("dropout_", False)]:
        x = ember.ones(4, 8)
        out = getattr(ember, name)(x, 0.5, train)
        assert out is x
        if not train:
            assert x.tolist() == ember.ones(4, 8).tolist()
        else:
            assert not ember.equal(x, ember.ones(4, 8))
