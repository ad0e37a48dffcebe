"""Random numbers as PyTorch makes them on the CPU: after ``manual_seed(s)``, the same values.

Every random tensor starts as a stream of 32-bit words from one Mersenne Twister (mt19937), the
generator PyTorch's CPU uses. A seed becomes its 624-word state with Matsumoto and Nishimura's
``init_genrand`` (only the low 32 bits of the seed count); numpy's ``MT19937`` then twists and
tempers the state into words, as ``std::mt19937`` does. PyTorch turns the words into numbers so:

==================  ===========================================================================
``rand`` float32    low 24 bits of one word, times 2^-24: a float in [0, 1)
``rand`` float64    two words make 64 bits (the first is the high half); low 53 bits times 2^-53
``uniform_(a, b)``  that ``x``, then ``x * (b - a) + a`` in the tensor's precision
``randn``, < 16     Box-Muller in double from two 53-bit uniforms ``u1, u2``:
                    ``r = sqrt(-2 log(1 - u2))``, ``r cos(2 pi u1)`` now, ``r sin(2 pi u1)`` kept in
                    the generator for the next normal number it draws (of any call, any dtype)
``randn``, >= 16    all uniforms first, then Box-Muller on blocks of 16 (``u1 = 1 - x[j]``,
                    ``u2 = x[j + 8]``; cosines in the first half, sines in the second); when the
                    size is not a multiple of 16, the last 16 are drawn again and redone
``normal_(m, s)``   ``z * s + m``
``randint(lo, hi)`` ``word % (hi - lo) + lo``, from a 64-bit draw when ``hi - lo >= 2^28``
``randperm(n)``     Fisher-Yates from the front: swap ``i`` with ``i + word % (n - i)``
``bernoulli_(p)``   a 53-bit uniform ``< p``
==================  ===========================================================================

Where the last bit depends on the CPU (PyTorch's AVX2 kernels fuse ``a * b + c`` into one rounding,
and draw ``randn`` of 16+ float32 values with the vectorised Cephes ``log``/``sin``/``cos``),
``gradviz._float_kernels`` rounds as this machine's PyTorch does. On CPUs without AVX2 (ARM Macs,
old x86) PyTorch uses libm's float32 ``logf``/``sinf``/``cosf`` there, which are not correctly
rounded; gradviz rounds the exact values instead, so about one float32 ``randn`` value in 70 (16+
elements only) differs, by at most 3 units in the last place (``normal_(mean, std)``: by at most 4
float32 ulps of 1, as ``* std + mean`` can cancel). Everything else is bit for bit on either kind of
CPU (the tests check both, the portable kind through ``ATEN_CPU_CAPABILITY=default``).
On CUDA, PyTorch uses another generator (Philox): gradviz's CUDA tensors get these CPU numbers.
"""
from __future__ import annotations

import functools
import math
import os

import numpy as np

from gradviz import _float_kernels
from gradviz._device import device as Device

DEFAULT_SEED = 67280421310721  # the seed PyTorch's generators start from
STATE_SIZE = 5056  # bytes in PyTorch's CPU generator state (see ``Generator.get_state``)
_WORDS = 624  # mt19937's state, in 32-bit words
_LOW_24_BITS, _LOW_53_BITS = np.uint64(2**24 - 1), np.uint64(2**53 - 1)
_LARGE_INTEGER_RANGE = 2**28  # from here on randint draws 64 bits, so that % stays nearly uniform
_BOX_MULLER_BLOCK = 16
_ROWS_PER_PASS = 2048  # Box-Muller rows transformed per pass (32768 numbers)


@functools.lru_cache(maxsize=16)  # seeding is a 624-step Python loop; tests and lessons reseed often
def mt19937_state(seed: int) -> np.ndarray:
    """The 624-word state that ``init_genrand`` makes from the low 32 bits of ``seed``."""
    seed &= 0xFFFFFFFF
    state = [seed]
    for index in range(1, _WORDS):
        previous = state[-1]
        state.append((1812433253 * (previous ^ (previous >> 30)) + index) & 0xFFFFFFFF)
    words = np.array(state, dtype=np.uint32)
    words.flags.writeable = False
    return words


