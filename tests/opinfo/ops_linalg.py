"""Rows for ``ember.linalg`` and the top-level / Tensor spellings of the same ops.

Inputs come from ``make_input`` generators: well-conditioned matrices for inverses and
solves, symmetric positive-definite ones for Cholesky, and functions that symmetrise their input
before ``eigh``/``cholesky`` (those read one triangle only, so a gradient check must perturb
both). Outputs defined up to sign (QR, SVD and eigen vectors) are normalised inside the row's
function, by the sign of R's diagonal or of each vector's first entry, so they can be compared
(and differentiated) as they are. Exception paths with PyTorch's messages, ``LinAlgError`` and the
non-differentiable cases are in ``tests/test_linalg_catalogue.py``."""
import math

import numpy as np

from .core import OpInfo, Sample, standard_samples, FLOAT_DTYPES
from .ops_reduce import distinct_values

FLOATS = ("float32", "float64")
# Half precision is listed where PyTorch's CPU kernel refuses it: the row then checks that Ember
# refuses with the same exception type.
WITH_LOW = ("float32", "float64", "float16", "bfloat16")
F32_TOL = {"float32": (2e-4, 2e-4)}
GRAD_TOL = (5e-4, 5e-4)


def _random(rng, shape):
    return rng.uniform(-1, 1, size=shape)


def well_conditioned(rng, shape, dtype, index):
    """A square (batch of) matrices dominated by its diagonal: far from singular."""
    a = _random(rng, shape)
    if len(shape) >= 2 and shape[-1] == shape[-2] and shape[-1] > 0:
        a = a + (shape[-1] + 1) * np.eye(shape[-1])
    return a


def first_well_conditioned(rng, shape, dtype, index):
    return well_conditioned(rng, shape, dtype, index) if index == 0 else _random(rng, shape)


def spd(rng, shape, dtype, index):
    """Symmetric positive-definite matrices (other arguments: plain random)."""
    if len(shape) < 2 or shape[-1] != shape[-2]:
        return _random(rng, shape)
    x = _random(rng, shape)
    return x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])


def second_spd(rng, shape, dtype, index):
    return spd(rng, shape, dtype, index) if index == 1 else _random(rng, shape)


def spread_symmetric(rng, shape, dtype, index):
    """Symmetric matrices with well-separated eigenvalues (so eigenvectors are differentiable)."""
    n = shape[-1]
    q, _ = np.linalg.qr(_random(rng, shape))
    eigenvalues = np.arange(1, n + 1) * 1.5 - n * 0.6
    return q @ (eigenvalues[:, None] * np.swapaxes(q, -1, -2))


def spread_singular(rng, shape, dtype, index):
    """Matrices with well-separated singular values."""
    m, n = shape[-2:]
    k = min(m, n)
    u, _ = np.linalg.qr(_random(rng, shape[:-2] + (m, m)))
    v, _ = np.linalg.qr(_random(rng, shape[:-2] + (n, n)))
    s = np.zeros(shape)
    idx = np.arange(k)
    s[..., idx, idx] = np.arange(k, 0, -1) * 0.8 + 0.5
    return u @ s @ np.swapaxes(v, -1, -2)


def low_rank(rng, shape, dtype, index):
    """Rank 2 matrices."""
    m, n = shape[-2:]
    return _random(rng, shape[:-2] + (m, 2)) @ _random(rng, shape[:-2] + (2, n))


def small(rng, shape, dtype, index):
    return rng.uniform(-0.6, 0.6, size=shape)


def _kw(lib, kw):
    """Keyword arguments with dtype names turned into the library's dtype."""
    if "dtype" in kw:
        kw = dict(kw, dtype=getattr(lib, kw["dtype"]))
    return kw


def _sym(a):
    return (a + a.mT) / 2


def _column_signs(x):
    """+-1 per column: the sign of the column's first entry (never 0 for random input)."""
    return x[..., :1, :].sign()


def _qr(lib, a, **kw):
    q, r = lib.linalg.qr(a, **kw)
    signs = r.diagonal(0, -2, -1).sign()
    return q[..., :, :signs.shape[-1]] * signs.unsqueeze(-2), r[..., :signs.shape[-1], :] * \
        signs.unsqueeze(-1)


def _svd(lib, a, **kw):
    u, s, vh = lib.linalg.svd(a, **kw)
    k = s.shape[-1]
    u, vh = u[..., :, :k], vh[..., :k, :]
    signs = _column_signs(u)
    return u * signs, s, vh * signs.mT


def _torch_svd(lib, a, **kw):
    u, s, v = lib.svd(a, **kw)
    signs = _column_signs(u)
    return u * signs, s, v * signs


def _eigh(lib, a, **kw):
    w, v = lib.linalg.eigh(_sym(a), **kw)
    return w, v * _column_signs(v)


def _errors(name, fn, *shape_sets, dtypes=("float32",), make_input=None, kwargs=None):
    return OpInfo(name, fn, [Sample(s, dict(kwargs or {})) for s in shape_sets], dtypes=dtypes,
                  grad=False, gradcheck=False, make_input=make_input)


def _gradgrad(name, fn, shapes, make_input):
    """A float64 row whose gradcheck also checks second derivatives."""
    return OpInfo(name, fn, [Sample(shapes)], dtypes=("float64",), make_input=make_input,
                  gradgrad=True)


SQUARE = standard_samples(((3, 3),), ((2, 3, 3),))
SQUARE_EMPTY = SQUARE + [Sample(((0, 0),)), Sample(((2, 0, 0),))]
INF = math.inf

