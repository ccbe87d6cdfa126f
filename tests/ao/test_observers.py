"""Observers' qparams against torch.ao.quantization's on the same data, batch after batch."""
import numpy as np
import pytest
import torch
import torch.ao.quantization as tq

import ember
import ember.ao.quantization as eq

pytestmark = pytest.mark.filterwarnings("ignore:Please use quant_min")

# ember's names for torch's qschemes and dtypes
SCHEMES = {torch.per_tensor_affine: eq.per_tensor_affine,
           torch.per_tensor_symmetric: eq.per_tensor_symmetric,
           torch.per_channel_affine: eq.per_channel_affine,
           torch.per_channel_symmetric: eq.per_channel_symmetric,
           torch.per_channel_affine_float_qparams: eq.per_channel_affine_float_qparams}
DTYPES = {torch.quint8: eq.quint8, torch.qint8: eq.qint8, torch.qint32: eq.qint32,
          torch.int8: ember.int8, torch.uint8: ember.uint8}


def _batches(shape, n=4, seed=0):
    rng = np.random.default_rng(seed)
    # shifting scales and offsets so the running min/max and averages really move
    return [(rng.standard_normal(shape) * (1 + i) + 0.3 * i - 0.5).astype(np.float32)
            for i in range(n)]


def _to_ember(kwargs):
    out = {}
    for k, v in kwargs.items():
        if k == "qscheme":
            v = SCHEMES[v]
        elif k == "dtype":
            v = DTYPES[v]
        out[k] = v
    return out


def _assert_same_qparams(e_obs, t_obs, batches):
    for b in batches:
        assert e_obs(ember.tensor(b)) is not None
        t_obs(torch.from_numpy(b))
        es, ez = e_obs.calculate_qparams()
        ts, tz = t_obs.calculate_qparams()
        np.testing.assert_array_equal(es.numpy(), ts.numpy())
        np.testing.assert_array_equal(ez.numpy(), tz.numpy())
        assert str(es.dtype).split(".")[1] == str(ts.dtype).split(".")[1]
        assert str(ez.dtype).split(".")[1] == str(tz.dtype).split(".")[1]
        assert tuple(es.shape) == tuple(ts.shape) and tuple(ez.shape) == tuple(tz.shape)
    np.testing.assert_array_equal(e_obs.min_val.numpy(), t_obs.min_val.numpy())
    np.testing.assert_array_equal(e_obs.max_val.numpy(), t_obs.max_val.numpy())


PER_TENSOR_CONFIGS = [
    {},
    {"dtype": torch.qint8},
    {"dtype": torch.qint8, "qscheme": torch.per_tensor_symmetric},
    {"dtype": torch.quint8, "qscheme": torch.per_tensor_symmetric},
    {"dtype": torch.quint8, "reduce_range": True},
    {"dtype": torch.qint8, "reduce_range": True, "qscheme": torch.per_tensor_symmetric},
    {"quant_min": 0, "quant_max": 127},
    {"quant_min": 0, "quant_max": 15, "qscheme": torch.per_tensor_symmetric},
    {"dtype": torch.qint8, "quant_min": -127, "quant_max": 127, "eps": 2 ** -12,
     "qscheme": torch.per_tensor_symmetric},
    {"dtype": torch.quint8, "quant_min": 0, "quant_max": 255, "reduce_range": True},
    {"dtype": torch.int8},
    {"dtype": torch.uint8, "qscheme": torch.per_tensor_symmetric},
    {"dtype": torch.qint32},
]


@pytest.mark.parametrize("kwargs", PER_TENSOR_CONFIGS)
@pytest.mark.parametrize("name", ["MinMaxObserver", "MovingAverageMinMaxObserver"])
def test_per_tensor_observers_match_torch(name, kwargs):
    t_obs = getattr(tq, name)(**kwargs)
    e_obs = getattr(eq, name)(**_to_ember(kwargs))
    assert (e_obs.quant_min, e_obs.quant_max) == (t_obs.quant_min, t_obs.quant_max)
    _assert_same_qparams(e_obs, t_obs, _batches((5, 7)))


