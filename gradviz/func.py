"""``torch.func``: function transforms (``grad``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian``,
``vmap``, ``functional_call``), built on gradviz's own engine.

PyTorch's transforms run on functorch's levels (each transform wraps its inputs in a tensor of its own
level). gradviz has one autograd graph, so each transform is written with what the engine has:

* ``grad``/``grad_and_value``/``vjp``/``jacrev``: the differentiated inputs are replaced by fresh tensors
  (a detached leaf that requires grad, or a view when the input requires grad already, so that the result
  can be differentiated again from outside: ``grad(grad(f))``, a gradient penalty through ``grad``), ``f``
  runs, and ``autograd.grad(..., create_graph=True)`` gives the gradient. A result keeps its graph only when
  that graph reaches a tensor from outside the transform that requires grad (an outer transform's input, a
  closed-over parameter) and grad mode is on, which is when PyTorch's result has one; otherwise it is
  detached, as PyTorch's is.
* ``jvp``/``jacfwd``: ``autograd.forward_ad`` (one dual level); when a level is already active (``jacfwd``
  of ``jacfwd``, ``jvp`` inside ``jvp``) the jvp is taken by the double-vjp trick on the engine instead.
  ``hessian`` is PyTorch's ``jacfwd(jacrev(f))``: forward over reverse.
* ``vmap``: a loop over the batch that stacks the per-example results (``in_dims``, ``out_dims``,
  ``randomness``, pytrees of tensors). Results, shapes and errors are torch's for batch-pure functions;
  what differs is written in docs/ARCHITECTURE.md ("torch.func").

Inputs and outputs may be pytrees: tensors inside tuples, lists and dicts.
"""
from __future__ import annotations

import functools
import weakref

from gradviz.tensor import Tensor

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "stack_module_state",
           "vjp", "vmap"]


# -- pytrees: tensors inside tuples, lists and dicts -------------------------------------------------------------
class _Spec:
    """The structure of a pytree (PyTorch's TreeSpec): ``kind`` is None for a leaf."""

    __slots__ = ("kind", "context", "children")

    def __init__(self, kind=None, context=None, children=()):
        self.kind, self.context, self.children = kind, context, tuple(children)

    def __eq__(self, other):
        return (isinstance(other, _Spec) and self.kind is other.kind and self.context == other.context
                and self.children == other.children)

    def __hash__(self):
        return hash((self.kind, len(self.children)))

    @property
    def leaves(self) -> int:
        return 1 if self.kind is None else sum(child.leaves for child in self.children)

    def __repr__(self, indent: int = 0) -> str:  # torch.utils._pytree.TreeSpec's text
        if self.kind is None:
            return "*"
        text = ""
        if self.children:
            indent += 2
            text = self.children[0].__repr__(indent) + ("," if len(self.children) > 1 else "")
            text += ",".join("\n" + " " * indent + child.__repr__(indent) for child in self.children[1:])
        context = None if self.kind is not dict else list(self.context)
        return f"TreeSpec({self.kind.__name__}, {context}, [{text}])"

    def pprint(self) -> str:  # torch's treespec_pprint
        if self.kind is None:
            return "*"
        parts = [child.pprint() for child in self.children]
        if self.kind is dict:
            return "{" + ", ".join(f"{key!r}: {part}" for key, part in zip(self.context, parts)) + "}"
        if self.kind is list:
            return "[" + ", ".join(parts) + "]"
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def _flatten(tree) -> tuple[list, _Spec]:
    if isinstance(tree, (tuple, list)) and not hasattr(tree, "_fields"):
        leaves, children = [], []
        for item in tree:
            item_leaves, spec = _flatten(item)
            leaves.extend(item_leaves)
            children.append(spec)
        return leaves, _Spec(tuple if isinstance(tree, tuple) else list, None, children)
    if isinstance(tree, dict):
        leaves, children = [], []
        for key in tree:
            item_leaves, spec = _flatten(tree[key])
            leaves.extend(item_leaves)
            children.append(spec)
        return leaves, _Spec(dict, tuple(tree), children)
    return [tree], _Spec()


