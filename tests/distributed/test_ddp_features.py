"""DistributedDataParallel's features on 2 ranks (no_sync, bucket views, buckets, comm hooks,
overlap, unused parameters, static graph, join, errors), plus the single-process pieces it
stands on: ember.futures.Future, the engine's queue_callback and gradient order."""
import pytest

import ember
from ember.futures import Future, collect_all, wait_all
from ranks import run_ranks

_COMMON = """
import warnings
import ember, ember.distributed as dist, ember.nn as nn
from ember.nn.parallel import DistributedDataParallel as DDP
from ember.distributed.algorithms.ddp_comm_hooks import default_hooks
from ember.futures import Future
import ember.futures
dist.init_process_group("mpi")
rank, world = dist.get_rank(), dist.get_world_size()
F = nn.functional

def close(a, b, what, tol=1e-6):
    assert a.shape == b.shape, what
    assert ember.allclose(a, b, rtol=tol, atol=tol), (what, (a - b).abs().max().item())

def mlp(seed=0):
    ember.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(),
                         nn.Linear(16, 3)).double()

ember.manual_seed(1)
X = ember.randn(16, 5, dtype=ember.float64)
Y = ember.randn(16, 3, dtype=ember.float64)

def half(t, i=0):
    # micro-batch i (of 8 samples), this rank's 4 of them
    return t[8 * i + 4 * rank: 8 * i + 4 * rank + 4]

calls = []
_all_reduce = dist.all_reduce
def counting_all_reduce(tensor, *args, **kwargs):
    calls.append(("all_reduce", tensor.numel()))
    return _all_reduce(tensor, *args, **kwargs)
dist.all_reduce = counting_all_reduce
"""


