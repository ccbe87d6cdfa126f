"""Random numbers drawn on the device (issue 16): one default generator per device, Philox
state (seed, offset) replay, seeding, generator/device mismatch errors, ``fork_rng`` and
checkpoint preserving device streams, and proof that a device tensor's draws are made on the
device.

Devices used: "cupyconf", the CuPy conformance device (tests/conformance: the real CUDA backend
over a strict NumPy-backed stand-in for CuPy 14.2 that refuses host arrays in device maths; a
conformance device, not a GPU), and "rngdev", a third-party NumPy-backed device registered here
that draws on its device through the Backend contract (so it can have several indices, which
the conformance device does not). The ``cuda`` tests run the same checks on a real GPU and skip
without one. Device streams are Philox, not torch's, so values are compared with the host
reference of the same algorithm, and with torch only where torch can answer (errors on the CPU,
moments of distributions, the CPU-build behaviour of ``torch.cuda``).
"""
import numpy as np
import pytest
import torch

import ember
from ember import _random
from ember.backends import get_backend, is_known_device_type, register_backend
from ember.backends._philox import philox4x32, philox4x32_reference
from ember.backends.numpy_backend import NumpyBackend

from conformance.backend import CupyConformanceBackend
from conformance import strict_cupy


class RngDeviceBackend(NumpyBackend):
    """A NumPy-backed device with any number of indices that draws on its device."""
    device_type = "rngdev"
    draws_on_device = True


if not is_known_device_type("cupyconf"):
    register_backend("cupyconf", CupyConformanceBackend)
if not is_known_device_type("rngdev"):
    register_backend("rngdev", RngDeviceBackend)

DEVICE_DRAWING = ["cupyconf", "rngdev"]


@pytest.fixture(params=DEVICE_DRAWING)
def ddev(request):
    return request.param


def _host(t):
    return t.cpu().numpy()


def _reference_words(seed, first_block, blocks):
    key = (seed & 0xFFFF_FFFF, seed >> 32)
    return np.array([w for b in range(first_block, first_block + blocks)
                     for w in philox4x32_reference(key, (b & 0xFFFF_FFFF, b >> 32, 0, 0))],
                    dtype=np.uint32)


# ---- the Philox stream ---------------------------------------------------------------------

def test_philox_known_answers():
    """Random123's known-answer vectors for Philox4x32-10."""
    assert philox4x32_reference((0, 0), (0, 0, 0, 0)) == (
        0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)
    assert philox4x32_reference((0xffffffff,) * 2, (0xffffffff,) * 4) == (
        0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)
    assert philox4x32_reference((0xa4093822, 0x299f31d0),
                                (0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344)) == (
        0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1)


def test_array_philox_matches_reference_across_the_32_bit_carry():
    seed, first = 0x0123_4567_89ab_cdef, 2 ** 32 - 2  # counters cross into word 1
    words = philox4x32(np, seed, first, 4)
    np.testing.assert_array_equal(words, _reference_words(seed, first, 4))


def test_device_words_are_the_reference_words(ddev):
    backend = get_backend(ember.device(ddev, 0))
    words = backend.random_bits(99, 7, 5)
    assert isinstance(words, backend.xp.ndarray)  # made on the device
    np.testing.assert_array_equal(backend.to_numpy(words), _reference_words(99, 7, 5))


def test_rand_values_are_the_seeded_stream(ddev):
    """Run-to-run reproducibility: the values of a seed are fixed by the algorithm."""
    ember.manual_seed(123)
    x = ember.rand(6, device=ddev)
    expected = (_reference_words(123, 0, 2)[:6] >> 8).astype(np.float32) * np.float32(2 ** -24)
    np.testing.assert_array_equal(_host(x), expected)
    gen = _random.device_default_generator(ember.device(ddev, 0))
    assert gen.get_offset() == 8  # 6 words used, rounded up to whole blocks


# ---- generators, seeding, state ------------------------------------------------------------

def test_device_generator_kind_and_defaults(ddev):
    g = ember.Generator(device=ddev)
    assert g.device == ember.device(ddev, 0)
    assert g.initial_seed() == torch.Generator().initial_seed()
    assert g.get_offset() == 0
    state = g.get_state()
    assert state.dtype is ember.uint8 and tuple(state.shape) == (16,)
    assert state.device == ember.device("cpu")
    assert bytes(state.tolist()) == (67280421310721).to_bytes(8, "little") + bytes(8)


