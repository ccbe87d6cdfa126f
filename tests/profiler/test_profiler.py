"""ember.profiler / ember.autograd.profiler against torch.profiler on the same workloads."""
import json
import os
import re

import numpy as np
import pytest
import torch

import ember
from ember.autograd import engine
from ember.profiler import (profile, record_function, schedule, ProfilerAction,
                            ProfilerActivity, tensorboard_trace_handler)

pytestmark = [pytest.mark.filterwarnings("ignore:Profiler won't be using warmup"),
              pytest.mark.filterwarnings("ignore:Warning. Profiler clears events")]

STEPS = 3


def _pair(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    return [ember.tensor(a) for a in arrays], [torch.tensor(a) for a in arrays]


def _workload(lib, a, b, c):
    """Per step: 3 matmuls and 2 adds, then a backward through them."""
    x = lib.mm(a, b)
    y = lib.mm(x, c)
    z = lib.mm(a, b)
    s = lib.add(y, 1.0)
    t = lib.add(s.sum(), z.sum())
    return t


def _run(lib, prof_mod, **kw):
    (ea, eb, ec), (ta, tb, tc) = _pair((4, 5), (5, 6), (6, 3))
    a, b, c = (ea, eb, ec) if lib is ember else (ta, tb, tc)
    a.requires_grad_(True)
    with prof_mod.profile(**kw) as p:
        for _ in range(STEPS):
            _workload(lib, a, b, c).backward()
    return p


def _counts(events, prefix=""):
    counts = {}
    for e in events:
        if e.name.startswith(prefix):
            counts[e.name] = counts.get(e.name, 0) + 1
    return counts


def test_known_op_counts_match_torch():
    ep = _run(ember, ember.profiler)
    tp = _run(torch, torch.profiler)
    def top_level(p):
        return _counts([e for e in p.events() if e.cpu_parent is None], "aten::")
    e_top, t_top = top_level(ep), top_level(tp)
    for name, n in (("aten::mm", 3 * STEPS), ("aten::add", 2 * STEPS),
                    ("aten::sum", 2 * STEPS)):
        assert e_top[name] == t_top[name] == n
    e_avg = {a.key: a for a in ep.key_averages()}
    assert e_avg["aten::mm"].count >= 3 * STEPS
    # Totals: the self times add up to the footer's total, and self <= total for every key.
    total = sum(a.self_cpu_time_total for a in ep.key_averages())
    assert total == pytest.approx(ep.events().self_cpu_time_total)
    for a in ep.key_averages():
        assert a.self_cpu_time_total <= a.cpu_time_total + 1e-6
        assert a.cpu_time == pytest.approx(a.cpu_time_total / a.count)
    avg = ep.key_averages().total_average()
    assert avg.key == "Total" and avg.count == len(ep.events())


def test_backward_events_named_and_linked_like_torch():
    ep = _run(ember, ember.profiler)
    tp = _run(torch, torch.profiler)
    prefix = "autograd::engine::evaluate_function: "
    assert _counts(ep.events(), prefix) == _counts(tp.events(), prefix)
    forward_seq = {e.sequence_nr for e in ep.events()
                   if e.name == "aten::mm" and e.cpu_parent is None}
    for e in ep.events():
        if e.name.startswith(prefix) and "AccumulateGrad" not in e.name:
            child, *rest = e.cpu_children
            assert child.name == e.name[len(prefix):]
            # the rest: the gradients this node sends on, summed where they meet
            assert all(r.name == "aten::add" for r in rest)
            assert child.sequence_nr == e.sequence_nr >= 0
    mm_backward = {e.sequence_nr for e in ep.events() if e.name == "MmBackward0"}
    assert mm_backward == forward_seq and len(forward_seq) == 3 * STEPS


def test_table_layout_matches_torch():
    kw = dict(profile_memory=True, with_flops=True)
    ep = _run(ember, ember.profiler, **kw)
    tp = _run(torch, torch.profiler, **kw)
    e_lines = ep.key_averages().table(sort_by="count", row_limit=4,
                                      max_name_column_width=30).splitlines()
    t_lines = tp.key_averages().table(sort_by="count", row_limit=4,
                                      max_name_column_width=30).splitlines()
    assert e_lines[:3] == t_lines[:3]          # rule, header, rule: same columns and widths
    assert e_lines[-2] == t_lines[-2]
    assert re.fullmatch(r"Self CPU time total: [0-9.]+(us|ms|s)", e_lines[-1])
    assert len(e_lines) == 3 + 4 + 2
    # Sorted by count, largest first.
    table = ep.key_averages().table(sort_by="count", row_limit=100)
    counts = [int(line.split()[-2]) for line in table.splitlines()[3:-2]]
    assert counts == sorted(counts, reverse=True)
    row = next(line for line in table.splitlines() if line.strip().startswith("aten::mm "))
    assert row.split()[-2] == str(3 * STEPS)
    # A header, and the top-level-only report, above the table as torch prints them
    for kw in (dict(header="HEAD"), dict(top_level_events_only=True)):
        ours = ep.key_averages().table(row_limit=1, max_name_column_width=30, **kw)
        theirs = tp.key_averages().table(row_limit=1, max_name_column_width=30, **kw)
        assert ours.splitlines()[:5] == theirs.splitlines()[:5]
    # Names longer than the column are cut with "..."
    short = ep.key_averages().table(max_name_column_width=20)
    assert "autograd::engine:..." in short


def test_cuda_activity_on_cpu_only_warns_and_records_cpu():
    if ember.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.warns(UserWarning, match="CUDA is not available, disabling CUDA profiling"):
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
            ember.ones(3) + 1
    assert "aten::add" in {e.name for e in p.events()}
    assert "CUDA" not in p.key_averages().table()


def test_chrome_trace_is_valid_and_nested(tmp_path):
    a = ember.randn(4, 4, requires_grad=True)
    with profile() as p:
        with record_function("outer"):
            with record_function("inner"):
                y = ember.mm(a, a)
        y.sum().backward()
    path = tmp_path / "trace.json"
    p.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    for e in complete:
        assert {"name", "ts", "dur", "pid", "tid", "cat"} <= set(e)
        assert e["dur"] >= 0
    by_name = {e["name"]: e for e in complete}

    def inside(child, parent):
        return parent["ts"] <= child["ts"] and \
            child["ts"] + child["dur"] <= parent["ts"] + parent["dur"] + 1e-3
    assert by_name["outer"]["cat"] == "user_annotation"
    assert inside(by_name["inner"], by_name["outer"])
    assert inside(by_name["aten::mm"], by_name["inner"])
    # The forward mm flows to its backward node.
    starts = {e["id"] for e in events if e["ph"] == "s" and e["cat"] == "fwdbwd"}
    ends = {e["id"] for e in events if e["ph"] == "f" and e["cat"] == "fwdbwd"}
    assert by_name["aten::mm"]["args"]["Sequence number"] in starts & ends
    # gzip by suffix
    p.export_chrome_trace(str(tmp_path / "trace.json.gz"))
    import gzip
    assert json.loads(gzip.open(tmp_path / "trace.json.gz", "rt").read())["traceEvents"]


def test_record_function_nesting_and_decorator():
    @record_function("decorated")
    def f(x):
        return x * 2

    x = ember.ones(2)
    with ember.autograd.profiler.profile() as p:
        with record_function("a"):
            with record_function("b"):
                f(x)
    names = {e.name: e for e in p.function_events}
    assert names["b"].cpu_parent is names["a"]
    assert names["decorated"].cpu_parent is names["b"]
    assert names["aten::mul"].cpu_parent is names["decorated"]
    assert names["a"].cpu_time_total >= names["b"].cpu_time_total >= \
        names["decorated"].cpu_time_total
    with record_function("no profiler"):  # outside a profile: nothing to record, no error
        f(x)


@pytest.mark.parametrize("kw", [dict(wait=1, warmup=1, active=2, repeat=2),
                                dict(wait=0, warmup=0, active=1),
                                dict(wait=2, warmup=1, active=3, repeat=1, skip_first=3),
                                dict(wait=1, warmup=0, active=2, skip_first=1,
                                     skip_first_wait=1)])
def test_schedule_equals_torch(kw):
    ours = schedule(**kw)
    theirs = torch.profiler.schedule(**kw)
    assert [ours(s).name for s in range(25)] == [theirs(s).name for s in range(25)]


def _steps_recorded(mod, sched, n):
    traces = []

    def ready(p):
        steps = sorted(int(e.trace_name.split("#")[1]) for e in p.events()
                       if e.name == "ProfilerStep*")
        traces.append(steps)
    x = (ember if mod is ember.profiler else torch).ones(3)
    with mod.profile(activities=[mod.ProfilerActivity.CPU], schedule=sched,
                     on_trace_ready=ready) as p:
        for _ in range(n):
            x = x + 1
            p.step()
    return traces


def test_profiled_steps_equal_torch():
    kw = dict(wait=1, warmup=1, active=2, repeat=2)
    ours = _steps_recorded(ember.profiler, schedule(**kw), 10)
    theirs = _steps_recorded(torch.profiler, torch.profiler.schedule(**kw), 10)
    assert ours == theirs == [[2, 3], [6, 7]]


def test_key_averages_group_by_input_shape():
    def work(lib, a, b, c):
        lib.mm(a, b)
        lib.mm(a, b)
        lib.mm(b, c)

    (ea, eb, ec), (ta, tb, tc) = _pair((2, 3), (3, 4), (4, 5))
    with profile(record_shapes=True) as ep:
        work(ember, ea, eb, ec)
    with torch.profiler.profile(record_shapes=True) as tp:
        work(torch, ta, tb, tc)

    def rows(p):
        return {(a.key, str(a.input_shapes)): a.count
                for a in p.key_averages(group_by_input_shape=True) if a.key == "aten::mm"}
    assert rows(ep) == rows(tp) == {("aten::mm", "[[2, 3], [3, 4]]"): 2,
                                    ("aten::mm", "[[3, 4], [4, 5]]"): 1}
    assert "Input Shapes" in ep.key_averages(group_by_input_shape=True).table()
    assert "Input Shapes" not in ep.key_averages().table()


def test_flops_equal_torch():
    shapes = [(3, 4), (4, 5), (2, 3, 4), (2, 4, 6), (3, 5), (2, 4, 9, 9), (6, 2, 3, 3),
              (1, 3, 8, 8), (5, 3, 3, 3)]
    (a, b, ba, bb, bias, x, w, x2, w2), tt = _pair(*shapes)

    def work(lib, a, b, ba, bb, bias, x, w, x2, w2):
        lib.mm(a, b)
        lib.bmm(ba, bb)
        lib.addmm(bias, a, b)
        F = lib.nn.functional
        F.conv2d(x, w, stride=2, groups=2)
        F.conv2d(x2, w2, padding=1)
        lib.mul(a, a)

    with profile(with_flops=True) as ep:
        work(ember, a, b, ba, bb, bias, x, w, x2, w2)
    with torch.profiler.profile(with_flops=True) as tp:
        work(torch, *tt)

    def flops(p):
        out = {}
        for e in p.events():
            if e.flops and e.name in ("aten::mm", "aten::bmm", "aten::addmm", "aten::conv2d",
                                      "aten::mul"):
                out.setdefault(e.name, []).append(e.flops)
        return out
    assert flops(ep) == flops(tp)
    assert "Total KFLOPs" in ep.key_averages().table() or "Total FLOPs" in \
        ep.key_averages().table()


def test_profile_memory_counts_output_bytes():
    a = ember.ones(16, 8)
    with profile(profile_memory=True) as p:
        y = a * 2.0           # 512 bytes, a new array
        v = y.view(8, 16)     # a view: nothing allocated
        del y, v
    mul = next(e for e in p.events() if e.name == "aten::mul")
    assert mul.cpu_memory_usage == 16 * 8 * 4
    view = next(e for e in p.events() if e.name == "aten::view")
    assert view.cpu_memory_usage == 0
    memory = [e.cpu_memory_usage for e in p.events() if e.name == "[memory]"]
    assert memory[0] == 512 and -512 in memory      # the allocation, then its free
    table = p.key_averages().table()
    assert "CPU Mem" in table and "Self CPU Mem" in table and "512 B" in table


def test_with_stack_and_export_stacks(tmp_path):
    with profile(with_stack=True) as p:
        ember.ones(2) + 1
    add = next(e for e in p.events() if e.name == "aten::add")
    assert add.stack and "test_profiler.py" in add.stack[0]
    assert all("ember" + os.sep + "autograd" not in s for s in add.stack)
    path = tmp_path / "stacks.txt"
    p.export_stacks(str(path), "self_cpu_time_total")
    lines = path.read_text().splitlines()
    assert lines and all(re.fullmatch(r"\S+ \d+", line) for line in lines)
    assert any(line.split()[0].endswith(";aten::add") for line in lines)
    with pytest.raises(ValueError):
        p.export_stacks(str(path), "cpu_time")
    with profile() as q:
        ember.ones(1)
    with pytest.raises(AssertionError, match="with_stack=True"):
        q.export_stacks(str(path))


def test_tensorboard_trace_handler_file_name(tmp_path):
    with profile(on_trace_ready=tensorboard_trace_handler(str(tmp_path), "worker0")):
        ember.ones(2) * 3
    (name,) = os.listdir(tmp_path)
    assert re.fullmatch(r"worker0\.\d+\.pt\.trace\.json", name)
    assert json.loads((tmp_path / name).read_text())["traceEvents"]


def test_profiler_off_patches_nothing():
    import ember.nn.functional as F
    before = (ember.mm, ember.Tensor.__add__, ember.Tensor.sum, F.relu)
    with profile():
        assert ember.mm is not before[0]
        assert engine._node_profiler is not None
    assert (ember.mm, ember.Tensor.__add__, ember.Tensor.sum, F.relu) == before
    assert engine._node_profiler is None
    assert ember.autograd.profiler._active is None


def test_legacy_profile_api_and_errors():
    p = ember.autograd.profiler.profile()
    with pytest.raises(RuntimeError, match="didn't finish"):
        p.table()
    with p:
        with pytest.raises(RuntimeError, match="already enabled"):
            with ember.autograd.profiler.profile():
                pass
        ember.ones(2).exp()
    assert "aten::exp" in p.table()
    assert p.self_cpu_time_total > 0
    with ember.autograd.profiler.profile(enabled=False) as off:
        ember.ones(2)
    assert off.function_events is None


def test_emit_nvtx_needs_cuda():
    if ember.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(RuntimeError, match="NVTX"):
        with ember.autograd.profiler.emit_nvtx():
            pass


def test_schedule_actions_and_trace_ready_count():
    ready = []
    with profile(schedule=schedule(wait=1, warmup=1, active=1, repeat=3),
                 on_trace_ready=ready.append) as p:
        assert p.current_action is ProfilerAction.NONE
        for _ in range(12):
            ember.ones(1) + 1
            p.step()
    assert len(ready) == 3 and p.step_num == 12


@pytest.mark.cuda
def test_cuda_device_time():
    a = ember.randn(256, 256, device="cuda")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
        (a @ a).sum()
    mm = [e for e in p.events() if e.name == "aten::matmul"]
    assert mm and mm[0].device_time_total > 0
    assert "Self CUDA time total:" in p.key_averages().table()


class _FakeEvent:
    """A CUDA event stand-in: records the host clock, so "device" time is host time."""

    def record(self, stream=None):
        import time
        self.t = time.perf_counter()

    def synchronize(self):
        pass


class _FakeCupy:
    class cuda:
        Event = _FakeEvent

        class runtime:
            @staticmethod
            def getDevice():
                return 0

        @staticmethod
        def get_elapsed_time(start, end):
            return (end.t - start.t) * 1000.0


def test_cuda_event_path_with_a_stand_in_cupy(monkeypatch, tmp_path):
    # No GPU here: CuPy's event calls are replaced, so what is checked is the bookkeeping
    # (device time per event, self vs total, the CUDA columns and footer, the GPU track).
    monkeypatch.setattr(ember.cuda, "is_available", lambda: True)
    monkeypatch.setattr(ember.cuda, "_cupy_or_none", lambda: _FakeCupy)
    a = ember.randn(8, 8)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
        with record_function("block"):
            (a @ a).relu()
    block = next(e for e in p.events() if e.name == "block")
    assert block.device_time_total > 0
    assert block.self_device_time_total == pytest.approx(
        block.device_time_total - sum(c.device_time_total for c in block.cpu_children))
    table = p.key_averages().table(sort_by="cuda_time_total")
    assert "Self CUDA" in table and "CUDA total" in table and "Self CUDA time total:" in table
    p.export_chrome_trace(str(tmp_path / "t.json"))
    trace = json.loads((tmp_path / "t.json").read_text())
    gpu = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["cat"] == "gpu_op_range"]
    assert all(e["pid"] == 0 for e in gpu)
    assert [e["name"] for e in gpu] == ["block"]  # nested ranges are inside it


