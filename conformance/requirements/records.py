"""One element as every report, fuzz summary and terminal line says it (:func:`element_record`:
its inputs, the correctly rounded and the implementation's bits, the distance or the kind of
result that is no distance), and the kinds of error a failing requirement's bulk counts
(:data:`ERROR_KINDS`)."""

from __future__ import annotations

import numpy as np

from sl1conf.adapters.base import fill_bits
from sl1conf.conformance.rules import distances
from sl1conf.conformance.rules.judge import SPECIALS, special_class
from sl1conf.reference import formats

__all__ = ["UNWRITTEN", "ERROR_KINDS", "error_kinds", "element_record", "oracle_at", "case_element"]


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
                   may_be_fill: bool = True) -> dict:
    """One element as every report, fuzz summary and terminal line says it (reports.view.element_text
    reads it): the inputs, the correctly rounded result and the implementation's (bit patterns,
    as hex), and ``ulp``: its distance in ULPs, or the kind of result that is no distance
    (judge.SPECIALS: an infinity or NaN against a number, the other sign ...). ``ulp_value``: the
    distance (formats.ulp_distance; NaN as a class), what the worst is chosen by (the writers
    leave it out); ``distance``: that distance where the judge measured it already.
    ``not_written``: the result has dx1's fill bits, all but surely never written (``may_be_fill``
    False: an in-place call, whose dx1 held an input)."""
    want, bits = np.array([expected], fmt.uint), np.array([got], fmt.uint)
    if distance is None:
        distance = 0 if formats.same_result(fmt, bits, want)[0] else int(formats.ulp_distance(fmt, bits, want)[0])
    cls = int(special_class(fmt, bits, want)[0])
    out = {"dy": formats.hex_bits(fmt, dy), "x1": formats.hex_bits(fmt, x1), "x2": formats.hex_bits(fmt, x2),
           "beta": formats.hex_bits(fmt, beta), "expected": formats.hex_bits(fmt, expected),
           "got": formats.hex_bits(fmt, got), "ulp": SPECIALS[cls] if cls >= 0 else distance, "ulp_value": distance}
    if may_be_fill and int(got) == fill_bits(fmt):
        out["not_written"] = True  # dx1's bits from before the call: all but surely never written
    return out


def oracle_at(case, k: int) -> int:
    """The correctly rounded result of element ``k`` of ``case`` (an adapters Case), bits."""
    from sl1conf.reference import fast_oracle

    floats = case.floats()
    return int(fast_oracle.smoothl1lossgrad(*(a[k:k + 1] for a in floats[:3]), floats[3]).view(case.format.uint)[0])


def case_element(case, k: int, got: int, distance: "int | None" = None, expected: "int | None" = None) -> dict:
    """Element ``k`` of ``case`` with the result ``got`` (bits), as :func:`element_record` says an
    element (``expected``: the correctly rounded bits, computed where not given)."""
    return element_record(case.format, case.dy[k], case.x1[k], case.x2[k], case.beta,
                          oracle_at(case, k) if expected is None else expected, got, distance=distance,
                          may_be_fill=case.out_alias is None)
