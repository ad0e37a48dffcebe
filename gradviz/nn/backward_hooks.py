"""Module hooks as PyTorch runs them: ``Module.__call__`` with hooks, and the full backward hooks.

``register_full_backward_hook(hook(module, grad_input, grad_output))`` and
``register_full_backward_pre_hook(hook(module, grad_output))`` work as PyTorch makes them work: the
module's tensor inputs, and then its outputs, pass through ``BackwardHookFunction``, an identity
``autograd.Function``. Its nodes (``BackwardHookFunctionBackward``) sit in the graph, in torch's
places, and carry the hooks as node post-hooks: the output node's sees ``grad_output`` (and runs the
pre-hooks, which may replace it); the input node's sees ``grad_input`` and calls the user's hooks
with both (a returned tuple replaces ``grad_input``). The outputs are views of what forward
returned (an input returned as-is), so changing them in place raises PyTorch's error.

``register_backward_hook`` (the old, non-full hook) is a post-hook on the output's ``grad_fn``,
with PyTorch's FutureWarnings when that node is not the whole module. Observing a graph runs no
hooks, so none of these are called by ``show`` or ``export_html``.
"""
from __future__ import annotations

import warnings

from gradviz.autograd.anomaly_mode import user_stacklevel
from gradviz.autograd.custom_function import Function
from gradviz.autograd.node import RemovableHandle
from gradviz.grad_mode import is_grad_enabled
from gradviz.tensor import Tensor

BOTH_KINDS = ("Cannot use both regular backward hooks and full backward hooks on a single Module. Please use only "
              "one of them.")
NO_INPUT_GRAD_WARNING = (
    "Full backward hook is firing when gradients are computed with respect to module outputs since no inputs require "
    "gradients. See https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module"
    ".register_full_backward_hook for more details.")
NON_FULL_STEM = "Using a non-full backward hook when "
NON_FULL_TAIL = (" is deprecated and will be removed in future versions. This hook will be missing some grad_input. "
                 "Please use register_full_backward_hook to get the documented behavior.")


class BackwardHookFunction(Function):
    """The identity, as a node: its gradients pass through unchanged, its hooks see them."""

    @staticmethod
    def forward(ctx, *args):
        ctx.mark_non_differentiable(*[arg for arg in args if not arg.requires_grad])
        return args

    @staticmethod
    def backward(ctx, *grads):
        return grads


class ModuleHookHandle(RemovableHandle):
    """A module hook's handle: removing it also forgets the hook's flags (with_kwargs, always_call)."""

    def __init__(self, hooks: dict, extras: tuple = ()):
        super().__init__(hooks)
        self._extras = extras

    def remove(self) -> None:
        super().remove()
        for table in self._extras:
            table.pop(self.id, None)


def add_hook(module, table: str, hook, prepend: bool = False, flags: tuple = ()) -> ModuleHookHandle:
    """Put ``hook`` in the module's ordered table ``table`` (first if ``prepend``); ``flags`` name the
    tables (``_forward_hooks_with_kwargs``, ...) in which its id is marked."""
    hooks = _table(module, table)
    extras = tuple(_table(module, flag) for flag in flags)
    handle = ModuleHookHandle(hooks, extras)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    for extra in extras:
        extra[handle.id] = True
    return handle


def _table(module, name: str):
    """The module's table ``name``, made on first use; ``_hook_tables`` (their names) tells ``Module.__call__``
    in one lookup that the module has had hooks."""
    from collections import OrderedDict

    table = module.__dict__.get(name)
    if table is None:
        table = OrderedDict()
        object.__setattr__(module, name, table)
        module.__dict__.setdefault("_hook_tables", []).append(name)
    return table


def set_backward_kind(module, full: bool) -> None:
    """A module's backward hooks are all full or all old-style, as in PyTorch."""
    kind = module.__dict__.get("_is_full_backward_hook")
    if kind is not None and kind != full:
        raise RuntimeError(BOTH_KINDS)
    object.__setattr__(module, "_is_full_backward_hook", full)


