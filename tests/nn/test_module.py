"""``nn.Module`` against ``torch.nn.Module``: the same small models are written once against
``lib`` and built with both libraries; names, keys, order, repr, hook order, errors and gradients
must agree."""
import copy
import pickle
import warnings
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ember
from tests.torch_compare import assert_same, compare_error


def make_classes(lib):
    nn = lib.nn

    class Affine(nn.Module):
        def __init__(self, n_in, n_out, bias=True):
            super().__init__()
            self.n_in, self.n_out = n_in, n_out
            self.weight = nn.Parameter(lib.randn(n_out, n_in))
            if bias:
                self.bias = nn.Parameter(lib.randn(n_out))
            else:
                self.register_parameter("bias", None)
            self.register_buffer("calls", lib.zeros((), dtype=lib.int64))
            self.register_buffer("scratch", lib.zeros(n_out), persistent=False)

        def forward(self, x):
            y = x @ self.weight.t()
            return y + self.bias if self.bias is not None else y

        def extra_repr(self):
            return f"in={self.n_in}, out={self.n_out}, bias={self.bias is not None}"

    class Tanh(nn.Module):
        def forward(self, x):
            return x.tanh()

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = Affine(4, 3)
            self.act = Tanh()
            self.blocks = nn.ModuleList([Affine(3, 3), Affine(3, 3, bias=False)])
            self.head = nn.Sequential(OrderedDict(proj=Affine(3, 2), act=Tanh()))
            self.again = self.enc  # the same module twice: shared parameters
            self.scale = nn.Parameter(lib.ones(2))
            self.register_buffer("steps", lib.zeros(2))
            self.empty = None

        def forward(self, x):
            x = self.act(self.enc(x))
            for block in self.blocks:
                x = x + block(x)
            return self.head(x) * self.scale

    class TwoInOut(nn.Module):
        """Tensor and non-tensor positional inputs, a tuple of outputs."""

        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(lib.randn(3, 3))

        def forward(self, a, flag, b):
            h = a @ self.weight
            return h * b, (h + b).sum(-1)

    return Affine, Tanh, Net, TwoInOut


def ember_state(torch_state):
    return OrderedDict((k, ember.tensor(v.detach().numpy())) for k, v in torch_state.items())


def build(lib):
    Affine, Tanh, Net, _ = make_classes(lib)
    return Net()


def pair():
    """The same Net in both libraries with the same weights."""
    t = build(torch)
    e = build(ember)
    e.load_state_dict(ember_state(t.state_dict()))
    return t, e


def same_repr(t, e):
    assert repr(e) == repr(t).replace("torch", "ember")


# ---- registration and traversal -------------------------------------------------------------
def test_names_and_order_match_torch():
    t, e = pair()
    for kwargs in ({}, {"prefix": "m"}, {"recurse": False}, {"remove_duplicate": False}):
        assert [n for n, _ in e.named_parameters(**kwargs)] == \
            [n for n, _ in t.named_parameters(**kwargs)]
        assert [n for n, _ in e.named_buffers(**kwargs)] == \
            [n for n, _ in t.named_buffers(**kwargs)]
    assert [n for n, _ in e.named_children()] == [n for n, _ in t.named_children()]
    assert [n for n, _ in e.named_modules()] == [n for n, _ in t.named_modules()]
    assert [n for n, _ in e.named_modules(prefix="root", remove_duplicate=False)] == \
        [n for n, _ in t.named_modules(prefix="root", remove_duplicate=False)]
    assert len(list(e.parameters())) == len(list(t.parameters()))
    assert len(list(e.buffers())) == len(list(t.buffers()))
    assert len(list(e.modules())) == len(list(t.modules()))
    assert len(list(e.children())) == len(list(t.children()))
    assert all(isinstance(p, ember.nn.Parameter) for p in e.parameters())
    assert e.again is e.enc and e.enc.weight is dict(e.named_parameters())["enc.weight"]


