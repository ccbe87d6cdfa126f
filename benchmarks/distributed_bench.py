"""Distributed benchmarks (issue 18): ember.distributed's MPI backend and DistributedDataParallel
against raw mpi4py and torch DDP on gloo, on this machine's CPU cores, one thread per rank.

Commands, from the repository root (``mpiexec`` is the one beside the Python, which the
``mpich`` wheel installs, else the one on PATH):

    python benchmarks/distributed_bench.py --out /tmp/dist          # every row (a few minutes)
    python benchmarks/distributed_bench.py --quick --out /tmp/dist  # smallest sizes, a smoke run
    python benchmarks/distributed_bench.py --only allreduce,overlap # some rows
    mpiexec -n 2 python benchmarks/distributed_bench.py --worker allreduce --quick
                                # one row's ranks by hand: rank 0 prints a "RESULT {json}" line

The script starts each row's ranks itself with ``mpiexec -n N``, each rank with one BLAS thread
(OMP/OPENBLAS/MKL_NUM_THREADS=1), and writes ``OUT/distributed_bench.json`` (every number) and
``OUT/distributed_bench.md`` (the table, printed too). Run it on a quiet machine with at least
2 cores: two ranks on fewer cores measure the scheduler. Across nodes, pass the hostfile to
mpiexec: ``--mpiexec-args "-f hosts"``.

Rows:

(a) ``allreduce``: bus bandwidth of ``ember.distributed.all_reduce`` (MPI backend, float32 SUM)
    against raw ``mpi4py`` ``Allreduce(IN_PLACE)`` on the same NumPy buffer (the tensor is
    ``ember.from_numpy`` of it), 1 MB to 64 MB. Bus bandwidth = bytes x 2(n-1)/n / time (the
    nccl-tests convention). Ember is timed with its cross-rank shape check on (the default) and
    off (``EMBER_DISTRIBUTED_CHECKS=0``). Goal: Ember >= 0.9x raw mpi4py.
(b) ``ddp_scaling``: samples/s of a compute-bound MLP (wide Linear layers, SGD), 1 rank without
    DDP against 2 ranks with DDP, the same batch per rank (weak scaling); efficiency =
    samples/s(2) / (2 x samples/s(1)).
(c) ``overlap``: with DDP on 2 ranks, the time from the last backward op (the last gradient's
    post-accumulate hook) to the end of ``backward()`` (all buckets reduced, ready for
    ``step()``), with the default buckets (``bucket_cap_mb=25``) against one bucket of every
    gradient (``bucket_cap_mb`` huge): buckets that overlap the rest of backward leave less
    communication after the last op.
(d) ``torch_ddp``: the same model, batch and optimizer under torch DDP on gloo (2 ranks, one
    thread each, the same mpiexec as a launcher, env:// rendezvous); ratio of Ember's samples/s
    (row b's 2-rank run) to torch's.

A row whose piece of Ember is missing (DDP not usable yet) says "not available" with the
reason instead of a number. Rows are timed, not asserted: every figure is a median over steps or
repetitions, taken as the slowest rank's.
"""
import argparse
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

ROWS = ("allreduce", "ddp_scaling", "overlap", "torch_ddp")
RESULT = "RESULT "

# (allreduce sizes in MB, repetitions per timing, rounds, MLP widths, per-rank batch, steps)
FULL = dict(sizes_mb=[1, 4, 16, 64], iters=10, rounds=3, width=2048, depth=3, batch=64, steps=8,
            warm=2)
QUICK = dict(sizes_mb=[1], iters=2, rounds=1, width=128, depth=2, batch=8, steps=2, warm=1)


# ---------------------------------------------------------------------------------------------
# Ranks (run under mpiexec with --worker)
# ---------------------------------------------------------------------------------------------

def _rank_and_size():
    return int(os.environ.get("PMI_RANK", "0")), int(os.environ.get("PMI_SIZE", "1"))


def _report(payload):
    """Rank 0 prints the row's result for the driver."""
    if _rank_and_size()[0] == 0:
        print(RESULT + json.dumps(payload), flush=True)


def _slowest(seconds):
    """The largest of the ranks' values (every rank calls it)."""
    from mpi4py import MPI
    return MPI.COMM_WORLD.allreduce(seconds, op=MPI.MAX)


