"""``torch.autograd.functional``: Jacobians, Hessians and their products, built on ``autograd.grad``.

Each function takes ``func`` and its ``inputs`` (a tensor or a tuple of tensors) and answers in
the same shape PyTorch does: a tensor for a tensor, tuples for tuples. They are written the way
PyTorch's are, with reverse mode only, so each step is an ordinary (possibly recorded) backward
pass that gradviz can draw:

* ``vjp(func, inputs, v)``: ``v^T J``, one backward pass from the outputs with ``v``;
* ``jvp(func, inputs, v)``: ``J v`` by the double-backward trick: ``u -> J^T u`` is linear in a
  dummy ``u`` (zeros that require grad), and differentiating it with respect to ``u`` gives ``J v``;
* ``jacobian``: one backward pass per output element (the rows of ``J``);
* ``hessian``: the Jacobian of the gradient (the gradient recorded with ``create_graph=True``);
* ``hvp``/``vhp``: ``H v`` and ``v^T H`` from the recorded gradient.

Without ``create_graph`` the results are detached, as in PyTorch; with it they keep their graph.
"""
from __future__ import annotations

from gradviz.autograd.engine import grad as autograd_grad
from gradviz.grad_mode import enable_grad


def _as_tuple(value, arg_name: str, fn_name: str) -> tuple:
    """``(was_tuple, tuple of tensors)``, with PyTorch's TypeError for anything else."""
    from gradviz.tensor import Tensor

    was_tuple = isinstance(value, tuple)
    values = value if was_tuple else (value,)
    for index, item in enumerate(values):
        if not isinstance(item, Tensor):
            if was_tuple:
                raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                                f"the value at index {index} has type {type(item)}.")
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but the "
                            f"given {arg_name} has type {type(item)}.")
    return was_tuple, values


def _untuple(was_tuple: bool, values):
    return values if was_tuple else values[0]


def _prepare_inputs(inputs: tuple, create_graph: bool) -> tuple:
    """Fresh tensors to differentiate with respect to: views keeping the caller's graph when
    ``create_graph`` (so the result can be differentiated further), detached copies otherwise."""
    prepared = []
    for tensor in inputs:
        if create_graph and tensor.requires_grad:
            prepared.append(tensor.view_as(tensor))
        else:
            prepared.append(tensor.detach().requires_grad_(True))
    return tuple(prepared)


def _finish(values: tuple, create_graph: bool) -> tuple:
    return values if create_graph else tuple(None if v is None else v.detach() for v in values)


def _grad(outputs: tuple, inputs: tuple, grad_outputs=None, create_graph: bool = False,
          retain_graph: bool | None = None) -> tuple:
    """``autograd.grad`` over the outputs that require grad only; None for inputs not reached."""
    grad_outputs = grad_outputs if grad_outputs is not None else (None,) * len(outputs)
    pairs = [(out, g) for out, g in zip(outputs, grad_outputs) if out is not None and out.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return autograd_grad([p[0] for p in pairs], inputs, [p[1] for p in pairs], retain_graph=retain_graph,
                         create_graph=create_graph, allow_unused=True)


def _zeros_where_none(grads: tuple, like: tuple) -> tuple:
    from gradviz.tensor import zeros_like

    return tuple(zeros_like(ref) if g is None else g for g, ref in zip(grads, like))


def _check_v(v: tuple, against: tuple, was_tuple: bool) -> None:
    if len(v) != len(against):
        raise RuntimeError(f"v is a tuple of invalid length: should be {len(against)} but got {len(v)}.")
    for index, (vector, reference) in enumerate(zip(v, against)):
        if tuple(vector.shape) != tuple(reference.shape):
            where = f"Entry {index} in v" if was_tuple else "v"
            raise RuntimeError(f"{where} has invalid size: should be {reference.shape} but got {vector.shape}.")


def _inputs_and_v(inputs, v, create_graph: bool, fn_name: str) -> tuple:
    """The prepared inputs and the vector ``v`` shaped like them (ones for a one-element input)."""
    from gradviz.tensor import ones_like

    inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _prepare_inputs(inputs, create_graph)
    if v is None:
        if len(inputs) != 1 or inputs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the input to the user-provided function is a single "
                               "Tensor with a single element.")
        return inputs_tuple, inputs, (ones_like(inputs[0]),)
    v_tuple, v = _as_tuple(v, "v", fn_name)
    _check_v(v, inputs, v_tuple)
    return inputs_tuple, inputs, v


def _outputs(func, inputs: tuple, fn_name: str):
    with enable_grad():
        raw = func(*inputs)
    was_tuple, outputs = _as_tuple(raw, "outputs of the user-provided function", fn_name)
    return was_tuple, outputs


