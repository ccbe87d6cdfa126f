"""Containers against torch: the same sequence of operations on ``Sequential``, ``ModuleList``,
``ModuleDict``, ``ParameterList`` and ``ParameterDict`` gives the same names, order, repr,
state_dict keys and errors."""
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ember
from tests.torch_compare import assert_same, compare_error


def tagged(lib):
    class Tag(lib.nn.Module):
        """A module that prints its tag and adds it to its input."""

        def __init__(self, tag):
            super().__init__()
            self.tag = tag
            self.w = lib.nn.Parameter(lib.full((1,), float(tag)))

        def forward(self, x):
            return x * 10 + self.w

        def extra_repr(self):
            return f"tag={self.tag}"
    return Tag


def snapshot(m):
    """What must agree: repr, parameter names, state_dict keys."""
    return (repr(m).replace("torch", "ember"), [n for n, _ in m.named_parameters()],
            list(m.state_dict()))


def run_both(fn):
    got, expected = fn(ember), fn(torch)
    assert got == expected, f"\nember: {got}\ntorch: {expected}"


# ---- Sequential -------------------------------------------------------------------------------
@pytest.mark.parametrize("ops", [
    lambda s, T: s,
    lambda s, T: s[1],
    lambda s, T: s[-1],
    lambda s, T: s[1:],
    lambda s, T: s[::-2],
    lambda s, T: s.append(T(7)),
    lambda s, T: s.insert(1, T(8)),
    lambda s, T: s.insert(-1, T(8)),
    lambda s, T: s.insert(3, T(8)),
    lambda s, T: s.extend([T(5), T(6)]),
    lambda s, T: (s.pop(1), s)[1],
    lambda s, T: (s.__delitem__(0), s)[1],
    lambda s, T: (s.__delitem__(slice(0, 2)), s)[1],
    lambda s, T: (s.__setitem__(-1, T(9)), s)[1],
    lambda s, T: s + s[:1],
    lambda s, T: s * 2,
    lambda s, T: 2 * s,
    lambda s, T: s.__iadd__(s[:1]),
    lambda s, T: s.__imul__(2),
])
def test_sequential_operations(ops):
    def fn(lib):
        T = tagged(lib)
        s = lib.nn.Sequential(T(1), T(2), T(3))
        out = ops(s, T)
        return snapshot(out) + (len(s),)
    run_both(fn)


def test_sequential_ordered_dict_and_forward():
    def fn(lib):
        T = tagged(lib)
        s = lib.nn.Sequential(OrderedDict([("first", T(1)), ("second", T(2))]))
        return snapshot(s), s(lib.ones(2)).tolist(), [type(m).__name__ for m in s], \
            s.first.tag, "first" in dir(s)
    run_both(fn)


@pytest.mark.parametrize("bad", [
    lambda s, lib: s[3],
    lambda s, lib: s[-4],
    lambda s, lib: s["a"],
    lambda s, lib: s.insert(5, tagged(lib)(0)),
    lambda s, lib: s.insert(0, 3),
    lambda s, lib: s + lib.nn.ModuleList(),
    lambda s, lib: s * 0,
    lambda s, lib: s * 1.5,
    lambda s, lib: s.append(3),
])
def test_sequential_errors(bad):
    def fn(lib):
        T = tagged(lib)
        bad(lib.nn.Sequential(T(1), T(2), T(3)), lib)
    compare_error(fn)


def test_empty_sequential_is_identity_and_dir_hides_indices():
    def fn(lib):
        s = lib.nn.Sequential()
        T = tagged(lib)
        t = lib.nn.Sequential(T(1), T(2))
        return repr(s), s(lib.ones(1)).tolist(), len(s), "0" in dir(t), "append" in dir(t)
    run_both(fn)


