"""Autocast against PyTorch's CPU autocast: every op of PyTorch's CPU lists (lower precision,
float32, promote) and a sample of unlisted ops, their output dtypes and values from float32 and
from lower-precision inputs, in bfloat16 and float16 regions; the state functions and their
warnings; nesting, ``enabled=False`` inside, decorators, exceptions, threads; the weight cast
cache (seen as the identity of the cast node in the graph, in both libraries); gradients of
float32 leaves through the casts; an MLP and a Transformer encoder layer trained one step under
CPU autocast. CUDA float16 autocast is marked ``cuda``."""
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest
import torch

import ember


@pytest.fixture(autouse=True, scope="module")
def _torch_single_thread():
    # PyTorch's worker threads spin on a loaded 2-core machine; the oracle runs on one.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


rng = np.random.default_rng(0)


def _randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def _spd(n):
    m = rng.standard_normal((n, n))
    return (m @ m.T + n * np.eye(n)).astype(np.float32)


def _dtype(lib, name):
    return getattr(lib, name)


def _lib_name(d):
    return str(d).split(".")[-1]


def _to_numpy(t):
    if t.dtype in (torch.bfloat16, torch.float16) or t.dtype in (ember.bfloat16, ember.float16):
        t = t.float()
    if isinstance(t, torch.Tensor):
        t = t.resolve_conj()
    return np.asarray(t.detach().numpy())


class A:
    """An argument: a float array made in the case's input dtype, or ``fixed`` (an integer
    array or a float array that keeps its own dtype)."""
    def __init__(self, array, fixed=None):
        self.array, self.fixed = array, fixed

    def make(self, lib, dtype):
        t = lib.tensor(self.array)
        if self.fixed is not None:
            return t.to(_dtype(lib, self.fixed))
        return t.to(dtype) if t.dtype.is_floating_point else t


def _case(name, fn, *args, pick=None, values=True, tol=None):
    return pytest.param(fn, args, pick, values, tol, id=name)


def _sig():
    return 1 / (1 + np.exp(-_randn(4, 5)))


def _pm1(*shape):
    return np.sign(_randn(*shape)).astype(np.float32)


def _long(high, *shape):
    return rng.integers(0, high, shape).astype(np.int64)


def _unpool_args(dims):
    shape = (1, 2) + (4,) * dims
    x = torch.tensor(_randn(*shape))
    pool = torch.nn.functional.max_pool2d if dims == 2 else torch.nn.functional.max_pool3d
    out, idx = pool(x, 2, return_indices=True)
    return A(out.numpy()), A(idx.numpy())


def _geqrf_args():
    a, tau = torch.geqrf(torch.tensor(_randn(5, 3)))
    return A(a.numpy()), A(tau.numpy())


def _lu_args():
    lu, piv = torch.linalg.lu_factor(torch.tensor(_spd(4)))
    return A(_randn(4, 2)), A(lu.numpy()), A(piv.numpy().astype(np.int32), "int32")


def _ctc_args():
    lp = torch.tensor(_randn(6, 2, 4)).log_softmax(2).numpy()
    return (A(lp), A(np.array([[1, 2], [3, 1]], dtype=np.int64)),
            A(np.array([6, 5], dtype=np.int64)), A(np.array([2, 2], dtype=np.int64)))


def F(lib):
    return lib.nn.functional


LOWER = [
    _case("mm", lambda L, a, b: L.mm(a, b), A(_randn(4, 5)), A(_randn(5, 3))),
    _case("bmm", lambda L, a, b: L.bmm(a, b), A(_randn(2, 4, 5)), A(_randn(2, 5, 3))),
    _case("matmul", lambda L, a, b: L.matmul(a, b), A(_randn(2, 4, 5)), A(_randn(5, 3))),
    _case("matmul_vec", lambda L, a, b: a @ b, A(_randn(4, 5)), A(_randn(5))),
    _case("addmm", lambda L, c, a, b: L.addmm(c, a, b, beta=0.5, alpha=2), A(_randn(4, 3)),
          A(_randn(4, 5)), A(_randn(5, 3))),
    _case("baddbmm", lambda L, c, a, b: L.baddbmm(c, a, b), A(_randn(2, 4, 3)),
          A(_randn(2, 4, 5)), A(_randn(2, 5, 3))),
    _case("addbmm", lambda L, c, a, b: L.addbmm(c, a, b), A(_randn(4, 3)), A(_randn(2, 4, 5)),
          A(_randn(2, 5, 3))),
    _case("linalg_vecdot", lambda L, a, b: L.linalg.vecdot(a, b), A(_randn(4, 5)),
          A(_randn(4, 5))),
    _case("linear", lambda L, x, w, b: F(L).linear(x, w, b), A(_randn(2, 4, 5)),
          A(_randn(3, 5)), A(_randn(3))),
    _case("linear_nobias", lambda L, x, w: F(L).linear(x, w), A(_randn(4, 5)), A(_randn(3, 5))),
    _case("conv1d", lambda L, x, w, b: F(L).conv1d(x, w, b, padding=1), A(_randn(2, 3, 8)),
          A(_randn(4, 3, 3)), A(_randn(4))),
    _case("conv2d", lambda L, x, w: F(L).conv2d(x, w, stride=2), A(_randn(2, 3, 6, 6)),
          A(_randn(4, 3, 3, 3))),
    _case("conv3d", lambda L, x, w: F(L).conv3d(x, w), A(_randn(1, 2, 4, 4, 4)),
          A(_randn(3, 2, 2, 2, 2))),
    _case("conv_transpose1d", lambda L, x, w: F(L).conv_transpose1d(x, w), A(_randn(2, 3, 5)),
          A(_randn(3, 4, 3))),
    _case("conv_transpose2d", lambda L, x, w, b: F(L).conv_transpose2d(x, w, b, stride=2),
          A(_randn(2, 3, 4, 4)), A(_randn(3, 2, 3, 3)), A(_randn(2))),
    _case("conv_transpose3d", lambda L, x, w: F(L).conv_transpose3d(x, w),
          A(_randn(1, 2, 3, 3, 3)), A(_randn(2, 3, 2, 2, 2))),
    _case("conv_tbc", lambda L, x, w, b: L.conv_tbc(x, w, b, 1), A(_randn(5, 2, 3)),
          A(_randn(3, 3, 4)), A(_randn(4))),
    _case("prelu", lambda L, x, w: F(L).prelu(x, w), A(_randn(2, 3, 4)), A(_randn(3))),
    _case("scaled_dot_product_attention",
          lambda L, q, k, v: F(L).scaled_dot_product_attention(q, k, v, is_causal=True),
          A(_randn(2, 2, 4, 8)), A(_randn(2, 2, 4, 8)), A(_randn(2, 2, 4, 8))),
    _case("sdpa_3d", lambda L, q, k, v: F(L).scaled_dot_product_attention(q, k, v),
          A(_randn(2, 4, 8)), A(_randn(2, 5, 8)), A(_randn(2, 5, 8))),
]

