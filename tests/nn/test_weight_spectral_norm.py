"""The deprecated hook-based ``nn.utils.weight_norm``/``spectral_norm`` (parameter names,
state_dict keys and values as torch's) and the full ``nn.init`` namespace."""
import inspect
import warnings

import numpy as np
import pytest
import torch

import ember
from torch_compare import assert_same, compare_error


def _copy_state(torch_module, ember_module):
    ember_module.load_state_dict({k: ember.tensor(v.detach().numpy())
                                  for k, v in torch_module.state_dict().items()})


def _pair(make):
    t, e = make(torch), make(ember)
    _copy_state(t, e)
    return t, e


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return fn(*args, **kwargs)


@pytest.mark.parametrize("dim", [0, 1, None, -1])
def test_weight_norm_matches_torch(dim):
    t, e = _pair(lambda m: m.nn.Conv2d(3, 4, 3))
    _quiet(torch.nn.utils.weight_norm, t, dim=dim)
    with pytest.warns(FutureWarning, match="weight_norm` is deprecated in favor of"):
        ember.nn.utils.weight_norm(e, dim=dim)
    assert list(e.state_dict()) == list(t.state_dict())
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert_same(t.weight_g, e.weight_g)
    assert_same(t.weight_v, e.weight_v, rtol=0, atol=0)
    x = np.random.default_rng(1).standard_normal((2, 3, 6, 6)).astype(np.float32)
    out_t, out_e = t(torch.tensor(x)), e(ember.tensor(x))
    assert_same(out_t, out_e, rtol=1e-5, atol=1e-5)
    out_t.sum().backward()
    out_e.sum().backward()
    assert_same(t.weight_g.grad, e.weight_g.grad, rtol=1e-4, atol=1e-5)
    assert_same(t.weight_v.grad, e.weight_v.grad, rtol=1e-4, atol=1e-5)
    torch.nn.utils.remove_weight_norm(t)
    ember.nn.utils.remove_weight_norm(e)
    assert list(e.state_dict()) == list(t.state_dict())
    assert type(e.weight) is ember.nn.Parameter
    assert_same(t.weight, e.weight, rtol=1e-5, atol=1e-6)


def test_weight_norm_state_dict_loads_across_frameworks_and_errors():
    t, e = _pair(lambda m: m.nn.Linear(5, 3))
    _quiet(torch.nn.utils.weight_norm, t)
    _quiet(ember.nn.utils.weight_norm, e)
    t2 = _quiet(torch.nn.utils.weight_norm, torch.nn.Linear(5, 3))
    t2.load_state_dict({k: torch.tensor(v.detach().numpy()) for k, v in e.state_dict().items()})
    x = np.ones((1, 5), np.float32)
    assert_same(t2(torch.tensor(x)), e(ember.tensor(x)))
    compare_error(lambda m: _quiet(m.nn.utils.weight_norm, t if m is torch else e))
    compare_error(lambda m: m.nn.utils.remove_weight_norm(m.nn.Linear(2, 2)),
                  gist="weight_norm of 'weight' not found in")


def _spectral_pair(make, **kwargs):
    t, e = _pair(make)
    torch.nn.utils.spectral_norm(t, **kwargs)
    ember.nn.utils.spectral_norm(e, **kwargs)
    # Same starting vectors (the random draws differ between the two libraries).
    e.weight_u.copy_(ember.tensor(t.weight_u.numpy()))
    e.weight_v.copy_(ember.tensor(t.weight_v.numpy()))
    return t, e


@pytest.mark.parametrize("make,kwargs", [
    (lambda m: m.nn.Linear(6, 4), {}),
    (lambda m: m.nn.Conv2d(3, 5, 3), {"n_power_iterations": 3}),
    (lambda m: m.nn.ConvTranspose2d(3, 5, 3), {}),
    (lambda m: m.nn.Linear(6, 4), {"dim": 1, "eps": 1e-6}),
])
def test_spectral_norm_matches_torch(make, kwargs):
    t, e = _spectral_pair(make, **kwargs)
    assert list(e.state_dict()) == list(t.state_dict())
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in e.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert e.state_dict()._metadata[""]["spectral_norm"] == \
        t.state_dict()._metadata[""]["spectral_norm"]
    shape = (2, 6) if isinstance(t, torch.nn.Linear) else (2, 3, 7, 7)
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    for _ in range(3):  # power iteration continues in the buffers across calls
        out_t, out_e = t(torch.tensor(x)), e(ember.tensor(x))
        assert_same(out_t, out_e, rtol=1e-4, atol=1e-5)
    assert_same(t.weight_u, e.weight_u, rtol=1e-4, atol=1e-5)
    assert_same(t.weight_v, e.weight_v, rtol=1e-4, atol=1e-5)
    out_t.sum().backward()
    out_e.sum().backward()
    assert_same(t.weight_orig.grad, e.weight_orig.grad, rtol=1e-3, atol=1e-5)
    t.eval()
    e.eval()
    u_before = e.weight_u.clone()
    assert_same(t(torch.tensor(x)), e(ember.tensor(x)), rtol=1e-4, atol=1e-5)
    assert ember.equal(u_before, e.weight_u)  # no power iteration outside training
    torch.nn.utils.remove_spectral_norm(t)
    ember.nn.utils.remove_spectral_norm(e)
    assert list(e.state_dict()) == list(t.state_dict())
    assert type(e.weight) is ember.nn.Parameter
    assert_same(t.weight, e.weight, rtol=1e-4, atol=1e-5)
    assert not e._state_dict_hooks and not e._load_state_dict_pre_hooks


