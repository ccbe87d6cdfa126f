"""``assert_close``: torch's comparison rules and messages, for Ember's tensors.

Inputs are paired up recursively: sequences element by element and mappings key by key (both
must match in length or keys), then each pair of leaves is compared as ``None``, booleans,
Python/NumPy numbers or tensor-likes (tensors, or two objects of related types that
``ember.as_tensor`` converts, such as NumPy arrays). Tensors must agree in shape and, unless
switched off, in layout, device and dtype (stride only when ``check_stride=True``); their
values must satisfy ``|actual - expected| <= atol + rtol * |expected|`` elementwise, with the
dtype's default tolerances when neither is given. The first failing pair raises.
"""
import cmath
import collections.abc
import contextlib
import warnings

import numpy as np

import ember
from .. import _dtype as dt
from .._tensor import Tensor

__all__ = ["assert_close", "assert_allclose"]

# (rtol, atol) per dtype; other dtypes compare exactly.
_DTYPE_PRECISIONS = {
    dt.float16: (0.001, 1e-5),
    dt.bfloat16: (0.016, 1e-5),
    dt.float32: (1.3e-6, 1e-5),
    dt.float64: (1e-7, 1e-7),
    dt.complex64: (1.3e-6, 1e-5),
    dt.complex128: (1e-7, 1e-7),
}


class _Failure(Exception):
    """A comparison failure on its way to the caller: the exception type, its message, and the
    path (``id``) of the failing item inside the compared containers."""

    def __init__(self, type, msg, *, id=()):
        super().__init__(msg)
        self.type, self.msg, self.id = type, msg, id

    def to_error(self, msg=None):
        if not isinstance(msg, str):
            generated = self.msg
            if self.id:
                generated += ("\n\nThe failure occurred for item "
                              f"{''.join(str([item]) for item in self.id)}")
            msg = msg(generated) if callable(msg) else generated
        return self.type(msg)


class _Unsupported(Exception):
    """This pair type does not handle these inputs: the next one is tried."""


def _default_tolerances(*dtypes, precisions=None):
    precisions = precisions or _DTYPE_PRECISIONS
    rtols, atols = zip(*[precisions.get(d, (0.0, 0.0)) for d in dtypes])
    return max(rtols), max(atols)


def _tolerances(*dtypes, rtol, atol, id=()):
    if (rtol is None) ^ (atol is None):
        # Only one of them would surprise: atol=0 could still pass through a default rtol.
        raise _Failure(ValueError, "Both 'rtol' and 'atol' must be either specified or omitted, "
                                   f"but got no {'rtol' if rtol is None else 'atol'}.", id=id)
    if rtol is not None:
        return rtol, atol
    return _default_tolerances(*dtypes)


# ---------------------------------------------------------------------------------------------
# Messages
# ---------------------------------------------------------------------------------------------

def _mismatch_msg(*, default_identifier, identifier=None, extra=None, abs_diff, abs_diff_idx=None,
                  atol, rel_diff, rel_diff_idx=None, rtol):
    equality = rtol == 0 and atol == 0

    def diff_line(kind, diff, idx, tol):
        if idx is None:
            line = f"{kind.title()} difference: {diff}"
        else:
            line = f"Greatest {kind} difference: {diff} at index {idx}"
        if not equality:
            line += f" (up to {tol} allowed)"
        return line + "\n"

    if identifier is None:
        identifier = default_identifier
    elif callable(identifier):
        identifier = identifier(default_identifier)
    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    msg += diff_line("absolute", abs_diff, abs_diff_idx, atol)
    msg += diff_line("relative", rel_diff, rel_diff_idx, rtol)
    return msg.strip()


def _scalar_mismatch_msg(actual, expected, *, rtol, atol, identifier=None):
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg(default_identifier="Scalars", identifier=identifier,
                         extra=f"Expected {expected} but got {actual}.", abs_diff=abs_diff,
                         atol=atol, rel_diff=rel_diff, rtol=rtol)


