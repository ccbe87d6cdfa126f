"""torch's multi-signature functions, NumPy keyword names, legacy constructors and argument
errors, against PyTorch. Each case is one expression evaluated with ``lib=torch`` and
``lib=ember``; ``x`` is a float tensor, ``xi`` an integer one, ``dev`` the device under test
(always "cpu" for torch)."""
import inspect
import types

import numpy as np
import pytest
import torch

import ember
from torch_compare import assert_same


def _names(lib, device):
    dev = device if lib is ember else "cpu"
    x = (lib.arange(12.0, device=dev).reshape(3, 4) - 5.5) * lib.tensor([1.0, -2, 0.5, 3],
                                                                         device=dev)
    return {"lib": lib, "np": np, "dev": dev, "x": x,
            "xi": lib.arange(12, device=dev).reshape(3, 4) % 5,
            "x3": lib.arange(24.0, device=dev).reshape(2, 3, 4).sin(),
            "xb": lib.tensor([[True, False], [True, True]], device=dev),
            "idx": lib.tensor([[0, 2, 1, 0]], device=dev)}


def _eval(expr, lib, device="cpu"):
    return eval(expr, _names(lib, device))


def check(expr, device="cpu"):
    """The same result (tensors by shape, dtype and value; tuples element by element; named
    tuples also by type name), or the same exception type and message."""
    try:
        expected = _eval(expr, torch)
    except Exception as exc:
        check_error(expr, device, exc)
        return
    got = _eval(expr, ember, device)
    if isinstance(expected, (str, torch.dtype)):  # names read "ember" for "torch"
        # a legacy type name says the device ("ember.cuda.FloatTensor"); torch's is on the CPU
        expected = str(expected).replace("torch", "ember")
        got = str(got).replace(f"ember.{device}.", "ember.")
    assert_same(expected, got)
    if isinstance(expected, tuple) and hasattr(expected, "values"):
        assert type(got).__name__ == type(expected).__name__
        assert_same(expected.values, got.values)
        assert_same(expected.indices, got.indices)
    for tensor in _tensors(got):
        assert tensor.device.type == device


def _tensors(result):
    if isinstance(result, ember.Tensor):
        return [result]
    if isinstance(result, (tuple, list)):
        return [t for r in result for t in _tensors(r)]
    return []


def check_error(expr, device="cpu", torch_error=None, gist=None):
    """Both raise the same exception type; Ember's message contains torch's (torch read as
    ember), or ``gist``, which must then be part of torch's message."""
    if torch_error is None:
        with pytest.raises(Exception) as info:
            _eval(expr, torch)
        torch_error = info.value
    with pytest.raises(Exception) as info:
        _eval(expr, ember, device)
    assert type(info.value) is type(torch_error), f"{expr}: {info.value!r} vs {torch_error!r}"
    expected = str(torch_error).replace("torch", "ember")
    if gist is not None:
        assert gist in expected
        expected = gist
    assert expected in str(info.value), f"{expr}: {info.value} vs {expected}"


def check_sampled(expr, device="cpu"):
    """Random draws: the same shape and dtype (the streams differ), on the device under test."""
    expected, got = _eval(expr, torch), _eval(expr, ember, device)
    assert tuple(got.shape) == tuple(expected.shape)
    assert str(got.dtype) == str(expected.dtype).replace("torch", "ember")
    assert got.device.type == device
    return got


# ---------------------------------------------------------------------------------------------
# NumPy's keyword names: axis= for dim=, keepdims= for keepdim=, x=/a=/x1= for input=
# ---------------------------------------------------------------------------------------------

