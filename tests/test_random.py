"""Random numbers: seeding and generator state (same seed, same numbers), the samplers' shapes,
dtypes and ranges against PyTorch's, simple statistics on large samples, and the errors PyTorch
raises for bad arguments. Ember's streams differ from PyTorch's, so values are never compared
element-wise with torch."""
import math
import pickle

import numpy as np
import pytest
import torch

import ember


def _same_kind(e, t):
    assert tuple(e.shape) == tuple(t.shape)
    assert str(e.dtype)[6:] == str(t.dtype)[6:]
    assert e.requires_grad == t.requires_grad


def _both(expr, device="cpu"):
    out = []
    for lib in (torch, ember):
        dev = device if lib is ember else "cpu"
        out.append(eval(expr, {"lib": lib, "np": np, "dev": dev}))
    return out


# ---- seeding and state ---------------------------------------------------------------------------

def test_manual_seed_repeats_the_stream(device):
    ember.manual_seed(123)
    first = [ember.rand(5, device=device), ember.randn(3, device=device),
             ember.randint(0, 100, (4,), device=device), ember.randperm(6, device=device)]
    ember.manual_seed(123)
    second = [ember.rand(5, device=device), ember.randn(3, device=device),
              ember.randint(0, 100, (4,), device=device), ember.randperm(6, device=device)]
    for a, b in zip(first, second):
        assert a.equal(b)
    ember.manual_seed(124)
    assert not ember.rand(5, device=device).equal(first[0])


def test_manual_seed_returns_the_default_generator():
    g = ember.manual_seed(7)
    assert g is ember.default_generator
    assert ember.initial_seed() == 7 == torch.manual_seed(7).initial_seed()


@pytest.mark.parametrize("seed", [0, 5, -1, -2**63, 2**64 - 1, 2**63])
def test_initial_seed_wraps_like_torch(seed):
    assert ember.Generator().manual_seed(seed).initial_seed() == \
        torch.Generator().manual_seed(seed).initial_seed()
    assert ember.manual_seed(seed).initial_seed() == torch.manual_seed(seed).initial_seed()


@pytest.mark.parametrize("seed", [2**64, -2**63 - 1, 1.5, "1", None])
def test_generator_seed_errors(seed):
    with pytest.raises(Exception) as expected:
        torch.Generator().manual_seed(seed)
    with pytest.raises(expected.type):
        ember.Generator().manual_seed(seed)


def test_module_manual_seed_converts_with_int():
    for seed in ("7", 3.9):
        assert ember.manual_seed(seed).initial_seed() == torch.manual_seed(seed).initial_seed()


def test_generators_are_independent_streams():
    g1 = ember.Generator().manual_seed(1)
    g2 = ember.Generator().manual_seed(1)
    a = ember.rand(4, generator=g1)
    ember.manual_seed(99)
    ember.rand(10)  # the default stream moving does not touch g2
    b = ember.rand(4, generator=g2)
    assert a.equal(b)
    assert not ember.rand(4, generator=g1).equal(a)
    g3 = ember.Generator().manual_seed(2)
    assert not ember.rand(4, generator=g3).equal(a)


def test_generator_keyword_on_every_sampler(device):
    def draws(seed):
        g = ember.Generator(device=device).manual_seed(seed)
        probs = ember.full((5,), 0.5, device=device)
        return [ember.rand(3, generator=g, device=device),
                ember.randn(3, generator=g, device=device),
                ember.randint(5, (3,), generator=g, device=device),
                ember.randperm(5, generator=g, device=device),
                ember.normal(0.0, 1.0, (3,), generator=g, device=device),
                ember.normal(probs, 1.0, generator=g),
                ember.bernoulli(probs, generator=g),
                ember.multinomial(probs, 3, generator=g),
                ember.empty(3, device=device).uniform_(generator=g),
                ember.empty(3, device=device).normal_(generator=g),
                ember.rand_like(probs, generator=g)]
    for a, b in zip(draws(5), draws(5)):
        assert a.equal(b) and a.device == b.device


