"""ember.testing against torch.testing: assert_close's rules and messages, make_tensor's ranges
and flags, assert_allclose's deprecation."""
import collections
import math
import warnings

import numpy as np
import pytest
import torch

import ember


def _messages(fn):
    """(exception type, message) that ``fn(lib)`` raises with torch and with Ember, or None."""
    results = []
    for lib in (torch, ember):
        try:
            fn(lib)
        except Exception as error:  # noqa: BLE001  (the type is what is compared)
            message = str(error).replace("ember._tensor.Tensor", "ember.Tensor")
            results.append((type(error), message.replace("torch", "ember")))
        else:
            results.append(None)
    return results


def _same_outcome(fn):
    torch_result, ember_result = _messages(fn)
    assert ember_result == torch_result
    return torch_result


CASES = {
    "equal": lambda lib: lib.testing.assert_close(lib.tensor([1.0, 2.0]), lib.tensor([1.0, 2.0])),
    "within_default_rtol": lambda lib: lib.testing.assert_close(
        lib.tensor([1.0, 2.0]), lib.tensor([1.0, 2.0 + 2e-6])),
    "float32_values": lambda lib: lib.testing.assert_close(
        lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]),
        lib.tensor([[1.0, 2.5, 3.0], [4.0, 5.0, 6.1]])),
    "float64_values": lambda lib: lib.testing.assert_close(
        lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64), lib.tensor([1.0, 2.0, 3.001],
                                                                   dtype=lib.float64)),
    "float16_values": lambda lib: lib.testing.assert_close(
        lib.tensor([1.0, 2.0], dtype=lib.float16), lib.tensor([1.0, 2.1], dtype=lib.float16)),
    "bfloat16_close": lambda lib: lib.testing.assert_close(
        lib.tensor([1.0, 2.0], dtype=lib.bfloat16), lib.tensor([1.0, 2.0078125],
                                                               dtype=lib.bfloat16)),
    "int_exact": lambda lib: lib.testing.assert_close(lib.tensor([1, 2, 3]),
                                                      lib.tensor([1, 2, 4])),
    "uint8_exact": lambda lib: lib.testing.assert_close(
        lib.tensor([1, 200], dtype=lib.uint8), lib.tensor([3, 2], dtype=lib.uint8)),
    "bool_tensor": lambda lib: lib.testing.assert_close(lib.tensor([True, False]),
                                                        lib.tensor([True, True])),
    "complex": lambda lib: lib.testing.assert_close(lib.tensor([1 + 1j, 2j]),
                                                    lib.tensor([1 + 1j, 2.5j])),
    "zero_d": lambda lib: lib.testing.assert_close(lib.tensor(1.0), lib.tensor(1.5)),
    "nan_unequal": lambda lib: lib.testing.assert_close(lib.tensor([float("nan")]),
                                                        lib.tensor([float("nan")])),
    "nan_equal": lambda lib: lib.testing.assert_close(lib.tensor([float("nan"), 1.0]),
                                                      lib.tensor([float("nan"), 1.0]),
                                                      equal_nan=True),
    "inf": lambda lib: lib.testing.assert_close(lib.tensor([float("inf"), 1.0]),
                                                lib.tensor([float("inf"), 1.0])),
    "explicit_tol": lambda lib: lib.testing.assert_close(lib.tensor([1.0, 2.0]),
                                                         lib.tensor([1.0, 2.2]),
                                                         rtol=0.0, atol=0.1),
    "explicit_tol_pass": lambda lib: lib.testing.assert_close(lib.tensor([1.0, 2.0]),
                                                              lib.tensor([1.0, 2.2]),
                                                              rtol=0.2, atol=0.0),
    "zero_tol": lambda lib: lib.testing.assert_close(lib.tensor([1.0, 2.0]),
                                                     lib.tensor([1.0, 2.2]), rtol=0, atol=0),
    "only_rtol": lambda lib: lib.testing.assert_close(lib.tensor(1.0), lib.tensor(1.0),
                                                      rtol=0.1),
    "only_atol": lambda lib: lib.testing.assert_close(lib.tensor(1.0), lib.tensor(1.0),
                                                      atol=0.1),
    "shape": lambda lib: lib.testing.assert_close(lib.zeros(2, 3), lib.zeros(3, 2)),
    "dtype": lambda lib: lib.testing.assert_close(lib.zeros(2), lib.zeros(2, dtype=lib.float64)),
    "dtype_unchecked": lambda lib: lib.testing.assert_close(
        lib.tensor([1.0, 2.0]), lib.tensor([1.0, 2.0001], dtype=lib.float64), check_dtype=False),
    "dtype_unchecked_tol_max": lambda lib: lib.testing.assert_close(
        lib.tensor([1.0, 2.0], dtype=lib.float16), lib.tensor([1.0, 2.001], dtype=lib.float64),
        check_dtype=False),
    "int_vs_float_unchecked": lambda lib: lib.testing.assert_close(
        lib.tensor([1, 2]), lib.tensor([1.0, 2.5]), check_dtype=False),
    "stride": lambda lib: lib.testing.assert_close(lib.zeros(2, 3), lib.zeros(3, 2).t(),
                                                   check_stride=True),
    "stride_unchecked": lambda lib: lib.testing.assert_close(lib.zeros(2, 3), lib.zeros(3, 2).t()),
    "layout": lambda lib: lib.testing.assert_close(lib.eye(2).to_sparse(), lib.eye(2)),
    "layout_unchecked": lambda lib: lib.testing.assert_close(lib.eye(2).to_sparse(), lib.eye(2),
                                                             check_layout=False),
    "sparse_coo_values": lambda lib: lib.testing.assert_close(
        lib.eye(3).to_sparse(), (2 * lib.eye(3)).to_sparse()),
    "sparse_coo_nnz": lambda lib: lib.testing.assert_close(
        lib.eye(3).to_sparse(), lib.ones(3, 3).to_sparse()),
    "sparse_csr_values": lambda lib: lib.testing.assert_close(
        lib.eye(3).to_sparse_csr(), (2 * lib.eye(3)).to_sparse_csr()),
    "msg_str": lambda lib: lib.testing.assert_close(lib.tensor(1.0), lib.tensor(2.0), msg="boom"),
    "msg_callable": lambda lib: lib.testing.assert_close(lib.tensor([1.0]), lib.tensor([2.0]),
                                                         msg=lambda m: "X" + m + "Y"),
    "scalars": lambda lib: lib.testing.assert_close(1.0, 1.5),
    "scalars_close": lambda lib: lib.testing.assert_close(1.0, 1.0 + 1e-8),
    "ints": lambda lib: lib.testing.assert_close(3, 4),
    "int_float_dtype": lambda lib: lib.testing.assert_close(1, 1.0, check_dtype=True),
    "int_float_default": lambda lib: lib.testing.assert_close(1, 1.0),
    "complex_scalars": lambda lib: lib.testing.assert_close(1 + 2j, 1 + 3j),
    "nan_scalars": lambda lib: lib.testing.assert_close(float("nan"), float("nan"),
                                                        equal_nan=True),
    "numpy_scalar": lambda lib: lib.testing.assert_close(np.float32(1.0), 1.5),
    "bools": lambda lib: lib.testing.assert_close(True, False),
    "numpy_bool": lambda lib: lib.testing.assert_close(np.bool_(True), True),
    "none": lambda lib: lib.testing.assert_close(None, None),
    "none_mismatch": lambda lib: lib.testing.assert_close(None, 1),
    "sequence": lambda lib: lib.testing.assert_close([lib.tensor(1.0), (2.0, lib.tensor([3]))],
                                                     [lib.tensor(1.0), (2.0, lib.tensor([4]))]),
    "sequence_length": lambda lib: lib.testing.assert_close([1, 2], [1, 2, 3]),
    "mapping": lambda lib: lib.testing.assert_close({"a": lib.tensor([1.0]), "b": 2},
                                                    {"a": lib.tensor([1.5]), "b": 2}),
    "mapping_keys": lambda lib: lib.testing.assert_close({"a": 1, "c": 3}, {"a": 1, "b": 2}),
    "ordered_dict": lambda lib: lib.testing.assert_close(
        collections.OrderedDict(w=lib.ones(2)), {"w": lib.ones(2)}),
    "numpy_arrays": lambda lib: lib.testing.assert_close(np.array([1.0, 2.0]),
                                                         np.array([1.0, 2.5])),
    "tensor_vs_numpy": lambda lib: lib.testing.assert_close(lib.tensor([1.0]), np.array([1.0])),
    "tensor_vs_scalar": lambda lib: lib.testing.assert_close(lib.tensor(1.0), 1.0),
    "unknown_types": lambda lib: lib.testing.assert_close("a", "a"),
    "requires_grad_ignored": lambda lib: lib.testing.assert_close(
        lib.ones(2, requires_grad=True), lib.ones(2)),
    "many_mismatches": lambda lib: lib.testing.assert_close(
        lib.arange(24.0).reshape(2, 3, 4), lib.arange(24.0).reshape(2, 3, 4) * 1.01),
    "negative_expected": lambda lib: lib.testing.assert_close(
        lib.tensor([-1.0, -2.0, 0.5]), lib.tensor([-1.5, -2.0, 0.0])),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_assert_close_matches_torch(case):
    """Same outcome as torch: passes, or raises the same exception type with the same message
    (torch's names read as Ember's)."""
    _same_outcome(CASES[case])


