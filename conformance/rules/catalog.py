"""The requirement catalog: every requirement, and how it is checked, in one place.

Why executable: the statement a report prints, the families a requirement is aimed at,
whether it is required, recorded or required only on strict profiles, whether it records
an answer to an open question, and the code that checks it are one object, so certify,
fuzz, sweep, the pytest plugin, JUnit, the waivers and the reports cannot disagree on what
a requirement is. Ids are never renumbered; a removed requirement leaves a gap. To add a
requirement: add one :class:`Requirement` to :data:`CATALOG` with its check (for a rule
about single elements, the rule itself goes to ``rules.judge.ELEMENT_RULES`` under the same
id, and the requirement picks it up), then regenerate docs/requirements.md
(``python -m sl1conf.conformance.rules.catalog > docs/requirements.md``).

Two kinds of check:

* element rules (R01 to R06, in ``rules.judge``, the tolerance policy): which elements a rule
  is about and which of them it accepts. The judge applies every one of them to every
  element wherever it is judged, so an element breaks the same requirement in a vector case,
  a fuzz batch or a sweep block; the requirement's check counts the rejections of a run.
* run checks (``Requirement.check(ctx, req)``): a function of one certify run
  (:class:`RunContext`, given by the engine) returning what the report says of the
  requirement: counts, the worst element, examples, what was observed.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Optional

import numpy as np

from sl1conf.adapters.base import fill_bits
from sl1conf.conformance.rules import openbehaviour
from sl1conf.conformance.rules.diagnosis import beta_classes, diagnose
from sl1conf.reference.reachable import FLUSH_PLACES, evaluations, point, reach
from sl1conf.conformance.rules.judge import (
    ELEMENT_RULES, SPECIALS, ElementRule, expected_for, is_special, is_subnormal, judge, special_class,
)
from sl1conf.reference import formats as F

__all__ = ["Requirement", "CATALOG", "by_id", "RunContext", "Tally",
           "Check", "run_verdict", "report_verdict", "incomplete_reasons", "markdown", "EXAMPLES", "call_fault", "CATALOG_BY_ID",
           "SEEN_UNDER", "MEMORY", "compare_variants", "open_answers", "bias_counts", "call_bias_counts", "add_bias_counts",
           "rounding_bias", "bias_findings", "BIAS_SIGMAS", "BIAS_MIN", "rejection_filed_under",
           "rejection_failures", "model_identification", "model_text"]

EXAMPLES = 5  # failing inputs listed per requirement


# --------------------------------------------------------------------------------------
# run checks


ERROR_KINDS = (*SPECIALS, "not written (dx1 still holds the fill)", "1 ULP from the correctly rounded result",
               "2 ULP from it", "3 or 4 ULP from it", "5 to 64 ULP from it", "65 ULP or more from it",
               "a zero of the other sign")
"""What a failing element's error is, for a block's bulk: a kind that is no distance (judge.SPECIALS),
an element left unwritten, or a distance class."""
_KIND_EDGES = np.array([1, 2, 4, 64])  # upper ends of the distance classes but the last


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
                         len(SPECIALS) + 1 + np.searchsorted(_KIND_EDGES, np.minimum(d[rest], 1 << 40), side="left"))
    return out


class Tally:
    """Counts and the worst failing element of one requirement (or one family of it)."""

    def __init__(self, fmt):
        self.fmt, self.checked, self.failed, self.worst, self.examples = fmt, 0, 0, None, []
        self.seen = []  # (judgement, failing mask, checked mask) per call added: what the diagnosis reads
        self.far, self.far_by, self.far_worst = 0, {}, None  # accepted beyond the budget: reachable under the error model, or an alternative
        self.far_special = {}  # accepted infinities or NaNs against numbers (no distance), by kind
        self.kinds = {}  # error kind (ERROR_KINDS index) -> [failing elements, the first (j, k)]: the bulk
        self.noted = []  # per failing call or comparison of calls (not an element): the case ids involved

    def add(self, j, bad: np.ndarray, among: "np.ndarray | None" = None):
        """``bad`` elements of judgement ``j`` (``among``: the elements the rule looked at, default all)."""
        among = np.ones(bad.shape, bool) if among is None else among
        self.checked += int(among.sum())
        self.seen.append((j, bad, among))
        self._accepted_far(j, among & ~bad)
        idx = np.flatnonzero(bad)
        if not idx.size:
            return
        self.failed += int(idx.size)
        kinds = error_kinds(j, idx)
        for kind, first, n in zip(*np.unique(kinds, return_index=True, return_counts=True)):
            slot = self.kinds.setdefault(int(kind), [0, None])
            slot[0] += int(n)
            if slot[1] is None:
                slot[1] = (j, int(idx[first]))
        k = int(idx[int(np.argmax(j.dist[idx]))])
        ex = self.element(j, k)
        if self.worst is None or ex["ulp_value"] > self.worst["ulp_value"]:
            self.worst = ex
        if len(self.examples) < EXAMPLES:
            self.examples.append(ex)

    def _accepted_far(self, j, accepted: np.ndarray) -> None:
        """Count the accepted elements that are beyond the budget (reachable under the error
        model, or an alternative's bits): how many, with what it took, the farthest; those that
        are no distance at all (an infinity or NaN against a number) by kind."""
        far = accepted & j.excepted
        if not far.any():
            return
        cls = special_class(self.fmt, j.got, j.expected.oracle)
        named = j.accepted_as()
        for kind in np.unique(cls[far & (cls >= 0)]):
            self.far_special[SPECIALS[kind]] = self.far_special.get(SPECIALS[kind], 0) + int((far & (cls == kind)).sum())
        far &= cls < 0
        if not far.any():
            return
        self.far += int(far.sum())
        for name in named[far]:
            self.far_by[name] = self.far_by.get(name, 0) + 1
        k = int(np.flatnonzero(far)[int(np.argmax(j.dist[far]))])
        if self.far_worst is None or int(j.dist[k]) > self.far_worst["ulp_value"]:
            self.far_worst = {**self.element(j, k), "accepted_as": named[k]}

    def note(self, case_id: "str | None", detail: str, also: tuple = ()) -> None:
        """One failing call (not an element), with what was wrong; ``case_id`` None: a finding
        about the whole run (listed first: it says more than any one element). ``also``: the
        ids of other calls the failure involves (the call it was compared with)."""
        self.count((case_id, *also))
        if case_id is None:
            self.examples.insert(0, {"detail": detail})
            del self.examples[EXAMPLES:]
        elif len(self.examples) < EXAMPLES:
            self.examples.append({"case": case_id, "detail": detail})

    def count(self, case_ids: tuple) -> None:
        """One failing call or comparison of calls, without an example: the ids of the calls it
        involved (a repeat and its first call), which the diagnosis's call findings look for."""
        self.failed += 1
        self.noted.append(tuple(case_ids))

    def merge(self, other: "Tally") -> None:
        self.seen += other.seen
        self.noted += other.noted
        for kind, (n, first) in other.kinds.items():
            slot = self.kinds.setdefault(kind, [0, first])
            slot[0] += n
        self.far += other.far
        for name, n in other.far_by.items():
            self.far_by[name] = self.far_by.get(name, 0) + n
        for kind, n in other.far_special.items():
            self.far_special[kind] = self.far_special.get(kind, 0) + n
        if other.far_worst and (self.far_worst is None or other.far_worst["ulp_value"] > self.far_worst["ulp_value"]):
            self.far_worst = other.far_worst
        self.checked += other.checked
        self.failed += other.failed
        if other.worst and (self.worst is None or other.worst["ulp_value"] > self.worst["ulp_value"]):
            self.worst = other.worst
        self.examples += other.examples[: max(0, EXAMPLES - len(self.examples))]

    def element(self, j, k: int, got=None) -> dict:
        """Element ``k`` of judgement ``j`` as a report example; ``got``: another result of it
        (a rearranged call's) in place of the judged one, its distance measured the same way."""
        fmt, c = self.fmt, j.case
        if got is None:
            got, d = j.got[k], int(j.dist[k])
        else:
            pair = np.array([got], fmt.uint), j.expected.oracle[k:k + 1]
            d = 0 if F.same_result(fmt, *pair)[0] else int(F.ulp_distance(fmt, *pair)[0])
        cls = int(special_class(fmt, np.array([got], fmt.uint), j.expected.oracle[k:k + 1])[0])
        out = {"case": j.row["id"], "element": k, "length": int(c.call_length), "dy": F.hex_bits(fmt, c.dy[k]), "x1": F.hex_bits(fmt, c.x1[k]),
               "x2": F.hex_bits(fmt, c.x2[k]), "beta": F.hex_bits(fmt, c.beta),
               "expected": F.hex_bits(fmt, j.expected.oracle[k]), "got": F.hex_bits(fmt, got),
               "ulp": SPECIALS[cls] if cls >= 0 else d, "ulp_value": d}
        if c.out_alias is None and int(got) == fill_bits(fmt):
            out["not_written"] = True  # dx1's bits from before the call: all but surely never written
        return out

    def entry(self, details: bool = True, calls: "dict | None" = None) -> dict:
        """The report's entry; ``details`` False: counts, worst and examples only (no diagnosis,
        no accepted-far counts: a family's line under its requirement). ``calls``: findings about
        whole calls the diagnosis tries as patterns (``RunContext.call_findings``)."""
        out = {"checked": self.checked, "failed": self.failed}
        if details and self.far:
            out["accepted_far"] = {"elements": self.far, "max_ulp": self.far_worst["ulp_value"],
                                   "by": dict(sorted(self.far_by.items())),
                                   "worst": {k: v for k, v in self.far_worst.items() if k != "ulp_value"}}
        if details and self.far_special:
            out["accepted_not_a_distance"] = dict(sorted(self.far_special.items()))
        def example(j, k):
            e = self.element(j, k)
            e.pop("ulp_value")
            return e
        if details and self.kinds:  # the bulk: the commonest kind of error, with its first element
            kind, (n, first) = max(self.kinds.items(), key=lambda kv: (kv[1][0], -kv[0]))
            out["bulk"] = {"kind": ERROR_KINDS[kind], "failed": n, "of": sum(v[0] for v in self.kinds.values()),
                           "example": example(*first)}
        if details and self.failed and (any(bad.any() for _, bad, _ in self.seen) or calls and self.noted):
            out["diagnosis"] = diagnose(self.seen, example, calls, self.noted)
        if self.worst is not None:
            out["worst"] = {k: v for k, v in self.worst.items() if k != "ulp_value"}
        if self.examples:
            out["examples"] = [{k: v for k, v in e.items() if k != "ulp_value"} for e in self.examples]
        return out


@dataclass
class Check:
    """What a run check found: ``tally`` (None for a recorded requirement that counts nothing),
    ``applicable`` (False: nothing this requirement is about was in the run), extra fields."""

    tally: Optional[Tally] = None
    applicable: bool = True
    extra: dict = field(default_factory=dict)


@dataclass
class RunContext:
    """One certify run, as the run checks see it (the engine fills it in)."""

    fmt: F.Format
    profile: object
    variant: str
    adapter: object
    judged: list  # Judgement per call that returned, with row, case, outcome, family, fill_ok
    broken: list  # (row, case, outcome) per call that crashed, hung or failed
    calls: list  # (row, vector case, case) per call made
    memo: dict = field(default_factory=dict)  # calls made again, shared by the checks that read them
    rejected: list = field(default_factory=list)  # (row, case, outcome, family) per call the implementation refused
    late: dict = field(default_factory=dict)  # case id -> what its call wrote after it returned (R13 fills it)

    def call_findings(self) -> dict:
        """Findings about whole calls that explain failures elsewhere (the diagnosis's call-level
        patterns): key -> (pattern, case ids)."""
        if not self.late:
            return {}
        return {"late-write": (LATE_WRITE, self.late)}

    def of(self, families) -> list:
        return [j for j in self.judged if j.family in families]


START_LAYOUT_MAX = 100_000
"""Calls up to this many elements run a second time with every array's first element right
after a guard page (``Case.guard = "start"``), so reads before the start fault as reads past
the end do; longer calls (a handful of 1,000,000-element ones) run in the first layout only."""


def start_layout(ctx: RunContext) -> list:
    """(judgement, outcome) for every returned call of at most START_LAYOUT_MAX elements, run
    again in the "start" guard layout (once per run, for the memory, return and position
    checks); empty where the adapter guards no buffers."""
    from dataclasses import replace

    if "start-layout" not in ctx.memo:
        picked = [j for j in ctx.judged if j.case.n <= START_LAYOUT_MAX] if ctx.adapter.capabilities.memory_checked else []
        first = ctx.adapter.calls_made + 1  # the calls' numbers in the adapter's history follow on from it
        outcomes = ctx.adapter.run([replace(j.case, guard="start") for j in picked])
        ctx.memo["start-layout"] = (list(zip(picked, outcomes)), first)
    return ctx.memo["start-layout"][0]


RECORDED_NOTE = ("not observed from a results file: the board made each case's call once, and this requirement "
                 "needs calls of its own ({}); certify the library through sim: with the bundled harness for it")


def _recorded(ctx: RunContext, needs: str) -> "Check | None":
    """Not applicable, and why, where the adapter replays recorded results and so can make none
    of the calls ``needs`` names; None where it can."""
    if getattr(ctx.adapter.capabilities, "recorded", False):
        return Check(applicable=False, extra={"observed": RECORDED_NOTE.format(needs)})
    return None


def _element_check(ctx: RunContext, req: "Requirement") -> Check:
    """A run check counting the requirement's element rule's rejections over every judged call."""
    t = Tally(ctx.fmt)
    for j in ctx.judged:
        t.add(j, j.rejected[req.id], among=j.checked[req.id])
    return Check(t, applicable=t.checked > 0)


BIAS_SIGMAS = 6.0
"""The rounding-bias test's margin, in binomial standard deviations: one-sided false-alarm
rate below 1e-9 per direction (normal approximation) for an implementation that leans no
more than the most leaning accepted model."""
BIAS_MIN = 100  # fewer deviating elements than this: too few to judge a lean
BIAS_DIRECTIONS = ("toward zero", "away from zero", "down", "up")


def bias_counts(judged, profile) -> dict:
    """Per direction, over the ordinary elements (normal inputs, a normal correctly rounded
    result that flushing does not change and no open question touches, not on the boundary,
    no intermediate overflow, a finite accepted result) of the judgements: how many results
    differ from the correctly rounded one by one to ``max_ulp`` ULPs (a rounding, not an
    answer to another question) and how many of those lie that way, for the implementation
    ("got") and for each enumerated model on the same elements. Why against the correctly rounded
    result: an evaluation that rounds to nearest deviates from it both ways; a truncation or a
    rounding mode left changed deviates one way only. Where the profile's error model allows an
    approximate operation, the implementation's deviations that such an operation in fp32 or
    wider reaches are not counted ("approximate", apart): a reciprocal converging from below
    leans as a rounding mode does, and nothing per element tells them apart
    (docs/conformance.md, "Rounding bias"); the last rounding to the data format is still tested."""
    out: dict = {}
    for j in judged:
        fmt = j.fmt
        o = j.expected.oracle
        budget = profile.max_ulp[fmt.name]
        normal = ((o & fmt.exp_mask) != 0) & ~is_special(fmt, o)
        open_ = np.zeros(o.shape, bool)
        for bits in j.expected.alternatives.values():
            open_ |= ~F.same_result(fmt, bits, o)
        ordinary = (j.ok & normal & ~open_ & ~j.boundary & ~j.subnormal_inputs & ~j.overflow_prone
                    & ~is_special(fmt, j.got) & F.same_result(fmt, o, j.expected.oracle_ftz))
        idx = np.flatnonzero(ordinary)
        if not idx.size:
            continue
        for who, bits in [("got", j.got), *j.expected.models.items()]:
            at = idx[bits[idx] != o[idx]]  # an element equal to the oracle is 0 ULPs from it: never counted
            b = bits[at]
            d = F.ulp_distance(fmt, b, o[at])
            near = (d >= 1) & (d <= budget)
            c = out.setdefault(who, {"differ": 0, **{k: 0 for k in BIAS_DIRECTIONS}})
            if who == "got" and profile.error_model.approximate and near.any():
                k = at[near]
                inputs = [np.broadcast_to(np.asarray(a, fmt.uint), o.shape)[k] for a in j.inputs]
                approx = reach(fmt, profile.error_model, j.got[k], *inputs, o[k], stages=(2,), min_precision=4).stage > 0
                c["approximate"] = c.get("approximate", 0) + int(approx.sum())
                near[np.flatnonzero(near)[approx]] = False
            v, w = F.from_bits(fmt, b[near]).astype(np.float64), F.from_bits(fmt, o[at][near]).astype(np.float64)
            c["differ"] += int(near.sum())
            for k, lean in zip(BIAS_DIRECTIONS, (np.abs(v) < np.abs(w), np.abs(v) > np.abs(w), v < w, v > w)):
                c[k] += int(lean.sum())
    return out


def call_bias_counts(fmt, profile, got, dy, x1, x2, beta: int, variant: str = "p", core_mask: int = 0xFF) -> dict:
    """:func:`bias_counts` of one call judged whole, everything acceptable computed afresh (the
    accepted models on every element): what fuzz batches and sweep blocks add up."""
    exp = expected_for(fmt, dy, x1, x2, beta, variant=variant, core_mask=core_mask)
    return bias_counts([judge(fmt, profile, got, exp, dy, x1, x2, beta)], profile)


def add_bias_counts(total: dict, more: dict) -> dict:
    """``total`` with ``more`` (both as :func:`bias_counts` gives them) added in: what fuzz
    batches and sweep blocks accumulate, so the test judges the whole campaign at once."""
    for who, c in more.items():
        mine = total.setdefault(who, {k: 0 for k in c})
        for k, v in c.items():
            mine[k] = mine.get(k, 0) + v
    return total


def bias_findings(result: "dict | None") -> list:
    """One line per failing direction of :func:`rounding_bias`'s result (what R01 reports)."""
    if not result:
        return []
    return [f"rounding bias: {d['count']} of {result['inexact_deviations']} ordinary results that differ from the "
            f"correctly rounded one ({d['share']:.1%}) lie {d['direction']}; the enumerated models allow at most "
            f"{d['allowed_share']:.1%} ({d['allowed_by']}) plus {BIAS_SIGMAS:g} standard deviations"
            for d in result["directions"] if d["fails"]]


def rounding_bias(counts: dict) -> "dict | None":
    """The lean of the implementation's deviations from the correctly rounded result against
    what the accepted models do on the same elements: for each direction the implementation's
    share, the largest share of an accepted model with at least BIAS_MIN deviations (else one
    half, a balanced rounding), and whether the implementation's count exceeds that share's
    binomial expectation by more than BIAS_SIGMAS standard deviations. None: fewer than
    BIAS_MIN deviations, nothing to judge."""
    got = counts.get("got")
    if not got or got["differ"] < BIAS_MIN:
        return None
    n = got["differ"]
    out = {"inexact_deviations": n, "directions": []}
    for d in BIAS_DIRECTIONS:
        shares = [(c[d] / c["differ"], m) for m, c in counts.items() if m != "got" and c["differ"] >= BIAS_MIN]
        allowed, model = max(shares, default=(0.5, "a balanced rounding"))
        if allowed < 0.5:
            allowed, model = 0.5, "a balanced rounding"
        limit = n * allowed + BIAS_SIGMAS * (n * allowed * (1 - allowed)) ** 0.5
        out["directions"].append({"direction": d, "count": got[d], "share": round(got[d] / n, 4),
                                  "allowed_share": round(allowed, 4), "allowed_by": model,
                                  "fails": got[d] > limit})
    return out


def _accuracy(ctx: RunContext, req: "Requirement") -> Check:
    """The element rule's rejections, family by family (nothing judged: not applicable), and
    the rounding-bias test over the run's ordinary elements."""
    per_family = {}
    for j in ctx.judged:
        per_family.setdefault(j.family, Tally(ctx.fmt)).add(j, j.rejected[req.id])
    total = Tally(ctx.fmt)
    for t in per_family.values():
        total.merge(t)
    extra = {"families": [{"family": n, "status": "fail" if t.failed else "pass", **t.entry(details=False)}
                          for n, t in per_family.items()]}
    bias = rounding_bias(bias_counts(ctx.judged, ctx.profile))
    if bias is not None:
        extra["rounding_bias"] = bias
    for line in bias_findings(bias):
        total.note(None, line)
    return Check(total, applicable=total.checked > 0, extra=extra)


def _subnormals(ctx: RunContext, req: "Requirement") -> Check:
    """R06's element rule, what was observed, and consistency: among the elements flushing
    changes whose result is arithmetic (not a copy of dy or -dy, which no FPU flushes), those
    that are the gradual (IEEE) result and those the error model reaches only through a flush
    must not both occur in one run, on any profile: like is compared with like. The first
    flushed and the first gradual call are named, so a switch after some calls (call history) shows."""
    c = _element_check(ctx, req)
    fmt = ctx.fmt
    flushed = gradual = explained = 0
    first_flushed = first_gradual = None
    for j in ctx.judged:
        o = j.expected.oracle
        dy = np.broadcast_to(j.inputs[0], o.shape) if j.inputs else o
        copied = F.same_result(fmt, o, dy) | F.same_result(fmt, o, dy ^ np.array(fmt.sign_mask, fmt.uint))
        sensitive = ~F.same_result(fmt, o, j.expected.oracle_ftz) & ~copied
        only_flushed = sensitive & j.flushed
        ieee = _gradual(fmt, ctx.profile, j, sensitive & j.exact)
        if only_flushed.any():
            flushed += int(only_flushed.sum())
            first_flushed = first_flushed or (j, int(np.flatnonzero(only_flushed)[0]))
        if ieee.any():
            gradual += int(ieee.sum())
            first_gradual = first_gradual or (j, int(np.flatnonzero(ieee)[0]))
        explained += int((sensitive & j.ftz & ~j.exact & ~j.flushed).sum())
    if flushed and gradual:
        (jf, kf), (jg, kg) = first_flushed, first_gradual
        c.tally.note(jf.row["id"], f"flushes inconsistently: {flushed} elements flushed (first: case {jf.row['id']} "
                     f"element {kf}) and {gradual} with gradual underflow (first: case {jg.row['id']} element {kg})")
    c.extra["observed"] = (
        "gradual underflow (no flushing seen)" if not flushed and not explained else
        f"flush-to-zero ({flushed} elements), consistently" if not gradual and flushed else
        f"inconsistent: {flushed} elements flushed and {gradual} with gradual underflow in one run" if flushed else
        f"gradual underflow; {explained} elements equal the flush-to-zero result too, each one explained by an "
        "evaluation's rounding or the budget (not counted as flushing)")
    return c


def _gradual(fmt, profile, j, candidates: np.ndarray) -> np.ndarray:
    """Of the ``candidates`` (the gradual result, where flushing changes it), those that show
    gradual underflow: a subnormal result of arithmetic, or a result that reading the subnormal
    inputs as zero cannot give under the error model (flushing allowed everywhere). A result that
    a flushing evaluation gives too is evidence of neither."""
    out = candidates.copy()
    idx = np.flatnonzero(candidates & ~is_subnormal(fmt, j.got))
    if idx.size:
        model = replace(profile.error_model, flush=FLUSH_PLACES)
        pick = lambda a: np.broadcast_to(np.asarray(a, fmt.uint), j.got.shape)[idx]  # noqa: E731
        r = reach(fmt, model, j.got[idx], *(pick(a) for a in j.inputs), j.expected.oracle[idx], flushing_inputs=True)
        out[idx[r.stage > 0]] = False
    return out


def _lengths(ctx: RunContext, req: "Requirement") -> Check:
    """Accuracy on the length families, and nothing written past length in any call (what
    the fuzzer files here too)."""
    js = ctx.of(req.families)
    t = Tally(ctx.fmt)
    for j in js:
        t.add(j, ~j.ok)
    for j in ctx.judged:
        if j.case.call_length > 0 and not j.fill_ok:
            t.note(j.row["id"], f"wrote past length {j.case.call_length} in dx1")
    return Check(t, applicable=bool(js) or t.failed > 0)


def _length_zero(ctx: RunContext, req: "Requirement") -> Check:
    t = Tally(ctx.fmt)
    for j in ctx.judged:
        if j.case.call_length <= 0:
            t.checked += 1
            if not j.fill_ok:
                t.note(j.row["id"], f"wrote into dx1 with length {j.case.call_length}")
    return Check(t, applicable=t.checked > 0)


def _core_masks(ctx: RunContext, req: "Requirement") -> Check:
    """The same data under every non-empty mask gives the same bits (the engine adds the
    shared-against-private half when both variants ran)."""
    t = Tally(ctx.fmt)
    if ctx.variant == "s":
        groups = {}
        for j in ctx.of(req.families):
            if j.case.core_mask:
                key = (j.case.dy.tobytes(), j.case.x1.tobytes(), j.case.x2.tobytes(), j.case.beta)
                groups.setdefault(key, []).append(j)
        for js in groups.values():
            for j in js[1:]:
                t.checked += 1
                if not F.same_result(ctx.fmt, j.outcome.out, js[0].outcome.out).all():
                    t.note(j.row["id"], f"core_mask {j.case.core_mask:#x} differs from {js[0].case.core_mask:#x} "
                           f"(case {js[0].row['id']})", also=(js[0].row["id"],))
    return Check(t, applicable=ctx.variant == "s" and t.checked > 0)


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
        detail = call_fault(req.id, o)
        if detail:
            t.note(cid, detail + where)
    if not caps.memory_checked and not t.checked:
        return Check(applicable=False, extra={"observed": getattr(ctx.adapter, "unreported_note", None) or (
            "not observed by this adapter: no call's outcome carried this observation")})
    return Check(t, extra=extra)


LATE_WRITE = "in calls that wrote dx1 after they returned (a core or thread not waited for)"
"""The diagnosis's words for the calls R13 saw writing after the return: the cause of every
failure in them (an element read back before it was written, a repeat that differs)."""


def _returns(ctx: RunContext, req: "Requirement") -> Check:
    """Every call returned, and had finished when it did: crashes and hangs, then the calls the
    adapter saw writing dx1 after the return (asked once every call of the run is made: the
    requirement is checked last)."""
    t = Tally(ctx.fmt)
    again = [(j.row, o) for j, o in start_layout(ctx)]
    t.checked = len(ctx.calls) + len(again)
    for row, o in [(row, o) for row, _, o in ctx.broken] + [(row, o) for row, o in again if o.status != "ok"]:
        t.note(row["id"], f"{o.status}: {o.detail}")
    late: dict = {}  # case id -> what each of its calls wrote after returning (a case may run several times)
    for cid, text in ctx.adapter.late_writes():
        late.setdefault(cid, []).append(text)
    rows = {row["id"] for row, _, _ in ctx.calls}
    t.checked += sum(cid not in rows for cid in late)  # other requirements' own calls (R18's rearranged ones)
    for cid, texts in late.items():
        ctx.late[cid] = texts[0]
        t.note(cid, texts[0] + (f" (and in {len(texts) - 1} more of its calls)" if len(texts) > 1 else ""))
    return Check(t)


HISTORY_SAMPLE = 24
"""Calls R14 repeats: subnormal and flush-sensitive ones, boundary ones, one long call, and
ordinary ones spread over the run."""


def _history_sample(ctx: RunContext) -> list:
    """A deterministic sample of the run's calls, in run order: up to 8 with subnormal or
    flush-sensitive inputs, 6 with diff = +-beta, the shortest call of LONG_CALL elements or
    more, and calls spread evenly over the rest."""
    calls = [c for _, _, c in ctx.calls if ctx.adapter.supports(c) and c.n]
    flags = {id(c): set(row["flags"]) for row, _, c in ctx.calls}
    picked: dict = {}

    def take(cands, k):
        for c in [c for c in cands if id(c) not in picked][:k]:
            picked[id(c)] = c

    take([c for c in calls if flags[id(c)] & {"subnormal-input", "ftz-sensitive"}], 8)
    take([c for c in calls if "diff-eq-beta" in flags[id(c)]], 6)
    take(sorted((c for c in calls if c.n >= LONG_CALL), key=lambda c: c.n), 1)
    rest = [c for c in calls if id(c) not in picked]
    if rest:
        take([rest[int(k)] for k in np.linspace(0, len(rest) - 1, min(len(rest), HISTORY_SAMPLE - len(picked)))], HISTORY_SAMPLE)
    order = {id(c): i for i, c in enumerate(calls)}
    return sorted(picked.values(), key=lambda c: order[id(c)])


def _history_first(ctx: RunContext, req: "Requirement") -> None:
    """Before anything else: the sample in a fresh worker (its first calls)."""
    if _recorded(ctx, ""):
        return
    sample = _history_sample(ctx)
    fresh = ctx.adapter.restart()
    base = ctx.adapter.calls_made  # 0 after a restart; calls are numbered from this run's first
    ctx.memo["history"] = {"sample": sample, "fresh": fresh, "first": ctx.adapter.run(sample), "base": base}


def _deterministic(ctx: RunContext, req: "Requirement") -> Check:
    """The sample again after the rest of the run and then in reverse order, every call of the
    run again with its arrays elsewhere (the start layout), each against the call's first
    result (in a fresh worker where the adapter can start one): the same bits (NaN as a class).
    Every call is numbered in the adapter's history, so the report says where a change was
    first seen."""
    recorded = _recorded(ctx, "repeats in a fresh worker, after the run and in reverse order")
    if recorded:
        return recorded
    fmt, t = ctx.fmt, Tally(ctx.fmt)
    h = ctx.memo.get("history") or {"sample": [], "fresh": False, "first": [], "base": 0}
    sample, main, base = h["sample"], {id(j.case): j for j in ctx.judged}, h["base"]
    after_call = ctx.adapter.calls_made + 1 - base
    n = len(sample)
    both = ctx.adapter.run(sample + sample[::-1])  # one run of the adapter (one start of a simulator)
    after, reverse = both[:n], both[n:][::-1]
    seen = []  # per call: [(call number, what it was, outcome)] in history order
    for i, c in enumerate(sample):
        obs = [(1 + i, "a fresh worker's call" if h["fresh"] else "a call before the run", h["first"][i])]
        if id(c) in main:
            obs.append((main[id(c)].call_no - base, "the run's call", main[id(c)].outcome))
        obs += [(after_call + i, "again after the run", after[i]), (after_call + 2 * n - 1 - i, "again in reverse order",
                                                                   reverse[i])]
        seen.append((main.get(id(c)), c, obs))
    layout = start_layout(ctx)
    start = ctx.memo["start-layout"][1] - base
    for k, (j, o) in enumerate(layout):
        seen.append((j, j.case, [(j.call_no - base, "the run's call", j.outcome),
                                 (start + k, "again with its arrays elsewhere (each starting at a page boundary)", o)]))
    changes = []  # (call number of the change, case id, detail, judgement, element, bits)
    for j, c, obs in seen:
        obs = sorted((x for x in obs if x[2].status == "ok"), key=lambda x: x[0])
        if not obs:
            continue
        no0, what0, ref = obs[0]
        for no, what, o in obs[1:]:
            t.checked += 1
            differ = np.flatnonzero(~F.same_result(fmt, o.out, ref.out))
            if differ.size:
                k = int(differ[0])
                changes.append((no, c.id, f"{differ.size} elements differ; element {k}: call #{no0} ({what0}) gave "
                                f"{F.hex_bits(fmt, ref.out[k])}, call #{no} ({what}) {F.hex_bits(fmt, o.out[k])}",
                                j, k, o.out[k]))
    changes.sort(key=lambda x: x[0])
    for change in changes:
        t.count((change[1],))
    for no, cid, detail, j, k, bits in changes[:EXAMPLES]:
        if j is not None and k < j.case.elements_written:
            ex = t.element(j, k, got=bits)
            ex.pop("ulp_value")
            ex["detail"] = detail
            t.examples.append(ex)
        else:
            t.examples.append({"case": cid, "detail": detail})
    calls = ctx.adapter.calls_made - base
    where = ("the sample's first calls ran in a fresh worker" if h["fresh"] else
             f"{ctx.adapter.name} runs in the suite's own process: no fresh worker could be started, so the sample's "
             "first calls are the first of this run, not of a process")
    elsewhere = (f" and {len(layout)} calls (every one of up to {START_LAYOUT_MAX:,} elements) again with their arrays "
                 "elsewhere" if layout else "")
    extra = {"observed": f"{len(sample)} sampled calls repeated up to {calls} calls into the history{elsewhere}; {where}"}
    if changes:
        no, cid = changes[0][:2]
        extra["observed"] = (f"bits changed with call history: {len(changes)} repeated calls differ; first seen at call "
                             f"#{no} (case {cid}); " + extra["observed"])
        extra["reproduction"] = (f"does not reproduce in isolation: the change was first seen at call #{no}, after "
                                 f"{no - 1} calls; rerunning with --only R14 and no case makes every call again in the "
                                 "same order, so the calls that came before are replayed")
        extra["rerun_cases"] = False
    return Check(t, extra=extra)


POSITION_WIDTHS = (4, 8, 16, 32, 64)
"""Vector widths (elements) whose body and tail the position check moves elements between."""
POSITION_BETAS, POSITION_PER_BETA = 4, 120
LONG_CALL = 65_536  # past 32,768, where framework kernels split work between threads


def _position_sample(ctx: RunContext) -> dict:
    """beta -> [(judgement, element index)]: a deterministic sample of judged elements (the
    boundary, special, subnormal and overflow-prone ones first, then ordinary ones) of the
    calls made with every core, from the betas most calls use."""
    full = ctx.profile.core_mask
    calls = [j for j in ctx.judged if j.exact.size and (j.case.variant == "p" or j.case.core_mask == full)]
    by_beta: dict = {}
    for j in calls:
        by_beta.setdefault(j.case.beta, []).append(j)
    picked = {}
    for beta in sorted(by_beta, key=lambda b: (-len(by_beta[b]), b))[:POSITION_BETAS]:
        classes = [[], [], [], [], []]
        for j in by_beta[beta]:
            special = is_special(j.fmt, j.expected.oracle)
            for k in np.flatnonzero(j.boundary)[:8]:
                classes[0].append((j, int(k)))
            for k in np.flatnonzero(special)[:4]:
                classes[1].append((j, int(k)))
            for k in np.flatnonzero(j.subnormal_inputs & ~special)[:4]:
                classes[2].append((j, int(k)))
            for k in np.flatnonzero(j.overflow_prone & ~special)[:4]:
                classes[3].append((j, int(k)))
            for k in np.linspace(0, j.exact.size - 1, min(8, j.exact.size)).astype(int):
                classes[4].append((j, int(k)))
        sample, seen = [], set()
        while len(sample) < POSITION_PER_BETA and any(classes):
            for c in classes:  # round robin over the classes
                while c:
                    j, k = c.pop(0)
                    if (id(j), k) not in seen:
                        seen.add((id(j), k))
                        sample.append((j, k))
                        break
        picked[beta] = sample
    return picked


def _arrangements(n: int) -> list:
    """(name, length of each call, where the sample's element i goes: (call, index)) for a
    sample of n elements: the vector body, shifted starts, tails of every width, a long call."""
    out = [("body", [-(-n // 64) * 64], [(0, i) for i in range(n)])]
    for shift in (1, 7, 33, 63):
        out.append((f"shifted by {shift}", [shift + n], [(0, shift + i) for i in range(n)]))
    for size in (3, 15):
        chunks = -(-n // size)
        out.append((f"in calls of {size}", [min(size, n - c * size) for c in range(chunks)],
                    [(i // size, i % size) for i in range(n)]))
    out.append((f"at the end of a call of {LONG_CALL + n}", [LONG_CALL + n], [(0, LONG_CALL + i) for i in range(n)]))
    return out


def _tail(k: int, n: int, width: int) -> bool:
    return k >= n - n % width


def _position_invariance(ctx: RunContext, req: "Requirement") -> Check:
    """Sampled elements again, rearranged (alone in the body, shifted, in short calls, at the end
    of a long call): the same bits as in their first call (NaN as a class)."""
    from dataclasses import replace

    recorded = _recorded(ctx, "the sampled elements again at other positions and in other call lengths")
    if recorded:
        return recorded
    fmt, t = ctx.fmt, Tally(ctx.fmt)
    one = np.array(fmt.emax << fmt.frac_bits, fmt.uint)  # dy = 1 for the filler elements (x1 = x2 = 0)
    changed, moves = [], []  # (original position, new position) of every changed and every compared element
    plans, calls = [], []  # every rearrangement of every beta's sample, then all their calls in one run
    for beta, sample in _position_sample(ctx).items():
        n = len(sample)
        template = sample[0][0].case
        for name, lengths, where in _arrangements(n):
            arrays = [{a: np.zeros(L, fmt.uint) for a in ("dy", "x1", "x2")} for L in lengths]
            for arr in arrays:
                arr["dy"][:] = one
            for (j, k), (c, i) in zip(sample, where):
                for a in ("dy", "x1", "x2"):
                    arrays[c][a][i] = getattr(j.case, a)[k]
            plans.append((sample, name, lengths, where, len(calls)))
            calls += [replace(template, dy=arr["dy"], x1=arr["x1"], x2=arr["x2"], length=None, out_alias=None,
                              id=f"{req.id} {name}") for arr in arrays]
    # One adapter run for all of them: a simulator starts once, not once per rearrangement.
    every = ctx.adapter.run(calls) if calls else []
    for sample, name, lengths, where, first in plans:
        outcomes = every[first:first + len(lengths)]
        for (j, k), (c, i) in zip(sample, where):
            o, L = outcomes[c], lengths[c]
            t.checked += 1
            orig = (k, j.case.call_length)
            if o.status != "ok":
                t.note(j.row["id"], f"the rearranged call ({name}) failed: {o.status}: {o.detail}")
                continue
            moves.append((orig, (i, L)))
            if not F.same_result(fmt, o.out[i:i + 1], j.outcome.out[k:k + 1])[0]:
                changed.append((orig, (i, L)))
                t.count((j.row["id"], calls[first + c].id))
                if len(t.examples) < EXAMPLES:
                    ex = t.element(j, k, got=o.out[i])
                    ex.pop("ulp_value")
                    ex["detail"] = (f"element {k} of a call of {j.case.call_length} gave "
                                    f"{F.hex_bits(fmt, j.outcome.out[k])}; the same element at index {i} of a "
                                    f"call of {L} ({name}) gives {F.hex_bits(fmt, o.out[i])}")
                    t.examples.append(ex)
    extra = {}
    if changed:
        best = None
        for width in POSITION_WIDTHS:
            moved = sum(_tail(*a, width) != _tail(*b, width) for a, b in changed) / len(changed)
            if best is None or moved > best[1]:
                best = (width, moved)
        width, share = best
        extra["observed"] = (f"{len(changed)} of {len(moves)} rearranged elements changed; "
                             + (f"{share:.0%} of them moved between the vector body and the last n mod {width} "
                                f"elements of a call (its tail for a width of {width})" if share >= 0.9
                                else "no body/tail pattern for the widths 4 to 64 explains them"))
    return Check(t, applicable=t.checked > 0, extra=extra)



def _in_place(ctx: RunContext, req: "Requirement") -> Check:
    from dataclasses import replace

    recorded = _recorded(ctx, "calls with dx1 over dy, x1 and x2")
    if recorded:
        return recorded
    t = Tally(ctx.fmt)
    if not ctx.adapter.capabilities.in_place:
        return Check(t, applicable=False)
    sample = [j for j in ctx.judged if j.case.n and j.case.elements_written == j.case.n][:12]
    pairs = [(j, replace(j.case, out_alias=alias, length=None)) for j in sample for alias in ("dy", "x1", "x2")]
    for (j, ac), o in zip(pairs, ctx.adapter.run([ac for _, ac in pairs])):
        t.checked += 1
        if o.status != "ok" or not F.same_result(ctx.fmt, o.out, j.outcome.out).all():
            t.note(ac.id, f"dx1 over {ac.out_alias}: " + (o.detail if o.status != "ok" else "different bits"))
    return Check(t)


def open_answers(judgements) -> dict:
    """R16's record: per open question, how many open elements there were and how many of
    them each acceptable answer explains: the oracle's, any alternative of the call (an element
    can be open for one question and answered by another's rule), "other (within bounds)" (an
    open input's answer that meets its bounds, ``openbehaviour.within_bounds``), ``other``: none
    of these (accepted within the budget or the error model, or not at all). An element is open
    for a question where its input raises it (``Judgement.open_q``: beta <= 0, a NaN beta,
    beta = +inf with an infinite diff) or one of its alternatives differs from the oracle."""
    counts: dict = {}
    for j in judgements:
        opened = {}
        for name, bits in j.expected.alternatives.items():
            open_ = ~F.same_result(j.fmt, bits, j.expected.oracle)
            if open_.any():
                q = openbehaviour.QUESTION_OF[name]
                opened[q] = opened.get(q, np.zeros(open_.shape, bool)) | open_
        if j.open_q is not None:
            for k in np.unique(j.open_q[j.open_q >= 0]).tolist():
                q = openbehaviour.BOUNDED[k]
                opened[q] = opened.get(q, np.zeros(j.open_q.shape, bool)) | (j.open_q == k)
        for question, open_ in opened.items():
            c = counts.setdefault(question, {"elements": 0, "answers": {}})
            c["elements"] += int(open_.sum())
            explained = open_ & j.exact
            hits = {"oracle": explained}
            for name, alt in j.alt.items():
                hits[name] = open_ & alt & ~j.exact  # (an element several alternatives give counts for each)
                explained = explained | hits[name]
            if j.bounded is not None:
                hits[openbehaviour.WITHIN_BOUNDS] = open_ & ~explained & j.bounded
                explained = explained | hits[openbehaviour.WITHIN_BOUNDS]
            hits["other"] = open_ & ~explained
            for name, hit in hits.items():
                c["answers"][name] = c["answers"].get(name, 0) + int(hit.sum())
    return {q: {"elements": counts[q]["elements"], "answers": {k: v for k, v in counts[q]["answers"].items() if v}}
            for q in openbehaviour.QUESTIONS if q in counts}


def rejection_filed_under(case, family: "str | None" = None) -> tuple:
    """Where a call the implementation refused (Outcome status "rejected") is filed: (the open
    question, None) when the call's beta or core_mask is one the manual leaves open (R16 records
    the refusal as the answer), else (None, requirement id): a failure of the required
    requirement aimed at the case's family, R01 where none is."""
    q = openbehaviour.open_input(case.format, case.beta, case.variant, case.core_mask)
    if q:
        return q, None
    rid = next((r.id for r in CATALOG if r.kind == "required" and family in r.families), "R01")
    return None, rid


def rejection_failures(ctx: RunContext) -> dict:
    """Requirement id -> [(case id, detail)] for every refused call whose input is not open."""
    out: dict = {}
    for row, case, o, family in ctx.rejected:
        q, rid = rejection_filed_under(case, family)
        if rid:
            out.setdefault(rid, []).append((row["id"], f"rejected an input the manual defines: {o.detail}"))
    return out


def _open_behaviour(ctx: RunContext, req: "Requirement") -> Check:
    observed = open_answers(ctx.judged)
    zero_mask = [j for j in ctx.judged if ctx.variant == "s" and j.case.variant == "s" and j.case.core_mask == 0]
    if zero_mask:
        nothing = sum(j.fill_ok for j in zero_mask)
        answers = {"nothing written": nothing, "wrote with core_mask 0": len(zero_mask) - nothing}
        observed[openbehaviour.CORE_MASK_ZERO] = {"calls": len(zero_mask), "answers": {k: v for k, v in answers.items() if v}}
    for row, case, o, family in ctx.rejected:
        q, _ = rejection_filed_under(case, family)
        if q:
            c = observed.setdefault(q, {"answers": {}})
            c["calls"] = c.get("calls", 0) + 1
            c["answers"]["rejected"] = c["answers"].get("rejected", 0) + 1
            c.setdefault("rejected", {"case": row["id"], "detail": o.detail})
    return Check(extra={"observed": {q: observed[q] for q in openbehaviour.QUESTIONS if q in observed}})


MODEL_COMBINATION_MIN = 0.9  # a combination is named when it explains this share of the disputed elements
MODEL_PART_MIN = 0.5  # ... each part's model gives the majority of its part's bits
SPLIT_SIGMAS = 6.0
"""The split test (R17). A combination (one model on one part of the elements, another on the
rest: by position, call length or call order) is claimed only when it explains the data better
than one model plus deviations that fall anywhere. Under that null hypothesis the best single
model's bits appear on each disputed element with its overall rate p, independently of the
element's position, length or call, so in the part where the split puts the other model, the
split's gain over the single model (the elements the split explains that the model does not,
less the reverse) has a standard deviation of at most sqrt(m p (1 - p)) for a part of m
elements. The split is claimed when its gain exceeds SPLIT_SIGMAS of those (a margin that
holds against the few hundred splits the search tries), it explains MODEL_COMBINATION_MIN of
the disputed elements, and each part's model gives the majority of its part's bits. Otherwise
R17 says there is no single model, and which comes closest."""


def _best_split(key: np.ndarray, first: np.ndarray, second: np.ndarray) -> tuple:
    """(threshold t, elements explained) of the best "``first`` where key < t, ``second`` from t
    on" over the distinct keys (``first``/``second``: whether each element is that model's bits)."""
    order = np.argsort(key, kind="stable")
    k, a, b = key[order], first[order].astype(np.int64), second[order].astype(np.int64)
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])  # where each distinct key begins
    before = np.r_[0, np.cumsum(a)][starts]  # first's hits below each candidate threshold
    after = b.sum() - np.r_[0, np.cumsum(b)][starts]  # second's hits from it on
    i = int(np.argmax(before + after))
    return int(k[starts[i]]), int(before[i] + after[i])


EXTREME_BETAS = frozenset({"beta-nan", "beta-zero", "beta-negative", "beta-inf", "beta-subnormal", "beta-tiny",
                           "beta-huge"})
"""The diagnosis's beta classes (rules.diagnosis) of a beta whose reciprocal is not normal or near it."""


def _extreme_beta(fmt, beta: int) -> bool:
    """Whether R17's beta split puts the call with the extreme betas: a beta in one of
    EXTREME_BETAS, as the diagnosis classes it (one definition of tiny, huge, ...)."""
    return any(key in EXTREME_BETAS for key, _ in beta_classes(fmt, beta))


def model_identification(judged: list, fmt) -> dict:
    """What R17 says of the accepted models: those matching every element; each model's share
    of the elements where the models disagree (the only ones that tell them apart); and, when
    no single model matches, the combination that explains the most of those elements: one
    model on the vector body and another on the last n mod V elements (V the inferred vector
    width, 4 to 64), one below a call length and another from it on, or one before a call of
    the run's history and another from it on."""
    judged = [j for j in judged if j.exact.size]
    names = list(judged[0].models) if judged else []
    out = {"matched": [m for m in names if all(j.models[m].all() for j in judged)]}
    index, length, call, extreme, hits = [], [], [], [], {m: [] for m in names}
    for j in judged:
        bits = [j.expected.models[m] for m in names]
        disputed = np.zeros(j.exact.size, bool)
        for b in bits[1:]:
            disputed |= ~F.same_result(fmt, b, bits[0])
        idx = np.flatnonzero(disputed)
        if idx.size:
            index.append(idx)
            length.append(np.full(idx.size, j.case.elements_written))
            call.append(np.full(idx.size, getattr(j, "call_no", 0)))
            extreme.append(np.full(idx.size, int(_extreme_beta(fmt, j.case.beta))))
            for m in names:
                hits[m].append(j.models[m][idx])
    if not index:
        return out
    index, length, call, extreme = (np.concatenate(a) for a in (index, length, call, extreme))
    hits = {m: np.concatenate(h) for m, h in hits.items()}
    n = int(index.size)
    out["disputed_elements"] = n
    out["shares"] = {m: round(float(h.mean()), 4) for m, h in sorted(hits.items(), key=lambda x: -x[1].sum())}
    if out["matched"] or len(names) < 2:
        return out
    best_single = max(int(h.sum()) for h in hits.values())
    best = None  # (explained, description)
    for a in names:
        for b in names:
            if a == b:
                continue
            for width in POSITION_WIDTHS:
                tail = index >= length - length % width
                explained = int(hits[a][~tail].sum() + hits[b][tail].sum())
                if best is None or explained > best[0]:
                    body_share = float(hits[a][~tail].mean()) if (~tail).any() else 1.0
                    tail_share = float(hits[b][tail].mean()) if tail.any() else 1.0
                    best = (explained, {"by": "position", "vector_width": width, "parts": [
                        {"model": a, "where": "the vector body", "elements": int((~tail).sum()), "share": round(body_share, 4)},
                        {"model": b, "where": f"the last n mod {width} elements", "elements": int(tail.sum()),
                         "share": round(tail_share, 4)}]})
            # the beta class first: a slow path for extreme betas is what an order or length split
            # would otherwise stand in for, where those betas sit in some calls only
            for by, key, unit in (("beta", extreme, ""), ("length", length, "calls of"), ("call order", call, "call #")):
                t, explained = _best_split(key, hits[a], hits[b])
                if explained > best[0] and t > key.min():
                    lo = key < t
                    where = {"beta": ("calls with an ordinary beta", "calls with an extreme beta (subnormal, tiny "
                                      "or huge: 1 / beta not normal or near it)"),
                             "length": (f"{unit} fewer than {t}", f"{unit} {t} or more elements"),
                             "call order": (f"calls before {unit}{t}", f"{unit}{t} on")}[by]
                    best = (explained, {"by": by, "threshold": t, "parts": [
                        {"model": a, "where": where[0], "elements": int(lo.sum()),
                         "share": round(float(hits[a][lo].mean()), 4)},
                        {"model": b, "where": where[1], "elements": int((~lo).sum()),
                         "share": round(float(hits[b][~lo].mean()), 4)}]})
    p = best_single / n
    if best and best[0] / n >= MODEL_COMBINATION_MIN and all(part["share"] > MODEL_PART_MIN for part in best[1]["parts"]):
        m = min(part["elements"] for part in best[1]["parts"])  # the part the single model loses
        if best[0] - best_single > SPLIT_SIGMAS * max((m * p * (1 - p)) ** 0.5, 1.0):
            out["combination"] = {**best[1], "explained": round(best[0] / n, 4)}
    return out


def other_orders(judged: list, fmt, profile) -> list:
    """The error model's evaluations, correctly rounded and unflushed (``reachable.point``), that
    the implementation matches bit for bit on every element they are defined on (a positive
    beta, no NaN input): orders the enumerated models do not cover (the clamp orders, mulrecip,
    the fp64 ones), named by R17 when no enumerated model matches."""
    known = set(judged[0].models)
    calls = []  # per judgement: its defined elements' inputs (floats) and results (bits)
    for j in judged:
        bits = [np.broadcast_to(np.asarray(a, fmt.uint), j.got.shape) for a in j.inputs]
        with np.errstate(invalid="ignore"):  # signalling NaNs convert quietly
            v = [F.from_bits(fmt, a).astype(np.float64) for a in bits]
        defined = ~np.isnan(v[0]) & ~np.isnan(v[1]) & ~np.isnan(v[2]) & (v[3] > 0)
        if defined.any():
            calls.append(([F.from_bits(fmt, a[defined]) for a in bits], j.got[defined]))
    return [name for name, order, P in evaluations(fmt, profile.error_model) if name not in known and all(
        F.same_result(fmt, got, F.to_bits(fmt, point(fmt, order, P, *inputs))).all() for inputs, got in calls)]


def model_text(found: dict) -> str:
    """R17's observation in words (the report's line)."""
    if found["matched"]:
        return ", ".join(found["matched"]) + " (bit for bit on every element)"
    shares = found.get("shares")
    if not shares:
        return "none (no enumerated model or other order of the error model matches bit for bit)"
    n = found["disputed_elements"]
    listed = ", ".join(f"{m} {s:.1%}" for m, s in shares.items())
    combo = found.get("combination")
    if combo:
        parts = ", ".join(f"{p['model']} on {p['where']} ({p['share']:.1%})" for p in combo["parts"])
        return (f"no single model; {parts}: {combo['explained']:.1%} of the {n:,} elements where the models "
                f"disagree (each alone: {listed})")
    closest, share = next(iter(shares.items()))
    return (f"no single model (no enumerated model or other order of the error model matches bit for bit, and no "
            f"split of two passes the split test); closest: {closest}, {share:.1%} of the {n:,} elements where the "
            f"models disagree (each: {listed})")


def _model(ctx: RunContext, req: "Requirement") -> Check:
    judged = [j for j in ctx.judged if j.exact.size]
    if not judged:
        return Check(applicable=False)
    found = model_identification(judged, ctx.fmt)
    if not found["matched"]:
        found["matched"] = other_orders(judged, ctx.fmt, ctx.profile)
    extra = {"observed": found["matched"] or model_text(found)}
    extra.update({k: v for k, v in found.items() if k in ("shares", "disputed_elements", "combination")})
    return Check(extra=extra)


# --------------------------------------------------------------------------------------
# the catalog

_RULE = {rule.id: rule for rule in ELEMENT_RULES}


@dataclass(frozen=True)
class Requirement:
    """One requirement: what the report prints and how it is checked.

    ``kind``: "required" (a failure fails the verdict) or "recorded" (the manual leaves the
    behaviour open: the report says what was observed). ``strict_only`` (from its element
    rule): required under a strict profile, recorded otherwise. ``element``: the judge's rule
    of the same id, if the requirement is about single elements (its default check counts
    that rule's rejections). ``families``: the vector families it is aimed at
    ("*": every family; empty: every call). ``per_family``: judged and reported family by
    family (waivers may name families). ``observes``: the report records what was observed
    (an answer to an open question, or the behaviour seen)."""

    id: str
    title: str
    statement: str
    check: Callable[[RunContext, "Requirement"], Check] = _element_check
    kind: str = "required"
    families: tuple = ()
    per_family: bool = False
    observes: bool = False
    reports_model: bool = False  # what it observes is the evaluation model matched
    prepare: Optional[Callable[[RunContext, "Requirement"], None]] = None  # runs before the run's calls
    last: bool = False  # checked after every other requirement: it reads what their calls did too (R13)
    element: Optional[ElementRule] = None  # the judge's rule for single elements, for R01 to R06

    def __post_init__(self):
        if self.element is None:
            object.__setattr__(self, "element", _RULE.get(self.id))
        if self.check is _element_check and self.element is None:
            raise ValueError(f"{self.id}: a requirement without an element rule needs a check")

    @property
    def strict_only(self) -> bool:
        """Required under a strict profile (zero signs checked), recorded otherwise."""
        return bool(self.element and self.element.strict_only)

    def kind_for(self, profile) -> str:
        return "recorded" if self.strict_only and not profile.strict_zero_sign else self.kind


CATALOG: tuple = (
    Requirement("R01", "accuracy",
                "Every element is within the profile's ULP budget of the correctly rounded result, or reachable "
                "under the profile's error model (its evaluation orders and precisions, each operation's "
                "accuracy, flushing where it may happen), or an acceptable alternative the vectors list; judged "
                "per family. Over the run, the results that differ from the correctly rounded ones do not lean "
                "one way (toward zero, away from it, down or up) beyond what the enumerated models do (rounding "
                "bias; an approximate operation's lean excepted where the profile allows one).",
                _accuracy, families=("*",), per_family=True),
    Requirement("R02", "boundary",
                "Where x1 - x2 equals +beta or -beta exactly the result is +dy or -dy exactly, or what the "
                "error model reaches there (no budget), whatever family the element is in.",
                families=("boundary-exact",)),
    Requirement("R03", "overflow",
                "No infinity or NaN where the exact result is finite: intermediate overflow (x1 - x2, "
                "diff * dy, 1 / beta) must not reach the result, beyond what the error model reaches.",
                families=("fp16-overflow", "range-overflow")),
    Requirement("R04", "nan-and-infinity",
                "NaN in any input gives NaN (any NaN); infinities follow the branches as the oracle does.",
                families=("nan-inf",)),
    Requirement("R05", "signed-zero",
                "Zero results carry the sign IEEE 754 gives the formula (x - x = +0, -(+0) = -0, the "
                "product of signs in the middle line).", families=("signed-zero",)),
    Requirement("R06", "subnormals",
                "Subnormal inputs and results follow gradual underflow, or, where the profile's error model "
                "allows it, flush to zero (inputs, intermediates, the result) consistently; the report says "
                "which was observed.", _subnormals,
                families=("underflow",), observes=True),
    Requirement("R07", "lengths-and-tails",
                "Every length, odd ones and those that leave a tail after the vector body included, gives "
                "the same accuracy, and nothing is written past length.", _lengths,
                families=("lengths-compact", "lengths", "lengths-long", "calls-crossed")),
    Requirement("R08", "length-zero",
                "A call with length 0 (or negative) writes nothing.", _length_zero),
    Requirement("R09", "core-mask-invariance",
                "Every non-empty core_mask gives the same bits for the same data, and the shared and "
                "private versions agree.", _core_masks, families=("core-masks",)),
    Requirement("R10", "no-write-outside",
                "Nothing is written outside dx1[0, length) (guard pages and canaries, in both guard layouts; "
                "through a simulator, the harness's guard zones around every array; in a board self-test's "
                "results, its guard zones around dx1); a failure names the array and the side.", _memory),
    Requirement("R11", "no-read-outside",
                "No input is read past its end or before its start (guard pages: each call with every array's "
                "end at a guard page, and again with every array's start right after one; a simulator harness "
                "has none: not observed, and the entry says so).", _memory),
    Requirement("R12", "inputs-unchanged",
                "dy, x1 and x2 are unchanged by the call (unless dx1 is one of them): checksums, or a simulator "
                "harness's memory report.", _memory),
    Requirement("R13", "no-crash-no-hang",
                "Every call returns, and has finished when it returns: no crash, no hang past the timeout, "
                "nothing written into dx1 after the return (the ctypes worker watches each call's dx1 for "
                "100 ms after it returns; other adapters cannot see it).", _returns, last=True),
    Requirement("R14", "deterministic",
                "Repeating a call gives the same bits, whatever came before it: a sample of calls (subnormal, "
                "boundary, long and ordinary ones) run first in a fresh worker, again after the rest of the run and "
                "in reverse order, and every call again with its arrays at other addresses.", _deterministic,
                observes=True, prepare=_history_first),
    Requirement("R15", "in-place",
                "When the implementation claims in-place use, dx1 over dy, x1 or x2 gives the same bits "
                "as separate buffers.", _in_place),
    Requirement("R16", "open-behaviour",
                "Where the manual leaves the answer open (beta <= 0, a NaN beta, beta = inf with an infinite "
                "diff, diff rounded across the boundary, core_mask = 0), which acceptable answer the "
                "implementation gives, element by element: a named alternative, or another within the "
                "stated bounds (NaN for a NaN input, else no larger than |dy|).",
                _open_behaviour, kind="recorded", families=("beta-special", "core-masks", "boundary-rounded-diff"),
                observes=True),
    Requirement("R17", "evaluation-model",
                "The evaluation model the implementation matches bit for bit, if any (an enumerated model, or another "
                "order of the error model: the clamp orders, mulrecip, fp64); else each model's share of the "
                "elements where the models disagree, and the combination that explains them (one model on the vector "
                "body and another on the tail, by call length, or by call order).", _model, kind="recorded",
                families=("*",), observes=True, reports_model=True),
    Requirement("R18", "position-invariance",
                "An element's bits depend only on its own inputs and beta: not on its index, the call's length, "
                "its neighbours or where a core's chunk starts (sampled elements run again alone in the vector "
                "body, shifted by 1 to 63 places, in calls of 3 and 15 elements, and at the end of a call "
                "longer than 65,536).", _position_invariance, observes=True),
)
CATALOG_BY_ID = {r.id: r for r in CATALOG}

SEEN_UNDER = {"crash": "R13", "timeout": "R13", "error": "R13", "past-length": "R07", "core-mask": "R09",
              "determinism": "R14", "position": "R18"}
"""The requirement each kind of observation outside a single element is filed under (the
fuzzer's findings, the comparison of the shared and private versions)."""
MEMORY = {"R10": "memory", "R11": "memory", "R12": "inputs-changed"}
"""The requirements :func:`call_fault` answers for, and what the fuzzer calls their findings."""


def compare_variants(shared: dict, private: dict, fmt: F.Format, outputs_shared: dict, outputs_private: dict,
                     late: "dict | None" = None) -> None:
    """R09's second half, added to the shared run's R09 entry: the shared version (all cores)
    and the private version give the same bits, case by case (``outputs_*``: case id -> dx1).
    ``late``: case id -> what its call wrote after returning, in either run (R13's evidence):
    differences in those calls count for the diagnosis's "late-write" pattern."""
    entry = next(r for r in shared["requirements"] if r["id"] == SEEN_UNDER["core-mask"])
    checked = failed = 0
    late, explained = late or {}, []
    examples = entry.setdefault("examples", [])
    for cid in sorted(set(outputs_shared) & set(outputs_private)):
        checked += 1
        if not F.same_result(fmt, outputs_shared[cid], outputs_private[cid]).all():
            failed += 1
            if cid in late:
                explained.append(cid)
            if len(examples) < EXAMPLES:
                examples.append({"case": cid, "detail": "the shared version (all cores) and the private "
                                 "version give different bits"})
    if not examples:
        entry.pop("examples")
    entry["checked"] = entry.get("checked", 0) + checked
    entry["failed"] = entry.get("failed", 0) + failed
    entry["shared_vs_private"] = {"checked": checked, "failed": failed}
    if failed and "diagnosis" in entry or explained:
        _add_late_writes(entry, failed, explained, late)
    if entry["status"] == "not-applicable" and checked:
        entry["status"] = "pass"
    if failed:
        entry["status"] = "fail"
    shared["verdict"] = run_verdict(shared["requirements"], shared.get("incomplete", ()))


def _add_late_writes(entry: dict, failed: int, explained: list, late: dict) -> None:
    """Fold ``failed`` more failures into an entry's diagnosis, ``explained`` (case ids) of them
    in calls that wrote after they returned; the patterns that then hold too few are dropped."""
    from sl1conf.conformance.rules.diagnosis import MIN_SHARE

    items = entry.setdefault("diagnosis", [])
    if explained and not any(d.get("key") == "late-write" for d in items):
        items.append({"pattern": LATE_WRITE, "key": "late-write", "failed": 0, "of": 0, "checked_share": 0.0,
                      "example": {"case": explained[0], "detail": late[explained[0]]}})
    for d in items:
        d["of"] = d["of"] + failed if d["of"] else entry["failed"]
        d["failed"] += len(explained) if d.get("key") == "late-write" else 0
    entry["diagnosis"] = sorted((d for d in items if d["failed"] >= MIN_SHARE * d["of"]), key=lambda d: -d["failed"] / d["of"])
    if not entry["diagnosis"]:
        del entry["diagnosis"]


def by_id(rid: str) -> Requirement:
    try:
        return CATALOG_BY_ID[rid]
    except KeyError:
        raise KeyError(f"unknown requirement {rid!r}; known: {', '.join(CATALOG_BY_ID)}") from None


def incomplete_reasons(requirements: list, calls: int, unsupported: int, not_made: int = 0, first: str = "") -> list:
    """Why a run that failed nothing still checked too little to pass: calls the implementation
    answered ``unsupported`` (the profile requires them; ``not_made`` of them were not made once
    the implementation had said so, ``first``: the first answer), no element judged at all, or a
    required requirement that passed on nothing."""
    out = []
    if unsupported:
        out.append(f"{unsupported} of {calls} calls answered unsupported"
                   + (f" ({first.removeprefix('not run: ')})" if first else "")
                   + (f"; {not_made} of them not made, once the implementation had said so" if not_made else ""))
    r01 = next((r for r in requirements if r["id"] == "R01"), None)
    if r01 is not None and not r01.get("checked"):
        out.append("no element was judged")
    empty = [r["id"] for r in requirements if r["kind"] == "required" and r["status"] == "pass" and not r.get("checked")]
    if empty:
        out.append(f"{', '.join(empty)} passed having checked nothing")
    return out


def run_verdict(requirements: list, incomplete=()) -> str:
    """A run's verdict from its requirement entries: fail when a required one fails, else
    incomplete when ``incomplete`` (:func:`incomplete_reasons`) names a reason, else pass."""
    if any(r["status"] == "fail" and r["kind"] == "required" for r in requirements):
        return "fail"
    return "incomplete" if incomplete else "pass"


def report_verdict(runs: list, missing=()) -> str:
    """A report's verdict: fail when a run fails or nothing ran; incomplete when a run is, or
    ``missing`` names runs the profile lists that the implementation lacks; else pass."""
    if not runs or any(r["verdict"] == "fail" for r in runs):
        return "fail"
    return "incomplete" if missing or any(r["verdict"] == "incomplete" for r in runs) else "pass"


def markdown() -> str:
    """docs/requirements.md, generated from the catalog (tests fail when the file is stale)."""
    lines = ["# Requirements", "",
             "Generated from `sl1conf.conformance.rules.catalog.CATALOG` by",
             "`python -m sl1conf.conformance.rules.catalog > docs/requirements.md`; do not edit by hand.",
             "Ids are never renumbered; a removed requirement leaves a gap.", "",
             "`required`: a failure fails the verdict. `recorded`: the manual leaves the behaviour open,",
             "so the report says what was observed and the verdict does not depend on it.",
             "R01 to R06 are element rules: the judge (`rules/judge.py`) applies each of them to every",
             "element wherever it is judged (certify, fuzz, sweep); the families named are where the",
             "vectors aim at them.", "",
             "| id | name | kind | aimed at | statement |", "|---|---|---|---|---|"]
    for r in CATALOG:
        kind = "required (strict profiles), recorded otherwise" if r.strict_only else r.kind
        fams = "every family" if r.families == ("*",) else (
            ", ".join(f"`{f}`" for f in r.families) or "every call")
        lines.append(f"| {r.id} | {r.title} | {kind} | {fams} | {r.statement} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
