"""DistributedDataParallel on 2 ranks, half the batch each, equals training on the whole batch
in one process (float64, so that only the order of additions differs)."""
from ranks import run_ranks

_COMMON = """
import ember, ember.distributed as dist, ember.nn as nn
from ember.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("mpi")
rank, world = dist.get_rank(), dist.get_world_size()
assert world == 2

def close(a, b, what):
    assert a.shape == b.shape, what
    assert ember.allclose(a, b, rtol=1e-6, atol=1e-6), (what, (a - b).abs().max().item())

def perturb(model):
    # Rank 1 starts from other weights: DDP's construction must replace them by rank 0's.
    if rank == 1:
        with ember.no_grad():
            for p in model.parameters():
                p.add_(1.0)
"""


def test_mlp_sgd_momentum_and_adam_equal_whole_batch():
    run_ranks(_COMMON + """
def mlp():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 16), nn.ReLU(),
                         nn.Linear(16, 3)).double()

ember.manual_seed(1)
X = ember.randn(8, 5, dtype=ember.float64)
Y = ember.randn(8, 3, dtype=ember.float64)
xs, ys = X[rank * 4:(rank + 1) * 4], Y[rank * 4:(rank + 1) * 4]
optimizers = {
    "sgd": lambda ps: ember.optim.SGD(ps, lr=0.05, momentum=0.9),
    "adam": lambda ps: ember.optim.Adam(ps, lr=0.01),
}
for name, make_opt in optimizers.items():
    for kwargs in ({}, {"bucket_cap_mb": 0.0005}, {"gradient_as_bucket_view": True}):
        ref = mlp()
        model = mlp()
        perturb(model)
        ddp = DDP(model, **kwargs)
        for a, b in zip(ref.parameters(), ddp.module.parameters()):
            close(a, b, "init_sync")
        opt_ref, opt = make_opt(ref.parameters()), make_opt(ddp.parameters())
        for step in range(5):
            opt_ref.zero_grad()
            nn.functional.mse_loss(ref(X), Y).backward()
            opt_ref.step()
            opt.zero_grad()
            nn.functional.mse_loss(ddp(xs), ys).backward()
            for a, b in zip(ref.parameters(), ddp.module.parameters()):
                close(a.grad, b.grad, (name, kwargs, step, "grad"))
            opt.step()
            for a, b in zip(ref.parameters(), ddp.module.parameters()):
                close(a, b, (name, kwargs, step, "param"))
        if "bucket_cap_mb" in kwargs:
            assert len(ddp.reducer.buckets) > 1, len(ddp.reducer.buckets)
        assert ddp.reducer.has_rebuilt_buckets
""")


def test_batchnorm_buffers_broadcast_from_rank0():
    # With BatchNorm each replica normalises by its own half-batch statistics, so the
    # definition is two replicas sharing weights, rank 0's buffers broadcast before every
    # forward, and the two gradients averaged.
    run_ranks(_COMMON + """
import copy

def net():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.Tanh(),
                         nn.Linear(6, 2)).double()

ember.manual_seed(2)
X = ember.randn(12, 4, dtype=ember.float64)
Y = ember.randn(12, 2, dtype=ember.float64)
halves = [(X[:6], Y[:6]), (X[6:], Y[6:])]
for opt_name in ("sgd", "adam"):
    make_opt = ((lambda ps: ember.optim.SGD(ps, lr=0.05, momentum=0.9)) if opt_name == "sgd"
                else (lambda ps: ember.optim.Adam(ps, lr=0.01)))
    ref0 = net()
    model = net()
    if rank == 1:
        with ember.no_grad():
            model[1].running_mean.add_(3.0)   # a buffer rank 0 must overwrite
    perturb(model)
    ddp = DDP(model)
    close(ddp.module[1].running_mean, ref0[1].running_mean, "buffer init_sync")
    opt_ref, opt = make_opt(ref0.parameters()), make_opt(ddp.parameters())
    for step in range(5):
        replica1 = copy.deepcopy(ref0)        # rank 1's replica: rank 0's buffers and weights
        grads = []
        for replica, (x, y) in zip((ref0, replica1), halves):
            replica.zero_grad()
            nn.functional.mse_loss(replica(x), y).backward()
            grads.append([p.grad.clone() for p in replica.parameters()])
        for p, g0, g1 in zip(ref0.parameters(), *grads):
            p.grad = (g0 + g1) / 2
        opt_ref.step()
        opt.zero_grad()
        x, y = halves[rank]
        nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
        for a, b in zip(ref0.parameters(), ddp.module.parameters()):
            close(a, b, (opt_name, step, "param"))
        mine = ref0 if rank == 0 else replica1
        for a, b in zip(mine.buffers(), ddp.module.buffers()):
            close(a.double(), b.double(), (opt_name, step, "buffer"))
""")
