"""``repr(tensor)`` in PyTorch's exact format.

One formatter per tensor fixes a shared column width and a mode: integers, integer-valued floats
("1."), fixed point with ``precision`` decimals, or scientific notation when the nonzero finite
values span more than three decades (or exceed 1e8, or fall below 1e-4). Past ``threshold``
elements only ``edgeitems`` rows and columns at each end are shown, around "...".
"""
import contextlib
import dataclasses
import math

import numpy as np

from . import _dtype as dt

__all__ = ["set_printoptions", "get_printoptions", "printoptions", "tensor_repr"]


@dataclasses.dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool = None


PRINT_OPTS = _PrintOptions()

_PROFILES = {
    "default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
    "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
    "full": dict(precision=4, threshold=math.inf, edgeitems=3, linewidth=80),
}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """Set how tensors print, as ``torch.set_printoptions``."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"Invalid profile: {profile}. the profile must be one of 'default', "
                             f"'short', 'full'")
        for name, value in _PROFILES[profile].items():
            setattr(PRINT_OPTS, name, value)
    for name, value in (("precision", precision), ("threshold", threshold),
                        ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            setattr(PRINT_OPTS, name, value)
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions():
    return dataclasses.asdict(PRINT_OPTS)


@contextlib.contextmanager
def printoptions(**kwargs):
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


class _Formatter:
    """The shared width and notation for every element of one (real) tensor."""

    def __init__(self, values, floating):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)
        if not floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(str(v)))
            return
        nonzero_finite = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
        # Without a nonzero finite value PyTorch keeps the plain integer mode, whatever sci_mode.
        if nonzero_finite.size:
            self._fit(nonzero_finite)

    def _fit(self, values):
        magnitudes = np.abs(values)
        lo, hi = float(magnitudes.min()), float(magnitudes.max())
        self.int_mode = bool(np.all(values == np.ceil(values)))
        self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or (not self.int_mode and lo < 1.0e-4)
        if PRINT_OPTS.sci_mode is not None:
            self.sci_mode = PRINT_OPTS.sci_mode
        if self.sci_mode:
            spec, extra = f".{PRINT_OPTS.precision}e", 0
        elif self.int_mode:
            spec, extra = ".0f", 1  # integer-valued floats print a trailing "."
        else:
            spec, extra = f".{PRINT_OPTS.precision}f", 0
        for v in values.tolist():
            self.max_width = max(self.max_width, len(format(v, spec)) + extra)

    def format(self, value):
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = format(value, f"{self.max_width}.{PRINT_OPTS.precision}e")
        elif self.int_mode:
            text = format(value, ".0f")
            if math.isfinite(value):
                text += "."
        else:
            text = format(value, f".{PRINT_OPTS.precision}f")
        return (self.max_width - len(text)) * " " + text


def _format_element(value, real_fmt, imag_fmt):
    if imag_fmt is None:
        return real_fmt.format(value)
    real = real_fmt.format(value.real)
    imag = (imag_fmt.format(value.imag) + "j").lstrip()
    # A sign of its own (negative numbers, -0.0) replaces the "+".
    return real + imag if imag[0] in "+-" else real + "+" + imag


def _vector_str(values, indent, summarize, real_fmt, imag_fmt):
    element_length = real_fmt.max_width + 2
    if imag_fmt is not None:
        element_length += imag_fmt.max_width + 1
    per_line = max(1, int(math.floor((PRINT_OPTS.linewidth - indent) / element_length)))
    e = PRINT_OPTS.edgeitems
    if summarize and not e:
        data = ["..."]
    elif summarize and values.shape[0] > 2 * e:
        data = ([_format_element(v, real_fmt, imag_fmt) for v in values[:e].tolist()] + [" ..."]
                + [_format_element(v, real_fmt, imag_fmt) for v in values[-e:].tolist()])
    else:
        data = [_format_element(v, real_fmt, imag_fmt) for v in values.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_str(values, indent, summarize, real_fmt, imag_fmt):
    if values.ndim == 0:
        return _format_element(values.item(), real_fmt, imag_fmt)
    if values.ndim == 1:
        return _vector_str(values, indent, summarize, real_fmt, imag_fmt)
    e = PRINT_OPTS.edgeitems
    n = values.shape[0]
    if summarize and n > 2 * e:
        rows = list(range(e)) + [None] + list(range(n - e, n))
    else:
        rows = range(n)
    parts = ["..." if i is None else
             _nested_str(values[i], indent + 1, summarize, real_fmt, imag_fmt) for i in rows]
    return "[" + ("," + "\n" * (values.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def _summarized(values):
    """Only the elements a summarised print shows: ``edgeitems`` at each end of every dim."""
    e = PRINT_OPTS.edgeitems
    if values.ndim == 0:
        return values
    if values.ndim == 1:
        return np.concatenate([values[:e], values[-e:]]) if values.shape[0] > 2 * e else values
    if not e:
        return values[(slice(0, 0),) * values.ndim]
    n = values.shape[0]
    rows = list(range(e)) + list(range(n - e, n)) if n > 2 * e else range(n)
    return np.stack([_summarized(values[i]) for i in rows])


def _body_str(values, dtype, indent):
    summarize = values.size > PRINT_OPTS.threshold
    if dtype in (dt.float16, dt.bfloat16):
        values = values.astype(np.float32)
    shown = _summarized(values) if summarize else values
    if dtype.is_complex:
        real_fmt = _Formatter(shown.real, True)
        imag_fmt = _Formatter(shown.imag, True)
    else:
        real_fmt, imag_fmt = _Formatter(shown, dtype.is_floating_point), None
    return _nested_str(values, indent, summarize, real_fmt, imag_fmt)


def _add_suffixes(text, suffixes, indent):
    """Append ", suffix" items, wrapping onto a new line when the current one would overflow."""
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def tensor_repr(t, tensor_contents=None):
    prefix = "tensor("
    indent = len(prefix)
    suffixes = []
    if t._device.type != "cpu":
        suffixes.append(f"device='{t._device}'")
    dtype = t._dtype
    values = t._backend.to_numpy(t._data)
    if values.size == 0:
        if values.ndim != 1:
            suffixes.append(f"size={tuple(values.shape)}")
        # An empty tensor has no elements to show its dtype by, so anything but the default prints.
        if dtype is not dt.get_default_dtype():
            suffixes.append(f"dtype={dtype}")
        body = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append(f"size={tuple(values.shape)}")
        if dtype not in (dt.get_default_dtype(), dt.default_complex_dtype(), dt.int64, dt.bool):
            suffixes.append(f"dtype={dtype}")
        body = _body_str(values, dtype, indent)
    if tensor_contents is not None:
        body = tensor_contents
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{type(t.grad_fn).__name__}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)


def quantized_repr(t):
    """torch's repr of a quantized tensor: the dequantized values, then the size, dtype and
    quantizer (``scale=``, ``zero_point=``, and ``axis=`` per channel)."""
    from .ops.quantized import dequantize_array
    prefix = "tensor("
    indent = len(prefix)
    values = t._backend.to_numpy(dequantize_array(t))
    body = "[]" if values.size == 0 else _body_str(values, dt.float32, indent)
    suffixes = []
    if t._device.type != "cpu":
        suffixes.append(f"device='{t._device}'")
    suffixes += [f"size={tuple(values.shape)}", f"dtype={t._dtype}",
                 f"quantization_scheme={t._qscheme}"]
    if hasattr(t, "_scale"):
        suffixes += [f"scale={t._scale}", f"zero_point={t._zero_point}"]
    else:
        suffixes += [f"scale={t.q_per_channel_scales()!r}",
                     f"zero_point={t.q_per_channel_zero_points()!r}", f"axis={t._axis}"]
    return _add_suffixes(prefix + body, suffixes, indent)
