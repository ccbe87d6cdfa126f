"""Integer and bool inputs everywhere: every row of the op table, whatever dtypes the row lists,
and the ``nn.functional`` ops that PyTorch runs on integers, called with uint8, int8, int16,
int32, int64 and bool tensors. Where PyTorch accepts the dtype, Ember's values and result dtype
must equal its (integer division, rounding, wrap-around on overflow, type promotion); where it
refuses, Ember must raise the same exception type.

Each row is run with the table's small values and, for rows on the default input generator,
also with values spread over the whole range of the narrow dtypes (uint8, int8, int16, bool),
so that sums and products wrap around. (Spread over int32/int64 the values only make the
special functions slow, and wrap-around is the same rule.)"""
import numpy as np
import pytest
import torch

import ember
from opinfo import core
from opinfo.registry import ALL_OPS

INTEGER_DTYPES = ("uint8", "int8", "int16", "int32", "int64", "bool")
NARROW_DTYPES = ("uint8", "int8", "int16", "bool")


def _cases():
    for op in ALL_OPS:
        for i, sample in enumerate(core.distinct_samples(op)):
            for dtype in INTEGER_DTYPES:
                yield pytest.param(op, sample, False, dtype, id=f"{op.name}-{i}-{dtype}")
            if i == 0 and op.make_input is None:
                for dtype in NARROW_DTYPES:
                    yield pytest.param(op, sample, True, dtype,
                                       id=f"{op.name}-{i}-{dtype}-full_range")


def _as_dtype(arr, dtype):
    """Float values a row's generator made, as ``dtype`` holds them: rounded, then wrapped
    explicitly (a float-to-integer cast out of range is undefined in C, so PyTorch and NumPy
    may disagree on it; the inputs must be the same for both)."""
    if dtype == "bool":
        return arr > 0
    return np.round(arr).astype(np.int64).astype(dtype)


def _full_range(rng, shape, dtype):
    if dtype == "bool":
        return rng.random(shape) > 0.5
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)


