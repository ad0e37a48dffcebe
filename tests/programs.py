"""Random straight-line programs over two leaves, for the engine's property-based tests.

A program is a list of ``(op, operand indices)``; ``run_program`` runs it in torch or in gradviz
(both have the same function names; ``F.<name>`` is ``nn.functional``'s), so one drawn program is
compared across the libraries.
"""
from hypothesis import strategies as st

UNARY = ["exp", "sin", "cos", "tanh", "sigmoid", "relu", "neg"]
UNARY += ["atan", "sinh", "erf", "expm1"]  # the wider tensor API: recorded backward forms too
BINARY = ["add", "mul", "sub"]
# nn.functional's activations whose backward pass is recorded too (so programs can be differentiated twice).
ACTIVATIONS = ["F.gelu", "F.silu", "F.elu", "F.softplus", "F.leaky_relu", "F.hardtanh", "F.selu", "F.celu",
               "F.tanhshrink", "F.softsign"]
UNARY = UNARY + ACTIVATIONS


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
        function = getattr(lib.nn.functional, op[2:]) if op.startswith("F.") else getattr(lib, op, None)
        values.append(function(*operands) if op != "neg" else -operands[0])
    return sum(v.sum() for v in values[2:]) if len(values) > 2 else values[0].sum()
