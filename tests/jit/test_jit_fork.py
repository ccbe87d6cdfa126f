"""``ember.jit.fork``/``wait``: forked calls equal serial ones, carry the caller's grad and
autocast state, propagate exceptions on wait, nest, work with autograd and
``ember.futures``, and really run at the same time as each other."""
import threading
import time

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from ember.futures import Future, collect_all, wait_all


def _branch(x, w, n=3):
    for _ in range(n):
        x = ember.tanh(x @ w)
    return x


def test_forked_results_equal_serial_execution():
    rng = np.random.default_rng(0)
    x, w1, w2 = (ember.from_numpy(rng.standard_normal((16, 16), dtype=np.float32))
                 for _ in range(3))
    serial = [_branch(x, w1), _branch(x, w2, n=5)]
    futures = [ember.jit.fork(_branch, x, w1), ember.jit.fork(_branch, x, w2, n=5)]
    assert all(isinstance(f, Future) for f in futures)
    for f, expected in zip(futures, serial):
        np.testing.assert_array_equal(ember.jit.wait(f).numpy(), expected.numpy())
    # the private names torch.jit has are the same functions; a Module is callable too
    assert ember.jit._fork is ember.jit.fork and ember.jit._wait is ember.jit.wait
    lin = nn.Linear(16, 4)
    np.testing.assert_array_equal(ember.jit._wait(ember.jit._fork(lin, x)).detach().numpy(),
                                  lin(x).detach().numpy())


def test_exception_raised_on_wait_not_on_fork():
    def fails(x):
        raise ValueError(f"bad input {x}")

    fut = ember.jit.fork(fails, 3)
    with pytest.raises(ValueError, match="bad input 3"):
        ember.jit.wait(fut)
    with pytest.raises(ValueError, match="bad input 3"):  # waiting again raises it again
        fut.wait()


def test_bad_arguments_raise_type_errors():
    with pytest.raises(TypeError, match="Object of type 'int' is not an instance of 'function'"):
        ember.jit.fork(3)
    with pytest.raises(TypeError):
        torch.jit.fork(3)  # torch's error is a TypeError too
    with pytest.raises(TypeError, match="expected an ember.futures.Future, got int"):
        ember.jit.wait(3)


def test_fork_inside_fork_more_deep_than_the_pool_is_wide():
    # Each level waits on its child: with more levels than pool threads this deadlocks unless
    # a waiter runs a task no thread has started yet.
    depth = 3 * ember.get_num_interop_threads() + 2

    def level(k):
        if k == 0:
            return ember.ones(2)
        return ember.jit.wait(ember.jit.fork(level, k - 1)) + 1

    np.testing.assert_array_equal(ember.jit.wait(ember.jit.fork(level, depth)).numpy(),
                                  np.full(2, depth + 1.0))

    def fan(k):  # a tree: each level forks two children before waiting on either
        if k == 0:
            return 1
        a, b = ember.jit.fork(fan, k - 1), ember.jit.fork(fan, k - 1)
        return ember.jit.wait(a) + ember.jit.wait(b)
    assert ember.jit.wait(ember.jit.fork(fan, 5)) == 32


def test_grad_mode_and_autocast_are_carried_into_the_task():
    def state():
        return (ember.is_grad_enabled(), ember.is_inference_mode_enabled(),
                ember.is_autocast_enabled("cpu"), ember.get_autocast_dtype("cpu"))

    assert ember.jit.wait(ember.jit.fork(state)) == (True, False, False, ember.bfloat16)
    with ember.no_grad():
        assert ember.jit.wait(ember.jit.fork(state))[0] is False
    with ember.inference_mode():
        assert ember.jit.wait(ember.jit.fork(state))[:2] == (False, True)
    with ember.autocast("cpu", dtype=ember.float16):
        assert ember.jit.wait(ember.jit.fork(state))[2:] == (True, ember.float16)
        a, b = ember.randn(4, 4), ember.randn(4, 4)
        assert ember.jit.wait(ember.jit.fork(ember.mm, a, b)).dtype is ember.float16
    # torch carries grad mode the same way (its eager fork runs in the caller's thread)
    with torch.no_grad():
        assert torch.jit.wait(torch.jit.fork(torch.is_grad_enabled)) is False

    # the state is captured at fork, and the worker threads get their own back afterwards
    with ember.no_grad():
        fut = ember.jit.fork(state)
    assert fut.wait()[0] is False
    workers = [ember.jit.fork(lambda: (time.sleep(0.01), state())[1])
               for _ in range(2 * ember.get_num_interop_threads())]
    assert all(f.wait() == (True, False, False, ember.bfloat16) for f in workers)


