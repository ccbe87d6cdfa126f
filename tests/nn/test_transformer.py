"""Transformer layers and stacks against PyTorch with copied weights: outputs, input and
parameter gradients in train mode (dropout 0), outputs in eval mode with and without
gradients (where PyTorch switches to its fused and nested-tensor inference paths), every mask
kind, batch_first, norm_first, relu / gelu / callable / module activations, no bias; the
``Transformer`` model, ``generate_square_subsequent_mask``, causal-mask detection, repr,
deep-copied layers, dropout and errors."""
import warnings

import numpy as np
import pytest
import torch

import ember
from torch_compare import assert_same

@pytest.fixture(autouse=True, scope="module")
def _torch_single_thread():
    """PyTorch's worker threads spin on a loaded 2-core machine (small ops take 20 ms instead
    of 20 us); the oracle runs single-threaded here and gets its setting back afterwards."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


rng = np.random.default_rng(0)
D_MODEL, HEADS, FF = 8, 2, 16


def _array(*shape):
    return rng.standard_normal(shape)


def _copy_state(torch_module, ember_module):
    assert list(ember_module.state_dict()) == list(torch_module.state_dict())
    ember_module.load_state_dict({k: ember.tensor(v.detach().numpy())
                                  for k, v in torch_module.state_dict().items()})


def _quietly(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # enable_nested_tensor notices
        return fn(*args, **kw)


def _pair(name, *args, **kw):
    torch.manual_seed(0)
    activation = kw.pop("activation", "relu")
    tm = _quietly(getattr(torch.nn, name), *args, activation=_lib_activation(torch, activation),
                  **kw).double()
    em = _quietly(getattr(ember.nn, name), *args, activation=_lib_activation(ember, activation),
                  **kw).double()
    _copy_state(tm, em)
    return tm, em


def _lib_activation(lib, activation):
    if activation == "callable":
        return lib.nn.functional.silu
    if activation == "module_gelu":
        return lib.nn.GELU()
    if activation == "fn_gelu":
        return lib.nn.functional.gelu
    return activation


def _run(lib, module, arrays, masks, grad):
    tensors = [lib.tensor(a, requires_grad=grad) for a in arrays]
    kw = {k: (lib.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in masks.items()}
    if grad:
        out = module(*tensors, **kw)
    else:
        with lib.no_grad():
            out = module(*tensors, **kw)
    results = [out]
    if grad:
        upstream = np.random.default_rng(1).standard_normal(tuple(out.shape))
        out.backward(lib.tensor(upstream))
        results += [t.grad for t in tensors] + [p.grad for p in module.parameters()]
    return results


def _compare(tm, em, arrays, masks, train, grad, **tol):
    tm.train(train)
    em.train(train)
    tol = tol or dict(rtol=1e-7, atol=1e-9)
    assert_same(_run(torch, tm, arrays, masks, grad), _run(ember, em, arrays, masks, grad), **tol)


def _seq_batch(batch_first, length, batch=3):
    return _array(batch, length, D_MODEL) if batch_first else _array(length, batch, D_MODEL)


_KPM = np.zeros((3, 5), bool)
_KPM[1, 3:] = True
_CAUSAL_BOOL = np.triu(np.ones((5, 5), bool), 1)

ENCODER_MASKS = [
    {},
    {"src_key_padding_mask": _KPM},
    {"src_mask": _CAUSAL_BOOL, "src_key_padding_mask": _KPM},
    {"src_mask": np.triu(np.full((5, 5), -np.inf), 1), "is_causal": True},
    {"src_mask": _array(6, 5, 5)},
]
MODES = [(True, True), (False, True), (False, False)]  # (train, grad)


def _layer_grid(activations):
    """Every activation with batch_first and post-norm (the fused-path candidate); the other
    layouts with relu; the rest of the cross product marked slow."""
    grid = []
    for activation in activations:
        for batch_first in (False, True):
            for norm_first in (False, True):
                quick = activation == "relu" or (batch_first and not norm_first)
                grid.append(pytest.param(batch_first, norm_first, activation,
                                         marks=() if quick else pytest.mark.slow))
    return grid


@pytest.mark.parametrize("batch_first,norm_first,activation",
                         _layer_grid(["relu", "gelu", "callable", "module_gelu"]))
def test_encoder_layer_matches_torch(batch_first, norm_first, activation):
    tm, em = _pair("TransformerEncoderLayer", D_MODEL, HEADS, FF, 0.0, activation=activation,
                   batch_first=batch_first, norm_first=norm_first)
    x = _seq_batch(batch_first, 5)
    for masks in ENCODER_MASKS:
        for train, grad in MODES:
            _compare(tm, em, [x], masks, train, grad)


@pytest.mark.parametrize("batch_first", [False, True])
def test_encoder_layer_without_bias_and_with_eps(batch_first):
    tm, em = _pair("TransformerEncoderLayer", D_MODEL, HEADS, FF, 0.0, bias=False,
                   layer_norm_eps=1e-3, batch_first=batch_first)
    x = _seq_batch(batch_first, 5)
    for train, grad in MODES:
        _compare(tm, em, [x], {"src_key_padding_mask": _KPM}, train, grad)


@pytest.mark.parametrize("batch_first", [False, True])
def test_encoder_layer_fully_padded_sequence(batch_first):
    """NaN in PyTorch's fused eval path, finite in the ordinary path: Ember gives the same."""
    tm, em = _pair("TransformerEncoderLayer", D_MODEL, HEADS, FF, 0.0, batch_first=batch_first)
    kpm = _KPM.copy()
    kpm[2] = True
    x = _seq_batch(batch_first, 5)
    for train, grad in MODES:
        _compare(tm, em, [x], {"src_key_padding_mask": kpm}, train, grad)


