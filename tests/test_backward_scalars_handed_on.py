"""0-d gradients handed from formula to formula as numpy scalars (``GraphTask._unhooked_loop``).

In a plain ``backward()`` of a graph without hooks, a 0-d float32/float64 gradient goes on as a numpy
scalar: the nodes with a scalar form (``Node.scalar_backward``: Add, Sub, Mul, Div, Neg, Pow squares and
cubes, Tanh, Exp, Log, Sigmoid, ReLU, Sqrt) compute on it and give numpy scalars back, the sums of waiting gradients stay scalars, and a 0-d
array is made only for a node that takes arrays, an InputBuffer, or a leaf's first ``.grad``. These
tests run random scalar graphs (ops with and without a scalar form, numbers beside tensors, both
dtypes, special values) through that loop and through the general loop (``_execute_hooked``, arrays
everywhere), bit for bit, and against PyTorch 2.13; they check what each leaf's ``.grad`` is (its own
fresh 0-d array, its version counter), and the errors and hooks that make the scalar form step aside.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import gradviz
from gradviz.autograd import engine

from bits import same_bits

DTYPES = {"float32": np.float32, "float64": np.float64}

# (operands, exact?, what it computes); the ones marked exact are IEEE arithmetic in both libraries (bit for
# bit against torch); tanh, exp, sigmoid, log and sqrt call libm / torch's kernels (compared with the general loop bit for
# bit, and with torch within a few ulps)
OPS = {
    "add": (2, True, lambda a, b: a + b),
    "sub": (2, True, lambda a, b: a - b),
    "mul": (2, True, lambda a, b: a * b),
    "square": (1, True, lambda a: a ** 2),
    "cube": (1, True, lambda a: a ** 3),
    "scale": (1, True, lambda a: a * 0.75),      # a number beside a tensor: no scalar form for its node's metas
    "rscale": (1, True, lambda a: 1.5 * a),
    "shift": (1, True, lambda a: a + 1.5),
    "rsub": (1, True, lambda a: 2.0 - a),         # RsubBackward1: takes arrays only
    "div": (2, True, lambda a, b: a / b),
    "rdiv": (1, True, lambda a: 1.5 / a),          # a number divided by a tensor: arrays only
    "abs": (1, True, lambda a: a.abs()),           # AbsBackward0: arrays only
    "tanh": (1, False, lambda a: a.tanh()),
    "exp": (1, False, lambda a: a.exp()),
    "sigmoid": (1, False, lambda a: a.sigmoid()),
    "neg": (1, True, lambda a: -a),
    "relu": (1, True, lambda a: a.relu()),
    "log": (1, False, lambda a: a.log()),
    "sqrt": (1, False, lambda a: a.sqrt()),
}

SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 3.0e38, -3.0e38, 1e-45, -1e-45, 1.4e-39, float("inf"), float("-inf"),
           float("nan"), 65504.0, 1e-8]


@st.composite
def graphs(draw, ops=tuple(sorted(OPS)), special=True):
    values = st.floats(-3, 3, width=32) | (st.sampled_from(SPECIAL) if special else st.floats(-3, 3, width=32))
    leaves = draw(st.lists(st.tuples(values, st.booleans()), min_size=1, max_size=4))
    steps = []
    for index in range(draw(st.integers(1, 14))):
        op = draw(st.sampled_from(ops))
        available = len(leaves) + index
        steps.append((op, [draw(st.integers(0, available - 1)) for _ in range(OPS[op][0])]))
    total = len(leaves) + len(steps)
    return leaves, steps, draw(st.lists(st.integers(0, total - 1), min_size=1, max_size=4))


def run(lib, dtype, graph, *, hooked=False, passes=1):
    """Each leaf's ``.grad`` (a Tensor, or None) after ``passes`` backward passes over ``graph``."""
    leaves, steps, loss_terms = graph
    values = [lib.tensor(np.asarray(value, dtype=dtype), requires_grad=requires) for value, requires in leaves]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy may warn while the graph is built; not the pass
        for op, operands in steps:
            values.append(OPS[op][2](*(values[i] for i in operands)))
        loss = values[loss_terms[0]]
        for index in loss_terms[1:]:
            loss = loss + values[index]
    if not loss.requires_grad:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the pass itself says nothing, as PyTorch's
        for _ in range(passes):
            if hooked:
                task = engine.GraphTask([engine.gradient_edge(loss)], engine.make_grads([loss], [None]),
                                        keep_graph=passes > 1)
                task.hooked = True  # as a graph with a hook somewhere: the general loop, arrays only
                task.execute()
            else:
                loss.backward(retain_graph=passes > 1)
    return [leaf.grad for leaf in values[:len(leaves)]]


