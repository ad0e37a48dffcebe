"""The order in which torch's engine runs a graph's nodes, for tests that compare engines.

Kept apart from ``parity`` so that tests which also run without torch can import it.
"""


def torch_order(outputs, gradients=None) -> list:
    """The node names in the order torch's engine runs them (read from pre-hooks on every node);
    runs ``torch.autograd.backward(outputs, gradients)`` (one output or a list)."""
    import torch

    outputs = outputs if isinstance(outputs, list) else [outputs]
    order, handles, seen, stack = [], [], set(), [output.grad_fn for output in outputs]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        handles.append(node.register_prehook(lambda grads, node=node: order.append(node.name())))
        stack.extend(fn for fn, _ in node.next_functions)
    try:
        torch.autograd.backward(outputs, gradients)
    finally:
        for handle in handles:
            handle.remove()
    return order


def graph_names(fn, seen=None, out=None) -> list:
    """The node names of ``fn``'s graph depth first, in ``next_functions`` order (each node once)."""
    if out is None:
        out, seen = [], set()
    if fn is None or id(fn) in seen:
        return out
    seen.add(id(fn))
    out.append(fn.name())
    for next_fn, _ in fn.next_functions:
        graph_names(next_fn, seen, out)
    return out