ALIAS_CASES = [
    "lib.sum(x, axis=0)", "x.sum(axis=0)", "x.sum(axis=1, keepdims=True)",
    "lib.sum(x, axis=(0, 1), keepdims=True)", "x.sum(keepdims=True, axis=[1])",
    "lib.mean(x, axis=1)", "x.mean(axis=0, keepdims=True)", "lib.nansum(x, axis=1)",
    "x.nanmean(axis=0)", "x.prod(axis=1, keepdims=True)", "lib.prod(x, axis=0)",
    "lib.max(x, axis=1)", "x.max(axis=0, keepdims=True)", "lib.min(x, axis=1)",
    "x.min(axis=1, keepdims=True)", "lib.amax(x, axis=0)", "x.amin(axis=(0, 1))",
    "lib.aminmax(x, axis=1)", "x.aminmax(axis=0, keepdims=True)",
    "lib.argmax(x, axis=1)", "x.argmax(axis=0, keepdims=True)", "x.argmin(axis=1)",
    "lib.any(xb, axis=0)", "xb.all(axis=1, keepdims=True)", "lib.all(xb, axis=1)",
    "lib.var(x, axis=1)", "x.std(axis=0, keepdims=True)", "lib.std(x, axis=1, correction=0)",
    "lib.std_mean(x, axis=1)", "lib.var_mean(x, axis=0, keepdims=True)",
    "lib.logsumexp(x, axis=1)", "x.logsumexp(axis=0, keepdims=True)",
    "lib.median(x, axis=1)", "x.median(axis=0, keepdims=True)", "lib.nanmedian(x, axis=1)",
    "lib.mode(xi, axis=1)", "xi.mode(axis=0, keepdims=True)", "lib.count_nonzero(xi, axis=1)",
    "lib.cumsum(x, axis=1)", "x.cumsum(axis=0)", "x.cumprod(axis=1)", "lib.cummax(x, axis=1)",
    "lib.softmax(x, axis=1)", "x.log_softmax(axis=0)", "lib.kthvalue(x, 2, axis=1)",
    "lib.quantile(x, 0.5, axis=1, keepdims=True)", "lib.sort(x, axis=0)", "x.argsort(axis=0)",
    "lib.topk(x, 2, axis=0)", "lib.squeeze(x.reshape(1, 3, 4), axis=0)",
    "x.unsqueeze(axis=1)", "lib.cat([x, x], axis=1)", "lib.stack([x, x], axis=1)",
    "lib.gather(x, axis=0, index=idx)",
    "x.index_select(axis=1, index=lib.tensor([0, 2], device=dev))",
    "lib.narrow(x, axis=1, start=1, length=2)", "x.select(axis=1, index=0)",
    "lib.chunk(x, 2, axis=1)", "x.unbind(axis=1)", "lib.diff(x, axis=0)",
    "lib.flatten(x3, 1)", "lib.unflatten(x, axis=1, sizes=(2, 2))", "x.size(axis=1)",
    "lib.sum(x=x, axis=0)", "lib.mean(a=x, axis=1)", "lib.cumsum(x1=x, axis=1)",
    "x.clone().cumsum_(axis=0)",
    # the namespaces' ops too
    "lib.linalg.vector_norm(x, axis=0)", "lib.linalg.norm(x, axis=1, keepdims=True)",
    "lib.linalg.matrix_norm(x3, axis=(1, 2))", "lib.special.logsumexp(x, axis=0)",
    "lib.special.softmax(x, axis=1)", "lib.fft.fft(x, axis=0)", "lib.fft.fftshift(x, axis=1)",
    # ops whose own (NumPy) names torch uses
    "lib.swapaxes(x, axis0=0, axis1=1)", "x.swapaxes(axis0=1, axis1=0)",
    "x.swapdims(dim0=0, dim1=1)", "lib.moveaxis(x3, source=0, destination=2)",
    # both spellings, or an alias of an argument passed positionally: torch names the alias
    "lib.sum(x, dim=0, axis=1)", "x.sum(0, axis=1)", "lib.amax(x, 1, axis=0)",
    "lib.mean(x, 0, keepdim=True, keepdims=True)",
    # torch's Python-level functions take no aliases
    "lib.norm(x, axis=1)", "lib.split(x, 2, axis=0)",
]


@pytest.mark.parametrize("expr", ALIAS_CASES)
def test_numpy_keyword_names(expr, device):
    check(expr, device)


@pytest.mark.parametrize("expr", ["x.norm(axis=1)", "x.split(2, axis=0)",
                                  "x.unflatten(axis=1, sizes=(2, 2))", "x.unique(axis=0)",
                                  "lib.nn.functional.softmax(x, axis=0)"])
def test_python_level_functions_take_no_numpy_names(expr, device):
    # Python words torch's message "Tensor.norm()", Ember's "norm()".
    check_error(expr, device, gist="() got an unexpected keyword argument 'axis'")


BINARY_ALIAS_CASES = [
    "lib.add(x1=x, x2=x.flip(0))", "lib.add(x, x2=x.flip(0), alpha=2)", "x.add(x2=x.flip(1))",
    "lib.sub(x=x, other=x.flip(0))", "lib.mul(a=x, x2=x)", "x.mul(x2=x.flip(0))",
    "lib.div(x1=x, x2=x.flip(0) + 3)", "lib.pow(x=x, exponent=2)", "lib.maximum(x1=x, x2=x.flip(0))",
    "lib.eq(x1=x, x2=x.flip(0))", "lib.logical_and(x1=xb, x2=xb.flip(0))",
    "lib.where(x > 0, x=x, x2=x.flip(0))", "lib.clamp(x1=x, min=0.0)", "lib.atan2(x1=x, x2=x)",
    "lib.isclose(x1=x, x2=x.flip(0))", "lib.lerp(x1=x, end=x.flip(0), weight=0.5)",
]


@pytest.mark.parametrize("expr", BINARY_ALIAS_CASES)
def test_binary_ops_take_numpy_operand_names(expr, device):
    """x1=/x2= (and x=/a=) for input/other, as torch's argument parser gives every native op.
    Ember's binary ops give them without a frame of their own (see _torch_broadcast_errors)."""
    check(expr, device)


@pytest.mark.parametrize("expr", ["lib.add(x, x1=x)", "lib.add(x, x, x2=x)",
                                  "lib.add(x1=x, input=x, x2=x)", "lib.add(x, y=x)"])
def test_binary_ops_refuse_clashing_operand_names(expr, device):
    # torch's words differ by case ("missing ... 'other'" or "unexpected keyword"); the type is
    # the same.
    with pytest.raises(TypeError):
        _eval(expr, torch)
    with pytest.raises(TypeError):
        _eval(expr, ember, device)


@pytest.mark.parametrize("expr", ["lib.flip(x, axis=0)", "lib.roll(x, 1, axis=0)",
                                  "x.transpose(axis0=0, axis1=1)"])
def test_ops_without_a_dim_parameter_take_no_axis(expr, device):
    # Their parameters are dims/dim0: torch's parser then misses the positional argument.
    check_error(expr, device, gist=expr.split("(")[0].split(".")[-1] + "()")


def _dim_taking(namespace_fn):
    """(name, Ember function) for every public callable of a namespace with a dim/keepdim
    parameter."""
    out = []
    for name, fn in namespace_fn():
        if name.startswith("_") or not callable(fn) or inspect.isclass(fn):
            continue
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            continue
        if {"dim", "keepdim"} & set(params):
            out.append((name, fn))
    return out


