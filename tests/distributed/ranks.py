"""Run a test body as real ranks: ``mpiexec -n N python <body>`` from the test itself, so every
distributed test starts its processes and stops them (the process group is torn down on exit,
and a job that outlives ``timeout`` is killed as a process group, never left behind).

A body is Python source. It runs with ``tests/`` on ``sys.path`` and sees ``RANK`` /
``WORLD_SIZE`` in the environment when launched through ``run_ranks`` (MPICH's ``PMI_RANK``
mapped to torch's names). A body asserts; a failing assertion makes the job exit non-zero, and
``run_ranks`` raises with every rank's output.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO_DIR = os.path.dirname(TESTS_DIR)

# Each rank gets one BLAS thread: two ranks on a two-core machine (and a second test worker)
# must not oversubscribe, and results must not depend on the thread count.
_RANK_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
             # MPICH's progress engine spins while a rank waits; yielding keeps two ranks and a
             # second pytest worker on two cores from starving each other.
             "MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1", "MPIR_CVAR_POLLS_BEFORE_YIELD": "1"}

_PRELUDE = """\
import os, sys
sys.path.insert(0, {tests!r})
sys.path.insert(0, {repo!r})
os.environ.setdefault("RANK", os.environ.get("PMI_RANK", "0"))
os.environ.setdefault("WORLD_SIZE", os.environ.get("PMI_SIZE", "1"))
os.environ.setdefault("LOCAL_RANK", os.environ.get("MPI_LOCALRANKID", os.environ["RANK"]))
"""


def mpiexec():
    """The ``mpiexec`` beside this interpreter (the ``mpich`` wheel installs it into the venv),
    else the one on PATH."""
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    found = beside if os.path.exists(beside) else shutil.which("mpiexec")
    if found is None:
        raise RuntimeError("mpiexec not found: install the test extras "
                           "(pip install -e '.[test]' brings mpi4py and the mpich wheel)")
    return found


def run_ranks(body, nprocs=2, timeout=180, env=None, check=True, args=()):
    """Run ``body`` (Python source) on ``nprocs`` ranks under ``mpiexec``; return the
    ``CompletedProcess`` (stdout and stderr as text). With ``check``, a non-zero exit raises
    AssertionError carrying the output. A job still running after ``timeout`` seconds is killed
    (its whole process group) and raises AssertionError saying so."""
    source = _PRELUDE.format(tests=TESTS_DIR, repo=REPO_DIR) + textwrap.dedent(body)
    with tempfile.TemporaryDirectory(prefix="ember-ranks-") as tmp:
        path = os.path.join(tmp, "body.py")
        with open(path, "w") as f:
            f.write(source)
        full_env = dict(os.environ, **_RANK_ENV, **(env or {}))
        full_env.pop("RANK", None), full_env.pop("WORLD_SIZE", None)
        cmd = [mpiexec(), "-n", str(nprocs), sys.executable, path, *args]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=full_env, cwd=tmp, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            raise AssertionError(f"{nprocs} ranks still running after {timeout}s (killed)\n"
                                 f"--- stdout\n{out}\n--- stderr\n{err}")
    result = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
    if check and result.returncode != 0:
        raise AssertionError(f"ranks exited with {result.returncode}\n--- stdout\n{out}\n"
                             f"--- stderr\n{err}")
    return result


def assert_section_passed(job, name, nprocs=2):
    """A rank job whose body prints ``PASS <name> rank<r>`` after each section it checked:
    every rank must have printed it for ``name``."""
    for r in range(nprocs):
        assert f"PASS {name} rank{r}" in job.stdout, \
            f"section {name} did not pass on rank {r}\n--- stdout\n{job.stdout}\n" \
            f"--- stderr\n{job.stderr}"