def test_no_sync_views_buckets_hooks_overlap_state_dict_errors():
    run_ranks(_COMMON + """
# -- no_sync: two micro-steps, one synchronised, equal one step on both micro-batches
for as_view in (False, True):
    ref, ddp = mlp(), DDP(mlp(), gradient_as_bucket_view=as_view)
    F.mse_loss(ref(X[:8]), Y[:8]).backward()
    F.mse_loss(ref(X[8:]), Y[8:]).backward()
    del calls[:]
    with ddp.no_sync():
        F.mse_loss(ddp(half(X, 0)), half(Y, 0)).backward()
    assert calls == [], calls                        # no communication inside no_sync
    F.mse_loss(ddp(half(X, 1)), half(Y, 1)).backward()
    assert calls, "the synchronised backward all-reduces"
    for a, b in zip(ref.parameters(), ddp.module.parameters()):
        close(a.grad, b.grad, ("no_sync", as_view))

# -- gradient_as_bucket_view: .grad is a view of its bucket's flat buffer, kept across steps
ddp = DDP(mlp(), gradient_as_bucket_view=True, bucket_cap_mb=0.0005)
opt = ember.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
for step in range(3):
    opt.zero_grad()
    F.mse_loss(ddp(half(X)), half(Y)).backward()
    opt.step()
    red = ddp.reducer
    for i, p in enumerate(red.params):
        bucket, j = red.locators[i]
        assert p.grad._base is bucket.buffer and p.grad.is_set_to(bucket.views[j]), (step, i)

# -- several buckets: reverse parameter order first, then the order gradients arrived
ddp = DDP(mlp(), bucket_cap_mb=0.0005)
n = len(list(ddp.parameters()))
first = [b.indices for b in ddp.reducer.buckets]
assert len(first) > 1 and first[0][0] == n - 1, first
assert sorted(i for b in first for i in b) == list(range(n))
for step in range(2):
    F.mse_loss(ddp(half(X)), half(Y)).backward()
rebuilt = [b.indices for b in ddp.reducer.buckets]
assert ddp.reducer.has_rebuilt_buckets
assert sorted(i for b in rebuilt for i in b) == list(range(n))
assert all(len({ddp.reducer.params[i].dtype for i in b}) == 1 for b in rebuilt)
for b in ddp.reducer.buckets:
    assert b.buffer.is_contiguous() and b.buffer.dim() == 1

# -- overlap: the first bucket's all-reduce starts before backward reaches the first layer
ddp = DDP(mlp(), bucket_cap_mb=0.0005)
F.mse_loss(ddp(half(X)), half(Y)).backward()          # iteration 1 (buckets then rebuilt)
events = []
def logged_all_reduce(tensor, *args, **kwargs):
    events.append("all_reduce")
    return _all_reduce(tensor, *args, **kwargs)
dist.all_reduce = logged_all_reduce
first_layer_out = []
h = ddp.module[0].register_forward_hook(lambda m, i, o: first_layer_out.append(o))
out = ddp(half(X))
first_layer_out[-1].register_hook(lambda g: events.append("first layer grad"))
F.mse_loss(out, half(Y)).backward()
h.remove()
dist.all_reduce = counting_all_reduce
assert "first layer grad" in events and events.index("all_reduce") < events.index(
    "first layer grad"), events
n_buckets = len(ddp.reducer.buckets)
assert events.count("all_reduce") == n_buckets, (events, n_buckets)

# -- comm hooks: allreduce_hook is exact, fp16/bf16 compression close
ref = mlp()
F.mse_loss(ref(X[:8]), Y[:8]).backward()
for hook, tol in ((default_hooks.allreduce_hook, 1e-6), (default_hooks.fp16_compress_hook, 2e-3),
                  (default_hooks.bf16_compress_hook, 2e-2)):
    ddp = DDP(mlp(), bucket_cap_mb=0.0005)
    ddp.register_comm_hook(None, hook)
    for step in range(2):                               # before and after the rebuild
        ddp.zero_grad()
        F.mse_loss(ddp(half(X)), half(Y)).backward()
        for a, b in zip(ref.parameters(), ddp.module.parameters()):
            assert b.grad.dtype == ember.float64
            close(a.grad, b.grad, (hook.__name__, step), tol)
    try:
        ddp.register_comm_hook(None, hook)
        raise AssertionError("a second hook must be refused")
    except RuntimeError as e:
        assert "can only be called once" in str(e)

from ember.nn.parallel.distributed import GradBucket
def noop(state, bucket: GradBucket) -> ember.futures.Future[ember.Tensor]:
    state.append((bucket.index(), bucket.is_last(), len(bucket.parameters()),
                  [tuple(g.shape) for g in bucket.gradients()]))
    fut = Future()
    fut.set_result(bucket.buffer())
    return fut
seen = []
ddp = DDP(mlp(), bucket_cap_mb=0.0005)
ddp.register_comm_hook(seen, noop)
F.mse_loss(ddp(half(X)), half(Y)).backward()
assert [s[0] for s in seen] == list(range(len(ddp.reducer.buckets))) and seen[-1][1], seen
assert sum(s[2] for s in seen) == n
local = mlp()
F.mse_loss(local(half(X)), half(Y)).backward()
for a, b in zip(local.parameters(), ddp.module.parameters()):
    close(a.grad, b.grad, "a no-op hook leaves the local sum")
try:
    DDP(mlp()).register_comm_hook(None, 3)
    raise AssertionError("non-callable hook")
except TypeError as e:
    assert str(e) == "Communication hook must be callable."

# -- state_dict keys are torch's: the wrapped module's under "module."
bn = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
ddp = DDP(bn)
assert list(ddp.state_dict()) == [
    "module.0.weight", "module.0.bias", "module.1.weight", "module.1.bias",
    "module.1.running_mean", "module.1.running_var", "module.1.num_batches_tracked"]
assert ddp.module is bn
ddp.load_state_dict(ddp.state_dict())

# -- pickling (default group only, as torch): the copy gets its own reducer and still averages
import pickle
ref = mlp()
F.mse_loss(ref(X[:8]), Y[:8]).backward()
ddp = pickle.loads(pickle.dumps(DDP(mlp(), bucket_cap_mb=0.0005)))
for step in range(2):
    ddp.zero_grad()
    F.mse_loss(ddp(half(X)), half(Y)).backward()
    for a, b in zip(ref.parameters(), ddp.module.parameters()):
        close(a.grad, b.grad, ("unpickled", step))

# -- errors as torch's
def raises(exc, text, fn):
    try:
        fn()
    except exc as e:
        assert text in str(e), str(e)
    else:
        raise AssertionError(f"expected {exc.__name__}: {text}")
frozen = nn.Linear(2, 2)
frozen.requires_grad_(False)
raises(RuntimeError, "DistributedDataParallel is not needed when a module doesn't have any "
       "parameter that requires a gradient.", lambda: DDP(frozen))
raises(ValueError, "device_ids and output_device arguments only work with", lambda: DDP(
    nn.Linear(2, 2), device_ids=[0]))
raises(ValueError, "device_ids can only be None or contain a single element.",
       lambda: DDP(nn.Linear(2, 2), device_ids=[0, 1]))
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    DDP(nn.Linear(2, 2), broadcast_buffers=False)
assert any(issubclass(x.category, FutureWarning) and "broadcast_buffers" in str(x.message)
           for x in w)
# Different models on the two ranks: every rank raises (none is left hanging in a broadcast).
raises(RuntimeError, "appears not to match sizes of the same param",
       lambda: DDP(nn.Linear(2, 2 + rank)))
raises(RuntimeError, "DDP expects same model across all ranks",
       lambda: DDP(nn.Sequential(*[nn.Linear(2, 2) for _ in range(1 + rank)])))
dist.barrier()
""")


