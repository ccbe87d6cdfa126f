"""``repr(tensor)`` in PyTorch's format: shared width per tensor, 4 decimals or scientific
notation chosen from the value range, summarised with ``...`` past 1000 elements."""
import math

import numpy as np

from . import _dtype as dt


class PrintOptions:
    precision = 4
    threshold = 1000
    edgeitems = 3
    linewidth = 80
    sci_mode = None


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    if profile == "default":
        PrintOptions.precision, PrintOptions.threshold = 4, 1000
        PrintOptions.edgeitems, PrintOptions.linewidth = 3, 80
    elif profile == "short":
        PrintOptions.precision, PrintOptions.threshold = 2, 1000
        PrintOptions.edgeitems, PrintOptions.linewidth = 2, 80
    elif profile == "full":
        PrintOptions.precision, PrintOptions.threshold = 4, math.inf
        PrintOptions.edgeitems, PrintOptions.linewidth = 3, 80
    for name, value in (("precision", precision), ("threshold", threshold),
                        ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            setattr(PrintOptions, name, value)
    PrintOptions.sci_mode = sci_mode


class _Formatter:
    def __init__(self, values, dtype):
        self.floating = dtype.is_floating_point
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        p = PrintOptions.precision
        flat = values.reshape(-1)
        if not self.floating:
            for v in flat:
                self.max_width = max(self.max_width, len(str(v)))
            return
        finite = flat[np.isfinite(flat)]
        nonzero = np.abs(finite[finite != 0])
        if finite.size == 0 or nonzero.size == 0:
            self.int_mode = bool(np.all(np.ceil(finite) == finite)) if finite.size else True
        else:
            self.int_mode = bool(np.all(np.ceil(finite) == finite))
            lo, hi = float(nonzero.min()), float(nonzero.max())
            if self.int_mode:
                if hi / lo > 1000.0 or hi > 1.0e8:
                    self.sci_mode = True
            elif hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4:
                self.sci_mode = True
        if PrintOptions.sci_mode is not None:
            self.sci_mode = PrintOptions.sci_mode
        for v in flat:
            self.max_width = max(self.max_width, len(self._fmt(float(v), p)))

    def _fmt(self, v, p):
        if not math.isfinite(v):
            return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
        if self.sci_mode:
            return f"{v:.{p}e}"
        if self.int_mode:
            return f"{v:.0f}."
        return f"{v:.{p}f}"

    def format(self, v):
        if self.floating:
            s = self._fmt(float(v), PrintOptions.precision)
        elif isinstance(v, (bool, np.bool_)):
            s = "True" if v else "False"
        else:
            s = str(v)
        return s.rjust(self.max_width)


def _summarized(values):
    """The elements shown when summarising: the first and last edgeitems along every dim."""
    e = PrintOptions.edgeitems
    if values.ndim == 0:
        return values
    if values.shape[0] > 2 * e:
        values = np.concatenate([values[:e], values[-e:]])
    return np.stack([_summarized(v) for v in values]) if values.ndim > 1 else values


def _format_array(values, fmt, indent, summarize):
    if values.ndim == 0:
        return fmt.format(values.item() if values.dtype != dt.bfloat16.np else float(values))
    e = PrintOptions.edgeitems
    n = values.shape[0]
    if values.ndim == 1:
        items = [fmt.format(v if values.dtype != dt.bfloat16.np else float(v)) for v in
                 (list(values[:e]) + [None] + list(values[-e:]) if summarize and n > 2 * e
                  else list(values))] if not (summarize and n > 2 * e) else \
            [fmt.format(float(v) if values.dtype == dt.bfloat16.np else v) for v in values[:e]] + \
            ["..."] + [fmt.format(float(v) if values.dtype == dt.bfloat16.np else v) for v in values[-e:]]
        per_line = max(1, math.floor((PrintOptions.linewidth - indent) / (fmt.max_width + 2)))
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"
    rows_idx = (list(range(e)) + [None] + list(range(n - e, n))) if summarize and n > 2 * e \
        else list(range(n))
    rows = [("..." if i is None else _format_array(values[i], fmt, indent + 1, summarize))
            for i in rows_idx]
    sep = "," + "\n" * (values.ndim - 1) + " " * (indent + 1)
    return "[" + sep.join(rows) + "]"


def tensor_repr(t):
    prefix = "tensor("
    indent = len(prefix)
    values = t._backend.to_numpy(t._data)
    summarize = values.size > PrintOptions.threshold
    suffixes = []
    if t._device.type != "cpu":
        suffixes.append(f"device='{t._device}'")
    if values.size == 0 and values.shape != (0,):
        body = "[]"
        suffixes.append(f"size={tuple(values.shape)}")
    elif values.size == 0:
        body = "[]"
    else:
        shown = _summarized(values) if summarize else values
        fmt_vals = shown.astype(np.float64) if t._dtype is dt.bfloat16 or t._dtype is dt.float16 \
            else shown
        fmt = _Formatter(fmt_vals, t._dtype)
        body = _format_array(fmt_vals, fmt, indent, summarize)
    if t._dtype not in (dt.get_default_dtype(), dt.int64, dt.bool) or \
            (values.size == 0 and t._dtype not in (dt.get_default_dtype(),)) and t._dtype is not dt.int64 \
            and t._dtype is not dt.bool:
        suffixes.append(f"dtype=ember.{t._dtype.name}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    return prefix + body + "".join(", " + s for s in suffixes) + ")"
