"""The op table's machinery: an ``OpInfo`` row names an op, how to call it (one function used
for both ``torch`` and ``ember``, since their APIs match), sample inputs, and tolerances.
``check_forward`` / ``check_backward`` / ``check_gradcheck`` compare Ember against PyTorch.

A row's ``fn(lib, *tensors, **kwargs)`` receives the module (``torch`` or ``ember``) first, so
``lambda lib, x: lib.exp(x)`` and ``lambda lib, x: x.exp()`` both test the same thing twice.
"""
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import torch

import ember

FLOAT_DTYPES = ("float32", "float64", "float16", "bfloat16")
INT_DTYPES = ("int64", "int32", "int16", "int8", "uint8")
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES + ("bool",)
COMPLEX_DTYPES = ("complex64", "complex128")

# Forward tolerance per dtype (rtol, atol).
TOL = {
    "float64": (1e-7, 1e-7), "float32": (1.3e-5, 1e-5), "float16": (1e-3, 1e-3),
    "bfloat16": (1.6e-2, 1e-2), "complex64": (1.3e-5, 1e-5), "complex128": (1e-7, 1e-7),
}


@dataclass
class Sample:
    """Shapes of the tensor arguments plus keyword arguments. ``noncontig`` builds each input
    of rank >= 1 as a strided view (every other element of a larger array)."""
    shapes: Sequence[tuple]
    kwargs: dict = field(default_factory=dict)
    noncontig: bool = False
    # Extra non-tensor positional arguments appended after the tensors.
    args: tuple = ()


@dataclass
class OpInfo:
    name: str
    fn: Callable
    samples: Sequence[Sample]
    dtypes: Sequence[str] = FLOAT_DTYPES
    grad: bool = True
    gradcheck: bool = True
    gradgrad: bool = False
    domain: tuple = (-2.0, 2.0)
    # Inputs generator override: fn(rng, shape, dtype_name, index) -> numpy array.
    make_input: Callable = None
    # Which tensor arguments are differentiable (by position); None means every float input.
    grad_inputs: Sequence[int] = None
    tol: dict = field(default_factory=dict)
    grad_tol: tuple = None
    # Compare only shape/dtype (random ops, unspecified orders).
    values: bool = True
    skip_devices: Sequence[str] = ()

    def __repr__(self):
        return self.name


def distinct_samples(op):
    """The row's samples, one per distinct argument list (number of tensors, kwargs, args):
    the sweeps that replace every input's shape or dtype need each argument list once."""
    seen = set()
    for sample in op.samples:
        key = (len(sample.shapes), repr(sample.kwargs), repr(sample.args))
        if key not in seen:
            seen.add(key)
            yield sample


def make_array(rng, shape, dtype, domain=(-2.0, 2.0)):
    lo, hi = domain
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype in COMPLEX_DTYPES:
        return rng.uniform(lo, hi, size=shape) + 1j * rng.uniform(lo, hi, size=shape)
    if dtype in INT_DTYPES:
        lo_i = 0 if dtype == "uint8" else int(np.floor(lo * 3))
        return rng.integers(lo_i, max(int(np.ceil(hi * 3)), lo_i + 1) + 1, size=shape).astype(dtype)
    return rng.uniform(lo, hi, size=shape).astype(np.float64)


def _torch_dtype(name):
    return getattr(torch, name)


def _ember_dtype(name):
    return getattr(ember, name)


def to_pair(arr64, dtype, device, noncontig, requires_grad):
    """The same values as a torch tensor and an ember tensor (on ``device``)."""
    arr = np.asarray(arr64)
    if noncontig and arr.ndim >= 1:
        big = np.repeat(arr, 2, axis=-1)
        t = torch.from_numpy(big.astype(np.float64) if arr.dtype.kind == "f" else big)
        t = t.to(_torch_dtype(dtype))[..., ::2]
        e = ember.tensor(big, device=device)
        e = e.to(_ember_dtype(dtype))[..., ::2]
        assert not e.is_contiguous() or arr.shape[-1] <= 1
    else:
        t = torch.from_numpy(arr.copy()).to(_torch_dtype(dtype))
        e = ember.tensor(arr.copy(), device=device).to(_ember_dtype(dtype))
    if requires_grad:
        t.requires_grad_(True)
        e.requires_grad_(True)
    return t, e