def test_unused_parameters_and_static_graph():
    run_ranks(_COMMON + """
class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        ember.manual_seed(0)
        self.a = nn.Linear(5, 3).double()
        self.b = nn.Linear(5, 3).double()
        self.use_b = lambda: True
    def forward(self, x):
        return self.a(x) + self.b(x) if self.use_b() else self.a(x)

def step_grads(model, x, y):
    model.zero_grad()
    F.mse_loss(model(x), y).backward()
    return [None if p.grad is None else p.grad.clone() for p in model.parameters()]

# -- unused on every rank: its .grad stays None, the others are averaged
ref, m = Branchy(), Branchy()
ref.use_b = m.use_b = lambda: False
ddp = DDP(m, find_unused_parameters=True)
with warnings.catch_warnings():
    warnings.simplefilter("error")                  # something is unused: no warning
    for step in range(3):
        expect = step_grads(ref, X[:8], Y[:8])
        got = step_grads(ddp, half(X), half(Y))
        assert got[2] is None and got[3] is None, "globally unused keeps .grad None"
        close(expect[0], got[0], "a.weight")
        close(expect[1], got[1], "a.bias")

# -- used on rank 0 only: averaged with rank 1's zeros, and set on both ranks
ref0, m = Branchy(), Branchy()
m.use_b = lambda: rank == 0
ddp = DDP(m, find_unused_parameters=True)
for step in range(2):
    g0 = step_grads(ref0, X[:4], Y[:4])              # what rank 0 computes
    ref1 = Branchy(); ref1.use_b = lambda: False
    g1 = step_grads(ref1, X[4:8], Y[4:8])            # what rank 1 computes
    got = step_grads(ddp, half(X), half(Y))
    close(got[0], (g0[0] + g1[0]) / 2, "a.weight")
    close(got[2], g0[2] / 2, "b.weight, used on one rank")

# -- an unused parameter without find_unused_parameters: torch's error at the next forward
m = Branchy()
m.use_b = lambda: False
ddp = DDP(m)
F.mse_loss(ddp(half(X)), half(Y)).backward()
try:
    ddp(half(X))
    raise AssertionError("expected the unfinished-reduction error")
except RuntimeError as e:
    msg = str(e)
    assert msg.startswith("Expected to have finished reduction in the prior iteration before "
                          "starting a new one."), msg
    assert "find_unused_parameters=True" in msg and "b.weight" in msg and "b.bias" in msg, msg
    assert f"for rank {rank}" in msg

# -- static_graph: equal to the whole batch, unused parameters found in the first iteration
for use_b in (True, False):
    ref, m = Branchy(), Branchy()
    ref.use_b = m.use_b = (lambda: use_b)
    ddp = DDP(m, static_graph=True, bucket_cap_mb=0.0001)
    opt_ref = ember.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    opt = ember.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    for step in range(4):
        expect = step_grads(ref, X[:8], Y[:8])
        got = step_grads(ddp, half(X), half(Y))
        for e_, g_ in zip(expect, got):
            assert (e_ is None) == (g_ is None), (use_b, step)
            if e_ is not None:
                close(e_, g_, ("static", use_b, step))
        opt_ref.step(); opt.step()
    assert ddp.reducer.num_bwd_calls == 4

# -- a layer run twice under reentrant checkpoints: its hooks fire twice per backward, which
# static_graph counts (and reduces after the second), and which is torch's error without it
from ember.utils.checkpoint import checkpoint
class Twice(nn.Module):
    def __init__(self):
        super().__init__()
        ember.manual_seed(0)
        self.a, self.b = nn.Linear(5, 5).double(), nn.Linear(5, 3).double()
    def forward(self, x):
        h = checkpoint(self.a, x, use_reentrant=True)
        return self.b(checkpoint(self.a, h, use_reentrant=True))
Xg = X.detach().requires_grad_()    # a reentrant checkpoint needs an input requiring grad
ref = Twice()
F.mse_loss(ref(Xg[:8]), Y[:8]).backward()
ddp = DDP(Twice(), static_graph=True)
for step in range(3):
    ddp.zero_grad()
    F.mse_loss(ddp(half(Xg)), half(Y)).backward()
    for a, b in zip(ref.parameters(), ddp.module.parameters()):
        close(a.grad, b.grad, ("checkpoint twice", step))
ddp = DDP(Twice())
try:
    F.mse_loss(ddp(half(Xg)), half(Y)).backward()
    raise AssertionError("expected the marked-twice error")
except RuntimeError as e:
    assert str(e).startswith("Expected to mark a variable ready only once."), str(e)
    assert "a.weight" in str(e) or "a.bias" in str(e), str(e)
""")


