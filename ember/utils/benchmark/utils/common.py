"""``TaskSpec`` (what was timed) and ``Measurement`` (the times and their statistics), with the
formatting helpers ``Compare`` shares, as ``torch.utils.benchmark.utils.common``."""
import contextlib
import dataclasses
import math
import textwrap

import numpy as np

__all__ = ["TaskSpec", "Measurement", "select_unit", "unit_to_english", "trim_sigfig",
           "ordered_unique", "set_torch_threads"]

# torch's thresholds: an IQR above 10% of the median earns a warning, above 25% a stronger one.
_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25
# Significant figures are estimated from the interquartile points' spread; the interval is
# never taken below timer resolution (25 ns), and never more than 4 figures are claimed.
_MAX_SIGNIFICANT_FIGURES = 4
_MIN_CONFIDENCE_INTERVAL = 25e-9
_TASKSPEC_FIELDS = ("stmt", "setup", "global_setup", "label", "sub_label", "description", "env",
                    "num_threads")


@dataclasses.dataclass(init=True, repr=False, eq=True, frozen=True)
class TaskSpec:
    """The definition of a timed task: what ran, and the labels Compare arranges it by."""
    stmt: str
    setup: str
    global_setup: str = ""
    label: str = None
    sub_label: str = None
    description: str = None
    env: str = None
    num_threads: int = 1

    @property
    def title(self):
        """``label`` (or the statement), with ``: sub_label`` after it when there is one."""
        if self.label is not None:
            return self.label + (f": {self.sub_label}" if self.sub_label else "")
        if "\n" in self.stmt:
            return "stmt:" + textwrap.indent("\n" + self.stmt, "  ") + \
                (f"\n{self.sub_label}" if self.sub_label else "")
        return self.stmt + (f": {self.sub_label}" if self.sub_label else "")

    def setup_str(self):
        if not self.setup or self.setup == "pass":
            return ""
        if "\n" in self.setup:
            return "setup:\n" + textwrap.indent(self.setup, "  ")
        return f"setup: {self.setup}"

    def summarize(self):
        """The header lines of a Measurement's repr."""
        sections = [self.title, self.description or "", self.setup_str()]
        return "\n".join(f"{s}\n" if "\n" in s else s for s in sections if s)


