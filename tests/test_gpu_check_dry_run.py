"""The prepared GPU check (benchmarks/gpu_check.py, issue 16) works end to end without a GPU: a
quick run over the CuPy conformance device (tests/conformance: the real CUDA backend over a
NumPy-backed stand-in for CuPy 14.2, a conformance device and not a GPU) against torch on the
CPU writes a well-formed report whose parity sections passed. Its timings are meaningless there,
and the report must say so rather than judge the goals."""
import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(REPO, "benchmarks", "gpu_check.py")
sys.path.insert(0, os.path.join(REPO, "benchmarks"))

import gpu_check  # noqa: E402

# The script's own hard budget. A quiet core runs the quick check in about 40 s of CPU time; the
# budget leaves room for a CI machine shared with other jobs.
BUDGET_S = 240
SECTIONS = ["environment", "op_table", "nn_optim_parity", "training_parity", "memory", "timings",
            "nccl"]
TIMING_ROWS = ["transformer_train_float32", "transformer_train_bf16_autocast",
               "transformer_train_fp16_autocast", "matmul_4096",
               "eager_chain_100_ops", "pinned_copies"]


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu_check")
    # One thread for BLAS: the check must fit a single-core CI machine.
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env.pop("EMBER_TEST_DEVICE", None)
    proc = subprocess.run([sys.executable, SCRIPT, "--device", "cupyconf", "--oracle-device",
                           "cpu", "--quick", "--budget", str(BUDGET_S), "--out", str(out)],
                          capture_output=True, text=True, timeout=BUDGET_S + 60, cwd=REPO, env=env)
    report = json.loads((out / "gpu_check.json").read_text())
    return proc, report, (out / "gpu_check.md").read_text()


def test_report_structure(dry_run):
    proc, report, markdown = dry_run
    assert list(report["sections"]) == SECTIONS
    assert report["device"] == "cupyconf" and report["oracle_device"] == "cpu"
    assert report["quick"] is True
    assert report["elapsed_s"] <= BUDGET_S
    for name, section in report["sections"].items():
        assert isinstance(section.get("status"), str), name
        assert 0 <= section["elapsed_s"] <= section["allotted_s"] + 3, name
    env = report["sections"]["environment"]
    assert env["status"] == "passed"
    assert "not a GPU" in env["device_name"]
    assert env["torch"] and env["numpy"]
    assert markdown in proc.stdout
    assert "| op_table |" in markdown and "| nn_optim_parity |" in markdown


def test_every_section_passed_and_exit_status_is_zero(dry_run):
    proc, report, _ = dry_run
    statuses = {name: s["status"] for name, s in report["sections"].items()}
    assert proc.returncode == 0, (statuses, proc.stderr[-3000:])


def test_op_table_ran_every_row_against_ember_cpu(dry_run):
    _, report, _ = dry_run
    op = report["sections"]["op_table"]
    assert op["status"] == "passed", op["first_failures"]
    assert op["compared_against"] == "ember cpu"
    assert op["run"] + op["skipped_rows"] == op["total_cases"] > 500
    assert op["passed"] == op["run"] and op["failed"] == 0
    from opinfo import registry
    assert set(op["by_family"]) == set(registry._FAMILIES)
    assert all(c["passed"] > 0 for c in op["by_family"].values())


def test_nn_optim_parity_ran_on_the_device(dry_run):
    _, report, _ = dry_run
    parity = report["sections"]["nn_optim_parity"]
    assert parity["status"] == "passed", parity.get("failure_reasons")
    assert parity["command"].startswith("EMBER_TEST_DEVICE=cupyconf ")
    assert parity["counts"]["passed"] > 10
    assert parity["counts"]["failed"] == parity["counts"]["error"] == 0
    # pytest's own summary agrees (it may be stopped after printing it: returncode None).
    assert parity["returncode"] in (0, None)
    assert " passed" in parity["summary"]
    assert "failed" not in parity["summary"] and "error" not in parity["summary"]


def test_training_losses_match_torch_step_by_step(dry_run):
    _, report, _ = dry_run
    training = report["sections"]["training_parity"]
    assert training["status"] == "passed", training["models"]
    assert set(training["models"]) == {"mlp", "cnn", "transformer_encoder"}
    for name, model in training["models"].items():
        assert model["steps"] == len(model["torch_losses"]) == len(model["ember_losses"]) == 3
        assert model["max_loss_rel_diff"] <= training["tolerance"]["loss_rtol"], name
        # Training moved the loss: the steps compared are real updates.
        assert model["torch_losses"][0] != model["torch_losses"][-1], name


def test_memory_section_says_why_it_cannot_run_here(dry_run):
    _, report, _ = dry_run
    memory = report["sections"]["memory"]
    assert memory["status"].startswith("not available: ")


def test_timings_are_marked_meaningless_and_not_judged(dry_run):
    _, report, markdown = dry_run
    timings = report["sections"]["timings"]
    assert timings["meaningful"] is False
    assert "meaningless" in timings["note"] and "not a GPU" in timings["note"]
    assert "Meaningless here" in markdown
    assert list(timings["rows"]) == TIMING_ROWS
    import ember
    for name, row in timings["rows"].items():
        if name in ("transformer_train_bf16_autocast", "transformer_train_fp16_autocast"):
            # autocast names the device types it supports, and the conformance device is not
            # one: the rows say so rather than measure something else
            assert row["status"].startswith("not available: ember.autocast refuses cupyconf"), \
                (name, row)
            continue
        assert row["status"] == "measured", (name, row)
        assert row["ratio"] > 0 and row["goal_met"] is None, name


def test_parity_counts_only_tests_parametrised_on_the_device():
    output = "\n".join([
        "tests/optim/test_optimizers.py::test_a[cupyconf-SGD] PASSED  [ 10%]",
        "tests/optim/test_optimizers.py::test_a[cpu-SGD] PASSED  [ 20%]",
        "tests/nn/test_module.py::test_cupyconf_named PASSED  [ 30%]",
        "tests/nn/test_conv.py::test_b[cupyconf] FAILED  [ 40%]",
        "tests/nn/test_conv.py::test_c[Adam-cupyconf] SKIPPED (why)  [ 50%]",
        "FAILED tests/nn/test_conv.py::test_b[cupyconf] - AssertionError: no",
    ])
    counts, other, failed, reasons = gpu_check.parse_pytest_verbose(output, "cupyconf")
    assert counts["passed"] == 1 and counts["failed"] == 1 and counts["skipped"] == 1
    assert other == 2  # the cpu case and a test merely named after the device
    assert failed == ["tests/nn/test_conv.py::test_b[cupyconf]"]
    assert reasons == ["tests/nn/test_conv.py::test_b[cupyconf] - AssertionError: no"]
