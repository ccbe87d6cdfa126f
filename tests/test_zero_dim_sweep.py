"""0-d inputs everywhere: every row of the op table and every ``nn.functional`` activation and
loss, called with 0-d float64 tensors, against PyTorch. Forward value, dtype and shape must match
and so must the gradient; where PyTorch refuses a 0-d input, Ember must raise the same exception
type. (NumPy turns a ufunc or reduction of a 0-d array into a scalar, which is the usual cause of
a failure here.)"""
import numpy as np
import pytest
import torch

import ember
from opinfo import core
from opinfo.registry import ALL_OPS


def _zero_dim_samples(op):
    """The row's samples with every tensor argument 0-d, one per distinct argument list."""
    for sample in core.distinct_samples(op):
        yield core.Sample(tuple(() for _ in sample.shapes), dict(sample.kwargs), args=sample.args)


def _table_cases():
    for op in ALL_OPS:
        if "float64" not in op.dtypes:
            continue
        for i, sample in enumerate(_zero_dim_samples(op)):
            yield pytest.param(op, sample, id=f"{op.name}-{i}")


def _scalar_inputs(op):
    """A row whose input generator needs dimensions (matrices, sorted boundaries) gets the
    default values instead: the point here is the 0-d shape."""
    if op.make_input is None:
        return op
    try:
        for index in range(4):
            op.make_input(np.random.default_rng(0), (), "float64", index)
    except Exception:
        return core.OpInfo(op.name, op.fn, op.samples, dtypes=op.dtypes, grad=op.grad,
                           domain=op.domain, grad_inputs=op.grad_inputs, tol=op.tol,
                           grad_tol=op.grad_tol, values=op.values)
    return op


def _check_like_torch(op, sample, device):
    t_in, e_in = core.build_inputs(op, sample, "float64", device, False)
    try:
        op.fn(torch, *t_in, *sample.args, **sample.kwargs)
    except Exception as exc:
        with pytest.raises(type(exc)):
            op.fn(ember, *e_in, *sample.args, **sample.kwargs)
        return
    core.check_forward(op, sample, "float64", device)
    if op.grad:
        core.check_backward(op, sample, "float64", device)


@pytest.mark.parametrize("op,sample", list(_table_cases()))
def test_op_table_zero_dim(op, sample, device):
    if device in op.skip_devices:
        pytest.skip(f"{op.name} is not run on {device}")
    _check_like_torch(_scalar_inputs(op), sample, device)


# ---- nn.functional ------------------------------------------------------------------------------
# Each case: (name, fn(lib, *tensors), values of the 0-d inputs, indices of differentiable inputs).
# The values are chosen inside each function's domain (targets of margin losses are +-1,
# probabilities in (0, 1)) so that the comparison is of the maths, not of argument checks.

def _activation_cases():
    x = (0.7,)
    neg = (-0.6,)
    cases = []
    for name, kwargs in [
        ("relu", {}), ("relu6", {}), ("elu", {}), ("elu", {"alpha": 0.5}), ("selu", {}),
        ("celu", {"alpha": 1.3}), ("leaky_relu", {"negative_slope": 0.2}), ("silu", {}),
        ("mish", {}), ("gelu", {}), ("gelu", {"approximate": "tanh"}), ("logsigmoid", {}),
        ("softplus", {"beta": 2.0, "threshold": 5.0}), ("hardtanh", {"min_val": -0.5, "max_val": 0.5}),
        ("hardswish", {}), ("hardsigmoid", {}), ("hardshrink", {"lambd": 0.3}),
        ("softshrink", {"lambd": 0.3}), ("tanhshrink", {}), ("softsign", {}), ("tanh", {}),
        ("sigmoid", {}), ("threshold", {"threshold": 0.1, "value": -2.0}),
        ("rrelu", {"training": False}),
    ]:
        for values in (x, neg):
            cases.append((f"{name}{kwargs}{values}",
                          lambda lib, a, _n=name, _k=kwargs: getattr(lib.nn.functional, _n)(a, **_k),
                          values, (0,)))
    for name in ("softmax", "log_softmax", "softmin"):
        for dim in (0, -1, 1):
            cases.append((f"{name}-dim{dim}",
                          lambda lib, a, _n=name, _d=dim: getattr(lib.nn.functional, _n)(a, dim=_d),
                          x, (0,)))
    cases.append(("glu", lambda lib, a: lib.nn.functional.glu(a), x, (0,)))
    cases.append(("prelu", lambda lib, a, w: lib.nn.functional.prelu(a, w), (-0.6, 0.25), (0, 1)))
    cases.append(("gumbel_softmax",
                  lambda lib, a: lib.nn.functional.gumbel_softmax(a, tau=0.5, hard=True), x, ()))
    return cases


