"""Loss functions that PyTorch runs as one kernel, each one op with its own backward node.

A user who prints ``loss.grad_fn`` sees PyTorch's node (``MseLossBackward0``,
``NllLossBackward0``…), and a training step spends one node on its loss instead of a chain of
element-wise ones. The forward evaluates the same Ember expression the loss is defined by, with
grad mode off, so values are those of the composition; the backward is the closed-form
derivative written in Ember ops, so it is itself differentiable (double backward, gradient
penalties). ``nn.functional`` checks the arguments and calls these.

The multi-label margin and CTC losses, which Ember composes from its ops where PyTorch runs one
kernel, are recorded under PyTorch's single node (``record_composite``).
"""
import math

from .. import _dtype as dt
from ._dispatch import Node, needs_grad, record, _wrap, CompositeBackward, record_composite
from ..autograd.grad_mode import _state as _grad_state
from ..autograd.grad_mode import no_grad
from .elementwise import where, clamp
from .creation import zeros_like, zeros, full, tensor, arange
from .reduce import logsumexp
from .shape import cat, stack

__all__ = ["check_not_differentiable", "mse_loss", "smooth_l1_loss", "huber_loss",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "soft_margin_loss",
           "multi_margin_loss", "nll_loss", "multilabel_margin_loss", "ctc_loss"]


def check_not_differentiable(function, argument, tensor):
    """PyTorch's error for an argument its kernel has no derivative for."""
    if tensor is not None and needs_grad(tensor):
        raise RuntimeError(f"The function '{function}' is not differentiable with respect to "
                           f"argument '{argument}'. This input cannot have requires_grad True.")


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _upstream(grad, reduction, numel):
    """The incoming gradient of each element of the unreduced loss (broadcasts against it)."""
    # an empty loss has no element to receive it: max() only spares a 0/0
    return grad / max(numel, 1) if reduction == "mean" else grad


class _PointwiseLossBackward(Node):
    """``reduce(f(input, target))``: ``derivatives`` gives ``df/dinput`` and ``df/dtarget``
    for the inputs that need them; the engine sums them back to each input's shape."""
    __slots__ = ()

    def backward(self, grad):
        input, target = self.saved_tensors
        d_input, d_target = self.derivatives(input, target, self._edges[0] is not None,
                                             self._edges[1] is not None)
        numel = (d_input if d_input is not None else d_target).numel()
        upstream = _upstream(grad, self.reduction, numel)
        return (None if d_input is None else d_input * upstream,
                None if d_target is None else d_target * upstream)

    def jvp(self, t_input, t_target):
        # reduce(df/dinput * dinput + df/dtarget * dtarget): the same reduction of the
        # element-wise tangent
        input, target = self.saved_tensors
        d_input, d_target = self.derivatives(input, target, t_input is not None,
                                             t_target is not None)
        terms = [d * t for d, t in ((d_input, t_input), (d_target, t_target))
                 if d is not None and t is not None]
        if not terms:
            return None
        return _reduce(terms[0] if len(terms) == 1 else terms[0] + terms[1], self.reduction)


def _pointwise_loss(node_cls, loss_fn, input, target, reduction, **attrs):
    with no_grad():
        res = _reduce(loss_fn(input, target), reduction)
    if needs_grad(input, target):
        record(node_cls, (input, target), res, save=(input, target), reduction=reduction,
               **attrs)
    return res


# ---- regression --------------------------------------------------------------------------------

class MseLossBackward0(_PointwiseLossBackward):
    __slots__ = ()

    def derivatives(self, input, target, wants_input, wants_target):
        d = (input - target) * 2
        return d, (-d if wants_target else None)


def mse_loss(input, target, reduction):
    def loss(input, target):
        diff = input - target
        return diff * diff
    return _pointwise_loss(MseLossBackward0, loss, input, target, reduction)


class SmoothL1LossBackward0(_PointwiseLossBackward):
    __slots__ = ()

    def derivatives(self, input, target, wants_input, wants_target):
        diff = input - target
        d = diff.sign() if self.beta == 0 else where(diff.abs() < self.beta, diff / self.beta,
                                                     diff.sign())
        return d, (-d if wants_target else None)


