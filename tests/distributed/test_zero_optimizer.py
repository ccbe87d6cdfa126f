"""``ZeroRedundancyOptimizer`` on 2 real ranks: 5 steps of SGD with momentum and of Adam equal
a plain optimizer fed the all-reduced (averaged) gradients (DDP's definition), DDP itself, ZeRO
over a DDP model (the usual pairing), and one process on the whole batch; each rank holds the
state of its own parameters only, partitioned as PyTorch partitions them; checkpoints
consolidate to PyTorch's layout and load back."""
import pytest

import ember
from ember.distributed.optim import ZeroRedundancyOptimizer

from ranks import run_ranks

_PRELUDE = """
import ember
import ember.distributed as dist
from ember import nn
from ember.distributed.optim import ZeroRedundancyOptimizer
from ember.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("mpi")
rank, ws = dist.get_rank(), dist.get_world_size()
assert ws == 2

def make_model():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 4), nn.Tanh(),
                         nn.Linear(4, 3)).double()

ember.manual_seed(1)
X = ember.randn(8, 5, dtype=ember.float64)
Y = ember.randn(8, 3, dtype=ember.float64)
MINE = slice(rank * 4, rank * 4 + 4)

def loss_of(model, x, y):
    return ((model(x) - y) ** 2).mean()

def average_grads(model):
    # DDP's definition: every gradient summed over ranks, divided by the world size.
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)
            p.grad /= ws

def local_step(model, opt):
    opt.zero_grad()
    loss_of(model, X[MINE], Y[MINE]).backward()
    average_grads(model)
    opt.step()

def ddp_step(model, opt):
    opt.zero_grad()
    loss_of(model, X[MINE], Y[MINE]).backward()  # DDP averages the gradients itself
    opt.step()

def full_batch_step(model, opt):
    opt.zero_grad()
    loss_of(model, X, Y).backward()
    opt.step()

def assert_params_close(a, b, what):
    for i, (p, q) in enumerate(zip(a.parameters(), b.parameters())):
        assert ember.allclose(p, q, rtol=0, atol=1e-6), (what, i, (p - q).abs().max())

def state_numel(opt):
    return sum(t.numel() for s in opt.state.values() if s for t in s.values()
               if isinstance(t, ember.Tensor) and t.dim() > 0)

def gather_ints(value):
    out = ember.zeros(ws, dtype=ember.int64)
    dist.all_gather_into_tensor(out, ember.tensor([value], dtype=ember.int64))
    return out.tolist()

def assert_same_state_dict(got, want):
    assert sorted(got["state"]) == sorted(want["state"]), (got["state"].keys(),
                                                           want["state"].keys())
    for index, state in want["state"].items():
        assert sorted(got["state"][index]) == sorted(state)
        for name, value in state.items():
            assert ember.equal(got["state"][index][name], value), (index, name)
    assert len(got["param_groups"]) == len(want["param_groups"])
    for g, w in zip(got["param_groups"], want["param_groups"]):
        assert g == w, (g, w)
"""


def _torch_partition(shapes, world_size):
    """PyTorch's own partitioning code (``ZeroRedundancyOptimizer._partition_parameters``), run
    on stand-in tensors of the given shapes: per rank, the indices of the parameters it owns."""
    import types

    import torch
    from torch.distributed.optim import ZeroRedundancyOptimizer as TorchZero

    params = [torch.empty(shape) for shape in shapes]
    fake = types.SimpleNamespace(param_groups=[{"params": params}], world_size=world_size,
                                 _partition_parameters_cache=[])
    fake._get_min_index = lambda v, d=None: TorchZero._get_min_index(fake, v, d)
    fake._partition_param_group = lambda g, p: TorchZero._partition_param_group(fake, g, p)
    index = {id(t): i for i, t in enumerate(params)}
    return [[index[id(t)] for g in per_rank for t in g["params"]]
            for per_rank in TorchZero._partition_parameters(fake)]


