"""The profiler's results, as ``torch.autograd.profiler_util``: ``FunctionEvent`` (one timed
range), ``FunctionEventAvg`` (events summed under one key), ``EventList`` with torch's
``table``, ``key_averages``, ``total_average``, ``export_chrome_trace`` and ``export_stacks``.

Times are in microseconds, as torch's. An event's parent and children are known exactly (the
recorder keeps a stack per thread), so self time is total time minus the children's totals.
"""
import gzip
import json
import math
import os
from collections import defaultdict

__all__ = ["FunctionEvent", "FunctionEventAvg", "EventList", "DeviceType"]


class DeviceType:
    """The device an event ran on, spelled as torch's ``DeviceType`` members print."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"DeviceType.{self.name}"

    __str__ = __repr__


DeviceType.CPU = DeviceType("CPU")
DeviceType.CUDA = DeviceType("CUDA")


class FunctionEvent:
    """One op, ``record_function`` range or autograd node run, with its timing and metadata."""

    # Defaults for what the recorder's fast constructor leaves unset (each op pays for every
    # attribute it sets, so only what differs is set per event).
    node_id = -1
    overload_name = ""
    start_us = end_us = 0.0
    fwd_thread = None
    input_types = concrete_inputs = kernels = ()
    scope = 0
    use_device = None
    cpu_memory_usage = device_memory_usage = 0
    is_async = is_remote = is_legacy = False
    sequence_nr = -1
    device_type = DeviceType.CPU
    device_index = 0
    flops = None
    cpu_parent = None
    #: device time of this op's range, measured with CUDA events (us)
    device_range_us = 0.0

    @classmethod
    def _recorded(cls, id, name, thread, category):
        ev = object.__new__(cls)
        ev.id = id
        ev.name = ev.trace_name = name
        ev.thread = thread
        ev.category = category
        ev.input_shapes = []
        ev.stack = []
        ev.cpu_children = []
        return ev

    def __init__(self, id, name, thread, start_us, end_us, fwd_thread=None, input_shapes=None,
                 stack=None, scope=0, use_device=None, cpu_memory_usage=0,
                 device_memory_usage=0, is_async=False, is_remote=False, sequence_nr=-1,
                 node_id=-1, device_type=DeviceType.CPU, device_index=0, is_legacy=False,
                 flops=None, trace_name=None, concrete_inputs=None, input_types=None,
                 category="cpu_op"):
        self.id = id
        self.node_id = node_id
        self.name = name
        self.overload_name = ""
        self.trace_name = trace_name or name
        self.start_us = start_us
        self.end_us = end_us
        self.thread = thread
        self.fwd_thread = fwd_thread
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.input_types = input_types if input_types is not None else []
        self.concrete_inputs = concrete_inputs if concrete_inputs is not None else []
        self.stack = stack if stack is not None else []
        self.scope = scope
        self.use_device = use_device
        self.cpu_memory_usage = cpu_memory_usage
        self.device_memory_usage = device_memory_usage
        self.is_async = is_async
        self.is_remote = is_remote
        self.sequence_nr = sequence_nr
        self.device_type = device_type
        self.device_index = device_index
        self.is_legacy = is_legacy
        self.flops = flops
        self.category = category
        self.cpu_children = []
        self.cpu_parent = None
        #: device time of this op's range, measured with CUDA events (us)
        self.device_range_us = 0.0
        self.kernels = []

    # torch's Interval API
    @property
    def time_range(self):
        return _Interval(self.start_us, self.end_us)

    def append_cpu_child(self, child):
        self.cpu_children.append(child)

    def set_cpu_parent(self, parent):
        self.cpu_parent = parent

    @property
    def cpu_time_total(self):
        return self.end_us - self.start_us

    @property
    def self_cpu_time_total(self):
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def device_time_total(self):
        return self.device_range_us

    @property
    def self_device_time_total(self):
        return self.device_range_us - sum(c.device_range_us for c in self.cpu_children)

    cuda_time_total = device_time_total
    self_cuda_time_total = self_device_time_total

    @property
    def self_cpu_memory_usage(self):
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    @property
    def self_device_memory_usage(self):
        return self.device_memory_usage - sum(c.device_memory_usage for c in self.cpu_children)

    self_cuda_memory_usage = self_device_memory_usage

    @property
    def cuda_memory_usage(self):
        return self.device_memory_usage

    @property
    def key(self):
        return self.name

    @property
    def count(self):
        return 1

    @property
    def cpu_time(self):
        return self.cpu_time_total

    @property
    def device_time(self):
        return self.device_time_total

    cuda_time = device_time

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} device_type={self.device_type} "
                f"node_id={self.node_id} cpu_time={_format_time(self.cpu_time_total)} "
                f"start_us={self.start_us:.3f} end_us={self.end_us:.3f} "
                f"cpu_children={[c.id for c in self.cpu_children]} "
                f"device_time={_format_time(self.device_time_total)} thread={self.thread} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage} "
                f"device_memory_usage={self.device_memory_usage} is_async={self.is_async} "
                f"is_remote={self.is_remote} seq_nr={self.sequence_nr} "
                f"is_legacy={self.is_legacy}>")


class _Interval:
    def __init__(self, start, end):
        self.start = start
        self.end = end

    def elapsed_us(self):
        return self.end - self.start


class FunctionEventAvg:
    """The events of one key (a name, with input shapes or stack when grouped) summed."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.node_id = 0
        self.is_async = False
        self.is_remote = False
        self.use_device = None
        self.cpu_time_total = 0.0
        self.device_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.self_device_time_total = 0.0
        self.input_shapes = None
        self.overload_name = None
        self.stack = None
        self.scope = None
        self.cpu_memory_usage = 0
        self.device_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.self_device_memory_usage = 0
        self.cpu_children = None
        self.cpu_parent = None
        self.device_type = DeviceType.CPU
        self.is_legacy = False
        self.flops = 0

    def add(self, other):
        if self.key is None:
            # The first event sets the key's metadata; the sums start from zero.
            self.key = other.key
            self.node_id = other.node_id
            self.is_async = other.is_async
            self.is_remote = other.is_remote
            self.cpu_parent = other.cpu_parent
            self.cpu_children = other.cpu_children
            self.input_shapes = other.input_shapes
            self.stack = other.stack
            self.scope = other.scope
            self.device_type = other.device_type
            self.is_legacy = other.is_legacy
            self.use_device = other.use_device
        if not isinstance(other, (FunctionEvent, FunctionEventAvg)):
            raise TypeError(f"FunctionEventAvg.add expects a FunctionEvent or FunctionEventAvg, "
                            f"got {type(other).__name__}")
        if other.key != self.key and self.key != "Total":
            raise ValueError(f"cannot add the event {other.key!r} to the average of "
                             f"{self.key!r}")
        self.cpu_time_total += other.cpu_time_total
        self.device_time_total += other.device_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.self_device_time_total += other.self_device_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.device_memory_usage += other.device_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.self_device_memory_usage += other.self_device_memory_usage
        self.count += other.count
        if other.flops is not None:
            self.flops += other.flops
        return self

    def __iadd__(self, other):
        return self.add(other)

    @property
    def cpu_time(self):
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    @property
    def device_time(self):
        return 0.0 if self.count == 0 else self.device_time_total / self.count

    cuda_time = device_time

    @property
    def cuda_time_total(self):
        return self.device_time_total

    @property
    def self_cuda_time_total(self):
        return self.self_device_time_total

    @property
    def cuda_memory_usage(self):
        return self.device_memory_usage

    @property
    def self_cuda_memory_usage(self):
        return self.self_device_memory_usage

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} "
                f"self_cpu_time={_format_time(self.self_cpu_time_total)} "
                f"cpu_time={_format_time(self.cpu_time)}  "
                f"self_device_time={_format_time(self.self_device_time_total)} "
                f"device_time={_format_time(self.device_time)} "
                f"input_shapes={self.input_shapes if self.input_shapes else ''} "
                f"cpu_memory_usage={self.cpu_memory_usage} "
                f"device_memory_usage={self.device_memory_usage}>")