def ember_to_numpy(e):
    e = e.detach().cpu()
    if e.dtype is ember.bfloat16:
        e = e.float()
    return np.asarray(e.numpy())


def torch_to_numpy(t):
    t = t.detach().resolve_conj().resolve_neg()
    if t.dtype == torch.bfloat16:
        t = t.float()
    return t.numpy()


def flatten_outputs(out):
    if isinstance(out, (tuple, list)):
        res = []
        for o in out:
            res.extend(flatten_outputs(o))
        return res
    return [out]


def assert_same(e_out, t_out, dtype, tol=None, what="output", check_values=True):
    e_list, t_list = flatten_outputs(e_out), flatten_outputs(t_out)
    assert len(e_list) == len(t_list), f"{what}: {len(e_list)} outputs vs torch {len(t_list)}"
    for i, (e, t) in enumerate(zip(e_list, t_list)):
        if isinstance(t, torch.Tensor):
            assert isinstance(e, ember.Tensor), f"{what}[{i}]: expected a Tensor, got {type(e)}"
            assert tuple(e.shape) == tuple(t.shape), f"{what}[{i}] shape {tuple(e.shape)} vs torch {tuple(t.shape)}"
            assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], \
                f"{what}[{i}] dtype {e.dtype} vs torch {t.dtype}"
            if check_values:
                rtol, atol = tol or TOL.get(str(t.dtype).split(".")[-1], (0, 0))
                np.testing.assert_allclose(ember_to_numpy(e), torch_to_numpy(t), rtol=rtol,
                                           atol=atol, equal_nan=True, err_msg=f"{what}[{i}]")
        elif check_values:
            assert e == t or (isinstance(t, float) and np.isclose(e, t)), f"{what}[{i}]: {e} vs {t}"


def build_inputs(op, sample, dtype, device, requires_grad, seed=0):
    rng = np.random.default_rng(seed)
    pairs = []
    for i, shape in enumerate(sample.shapes):
        if op.make_input is not None:
            arr = op.make_input(rng, shape, dtype, i)
        else:
            arr = make_array(rng, shape, dtype, op.domain)
        wants = requires_grad and dtype in FLOAT_DTYPES + COMPLEX_DTYPES and (op.grad_inputs is None or i in op.grad_inputs)
        in_dtype = dtype
        if isinstance(arr, np.ndarray) and arr.dtype.kind in "iub" and dtype in FLOAT_DTYPES:
            in_dtype = {"b": "bool"}.get(arr.dtype.kind, "int64")
            wants = False
        pairs.append(to_pair(arr, in_dtype, device, sample.noncontig, wants))
    return [p[0] for p in pairs], [p[1] for p in pairs]


def check_forward(op, sample, dtype, device):
    t_in, e_in = build_inputs(op, sample, dtype, device, False)
    try:
        t_out = op.fn(torch, *t_in, *sample.args, **sample.kwargs)
    except Exception as exc:  # torch refuses: ember must refuse with the same exception type
        import pytest
        with pytest.raises(type(exc)):
            op.fn(ember, *e_in, *sample.args, **sample.kwargs)
        return
    e_out = op.fn(ember, *e_in, *sample.args, **sample.kwargs)
    assert_same(e_out, t_out, dtype, op.tol.get(dtype), check_values=op.values)
    for e in flatten_outputs(e_out):
        if isinstance(e, ember.Tensor):
            assert e.device.type == device, f"output on {e.device}, expected {device}"


def _refused_alike(torch_call, ember_call, names=("torch", "Ember")):
    """Runs ``torch_call``; if torch refuses it, Ember must refuse ``ember_call`` with the same
    exception type, and True is returned (there is nothing further to compare). ``names`` are
    the two sides as the error names them (benchmarks/gpu_check.py: the CPU and a device)."""
    first, second = names
    try:
        torch_call()
    except Exception as exc:  # noqa: BLE001 - whatever torch raises, Ember must raise alike
        try:
            ember_call()
        except type(exc):
            return True
        except Exception as other:  # noqa: BLE001
            raise AssertionError(f"{first} raised {type(exc).__name__}: {exc}; {second} raised "
                                 f"{type(other).__name__}: {other}") from other
        raise AssertionError(f"{first} raised {type(exc).__name__}: {exc}; {second} did not")
    return False


