"""Random straight-line programs over two leaves, for the engine's property-based tests.

A program is a list of ``(op, operand indices)``; ``run_program`` runs it in torch or in gradviz
(both have the same function names), so one drawn program is compared across the libraries.
"""
from hypothesis import strategies as st

UNARY = ["exp", "sin", "cos", "tanh", "sigmoid", "relu", "neg"]
UNARY += ["atan", "sinh", "erf", "expm1"]  # the wider tensor API: recorded backward forms too
BINARY = ["add", "mul", "sub"]


@st.composite
def random_programs(draw, max_steps: int = 10):
    """A random straight-line program over two leaves, as a list of (op, operand indices)."""
    steps = []
    for _ in range(draw(st.integers(1, max_steps))):
        available = 2 + len(steps)
        if draw(st.booleans()):
            steps.append((draw(st.sampled_from(UNARY)), (draw(st.integers(0, available - 1)),)))
        else:
            steps.append((draw(st.sampled_from(BINARY)),
                          (draw(st.integers(0, available - 1)), draw(st.integers(0, available - 1)))))
    return steps


def run_program(lib, steps, x, y):
    values = [x, y]
    for op, args in steps:
        operands = [values[i] for i in args]
        values.append(getattr(lib, op)(*operands) if op != "neg" else -operands[0])
    return sum(v.sum() for v in values[2:]) if len(values) > 2 else values[0].sum()