class EventList(list):
    """A list of ``FunctionEvent`` (or, from ``key_averages``, ``FunctionEventAvg``)."""

    def __init__(self, *args, use_device=None, profile_memory=False, with_flops=False,
                 metadata=None, trace_start_epoch_us=0.0):
        super().__init__(*args)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._with_flops = with_flops
        self._metadata = dict(metadata or {})
        self._trace_start_epoch_us = trace_start_epoch_us

    def _derived(self, items):
        return EventList(items, use_device=self._use_device, profile_memory=self._profile_memory,
                         with_flops=self._with_flops, metadata=self._metadata,
                         trace_start_epoch_us=self._trace_start_epoch_us)

    @property
    def self_cpu_time_total(self):
        return sum(e.self_cpu_time_total for e in self)

    def __str__(self):
        return self.table()

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False, time_unit=None):
        """The events as torch's text table: one row per event (per key after
        ``key_averages``), sorted by the attribute ``sort_by`` (largest first), and a footer
        with the total self CPU (and CUDA) time."""
        return _build_table(self, sort_by=sort_by, row_limit=row_limit,
                            max_src_column_width=max_src_column_width,
                            max_name_column_width=max_name_column_width,
                            max_shapes_column_width=max_shapes_column_width, header=header,
                            profile_memory=self._profile_memory,
                            with_flops=self._with_flops,
                            top_level_events_only=top_level_events_only,
                            use_device=self._use_device, time_unit=time_unit)

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        """One ``FunctionEventAvg`` per name (and input shapes / the ``group_by_stack_n``
        innermost stack frames, when asked), in the order the keys first appear."""
        stats = defaultdict(FunctionEventAvg)

        def key_of(e):
            key = [str(e.key), str(e.node_id), str(e.device_type), str(e.is_legacy)]
            if group_by_input_shapes:
                key.append(str(e.input_shapes))
            if group_by_stack_n > 0:
                key += e.stack[:group_by_stack_n]
            return tuple(key)
        for e in self:
            stats[key_of(e)].add(e)
        averages = self._derived(stats.values())
        for avg in averages:
            avg.stack = avg.stack[:group_by_stack_n] if group_by_stack_n else []
            if not group_by_input_shapes:
                avg.input_shapes = ""
        return averages

    def total_average(self):
        """All events summed into one ``FunctionEventAvg`` keyed "Total"."""
        total = FunctionEventAvg()
        total.key = "Total"
        for e in self:
            total.add(e)
        return total

    def export_chrome_trace(self, path):
        """Write the events in the Trace Event format (chrome://tracing, Perfetto): complete
        ("X") events with ``ts``/``dur`` in microseconds, a "fwdbwd" flow from each forward op
        to the backward node it recorded, and "[memory]" instant events. A path ending in
        ``.gz`` is gzip-compressed."""
        trace = chrome_trace_dict(self, self._trace_start_epoch_us, self._metadata, path)
        text = json.dumps(trace)
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        if path.endswith(".gz"):
            with gzip.open(path, "wt", encoding="utf-8") as f:
                f.write(text)
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        return path

    def export_stacks(self, path, metric="self_cpu_time_total"):
        """Collapsed stacks (``frame;frame;op value`` per line, outermost frame first) for
        flamegraph.pl or speedscope; ``value`` is ``metric`` in whole microseconds. Needs a
        profile taken with ``with_stack=True``."""
        allowed = ("self_cpu_time_total", "self_cuda_time_total", "self_device_time_total")
        if metric not in allowed:
            raise ValueError(f"metric should be one of: {', '.join(allowed)}; got {metric!r}")
        metric = metric.replace("cuda", "device")
        # A frame name may not contain the separators of the collapsed format.
        clean = str.maketrans(" ;\t\n", "____")
        with open(path, "w", encoding="utf-8") as f:
            for e in self:
                if not e.stack:
                    continue
                value = int(getattr(e, metric))
                if value <= 0:
                    continue
                frames = [s.translate(clean) for s in reversed(e.stack)]
                frames.append(e.name.translate(clean))
                f.write(";".join(frames) + f" {value}\n")
        return path