def test_spectral_norm_checkpoints_load_across_frameworks():
    t, e = _spectral_pair(lambda m: m.nn.Linear(6, 4))
    fresh = ember.nn.utils.spectral_norm(ember.nn.Linear(6, 4))
    state = t.state_dict()
    converted = type(state)((k, ember.tensor(v.numpy())) for k, v in state.items())
    converted._metadata = state._metadata
    fresh.load_state_dict(converted)
    fresh.eval()
    t.eval()
    x = np.ones((1, 6), np.float32)
    assert_same(t(torch.tensor(x)), fresh(ember.tensor(x)), rtol=1e-5, atol=1e-6)


def test_spectral_norm_version_0_checkpoint_is_converted_as_torch():
    # A tall weight, so that the conversion's W^T W is invertible (for a wide one torch's
    # pseudo-inverse of a singular float32 matrix is rounding noise in either library).
    t, e = _spectral_pair(lambda m: m.nn.Linear(4, 6))
    t(torch.ones(1, 4))
    old = {k: v for k, v in t.state_dict().items() if k != "weight_v"}
    old["weight"] = t.weight.detach()
    results = []
    for lib in (torch, ember):
        target = lib.nn.utils.spectral_norm(lib.nn.Linear(4, 6))
        state = type(t.state_dict())(
            (k, v if lib is torch else ember.tensor(v.numpy())) for k, v in old.items())
        state._metadata = {"": {"version": 1, "spectral_norm": {"weight.version": 0}}}
        target.load_state_dict(state)
        results.append(target.weight_v)
    assert_same(results[0].detach(), results[1].detach(), rtol=1e-3, atol=1e-5)


def test_spectral_norm_errors_match_torch():
    compare_error(lambda m: m.nn.utils.spectral_norm(m.nn.Linear(2, 2), n_power_iterations=0))
    compare_error(lambda m: m.nn.utils.spectral_norm(m.nn.utils.spectral_norm(m.nn.Linear(2, 2))))
    compare_error(lambda m: m.nn.utils.remove_spectral_norm(m.nn.Linear(2, 2)),
                  gist="spectral_norm of 'weight' not found in")
    compare_error(lambda m: m.nn.utils.spectral_norm(m.nn.Linear(2, 2, bias=False), name="bias"))


# ---- nn.init ----------------------------------------------------------------------------------

def _public_functions(module):
    return sorted(n for n, v in vars(module).items()
                  if inspect.isfunction(v) and v.__module__ == module.__name__)


def test_every_torch_nn_init_function_exists():
    missing = [n for n in _public_functions(torch.nn.init) if not hasattr(ember.nn.init, n)]
    assert not missing


_DEPRECATED = [("uniform", (3, 4)), ("normal", (3, 4)), ("constant", (3, 4)), ("eye", (3, 4)),
               ("dirac", (2, 2, 3)), ("xavier_uniform", (3, 4)), ("xavier_normal", (3, 4)),
               ("kaiming_uniform", (3, 4)), ("kaiming_normal", (3, 4)), ("orthogonal", (3, 4)),
               ("sparse", (3, 4))]


@pytest.mark.parametrize("name,shape", _DEPRECATED)
def test_deprecated_init_names_warn_as_torch(name, shape):
    args = {"constant": (0.5,), "sparse": (0.5,)}.get(name, ())
    with pytest.warns(FutureWarning) as torch_record:
        getattr(torch.nn.init, name)(torch.empty(shape), *args)
    with pytest.warns(FutureWarning) as ember_record:
        out = getattr(ember.nn.init, name)(ember.empty(shape), *args)
    assert str(ember_record[0].message) == str(torch_record[0].message)
    assert ember_record[0].filename == __file__  # attributed to the caller, as torch's
    assert tuple(out.shape) == shape and not bool(out.isnan().any())
    if name in ("constant", "eye", "dirac"):
        expected = getattr(torch.nn.init, name + "_")(torch.empty(shape), *args)
        assert_same(expected, out, rtol=0, atol=0)


def test_no_grad_helpers_fill_as_their_public_forms():
    t = ember.nn.init._no_grad_fill_(ember.empty(3), 2.0)
    assert ember.equal(t, ember.full((3,), 2.0))
    assert ember.equal(ember.nn.init._no_grad_zero_(ember.ones(3)), ember.zeros(3))
    ember.manual_seed(0)
    a = ember.nn.init._no_grad_uniform_(ember.empty(100), -1.0, 1.0)
    assert float(a.min()) >= -1.0 and float(a.max()) < 1.0
    b = ember.nn.init._no_grad_trunc_normal_(ember.empty(100), 0.0, 1.0, -0.5, 0.5)
    assert float(b.abs().max()) <= 0.5
