"""Padding, interpolation, grid sampling and shuffles against PyTorch: outputs and input
gradients for every mode, the layers (repr, forward) and errors."""
import numpy as np
import pytest
import torch

import ember
from torch_compare import assert_same, compare_error

rng = np.random.default_rng(0)


def _run(lib, fn, arrays):
    tensors = [lib.tensor(a, requires_grad=True) for a in arrays]
    out = fn(lib, *tensors)
    upstream = np.random.default_rng(1).standard_normal(tuple(out.shape)).astype(arrays[0].dtype)
    out.backward(lib.tensor(upstream))
    return [out] + [t.grad for t in tensors]


def _compare(fn, *shapes, dtype=np.float64, **tol):
    arrays = [rng.standard_normal(s).astype(dtype) for s in shapes]
    assert_same(_run(torch, fn, arrays), _run(ember, fn, arrays), **tol)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape, pad", [
    ((3, 4), (1, 2)), ((2, 3, 5), (2, 1)), ((2, 3, 4, 5), (1, 2, 2, 1)),
    ((2, 3, 4, 5), (-1, 2, 2, -1)), ((1, 2, 4, 5, 3), (1, 2, 0, 1, 2, 1)),
    ((2, 4, 5), (0, 0, 1, 3)),
])
def test_pad_matches_torch(mode, shape, pad):
    _compare(lambda lib, x: lib.nn.functional.pad(x, pad, mode=mode), shape)


def test_constant_pad_value_any_dims_and_gradgrad():
    _compare(lambda lib, x: lib.nn.functional.pad(x, (1, 2, 3, 4, 1, 1), value=2.5), (2, 3, 4, 5))
    _compare(lambda lib, x: lib.nn.functional.pad(x, (1, 0, -2, 1)), (2, 3, 4, 5, 6))
    x = ember.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True)
    for mode in ("constant", "reflect", "replicate", "circular"):
        fn = lambda t: ember.nn.functional.pad(t, (2, 1, 1, 1), mode=mode)  # noqa: E731
        assert ember.autograd.gradgradcheck(fn, (x,))


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
@pytest.mark.parametrize("size, scale_factor, shape", [
    (None, 2, (2, 3, 5, 7)), (None, 1.5, (2, 3, 5, 7)), (None, 0.7, (2, 3, 5, 7)),
    (None, (3, 0.5), (2, 3, 5, 8)), ((4, 9), None, (2, 3, 5, 7)), (9, None, (2, 3, 4)),
    ((3, 4, 9), None, (1, 2, 5, 7, 3)),
])
def test_interpolate_nearest_matches_torch(mode, size, scale_factor, shape):
    _compare(lambda lib, x: lib.nn.functional.interpolate(x, size, scale_factor, mode), shape)


@pytest.mark.parametrize("mode, shape", [("linear", (2, 3, 7)), ("bilinear", (2, 3, 5, 7)),
                                         ("bicubic", (2, 3, 5, 7)),
                                         ("trilinear", (1, 2, 4, 5, 3))])
@pytest.mark.parametrize("align_corners", [False, True])
def test_interpolate_linear_modes_match_torch(mode, shape, align_corners):

    def fn(size=None, scale_factor=None, recompute=None):
        return lambda lib, x: lib.nn.functional.interpolate(
            x, size, scale_factor, mode, align_corners, recompute_scale_factor=recompute)
    for scale in (2, 1.5, 0.6):
        _compare(fn(scale_factor=scale), shape)
        _compare(fn(scale_factor=scale, recompute=True), shape)
    _compare(fn(size=tuple(range(3, len(shape) + 1))), shape)