def smooth_l1_loss(input, target, reduction, beta):
    def loss(input, target):
        diff = input - target
        absolute = diff.abs()
        if beta == 0:
            return absolute
        return where(absolute < beta, 0.5 * diff * diff / beta, absolute - 0.5 * beta)
    return _pointwise_loss(SmoothL1LossBackward0, loss, input, target, reduction, beta=beta)


class HuberLossBackward0(_PointwiseLossBackward):
    __slots__ = ()

    def derivatives(self, input, target, wants_input, wants_target):
        diff = input - target
        d = where(diff.abs() < self.delta, diff, diff.sign() * self.delta)
        return d, (-d if wants_target else None)


def huber_loss(input, target, reduction, delta):
    def loss(input, target):
        diff = input - target
        absolute = diff.abs()
        return where(absolute < delta, 0.5 * diff * diff, delta * (absolute - 0.5 * delta))
    return _pointwise_loss(HuberLossBackward0, loss, input, target, reduction, delta=delta)


# ---- binary classification -------------------------------------------------------------------

# PyTorch's lower bound on p * (1 - p) in the gradient, so a saturated input gives a finite one.
_BCE_EPSILON = 1e-12


def _clamped_log(x):
    # PyTorch clamps each log at -100 so that a saturated input gives a finite loss.
    return x.log().clamp(min=-100)


class BinaryCrossEntropyBackward0(_PointwiseLossBackward):
    __slots__ = ()

    def derivatives(self, input, target, wants_input, wants_target):
        weight = self.weight
        d_input = d_target = None
        if wants_input:
            d_input = (input - target) / (input * (1 - input)).clamp(min=_BCE_EPSILON)
            if weight is not None:
                d_input = d_input * weight
        if wants_target:
            d_target = _clamped_log(1 - input) - _clamped_log(input)
            if weight is not None:
                d_target = d_target * weight
        return d_input, d_target


def binary_cross_entropy(input, target, weight, reduction):
    """``weight`` (broadcast to the target's shape) must not require grad."""
    def loss(input, target):
        out = -(target * _clamped_log(input) + (1 - target) * _clamped_log(1 - input))
        return out if weight is None else out * weight
    return _pointwise_loss(BinaryCrossEntropyBackward0, loss, input, target, reduction,
                           weight=weight)


def _softplus_of_negative(x):
    """``-log(sigmoid(x))`` computed without overflow."""
    return (-x).clamp(min=0) + (-x.abs()).exp().log1p()


class BinaryCrossEntropyWithLogitsBackward0(_PointwiseLossBackward):
    __slots__ = ()

    def derivatives(self, input, target, wants_input, wants_target):
        weight, pos_weight = self.weight, self.pos_weight
        d_input = d_target = None
        if wants_input:
            if pos_weight is None:
                d_input = input.sigmoid() - target
            else:
                d_input = (1 - target) + (1 + (pos_weight - 1) * target) * (input.sigmoid() - 1)
            if weight is not None:
                d_input = d_input * weight
        if wants_target:
            d_target = -input
            if pos_weight is not None:
                d_target = d_target + (pos_weight - 1) * _softplus_of_negative(input)
            if weight is not None:
                d_target = d_target * weight
        return d_input, d_target


def binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction):
    """``weight`` and ``pos_weight`` must not require grad."""
    def loss(input, target):
        neg_log_sigmoid = _softplus_of_negative(input)
        if pos_weight is not None:
            out = (1 - target) * input + (1 + (pos_weight - 1) * target) * neg_log_sigmoid
        else:
            out = (1 - target) * input + neg_log_sigmoid
        return out if weight is None else out * weight
    return _pointwise_loss(BinaryCrossEntropyWithLogitsBackward0, loss, input, target,
                           reduction, weight=weight, pos_weight=pos_weight)


