"""RNN, LSTM, GRU and their cells against PyTorch: with the same weights (PyTorch's state_dict
loaded as is) the outputs, final states, input and initial-state gradients and every parameter
gradient agree over layers, directions, batch_first, projections, bias, unbatched and packed
inputs and given or default initial states; float64 gradcheck and gradgradcheck; dropout
between layers; repr, init and errors."""
import itertools
import math
import warnings

import numpy as np
import pytest
import torch

import ember
from torch_compare import assert_same, compare_error

MODES = {  # name -> (class name, extra constructor kwargs)
    "tanh": ("RNN", {}),
    "relu": ("RNN", {"nonlinearity": "relu"}),
    "lstm": ("LSTM", {}),
    "gru": ("GRU", {}),
}
INPUT, HIDDEN, STEPS, BATCH = 4, 6, 5, 3


def _pair(mode, *args, **kwargs):
    """The same module in torch and ember, ember holding torch's weights."""
    cls, extra = MODES[mode]
    kwargs = {**extra, **kwargs}
    torch.manual_seed(0)
    t_mod = getattr(torch.nn, cls)(*args, **kwargs)
    e_mod = getattr(ember.nn, cls)(*args, **kwargs)
    t_state = t_mod.state_dict()
    assert list(e_mod.state_dict()) == list(t_state)
    for key, value in e_mod.state_dict().items():
        assert tuple(value.shape) == tuple(t_state[key].shape), key
    e_mod.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in t_state.items()})
    return t_mod, e_mod


def _leaf(lib, array):
    return lib.tensor(array, requires_grad=True)


def _flat_outputs(result):
    """(output, h_n[, c_n]) as a flat list of tensors (a packed output gives its data)."""
    output, hidden = result
    if hasattr(output, "batch_sizes"):
        output = output.data
    hidden = list(hidden) if isinstance(hidden, tuple) else [hidden]
    return [output] + hidden


def _run(lib, module, x, states, make_input=None, seed=1):
    """Forward, then backward of a weighted sum of every output; returns the outputs and the
    gradients of the input, the given initial states and all parameters."""
    x = _leaf(lib, x)
    states = [_leaf(lib, s) for s in states]
    inp = make_input(lib, x) if make_input else x
    hx = None
    if states:
        hx = tuple(states) if len(states) == 2 else states[0]
    result = module(inp, hx) if hx is not None else module(inp)
    outs = _flat_outputs(result)
    rng = np.random.default_rng(seed)
    loss = 0
    for o in outs:
        weights = rng.standard_normal(tuple(o.shape)).astype(np.float32 if o.dtype in (
            torch.float32, ember.float32) else np.float64)
        loss = loss + (o * lib.tensor(weights)).sum()
    loss.backward()
    grads = [x.grad] + [s.grad for s in states] + [p.grad for p in module.parameters()]
    return outs, grads


def _compare(mode, x, states, *args, make_input=None, rtol=2e-5, atol=2e-6, eval_mode=False,
             **kwargs):
    t_mod, e_mod = _pair(mode, *args, **kwargs)
    if eval_mode:
        t_mod.eval()
        e_mod.eval()
    expected = _run(torch, t_mod, x, states, make_input)
    actual = _run(ember, e_mod, x, states, make_input)
    assert_same(expected, actual, rtol=rtol, atol=atol)


