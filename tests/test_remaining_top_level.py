"""The remaining top-level functions and Tensor methods, against torch."""
import math
import subprocess
import sys
import warnings

import pytest
import torch

import ember
from torch_compare import compare, compare_error


def test_typename_matches_torch():
    assert ember.typename(ember.ones(2)) == torch.typename(torch.ones(2)).replace("torch",
                                                                                  "ember")
    assert ember.typename(ember.ones(2, dtype=ember.int64)) == "ember.LongTensor"
    for obj in (1, "s", [1], None, math.pi, warnings.warn):
        assert ember.typename(obj) == torch.typename(obj)
    assert ember.typename(ember.nn.Linear) == torch.typename(torch.nn.Linear).replace(
        "torch", "ember")
    assert ember.typename(ember.nn.Linear(1, 1)) == torch.typename(torch.nn.Linear(1, 1)).replace(
        "torch", "ember")


def test_interop_threads_follow_the_crc_pool():
    from ember import serialization
    n = ember.get_num_interop_threads()
    assert isinstance(n, int) and n >= 1
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="set_num_interop_threads expects a positive "
                                               "integer"):
            lib.set_num_interop_threads(0)
    saved_pool, saved_pid, saved_n = (serialization._CRC_POOL, serialization._CRC_POOL_PID,
                                      serialization._INTEROP_THREADS)
    saved_started = serialization._INTEROP_STARTED_PID
    try:
        serialization._CRC_POOL = serialization._CRC_POOL_PID = None
        serialization._INTEROP_STARTED_PID = None
        ember.set_num_interop_threads(3)
        assert ember.get_num_interop_threads() == 3
        assert serialization._crc_pool()._max_workers == 3
        with pytest.raises(RuntimeError, match="cannot set number of interop threads after "
                                               "parallel work has started"):
            ember.set_num_interop_threads(2)
    finally:
        serialization._CRC_POOL, serialization._CRC_POOL_PID = saved_pool, saved_pid
        serialization._INTEROP_STARTED_PID = saved_started
        serialization._INTEROP_THREADS = saved_n
    assert ember.init_num_threads() is None and torch.init_num_threads() is None


def test_flush_denormal_cannot_be_set():
    """NumPy gives no access to the FTZ/DAZ bits: Ember says so by returning False, and
    denormals keep their values."""
    assert ember.set_flush_denormal(True) is False
    tiny = ember.tensor([1e-310], dtype=ember.float64)
    assert tiny.item() == 1e-310


def test_is_distributed_and_flags_match_torch():
    assert ember.is_distributed(ember.ones(2)) is torch.is_distributed(torch.ones(2)) is False
    t, e = torch.ones(2), ember.ones(2)
    assert e.is_nested is t.is_nested and e.is_mkldnn is t.is_mkldnn
    compare_error(lambda lib: lib.ones(2).is_nonzero())
    compare_error(lambda lib: lib.ones(0).is_nonzero())
    compare_error(lambda lib: lib.is_nonzero(lib.ones(3)))
    assert ember.tensor([0.0]).is_nonzero() is torch.tensor([0.0]).is_nonzero()
    assert ember.tensor(3).is_nonzero() is True


def test_set_default_tensor_type_matches_torch():
    saved = torch.get_default_dtype(), ember.get_default_dtype()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for t_arg, e_arg in [("torch.DoubleTensor", "torch.DoubleTensor"),
                                 (torch.FloatTensor, ember.FloatTensor),
                                 (torch.DoubleTensor, ember.DoubleTensor),
                                 ("torch.HalfTensor", "ember.HalfTensor")]:
                torch.set_default_tensor_type(t_arg)
                ember.set_default_tensor_type(e_arg)
                assert str(ember.get_default_dtype()) == str(torch.get_default_dtype()).replace(
                    "torch", "ember")
                assert str(ember.ones(1).dtype) == str(torch.ones(1).dtype).replace("torch",
                                                                                    "ember")
            compare_error(lambda lib: lib.set_default_tensor_type(lib.LongTensor))
            compare_error(lambda lib: lib.set_default_tensor_type("torch.IntTensor"))
            compare_error(lambda lib: lib.set_default_tensor_type(f"{lib.__name__}.Bogus"))
    finally:
        torch.set_default_dtype(saved[0])
        ember.set_default_dtype(saved[1])


def test_set_default_tensor_type_warns_once_as_torch():
    code = ("import warnings, {lib}\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    {lib}.set_default_tensor_type('torch.DoubleTensor')\n"
            "    {lib}.set_default_tensor_type('torch.FloatTensor')\n"
            "print([(x.category.__name__, str(x.message).split(' (Triggered')[0]) for x in w])")
    outputs = [subprocess.run([sys.executable, "-c", code.format(lib=lib)], capture_output=True,
                              text=True, check=True).stdout for lib in ("torch", "ember")]
    assert outputs[0] == outputs[1] and "deprecated as of PyTorch 2.1" in outputs[0]


