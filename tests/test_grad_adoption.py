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
