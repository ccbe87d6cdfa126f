"""The helpers many modules share, each with one home (issue 15): the dtype names PyTorch's
messages print (``ember._dtype``), dimension wrapping, the default device (``ember._device``),
the incomplete-gamma tails behind ``igamma`` and the Gamma sampler's gradient, and autograd's
independence from the op library at import."""
import ast
import pathlib

import numpy as np
import pytest
import scipy.special as sp
import torch

import ember
from ember.distributions import _math
from torch_compare import compare, compare_error

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
          "uint8", "bool", "complex64", "complex128"]
NON_BOOL = [n for n in DTYPES if n not in ("uint8", "bool")]


# ---- dtype names: c10's ScalarType names and the C++ type names --------------------------

@pytest.mark.parametrize("name", DTYPES)
def test_legacy_tensor_type_names(name):
    compare(lambda lib: lib.zeros(2, dtype=getattr(lib, name)).type().split(".", 1)[1])
    # and back: the type name converts a tensor to its dtype
    compare(lambda lib: str(lib.zeros(2).type(lib.zeros(2, dtype=getattr(lib, name)).type()
                                              .replace("ember.", "torch.")).dtype).split(".")[1])


@pytest.mark.parametrize("name", NON_BOOL)
def test_scalar_type_name_in_messages(name):
    compare_error(lambda lib: lib.where(lib.zeros(2, dtype=getattr(lib, name)), lib.zeros(2),
                                        lib.zeros(2)))


@pytest.mark.parametrize("name", ["uint8", "bool", "int64", "complex64"])
def test_scalar_type_name_of_assigned_grad(name):
    def assign(lib):
        x = lib.zeros(2, dtype=getattr(lib, name))
        x.grad = lib.zeros(2, dtype=lib.float64)
    compare_error(assign, gist=f"attempting to assign a gradient with dtype 'double' to a tensor "
                              f"with grad_dtype '{ember._dtype.SCALAR_TYPE_NAMES[name]}'. The "
                              "gradient must match the tensor's grad_dtype (defaults to the "
                              "tensor's dtype).")


@pytest.mark.parametrize("name", DTYPES)
def test_cpp_type_name_in_lerp_message(name):
    other = "int32" if name == "int64" else "int64"
    compare_error(lambda lib: lib.lerp(lib.zeros(2, dtype=getattr(lib, name)),
                                       lib.zeros(2, dtype=getattr(lib, other)), 0.5))


@pytest.mark.parametrize("pair", [("int64", "bool"), ("complex64", "float32"),
                                  ("float16", "bfloat16"), ("float64", "complex128")])
def test_cpp_type_name_in_mm_message(pair):
    a, b = pair
    compare_error(lambda lib: lib.mm(lib.zeros(2, 2, dtype=getattr(lib, a)),
                                     lib.zeros(2, 2, dtype=getattr(lib, b))))


@pytest.mark.parametrize("pair", [("int64", "int32"), ("complex64", "float32"),
                                  ("float32", "float64")])
def test_cpp_type_name_in_conv_bias_message(pair):
    a, b = pair
    compare_error(lambda lib: lib.nn.functional.conv2d(
        lib.zeros(1, 1, 3, 3, dtype=getattr(lib, a)), lib.zeros(1, 1, 2, 2, dtype=getattr(lib, a)),
        lib.zeros(1, dtype=getattr(lib, b))))


@pytest.mark.parametrize("name", ["int16", "int32", "int8", "uint8", "bool"])
@pytest.mark.parametrize("bounds", [(-2 ** 40, 10), (0, 2 ** 40)])
def test_cpp_type_name_in_randint_bounds(name, bounds):
    compare_error(lambda lib: lib.randint(*bounds, (2,), dtype=getattr(lib, name)))


@pytest.mark.parametrize("name", ["float32", "float64", "float16", "bfloat16", "complex64",
                                  "complex128"])
def test_tensor_type_name_of_modified_saved_tensor(name):
    # torch prints a legacy class ("torch.FloatTensor") or, lacking one, "CPUBFloat16Type"
    def modified_saved(lib):
        x = lib.ones(3, dtype=getattr(lib, name), requires_grad=True)
        y = x.exp()
        y.mul_(2)
        y.abs().sum().backward()
    compare_error(modified_saved)


@pytest.mark.parametrize("name", DTYPES)
def test_tensor_type_name_of_hook_changing_dtype(name):
    def changed_hook(lib):
        x = lib.ones(3, requires_grad=True)
        x.register_hook(lambda g: g.to(getattr(lib, name)) if name != "float32" else g.double())
        (x * 2).sum().backward()
    compare_error(changed_hook)


