"""Random number generators: ``ember.Generator``, the CPU default generator behind
``manual_seed``, and one default generator per device of every backend that draws on its device
(``Backend.draws_on_device``: CUDA, and the CuPy conformance device of the tests).

Two kinds of stream, as PyTorch has a CPU and a CUDA generator:

* A CPU generator is NumPy's PCG64 stream, so the same seed gives the same numbers on every run
  and platform. Samplers on the CPU (and on NumPy-backed devices registered without a generator
  of their own) draw from one and copy.
* A device generator is Philox4x32-10 keyed by the seed (``backends/_philox.py``), drawn by the
  device's backend where the tensor lives. Its state is what PyTorch's CUDA generator keeps:
  the seed and an offset counting the 32-bit words used (a multiple of 4, one Philox block per
  4 words), 16 bytes in ``get_state``. So replaying a state is setting two integers, and the
  same seed gives the same numbers on every run and on every such device.

Why not CuPy's own generators: ``cupy.random.RandomState`` is a cuRAND host generator whose
position cannot be read back (cuRAND has a setter for the offset but no getter, and how far
each generate call moves it depends on the method and dtype), and the ``cupy.random.Generator``
bit generators keep one cuRAND state per thread in device memory (megabytes) seeded only at
construction. Neither can give PyTorch's cheap ``get_rng_state`` -> draw -> ``set_rng_state`` ->
the same draw again; a counter-based stream can, and its words are checked bit for bit against
the host reference.
"""
import os

import numpy as np

from . import _dtype as dt

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed",
           "get_rng_state", "set_rng_state"]

_DEFAULT_SEED = 67280421310721  # PyTorch's default initial seed
_STATE_BYTES = 16 + 16 + 1 + 4 + 8
_DEVICE_STATE_BYTES = 8 + 8  # seed, offset: PyTorch's CUDA generator state
_U64 = 0xFFFF_FFFF_FFFF_FFFF


def _check_seed(seed):
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
    seed = int(seed)
    if not -0x8000_0000_0000_0000 <= seed <= _U64:
        raise ValueError("Overflow when unpacking long long")
    return seed & _U64  # negative seeds wrap, as in PyTorch


def _canonical_device(device):
    """``device`` with an index where it is not the CPU (``cuda`` is the current CUDA device,
    as tensors' devices resolve: ``backends.current_index``)."""
    from ._device import device as _dev
    d = device if isinstance(device, _dev) else _dev(device)
    if d.type != "cpu" and d.index is None:
        from .backends import current_index
        d = _dev(d.type, current_index(d.type))
    return d


def draws_on_device(device):
    """Whether samplers on ``device`` draw there, from a device generator."""
    if device.type == "cpu":
        return False
    from .backends import get_backend
    return get_backend(device).draws_on_device


class Generator:
    """An independent random stream, as ``torch.Generator``: a CPU one (PCG64) for ``"cpu"``,
    a Philox one for a device that draws on the device."""

    def __init__(self, device="cpu"):
        self.device = _canonical_device(device)
        self._on_device = draws_on_device(self.device)
        self.manual_seed(_DEFAULT_SEED)

    def manual_seed(self, seed):
        seed = _check_seed(seed)
        self._seed = seed
        if self._on_device:
            self._offset = 0
        else:
            self._np = np.random.Generator(np.random.PCG64(seed))
        return self

    def seed(self):
        """Reseed from the operating system's entropy and return the new seed."""
        s = int.from_bytes(os.urandom(8), "little") & 0x7fff_ffff_ffff_ffff
        self.manual_seed(s)
        return s

    def initial_seed(self):
        return self._seed

    def get_offset(self):
        """The Philox offset (32-bit words used) of a device generator, as torch's CUDA one."""
        if not self._on_device:
            raise RuntimeError("CPU Generator does not use offset")
        return self._offset

    def set_offset(self, offset):
        if not self._on_device:
            raise RuntimeError("CPU Generator does not use offset")
        if offset % 4 != 0:
            raise RuntimeError("offset must be a multiple of 4")
        self._offset = int(offset)
        return self

    def get_state(self):
        """The stream's position as a uint8 CPU tensor, for ``set_state`` to replay from."""
        from .ops.creation import tensor
        return tensor(list(self._state_bytes()), dtype=dt.uint8)

    def _state_bytes(self):
        if self._on_device:
            return self._seed.to_bytes(8, "little") + self._offset.to_bytes(8, "little")
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
        if self._on_device:
            # As torch's CUDA generator: 16 bytes (seed, offset), or the seed alone.
            if len(raw) not in (8, _DEVICE_STATE_BYTES):
                raise RuntimeError("RNG state is wrong size")
            self._seed = int.from_bytes(raw[0:8], "little")
            self._offset = int.from_bytes(raw[8:16], "little") if len(raw) == 16 else 0
            return
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
        self.device = _canonical_device(d["device"])
        self._on_device = draws_on_device(self.device)
        self._set_state_bytes(d["state"])

    def __repr__(self):
        return f"<ember.Generator object at {id(self):#x}>"


