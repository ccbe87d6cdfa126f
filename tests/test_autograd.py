"""The autograd engine against PyTorch: accumulation, fan-out, broadcasting, ``backward``/``grad``
arguments, higher-order gradients, error messages, hooks, anomaly detection and gradcheck.

Most tests run one function twice, as ``fn(torch)`` and ``fn(ember)``, and compare the results."""
import time
import warnings

import numpy as np
import pytest
import torch

import ember
from ember.autograd.gradcheck import GradcheckError
from torch_compare import compare, compare_error


def on(lib, device):
    """The device a test tensor lives on: Ember's under test, torch's always the CPU."""
    return device if lib is ember else "cpu"


def leaf(lib, values, device="cpu", dtype=None):
    return lib.tensor(values, dtype=dtype or lib.float32, device=on(lib, device),
                      requires_grad=True)


# ---------------------------------------------------------------------------------------------
# Accumulation, fan-out, broadcasting, dtypes
# ---------------------------------------------------------------------------------------------

def test_grad_accumulates_across_backward_calls(device):
    def fn(lib):
        x = leaf(lib, [1.0, 2.0, 3.0], device)
        (x * x).sum().backward()
        first = x.grad.clone()
        (x * 2).sum().backward()
        (x.exp()).sum().backward()
        return first, x.grad
    compare(fn)


def test_fan_out_sums_every_use(device):
    def fn(lib):
        x = leaf(lib, [0.5, -1.0, 2.0], device)
        y = x * x
        z = y + y * x + x.exp() + y.sin() * y
        z.sum().backward()
        return x.grad
    compare(fn)


def test_broadcast_gradients_are_reduced_to_each_leaf(device):
    def fn(lib):
        a = lib.arange(3.0, device=on(lib, device)).reshape(3, 1).requires_grad_()
        b = lib.arange(4.0, device=on(lib, device)).requires_grad_()
        out = a * b + a - b.exp()
        (out * out).sum().backward()
        return a.grad, b.grad
    compare(fn)


def test_gradient_into_float32_leaf_from_float64_use_is_float32():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        w = lib.tensor([3.0, 4.0], dtype=lib.float64)
        (x * w).sum().backward()
        return x.grad, x.grad.dtype is lib.float32
    compare(fn)


def test_mixed_dtype_grad_of_both_leaves():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        w = leaf(lib, [3.0, 4.0], dtype=lib.float64)
        (x * w + x).sum().backward()
        return x.grad, w.grad
    compare(fn)


def test_leaf_scalar_backward_gives_ones():
    def fn(lib):
        x = leaf(lib, 3.0)
        x.backward()
        return x.grad
    compare(fn)


def test_existing_grad_is_added_to():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        x.grad = lib.ones(2)
        (x * 3).sum().backward()
        return x.grad
    compare(fn)


# ---------------------------------------------------------------------------------------------
# backward / grad arguments
# ---------------------------------------------------------------------------------------------

def test_backward_with_explicit_gradient(device):
    def fn(lib):
        x = leaf(lib, [[1.0, 2.0], [3.0, 4.0]], device)
        y = x.exp() * 2
        y.backward(lib.tensor([[1.0, -1.0], [0.5, 2.0]], device=on(lib, device)))
        return x.grad
    compare(fn)


def test_autograd_backward_several_roots():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        y = x * 3
        lib.autograd.backward([(x * 2).sum(), y], [None, lib.tensor([1.0, 5.0])])
        return x.grad
    compare(fn)


def test_autograd_backward_grad_variables_alias():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        with pytest.warns(FutureWarning, match="`grad_variables` is deprecated"):
            lib.autograd.backward(x * x, grad_variables=lib.tensor([2.0, 1.0]))
        return x.grad
    compare(fn)


def test_retain_graph_allows_a_second_backward():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        y = (x.exp() * x).sum()
        y.backward(retain_graph=True)
        y.backward()
        return x.grad
    compare(fn)


def test_grad_returns_gradients_and_leaves_dot_grad_alone():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        w = leaf(lib, [0.5, -0.5])
        out = (x * w).tanh().sum()
        grads = lib.autograd.grad(out, [x, w])
        return grads, x.grad, w.grad
    compare(fn)


