"""``replace_pattern`` against ``torch.fx.replace_pattern`` on the same modules and patterns."""
import numpy as np
import pytest
import torch
import torch.fx

import ember
import ember.fx
from fx_models import signature, normalised_code, to_numpy


def _doc_example(lib):
    """torch.fx's documented example: two ``cat(...).sum()`` become ``stack(...)``."""
    class M(lib.nn.Module):
        def forward(self, x, w1, w2):
            m1 = lib.cat([w1, w2]).sum()
            m2 = lib.cat([w1, w2]).sum()
            return x + lib.max(m1) + lib.max(m2)

    def pattern(w1, w2):
        return lib.cat([w1, w2]).sum()

    def replacement(w1, w2):
        return lib.stack([w1, w2])
    gm = lib.fx.symbolic_trace(M())
    return gm, lib.fx.replace_pattern(gm, pattern, replacement)


def _match_summary(matches):
    return [(m.anchor.name, sorted((k.name, v.name) for k, v in m.nodes_map.items()))
            for m in matches]


def test_documented_example_matches_torch():
    (tg, tmatches), (eg, ematches) = _doc_example(torch), _doc_example(ember)
    assert _match_summary(ematches) == _match_summary(tmatches)
    assert signature(eg) == signature(tg)
    assert normalised_code(eg, "ember") == normalised_code(tg, "torch")
    eg.graph.lint()
    x, w1, w2 = ember.ones(2), ember.tensor([1.0, 5.0]), ember.tensor([2.0, 3.0])
    np.testing.assert_array_equal(to_numpy(eg(x, w1, w2)), [11.0, 11.0])


def _shared_inner_value(lib):
    """A match whose inner value is read outside it is not replaced."""
    class M(lib.nn.Module):
        def forward(self, x):
            a = lib.relu(x)
            b = lib.sigmoid(a)
            c = lib.relu(x * 2)
            d = lib.sigmoid(c)
            return b + d + a

    def pattern(x):
        return lib.sigmoid(lib.relu(x))

    def replacement(x):
        return lib.tanh(x)
    gm = lib.fx.symbolic_trace(M())
    return gm, lib.fx.replace_pattern(gm, pattern, replacement)


def test_matches_whose_inner_values_escape_are_skipped_like_torch():
    (tg, tmatches), (eg, ematches) = _shared_inner_value(torch), _shared_inner_value(ember)
    assert len(ematches) == len(tmatches) == 1
    assert signature(eg) == signature(tg)
    x = ember.tensor([-1.0, 0.5])
    expected = ember.sigmoid(ember.relu(x)) + ember.tanh(x * 2) + ember.relu(x)
    np.testing.assert_allclose(to_numpy(eg(x)), to_numpy(expected), rtol=1e-6)


def _method_and_literals(lib):
    class M(lib.nn.Module):
        def forward(self, x):
            y = x.transpose(0, 1).contiguous()
            z = x.transpose(1, 0).contiguous()  # other literals: no match
            return y + z

    def pattern(x):
        return x.transpose(0, 1).contiguous()

    def replacement(x):
        return x.t()
    gm = lib.fx.symbolic_trace(M())
    return gm, lib.fx.replace_pattern(gm, pattern, replacement)


def test_call_method_patterns_and_literal_arguments_like_torch():
    (tg, tmatches), (eg, ematches) = _method_and_literals(torch), _method_and_literals(ember)
    assert len(ematches) == len(tmatches) == 1
    assert signature(eg) == signature(tg)
    x = ember.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(to_numpy(eg(x)), to_numpy(x.t() + x.t()))


def test_replacement_arity_must_match():
    _, _ = _doc_example(ember)

    class M(ember.nn.Module):
        def forward(self, x):
            return ember.relu(x)
    gm = ember.fx.symbolic_trace(M())
    with pytest.raises(ValueError, match="replacement takes 2 inputs but the pattern takes 1"):
        ember.fx.replace_pattern(gm, lambda x: ember.relu(x), lambda x, y: x + y)
