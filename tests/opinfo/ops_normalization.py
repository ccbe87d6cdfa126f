"""Rows for ``ember/ops/normalization.py``: the fused batch/layer/instance normalisation
(``normalize_affine``), batch norm in eval mode and group norm, called as ``F.batch_norm``,
``F.instance_norm``, ``F.layer_norm``, ``F.group_norm`` and torch's top-level spellings.

Running statistics are inputs that need no gradient (``grad_inputs``); in training the row
returns them after the call, so their in-place update is compared with torch's too.
"""
from .core import OpInfo, Sample

DTYPES = ("float32", "float64", "bfloat16")


def F(lib):
    return lib.nn.functional


def positive_variance(rng, shape, dtype, index):
    """Uniform values, but in (0.5, 2) for the running variance (the third tensor)."""
    if index == 2:
        return rng.uniform(0.5, 2.0, size=shape)
    return rng.uniform(-2.0, 2.0, size=shape)


def _batch_norm_train(lib, x, w=None, b=None, **kwargs):
    return F(lib).batch_norm(x, None, None, w, b, training=True, **kwargs)


def _batch_norm_running(lib, x, mean, var, w, b, training=True, **kwargs):
    out = F(lib).batch_norm(x, mean, var, w, b, training=training, **kwargs)
    return out, mean, var


def _instance_norm(lib, x, w=None, b=None, **kwargs):
    return F(lib).instance_norm(x, weight=w, bias=b, **kwargs)


def _errors(name, fn, samples):
    return OpInfo(name, fn, samples, dtypes=("float32",), grad=False, gradcheck=False)


OPS = [
    OpInfo("F.batch_norm_train", _batch_norm_train, [
        Sample([(4, 3), (3,), (3,)]),
        Sample([(4, 3, 5), (3,), (3,)], {"eps": 1e-3}),
        Sample([(2, 3, 2, 3), (3,), (3,)]),
        Sample([(2, 3, 2, 2, 2)]),
        Sample([(4, 3, 4), (3,), (3,)], noncontig=True),
    ], dtypes=DTYPES),
    # The running statistics change at every call, so no finite differences over it.
    OpInfo("F.batch_norm_running", _batch_norm_running, [
        Sample([(4, 3), (3,), (3,), (3,), (3,)]),
        Sample([(2, 3, 2, 3), (3,), (3,), (3,), (3,)], {"momentum": 0.3}),
        Sample([(2, 3, 4), (3,), (3,), (3,), (3,)], noncontig=True),
    ], dtypes=DTYPES, make_input=positive_variance, grad_inputs=(0, 3, 4), gradcheck=False),
    OpInfo("F.batch_norm_eval", _batch_norm_running, [
        Sample([(2, 3, 4), (3,), (3,), (3,), (3,)], {"training": False}),
        Sample([(2, 3, 2, 2, 2), (3,), (3,), (3,), (3,)], {"training": False, "eps": 0.1}),
        # an empty batch in eval mode normalises nothing
        Sample([(0, 3, 2), (3,), (3,), (3,), (3,)], {"training": False}),
        # an empty input returns before the statistics' sizes are checked
        Sample([(4, 0), (5,), (5,), (2,), (2,)], {"training": False}),
        Sample([(4, 3, 4), (3,), (3,), (3,), (3,)], {"training": False}, noncontig=True),
    ], dtypes=DTYPES, make_input=positive_variance, grad_inputs=(0, 3, 4),
        # x * scale + shift cancels near zero: torch's and Ember's float32 roundings of
        # scale and shift differ there by up to one bfloat16 step of the inputs
        tol={"bfloat16": (1.6e-2, 2e-2)}),
    OpInfo("torch.batch_norm", lambda lib, x, mean, var, w, b:
           lib.batch_norm(x, w, b, mean, var, False, 0.1, 1e-5, False),
           [Sample([(4, 3, 2), (3,), (3,), (3,), (3,)])], dtypes=("float32", "float64"),
           make_input=positive_variance, grad_inputs=(0, 3, 4)),
    OpInfo("F.instance_norm", _instance_norm, [
        Sample([(2, 3, 5), (3,), (3,)]),
        Sample([(2, 3, 3, 4)]),
        Sample([(1, 2, 2, 3, 2), (2,), (2,)], {"eps": 1e-2}),
        Sample([(2, 3, 6), (3,), (3,)], noncontig=True),
    ], dtypes=DTYPES),
    OpInfo("F.layer_norm", lambda lib, x, w=None, b=None, shape=None, **kw:
           F(lib).layer_norm(x, shape or x.shape[-1:], w, b, **kw), [
        Sample([(2, 3, 4), (4,), (4,)]),
        Sample([(2, 3, 4)]),
        Sample([(2, 3, 4), (3, 4), (3, 4)], {"shape": (3, 4), "eps": 1e-3}),
        Sample([(4,), (4,), (4,)]),
        Sample([(0, 4), (4,), (4,)]),
        Sample([(2, 3, 4), (4,), (4,)], noncontig=True),
    ], dtypes=DTYPES),
    OpInfo("torch.layer_norm", lambda lib, x, w, b: lib.layer_norm(x, (4,), w, b, 1e-5, False),
           [Sample([(3, 4), (4,), (4,)])], dtypes=("float32", "float64")),
    OpInfo("F.group_norm", lambda lib, x, w=None, b=None, groups=2, **kw:
           F(lib).group_norm(x, groups, w, b, **kw), [
        Sample([(2, 4, 3), (4,), (4,)]),
        Sample([(2, 6, 2, 2), (6,), (6,)], {"groups": 3}),
        Sample([(2, 4, 3)], {"groups": 4, "eps": 1e-3}),
        Sample([(3, 4)], {"groups": 1}),
        Sample([(0, 4, 3), (4,), (4,)]),
        Sample([(2, 4, 4), (4,), (4,)], noncontig=True),
    ], dtypes=DTYPES),
    OpInfo("torch.group_norm", lambda lib, x, w, b: lib.group_norm(x, 2, w, b, 1e-5, False),
           [Sample([(2, 4, 3), (4,), (4,)])], dtypes=("float32", "float64")),
    _errors("F.batch_norm_errors", _batch_norm_train, [
        Sample([(1, 3)]),  # one value per channel cannot be normalised in training
        Sample([(4, 3), (4,), (4,)]),  # weight size
    ]),
    _errors("F.group_norm_errors", lambda lib, x, groups: F(lib).group_norm(x, groups),
            [Sample([(2, 4, 3)], args=(3,))]),
    _errors("F.layer_norm_errors", lambda lib, x: F(lib).layer_norm(x, (3,)),
            [Sample([(2, 4)])]),
]