class Generator:
    """A seeded stream of random numbers, PyTorch's ``torch.Generator`` for the CPU.

    It starts from PyTorch's default seed, so ``Generator()`` gives the values torch's does.
    """

    def __init__(self, device="cpu"):
        self._device = Device(device)
        self.manual_seed(DEFAULT_SEED)

    @property
    def device(self) -> Device:
        return self._device

    def manual_seed(self, seed) -> Generator:
        """Restart the stream from ``seed`` (an int; negative seeds count from 2^64, as in PyTorch)."""
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
        seed = int(seed)
        if not -2**63 <= seed < 2**64:
            raise ValueError("Overflow when unpacking long long")
        self._initial_seed = seed % 2**64
        self._set_words(mt19937_state(seed & 0xFFFFFFFF), _WORDS)
        self._fresh = True  # PyTorch's state reads (left=1, next=0) until the first draw
        self._next_normal = None  # the Box-Muller sine waiting for the next scalar normal draw
        return self

    def initial_seed(self) -> int:
        return self._initial_seed

    def seed(self) -> int:
        """Seed from the operating system's randomness; returns the seed."""
        seed = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(seed)
        return seed

    # -- the stream of words ------------------------------------------------------------------
    def _set_words(self, key: np.ndarray, position: int) -> None:
        """Load numpy's Mersenne Twister with ``key`` (624 words), next reading word ``position``
        (624: twist the state first)."""
        if not hasattr(self, "_words"):
            self._words = np.random.MT19937()
        self._words.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": position}}

    def words(self, count: int) -> np.ndarray:
        """The next ``count`` 32-bit words (in a uint64 array, so arithmetic on them cannot wrap)."""
        self._fresh = False
        return self._words.random_raw(count)

    def words64(self, count: int) -> np.ndarray:
        """The next ``count`` 64-bit values, each from two words, the first one the high half."""
        pairs = self.words(2 * count)
        return (pairs[0::2] << np.uint64(32)) | pairs[1::2]

    # -- saving and restoring, in PyTorch's byte layout -------------------------------------------------
    def get_state(self):
        """The state as PyTorch stores it: a uint8 tensor of 5056 bytes (seed, position, the 624
        words, the waiting normal number), so it can be saved and loaded like torch's."""
        from gradviz.tensor import from_numpy

        state = self._words.state["state"]
        position = int(state["pos"])
        next_index, left = (0, 1) if self._fresh else (position, _WORDS + 1 - position)
        raw = np.zeros(STATE_SIZE, dtype=np.uint8)
        raw[0:8] = np.array([self._initial_seed], np.uint64).view(np.uint8)
        raw[8:16] = np.array([left, 1], np.int32).view(np.uint8)
        raw[16:24] = np.array([next_index], np.uint64).view(np.uint8)
        raw[24:5016] = np.asarray(state["key"], np.uint64).view(np.uint8)
        if self._next_normal is not None:
            raw[5024:5032] = np.array([self._next_normal], np.float64).view(np.uint8)
            raw[5040:5044] = np.array([1], np.int32).view(np.uint8)
        return from_numpy(raw)

    def set_state(self, new_state) -> Generator:
        if not hasattr(new_state, "numpy"):
            raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__}")
        raw = np.ascontiguousarray(new_state.numpy()).ravel()
        if raw.dtype != np.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        if raw.size != STATE_SIZE:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {STATE_SIZE} but found the input "
                               f"RNG state size to be {raw.size}")
        next_index = int(raw[16:24].view(np.uint64)[0])
        self._initial_seed = int(raw[0:8].view(np.uint64)[0])
        self._set_words(raw[24:5016].view(np.uint64).astype(np.uint32), next_index or _WORDS)
        self._fresh = next_index == 0
        valid = int(raw[5040:5044].view(np.int32)[0])
        self._next_normal = float(raw[5024:5032].view(np.float64)[0]) if valid else None
        return self

    def __repr__(self) -> str:
        return f"<torch._C.Generator object at {hex(id(self))}>"


