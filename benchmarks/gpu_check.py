"""The prepared GPU check of issue 16: one command that says whether Ember works, and how fast,
on a CUDA device, within a hard time budget (default 270 s, to fit a 5-minute device lease).

    python benchmarks/gpu_check.py                            # on a GPU: Ember "cuda" vs torch CUDA
    python benchmarks/gpu_check.py --out /tmp/gpu --quick     # reduced sizes and samples
    python benchmarks/gpu_check.py --device cupyconf --oracle-device cpu --quick   # dry run, no GPU

Sections, each time-boxed (a section that runs out of time stops and reports
"skipped: time budget", with what it got through):

1. environment: CuPy, CUDA runtime/driver, torch versions and the device's name; where it
   fails (no usable device or oracle), the other sections are not run.
2. op_table: every row of the op table (tests/opinfo) run on ``--device`` against Ember on the
   CPU: output values, dtypes and shapes, and the gradients of a random cotangent.
3. nn_optim_parity: the parity tests of tests/nn, tests/optim and tests/amp with their ``device``
   fixture switched to ``--device`` (``EMBER_TEST_DEVICE``), in a subprocess started with the
   op table and running beside it; counts parsed.
4. training_parity: an MLP, a CNN and a Transformer encoder trained for a few steps by Ember on
   ``--device`` and torch on ``--oracle-device`` from the same initial weights and batches;
   losses compared step by step, first-step gradients compared.
5. memory: ``ember.cuda.memory_allocated`` and friends against CuPy's memory pool after
   allocating known sizes.
6. timings: the issue's performance goals as ratios (each side warmed up, synchronised, median
   of repeats): TransformerEncoder training samples/s (float32, bf16 autocast, and fp16
   autocast, whose goal also asks 1.5x Ember's own float32), a 4096x4096 matmul against raw CuPy, a 100-op eager chain against
   torch, pinned host<->device copies against CuPy's bandwidth.
7. nccl: ``init_process_group("nccl")`` at world size 1 (a HashStore): all_reduce's results
   for each op and dtype, and its time against a raw ``NcclCommunicator`` on the same buffer.

``--device cupyconf`` is the CuPy conformance device of the test suite (tests/conformance): the
real CUDA backend over a NumPy-backed stand-in for CuPy 14.2. It is a conformance device, not a
GPU: the dry run proves the script's logic end to end, and its timings mean nothing (the table
says so). Results go to ``OUT/gpu_check.json`` and ``OUT/gpu_check.md`` (``--out``); the Markdown
is printed too. The exit status is 1 when a section failed or raised, else 0.
"""
import argparse
import contextlib
import datetime
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
TESTS = os.path.join(REPO, "tests")
# tests/ holds the op table (opinfo) and the conformance device (conformance).
sys.path[:0] = [REPO, TESTS]

SKIPPED = "skipped: time budget"
# A section's share of the time left when it starts (later sections inherit unused time).
# The environment is not weighted: it gets up to ENVIRONMENT_S. The parity tests' pytest runs
# from the start, beside the sections before it, so its own share is what it may still need.
SECTION_WEIGHTS = {"op_table": 30, "nn_optim_parity": 20, "training_parity": 14, "memory": 2,
                   "timings": 30, "nccl": 3}
# --quick (the dry run's mode) times small sizes: the parity sections get the time instead.
SECTION_WEIGHTS_QUICK = {"op_table": 45, "nn_optim_parity": 20, "training_parity": 20,
                         "memory": 2, "timings": 13, "nccl": 2}
ENVIRONMENT_S = 15.0
# Seconds kept back at the end for writing the report.
RESERVE_S = 3.0
# A section given less than this is not started.
MIN_SECTION_S = 1.5
MAX_FAILURES_LISTED = 20


class SectionTimeout(Exception):
    """Raised by the alarm when a section overruns its share of the budget."""


def _alarm(signum, frame):
    raise SectionTimeout()


def _short(exc, limit=300):
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= limit else text[:limit] + "..."


# ---------------------------------------------------------------------------------------------
# Devices
# ---------------------------------------------------------------------------------------------

def register_device(device):
    """Makes ``device``'s type usable by Ember: the conformance device is the test suite's and is
    registered here, as tests/conftest.py does; "cuda" is Ember's own."""
    from ember.backends import is_known_device_type, register_backend
    if device.split(":")[0] == "cupyconf" and not is_known_device_type("cupyconf"):
        from conformance.backend import CupyConformanceBackend
        register_backend("cupyconf", CupyConformanceBackend)


def is_real_gpu(device):
    return device.split(":")[0] == "cuda"


def ember_sync(device):
    """Waits for ``device``'s queued work (inside timed regions: no allocation, one lookup)."""
    import ember
    from ember.backends import get_backend
    get_backend(ember.device(device)).synchronize()


def torch_sync(oracle_device):
    import torch
    if oracle_device.startswith("cuda"):
        torch.cuda.synchronize()


# ---------------------------------------------------------------------------------------------
# 1. environment
# ---------------------------------------------------------------------------------------------