def test_cpu_generator_has_no_offset_as_torch():
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="CPU Generator does not use offset"):
            lib.Generator().get_offset()
        with pytest.raises(RuntimeError, match="CPU Generator does not use offset"):
            lib.Generator().set_offset(4)


def test_state_replay(ddev):
    gen = _random.device_default_generator(ember.device(ddev, 0))
    ember.rand(5, device=ddev)
    state = gen.get_state()
    x = [ember.randn(7, device=ddev), ember.randint(0, 100, (9,), device=ddev),
         ember.empty(11, device=ddev).bernoulli_(0.3)]
    gen.set_state(state)
    y = [ember.randn(7, device=ddev), ember.randint(0, 100, (9,), device=ddev),
         ember.empty(11, device=ddev).bernoulli_(0.3)]
    for a, b in zip(x, y):
        np.testing.assert_array_equal(_host(a), _host(b))


def test_explicit_generator_replay_and_offset(ddev):
    g = ember.Generator(device=ddev).manual_seed(7)
    a = ember.rand(10, device=ddev, generator=g)
    assert g.get_offset() == 12
    g.set_offset(0)
    np.testing.assert_array_equal(_host(ember.rand(10, device=ddev, generator=g)), _host(a))
    with pytest.raises(RuntimeError, match="offset must be a multiple of 4"):
        g.set_offset(3)
    g.manual_seed(7)  # reseeding rewinds, as torch's CUDA generator
    assert g.get_offset() == 0


def test_state_sizes(ddev):
    g = ember.Generator(device=ddev)
    g.set_state(ember.tensor(list((5).to_bytes(8, "little")), dtype=ember.uint8))
    assert g.initial_seed() == 5 and g.get_offset() == 0  # the seed alone, as torch accepts
    with pytest.raises(RuntimeError, match="RNG state is wrong size"):
        g.set_state(ember.zeros(45, dtype=ember.uint8))
    with pytest.raises(TypeError, match="RNG state must be a ember.ByteTensor"):
        g.set_state(ember.zeros(16))


def test_manual_seed_reproducible_and_reaches_every_device(ddev):
    ember.manual_seed(2024)
    a = _host(ember.randn(8, device=ddev))
    c = _host(ember.rand(4))
    ember.manual_seed(2024)
    np.testing.assert_array_equal(_host(ember.randn(8, device=ddev)), a)
    np.testing.assert_array_equal(_host(ember.rand(4)), c)  # the CPU stream too
    ember.manual_seed(2025)
    assert not np.array_equal(_host(ember.randn(8, device=ddev)), a)


def test_manual_seed_reaches_devices_first_used_later():
    ember.manual_seed(31)
    late = _random.device_default_generator(ember.device("rngdev", 6))
    assert late.initial_seed() == 31 and late.get_offset() == 0
    ember.seed()
    assert late.initial_seed() == ember.initial_seed()


def test_streams_per_device_are_independent():
    ember.manual_seed(0)
    a0 = _host(ember.rand(6, device="rngdev:0"))
    ember.manual_seed(0)
    ember.rand(100, device="rngdev:1")  # drawing on device 1 ...
    np.testing.assert_array_equal(_host(ember.rand(6, device="rngdev:0")), a0)  # ... not on 0
    g0 = _random.device_default_generator(ember.device("rngdev", 0))
    g1 = _random.device_default_generator(ember.device("rngdev", 1))
    assert g0 is not g1 and g0.get_offset() == 8 and g1.get_offset() == 100


def test_conformance_devices_have_independent_streams():
    from conformance import strict_cuda_runtime
    previous = strict_cuda_runtime.configure(device_count=2)
    try:
        ember.manual_seed(4)
        a0 = _host(ember.randn(6, device="cupyconf:0"))
        ember.manual_seed(4)
        b1 = _host(ember.randn(6, device="cupyconf:1"))  # the same seed, its own stream
        np.testing.assert_array_equal(_host(ember.randn(6, device="cupyconf:0")), a0)
        np.testing.assert_array_equal(b1, a0)
        x = ember.randn(6, device="cupyconf:1")
        assert x.device == ember.device("cupyconf", 1)
        assert isinstance(x._data, strict_cupy.DeviceArray)
        # 6 normals are 3 Box-Muller pairs: 2 blocks of words; device 1 drew twice, 0 once.
        offsets = [_random.device_default_generator(ember.device("cupyconf", i)).get_offset()
                   for i in (0, 1)]
        assert offsets == [8, 16]
    finally:
        strict_cuda_runtime.configure(*previous)