def _unflatten(leaves, spec: _Spec):
    iterator = iter(leaves)

    def build(node):
        if node.kind is None:
            return next(iterator)
        items = [build(child) for child in node.children]
        if node.kind is dict:
            return dict(zip(node.context, items))
        return node.kind(items)

    return build(spec)


def _map(function, tree):
    leaves, spec = _flatten(tree)
    return _unflatten([function(leaf) for leaf in leaves], spec)


def _broadcast_prefix(prefix, tree, spec: _Spec) -> list | None:
    """``prefix`` (an int/None per subtree, or the tree's own structure) spread over ``tree``'s leaves; None
    when the structures do not fit."""
    if spec.kind is None or not isinstance(prefix, (tuple, list, dict)):
        if isinstance(prefix, (tuple, list, dict)) and spec.kind is None:
            return None
        return [prefix] * spec.leaves
    if type(prefix) is not spec.kind or len(prefix) != len(spec.children):
        return None
    if spec.kind is dict:
        if set(prefix) != set(spec.context):
            return None
        items = [(prefix[key], tree[key]) for key in spec.context]
    else:
        items = list(zip(prefix, tree))
    out = []
    for (sub_prefix, sub_tree), child in zip(items, spec.children):
        spread = _broadcast_prefix(sub_prefix, sub_tree, child)
        if spread is None:
            return None
        out.extend(spread)
    return out


# -- the argnums and the inputs a transform differentiates ---------------------------------------------------------
def _check_argnums(argnums, count: int):
    def one(argnum):
        if not isinstance(argnum, int):
            raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
        if not -count <= argnum < count:
            raise RuntimeError(f"Got argnum={argnum}, but only {count} positional inputs")
        return argnum % count

    if isinstance(argnums, int):
        return one(argnums)
    if not isinstance(argnums, tuple):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    if not argnums:
        raise RuntimeError("argnums must be non-empty")
    normalized = tuple(one(argnum) for argnum in argnums)
    if len(set(normalized)) != len(normalized):
        raise RuntimeError(f"argnums elements must be unique, got {normalized}")
    return normalized


def _selected(args: tuple, argnums):
    return args[argnums] if isinstance(argnums, int) else tuple(args[i] for i in argnums)


def _replace(args: tuple, argnums, new) -> tuple:
    args = list(args)
    if isinstance(argnums, int):
        args[argnums] = new
    else:
        for index, value in zip(argnums, new):
            args[index] = value
    return tuple(args)


def _fresh(tensor) -> Tensor:
    """The tensor a transform differentiates with respect to: a view of an input that requires grad (the
    result stays differentiable from outside), else a detached leaf that requires grad."""
    if not isinstance(tensor, Tensor):
        raise ValueError(f"Thing passed to transform API must be Tensor, got {type(tensor)}")
    if tensor.requires_grad:
        return tensor.view_as(tensor)
    fresh = tensor.detach().requires_grad_(True)
    from gradviz.autograd import forward_ad

    if forward_ad._current_level >= 0:  # a dual input (jacfwd over jacrev): the fresh leaf keeps its tangent
        tangent = forward_ad._tangent_of(tensor)
        if tangent is not None:
            forward_ad._set_tangent(fresh, tangent)
    return fresh


# the inputs of transform calls that have returned (id -> weak reference): what a result's graph reaches there is
# the transform's own business; a leaf of a transform still running (an outer ``grad``) is outside, as is any
# tensor the caller made
_finished: dict = {}


def _finish(tensors) -> None:
    for tensor in tensors:
        if isinstance(tensor, Tensor) and tensor.grad_fn is None:
            key = id(tensor)

            def forget(ref, key=key):
                if _finished.get(key) is ref:
                    del _finished[key]

            _finished[key] = weakref.ref(tensor, forget)


def _is_finished(tensor) -> bool:
    entry = _finished.get(id(tensor))
    return entry is not None and entry() is tensor


