"""``ember.autograd.functional`` against ``torch.autograd.functional``: jacobian, hessian, vjp,
jvp, hvp and vhp on single and tuple inputs/outputs, with create_graph, strict and vectorize."""
import numpy as np
import pytest
import torch

import ember

RNG = np.random.default_rng(0)
MATRIX = RNG.standard_normal((3, 3))
X = RNG.standard_normal(3)
Y = RNG.standard_normal((2, 3))
V = RNG.standard_normal(3)


def t(lib, array):
    return lib.tensor(array, dtype=lib.float64)


def assert_same(expected, actual, path="result"):
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, ember.Tensor), f"{path}: expected a tensor, got {actual!r}"
        assert tuple(actual.shape) == tuple(expected.shape), path
        assert actual.requires_grad == expected.requires_grad, path
        np.testing.assert_allclose(np.asarray(actual.detach()), expected.detach().numpy(),
                                   rtol=1e-9, atol=1e-12, err_msg=path)
    else:
        assert isinstance(expected, tuple) and isinstance(actual, tuple), (path, actual)
        assert len(actual) == len(expected), path
        for i, (e, a) in enumerate(zip(expected, actual)):
            assert_same(e, a, f"{path}[{i}]")


# Functions of one tensor or of a tuple, returning one tensor or a tuple.
FUNCTIONS = {
    "scalar": lambda lib: lambda x: (x ** 3).sum() + (x.tanh() * x).sum(),
    "vector": lambda lib: lambda x: (t(lib, MATRIX) @ x).tanh() * x,
    "two_in": lambda lib: lambda x, y: (x * y).sum(0) + x.exp(),
    "two_out": lambda lib: lambda x: (x.softmax(0), (t(lib, MATRIX) @ x).sin()),
    "two_in_two_out": lambda lib: lambda x, y: ((t(lib, MATRIX) @ x).sum() * y.sum(), x ** 2),
    "scalar_two_in": lambda lib: lambda x, y: (x * y.sum(0)).exp().sum() + (y ** 3).sum(),
}
INPUTS = {
    "scalar": lambda lib: t(lib, X),
    "vector": lambda lib: t(lib, X),
    "two_in": lambda lib: (t(lib, X), t(lib, Y)),
    "two_out": lambda lib: t(lib, X),
    "two_in_two_out": lambda lib: (t(lib, X), t(lib, Y)),
    "scalar_two_in": lambda lib: (t(lib, X), t(lib, Y)),
}
SCALAR_FUNCTIONS = ["scalar", "scalar_two_in"]


def compare(call):
    assert_same(call(torch, torch.autograd.functional),
                call(ember, ember.autograd.functional))


@pytest.mark.parametrize("vectorize", [False, True])
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_jacobian(name, vectorize):
    compare(lambda lib, F: F.jacobian(FUNCTIONS[name](lib), INPUTS[name](lib),
                                      vectorize=vectorize))


def test_jacobian_forward_mode_strategy():
    compare(lambda lib, F: F.jacobian(FUNCTIONS["two_out"](lib), INPUTS["two_out"](lib),
                                      vectorize=True, strategy="forward-mode"))


@pytest.mark.parametrize("name", SCALAR_FUNCTIONS)
def test_hessian(name):
    compare(lambda lib, F: F.hessian(FUNCTIONS[name](lib), INPUTS[name](lib)))


def _v_for(lib, name):
    inputs = INPUTS[name](lib)
    if isinstance(inputs, tuple):
        return tuple(i.flip(0) * 0.5 for i in inputs)
    return t(lib, V)


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_vjp(name):
    def call(lib, F):
        func, inputs = FUNCTIONS[name](lib), INPUTS[name](lib)
        outputs = func(*inputs) if isinstance(inputs, tuple) else func(inputs)
        if isinstance(outputs, tuple):
            v = tuple(lib.ones_like(o) * 0.3 for o in outputs)
        else:
            v = None if outputs.numel() == 1 else lib.ones_like(outputs) * 0.3
        return F.vjp(func, inputs, v)
    compare(call)


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_jvp(name):
    compare(lambda lib, F: F.jvp(FUNCTIONS[name](lib), INPUTS[name](lib), _v_for(lib, name)))


