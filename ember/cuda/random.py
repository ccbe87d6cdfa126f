"""``torch.cuda.random``: seeding and state of each CUDA device's default generator.

Each CUDA device has its own default generator (``ember/_random.py``: a Philox stream drawn on
that device, whose state is PyTorch's 16 bytes of seed and offset). Without CUDA these answer
as torch's CPU build does: the seeding calls are silently ignored (scripts call them
unconditionally), the state queries raise "Torch not compiled with CUDA enabled", and
``get_rng_state_all()`` is ``[]``.
"""
from .. import _random
from .._device import device as _device

__all__ = ["get_rng_state", "get_rng_state_all", "set_rng_state", "set_rng_state_all",
           "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed"]


def _default_generators():
    """The tuple of every CUDA device's default generator (``torch.cuda.default_generators``);
    ``()`` without CUDA."""
    from . import device_count
    return tuple(_random.device_default_generator(_device("cuda", i))
                 for i in range(device_count()))


def _generator(device):
    """The default generator of ``device`` ("cuda", "cuda:1", an index, an ember.device)."""
    from . import _lazy_init, current_device
    _lazy_init()
    if isinstance(device, str):
        device = _device(device)
    elif isinstance(device, int):
        device = _device("cuda", device)
    idx = device.index
    if idx is None:
        idx = current_device()
    return _random.device_default_generator(_device("cuda", idx))


def get_rng_state(device="cuda"):
    """The state of ``device``'s default generator, a 16-byte uint8 CPU tensor."""
    return _generator(device).get_state()


def get_rng_state_all():
    from . import device_count
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state(new_state, device="cuda"):
    """Restore ``device``'s default generator; ignored without CUDA, as in torch's CPU build
    (which queues it for a CUDA initialisation that never comes)."""
    from . import is_available
    if not is_available():
        return
    _generator(device).set_state(new_state)


def set_rng_state_all(new_states):
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


def manual_seed(seed):
    """Seed the current device's default generator; silently ignored without CUDA."""
    from . import is_available
    seed = int(seed)
    if is_available():
        _generator("cuda").manual_seed(seed)


def manual_seed_all(seed):
    """Seed every CUDA device's default generator; silently ignored without CUDA."""
    seed = int(seed)
    for gen in _default_generators():
        gen.manual_seed(seed)


def seed():
    """Reseed the current device's default generator from the OS's entropy."""
    from . import is_available
    if is_available():
        _generator("cuda").seed()


def seed_all():
    """One fresh seed from the OS's entropy, for every CUDA device."""
    gens = _default_generators()
    if gens:
        s = gens[0].seed()
        for gen in gens[1:]:
            gen.manual_seed(s)


def initial_seed():
    return _generator("cuda").initial_seed()