PROMOTE = [
    _case("cat", lambda L, a, b: L.cat([a, b.to(L.get_autocast_dtype("cpu"))]),
          A(_randn(2, 3)), A(_randn(2, 3))),
    _case("cat_same", lambda L, a, b: L.cat([a, b], 1), A(_randn(2, 3)), A(_randn(2, 3))),
    _case("cat_float64", lambda L, a, b: L.cat([a, b]), A(_randn(2, 3)),
          A(_randn(2, 3), "float64")),
    _case("stack", lambda L, a, b: L.stack([a.to(L.get_autocast_dtype("cpu")), b]),
          A(_randn(2, 3)), A(_randn(2, 3))),
    _case("index_copy", lambda L, x, i, s: x.index_copy(0, i, s.to(L.get_autocast_dtype("cpu"))),
          A(_randn(5, 3)), A(np.array([4, 1])), A(_randn(2, 3))),
    _case("index_copy_fn", lambda L, x, i, s: L.index_copy(x, 0, i, s), A(_randn(5, 3)),
          A(np.array([0, 2])), A(_randn(2, 3), "float32")),
]

FP32 = [
    _case("avg_pool3d", lambda L, x: F(L).avg_pool3d(x, 2), A(_randn(1, 2, 4, 4, 4))),
    _case("binary_cross_entropy", lambda L, x, t: F(L).binary_cross_entropy(x, t), A(_sig()),
          A(_sig())),
    _case("grid_sample", lambda L, x, g: F(L).grid_sample(x, g, align_corners=False),
          A(_randn(1, 2, 4, 4)), A(np.tanh(_randn(1, 3, 3, 2)))),
    _case("polar", lambda L, a, b: L.polar(a, b), A(np.abs(_randn(3))), A(_randn(3))),
    _case("prod", lambda L, x: L.prod(x), A(_randn(2, 3))),
    _case("prod_dim", lambda L, x: x.prod(1), A(_randn(2, 3))),
    _case("quantile", lambda L, x: L.quantile(x, 0.3), A(_randn(9))),
    _case("quantile_tensor_q", lambda L, x, q: L.quantile(x, q, dim=1), A(_randn(3, 9)),
          A(np.array([0.2, 0.7], dtype=np.float32))),
    _case("nanquantile", lambda L, x: L.nanquantile(x, 0.6, dim=0), A(_randn(9, 2))),
    _case("stft", lambda L, x, w: L.stft(x, 16, window=w, return_complex=True), A(_randn(64)),
          A(np.hanning(16).astype(np.float32))),
    _case("cdist", lambda L, a, b: L.cdist(a, b), A(_randn(3, 4)), A(_randn(5, 4))),
    _case("trace", lambda L, x: L.trace(x), A(_randn(4, 4))),
    _case("view_as_complex", lambda L, x: L.view_as_complex(x), A(_randn(3, 2))),
    _case("cholesky", lambda L, x: L.cholesky(x), A(_spd(4))),
    _case("cholesky_inverse", lambda L, x: L.cholesky_inverse(x),
          A(np.linalg.cholesky(_spd(4)).astype(np.float32))),
    _case("cholesky_solve", lambda L, b, u: L.cholesky_solve(b, u), A(_randn(4, 2)),
          A(np.linalg.cholesky(_spd(4)).astype(np.float32))),
    _case("inverse", lambda L, x: L.inverse(x), A(_spd(4))),
    _case("lu_solve", lambda L, b, lu, piv: L.lu_solve(b, lu, piv), *_lu_args()),
    _case("orgqr", lambda L, a, tau: L.orgqr(a, tau), *_geqrf_args()),
    _case("ormqr", lambda L, a, tau, c: L.ormqr(a, tau, c), *_geqrf_args(), A(_randn(5, 2))),
    _case("pinverse", lambda L, x: L.pinverse(x), A(_randn(4, 3))),
    _case("max_pool3d", lambda L, x: F(L).max_pool3d(x, 2), A(_randn(1, 2, 4, 4, 4))),
    _case("max_unpool2d", lambda L, x, i: F(L).max_unpool2d(x, i, 2), *_unpool_args(2)),
    _case("max_unpool3d", lambda L, x, i: F(L).max_unpool3d(x, i, 2), *_unpool_args(3)),
    _case("adaptive_avg_pool3d", lambda L, x: F(L).adaptive_avg_pool3d(x, 2),
          A(_randn(1, 2, 5, 5, 5))),
    _case("adaptive_max_pool3d", lambda L, x: F(L).adaptive_max_pool3d(x, 2, True),
          A(_randn(1, 2, 5, 5, 5))),
    _case("reflection_pad1d", lambda L, x: F(L).pad(x, (2, 1), mode="reflect"),
          A(_randn(1, 2, 5))),
    _case("reflection_pad2d", lambda L, x: F(L).pad(x, (1, 1, 2, 0), mode="reflect"),
          A(_randn(1, 2, 4, 4))),
    _case("replication_pad1d", lambda L, x: F(L).pad(x, (2, 1), mode="replicate"),
          A(_randn(1, 2, 5))),
    _case("replication_pad2d", lambda L, x: F(L).pad(x, (1, 1, 2, 0), mode="replicate"),
          A(_randn(1, 2, 4, 4))),
    _case("replication_pad3d", lambda L, x: F(L).pad(x, (1,) * 6, mode="replicate"),
          A(_randn(1, 1, 3, 3, 3))),
    _case("mse_loss", lambda L, x, t: F(L).mse_loss(x, t), A(_randn(4, 5)), A(_randn(4, 5))),
    _case("cosine_embedding_loss", lambda L, a, b, t: F(L).cosine_embedding_loss(a, b, t),
          A(_randn(4, 5)), A(_randn(4, 5)), A(_pm1(4))),
    _case("nll_loss", lambda L, x, t: F(L).nll_loss(x, t), A(_randn(4, 5)), A(_long(5, 4))),
    _case("nll_loss2d", lambda L, x, t: F(L).nll_loss(x, t, reduction="none"),
          A(_randn(2, 3, 4, 4)), A(_long(3, 2, 4, 4))),
    _case("hinge_embedding_loss", lambda L, x, t: F(L).hinge_embedding_loss(x, t),
          A(_randn(4, 5)), A(_pm1(4, 5))),
    _case("poisson_nll_loss", lambda L, x, t: F(L).poisson_nll_loss(x, t), A(_randn(4, 5)),
          A(np.abs(_randn(4, 5)))),
    _case("smooth_l1_loss", lambda L, x, t: F(L).smooth_l1_loss(x, t, beta=0.5),
          A(_randn(4, 5)), A(_randn(4, 5))),
    _case("cross_entropy", lambda L, x, t: F(L).cross_entropy(x, t, label_smoothing=0.1),
          A(_randn(4, 5)), A(_long(5, 4))),
    _case("cross_entropy_probs", lambda L, x, t: F(L).cross_entropy(x, t), A(_randn(4, 5)),
          A(_sig())),
    _case("l1_loss", lambda L, x, t: F(L).l1_loss(x, t), A(_randn(4, 5)), A(_randn(4, 5))),
    _case("huber_loss", lambda L, x, t: F(L).huber_loss(x, t), A(_randn(4, 5)),
          A(_randn(4, 5))),
    _case("margin_ranking_loss", lambda L, a, b, t: F(L).margin_ranking_loss(a, b, t),
          A(_randn(4)), A(_randn(4)), A(_pm1(4))),
    _case("soft_margin_loss", lambda L, x, t: F(L).soft_margin_loss(x, t), A(_randn(4, 5)),
          A(_pm1(4, 5))),
    _case("triplet_margin_loss", lambda L, a, p, n: F(L).triplet_margin_loss(a, p, n),
          A(_randn(4, 5)), A(_randn(4, 5)), A(_randn(4, 5))),
    _case("multi_margin_loss", lambda L, x, t: F(L).multi_margin_loss(x, t), A(_randn(4, 5)),
          A(_long(5, 4))),
    _case("ctc_loss", lambda L, lp, t, il, tl: F(L).ctc_loss(lp, t, il, tl), *_ctc_args()),
    _case("kl_div", lambda L, x, t: F(L).kl_div(x, t, reduction="batchmean"),
          A(np.log(_sig())), A(_sig())),
    _case("multilabel_margin_loss", lambda L, x, t: F(L).multilabel_margin_loss(x, t),
          A(_randn(2, 4)), A(np.array([[3, 0, -1, 1], [1, 2, 3, -1]]))),
    _case("binary_cross_entropy_with_logits",
          lambda L, x, t, p: F(L).binary_cross_entropy_with_logits(x, t, pos_weight=p),
          A(_randn(4, 5)), A(_sig()), A(np.abs(_randn(5)))),
    *[_case(f"fft_{n}", (lambda n: lambda L, x: getattr(L.fft, n)(x))(n), A(_randn(4, 8)))
      for n in ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2",
                "irfft2", "rfftn", "irfftn", "hfft", "ihfft"]],
    _case("linalg_cond", lambda L, x: L.linalg.cond(x), A(_spd(4))),
    _case("linalg_matrix_rank", lambda L, x: L.linalg.matrix_rank(x), A(_randn(4, 3))),
    _case("linalg_solve", lambda L, a, b: L.linalg.solve(a, b), A(_spd(4)), A(_randn(4, 2))),
    _case("linalg_cholesky", lambda L, x: L.linalg.cholesky(x), A(_spd(4))),
    _case("linalg_svdvals", lambda L, x: L.linalg.svdvals(x), A(_randn(4, 3))),
    _case("linalg_eigvals", lambda L, x: L.linalg.eigvals(x), A(_spd(3)), values=False),
    _case("linalg_eigvalsh", lambda L, x: L.linalg.eigvalsh(x), A(_spd(4))),
    _case("linalg_inv", lambda L, x: L.linalg.inv(x), A(_spd(4))),
    _case("linalg_householder_product", lambda L, a, tau: L.linalg.householder_product(a, tau),
          *_geqrf_args()),
    _case("linalg_tensorinv", lambda L, x: L.linalg.tensorinv(x, ind=1), A(_spd(4))),
    _case("linalg_tensorsolve", lambda L, a, b: L.linalg.tensorsolve(a, b), A(_spd(4)),
          A(_randn(4))),
    _case("geqrf", lambda L, x: L.geqrf(x), A(_randn(5, 3)), values=False),
    _case("qr", lambda L, x: L.qr(x), A(_randn(5, 3)), values=False),
    _case("svd", lambda L, x: L.svd(x), A(_randn(5, 3)), pick=lambda r: r[1]),
    _case("triangular_solve", lambda L, b, a: L.triangular_solve(b, a), A(_randn(4, 2)),
          A(np.triu(_spd(4)))),
    _case("linalg_qr", lambda L, x: L.linalg.qr(x), A(_randn(5, 3)), values=False),
    _case("linalg_cholesky_ex", lambda L, x: L.linalg.cholesky_ex(x), A(_spd(4))),
    _case("linalg_svd", lambda L, x: L.linalg.svd(x), A(_randn(5, 3)), pick=lambda r: r[1]),
    _case("linalg_eig", lambda L, x: L.linalg.eig(x), A(_spd(3)), values=False),
    _case("linalg_eigh", lambda L, x: L.linalg.eigh(x), A(_spd(4)), pick=lambda r: r[0]),
    _case("linalg_lstsq", lambda L, a, b: L.linalg.lstsq(a, b), A(_randn(5, 3)),
          A(_randn(5, 2)), pick=lambda r: r[0]),
    _case("linalg_inv_ex", lambda L, x: L.linalg.inv_ex(x), A(_spd(4))),
]

