"""Forward-mode automatic differentiation, as ``torch.autograd.forward_ad``.

Inside ``with dual_level():``, ``make_dual(x, v)`` gives a tensor carrying a tangent ``v``; every
op on it computes, besides its value, the tangent of its result (the Jacobian-vector product
``J v``), and ``unpack_dual`` reads both back. As in PyTorch, one level exists at a time.

How tangents flow: an op that would record a backward Node (``_dispatch.needs_grad`` answers
True when an input carries a tangent, even without ``requires_grad``) hands the node to
``propagate``. The node's ``jvp(*tangents)``, written next to its ``backward`` in the op's own
file, gives the output tangent. A node without one falls back on the double-backward trick
(``backward`` is linear in its cotangent ``u``, so differentiating ``<backward(u), v>`` with
respect to ``u`` gives ``J v``): exact, but it costs a backward and a double backward per op.

A tensor's tangent lives in its instance dict (``Tensor._fw_grad`` defaults to None), so a
tensor outside forward AD pays nothing; leaving the level clears every tangent it set.
"""
import weakref
from collections import namedtuple

from . import grad_mode

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual",
           "unpack_dual", "dual_level"]

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])

_current_level = -1
# Counts the levels entered: a tangent a node kept for its saved output belongs to one level.
_generation = 0
# Every tensor given a tangent at the current level, so that exiting the level can clear them.
_dual_tensors = []


def _dispatch():
    from ..ops import _dispatch as d
    return d


def _set_active(active):
    _dispatch()._dual_active = active


def enter_dual_level():
    """Enter a new forward AD level and return its index (0: only one level at a time)."""
    global _current_level, _generation
    if _current_level >= 0:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _current_level = 0
    _generation += 1
    _set_active(True)
    return _current_level


def exit_dual_level(*, level=None):
    """Exit forward AD level ``level`` (the current one by default): every tangent set at that
    level is dropped."""
    global _current_level
    if level is None:
        level = _current_level
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    if level != _current_level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was "
                           "created. This is not supported.")
    for ref in _dual_tensors:
        t = ref()
        if t is not None:
            t.__dict__.pop("_fw_grad", None)
    _dual_tensors.clear()
    _restore(_flipped)
    _current_level = -1
    _set_active(False)


class dual_level:
    """Context manager for forward AD: every forward AD computation happens inside it.

    >>> import ember
    >>> import ember.autograd.forward_ad as fwAD
    >>> with fwAD.dual_level():
    ...     y = fwAD.make_dual(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 0.0])) ** 2
    ...     fwAD.unpack_dual(y).tangent
    tensor([2., 0.])
    """

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
        return False


def _check_level(level, what):
    if level is None:
        level = _current_level
    elif level != _current_level or level < 0:
        raise RuntimeError(f"Invalid level given to {what}")
    return level


def set_tangent(t, tangent):
    """Attach ``tangent`` to ``t`` at the current level (no checks)."""
    if "_fw_grad" not in t.__dict__:
        _dual_tensors.append(weakref.ref(t))
    t.__dict__["_fw_grad"] = tangent


def get_tangent(t):
    return t._fw_grad


def make_dual(tensor, tangent, *, level=None):
    """A view of ``tensor`` carrying ``tangent`` as its forward gradient at ``level``."""
    from .._tensor import Tensor
    if level is None and _current_level < 0:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, "
                           "make sure to enter_dual_level() first.")
    level = _check_level(level, "make_dual")
    if not isinstance(tensor, Tensor) or not isinstance(tangent, Tensor):
        raise TypeError("make_dual(): argument 'tensor' and 'tangent' must be Tensor")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: "
                         f"{tensor.dtype}")
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: "
                         f"{tangent.dtype}")
    if tensor._fw_grad is not None:
        raise RuntimeError("Making a dual Tensor based on a Tensor that already has a forward "
                           f"gradient at the same level {level} is not supported.")
    if tuple(tensor.shape) != tuple(tangent.shape):
        raise RuntimeError("Trying to set a forward gradient that has a different size than that "
                           "of the original Tensor, this is not supported. Tensor is of size "
                           f"{list(tensor.shape)} while the given forward gradient is of size "
                           f"{list(tangent.shape)}.")
    if tangent._device is not tensor._device:
        raise RuntimeError("Trying to set a forward gradient that is on a different device than "
                           f"the original Tensor: {tangent.device} vs {tensor.device}.")
    with suspended():
        dual = tensor.view_as(tensor)
    set_tangent(dual, tangent)
    return dual