# ---------------------------------------------------------------------------------------------
# Chrome trace
# ---------------------------------------------------------------------------------------------

def chrome_trace_dict(events, epoch_us, metadata, path=""):
    pid = os.getpid()
    trace_events = [
        {"ph": "M", "name": "process_name", "ts": epoch_us, "pid": pid, "tid": 0,
         "args": {"name": "python"}},
        {"ph": "M", "name": "process_labels", "ts": epoch_us, "pid": pid, "tid": 0,
         "args": {"labels": "CPU"}},
    ]
    threads = sorted({e.thread for e in events})
    for tid in threads:
        trace_events.append({"ph": "M", "name": "thread_name", "ts": epoch_us, "pid": pid,
                             "tid": tid, "args": {"name": f"thread {tid} (python)"}})
    gpu_pids = set()
    flow_starts = {}
    for idx, e in enumerate(events):
        ts = round(epoch_us + e.start_us, 3)
        if e.name == "[memory]":
            trace_events.append({"ph": "i", "cat": "cpu_instant_event", "s": "t",
                                 "name": "[memory]", "pid": pid, "tid": e.thread, "ts": ts,
                                 "args": {"Total Reserved": 0,
                                          "Total Allocated": e.total_allocated,
                                          "Bytes": e.cpu_memory_usage or e.device_memory_usage,
                                          "Addr": e.addr,
                                          "Device Type": 1 if e.device_memory_usage else 0,
                                          "Device Id": e.device_index
                                          if e.device_memory_usage else -1}})
            continue
        args = {"External id": e.id, "Ev Idx": idx}
        if e.sequence_nr >= 0:
            args["Sequence number"] = e.sequence_nr
            args["Fwd thread id"] = e.fwd_thread if e.fwd_thread is not None else 0
        if e.input_shapes:
            args["Input Dims"] = e.input_shapes
            args["Input type"] = e.input_types
        if e.flops:
            args["flops"] = e.flops
        if e.stack:
            args["Call stack"] = ";".join(e.stack)
        trace_events.append({"ph": "X", "cat": e.category, "name": e.trace_name, "pid": pid,
                             "tid": e.thread, "ts": ts, "dur": round(e.cpu_time_total, 3),
                             "args": args})
        if e.sequence_nr >= 0:
            # torch's "fwdbwd" flow: from the forward op that made an autograd node to the
            # node's run in backward, keyed by the node's sequence number.
            if e.category == "cpu_op" and not e.is_backward:
                if e.sequence_nr not in flow_starts and _is_outermost_fwd(e):
                    flow_starts[e.sequence_nr] = e
                    trace_events.append({"ph": "s", "id": e.sequence_nr, "pid": pid,
                                         "tid": e.thread, "ts": ts, "cat": "fwdbwd",
                                         "name": "fwdbwd"})
            elif e.is_backward and e.cpu_parent is not None and \
                    e.sequence_nr in flow_starts and \
                    e.cpu_parent.name.startswith("autograd::engine::evaluate_function"):
                trace_events.append({"ph": "f", "id": e.sequence_nr, "pid": pid,
                                     "tid": e.thread, "ts": ts, "cat": "fwdbwd",
                                     "name": "fwdbwd", "bp": "e"})
        if e.device_range_us > 0 and not _has_device_parent(e):
            # As in torch's traces, a GPU is the process numbered by its device index.
            if e.device_index not in gpu_pids:
                gpu_pids.add(e.device_index)
                trace_events += [
                    {"ph": "M", "name": "process_name", "ts": epoch_us, "pid": e.device_index,
                     "tid": 0, "args": {"name": f"GPU {e.device_index}"}},
                    {"ph": "M", "name": "thread_name", "ts": epoch_us, "pid": e.device_index,
                     "tid": 0, "args": {"name": "CUDA events around each op"}}]
            trace_events.append({"ph": "X", "cat": "gpu_op_range", "name": e.name,
                                 "pid": e.device_index, "tid": 0,
                                 "ts": round(epoch_us + e.device_start_us, 3),
                                 "dur": round(e.device_range_us, 3),
                                 "args": {"External id": e.id}})
    out = {"schemaVersion": 1, "deviceProperties": [], "displayTimeUnit": "ms",
           "baseTimeNanoseconds": int(epoch_us * 1000), "traceEvents": trace_events,
           "traceName": path}
    out.update(metadata)
    return out