def _reaches_outside(tensors) -> bool:
    """Whether the graph of ``tensors`` reaches a leaf that requires grad other than a finished transform's."""
    stack = []
    for t in tensors:
        if isinstance(t, Tensor) and t.requires_grad:
            if t.grad_fn is None:
                if not _is_finished(t):
                    return True
            else:
                stack.append(t.grad_fn)
    seen = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node._is_accumulate:
            if not _is_finished(node.variable):
                return True
            continue
        stack.extend(edge[0] for edge in node.next_functions if edge[0] is not None)
    return False


def _outer(tree, grad_was_enabled: bool):
    """The transform's results as seen from outside: detached unless their graph leads outside."""
    leaves, spec = _flatten(tree)
    tensors = [leaf for leaf in leaves if isinstance(leaf, Tensor)]
    if grad_was_enabled and _reaches_outside(tensors):
        return tree
    return _unflatten([_detached(leaf) if isinstance(leaf, Tensor) and leaf.requires_grad else leaf
                       for leaf in leaves], spec)


def _detached(tensor: Tensor) -> Tensor:
    """``tensor.detach()`` that keeps the tangent of the active dual level (an outer ``jacfwd`` reads it)."""
    from gradviz.autograd import forward_ad

    detached = tensor.detach()
    if forward_ad._current_level >= 0:
        tangent = forward_ad._tangent_of(tensor)
        if tangent is not None:
            forward_ad._set_tangent(detached, tangent)
    return detached


def _grads(outputs: list, inputs: list, cotangents=None) -> list:
    """``autograd.grad`` with a recorded graph, zeros for an input not reached (PyTorch's transforms give zeros)."""
    from gradviz.autograd.engine import grad as autograd_grad
    from gradviz.tensor import zeros_like

    pairs = [(out, None if cotangents is None else cotangents[i]) for i, out in enumerate(outputs)
             if isinstance(out, Tensor) and out.requires_grad]
    if not pairs or not inputs:
        return [zeros_like(t) for t in inputs]
    found = autograd_grad([p[0] for p in pairs], inputs, [p[1] for p in pairs] if cotangents is not None else None,
                          retain_graph=True, create_graph=True, allow_unused=True)
    return [zeros_like(t) if g is None else g for g, t in zip(found, inputs)]


def _name(func) -> str:
    return getattr(func, "__name__", repr(func))


# -- grad, grad_and_value, vjp ----------------------------------------------------------------------------------------
def grad_and_value(func, argnums=0, has_aux: bool = False):
    """``grad_and_value(f)(*args)``: ``(gradient of f's scalar output, the output)`` (with ``has_aux``, f returns
    ``(output, aux)`` and the answer is ``(gradient, (output, aux))``)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        from gradviz.grad_mode import _state, enable_grad

        grad_was_enabled = _state.enabled
        numbers = _check_argnums(argnums, len(args))
        with enable_grad():
            leaves, spec = _flatten(_selected(args, numbers))
            fresh = [_fresh(leaf) for leaf in leaves]
            output = func(*_replace(args, numbers, _unflatten(fresh, spec)), **kwargs)
            output, aux = _split_aux(output, has_aux, "grad_and_value(f)(*args)")
            if not isinstance(output, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(output)}")
            if output.dim() != 0:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor "
                                   f"with {output.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
            grads = _grads([output], fresh)
        _finish(fresh)
        grads = _outer(_unflatten(grads, spec), grad_was_enabled)
        value = _outer(output, grad_was_enabled)
        if has_aux:
            return grads, (value, _outer(aux, grad_was_enabled))
        return grads, value

    return wrapper


def grad(func, argnums=0, has_aux: bool = False):
    """``grad(f)(*args)``: the gradient of f's scalar output with respect to ``args[argnums]`` (a pytree of
    tensors, or a tuple of them for a tuple ``argnums``); ``(gradient, aux)`` with ``has_aux``."""
    both = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        grads, value = both(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return wrapper


def _split_aux(output, has_aux: bool, what: str):
    """``(output, aux)``: with ``has_aux`` f returns a pair whose aux holds only tensors (PyTorch's errors)."""
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(f"{what}: output of function f should be a tuple: (output, aux) if has_aux is True")
    for leaf in _flatten(output[1])[0]:
        if not isinstance(leaf, Tensor):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(leaf)}")
    return output