def test_device_draws_leave_the_cpu_stream_alone(ddev):
    before = ember.get_rng_state()
    ember.rand(50, device=ddev)
    ember.nn.functional.dropout(ember.ones(50, device=ddev), 0.5)
    assert ember.get_rng_state().equal(before)


def test_generator_pickles_with_its_state(ddev):
    import pickle
    g = ember.Generator(device=ddev).manual_seed(9)
    ember.rand(3, device=ddev, generator=g)
    h = pickle.loads(pickle.dumps(g))
    assert h.device == g.device and h.get_offset() == g.get_offset()
    np.testing.assert_array_equal(_host(ember.rand(5, device=ddev, generator=h)),
                                  _host(ember.rand(5, device=ddev, generator=g)))


# ---- generator/device mismatch -------------------------------------------------------------

def test_mismatched_generator_raises_atens_message(ddev):
    # ATen's check_generator: "Expected a '<tensor's device type>' device type for generator
    # but found '<generator's device type>'" (torch's CPU build has no second device to show it).
    cpu_gen, dev_gen = ember.Generator(), ember.Generator(device=ddev)
    msg = f"Expected a '{ddev}' device type for generator but found 'cpu'"
    with pytest.raises(RuntimeError, match=msg):
        ember.rand(3, device=ddev, generator=cpu_gen)
    with pytest.raises(RuntimeError, match=msg):
        ember.empty(3, device=ddev).normal_(generator=cpu_gen)
    with pytest.raises(RuntimeError, match=msg):
        ember.bernoulli(ember.full((3,), 0.5, device=ddev), generator=cpu_gen)
    msg = f"Expected a 'cpu' device type for generator but found '{ddev}'"
    with pytest.raises(RuntimeError, match=msg):
        ember.rand(3, generator=dev_gen)
    with pytest.raises(RuntimeError, match=msg):
        ember.randperm(4, generator=dev_gen)


def test_cpu_generator_error_type_as_torch():
    for lib in (torch, ember):
        with pytest.raises(TypeError):
            lib.rand(3, generator=3)


# ---- no host draws -------------------------------------------------------------------------

def _refuse_host_copies(monkeypatch, backend):
    """Make ``backend``'s copy of host data (arrays, scalars, lists) onto the device fail."""
    copy_in = backend.asarray

    def device_arrays_only(data, *args, **kwargs):
        if isinstance(data, (np.ndarray, np.generic, list)):
            raise AssertionError("a host-to-device copy during device sampling")
        return copy_in(data, *args, **kwargs)

    monkeypatch.setattr(backend, "asarray", device_arrays_only)


def test_no_host_copy_during_device_sampling(monkeypatch):
    """Every sampler on the conformance device, with the backend's host-to-device copy and
    the CPU generator's NumPy stream made to fail: the draws can only have come from the device
    generator (and the stand-in itself refuses any host array mixed into device maths)."""
    dev = "cupyconf"
    probs = ember.full((4, 5), 0.2, device=dev)
    lam = ember.full((6,), 4.0, device=dev)
    gamma = ember.distributions.Gamma(ember.full((6,), 2.0, device=dev), 1.0)
    _refuse_host_copies(monkeypatch, get_backend(ember.device(dev, 0)))

    class NoHostStream:
        def __getattr__(self, name):
            raise AssertionError("a host draw during device sampling")

    monkeypatch.setattr(ember.default_generator, "_np", NoHostStream())
    gen = _random.device_default_generator(ember.device(dev, 0))
    start = gen.get_offset()
    results = [ember.rand(5, device=dev), ember.randn(5, device=dev),
               ember.randint(0, 7, (5,), device=dev), ember.randperm(6, device=dev),
               ember.normal(0.0, 2.0, (4,), device=dev), ember.bernoulli(probs),
               ember.multinomial(probs, 3), ember.multinomial(probs, 7, replacement=True),
               ember.poisson(lam), ember.nn.functional.dropout(ember.ones(9, device=dev), 0.5),
               gamma.sample()]
    for t in ("uniform_", "normal_", "bernoulli_", "exponential_", "random_", "log_normal_",
              "cauchy_"):
        results.append(getattr(ember.empty(5, device=dev), t)())
    results.append(ember.empty(5, device=dev).geometric_(0.4))
    for r in results:
        assert r.device == ember.device(dev, 0)
        assert isinstance(r._data, strict_cupy.DeviceArray)
    assert gen.get_offset() > start


