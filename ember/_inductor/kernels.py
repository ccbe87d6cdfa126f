"""The array kernels that generated code calls directly: each takes the backend's arrays (NumPy on
the CPU, CuPy on CUDA, through ``xp``/``backend``) and returns arrays, with no Tensor, no
argument checks and no autograd recording — the checks ran once, when the graph was traced.

Each forward kernel follows the arithmetic of the eager op it replaces (``ops/activation.py``,
``ops/normalization.py``, ``ops/reduce.py``, ``ops/loss.py``, ``ops/matmul.py``), so compiled and
eager results agree to rounding; the ``*_backward`` kernels are the closed forms of the eager
nodes' ``backward``. An ``out`` argument, where there is one, is a preallocated buffer of the
result's shape that the kernel writes into (see ``memory_planning.py``)."""
import math

_SQRT_HALF = math.sqrt(0.5)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_CUBIC = 0.044715
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def sum_to(g, shape):
    """``g`` summed down to ``shape``, the adjoint of broadcasting ``shape`` to ``g.shape``."""
    if g.shape == tuple(shape):
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape)
                                      if s == 1 and g.shape[i + lead] != 1)
    return g.sum(axis=axes, keepdims=True).reshape(shape) if axes else g.reshape(shape)


def grad_data(xp, t, shape, dtype):
    """The array of gradient ``t`` from ``autograd.grad``, zeros where it is None (unused)."""
    return xp.zeros(shape, dtype=dtype.np) if t is None else t._data


# ---- matrix products -------------------------------------------------------------------------
_PLAIN_MATMUL = {}


def _writes_out(backend):
    """Whether ``backend.matmul`` is NumPy's plain product, so ``xp.matmul(..., out=)`` is the
    same product written into a buffer (a backend with its own matmul policy — CUDA's TF32,
    say — is always called through ``backend.matmul``)."""
    kind = type(backend)
    plain = _PLAIN_MATMUL.get(kind)
    if plain is None:
        from ..backends.numpy_backend import NumpyBackend
        plain = _PLAIN_MATMUL[kind] = kind.matmul is NumpyBackend.matmul
    return plain


def linear(backend, x, w, b, out=None):
    """``x @ w.T + b`` as eager ``linear`` computes it: one matrix product of the rows (a
    stack of rows is flattened to one matrix), then the bias added in place."""
    xp = backend.xp
    rows = x if x.ndim == 2 else x.reshape(-1, x.shape[-1])
    # through the backend's product, as eager's: its BLAS choices (MKL, OpenBLAS's few-rows
    # rewrite, CUDA's TF32 policy) hold in compiled graphs too
    if out is not None and not _writes_out(backend):
        out2 = backend.matmul(rows, w.T)
    elif out is not None:
        out2 = out if out.ndim == 2 else out.reshape(rows.shape[0], w.shape[0])
        backend.matmul_into(out2, rows, w.T)
    else:
        out2 = backend.matmul(rows, w.T)
    if b is not None:
        xp.add(out2, b, out=out2)
    return out2 if x.ndim == 2 else out2.reshape(x.shape[:-1] + (w.shape[0],))


def linear_backward(backend, g, x, w, need_x, need_w, need_b):
    xp = backend.xp
    g2 = g if g.ndim == 2 else g.reshape(-1, g.shape[-1])
    gx = gw = gb = None
    if need_x:
        gx = backend.matmul(g2, w)
        if x.ndim != 2:
            gx = gx.reshape(x.shape)
    if need_w:
        x2 = x if x.ndim == 2 else x.reshape(-1, x.shape[-1])
        gw = backend.matmul(g2.T, x2)
    if need_b:
        gb = g2.sum(axis=0)
    return gx, gw, gb


def matmul(backend, a, b, out=None):
    if out is not None and a.ndim == 2 and b.ndim == 2 and _writes_out(backend):
        backend.matmul_into(out, a, b)
        return out
    return backend.matmul(a, b)


def matmul_backward(backend, g, a, b, need_a, need_b):
    """The product's adjoint for operands of two or more dimensions (broadcast batch dims summed
    back to each operand's shape)."""
    ga = gb = None
    if need_a:
        ga = sum_to(backend.matmul(g, b.swapaxes(-1, -2)), a.shape)
    if need_b:
        gb = sum_to(backend.matmul(a.swapaxes(-1, -2), g), b.shape)
    return ga, gb


# ---- activations -----------------------------------------------------------------------------
def sigmoid(xp, x):
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


def gelu(backend, x, approximate):
    if approximate == "tanh":
        return x * 0.5 * (1 + backend.xp.tanh((x + _GELU_CUBIC * x * x * x) * _SQRT_2_OVER_PI))
    return x * 0.5 * (1 + backend.erf(x * _SQRT_HALF))


