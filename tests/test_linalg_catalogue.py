"""``ember.linalg`` beyond the op table: PyTorch's exact error messages (``LinAlgError`` for
singular and non-positive-definite input), the gradients PyTorch defines or refuses at special
inputs, invariants of decompositions whose outputs are defined up to sign, and the result types.
The forward/backward/gradcheck comparisons of every op are rows in
``tests/opinfo/ops_linalg.py``."""
import warnings

import numpy as np
import pytest
import torch

import ember
from torch_compare import compare, compare_error

SINGULAR = [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 1.0, 1.0]]
NOT_PD = [[1.0, 2.0], [2.0, 1.0]]


def _pair(values, dtype="float64", requires_grad=False):
    arr = np.asarray(values, dtype=dtype)
    t = torch.tensor(arr, requires_grad=requires_grad)
    e = ember.tensor(arr, requires_grad=requires_grad)
    return t, e


def _linalg_error(fn):
    """Both libraries raise their LinAlgError (a RuntimeError) with the same message."""
    with pytest.raises(torch.linalg.LinAlgError) as torch_error:
        fn(torch)
    with pytest.raises(ember.linalg.LinAlgError) as ember_error:
        fn(ember)
    assert isinstance(ember_error.value, RuntimeError)
    assert str(ember_error.value) == str(torch_error.value).replace("torch.", "ember.")


def _lib_tensor(lib, values, dtype="float64"):
    return lib.tensor(np.asarray(values, dtype=dtype))


# ---- LinAlgError ------------------------------------------------------------------------------

def test_linalg_error_is_a_runtime_error():
    assert issubclass(ember.linalg.LinAlgError, RuntimeError)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_inv_singular_names_the_zero_pivot(dtype):
    _linalg_error(lambda lib: lib.linalg.inv(_lib_tensor(lib, SINGULAR, dtype)))
    _linalg_error(lambda lib: lib.linalg.inv(lib.zeros(3, 3)))
    _linalg_error(lambda lib: lib.inverse(_lib_tensor(lib, SINGULAR, dtype)))
    _linalg_error(lambda lib: lib.linalg.inv_ex(_lib_tensor(lib, SINGULAR), check_errors=True))


def test_inv_singular_in_a_batch_names_the_batch_element():
    def batch(lib):
        return lib.stack([lib.eye(3, dtype=lib.float64), _lib_tensor(lib, SINGULAR),
                          lib.zeros(3, 3, dtype=lib.float64)])
    _linalg_error(lambda lib: lib.linalg.inv(batch(lib)))
    _linalg_error(lambda lib: lib.linalg.inv(batch(lib).reshape(3, 1, 3, 3)))


def test_inv_ex_reports_info_per_matrix():
    def batch(lib):
        return lib.stack([lib.eye(3, dtype=lib.float64) * 2, _lib_tensor(lib, SINGULAR),
                          lib.zeros(3, 3, dtype=lib.float64)])
    t_res = torch.linalg.inv_ex(batch(torch))
    e_res = ember.linalg.inv_ex(batch(ember))
    assert e_res.info.dtype is ember.int32
    assert e_res.info.tolist() == t_res.info.tolist() == [0, 3, 1]
    np.testing.assert_allclose(e_res.inverse[0].numpy(), t_res.inverse[0].numpy())
    assert type(e_res).__name__ == "linalg_inv_ex"


def test_solve_singular():
    _linalg_error(lambda lib: lib.linalg.solve(_lib_tensor(lib, SINGULAR),
                                               lib.ones(3, dtype=lib.float64)))
    _linalg_error(lambda lib: lib.linalg.solve(
        lib.stack([lib.eye(3, dtype=lib.float64), _lib_tensor(lib, SINGULAR)]),
        lib.ones(2, 3, dtype=lib.float64)))
    t_res = torch.linalg.solve_ex(torch.tensor(SINGULAR), torch.ones(3))
    e_res = ember.linalg.solve_ex(ember.tensor(SINGULAR), ember.ones(3))
    assert e_res.info.item() == t_res.info.item() == 3


