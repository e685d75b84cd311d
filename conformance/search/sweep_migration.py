"""A checkpoint of an older sl1conf read as today's: format 4 (the last before one Evidence per
requirement) upgraded to format 5, format 5 (the last before one reason per element) to format 6.

Why: a long sweep's checkpoint holds hours of blocks; a format change that did not change the
rules (format 5 holds the same counts, judged by the same rules, in other words) must not make
anyone sweep again. Kept apart from reading the state, so that the day format 4 is dropped one
module goes.
"""

from __future__ import annotations

from sl1conf.reference import formats

from sl1conf.conformance.requirements.evidence import Evidence
from sl1conf.conformance.search.sweep_tally import element_example, kept

__all__ = ["FORMAT_4", "FORMAT_5", "FORMAT_6", "from_format_4", "from_format_5", "from_format_6"]

FORMAT_4 = "sl1conf-sweep/4"
FORMAT_5 = "sl1conf-sweep/5"
FORMAT_6 = "sl1conf-sweep/6"


def from_format_4(state: dict, into: str) -> dict:
    """A format-4 state in format ``into`` (5: the same counts, judged by the same rules): its
    examples as element records (completed with the sweep's dy and beta), its per-requirement
    counts as Evidence; its summary left out (the command prints it again). Anything it does not
    hold as format 4 did is left for the schema to refuse."""
    try:
        config, tally = state["config"], state["tally"]
        dy, beta = int(config["dy"], 16), int(config["beta"], 16)

        def record(e):  # an ElementRecord
            if e is None:
                return None
            distance = formats.NAN_MISMATCH if e["ulp"] == "nan" else int(e["ulp"])
            return element_example(e["index"], dy, int(e["x1"], 16), int(e["x2"], 16), beta, int(e["expected"], 16),
                                   int(e["got"], 16), distance)
        for row in tally["rows"].values():
            for key in ("worst", "first_nan", "first_zero_sign"):
                row[key] = kept(record(row[key]))
        tally["beyond_budget"]["worst"] = kept(record(tally["beyond_budget"]["worst"]))
        evidence = {rid: Evidence(elements=r["elements"], worst=record(r["worst"]))
                    for rid, r in tally.pop("rejected").items()}
        for rid, c in tally.pop("call_failures").items():
            e = evidence.setdefault(rid, Evidence())
            e.calls, first = c["calls"], c["first"]
            e.first_call = {"at": first["block"], "kind": first["kind"], "detail": first["detail"]}
        tally["requirements"] = {rid: e.to_json() for rid, e in sorted(evidence.items())}
        state.pop("summary", None)
        state["format"] = into
    except (KeyError, TypeError, ValueError, AttributeError):
        pass  # not what format 4 held: the schema says what is wrong with it
    return state


def from_format_5(state: dict, into: str) -> dict:
    """A format-5 state in format ``into`` (6: every element counted by the judge's reason,
    requirements.reasons), its counts by reason derived from what format 5 kept: exact (the
    histogram's 0 ULP), rejected, alternative (its open answers), reachable (the rest of what it
    accepted beyond the budget: format 5 did not tell an open input's bounds apart from the error
    model), within the budget (every other element returned). The same blocks, judged by the same
    rules; format 5 called "beyond the budget" only what lay beyond the budget's distance (an
    element within it that only the error model accepts, on the boundary say, is counted within
    the budget here), counted an element once per alternative whose bits it is (the alternatives
    are capped at what it accepted beyond the budget), and counted blocks refused at an open beta
    as the open answer "rejected" (an alternative here, as format 6 counts them). Anything it does not hold as format 5 did is left for the schema to refuse."""
    from sl1conf.conformance.requirements.reasons import reason_counts

    try:
        tally = state["tally"]
        far, answers = tally.pop("beyond_budget"), tally.pop("open_answers")
        exact = sum(int(row["histogram"].get("0", 0)) for row in tally["rows"].values())
        refused = int(answers.get("rejected", 0))  # blocks refused at an open beta: in elements, not in beyond
        judged_alternative = min(sum(int(n) for n in answers.values()) - refused, int(far["elements"]))
        beyond = int(far["elements"])
        rejected = int(tally["rejected_elements"])
        within = int(tally["elements"]) - int(tally["failed_elements"]) - refused - exact - rejected - beyond
        w = far["worst"]
        tally["accepted"] = {
            "reasons": reason_counts((exact, max(within, 0), beyond - judged_alternative,
                                      judged_alternative + refused, 0, rejected)),
            "named": {"alternative": dict(answers)} if answers else {}, "by": {}, "far": 0, "not_a_distance": {},
            "worst": None if w is None else {"ulp": int(w["ulp_value"]), "element": w, "reason": "reachable",
                                             "accepted_as": "? (format 5 did not keep it)"}}
        state["format"] = into
    except (KeyError, TypeError, ValueError, AttributeError):
        pass  # not what format 5 held: the schema says what is wrong with it
    return state


def from_format_6(state: dict, into: str) -> dict:
    """A format-6 state in format ``into`` (7: a volume of dy planes): one plane (format 6 swept one
    dy), and no rejected element kept whole (format 6 kept only the worst per requirement: a
    certificate says so rather than list none as if there were none). The same blocks, judged by
    the same rules."""
    try:
        state.setdefault("planes", 1)
        state["tally"].setdefault("rejections", [])
        state["format"] = into
    except (KeyError, TypeError, AttributeError):
        pass  # not what format 6 held: the schema says what is wrong with it
    return state
