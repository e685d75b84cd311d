"""R01 accuracy: every element within the budget or reachable under the error model, and,
over a run, results that do not lean one way beyond what the profile's evaluations do (the
rounding-bias test, which fuzz and sweep sum over their batches and blocks too)."""

from __future__ import annotations

import numpy as np

from sl1conf.conformance.rules.judge import expected_for, is_special, judge
from sl1conf.reference import formats
from sl1conf.reference.reachable import evaluations as reachable_evaluations, plain, plain_many, reach
from sl1conf.conformance.requirements.base import Batch, Check, Requirement, RunContext, Statistic, Tally


BIAS_SIGMAS = 6.0
"""The rounding-bias test's margin, in binomial standard deviations: one-sided false-alarm
rate below 1e-9 per direction (normal approximation) for an implementation that leans no
more than the most leaning evaluation the profile's error model allows."""
BIAS_MIN = 100  # fewer deviating elements than this: too few to judge a lean
BIAS_DIRECTIONS = ("toward zero", "away from zero", "down", "up")


def honest_evaluations(fmt, profile) -> list:
    """(name, order, precision) of every evaluation the profile's error model allows on data
    ``fmt`` with every operation correctly rounded and nothing flushed (``reachable.evaluations``):
    the rounding-bias test's baseline. Each leans as its order and precision make it lean; the
    clamp orders' outer lines, ``fl(beta * fl(1 / beta)) * dy``, lean toward zero for a beta whose
    reciprocal rounds down, where the branched orders copy ``dy``."""
    return reachable_evaluations(fmt, profile.error_model)


def bias_counts(judged, profile) -> dict:
    """Per direction, over the ordinary elements (normal inputs, a normal correctly rounded
    result that flushing does not change and no open question touches, not on the boundary,
    no intermediate overflow, a finite accepted result) of the judgements: how many results
    differ from the correctly rounded one by one to ``max_ulp`` ULPs (a rounding, not an
    answer to another question) and how many of those lie that way, for the implementation
    ("got") and for every evaluation the profile's error model allows (:func:`honest_evaluations`,
    by name) on the same elements. Why against the correctly rounded result: an evaluation that
    rounds to nearest deviates from it both ways; a truncation or a rounding mode left changed
    deviates one way only. Where the profile's error model allows an approximate operation, the
    implementation's deviations that such an operation in fp32 or wider reaches are not counted
    ("approximate", apart): a reciprocal converging from below leans as a rounding mode does, and
    nothing per element tells them apart (docs/conformance.md, "Rounding bias"); the last
    rounding to the data format is still tested."""
    out: dict = {}
    picked = []  # (judgement, its ordinary elements), every judgement's in order
    for j in judged:
        fmt = j.fmt
        o = j.expected.oracle
        normal = ((o & fmt.exp_mask) != 0) & ~is_special(fmt, o)
        open_ = np.zeros(o.shape, bool)
        for bits in j.expected.alternatives.values():
            open_ |= ~formats.same_result(fmt, bits, o)
        ordinary = (j.ok & normal & ~open_ & ~j.boundary & ~j.subnormal_inputs & ~j.overflow_prone
                    & ~is_special(fmt, j.got) & formats.same_result(fmt, o, j.expected.oracle_ftz))
        idx = np.flatnonzero(ordinary)
        if idx.size:
            picked.append((j, idx))
    if not picked:
        return out
    # every judgement's ordinary elements at once (the work is per element, the overhead per array)
    fmt = picked[0][0].fmt
    o = np.concatenate([j.expected.oracle[k] for j, k in picked])
    inputs = [np.concatenate([np.broadcast_to(np.asarray(j.inputs[i], fmt.uint), j.got.shape)[k] for j, k in picked])
              for i in range(4)]
    whose = {"got": np.concatenate([j.got[k] for j, k in picked])}
    f = lambda a: a.view(fmt.dtype)  # noqa: E731
    honest = honest_evaluations(fmt, profile)
    computed = [(name, order, precision) for name, order, precision in honest  # the enumerated models: the kernel's bits, kept
                if not all(name in j.expected.models for j, _ in picked)]
    bits = dict(zip((e[0] for e in computed), plain_many(fmt, [e[1:] for e in computed], *(f(a) for a in inputs))))
    for name, _, _ in honest:
        whose[name] = (bits[name].view(fmt.uint) if name in bits
                       else np.concatenate([j.expected.models[name][k] for j, k in picked]))
    for who, bits in whose.items():
        at = np.flatnonzero(bits != o)  # an element equal to the oracle is 0 ULPs from it: never counted
        d = formats.ulp_distance(fmt, bits[at], o[at])
        at = at[(d >= 1) & (d <= profile.max_ulp[fmt.name])]
        c = out.setdefault(who, {"differ": 0, **{k: 0 for k in BIAS_DIRECTIONS}})
        if who == "got" and profile.error_model.approximate and at.size:
            approx = reach(fmt, profile.error_model, bits[at], *(a[at] for a in inputs), o[at], stages=(2,),
                           min_precision=4).stage > 0
            c["approximate"] = int(approx.sum())
            at = at[~approx]
        v, w = formats.from_bits(fmt, bits[at]).astype(np.float64), formats.from_bits(fmt, o[at]).astype(np.float64)
        c["differ"] = int(at.size)
        for k, lean in zip(BIAS_DIRECTIONS, (np.abs(v) < np.abs(w), np.abs(v) > np.abs(w), v < w, v > w)):
            c[k] = int(lean.sum())
    return out


