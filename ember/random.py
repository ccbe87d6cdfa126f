"""``ember.random``, as ``torch.random``: the default generator's seeding and state, and
``fork_rng``."""
import contextlib

from ._random import manual_seed, seed, initial_seed, get_rng_state, set_rng_state

__all__ = ["set_rng_state", "get_rng_state", "manual_seed", "seed", "initial_seed", "fork_rng"]


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type=None):
    """Run the block on a forked random stream: the state it leaves behind is undone on exit
    (also when the block raises), as ``torch.random.fork_rng``.

    Every device samples from Ember's default generator today, so forking that one generator
    forks every device's stream; ``devices`` and ``device_type`` are accepted for torch's
    signature and an unknown device type raises torch's error."""
    if device_type is not None:
        from ._device import device
        device(device_type)  # an unknown device type raises torch's parsing error
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
