"""The backend primitives that hide where array libraries differ (scans, sliding windows,
scatters): the NumPy backend and the real CupyBackend over the CuPy conformance device must both
give NumPy's ufunc answers (``ufunc.accumulate``, ``ufunc.at``). The conformance device is a
NumPy-backed stand-in refusing what CuPy 14.2 lacks, not a GPU: passing here proves the CuPy
code path asks CuPy only for what it has and computes the same values."""
import numpy as np
import pytest

from ember.backends.numpy_backend import NumpyBackend
from conformance.backend import CupyConformanceBackend

BACKENDS = {"numpy": NumpyBackend, "cupyconf": CupyConformanceBackend}


@pytest.fixture(params=sorted(BACKENDS), scope="module")
def backend(request):
    return BACKENDS[request.param]()


def on(backend, array):
    return backend.asarray(np.asarray(array))


def back(backend, array):
    return np.asarray(backend.to_numpy(array))


def random_array(rng, shape, dtype, nan_fraction=0.0):
    if np.dtype(dtype) == np.bool_:
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-5 if np.dtype(dtype).kind == "i" else 0, 6, shape).astype(dtype)
    x = rng.standard_normal(shape).astype(dtype)
    if nan_fraction:
        x[rng.random(shape) < nan_fraction] = np.nan
    return x


SCAN_SHAPES_AND_AXES = [((0,), 0), ((1,), 0), ((2,), 0), ((17,), 0), ((3, 8), 0), ((3, 8), 1),
                        ((3, 8), -1), ((2, 5, 9), 1), ((2, 0, 3), 2), ((4, 33), -1)]


@pytest.mark.parametrize("shape,axis", SCAN_SHAPES_AND_AXES)
@pytest.mark.parametrize("name", ["maximum", "minimum", "add", "multiply", "logaddexp"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int8, np.bool_])
def test_cumulative_matches_ufunc_accumulate(backend, name, dtype, shape, axis):
    if name == "logaddexp" and np.dtype(dtype).kind != "f":
        pytest.skip("logaddexp is a floating-point scan only (logcumsumexp refuses integers)")
    rng = np.random.default_rng(abs(hash((name, np.dtype(dtype).str, shape, axis))) % 2**32)
    x = random_array(rng, shape, dtype, nan_fraction=0.2)
    expected = getattr(np, name).accumulate(x, axis=axis) if x.size else x.copy()
    got = back(backend, backend.cumulative(name, on(backend, x), axis))
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    if name == "logaddexp":  # the log-step scan adds in another order: rounding differs
        np.testing.assert_allclose(got, expected, rtol=1e-5 if dtype == np.float32 else 1e-12)
    else:
        np.testing.assert_array_equal(got, expected)  # NaN where NumPy has NaN


@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_cumulative_extremum_nan_sticks_and_infinities_order(backend, name):
    x = np.array([[1.0, np.nan, 3.0, -np.inf, np.inf], [np.inf, -1.0, -np.inf, 2.0, 0.0]])
    expected = getattr(np, name).accumulate(x, axis=1)
    got = back(backend, backend.cumulative(name, on(backend, x), 1))
    np.testing.assert_array_equal(got, expected)
    assert np.isnan(got[0, 1:]).all()


def test_cumulative_logaddexp_keeps_minus_inf_and_large_values(backend):
    x = np.array([-np.inf, -np.inf, 0.0, 1000.0, -np.inf, 1000.0])
    expected = np.logaddexp.accumulate(x)
    np.testing.assert_allclose(back(backend, backend.cumulative("logaddexp", on(backend, x), 0)),
                               expected)


def test_cumulative_leaves_its_input_alone(backend):
    x = np.arange(10.0)[::-1].copy()
    device_x = on(backend, x)
    backend.cumulative("maximum", device_x, 0)
    np.testing.assert_array_equal(back(backend, device_x), x)


@pytest.mark.parametrize("shape,strides_of", [
    ((4, 3), lambda s: (s, s)),             # overlapping windows of a vector
    ((2, 3, 2), lambda s: (0, 2 * s, s)),   # a repeated axis
    ((0, 3), lambda s: (s, s)),
])
def test_sliding_view_matches_as_strided(backend, shape, strides_of):
    base = np.arange(12.0)
    strides = strides_of(base.strides[0])
    expected = np.lib.stride_tricks.as_strided(base, shape=shape, strides=strides)
    got = backend.sliding_view(on(backend, base), shape, strides)
    np.testing.assert_array_equal(back(backend, got), expected)


def test_sliding_view_is_read_only_where_numpy_can_say_so():
    view = NumpyBackend().sliding_view(np.arange(6.0), (4, 3), (8, 8))
    with pytest.raises(ValueError, match="read-only"):
        view[0, 1] = 5.0