def test_default_generator_defaults():
    assert ember.Generator().initial_seed() == torch.Generator().initial_seed()
    assert ember.Generator().device == ember.device("cpu")
    assert str(ember.default_generator.device) == str(torch.default_generator.device)


def test_rng_state_replays():
    ember.manual_seed(3)
    state = ember.get_rng_state()
    assert state.dtype is ember.uint8 and state.dim() == 1
    a = ember.randn(6)
    ember.rand(3)
    ember.set_rng_state(state)
    assert ember.randn(6).equal(a)
    assert ember.initial_seed() == 3
    # state is a snapshot, not a live view
    state_again = ember.get_rng_state()
    ember.rand(2)
    assert not ember.get_rng_state().equal(state_again)


def test_generator_state_replays_and_pickles():
    g = ember.Generator().manual_seed(11)
    ember.rand(3, generator=g)
    state = g.get_state()
    a = ember.rand(5, generator=g)
    g.set_state(state)
    assert ember.rand(5, generator=g).equal(a)
    g.set_state(state)
    clone = pickle.loads(pickle.dumps(g))
    assert ember.rand(5, generator=clone).equal(a)
    assert clone.initial_seed() == 11


@pytest.mark.parametrize("bad", ["lib.zeros(3, dtype=lib.uint8)", "lib.zeros(3)", "[1, 2]"])
def test_set_rng_state_errors(bad):
    t_state, e_state = _both(bad)
    with pytest.raises(Exception) as expected:
        torch.set_rng_state(t_state)
    with pytest.raises(expected.type):
        ember.set_rng_state(e_state)


def test_seed_reseeds_nondeterministically():
    s1 = ember.seed()
    assert ember.initial_seed() == s1
    a = ember.rand(4)
    s2 = ember.seed()
    assert s1 != s2 and 0 <= s2 < 2**64
    assert not ember.rand(4).equal(a)


# ---- shapes, dtypes and keyword handling vs torch ------------------------------------------------

SHAPE_CASES = [
    "lib.rand(2, 3, device=dev)",
    "lib.rand((2, 3), device=dev)",
    "lib.rand((), device=dev)",
    "lib.rand(0, 3, device=dev)",
    "lib.rand(2, dtype=lib.float64, device=dev)",
    "lib.rand(2, dtype=lib.float16, device=dev)",
    "lib.rand(2, dtype=lib.bfloat16, device=dev)",
    "lib.rand(2, dtype=lib.complex64, device=dev)",
    "lib.rand(2, requires_grad=True, device=dev)",
    "lib.randn(2, 3, device=dev)",
    "lib.randn(4, dtype=lib.float64, requires_grad=True, device=dev)",
    "lib.randn(2, dtype=lib.complex128, device=dev)",
    "lib.randint(10, (3,), device=dev)",
    "lib.randint(3, 10, (3, 2), device=dev)",
    "lib.randint(10, (3,), dtype=lib.int32, device=dev)",
    "lib.randint(10, (3,), dtype=lib.float32, device=dev)",
    "lib.randint(0, 2, (3,), dtype=lib.bool, device=dev)",
    "lib.randint(0, 2, (0,), device=dev)",
    "lib.randint(-5, 5, [3], device=dev)",
    "lib.randperm(5, device=dev)",
    "lib.randperm(0, device=dev)",
    "lib.randperm(5, dtype=lib.float32, device=dev)",
    "lib.normal(0., 1., (2, 3), device=dev)",
    "lib.normal(2., 3., size=(2,), dtype=lib.float64, device=dev)",
    "lib.normal(0., 1., (2,), requires_grad=True, device=dev)",
    "lib.normal(lib.zeros(3, device=dev), 1.)",
    "lib.normal(lib.zeros(3, device=dev), lib.ones(3, device=dev))",
    "lib.normal(0., lib.ones(3, device=dev))",
    "lib.normal(lib.zeros(3, dtype=lib.float64, device=dev), 1.)",
    "lib.normal(1., lib.ones(3, dtype=lib.float16, device=dev))",
    "lib.normal(lib.zeros(3, device=dev), lib.ones(3, dtype=lib.float64, device=dev))",
    "lib.normal(lib.zeros(2, 3, device=dev), lib.ones(3, device=dev))",
    "lib.normal(lib.zeros(3, requires_grad=True, device=dev), 1.)",
    "lib.bernoulli(lib.full((3, 2), 0.5, device=dev))",
    "lib.bernoulli(lib.full((3,), 0.5, dtype=lib.float64, device=dev))",
    "lib.bernoulli(lib.ones(2, device=dev), 0.5)",
    "lib.bernoulli(lib.ones(2, dtype=lib.int64, device=dev), 0.5)",
    "lib.bernoulli(lib.ones(3, requires_grad=True, device=dev))",
    "lib.multinomial(lib.tensor([[1., 1], [1, 0]], device=dev), 1)",
    "lib.multinomial(lib.ones(5, device=dev), 3)",
    "lib.multinomial(lib.ones(2, 5, device=dev), 7, replacement=True)",
    "lib.rand_like(lib.zeros(2, 3, device=dev))",
    "lib.rand_like(lib.zeros(2, dtype=lib.float64, device=dev))",
    "lib.randn_like(lib.zeros(2, dtype=lib.float16, device=dev))",
    "lib.randn_like(lib.zeros(2, device=dev), requires_grad=True)",
    "lib.randint_like(lib.zeros(2, 3, device=dev), 10)",
    "lib.randint_like(lib.zeros(2, 3, dtype=lib.int32, device=dev), 3, 10)",
    "lib.zeros(3, dtype=lib.float16, device=dev).normal_()",
    "lib.zeros(3, dtype=lib.float64, device=dev).uniform_(2, 3)",
]


