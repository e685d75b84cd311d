"""The causes of a run's failures: failing requirements that share one pattern are one cause.

Why: a library with one defect fails many requirements (an element left unwritten breaks the
accuracy, boundary, NaN, subnormal and length rules at once, and the history and position
checks see it too); a list of red ids sends an engineer after each. A cause is the most specific
pattern a failing requirement's failures share: what was seen of the failing calls themselves
(a write after the return, R13's evidence) when it holds nearly all of them (``SHARE``), else
a hypothesis that gives the failing bits (flushing), the one fact of the arithmetic that holds them
(rules.intermediates: ``dy / beta overflows half``) unless an input class the manual leaves open holds
every one of them (``beta < 0``: then that class), the most specific pattern of its diagnosis
holding that many, elements left unwritten when its examples show the fill; else its failures split
among the facts of the arithmetic that hold them, a cause each, and what none holds is
``unexplained`` with its commonest kind: a requirement's own name is never a cause. Requirements with
the same cause are one line, led by the cause; at most five per run.
Derived from a report's typed runs (after waivers), so every format says the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from collections import Counter

from sl1conf.adapters.base import FILL_BYTE
from sl1conf.conformance.requirements.records import CallNote, ElementRecord
from sl1conf.conformance.reports.wording import distance_text
from sl1conf.conformance.rules.diagnosis import CALL_FINDINGS, EXPLANATIONS, NOT_WRITTEN, OPEN_CLASSES, beta_words
from sl1conf.conformance.rules.intermediates import FACT_PREFIX
from sl1conf.reference.formats import format_by_name

__all__ = ["SHARE", "SPECIFIC", "NOT_WRITTEN", "UNEXPLAINED", "MOST", "Cause", "causes", "cause_line", "report_causes",
           "causes_heading"]

SHARE = 0.9  # a pattern is a requirement's cause when it holds this share of its failures ...
SPECIFIC = 0.5  # ... and, to come before the unwritten elements, at most this share of the elements checked
POSITIONS = ("tail-", "tile-", "length-", "first", "last", "chunk")  # where in a call, not what it holds ...
POSITION_SPECIFIC = 0.2  # ... a cause only when this specific: in a run of short calls every element is "in the tail"
UNEXPLAINED = "unexplained"  # what a cause line says of failures nothing explains, with their commonest kind
MOST = 5  # causes per run, at most (the smaller ones beyond are one line)
_FILL = re.compile(rf"\b0x({FILL_BYTE:02x}){{2}}(?:({FILL_BYTE:02x}){{2}})?\b")  # the fill's bits, fp16 or fp32


def _unwritten(example) -> bool:
    """Whether a report example (an ElementRecord or a CallNote) shows an element left unwritten
    (its bits, or its detail, the fill)."""
    return bool(getattr(example, "not_written", False)) or bool(_FILL.search(example.detail or ""))


def _pattern_cause(req) -> "tuple | None":
    """(cause, adds) of a requirement whose failures one pattern or finding holds nearly all of
    (``SHARE``), or None: direct evidence about the calls that failed (a write after the return), then
    a hypothesis that gives the failing bits themselves (flushing), then the one fact of the
    arithmetic that holds them (rules.intermediates) unless a class of beta the manual leaves open holds
    every one of them (OPEN_CLASSES: that class then), then the most specific pattern of its diagnosis
    (of those holding SHARE of its failures, the one covering the fewest of the elements checked, at
    most SPECIFIC), else elements left unwritten (most of its failures, or of its examples, the
    fill), else any pattern holding SHARE of them."""
    failed, patterns = req.failed or 0, req.diagnosis or ()
    direct = [d for key in (*CALL_FINDINGS, *EXPLANATIONS) for d in patterns
              if d.key == key and d.failed >= SHARE * failed]
    if direct:
        return EXPLANATIONS.get(direct[0].key, (direct[0].pattern, ""))
    fact = [d for d in patterns if d.key.startswith(FACT_PREFIX) and failed and d.failed >= SHARE * failed]
    # an input the manual leaves open that holds every failure comes before a fact: the failures are judged
    # there by the stated bounds and what an allowed order reaches, so that class is what they share (issue
    # 37, item 4), and a fact of the arithmetic there holds only some of them or is incidental (issue 39)
    open_ = [d for key in OPEN_CLASSES for d in patterns if d.key == key and d.failed >= failed]
    if fact and open_:
        return open_[0].pattern, ""
    if fact:
        return fact[0].pattern, ""
    diagnosis = sorted((d for d in patterns if failed and d.failed >= SHARE * failed
                        and not d.key.startswith(FACT_PREFIX)
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
    return None


def _example_beta(req, dtype: str) -> "str | None":
    """The class of beta the manual leaves open that every example of a requirement holds (an element
    compared in two calls, R14's, R15's and R18's examples, names its inputs), said as the diagnosis
    says it (``beta < 0: the manual leaves this open``), or None: what a requirement about calls
    whose failures no pattern of elements was diagnosed for has in common."""
    betas = {e.beta for e in req.examples or () if isinstance(e, ElementRecord) and e.beta}
    if not betas or not dtype:
        return None
    fmt = format_by_name(dtype)
    common = None
    for b in betas:
        words = dict(beta_words(fmt, int(b, 16)))
        common = words if common is None else {k: v for k, v in common.items() if k in words}
    keys = [k for k in OPEN_CLASSES if k in (common or {})]
    return common[keys[0]] if keys else None


def _kind(req) -> str:
    """The commonest kind of a requirement's failures: its bulk's, else its examples' commonest
    distance or kind of result (``the other sign``), else what its failing calls' details begin with
    (``crash``), else ""."""
    if req.bulk:
        return req.bulk.kind
    kinds = Counter(distance_text(e) for e in req.examples or () if isinstance(e, ElementRecord) and e.ulp is not None)
    if kinds:
        return kinds.most_common(1)[0][0]
    # a requirement about calls: what its first failures say before their first colon ("crash")
    heads = Counter(e.detail.split(":")[0] for e in req.examples or ()
                    if isinstance(e, CallNote) and e.detail and len(e.detail.split(":")[0]) <= 40)
    return heads.most_common(1)[0][0] if heads else ""


def _causes_of(req, dtype: str = "") -> list:
    """One failing requirement's causes: (cause, what its evidence adds, failures) each. A pattern or
    finding holding nearly all of its failures is its one cause (:func:`_pattern_cause`); else the
    facts of the arithmetic its failures split among (rules.intermediates: disjoint), each a cause of
    the failures it holds, and what none holds ``unexplained`` with its commonest kind; with no fact,
    the open class of beta all its examples share (a requirement about calls). Never the
    requirement's own name: what nothing explains is said to be unexplained."""
    failed = req.failed or 0
    one = _pattern_cause(req)
    if one is not None:
        return [(*one, failed)]
    facts = [d for d in req.diagnosis or () if d.key.startswith(FACT_PREFIX) and d.failed]
    out = [(d.pattern, "", d.failed) for d in facts]
    left = failed - sum(d.failed for d in facts)
    if not facts:
        beta = _example_beta(req, dtype)
        if beta is not None:
            return [(beta, "", failed)]
    if left > 0 or not out:
        kind = _kind(req)
        out.append((UNEXPLAINED + (f" (most: {kind})" if kind else ""), "", max(left, 0) if out else failed))
    return out


@dataclass
class Cause:
    """One cause of a run's failures: the pattern (with what the evidence adds to it), the
    requirements whose failures it explains, and how many failures they have together."""

    cause: str
    requirements: list = field(default_factory=list)  # ids, in catalog order
    failed: int = 0


def causes(run, most: "int | None" = MOST) -> list:
    """The Causes of a run's (``requirements.results.RunResult``) failing required requirements,
    the causes shared by the most requirements first (``unexplained`` last); a requirement whose
    failures split among several facts is in each of their causes, with the failures each holds. At
    most ``most`` per run (None: every one): the smaller ones beyond are one line that names them."""
    groups: dict = {}  # pattern -> (the cause, what the evidence adds)
    for req in run.requirements:
        if req.status != "fail" or req.kind != "required":
            continue
        for pattern, adds, n in _causes_of(req, getattr(run, "dtype", "")):
            c, added = groups.setdefault(pattern, (Cause(pattern), []))
            if req.id not in c.requirements:
                c.requirements.append(req.id)
            c.failed += n
            if adds and adds not in added:
                added.append(adds)
    out = [Cause(", ".join([c.cause, *added]), c.requirements, c.failed) for c, added in groups.values()]
    out.sort(key=lambda c: (c.cause.startswith(UNEXPLAINED), -len(c.requirements), -c.failed))
    if most is not None and len(out) > most:
        rest = out[most - 1:]
        ids = [r.id for r in run.requirements if any(r.id in c.requirements for c in rest)]
        out = out[:most - 1] + [Cause("smaller causes: " + "; ".join(c.cause for c in rest), ids,
                                      sum(c.failed for c in rest))]
    return out


def cause_line(c: Cause) -> str:
    """``not written (...): R01, R02, R14 (9,900 failures)``."""
    return f"{c.cause}: {', '.join(c.requirements)} ({c.failed:,} failure{'s' if c.failed != 1 else ''})"


def _where(parts) -> str:
    """``fp16 s and fp16 p: R01, R03 (9,900 failures each); fp32 s: R01 (12 failures)``: each run's requirements
    and failures, runs failing alike (the same requirements, as many failures) once."""
    segs: dict = {}
    for where, reqs, n in parts:
        segs.setdefault((tuple(reqs), n), []).append(where)
    return "; ".join(f"{' and '.join(w)}: {', '.join(reqs)} ({n:,} failure{'s' if n != 1 else ''}"
                     f"{' each' if len(w) > 1 else ''})" for (reqs, n), w in segs.items())


def report_causes(runs) -> tuple:
    """(lines, how many causes) of a report's runs: a cause is one line whatever runs it holds (the same
    fact in the fp16 and the fp32 runs: one line naming both, with each run's requirements and failures),
    the causes that explain the most failures (over the runs) first, ``unexplained`` last; at most ``MOST``
    causes, the smaller ones beyond them one more line that names them and sums each run's failures (a
    remainder, not a cause). The count is of the causes, not the lines (the header says both where they
    differ)."""
    merged: dict = {}  # cause -> [(run, requirements, failures)]
    for run in runs:
        for c in causes(run, most=None):
            merged.setdefault(c.cause, []).append((f"{run.dtype} {run.variant}", c.requirements, c.failed))
    entries = sorted(merged.items(), key=lambda e: (e[0].startswith(UNEXPLAINED), -sum(n for _, _, n in e[1])))
    if len(entries) <= MOST + 1:  # a remainder of one cause is that cause
        return [f"{cause}: {_where(parts)}" for cause, parts in entries], len(entries)
    keep, rest = entries[:MOST], entries[MOST:]
    summed: dict = {}  # run -> (requirements, failures) of the smaller causes together
    for _, parts in rest:
        for where, reqs, n in parts:
            ids, k = summed.get(where, ((), 0))
            summed[where] = (tuple(sorted(set(ids) | set(reqs))), k + n)
    smaller = (f"smaller causes ({len(rest)}): " + "; ".join(cause for cause, _ in rest) + ": "
               + _where([(w, list(ids), n) for w, (ids, n) in summed.items()]))
    return [f"{cause}: {_where(parts)}" for cause, parts in keep] + [smaller], len(entries)


def causes_heading(lines: int, total: int) -> str:
    """What the report's causes header says in its parenthesis: ``3; requirements ...`` or, where the smaller
    causes are one line, ``12 causes: the 5 that explain the most failures, and the 7 smaller ones in one
    line; ...``."""
    tail = "requirements whose failures share one pattern are one cause"
    if total <= lines:
        return f"{total}; {tail}"
    return (f"{total} causes: the {lines - 1} that explain the most failures, and the {total - lines + 1} smaller "
            f"ones in one line; {tail}")

