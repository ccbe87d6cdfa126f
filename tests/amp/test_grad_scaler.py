"""GradScaler, the deprecated ``cuda.amp``/``cpu.amp`` names and ``custom_fwd``/``custom_bwd``,
run step by step beside PyTorch's (``torch.amp.GradScaler("cpu")`` works on torch's CPU build)."""
import math
import pickle
import warnings

import numpy as np
import pytest
import torch

import ember
from conftest import DEVICES

INF, NAN = math.inf, math.nan


def host(t):
    """A copy of an ember or torch tensor's values (``.numpy()`` alone would share the memory
    that later steps update in place)."""
    return t.detach().cpu().numpy().copy()


# --------------------------------------------------------------------------------------------
# A scripted run: several parameters, two optimizers, finite / inf / nan gradients
# --------------------------------------------------------------------------------------------

SHAPES = [(3,), (2, 3), (4,)]
# Per step: None (all finite), or (parameter index, bad value). Parameter 2 belongs to the
# second optimizer, so a bad value there skips only that optimizer's step but backs off the scale.
SCRIPT = [None, None, None, (1, INF), None, (0, NAN), None, None, None, None, (2, -INF), None,
          None, None, (2, NAN), None, None, None, None]

OPTIMIZERS = {
    "SGD": lambda lib, params: lib.optim.SGD(params, lr=0.1, momentum=0.9),
    "Adam": lambda lib, params: lib.optim.Adam(params, lr=0.01),
    "AdamW": lambda lib, params: lib.optim.AdamW(params, lr=0.01, weight_decay=0.1),
    "RMSprop": lambda lib, params: lib.optim.RMSprop(params, lr=0.01),
}


def scripted_run(lib, make_optimizer, device="cpu", scaler_device="cpu"):
    """The same training script on ember or torch; returns what is compared after every step."""
    rng = np.random.default_rng(0)
    inits = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    coefs = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    params = [lib.nn.Parameter(lib.tensor(a, device=device)) for a in inits]
    opt_a = make_optimizer(lib, params[:2])
    opt_b = make_optimizer(lib, params[2:])
    scaler = lib.amp.GradScaler(scaler_device, init_scale=2.0**10, growth_factor=2.0,
                                backoff_factor=0.25, growth_interval=3)
    records = []
    for step, bad in enumerate(SCRIPT):
        opt_a.zero_grad()
        opt_b.zero_grad()
        c = [x.copy() for x in coefs]
        if bad is not None:
            c[bad[0]].reshape(-1)[step % c[bad[0]].size] = bad[1]
        loss = sum(((p * lib.tensor(ci, device=device)).sum() + (p * p).sum())
                   for p, ci in zip(params, c))
        scaler.scale(loss).backward()
        # A positional closure reaches optimizer.step (only a `closure=` keyword is refused):
        # step returns its value, or None when the step is skipped.
        returned = (scaler.step(opt_a, lambda: 7.0), scaler.step(opt_b, lambda: 9.0))
        scaler.update()
        records.append({"scale": scaler.get_scale(), "tracker": scaler._get_growth_tracker(),
                        "returned": returned, "params": [host(p) for p in params],
                        "grads": [host(p.grad) for p in params]})
    return records, scaler


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_scripted_steps_match_torch(name, device):
    ours, scaler = scripted_run(ember, OPTIMIZERS[name], device=device,
                                scaler_device=ember.device(device).type)
    theirs, torch_scaler = scripted_run(torch, OPTIMIZERS[name])
    skipped = 0
    for step, (e, t) in enumerate(zip(ours, theirs)):
        assert e["scale"] == t["scale"], step
        assert e["tracker"] == t["tracker"], step
        assert e["returned"] == t["returned"], step
        skipped += e["returned"].count(None)
        for pe, pt in zip(e["params"], t["params"]):
            np.testing.assert_allclose(pe, pt, rtol=1e-5, atol=1e-6, err_msg=f"step {step}")
        for ge, gt in zip(e["grads"], t["grads"]):  # the unscaled grads, inf/nan included
            np.testing.assert_allclose(ge, gt, rtol=1e-5, atol=1e-6, err_msg=f"step {step}")
    assert skipped == 4  # each bad gradient skips the step of its own optimizer only
    assert scaler.state_dict() == torch_scaler.state_dict()


@pytest.mark.parametrize("name", ["ASGD", "Adadelta", "Adafactor", "Adagrad", "Adamax", "NAdam",
                                  "RAdam", "Rprop"])
