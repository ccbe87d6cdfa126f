"""Rows for the fused losses of ``ember/ops/loss.py``, called as ``nn.functional``: MSE,
smooth L1, Huber, binary cross-entropy (on probabilities and on logits), soft margin, multi
margin, NLL and cross-entropy (NLL over log-softmax), with every reduction.

Class targets and ``+-1`` labels are integer arrays (no gradient); probabilities and
probability targets lie in (0.05, 0.95).
"""
from .core import OpInfo, Sample

DTYPES = ("float32", "float64", "bfloat16")
REDUCTIONS = ("mean", "sum", "none")


def F(lib):
    return lib.nn.functional


def classes(count):
    """Class indices in [0, count) for 1-D or k-D targets (the second tensor), uniform values
    elsewhere."""
    def make(rng, shape, dtype, index):
        if index == 1:
            return rng.integers(0, count, size=shape)
        return rng.uniform(-2.0, 2.0, size=shape)
    return make


def probabilities(rng, shape, dtype, index):
    return rng.uniform(0.05, 0.95, size=shape)


def signs(rng, shape, dtype, index):
    if index == 1:
        return rng.choice([-1.0, 1.0], size=shape)
    return rng.uniform(-2.0, 2.0, size=shape)


def _by_reduction(name, fn, shapes, **row):
    """One sample per reduction for each shape set, plus a non-contiguous one."""
    samples = [Sample(s, {"reduction": r}) for s in shapes for r in REDUCTIONS]
    samples.append(Sample(shapes[0], {"reduction": "mean"}, noncontig=True))
    return OpInfo(name, fn, samples, **row)


