"""In-place ops and PyTorch's autograd rules, run side by side with torch: which in-place writes
are refused, when backward detects a saved tensor that was modified, and that in-place ops on
non-leaves, writes through views (CopySlices), ``__setitem__``, ``copy_``, ``fill_`` and
``zero_`` give the same values and gradients as PyTorch."""
import numpy as np
import pytest
import torch

import ember

RNG = np.random.default_rng(0)
X34 = RNG.uniform(-1, 1, (3, 4))
W34 = RNG.uniform(-1, 1, (3, 4))
W4 = RNG.uniform(-1, 1, (4,))
W3 = RNG.uniform(-1, 1, (3,))
W0 = np.float64(0.7)
MASK34 = np.array([[True, False, True, False], [False, False, False, False],
                   [True, True, False, True]])


def _np(x):
    return np.asarray(x.detach().cpu().numpy())


def _leaves(lib, arrays, requires_grad=True):
    return [lib.tensor(a, dtype=lib.float64, requires_grad=requires_grad) for a in arrays]


def _on(lib, like, data, dtype=None):
    return lib.tensor(data, dtype=dtype, device=like.device)


def compare(fn, *arrays):
    """Run ``fn(lib, *leaves)`` for torch and ember; compare the output and every leaf's grad
    for a random cotangent (None grads must match as None)."""
    t_in, e_in = _leaves(torch, arrays), _leaves(ember, arrays)
    t_out, e_out = fn(torch, *t_in), fn(ember, *e_in)
    np.testing.assert_allclose(_np(e_out), _np(t_out), rtol=1e-12, atol=1e-12)
    cot = RNG.uniform(-1, 1, tuple(t_out.shape))
    (t_out * torch.tensor(cot)).sum().backward()
    (e_out * ember.tensor(cot)).sum().backward()
    for i, (t, e) in enumerate(zip(t_in, e_in)):
        if t.grad is None:
            assert e.grad is None, f"grad[{i}] should be None"
            continue
        assert e.grad is not None, f"grad[{i}] is None, torch has one"
        assert e.grad.dtype is ember.float64
        np.testing.assert_allclose(_np(e.grad), _np(t.grad), rtol=1e-12, atol=1e-12,
                                   err_msg=f"grad[{i}]")
    return t_out, e_out


def both_raise(fn, *arrays, exc=RuntimeError, match=None, requires_grad=True):
    """``fn`` raises ``exc`` for torch; ember raises the same type (and ``match`` if given)."""
    with pytest.raises(exc, match=match):
        fn(torch, *_leaves(torch, arrays, requires_grad))
    with pytest.raises(exc, match=match):
        fn(ember, *_leaves(ember, arrays, requires_grad))


# ---- refused in-place writes --------------------------------------------------------------------

LEAF_MSG = "a leaf Variable that requires grad is being used in an in-place operation"
VIEW_MSG = "a view of a leaf Variable that requires grad is being used in an in-place operation"


@pytest.mark.parametrize("fn", [
    lambda lib, x: x.add_(1),
    lambda lib, x: x.mul_(x),
    lambda lib, x: x.exp_(),
    lambda lib, x: x.zero_(),
    lambda lib, x: x.fill_(2.0),
    lambda lib, x: x.copy_(lib.ones(3, 4, dtype=lib.float64)),
    lambda lib, x: x.masked_fill_(_on(lib, x, MASK34), 0.0),
    lambda lib, x: x.__iadd__(1),
    lambda lib, x: x.index_add_(0, _on(lib, x, [0]), lib.ones(1, 4, dtype=lib.float64)),
], ids=["add_", "mul_", "exp_", "zero_", "fill_", "copy_", "masked_fill_", "iadd", "index_add_"])
def test_inplace_on_leaf_requiring_grad_raises(fn):
    both_raise(fn, X34, match=LEAF_MSG)


@pytest.mark.parametrize("fn", [
    lambda lib, x: x[0].add_(1),
    lambda lib, x: x.t().mul_(2),
    lambda lib, x: x.view(-1).zero_(),
    lambda lib, x: x.diagonal().fill_(1.0),
    lambda lib, x: x.__setitem__(0, 1.0),
    lambda lib, x: x.__setitem__((slice(None), 1), lib.zeros(3, dtype=lib.float64)),
    lambda lib, x: x[1:].copy_(lib.zeros(2, 4, dtype=lib.float64)),
], ids=["select", "t", "view", "diagonal", "setitem_int", "setitem_slice", "copy_"])
def test_inplace_on_view_of_leaf_raises(fn):
    both_raise(fn, X34, match=VIEW_MSG)