def test_attribute_assignment_moves_between_kinds():
    def fn(lib):
        m = lib.nn.Module()
        m.register_buffer("x", lib.zeros(2))
        m.x = lib.nn.Parameter(lib.zeros(2))  # a parameter replaces the buffer
        names = [list(m._parameters), list(m._buffers), list(m._modules)]
        del m.x
        m.register_buffer("x", lib.zeros(2))
        m.x = lib.nn.Module()  # a module replaces the buffer
        names += [list(m._parameters), list(m._buffers), list(m._modules)]
        m.register_buffer("b", lib.ones(1))
        m.b = lib.zeros(3)  # assigning a tensor to a buffer name keeps it a buffer
        names += [list(m._buffers), m.b.tolist()]
        m.b = None
        names.append(m._buffers["b"])
        m.nb = lib.nn.Buffer(lib.ones(1), persistent=False)
        names += [list(m._buffers), sorted(m._non_persistent_buffers_set), list(m.state_dict())]
        m.plain = 3
        names.append("plain" in m.__dict__)
        del m.x, m.nb, m.plain
        names += [list(m._modules), list(m._buffers), sorted(m._non_persistent_buffers_set)]
        m.p = lib.nn.Parameter(lib.zeros(1))
        m.p = None
        names.append(list(m._parameters.items()))
        names.append("p" in dir(m) and "b" in dir(m))
        return names

    assert fn(ember) == fn(torch)


@pytest.mark.parametrize("case", [
    lambda lib: _with_param(lib).__setattr__("w", lib.zeros(1)),
    lambda lib: _with_child(lib).__setattr__("c", 3),
    lambda lib: _with_buffer(lib).__setattr__("b", 3),
    lambda lib: lib.nn.Module().register_buffer("a.b", lib.zeros(1)),
    lambda lib: lib.nn.Module().register_buffer("", lib.zeros(1)),
    lambda lib: lib.nn.Module().register_buffer(1, lib.zeros(1)),
    lambda lib: lib.nn.Module().register_buffer("training", lib.zeros(1)),
    lambda lib: lib.nn.Module().register_buffer("b", 3),
    lambda lib: lib.nn.Module().register_parameter("w", lib.zeros(1)),
    lambda lib: lib.nn.Module().register_parameter("a.b", None),
    lambda lib: lib.nn.Module().register_parameter("", None),
    lambda lib: lib.nn.Module().add_module("x", 3),
    lambda lib: lib.nn.Module().add_module("a.b", lib.nn.Module()),
    lambda lib: lib.nn.Module().add_module("", lib.nn.Module()),
    lambda lib: lib.nn.Module().add_module("forward", lib.nn.Module()),
    lambda lib: lib.nn.Module().nothing,
    lambda lib: _uninit(lib).__setattr__("w", lib.nn.Parameter(lib.zeros(1))),
    lambda lib: _uninit(lib).__setattr__("m", lib.nn.Module()),
    lambda lib: _uninit(lib).register_buffer("b", lib.zeros(1)),
    lambda lib: lib.nn.Module(3),
    lambda lib: lib.nn.Module(x=3),
    lambda lib: lib.nn.Module().forward(1),
])
def test_registration_errors_match_torch(case):
    compare_error(case)


def test_non_leaf_parameter_error():
    def fn(lib):
        w = lib.nn.Parameter(lib.zeros(1))
        lib.nn.Module().register_parameter("w", w * 2)
    # (w * 2) is a plain tensor in both libraries; a Parameter that is not a leaf is rare and
    # is checked directly.
    compare_error(fn)
    leaf = ember.nn.Parameter(ember.zeros(1))
    non_leaf = ember.nn.Parameter(ember.zeros(1))
    non_leaf.grad_fn = (leaf * 2).grad_fn
    with pytest.raises(ValueError, match="Cannot assign non-leaf Tensor to parameter 'w'"):
        ember.nn.Module().register_parameter("w", non_leaf)


def _with_param(lib):
    m = lib.nn.Module()
    m.w = lib.nn.Parameter(lib.zeros(1))
    return m


def _with_child(lib):
    m = lib.nn.Module()
    m.c = lib.nn.Module()
    return m


def _with_buffer(lib):
    m = lib.nn.Module()
    m.register_buffer("b", lib.zeros(1))
    return m


def _uninit(lib):
    class Early(lib.nn.Module):
        def __init__(self):
            pass
    return Early()


