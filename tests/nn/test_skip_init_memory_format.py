"""nn.utils.skip_init and nn.utils.convert_conv{2,3}d_weight_memory_format against torch's."""
import numpy as np
import pytest
import torch

import ember
from torch_compare import assert_same, compare_error


def _signature(module):
    """Every parameter's and buffer's name, class, shape, dtype, requires_grad."""
    tensors = list(module.named_parameters()) + list(module.named_buffers())
    return [(name, type(t).__name__, tuple(t.shape), str(t.dtype).split(".")[-1],
             t.requires_grad) for name, t in tensors]


# ---- skip_init ------------------------------------------------------------------------------
SKIP_INIT_CASES = [("Linear", (5, 3), {}), ("Linear", (), dict(in_features=4, out_features=2)),
                   ("Conv2d", (3, 4, 3), dict(bias=False)), ("BatchNorm1d", (6,), {}),
                   ("Embedding", (10, 3), dict(padding_idx=0)),
                   ("TransformerEncoderLayer", (8, 2), dict(dim_feedforward=16)),
                   ("Linear", (2, 2), dict(dtype="float64"))]


@pytest.mark.parametrize("name,args,kwargs", SKIP_INIT_CASES, ids=str)
def test_skip_init_builds_the_same_module_as_torch(name, args, kwargs):
    def build(lib):
        options = dict(kwargs)
        if "dtype" in options:
            options["dtype"] = getattr(lib, options["dtype"])
        return lib.nn.utils.skip_init(getattr(lib.nn, name), *args, **options)
    assert _signature(build(ember)) == _signature(build(torch))
    assert type(build(ember)).__name__ == name


def test_skip_init_draws_no_random_numbers():
    # torch builds on the meta device, so the random stream is untouched; so is Ember's.
    for lib in (torch, ember):
        lib.manual_seed(7)
        expected = lib.rand(4)
        lib.manual_seed(7)
        lib.nn.utils.skip_init(lib.nn.Linear, 50, 40)
        np.testing.assert_array_equal(lib.rand(4).numpy(), expected.numpy())


def test_skip_init_draws_nothing_from_the_target_devices_stream(device):
    # Ember builds on the target device (no meta device), so that device's generator is the one
    # the initialisers would draw from: it must be left where it was.
    ember.manual_seed(7)
    expected = ember.rand(4, device=device)
    ember.manual_seed(7)
    ember.nn.utils.skip_init(ember.nn.Linear, 50, 40, device=device)
    assert ember.rand(4, device=device).tolist() == expected.tolist()


def test_skip_init_leaves_the_values_uninitialised_and_on_the_device(device):
    module = ember.nn.utils.skip_init(ember.nn.Linear, 3, 2, device=device)
    assert module.weight.device.type == device
    assert module.bias.device.type == device
    # The parameters are fresh storage, not what the initialiser wrote (to_empty's empty),
    # and the module is usable: a forward pass and a step on the uninitialised weights.
    with ember.no_grad():
        module.weight.copy_(ember.ones(2, 3))
        module.bias.zero_()
    out = module(ember.ones(1, 3, device=device))
    assert out.tolist() == [[3.0, 3.0]]


def test_skip_init_default_device_is_cpu():
    for lib in (torch, ember):
        assert lib.nn.utils.skip_init(lib.nn.Linear, 2, 2).weight.device.type == "cpu"


def test_skip_init_rejects_a_module_without_a_device_argument():
    def run(lib):
        class NoDevice(lib.nn.Module):
            def __init__(self, size):
                super().__init__()
                self.weight = lib.nn.Parameter(lib.zeros(size))
        return lib.nn.utils.skip_init(NoDevice, 3)
    compare_error(run)


def test_skip_init_rejects_the_recurrent_layers_whose_signature_hides_device():
    # torch's RNN/LSTM/GRU take (*args, **kwargs), so skip_init refuses them; so does Ember.
    for name in ("RNN", "LSTM", "GRU"):
        compare_error(lambda lib: lib.nn.utils.skip_init(getattr(lib.nn, name), 4, 5))


