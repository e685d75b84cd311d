"""``sl1conf demo``: every evaluation model against the exact oracle, on boundary-weighted data.

A first look at what the suite measures, until ``certify`` exists: how far each
way of evaluating the formula lands from the correctly rounded result, and the
one command that takes the worst element apart.
"""

from __future__ import annotations

import numpy as np

from sl1conf.reference import formats as F
from sl1conf.reference.models import SPEC_ORDER, models_for
from sl1conf.reference.oracle import smoothl1lossgrad

from .sampling import random_batch

BATCH = 250



def run_demo(dtypes, *, elements: int, seed: int, out=print) -> int:
    rng = np.random.default_rng(seed)
    for fmt in dtypes or [F.FP16, F.FP32]:
        batches = [random_batch(fmt, min(BATCH, elements - i), rng) for i in range(0, elements, BATCH)]
        expected = [F.to_bits(fmt, smoothl1lossgrad(*b.floats(fmt))) for b in batches]
        out(f"\n{fmt.name}: {elements} boundary-weighted elements, {len(batches)} betas, seed {seed}")
        out(f"  {'model':<16}{'bit-exact':>10}{'max ULP':>12}{'NaN/sign':>9}  worst element (dy, x1, x2, beta)")
        worst_spec = None
        for model in models_for(fmt):
            exact = nan_or_sign = 0
            worst = (-1, None)
            for b, want in zip(batches, expected):
                got = F.to_bits(fmt, model(*b.floats(fmt)))
                dist = F.ulp_distance(fmt, got, want)
                exact += int(np.sum(F.same_result(fmt, got, want)))
                nan_or_sign += int(np.sum((dist == F.NAN_MISMATCH) | ((dist == 0) & (got != want)
                                                                      & ~F.is_nan_bits(fmt, got))))
                finite = np.where(dist == F.NAN_MISMATCH, -1, dist)
                i = int(np.argmax(finite))
                if finite[i] > worst[0]:
                    worst = (int(finite[i]), (b.dy[i], b.x1[i], b.x2[i], b.beta))
            where = ", ".join(F.hex_bits(fmt, v) for v in worst[1]) if worst[0] > 0 else "-"
            out(f"  {model.name:<16}{exact:>10}{worst[0]:>12}{nan_or_sign:>9}  {where}")
            if model.name == f"{SPEC_ORDER}-{fmt.name}" and worst[0] > 0:
                worst_spec = worst[1]
        if worst_spec is not None:
            dy, x1, x2, beta = (F.hex_bits(fmt, v) for v in worst_spec)
            out(f"  take the spec-order model's worst element apart:\n"
                f"    sl1conf explain --dtype {fmt.name} --dy {dy} --x1 {x1} --x2 {x2} --beta {beta}")
    return 0