def test_join_uneven_inputs():
    run_ranks(_COMMON + """
def batches(r, count):
    return [(X[4 * (2 * k + r): 4 * (2 * k + r) + 4], Y[4 * (2 * k + r): 4 * (2 * k + r) + 4])
            for k in range(count)]
mine = batches(rank, 2 - rank)          # rank 0: 2 batches, rank 1: 1
for divide_by_initial in (True, False):
    for as_view in (False, True):
        # the definition: step 1 averages both ranks; step 2 only rank 0 has data, and rank 1
        # contributes zeros (divided by 2) or is left out (divided by 1)
        ref = mlp()
        opt_ref = ember.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
        for k, ranks in enumerate(((0, 1), (0,))):
            grads = []
            for r in ranks:
                ref.zero_grad()
                x, y = batches(r, 2)[k]
                F.mse_loss(ref(x), y).backward()
                grads.append([p.grad.clone() for p in ref.parameters()])
            div = 2 if divide_by_initial else len(ranks)
            for i, p in enumerate(ref.parameters()):
                p.grad = sum(g[i] for g in grads) / div
            opt_ref.step()
        ddp = DDP(mlp(), gradient_as_bucket_view=as_view, bucket_cap_mb=0.0005)
        opt = ember.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
        with ddp.join(divide_by_initial_world_size=divide_by_initial):
            for x, y in mine:
                opt.zero_grad()
                F.mse_loss(ddp(x), y).backward()
                opt.step()
        # rank 1's last step was skipped; the join's post-hook gave it the last joiner's model
        for a, b in zip(ref.parameters(), ddp.module.parameters()):
            close(a, b, ("join", divide_by_initial, as_view))

# throw_on_early_termination: every rank raises once one runs out
ddp = DDP(mlp())
try:
    with ddp.join(throw_on_early_termination=True):
        for x, y in mine:
            F.mse_loss(ddp(x), y).backward()
    raise AssertionError("expected an early-termination error")
except RuntimeError as e:
    expected = ("Rank 1 exhausted all inputs." if rank == 1 else
                "Detected at least one rank that exhausted inputs. Throwing across all ranks.")
    assert str(e) == expected, str(e)
""")


def test_a_failing_rank_ends_the_job_naming_it():
    # Rank 1 raises between iterations while rank 0 is inside backward waiting for rank 1's
    # all-reduce: the job must end, non-zero, saying which rank failed, not hang.
    import time
    start = time.monotonic()
    result = run_ranks(_COMMON + """
ddp = DDP(mlp())
for step in range(3):
    if rank == 1 and step == 1:
        raise ValueError("rank 1 ran out of luck")
    F.mse_loss(ddp(half(X)), half(Y)).backward()
""", check=False, timeout=120)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "rank 1 ran out of luck" in output and "rank1" in output.replace(" ", ""), output
    assert time.monotonic() - start < 100


# ---- single process --------------------------------------------------------------------------

def test_ddp_needs_a_process_group():
    from ember.nn.parallel import DistributedDataParallel
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DistributedDataParallel(ember.nn.Linear(2, 2))


