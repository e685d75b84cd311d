"""R01 accuracy: every element within the budget or reachable under the error model, and,
over a run, results that do not lean one way where no evaluation the profile allows gives them (the
rounding-bias test, which fuzz and sweep sum over their batches and blocks too)."""

from __future__ import annotations

import numpy as np

from sl1conf.conformance.rules import openbehaviour
from sl1conf.conformance.rules.judge import (expected_for, is_special, is_subnormal, judge, model_match, overflow_prone,
                                             within_budget_alone)
from sl1conf.reference.exact import beta_value as exact_beta, exact_diff
from sl1conf.reference.models import accepted_models
from sl1conf.reference import formats
from sl1conf.reference.reachable import evaluations as reachable_evaluations, plain_many, reach
from sl1conf.conformance.requirements.base import Batch, Check, Requirement, RunContext, Statistic, Tally, calls_to_look_at
from sl1conf.conformance.requirements.results import FamilyResult


BIAS_SIGMAS = 6.0
"""The rounding-bias test's margin, in binomial standard deviations: one-sided false-alarm
rate below 1e-9 per direction (normal approximation) for a balanced rounding."""
BIAS_MIN = 100  # fewer deviating elements than this: too few to judge a lean
BIAS_DIRECTIONS = ("toward zero", "away from zero", "down", "up")
BALANCED = "a balanced rounding"  # what the deviations no allowed evaluation gives are held to


def bias_counts(judged, profile) -> dict:
    """Over the ordinary elements (normal inputs, a normal correctly rounded result that flushing
    does not change and no open question touches, not on the boundary, no intermediate overflow,
    a finite accepted result) of the judgements, the implementation's deviations: results that
    differ from the correctly rounded one by one to ``max_ulp`` ULPs (a rounding, not an answer
    to another question), and of those, per direction, how many lie that way ({"got": counts}).

    A deviation that an evaluation the profile's error model allows gives bit for bit
    (``reachable.evaluations``: each order at each precision it lists, every operation correctly
    rounded, nothing flushed) is that evaluation's rounding: counted apart ("explained"), not
    in the directions. Each such evaluation leans as its order and precision make it lean (the
    native-half division toward zero in about 60% of its deviations; Ascend's clamp order, whose
    outer lines give ``fl(beta * fl(1/beta)) * dy``, in about 76%; an fp64 evaluation deviates only
    at exact ties, almost all one way), so its deviations cannot be held to a balance; the others
    can: a rounding to nearest deviates both ways, a truncation or a rounding mode left changed
    one way only. Where the profile's error model allows an approximate operation, the
    deviations that such an operation in fp32 or wider reaches are counted apart too
    ("approximate"): a reciprocal converging from below leans as a rounding mode does, and
    nothing per element tells them apart (docs/conformance.md, "Rounding bias"); the last
    rounding to the data format is still tested."""
    picked = []  # (judgement, its ordinary elements where the result deviates), every judgement's in order
    any_ordinary = False
    for j in judged:
        fmt = j.fmt
        o = j.expected.oracle
        normal = ((o & fmt.exp_mask) != 0) & ~is_special(fmt, o)
        ordinary = (j.ok & normal & ~_open(fmt, j.expected.alternatives, o) & ~j.boundary & ~j.subnormal_inputs
                    & ~j.overflow_prone
                    & ~is_special(fmt, j.got) & formats.same_result(fmt, o, j.expected.oracle_ftz))
        any_ordinary = any_ordinary or bool(ordinary.any())
        idx = np.flatnonzero(ordinary & (j.got != o))  # an element equal to the oracle is 0 ULPs from it
        if idx.size:
            picked.append((j, idx))
    if not any_ordinary:
        return {}
    c = _no_counts(profile)
    if picked:
        # every judgement's deviating elements at once (the work is per element, the overhead per array)
        fmt = picked[0][0].fmt
        got = np.concatenate([j.got[k] for j, k in picked])
        o = np.concatenate([j.expected.oracle[k] for j, k in picked])
        inputs = [np.concatenate([np.broadcast_to(np.asarray(j.inputs[i], fmt.uint), j.got.shape)[k]
                                  for j, k in picked]) for i in range(4)]
        d = formats.ulp_distance(fmt, got, o)
        at = np.flatnonzero((d >= 1) & (d <= profile.max_ulp[fmt.name]))
        honest = reachable_evaluations(fmt, profile.error_model)
        # the enumerated models' bits are at hand (the kernel's, per judgement): most deviations are
        # one of theirs; only the others are evaluated in every other order the profile allows
        held = [name for name in _held_models(fmt, profile) if all(name in j.expected.models for j, _ in picked)]
        explained = np.zeros(at.size, bool)
        for name in held:
            explained |= np.concatenate([j.expected.models[name][k] for j, k in picked])[at] == got[at]
        rest = [e[1:] for e in honest if e[0] not in held]
        todo = at[~explained]
        if todo.size and rest:
            f = lambda a: a[todo].view(fmt.dtype)  # noqa: E731
            explained[~explained] = np.logical_or.reduce([b.view(fmt.uint) == got[todo]
                                                          for b in plain_many(fmt, rest, *(f(a) for a in inputs))])
        c["explained"] = int(explained.sum())
        at = at[~explained]
        if profile.error_model.approximate:
            approx = reach(fmt, profile.error_model, got[at], *(a[at] for a in inputs), o[at], stages=(2,),
                           min_precision=4).stage > 0 if at.size else np.zeros(0, bool)
            c["approximate"] = int(approx.sum())
            at = at[~approx]
        v, w = formats.from_bits(fmt, got[at]).astype(np.float64), formats.from_bits(fmt, o[at]).astype(np.float64)
        c["differ"] = int(at.size)
        for k, lean in zip(BIAS_DIRECTIONS, (np.abs(v) < np.abs(w), np.abs(v) > np.abs(w), v < w, v > w)):
            c[k] = int(lean.sum())
    return {"got": c}


