"""One element as every report, fuzz summary and terminal line says it (:func:`element_record`:
its inputs, the correctly rounded and the implementation's bits, the distance or the kind of
result that is no distance), and the kinds of error a failing requirement's bulk counts
(:data:`ERROR_KINDS`).

An element is one typed record everywhere (:class:`ElementRecord`, Wycheproof-style: a fixed
schema, flags as booleans): the drivers carry it up to the JSON boundary, and its
:meth:`ElementRecord.to_json` alone decides what is written (the internal distance and position
only where a checkpoint or a fuzz summary keeps them)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

import numpy as np

from sl1conf.adapters.base import fill_bits
from sl1conf.conformance.rules import distances
from sl1conf.conformance.rules.diagnosis import CallNote
from sl1conf.conformance.rules.judge import SPECIALS, special_class
from sl1conf.reference import formats

__all__ = ["UNWRITTEN", "ERROR_KINDS", "error_kinds", "ElementRecord", "element_record", "oracle_at", "case_element",
           "as_json", "detail_of", "with_detail", "CallNote", "as_example"]

_CONTEXT = ("case", "element", "length")  # written before the inputs
_RESULT = ("dy", "x1", "x2", "beta", "expected", "got")  # the bit patterns, in this order
_AFTER = ("detail", "reason", "accepted_as")  # written after the result and the flags


@dataclass(frozen=True)
class ElementRecord:
    """One element as every report, fuzz summary, sweep checkpoint and terminal line says it: the
    inputs, the correctly rounded result and the implementation's (bit patterns, as hex), ``ulp``
    (its distance in ULPs, or the kind of result that is no distance, judge.SPECIALS), the flag
    ``not_written`` (the result has dx1's fill bits), and where given its context: the call
    (``case``, ``element``, ``length``), a ``detail`` said of it, the ``reason`` and what it was
    ``accepted_as`` (beyond the budget). Internal: ``distance`` (formats.ulp_distance, NaN as a
    class: what the worst is chosen by) and ``at`` (a driver's position: what orders ties)."""

    dy: str
    x1: str
    x2: str
    beta: str
    expected: str
    got: str
    ulp: "int | str"
    distance: int
    not_written: bool = False
    at: object = None
    case: Optional[str] = None
    element: Optional[int] = None
    length: Optional[int] = None
    detail: Optional[str] = None
    reason: Optional[str] = None
    accepted_as: Optional[str] = None

    def but(self, **changes) -> "ElementRecord":
        """This record with ``changes`` (dataclasses.replace)."""
        return replace(self, **changes)

    def to_json(self, internal: bool = False, result: bool = True) -> dict:
        """The record as written: context, inputs, results, ``ulp``, flags, detail, reason.
        ``internal``: with its position ``at`` (first) and distance ``ulp_value`` (after ``ulp``),
        as a sweep's checkpoint and a fuzz summary keep them; ``result`` False: the inputs and the
        expected bits only (a call that returned no result)."""
        if not result:
            return {name: getattr(self, name) for name in _RESULT[:5]}
        out = {"at": self.at} if internal and self.at is not None else {}
        out.update((name, getattr(self, name)) for name in _CONTEXT if getattr(self, name) is not None)
        out.update((name, getattr(self, name)) for name in _RESULT)
        out["ulp"] = self.ulp
        if internal:
            out["ulp_value"] = self.distance
        if self.not_written:
            out["not_written"] = True
        out.update((name, getattr(self, name)) for name in _AFTER if getattr(self, name) is not None)
        return out

    @classmethod
    def from_json(cls, data: dict) -> "ElementRecord":
        """What :meth:`to_json` wrote (with ``internal``: a sweep's checkpoint, a fuzz summary; without:
        a report, its distance then the ``ulp`` written, -1 for a kind that is no distance)."""
        ulp = data["ulp"]
        distance = int(data["ulp_value"]) if "ulp_value" in data else ulp if isinstance(ulp, int) else -1
        return cls(**{name: data[name] for name in _RESULT}, ulp=ulp, distance=distance,
                   not_written=bool(data.get("not_written", False)), at=data.get("at"),
                   **{name: data[name] for name in (*_CONTEXT, *_AFTER) if name in data})


def as_example(example) -> "ElementRecord | CallNote":
    """A report example typed: an :class:`ElementRecord` or a :class:`CallNote` as it is, a note
    about a call given as a dict (``{"case", "detail"}``) as a CallNote."""
    return CallNote.from_json(example) if isinstance(example, dict) else example


def as_json(example) -> dict:
    """A report example as written (an :class:`ElementRecord`, a :class:`CallNote`, or a dict note)."""
    return example if isinstance(example, dict) else example.to_json()


def detail_of(example) -> str:
    """What ``example`` (an :class:`ElementRecord` or a note about a call) says: its detail."""
    return as_example(example).detail


def with_detail(example, detail: str):
    """``example`` (an :class:`ElementRecord` or a note about a call) saying ``detail``."""
    return replace(as_example(example), detail=detail)


UNWRITTEN = "not written (dx1 still holds the fill)"  # an element's error kind: no result, no distance
ERROR_KINDS = (*SPECIALS, UNWRITTEN, *distances.WORDS, "a zero of the other sign")
"""What a failing element's error is, for a block's bulk: a kind that is no distance (judge.SPECIALS),
an element left unwritten, or a distance class (rules.distances, the histograms' classes)."""


def error_kinds(j, idx: np.ndarray) -> np.ndarray:
    """Index into ERROR_KINDS of elements ``idx`` of judgement ``j``."""
    fmt = j.fmt
    got, want = j.got[idx], j.expected.oracle[idx]
    out = special_class(fmt, got, want)
    rest = out < 0
    unwritten = rest & (got == fill_bits(fmt)) & (j.case is None or j.case.out_alias is None)
    out[unwritten] = len(SPECIALS)
    rest &= ~unwritten
    d = j.dist[idx]
    out[rest] = np.where(d[rest] == 0, len(ERROR_KINDS) - 1,
                         len(SPECIALS) + 1 + distances.distance_class(np.maximum(d[rest], 1)))
    return out


def element_record(fmt, dy, x1, x2, beta, expected, got, *, distance: "int | None" = None,
                   may_be_fill: bool = True, **context) -> ElementRecord:
    """One element as an :class:`ElementRecord` (reports.view.element_text reads what it writes):
    the inputs, the correctly rounded result and the implementation's (bit patterns, as hex), and
    ``ulp``: its distance in ULPs, or the kind of result that is no distance (judge.SPECIALS: an
    infinity or NaN against a number, the other sign ...). ``distance``: that distance where the
    judge measured it already (else formats.ulp_distance; NaN as a class). ``not_written``: the
    result has dx1's fill bits, all but surely never written (``may_be_fill`` False: an in-place
    call, whose dx1 held an input). ``context``: the record's other fields (``at``, ``case`` ...)."""
    arrays = lambda: (np.array([got], fmt.uint), np.array([expected], fmt.uint))  # noqa: E731 (where asked)
    if distance is None:
        bits, want = arrays()
        distance = 0 if formats.same_result(fmt, bits, want)[0] else int(formats.ulp_distance(fmt, bits, want)[0])
    g, w = int(got), int(expected)
    plain = ((g ^ w) & fmt.sign_mask) == 0 and all((v & fmt.exp_mask) != fmt.exp_mask and v & ~fmt.sign_mask
                                                   for v in (g, w))
    cls = -1 if plain else int(special_class(fmt, *arrays())[0])  # (one sign, finite, nonzero: no class)
    hexes = (formats.hex_bits(fmt, v) for v in (dy, x1, x2, beta, expected, got))
    return ElementRecord(*hexes, ulp=SPECIALS[cls] if cls >= 0 else distance, distance=distance,
                         # dx1's bits from before the call: all but surely never written
                         not_written=bool(may_be_fill and int(got) == fill_bits(fmt)), **context)


def oracle_at(case, k: int) -> int:
    """The correctly rounded result of element ``k`` of ``case`` (an adapters Case), bits."""
    from sl1conf.reference import fast_oracle

    floats = case.floats()
    return int(fast_oracle.smoothl1lossgrad(*(a[k:k + 1] for a in floats[:3]), floats[3]).view(case.format.uint)[0])


def case_element(case, k: int, got: int, distance: "int | None" = None, expected: "int | None" = None,
                 **context) -> ElementRecord:
    """Element ``k`` of ``case`` with the result ``got`` (bits), as :func:`element_record` says an
    element (``expected``: the correctly rounded bits, computed where not given)."""
    return element_record(case.format, case.dy[k], case.x1[k], case.x2[k], case.beta,
                          oracle_at(case, k) if expected is None else expected, got, distance=distance,
                          may_be_fill=case.out_alias is None, **context)
