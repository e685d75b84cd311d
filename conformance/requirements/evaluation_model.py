"""R17 evaluation model (recorded): the model the implementation matches bit for bit, or each
model's share and the split that explains them, claimed only when a test says it does."""

from __future__ import annotations

import numpy as np

from sl1conf.conformance.rules.diagnosis import beta_classes
from sl1conf.reference import formats
from sl1conf.reference import orders as grammar_orders
from sl1conf.reference.error_model import DTYPES, ORDERS
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
    combo = _combination(names, hits, index, length, call, extreme)
    if combo:
        out["combination"] = combo
    return out


def _combination(names: list, hits: dict, index, length, call, extreme) -> "dict | None":
    """The combination of two of ``names`` (``hits``: name -> whether each element is its bits) that
    passes the split test, over elements at ``index`` in calls of ``length`` elements, made as call
    ``call``, with an extreme beta or not (``extreme``); None where none does."""
    n = int(index.size)
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
            return {**best[1], "explained": round(best[0] / n, 4)}
    return None


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


SEARCH_CONFIRM = 4
"""At most this many of the grammar's evaluations that match every element searched are evaluated on
every element (the first that matches there too is named): the search's cost stays the disagreeing
elements' (times the grammar's size) plus a few evaluations of the run."""
SEARCH_SPLIT = 4
"""The grammar's evaluations (the closest first) the split test tries in pairs when none matches alone."""


def grammar_evaluations(fmt) -> list:
    """(name, Order, numpy type, words, flush) of every evaluation of the grammar (reference.orders) for
    data ``fmt``: each order in the data precision, fp32 and fp64 (one of them where the data is fp32),
    then each in the data precision with subnormals flushed (DAZ/FTZ; an FPU's flush mode is the data
    precision's), simplest first; the names are the error model's (``dy-divmul-fp16``), a flushed one's
    with ``-ftz`` (``dy-divmul-halved-ge-gradfma-fp32-ftz``)."""
    precs = list(dict.fromkeys(p for p in (fmt.name, "fp32", "fp64")
                               if np.dtype(DTYPES[p]).itemsize >= fmt.dtype.itemsize))
    plain = [(f"{o.name}-{p}", o, DTYPES[p], o.words(p), False) for o in grammar_orders.grammar() for p in precs]
    return plain + [(grammar_orders.flush_name(f"{o.name}-{fmt.name}", True), o, DTYPES[fmt.name],
                     f"{o.words(fmt.name)}, {grammar_orders.FLUSH_WORDS}", True) for o in grammar_orders.grammar()]


def _grammar_bits(fmt, evals: list, ins: list) -> list:
    """Each evaluation's bits on the elements ``ins`` (dy, x1, x2, beta as bits of one length): one
    grammar_orders.evaluate_many per precision and flush, which shares their intermediates."""
    vals = [formats.from_bits(fmt, a) for a in ins]
    out = [None] * len(evals)
    for P, flush in dict.fromkeys((e[2], e[4]) for e in evals):
        at = [i for i, e in enumerate(evals) if e[2] is P and e[4] == flush]
        for i, v in zip(at, grammar_orders.evaluate_many(fmt, [(evals[i][1], P, flush) for i in at], *vals)):
            out[i] = formats.to_bits(fmt, v)
    return out


