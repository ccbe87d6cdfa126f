"""The recurrent layers and cells under autocast, against PyTorch's CPU autocast: output, hidden
and cell dtypes, values and float32 gradients for RNN, LSTM, GRU, RNNCell, LSTMCell and
GRUCell, from float32 and bfloat16 inputs with no, float32 or bfloat16 initial states.

PyTorch's CPU runs an LSTM without projection as oneDNN's ``mkldnn_rnn_layer`` (a listed
lower-precision op: everything bfloat16) and every other layer and cell composed from listed
``linear``s, whose state arithmetic promotes: a float32 GRU hidden state or LSTM cell state keeps
the recurrence in float32. CUDA's policy (cuDNN's RNN in float16, the cells in the region's
dtype) is seen with CUDA's table put in the CPU's place; ``cuda``-marked tests run it on a GPU."""
import warnings

import numpy as np
import pytest
import torch

import ember
from conftest import DEVICES


@pytest.fixture(autouse=True, scope="module")
def _torch_single_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _name(dtype):
    return str(dtype).split(".")[-1]


def _dtypes(result):
    if hasattr(result, "batch_sizes"):  # a PackedSequence (a tuple too)
        return "packed:" + _name(result.data.dtype)
    if isinstance(result, (tuple, list)):
        return [_dtypes(r) for r in result]
    return _name(result.dtype)


def _flat(result):
    if hasattr(result, "batch_sizes"):
        return [result.data]
    if isinstance(result, (tuple, list)):
        return [t for r in result for t in _flat(r)]
    return [result]


def _numpy(t):
    return t.detach().float().numpy()


def _build(name, kwargs):
    torch.manual_seed(0)
    module = getattr(torch.nn, name)(4, 5, **kwargs)
    ours = getattr(ember.nn, name)(4, 5, **kwargs)
    for (n, p), (n2, q) in zip(module.named_parameters(), ours.named_parameters()):
        assert n == n2
        with ember.no_grad():
            q.copy_(ember.tensor(p.detach().numpy()))
    return module, ours


def _state_shape(name, kwargs, batch):
    directions = 2 if kwargs.get("bidirectional") else 1
    layers = kwargs.get("num_layers", 1) * directions
    proj = kwargs.get("proj_size", 0)
    if name.endswith("Cell"):
        return (batch, 5), (batch, 5)
    return (layers, batch, proj or 5), (layers, batch, 5)


LAYERS = [
    ("RNN", {}),
    ("RNN", {"nonlinearity": "relu", "num_layers": 2}),
    ("LSTM", {}),
    ("LSTM", {"num_layers": 2, "bidirectional": True}),
    ("LSTM", {"proj_size": 3}),
    ("LSTM", {"proj_size": 3, "batch_first": True, "bias": False}),
    ("GRU", {}),
    ("GRU", {"num_layers": 2, "bidirectional": True}),
    ("GRU", {"batch_first": True}),
    ("RNNCell", {}),
    ("RNNCell", {"nonlinearity": "relu"}),
    ("LSTMCell", {}),
    ("GRUCell", {}),
]


def _case_id(case):
    name, kwargs = case
    return name + "".join(f"-{k}={v}" for k, v in kwargs.items())


def _inputs(lib, name, kwargs, in_dtype, state_dtype, rng):
    batch = 2
    if name.endswith("Cell"):
        x = rng.standard_normal((batch, 4))
    else:
        x = rng.standard_normal((batch, 6, 4) if kwargs.get("batch_first") else (6, batch, 4))
    x = lib.tensor(x.astype(np.float32)).to(getattr(lib, in_dtype))
    if state_dtype is None:
        return (x,)
    h_shape, c_shape = _state_shape(name, kwargs, batch)
    h = lib.tensor(rng.standard_normal(h_shape).astype(np.float32) * 0.5)
    c = lib.tensor(rng.standard_normal(c_shape).astype(np.float32) * 0.5)
    h, c = h.to(getattr(lib, state_dtype)), c.to(getattr(lib, state_dtype))
    return (x, (h, c)) if name.startswith("LSTM") else (x, h)