def unpack_dual(tensor, *, level=None):
    """``UnpackedDualTensor(primal, tangent)``: a view of ``tensor`` without its tangent, and the
    tangent (None when it has none at ``level``)."""
    if level is None and _current_level < 0:
        return UnpackedDualTensor(tensor, None)
    _check_level(level, "_fw_primal")
    tangent = tensor._fw_grad
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    with suspended():
        primal = tensor.view_as(tensor)
    return UnpackedDualTensor(primal, tangent)


class active:
    """Undoes ``suspended`` for a forward derivative that is itself a composition of ops."""

    def __enter__(self):
        d = _dispatch()
        self._prev = d._dual_active
        d._dual_active = _current_level >= 0

    def __exit__(self, *exc):
        _dispatch()._dual_active = self._prev
        return False


class suspended:
    """Ops inside run as if no dual level were active: tangent computations themselves (and a
    custom Function's forward) must not propagate tangents, since levels do not nest."""

    def __enter__(self):
        d = _dispatch()
        self._prev = d._dual_active
        d._dual_active = False

    def __exit__(self, *exc):
        _dispatch()._dual_active = self._prev
        return False


# ---- propagation through ops -----------------------------------------------------------------

def any_tangent(tensors):
    for t in tensors:
        if t is not None and t._fw_grad is not None:
            return True
    return False


# Inputs that carry a tangent but do not require grad are shown to the op as requiring grad
# between ``needs_node`` and ``record`` (``restore_flags``): many ops save, and many backwards
# compute, only what the inputs that require grad need, and the double-backward fallback needs
# the backward of every input with a tangent. One frame per needs_grad call that flipped
# something: an op may run other ops (a view) between its needs_grad and its record.
_flipped = []  # [(ids of the op's tensors, tensors this call flipped)]


def needs_node(tensors, grad_enabled):
    """``needs_grad`` inside a dual level."""
    found = False
    flipped = None
    for t in tensors:
        if t is None:
            continue
        if t._fw_grad is not None:
            found = True
            if not t._requires_grad:
                t._requires_grad = True
                if flipped is None:
                    flipped = []
                flipped.append(t)
        elif grad_enabled and t._requires_grad:
            found = True
    if found and (flipped is not None or _flipped):
        # a frame even when nothing was flipped, so that a nested op's record finds its own
        _flipped.append(({id(t) for t in tensors if t is not None}, flipped or ()))
    return found


def _restore(frames):
    for _, tensors in frames:
        for t in tensors:
            t._requires_grad = False
    frames.clear()


def restore_flags(node, inputs):
    """Undo the flags of the needs_grad call that led to this record (and of any later call
    that never recorded); returns the node's edges as the op recorded them (one per input with
    a tangent), which the double-backward fallback runs the backward with, and gives the node
    the edges backward really has."""
    if not _flipped:
        return node._edges
    ids = {id(t) for t in inputs if t is not None}
    for k in range(len(_flipped) - 1, -1, -1):
        if ids <= _flipped[k][0]:
            break
    else:
        return node._edges
    frames = _flipped[k:]
    del _flipped[k:]
    flipped = set()
    for _, tensors in frames:
        for t in tensors:
            t._requires_grad = False
            flipped.add(id(t))
    from .graph import _edge
    fw_edges = node._edges
    node._edges = tuple(_edge(t) if t is not None and id(t) not in flipped and t.requires_grad
                        else None for t in inputs)
    return fw_edges