OPS = [
    _by_reduction("F.mse_loss", lambda lib, x, y, **kw: F(lib).mse_loss(x, y, **kw),
                  [[(3, 4), (3, 4)], [(0, 4), (0, 4)], [(), ()]], dtypes=DTYPES),
    _by_reduction("F.smooth_l1_loss", lambda lib, x, y, **kw: F(lib).smooth_l1_loss(x, y, **kw),
                  [[(3, 4), (3, 4)], [(2, 3), (2, 3)]], dtypes=DTYPES),
    OpInfo("F.smooth_l1_loss_beta", lambda lib, x, y: F(lib).smooth_l1_loss(x, y, beta=0.5),
           [Sample([(3, 4), (3, 4)])], dtypes=DTYPES),
    _by_reduction("F.huber_loss", lambda lib, x, y, **kw: F(lib).huber_loss(x, y, **kw),
                  [[(3, 4), (3, 4)]], dtypes=DTYPES),
    OpInfo("F.huber_loss_delta", lambda lib, x, y: F(lib).huber_loss(x, y, delta=0.5),
           [Sample([(3, 4), (3, 4)])], dtypes=DTYPES),
    _by_reduction("F.binary_cross_entropy",
                  lambda lib, x, y, w=None, **kw: F(lib).binary_cross_entropy(x, y, w, **kw),
                  [[(3, 4), (3, 4)], [(3, 4), (3, 4), (4,)]], dtypes=DTYPES,
                  make_input=probabilities, grad_inputs=(0, 1)),
    _by_reduction("F.binary_cross_entropy_with_logits",
                  lambda lib, x, y, w=None, pos=None, **kw:
                  F(lib).binary_cross_entropy_with_logits(x, y, w, pos_weight=pos, **kw),
                  [[(3, 4), (3, 4)], [(3, 4), (3, 4), (4,), (4,)]], dtypes=DTYPES,
                  make_input=lambda rng, shape, dtype, i: (probabilities(rng, shape, dtype, i)
                                                           if i else rng.uniform(-3, 3, shape)),
                  grad_inputs=(0, 1)),
    _by_reduction("F.soft_margin_loss", lambda lib, x, y, **kw:
                  F(lib).soft_margin_loss(x, y, **kw), [[(3, 4), (3, 4)]], dtypes=DTYPES,
                  make_input=signs, grad_inputs=(0,)),
    _by_reduction("F.multi_margin_loss", lambda lib, x, y, w=None, **kw:
                  F(lib).multi_margin_loss(x, y, weight=w, **kw),
                  [[(3, 4), (3,)], [(3, 4), (3,), (4,)]], dtypes=("float32", "float64"),
                  make_input=classes(4), grad_inputs=(0,)),
    OpInfo("F.multi_margin_loss_p2", lambda lib, x, y: F(lib).multi_margin_loss(
        x, y, p=2, margin=0.5), [Sample([(3, 4), (3,)])], dtypes=("float32", "float64"),
        make_input=classes(4)),
    _by_reduction("F.nll_loss", lambda lib, x, y, w=None, **kw:
                  F(lib).nll_loss(x, y, w, **kw),
                  [[(3, 4), (3,)], [(3, 4), (3,), (4,)], [(2, 4, 3, 2), (2, 3, 2)],
                   [(2, 4, 3, 2, 2), (2, 3, 2, 2)]],
                  dtypes=DTYPES, make_input=classes(4), grad_inputs=(0,)),
    OpInfo("F.nll_loss_ignore_index", lambda lib, x, y, **kw:
           F(lib).nll_loss(x, y, ignore_index=1, **kw),
           [Sample([(5, 4), (5,)]), Sample([(5, 4), (5,)], {"reduction": "sum"}),
            Sample([(2, 4, 3), (2, 3)], {"reduction": "none"})],
           dtypes=("float32", "float64"), make_input=classes(4)),
    _by_reduction("F.cross_entropy", lambda lib, x, y, w=None, **kw:
                  F(lib).cross_entropy(x, y, w, **kw),
                  [[(3, 4), (3,)], [(3, 4), (3,), (4,)], [(2, 4, 3), (2, 3)], [(0, 4), (0,)]],
                  dtypes=DTYPES, make_input=classes(4), grad_inputs=(0,)),
    OpInfo("F.cross_entropy_label_smoothing", lambda lib, x, y, w=None, **kw:
           F(lib).cross_entropy(x, y, w, label_smoothing=0.2, **kw),
           [Sample([(3, 4), (3,)]), Sample([(3, 4), (3,), (4,)], {"reduction": "sum"}),
            Sample([(2, 4, 3), (2, 3)], {"reduction": "none"})],
           dtypes=("float32", "float64"), make_input=classes(4), grad_inputs=(0,)),
    OpInfo("F.cross_entropy_ignore_index", lambda lib, x, y, **kw:
           F(lib).cross_entropy(x, y, ignore_index=2, **kw),
           [Sample([(5, 4), (5,)]), Sample([(5, 4), (5,)], {"reduction": "none"})],
           dtypes=("float32", "float64"), make_input=classes(4)),
    # Probability targets (same shape as the input) instead of class indices.
    OpInfo("F.cross_entropy_probabilities", lambda lib, x, y, **kw:
           F(lib).cross_entropy(x, y.softmax(1), **kw),
           [Sample([(3, 4), (3, 4)]), Sample([(2, 4, 3), (2, 4, 3)], {"reduction": "none"})],
           dtypes=("float32", "float64")),
    OpInfo("F.cross_entropy_probabilities_label_smoothing", lambda lib, x, y, **kw:
           F(lib).cross_entropy(x, y.softmax(1), label_smoothing=0.1, **kw),
           [Sample([(3, 4), (3, 4)]), Sample([(2, 4, 3), (2, 4, 3)], {"reduction": "sum"})],
           dtypes=("float32", "float64")),
    OpInfo("F.cross_entropy_unbatched", lambda lib, x, y: F(lib).cross_entropy(x, y),
           [Sample([(4,), ()])], dtypes=("float32", "float64"), make_input=classes(4)),
    OpInfo("F.nll_loss_errors", lambda lib, x, y: F(lib).nll_loss(x, y),
           [Sample([(3, 4), (2,)]), Sample([(3, 4), (3, 1)])], dtypes=("float32",),
           make_input=classes(4), grad=False, gradcheck=False),
]
