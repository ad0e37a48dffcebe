"""``torch.special``: the special functions, under the names PyTorch gives them there.

Most are the same op as the top-level function (``special.expit`` is ``sigmoid`` and records
SigmoidBackward0, ``special.gammaln`` is ``lgamma``, ``special.psi`` is ``digamma``), as in PyTorch.
"""
from __future__ import annotations

from gradviz.ops.activation import log_softmax as _log_softmax, softmax as _softmax
from gradviz.ops.elementwise import erf, exp2, expm1, log1p
from gradviz.ops.special_math import (digamma, entr, erfc, erfcx, erfinv, gammainc, gammaincc, i0, i0e, i1, i1e,
                                      lgamma as gammaln, log_ndtr, logit, multigammaln, ndtr, ndtri, polygamma, sinc,
                                      xlog1py, xlogy, zeta)
from gradviz.ops.statistics import logsumexp
from gradviz.ops.unary import sigmoid as expit
from gradviz.ops.bessel import *  # noqa: F401,F403  (the Bessel functions and orthogonal polynomials)
from gradviz.ops import bessel as _bessel

psi = digamma


def softmax(input, dim, *, dtype=None):
    return _softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    return _log_softmax(input, dim, dtype=dtype)


__all__ = ["digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc", "gammaln",
           "i0", "i0e", "i1", "i1e", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri",
           "polygamma", "psi", "sinc", "softmax", "xlog1py", "xlogy", "zeta"]
__all__ += _bessel.__all__
