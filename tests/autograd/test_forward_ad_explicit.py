"""Op families with a written forward derivative: their tangents come from the node's own
``jvp`` (never the double-backward fallback of ember/autograd/forward_ad.py) and match torch's
forward AD."""
import numpy as np
import pytest
import torch

import ember
import ember.autograd.forward_ad as fwAD


def _F(lib):
    return lib.nn.functional


def _spd(lib, a):
    return a @ a.mT + 4 * lib.eye(a.shape[-1], dtype=a.dtype)


def _idx(lib, values):
    return lib.tensor(values, dtype=lib.int64)


# name, function of (lib, *inputs), input shapes; every output's tangent is compared
CASES = [
    # reductions
    ("prod", lambda L, x: x.prod(1), [(3, 4)]),
    ("prod_all", lambda L, x: x.prod(), [(2, 3)]),
    ("amax", lambda L, x: x.amax(1), [(3, 4)]),
    ("amin_all", lambda L, x: x.amin(), [(3, 4)]),
    ("max_dim", lambda L, x: x.max(1), [(3, 4)]),
    ("min", lambda L, x: x.min(), [(3, 4)]),
    ("var", lambda L, x: x.var(1), [(3, 4)]),
    ("std", lambda L, x: x.std(), [(3, 4)]),
    ("var_mean", lambda L, x: L.var_mean(x, 1), [(3, 4)]),
    ("std_mean", lambda L, x: L.std_mean(x, 0), [(3, 4)]),
    ("aminmax", lambda L, x: L.aminmax(x, dim=1), [(3, 4)]),
    ("vector_norm", lambda L, x: L.linalg.vector_norm(x, 3, dim=1), [(3, 4)]),
    ("norm_2", lambda L, x: x.norm(dim=0), [(3, 4)]),
    ("cdist", lambda L, a, b: L.cdist(a, b), [(3, 2), (4, 2)]),
    # scans
    ("cumsum", lambda L, x: x.cumsum(1), [(3, 4)]),
    ("cumprod", lambda L, x: x.cumprod(0), [(3, 4)]),
    ("logcumsumexp", lambda L, x: x.logcumsumexp(1), [(3, 4)]),
    ("cummax", lambda L, x: x.cummax(1), [(3, 4)]),
    # indexing and index writes
    ("getitem_tensor", lambda L, x: x[_idx(L, [2, 0, 2])], [(3, 4)]),
    ("getitem_mask", lambda L, x: x[x > 0], [(3, 4)]),
    ("index_put", lambda L, x, v: x.index_put((_idx(L, [0, 2]),), v), [(3, 4), (2, 4)]),
    ("index_put_acc", lambda L, x, v: x.index_put((_idx(L, [1, 1]),), v, accumulate=True),
     [(3, 4), (2, 4)]),
    ("scatter", lambda L, x, s: x.scatter(1, _idx(L, [[0, 1], [2, 3], [1, 0]]), s),
     [(3, 4), (3, 2)]),
    ("scatter_value", lambda L, x: x.scatter(1, _idx(L, [[0], [2], [1]]), 1.5), [(3, 4)]),
    ("scatter_add", lambda L, x, s: x.scatter_add(0, _idx(L, [[0, 1, 1, 0]]), s),
     [(3, 4), (1, 4)]),
    ("scatter_reduce_mean", lambda L, x, s: x.scatter_reduce(
        1, _idx(L, [[0, 0], [1, 3], [2, 2]]), s, "mean"), [(3, 4), (3, 2)]),
    ("scatter_reduce_amax", lambda L, x, s: x.scatter_reduce(
        1, _idx(L, [[0, 0], [1, 3], [2, 2]]), s, "amax", include_self=False), [(3, 4), (3, 2)]),
    ("masked_fill", lambda L, x: x.masked_fill(x > 0.5, 2.0), [(3, 4)]),
    ("masked_fill_tensor", lambda L, x, v: x.masked_fill(x > 0, v), [(3, 4), ()]),
    ("masked_scatter", lambda L, x, s: x.masked_scatter(x > 0, s), [(3, 4), (12,)]),
    ("masked_select", lambda L, x: x.masked_select(x > 0), [(3, 4)]),
    ("take", lambda L, x: x.take(_idx(L, [0, 5, 11])), [(3, 4)]),
    ("put", lambda L, x, s: x.put(_idx(L, [1, 7]), s), [(3, 4), (2,)]),
    ("index_fill", lambda L, x: x.index_fill(1, _idx(L, [0, 2]), -1.0), [(3, 4)]),
    ("index_copy", lambda L, x, s: x.index_copy(0, _idx(L, [2, 0]), s), [(3, 4), (2, 4)]),
    # sorting and selection
    ("sort", lambda L, x: x.sort(1), [(3, 4)]),
    ("topk", lambda L, x: x.topk(2, 1), [(3, 4)]),
    ("kthvalue", lambda L, x: x.kthvalue(2, 1), [(3, 4)]),
    ("median", lambda L, x: x.median(), [(3, 5)]),
    ("median_dim", lambda L, x: x.median(1), [(3, 5)]),
    # pooling, resampling, padding
    ("max_pool2d", lambda L, x: _F(L).max_pool2d(x, 2), [(1, 2, 4, 4)]),
    ("avg_pool2d", lambda L, x: _F(L).avg_pool2d(x, 2, 1), [(1, 2, 4, 4)]),
    ("adaptive_avg_pool2d", lambda L, x: _F(L).adaptive_avg_pool2d(x, 3), [(1, 2, 5, 5)]),
    ("adaptive_max_pool1d", lambda L, x: _F(L).adaptive_max_pool1d(x, 3), [(2, 3, 7)]),
    ("max_unpool1d", lambda L, x: _F(L).max_unpool1d(*_F(L).max_pool1d(
        x, 2, return_indices=True), 2), [(1, 2, 6)]),
    ("interpolate_bilinear", lambda L, x: _F(L).interpolate(
        x, scale_factor=2, mode="bilinear"), [(1, 1, 3, 3)]),
    ("interpolate_nearest", lambda L, x: _F(L).interpolate(x, size=5), [(1, 2, 3)]),
    ("pad_constant", lambda L, x: _F(L).pad(x, (1, 2)), [(2, 3)]),
    ("pad_reflect", lambda L, x: _F(L).pad(x, (2, 1), mode="reflect"), [(1, 2, 4)]),
    ("unfold", lambda L, x: _F(L).unfold(x, 2), [(1, 2, 3, 3)]),
    ("fold", lambda L, x: _F(L).fold(x, (3, 3), 2), [(1, 8, 4)]),
    ("pixel_shuffle", lambda L, x: _F(L).pixel_shuffle(x, 2), [(1, 4, 2, 2)]),
    # FFT
    ("fft", lambda L, x: L.fft.fft(x).abs(), [(5,)]),
    ("rfft", lambda L, x: L.view_as_real(L.fft.rfft(x)), [(6,)]),
    ("irfft", lambda L, x: L.fft.irfft(L.fft.rfft(x) * 2, 6), [(6,)]),
    ("fftn", lambda L, x: L.view_as_real(L.fft.fftn(x.to(L.complex128))), [(3, 4)]),
    # linear algebra
    ("inv", lambda L, a: L.linalg.inv(_spd(L, a)), [(3, 3)]),
    ("det", lambda L, a: L.linalg.det(a), [(2, 3, 3)]),
    ("slogdet", lambda L, a: L.linalg.slogdet(_spd(L, a)).logabsdet, [(3, 3)]),
    ("solve", lambda L, a, b: L.linalg.solve(_spd(L, a), b), [(3, 3), (3, 2)]),
    ("solve_vector", lambda L, a, b: L.linalg.solve(_spd(L, a), b), [(3, 3), (3,)]),
    ("solve_right", lambda L, a, b: L.linalg.solve(_spd(L, a), b, left=False),
     [(3, 3), (2, 3)]),
    ("solve_triangular", lambda L, a, b: L.linalg.solve_triangular(
        _spd(L, a), b, upper=True), [(3, 3), (3, 2)]),
    ("cholesky", lambda L, a: L.linalg.cholesky(_spd(L, a)), [(3, 3)]),
    ("cholesky_upper", lambda L, a: L.linalg.cholesky(_spd(L, a), upper=True), [(3, 3)]),
    ("eigvalsh", lambda L, a: L.linalg.eigvalsh(_spd(L, a)), [(3, 3)]),
    ("matrix_exp", lambda L, a: L.linalg.matrix_exp(a), [(3, 3)]),
    ("svd_tall", lambda L, a: [p.abs() if p.ndim == 2 else p
                               for p in L.linalg.svd(a, full_matrices=False)], [(4, 3)]),
    ("svd_wide", lambda L, a: [p.abs() if p.ndim == 2 else p
                               for p in L.linalg.svd(a, full_matrices=False)], [(2, 4)]),
    ("svdvals", lambda L, a: L.linalg.svdvals(a), [(3, 3)]),
    ("qr", lambda L, a: L.linalg.qr(a), [(4, 3)]),
    ("pinv", lambda L, a: L.linalg.pinv(a), [(4, 3)]),
    ("lstsq", lambda L, a, b: L.linalg.lstsq(a, b).solution, [(4, 3), (4, 2)]),
    ("cholesky_solve", lambda L, b, a: L.cholesky_solve(b, L.linalg.cholesky(_spd(L, a))),
     [(3, 2), (3, 3)]),
    ("cross", lambda L, a, b: L.linalg.cross(a, b), [(2, 3), (2, 3)]),
    ("trace", lambda L, a: a.trace(), [(3, 4)]),
    ("tril_triu", lambda L, a: a.tril(1) + 2 * a.triu(1), [(3, 4)]),
    ("diag_embed", lambda L, a: L.diag_embed(a), [(2, 3)]),
    # shapes
    ("flip_roll_repeat", lambda L, x: x.flip(0).roll(1, 1).repeat(2, 1), [(2, 3)]),
    ("rot90", lambda L, x: x.rot90(1, (0, 1)), [(2, 3)]),
    ("split", lambda L, x: x.split([1, 2], 1), [(2, 3)]),
    ("unbind", lambda L, x: x.unbind(0), [(2, 3)]),
    # element-wise
    ("lerp", lambda L, a, b, w: L.lerp(a, b, w), [(3,), (3,), (3,)]),
    ("addcmul", lambda L, a, b, c: L.addcmul(a, b, c, value=0.5), [(3, 1), (3, 2), (2,)]),
    ("addcdiv", lambda L, a, b, c: L.addcdiv(a, b, c.exp()), [(3,), (3,), (3,)]),
    ("clamp_tensor", lambda L, x, lo: x.clamp(min=lo, max=lo + 1), [(3, 4), (4,)]),
    ("atan2", lambda L, a, b: L.atan2(a, b), [(3,), (3,)]),
    ("hypot", lambda L, a, b: L.hypot(a, b), [(3,), (2, 3)]),
    ("fmod_remainder", lambda L, a, b: L.fmod(a, b.abs() + 1) + L.remainder(a, 0.7),
     [(4,), (4,)]),
    ("maximum", lambda L, a, b: L.maximum(a, b), [(4,), (4,)]),
    ("copysign", lambda L, a, b: L.copysign(a, b), [(4,), (4,)]),
    ("xlogy_logaddexp", lambda L, a, b: L.xlogy(a, b.exp()) + L.logaddexp(a, b), [(4,), (4,)]),
    ("xlog1py", lambda L, a, b: L.special.xlog1py(a, b.exp()), [(4,), (4,)]),
    ("polygamma", lambda L, x: L.polygamma(1, x.exp()), [(4,)]),
    ("glu", lambda L, x: _F(L).glu(x, 1), [(2, 4)]),
    ("prelu", lambda L, x, w: _F(L).prelu(x, w), [(2, 3, 2), (3,)]),
    ("soft_margin_loss", lambda L, x: _F(L).soft_margin_loss(
        x, L.tensor([1.0, -1.0, 1.0, 1.0, -1.0], dtype=L.float64)), [(5,)]),
    ("multi_margin_loss", lambda L, x: _F(L).multi_margin_loss(x, _idx(L, [1, 0, 2])),
     [(3, 3)]),
    ("complex_conj", lambda L, a, b: L.view_as_real(L.complex(a, b).conj() * (2 + 1j)),
     [(3,), (3,)]),
    ("to_float32", lambda L, x: x.to(L.float32) * 2, [(3,)]),
]


