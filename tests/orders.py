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