@pytest.mark.parametrize("call", [
    lambda m: m.get_submodule("blocks.1"),
    lambda m: m.get_submodule(""),
    lambda m: m.get_submodule("head.proj"),
    lambda m: m.get_submodule("blocks.7"),
    lambda m: m.get_submodule("enc.weight"),
    lambda m: m.get_parameter("head.proj.weight"),
    lambda m: m.get_parameter("scale"),
    lambda m: m.get_parameter("enc.calls"),
    lambda m: m.get_parameter("enc.nope"),
    lambda m: m.get_buffer("enc.calls"),
    lambda m: m.get_buffer("steps"),
    lambda m: m.get_buffer("enc.weight"),
    lambda m: m.get_buffer("x.y"),
])
def test_get_by_path(call):
    t, e = pair()
    try:
        expected = call(t)
    except Exception as exc:
        with pytest.raises(type(exc)) as info:
            call(e)
        assert str(info.value) == str(exc)
        return
    got = call(e)
    if isinstance(expected, torch.nn.Module):
        same_repr(expected, got)
    else:
        assert_same(expected, got)
        assert type(got).__name__ == type(expected).__name__


def test_set_submodule():
    def fn(lib):
        m = build(lib)
        m.set_submodule("head.act", lib.nn.Module())
        m.set_submodule("blocks.0", lib.nn.Module())
        return [n for n, _ in m.named_modules()]
    assert fn(ember) == fn(torch)


# ---- state_dict -------------------------------------------------------------------------------
def test_state_dict_keys_values_and_metadata():
    t, e = pair()
    ts, es = t.state_dict(), e.state_dict()
    assert isinstance(es, OrderedDict)
    assert list(es) == list(ts)
    assert_same(dict(ts), dict(es))
    assert dict(es._metadata) == dict(ts._metadata)
    assert list(e.state_dict(prefix="model.")) == list(t.state_dict(prefix="model."))
    assert all(type(v) is ember.Tensor and not v.requires_grad for v in es.values())
    kept = e.state_dict(keep_vars=True)
    assert kept["enc.weight"] is e.enc.weight and kept["again.weight"] is e.enc.weight
    # the state_dict shares memory with the parameters, as in torch
    es["scale"].add_(1)
    assert e.scale.tolist() == [2.0, 2.0]


def test_load_state_dict_round_trip_and_result():
    t, e = pair()
    out = e.load_state_dict(ember_state(t.state_dict()))
    assert repr(out) == repr(t.load_state_dict(t.state_dict())) == "<All keys matched successfully>"
    assert out.missing_keys == [] and out.unexpected_keys == []
    weight = e.enc.weight
    assert_same(dict(t.state_dict()), dict(e.state_dict()))
    assert e.enc.weight is weight  # copied in place, not replaced


def _edit_state(state, drop=(), add=None, reshape=None):
    state = OrderedDict((k, v) for k, v in state.items() if k not in drop)
    if add:
        state.update(add)
    if reshape:
        for k, shape in reshape.items():
            state[k] = state[k].reshape(-1)[:1].expand(*shape).clone()
    return state


@pytest.mark.parametrize("edit", [
    dict(drop=("enc.bias", "head.proj.weight")),
    dict(add={"extra": 1, "blocks.0.nope": 2, "zzz.w": 3}),
    dict(drop=("scale",), add={"bogus": 0}),
    dict(reshape={"enc.weight": (2, 2), "steps": (3,)}),
    dict(reshape={"enc.weight": (3, 3)}, drop=("steps",)),
])
@pytest.mark.parametrize("strict", [True, False])
def test_load_state_dict_errors_match_torch(edit, strict):
    t, e = pair()

    def run(lib, model):
        state = model.state_dict()
        add = {k: lib.zeros(v) for k, v in edit.get("add", {}).items()}
        state = _edit_state(state, edit.get("drop", ()), add, edit.get("reshape"))
        try:
            result = model.load_state_dict(state, strict=strict)
        except RuntimeError as exc:
            return "error", str(exc).replace("torch", "ember")
        return "ok", repr(result)

    assert run(ember, e) == run(torch, t)


def test_load_state_dict_type_errors():
    def not_mapping(lib):
        build(lib).load_state_dict([1, 2])

    def not_tensor(lib):
        m = make_classes(lib)[0](2, 2)
        state = m.state_dict()
        state["weight"] = [[1.0, 2.0], [3.0, 4.0]]
        m.load_state_dict(state)

    with pytest.raises(TypeError, match="Expected state_dict to be dict-like, got <class 'list'>"):
        not_mapping(ember)
    compare_error(not_mapping, gist="Expected state_dict to be dict-like")
    compare_error(not_tensor)


