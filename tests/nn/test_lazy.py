"""Lazy modules against torch: a layer written once against ``lib`` with ``LazyModuleMixin`` and
``UninitializedParameter``/``UninitializedBuffer`` behaves the same before, during and after its
first forward, and when a checkpoint is loaded into it."""
import copy
import pickle

import numpy as np
import pytest
import torch

import ember
from tests.torch_compare import assert_same, compare_error


def lazy_classes(lib):
    nn = lib.nn

    class Affine(nn.Module):
        def __init__(self, n_in, n_out):
            super().__init__()
            self.n_in, self.n_out = n_in, n_out
            self.weight = nn.Parameter(lib.empty(n_out, n_in))
            self.bias = nn.Parameter(lib.empty(n_out))
            self.register_buffer("running", lib.zeros(n_out))
            self.reset_parameters()

        def reset_parameters(self):
            with lib.no_grad():
                if self.n_in:
                    n = self.weight.numel()
                    self.weight.copy_(lib.arange(n, dtype=self.weight.dtype)
                                      .reshape(self.weight.shape) / n)
                    self.bias.fill_(0.5)

        def forward(self, x):
            return x @ self.weight.t() + self.bias + self.running

        def extra_repr(self):
            return f"n_in={self.n_in}, n_out={self.n_out}"

    class LazyAffine(nn.modules.lazy.LazyModuleMixin, Affine):
        cls_to_become = Affine

        def __init__(self, n_out):
            super().__init__(0, n_out)
            self.weight = nn.UninitializedParameter()
            self.bias = nn.UninitializedParameter()
            self.running = nn.UninitializedBuffer()

        def initialize_parameters(self, x):
            if self.has_uninitialized_params():
                with lib.no_grad():
                    self.n_in = x.shape[-1]
                    self.weight.materialize((self.n_out, self.n_in))
                    self.bias.materialize((self.n_out,))
                    self.running.materialize((self.n_out,))
                    self.running.zero_()
                    self.reset_parameters()

    class Broken(nn.modules.lazy.LazyModuleMixin, nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.UninitializedParameter()

        def initialize_parameters(self, x):
            pass

    return Affine, LazyAffine, Broken


def describe(m):
    return (type(m).__name__, repr(m).replace("torch", "ember"),
            [(n, type(p).__name__, repr(p) if type(p).__name__.startswith("Uninit")
              else tuple(p.shape)) for n, p in m.named_parameters()],
            [(n, type(b).__name__) for n, b in m.named_buffers()],
            list(m.state_dict()), m.has_uninitialized_params()
            if hasattr(m, "has_uninitialized_params") else None,
            len(m._forward_pre_hooks), len(m._load_state_dict_pre_hooks))


def test_lazy_lifecycle_matches_torch():
    def fn(lib):
        _, LazyAffine, _ = lazy_classes(lib)
        m = LazyAffine(3)
        before = describe(m)
        x = lib.tensor(np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4), requires_grad=True)
        out = m(x)
        out.square().sum().backward()
        after = describe(m)
        return before, after, out, x.grad, m.weight.grad, m.bias.grad

    got, expected = fn(ember), fn(torch)
    assert got[:2] == expected[:2]
    assert_same(expected[2:], got[2:])


def test_uninitialized_repr_size_and_errors():
    def fn(lib):
        p = lib.nn.UninitializedParameter()
        b = lib.nn.UninitializedBuffer()
        return (repr(p), repr(b), tuple(p.size()), p.requires_grad, b.requires_grad,
                isinstance(p, lib.nn.Parameter), lib.nn.parameter.is_lazy(p),
                lib.nn.parameter.is_lazy(lib.zeros(1)))
    assert fn(ember) == fn(torch)
    compare_error(lambda lib: lib.nn.UninitializedParameter().shape)
    compare_error(lambda lib: lib.nn.UninitializedBuffer().share_memory_())


