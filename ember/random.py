"""``ember.random``, as ``torch.random``: the CPU default generator's seeding and state, and
``fork_rng``."""
import contextlib
import warnings

from . import _random
from ._random import manual_seed, seed, initial_seed, get_rng_state, set_rng_state

__all__ = ["set_rng_state", "get_rng_state", "manual_seed", "seed", "initial_seed", "fork_rng"]

_fork_rng_warned_already = False


def _device_rng(device_type):
    """(device count, get_state(index), set_state(state, index)) of ``device_type``'s default
    generators. CUDA answers through ``ember.cuda.random`` (no devices without CUDA); another
    type that draws on its device counts the default generators made so far (Ember has no
    device count for third-party backends, and a generator not made yet has drawn nothing)."""
    if device_type == "cuda":
        from .cuda import device_count
        from .cuda import random as cuda_random
        return device_count(), cuda_random.get_rng_state, cuda_random.set_rng_state
    from ._device import device

    def generator(index):
        d = device(device_type, index) if isinstance(index, int) else device(index)
        return _random.device_default_generator(d)

    made = [i for kind, i in _random._DEVICE_DEFAULTS if kind == device_type]
    return (max(made) + 1 if made else 0, lambda index: generator(index).get_state(),
            lambda state, index: generator(index).set_state(state))


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type=None):
    """Run the block on forked random streams: the states it leaves behind are undone on exit
    (also when the block raises), as ``torch.random.fork_rng``. The CPU generator is always
    forked, and so are the default generators of ``devices`` (indices of ``device_type``,
    by default the current accelerator's type, else "cuda"; all of them when ``devices`` is
    None, with torch's warning when there are several)."""
    global _fork_rng_warned_already
    if device_type == "meta":
        yield
        return
    if device_type is None:
        from .accelerator import current_accelerator
        acc = current_accelerator()
        device_type = acc.type if acc is not None else "cuda"
    from ._device import device
    device_type = device(device_type).type  # an unknown device type raises torch's error
    if not enabled:
        yield
        return
    count, get_state, set_state = _device_rng(device_type)
    if devices is None:
        if count > 1 and not _fork_rng_warned_already:
            kind = device_type.upper()
            warnings.warn(
                f"{kind} reports that you have {count} available devices, and you have used "
                f"{_caller} without explicitly specifying which devices are being used. For "
                f"safety, we initialize *every* {kind} device by default, which can be quite "
                f"slow if you have a lot of {kind}s. If you know that you are only making use "
                f"of a few {kind} devices, set the environment variable {kind}_VISIBLE_DEVICES "
                f"or the '{_devices_kw}' keyword argument of {_caller} with the set of devices "
                "you are actually using. For example, if you are using CPU only, set "
                "device.upper()_VISIBLE_DEVICES= or devices=[]; if you are using device 0 only, "
                f"set {kind}_VISIBLE_DEVICES=0 or devices=[0].  To initialize all devices and "
                f"suppress this warning, set the '{_devices_kw}' keyword argument to "
                f"`range(ember.{device_type}.device_count())`.", stacklevel=3)
            _fork_rng_warned_already = True
        devices = list(range(count))
    else:
        devices = list(devices)  # a generator argument is traversed twice
    cpu_state = get_rng_state()
    device_states = [get_state(d) for d in devices]
    try:
        yield
    finally:
        set_rng_state(cpu_state)
        for d, state in zip(devices, device_states):
            set_state(state, d)
