"""Rows for ``ember/ops/dropout.py`` where the result is deterministic: outside training,
``p=0`` (the input itself) and ``p=1`` (zeros), for ``F.dropout``, ``F.alpha_dropout``,
``F.feature_alpha_dropout``, ``F.dropout1d/2d/3d`` (batched and unbatched), their in-place forms
and torch's ATen spellings (``torch.dropout``, ``torch.dropout_``, ``torch.alpha_dropout_``,
``torch.feature_alpha_dropout_``, ``torch.feature_dropout``). ``tests/nn/`` checks the random
masks' statistics.

Each sample's kwargs are ``p`` and ``training`` (``train`` for the ATen forms). An in-place call
works on a clone, since the inputs are leaves that require grad.
"""
from .core import OpInfo, Sample

DTYPES = ("float32", "float64", "bfloat16")
# (p, training) pairs whose result is known: the input itself, or zeros.
DETERMINISTIC = ((0.0, True), (0.5, False), (1.0, True), (1.0, False))


def F(lib):
    return lib.nn.functional


def _errors(name, fn, samples):
    """Calls torch refuses: Ember raises the same exception type."""
    return OpInfo(name, fn, samples, dtypes=("float32",), grad=False, gradcheck=False)


def _samples(*shapes, train="training"):
    """Every deterministic (p, training) for each shape, plus a non-contiguous first shape."""
    out = [Sample([shape], {"p": p, train: training})
           for shape in shapes for p, training in DETERMINISTIC]
    out.append(Sample([shapes[0]], {"p": 1.0, train: True}, noncontig=True))
    out.append(Sample([shapes[0]], {"p": 0.0, train: True}, noncontig=True))
    return out


def _functional(name, inplace=False):
    def fn(lib, x, **kw):
        if inplace:
            return getattr(F(lib), name)(x.clone(), inplace=True, **kw)
        return getattr(F(lib), name)(x, **kw)
    return fn


def _aten(name):
    def fn(lib, x, p, train):
        if name.endswith("_"):
            return getattr(lib, name)(x.clone(), p, train)
        return getattr(lib, name)(x, p, train)
    return fn


ANY_RANK = ((2, 3, 4), (5,), (), (0, 3))
FEATURES = ((2, 3, 4), (2, 3), (0, 3, 2))    # at least 2-D: channels are dim 1

OPS = [
    OpInfo("F.dropout", _functional("dropout"), _samples(*ANY_RANK), dtypes=DTYPES),
    OpInfo("F.dropout_inplace", _functional("dropout", True), _samples((2, 3, 4), ()),
           dtypes=DTYPES),
    OpInfo("F.alpha_dropout", _functional("alpha_dropout"), _samples(*ANY_RANK), dtypes=DTYPES),
    OpInfo("F.alpha_dropout_inplace", _functional("alpha_dropout", True), _samples((2, 3, 4)),
           dtypes=DTYPES),
    OpInfo("F.feature_alpha_dropout", _functional("feature_alpha_dropout"),
           _samples(*FEATURES), dtypes=DTYPES),
    OpInfo("F.feature_alpha_dropout_inplace", _functional("feature_alpha_dropout", True),
           _samples((2, 3, 4)), dtypes=DTYPES),
    OpInfo("F.dropout1d", _functional("dropout1d"), _samples((2, 3, 4), (3, 4), (0, 3, 4)),
           dtypes=DTYPES),
    OpInfo("F.dropout2d", _functional("dropout2d"), _samples((2, 3, 4, 2), (3, 4, 2)),
           dtypes=DTYPES),
    OpInfo("F.dropout3d", _functional("dropout3d"), _samples((2, 3, 2, 2, 2), (3, 2, 2, 2)),
           dtypes=DTYPES),
    OpInfo("F.dropout1d_inplace", _functional("dropout1d", True), _samples((2, 3, 4), (3, 4)),
           dtypes=DTYPES),
    OpInfo("torch.dropout", _aten("dropout"), _samples((2, 3, 4), (), train="train"),
           dtypes=DTYPES),
    OpInfo("torch.dropout_", _aten("dropout_"), _samples((2, 3, 4), (), train="train"),
           dtypes=DTYPES),
    OpInfo("torch.alpha_dropout", _aten("alpha_dropout"), _samples((2, 3, 4), train="train"),
           dtypes=DTYPES),
    OpInfo("torch.alpha_dropout_", _aten("alpha_dropout_"), _samples((2, 3, 4), train="train"),
           dtypes=DTYPES),
    OpInfo("torch.feature_alpha_dropout", _aten("feature_alpha_dropout"),
           _samples((2, 3, 4), train="train"), dtypes=DTYPES),
    OpInfo("torch.feature_alpha_dropout_", _aten("feature_alpha_dropout_"),
           _samples((2, 3, 4), train="train"), dtypes=DTYPES),
    OpInfo("torch.feature_dropout", _aten("feature_dropout"), _samples((2, 3, 4), train="train"),
           dtypes=DTYPES),
    _errors("F.dropout_errors", _functional("dropout"), [
        Sample([(2, 3)], {"p": 1.5}), Sample([(2, 3)], {"p": -0.1, "training": False})]),
    _errors("torch.dropout_errors", _aten("dropout"), [
        Sample([(2, 3)], {"p": 1.5, "train": False}), Sample([(2, 3)], {"p": -0.1, "train": True})]),
    _errors("F.dropout1d_errors", _functional("dropout1d"), [
        Sample([(2, 3, 4, 5)], {"p": 0.5}), Sample([(3,)], {"p": 0.5, "training": False})]),
    # p=1 zeroes before the rank check: below 2-D only that call succeeds.
    OpInfo("F.feature_alpha_dropout_low_rank", _functional("feature_alpha_dropout"),
           [Sample([(5,)], {"p": 1.0, "training": True}), Sample([()], {"p": 1.0, "training": True})],
           dtypes=DTYPES),
    _errors("F.feature_alpha_dropout_errors", _functional("feature_alpha_dropout"), [
        Sample([(5,)], {"p": 0.5, "training": True})]),
]