@pytest.mark.parametrize("expr", SHAPE_CASES)
def test_shapes_and_dtypes(expr, device):
    t_out, e_out = _both(expr, device)
    _same_kind(e_out, t_out)
    assert e_out.device.type == device


ERROR_CASES = [
    "lib.rand(2, dtype=lib.int64)",
    "lib.randn(2, dtype=lib.int32)",
    "lib.rand_like(lib.zeros(2, dtype=lib.int64))",
    "lib.rand(-1)",
    "lib.randint(5, 5, (3,))",
    "lib.randint(10, 5, (3,))",
    "lib.randint(10, 3)",
    "lib.randint(0.5, 3.5, (3,))",
    "lib.randint(2**63, (3,))",
    "lib.randint(0, 300, (3,), dtype=lib.uint8)",
    "lib.randint(-1, 3, (3,), dtype=lib.uint8)",
    "lib.randint(0, 10, (3,), dtype=lib.bool)",
    "lib.randint(10, (3,), requires_grad=True)",
    "lib.randperm(-1)",
    "lib.randperm(3, requires_grad=True)",
    "lib.normal(0., -1., (2,))",
    "lib.normal(lib.zeros(3), -1.)",
    "lib.normal(lib.zeros(3), lib.tensor([1., -1, 1]))",
    "lib.normal(lib.zeros(3, dtype=lib.int64), 1.)",
    "lib.normal(lib.zeros(3), lib.ones(2))",
    "lib.normal(0., 1.)",
    "lib.bernoulli(lib.full((3,), 1.5))",
    "lib.bernoulli(lib.full((3,), -0.1))",
    "lib.bernoulli(lib.ones(2), 1.5)",
    "lib.bernoulli(lib.ones(3, dtype=lib.int64))",
    "lib.multinomial(lib.tensor([-1., 1, 1]), 1)",
    "lib.multinomial(lib.tensor([-1., 1, 1]), 2, True)",
    "lib.multinomial(lib.tensor([float('nan'), 1]), 1)",
    "lib.multinomial(lib.tensor([1., float('inf')]), 2, True)",
    "lib.multinomial(lib.tensor([0., 0]), 1)",
    "lib.multinomial(lib.tensor([[1., 1], [0, 0]]), 2, True)",
    "lib.multinomial(lib.tensor([1., 1, 1]), 4)",
    "lib.multinomial(lib.ones(2, 2, 2), 1)",
    "lib.multinomial(lib.tensor(1.), 1)",
    "lib.multinomial(lib.ones(3), 0)",
    "lib.multinomial(lib.ones(3), -1)",
    "lib.multinomial(lib.ones(3, dtype=lib.int64), 1)",
    "lib.zeros(3).uniform_(3, 2)",
    "lib.zeros(3, dtype=lib.int64).uniform_()",
    "lib.zeros(3).normal_(0, -1)",
    "lib.zeros(3, dtype=lib.int64).normal_()",
    "lib.zeros(3).bernoulli_(1.5)",
    "lib.ones(2, requires_grad=True).uniform_()",
]