def check_backward(op, sample, dtype, device):
    t_in, e_in = build_inputs(op, sample, dtype, device, True)
    t_out = []

    def torch_forward():
        t_out.append(op.fn(torch, *t_in, *sample.args, **sample.kwargs))
    if _refused_alike(torch_forward, lambda: op.fn(ember, *e_in, *sample.args, **sample.kwargs)):
        return
    t_out = t_out[0]
    e_out = op.fn(ember, *e_in, *sample.args, **sample.kwargs)
    t_outs = [o for o in flatten_outputs(t_out) if isinstance(o, torch.Tensor) and o.requires_grad]
    e_outs = [o for o in flatten_outputs(e_out) if isinstance(o, ember.Tensor) and o.requires_grad]
    assert len(t_outs) == len(e_outs), "a different number of outputs require grad"
    if not t_outs:
        return
    rng = np.random.default_rng(1)
    t_cot, e_cot = [], []
    for t in t_outs:
        c = rng.uniform(-1, 1, size=tuple(t.shape))
        cot_dtype = dtype
        if t.dtype.is_complex or dtype in COMPLEX_DTYPES:  # a cotangent has its output's dtype
            cot_dtype = str(t.dtype).split(".")[-1]
            if t.dtype.is_complex:
                c = c + 1j * rng.uniform(-1, 1, size=tuple(t.shape))
        tc, ec = to_pair(c, cot_dtype, device, False, False)
        t_cot.append(tc)
        e_cot.append(ec)
    t_leaves = [t for t in t_in if t.requires_grad]
    e_leaves = [e for e in e_in if e.requires_grad]
    # Where torch's backward refuses (an empty batch some kernels reject), Ember's must too.
    if _refused_alike(lambda: torch.autograd.grad(t_outs, t_leaves, t_cot, allow_unused=True,
                                                  retain_graph=True),
                      lambda: ember.autograd.grad(e_outs, e_leaves, e_cot, allow_unused=True,
                                                  retain_graph=True)):
        return
    t_grads = torch.autograd.grad(t_outs, t_leaves, t_cot, allow_unused=True)
    e_grads = ember.autograd.grad(e_outs, e_leaves, e_cot, allow_unused=True)
    for i, (tg, eg) in enumerate(zip(t_grads, e_grads)):
        if tg is None:
            assert eg is None or float(eg.abs().sum()) == 0, f"grad[{i}] should be None/zero"
            continue
        assert eg is not None, f"grad[{i}] is None, torch has one"
        tol = op.grad_tol or TOL[dtype]
        if dtype in ("float16", "bfloat16"):
            tol = (tol[0] * 4, tol[1] * 4)
        assert_same(eg, tg, dtype, tol, what=f"grad[{i}]")


def check_gradcheck(op, sample, device, gradgrad=False):
    t_in, e_in = build_inputs(op, sample, "float64", device, True)
    if not any(e.requires_grad for e in e_in):
        return
    # A sample torch refuses has no gradient to check (Ember refusing alike is the check).
    if _refused_alike(lambda: op.fn(torch, *t_in, *sample.args, **sample.kwargs),
                      lambda: op.fn(ember, *e_in, *sample.args, **sample.kwargs)):
        return
    e_in = [e.detach().contiguous().requires_grad_(e.requires_grad) for e in e_in]

    def fn(*xs):
        return op.fn(ember, *xs, *sample.args, **sample.kwargs)

    assert ember.autograd.gradcheck(fn, tuple(e_in), eps=1e-6, atol=1e-5, rtol=1e-3)
    if gradgrad:
        assert ember.autograd.gradgradcheck(fn, tuple(e_in), eps=1e-6, atol=1e-5, rtol=1e-3)


def standard_samples(*shape_sets, kwargs=None, noncontig=True):
    """Samples over the usual shape families: the given ones, a 0-d one and an empty one are
    the caller's to include; a non-contiguous copy of the first is added."""
    kwargs = kwargs or {}
    out = [Sample(s, dict(kwargs)) for s in shape_sets]
    if noncontig:
        first = [s for s in shape_sets if all(len(x) >= 1 and x[-1] > 0 for x in s)]
        if first:
            out.append(Sample(first[0], dict(kwargs), noncontig=True))
    return out
