"""``fully_shard`` (FSDP2 semantics) on 2 real ranks: an MLP sharded layer by layer, then at the
root, trains for 5 SGD-momentum and Adam steps exactly as one process on the whole batch, as
the definition of DDP (gradients all-reduced and averaged by hand) and as DDP itself; every
rank holds only its dim-0 chunks (padded at the end); at most one layer is gathered at a time,
and resharding returns the gathered parameters' memory to the system."""
import pytest

import ember
from ember import nn
from ember.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, fully_shard

from ranks import run_ranks

_PRELUDE = """
import warnings
import ember
import ember.distributed as dist
from ember import nn
from ember.distributed.fsdp import FSDPModule, fully_shard
from ember.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("mpi")
rank, ws = dist.get_rank(), dist.get_world_size()
assert ws == 2

def make_mlp():
    # 9, 5 and 3 rows do not split evenly over 2 ranks: the last chunks are padded. The
    # LayerNorm gets no fully_shard of its own: the root's group holds its parameters.
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 9), nn.Tanh(), nn.Linear(9, 5), nn.LayerNorm(5),
                         nn.Tanh(), nn.Linear(5, 3)).double()

ROOT_NUMEL = 10  # the LayerNorm's weight and bias

def make_fsdp(reshard_after_forward=None):
    model = make_mlp()
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer, reshard_after_forward=reshard_after_forward)
    return fully_shard(model, reshard_after_forward=reshard_after_forward)

ember.manual_seed(1)
X = ember.randn(8, 6, dtype=ember.float64)
Y = ember.randn(8, 3, dtype=ember.float64)
MINE = slice(rank * 4, rank * 4 + 4)

def loss_of(model, x, y):
    return ((model(x) - y) ** 2).mean()

def chunk(t, r=None):
    # torch.chunk along dim 0: ceil(rows / ws) rows per rank, fewer (or none) at the end.
    r = rank if r is None else r
    size = -(-t.shape[0] // ws)
    return t[r * size:(r + 1) * size]

def full_params(model):
    fsdp_modules = [m for m in model.modules() if isinstance(m, FSDPModule)]
    for m in fsdp_modules:
        m.unshard()
    values = [p.detach().clone() for p in model.parameters()]
    for m in fsdp_modules:
        m.reshard()
    return values

def assert_close(a, b, what):
    assert a.shape == b.shape, (what, a.shape, b.shape)
    assert ember.allclose(a, b, rtol=0, atol=1e-6), (what, (a - b).abs().max())

def gathered_numel(model):
    # Elements of full parameters currently gathered (held in memory) on this rank.
    total = 0
    for m in model.modules():
        if isinstance(m, FSDPModule):
            group = m._get_fsdp_state()._param_group
            if group is not None and group.is_unsharded:
                total += sum(p.rows * p.row_numel for p in group.params)
    return total
"""