def test_every_dim_taking_op_takes_the_numpy_names_torch_takes():
    """torch's argument parser gives every natively bound op the aliases; its Python-level
    functions (norm, split, unique, Tensor.unflatten...) have none. Ember's wrapper marks a
    function that accepts them with ``__wrapped__``."""
    checked = 0
    builtin = (lambda f: isinstance(f, types.BuiltinFunctionType))
    for owner, torch_owner, native in (
            (ember, torch, builtin), (ember.linalg, torch.linalg, builtin),
            (ember.special, torch.special, builtin), (ember.fft, torch.fft, builtin),
            (ember.Tensor, torch.Tensor, lambda f: not isinstance(f, types.FunctionType))):
        for name, fn in _dim_taking(lambda: [(n, getattr(owner, n)) for n in dir(owner)]):
            torch_fn = getattr(torch_owner, name, None)
            if torch_fn is None:
                continue
            if getattr(fn, "__quantized_dispatch__", False):  # ember.X's quantized dispatch
                fn = fn.__wrapped__
            assert hasattr(fn, "__wrapped__") == native(torch_fn), (owner.__name__, name)
            checked += 1
    assert checked > 100


def test_wrapped_ops_keep_their_signature():
    assert list(inspect.signature(ember.sum).parameters)[:3] == ["input", "dim", "keepdim"]
    assert ember.sum.__name__ == "sum" and ember.Tensor.sum is ember.sum


# ---------------------------------------------------------------------------------------------
# Overloads
# ---------------------------------------------------------------------------------------------