DECODER_MASKS = [
    {},
    {"tgt_mask": _CAUSAL_BOOL, "tgt_key_padding_mask": _KPM},
    {"tgt_mask": np.triu(np.full((5, 5), -np.inf), 1), "tgt_is_causal": True,
     "memory_key_padding_mask": np.array([[False] * 4, [False, False, True, True],
                                          [False] * 4])},
    {"memory_mask": _array(5, 4)},
]


@pytest.mark.parametrize("batch_first,norm_first,activation",
                         _layer_grid(["relu", "gelu", "callable"]))
def test_decoder_layer_matches_torch(batch_first, norm_first, activation):
    tm, em = _pair("TransformerDecoderLayer", D_MODEL, HEADS, FF, 0.0, activation=activation,
                   batch_first=batch_first, norm_first=norm_first)
    tgt, memory = _seq_batch(batch_first, 5), _seq_batch(batch_first, 4)
    for masks in DECODER_MASKS:
        for train, grad in MODES:
            _compare(tm, em, [tgt, memory], masks, train, grad)


def _stack_pair(kind, batch_first, norm=True, num_layers=2, norm_first=False, **stack_kw):
    layer_name = f"Transformer{kind}Layer"
    torch.manual_seed(0)
    layers = [_quietly(getattr(lib.nn, layer_name), D_MODEL, HEADS, FF, 0.0,
                       batch_first=batch_first, norm_first=norm_first) for lib in (torch, ember)]
    norms = [lib.nn.LayerNorm(D_MODEL) if norm else None for lib in (torch, ember)]
    tm = _quietly(getattr(torch.nn, f"Transformer{kind}"), layers[0], num_layers, norms[0],
                  **stack_kw).double()
    em = _quietly(getattr(ember.nn, f"Transformer{kind}"), layers[1], num_layers, norms[1],
                  **stack_kw).double()
    # Give the final norm non-trivial parameters, so zeroed positions show its bias.
    if norm:
        with torch.no_grad():
            tm.norm.weight.uniform_(0.5, 1.5)
            tm.norm.bias.uniform_(-1, 1)
    _copy_state(tm, em)
    return tm, em


ENCODER_STACK_MASKS = [
    {},
    {"src_key_padding_mask": _KPM},                                        # packed in eval
    {"src_key_padding_mask": np.where(_KPM, -np.inf, 0.0)},
    {"src_key_padding_mask": np.array([[True, False, False, False, False]] + [[False] * 5] * 2)},
    {"src_key_padding_mask": np.vstack([_KPM[:2], np.ones((1, 5), bool)])},  # all padding
    {"mask": np.triu(np.full((5, 5), -np.inf), 1)},                        # detected causal
    {"mask": _CAUSAL_BOOL, "src_key_padding_mask": _KPM},
]


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")
@pytest.mark.parametrize("batch_first,norm", [(False, True), (True, True),
                                              pytest.param(True, False, marks=pytest.mark.slow),
                                              pytest.param(False, False, marks=pytest.mark.slow)])
def test_encoder_stack_matches_torch(batch_first, norm):
    tm, em = _stack_pair("Encoder", batch_first, norm)
    x = _seq_batch(batch_first, 5)
    for masks in ENCODER_STACK_MASKS:
        for train, grad in MODES:
            _compare(tm, em, [x], masks, train, grad)