def section_environment(args, result, deadline):
    import numpy as np
    import torch
    import ember
    env = result
    env["python"] = platform.python_version()
    env["platform"] = platform.platform()
    env["numpy"] = np.__version__
    env["ember"] = getattr(ember, "__version__", "unknown")
    env["torch"] = torch.__version__
    env["torch_cuda"] = torch.version.cuda
    env["torch_cuda_available"] = torch.cuda.is_available()
    if torch.cuda.is_available():
        env["torch_device_name"] = torch.cuda.get_device_name(0)
    try:
        env["git_commit"] = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, text=True,
                                           capture_output=True, timeout=5).stdout.strip() or None
    except Exception:  # noqa: BLE001 - the copy on a lent machine may have no .git
        env["git_commit"] = None
    try:
        import cupy
        env["cupy"] = cupy.__version__
        try:
            env["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
            env["cuda_driver"] = cupy.cuda.runtime.driverGetVersion()
        except Exception as exc:  # noqa: BLE001 - no driver: say so rather than fail
            env["cuda_runtime"] = env["cuda_driver"] = f"unavailable ({_short(exc, 120)})"
    except ImportError:
        env["cupy"] = "not installed"
    env["device"] = args.device
    env["oracle_device"] = args.oracle_device
    ember_sync(args.device)  # the backend builds, or this section fails with its reason
    if is_real_gpu(args.device):
        env["device_name"] = ember.cuda.get_device_name(args.device)
        env["ember_cuda_device_count"] = ember.cuda.device_count()
    else:
        env["device_name"] = (f"{args.device}: the CuPy conformance device (NumPy-backed stand-in "
                              "for CuPy 14.2), not a GPU")
    if args.oracle_device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(f"--oracle-device {args.oracle_device}: torch sees no CUDA device")
    env["status"] = "passed"


# ---------------------------------------------------------------------------------------------
# 2. op table: device vs Ember CPU
# ---------------------------------------------------------------------------------------------

def _flatten(out):
    from opinfo import core
    return core.flatten_outputs(out)


def _compare(dev_out, cpu_out, tol, device, values, what):
    import numpy as np
    import ember
    from opinfo import core
    d_list, c_list = _flatten(dev_out), _flatten(cpu_out)
    if len(d_list) != len(c_list):
        raise AssertionError(f"{what}: {len(d_list)} outputs on {device}, {len(c_list)} on cpu")
    for i, (d, c) in enumerate(zip(d_list, c_list)):
        if isinstance(c, ember.Tensor):
            if not isinstance(d, ember.Tensor):
                raise AssertionError(f"{what}[{i}]: {type(d).__name__} on {device}, "
                                     "a Tensor on cpu")
            if tuple(d.shape) != tuple(c.shape):
                raise AssertionError(f"{what}[{i}] shape {tuple(d.shape)} vs cpu {tuple(c.shape)}")
            if d.dtype is not c.dtype:
                raise AssertionError(f"{what}[{i}] dtype {d.dtype} vs cpu {c.dtype}")
            if d.device.type != device.split(":")[0]:
                raise AssertionError(f"{what}[{i}] is on {d.device}, expected {device}")
            if values:
                rtol, atol = tol or core.TOL.get(str(c.dtype).split(".")[-1], (0, 0))
                np.testing.assert_allclose(core.ember_to_numpy(d), core.ember_to_numpy(c),
                                           rtol=rtol, atol=atol, equal_nan=True,
                                           err_msg=f"{what}[{i}] ({device} vs cpu)")
        elif values and not (d == c or (isinstance(c, float) and np.isclose(d, c))):
            raise AssertionError(f"{what}[{i}]: {d!r} on {device} vs {c!r} on cpu")


def _call_both(op, sample, e_cpu, e_dev, device):
    """The row's call on both devices; None where the CPU refuses and the device refuses alike
    (the refusal is the check), else (cpu_out, dev_out)."""
    import ember
    from opinfo import core

    def call(xs):
        ember.manual_seed(0)  # random rows draw alike on both devices
        return op.fn(ember, *xs, *sample.args, **sample.kwargs)
    cpu_out = []
    if core._refused_alike(lambda: cpu_out.append(call(e_cpu)), lambda: call(e_dev),
                           names=("cpu", device)):
        return None
    return cpu_out[0], call(e_dev)


def _forward_case(op, sample, dtype, device):
    from opinfo import core
    _, e_cpu = core.build_inputs(op, sample, dtype, "cpu", False)
    _, e_dev = core.build_inputs(op, sample, dtype, device, False)
    outs = _call_both(op, sample, e_cpu, e_dev, device)
    if outs is not None:
        _compare(outs[1], outs[0], op.tol.get(dtype), device, op.values, "output")


def _backward_case(op, sample, dtype, device):
    import numpy as np
    import ember
    from opinfo import core
    _, e_cpu = core.build_inputs(op, sample, dtype, "cpu", True)
    _, e_dev = core.build_inputs(op, sample, dtype, device, True)
    outs = _call_both(op, sample, e_cpu, e_dev, device)
    if outs is None:
        return
    c_outs = [o for o in _flatten(outs[0]) if isinstance(o, ember.Tensor) and o.requires_grad]
    d_outs = [o for o in _flatten(outs[1]) if isinstance(o, ember.Tensor) and o.requires_grad]
    if len(c_outs) != len(d_outs):
        raise AssertionError(f"{len(d_outs)} outputs require grad on {device}, "
                             f"{len(c_outs)} on cpu")
    if not c_outs:
        return
    rng = np.random.default_rng(1)
    c_cot, d_cot = [], []
    for o in c_outs:
        c = rng.uniform(-1, 1, size=tuple(o.shape))
        if o.dtype.is_complex:
            c = c + 1j * rng.uniform(-1, 1, size=tuple(o.shape))
        c_cot.append(ember.tensor(c).to(o.dtype))
        d_cot.append(ember.tensor(c, device=device).to(o.dtype))
    c_leaves = [e for e in e_cpu if e.requires_grad]
    d_leaves = [e for e in e_dev if e.requires_grad]
    c_grads = []
    if core._refused_alike(  # the CPU's backward refuses: so must the device's
            lambda: c_grads.extend(ember.autograd.grad(c_outs, c_leaves, c_cot, allow_unused=True)),
            lambda: ember.autograd.grad(d_outs, d_leaves, d_cot, allow_unused=True),
            names=("cpu backward", f"{device} backward")):
        return
    d_grads = ember.autograd.grad(d_outs, d_leaves, d_cot, allow_unused=True)
    tol = op.grad_tol or core.TOL[dtype]
    if dtype in ("float16", "bfloat16"):
        tol = (tol[0] * 4, tol[1] * 4)
    for i, (cg, dg) in enumerate(zip(c_grads, d_grads)):
        if (cg is None) != (dg is None):
            raise AssertionError(f"grad[{i}] is {'None' if dg is None else 'set'} on {device}, "
                                 f"{'None' if cg is None else 'set'} on cpu")
        if cg is not None:
            _compare(dg, cg, tol, device, True, f"grad[{i}]")


def _op_cases(args):
    """(family, op, sample index, sample, dtype, kind) in rounds: first every row's first sample
    in its first listed dtype (so a budget cut still covers every family), then the rest."""
    from opinfo import registry
    import importlib
    first, rest = [], []
    for family in registry._FAMILIES:
        for op in importlib.import_module(f"opinfo.ops_{family}").OPS:
            samples = op.samples[:1] if args.quick else op.samples
            dtypes = list(op.dtypes)[:1] if args.quick else list(op.dtypes)
            for si, sample in enumerate(samples):
                for di, dtype in enumerate(dtypes):
                    kinds = ["forward"]
                    if op.grad and dtype in ("float32", "float64", "complex64", "complex128"):
                        kinds.append("backward")
                    for kind in kinds:
                        case = (family, op, si, sample, dtype, kind)
                        (first if si == 0 and di == 0 else rest).append(case)
    return first + rest


def section_op_table(args, result, deadline):
    device = args.device
    cases = _op_cases(args)
    families = {}
    failures = []
    result.update(total_cases=len(cases), run=0, passed=0, failed=0, skipped_rows=0,
                  by_family=families, first_failures=failures, compared_against="ember cpu")
    for family, op, si, sample, dtype, kind in cases:
        fam = families.setdefault(family, {"passed": 0, "failed": 0, "skipped": 0})
        if device.split(":")[0] in op.skip_devices:
            fam["skipped"] += 1
            result["skipped_rows"] += 1
            continue
        if time.monotonic() > deadline:
            result["status"] = f"{SKIPPED} (ran {result['run']} of {len(cases)} cases)"
            break
        result["run"] += 1
        try:
            (_forward_case if kind == "forward" else _backward_case)(op, sample, dtype, device)
        except SectionTimeout:
            raise
        except Exception as exc:  # noqa: BLE001 - a failing case is a result, not a crash
            fam["failed"] += 1
            result["failed"] += 1
            if len(failures) < MAX_FAILURES_LISTED:
                failures.append({"case": f"{op.name}-{si}-{dtype}-{kind}", "error": _short(exc)})
        else:
            fam["passed"] += 1
            result["passed"] += 1
    if "status" not in result:
        result["status"] = "passed" if result["failed"] == 0 else "failed"


# ---------------------------------------------------------------------------------------------
# 3. nn/optim parity tests with the device fixture switched
# ---------------------------------------------------------------------------------------------

PARITY_FILES = ["tests/nn", "tests/optim", "tests/amp"]  # amp: its cuda-marked tests
# --quick: the transformer layers' device test and the optimizer tests of SGD and AdamW (those
# the training section uses), to fit a one-minute dry run.
PARITY_FILES_QUICK = ["tests/nn/test_transformer.py", "tests/optim/test_optimizers.py"]
PARITY_K_QUICK = "(SGD or AdamW or transformer)"
_SUMMARY_LINE = re.compile(r"^=+ .*\b(passed|failed|errors?|no tests ran|deselected)\b.* in "
                           r"[\d.]+s\b.*=+$", re.MULTILINE)
_RESULT_LINE = re.compile(r"^(\S+::\S+?) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b")


def _param_tokens(nodeid):
    """The parametrisation ids of a test (``test_x[cupyconf-Adam]`` -> {"cupyconf", "Adam"})."""
    if "[" not in nodeid:
        return set()
    return set(nodeid[nodeid.index("[") + 1:nodeid.rindex("]")].split("-"))


def parse_pytest_verbose(output, device):
    """Outcome counts of ``pytest -v`` output, for the tests whose parametrisation names the
    device (a test merely named after it does not count as run on it)."""
    counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0, "xfail": 0, "xpass": 0}
    other, failed = 0, []
    for line in output.splitlines():
        m = _RESULT_LINE.match(line.strip())
        if not m:
            continue
        nodeid, outcome = m.group(1), m.group(2).lower()
        if device not in _param_tokens(nodeid):
            other += 1
            continue
        counts[outcome] += 1
        if outcome in ("failed", "error"):
            failed.append(nodeid)
    reasons = [line[len("FAILED "):] for line in output.splitlines()
               if line.startswith(("FAILED ", "ERROR "))]
    return counts, other, failed, reasons