OVERLOAD_CASES = [
    # max/min: no dim, dim (+keepdim) as named tuples, another tensor
    "lib.max(x)", "lib.max(x, 1)", "lib.max(x, 1, True)", "lib.max(x, dim=1, keepdim=True)",
    "lib.max(x, x.flip(0))", "lib.max(x, other=x.flip(0))", "x.max()", "x.max(0)",
    "x.max(x.flip(1))", "lib.min(x, 1, keepdim=True)", "lib.min(x, x.flip(0))", "x.min(dim=0)",
    "lib.max(x, np.int64(1))", "lib.max(x, 1.)", "lib.max(x, (0, 1))", "lib.min(x, None)",
    # clamp/clip: numbers, tensors, one bound
    "lib.clamp(x, 0)", "lib.clamp(x, max=0)", "lib.clamp(x, min=-1, max=1)", "lib.clamp(x, -1, 1)",
    "lib.clamp(x, lib.zeros(4, device=dev), lib.ones(4, device=dev))",
    "lib.clamp(x, min=lib.zeros(4, device=dev))", "lib.clamp(x, max=lib.zeros(4, device=dev))",
    "lib.clip(x, -1, 1)", "x.clamp(-1)", "x.clip(max=2)", "lib.clamp(xi, 0.5)",
    "lib.clamp(xi, min=2, max=1)",
    # arange: 1/2/3 arguments, dtype from the arguments or dtype=
    "lib.arange(5, device=dev)", "lib.arange(5., device=dev)", "lib.arange(1, 5, device=dev)",
    "lib.arange(1, 5., device=dev)",
    "lib.arange(1, 5, 2, device=dev)", "lib.arange(0, 1, 0.25, device=dev)",
    "lib.arange(5, dtype=lib.float32, device=dev)",
    "lib.arange(start=1, end=4, device=dev)", "lib.arange(end=4, device=dev)",
    "lib.arange(lib.tensor(5), device=dev)",
    "lib.arange(lib.tensor(5.), device=dev)", "lib.arange(0, 10, 3, dtype=lib.int32, device=dev)",
    # full: dtype from the fill value
    "lib.full((2,), True, device=dev)", "lib.full((2,), 1, device=dev)",
    "lib.full((2,), 1., device=dev)", "lib.full((2,), 1+2j, device=dev)",
    "lib.full((2, 3), 2, dtype=lib.float32, device=dev)", "lib.full([2], 1.5, device=dev)",
    "lib.full((2,), lib.tensor(3), device=dev)",
    "lib.full_like(x, 2)", "lib.full_like(xi, 2.5)",
    # Tensor.new_*: sizes as varargs, tuple, list, Size or size=; dtype inherited
    "x.new_zeros(2, 3)", "x.new_zeros((2, 3))", "x.new_zeros([2, 3])",
    "x.new_zeros(lib.Size([2]))",
    "x.new_zeros(2, 3, dtype=lib.int64)", "x.new_zeros(size=(2,))", "x.new_ones(2)",
    "xi.new_ones((2, 1))", "x.new_full((2, 3), 7)", "xi.new_full([2], 7)", "x.new_tensor([1, 2])",
    "xi.new_tensor([1., 2])", "x.new_zeros(())", "x.new_zeros(0)",
    # view(dtype), also with a different element size
    "x.view(lib.int32)", "x.view(dtype=lib.int32)", "x.view(lib.float16)", "x.view(lib.int64)",
    "x.view(lib.uint8)", "x.view(lib.bool)", "x.double().view(lib.float32)",
    "x.double().view(lib.int16)", "xi.view(lib.float64)",
    "lib.arange(6., device=dev).view(lib.float64)",
    "x.view(lib.uint8)[:, 4:8].view(lib.float32)", "lib.zeros(0, 4, device=dev).view(lib.float64)",
    "lib.zeros(2, 3, dtype=lib.complex64, device=dev).view(lib.float32)",
    "lib.tensor(1., device=dev).view(lib.int32)",
    "x.view(lib.float64)[:, :1]", "x.view(lib.float16).view(lib.float32)",
    # view(dtype) errors, in torch's order
    "x[:, :3].view(lib.float64)", "x.t().view(lib.float64)", "x.t().view(lib.float16)",
    "lib.tensor(1., device=dev).view(lib.float16)", "x[:, 1:3].view(lib.float64)",
    "x.view(lib.uint8)[:, 1:5].view(lib.float32)",
    "lib.zeros(2, 3, device=dev).view(lib.complex64)",
    "lib.zeros(3, 3, device=dev)[:, :2].view(lib.float64)", "x3[:, :2].view(lib.float64)",
    "x3.permute(1, 0, 2)[:, 1:].view(lib.float64)",
    # split: int or list of sizes
    "x.split(2)", "x.split(2, 1)", "x.split([1, 2])", "x.split([1, 3], dim=1)", "x.split((1, 2))",
    "lib.split(x, 2)", "lib.split(x, [1, 2], 0)", "lib.split(x, split_size_or_sections=2)",
    "x.split(split_size=2)", "x.split(lib.Size([1, 2]))", "x.split([1, 1])",
    # std/var: unbiased positional, correction=, dim int/tuple/list/None
    "x.std()", "x.std(True)", "x.std(False)", "x.std(0)", "x.std(0, True)", "x.std(0, False)",
    "x.std(0, False, True)", "x.std((0, 1))", "x.std(None)", "x.std(dim=0, correction=0)",
    "x.std(correction=2)", "x.std(0, correction=0, keepdim=True)", "x.std(unbiased=False)",
    "x.var(1, keepdim=True)", "lib.var(x, 0, False)", "lib.var(x, False)", "lib.std_mean(x, 0)",
    "lib.std_mean(x, unbiased=False)", "lib.var_mean(x, dim=(0,), correction=0)",
    "lib.var_mean(x, 1, keepdim=True)", "lib.std(x, [0, 1])",
    # zeros/ones/empty(*size), (size), size=
    "lib.zeros(2, 3, device=dev)", "lib.zeros((2, 3), device=dev)",
    "lib.zeros([2, 3], device=dev)",
    "lib.zeros(size=(2, 3), device=dev)", "lib.zeros(lib.Size([2, 3]), device=dev)",
    "lib.zeros((), device=dev)", "lib.zeros(2, dtype=lib.int32, device=dev)",
    "lib.ones(size=[2, 3], device=dev)", "lib.ones((2, 3), dtype=lib.bool, device=dev)",
    "lib.empty(size=(2, 3), device=dev).shape", "lib.empty(2, 3, device=dev).dtype",
    "lib.zeros(2, (3,))", "lib.zeros(2.5)", "lib.zeros('a')", "lib.zeros((2, 3.5))",
    "lib.ones(2, size=(2,))",
    # reshape/view/permute/expand/repeat/tile: varargs or one sequence or the keyword
    "x.reshape(4, 3)", "x.reshape((4, 3))", "x.reshape([4, 3])", "x.reshape(-1)",
    "x.reshape(shape=(4, 3))", "x.reshape(lib.Size([12]))", "lib.reshape(x, (4, 3))",
    "lib.reshape(x, shape=(-1,))", "x.view(4, 3)", "x.view((4, 3))", "x.view([-1])",
    "x.view(size=(12,))", "x.view(lib.Size([12]))", "x.permute(1, 0)", "x.permute((1, 0))",
    "x.permute([1, 0])", "x.permute(dims=(1, 0))", "lib.permute(x, (1, 0))",
    "lib.permute(x, dims=[1, 0])", "x.expand(2, 3, 4)", "x.expand((2, 3, 4))",
    "x.expand([2, -1, 4])", "x.expand(size=(2, 3, 4))", "x.expand(lib.Size([2, 3, 4]))",
    "x.repeat(2, 1)", "x.repeat((2, 1))", "x.repeat([2, 1, 1])", "x.repeat(repeats=(2, 1))",
    "x.tile(2)", "x.tile((2,))", "x.tile(2, 1)", "x.tile(dims=(2,))", "lib.tile(x, (2, 1))",
    "lib.tile(x, dims=(1, 2))",
    # sum/mean dtype=
    "x.sum(dtype=lib.float64)", "x.sum(0, dtype=lib.float64)", "xi.sum(dtype=lib.int32)",
    "lib.sum(x, dtype=lib.float64)", "lib.sum(x, (0, 1))", "lib.sum(x, [0])", "x.sum(0, True)",
    "lib.mean(x, (0, 1), True)", "x.mean(dtype=lib.float64)", "xi.cumsum(0, dtype=lib.float32)",
    # topk/sort/argsort with stable=
    "lib.topk(x, 2)", "lib.topk(x, 2, 0)", "lib.topk(x, 2, largest=False)",
    "lib.topk(x, k=2, dim=0, largest=True, sorted=True)", "lib.sort(xi, stable=True)",
    "lib.sort(xi, 0, True)", "lib.sort(xi, dim=0, descending=True, stable=True)",
    "xi.sort(stable=True)", "lib.argsort(xi, stable=True)", "lib.argsort(xi, 0, True)",
    "lib.argsort(xi, dim=0, descending=True, stable=True)",
    "xi.argsort(stable=True, descending=True)",
    # squeeze with a dim tuple, transpose, flatten
    "x.reshape(1, 3, 1, 4).squeeze((0, 2))", "x.reshape(1, 3, 1, 4).squeeze([0, 2])",
    "x.reshape(1, 3, 1, 4).squeeze(0)", "x.reshape(1, 3, 1, 4).squeeze()",
    "x.reshape(1, 3, 1, 4).squeeze(dim=(0, 2))", "lib.squeeze(x.reshape(1, 3, 1, 4), (0, 2))",
    "x.reshape(1, 3, 1, 4).squeeze((0, 1))", "x.transpose(0, 1)", "x.transpose(dim0=0, dim1=1)",
    "lib.transpose(x, 1, 0)", "x.transpose(-1, -2)", "x3.flatten()", "x3.flatten(1)",
    "x3.flatten(0, 1)", "x3.flatten(start_dim=1)", "x3.flatten(end_dim=1)", "lib.flatten(x3)",
    # linspace/logspace
    "lib.linspace(0, 1, 5, device=dev)", "lib.linspace(0, 1, steps=5, device=dev)",
    "lib.linspace(0, 10, 5, dtype=lib.int64, device=dev)",
    "lib.linspace(start=0, end=1, steps=3, device=dev)", "lib.linspace(0, 1, 1, device=dev)",
    "lib.linspace(0, 1, 0, device=dev)",
    "lib.linspace(lib.tensor(0.), lib.tensor(1.), 5, device=dev)",
    "lib.logspace(0, 2, 3, device=dev)",
    "lib.logspace(0, 2, 3, base=2, device=dev)",
    "lib.logspace(0, 2, steps=3, base=2.0, dtype=lib.float64, device=dev)",
    "lib.logspace(0, 2, 3, 2, device=dev)",
    # Tensor.to overloads
    "x.to(lib.float64)", "x.to('cpu')", "x.to(lib.device('cpu'))", "x.to('cpu', lib.float64)",
    "x.to(device='cpu', dtype=lib.float64)", "x.to(xi)", "x.to(lib.float64, copy=True)",
    "x.to(lib.float64, non_blocking=True)", "x.to(dtype=lib.int32)", "x.to(None)",
    "x.to(None, lib.float64)", "x.to('cpu', None)", "x.to(float)", "x.to(int)", "x.to(bool)",
    "x.to(dtype=float)", "x.to('cpu', float)", "x.to(device=None, dtype=int)",
    "x.to(lib.float32) is x", "x.to(lib.float32, copy=True) is x",
    # type(): the name, or a conversion from a dtype, a name, or a legacy type
    "x.type()", "xi.type()", "x.bool().type()", "x.half().type()", "x.bfloat16().type()",
    "x.type(lib.float64)", "x.type('torch.DoubleTensor')", "x.type('torch.IntTensor')",
    "x.type(dtype=lib.float64)", "x.type(lib.DoubleTensor)", "x.type(lib.FloatTensor) is x",
    "x.type(lib.float32) is x", "x.type('torch.Tensor')", "xi.type(lib.Tensor)",
    "x.type(float)", "x.type(1)", "x.type('float32')", "x.type('FloatTensor')",
    "x.type('ember.float64')",
]