def test_skip_init_rejects_a_class_that_is_not_a_module():
    compare_error(lambda lib: lib.nn.utils.skip_init(dict), gist="Expected a Module; got")
    compare_error(lambda lib: lib.nn.utils.skip_init(lib.nn.Linear(2, 2)))


# ---- convert_conv{2,3}d_weight_memory_format ------------------------------------------------
def _same_weights(torch_model, ember_model):
    with torch.no_grad(), ember.no_grad():
        for (_, t), (_, e) in zip(torch_model.named_parameters(),
                                  ember_model.named_parameters()):
            e.copy_(ember.tensor(t.detach().numpy()))


def _conv2d_model(lib):
    return lib.nn.Sequential(lib.nn.Conv2d(3, 4, 3, padding=1), lib.nn.ReLU(),
                             lib.nn.Sequential(lib.nn.ConvTranspose2d(4, 2, 2, stride=2)),
                             lib.nn.Conv1d(2, 2, 1), lib.nn.Linear(3, 3))


@pytest.mark.parametrize("fmt", ["channels_last", "contiguous_format"])
def test_convert_conv2d_weights_as_torch(fmt):
    models = {}
    for lib in (torch, ember):
        torch.manual_seed(0)
        models[lib] = _conv2d_model(lib)
    _same_weights(models[torch], models[ember])
    weight_before = models[ember][0].weight
    for lib in (torch, ember):
        model = models[lib]
        if fmt == "contiguous_format":  # back from channels_last, as a round trip
            lib.nn.utils.convert_conv2d_weight_memory_format(model, lib.channels_last)
        assert lib.nn.utils.convert_conv2d_weight_memory_format(
            model, getattr(lib, fmt)) is model
    for (name, t), (_, e) in zip(models[torch].named_parameters(),
                                 models[ember].named_parameters()):
        assert e.stride() == t.stride(), name
        assert e.is_contiguous(memory_format=ember.channels_last) == \
            t.is_contiguous(memory_format=torch.channels_last), name
        assert_same(t, e, rtol=0, atol=0)
    assert models[ember][0].weight is weight_before  # the Parameter is kept, only its data moves
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 5)).astype(np.float32)
    t_out = models[torch][2](models[torch][0](torch.tensor(x)))
    e_out = models[ember][2](models[ember][0](ember.tensor(x)))
    assert_same(t_out, e_out)


def test_convert_conv3d_weights_as_torch():
    models = {}
    for lib in (torch, ember):
        models[lib] = lib.nn.Sequential(lib.nn.Conv3d(2, 3, 2), lib.nn.ConvTranspose3d(3, 2, 2),
                                        lib.nn.Conv2d(2, 2, 1))
    _same_weights(models[torch], models[ember])
    for lib in (torch, ember):
        lib.nn.utils.convert_conv3d_weight_memory_format(models[lib], lib.channels_last_3d)
    for (name, t), (_, e) in zip(models[torch].named_parameters(),
                                 models[ember].named_parameters()):
        assert e.stride() == t.stride(), name
        assert_same(t, e, rtol=0, atol=0)
    x = np.random.default_rng(1).standard_normal((1, 2, 4, 4, 4)).astype(np.float32)
    assert_same(models[torch][:2](torch.tensor(x)), models[ember][:2](ember.tensor(x)))


def test_convert_conv_weights_with_a_format_of_the_wrong_rank():
    compare_error(lambda lib: lib.nn.utils.convert_conv2d_weight_memory_format(
        lib.nn.Conv2d(2, 2, 1), lib.channels_last_3d))
    compare_error(lambda lib: lib.nn.utils.convert_conv3d_weight_memory_format(
        lib.nn.Conv3d(2, 2, 1), lib.channels_last))


def test_new_names_are_exported():
    names = {"skip_init", "convert_conv2d_weight_memory_format",
             "convert_conv3d_weight_memory_format"}
    assert names <= set(dir(ember.nn.utils))
    assert names <= set(torch.nn.utils.__all__)