def _distinct(rng, shape, dtype):
    """Tie-free integers: the order of equal elements in a sort or top-k is unspecified."""
    n = int(np.prod(shape)) if shape else 1
    values = rng.permutation(n) - (0 if dtype == "uint8" else n // 2)
    return values.reshape(shape).astype(dtype)


def _input_array(op, rng, shape, dtype, index, full_range):
    if full_range:
        return _full_range(rng, shape, dtype)
    if op.make_input is None:
        return core.make_array(rng, shape, dtype, op.domain)
    if getattr(op.make_input, "__name__", "") == "_sort_input" and dtype != "bool":
        return _distinct(rng, shape, dtype)
    try:
        arr = np.asarray(op.make_input(rng, shape, dtype, index))
    except (ValueError, TypeError):  # a generator for floats only (NaNs in an integer array)
        return core.make_array(rng, shape, dtype, op.domain)
    if arr.dtype.kind == "f":
        return _as_dtype(arr, dtype)
    return arr  # an index or a mask the row builds in its own dtype


def _pairs(op, sample, dtype, device, full_range):
    rng = np.random.default_rng(0)
    t_in, e_in = [], []
    for i, shape in enumerate(sample.shapes):
        arr = _input_array(op, rng, shape, dtype, i, full_range)
        in_dtype = dtype if arr.dtype == np.dtype(dtype) else str(arr.dtype)
        t, e = core.to_pair(arr, in_dtype, device, sample.noncontig, False)
        t_in.append(t)
        e_in.append(e)
    return t_in, e_in


def raises_like(torch_error, fn):
    """``fn()`` raises what PyTorch raised: the same type (a LinAlgError by name, since
    PyTorch's class lives in ``torch._C``)."""
    expected = type(torch_error)
    if expected.__name__.endswith("LinAlgError"):
        with pytest.raises(RuntimeError) as info:
            fn()
        assert type(info.value).__name__ == "LinAlgError", info.value
        return
    with pytest.raises(expected):
        fn()


def _is_float(out):
    return any(isinstance(t, torch.Tensor) and (t.dtype.is_floating_point or t.dtype.is_complex)
               for t in core.flatten_outputs(out))


@pytest.mark.parametrize("op,sample,full_range,dtype", list(_cases()))
def test_op_table_integer_dtypes(op, sample, full_range, dtype):
    t_in, e_in = _pairs(op, sample, dtype, "cpu", full_range)
    try:
        t_out = op.fn(torch, *t_in, *sample.args, **sample.kwargs)
    except Exception as exc:
        raises_like(exc, lambda: op.fn(ember, *e_in, *sample.args, **sample.kwargs))
        return
    e_out = op.fn(ember, *e_in, *sample.args, **sample.kwargs)
    values = op.values
    if full_range and _is_float(t_out):
        # Large integers in a floating-point function test its accuracy at extreme arguments,
        # which the float table covers; here only the result dtype and shape are the point.
        values = False
    if dtype == "bool" and ("eigh" in op.name or "cholesky" in op.name):
        # 0/1 matrices have repeated eigenvalues (whose eigenvectors are not unique) and are
        # often singular (a Cholesky pivot of 0 comes out as float32 rounding noise)
        values = False
    core.assert_same(e_out, t_out, dtype, op.tol.get(dtype), check_values=values)


# ---- nn.functional ------------------------------------------------------------------------------

def nnf(lib):
    return lib.nn.functional


def _functional_cases():
    """(name, fn(lib, x), shape of x): every family of nn.functional that takes a tensor."""
    cases = []

    def add(name, fn, shape=(2, 3, 6, 6)):
        cases.append((name, fn, shape))

    for mode in ("constant", "reflect", "replicate", "circular"):
        add(f"pad_{mode}", lambda L, x, m=mode: nnf(L).pad(x, (1, 2, 2, 1), mode=m))
        add(f"pad3d_{mode}", lambda L, x, m=mode: nnf(L).pad(x, (1, 2), mode=m), (2, 3, 6))
    add("pad_value", lambda L, x: nnf(L).pad(x, (1, 1), value=3))
    for mode in ("nearest", "nearest-exact", "bilinear", "bicubic", "area"):
        add(f"interpolate_{mode}", lambda L, x, m=mode: nnf(L).interpolate(x, size=(4, 9), mode=m))
    for mode in ("nearest", "linear", "area"):
        add(f"interpolate1d_{mode}", lambda L, x, m=mode: nnf(L).interpolate(x, size=9, mode=m), (2, 3, 6))
    for mode in ("nearest", "trilinear"):
        add(f"interpolate3d_{mode}", lambda L, x, m=mode: nnf(L).interpolate(x, size=(3, 4, 5), mode=m), (1, 2, 2, 3, 4))
    add("interpolate_bilinear_aa", lambda L, x: nnf(L).interpolate(x, size=(4, 3), mode="bilinear", antialias=True))
    add("interpolate_bicubic_ac", lambda L, x: nnf(L).interpolate(x, scale_factor=1.5, mode="bicubic", align_corners=True))
    add("upsample_bilinear", lambda L, x: nnf(L).upsample_bilinear(x, size=(8, 8)))
    add("max_pool2d", lambda L, x: nnf(L).max_pool2d(x, 2))
    add("max_pool2d_indices", lambda L, x: nnf(L).max_pool2d(x, 3, 2, 1, return_indices=True))
    add("max_pool1d", lambda L, x: nnf(L).max_pool1d(x, 2), (2, 3, 6))
    add("max_pool3d", lambda L, x: nnf(L).max_pool3d(x, 2), (1, 2, 4, 4, 4))
    add("avg_pool2d", lambda L, x: nnf(L).avg_pool2d(x, 2))
    add("avg_pool1d", lambda L, x: nnf(L).avg_pool1d(x, 2), (2, 3, 6))
    add("adaptive_avg_pool2d", lambda L, x: nnf(L).adaptive_avg_pool2d(x, 3))
    add("adaptive_avg_pool1d", lambda L, x: nnf(L).adaptive_avg_pool1d(x, 3), (2, 3, 6))
    add("adaptive_max_pool2d", lambda L, x: nnf(L).adaptive_max_pool2d(x, 3))
    add("lp_pool2d", lambda L, x: nnf(L).lp_pool2d(x, 2, 2))
    add("pixel_shuffle", lambda L, x: nnf(L).pixel_shuffle(x.repeat(1, 4, 1, 1), 2))
    add("pixel_unshuffle", lambda L, x: nnf(L).pixel_unshuffle(x, 2))
    add("channel_shuffle", lambda L, x: nnf(L).channel_shuffle(x.repeat(1, 2, 1, 1), 2))
    add("unfold", lambda L, x: nnf(L).unfold(x, 2))
    add("fold", lambda L, x: nnf(L).fold(x.reshape(2, 12, 9), (4, 4), 2), (2, 3, 4, 9))
    for name in ("relu", "relu6", "hardtanh", "leaky_relu", "elu", "selu", "gelu", "silu", "sigmoid",
                 "tanh", "softplus", "softsign", "hardswish", "hardsigmoid", "logsigmoid", "mish",
                 "hardshrink", "softshrink", "tanhshrink", "celu"):
        add(name, lambda L, x, n=name: getattr(L.nn.functional, n)(x), (3, 5))
    add("threshold", lambda L, x: nnf(L).threshold(x, 1, 7), (3, 5))
    for name in ("softmax", "log_softmax", "softmin"):
        add(name, lambda L, x, n=name: getattr(L.nn.functional, n)(x, dim=1), (3, 5))
    add("glu", lambda L, x: nnf(L).glu(x, -1), (3, 6))
    add("normalize", lambda L, x: nnf(L).normalize(x), (3, 5))
    add("dropout_eval", lambda L, x: nnf(L).dropout(x, 0.5, training=False), (3, 5))
    add("linear", lambda L, x: nnf(L).linear(x, x[:2]), (3, 5))
    add("linear_bias", lambda L, x: nnf(L).linear(x, x[:2], x[0, :2]), (3, 5))
    add("bilinear", lambda L, x: nnf(L).bilinear(x, x, x[:2].reshape(2, 5, 1).expand(2, 5, 5).contiguous()), (3, 5))
    add("conv2d", lambda L, x: nnf(L).conv2d(x, x[:2, :, :3, :3].contiguous()))
    add("conv1d", lambda L, x: nnf(L).conv1d(x, x[:2, :, :3].contiguous()), (2, 3, 6))
    add("conv_transpose2d", lambda L, x: nnf(L).conv_transpose2d(x, x[:, :2, :3, :3].contiguous()))
    add("one_hot", lambda L, x: nnf(L).one_hot(x.abs() if x.dtype != L.bool else x), (3, 5))
    add("embedding", lambda L, x: nnf(L).embedding(x.abs() % 4 if x.dtype != L.bool else x, L.arange(12.).reshape(4, 3)), (3, 5))
    add("cosine_similarity", lambda L, x: nnf(L).cosine_similarity(x, x.flip(0)), (3, 5))
    add("pairwise_distance", lambda L, x: nnf(L).pairwise_distance(x, x.flip(0)), (3, 5))
    add("pdist", lambda L, x: nnf(L).pdist(x), (3, 5))
    add("layer_norm", lambda L, x: nnf(L).layer_norm(x, (5,)), (3, 5))
    add("batch_norm", lambda L, x: nnf(L).batch_norm(x, None, None, training=True), (3, 5))
    add("group_norm", lambda L, x: nnf(L).group_norm(x, 1), (3, 5, 2))
    add("instance_norm", lambda L, x: nnf(L).instance_norm(x), (3, 5, 4))
    add("local_response_norm", lambda L, x: nnf(L).local_response_norm(x, 2), (2, 3, 4))
    add("grid_sample", lambda L, x: nnf(L).grid_sample(x, L.zeros(2, 3, 3, 2)), (2, 3, 4, 4))
    add("affine_grid", lambda L, x: nnf(L).affine_grid(x, [2, 1, 3, 3], align_corners=False), (2, 2, 3))
    for loss in ("l1_loss", "mse_loss", "smooth_l1_loss", "huber_loss", "soft_margin_loss",
                 "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
                 "poisson_nll_loss", "hinge_embedding_loss", "multilabel_soft_margin_loss"):
        add(loss, lambda L, x, n=loss: getattr(L.nn.functional, n)(x, x.flip(0)), (3, 5))
    add("cross_entropy_int_input", lambda L, x: nnf(L).cross_entropy(x, L.tensor([0, 1, 4])), (3, 5))
    add("nll_loss_int_input", lambda L, x: nnf(L).nll_loss(x, L.tensor([0, 1, 4])), (3, 5))
    add("cross_entropy_int_target", lambda L, x: nnf(L).cross_entropy(L.ones(3, 7), x[0, :3].abs() if x.dtype != L.bool else x[0, :3]), (3, 5))
    for reduction in ("none", "sum", "mean"):
        add(f"margin_ranking_loss-{reduction}", lambda L, x, r=reduction:
            nnf(L).margin_ranking_loss(x[0], x[1], x[2], reduction=r), (3, 5))
        add(f"hinge_embedding_loss-{reduction}", lambda L, x, r=reduction:
            nnf(L).hinge_embedding_loss(x, x.flip(0), reduction=r), (3, 5))
        add(f"soft_margin_loss-{reduction}", lambda L, x, r=reduction:
            nnf(L).soft_margin_loss(x, x.flip(0), reduction=r), (3, 5))
    add("triplet_margin_loss", lambda L, x: nnf(L).triplet_margin_loss(x, x.flip(0), x.flip(1)), (3, 5))
    add("cosine_embedding_loss", lambda L, x: nnf(L).cosine_embedding_loss(x, x.flip(0), x[:, 0]), (3, 5))
    add("embedding_bag", lambda L, x: nnf(L).embedding_bag(x.abs() % 4 if x.dtype != L.bool else x, L.arange(12.).reshape(4, 3)), (3, 5))
    return cases


def _functional_params():
    for name, fn, shape in _functional_cases():
        for dtype in INTEGER_DTYPES:
            yield pytest.param(fn, shape, dtype, id=f"{name}-{dtype}")


@pytest.mark.parametrize("fn,shape,dtype", list(_functional_params()))
def test_functional_integer_dtypes(fn, shape, dtype):
    rng = np.random.default_rng(0)
    if dtype == "bool":
        arr = rng.random(shape) > 0.5
    else:
        arr = rng.integers(0 if dtype == "uint8" else -6, 7, size=shape).astype(dtype)
    t_in, e_in = torch.from_numpy(arr.copy()), ember.tensor(arr.copy())
    try:
        t_out = fn(torch, t_in)
    except Exception as exc:
        raises_like(exc, lambda: fn(ember, e_in))
        return
    core.assert_same(fn(ember, e_in), t_out, dtype)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("antialias", [False, True])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("channels", [1, 3, 5])
def test_interpolate_uint8_images(mode, antialias, align_corners, channels):
    """uint8 images resample as PyTorch's integer kernels do (fixed-point weights, one clamped
    pass per dim), bit for bit: the reported case returned zeros."""
    rng = np.random.default_rng(channels)
    image = rng.integers(0, 256, size=(2, channels, 5, 7)).astype(np.uint8)
    for kwargs in ({"size": (9, 4)}, {"size": (3, 11)}, {"scale_factor": 1.7},
                   {"scale_factor": (0.6, 2.3)}):
        def run(lib):
            return lib.nn.functional.interpolate(lib.tensor(image), mode=mode,
                                                 align_corners=align_corners,
                                                 antialias=antialias, **kwargs)
        expected, actual = run(torch), run(ember)
        assert actual.dtype is ember.uint8
        np.testing.assert_array_equal(actual.numpy(), expected.numpy())