@pytest.mark.parametrize("expr", ERROR_CASES)
def test_errors_match_torch(expr):
    with pytest.raises(Exception) as expected:
        eval(expr, {"lib": torch})
    with pytest.raises(expected.type):
        eval(expr, {"lib": ember})


# ---- value ranges and statistics -----------------------------------------------------------------

N = 200_000


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_rand_is_uniform_on_unit_interval(dtype):
    x = ember.rand(N, dtype=getattr(ember, dtype)).float().numpy()
    assert x.min() >= 0.0 and x.max() <= 1.0
    assert abs(x.mean() - 0.5) < 0.01
    assert abs(x.std() - math.sqrt(1 / 12)) < 0.01


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_randn_is_standard_normal(dtype):
    x = ember.randn(N, dtype=getattr(ember, dtype)).double().numpy()
    assert abs(x.mean()) < 0.01 and abs(x.std() - 1.0) < 0.01
    assert abs(np.mean(np.abs(x) < 1.0) - 0.6827) < 0.01


def test_complex_randn_has_unit_variance():
    values = ember.randn(N, dtype=ember.complex64).numpy()
    assert abs(np.mean(np.abs(values) ** 2) - 1.0) < 0.02
    assert abs(values.real.std() - math.sqrt(0.5)) < 0.01


def test_randint_range_and_uniformity():
    x = ember.randint(-3, 4, (N,)).numpy()
    assert x.min() == -3 and x.max() == 3
    counts = np.bincount(x + 3)
    assert np.all(np.abs(counts / N - 1 / 7) < 0.01)
    b = ember.randint(0, 2, (1000,), dtype=ember.bool)
    assert b.dtype is ember.bool and 0 < int(b.sum()) < 1000


def test_randperm_is_a_permutation():
    for n in (0, 1, 10, 1000):
        p = ember.randperm(n)
        assert sorted(p.tolist()) == list(range(n))
    assert not ember.randperm(100).equal(ember.arange(100))


