"""Recording an op on its fast paths keeps what the general code keeps.

``OpFunction.apply``, ``ctx.save`` and the arithmetic ops make their ``SavedTensor`` records, nodes
and outputs with direct slot copies (no constructor calls) and read the create_graph order only while
such a pass runs. These tests hold the fast paths to the general ones: every slot of a saved record as
``SavedTensor(...)`` would fill it, saved-tensor hooks still called, the order of a node right in
every thread. Parity with PyTorch itself is checked by the parity suites (test_ops_parity.py, ...).
"""
import threading
import weakref

import pytest
from hypothesis import given, settings, strategies as st

import gradviz as gv
from gradviz import grad_mode
from gradviz.autograd.node import SavedTensor, saved_input

SLOTS = SavedTensor.__slots__


def same_record(made, expected) -> None:
    """Every slot of two saved records agrees (the data and the tensor by identity)."""
    for slot in SLOTS:
        mine, theirs = getattr(made, slot), getattr(expected, slot)
        if isinstance(theirs, weakref.ref):
            assert isinstance(mine, weakref.ref) and mine() is theirs(), slot
        else:
            assert mine is theirs or mine == theirs, slot


def inputs():
    """A leaf, an op's output, a view of a leaf and a constant, each saved by some op below."""
    leaf = gv.tensor([1.5, -2.0, 0.25], requires_grad=True)
    made = leaf * 3
    view = leaf[1:]
    constant = gv.tensor([0.5, 4.0, -1.0])
    return leaf, made, view, constant


@pytest.mark.parametrize("which", range(4))
def test_a_saved_input_is_the_record_the_constructor_makes(which):
    tensor = inputs()[which]
    same_record(saved_input(tensor), SavedTensor(tensor))


@pytest.mark.parametrize("program, name, position", [
    (lambda a, b: a * b, "other", 1), (lambda a, b: a * b, "self", 0),
    (lambda a, b: a / b, "other", 1), (lambda a, b: a ** 2, "self", 0),
    (lambda a, b: a.reshape(3, 1).mm(b), "mat2", 1),
])
def test_saved_inputs_of_recorded_ops_match_the_constructor(program, name, position):
    a = gv.tensor([2.0, -3.0, 0.5], requires_grad=True)
    b = gv.tensor([1.0, 4.0, -2.0], requires_grad=True) * 1  # an op's output: it has a grad_fn to keep
    if name == "mat2":
        b = b.reshape(1, 3)  # a view
    out = program(a, b)
    same_record(out.grad_fn._packed[name], SavedTensor((a, b)[position]))


@pytest.mark.parametrize("op", ["tanh", "relu", "sigmoid", "exp", "sqrt"])
def test_a_saved_output_is_the_record_the_constructor_makes(op):
    x = gv.tensor([0.5, 1.5, 2.0], requires_grad=True)
    out = getattr(x, op)()
    entry = out.grad_fn._packed["result"]
    same_record(entry, SavedTensor(out, is_output=True))
    assert out.grad_fn._saved_result.tolist() == out.tolist()


def test_saved_tensor_hooks_still_see_every_saved_tensor():
    packed, unpacked = [], []

    def pack(tensor):
        packed.append(tensor.tolist())
        return tensor

    def unpack(tensor):
        unpacked.append(tensor.tolist())
        return tensor

    x = gv.tensor([0.5, -1.0], requires_grad=True)
    w = gv.tensor([2.0, 3.0], requires_grad=True)
    with gv.autograd.graph.saved_tensors_hooks(pack, unpack):
        loss = ((x * w).tanh() ** 2).sum()
    assert packed == [[2.0, 3.0], [0.5, -1.0], (x * w).tanh().tolist(), (x * w).tanh().tolist()]
    loss.backward()
    assert len(unpacked) == 4


def test_constants_of_binary_ops_are_kept_for_the_graph_view():
    w = gv.tensor([1.0, 2.0], requires_grad=True)
    x = gv.tensor([3.0, 4.0])
    assert [c() if isinstance(c, weakref.ref) else c for c in (w * x).grad_fn._constants] == [None, x]
    assert [c() if isinstance(c, weakref.ref) else c for c in (x * w).grad_fn._constants] == [x, None]
    assert (w * 2.5).grad_fn._constants == (None, 2.5)
    assert getattr((w * w).grad_fn, "_constants", None) is None
    three = gv.addcmul(x, w, x)  # three inputs, two of them without grad
    assert [c() if isinstance(c, weakref.ref) else c for c in three.grad_fn._constants] == [x, None, x]


