"""Convolutions, transposed convolutions and fold/unfold against PyTorch: outputs, input, weight
and bias gradients over stride/padding/dilation/groups combinations, float64 gradcheck and
gradgradcheck, the layers (state_dict, default init, padding modes, output_size, lazy forms)
and errors."""
import math

import numpy as np
import pytest
import torch

import ember
from torch_compare import assert_same, compare_error

rng = np.random.default_rng(0)


def _array(*shape, dtype=np.float64):
    return rng.standard_normal(shape).astype(dtype)


def _run(lib, fn, arrays, upstream_seed=1):
    """``fn(lib, *tensors)``, then backward with a fixed upstream gradient; the output and the
    gradients of every input."""
    tensors = [lib.tensor(a, requires_grad=True) for a in arrays]
    out = fn(lib, *tensors)
    upstream = np.random.default_rng(upstream_seed).standard_normal(tuple(out.shape))
    out.backward(lib.tensor(upstream.astype(arrays[0].dtype)))
    return [out] + [t.grad for t in tensors]


def _compare(fn, arrays, **tol):
    assert_same(_run(torch, fn, arrays), _run(ember, fn, arrays), **tol)


CONV_CASES = [
    # (dims, batch, in_ch, out_ch, size, kernel, stride, padding, dilation, groups)
    (1, 2, 4, 6, 9, 3, 1, 0, 1, 1),
    (1, 2, 4, 6, 9, 3, 2, 1, 2, 2),
    (1, 1, 3, 3, 8, 2, 1, "same", 3, 3),
    (2, 2, 3, 4, 7, 3, 1, 1, 1, 1),
    (2, 2, 4, 6, 8, (3, 2), (2, 1), (1, 0), (1, 2), 2),
    (2, 1, 4, 4, 6, 3, 1, "same", 2, 4),
    (2, 1, 2, 3, 6, 4, 1, "same", 1, 1),
    (2, 2, 3, 2, 6, 3, 3, "valid", 1, 1),
    (3, 1, 4, 2, 5, 2, (1, 2, 1), 1, 1, 2),
    (3, 2, 2, 3, 4, 3, 2, (0, 1, 1), 1, 1),
]


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("bias", [True, False])
def test_conv_matches_torch(case, bias):
    n, batch, cin, cout, size, kernel, stride, padding, dilation, groups = case
    kernel_shape = kernel if isinstance(kernel, tuple) else (kernel,) * n
    arrays = [_array(batch, cin, *(size,) * n), _array(cout, cin // groups, *kernel_shape)]
    if bias:
        arrays.append(_array(cout))

    def fn(lib, x, w, b=None):
        conv = getattr(lib.nn.functional, f"conv{n}d")
        return conv(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)
    _compare(fn, arrays, rtol=1e-9, atol=1e-10)


TRANSPOSE_CASES = [
    # (dims, batch, in_ch, out_ch, size, kernel, stride, padding, output_padding, dilation, groups)
    (1, 2, 4, 6, 5, 3, 1, 0, 0, 1, 1),
    (1, 2, 4, 6, 5, 3, 3, 2, 1, 2, 2),
    (2, 2, 3, 4, 4, 3, 2, 1, 1, 1, 1),
    (2, 1, 4, 6, 5, (2, 3), (2, 1), (0, 1), (1, 0), (1, 2), 2),
    (2, 2, 2, 2, 3, 3, 1, 1, 0, 2, 2),
    (3, 1, 2, 4, 3, 2, 2, 0, 1, 1, 1),
    (3, 1, 4, 2, 3, 3, (1, 2, 1), 1, (0, 1, 0), 1, 2),
    (2, 2, 4, 6, 5, 3, 1, 1, 1, 2, 2),  # output_padding allowed by dilation at stride 1
    (1, 2, 4, 6, 5, 3, 2, 1, 2, 3, 1),
]


@pytest.mark.parametrize("case", TRANSPOSE_CASES)
@pytest.mark.parametrize("bias", [True, False])
def test_conv_transpose_matches_torch(case, bias):
    n, batch, cin, cout, size, kernel, stride, padding, output_padding, dilation, groups = case
    kernel_shape = kernel if isinstance(kernel, tuple) else (kernel,) * n
    arrays = [_array(batch, cin, *(size,) * n), _array(cin, cout // groups, *kernel_shape)]
    if bias:
        arrays.append(_array(cout))

    def fn(lib, x, w, b=None):
        conv = getattr(lib.nn.functional, f"conv_transpose{n}d")
        return conv(x, w, b, stride=stride, padding=padding, output_padding=output_padding,
                    groups=groups, dilation=dilation)
    _compare(fn, arrays, rtol=1e-9, atol=1e-10)


def test_conv_float32_and_unbatched():
    arrays = [_array(3, 7, 7, dtype=np.float32), _array(5, 3, 3, 3, dtype=np.float32),
              _array(5, dtype=np.float32)]
    _compare(lambda lib, x, w, b: lib.nn.functional.conv2d(x, w, b, padding=1), arrays,
             rtol=1e-4, atol=1e-5)
    arrays = [_array(4, 5, dtype=np.float32), _array(4, 2, 3, dtype=np.float32)]
    _compare(lambda lib, x, w: lib.nn.functional.conv_transpose1d(x, w, stride=2), arrays,
             rtol=1e-4, atol=1e-5)


def test_conv_gradcheck_and_gradgradcheck():
    x = ember.tensor(_array(1, 2, 5, 4), requires_grad=True)
    w = ember.tensor(_array(4, 1, 2, 3), requires_grad=True)
    b = ember.tensor(_array(4), requires_grad=True)

    def conv(x, w, b):
        return ember.nn.functional.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2),
                                          groups=2)

    def transposed(x, w, b):
        return ember.nn.functional.conv_transpose2d(x, w.reshape(2, 2, 2, 3), b[:2],
                                                    stride=2, padding=1, output_padding=1)
    def dilated_transposed(x, w, b):
        return ember.nn.functional.conv_transpose2d(x, w.reshape(2, 2, 2, 3), b[:2], stride=1,
                                                    dilation=2, output_padding=1)
    for fn in (conv, transposed, dilated_transposed):
        assert ember.autograd.gradcheck(fn, (x, w, b), eps=1e-6, atol=1e-6)
        assert ember.autograd.gradgradcheck(fn, (x, w, b), eps=1e-6, atol=1e-6)


def test_conv_double_backward_matches_torch():
    arrays = [_array(2, 2, 5, 5), _array(3, 2, 3, 3)]

    def fn(lib, x, w):
        y = lib.nn.functional.conv2d(x, w, stride=2, padding=1)
        gx, gw = lib.autograd.grad((y * y).sum(), (x, w), create_graph=True)
        return (gx * gx).sum() + (gw.sin()).sum()
    _compare(fn, arrays, rtol=1e-9, atol=1e-10)


def test_unfold_fold_match_torch():
    _compare(lambda lib, x: lib.nn.functional.unfold(x, (2, 3), dilation=(2, 1), padding=1,
                                                     stride=(1, 2)), [_array(2, 3, 6, 7)])
    _compare(lambda lib, x: lib.nn.functional.unfold(x, 2), [_array(3, 4, 5)])
    _compare(lambda lib, x: lib.nn.functional.fold(x, (5, 6), (2, 3), padding=1, stride=(2, 1)),
             [_array(2, 12, 18)])
    _compare(lambda lib, x: lib.nn.functional.fold(x, 4, 2, stride=2), [_array(8, 4)])
    x = ember.tensor(_array(1, 2, 4, 4), requires_grad=True)
    fn = ember.nn.functional.unfold
    assert ember.autograd.gradgradcheck(lambda t: fn(t, 2, padding=1, stride=2), (x,))


def _copy_state(torch_module, ember_module):
    state = {k: ember.tensor(v.detach().numpy()) for k, v in torch_module.state_dict().items()}
    ember_module.load_state_dict(state)


@pytest.mark.parametrize("name, args, kwargs, shape", [
    ("Conv1d", (4, 6, 3), {"stride": 2, "padding": 2, "padding_mode": "circular"}, (2, 4, 9)),
    ("Conv2d", (3, 4, 3), {"padding": 1, "padding_mode": "reflect"}, (2, 3, 6, 6)),
    ("Conv2d", (4, 4, (3, 2)), {"padding": "same", "padding_mode": "replicate", "groups": 2,
                                "dilation": 2}, (2, 4, 7, 6)),
    ("Conv2d", (3, 2, 2), {"bias": False}, (3, 5, 5)),
    ("Conv3d", (2, 4, 2), {"padding": (1, 0, 1), "padding_mode": "zeros"}, (1, 2, 4, 3, 4)),
    ("ConvTranspose1d", (4, 2, 3), {"stride": 2, "output_padding": 1}, (2, 4, 5)),
    ("ConvTranspose2d", (4, 6, 3), {"stride": 2, "padding": 1, "groups": 2}, (2, 4, 4, 4)),
    ("ConvTranspose3d", (2, 2, 2), {"stride": (1, 2, 1), "dilation": 2}, (1, 2, 3, 3, 3)),
])
def test_conv_modules_match_torch(name, args, kwargs, shape):
    torch_module = getattr(torch.nn, name)(*args, **kwargs)
    ember_module = getattr(ember.nn, name)(*args, **kwargs)
    assert repr(ember_module) == repr(torch_module)
    ember_state = ember_module.state_dict()
    assert [(k, tuple(v.shape)) for k, v in ember_state.items()] == \
        [(k, tuple(v.shape)) for k, v in torch_module.state_dict().items()]
    _copy_state(torch_module, ember_module)
    x = _array(*shape, dtype=np.float32)
    results = []
    for lib, module in ((torch, torch_module), (ember, ember_module)):
        inp = lib.tensor(x, requires_grad=True)
        out = module(inp)
        out.backward(lib.tensor(np.linspace(-1, 1, out.numel(), dtype=np.float32)
                                .reshape(tuple(out.shape))))
        results.append([out, inp.grad] + [p.grad for p in module.parameters()])
    assert_same(*results, rtol=1e-4, atol=1e-5)


def test_conv_transpose_output_size():
    torch_module = torch.nn.ConvTranspose2d(3, 2, 3, stride=3, padding=1)
    ember_module = ember.nn.ConvTranspose2d(3, 2, 3, stride=3, padding=1)
    _copy_state(torch_module, ember_module)
    x = _array(2, 3, 4, 4, dtype=np.float32)
    for size in [(10, 11), [2, 2, 12, 10]]:
        assert_same(torch_module(torch.tensor(x), output_size=size),
                    ember_module(ember.tensor(x), output_size=size), rtol=1e-5)
    compare_error(lambda lib: (torch_module if lib is torch else ember_module)(
        lib.tensor(x), output_size=(13, 10)))
    compare_error(lambda lib: (torch_module if lib is torch else ember_module)(
        lib.tensor(x), output_size=(10,)))


@pytest.mark.parametrize("name, args", [("Conv2d", (16, 8, 3)), ("Conv1d", (6, 4, 5)),
                                        ("ConvTranspose2d", (8, 16, 3))])
def test_conv_default_init_distribution(name, args):
    module = getattr(ember.nn, name)(*args)
    fan_in = module.weight.shape[1] * math.prod(module.weight.shape[2:])
    bound = 1 / math.sqrt(fan_in)  # kaiming_uniform_(a=sqrt(5)) gives the same bound
    weight = module.weight.detach().numpy()
    bias = module.bias.detach().numpy()
    assert np.abs(weight).max() <= bound and np.abs(bias).max() <= bound
    assert np.abs(weight).max() > 0.8 * bound
    assert abs(weight.std() - bound / math.sqrt(3)) < 0.2 * bound


def test_lazy_conv_modules():
    for name, shape in [("LazyConv2d", (2, 3, 6, 6)), ("LazyConvTranspose1d", (3, 5)),
                        ("LazyConv3d", (1, 2, 4, 4, 4))]:
        module = getattr(ember.nn, name)(4, 3)
        out = module(ember.randn(*shape))
        eager = getattr(torch.nn, name)(4, 3)
        eager(torch.randn(*shape))
        assert type(module).__name__ == name.replace("Lazy", "")
        assert tuple(module.weight.shape) == tuple(eager.weight.shape)
        assert tuple(out.shape) == tuple(eager(torch.randn(*shape)).shape)


def test_conv_in_training_and_eval_modes():
    torch_module, ember_module = torch.nn.Conv2d(2, 3, 3), ember.nn.Conv2d(2, 3, 3)
    _copy_state(torch_module, ember_module)
    x = _array(1, 2, 5, 5, dtype=np.float32)
    for mode in (True, False):
        torch_module.train(mode)
        ember_module.train(mode)
        assert_same(torch_module(torch.tensor(x)), ember_module(ember.tensor(x)), rtol=1e-5)


@pytest.mark.parametrize("fn", [
    lambda lib: lib.nn.functional.conv2d(lib.ones(2, 4, 9, 9), lib.ones(5, 3, 3, 3)),
    lambda lib: lib.nn.functional.conv2d(lib.ones(4, 9, 9), lib.ones(5, 3, 3, 3)),
    lambda lib: lib.nn.functional.conv2d(lib.ones(9, 9), lib.ones(5, 3, 3, 3)),
    lambda lib: lib.nn.functional.conv1d(lib.ones(2, 3, 9), lib.ones(5, 3, 3, 3)),
    lambda lib: lib.nn.functional.conv2d(lib.ones(2, 3, 2, 2), lib.ones(5, 3, 3, 3)),
    lambda lib: lib.nn.functional.conv2d(lib.ones(2, 4, 9, 9), lib.ones(6, 2, 3, 3), groups=3),
    lambda lib: lib.nn.functional.conv2d(lib.ones(2, 6, 9, 9), lib.ones(5, 2, 3, 3), groups=3),
    lambda lib: lib.nn.functional.conv2d(lib.ones(1, 3, 9, 9), lib.ones(5, 3, 3, 3), groups=0),
    lambda lib: lib.nn.functional.conv2d(lib.ones(1, 3, 9, 9), lib.ones(5, 3, 3, 3), stride=2,
                                         padding="same"),
    lambda lib: lib.nn.functional.conv2d(lib.ones(1, 3, 9, 9), lib.ones(5, 3, 3, 3),
                                         padding="full"),
    lambda lib: lib.nn.functional.conv2d(lib.ones(1, 3, 9, 9), lib.ones(5, 3, 3, 3), padding=-1),
    lambda lib: lib.nn.functional.conv2d(lib.ones(1, 3, 9, 9), lib.ones(5, 3, 3, 3), stride=0),
    lambda lib: lib.nn.functional.conv2d(lib.ones(1, 3, 9, 9), lib.ones(5, 3, 3, 3),
                                         stride=(1, 1, 1)),
    lambda lib: lib.nn.functional.conv2d(lib.ones(1, 3, 9, 9), lib.ones(5, 3, 3, 3), lib.ones(4)),
    lambda lib: lib.nn.functional.conv2d(lib.ones(1, 3, 9, 9, dtype=lib.float64),
                                         lib.ones(5, 3, 3, 3)),
    lambda lib: lib.nn.functional.conv2d(lib.ones(1, 3, 9, 9), lib.ones(5, 3, 3, 3),
                                         lib.ones(5, dtype=lib.float64)),
    lambda lib: lib.nn.functional.conv_transpose2d(lib.ones(2, 4, 5, 5), lib.ones(5, 3, 3, 3)),
    lambda lib: lib.nn.functional.conv_transpose2d(lib.ones(2, 5, 5, 5), lib.ones(5, 3, 3, 3),
                                                   output_padding=1),
    lambda lib: lib.nn.functional.unfold(lib.ones(2, 3, 2, 2), 3),
    lambda lib: lib.nn.functional.fold(lib.ones(2, 12, 5), (4, 4), 2),
    lambda lib: lib.nn.functional.fold(lib.ones(2, 10, 9), (4, 4), 2),
    lambda lib: lib.nn.Conv2d(4, 6, 3, groups=3),
    lambda lib: lib.nn.Conv2d(3, 6, 3, padding="same", stride=2),
    lambda lib: lib.nn.ConvTranspose2d(3, 6, 3, padding_mode="reflect"),
])
def test_conv_errors_match_torch(fn):
    compare_error(fn)


def test_conv_family_stays_on_the_input_backend(device):
    F = ember.nn.functional
    x = ember.randn(2, 4, 6, 6, device=device, requires_grad=True)
    w = ember.randn(6, 2, 3, 3, device=device, requires_grad=True)
    outputs = [F.conv2d(x, w, padding=1, groups=2), F.conv_transpose2d(x, w[:4], stride=2),
               F.max_pool2d(x, 2), F.avg_pool2d(x, 3, 1, 1), F.adaptive_max_pool2d(x, 4),
               F.interpolate(x, scale_factor=2, mode="bilinear"), F.pad(x, (1, 1, 2, 0), "reflect"),
               F.unfold(x, 2)]
    sum(out.sum() for out in outputs).backward()
    for t in outputs + [x.grad, w.grad]:
        assert t.device.type == device
    if device != "cpu":
        with pytest.raises(RuntimeError, match="same device"):
            F.conv2d(x, ember.randn(6, 2, 3, 3), groups=2)


def test_empty_batch_matches_torch():
    for fn in (lambda lib, x, w: lib.nn.functional.conv2d(x, w, padding=1),
               lambda lib, x, w: lib.nn.functional.conv_transpose2d(x, w.transpose(0, 1)),
               lambda lib, x, w: lib.nn.functional.avg_pool2d(x, 2) * w.sum()):
        arrays = [np.zeros((0, 3, 5, 5)), _array(4, 3, 3, 3)]
        assert_same(_run(torch, fn, arrays), _run(ember, fn, arrays))


def test_invalid_padding_mode_error():
    # PyTorch prints the valid modes as a set, whose order changes with the hash seed
    compare_error(lambda lib: lib.nn.Conv2d(3, 6, 3, padding_mode="mirror"),
                  "but got padding_mode='mirror'")
