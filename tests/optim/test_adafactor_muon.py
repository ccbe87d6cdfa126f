"""ember.optim.Adafactor and ember.optim.Muon against torch.optim's: the same weights given the
same gradients follow the same trajectory, state_dicts have torch's layout and move both ways,
and invalid arguments fail as in torch."""
import numpy as np
import pytest
import torch

import ember
from torch_compare import assert_same, compare_error
from test_optimizers import (to_numpy, assert_tree_equal as assert_tree_close,  # noqa: E402
                             convert_state_dict as to_lib)

STEPS = 12


def make_params(lib, specs, seed=0):
    rng = np.random.default_rng(seed)
    return [lib.tensor(rng.standard_normal(shape).astype(dtype), requires_grad=True)
            for shape, dtype in specs]


def set_grads(lib, params, step):
    """Gradients of a fixed loss that changes with the step, by each library's autograd."""
    rng = np.random.default_rng(100 + step)
    for p in params:
        p.grad = None
    loss = 0
    for i, p in enumerate(params):
        target = lib.tensor(rng.standard_normal(tuple(p.shape)).astype(str(p.dtype)[6:]),
                            device=p.device)
        loss = loss + ((p - target) ** 2 * (0.5 + i)).sum() + lib.sin(3 * p).sum() * 0.2
    loss.backward()


def run_both(name, specs, options, steps=STEPS, tol=None, start=None):
    """Steps torch's and Ember's optimizer side by side, checking the parameters every step;
    returns both optimizers and parameter lists."""
    tol = tol or {"rtol": 1e-5, "atol": 1e-6}
    torch_params, ember_params = make_params(torch, specs), make_params(ember, specs)
    torch_opt = getattr(torch.optim, name)(torch_params, **options)
    ember_opt = getattr(ember.optim, name)(ember_params, **options)
    for step in range(steps):
        set_grads(torch, torch_params, step)
        set_grads(ember, ember_params, step)
        torch_opt.step()
        ember_opt.step()
        for t, e in zip(torch_params, ember_params):
            assert_same(t, e, **tol)
    return torch_opt, ember_opt, torch_params, ember_params


# ---- Adafactor ------------------------------------------------------------------------------
ADAFACTOR_SPECS = [((5,), "float32"), ((3, 4), "float32"), ((2, 3, 4), "float32"),
                   ((), "float32"), ((4, 2), "float64")]
ADAFACTOR_CASES = [dict(), dict(lr=0.05), dict(lr=0.05, weight_decay=0.1),
                   dict(lr=0.05, maximize=True), dict(lr=0.05, weight_decay=0.1, maximize=True),
                   dict(lr=0.1, beta2_decay=-0.5, eps=(1e-20, 1e-2), d=2.0),
                   dict(lr=0.1, eps=(1e-3, 1e-3), d=1.0, foreach=False)]


@pytest.mark.parametrize("options", ADAFACTOR_CASES, ids=str)
def test_adafactor_trajectory_and_state_match_torch(options):
    torch_opt, ember_opt, _, _ = run_both("Adafactor", ADAFACTOR_SPECS, options)
    torch_sd, ember_sd = torch_opt.state_dict(), ember_opt.state_dict()
    assert_tree_close(to_numpy(torch_sd), to_numpy(ember_sd), rtol=1e-5, atol=1e-6)
    # Factored state for >= 2-D parameters (over the last two dimensions), full otherwise.
    assert list(ember_sd["state"][0]) == ["step", "variance"]
    assert list(ember_sd["state"][2]) == ["step", "row_var", "col_var"]
    assert tuple(ember_sd["state"][2]["row_var"].shape) == (2, 3, 1)
    assert tuple(ember_sd["state"][2]["col_var"].shape) == (2, 1, 4)
    assert repr(ember_opt) == repr(torch_opt)


def test_adafactor_eps1_comes_from_the_first_parameters_dtype():
    # eps1=None resolves once per group from the first parameter's dtype and is kept for the
    # rest of the group (float32's eps then applies to the float64 parameter), as torch does.
    specs = [((3, 3), "float32"), ((3, 2), "float64")]
    run_both("Adafactor", specs, dict(lr=0.05))
    run_both("Adafactor", specs[::-1], dict(lr=0.05))


def test_adafactor_lr_as_a_tensor():
    specs = ADAFACTOR_SPECS[:3]
    torch_params, ember_params = make_params(torch, specs), make_params(ember, specs)
    torch_opt = torch.optim.Adafactor(torch_params, lr=torch.tensor(0.05), weight_decay=0.1)
    ember_opt = ember.optim.Adafactor(ember_params, lr=ember.tensor(0.05), weight_decay=0.1)
    for step in range(STEPS):
        set_grads(torch, torch_params, step)
        set_grads(ember, ember_params, step)
        torch_opt.step()
        ember_opt.step()
    assert_same(torch_params, ember_params)