def test_setitem_on_leaf_with_advanced_index_raises():
    both_raise(lambda lib, x: x.__setitem__(_on(lib, x, [0, 2]), 0.0), X34, match=LEAF_MSG)
    both_raise(lambda lib, x: x.__setitem__(_on(lib, x, MASK34), 0.0), X34, match=LEAF_MSG)


def test_inplace_on_leaf_allowed_under_no_grad():
    outs = []
    for lib in (torch, ember):
        (x,) = _leaves(lib, [X34])
        with lib.no_grad():
            x.mul_(2)
            x[0] = 1.5
            x[:, 1].add_(3)
        assert x.requires_grad and x.is_leaf and x.grad_fn is None
        outs.append((_np(x), x._version))
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    assert outs[0][1] == outs[1][1]


def test_inplace_on_multi_output_view_raises():
    def fn(lib, x):
        y = x * 2
        y.unbind(0)[1].mul_(2)
    both_raise(fn, X34, match="returns multiple views")

    def split_fn(lib, x):
        y = x * 2
        y.split(2)[0].zero_()
    both_raise(split_fn, X34, match="returns multiple views")


def test_view_made_under_no_grad_then_modified_with_grad_raises():
    def fn(lib, x):
        y = x * 2
        with lib.no_grad():
            v = y[0]
        v.mul_(2)
    both_raise(fn, X34, match="created in no_grad mode")


# ---- saved tensors modified in place ------------------------------------------------------------

MODIFIED = "modified by an inplace operation"


@pytest.mark.parametrize("fn", [
    lambda lib, x: (lambda y: (y.add_(1), y.sum().backward()))(x.exp()),
    lambda lib, x: (lambda y: (lambda z: (y.mul_(2), z.sum().backward()))(y * y))(x * 2),
    lambda lib, x: (lambda y: (y.exp_(), y.add_(1), y.sum().backward()))(x * 2),
    lambda lib, x: (lambda y: (y[0].mul_(2), y.sum().backward()))(x.sigmoid()),
    lambda lib, x: (lambda y: (lambda z: (y.t()[1].zero_(), z.sum().backward()))(y * y))(x * 1),
    lambda lib, x: (lambda y: (y.mul_(y), y.sum().backward()))(x * 2),
    lambda lib, x: (lambda y: (lambda z: (y.add_(1), z.sum().backward()))(y.pow(3)))(x + 0),
    lambda lib, x: (lambda y: (lambda z: (y.__setitem__(0, 0.0), z.sum().backward()))(y.sin()))(x * 1),
    lambda lib, x: (lambda y: (y.sigmoid_(), y.neg_(), y.sum().backward()))(x * 2),
    lambda lib, x: (lambda y: (y.zero_(), y.sum().backward()))(x.exp()),
    lambda lib, x: (lambda y: (y.diagonal().mul_(2), y.sum().backward()))(x.exp()),
    lambda lib, x: (lambda y: (y.pow_(2), y.sum().backward()))(x.tanh()),
], ids=["exp_output", "mul_input", "exp_then_add", "sigmoid_output_through_view",
        "mul_input_through_view", "mul_self", "pow_input", "setitem_after_save", "sigmoid_then_neg",
        "zero_after_exp", "view_after_exp", "pow_after_tanh"])
def test_backward_after_saved_tensor_modified_raises(fn):
    both_raise(fn, X34, match=MODIFIED)


def test_modified_error_message_names_the_tensor():
    x = ember.tensor(X34, requires_grad=True)
    y = x.exp()
    y.add_(1)
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    msg = str(info.value)
    assert "[ember.DoubleTensor [3, 4]]" in msg and "is at version 1; expected version 0" in msg


@pytest.mark.parametrize("fn", [
    lambda lib, x: (lambda y: (lambda z: (y.mul_(3), z)[1])(y + 1))(x * 2),
    lambda lib, x: (lambda y: (lambda z: (y.__setitem__(0, 0.0), z)[1])(y.exp()))(x * 1),
    lambda lib, x: (lambda y: (lambda z: (y.t()[1].zero_(), z)[1])(y.tanh()))(x * 1),
], ids=["add_saves_nothing", "exp_saves_its_output", "tanh_saves_its_output"])
def test_modifying_unsaved_tensor_is_fine(fn):
    compare(fn, X34)