def test_normal_statistics():
    x = ember.normal(2.0, 3.0, (N,)).numpy()
    assert abs(x.mean() - 2.0) < 0.05 and abs(x.std() - 3.0) < 0.05
    mean = ember.tensor([-10.0, 0.0, 10.0]).repeat(N // 3, 1)
    std = ember.tensor([0.5, 1.0, 2.0])
    y = ember.normal(mean, std).numpy()
    np.testing.assert_allclose(y.mean(0), [-10, 0, 10], atol=0.05)
    np.testing.assert_allclose(y.std(0), [0.5, 1.0, 2.0], rtol=0.02)
    assert ember.normal(ember.zeros(5), 0.0).equal(ember.zeros(5))


def test_normal_is_differentiable_in_mean_and_std():
    mean = ember.zeros(4, requires_grad=True)
    std = ember.full((4,), 2.0, requires_grad=True)
    ember.manual_seed(0)
    out = ember.normal(mean, std)
    out.sum().backward()
    np.testing.assert_allclose(mean.grad.numpy(), np.ones(4))
    # d out / d std is the standard-normal noise behind each sample
    np.testing.assert_allclose(std.grad.numpy(), out.detach().numpy() / 2.0, rtol=1e-6)


def test_bernoulli_statistics_and_extremes():
    p = ember.tensor([0.0, 0.2, 0.9, 1.0]).repeat(N // 4, 1)
    x = ember.bernoulli(p).numpy()
    assert set(np.unique(x)) <= {0.0, 1.0}
    np.testing.assert_allclose(x.mean(0), [0.0, 0.2, 0.9, 1.0], atol=0.01)
    assert ember.bernoulli(ember.ones(10), 0.0).sum().item() == 0
    assert ember.bernoulli(ember.zeros(10), p=1.0).sum().item() == 10
    s = ember.zeros(N).bernoulli_(0.3)
    assert abs(s.mean().item() - 0.3) < 0.01
    s = ember.zeros(3, N, dtype=ember.int64).bernoulli_(ember.tensor([[0.0], [0.5], [1.0]]))
    np.testing.assert_allclose(s.double().mean(1).numpy(), [0.0, 0.5, 1.0], atol=0.01)


def test_bernoulli_gradient_is_zero():
    p = ember.full((3,), 0.5, requires_grad=True)
    ember.bernoulli(p).sum().backward()
    tp = torch.full((3,), 0.5, requires_grad=True)
    torch.bernoulli(tp).sum().backward()
    assert p.grad.tolist() == tp.grad.tolist()


def test_multinomial_with_replacement_frequencies():
    probs = ember.tensor([1.0, 0.0, 3.0, 4.0])  # unnormalised
    x = ember.multinomial(probs, N, replacement=True)
    assert x.dtype is ember.int64 and x.shape == (N,)
    freq = np.bincount(x.numpy(), minlength=4) / N
    np.testing.assert_allclose(freq, [0.125, 0.0, 0.375, 0.5], atol=0.01)


def test_multinomial_without_replacement():
    probs = ember.tensor([[0.1, 0.2, 0.3, 0.4], [1.0, 0.0, 0.0, 1.0]])
    for _ in range(20):
        rows = ember.multinomial(probs, 4).tolist()
        assert sorted(rows[0]) == [0, 1, 2, 3]
        assert sorted(rows[1][:2]) == [0, 3]  # zero-probability categories come last
    # first draws follow the probabilities
    first = np.array([ember.multinomial(probs[0], 1).item() for _ in range(4000)])
    np.testing.assert_allclose(np.bincount(first, minlength=4) / 4000, [0.1, 0.2, 0.3, 0.4],
                               atol=0.03)
    # a category with zero probability is never picked while others remain
    picks = ember.multinomial(ember.tensor([0.0, 1.0, 0.0]), 2).tolist()
    t_picks = torch.multinomial(torch.tensor([0.0, 1.0, 0.0]), 2).tolist()
    assert picks[0] == t_picks[0] == 1 and len(picks) == len(t_picks)


def test_uniform_and_normal_in_place(device):
    x = ember.empty(N, device=device)
    before = x._version
    out = x.uniform_(-2.0, 3.0)
    assert out is x and x._version > before
    v = x.cpu().numpy()
    assert v.min() >= -2.0 and v.max() < 3.0 and abs(v.mean() - 0.5) < 0.03
    x.normal_(5.0, 0.5)
    v = x.cpu().numpy()
    assert abs(v.mean() - 5.0) < 0.01 and abs(v.std() - 0.5) < 0.01
    assert ember.zeros(3).uniform_(2, 2).equal(ember.full((3,), 2.0))
    kw = ember.zeros(1000).uniform_(**{"from": 5.0, "to": 6.0})
    assert kw.min().item() >= 5.0


def test_like_forms_follow_their_input(device):
    base = ember.zeros(2, 3, dtype=ember.float64, device=device)
    for out in (ember.rand_like(base), ember.randn_like(base), ember.randint_like(base, 5)):
        assert out.shape == (2, 3) and out.dtype is ember.float64 and out.device == base.device
    r = ember.randint_like(base, 3, 5)
    assert r.min().item() >= 3 and r.max().item() <= 4