def test_grad_with_grad_outputs_and_several_outputs():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        y = x * 2
        return lib.autograd.grad([y.sum(), y * y], x, [None, lib.tensor([1.0, 3.0])])
    compare(fn)


def test_grad_with_dict_inputs():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        w = leaf(lib, [3.0, 4.0])
        return lib.autograd.grad((x * w).sum(), {"x": x, "w": w})
    compare(fn)


def test_grad_allow_unused_and_materialize_grads():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        unused = leaf(lib, [3.0, 4.0])
        out = (x * 2).sum()
        return (lib.autograd.grad(out, [x, unused], retain_graph=True, allow_unused=True),
                lib.autograd.grad(out, [x, unused], materialize_grads=True))
    compare(fn)


def test_grad_is_grads_batched():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0, 3.0])
        y = x * x
        return lib.autograd.grad(y, x, lib.eye(3), is_grads_batched=True)
    compare(fn)


def test_grad_runs_only_the_part_of_the_graph_it_needs():
    def fn(lib):
        calls = []

        class Logged(lib.autograd.Function):
            @staticmethod
            def forward(ctx, t, name):
                ctx.name = name
                return t * 1

            @staticmethod
            def backward(ctx, g):
                calls.append(ctx.name)
                return g, None

        x = leaf(lib, [1.0, 2.0])
        w = leaf(lib, [3.0, 4.0])
        h = Logged.apply(x, "x-branch") * Logged.apply(w, "w-branch")
        gx, = lib.autograd.grad(h.sum(), x)
        return gx, sorted(calls), x.grad, w.grad
    compare(fn)


def test_backward_inputs_restricts_accumulation():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        w = leaf(lib, [3.0, 4.0])
        (x * w).sum().backward(inputs=[x])
        first = (x.grad.clone(), w.grad)
        (x * w).sum().backward(inputs=w)
        return first, x.grad, w.grad
    compare(fn)


def test_backward_inputs_can_name_a_non_leaf():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        h = x * 3
        (h * h).sum().backward(inputs=[h])
        return x.grad, h.grad
    compare(fn)


def test_backward_inputs_unused_leaf_stays_none():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        other = leaf(lib, [1.0, 2.0])
        (x * 2).sum().backward(inputs=[other])
        return x.grad, other.grad
    compare(fn)


def test_long_chain_backpropagates_iteratively():
    steps = 100_000
    start = time.perf_counter()
    x = ember.ones(3, requires_grad=True)
    y = x
    for _ in range(steps):
        y = y * 1.00001
    y.sum().backward()
    elapsed = time.perf_counter() - start
    # Generous: the bound catches quadratic behaviour, not a slow (shared) machine.
    assert elapsed < 30, f"100k-op chain took {elapsed:.1f}s"
    x_ref = torch.ones(3, requires_grad=True)
    y_ref = x_ref
    for _ in range(steps):
        y_ref = y_ref * 1.00001
    y_ref.sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad), x_ref.grad.numpy(), rtol=1e-5)


# ---------------------------------------------------------------------------------------------
# create_graph: higher-order gradients
# ---------------------------------------------------------------------------------------------

SECOND_ORDER_FUNCTIONS = {
    "cube": lambda lib, x: (x ** 3).sum(),
    "tanh": lambda lib, x: x.tanh().sum(),
    "softmax": lambda lib, x: (x.softmax(-1) * lib.arange(1.0, 4.0, dtype=x.dtype)).sum(),
    "matmul_chain": lambda lib, x: (x @ x.t() @ x).tanh().sum(),
    "exp_div": lambda lib, x: (x.exp() / (1 + x * x)).sum(),
}


@pytest.mark.parametrize("name", list(SECOND_ORDER_FUNCTIONS))
def test_grad_of_grad_and_hessian_vector_product(name):
    f = SECOND_ORDER_FUNCTIONS[name]
    values = [[0.3, -0.7, 1.1], [0.5, 0.2, -0.4], [1.0, -1.2, 0.1]]

    def fn(lib):
        x = leaf(lib, values, dtype=lib.float64)
        v = lib.tensor(values, dtype=lib.float64).flip(0)
        g, = lib.autograd.grad(f(lib, x), x, create_graph=True)
        hvp, = lib.autograd.grad((g * v).sum(), x, create_graph=True)
        third, = lib.autograd.grad(hvp.sum(), x, allow_unused=True, materialize_grads=True)
        return g, hvp, third, g.requires_grad, hvp.requires_grad
    compare(fn, rtol=1e-9, atol=1e-10)