@pytest.mark.parametrize("size,fill", [(3, -1), (1, 7), (0, -1), (5, 9)])
def test_nonzero_static_matches_torch(size, fill, device):
    data = [[0, 1, 0], [2, 0, 3]]
    compare(lambda lib: lib.nonzero_static(lib.tensor(data), size=size, fill_value=fill))
    compare(lambda lib: lib.tensor([0.0, 3.0, 0.0, 4.0]).nonzero_static(size=size))
    compare(lambda lib: lib.nonzero_static(lib.tensor(3), size=size))
    result = ember.nonzero_static(ember.tensor(data, device=device), size=size)
    assert result.device.type == device and result.dtype is ember.int64


def test_nonzero_static_errors_match_torch():
    compare_error(lambda lib: lib.nonzero_static(lib.tensor([1, 2]), size=-1))
    compare_error(lambda lib: lib.nonzero_static(lib.tensor([1.0, 0.0]), size=2,
                                                 fill_value=2.5))


@pytest.mark.parametrize("pow_,dim", [(2, 0), (2, 1), (2, 2), (3, -1), (1, 0), (2, -1)])
def test_norm_except_dim_matches_torch(pow_, dim):
    compare(lambda lib: lib.norm_except_dim(lib.arange(24.0).reshape(2, 3, 4) - 7, pow_, dim))
    t = torch.arange(24.0).reshape(2, 3, 4).requires_grad_()
    e = ember.arange(24.0).reshape(2, 3, 4).requires_grad_()
    torch.norm_except_dim(t, pow_, dim).sum().backward()
    ember.norm_except_dim(e, pow_, dim).sum().backward()
    assert ember.tensor(t.grad.tolist()).allclose(e.grad, rtol=1e-5, atol=1e-6)


def test_resize_as_matches_torch():
    compare(lambda lib: lib.resize_as_(lib.zeros(2), lib.ones(2, 3)).shape)


def test_get_device_module_matches_torch():
    assert ember.get_device_module("cpu") is ember.cpu
    assert ember.get_device_module(ember.device("cpu")) is ember.cpu
    assert ember.get_device_module("cuda:0") is ember.cuda
    assert torch.get_device_module() is torch.cpu  # no accelerator: the CPU's module
    current = ember.accelerator.current_accelerator()
    if current is None:
        assert ember.get_device_module() is ember.cpu
    else:  # the test suite's registered backend, which has no ember.<type> module
        with pytest.raises(RuntimeError, match=f"Device '{current.type}' does not have a "
                                               "corresponding module"):
            ember.get_device_module()
    compare_error(lambda lib: lib.get_device_module("meta"))
    compare_error(lambda lib: lib.get_device_module(3))


# ---- Tensor methods --------------------------------------------------------------------------

def test_apply_map_map2_match_torch():
    compare(lambda lib: lib.tensor([1.0, -2.0, 3.5]).apply_(lambda x: x * 2 + 1))
    compare(lambda lib: lib.tensor([1, 2, 3]).apply_(lambda x: x / 2 + 0.7))
    compare(lambda lib: lib.tensor([True, False]).apply_(lambda x: not x))
    compare(lambda lib: lib.tensor([1 + 1j]).apply_(lambda x: x * 2))
    compare(lambda lib: lib.ones(2, 3).map_(lib.arange(3.0), lambda a, b: a + b * 10))
    compare(lambda lib: lib.ones(2, 2)[:, 0].apply_(lambda x: 3))
    compare(lambda lib: lib.ones(2).map2_(lib.ones(2), lib.tensor([5.0]),
                                          lambda a, b, c: a + b + c))
    types_seen = {}
    for lib in (torch, ember):
        seen = []
        lib.tensor([1, 2]).apply_(lambda x: seen.append(type(x)) or x)
        lib.tensor([1.5]).apply_(lambda x: seen.append(type(x)) or x)
        types_seen[lib] = seen
    assert types_seen[torch] == types_seen[ember] == [int, int, float]


def test_apply_writes_in_place_and_bumps_the_version():
    base = ember.zeros(2, 3)
    view = base[:, 1]
    version = base._version
    assert view.apply_(lambda x: 4.0) is view
    assert base.tolist() == [[0.0, 4.0, 0.0], [0.0, 4.0, 0.0]] and base._version > version


@pytest.mark.parametrize("call", [
    lambda lib: lib.ones(2, requires_grad=True).apply_(lambda x: x),
    lambda lib: lib.ones(2).map_(lib.ones(2, requires_grad=True), lambda a, b: a),
    lambda lib: lib.ones(2, requires_grad=True).map2_(lib.ones(2), lib.ones(2), lambda a, b, c: a),
    lambda lib: lib.ones(2).map_(lib.ones(2, dtype=lib.int64), lambda a, b: a),
    lambda lib: lib.ones(2).map_(1, lambda a, b: a),
    lambda lib: lib.ones(2).map_(lib.ones(3), lambda a, b: a),
    lambda lib: lib.tensor([1, 2]).apply_(lambda x: "a"),
    lambda lib: lib.tensor([1.0]).apply_(lambda x: None),
    lambda lib: lib.tensor([1, 2], dtype=lib.uint8).apply_(lambda x: 300),
])
def test_apply_map_errors_match_torch(call):
    compare_error(call)