def test_dropout_mask_comes_from_the_device_generator(ddev):
    gen = _random.device_default_generator(ember.device(ddev, 0))
    state = gen.get_state()
    y = ember.nn.functional.dropout(ember.ones(1000, device=ddev), 0.25)
    gen.set_state(state)
    keep = ember.empty(1000, device=ddev).bernoulli_(0.75)
    np.testing.assert_array_equal(_host(y), _host(keep) / 0.75)
    assert set(np.unique(_host(y)).tolist()) == {0.0, float(np.float32(1 / 0.75))}


# ---- samplers on the device: ranges and statistics against torch's distributions -----------

def test_uniform_and_normal_moments(ddev):
    u = _host(ember.rand(200_000, device=ddev, dtype=ember.float64))
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.005
    z = _host(ember.randn(200_000, device=ddev))
    assert abs(z.mean()) < 0.01 and abs(z.var() - 1) < 0.01
    h = _host(ember.rand(50_000, device=ddev, dtype=ember.float16))
    assert h.dtype == np.float16 and h.min() >= 0
    c = ember.randn(1000, device=ddev, dtype=ember.complex64)
    assert c.dtype is ember.complex64


def test_integer_samplers(ddev):
    r = _host(ember.randint(-5, 5, (20_000,), device=ddev))
    assert r.min() == -5 and r.max() == 4 and r.dtype == np.int64
    big = _host(ember.randint(-2 ** 62, 2 ** 62, (1000,), device=ddev))
    assert big.min() < -2 ** 60 and big.max() > 2 ** 60
    p = _host(ember.randperm(1000, device=ddev))
    np.testing.assert_array_equal(np.sort(p), np.arange(1000))
    x = _host(ember.empty(1000, device=ddev, dtype=ember.int32).random_(3, 9))
    assert x.min() == 3 and x.max() == 8


@pytest.mark.parametrize("name, args, torch_dist", [
    ("exponential_", (2.0,), torch.distributions.Exponential(2.0)),
    ("geometric_", (0.3,), torch.distributions.Geometric(0.3)),
    ("log_normal_", (0.0, 0.5), torch.distributions.LogNormal(0.0, 0.5)),
    ("normal_", (1.0, 3.0), torch.distributions.Normal(1.0, 3.0)),
    ("uniform_", (-2.0, 4.0), torch.distributions.Uniform(-2.0, 4.0)),
])
def test_inplace_sampler_moments(ddev, name, args, torch_dist):
    x = _host(getattr(ember.empty(200_000, device=ddev, dtype=ember.float64), name)(*args))
    mean, var = float(torch_dist.mean), float(torch_dist.variance)
    if name == "geometric_":
        mean += 1  # torch's geometric_ counts trials (>= 1); the distribution counts failures
    assert abs(x.mean() - mean) < 0.02 * max(1.0, abs(mean))
    assert abs(x.var() - var) < 0.05 * var