def _names_the_cpu(expr):
    # a legacy type name without "cuda." ('torch.DoubleTensor') is a CPU tensor type too
    return "'cpu'" in expr or "type('torch." in expr and "Tensor')" in expr \
        and "'torch.Tensor'" not in expr


@pytest.mark.parametrize("expr", [e for e in OVERLOAD_CASES if not _names_the_cpu(e)])
def test_overloads(expr, device):
    check(expr, device)


@pytest.mark.parametrize("expr", [e for e in OVERLOAD_CASES if _names_the_cpu(e)])
def test_overloads_naming_the_cpu(expr):
    check(expr, "cpu")  # these move to the CPU by name, so only a CPU tensor stays put


def test_type_names_match_torch_with_ember_for_torch():
    for dtype in ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16",
                  "int8", "uint8", "bool", "complex64", "complex128"):
        expected = torch.zeros(1, dtype=getattr(torch, dtype)).type()
        assert ember.zeros(1, dtype=getattr(ember, dtype)).type() == \
            expected.replace("torch", "ember")
        # ... and both spellings convert back
        assert ember.zeros(1).type(expected).dtype is getattr(ember, dtype)


SAMPLED_CASES = [
    "lib.randint(10, (2, 3), device=dev)", "lib.randint(10, size=(2, 3), device=dev)",
    "lib.randint(3, 10, (2, 3), device=dev)", "lib.randint(3, 10, size=(2, 3), device=dev)",
    "lib.randint(low=3, high=10, size=(2, 3), device=dev)",
    "lib.randint(10, (2, 3), dtype=lib.float32, device=dev)",
    "lib.randint(high=10, size=(2,), device=dev)",
    "lib.randint(0, 3, (2,), dtype=float, device=dev)",
    "lib.randint_like(x, 10)", "lib.randint_like(x, 3, 10)", "lib.randint_like(x, high=10)",
    "lib.randint_like(x, low=3, high=10)", "lib.randint_like(xi, 10, dtype=lib.int32)",
    "lib.normal(0., 1., (2, 3), device=dev)", "lib.normal(0., 1., size=(2, 3), device=dev)",
    "lib.normal(lib.zeros(3, device=dev), 1.)", "lib.normal(0., lib.ones(3, device=dev))",
    "lib.normal(lib.zeros(3, device=dev), lib.ones(3, device=dev))",
    "lib.normal(lib.zeros(3, device=dev), lib.ones(2, 3, device=dev))",
    "lib.normal(mean=lib.zeros(3, device=dev))",
    "lib.normal(mean=lib.zeros(3, device=dev), std=2.)",
    "lib.normal(2, 3, (2,), device=dev)",
    "lib.normal(2., 3., size=(4,), dtype=lib.float64, device=dev)",
    "lib.rand(2, 3, device=dev)", "lib.rand((2, 3), device=dev)",
    "lib.rand(size=(2, 3), device=dev)",
    "lib.rand(2, dtype=lib.float64, device=dev)", "lib.randn(2, 3, device=dev)",
    "lib.randn((2, 3), device=dev)", "lib.randn(size=(2, 3), device=dev)",
    "lib.randn(lib.Size([2]), device=dev)", "lib.randn((), device=dev)",
    "lib.randn(2, dtype=float, device=dev)", "lib.empty(size=(2, 3), device=dev)",
    "x.new_empty(2, 3)", "x.new_empty((2, 3))", "x.new_empty(size=[2])",
]


