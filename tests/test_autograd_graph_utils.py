"""``torch.autograd.graph``'s utilities beside the saved-tensor hooks: ``get_gradient_edge`` (and
``autograd.grad``/``backward(inputs=)`` taking a ``GradientEdge``), ``increment_version``,
``register_multi_grad_hook`` (both modes, with ``inputs=``, with ``grad()``, nested passes, removal) and
``allow_mutation_on_saved_tensors``. Each program runs unchanged in PyTorch 2.13 and in gradviz; what it
prints and every tensor it leaves must agree."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from parity import assert_same, assert_same_error  # noqa: E402

PROGRAMS = {
    "gradient_edge": """
x = torch.tensor([1., 2.], requires_grad=True)
y = x * 3
loss = (y * y).sum()
edge = torch.autograd.graph.get_gradient_edge(y)
print(type(edge).__name__, edge.node.name(), edge.output_nr, edge.ownership_token)
leaf_edge = torch.autograd.graph.get_gradient_edge(x)
print(leaf_edge.node.name(), leaf_edge.output_nr, leaf_edge.node.variable is x)
print(torch.autograd.grad(loss, edge, retain_graph=True))
print(torch.autograd.grad(loss, [x, edge], retain_graph=True))
print(torch.autograd.grad(edge, x, grad_outputs=torch.ones(2), retain_graph=True))
loss.backward(inputs=[leaf_edge])
print(x.grad)
""",
    "gradient_edge_of_one_output": """
x = torch.tensor([[1., 2.], [3., 4.]], requires_grad=True)
a, b = x.unbind(0)
edge = torch.autograd.graph.get_gradient_edge(b)
print(edge.node.name(), edge.output_nr)
print(torch.autograd.grad((a * b).sum(), edge))
""",
    "increment_version": """
x = torch.tensor([1., 2.], requires_grad=True)
y = x * 1
z = y * y
torch.autograd.graph.increment_version(y)
try:
    z.sum().backward()
except RuntimeError as error:
    print(str(error)[:160])
torch.autograd.graph.increment_version([y, x])
print(y._version, x._version)
with torch.inference_mode():
    t = torch.ones(2)
torch.autograd.graph.increment_version(t)
print(t._version if False else "inference ok")
""",
    "multi_grad_hook_all": """
torch.manual_seed(0)
a = torch.rand(2, 3, requires_grad=True)
b = torch.rand(2, 3, requires_grad=True)
c = a * b
d = a * b
def fn(grads):
    print([g is not None for g in grads], [None if g is None else round(g.sum().item(), 3) for g in grads])
handle = torch.autograd.graph.register_multi_grad_hook((a, b, c, d), fn)
c.sum().backward(retain_graph=True)
c.sum().backward(inputs=(a,), retain_graph=True)
print(torch.autograd.grad(c.sum(), (c,), retain_graph=True)[0].sum())
(c.sum() + 2 * d.sum()).backward(retain_graph=True)
handle.remove()
c.sum().backward(retain_graph=True)
print("removed", a.grad.sum())
""",
    "multi_grad_hook_any": """
a = torch.tensor([1., 2.], requires_grad=True)
c = a * 3
def first(grad):
    print("first", grad)
handle = torch.autograd.graph.register_multi_grad_hook((a, c, torch.ones(2)), first, mode="any")
(c * 3).sum().backward(retain_graph=True)
(c * 5).sum().backward(retain_graph=True)
with handle:
    pass
(c * 7).sum().backward()
print(a.grad)
""",
    "multi_grad_hook_order_with_other_hooks": """
x = torch.tensor(1.0, requires_grad=True)
y = x * 2
z = y * 3
y.register_hook(lambda g: print("y hook", g))
x.register_hook(lambda g: print("x hook", g))
torch.autograd.graph.register_multi_grad_hook((x, y), lambda grads: print("multi", grads))
z.register_hook(lambda g: print("z hook", g))
z.backward()
print(x.grad)
""",
    "multi_grad_hook_nested_backward": """