class ParityRun:
    """The parity tests' pytest, started before the first section so that it runs beside the op
    table and the training runs (its own process, its own CUDA context) and is collected by its
    section; it is killed at that section's deadline or when the check ends."""

    def __init__(self, args):
        self.device_type = args.device.split(":")[0]
        self.files = PARITY_FILES_QUICK if args.quick else PARITY_FILES
        keyword = f"{self.device_type} and {PARITY_K_QUICK}" if args.quick else self.device_type
        cmd = [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-rfE",
               "--tb=line", "-k", keyword, *self.files]
        self.command = f"EMBER_TEST_DEVICE={self.device_type} " + " ".join(
            ["python", *cmd[1:-len(self.files)], *self.files]).replace(f"-k {keyword}",
                                                                   f"-k '{keyword}'")
        env = dict(os.environ, EMBER_TEST_DEVICE=self.device_type, PYTHONUNBUFFERED="1")
        self.log = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=self.log,
                                     stderr=subprocess.STDOUT, text=True)
        self.started = time.monotonic()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def output(self):
        self.log.seek(0)
        return self.log.read()


def section_parity(args, result, deadline):
    run = args.parity_run
    device_type = run.device_type
    result.update(command=run.command, files=run.files)
    # pytest can take many seconds to exit after its summary (interpreter teardown with torch
    # loaded): the summary line is the end of the run, and the process is stopped after it.
    summary_seen = None
    try:
        while run.proc.poll() is None and time.monotonic() < deadline:
            if summary_seen is None and _SUMMARY_LINE.search(run.output()):
                summary_seen = time.monotonic()
            if summary_seen is not None and time.monotonic() > summary_seen + 2.0:
                break
            time.sleep(0.25)
        rc = run.proc.poll()
    finally:
        run.stop()
    result["pytest_s"] = round(time.monotonic() - run.started, 1)
    output = run.output()
    summary = _SUMMARY_LINE.search(output)
    result["summary"] = summary.group(0).strip("= ") if summary else None
    timed_out = rc is None and summary is None
    counts, other, failed, reasons = parse_pytest_verbose(output, device_type)
    result.update(counts=counts, returncode=rc, tests_not_on_device=other,
                  failed_tests=failed[:MAX_FAILURES_LISTED],
                  failure_reasons=reasons[:MAX_FAILURES_LISTED])
    ran = sum(counts.values())
    if timed_out:
        result["status"] = f"{SKIPPED} (pytest stopped after {ran} tests on {device_type})"
        result["output_tail"] = output[-2000:]
    elif ran == 0:
        result["status"] = "failed"
        result["error"] = (f"no test ran on '{device_type}': tests/conftest.py's "
                           f"EMBER_TEST_DEVICE does not select it")
        result["output_tail"] = output[-2000:]
    elif counts["failed"] or counts["error"] or rc not in (0, None):
        result["status"] = "failed"
        result["output_tail"] = output[-2000:]
    else:
        result["status"] = "passed"


# ---------------------------------------------------------------------------------------------
# 4. training parity: Ember on --device vs torch on --oracle-device, same weights
# ---------------------------------------------------------------------------------------------

def _mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 64), nn.Tanh(),
                         nn.Linear(64, 5))


def _cnn(lib):
    nn = lib.nn
    # No bias before the batch norm: its gradient is zero up to rounding, so it would compare
    # rounding noise.
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(8, 16, 3), nn.ReLU(), nn.Flatten(),
                         nn.Linear(16 * 6 * 6, 10))


def _encoder(lib):
    nn = lib.nn
    # Dropout 0: the two frameworks' dropout masks differ, and the losses must not.
    layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
    return nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)


def _batches(kind, steps, rng):
    import numpy as np
    for _ in range(steps):
        if kind == "mlp":
            yield (rng.standard_normal((32, 20)).astype(np.float32),
                   rng.integers(0, 5, size=32).astype(np.int64))
        elif kind == "cnn":
            yield (rng.standard_normal((16, 3, 16, 16)).astype(np.float32),
                   rng.integers(0, 10, size=16).astype(np.int64))
        else:
            yield (rng.standard_normal((4, 12, 32)).astype(np.float32),
                   rng.standard_normal((4, 12, 32)).astype(np.float32))


TRAINING_MODELS = {
    # name: (builder, loss, optimizer class name, optimizer kwargs)
    "mlp": (_mlp, "cross_entropy", "SGD", {"lr": 0.1, "momentum": 0.9}),
    "cnn": (_cnn, "cross_entropy", "Adam", {"lr": 1e-3}),
    "transformer_encoder": (_encoder, "mse_loss", "AdamW", {"lr": 1e-3, "weight_decay": 0.01}),
}
LOSS_RTOL, LOSS_ATOL = 2e-3, 1e-5
GRAD_TOL = 1e-3  # first-step gradients: max |diff| / max |grad|, per parameter