def test_fsdp_mlp_trains_as_ddp_definition_with_sharded_memory():
    run_ranks(_PRELUDE + """
CASES = [(ember.optim.SGD, {"lr": 0.1, "momentum": 0.9}), (ember.optim.Adam, {"lr": 0.01})]
for opt_class, kwargs in CASES:
    for reshard_after_forward in (None, False):
        what = (opt_class.__name__, reshard_after_forward)
        model, whole, by_hand = make_fsdp(reshard_after_forward), make_mlp(), make_mlp()
        opt = opt_class(model.parameters(), **kwargs)
        whole_opt = opt_class(whole.parameters(), **kwargs)
        hand_opt = opt_class(by_hand.parameters(), **kwargs)
        ddp = DDP(make_mlp())
        ddp_opt = opt_class(ddp.parameters(), **kwargs)

        # Each rank holds its chunk of every parameter, and nothing more.
        total = sum(p.numel() for p in whole.parameters())
        largest_layer = max(sum(p.numel() for p in layer.parameters()) for layer in whole)
        for p, full in zip(model.parameters(), whole.parameters()):
            assert isinstance(p, nn.Parameter) and p.is_leaf
            assert_close(p.detach(), chunk(full.detach()), what + ("initial shard",))
        local = sum(p.numel() for p in model.parameters())
        assert local <= total / ws + largest_layer, (local, total)
        assert local == sum(chunk(p).numel() for p in whole.parameters())

        peak = [0]
        def record(*args):
            peak[0] = max(peak[0], gathered_numel(model))
        for layer in model:
            if isinstance(layer, FSDPModule):
                # Registered after FSDP's own hooks, so they see the gathered layer.
                layer.register_forward_pre_hook(record)
                layer.register_full_backward_pre_hook(record)

        for step in range(5):
            opt.zero_grad()
            loss = loss_of(model, X[MINE], Y[MINE])
            loss.backward()
            opt.step()
            hand_opt.zero_grad()
            hand_loss = loss_of(by_hand, X[MINE], Y[MINE])
            hand_loss.backward()
            for p in by_hand.parameters():
                dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)
                p.grad /= ws
            hand_opt.step()
            whole_opt.zero_grad()
            loss_of(whole, X, Y).backward()
            whole_opt.step()
            ddp_opt.zero_grad()
            loss_of(ddp, X[MINE], Y[MINE]).backward()
            ddp_opt.step()
            assert_close(loss.detach(), hand_loss.detach(), what + ("loss", step))
            for i, (p, q, r, d) in enumerate(zip(full_params(model), whole.parameters(),
                                                  by_hand.parameters(), ddp.parameters())):
                assert_close(p, q.detach(), what + ("whole batch", step, i))
                assert_close(p, r.detach(), what + ("averaged grads", step, i))
                assert_close(p, d.detach(), what + ("DDP", step, i))
            # Gradients and optimizer state are shards too.
            for p, q in zip(model.parameters(), by_hand.parameters()):
                assert_close(p.grad, chunk(q.grad), what + ("shard grad", step))
                for name, s in opt.state[p].items():
                    if s.dim() > 0:
                        assert s.shape == p.shape, (what, name)
        # Out of forward and backward nothing stays gathered; during them, with the default
        # resharding, never more than one layer.
        assert gathered_numel(model) == 0, what
        if reshard_after_forward is None:
            # The root keeps its own group gathered through forward and backward (PyTorch's
            # default for the root); every other layer is gathered only while it runs.
            assert 0 < peak[0] <= largest_layer + ROOT_NUMEL, (peak[0], largest_layer)
        else:
            assert peak[0] == total, (peak[0], total)

# Two backward passes without zero_grad accumulate into the shards' gradients; a no_grad
# forward records nothing and computes what the full model computes.
model, by_hand = make_fsdp(), make_mlp()
for half in (slice(0, 2), slice(2, 4)):
    x, y = X[MINE][half], Y[MINE][half]
    loss_of(model, x, y).backward()
    loss_of(by_hand, x, y).backward()
for p, q in zip(model.parameters(), by_hand.parameters()):
    dist.all_reduce(q.grad, op=dist.ReduceOp.SUM)
    assert_close(p.grad, chunk(q.grad) / ws, "accumulated grad")
with ember.no_grad():
    out = model(X)
# As in PyTorch, the root (reshard_after_forward left to FSDP: False) stays gathered after a
# forward until a backward or reshard() releases it; the other layers were released.
assert out.grad_fn is None and gathered_numel(model) == ROOT_NUMEL
model.reshard()
assert gathered_numel(model) == 0
model.set_reshard_after_forward(True)
assert all(m._get_fsdp_state().reshard_after_forward for m in model.modules()
           if isinstance(m, FSDPModule))
with ember.no_grad():
    model(X)
assert gathered_numel(model) == 0
assert_close(out, by_hand(X).detach(), "no_grad forward")
assert type(model).__name__ == "FSDPSequential" and type(model[0]).__name__ == "FSDPLinear"
assert isinstance(model[0], nn.Linear)
assert type(model[0:2]) is nn.Sequential  # a slice is a plain container, as in PyTorch
try:
    fully_shard(model[0])
except RuntimeError as e:
    assert "already applied" in str(e)
else:
    raise AssertionError("fully_shard twice on one module must raise")

# A parameter in ignored_params stays whole on every rank and its gradient is not reduced.
ember.manual_seed(2)
layer = nn.Linear(4, 3).double()
bias = layer.bias
fully_shard(layer, ignored_params={bias})
assert layer.bias is bias and layer.weight.shape == ((2, 4) if rank == 0 else (1, 4))
layer(X[MINE][:, :4]).sum().backward()
assert_close(bias.grad, ember.full((3,), 4.0, dtype=ember.float64), "ignored bias grad")

# Tied weights in one group stay tied: both users see the gathered tensor, and the shard's
# gradient is the sum of both uses (as one process computes it).
def make_tied():
    ember.manual_seed(4)
    model = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 4)).double()
    model[2].weight = model[0].weight
    return model

tied, tied_ref = fully_shard(make_tied()), make_tied()
assert tied[0].weight is tied[2].weight and len(list(tied.parameters())) == 3
loss_of(tied, X[MINE][:, :4], Y[MINE][:, :3].repeat(1, 2)[:, :4]).backward()
loss_of(tied_ref, X[MINE][:, :4], Y[MINE][:, :3].repeat(1, 2)[:, :4]).backward()
for p, q in zip(tied.parameters(), tied_ref.parameters()):
    dist.all_reduce(q.grad, op=dist.ReduceOp.AVG)
    assert_close(p.grad, chunk(q.grad), "tied grad")

# A parameter shared with a module sharded separately cannot be trained consistently: refused.
shared = make_tied()
fully_shard(shared[0])
try:
    fully_shard(shared)
except ValueError as e:
    assert "already sharded" in str(e), e
else:
    raise AssertionError("a parameter shared across groups must be refused")
""", timeout=120)


