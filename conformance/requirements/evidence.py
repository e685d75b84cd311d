"""What a driver found of one requirement: the one evidence certify, fuzz and sweep report it by.

One shape for the three drivers: the elements the requirement's rule rejected (how many, and
the worst of them as an element record, ``records.ElementRecord``), the calls that failed it
(how many, and the first, with what was seen), and how much was checked. Evidence merges in
any order to the same evidence (the worst is the farthest, then the one at the lowest
position; the first call is the one at the lowest position), so the families of a run, the
batches and shards of a fuzz campaign and the blocks of a sweep, whichever worker judged them
and in whatever order they came back, add up to one; and it is serialisable (a sweep's
checkpoint, a fuzz summary). A position (``at``) is what orders a driver's elements and
calls: certify's (call added, element), a sweep's pair number (a call's: its block), a fuzz
campaign's [batch, case, element] (a call's: [batch, case]).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from sl1conf.conformance.requirements.records import ElementRecord

__all__ = ["Evidence", "add_evidence", "evidence_of", "worst_order", "worst_key", "pick"]


def _position(at) -> tuple:
    return tuple(at) if isinstance(at, (list, tuple)) else (at,)


def worst_key(distance: int, at) -> tuple:
    """:func:`worst_order`'s key of an element not made a record yet (a sweep's C pass gives its
    distance and pair number: the record is made only where it would replace)."""
    return (-distance, _position(at))


def worst_order(e: ElementRecord) -> tuple:
    """The order the worst element is chosen by: the larger distance (NaN against a number,
    ``formats.NAN_MISMATCH``, counts as the largest), then the lower position."""
    return worst_key(e.distance, e.at)


def pick(a, b, key):
    """Of ``a`` and ``b`` (either None), the one ``key`` orders first (``a`` on a tie)."""
    return b if a is None or (b is not None and key(b) < key(a)) else a


@dataclass
class Evidence:
    """One requirement's evidence: ``checked`` elements (or calls) looked at (certify's; fuzz and
    sweep count what they checked for the whole campaign or plane, and leave it 0), ``elements``
    rejected (``worst``: the worst, an ElementRecord with its distance and its position ``at``), failing ``calls`` (``first_call``: ``{"at", "kind", "detail"}``)."""

    checked: int = 0
    elements: int = 0
    calls: int = 0
    worst: Optional[ElementRecord] = None
    first_call: Optional[dict] = None

    @property
    def failed(self) -> int:
        """Elements and calls that failed it."""
        return self.elements + self.calls

    def add_elements(self, n: int, worst: Optional[ElementRecord] = None) -> "Evidence":
        """``n`` rejected elements, ``worst`` the worst of them (an ElementRecord with ``at``)."""
        self.elements += int(n)
        self.worst = pick(self.worst, worst, worst_order)
        return self

    def add_call(self, at, kind: str, detail: str) -> "Evidence":
        """One failing call at position ``at``: what was seen (``kind``) and said (``detail``)."""
        self.calls += 1
        if self.first_call is None or _position(at) < _position(self.first_call["at"]):
            self.first_call = {"at": at, "kind": kind, "detail": detail[:500]}
        return self

    def merge(self, other: "Evidence") -> "Evidence":
        self.checked += other.checked
        self.add_elements(other.elements, other.worst)
        if other.first_call is not None:
            self.add_call(other.first_call["at"], other.first_call["kind"], other.first_call["detail"])
            self.calls += other.calls - 1
        return self

    def to_json(self) -> dict:
        """As a sweep's checkpoint and a fuzz summary keep it: the worst with its position and distance."""
        return {"checked": self.checked, "elements": self.elements, "calls": self.calls,
                "worst": None if self.worst is None else self.worst.to_json(internal=True),
                "first_call": self.first_call}

    @classmethod
    def from_json(cls, d: dict) -> "Evidence":
        return cls(d["checked"], d["elements"], d["calls"],
                   None if d["worst"] is None else ElementRecord.from_json(d["worst"]), d["first_call"])


def add_evidence(into: dict, other: dict) -> dict:
    """Requirement id -> Evidence ``other`` merged into ``into`` (returned)."""
    for rid, e in other.items():
        into.setdefault(rid, Evidence()).merge(e)
    return into


def evidence_of(data: dict) -> dict:
    """Requirement id -> Evidence, from its JSON (``{rid: Evidence.to_json()}``)."""
    return {rid: Evidence.from_json(e) for rid, e in data.items()}
