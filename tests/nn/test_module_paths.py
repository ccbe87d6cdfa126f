"""Every class torch defines in a ``torch.nn.modules.<file>`` that Ember has is reachable at the
same path in Ember, as the same object as ``ember.nn.<name>`` (code imports
``torch.nn.modules.conv._ConvNd`` or ``torch.nn.modules.activation.MultiheadAttention``)."""
import importlib
import inspect
import pkgutil
import warnings

import pytest
import torch
import torch.nn.modules

import ember

# torch files whose classes Ember does not have at all (so there is no path to check).
_ABSENT = {
    "_functions": "autograd Functions of torch's C++ kernels (SyncBatchNorm, CrossMapLRN2d)",
    "adaptive": "AdaptiveLogSoftmaxWithLoss is not implemented",
    "linear_cross_entropy": "the chunked LinearCrossEntropyLoss is not implemented",
    "linear_cross_entropy_options": "the chunked LinearCrossEntropyLoss is not implemented",
}
# Classes Ember does not implement, in files it otherwise has.
_NOT_IMPLEMENTED = {
    "batchnorm": {"LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "SyncBatchNorm",
                  "_LazyNormBase"},
    "instancenorm": {"LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"},
    "normalization": {"CrossMapLRN2d"},
    "pooling": {"FractionalMaxPool2d", "FractionalMaxPool3d"},
    "loss": {"LinearCrossEntropyLoss"},
    "conv": {"_ConvTransposeMixin"},  # a deprecated mixin torch keeps for old subclasses
    "lazy": {"_LazyProtocol"},  # a typing Protocol
}
# The private bases code commonly subclasses; each must exist at torch's path.
_PRIVATE_BASES = {
    "conv": ["_ConvNd", "_ConvTransposeNd", "_LazyConvXdMixin"],
    "batchnorm": ["_NormBase", "_BatchNorm"],
    "instancenorm": ["_InstanceNorm"],
    "loss": ["_Loss", "_WeightedLoss"],
    "pooling": ["_MaxPoolNd", "_AvgPoolNd", "_AdaptiveAvgPoolNd", "_AdaptiveMaxPoolNd",
                "_MaxUnpoolNd", "_LPPoolNd"],
    "dropout": ["_DropoutNd"],
    "padding": ["_ConstantPadNd", "_ReflectionPadNd", "_ReplicationPadNd", "_CircularPadNd"],
    "linear": ["NonDynamicallyQuantizableLinear"],
    "activation": ["MultiheadAttention"],
}


def _torch_files():
    return [info.name for info in pkgutil.iter_modules(torch.nn.modules.__path__)]


def _classes_defined_in(module):
    return [name for name, value in vars(module).items()
            if inspect.isclass(value) and value.__module__ == module.__name__]


@pytest.mark.parametrize("file", _torch_files())
def test_every_torch_class_is_at_embers_same_path(file):
    torch_module = importlib.import_module(f"torch.nn.modules.{file}")
    if file in _ABSENT:
        assert not any(hasattr(ember.nn, n) for n in _classes_defined_in(torch_module)
                       if not n.startswith("_")), _ABSENT[file]
        return
    ember_module = importlib.import_module(f"ember.nn.modules.{file}")
    missing = []
    for name in _classes_defined_in(torch_module):
        if name in _NOT_IMPLEMENTED.get(file, ()):
            assert not hasattr(ember.nn, name)
            continue
        value = getattr(ember_module, name, None)
        if value is None:
            missing.append(name)
            continue
        assert inspect.isclass(value), name
        if not name.startswith("_") and hasattr(torch.nn, name):
            assert getattr(ember.nn, name) is value, name
    assert not missing, f"ember.nn.modules.{file} lacks {missing}"


@pytest.mark.parametrize("file,names", sorted(_PRIVATE_BASES.items()))
def test_commonly_subclassed_bases_are_at_torchs_path(file, names):
    ember_module = importlib.import_module(f"ember.nn.modules.{file}")
    torch_module = importlib.import_module(f"torch.nn.modules.{file}")
    for name in names:
        assert inspect.isclass(getattr(torch_module, name)), name
        assert inspect.isclass(getattr(ember_module, name)), name


def test_bases_are_the_real_bases():
    nn = ember.nn
    assert issubclass(nn.Conv2d, nn.modules.conv._ConvNd)
    assert issubclass(nn.BatchNorm2d, nn.modules.batchnorm._BatchNorm)
    assert issubclass(nn.CrossEntropyLoss, nn.modules.loss._WeightedLoss)
    assert issubclass(nn.modules.loss._WeightedLoss, nn.modules.loss._Loss)
    assert issubclass(nn.ReflectionPad2d, nn.modules.padding._ReflectionPadNd)
    assert issubclass(nn.ReplicationPad1d, nn.modules.padding._ReplicationPadNd)
    assert nn.modules.activation.MultiheadAttention is nn.MultiheadAttention
    mha = nn.MultiheadAttention(8, 2)
    assert type(mha.out_proj) is nn.modules.linear.NonDynamicallyQuantizableLinear
    assert type(torch.nn.MultiheadAttention(8, 2).out_proj) is \
        torch.nn.modules.linear.NonDynamicallyQuantizableLinear


def test_a_subclass_of_a_private_base_works():
    class MyLoss(ember.nn.modules.loss._Loss):
        def forward(self, a, b):
            return (a - b).abs().mean() if self.reduction == "mean" else (a - b).abs().sum()

    assert MyLoss(reduction="sum").reduction == torch.nn.modules.loss._Loss(
        reduction="sum").reduction
    assert float(MyLoss()(ember.ones(3), ember.zeros(3))) == 1.0


def test_nll_loss_2d_is_deprecated_nll_loss():
    with pytest.warns(FutureWarning, match="NLLLoss2d` has been deprecated"):
        e = ember.nn.NLLLoss2d(ignore_index=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        t = torch.nn.NLLLoss2d(ignore_index=1)
    assert isinstance(e, ember.nn.NLLLoss) and e.ignore_index == t.ignore_index
    x = torch.randn(2, 3, 4, 4).log_softmax(1)
    y = torch.randint(0, 3, (2, 4, 4))
    assert abs(float(e(ember.tensor(x.numpy()), ember.tensor(y.numpy()))) - float(t(x, y))) < 1e-5


def test_modules_utils_helpers_match_torch():
    from torch.nn.modules import utils as tu
    from ember.nn.modules import utils as eu
    for name in ("_single", "_pair", "_triple", "_quadruple"):
        for value in (3, (1, 2), [4, 5, 6]):
            assert getattr(eu, name)(value) == getattr(tu, name)(value)
    assert eu._reverse_repeat_tuple((1, 2, 3), 2) == tu._reverse_repeat_tuple((1, 2, 3), 2)
    assert eu._list_with_default([None, 3], [8, 9, 10]) == tu._list_with_default([None, 3],
                                                                                  [8, 9, 10])
    compare = []
    for lib in (torch, ember):
        model = lib.nn.Sequential(lib.nn.Linear(2, 2))
        state = model.state_dict()
        prefixed = type(state)((f"module.{k}", v) for k, v in state.items())
        prefixed._metadata = type(state._metadata)(
            (f"module.{k}" if k else "module", v) for k, v in state._metadata.items())
        (tu if lib is torch else eu).consume_prefix_in_state_dict_if_present(prefixed, "module.")
        compare.append((list(prefixed), list(prefixed._metadata)))
    assert compare[0] == compare[1]
