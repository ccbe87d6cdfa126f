"""Run an unmodified PyTorch program with real torch or with Ember standing in for torch.

    python tests/compat/run_program.py --framework ember tests/compat/programs/vae.py --log l.json

``--framework torch`` runs the program as it is. ``--framework ember`` runs the same file with
``tests/compat/ember_as_torch`` first on ``PYTHONPATH``: there, ``import torch`` (and every
``torch.X.Y``) resolves to Ember (see that package's docstring). ``--device cupyconf`` (with
``--framework ember``) makes the CuPy conformance device the program's accelerator, so a
program choosing its device through ``torch.accelerator`` runs there (a conformance device,
not a GPU); torch's own run stays on its CPU either way. The program is a child
process in its own session, so a timeout ends it together with any processes it started.
"""
import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path

COMPAT_DIR = Path(__file__).resolve().parent
PROGRAMS_DIR = COMPAT_DIR / "programs"
SHIM_DIR = COMPAT_DIR / "ember_as_torch"
REPO_ROOT = COMPAT_DIR.parent.parent
FRAMEWORKS = ("torch", "ember")


def program_env(framework, device=None):
    """The environment a program runs in under ``framework``; ``device`` ("cupyconf") is the
    accelerator Ember's run gets (default: the ``EMBER_COMPAT_DEVICE`` already set, if any)."""
    if framework not in FRAMEWORKS:
        raise ValueError(f"framework must be one of {FRAMEWORKS}, got {framework!r}")
    env = dict(os.environ)
    if device is not None:
        env["EMBER_COMPAT_DEVICE"] = device
    if framework == "torch":
        env.pop("EMBER_COMPAT_DEVICE", None)
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    paths = [p for p in paths if Path(p).resolve() != SHIM_DIR]
    if framework == "ember":
        paths = [str(SHIM_DIR), str(REPO_ROOT)] + paths
    env["PYTHONPATH"] = os.pathsep.join(paths)
    # Two cores are shared by both frameworks' runs: one BLAS thread each keeps them from
    # oversubscribing, and both frameworks then sum in the same single-threaded order.
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = "1"
    return env


def run_program(program, framework, args=(), timeout=60.0, cwd=None, device=None):
    """Run ``program`` (a path, or a file name in ``programs/``) to completion, in the
    working directory ``cwd`` (where files it names relatively land; default: this one).

    Returns the ``subprocess.CompletedProcess`` (stdout and stderr captured as text). On
    timeout the program's whole process group is killed and ``subprocess.TimeoutExpired``
    raised, so no worker it started outlives the call.
    """
    path = Path(program)
    if not path.is_file():
        path = PROGRAMS_DIR / program
    path = path.resolve()
    command = [sys.executable, str(path), *map(str, args)]
    process = subprocess.Popen(command, env=program_env(framework, device), cwd=cwd,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        stdout, stderr = process.communicate()
        raise subprocess.TimeoutExpired(command, timeout, output=stdout, stderr=stderr)
    finally:
        if process.poll() is None:
            _kill_group(process)
            process.wait()
    # Workers the program left running after it exited are ended as well.
    _kill_group(process)
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def _kill_group(process):
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework", choices=FRAMEWORKS, required=True)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--device", choices=("cpu", "cupyconf"), default=None,
                        help="the accelerator of Ember's run (cupyconf: the CuPy conformance "
                             "device, not a GPU)")
    parser.add_argument("program")
    parser.add_argument("program_args", nargs=argparse.REMAINDER)
    options = parser.parse_args(argv)
    result = run_program(options.program, options.framework, options.program_args,
                         timeout=options.timeout, device=options.device)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
