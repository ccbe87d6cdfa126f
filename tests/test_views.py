"""Views against PyTorch: every view op shares memory (both ways) and the version counter with its
base, and reports the same stride(), storage_offset() and is_contiguous(); ``view`` refuses what
PyTorch refuses, and ``reshape`` then copies."""
import numpy as np
import pytest
import torch

import ember


def _pair(shape, make=None):
    """The same float64 values 0, 1, 2, ... as a torch and an ember tensor, optionally passed
    through ``make(lib, t)`` (to start from a non-contiguous base)."""
    n = int(np.prod(shape)) if shape else 1
    t = torch.arange(n, dtype=torch.float64).reshape(shape)
    e = ember.arange(n, dtype=ember.float64).reshape(shape)
    if make is not None:
        t, e = make(torch, t), make(ember, e)
    return t, e


def _np(x):
    return np.asarray(x.detach().cpu().numpy())


def _same_layout(e, t, what):
    assert tuple(e.shape) == tuple(t.shape), f"{what}: shape {tuple(e.shape)} vs {tuple(t.shape)}"
    assert e.stride() == t.stride(), f"{what}: stride {e.stride()} vs torch {t.stride()}"
    assert e.storage_offset() == t.storage_offset(), \
        f"{what}: storage_offset {e.storage_offset()} vs torch {t.storage_offset()}"
    assert e.is_contiguous() == t.is_contiguous(), f"{what}: is_contiguous differs"
    np.testing.assert_array_equal(_np(e), _np(t), err_msg=what)


# name -> (base shape, fn(lib, base) returning a view or a tuple of views)
VIEWS = {
    "view": ((3, 4), lambda lib, x: x.view(2, 6)),
    "view_infer": ((3, 4), lambda lib, x: x.view(-1)),
    "view_split_dim": ((3, 4), lambda lib, x: x.view(3, 2, 2)),
    "view_as": ((3, 4), lambda lib, x: x.view_as(lib.zeros(6, 2))),
    "reshape_view": ((3, 4), lambda lib, x: x.reshape(4, 3)),
    "permute": ((2, 3, 4), lambda lib, x: x.permute(2, 0, 1)),
    "transpose": ((2, 3, 4), lambda lib, x: x.transpose(0, 2)),
    "t": ((3, 4), lambda lib, x: x.t()),
    "t_1d": ((4,), lambda lib, x: x.t()),
    "T": ((3, 4), lambda lib, x: x.T),
    "mT": ((2, 3, 4), lambda lib, x: x.mT),
    "expand": ((3, 1), lambda lib, x: x.expand(2, 3, 4)),
    "expand_as": ((4,), lambda lib, x: x.expand_as(lib.zeros(3, 4))),
    "squeeze": ((1, 3, 1, 4), lambda lib, x: x.squeeze()),
    "squeeze_dim": ((1, 3, 1, 4), lambda lib, x: x.squeeze(2)),
    "squeeze_dims": ((1, 3, 1, 4), lambda lib, x: x.squeeze((0, 2))),
    "unsqueeze": ((3, 4), lambda lib, x: x.unsqueeze(1)),
    "unsqueeze_last": ((3, 4), lambda lib, x: x.unsqueeze(-1)),
    "flatten": ((2, 3, 4), lambda lib, x: x.flatten(1)),
    "unflatten": ((3, 4), lambda lib, x: x.unflatten(1, (2, 2))),
    "narrow": ((3, 4), lambda lib, x: x.narrow(1, 1, 2)),
    "select": ((2, 3, 4), lambda lib, x: x.select(1, 2)),
    "select_to_0d": ((4,), lambda lib, x: x.select(0, 3)),
    "unbind": ((3, 4), lambda lib, x: x.unbind(1)),
    "split": ((5, 4), lambda lib, x: x.split(2)),
    "split_sections": ((3, 5), lambda lib, x: x.split([1, 4], 1)),
    "chunk": ((3, 5), lambda lib, x: x.chunk(2, 1)),
    "diagonal": ((3, 4), lambda lib, x: x.diagonal()),
    "diagonal_offset": ((3, 4), lambda lib, x: x.diagonal(1)),
    "diagonal_neg_offset": ((4, 3), lambda lib, x: x.diagonal(-1)),
    "diagonal_dims": ((2, 3, 4), lambda lib, x: x.diagonal(0, 2, 1)),
    "movedim": ((2, 3, 4), lambda lib, x: x.movedim(0, -1)),
    "slice": ((4, 5), lambda lib, x: x[1:3, ::2]),
    "slice_step_offset": ((6, 5), lambda lib, x: x[1::3, 2:]),
    "int_index": ((3, 4), lambda lib, x: x[1]),
    "ints_to_0d": ((3, 4), lambda lib, x: x[1, 2]),
    "ellipsis": ((2, 3, 4), lambda lib, x: x[..., 2]),
    "none": ((3, 4), lambda lib, x: x[None, :, None]),
    "zero_d_tensor_index": ((3, 4), lambda lib, x: x[lib.tensor(2)]),
    "none_after_int": ((3, 4), lambda lib, x: x[1, None]),
    "none_before_int": ((3, 4), lambda lib, x: x[None, 1]),
    "none_at_end": ((3, 4), lambda lib, x: x[..., None]),
    "nones_mixed": ((3, 4), lambda lib, x: x[None, ..., None, 2, None]),
    "view_of_view": ((4, 6), lambda lib, x: x[1:, ::2].transpose(0, 1)[1]),
}

