"""Every loss, functional and module, against PyTorch: values for each reduction, gradients with
respect to the input and (where PyTorch differentiates it) the target and weights, and errors."""
import warnings

import numpy as np
import pytest
import torch

import ember
from torch_compare import assert_same, compare_error

REDUCTIONS = ["none", "mean", "sum"]
rng = np.random.default_rng(0)


def _run(lib, fn, arrays, grad_of):
    tensors = []
    for i, a in enumerate(arrays):
        t = lib.tensor(a)
        if i in grad_of:
            t.requires_grad_(True)
        tensors.append(t)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fn(lib, *tensors)
    if not grad_of:
        return out, []
    upstream = lib.tensor(np.linspace(0.5, 1.5, out.numel()).reshape(tuple(out.shape)),
                          dtype=out.dtype)
    grads = lib.autograd.grad(out, [tensors[i] for i in grad_of], upstream, allow_unused=True)
    return out, list(grads)


def check(fn, *arrays, grad_of=(0,), rtol=1e-6, atol=1e-8):
    """``fn(lib, *tensors)`` agrees between torch and ember, and so do the gradients of its
    output (weighted by a fixed upstream gradient) with respect to the inputs in ``grad_of``."""
    expected, expected_grads = _run(torch, fn, arrays, grad_of)
    actual, actual_grads = _run(ember, fn, arrays, grad_of)
    assert_same(expected, actual, rtol=rtol, atol=atol)
    for e, a in zip(expected_grads, actual_grads):
        if e is None:
            assert a is None or not np.asarray(a).any()
        else:
            assert_same(e, a, rtol=rtol, atol=atol)


def randn(*shape):
    return rng.standard_normal(shape)


def rand(*shape):
    return rng.uniform(0.05, 0.95, shape)


def labels(high, *shape):
    return rng.integers(0, high, shape)


def F(lib):
    return lib.nn.functional


# ---- regression -------------------------------------------------------------------------------

@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", ["l1_loss", "mse_loss"])
def test_l1_mse(name, reduction):
    check(lambda lib, x, y: getattr(F(lib), name)(x, y, reduction=reduction),
          randn(3, 4), randn(3, 4), grad_of=(0, 1))
    check(lambda lib, x, y, w: getattr(F(lib), name)(x, y, reduction=reduction, weight=w),
          randn(3, 4), randn(3, 4), rand(3, 4), grad_of=(0, 1, 2))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("beta", [0.0, 0.5, 1.0, 2.0])
def test_smooth_l1(reduction, beta):
    check(lambda lib, x, y: F(lib).smooth_l1_loss(x, y, reduction=reduction, beta=beta),
          randn(4, 5) * 2, randn(4, 5), grad_of=(0, 1))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("delta", [0.5, 1.0, 2.0])
def test_huber(reduction, delta):
    check(lambda lib, x, y: F(lib).huber_loss(x, y, reduction=reduction, delta=delta),
          randn(4, 5) * 2, randn(4, 5), grad_of=(0, 1))
    check(lambda lib, x, y, w: F(lib).huber_loss(x, y, reduction=reduction, delta=delta, weight=w),
          randn(4, 5) * 2, randn(4, 5), rand(4, 5), grad_of=(0, 1, 2))