def test_load_state_dict_assign():
    t, e = pair()
    new = ember_state(t.state_dict())
    e.load_state_dict(new, assign=True)
    assert e.scale.data_ptr() == new["scale"].data_ptr()
    assert isinstance(e.scale, ember.nn.Parameter) and e.scale.requires_grad
    assert e.steps is new["steps"]
    e.enc.weight.requires_grad_(False)
    e.load_state_dict(ember_state(t.state_dict()), assign=True)
    assert not e.enc.weight.requires_grad  # requires_grad comes from the model, as in torch


def test_scalar_checkpoint_compatibility():
    def fn(lib):
        m = lib.nn.Module()
        m.register_buffer("count", lib.zeros(()))
        m.load_state_dict({"count": lib.tensor([5.0])})
        return m.count
    assert_same(fn(torch), fn(ember))


def test_extra_state():
    def fn(lib):
        class WithExtra(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.note = "a"

            def get_extra_state(self):
                return {"note": self.note}

            def set_extra_state(self, state):
                self.note = state["note"] + "!"

        outer = lib.nn.Module()
        outer.inner = WithExtra()
        state = outer.state_dict()
        keys = list(state)
        outer.load_state_dict(state)
        try:
            outer.load_state_dict({})
        except RuntimeError as exc:
            msg = str(exc)
        plain = lib.nn.Module()
        res = plain.load_state_dict({"_extra_state": 1}, strict=False)
        return keys, outer.inner.note, msg, repr(res)
    assert fn(ember) == fn(torch)


# ---- modes, grads, conversion -----------------------------------------------------------------
def test_train_eval_requires_grad_zero_grad():
    def fn(lib):
        m = build(lib)
        log = [m.training]
        m.eval()
        log.append([mod.training for mod in m.modules()])
        log.append(m.head.train() is m.head)
        log.append([mod.training for mod in m.modules()])
        m.requires_grad_(False)
        log.append([p.requires_grad for p in m.parameters()])
        m.requires_grad_()
        m(lib.ones(2, 4)).sum().backward()
        log.append([p.grad is not None for p in m.parameters()])
        m.zero_grad(set_to_none=False)
        log.append([p.grad.abs().sum().item() for p in m.parameters()])
        m.zero_grad()
        log.append([p.grad for p in m.parameters()])
        return log

    assert fn(ember) == fn(torch)
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        build(ember).train(1)


@pytest.mark.parametrize("convert", [
    lambda m, lib: m.double(),
    lambda m, lib: m.half(),
    lambda m, lib: m.bfloat16(),
    lambda m, lib: m.double().float(),
    lambda m, lib: m.to(lib.float64),
    lambda m, lib: m.to(dtype=lib.float16),
    lambda m, lib: m.to("cpu", lib.float64),
    lambda m, lib: m.to(lib.zeros(1, dtype=lib.float64)),
    lambda m, lib: m.to("cpu"),
    lambda m, lib: m.cpu(),
    lambda m, lib: m.type(lib.float64),
])
def test_conversion_funnels_through_apply(convert):
    def fn(lib):
        m = build(lib)
        m.enc.register_buffer("ids", lib.arange(3))
        m(lib.ones(1, 4)).sum().backward()
        weight = m.enc.weight
        out = convert(m, lib)
        return (out is m, m.enc.weight is weight,
                [(n, str(p.dtype), str(p.grad.dtype)) for n, p in m.named_parameters()],
                [(n, str(b.dtype)) for n, b in m.named_buffers()])

    got, expected = fn(ember), fn(torch)
    assert got[:2] == expected[:2]
    assert [tuple(x.replace("torch", "ember") for x in row) for row in expected[2]] == got[2]
    assert [tuple(x.replace("torch", "ember") for x in row) for row in expected[3]] == got[3]


def test_to_device_and_errors():
    m = build(ember)
    m.to("testdev")
    assert {str(p.device) for p in m.parameters()} == {"testdev:0"} or \
        {p.device.type for p in m.parameters()} == {"testdev"}
    assert {b.device.type for b in m.buffers()} == {"testdev"}
    m.cpu()
    assert {p.device.type for p in m.parameters()} == {"cpu"}
    compare_error(lambda lib: build(lib).to(lib.int64))


def test_apply_visits_children_first():
    def fn(lib):
        seen = []
        build(lib).apply(lambda mod: seen.append(type(mod).__name__))
        return seen
    assert fn(ember) == fn(torch)


def test_custom_apply_function():
    def fn(lib):
        m = build(lib)
        m._apply(lambda t: t * 0 + 1 if t.is_floating_point() else t)
        return m.state_dict()
    assert_same(dict(fn(torch)), dict(fn(ember)))


# ---- forward and backward -------------------------------------------------------------------
def test_forward_and_gradients_match_torch():
    t, e = pair()
    x = np.random.randn(5, 4).astype(np.float32)
    tx = torch.tensor(x, requires_grad=True)
    ex = ember.tensor(x, requires_grad=True)
    to, eo = t(tx), e(ex)
    assert_same(to, eo, rtol=1e-5, atol=1e-5)
    to.square().sum().backward()
    eo.square().sum().backward()
    assert_same(tx.grad, ex.grad, rtol=1e-4, atol=1e-5)
    for (tn, tp), (en, ep) in zip(t.named_parameters(), e.named_parameters()):
        assert tn == en
        assert_same(tp.grad, ep.grad, rtol=1e-4, atol=1e-5)


def test_missing_forward():
    compare_error(lambda lib: lib.nn.Module()(1))


# ---- forward hooks ----------------------------------------------------------------------------
def _hook_log(lib):
    log = []
    m = build(lib)
    handles = []

    def pre(tag):
        def hook(mod, args):
            log.append(("pre", tag, type(mod).__name__, len(args)))
        return hook

    def pre_kw(mod, args, kwargs):
        log.append(("pre_kw", sorted(kwargs)))
        return (args[0] * 2,), kwargs

    def post(tag):
        def hook(mod, args, out):
            log.append(("post", tag, type(mod).__name__, tuple(out.shape)))
        return hook

    def post_kw(mod, args, kwargs, out):
        log.append(("post_kw", sorted(kwargs)))
        return out + 1

    handles.append(m.register_forward_pre_hook(pre("a")))
    handles.append(m.register_forward_pre_hook(pre("b"), prepend=True))
    handles.append(m.register_forward_pre_hook(pre_kw, with_kwargs=True))
    handles.append(m.enc.register_forward_pre_hook(lambda mod, args: (args[0] + 1,)))
    handles.append(m.enc.register_forward_pre_hook(lambda mod, args: args[0] * 3))
    handles.append(m.register_forward_hook(post("x")))
    handles.append(m.register_forward_hook(post("y"), prepend=True))
    handles.append(m.register_forward_hook(post_kw, with_kwargs=True))
    handles.append(m.head.proj.register_forward_hook(post("proj")))
    return log, m, handles


def test_forward_hooks_order_and_replacement():
    t_log, t, t_handles = _hook_log(torch)
    e_log, e, e_handles = _hook_log(ember)
    e.load_state_dict(ember_state(t.state_dict()))
    x = np.random.randn(2, 4).astype(np.float32)
    assert_same(t(torch.tensor(x)), e(ember.tensor(x)), rtol=1e-5, atol=1e-5)
    assert e_log == t_log
    for handle in e_handles[:3] + e_handles[5:]:
        handle.remove()
    for handle in t_handles[:3] + t_handles[5:]:
        handle.remove()
    t_log.clear()
    e_log.clear()
    assert_same(t(torch.tensor(x)), e(ember.tensor(x)), rtol=1e-5, atol=1e-5)
    assert e_log == t_log == []
    assert not e._forward_hooks and not e._forward_pre_hooks_with_kwargs
    assert not e._forward_hooks_with_kwargs


def test_forward_hook_always_call_and_bad_pre_hook_result():
    def fn(lib):
        log = []

        class Boom(lib.nn.Module):
            def forward(self, x):
                raise ValueError("boom")

        m = Boom()
        m.register_forward_hook(lambda mod, args, out: log.append(("always", out)),
                                always_call=True)
        m.register_forward_hook(lambda mod, args, out: log.append("normal"))
        with pytest.raises(ValueError, match="boom"):
            m(1)
        bad = lib.nn.Module()
        bad.register_forward_pre_hook(lambda mod, args, kwargs: 5, with_kwargs=True)
        with pytest.raises(RuntimeError) as info:
            bad(1)
        return log, str(info.value)

    assert fn(ember) == fn(torch)


def test_handle_context_manager_and_global_hooks():
    def fn(lib):
        log = []
        mm = lib.nn.modules.module
        m = build(lib)
        with mm.register_module_forward_pre_hook(lambda mod, a: log.append(("gpre",
                                                                          type(mod).__name__))):
            with mm.register_module_forward_hook(lambda mod, a, o: log.append(
                    ("gpost", type(mod).__name__))):
                m.register_forward_hook(lambda mod, a, o: log.append("local"))
                m.head(lib.ones(1, 3))
                m(lib.ones(1, 4))
        m(lib.ones(1, 4))
        return log

    assert fn(ember) == fn(torch)


def test_global_registration_hooks():
    def fn(lib):
        mm = lib.nn.modules.module
        log = []
        handles = [
            mm.register_module_buffer_registration_hook(
                lambda mod, name, buf: log.append(("buf", name)) or buf * 2),
            mm.register_module_parameter_registration_hook(
                lambda mod, name, p: log.append(("param", name))),
            mm.register_module_module_registration_hook(
                lambda mod, name, sub: log.append(("module", name))),
        ]
        try:
            m = make_classes(lib)[0](2, 2)
            m.child = lib.nn.Module()
            return log, m.calls.tolist()
        finally:
            for h in handles:
                h.remove()

    assert fn(ember) == fn(torch)


# ---- full backward hooks ----------------------------------------------------------------------
def _backward_hook_run(lib, a_requires_grad=True, b_requires_grad=True, replace=False,
                       pre_replace=False):
    _, _, _, TwoInOut = make_classes(lib)
    lib.manual_seed(0)
    m = TwoInOut()
    m.weight.data = lib.tensor(np.arange(9, dtype=np.float32).reshape(3, 3) / 10)
    log = []

    def pre_hook(mod, grad_output):
        log.append(("pre", [None if g is None else g.tolist() for g in grad_output]))
        if pre_replace:
            return tuple(None if g is None else g * 10 for g in grad_output)

    def hook(mod, grad_input, grad_output):
        log.append(("full", [None if g is None else g.tolist() for g in grad_input],
                    [None if g is None else g.tolist() for g in grad_output]))
        if replace:
            return tuple(None if g is None else g + 1 for g in grad_input)

    m.register_full_backward_pre_hook(pre_hook)
    m.register_full_backward_hook(hook)
    a = lib.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3),
                   requires_grad=a_requires_grad)
    b = lib.tensor(np.linspace(0, 2, 6, dtype=np.float32).reshape(2, 3),
                   requires_grad=b_requires_grad)
    out, total = m(a, "flag", b)
    (out.square().sum() + total.sum() * 3).backward()
    return (log, None if a.grad is None else a.grad.tolist(),
            None if b.grad is None else b.grad.tolist(), m.weight.grad.tolist())