# ---- ModuleList -------------------------------------------------------------------------------
@pytest.mark.parametrize("ops", [
    lambda m, T: m,
    lambda m, T: m[1:],
    lambda m, T: m.append(T(7)),
    lambda m, T: m.extend([T(5), T(6)]),
    lambda m, T: (m.insert(1, T(8)), m)[1],
    lambda m, T: (m.insert(0, T(8)), m)[1],
    lambda m, T: (m.pop(-1), m)[1],
    lambda m, T: (m.__delitem__(slice(None, None, 2)), m)[1],
    lambda m, T: (m.__setitem__(0, T(4)), m)[1],
    lambda m, T: m + m,
    lambda m, T: m.__iadd__([T(3)]),
])
def test_module_list_operations(ops):
    def fn(lib):
        T = tagged(lib)
        shared = T(2)
        m = lib.nn.ModuleList([T(1), shared, shared, T(2), T(3)])
        out = ops(m, T)
        return snapshot(out) + (len(m), [mod.tag for mod in m])
    run_both(fn)


def test_module_list_repr_collapses_repeats():
    def fn(lib):
        T = tagged(lib)
        inner = lib.nn.ModuleList([T(0), T(0)])
        return repr(lib.nn.ModuleList([T(1), T(1), T(1), T(2), inner, T(2), T(2)])), \
            repr(lib.nn.ModuleList())
    got, expected = fn(ember), fn(torch)
    assert got == expected


@pytest.mark.parametrize("bad", [
    lambda m, lib: m[5],
    lambda m, lib: m[-6],
    lambda m, lib: m.extend(3),
    lambda m, lib: m.append(3),
    lambda m, lib: m(1),
])
def test_module_list_errors(bad):
    def fn(lib):
        T = tagged(lib)
        bad(lib.nn.ModuleList([T(i) for i in range(5)]), lib)
    compare_error(fn)


# ---- ModuleDict -------------------------------------------------------------------------------
@pytest.mark.parametrize("ops", [
    lambda d, T: d,
    lambda d, T: (d.update({"z": T(9), "a": T(8)}), d)[1],
    lambda d, T: (d.update([("k", T(7))]), d)[1],
    lambda d, T: (d.pop("b"), d)[1],
    lambda d, T: (d.__delitem__("a"), d)[1],
    lambda d, T: (d.__setitem__("c", T(3)), d)[1],
    lambda d, T: (d.clear(), d)[1],
])
def test_module_dict_operations(ops):
    def fn(lib):
        T = tagged(lib)
        d = lib.nn.ModuleDict({"b": T(2), "a": T(1)})
        out = ops(d, T)
        return snapshot(out) + (list(d.keys()), [m.tag for m in d.values()],
                                [k for k, _ in d.items()], list(d), "a" in d, len(d))
    run_both(fn)


@pytest.mark.parametrize("bad", [
    lambda d, lib: d["missing"],
    lambda d, lib: d.update(3),
    lambda d, lib: d.update([("a",)]),
    lambda d, lib: d.update([3]),
    lambda d, lib: d.__setitem__("x", 3),
])
def test_module_dict_errors(bad):
    def fn(lib):
        bad(lib.nn.ModuleDict({"a": tagged(lib)(1)}), lib)
    compare_error(fn)


# ---- ParameterList / ParameterDict ------------------------------------------------------------
def test_parameter_list():
    def fn(lib):
        p = lib.nn.ParameterList([lib.zeros(2, 3), lib.nn.Parameter(lib.ones(1))])
        p.append(lib.ones(4, dtype=lib.float64))
        p.extend([lib.zeros(1)])
        p += [lib.ones(2)]
        p.append("not a tensor")
        sliced = p[1:3]
        p[0] = lib.full((2,), 5.0)
        return (repr(p).replace("torch", "ember"), len(p), [n for n, _ in p.named_parameters()],
                list(p.state_dict()), type(p[1]).__name__, p[1].requires_grad, p[-2].shape[0],
                repr(sliced).replace("torch", "ember"), p[0].tolist(), p[5],
                [type(x).__name__ for x in p], "0" in dir(p))
    got, expected = fn(ember), fn(torch)
    assert got == expected