@pytest.mark.parametrize("expr", SAMPLED_CASES)
def test_sampled_overloads(expr, device):
    check_sampled(expr, device)


OUT_CASES = [
    "lib.zeros(2, 3, out=o)", "lib.ones(2, out=lib.empty(0, dtype=lib.int64, device=dev))",
    "lib.arange(5, out=o)", "lib.arange(0, 1, 0.25, out=lib.empty(0, dtype=lib.float64, device=dev))",
    "lib.linspace(0, 1, 3, out=o)", "lib.empty(2, out=lib.zeros(2, device=dev)).shape",
    "lib.rand(2, out=lib.empty(0, dtype=lib.float64, device=dev)).dtype",
    "lib.randn(2, 2, out=o).shape",
    "lib.randint(3, (4,), out=lib.empty(0, dtype=lib.int32, device=dev)).dtype",
    "lib.randperm(4, out=lib.empty(0, dtype=lib.int64, device=dev)).shape",
    "lib.normal(0., 1., (3,), out=lib.empty(3, dtype=lib.float64, device=dev)).dtype",
    "lib.normal(lib.zeros(3, device=dev), 1., out=lib.empty(3, device=dev)).shape",
]


@pytest.mark.parametrize("expr", OUT_CASES)
def test_factories_write_into_out(expr, device):
    # The result is ``out`` itself, resized when empty, in ``out``'s dtype.
    for lib in (torch, ember):
        names = _names(lib, device)
        names["o"] = lib.empty(0, device=names["dev"])
        result = eval(expr.replace(".dtype", "").replace(".shape", ""), names)
        assert result is names["o"] or "out=o" not in expr
    check(expr.replace("out=o", "out=lib.empty(0, device=dev)"), device)


@pytest.mark.parametrize("expr", [
    "lib.normal(lib.zeros(3, device=dev), dtype=lib.float64)",
    "lib.normal(lib.zeros(3, device=dev), 1., (3,))",
    "lib.normal(0., lib.ones(3, device=dev), device=dev)",
    "lib.normal(lib.zeros(3, device=dev), requires_grad=True)",
])
def test_normal_tensor_overloads_take_no_tensor_options(expr, device):
    check_error(expr, device, gist="normal() received an invalid combination of arguments")


def test_sampled_overloads_use_the_generator_and_bounds():
    def draw(seed, **kw):
        return ember.randint(3, 10, size=(1000,), generator=ember.Generator().manual_seed(seed),
                             **kw)

    a, b = draw(1), draw(1)
    assert bool((a == b).all()) and not bool((a == draw(2)).all())
    assert int(a.min()) >= 3 and int(a.max()) <= 9 and int(a.max()) == 9  # high is exclusive
    high_only = ember.randint(4, size=(1000,))
    assert int(high_only.min()) == 0 and int(high_only.max()) == 3
    g = ember.Generator().manual_seed(3)
    first = ember.normal(0.0, 1.0, size=(5,), generator=g)
    assert bool((first == ember.normal(0.0, 1.0, (5,),
                                       generator=ember.Generator().manual_seed(3))).all())
    wide = ember.normal(5.0, 2.0, size=(20000,))
    assert abs(float(wide.mean()) - 5.0) < 0.1 and abs(float(wide.std()) - 2.0) < 0.1


def test_view_dtype_shares_memory_and_stops_gradients(device):
    for lib in (torch, ember):
        x = lib.arange(8.0, device=device if lib is ember else "cpu").reshape(2, 4)
        halves = x.view(lib.float16)
        assert halves.data_ptr() == x.data_ptr() and halves._version == x._version
        halves[0, 1] = 2.0  # the high half of x[0, 0]'s bits
        assert float(x[0, 0]) != 0.0
        wide = x.view(lib.float64)
        wide[1, 1] = 0.0
        assert float(x[1, 3]) == 0.0 and float(x[1, 2]) == 0.0
        leaf = lib.ones(2, 2, requires_grad=True, device=device if lib is ember else "cpu")
        assert not leaf.view(lib.int64).requires_grad
        assert not leaf.view(lib.float16).requires_grad


# ---------------------------------------------------------------------------------------------
# Legacy constructors, ember.Tensor(...) and Tensor.new
# ---------------------------------------------------------------------------------------------