def test_moving_average_constant_and_all_positive_data():
    kwargs = {"averaging_constant": 0.3}
    batches = [np.abs(b) + 1 for b in _batches((6,))]
    _assert_same_qparams(eq.MovingAverageMinMaxObserver(**kwargs),
                         tq.MovingAverageMinMaxObserver(**kwargs), batches)


PER_CHANNEL_CONFIGS = [
    {},
    {"ch_axis": 1, "dtype": torch.qint8, "qscheme": torch.per_channel_symmetric},
    {"ch_axis": 2, "dtype": torch.quint8, "reduce_range": True},
    {"ch_axis": -1, "dtype": torch.qint8, "quant_min": -127, "quant_max": 127},
    {"ch_axis": 0, "dtype": torch.quint8, "qscheme": torch.per_channel_symmetric},
    {"ch_axis": 1, "dtype": torch.quint8, "qscheme": torch.per_channel_affine_float_qparams},
]


@pytest.mark.parametrize("kwargs", PER_CHANNEL_CONFIGS)
@pytest.mark.parametrize("name", ["PerChannelMinMaxObserver",
                                  "MovingAveragePerChannelMinMaxObserver"])
def test_per_channel_observers_match_torch(name, kwargs):
    t_obs = getattr(tq, name)(**kwargs)
    e_obs = getattr(eq, name)(**_to_ember(kwargs))
    _assert_same_qparams(e_obs, t_obs, _batches((3, 4, 5)))


def test_constant_input_gives_eps_scale_as_torch():
    for name in ("MinMaxObserver", "PerChannelMinMaxObserver"):
        _assert_same_qparams(getattr(eq, name)(), getattr(tq, name)(),
                             [np.zeros((2, 3), np.float32)])


def test_defaults_match_torch():
    pairs = [("default_observer", {}), ("default_weight_observer", {}),
             ("default_per_channel_weight_observer", {}),
             ("weight_observer_range_neg_127_to_127", {}),
             ("per_channel_weight_observer_range_neg_127_to_127", {}),
             ("default_float_qparams_observer", {})]
    for name, _ in pairs:
        t_obs, e_obs = getattr(tq, name)(), getattr(eq, name)()
        assert type(e_obs).__name__ == type(t_obs).__name__
        assert (e_obs.quant_min, e_obs.quant_max) == (t_obs.quant_min, t_obs.quant_max)
        assert e_obs.qscheme.name == str(t_obs.qscheme).split(".")[1]
        _assert_same_qparams(e_obs, t_obs, _batches((3, 4)))
    dyn = eq.default_dynamic_quant_observer()
    assert isinstance(dyn, eq.PlaceholderObserver) and dyn.is_dynamic
    assert (dyn.quant_min, dyn.quant_max, dyn.dtype) == (0, 255, eq.quint8)


def test_with_args_builds_fresh_instances():
    factory = eq.MinMaxObserver.with_args(dtype=eq.qint8).with_args(reduce_range=True)
    a, b = factory(), factory()
    assert a is not b and (a.quant_min, a.quant_max) == (-64, 63)
    made = []
    factory = eq.MinMaxObserver.with_callable_args(eps=lambda: made.append(1) or 0.5)
    factory()
    factory()
    assert made == [1, 1]


def test_unobserved_returns_defaults_with_warning():
    for obs in (eq.MinMaxObserver(), eq.PerChannelMinMaxObserver()):
        with pytest.warns(UserWarning, match="must run observer"):
            s, z = obs.calculate_qparams()
        assert s.tolist() == [1.0] and z.tolist() == [0]


def test_observer_passes_input_through_and_keeps_no_graph():
    x = ember.randn(3, 4, requires_grad=True)
    obs = eq.MinMaxObserver()
    assert obs(x) is x
    assert obs.min_val.grad_fn is None and not obs.min_val.requires_grad
    assert obs(ember.tensor([])) is not None  # empty input: nothing recorded
    assert float(obs.min_val) == float(x.detach().min())