@pytest.mark.parametrize("product", ["hvp", "vhp"])
@pytest.mark.parametrize("name", SCALAR_FUNCTIONS)
def test_hessian_vector_products(name, product):
    compare(lambda lib, F: getattr(F, product)(FUNCTIONS[name](lib), INPUTS[name](lib),
                                               _v_for(lib, name)))


def test_scalar_input_needs_no_v():
    compare(lambda lib, F: (F.jvp(lambda x: x.exp() * 2, t(lib, 0.5)),
                            F.hvp(lambda x: x.exp() * x, t(lib, 0.5)),
                            F.vjp(lambda x: (x * x).sum(), t(lib, [0.5]))))


def test_unused_inputs_give_zeros():
    compare(lambda lib, F: (F.jacobian(lambda x, y: x * 2, (t(lib, X), t(lib, Y))),
                            F.vjp(lambda x, y: (x * 2).sum(), (t(lib, X), t(lib, Y)))[1],
                            F.hessian(lambda x, y: (x ** 3).sum(), (t(lib, X), t(lib, Y)))))


def test_create_graph_results_stay_differentiable():
    def call(lib, F):
        x = t(lib, X).requires_grad_()
        func = FUNCTIONS["scalar"](lib)
        hessian = F.hessian(func, x, create_graph=True)
        out, vjp = F.vjp(func, x, create_graph=True)
        _, jvp = F.jvp(FUNCTIONS["vector"](lib), x, t(lib, V), create_graph=True)
        _, hvp = F.hvp(func, x, t(lib, V), create_graph=True)
        plain_out, plain_vjp = F.vjp(func, x)
        grads = lib.autograd.grad((hessian.sum(), vjp.sum(), jvp.sum(), hvp.sum()), x)
        return hessian, out, vjp, jvp, hvp, plain_out, plain_vjp, grads
    compare(call)


def _error(call):
    with pytest.raises(Exception) as torch_error:
        call(torch, torch.autograd.functional)
    with pytest.raises(Exception) as ember_error:
        call(ember, ember.autograd.functional)
    assert type(ember_error.value) is type(torch_error.value)
    # "torch.Size"/"torch.autograd" read as Ember's; torch's own typo "isonly" aside.
    expected = str(torch_error.value).replace("torch", "ember").replace("isonly", "is only")
    assert str(ember_error.value) == expected


ERROR_CASES = {
    "strict_jacobian": lambda lib, F: F.jacobian(lambda x, y: x * 2, (t(lib, X), t(lib, Y)),
                                                 strict=True),
    "strict_vjp": lambda lib, F: F.vjp(lambda x, y: (x * 2).sum(), (t(lib, X), t(lib, Y)),
                                       strict=True),
    "strict_output_without_grad": lambda lib, F: F.vjp(lambda x: t(lib, X).sum(), t(lib, X),
                                                       strict=True),
    "v_missing": lambda lib, F: F.vjp(lambda x: x * 2, t(lib, X)),
    "v_missing_jvp": lambda lib, F: F.jvp(lambda x: x * 2, t(lib, X)),
    "v_bad_size": lambda lib, F: F.vjp(lambda x: x * 2, t(lib, X), t(lib, Y)),
    "v_bad_length": lambda lib, F: F.jvp(lambda x, y: x * y, (t(lib, X), t(lib, X)),
                                         (t(lib, X),)),
    "inputs_as_list": lambda lib, F: F.jacobian(lambda x: x * 2, [t(lib, X)]),
    "inputs_with_non_tensor": lambda lib, F: F.jacobian(lambda x, y: x * y, (t(lib, X), 2.0)),
    "hessian_of_vector": lambda lib, F: F.hessian(lambda x: x * 2, t(lib, X)),
    "hessian_of_tuple": lambda lib, F: F.hessian(lambda x: (x.sum(), x.sum()), t(lib, X)),
    "vhp_of_vector": lambda lib, F: F.vhp(lambda x: x * 2, t(lib, X), t(lib, V)),
    "forward_mode_without_vectorize": lambda lib, F: F.jacobian(lambda x: x * 2, t(lib, X),
                                                                strategy="forward-mode"),
    "strict_and_vectorize": lambda lib, F: F.jacobian(lambda x: x * 2, t(lib, X), strict=True,
                                                      vectorize=True),
}


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_errors_match_torch(case):
    _error(ERROR_CASES[case])