def test_materialize_dtype_device_and_class():
    def fn(lib):
        p = lib.nn.UninitializedParameter(dtype=lib.float64)
        p.materialize((2, 3))
        b = lib.nn.UninitializedBuffer()
        b.materialize((4,), dtype=lib.float16)
        return (type(p).__name__, tuple(p.shape), str(p.dtype).replace("torch", "ember"),
                p.requires_grad, type(b).__name__, str(b.dtype).replace("torch", "ember"))
    assert fn(ember) == fn(torch)


def test_conversion_before_first_forward():
    def fn(lib):
        _, LazyAffine, _ = lazy_classes(lib)
        m = LazyAffine(2).double()
        m(lib.ones(1, 3, dtype=lib.float64))
        return [str(p.dtype).replace("torch", "ember") for p in m.parameters()]
    assert fn(ember) == fn(torch)


def test_load_checkpoint_into_lazy_module():
    def fn(lib):
        Affine, LazyAffine, _ = lazy_classes(lib)
        src = Affine(5, 2)
        with lib.no_grad():
            src.running.fill_(0.25)
        m = LazyAffine(2)
        result = m.load_state_dict(src.state_dict())
        state = describe(m)
        out = m(lib.ones(1, 5))
        return repr(result), state, describe(m), out

    got, expected = fn(ember), fn(torch)
    assert got[:3] == expected[:3]
    assert_same(expected[3], got[3])


def test_incomplete_initialization_error():
    def fn(lib):
        lazy_classes(lib)[2]()(lib.ones(1))
    compare_error(fn)


def test_initialize_parameters_required():
    def fn(lib):
        class NoInit(lib.nn.modules.lazy.LazyModuleMixin, lib.nn.Module):
            pass
        NoInit()(lib.ones(1))
    compare_error(fn)


def test_deepcopy_and_pickle_lazy_module():
    _, LazyAffine, _ = lazy_classes(ember)
    m = LazyAffine(3)
    c = copy.deepcopy(m)
    assert isinstance(c.weight, ember.nn.UninitializedParameter) and c.weight is not m.weight
    c(ember.ones(2, 4))
    assert type(c).__name__ == "Affine" and tuple(c.weight.shape) == (3, 4)
    assert isinstance(m.weight, ember.nn.UninitializedParameter)
    p = pickle.loads(pickle.dumps(ember.nn.UninitializedParameter(requires_grad=False)))
    assert type(p) is ember.nn.UninitializedParameter and not p.requires_grad


@pytest.mark.parametrize("lib", [torch, ember])
def test_lazy_module_in_sequential_state_dict_keys(lib):
    _, LazyAffine, _ = lazy_classes(lib)
    s = lib.nn.Sequential(LazyAffine(3), LazyAffine(2))
    s(lib.ones(1, 6))
    assert [tuple(p.shape) for p in s.parameters()] == [(3, 6), (3,), (2, 3), (2,)]
    assert list(s.state_dict()) == ["0.weight", "0.bias", "0.running", "1.weight", "1.bias",
                                    "1.running"]


@pytest.mark.parametrize("use", [
    lambda lib, p: p + 1, lambda lib, p: p.sum(), lambda lib, p: lib.exp(p), lambda lib, p: p[0],
    lambda lib, p: p.numel(), lambda lib, p: p.detach(), lambda lib, p: lib.nn.functional.linear(
        lib.ones(2, 3), p),
])
def test_ops_on_an_uninitialized_parameter_raise_value_error(use):
    for lib in (torch, ember):
        p = lib.nn.UninitializedParameter()
        with pytest.raises(ValueError, match="Attempted to use an uninitialized parameter in"):
            use(lib, p)


def test_uninitialized_parameter_metadata_and_casts_still_work():
    p = ember.nn.UninitializedParameter()
    assert (p.dtype, p.device.type, p.requires_grad, tuple(p.size())) == (ember.float32, "cpu", True, (0,))
    q = p.double()
    assert isinstance(q, ember.nn.UninitializedParameter) and q.dtype == ember.float64
