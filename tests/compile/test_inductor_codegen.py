"""Compiled inference: generated code over arrays equal to eager (and to torch), dispatch-free,
with a fallback for ops it does not lower."""
import sys

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.fx.experimental.proxy_tensor import make_fx
from ember._inductor import aot_eager
from ember._inductor.compile_fx import compile_fx


def _close(a, b, tol=1e-5):
    a = a.detach().numpy() if hasattr(a, "detach") else a
    b = b.detach().numpy() if hasattr(b, "detach") else b
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _mlp(seed=0):
    ember.manual_seed(seed)
    return nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 32), nn.GELU(),
                         nn.Linear(32, 5))


def _torch_mlp(m):
    t = torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32),
                            torch.nn.GELU(), torch.nn.Linear(32, 5))
    t.load_state_dict({k: torch.tensor(v.numpy()) for k, v in m.state_dict().items()})
    return t


@pytest.mark.parametrize("batch", [1, 8])
def test_compiled_mlp_matches_eager_and_torch(batch):
    m = _mlp()
    x = ember.randn(batch, 12)
    compiled = compile_fx(make_fx(m)(x), [x])
    with ember.no_grad():
        out = compiled(x)
        _close(out, m(x))
    assert out.dtype is ember.float32 and tuple(out.shape) == (batch, 5)
    with torch.no_grad():
        _close(out, _torch_mlp(m)(torch.tensor(x.numpy())).numpy())


def test_compiled_forward_dispatches_no_ember_op(monkeypatch):
    m = _mlp()
    x = ember.randn(1, 12)
    compiled = compile_fx(make_fx(m)(x), [x])
    with ember.no_grad():
        expected = m(x)

        def refuse(*args, **kwargs):
            raise AssertionError("an Ember op ran inside the compiled graph")
        matmul_ops = sys.modules["ember.ops.matmul"]  # (ember.ops.matmul is also the op)
        activation_ops = sys.modules["ember.ops.activation"]
        for mod, name in [(F, "linear"), (F, "relu"), (F, "gelu"), (matmul_ops, "addmm"),
                          (activation_ops, "relu"), (activation_ops, "gelu"),
                          (ember.Tensor, "matmul"), (ember.Tensor, "__add__")]:
            monkeypatch.setattr(mod, name, refuse)
        with pytest.raises(AssertionError, match="Ember op ran"):
            m(x)
        _close(compiled(x), expected)
    assert "__f" not in compiled.source  # no fallback call in the generated code


def test_source_is_inspectable_python():
    m = _mlp()
    x = ember.randn(2, 12)
    compiled = compile_fx(make_fx(m)(x), [x])
    src = compiled.source
    assert src.startswith("def forward(arg0_1__t):")
    assert "__K.linear(" in src and "xp.maximum(" in src and "out=__b" in src
    compile(src, "<check>", "exec")


def test_unsupported_op_runs_through_the_fallback():
    def f(x):
        return ember.cumsum(x, 1).sort(dim=1).values.relu() * 2
    x = ember.randn(3, 4)
    compiled = compile_fx(make_fx(f)(x), [x])
    with ember.no_grad():
        _close(compiled(x), f(x))
    assert "__f" in compiled.source  # cumsum and sort call the Ember ops


def test_cnn_with_batch_norm_in_eval_matches_eager():
    ember.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(),
                      nn.MaxPool2d(2), nn.Conv2d(6, 4, 3, stride=2), nn.BatchNorm2d(4),
                      nn.ReLU(), nn.Flatten(), nn.Linear(4, 3)).eval()
    for bn in (m[1], m[5]):
        bn.running_mean.normal_()
        bn.running_var.uniform_(0.5, 2.0)
    x = ember.randn(2, 3, 8, 8)
    compiled = compile_fx(make_fx(m)(x), [x])
    with ember.no_grad():
        _close(compiled(x), m(x), tol=1e-4)
    assert "__K.conv2d(" in compiled.source


def test_transformer_encoder_layer_in_eval_matches_eager():
    ember.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.1, batch_first=True).eval()
    x = ember.randn(2, 5, 16)
    compiled = compile_fx(make_fx(layer)(x), [x])
    with ember.no_grad():
        _close(compiled(x), layer(x), tol=1e-5)
    assert "__K.layer_norm(" in compiled.source


def test_float64_and_mixed_dtypes_promote_as_eager():
    def f(x, i):
        return (x * 2 + 1).tanh(), i + 1.5, (i * 2).sum(), x.to(ember.float32) + i
    x = ember.randn(3, 4, dtype=ember.float64)
    i = ember.arange(12).reshape(3, 4)
    compiled = compile_fx(make_fx(f)(x, i), [x, i])
    with ember.no_grad():
        got, want = compiled(x, i), f(x, i)
    for a, b in zip(got, want):
        assert a.dtype is b.dtype and tuple(a.shape) == tuple(b.shape)
        _close(a, b)


def test_output_structure_and_returned_inputs():
    def f(x, y):
        return {"sum": x + y, "pair": [x * y, (y,)], "n": 3}
    x, y = ember.randn(2), ember.randn(2)
    compiled = compile_fx(make_fx(f)(x, y), [x, y])
    with ember.no_grad():
        out = compiled(x, y)
    assert set(out) == {"sum", "pair", "n"} and out["n"] == 3
    assert out["pair"][1][0] is y
    _close(out["sum"], x + y)


def test_graph_with_an_in_place_write_runs_as_captured():
    def f(x):
        y = x * 2
        y.add_(1)
        return y
    x = ember.randn(3)
    compiled = compile_fx(make_fx(f)(x), [x])
    with ember.no_grad():
        _close(compiled(x), f(x))
    assert compiled.eager_only


def test_inference_mode_is_used_under_no_grad_even_with_parameters():
    m = _mlp()
    x = ember.randn(2, 12)
    compiled = compile_fx(make_fx(m)(x), [x])
    with ember.no_grad():
        out = compiled(x)
    assert out.grad_fn is None and not out.requires_grad
    assert "inference" in compiled.sources and len(compiled.sources) == 1
    out = compiled(x)  # grad mode on, parameters require grad: the training graph
    assert out.requires_grad and type(out.grad_fn).__name__ == "CompiledFunctionBackward"


def test_aot_eager_inference_runs_the_graph_as_captured():
    m = _mlp()
    x = ember.randn(2, 12)
    gm = make_fx(m)(x)
    compiled = aot_eager(gm, [x])
    with ember.no_grad():
        _close(compiled(x), m(x))
