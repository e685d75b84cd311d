"""R10 to R12: nothing written outside dx1, nothing read outside the inputs, the inputs left
unchanged; judged where the adapter observes them (guard pages, canaries, checksums, or a
harness's memory report), and :func:`call_fault` words each fault the same for certify and
the fuzzer."""

from __future__ import annotations

from sl1conf.conformance.requirements.base import Check, Requirement, RunContext, START_LAYOUT, Tally, start_layout
from sl1conf.conformance.requirements.call_rules import CallRule, Fault, campaign_probe


def call_fault(rid: str, outcome) -> "str | None":
    """What a returned call did wrong for memory requirement ``rid`` (R10, R11, R12), or None.
    Why here: certify and the fuzzer name the same faults with the same words. R10 names the
    array and the side where the adapter knows them ("wrote past the end of dx1", from a guard
    page, a canary or a harness's guard zone)."""
    o = outcome
    if rid == "R10" and (o.wrote_outside or (o.fault and o.fault.startswith("write"))):
        if o.fault and o.fault.startswith(("write", "wrote")):
            return o.fault
        return "wrote outside an array (the adapter does not say which)"
    if rid == "R11" and o.fault and o.fault.startswith("read"):
        return o.fault
    if rid == "R12" and o.inputs_changed:
        return f"changed {', '.join(o.inputs_changed)}"
    return None


OBSERVATION = {"R10": "writes-outside", "R11": "reads-outside", "R12": "inputs-changed"}
"""What an adapter must observe (``Capabilities.observed``) for each memory requirement to apply."""


def _carries(rid: str, outcome) -> bool:
    """Whether an outcome holds the observation ``rid`` is judged on, for an adapter without
    guard pages (a simulator harness sends its memory report with the results of a call made,
    and only if it has one)."""
    if rid == "R10":
        return outcome.wrote_outside is not None or bool(outcome.fault)
    if rid == "R12":
        return outcome.inputs_changed is not None
    return outcome.status == "ok" or bool(outcome.fault)


def _memory(ctx: RunContext, req: "Requirement") -> Check:
    """Each call's faults in both guard layouts (the array's end, then its start, at a guard page),
    where the adapter observes what the requirement is about (guard pages, canaries and input
    checksums; or a harness's memory report, in the calls whose results carry one). Where it
    does not, the entry is not applicable and its ``observed`` says so and why."""
    caps = ctx.adapter.capabilities
    what = OBSERVATION[req.id]
    note = caps.note(what)
    extra = {"observed": note} if note else {}
    if what not in caps.observed():
        return Check(applicable=False, extra=extra)
    t = Tally(ctx.fmt)
    again = [(j.row["id"], o, " (arrays starting at a guard page)") for j, o in start_layout(ctx)]
    for cid, o, where in [(j.row["id"], j.outcome, "") for j in ctx.judged] + [
            (r["id"], o, "") for r, _, o in ctx.broken] + again:
        if not caps.memory_checked and not _carries(req.id, o):
            continue  # nothing observed of this call (a harness that sent no memory report)
        t.checked += 1
        fault = RULES[req.id].fault(None, o)  # (the outcome's alone: the rule reads no case)
        if fault:
            t.note(cid, fault.detail + where)
    if not caps.memory_checked and not t.checked:
        return Check(applicable=False, extra={"observed": getattr(ctx.adapter, "unreported_note", None) or (
            "not observed by this adapter: no call's outcome carried this observation")})
    return Check(t, extra=extra)


KIND = {"R10": "memory", "R11": "memory", "R12": "inputs-changed"}
"""What the fuzzer calls each memory requirement's findings."""


def _rule(rid: str) -> CallRule:
    def fault(case, outcome) -> "Fault | None":
        detail = call_fault(rid, outcome)
        return Fault(KIND[rid], detail) if detail else None
    return CallRule(rid, KIND[rid], fault=fault)


RULES = {rid: _rule(rid) for rid in KIND}
"""R10 to R12, each a fault of one call alone (:func:`call_fault`: the outcome's, no case read). Certify looks at every call of
the run in both guard layouts (the start layout is its plan), those that failed too (a guard page's
fault is a crash), and only where the adapter observes the requirement (``OBSERVATION``); a
campaign at its returned calls in the one layout its adapter gives."""

FAULTS = campaign_probe("memory-faults", *RULES.values())
"""A campaign's returned calls' memory faults, each under its requirement (call by call)."""


ROWS = (
    Requirement("R10", "no-write-outside",
                "Nothing is written outside dx1[0, length) (guard pages and canaries, in both guard layouts; "
                "through a simulator, the harness's guard zones around every array; in a board self-test's "
                "results, its guard zones around dx1); a failure names the array and the side.", _memory,
                plans=(START_LAYOUT,), probes=(FAULTS,), rule=RULES["R10"]),
    Requirement("R11", "no-read-outside",
                "No input is read past its end or before its start (guard pages: each call with every array's "
                "end at a guard page, and again with every array's start right after one; a simulator harness "
                "has none: not observed, and the entry says so).", _memory,
                plans=(START_LAYOUT,), probes=(FAULTS,), rule=RULES["R11"]),
    Requirement("R12", "inputs-unchanged",
                "dy, x1 and x2 are unchanged by the call (unless dx1 is one of them): checksums, or a simulator "
                "harness's memory report.", _memory,
                plans=(START_LAYOUT,), probes=(FAULTS,), rule=RULES["R12"]),
)
