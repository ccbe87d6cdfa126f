"""The CuPy conformance device's namespace refuses what CuPy 14.2 lacks and computes what it has."""
import json
import pickle
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from conformance import strict_cupy
from conformance.strict_cupy import DeviceArray, cupyx, xp


def dev(values, dtype=np.float32):
    return xp.asarray(np.asarray(values, dtype=dtype))


def test_spec_was_generated_from_cupy_14():
    spec = json.loads((Path(strict_cupy.__file__).with_name("cupy14_api.json")).read_text())
    assert spec["cupy_version"].startswith("14.")
    # CuPy has no cupy.bfloat16 name: it takes ml_dtypes.bfloat16 (spec["bfloat16"]).
    assert "bfloat16" not in spec["dtypes"] and "float16" in spec["dtypes"]


def test_refuses_a_name_cupy_lacks():
    with pytest.raises(AttributeError, match=r"CuPy 14\.2 has no cupy\.float128"):
        xp.float128
    with pytest.raises(AttributeError, match=r"CuPy 14\.2 has no cupy\.linalg\.vector_norm"):
        xp.linalg.vector_norm


def test_refuses_a_keyword_cupy_lacks():
    a = dev([1.0, 2.0])
    with pytest.raises(TypeError, match="unexpected keyword argument 'where'"):
        xp.exp(a, where=True)
    with pytest.raises(TypeError, match="unexpected keyword argument 'initial'"):
        xp.sum(a, initial=1.0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'initial'"):
        a.sum(initial=1.0)


def test_ufunc_methods_exist_only_where_cupy_has_them():
    a = dev([1.0, 2.0, 3.0])
    with pytest.raises(NotImplementedError, match="cupy_multiply.at"):
        xp.multiply.at(a, xp.asarray([0, 0]), 2.0)
    with pytest.raises(NotImplementedError, match="cupy_maximum.reduce"):
        xp.maximum.reduce(a)
    xp.add.at(a, xp.asarray([0, 0]), 1.0)
    assert a.get().tolist() == [3.0, 2.0, 3.0]
    assert xp.multiply.reduce(a).get() == 18.0


def test_refuses_host_arrays_in_device_maths():
    a, host = dev([1.0, 2.0]), np.ones(2, dtype=np.float32)
    for attempt in (lambda: a + host, lambda: host + a, lambda: xp.exp(host),
                    lambda: xp.matmul(a, host), lambda: a[np.array([0])],
                    lambda: xp.concatenate([a, host]), lambda: xp.exp([1.0, 2.0])):
        with pytest.raises(TypeError):
            attempt()


def test_implicit_host_conversion_is_refused_like_cupy():
    a = dev([1.0, 2.0])
    with pytest.raises(TypeError, match=r"Implicit conversion to a NumPy array is not allowed\. "
                                        r"Please use `\.get\(\)`"):
        np.asarray(a)
    for name in ("__array_interface__", "ctypes"):
        assert not hasattr(a, name)
    assert not isinstance(a, np.ndarray)
    with pytest.raises(AttributeError):
        a.flags.writeable = False


def test_spec_records_cupy_bfloat16_loops():
    spec = strict_cupy.SPEC["bfloat16"]
    assert spec["char"] == "E" and not spec["cupy_has_name"]
    assert "EE->E" in strict_cupy.SPEC["modules"]["cupy"]["add"]["types"]
    assert not any("E" in t for t in strict_cupy.SPEC["modules"]["cupy"]["gcd"]["types"])
    assert "E" in spec["reduction_kernels"]["cupy_sum"]
    assert "E" not in spec["reduction_kernels"]["cupy_all"]
    assert not any("E" in t for t in spec["ufunc_kernels"]["cupy_where"])
    assert spec["creation"]["empty"]["accepted"]
    assert spec["unsupported_dtype_creation"] == {"accepted": False, "error": "ValueError",
                                                  "message": "Unsupported dtype object"}


def bf16(values):
    return xp.asarray(np.asarray(values, dtype=ml_dtypes.bfloat16))


def test_bfloat16_where_cupy_has_loops():
    a = bf16([1.5, 2.25, -3.0])
    assert xp.zeros(2, dtype=ml_dtypes.bfloat16).dtype == ml_dtypes.bfloat16
    assert dev([1.0]).astype(ml_dtypes.bfloat16).dtype == ml_dtypes.bfloat16
    host = np.asarray([1.5, 2.25, -3.0], dtype=np.float32)
    for result, expected in ((a + 1.0, host + 1), (a * a, host * host), (-a, -host),
                             (xp.exp(a), np.exp(host)), (a.sum(), host.sum()),
                             (xp.max(a), host.max())):
        # CuPy's bfloat16 loops compute in float32 and round once.
        assert result.dtype == ml_dtypes.bfloat16
        np.testing.assert_array_equal(result.get(),
                                      np.asarray(expected).astype(ml_dtypes.bfloat16))
    assert (a > 0).dtype == np.bool_ and (a > 0).get().tolist() == [True, True, False]


def test_bfloat16_takes_the_loop_cupy_picks():
    a = bf16([1.5, -3.0])
    # cupy_where has no bfloat16 loop: bfloat16 casts safely to its float32 one.
    assert xp.where(a > 0, a, a).dtype == np.float32
    assert (a + dev([1.0, 1.0])).dtype == np.float32  # bfloat16 with float32: float32
    assert xp.all(a).dtype == np.bool_ and bool(xp.all(a))  # all's float32 loop


def test_bfloat16_refused_as_cupy_refuses_or_where_not_established():
    a = bf16([1.0, 2.0])
    with pytest.raises(TypeError, match=r"Wrong type .* of arguments for cupy_gcd"):
        xp.gcd(a, a)
    with pytest.raises(TypeError, match=r"Wrong type .* of arguments for cupy_bitwise_and"):
        a & a
    for attempt in (lambda: xp.matmul(a, a), lambda: a.mean(), lambda: xp.sort(a),
                    lambda: xp.linalg.norm(a)):
        with pytest.raises(TypeError, match="bfloat16 is refused.*not established"):
            attempt()


def test_refuses_dtypes_cupy_has_no_arrays_of():
    with pytest.raises(ValueError, match="Unsupported dtype object"):
        xp.asarray(np.zeros(2, dtype=object))
    with pytest.raises(ValueError, match="Unsupported dtype"):
        xp.zeros(2, dtype=object)


def test_computes_what_numpy_computes():
    host = np.arange(12, dtype=np.float64).reshape(3, 4)
    a = xp.asarray(host)
    assert isinstance(a, DeviceArray) and isinstance(a, xp.ndarray)
    np.testing.assert_array_equal((a * 2 + 1).get(), host * 2 + 1)
    np.testing.assert_array_equal(xp.matmul(a, a.T).get(), host @ host.T)
    np.testing.assert_array_equal(a[1:, xp.asarray([0, 2])].get(), host[1:, [0, 2]])
    np.testing.assert_array_equal(a[a > 5].get(), host[host > 5])
    np.testing.assert_allclose(xp.linalg.norm(a).get(), np.linalg.norm(host))
    np.testing.assert_array_equal(np.exp(a).get(), np.exp(host))  # NumPy's ufunc dispatches
    np.testing.assert_array_equal(np.concatenate([a, a]).get(), np.concatenate([host, host]))
    b = a.copy()
    b[0] += 100
    b[:, 1] = xp.asarray(np.full(3, -1.0))
    expected = host.copy()
    expected[0] += 100
    expected[:, 1] = -1
    np.testing.assert_array_equal(b.get(), expected)
    assert float(a[1, 1]) == 5.0 and a[1, 1].item() == 5.0 and a.tolist() == host.tolist()
    assert len(a) == 3 and [row.get().tolist() for row in a] == host.tolist()
    assert pickle.loads(pickle.dumps(a)).get().tolist() == host.tolist()


def test_reductions_return_0d_arrays_like_cupy():
    a = dev([1.0, 2.0])
    total = xp.sum(a)
    assert isinstance(total, DeviceArray) and total.shape == ()
    assert isinstance(a.max(), DeviceArray) and isinstance(a[0], DeviceArray)


def test_cupyx_scatter_add_and_special_functions():
    a = dev([0.0, 0.0, 0.0])
    cupyx.scatter_add(a, xp.asarray([0, 0, 2]), dev([1.0, 2.0, 3.0]))
    assert a.get().tolist() == [3.0, 0.0, 3.0]
    x = dev([0.0, 0.5])
    np.testing.assert_allclose(cupyx.scipy.special.erf(x).get(),
                               [0.0, 0.5204998778], rtol=1e-6)
    with pytest.raises(AttributeError, match="CuPy 14.2 has no cupyx.scipy.special.owens_t_x"):
        cupyx.scipy.special.owens_t_x


def test_an_int_index_gives_a_0d_view_like_cupy():
    a = dev([1.0, 2.0, 3.0])
    element = a[1]
    element += 10
    assert element.shape == () and a.get().tolist() == [1.0, 12.0, 3.0]


def test_sparse_matrices_compute_and_refuse_like_cupyx():
    from conformance import strict_sparse as sp
    data, row, col = dev([1.0, 2.0, 3.0]), xp.asarray(np.array([0, 1, 1])), \
        xp.asarray(np.array([1, 0, 2]))
    coo = sp.coo_matrix((data, (row, col)), shape=(2, 3))
    dense = dev(np.arange(6.0).reshape(3, 2))
    expected = np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]], dtype=np.float32)
    product = coo.tocsr() @ dense
    assert isinstance(product, DeviceArray)
    np.testing.assert_allclose(product.get(), expected @ np.arange(6.0).reshape(3, 2))
    np.testing.assert_allclose(coo.T.toarray().get(), expected.T)
    csr = coo.tocsr()
    rebuilt = sp.csr_matrix((csr.data, csr.indices, csr.indptr), shape=(2, 3))
    np.testing.assert_array_equal(rebuilt.toarray().get(), expected)
    with pytest.raises(ValueError, match="row, column, and data arrays must be 1-D"):
        sp.coo_matrix((np.ones(3, np.float32), (row, col)), shape=(2, 3))  # host data
    with pytest.raises(ValueError, match="Only bool, float32, float64, complex64 and "
                                         "complex128 are supported"):
        sp.coo_matrix((xp.asarray(np.array([1, 2, 3])), (row, col)), shape=(2, 3))
    with pytest.raises(TypeError, match="host numpy.ndarray"):
        csr @ np.ones((3, 2), np.float32)