def _train_pair(name, args, steps):
    import numpy as np
    import torch
    import ember
    build, loss_name, opt_name, opt_kwargs = TRAINING_MODELS[name]
    torch.manual_seed(0)
    t_model = build(torch)
    ember.manual_seed(0)
    e_model = build(ember)
    # The same initial weights: torch's state_dict, through NumPy.
    e_model.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy())
                             for k, v in t_model.state_dict().items()})
    t_model.to(args.oracle_device).train()
    e_model.to(args.device).train()
    t_opt = getattr(torch.optim, opt_name)(t_model.parameters(), **opt_kwargs)
    e_opt = getattr(ember.optim, opt_name)(e_model.parameters(), **opt_kwargs)
    t_loss_fn = getattr(torch.nn.functional, loss_name)
    e_loss_fn = getattr(ember.nn.functional, loss_name)
    t_losses, e_losses, grad_err = [], [], {}
    for step, (x, y) in enumerate(_batches(name, steps, np.random.default_rng(0))):
        tx = torch.from_numpy(x).to(args.oracle_device)
        ty = torch.from_numpy(y).to(args.oracle_device)
        ex, ey = ember.from_numpy(x).to(args.device), ember.from_numpy(y).to(args.device)
        t_opt.zero_grad()
        e_opt.zero_grad()
        t_loss = t_loss_fn(t_model(tx), ty)
        e_loss = e_loss_fn(e_model(ex), ey)
        t_loss.backward()
        e_loss.backward()
        if step == 0:
            e_params = dict(e_model.named_parameters())
            for k, tp in t_model.named_parameters():
                ep = e_params[k]
                tg = tp.grad.detach().cpu().numpy().astype(np.float64)
                eg = ep.grad.detach().cpu().numpy().astype(np.float64)
                grad_err[k] = float(np.abs(tg - eg).max() / max(np.abs(tg).max(), 1e-12))
        t_opt.step()
        e_opt.step()
        t_losses.append(float(t_loss.item()))
        e_losses.append(float(e_loss.item()))
    t_arr, e_arr = np.array(t_losses), np.array(e_losses)
    rel = np.abs(t_arr - e_arr) / np.maximum(np.abs(t_arr), 1e-12)
    losses_ok = bool(np.all(np.abs(t_arr - e_arr) <= LOSS_ATOL + LOSS_RTOL * np.abs(t_arr)))
    worst_grad = max(grad_err.values())
    return {"steps": steps, "optimizer": opt_name, "torch_losses": t_losses,
            "ember_losses": e_losses, "max_loss_rel_diff": float(rel.max()),
            "max_first_step_grad_rel_diff": worst_grad,
            "worst_grad_param": max(grad_err, key=grad_err.get),
            "status": "passed" if losses_ok and worst_grad <= GRAD_TOL else "failed"}


def section_training(args, result, deadline):
    import torch
    # The oracle computes in true float32, as CuPy does (torch lets cuDNN use TF32 by default).
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    steps = 3 if args.quick else 10
    result.update(tolerance={"loss_rtol": LOSS_RTOL, "loss_atol": LOSS_ATOL,
                             "first_step_grad_rel": GRAD_TOL}, models={})
    for name in TRAINING_MODELS:
        if time.monotonic() > deadline:
            result["models"][name] = {"status": SKIPPED}
            continue
        try:
            result["models"][name] = _train_pair(name, args, steps)
        except SectionTimeout:
            result["models"][name] = {"status": SKIPPED}
            raise
        except Exception as exc:  # noqa: BLE001 - one model failing still runs the others
            result["models"][name] = {"status": "error", "error": _short(exc, 600)}
    statuses = [m["status"] for m in result["models"].values()]
    if any(s in ("failed", "error") for s in statuses):
        result["status"] = "failed"
    elif any(s.startswith(SKIPPED) for s in statuses):
        result["status"] = SKIPPED
    else:
        result["status"] = "passed"


# ---------------------------------------------------------------------------------------------
# 5. memory statistics against CuPy's pool
# ---------------------------------------------------------------------------------------------

MEMORY_API = ("memory_allocated", "max_memory_allocated", "memory_reserved",
              "reset_peak_memory_stats", "empty_cache")


def section_memory(args, result, deadline):
    import ember
    missing = [n for n in MEMORY_API if not hasattr(ember.cuda, n)]
    if missing:
        result["status"] = f"not available: ember.cuda.{', ember.cuda.'.join(missing)} missing"
        return
    if not is_real_gpu(args.device):
        result["status"] = ("not available: the CuPy conformance device has no memory pool "
                            "(ember.cuda's statistics describe CUDA devices)")
        return
    import gc
    import cupy
    pool = cupy.get_default_memory_pool()
    dev = args.device
    # Earlier sections' cyclic garbage (autograd graphs) freed mid-measurement would move the
    # baseline: collect it now, and let no collection run until the figures are read.
    gc.collect()
    gc.disable()
    try:
        _measure_memory(ember, pool, dev, result)
    finally:
        gc.enable()


