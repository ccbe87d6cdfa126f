"""The programs in ``programs/`` run unmodified, once with torch and once with Ember standing
in for it (``run_program.py``), from the same initial weights: the per-step losses, the final
evaluation metrics and the final weights must agree, and the checkpoints cross between the
frameworks (torch's initial ``state_dict`` is loaded by Ember; Ember's final one by torch).

The two runs of a program are sequential (Ember's starts from torch's checkpoint), but two
programs run side by side (see ``ProgramRuns``), so the set takes about half its runs' time.

``EMBER_COMPAT_DEVICE=cupyconf`` runs Ember's side on the CuPy conformance device, which the
programs find as their accelerator (``torch.accelerator``), against torch on its CPU: the real
CUDA backend over a NumPy-backed stand-in for CuPy 14.2, a conformance device, not a GPU.
Ember's checkpoints then record "cupyconf:0", so torch reads them with ``map_location="cpu"``.
"""
import json
import os
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch

from run_program import PROGRAMS_DIR, SHIM_DIR, program_env, run_program

PROGRAMS = sorted(path.stem for path in PROGRAMS_DIR.glob("*.py"))
EMBER_DEVICE = os.environ.get("EMBER_COMPAT_DEVICE") or None
TIMEOUT_S = 120
PARALLEL_PROGRAMS = 2

# float32 losses after a few optimizer steps: the frameworks sum in different orders, so
# results drift apart by a few ulps a step; 1e-4 leaves room for that drift, not for a
# different computation. The L-BFGS program runs in float64.
LOSS_RTOL = {"time_sequence_prediction": 1e-9}
DEFAULT_LOSS_RTOL = 1e-4
# Final weights accumulate every step's drift, and the adaptive optimizers (Adam, RMSprop,
# Adadelta) divide by the root of the gradient's second moment, which turns rounding noise in
# a near-zero gradient into a step of size ~lr. So each weight tensor is compared normwise:
# every entry within 1e-3 of the tensor's largest magnitude. The attention key bias in the
# Transformer gets a gradient that is exactly zero in exact arithmetic (adding it shifts all
# of a query's scores equally, which softmax ignores), so Adam moves it by normalised rounding
# noise alone, differently in each framework; it is allowed one Adam step's size, lr = 3e-3.
WEIGHT_RTOL = 1e-3
WEIGHT_ATOL = {("transformer_language_model", "in_proj_bias"): 3e-3}
# Files a program writes that are not weights checkpoints: the pickled model holds the
# program's own classes (``__main__.RNNModel``), so only the program can load it, which it
# does, evaluating from it; the data set is a NumPy array (torch.load needs weights_only=False).
WHOLE_MODULE_PICKLES = {("word_language_model", "model.pt")}
NUMPY_PICKLES = {("time_sequence_prediction", "traindata.pt")}


def run_both(program, directory):
    """Torch run (saves its initial weights), then the Ember run that loads them."""
    paths = {name: directory / name for name in
             ("init.pt", "torch.json", "ember.json", "torch_final.pt", "ember_final.pt")}
    outcome = {"paths": paths}
    for framework in ("torch", "ember"):  # each run's own working directory, for the files
        (directory / framework).mkdir()   # a program writes by relative path
    outcome["torch"] = run_program(program + ".py", "torch", [
        "--save-init", paths["init.pt"], "--log", paths["torch.json"],
        "--save-model", paths["torch_final.pt"]], timeout=TIMEOUT_S, cwd=directory / "torch")
    if outcome["torch"].returncode == 0:
        outcome["ember"] = run_program(program + ".py", "ember", [
            "--load-init", paths["init.pt"], "--log", paths["ember.json"],
            "--save-model", paths["ember_final.pt"]], timeout=TIMEOUT_S, cwd=directory / "ember",
            device=EMBER_DEVICE)
    return outcome


class ProgramRuns:
    """Runs a program's pair when its test asks for it. Outside pytest-xdist (whose workers
    already run tests side by side) it also starts the next selected program's pair, so two
    programs run at once."""

    def __init__(self, order, make_directory):
        self._order, self._make_directory = order, make_directory
        self._prefetch = "PYTEST_XDIST_WORKER" not in os.environ
        self._pool = ThreadPoolExecutor(max_workers=PARALLEL_PROGRAMS)
        self._futures = {}

    def _start(self, program):
        if program not in self._futures:
            self._futures[program] = self._pool.submit(run_both, program,
                                                       self._make_directory(program))

    def result(self, program):
        self._start(program)
        if self._prefetch and program in self._order:
            following = self._order[self._order.index(program) + 1:]
            if following:
                self._start(following[0])
        return self._futures[program].result(timeout=2 * TIMEOUT_S + 60)

    def close(self):
        for future in self._futures.values():
            future.cancel()
        self._pool.shutdown(wait=True)