def test_cholesky_not_positive_definite():
    _linalg_error(lambda lib: lib.linalg.cholesky(_lib_tensor(lib, NOT_PD)))
    _linalg_error(lambda lib: lib.linalg.cholesky(
        lib.stack([lib.eye(2, dtype=lib.float64), _lib_tensor(lib, NOT_PD)])))
    _linalg_error(lambda lib: lib.linalg.cholesky(-lib.eye(4, dtype=lib.float64)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _linalg_error(lambda lib: lib.cholesky(_lib_tensor(lib, NOT_PD)))
    _linalg_error(lambda lib: lib.linalg.cholesky_ex(_lib_tensor(lib, NOT_PD), check_errors=True))


def test_cholesky_ex_partial_factor_and_info():
    t_res = torch.linalg.cholesky_ex(torch.tensor(NOT_PD))
    e_res = ember.linalg.cholesky_ex(ember.tensor(NOT_PD))
    assert e_res.info.item() == t_res.info.item() == 2
    np.testing.assert_allclose(e_res.L.numpy(), t_res.L.numpy())


def test_svd_and_eigh_of_non_finite_input():
    _linalg_error(lambda lib: lib.linalg.svd(lib.full((3, 3), float("nan"))))
    with pytest.raises(ember.linalg.LinAlgError, match="linalg.eigh: The algorithm failed"):
        ember.linalg.eigh(ember.full((3, 3), float("nan")))


# ---- argument errors, with PyTorch's messages -------------------------------------------------

ERROR_CASES = {
    "inv_int": lambda lib: lib.linalg.inv(lib.ones(3, 3, dtype=lib.int64)),
    "inv_half": lambda lib: lib.linalg.inv(lib.ones(3, 3, dtype=lib.float16)),
    "inv_1d": lambda lib: lib.linalg.inv(lib.ones(3)),
    "inv_non_square": lambda lib: lib.linalg.inv(lib.ones(3, 4)),
    "det_half": lambda lib: lib.linalg.det(lib.ones(3, 3, dtype=lib.bfloat16)),
    "det_non_square": lambda lib: lib.linalg.det(lib.ones(2, 3, 4)),
    "slogdet_non_square": lambda lib: lib.linalg.slogdet(lib.ones(3, 4)),
    "logdet_non_square": lambda lib: lib.logdet(lib.ones(3, 4)),
    "logdet_int": lambda lib: lib.logdet(lib.eye(3, dtype=lib.int64)),
    "solve_bad_vector": lambda lib: lib.linalg.solve(lib.eye(3), lib.ones(4)),
    "solve_bad_matrix": lambda lib: lib.linalg.solve(lib.eye(3), lib.ones(4, 2)),
    "solve_bad_left": lambda lib: lib.linalg.solve(lib.eye(3), lib.ones(2, 4), left=False),
    "solve_batch": lambda lib: lib.linalg.solve(lib.randn(2, 3, 3), lib.ones(3, 3, 2)),
    "solve_dtype": lambda lib: lib.linalg.solve(lib.eye(3), lib.ones(3, dtype=lib.float64)),
    "solve_int": lambda lib: lib.linalg.solve(lib.eye(3, dtype=lib.int64),
                                              lib.ones(3, dtype=lib.int64)),
    "solve_half": lambda lib: lib.linalg.solve(lib.eye(3, dtype=lib.float16),
                                               lib.ones(3, dtype=lib.float16)),
    "cholesky_non_square": lambda lib: lib.linalg.cholesky(lib.ones(3, 4)),
    "cholesky_int": lambda lib: lib.linalg.cholesky(lib.ones(3, 3, dtype=lib.int32)),
    "cholesky_half": lambda lib: lib.linalg.cholesky(lib.ones(3, 3, dtype=lib.float16)),
    "qr_mode": lambda lib: lib.linalg.qr(lib.ones(3, 3), mode="foo"),
    "qr_1d": lambda lib: lib.linalg.qr(lib.ones(3)),
    "qr_half": lambda lib: lib.linalg.qr(lib.ones(3, 3, dtype=lib.float16)),
    "svd_int": lambda lib: lib.linalg.svd(lib.ones(3, 3, dtype=lib.int64)),
    "svd_half": lambda lib: lib.linalg.svdvals(lib.ones(3, 3, dtype=lib.float16)),
    "eigh_uplo": lambda lib: lib.linalg.eigh(lib.eye(3), UPLO="X"),
    "eigh_int": lambda lib: lib.linalg.eigh(lib.ones(3, 3, dtype=lib.int64)),
    "eigh_non_square": lambda lib: lib.linalg.eigvalsh(lib.ones(3, 4)),
    "pinv_1d": lambda lib: lib.linalg.pinv(lib.ones(3)),
    "pinv_half": lambda lib: lib.linalg.pinv(lib.ones(3, 3, dtype=lib.float16)),
    "matrix_power_float_n": lambda lib: lib.linalg.matrix_power(lib.eye(3), 2.0),
    "matrix_power_int_negative": lambda lib: lib.linalg.matrix_power(
        lib.ones(3, 3, dtype=lib.int64), -1),
    "matrix_power_non_square": lambda lib: lib.linalg.matrix_power(lib.ones(3, 4), 2),
    "matrix_rank_1d": lambda lib: lib.linalg.matrix_rank(lib.ones(3)),
    "matrix_rank_int": lambda lib: lib.linalg.matrix_rank(lib.ones(3, 3, dtype=lib.int64)),
    "lstsq_driver": lambda lib: lib.linalg.lstsq(lib.ones(5, 3), lib.ones(5, 2), driver="x"),
    "lstsq_shape": lambda lib: lib.linalg.lstsq(lib.ones(5, 3), lib.ones(4, 2)),
    "lstsq_dtype": lambda lib: lib.linalg.lstsq(lib.ones(5, 3),
                                                lib.ones(5, 2, dtype=lib.float64)),
    "lstsq_1d": lambda lib: lib.linalg.lstsq(lib.ones(5), lib.ones(5)),
    "cross_length": lambda lib: lib.linalg.cross(lib.ones(4), lib.ones(4)),
    "cross_ndim": lambda lib: lib.linalg.cross(lib.ones(2, 1, 3), lib.ones(4, 3)),
    "cross_broadcast": lambda lib: lib.linalg.cross(lib.ones(2, 3), lib.ones(4, 3)),
    "cross_dtype": lambda lib: lib.linalg.cross(lib.ones(3), lib.ones(3, dtype=lib.float64)),
    "cross_no_size_3": lambda lib: lib.cross(lib.ones(4, 2), lib.ones(4, 2)),
    "multi_dot_one": lambda lib: lib.linalg.multi_dot([lib.ones(3, 3)]),
    "multi_dot_first_3d": lambda lib: lib.linalg.multi_dot([lib.ones(2, 2, 2), lib.ones(2, 2)]),
    "multi_dot_middle_3d": lambda lib: lib.linalg.multi_dot(
        [lib.ones(2, 2), lib.ones(2, 2, 2), lib.ones(2, 2)]),
    "multi_dot_last_3d": lambda lib: lib.linalg.multi_dot([lib.ones(2, 2), lib.ones(2, 2, 2)]),
    "multi_dot_shapes": lambda lib: lib.linalg.multi_dot([lib.ones(3, 3), lib.ones(4, 2)]),
    "multi_dot_dtype": lambda lib: lib.linalg.multi_dot(
        [lib.ones(3, 3), lib.ones(3, 2, dtype=lib.float64)]),
    "vecdot_size": lambda lib: lib.linalg.vecdot(lib.ones(3), lib.ones(4)),
    "vecdot_dtype": lambda lib: lib.linalg.vecdot(lib.ones(3), lib.ones(3, dtype=lib.float64)),
    "vecdot_int": lambda lib: lib.linalg.vecdot(lib.ones(3, dtype=lib.int64),
                                                lib.ones(3, dtype=lib.int64)),
    "matrix_exp_non_square": lambda lib: lib.linalg.matrix_exp(lib.ones(3, 4)),
    "matrix_exp_int": lambda lib: lib.linalg.matrix_exp(lib.ones(3, 3, dtype=lib.int64)),
    "solve_triangular_1d_b": lambda lib: lib.linalg.solve_triangular(lib.eye(3), lib.ones(3),
                                                                     upper=True),
    "solve_triangular_shapes": lambda lib: lib.linalg.solve_triangular(
        lib.eye(3), lib.ones(2, 4), upper=True, left=False),
    "triangular_solve_shapes": lambda lib: lib.triangular_solve(lib.ones(4, 2), lib.eye(3)),
    "cholesky_solve_1d": lambda lib: lib.cholesky_solve(lib.ones(3), lib.eye(3)),
    "cholesky_solve_shapes": lambda lib: lib.cholesky_solve(lib.ones(4, 2), lib.eye(3)),
    "cholesky_solve_dtype": lambda lib: lib.cholesky_solve(lib.ones(3, 2),
                                                           lib.eye(3, dtype=lib.float64)),
    "cholesky_inverse_1d": lambda lib: lib.cholesky_inverse(lib.ones(3)),
    "vander_n": lambda lib: lib.linalg.vander(lib.ones(3), N=1),
    "vander_bool": lambda lib: lib.linalg.vander(lib.ones(3, dtype=lib.bool)),
    "norm_3d_ord": lambda lib: lib.linalg.norm(lib.ones(2, 2, 2), ord=2),
    "norm_3_dims": lambda lib: lib.linalg.norm(lib.ones(3, 3, 3), dim=(0, 1, 2)),
    "norm_str_vector_dim": lambda lib: lib.linalg.norm(lib.ones(3, 3), "fro", dim=1),
    "norm_fro_1d": lambda lib: lib.linalg.norm(lib.ones(3), "fro"),
    "vector_norm_int": lambda lib: lib.linalg.vector_norm(lib.ones(3, dtype=lib.int64)),
    "vector_norm_str_ord": lambda lib: lib.linalg.vector_norm(lib.ones(3), "fro"),
    "vector_norm_narrowing": lambda lib: lib.linalg.vector_norm(
        lib.ones(3, dtype=lib.float64), dtype=lib.float32),
    "vector_norm_int_dtype": lambda lib: lib.linalg.vector_norm(lib.ones(3), dtype=lib.int64),
    "matrix_norm_ord": lambda lib: lib.linalg.matrix_norm(lib.ones(3, 3), 3),
    "matrix_norm_str_ord": lambda lib: lib.linalg.matrix_norm(lib.ones(3, 3), "foo"),
    "matrix_norm_dims": lambda lib: lib.linalg.matrix_norm(lib.ones(3, 3), dim=(0, 0)),
    "matrix_norm_one_dim": lambda lib: lib.linalg.matrix_norm(lib.ones(3, 3), dim=(0,)),
    "matrix_norm_half_nuc": lambda lib: lib.linalg.matrix_norm(
        lib.ones(3, 3, dtype=lib.float16), "nuc"),
    "lu_factor_singular": lambda lib: lib.linalg.lu_factor(lib.zeros(3, 3)),
    "lu_factor_ex_singular_batch": lambda lib: lib.linalg.lu_factor_ex(
        lib.zeros(2, 3, 3), check_errors=True),
    "lu_factor_1d": lambda lib: lib.linalg.lu_factor(lib.ones(3)),
    "lu_factor_ex_1d": lambda lib: lib.linalg.lu_factor_ex(lib.ones(3)),
    "lu_1d": lambda lib: lib.linalg.lu(lib.ones(3)),
    "lu_no_pivot": lambda lib: lib.linalg.lu(lib.ones(3, 3), pivot=False),
    "lu_int": lambda lib: lib.linalg.lu(lib.ones(3, 3, dtype=lib.int64)),
    "lu_unpack_1d": lambda lib: lib.lu_unpack(lib.ones(3), lib.ones(3, dtype=lib.int32)),
    "lu_solve_1d_b": lambda lib: lib.linalg.lu_solve(*lib.linalg.lu_factor(lib.eye(3)),
                                                     lib.ones(3)),
    "lu_solve_shapes": lambda lib: lib.linalg.lu_solve(*lib.linalg.lu_factor(lib.eye(3)),
                                                       lib.ones(4, 2)),
}


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_argument_errors_match_pytorch(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compare_error(ERROR_CASES[case])


def test_errors_name_the_offending_shape():
    with pytest.raises(RuntimeError, match=r"they are 3 by 4 matrices"):
        ember.linalg.inv(ember.ones(3, 4))
    with pytest.raises(RuntimeError, match=r"\(3x3 and 4x2\)"):
        ember.linalg.solve(ember.eye(3), ember.ones(4, 2))


# ---- gradients at special inputs --------------------------------------------------------------

def test_det_gradient_at_a_singular_matrix_is_the_adjugate():
    """PyTorch 2.13 returns a zero gradient when det(A) is exactly 0 (its own gradcheck fails
    there); Ember returns the adjugate, the limit of PyTorch's gradient at nearby matrices."""
    for values in (SINGULAR, [[1.0, 2.0], [2.0, 4.0]], np.zeros((3, 3))):
        e = ember.tensor(np.asarray(values), requires_grad=True)
        assert ember.autograd.gradcheck(ember.linalg.det, (e,))
        nearby = torch.tensor(np.asarray(values) + 1e-7 * np.eye(len(values)),
                              requires_grad=True)
        torch.linalg.det(nearby).backward()
        (ember.linalg.det(e)).backward()
        np.testing.assert_allclose(e.grad.numpy(), nearby.grad.numpy(), atol=1e-5)


def test_det_gradient_in_a_batch_with_one_singular_matrix():
    rng = np.random.default_rng(0)
    values = np.stack([rng.standard_normal((3, 3)), np.asarray(SINGULAR)])
    t, e = _pair(values, requires_grad=True)
    torch.linalg.det(t).sum().backward()
    ember.linalg.det(e).sum().backward()
    np.testing.assert_allclose(e.grad[0].numpy(), t.grad[0].numpy(), atol=1e-10)
    assert ember.autograd.gradcheck(lambda a: ember.linalg.det(a),
                                    (ember.tensor(values, requires_grad=True),))


def test_svd_full_matrices_backward_uses_the_reduced_factors():
    rng = np.random.default_rng(1)
    t, e = _pair(rng.standard_normal((4, 3)), requires_grad=True)
    tu, ts, tvh = torch.linalg.svd(t, full_matrices=True)
    eu, es, evh = ember.linalg.svd(e, full_matrices=True)
    # A sign-invariant function of U's first k columns, of S and of Vh.
    (tu[:, :3] ** 2 * torch.arange(3.0)).sum().add(ts.sum()).add((tvh ** 2)[0].sum()).backward()
    (eu[:, :3] ** 2 * ember.arange(3.0)).sum().add(es.sum()).add((evh ** 2)[0].sum()).backward()
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), atol=1e-9)


@pytest.mark.parametrize("mode,shape", [("r", (4, 3)), ("complete", (4, 3))])
def test_qr_backward_refusals(mode, shape):
    def run(lib):
        a = lib.ones(*shape, dtype=lib.float64) + lib.eye(*shape, dtype=lib.float64)
        a.requires_grad_(True)
        q, r = lib.linalg.qr(a, mode=mode)
        r.sum().backward()
    compare_error(run)


def test_qr_complete_wide_is_differentiable():
    rng = np.random.default_rng(2)
    t, e = _pair(rng.standard_normal((3, 5)), requires_grad=True)
    tq, tr = torch.linalg.qr(t, mode="complete")
    eq, er = ember.linalg.qr(e, mode="complete")
    (tr.diagonal().abs().sum() + (tq ** 2)[0].sum()).backward()
    (er.diagonal().abs().sum() + (eq ** 2)[0].sum()).backward()
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), atol=1e-9)