def worker_allreduce(cfg):
    import numpy as np
    from mpi4py import MPI
    import ember
    import ember.distributed as dist
    dist.init_process_group("mpi")
    comm, n = MPI.COMM_WORLD, dist.get_world_size()
    rows = []
    for size_mb in cfg["sizes_mb"]:
        nbytes = size_mb << 20
        buf = np.zeros(nbytes // 4, np.float32)  # zeros: repeated sums stay finite
        tensor = ember.from_numpy(buf)
        assert tensor.data_ptr() == buf.ctypes.data  # the same memory: the same buffer

        def raw():
            comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)

        def ember_checked():
            os.environ["EMBER_DISTRIBUTED_CHECKS"] = "1"
            dist.all_reduce(tensor)

        def ember_unchecked():
            os.environ["EMBER_DISTRIBUTED_CHECKS"] = "0"
            dist.all_reduce(tensor)
        fns = {"raw_mpi4py": raw, "ember": ember_checked, "ember_checks_off": ember_unchecked}
        times = {name: [] for name in fns}
        for name, fn in fns.items():
            fn()  # warm: buffers touched, MPI's paths set up
        for _ in range(cfg["rounds"]):
            for name, fn in fns.items():  # interleaved, so drift hits every variant alike
                comm.Barrier()
                start = time.perf_counter()
                for _ in range(cfg["iters"]):
                    fn()
                times[name].append(_slowest((time.perf_counter() - start) / cfg["iters"]))
        os.environ.pop("EMBER_DISTRIBUTED_CHECKS", None)
        factor = 2 * (n - 1) / n
        row = {"size_mb": size_mb, "bytes": nbytes}
        for name, ts in times.items():
            t = statistics.median(ts)
            row[f"{name}_us"] = t * 1e6
            row[f"{name}_busbw_gbs"] = nbytes * factor / t / 1e9
        row["ratio"] = row["ember_busbw_gbs"] / row["raw_mpi4py_busbw_gbs"]
        row["ratio_checks_off"] = row["ember_checks_off_busbw_gbs"] / row["raw_mpi4py_busbw_gbs"]
        rows.append(row)
    dist.destroy_process_group()
    _report({"world_size": n, "sizes": rows})


def _mlp(lib, cfg):
    nn, width = lib.nn, cfg["width"]
    layers = []
    for _ in range(cfg["depth"]):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, 10))


def _batch(lib, cfg, rank):
    import numpy as np
    rng = np.random.default_rng(rank)
    x = lib.from_numpy(rng.standard_normal((cfg["batch"], cfg["width"]), dtype=np.float32))
    y = lib.from_numpy(rng.integers(0, 10, cfg["batch"]))
    return x, y


def _make_ddp(ember, model, **kwargs):
    """DDP over ``model``, or the reason it cannot be made (the same on every rank)."""
    try:
        from ember.nn.parallel import DistributedDataParallel
        return DistributedDataParallel(model, **kwargs), None
    except Exception as exc:  # noqa: BLE001 - reported as the row's status
        return None, f"{type(exc).__name__}: {exc}"[:300]


def _time_steps(step, cfg, sync):
    for _ in range(cfg["warm"]):
        step()
    times = []
    for _ in range(cfg["steps"]):
        sync()
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def worker_ddp_scaling(cfg):
    """1 rank: the plain model; 2 or more: DDP. samples/s over all ranks."""
    import ember
    rank, size = _rank_and_size()
    ember.manual_seed(0)
    model = _mlp(ember, cfg)
    if size > 1:
        import ember.distributed as dist
        dist.init_process_group("mpi")
        model, why = _make_ddp(ember, model)
        if model is None:
            _report({"status": f"not available: DistributedDataParallel raised {why}"})
            return
        sync = dist.barrier
    else:
        sync = lambda: None  # noqa: E731
    optimizer = ember.optim.SGD(model.parameters(), lr=0.01)
    x, y = _batch(ember, cfg, rank)

    def step():
        optimizer.zero_grad()
        ember.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    t = _time_steps(step, cfg, sync)
    if size > 1:
        t = _slowest(t)
    _report({"status": "measured", "world_size": size, "step_s": t,
             "samples_per_s": size * cfg["batch"] / t})
    if size > 1:
        dist.destroy_process_group()


def worker_overlap(cfg):
    import ember
    import ember.distributed as dist
    rank, size = _rank_and_size()
    dist.init_process_group("mpi")
    result = {"status": "measured", "world_size": size}
    for name, cap in (("buckets", None), ("one_bucket", 1e6)):
        ember.manual_seed(0)
        base = _mlp(ember, cfg)
        model, why = _make_ddp(ember, base, **({} if cap is None else {"bucket_cap_mb": cap}))
        if model is None:
            _report({"status": f"not available: DistributedDataParallel raised {why}"})
            dist.destroy_process_group()
            return
        stamps = []
        # Registered after DDP's own hooks: each runs once DDP has taken that gradient.
        for p in base.parameters():
            p.register_post_accumulate_grad_hook(lambda p: stamps.append(time.perf_counter()))
        optimizer = ember.optim.SGD(model.parameters(), lr=0.01)
        x, y = _batch(ember, cfg, rank)
        tails, backwards = [], []
        for i in range(cfg["warm"] + cfg["steps"]):
            optimizer.zero_grad()
            loss = ember.nn.functional.cross_entropy(model(x), y)
            stamps.clear()
            dist.barrier()
            start = time.perf_counter()
            loss.backward()
            end = time.perf_counter()
            optimizer.step()
            if i >= cfg["warm"]:
                tails.append(end - max(stamps))
                backwards.append(end - start)
        result[name] = {"bucket_cap_mb": 25 if cap is None else cap,
                        "tail_ms": _slowest(statistics.median(tails)) * 1e3,
                        "backward_ms": _slowest(statistics.median(backwards)) * 1e3}
    result["ratio"] = result["buckets"]["tail_ms"] / result["one_bucket"]["tail_ms"]
    dist.destroy_process_group()
    _report(result)