# Not in the CPU lists: the output keeps the input dtype (softmax and layer_norm are float32
# ops on CUDA, not on the CPU).
UNLISTED = [
    _case("softmax", lambda L, x: x.softmax(-1), A(_randn(4, 5))),
    _case("log_softmax", lambda L, x: F(L).log_softmax(x, 1), A(_randn(4, 5))),
    _case("layer_norm", lambda L, x: F(L).layer_norm(x, (5,)), A(_randn(4, 5))),
    _case("exp", lambda L, x: x.exp(), A(_randn(4, 5))),
    _case("sum", lambda L, x: x.sum(), A(_randn(4, 5))),
    _case("cumsum", lambda L, x: x.cumsum(0), A(_randn(4, 5))),
    _case("gelu", lambda L, x: F(L).gelu(x), A(_randn(4, 5))),
    _case("addcmul", lambda L, a, b, c: L.addcmul(a, b, c), A(_randn(3)), A(_randn(3)),
          A(_randn(3))),
    _case("dot", lambda L, a, b: L.dot(a, b), A(_randn(5)), A(_randn(5))),
    _case("max_pool2d", lambda L, x: F(L).max_pool2d(x, 2), A(_randn(1, 2, 4, 4))),
    _case("avg_pool2d", lambda L, x: F(L).avg_pool2d(x, 2), A(_randn(1, 2, 4, 4))),
    _case("reflection_pad3d", lambda L, x: F(L).pad(x, (1,) * 6, mode="reflect"),
          A(_randn(1, 1, 3, 3, 3))),
    _case("circular_pad", lambda L, x: F(L).pad(x, (1, 1), mode="circular"),
          A(_randn(1, 2, 5))),
    _case("max_pool3d_with_indices", lambda L, x: F(L).max_pool3d(x, 2, return_indices=True),
          A(_randn(1, 2, 4, 4, 4))),
    # composites: PyTorch's decompose into listed ops (einsum and tensordot reach bmm/mm, the
    # mul form of einsum does not), or are kernels of their own (bilinear, the upsamplers)
    _case("einsum", lambda L, a, b: L.einsum("bij,bjk->bik", a, b), A(_randn(2, 4, 5)),
          A(_randn(2, 5, 3))),
    _case("einsum_list", lambda L, a, b: L.einsum("ij,kj->ik", [a, b]), A(_randn(4, 5)),
          A(_randn(3, 5))),
    _case("einsum_mul", lambda L, a, b: L.einsum("ij,ij->ij", a, b), A(_randn(4, 5)),
          A(_randn(4, 5))),
    _case("tensordot", lambda L, a, b: L.tensordot(a, b, dims=1), A(_randn(4, 5)),
          A(_randn(5, 3))),
    _case("linalg_multi_dot", lambda L, a, b, c: L.linalg.multi_dot([a, b, c]), A(_randn(4, 5)),
          A(_randn(5, 3)), A(_randn(3, 2))),
    _case("chain_matmul", lambda L, a, b: L.chain_matmul(a, b), A(_randn(4, 5)), A(_randn(5, 3))),
    _case("inner", lambda L, a, b: L.inner(a, b), A(_randn(4, 5)), A(_randn(3, 5))),
    _case("mv", lambda L, a, b: L.mv(a, b), A(_randn(4, 5)), A(_randn(5))),
    _case("addmv", lambda L, c, a, b: L.addmv(c, a, b), A(_randn(4)), A(_randn(4, 5)),
          A(_randn(5))),
    _case("addr", lambda L, c, a, b: L.addr(c, a, b), A(_randn(4, 5)), A(_randn(4)),
          A(_randn(5))),
    # (float32 out, but PyTorch's _trilinear reaches a bfloat16 bmm inside: values to bf16)
    _case("bilinear", lambda L, a, b, w: F(L).bilinear(a, b, w), A(_randn(4, 5)),
          A(_randn(4, 3)), A(_randn(2, 5, 3)), tol=2e-2),
    _case("interpolate_bilinear",
          lambda L, x: F(L).interpolate(x, scale_factor=2, mode="bilinear"),
          A(_randn(1, 2, 4, 4))),
    _case("interpolate_area_3d", lambda L, x: F(L).interpolate(x, size=2, mode="area"),
          A(_randn(1, 2, 4, 4, 4))),
    _case("affine_grid", lambda L, t: F(L).affine_grid(t, (1, 1, 4, 4), align_corners=False),
          A(_randn(1, 2, 3))),
    _case("cosine_similarity", lambda L, a, b: F(L).cosine_similarity(a, b), A(_randn(4, 5)),
          A(_randn(4, 5))),
    _case("logsumexp", lambda L, x: L.logsumexp(x, 1), A(_randn(4, 5))),
    _case("group_norm", lambda L, x: F(L).group_norm(x, 2), A(_randn(2, 4, 3))),
    _case("atan2", lambda L, a, b: L.atan2(a, b), A(_randn(4)), A(_randn(4))),
    _case("cross", lambda L, a, b: L.linalg.cross(a, b), A(_randn(4, 3)), A(_randn(4, 3))),
    _case("scatter_add", lambda L, x, i, s: x.scatter_add(0, i, s), A(_randn(3, 2)),
          A(np.array([[0, 2], [1, 0]])), A(_randn(2, 2))),
]


