"""``ember.autograd.Function`` against ``torch.autograd.Function``: ctx methods, the
``setup_context`` style, several outputs, double backward, ``once_differentiable`` and errors.

Each test defines its Function inside ``fn(lib)`` so the same code runs on torch and Ember."""
import pytest
import torch

import ember
from torch_compare import assert_same, compare_error


def compare(fn):
    assert_same(fn(torch), fn(ember), rtol=1e-6, atol=1e-7)


def leaf(lib, values, dtype=None):
    return lib.tensor(values, dtype=dtype or lib.float32, requires_grad=True)


def scaled_exp(lib):
    class ScaledExp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale):
            y = x.exp() * scale
            ctx.save_for_backward(y)
            ctx.scale = scale
            return y

        @staticmethod
        def backward(ctx, grad):
            y, = ctx.saved_tensors
            return grad * y, None
    return ScaledExp


def test_save_for_backward_and_non_tensor_argument():
    def fn(lib):
        x = leaf(lib, [0.0, 1.0, -0.5])
        y = scaled_exp(lib).apply(x, 2.0)
        y.sum().backward()
        return (y, x.grad, type(y.grad_fn).__name__, y.grad_fn.scale,
                [type(n).__name__ for n, _ in y.grad_fn.next_functions])
    compare(fn)


def test_double_backward_through_differentiable_backward():
    def fn(lib):
        x = leaf(lib, [0.0, 1.0, -0.5], lib.float64)
        y = scaled_exp(lib).apply(x, 3.0)
        g, = lib.autograd.grad(y.sum(), x, create_graph=True)
        g2, = lib.autograd.grad((g * g).sum(), x)
        return g, g2, g.requires_grad
    compare(fn)


def test_custom_function_passes_gradcheck_and_gradgradcheck():
    for lib in (torch, ember):
        x = lib.tensor([0.1, -0.4, 0.7], dtype=lib.float64, requires_grad=True)
        fn = scaled_exp(lib)
        assert lib.autograd.gradcheck(lambda t: fn.apply(t, 1.5), (x,))
        assert lib.autograd.gradgradcheck(lambda t: fn.apply(t, 1.5), (x,))


def test_needs_input_grad_and_multiple_outputs():
    def fn(lib):
        seen = {}

        class ProductAndSum(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, b, k):
                ctx.save_for_backward(a, b)
                return a * b, a + b * k

            @staticmethod
            def backward(ctx, grad_product, grad_sum):
                a, b = ctx.saved_tensors
                seen["needs"] = ctx.needs_input_grad
                seen["grads"] = (grad_product.clone(), grad_sum.clone())
                return grad_product * b + grad_sum, grad_product * a + grad_sum * 5, None

        a = leaf(lib, [1.0, 2.0])
        b = lib.tensor([3.0, 4.0])
        product, total = ProductAndSum.apply(a, b, 5)
        product.sum().backward()  # `total` unused: its gradient arrives as zeros
        return (a.grad, seen["needs"], seen["grads"], product.grad_fn is total.grad_fn,
                total.requires_grad)
    compare(fn)