def test_backward_create_graph_makes_grad_differentiable():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0], dtype=lib.float64)
        (x ** 3).sum().backward(create_graph=True)
        g = x.grad
        second, = lib.autograd.grad(g.sum(), x)
        return g, g.requires_grad, second
    compare(fn)


def test_third_derivative_of_cube():
    def fn(lib):
        x = leaf(lib, 2.0)
        g1, = lib.autograd.grad(x ** 3, x, create_graph=True)
        g2, = lib.autograd.grad(g1, x, create_graph=True)
        g3, = lib.autograd.grad(g2, x)
        return g1, g2, g3
    compare(fn)


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------

def test_backward_through_freed_graph_raises():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        y = (x.exp() * x).sum()
        y.backward()
        y.backward()
    compare_error(fn)


def test_implicit_gradient_only_for_scalars():
    compare_error(lambda lib: (leaf(lib, [1.0, 2.0]) * 2).backward())
    def grad_of_vector(lib):
        x = leaf(lib, [1.0, 2.0])
        lib.autograd.grad(x * 2, x)
    compare_error(grad_of_vector)


def test_output_that_does_not_require_grad():
    compare_error(lambda lib: lib.ones(2).sum().backward())
    compare_error(lambda lib: lib.autograd.grad(lib.ones(2).sum(), leaf(lib, [1.0])))
    compare_error(lambda lib: lib.autograd.backward([leaf(lib, 1.0) * 2, lib.ones(())]))


def test_input_that_does_not_require_grad():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        return lib.autograd.grad((x * 2).sum(), lib.ones(2))
    compare_error(fn)


def test_unused_input_without_allow_unused():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        unused = leaf(lib, [1.0, 2.0])
        return lib.autograd.grad((x * 2).sum(), [x, unused])
    compare_error(fn)


def test_grad_outputs_shape_mismatch():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        return lib.autograd.grad(x * 2, x, lib.ones(3))
    compare_error(fn)


def test_empty_inputs():
    compare_error(lambda lib: (leaf(lib, [1.0]) * 2).sum().backward(inputs=[]))
    compare_error(lambda lib: lib.autograd.grad((leaf(lib, [1.0]) * 2).sum(), []))


def test_saved_output_modified_in_place():
    def fn(lib):
        x = leaf(lib, [1.0, 3.0, 2.0])
        out = (x * 1).exp()
        out.add_(1)
        out.sum().backward()
    compare_error(fn)


def test_saved_input_modified_in_place():
    def fn(lib):
        x = leaf(lib, [1.0, 3.0, 2.0])
        h = x * 1
        out = h * h
        h.mul_(2)
        out.sum().backward()
    compare_error(fn, "one of the variables needed for gradient computation has been modified "
                      "by an inplace operation")


# ---------------------------------------------------------------------------------------------
# Graph structure
# ---------------------------------------------------------------------------------------------

def test_next_functions_point_at_accumulate_grad_nodes():
    for lib in (torch, ember):
        a = leaf(lib, [1.0, 2.0])
        b = leaf(lib, [3.0, 4.0])
        node = (a * b).grad_fn
        assert type(node).__name__ == "MulBackward0"
        assert node.name() == "MulBackward0"
        (first, nr0), (second, nr1) = node.next_functions
        assert (type(first).__name__, type(second).__name__) == ("AccumulateGrad",) * 2
        assert first.variable is a and second.variable is b and nr0 == nr1 == 0
        assert isinstance(node, lib.autograd.graph.Node)
        chain = ((a * b + 1).exp()).grad_fn
        assert type(chain).__name__ == "ExpBackward0"
        add_node = chain.next_functions[0][0]
        assert type(add_node).__name__ == "AddBackward0"
        assert type(add_node.next_functions[0][0]).__name__ == "MulBackward0"