def gelu_backward(backend, g, x, approximate):
    xp = backend.xp
    if approximate == "tanh":
        t = xp.tanh((x + x * x * x * _GELU_CUBIC) * _SQRT_2_OVER_PI)
        d_inner = (x * x * (3 * _GELU_CUBIC) + 1) * _SQRT_2_OVER_PI
        return g * ((t + 1) * 0.5 + x * 0.5 * (1 - t * t) * d_inner)
    cdf = (backend.erf(x * _SQRT_HALF) + 1) * 0.5
    pdf = xp.exp(x * x * -0.5) * _INV_SQRT_2PI
    return g * (cdf + x * pdf)


def silu(xp, x):
    return x * sigmoid(xp, x)


def silu_backward(xp, g, x):
    s = sigmoid(xp, x)
    return g * s * (x * (1 - s) + 1)


# ---- softmax ---------------------------------------------------------------------------------
def softmax(xp, x, dim, log):
    peak = x.max(axis=dim, keepdims=True)
    if getattr(xp, "seterr", None) is not None and not xp.isfinite(peak).all():
        # An infinite or NaN row: eager computes it with NumPy's warnings off (such rows
        # become NaN, as in torch). Finite rows cannot overflow, so they skip that cost.
        with _quiet(xp):
            return _softmax_shifted(xp, x - peak, dim, log)
    return _softmax_shifted(xp, x - peak, dim, log)


def _softmax_shifted(xp, shifted, dim, log):
    e = xp.exp(shifted)
    s = e.sum(axis=dim, keepdims=True)
    return shifted - xp.log(s) if log else e / s


def softmax_backward(xp, g, y, dim, log):
    if log:
        return g - xp.exp(y) * g.sum(axis=dim, keepdims=True)
    gy = g * y
    return gy - y * gy.sum(axis=dim, keepdims=True)


class _quiet:
    """NumPy's floating-point warnings off, as the eager ops compute (infinities become NaN
    silently, as in torch); CuPy has no such state."""
    __slots__ = ("xp", "old")

    def __init__(self, xp):
        self.xp = xp

    def __enter__(self):
        errstate = getattr(self.xp, "seterr", None)
        self.old = errstate(all="ignore") if errstate is not None else None

    def __exit__(self, *exc):
        if self.old is not None:
            self.xp.seterr(**self.old)