def test_eigh_gradient_is_symmetric_like_pytorch():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 4))
    t, e = _pair(x + x.T, requires_grad=True)
    cot = rng.standard_normal((4, 4))
    (torch.linalg.eigh(t)[1].abs() * torch.tensor(cot)).sum().backward()
    (ember.linalg.eigh(e)[1].abs() * ember.tensor(cot)).sum().backward()
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), atol=1e-9)


def test_matrix_power_zero_keeps_the_graph():
    t, e = _pair(np.eye(3) * 2, requires_grad=True)
    tr, er = torch.linalg.matrix_power(t, 0), ember.linalg.matrix_power(e, 0)
    assert er.requires_grad == tr.requires_grad
    er.sum().backward()
    assert float(e.grad.abs().sum()) == 0


# ---- invariants of the decompositions -----------------------------------------------------------

def _orthonormal_columns(q):
    k = q.shape[-1]
    np.testing.assert_allclose((q.mT @ q).numpy(), np.broadcast_to(np.eye(k), q.shape[:-2] +
                                                                 (k, k)), atol=1e-5)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 6, 6)])
def test_qr_svd_eigh_reconstruct_the_input(shape):
    rng = np.random.default_rng(4)
    a = ember.tensor(rng.standard_normal(shape).astype(np.float32))
    q, r = ember.linalg.qr(a)
    _orthonormal_columns(q)
    np.testing.assert_allclose(r.numpy(), np.triu(r.numpy()), atol=0)
    np.testing.assert_allclose((q @ r).numpy(), a.numpy(), atol=1e-5)
    u, s, vh = ember.linalg.svd(a, full_matrices=False)
    _orthonormal_columns(u)
    np.testing.assert_allclose(((u * s.unsqueeze(-2)) @ vh).numpy(), a.numpy(), atol=1e-5)
    assert np.all(np.diff(s.numpy(), axis=-1) <= 0)
    if shape[-1] == shape[-2]:
        sym = a + a.mT
        w, v = ember.linalg.eigh(sym)
        _orthonormal_columns(v)
        np.testing.assert_allclose(((v * w.unsqueeze(-2)) @ v.mT).numpy(), sym.numpy(),
                                   atol=1e-4)
        assert np.all(np.diff(w.numpy(), axis=-1) >= 0)