def _tensor_mismatch_msg(actual, expected, matches, *, rtol, atol, identifier=None):
    shape = tuple(matches.shape)

    def unravel(flat_index):
        return tuple(int(i) for i in np.unravel_index(flat_index, shape)) if shape else ()

    total = matches.numel()
    mismatches = total - int(ember.sum(matches))
    extra = f"Mismatched elements: {mismatches} / {total} ({mismatches / total:.1%})"
    actual_flat, expected_flat = actual.flatten(), expected.flatten()
    matches_flat = matches.flatten()
    if not actual.dtype.is_floating_point and not actual.dtype.is_complex:
        actual_flat, expected_flat = actual_flat.to(dt.int64), expected_flat.to(dt.int64)
    abs_diff = ember.abs(actual_flat - expected_flat)
    abs_diff[matches_flat] = 0
    max_abs, max_abs_idx = ember.max(abs_diff, 0)
    with np.errstate(divide="ignore", invalid="ignore"):  # x/0 is inf or nan here, as torch's
        rel_diff = abs_diff / ember.abs(expected_flat)
    rel_diff[matches_flat] = 0
    max_rel, max_rel_idx = ember.max(rel_diff, 0)
    return _mismatch_msg(default_identifier="Tensor-likes", identifier=identifier, extra=extra,
                         abs_diff=max_abs.item(), abs_diff_idx=unravel(int(max_abs_idx)),
                         atol=atol, rel_diff=max_rel.item(),
                         rel_diff_idx=unravel(int(max_rel_idx)), rtol=rtol)


# ---------------------------------------------------------------------------------------------
# Pairs of leaves
# ---------------------------------------------------------------------------------------------

class _Pair:
    def __init__(self, actual, expected, *, id=(), **options):
        self.actual, self.expected, self.id = actual, expected, id

    def _fail(self, type, msg):
        raise _Failure(type, msg, id=self.id)


class _NonePair(_Pair):
    def __init__(self, actual, expected, **options):
        if not (actual is None or expected is None):
            raise _Unsupported
        super().__init__(actual, expected, **options)

    def compare(self):
        if not (self.actual is None and self.expected is None):
            self._fail(AssertionError, f"None mismatch: {self.actual} is not {self.expected}")


class _BooleanPair(_Pair):
    def __init__(self, actual, expected, **options):
        if not all(isinstance(x, (bool, np.bool_)) for x in (actual, expected)):
            raise _Unsupported
        super().__init__(bool(actual), bool(expected), **options)

    def compare(self):
        if self.actual is not self.expected:
            self._fail(AssertionError,
                       f"Booleans mismatch: {self.actual} is not {self.expected}")


class _NumberPair(_Pair):
    _TYPE_TO_DTYPE = {int: dt.int64, float: dt.float64, complex: dt.complex128}

    def __init__(self, actual, expected, *, id=(), rtol=None, atol=None, equal_nan=False,
                 check_dtype=False, **options):
        number_types = (*self._TYPE_TO_DTYPE, np.number)
        if not all(isinstance(x, number_types) for x in (actual, expected)):
            raise _Unsupported
        actual, expected = (x.item() if isinstance(x, np.number) else x
                            for x in (actual, expected))
        super().__init__(actual, expected, id=id)
        self.rtol, self.atol = _tolerances(*[self._TYPE_TO_DTYPE[type(x)]
                                             for x in (actual, expected)],
                                           rtol=rtol, atol=atol, id=id)
        self.equal_nan, self.check_dtype = equal_nan, check_dtype

    def compare(self):
        actual, expected = self.actual, self.expected
        if self.check_dtype and type(actual) is not type(expected):
            self._fail(AssertionError, f"The (d)types do not match: {type(actual)} != "
                                       f"{type(expected)}.")
        if actual == expected:
            return
        if self.equal_nan and cmath.isnan(actual) and cmath.isnan(expected):
            return
        abs_diff = abs(actual - expected)
        if cmath.isfinite(abs_diff) and abs_diff <= self.atol + self.rtol * abs(expected):
            return
        self._fail(AssertionError, _scalar_mismatch_msg(actual, expected, rtol=self.rtol,
                                                        atol=self.atol))


_COMPRESSED = {
    "sparse_csr": ("CSR", "crow_indices", "col_indices"),
    "sparse_csc": ("CSC", "ccol_indices", "row_indices"),
    "sparse_bsr": ("BSR", "crow_indices", "col_indices"),
    "sparse_bsc": ("BSC", "ccol_indices", "row_indices"),
}