def _only_tensors(leaves, what: str) -> None:
    for leaf in leaves:
        if not isinstance(leaf, Tensor):
            raise RuntimeError(f"{what}: expected f(*primals) to return only tensors, got unsupported type {type(leaf)}")


def vjp(func, *primals, has_aux: bool = False):
    """``vjp(f, *primals)``: ``(f(*primals), vjp_fn)``; ``vjp_fn(cotangents)`` gives one gradient per primal
    (a tuple), the cotangents shaped as f's output. ``(output, vjp_fn, aux)`` with ``has_aux``."""
    from gradviz.grad_mode import _state, enable_grad

    grad_was_enabled = _state.enabled
    with enable_grad():
        leaves, spec = _flatten(primals)
        fresh = [_fresh(leaf) for leaf in leaves]
        output = func(*_unflatten(fresh, spec))
        output, aux = _split_aux(output, has_aux, "vjp(f, *primals)")
    out_leaves, out_spec = _flatten(output)
    _only_tensors(out_leaves, "vjp(f, *primals)")
    _finish(fresh)

    def vjp_fn(cotangents, *, retain_graph=True, create_graph=None):
        co_leaves, co_spec = _flatten(cotangents)
        if co_spec != out_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree structure of outputs "
                               f"to the function. cotangents: {co_spec.pprint()}, primal output: {out_spec.pprint()}")
        from gradviz.grad_mode import _state as state

        enabled = state.enabled
        with enable_grad():
            grads = _grads(out_leaves, fresh, co_leaves)
        return _outer(_unflatten(grads, spec), enabled)

    value = _outer(output, grad_was_enabled)
    if has_aux:
        return value, vjp_fn, _outer(aux, grad_was_enabled)
    return value, vjp_fn


# -- jvp -------------------------------------------------------------------------------------------------------------
def jvp(func, primals, tangents, *, strict: bool = False, has_aux: bool = False):
    """``jvp(f, primals, tangents)``: ``(f(*primals), J v)`` by forward-mode AD (``(output, jvp_out, aux)``
    with ``has_aux``)."""
    what = "jvp(f, primals, tangents)"
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{what}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    leaves, spec = _flatten(primals)
    tangent_leaves, tangent_spec = _flatten(tangents)
    if spec != tangent_spec:
        raise RuntimeError(f"{what}: Expected primals and tangents to have the same python structure. For example, "
                           "if primals is a tuple of 3 tensors, tangents also must be. Got primals with structure "
                           f"{spec!r} and tangents with structure {tangent_spec!r}")
    for name, values in (("primals", leaves), ("tangents", tangent_leaves)):
        if not values:
            raise RuntimeError(f"{what}: Expected {name} to contain at least one Tensor.")
        for value in values:
            if not isinstance(value, Tensor):
                raise RuntimeError(f"{what}: Expected {name} to only contain Tensors, got {type(value)}")
    from gradviz.autograd import forward_ad
    from gradviz.grad_mode import _state

    grad_was_enabled = _state.enabled
    if forward_ad._current_level >= 0:  # a level is active already: the double-vjp trick on the engine
        return _jvp_by_double_vjp(func, leaves, spec, tangent_leaves, has_aux)
    with forward_ad.dual_level():
        duals = [forward_ad.make_dual(p, t) for p, t in zip(leaves, tangent_leaves)]
        output = func(*_unflatten(duals, spec))
        output, aux = _split_aux(output, has_aux, what)
        out_leaves, out_spec = _flatten(output)
        _only_tensors(out_leaves, what)
        tangent_out = [forward_ad._tangent_of(o) for o in out_leaves]
    from gradviz.tensor import zeros_like

    tangent_out = [zeros_like(o) if t is None else t for t, o in zip(tangent_out, out_leaves)]
    result = _outer((output, _unflatten(tangent_out, out_spec)), grad_was_enabled)
    return result + (aux,) if has_aux else result