def test_pinv_satisfies_the_penrose_conditions():
    rng = np.random.default_rng(5)
    a = ember.tensor(rng.standard_normal((3, 2)) @ rng.standard_normal((2, 5)))  # rank 2
    p = ember.linalg.pinv(a)
    np.testing.assert_allclose((a @ p @ a).numpy(), a.numpy(), atol=1e-10)
    np.testing.assert_allclose((p @ a @ p).numpy(), p.numpy(), atol=1e-10)
    np.testing.assert_allclose((a @ p).mT.numpy(), (a @ p).numpy(), atol=1e-10)
    assert ember.linalg.matrix_rank(a).item() == 2


def test_matrix_exp_of_a_rotation_generator():
    theta = 0.7
    gen = ember.tensor([[0.0, -theta], [theta, 0.0]], dtype=ember.float64)
    expected = [[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]]
    np.testing.assert_allclose(ember.linalg.matrix_exp(gen).numpy(), expected, atol=1e-14)
    big = ember.tensor(np.diag([8.0, -3.0, 0.5]))
    np.testing.assert_allclose(ember.linalg.matrix_exp(big).numpy(),
                               np.diag(np.exp([8.0, -3.0, 0.5])), rtol=1e-13)


def test_multi_dot_picks_the_cheap_order():
    from ember.ops.linalg import _matrix_chain_order
    # (10x100)(100x5)(5x50): (AB)C costs 7500 vs A(BC) 75000.
    assert _matrix_chain_order([10, 100, 5, 50])[0][2] == 1
    assert _matrix_chain_order([50, 5, 100, 10])[0][2] == 0