def test_interpolate_float32_and_area():
    _compare(lambda lib, x: lib.nn.functional.interpolate(x, scale_factor=2, mode="bilinear"),
             (2, 3, 5, 7), dtype=np.float32, rtol=1e-5, atol=1e-6)
    _compare(lambda lib, x: lib.nn.functional.interpolate(x, size=(3, 4), mode="area"),
             (2, 3, 5, 7))
    _compare(lambda lib, x: lib.nn.functional.interpolate(x, scale_factor=0.5, mode="area"),
             (2, 3, 8))


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_grid_sample_matches_torch(padding_mode, align_corners, mode):
    def fn(lib, x, grid):
        return lib.nn.functional.grid_sample(x, grid * 1.3, mode=mode, padding_mode=padding_mode,
                                             align_corners=align_corners)
    _compare(fn, (2, 3, 5, 7), (2, 4, 6, 2))


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_grid_sample_volumetric_matches_torch(padding_mode, mode):
    def fn(lib, x, grid):
        return lib.nn.functional.grid_sample(x, grid * 1.3, mode=mode, padding_mode=padding_mode,
                                             align_corners=False)
    _compare(fn, (2, 3, 4, 5, 6), (2, 3, 4, 2, 3))


@pytest.mark.parametrize("input_shape, grid_shape, mode", [
    ((1, 2, 3, 3, 3), (1, 2, 2, 2, 3), "bicubic"),
    ((1, 2, 3, 3), (1, 2, 2, 3), "bilinear"),
    ((1, 2, 3, 3), (2, 2, 2, 2), "bilinear"),
    ((1, 2, 3, 3, 3), (1, 2, 2, 2), "bilinear"),
    ((1, 2, 3, 3), (1, 2, 2, 2, 2), "bilinear"),
    ((1, 2, 3), (1, 2, 1), "bilinear"),
])
def test_grid_sample_errors(input_shape, grid_shape, mode):
    compare_error(lambda lib: lib.nn.functional.grid_sample(
        lib.zeros(input_shape), lib.zeros(grid_shape), mode=mode, align_corners=False))


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size, scale_factor", [((3, 4), None), ((9, 13), None), (None, 0.3),
                                                (None, (0.5, 2.5))])
def test_interpolate_antialias_matches_torch(mode, align_corners, size, scale_factor):
    _compare(lambda lib, x: lib.nn.functional.interpolate(
        x, size, scale_factor, mode=mode, align_corners=align_corners, antialias=True),
        (2, 3, 10, 11))


@pytest.mark.parametrize("mode, shape", [("nearest", (1, 2, 4, 4)), ("trilinear", (1, 2, 4, 4, 4)),
                                         ("bilinear", (1, 2, 4, 4, 4)), ("linear", (1, 2, 8))])
def test_interpolate_antialias_errors(mode, shape):
    compare_error(lambda lib: lib.nn.functional.interpolate(lib.zeros(shape), scale_factor=0.5,
                                                            mode=mode, antialias=True))


@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_matches_torch(align_corners):
    _compare(lambda lib, t: lib.nn.functional.affine_grid(t, (2, 3, 5, 7),
                                                          align_corners=align_corners), (2, 2, 3))
    _compare(lambda lib, t: lib.nn.functional.affine_grid(t, (2, 3, 5, 7, 4),
                                                          align_corners=align_corners), (2, 3, 4))


def test_shuffles_match_torch():
    _compare(lambda lib, x: lib.nn.functional.pixel_shuffle(x, 2), (2, 12, 3, 4))
    _compare(lambda lib, x: lib.nn.functional.pixel_shuffle(x, 3), (9, 2, 2))
    _compare(lambda lib, x: lib.nn.functional.pixel_unshuffle(x, 2), (5, 2, 3, 4, 6))
    _compare(lambda lib, x: lib.nn.functional.channel_shuffle(x, 3), (2, 12, 3, 4))