def _close(x, y):
    if isinstance(x, (list, tuple)):
        assert isinstance(y, (list, tuple)) and len(x) == len(y), (x, y)
        for a, b in zip(x, y):
            _close(a, b)
    elif isinstance(x, float):
        assert y == pytest.approx(x, rel=1e-5, abs=1e-5)
    else:
        assert x == y


@pytest.mark.parametrize("kwargs", [
    {},
    {"b_requires_grad": False},
    {"a_requires_grad": False, "b_requires_grad": False},
    {"replace": True},
    {"pre_replace": True},
    {"pre_replace": True, "replace": True, "a_requires_grad": False},
])
def test_full_backward_hooks_match_torch(kwargs):
    no_input_grad = not kwargs.get("a_requires_grad", True) and \
        not kwargs.get("b_requires_grad", True)
    results = []
    for lib in (torch, ember):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            results.append(_backward_hook_run(lib, **kwargs))
        fired = [w for w in caught if "Full backward hook is firing" in str(w.message)]
        assert len(fired) == int(no_input_grad)
    _close(*results)


def test_backward_hook_order_in_nested_modules():
    def fn(lib):
        m = build(lib)
        log = []
        for name, mod in m.named_modules():
            mod.register_full_backward_pre_hook(lambda mod, go, name=name: log.append(("pre",
                                                                                      name)))
            mod.register_full_backward_hook(lambda mod, gi, go, name=name: log.append(("full",
                                                                                      name)))
        m(lib.ones(2, 4, requires_grad=True)).sum().backward()
        return log

    assert fn(ember) == fn(torch)


