"""Random straight-line programs over two leaves, for the engine's property-based tests.

A program is a list of ``(op, operand indices)``; ``run_program`` runs it in torch or in gradviz
(both have the same function names; ``F.<name>`` is ``nn.functional``'s), so one drawn program is
compared across the libraries.

``random_programs(wider=True)`` also draws the wider API (``WIDER_UNARY``, ``WIDER_BINARY``): order
statistics, summaries, lookups, products, linear algebra and ``torch.special``, each written once as a
function of the library that takes 3-element vectors and gives a 3-element vector or a number. Their
backward passes are not all recorded, so the default vocabulary (which the ``create_graph`` tests
differentiate twice) leaves them out. The linear-algebra ones are built so that their gradients are
defined whatever hypothesis draws: full-rank matrices, and only functions of the singular values or
eigenvalues that do not depend on how a repeated one's vectors are chosen.
"""
from hypothesis import strategies as st

UNARY = ["exp", "sin", "cos", "tanh", "sigmoid", "relu", "neg"]
UNARY += ["atan", "sinh", "erf", "expm1"]  # the wider tensor API: recorded backward forms too
BINARY = ["add", "mul", "sub"]
# nn.functional's activations whose backward pass is recorded too (so programs can be differentiated twice).
ACTIVATIONS = ["F.gelu", "F.silu", "F.elu", "F.softplus", "F.leaky_relu", "F.hardtanh", "F.selu", "F.celu",
               "F.tanhshrink", "F.softsign"]
UNARY = UNARY + ACTIVATIONS




def _well_conditioned(lib, a, b):
    """A full-rank 3 x 3 matrix from two vectors: ``3 I + outer(a, b) / 10`` stays clear of singular for any
    a, b that a program makes (its eigenvalues are 3 and 3 + b·a / 10, and ``tanh`` keeps them bounded)."""
    return lib.eye(3, dtype=a.dtype, device=a.device) * 3 + lib.outer(a.tanh(), b.tanh()) * 0.1


WIDER_UNARY = {
    # order statistics and summaries
    "cummax": lambda lib, a: lib.cummax(a, 0).values,
    "cummin": lambda lib, a: lib.cummin(a, 0).values,
    "median": lambda lib, a: a.median(),
    "kthvalue": lambda lib, a: a.kthvalue(2).values,
    "sort": lambda lib, a: a.sort(descending=True).values,
    "logcumsumexp": lambda lib, a: lib.logcumsumexp(a, 0),
    "aminmax": lambda lib, a: (lambda both: both.max - both.min * 2)(lib.aminmax(a)),
    "std_mean": lambda lib, a: (lambda both: both[0] + both[1])(lib.std_mean(a)),
    "nansum": lambda lib, a: lib.nansum(a),
    # lookups
    "take_along_dim": lambda lib, a: lib.take_along_dim(a, lib.tensor([2, 0, 2], device=a.device)),
    "take": lambda lib, a: a.take(lib.tensor([1, 1, 0], device=a.device)),
    "index_fill": lambda lib, a: a.index_fill(0, lib.tensor([1], device=a.device), 0.5),
    "gather": lambda lib, a: a.gather(0, lib.tensor([0, 2, 1], device=a.device)),
    # products and linear algebra
    "outer_rows": lambda lib, a: lib.outer(a, a.flip(0)).sum(0),
    "cross_flipped": lambda lib, a: lib.linalg.cross(a, a.flip(0)),
    "vector_norm_3": lambda lib, a: lib.linalg.vector_norm(a, 3),
    "det": lambda lib, a: lib.linalg.det(_well_conditioned(lib, a, a.flip(0))),
    "solve": lambda lib, a: lib.linalg.solve(_well_conditioned(lib, a, a.roll(1, 0)), a),
    "inv_row": lambda lib, a: lib.linalg.inv(_well_conditioned(lib, a, a)).sum(1),
    "cholesky_row": lambda lib, a: lib.linalg.cholesky(
        (lambda m: m @ m.mT)(_well_conditioned(lib, a, a.flip(0)))).sum(0),
    "nuclear_norm": lambda lib, a: lib.linalg.matrix_norm(_well_conditioned(lib, a, a.roll(1, 0)), "nuc"),
    "eigvalsh_squares": lambda lib, a: (lib.linalg.eigvalsh(
        (lambda m: m + m.mT)(_well_conditioned(lib, a, a))) ** 2).sum(),
    "pinv_row": lambda lib, a: lib.linalg.pinv(_well_conditioned(lib, a, a.flip(0))).sum(0),
    "qr_R_diagonal": lambda lib, a: lib.linalg.qr(_well_conditioned(lib, a, a.roll(1, 0))).R.diagonal() ** 2,
    # torch.special
    "i0e": lambda lib, a: lib.special.i0e(a),
    "i1": lambda lib, a: lib.special.i1(a.tanh() * 3),
    "i1e": lambda lib, a: lib.special.i1e(a),
    "erfcx": lambda lib, a: lib.special.erfcx(a.tanh() * 4),
    "log_ndtr": lambda lib, a: lib.special.log_ndtr(a.tanh() * 5),
    "ndtri": lambda lib, a: lib.special.ndtri(a.sigmoid() * 0.9 + 0.05),
    "polygamma": lambda lib, a: lib.special.polygamma(2, a.sigmoid() + 0.5),
    "multigammaln": lambda lib, a: lib.special.multigammaln(a.sigmoid() + 2, 3),
    "gammainc": lambda lib, a: lib.special.gammainc(lib.tensor([0.5, 2.0, 4.5], dtype=a.dtype, device=a.device),
                                                    a.exp()),
    "zeta": lambda lib, a: lib.special.zeta(lib.tensor([2.0, 3.5, 5.0], dtype=a.dtype, device=a.device),
                                            a.sigmoid() + 0.5),
    "xlog1py": lambda lib, a: lib.special.xlog1py(a, a.exp()),
    "digamma": lambda lib, a: lib.digamma(a.sigmoid() + 0.2),
    "erfinv": lambda lib, a: lib.erfinv(a.tanh() * 0.9),
}
WIDER_BINARY = {
    "logaddexp": lambda lib, a, b: lib.logaddexp(a, b),
    "dot": lambda lib, a, b: lib.dot(a, b),
    "cross": lambda lib, a, b: lib.linalg.cross(a, b),
    "outer_columns": lambda lib, a, b: lib.outer(a, b).sum(1),
    "solve_pair": lambda lib, a, b: lib.linalg.solve(_well_conditioned(lib, a, b), b),
    "xlogy": lambda lib, a, b: lib.xlogy(a, b.exp()),
}