@dataclasses.dataclass(init=True, repr=False)
class Measurement:
    """The times of one task: ``raw_times`` are seconds per block of ``number_per_run`` runs;
    ``times`` are seconds per run. Statistics are computed on first use."""
    number_per_run: int
    raw_times: list
    task_spec: TaskSpec
    metadata: dict = None

    def __post_init__(self):
        self._sorted_times = ()
        self._warnings = ()
        self._median = self._mean = self._p25 = self._p75 = -1.0

    def __getattr__(self, name):
        # The task's fields read as the measurement's own (m.label, m.num_threads …).
        if name in _TASKSPEC_FIELDS:
            return getattr(self.task_spec, name)
        raise AttributeError(f"'Measurement' object has no attribute '{name}'")

    @property
    def times(self):
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self):
        self._lazy_init()
        return self._median

    @property
    def mean(self):
        self._lazy_init()
        return self._mean

    @property
    def iqr(self):
        self._lazy_init()
        return self._p75 - self._p25

    @property
    def significant_figures(self):
        """How many figures of the median the interquartile points' spread supports (a 90%
        interval, z = 1.645), between 1 and 4; Compare trims to it."""
        self._lazy_init()
        n_total = len(self._sorted_times)
        lower, upper = n_total // 4, int(math.ceil(3 * n_total / 4))
        interquartile = np.asarray(self._sorted_times[lower:upper], dtype=np.float64)
        std = float(interquartile.std())
        interval = max(1.645 * std / math.sqrt(len(interquartile)), _MIN_CONFIDENCE_INTERVAL)
        figures = int(math.floor(math.log10(self._median / interval)))
        return min(max(figures, 1), _MAX_SIGNIFICANT_FIGURES)

    @property
    def has_warnings(self):
        self._lazy_init()
        return bool(self._warnings)

    @property
    def title(self):
        return self.task_spec.title

    @property
    def as_row_name(self):
        return self.sub_label or self.stmt or "[Unknown]"

    def meets_confidence(self, threshold=_IQR_WARN_THRESHOLD):
        return self.iqr / self.median < threshold

    def _lazy_init(self):
        if self.raw_times and not self._sorted_times:
            times = np.asarray(self.times, dtype=np.float64)
            self._sorted_times = tuple(sorted(self.times))
            self._median = float(np.quantile(times, 0.5))
            self._mean = float(times.mean())
            self._p25 = float(np.quantile(times, 0.25))
            self._p75 = float(np.quantile(times, 0.75))

            def add_warning(msg):
                rel_iqr = self.iqr / self.median * 100
                self._warnings += (f"  WARNING: Interquartile range is {rel_iqr:.1f}% of the "
                                   f"median measurement.\n           {msg}",)

            if not self.meets_confidence(_IQR_GROSS_WARN_THRESHOLD):
                add_warning("This suggests significant environmental influence.")
            elif not self.meets_confidence(_IQR_WARN_THRESHOLD):
                add_warning("This could indicate system fluctuation.")

    def __repr__(self):
        self._lazy_init()
        n = len(self._sorted_times)
        unit, scale = select_unit(self._median)
        lines = [object.__repr__(self), self.task_spec.summarize(),
                 f"  {'Median: ' if n > 1 else ''}{self._median / scale:.2f} {unit}"]
        if n >= 4:  # fewer points make no quartiles worth showing
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} ({self._p25 / scale:.2f} to "
                         f"{self._p75 / scale:.2f})")
        threads = f"{self.num_threads} thread{'s' if self.num_threads > 1 else ''}"
        if n > 1:
            lines.append(f"  {n} measurements, {self.number_per_run} runs per measurement, "
                         f"{threads}")
        else:
            lines.append(f"  1 measurement, {self.number_per_run} runs , {threads}")
        lines.extend(self._warnings)
        return "\n".join(lines).strip()

    @staticmethod
    def merge(measurements):
        """One Measurement per distinct task, its times per single run (``number_per_run``
        1), so that blocks of different sizes pool together."""
        grouped = {}
        for m in measurements:
            grouped.setdefault(m.task_spec, []).append(m)

        def merge_group(task_spec, group):
            times = []
            for m in group:
                times.extend(m.times)
            return Measurement(number_per_run=1, raw_times=times, task_spec=task_spec,
                               metadata=None)
        return [merge_group(t, g) for t, g in grouped.items()]

    def __getstate__(self):
        return dict(vars(self))

    def __setstate__(self, state):
        vars(self).update(state)


def select_unit(t):
    """The unit a time ``t`` (seconds) reads best in: ns, us, ms or s, and its scale."""
    time_unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(np.log10(np.array(t)).item() // 3), "s")
    time_scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[time_unit]
    return time_unit, time_scale


def unit_to_english(u):
    return {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}[u]


def trim_sigfig(x, n):
    """``x`` rounded to ``n`` significant figures; computed in float32, as torch computes it,
    so the trimmed figures print identically."""
    assert n == int(n)
    magnitude = int(np.ceil(np.log10(np.abs(np.float32(x)))))
    scale = 10 ** (magnitude - n)
    return float(np.round(np.float32(x / scale)) * np.float32(scale))


def ordered_unique(elements):
    return list(dict.fromkeys(elements))


@contextlib.contextmanager
def set_torch_threads(n):
    """Ember's BLAS thread count set to ``n`` for the block, restored after."""
    from ...._type_info_and_switches import get_num_threads, set_num_threads
    prior = get_num_threads()
    if prior == n:
        yield  # nothing to change (and no threadpoolctl needed)
        return
    try:
        set_num_threads(n)
        yield
    finally:
        set_num_threads(prior)