def test_every_other_per_parameter_optimizer_matches_torch(name):
    make = lambda lib, params: getattr(lib.optim, name)(params)  # noqa: E731
    ours, _ = scripted_run(ember, make)
    theirs, _ = scripted_run(torch, make)
    for step, (e, t) in enumerate(zip(ours, theirs)):
        assert (e["scale"], e["tracker"], e["returned"]) == \
            (t["scale"], t["tracker"], t["returned"]), step
        for pe, pt in zip(e["params"], t["params"]):
            np.testing.assert_allclose(pe, pt, rtol=1e-5, atol=1e-6, err_msg=f"step {step}")


def test_lbfgs_with_a_positional_closure_matches_torch():
    """torch refuses only a ``closure=`` keyword; a positional closure reaches the optimizer
    (which re-evaluates the loss itself, unscaled)."""
    def run(lib):
        p = lib.nn.Parameter(lib.tensor([1.5, -0.5]))
        opt = lib.optim.LBFGS([p], lr=0.5, max_iter=3)
        scaler = lib.amp.GradScaler("cpu", init_scale=8.0)

        def closure():
            opt.zero_grad()
            loss = ((p - 1) ** 2).sum()
            loss.backward()
            return loss

        out = []
        for bad in (1.0, INF, 1.0):
            opt.zero_grad()
            scaler.scale(((p - 1) ** 2).sum() * bad).backward()
            returned = scaler.step(opt, closure)
            scaler.update()
            out.append((None if returned is None else float(returned), scaler.get_scale(),
                        host(p).tolist()))
        return out
    ours, theirs = run(ember), run(torch)
    for (re_, se, pe), (rt, st, pt) in zip(ours, theirs):
        assert (re_ is None, se) == (rt is None, st)
        if re_ is not None:
            np.testing.assert_allclose(re_, rt, rtol=1e-5)
        np.testing.assert_allclose(pe, pt, rtol=1e-5, atol=1e-6)


def test_growth_that_would_overflow_is_dropped():
    """At growth time a scale whose growth is inf stays, and the tracker still resets."""
    def run(lib):
        p = lib.nn.Parameter(lib.ones(2))
        opt = lib.optim.SGD([p], lr=0.0)
        scaler = lib.amp.GradScaler("cpu", init_scale=2.0**126, growth_factor=8.0,
                                    growth_interval=2)
        out = []
        for _ in range(3):
            opt.zero_grad()
            scaler.scale((p * 1e-30).sum()).backward()
            scaler.step(opt)
            scaler.update()
            out.append((scaler.get_scale(), scaler._get_growth_tracker()))
        return out
    assert run(ember) == run(torch)


def test_factors_float32_cannot_hold_give_torchs_scale_bit_for_bit():
    """PyTorch's CPU kernel multiplies in float64 and rounds once; multiplying in float32
    would differ from it in the last bit on almost every one of these steps."""
    def run(lib):
        p = lib.nn.Parameter(lib.ones(2))
        opt = lib.optim.SGD([p], lr=0.0)
        scaler = lib.amp.GradScaler("cpu", init_scale=1000.1, growth_factor=1.7,
                                    backoff_factor=0.3, growth_interval=1)
        scales = []
        for i in range(40):
            opt.zero_grad()
            scaler.scale((p * (INF if i % 3 == 0 else 1.0)).sum()).backward()
            scaler.step(opt)
            scaler.update()
            scales.append(scaler.get_scale())
        return scales
    assert run(ember) == run(torch)


def test_unscale_then_clip_grad_norm_matches_torch():
    def run(lib):
        lib.manual_seed(0)
        rng = np.random.default_rng(1)
        model = lib.nn.Linear(5, 3)
        with lib.no_grad():
            model.weight.copy_(lib.tensor(rng.standard_normal((3, 5)).astype(np.float32)))
            model.bias.copy_(lib.tensor(rng.standard_normal(3).astype(np.float32)))
        opt = lib.optim.Adam(model.parameters(), lr=0.05)
        scaler = lib.amp.GradScaler("cpu", init_scale=2.0**12)
        x = lib.tensor(rng.standard_normal((8, 5)).astype(np.float32))
        norms = []
        for _ in range(4):
            opt.zero_grad()
            loss = (model(x) ** 2).mean() * 50
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            norms.append(float(lib.nn.utils.clip_grad_norm_(model.parameters(), 0.5)))
            scaler.step(opt)
            scaler.update()
        return norms, [host(p) for p in model.parameters()]
    (norms_e, params_e), (norms_t, params_t) = run(ember), run(torch)
    np.testing.assert_allclose(norms_e, norms_t, rtol=1e-5)
    for pe, pt in zip(params_e, params_t):
        np.testing.assert_allclose(pe, pt, rtol=1e-5, atol=1e-6)


