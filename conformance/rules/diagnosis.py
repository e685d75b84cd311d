"""A diagnosis of a failing requirement: which patterns its failing elements share.

A worst case says how bad; a pattern says why. A library that never writes its vector tail
fails on the last n mod V elements of every call, one that mishandles a tile on the last
element of each tile, one that overflows where diff * dy does. For every failing element
rule the suite tests the patterns it can name (elements still holding the fill, position in
the call, core chunk and tile boundaries, the call's length, the value class of the inputs
and the result, the branch) against the elements the rule checked, and reports those that
hold most of the failures and are rarer among the elements checked: each with its count,
the share of checked elements it covers (the base rate) and one representative element
that shows the call's length and the element's index.

A class of the call's beta the manual leaves open (beta <= 0, -inf among them, a NaN beta) says
so: ``beta < 0: the manual leaves this open; outside the stated bounds`` (an element rule fails
there only on an answer the stated bounds do not allow, rules.openbehaviour). Where such a
class, or beta = +inf, holds every failure it is their cause (OPEN_CLASSES), and no position in
the call is reported beside it: the calls of those betas are short, and every element of a
short call is in some tail.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from sl1conf.conformance.rules import intermediates
from sl1conf.conformance.rules.intermediates import FACT_PREFIX
from sl1conf.conformance.rules.openbehaviour import BOUNDED, open_input
from sl1conf.reference import exact
from sl1conf.reference import formats
from sl1conf.reference.cores import core_chunks

__all__ = ["CallNote", "Pattern", "diagnose", "diagnose_many", "WIDTHS", "TILES", "pattern_keys", "beta_classes", "beta_words", "OPEN",
           "OUTSIDE_BOUNDS", "OPEN_CLASSES", "POSITIONAL"]

NOT_WRITTEN = "not written (dx1 still holds what it held before the call)"  # the pattern of unwritten elements
LATE_WRITE = "late-write"  # the key of R13's call finding: calls that wrote dx1 after they returned
CALL_FINDINGS = (LATE_WRITE,)  # keys that are observations of the failing calls themselves, not correlations
FLUSHED = "flushed"  # the key of the elements whose result flushing gives (Judgement.flush_explained)
FLUSHED_TEXT = ("subnormals flushed to zero (DAZ/FTZ): each result is what IEEE arithmetic gives with a subnormal "
                "input read as zero, or a subnormal intermediate or result flushed, and not without")
FLUSH_VARIES = "flushed-in-some-calls"  # the key of R14's and R18's calls whose results differ by a flush
FLUSH_VARIES_TEXT = ("flushing that comes and goes: of the two results that differ, one is what IEEE arithmetic gives "
                     "only with a subnormal flushed (DAZ/FTZ), the other what it gives without (the flush mode differs "
                     "between calls, threads or positions)")
FLUSHING = "subnormals flushed to zero (DAZ/FTZ)"  # the cause both name
EXPLANATIONS = {FLUSHED: (FLUSHING, ""), FLUSH_VARIES: (FLUSHING, "in some calls and not in others")}
"""Keys whose failures were recomputed under a hypothesis that gives their bits (not correlations),
with the cause they name and what the key adds to it (reports.causes)."""
WIDTHS = (4, 8, 16, 32, 64)  # vector widths (elements) whose tail is tested
TILES = (256, 1024, 4096)  # tile sizes (elements) whose boundaries are tested
LENGTHS = ((1, 16, "calls shorter than 16 elements"), (16, 1024, "calls of 16 to 1,023 elements"),
           (1024, 65_536, "calls of 1,024 to 65,535 elements"), (65_536, 1 << 20, "calls of 65,536 to 1,048,575 elements"),
           (1 << 20, None, "calls of 1,048,576 elements or more"))
SHOWN = 4  # patterns reported per requirement
FACTS = 6  # facts of the arithmetic reported per requirement besides (rules.intermediates), the most failures first
MIN_SHARE = 0.5  # a pattern is reported when it holds at least this share of the failures ...
MIN_LIFT = 1.5  # ... and is this many times more common among them than among the elements checked
OPEN = "the manual leaves this open"  # what the words of a class of open inputs add (a beta <= 0, a NaN beta)
OUTSIDE_BOUNDS = "outside the stated bounds"  # ... and an element rule's failures there: no answer the bounds allow
INF_OPEN = "beta-inf-open"  # the key of beta = +inf with an infinite diff (open element by element, not call by call)
OPEN_CLASSES = ("beta-neg-inf", "beta-negative", "beta-zero", "beta-nan", "beta-inf", INF_OPEN)
"""The classes of the call's beta the manual leaves open (or at infinity): one of them that holds every failure is
their cause, before any position in the call (a run of short calls has every element in some tail)."""
POSITIONAL = ("tail-", "tile-", "length-", "first", "last", "chunk")  # keys (prefixes) of where in a call, not what


@dataclass(frozen=True)
class CallNote:
    """An example that names a call (``case``; None: the whole run) but no element: what was seen."""

    case: Optional[str]
    detail: str

    def to_json(self) -> dict:
        return {"detail": self.detail} if self.case is None else {"case": self.case, "detail": self.detail}

    @classmethod
    def from_json(cls, d: dict) -> "CallNote":
        return cls(d.get("case"), d.get("detail", ""))


@dataclass(frozen=True)
class Pattern:
    """One pattern of a diagnosis (rules.diagnosis): what it is, its key, how many of the failures
    it holds (``failed`` of ``of``), the share of the elements checked it covers, an example."""

    pattern: str
    key: str
    failed: int
    of: int
    checked_share: float
    example: object  # an element (an ElementRecord) or a CallNote

    def to_json(self) -> dict:
        return {"pattern": self.pattern, "key": self.key, "failed": self.failed, "of": self.of,
                "checked_share": self.checked_share, "example": self.example.to_json()}

    @classmethod
    def from_json(cls, d: dict, read) -> "Pattern":
        """What :meth:`to_json` wrote; ``read(example)``: its example typed."""
        return cls(d["pattern"], d.get("key", ""), d["failed"], d["of"], d["checked_share"], read(d["example"]))


def _masks(j):
    """(key, description, mask over the call's written elements) of every pattern."""
    fmt, case = j.fmt, j.case
    m = j.exact.size
    k = np.arange(m)
    yield "not-written", NOT_WRITTEN, j.unwritten
    yield FLUSHED, FLUSHED_TEXT, j.flush_explained
    if j.rejected:  # the facts of the arithmetic (rules.intermediates), on the rejected elements written (the
        # elements flushing gives among them: its fact, so a requirement whose failures split among facts counts them)
        rejected = np.logical_or.reduce([np.asarray(r, bool) for r in j.rejected.values()])
        yield from intermediates.facts(fmt, j, rejected & ~j.unwritten)
    for width in WIDTHS:
        yield f"tail-{width}", f"in the last n mod {width} elements (the tail after a vector body of {width})", \
            k >= m - m % width
    yield "first", "the first element of the call", k == 0
    yield "last", "the last element of the call", k == m - 1
    if case.variant == "s" and case.core_mask:
        edge = np.zeros(m, bool)
        for _, lo, hi in core_chunks(m, case.core_mask):
            if hi > lo:
                edge[[lo, hi - 1]] = True
        yield "chunk", "the first or last element of a core's chunk (core_mask split)", edge
    for tile in TILES:
        yield f"tile-{tile}", f"the first or last element of a {tile:,}-element tile", \
            ((k % tile == 0) | (k % tile == tile - 1)) & (m > tile)
    for lo, hi, text in LENGTHS:
        yield f"length-{lo}", text, np.full(m, lo <= m and (hi is None or m < hi))
    o = j.expected.oracle
    inputs = (case.dy[:m], case.x1[:m], case.x2[:m])
    magnitude = lambda b: b & np.array(~fmt.sign_mask & ((1 << fmt.bits) - 1), fmt.uint)  # noqa: E731
    nan = np.logical_or.reduce([formats.is_nan_bits(fmt, b) for b in (*inputs, o)])
    inf = np.logical_or.reduce([magnitude(b) == fmt.exp_mask for b in (*inputs, o)])
    yield "nan", "a NaN input or result", nan
    yield "inf", "an infinite input or result", inf & ~nan
    yield "zero", "a zero result", magnitude(o) == 0
    sub = np.logical_or.reduce([((b & fmt.exp_mask) == 0) & ((b & fmt.frac_mask) != 0) for b in (*inputs, o)])
    yield "subnormal", "a subnormal input or result", sub
    yield "boundary", "diff = +-beta exactly", j.boundary
    yield "overflow", "an intermediate (x1 - x2, diff * dy, 1 / beta) overflows the format", j.overflow_prone
    s, e = exact.exact_diff(fmt, case.x1[:m], case.x2[:m])
    beta = float(exact.beta_value(fmt, case.beta))
    with np.errstate(invalid="ignore"):
        gt, lt = exact.gt(s, e, beta), exact.lt(s, e, -beta)
    yield "gt", "diff > beta (the result is dy)", gt & ~j.boundary
    yield "lt", "diff < -beta (the result is -dy)", lt & ~j.boundary
    yield "mid", "|diff| < beta (the middle line, diff / beta * dy)", ~gt & ~lt & ~j.boundary & ~np.isnan(s)
    # the intermediates' classes: where an honest evaluation leaves the normal range
    with np.errstate(all="ignore"):
        tiny = float(2.0 ** fmt.emin)
        rounded = exact.rounded_diff(fmt, case.x1[:m], case.x2[:m]).astype(np.float64)
        yield "diff-subnormal", "x1 - x2 subnormal in the data format", (np.abs(s) < tiny) & (s != 0)
        yield "diff-overflow", "x1 - x2 overflows the data format (its rounding is infinite)", \
            np.isinf(rounded) & np.isfinite(s)
        ratio = np.abs(s / beta) if beta else np.full(m, np.nan)
        yield "quotient-underflow", "diff / beta underflows (below the smallest normal)", (ratio < tiny) & (ratio > 0)
    # the call's parameters: the same for every element of the call, so a pattern that holds every
    # failure and few of the elements checked names the kind of call that fails
    for key, text in beta_words(fmt, case.beta, OUTSIDE_BOUNDS):
        yield key, text, np.full(m, True)
    if case.beta == fmt.exp_mask and j.open_q is not None:  # beta = +inf: open where the diff is infinite
        yield INF_OPEN, f"beta = +inf with an infinite diff: {OPEN}; {OUTSIDE_BOUNDS}", \
            j.open_q == BOUNDED.index("beta = +inf")
    yield f"variant-{case.variant}", {"s": "the shared variant (_s, core_mask)", "p": "the private variant (_p)"}[
        case.variant], np.full(m, True)
    if case.variant == "s" and case.core_mask:
        mask = int(case.core_mask)
        cores = bin(mask).count("1")
        if cores == 1:
            yield "one-core", "core_mask naming a single core", np.full(m, True)
        elif (mask >> ((mask & -mask).bit_length() - 1)) & ((mask >> ((mask & -mask).bit_length() - 1)) + 1):
            yield "mask-holes", "core_mask with holes (cores not contiguous)", np.full(m, True)
    if getattr(j, "family", ""):
        yield f"family-{j.family}", f"family {j.family}", np.full(m, True)


STATIC_KEYS = ("not-written", FLUSHED, FLUSH_VARIES, "first", "last", "chunk", "nan", "inf", "zero", "subnormal", "boundary", "overflow", "gt",
               "lt", "mid", "diff-subnormal", "diff-overflow", "quotient-underflow", "variant-s", "variant-p",
               "one-core", "mask-holes", "beta-nan", "beta-zero", "beta-negative", "beta-neg-inf", "beta-inf", INF_OPEN,
               "beta-subnormal", "beta-pow2", "beta-not-pow2", "beta-usual", "beta-huge", "beta-tiny", LATE_WRITE)


def pattern_keys() -> tuple:
    """Every key a diagnosis entry can carry (its ``key``; what a waiver's ``pattern`` names), but
    ``family-<name>`` for each vector family (the vectors layer, above this one, knows their names)."""
    return (*STATIC_KEYS, *intermediates.fact_keys(), *(f"tail-{w}" for w in WIDTHS), *(f"tile-{t}" for t in TILES),
            *(f"length-{lo}" for lo, _, _ in LENGTHS))


def beta_classes(fmt, beta: int):
    """(key, text) of every class the call's beta is in (docs/vector-format.md names them)."""
    cls, sign = formats.classify(fmt, int(beta))
    if cls.is_nan:
        yield "beta-nan", "beta is NaN"
        return
    if cls is formats.FloatClass.ZERO:
        yield "beta-zero", "beta = 0"
        return
    if sign:
        if cls is formats.FloatClass.INF:
            yield "beta-neg-inf", "beta = -inf"
        yield "beta-negative", "beta < 0"
        return
    if cls is formats.FloatClass.INF:
        yield "beta-inf", "beta = +inf"
        return
    if cls is formats.FloatClass.SUBNORMAL:
        yield "beta-subnormal", "beta subnormal"
        return
    value = float(exact.beta_value(fmt, beta))
    frac = int(beta) & fmt.frac_mask
    yield ("beta-pow2", "beta a power of two (its reciprocal exact)") if frac == 0 else (
        "beta-not-pow2", "beta not a power of two (its reciprocal rounded)")
    if 0.1 <= value <= 1.0:
        yield "beta-usual", "beta in the manual's usual range, 0.1 to 1.0"
    if value > 2.0 ** -fmt.emin:
        yield "beta-huge", "beta huge (1 / beta below the smallest normal)"
    elif value < 2.0 ** (fmt.emin // 2):
        yield "beta-tiny", f"beta tiny (a normal below 2^{fmt.emin // 2})"


def beta_words(fmt, beta: int, adds: str = "") -> list:
    """:func:`beta_classes` of the call's beta, each said with ``: the manual leaves this open`` where the
    manual leaves the call's answer open (openbehaviour.open_input: beta <= 0, a NaN beta) and
    ``adds`` after it (what a failure there is: an element rule's, ``outside the stated bounds``)."""
    note = f": {OPEN}" + (f"; {adds}" if adds else "") if open_input(fmt, int(beta)) else ""
    return [(key, text + note) for key, text in beta_classes(fmt, beta)]


def diagnose(seen: list, element, findings: "dict | None" = None, noted=()) -> list:
    """The patterns of a requirement's failures. ``seen``: (judgement, failing mask, checked
    mask) per call the requirement judged; ``element(j, k)``: a report example of element k.
    ``findings``: findings about whole calls (key -> (pattern, {case id: what was seen})), tried
    as patterns over the elements and over ``noted``, per failing call or comparison of calls
    the requirement counted (a repeat that differed, a crash), the ids of the calls involved:
    direct evidence, such as a call that wrote dx1 after it returned, explains both.
    Returns [Pattern] (at most SHOWN), strongest first;
    the tails of several widths are one pattern, reported at the width that fits best."""
    return diagnose_many([(seen, element, findings, noted)])[0]


def diagnose_many(asked: list) -> list:
    """:func:`diagnose` of every (seen, element, findings, noted) of ``asked`` (the failing
    requirements of one run), in one pass over their calls: each call's patterns are computed
    once, however many of the requirements judged it (they cost more than the counting)."""
    # Per asked requirement, per pattern (an index into ``keys``): failures, elements checked, the
    # first failing element and where the requirement saw that call, and where it first saw the
    # pattern: each requirement's firsts and its order of patterns are those of its own calls'
    # order (R01's goes family by family), whatever order the calls are walked in here. A call's
    # patterns are one matrix, counted against each requirement's masks in two operations.
    keys: dict = {}  # key -> index
    texts: list = []
    n = len(asked)
    size = 64
    failed, checked = np.zeros((n, size), np.int64), np.zeros((n, size), np.int64)
    never = np.iinfo(np.int64).max
    first_pos, order = np.full((n, size), never), np.full((n, size), never)
    first: list = [{} for _ in asked]  # index -> (judgement, element)
    totals = [[0, 0] for _ in asked]  # per asked: failed, checked
    calls: dict = {}  # id(judgement) -> [judgement, [(asked index, its position there, failing mask, checked mask)]]
    for a, (seen, _, _, _) in enumerate(asked):
        for pos, (j, bad, among) in enumerate(seen):
            if among.any():
                calls.setdefault(id(j), [j, []])[1].append((a, pos, bad, among))

    def index(key, text) -> int:
        nonlocal size, failed, checked, first_pos, order
        if key not in keys:
            keys[key] = len(texts)
            texts.append(text)
            if len(texts) > size:  # more patterns than room: twice the room
                grow = lambda m, fill: np.concatenate([m, np.full((n, size), fill, m.dtype)], axis=1)  # noqa: E731
                failed, checked = grow(failed, 0), grow(checked, 0)
                first_pos, order = grow(first_pos, never), grow(order, never)
                size *= 2
        return keys[key]

    for j, judged_by in calls.values():
        masks = list(_masks(j))
        at = np.array([index(key, text) for key, text, _ in masks], np.intp)
        grid = np.stack([np.broadcast_to(mask, j.exact.shape) for _, _, mask in masks])
        for a, pos, bad, among in judged_by:
            findings = asked[a][2] or {}
            nb, na = int(np.count_nonzero(bad)), int(np.count_nonzero(among))
            totals[a][0] += nb
            totals[a][1] += na
            checked[a, at] += np.count_nonzero(grid & among, axis=1)
            order[a, at] = np.minimum(order[a, at], pos * 4096 + np.arange(at.size))
            if nb:
                hits = grid & bad
                counts = np.count_nonzero(hits, axis=1)
                failed[a, at] += counts
                for m in np.flatnonzero((counts > 0) & (first_pos[a, at] > pos)).tolist():
                    first[a][int(at[m])] = (j, int(np.argmax(hits[m])))
                    first_pos[a, at[m]] = pos
            for f, (key, (text, ids)) in enumerate(findings.items()):  # whole calls: every element or none
                i = index(key, text)
                order[a, i] = min(order[a, i], pos * 4096 + at.size + f)
                if j.case.id in ids:
                    checked[a, i] += na
                    failed[a, i] += nb
                    if nb and first_pos[a, i] > pos:
                        first[a][i], first_pos[a, i] = (j, int(np.argmax(bad))), pos
    out = []
    for a, (_, element, findings, noted) in enumerate(asked):
        seen_keys = sorted((int(order[a, i]), key, i) for key, i in keys.items() if order[a, i] < never)
        stats = {key: [texts[i], int(failed[a, i]), int(checked[a, i]), first[a].get(i)] for _, key, i in seen_keys}
        out.append(_patterns(stats, *totals[a], element, findings or {}, noted))
    return out


def _patterns(stats: dict, failed_total: int, checked_total: int, element, findings: dict, noted) -> list:
    """The patterns that hold a requirement's failures, from its counts per pattern (and the
    failing calls ``noted``, tried against the call ``findings``)."""
    noted = list(noted) if findings else []
    for key, (text, ids) in findings.items():  # the failing calls noted, each one failure
        st = stats.setdefault(key, [text, 0, 0, None])
        for involved in noted:  # a failing call, or a comparison of calls: found when any of them was
            cid = next((c for c in involved if c in ids), None)
            if cid is not None:
                st[1] += 1
                st[3] = st[3] or CallNote(cid, ids[cid])
    failed_total += len(noted)
    if not failed_total:
        return []
    found = []
    for key, (text, failed, checked, first) in stats.items():
        share = failed / failed_total
        # the share of the elements checked; for a requirement that noted calls only, of the calls
        base = checked / checked_total if checked_total else share
        # The lift rule (docs/reports.md): a pattern is a finding only where it is rarer among the
        # elements checked than among the failures, by MIN_LIFT, even one that holds every failure
        # (a tail of 64 that covers 99.8% of the elements checked says nothing of the cause). A call
        # finding is what was seen of the failing calls themselves, not a correlation: no lift asked.
        if failed and share >= MIN_SHARE and (share >= MIN_LIFT * base or key in findings):
            example = first if isinstance(first, CallNote) else element(*first)
            found.append((key, share, base, Pattern(text, key, failed, failed_total, round(base, 4), example)))
    # the facts of the arithmetic (rules.intermediates): disjoint, each holding the failures it explains,
    # reported however few (a requirement's failures split among them), after the patterns shown
    facts = sorted(((key, failed / failed_total, checked / checked_total if checked_total else 0.0,
                     Pattern(text, key, failed, failed_total, round(checked / checked_total if checked_total else 0.0, 4),
                             element(*first)))
                    for key, (text, failed, checked, first) in stats.items()
                    if key.startswith(FACT_PREFIX) and failed and first is not None), key=lambda f: -f[1])[:FACTS]
    found = [f for f in found if not f[0].startswith(FACT_PREFIX)]
    if any(f[0] in OPEN_CLASSES and f[1] == 1.0 for f in found):  # what the failures hold, not where they are
        found = [f for f in found if not f[0].startswith(POSITIONAL)]
    tails = [f for f in found if f[0].startswith("tail-")]
    if tails:  # the width whose tail holds the most failures, then the fewest checked elements
        best = max(tails, key=lambda f: (f[1], -f[2]))
        found = [f for f in found if not f[0].startswith("tail-") or f is best]
    found.sort(key=lambda f: (-f[1], f[2]))
    return [f[3] for f in found[:SHOWN]] + [f[3] for f in facts]