# ---- gradients of in-place ops on non-leaves -----------------------------------------------------

@pytest.mark.parametrize("fn", [
    lambda lib, x, w: (lambda y: (y.mul_(3), y.exp_())[-1])(x * 2),
    lambda lib, x, w: (lambda y: (y.add_(w), y.mul_(w))[-1])(x.clone()),
    lambda lib, x, w: (lambda y: y.div_(w.exp()))(x * 1),
    lambda lib, x, w: (lambda y: y.sub_(w, alpha=2))(x * 1),
    lambda lib, x, w: (lambda y: (y.pow_(2), y.add_(1), y.sqrt_())[-1])(x * 2),
    lambda lib, x, w: (lambda y: (y.clamp_(min=-0.2, max=0.5), y.mul_(w))[-1])(x * 1),
    lambda lib, x, w: (lambda y: y.masked_fill_(_on(lib, y, MASK34), 0.5))(x * w),
    lambda lib, x, w: (lambda y: (y.neg_(), y.sigmoid_())[-1])(x + w),
    lambda lib, x, w: (lambda y: (y.sin_(), y.tanh_())[-1])(x - w),
    lambda lib, x, w: (lambda y: (y.__iadd__(w), y.__imul__(x), y.__itruediv__(2))[-1])(x * 1),
    lambda lib, x, w: (lambda y: (y.tril_(), y.abs_())[-1])(x - w),
    lambda lib, x, w: (lambda y: y.index_add_(0, _on(lib, y, [2, 0, 2]), w))(x * 1),
    lambda lib, x, w: (lambda y: y.scatter_(0, _on(lib, y, [[0, 2, 1, 1]]), w[:1]))(x * 1),
    lambda lib, x, w: (lambda y: (y.clamp_min_(0), y.mul_(3))[-1])(x * w),
    lambda lib, x, w: (lambda y: y.add_(w * x, alpha=0.5))(x * 1),
], ids=["mul_exp", "add_mul", "div", "sub_alpha", "pow_add_sqrt", "clamp_mul", "masked_fill",
        "neg_sigmoid", "sin_tanh", "operators", "tril_abs", "index_add", "scatter", "clamp_min",
        "add_alpha"])
def test_inplace_on_non_leaf_gradients(fn):
    compare(fn, X34, W34)


def test_eq_inplace_cuts_gradient():
    compare(lambda lib, x: (lambda y: (y.gt_(0.0), y * x)[-1])(x * 2), X34)


def test_version_counts_match():
    versions = []
    for lib in (torch, ember):
        x = lib.zeros(3, 4)
        x.add_(1)
        x.mul_(2)
        x[0] = 3
        x[_on(lib, x, [1, 2])] = 4
        x.fill_(0)
        x.zero_()
        x.copy_(lib.ones(3, 4))
        x[:, 0].exp_()
        versions.append(x._version)
    assert versions[0] == versions[1]


# ---- writes through views of non-leaves (CopySlices) --------------------------------------------

@pytest.mark.parametrize("fn", [
    lambda lib, x, w: (lambda y: (y.__setitem__(0, w[0] * 5), y[:, 1].mul_(2), y)[-1])(x * 1),
    lambda lib, x, w: (lambda y: (y[1:, :2].add_(w[:2, :2]), y)[-1])(x * 2),
    lambda lib, x, w: (lambda y: (y.t()[0].exp_(), y)[-1])(x * 1),
    lambda lib, x, w: (lambda y: (y.diagonal().mul_(w[0, :3]), y)[-1])(x * 2),
    lambda lib, x, w: (lambda y: (y[:, 1:3].copy_(w[:, :2]), y.sin())[-1])(x * 1),
    lambda lib, x, w: (lambda y: (y.view(-1)[2:7].mul_(3), y)[-1])(x * x),
    lambda lib, x, w: (lambda y: (y[0][1:].sub_(w[0, 1:]), y[1].fill_(2.0), y)[-1])(x * 1),
    lambda lib, x, w: (lambda y: (y.unsqueeze(0)[0, :, 2].zero_(), y)[-1])(x * 3),
    lambda lib, x, w: (lambda y: (y.narrow(1, 1, 2).mul_(w[:, :2]), y.narrow(1, 2, 2).add_(1), y)[-1])(x * 1),
    lambda lib, x, w: (lambda y: (y[2].mul_(2), y[2])[-1])(x * 1),
], ids=["setitem_then_mul", "slice_add", "transpose_row_exp", "diagonal_mul", "copy_into_slice",
        "flat_view", "nested_views", "unsqueezed", "overlapping_narrows", "view_output"])