def arrays(grads):
    return [None if g is None else (g._data if isinstance(g, gradviz.Tensor) else g.detach().numpy()) for g in grads]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(DTYPES)), st.integers(1, 2), graphs())
def test_scalars_handed_on_give_the_general_loops_bits(dtype, passes, graph):
    plain = run(gradviz, DTYPES[dtype], graph, passes=passes)
    general = run(gradviz, DTYPES[dtype], graph, hooked=True, passes=passes)
    if plain is None:
        assert general is None
        return
    for mine, theirs in zip(plain, general):
        assert (mine is None) == (theirs is None)
        if mine is None:
            continue
        assert same_bits(mine._data, theirs._data), (graph, mine, theirs)
        # what a leaf's .grad is: a fresh 0-d array of the leaf's dtype, its own memory, PyTorch's layout
        data = mine._data
        assert type(data) is np.ndarray and data.shape == () and data.dtype == DTYPES[dtype]
        assert data.flags.writeable and data.flags.owndata and data.flags.c_contiguous
        assert mine._version == theirs._version
    datas = [g._data for g in plain if g is not None]
    assert len({id(d) for d in datas}) == len(datas)  # no two leaves share one array


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(DTYPES)), st.integers(1, 2), graphs(special=False))
def test_scalars_handed_on_match_torch(dtype, passes, graph):
    torch = pytest.importorskip("torch")
    mine = run(gradviz, DTYPES[dtype], graph, passes=passes)
    theirs = run(torch, DTYPES[dtype], graph, passes=passes)
    if mine is None:
        assert theirs is None
        return
    exact = all(OPS[op][1] for op, _ in graph[1])
    for a, b in zip(arrays(mine), arrays(theirs)):
        assert (a is None) == (b is None)
        if a is None:
            continue
        if exact:
            assert same_bits(a, b), (graph, a, b)
        else:  # libm and torch's fused kernels may differ in the last bits, and tanh's error can grow along a path;
            # near saturation tanh's derivative 1 - y² cancels, so an ulp of y is a large share of a tiny gradient
            # (float32 tanh(3.8): 3.9e-6 here, 7.8e-6 there): the tolerance is relative to max(1, |gradient|)
            tolerance = 1e-4 if dtype == "float32" else 1e-12
            np.testing.assert_allclose(a, b, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_one_gradient_for_two_leaves_gives_each_its_own_grad(dtype):
    """``a + b`` hands one scalar to both leaves: each ``.grad`` is an array of its own, and a later
    accumulation into one leaves the other alone, as in PyTorch."""
    a = gradviz.tensor(np.asarray(1.5, DTYPES[dtype]), requires_grad=True)
    b = gradviz.tensor(np.asarray(-2.0, DTYPES[dtype]), requires_grad=True)
    (a + b).backward()
    assert a.grad._data is not b.grad._data
    assert a.grad._version == b.grad._version == 0
    (a * 3.0).backward()
    assert a.grad.item() == 4.0 and b.grad.item() == 1.0
    assert a.grad._version == 1 and b.grad._version == 0


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_accumulation_into_an_existing_grad_bumps_its_version_once(dtype):
    """Each later pass adds into the same ``.grad`` array in place, one version bump each (as PyTorch's
    AccumulateGrad; the first ``.grad``'s own version is the general loop's, compared above)."""
    torch = pytest.importorskip("torch")
    results = []
    for lib in (gradviz, torch):
        w = lib.tensor(np.asarray(0.25, DTYPES[dtype]), requires_grad=True)
        x = lib.tensor(np.asarray(3.0, DTYPES[dtype]))
        versions, grads = [], []
        for _ in range(3):
            ((w * x) ** 2).tanh().backward()  # w used once: no summed gradient
            versions.append(w.grad._version)
            grads.append(w.grad)
        assert grads[0] is grads[1] is grads[2]
        results.append((versions, np.asarray(w.grad.detach().numpy() if lib is torch else w.grad._data)))
    assert results[0][0] == results[1][0] == [0, 1, 2]
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-6)