def test_the_order_of_a_recorded_node_is_per_thread():
    """While one thread runs a create_graph backward pass, ops recorded in another are forward ops."""
    inside, recorded = threading.Event(), threading.Event()
    orders = {}

    def other_thread():
        inside.wait(10)
        y = gv.tensor(2.0, requires_grad=True)
        orders["other"] = getattr(y * y, "grad_fn")._order
        recorded.set()

    def hold(grad):  # runs inside the create_graph pass, which records the nodes of order 2
        orders["inside"] = grad_mode._state.backward_order
        inside.set()
        recorded.wait(10)
        return None

    thread = threading.Thread(target=other_thread)
    thread.start()
    x = gv.tensor(3.0, requires_grad=True)
    out = x * x
    out.register_hook(hold)
    g, = gv.autograd.grad(out, x, create_graph=True)
    thread.join(10)
    assert orders == {"inside": 2, "other": 1}
    assert g.grad_fn._order == 2
    assert not grad_mode.ordering and grad_mode._state.backward_order == 0
    assert (x * x).grad_fn._order == 1


def test_every_name_written_straight_into_a_nodes_saved_entries_has_its_attribute():
    """``_saved_<name>`` is a property made per name (``expose_saved``): a name that some op writes into
    ``_packed`` itself, past ``ctx.save``, must be one of those made at import."""
    import pathlib
    import re

    import gradviz.ops  # noqa: F401  (every op class defined)
    from gradviz.autograd import node

    root = pathlib.Path(gv.__file__).parent
    names = set()
    for path in root.rglob("*.py"):
        text = path.read_text()
        names.update(re.findall(r"_packed\[\"(\w+)\"\]", text))
        for literal in re.findall(r"_packed = (\{[^}]*\})", text):
            names.update(re.findall(r"\"(\w+)\":", literal))
    assert names and names <= node._EXPOSED


def test_a_node_shows_only_its_own_saved_attributes():
    w = gv.tensor([1.0, 2.0], requires_grad=True)
    node = (w * 2.0).grad_fn
    assert [name for name in dir(node) if name.startswith("_saved_") and name != "_saved_requires_grad"] == [
        "_saved_other", "_saved_self"]
    assert node._saved_other.item() == 2.0 and node._saved_self is None
    assert not hasattr(w.tanh().grad_fn, "_saved_other")
    with pytest.raises(AttributeError, match="'TanhBackward0' object has no attribute '_saved_other'"):
        w.tanh().grad_fn._saved_other


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.floats(-1e4, 1e4, width=32) | st.sampled_from([float("inf"), float("-inf")]),
                       min_size=1, max_size=40),
       targets=st.data(), dtype=st.sampled_from(["float32", "float64"]), reduction=st.sampled_from(["mean", "sum"]))
def test_the_one_call_loss_of_bce_with_logits_has_the_general_paths_bits(values, targets, dtype, reduction):
    """Without weights the loss is computed in one backend call; a weight of ones takes the general path,
    whose multiplication by 1 changes no bit: both must agree exactly (and in dtype)."""
    dtype = getattr(gv, dtype)
    t = targets.draw(st.lists(st.floats(0, 1, width=32), min_size=len(values), max_size=len(values)))
    x, target = gv.tensor(values, dtype=dtype), gv.tensor(t, dtype=dtype)
    F = gv.nn.functional
    fast = F.binary_cross_entropy_with_logits(x, target, reduction=reduction)
    general = F.binary_cross_entropy_with_logits(x, target, weight=gv.ones(len(values), dtype=dtype),
                                                 reduction=reduction)
    assert fast.dtype is general.dtype and fast.shape == general.shape
    assert fast._data.tobytes() == general._data.tobytes() or (fast.isnan().item() and general.isnan().item())


def test_dir_of_a_node_lists_torchs_saved_names_and_no_others():
    """A learner finds the saved values with ``[n for n in dir(y.grad_fn) if n.startswith('_saved')]``: gradviz
    must list torch's names exactly, no helper of its own among them."""
    torch = pytest.importorskip("torch")
    import gradviz

    names = []
    for lib in (torch, gradviz):
        a = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
        b = lib.tensor([1.5, 2.0, -0.5])
        made = [a * a, a.exp(), a.norm(), a.sum(), a.sigmoid(), a @ b, lib.nn.functional.pairwise_distance(a, b, 2),
                a.tanh().mean(), lib.nn.functional.mse_loss(a, b), a.clamp(min=0), a.pow(3), a.div(b)]
        names.append([(r.grad_fn.name(), sorted(n for n in dir(r.grad_fn) if n.startswith("_saved")),
                       repr(getattr(r.grad_fn, "_saved_p", None))) for r in made])
    assert names[1] == names[0]