def _scatter_case(rng, target_shape, dtype, n, nan_fraction=0.0):
    target = random_array(rng, target_shape, dtype, nan_fraction)
    index = tuple(rng.integers(0, s, n) for s in target_shape)  # repeats likely
    values = random_array(rng, (n,), dtype, nan_fraction)
    return target, index, values


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32])
@pytest.mark.parametrize("target_shape,n", [((5,), 20), ((3, 4), 30), ((6,), 0), ((1,), 7)])
def test_index_add_matches_add_at(backend, dtype, target_shape, n):
    rng = np.random.default_rng(n + len(target_shape))
    target, index, values = _scatter_case(rng, target_shape, dtype, n)
    expected = target.copy()
    np.add.at(expected, index, values)
    device_target = on(backend, target)
    backend.index_add(device_target, tuple(on(backend, i) for i in index), on(backend, values))
    np.testing.assert_allclose(back(backend, device_target), expected, rtol=1e-6)


_UFUNC = {("sum", False): np.add, ("prod", False): np.multiply, ("amax", False): np.maximum,
          ("amin", False): np.minimum, ("sum", True): np.logical_or,
          ("prod", True): np.logical_and, ("amax", True): np.logical_or,
          ("amin", True): np.logical_and}


@pytest.mark.parametrize("reduce", ["sum", "prod", "amax", "amin"])
@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.bool_])
@pytest.mark.parametrize("target_shape,n", [((5,), 25), ((3, 4), 40), ((4,), 0)])
def test_scatter_reduce_matches_ufunc_at(backend, reduce, dtype, target_shape, n):
    rng = np.random.default_rng(7 * n + len(target_shape))
    target, index, values = _scatter_case(rng, target_shape, dtype, n)
    if dtype == np.float64 and reduce == "prod":  # keep products of 25 values representable
        values = np.clip(values, -1.5, 1.5)
    expected = target.copy()
    _UFUNC[reduce, dtype == np.bool_].at(expected, index, values)
    device_target = on(backend, target)
    backend.scatter_reduce(device_target, tuple(on(backend, i) for i in index),
                           on(backend, values), reduce)
    got = back(backend, device_target)
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize("reduce", ["amax", "amin", "sum"])
def test_scatter_reduce_propagates_nan_as_ufunc_at(backend, reduce):
    target = np.array([1.0, 2.0, 3.0])
    index = (np.array([0, 0, 1, 2]),)
    values = np.array([np.nan, 5.0, np.nan, -1.0])
    expected = target.copy()
    _UFUNC[reduce, False].at(expected, index, values)
    device_target = on(backend, target)
    backend.scatter_reduce(device_target, tuple(on(backend, i) for i in index),
                           on(backend, values), reduce)
    np.testing.assert_array_equal(back(backend, device_target), expected)


@pytest.mark.parametrize("reduce", ["sum", "prod", "amax", "amin"])
def test_scatter_reduce_into_a_0d_target(backend, reduce):
    target = np.array(2.0)
    values = np.array([3.0, -1.0, 4.0])
    expected = target.copy()
    _UFUNC[reduce, False].at(expected, (), values[0])
    _UFUNC[reduce, False].at(expected, (), values[1])
    _UFUNC[reduce, False].at(expected, (), values[2])
    device_target = on(backend, target)
    for v in values:  # a 0-d target takes one value per call, as index_put's 0-d case does
        backend.scatter_reduce(device_target, (), on(backend, np.array(v)), reduce)
    assert back(backend, device_target).shape == ()
    np.testing.assert_array_equal(back(backend, device_target), expected)


# -- the dtypes a backend declares ------------------------------------------------------------

class _NoBfloat16Backend(NumpyBackend):
    """A NumPy-backed device declaring that it has no bfloat16 arrays, as CuPy before 14."""
    device_type = "nobf16dev"
    supported_dtypes = frozenset(np.dtype(n) for n in (
        "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64",
        "complex64", "complex128"))
    dtype_support_note = "this test device has no bfloat16 arrays"

    def __init__(self, index=0):
        super().__init__()
        self.index = index


@pytest.fixture(scope="module")
def no_bf16_device():
    from ember.backends import register_backend, is_known_device_type
    if not is_known_device_type("nobf16dev"):
        register_backend("nobf16dev", _NoBfloat16Backend)
    return "nobf16dev"


def test_numpy_backend_supports_every_dtype():
    import ember._dtype as dt
    backend = NumpyBackend()
    assert backend.supported_dtypes is None
    assert all(backend.supports_dtype(d.np) for d in dt._BY_NAME.values())