default_generator = Generator()


def manual_seed(seed) -> Generator:
    """Seed the default generator (``int(seed)``, as ``torch.manual_seed`` does); returns it."""
    return default_generator.manual_seed(int(seed))


def seed() -> int:
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    default_generator.set_state(new_state)


# -- from words to numbers ---------------------------------------------------------------------------
def _opmath(dtype: np.dtype) -> np.dtype:
    """The precision PyTorch computes a dtype's random numbers in (float16 in float32)."""
    return np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)


def unit_uniform(generator: Generator, count: int, dtype) -> np.ndarray:
    """``count`` floats in [0, 1): 24 random bits for float32, 53 for float64."""
    if np.dtype(dtype) == np.float64:
        return (generator.words64(count) & _LOW_53_BITS).astype(np.float64) * 2.0**-53
    return (generator.words(count) & _LOW_24_BITS).astype(np.float32) * np.float32(2.0**-24)


def uniform(generator: Generator, count: int, dtype, low: float = 0.0, high: float = 1.0) -> np.ndarray:
    """``rand`` and ``uniform_(low, high)``: ``x * (high - low) + low`` in the dtype's precision.

    A value that rounds up to ``high`` in the target dtype becomes ``low``: [low, high) stays half open.
    """
    dtype = np.dtype(dtype)
    opmath = _opmath(dtype)
    values = unit_uniform(generator, count, opmath)
    if (low, high) != (0.0, 1.0):
        low_op, high_op = opmath.type(low), opmath.type(high)
        values = _float_kernels.multiply_add(values, high_op - low_op, low_op, opmath)
    values = values.astype(dtype, copy=False)
    return np.where(values == dtype.type(high), dtype.type(low), values)


def normal(generator: Generator, count: int, dtype, mean: float = 0.0, std: float = 1.0,
           contiguous: bool = True) -> np.ndarray:
    """``randn`` and ``normal_(mean, std)``: Box-Muller, one pair at a time below 16 elements (or
    for a non-contiguous tensor), in blocks of 16 from there on."""
    dtype = np.dtype(dtype)
    if count >= _BOX_MULLER_BLOCK and contiguous:
        return _normal_blocks(generator, count, dtype, mean, std)
    return _normal_pairs(generator, count, mean, std).astype(dtype)


def _normal_pairs(generator: Generator, count: int, mean: float, std: float) -> np.ndarray:
    """PyTorch's ``normal_distribution<double>``: each draw makes two normal numbers, returns the
    cosine one and keeps the sine one in the generator for the next draw."""
    values = np.empty(count, dtype=np.float64)
    for index in range(count):
        sample = generator._next_normal
        if sample is None:
            u1, u2 = unit_uniform(generator, 2, np.float64).tolist()
            radius = math.sqrt(-2.0 * math.log1p(-u2))
            theta = 2.0 * math.pi * u1
            generator._next_normal = radius * math.sin(theta)
            sample = radius * math.cos(theta)
        else:
            generator._next_normal = None
        values[index] = sample
    if (mean, std) != (0.0, 1.0):
        values = _float_kernels.multiply_add(values, std, mean, np.dtype(np.float64))
    return values


def _normal_blocks(generator: Generator, count: int, dtype: np.dtype, mean: float, std: float) -> np.ndarray:
    """PyTorch's ``normal_fill``: uniforms for every element, Box-Muller on each full block of 16,
    and, when ``count`` is not a multiple of 16, 16 fresh uniforms for the last 16 elements."""
    opmath = _opmath(dtype)
    full_blocks, remainder = divmod(count, _BOX_MULLER_BLOCK)
    if dtype == opmath:  # float32 and float64 draw a uniform for every element, then transform
        uniforms = unit_uniform(generator, count, opmath)[:full_blocks * _BOX_MULLER_BLOCK]
    else:  # float16 draws block by block, so the leftover elements draw nothing the first time
        uniforms = unit_uniform(generator, full_blocks * _BOX_MULLER_BLOCK, opmath)
    values = np.empty(count, dtype=opmath)
    rows = uniforms.reshape(-1, 16)
    for start in range(0, full_blocks, _ROWS_PER_PASS):  # a slice at a time: numpy's temporaries stay in cache
        stop = min(start + _ROWS_PER_PASS, full_blocks)
        values[start * 16:stop * 16] = _box_muller_16(rows[start:stop], mean, std).ravel()
    if remainder:
        last = unit_uniform(generator, _BOX_MULLER_BLOCK, opmath).reshape(1, 16)
        values[count - _BOX_MULLER_BLOCK:] = _box_muller_16(last, mean, std).ravel()
    return values.astype(dtype, copy=False)