default_generator = Generator()

# One default generator per device that draws on its device, made on first use: (type, index)
# -> Generator. ``manual_seed``/``seed`` reach the ones not made yet through _pending_seed, as
# torch's lazily initialised CUDA generators receive a seed queued before initialisation.
_DEVICE_DEFAULTS = {}
_pending_seed = None


def device_default_generator(device):
    """The default generator of ``device`` (a device that draws on the device)."""
    device = _canonical_device(device)
    key = (device.type, device.index)
    gen = _DEVICE_DEFAULTS.get(key)
    if gen is None:
        gen = Generator(device)
        if _pending_seed is not None:
            gen.manual_seed(_pending_seed)
        gen = _DEVICE_DEFAULTS.setdefault(key, gen)
    return gen


def seed_device_defaults(seed):
    """Seed every device's default generator, the ones made later included."""
    global _pending_seed
    seed = _check_seed(seed)
    for gen in _DEVICE_DEFAULTS.values():
        gen.manual_seed(seed)
    _pending_seed = seed


def default_states():
    """The states of every default generator made so far (the CPU one and each device's), for
    ``restore_default_states``: what a replay that must not consume random numbers puts back."""
    return (default_generator._state_bytes(),
            {k: g._state_bytes() for k, g in _DEVICE_DEFAULTS.items()})


def restore_default_states(states):
    cpu, devices = states
    default_generator._set_state_bytes(cpu)
    for k, raw in devices.items():
        _DEVICE_DEFAULTS[k]._set_state_bytes(raw)


def manual_seed(seed):
    """Seed the CPU default generator and every device's default generator, as
    ``torch.manual_seed`` seeds the CPU and all CUDA devices."""
    seed = int(seed)
    default_generator.manual_seed(seed)
    seed_device_defaults(seed)
    return default_generator


def seed():
    s = default_generator.seed()
    seed_device_defaults(s)
    return s


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state):
    default_generator.set_state(new_state)


def numpy_generator(generator):
    """The NumPy stream of a CPU generator: ``generator``'s, or the default one."""
    if generator is None:
        return default_generator._np
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be an ember.Generator, got {type(generator).__name__}")
    if generator._on_device:
        raise RuntimeError(f"Expected a 'cpu' device type for generator but found "
                           f"'{generator.device.type}'")
    return generator._np


def sampler(generator, device):
    """What a sampler for a tensor on ``device`` draws from: a NumPy ``Generator`` (host draws,
    for the CPU and host-drawing devices), or the ``DeviceDraws`` of ``generator`` (or the
    device's default generator) on ``device``'s backend. A generator of the other kind raises
    torch's error."""
    device = _canonical_device(device)
    if not draws_on_device(device):
        return numpy_generator(generator)
    if generator is None:
        generator = device_default_generator(device)
    elif not isinstance(generator, Generator):
        raise TypeError(f"generator must be an ember.Generator, got {type(generator).__name__}")
    elif generator.device.type != device.type:
        raise RuntimeError(f"Expected a '{device.type}' device type for generator but found "
                           f"'{generator.device.type}'")
    from .backends import get_backend
    return DeviceDraws(generator, get_backend(device))


def draw_namespace(rng):
    """The array namespace ``rng``'s draws live in."""
    return rng.xp if isinstance(rng, DeviceDraws) else np