@pytest.fixture(scope="module")
def program_runs(request, tmp_path_factory):
    selected = [item.callspec.params["program"] for item in request.session.items
                if item.originalname == "test_program_matches_torch"
                and hasattr(item, "callspec")]
    runs = ProgramRuns(list(dict.fromkeys(selected)), tmp_path_factory.mktemp)
    yield runs
    runs.close()


def failure_text(result):
    return (f"exit status {result.returncode}\n--- stdout\n{result.stdout[-3000:]}"
            f"\n--- stderr\n{result.stderr[-6000:]}")


def assert_same_checkpoint(program, actual, expected, where):
    """Same structure, types, dtypes and shapes; numbers equal (floats after training close:
    tensors normwise, see WEIGHT_RTOL)."""
    assert type(actual) is type(expected), (where, type(actual), type(expected))
    if isinstance(expected, dict):
        assert list(actual) == list(expected), where
        for key, value in expected.items():
            assert_same_checkpoint(program, actual[key], value, f"{where}.{key}")
    elif isinstance(expected, (list, tuple)):
        assert len(actual) == len(expected), where
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_same_checkpoint(program, a, e, f"{where}[{i}]")
    elif isinstance(expected, (torch.Tensor, np.ndarray)):
        a, e = (np.asarray(x.numpy() if isinstance(x, torch.Tensor) else x)
                for x in (actual, expected))
        if isinstance(expected, torch.Tensor):
            assert (actual.dtype, actual.shape) == (expected.dtype, expected.shape), where
        assert (a.dtype, a.shape) == (e.dtype, e.shape), where
        atol = WEIGHT_RTOL * float(np.abs(e).max(initial=0.0)) if e.dtype.kind in "fc" else 0
        atol = max([atol] + [tol for (name, suffix), tol in WEIGHT_ATOL.items()
                             if name == program and where.endswith(suffix)])
        np.testing.assert_allclose(a, e, rtol=0, atol=atol, err_msg=f"{program}: {where}")
    elif isinstance(expected, float):
        assert actual == pytest.approx(expected, rel=1e-6), where
    else:
        assert actual == expected, where


def test_there_are_at_least_twelve_programs():
    assert len(PROGRAMS) >= 12, PROGRAMS


@pytest.mark.parametrize("program", PROGRAMS)
def test_program_matches_torch(program, program_runs):
    outcome = program_runs.result(program)
    for framework in ("torch", "ember"):
        result = outcome[framework]
        if result.returncode != 0:
            pytest.fail(f"the {framework} run of {program} failed:\n{failure_text(result)}",
                        pytrace=False)
    paths = outcome["paths"]
    expected = json.loads(paths["torch.json"].read_text())
    actual = json.loads(paths["ember.json"].read_text())

    assert len(actual["losses"]) == len(expected["losses"]) > 0
    rtol = LOSS_RTOL.get(program, DEFAULT_LOSS_RTOL)
    np.testing.assert_allclose(actual["losses"], expected["losses"], rtol=rtol, atol=rtol * 1e-2,
                               err_msg=f"{program}: per-step losses")
    assert actual.keys() == expected.keys()
    assert actual["metrics"].keys() == expected["metrics"].keys()
    for name, value in expected["metrics"].items():
        np.testing.assert_allclose(actual["metrics"][name], value, rtol=1e-4, atol=1e-6,
                                   err_msg=f"{program}: final metric {name}")
    for key in set(expected) - {"losses", "metrics"}:
        assert actual[key] == expected[key], key

    # Ember's checkpoint loads in torch (weights-only, as torch.load defaults to) and holds
    # the same tensors, of the same dtypes and shapes, as torch's own final checkpoint.
    assert_same_checkpoint(program, torch.load(paths["ember_final.pt"], weights_only=True,
                                               map_location="cpu"),
                           torch.load(paths["torch_final.pt"], weights_only=True), "final")

    # So do the files the program writes itself (general checkpoints with optimizer and
    # scheduler state, per-epoch checkpoints, a pickled data set): every one torch's run
    # wrote, Ember's wrote too, and torch reads Ember's to the same contents.
    torch_dir, ember_dir = paths["init.pt"].parent / "torch", paths["init.pt"].parent / "ember"
    written = sorted(str(f.relative_to(torch_dir)) for f in torch_dir.rglob("*") if f.is_file())
    assert written == sorted(str(f.relative_to(ember_dir)) for f in ember_dir.rglob("*")
                             if f.is_file())
    for name in written:
        if (program, name) in WHOLE_MODULE_PICKLES:
            continue
        weights_only = (program, name) not in NUMPY_PICKLES
        assert_same_checkpoint(program, torch.load(ember_dir / name, weights_only=weights_only,
                                                   map_location="cpu"),
                               torch.load(torch_dir / name, weights_only=weights_only), name)


