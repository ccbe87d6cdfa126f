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
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
        seed = int(seed)
        if not -0x8000_0000_0000_0000 <= seed <= 0xffff_ffff_ffff_ffff:
            raise ValueError("Overflow when unpacking long long")
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
        """The stream's position as a uint8 tensor, for ``set_state`` to replay from."""
        from .ops.creation import tensor
        return tensor(list(self._state_bytes()), dtype=dt.uint8)

    def _state_bytes(self):
        st = self._np.bit_generator.state
        return (st["state"]["state"].to_bytes(16, "little")
                + st["state"]["inc"].to_bytes(16, "little")
                + bytes([st["has_uint32"]]) + int(st["uinteger"]).to_bytes(4, "little")
                + self._seed.to_bytes(8, "little"))

    def set_state(self, new_state):
        from ._tensor import Tensor
        if not isinstance(new_state, Tensor):
            raise TypeError(f"expected a ember.ByteTensor, but got {type(new_state).__name__}")
        if new_state.dtype is not dt.uint8:
            raise TypeError("RNG state must be a ember.ByteTensor")
        self._set_state_bytes(bytes(new_state.tolist()))
        return self

    def _set_state_bytes(self, raw):
        if len(raw) != _STATE_BYTES:
            raise RuntimeError(f"Expected an RNG state of size {_STATE_BYTES} but found the input "
                               f"RNG state size to be {len(raw)}")
        bitgen = np.random.PCG64()
        bitgen.state = {"bit_generator": "PCG64",
                        "state": {"state": int.from_bytes(raw[0:16], "little"),
                                  "inc": int.from_bytes(raw[16:32], "little")},
                        "has_uint32": raw[32], "uinteger": int.from_bytes(raw[33:37], "little")}
        self._np = np.random.Generator(bitgen)
        self._seed = int.from_bytes(raw[37:45], "little")

    def __getstate__(self):
        return {"device": str(self.device), "state": self._state_bytes()}

    def __setstate__(self, d):
        from ._device import device as _dev
        self.device = _dev(d["device"])
        self._set_state_bytes(d["state"])

    def __repr__(self):
        return f"<ember.Generator object at {id(self):#x}>"


default_generator = Generator()


def manual_seed(seed):
    """Seed the default generator, which every device's sampling draws from."""
    default_generator.manual_seed(int(seed))
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
