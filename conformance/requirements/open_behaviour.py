"""R16 open behaviour (recorded): which acceptable answer the implementation gives where the
manual leaves the answer open (``rules.openbehaviour`` states the questions and bounds)."""

from __future__ import annotations

from collections import Counter

import numpy as np

from sl1conf.conformance.rules import openbehaviour
from sl1conf.conformance.rules.judge import REASONS, Reason
from sl1conf.reference import formats
from sl1conf.conformance.requirements.base import Check, Requirement, RunContext
from sl1conf.conformance.requirements.call_rules import CallRule, Fault, campaign_probe
from sl1conf.conformance.requirements.filing import rejection_filed_under


REACHABLE = REASONS[Reason.REACHABLE]  # what R16 says before what an allowed order took on an open input


def open_answers(judgements) -> dict:
    """R16's record: per open question, how many open elements there were and how many of
    them each acceptable answer explains: the oracle's, any alternative of the call (an element
    can be open for one question and answered by another's rule), "other (within bounds)" (an
    open input's answer that meets its bounds, ``openbehaviour.within_bounds``), ``reachable: <what
    it took>`` (what an order the profile allows gives there, rules.judge: ``clamp-divmul-fp16, as ...,
    on an open input (beta < 0)``, a NaN as any other), ``other``: none of these (accepted within the
    budget, or not at all). An element is open
    for a question where its input raises it (``Judgement.open_q``: beta <= 0, a NaN beta,
    beta = +inf with an infinite diff) or one of its alternatives differs from the oracle."""
    counts: dict = {}
    for j in judgements:
        opened = {}
        for name, bits in j.expected.alternatives.items():
            open_ = ~formats.same_result(j.fmt, bits, j.expected.oracle)
            if open_.any():
                q = openbehaviour.QUESTION_OF[name]
                opened[q] = opened.get(q, np.zeros(open_.shape, bool)) | open_
        if j.open_q is not None:
            for k in np.unique(j.open_q[j.open_q >= 0]).tolist():
                q = openbehaviour.BOUNDED[k]
                opened[q] = opened.get(q, np.zeros(j.open_q.shape, bool)) | (j.open_q == k)
        for question, open_ in opened.items():
            c = counts.setdefault(question, {"elements": 0, "answers": {}})
            c["elements"] += int(open_.sum())
            explained = open_ & j.exact
            hits = {"oracle": explained}
            for name, alt in j.alt.items():
                hits[name] = open_ & alt & ~j.exact  # (an element several alternatives give counts for each)
                explained = explained | hits[name]
            if j.bounded is not None:
                hits[openbehaviour.WITHIN_BOUNDS] = open_ & ~explained & j.bounded
                explained = explained | hits[openbehaviour.WITHIN_BOUNDS]
            # what an order the profile allows gives there (the judge's reason "reachable"), by what it took:
            # said here for every element, a NaN too (no distance: the beyond-budget rows count it by kind only)
            at = np.flatnonzero(open_ & ~explained & (j.reason == Reason.REACHABLE))
            for how, n in Counter(j.accepted_as(at).tolist()).items():
                c["answers"][f"{REACHABLE}: {how}"] = c["answers"].get(f"{REACHABLE}: {how}", 0) + n
            explained[at] = True
            hits["other"] = open_ & ~explained
            for name, hit in hits.items():
                c["answers"][name] = c["answers"].get(name, 0) + int(hit.sum())
    return {q: {"elements": counts[q]["elements"], "answers": {k: v for k, v in counts[q]["answers"].items() if v}}
            for q in openbehaviour.QUESTIONS if q in counts}


def _open_behaviour(ctx: RunContext, req: "Requirement") -> Check:
    observed = open_answers(ctx.judged)
    zero_mask = [j for j in ctx.judged if ctx.variant == "s" and j.case.variant == "s" and j.case.core_mask == 0]
    if zero_mask:
        nothing = sum(j.fill_ok for j in zero_mask)
        answers = {"nothing written": nothing, "wrote with core_mask 0": len(zero_mask) - nothing}
        observed[openbehaviour.CORE_MASK_ZERO] = {"calls": len(zero_mask), "answers": {k: v for k, v in answers.items() if v}}
    for row, case, o, _ in ctx.rejected:
        q = openbehaviour.open_input(case.format, case.beta, case.variant, case.core_mask)
        if q:
            c = observed.setdefault(q, {"answers": {}})
            c["calls"] = c.get("calls", 0) + 1
            c["answers"]["rejected"] = c["answers"].get("rejected", 0) + 1
            c.setdefault("rejected", {"case": row["id"], "detail": o.detail})
    return Check(extra={"observed": {q: observed[q] for q in openbehaviour.QUESTIONS if q in observed}})


ID = "R16"


def refused(case, outcome) -> "Fault | None":
    """A call the implementation refused though the manual defines its input, filed where
    filing.rejection_filed_under says (refusing an open input is R16's answer: nothing wrong)."""
    if outcome.status != "rejected":
        return None
    _, rid = rejection_filed_under(case)
    return Fault("rejected", outcome.detail, rid) if rid else None


REFUSED_RULE = CallRule(ID, "rejected", fault=refused, returned_only=False)
"""A refused call, as one call shows it. Certify files a refused defined input itself, beside the
requirement checks (filing.rejection_failures, with the family's requirement and its own words);
R16's certify check records which answer each open input got, refusals among them."""

REFUSED = campaign_probe("refused-inputs", REFUSED_RULE)


ROWS = (
    Requirement(ID, "open-behaviour",
                "Where the manual leaves the answer open (beta <= 0, a NaN beta, beta = inf with an infinite "
                "diff, diff rounded across the boundary, core_mask = 0), which acceptable answer the "
                "implementation gives, element by element: a named alternative, or another within the "
                "stated bounds (NaN for a NaN input, else no larger than |dy|).",
                _open_behaviour, kind="recorded", families=("beta-special", "core-masks", "boundary-rounded-diff"),
                observes=True, probes=(REFUSED,), rule=REFUSED_RULE),
)
