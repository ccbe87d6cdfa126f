"""The benchmark runner works end to end: a quick run of one fast workload writes well-formed
results. Timings are not asserted here; they belong to benchmarks/ and docs/benchmarks.md."""
import json
import math
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_quick_run_writes_json_and_markdown(tmp_path):
    proc = subprocess.run([sys.executable, os.path.join(REPO, "benchmarks", "run.py"), "--quick",
                           "--only", "eager_add", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stderr

    report = json.loads((tmp_path / "results.json").read_text())
    assert report["quick"] is True
    assert report["threads"] == 2
    assert report["machine"]["cores"] >= 1
    assert set(report["results"]) == {"eager_add"}
    entry = report["results"]["eager_add"]
    assert set(entry["frameworks"]) == {"ember", "torch"}
    for stats in entry["frameworks"].values():
        assert 0 < stats["min_s"] <= stats["median_s"] <= stats["max_s"]
        assert stats["n_samples"] == len(stats["runs"]) * len(stats["runs"][0]["samples"])
        assert stats["peak_rss_mb"] > 0
        assert all(len(run["loadavg_before"]) == 3 for run in stats["runs"])
    ratio = entry["ratio_vs_torch"]
    assert math.isfinite(ratio) and ratio > 0
    assert entry["target"]["reference"] == "torch"
    assert entry["target"]["met"] == (ratio <= entry["target"]["max_ratio"])

    markdown = (tmp_path / "results.md").read_text()
    assert "| `eager_add` |" in markdown
    assert markdown in proc.stdout
