"""Random numbers against PyTorch 2.13's CPU generator: the same seed must give the same values.

Each stream test seeds both libraries once and then walks sizes 1..100, calling ``rand``,
``randn``, ``uniform_``, ``normal_``, ``randint``, ``randperm`` and ``bernoulli_`` in turn, so every
call also checks that the previous ones left the generator (its position and the Box-Muller
value it keeps) exactly where torch's is. Values are compared bit for bit. The one exception is
documented in ``gradviz.random``: on CPUs where PyTorch runs its portable kernels, float32
``randn`` of 16+ elements uses libm's ``logf``/``sinf``/``cosf``, which gradviz rounds exactly
instead; that path is checked against a torch run with ``ATEN_CPU_CAPABILITY=default``.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gradviz as gv
from gradviz import _float_kernels, backends, random

SEEDS = [0, 1, 42, 2**32 + 5, 2**63 + 7, -1]
DTYPES = ["float32", "float64"]


def torch_or_skip():
    return pytest.importorskip("torch")


def stream(lib, seed: int, dtype: str, sizes=range(1, 101)) -> list:
    """Every value a mixed sequence of random calls draws from one seeded generator."""
    lib.manual_seed(seed)
    dt = getattr(lib, dtype)
    drawn = []
    for n in sizes:
        drawn.append(lib.rand(n, dtype=dt))
        drawn.append(lib.randn(n, dtype=dt))
        drawn.append(lib.empty(n, dtype=dt).uniform_(-0.37, 2.5))
        drawn.append(lib.empty(n, dtype=dt).normal_(0.3, 1.7))
        drawn.append(lib.randint(-3, 11, (n,)))
        drawn.append(lib.randint(0, 2**30, (n,)))
        drawn.append(lib.randperm(n))
        drawn.append(lib.empty(n, dtype=dt).bernoulli_(0.3))
        drawn.append(lib.randn(n % 5 + 1, dtype=dt))  # odd counts leave a Box-Muller value waiting
    return [t.numpy() for t in drawn]


def assert_bitwise_equal(ours, theirs, where: str) -> None:
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, where
    assert ours.tobytes() == theirs.tobytes(), \
        f"{where}: {np.count_nonzero(ours != theirs)} of {ours.size} values differ"


def float32_ulps(a, b) -> np.ndarray:
    return np.abs(a.view(np.int32).astype(np.int64) - b.view(np.int32).astype(np.int64))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("seed", SEEDS)
def test_streams_match_torch(seed, dtype):
    torch = torch_or_skip()
    ours, theirs = stream(gv, seed, dtype), stream(torch, seed, dtype)
    for index, (a, b) in enumerate(zip(ours, theirs)):
        where = f"call {index} (size {index // 9 + 1})"
        if dtype == "float32" and index % 9 in (1, 3) and a.size >= 16 and not _float_kernels.KERNELS.cephes_box_muller:
            assert float32_ulps(a, b).max() <= 3 or np.abs(a - b).max() <= 4 * np.spacing(np.float32(1)), where
        else:
            assert_bitwise_equal(a, b, where)


def test_seeding_and_default_seed_match_torch():
    torch = torch_or_skip()
    assert gv.Generator().initial_seed() == torch.Generator().initial_seed() == random.DEFAULT_SEED
    assert_bitwise_equal(gv.randn(40, generator=gv.Generator()).numpy(),
                         torch.randn(40, generator=torch.Generator()).numpy(), "unseeded Generator")
    for seed in (-5, 2**64 - 1, 7.9):
        assert gv.manual_seed(seed).initial_seed() == torch.manual_seed(seed).initial_seed()
    assert isinstance(gv.manual_seed(3), gv.Generator) and gv.manual_seed(3) is gv.default_generator
    assert gv.initial_seed() == 3
    assert repr(gv.Generator()).startswith("<torch._C.Generator object at 0x")
    assert gv.Generator().device == gv.device("cpu")


@pytest.mark.parametrize("code", [
    "torch.Generator().manual_seed(1.5)",
    "torch.manual_seed(2**64)",
    "torch.manual_seed(-2**63 - 1)",
    "torch.randn(2, dtype=torch.int64)",
    "torch.rand(2, dtype=torch.int64)",
    "torch.randn(-1)",
    "torch.randn(2.5)",
    "torch.randint(5, 3, (2,))",
    "torch.randperm(-2)",
    "torch.empty(3).uniform_(2, 1)",
    "torch.empty(3).normal_(0, -1)",
    "torch.empty(3).bernoulli_(1.5)",
    "torch.empty(3, dtype=torch.int64).normal_()",
    "torch.ones(3, requires_grad=True).normal_()",
    "torch.ones(3, requires_grad=True).uniform_()",
    "torch.randint(0, 4, (2,), requires_grad=True)",
    "torch.Generator().set_state(torch.zeros(10, dtype=torch.uint8))",
    "torch.Generator().set_state(torch.zeros(5056))",
    "torch.Generator().set_state([1, 2])",
])
def test_errors_match_torch(code):
    torch_or_skip()
    from parity import assert_same_error

    assert_same_error(code)


def test_generators_are_independent_streams():
    torch = torch_or_skip()

    def draws(lib):
        lib.manual_seed(0)
        first, second = lib.Generator().manual_seed(7), lib.Generator().manual_seed(7)
        return [lib.randn(3, generator=first), lib.randn(3), lib.rand(20, generator=second),
                lib.randn(3, generator=first), lib.randint(0, 9, (4,), generator=second),
                lib.randperm(6, generator=first), lib.empty(5).normal_(generator=second), lib.rand(2),
                lib.empty(17).uniform_(-1, 1, generator=first), lib.rand_like(lib.ones(2, 2), generator=second),
                lib.randn_like(lib.ones(3), generator=first), lib.randint_like(lib.ones(4), 5, generator=second),
                lib.normal(2.0, 3.0, (4,), generator=first), lib.bernoulli(lib.full((6,), 0.4), generator=second),
                lib.empty(4).bernoulli_(lib.tensor([0.1, 0.9, 0.5, 0.5]), generator=first)]

    for index, (a, b) in enumerate(zip(draws(gv), draws(torch))):
        assert_bitwise_equal(a.numpy(), b.numpy(), f"draw {index}")


def test_state_bytes_match_torch_and_round_trip():
    torch = torch_or_skip()
    for lib in (gv, torch):
        lib.manual_seed(11)
    for step in ("seeded", "randn(3)", "rand(700)", "randn(1)"):
        if step != "seeded":
            for lib in (gv, torch):
                eval(f"lib.{step}")
        np.testing.assert_array_equal(gv.get_rng_state().numpy(), torch.get_rng_state().numpy(), err_msg=step)
    saved = gv.get_rng_state()
    expected = gv.randn(5).numpy()  # starts with the Box-Muller value the generator was keeping
    gv.set_rng_state(saved)
    assert_bitwise_equal(gv.randn(5).numpy(), expected, "after set_rng_state")
    # a state saved by torch continues in gradviz, and the other way round
    torch.manual_seed(5)
    torch.randn(7)
    gv.set_rng_state(gv.tensor(torch.get_rng_state().numpy()))
    assert_bitwise_equal(gv.randn(9).numpy(), torch.randn(9).numpy(), "torch's state in gradviz")
    generator = torch.Generator().set_state(torch.from_numpy(gv.Generator().manual_seed(8).get_state().numpy()))
    assert_bitwise_equal(gv.rand(4, generator=gv.Generator().manual_seed(8)).numpy(),
                         torch.rand(4, generator=generator).numpy(), "gradviz's state in torch")


def test_factories_shapes_and_options_match_torch():
    torch = torch_or_skip()
    calls = ["rand(2, 3)", "rand((2, 3))", "rand([2, 3])", "rand(size=(2, 3))", "randn(())", "randn(torch.Size([4, 2]))",
             "randn(3, dtype=torch.float64)", "randint(10, (5,))", "randint(3, 9, size=(2, 2))",
             "randint(0, 5, (3,), dtype=torch.float32)", "randperm(6, dtype=torch.float64)", "rand(0)",
             "randn(2, 3, requires_grad=True)", "rand(3, dtype=torch.float16)", "randn(20, dtype=torch.float16)"]
    for call in calls:
        gv.manual_seed(4)
        torch.manual_seed(4)
        ours, theirs = eval(f"gv.{call}", {"gv": gv, "torch": gv}), eval(f"torch.{call}", {"torch": torch})
        assert repr(ours.dtype) == str(theirs.dtype) and tuple(ours.shape) == tuple(theirs.shape), call
        assert ours.requires_grad == theirs.requires_grad and ours.is_leaf, call
        assert_bitwise_equal(ours.detach().numpy(), theirs.detach().numpy(), call)


def test_filling_a_strided_view_follows_memory_order():
    torch = torch_or_skip()
    for lib in (gv, torch):
        lib.manual_seed(2)
    transposed = [lib.empty(3, 5).t() for lib in (gv, torch)]
    for method in ("uniform_()", "normal_()", "bernoulli_(0.5)"):
        for tensor in transposed:
            eval(f"tensor.{method}")
        assert_bitwise_equal(transposed[0].numpy(), transposed[1].numpy(), method)


def test_random_fill_in_the_graph_is_recorded_like_torch():
    torch_or_skip()
    from parity import assert_same

    for method in ("normal_()", "uniform_(-1, 1)", "bernoulli_(0.5)", "bernoulli_(torch.full((3,), 0.25))"):
        assert_same(f"torch.manual_seed(0)\nx = torch.ones(3, requires_grad=True)\ny = x * 2\ny.{method}\n"
                    "(y * x).sum().backward()\n")
    assert_same("torch.manual_seed(1)\np = torch.full((4,), 0.5, requires_grad=True)\nb = torch.bernoulli(p)\n"
                "(b * p).sum().backward()\n")


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_both_backends_give_the_same_numbers(backend):
    torch_or_skip()
    expected = stream(gv, 3, "float32", sizes=(1, 5, 16, 33))
    with backends.using(backend):
        drawn = stream(gv, 3, "float32", sizes=(1, 5, 16, 33))
        assert gv.rand(2)._backend.name == backend
    for index, (a, b) in enumerate(zip(drawn, expected)):
        assert_bitwise_equal(a, b, f"call {index}")


def _just_past_halfway(bits: int, count: int) -> list:
    """Integer pairs ``(A, B)`` of ``bits`` bits whose product is ``2^(2 bits - 1) + m``, with ``m`` so
    small that ``1 + A B 2^-(3 bits - 1)`` lies a hair past halfway between 1 and the next float:
    rounding the product first (as two roundings do) lands exactly on halfway."""
    target, rng, pairs = 2 ** (2 * bits - 1), np.random.default_rng(0), []
    while len(pairs) < count:
        a = math.isqrt(target) + int(rng.integers(0, 2 ** (bits - 2)))  # a, b < 2^bits
        b = -(-target // a)
        if a * b - target < 2 ** (bits - 5):
            pairs.append((a, b))
    return pairs


def test_fused_multiply_add_rounds_once_even_halfway():
    """``1 + a b`` a hair past halfway to the next float: it must round up, where rounding twice
    (product, then sum) would land on halfway and round to even, down to 1."""
    for a, b in _just_past_halfway(53, 20):
        assert _float_kernels.fma64(math.ldexp(a, -52), math.ldexp(b, -106), 1.0) == 1 + 2.0**-52
    for a, b in _just_past_halfway(24, 20):
        result = _float_kernels.fma32(np.float32(math.ldexp(a, -23)), np.float32(math.ldexp(b, -48)), np.float32(1))
        assert result == np.float32(1 + 2.0**-23)


def test_fused_multiply_add_rounds_once():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(2000), rng.standard_normal(2000)
    c = np.where(rng.random(2000) < 0.5, rng.standard_normal(2000), -(a * b) + rng.standard_normal(2000) * 1e-17)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    c32 = (-(a32.astype(np.float64) * b32) + rng.standard_normal(2000) * 1e-9).astype(np.float32)
    _assert_fma_rounds_once(a, b, c, c32)


def test_fused_multiply_add_rounds_once_across_magnitudes():
    """Products over 16 decades, nearly cancelled by ``c``: where rounding twice shows."""
    rng = np.random.default_rng(2024)
    a = rng.standard_normal(3000) * 10.0 ** rng.integers(-8, 8, 3000)
    b = rng.standard_normal(3000)
    c = -a * b * (1 + rng.standard_normal(3000) * 1e-9)
    _assert_fma_rounds_once(a, b, c, c.astype(np.float32))


def _assert_fma_rounds_once(a, b, c, c32) -> None:
    """fma64(a, b, c) and fma32 of the float32 values equal the exact ``a * b + c`` rounded once."""
    from fractions import Fraction

    exact = [float(Fraction(x) * Fraction(y) + Fraction(z)) for x, y, z in zip(a, b, c)]
    np.testing.assert_array_equal(_float_kernels.fma64(a, b, c), exact)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    exact32 = [_round_to_float32(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)))
               for x, y, z in zip(a32, b32, c32)]
    np.testing.assert_array_equal(_float_kernels.fma32(a32, b32, c32), np.array(exact32, np.float32))


def _round_to_float32(value) -> np.float32:
    """The float32 nearest to an exact fraction (ties to even), by comparing the neighbours."""
    from fractions import Fraction

    guess = np.float32(float(value))
    candidates = (np.nextafter(guess, np.float32(-np.inf)), guess, np.nextafter(guess, np.float32(np.inf)))
    return min(candidates, key=lambda c: (abs(Fraction(float(c)) - value), int(np.array(c).view(np.int32)) & 1))


def test_mt19937_seeding_is_matsumoto_nishimuras():
    # numpy's legacy RandomState seeds with init_genrand for 32-bit seeds: the same state
    for seed in (0, 5489, 2**32 - 1):
        legacy = np.random.RandomState(seed).get_state()[1]
        np.testing.assert_array_equal(random.mt19937_state(seed), legacy)


_DEFAULT_KERNELS_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import torch
    sys.path.insert(0, {root!r})
    sys.path.insert(0, {tests!r})
    import gradviz as gv
    from test_random import stream
    assert gv._float_kernels.KERNELS.name == "default", gv._float_kernels.KERNELS
    assert torch.backends.cpu.get_cpu_capability() == "DEFAULT"
    result = {{}}
    for seed in (0, 42):
        for dtype in ("float32", "float64"):
            ours, theirs = stream(gv, seed, dtype), stream(torch, seed, dtype)
            result[f"{{seed}} {{dtype}}"] = [[a.tobytes().hex(), b.tobytes().hex(), str(a.dtype)]
                                             for a, b in zip(ours, theirs)]
    print(json.dumps(result))
""")