def test_assert_close_message_format():
    """The exact text torch writes, stated here so that a change in either is seen."""
    outcome = _same_outcome(CASES["float32_values"])
    assert outcome == (AssertionError, (
        "Tensor-likes are not close!\n\nMismatched elements: 2 / 6 (33.3%)\n"
        "Greatest absolute difference: 0.5 at index (0, 1) (up to 1e-05 allowed)\n"
        "Greatest relative difference: 0.20000000298023224 at index (0, 1) "
        "(up to 1.3e-06 allowed)"))
    assert _same_outcome(CASES["sequence"])[1].endswith(
        "The failure occurred for item [1][1]")


def test_assert_close_across_devices(device):
    a = ember.tensor([1.0, 2.0], device=device)
    ember.testing.assert_close(a, a.clone())
    if device != "cpu":
        with pytest.raises(AssertionError, match="The values for attribute 'device' do not "
                                                 "match: .* != cpu."):
            ember.testing.assert_close(a, a.cpu())
        ember.testing.assert_close(a, a.cpu(), check_device=False)


def test_assert_allclose_warns_and_compares_as_torch():
    for case in [lambda lib: lib.testing.assert_allclose(lib.tensor([1.0, 2.0]), [1.0, 2.00001]),
                 lambda lib: lib.testing.assert_allclose(lib.tensor([1.0, 2.0]), [1.0, 2.1]),
                 lambda lib: lib.testing.assert_allclose([float("nan")], [float("nan")]),
                 lambda lib: lib.testing.assert_allclose(lib.tensor([1.0]), [2.0], msg="m")]:
        with warnings.catch_warnings(record=True) as torch_warns:
            warnings.simplefilter("always")
            torch_outcome = _messages(lambda lib: case(torch) if lib is torch else None)[0]
        with warnings.catch_warnings(record=True) as ember_warns:
            warnings.simplefilter("always")
            ember_outcome = _messages(lambda lib: case(ember) if lib is ember else None)[1]
        assert ember_outcome == torch_outcome
        assert [w.category for w in ember_warns] == [w.category for w in torch_warns]
        assert str(ember_warns[0].message) == str(torch_warns[0].message)


