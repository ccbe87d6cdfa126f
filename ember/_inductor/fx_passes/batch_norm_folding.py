"""Convolution/linear + batch-norm folding, for inference.

In eval mode a batch norm is an affine map per channel, ``y * scale + shift``, so a convolution
(or linear) feeding only it computes the same with its weight scaled per output channel and its
bias ``b * scale + shift``: one op instead of two, and a pass over the activations saved.

The folded weight and bias are ``DerivedConstant``s: computed from the module's own parameters
and running statistics, and recomputed when any of those tensors' version counters move (an
optimizer step, ``load_state_dict``), so a compiled model never runs on stale weights. Under
``freezing=True`` they are computed once. Never applied to a batch norm in training mode."""
from ..._tensor import Tensor

__all__ = ["fold_batch_norms", "DerivedConstant"]


class DerivedConstant:
    """An array computed from ``sources`` (tensors) by ``fn(*arrays)``, refreshed when a
    source's ``_version`` changes (never, when ``frozen``)."""
    __slots__ = ("fn", "sources", "frozen", "_versions", "_array")

    def __init__(self, fn, sources, frozen=False):
        self.fn, self.sources, self.frozen = fn, tuple(sources), frozen
        self._versions = None
        self._array = None

    def value(self):
        if self._array is not None and self.frozen:
            return self._array
        versions = tuple(t._version for t in self.sources if t is not None)
        if versions != self._versions:
            self._array = self.fn(*(None if t is None else t._data for t in self.sources))
            self._versions = versions
        return self._array


def _targets():
    import ember
    import ember.nn.functional as F
    return {F.conv2d, ember.conv2d, F.conv1d, F.conv3d}, {F.linear}, {F.batch_norm}


def _arg(node, index, name, default=None):
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def _fold_fns(xp, channel_axis_dims, eps):
    """The folded weight's and bias's array functions for a layer whose weight has its output
    channels on axis 0 and ``channel_axis_dims`` dims in all."""
    def scale_of(var, gamma):
        s = 1 / xp.sqrt(var + eps)
        return s if gamma is None else s * gamma

    def weight(w, mean, var, gamma, beta, b):
        s = scale_of(var, gamma)
        return w * s.reshape((-1,) + (1,) * (channel_axis_dims - 1))

    def bias(w, mean, var, gamma, beta, b):
        s = scale_of(var, gamma)
        shift = -mean * s if beta is None else beta - mean * s
        return shift if b is None else b * s + shift
    return weight, bias


def fold_batch_norms(graph, attrs, freezing=False):
    """Fold every eval-mode batch norm fed only by a conv/linear of get_attr parameters."""
    from ...fx.passes.shape_prop import _extract_tensor_metadata
    convs, linears, norms = _targets()
    changed = False
    count = sum(k.startswith("_folded_bn") for k in attrs)
    for bn in list(graph.nodes):
        if bn.op != "call_function" or bn.target not in norms:
            continue
        if _arg(bn, 5, "training", False) is not False:
            continue
        layer = bn.args[0] if bn.args else None
        if layer is None or getattr(layer, "op", None) != "call_function" or \
                len(layer.users) != 1 or layer.target not in convs | linears:
            continue
        if layer.target in linears and len(layer.meta["tensor_meta"].shape) != 2:
            continue  # BatchNorm1d over (N, C, L) normalises another axis than linear's
        w_node, b_node = _arg(layer, 1, "weight"), _arg(layer, 2, "bias")
        stats = [_arg(bn, 1, "running_mean"), _arg(bn, 2, "running_var"),
                 _arg(bn, 3, "weight"), _arg(bn, 4, "bias")]
        nodes = [w_node, b_node] + stats
        if any(n is not None and getattr(n, "op", None) != "get_attr" for n in nodes) or \
                stats[0] is None or stats[1] is None:
            continue
        tensors = [None if n is None else attrs.get(n.target) for n in nodes]
        if any(n is not None and not isinstance(t, Tensor) for n, t in zip(nodes, tensors)):
            continue
        w = tensors[0]
        if w.dtype not in (_float32(), _float64()) or \
                any(t is not None and t.dtype is not w.dtype for t in tensors):
            continue
        eps = _arg(bn, 7, "eps", 1e-5)
        weight_fn, bias_fn = _fold_fns(w._backend.xp, w.ndim, eps)
        order = [tensors[0], tensors[2], tensors[3], tensors[4], tensors[5], tensors[1]]
        names = []
        for fn in (weight_fn, bias_fn):
            name = f"_folded_bn{count}"
            count += 1
            attrs[name] = DerivedConstant(fn, order, frozen=freezing)
            names.append(name)
        with graph.inserting_before(layer):
            new_w = graph.create_node("get_attr", names[0])
            new_b = graph.create_node("get_attr", names[1])
        new_w.meta = dict(w_node.meta)
        new_b.meta = {"tensor_meta": _extract_tensor_metadata(tensors[2]), "type": Tensor}
        args = list(layer.args) + [None] * (3 - len(layer.args))
        args[1], args[2] = new_w, new_b
        kwargs = {k: v for k, v in layer.kwargs.items() if k not in ("weight", "bias")}
        layer.args, layer.kwargs = tuple(args), kwargs
        layer.meta["folded_batch_norm"] = bn.name
        bn.replace_all_uses_with(layer)
        graph.erase_node(bn)
        changed = True
    return changed


def _float32():
    from ... import _dtype as dt
    return dt.float32


def _float64():
    from ... import _dtype as dt
    return dt.float64