def test_backward_through_forked_outputs():
    rng = np.random.default_rng(1)
    x_np = rng.standard_normal((5, 6), dtype=np.float32)
    ws_np = [rng.standard_normal((6, 6), dtype=np.float32) for _ in range(2)]

    def model(lib, fork, wait):
        x = lib.tensor(x_np, requires_grad=True)
        ws = [lib.tensor(w, requires_grad=True) for w in ws_np]
        futures = [fork(_torch_or_ember_branch, x, w) for w in ws]
        out = sum(wait(f) for f in futures).sum()
        out.backward()
        return [t.grad.numpy() for t in [x] + ws]

    got = model(ember, ember.jit.fork, ember.jit.wait)
    expected = model(torch, torch.jit.fork, torch.jit.wait)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def _torch_or_ember_branch(x, w):
    return (x @ w).tanh() @ w


def test_collect_all_and_wait_all_on_forked_futures():
    futures = [ember.jit.fork(lambda k: ember.full((2,), float(k)), k) for k in range(4)]
    values = wait_all(futures)
    assert [v.numpy().tolist() for v in values] == [[float(k)] * 2 for k in range(4)]
    collected = collect_all([ember.jit.fork(lambda: 1), ember.jit.fork(lambda: 1 // 0)]).wait()
    assert collected[0].wait() == 1
    with pytest.raises(ZeroDivisionError):
        collected[1].wait()
    chained = ember.jit.fork(lambda: ember.ones(3)).then(lambda f: f.wait() * 2)
    np.testing.assert_array_equal(chained.wait().numpy(), [2.0, 2.0, 2.0])
    seen = []
    fut = ember.jit.fork(lambda: 7)
    fut.add_done_callback(lambda f: seen.append(f.value()))
    assert fut.wait() == 7
    assert fut.done() and seen == [7]


def test_fork_while_tracing_records_the_forked_ops():
    class TwoBranches(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)

        def forward(self, x):
            fa = ember.jit.fork(self.a, x)
            fb = ember.jit.fork(self.b, x)
            return ember.jit.wait(fa) * ember.jit.wait(fb)

    m = TwoBranches()
    x, new_x = ember.randn(2, 4), ember.randn(3, 4)
    expected = m(new_x).detach().numpy()
    traced = ember.jit.trace(m, (x,))
    np.testing.assert_allclose(traced(new_x).detach().numpy(), expected, rtol=1e-6)
    # symbolic tracing (fx, jit.script) passes proxies: fork runs them inline too
    gm = ember.fx.symbolic_trace(m)
    assert [n.target for n in gm.graph.nodes if n.op == "call_module"] == ["a", "b"]
    np.testing.assert_allclose(ember.jit.script(m)(new_x).detach().numpy(), expected,
                               rtol=1e-6)


def test_forked_matmul_branches_run_concurrently():
    # Each branch records when it starts and ends; if fork ran the branches one after the
    # other (as torch's eager fork does), the second would start only after the first ended.
    rng = np.random.default_rng(2)
    a = ember.from_numpy(rng.standard_normal((256, 256), dtype=np.float32))
    times = {}

    def branch(name, x):
        start = time.monotonic()
        for _ in range(40):
            x = (x @ a) * 0.05
        times[name] = (start, time.monotonic())
        return x

    assert ember.get_num_interop_threads() >= 2
    for attempt in range(3):  # a loaded machine may start one worker late; rarely twice
        fa, fb = ember.jit.fork(branch, "a", a), ember.jit.fork(branch, "b", a)
        ember.jit.wait(fa), ember.jit.wait(fb)
        (sa, ea), (sb, eb) = times["a"], times["b"]
        if sb < ea and sa < eb:
            break
    assert sb < ea and sa < eb, times
    assert {t.name.split("_")[0] for t in threading.enumerate()} >= {"ember-interop"}


def test_set_num_interop_threads_refused_after_forking():
    ember.jit.wait(ember.jit.fork(lambda: None))
    with pytest.raises(RuntimeError, match="cannot set number of interop threads after "
                                           "parallel work has started"):
        ember.set_num_interop_threads(1)