LEGACY_CASES = [
    "lib.FloatTensor(2, 3).shape", "lib.FloatTensor(2, 3).dtype", "lib.FloatTensor([1, 2])",
    "lib.FloatTensor((2, 3))", "lib.FloatTensor(lib.Size([2, 3])).shape", "lib.FloatTensor()",
    "lib.DoubleTensor([1, 2])", "lib.HalfTensor([1, 2])", "lib.BFloat16Tensor([1, 2]).float()",
    "lib.LongTensor([1, 2])", "lib.LongTensor([1.7, 2])", "lib.LongTensor(3).shape",
    "lib.IntTensor([1, 2])", "lib.ShortTensor([1, 2])", "lib.CharTensor([1, 2])",
    "lib.ByteTensor([1, 2])", "lib.ByteTensor([1.5, 2])", "lib.BoolTensor([1, 0])",
    "lib.BoolTensor([2, 0])", "lib.BoolTensor(2).dtype", "lib.FloatTensor([[1, 2]])",
    "lib.FloatTensor(lib.Size([])).shape", "lib.FloatTensor(np.arange(3))",
    "lib.LongTensor(np.arange(3.))", "lib.FloatTensor([1, 2], device='cpu')",
    "lib.FloatTensor(2, 3, device='cpu').shape",
    "lib.FloatTensor(x.cpu())", "lib.LongTensor(xi.cpu())", "lib.FloatTensor(xi.cpu())",
    "lib.LongTensor(x.cpu())", "lib.FloatTensor(x.double().cpu())",
    "lib.FloatTensor(2.5)", "lib.FloatTensor(True)", "lib.FloatTensor(2, 3.0)",
    "isinstance(x.cpu(), lib.FloatTensor)", "isinstance(xi.cpu(), lib.FloatTensor)",
    "isinstance(xi.cpu(), lib.LongTensor)", "isinstance(xb.cpu(), lib.BoolTensor)",
    "isinstance(x.cpu().requires_grad_(), lib.FloatTensor)", "isinstance(1, lib.FloatTensor)",
    "isinstance(lib.FloatTensor(2), lib.Tensor)", "type(lib.FloatTensor(2)).__name__",
    "issubclass(lib.FloatTensor, lib.Tensor)", "lib.FloatTensor.dtype", "lib.LongTensor.dtype",
    "lib.HalfTensor.dtype", "lib.FloatTensor.__name__", "lib.FloatTensor.__module__",
    "repr(lib.FloatTensor)", "lib.FloatTensor.is_cuda", "lib.FloatTensor(2).type()",
    "lib.tensor([1, 2]).type(lib.IntTensor)", "x.cpu().type(lib.LongTensor)",
    "lib.Tensor(2, 3).shape", "lib.Tensor([1, 2])", "lib.Tensor([[1, 2], [3, 4]])", "lib.Tensor()",
    "lib.Tensor(x)", "lib.Tensor(xi)", "lib.Tensor((2, 3))", "lib.Tensor(lib.Size([2, 3])).shape",
    "lib.Tensor(2.5)",
    "x.new(2, 3).shape", "x.new(2, 3).dtype", "x.new([1, 2])", "xi.new([1, 2])", "xi.new(2).shape",
    "x.new()", "x.new(xi)", "x.new((2, 3))", "x.new(lib.Size([2])).shape", "xi.new(2, 3).dtype",
]


@pytest.mark.parametrize("expr", LEGACY_CASES)
def test_legacy_constructors(expr):
    # The legacy types are CPU types (test_new_keeps_the_device covers x.new elsewhere).
    check(expr)


@pytest.mark.parametrize("expr", ["lib.FloatTensor([1], [2])",
                                  "lib.FloatTensor(requires_grad=True)",
                                  "lib.Tensor([1, 2], dtype=lib.float64)",
                                  "x.new(2, dtype=lib.float64)"])
def test_legacy_constructor_overload_errors(expr):
    # torch lists each overload with why it did not match; the first line is the same.
    torch_message = None
    try:
        _eval(expr, torch)
    except TypeError as exc:
        torch_message = str(exc).replace("torch", "ember")
    check_error(expr, gist=torch_message.split(", but expected")[0])


def test_legacy_constructors_alias_a_tensor_of_their_dtype():
    for make in (lambda t: ember.FloatTensor(t), lambda t: ember.Tensor(t), lambda t: t.new(t)):
        base = ember.arange(6.0).reshape(2, 3)
        alias = make(base)
        assert alias is not base and alias.data_ptr() == base.data_ptr()
        alias[0, 0] = 7.0
        assert float(base[0, 0]) == 7.0
    leaf = ember.zeros(2, requires_grad=True)
    assert ember.FloatTensor(leaf).requires_grad == torch.FloatTensor(
        torch.zeros(2, requires_grad=True)).requires_grad
    # The legacy types are CPU types: PyTorch's error names the device type passed.
    with pytest.raises(RuntimeError) as torch_error:
        torch.FloatTensor(2, device="meta")
    with pytest.raises(RuntimeError) as ember_error:
        ember.FloatTensor(2, device="testdev")
    assert str(ember_error.value) == str(torch_error.value).replace("meta", "testdev")


def test_new_keeps_the_device(device):
    x = ember.zeros(2, dtype=ember.float64, device=device)
    for made in (x.new(3), x.new([1, 2]), x.new_zeros(2), x.new_ones((1, 2)),
                 x.new_empty(size=(2,)), x.new_full((2,), 3), x.new_tensor([1.0])):
        assert made.device.type == device and made.dtype is ember.float64


# ---------------------------------------------------------------------------------------------
# Argument errors with torch's types and messages
# ---------------------------------------------------------------------------------------------

