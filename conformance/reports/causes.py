"""The causes of a run's failures: failing requirements that share one pattern are one cause.

Why: a library with one defect fails many requirements (an element left unwritten breaks the
accuracy, boundary, NaN, subnormal and length rules at once, and the history and position
checks see it too); a list of red ids sends an engineer after each. A cause is the most specific
pattern a failing requirement's failures share: what was seen of the failing calls themselves
(a write after the return, R13's evidence) when it holds nearly all of them (``SHARE``), else
the most specific pattern of its diagnosis holding that many, elements left unwritten when its examples show the fill,
else the requirement itself. Requirements with the same cause are one line, led by the cause.
Derived from a report's run entries (after waivers), so every format says the same.
"""

from __future__ import annotations

import re

from sl1conf.adapters.base import FILL_BYTE
from sl1conf.conformance.rules.diagnosis import CALL_FINDINGS, EXPLANATIONS, NOT_WRITTEN

__all__ = ["SHARE", "SPECIFIC", "NOT_WRITTEN", "causes", "cause_line"]

SHARE = 0.9  # a pattern is a requirement's cause when it holds this share of its failures ...
SPECIFIC = 0.5  # ... and, to come before the unwritten elements, at most this share of the elements checked
POSITIONS = ("tail-", "tile-", "length-", "first", "last", "chunk")  # where in a call, not what it holds ...
POSITION_SPECIFIC = 0.2  # ... a cause only when this specific: in a run of short calls every element is "in the tail"
_FILL = re.compile(rf"\b0x({FILL_BYTE:02x}){{2}}(?:({FILL_BYTE:02x}){{2}})?\b")  # the fill's bits, fp16 or fp32


def _unwritten(example: dict) -> bool:
    """Whether a report example shows an element left unwritten (its bits, or its detail, the fill)."""
    return bool(example.get("not_written")) or bool(_FILL.search(example.get("detail", "")))


def _cause_of(req: dict) -> tuple:
    """One failing requirement's cause and what its evidence adds to it ("in some calls and not in
    others": a flush seen to come and go): the most specific pattern of its diagnosis (of those holding
    SHARE of its failures, the one covering the fewest of the elements checked, at most SPECIFIC), else elements left unwritten (most of
    its failures, or of its examples, the fill), else any pattern holding SHARE of them, else the
    requirement itself."""
    failed = req.get("failed") or 0
    # direct evidence about the calls that failed (a write after the return), then a hypothesis that
    # gives the failing bits themselves (flushing), outrank every inferred pattern
    direct = [d for key in (*CALL_FINDINGS, *EXPLANATIONS) for d in req.get("diagnosis") or []
              if d.get("key") == key and d["failed"] >= SHARE * failed]
    if direct:
        return EXPLANATIONS.get(direct[0]["key"], (direct[0]["pattern"], ""))
    # the most specific pattern holding nearly all of them: the smallest share of the elements checked
    diagnosis = sorted((d for d in req.get("diagnosis") or [] if failed and d["failed"] >= SHARE * failed
                        and (d["checked_share"] <= POSITION_SPECIFIC or not d.get("key", "").startswith(POSITIONS))),
                       key=lambda d: d["checked_share"])
    if diagnosis and diagnosis[0]["checked_share"] <= SPECIFIC:
        return diagnosis[0]["pattern"], ""
    bulk = req.get("bulk")
    if bulk and bulk["kind"].startswith("not written") and bulk["failed"] >= SHARE * bulk["of"]:
        return NOT_WRITTEN, ""
    examples = req.get("examples") or []
    if examples and sum(map(_unwritten, examples)) >= SHARE * len(examples):
        return NOT_WRITTEN, ""
    if diagnosis:
        return diagnosis[0]["pattern"], ""
    return f"{req['id']} {req['title']}", ""


def causes(run: dict) -> list:
    """[{cause, requirements (ids), failed}] of a run's failing required requirements, the causes
    shared by the most requirements first."""
    groups: dict = {}
    for req in run["requirements"]:
        if req["status"] != "fail" or req.get("kind") != "required":
            continue
        cause, adds = _cause_of(req)
        g = groups.setdefault(cause, {"requirements": [], "failed": 0, "adds": []})
        g["requirements"].append(req["id"])
        g["failed"] += req.get("failed") or 0
        if adds and adds not in g["adds"]:
            g["adds"].append(adds)
    out = [{"cause": ", ".join([cause, *g.pop("adds")]), **g} for cause, g in groups.items()]
    return sorted(out, key=lambda c: (-len(c["requirements"]), -c["failed"]))


def cause_line(c: dict) -> str:
    """``not written (...): R01, R02, R14 (9,900 failures)``."""
    return f"{c['cause']}: {', '.join(c['requirements'])} ({c['failed']:,} failure{'s' if c['failed'] != 1 else ''})"