def test_reset_and_state_dict_round_trip():
    obs = eq.PerChannelMinMaxObserver(ch_axis=1)
    obs(ember.tensor(_batches((2, 3))[0]))
    fresh = eq.PerChannelMinMaxObserver(ch_axis=1)
    fresh.load_state_dict(obs.state_dict())
    for a, b in zip(obs.calculate_qparams(), fresh.calculate_qparams()):
        assert a.tolist() == b.tolist()
    obs.reset_min_max_vals()
    assert obs.min_val.numel() == 0
    mm = eq.MinMaxObserver()
    mm(ember.ones(3))
    mm.reset_min_max_vals()
    assert float(mm.min_val) == float("inf") and float(mm.max_val) == float("-inf")


def test_placeholder_observer():
    obs = eq.PlaceholderObserver(dtype=ember.float16)
    x = ember.randn(2)
    assert obs(x) is x
    with pytest.raises(Exception, match="should not be called for PlaceholderObserver"):
        obs.calculate_qparams()


def test_bad_arguments_raise_as_torch():
    with pytest.raises(NotImplementedError, match="only support"):
        eq.MinMaxObserver(qscheme=eq.per_channel_affine)
    with pytest.raises(NotImplementedError, match="only support"):
        eq.PerChannelMinMaxObserver(qscheme=eq.per_tensor_affine)
    with pytest.raises(NotImplementedError, match="Cannot reduce range for symmetric"):
        eq.MinMaxObserver(qscheme=eq.per_tensor_symmetric, reduce_range=True)
    with pytest.raises(AssertionError, match="must include 0"):
        eq.MinMaxObserver(quant_min=1, quant_max=10)
    with pytest.raises(AssertionError, match="data type"):
        eq.MinMaxObserver(dtype=ember.float32)
    with pytest.raises(AssertionError, match="maximum bit range"):
        eq.MinMaxObserver(dtype=eq.qint8, quant_min=-200, quant_max=200)
    with pytest.raises(NotImplementedError, match="averaging constant"):
        eq.MovingAverageMinMaxObserver(is_dynamic=True)


def test_qscheme_and_dtype_markers():
    # the quantized dtypes and qschemes are ember's own, top-level as torch's
    assert eq.per_tensor_affine is ember.per_tensor_affine and eq.qint8 is ember.qint8
    assert repr(eq.per_tensor_affine) == "ember.per_tensor_affine"
    assert repr(eq.qint8) == "ember.qint8"
    assert (ember.iinfo(eq.quint8).min, ember.iinfo(eq.quint8).max) == (0, 255)
    import pickle
    assert pickle.loads(pickle.dumps(eq.per_channel_symmetric)) is eq.per_channel_symmetric
    assert pickle.loads(pickle.dumps(eq.qint8)) is eq.qint8


HISTOGRAM_CONFIGS = [
    {},
    {"bins": 256, "dtype": torch.qint8, "qscheme": torch.per_tensor_symmetric},
    {"bins": 512, "quant_min": 0, "quant_max": 127},
    {"bins": 128, "dtype": torch.quint8, "reduce_range": True},
]


@pytest.mark.parametrize("kwargs", HISTOGRAM_CONFIGS)
def test_histogram_observer_matches_torch(kwargs):
    t_obs = tq.HistogramObserver(**kwargs)
    e_obs = eq.HistogramObserver(**_to_ember(kwargs))
    _assert_same_qparams(e_obs, t_obs, _batches((8, 16), n=5, seed=3))
    np.testing.assert_array_equal(e_obs.histogram.numpy(), t_obs.histogram.numpy())


def test_histogram_observer_constant_first_batch_and_inf():
    # a one-point histogram is moved whole into the wider range; infinities are ignored
    batches = [np.full((4,), 0.5, np.float32), _batches((10,), seed=4)[1],
               np.array([np.inf, -1.0, 3.0], np.float32)]
    t_obs, e_obs = tq.default_histogram_observer(), eq.default_histogram_observer()
    with pytest.warns(UserWarning, match="inf detected"):
        _assert_same_qparams(e_obs, t_obs, batches)
    np.testing.assert_array_equal(e_obs.histogram.numpy(), t_obs.histogram.numpy())
    fresh = eq.default_histogram_observer()
    fresh.load_state_dict(e_obs.state_dict())
    assert [t.tolist() for t in fresh.calculate_qparams()] == \
        [t.tolist() for t in e_obs.calculate_qparams()]
    with pytest.raises(NotImplementedError, match="only support"):
        eq.HistogramObserver(qscheme=eq.per_channel_affine)