class _TensorLikePair(_Pair):
    def __init__(self, actual, expected, *, id=(), allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, **options):
        if not (isinstance(actual, type(expected)) or isinstance(expected, type(actual))):
            raise _Unsupported
        if not allow_subclasses and type(actual) is not type(expected):
            raise _Unsupported
        actual, expected = (self._to_tensor(x) for x in (actual, expected))
        super().__init__(actual, expected, id=id)
        self.rtol, self.atol = _tolerances(actual.dtype, expected.dtype, rtol=rtol, atol=atol,
                                           id=id)
        self.equal_nan = equal_nan
        self.check_device, self.check_dtype = check_device, check_dtype
        self.check_layout, self.check_stride = check_layout, check_stride

    @staticmethod
    def _to_tensor(tensor_like):
        if isinstance(tensor_like, Tensor):
            return tensor_like
        try:
            return ember.as_tensor(tensor_like)
        except Exception:
            raise _Unsupported from None

    def compare(self):
        actual, expected = self.actual, self.expected
        self._compare_attributes(actual, expected)
        actual, expected = self._equalize_attributes(actual, expected)
        self._compare_values(actual, expected)

    def _compare_attributes(self, actual, expected):
        def mismatch(name, actual_value, expected_value):
            self._fail(AssertionError, f"The values for attribute '{name}' do not match: "
                                       f"{actual_value} != {expected_value}.")

        if actual.shape != expected.shape:
            mismatch("shape", actual.shape, expected.shape)
        if actual.layout != expected.layout:
            if self.check_layout:
                mismatch("layout", actual.layout, expected.layout)
        elif (actual.layout == ember.strided and self.check_stride
              and actual.stride() != expected.stride()):
            mismatch("stride()", actual.stride(), expected.stride())
        if self.check_device and actual.device != expected.device:
            mismatch("device", actual.device, expected.device)
        if self.check_dtype and actual.dtype != expected.dtype:
            mismatch("dtype", actual.dtype, expected.dtype)

    @staticmethod
    def _equalize_attributes(actual, expected):
        if actual.device != expected.device:
            actual, expected = actual.cpu(), expected.cpu()
        if actual.dtype != expected.dtype:
            common = ember.promote_types(actual.dtype, expected.dtype)
            actual, expected = actual.to(common), expected.to(common)
        if actual.layout != expected.layout:
            actual = actual.to_dense() if actual.layout != ember.strided else actual
            expected = expected.to_dense() if expected.layout != ember.strided else expected
        return actual, expected

    def _compare_values(self, actual, expected):
        options = dict(rtol=self.rtol, atol=self.atol, equal_nan=self.equal_nan)
        layout = str(actual.layout).split(".")[-1]
        if layout == "sparse_coo":
            self._compare_sparse_coo(actual, expected, **options)
        elif layout in _COMPRESSED:
            self._compare_sparse_compressed(actual, expected, layout, **options)
        else:
            self._compare_close(actual, expected, **options)

    def _compare_sparse_coo(self, actual, expected, **options):
        if actual.sparse_dim() != expected.sparse_dim():
            self._fail(AssertionError, "The number of sparse dimensions in sparse COO tensors "
                                       f"does not match: {actual.sparse_dim()} != "
                                       f"{expected.sparse_dim()}")
        if actual._nnz() != expected._nnz():
            self._fail(AssertionError, "The number of specified values in sparse COO tensors "
                                       f"does not match: {actual._nnz()} != {expected._nnz()}")
        self._compare_close(actual._indices(), expected._indices(), rtol=0, atol=0,
                            equal_nan=False, identifier="Sparse COO indices")
        self._compare_close(actual._values(), expected._values(),
                            identifier="Sparse COO values", **options)

    def _compare_sparse_compressed(self, actual, expected, layout, **options):
        format_name, compressed, plain = _COMPRESSED[layout]
        if actual._nnz() != expected._nnz():
            self._fail(AssertionError, f"The number of specified values in sparse {format_name} "
                                       f"tensors does not match: {actual._nnz()} != "
                                       f"{expected._nnz()}")
        actual_c, expected_c = getattr(actual, compressed)(), getattr(expected, compressed)()
        index_dtype = ember.promote_types(actual_c.dtype, expected_c.dtype)
        self._compare_close(actual_c.to(index_dtype), expected_c.to(index_dtype), rtol=0,
                            atol=0, equal_nan=False,
                            identifier=f"Sparse {format_name} {compressed}")
        self._compare_close(getattr(actual, plain)().to(index_dtype),
                            getattr(expected, plain)().to(index_dtype), rtol=0, atol=0,
                            equal_nan=False, identifier=f"Sparse {format_name} {plain}")
        self._compare_close(actual.values(), expected.values(),
                            identifier=f"Sparse {format_name} values", **options)

    def _compare_close(self, actual, expected, *, rtol, atol, equal_nan, identifier=None):
        matches = ember.isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan)
        if bool(ember.all(matches)):
            return
        if actual.shape == ():
            msg = _scalar_mismatch_msg(actual.item(), expected.item(), rtol=rtol, atol=atol,
                                       identifier=identifier)
        else:
            msg = _tensor_mismatch_msg(actual, expected, matches, rtol=rtol, atol=atol,
                                       identifier=identifier)
        self._fail(AssertionError, msg)


