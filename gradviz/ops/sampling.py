"""Random fills recorded as PyTorch records them: the new values do not depend on the old ones.

``x.normal_()`` on a tensor in the graph gives it the node ``NormalBackward0`` (``uniform_``:
``UniformBackward0``; ``bernoulli_(p)``: ``BernoulliBackward2``, or ``BernoulliBackward1`` with a
tensor of probabilities; ``torch.bernoulli(p)``: ``BernoulliBackward0``). Each sends a zero gradient
back: the drawn numbers are constants as far as the chain rule is concerned. The numbers themselves
are drawn by ``gradviz.random`` before the node is made; ``forward`` only hands them on.
"""
from __future__ import annotations

from gradviz.autograd.function import OpFunction
from gradviz.tensor import Tensor


class _RandomFill(OpFunction):
    """A node whose output is freshly drawn ``values``; every input gets a zero gradient."""

    inputs = ("self",)
    derivatives = {"self": ("zeros_like(grad)", r"0")}

    def forward(ctx, self, values):
        return values

    def backward(ctx, grad):
        return ctx.backend.zeros_like(grad)

    def backward_graph(ctx, grad):
        """``zeros_like(grad)``: zeros with no history (under ``create_graph`` the buffer that sums them
        with another gradient records an AddBackward0 with an empty edge, as PyTorch's does)."""
        return _constant(ctx, ctx.backend.zeros_like(grad._data))


class NormalBackward0(_RandomFill):
    pass


class UniformBackward0(_RandomFill):
    pass


class BernoulliBackward0(_RandomFill):
    """``torch.bernoulli(p)``: draws 0 or 1 with the probabilities ``p``."""


class BernoulliBackward2(_RandomFill):
    """``x.bernoulli_(p)`` with a number ``p``."""


class BernoulliBackward1(OpFunction):
    """``x.bernoulli_(p)`` with a tensor ``p``: both get a zero gradient."""

    inputs = ("self", "p")
    derivatives = {"self": ("zeros_like(grad)", r"0"), "p": ("zeros_like(p)", r"0")}

    def forward(ctx, self, p, values):
        ctx.p_meta = (tuple(p.shape), p.dtype, p.device)
        return values

    def backward(ctx, grad):
        backend = ctx.backend
        return (backend.zeros_like(grad) if ctx.needs_input_grad[0] else None,
                _zeros(backend, *ctx.p_meta) if ctx.needs_input_grad[1] else None)


    def backward_graph(ctx, grad):
        backend = ctx.backend
        return (_constant(ctx, backend.zeros_like(grad._data)) if ctx.needs_input_grad[0] else None,
                _constant(ctx, _zeros(backend, *ctx.p_meta)) if ctx.needs_input_grad[1] else None)


def _constant(ctx, array) -> Tensor:
    return Tensor._make(array, backend=ctx.backend)


def _zeros(backend, shape, dtype, device):
    return backend.full(shape, 0, dtype, device)


RECORDED_FILLS = {"normal": NormalBackward0, "uniform": UniformBackward0, "bernoulli": BernoulliBackward2,
                  "bernoulli_tensor": BernoulliBackward1}


# -- torch.normal with a tensor of means, of standard deviations, or both --------------------------------------
# PyTorch fills the output with normal numbers first (``normal_(0, std)`` for a number std, else
# ``normal_(0, 1)``), then moves them: ``+ mean`` for a number std, else ``* std + mean`` in two roundings.
# The nodes send zeros (the draw does not depend on mean or std as far as PyTorch's chain rule goes).
class _NormalOfTensors(OpFunction):
    def forward(ctx, *args):
        *inputs, values = args
        ctx.save(**{f"{name}_sym_sizes": tuple(tensor.shape) for name, tensor in zip(ctx.inputs, inputs)})
        ctx.metas = tuple((tuple(tensor.shape), tensor.dtype, tensor.device) for tensor in inputs)
        return values

    def backward(ctx, grad):
        backend = ctx.backend
        zeros = tuple(_zeros(backend, shape, dtype, backend.device_of(grad)) if needed else None
                      for (shape, dtype, _), needed in zip(ctx.metas, ctx.needs_input_grad))
        return zeros if len(zeros) > 1 else zeros[0]

    def backward_graph(ctx, grad):
        results = ctx.backward(grad._data)
        results = results if type(results) is tuple else (results,)
        return tuple(None if r is None else _constant(ctx, r) for r in results)