# ---- result types, names, device rules --------------------------------------------------------

def test_result_types_and_fields():
    a = ember.eye(3, dtype=ember.float64) * 2
    assert type(ember.linalg.slogdet(a)).__name__ == "linalg_slogdet"
    assert type(ember.slogdet(a)).__name__ == "slogdet"
    assert ember.linalg.slogdet(a).logabsdet.item() == pytest.approx(3 * np.log(2))
    assert type(ember.linalg.qr(a)).__name__ == "linalg_qr" and ember.linalg.qr(a).R.shape == (3, 3)
    assert type(ember.linalg.svd(a)).__name__ == "linalg_svd" and ember.linalg.svd(a).Vh.shape
    assert type(ember.svd(a)).__name__ == "svd" and ember.svd(a).V.shape == (3, 3)
    assert ember.linalg.eigh(a).eigenvalues.tolist() == [2.0, 2.0, 2.0]
    res = ember.linalg.lstsq(a, a, driver="gelsd")
    assert res.rank.item() == 3 and res.singular_values.shape == (3,)
    assert "linalg_slogdet(" in repr(ember.linalg.slogdet(a))


def test_torch_svd_compute_uv_false_returns_zero_factors():
    a = torch.randn(4, 3)
    e = ember.tensor(a.numpy())
    tu, ts, tv = torch.svd(a, compute_uv=False)
    eu, es, ev = ember.svd(e, compute_uv=False)
    assert eu.shape == tu.shape and ev.shape == tv.shape
    assert float(eu.abs().sum()) == 0 and float(ev.abs().sum()) == 0
    np.testing.assert_allclose(es.numpy(), ts.numpy(), rtol=1e-5)


