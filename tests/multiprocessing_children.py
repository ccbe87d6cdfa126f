"""What the child processes of ``test_multiprocessing.py`` run, in a module of its own that
imports only Ember, so that children started with 'spawn' import it quickly."""
import os
import signal
import time

import ember


def write_rank(rank, out, scale):
    """``spawn`` target: ``out[rank] = rank * scale`` in a shared tensor."""
    out[rank] = rank * scale


def fail_on_rank(rank, bad_rank):
    if rank == bad_rank:
        raise ValueError(f"boom {rank}")
    time.sleep(60)  # the parent must terminate this one


def die_on_rank(rank, bad_rank):
    if rank == bad_rank:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(60)


def exit_on_rank(rank, bad_rank):
    if rank == bad_rank:
        raise SystemExit(3)
    time.sleep(60)


def describe_and_increment(inbox, outbox):
    """Receive tensors, report what arrived, add 1 to each in place."""
    while True:
        t = inbox.get()
        if t is None:
            break
        outbox.put((type(t).__name__, t.is_shared(), tuple(t.shape), t.stride(), t.requires_grad,
                    t.tolist()))
        with ember.no_grad():
            t.add_(1)
        outbox.put("written")


def increment_args(tensor, done):
    """Process target: the tensor was an argument, not a queue message."""
    with ember.no_grad():
        tensor.add_(10)
    done.put(tensor.is_shared())


def hogwild_train(model, lock, steps, x):
    """SGD steps on a shared model; the lock makes the interleaving irrelevant to the result
    (each step's gradient is the same), so the final weights are exact."""
    optimizer = ember.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(steps):
        optimizer.zero_grad()
        model(x).sum().backward()
        with lock:
            optimizer.step()


_kept = []


def share_and_exit(strategy):
    """Create shared tensors that are still alive when the process exits."""
    import ember.multiprocessing as mp
    mp.set_sharing_strategy(strategy)
    _kept.append(ember.ones(100).share_memory_())