def _outputs(result, pick):
    if pick is not None:
        result = pick(result)
    return list(result) if isinstance(result, tuple) else [result]


def _run(lib, fn, args, in_dtype, fast):
    tensors = [a.make(lib, _dtype(lib, in_dtype)) for a in args]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation notes on qr/svd/...
        with lib.autocast("cpu", dtype=_dtype(lib, fast)):
            return fn(lib, *tensors)


def _check(fn, args, pick, values, tol, in_dtype, fast):
    expected = _outputs(_run(torch, fn, args, in_dtype, fast), pick)
    got = _outputs(_run(ember, fn, args, in_dtype, fast), pick)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert _lib_name(g.dtype) == _lib_name(e.dtype)
        assert tuple(g.shape) == tuple(e.shape)
        if values:
            low = e.dtype in (torch.bfloat16, torch.float16)
            rtol = tol or (2e-2 if low else 1e-3)
            np.testing.assert_allclose(_to_numpy(g), _to_numpy(e), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("fast", ["bfloat16", "float16"])
@pytest.mark.parametrize("in_dtype", ["float32", "bfloat16", "float64"])
@pytest.mark.parametrize("fn, args, pick, values, tol", LOWER)
def test_lower_precision_ops(fn, args, pick, values, tol, in_dtype, fast):
    _check(fn, args, pick, values, tol, in_dtype, fast)


@pytest.mark.parametrize("fast", ["bfloat16", "float16"])
@pytest.mark.parametrize("in_dtype", ["float32", "lower"])
@pytest.mark.parametrize("fn, args, pick, values, tol", PROMOTE)
def test_promote_ops(fn, args, pick, values, tol, in_dtype, fast):
    _check(fn, args, pick, values, tol, fast if in_dtype == "lower" else in_dtype, fast)


@pytest.mark.parametrize("in_dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("fn, args, pick, values, tol", FP32)
def test_float32_ops(fn, args, pick, values, tol, in_dtype):
    fast = "float16" if in_dtype == "float16" else "bfloat16"
    _check(fn, args, pick, values, tol, in_dtype, fast)


@pytest.mark.parametrize("in_dtype", ["bfloat16", "float32"])
@pytest.mark.parametrize("fn, args, pick, values, tol", UNLISTED)
def test_unlisted_ops_keep_their_dtype(fn, args, pick, values, tol, in_dtype):
    _check(fn, args, pick, values, tol, in_dtype, "bfloat16")


def test_integer_and_float64_operands_pass_through():
    for lib in (torch, ember):
        with lib.autocast("cpu"):
            assert _lib_name(lib.mm(lib.ones(2, 2, dtype=lib.int64),
                                    lib.ones(2, 2, dtype=lib.int64)).dtype) == "int64"
            assert _lib_name(lib.mm(lib.ones(2, 2, dtype=lib.float64),
                                    lib.ones(2, 2, dtype=lib.float64)).dtype) == "float64"


def test_out_and_in_place_forms_are_not_autocast():
    # PyTorch registers no out= or in-place overload with autocast: they run as written.
    for lib in (torch, ember):
        with lib.autocast("cpu"):
            out = lib.empty(2, 2)
            assert lib.mm(lib.ones(2, 2), lib.ones(2, 2), out=out).dtype is lib.float32
            y = lib.ones(2, 2)
            y.addmm_(lib.ones(2, 2), lib.ones(2, 2))
            assert y.dtype is lib.float32 and lib.mm(y, y).dtype is lib.bfloat16
            with pytest.raises(RuntimeError, match="self and source expected to have the same"):
                lib.zeros(5, 3).index_copy_(0, lib.tensor([0, 2]),
                                            lib.ones(2, 3, dtype=lib.bfloat16))


def test_tensors_of_other_device_types_pass_through():
    # conftest's "testdev" is a second NumPy-backed device: a CPU region does not cast it.
    a = ember.ones(2, 2, device="testdev")
    with ember.autocast("cpu"):
        assert ember.mm(a, a).dtype is ember.float32
        assert ember.mm(ember.ones(2, 2), ember.ones(2, 2)).dtype is ember.bfloat16


def test_import_ember_stays_light():
    code = ("import sys, ember; assert ember.autocast is ember.amp.autocast; "
            "assert 'ember.amp.grad_scaler' not in sys.modules; "
            "assert ember.amp.GradScaler.__module__ == 'ember.amp.grad_scaler'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_promote_refuses_float16_with_bfloat16_region():
    for lib in (torch, ember):
        with lib.autocast("cpu"), pytest.raises(RuntimeError, match="prioritize"):
            lib.cat([lib.ones(2, dtype=lib.bfloat16), lib.ones(2, dtype=lib.float16)])


def test_every_policy_entry_is_an_op_that_asks():
    # An op takes part by naming its policy key in its autocast test; a key no op names would
    # be a listed op that silently runs uncast.
    import pathlib
    import re
    import ember.amp.autocast_mode as mode
    root = pathlib.Path(ember.__file__).parent
    asked = set()
    for path in root.rglob("*.py"):
        asked |= set(re.findall(r'_autocast\.run\(\w+, "(\w+)"', path.read_text()))
    # The cells ask by their ATen names, from one table (ember/nn/modules/rnn.py).
    from ember.nn.modules import rnn
    assert 'run(_cell_step, op,' in pathlib.Path(rnn.__file__).read_text()
    asked |= set(rnn._CELL_OPS.values())
    # CUDA's float32 unary ops ask by their own names, from one table (ember/ops/elementwise.py).
    from ember.ops import elementwise
    assert "_autocast.run(op, autocast_op, input" in pathlib.Path(elementwise.__file__).read_text()
    asked |= elementwise.AUTOCAST_UNARY
    listed = {op for policy in mode.POLICIES.values() for op in policy}
    assert listed - asked == set()
    assert asked - listed == set()


# ---- state, construction, nesting -----------------------------------------------------------

def test_state_functions_match_torch():
    for lib in (torch, ember):
        assert lib.autocast is lib.amp.autocast
        assert lib.amp.is_autocast_available("cpu") and lib.amp.is_autocast_available("cuda")
        assert not lib.is_autocast_enabled("cpu") and not lib.is_autocast_enabled()
        assert lib.get_autocast_dtype("cpu") is lib.bfloat16
        assert lib.get_autocast_dtype("cuda") is lib.float16
        assert lib.is_autocast_cache_enabled()
        assert [lib.autocast_increment_nesting(), lib.autocast_increment_nesting(),
                lib.autocast_decrement_nesting(), lib.autocast_decrement_nesting()] == [1, 2, 1, 0]
        with lib.autocast("cpu", dtype=lib.float16, cache_enabled=False):
            assert lib.is_autocast_enabled("cpu") and not lib.is_autocast_enabled("cuda")
            assert lib.get_autocast_dtype("cpu") is lib.float16
            assert not lib.is_autocast_cache_enabled()
        assert not lib.is_autocast_enabled("cpu")
        assert lib.get_autocast_dtype("cpu") is lib.bfloat16 and lib.is_autocast_cache_enabled()
        lib.set_autocast_enabled("cpu", True)
        assert lib.is_autocast_enabled("cpu")
        lib.set_autocast_enabled("cpu", False)
        lib.set_autocast_dtype("cpu", lib.float16)
        assert lib.get_autocast_dtype("cpu") is lib.float16
        lib.set_autocast_dtype("cpu", lib.bfloat16)
    assert not ember.amp.autocast_mode.active


def test_deprecated_device_spellings_warn_as_torch():
    for lib in (torch, ember):
        with pytest.warns(DeprecationWarning, match=r"get_autocast_cpu_dtype\(\) is deprecated"):
            assert lib.get_autocast_cpu_dtype() is lib.bfloat16
        with pytest.warns(DeprecationWarning, match=r"is_autocast_cpu_enabled\(\) is deprecated"):
            assert not lib.is_autocast_cpu_enabled()
        with pytest.warns(DeprecationWarning, match=r"get_autocast_gpu_dtype\(\) is deprecated"):
            assert lib.get_autocast_gpu_dtype() is lib.float16


def test_construction_errors_and_warnings_match_torch():
    for lib in (torch, ember):
        with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
            lib.autocast(lib.device("cpu"))
        with pytest.warns(UserWarning, match="In CPU autocast, but the target dtype is not "
                                             "supported. Disabling autocast.\nCPU Autocast only "
                                             "supports dtypes of (torch|ember).bfloat16, "
                                             "(torch|ember).float16 currently."):
            ctx = lib.autocast("cpu", dtype=lib.float32)
        with ctx:
            assert not lib.is_autocast_enabled("cpu")
        with pytest.raises(TypeError, match="requires a callable, but got int"):
            lib.autocast("cpu")(3)


@pytest.mark.skipif(torch.cuda.is_available() or ember.cuda.is_available(), reason="no CUDA")
def test_cuda_without_a_gpu_warns_and_disables():
    for lib in (torch, ember):
        with pytest.warns(UserWarning, match="CUDA is not available"):
            ctx = lib.autocast("cuda")
        with ctx:
            assert not lib.is_autocast_enabled("cuda")


def _product_dtype(lib):
    return _lib_name(lib.mm(lib.ones(2, 2), lib.ones(2, 2)).dtype)


def test_nesting_enabled_false_inside_and_decorator():
    for lib in (torch, ember):
        @lib.autocast("cpu", dtype=lib.float16)
        def half_product():
            return _product_dtype(lib)

        seen = []
        with lib.autocast("cpu"):
            seen.append(_product_dtype(lib))
            with lib.autocast("cpu", enabled=False):
                seen.append(_product_dtype(lib))
                seen.append(half_product())
                seen.append(_product_dtype(lib))
            seen.append(_product_dtype(lib))
        seen.append(_product_dtype(lib))
        assert seen == ["bfloat16", "float32", "float16", "float32", "bfloat16", "float32"]


def test_exception_restores_state():
    for lib in (torch, ember):
        with pytest.raises(KeyError):
            with lib.autocast("cpu", dtype=lib.float16, cache_enabled=False):
                raise KeyError("x")
        assert not lib.is_autocast_enabled("cpu")
        assert lib.get_autocast_dtype("cpu") is lib.bfloat16
        assert lib.is_autocast_cache_enabled()
        assert _product_dtype(lib) == "float32"
    assert not ember.amp.autocast_mode.active


def test_state_is_thread_local():
    for lib in (torch, ember):
        seen = {}

        def other():
            seen["enabled"] = lib.is_autocast_enabled("cpu")
            seen["dtype"] = lib.get_autocast_dtype("cpu")
            seen["product"] = _product_dtype(lib)
            with lib.autocast("cpu", dtype=lib.float16):
                seen["inner"] = _product_dtype(lib)

        with lib.autocast("cpu"):
            lib.set_autocast_dtype("cpu", lib.float16)
            thread = threading.Thread(target=other)
            thread.start()
            thread.join()
            lib.set_autocast_dtype("cpu", lib.bfloat16)
            assert _product_dtype(lib) == "bfloat16"
        assert seen == {"enabled": False, "dtype": lib.bfloat16, "product": "float32",
                        "inner": "float16"}


# ---- the weight cast cache ------------------------------------------------------------------

def _cast_node(lib, x, w):
    """The node that cast ``w`` for ``mm(x, w)``."""
    return lib.mm(x, w).grad_fn.next_functions[1][0]


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_leaf_is_cast_once_per_outermost_region(lib):
    x = lib.ones(2, 3)
    w = lib.ones(3, 4, requires_grad=True)
    with lib.autocast("cpu"):
        first = _cast_node(lib, x, w)
        assert type(first).__name__ == "ToCopyBackward0"
        with lib.autocast("cpu"):
            assert _cast_node(lib, x, w) is first  # nested regions share the cache
        assert _cast_node(lib, x, w) is first
    with lib.autocast("cpu"):
        assert _cast_node(lib, x, w) is not first  # leaving the outermost region cleared it
    with lib.autocast("cpu", cache_enabled=False):
        assert _cast_node(lib, x, w) is not _cast_node(lib, x, w)


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_only_float32_leaves_that_require_grad_are_cached(lib):
    x = lib.ones(2, 3)
    w = lib.ones(3, 4, requires_grad=True)
    with lib.autocast("cpu"):
        nonleaf = w * 1
        assert _cast_node(lib, x, nonleaf) is not _cast_node(lib, x, nonleaf)
        view = w[:, :2]
        assert _cast_node(lib, x, view) is not _cast_node(lib, x, view)
        plain = lib.ones(3, 4)  # no grad: nothing to compare by node; the casts are fresh
        assert lib.mm(x, plain).dtype is lib.bfloat16


# ---- gradients ------------------------------------------------------------------------------

def test_gradients_of_float32_leaves_through_casts():
    x, w1, b1, w2 = _randn(4, 5), _randn(6, 5), _randn(6), _randn(3, 6)
    results = {}
    for lib in (torch, ember):
        params = [lib.tensor(a, requires_grad=True) for a in (w1, b1, w2)]
        xin = lib.tensor(x, requires_grad=True)
        with lib.autocast("cpu"):
            h = F(lib).linear(xin, params[0], params[1]).relu()
            out = F(lib).linear(h, params[2])
            out = lib.matmul(out, params[2])  # the same weight again, from the cache
            loss = F(lib).mse_loss(out, lib.zeros(4, 6))
        assert _lib_name(loss.dtype) == "float32"
        loss.backward()
        results[lib] = [loss] + [p.grad for p in (xin, *params)]
    for g, e in zip(results[ember], results[torch]):
        assert _lib_name(g.dtype) == "float32" == _lib_name(e.dtype)
        np.testing.assert_allclose(_to_numpy(g), _to_numpy(e), rtol=3e-2, atol=3e-2)


# ---- models ---------------------------------------------------------------------------------

def _copy_parameters(src, dst):
    for (name, p), (name2, q) in zip(src.named_parameters(), dst.named_parameters()):
        assert name == name2
        with ember.no_grad():
            q.copy_(ember.tensor(p.detach().numpy()))


def _train_step(lib, model, x, target):
    with lib.autocast("cpu"):
        out = model(x)
        loss = F(lib).cross_entropy(out.reshape(-1, out.shape[-1]), target)
    loss.backward()
    return loss, {n: p.grad for n, p in model.named_parameters()}


def _compare_models(torch_model, ember_model, x, target, tol):
    _copy_parameters(torch_model, ember_model)
    lt, gt = _train_step(torch, torch_model, torch.tensor(x), torch.tensor(target))
    le, ge = _train_step(ember, ember_model, ember.tensor(x), ember.tensor(target))
    assert _lib_name(le.dtype) == _lib_name(lt.dtype) == "float32"
    np.testing.assert_allclose(le.item(), lt.item(), rtol=tol)
    for name, g in gt.items():
        assert ge[name].dtype is ember.float32
        scale = max(float(g.abs().max()), 1e-3)
        np.testing.assert_allclose(_to_numpy(ge[name]) / scale, g.numpy() / scale, atol=tol,
                                   err_msg=name)


def test_mlp_step_under_cpu_autocast():
    torch.manual_seed(0)
    def build(lib):
        nn = lib.nn
        return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.GELU(),
                             nn.Linear(16, 4))
    _compare_models(build(torch), build(ember), _randn(6, 8), _long(4, 6), 3e-2)


def test_transformer_encoder_layer_step_under_cpu_autocast():
    torch.manual_seed(0)
    def build(lib):
        return lib.nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0,
                                              batch_first=True)
    _compare_models(build(torch), build(ember), _randn(2, 5, 16), _long(16, 10), 5e-2)


# ---- CUDA's policy table against PyTorch's CUDA lists ------------------------------------------

# PyTorch's CUDA lists by ATen name: aten/src/ATen/autocast_mode.h (AT_FORALL_LOWER_PRECISION_FP,
# AT_FORALL_FP32, AT_FORALL_FP32_SET_OPT_DTYPE, the fp32_append_dtype ``norm`` overloads,
# AT_FORALL_PROMOTE), binary_cross_entropy banned in autocast_mode.cpp, and cuDNN's RNN cast to
# float16 in aten/src/ATen/cudnn/AutocastRNN.cpp.
TORCH_CUDA_LISTS = {
    "lower": """_convolution conv1d conv2d conv3d conv_tbc conv_transpose1d conv_transpose2d
        conv_transpose3d convolution prelu addmm addmv addr matmul einsum mm mv linalg_vecdot
        linear addbmm baddbmm bmm chain_matmul linalg_multi_dot _thnn_fused_lstm_cell
        _thnn_fused_gru_cell lstm_cell gru_cell rnn_tanh_cell rnn_relu_cell
        _scaled_dot_product_flash_attention scaled_dot_product_attention""",
    "fp32": """acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh tan pow
        softplus layer_norm native_layer_norm group_norm frobenius_norm nuclear_norm
        cosine_similarity poisson_nll_loss cosine_embedding_loss nll_loss nll_loss2d
        hinge_embedding_loss kl_div l1_loss smooth_l1_loss huber_loss mse_loss
        margin_ranking_loss multilabel_margin_loss soft_margin_loss triplet_margin_loss
        multi_margin_loss binary_cross_entropy_with_logits dist pdist cdist renorm logsumexp
        upsample_nearest1d _upsample_nearest_exact1d upsample_nearest2d _upsample_nearest_exact2d
        upsample_nearest3d _upsample_nearest_exact3d upsample_linear1d upsample_bilinear2d
        _upsample_bilinear2d_aa upsample_trilinear3d upsample_bicubic2d _upsample_bicubic2d_aa
        prod softmax log_softmax cumprod cumsum linalg_vector_norm linalg_matrix_norm sum
        norm""",
    "promote": """addcdiv addcmul atan2 bilinear cross dot vdot grid_sampler index_put tensordot
        scatter_add""",
    "banned": "binary_cross_entropy",
    "float16": "_cudnn_rnn",
}

# ATen names whose Ember op asks by another key: the upsample kernels are F.interpolate's one
# key, nll_loss2d is nll_loss's 4-D form.
_EMBER_KEY = {"nll_loss2d": "nll_loss", **{n: "upsample" for n in TORCH_CUDA_LISTS["fp32"].split()
                                           if "upsample" in n}}
# ATen ops Ember does not have (their work is done inside ops that are listed: Ember's conv ops,
# its scaled_dot_product_attention and layer_norm; or there is no such public op).
_NOT_IN_EMBER = set("""_convolution convolution _thnn_fused_lstm_cell _thnn_fused_gru_cell
    _scaled_dot_product_flash_attention native_layer_norm frobenius_norm nuclear_norm""".split())
# Ember ops that do not take part in CUDA's autocast yet (none).
_NOT_YET_ROUTED = set()


def _cuda_list_params():
    for category, names in TORCH_CUDA_LISTS.items():
        for name in names.split():
            if name in _NOT_IN_EMBER:
                continue
            marks = ([pytest.mark.xfail(strict=True, reason="not routed through autocast yet")]
                     if name in _NOT_YET_ROUTED else [])
            yield pytest.param(name, category, marks=marks, id=name)


@pytest.mark.parametrize("aten_name, category", list(_cuda_list_params()))
def test_cuda_policy_matches_torchs_cuda_lists(aten_name, category):
    import ember.amp.autocast_mode as mode
    key = _EMBER_KEY.get(aten_name, aten_name)
    assert mode.POLICIES["cuda"].get(key) == category


def test_cuda_policy_holds_nothing_torch_does_not_list():
    import ember.amp.autocast_mode as mode
    listed = {_EMBER_KEY.get(n, n) for names in TORCH_CUDA_LISTS.values() for n in names.split()}
    # cross_entropy_loss: PyTorch's is composite over log_softmax and nll_loss, both float32 ops
    # on CUDA; Ember's is one op. trace and xlogy: one unlisted kernel each in PyTorch, composed
    # of listed ops (sum, log) in Ember, so "native" (nothing cast, the inner ops excluded).
    assert set(mode.POLICIES["cuda"]) - listed == {"cross_entropy_loss", "trace", "xlogy"}


def test_ops_torch_lists_exist_in_ember_or_are_named_missing():
    # The ATen names above that Ember is said to have are real Ember callables.
    F_ = ember.nn.functional
    where = {"softplus": F_, "layer_norm": F_, "group_norm": F_, "cosine_similarity": F_,
             "grid_sampler": None, "linalg_vecdot": ember.linalg, "linalg_multi_dot": ember.linalg,
             "linalg_vector_norm": ember.linalg, "linalg_matrix_norm": ember.linalg,
             "lstm_cell": None, "gru_cell": None, "rnn_tanh_cell": None, "rnn_relu_cell": None,
             "_cudnn_rnn": None}
    for names in TORCH_CUDA_LISTS.values():
        for name in names.split():
            if name in _NOT_IN_EMBER or "upsample" in name or name == "nll_loss2d":
                continue
            module = where.get(name, ember)
            if module is None:
                continue  # reached through nn modules / F.grid_sample, tested by routing
            attr = name.removeprefix("linalg_") if module is ember.linalg else name
            if module is ember and not hasattr(ember, attr):
                module, attr = F_, name
            assert hasattr(module, attr), name


# The "Autocast Op Reference" names CUDA's ops by their Python spelling; each is one of the ATen
# entries above, in the same category.
_DOCS_CUDA = {
    "lower": {"__matmul__": "matmul", "multi_dot": "linalg_multi_dot", "GRUCell": "gru_cell",
              "LSTMCell": "lstm_cell", "RNNCell": "rnn_tanh_cell", "conv_transpose1d": None,
              "addbmm": None, "addmm": None, "addmv": None, "addr": None, "baddbmm": None,
              "bmm": None, "chain_matmul": None, "conv1d": None, "conv2d": None, "conv3d": None,
              "conv_transpose2d": None, "conv_transpose3d": None, "linear": None, "matmul": None,
              "mm": None, "mv": None, "prelu": None},
    "fp32": {"__pow__": "pow", "__rpow__": "pow", "__rdiv__": "reciprocal",
             "__rtruediv__": "reciprocal", "normalize": "norm", "softmin": "softmax",
             "cross_entropy": "log_softmax", **{n: None for n in """acos asin
             binary_cross_entropy_with_logits cosh cosine_embedding_loss cdist cosine_similarity
             cumprod cumsum dist erfinv exp expm1 group_norm hinge_embedding_loss kl_div l1_loss
             layer_norm log log_softmax log10 log1p log2 margin_ranking_loss mse_loss
             multilabel_margin_loss multi_margin_loss nll_loss norm pdist poisson_nll_loss pow
             prod reciprocal rsqrt sinh smooth_l1_loss soft_margin_loss softmax softplus sum
             renorm tan triplet_margin_loss""".split()}},
    "promote": {"grid_sample": "grid_sampler", **{n: None for n in """addcdiv addcmul atan2
                bilinear cross dot index_put scatter_add tensordot""".split()}},
}


def test_docs_op_reference_agrees_with_the_source_lists():
    for category, names in _DOCS_CUDA.items():
        source = TORCH_CUDA_LISTS[category].split()
        for doc_name, aten_name in names.items():
            assert (aten_name or doc_name) in source, (category, doc_name)


# ---- CUDA -----------------------------------------------------------------------------------

CUDA_ONLY = [  # entries of CUDA's lists that the CPU's lack, with the dtype CUDA's policy gives
    ("softmax", lambda L, x: x.softmax(-1), "float32"),
    ("log_softmax", lambda L, x: F(L).log_softmax(x, 1), "float32"),
    ("softmax_dtype", lambda L, x: x.softmax(-1, dtype=L.float16), "float16"),
    ("layer_norm", lambda L, x: F(L).layer_norm(x, (5,)), "float32"),
    ("group_norm", lambda L, x: F(L).group_norm(x[:, :4], 2), "float32"),
    ("softplus", lambda L, x: F(L).softplus(x), "float32"),
    ("cumsum", lambda L, x: x.cumsum(0), "float32"),
    ("logsumexp", lambda L, x: x.logsumexp(1), "float32"),
    ("upsample", lambda L, x: F(L).interpolate(x[None], scale_factor=2), "float32"),
    ("cosine_similarity", lambda L, x: F(L).cosine_similarity(x, x), "float32"),
    ("mv", lambda L, x: L.mv(x.float(), x[0].float()), "float16"),
    ("einsum", lambda L, x: L.einsum("ij,kj->ik", x.float(), x.float()), "float16"),
    ("addcmul", lambda L, x: L.addcmul(x, x.float(), x), "float32"),
    ("dot", lambda L, x: L.dot(x[0], x[1]), "float16"),
    ("atan2", lambda L, x: L.atan2(x.float(), x), "float32"),
    ("bilinear", lambda L, x: F(L).bilinear(x, x, L.ones(2, 5, 5)), "float32"),
    ("exp", lambda L, x: x.exp(), "float32"),
    ("log1p", lambda L, x: L.log1p(x.abs()), "float32"),
    ("reciprocal", lambda L, x: x.reciprocal(), "float32"),
    ("rtruediv", lambda L, x: 2 / x, "float32"),  # torch's __rtruediv__ is reciprocal * other
    ("pow", lambda L, x: x ** 2, "float32"),
    ("rpow", lambda L, x: 2 ** x, "float32"),
    ("sum", lambda L, x: x.sum(1), "float32"),
    ("sum_dtype", lambda L, x: x.sum(dtype=L.float16), "float16"),
    ("norm", lambda L, x: x.norm(), "float32"),
    ("vector_norm", lambda L, x: L.linalg.vector_norm(x, dim=1), "float32"),
    ("matrix_norm", lambda L, x: L.linalg.matrix_norm(x), "float32"),
    ("index_put", lambda L, x: x.index_put((L.tensor([0]),), x[0].float()), "float32"),
    ("xlogy", lambda L, x: L.xlogy(x, x.abs() + 1), "float16"),  # one unlisted kernel
    ("trace", lambda L, x: x[:4, :4].trace(), "float16"),  # CPU-only float32 op
    # embedding_renorm_ is in place: max_norm's norms are not autocast
    ("embedding_max_norm", lambda L, x: F(L).embedding(L.tensor([0, 2]), x.clone(), max_norm=0.5),
     "float16"),
]


@pytest.mark.parametrize("fn, expected", [pytest.param(f, e, id=n) for n, f, e in CUDA_ONLY])
def test_cuda_policy_routing(monkeypatch, fn, expected):
    # No GPU here: CUDA's policy table is put in the CPU's place, so each op that CUDA's lists
    # name but the CPU's do not is seen asking for it (the dtypes are CUDA autocast's, from its
    # op reference; PyTorch's CPU build cannot run them).
    import ember.amp.autocast_mode as mode
    monkeypatch.setitem(mode.POLICIES, "cpu", mode.POLICIES["cuda"])
    x = ember.tensor(_randn(4, 5)).half()
    with ember.autocast("cpu", dtype=ember.float16):
        assert _lib_name(fn(ember, x).dtype) == expected


def test_cuda_policy_bans_binary_cross_entropy(monkeypatch):
    import ember.amp.autocast_mode as mode
    monkeypatch.setitem(mode.POLICIES, "cpu", mode.POLICIES["cuda"])
    x = ember.tensor(_sig())
    with ember.autocast("cpu"), pytest.raises(RuntimeError, match="are unsafe to autocast"):
        F(ember).binary_cross_entropy(x, x)


@pytest.mark.cuda
def test_cuda_float16_autocast():
    a, b = _randn(16, 32), _randn(32, 8)
    x, w = ember.tensor(a, device="cuda"), ember.tensor(b, device="cuda", requires_grad=True)
    with ember.autocast("cuda"):
        y = x @ w
        cpu_y = ember.tensor(a) @ ember.tensor(b)  # CPU tensors: the CUDA region leaves them
        assert ember.is_autocast_enabled("cuda") and not ember.is_autocast_enabled("cpu")
    assert y.dtype is ember.float16 and cpu_y.dtype is ember.float32
    np.testing.assert_allclose(y.float().cpu().numpy(), a @ b, rtol=1e-2, atol=5e-2)
    y.float().sum().backward()
    assert w.grad.dtype is ember.float32
    np.testing.assert_allclose(w.grad.cpu().numpy(), a.sum(0)[:, None].repeat(8, 1), rtol=1e-2,
                               atol=5e-2)