def _loss_cases():
    cases = []

    def loss(name, values, grad=(0,), **kwargs):
        for reduction in ("mean", "sum", "none"):
            cases.append((f"{name}{kwargs}-{reduction}",
                          lambda lib, *ts, _n=name, _k=kwargs, _r=reduction:
                              getattr(lib.nn.functional, _n)(*ts, reduction=_r, **_k),
                          values, grad))

    loss("l1_loss", (0.3, -0.4), (0, 1))
    loss("mse_loss", (0.3, -0.4), (0, 1))
    loss("smooth_l1_loss", (0.3, -0.4), (0, 1), beta=0.5)
    loss("smooth_l1_loss", (0.3, -0.4), (0, 1), beta=2.0)
    loss("huber_loss", (0.3, -0.9), (0, 1), delta=0.5)
    loss("binary_cross_entropy", (0.3, 0.8), (0, 1))
    loss("binary_cross_entropy_with_logits", (0.3, 0.8), (0, 1))
    loss("kl_div", (-0.3, 0.6), (0, 1))
    loss("kl_div", (-0.3, -0.6), (0, 1), log_target=True)
    loss("poisson_nll_loss", (0.3, 2.0), (0, 1))
    loss("poisson_nll_loss", (0.3, 2.0), (0, 1), log_input=False, full=True)
    loss("gaussian_nll_loss", (0.3, -0.2, 0.5), (0, 1, 2))
    loss("margin_ranking_loss", (0.3, 0.5, 1.0), (0, 1), margin=0.1)
    loss("hinge_embedding_loss", (0.3, -1.0), (0,))
    loss("hinge_embedding_loss", (0.3, 1.0), (0,))
    loss("soft_margin_loss", (0.3, -1.0), (0,))
    loss("cosine_embedding_loss", (0.3, 0.5, 1.0), (0, 1))
    loss("triplet_margin_loss", (0.3, 0.5, -0.2), (0, 1, 2))
    loss("multilabel_soft_margin_loss", (0.3, 1.0), (0,))
    loss("cross_entropy", (0.3, 0.0), (0,))  # an integer target: class indices
    loss("cross_entropy", (0.3, 0.5), (0, 1))  # a float target: class probabilities
    loss("cross_entropy", (0.3, 0.5), (0, 1), label_smoothing=0.1)
    loss("nll_loss", (0.3, 0.0), (0,))
    return cases


_INT_TARGETS = {("cross_entropy", 1), ("nll_loss", 1), ("multi_margin_loss", 1),
                ("multilabel_margin_loss", 1)}


def _pairs(name, values, grad_inputs, device):
    t_in, e_in = [], []
    base = name.split("{")[0].split("-")[0]
    for i, v in enumerate(values):
        if (base, i) in _INT_TARGETS and float(v).is_integer():
            t, e = torch.tensor(int(v)), ember.tensor(int(v), device=device)
        else:
            wants = i in grad_inputs
            t = torch.tensor(v, dtype=torch.float64, requires_grad=wants)
            e = ember.tensor(v, dtype=ember.float64, device=device, requires_grad=wants)
        t_in.append(t)
        e_in.append(e)
    return t_in, e_in


def _integer_target_cases():
    cases = []
    for name in ("multi_margin_loss", "multilabel_margin_loss"):
        for reduction in ("mean", "sum", "none"):
            cases.append((f"{name}-{reduction}",
                          lambda lib, a, b, _n=name, _r=reduction:
                              getattr(lib.nn.functional, _n)(a, b, reduction=_r),
                          (0.3, 0.0), (0,)))
    return cases


FUNCTIONAL_CASES = _activation_cases() + _loss_cases() + _integer_target_cases()


@pytest.mark.parametrize("name,fn,values,grad_inputs", FUNCTIONAL_CASES,
                         ids=[c[0] for c in FUNCTIONAL_CASES])
def test_functional_zero_dim(name, fn, values, grad_inputs, device):
    t_in, e_in = _pairs(name, values, grad_inputs, device)
    try:
        t_out = fn(torch, *t_in)
    except Exception as exc:
        with pytest.raises(type(exc)):
            fn(ember, *e_in)
        return
    if name.startswith("gumbel_softmax"):  # random: the one-hot of a 0-d input is 1 either way
        ember.manual_seed(0)
    e_out = fn(ember, *e_in)
    core.assert_same(e_out, t_out, "float64")
    t_leaves = [t for t in t_in if t.requires_grad]
    e_leaves = [e for e in e_in if e.requires_grad]
    if not t_leaves or not t_out.requires_grad:
        assert not (e_leaves and e_out.requires_grad) or not t_leaves
        return
    t_grads = torch.autograd.grad(t_out.sum(), t_leaves, allow_unused=True)
    e_grads = ember.autograd.grad(e_out.sum(), e_leaves, allow_unused=True)
    for i, (tg, eg) in enumerate(zip(t_grads, e_grads)):
        if tg is None:
            assert eg is None or float(eg.abs().sum()) == 0, f"grad[{i}] should be None/zero"
        else:
            assert eg is not None, f"grad[{i}] is None, torch has one"
            core.assert_same(eg, tg, "float64", what=f"grad[{i}]")


def test_relu_backward_of_python_float_tensor():
    """The reported case: ``tensor(1.0, requires_grad=True).relu().backward()``."""
    for lib in (torch, ember):
        x = lib.tensor(1.0, requires_grad=True)
        x.relu().backward()
        assert float(x.grad) == 1.0 and tuple(x.grad.shape) == ()