def test_inplace_through_view_gradients(fn):
    compare(fn, X34, W34)


@pytest.mark.parametrize("fn", [
    # a view taken before its base is modified in place sees the new history
    lambda lib, x, w: (lambda y: (lambda v: (y.mul_(2), v * w[0])[-1])(y[0]))(x * 1),
    # two overlapping views: writing one changes what the other's gradient goes through
    lambda lib, x, w: (lambda y: (lambda a, b: (a.mul_(w[0]), b.exp())[-1])(y[0], y[:, 0]))(x * 1),
    lambda lib, x, w: (lambda y: (lambda v: (y[1:].exp_(), v.sum(0))[-1])(y.t()))(x * 1),
    # a base that needs no grad gets history from a write; its earlier view follows
    lambda lib, x, w: (lambda y: (lambda v: (y.__setitem__(0, w[0]), v * 1)[-1])(y[:, :2]))(
        lib.zeros(3, 4, dtype=lib.float64)),
], ids=["base_modified", "overlapping_views", "transposed_view", "base_without_grad"])
def test_existing_views_see_later_inplace_writes(fn):
    compare(fn, X34, W34)


def test_double_backward_through_copy_slices():
    grads = []
    for lib in (torch, ember):
        x, w = _leaves(lib, [X34, W4])
        y = x * x
        y[1] = w * w
        y[:, 0].mul_(x[:, 1])
        (gx, gw) = lib.autograd.grad(y.pow(2).sum(), (x, w), create_graph=True)
        (gx.sum() + (gw * w).sum()).backward()
        grads.append((_np(gx), _np(gw), _np(x.grad), _np(w.grad)))
    for e, t in zip(grads[1], grads[0]):
        np.testing.assert_allclose(e, t, rtol=1e-12, atol=1e-12)


# ---- __setitem__ --------------------------------------------------------------------------------

SETITEMS = {
    "int_scalar": lambda lib, y, w: y.__setitem__(1, 2.5),
    "int_tensor": lambda lib, y, w: y.__setitem__(1, w[0] * 2),
    "slice_broadcast_row": lambda lib, y, w: y.__setitem__(slice(0, 2), w[2]),
    "column_broadcast": lambda lib, y, w: y.__setitem__((slice(None), 2), w[:, :1].squeeze(1)),
    "ellipsis_0d": lambda lib, y, w: y.__setitem__((Ellipsis, 3), w[1, 1]),
    "none_key": lambda lib, y, w: y.__setitem__((None, 0), w[0:1]),
    "mask_scalar": lambda lib, y, w: y.__setitem__(_on(lib, y, MASK34), -1.0),
    "mask_values": lambda lib, y, w: y.__setitem__(_on(lib, y, MASK34), w.flatten()[:5]),
    "mask_0d_tensor": lambda lib, y, w: y.__setitem__(_on(lib, y, MASK34), w[2, 2]),
    "row_mask": lambda lib, y, w: y.__setitem__(_on(lib, y, [True, False, True]), w[1]),
    "long_index": lambda lib, y, w: y.__setitem__(_on(lib, y, [2, 0]), w[:2]),
    "long_index_broadcast": lambda lib, y, w: y.__setitem__(_on(lib, y, [2, 0]), w[0]),
    "long_pair": lambda lib, y, w: y.__setitem__((_on(lib, y, [0, 2]), _on(lib, y, [3, 1])), w[1, :2]),
    "long_then_slice": lambda lib, y, w: y.__setitem__((_on(lib, y, [1, 2]), slice(1, 3)), w[:2, :2]),
    "int_then_long": lambda lib, y, w: y.__setitem__((1, _on(lib, y, [3, 0])), w[0, :2]),
    "list_index": lambda lib, y, w: y.__setitem__([0, 2], 7.0),
    "negative_long": lambda lib, y, w: y.__setitem__(_on(lib, y, [-1]), w[0] + 1),
}


@pytest.mark.parametrize("name", list(SETITEMS))
def test_setitem_with_grad(name):
    set_fn = SETITEMS[name]

    def fn(lib, x, w):
        y = x * 1
        set_fn(lib, y, w)
        return y * 2
    compare(fn, X34, W34)