@pytest.mark.parametrize("name, args, kwargs, shape", [
    ("ZeroPad1d", (2,), {}, (2, 3, 4)),
    ("ZeroPad2d", ((1, 2, 0, 1),), {}, (2, 3, 4, 4)),
    ("ZeroPad3d", (1,), {}, (1, 2, 3, 3, 3)),
    ("ConstantPad1d", ((1, 2), 3.5), {}, (2, 3, 4)),
    ("ConstantPad2d", (1, -1.0), {}, (2, 3, 4, 4)),
    ("ConstantPad3d", ((1, 0, 0, 1, 2, 0), 0.5), {}, (1, 2, 3, 3, 3)),
    ("ReflectionPad1d", (2,), {}, (2, 3, 4)),
    ("ReflectionPad2d", ((1, 2, 0, 1),), {}, (2, 3, 4, 4)),
    ("ReflectionPad3d", (1,), {}, (1, 2, 3, 3, 3)),
    ("ReplicationPad1d", (3,), {}, (2, 3, 4)),
    ("ReplicationPad2d", (2,), {}, (3, 4, 4)),
    ("ReplicationPad3d", ((1, 0, 2, 0, 1, 1),), {}, (1, 2, 3, 3, 3)),
    ("CircularPad1d", (2,), {}, (2, 3, 4)),
    ("CircularPad2d", ((1, 2, 0, 1),), {}, (2, 3, 4, 4)),
    ("CircularPad3d", (1,), {}, (1, 2, 3, 3, 3)),
    ("Upsample", (), {"scale_factor": 2, "mode": "bilinear"}, (2, 3, 4, 4)),
    ("Upsample", (), {"size": (5, 3), "mode": "nearest"}, (2, 3, 4, 4)),
    ("UpsamplingNearest2d", (), {"scale_factor": 2}, (2, 3, 4, 4)),
    ("UpsamplingBilinear2d", (), {"size": 6}, (2, 3, 4, 4)),
    ("PixelShuffle", (2,), {}, (2, 8, 3, 3)),
    ("PixelUnshuffle", (2,), {}, (2, 2, 4, 6)),
    ("ChannelShuffle", (2,), {}, (2, 8, 3, 3)),
    ("Fold", ((4, 5), (2, 2)), {"stride": 1}, (2, 8, 12)),
    ("Unfold", ((2, 3),), {"padding": 1, "dilation": (1, 2)}, (2, 3, 5, 5)),
])
def test_layers_match_torch(name, args, kwargs, shape):
    torch_module = getattr(torch.nn, name)(*args, **kwargs)
    ember_module = getattr(ember.nn, name)(*args, **kwargs)
    assert repr(ember_module) == repr(torch_module)
    arrays = [rng.standard_normal(shape).astype(np.float32)]
    results = [_run(lib, lambda lib_, x, m=module: m(x), arrays)
               for lib, module in ((torch, torch_module), (ember, ember_module))]
    assert_same(*results, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fn", [
    lambda lib: lib.nn.functional.pad(lib.ones(2, 3, 5, 5), (3, 3), mode="reflect"),
    lambda lib: lib.nn.functional.pad(lib.ones(2, 3, 5, 5), (1, 1, 1), mode="reflect"),
    lambda lib: lib.nn.functional.pad(lib.ones(5), (1, 1), mode="reflect"),
    lambda lib: lib.nn.functional.pad(lib.ones(2, 3, 5, 5), (5, 5, 0, 0), mode="reflect"),
    lambda lib: lib.nn.functional.pad(lib.ones(2, 3, 5, 5), (6, 6, 0, 0), mode="circular"),
    lambda lib: lib.nn.functional.pad(lib.ones(2, 3, 5, 5), (1, 1), mode="foo"),
    lambda lib: lib.nn.functional.pad(lib.ones(2, 3, 5, 5), (1,) * 10),
    lambda lib: lib.nn.functional.pad(lib.ones(2, 3, 0, 5), (1, 1, 1, 1), mode="replicate"),
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 5, 5), scale_factor=2,
                                              mode="linear"),
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 5, 5), scale_factor=2,
                                              align_corners=True),
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 5, 5), size=3, scale_factor=2),
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 5, 5), size=(3,)),
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 5, 5), size=3, mode="foo"),
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 5, 5)),
    lambda lib: lib.nn.functional.pixel_shuffle(lib.ones(1, 3, 2, 2), 2),
    lambda lib: lib.nn.functional.pixel_unshuffle(lib.ones(1, 3, 3, 3), 2),
    lambda lib: lib.nn.functional.channel_shuffle(lib.ones(1, 4, 3, 3), 3),
])
def test_padding_sampling_errors_match_torch(fn):
    compare_error(fn)