# ---- make_tensor ------------------------------------------------------------------------------

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64", "complex64", "complex128"]


@pytest.mark.parametrize("name", DTYPES)
def test_make_tensor_default_range_matches_torch(name, device):
    """The values lie in torch's default interval for the dtype, and (with enough draws) reach
    both ends of it as torch's do."""
    dtype = getattr(ember, name)
    t = ember.testing.make_tensor(4000, dtype=dtype, device=device)
    reference = torch.testing.make_tensor(4000, dtype=getattr(torch, name), device="cpu")
    assert t.dtype is dtype and t.shape == (4000,) and t.device.type == device
    parts = ([t.real, t.imag] if t.is_complex() else [t]) if name != "bool" else [t.long()]
    reference_parts = ([reference.real, reference.imag] if reference.is_complex()
                       else [reference]) if name != "bool" else [reference.long()]
    for part, ref in zip(parts, reference_parts):
        low, high = float(part.min()), float(part.max())
        ref_low, ref_high = float(ref.min()), float(ref.max())
        if name in ("bool", "uint8", "int8", "int16", "int32", "int64"):
            assert (low, high) == (ref_low, ref_high)  # every integer of the range is drawn
        else:
            assert -9 <= low < -8.5 and 8.5 < high < 9 and -9 <= ref_low and ref_high < 9