def _no_counts(profile) -> dict:
    """bias_counts' counters, every one 0 (its keys: what a call with an ordinary element gives)."""
    return {"differ": 0, **{k: 0 for k in BIAS_DIRECTIONS}, "explained": 0,
            **({"approximate": 0} if profile.error_model.approximate else {})}


def _open(fmt, alternatives: dict, oracle) -> np.ndarray:
    """Where an open question's alternative answer (openbehaviour.alternatives) is not the
    correctly rounded result: no ordinary element there."""
    open_ = np.zeros(np.shape(oracle), bool)
    for bits in alternatives.values():
        open_ |= ~formats.same_result(fmt, bits, oracle)
    return open_


def _held_models(fmt, profile) -> list:
    """The enumerated models (accepted_models, whose bits expected_for computes) that are also
    evaluations the profile's error model allows, in the error model's order: a deviation one of
    them gives bit for bit is that evaluation's rounding ("explained")."""
    enumerated = {m.name for m in accepted_models(fmt)}
    return [name for name, _, _ in reachable_evaluations(fmt, profile.error_model) if name in enumerated]


def bias_failure_keys(run: str, judged: dict) -> list:
    """The fuzzer's failure keys of a rounding-bias test's failing directions over a campaign
    (``R01/fp16/p/long/rounding-bias/toward-zero``; ``judged`` as :func:`judge_bias` gives it):
    filed under this requirement."""
    return [f"{ID}/{run}/long/rounding-bias/{d['direction'].replace(' ', '-')}"
            for d in (judged.get("test") or {}).get("directions", []) if d["fails"]]


def call_bias_counts(fmt, profile, got, dy, x1, x2, beta: int, variant: str = "p", core_mask: int = 0xFF) -> dict:
    """:func:`bias_counts` of one call judged whole, everything acceptable computed afresh: what
    fuzz batches and sweep blocks add up."""
    exp = expected_for(fmt, dy, x1, x2, beta, variant=variant, core_mask=core_mask)
    return bias_counts([judge(fmt, profile, got, exp, dy, x1, x2, beta)], profile)