def test_rejection_samplers_moments(ddev):
    lam = torch.tensor([0.5, 3.0, 12.0, 300.0])
    pois = _host(ember.poisson(ember.tensor(lam.repeat(20_000).tolist(), device=ddev)))
    pois = pois.reshape(20_000, 4)
    np.testing.assert_allclose(pois.mean(0), lam.numpy(), rtol=0.03)
    np.testing.assert_allclose(pois.var(0), torch.distributions.Poisson(lam).variance.numpy(),
                               rtol=0.08)
    probs = torch.tensor([0.05, 0.3, 0.7, 0.97], dtype=torch.float64)
    count = ember.full((80_000,), 60.0, device=ddev, dtype=ember.float64)
    binom = _host(ember.binomial(count, ember.tensor(probs.repeat(20_000).tolist(),
                                                     device=ddev, dtype=ember.float64)))
    binom = binom.reshape(20_000, 4)
    ref = torch.distributions.Binomial(60, probs)
    np.testing.assert_allclose(binom.mean(0), ref.mean.numpy(), rtol=0.03)
    np.testing.assert_allclose(binom.var(0), ref.variance.numpy(), rtol=0.08)
    assert binom.min() >= 0 and binom.max() <= 60
    conc = torch.tensor([0.2, 1.0, 7.5])
    gam = _host(ember.distributions.Gamma(
        ember.tensor(conc.repeat(30_000).tolist(), device=ddev), 1.0).sample()).reshape(-1, 3)
    np.testing.assert_allclose(gam.mean(0), conc.numpy(), rtol=0.05)
    np.testing.assert_allclose(gam.var(0), conc.numpy(), rtol=0.1)


def test_multinomial_and_categorical_frequencies(ddev):
    probs = [0.1, 0.0, 0.6, 0.3]
    rows = ember.tensor([probs] * 4, device=ddev)
    with_r = _host(ember.multinomial(rows, 20_000, replacement=True))
    freq = np.bincount(with_r.ravel(), minlength=4) / with_r.size
    np.testing.assert_allclose(freq, probs, atol=0.01)
    without = _host(ember.multinomial(rows, 3))
    assert all(len(set(r)) == 3 and 1 not in r for r in without.tolist())
    cat = _host(ember.distributions.Categorical(probs=ember.tensor(probs, device=ddev))
                .sample((40_000,)))
    np.testing.assert_allclose(np.bincount(cat, minlength=4) / cat.size, probs, atol=0.01)


def test_device_sampler_errors_as_torch(ddev):
    bad = [[0.5, -0.1]]
    for replacement, msg in ((False, "probability tensor contains either `inf`, `nan` or "
                                     "element < 0"),
                             (True, "invalid multinomial distribution \\(encountering "
                                    "probability entry < 0\\)")):
        with pytest.raises(RuntimeError, match=msg):
            torch.multinomial(torch.tensor(bad), 2, replacement=replacement)
        with pytest.raises(RuntimeError, match=msg):
            ember.multinomial(ember.tensor(bad, device=ddev), 2, replacement=replacement)
    msg = "Expected p_in >= 0 && p_in <= 1 to be true"
    with pytest.raises(RuntimeError, match=msg):
        torch.bernoulli(torch.tensor([1.5]))
    with pytest.raises(RuntimeError, match=msg):
        ember.bernoulli(ember.tensor([1.5], device=ddev))


# ---- fork_rng and checkpoint ---------------------------------------------------------------

def test_fork_rng_covers_device_generators(ddev):
    gen = _random.device_default_generator(ember.device(ddev, 0))
    before_cpu, before_dev = ember.get_rng_state(), gen.get_state()
    with ember.random.fork_rng(devices=[0], device_type=ddev):
        ember.rand(10, device=ddev)
        ember.rand(10)
        assert not gen.get_state().equal(before_dev)
    assert gen.get_state().equal(before_dev) and ember.get_rng_state().equal(before_cpu)


def test_fork_rng_all_made_devices_by_default():
    g1 = _random.device_default_generator(ember.device("rngdev", 1))
    state = g1.get_state()
    with pytest.warns(UserWarning, match="RNGDEV reports that you have"):
        with ember.random.fork_rng(device_type="rngdev"):
            ember.rand(10, device="rngdev:1")
    assert g1.get_state().equal(state)


