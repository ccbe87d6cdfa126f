"""Muon, as ``torch.optim.Muon``: momentum (optionally Nesterov) whose update is orthogonalised
by a quintic Newton–Schulz iteration before it is applied, for 2-D parameters only.

PyTorch runs the iteration in bfloat16. Ember runs each matrix product through BLAS in float32
and rounds every result to bfloat16 once, which is what PyTorch's bfloat16 kernels do (float32
accumulation, one rounding per op), so the iterates agree with PyTorch's to rounding.
"""
import math

from .. import _dtype as dt
from .._tensor import Tensor
from .optimizer import Optimizer, array, lerp_, scalar, zeros_state

__all__ = ["Muon"]

EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5


def _to_bfloat16(xp, values):
    """``values`` rounded to the nearest bfloat16, kept in float32 for BLAS."""
    return values.astype(dt.bfloat16.np).astype(xp.float32)


def _zeropower_via_newtonschulz(xp, grad, ns_coefficients, ns_steps, eps):
    """The Newton–Schulz approximation of ``U V^T`` for ``grad = U S V^T``: a float32 array of
    bfloat16 values, PyTorch's iteration (the wide side last, so the Gram matrix is small)."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    tall = grad.shape[0] > grad.shape[1]
    ortho = _to_bfloat16(xp, grad)
    if tall:
        ortho = ortho.T
    norm = _to_bfloat16(xp, xp.asarray(xp.linalg.norm(ortho), dtype=xp.float32))
    norm = xp.maximum(norm, _to_bfloat16(xp, xp.asarray(eps, dtype=xp.float32)))
    ortho = _to_bfloat16(xp, ortho / norm)
    for _ in range(ns_steps):
        gram = _to_bfloat16(xp, ortho @ ortho.T)
        gram_update = _to_bfloat16(xp, b * gram + c * (gram @ gram))
        ortho = _to_bfloat16(xp, a * ortho + gram_update @ ortho)
    return ortho.T if tall else ortho


def _adjust_lr(lr, adjust_lr_fn, param_shape):
    """The learning rate scaled so that updates of rectangular matrices have comparable RMS."""
    rows, cols = param_shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, rows / cols))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(rows, cols))
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    _rejects_complex = True

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(DEFAULT_A, DEFAULT_B, DEFAULT_C), eps=EPS,
                 ns_steps=DEFAULT_NS_STEPS, adjust_lr_fn=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = {"lr": lr, "weight_decay": weight_decay, "momentum": momentum,
                    "nesterov": nesterov, "ns_coefficients": ns_coefficients, "eps": eps,
                    "ns_steps": ns_steps, "adjust_lr_fn": adjust_lr_fn}
        super().__init__(params, defaults)
        # As PyTorch, only the constructor's groups are checked; a group added later fails at
        # step() on its gradient instead.
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError("Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

    def _init_state(self, group, param, state):
        state["momentum_buffer"] = zeros_state(param.grad)

    def _update(self, group, param, grad, state):
        if grad.ndim != 2:
            raise ValueError("Param gradient must be a 2D matrix")
        xp = param._backend.xp
        p = array(param)
        g = array(grad)
        lr = scalar(group["lr"])
        momentum = group["momentum"]
        buf = array(state["momentum_buffer"])
        scratch = xp.empty_like(buf)
        lerp_(xp, buf, g, 1 - momentum, scratch)
        if group["nesterov"]:
            update = g.copy()
            lerp_(xp, update, buf, momentum, scratch)
        else:
            update = buf
        ortho = _zeropower_via_newtonschulz(xp, update, group["ns_coefficients"],
                                            group["ns_steps"], group["eps"])
        adjusted_lr = _adjust_lr(lr, group["adjust_lr_fn"], param.shape)
        xp.multiply(p, 1 - lr * group["weight_decay"], out=p)
        # bfloat16 update into the parameter's dtype, as PyTorch's add_ promotes.
        xp.add(p, xp.multiply(ortho.astype(p.dtype), -adjusted_lr), out=p)