class _GRUClassifier:
    """A GRU over a sequence and a linear head on its last hidden state."""
    @staticmethod
    def build(lib):
        class Model(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.gru = lib.nn.GRU(6, 8, batch_first=True)
                self.head = lib.nn.Linear(8, 4)

            def forward(self, x):
                return self.head(self.gru(x)[1][0])
        return Model()


def _mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(6, 16), nn.LayerNorm(16), nn.ReLU(), nn.Linear(16, 4))


@pytest.mark.parametrize("build, shape", [(_mlp, (8, 6)), (_GRUClassifier.build, (8, 5, 6))],
                         ids=["mlp", "gru"])
def test_autocast_training_loop_matches_torchs_losses(build, shape):
    """Forward under CPU bfloat16 autocast, GradScaler on the loss, Adam, clipping after
    unscale_: per step the loss, whether the step ran, the scale and the growth tracker as
    torch's. A batch scaled by inf at steps 3 and 6 gives inf/nan gradients: skipped, backed
    off; growth every 2 clean steps."""
    rng = np.random.default_rng(7)
    batches = [(rng.standard_normal(shape).astype(np.float32), rng.integers(0, 4, shape[0]))
               for _ in range(9)]

    def run(lib):
        torch.manual_seed(0)
        model = build(torch)
        if lib is ember:
            reference, model = model, build(ember)
            for p, q in zip(reference.parameters(), model.parameters()):
                with ember.no_grad():
                    q.copy_(ember.tensor(p.detach().numpy()))
        opt = lib.optim.Adam(model.parameters(), lr=1e-2)
        scaler = lib.amp.GradScaler("cpu", init_scale=2.0**10, growth_interval=2)
        records = []
        for step, (x, y) in enumerate(batches):
            opt.zero_grad()
            x = lib.tensor(x * (INF if step in (3, 6) else 1.0))
            with lib.autocast("cpu"):
                out = model(x)
                loss = lib.nn.functional.cross_entropy(out, lib.tensor(y))
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            records.append((str(loss.dtype).split(".")[-1], float(loss.detach()),
                            scaler.get_scale(), scaler._get_growth_tracker()))
        return records

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy on the inf batches
        ours, theirs = run(ember), run(torch)
    for step, (e, t) in enumerate(zip(ours, theirs)):
        assert e[0] == t[0] == "float32", step
        assert e[2:] == t[2:], step
        if math.isfinite(t[1]):
            np.testing.assert_allclose(e[1], t[1], rtol=2e-2, err_msg=f"step {step}")
        else:
            assert not math.isfinite(e[1]), step
    assert [r[2] for r in theirs] == [1024.0, 2048.0, 2048.0, 1024.0, 1024.0, 2048.0, 1024.0,
                                      1024.0, 2048.0]


@pytest.mark.parametrize("name", ["SGD", "SparseAdam"])
def test_sparse_gradients_match_torch(name):
    def run(lib):
        emb = lib.nn.Embedding(6, 3, sparse=True)
        with lib.no_grad():
            emb.weight.copy_(lib.tensor(np.arange(18, dtype=np.float32).reshape(6, 3) / 10))
        opt = getattr(lib.optim, name)(emb.parameters(), lr=0.5)
        scaler = lib.amp.GradScaler("cpu", init_scale=256.0, growth_interval=1)
        out = []
        for scale_by in (1.0, INF, 2.0):
            opt.zero_grad()
            loss = (emb(lib.tensor([1, 4, 1])) * scale_by).sum()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            out.append((scaler.get_scale(), host(emb.weight)))
        return out
    for (se, we), (st, wt) in zip(run(ember), run(torch)):
        assert se == st
        np.testing.assert_allclose(we, wt, rtol=1e-6)


# --------------------------------------------------------------------------------------------
# scale() on nested outputs
# --------------------------------------------------------------------------------------------