def test_is_set_to_matches_torch():
    for fn in [lambda lib, x: x.is_set_to(x.view(2, 3)), lambda lib, x: x.is_set_to(x[:]),
               lambda lib, x: x.is_set_to(x), lambda lib, x: x.is_set_to(x.t().t()),
               lambda lib, x: x.is_set_to(lib.ones(2, 3)), lambda lib, x: x[0].is_set_to(x[1]),
               lambda lib, x: x.is_set_to(x.reshape(3, 2)), lambda lib, x: x.is_set_to(x[:1])]:
        assert fn(ember, ember.ones(2, 3)) == fn(torch, torch.ones(2, 3))
    assert ember.ones(2, 2).is_set_to(ember.ones(2, 2).t()) is False
    assert ember.empty(0).is_set_to(ember.empty(0)) == torch.empty(0).is_set_to(torch.empty(0))


@pytest.mark.parametrize("make", [
    lambda lib: lib.ones(2, 3), lambda lib: lib.ones(2, 3).t(), lambda lib: lib.ones(2, 3, 4, 5)
    .to(memory_format=lib.channels_last), lambda lib: lib.ones(3, 4).expand(2, 3, 4),
    lambda lib: lib.ones(1, 3), lambda lib: lib.ones(3, 1).t(), lambda lib: lib.ones(2, 1, 4, 5),
    lambda lib: lib.ones(4, 5, 6).permute(2, 0, 1), lambda lib: lib.ones(4, 6)[:, ::2],
    lambda lib: lib.ones(2, 2, 2).permute(1, 2, 0), lambda lib: lib.tensor(1.0)])
def test_dim_order_matches_torch(make):
    assert make(ember).dim_order() == make(torch).dim_order()
    compare(lambda lib: _outcome(lambda: make(lib).dim_order(ambiguity_check=True)))
    compare(lambda lib: _outcome(lambda: make(lib).dim_order(
        ambiguity_check=[lib.channels_last, lib.contiguous_format])))


def _outcome(fn):
    try:
        return fn()
    except RuntimeError as error:
        return str(error)


def test_dim_order_errors_match_torch():
    compare_error(lambda lib: lib.ones(2, 3).dim_order(ambiguity_check=5))
    compare_error(lambda lib: lib.ones(2, 3).dim_order(ambiguity_check=[1]))


def test_module_load_matches_torch():
    for assign in (False, True):
        results = {}
        for lib in (torch, ember):
            target, source = lib.zeros(3), lib.arange(3.0, requires_grad=True)
            out = target.module_load(source, assign=assign)
            results[lib] = (out.tolist(), out.requires_grad, target.tolist(),
                            out is target, out.is_leaf)
        assert results[torch][:2] == results[ember][:2]
        assert results[torch][2] == results[ember][2]
        assert results[torch][4] == results[ember][4]


# ---- embedding_bag (ATen form) ---------------------------------------------------------------

EMBEDDING_BAG_CASES = [
    dict(mode=0), dict(mode=1), dict(mode=2), dict(mode=0, padding_idx=4),
    dict(mode=1, padding_idx=4), dict(mode=2, padding_idx=4), dict(mode=1, padding_idx=-1),
    dict(mode=0, per_sample_weights=True), dict(mode=0, include_last_offset=True),
    dict(mode=1, include_last_offset=True), dict(mode=2, include_last_offset=True),
    dict(mode=0, dtype="float64"), dict(mode=2, dtype="float64"),
    dict(mode=2, index_dtype="int32"), dict(mode=0, noncontiguous=True),
]


@pytest.mark.parametrize("case", EMBEDDING_BAG_CASES, ids=[str(c) for c in EMBEDDING_BAG_CASES])
def test_embedding_bag_matches_torch(case):
    case = dict(case)
    dtype, index_dtype = case.pop("dtype", "float32"), case.pop("index_dtype", "int64")
    noncontiguous = case.pop("noncontiguous", False)
    last = case.get("include_last_offset", False)

    def run(lib):
        weight = (lib.arange(24.0, dtype=getattr(lib, dtype)).reshape(6, 4) * 7 % 11)
        if noncontiguous:
            weight = weight.t().contiguous().t()
        weight.requires_grad_()
        indices = lib.tensor([1, 2, 4, 5, 4, 3, 3], dtype=getattr(lib, index_dtype))
        offsets = lib.tensor([0, 2, 2, 5] + ([7] if last else []),
                             dtype=getattr(lib, index_dtype))
        psw = lib.arange(7.0, dtype=getattr(lib, dtype)) if case.get("per_sample_weights") \
            else None
        # torch's binding takes these positionally (its overloads differ in keywords)
        result = lib.embedding_bag(weight, indices, offsets, False, case["mode"], False, psw,
                                   last, case.get("padding_idx"))
        result[0].sum().backward()
        return [*result, weight.grad]

    compare(run)


def test_embedding_bag_errors_match_torch():
    compare_error(lambda lib: lib.embedding_bag(lib.ones(3, 2), lib.tensor([0, 1]),
                                                lib.tensor([0]), False, 3))
    compare_error(lambda lib: lib.embedding_bag(lib.ones(3, 2), lib.tensor([0, 1]), None))