@pytest.mark.parametrize("direction", ["torch_to_ember", "ember_to_torch"])
def test_adafactor_checkpoint_continues_identically(direction):
    options = dict(lr=0.05, weight_decay=0.1)
    torch_opt, ember_opt, torch_params, ember_params = run_both(
        "Adafactor", ADAFACTOR_SPECS, options, steps=5)
    # A fresh optimizer on the other side loads the first's state and both continue.
    if direction == "torch_to_ember":
        ember_opt = ember.optim.Adafactor(ember_params, **options)
        ember_opt.load_state_dict(to_lib(torch_opt.state_dict(), ember))
    else:
        torch_opt = torch.optim.Adafactor(torch_params, **options)
        torch_opt.load_state_dict(to_lib(ember_opt.state_dict(), torch))
    for step in range(5, 12):
        set_grads(torch, torch_params, step)
        set_grads(ember, ember_params, step)
        torch_opt.step()
        ember_opt.step()
        assert_same(torch_params, ember_params)
    assert_tree_close(to_numpy(torch_opt.state_dict()), to_numpy(ember_opt.state_dict()),
                      rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kwargs", [dict(lr=-1.0), dict(beta2_decay=0.5),
                                    dict(eps=(-1.0, 1e-3)), dict(eps=(None, -1.0)),
                                    dict(d=0.5), dict(weight_decay=-0.1)], ids=str)
def test_adafactor_invalid_arguments(kwargs):
    compare_error(lambda lib: lib.optim.Adafactor([lib.zeros(2, requires_grad=True)], **kwargs))


def test_adafactor_tensor_lr_must_have_one_element():
    compare_error(lambda lib: lib.optim.Adafactor([lib.zeros(2, requires_grad=True)],
                                                  lr=lib.tensor([0.1, 0.2])))


def test_adafactor_rejects_complex_parameters_before_moving_any():
    def run(lib):
        real = lib.ones(3, requires_grad=True)
        cplx = lib.ones(3, dtype=lib.complex64, requires_grad=True)
        real.grad = lib.ones(3)
        cplx.grad = lib.ones(3, dtype=lib.complex64)
        opt = lib.optim.Adafactor([real, cplx])
        try:
            opt.step()
        finally:
            assert real.detach().numpy().tolist() == [1.0, 1.0, 1.0]
    compare_error(run)


def test_adafactor_defaults_match_torch():
    t = torch.optim.Adafactor([torch.zeros(2, requires_grad=True)])
    e = ember.optim.Adafactor([ember.zeros(2, requires_grad=True)])
    assert e.defaults == t.defaults


# ---- Muon -----------------------------------------------------------------------------------
MUON_SPECS = [((4, 6), "float32"), ((7, 3), "float32"), ((5, 5), "float64")]
MUON_CASES = [dict(), dict(lr=0.02), dict(lr=0.02, nesterov=False, weight_decay=0.0),
              dict(lr=0.02, momentum=0.5, adjust_lr_fn="match_rms_adamw"),
              dict(lr=0.02, adjust_lr_fn="original", ns_steps=3, eps=1e-5),
              dict(lr=0.02, ns_coefficients=(2.0, -1.5, 0.5), weight_decay=0.01)]
# The iteration runs in bfloat16: float32 rounding differences of a few ulps in the momentum
# (or, on larger matrices, torch's accumulation order) can round an update element to the
# neighbouring bfloat16 value, 2**-7 apart near 1, which moves that parameter by lr * 2**-7
# (1.6e-4 at lr=0.02); the tolerance allows a few such flips over the run. The momentum
# buffers follow the gradients, a few times the parameters' difference.
MUON_TOL = {"rtol": 1e-3, "atol": 5e-4}
MUON_STATE_TOL = {"rtol": 1e-3, "atol": 5e-3}


@pytest.mark.parametrize("options", MUON_CASES, ids=str)
def test_muon_trajectory_and_state_match_torch(options):
    torch_opt, ember_opt, _, _ = run_both("Muon", MUON_SPECS, options, tol=MUON_TOL)
    torch_sd, ember_sd = torch_opt.state_dict(), ember_opt.state_dict()
    assert_tree_close(to_numpy(torch_sd), to_numpy(ember_sd), **MUON_STATE_TOL)
    assert list(ember_sd["state"][0]) == ["momentum_buffer"]
    assert repr(ember_opt) == repr(torch_opt)