class SoftMarginLossBackward0(Node):
    """PyTorch differentiates the soft margin loss with respect to its input only."""
    __slots__ = ()

    def backward(self, grad):
        input, target = self.saved_tensors
        d = -target * (input * target).neg().sigmoid()
        return (d * _upstream(grad, self.reduction, d.numel()),)

    def jvp(self, t):
        input, target = self.saved_tensors
        return _reduce(-target * (input * target).neg().sigmoid() * t, self.reduction)


def soft_margin_loss(input, target, reduction):
    """``target`` must not require grad."""
    with no_grad():
        res = _reduce((-input * target).exp().log1p(), reduction)
    if needs_grad(input):
        record(SoftMarginLossBackward0, (input,), res, save=(input, target),
               reduction=reduction)
    return res


# ---- multi-class margin ----------------------------------------------------------------------

class MultiMarginLossBackward0(Node):
    """``sum_j w[y] * max(0, margin - x[y] + x[j]) ** p / C`` over the classes ``j != y`` of
    each sample: each active hinge pushes ``x[j]`` up and ``x[y]`` down."""
    __slots__ = ()

    def backward(self, grad):
        (x,) = self.saved_tensors
        y, own_class = self.target, self.own_class
        hinge = self.margin - x.gather(1, y) + x
        active = (hinge > 0) & ~own_class
        coef = where(active, hinge * 2, zeros_like(x)) if self.p == 2 else active.to(x.dtype)
        if self.target_weights is not None:
            coef = coef * self.target_weights.unsqueeze(1)
        upstream = grad.reshape(-1, 1) if self.reduction == "none" else (
            grad / x.shape[0] if self.reduction == "mean" else grad)
        coef = coef * (upstream / x.shape[1])
        g = coef.scatter_add(1, y, -coef.sum(1, keepdim=True))
        return (g.reshape(self.in_shape),)

    def jvp(self, t):
        # each active hinge moves by dx[j] - dx[y], times its coefficient
        (x,) = self.saved_tensors
        y, own_class = self.target, self.own_class
        t = t.reshape(x.shape)
        hinge = self.margin - x.gather(1, y) + x
        active = (hinge > 0) & ~own_class
        coef = where(active, hinge * 2, zeros_like(x)) if self.p == 2 else active.to(x.dtype)
        if self.target_weights is not None:
            coef = coef * self.target_weights.unsqueeze(1)
        loss = ((coef * t).sum(1) - coef.sum(1) * t.gather(1, y).squeeze(1)) / x.shape[1]
        if len(self.in_shape) <= 1:
            loss = loss.reshape(())
        return _reduce(loss, self.reduction)


def multi_margin_loss(input, x, y, p, margin, target_weights, reduction):
    """``x`` (N, C) is ``input`` as a batch, ``y`` (N, 1) the checked class indices and
    ``target_weights`` (N,) each sample's class weight or None."""
    own_class = zeros_like(x, dtype=dt.bool).scatter(1, y, True)
    with no_grad():
        hinge = (margin - x.gather(1, y) + x).clamp(min=0)
        if p == 2:
            hinge = hinge * hinge
        if target_weights is not None:
            hinge = hinge * target_weights.unsqueeze(1)
        loss = hinge.masked_fill(own_class, 0).sum(1) / x.shape[1]
        if input.ndim <= 1:
            loss = loss.reshape(())
        res = _reduce(loss, reduction)
    if needs_grad(input):
        record(MultiMarginLossBackward0, (input,), res, save=(x,), target=y,
               own_class=own_class, p=p, margin=margin, target_weights=target_weights,
               reduction=reduction, in_shape=tuple(input.shape))
    return res


# ---- negative log-likelihood -----------------------------------------------------------------