def test_grad_fn_names_follow_pytorch():
    a = ember.eye(3, dtype=ember.float64).requires_grad_()
    assert ember.linalg.inv(a).grad_fn.name() == "LinalgInvExBackward0"
    assert ember.linalg.det(a).grad_fn.name() == "LinalgDetBackward0"
    assert ember.linalg.svd(a)[1].grad_fn.name() == "LinalgSvdBackward0"
    assert ember.linalg.eigh(a)[0].grad_fn.name() == "LinalgEighBackward0"
    assert ember.linalg.cholesky(a).grad_fn.name() == "LinalgCholeskyExBackward0"


def test_methods_and_namespaces_exist():
    for name in ("inverse", "det", "logdet", "slogdet", "cholesky", "cholesky_solve",
                 "cholesky_inverse", "pinverse", "matrix_power", "matrix_exp", "qr", "svd",
                 "triangular_solve", "cross", "lu", "lu_solve"):
        assert hasattr(ember.Tensor, name), name
        assert hasattr(ember, name), name
    for name in ("norm", "vector_norm", "matrix_norm", "inv", "inv_ex", "solve", "solve_ex",
                 "det", "slogdet", "cholesky", "cholesky_ex", "qr", "svd", "svdvals", "eigh",
                 "eigvalsh", "pinv", "lstsq", "matrix_power", "matrix_rank", "cross",
                 "multi_dot", "vecdot", "matrix_exp", "solve_triangular", "diagonal", "matmul",
                 "vander", "lu_factor", "lu_factor_ex", "lu", "lu_solve", "eig", "eigvals",
                 "LinAlgError"):
        assert hasattr(ember.linalg, name), name