# Bases that are views already, so the view ops see non-trivial strides and offsets.
BASES = {
    "contiguous": (None, lambda shape: shape),
    "offset": (lambda lib, x: x[1:], lambda shape: (shape[0] + 1,) + shape[1:]),
    "sliced": (lambda lib, x: x[..., 1:], lambda shape: shape[:-1] + (shape[-1] + 1,)),
}


@pytest.mark.parametrize("base_kind", list(BASES))
@pytest.mark.parametrize("name", list(VIEWS))
def test_view_layout_and_memory(name, base_kind):
    shape, fn = VIEWS[name]
    make, grow = BASES[base_kind]
    tb, eb = _pair(grow(shape), make)
    try:
        tv = fn(torch, tb)
    except RuntimeError:  # e.g. view() of a base whose strides do not allow it
        with pytest.raises(RuntimeError):
            fn(ember, eb)
        return
    ev = fn(ember, eb)
    t_views = tv if isinstance(tv, tuple) else (tv,)
    e_views = ev if isinstance(ev, tuple) else (ev,)
    assert len(e_views) == len(t_views)
    for i, (e, t) in enumerate(zip(e_views, t_views)):
        _same_layout(e, t, f"{name}[{i}]")
        assert e._is_view() == t._is_view()

    # base -> views: an in-place write to the base shows in every view
    tb.mul_(-2)
    eb.mul_(-2)
    for i, (e, t) in enumerate(zip(e_views, t_views)):
        np.testing.assert_array_equal(_np(e), _np(t), err_msg=f"{name}[{i}] after writing the base")
        assert e._version == t._version, f"{name}[{i}]: version {e._version} vs {t._version}"

    # view -> base: a write through a view (one without self-overlap) shows in the base
    for i, (e, t) in enumerate(zip(e_views, t_views)):
        if 0 in t.stride() and t.numel() > 1:
            with pytest.raises(RuntimeError):
                e.add_(1)
            with pytest.raises(RuntimeError):
                t.add_(1)
            continue
        t.add_(100 * (i + 1))
        e.add_(100 * (i + 1))
    np.testing.assert_array_equal(_np(eb), _np(tb), err_msg=f"{name}: base after writing views")
    assert eb._version == tb._version
    for e, t in zip(e_views, t_views):
        assert e._version == t._version == tb._version


def test_contiguous_returns_self_or_copy():
    tb, eb = _pair((3, 4))
    assert eb.contiguous() is eb and tb.contiguous() is tb
    tc, ec = tb.t().contiguous(), eb.t().contiguous()
    _same_layout(ec, tc, "contiguous copy")
    ec.fill_(0)
    assert float(eb.abs().sum()) > 0


