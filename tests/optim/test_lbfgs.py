"""ember.optim.LBFGS against torch.optim.LBFGS: the same iterates on Rosenbrock's function with
and without the strong-Wolfe line search, the same bookkeeping and checkpoints."""
import numpy as np
import pytest
import torch

import ember
from torch_compare import compare_error


def rosenbrock_setup(lib, dtype="float64", start=(-1.5, 2.0), **options):
    x = lib.tensor(np.array(start, dtype=dtype), requires_grad=True)
    opt = lib.optim.LBFGS([x], **options)

    def closure():
        opt.zero_grad()
        loss = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
        loss.backward()
        return loss
    return x, opt, closure


def quadratic_setup(lib, **options):
    """Two parameters (a matrix and a 0-d tensor), so the flat-vector handling is exercised."""
    rng = np.random.default_rng(0)
    w = lib.tensor(rng.standard_normal((3, 2)).astype("float32"), requires_grad=True)
    b = lib.tensor(np.float32(0.5), requires_grad=True)
    target = lib.tensor(rng.standard_normal((3, 2)).astype("float32"))
    opt = lib.optim.LBFGS([w, b], **options)

    def closure():
        opt.zero_grad()
        loss = ((w - target) ** 2 * lib.arange(1, 7, dtype=lib.float32).reshape(3, 2)).sum() \
            + (b - 2) ** 2 + (w.sum() * b) ** 2 * 0.1
        loss.backward()
        return loss
    return [w, b], opt, closure


def values(tensors):
    return [t.detach().numpy().copy() for t in tensors]


def assert_same_bookkeeping(torch_opt, ember_opt):
    t_state = next(iter(torch_opt.state.values()))
    e_state = next(iter(ember_opt.state.values()))
    assert e_state["func_evals"] == t_state["func_evals"]
    assert e_state["n_iter"] == t_state["n_iter"]
    assert len(e_state["old_dirs"]) == len(t_state["old_dirs"])


ROSENBROCK_OPTIONS = [
    pytest.param(dict(lr=0.5), id="fixed-step"),
    pytest.param(dict(line_search_fn="strong_wolfe"), id="strong-wolfe"),
    pytest.param(dict(line_search_fn="strong_wolfe", history_size=3, max_iter=7), id="wolfe-h3"),
    pytest.param(dict(lr=0.2, history_size=2, max_iter=10, max_eval=12, tolerance_change=1e-5),
                 id="fixed-h2-tolerances"),
]


# Losses and gradients agree bit for bit, but dot products and sums round differently in the two
# frameworks' kernels (summation order, fused multiply-adds), and Rosenbrock's valley amplifies
# that over the ~100 inner iterations: iterates agree to ~1e-8 in float64, to ~1e-5 in float32,
# with the same numbers of iterations and function evaluations.
@pytest.mark.parametrize("options", ROSENBROCK_OPTIONS)
def test_rosenbrock_iterates_match_torch(options):
    torch_x, torch_opt, torch_closure = rosenbrock_setup(torch, **options)
    ember_x, ember_opt, ember_closure = rosenbrock_setup(ember, **options)
    for _ in range(6):
        torch_loss = torch_opt.step(torch_closure)
        ember_loss = ember_opt.step(ember_closure)
        np.testing.assert_allclose(float(ember_loss), float(torch_loss.detach()), rtol=1e-6,
                                   atol=1e-12)
        np.testing.assert_allclose(values([ember_x])[0], values([torch_x])[0], rtol=1e-6)
        assert_same_bookkeeping(torch_opt, ember_opt)


def test_rosenbrock_float32_reaches_the_minimum_like_torch():
    # In float32 the ill-conditioned valley amplifies rounding, so compare where both end.
    torch_x, torch_opt, torch_closure = rosenbrock_setup(torch, "float32",
                                                         line_search_fn="strong_wolfe")
    ember_x, ember_opt, ember_closure = rosenbrock_setup(ember, "float32",
                                                         line_search_fn="strong_wolfe")
    for _ in range(5):
        torch_opt.step(torch_closure)
        ember_opt.step(ember_closure)
    np.testing.assert_allclose(values([ember_x])[0], values([torch_x])[0], atol=1e-4)
    np.testing.assert_allclose(values([ember_x])[0], [1.0, 1.0], atol=1e-4)


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_several_parameters_float32(line_search_fn):
    torch_ps, torch_opt, torch_closure = quadratic_setup(torch, line_search_fn=line_search_fn,
                                                         max_iter=4)
    ember_ps, ember_opt, ember_closure = quadratic_setup(ember, line_search_fn=line_search_fn,
                                                         max_iter=4)
    # Two steps: after that the loss sits at float32 rounding level, where the line search's
    # accept/reject decisions are decided by rounding.
    for _ in range(2):
        torch_opt.step(torch_closure)
        ember_opt.step(ember_closure)
        for t, e in zip(values(torch_ps), values(ember_ps)):
            np.testing.assert_allclose(e, t, rtol=1e-5, atol=1e-6)
        assert_same_bookkeeping(torch_opt, ember_opt)


def test_stops_at_once_when_the_gradient_is_small():
    torch_x, torch_opt, torch_closure = rosenbrock_setup(torch, start=(1.0, 1.0))
    ember_x, ember_opt, ember_closure = rosenbrock_setup(ember, start=(1.0, 1.0))
    torch_opt.step(torch_closure)
    ember_opt.step(ember_closure)
    t_state, e_state = torch_opt.state[torch_x], ember_opt.state[ember_x]
    assert dict(e_state) == dict(t_state) == {"func_evals": 1, "n_iter": 0}


def _to(lib, value):
    if isinstance(value, (torch.Tensor, ember.Tensor)):
        return lib.tensor(value.detach().numpy().copy())
    if isinstance(value, dict):
        return {k: _to(lib, v) for k, v in value.items()}
    if isinstance(value, list):
        return [_to(lib, v) for v in value]
    return value


@pytest.mark.parametrize("source", ["torch", "ember"])
def test_checkpoint_moves_between_frameworks(source):
    options = dict(line_search_fn="strong_wolfe", history_size=4, max_iter=3)
    source_lib = torch if source == "torch" else ember
    x, opt, closure = rosenbrock_setup(source_lib, **options)
    opt.step(closure)
    saved = opt.state_dict()
    resumed = {}
    for lib in (torch, ember):
        rx, ropt, rclosure = rosenbrock_setup(lib, start=values([x])[0], **options)
        ropt.load_state_dict(_to(lib, saved))
        resumed[lib] = rx, ropt, rclosure
    for _ in range(3):
        for lib in (torch, ember):
            _, ropt, rclosure = resumed[lib]
            ropt.step(rclosure)
    np.testing.assert_allclose(values([resumed[ember][0]])[0], values([resumed[torch][0]])[0],
                               rtol=1e-6)
    assert_same_bookkeeping(resumed[torch][1], resumed[ember][1])


def test_bad_arguments():
    def two_groups(lib):
        a, b = lib.zeros(2, requires_grad=True), lib.zeros(2, requires_grad=True)
        lib.optim.LBFGS([{"params": [a]}, {"params": [b]}])
    compare_error(two_groups)
    compare_error(lambda lib: lib.optim.LBFGS([lib.zeros(2, requires_grad=True)], lr=-1.0))

    def unknown_line_search(lib):
        x, opt, closure = rosenbrock_setup(lib, line_search_fn="backtracking")
        opt.step(closure)
    compare_error(unknown_line_search)