def order_search(judged: list, fmt) -> dict:
    """The grammar's evaluation the implementation matches bit for bit, searched on the elements where
    the accepted models disagree or differ from the implementation (elsewhere every model gives the
    implementation's bits), on the elements the error model judges (a positive beta, no NaN input):
    ``searched`` (how many), ``tried`` (evaluations), ``order`` ((name, words) of the first, simplest
    first, that matches every searched element and then every element; None where none does),
    ``same_bits`` (how many others match every searched element), ``closest`` ((name, words, share)
    of the best few) and ``combination`` (two of them that pass R17's split test, or None)."""
    evals = grammar_evaluations(fmt)
    ins, got, index, length, call, extreme, whole = [], [], [], [], [], [], []
    for j in judged:
        bits = [np.ascontiguousarray(np.broadcast_to(np.asarray(a, fmt.uint), j.got.shape)) for a in j.inputs]
        with np.errstate(invalid="ignore"):  # signalling NaNs convert quietly
            v = [formats.from_bits(fmt, a).astype(np.float64) for a in bits]
        defined = ~np.isnan(v[0]) & ~np.isnan(v[1]) & ~np.isnan(v[2]) & (v[3] > 0)
        agree = np.ones(j.got.shape, bool)
        for m in j.models.values():
            agree &= m
        idx = np.flatnonzero(defined & ~agree)
        whole.append(([a[defined] for a in bits], j.got[defined]))
        if idx.size:
            ins.append([a[idx] for a in bits])
            got.append(j.got[idx])
            index.append(idx)
            length.append(np.full(idx.size, j.case.elements_written))
            call.append(np.full(idx.size, j.call_no))
            extreme.append(np.full(idx.size, int(extreme_beta(fmt, j.case.beta))))
    out = {"searched": int(sum(g.size for g in got)), "tried": len(evals), "order": None, "same_bits": 0,
           "closest": [], "combination": None}
    if not got:
        return out
    ins = [np.concatenate([c[k] for c in ins]) for k in range(4)]
    got = np.concatenate(got)
    hits = [formats.same_result(fmt, got, b) for b in _grammar_bits(fmt, evals, ins)]
    full = [i for i, h in enumerate(hits) if h.all()]
    if full:
        all_ins = [np.concatenate([w[0][k] for w in whole]) for k in range(4)]
        all_got = np.concatenate([w[1] for w in whole])
        for i in full[:SEARCH_CONFIRM]:
            if formats.same_result(fmt, all_got, _grammar_bits(fmt, [evals[i]], all_ins)[0]).all():
                out["order"] = (evals[i][0], evals[i][3], evals[i][1].name, evals[i][4])
                out["same_bits"] = len(full) - 1
                return out
    ranked = sorted(range(len(evals)), key=lambda i: -int(hits[i].sum()))  # stable: the simplest first on ties
    top, seen = [], set()
    for i in ranked:  # the best few with different bits (the grammar has orders that agree here)
        key = hits[i].tobytes()
        if key not in seen:
            seen.add(key)
            top.append(i)
        if len(top) == SEARCH_SPLIT:
            break
    out["closest"] = [(evals[i][0], evals[i][3], round(float(hits[i].mean()), 4)) for i in top]
    for i in top[:2]:  # a split's other part: the evaluation that gives the most of the bits a close one misses
        miss = ~hits[i]
        j = max(range(len(evals)), key=lambda k: int((hits[k] & miss).sum()))
        if j not in top and (hits[j] & miss).any():
            top.append(j)
    out["words"] = {evals[i][0]: evals[i][3] for i in top}
    if len(top) > 1:
        index, length, call, extreme = (np.concatenate(a) for a in (index, length, call, extreme))
        out["combination"] = _combination([evals[i][0] for i in top], {evals[i][0]: hits[i] for i in top},
                                          index, length, call, extreme)
    return out


def _search_text(search: dict, lead: bool = False) -> str:
    """What the grammar's search found, when it found no order, in words (``lead``: its split first)."""
    n, tried = search["searched"], search["tried"]
    words = search.get("words", {})
    if lead:
        combo = search["combination"]
        parts = ", ".join(f"{p['model']} ({words.get(p['model'], '')}) on {p['where']} ({p['share']:.1%})".replace(" ()", "")
                          for p in combo["parts"])
        return (f"{parts}: {combo['explained']:.1%} of the {n:,} elements where the enumerated models disagree or "
                f"differ from the implementation (the grammar of orders searched: {tried} evaluations, no one matches "
                f"alone; closest: " + ", ".join(f"{name} {share:.1%}" for name, _, share in search["closest"]) + ")")
    head = (f"no order of the grammar ({tried} evaluations: every way to combine diff, beta and dy with one division "
            f"or reciprocal and one multiplication or the halved sum an autodiff makes, in the data precision, fp32 or "
            f"fp64, with the branch terms an autodiff adds, and each in the data precision with subnormals flushed) "
            f"matches bit for bit the {n:,} elements where the models disagree or differ from the implementation")
    combo = search["combination"]
    if combo:
        parts = ", ".join(f"{p['model']} on {p['where']} ({p['share']:.1%})" for p in combo["parts"])
        return f"{head}; best split: {parts}: {combo['explained']:.1%} of them"
    closest = ", ".join(f"{name} ({words}) {share:.1%}" for name, words, share in search["closest"])
    return f"{head}, and no split of two passes the split test; closest: {closest}"