def test_fork_rng_default_device_type_without_cuda_as_torch():
    # torch's CPU build forks the CPU stream only; so does Ember's without CUDA.
    for lib in (torch, ember):
        lib.manual_seed(5)
        with lib.random.fork_rng():
            lib.rand(3)
        after = lib.rand(3)
        lib.manual_seed(5)
        np.testing.assert_array_equal(after.numpy(), lib.rand(3).numpy())


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_replays_device_dropout(ddev, use_reentrant):
    from ember.utils.checkpoint import checkpoint

    def block(x):
        return ember.nn.functional.dropout(x * 2.0, 0.5).sum(0)

    base = ember.randn(64, 8, device=ddev)
    gen = _random.device_default_generator(ember.device(ddev, 0))
    state = gen.get_state()
    x = base.clone().requires_grad_(True)
    block(x).sum().backward()
    expected = _host(x.grad)
    gen.set_state(state)
    x = base.clone().requires_grad_(True)
    y = checkpoint(block, x, use_reentrant=use_reentrant)
    after_forward = gen.get_state()
    y.sum().backward()
    np.testing.assert_array_equal(_host(x.grad), expected)  # the recomputation's mask matched
    assert gen.get_state().equal(after_forward)  # and drew nothing from the outer stream


# ---- ember.cuda without CUDA, as torch's CPU build ----------------------------------------

def test_cuda_random_without_cuda_as_torch_cpu_build():
    from ember.cuda import random as cuda_random
    if ember.cuda.is_available():
        pytest.skip("CUDA is present")
    for lib_random in (torch.cuda.random, cuda_random):
        assert lib_random.get_rng_state_all() == []
        assert lib_random.manual_seed(3) is None
        assert lib_random.manual_seed_all(3) is None
        assert lib_random.seed() is None and lib_random.seed_all() is None
        assert lib_random.set_rng_state(torch.zeros(16, dtype=torch.uint8)) is None
        for f in (lib_random.get_rng_state, lib_random.initial_seed):
            with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
                f()
    assert cuda_random._default_generators() == torch.cuda.default_generators == ()


# ---- on a real GPU -------------------------------------------------------------------------

@pytest.mark.cuda
def test_cuda_words_match_reference():
    backend = get_backend(ember.device("cuda", 0))
    words = backend.random_bits(2 ** 40 + 3, 2 ** 32 - 1, 1000)
    np.testing.assert_array_equal(backend.to_numpy(words), philox4x32(np, 2 ** 40 + 3,
                                                                      2 ** 32 - 1, 1000))


@pytest.mark.cuda
def test_cuda_rng_state_replay_and_seeding():
    from ember.cuda import random as cuda_random
    cuda_random.manual_seed_all(11)
    state = cuda_random.get_rng_state()
    assert tuple(state.shape) == (16,) and bytes(state.tolist()[:8]) == (11).to_bytes(8, "little")
    a = _host(ember.randn(1000, device="cuda"))
    cuda_random.set_rng_state(state)
    np.testing.assert_array_equal(_host(ember.randn(1000, device="cuda")), a)
    ember.manual_seed(11)  # seeds every CUDA device too
    np.testing.assert_array_equal(_host(ember.randn(1000, device="cuda")), a)
    assert cuda_random.initial_seed() == 11
    assert len(cuda_random.get_rng_state_all()) == ember.cuda.device_count()


@pytest.mark.cuda
def test_cuda_samplers_draw_on_the_device(monkeypatch):
    _refuse_host_copies(monkeypatch, get_backend(ember.device("cuda", 0)))
    y = ember.nn.functional.dropout(ember.ones(10_000, device="cuda"), 0.5)
    z = ember.randn(10_000, device="cuda")
    monkeypatch.undo()
    assert y.device.type == "cuda" and abs(float(y.mean()) - 1) < 0.05
    assert abs(float(z.mean())) < 0.05


@pytest.mark.cuda
def test_cuda_checkpoint_and_fork_rng():
    from ember.cuda import random as cuda_random
    from ember.utils.checkpoint import checkpoint
    base = ember.randn(64, 8, device="cuda")
    state = cuda_random.get_rng_state()
    with ember.random.fork_rng():  # the default device type is the accelerator's: cuda
        ember.rand(10, device="cuda")
    assert cuda_random.get_rng_state().equal(state)

    def block(x):
        return ember.nn.functional.dropout(x, 0.5).sum(0)

    x = base.clone().requires_grad_(True)
    block(x).sum().backward()
    expected = _host(x.grad)
    cuda_random.set_rng_state(state)
    x = base.clone().requires_grad_(True)
    checkpoint(block, x, use_reentrant=False).sum().backward()
    np.testing.assert_array_equal(_host(x.grad), expected)
