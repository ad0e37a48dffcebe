"""Hypothesis draws programs over the wider API (``programs.WIDER_UNARY``/``WIDER_BINARY``: order statistics,
summaries, lookups, products, linear algebra, ``torch.special``) and runs each in torch 2.13 and in gradviz, on
both backends: the loss, every leaf's gradient and the order of the backward steps must agree.

Examples hypothesis once found are pinned below with ``@example``, so they are run on every pass.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pytest.importorskip("torch")

import gradviz as gv  # noqa: E402
from gradviz import backends  # noqa: E402
from orders import torch_order  # noqa: E402
from programs import WIDER_BINARY, WIDER_UNARY, random_programs, run_program  # noqa: E402

VECTORS = st.lists(st.floats(-2, 2), min_size=3, max_size=3)


def _compare(steps, x_values, y_values, backend):
    import torch

    results = []
    for lib in (torch, gv):
        with backends.using(backend if lib is gv else "numpy"):
            leaves = [lib.tensor(v, dtype=lib.float64, requires_grad=True) for v in (x_values, y_values)]
            out = run_program(lib, steps, *leaves)
            # each runs the backward pass, leaving the gradients in the leaves
            order = torch_order(out) if lib is torch else [step.name for step in gv.autograd.backward_steps(out)]
            results.append((out.item(), order, [None if t.grad is None else t.grad.cpu().numpy() for t in leaves]))
    (t_out, t_order, t_grads), (g_out, g_order, g_grads) = results
    np.testing.assert_allclose(g_out, t_out, rtol=1e-9, atol=1e-12)
    assert g_order == t_order
    for expected, actual in zip(t_grads, g_grads):
        if expected is None:
            assert actual is None
        else:
            np.testing.assert_allclose(actual, expected, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("op", sorted(WIDER_UNARY))
def test_each_wider_unary_op_matches_torch(op):
    _compare([(op, (0,)), ("mul", (2, 1))], [0.5, -1.25, 2.0], [1.5, 0.25, -0.75], "numpy")


@pytest.mark.parametrize("op", sorted(WIDER_BINARY))
def test_each_wider_binary_op_matches_torch(op):
    _compare([(op, (0, 1)), ("sin", (2,))], [0.5, -1.25, 2.0], [1.5, 0.25, -0.75], "numpy")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_programs(max_steps=6, wider=True), VECTORS, VECTORS)
def test_wider_random_programs_match_torch(steps, x_values, y_values):
    _compare(steps, x_values, y_values, "numpy")


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_programs(max_steps=5, wider=True), VECTORS, VECTORS)
def test_wider_random_programs_match_torch_on_the_torch_backend(steps, x_values, y_values):
    _compare(steps, x_values, y_values, "torch")