def _jvp_by_double_vjp(func, leaves, spec, tangent_leaves, has_aux):
    """``J v = d/du <J^T u, v>`` on the engine (a dual level is active already: ``jacfwd(jacfwd(f))``)."""
    from gradviz.autograd.engine import grad as autograd_grad
    from gradviz.grad_mode import _state, enable_grad
    from gradviz.tensor import zeros_like

    grad_was_enabled = _state.enabled
    with enable_grad():
        fresh = [_fresh(leaf) for leaf in leaves]
        output = func(*_unflatten(fresh, spec))
        output, aux = _split_aux(output, has_aux, "jvp(f, primals, tangents)")
        out_leaves, out_spec = _flatten(output)
        _only_tensors(out_leaves, "jvp(f, primals, tangents)")
        live = [o for o in out_leaves if o.requires_grad]
        dummies = [zeros_like(o).requires_grad_(True) for o in live]
        by_output = {}
        if live:
            vjps = autograd_grad(live, fresh, dummies, create_graph=True, allow_unused=True)
            pairs = [(g, v) for g, v in zip(vjps, tangent_leaves) if g is not None and g.requires_grad]
            if pairs:
                found = autograd_grad([g for g, _ in pairs], dummies, [v for _, v in pairs], create_graph=True,
                                      allow_unused=True)
                by_output = {id(o): f for o, f in zip(live, found)}
        tangent_out = [by_output.get(id(o)) for o in out_leaves]
        tangent_out = [zeros_like(o) if t is None else t for t, o in zip(tangent_out, out_leaves)]
    _finish(fresh + dummies)
    result = (_outer(output, grad_was_enabled),
              _outer(_unflatten(tangent_out, out_spec), grad_was_enabled))
    return result + (_outer(aux, grad_was_enabled),) if has_aux else result


# -- Jacobians and the Hessian ---------------------------------------------------------------------------------------
def _jacobian_tree(blocks, out_spec, in_spec):
    """``blocks[o][i]``: the Jacobian block of output leaf o and input leaf i, placed in PyTorch's nesting: the
    output structure outside, the input structure (a tuple for tuple argnums) inside."""
    return _unflatten([_unflatten(per_input, in_spec) for per_input in blocks], out_spec)