def test_regression_broadcasting_warns_like_torch():
    for lib in (torch, ember):
        with pytest.warns(UserWarning, match="Using a target size"):
            F(lib).mse_loss(lib.ones(3, 4), lib.ones(4))
    check(lambda lib, x, y: F(lib).l1_loss(x, y), randn(3, 4), randn(4), grad_of=(0, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compare_error(lambda lib: F(lib).mse_loss(lib.ones(3, 4), lib.ones(3, 5)))
    compare_error(lambda lib: F(lib).mse_loss(lib.ones(3), lib.ones(3), reduction="avg"))


def test_legacy_size_average_and_reduce():
    for size_average, reduce in [(False, None), (None, False), (True, True)]:
        check(lambda lib, x, y: F(lib).mse_loss(x, y, size_average=size_average, reduce=reduce),
              randn(3, 4), randn(3, 4))


# ---- nll / cross-entropy ----------------------------------------------------------------------

@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss(reduction):
    target = labels(5, 6)
    target[2] = -100
    check(lambda lib, x, t: F(lib).nll_loss(x, t, reduction=reduction), randn(6, 5), target)
    check(lambda lib, x, t, w: F(lib).nll_loss(x, t, weight=w, reduction=reduction),
          randn(6, 5), target, rand(5))
    t2 = labels(5, 6)
    check(lambda lib, x, t: F(lib).nll_loss(x, t, ignore_index=1, reduction=reduction),
          randn(6, 5), t2)
    check(lambda lib, x, t: F(lib).nll_loss(x, t, reduction=reduction),
          randn(2, 3, 4, 5), labels(3, 2, 4, 5))
    check(lambda lib, x, t: F(lib).nll_loss(x, t, reduction=reduction), randn(4), np.array(2))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_indices(reduction, smoothing):
    target = labels(5, 6)
    target[1] = -100

    def ce(lib, x, t, w=None, **kw):
        return F(lib).cross_entropy(x, t, weight=w, reduction=reduction,
                                    label_smoothing=smoothing, **kw)
    check(ce, randn(6, 5), target)
    check(ce, randn(6, 5), target, rand(5))
    check(lambda lib, x, t: ce(lib, x, t, ignore_index=3), randn(6, 5), labels(5, 6))
    kdim_target = labels(4, 2, 3, 2)
    kdim_target[0, 1, 1] = -100
    check(ce, randn(2, 4, 3, 2), kdim_target, rand(4))
    check(ce, randn(2, 4, 5), labels(4, 2, 5))
    check(ce, randn(5), np.array(3))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
def test_cross_entropy_probabilities(reduction, smoothing):
    def ce(lib, x, t, w=None):
        return F(lib).cross_entropy(x, t, weight=w, reduction=reduction,
                                    label_smoothing=smoothing)
    probs = rng.dirichlet(np.ones(5), 4)
    check(ce, randn(4, 5), probs, grad_of=(0, 1))
    check(ce, randn(4, 5), probs, rand(5), grad_of=(0, 1, 2))
    check(ce, randn(2, 3, 4), rng.dirichlet(np.ones(3), (2, 4)).transpose(0, 2, 1),
          grad_of=(0, 1))
    check(ce, randn(5), rng.dirichlet(np.ones(5)), grad_of=(0, 1))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_double_backward(reduction):
    def grad_norm(lib, x, t, w):
        loss = F(lib).cross_entropy(x, t, weight=w, ignore_index=2, reduction=reduction)
        (g,) = lib.autograd.grad(loss, x, lib.ones_like(loss), create_graph=True)
        return (g * g).sum()
    target = labels(5, 6)
    target[0] = 2
    check(grad_norm, randn(6, 5), target, rand(5))
    check(grad_norm, randn(2, 5, 3), labels(5, 2, 3), rand(5))


def test_cross_entropy_all_ignored_and_float32():
    check(lambda lib, x, t: F(lib).cross_entropy(x, t), randn(3, 4), np.full(3, -100))
    check(lambda lib, x, t: F(lib).nll_loss(x, t), randn(3, 4), np.full(3, -100))
    check(lambda lib, x, t: F(lib).cross_entropy(x, t), randn(0, 4), np.zeros(0, np.int64))
    check(lambda lib, x, t: F(lib).cross_entropy(x.float(), t), randn(8, 10), labels(10, 8),
          rtol=1e-5, atol=1e-6)


def test_class_loss_errors():
    x = lambda lib: lib.zeros(3, 4)  # noqa: E731
    cases = [
        lambda lib: F(lib).cross_entropy(x(lib), lib.tensor([0, 1, 5])),
        lambda lib: F(lib).cross_entropy(x(lib), lib.tensor([0, -5, 1])),
        lambda lib: F(lib).nll_loss(lib.zeros(2, 3, 4, 5), lib.zeros(2, 4, 5, dtype=lib.long) + 3),
        lambda lib: F(lib).cross_entropy(x(lib), lib.tensor([0, 1])),
        lambda lib: F(lib).cross_entropy(x(lib), lib.zeros(3, 2, dtype=lib.long)),
        lambda lib: F(lib).nll_loss(lib.zeros(2, 3, 4, 5), lib.zeros(2, 4, 6, dtype=lib.long)),
        lambda lib: F(lib).nll_loss(lib.zeros(2, 3, 4, 5), lib.zeros(2, 4, dtype=lib.long)),
        lambda lib: F(lib).nll_loss(x(lib), lib.tensor([0, 1, 2], dtype=lib.int32)),
        lambda lib: F(lib).nll_loss(x(lib), lib.tensor([0., 1, 2])),
        lambda lib: F(lib).nll_loss(x(lib), lib.tensor([0, 1, 2]), weight=lib.ones(3)),
        lambda lib: F(lib).cross_entropy(x(lib), lib.tensor([0, 1, 2]), label_smoothing=1.5),
        lambda lib: F(lib).nll_loss(lib.zeros(2, 3, 4), lib.zeros(2, dtype=lib.long)),
        lambda lib: F(lib).nll_loss(lib.zeros(2, 3, 4, 5, 6), lib.zeros(2, 4, 5, dtype=lib.long)),
        lambda lib: F(lib).ctc_loss(lib.zeros(5, 2, 3), lib.ones(2, 2, dtype=lib.long), [6, 5],
                                    [2, 2]),
        lambda lib: F(lib).ctc_loss(lib.zeros(5, 2, 3), lib.ones(2, 2, dtype=lib.long), [5, 5],
                                    [2]),
        lambda lib: F(lib).ctc_loss(lib.zeros(5, 2, 3), lib.ones(2, 2, dtype=lib.long), [5, 5],
                                    [2, 2], blank=3),
    ]
    for case in cases:
        compare_error(case)


# ---- binary -----------------------------------------------------------------------------------

@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy(reduction):
    check(lambda lib, x, t: F(lib).binary_cross_entropy(x, t, reduction=reduction),
          rand(3, 4), rand(3, 4), grad_of=(0, 1))
    check(lambda lib, x, t, w: F(lib).binary_cross_entropy(x, t, weight=w, reduction=reduction),
          rand(3, 4), rand(3, 4), rand(4), grad_of=(0, 1))
    check(lambda lib, x, t: F(lib).binary_cross_entropy(x, t, reduction=reduction),
          np.array([0.0, 1.0, 0.5]), np.array([1.0, 0.0, 0.5]), grad_of=())


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_with_logits(reduction):
    def bce(lib, x, t, w=None, pw=None):
        return F(lib).binary_cross_entropy_with_logits(x, t, weight=w, pos_weight=pw,
                                                       reduction=reduction)
    x = randn(3, 4) * 10
    check(bce, x, rand(3, 4), grad_of=(0, 1))
    check(bce, x, rand(3, 4), rand(3, 4), rand(4) * 3, grad_of=(0, 1))


def test_binary_errors():
    compare_error(lambda lib: F(lib).binary_cross_entropy(lib.ones(3, 4) * 2, lib.ones(3, 4)))
    compare_error(lambda lib: F(lib).binary_cross_entropy(lib.ones(3, 4) / 2, lib.ones(3, 4) * 2))
    compare_error(lambda lib: F(lib).binary_cross_entropy(lib.ones(3, 4) / 2, lib.ones(3)))
    compare_error(lambda lib: F(lib).binary_cross_entropy_with_logits(lib.ones(3, 4), lib.ones(3)))


# ---- divergences and likelihoods --------------------------------------------------------------

@pytest.mark.parametrize("reduction", ["none", "mean", "sum", "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction, log_target):
    target = rand(3, 4)
    target[0, 0] = 0.0
    if log_target:
        target = np.log(rand(3, 4))
    check(lambda lib, x, t: F(lib).kl_div(x, t, reduction=reduction, log_target=log_target),
          np.log(rand(3, 4)), target, grad_of=(0, 1))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("log_input, full", [(True, False), (False, False), (True, True),
                                             (False, True)])
def test_poisson_nll(reduction, log_input, full):
    target = rng.uniform(0.2, 4.0, (3, 5))
    x = randn(3, 5) if log_input else rand(3, 5)
    check(lambda lib, x, t: F(lib).poisson_nll_loss(x, t, log_input=log_input, full=full,
                                                    reduction=reduction, eps=1e-6),
          x, target, grad_of=(0, 1))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("var_shape", [(4, 3), (4,), (4, 1), (1, 3)])
def test_gaussian_nll(reduction, full, var_shape):
    var = rand(*var_shape)
    var.reshape(-1)[0] = 1e-9  # below eps: clamped, but the gradient still reaches var
    check(lambda lib, x, t, v: F(lib).gaussian_nll_loss(x, t, v, full=full, reduction=reduction),
          randn(4, 3), randn(4, 3), var, grad_of=(0, 1, 2))


def test_gaussian_nll_scalar_var_and_errors():
    check(lambda lib, x, t: F(lib).gaussian_nll_loss(x, t, 0.5), randn(4, 3), randn(4, 3),
          grad_of=(0, 1))
    compare_error(lambda lib: F(lib).gaussian_nll_loss(lib.ones(4, 3), lib.ones(4, 3),
                                                       lib.ones(2, 2)))
    compare_error(lambda lib: F(lib).gaussian_nll_loss(lib.ones(4, 3), lib.ones(4, 3),
                                                       -lib.ones(4, 3)))


# ---- margin and embedding ---------------------------------------------------------------------

def signs(*shape):
    return rng.choice([-1.0, 1.0], shape)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cosine_embedding(reduction):
    check(lambda lib, a, b, y: F(lib).cosine_embedding_loss(a, b, y, margin=0.2,
                                                            reduction=reduction),
          randn(5, 4), randn(5, 4), signs(5), grad_of=(0, 1))
    check(lambda lib, a, b, y: F(lib).cosine_embedding_loss(a, b, y, reduction=reduction),
          randn(4), randn(4), np.array(-1.0), grad_of=(0, 1))
    compare_error(lambda lib: F(lib).cosine_embedding_loss(lib.ones(4), lib.ones(4),
                                                           lib.ones(4)))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_margin_ranking_hinge_soft_margin(reduction):
    check(lambda lib, a, b, y: F(lib).margin_ranking_loss(a, b, y, margin=0.3,
                                                          reduction=reduction),
          randn(6), randn(6), signs(6), grad_of=(0, 1, 2))
    check(lambda lib, x, y: F(lib).hinge_embedding_loss(x, y, margin=0.7, reduction=reduction),
          randn(3, 4), signs(3, 4), grad_of=(0,))
    check(lambda lib, x, y: F(lib).soft_margin_loss(x, y, reduction=reduction),
          randn(3, 4), signs(3, 4))
    compare_error(lambda lib: F(lib).margin_ranking_loss(lib.ones(3), lib.ones(3),
                                                         lib.ones(3, 1)))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_losses(reduction):
    target = np.array([[3, 0, -1, 1], [0, 1, 2, 3], [1, -1, 2, 0], [-1, 1, 1, 1]])
    check(lambda lib, x, t: F(lib).multilabel_margin_loss(x, t, reduction=reduction),
          randn(4, 4), target)
    check(lambda lib, x, t: F(lib).multilabel_margin_loss(x, t, reduction=reduction),
          randn(4), np.array([2, 1, -1, 0]))
    multi_hot = rng.integers(0, 2, (4, 5)).astype(np.float64)
    check(lambda lib, x, t: F(lib).multilabel_soft_margin_loss(x, t, reduction=reduction),
          randn(4, 5), multi_hot, grad_of=(0, 1))
    check(lambda lib, x, t, w: F(lib).multilabel_soft_margin_loss(x, t, weight=w,
                                                                  reduction=reduction),
          randn(4, 5), multi_hot, rand(5), grad_of=(0, 1, 2))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p", [1, 2])
def test_multi_margin(reduction, p):
    check(lambda lib, x, t: F(lib).multi_margin_loss(x, t, p=p, margin=0.8, reduction=reduction),
          randn(5, 4), labels(4, 5))
    check(lambda lib, x, t, w: F(lib).multi_margin_loss(x, t, p=p, weight=w, reduction=reduction),
          randn(5, 4), labels(4, 5), rand(4))
    check(lambda lib, x, t: F(lib).multi_margin_loss(x, t, p=p, reduction=reduction),
          randn(4), np.array(1))


def test_margin_errors():
    compare_error(lambda lib: F(lib).multi_margin_loss(lib.ones(3, 4), lib.tensor([0, 1, 2]), p=3))
    compare_error(lambda lib: F(lib).multi_margin_loss(lib.ones(3, 4), lib.tensor([0, 1])))
    compare_error(lambda lib: F(lib).multilabel_margin_loss(lib.ones(3, 4),
                                                            lib.zeros(3, dtype=lib.long)))
    compare_error(lambda lib: F(lib).multilabel_margin_loss(lib.ones(3, 4),
                                                            lib.zeros(3, 4, dtype=lib.long) + 4))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p, swap", [(2, False), (1, True), (3, False)])
def test_triplet_margin(reduction, p, swap):
    check(lambda lib, a, b, c: F(lib).triplet_margin_loss(a, b, c, margin=1.5, p=p, swap=swap,
                                                          reduction=reduction),
          randn(5, 4), randn(5, 4), randn(5, 4), grad_of=(0, 1, 2))
    compare_error(lambda lib: F(lib).triplet_margin_loss(lib.ones(3, 4), lib.ones(3, 4),
                                                         lib.ones(4)))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("swap", [False, True])
def test_triplet_margin_with_distance(reduction, swap):
    def cosine_distance(lib):
        return lambda a, b: 1 - (a * b).sum(-1) / (a.norm(dim=-1) * b.norm(dim=-1))
    for distance in (None, cosine_distance):
        check(lambda lib, a, b, c: F(lib).triplet_margin_with_distance_loss(
                  a, b, c, distance_function=distance and distance(lib), margin=1.2, swap=swap,
                  reduction=reduction),
              randn(5, 4), randn(5, 4), randn(5, 4), grad_of=(0, 1, 2))
    compare_error(lambda lib: F(lib).triplet_margin_with_distance_loss(
        lib.ones(3), lib.ones(3), lib.ones(3), margin=0))


# ---- CTC --------------------------------------------------------------------------------------

def _ctc_check(reduction, logits, targets, input_lengths, target_lengths, zero_infinity=False,
               blank=0):
    def ctc(lib, x, t):
        return F(lib).ctc_loss(x.log_softmax(-1), t, lib.tensor(input_lengths),
                               lib.tensor(target_lengths), blank=blank, reduction=reduction,
                               zero_infinity=zero_infinity)
    # PyTorch's CTC gradient assumes log_probs came from log_softmax (it returns the gradient
    # of the logits' log_softmax composition), so gradients are compared on the logits.
    check(ctc, logits, targets, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_ctc_padded_and_concatenated(reduction):
    T, N, C = 12, 4, 5
    targets = rng.integers(1, C, (N, 6))
    targets[0, :3] = [2, 2, 3]  # a repeat needs a blank between
    target_lengths = [3, 6, 1, 4]
    input_lengths = [12, 10, 7, 12]
    logits = randn(T, N, C)
    _ctc_check(reduction, logits, targets, input_lengths, target_lengths)
    concatenated = np.concatenate([targets[n, :l] for n, l in enumerate(target_lengths)])
    _ctc_check(reduction, logits, concatenated, input_lengths, target_lengths)


@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_impossible_and_unbatched(zero_infinity):
    targets = np.array([[1, 1, 1, 1], [1, 2, 0, 0]])
    # The first needs 7 frames for 4 labels with repeats; only 5 are given: infinite loss.
    def ctc(lib, x, t):
        return F(lib).ctc_loss(x.log_softmax(-1), t, lib.tensor([5, 5]), lib.tensor([4, 2]),
                               reduction="none", zero_infinity=zero_infinity)
    check(ctc, randn(5, 2, 3), targets, grad_of=() if not zero_infinity else (0,))
    _ctc_check("sum", randn(6, 4), np.array([1, 3, 2]), 6, 3)
    _ctc_check("mean", randn(6, 1, 4), np.array([[3, 1]]), [6], [2], blank=2)


# ---- modules ----------------------------------------------------------------------------------

MODULE_CASES = [
    ("L1Loss", {}, lambda: (randn(3, 4), randn(3, 4))),
    ("MSELoss", {"reduction": "sum"}, lambda: (randn(3, 4), randn(3, 4))),
    ("SmoothL1Loss", {"beta": 0.5}, lambda: (randn(3, 4), randn(3, 4))),
    ("HuberLoss", {"delta": 0.7, "reduction": "none"}, lambda: (randn(3, 4), randn(3, 4))),
    ("CrossEntropyLoss", {"weight": rand(4), "ignore_index": 1, "label_smoothing": 0.1},
     lambda: (randn(5, 4), labels(4, 5))),
    ("NLLLoss", {"weight": rand(4), "reduction": "sum"}, lambda: (randn(5, 4), labels(4, 5))),
    ("BCELoss", {"weight": rand(4)}, lambda: (rand(3, 4), rand(3, 4))),
    ("BCEWithLogitsLoss", {"weight": rand(4), "pos_weight": rand(4) * 2},
     lambda: (randn(3, 4), rand(3, 4))),
    ("KLDivLoss", {"reduction": "batchmean", "log_target": True},
     lambda: (np.log(rand(3, 4)), np.log(rand(3, 4)))),
    ("PoissonNLLLoss", {"log_input": False, "full": True},
     lambda: (rand(3, 4), rng.uniform(0, 3, (3, 4)))),
    ("GaussianNLLLoss", {"full": True}, lambda: (randn(3, 4), randn(3, 4), rand(3, 1))),
    ("CosineEmbeddingLoss", {"margin": 0.1}, lambda: (randn(3, 4), randn(3, 4), signs(3))),
    ("MarginRankingLoss", {"margin": 0.2}, lambda: (randn(5), randn(5), signs(5))),
    ("HingeEmbeddingLoss", {"margin": 2.0}, lambda: (randn(3, 4), signs(3, 4))),
    ("MultiLabelMarginLoss", {}, lambda: (randn(2, 4), np.array([[1, 2, -1, 0], [3, -1, 0, 0]]))),
    ("MultiLabelSoftMarginLoss", {"weight": rand(4)},
     lambda: (randn(3, 4), rng.integers(0, 2, (3, 4)).astype(float))),
    ("MultiMarginLoss", {"p": 2, "margin": 0.5, "weight": rand(4)},
     lambda: (randn(3, 4), labels(4, 3))),
    ("SoftMarginLoss", {"reduction": "sum"}, lambda: (randn(3, 4), signs(3, 4))),
    ("TripletMarginLoss", {"margin": 0.5, "p": 1.0, "swap": True},
     lambda: (randn(3, 4), randn(3, 4), randn(3, 4))),
    ("TripletMarginWithDistanceLoss", {"swap": True},
     lambda: (randn(3, 4), randn(3, 4), randn(3, 4))),
]


@pytest.mark.parametrize("name, kwargs, make_inputs", MODULE_CASES,
                         ids=[c[0] for c in MODULE_CASES])
def test_loss_modules(name, kwargs, make_inputs):
    inputs = make_inputs()

    def build(lib):
        options = {k: lib.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        return getattr(lib.nn, name)(**options)
    expected, actual = build(torch), build(ember)
    assert repr(actual) == repr(expected)
    assert_same(expected.state_dict(), actual.state_dict())
    check(lambda lib, *xs: build(lib)(*xs), *inputs)


def test_ctc_module():
    targets = rng.integers(1, 4, (2, 3))
    check(lambda lib, x, t: lib.nn.CTCLoss(blank=0, zero_infinity=True)(
              x.log_softmax(-1), t, lib.tensor([6, 5]), lib.tensor([3, 2])),
          randn(6, 2, 4), targets)


def test_module_constructor_errors():
    compare_error(lambda lib: lib.nn.MultiMarginLoss(p=3))
    compare_error(lambda lib: lib.nn.MultiMarginLoss(weight=lib.ones(2, 2)))
    compare_error(lambda lib: lib.nn.TripletMarginLoss(margin=0))
    compare_error(lambda lib: lib.nn.TripletMarginWithDistanceLoss(margin=-1))


def test_losses_stay_on_their_device():
    """On the NumPy-backed "testdev" device every loss computes there (no CPU tensors mixed in)
    and agrees with the CPU result."""
    cases = [
        lambda lib, d: F(lib).cross_entropy(randn_on(lib, d, 4, 5), idx_on(lib, d, [0, 4, 2, -100]),
                                            weight=lib.ones(5, device=d, dtype=lib.float64),
                                            label_smoothing=0.1),
        lambda lib, d: F(lib).cross_entropy(randn_on(lib, d, 4, 5), idx_on(lib, d, [0, 4, 2, 1])),
        lambda lib, d: F(lib).multilabel_margin_loss(randn_on(lib, d, 2, 3),
                                                     idx_on(lib, d, [[0, -1, 1], [2, 1, -1]])),
        lambda lib, d: F(lib).multi_margin_loss(randn_on(lib, d, 2, 3), idx_on(lib, d, [0, 2]),
                                                weight=lib.ones(3, device=d, dtype=lib.float64)),
        lambda lib, d: F(lib).gaussian_nll_loss(randn_on(lib, d, 2, 3), randn_on(lib, d, 2, 3),
                                                randn_on(lib, d, 2, 3).abs()),
        lambda lib, d: F(lib).ctc_loss(randn_on(lib, d, 5, 2, 3).log_softmax(-1),
                                       idx_on(lib, d, [[1, 2], [2, 2]]), idx_on(lib, d, [5, 5]),
                                       idx_on(lib, d, [2, 2])),
    ]
    for case in cases:
        cpu = case(ember, "cpu")
        on_device = case(ember, "testdev")
        assert on_device.device.type == "testdev"
        np.testing.assert_allclose(np.asarray(on_device.to("cpu")), np.asarray(cpu), rtol=1e-6)


def randn_on(lib, device, *shape):
    return lib.tensor(np.random.default_rng(1).standard_normal(shape), device=device)


def idx_on(lib, device, values):
    return lib.tensor(values, device=device)
