"""The typed parts of a requirement's result and a run's error statistics: what the renderers
read, each a frozen record with ``to_json``/``from_json`` (the report schema's objects, their keys
in the schema's order), so that JSON is made and read at the file boundary only.

Why apart from ``results``: these are the pieces (a call's note, a pattern of the diagnosis, the
commonest error, what was accepted beyond the budget, the counts by reason, a run's error
statistics); ``results`` assembles them into a requirement's, a run's and a report's result."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union

from sl1conf.conformance.requirements.records import CallNote, ElementRecord
from sl1conf.conformance.rules.diagnosis import Pattern
from sl1conf.conformance.rules.judge import REASONS

__all__ = ["CallNote", "Example", "example_from_json", "Pattern", "pattern_from_json", "Bulk", "BeyondBudget", "ReasonCounts",
           "OpenAnswer", "observed_from_json", "observed_to_json", "NoDistance", "ByRatio", "ErrorSummary"]


Example = Union[ElementRecord, CallNote]
"""A report example: an element, or a note about a call."""


def example_from_json(d: dict) -> Example:
    """A written example: an element record where it has bits, else a note about a call."""
    return ElementRecord.from_json(d) if "got" in d else CallNote.from_json(d)


def pattern_from_json(d: dict) -> Pattern:
    """A written pattern of a diagnosis (rules.diagnosis.Pattern), its example typed."""
    return Pattern.from_json(d, example_from_json)


@dataclass(frozen=True)
class Bulk:
    """The commonest kind of error of a failing requirement (records.ERROR_KINDS) and its first element."""

    kind: str
    failed: int
    of: int
    example: ElementRecord

    def to_json(self) -> dict:
        return {"kind": self.kind, "failed": self.failed, "of": self.of, "example": self.example.to_json()}

    @classmethod
    def from_json(cls, d: dict) -> "Bulk":
        return cls(d["kind"], d["failed"], d["of"], ElementRecord.from_json(d["example"]))


@dataclass(frozen=True)
class BeyondBudget:
    """Elements accepted beyond the budget with a distance: how many, the farthest distance, by
    reason and what it took (reason -> what -> elements), the farthest element (its reason and
    what it took in the record), where kept."""

    elements: int
    max_ulp: int
    by: dict
    worst: Optional[ElementRecord] = None

    def to_json(self) -> dict:
        return {"elements": self.elements, "max_ulp": self.max_ulp, "by": self.by,
                **({"worst": self.worst.to_json()} if self.worst is not None else {})}

    @classmethod
    def from_json(cls, d: dict) -> "BeyondBudget":
        return cls(d["elements"], d["max_ulp"], d["by"],
                   ElementRecord.from_json(d["worst"]) if d.get("worst") is not None else None)


@dataclass(frozen=True)
class ReasonCounts:
    """Elements by the judge's reason (rules.judge.REASONS, every reason named, zeros too)."""

    counts: tuple

    def items(self):
        """(reason name, elements) pairs, in REASONS order (what reports.wording.reasons_text reads)."""
        return zip(REASONS, self.counts)

    def __getitem__(self, name: str) -> int:
        return self.counts[REASONS.index(name)]

    def to_json(self) -> dict:
        return dict(self.items())

    @classmethod
    def from_json(cls, d: dict) -> "ReasonCounts":
        if list(d) != list(REASONS):  # an older report's names: kept as written
            return _OtherReasons(tuple(d.values()), tuple(d))
        return cls(tuple(d.values()))


@dataclass(frozen=True)
class _OtherReasons(ReasonCounts):
    """Counts by reasons named otherwise than today's (a report of an older suite), as written."""

    names: tuple = ()

    def items(self):
        return zip(self.names, self.counts)

    def __getitem__(self, name: str) -> int:
        return self.counts[self.names.index(name)]


@dataclass(frozen=True)
class OpenAnswer:
    """R16's record of one open question: the open elements (or calls) and how many each
    acceptable answer explains; ``rejected``: the first call that refused the input. ``order``:
    the keys as they were written (the record grows in the order its answers are seen)."""

    answers: dict
    elements: Optional[int] = None
    calls: Optional[int] = None
    rejected: Optional[CallNote] = None
    order: tuple = ("elements", "calls", "answers", "rejected")

    def to_json(self) -> dict:
        out = {"elements": self.elements, "calls": self.calls, "answers": self.answers,
               "rejected": None if self.rejected is None else self.rejected.to_json()}
        return {k: out[k] for k in self.order if out[k] is not None}

    @classmethod
    def from_json(cls, d: dict) -> "OpenAnswer":
        return cls(d.get("answers", {}), d.get("elements"), d.get("calls"),
                   CallNote.from_json(d["rejected"]) if "rejected" in d else None, tuple(d))


