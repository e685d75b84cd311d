"""A SmoothL1LossGrad kernel in numpy, for ``sl1conf certify --impl python:tests/data/my_kernel.py:grad``.

``grad`` computes the formula in float64 (diff = x1 - x2, then diff / beta * dy in the middle
branch) and rounds once to the working dtype. That is not correctly rounded everywhere: the
float64 result is itself rounded (up to three times: diff for far-apart fp32 inputs, the
division, the product), and rounding it again to fp16 or fp32 can land one ULP off where
the exact value lies within about 2^-51 of a halfway point (double rounding). It is still
conforming on the ieee profile: within its budget (2 ULP fp16, 3 ULP fp32), and exactly
its error model's ``divmul`` order at fp64; `sl1conf certify --impl
python:tests/data/my_kernel.py:grad --platform ieee --variant p` passes
(tests/test_python_adapter.py runs it). NaN, infinities, signed zeros, subnormals and
``beta <= 0`` come out of the IEEE arithmetic as the oracle's (0 / 0 is NaN).
"""

import numpy as np


def grad(dy, x1, x2, beta):
    """dx1 of Smooth L1 loss, element by element, in float64 rounded once to dy's dtype."""
    with np.errstate(all="ignore"):  # NaN and infinity are data here, not mistakes
        b, g = np.float64(beta), dy.astype(np.float64)
        diff = x1.astype(np.float64) - x2.astype(np.float64)
        out = np.where(diff > b, g, np.where(diff < -b, -g, diff / b * g))
        return out.astype(dy.dtype)