def _is_outermost_fwd(e):
    p = e.cpu_parent
    return p is None or p.sequence_nr != e.sequence_nr


def _has_device_parent(e):
    p = e.cpu_parent
    while p is not None:
        if p.device_range_us > 0:
            return True
        p = p.cpu_parent
    return False


# ---------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------

def _format_time(time_us, unit=None):
    if unit == "s":
        return f"{time_us / 1e6:.3f}s"
    if unit == "ms":
        return f"{time_us / 1e3:.3f}ms"
    if unit == "us":
        return f"{time_us:.3f}us"
    if abs(time_us) >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if abs(time_us) >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us, total_us):
    if total_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_us:.2f}%"


def _format_memory(nbytes):
    kb, mb, gb = 1024, 1024 ** 2, 1024 ** 3
    if abs(nbytes) >= gb:
        return f"{nbytes / gb:.2f} GB"
    if abs(nbytes) >= mb:
        return f"{nbytes / mb:.2f} MB"
    if abs(nbytes) >= kb:
        return f"{nbytes / kb:.2f} KB"
    return f"{int(nbytes)} B"


_FLOP_HEADERS = ["FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs"]


def _flops_scale(events):
    """torch scales the FLOPs column by the smallest non-zero count among the events."""
    nonzero = [e.flops for e in events if e.flops]
    if not nonzero:
        return 0
    return int(max(0.0, min(math.log10(min(nonzero)) / 3.0, len(_FLOP_HEADERS) - 1)))