class NormalBackward1(_NormalOfTensors):
    """``torch.normal(mean_tensor, std_number)``."""

    inputs = ("mean",)
    derivatives = {"mean": ("at::zeros_symint(mean.sym_sizes(), grad.options())", r"0")}


class NormalBackward2(_NormalOfTensors):
    """``torch.normal(mean_number, std_tensor)``."""

    inputs = ("std",)
    derivatives = {"std": ("at::zeros_symint(std.sym_sizes(), grad.options())", r"0")}


class NormalBackward3(_NormalOfTensors):
    """``torch.normal(mean_tensor, std_tensor)``."""

    inputs = ("mean", "std")
    derivatives = {"mean": ("at::zeros_symint(mean.sym_sizes(), grad.options())", r"0"),
                   "std": ("at::zeros_symint(std.sym_sizes(), grad.options())", r"0")}


def _check_std_tensor(std) -> None:
    backend = std._backend
    if std.numel() and bool(backend.any(backend.lt(std._data, 0))):
        raise RuntimeError("normal expects all elements of std >= 0.0")


def _standard_normals(generator, shape, dtype, backend, device, std=1.0):
    import math

    from gradviz import random as gradviz_random

    values = gradviz_random.normal(generator or gradviz_random.default_generator, math.prod(shape), dtype.numpy, 0.0,
                                   float(std))
    return backend.array(values.reshape(shape), dtype, device)


def normal(mean, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None,
           pin_memory: bool = False, requires_grad: bool = False):
    """``torch.normal`` in all its forms: ``(mean_tensor, std=1.0)``, ``(mean, std_tensor)``,
    ``(mean_tensor, std_tensor)`` (broadcast together), and ``(mean, std, size)`` of numbers."""
    from gradviz import _dtype
    from gradviz.grad_mode import _state as grad_state
    from gradviz.ops._util import broadcast_shapes
    from gradviz.tensor import _check_random_dtype, normal as normal_of_numbers

    if not isinstance(mean, Tensor) and not isinstance(std, Tensor):
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments - got (float, float), but "
                            "expected one of:\n * (Tensor mean, Tensor std, *, torch.Generator generator = None, Tensor "
                            "out = None)\n * (Tensor mean, float std = 1, *, torch.Generator generator = None, Tensor "
                            "out = None)\n * (float mean, Tensor std, *, torch.Generator generator = None, Tensor out = "
                            "None)\n * (float mean, float std, tuple of ints size, *, torch.Generator generator = None, "
                            "Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, torch.device device "
                            "= None, bool pin_memory = False, bool requires_grad = False)\n")
        result = normal_of_numbers(mean, std, size, generator=generator, dtype=dtype, device=device,
                                   requires_grad=requires_grad)
        return result if out is None else _write_out(result, out)
    like = mean if isinstance(mean, Tensor) else std
    backend, device = like._backend, like.device
    _check_random_dtype(like.dtype, "normal_kernel_cpu")
    if not isinstance(std, Tensor):  # a tensor of means: normal_(0, std), then + mean
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
        shape = tuple(mean.shape)
        values = backend.add(_standard_normals(generator, shape, mean.dtype, backend, device, std), mean._data)
        node, inputs = NormalBackward1, (mean,)
    else:
        _check_std_tensor(std)
        shape = tuple(std.shape) if not isinstance(mean, Tensor) else broadcast_shapes(tuple(mean.shape), tuple(std.shape))
        values = _standard_normals(generator, shape, like.dtype, backend, device)
        moved = backend.mul(values, std._data)
        if isinstance(mean, Tensor):
            moved = backend.add(backend.astype(moved, like.dtype), mean._data)
            node, inputs = NormalBackward3, (mean, std)
        else:
            moved = backend.add(backend.astype(moved, like.dtype), mean)
            node, inputs = NormalBackward2, (std,)
        values = moved
    values = backend.astype(values, _dtype.from_any(like.dtype)) if values.dtype != like._data.dtype else values
    if grad_state.enabled and any(tensor.requires_grad for tensor in inputs):
        result = node.apply(*inputs, values)
    else:
        result = Tensor._make(values, backend=backend)
    return result if out is None else _write_out(result, out)


def _write_out(result, out):
    from gradviz.ops.arithmetic import write_out

    return write_out("normal", result, out)