@pytest.mark.parametrize("name", list(SETITEMS))
def test_setitem_without_grad(name):
    set_fn = SETITEMS[name]
    results = []
    for lib in (torch, ember):
        y, w = _leaves(lib, [X34, W34], requires_grad=False)
        set_fn(lib, y, w)
        assert not y.requires_grad
        results.append((_np(y), y._version))
    np.testing.assert_array_equal(results[1][0], results[0][0])
    assert results[1][1] == results[0][1]


def test_setitem_into_leaf_without_grad_takes_value_history():
    def fn(lib, w):
        y = lib.zeros(3, 4, dtype=lib.float64)
        y[1] = w[0]
        y[_on(lib, y, [True, False, True])] = w[1:].flip(0) * 3
        assert not y.is_leaf and y.requires_grad
        return y
    compare(fn, W34)


def test_setitem_with_repeated_index_accumulates_nothing_twice():
    # Writing the same value twice at a repeated index: the result is defined, and only the
    # written value (once per position) receives gradient.
    compare(lambda lib, x, w: (lambda y: (y.__setitem__(_on(lib, y, [1, 1]), w[0] * 3), y)[-1])(x * 1),
            X34, W34)


def test_setitem_dtype_casts_and_integer_targets():
    for value in (2.7, -3, True):
        t, e = torch.zeros(2, 3, dtype=torch.int32), ember.zeros(2, 3, dtype=ember.int32)
        t[0, 1] = value
        e[0, 1] = value
        t[1] = torch.tensor([1.9, -1.9, 0.4])
        e[1] = ember.tensor([1.9, -1.9, 0.4])
        np.testing.assert_array_equal(_np(e), _np(t))
        assert e.dtype is ember.int32
    for lib in (torch, ember):
        y = lib.zeros(3)
        y[lib.tensor([True, False, True])] = lib.tensor(2, dtype=lib.float64)  # a masked fill
        assert y.tolist() == [2.0, 0.0, 2.0]
        with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match"):
            y[lib.tensor([0, 2])] = lib.tensor([1, 2], dtype=lib.float64)
        with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match"):
            y[lib.tensor([0, 2])] = lib.tensor(1)


@pytest.mark.parametrize("fn,exc", [
    (lambda lib, y: y.__setitem__(3, 1.0), IndexError),
    (lambda lib, y: y.__setitem__((slice(None), 4), 1.0), IndexError),
    (lambda lib, y: y.__setitem__(_on(lib, y, [0, 5]), 1.0), IndexError),
    (lambda lib, y: y.__setitem__(0, lib.ones(3)), RuntimeError),
    (lambda lib, y: y.__setitem__(_on(lib, y, [0, 1]), lib.ones(3, 4)), RuntimeError),
    (lambda lib, y: y.__setitem__(_on(lib, y, MASK34), lib.ones(2)), RuntimeError),
    (lambda lib, y: y.__setitem__(_on(lib, y, [0.0]), 1.0), IndexError),
], ids=["int_oob", "column_oob", "long_oob", "shape_mismatch", "long_shape_mismatch",
        "mask_count_mismatch", "float_index"])
def test_setitem_errors(fn, exc):
    with pytest.raises(exc):
        fn(torch, torch.zeros(3, 4))
    with pytest.raises(exc):
        fn(ember, ember.zeros(3, 4))


def test_write_into_expanded_tensor():
    values = []
    for lib in (torch, ember):
        base = lib.zeros(3, 1)
        y = base.expand(3, 4)
        for write in (lambda: y.add_(1), lambda: y.copy_(lib.ones(3, 4)),
                      lambda: y.__setitem__(0, 1.0), lambda: y.mul_(2)):
            with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
                write()
        y.fill_(1.5)  # a fill may write into shared memory
        y[:, :1].zero_()
        base.expand(2, 3, 1)[0].fill_(2)
        values.append((_np(base), _np(y), base._version))
    for e, t in zip(values[1], values[0]):
        np.testing.assert_array_equal(e, t)