def _build_table(events, sort_by=None, header=None, row_limit=100, max_src_column_width=75,
                 max_name_column_width=55, max_shapes_column_width=80, with_flops=False,
                 profile_memory=False, top_level_events_only=False, use_device=None,
                 time_unit=None):
    if len(events) == 0:
        return ""
    has_device_time = any(e.self_device_time_total > 0 for e in events)
    has_device_mem = any(e.self_device_memory_usage > 0 for e in events)
    has_input_shapes = any(e.input_shapes for e in events)
    has_stack = any(e.stack for e in events)
    device_name = (use_device or "cuda").upper()
    if sort_by is not None:
        events = sorted(events, key=lambda e: getattr(e, sort_by), reverse=True)
    if top_level_events_only:
        events = [e for e in events if e.cpu_parent is None]
    name_width = min(max([len(e.key) for e in events]) + 4, max_name_column_width)
    shapes_width = min(max([len(str(e.input_shapes)) for e in events]) + 4,
                       max_shapes_column_width) if has_input_shapes else 0
    src_width = min(max([len(s) for e in events for s in (e.stack or [""])]) + 4,
                    max_src_column_width) if has_stack else 0
    col = 12
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    widths = [name_width] + [col] * 5
    if has_device_time:
        headers += [f"Self {device_name}", f"Self {device_name} %", f"{device_name} total",
                    f"{device_name} time avg"]
        widths += [col] * 4
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
        widths += [col] * 2
        if has_device_mem:
            headers += [f"{device_name} Mem", f"Self {device_name} Mem"]
            widths += [col] * 2
    headers.append("# of Calls")
    widths.append(col)
    if has_input_shapes:
        headers.append("Input Shapes")
        widths.append(shapes_width)
    if has_stack:
        headers.append("Source Location")
        widths.append(src_width)
    flops_scale = 0
    if with_flops:
        flops_scale = _flops_scale(events)
        headers.append(f"Total {_FLOP_HEADERS[flops_scale]}")
        widths.append(col)

    fmt = "".join("{: >" + str(w) + "}  " for w in widths)
    line = "".join("-" * w + "  " for w in widths)
    out = []
    rule = "=" * (sum(widths) + 2 * (len(widths) - 1))
    if header is not None:
        out += [rule, header]
    if top_level_events_only:
        out += [rule, "This report only display top-level ops statistics"]
    out += [line, fmt.format(*headers), line]

    def cut(s, width):
        return s[:width - 3] + "..." if len(s) >= width - 3 else s

    self_cpu_total = sum(e.self_cpu_time_total for e in events)
    self_device_total = sum(e.self_device_time_total for e in events)
    if row_limit is not None and row_limit > 0:
        rows = list(events)[:row_limit]
    else:
        rows = list(events)
    for e in rows:
        name = cut(e.key, name_width)
        row = [name, _format_time_share(e.self_cpu_time_total, self_cpu_total),
               _format_time(e.self_cpu_time_total, time_unit),
               _format_time_share(e.cpu_time_total, self_cpu_total),
               _format_time(e.cpu_time_total, time_unit), _format_time(e.cpu_time, time_unit)]
        if has_device_time:
            row += [_format_time(e.self_device_time_total, time_unit),
                    _format_time_share(e.self_device_time_total, self_device_total),
                    _format_time(e.device_time_total, time_unit),
                    _format_time(e.device_time, time_unit)]
        if profile_memory:
            row += [_format_memory(e.cpu_memory_usage), _format_memory(e.self_cpu_memory_usage)]
            if has_device_mem:
                row += [_format_memory(e.device_memory_usage),
                        _format_memory(e.self_device_memory_usage)]
        row.append(str(e.count))
        if has_input_shapes:
            row.append(cut(str(e.input_shapes), shapes_width))
        stack = list(e.stack or [])
        if has_stack:
            row.append(cut(stack[0], src_width) if stack else "")
        if with_flops:
            row.append("--" if not e.flops else f"{e.flops / 10 ** (3 * flops_scale):8.3f}")
        out.append(fmt.format(*row))
        # Further frames of the stack go on rows of their own, as torch prints them.
        for frame in stack[1:]:
            empty = [""] * len(headers)
            empty[headers.index("Source Location")] = cut(frame, src_width)
            out.append(fmt.format(*empty))
    out.append(line)
    out.append(f"Self CPU time total: {_format_time(self_cpu_total, time_unit)}")
    if has_device_time:
        out.append(f"Self {device_name} time total: "
                   f"{_format_time(self_device_total, time_unit)}")
    return "\n".join(out) + "\n"