def worker_torch_ddp(cfg):
    import torch
    import torch.distributed as tdist
    torch.set_num_threads(1)
    rank, size = _rank_and_size()
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(size))
    tdist.init_process_group("gloo", init_method="env://")
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(_mlp(torch, cfg))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = _batch(torch, cfg, rank)

    def step():
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    t = _time_steps(step, cfg, tdist.barrier)
    t = torch.tensor([t], dtype=torch.float64)
    tdist.all_reduce(t, op=tdist.ReduceOp.MAX)
    t = float(t)
    if rank == 0:
        print(RESULT + json.dumps({"status": "measured", "world_size": size, "step_s": t,
                                   "samples_per_s": size * cfg["batch"] / t}), flush=True)
    tdist.destroy_process_group()


WORKERS = {"allreduce": worker_allreduce, "ddp_scaling": worker_ddp_scaling,
           "overlap": worker_overlap, "torch_ddp": worker_torch_ddp}


# ---------------------------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------------------------

def mpiexec():
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    found = beside if os.path.exists(beside) else shutil.which("mpiexec")
    if found is None:
        raise SystemExit("mpiexec not found: pip install 'ember[distributed]' (mpi4py and the "
                         "mpich wheel)")
    return found


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank_env():
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = "1"
    # As benchmarks/run.py: these pin OpenBLAS to a conservative kernel on some machines.
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    env.pop("EMBER_DISTRIBUTED_CHECKS", None)
    env["PYTHONPATH"] = os.pathsep.join([REPO] + [p for p in [env.get("PYTHONPATH")] if p])
    env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()))
    return env


def launch(worker, nprocs, args, timeout):
    """Run ``worker`` on ``nprocs`` ranks; rank 0's result, or {"status": "error", ...}."""
    cmd = [mpiexec(), *args.mpiexec_args.split(), "-n", str(nprocs), sys.executable,
           os.path.abspath(__file__), "--worker", worker] + (["--quick"] if args.quick else [])
    env = _rank_env()
    if worker != "torch_ddp":
        # Ember's ranks find each other through MPI; MASTER_ADDR is torch's env:// only.
        env.pop("MASTER_ADDR"), env.pop("MASTER_PORT")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=REPO, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return {"status": "error", "error": f"{nprocs} ranks still running after {timeout} s "
                                            f"(killed): {err[-800:]}"}
    lines = [line for line in out.splitlines() if line.startswith(RESULT)]
    if proc.returncode != 0 or not lines:
        return {"status": "error", "error": f"exit {proc.returncode}: {(err or out)[-1200:]}"}
    return json.loads(lines[-1][len(RESULT):])


def run_rows(args):
    cfg = QUICK if args.quick else FULL
    timeout = 120 if args.quick else 900
    only = ROWS if not args.only else tuple(args.only.split(","))
    unknown = set(only) - set(ROWS)
    if unknown:
        raise SystemExit(f"--only: unknown rows {sorted(unknown)}; rows are {', '.join(ROWS)}")
    rows = {}
    if "allreduce" in only:
        rows["allreduce"] = launch("allreduce", 2, args, timeout)
        rows["allreduce"].setdefault("status", "measured")
        rows["allreduce"]["goal"] = "ember bus bandwidth >= 0.9x raw mpi4py"
    if "ddp_scaling" in only or "torch_ddp" in only:
        one, two = launch("ddp_scaling", 1, args, timeout), launch("ddp_scaling", 2, args, timeout)
        row = {"one_rank": one, "two_ranks": two}
        if one.get("status") == two.get("status") == "measured":
            row["efficiency"] = two["samples_per_s"] / (2 * one["samples_per_s"])
            row["status"] = "measured"
        else:
            row["status"] = next(r["status"] for r in (two, one) if r.get("status") != "measured")
            row["error"] = two.get("error") or one.get("error")
        if "ddp_scaling" in only:
            rows["ddp_scaling"] = row
    if "overlap" in only:
        rows["overlap"] = launch("overlap", 2, args, timeout)
        rows["overlap"]["goal"] = "tail with buckets < tail with one bucket"
    if "torch_ddp" in only:
        torch_row = launch("torch_ddp", 2, args, timeout)
        ember_two = row["two_ranks"]
        entry = {"torch": torch_row, "ember": ember_two}
        if torch_row.get("status") == ember_two.get("status") == "measured":
            entry["ratio"] = ember_two["samples_per_s"] / torch_row["samples_per_s"]
            entry["status"] = "measured"
        else:
            bad = next(r for r in (ember_two, torch_row) if r.get("status") != "measured")
            entry["status"], entry["error"] = bad.get("status"), bad.get("error")
        rows["torch_ddp"] = entry
    return cfg, rows