# -- the call ------------------------------------------------------------------------------------------------------
def call_with_hooks(module, args: tuple, kwargs: dict, first_sequence, note_call):
    """``Module.__call__`` when the module has hooks: PyTorch's ``_call_impl`` order. ``first_sequence()``
    numbers the module's call (``modules._note_call``), ``note_call`` records it."""
    table = module.__dict__.get
    pre_hooks = table("_forward_pre_hooks")
    if pre_hooks:
        with_kwargs = table("_forward_pre_hooks_with_kwargs") or {}
        for hook_id, hook in list(pre_hooks.items()):
            if hook_id in with_kwargs:
                changed = hook(module, args, kwargs)
                if changed is not None:
                    if not (isinstance(changed, tuple) and len(changed) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                                           f"but got {changed}.")
                    args, kwargs = changed
            else:
                changed = hook(module, args)
                if changed is not None:
                    args = changed if isinstance(changed, tuple) else (changed,)
    first = first_sequence()
    backward_hooks = list((table("_backward_hooks") or {}).values())
    full = table("_is_full_backward_hook") is True
    backward_pre_hooks = list((table("_backward_pre_hooks") or {}).values())
    backward_hook = None
    if (full and backward_hooks) or backward_pre_hooks:
        backward_hook = BackwardHook(module, backward_hooks if full else [], backward_pre_hooks)
        args = backward_hook.setup_input_hook(args)
    hooks = table("_forward_hooks") or {}
    called_always = set()
    result = None
    try:
        result = module.forward(*args, **kwargs)
        with_kwargs = table("_forward_hooks_with_kwargs") or {}
        always = table("_forward_hooks_always_called") or {}
        for hook_id, hook in list(hooks.items()):
            if hook_id in always:
                called_always.add(hook_id)
            changed = hook(module, args, kwargs, result) if hook_id in with_kwargs else hook(module, args, result)
            if changed is not None:
                result = changed
        if backward_hook is not None:
            if not isinstance(result, (Tensor, tuple)):
                warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple of "
                              f"Tensors but received {type(result)}", stacklevel=3)
            result = backward_hook.setup_output_hook(result)
        if backward_hooks and not full:
            _register_non_full(module, backward_hooks, args, result)
    except Exception:
        _call_always_hooks(module, args, kwargs, result, called_always)
        raise
    note_call(module, first, result)
    return result


def _call_always_hooks(module, args, kwargs, result, called: set) -> None:
    """Forward failed: the hooks registered with ``always_call=True`` that did not run yet run now."""
    table = module.__dict__.get
    always = table("_forward_hooks_always_called") or {}
    with_kwargs = table("_forward_hooks_with_kwargs") or {}
    for hook_id, hook in list((table("_forward_hooks") or {}).items()):
        if hook_id not in always or hook_id in called:
            continue
        try:
            changed = hook(module, args, kwargs, result) if hook_id in with_kwargs else hook(module, args, result)
            if changed is not None:
                result = changed
        except Exception as error:
            warnings.warn("module forward hook with ``always_call=True`` raised an exception that was silenced as another "
                          f"error was raised in forward: {error}", stacklevel=3)


def _register_non_full(module, hooks: list, args: tuple, result) -> None:
    """``register_backward_hook``: each hook becomes a post-hook of the output's ``grad_fn``."""
    tensor = result
    while not isinstance(tensor, Tensor):
        tensor = next(v for v in tensor.values() if isinstance(v, Tensor)) if isinstance(tensor, dict) else tensor[0]
    grad_fn = tensor.grad_fn
    if grad_fn is None:
        return
    for hook in hooks:
        grad_fn.register_hook(_ModuleNodeHook(hook, module))
    _warn_non_full(args, result, grad_fn)


class _ModuleNodeHook:
    """A node post-hook that calls an old-style module hook as ``hook(module, grad_input, grad_output)``."""

    def __init__(self, hook, module):
        self.hook, self.module = hook, module

    def __call__(self, grad_inputs, grad_outputs):
        return self.hook(self.module, grad_inputs, grad_outputs)


def _warn_non_full(inputs, result, grad_fn) -> None:
    """PyTorch's FutureWarnings for an old-style hook that will not see what a full hook sees."""
    def warn(what: str) -> None:
        warnings.warn(NON_FULL_STEM + what + NON_FULL_TAIL, FutureWarning, stacklevel=4)

    if isinstance(result, Tensor):
        result = (result,)
    elif not (isinstance(result, tuple) and all(isinstance(r, Tensor) for r in result)):
        warnings.warn("Using non-full backward hooks on a Module that does not return a single Tensor or a tuple of "
                      "Tensors is deprecated and will be removed in future versions. This hook will be missing some "
                      "of the grad_output. Please use register_full_backward_hook to get the documented behavior.",
                      FutureWarning, stacklevel=4)
        return
    if isinstance(inputs, Tensor):
        inputs = (inputs,)
    elif not (isinstance(inputs, tuple) and all(isinstance(i, Tensor) for i in inputs)):
        warnings.warn("Using non-full backward hooks on a Module that does not take as input a single Tensor or a "
                      "tuple of Tensors is deprecated and will be removed in future versions. This hook will be "
                      "missing some of the grad_input. Please use register_full_backward_hook to get the documented "
                      "behavior.", FutureWarning, stacklevel=4)
        return
    output_nodes = _unique(r.grad_fn for r in result if r.grad_fn is not None)
    if not output_nodes or (len(output_nodes) == 1 and output_nodes[0] is not grad_fn):
        warn("outputs are nested in python data structure")
    elif len(output_nodes) > 1:
        warn("outputs are generated by different autograd Nodes")
    else:
        input_nodes = _unique(i.grad_fn for i in inputs if i.grad_fn is not None)
        next_nodes = _unique(node for node, _ in grad_fn.next_functions)
        if set(map(id, input_nodes)) != set(map(id, next_nodes)):
            warn("the forward contains multiple autograd Nodes")