def observed_from_json(obs):
    """What a requirement observed: text, the models matched (a tuple), or R16's answers (question -> OpenAnswer)."""
    if isinstance(obs, dict):
        return {q: seen if isinstance(seen, OpenAnswer) else OpenAnswer.from_json(seen) for q, seen in obs.items()}
    return tuple(obs) if isinstance(obs, list) else obs


def observed_to_json(obs):
    if isinstance(obs, dict):
        return {q: seen.to_json() for q, seen in obs.items()}
    return list(obs) if isinstance(obs, tuple) else obs


@dataclass(frozen=True)
class NoDistance:
    """Results of one kind that is no distance (an infinity or NaN against a number, unwritten):
    how many, how many were accepted, the first."""

    elements: int
    accepted: int
    first: Optional[ElementRecord] = None

    def to_json(self) -> dict:
        return {"elements": self.elements, "accepted": self.accepted,
                **({"first": self.first.to_json()} if self.first is not None else {})}

    @classmethod
    def from_json(cls, d: dict) -> "NoDistance":
        return cls(d["elements"], d["accepted"], ElementRecord.from_json(d["first"]) if "first" in d else None)


@dataclass(frozen=True)
class ByRatio:
    """Per bin of (x1 - x2) / beta (``edges``): elements, those not exact, the largest distance,
    NaN against a number; ``outside``: elements outside the edges."""

    edges: list
    elements: list
    inexact: list
    max_ulp: list
    nan: Optional[list]  # None: a report written before they were counted
    outside: int

    def to_json(self) -> dict:
        return {"edges": self.edges, "elements": self.elements, "inexact": self.inexact, "max_ulp": self.max_ulp,
                **({"nan": self.nan} if self.nan is not None else {}), "outside": self.outside}

    @classmethod
    def from_json(cls, d: dict) -> "ByRatio":
        return cls(d["edges"], d["elements"], d["inexact"], d["max_ulp"], d.get("nan"), d["outside"])


@dataclass(frozen=True)
class ErrorSummary:
    """A run's error statistics (certify.errorstats.ErrorStats): the largest error of finite
    results, NaN mismatches, every element by reason, the ULP histogram per family, the errors by
    ratio, the worst element, those accepted beyond the budget, the results that are no distance."""

    max_ulp: int
    nan_mismatches: int
    reasons: Optional[ReasonCounts]
    buckets: list
    ulp_histogram: dict  # family -> elements per bucket
    by_ratio: ByRatio
    worst: Optional[ElementRecord] = None
    beyond_budget: Optional[BeyondBudget] = None
    not_a_distance: dict = field(default_factory=dict)  # kind -> NoDistance

    @property
    def judged(self) -> int:
        """How many elements the statistics are of (its histograms' counts)."""
        return sum(sum(c) for c in self.ulp_histogram.values())

    def to_json(self) -> dict:
        return {"max_ulp": self.max_ulp, "nan_mismatches": self.nan_mismatches,
                **({"reasons": self.reasons.to_json()} if self.reasons is not None else {}),
                "buckets": self.buckets, "ulp_histogram": self.ulp_histogram, "by_ratio": self.by_ratio.to_json(),
                **({"worst": self.worst.to_json()} if self.worst is not None else {}),
                **({"beyond_budget": self.beyond_budget.to_json()} if self.beyond_budget is not None else {}),
                **({"not_a_distance": {k: v.to_json() for k, v in self.not_a_distance.items()}}
                   if self.not_a_distance else {})}

    @classmethod
    def from_json(cls, d: dict) -> "ErrorSummary":
        return cls(d["max_ulp"], d["nan_mismatches"],
                   ReasonCounts.from_json(d["reasons"]) if "reasons" in d else None, d["buckets"], d["ulp_histogram"],
                   ByRatio.from_json(d["by_ratio"]), ElementRecord.from_json(d["worst"]) if d.get("worst") else None,
                   BeyondBudget.from_json(d["beyond_budget"]) if d.get("beyond_budget") else None,
                   {k: NoDistance.from_json(v) for k, v in (d.get("not_a_distance") or {}).items()})