# -- exponential_, poisson, multinomial, Tensor.bernoulli (the tensor API sweep) ------------------------------------
# All draw torch's numbers after ``manual_seed``: each uses 53-bit double uniforms from the mt19937 stream, one per
# element (poisson: as many as its rejection loop asks for), in the order torch's CPU kernels walk the elements.
class ExponentialBackward0(_RandomFill):
    """``x.exponential_(lambd)`` on a tensor in the graph."""


class PoissonBackward0(_RandomFill):
    """``torch.poisson(rates)``: the draw sends a zero gradient back to the rates."""

    derivatives = {"self": ("zeros_like(self)", r"0")}


RECORDED_FILLS["exponential"] = ExponentialBackward0


def _default(generator):
    from gradviz import random as gradviz_random

    return generator or gradviz_random.default_generator


def exponential_values(generator, count: int, lambd: float):
    """``-1 / lambd * log1p(-u)`` in double, u a 53-bit uniform (torch's CPU ``exponential_distribution``)."""
    import math

    import numpy as np

    from gradviz import random as gradviz_random

    uniforms = gradviz_random.unit_uniform(_default(generator), count, np.float64).tolist()
    scale = -1.0 / lambd
    return np.array([scale * math.log1p(-u) for u in uniforms], dtype=np.float64)


def exponential_(self, lambd=1.0, *, generator=None):
    """Fill with numbers drawn from the exponential distribution of rate ``lambd``."""
    if not self.dtype.is_floating_point:
        from gradviz import _dtype

        raise RuntimeError("Exponential distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {_dtype.SCALAR_TYPE_NAMES[self.dtype.name]}")
    self._check_in_place()
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd:g}")
    return self._fill_random(exponential_values(generator, self.numel(), float(lambd)), "exponential")


def _poisson_sample(rate: float, draw) -> int:
    """torch's ``sample_poisson``: a product of uniforms below rate 10, Hoermann's transformed rejection from 10 on."""
    import math

    if rate >= 10:
        slam, loglam = math.sqrt(rate), math.log(rate)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        while True:
            u = draw() - 0.5
            v = draw()
            us = 0.5 - abs(u)
            k = math.floor((2 * a / us + b) * u + rate + 0.43)
            if us >= 0.07 and v <= vr:
                return k
            if k < 0 or (us < 0.013 and v > us):
                continue
            if math.log(v) + math.log(invalpha) - math.log(a / (us * us) + b) <= -rate + k * loglam - math.lgamma(k + 1):
                return k
    if rate == 0:
        return 0
    limit, count, product = math.exp(-rate), 0, 1.0
    while True:
        product *= draw()
        if product > limit:
            count += 1
        else:
            return count


def poisson(input, generator=None):
    """Each element a Poisson draw with the element as its rate (a float tensor of counts)."""
    import numpy as np

    from gradviz import _dtype, random as gradviz_random
    from gradviz.grad_mode import _state as grad_state

    if not input.dtype.is_floating_point:
        raise _dtype.not_implemented("poisson_cpu", input.dtype)
    backend = input._backend
    rates = np.ascontiguousarray(backend.to_numpy(input._data), dtype=np.float64)
    if rates.size and not bool((rates >= 0).all()):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    stream = _default(generator)

    def draw() -> float:
        return float(gradviz_random.unit_uniform(stream, 1, np.float64)[0])

    counts = np.array([_poisson_sample(rate, draw) for rate in rates.ravel().tolist()], dtype=np.float64)
    values = backend.array(counts.reshape(rates.shape), input.dtype, input.device)
    if grad_state.enabled and input.requires_grad:
        return PoissonBackward0.apply(input, values)
    return Tensor._make(values, backend=backend)