def test_muon_orthogonalisation_matches_torch_bfloat16_iteration():
    from torch.optim._muon import _zeropower_via_newtonschulz as torch_ns
    from ember.optim.muon import _zeropower_via_newtonschulz as ember_ns
    rng = np.random.default_rng(3)
    for shape in [(8, 16), (16, 8), (12, 12)]:
        g = rng.standard_normal(shape).astype(np.float32)
        expected = torch_ns(torch.tensor(g), (3.4445, -4.7750, 2.0315), 5, 1e-7)
        actual = ember_ns(np, g, (3.4445, -4.7750, 2.0315), 5, 1e-7)
        assert expected.dtype == torch.bfloat16
        np.testing.assert_allclose(actual, expected.float().numpy(), rtol=1e-2, atol=1e-2)
        # Every value is a bfloat16 one, as torch's.
        np.testing.assert_array_equal(actual, actual.astype(ember.bfloat16.np).astype(np.float32))


def test_muon_checkpoint_loads_from_torch():
    options = dict(lr=0.02)
    torch_opt, _, torch_params, ember_params = run_both("Muon", MUON_SPECS, options, steps=4,
                                                        tol=MUON_TOL)
    ember_opt = ember.optim.Muon(ember_params, **options)
    ember_opt.load_state_dict(to_lib(torch_opt.state_dict(), ember))
    for step in range(4, 10):
        set_grads(torch, torch_params, step)
        set_grads(ember, ember_params, step)
        torch_opt.step()
        ember_opt.step()
        assert_same(torch_params, ember_params, **MUON_TOL)


@pytest.mark.parametrize("shape", [(3,), (2, 3, 4), ()])
def test_muon_rejects_parameters_that_are_not_matrices(shape):
    compare_error(lambda lib: lib.optim.Muon([lib.zeros(shape, requires_grad=True)]))


@pytest.mark.parametrize("kwargs", [dict(lr=-1.0), dict(momentum=-0.5),
                                    dict(weight_decay=-0.1), dict(adjust_lr_fn="spectral")],
                         ids=str)
def test_muon_invalid_arguments(kwargs):
    compare_error(lambda lib: lib.optim.Muon([lib.zeros(2, 2, requires_grad=True)], **kwargs))


def test_muon_group_added_later_fails_at_step_on_its_gradient():
    def run(lib):
        opt = lib.optim.Muon([lib.zeros(2, 2, requires_grad=True)])
        vector = lib.zeros(3, requires_grad=True)
        opt.add_param_group({"params": [vector]})
        vector.grad = lib.ones(3)
        opt.step()
    compare_error(run)


def test_muon_invalid_iteration_settings_fail_at_step():
    for kwargs in (dict(ns_steps=100), dict(ns_coefficients=(1.0, 2.0))):
        def run(lib):
            p = lib.zeros(2, 2, requires_grad=True)
            p.grad = lib.ones(2, 2)
            lib.optim.Muon([p], **kwargs).step()
        compare_error(run)


def test_muon_rejects_complex_parameters():
    def run(lib):
        p = lib.zeros(2, 2, dtype=lib.complex64, requires_grad=True)
        p.grad = lib.ones(2, 2, dtype=lib.complex64)
        lib.optim.Muon([p]).step()
    compare_error(run)


def test_muon_defaults_match_torch():
    t = torch.optim.Muon([torch.zeros(2, 2, requires_grad=True)])
    e = ember.optim.Muon([ember.zeros(2, 2, requires_grad=True)])
    assert e.defaults == t.defaults


def test_new_optimizers_are_listed():
    assert {"Adafactor", "Muon"} <= set(ember.optim.__all__)
    assert {"Adafactor", "Muon"} <= set(torch.optim.__all__)


@pytest.mark.parametrize("name,shape", [("Adafactor", (3,)), ("Muon", (3, 2))])
def test_sparse_gradients_are_refused(name, shape):
    def run(lib):
        p = lib.zeros(shape, requires_grad=True)
        indices = [[0, 2]] if len(shape) == 1 else [[0, 2], [1, 0]]
        p.grad = lib.sparse_coo_tensor(indices, [1.0, 2.0], shape)
        getattr(lib.optim, name)([p]).step()
    compare_error(run)


@pytest.mark.parametrize("name,specs,options", [
    ("Adafactor", ADAFACTOR_SPECS[:3], dict(lr=0.05, weight_decay=0.1)),
    ("Muon", MUON_SPECS[:2], dict(lr=0.02))])
def test_steps_on_another_device_match_the_cpu(device, name, specs, options):
    # Same backend arithmetic on every device: the trajectories are identical.
    results = []
    for where in ("cpu", device):
        params = [p.detach().to(where).requires_grad_(True) for p in make_params(ember, specs)]
        opt = getattr(ember.optim, name)(params, **options)
        for step in range(4):
            set_grads(ember, params, step)
            opt.step()
        assert all(p.device.type == where for p in params)
        # Buffers live with their parameter; Adafactor's "step" stays on the CPU, as torch's.
        assert all(t.device.type == ("cpu" if key == "step" else where)
                   for s in opt.state.values() for key, t in s.items())
        results.append([p.detach().cpu().numpy() for p in params])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