def test_an_unsupported_dtype_is_a_named_error_on_every_way_onto_the_device(no_bf16_device):
    import ember
    message = r"bfloat16 is not supported on nobf16dev:0 \(this test device has no bfloat16"
    with pytest.raises(TypeError, match="zeros: " + message):
        ember.zeros(3, dtype=ember.bfloat16, device=no_bf16_device)
    with pytest.raises(TypeError, match="full: " + message):
        ember.full((2,), 1.5, dtype=ember.bfloat16, device=no_bf16_device)
    with pytest.raises(TypeError, match="creating a tensor: " + message):
        ember.tensor([1.0, 2.0], dtype=ember.bfloat16, device=no_bf16_device)
    with pytest.raises(TypeError, match=r"to\(\): " + message):
        ember.ones(2, dtype=ember.bfloat16).to(no_bf16_device)
    on_device = ember.ones(2, device=no_bf16_device)
    with pytest.raises(TypeError, match=r"to\(\): " + message):
        on_device.to(ember.bfloat16)
    # the dtypes it has still work, and the CPU keeps bfloat16
    assert on_device.to(ember.float16).dtype is ember.float16
    assert ember.zeros(2, dtype=ember.bfloat16).dtype is ember.bfloat16


def test_cupy_backend_declares_bfloat16_from_cupy_14_on():
    import ml_dtypes
    from types import SimpleNamespace
    from ember.backends.cupy_backend import _dtypes_of
    bf16 = np.dtype(ml_dtypes.bfloat16)
    new, note = _dtypes_of(SimpleNamespace(__version__="14.2.0"))
    assert bf16 in new and np.dtype(np.complex64) in new and note == ""
    old, note = _dtypes_of(SimpleNamespace(__version__="13.6.0"))
    assert bf16 not in old and np.dtype(np.float16) in old
    assert "CuPy 13.6.0 has no bfloat16 arrays" in note
    assert CupyConformanceBackend().supports_dtype(bf16)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.complex64])
@pytest.mark.parametrize("beta", [1.0, 0.9])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "empty", "0-d"])
def test_axpby_is_alpha_x_plus_beta_y_in_place(backend, dtype, beta, layout):
    rng = np.random.default_rng(0)
    shape = {"contiguous": (7, 33), "transposed": (33, 7), "empty": (0, 4), "0-d": ()}[layout]
    x = random_array(rng, shape, dtype)
    y = random_array(rng, shape, dtype)
    if layout == "transposed":
        x, y = x.T, y.T
    wide = np.complex128 if np.dtype(dtype).kind == "c" else np.float64
    expected = (np.asarray(x, wide) * -0.25 + np.asarray(y, wide) * beta).astype(dtype)
    y_dev = on(backend, y)
    if layout == "transposed":
        y_dev = y_dev.T.copy().T  # keep it a non-contiguous view on the device too
    backend.axpby(y_dev, -0.25, on(backend, x), beta)
    tol = 1e-3 if dtype == np.float16 else 1e-6
    np.testing.assert_allclose(back(backend, y_dev), expected, rtol=tol, atol=tol)


def test_axpby_reads_an_overlapping_x_before_writing_y():
    backend = NumpyBackend()
    base = np.arange(10, dtype=np.float32)
    y, x = base[1:9], base[0:8]
    expected = 2.0 * x.copy() + y.copy()
    backend.axpby(y, 2.0, x)
    np.testing.assert_array_equal(y, expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul_of_few_rows_by_a_transposed_weight(backend, dtype):
    # x @ W.T at 1-64 rows (the rewrite OpenBLAS is faster with covers 2-48): NumPy's product,
    # C-contiguous like it, through matmul and matmul_into (plain and accumulating)
    rng = np.random.default_rng(0)
    w = rng.standard_normal((512, 300)).astype(dtype)
    tol = 1e-4 if dtype == np.float32 else 1e-12
    for m in (1, 2, 3, 8, 33, 48, 49, 64):
        x = rng.standard_normal((m, 300)).astype(dtype)
        want = x @ w.T
        got = back(backend, backend.matmul(on(backend, x), on(backend, w).T))
        assert got.shape == want.shape and got.dtype == want.dtype and got.flags.c_contiguous
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
        out = on(backend, np.ones((m, 512), dtype))
        backend.matmul_into(out, on(backend, x), on(backend, w).T, accumulate=True)
        np.testing.assert_allclose(back(backend, out), want + 1, rtol=tol, atol=tol)
        backend.matmul_into(out, on(backend, x), on(backend, w).T)
        np.testing.assert_allclose(back(backend, out), want, rtol=tol, atol=tol)