def test_global_backward_hooks():
    def fn(lib):
        mm = lib.nn.modules.module
        log = []
        m = make_classes(lib)[0](3, 2)
        with mm.register_module_full_backward_hook(
                lambda mod, gi, go: log.append(("g", [tuple(g.shape) for g in gi]))):
            m(lib.ones(4, 3, requires_grad=True)).sum().backward()
        m(lib.ones(4, 3, requires_grad=True)).sum().backward()
        return log

    assert fn(ember) == fn(torch)


# ---- state_dict hooks -------------------------------------------------------------------------
def test_state_dict_hooks():
    def fn(lib):
        log = []
        m = build(lib)
        m.register_state_dict_pre_hook(lambda mod, prefix, keep: log.append(("pre", prefix, keep)))

        def post(mod, state, prefix, meta):
            log.append(("post", prefix, sorted(meta)))
            state[prefix + "added"] = lib.zeros(1)

        m.enc.register_state_dict_post_hook(post)
        handle = m._register_state_dict_hook(
            lambda mod, state, prefix, meta: OrderedDict((k, v) for k, v in state.items()
                                                         if "bias" not in k))
        keys = [list(m.state_dict(keep_vars=True))]
        handle.remove()
        keys.append(list(m.state_dict()))
        bad = lib.nn.Module()
        bad.register_state_dict_post_hook(lambda mod, state, prefix, meta: {})
        with pytest.raises(RuntimeError, match="state_dict post-hook must return None"):
            bad.state_dict()
        return log, keys

    assert fn(ember) == fn(torch)


