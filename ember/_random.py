"""Random number generators: ``ember.Generator`` and the default generator behind
``manual_seed``. Each generator is an independent PCG64 stream (NumPy's), so the same seed gives
the same numbers on every run and platform."""
import os

import numpy as np

from . import _dtype as dt

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed",
           "get_rng_state", "set_rng_state"]

_DEFAULT_SEED = 67280421310721  # PyTorch's default initial seed
_STATE_BYTES = 16 + 16 + 1 + 4 + 8


class Generator:
    """An independent random stream, as ``torch.Generator``."""

    def __init__(self, device="cpu"):
        from ._device import device as _dev
        self.device = _dev(device)
        self.manual_seed(_DEFAULT_SEED)

    def manual_seed(self, seed):
        seed = int(seed)
        if not -0x8000_0000_0000_0000 <= seed <= 0xffff_ffff_ffff_ffff:
            raise RuntimeError(f"Overflow when unpacking long long ({seed})")
        seed &= 0xffff_ffff_ffff_ffff  # negative seeds wrap, as in PyTorch
        self._seed = seed
        self._np = np.random.Generator(np.random.PCG64(seed))
        return self

    def seed(self):
        """Reseed from the operating system's entropy and return the new seed."""
        s = int.from_bytes(os.urandom(8), "little") & 0x7fff_ffff_ffff_ffff
        self.manual_seed(s)
        return s

    def initial_seed(self):
        return self._seed

    def get_state(self):
        from .ops.creation import tensor
        st = self._np.bit_generator.state
        raw = (st["state"]["state"].to_bytes(16, "little") + st["state"]["inc"].to_bytes(16, "little")
               + bytes([st["has_uint32"]]) + int(st["uinteger"]).to_bytes(4, "little")
               + self._seed.to_bytes(8, "little"))
        return tensor(list(raw), dtype=dt.uint8)

    def set_state(self, new_state):
        raw = bytes(np.asarray(new_state.detach()._data if hasattr(new_state, "_data") else new_state,
                               dtype=np.uint8).tolist())
        if len(raw) != _STATE_BYTES:
            raise RuntimeError(f"RNG state is wrong size: expected {_STATE_BYTES} bytes, got {len(raw)}")
        bitgen = np.random.PCG64()
        bitgen.state = {"bit_generator": "PCG64",
                        "state": {"state": int.from_bytes(raw[0:16], "little"),
                                  "inc": int.from_bytes(raw[16:32], "little")},
                        "has_uint32": raw[32], "uinteger": int.from_bytes(raw[33:37], "little")}
        self._np = np.random.Generator(bitgen)
        self._seed = int.from_bytes(raw[37:45], "little")
        return self

    def __getstate__(self):
        return {"device": str(self.device), "state": self.get_state().tolist()}

    def __setstate__(self, d):
        from ._device import device as _dev
        self.device = _dev(d["device"])
        self.set_state(np.asarray(d["state"], dtype=np.uint8))

    def __repr__(self):
        return f"<ember.Generator object at {id(self):#x}>"


default_generator = Generator()


def manual_seed(seed):
    """Seed the default generator (and every backend's default generator)."""
    default_generator.manual_seed(seed)
    return default_generator


def seed():
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state):
    default_generator.set_state(new_state)


def numpy_generator(generator):
    """The NumPy stream to draw from: ``generator``'s, or the default one."""
    if generator is None:
        return default_generator._np
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be an ember.Generator, got {type(generator).__name__}")
    return generator._np