def test_future_like_torch():
    fut = Future()
    assert not fut.done()
    with pytest.raises(RuntimeError):
        fut.value()
    chained = fut.then(lambda f: f.value() + 1)
    seen = []
    fut.add_done_callback(lambda f: seen.append(f.value()))
    fut.set_result(3)
    assert fut.done() and fut.wait() == 3 and chained.wait() == 4 and seen == [3]
    with pytest.raises(RuntimeError, match="Future can only be marked completed once"):
        fut.set_result(4)
    assert fut.then(lambda f: f.value() * 2).wait() == 6   # inline when already complete

    bad = Future()
    bad.set_exception(ValueError("x"))
    with pytest.raises(ValueError, match="x"):
        bad.wait()
    failed = bad.then(lambda f: f.value())
    with pytest.raises(RuntimeError, match="ValueError: x"):
        failed.wait()
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        f = Future()
        g = f.then(lambda f: 1 / 0)
        f.set_result(1)
        g.wait()
    with pytest.raises(AssertionError, match="not an Exception"):
        Future().set_exception(3)

    a, b = Future(), Future()
    both = collect_all([a, b])
    a.set_result(1)
    assert not both.done()
    b.set_result(2)
    assert [f.value() for f in both.wait()] == [1, 2]
    c, d = Future(), Future()
    c.set_result("c"), d.set_result("d")
    assert wait_all([c, d]) == ["c", "d"]
    assert Future[ember.Tensor] == Future[ember.Tensor]


def test_future_driver_and_threads():
    import threading
    driven = Future._driven_by(lambda: driven.set_result(7))
    assert driven.then(lambda f: f.value() + 1).wait() == 8   # waiting the child drives it
    fut = Future()
    threading.Timer(0.05, lambda: fut.set_result("late")).start()
    assert fut.wait() == "late"


def test_queue_callback_runs_once_at_the_end_of_the_outermost_backward():
    from ember.autograd.engine import queue_callback
    with pytest.raises(RuntimeError, match="Final callbacks can only be installed during "
                                           "backward pass."):
        queue_callback(lambda: None)
    log = []
    w = ember.ones(3, requires_grad=True)
    inner = ember.ones(2, requires_grad=True)

    def hook(p):
        log.append("hook")
        queue_callback(lambda: (log.append("cb"), queue_callback(lambda: log.append("cb2"))))
        with ember.enable_grad():      # a backward inside a hook belongs to the outer pass
            (inner * 2).sum().backward()
        log.append("inner done")

    w.register_post_accumulate_grad_hook(hook)
    (w * w).sum().backward()
    assert log == ["hook", "inner done", "cb", "cb2"], log
    log.clear()
    (w * 3).sum().backward()
    assert log == ["hook", "inner done", "cb", "cb2"], log


def test_accumulate_grad_runs_as_soon_as_ready_like_torch():
    import torch

    def order(lib):
        lib.manual_seed(0)
        l1, l2 = lib.nn.Linear(3, 3), lib.nn.Linear(3, 3)
        log = []
        l2.weight.register_post_accumulate_grad_hook(lambda p: log.append("W2 acc"))
        l1.weight.register_post_accumulate_grad_hook(lambda p: log.append("W1 acc"))
        h = l1(lib.ones(2, 3))
        h.register_hook(lambda g: log.append("h grad"))
        a = lib.tanh(h)
        a.register_hook(lambda g: log.append("a grad"))
        l2(a).sum().backward()
        return log

    assert order(ember) == order(torch) == ["W2 acc", "a grad", "h grad", "W1 acc"]


def test_bucket_assignment_by_size():
    from ember.nn.parallel.distributed import _compute_bucket_assignment_by_size
    params = [ember.zeros(10), ember.zeros(10), ember.zeros(10, dtype=ember.float64),
              ember.zeros(30), ember.zeros(5)]
    # float32 params 0,1,3,4 (40, 40, 120, 20 bytes), float64 param 2 (80 bytes)
    assert _compute_bucket_assignment_by_size(params, [4, 3, 2, 1, 0], [100]) == \
        [[4, 3], [2], [1, 0]]
    assert _compute_bucket_assignment_by_size(params, [4, 3, 2, 1, 0], [10, 1000]) == \
        [[4], [3, 1, 0], [2]]


def test_comm_hook_types_and_join_api():
    from ember.distributed.algorithms import Join, Joinable, JoinHook
    from ember.distributed.algorithms.ddp_comm_hooks import DDPCommHookType, default_hooks
    assert DDPCommHookType.FP16_COMPRESS.value.keywords["comm_hook"] is \
        default_hooks.fp16_compress_hook

    class NoHooks(Joinable):
        pass

    with pytest.raises(TypeError):
        NoHooks()
    with pytest.raises(ValueError, match="requires at least one joinable"):
        Join([])
    JoinHook().main_hook()
    JoinHook().post_hook(True)