def test_mixed_devices_are_refused():
    a = ember.eye(3)
    b = ember.ones(3, 2, device="testdev")
    for fn in (lambda: ember.linalg.solve(a, b), lambda: ember.linalg.lstsq(a, b),
               lambda: ember.linalg.solve_triangular(a, b, upper=True),
               lambda: ember.cholesky_solve(b, a)):
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            fn()


# ---- one batched LAPACK call per op --------------------------------------------------------------

@pytest.mark.parametrize("op", ["inv", "solve", "cholesky", "svd", "eigh", "det", "qr"])
def test_batched_ops_make_one_lapack_call(op, monkeypatch):
    """The batch goes to NumPy's gufunc whole: the LAPACK wrapper runs once, not per matrix."""
    calls = []
    real = getattr(np.linalg, op)

    def counting(*args, **kwargs):
        calls.append(args[0].shape)
        return real(*args, **kwargs)
    monkeypatch.setattr(np.linalg, op, counting)
    rng = np.random.default_rng(6)
    x = rng.standard_normal((16, 5, 5))
    a = ember.tensor(x @ np.swapaxes(x, -1, -2) + 5 * np.eye(5))
    call = {"solve": lambda: ember.linalg.solve(a, ember.ones(16, 5, 2, dtype=ember.float64))}
    call.get(op, lambda: getattr(ember.linalg, op)(a))()
    assert calls == [(16, 5, 5)]


# ---- eig / eigvals: forward only -------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_eig_matches_pytorch_and_diagonalises(dtype):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((2, 4, 4)).astype(dtype)
    tw, tv = torch.linalg.eig(torch.tensor(a))
    ew, ev = ember.linalg.eig(ember.tensor(a))
    assert str(ew.dtype).split(".")[-1] == str(tw.dtype).split(".")[-1]
    tol = 1e-4 if dtype == "float32" else 1e-10
    np.testing.assert_allclose(ew.numpy(), tw.numpy(), atol=tol)
    np.testing.assert_allclose(ember.linalg.eigvals(ember.tensor(a)).numpy(), tw.numpy(), atol=tol)
    # A V = V diag(w), and eigenvectors have unit norm (their phase is LAPACK's choice).
    v, w = ev.numpy(), ew.numpy()
    np.testing.assert_allclose(a @ v, v * w[..., None, :], atol=tol * 10)
    np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1, atol=tol)