def test_scale_nested_outputs():
    scaler = ember.amp.GradScaler("cpu", init_scale=4.0)
    a, b, c = ember.tensor([1.0, 2.0]), ember.tensor(3.0), ember.tensor([[0.5]])
    out = scaler.scale([a, (b, [c])])
    assert type(out) is list and type(out[1]) is tuple and type(out[1][1]) is list
    np.testing.assert_array_equal(out[0].numpy(), [4.0, 8.0])
    assert out[1][0].item() == 12.0 and out[1][1][0].item() == 2.0
    lazy = scaler.scale(iter([a, b]))  # another iterable comes back as an iterator, as torch
    assert not isinstance(lazy, (list, tuple))
    assert [t.tolist() for t in lazy] == [[4.0, 8.0], 12.0]
    # a float32 0-d scale keeps a lower-precision output's dtype, as in torch
    ours = scaler.scale(ember.ones(2, dtype=ember.bfloat16)).dtype
    theirs = torch.amp.GradScaler("cpu").scale(torch.ones(2, dtype=torch.bfloat16)).dtype
    assert ours is ember.bfloat16 and theirs is torch.bfloat16


def test_scale_rejects_non_tensors_as_torch():
    with pytest.raises(ValueError) as theirs:
        torch.amp.GradScaler("cpu").scale([torch.ones(1), 3.0])
    with pytest.raises(ValueError) as ours:
        ember.amp.GradScaler("cpu").scale([ember.ones(1), 3.0])
    assert str(ours.value) == str(theirs.value)


def test_scale_is_made_lazily_on_the_outputs_device(device):
    scaler = ember.amp.GradScaler(ember.device(device).type)
    assert scaler._scale is None and scaler.get_scale() == 2.0**16
    scaler.scale(ember.ones(1, device=device))
    assert scaler._scale.device.type == ember.device(device).type
    assert scaler._scale.dtype is ember.float32
    assert scaler._growth_tracker.dtype is ember.int32


# --------------------------------------------------------------------------------------------
# Errors, against torch's
# --------------------------------------------------------------------------------------------

def _setup(lib, dtype="float32"):
    p = lib.nn.Parameter(lib.ones(3, dtype=getattr(lib, dtype)))
    opt = lib.optim.SGD([p], lr=0.1)
    scaler = lib.amp.GradScaler("cpu")
    return p, opt, scaler


def _misuse_unscale_twice(lib):
    p, opt, scaler = _setup(lib)
    scaler.scale(p.sum()).backward()
    scaler.unscale_(opt)
    scaler.unscale_(opt)


def _misuse_unscale_after_step(lib):
    p, opt, scaler = _setup(lib)
    scaler.scale(p.sum()).backward()
    scaler.step(opt)
    scaler.unscale_(opt)


def _misuse_step_twice(lib):
    p, opt, scaler = _setup(lib)
    scaler.scale(p.sum()).backward()
    scaler.step(opt)
    scaler.step(opt)


def _misuse_closure_keyword(lib):
    p, opt, scaler = _setup(lib)
    scaler.scale(p.sum()).backward()
    scaler.step(opt, closure=lambda: 1.0)


def _misuse_step_before_scale(lib):
    p, opt, scaler = _setup(lib)
    scaler.step(opt)


def _misuse_step_without_grads(lib):
    p, opt, scaler = _setup(lib)
    scaler.scale(p.sum())  # no backward: nothing to check
    scaler.step(opt)


def _misuse_unscale_before_scale(lib):
    p, opt, scaler = _setup(lib)
    scaler.unscale_(opt)


def _misuse_update_without_step(lib):
    p, opt, scaler = _setup(lib)
    scaler.scale(p.sum())
    scaler.update()


def _misuse_fp16_grads(lib):
    p, opt, scaler = _setup(lib, "float16")
    scaler.scale(p.sum()).backward()
    scaler.unscale_(opt)


def _misuse_growth_factor(lib):
    lib.amp.GradScaler("cpu", growth_factor=1.0)


def _misuse_backoff_factor(lib):
    lib.amp.GradScaler("cpu", backoff_factor=1.0)


def _misuse_new_scale_numel(lib):
    p, opt, scaler = _setup(lib)
    scaler.scale(p.sum())
    scaler.update(lib.ones(2))


def _misuse_new_scale_requires_grad(lib):
    p, opt, scaler = _setup(lib)
    scaler.scale(p.sum())
    scaler.update(lib.ones(1, requires_grad=True))


def _misuse_load_empty_state(lib):
    lib.amp.GradScaler("cpu").load_state_dict({})


def _misuse_pickle_mid_iteration(lib):
    p, opt, scaler = _setup(lib)
    scaler.scale(p.sum()).backward()
    scaler.unscale_(opt)
    pickle.dumps(scaler)