def _fmt(value, digits=3):
    return f"{value:.{digits}g}" if isinstance(value, float) else str(value)


def render_markdown(report):
    cfg, rows = report["config"], report["rows"]
    lines = ["# Ember distributed benchmarks", "",
             f"`{report['command']}` on {report['machine']['cores']} cores, "
             f"{report['started']}{' (--quick: smallest sizes, not a measurement)' if report['quick'] else ''}. "
             f"One BLAS thread per rank; MLP {cfg['depth']}x{cfg['width']} wide, batch "
             f"{cfg['batch']} per rank.", "",
             "| row | measure | ember | reference | ratio | goal |",
             "| --- | --- | --- | --- | --- | --- |"]

    def failed(name, row):
        text = row.get("error") or row.get("status")
        lines.append(f"| {name} | | {str(text).replace('|', '/')[:300]} | | | |")
    ar = rows.get("allreduce")
    if ar is not None:
        if "sizes" in ar:
            for r in ar["sizes"]:
                lines.append(f"| all_reduce {r['size_mb']} MB | bus bandwidth | "
                             f"{_fmt(r['ember_busbw_gbs'])} GB/s (checks off "
                             f"{_fmt(r['ember_checks_off_busbw_gbs'])}) | "
                             f"{_fmt(r['raw_mpi4py_busbw_gbs'])} GB/s raw mpi4py | "
                             f"{_fmt(r['ratio'])} ({_fmt(r['ratio_checks_off'])}) | >= 0.9 |")
        else:
            failed("all_reduce", ar)
    sc = rows.get("ddp_scaling")
    if sc is not None:
        if "efficiency" in sc:
            lines.append(f"| DDP scaling | samples/s, 2 ranks vs 1 | "
                         f"{_fmt(sc['two_ranks']['samples_per_s'])} (2 ranks) | "
                         f"{_fmt(sc['one_rank']['samples_per_s'])} (1 rank, no DDP) | "
                         f"{_fmt(sc['efficiency'])} efficiency | |")
        else:
            failed("DDP scaling", sc)
    ov = rows.get("overlap")
    if ov is not None:
        if "ratio" in ov:
            lines.append(f"| DDP overlap | last backward op to step() | "
                         f"{_fmt(ov['buckets']['tail_ms'])} ms (25 MB buckets) | "
                         f"{_fmt(ov['one_bucket']['tail_ms'])} ms (one bucket) | "
                         f"{_fmt(ov['ratio'])} | < 1 |")
        else:
            failed("DDP overlap", ov)
    td = rows.get("torch_ddp")
    if td is not None:
        if "ratio" in td:
            lines.append(f"| vs torch DDP (gloo) | samples/s, 2 ranks | "
                         f"{_fmt(td['ember']['samples_per_s'])} | "
                         f"{_fmt(td['torch']['samples_per_s'])} (torch) | {_fmt(td['ratio'])} | |")
        else:
            failed("vs torch DDP (gloo)", td)
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", help="folder for distributed_bench.json and .md")
    parser.add_argument("--quick", action="store_true", help="the smallest sizes (a smoke run)")
    parser.add_argument("--only", help=f"comma-separated rows of: {', '.join(ROWS)}")
    parser.add_argument("--mpiexec-args", default="",
                        help="extra mpiexec arguments, e.g. '-f hosts' across nodes")
    parser.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        WORKERS[args.worker](QUICK if args.quick else FULL)
        return 0
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    cfg, rows = run_rows(args)
    report = {"command": " ".join(["python", "benchmarks/distributed_bench.py", *sys.argv[1:]]),
              "started": started, "quick": args.quick, "config": cfg,
              "machine": {"cores": os.cpu_count(), "platform": platform.platform(),
                          "python": platform.python_version()},
              "rows": rows}
    markdown = render_markdown(report)
    print(markdown)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "distributed_bench.json"), "w") as f:
            json.dump(report, f, indent=1)
        with open(os.path.join(args.out, "distributed_bench.md"), "w") as f:
            f.write(markdown)
    bad = [name for name, row in rows.items() if row.get("status") == "error"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