def _unique(nodes) -> list:
    seen = {}
    for node in nodes:
        seen.setdefault(id(node), node)
    return list(seen.values())


# -- the full backward hooks -------------------------------------------------------------------------------------
class BackwardHook:
    """One module call's full backward hooks: the two BackwardHookFunction nodes and what passes between them.

    The output node's post-hook keeps ``grad_output`` (after the pre-hooks); the input node's post-hook
    calls the user's hooks with ``grad_input`` and it. Positions that hold no tensor get None.
    """

    def __init__(self, module, user_hooks: list, user_pre_hooks: list):
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.n_inputs = self.n_outputs = -1
        self.input_positions = self.output_positions = None

    @staticmethod
    def _spread(positions, values, size: int) -> tuple:
        spread = [None] * size
        for position, value in zip(positions, values):
            spread[position] = value
        return tuple(spread)

    def _wrap(self, values: tuple, on_node):
        """Pass the tensors among ``values`` through one BackwardHookFunction and give its node to
        ``on_node``; returns the new values and the tensors' positions (None when nothing needs grad)."""
        positions = [i for i, value in enumerate(values) if isinstance(value, Tensor)]
        tensors = [values[i] for i in positions]
        if not (any(t.requires_grad for t in tensors) and is_grad_enabled()):
            return values, None
        wrapped = BackwardHookFunction.apply(*tensors)
        node = next(t.grad_fn for t in wrapped if t.grad_fn is not None
                    and t.grad_fn.name() == "BackwardHookFunctionBackward")
        on_node(node)
        replaced = list(values)
        for position, tensor in zip(positions, wrapped):
            replaced[position] = tensor
        return (tuple(replaced) if type(values) is tuple else type(values)(*replaced)), positions

    def setup_input_hook(self, args: tuple) -> tuple:
        def on_node(node):
            node.register_hook(self._input_hook)

        wrapped, self.input_positions = self._wrap(args, on_node)
        self.n_inputs = len(args)
        return wrapped

    def setup_output_hook(self, result):
        def on_node(node):
            node.register_hook(self._output_hook)

        single = not isinstance(result, tuple)
        values = (result,) if single else result
        wrapped, self.output_positions = self._wrap(values, on_node)
        self.n_outputs = len(values)
        return wrapped[0] if single else wrapped

    def _output_hook(self, grad_inputs, grad_outputs):
        """On the output node: keep grad_output, run the pre-hooks (which may replace it)."""
        self.grad_outputs = self._spread(self.output_positions, grad_outputs, self.n_outputs)
        for pre_hook in self.user_pre_hooks:
            changed = pre_hook(self.module, self.grad_outputs)
            if changed is None:
                continue
            if len(changed) != len(self.grad_outputs):
                raise RuntimeError("Backward pre hook returned an invalid number of grad_output, got "
                                   f"{len(changed)}, but expected {len(self.grad_outputs)}")
            self.grad_outputs = changed
        grad_outputs = self.grad_outputs
        if self.input_positions is None:  # no input needs a gradient: the hooks run here, with no grad_input
            warnings.warn(NO_INPUT_GRAD_WARNING, stacklevel=user_stacklevel())
            grad_inputs = (None,) * self.n_inputs
            for hook in self.user_hooks:
                returned = hook(self.module, grad_inputs, self.grad_outputs)
                if returned is not None and not (isinstance(returned, tuple) and all(r is None for r in returned)):
                    raise RuntimeError("Backward hook for Modules where no input requires gradient should always "
                                       "return None or None for all gradients.")
            self.grad_outputs = None
        return tuple(grad_outputs[i] for i in self.output_positions)

    def _input_hook(self, grad_inputs, grad_outputs):
        """On the input node: the user's hooks see grad_input and grad_output; a tuple returned replaces grad_input."""
        if self.grad_outputs is None:  # the gradient reached the inputs without passing the outputs
            return None
        spread = self._spread(self.input_positions, grad_inputs, self.n_inputs)
        for hook in self.user_hooks:
            returned = hook(self.module, spread, self.grad_outputs)
            if returned is None:
                continue
            if len(returned) != len(spread):
                raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got {len(returned)}, "
                                   f"but expected {len(spread)}")
            spread = returned
        self.grad_outputs = None
        return tuple(spread[i] for i in self.input_positions)