# ---- copy_, fill_, zero_ ------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [
    lambda lib, x, w: (lambda y: y.copy_(w))(x * 2),
    lambda lib, x, w: (lambda y: (y.copy_(w[0]), y * x)[-1])(x * 2),
    lambda lib, x, w: (lambda y: (y.copy_(w.float()), y)[-1])(x + 1),
    lambda lib, x, w: (lambda y: (y[1:].copy_(w[:2] * 3), y.exp())[-1])(x * 1),
    lambda lib, x, w: (lambda y: (y.fill_(2.0), y * x)[-1])(x * 2),
    lambda lib, x, w: (lambda y: (y[:, 2].fill_(w[0, 0]), y)[-1])(x * 2),
    lambda lib, x, w: (lambda y: (y.fill_(w[1, 1] * 2), y.sin())[-1])(x * 2),
    lambda lib, x, w: (lambda y: (y.zero_(), y + x)[-1])(x * 2),
    lambda lib, x, w: (lambda y: (y[1].zero_(), y.diagonal().zero_(), y)[-1])(x * w),
    lambda lib, x, w: (lambda y: y.copy_(w))(lib.zeros(3, 4, dtype=lib.float64)),
], ids=["copy", "copy_broadcast", "copy_cast", "copy_into_view", "fill", "fill_view_tensor",
        "fill_tensor", "zero", "zero_views", "copy_into_no_grad_tensor"])
def test_copy_fill_zero_gradients(fn):
    compare(fn, X34, W34)


def test_copy_across_dtypes_keeps_source_grad_dtype():
    grads = []
    for lib in (torch, ember):
        w = lib.tensor(W34, dtype=lib.float64, requires_grad=True)
        y = lib.zeros(3, 4, dtype=lib.float32)
        y.copy_(w)
        assert y.dtype == lib.float32
        (y * 2).sum().backward()
        grads.append((_np(w.grad), str(w.grad.dtype).split(".")[-1]))
    np.testing.assert_array_equal(grads[1][0], grads[0][0])
    assert grads[1][1] == grads[0][1]


def test_fill_and_copy_values_without_grad():
    cases = [
        lambda lib: lib.zeros(2, 3, dtype=lib.uint8).fill_(-2),
        lambda lib: lib.zeros(2, 3, dtype=lib.int64).fill_(2.9),
        lambda lib: lib.zeros(2, 3).fill_(True),
        lambda lib: lib.zeros(2, 3, dtype=lib.bool).fill_(3),
        lambda lib: lib.zeros(2, 3).fill_(lib.tensor(4)),
        lambda lib: lib.zeros(2, 3, dtype=lib.int32).copy_(lib.tensor([1.7, -2.2, 3.0])),
        lambda lib: lib.zeros(2, 3).copy_(lib.tensor([[True], [False]])),
        lambda lib: lib.ones(2, 3).zero_(),
    ]
    for make in cases:
        t, e = make(torch), make(ember)
        np.testing.assert_array_equal(_np(e), _np(t))
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]


@pytest.mark.parametrize("fn", [
    lambda lib: lib.zeros(2, 3).fill_(lib.ones(2)),
    lambda lib: lib.zeros(2, 3).copy_(lib.ones(3, 3)),
    lambda lib: lib.zeros(2, 3).copy_(lib.ones(2, 2)),
], ids=["fill_non_0d", "copy_bad_rows", "copy_bad_cols"])
def test_fill_copy_errors(fn):
    with pytest.raises(RuntimeError):
        fn(torch)
    with pytest.raises(RuntimeError):
        fn(ember)


def test_in_place_ops_on_empty_tensors_as_torch():
    # NumPy gives empty arrays zero strides; that is not an overlapping write
    for lib in (torch, ember):
        assert tuple(lib.ones(2, 0).clamp_(min=0.0).shape) == (2, 0)
        assert tuple(lib.ones(3, 0, 2).add_(1).shape) == (3, 0, 2)
        assert tuple(lib.zeros(0).exp_().shape) == (0,)


@pytest.mark.parametrize("shape, src_shape", [
    ((3,), (2,)), ((2, 3), (3, 2)), ((3,), (2, 3)), ((), (2,)), ((), (1,)), ((2,), (2, 2)),
    ((2,), (3, 4)), ((4, 1, 3), (2, 3))])
def test_copy_shape_errors_as_torch(shape, src_shape):
    with pytest.raises(RuntimeError) as expected:
        torch.zeros(shape).copy_(torch.ones(src_shape))
    with pytest.raises(RuntimeError) as got:
        ember.zeros(shape).copy_(ember.ones(src_shape))
    assert str(got.value) == str(expected.value)