def test_load_state_dict_hooks():
    def fn(lib):
        log = []
        m = build(lib)

        def pre(mod, state, prefix, meta, strict, missing, unexpected, errors):
            log.append(("pre", type(mod).__name__, prefix, sorted(state)[:2], strict))
            state.pop(prefix + "scale", None)

        def post(mod, keys):
            log.append(("post", type(mod).__name__, list(keys.missing_keys),
                        list(keys.unexpected_keys)))
            keys.missing_keys.clear()

        m.register_load_state_dict_pre_hook(pre)
        m.head.register_load_state_dict_post_hook(post)
        m.register_load_state_dict_post_hook(post)
        state = m.state_dict()
        state["junk"] = lib.zeros(1)
        del state["head.proj.bias"]
        result = m.load_state_dict(state, strict=False)
        return log, repr(result)

    assert fn(ember) == fn(torch)


# ---- repr, dir, copies ------------------------------------------------------------------------
def test_repr_matches_torch():
    t, e = pair()
    same_repr(t, e)
    same_repr(t.head, e.head)
    same_repr(torch.nn.Module(), ember.nn.Module())

    def multi(lib):
        class Multi(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = lib.nn.Module()

            def extra_repr(self):
                return "line one\nline two"
        outer = lib.nn.Module()
        outer.m = Multi()
        outer.n = Multi()
        outer.n.deeper = Multi()
        outer.gone = None
        return outer
    same_repr(multi(torch), multi(ember))


def test_dir_lists_members():
    t, e = pair()
    td, ed = set(dir(t)), set(dir(e))
    for name in ("enc", "blocks", "scale", "steps", "forward", "state_dict", "training"):
        assert name in ed and name in td
    assert sorted(dir(e)) == dir(e)


def test_deepcopy_keeps_sharing_and_detaches_storage():
    _, e = pair()
    e(ember.ones(1, 4)).sum().backward()
    c = copy.deepcopy(e)
    assert c.again is c.enc and c.enc is not e.enc
    assert c.enc.weight is not e.enc.weight
    assert isinstance(c.enc.weight, ember.nn.Parameter) and c.enc.weight.requires_grad
    assert_same(dict(torch_like(e.state_dict())), dict(c.state_dict()))
    c.enc.weight.data.add_(1)
    assert not np.allclose(np.asarray(c.enc.weight.detach()), np.asarray(e.enc.weight.detach()))
    assert len(list(c.parameters())) == len(list(e.parameters()))


def torch_like(state):
    return OrderedDict((k, torch.tensor(np.asarray(v))) for k, v in state.items())


class PicklableNet(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = ember.nn.Parameter(ember.randn(2, 2))
        self.register_buffer("b", ember.arange(3))
        self.register_buffer("tmp", ember.zeros(1), persistent=False)
        self.child = ember.nn.Sequential(ember.nn.Module())
        self.tied = self.child

    def forward(self, x):
        return x @ self.w


def test_pickle_round_trip():
    m = PicklableNet()
    m.eval()
    m2 = pickle.loads(pickle.dumps(m))
    assert type(m2) is PicklableNet and not m2.training
    assert m2.tied is m2.child
    assert isinstance(m2.w, ember.nn.Parameter) and m2.w.requires_grad
    assert list(m2.state_dict()) == list(m.state_dict())
    assert m2._non_persistent_buffers_set == {"tmp"}
    np.testing.assert_array_equal(np.asarray(m2.w.detach()), np.asarray(m.w.detach()))
    np.testing.assert_array_equal(np.asarray(m2.b), np.asarray(m.b))


# ---- Parameter and Buffer ---------------------------------------------------------------------
def test_parameter_basics():
    def fn(lib):
        p = lib.nn.Parameter(lib.tensor([[1.0, 2.0], [3.0, 4.0]]))
        q = lib.nn.Parameter(lib.tensor([1.0]), requires_grad=False)
        empty = lib.nn.Parameter()
        derived = p * 2
        copied = copy.deepcopy(p)
        return (repr(p).replace("torch", "ember"), repr(q).replace("torch", "ember"),
                p.requires_grad, q.requires_grad, p.is_leaf, tuple(empty.shape),
                type(derived).__name__, type(copied).__name__, copied.requires_grad,
                isinstance(p, lib.Tensor), type(p.detach()).__name__,
                type(p.data).__name__)
    assert fn(ember) == fn(torch)


def test_integer_parameter():
    compare_error(lambda lib: lib.nn.Parameter(lib.tensor([1])))
    got = ember.nn.Parameter(ember.tensor([1]), requires_grad=False)
    assert repr(got) == repr(torch.nn.Parameter(torch.tensor([1]), requires_grad=False))


def test_parameter_shares_memory_and_pickles():
    t = ember.tensor([1.0, 2.0])
    p = ember.nn.Parameter(t)
    p.data.add_(1)
    assert t.tolist() == [2.0, 3.0]
    p2 = pickle.loads(pickle.dumps(p))
    assert type(p2) is ember.nn.Parameter and p2.requires_grad and p2.tolist() == [2.0, 3.0]


def test_buffer():
    def fn(lib):
        b = lib.nn.Buffer(lib.ones(2))
        nb = lib.nn.Buffer(lib.ones(2), persistent=False)
        m = lib.nn.Module()
        m.b = b
        m.nb = nb
        return (isinstance(b, lib.nn.Buffer), isinstance(lib.ones(1), lib.nn.Buffer),
                type(b).__name__, list(m._buffers), list(m.state_dict()))
    assert fn(ember) == fn(torch)


# ---- call overhead ----------------------------------------------------------------------------
def test_call_without_hooks_goes_straight_to_forward():
    class Id(ember.nn.Module):
        def forward(self, x):
            return x
    m = Id()
    assert m(5) == 5
    import timeit
    call = min(timeit.repeat(lambda: m(1), number=2000, repeat=3))
    direct = min(timeit.repeat(lambda: m.forward(1), number=2000, repeat=3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # generous bound: the check is a few dict truth tests, about one extra call
        assert call < direct * 4 + 1e-3


def test_legacy_backward_hook():
    def fn(lib):
        class Scale(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = lib.nn.Parameter(lib.tensor([2.0, 3.0]))

            def forward(self, x):
                return x * self.w

        m = Scale()
        log = []
        m.register_backward_hook(lambda mod, gi, go: log.append(
            ([g.tolist() for g in gi], [g.tolist() for g in go])))
        x = lib.tensor([1.0, -1.0], requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m(x).sum().backward()
        try:
            m.register_full_backward_hook(lambda *a: None)
        except RuntimeError as exc:
            log.append(str(exc))
        return log, [(w.category.__name__, str(w.message)) for w in caught]

    assert fn(ember) == fn(torch)


def test_backward_hooks_on_module_called_twice_and_under_no_grad():
    def fn(lib):
        m = make_classes(lib)[0](3, 3)
        with lib.no_grad():
            m.weight.copy_(lib.eye(3) * 0.5)
            m.bias.zero_()
        log = []
        m.register_full_backward_hook(lambda mod, gi, go: log.append((gi[0].tolist(),
                                                                      go[0].tolist())))
        m.register_full_backward_pre_hook(lambda mod, go: log.append(("pre", go[0].tolist())))
        x = lib.ones(1, 3, requires_grad=True)
        y = m(m(x) * 2)
        (y * lib.tensor([1.0, 2.0, 3.0])).sum().backward()
        with lib.no_grad():
            m(x)
        return log, x.grad.tolist()

    assert fn(ember) == fn(torch)
