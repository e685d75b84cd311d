"""Two results of the same elements that differ (a repeated call, the call in place, under another
core_mask, the other variant, the element at another position): the element as a report shows
it and what every difference has in common.

An example is the first element that differs (:func:`difference_example`): its case and index,
its inputs, both results and the correctly rounded one, how many of the compared elements
differ. What every difference has in common (:func:`common_causes`) is what the diagnosis asks
of a pattern (rules.diagnosis: held by every difference, at least MIN_LIFT times rarer among the
elements compared): a class of the call's beta, said as an open input where the manual leaves it
open ("beta < 0: the manual leaves this open"), the tail of the call or the elements past its
length, a NaN or a subnormal among the element's inputs and results.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sl1conf.adapters.base import Case
from sl1conf.conformance.requirements.records import ElementRecord, case_element, oracle_at
from sl1conf.conformance.rules.diagnosis import MIN_LIFT, WIDTHS, CallNote, beta_words
from sl1conf.conformance.rules.judge import is_subnormal
from sl1conf.reference import formats

__all__ = ["Differ", "differing", "differ_word", "element_words", "difference_example", "common_causes", "rare"]


@dataclass
class Differ:
    """A call whose two results differ: its case id and case (the inputs), both results (dx1 bits,
    ``first`` the one it is compared with) and the indices of the elements that differ."""

    case_id: str
    case: Case
    first: np.ndarray
    then: np.ndarray
    at: np.ndarray


def differing(fmt: formats.Format, first: np.ndarray, then: np.ndarray) -> np.ndarray:
    """Indices of the elements whose bits differ (NaN as a class)."""
    return np.flatnonzero(~formats.same_result(fmt, first, then))


def differ_word(n: int) -> str:
    return "differs" if n == 1 else "differ"


def element_words(fmt: formats.Format, case: Case, k: int, case_id: str) -> str:
    """``case 4.2, element 3 of a call of 7 (dy=0x... x1=0x... x2=0x... beta=0x...)``; an element
    past the call's length is said to be."""
    past = " (past the call's length: a correct call leaves it alone)" if k >= case.elements_written else ""
    return (f"case {case_id}, element {k} of a call of {case.call_length:,}{past} "
            f"(dy={formats.hex_bits(fmt, case.dy[k])} x1={formats.hex_bits(fmt, case.x1[k])} "
            f"x2={formats.hex_bits(fmt, case.x2[k])} beta={formats.hex_bits(fmt, case.beta)})")


def difference_example(fmt: formats.Format, d: Differ, said: tuple, over: str = "", *, got_then: bool = False,
                       expected: "int | None" = None) -> "ElementRecord | CallNote":
    """``d``'s first differing element as a report example (an ElementRecord, records.case_element:
    ``got`` the bits of ``first``, or of ``then`` with ``got_then``), with a detail that says it all
    on one line: the inputs, both results (``said``: the words before each, ``("call #3 gave",
    "call #9")``), the correctly rounded one (``expected``, computed where not given), how many of
    the call's elements differ, and ``over``: what is said of every difference (in parentheses). An
    element past what the call writes: a note about the call (a CallNote), no record."""
    k, case = int(d.at[0]), d.case
    a, b = formats.hex_bits(fmt, d.first[k]), formats.hex_bits(fmt, d.then[k])
    both = f"{said[0]} {a}, {said[1]} {b}"
    tail = f" ({over})" if over else ""
    if k >= case.n:  # past the call's inputs: the bits alone
        return CallNote(d.case_id, f"element {k}: {both}; {d.at.size:,} elements of the call differ{tail}")
    written = k < case.elements_written
    if written and expected is None:
        expected = oracle_at(case, k)
    detail = (element_words(fmt, case, k, d.case_id) + f": {both}"
              + (f", correctly rounded {formats.hex_bits(fmt, expected)}" if written else "")
              + f"; {d.at.size:,} of the call's {case.n:,} elements {differ_word(d.at.size)}{tail}")
    if not written:
        return CallNote(d.case_id, detail)
    return case_element(case, k, int((d.then if got_then else d.first)[k]), expected=expected).but(
        case=d.case_id, element=k, length=int(case.call_length), detail=detail)


def rare(n: int, of: int) -> bool:
    """Whether ``n`` of the elements compared are few enough for a pattern that holds every difference
    to say something (rules.diagnosis.MIN_LIFT)."""
    return of > 0 and n * MIN_LIFT <= of


def common_causes(fmt: formats.Format, differs: list, compared: list, positions: bool = True) -> list:
    """What every differing element has in common and the elements compared mostly lack, as words
    (``only where ...``): the narrowest class of the call's beta that holds them all (an open one
    said as such: ``beta < 0: the manual leaves this open``); with ``positions``, the elements past
    the call's length or the tail of the call (the last n mod W elements, rarer among the differing
    calls' own elements); a NaN or a subnormal among the element's inputs and both results.
    ``differs``: :class:`Differ` per call that differs; ``compared``: (case, first, then) per call
    compared, those that differ included."""
    total = sum(a.size for _, a, _ in compared)
    out = _beta_cause(fmt, differs, compared, total)
    if positions:
        out += _position_causes(differs)
    for name, test in (("NaN", formats.is_nan_bits), ("subnormal", is_subnormal)):
        if all(in_class(fmt, test, d.case, (d.first, d.then), d.at).all() for d in differs) and rare(
                sum(int(np.count_nonzero(in_class(fmt, test, c, (a, b), slice(0, min(c.n, a.size)))))
                    for c, a, b in compared), total):
            out.append(f"only where an input or a result is {name}")
    return out


def _beta_cause(fmt: formats.Format, differs: list, compared: list, total: int) -> list:
    """``only where <class of beta>`` for the class of beta (rules.diagnosis.beta_words) every
    differing call is in that holds the fewest compared elements, where they are rare."""
    common = None
    for d in differs:
        keys = dict(beta_words(fmt, d.case.beta))
        common = keys if common is None else {k: v for k, v in common.items() if k in keys}
    held = {key: 0 for key in common or {}}
    for c, a, _ in compared:
        for key, _ in beta_words(fmt, c.beta):
            if key in held:
                held[key] += a.size
    fits = sorted((n, key) for key, n in held.items() if rare(n, total))
    return [f"only where {common[fits[0][1]]}"] if fits else []


def _position_causes(differs: list) -> list:
    """``only past the call's length`` or ``only in the last n mod W elements of a call``, where
    every difference is there (the narrowest tail, rarer among the differing calls' elements)."""
    written = [d.case.elements_written for d in differs]
    if all((d.at >= m).all() for d, m in zip(differs, written)):
        return ["only past the call's length (elements a correct call leaves alone)"]
    in_calls = sum(d.case.n for d in differs)
    tails = [w for w in WIDTHS if rare(sum(m % w for m in written), in_calls)
             and all(((d.at >= m - m % w) & (d.at < m)).all() for d, m in zip(differs, written))]
    if not tails:
        return []
    w = min(tails, key=lambda w: sum(m % w for m in written))  # the narrowest tail that holds them all
    return [f"only in the last n mod {w} elements of a call (the tail after a vector body of {w})"]


def in_class(fmt: formats.Format, test, case: Case, results: tuple, at) -> np.ndarray:
    """Whether elements ``at`` have an input (dy, x1, x2) or a result (``results``) in ``test``'s class."""
    return np.logical_or.reduce([test(fmt, x[at]) for x in (case.dy, case.x1, case.x2, *results)])