MISUSES = [_misuse_unscale_twice, _misuse_unscale_after_step, _misuse_step_twice,
           _misuse_closure_keyword, _misuse_step_before_scale, _misuse_step_without_grads,
           _misuse_unscale_before_scale, _misuse_update_without_step, _misuse_fp16_grads,
           _misuse_growth_factor,
           _misuse_backoff_factor, _misuse_new_scale_numel, _misuse_new_scale_requires_grad,
           _misuse_load_empty_state, _misuse_pickle_mid_iteration]


@pytest.mark.parametrize("misuse", MISUSES, ids=lambda f: f.__name__.removeprefix("_misuse_"))
def test_errors_match_torch(misuse):
    with pytest.raises(Exception) as theirs:
        misuse(torch)
    with pytest.raises(Exception) as ours:
        misuse(ember)
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value)


def test_unscale_twice_message():
    with pytest.raises(RuntimeError, match=r"unscale_\(\) has already been called on this "
                                           r"optimizer since the last update\(\)\."):
        _misuse_unscale_twice(ember)


def test_new_scale_on_another_device_type_is_refused(device):
    if device == "cpu":
        pytest.skip("needs a second device type")
    scaler = ember.amp.GradScaler("cpu")
    scaler.scale(ember.ones(1))
    with pytest.raises(AssertionError, match="new_scale should be a float or a 1-element"):
        scaler.update(ember.tensor([8.0], device=device))


# --------------------------------------------------------------------------------------------
# update(new_scale), state_dict, pickling, getters/setters, enabled=False
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("new_scale", [128.0, "tensor"])
def test_update_with_new_scale(new_scale):
    results = []
    for lib in (ember, torch):
        p, opt, scaler = _setup(lib)
        scaler.scale(p.sum()).backward()
        scaler.step(opt)
        value = lib.tensor(32.0) if new_scale == "tensor" else new_scale
        scaler.update(value)
        if new_scale == "tensor":
            value.fill_(1.0)  # the scaler copied it: later writes do not reach it
        results.append((scaler.get_scale(), scaler._get_growth_tracker()))
        scaler.scale(p.sum())
        scaler.update(3.0)  # no step recorded: new_scale needs none
        results.append(scaler.get_scale())
    assert results[:2] == results[2:]


def test_state_dict_round_trip_matches_torch():
    ours, _ = scripted_run(ember, OPTIMIZERS["SGD"])
    _, scaler = scripted_run(ember, OPTIMIZERS["SGD"])
    _, torch_scaler = scripted_run(torch, OPTIMIZERS["SGD"])
    state = scaler.state_dict()
    assert state == torch_scaler.state_dict()
    assert set(state) == {"scale", "growth_factor", "backoff_factor", "growth_interval",
                          "_growth_tracker"}
    assert type(state["scale"]) is float and type(state["_growth_tracker"]) is int

    fresh = ember.amp.GradScaler("cpu")  # before its first scale(): kept until then
    fresh.load_state_dict(state)
    assert fresh.state_dict() == state
    fresh.scale(ember.ones(1))
    assert fresh.get_scale() == state["scale"] and fresh._get_growth_tracker() == \
        state["_growth_tracker"]

    used = ember.amp.GradScaler("cpu")  # after: written into its tensors
    used.scale(ember.ones(1))
    tensor_before = used._scale
    used.load_state_dict(torch_scaler.state_dict())
    assert used._scale is tensor_before and used.state_dict() == state


def test_pickle_after_update():
    _, scaler = scripted_run(ember, OPTIMIZERS["Adam"])
    clone = pickle.loads(pickle.dumps(scaler))
    assert clone._scale is None and clone.state_dict() == scaler.state_dict()


def test_getters_and_setters():
    for lib in (ember, torch):
        s = lib.amp.GradScaler("cpu", growth_factor=3.0, backoff_factor=0.1, growth_interval=7)
        s.set_growth_factor(5.0)
        s.set_backoff_factor(0.2)
        s.set_growth_interval(9)
        assert (s.get_growth_factor(), s.get_backoff_factor(), s.get_growth_interval(),
                s.is_enabled()) == (5.0, 0.2, 9, True)