x = torch.tensor(1.0, requires_grad=True)
y = x * 2
z = y * 3
torch.autograd.graph.register_multi_grad_hook((x, y), lambda grads: print("multi", [g.item() for g in grads]))
def outer(g):
    w = torch.tensor(2.0, requires_grad=True)
    with torch.enable_grad():
        (w * 5).backward()
    print("inner", w.grad)
z.register_hook(outer)
z.backward()
""",
    "multi_grad_hook_grad_of_leaf": """
a = torch.tensor([1., 2.], requires_grad=True)
b = torch.tensor([3., 4.], requires_grad=True)
c = a * b
d = c * 2
seen = []
torch.autograd.graph.register_multi_grad_hook((c, d), lambda g: seen.append([x is not None for x in g]))
print(torch.autograd.grad(d.sum(), (b, c), retain_graph=True)[1])
torch.autograd.graph.register_multi_grad_hook((a, d), lambda g: seen.append([x is not None for x in g]))
for inputs in ((b,), (a,)):
    try:
        print(torch.autograd.grad(d.sum(), inputs, retain_graph=True))
    except RuntimeError as error:
        print(error)
d.sum().backward(inputs=[a])
print(seen, a.grad)
""",
    "allow_mutation_on_saved_tensors": """
with torch.autograd.graph.allow_mutation_on_saved_tensors():
    a = torch.ones(2, 3, requires_grad=True)
    b = a.clone()
    out = (b ** 2).sum()
    b.sin_()
    out.sum().backward()
    print(a.grad, b)
    c = a.clone()
    d = c * c
    print(d.grad_fn._saved_self is c)
    c.add_(1)
    print(d.grad_fn._saved_self is c, d.grad_fn._saved_self)
    d.sum().backward(retain_graph=True)
    print(a.grad)
    e = a.clone()
    f = e.exp()
    e.mul_(0)
    f.sum().backward()
    print(a.grad)
try:
    d.sum().backward()
except AssertionError as error:
    print("AssertionError", error)
x = torch.ones(2, requires_grad=True).clone()
y = x * x
x.add_(1)
try:
    y.sum().backward()
except RuntimeError as error:
    print("outside the context:", str(error)[:100])
""",
}

ERRORS = {
    "edge_of_constant": "torch.autograd.graph.get_gradient_edge(torch.ones(2))",
    "multi_hook_mode": "torch.autograd.graph.register_multi_grad_hook((torch.ones(1, requires_grad=True),), print, "
                       "mode='some')",
    "multi_hook_constant": "torch.autograd.graph.register_multi_grad_hook((torch.ones(1, requires_grad=True), "
                           "torch.ones(1)), print)",
    "nested_mutation_contexts": """
with torch.autograd.graph.allow_mutation_on_saved_tensors():
    with torch.autograd.graph.allow_mutation_on_saved_tensors():
        pass
""",
    "materialize_edge": """
x = torch.ones(2, requires_grad=True)
y = x * 2
torch.autograd.grad((x * 3).sum(), torch.autograd.graph.get_gradient_edge(y), allow_unused=True,
                    materialize_grads=True)
""",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_graph_utility_matches_torch(name):
    assert_same(PROGRAMS[name])


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_graph_utility_errors_match_torch(name):
    assert_same_error(ERRORS[name])


def test_multi_grad_hook_outside_backward_is_refused():
    """The hooks it registers expect a backward pass (PyTorch's AssertionError, the same words)."""
    import gradviz

    x = gradviz.tensor(1.0, requires_grad=True)
    gradviz.autograd.graph.register_multi_grad_hook((x,), print, mode="any")
    hook = next(iter(x._leaf_hooks.values()))
    with pytest.raises(AssertionError, match="expected this hook to be called inside a backward call"):
        hook(gradviz.tensor(1.0))


def test_leaving_the_mutation_context_frees_the_copies():
    import gradviz

    with gradviz.autograd.graph.allow_mutation_on_saved_tensors() as context:
        x = gradviz.ones(3, requires_grad=True).clone()
        y = x * x
        copies = list(context._saved)
        assert copies and all(copy.copy is not None for copy in copies)
    assert all(copy.copy is None and copy.tensor is None for copy in copies)
    del y