def test_leaf_has_one_accumulate_grad_node():
    a = leaf(ember, [1.0, 2.0])
    first = (a * 2).grad_fn.next_functions[0][0]
    second = (a + 1).grad_fn.next_functions[0][0]
    assert first is second


NODE_NAME_CASES = [
    "a + a", "a - a", "a * a", "a / a", "a ** 2", "a.exp()", "a.view(6)", "a.reshape(3, 2)",
    "a @ a.t()", "a.tanh()", "a.sigmoid()", "a.softmax(0)", "a.transpose(0, 1)",
    "a.unsqueeze(0)", "a.squeeze()", "a.expand(2, 2, 3)", "a.clone()", "a.abs()", "a.log()",
    "a.sin()", "a.permute(1, 0)", "a.neg()", "2 * a", "a + 2", "a.sqrt()",
    "lib.cat([a, a])", "lib.where(a > 0, a, a)", "a.to(lib.float64)", "a.flatten()",
    "a.cumsum(0)", "a.var()", "a.matmul(a[0])", "a.pow(a)",
    "a.sum()", "a.mean()", "a.t()", "a[0]", "a[0, 1:]", "a[None]", "a.max()", "a.min(0)[0]",
    "a.amin(1)", "lib.stack([a, a])", "a.prod()",
]


def _node_name(lib, expression):
    a = lib.ones(2, 3, requires_grad=True)
    return type(eval(expression, {"lib": lib, "a": a}).grad_fn).__name__


@pytest.mark.parametrize("expression", NODE_NAME_CASES)
def test_node_names_match_torch(expression):
    assert _node_name(ember, expression) == _node_name(torch, expression)


# ---------------------------------------------------------------------------------------------
# Hooks
# ---------------------------------------------------------------------------------------------

def test_tensor_hooks_on_leaf_and_non_leaf(device):
    def fn(lib):
        log = []
        x = leaf(lib, [1.0, 2.0], device)

        def leaf_hook(g):
            log.append(("leaf", g.tolist()))
            return g * 10

        def mid_hook(g):
            log.append(("mid", g.tolist()))
            return g + 1

        handle = x.register_hook(leaf_hook)
        y = x * 3
        y.register_hook(mid_hook)
        y.retain_grad()
        (y * y).sum().backward()
        first = (x.grad.clone(), y.grad, list(log))
        handle.remove()
        x.grad = None
        (x * 1).sum().backward()
        return first, x.grad, y.retains_grad, x.retains_grad, y.is_leaf
    compare(fn)


def test_hook_returning_none_leaves_gradient():
    def fn(lib):
        seen = []
        x = leaf(lib, [1.0, 2.0])
        x.register_hook(lambda g: seen.append(g.clone()))
        (x * 4).sum().backward()
        return seen, x.grad
    compare(fn)


def test_retain_grad_with_hooks_registered_before_or_after():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        y = x * 2
        y.register_hook(lambda g: g * 100)
        y.retain_grad()
        z = x * 5
        z.retain_grad()
        z.register_hook(lambda g: g * 100)
        (y + z).sum().backward()
        return y.grad, z.grad, x.grad
    compare(fn)


def test_retain_grad_on_tensor_changed_in_place():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        y = x * 2
        y.retain_grad()
        y.add_(1)
        (y * y).sum().backward()
        return y.grad, x.grad
    compare(fn)


def test_hooks_apply_to_grad_results():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        x.register_hook(lambda g: g * 10)
        y = x * 2
        y.register_hook(lambda g: g + 1)
        return lib.autograd.grad(y.sum(), [x, y])
    compare(fn)


def test_backward_inputs_non_leaf_gets_hooked_gradient():
    def fn(lib):
        log = []
        x = leaf(lib, [1.0, 2.0])
        y = x * 2
        x.register_hook(lambda g: log.append("x"))
        y.register_hook(lambda g: g * 100)
        (y * y).sum().backward(inputs=[y])
        return log, x.grad, y.grad
    compare(fn)