def test_failing_op_and_failing_backward_leave_events_closed():
    a = ember.ones(2, 3, requires_grad=True)

    class Boom(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom")

    with profile() as p:
        with pytest.raises(RuntimeError):
            ember.mm(a, a)           # (2, 3) @ (2, 3): a shape error inside the op
        with pytest.raises(ValueError, match="boom"):
            Boom.apply(a).sum().backward()
        ember.ones(1) + 1
    last_add = [e for e in p.events() if e.name == "aten::add"][-1]
    assert last_add.cpu_parent is None
    assert all(e.end_us >= e.start_us for e in p.events())


def test_start_stop_threads_and_acc_events():
    import threading
    ready = []
    p = profile(schedule=schedule(wait=0, warmup=1, active=1, repeat=2), acc_events=True,
                on_trace_ready=lambda prof: ready.append(len(prof.events())))
    p.start()
    for _ in range(4):
        t = threading.Thread(target=lambda: ember.ones(2) * 2)
        t.start()
        t.join()
        p.step()
    p.stop()
    threads = {e.thread for e in p.events() if e.name == "aten::mul"}
    # (thread ids may be reused once a thread has ended)
    assert threads and threading.get_native_id() not in threads
    assert len(ready) == 2 and ready[1] > ready[0]    # the second trace holds both cycles'
    assert str(p.key_averages()) == p.key_averages().table()


def test_emit_nvtx_ranges_with_a_stand_in_nvtx(monkeypatch):
    pushed, depth = [], [0]

    class FakeNvtx:
        available = True

        @staticmethod
        def RangePush(msg):
            pushed.append(msg)
            depth[0] += 1

        @staticmethod
        def RangePop():
            depth[0] -= 1

    monkeypatch.setattr(ember.cuda, "is_available", lambda: True)
    monkeypatch.setattr(ember.cuda.nvtx, "_nvtx", lambda: FakeNvtx)
    a = ember.ones(2, 2, requires_grad=True)
    with ember.autograd.profiler.emit_nvtx(record_shapes=True):
        ember.mm(a, a).sum().backward()
    assert depth[0] == 0
    assert "aten::mm, sizes = [[2, 2], [2, 2]]" in pushed
    assert "autograd::engine::evaluate_function: MmBackward0" in pushed
    assert ember.autograd.profiler._active is None


def test_optimizer_and_data_loader_ranges_named_as_torch():
    from ember.utils.data import DataLoader, TensorDataset
    w = ember.zeros(2, requires_grad=True)
    opt = ember.optim.SGD([w], lr=0.1)
    opt.step()  # an optimizer used once before: its step is the hooked one
    hook_calls = []
    opt.register_step_post_hook(lambda *a: hook_calls.append(1))
    loader = DataLoader(TensorDataset(ember.ones(4, 2)), batch_size=2)
    step_before = ember.optim.SGD.__dict__["step"]
    with profile() as p:
        for (x,) in loader:
            opt.zero_grad()
            (x * w).sum().backward()
            opt.step()
    names = [e.name for e in p.events() if e.cpu_parent is None]
    assert names.count("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__") == 3
    assert names.count("Optimizer.step#SGD.step") == 2
    assert names.count("Optimizer.zero_grad#SGD.zero_grad") == 2
    assert hook_calls == [1, 1]                       # the step hooks still run, once each
    assert ember.optim.SGD.__dict__["step"] is step_before    # swapped back


def test_itt_is_reported_missing():
    assert ember.profiler.itt.is_available() is False
    with pytest.raises(RuntimeError, match="ITT"):
        ember.profiler.itt.range_push("x")
    with pytest.raises(RuntimeError, match="ITT"):
        with ember.autograd.profiler.emit_itt():
            pass