def _randn(*shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _states(mode, layers, directions, batch, hidden, proj=0):
    h = _randn(layers * directions, batch, proj or hidden, seed=3)
    if mode == "lstm":
        return [h, _randn(layers * directions, batch, hidden, seed=4)]
    return [h]


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("layers,bidirectional", [(1, False), (1, True), (2, False), (2, True)])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("given_states", [False, True])
def test_matches_torch(mode, layers, bidirectional, batch_first, given_states):
    shape = (BATCH, STEPS, INPUT) if batch_first else (STEPS, BATCH, INPUT)
    states = (_states(mode, layers, 1 + bidirectional, BATCH, HIDDEN) if given_states else [])
    _compare(mode, _randn(*shape), states, INPUT, HIDDEN, layers, batch_first=batch_first,
             bidirectional=bidirectional)


@pytest.mark.parametrize("layers,bidirectional", [(1, False), (1, True), (2, False), (2, True)])
@pytest.mark.parametrize("given_states", [False, True])
def test_lstm_projection_matches_torch(layers, bidirectional, given_states):
    proj = 3
    states = _states("lstm", layers, 1 + bidirectional, BATCH, HIDDEN, proj) if given_states else []
    _compare("lstm", _randn(STEPS, BATCH, INPUT), states, INPUT, HIDDEN, layers,
             bidirectional=bidirectional, proj_size=proj)


@pytest.mark.parametrize("mode", list(MODES))
def test_without_bias_matches_torch(mode):
    _compare(mode, _randn(STEPS, BATCH, INPUT), [], INPUT, HIDDEN, 2, bias=False,
             bidirectional=True)
    if mode == "lstm":
        _compare(mode, _randn(STEPS, BATCH, INPUT), [], INPUT, HIDDEN, 2, bias=False,
                 proj_size=2)


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("given_states", [False, True])
def test_unbatched_matches_torch(mode, batch_first, given_states):
    states = []
    if given_states:
        states = [s[:, 0] for s in _states(mode, 2, 2, 1, HIDDEN)]
    _compare(mode, _randn(STEPS, INPUT), states, INPUT, HIDDEN, 2, bidirectional=True,
             batch_first=batch_first)


def _packed_input(lengths, enforce_sorted, batch_first=False):
    def make(lib, x):
        return lib.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=batch_first,
                                                     enforce_sorted=enforce_sorted)
    return make


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("enforce_sorted", [False, True])
@pytest.mark.parametrize("given_states", [False, True])
def test_packed_input_matches_torch(mode, bidirectional, enforce_sorted, given_states):
    lengths = [5, 3, 3, 1] if enforce_sorted else [3, 5, 1, 3]
    states = _states(mode, 2, 1 + bidirectional, 4, HIDDEN) if given_states else []
    _compare(mode, _randn(5, 4, INPUT), states, INPUT, HIDDEN, 2, bidirectional=bidirectional,
             make_input=_packed_input(lengths, enforce_sorted))


def test_packed_lstm_projection_batch_first_matches_torch():
    states = _states("lstm", 2, 2, 4, HIDDEN, proj=2)
    _compare("lstm", _randn(4, 6, INPUT), states, INPUT, HIDDEN, 2, bidirectional=True,
             proj_size=2, batch_first=True,
             make_input=_packed_input([2, 6, 4, 1], False, batch_first=True))


@pytest.mark.parametrize("mode", list(MODES))
def test_packed_output_is_packed_sequence_and_pads_like_torch(mode):
    t_mod, e_mod = _pair(mode, INPUT, HIDDEN, bidirectional=True)
    x = _randn(5, 3, INPUT)
    results = []
    for lib, module in ((torch, t_mod), (ember, e_mod)):
        rnn_utils = lib.nn.utils.rnn
        packed = rnn_utils.pack_padded_sequence(lib.tensor(x), [2, 5, 4], enforce_sorted=False)
        out, _ = module(packed)
        assert isinstance(out, rnn_utils.PackedSequence)
        padded, lengths = rnn_utils.pad_packed_sequence(out, batch_first=True)
        results.append([padded, lengths, out.batch_sizes, out.sorted_indices,
                        out.unsorted_indices])
    assert_same(*results, rtol=2e-5, atol=2e-6)