def test_post_accumulate_grad_hook():
    def fn(lib):
        log = []
        x = leaf(lib, [1.0, 2.0])
        handle = x.register_post_accumulate_grad_hook(lambda t: log.append(t.grad.clone()))
        (x * 2).sum().backward()
        (x * 2).sum().backward()
        handle.remove()
        (x * 2).sum().backward()
        return log, x.grad
    compare(fn)


def test_node_hook_and_prehook():
    def fn(lib):
        log = []
        x = leaf(lib, [1.0, 2.0])
        w = leaf(lib, [3.0, 4.0])
        y = x * w
        y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: log.append(
            ([g.clone() for g in grad_inputs], [g.clone() for g in grad_outputs])))
        y.grad_fn.register_prehook(lambda grad_outputs: (grad_outputs[0] * 2,))
        y.sum().backward()
        return log, x.grad, w.grad
    compare(fn)


def test_node_hook_can_replace_grad_inputs_and_be_removed():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        w = leaf(lib, [3.0, 4.0])
        y = x * w
        handle = y.grad_fn.register_hook(lambda gi, go: (gi[0] * 0 + 7, gi[1]))
        y.sum().backward(retain_graph=True)
        first = (x.grad.clone(), w.grad.clone())
        handle.remove()
        y.sum().backward()
        return first, x.grad, w.grad
    compare(fn)


def test_hook_errors():
    def wrong_count(lib):
        x = leaf(lib, [1.0, 2.0])
        y = x * 3
        y.grad_fn.register_hook(lambda gi, go: (gi[0] * 0 + 7,))
        y.sum().backward()

    def not_a_tuple(lib):
        x = leaf(lib, [1.0, 2.0])
        y = x * 3
        y.grad_fn.register_hook(lambda gi, go: 5)
        y.sum().backward()

    def prehook_wrong_count(lib):
        x = leaf(lib, [1.0, 2.0])
        y = x * 3
        y.grad_fn.register_prehook(lambda go: (go[0], go[0]))
        y.sum().backward()

    def not_a_tensor(lib):
        x = leaf(lib, [1.0, 2.0])
        x.register_hook(lambda g: (g, g))
        (x * 3).sum().backward()

    def changed_size(lib):
        x = leaf(lib, [1.0, 2.0])
        y = x * 2
        y.register_hook(lambda g: g.sum())
        (y * 3).sum().backward()

    def changed_dtype(lib):
        x = leaf(lib, [1.0, 2.0])
        x.register_hook(lambda g: g.double())
        (x * 3).sum().backward()

    def hook_without_grad(lib):
        lib.ones(2).register_hook(lambda g: g)

    def post_accumulate_on_non_leaf(lib):
        (leaf(lib, [1.0]) * 2).register_post_accumulate_grad_hook(lambda t: None)

    for case in (wrong_count, not_a_tuple, prehook_wrong_count, not_a_tensor, changed_size,
                 changed_dtype, hook_without_grad, post_accumulate_on_non_leaf):
        compare_error(case)


def test_removable_handle_as_context_manager():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        with x.register_hook(lambda g: g * 0):
            pass
        (x * 2).sum().backward()
        return x.grad
    compare(fn)


# ---------------------------------------------------------------------------------------------
# Anomaly detection
# ---------------------------------------------------------------------------------------------

def _nan_backward(lib):
    x = leaf(lib, [0.0, 1.0])
    y = x / x  # the line the forward trace must point at
    y.sum().backward()


def test_detect_anomaly_names_the_node_and_shows_the_forward_trace():
    for lib in (torch, ember):
        with pytest.warns(UserWarning) as record:
            with pytest.raises(RuntimeError,
                               match="Function 'DivBackward0' returned nan values in its 1th "
                                     "output."):
                with lib.autograd.detect_anomaly():
                    _nan_backward(lib)
        messages = [str(w.message) for w in record]
        assert any(m.startswith("Anomaly Detection has been enabled") for m in messages)
        traces = [m for m in messages if m.startswith("Error detected in DivBackward0. "
                                                      "Traceback of forward call")]
        assert traces and "y = x / x" in traces[0] and "_nan_backward" in traces[0], messages
        assert not lib.is_anomaly_enabled()
    # Ember drops its own frames: the trace ends at the user's line.
    assert traces[0].rstrip().endswith("y = x / x  # the line the forward trace must point at")