def _differentiable(out):
    return out is not None and out._dtype._kind >= 2


def propagate(node, inputs, outs, fw_edges=None):
    """Give ``outs`` (the outputs of the op ``node`` recorded over ``inputs``) their tangents."""
    tangents = tuple(t._fw_grad if t is not None else None for t in inputs)
    if all(v is None for v in tangents):
        return
    jvp = getattr(node, "jvp", None)
    edges = node._edges
    if fw_edges is not None:  # the backward (which a jvp may call) sees every tangent's input
        node._edges = fw_edges
    # The tangent joins the backward graph only where something in it requires grad (forward
    # over reverse); a saved output unpacks as requiring grad, so say so explicitly.
    keep_graph = grad_mode.is_grad_enabled() and any(
        t is not None and t._requires_grad for t in tuple(inputs) + tangents)
    try:
        with suspended(), grad_mode.set_grad_enabled(keep_graph):
            result = _view_tangent(inputs, outs, tangents)
            if result is None and jvp is not None:
                result = jvp(*tangents)
            if result is None or result is NotImplemented:
                result = double_backward_jvp(node, inputs, outs, tangents)
    finally:
        node._edges = edges
    if not isinstance(result, (tuple, list)):
        result = (result,)
    set_out = []
    for out, tangent in zip(outs, result):
        set_out.append(None)
        if not _differentiable(out):
            continue
        if tangent is None:  # the output does not depend on any input with a tangent
            with suspended():
                tangent = out.detach().new_zeros(out.shape)
        # the logical shape: inside vmap (jacfwd) a tangent may be a BatchedTensor
        if tuple(tangent.shape) != tuple(out.shape):
            if tangent.dim() <= out.dim():
                tangent = tangent.expand(out.shape)
            elif tangent.numel() == out.numel() and [s for s in tangent.shape if s != 1] == [
                    s for s in out.shape if s != 1]:  # a kept reduced dim
                tangent = tangent.reshape(out.shape)
            if tuple(tangent.shape) != tuple(out.shape):
                raise RuntimeError(f"{node.name()}: forward derivative has shape "
                                   f"{list(tangent.shape)}, expected {list(out.shape)}")
        if tangent._dtype is not out._dtype:
            tangent = tangent.to(out._dtype)
        set_tangent(out, tangent)
        set_out[-1] = tangent
    if any(s.is_output for s in node._saved if s is not None):
        # a saved output is rebuilt from its array for backward; forward over reverse needs
        # its tangent there too (graph.SavedTensor.unpack)
        node.__dict__["_fw_out"] = (_generation, tuple(set_out))


def restore_saved_tangent(t, fw, output_nr):
    generation, tangents = fw
    if generation == _generation and _current_level >= 0 and output_nr < len(tangents):
        tangent = tangents[output_nr]
        if tangent is not None:
            set_tangent(t, tangent)


def write_tangent(self, result):
    """An in-place op wrote ``result`` into ``self``: ``self``'s tangent becomes ``result``'s
    (zero where ``result`` has none). Written through a view, the region of the base's tangent
    changes too; the live views of the written memory then take the same view of the base's
    new tangent, as in PyTorch."""
    with suspended(), grad_mode.no_grad():
        new = result._fw_grad
        if new is None:
            new = result.detach().new_zeros(result.shape)
        if new._dtype is not self._dtype:
            new = new.to(self._dtype)
        if tuple(new.shape) != tuple(self.shape):
            new = new.expand(self.shape)
        root = self._base
        if root is None:
            set_tangent(self, new)
            _refresh_view_tangents(self, skip=self)
            return
        # out of place: the base's old tangent may be the caller's own tensor
        old = root._fw_grad
        base_tangent = old.clone() if old is not None else root.detach().new_zeros(root.shape)
        self._view_fn(base_tangent)._data[...] = new._data
        set_tangent(root, base_tangent)
        set_tangent(self, self._view_fn(base_tangent))
        _refresh_view_tangents(root, skip=self)