DTYPE_CASES = [
    # Python's scalar types are dtypes; strings, ints and NumPy types are a TypeError
    "lib.zeros(2, dtype=float, device=dev)", "lib.zeros(2, dtype=int, device=dev)",
    "lib.zeros(2, dtype=bool, device=dev)", "lib.zeros(2, dtype=complex, device=dev)",
    "lib.tensor([1], dtype=float, device=dev)", "lib.full((2,), 1, dtype=float, device=dev)",
    "lib.arange(3, dtype=float, device=dev)", "lib.linspace(0, 1, 3, dtype=float, device=dev)",
    "lib.eye(2, dtype=int, device=dev)", "x.sum(dtype=float)", "x.new_zeros(2, dtype=float)",
    "lib.zeros_like(x, dtype=int)", "lib.ones_like(x, dtype=bool)", "x.cumsum(0, dtype=float)",
    "x.mean(dtype=float)", "x.prod(dtype=float)", "lib.softmax(x, 0, dtype=float)",
    "lib.zeros(2, dtype='float32')", "lib.zeros(2, dtype=1)", "lib.zeros(2, dtype=np.float32)",
    "lib.ones(2, dtype='float32')", "lib.empty(2, dtype='float32')",
    "lib.tensor([1], dtype='float32')",
    "lib.tensor([1], dtype=np.float32)", "lib.full((2,), 1, dtype='float32')",
    "lib.ones_like(x, dtype='float32')", "x.new_ones(2, dtype='float32')",
    "x.new_full((2,), 1, dtype='float32')", "x.new_tensor([1], dtype='float32')",
    "lib.as_tensor([1], dtype='float32')", "lib.zeros(2, dtype=[1])",
]


@pytest.mark.parametrize("expr", DTYPE_CASES)
def test_dtype_arguments(expr, device):
    check(expr, device)


# torch's message differs by overload set; the exception type and gist must match.
DTYPE_GIST_CASES = [
    ("lib.rand(2, dtype='float32')", "rand()"), ("lib.randn(2, dtype='float32')", "randn()"),
    ("lib.arange(3, dtype='float32')", "arange()"), ("x.sum(dtype='float32')", "sum()"),
    ("x.to(dtype='float32')", "to()"), ("x.to(np.float32)", "to()"),
    ("lib.randint(0, 3, (2,), dtype='float32')", "randint()"),
    ("lib.hann_window(4, dtype='float32')", "hann_window("),
    ("lib.kaiser_window(4, dtype='float32')", "kaiser_window("),
    ("lib.tril_indices(3, 3, dtype='int64')", "tril_indices()"),
    ("lib.triu_indices(3, 3, dtype='int64')", "triu_indices()"),
    ("lib.linalg.vector_norm(x.double(), dtype='float64')", "linalg_vector_norm("),
    ("lib.linalg.matrix_norm(x.double().reshape(1, -1), dtype='float64')",
     "linalg_matrix_norm("),
]


@pytest.mark.parametrize("expr,gist", DTYPE_GIST_CASES)
def test_dtype_argument_errors_by_type(expr, gist, device):
    check_error(expr, device, gist=gist)


LIST_ERROR_CASES = [
    "lib.cat([])", "lib.cat(())", "lib.cat([1, 2])", "lib.cat([x, 1])", "lib.cat(x)",
    "lib.concat([])", "lib.stack([])", "lib.stack([x, 1])", "lib.stack(x)", "lib.stack(())",
    "lib.hstack([])", "lib.vstack([])", "lib.dstack([])", "lib.column_stack([])",
    "lib.hstack([x, 1])", "lib.vstack(x)", "lib.dstack([x, 'a'])", "lib.column_stack(x)",
    "lib.cat([x, lib.zeros(2, 5, device=dev)])", "lib.cat([lib.zeros(2, device=dev), x])",
    "lib.stack([x, lib.zeros(2, 3, device=dev)])",
]


@pytest.mark.parametrize("expr", LIST_ERROR_CASES)
def test_tensor_list_errors(expr, device):
    check_error(expr, device)


GRAD_CASES = [
    "lib.zeros(3, 2)", "lib.zeros(6)", "lib.zeros(2, 3, dtype=lib.float64)",
    "lib.zeros(2, 3, dtype=lib.int64)", "lib.zeros(2, 3, dtype=lib.float16)",
    "lib.zeros(2, 3, dtype=lib.complex64)", "lib.zeros(3, 2, dtype=lib.float64)", "[1]",
]


@pytest.mark.parametrize("grad", GRAD_CASES)
def test_assigning_a_mismatched_grad(grad):
    errors = []
    for lib in (torch, ember):
        t = lib.zeros(2, 3, requires_grad=True)
        with pytest.raises(Exception) as info:
            t.grad = eval(grad, {"lib": lib})
        errors.append(info.value)
        assert t.grad is None
    torch_error, ember_error = errors
    assert type(ember_error) is type(torch_error)
    # torch goes on to advise its grad_dtype attribute, which Ember does not have.
    gist = str(torch_error).split(" You can set the tensor's grad_dtype")[0]
    assert gist in str(ember_error)


def test_assigning_grad():
    for lib in (torch, ember):
        t = lib.zeros(2, 3, requires_grad=True)
        with pytest.raises(RuntimeError, match="can't assign Variable as its own grad"):
            t.grad = t
        g = lib.ones(2, 3)
        t.grad = g
        assert t.grad is g
        t.grad = None
        assert t.grad is None
        t.grad = g
        del t.grad
        assert t.grad is None
        (t * 2).sum().backward()  # the engine's own assignment passes the checks
        assert float(t.grad.sum()) == 12.0
    with pytest.raises(RuntimeError) as torch_error:
        torch.zeros(2, requires_grad=True).grad = torch.zeros(2, device="meta")
    with pytest.raises(RuntimeError) as ember_error:
        ember.zeros(2, requires_grad=True).grad = ember.zeros(2, device="testdev")
    assert str(ember_error.value) == str(torch_error.value).replace("meta", "testdev")