def test_disabled_is_a_pass_through():
    p, opt, _ = _setup(ember)
    scaler = ember.amp.GradScaler("cpu", enabled=False, growth_factor=0.5)  # unchecked when off
    loss = p.sum()
    assert scaler.scale(loss) is loss
    outputs = [loss]
    assert scaler.scale(outputs) is outputs
    loss.backward()
    scaler.unscale_(opt)
    scaler.unscale_(opt)  # no stage bookkeeping either
    np.testing.assert_array_equal(p.grad.numpy(), [1.0, 1.0, 1.0])
    assert scaler.step(opt, lambda: 5.0) == 5.0  # the optimizer's step ran
    np.testing.assert_allclose(p.detach().numpy(), [0.9, 0.9, 0.9])
    scaler.update()
    assert (scaler.get_scale(), scaler.is_enabled(), scaler.state_dict(),
            scaler._get_growth_tracker()) == (1.0, False, {}, 0)
    scaler.load_state_dict({})
    torch_off = torch.amp.GradScaler("cpu", enabled=False)
    assert (torch_off.get_scale(), torch_off.state_dict()) == (1.0, {})


def test_optimizer_with_its_own_amp_scaling():
    """An optimizer that declares ``_step_supports_amp_scaling`` receives ``grad_scale`` and
    ``found_inf`` for its step, and unscales and skips by itself."""
    def run(lib):
        class SelfScaling(lib.optim.SGD):
            _step_supports_amp_scaling = True

            def step(self, closure=None):
                self.seen = (float(self.grad_scale), float(self.found_inf))
                return "stepped"

        p = lib.nn.Parameter(lib.ones(2))
        opt = SelfScaling([p], lr=0.1)
        scaler = lib.amp.GradScaler("cpu", init_scale=8.0)
        seen = []
        for bad in (1.0, INF):
            opt.zero_grad()
            scaler.scale((p * bad).sum()).backward()
            seen.append((scaler.step(opt), opt.seen, hasattr(opt, "grad_scale")))
            scaler.update()
        return seen, scaler.get_scale()
    assert run(ember) == run(torch)


# --------------------------------------------------------------------------------------------
# One device-to-host transfer per step
# --------------------------------------------------------------------------------------------

def test_one_host_transfer_per_step(device, monkeypatch):
    """The finiteness check over all gradients (of several dtypes) is reduced on the device:
    unscale_ and update read nothing back, and step reads one value, whatever the number of
    parameters."""
    params = [ember.nn.Parameter(ember.ones(4, device=device)) for _ in range(12)]
    opt = ember.optim.SGD(params, lr=0.1)
    scaler = ember.amp.GradScaler(ember.device(device).type)
    backend_cls = type(params[0]._backend)
    reads = []
    original = backend_cls.to_numpy

    def counting_to_numpy(self, array):
        reads.append(getattr(array, "shape", None))
        return original(self, array)

    for bad in (1.0, INF, 1.0):
        opt.zero_grad()
        scaler.scale(sum((p * bad).sum() for p in params)).backward()
        monkeypatch.setattr(backend_cls, "to_numpy", counting_to_numpy)
        reads.clear()
        scaler.unscale_(opt)
        assert reads == []
        scaler.step(opt)
        assert reads == [()]  # one 0-d value: the combined found-inf flag
        reads.clear()
        scaler.update()
        assert reads == []
        monkeypatch.setattr(backend_cls, "to_numpy", original)
    assert scaler.get_scale() == 2.0**15


@pytest.mark.skipif("cupyconf" not in DEVICES, reason="needs the CuPy conformance device "
                    "(EMBER_TEST_CUPYCONF=1)")
def test_one_host_read_of_any_kind_on_the_cupy_conformance_device(monkeypatch):
    """On the CuPy conformance device (Ember's CUDA backend over a NumPy-backed stand-in for
    CuPy 14.2; not a GPU) every way a device array can reach the host is counted (``get``,
    ``item``, ``tolist``, ``float``/``int``/``bool``), not only the backend's ``to_numpy``: a
    hidden sync inside an op would show here."""
    from conformance.strict_cupy import DeviceArray
    params = [ember.nn.Parameter(ember.ones(3, device="cupyconf", dtype=dtype))
              for dtype in (ember.float32, ember.bfloat16, ember.float32, ember.float64)]
    opt = ember.optim.SGD(params, lr=0.1)
    scaler = ember.amp.GradScaler("cupyconf")
    reads = []
    for method in ("get", "item", "tolist", "__float__", "__int__", "__bool__"):
        original = getattr(DeviceArray, method)

        def counting(self, *args, _original=original, _method=method, **kwargs):
            reads.append(_method)
            return _original(self, *args, **kwargs)
        monkeypatch.setattr(DeviceArray, method, counting)
    for bad in (1.0, NAN):
        opt.zero_grad()
        scaler.scale(sum((p * bad).sum().float() for p in params)).backward()
        reads.clear()
        scaler.unscale_(opt)
        assert reads == []
        scaler.step(opt)
        assert len(reads) == 1
        reads.clear()
        scaler.update()
        assert reads == []