def lean_bias_counts(fmt, profile, got, dy, x1, x2, beta: int, variant: str = "p", core_mask: int = 0xFF,
                     rows=None) -> dict:
    """:func:`call_bias_counts` with less work, for a long call (a sweep's block).

    The counts count the implementation's deviations on the ordinary elements: an element
    where it gives the correctly rounded result adds nothing but the counters' keys, which exist
    as soon as one element of the call is ordinary. So this judges the elements where the
    implementation differs (found by the sweep's check in C for fp16), and only if none of those
    is ordinary, the others until one is (a look across the call, then growing slices); of either,
    only those that can be ordinary (:func:`_may_be_ordinary`: the others add nothing). Of the
    differing ones, those the judge's shortcut accepts are settled without the whole judge where
    an enumerated model gives them (:func:`_settled`: a sampled block of a sweep's middle line has
    about 110,000 deviations, all the kernel's model's; docs/sweeps.md gives the cost). Every
    rule is a function of the element alone, so the counts are those of the call judged whole
    (tests/test_sweep.py checks it against :func:`call_bias_counts`). For fp16 the bulk is done in
    C (:func:`_differing_lean`); ``rows``: the call's shape where it is a sweep block of whole runs
    (``kernel.f16_judge_pass``'s), which makes that pass cheaper."""
    def counted(idx, w):
        exp = expected_for(fmt, dy[idx], x1[idx], x2[idx], beta, variant=variant, core_mask=core_mask, oracle=w)
        return bias_counts([judge(fmt, profile, got[idx], exp, dy[idx], x1[idx], x2[idx], beta)], profile)

    if is_subnormal(fmt, np.array([beta], fmt.uint))[0]:
        return {}  # every element has a subnormal input: none is ordinary
    # only the elements that can be ordinary are judged (the others add nothing, not even the keys)
    picked, want, explained_c = _differing_lean(fmt, profile, got, dy, x1, x2, beta, variant, core_mask, rows)
    g, d, a, b = (np.asarray(v)[picked] for v in (got, dy, x1, x2))
    with np.errstate(all="ignore"):
        diff = exact_diff(fmt, a, b)  # once, for every condition that asks it
    keep = _may_be_ordinary(fmt, g, want, d, a, b, beta, diff[0])
    idx, w = picked[keep], want[keep]
    settled = _settled(fmt, profile, g[keep], w, d[keep], a[keep], b[keep], beta, variant, core_mask,
                       (diff[0][keep], diff[1][keep]))
    if settled is None:  # (then the pass in C settled nothing either: the same conditions)
        counts = counted(idx, w) if idx.size else {}
    else:  # the deviations an enumerated model gives counted here (and in C), the rest judged
        explained, ordinary, rest = settled
        counts = counted(idx[rest], w[rest]) if rest.size else {}
        if ordinary or explained_c:  # (an ordinary element: the counters' keys)
            counts = add_bias_counts({"got": _no_counts(profile) | {"explained": explained + explained_c}}, counts)
    # no ordinary element among them: does the rest hold one (the keys)? Any will do, so first a
    # look at one element in about a thousand across the call (a sweep block's rows differ by x2,
    # and its table begins with zeros and subnormals, none ordinary), then the call in growing slices
    looks = [np.arange(0, got.size, got.size // 1024)] if got.size > 2048 else []  # (a short call: one slice)
    at, step = 0, 1024
    while not counts and (looks or at < got.size):
        if looks:
            idx = looks.pop()
        else:
            idx, at, step = np.arange(at, min(at + step, got.size)), min(at + step, got.size), 4 * step
        d, a, b, g = dy[idx], x1[idx], x2[idx], got[idx]
        o = _oracle(fmt, d, a, b, beta)
        k = np.flatnonzero(formats.same_result(fmt, g, o) & _may_be_ordinary(fmt, g, o, d, a, b, beta))
        # (each adds the keys or nothing: they are the correctly rounded result; a few asked first)
        counts = counted(idx[k[:16]], o[k[:16]]) if k.size else {}
        if not counts and k.size > 16:
            counts = counted(idx[k[16:]], o[k[16:]])
    return counts


def _settled(fmt, profile, got, want, dy, x1, x2, beta: int, variant: str, core_mask: int,
             diff: tuple) -> "tuple | None":
    """(explained, any ordinary, the rest) of candidates that :func:`_may_be_ordinary` kept (and
    that differ from ``want``, their correctly rounded bits), without judging most of them: those
    ``judge.within_budget_alone`` accepts (the judge's WITHIN_BUDGET: accepted, not on the
    boundary, result and oracle finite and not both zeros, at most ``max_ulp`` away, so at least
    1: bias_counts' deviation) are ordinary where no open alternative moves them (the only one at
    a positive finite beta is the rounded diff's; the flush-to-zero oracle is the oracle's bits,
    no input and no oracle being subnormal here), and of those, the ones an enumerated model the
    error model allows gives bit for bit (_held_models) are "explained", as bias_counts counts
    them. "The rest" (indices into the candidates) are judged whole: those the shortcut does
    not accept and the ordinary ones no such model gives (another order, an approximate
    operation, a lean). None where this does not apply (not fp16; a beta not positive and
    finite; a shared call with no core), and then every candidate is judged whole. ``diff``:
    exact.exact_diff of the candidates. The counts are call_bias_counts' (tests/test_sweep.py)."""
    b = exact_beta(fmt, beta)
    if fmt is not formats.FP16 or not 0 < b < np.inf or (variant == "s" and core_mask == 0):
        return None
    alone = within_budget_alone(fmt, profile, got, want, formats.ulp_distance(fmt, got, want), dy, x1, x2, beta,
                                diff=diff)
    # the rounded diff's alternative moves an element off the boundary's side only where RN16(x1 - x2)
    # is +-beta, that is where the exact diff lies within half an ULP of beta's (at most beta * 2^-11):
    # asked (the alternatives' own definition) only of those within beta * 2^-8
    with np.errstate(invalid="ignore"):
        near = alone & (np.abs(np.abs(diff[0]) - b) <= b * 2.0 ** -8)
    ordinary, near = alone & ~near, np.flatnonzero(near)
    alts = openbehaviour.alternatives(fmt, dy[near], x1[near], x2[near], beta, variant=variant, core_mask=core_mask,
                                      oracle=want[near])
    ordinary[near[~_open(fmt, alts, want[near])]] = True
    at = np.flatnonzero(ordinary)
    # (got is finite here: "the same result" is bias_counts' equal bits)
    explained = model_match(fmt, got[at], dy[at], x1[at], x2[at], beta, _held_models(fmt, profile))
    unexplained = ~alone
    unexplained[at[~explained]] = True
    return int(explained.sum()), bool(at.size), np.flatnonzero(unexplained)


def _may_be_ordinary(fmt, got, want, dy, x1, x2, beta: int, s: "np.ndarray | None" = None) -> np.ndarray:
    """Where an element can be bias_counts' ordinary one, told from the facts that are cheap to
    get (each is one of its conditions): a normal correctly rounded result, a result that is no
    infinity or NaN, no subnormal input, no intermediate that overflows. A block of subnormal
    x2, of tiny results or of large x2 and dy has none: its elements are not judged for the counts.
    ``s``: the exact diffs (exact.exact_diff's first), where the caller has them."""
    may = ((want & fmt.exp_mask) != 0) & ~is_special(fmt, want) & ~is_special(fmt, got)
    may &= ~is_subnormal(fmt, dy) & ~is_subnormal(fmt, x1) & ~is_subnormal(fmt, x2)
    at = np.flatnonzero(may)
    with np.errstate(all="ignore"):
        may[at] = ~overflow_prone(fmt, exact_diff(fmt, x1[at], x2[at])[0] if s is None else s[at], dy[at], beta)
    return may


def _oracle(fmt, dy, x1, x2, beta: int) -> np.ndarray:
    """The correctly rounded bits (fast_oracle; a NaN the canonical quiet NaN)."""
    from sl1conf.reference import fast_oracle

    f = lambda a: np.ascontiguousarray(a).view(fmt.dtype)  # noqa: E731
    return fast_oracle.smoothl1lossgrad(f(dy), f(x1), f(x2), np.array(beta, fmt.uint).view(fmt.dtype)).view(fmt.uint)


def _differing_lean(fmt, profile, got, dy, x1, x2, beta: int, variant: str, core_mask: int, rows) -> tuple:
    """(indices, correctly rounded bits there, explained) for :func:`lean_bias_counts`: the
    elements where ``got`` differs from the correctly rounded result, but for those that add
    nothing to the counts and those counted here as "explained" (their number). For fp16 where
    :func:`_settled` applies, in one pass in C (``kernel.f16_bias_pass``, with the call's
    ``rows`` where it has them: the exact conditions of _may_be_ordinary, within_budget_alone
    and _settled on deviations a model of _held_models gives; a sampled block of a sweep's
    middle line has about 110,000 such, the kernel's model's), else :func:`_differing`, 0."""
    b = exact_beta(fmt, beta)
    if fmt is formats.FP16 and 0 < b < np.inf and not (variant == "s" and core_mask == 0):
        from sl1conf.reference import kernel

        c = lambda a: np.ascontiguousarray(a, np.uint16)  # noqa: E731
        return kernel.f16_bias_pass(c(dy), c(x1), c(x2), beta, c(got), profile.max_ulp[fmt.name],
                                    _held_models(fmt, profile), rows=rows)
    return (*_differing(fmt, got, dy, x1, x2, beta), 0)


def _differing(fmt, got, dy, x1, x2, beta: int) -> tuple:
    """(indices, correctly rounded bits there) of the elements where ``got`` is not the
    correctly rounded result (NaN as a class): for fp16 in one pass of the sweep's check in C
    (kernel.f16_mismatches: no array of the whole call's oracle), else through the oracle."""
    if fmt is formats.FP16:
        from sl1conf.reference import kernel

        c = lambda a: np.ascontiguousarray(a, np.uint16)  # noqa: E731
        return kernel.f16_mismatches(c(dy), c(x1), c(x2), beta, c(got))
    want = _oracle(fmt, dy, x1, x2, beta)
    idx = np.flatnonzero(~formats.same_result(fmt, got, want))
    return idx, want[idx]


def _batch_bias(batch: Batch) -> dict:
    """"dtype/variant" -> the bias counts of the longest returned call of each dtype and variant of
    a campaign's batch: its first ``batch.sample`` elements judged whole, or (no sample) the
    whole call counted lean."""
    longest: dict = {}
    for i, c, o in batch.returned():
        run = f"{c.dtype}/{c.variant}"
        if c.elements_written and c.n > longest.get(run, (None, -1))[1]:
            longest[run] = ((i, c, o), c.n)
    out: dict = {}
    for run, ((i, c, o), _) in longest.items():
        w = c.elements_written if batch.sample is None else min(c.elements_written, batch.sample)
        inputs = (o.out[:w], *(a[:w] for a in (c.dy, c.x1, c.x2)), c.beta)
        if batch.sample is not None:
            counts = call_bias_counts(c.format, batch.profile, *inputs, variant=c.variant, core_mask=c.core_mask)
        else:  # (a block's rows hold for its whole length only)
            counts = lean_bias_counts(c.format, batch.profile, *inputs, variant=c.variant, core_mask=c.core_mask,
                                      rows=batch.rows.get(i) if w == c.n else None)
        add_bias_counts(out.setdefault(run, {}), counts)
    return out


def judge_bias(counts: dict) -> dict:
    """A campaign's summed counts of one dtype and variant, judged: the test and its lines."""
    test = rounding_bias(counts)
    return {"test": test, "findings": bias_findings(test)}


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
    return [f"rounding bias: {d['count']} of the {result['inexact_deviations']} ordinary results that differ from the "
            f"correctly rounded one in a way no evaluation the profile allows gives ({d['share']:.1%}) lie "
            f"{d['direction']}; {d['allowed_by']} allows at most {d['allowed_share']:.1%} plus {BIAS_SIGMAS:g} "
            "standard deviations"
            for d in result["directions"] if d["fails"]]


def rounding_bias(counts: dict) -> "dict | None":
    """The lean of the implementation's deviations from the correctly rounded result that no
    evaluation the profile allows gives (:func:`bias_counts`): for each direction its share, and
    whether its count exceeds the binomial expectation of a balanced rounding (one half) by
    more than BIAS_SIGMAS standard deviations. None: fewer than BIAS_MIN such deviations,
    nothing to judge."""
    got = counts.get("got")
    if not got or got["differ"] < BIAS_MIN:
        return None
    n = got["differ"]
    out = {"inexact_deviations": n, "directions": []}
    allowed = 0.5
    limit = n * allowed + BIAS_SIGMAS * (n * allowed * (1 - allowed)) ** 0.5
    for d in BIAS_DIRECTIONS:
        out["directions"].append({"direction": d, "count": got[d], "share": round(got[d] / n, 4),
                                  "allowed_share": allowed, "allowed_by": BALANCED, "fails": got[d] > limit})
    return out


def _accuracy(ctx: RunContext, req: "Requirement") -> Check:
    """The element rule's rejections, family by family (nothing judged: not applicable), and
    the rounding-bias test over the run's ordinary elements."""
    per_family = {}
    if ctx.whole is not None:
        calls = {}
        for i, j in enumerate(ctx.judged):
            calls.setdefault(j.family, []).append(i)
        bad = ctx.whole.rejected[req.id]
        looked = calls_to_look_at(ctx, bad)
        for family, which in calls.items():
            per_family[family] = Tally(ctx.fmt)
            per_family[family].add_calls(ctx, which, bad, looked=looked)
    else:
        for j in ctx.judged:
            per_family.setdefault(j.family, Tally(ctx.fmt)).add(j, j.rejected[req.id])
    total = Tally(ctx.fmt)
    for t in per_family.values():
        total.merge(t)
    lines = {n: t.entry(details=False) for n, t in per_family.items()}
    extra = {"families": tuple(FamilyResult(n, c.checked, c.failed, c.reasons, c.worst, c.examples)
                               for n, c in lines.items())}
    bias = rounding_bias(bias_counts([ctx.whole] if ctx.whole is not None else ctx.judged, ctx.profile))
    if bias is not None:
        extra["rounding_bias"] = bias
    for line in bias_findings(bias):
        total.note(None, line)
    return Check(total, applicable=total.checked > 0, extra=extra)


ID = "R01"
BIAS = Statistic("rounding_bias", ID, _batch_bias, add_bias_counts, judge_bias, bias_failure_keys)
"""The rounding-bias counts fuzz and sweep sum over a campaign and judge once."""
ROWS = (
    Requirement(ID, "accuracy",
                "Every element is within the profile's ULP budget of the correctly rounded result, or reachable "
                "under the profile's error model (its evaluation orders and precisions, each operation's "
                "accuracy, flushing where it may happen), or an acceptable alternative the vectors list; judged "
                "per family. Over the run, the results that differ from the correctly rounded ones where no "
                "evaluation the error model allows gives them do not lean one way (toward zero, away from it, down "
                "or up: rounding bias; an approximate operation's lean excepted where the profile allows one).",
                _accuracy, families=("*",), per_family=True, statistic=BIAS),
)