def multinomial(input, num_samples: int, replacement: bool = False, *, generator=None, out=None):
    """Indices drawn from each row's distribution (weights need not sum to 1). Without replacement, or for one
    sample, torch's way: ``argmax``/``topk`` of ``p / q`` with ``q`` exponential; with replacement, a binary search
    of each uniform in the row's normalized running sum."""
    import numpy as np

    from gradviz import _dtype, random as gradviz_random

    if not 1 <= input.ndim <= 2:
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not input.dtype.is_floating_point:
        raise RuntimeError("multinomial only supports floating-point dtypes for input, got: "
                           f"{_dtype.SCALAR_TYPE_NAMES[input.dtype.name]}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    categories = input.shape[-1]
    if not replacement and num_samples > categories:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    backend = input._backend
    probabilities = np.ascontiguousarray(backend.to_numpy(input._data))
    rows = probabilities.reshape(-1, categories)
    stream = _default(generator)
    if not replacement or num_samples == 1:
        if not (np.all(rows < np.inf) and np.all(rows >= 0)) if rows.size else False:
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if bool((rows.sum(axis=1) == 0).any()):
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        q = exponential_values(stream, rows.size, 1.0).astype(rows.dtype).reshape(rows.shape)
        keys = rows / q
        # topk's order: largest first; ties broken toward the lower index (argmax's rule)
        picked = np.argsort(-keys, axis=1, kind="stable")[:, :num_samples]
    else:
        picked = np.empty((rows.shape[0], num_samples), dtype=np.int64)
        for index, row in enumerate(rows):
            if bool((row < 0).any()):
                raise RuntimeError("invalid multinomial distribution (encountering probability entry < 0)")
            if not bool(np.isfinite(row).all()):
                raise RuntimeError("invalid multinomial distribution (encountering probability entry = infinity or NaN)")
            cumulative = np.cumsum(row, dtype=row.dtype)
            total = cumulative[-1]
            if not total > 0:
                raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
            cumulative = cumulative / total
            uniforms = gradviz_random.unit_uniform(stream, num_samples, np.float64)
            picked[index] = np.searchsorted(cumulative.astype(np.float64), uniforms, side="left")
    picked = picked.reshape(tuple(input.shape[:-1]) + (num_samples,)).astype(np.int64)
    result = Tensor._make(backend.array(picked, _dtype.int64, input.device), backend=backend)
    if out is not None:
        from gradviz.ops.arithmetic import write_out

        return write_out("multinomial", result, out)
    return result


def bernoulli_method(self, p=None, *, generator=None):
    """``x.bernoulli()``: each element the probability of a 1 (checked to lie in [0, 1]); ``x.bernoulli(p)``: ``p``."""
    from gradviz.tensor import bernoulli

    if p is None and self.numel():
        backend = self._backend
        data = backend.to_numpy(self._data)
        if not bool(((data >= 0) & (data <= 1)).all()):
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message "
                               "be improved?  If so, please report an enhancement request to PyTorch.)")
    return bernoulli(self, p, generator=generator)


# -- cauchy_, geometric_, log_normal_ (the tensor API sweep): torch's transforms of its stream, bit for bit ------------
class CauchyBackward0(_RandomFill):
    """``x.cauchy_(median, sigma)`` on a tensor in the graph."""


class GeometricBackward0(_RandomFill):
    """``x.geometric_(p)`` on a tensor in the graph."""


class LogNormalBackward0(_RandomFill):
    """``x.log_normal_(mean, std)`` on a tensor in the graph."""


RECORDED_FILLS.update(cauchy=CauchyBackward0, geometric=GeometricBackward0, log_normal=LogNormalBackward0)


def _double_uniforms(generator, count: int) -> list:
    import numpy as np

    from gradviz import random as gradviz_random

    return gradviz_random.unit_uniform(_default(generator), count, np.float64).tolist()


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """``median + sigma * tan(pi * (u - 0.5))``, u a 53-bit uniform."""
    import math

    import numpy as np

    if not self.dtype.is_floating_point:
        raise RuntimeError("Cauchy distribution is a continuous probability distribution. dtype must be a floating "
                           f"point but you specified {self.dtype}")
    self._check_in_place()
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma:g}")
    median, sigma = float(median), float(sigma)
    values = [median + sigma * math.tan(math.pi * (u - 0.5)) for u in _double_uniforms(generator, self.numel())]
    return self._fill_random(np.array(values, dtype=np.float64), "cauchy")


def geometric_(self, p, *, generator=None):
    """The number of trials to the first success: ``ceil(log(u) / log1p(-p))``, u a 53-bit uniform."""
    import math

    import numpy as np

    self._check_in_place()
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p:g}")
    scale = math.log1p(-float(p))
    values = [math.ceil(math.log(u) / scale) if u > 0 else math.inf for u in _double_uniforms(generator, self.numel())]
    return self._fill_random(np.array(values, dtype=np.float64), "geometric")


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """``exp`` of normal numbers drawn one pair at a time (torch's ``lognormal_distribution<double>``)."""
    import numpy as np

    from gradviz import _dtype, random as gradviz_random

    if not self.dtype.is_floating_point:
        raise _dtype.not_implemented("log_normal_cpu", self.dtype)
    self._check_in_place()
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std:g}")
    normals = gradviz_random._normal_pairs(_default(generator), self.numel(), float(mean), float(std))
    return self._fill_random(np.exp(normals), "log_normal")