@st.composite
def random_programs(draw, max_steps: int = 10, wider: bool = False):
    """A random straight-line program over two leaves, as a list of (op, operand indices); ``wider`` adds
    the wider API's ops to the vocabulary."""
    unary = UNARY + sorted(WIDER_UNARY) if wider else UNARY
    binary = BINARY + sorted(WIDER_BINARY) if wider else BINARY
    steps = []
    for _ in range(draw(st.integers(1, max_steps))):
        available = 2 + len(steps)
        if draw(st.booleans()):
            steps.append((draw(st.sampled_from(unary)), (draw(st.integers(0, available - 1)),)))
        else:
            steps.append((draw(st.sampled_from(binary)),
                          (draw(st.integers(0, available - 1)), draw(st.integers(0, available - 1)))))
    return steps


def _vector(a):
    """The wider ops take 3-element vectors: a number (a reduction's result) is expanded to one."""
    return a.expand(3) if a.ndim == 0 else a


def _function(lib, op):
    if op in WIDER_UNARY:
        return lambda a: WIDER_UNARY[op](lib, _vector(a))
    if op in WIDER_BINARY:
        return lambda a, b: WIDER_BINARY[op](lib, _vector(a), _vector(b))
    if op == "neg":
        return lambda a: -a
    return getattr(lib.nn.functional, op[2:]) if op.startswith("F.") else getattr(lib, op)


def run_program(lib, steps, x, y):
    values = [x, y]
    for op, args in steps:
        values.append(_function(lib, op)(*[values[i] for i in args]))
    return sum(v.sum() for v in values[2:]) if len(values) > 2 else values[0].sum()
# -- more two-operand math, distances, diag_embed and shrinkage in the wider programs -----------------------------
WIDER_UNARY.update({
    "softshrink": lambda lib, a: lib.nn.functional.softshrink(a, 0.3),
    "hardshrink": lambda lib, a: lib.nn.functional.hardshrink(a, 0.3),
    "glu_doubled": lambda lib, a: lib.nn.functional.glu(lib.cat([a, a * 2])),
    "diag_embed_rows": lambda lib, a: lib.diag_embed(a, 1).sum(0)[:3],
    "copysign_negative": lambda lib, a: lib.copysign(a, -1.0),
})
WIDER_BINARY.update({
    "fmax": lambda lib, a, b: lib.fmax(a, b),
    "fmin": lambda lib, a, b: lib.fmin(a, b),
    "copysign": lambda lib, a, b: lib.copysign(a, b),
    "dist": lambda lib, a, b: lib.dist(a, b, 3),
    "cdist_rows": lambda lib, a, b: lib.cdist(a.reshape(3, 1), b.reshape(3, 1)).sum(1),
})