@pytest.mark.parametrize("name,low,high", [
    ("uint8", -100, 3.2), ("int8", -1000, 1000), ("int64", 2.5, 4.1), ("bool", None, None),
    ("float32", 0.25, 0.5), ("float16", -1e9, 1e9), ("int32", 7, 8), ("float64", -1e308, 1e308)])
def test_make_tensor_clamps_and_rounds_bounds_as_torch(name, low, high):
    """Bounds outside the dtype are clamped to it, integer bounds round up: the drawn values
    stay inside torch's interval; with integers every value of it occurs."""
    e = ember.testing.make_tensor(3000, dtype=getattr(ember, name), device="cpu", low=low,
                                  high=high)
    t = torch.testing.make_tensor(3000, dtype=getattr(torch, name), device="cpu", low=low,
                                  high=high)
    if name in ("uint8", "int8", "int64", "int32", "bool"):
        assert sorted(set(e.long().tolist())) == sorted(set(t.long().tolist()))
    else:
        finfo = torch.finfo(getattr(torch, name))
        lo = max(low, finfo.min)
        hi = min(high, finfo.max)
        assert lo <= float(e.min()) and float(e.max()) <= hi
        assert math.isfinite(float(e.abs().max()))


def test_make_tensor_flags_match_torch(device):
    for kwargs in [dict(noncontiguous=True), dict(memory_format=torch.channels_last),
                   dict(requires_grad=True), dict(exclude_zero=True, low=-1, high=1)]:
        for shape in [(2, 3, 4, 5), (1,), ()]:
            if "memory_format" in kwargs and len(shape) != 4:
                continue
            t = torch.testing.make_tensor(*shape, dtype=torch.float32, device="cpu", **kwargs)
            e_kwargs = {k: (ember.channels_last if k == "memory_format" else v)
                        for k, v in kwargs.items()}
            e = ember.testing.make_tensor(*shape, dtype=ember.float32, device=device, **e_kwargs)
            assert e.shape == t.shape and e.stride() == t.stride()
            assert e.is_contiguous() == t.is_contiguous()
            assert e.requires_grad == t.requires_grad and e.is_leaf
    e = ember.testing.make_tensor(5000, dtype=ember.int8, device=device, low=-1, high=2,
                                  exclude_zero=True)
    assert sorted(set(e.tolist())) == [-1, 1]
    e = ember.testing.make_tensor([3, 2], dtype=ember.float32, device=device)
    assert e.shape == (3, 2)


@pytest.mark.parametrize("call", [
    lambda lib: lib.testing.make_tensor(2, dtype=lib.float32, device="cpu", low=1, high=0),
    lambda lib: lib.testing.make_tensor(2, dtype=lib.float32, device="cpu", low=float("nan")),
    lambda lib: lib.testing.make_tensor(2, dtype=lib.uint8, device="cpu", low=300, high=400),
    lambda lib: lib.testing.make_tensor(2, dtype=lib.int64, device="cpu", requires_grad=True),
    lambda lib: lib.testing.make_tensor(2, 2, 2, 2, dtype=lib.float32, device="cpu",
                                        noncontiguous=True, memory_format=lib.channels_last),
])
def test_make_tensor_errors_match_torch(call):
    torch_outcome, ember_outcome = _messages(call)
    assert torch_outcome is not None
    assert ember_outcome[0] is torch_outcome[0]
    # torch spells the memory format and dtype its way; the rest of the message is the same.
    expected = torch_outcome[1].replace("ember.channels_last", "ember.channels_last")
    assert ember_outcome[1] == expected


def test_make_tensor_low_equal_high_warns_as_torch():
    with pytest.warns(FutureWarning, match="Passing `low==high`"):
        t = torch.testing.make_tensor(3, dtype=torch.float32, device="cpu", low=2, high=2)
    with pytest.warns(FutureWarning, match="Passing `low==high`"):
        e = ember.testing.make_tensor(3, dtype=ember.float32, device="cpu", low=2, high=2)
    assert e.tolist() == t.tolist() == [2.0, 2.0, 2.0]
