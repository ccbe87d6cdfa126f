"""ember.utils.benchmark against torch.utils.benchmark: the same raw times give the same
statistics, repr and Compare tables; a deterministic fake timer gives the same blocks."""
import re

import numpy as np
import pytest
import torch.utils.benchmark as tb

import ember
import ember.utils.benchmark as eb


def _pair(times, number=1, **spec):
    spec = {"stmt": "x + y", "setup": "pass", **spec}
    return (tb.Measurement(number, list(times), tb.TaskSpec(**spec)),
            eb.Measurement(number, list(times), eb.TaskSpec(**spec)))


def _without_address(text):
    return re.sub(r"<[\w.]+ object at 0x[0-9a-f]+>", "", text)


_RNG = np.random.default_rng(0)
_CASES = [
    ([1e-3], {}),
    ([1e-3, 1.01e-3], {}),
    (_RNG.uniform(1, 1.3, 9) * 1e-6, dict(label="L", sub_label="S", description="D",
                                          num_threads=4)),
    ([2.0, 2.5, 3.0, 1.0, 5.0], dict(stmt="a\nb", setup="import x")),
    ([1e-3, 1.1e-3], dict(setup="a\nb", description="D")),
    (_RNG.uniform(1, 1.02, 20) * 3e-8, dict(sub_label="q")),
    ([1e-3, 1.3e-3, 1.15e-3, 1.2e-3, 1.0e-3], dict(env="E")),
]


@pytest.mark.parametrize("times,spec", _CASES)
def test_measurement_statistics_and_repr_match_torch(times, spec):
    t, e = _pair(times, number=10, **spec)
    for attr in ("median", "mean", "iqr"):
        assert getattr(e, attr) == pytest.approx(getattr(t, attr), rel=1e-12)
    for attr in ("significant_figures", "has_warnings", "title", "as_row_name", "env",
                 "times", "number_per_run"):
        assert getattr(e, attr) == getattr(t, attr), attr
    assert e.meets_confidence(0.05) == t.meets_confidence(0.05)
    assert _without_address(repr(e)) == _without_address(repr(t))
    assert repr(e).startswith("<ember.utils.benchmark.utils.common.Measurement object at")


def test_merge_and_trim_sigfig_match_torch():
    t1, e1 = _pair([1e-3, 2e-3], number=2)
    t2, e2 = _pair([3e-3], number=4)
    t3, e3 = _pair([1e-3], label="other")
    for a, b in zip(tb.Measurement.merge([t1, t2, t3]), eb.Measurement.merge([e1, e2, e3])):
        assert (a.raw_times, a.number_per_run) == (b.raw_times, b.number_per_run)
    for x, n in [(123.456, 2), (0.0123456, 3), (98765, 1), (1.5, 4)]:
        assert eb.trim_sigfig(x, n) == tb.trim_sigfig(x, n)
    for t in (5e-9, 1e-6, 1.5e-3, 2.0, 1e-10):
        assert eb.select_unit(t) == tb.select_unit(t)


def _measurements(seed):
    rng = np.random.default_rng(seed)
    specs = [("add", "small", "x", 1), ("add", "small", "y", 4), ("add", "big", "x", 1),
             ("add", "big", "y", 4), ("add", "big", "z", 1), ("mm", "n=1", "ember", 1),
             ("mm", "n=1", "torch", 1), ("mm", "n=100", "ember", 1), ("mm", "n=100", "torch", 1)]
    pairs = []
    for i, (label, sub, desc, threads) in enumerate(specs):
        times = rng.uniform(1, 1 + 0.4 * rng.random(), int(rng.integers(4, 10))) * \
            10 ** rng.uniform(-7, -3)
        pairs.append(_pair(times, number=10, label=label, sub_label=sub, description=desc,
                           num_threads=threads, env="A" if (i == 3 and seed % 2) else "B"))
    return [p[0] for p in pairs], [p[1] for p in pairs]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("options", [(), ("trim_significant_figures",),
                                     ("trim_significant_figures", "colorize"),
                                     ("colorize", "highlight_warnings"), ("rowwise",)])
def test_compare_tables_match_torch(seed, options):
    torch_results, ember_results = _measurements(seed)
    ct, ce = tb.Compare(torch_results), eb.Compare(ember_results)
    for option in options:
        for c in (ct, ce):
            c.colorize(rowwise=True) if option == "rowwise" else getattr(c, option)()
    assert str(ce) == str(ct)


@pytest.mark.parametrize("dt", [1e-6, 3e-4])
def test_timer_blocks_with_a_deterministic_timer_match_torch(dt):
    # The statement advances a counter and the timer reads it: every run costs exactly dt.
    results = []
    for module in (tb, eb):
        namespace = {"c": [0]}
        timer = module.Timer("c[0] += 1", globals=namespace, timer=lambda: namespace["c"][0] * dt)
        m1 = timer.timeit(100)
        m2 = timer.blocked_autorange(min_run_time=0.2)
        m3 = timer.adaptive_autorange(min_run_time=0.01, max_run_time=1.0)
        results.append([(m.number_per_run, len(m.raw_times), round(m.median / dt, 9),
                         m.iqr <= 1e-12 * dt) for m in (m1, m2, m3)])
    assert results[0] == results[1]
    assert results[1][1][2] == 1.0


def test_timer_runs_ember_code_with_the_requested_threads():
    seen = []
    timer = eb.Timer("seen.append(ember.get_num_threads()); x + x",
                     setup="x = torch.ones(8)", globals={"seen": seen, "ember": ember},
                     num_threads=1, label="add", description="ember")
    before = ember.get_num_threads()
    m = timer.timeit(5)
    assert set(seen) == {1} and ember.get_num_threads() == before
    assert m.number_per_run == 5 and m.median > 0 and m.title == "add"
    assert "add" in str(eb.Compare([m]))


def test_absent_names_say_why():
    with pytest.raises(AttributeError, match="Fuzzer"):
        eb.Fuzzer
    assert not hasattr(eb, "FuzzedTensor")
    with pytest.raises(NotImplementedError, match="blocked_autorange"):
        eb.Timer().repeat()
    with pytest.raises(NotImplementedError, match="C\\+\\+"):
        eb.Timer("x", language="cpp")


@pytest.mark.parametrize("rowwise", [False, True])
def test_compare_colours_each_band_as_torch(rowwise):
    # Ratios to the best of 1, 1.005 (best), 1.05 (good), 1.5 (plain), 3 (bad), 6 (very bad).
    ratios = [1, 1.05, 1.5, 3, 6, 1.005]
    tables = []
    for module in (tb, eb):
        results = [module.Measurement(1, [r * 1e-3] * 4, module.TaskSpec(
            "s", "pass", label="L", sub_label=f"r{i}", description="d"))
            for i, r in enumerate(ratios)]
        compare = module.Compare(results)
        compare.colorize(rowwise=rowwise)
        tables.append(str(compare))
    assert tables[0] == tables[1]