# --------------------------------------------------------------------------------------------
# The "cuda" scaler without CUDA, and the deprecated namespaces' warnings
# --------------------------------------------------------------------------------------------

def _warnings_of(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn()
    return result, [(w.category, str(w.message)) for w in caught]


@pytest.mark.skipif(ember.cuda.is_available(), reason="about a machine without CUDA")
@pytest.mark.parametrize("make", [
    lambda lib: lib.amp.GradScaler("cuda"),
    lambda lib: lib.amp.GradScaler(),
    lambda lib: lib.cuda.amp.GradScaler(),
    lambda lib: lib.cuda.amp.GradScaler(init_scale=8.0, enabled=True),
], ids=["amp-cuda", "amp-default", "cuda.amp", "cuda.amp-kwargs"])
def test_cuda_scaler_without_cuda_warns_and_disables(make):
    ours, ours_warned = _warnings_of(lambda: make(ember))
    theirs, theirs_warned = _warnings_of(lambda: make(torch))
    assert ours_warned == theirs_warned
    assert (UserWarning, "torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
            "Disabling.") in ours_warned
    assert ours.is_enabled() is theirs.is_enabled() is False
    loss = ember.ones(1)
    assert ours.scale(loss) is loss


def test_cuda_scaler_disabled_by_hand_does_not_warn_about_cuda():
    _, warned = _warnings_of(lambda: ember.amp.GradScaler("cuda", enabled=False))
    assert warned == []
    _, warned = _warnings_of(lambda: ember.cuda.amp.GradScaler(enabled=False))
    assert [c for c, _ in warned] == [FutureWarning]


@pytest.mark.parametrize("make", [
    lambda lib: lib.cpu.amp.GradScaler(init_scale=16.0),
    lambda lib: lib.cpu.amp.autocast(),
    lambda lib: lib.cpu.amp.autocast(dtype=lib.float16, cache_enabled=False),
    lambda lib: lib.cuda.amp.autocast(),
    lambda lib: lib.cuda.amp.custom_fwd(cast_inputs=lib.float32),
    lambda lib: lib.cuda.amp.custom_fwd(lambda ctx, x: x),
    lambda lib: lib.cuda.amp.custom_bwd(lambda ctx, g: g),
], ids=["cpu.GradScaler", "cpu.autocast", "cpu.autocast-kwargs", "cuda.autocast",
        "cuda.custom_fwd-partial", "cuda.custom_fwd", "cuda.custom_bwd"])
def test_deprecated_names_warn_as_torch(make):
    ours, ours_warned = _warnings_of(lambda: make(ember))
    theirs, theirs_warned = _warnings_of(lambda: make(torch))
    assert ours_warned == theirs_warned
    assert ours_warned[0][0] is FutureWarning


def test_deprecated_classes_are_the_new_ones():
    assert issubclass(ember.cuda.amp.GradScaler, ember.amp.GradScaler)
    assert issubclass(ember.cpu.amp.GradScaler, ember.amp.GradScaler)
    assert issubclass(ember.cuda.amp.autocast, ember.amp.autocast)
    assert issubclass(ember.cpu.amp.autocast, ember.amp.autocast)
    with pytest.warns(FutureWarning):
        region = ember.cpu.amp.autocast()
    with region:
        assert ember.amp.autocast_mode.is_autocast_enabled("cpu")
        assert ember.amp.autocast_mode.get_autocast_dtype("cpu") is ember.bfloat16
        assert (ember.ones(2, 2) @ ember.ones(2, 2)).dtype is ember.bfloat16
    assert not ember.amp.autocast_mode.is_autocast_enabled("cpu")
    with pytest.warns(FutureWarning):
        assert ember.cpu.amp.GradScaler()._device == "cpu"
    assert sorted(ember.cuda.amp.__all__) == sorted(torch.cuda.amp.__all__)


# --------------------------------------------------------------------------------------------
# custom_fwd / custom_bwd under CPU autocast
# --------------------------------------------------------------------------------------------

def _custom_function(lib, cast_inputs):
    observed = {}

    class MatMul(lib.autograd.Function):
        @staticmethod
        @lib.amp.custom_fwd(device_type="cpu", cast_inputs=cast_inputs)
        def forward(ctx, a, b):
            observed["fwd"] = (lib.is_autocast_enabled("cpu"), str(a.dtype), str(b.dtype))
            ctx.save_for_backward(a, b)
            return a @ b

        @staticmethod
        @lib.amp.custom_bwd(device_type="cpu")
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            observed["bwd"] = (lib.is_autocast_enabled("cpu"), lib.get_autocast_dtype("cpu"))
            return grad @ b.t(), a.t() @ grad

    return MatMul, observed


@pytest.mark.parametrize("cast_inputs", [None, "float32", "bfloat16"])
@pytest.mark.parametrize("in_autocast", [True, False])
def test_custom_fwd_bwd_match_torch(cast_inputs, in_autocast):
    rng = np.random.default_rng(2)
    a0 = rng.standard_normal((3, 4)).astype(np.float32)
    b0 = rng.standard_normal((4, 2)).astype(np.float32)
    results = []
    for lib in (ember, torch):
        fn, observed = _custom_function(lib, None if cast_inputs is None
                                        else getattr(lib, cast_inputs))
        a = lib.tensor(a0, requires_grad=True)
        b = lib.tensor(b0, requires_grad=True)
        with lib.autocast("cpu", enabled=in_autocast):
            out = fn.apply(a, b)
            # an op inside the region, on the output, to see the region's policy after it
            loss = (out.float() ** 2).sum()
        loss.backward()
        results.append({"out": (str(out.dtype), host(out.float())),
                        "fwd": observed["fwd"],
                        "bwd": (observed["bwd"][0], str(observed["bwd"][1])),
                        "grads": (str(a.grad.dtype), host(a.grad), host(b.grad))})
    ours, theirs = (
        {k: tuple(x.replace("ember.", "torch.") if isinstance(x, str) else x for x in v)
         for k, v in r.items()} for r in results)
    for key in ("fwd", "bwd"):
        assert ours[key] == theirs[key], key
    assert ours["out"][0] == theirs["out"][0]
    np.testing.assert_allclose(ours["out"][1], theirs["out"][1], rtol=2e-2, atol=2e-2)
    assert ours["grads"][0] == theirs["grads"][0]
    np.testing.assert_allclose(ours["grads"][1], theirs["grads"][1], rtol=3e-2, atol=5e-2)
    np.testing.assert_allclose(ours["grads"][2], theirs["grads"][2], rtol=3e-2, atol=5e-2)


def test_custom_fwd_device_type_must_be_a_string():
    for lib in (ember, torch):
        with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
            lib.amp.custom_fwd(device_type=None)
        with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
            lib.amp.custom_bwd(device_type=1)
        with pytest.raises(TypeError):
            lib.amp.custom_fwd(lambda ctx: None)  # device_type is keyword-only and required


# --------------------------------------------------------------------------------------------
# On a real GPU
# --------------------------------------------------------------------------------------------

@pytest.mark.cuda
def test_cuda_scaler_steps_and_skips_on_gpu(monkeypatch):
    scaler = ember.amp.GradScaler("cuda", init_scale=2.0**8, growth_interval=1)
    assert scaler.is_enabled()
    params = [ember.nn.Parameter(ember.ones(5, device="cuda", dtype=ember.float32))
              for _ in range(8)]
    opt = ember.optim.SGD(params, lr=0.1)
    backend_cls = type(params[0]._backend)
    original = backend_cls.to_numpy
    reads = []
    monkeypatch.setattr(backend_cls, "to_numpy",
                        lambda self, a: (reads.append(a.shape), original(self, a))[1])
    for bad, stepped in ((1.0, True), (INF, False), (NAN, False), (1.0, True)):
        opt.zero_grad()
        before = [p.detach().clone() for p in params]
        with ember.autocast("cuda"):
            loss = sum((p * bad).sum() for p in params)
        scaler.scale(loss).backward()
        reads.clear()
        scaler.step(opt)
        assert reads == [()]  # the one transfer of the step
        scaler.update()
        changed = [not ember.equal(b, p.detach()) for b, p in zip(before, params)]
        assert all(changed) if stepped else not any(changed)
    assert scaler._scale.device.type == "cuda"
    assert scaler.get_scale() == 2.0**8 * 2 * 0.5 * 0.5 * 2  # grow, back off twice, grow