def test_parameter_list_errors():
    compare_error(lambda lib: lib.nn.ParameterList([lib.zeros(1)])[3])
    compare_error(lambda lib: lib.nn.ParameterList([lib.zeros(1)])(1))
    compare_error(lambda lib: lib.nn.ParameterList().extend(lib.zeros(2)))


def test_parameter_dict():
    def fn(lib):
        d = lib.nn.ParameterDict({"b": lib.zeros(2), "a": lib.nn.Parameter(lib.ones(3))})
        d["c"] = lib.ones(1, dtype=lib.float64)
        d.update(OrderedDict(z=lib.zeros(1), y=lib.zeros(2)))
        d.update([("x", lib.zeros(1))])
        d["s"] = "text"
        order = list(d)
        popped = d.pop("z")
        d.setdefault("new", lib.ones(1))
        d.setdefault("a", lib.ones(7))
        got = d.get("missing", 4)
        k, _ = d.popitem()
        c = d.copy()
        merged = d | lib.nn.ParameterDict({"m": lib.zeros(1)})
        del d["b"]
        return (repr(d).replace("torch", "ember"), order, [n for n, _ in d.named_parameters()],
                list(d.state_dict()), list(reversed(d)), type(popped).__name__, got, k,
                list(c.keys()), list(merged.keys()), "a" in d, len(d), d["a"].shape[0],
                [type(v).__name__ for v in d.values()], [kk for kk, _ in d.items()],
                list(lib.nn.ParameterDict().fromkeys(["p", "q"], lib.zeros(1)).keys()))
    got, expected = fn(ember), fn(torch)
    assert got == expected


def test_parameter_dict_errors():
    compare_error(lambda lib: lib.nn.ParameterDict()[3])
    compare_error(lambda lib: lib.nn.ParameterDict().__setitem__(1, lib.zeros(1)))
    compare_error(lambda lib: lib.nn.ParameterDict({"a": lib.zeros(1)})(1))
    compare_error(lambda lib: lib.nn.ParameterDict().update(3))
    compare_error(lambda lib: lib.nn.ParameterDict().update([("a", 1, 2)]))
    compare_error(lambda lib: lib.nn.ParameterDict()["missing"])


# ---- containers inside models ------------------------------------------------------------------
def build_model(lib):
    T = tagged(lib)

    class Model(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.seq = lib.nn.Sequential(T(1), lib.nn.Sequential(T(2), T(3)))
            self.layers = lib.nn.ModuleList([T(4), T(5)])
            self.heads = lib.nn.ModuleDict({"x": T(6)})
            self.plist = lib.nn.ParameterList([lib.ones(2), lib.zeros(2)])
            self.pdict = lib.nn.ParameterDict({"scale": lib.ones(2)})

        def forward(self, x):
            x = self.seq(x)
            for layer in self.layers:
                x = layer(x)
            x = self.heads["x"](x)
            return (x + self.plist[0] + self.plist[1]) * self.pdict["scale"]

    return Model()


def test_nested_containers_state_dict_forward_and_grad():
    t, e = build_model(torch), build_model(ember)
    assert snapshot(e) == snapshot(t)
    e.load_state_dict(OrderedDict((k, ember.tensor(v.numpy())) for k, v in t.state_dict().items()))
    x = np.linspace(-1, 1, 2).astype(np.float32)
    to, eo = t(torch.tensor(x)), e(ember.tensor(x))
    assert_same(to, eo, rtol=1e-5, atol=1e-3)
    to.sum().backward()
    eo.sum().backward()
    for (tn, tp), (en, ep) in zip(t.named_parameters(), e.named_parameters()):
        assert tn == en
        assert_same(tp.grad, ep.grad)
    e.double()
    assert {str(p.dtype) for p in e.parameters()} == {"ember.float64"}