def test_eig_errors_and_refused_gradient():
    compare_error(lambda lib: lib.linalg.eig(lib.ones(3, 4)))
    compare_error(lambda lib: lib.linalg.eig(lib.ones(3, 3, dtype=lib.int64)))
    compare_error(lambda lib: lib.linalg.eigvals(lib.ones(3)))
    a = ember.randn(3, 3, requires_grad=True)
    w = ember.linalg.eigvals(a)
    assert w.requires_grad
    with pytest.raises(NotImplementedError, match="not implemented"):
        w.abs().sum().backward()


def test_norm_nuclear_goes_through_linalg():
    a = np.random.default_rng(5).standard_normal((2, 3, 4))
    for dim in [(1, 2), None]:
        data = a if dim else a[0]
        expected = torch.norm(torch.tensor(data), p="nuc", dim=dim)
        actual = ember.norm(ember.tensor(data), p="nuc", dim=dim)
        np.testing.assert_allclose(actual.numpy(), expected.numpy(), rtol=1e-10)


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", 1, -1, float("inf"), -float("inf")])
def test_cond_matches_torch(p):
    m = np.random.default_rng(6).standard_normal((2, 4, 4))
    expected = torch.linalg.cond(torch.tensor(m), p)
    np.testing.assert_allclose(ember.linalg.cond(ember.tensor(m), p).numpy(), expected.numpy(),
                               rtol=1e-9)


def test_tensorinv_tensorsolve_householder_product_match_torch():
    rng = np.random.default_rng(7)
    t = rng.standard_normal((4, 6, 8, 3))
    np.testing.assert_allclose(ember.linalg.tensorinv(ember.tensor(t), ind=2).numpy(),
                               torch.linalg.tensorinv(torch.tensor(t), ind=2).numpy(), atol=1e-10)
    a, b = rng.standard_normal((6, 2, 3)), rng.standard_normal((2, 3))
    np.testing.assert_allclose(
        ember.linalg.tensorsolve(ember.tensor(a), ember.tensor(b), dims=(0,)).numpy(),
        torch.linalg.tensorsolve(torch.tensor(a), torch.tensor(b), dims=(0,)).numpy(),
        atol=1e-10)
    a, tau = rng.standard_normal((5, 3)), rng.standard_normal(3)
    np.testing.assert_allclose(
        ember.linalg.householder_product(ember.tensor(a), ember.tensor(tau)).numpy(),
        torch.linalg.householder_product(torch.tensor(a), torch.tensor(tau)).numpy(),
        atol=1e-12)
    x = ember.tensor(rng.standard_normal((4, 4)), requires_grad=True)
    assert ember.autograd.gradcheck(lambda m: ember.linalg.tensorinv(m.reshape(2, 2, 4), ind=2), (x,))


def test_cond_and_tensorinv_errors():
    compare_error(lambda lib: lib.linalg.cond(lib.ones(3)))
    compare_error(lambda lib: lib.linalg.cond(lib.ones(2, 3), "fro"))
    compare_error(lambda lib: lib.linalg.tensorinv(lib.ones(2, 3), ind=1))


# ---- geqrf, orgqr, ormqr -------------------------------------------------------------------

def test_geqrf_named_fields_and_no_derivative():
    a = np.random.default_rng(0).normal(size=(4, 3))
    res = ember.tensor(a).geqrf()
    assert res.a is res[0] and res.tau is res[1]
    compare(lambda lib: lib.tensor(a).orgqr(lib.tensor(a).geqrf().tau))

    def backward(lib):
        x = lib.tensor(a, requires_grad=True)
        lib.geqrf(x).a.sum().backward()
    compare_error(backward)


def test_householder_round_trip_is_qr():
    a = ember.tensor(np.random.default_rng(1).normal(size=(3, 6, 4)))
    h, tau = ember.geqrf(a)
    q = ember.orgqr(h, tau)
    r = ember.triu(h[..., :4, :])
    np.testing.assert_allclose(ember.matmul(q, r).numpy(), a.numpy(), rtol=1e-12, atol=1e-12)
    eye = ember.eye(6, dtype=ember.float64).expand(3, 6, 6)
    full_q = ember.ormqr(h, tau, eye)
    np.testing.assert_allclose(ember.ormqr(h, tau, full_q, transpose=True).numpy(), eye.numpy(),
                               atol=1e-12)