def test_streams_match_torchs_portable_kernels():
    """torch run with ``ATEN_CPU_CAPABILITY=default`` (no fused multiply-add, libm's Box-Muller):
    gradviz follows the variable too and matches bit for bit, but for float32 ``randn`` of 16+
    values, which agree within 3 ulps (``normal_(0.3, 1.7)``: within 4 ulps of 1)."""
    torch_or_skip()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    script = _DEFAULT_KERNELS_SCRIPT.format(root=root, tests=os.path.join(root, "tests"))
    environment = dict(os.environ, ATEN_CPU_CAPABILITY="default")
    output = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True,
                            env=environment).stdout
    box_muller_differences = 0
    for key, calls in json.loads(output).items():
        for index, (ours, theirs, dtype) in enumerate(calls):
            a, b = (np.frombuffer(bytes.fromhex(text), dtype=dtype) for text in (ours, theirs))
            if dtype == "float32" and index % 9 in (1, 3) and a.size >= 16:
                assert float32_ulps(a, b).max() <= 3 or np.abs(a - b).max() <= 4 * np.spacing(np.float32(1)), key
                box_muller_differences += np.count_nonzero(a != b)
            else:
                assert_bitwise_equal(a, b, f"{key} call {index}")
    assert box_muller_differences > 0  # libm's float functions really are not correctly rounded