def test_zero_steps_equal_plain_optimizer_and_shard_state():
    # The shapes of make_model()'s parameters, in order.
    shapes = [(7, 5), (7,), (4, 7), (4,), (3, 4), (3,)]
    expected_partition = _torch_partition(shapes, 2)
    run_ranks(_PRELUDE + f"""
EXPECTED_PARTITION = {expected_partition!r}
assert [tuple(p.shape) for p in make_model().parameters()] == {shapes!r}
""" + """
CASES = [(ember.optim.SGD, {"lr": 0.1, "momentum": 0.9}, 1),
         (ember.optim.Adam, {"lr": 0.01}, 2)]
for opt_class, kwargs, states_per_element in CASES:
    for bucket_view in (False, True):
        what = (opt_class.__name__, bucket_view)
        model, by_hand, whole = make_model(), make_model(), make_model()
        zero = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=opt_class,
                                       parameters_as_bucket_view=bucket_view, **kwargs)
        hand_opt = opt_class(by_hand.parameters(), **kwargs)
        whole_opt = opt_class(whole.parameters(), **kwargs)
        ddp, ddp_zero = DDP(make_model()), DDP(make_model())
        ddp_opt = opt_class(ddp.parameters(), **kwargs)
        zero_of_ddp = ZeroRedundancyOptimizer(ddp_zero.parameters(), optimizer_class=opt_class,
                                              parameters_as_bucket_view=bucket_view, **kwargs)
        for step in range(5):
            local_step(model, zero)
            local_step(by_hand, hand_opt)
            full_batch_step(whole, whole_opt)
            ddp_step(ddp, ddp_opt)
            ddp_step(ddp_zero, zero_of_ddp)
            assert_params_close(model, by_hand, what + ("averaged grads", step))
            assert_params_close(model, whole, what + ("whole batch", step))
            assert_params_close(model, ddp, what + ("DDP", step))
            assert_params_close(ddp_zero, ddp, what + ("ZeRO over DDP", step))

        # The partition is PyTorch's, parameter for parameter.
        index = {id(p): i for i, p in enumerate(model.parameters())}
        ours = [[index[id(p)] for g in per_rank for p in g["params"]]
                for per_rank in zero._partition_parameters()]
        assert ours == EXPECTED_PARTITION, (ours, EXPECTED_PARTITION)

        # Each rank holds state for exactly the elements it owns: half of the plain
        # optimizer's, to within the greedy rule's one-parameter imbalance.
        owned = sum(p.numel() for g in zero.optim.param_groups for p in g["params"])
        assert state_numel(zero.optim) == states_per_element * owned, what
        counts = gather_ints(state_numel(zero.optim))
        assert sum(counts) == state_numel(hand_opt), (counts, state_numel(hand_opt))
        total = sum(p.numel() for p in model.parameters())
        largest = max(p.numel() for p in model.parameters())
        assert max(counts) <= states_per_element * (total / ws + largest), counts
        assert min(counts) > 0, counts
        assert len(zero.state) == 0  # the wrapper's own state stays empty, as in PyTorch
        if bucket_view:
            bucket = zero._buckets[0][rank]
            assert bucket.numel() == owned
""", timeout=120)