def jacrev(func, argnums=0, *, has_aux: bool = False, chunk_size=None, _preallocate_and_copy: bool = False):
    """``jacrev(f)(*args)``: the Jacobian of f with respect to ``args[argnums]`` by reverse mode (one backward
    pass per output element); its shape is ``output.shape + input.shape``."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        from gradviz.grad_mode import _state, enable_grad
        from gradviz.ops.combine import stack
        from gradviz.tensor import zeros

        grad_was_enabled = _state.enabled
        numbers = _check_argnums(argnums, len(args))
        with enable_grad():
            in_leaves, in_spec = _flatten(_selected(args, numbers))
            fresh = [_fresh(leaf) for leaf in in_leaves]
            output = func(*_replace(args, numbers, _unflatten(fresh, in_spec)), **kwargs)
            output, aux = _split_aux(output, has_aux, "vjp(f, *primals)")
            out_leaves, out_spec = _flatten(output)
            _only_tensors(out_leaves, "vjp(f, *primals)")
            blocks = []
            for out in out_leaves:
                flat = out.reshape(-1)
                rows = [_grads([flat[k]], fresh) for k in range(flat.numel())]
                per_input = []
                for index, tensor in enumerate(fresh):
                    shape = tuple(out.shape) + tuple(tensor.shape)
                    if rows:
                        per_input.append(stack([row[index] for row in rows]).reshape(shape))
                    else:
                        per_input.append(zeros(shape, dtype=tensor.dtype))
                blocks.append(per_input)
        _finish(fresh)
        jacobian = _outer(_jacobian_tree(blocks, out_spec, in_spec), grad_was_enabled)
        return (jacobian, _outer(aux, grad_was_enabled)) if has_aux else jacobian

    return wrapper


def jacfwd(func, argnums=0, has_aux: bool = False, *, randomness: str = "error"):
    """``jacfwd(f)(*args)``: the Jacobian by forward mode (one jvp per input element); the same shape as
    ``jacrev``'s."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        _check_randomness(randomness)
        from gradviz.grad_mode import _state
        from gradviz.ops.combine import stack
        from gradviz.tensor import zeros, zeros_like

        numbers = _check_argnums(argnums, len(args))
        in_leaves, in_spec = _flatten(_selected(args, numbers))
        for leaf in in_leaves:
            if not isinstance(leaf, Tensor):
                raise ValueError(f"Thing passed to transform API must be Tensor, got {type(leaf)}")

        def call(*leaves):
            return func(*_replace(args, numbers, _unflatten(list(leaves), in_spec)), **kwargs)

        columns = []  # per input leaf: a list of (output leaves' tangents) per element
        out_leaves = out_spec = aux = None
        for index, leaf in enumerate(in_leaves):
            per_element = []
            for k in range(leaf.numel()):
                basis = [zeros_like(other) for other in in_leaves]
                basis[index] = zeros_like(leaf).reshape(-1).index_fill(0, _index(k), 1.0).reshape(leaf.shape)
                result = jvp(call, tuple(in_leaves), tuple(basis), has_aux=has_aux)
                out_leaves, out_spec = _flatten(result[0])
                if has_aux:
                    aux = result[2]
                per_element.append(_flatten(result[1])[0])
            columns.append(per_element)
        if out_leaves is None:  # no input element at all: f runs once for the output's shape
            result = call(*in_leaves)
            output, aux = _split_aux(result, has_aux, "jvp(f, primals, tangents)")
            out_leaves, out_spec = _flatten(output)
        blocks = []
        for o, out in enumerate(out_leaves):
            per_input = []
            for index, leaf in enumerate(in_leaves):
                shape = tuple(out.shape) + tuple(leaf.shape)
                if columns[index]:
                    per_input.append(stack([column[o] for column in columns[index]], -1).reshape(shape))
                else:
                    per_input.append(zeros(shape, dtype=out.dtype))
            blocks.append(per_input)
        jacobian = _outer(_jacobian_tree(blocks, out_spec, in_spec), _state.enabled)
        return (jacobian, aux) if has_aux else jacobian

    return wrapper


def _index(k: int) -> Tensor:
    from gradviz.tensor import tensor

    return tensor([k])


def hessian(func, argnums=0):
    """``hessian(f)(*args)``: PyTorch's ``jacfwd(jacrev(f, argnums), argnums)`` (forward over reverse)."""
    return jacfwd(jacrev(func, argnums), argnums)


