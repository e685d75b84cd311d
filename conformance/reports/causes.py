"""The causes of a run's failures: failing requirements that share one pattern are one cause.

Why: a library with one defect fails many requirements (an element left unwritten breaks the
accuracy, boundary, NaN, subnormal and length rules at once, and the history and position
checks see it too); a list of red ids sends an engineer after each. A cause is the most specific
pattern a failing requirement's failures share: what was seen of the failing calls themselves
(a write after the return, R13's evidence) when it holds nearly all of them (``SHARE``), else
the most specific pattern of its diagnosis holding that many, elements left unwritten when its examples show the fill,
else the requirement itself. Requirements with the same cause are one line, led by the cause.
Derived from a report's typed runs (after waivers), so every format says the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sl1conf.adapters.base import FILL_BYTE
from sl1conf.conformance.rules.diagnosis import CALL_FINDINGS, EXPLANATIONS, NOT_WRITTEN

__all__ = ["SHARE", "SPECIFIC", "NOT_WRITTEN", "Cause", "causes", "cause_line"]

SHARE = 0.9  # a pattern is a requirement's cause when it holds this share of its failures ...
SPECIFIC = 0.5  # ... and, to come before the unwritten elements, at most this share of the elements checked
POSITIONS = ("tail-", "tile-", "length-", "first", "last", "chunk")  # where in a call, not what it holds ...
POSITION_SPECIFIC = 0.2  # ... a cause only when this specific: in a run of short calls every element is "in the tail"
_FILL = re.compile(rf"\b0x({FILL_BYTE:02x}){{2}}(?:({FILL_BYTE:02x}){{2}})?\b")  # the fill's bits, fp16 or fp32


def _unwritten(example) -> bool:
    """Whether a report example (an ElementRecord or a CallNote) shows an element left unwritten
    (its bits, or its detail, the fill)."""
    return bool(getattr(example, "not_written", False)) or bool(_FILL.search(example.detail or ""))


def _cause_of(req) -> tuple:
    """One failing requirement's cause and what its evidence adds to it ("in some calls and not in
    others": a flush seen to come and go): the most specific pattern of its diagnosis (of those holding
    SHARE of its failures, the one covering the fewest of the elements checked, at most SPECIFIC), else elements left unwritten (most of
    its failures, or of its examples, the fill), else any pattern holding SHARE of them, else the
    requirement itself."""
    failed, patterns = req.failed or 0, req.diagnosis or ()
    # direct evidence about the calls that failed (a write after the return), then a hypothesis that
    # gives the failing bits themselves (flushing), outrank every inferred pattern
    direct = [d for key in (*CALL_FINDINGS, *EXPLANATIONS) for d in patterns
              if d.key == key and d.failed >= SHARE * failed]
    if direct:
        return EXPLANATIONS.get(direct[0].key, (direct[0].pattern, ""))
    # the most specific pattern holding nearly all of them: the smallest share of the elements checked
    diagnosis = sorted((d for d in patterns if failed and d.failed >= SHARE * failed
                        and (d.checked_share <= POSITION_SPECIFIC or not d.key.startswith(POSITIONS))),
                       key=lambda d: d.checked_share)
    if diagnosis and diagnosis[0].checked_share <= SPECIFIC:
        return diagnosis[0].pattern, ""
    bulk = req.bulk
    if bulk and bulk.kind.startswith("not written") and bulk.failed >= SHARE * bulk.of:
        return NOT_WRITTEN, ""
    examples = req.examples
    if examples and sum(map(_unwritten, examples)) >= SHARE * len(examples):
        return NOT_WRITTEN, ""
    if diagnosis:
        return diagnosis[0].pattern, ""
    return f"{req.id} {req.title}", ""


@dataclass
class Cause:
    """One cause of a run's failures: the pattern (with what the evidence adds to it), the
    requirements whose failures it explains, and how many failures they have together."""

    cause: str
    requirements: list = field(default_factory=list)  # ids, in catalog order
    failed: int = 0


def causes(run) -> list:
    """The Causes of a run's (``requirements.results.RunResult``) failing required requirements,
    the causes shared by the most requirements first."""
    groups: dict = {}  # pattern -> (the cause, what the evidence adds)
    for req in run.requirements:
        if req.status != "fail" or req.kind != "required":
            continue
        pattern, adds = _cause_of(req)
        c, added = groups.setdefault(pattern, (Cause(pattern), []))
        c.requirements.append(req.id)
        c.failed += req.failed or 0
        if adds and adds not in added:
            added.append(adds)
    out = [Cause(", ".join([c.cause, *added]), c.requirements, c.failed) for c, added in groups.values()]
    return sorted(out, key=lambda c: (-len(c.requirements), -c.failed))


def cause_line(c: Cause) -> str:
    """``not written (...): R01, R02, R14 (9,900 failures)``."""
    return f"{c.cause}: {', '.join(c.requirements)} ({c.failed:,} failure{'s' if c.failed != 1 else ''})"