def run_python(framework, source, timeout=60, device=None):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(source)],
                          env=program_env(framework, device), capture_output=True, text=True,
                          timeout=timeout)


def test_compat_device_switch_makes_the_conformance_device_the_accelerator():
    # What the programs do to pick a device, under the switch: the conformance device (not a
    # GPU) is the accelerator, in the program's process and in the processes it starts.
    result = run_python("ember", """
        import subprocess, sys
        import torch
        device = torch.accelerator.current_accelerator()
        x = torch.ones(2).pin_memory().to(device, non_blocking=True)
        child = subprocess.run([sys.executable, "-c", "import torch; "
                                "print(torch.accelerator.current_accelerator())"],
                               capture_output=True, text=True, check=True, timeout=50)
        print(device, x.device, child.stdout)
    """, device="cupyconf")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["cupyconf", "cupyconf:0", "cupyconf"]
    assert "EMBER_COMPAT_DEVICE" not in program_env("torch", "cupyconf")
    no_accel = run_python("ember", "import torch; print(torch.accelerator.is_available())")
    assert no_accel.stdout.strip() == "False", no_accel.stderr


def test_shim_maps_every_torch_import_to_ember():
    result = run_python("ember", """
        import sys
        import torch, torch.nn as nn, torch.nn.functional as F
        from torch.utils.data import DataLoader
        from torch.nn.utils.rnn import pad_sequence
        import ember, ember.nn.functional, ember.utils.data, ember.nn.utils.rnn
        assert torch is ember and nn is ember.nn and F is ember.nn.functional
        assert DataLoader is ember.utils.data.DataLoader
        assert pad_sequence is ember.nn.utils.rnn.pad_sequence
        assert sys.modules["torch.nn.functional"] is ember.nn.functional
        import torch.sparse, torch.multiprocessing, torch.utils.safetensors  # imported lazily
        assert torch.sparse is ember.sparse and torch.multiprocessing is ember.multiprocessing
        # Each module keeps its own spec: importlib and pickle still see ember.X.
        for name, module in list(sys.modules.items()):
            if name.startswith("torch."):
                assert module.__spec__.name == "ember" + name[len("torch"):], name
        try:
            import torch.no_such_module
        except ModuleNotFoundError as error:
            assert error.name == "torch.no_such_module", error.name
        else:
            raise AssertionError("import torch.no_such_module succeeded")
        # The real torch package was never imported.
        assert not any("site-packages/torch" in (getattr(m, "__file__", None) or "")
                       for m in list(sys.modules.values()))
        print("ok")
    """)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def test_torch_environment_gets_real_torch():
    result = run_python("torch", "import torch; print(torch.__file__)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == torch.__file__
    assert str(SHIM_DIR) not in program_env("torch")["PYTHONPATH"]


def test_timeout_kills_program_and_its_children(tmp_path):
    pid_file = tmp_path / "child.pid"
    program = tmp_path / "sleeper.py"
    program.write_text(textwrap.dedent(f"""
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        open({str(pid_file)!r}, "w").write(str(child.pid))
        time.sleep(60)
    """))
    with pytest.raises(subprocess.TimeoutExpired):
        run_program(program, "torch", timeout=3)
    child_pid = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(child_pid):
        time.sleep(0.1)
    assert not _alive(child_pid)


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"  # a zombie has ended
    except FileNotFoundError:
        return False