def model_text(found: dict, search: "dict | None" = None) -> str:
    """R17's observation in words (the report's line); ``search``: what the grammar's search found
    (:func:`order_search`), where it ran and named no order."""
    if found["matched"]:
        return ", ".join(found["matched"]) + " (bit for bit on every element)"
    more = f"; {_search_text(search)}" if search and search["searched"] else ""
    if found.get("grammar_split"):  # the grammar's split leads: it explains more than the models' own
        return f"no single order; {_search_text(search, lead=True)}"
    shares = found.get("shares")
    if not shares:
        return "none (no enumerated model or other order of the error model matches bit for bit)" + more
    n = found["disputed_elements"]
    listed = ", ".join(f"{m} {s:.1%}" for m, s in shares.items())
    combo = found.get("combination")
    if combo:
        parts = ", ".join(f"{p['model']} on {p['where']} ({p['share']:.1%})" for p in combo["parts"])
        return (f"no single model; {parts}: {combo['explained']:.1%} of the {n:,} elements where the models "
                f"disagree (each alone: {listed})" + more)
    closest, share = next(iter(shares.items()))
    return (f"no single model (no enumerated model or other order of the error model matches bit for bit, and no "
            f"split of two passes the split test); closest: {closest}, {share:.1%} of the {n:,} elements where the "
            f"models disagree (each: {listed})" + more)


def _worded(name: str) -> str:
    """An evaluation's name, with its words where its order is one of the grammar's beyond the error
    model's own (a profile that names ``dy-divmul``: ``dy-divmul-fp16: (dy / beta) * diff in half``)."""
    order, precision = name.rsplit("-", 1)
    g = grammar_orders.parse(order)
    return name if g is None or order in ORDERS else f"{name}: {g.words(precision)}"


def _model(ctx: RunContext, req: "Requirement") -> Check:
    judged = [j for j in ctx.judged if j.exact.size]
    if not judged:
        return Check(applicable=False)
    found = model_identification(judged, ctx.fmt)
    if not found["matched"]:
        found["matched"] = [_worded(name) for name in other_orders(judged, ctx.fmt, ctx.profile)]
    search = None
    if not found["matched"]:  # the grammar of orders, on the disagreeing elements only
        search = order_search(judged, ctx.fmt)
        if search["order"]:
            name, words, order, flush = search["order"]
            found["matched"] = [f"{name}: {words} (an order of the grammar, bit for bit on every element with a "
                                f"positive beta and no NaN input; a profile accepts it by naming {order} in "
                                f"[error_model.orders]" + (" and allowing flushing" if flush else "") + ")"]
        elif search["combination"] and search["combination"]["explained"] > found.get("combination", {}).get(
                "explained", 0.0):  # the grammar's split, of the elements searched, where it explains more
            found["combination"] = search["combination"]
            found["grammar_split"] = True
    extra = {"observed": found["matched"] or model_text(found, search)}
    extra.update({k: v for k, v in found.items() if k in ("shares", "disputed_elements", "combination")})
    return Check(extra=extra)


ROWS = (
    Requirement("R17", "evaluation-model",
                "The evaluation model the implementation matches bit for bit, if any (an enumerated model, another "
                "order of the error model: the clamp orders, mulrecip, fp64, or an order of the grammar of orders, "
                "searched on the elements where the models disagree); else each model's share of the "
                "elements where the models disagree, and the combination that explains them (one model on the vector "
                "body and another on the tail, by call length, or by call order).", _model, kind="recorded",
                families=("*",), observes=True, reports_model=True),
)