OPS = [
    # ---- inverses and determinants ------------------------------------------------------------
    OpInfo("linalg.inv", lambda lib, a: lib.linalg.inv(a), SQUARE_EMPTY, dtypes=FLOATS,
           make_input=well_conditioned, tol=F32_TOL, grad_tol=GRAD_TOL, gradgrad=False),
    OpInfo("linalg.inv_ex", lambda lib, a: lib.linalg.inv_ex(a), SQUARE, dtypes=FLOATS,
           make_input=well_conditioned, tol=F32_TOL, grad_tol=GRAD_TOL),
    OpInfo("inverse", lambda lib, a: lib.inverse(a), SQUARE[:2], make_input=well_conditioned,
           dtypes=FLOATS, tol=F32_TOL, grad_tol=GRAD_TOL),
    OpInfo("Tensor.inverse", lambda lib, a: a.inverse(), SQUARE[:1], dtypes=("float64",),
           make_input=well_conditioned, tol=F32_TOL, grad_tol=GRAD_TOL),
    OpInfo("linalg.det", lambda lib, a: lib.linalg.det(a), SQUARE_EMPTY, dtypes=FLOATS,
           tol=F32_TOL, grad_tol=GRAD_TOL, gradgrad=True),
    OpInfo("det", lambda lib, a: lib.det(a), SQUARE[:2], dtypes=FLOATS, tol=F32_TOL,
           grad_tol=GRAD_TOL),
    OpInfo("Tensor.det", lambda lib, a: a.det(), SQUARE[:1], dtypes=("float64",), tol=F32_TOL,
           grad_tol=GRAD_TOL),
    OpInfo("linalg.slogdet", lambda lib, a: lib.linalg.slogdet(a), SQUARE_EMPTY, dtypes=FLOATS,
           tol=F32_TOL, grad_tol=GRAD_TOL, gradgrad=True),
    OpInfo("slogdet", lambda lib, a: lib.slogdet(a), SQUARE[:2], dtypes=FLOATS, tol=F32_TOL,
           grad_tol=GRAD_TOL),
    OpInfo("Tensor.slogdet", lambda lib, a: a.slogdet(), SQUARE[:1], dtypes=("float64",),
           tol=F32_TOL, grad_tol=GRAD_TOL),
    OpInfo("logdet", lambda lib, a: lib.logdet(a), SQUARE, dtypes=FLOATS, make_input=spd,
           tol=F32_TOL, grad_tol=GRAD_TOL),
    OpInfo("logdet_negative", lambda lib, a: lib.logdet(-a), [Sample(((3, 3),))], dtypes=FLOATS,
           make_input=spd, grad=False, gradcheck=False),
    OpInfo("Tensor.logdet", lambda lib, a: a.logdet(), SQUARE[:1], dtypes=("float64",),
           make_input=spd, tol=F32_TOL, grad_tol=GRAD_TOL),

    # ---- solvers ---------------------------------------------------------------------------
    OpInfo("linalg.solve", lambda lib, a, b, **kw: lib.linalg.solve(a, b, **kw),
           standard_samples(((3, 3), (3,)), ((2, 3, 3), (2, 3, 2)), ((2, 3, 3), (2, 3)),
                            ((2, 1, 3, 3), (4, 3, 2)), ((3, 3), (2, 3, 1))) +
           [Sample(((3, 3), (2, 3)), {"left": False}), Sample(((2, 3, 3), (2, 4, 3)),
                                                             {"left": False}),
            Sample(((0, 0), (0, 2)))],
           dtypes=FLOATS, make_input=first_well_conditioned, tol=F32_TOL, grad_tol=GRAD_TOL,
           gradgrad=False),
    OpInfo("linalg.solve_ex", lambda lib, a, b: lib.linalg.solve_ex(a, b),
           [Sample(((3, 3), (3, 2))), Sample(((2, 3, 3), (2, 3)))], dtypes=FLOATS,
           make_input=first_well_conditioned, tol=F32_TOL, grad_tol=GRAD_TOL),
    _errors("linalg.solve_errors", lambda lib, a, b, **kw: lib.linalg.solve(a, b, **kw),
            ((3, 4), (3,)), ((3, 3), (4,)), ((3, 3), (4, 2)), ((2, 3, 3), (3, 3, 2)), ((3,), (3,)),
            dtypes=("float32", "int64")),
    OpInfo("linalg.solve_triangular",
           lambda lib, a, b, **kw: lib.linalg.solve_triangular(a, b, **kw),
           [Sample(((3, 3), (3, 2)), {"upper": True}), Sample(((3, 3), (3, 2)), {"upper": False}),
            Sample(((2, 3, 3), (2, 3, 4)), {"upper": True, "unitriangular": True}),
            Sample(((3, 3), (2, 3)), {"upper": False, "left": False}),
            Sample(((2, 1, 3, 3), (4, 3, 1)), {"upper": False}),
            Sample(((3, 3), (3, 2)), {"upper": True}, noncontig=True)],
           dtypes=FLOATS, make_input=first_well_conditioned, tol=F32_TOL, grad_tol=GRAD_TOL,
           gradgrad=False),
    _errors("linalg.solve_triangular_errors",
            lambda lib, a, b: lib.linalg.solve_triangular(a, b, upper=True),
            ((3, 3), (3,)), ((3, 3), (4, 2)), ((3, 4), (3, 2)), dtypes=("float32", "int64")),
    OpInfo("triangular_solve", lambda lib, b, a, **kw: lib.triangular_solve(b, a, **kw),
           [Sample(((3, 2), (3, 3))), Sample(((3, 2), (3, 3)), {"upper": False}),
            Sample(((2, 3, 2), (2, 3, 3)), {"transpose": True}),
            Sample(((3, 2), (3, 3)), {"upper": False, "transpose": True,
                                      "unitriangular": True})],
           dtypes=FLOATS, make_input=lambda rng, shape, dtype, i: well_conditioned(
               rng, shape, dtype, 0) if i == 1 else _random(rng, shape),
           tol=F32_TOL, grad_tol=GRAD_TOL),
    OpInfo("Tensor.triangular_solve", lambda lib, b, a: b.triangular_solve(a, upper=False),
           [Sample(((3, 2), (3, 3)))], dtypes=("float64",),
           make_input=lambda rng, shape, dtype, i: well_conditioned(rng, shape, dtype, 0)
           if i == 1 else _random(rng, shape), tol=F32_TOL, grad_tol=GRAD_TOL),

    # ---- Cholesky ---------------------------------------------------------------------------
    OpInfo("linalg.cholesky", lambda lib, a, **kw: lib.linalg.cholesky(_sym(a), **kw),
           SQUARE_EMPTY + [Sample(((2, 3, 3),), {"upper": True})], dtypes=FLOATS,
           make_input=spd, tol=F32_TOL, grad_tol=GRAD_TOL, gradgrad=False),
    OpInfo("linalg.cholesky_ex", lambda lib, a: lib.linalg.cholesky_ex(_sym(a)), SQUARE[:2],
           dtypes=FLOATS, make_input=spd, tol=F32_TOL, grad_tol=GRAD_TOL),
    OpInfo("cholesky", lambda lib, a, **kw: lib.cholesky(_sym(a), **kw),
           [Sample(((3, 3),)), Sample(((2, 3, 3),), {"upper": True})], dtypes=FLOATS,
           make_input=spd, tol=F32_TOL, grad_tol=GRAD_TOL),
    OpInfo("Tensor.cholesky", lambda lib, a: _sym(a).cholesky(), SQUARE[:1], dtypes=("float64",),
           make_input=spd, tol=F32_TOL, grad_tol=GRAD_TOL),
    OpInfo("cholesky_solve",
           lambda lib, b, a, **kw: lib.cholesky_solve(
               b, lib.linalg.cholesky(_sym(a), upper=kw.get("upper", False)), **kw),
           [Sample(((3, 2), (3, 3))), Sample(((2, 3, 2), (2, 3, 3)), {"upper": True}),
            Sample(((2, 3, 2), (3, 3)), noncontig=True)],
           dtypes=FLOATS, make_input=second_spd, tol=F32_TOL, grad_tol=GRAD_TOL),
    OpInfo("Tensor.cholesky_solve",
           lambda lib, b, a: b.cholesky_solve(lib.linalg.cholesky(_sym(a))),
           [Sample(((3, 2), (3, 3)))], dtypes=("float64",), make_input=second_spd, tol=F32_TOL,
           grad_tol=GRAD_TOL),
    _errors("cholesky_solve_errors", lambda lib, b, a: lib.cholesky_solve(b, a),
            ((3,), (3, 3)), ((4, 2), (3, 3)), dtypes=("float32", "float16", "int64")),
    OpInfo("cholesky_inverse",
           lambda lib, a, **kw: lib.cholesky_inverse(
               lib.linalg.cholesky(_sym(a), upper=kw.get("upper", False)), **kw),
           [Sample(((3, 3),)), Sample(((2, 3, 3),), {"upper": True})], dtypes=FLOATS,
           make_input=spd, tol=F32_TOL, grad_tol=GRAD_TOL),
    OpInfo("Tensor.cholesky_inverse", lambda lib, a: lib.linalg.cholesky(_sym(a))
           .cholesky_inverse(), [Sample(((3, 3),))], dtypes=("float64",), make_input=spd,
           tol=F32_TOL, grad_tol=GRAD_TOL),
    _errors("cholesky_inverse_errors", lambda lib, a: lib.cholesky_inverse(a), ((3,), (3, 4)),
            dtypes=("float32", "float16", "int64")),

    # ---- QR, SVD, eigh ---------------------------------------------------------------------------
    OpInfo("linalg.qr", _qr,
           standard_samples(((3, 3),), ((5, 3),), ((3, 5),), ((2, 4, 3),)) +
           [Sample(((3, 5),), {"mode": "complete"})],
           dtypes=FLOATS, make_input=spread_singular, tol=F32_TOL, grad_tol=GRAD_TOL,
           gradgrad=False),
    OpInfo("linalg.qr_forward_only", _qr,
           [Sample(((5, 3),), {"mode": "complete"}), Sample(((5, 3),), {"mode": "r"}),
            Sample(((0, 3),)), Sample(((3, 0),))],
           dtypes=FLOATS, grad=False, gradcheck=False, tol=F32_TOL),
    OpInfo("qr", lambda lib, a, **kw: _qr(lib, a) if kw.get("some", True) else lib.qr(a, **kw)[1]
           .abs(), [Sample(((4, 3),)), Sample(((3, 3),), {"some": False})], dtypes=FLOATS,
           make_input=spread_singular, tol=F32_TOL, grad_tol=GRAD_TOL),
    OpInfo("Tensor.qr", lambda lib, a: a.qr()[1].abs(), [Sample(((4, 3),))], dtypes=("float64",),
           make_input=spread_singular, tol=F32_TOL, grad_tol=GRAD_TOL),
    OpInfo("linalg.svd", _svd,
           [Sample(s, {"full_matrices": False}) for s in
            (((3, 3),), ((5, 3),), ((3, 5),), ((2, 4, 3),))] +
           [Sample(((4, 4),), {"full_matrices": False}, noncontig=True),
            Sample(((5, 3),)), Sample(((3, 3),))],
           dtypes=FLOATS, make_input=spread_singular, tol=F32_TOL, grad_tol=GRAD_TOL,
           gradgrad=False),
    OpInfo("linalg.svd_empty", lambda lib, a, **kw: lib.linalg.svd(a, **kw),
           [Sample(((0, 3),), {"full_matrices": False}), Sample(((0, 3),)), Sample(((3, 0),))],
           dtypes=FLOATS, grad=False, gradcheck=False),
    OpInfo("svd", _torch_svd, [Sample(((4, 3),)), Sample(((2, 3, 5),)),
                               Sample(((3, 3),), {"some": False})],
           dtypes=FLOATS, make_input=spread_singular, tol=F32_TOL, grad_tol=GRAD_TOL),
    OpInfo("svd_no_uv", lambda lib, a: lib.svd(a, compute_uv=False), [Sample(((4, 3),))],
           dtypes=FLOATS, make_input=spread_singular, tol=F32_TOL, grad_tol=GRAD_TOL),
    OpInfo("Tensor.svd", lambda lib, a: a.svd()[1], [Sample(((4, 3),))], dtypes=("float64",),
           make_input=spread_singular, tol=F32_TOL, grad_tol=GRAD_TOL),
    OpInfo("linalg.svdvals", lambda lib, a: lib.linalg.svdvals(a),
           standard_samples(((3, 3),), ((5, 3),), ((2, 3, 4),)) + [Sample(((0, 3),))],
           dtypes=FLOATS, make_input=spread_singular, tol=F32_TOL, grad_tol=GRAD_TOL,
           gradgrad=False),
    OpInfo("linalg.eigh", _eigh,
           standard_samples(((3, 3),), ((2, 4, 4),)) + [Sample(((3, 3),), {"UPLO": "U"}),
                                                         Sample(((0, 0),))],
           dtypes=FLOATS, make_input=spread_symmetric, tol=F32_TOL, grad_tol=GRAD_TOL,
           gradgrad=False),
    OpInfo("linalg.eigvalsh", lambda lib, a, **kw: lib.linalg.eigvalsh(_sym(a), **kw),
           standard_samples(((3, 3),), ((2, 4, 4),)) + [Sample(((3, 3),), {"UPLO": "U"})],
           dtypes=FLOATS, make_input=spread_symmetric, tol=F32_TOL, grad_tol=GRAD_TOL),
    _errors("linalg.eigh_errors", lambda lib, a, **kw: lib.linalg.eigh(a, **kw), ((3, 4),), ((3,),),
            dtypes=("float32", "int64")),
    _errors("linalg.eigh_bad_uplo", lambda lib, a, **kw: lib.linalg.eigh(a, **kw), ((3, 3),),
            kwargs={"UPLO": "X"}),

    # ---- pseudo-inverse, rank, least squares ----------------------------------------------------
    OpInfo("linalg.pinv", lambda lib, a, **kw: lib.linalg.pinv(a, **kw),
           standard_samples(((3, 4),), ((4, 3),), ((2, 3, 3),)) + [Sample(((0, 3),))],
           dtypes=FLOATS, make_input=spread_singular, tol=F32_TOL, grad_tol=GRAD_TOL,
           gradgrad=False),
    OpInfo("linalg.pinv_hermitian", lambda lib, a: lib.linalg.pinv(_sym(a), hermitian=True),
           [Sample(((3, 3),)), Sample(((2, 4, 4),))], dtypes=FLOATS,
           make_input=spread_symmetric, tol=F32_TOL, grad_tol=GRAD_TOL),
    OpInfo("linalg.pinv_low_rank", lambda lib, a, **kw: lib.linalg.pinv(a, **kw),
           [Sample(((4, 5),)), Sample(((4, 5),), {"rtol": 0.5}), Sample(((4, 5),), {"atol": 1.0})],
           dtypes=FLOATS, make_input=low_rank, grad=False, gradcheck=False, tol=F32_TOL),
    OpInfo("pinverse", lambda lib, a: lib.pinverse(a), [Sample(((3, 4),))], dtypes=FLOATS,
           make_input=spread_singular, tol=F32_TOL, grad_tol=GRAD_TOL),
    OpInfo("Tensor.pinverse", lambda lib, a: a.pinverse(rcond=1e-10), [Sample(((4, 3),))],
           dtypes=("float64",), make_input=spread_singular, tol=F32_TOL, grad_tol=GRAD_TOL),
    OpInfo("linalg.matrix_rank", lambda lib, a, **kw: lib.linalg.matrix_rank(a, **kw),
           [Sample(((4, 5),)), Sample(((2, 5, 4),)), Sample(((4, 5),), {"atol": 100.0}),
            Sample(((4, 5),), {"atol": 0.1, "rtol": 0.2}), Sample(((4, 5),), {"tol": 0.5}),
            Sample(((0, 3),)), Sample(((4, 4),), {"hermitian": True})],
           dtypes=FLOATS, make_input=low_rank, grad=False, gradcheck=False),
    OpInfo("linalg.matrix_rank_full", lambda lib, a: lib.linalg.matrix_rank(a),
           [Sample(((3, 3),)), Sample(((2, 4, 3),))], dtypes=FLOATS, grad=False,
           gradcheck=False),
    # Only the solution and the residuals are differentiable.
    OpInfo("linalg.lstsq", lambda lib, a, b, **kw: lib.linalg.lstsq(a, b, **kw)[:2],
           [Sample(((2, 5, 3), (2, 5, 2))), Sample(((5, 3), (5,))),
            Sample(((3, 5), (3, 2)), {"driver": "gelsd"}),
            Sample(((2, 5, 3), (2, 5)), {"driver": "gelss"}),
            Sample(((5, 3), (5, 2)), {"driver": "gels"}, noncontig=True)],
           dtypes=FLOATS, make_input=lambda rng, shape, dtype, i: spread_singular(
               rng, shape, dtype, i) if i == 0 else _random(rng, shape),
           tol=F32_TOL, grad_tol=GRAD_TOL),
    OpInfo("linalg.lstsq_all_outputs", lambda lib, a, b, **kw: lib.linalg.lstsq(a, b, **kw),
           [Sample(((5, 3), (5, 2)), {"driver": d}) for d in ("gels", "gelsy", "gelsd", "gelss")]
           + [Sample(((2, 5, 3), (2, 5)), {"driver": "gelsd"}), Sample(((4, 5), (4, 2))),
              Sample(((5, 4), (5, 2)), {"driver": "gelsd"})],
           dtypes=FLOATS, make_input=lambda rng, shape, dtype, i: low_rank(rng, shape, dtype, i)
           if i == 0 and shape[-1] == 4 else _random(rng, shape), grad=False, gradcheck=False,
           tol=F32_TOL),
    _errors("linalg.lstsq_errors", lambda lib, a, b, **kw: lib.linalg.lstsq(a, b, **kw),
            ((5, 3), (4, 2)), ((5,), (5,)), dtypes=("float32", "int64")),
    _errors("linalg.lstsq_bad_driver", lambda lib, a, b, **kw: lib.linalg.lstsq(a, b, **kw),
            ((5, 3), (5, 2)), kwargs={"driver": "foo"}),

    # ---- LU ----------------------------------------------------------------------------------
    OpInfo("linalg.lu_factor", lambda lib, a: lib.linalg.lu_factor(a),
           [Sample(((2, 4, 3),)), Sample(((3, 5),), noncontig=True)], dtypes=FLOATS, tol=F32_TOL,
           grad_tol=GRAD_TOL),
    OpInfo("linalg.lu_factor_ex", lambda lib, a: lib.linalg.lu_factor_ex(a),
           [Sample(((2, 3, 3),))], dtypes=FLOATS, tol=F32_TOL, grad_tol=GRAD_TOL),
    OpInfo("linalg.lu", lambda lib, a: lib.linalg.lu(a),
           [Sample(((4, 3),)), Sample(((2, 3, 4),))], dtypes=FLOATS, tol=F32_TOL,
           grad_tol=GRAD_TOL),
    OpInfo("lu_unpack", lambda lib, a: lib.lu_unpack(*lib.linalg.lu_factor(a)),
           [Sample(((2, 4, 3),))], dtypes=FLOATS, tol=F32_TOL, grad_tol=GRAD_TOL),
    OpInfo("linalg.lu_solve",
           lambda lib, a, b, **kw: lib.linalg.lu_solve(*lib.linalg.lu_factor(a), b, **kw),
           [Sample(((2, 3, 3), (2, 3, 2)), {"adjoint": True}),
            Sample(((3, 3), (2, 3)), {"left": False})],
           dtypes=FLOATS, make_input=first_well_conditioned, tol=F32_TOL, grad_tol=GRAD_TOL),
    OpInfo("lu_solve", lambda lib, b, a: lib.lu_solve(b, *lib.linalg.lu_factor(a)),
           [Sample(((3, 2), (3, 3)))], dtypes=FLOATS, tol=F32_TOL, grad_tol=GRAD_TOL,
           make_input=lambda rng, shape, dtype, i: well_conditioned(rng, shape, dtype, 0)
           if i == 1 else _random(rng, shape)),
    OpInfo("lu", lambda lib, a, **kw: lib.lu(a, **kw),
           [Sample(((3, 3),)), Sample(((2, 3, 3),), {"get_infos": True})], dtypes=FLOATS,
           tol=F32_TOL, grad_tol=GRAD_TOL),
    OpInfo("Tensor.lu_solve", lambda lib, b, a: b.lu_solve(*a.lu()),
           [Sample(((3, 2), (3, 3)))], dtypes=("float64",), tol=F32_TOL, grad_tol=GRAD_TOL,
           make_input=lambda rng, shape, dtype, i: well_conditioned(rng, shape, dtype, 0)
           if i == 1 else _random(rng, shape)),
    _errors("linalg.lu_factor_errors", lambda lib, a, **kw: lib.linalg.lu_factor(a, **kw),
            ((3,),), ((3, 3),), dtypes=("float32", "float16", "int64")),
    _errors("linalg.lu_factor_no_pivot", lambda lib, a, **kw: lib.linalg.lu_factor(a, **kw),
            ((3, 3),), kwargs={"pivot": False}),
    _errors("linalg.lu_solve_errors", lambda lib, a, b: lib.linalg.lu_solve(
        *lib.linalg.lu_factor(a), b), ((3, 3), (3,)), ((3, 3), (4, 2))),

    # ---- matrix functions -------------------------------------------------------------------
    OpInfo("linalg.matrix_power", lambda lib, a, n: lib.linalg.matrix_power(a, n),
           [Sample(((3, 3),), {"n": n}) for n in (0, 1, 3, 5, -2)] +
           [Sample(((2, 3, 3),), {"n": 4}, noncontig=True), Sample(((0, 0),), {"n": 3})],
           dtypes=FLOATS + ("int64",), make_input=well_conditioned,
           tol={"float32": (1e-4, 1e-3)}, grad_tol=(1e-3, 1e-3)),
    OpInfo("matrix_power", lambda lib, a: lib.matrix_power(a, 3), [Sample(((3, 3),))],
           dtypes=("float32", "float64", "float16"), domain=(-1, 1), tol=F32_TOL,
           grad_tol=GRAD_TOL),
    OpInfo("Tensor.matrix_power", lambda lib, a: a.matrix_power(-2), [Sample(((3, 3),))],
           dtypes=("float64",), make_input=well_conditioned, tol=F32_TOL, grad_tol=GRAD_TOL),
    _errors("linalg.matrix_power_errors", lambda lib, a: lib.linalg.matrix_power(a, -1),
            ((3, 3),), ((3, 4),), ((3,),), dtypes=("float16", "int64")),
    OpInfo("linalg.matrix_exp", lambda lib, a: lib.linalg.matrix_exp(a),
           standard_samples(((3, 3),), ((2, 3, 3),)) + [Sample(((0, 0),))],
           dtypes=FLOATS, make_input=small, tol=F32_TOL, grad_tol=GRAD_TOL, gradgrad=False),
    OpInfo("linalg.matrix_exp_large", lambda lib, a: lib.linalg.matrix_exp(a * 3),
           [Sample(((4, 4),))], dtypes=FLOATS, tol={"float32": (1e-4, 1e-3)},
           grad_tol=(1e-3, 1e-3)),
    OpInfo("matrix_exp", lambda lib, a: lib.matrix_exp(a), [Sample(((3, 3),))], dtypes=FLOATS,
           make_input=small, tol=F32_TOL, grad_tol=GRAD_TOL),
    OpInfo("Tensor.matrix_exp", lambda lib, a: a.matrix_exp(), [Sample(((3, 3),))],
           dtypes=("float64",), make_input=small, tol=F32_TOL, grad_tol=GRAD_TOL),
    _errors("linalg.matrix_exp_errors", lambda lib, a: lib.linalg.matrix_exp(a), ((3, 4),),
            ((3,),), dtypes=("float32", "int64")),

    # ---- products ---------------------------------------------------------------------------
    OpInfo("linalg.cross", lambda lib, a, b, **kw: lib.linalg.cross(a, b, **kw),
           standard_samples(((3,), (3,)), ((4, 3), (4, 3)), ((1, 3), (4, 3))) +
           [Sample(((2, 3, 4), (2, 3, 4)), {"dim": 1})],
           dtypes=("float32", "float64", "float16", "int64"), gradgrad=True),
    _errors("linalg.cross_errors", lambda lib, a, b, **kw: lib.linalg.cross(a, b, **kw),
            ((4,), (4,)), ((2, 3), (4, 3)), ((2, 1, 3), (4, 3))),
    OpInfo("cross", lambda lib, a, b, **kw: lib.cross(a, b, **kw),
           [Sample(((3, 4), (3, 4)), {"dim": 0}), Sample(((4, 3), (4, 3)), {"dim": -1})],
           dtypes=FLOATS),
    OpInfo("Tensor.cross", lambda lib, a, b: a.cross(b, dim=1), [Sample(((2, 3), (2, 3)))],
           dtypes=("float64",)),
    OpInfo("linalg.multi_dot", lambda lib, *ts: lib.linalg.multi_dot(list(ts)),
           standard_samples(((3,), (3, 4), (4,)), ((3,), (3,)),
                            ((5, 2), (2, 6), (6, 1), (1, 4)), ((4,), (4, 2)), ((2, 4), (4,))),
           dtypes=("float32", "float64", "float16", "int64"), gradgrad=True),
    _errors("linalg.multi_dot_errors", lambda lib, *ts: lib.linalg.multi_dot(list(ts)),
            ((2, 2, 2), (2, 2)), ((2, 2), (2, 2, 2), (2, 2)), ((3, 3), (4, 2)), ((3, 3),)),
    OpInfo("chain_matmul", lambda lib, *ts: lib.chain_matmul(*ts),
           [Sample(((2, 3), (3, 4), (4, 5)))], dtypes=FLOATS),
    OpInfo("linalg.vecdot", lambda lib, a, b, **kw: lib.linalg.vecdot(a, b, **kw),
           standard_samples(((3,), (3,)), ((2, 3), (3,)), ((4, 1, 3), (2, 3))) +
           [Sample(((3, 2), (3, 2)), {"dim": 0})], dtypes=("float32", "float64", "float16"),
           gradgrad=True),
    _errors("linalg.vecdot_errors", lambda lib, a, b: lib.linalg.vecdot(a, b), ((3,), (4,)),
            dtypes=("float32", "int64")),
    OpInfo("linalg.vander", lambda lib, x, **kw: lib.linalg.vander(x, **kw),
           [Sample(((3,),)), Sample(((2, 3),), {"N": 4}), Sample(((4,),), {"N": 2})],
           dtypes=("float32", "float64", "int64")),
    _errors("linalg.vander_errors", lambda lib, x, **kw: lib.linalg.vander(x, **kw), ((),),
            ((3,),), kwargs={"N": 1}, dtypes=("float32", "bool")),
    OpInfo("linalg.diagonal", lambda lib, a, **kw: lib.linalg.diagonal(a, **kw),
           [Sample(((2, 3, 4),)), Sample(((2, 3, 4),), {"offset": 1, "dim1": 0, "dim2": 2})],
           dtypes=FLOATS),
    OpInfo("linalg.matmul", lambda lib, a, b: lib.linalg.matmul(a, b),
           [Sample(((2, 3, 4), (4,))), Sample(((3, 4), (4, 2)))], dtypes=FLOATS),

    # ---- second order, one sample each (the double backward is the costly part) ---------------
    _gradgrad("linalg.inv_gradgrad", lambda lib, a: lib.linalg.inv(a), ((3, 3),), well_conditioned),
    _gradgrad("linalg.solve_gradgrad", lambda lib, a, b: lib.linalg.solve(a, b),
              ((3, 3), (3, 2)), first_well_conditioned),
    _gradgrad("linalg.solve_triangular_gradgrad",
              lambda lib, a, b: lib.linalg.solve_triangular(a, b, upper=True),
              ((3, 3), (3, 2)), first_well_conditioned),
    _gradgrad("linalg.cholesky_gradgrad", lambda lib, a: lib.linalg.cholesky(_sym(a)), ((3, 3),),
              spd),
    _gradgrad("linalg.qr_gradgrad", _qr, ((3, 2),), spread_singular),
    _gradgrad("linalg.svd_gradgrad", _svd, ((3, 2),), spread_singular),
    _gradgrad("linalg.svdvals_gradgrad", lambda lib, a: lib.linalg.svdvals(a), ((3, 3),),
              spread_singular),
    _gradgrad("linalg.eigh_gradgrad", _eigh, ((3, 3),), spread_symmetric),
    _gradgrad("linalg.pinv_gradgrad", lambda lib, a: lib.linalg.pinv(a), ((2, 3),),
              spread_singular),
    _gradgrad("linalg.matrix_exp_gradgrad", lambda lib, a: lib.linalg.matrix_exp(a), ((2, 2),),
              small),

    # ---- half precision: refused, or computed, as PyTorch's CPU kernels do ----------------------
    *[OpInfo(f"{name}_low_precision", fn, [Sample(shapes)], dtypes=("float16", "bfloat16"),
             grad=False, gradcheck=False, make_input=first_well_conditioned,
             tol={"float16": (1e-2, 1e-2), "bfloat16": (5e-2, 5e-2)})
      for name, fn, shapes in [
          ("linalg.inv", lambda lib, a: lib.linalg.inv(a), ((3, 3),)),
          ("linalg.inv_ex", lambda lib, a: lib.linalg.inv_ex(a), ((3, 3),)),
          ("linalg.det", lambda lib, a: lib.linalg.det(a), ((3, 3),)),
          ("linalg.slogdet", lambda lib, a: lib.linalg.slogdet(a), ((3, 3),)),
          ("logdet", lambda lib, a: lib.logdet(a), ((3, 3),)),
          ("linalg.solve", lambda lib, a, b: lib.linalg.solve(a, b), ((3, 3), (3,))),
          ("linalg.solve_triangular",
           lambda lib, a, b: lib.linalg.solve_triangular(a, b, upper=True), ((3, 3), (3, 2))),
          ("linalg.cholesky", lambda lib, a: lib.linalg.cholesky(a), ((3, 3),)),
          ("linalg.qr", lambda lib, a: lib.linalg.qr(a), ((3, 3),)),
          ("linalg.svd", lambda lib, a: lib.linalg.svd(a), ((3, 3),)),
          ("linalg.svdvals", lambda lib, a: lib.linalg.svdvals(a), ((3, 3),)),
          ("linalg.eigh", lambda lib, a: lib.linalg.eigh(a), ((3, 3),)),
          ("linalg.eigvalsh", lambda lib, a: lib.linalg.eigvalsh(a), ((3, 3),)),
          ("linalg.pinv", lambda lib, a: lib.linalg.pinv(a), ((3, 3),)),
          ("linalg.matrix_rank", lambda lib, a: lib.linalg.matrix_rank(a), ((3, 3),)),
          ("linalg.matrix_rank_atol", lambda lib, a: lib.linalg.matrix_rank(a, atol=0.1),
           ((3, 3),)),
          ("linalg.lstsq", lambda lib, a, b: lib.linalg.lstsq(a, b), ((3, 3), (3, 2))),
          ("linalg.matrix_norm_nuc", lambda lib, a: lib.linalg.matrix_norm(a, "nuc"), ((3, 3),)),
          ("linalg.matrix_norm_2", lambda lib, a: lib.linalg.matrix_norm(a, 2), ((3, 3),)),
          ("linalg.matrix_norm_fro", lambda lib, a: lib.linalg.matrix_norm(a), ((3, 3),)),
          ("linalg.matrix_norm_1", lambda lib, a: lib.linalg.matrix_norm(a, 1), ((3, 3),)),
          ("linalg.vector_norm", lambda lib, a: lib.linalg.vector_norm(a, 3), ((3, 3),)),
          ("linalg.matrix_power", lambda lib, a: lib.linalg.matrix_power(a, 2), ((3, 3),)),
          ("linalg.matrix_power_negative", lambda lib, a: lib.linalg.matrix_power(a, -2),
           ((3, 3),)),
          ("linalg.vecdot", lambda lib, a, b: lib.linalg.vecdot(a, b), ((3,), (3,))),
          ("linalg.cross", lambda lib, a, b: lib.linalg.cross(a, b), ((3,), (3,))),
          ("cholesky_solve", lambda lib, b, a: lib.cholesky_solve(b, a), ((3, 2), (3, 3))),
          ("cholesky_inverse", lambda lib, a: lib.cholesky_inverse(a), ((3, 3),)),
      ]],

    # ---- norms ------------------------------------------------------------------------------
    OpInfo("linalg.vector_norm", lambda lib, a, **kw: lib.linalg.vector_norm(a, **_kw(lib, kw)),
           [Sample(((3, 4),), noncontig=True)] +
           [Sample(((3, 4),), {"ord": o}) for o in (1, 3, -INF, -1)] +
           [Sample(((2, 3, 4),), {"dim": [0, 2], "keepdim": True}),
            Sample(((2, 3, 4),), {"ord": INF, "dim": -1}),
            Sample(((3, 4),), {"dtype": "float64"}), Sample(((),)), Sample(((0, 3),))],
           dtypes=FLOATS),
    OpInfo("linalg.vector_norm_zero", lambda lib, a: lib.linalg.vector_norm(a, 0),
           [Sample(((3, 4),))], grad=False, gradcheck=False),
    _errors("linalg.vector_norm_errors",
            lambda lib, a, **kw: lib.linalg.vector_norm(a, **_kw(lib, kw)),
            ((3, 4),), dtypes=("int64",)),
    OpInfo("linalg.matrix_norm", lambda lib, a, **kw: lib.linalg.matrix_norm(a, **_kw(lib, kw)),
           [Sample(((2, 3, 3),)), Sample(((3, 4),), noncontig=True)] +
           [Sample(((3, 4),), {"ord": o}) for o in ("nuc", 1, -1, 2, -2, INF, -INF)] +
           [Sample(((2, 3, 4),), {"ord": o, "dim": (0, 2), "keepdim": True})
            for o in ("nuc", -INF)] +
           [Sample(((2, 3, 4),), {"ord": 1, "dim": (2, 0)}),
            Sample(((3, 4),), {"ord": 2, "dtype": "float64"})],
           dtypes=FLOATS, make_input=spread_singular, tol=F32_TOL, grad_tol=GRAD_TOL),
    _errors("linalg.matrix_norm_errors",
            lambda lib, a, **kw: lib.linalg.matrix_norm(a, **_kw(lib, kw)),
            ((3,),), ((3, 3),), dtypes=("float32", "int64"), kwargs={"ord": 3}),
    OpInfo("linalg.norm", lambda lib, a, *args, **kw: lib.linalg.norm(a, *args, **kw),
           [Sample(((2, 3, 4),))] +
           [Sample(((3, 4),), {"ord": o}) for o in ("fro", "nuc", 2)] +
           [Sample(((4,),), {"ord": o}) for o in (1, INF)] +
           [Sample(((2, 3, 4),), {"ord": 2, "dim": 1}),
            Sample(((2, 3, 4),), {"ord": -1, "dim": (2, 1), "keepdim": True}),
            Sample(((2, 3, 4),), {"dim": (0, 1)}),
            Sample(((2, 3, 4),), {"ord": "nuc", "dim": (0, 2)})],
           dtypes=FLOATS, make_input=lambda rng, shape, dtype, i: spread_singular(
               rng, shape, dtype, i) if len(shape) >= 2 else _random(rng, shape),
           tol=F32_TOL, grad_tol=GRAD_TOL),
    _errors("linalg.norm_errors", lambda lib, a, **kw: lib.linalg.norm(a, **kw),
            ((2, 3, 4),), kwargs={"ord": 2}),
    _errors("linalg.norm_errors_dim", lambda lib, a, **kw: lib.linalg.norm(a, **kw),
            ((2, 3, 4),), kwargs={"dim": (0, 1, 2)}),
    # ---- dist, renorm, trace -----------------------------------------------------------------
    OpInfo("dist", lambda lib, a, b: lib.dist(a, b),
           standard_samples(((3, 4), (3, 4)), ((3, 4), (4,)), ((), ())), dtypes=FLOAT_DTYPES),
    OpInfo("dist_p", lambda lib, a, b: a.dist(b, 3.5), [Sample(((3, 4), (4,)))], dtypes=FLOATS),
    OpInfo("dist_p1", lambda lib, a, b: a.dist(b, 1), [Sample(((3, 4), (4,)))], dtypes=FLOATS),
    OpInfo("dist_inf", lambda lib, a, b: a.dist(b, float("inf")), [Sample(((3, 4), (3, 4)))],
           dtypes=FLOATS, make_input=distinct_values),
    OpInfo("dist_p0", lambda lib, a, b: a.dist(b, 0), [Sample(((3, 4), (3, 4)))],
           dtypes=FLOATS, grad=False, gradcheck=False),
    _errors("dist_ints", lambda lib, a, b: lib.dist(a, b), ((3,), (3,)), dtypes=("int64",)),
    OpInfo("renorm", lambda lib, x: lib.renorm(x, 2, 0, 1.5),
           standard_samples(((3, 4),), ((2, 3, 4),)), dtypes=FLOAT_DTYPES),
    OpInfo("renorm_dim1_p1", lambda lib, x: x.renorm(1, -1, 2.0), [Sample(((4, 3, 2),))],
           dtypes=FLOATS),
    OpInfo("renorm_", lambda lib, x: (x * 1).renorm_(3, 1, 1.0), [Sample(((4, 3),))],
           dtypes=FLOATS),
    _errors("renorm_p0", lambda lib, x: lib.renorm(x, 0, 0, 1.0), ((3, 4),)),
    _errors("renorm_ints", lambda lib, x: lib.renorm(x, 2, 0, 1.0), ((3, 4),),
            dtypes=("int64",)),
    OpInfo("trace", lambda lib, x: lib.trace(x),
           standard_samples(((3, 4),), ((4, 3),), ((0, 3),)),
           dtypes=("float32", "float64", "bfloat16", "int64", "int32", "uint8")),
    _errors("trace_3d", lambda lib, x: lib.trace(x), ((2, 2, 2),)),
    _errors("trace_bool", lambda lib, x: x.trace(), ((2, 2),), dtypes=("bool",)),
    # ---- geqrf, orgqr, ormqr -------------------------------------------------------------------
    OpInfo("geqrf", lambda lib, a: tuple(lib.geqrf(a)),
           [Sample(((5, 3),)), Sample(((3, 5),)), Sample(((2, 4, 4),)), Sample(((0, 3),)),
            Sample(((5, 3),), noncontig=True)], dtypes=FLOATS, grad=False, gradcheck=False),
    _errors("geqrf_1d", lambda lib, a: lib.geqrf(a), ((3,),)),
    _errors("geqrf_half", lambda lib, a: lib.geqrf(a), ((3, 3),), dtypes=("float16",)),
    OpInfo("orgqr", lambda lib, a, tau: lib.orgqr(a, tau),
           [Sample(((5, 3), (3,))), Sample(((5, 3), (2,))), Sample(((2, 4, 4), (2, 4))),
            Sample(((4, 3), (3,)), noncontig=True)], dtypes=FLOATS, gradgrad=True),
    OpInfo("orgqr_zero_tau", lambda lib, a, tau: a.orgqr(tau * lib.tensor([1.0, 0.0, 1.0],
                                                                            device=a.device)),
           [Sample(((4, 3), (3,)))], dtypes=FLOATS),
    _errors("orgqr_wide", lambda lib, a, tau: lib.orgqr(a, tau), ((3, 4), (2,))),
    _errors("orgqr_long_tau", lambda lib, a, tau: lib.orgqr(a, tau), ((4, 3), (4,))),
    *[OpInfo(f"ormqr_{'left' if left else 'right'}{'_t' if tr else ''}",
             lambda lib, a, tau, c, left=left, tr=tr: lib.ormqr(a, tau, c, left, tr),
             [Sample(((4, 3), (3,), (4, 2) if left else (2, 4))),
              Sample(((2, 3, 4), (2, 3), (2, 3, 5) if left else (2, 5, 3)))],
             dtypes=FLOATS)
      for left in (True, False) for tr in (False, True)],
    _errors("ormqr_bad_other", lambda lib, a, tau, c: lib.ormqr(a, tau, c),
            ((4, 3), (3,), (5, 2))),
]