# ---- normalisation ---------------------------------------------------------------------------
def layer_norm(xp, x, w, b, nd, eps):
    """``(out, mean, invstd)`` over the last ``nd`` axes, as eager ``normalize_affine``."""
    axes = tuple(range(x.ndim - nd, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    centered = x - mean
    count = x.size // mean.size if mean.size else 0
    var = (centered * centered).sum(axis=axes, keepdims=True) / max(count, 1)
    invstd = 1.0 / xp.sqrt(var + eps)
    out = centered
    if w is not None:
        out *= invstd * w
    else:
        out *= invstd
    if b is not None:
        out += b
    return out, mean, invstd


def layer_norm_backward(xp, g, x, w, mean, invstd, nd, need_x, need_w, need_b):
    axes = tuple(range(x.ndim - nd, x.ndim))
    lead = tuple(range(x.ndim - nd))
    xhat = (x - mean) * invstd
    gx = gw = gb = None
    if need_x:
        gw_in = g if w is None else g * w
        gx = (gw_in - gw_in.mean(axis=axes, keepdims=True)
              - xhat * (gw_in * xhat).mean(axis=axes, keepdims=True)) * invstd
    if need_w:
        gw = (g * xhat).sum(axis=lead) if lead else g * xhat
    if need_b:
        gb = g.sum(axis=lead) if lead else g
    return gx, gw, gb


def batch_norm_eval(xp, x, mean, var, w, b, eps):
    """Batch norm with running statistics: one multiply and one add per element, the per-channel
    scale and shift computed first, as eager ``batch_norm_eval``."""
    view = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    scale = 1 / xp.sqrt(var + eps)
    if w is not None:
        scale = scale * w
    shift = -mean * scale
    if b is not None:
        shift = shift + b
    return x * scale.reshape(view) + shift.reshape(view)


# ---- loss ------------------------------------------------------------------------------------
def nll_loss(xp, lsm, target, ignore_index, reduction):
    """``(loss, valid, count)`` of log-probabilities ``lsm`` ``(N, C)`` at class-index targets,
    as eager ``nll_loss``; ``valid`` masks the targets not ignored."""
    valid = target != ignore_index
    classes = lsm.shape[1]
    bad = valid & ((target < 0) | (target >= classes))
    if bad.any():  # the bound check eager nll_loss makes, with torch's message
        raise IndexError(f"Target {int(target[bad][0])} is out of bounds.")
    picked = lsm[xp.arange(lsm.shape[0]), xp.where(valid, target, 0)]
    total = xp.asarray((-picked * valid).sum())
    count = valid.sum()
    if reduction == "sum":
        return total, valid, count
    if not count:  # a mean over no target is NaN, as eager's
        return xp.asarray(xp.nan, dtype=lsm.dtype), valid, count
    return (total / count).astype(lsm.dtype), valid, count


def nll_loss_backward(xp, g, lsm, target, valid, count, reduction):
    grad = xp.zeros_like(lsm)
    rows = xp.arange(lsm.shape[0])
    grad[rows, xp.where(valid, target, 0)] = xp.where(valid, -1, 0)
    scale = g if reduction == "sum" else g / max(int(count), 1)
    return (grad * scale).astype(lsm.dtype, copy=False)


def cross_entropy(xp, x, target, ignore_index, reduction):
    """``(loss, log_probs, valid, count)``: eager ``log_softmax`` then ``nll_loss``."""
    lsm = softmax(xp, x, 1, True)
    loss, valid, count = nll_loss(xp, lsm, target, ignore_index, reduction)
    return loss, lsm, valid, count


def cross_entropy_backward(xp, g, lsm, target, valid, count, reduction):
    grad = xp.exp(lsm)
    rows = xp.arange(lsm.shape[0])
    grad[rows, xp.where(valid, target, 0)] -= 1
    grad *= valid[:, None]
    scale = g if reduction == "sum" else g / max(int(count), 1)
    return (grad * scale).astype(lsm.dtype, copy=False)


def mse_loss(x, y, reduction):
    d = x - y
    sq = d * d
    if reduction == "mean":
        return sq.mean()
    return sq.sum() if reduction == "sum" else sq


def mse_loss_backward(g, x, y, reduction):
    d = x - y
    if reduction == "mean":
        return d * (2.0 / max(d.size, 1)) * g
    return d * 2.0 * g


# ---- attention -------------------------------------------------------------------------------
def _bmm(backend, a, b):
    # Stacked products on C-contiguous operands, as eager attention (``ops/attention.py``):
    # NumPy's stacked product over a permuted view is several times slower than a copy first.
    xp = backend.xp
    return backend.matmul(xp.ascontiguousarray(a), xp.ascontiguousarray(b))


def attention(backend, q, k, v, scale):
    """``(out, probs)``: unmasked scaled dot-product attention without dropout, as eager's
    CPU flash path computes it."""
    xp = backend.xp
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = _bmm(backend, q, xp.swapaxes(k, -1, -2))
    scores *= q.dtype.type(scale)
    scores -= scores.max(axis=-1, keepdims=True)
    xp.exp(scores, out=scores)
    scores /= scores.sum(axis=-1, keepdims=True)
    return _bmm(backend, scores, v), scores


def attention_backward(backend, g, q, k, v, probs, scale, need_q, need_k, need_v):
    xp = backend.xp
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    gq = gk = gv = None
    if need_v:
        gv = _bmm(backend, xp.swapaxes(probs, -1, -2), g)
    if need_q or need_k:
        gp = _bmm(backend, g, xp.swapaxes(v, -1, -2))
        gs = probs * (gp - (gp * probs).sum(axis=-1, keepdims=True))
        gs *= q.dtype.type(scale)
        if need_q:
            gq = _bmm(backend, gs, k)
        if need_k:
            gk = _bmm(backend, xp.swapaxes(gs, -1, -2), q)
    return gq, gk, gv


# ---- dropout ---------------------------------------------------------------------------------
def dropout_mask(like, shape, dtype, p):
    """Eager dropout's scaled keep mask, drawn exactly as eager draws it (``ops/dropout.py``:
    ``bernoulli_(1 - p)`` on the input's device, then scaled by ``1 / (1 - p)``)."""
    from ..ops.creation import empty
    mask = empty(shape, dtype=dtype, device=like.device).bernoulli_(1 - p)
    mask.mul_(1.0 / (1.0 - p))
    return mask._data


# ---- convolution -----------------------------------------------------------------------------
def conv2d(backend, x, w, b, params):
    """The eager convolution kernel (im2col plus one product, ``ops/conv.py``); its column buffer
    goes back to the shared pool at once, since nothing saves it."""
    from ..ops.conv import _conv_arrays, COLUMN_CACHE
    y, cols = _conv_arrays(backend, x, w, b, params)
    COLUMN_CACHE.give(cols)
    return y