def test_zero_state_dict_consolidate_load_and_param_groups():
    run_ranks(_PRELUDE + """
model, by_hand = make_model(), make_model()
zero = ZeroRedundancyOptimizer(model.parameters(), ember.optim.Adam, lr=0.01)
hand_opt = ember.optim.Adam(by_hand.parameters(), lr=0.01)
for _ in range(3):
    local_step(model, zero)
    local_step(by_hand, hand_opt)

# Consolidated on rank 0, the state dict is the plain optimizer's, key for key.
zero.consolidate_state_dict(to=0)
if rank == 0:
    assert_same_state_dict(zero.state_dict(), hand_opt.state_dict())
else:
    try:
        zero.state_dict()
    except RuntimeError as e:
        assert "consolidate_state_dict(to=1)" in str(e), e
    else:
        raise AssertionError("state_dict() on a rank without consolidated state must raise")

# Round trip: a fresh ZeRO on fresh parameters loads the plain optimizer's state dict (the
# same on every rank) and continues exactly as the plain optimizer does.
saved = hand_opt.state_dict()
n_saved = len(saved["state"])
model2 = make_model()
with ember.no_grad():
    for p, q in zip(model2.parameters(), by_hand.parameters()):
        p.copy_(q)
zero2 = ZeroRedundancyOptimizer(model2.parameters(), ember.optim.Adam, lr=0.5)
zero2.load_state_dict(saved)
assert len(saved["state"]) == n_saved and all(v is not None for v in saved["state"].values())
assert zero2.param_groups[0]["lr"] == 0.01 and zero2.optim.param_groups[0]["lr"] == 0.01
owned = {id(p) for g in zero2.optim.param_groups for p in g["params"]}
assert {id(p) for p in zero2.optim.state} == owned
for _ in range(2):
    local_step(model2, zero2)
    local_step(by_hand, hand_opt)
    assert_params_close(model2, by_hand, "after load_state_dict")
zero2.consolidate_state_dict(to=1)
if rank == 1:
    assert_same_state_dict(zero2.state_dict(), hand_opt.state_dict())

# A hyperparameter written into the exposed groups (as a scheduler does) reaches the local
# optimizer; add_param_group repartitions on every rank and keeps earlier owners.
model3, by_hand3 = make_model(), make_model()
first = lambda m: [p for layer in list(m)[:3] for p in layer.parameters()]
last = lambda m: list(m[4].parameters())
zero3 = ZeroRedundancyOptimizer(first(model3), ember.optim.SGD, lr=0.1, momentum=0.9)
hand3 = ember.optim.SGD(first(by_hand3), lr=0.1, momentum=0.9)
local_step(model3, zero3)
local_step(by_hand3, hand3)
owners = dict(zero3._param_to_rank)
zero3.param_groups[0]["lr"] = 0.05
hand3.param_groups[0]["lr"] = 0.05
zero3.add_param_group({"params": last(model3), "lr": 0.2})
hand3.add_param_group({"params": last(by_hand3), "lr": 0.2})
assert len(zero3.param_groups) == 2 and len(zero3.optim.param_groups) == 2
assert all(zero3._param_to_rank[p] == r for p, r in owners.items())
for step in range(3):
    local_step(model3, zero3)
    local_step(by_hand3, hand3)
    assert_params_close(model3, by_hand3, ("after add_param_group", step))
assert zero3.optim.param_groups[0]["lr"] == 0.05 and zero3.param_groups[1]["lr"] == 0.2

# Freezing a parameter rebuilds the buckets without it; training goes on as a plain optimizer's.
model4, by_hand4 = make_model(), make_model()
zero4 = ZeroRedundancyOptimizer(model4.parameters(), ember.optim.SGD,
                                parameters_as_bucket_view=True, lr=0.1, momentum=0.9)
hand4 = ember.optim.SGD(by_hand4.parameters(), lr=0.1, momentum=0.9)
local_step(model4, zero4)
local_step(by_hand4, hand4)
sizes = [b.numel() for b in zero4._buckets[0]]
model4[2].weight.requires_grad_(False)
by_hand4[2].weight.requires_grad_(False)
for step in range(2):
    local_step(model4, zero4)
    local_step(by_hand4, hand4)
    assert_params_close(model4, by_hand4, ("after freezing", step))
owner = zero4._param_to_rank[model4[2].weight]
assert zero4._buckets[0][owner].numel() == sizes[owner] - model4[2].weight.numel()
""", timeout=120)


def test_zero_argument_errors_need_no_process_group():
    w = ember.zeros(3, requires_grad=True)
    with pytest.raises(NotImplementedError, match="overlap_with_ddp"):
        ZeroRedundancyOptimizer([w], ember.optim.SGD, overlap_with_ddp=True, lr=0.1)
    with pytest.raises(TypeError, match="should be an iterable of Tensors"):
        ZeroRedundancyOptimizer(w, ember.optim.SGD, lr=0.1)
    with pytest.raises(ValueError, match="empty parameter list"):
        ZeroRedundancyOptimizer([], ember.optim.SGD, lr=0.1)
    with pytest.raises(TypeError, match="Tensors or dicts"):
        ZeroRedundancyOptimizer([w, {"params": [w]}], ember.optim.SGD, lr=0.1)
    with pytest.raises(ValueError, match="same dense type"):
        ZeroRedundancyOptimizer([w, ember.zeros(2, dtype=ember.float64, requires_grad=True)],
                                ember.optim.SGD, lr=0.1)
    with pytest.raises(ValueError, match="'params' key"):
        ZeroRedundancyOptimizer([{"lr": 0.1}], ember.optim.SGD, lr=0.1)