# -- functional_call and stack_module_state ---------------------------------------------------------------------------
def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights: bool = True,
                    strict: bool = False):
    """Run ``module(*args, **kwargs)`` with its parameters and buffers replaced by the given tensors (names as
    in ``named_parameters``/``named_buffers``); the module is left as it was."""
    if isinstance(parameter_and_buffer_dicts, dict):
        given = dict(parameter_and_buffer_dicts)
    elif isinstance(parameter_and_buffer_dicts, (list, tuple)):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        seen, repeated = set(), []
        for table in parameter_and_buffer_dicts:
            for key in table:
                if key in seen and key not in repeated:
                    repeated.append(key)
                seen.add(key)
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is ambiguous")
        given = {key: value for table in parameter_and_buffer_dicts for key, value in table.items()}
    else:
        raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                         f"{type(parameter_and_buffer_dicts)}")
    names = {}  # name -> (owning module, table name, entry name)
    tied = {}  # id(tensor) -> every name it has
    for table_name, named in (("_parameters", module.named_parameters(remove_duplicate=False)),
                              ("_buffers", module.named_buffers(remove_duplicate=False))):
        for name, tensor in named:
            owner, _, entry = name.rpartition(".")
            names[name] = (_submodule(module, owner), table_name, entry)
            tied.setdefault(id(tensor), []).append(name)
    if strict:
        problems = []
        unexpected = [key for key in given if key not in names]
        missing = [name for name in names if name not in given]
        if unexpected:
            problems.append("Unexpected key(s): " + ", ".join(f"'{key}'" for key in unexpected) + ".")
        if missing:
            problems.append("Missing key(s): " + ", ".join(f"'{key}'" for key in missing) + ".")
        if problems:
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:\n\t" + "\n\t".join(problems))
    if tie_weights:
        for group in tied.values():
            chosen = [name for name in group if name in given]
            if chosen and len(group) > 1:
                for name in group:
                    given.setdefault(name, given[chosen[0]])
    saved = []
    try:
        for key, value in given.items():
            if key not in names:
                continue
            owner, table_name, entry = names[key]
            table = getattr(owner, table_name)
            saved.append((table, entry, table[entry]))
            table[entry] = value
        if args is None:
            args = ()
        elif not isinstance(args, tuple):
            args = (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for table, entry, value in reversed(saved):
            table[entry] = value


def _submodule(module, path: str):
    for part in path.split(".") if path else ():
        module = module._modules[part]
    return module


def stack_module_state(models) -> tuple[dict, dict]:
    """``(params, buffers)``: each model's parameters (and buffers) stacked along a new first dimension; the
    stacked parameters are new leaves that require grad, as PyTorch's are."""
    from gradviz.ops.combine import stack

    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    kinds = {type(m) for m in models}
    if len(kinds) > 1:
        raise RuntimeError(f"stack_module_state: Expected all models to be of the same class, got {kinds}")

    def stacked(named):
        out = {}
        for name in dict(named(models[0])):
            tensors = [dict(named(m))[name] for m in models]
            value = stack([t.detach() for t in tensors])
            out[name] = value.requires_grad_(True) if tensors[0].requires_grad else value
        return out

    return (stacked(lambda m: m.named_parameters()), stacked(lambda m: m.named_buffers()))


# -- vmap ---------------------------------------------------------------------------------------------------------------
def _check_randomness(randomness) -> None:
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")


class _RandomnessError:
    """While a ``vmap(randomness='error')`` runs: any draw from a generator raises PyTorch's error."""

    def __enter__(self):
        from gradviz import random

        self._saved = (random.Generator.words, random.Generator.words64)

        def refuse(*args, **kwargs):
            raise RuntimeError("vmap: called random operation while in randomness error mode. Please either use the "
                               "'same' or 'different' randomness flags on vmap or perform the randomness operation out "
                               "of vmap")

        random.Generator.words = random.Generator.words64 = refuse
        return self

    def __exit__(self, *exc_info):
        from gradviz import random

        random.Generator.words, random.Generator.words64 = self._saved
        return False


def vmap(func, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size=None):
    """``vmap(f)(*args)``: f applied to each slice of the inputs along ``in_dims`` (None: not mapped), the results
    stacked along ``out_dims``. A loop over the batch (see the module docstring)."""
    _check_randomness(randomness)
    name = _name(func)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        from gradviz import random

        if not args:
            raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are trying "
                             "to vmap over a function with no inputs. The latter is unsupported.")
        where = f"vmap({name}, in_dims={in_dims}, ...)(<inputs>)"
        if not isinstance(in_dims, (int, tuple)):
            raise ValueError(f"{where}: expected `in_dims` to be int or a (potentially nested) tuple matching the "
                             f"structure of inputs, got: {type(in_dims)}.")
        leaves, spec = _flatten(args)
        dims = _broadcast_prefix(in_dims, args, spec) if isinstance(in_dims, tuple) else [in_dims] * len(leaves)
        if dims is None:
            in_spec = _flatten(in_dims)[1]
            raise ValueError(f"{where}: in_dims is not compatible with the structure of `inputs`. in_dims has "
                             f"structure {in_spec!r} but inputs has structure {spec!r}.")
        sizes = []
        for leaf, dim in zip(leaves, dims):
            if dim is None:
                continue
            if not isinstance(dim, int):
                raise ValueError(f"{where}: in_dims must be a tuple of int or None, got {type(dim)}.")
            if not isinstance(leaf, Tensor):
                raise ValueError(f"{where}: Got in_dim={dim} for an input but the input is of type {type(leaf)}. We "
                                 "cannot vmap over non-Tensor arguments, please use None as the respective in_dim")
            rank = leaf.dim()
            if not -rank <= dim < rank:
                raise ValueError(f"{where}: Got in_dim={dim} for some input, but that input is a Tensor of "
                                 f"dimensionality {rank} so expected in_dim to satisfy -{rank} <= in_dim < {rank}.")
            sizes.append(leaf.shape[dim])
        if not sizes:
            raise ValueError("vmap: Expected at least one Tensor to vmap over")
        if len(set(sizes)) > 1:
            raise ValueError("vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                             f"{sizes} for the mapped dimension")
        batch = sizes[0]

        def example(b):
            picked = []
            for leaf, dim in zip(leaves, dims):
                if dim is None:
                    picked.append(leaf)
                elif b is None:  # an empty batch: a stand-in example of the right shape
                    from gradviz.tensor import zeros

                    shape = list(leaf.shape)
                    del shape[dim % leaf.dim()]
                    picked.append(zeros(tuple(shape), dtype=leaf.dtype))
                else:
                    picked.append(leaf[(slice(None),) * (dim % leaf.dim()) + (b,)])
            return _unflatten(picked, spec)

        results = []
        start = random.default_generator.get_state() if randomness == "same" else None
        guard = _RandomnessError() if randomness == "error" else None
        if guard is not None:
            guard.__enter__()
        try:
            for b in range(batch) if batch else [None]:
                if start is not None:
                    random.default_generator.set_state(start)
                results.append(func(*example(b), **kwargs))
        finally:
            if guard is not None:
                guard.__exit__(None, None, None)
        return _stack_results(results, out_dims, name, empty=not batch)

    return wrapper


def _stack_results(results: list, out_dims, name: str, empty: bool):
    from gradviz.ops.combine import stack

    flat = [_flatten(result) for result in results]
    out_spec = flat[0][1]
    leaves_per_result = [leaves for leaves, _ in flat]
    dims = (_broadcast_prefix(out_dims, results[0], out_spec) if isinstance(out_dims, (tuple, list, dict))
            else [out_dims] * out_spec.leaves)
    if dims is None:
        raise ValueError(f"vmap({name}, ...): out_dims is not compatible with the structure of `outputs`. out_dims has "
                         f"structure {_flatten(out_dims)[1]!r} but outputs has structure {out_spec!r}.")
    stacked = []
    for index, dim in enumerate(dims):
        column = [leaves[index] for leaves in leaves_per_result]
        if dim is None:
            first = column[0]
            if isinstance(first, Tensor) and any(not _same_value(first, other) for other in column[1:]):
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
            stacked.append(first)
            continue
        for value in column:
            if not isinstance(value, Tensor):
                raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(value)}. Did "
                                 "you mean to set out_dims= to None for output?")
        if empty:
            stacked.append(stack(column, dim).narrow(dim % (column[0].dim() + 1), 0, 0))
        else:
            stacked.append(stack(column, dim))
    return _unflatten(stacked, out_spec)


def _same_value(a: Tensor, b) -> bool:
    if a is b:
        return True
    if not isinstance(b, Tensor) or tuple(a.shape) != tuple(b.shape):
        return False
    import numpy as np

    return bool(np.array_equal(a.detach().numpy(), b.detach().numpy(), equal_nan=True))