def test_packed_equals_per_sequence_runs():
    """A packed batch gives each sequence what running it alone gives (ember only)."""
    lstm = ember.nn.LSTM(INPUT, HIDDEN, 2, bidirectional=True)
    seqs = [ember.randn(n, INPUT) for n in (4, 2, 5)]
    out, (h, c) = lstm(ember.nn.utils.rnn.pack_sequence(seqs, enforce_sorted=False))
    outs = ember.nn.utils.rnn.unpack_sequence(out)
    for i, seq in enumerate(seqs):
        alone, (h1, c1) = lstm(seq)
        np.testing.assert_allclose(outs[i].detach().numpy(), alone.detach().numpy(),
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(h[:, i].detach().numpy(), h1.detach().numpy(),
                                   rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", list(MODES))
def test_float64_matches_torch(mode):
    states = _states(mode, 2, 2, BATCH, HIDDEN)
    t_mod, e_mod = _pair(mode, INPUT, HIDDEN, 2, bidirectional=True)
    t_mod.double()
    e_mod.double()
    x = _randn(STEPS, BATCH, INPUT, dtype=np.float64)
    states = [s.astype(np.float64) for s in states]
    assert_same(_run(torch, t_mod, x, states), _run(ember, e_mod, x, states),
                rtol=1e-10, atol=1e-12)


# ---- gradcheck / double backward -------------------------------------------------------------

def _functional(mode, module, names, batch_sizes=None):
    """The module as a function of (input, h0[, c0], *parameters ``names``) for gradcheck;
    the other parameters stay constants."""
    n_states = 2 if mode == "lstm" else 1

    def fn(x, *rest):
        states, params = rest[:n_states], rest[n_states:]
        saved = {n: module._parameters[n] for n in names}
        try:
            for n, p in zip(names, params):
                module._parameters[n] = p
            hx = tuple(states) if n_states == 2 else states[0]
            inp = x
            if batch_sizes is not None:
                inp = ember.nn.utils.rnn.pack_padded_sequence(x, batch_sizes)
            return tuple(_flat_outputs(module(inp, hx)))
        finally:
            module._parameters.update(saved)
    return fn


def _gradcheck_inputs(mode, module, names, steps, batch):
    rng = np.random.default_rng(5)
    hidden, proj = module.hidden_size, module.proj_size
    rows = module.num_layers * (2 if module.bidirectional else 1)

    def leaf(*shape):
        return ember.tensor(rng.standard_normal(shape), dtype=ember.float64, requires_grad=True)
    states = [leaf(rows, batch, proj or hidden)]
    if mode == "lstm":
        states.append(leaf(rows, batch, hidden))
    params = [getattr(module, n).detach().clone().requires_grad_() for n in names]
    return [leaf(steps, batch, module.input_size)] + states + params


def _gradcheck(mode, module, names, steps, batch, batch_sizes=None, second_order=False):
    check = ember.autograd.gradgradcheck if second_order else ember.autograd.gradcheck
    inputs = _gradcheck_inputs(mode, module, names, steps, batch)
    return check(_functional(mode, module, names, batch_sizes), inputs)


@pytest.mark.parametrize("mode", list(MODES))
def test_gradcheck_float64(mode):
    cls, extra = MODES[mode]
    module = getattr(ember.nn, cls)(2, 2, 2, bidirectional=True, **extra).double()
    # Every parameter of the last layer (whose inputs are the first layer's outputs) and the
    # recurrent weight of the first; the input and initial states carry the rest.
    names = ["weight_hh_l0", "weight_hh_l0_reverse", "weight_ih_l1", "weight_hh_l1",
             "bias_ih_l1", "bias_hh_l1_reverse"]
    assert _gradcheck(mode, module, names, steps=3, batch=2)


def test_gradcheck_lstm_projection_packed_float64():
    module = ember.nn.LSTM(2, 3, 1, bidirectional=True, proj_size=2).double()
    names = ["weight_hh_l0", "weight_hr_l0", "weight_hr_l0_reverse", "bias_hh_l0_reverse"]
    assert _gradcheck("lstm", module, names, steps=3, batch=3, batch_sizes=[3, 2, 1])


@pytest.mark.parametrize("mode", list(MODES))
def test_gradgradcheck_float64(mode):
    cls, extra = MODES[mode]
    module = getattr(ember.nn, cls)(1, 2, 1, bidirectional=mode == "tanh", **extra).double()
    names = ["weight_hh_l0"]
    batch_sizes = [2, 1] if mode in ("lstm", "gru") else None
    assert _gradcheck(mode, module, names, steps=2, batch=2, batch_sizes=batch_sizes,
                      second_order=True)


@pytest.mark.slow
@pytest.mark.parametrize("mode", list(MODES))
def test_gradgradcheck_all_parameters_float64(mode):
    cls, extra = MODES[mode]
    kwargs = {"proj_size": 1} if mode == "lstm" else {}
    module = getattr(ember.nn, cls)(2, 2, 2, bidirectional=True, **extra, **kwargs).double()
    names = [n for n, _ in module.named_parameters()]
    assert _gradcheck(mode, module, names, steps=2, batch=2, batch_sizes=[2, 1],
                      second_order=True)


@pytest.mark.parametrize("mode", list(MODES))
def test_double_backward_matches_torch(mode):
    """A gradient penalty: d/dparams of |d loss / d input|^2, as PyTorch computes it."""
    t_mod, e_mod = _pair(mode, INPUT, HIDDEN, 2, **({"proj_size": 2} if mode == "lstm" else {}))
    x = _randn(STEPS, BATCH, INPUT)
    results = []
    for lib, module in ((torch, t_mod), (ember, e_mod)):
        xt = lib.tensor(x, requires_grad=True)
        out = _flat_outputs(module(xt))
        (g,) = lib.autograd.grad((out[0] ** 2).sum() + out[1].sum(), xt, create_graph=True)
        (g ** 2).sum().backward()
        results.append([g] + [p.grad for p in module.parameters()])
    assert_same(*results, rtol=1e-4, atol=1e-6)


# ---- dropout between layers ------------------------------------------------------------------

@pytest.mark.parametrize("mode", list(MODES))
def test_dropout_eval_mode_equals_torch(mode):
    _compare(mode, _randn(STEPS, BATCH, INPUT), [], INPUT, HIDDEN, 3, dropout=0.5,
             eval_mode=True)


@pytest.mark.parametrize("mode", list(MODES))
def test_dropout_one_zeroes_between_layers_as_torch(mode):
    # With p=1 every element between layers is dropped: a deterministic train-mode check.
    _compare(mode, _randn(STEPS, BATCH, INPUT), [], INPUT, HIDDEN, 2, dropout=1.0)


def test_dropout_train_mode_statistics():
    ember.manual_seed(0)
    lstm = ember.nn.LSTM(INPUT, 32, 2, dropout=0.5)
    x = ember.randn(STEPS, 64, INPUT)
    lstm.eval()
    reference, _ = lstm(x)
    lstm.train()
    first, _ = lstm(x)
    second, _ = lstm(x)
    assert first.shape == second.shape == reference.shape == (STEPS, 64, 32)
    assert not np.allclose(first.detach().numpy(), second.detach().numpy())
    assert not np.allclose(first.detach().numpy(), reference.detach().numpy())
    # Inverted dropout keeps the expected input of layer 2: its output stays close on average.
    gap = np.abs(first.detach().numpy().mean() - reference.detach().numpy().mean())
    assert gap < 0.05
    # Only the layers after the first see dropout: layer 0 of a 2-layer stack with p=0.5
    # gives what a 1-layer network with the same weights gives.
    single = ember.nn.LSTM(INPUT, 32, 1)
    single.load_state_dict({k: v for k, v in lstm.state_dict().items() if k.endswith("l0")})
    _, (h, _) = lstm(x)
    _, (h_single, _) = single(x)
    np.testing.assert_allclose(h[0].detach().numpy(), h_single[0].detach().numpy(), rtol=1e-6)


# ---- cells -----------------------------------------------------------------------------------

CELLS = {"rnn_tanh": ("RNNCell", {}), "rnn_relu": ("RNNCell", {"nonlinearity": "relu"}),
         "lstm": ("LSTMCell", {}), "gru": ("GRUCell", {})}


def _cell_pair(name, **kwargs):
    cls, extra = CELLS[name]
    torch.manual_seed(0)
    t_cell = getattr(torch.nn, cls)(INPUT, HIDDEN, **extra, **kwargs)
    e_cell = getattr(ember.nn, cls)(INPUT, HIDDEN, **extra, **kwargs)
    assert list(e_cell.state_dict()) == list(t_cell.state_dict())
    e_cell.load_state_dict({k: ember.tensor(v.detach().numpy())
                            for k, v in t_cell.state_dict().items()})
    return t_cell, e_cell


@pytest.mark.parametrize("name", list(CELLS))
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("given_states", [True, False])
@pytest.mark.parametrize("bias", [True, False])
def test_cell_matches_torch(name, batched, given_states, bias):
    t_cell, e_cell = _cell_pair(name, bias=bias)
    lead = (BATCH,) if batched else ()
    x = _randn(*lead, INPUT)
    states = [_randn(*lead, HIDDEN, seed=s) for s in ((3, 4) if name == "lstm" else (3,))]
    results = []
    for lib, cell in ((torch, t_cell), (ember, e_cell)):
        xt = _leaf(lib, x)
        st = [_leaf(lib, s) for s in states] if given_states else []
        hx = (tuple(st) if name == "lstm" else st[0]) if given_states else None
        out = cell(xt, hx)
        outs = list(out) if isinstance(out, tuple) else [out]
        # Two steps, so the state's gradient runs through the cell again.
        out2 = cell(xt, out)
        outs2 = list(out2) if isinstance(out2, tuple) else [out2]
        loss = sum((o * (k + 1)).sum() for k, o in enumerate(outs + outs2))
        loss.backward()
        results.append([*outs, *outs2, xt.grad] + [s.grad for s in st]
                       + [p.grad for p in cell.parameters()])
    assert_same(*results, rtol=2e-5, atol=2e-6)


def test_cell_gradcheck_float64():
    for name in CELLS:
        cls, extra = CELLS[name]
        cell = getattr(ember.nn, cls)(3, 2, **extra).double()
        x = ember.randn(2, 3, dtype=ember.float64, requires_grad=True)
        h = ember.randn(2, 2, dtype=ember.float64, requires_grad=True)
        c = ember.randn(2, 2, dtype=ember.float64, requires_grad=True)
        if name == "lstm":
            assert ember.autograd.gradcheck(lambda x, h, c: cell(x, (h, c)), (x, h, c))
        else:
            assert ember.autograd.gradcheck(lambda x, h: cell(x, h), (x, h))


# ---- module surface: repr, parameters, init ---------------------------------------------------

REPR_CASES = [
    ("LSTM", (10, 20), {"num_layers": 2, "batch_first": True}),
    ("LSTM", (3, 4, 2), {"proj_size": 2, "bias": False, "dropout": 0.5, "bidirectional": True,
                         "batch_first": True}),
    ("GRU", (3, 4), {}),
    ("RNN", (3, 4), {"nonlinearity": "relu"}),
    ("RNN", (3, 4, 2, "relu"), {}),
    ("RNNCell", (3, 4), {"nonlinearity": "relu"}),
    ("LSTMCell", (3, 4), {"bias": False}),
    ("GRUCell", (3, 4), {}),
]


@pytest.mark.parametrize("cls,args,kwargs", REPR_CASES)
def test_repr_and_parameters_like_torch(cls, args, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_mod = getattr(torch.nn, cls)(*args, **kwargs)
        e_mod = getattr(ember.nn, cls)(*args, **kwargs)
    assert repr(e_mod) == repr(t_mod)
    t_params = [(n, tuple(p.shape)) for n, p in t_mod.named_parameters()]
    assert [(n, tuple(p.shape)) for n, p in e_mod.named_parameters()] == t_params
    if hasattr(t_mod, "all_weights"):
        assert ([[tuple(w.shape) for w in ws] for ws in e_mod.all_weights]
                == [[tuple(w.shape) for w in ws] for ws in t_mod.all_weights])
        assert e_mod._flat_weights_names == t_mod._flat_weights_names
    for name in ("input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout",
                 "bidirectional", "proj_size", "mode", "nonlinearity"):
        if hasattr(t_mod, name):
            assert getattr(e_mod, name) == getattr(t_mod, name), name


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"])
def test_default_init_is_uniform_in_one_over_sqrt_hidden(cls):
    ember.manual_seed(0)
    hidden = 16
    module = getattr(ember.nn, cls)(8, hidden)
    bound = 1 / math.sqrt(hidden)
    values = np.concatenate([p.detach().numpy().ravel() for p in module.parameters()])
    assert values.dtype == np.float32
    assert np.abs(values).max() <= bound
    # Uniform on [-b, b]: mean 0, variance b^2 / 3.
    assert abs(values.mean()) < 0.1 * bound
    assert abs(values.var() - bound ** 2 / 3) < 0.1 * bound ** 2
    before = values.copy()
    module.reset_parameters()
    after = np.concatenate([p.detach().numpy().ravel() for p in module.parameters()])
    assert not np.array_equal(before, after)


def test_factory_kwargs_and_dtype_conversion():
    lstm = ember.nn.LSTM(3, 4, dtype=ember.float64)
    assert all(p.dtype == ember.float64 for p in lstm.parameters())
    out, (h, c) = lstm(ember.randn(2, 1, 3, dtype=ember.float64))
    assert out.dtype == h.dtype == c.dtype == ember.float64
    gru = ember.nn.GRU(3, 4).double()
    out, h = gru(ember.randn(2, 1, 3, dtype=ember.float64))
    assert out.dtype == ember.float64


def test_state_dict_round_trip_into_torch():
    e_mod = ember.nn.LSTM(3, 5, 2, bidirectional=True, proj_size=2)
    t_mod = torch.nn.LSTM(3, 5, 2, bidirectional=True, proj_size=2)
    t_mod.load_state_dict({k: torch.tensor(v.numpy()) for k, v in e_mod.state_dict().items()})
    x = _randn(4, 2, 3)
    assert_same(list(t_mod(torch.tensor(x))[1]), list(e_mod(ember.tensor(x))[1]), rtol=1e-5)


def test_zero_batch_and_no_grad():
    lstm = ember.nn.LSTM(3, 4, 2)
    out, (h, c) = lstm(ember.randn(5, 0, 3))
    assert out.shape == (5, 0, 4) and h.shape == (2, 0, 4) and c.shape == (2, 0, 4)
    with ember.no_grad():
        out, (h, c) = lstm(ember.randn(5, 2, 3))
    assert out.grad_fn is None and not out.requires_grad


def test_second_backward_without_retain_graph_raises():
    gru = ember.nn.GRU(3, 4)
    out, _ = gru(ember.randn(5, 2, 3))
    loss = out.sum()
    loss.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()


# ---- errors, worded as PyTorch's ---------------------------------------------------------------

def _lstm(lib):
    torch.manual_seed(0)
    return lib.nn.LSTM(10, 20, 2)


ERROR_CASES = [
    lambda lib: _lstm(lib)(lib.randn(5, 3, 10, 1)),
    lambda lib: _lstm(lib)(lib.randn(5, 3, 7)),
    lambda lib: _lstm(lib)(lib.randn(5, 3, 10), (lib.randn(1, 3, 20), lib.randn(2, 3, 20))),
    lambda lib: _lstm(lib)(lib.randn(5, 3, 10), (lib.randn(2, 3, 20), lib.randn(2, 3, 21))),
    lambda lib: _lstm(lib)(lib.randn(5, 3, 10), (lib.randn(2, 3, 20), lib.randn(2, 20))),
    lambda lib: _lstm(lib)(lib.randn(5, 10), (lib.randn(2, 3, 20), lib.randn(2, 20))),
    lambda lib: _lstm(lib)(lib.randn(5, 3, 10, dtype=lib.float64)),
    lambda lib: _lstm(lib)(lib.randn(0, 3, 10)),
    lambda lib: lib.nn.RNN(10, 20, 2)(lib.randn(5, 3, 10, 1)),
    lambda lib: lib.nn.RNN(10, 20, 2)(lib.randn(5, 3, 10), lib.randn(1, 3, 20)),
    lambda lib: lib.nn.RNN(10, 20, 2)(lib.randn(5, 3, 10), lib.randn(3, 20)),
    lambda lib: lib.nn.GRU(10, 20, 2)(lib.randn(5, 10), lib.randn(2, 1, 20)),
    lambda lib: lib.nn.GRU(10, 20, 2)(lib.randn(5, 3, 3, 10)),
    lambda lib: lib.nn.GRU(10, 20, proj_size=2),
    lambda lib: lib.nn.RNN(10, 20, nonlinearity="x"),
    lambda lib: lib.nn.LSTM(10, 20, dropout=2),
    lambda lib: lib.nn.LSTM(10, 20, dropout=True),
    lambda lib: lib.nn.LSTM(10, 20, proj_size=20),
    lambda lib: lib.nn.LSTM(10, 20, proj_size=-1),
    lambda lib: lib.nn.LSTM(10, 20, num_layers=0),
    lambda lib: lib.nn.LSTM(10.0, 20),
    lambda lib: lib.nn.LSTM(10, 0),
    lambda lib: lib.nn.LSTM(10, 20, bias=1),
    lambda lib: lib.nn.LSTM(10, 20, batch_first=None),
    lambda lib: lib.nn.LSTMCell(10, 20)(lib.randn(3, 7)),
    lambda lib: lib.nn.LSTMCell(10, 20)(lib.randn(3, 10), (lib.randn(2, 20), lib.randn(3, 20))),
    lambda lib: lib.nn.LSTMCell(10, 20)(lib.randn(3, 10), (lib.randn(3, 5), lib.randn(3, 20))),
    lambda lib: lib.nn.LSTMCell(10, 20)(lib.randn(3, 10), (lib.randn(3, 20), lib.randn(3, 5))),
    lambda lib: lib.nn.LSTMCell(10, 20)(lib.randn(3, 10), (lib.randn(3, 20), lib.randn(2, 20))),
    lambda lib: lib.nn.LSTMCell(10, 20)(lib.randn(3, 10, 1)),
    lambda lib: lib.nn.LSTMCell(10, 20)(lib.randn(3, 10), (lib.randn(3, 20, 1), lib.randn(3, 20))),
    lambda lib: lib.nn.GRUCell(10, 20)(lib.randn(3, 10), lib.randn(2, 20)),
    lambda lib: lib.nn.GRUCell(10, 20)(lib.randn(10), lib.randn(3, 20)),
    lambda lib: lib.nn.RNNCell(10, 20)(lib.randn(3, 10), lib.randn(3, 20, 1)),
    lambda lib: lib.nn.GRUCell(3, 4)(lib.randn(2, 3), lib.randn(2, 4, dtype=lib.float64)),
    lambda lib: lib.nn.GRUCell(3, 4)(lib.randn(2, 3, dtype=lib.float64)),
    lambda lib: lib.nn.LSTMCell(3, 4)(lib.randn(2, 3, dtype=lib.float64)),
    lambda lib: lib.nn.GRU(3, 4)(lib.randn(2, 1, 3), lib.randn(1, 1, 4, dtype=lib.float64)),
]


@pytest.mark.parametrize("case", range(len(ERROR_CASES)))
def test_errors_match_torch(case):
    compare_error(ERROR_CASES[case])


def test_unknown_cell_nonlinearity_raises_at_forward():
    def fn(lib):
        cell = lib.nn.RNNCell(10, 20, nonlinearity="foo")
        assert repr(cell) == "RNNCell(10, 20, nonlinearity=foo)"
        return cell(lib.randn(3, 10))
    compare_error(fn)


def test_dropout_warning_for_one_layer():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        ember.nn.GRU(3, 4, dropout=0.5)


def test_multi_layer_grid_exercises_every_weight():
    """Every parameter of a 2-layer bidirectional LSTM with projections receives a gradient."""
    lstm = ember.nn.LSTM(3, 5, 2, bidirectional=True, proj_size=2)
    out, (h, c) = lstm(ember.randn(4, 2, 3))
    (out.sum() + h.sum() + c.sum()).backward()
    for name, p in lstm.named_parameters():
        assert p.grad is not None and np.abs(p.grad.numpy()).sum() > 0, name
    assert list(itertools.chain(*lstm._all_weights)) == [n for n, _ in lstm.named_parameters()]


# ---- devices and dtypes ------------------------------------------------------------------------

@pytest.mark.parametrize("mode", list(MODES))
def test_runs_through_the_tensors_backend(mode):
    """On the NumPy-backed "testdev" device the layer computes what it computes on the CPU, and
    mixing devices raises PyTorch's error."""
    cls, extra = MODES[mode]
    module = getattr(ember.nn, cls)(INPUT, HIDDEN, 2, bidirectional=True, **extra)
    x = ember.tensor(_randn(STEPS, BATCH, INPUT))
    expected = _flat_outputs(module(x))
    moved = module.to("testdev")
    x_dev = x.to("testdev").requires_grad_()
    actual = _flat_outputs(moved(x_dev))
    for e, a in zip(expected, actual):
        assert a.device.type == "testdev"
        np.testing.assert_allclose(a.cpu().detach().numpy(), e.detach().numpy(), rtol=1e-6)
    sum(a.sum() for a in actual).backward()
    assert x_dev.grad.device.type == "testdev"
    assert all(p.grad.device.type == "testdev" for p in moved.parameters())
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        moved(x)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("mode", ["lstm", "gru"])
def test_low_precision_close_to_torch(dtype, mode):
    t_mod, e_mod = _pair(mode, INPUT, HIDDEN)
    t_mod.to(getattr(torch, dtype))
    e_mod.to(getattr(ember, dtype))
    x = _randn(STEPS, BATCH, INPUT)
    t_out = _flat_outputs(t_mod(torch.tensor(x).to(getattr(torch, dtype))))
    e_out = _flat_outputs(e_mod(ember.tensor(x).to(getattr(ember, dtype))))
    for t, e in zip(t_out, e_out):
        assert e.dtype == getattr(ember, dtype)
        np.testing.assert_allclose(e.float().detach().numpy(), t.float().detach().numpy(),
                                   atol=2e-2)
