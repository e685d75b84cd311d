"""R17 evaluation model (recorded): the model the implementation matches bit for bit, or each
model's share and the split that explains them, claimed only when a test says it does."""

from __future__ import annotations

import numpy as np

from sl1conf.conformance.rules.diagnosis import beta_classes
from sl1conf.reference import formats
from sl1conf.reference.reachable import evaluations, point
from sl1conf.conformance.requirements.base import Check, Requirement, RunContext
from sl1conf.conformance.requirements.position import POSITION_WIDTHS


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


def extreme_beta(fmt, beta: int) -> bool:
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
            disputed |= ~formats.same_result(fmt, b, bits[0])
        idx = np.flatnonzero(disputed)
        if idx.size:
            index.append(idx)
            length.append(np.full(idx.size, j.case.elements_written))
            call.append(np.full(idx.size, j.call_no))
            extreme.append(np.full(idx.size, int(extreme_beta(fmt, j.case.beta))))
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
            v = [formats.from_bits(fmt, a).astype(np.float64) for a in bits]
        defined = ~np.isnan(v[0]) & ~np.isnan(v[1]) & ~np.isnan(v[2]) & (v[3] > 0)
        if defined.any():
            calls.append(([formats.from_bits(fmt, a[defined]) for a in bits], j.got[defined]))
    return [name for name, order, P in evaluations(fmt, profile.error_model) if name not in known and all(
        formats.same_result(fmt, got, formats.to_bits(fmt, point(fmt, order, P, *inputs))).all() for inputs, got in calls)]


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


ROWS = (
    Requirement("R17", "evaluation-model",
                "The evaluation model the implementation matches bit for bit, if any (an enumerated model, or another "
                "order of the error model: the clamp orders, mulrecip, fp64); else each model's share of the "
                "elements where the models disagree, and the combination that explains them (one model on the vector "
                "body and another on the tail, by call length, or by call order).", _model, kind="recorded",
                families=("*",), observes=True, reports_model=True),
)
