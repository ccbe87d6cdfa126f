"""Profile a few training steps of the demo's CNN: where does the time go?

    python examples/profile_cnn.py [--steps 6] [--batch-size 64] [--out profile-cnn]

It trains ``ember.demo``'s digits CNN under ``ember.profiler.profile`` with a schedule (one
idle step, one warm-up step, then the rest recorded) and writes into ``--out``:

- ``trace.json``: the Chrome trace of the recorded steps; open it in https://ui.perfetto.dev
  or chrome://tracing. Each op is a box inside its ``ProfilerStep#N``; the backward pass's
  ``autograd::engine::evaluate_function: ...`` boxes are linked to their forward ops by arrows.
- ``tb/``: a TensorBoard run with the loss of every step (``SummaryWriter``) and the same
  trace under TensorBoard's profiler naming (``tensorboard_trace_handler``):
  ``tensorboard --logdir OUT/tb`` (the trace view needs the ``torch-tb-profiler`` plugin).

and prints the ops that took the most time, in torch's table layout. Apart from borrowing
the demo's model and data (``ember.demo``), the code is ordinary PyTorch: with ``import torch``
in place of ``import ember as torch`` the profiling runs the same.
"""
import argparse
import os
import sys

import ember as torch
from ember import nn
from ember.demo import DigitsCNN, load_digits

profiler = torch.profiler


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=6, help="training steps in all (>= 3)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--out", default="profile-cnn", help="folder for the trace and run")
    parser.add_argument("--rows", type=int, default=15, help="rows of the top-ops table")
    args = parser.parse_args(argv)
    if args.steps < 3:
        parser.error("--steps must be at least 3 (one idle, one warm-up, one recorded)")

    torch.manual_seed(0)
    images, labels = load_digits()
    images = torch.from_numpy(images)
    labels = torch.from_numpy(labels)
    model = DigitsCNN()
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)

    os.makedirs(args.out, exist_ok=True)
    trace_path = os.path.join(args.out, "trace.json")
    tb_dir = os.path.join(args.out, "tb")
    writer = _summary_writer(tb_dir)
    to_tensorboard = profiler.tensorboard_trace_handler(tb_dir, worker_name="profile_cnn")

    def trace_ready(prof):
        prof.export_chrome_trace(trace_path)
        to_tensorboard(prof)

    losses = []
    recorded = args.steps - 2
    with profiler.profile(activities=[profiler.ProfilerActivity.CPU], record_shapes=True,
                          profile_memory=True, with_flops=True,
                          schedule=profiler.schedule(wait=1, warmup=1, active=recorded,
                                                     repeat=1),
                          on_trace_ready=trace_ready) as prof:
        for step in range(args.steps):
            start = (step * args.batch_size) % (len(labels) - args.batch_size)
            x = images[start:start + args.batch_size]
            y = labels[start:start + args.batch_size]
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(float(loss))
            if writer is not None:
                writer.add_scalar("train/loss", losses[-1], step)
            prof.step()
    if writer is not None:
        writer.close()

    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.rows)
    print(f"{recorded} of {args.steps} training steps recorded (batch {args.batch_size}); "
          "the ops that took the most time:")
    print(table)
    print(f"Chrome trace: {trace_path} (https://ui.perfetto.dev)")
    print(f"TensorBoard run: tensorboard --logdir {tb_dir}")
    return {"trace": trace_path, "tb_dir": tb_dir, "table": table, "losses": losses,
            "events": prof.events()}


def _summary_writer(log_dir):
    try:
        from ember.utils.tensorboard import SummaryWriter
        return SummaryWriter(log_dir)
    except ImportError as e:  # tensorboardX missing: the trace files are still written
        print(f"(no loss curve in TensorBoard: {e})")
        return None


if __name__ == "__main__":
    main()
    sys.exit(0)