def _refresh_view_tangents(root, skip):
    refs = root.__dict__.get("_views")
    tangent = root._fw_grad
    if not refs or tangent is None:
        return
    for ref in list(refs):
        view = ref()
        if view is not None and view is not skip and view._view_fn is not None:
            set_tangent(view, view._view_fn(tangent))


def _view_tangent(inputs, outs, tangents):
    """A view op's output tangent is the same view of its input's tangent (so that in-place
    writes through either see each other, as in PyTorch): ``_view_fn`` replays the view on
    anything shaped like the input when the input is the view's base."""
    if len(outs) != 1 or len(inputs) != 1:
        return None
    out, t = outs[0], tangents[0]
    if out is None or out._base is None or t is None or tuple(t.shape) != tuple(
            inputs[0].shape):
        return None
    # make_view keeps the step from its input inside a dual level; a view of a root can
    # replay the whole chain
    fn = out.__dict__.pop("_view_step", None)
    if fn is None and out._base is inputs[0]:
        fn = out._view_fn
    if fn is None:
        return None
    tangent = fn(t)
    if tuple(tangent.shape) != tuple(out.shape) or tangent._dtype._kind != out._dtype._kind:
        return None
    return (tangent,)


def elementwise_jvp(node, *tangents):
    """``jvp`` of a one-input element-wise op on real values: its Jacobian is diagonal, so the
    backward applied to the tangent is the forward derivative."""
    t = tangents[0]
    if len(tangents) != 1 or t is None or t._dtype._kind == 3 or node.num_outputs != 1:
        return NotImplemented
    meta = node._in_meta[0]
    if meta is None or tuple(meta[0]) != tuple(t.shape):
        return NotImplemented
    return node.backward(t)


def not_supported(name):
    return NotImplementedError(f"Trying to use forward AD with {name} that does not support it "
                               "because it has not been implemented yet.\nPlease file an issue "
                               "to Ember so that we can prioritize its implementation.")


def double_backward_jvp(node, inputs, outs, tangents):
    """``J v`` through ``node.backward`` alone: ``backward(u) = J^T u`` is linear in ``u``, so
    the gradient of ``<backward(u), v>`` with respect to ``u`` is ``J v``. Slower than a
    written forward derivative (a backward plus a double backward), but exact for every op
    whose backward is itself differentiable."""
    from . import grad as autograd_grad
    from .engine import _adjust
    from ..ops import ones_like
    keep_graph = grad_mode.is_grad_enabled() and any(
        t is not None and t._requires_grad for t in tuple(inputs) + tangents)
    with grad_mode.enable_grad():
        # ones, not zeros: a backward that is not differentiable then shows a nonzero result
        # that does not require grad, which is refused below instead of read as a zero tangent
        us = tuple(ones_like(o).requires_grad_() if _differentiable(o) else None for o in outs)
        try:
            grads = node.backward(*us) if len(us) > 1 else node.backward(us[0])
        except NotImplementedError as exc:
            raise not_supported(_op_name(node)) from exc
        except RuntimeError as exc:
            if str(exc).startswith("derivative for"):
                raise not_supported(_op_name(node)) from exc
            raise
        if not isinstance(grads, (tuple, list)):
            grads = (grads,)
        pairs = []
        for i, (g, v) in enumerate(zip(grads, tangents)):
            if g is None or v is None:
                continue
            g = _adjust(g, node._in_meta[i], node, i)
            if not g.requires_grad:
                if bool((g != 0).any()):
                    raise not_supported(_op_name(node))
                continue
            pairs.append((g, v.to(g.dtype) if v.dtype is not g.dtype else v))
        wanted = [u for u in us if u is not None]
        if not pairs:
            return tuple(None for _ in outs)
        found = autograd_grad([g for g, _ in pairs], wanted, [v for _, v in pairs],
                              create_graph=keep_graph, allow_unused=True)
    it = iter(found)
    return tuple(next(it) if u is not None else None for u in us)


def _op_name(node):
    from .graph import _op_name as name
    return name(node)