class NllLossBackward0(Node):
    """``-input[target]`` per sample, weighted, reduced: the gradient is ``-weight/divisor``
    scattered into the picked entries."""
    __slots__ = ()

    def backward(self, grad):
        (input,) = self.saved_tensors
        cdim, target, weights = self.cdim, self.safe_target, self.target_weights
        scale = -grad.expand(target.shape)
        if weights is not None:
            scale = scale * weights
        if self.reduction == "mean":
            scale = scale / self.divisor
        if _grad_state.enabled:  # create_graph: scatter, so the gradient is differentiable
            return (zeros_like(input).scatter(cdim, target.unsqueeze(cdim),
                                              scale.unsqueeze(cdim)),)
        # Otherwise written straight into a zero array: scatter would copy the zeros first.
        xp = input._backend.xp
        out = xp.zeros(input._data.shape, dtype=scale._data.dtype)
        xp.put_along_axis(out, xp.expand_dims(target._data, cdim),
                          xp.expand_dims(scale._data, cdim), axis=cdim)
        return (_wrap(out, scale._dtype, scale),)

    def jvp(self, t):
        # linear in the input: the same picking, weighting and reduction of the tangent
        cdim, target, weights = self.cdim, self.safe_target, self.target_weights
        picked = -t.gather(cdim, target.unsqueeze(cdim)).squeeze(cdim)
        if weights is not None:
            picked = picked * weights
        if self.reduction == "none":
            return picked
        total = picked.sum()
        return total / self.divisor if self.reduction == "mean" else total


class NllLoss2DBackward0(NllLossBackward0):
    """PyTorch's node for inputs with spatial dimensions, (N, C, d1, ...)."""
    __slots__ = ()


def nll_loss(input, safe_target, target_weights, reduction):
    """``safe_target``: class indices with ignored entries replaced by 0; ``target_weights``:
    each target's class weight, 0 where ignored (None when every target weighs 1). Neither
    requires grad."""
    if input.ndim == 3 or input.ndim > 4:
        # As PyTorch: its 2-d kernel on an (N, C, H, W) view, the unreduced loss viewed back.
        n, c = input.shape[:2]
        rest = tuple(input.shape[2:])
        plane = rest + (1,) if input.ndim == 3 else (1, math.prod(rest))
        loss = _nll_loss(input.reshape((n, c) + plane), safe_target.reshape((n,) + plane),
                         None if target_weights is None
                         else target_weights.reshape((n,) + plane), reduction)
        return loss.view((n,) + rest) if reduction == "none" else loss
    return _nll_loss(input, safe_target, target_weights, reduction)


def _nll_loss(input, safe_target, target_weights, reduction):
    cdim = 0 if input.ndim == 1 else 1
    with no_grad():
        loss = -input.gather(cdim, safe_target.unsqueeze(cdim)).squeeze(cdim)
        if target_weights is not None:
            loss = loss * target_weights
        divisor = None
        if reduction == "none":
            res = loss
        elif reduction == "sum":
            res = loss.sum()
        elif target_weights is None:
            res = loss.mean()
            divisor = max(loss.numel(), 1)
        else:
            total = float(target_weights.sum())
            # PyTorch's mean over no weight is NaN, but its gradient is zero, not 0/0.
            res = loss.sum() / total if total else loss.sum() + float("nan")
            divisor = total if total else 1.0
    if needs_grad(input):
        node_cls = NllLoss2DBackward0 if input.ndim >= 3 else NllLossBackward0
        record(node_cls, (input,), res, save=(input,), cdim=cdim, reduction=reduction,
               divisor=divisor, safe_target=safe_target, target_weights=target_weights)
    return res


# ---- multi-label margin ----------------------------------------------------------------------

def as_batch(input, target):
    """``input`` as (N, C) and ``target`` as (N, ...) for the margin losses that take (C,) too."""
    if input.ndim <= 1:
        return input.reshape(1, -1), target.reshape(1, -1)
    return input, target


class MultilabelMarginLossBackward0(CompositeBackward):
    __slots__ = ()


