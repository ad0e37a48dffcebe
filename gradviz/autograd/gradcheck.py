"""``torch.autograd.gradcheck`` and ``gradgradcheck``: compare the gradients autograd computes with central
differences, as the custom-Function tutorials do before trusting a hand-written ``backward``.

``gradcheck`` builds both Jacobians of every output with respect to every input that requires grad (rows:
the input's elements, columns: the output's), the analytical one a row of ``autograd.grad`` per output
element, the numerical one ``(f(x + eps) - f(x - eps)) / 2eps`` per input element, and raises PyTorch's
``GradcheckError`` (a RuntimeError) with both printed when they differ beyond ``atol + rtol·|numerical|``.
``gradgradcheck`` runs ``gradcheck`` on the function that maps the inputs and some output gradients to
the inputs' gradients (recorded with ``create_graph=True``): the second derivatives.
"""
from __future__ import annotations

import warnings

import numpy as np


class GradcheckError(RuntimeError):
    """A gradient that does not match its central-difference estimate."""


def _as_tuple(value) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _differentiable(outputs) -> list:
    from gradviz.tensor import Tensor

    return [out for out in outputs if isinstance(out, Tensor) and out.dtype.is_floating_point]


def _numerical(func, inputs, index: int, eps: float) -> list:
    """One Jacobian per output: ``d outputs / d inputs[index]`` by central differences."""
    from gradviz.grad_mode import no_grad

    target = inputs[index]
    flat = target.data.view(-1)  # .data: the same memory without the version counter (saved tensors stay valid)
    columns = []
    for position in range(flat.numel()):
        original = flat[position].item()
        with no_grad():
            flat[position] = original + eps
        plus = [out.detach().clone() for out in _differentiable(_as_tuple(func(*inputs)))]
        with no_grad():
            flat[position] = original - eps
        minus = [out.detach().clone() for out in _differentiable(_as_tuple(func(*inputs)))]
        with no_grad():
            flat[position] = original
        columns.append([((p - m) / (2 * eps)).reshape(-1) for p, m in zip(plus, minus)])
    from gradviz.ops.combine import stack
    from gradviz.tensor import zeros

    jacobians = []
    for output in range(len(columns[0]) if columns else 0):
        rows = [column[output] for column in columns]
        jacobians.append(stack(rows) if rows else zeros(0))
    return jacobians


def _analytical(outputs, inputs, index: int) -> list:
    """One Jacobian per output: rows are the input's elements, one ``autograd.grad`` call per output element."""
    from gradviz.autograd.engine import grad
    from gradviz.tensor import zeros

    target = inputs[index]
    jacobians = []
    for out in outputs:
        columns = []
        for position in range(out.numel()):
            seed = zeros(out.numel(), dtype=out.dtype, device=out.device)  # (zeros_like keeps a transposed layout)
            seed[position] = 1
            if out.requires_grad:
                found, = grad(out, target, seed.view(out.shape), retain_graph=True, allow_unused=True)
            else:
                found = None
            columns.append(zeros(target.numel(), dtype=target.dtype) if found is None else found.reshape(-1))
        from gradviz.ops.combine import stack

        jacobians.append(stack(columns, 1) if columns else zeros(target.numel(), 0, dtype=target.dtype))
    return jacobians


def gradcheck(func, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, **options) -> bool:
    """True when every analytical Jacobian matches the numerical one; otherwise ``GradcheckError`` (or False
    with ``raise_exception=False``). The remaining options of PyTorch's gradcheck are accepted and ignored."""
    from gradviz.tensor import Tensor

    inputs = _as_tuple(inputs)
    wanted = [i for i, value in enumerate(inputs) if isinstance(value, Tensor) and value.requires_grad]
    for i in wanted:
        if inputs[i].dtype.name != "float64":
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point or complex. "
                          "This check will likely fail if all the inputs are not of double precision floating point "
                          "or complex. ", stacklevel=2)
    if not wanted:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the them have "
                         "requires_grad=True.")
    outputs = _differentiable(_as_tuple(func(*inputs)))
    for input_number, index in enumerate(wanted):
        numerical = _numerical(func, inputs, index, eps)
        analytical = _analytical(outputs, inputs, index)
        for output_number, (expected, actual) in enumerate(zip(numerical, analytical)):
            a, n = actual.detach().numpy(), expected.detach().numpy()
            if a.shape != n.shape or not np.allclose(a, n, rtol=rtol, atol=atol):
                if not raise_exception:
                    return False
                raise GradcheckError(f"Jacobian mismatch for output {output_number} with respect to input {index},\n"
                                     f"numerical:{expected}\nanalytical:{actual}\n")
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
                  gen_non_contig_grad_outputs: bool = False, raise_exception: bool = True, **options) -> bool:
    """``gradcheck`` of the first derivatives: the function from (inputs, output gradients) to the inputs'
    gradients, recorded with ``create_graph=True``. Without ``grad_outputs`` random ones are drawn."""
    from gradviz.autograd.engine import grad
    from gradviz.tensor import Tensor, randn

    inputs = _as_tuple(inputs)
    outputs = _differentiable(_as_tuple(func(*inputs)))
    if grad_outputs is None:
        grad_outputs = tuple(randn(tuple(out.shape), dtype=out.dtype).requires_grad_() for out in outputs)
    grad_outputs = _as_tuple(grad_outputs)
    count = len(inputs)
    wanted = [i for i, value in enumerate(inputs) if isinstance(value, Tensor) and value.requires_grad]

    def first_derivatives(*values):
        ins, seeds = values[:count], values[count:]
        outs = _differentiable(_as_tuple(func(*ins)))
        found = grad(outs, [ins[i] for i in wanted], seeds, create_graph=True, allow_unused=True)
        return tuple(g for g in found if g is not None)

    return gradcheck(first_derivatives, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