def test_fsdp_reshard_releases_memory_and_misuse_raises():
    run_ranks(_PRELUDE + """
import os

def resident_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

# 2 MiB of full weight (1 MiB shard per rank): gathering brings it in, resharding returns it.
ember.manual_seed(3)
big = nn.Linear(256, 1024, bias=False).double()
expected = big.weight.detach().clone()
fully_shard(big)
assert big.weight.shape == (512, 256)
big.unshard()
assert_close(big.weight, expected, "unsharded weight")
gathered = resident_bytes()
big.reshard()
released = gathered - resident_bytes()
assert released >= 1.5 * 2 ** 20, released
assert big.weight.shape == (512, 256)
big.unshard()
assert_close(big.weight, expected, "gathered again")
big.reshard()

# The gathered parameters are used in backward only after the module's backward pre-hook has
# gathered them again; a module whose output hides its tensors from that hook (a dict) gets a
# clear error with resharding after forward, and trains with it off.
class DictOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3).double()

    def forward(self, x):
        return {"y": self.lin(x)}

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    hidden = fully_shard(DictOut(), reshard_after_forward=True)
    out = hidden(X[MINE][:, :4])["y"].sum()
    try:
        out.backward()
    except RuntimeError as e:
        assert "resharded" in str(e) and "DictOut" in str(e), e
    else:
        raise AssertionError("backward through released parameters must raise")
    kept = fully_shard(DictOut(), reshard_after_forward=False)
    kept(X[MINE][:, :4])["y"].sum().backward()
    assert kept.lin.weight.grad is not None and kept.lin.weight.grad.shape == kept.lin.weight.shape
""", timeout=120)


def test_fully_shard_argument_errors_need_no_process_group():
    layer = nn.Linear(3, 2)
    with pytest.raises(NotImplementedError, match="reshard_after_forward"):
        fully_shard(layer, reshard_after_forward=2)
    with pytest.raises(NotImplementedError, match="shard_placement_fn"):
        fully_shard(layer, shard_placement_fn=lambda p: None)
    with pytest.raises(NotImplementedError, match="mixed"):
        fully_shard(layer, mp_policy=MixedPrecisionPolicy(param_dtype=ember.float16))
    with pytest.raises(NotImplementedError, match="CPUOffloadPolicy"):
        fully_shard(layer, offload_policy=CPUOffloadPolicy())
    with pytest.raises(NotImplementedError, match="list of modules"):
        fully_shard([layer])
    with pytest.raises(TypeError, match="DeviceMesh"):
        fully_shard(layer, mesh=object())

    class TwoDMesh:
        ndim = 2

        def get_group(self):
            raise AssertionError("not reached")

    with pytest.raises(NotImplementedError, match="2-D mesh"):
        fully_shard(layer, mesh=TwoDMesh())
    assert type(layer) is nn.Linear