def _default_v(outputs: tuple) -> tuple:
    from gradviz.tensor import ones_like

    if len(outputs) != 1 or outputs[0].numel() != 1:
        raise RuntimeError("The vector v can only be None if the user-provided function returns a single Tensor "
                           "with a single element.")
    return (ones_like(outputs[0]),)


def vjp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), v^T J)``: the vector-Jacobian product, one backward pass."""
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
    inputs = _prepare_inputs(inputs, create_graph)
    outputs_tuple, outputs = _outputs(func, inputs, "vjp")
    if v is None:
        v = _default_v(outputs)
    else:
        v_tuple, v = _as_tuple(v, "v", "vjp")
        _check_v(v, outputs, v_tuple)
    grads = _zeros_where_none(_grad(outputs, inputs, v, create_graph=create_graph), inputs)
    return (_untuple(outputs_tuple, _finish(outputs, create_graph)),
            _untuple(inputs_tuple, _finish(grads, create_graph)))


def jvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), J v)``: the Jacobian-vector product, by the double-backward trick."""
    from gradviz.tensor import zeros_like

    inputs_tuple, inputs, v = _inputs_and_v(inputs, v, create_graph, "jvp")
    outputs_tuple, outputs = _outputs(func, inputs, "jvp")
    dummies = tuple(zeros_like(out).requires_grad_(True) for out in outputs)
    grad_inputs = _grad(outputs, inputs, dummies, create_graph=True)
    products = _zeros_where_none(_grad(grad_inputs, dummies, v, create_graph=create_graph), outputs)
    return (_untuple(outputs_tuple, _finish(outputs, create_graph)),
            _untuple(outputs_tuple, _finish(products, create_graph)))


def jacobian(func, inputs, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
             strategy: str = "reverse-mode"):
    """The Jacobian ``d func(inputs) / d inputs``: one backward pass per output element.

    Shapes as in PyTorch: ``output.shape + input.shape`` for each (output, input) pair, nested in
    tuples the way the outputs and inputs were.
    """
    from gradviz.ops import reshape, stack

    _check_jacobian_strategy(strategy, create_graph, strict, vectorize)
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    if strategy == "forward-mode":
        return _jacobian_forward(func, inputs_tuple, inputs)
    inputs = _prepare_inputs(inputs, create_graph)
    outputs_tuple, outputs = _outputs(func, inputs, "jacobian")
    blocks = []
    for output in outputs:
        flat = reshape(output, (-1,))
        rows = [[] for _ in inputs]
        for index in range(flat.numel()):
            grads = _grad((flat[index],), inputs, create_graph=create_graph, retain_graph=True)
            for row, g, inp in zip(rows, _zeros_where_none(grads, inputs), inputs):
                row.append(g)
        per_input = []
        for row, inp in zip(rows, inputs):
            shape = tuple(output.shape) + tuple(inp.shape)
            if row:
                block = reshape(stack(row), shape)
            else:
                from gradviz.tensor import zeros

                block = zeros(shape, dtype=inp.dtype)
            per_input.append(block)
        blocks.append(_untuple(inputs_tuple, _finish(tuple(per_input), create_graph)))
    return _untuple(outputs_tuple, tuple(blocks))


def hessian(func, inputs, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
            outer_jacobian_strategy: str = "reverse-mode"):
    """The Hessian of a scalar function: the Jacobian of its gradient (recorded with ``create_graph``)."""
    _check_hessian_strategy(outer_jacobian_strategy, vectorize)
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")

    def scalar_output(*args):
        out = func(*args)
        was_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "hessian")
        if was_tuple or outs[0].numel() != 1:
            raise RuntimeError("The function given to hessian should return a single Tensor")
        return outs[0].squeeze()

    def gradient(*args):
        if outer_jacobian_strategy == "forward-mode":  # keep the dual inputs (a detached copy would drop the tangents)
            args = tuple(arg.requires_grad_(True) for arg in args)
        return jacobian(scalar_output, args, create_graph=True)

    if outer_jacobian_strategy == "forward-mode":  # forward over reverse: tangents pushed through the recorded gradient
        result = jacobian(gradient, inputs, create_graph=create_graph, strategy="forward-mode", vectorize=True)
    else:
        result = jacobian(gradient, inputs, create_graph=create_graph)
    if inputs_tuple:
        return result
    return result[0][0]


def vhp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), v^T H)`` for a scalar function."""
    return _hessian_product(func, inputs, v, create_graph, "vhp", transpose_trick=False)


def hvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), H v)`` for a scalar function, by differentiating ``v^T``-free double backward."""
    return _hessian_product(func, inputs, v, create_graph, "hvp", transpose_trick=True)