def test_set_materialize_grads_false_passes_none():
    def fn(lib):
        seen = {}

        class TwoOutputs(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                ctx.set_materialize_grads(False)
                return a * 2, a * 3

            @staticmethod
            def backward(ctx, g1, g2):
                seen["none"] = (g1 is None, g2 is None)
                return g1 * 2 if g1 is not None else None

        a = leaf(lib, [1.0, 2.0])
        first, _ = TwoOutputs.apply(a)
        first.sum().backward()
        return a.grad, seen["none"]
    compare(fn)


def test_mark_dirty_rebases_the_modified_input():
    def fn(lib):
        class DoubleInPlace(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                a.mul_(2)
                ctx.mark_dirty(a)
                return a

            @staticmethod
            def backward(ctx, g):
                return g * 2

        x = leaf(lib, [1.0, 2.0])
        h = x * 1
        out = DoubleInPlace.apply(h)
        (out * out).sum().backward()
        return x.grad, out is h, type(h.grad_fn).__name__, h._version
    compare(fn)


def test_mark_dirty_on_a_leaf_that_requires_grad_raises():
    def fn(lib):
        class DoubleInPlace(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                a.mul_(2)
                ctx.mark_dirty(a)
                return a

            @staticmethod
            def backward(ctx, g):
                return g * 2

        DoubleInPlace.apply(leaf(lib, [1.0, 2.0]))
    compare_error(fn)


def test_mark_non_differentiable():
    def fn(lib):
        seen = {}

        class WithMask(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                mask = (a > 0).to(a.dtype)
                ctx.mark_non_differentiable(mask)
                ctx.save_for_backward(mask)
                return a * mask, mask

            @staticmethod
            def backward(ctx, g, g_mask):
                mask, = ctx.saved_tensors
                seen["g_mask"] = g_mask.clone()
                return g * mask

        a = leaf(lib, [1.0, -3.0, 2.0])
        out, mask = WithMask.apply(a)
        out.sum().backward()
        return out.requires_grad, mask.requires_grad, mask.grad_fn, a.grad, seen["g_mask"]
    compare(fn)


def test_setup_context_style_with_keyword_and_default_arguments():
    def fn(lib):
        class Scale(lib.autograd.Function):
            @staticmethod
            def forward(x, factor, offset=1.0):
                return x * factor + offset

            @staticmethod
            def setup_context(ctx, inputs, output):
                x, factor, offset = inputs
                ctx.factor = factor
                ctx.save_for_backward(x)

            @staticmethod
            def backward(ctx, g):
                return g * ctx.factor, None, None

        x = leaf(lib, [1.0, 3.0])
        out = Scale.apply(x, factor=3)
        out.sum().backward()
        return out, x.grad, type(out.grad_fn).__name__
    compare(fn)


def test_keyword_tensor_arguments_are_inputs():
    def fn(lib):
        seen = {}

        class AddScaled(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, y=None, k=2):
                return x * k + y

            @staticmethod
            def backward(ctx, g):
                seen["needs"] = ctx.needs_input_grad
                return g * 2, g

        x = leaf(lib, [1.0, 3.0])
        y = leaf(lib, [1.0, 1.0])
        AddScaled.apply(x, y=y).sum().backward()
        return x.grad, y.grad, seen["needs"]
    compare(fn)


def test_returning_an_input_unchanged_makes_an_alias():
    def fn(lib):
        class Identity(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 2

        x = leaf(lib, [1.0, 3.0])
        out = Identity.apply(x)
        out.sum().backward()
        return out is x, x.grad, out.is_leaf
    compare(fn)


def test_no_graph_without_grad():
    def fn(lib):
        fn_cls = scaled_exp(lib)
        plain = fn_cls.apply(lib.tensor([1.0]), 1.0)
        with lib.no_grad():
            quiet = fn_cls.apply(leaf(lib, [1.0]), 1.0)
        return plain.requires_grad, plain.grad_fn, quiet.requires_grad, quiet.grad_fn
    compare(fn)


def test_once_differentiable():
    def square(lib):
        class Square(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 2

            @staticmethod
            @lib.autograd.function.once_differentiable
            def backward(ctx, g):
                x, = ctx.saved_tensors
                return g * 2 * x
        return Square

    def first_order(lib):
        x = leaf(lib, [1.0, 2.0])
        g, = lib.autograd.grad(square(lib).apply(x).sum(), x, create_graph=True)
        return g, g.requires_grad

    def twice(lib):
        x = leaf(lib, [1.0, 2.0])
        cotangent = lib.ones(2, requires_grad=True)
        g, = lib.autograd.grad(square(lib).apply(x), x, cotangent, create_graph=True)
        g.sum().backward()

    compare(first_order)
    compare_error(twice)


def test_saved_tensor_modified_in_place_raises():
    def fn(lib):
        class Square(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                return 2 * g * x

        x = leaf(lib, [1.0, 3.0, 2.0])
        h = x * 1
        out = Square.apply(h)
        h.add_(1)
        out.sum().backward()
    compare_error(fn, "one of the variables needed for gradient computation has been modified "
                      "by an inplace operation: [")


def test_saved_tensors_are_freed_after_backward():
    def fn(lib):
        class Square(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                return 2 * g * x

        out = Square.apply(leaf(lib, [1.0]))
        out.sum().backward()
        return out.grad_fn.saved_tensors
    compare_error(fn)


def test_errors_in_custom_functions():
    def save_a_number(lib):
        class SavesNumber(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(3)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2
        SavesNumber.apply(leaf(lib, [1.0]))

    def too_many_gradients(lib):
        class TooMany(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2, g
        TooMany.apply(leaf(lib, [1.0, 2.0])).sum().backward()

    def wrong_gradient_shape(lib):
        class WrongShape(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g.sum()
        WrongShape.apply(leaf(lib, [1.0, 2.0, 3.0])).sum().backward()

    def legacy_instance_call(lib):
        class Legacy(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g
        with pytest.warns(DeprecationWarning, match="should not be instantiated"):
            instance = Legacy()
        instance(lib.ones(2))

    for case in (save_a_number, too_many_gradients, wrong_gradient_shape):
        compare_error(case)
    compare_error(legacy_instance_call, "Legacy autograd function with non-static forward "
                                        "method is deprecated.")


def test_extra_none_gradients_are_allowed():
    def fn(lib):
        class ExtraNone(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2, None, None

        x = leaf(lib, [1.0, 2.0])
        ExtraNone.apply(x).sum().backward()
        return x.grad
    compare(fn)


def test_non_tensor_output_gets_none_while_tensor_grads_are_materialised():
    """torch passes None for an output that is not a tensor (here a tuple), and zeros for an
    unused tensor output, when grads are materialised (the default)."""
    import torch
    seen = {}

    def make(lib):
        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2, (x, x), x * 3

            @staticmethod
            def backward(ctx, g1, g2, g3):
                seen[lib.__name__] = (g2, g3.tolist())
                return g1 * 2 + g3 * 3
        return F

    for lib in (torch, ember):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        a, _, _ = make(lib).apply(x)
        a.sum().backward()
        assert x.grad.tolist() == [2.0, 2.0]
    assert seen["torch"] == (None, [0.0, 0.0])
    assert seen["ember"] == seen["torch"]