def test_detect_anomaly_reports_errors_raised_by_a_backward():
    for lib in (torch, ember):
        class Broken(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                raise ValueError("boom")

        x = leaf(lib, [1.0])
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            with lib.autograd.detect_anomaly():
                y = Broken.apply(x)
                with pytest.raises(ValueError, match="boom"):
                    y.sum().backward()
        messages = [str(w.message) for w in record]
        assert any(m.startswith("Error detected in BrokenBackward. Traceback of forward call")
                   and "y = Broken.apply(x)" in m for m in messages), messages


def test_set_detect_anomaly_as_call_and_context_manager():
    def fn(lib):
        states = [lib.is_anomaly_enabled()]
        lib.autograd.set_detect_anomaly(True)
        states.append(lib.is_anomaly_enabled())
        try:
            _nan_backward(lib)
        except RuntimeError as e:
            states.append(str(e))
        lib.autograd.set_detect_anomaly(False)
        states.append(lib.is_anomaly_enabled())
        with lib.autograd.set_detect_anomaly(True, check_nan=False):
            states.append((lib.is_anomaly_enabled(), lib.is_anomaly_check_nan_enabled()))
            _nan_backward(lib)  # NaN checks are off: no error
        states.append((lib.is_anomaly_enabled(), lib.is_anomaly_check_nan_enabled()))
        return states
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compare(fn)


def test_nan_gradient_without_anomaly_mode_is_silent():
    def fn(lib):
        x = leaf(lib, [0.0, 1.0])
        with np.errstate(all="ignore"):
            (x / x).sum().backward()
        return x.grad.isnan().tolist()
    compare(fn)


# ---------------------------------------------------------------------------------------------
# gradcheck / gradgradcheck
# ---------------------------------------------------------------------------------------------

def _double_leaves(lib, *shapes):
    rng = np.random.default_rng(1)
    return tuple(lib.tensor(rng.standard_normal(s), dtype=lib.float64, requires_grad=True)
                 for s in shapes)


GRADCHECK_FUNCTIONS = {
    "tanh_mul": (lambda x, w: (x * w).tanh(), [(3,), (3,)]),
    "matmul_exp": (lambda a, b: (a @ b).exp(), [(2, 3), (3, 2)]),
    "softmax_tuple": (lambda x: (x.softmax(0), x.sigmoid() * x), [(4,)]),
    "broadcast_div": (lambda a, b: a / (1 + b * b), [(3, 1), (4,)]),
}


@pytest.mark.parametrize("name", list(GRADCHECK_FUNCTIONS))
def test_gradcheck_and_gradgradcheck_pass_on_correct_functions(name):
    func, shapes = GRADCHECK_FUNCTIONS[name]
    for lib in (torch, ember):
        inputs = _double_leaves(lib, *shapes)
        assert lib.autograd.gradcheck(func, inputs)
        assert lib.autograd.gradgradcheck(func, inputs)


def _wrong_square(lib):
    class WrongSquare(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * x  # should be 2 * g * x
    return WrongSquare


def test_gradcheck_fails_on_a_wrong_backward():
    from torch.autograd.gradcheck import GradcheckError as TorchGradcheckError
    assert issubclass(GradcheckError, RuntimeError)
    for lib, error in ((torch, TorchGradcheckError), (ember, GradcheckError)):
        inputs = _double_leaves(lib, (3,))
        wrong = _wrong_square(lib)
        with pytest.raises(error, match="Jacobian mismatch for output 0 with respect to input 0"):
            lib.autograd.gradcheck(wrong.apply, inputs)
        assert lib.autograd.gradcheck(wrong.apply, inputs, raise_exception=False) is False


def test_gradgradcheck_fails_on_a_wrong_double_backward():
    def wrong_double(lib):
        class Cube(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 3

            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                # Right value, but built from a detached x: its own derivative is wrong.
                return g * 3 * x.detach() ** 2
        return Cube

    for lib in (torch, ember):
        inputs = _double_leaves(lib, (3,))
        cube = wrong_double(lib)
        assert lib.autograd.gradcheck(cube.apply, inputs)
        assert lib.autograd.gradgradcheck(cube.apply, inputs, raise_exception=False) is False