def _outputs(out):
    if isinstance(out, (tuple, list)):
        return [o for item in out for o in _outputs(item)]
    return [out]


def _tangents(lib, fw, fn, primals, tangents):
    with fw.dual_level():
        duals = [fw.make_dual(p, t) for p, t in zip(primals, tangents)]
        outs = _outputs(fn(lib, *duals))
        return [fw.unpack_dual(o).tangent for o in outs if o.is_floating_point()]


@pytest.mark.parametrize("name,fn,shapes", CASES, ids=[c[0] for c in CASES])
def test_family_uses_its_own_forward_derivative(name, fn, shapes, monkeypatch):
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(s) for s in shapes]
    vs = [rng.standard_normal(s) for s in shapes]
    try:
        expected = _tangents(torch, torch.autograd.forward_ad, fn,
                             [torch.tensor(x) for x in xs], [torch.tensor(v) for v in vs])
        expected = [t.detach().numpy() if not t._is_zerotensor() else np.zeros(t.shape)
                    for t in expected]
    except NotImplementedError:  # torch has no forward derivative (cdist): central differences
        eps = 1e-6
        plus = _outputs(fn(ember, *[ember.tensor(x + eps * v) for x, v in zip(xs, vs)]))
        minus = _outputs(fn(ember, *[ember.tensor(x - eps * v) for x, v in zip(xs, vs)]))
        expected = [(p.numpy() - m.numpy()) / (2 * eps) for p, m in zip(plus, minus)
                    if p.is_floating_point()]

    def refuse(node, *args):
        raise AssertionError(f"{type(node).__name__} took the double-backward fallback")
    monkeypatch.setattr(fwAD, "double_backward_jvp", refuse)
    got = _tangents(ember, fwAD, fn, [ember.tensor(x) for x in xs], [ember.tensor(v) for v in vs])
    assert len(got) == len(expected)
    for e, t in zip(got, expected):
        np.testing.assert_allclose(e.detach().numpy(), t, rtol=1e-6, atol=1e-6)


def test_fallback_still_serves_ops_without_a_forward_derivative():
    # the fallback path is live (an op without a jvp: LU), so the test above would notice it
    calls = []
    original = fwAD.double_backward_jvp

    def spy(node, *args):
        calls.append(type(node).__name__)
        return original(node, *args)
    fwAD.double_backward_jvp = spy
    try:
        a = ember.tensor(np.random.default_rng(1).standard_normal((3, 3)))
        with fwAD.dual_level():
            fwAD.unpack_dual(ember.linalg.lu_factor(fwAD.make_dual(a, a * 0 + 1)).LU)
    finally:
        fwAD.double_backward_jvp = original
    assert calls == ["LinalgLuFactorExBackward0"]