def _measure_memory(ember, pool, dev, result):
    ember_sync(dev)
    ember.cuda.empty_cache()
    ember.cuda.reset_peak_memory_stats(dev)
    base_e, base_p = ember.cuda.memory_allocated(dev), pool.used_bytes()
    sizes = [1 << 20, 16 << 20, 256 << 20]  # bytes, as float32 tensors
    held, rows, ok = [], [], True
    for nbytes in sizes:
        held.append(ember.empty(nbytes // 4, dtype=ember.float32, device=dev))
        ember_sync(dev)
        de = ember.cuda.memory_allocated(dev) - base_e
        dp = pool.used_bytes() - base_p
        row = {"requested_total": sum(sizes[:len(held)]), "ember_allocated_delta": de,
               "pool_used_delta": dp}
        row["match"] = de == dp and de >= row["requested_total"]
        ok &= row["match"]
        rows.append(row)
    peak = ember.cuda.max_memory_allocated(dev)
    reserved, pool_total = ember.cuda.memory_reserved(dev), pool.total_bytes()
    del held
    ember_sync(dev)
    after_e, after_p = ember.cuda.memory_allocated(dev), pool.used_bytes()
    result.update(allocations=rows, max_memory_allocated=peak,
                  peak_covers_allocations=peak - base_e >= sum(sizes),
                  memory_reserved=reserved, pool_total_bytes=pool_total,
                  reserved_matches_pool=reserved == pool_total,
                  freed_back_to_base=after_e == base_e and after_p == base_p)
    ok &= result["peak_covers_allocations"] and result["reserved_matches_pool"]
    ok &= result["freed_back_to_base"]
    result["status"] = "passed" if ok else "failed"


# ---------------------------------------------------------------------------------------------
# 6. timings
# ---------------------------------------------------------------------------------------------

def _median_time(fn, sync, warm, repeats, deadline):
    """Median seconds of ``fn`` over ``repeats`` synchronised calls after ``warm`` calls; fewer
    repeats where the deadline comes first (at least one)."""
    for _ in range(warm):
        fn()
    sync()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
        if time.monotonic() > deadline:
            break
    return statistics.median(times), len(times)


def _transformer_sizes(quick):
    # (d_model, heads, feed-forward, layers, seq, batch): the goal, or a small stand-in.
    return (64, 4, 128, 2, 32, 4) if quick else (512, 8, 2048, 6, 256, 32)


def _transformer_step(lib, device, sizes, autocast_dtype=None):
    import numpy as np
    d, heads, ff, layers, seq, batch = sizes
    lib.manual_seed(0)
    layer = lib.nn.TransformerEncoderLayer(d, heads, ff, dropout=0.1, batch_first=True)
    model = lib.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False).to(device)
    model.train()
    rng = np.random.default_rng(0)
    src = lib.from_numpy(rng.standard_normal((batch, seq, d), dtype=np.float32)).to(device)
    target = lib.from_numpy(rng.standard_normal((batch, seq, d), dtype=np.float32)).to(device)
    opt = lib.optim.SGD(model.parameters(), lr=0.01)
    device_type = device.split(":")[0]

    def step():
        opt.zero_grad()
        ctx = (lib.autocast(device_type=device_type, dtype=autocast_dtype)
               if autocast_dtype is not None else contextlib.nullcontext())
        with ctx:
            loss = lib.nn.functional.mse_loss(model(src), target)
        loss.backward()
        opt.step()
    return step


# the float32 row's Ember samples/s, which the float16 row's own-speedup goal divides by
_EMBER_FLOAT32 = {}


def _row_transformer(args, deadline, autocast_dtype=None):
    """The Transformer training step's samples/s, Ember against torch, in float32 or under
    autocast to ``autocast_dtype`` ("bfloat16", "float16") on both sides."""
    import torch
    import ember
    sizes = _transformer_sizes(args.quick)
    row = {"goal": "ember samples/s >= 0.7x torch", "sizes": dict(zip(
        ("d_model", "heads", "ff", "layers", "seq", "batch"), sizes))}
    if autocast_dtype == "float16":
        row["goal"] += " and >= 1.5x Ember's own float32"
    if autocast_dtype and not hasattr(ember, "autocast"):
        row["status"] = "not available: ember.autocast missing"
        return row
    if autocast_dtype:
        try:  # autocast names the device types it supports: the conformance device is not one
            ember.autocast(device_type=args.device.split(":")[0],
                           dtype=getattr(ember, autocast_dtype))
        except (RuntimeError, ValueError) as exc:
            row["status"] = f"not available: ember.autocast refuses {args.device}: {exc}"
            return row
    warm, repeats = (1, 3) if args.quick else (2, 5)
    e_dtype = getattr(ember, autocast_dtype) if autocast_dtype else None
    t_dtype = getattr(torch, autocast_dtype) if autocast_dtype else None
    e_step = _transformer_step(ember, args.device, sizes, e_dtype)
    t_step = _transformer_step(torch, args.oracle_device, sizes, t_dtype)
    mid = time.monotonic() + (deadline - time.monotonic()) / 2
    e_s, e_n = _median_time(e_step, lambda: ember_sync(args.device), warm, repeats, mid)
    t_s, t_n = _median_time(t_step, lambda: torch_sync(args.oracle_device), warm, repeats, deadline)
    batch = sizes[-1]
    row.update(ember_samples_per_s=batch / e_s, torch_samples_per_s=batch / t_s,
               ratio=t_s / e_s, repeats=[e_n, t_n])
    row["goal_met"] = row["ratio"] >= 0.7
    if autocast_dtype is None:
        _EMBER_FLOAT32["samples_per_s"] = row["ember_samples_per_s"]
    elif autocast_dtype == "float16":
        base = _EMBER_FLOAT32.get("samples_per_s")
        row["own_speedup"] = None if base is None else row["ember_samples_per_s"] / base
        row["goal_met"] = row["goal_met"] and base is not None and row["own_speedup"] >= 1.5
    row["status"] = "measured"
    return row


def _row_matmul(args, deadline):
    import numpy as np
    import ember
    n = 1024 if args.quick else 4096
    rng = np.random.default_rng(0)
    a = ember.from_numpy(rng.standard_normal((n, n), dtype=np.float32)).to(args.device)
    b = ember.from_numpy(rng.standard_normal((n, n), dtype=np.float32)).to(args.device)
    xp = a._backend.xp
    raw_a, raw_b = a._data, b._data
    sync = lambda: ember_sync(args.device)  # noqa: E731
    warm, repeats = (1, 3) if args.quick else (3, 10)
    mid = time.monotonic() + (deadline - time.monotonic()) / 2
    e_s, e_n = _median_time(lambda: a @ b, sync, warm, repeats, mid)
    c_s, c_n = _median_time(lambda: xp.matmul(raw_a, raw_b), sync, warm, repeats, deadline)
    row = {"goal": "ember time <= 1.05x raw CuPy", "n": n, "ember_ms": e_s * 1e3,
           "cupy_ms": c_s * 1e3, "ratio": e_s / c_s, "ember_tflops": 2 * n ** 3 / e_s / 1e12,
           "repeats": [e_n, c_n], "status": "measured"}
    row["goal_met"] = row["ratio"] <= 1.05
    return row


_CHAIN = (lambda x: x.add(1.0), lambda x: x.mul(0.5), lambda x: x.sin(), lambda x: x.abs(),
          lambda x: x.neg())


def _row_eager_chain(args, deadline):
    import torch
    import ember
    numel, ops = 1024, 100

    def chain(x):
        def run():
            y = x
            for i in range(ops):
                y = _CHAIN[i % len(_CHAIN)](y)
            return y
        return run
    warm, repeats = (2, 5) if args.quick else (5, 20)
    e_x = ember.ones(numel, device=args.device)
    t_x = torch.ones(numel, device=args.oracle_device)
    mid = time.monotonic() + (deadline - time.monotonic()) / 2
    e_s, e_n = _median_time(chain(e_x), lambda: ember_sync(args.device), warm, repeats, mid)
    t_s, t_n = _median_time(chain(t_x), lambda: torch_sync(args.oracle_device), warm, repeats,
                            deadline)
    row = {"goal": "ember time per op <= 3x torch", "ops": ops, "numel": numel,
           "ember_us_per_op": e_s / ops * 1e6, "torch_us_per_op": t_s / ops * 1e6,
           "ratio": e_s / t_s, "repeats": [e_n, t_n], "status": "measured"}
    row["goal_met"] = row["ratio"] <= 3.0
    return row


def _row_pinned_copies(args, deadline):
    import numpy as np
    import ember
    nbytes = (4 << 20) if args.quick else (256 << 20)
    n = nbytes // 4
    backend = ember.empty(0, device=args.device)._backend
    xp, cupyx = backend.xp, backend._cupyx
    row = {"goal": "ember bandwidth >= 0.8x CuPy's (pinned host memory), each direction",
           "bytes": nbytes}
    host = ember.zeros(n, dtype=ember.float32)
    try:
        host = host.pin_memory()
        row["ember_host"] = "pinned"
    except RuntimeError as exc:
        row["ember_host"] = f"pageable: Tensor.pin_memory() raised {_short(exc, 200)}"
    dev = ember.zeros(n, dtype=ember.float32, device=args.device)
    if hasattr(cupyx, "empty_pinned"):
        ref_host = cupyx.empty_pinned((n,), dtype=np.float32)
        row["cupy_host"] = "pinned (cupyx.empty_pinned)"
    else:
        ref_host = np.zeros(n, dtype=np.float32)
        row["cupy_host"] = "pageable: this device's CuPy has no cupyx.empty_pinned"
    ref_dev = xp.zeros(n, dtype=np.float32)
    sync = lambda: ember_sync(args.device)  # noqa: E731
    warm, repeats = (1, 3) if args.quick else (2, 10)
    quarter = (deadline - time.monotonic()) / 4
    now = time.monotonic
    e_h2d, _ = _median_time(lambda: dev.copy_(host), sync, warm, repeats, now() + quarter)
    e_d2h, _ = _median_time(lambda: host.copy_(dev), sync, warm, repeats, now() + quarter)
    c_h2d, _ = _median_time(lambda: ref_dev.set(ref_host), sync, warm, repeats, now() + quarter)
    c_d2h, _ = _median_time(lambda: ref_dev.get(out=ref_host), sync, warm, repeats, deadline)
    gbs = lambda s: nbytes / s / 1e9  # noqa: E731
    row.update(ember_h2d_gbs=gbs(e_h2d), ember_d2h_gbs=gbs(e_d2h), cupy_h2d_gbs=gbs(c_h2d),
               cupy_d2h_gbs=gbs(c_d2h), ratio_h2d=c_h2d / e_h2d, ratio_d2h=c_d2h / e_d2h,
               status="measured")
    row["ratio"] = min(row["ratio_h2d"], row["ratio_d2h"])
    row["goal_met"] = row["ratio"] >= 0.8
    return row


TIMING_ROWS = [
    ("transformer_train_float32", lambda a, d: _row_transformer(a, d), 4),
    ("transformer_train_bf16_autocast", lambda a, d: _row_transformer(a, d, "bfloat16"), 4),
    ("transformer_train_fp16_autocast", lambda a, d: _row_transformer(a, d, "float16"), 4),
    ("matmul_4096", _row_matmul, 2),
    ("eager_chain_100_ops", _row_eager_chain, 1),
    ("pinned_copies", _row_pinned_copies, 2),
]


def section_timings(args, result, deadline):
    meaningful = is_real_gpu(args.device) and args.oracle_device.startswith("cuda")
    result["meaningful"] = meaningful
    if not meaningful:
        result["note"] = (f"timings on {args.device} against torch on {args.oracle_device} are "
                          "meaningless: " + ("the CuPy conformance device is NumPy-backed, not "
                                             "a GPU" if not is_real_gpu(args.device) else
                                             "the oracle is not torch CUDA"))
    if args.quick:
        result["note_sizes"] = "--quick: reduced sizes (see each row's sizes)"
    rows = result["rows"] = {}
    total_weight = sum(w for _, _, w in TIMING_ROWS)
    for name, fn, weight in TIMING_ROWS:
        left = deadline - time.monotonic()
        if left < MIN_SECTION_S:
            rows[name] = {"status": SKIPPED}
            total_weight -= weight
            continue
        row_deadline = time.monotonic() + left * weight / total_weight
        total_weight -= weight
        try:
            rows[name] = fn(args, row_deadline)
        except SectionTimeout:
            rows[name] = {"status": SKIPPED}
            raise
        except Exception as exc:  # noqa: BLE001 - a row that breaks still lets the others run
            rows[name] = {"status": "error", "error": _short(exc, 600)}
    if not meaningful:  # a goal is judged on a GPU against torch CUDA only
        for row in rows.values():
            if "goal_met" in row:
                row["goal_met"] = None
    statuses = [r["status"] for r in rows.values()]
    if any(s == "error" for s in statuses):
        result["status"] = "error"
    elif any(s.startswith(SKIPPED) for s in statuses):
        result["status"] = SKIPPED
    else:
        result["status"] = "measured"


# ---------------------------------------------------------------------------------------------
# 7. NCCL: the distributed backend at world size 1
# ---------------------------------------------------------------------------------------------

def section_nccl(args, result, deadline):
    """``init_process_group("nccl")`` over a HashStore with world size 1: all_reduce results
    (each op and dtype, sync and async_op) equal their input, then Ember's all_reduce against a
    raw ``NcclCommunicator.allReduce`` on the same buffer. At world size 1 NCCL moves no data
    between devices, so the bus bandwidth (algorithm bandwidth x 2(n-1)/n) is 0 by definition:
    the row gives the algorithm bandwidth and the ratio, which measures Ember's overhead."""
    if not is_real_gpu(args.device):
        result["status"] = (f"not available: NCCL needs a CUDA device ({args.device} is the "
                            "CuPy conformance device)")
        return
    from ember.distributed import process_group_nccl
    try:
        cupy, nccl = process_group_nccl._import_nccl()
    except RuntimeError as exc:
        result["status"] = f"not available: {exc}"
        return
    import datetime
    import ember
    import ember.distributed as dist
    from ember.distributed.store import HashStore
    result["nccl_version"] = nccl.get_version()
    dev = args.device
    dist.init_process_group("nccl", store=HashStore(), rank=0, world_size=1,
                            timeout=datetime.timedelta(seconds=60))
    try:
        checks = result["checks"] = {}
        ops = {"SUM": dist.ReduceOp.SUM, "AVG": dist.ReduceOp.AVG, "MIN": dist.ReduceOp.MIN,
               "MAX": dist.ReduceOp.MAX, "PRODUCT": dist.ReduceOp.PRODUCT}
        for dtype in (ember.float32, ember.bfloat16, ember.float16, ember.int64):
            for name, op in ops.items():
                t = ember.arange(12, device=dev).reshape(3, 4).to(dtype)
                expected = t.cpu()
                work = dist.all_reduce(t, op=op, async_op=name == "SUM")
                if work is not None:
                    work.wait()
                checks[f"{name} {str(dtype).split('.')[-1]}"] = bool(
                    ember.equal(t.cpu(), expected) and t.device.type == "cuda")
        result["correct"] = all(checks.values())
        row = result["bandwidth"] = {"goal": "ember all_reduce time <= 1.1x raw NCCL (same "
                                     "buffer; world size 1: bus bandwidth is 0 by definition)"}
        nbytes = (4 << 20) if args.quick else (256 << 20)
        x = ember.ones(nbytes // 4, dtype=ember.float32, device=dev)
        raw = x._data
        with cupy.cuda.Device(x.device.index or 0):
            comm = nccl.NcclCommunicator(1, nccl.get_unique_id(), 0)

        def raw_all_reduce():
            comm.allReduce(raw.data.ptr, raw.data.ptr, raw.size, nccl.NCCL_FLOAT32,
                           nccl.NCCL_SUM, cupy.cuda.get_current_stream().ptr)
        sync = lambda: ember_sync(dev)  # noqa: E731
        warm, repeats = (2, 5) if args.quick else (3, 20)
        mid = time.monotonic() + (deadline - time.monotonic()) / 2
        e_s, e_n = _median_time(lambda: dist.all_reduce(x), sync, warm, repeats, mid)
        r_s, r_n = _median_time(raw_all_reduce, sync, warm, repeats, deadline)
        comm.destroy()
        row.update(bytes=nbytes, ember_us=e_s * 1e6, raw_nccl_us=r_s * 1e6,
                   ember_algbw_gbs=nbytes / e_s / 1e9, raw_algbw_gbs=nbytes / r_s / 1e9,
                   busbw_gbs=0.0, ratio=e_s / r_s, repeats=[e_n, r_n], status="measured")
        row["goal_met"] = row["ratio"] <= 1.1
        result["status"] = "passed" if result["correct"] else "failed"
    finally:
        dist.destroy_process_group()


# ---------------------------------------------------------------------------------------------
# CUDA extensions (issue 21)
# ---------------------------------------------------------------------------------------------

_CUDA_EXTENSION_KERNEL = r"""
extern "C" __global__ void axpy(const float* x, float* y, float a, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""
_CUDA_EXTENSION_HOST = r"""
int64_t device_type(torch::Tensor t) { return (int64_t)t.device().type(); }
torch::Tensor like(torch::Tensor t) { return torch::zeros_like(t); }
"""


def section_cuda_extension(args, result, deadline):
    """Issue 21's CUDA path, run only on a real GPU (NVRTC needs one): a kernel given to
    ``load_inline(cuda_sources=...)`` is compiled by NVRTC through CuPy and launched on Ember
    CUDA tensors in place; a C++ function sees a CUDA tensor as one and allocates on its device."""
    import numpy as np
    import ember
    from ember.utils.cpp_extension import load_inline
    dev = args.device
    n = 1 << 20
    x = ember.randn(n, device=dev)
    y = ember.randn(n, device=dev)
    expected = 2.0 * x + y
    t0 = time.monotonic()
    mod = load_inline("gpu_check_axpy", "", cuda_sources=_CUDA_EXTENSION_KERNEL,
                      functions=["axpy"])
    result["nvrtc_build_s"] = round(time.monotonic() - t0, 2)
    mod.axpy(((n + 255) // 256,), (256,), (x, y, np.float32(2.0), np.int64(n)))
    ember_sync(dev)
    result["kernel_max_abs_error"] = float((y - expected).abs().max())
    host = load_inline("gpu_check_host", _CUDA_EXTENSION_HOST, functions=["device_type", "like"])
    result["cpp_sees_device_type"] = host.device_type(x)
    z = host.like(x)
    result["cpp_allocates_on"] = str(z.device)
    ok = (result["kernel_max_abs_error"] < 1e-5 and result["cpp_sees_device_type"] == 1
          and z.device == x.device and float(z.abs().max()) == 0.0)
    result["status"] = "passed" if ok else "failed"


# ---------------------------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------------------------

SECTIONS = [("environment", section_environment), ("op_table", section_op_table),
            ("nn_optim_parity", section_parity), ("training_parity", section_training),
            ("memory", section_memory), ("timings", section_timings), ("nccl", section_nccl)]


def preload():
    """Imports every module the sections use, before any alarm is armed: an import that an
    alarm interrupts leaves torch half-registered and unusable for the rest of the run."""
    import numpy  # noqa: F401
    import torch  # noqa: F401
    import ember
    import ember.nn  # noqa: F401
    import ember.optim  # noqa: F401
    from opinfo import registry  # noqa: F401 - imports every op table
    import ember.distributed  # noqa: F401 - the nccl section's front end
    try:
        import cupy  # noqa: F401
        import cupy.cuda.nccl  # noqa: F401 - loads libnccl, where CuPy finds it
    except ImportError:
        pass
    ember.empty(0)


def run_sections(args, start):
    end = start + args.budget - RESERVE_S
    report = {"command": " ".join([os.path.basename(sys.executable), "benchmarks/gpu_check.py",
                                   *sys.argv[1:]]),
              "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "budget_s": args.budget, "quick": args.quick, "device": args.device,
              "oracle_device": args.oracle_device, "sections": {}}
    signal.signal(signal.SIGALRM, _alarm)
    weights = SECTION_WEIGHTS_QUICK if args.quick else SECTION_WEIGHTS
    sections = SECTIONS
    if is_real_gpu(args.device):
        # NVRTC compiles for a real device only: the conformance device's dry run lacks it.
        sections = SECTIONS + [("cuda_extension", section_cuda_extension)]
        weights = dict(weights, cuda_extension=2)
    weights_left = sum(weights.values())
    (name, fn), rest = sections[0], sections[1:]
    _run_section(name, fn, None, args, report, end, weights_left)
    env_status = report["sections"][name]["status"]
    if env_status != "passed":
        # Without a working device or oracle every other section would only repeat the error.
        status = SKIPPED if env_status.startswith(SKIPPED) else "error"
        for name, _ in rest:
            report["sections"][name] = {"status": status, "error": "not run: the environment "
                                        f"section did not pass ({env_status})"}
    else:
        args.parity_run = ParityRun(args)
        try:
            for name, fn in rest:
                _run_section(name, fn, weights.get(name), args, report, end, weights_left)
                weights_left -= weights[name]
        finally:
            args.parity_run.stop()
    report["elapsed_s"] = round(time.monotonic() - start, 1)
    return report


def _run_section(name, fn, weight, args, report, end, weights_left):
    """Runs one section in its share (``weight`` of ``weights_left``) of the time left, or up to
    ENVIRONMENT_S without a weight, behind the alarm."""
    left = max(0.0, end - time.monotonic())
    allotted = min(ENVIRONMENT_S, left) if weight is None else left * weight / weights_left
    result = {}
    report["sections"][name] = result
    t0 = time.monotonic()
    if allotted < MIN_SECTION_S:
        result["status"] = SKIPPED
    else:
        deadline = t0 + allotted
        # The backstop for code that does not look at the deadline: the alarm interrupts
        # the section shortly after its share ends.
        signal.setitimer(signal.ITIMER_REAL, allotted + 2.0)
        try:
            fn(args, result, deadline)
        except SectionTimeout:
            result["status"] = SKIPPED + (f" ({result['status']})" if "status" in result
                                          else "")
        except Exception as exc:  # noqa: BLE001 - a broken section is reported, not fatal
            result["status"] = "error"
            result["error"] = _short(exc, 800)
            result["traceback"] = traceback.format_exc()[-3000:]
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    result["allotted_s"] = round(allotted, 1)
    result["elapsed_s"] = round(time.monotonic() - t0, 1)
    print(f"[gpu_check] {name}: {result.get('status')} ({result['elapsed_s']} s)",
          file=sys.stderr, flush=True)


def _fmt(value, digits=3):
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def render_markdown(report):
    s = report["sections"]
    lines = [f"# Ember GPU check: {report['device']} vs torch on {report['oracle_device']}", "",
             f"`{report['command']}` — started {report['started']}, {report['elapsed_s']} s of a "
             f"{report['budget_s']} s budget{' (--quick)' if report['quick'] else ''}.", ""]
    env = s.get("environment", {})
    lines += ["## Environment", ""]
    for key in ("device_name", "cupy", "cuda_runtime", "cuda_driver", "torch", "torch_cuda",
                "torch_device_name", "numpy", "python", "ember", "git_commit"):
        if key in env:
            lines.append(f"- {key}: {env[key]}")
    lines += ["", "## Sections", "", "| section | status | details | time (s) |",
              "| --- | --- | --- | --- |"]
    for name, sec in s.items():
        detail = ""
        if name == "op_table" and "run" in sec:
            detail = (f"{sec['passed']} passed, {sec['failed']} failed of {sec['run']} run "
                      f"({sec['total_cases']} cases, vs Ember CPU)")
        elif name == "nn_optim_parity" and "counts" in sec:
            c = sec["counts"]
            detail = f"{c['passed']} passed, {c['failed']} failed, {c['error']} errors, " \
                     f"{c['skipped']} skipped on {report['device']}"
        elif name == "training_parity" and "models" in sec:
            detail = "; ".join(f"{k}: {v['status']}" + (
                f" (loss rel {_fmt(v['max_loss_rel_diff'])}, grad rel "
                f"{_fmt(v['max_first_step_grad_rel_diff'])})" if "max_loss_rel_diff" in v else "")
                for k, v in sec["models"].items())
        elif name == "timings" and "rows" in sec:
            detail = ", ".join(f"{k}: {v['status']}" for k, v in sec["rows"].items()
                               if v["status"] != "measured") or "all rows measured"
            detail = detail.replace("|", "/")[:300]
        elif name == "nccl" and "bandwidth" in sec:
            bw = sec["bandwidth"]
            detail = (f"all_reduce {'correct' if sec.get('correct') else 'WRONG'}; "
                      + (f"{_fmt(bw['ember_algbw_gbs'])} GB/s algbw vs raw NCCL "
                         f"{_fmt(bw['raw_algbw_gbs'])}, ratio {_fmt(bw['ratio'])}"
                         if "ratio" in bw else bw.get("status", "")))
        elif "error" in sec:
            detail = sec["error"].replace("|", "\\|").replace("\n", " ")[:200]
        lines.append(f"| {name} | {sec.get('status')} | {detail} | {sec.get('elapsed_s')} |")
    op = s.get("op_table", {})
    if op.get("by_family"):
        lines += ["", "### Op table by family", "", "| family | passed | failed | skipped |",
                  "| --- | --- | --- | --- |"]
        for fam, c in op["by_family"].items():
            lines.append(f"| {fam} | {c['passed']} | {c['failed']} | {c['skipped']} |")
    if op.get("first_failures"):
        lines += ["", "First op-table failures:", ""]
        lines += [f"- `{f['case']}`: {f['error'][:240]}" for f in op["first_failures"]]
    par = s.get("nn_optim_parity", {})
    if par.get("failure_reasons"):
        lines += ["", "nn/optim parity failures:", ""]
        lines += [f"- {r[:240]}" for r in par["failure_reasons"]]
    tim = s.get("timings", {})
    if tim.get("rows"):
        lines += ["", "## Timings", ""]
        if not tim.get("meaningful"):
            lines += [f"**Meaningless here:** {tim.get('note')}.", ""]
        if tim.get("note_sizes"):
            lines += [tim["note_sizes"], ""]
        lines += ["| row | goal | ember | reference | ratio | goal met | status |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for name, r in tim["rows"].items():
            ember_v = ref_v = ""
            if "ember_samples_per_s" in r:
                ember_v = f"{_fmt(r['ember_samples_per_s'])} samples/s"
                ref_v = f"{_fmt(r['torch_samples_per_s'])} samples/s (torch)"
            elif "ember_ms" in r:
                ember_v, ref_v = f"{_fmt(r['ember_ms'])} ms", f"{_fmt(r['cupy_ms'])} ms (CuPy)"
            elif "ember_us_per_op" in r:
                ember_v = f"{_fmt(r['ember_us_per_op'])} us/op"
                ref_v = f"{_fmt(r['torch_us_per_op'])} us/op (torch)"
            elif "ember_h2d_gbs" in r:
                ember_v = f"{_fmt(r['ember_h2d_gbs'])}/{_fmt(r['ember_d2h_gbs'])} GB/s h2d/d2h"
                ref_v = f"{_fmt(r['cupy_h2d_gbs'])}/{_fmt(r['cupy_d2h_gbs'])} GB/s (CuPy)"
            status = r["status"] if "error" not in r else f"error: {r['error'][:160]}"
            lines.append(f"| {name} | {r.get('goal', '')} | {ember_v} | {ref_v} | "
                         f"{_fmt(r['ratio']) if 'ratio' in r else ''} | "
                         f"{'n/a' if r.get('goal_met', '') is None else r.get('goal_met', '')} | "
                         f"{status.replace('|', '/')} |")
        pinned = tim["rows"].get("pinned_copies", {})
        if "ember_host" in pinned:
            lines += ["", f"Pinned copies: Ember's host tensor is {pinned['ember_host']}; "
                          f"CuPy's is {pinned['cupy_host']}."]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda", help="Ember's device under test")
    parser.add_argument("--oracle-device", default="cuda", help="torch's device for comparisons")
    parser.add_argument("--out", help="folder for gpu_check.json and gpu_check.md")
    parser.add_argument("--quick", action="store_true", help="reduced sizes and samples")
    parser.add_argument("--budget", type=float, default=270.0,
                        help="hard overall time budget in seconds (default 270)")
    args = parser.parse_args(argv)
    start = time.monotonic()  # the imports count towards the budget too
    preload()
    register_device(args.device)
    report = run_sections(args, start)
    markdown = render_markdown(report)
    print(markdown)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "gpu_check.json"), "w") as f:
            json.dump(report, f, indent=1, default=str)
        with open(os.path.join(args.out, "gpu_check.md"), "w") as f:
            f.write(markdown)
    bad = [n for n, sec in report["sections"].items()
           if str(sec.get("status")).startswith(("failed", "error"))]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