def _run(lib, module, inputs, fast="bfloat16"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's "LSTM with projections is not supported..."
        with lib.autocast("cpu", dtype=getattr(lib, fast)):
            return module(*inputs)


def _grads(lib, module, result):
    loss = sum(t.float().square().sum() for t in _flat(result))
    loss.backward()
    return {n: p.grad for n, p in module.named_parameters()}


@pytest.mark.parametrize("state", [None, "float32", "bfloat16"])
@pytest.mark.parametrize("in_dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("case", LAYERS, ids=_case_id)
def test_recurrent_modules_under_cpu_bfloat16_autocast(case, in_dtype, state):
    name, kwargs = case
    torch_module, ours = _build(name, kwargs)
    expected = _run(torch, torch_module, _inputs(torch, name, kwargs, in_dtype, state,
                                                 np.random.default_rng(1)))
    got = _run(ember, ours, _inputs(ember, name, kwargs, in_dtype, state,
                                    np.random.default_rng(1)))
    assert _dtypes(got) == _dtypes(expected)
    for g, e in zip(_flat(got), _flat(expected)):
        assert tuple(g.shape) == tuple(e.shape)
        np.testing.assert_allclose(_numpy(g), _numpy(e), rtol=3e-2, atol=3e-2)
    # The parameters are float32 leaves: their gradients come back float32 through the casts.
    theirs, mine = _grads(torch, torch_module, expected), _grads(ember, ours, got)
    for n, e in theirs.items():
        assert mine[n].dtype is ember.float32, n
        scale = max(float(e.abs().max()), 1e-3)
        np.testing.assert_allclose(_numpy(mine[n]) / scale, _numpy(e) / scale, atol=4e-2,
                                   err_msg=n)


@pytest.mark.parametrize("name", ["LSTM", "GRU"])
def test_packed_sequences_under_cpu_autocast(name):
    from torch.nn.utils.rnn import pack_padded_sequence as torch_pack
    from ember.nn.utils.rnn import pack_padded_sequence as ember_pack
    torch_module, ours = _build(name, {})
    x = np.random.default_rng(2).standard_normal((6, 3, 4)).astype(np.float32)
    lengths = [6, 4, 2]
    expected = _run(torch, torch_module, (torch_pack(torch.tensor(x), lengths),))
    got = _run(ember, ours, (ember_pack(ember.tensor(x), lengths),))
    assert _dtypes(got) == _dtypes(expected)
    for g, e in zip(_flat(got), _flat(expected)):
        np.testing.assert_allclose(_numpy(g), _numpy(e), rtol=3e-2, atol=3e-2)


@pytest.mark.parametrize("case", [c for c in LAYERS if c[0] != "LSTM" or c[1].get("proj_size")]
                         + [("LSTM", {})], ids=_case_id)
def test_float16_region(case):
    name, kwargs = case
    torch_module, ours = _build(name, kwargs)
    got = _run(ember, ours, _inputs(ember, name, kwargs, "float32", None,
                                    np.random.default_rng(3)), fast="float16")
    if name == "LSTM" and not kwargs:
        # oneDNN's LSTM layer in float16: PyTorch's CPU build asks for it, and oneDNN refuses
        # it on CPUs without AVX512-FP16 ("could not create a primitive descriptor"); Ember
        # runs what PyTorch asks for.
        assert _dtypes(got) == ["float16", ["float16", "float16"]]
        return
    expected = _run(torch, torch_module, _inputs(torch, name, kwargs, "float32", None,
                                                 np.random.default_rng(3)), fast="float16")
    assert _dtypes(got) == _dtypes(expected)
    for g, e in zip(_flat(got), _flat(expected)):
        np.testing.assert_allclose(_numpy(g), _numpy(e), rtol=1e-2, atol=1e-2)


def test_lstm_without_onednn_is_composed_as_torch():
    # With oneDNN disabled PyTorch composes the LSTM too: a float32 cell state keeps it float32.
    torch_module, ours = _build("LSTM", {})
    inputs = lambda lib: _inputs(lib, "LSTM", {}, "float32", None,  # noqa: E731
                                 np.random.default_rng(4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's note on oneDNN TF32 for Intel GPUs
        with torch.backends.mkldnn.flags(enabled=False):
            expected = _run(torch, torch_module, inputs(torch))
    with ember.backends.mkldnn.flags(enabled=False):
        got = _run(ember, ours, inputs(ember))
    assert _dtypes(got) == _dtypes(expected) == ["float32", ["float32", "float32"]]
    for g, e in zip(_flat(got), _flat(expected)):
        np.testing.assert_allclose(_numpy(g), _numpy(e), rtol=3e-2, atol=3e-2)


def test_input_dtype_is_still_checked_outside_autocast():
    for lib in (torch, ember):
        module = lib.nn.GRU(4, 5)
        with pytest.raises(ValueError, match=r"RNN input dtype \((torch|ember).bfloat16\) does "
                                             r"not match weight dtype"):
            module(lib.ones(3, 2, 4, dtype=lib.bfloat16))
        with pytest.raises(RuntimeError, match="mat1 and mat2 must have the same dtype"):
            lib.nn.GRUCell(4, 5)(lib.ones(2, 4, dtype=lib.bfloat16))


# ---- CUDA's policy ----------------------------------------------------------------------------

CUDA_EXPECTED = [
    # (module, kwargs, region dtype, expected dtypes): cuDNN's RNN is float16 even in a bfloat16
    # region (AutocastRNN.cpp casts to kHalf); the cells take the region's dtype.
    ("LSTM", {}, "float16", ["float16", ["float16", "float16"]]),
    ("LSTM", {"proj_size": 3}, "bfloat16", ["float16", ["float16", "float16"]]),
    ("GRU", {"num_layers": 2}, "bfloat16", ["float16", "float16"]),
    ("RNN", {}, "float16", ["float16", "float16"]),
    ("LSTMCell", {}, "float16", ["float16", "float16"]),
    ("LSTMCell", {}, "bfloat16", ["bfloat16", "bfloat16"]),
    ("GRUCell", {}, "bfloat16", "bfloat16"),
    ("RNNCell", {"nonlinearity": "relu"}, "float16", "float16"),
]


@pytest.mark.parametrize("name, kwargs, fast, expected", CUDA_EXPECTED,
                         ids=[f"{n}-{f}-{i}" for i, (n, _, f, _) in enumerate(CUDA_EXPECTED)])
def test_cuda_policy_for_recurrent_modules(monkeypatch, name, kwargs, fast, expected):
    import ember.amp.autocast_mode as mode
    monkeypatch.setitem(mode.POLICIES, "cpu", mode.POLICIES["cuda"])
    _, ours = _build(name, kwargs)
    inputs = _inputs(ember, name, kwargs, "float32", "float32", np.random.default_rng(5))
    got = _run(ember, ours, inputs, fast=fast)
    assert _dtypes(got) == expected
    # the float32 parameters get float32 gradients through the casts
    loss = sum(t.float().sum() for t in _flat(got))
    loss.backward()
    assert all(p.grad.dtype is ember.float32 for p in ours.parameters())


@pytest.mark.skipif("cupyconf" not in DEVICES, reason="needs the CuPy conformance device")
@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell"])
def test_cuda_policy_on_the_cupy_conformance_device(monkeypatch, name):
    # Ember's CUDA backend (over the CuPy 14.2 stand-in) under CUDA's policy, registered for the
    # conformance device's type: the float16 recurrences run through CuPy's API, and agree with
    # the same policy on the CPU.
    import ember.amp.autocast_mode as mode
    monkeypatch.setitem(mode.POLICIES, "cupyconf", mode.POLICIES["cuda"])
    monkeypatch.setitem(mode.POLICIES, "cpu", mode.POLICIES["cuda"])
    results = []
    for device in ("cupyconf", "cpu"):
        _, module = _build(name, {})
        module = module.to(device)
        x = _inputs(ember, name, {}, "float32", None, np.random.default_rng(7))[0].to(device)
        previous = ember.get_autocast_dtype(device)
        ember.set_autocast_dtype(device, ember.float16)
        ember.set_autocast_enabled(device, True)
        try:
            got = module(x)
        finally:
            ember.set_autocast_enabled(device, False)
            ember.set_autocast_dtype(device, previous)
        assert all(t.dtype is ember.float16 and t.device.type == device for t in _flat(got))
        sum(t.float().sum() for t in _flat(got)).backward()
        assert all(p.grad.dtype is ember.float32 for p in module.parameters())
        results.append([t.detach().float().cpu().numpy() for t in _flat(got)])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-3)


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell"])
def test_recurrent_modules_under_cuda_autocast(name):
    module = getattr(ember.nn, name)(4, 5).to("cuda")
    shape = (2, 4) if name.endswith("Cell") else (6, 2, 4)
    x = ember.tensor(np.random.default_rng(6).standard_normal(shape).astype(np.float32),
                     device="cuda")
    with ember.autocast("cuda"):
        got = module(x)
    assert all(t.dtype is ember.float16 for t in _flat(got))
    sum(t.float().sum() for t in _flat(got)).backward()
    assert all(p.grad.dtype is ember.float32 for p in module.parameters())