def _hessian_product(func, inputs, v, create_graph: bool, fn_name: str, transpose_trick: bool):
    from gradviz.tensor import zeros_like

    inputs_tuple, inputs, v = _inputs_and_v(inputs, v, create_graph, fn_name)
    outputs_tuple, outputs = _outputs(func, inputs, fn_name)
    if outputs_tuple or outputs[0].numel() != 1:
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    gradients = _grad(outputs, inputs, create_graph=True)
    if transpose_trick:  # H v = d/du [ (d/dx (u . grad)) . v ] with a dummy u: PyTorch's hvp
        dummies = tuple(zeros_like(inp).requires_grad_(True) for inp in inputs)
        double_back = _grad(gradients, inputs, dummies, create_graph=True)
        products = _grad(double_back, dummies, v, create_graph=create_graph)
    else:
        products = _grad(gradients, inputs, v, create_graph=create_graph)
    products = _zeros_where_none(products, inputs)
    return (_untuple(outputs_tuple, _finish(outputs, create_graph)),
            _untuple(inputs_tuple, _finish(products, create_graph)))


# -- forward mode: one column of the Jacobian per input element -------------------------------------------
def _jacobian_forward(func, inputs_tuple: bool, inputs: tuple):
    """``strategy="forward-mode"``: each input element in turn gets tangent 1 (every other 0) in one dual
    level (``autograd/forward_ad.py``), and the outputs' tangents are that element's column of ``J``.
    PyTorch batches those passes with vmap (hence ``vectorize=True``); the numbers are the same."""
    from gradviz.autograd import forward_ad
    from gradviz.ops import reshape, stack
    from gradviz.tensor import zeros, zeros_like

    inputs = tuple(tensor.detach() for tensor in inputs)
    columns = None  # columns[output][input]: the tangents of that output, one per element of that input
    outputs = None
    with forward_ad.dual_level():
        for which, tensor in enumerate(inputs):
            for index in range(tensor.numel()):
                direction = zeros(tensor.numel(), dtype=tensor.dtype)
                direction[index] = 1
                # every input is dual, the others with zero tangents, as PyTorch's batched passes have them
                duals = tuple(forward_ad.make_dual(t, reshape(direction, tuple(t.shape)) if i == which else zeros_like(t))
                              for i, t in enumerate(inputs))
                outputs_tuple, results = _outputs(func, duals, "jacobian")
                if columns is None:
                    columns = [[[] for _ in inputs] for _ in results]
                    outputs = (outputs_tuple, tuple(forward_ad.unpack_dual(r).primal.detach() for r in results))
                for output_index, result in enumerate(results):
                    tangent = forward_ad.unpack_dual(result).tangent
                    column = zeros(result.numel(), dtype=result.dtype) if tangent is None else tangent.detach()
                    columns[output_index][which].append(reshape(column, (-1,)))
    if outputs is None:  # no input has an element: the outputs' shapes come from one plain call
        outputs = _outputs(func, inputs, "jacobian")
        columns = [[[] for _ in inputs] for _ in outputs[1]]
    outputs_tuple, results = outputs
    blocks = []
    for output, per_input in zip(results, columns):
        row = []
        for tensor, cols in zip(inputs, per_input):
            shape = tuple(output.shape) + tuple(tensor.shape)
            row.append(reshape(stack(cols, dim=-1), shape) if cols else zeros(shape, dtype=output.dtype))
        blocks.append(_untuple(inputs_tuple, row))  # lists, not tuples: what PyTorch's forward-mode path returns
    return _untuple(outputs_tuple, blocks)


# -- PyTorch's checks of ``strategy`` and ``vectorize`` ------------------------------------------------------
# ``vectorize=True`` (PyTorch's vmap over the backward passes) changes how PyTorch computes a Jacobian, not its
# values: gradviz runs one pass per row (reverse mode) or per column (``strategy="forward-mode"``, forward AD),
# after raising PyTorch's errors for the combinations PyTorch refuses.
_FORWARD_NEEDS_VECTORIZE = ("Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
                            "only implemented for `vectorize=True`.")


def _check_jacobian_strategy(strategy, create_graph: bool, strict: bool, vectorize: bool) -> None:
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your function '
                             'has more outputs than inputs, "forward-mode" tends to be more performant. Otherwise, '
                             'prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError('torch.autograd.functional.jacobian: `create_graph=True` and '
                                      '`strategy="forward-mode"` are not supported together (yet). Please either set '
                                      '`create_graph=False` or `strategy="reverse-mode"`.')
        if strict:
            raise RuntimeError('torch.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` are '
                               'not supported together (yet). Please either set `strict=False` or '
                               '`strategy="reverse-mode"`.')
        if not vectorize:
            raise NotImplementedError(_FORWARD_NEEDS_VECTORIZE)


def _check_hessian_strategy(outer_jacobian_strategy, vectorize: bool) -> None:
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')
    if outer_jacobian_strategy == "forward-mode" and not vectorize:
        raise NotImplementedError(_FORWARD_NEEDS_VECTORIZE)