def bias_failure_keys(run: str, judged: dict) -> list:
    """The fuzzer's failure keys of a rounding-bias test's failing directions over a campaign
    (``R01/fp16/p/long/rounding-bias/toward-zero``; ``judged`` as :func:`judge_bias` gives it):
    filed under this requirement."""
    return [f"{ID}/{run}/long/rounding-bias/{d['direction'].replace(' ', '-')}"
            for d in (judged.get("test") or {}).get("directions", []) if d["fails"]]


def call_bias_counts(fmt, profile, got, dy, x1, x2, beta: int, variant: str = "p", core_mask: int = 0xFF) -> dict:
    """:func:`bias_counts` of one call judged whole, everything acceptable computed afresh (the
    honest evaluations on every element): what fuzz batches and sweep blocks add up."""
    exp = expected_for(fmt, dy, x1, x2, beta, variant=variant, core_mask=core_mask)
    return bias_counts([judge(fmt, profile, got, exp, dy, x1, x2, beta)], profile)


def lean_bias_counts(fmt, profile, got, dy, x1, x2, beta: int, variant: str = "p", core_mask: int = 0xFF) -> dict:
    """:func:`call_bias_counts` with less work, for a long call (a sweep's block).

    The counts count, on the ordinary elements, the results that differ from the correctly
    rounded one, the implementation's and each honest evaluation's: an element where the
    implementation and every evaluation give the correctly rounded result adds nothing but the
    counters' keys, which exist as soon as one element of the call is ordinary. So this judges
    the elements where the implementation or an evaluation differs (computed on the whole call:
    the kernel's models a fraction of a millisecond each), and only if none of those is ordinary,
    the others in growing slices until one is (usually the first slice; the whole call where
    none is). Every rule is a function of the element alone, so the counts are those of the
    call judged whole (tests/test_sweep.py checks it against :func:`call_bias_counts`)."""
    from sl1conf.reference import fast_oracle, kernel
    from sl1conf.reference.models import MODELS

    f = lambda a: np.ascontiguousarray(a).view(fmt.dtype)  # noqa: E731
    b = np.array(beta, fmt.uint).view(fmt.dtype)
    want = fast_oracle.smoothl1lossgrad(f(dy), f(x1), f(x2), b).view(fmt.uint)
    differ = ~formats.same_result(fmt, got, want)
    for name, order, precision in honest_evaluations(fmt, profile):  # NaN payloads differ too: more elements, never fewer
        bits = (kernel.smoothl1lossgrad(f(dy), f(x1), f(x2), b, model=name) if name in MODELS
                else plain(fmt, order, precision, f(dy), f(x1), f(x2), b))
        differ |= bits.view(fmt.uint) != want

    def counted(idx):
        exp = expected_for(fmt, dy[idx], x1[idx], x2[idx], beta, variant=variant, core_mask=core_mask, oracle=want[idx])
        return bias_counts([judge(fmt, profile, got[idx], exp, dy[idx], x1[idx], x2[idx], beta)], profile)

    picked = np.flatnonzero(differ)
    counts = counted(picked) if picked.size else {}
    rest, at, step = np.flatnonzero(~differ), 0, 1024
    while not counts and at < rest.size:  # no ordinary element among them: does the rest hold one (the keys)?
        counts = counted(rest[at:at + step])
        at, step = at + step, 4 * step
    return counts


def _batch_bias(batch: Batch) -> dict:
    """"dtype/variant" -> the bias counts of the longest returned call of each dtype and variant of
    a campaign's batch: its first ``batch.sample`` elements judged whole, or (no sample) the
    whole call counted lean."""
    longest: dict = {}
    for _, c, o in batch.returned():
        run = f"{c.dtype}/{c.variant}"
        if c.elements_written and c.n > longest.get(run, (None, -1))[1]:
            longest[run] = ((c, o), c.n)
    out: dict = {}
    for run, ((c, o), _) in longest.items():
        w = c.elements_written if batch.sample is None else min(c.elements_written, batch.sample)
        count = call_bias_counts if batch.sample is not None else lean_bias_counts
        add_bias_counts(out.setdefault(run, {}), count(c.format, batch.profile, o.out[:w],
                                                       *(a[:w] for a in (c.dy, c.x1, c.x2)), c.beta,
                                                       variant=c.variant, core_mask=c.core_mask))
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
    return [f"rounding bias: {d['count']} of {result['inexact_deviations']} ordinary results that differ from the "
            f"correctly rounded one ({d['share']:.1%}) lie {d['direction']}; the profile's evaluations allow at most "
            f"{d['allowed_share']:.1%} ({d['allowed_by']}) plus {BIAS_SIGMAS:g} standard deviations"
            for d in result["directions"] if d["fails"]]


def rounding_bias(counts: dict) -> "dict | None":
    """The lean of the implementation's deviations from the correctly rounded result against
    what the profile's honest evaluations do on the same elements: for each direction the
    implementation's share, the largest share of an evaluation with at least BIAS_MIN deviations (else one
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
                "per family. Over the run, the results that differ from the correctly rounded ones do not lean "
                "one way (toward zero, away from it, down or up) beyond what the evaluations the error model allows do (rounding "
                "bias; an approximate operation's lean excepted where the profile allows one).",
                _accuracy, families=("*",), per_family=True, statistic=BIAS),
)
