"""AccumulateGrad adopts a gradient without copying only when nothing else can see it: these
cases would alias ``.grad`` with something the user or another leaf holds, and must not."""
import ember


def test_one_gradient_handed_to_two_leaves_is_not_shared():
    a = ember.ones(3, requires_grad=True)
    b = ember.ones(3, requires_grad=True)
    (a + b).backward(ember.ones(3))
    a.grad.mul_(5)
    assert b.grad.tolist() == [1.0, 1.0, 1.0]


def test_users_gradient_is_never_written():
    user = ember.full((3,), 2.0)
    x = ember.ones(3, requires_grad=True)
    (x + 0).backward(user)
    x.grad.add_(1)
    assert user.tolist() == [2.0, 2.0, 2.0]


def test_hook_results_and_retained_grads_stay_intact():
    kept = []
    x = ember.ones(3, requires_grad=True)
    x.register_hook(lambda g: kept.append(g * 2) or kept[-1])
    y = x * 3
    y.retain_grad()
    (y * 1).sum().backward()
    x.grad.add_(100)
    assert kept[0].tolist() == [6.0, 6.0, 6.0]
    assert y.grad.tolist() == [1.0, 1.0, 1.0]


def test_broadcast_gradient_is_owned_and_writable():
    x = ember.ones(2, 3, requires_grad=True)
    x.sum().backward()
    x.grad.add_(1)
    assert x.grad.tolist() == [[2.0] * 3] * 2


def test_accumulation_across_backward_calls():
    w = ember.randn(4, 3, requires_grad=True)
    inp = ember.randn(5, 4)
    (inp @ w).sum().backward()
    first = w.grad.clone()
    (inp @ w).sum().backward()
    assert ember.allclose(w.grad, first * 2)


def test_linear_weight_gradient_is_adopted_not_copied(monkeypatch):
    """A Linear weight's gradient is a product computed transposed and transposed back
    (Addmm -> T -> AccumulateGrad, as PyTorch's graph): a private, contiguous array that
    AccumulateGrad takes over. Copying it cost a full pass over every weight per step."""
    import sys
    copies = []
    clone = ember.Tensor.clone

    def counting_clone(self, *args, **kwargs):
        if sys._getframe(1).f_code.co_name == "accumulate":
            copies.append(tuple(self.shape))
        return clone(self, *args, **kwargs)
    monkeypatch.setattr(ember.Tensor, "clone", counting_clone)
    layer = ember.nn.Linear(6, 4)
    layer(ember.randn(5, 6)).sum().backward()
    assert copies == []
    assert layer.weight.grad.is_contiguous()
    # the adopted gradient then accumulates the next one in place, as any .grad does
    before = layer.weight.grad.clone()
    layer(ember.ones(5, 6)).sum().backward()
    assert ember.allclose(layer.weight.grad, before + 5)
