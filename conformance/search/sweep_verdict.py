"""A sweep's verdict, in certify's words, and the summary it ends with.

Why the same words as certify's: a sweep judges every element by the one judge under the same
profile, so what it says of a requirement (the elements rejected, the worst with its input, the
calls that failed, what was accepted beyond the budget or as an open answer, the statistics'
findings) must read as a certification of the same elements would. Nothing checked is no pass.
"""

from __future__ import annotations

from sl1conf.reference import formats

from sl1conf.conformance import requirements
from sl1conf.conformance.requirements import by_id
from sl1conf.conformance.requirements.evidence import pick, worst_order
from sl1conf.conformance.rules import openbehaviour
from sl1conf.conformance.search.sweep_state import save_state
from sl1conf.conformance.search.sweep_tally import PlaneTally, kept

__all__ = ["verdict", "finish", "elapsed"]

FP16 = formats.FP16


def verdict(tally: PlaneTally, profile, beta: "int | None" = None) -> dict:
    """The sweep's verdict, in certify's words: the elements the judge rejected, per
    requirement (the worst of each with its input), calls that returned no result, and what
    was accepted only beyond the budget or as an open alternative, and blocks refused for an open
    ``beta`` (the sweep's). Nothing checked is no pass."""
    evidence = sorted(tally.requirements.items())
    by_req = {rid: {"title": by_id(rid).title, "elements": e.elements, "worst": kept(e.worst)}
              for rid, e in evidence if e.elements}
    rejected = tally.rejected_elements
    example = None
    for _, e in evidence:
        if e.elements:
            example = pick(example, e.worst, worst_order)
    open_by_question = {}
    for name, n in tally.accepted.named.get("alternative", {}).items():
        question = openbehaviour.QUESTION_OF.get(name) or openbehaviour.open_input(FP16, beta, "p")
        open_by_question.setdefault(question, {})[name] = n
    checked = tally.elements - tally.failed - tally.refused_elements
    judged = {}  # each statistic over the sampled blocks (one dtype and variant: its counts summed)
    for s in requirements.STATISTICS:
        total: dict = {}
        for counts in tally.statistics.get(s.name, {}).values():
            s.add(total, counts)
        judged[s.name] = s.judge(total)
    calls = {rid: {"title": by_id(rid).title, "calls": e.calls, "first": e.first_call} for rid, e in evidence
             if e.calls}
    return {"platform": profile.name, "budget_ulp": profile.max_ulp["fp16"], "rejected": rejected,
            "requirements": by_req, "failed_elements": tally.failed, "call_failures": calls, "example": kept(example),
            "reasons": tally.accepted.reasons(), "beyond_budget": tally.accepted.beyond_budget(),
            "open_answers": open_by_question, "checked_elements": checked, **judged,
            "pass": rejected == 0 and tally.failed == 0 and not calls and checked > 0
                    and not any(j["findings"] for j in judged.values())}


def finish(state: dict, profile, out) -> None:
    """Give ``state`` its ``summary`` (the elements, the time, the histogram, the worst element
    and the :func:`verdict` on ``profile``) and write it into OUT/sweep.json."""
    tally = state["tally"]
    seconds = elapsed(state)
    state["summary"] = {
        "elements": tally.elements, "seconds": round(seconds, 2),
        "elements_per_second": round(tally.elements / seconds) if seconds else None,
        "histogram": tally.histogram(), "worst": kept(tally.worst_overall()),
        "verdict": verdict(tally, profile, int(state["config"]["beta"], 16))}
    save_state(out, state)


def elapsed(state: dict) -> float:
    """Seconds over every session (shards run side by side add up: machine time, not wall time)."""
    return sum(s["seconds"] for s in state["sessions"])