# -- random_: whole numbers, as torch's random_ kernels draw them -------------------------------------------------------
class RandomBackward0(_RandomFill):
    """``x.random_(from, to)`` on a tensor in the graph."""


class RandomBackward1(_RandomFill):
    """``x.random_(to)`` on a tensor in the graph."""


class RandomBackward2(_RandomFill):
    """``x.random_()`` on a tensor in the graph."""


RECORDED_FILLS.update(random_from_to=RandomBackward0, random_to=RandomBackward1, random=RandomBackward2)

# random_() with no range: a word modulo this (the type's largest integer + 1; for a float type the largest
# integer it holds exactly, + 1, so that 2**digits itself can come out), from 64 bits for int64 and float64
_FULL_RANGE = {"bool": 2, "uint8": 2**8, "int8": 2**7, "int16": 2**15, "int32": 2**31, "int64": 2**63,
               "float16": 2**11 + 1, "float32": 2**24 + 1, "float64": 2**53 + 1}
_CPP_NAMES = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char", "int16": "short int", "int32": "int",
              "int64": "long int", "float16": "c10::Half", "float32": "float", "float64": "double"}


def random_(self, *args, generator=None, **bounds):
    """Fill with whole numbers: ``random_()`` over the dtype's range (for floats, [0, 2**mantissa]),
    ``random_(to)`` over [0, to), ``random_(from, to)`` over [from, to)."""
    import numpy as np

    if len(args) > 2 or set(bounds) - {"from", "to"} or (bounds and "to" not in bounds and len(args) < 2):
        given = ", ".join(f"{key}={type(value).__name__}" for key, value in bounds.items())
        raise TypeError(f"random_() received an invalid combination of arguments - got ({given}, ), but expected one "
                        "of: (*, torch.Generator generator = None), (int to, *, torch.Generator generator = None), "
                        "(int from, int to, *, torch.Generator generator = None)")
    if len(args) == 1:
        bounds["to"] = args[0]
    elif len(args) == 2:
        bounds["from"], bounds["to"] = args
    name = self.dtype.name
    generator = _default(generator)
    if bounds.get("to") is None:
        self._check_in_place()
        words = generator.words64(self.numel()) if name in ("int64", "float64") else generator.words(self.numel())
        values = words & np.uint64(1) if name == "bool" else words % np.uint64(_FULL_RANGE[name])
        return self._fill_random(values.astype(np.int64), "random")
    low, high = int(bounds.get("from", 0)), int(bounds["to"])
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    _check_random_bounds(self.dtype, low, high)
    self._check_in_place()
    from gradviz import random as gradviz_random

    values = gradviz_random.integers(generator, self.numel(), low, high)
    return self._fill_random(values, "random_from_to" if "from" in bounds else "random_to")


def _check_random_bounds(dtype, low: int, high: int) -> None:
    """PyTorch's checks of [from, to) against the dtype: an error outside its range, and for a float
    type a warning outside the integers it holds exactly."""
    import warnings

    import numpy as np

    name = dtype.name
    if dtype.is_floating_point:
        limit = float(np.finfo(dtype.numpy).max)
        smallest, largest = -limit, limit
    elif name == "bool":
        smallest, largest = 0, 1
    else:
        smallest, largest = int(np.iinfo(dtype.numpy).min), int(np.iinfo(dtype.numpy).max)
    for what, value in (("from", low), ("to - 1", high - 1)):
        if not smallest <= value <= largest:
            raise RuntimeError(f"{what} is out of bounds for {_CPP_NAMES[name]}")
    if dtype.is_floating_point:
        digits = np.finfo(dtype.numpy).nmant + 1
        for what, value in (("from", low), ("to - 1", high - 1)):
            if not -(2**digits) <= value <= 2**digits:
                warnings.warn(f"{what} is out of bounds [-(2^{digits}), 2^{digits}]. Due to precision limitations "
                              f"{_CPP_NAMES[name]} can support discrete uniform distribution only within this range. "
                              "This warning will become an error in version 1.7 release, please fix the code in "
                              "advance (Triggered internally at "
                              "/__w/pytorch/pytorch/aten/src/ATen/native/DistributionTemplates.h:111.)",
                              UserWarning, stacklevel=3)