class DeviceDraws:
    """Draws of a device generator as arrays on ``backend``'s device, with the names and
    arguments of NumPy's ``Generator`` methods that Ember's samplers call, so a sampler is
    written once. Every value is a transform of Philox words made on the device; the words
    advance the generator's offset, whatever is left of the last block unused (as torch rounds
    each draw's offset up to a multiple of 4)."""

    def __init__(self, generator, backend):
        self._gen = generator
        self._backend = backend
        self.xp = backend.xp

    def words(self, n):
        """``n`` uint32 words."""
        gen = self._gen
        blocks = -(-n // 4)
        bits = self._backend.random_bits(gen._seed, gen._offset // 4, blocks)
        gen._offset += 4 * blocks
        return bits[:n]

    def words64(self, n):
        xp = self.xp
        w = self.words(2 * n).astype(xp.uint64)
        return (w[0::2] << xp.uint64(32)) | w[1::2]

    def _unit(self, size, dtype, half):
        """Uniform on [0, 1), or on (0, 1) with ``half`` (for logarithms), on the dyadic grid
        of the dtype's mantissa."""
        xp = self.xp
        size = _shape(size)
        n = _count(size)
        if np.dtype(dtype) == np.float64:
            grid = (self.words64(n) >> xp.uint64(11)).astype(xp.float64)
            scale = xp.float64(2.0 ** -53)
        else:
            grid = (self.words(n) >> xp.uint32(8)).astype(xp.float32)
            scale, dtype = xp.float32(2.0 ** -24), np.float32
        if half:
            grid = grid + 0.5
        return (grid * scale).reshape(size)

    def random(self, size=None, dtype=np.float64):
        return self._unit(size, dtype, False)

    def open_random(self, size=None, dtype=np.float64):
        return self._unit(size, dtype, True)

    def standard_normal(self, size=None, dtype=np.float64):
        """Box-Muller on pairs of uniforms, both of each pair's normals used."""
        xp = self.xp
        size = _shape(size)
        n = _count(size)
        pairs = -(-n // 2)
        radius = xp.sqrt(-2.0 * xp.log(self.open_random(pairs, dtype)))
        angle = (2.0 * np.pi) * self.random(pairs, dtype)
        z = xp.concatenate((radius * xp.cos(angle), radius * xp.sin(angle)))
        return z[:n].reshape(size)

    def integers(self, low, high, size=None, dtype=np.int64):
        """Uniform on [low, high) as torch's random_: a 32-bit (or, for ranges past 2**32, a
        64-bit) word modulo the range, added to ``low``."""
        xp = self.xp
        size = _shape(size)
        n = _count(size)
        span = int(high) - int(low)
        bits = self.words(n).astype(xp.uint64) if span <= 2 ** 32 else self.words64(n)
        if span < 2 ** 64:
            bits = bits % xp.uint64(span)
        values = (bits + xp.uint64(int(low) & _U64)).astype(xp.int64)  # wraps modulo 2**64
        return values.reshape(size).astype(dtype, copy=False)

    def permutation(self, n):
        """The order that sorts random 64-bit keys (torch's CUDA randperm sorts random keys)."""
        return self.xp.argsort(self.words64(int(n))).astype(self.xp.int64)

    def exponential(self, scale=1.0, size=None):
        return -self.xp.log(self.open_random(size)) * scale

    def geometric(self, p, size=None):
        xp = self.xp
        trials = xp.ceil(xp.log(self.open_random(size)) / np.log1p(-p))
        return xp.maximum(trials, 1.0)

    def lognormal(self, mean=0.0, sigma=1.0, size=None):
        return self.xp.exp(self.standard_normal(size) * sigma + mean)

    def standard_cauchy(self, size=None):
        return self.xp.tan(np.pi * (self.open_random(size) - 0.5))

    # The rejection samplers run in rounds: each round draws for every element still pending
    # (one vectorised step over those elements) and reads back only how many remain.

    def _rounds(self, shape, step):
        """float64 results of ``shape``: ``step(index)`` is given the flat indices still
        pending and returns (accepted mask, values) for them."""
        xp = self.xp
        out = xp.zeros(_count(shape), dtype=xp.float64)
        pending = xp.arange(out.size, dtype=xp.int64)
        while pending.size:
            accepted, values = step(pending)
            out[pending[accepted]] = values[accepted]
            pending = pending[~accepted]
        return out.reshape(shape)

    def standard_gamma(self, shape):
        """Gamma(shape, 1) by Marsaglia and Tsang's method (for shape < 1, a Gamma(shape + 1)
        draw times U ** (1 / shape)); shape 0 gives 0, as NumPy's."""
        xp = self.xp
        alpha = xp.asarray(shape, dtype=xp.float64)
        flat = alpha.reshape(-1)
        boosted = xp.where(flat < 1.0, flat + 1.0, flat)
        d = boosted - 1.0 / 3.0
        c = 1.0 / xp.sqrt(9.0 * d)

        def step(i):
            x = self.standard_normal(i.size)
            v = (1.0 + c[i] * x) ** 3
            log_u = xp.log(self.open_random(i.size))
            safe_v = xp.where(v > 0, v, 1.0)
            ok = (v > 0) & (log_u < 0.5 * x * x + d[i] - d[i] * safe_v + d[i] * xp.log(safe_v))
            return ok, d[i] * safe_v

        draws = self._rounds(alpha.shape, step).reshape(-1)
        small = flat < 1.0
        if bool(small.any()):
            u = self.open_random(int(small.sum()))
            draws[small] = draws[small] * u ** (1.0 / flat[small])
        return xp.where(flat > 0, draws, 0.0).reshape(alpha.shape)

    def poisson(self, lam=1.0, size=None):
        """Poisson counts as PyTorch's CPU sampler draws them: below a mean of 10 by multiplying
        uniforms until the product falls under exp(-lam), from 10 on by Hoermann's PTRS
        transformed rejection."""
        xp = self.xp
        lam = xp.asarray(lam, dtype=xp.float64)
        if size is not None:
            lam = xp.broadcast_to(lam, _shape(size))
        flat = lam.reshape(-1)
        out = xp.zeros(flat.size, dtype=xp.float64)
        small = (flat > 0) & (flat < 10)
        if bool(small.any()):
            out[small] = self._poisson_product(flat[small])
        large = flat >= 10
        if bool(large.any()):
            out[large] = self._poisson_ptrs(flat[large])
        return out.reshape(lam.shape)

    def _poisson_product(self, lam):
        xp = self.xp
        limit = xp.exp(-lam)
        product = xp.ones(lam.size, dtype=xp.float64)
        count = xp.zeros(lam.size, dtype=xp.float64)
        out = xp.zeros(lam.size, dtype=xp.float64)
        pending = xp.arange(lam.size, dtype=xp.int64)
        while pending.size:
            product[pending] = product[pending] * self.random(pending.size)
            done = product[pending] <= limit[pending]
            out[pending[done]] = count[pending[done]]
            pending = pending[~done]
            count[pending] = count[pending] + 1.0
        return out

    def _poisson_ptrs(self, lam):
        xp = self.xp
        slam, loglam = xp.sqrt(lam), xp.log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
        v_r = 0.9277 - 3.6224 / (b - 2.0)

        def step(i):
            u = self.random(i.size) - 0.5
            v = self.open_random(i.size)
            us = 0.5 - xp.abs(u)
            k = xp.floor((2.0 * a[i] / us + b[i]) * u + lam[i] + 0.43)
            quick = (us >= 0.07) & (v <= v_r[i])
            log_k_factorial = _log_factorial(xp, xp.maximum(k, 0.0))
            bound = -lam[i] + k * loglam[i] - log_k_factorial
            slow = ((k >= 0) & ~((us < 0.013) & (v > us))
                    & (xp.log(v) + xp.log(inv_alpha[i]) - xp.log(a[i] / (us * us) + b[i])
                       <= bound))
            return quick | slow, k

        return self._rounds(lam.shape, step)

    def binomial(self, n, p, size=None):
        """Binomial counts as PyTorch's CPU sampler draws them: for p > 1/2 the complement of a
        draw with 1 - p; where n * p < 10 by inversion (adding geometric waiting times), else by
        Hoermann's BTRS transformed rejection."""
        xp = self.xp
        n = xp.asarray(n, dtype=xp.float64)
        p = xp.asarray(p, dtype=xp.float64)
        n, p = xp.broadcast_arrays(n, p)
        if size is not None:
            n, p = xp.broadcast_to(n, _shape(size)), xp.broadcast_to(p, _shape(size))
        shape = n.shape
        n, p = n.reshape(-1), p.reshape(-1)
        flip = p > 0.5
        q = xp.where(flip, 1.0 - p, p)
        out = xp.zeros(n.size, dtype=xp.float64)
        live = (n > 0) & (q > 0)
        small = live & (n * q < 10)
        if bool(small.any()):
            out[small] = self._binomial_inversion(n[small], q[small])
        large = live & (n * q >= 10)
        if bool(large.any()):
            out[large] = self._binomial_btrs(n[large], q[large])
        return xp.where(flip, n - out, out).reshape(shape)

    def _binomial_inversion(self, n, q):
        xp = self.xp
        log_miss = xp.log1p(-q)
        total = xp.zeros(n.size, dtype=xp.float64)
        out = xp.zeros(n.size, dtype=xp.float64)
        pending = xp.arange(n.size, dtype=xp.int64)
        while pending.size:
            wait = xp.ceil(xp.log(self.open_random(pending.size)) / log_miss[pending])
            total[pending] = total[pending] + wait
            done = total[pending] > n[pending]
            pending = pending[~done]
            out[pending] = out[pending] + 1.0
        return out

    def _binomial_btrs(self, n, q):
        xp = self.xp
        spq = xp.sqrt(n * q * (1.0 - q))
        b = 1.15 + 2.53 * spq
        a = -0.0873 + 0.0248 * b + 0.01 * q
        c = n * q + 0.5
        v_r = 0.92 - 4.2 / b
        r = q / (1.0 - q)
        alpha = (2.83 + 5.1 / b) * spq
        m = xp.floor((n + 1.0) * q)

        def step(i):
            u = self.random(i.size) - 0.5
            v = self.random(i.size)
            us = 0.5 - xp.abs(u)
            k = xp.floor((2.0 * a[i] / us + b[i]) * u + c[i])
            inside = (k >= 0) & (k <= n[i])
            quick = inside & (us >= 0.07) & (v <= v_r[i])
            kk = xp.clip(k, 0.0, n[i])
            ni, mi, ri = n[i], m[i], r[i]
            log_v = xp.log(xp.maximum(v, 1e-300) * alpha[i] / (a[i] / (us * us) + b[i]))
            bound = ((mi + 0.5) * xp.log((mi + 1.0) / (ri * (ni - mi + 1.0)))
                     + (ni + 1.0) * xp.log((ni - mi + 1.0) / (ni - kk + 1.0))
                     + (kk + 0.5) * xp.log(ri * (ni - kk + 1.0) / (kk + 1.0))
                     + _stirling_tail(xp, mi) + _stirling_tail(xp, ni - mi)
                     - _stirling_tail(xp, kk) - _stirling_tail(xp, ni - kk))
            return quick | (inside & (log_v <= bound)), k

        return self._rounds(n.shape, step)


def _log_factorial(xp, k):
    """log(k!) for float arrays of non-negative integers."""
    from .ops.special import _lgamma_positive
    return _lgamma_positive(xp, k + 1.0)


def _stirling_tail(xp, k):
    """The remainder of Stirling's approximation, log(k!) - (k + 1/2) log(k + 1) + (k + 1) -
    log(2 pi) / 2, on float arrays of non-negative integers: exactly below 10 (where PyTorch's
    BTRS keeps a table of these values), by its series from 10 on."""
    kp1 = k + 1.0
    series = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / (kp1 * kp1)) / (kp1 * kp1)) / kp1
    small = xp.minimum(k, 9.0)
    exact = (_log_factorial(xp, small) - (small + 0.5) * xp.log(small + 1.0) + (small + 1.0)
             - 0.5 * np.log(2 * np.pi))
    return xp.where(k <= 9, exact, series)


def _shape(size):
    if size is None:
        return ()
    if isinstance(size, (int, np.integer)):
        return (int(size),)
    return tuple(int(s) for s in size)


def _count(shape):
    n = 1
    for s in shape:
        n *= s
    return n
