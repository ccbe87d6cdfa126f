"""``scaled_dot_product_attention``, ``multi_head_attention_forward`` and ``MultiheadAttention``
against PyTorch: outputs, input / parameter / float-mask gradients for every mask kind (boolean
and float, 2-D, 3-D and broadcast 4-D, key padding), ``is_causal``, ``scale``, ``enable_gqa``,
``batch_first``, kdim/vdim, bias_k/bias_v, zero attention, unbatched inputs; fully masked rows
as PyTorch gives them (zeros in SDPA, NaN in the weights path and in the fused inference
path); dropout by its statistics; float64 gradcheck and gradgradcheck; errors."""

import numpy as np
import pytest
import torch

import ember
from torch_compare import assert_same, compare_error

@pytest.fixture(autouse=True, scope="module")
def _torch_single_thread():
    """PyTorch's worker threads spin on a loaded 2-core machine (small ops take 20 ms instead
    of 20 us); the oracle runs single-threaded here and gets its setting back afterwards."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


rng = np.random.default_rng(0)


def _array(*shape, dtype=np.float64):
    return rng.standard_normal(shape).astype(dtype)


def _to(lib, value, requires_grad=False):
    if isinstance(value, np.ndarray):
        return lib.tensor(value, requires_grad=requires_grad and value.dtype != bool)
    return value


def _sdpa_run(lib, arrays, mask=None, mask_grad=False, **kw):
    q, k, v = (lib.tensor(a, requires_grad=True) for a in arrays)
    m = _to(lib, mask, mask_grad)
    out = lib.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m, **kw)
    upstream = np.random.default_rng(1).standard_normal(tuple(out.shape)).astype(arrays[0].dtype)
    out.backward(lib.tensor(upstream))
    grads = [q.grad, k.grad, v.grad]
    if mask_grad:
        grads.append(m.grad)
    return [out] + grads


SDPA_CASES = [
    # (q shape, k shape, v shape, mask shape or None, mask kind, kwargs)
    ((2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6), None, None, {}),
    ((2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6), (4, 5), "bool", {}),
    ((2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6), (2, 1, 1, 5), "bool", {}),
    ((2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6), (4, 5), "float", {}),
    ((2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6), (2, 3, 4, 5), "float", {"scale": 0.3}),
    ((2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6), None, None, {"is_causal": True}),
    ((2, 3, 6, 8), (2, 3, 4, 8), (2, 3, 4, 8), None, None, {"is_causal": True}),
    ((2, 3, 5, 8), (2, 3, 5, 8), (2, 3, 5, 8), None, None, {"is_causal": True, "scale": 2.0}),
    ((3, 4, 8), (3, 5, 8), (3, 5, 2), (4, 5), "bool", {}),            # no head dimension
    ((4, 8), (5, 8), (5, 3), (4, 5), "float", {}),                     # unbatched
    ((2, 3, 4, 8), (1, 3, 5, 8), (1, 3, 5, 6), None, None, {}),        # broadcast batch
    ((2, 4, 3, 8), (2, 2, 5, 8), (2, 2, 5, 8), (3, 5), "bool", {"enable_gqa": True}),
    ((2, 6, 3, 4), (2, 3, 5, 4), (2, 1, 5, 4), None, None, {"enable_gqa": True}),
    ((2, 2, 0, 8), (2, 2, 5, 8), (2, 2, 5, 6), None, None, {}),        # no queries
]


def _mask_array(shape, kind):
    if kind == "bool":
        mask = rng.random(shape) > 0.4
        mask[..., 0] = True  # every row keeps a key; fully masked rows are tested on their own
        return mask
    return _array(*shape)


@pytest.mark.parametrize("case", SDPA_CASES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sdpa_matches_torch(case, dtype):
    q_shape, k_shape, v_shape, mask_shape, kind, kw = case
    arrays = [_array(*s, dtype=dtype) for s in (q_shape, k_shape, v_shape)]
    mask = None if mask_shape is None else _mask_array(mask_shape, kind)
    if kind == "float":
        mask = mask.astype(dtype)
    tol = dict(rtol=1e-9, atol=1e-11) if dtype == np.float64 else dict(rtol=1e-4, atol=1e-5)
    assert_same(_sdpa_run(torch, arrays, mask, **kw), _sdpa_run(ember, arrays, mask, **kw), **tol)


def test_sdpa_float_mask_gets_a_gradient():
    arrays = [_array(2, 2, 3, 4), _array(2, 2, 5, 4), _array(2, 2, 5, 4)]
    for mask in (_array(3, 5), _array(2, 1, 3, 5)):
        assert_same(_sdpa_run(torch, arrays, mask, mask_grad=True),
                    _sdpa_run(ember, arrays, mask, mask_grad=True), rtol=1e-9, atol=1e-11)


def test_sdpa_float32_mask_with_float64_query():
    arrays = [_array(1, 2, 3, 4), _array(1, 2, 5, 4), _array(1, 2, 5, 4)]
    mask = _array(3, 5, dtype=np.float32)
    assert_same(_sdpa_run(torch, arrays, mask), _sdpa_run(ember, arrays, mask), rtol=1e-7,
                atol=1e-9)


def test_sdpa_fully_masked_rows_are_zero_with_zero_gradient():
    arrays = [_array(2, 2, 4, 8), _array(2, 2, 5, 8), _array(2, 2, 5, 8)]
    bool_mask = rng.random((4, 5)) > 0.3
    bool_mask[1] = False
    float_mask = np.where(bool_mask, 0.0, -np.inf)
    for mask in (bool_mask, float_mask):
        expected = _sdpa_run(torch, arrays, mask)
        actual = _sdpa_run(ember, arrays, mask)
        assert_same(expected, actual, rtol=1e-9, atol=1e-11)
        assert np.all(np.asarray(actual[0].detach())[:, :, 1] == 0)


def test_sdpa_without_keys_is_zero():
    arrays = [_array(2, 2, 3, 4), _array(2, 2, 0, 4), _array(2, 2, 0, 4)]
    assert_same(_sdpa_run(torch, arrays), _sdpa_run(ember, arrays))


def test_sdpa_half_precision():
    arrays = [_array(2, 2, 4, 8, dtype=np.float32) for _ in range(3)]

    def fn(lib):
        q, k, v = (lib.tensor(a).to(lib.bfloat16) for a in arrays)
        return lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).float()
    expected, actual = fn(torch), fn(ember)
    np.testing.assert_allclose(np.asarray(actual), expected.numpy(), rtol=0.02, atol=0.02)


def test_sdpa_on_second_device_and_mixed_devices(device):
    arrays = [_array(1, 2, 3, 4) for _ in range(3)]
    q, k, v = (ember.tensor(a, device=device, requires_grad=True) for a in arrays)
    out = ember.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert out.device.type == device
    out.sum().backward()
    assert q.grad.device.type == device
    expected = torch.nn.functional.scaled_dot_product_attention(
        *(torch.tensor(a) for a in arrays), is_causal=True)
    np.testing.assert_allclose(np.asarray(out.detach().cpu()), expected.numpy(), rtol=1e-10)
    if device != "cpu":
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            ember.nn.functional.scaled_dot_product_attention(q, ember.tensor(arrays[1]), v)


@pytest.mark.parametrize("kw", [{}, {"is_causal": True}, {"mask": "bool"}, {"mask": "float"},
                                {"mask": "dead_row"}])
def test_sdpa_gradcheck_and_gradgradcheck(kw):
    kw = dict(kw)
    kind = kw.pop("mask", None)
    q, k, v = (ember.tensor(_array(1, 2, 3, 4), requires_grad=True) for _ in range(3))
    inputs = [q, k, v]
    mask = None
    if kind == "bool":
        mask = ember.tensor(np.array([[True, False, True], [True, True, False],
                                      [False, False, True]]))
    elif kind == "dead_row":
        mask = ember.tensor(np.array([[True, False, True], [False, False, False],
                                      [False, True, True]]))
    elif kind == "float":
        mask = ember.tensor(_array(3, 3), requires_grad=True)
        inputs.append(mask)

    def fn(q, k, v, *rest):
        m = rest[0] if rest else mask
        return ember.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m, **kw)
    assert ember.autograd.gradcheck(fn, inputs)
    assert ember.autograd.gradgradcheck(fn, inputs)


def test_sdpa_dropout_gradient_matches_its_sampled_mask():
    q, k, v = (ember.tensor(_array(1, 2, 3, 4), requires_grad=True) for _ in range(3))

    def fn(q, k, v):
        ember.manual_seed(7)  # the same dropped pattern on every evaluation
        return ember.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=0.4)
    assert ember.autograd.gradcheck(fn, [q, k, v])


def test_sdpa_dropout_statistics():
    # Dropout acts on the (L, S) attention weights, so the statistics need many query rows.
    generator = np.random.default_rng(3)
    q = ember.tensor(generator.standard_normal((1, 1, 2000, 8)) * 0.3)
    k = ember.tensor(generator.standard_normal((1, 1, 16, 8)))
    v = ember.ones(1, 1, 16, 2, dtype=ember.float64)
    plain = ember.nn.functional.scaled_dot_product_attention(q, k, v)
    ember.manual_seed(0)
    dropped = ember.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=0.3)
    ember.manual_seed(0)
    again = ember.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=0.3)
    assert ember.equal(dropped, again)
    assert not ember.equal(dropped, plain)
    # With v all ones each output is the sum of kept, rescaled probabilities: mean 1.
    values = np.asarray(dropped)
    assert abs(values.mean() - 1.0) < 0.05
    assert values.std() > 0.05
    zero = ember.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=1.0)
    assert np.all(np.asarray(zero) == 0)


def test_sdpa_errors():
    q, k, v = _array(2, 4, 3, 8), _array(2, 4, 5, 8), _array(2, 4, 5, 6)

    def call(*arrays, mask=None, **kw):
        def fn(lib):
            tensors = [lib.tensor(a) for a in arrays]
            m = None if mask is None else lib.tensor(mask)
            return lib.nn.functional.scaled_dot_product_attention(*tensors, attn_mask=m, **kw)
        return fn
    compare_error(call(q, k, v, mask=np.zeros((3, 5)), is_causal=True))
    compare_error(call(q, k.astype(np.float32), v))
    compare_error(call(q, k, v, mask=np.zeros((3, 5), dtype=np.int64)))
    compare_error(call(q, k, v, mask=np.zeros((3, 5), dtype=np.float16)))
    compare_error(call(q, k, v, dropout_p=1.5))
    compare_error(call(q, k[:, :3], v[:, :3], enable_gqa=True))
    compare_error(call(q[0, 0, 0], k[0, 0, 0], v[0, 0, 0]))
    compare_error(call(q[:1, :1], k[:1, :1], v[:1, :1], mask=np.zeros((2, 3, 3, 5))))
    compare_error(call(q, k[..., :7], v))


# ---------------------------------------------------------------------------------------------
# MultiheadAttention
# ---------------------------------------------------------------------------------------------

def _copy_state(torch_module, ember_module):
    assert list(ember_module.state_dict()) == list(torch_module.state_dict())
    ember_module.load_state_dict({k: ember.tensor(v.detach().numpy())
                                  for k, v in torch_module.state_dict().items()})


def _mha_pair(embed_dim=8, num_heads=2, **kw):
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(embed_dim, num_heads, **kw).double()
    em = ember.nn.MultiheadAttention(embed_dim, num_heads, **kw).double()
    _copy_state(tm, em)
    return tm, em


def _mha_run(lib, module, inputs, call_kw, grad=True):
    tensors = [lib.tensor(x, requires_grad=grad) for x in inputs]
    args = tensors * 3 if len(tensors) == 1 else tensors
    kw = {k: _to(lib, v) for k, v in call_kw.items()}
    if grad:
        out, weights = module(*args, **kw)
    else:
        with lib.no_grad():
            out, weights = module(*args, **kw)
    results = [out, weights]
    if grad and not torch.isnan(torch.tensor(np.asarray(out.detach()))).any():
        loss = out.sum() if weights is None else out.sum() + (weights * 0.5).sum()
        loss.backward()
        results += [t.grad for t in tensors]
        results += [p.grad for p in module.parameters()]
    return results


def _mha_compare(module_kw, call_kw, inputs, train=True, grad=True):
    tm, em = _mha_pair(**module_kw)
    tm.train(train)
    em.train(train)
    expected = _mha_run(torch, tm, inputs, call_kw, grad)
    actual = _mha_run(ember, em, inputs, call_kw, grad)
    assert_same(expected, actual, rtol=1e-8, atol=1e-10)


_L, _N, _E = 4, 3, 8
_KPM = np.zeros((_N, _L), bool)
_KPM[1, 2:] = True
_BOOL_MASK = rng.random((_L, _L)) > 0.7
np.fill_diagonal(_BOOL_MASK, False)
_CAUSAL = np.triu(np.full((_L, _L), -np.inf), 1)

MHA_CALLS = [
    {},
    {"need_weights": False},
    {"average_attn_weights": False},
    {"key_padding_mask": _KPM},
    {"key_padding_mask": np.where(_KPM, -np.inf, 0.0)},
    {"attn_mask": _BOOL_MASK},
    {"attn_mask": _BOOL_MASK, "key_padding_mask": _KPM, "need_weights": False},
    {"attn_mask": _array(_L, _L)},
    {"attn_mask": _array(_N * 2, _L, _L)},
    {"attn_mask": rng.random((_N * 2, _L, _L)) > 0.8, "need_weights": False},
    {"attn_mask": _CAUSAL, "is_causal": True, "need_weights": False},
    {"attn_mask": _CAUSAL, "is_causal": True},
    {"attn_mask": _CAUSAL, "is_causal": True, "key_padding_mask": np.where(_KPM, -np.inf, 0.0),
     "need_weights": False},
]
MHA_MODULES = [{}, {"bias": False}, {"add_bias_kv": True}, {"add_zero_attn": True},
               {"add_bias_kv": True, "add_zero_attn": True, "bias": False}]


# Every call with the plain module; each module variant with the calls that exercise what it
# changes (extra key columns in every mask kind); the full cross product is marked slow.
_VARIANT_CALLS = (3, 6, 8, 12)
MHA_GRID = [pytest.param(m, c, marks=() if not i or j in _VARIANT_CALLS else pytest.mark.slow)
            for i, m in enumerate(MHA_MODULES) for j, c in enumerate(MHA_CALLS)]


@pytest.mark.parametrize("module_kw,call_kw", MHA_GRID)
@pytest.mark.parametrize("batch_first", [False, True])
def test_mha_self_attention_matches_torch(module_kw, call_kw, batch_first):
    x = _array(_N, _L, _E) if batch_first else _array(_L, _N, _E)
    kw = dict(module_kw, batch_first=batch_first)
    _mha_compare(kw, call_kw, [x], train=True)
    _mha_compare(kw, call_kw, [x], train=False, grad=False)


@pytest.mark.parametrize("module_kw", [{}, {"kdim": 6, "vdim": 5}, {"kdim": 6, "vdim": 5,
                                                                      "add_bias_kv": True}])
@pytest.mark.parametrize("batch_first", [False, True])
def test_mha_cross_attention_matches_torch(module_kw, batch_first):
    kdim, vdim = module_kw.get("kdim", _E), module_kw.get("vdim", _E)
    source = 5

    def shaped(length, dim):
        return _array(_N, length, dim) if batch_first else _array(length, _N, dim)
    inputs = [shaped(_L, _E), shaped(source, kdim), shaped(source, vdim)]
    kpm = np.zeros((_N, source), bool)
    kpm[0, 3:] = True
    kw = dict(module_kw, batch_first=batch_first)
    for call_kw in ({}, {"key_padding_mask": kpm, "need_weights": False},
                    {"attn_mask": _array(_L, source), "average_attn_weights": False}):
        _mha_compare(kw, call_kw, inputs, train=True)
        _mha_compare(kw, call_kw, inputs, train=False, grad=False)


def test_mha_key_is_value_projection():
    tm, em = _mha_pair()
    q, kv = _array(_L, _N, _E), _array(5, _N, _E)

    def run(lib, module):
        qt, kvt = lib.tensor(q, requires_grad=True), lib.tensor(kv, requires_grad=True)
        out, weights = module(qt, kvt, kvt)
        out.sum().backward()
        return [out, weights, qt.grad, kvt.grad, module.in_proj_weight.grad]
    assert_same(run(torch, tm), run(ember, em), rtol=1e-8, atol=1e-10)


def test_mha_unbatched():
    for call_kw in ({}, {"key_padding_mask": np.array([False, False, True, False])},
                    {"attn_mask": _array(2, _L, _L), "need_weights": False}):
        _mha_compare({}, call_kw, [_array(_L, _E)])


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("grad", [True, False])
def test_mha_fully_masked_rows_as_torch(need_weights, batch_first, grad):
    """NaN from the weights path and from the fused inference path; zeros from SDPA."""
    kpm = _KPM.copy()
    kpm[2] = True
    mask = _BOOL_MASK.copy()
    mask[1] = True
    x = _array(_N, _L, _E) if batch_first else _array(_L, _N, _E)
    for call_kw in ({"key_padding_mask": kpm}, {"attn_mask": mask}):
        call_kw = dict(call_kw, need_weights=need_weights)
        for train in (True, False):
            _mha_compare({"batch_first": batch_first}, call_kw, [x], train=train, grad=grad)


def test_mha_dropout():
    tm, em = _mha_pair(dropout=0.5, batch_first=True)
    x = ember.tensor(_array(2, 6, _E))
    em.train()
    ember.manual_seed(0)
    first, weights = em(x, x, x, average_attn_weights=False)
    ember.manual_seed(0)
    again, _ = em(x, x, x, average_attn_weights=False)
    assert ember.equal(first, again)
    # Dropped weights are zero; kept ones doubled; each row's mean stays 1 / S in expectation.
    w = np.asarray(weights.detach())
    assert (w == 0).mean() > 0.3
    assert abs(w.sum(-1).mean() - 1.0) < 0.2
    for need_weights in (True, False):
        out, _ = em(x, x, x, need_weights=need_weights)
        assert out.shape == (2, 6, _E)
        out.sum().backward()
        assert em.in_proj_weight.grad is not None
    em.eval()
    eval_out, _ = em(x, x, x)
    assert_same(tm.eval()(*[torch.tensor(np.asarray(x))] * 3)[0], eval_out, rtol=1e-8,
                atol=1e-10)


def test_mha_parameters_init_and_repr():
    for kw in ({}, {"kdim": 4, "vdim": 6, "add_bias_kv": True, "bias": False}):
        tm = torch.nn.MultiheadAttention(8, 2, **kw)
        em = ember.nn.MultiheadAttention(8, 2, **kw)
        assert list(em.state_dict()) == list(tm.state_dict())
        for (name, p), (_, tp) in zip(em.named_parameters(), tm.named_parameters()):
            assert tuple(p.shape) == tuple(tp.shape), name
        assert repr(em) == repr(tm)
    em = ember.nn.MultiheadAttention(16, 4)
    assert np.all(np.asarray(em.in_proj_bias.detach()) == 0)
    assert np.all(np.asarray(em.out_proj.bias.detach()) == 0)
    bound = np.sqrt(6 / (16 + 48))  # xavier_uniform_ of the packed (48, 16) weight
    w = np.asarray(em.in_proj_weight.detach())
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    assert em.head_dim == 4 and em._qkv_same_embed_dim and not em.batch_first


def test_mha_functional_with_separate_weights_and_static_kv():
    embed, heads, n, length, source = 8, 2, 2, 3, 4
    arrays = {name: _array(*shape) for name, shape in {
        "q": (length, n, embed), "k": (source, n, 6), "v": (source, n, 5),
        "wq": (embed, embed), "wk": (embed, 6), "wv": (embed, 5), "b": (3 * embed,),
        "wo": (embed, embed), "bo": (embed,), "sk": (n * heads, 3, 4),
        "sv": (n * heads, 3, 4)}.items()}

    def run(lib, static):
        t = {k: lib.tensor(v, requires_grad=True) for k, v in arrays.items()}
        out, weights = lib.nn.functional.multi_head_attention_forward(
            t["q"], t["k"], t["v"], embed, heads, None, t["b"], None, None, False, 0.0,
            t["wo"], t["bo"], training=True, use_separate_proj_weight=True,
            q_proj_weight=t["wq"], k_proj_weight=t["wk"], v_proj_weight=t["wv"],
            static_k=t["sk"] if static else None, static_v=t["sv"] if static else None)
        (out.sum() + weights.sum()).backward()
        return [out, weights] + [t[k].grad for k in ("q", "wq", "b", "wo")] + (
            [t["sk"].grad, t["sv"].grad] if static else [t["k"].grad, t["wk"].grad])
    for static in (False, True):
        assert_same(run(torch, static), run(ember, static), rtol=1e-8, atol=1e-10)


def test_mha_mismatched_mask_types_warn():
    tm, em = _mha_pair()
    x = _array(_L, _N, _E)
    for lib, module in ((torch, tm), (ember, em)):
        t = lib.tensor(x)
        with pytest.warns(UserWarning, match="Support for mismatched key_padding_mask and "
                                             "attn_mask is deprecated"):
            module(t, t, t, key_padding_mask=lib.tensor(_KPM),
                   attn_mask=lib.tensor(_array(_L, _L)))


def test_mha_errors():
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        ember.nn.MultiheadAttention(10, 3)
    with pytest.raises(ValueError, match="embed_dim and num_heads must be greater than 0"):
        ember.nn.MultiheadAttention(0, 2)
    x = _array(_L, _N, _E)

    def call(lib, **kw):
        torch.manual_seed(0)
        module = lib.nn.MultiheadAttention(_E, 2)
        t = lib.tensor(x, dtype=lib.float32)
        kw = {k: _to(lib, v) for k, v in kw.items()}
        return module(t, t, t, **kw)
    compare_error(lambda lib: call(lib, is_causal=True))
    compare_error(lambda lib: call(lib, attn_mask=np.zeros((3, 3), np.float32)))
    compare_error(lambda lib: call(lib, attn_mask=np.zeros((5, _L, _L), np.float32)))
    compare_error(lambda lib: call(lib, key_padding_mask=np.zeros((_N, 3), bool)))
    compare_error(lambda lib: call(lib, key_padding_mask=np.zeros(_N, bool)))
    compare_error(lambda lib: call(lib, attn_mask=np.zeros((_L, _L), np.int64)))