@pytest.mark.parametrize("make", [
    lambda lib, x: x.t(),
    lambda lib, x: x[:, ::2],
    lambda lib, x: x.permute(1, 0)[1:],
    lambda lib, x: x,
], ids=["transposed", "strided", "permuted_sliced", "contiguous"])
def test_clone_preserves_dense_layout(make):
    tb, eb = _pair((4, 6))
    tc, ec = make(torch, tb).clone(), make(ember, eb).clone()
    _same_layout(ec, tc, "clone")
    ec.fill_(-1)
    assert float(eb.min()) >= 0, "clone must not share memory"


# (base shape, make a base view, target shape): whether ``view`` works must match PyTorch.
VIEW_SHAPES = [
    ((3, 4), lambda lib, x: x.t(), (12,)),
    ((3, 4), lambda lib, x: x.t(), (2, 2, 3)),
    ((3, 4), lambda lib, x: x.t(), (4, 3, 1)),
    ((3, 4), lambda lib, x: x.t(), (1, 4, 3)),
    ((3, 4), lambda lib, x: x[:, :2], (6,)),
    ((3, 4), lambda lib, x: x[:, :2], (3, 2, 1)),
    ((3, 4), lambda lib, x: x[:2], (8,)),
    ((3, 4), lambda lib, x: x[:2], (2, 2, 2)),
    ((2, 3, 4), lambda lib, x: x.permute(1, 0, 2), (3, 8)),
    ((2, 3, 4), lambda lib, x: x.permute(1, 0, 2), (6, 4)),
    ((2, 3, 4), lambda lib, x: x.transpose(1, 2), (2, 12)),
    ((2, 3, 4), lambda lib, x: x[:, 1:], (2, 8)),
    ((2, 3, 4), lambda lib, x: x[:, 1:], (4, 4)),
    ((4, 1), lambda lib, x: x.expand(4, 3), (2, 2, 3)),
    ((4, 1), lambda lib, x: x.expand(4, 3), (12,)),
    ((3, 4), lambda lib, x: x[None].transpose(0, 1), (3, 4)),
    ((2, 6), lambda lib, x: x[:, ::2], (2, 3, 1)),
    ((2, 6), lambda lib, x: x[:, ::2], (6,)),
]


@pytest.mark.parametrize("shape,make,target", VIEW_SHAPES)
def test_view_refuses_where_torch_does_and_reshape_copies(shape, make, target):
    tb, eb = _pair(shape, make)
    try:
        tv = tb.view(target)
    except RuntimeError as exc:
        assert "view size is not compatible" in str(exc)
        with pytest.raises(RuntimeError, match="view size is not compatible with input tensor's size"):
            eb.view(target)
        tr, er = tb.reshape(target), eb.reshape(target)
        _same_layout(er, tr, "reshape copy")
        assert not er._is_view() and not tr._is_view()
        er.fill_(-1)
        assert float(eb.min()) >= 0, "reshape that cannot be a view must copy"
        return
    ev = eb.view(target)
    _same_layout(ev, tv, "view")
    er, tr = eb.reshape(target), tb.reshape(target)
    _same_layout(er, tr, "reshape as a view")
    assert er._is_view()


def test_reshape_of_non_viewable_has_unsafe_view_grad_fn():
    x = ember.randn(3, 4, requires_grad=True)
    t = torch.tensor(x.detach().numpy(), requires_grad=True)
    er, tr = x.t().reshape(-1), t.t().reshape(-1)
    assert type(er.grad_fn).__name__ == type(tr.grad_fn).__name__ == "UnsafeViewBackward0"
    (er * ember.arange(12.0)).sum().backward()
    (tr * torch.arange(12.0)).sum().backward()
    np.testing.assert_allclose(_np(x.grad), _np(t.grad))


def test_views_share_version_counter():
    x = ember.zeros(3, 4)
    a, b = x[0], x.t()
    c = a.unsqueeze(0)
    assert x._version == a._version == b._version == c._version == 0
    c.add_(1)
    b[1, 2] = 5
    x.zero_()
    tx = torch.zeros(3, 4)
    ta, tb_ = tx[0], tx.t()
    tc = ta.unsqueeze(0)
    tc.add_(1)
    tb_[1, 2] = 5
    tx.zero_()
    assert (x._version, a._version, b._version, c._version) == \
        (tx._version, ta._version, tb_._version, tc._version)
    d = x.detach()
    d.add_(1)
    assert x._version == d._version == tx._version + 1
    assert x.clone()._version == 0