def multilabel_margin_loss(input, target, reduction):
    """``target``: each sample's class indices (in range), ended by the first -1."""
    x, y = as_batch(input, target)
    n_classes = x.shape[1]
    y = y.long()
    # A sample's targets are its entries before the first -1.
    valid = (y >= 0).to(dt.int64).cumprod(1).bool()
    safe = y.masked_fill(~valid, 0)
    classes = arange(n_classes, device=x.device)
    is_target = ((safe.unsqueeze(2) == classes) & valid.unsqueeze(2)).any(1)
    pairs = valid.unsqueeze(2) & ~is_target.unsqueeze(1)

    def composition(input):
        x = as_batch(input, target)[0]
        target_scores = x.gather(1, safe)
        hinge = clamp(1 - target_scores.unsqueeze(2) + x.unsqueeze(1), min=0)
        loss = (hinge * pairs.to(x.dtype)).sum((1, 2)) / n_classes
        if input.ndim <= 1:
            loss = loss.reshape(())
        return _reduce(loss, reduction)
    return record_composite(MultilabelMarginLossBackward0, (input,), composition)


# ---- connectionist temporal classification ---------------------------------------------------

class CtcLossBackward0(CompositeBackward):
    __slots__ = ()


def ctc_loss(log_probs, labels, in_lens, tgt_lens, blank):
    """Each sample's negative log-likelihood (infinity where no alignment exists) for
    ``log_probs`` (T, N, C) and ``labels``, one list of class indices per sample: the CTC
    forward algorithm in log space, vectorised over the batch and the extended label positions,
    with a loop over time only; the gradient is autograd's through it."""
    batch = log_probs.shape[1]
    max_len = max(tgt_lens, default=0)
    n_ext = 2 * max_len + 1
    # Extended labels: blank, l1, blank, l2, ..., blank (padded with blanks).
    ext = [[blank] * n_ext for _ in range(batch)]
    skip = [[False] * n_ext for _ in range(batch)]
    for n, seq in enumerate(labels):
        for i, label in enumerate(seq):
            ext[n][2 * i + 1] = label
            skip[n][2 * i + 1] = i > 0 and label != seq[i - 1]
    device = log_probs.device
    ext_t = tensor(ext, dtype=dt.int64, device=device)
    skip_t = tensor(skip, dtype=dt.bool, device=device)
    # A very negative finite stand-in for log(0): -inf would give NaN gradients through
    # logsumexp wherever every path into a state is impossible.
    impossible = -1e30 if log_probs.dtype is not dt.float64 else -1e300

    def negative_log_likelihood(log_probs):
        return _ctc_forward(log_probs, ext_t, skip_t, in_lens, tgt_lens, impossible)
    return record_composite(CtcLossBackward0, (log_probs,), negative_log_likelihood)


def _ctc_forward(log_probs, ext_t, skip_t, in_lens, tgt_lens, impossible):
    n_time, batch, _ = log_probs.shape
    n_ext = ext_t.shape[1]
    dtype, device = log_probs.dtype, log_probs.device
    lp = log_probs.gather(2, ext_t.unsqueeze(0).expand(n_time, batch, n_ext))
    neg = full((batch, 1), impossible, dtype=dtype, device=device)
    neg2 = full((batch, 2), impossible, dtype=dtype, device=device)
    start = zeros((1, n_ext), dtype=dt.bool, device=device)
    start[0, :2] = True
    alpha = where(start, lp[0], impossible)
    active = tensor(in_lens, dtype=dt.int64, device=device).unsqueeze(1)
    for t in range(1, max(in_lens, default=0)):
        from_prev = cat([neg, alpha[:, :-1]], 1)
        from_skip = where(skip_t, cat([neg2, alpha[:, :-2]], 1), impossible)
        step = logsumexp(stack([alpha, from_prev, from_skip]), 0) + lp[t]
        alpha = where(active > t, step, alpha)
    ends = tensor([[2 * l, max(2 * l - 1, 0)] for l in tgt_lens], dtype=dt.int64,
                  device=device).reshape(batch, 2)
    final = alpha.gather(1, ends)
    no_label = tensor([l == 0 for l in tgt_lens], dtype=dt.bool, device=device)
    final = where(stack([zeros_like(no_label), no_label], 1), impossible, final)
    loss = -logsumexp(final, 1)
    return where(loss > -impossible / 2, math.inf, loss)
