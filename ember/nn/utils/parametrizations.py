"""``weight_norm``, ``spectral_norm`` and ``orthogonal`` as parametrizations, as
``torch.nn.utils.parametrizations``: the state (``original``, ``original0/1``, ``_u``/``_v``,
``base``) sits under the same ``state_dict`` keys as PyTorch's, so its checkpoints load."""
import math

import ember
from ..._tensor import _wrap
from ..modules.module import Module
from . import parametrize

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _normalize(x, eps):
    """``x / max(||x||, eps)`` (``F.normalize`` of a vector)."""
    return x / ember.clamp(x.norm(), min=eps)


# ---- weight norm ------------------------------------------------------------------------------

def _norm_except_dim(v, dim):
    """The 2-norm of ``v`` over every dimension but ``dim`` (all of them when ``dim`` is -1),
    keeping ``dim``'s size and 1 elsewhere."""
    if dim == -1:
        return v.norm()
    others = tuple(d for d in range(v.ndim) if d != dim)
    return (v * v).sum(others, keepdim=True).sqrt()


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / _norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight):
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """Reparametrize ``module.<name>`` as ``g * v / ||v||``, the norm taken over every dimension
    but ``dim`` (``None``: the whole tensor); ``g`` and ``v`` become
    ``parametrizations.<name>.original0`` and ``original1``."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


# ---- spectral norm ----------------------------------------------------------------------------

class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", _normalize(u, self.eps))
            self.register_buffer("_v", _normalize(v, self.eps))
            # Start from a reasonable estimate of the singular vectors.
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat, n_power_iterations):
        # sigma = u^T W v for the leading singular vectors u, v; the buffers are updated in
        # place so that they stay the tensors in the state_dict.
        with ember.no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(_normalize(ember.mv(weight_mat, self._v), self.eps))
                self._v.copy_(_normalize(ember.mv(weight_mat.mH, self._u), self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return _normalize(weight, self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        # Clones, so that the next power iteration does not change the saved u and v.
        u = self._u.clone()
        v = self._v.clone()
        sigma = ember.vdot(u, ember.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def _conv_transpose_classes():
    from .. import modules
    return tuple(getattr(modules, name) for name in
                 ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d")
                 if hasattr(modules, name))


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Divide ``module.<name>`` by its largest singular value, estimated by
    ``n_power_iterations`` steps of power iteration per training-mode access."""
    weight = getattr(module, name, None)
    if not isinstance(weight, ember.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, _conv_transpose_classes()) else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


# ---- orthogonal -------------------------------------------------------------------------------

def _matrix_exp(A):
    """``exp(A)`` by scaling and squaring a Taylor series, in differentiable Ember ops."""
    n = A.shape[-1]
    norm = float(A.detach().abs().sum(-2).amax()) if A.numel() else 0.0
    squarings = max(0, math.ceil(math.log2(norm)) + 1) if norm > 0.5 else 0
    X = A / (2 ** squarings)
    eye = ember.eye(n, dtype=A.dtype, device=A.device)
    result = eye + X
    term = X
    # With ||X|| <= 1/2, terms past the 18th are below double precision.
    for k in range(2, 19):
        term = term @ X / k
        result = result + term
    for _ in range(squarings):
        result = result @ result
    return result


def _householder_product(A, tau):
    """The first ``k`` columns of ``H_1 ... H_k``, ``H_i = I - tau_i v_i v_i^T``, ``v_i`` being
    column ``i`` of ``A`` below the diagonal with a 1 on it (``linalg.householder_product``)."""
    n, k = A.shape[-2], A.shape[-1]
    eye = ember.eye(n, k, dtype=A.dtype, device=A.device)
    V = A.tril(-1) + eye
    Q = eye.expand(*A.shape[:-2], n, k)
    for i in range(k - 1, -1, -1):
        v = V[..., :, i:i + 1]
        Q = Q - tau[..., i:i + 1].unsqueeze(-1) * (v @ (v.mT @ Q))
    return Q


