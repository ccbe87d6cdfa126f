"""Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11), written
once against a NumPy-API array namespace so that a device draws its random bits where its arrays
live: the CUDA backend runs it on CuPy, and the same arithmetic on NumPy gives bit-identical
words (the conformance device and the tests check device draws against it).

Philox is counter-based: block ``c`` under key ``k`` is a pure function of ``(k, c)``, so a
generator's whole state is its seed and how many blocks it has used (PyTorch's CUDA generator
keeps the same two numbers), and replaying a state is setting two integers.
"""
_M0, _M1 = 0xD2511F53, 0xCD9E8D57  # the round multipliers
_W0, _W1 = 0x9E3779B9, 0xBB67AE85  # the key schedule's Weyl increments
_MASK32 = 0xFFFF_FFFF
ROUNDS = 10


def philox4x32(xp, key, first_block, blocks):
    """The ``4 * blocks`` uint32 words of counters ``first_block .. first_block + blocks - 1``
    (counter words 0-1 hold the 64-bit block number, 2-3 are zero) under the 64-bit ``key``,
    as one flat uint32 array: block ``i``'s four words are ``out[4 * i: 4 * i + 4]``.

    Each 32x32-bit product is formed exactly in uint64 and split into its halves; every step is
    an element-wise array operation, so nothing leaves the device."""
    u64 = xp.uint64
    start = first_block & 0xFFFF_FFFF_FFFF_FFFF
    counter = xp.arange(blocks, dtype=u64) + u64(start)
    c0 = counter & u64(_MASK32)
    c1 = counter >> u64(32)
    c2 = xp.zeros(blocks, dtype=u64)
    c3 = xp.zeros(blocks, dtype=u64)
    k0, k1 = key & _MASK32, (key >> 32) & _MASK32
    for _ in range(ROUNDS):
        p0 = c0 * u64(_M0)
        p1 = c2 * u64(_M1)
        c0, c1, c2, c3 = ((p1 >> u64(32)) ^ c1 ^ u64(k0), p1 & u64(_MASK32),
                          (p0 >> u64(32)) ^ c3 ^ u64(k1), p0 & u64(_MASK32))
        k0, k1 = (k0 + _W0) & _MASK32, (k1 + _W1) & _MASK32
    return xp.stack((c0, c1, c2, c3), axis=1).reshape(-1).astype(xp.uint32)


def philox4x32_reference(key, counter):
    """One block on the host in plain Python integers (the tests' known-answer check):
    ``counter`` is four 32-bit words, ``key`` two."""
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for _ in range(ROUNDS):
        p0, p1 = _M0 * c0, _M1 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & _MASK32, (p0 >> 32) ^ c3 ^ k1, p0 & _MASK32
        k0, k1 = (k0 + _W0) & _MASK32, (k1 + _W1) & _MASK32
    return c0, c1, c2, c3


__all__ = ["philox4x32", "philox4x32_reference", "ROUNDS"]