def test_a_grad_of_another_dtype_or_shape_takes_the_general_accumulation():
    """A ``.grad`` the user set to another layout (a non-0-d leaf never gets a scalar; a 0-d ``.grad`` of
    the leaf's dtype is all the scalar accumulation takes): the array path, same numbers as the hooked loop."""
    for hooked in (False, True):
        w = gradviz.tensor(np.float32(0.5), requires_grad=True)
        w.grad = gradviz.tensor(np.float32(1.0))
        loss = w * w
        task = engine.GraphTask([engine.gradient_edge(loss)], engine.make_grads([loss], [None]), keep_graph=False)
        task.hooked = hooked
        task.execute()
        assert w.grad.item() == 2.0 and w.grad._version == 1


# -- where the scalar forms step aside ------------------------------------------------------------------
def _errors(lib, make):
    try:
        make(lib)
    except Exception as error:  # noqa: BLE001 - the error is what is compared
        return type(error), str(error)
    return None


@pytest.mark.parametrize("case", ["modified", "freed", "modified tanh", "modified square"])
def test_saved_tensor_errors_are_pytorchs(case):
    torch = pytest.importorskip("torch")

    def make(lib):
        w = lib.tensor(0.5, requires_grad=True)
        x = lib.tensor(2.0, requires_grad=True)
        if case == "modified":
            y = w.clone()
            loss = (y * x) * 2
            with lib.no_grad():
                y += 1.0
            loss.backward()
        elif case == "freed":
            loss = (w * x).tanh()
            loss.backward()
            loss.backward()
        elif case == "modified tanh":
            y = (w * x).tanh()
            loss = y * 3.0
            y.add_(1.0)
            loss.backward()
        else:
            y = w * x
            loss = y ** 2
            y.mul_(2.0)
            loss.backward()

    mine, theirs = _errors(gradviz, make), _errors(torch, make)
    assert mine is not None and mine == theirs


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_saved_tensor_hooks_are_run_and_their_answer_used(dtype):
    """A saved tensor with an unpack hook takes the array path (the hook decides what comes back)."""
    torch = pytest.importorskip("torch")
    answers = []
    for lib in (gradviz, torch):
        calls = []

        def unpack(t):
            calls.append(1)
            return t * 2

        w = lib.tensor(np.asarray(0.75, DTYPES[dtype]), requires_grad=True)
        x = lib.tensor(np.asarray(-1.25, DTYPES[dtype]), requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t, unpack):
            loss = ((w * x) ** 2 + (w - x) ** 3).tanh()
        loss.backward()
        answers.append((len(calls), [np.asarray(v.grad.detach().numpy() if lib is torch else v.grad._data)
                                     for v in (w, x)]))
    assert answers[0][0] == answers[1][0]
    for a, b in zip(answers[0][1], answers[1][1]):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_a_users_function_gets_arrays():
    """A user's Function between scalar formulas receives a 0-d array inside a Tensor, as always."""
    seen = []

    class Spy(gradviz.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            seen.append((type(grad), type(grad._data), grad.shape))
            return grad * 2

    w = gradviz.tensor(0.5, requires_grad=True)
    (Spy.apply(w * w) * 3.0).backward()
    assert seen == [(gradviz.Tensor, np.ndarray, ())]
    assert w.grad.item() == 6.0


def test_numpy_warnings_stay_quiet_and_the_users_state_is_kept():
    """Overflow inside the scalar formulas says nothing (as PyTorch), and the user's numpy state is theirs
    again after the pass."""
    w = gradviz.tensor(3.0e38, requires_grad=True)
    with np.errstate(all="raise"):
        loss = w * 1.0
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            (loss * loss.detach() * 10.0).backward()
        assert np.geterr()["over"] == "raise"
    assert np.isinf(w.grad.item())