def _is_orthogonal(Q, eps=None):
    n, k = Q.shape[-2], Q.shape[-1]
    eye = ember.eye(k, dtype=Q.dtype, device=Q.device)
    if eps is None:
        eps = 10. * n * float(Q._backend.xp.finfo(Q._data.dtype).eps)
    return bool(ember.allclose(Q.mH @ Q, eye, atol=eps))


def _make_orthogonal(A):
    """The Q factor of ``A = QR`` with R's diagonal made positive (a unique orthogonal matrix)."""
    xp = A._backend.xp
    q, r = xp.linalg.qr(A._data)
    signs = xp.sign(xp.diagonal(r, axis1=-2, axis2=-1))
    signs = xp.where(signs == 0, 1, signs)
    return _wrap(q * signs[..., None, :], A.dtype, A)


class _Orthogonal(Module):
    _MAPS = ("matrix_exp", "cayley", "householder")

    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        if weight.is_complex() and orthogonal_map == "householder":
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        # X is now tall (n >= k).
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            X = X.tril()
            if n != k:
                X = ember.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH  # skew-symmetric: both maps send it to an orthogonal matrix
            if self.orthogonal_map == "matrix_exp":
                Q = _matrix_exp(A)
            else:
                # Cayley: (I - A/2)^-1 (I + A/2)
                eye = ember.eye(n, dtype=A.dtype, device=A.device)
                Q = ember.linalg.solve(eye - A / 2, eye + A / 2)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2. / (1. + (A * A).sum(dim=-2))
            Q = _householder_product(A, tau)
            # X's diagonal holds the signs (+-1) of Q's columns; it is not trained.
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2).to(Q.dtype)
        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q):
        with ember.no_grad():
            if Q.shape != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                                 f"Got a tensor of shape {Q.shape}.")
            Q_init = Q
            n, k = Q.shape[-2], Q.shape[-1]
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if not hasattr(self, "base"):
                if self.orthogonal_map != "householder":
                    raise NotImplementedError("It is not possible to assign to the matrix "
                                              "exponential or the Cayley parametrizations when "
                                              "use_trivialization=False.")
                return self._householder_inverse(Q, transpose)
            if n == k:
                Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
            else:
                # Complete Q to a square orthogonal matrix with random columns.
                N = ember.randn(*(tuple(Q.shape[:-2]) + (n, n - k)), dtype=Q.dtype,
                                device=Q.device)
                Q = _make_orthogonal(ember.cat([Q, N], dim=-1))
            self.base = Q
            # -Id makes the parametrization start at base: householder(zeros) is eye, and the
            # diagonal holds the signs.
            neg_id = ember.zeros_like(Q_init)
            neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.)
            return neg_id

    @staticmethod
    def _householder_inverse(Q, transpose):
        """The reflectors of Q's QR decomposition (LAPACK's geqrf layout), with the diagonal
        holding the signs that make R's diagonal positive."""
        xp = Q._backend.xp
        reflectors, tau = xp.linalg.qr(Q._data, mode="raw")  # reflectors come transposed
        A = xp.array(xp.swapaxes(reflectors, -1, -2))
        diagonal = xp.sign(xp.diagonal(A, axis1=-2, axis2=-1))
        # LAPACK sets tau to exactly zero where it skips a reflection.
        diagonal = xp.where(tau == 0, -diagonal, diagonal)
        k = diagonal.shape[-1]
        A[..., xp.arange(k), xp.arange(k)] = diagonal
        A = _wrap(A.astype(Q._data.dtype), Q.dtype, Q)
        return A.mT if transpose else A


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Constrain the matrix (or batch of matrices) ``module.<name>`` to be orthogonal: its
    columns (or rows, if wide) orthonormal. ``orthogonal_map`` is "matrix_exp" (the default for
    square matrices), "cayley" or "householder" (the default otherwise)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, ember.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError("Expected a matrix or batch of matrices. "
                         f"Got a tensor of {weight.ndim} dimensions.")
    n, k = weight.shape[-2], weight.shape[-1]
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if n == k or weight.is_complex() else "householder"
    if orthogonal_map not in _Orthogonal._MAPS:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