@pytest.mark.parametrize("name", DTYPES)
def test_tensor_type_name_in_expand_message(name):
    compare_error(lambda lib: lib.zeros(2, 3, 4, dtype=getattr(lib, name)).expand(6, 7))


def test_storage_names_read_by_torch(tmp_path):
    # Each dtype's checkpoint names its legacy storage class; torch resolves the name on load.
    tensors = {n: ember.ones(3, dtype=getattr(ember, n)) for n in DTYPES}
    ember.save(tensors, tmp_path / "all.pt")
    loaded = torch.load(tmp_path / "all.pt", weights_only=True)
    assert {n: t.dtype for n, t in loaded.items()} == {n: getattr(torch, n) for n in DTYPES}


# ---- dimension wrapping: Tensor.size/stride and the ops share one rule ------------------

@pytest.mark.parametrize("dim", [2, -3, 7])
@pytest.mark.parametrize("call", ["size", "stride", "sum", "softmax"])
def test_dim_out_of_range(dim, call):
    compare_error(lambda lib: getattr(lib.zeros(2, 3), call)(dim))


@pytest.mark.parametrize("dim", [-1, 0, 1])
@pytest.mark.parametrize("call", ["size", "stride"])
def test_zero_dim_tensor_has_no_dimension_to_name(dim, call):
    compare_error(lambda lib: getattr(lib.tensor(2.0), call)(dim))


@pytest.mark.parametrize("dim", [-1, 0])
def test_zero_dim_reduction_takes_dims_minus_one_and_zero(dim):
    compare(lambda lib: lib.tensor(2.0).sum(dim))
    compare_error(lambda lib: lib.tensor(2.0).sum(dim + 2))


# ---- the default device ------------------------------------------------------------------

def test_default_device_context_and_setter():
    # torch's "meta" stands in for Ember's test device: neither is the CPU.
    def run(lib, other):
        seen = [lib.get_default_device().type, lib.zeros(1).device.type]
        with lib.device(other):
            seen += [lib.get_default_device().type, lib.zeros(1).device.type]
            with lib.device("cpu"):
                seen.append(lib.zeros(1).device.type)
            seen.append(lib.zeros(1).device.type)
        seen.append(lib.zeros(1).device.type)
        lib.set_default_device(other)
        try:
            seen += [lib.get_default_device().type, lib.ones(1).device.type]
        finally:
            lib.set_default_device(None)  # "cpu" would leave torch a device mode installed
        seen.append(lib.zeros(1).device.type)
        return [s.replace(other, "other") for s in seen]
    assert run(ember, "testdev") == run(torch, "meta") == [
        "cpu", "cpu", "other", "other", "cpu", "other", "cpu", "other", "other", "cpu"]


# ---- the incomplete-gamma tails -----------------------------------------------------------

@pytest.mark.parametrize("a", [0.3, 7.0, 3e4, 3e5])
def test_igamma_for_large_shape(a):
    # near x = a the series needs thousands of terms for large a
    x = np.random.default_rng(0).standard_gamma(np.full(200, a))
    for name in ("igamma", "igammac"):
        compare(lambda lib: getattr(lib, name)(lib.tensor(np.full(200, a)), lib.tensor(x)),
                rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("alpha", [0.3, 40.0, 3e5])
def test_gamma_sampler_gradient_uses_the_same_tails(alpha):
    # the implicit gradient against SciPy's inverse CDF, up to where the series must reach
    a = np.full(300, alpha)
    x = np.maximum(np.random.default_rng(1).standard_gamma(a), 1e-300)
    u = sp.gammainc(a, x)
    ok = (u > 1e-10) & (u < 1 - 1e-10)
    h = 1e-6 * a
    exact = (sp.gammaincinv(a + h, u) - sp.gammaincinv(a - h, u)) / (2 * h)
    np.testing.assert_allclose(_math.standard_gamma_grad(a, x)[ok], exact[ok], rtol=1e-4)


# ---- layering ------------------------------------------------------------------------------

def test_autograd_imports_no_ops_at_module_level():
    # autograd sits below the op library: an op import there is inside the function using it
    root = pathlib.Path(ember.__file__).parent / "autograd"
    for path in sorted(root.glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ImportFrom):
                module = "." * node.level + (node.module or "")
                assert not module.startswith(("..ops", "ember.ops")), (path.name, module)
            elif isinstance(node, ast.Import):
                assert not any(a.name.startswith("ember.ops") for a in node.names), path.name