def _box_muller_16(blocks: np.ndarray, mean: float, std: float) -> np.ndarray:
    """Rows of 16 uniforms to rows of 16 normals: ``radius * cos`` in the first 8, ``radius * sin``
    in the last 8, each then ``* std + mean`` in one rounding (PyTorch calls fma)."""
    opmath = blocks.dtype
    u1, u2 = opmath.type(1) - blocks[:, :8], blocks[:, 8:]
    if opmath == np.float32 and _float_kernels.KERNELS.cephes_box_muller:
        radius = np.sqrt(np.float32(-2) * _float_kernels.cephes_log(u1))
        sine, cosine = _float_kernels.cephes_sincos(np.float32(2 * math.pi) * u2)
    elif opmath == np.float32:  # libm's float functions, approximated by the exact values rounded
        radius = np.sqrt(np.float32(-2) * np.log(u1.astype(np.float64)).astype(np.float32))
        theta = (2.0 * math.pi * u2.astype(np.float64)).astype(np.float32).astype(np.float64)
        sine, cosine = np.sin(theta).astype(np.float32), np.cos(theta).astype(np.float32)
    else:  # math.log is libm's log, as PyTorch calls it (numpy's own log differs in the last bit)
        log_u1 = np.array([math.log(value) for value in u1.ravel().tolist()]).reshape(u1.shape)
        radius = np.sqrt(-2.0 * log_u1)
        theta = 2.0 * math.pi * u2
        sine, cosine = np.sin(theta), np.cos(theta)
    normals = np.concatenate([radius * cosine, radius * sine], axis=1)
    if (mean, std) == (0.0, 1.0):
        return normals
    return _float_kernels.fma64(normals, std, mean) if opmath == np.float64 else \
        _float_kernels.fma32(normals, np.float32(std), np.float32(mean))


def integers(generator: Generator, count: int, low: int, high: int) -> np.ndarray:
    """``randint(low, high)``: ``word % (high - low) + low`` (int64)."""
    span = high - low
    words = generator.words64(count) if span >= _LARGE_INTEGER_RANGE else generator.words(count)
    return (words % np.uint64(span)).astype(np.int64) + low


def permutation(generator: Generator, n: int) -> np.ndarray:
    """``randperm(n)``: a Fisher-Yates shuffle that walks from the front, one word per position."""
    values = list(range(n))
    if n > 1:
        offsets = (generator.words(n - 1) % np.arange(n, 1, -1, dtype=np.uint64)).tolist()
        for index, offset in enumerate(offsets):
            other = index + offset
            values[index], values[other] = values[other], values[index]
    return np.array(values, dtype=np.int64)


def bernoulli(generator: Generator, count: int, p: float) -> np.ndarray:
    """``bernoulli_(p)``: True where a 53-bit uniform is below ``p``."""
    return unit_uniform(generator, count, np.float64) < p


def bernoulli_from(generator: Generator, probabilities: np.ndarray) -> np.ndarray:
    """``torch.bernoulli(p)``: one uniform per element (24 bits for float32 ``p``, 53 for float64)."""
    probabilities = np.asarray(probabilities)
    dtype = np.float64 if probabilities.dtype == np.float64 else np.float32
    flat = probabilities.astype(dtype, copy=False).ravel()
    return (unit_uniform(generator, flat.size, dtype) < flat).reshape(probabilities.shape)