def test_encoder_stack_packed_path_zeroes_padding():
    tm, em = _stack_pair("Encoder", True, norm=False)
    em.eval()
    x = ember.tensor(_seq_batch(True, 5))
    with ember.no_grad():
        out = em(x, src_key_padding_mask=ember.tensor(_KPM))
        unpacked = _quietly(ember.nn.TransformerEncoder, em.layers[0], 2,
                            enable_nested_tensor=False).eval()
        plain = unpacked(x, src_key_padding_mask=ember.tensor(_KPM))
    assert np.all(np.asarray(out)[1, 3:] == 0)
    assert np.all(np.asarray(plain)[1, 3:] != 0)
    np.testing.assert_allclose(np.asarray(out)[~_KPM], np.asarray(plain)[~_KPM], rtol=1e-12)


def test_encoder_stack_options():
    for stack_kw in ({"enable_nested_tensor": False}, {"mask_check": False}):
        tm, em = _stack_pair("Encoder", True, **stack_kw)
        x = _seq_batch(True, 5)
        for train, grad in MODES:
            _compare(tm, em, [x], {"src_key_padding_mask": _KPM}, train, grad)
    tm, em = _stack_pair("Encoder", True, norm_first=True, num_layers=3)
    assert not em.use_nested_tensor and len(em.layers) == 3
    _compare(tm, em, [_seq_batch(True, 5)], {"src_key_padding_mask": _KPM}, False, False)


def test_nested_tensor_warning_as_torch():
    for batch_first in (False, True):
        layers = [lib.nn.TransformerEncoderLayer(D_MODEL, HEADS, FF, batch_first=batch_first)
                  for lib in (torch, ember)]
        with warnings.catch_warnings(record=True) as torch_warnings:
            warnings.simplefilter("always")
            torch.nn.TransformerEncoder(layers[0], 1)
        with warnings.catch_warnings(record=True) as ember_warnings:
            warnings.simplefilter("always")
            ember.nn.TransformerEncoder(layers[1], 1)
        assert [str(w.message) for w in ember_warnings] == [str(w.message)
                                                            for w in torch_warnings]


@pytest.mark.parametrize("batch_first", [False, True])
def test_decoder_stack_matches_torch(batch_first):
    tm, em = _stack_pair("Decoder", batch_first)
    tgt, memory = _seq_batch(batch_first, 5), _seq_batch(batch_first, 4)
    for masks in DECODER_MASKS[:3]:
        for train, grad in MODES:
            _compare(tm, em, [tgt, memory], masks, train, grad)


@pytest.mark.parametrize("batch_first", [False, True])
def test_transformer_matches_torch(batch_first):
    tm, em = _pair("Transformer", D_MODEL, HEADS, 2, 2, FF, 0.0, batch_first=batch_first)
    src, tgt = _seq_batch(batch_first, 4), _seq_batch(batch_first, 5)
    masks = {"tgt_mask": np.asarray(torch.nn.Transformer.generate_square_subsequent_mask(5)),
             "src_key_padding_mask": np.array([[False] * 4, [False, False, True, True],
                                               [False] * 4]),
             "memory_key_padding_mask": np.array([[False] * 4, [False, False, True, True],
                                                  [False] * 4])}
    for train, grad in MODES:
        _compare(tm, em, [src, tgt], masks, train, grad, rtol=1e-7, atol=1e-9)


def test_generate_square_subsequent_mask():
    for size in (0, 1, 5):
        assert_same(torch.nn.Transformer.generate_square_subsequent_mask(size),
                    ember.nn.Transformer.generate_square_subsequent_mask(size))
    assert_same(torch.nn.Transformer.generate_square_subsequent_mask(3, dtype=torch.float64),
                ember.nn.Transformer.generate_square_subsequent_mask(3, dtype=ember.float64))


def test_causal_mask_detection():
    from ember.nn.modules.transformer import _detect_is_causal_mask
    from torch.nn.modules.transformer import _detect_is_causal_mask as torch_detect
    causal = np.triu(np.full((4, 4), -np.inf), 1)
    for mask, is_causal, size in ((causal, None, None), (causal, None, 5), (np.zeros((4, 4)),
                                  None, None), (None, None, None), (np.zeros((4, 4)), True, 4)):
        tm = None if mask is None else torch.tensor(mask)
        em = None if mask is None else ember.tensor(mask)
        assert _detect_is_causal_mask(em, is_causal, size) == torch_detect(tm, is_causal, size)