_PAIR_TYPES = (_NonePair, _BooleanPair, _NumberPair, _TensorLikePair)


def _originate_pairs(actual, expected, *, id=(), **options):
    if (isinstance(actual, collections.abc.Sequence) and not isinstance(actual, str)
            and isinstance(expected, collections.abc.Sequence)
            and not isinstance(expected, str)):
        if len(actual) != len(expected):
            raise _Failure(AssertionError, "The length of the sequences mismatch: "
                                           f"{len(actual)} != {len(expected)}", id=id)
        pairs = []
        for index in range(len(actual)):
            pairs.extend(_originate_pairs(actual[index], expected[index], id=(*id, index),
                                          **options))
        return pairs
    if (isinstance(actual, collections.abc.Mapping)
            and isinstance(expected, collections.abc.Mapping)):
        actual_keys, expected_keys = set(actual.keys()), set(expected.keys())
        if actual_keys != expected_keys:
            raise _Failure(AssertionError,
                           "The keys of the mappings do not match:\n"
                           f"Missing keys in the actual mapping: "
                           f"{sorted(expected_keys - actual_keys)}\n"
                           f"Additional keys in the actual mapping: "
                           f"{sorted(actual_keys - expected_keys)}", id=id)
        keys = actual_keys
        with contextlib.suppress(Exception):
            keys = sorted(keys)
        pairs = []
        for key in keys:
            pairs.extend(_originate_pairs(actual[key], expected[key], id=(*id, key), **options))
        return pairs
    for pair_type in _PAIR_TYPES:
        try:
            return [pair_type(actual, expected, id=id, **options)]
        except _Unsupported:
            continue
    raise _Failure(TypeError, f"No comparison pair was able to handle inputs of type "
                              f"{type(actual)} and {type(expected)}.", id=id)


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, msg=None):
    """Assert that ``actual`` and ``expected`` are close, as ``torch.testing.assert_close``.

    Default tolerances by dtype (``rtol``, ``atol``): float16 ``(1e-3, 1e-5)``, bfloat16
    ``(1.6e-2, 1e-5)``, float32 and complex64 ``(1.3e-6, 1e-5)``, float64 and complex128
    ``(1e-7, 1e-7)``, any other dtype ``(0, 0)``; with two dtypes (``check_dtype=False``) the
    larger of each. Give both or neither of ``rtol`` and ``atol`` (else ValueError).
    ``equal_nan`` makes NaN equal to NaN. ``msg`` replaces the message (a str) or transforms it
    (a callable taking the generated message). Raises AssertionError naming the mismatch:
    attribute (shape, layout, stride, device, dtype) or values, with the number of mismatched
    elements and the greatest absolute and relative differences and where they are.
    """
    __tracebackhide__ = True
    try:
        pairs = _originate_pairs(actual, expected, allow_subclasses=allow_subclasses, rtol=rtol,
                                 atol=atol, equal_nan=equal_nan, check_device=check_device,
                                 check_dtype=check_dtype, check_layout=check_layout,
                                 check_stride=check_stride)
    except _Failure as failure:
        raise failure.to_error() from None
    for pair in pairs:
        try:
            pair.compare()
        except _Failure as failure:
            raise failure.to_error(msg) from None


_ALLCLOSE_PRECISIONS = {dt.float16: (1e-3, 1e-3), dt.float32: (1e-4, 1e-5),
                        dt.float64: (1e-5, 1e-8)}


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """Deprecated (as in torch since 1.12): ``assert_close`` with looser default tolerances,
    NaN equal to NaN, and no dtype check; non-tensors are made tensors first."""
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be "
                  "removed in a future release. Please use `torch.testing.assert_close()` "
                  "instead. You can find detailed upgrade instructions in "
                  "https://github.com/pytorch/pytorch/issues/61844.", FutureWarning, stacklevel=2)
    if not isinstance(actual, Tensor):
        actual = ember.tensor(actual)
    if not isinstance(expected, Tensor):
        expected = ember.tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        rtol, atol = _default_tolerances(actual.dtype, expected.dtype,
                                         precisions=_ALLCLOSE_PRECISIONS)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True,
                 check_dtype=False, check_stride=False, msg=msg or None)
