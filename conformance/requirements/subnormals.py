"""R06 subnormals: gradual underflow, or flushing where the profile allows it, consistently;
the report says which was observed."""

from __future__ import annotations

from dataclasses import replace
import numpy as np

from sl1conf.conformance.rules.judge import is_subnormal
from sl1conf.reference import formats
from sl1conf.reference.reachable import FLUSH_PLACES, reach
from sl1conf.conformance.requirements.base import Check, Requirement, RunContext, element_check


def _subnormals(ctx: RunContext, req: "Requirement") -> Check:
    """R06's element rule, what was observed, and consistency: among the elements flushing
    changes whose result is arithmetic (not a copy of dy or -dy, which no FPU flushes), those
    that are the gradual (IEEE) result and those the error model reaches only through a flush
    must not both occur in one run, on any profile: like is compared with like. The first
    flushed and the first gradual call are named, so a switch after some calls (call history) shows."""
    c = element_check(ctx, req)
    fmt = ctx.fmt
    flushed = gradual = explained = 0
    first_flushed = first_gradual = None
    sensitive_of = []
    parts = [ctx.whole] if ctx.whole is not None else ctx.judged  # the run at once, where it was judged so
    for j in parts:
        o = j.expected.oracle
        dy = np.broadcast_to(j.inputs[0], o.shape) if j.inputs else o
        copied = formats.same_result(fmt, o, dy) | formats.same_result(fmt, o, dy ^ np.array(fmt.sign_mask, fmt.uint))
        sensitive_of.append(~formats.same_result(fmt, o, j.expected.oracle_ftz) & ~copied)
    gradual_of = _gradual(fmt, ctx.profile, parts, [s & j.exact for j, s in zip(parts, sensitive_of)])
    at = (lambda j, k: ctx.element_at(k)) if ctx.whole is not None else (lambda j, k: (j, k))  # noqa: E731
    for j, sensitive, ieee in zip(parts, sensitive_of, gradual_of):
        only_flushed = sensitive & j.flushed
        if only_flushed.any():
            flushed += int(only_flushed.sum())
            first_flushed = first_flushed or at(j, int(np.flatnonzero(only_flushed)[0]))
        if ieee.any():
            gradual += int(ieee.sum())
            first_gradual = first_gradual or at(j, int(np.flatnonzero(ieee)[0]))
        explained += int((sensitive & j.ftz & ~j.exact & ~j.flushed).sum())
    if flushed and gradual:
        (jf, kf), (jg, kg) = first_flushed, first_gradual
        c.tally.note(jf.row["id"], f"flushes inconsistently: {flushed} elements flushed (first: case {jf.row['id']} "
                     f"element {kf}) and {gradual} with gradual underflow (first: case {jg.row['id']} element {kg})")
    c.extra["observed"] = (
        "gradual underflow (no flushing seen)" if not flushed and not explained else
        f"flush-to-zero ({flushed} elements), consistently" if not gradual and flushed else
        f"inconsistent: {flushed} elements flushed and {gradual} with gradual underflow in one run" if flushed else
        f"gradual underflow; {explained} elements equal the flush-to-zero result too, each one explained by an "
        "evaluation's rounding or the budget (not counted as flushing)")
    return c


def _gradual(fmt, profile, judged: list, candidates: list) -> list:
    """Per judgement, of its ``candidates`` (the gradual result, where flushing changes it),
    those that show gradual underflow: a subnormal result of arithmetic, or a result that
    reading the subnormal inputs as zero cannot give under the error model (flushing allowed
    everywhere). A result that a flushing evaluation gives too is evidence of neither. One
    ``reach`` over every judgement's elements (its cost is per call, not per element)."""
    out = [c.copy() for c in candidates]
    picked = [(j, np.flatnonzero(c & ~is_subnormal(fmt, j.got))) for j, c in zip(judged, candidates)]
    picked = [(i, j, idx) for i, (j, idx) in enumerate(picked) if idx.size]
    if picked:
        model = replace(profile.error_model, flush=FLUSH_PLACES)
        column = lambda a, j, idx: np.broadcast_to(np.asarray(a, fmt.uint), j.got.shape)[idx]  # noqa: E731
        inputs = [np.concatenate([column(j.inputs[n], j, idx) for _, j, idx in picked]) for n in range(4)]
        got = np.concatenate([j.got[idx] for _, j, idx in picked])
        oracle = np.concatenate([j.expected.oracle[idx] for _, j, idx in picked])
        reached = reach(fmt, model, got, *inputs, oracle, flushing_inputs=True).stage > 0
        for (i, _, idx), r in zip(picked, np.split(reached, np.cumsum([idx.size for _, _, idx in picked])[:-1])):
            out[i][idx[r]] = False
    return out


ROWS = (
    Requirement("R06", "subnormals",
                "Subnormal inputs and results follow gradual underflow, or, where the profile's error model "
                "allows it, flush to zero (inputs, intermediates, the result) consistently; the report says "
                "which was observed.", _subnormals,
                families=("underflow",), observes=True),
)