def test_repr_state_dict_and_deep_copies():
    for name, args in (("TransformerEncoderLayer", (D_MODEL, HEADS, FF)),
                       ("TransformerDecoderLayer", (D_MODEL, HEADS, FF)),
                       ("Transformer", (D_MODEL, HEADS, 2, 1, FF))):
        tm = _quietly(getattr(torch.nn, name), *args)
        em = _quietly(getattr(ember.nn, name), *args)
        assert repr(em) == repr(tm)
        assert list(em.state_dict()) == list(tm.state_dict())
    layer = ember.nn.TransformerEncoderLayer(D_MODEL, HEADS, FF)
    stack = _quietly(ember.nn.TransformerEncoder, layer, 2)
    assert stack.layers[0].linear1.weight is not stack.layers[1].linear1.weight
    assert stack.layers[0].linear1.weight is not layer.linear1.weight
    assert ember.equal(stack.layers[0].linear1.weight, stack.layers[1].linear1.weight)
    assert len(list(stack.parameters())) == 2 * len(list(layer.parameters()))


def test_defaults_and_activation_flags():
    layer = ember.nn.TransformerEncoderLayer(D_MODEL, HEADS)
    assert layer.linear1.out_features == 2048 and layer.dropout.p == 0.1
    assert layer.norm1.eps == 1e-5 and not layer.self_attn.batch_first and not layer.norm_first
    assert layer.activation is ember.nn.functional.relu and layer.activation_relu_or_gelu == 1
    assert ember.nn.TransformerEncoderLayer(D_MODEL, HEADS, activation="gelu"
                                            ).activation_relu_or_gelu == 2
    assert ember.nn.TransformerEncoderLayer(D_MODEL, HEADS, activation=ember.tanh
                                            ).activation_relu_or_gelu == 0
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not swish"):
        ember.nn.TransformerEncoderLayer(D_MODEL, HEADS, activation="swish")
    model = _quietly(ember.nn.Transformer, D_MODEL, HEADS, 1, 1, FF)
    assert model.d_model == D_MODEL and model.nhead == HEADS and not model.batch_first


def test_transformer_errors():
    model = _quietly(ember.nn.Transformer, D_MODEL, HEADS, 1, 1, FF)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        model(ember.randn(4, 2, D_MODEL), ember.randn(4, 3, D_MODEL))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal"):
        model(ember.randn(4, 2, D_MODEL), ember.randn(4, 2, 6))


def test_dropout_in_training():
    layer = ember.nn.TransformerEncoderLayer(D_MODEL, HEADS, FF, dropout=0.5)
    x = ember.randn(5, 3, D_MODEL)
    ember.manual_seed(0)
    first = layer(x)
    ember.manual_seed(0)
    assert ember.equal(first, layer(x))
    assert not ember.equal(first, layer(x))
    layer.eval()
    assert ember.equal(layer(x), layer(x))
    first.sum().backward()
    assert all(p.grad is not None for p in layer.parameters())


def test_layers_run_on_the_tensors_device(device):
    layer = ember.nn.TransformerEncoderLayer(D_MODEL, HEADS, FF, 0.0, batch_first=True)
    reference = ember.nn.TransformerEncoderLayer(D_MODEL, HEADS, FF, 0.0, batch_first=True)
    reference.load_state_dict(layer.state_dict())
    layer.to(device)
    x = _seq_batch(True, 5).astype(np.float32)
    mask = ember.tensor(_CAUSAL_BOOL, device=device)
    kpm = ember.tensor(_KPM, device=device)
    xt = ember.tensor(x, device=device, requires_grad=True)
    out = layer(xt, src_mask=mask, src_key_padding_mask=kpm)
    out.sum().backward()
    assert out.device.type == device and xt.grad.device.type == device
    expected = reference(ember.tensor(x), src_mask=mask.cpu(), src_key_padding_mask=kpm.cpu())
    np.testing.assert_allclose(np.asarray(out.detach().cpu()), np.asarray(expected.detach()),
                               rtol=1e-6)
    if device != "cpu":
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            layer(ember.tensor(x))


def test_forward_hooks_turn_off_the_fused_path_as_in_torch():
    """A hook anywhere in the layer makes PyTorch take the ordinary path: a fully padded
    sequence then comes out finite instead of NaN."""
    tm, em = _pair("TransformerEncoderLayer", D_MODEL, HEADS, FF, 0.0, batch_first=True)
    kpm = _KPM.copy()
    kpm[2] = True
    x = _seq_batch(True, 5)
    _compare(tm, em, [x], {"src_key_padding_mask": kpm}, False, False)
    with ember.no_grad():
        fused = em.eval()(ember.tensor(x), src_key_padding_mask=ember.tensor(kpm))
    assert np.isnan(np.asarray(fused)).any()
    for module in (tm, em):
        module.linear1.register_forward_hook(lambda *args: None)
    _compare(tm, em, [x], {"src_key_padding_mask": kpm}, False, False)
    with ember.no_grad():
        out = em(ember.tensor(x), src_key_padding_mask=ember.tensor(kpm))
    assert np.isfinite(np.asarray(out)).all()