def test_detach_shares_memory_and_version():
    tb, eb = _pair((3, 4))
    td, ed = tb.detach(), eb.detach()
    assert ed._is_view() == td._is_view()
    ed[0, 0] = 7
    td[0, 0] = 7
    eb.mul_(2)
    tb.mul_(2)
    np.testing.assert_array_equal(_np(ed), _np(td))
    assert ed._version == td._version and eb._version == tb._version


def test_view_of_view_base_is_root():
    x = ember.zeros(4, 4)
    v = x[1:][:, 1:].t()
    assert v._base is x
    tx = torch.zeros(4, 4)
    tv = tx[1:][:, 1:].t()
    assert tv._base is tx
    v[0, 0] = 1
    tv[0, 0] = 1
    np.testing.assert_array_equal(_np(x), _np(tx))


def test_empty_and_zero_d_views():
    for shape, fn in [((0, 3), lambda lib, x: x.t()), ((0, 3), lambda lib, x: x.view(3, 0)),
                      ((), lambda lib, x: x.view(1)), ((), lambda lib, x: x.unsqueeze(0)),
                      ((), lambda lib, x: x[None, None]), ((1,), lambda lib, x: x.squeeze())]:
        tb, eb = _pair(shape)
        _same_layout(fn(ember, eb), fn(torch, tb), f"{shape}")


@pytest.mark.parametrize("indices", [3, 7, [1, 4], [4, 1], [-1], [-3, 2], [-9, 9], [0, 9], []])
def test_tensor_split_pieces_are_slices(indices):
    """Each piece is a slice bounded by two indices (negative ones count from the end, a
    decreasing pair gives an empty piece), a view of the input with its own SliceBackward0."""
    results = []
    for lib in (torch, ember):
        x = lib.arange(35, dtype=lib.float64).reshape(5, 7).requires_grad_()
        pieces = lib.tensor_split(x, indices, 1)
        sum((p * (i + 1)).sum() for i, p in enumerate(pieces)).backward()
        # (An empty piece's storage_offset is left out: Ember reports 0 for any empty view.)
        results.append(([(tuple(p.shape), p.stride(), p.storage_offset() if p.numel() else None,
                          type(p.grad_fn).__name__, p.detach().numpy().tolist()) for p in pieces],
                        x.grad.numpy().tolist()))
    assert results[1] == results[0]


def test_in_place_view_ops_record_the_in_place_nodes():
    """squeeze_/unsqueeze_/transpose_/t_ record PyTorch's in-place overload nodes."""
    ops = [lambda y: y.squeeze_(), lambda y: y.squeeze_(1), lambda y: y.squeeze_((1,)),
           lambda y: y.unsqueeze_(0), lambda y: y.transpose_(0, 1), lambda y: y.t_()]
    results = []
    for lib in (torch, ember):
        x = lib.arange(3.0, dtype=lib.float64).reshape(3, 1).requires_grad_()
        names = []
        for i, op in enumerate(ops):
            y = x * 2
            op(y)
            names.append((type(y.grad_fn).__name__, tuple(y.shape)))
            (y * (i + 1)).sum().backward()
        results.append((names, x.grad.numpy().tolist()))
    assert results[1] == results[0]


def test_copy_into_a_view_takes_the_source_edge():
    """copy_ into a view gives the base a CopySlices whose second edge is the source's own
    history (as PyTorch), with the region's gradient summed to a broadcast source's shape and
    cast to its dtype."""
    results = []
    for lib in (torch, ember):
        w = lib.arange(4.0, dtype=lib.float64).requires_grad_()
        v = lib.ones(3, 4, dtype=lib.float32, requires_grad=True)
        base = lib.zeros(2, 3, 4, dtype=lib.float64)
        base[0].copy_(w * 2)
        base[1].copy_(v)
        weights = lib.arange(24.0, dtype=lib.float64).reshape(2, 3, 4)
        (base * weights).sum().backward()
        edges = [type(f).__name__ if f is not None else None
                 for f, _ in base.grad_fn.next_functions]
        results.append((type(base.grad_fn).__name__, edges, w.grad.numpy().tolist(),
                        str(v.grad.dtype).split(".")[-1], v.grad.numpy().tolist()))
    assert results[1] == results[0]
