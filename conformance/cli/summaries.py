"""What ``sl1conf fuzz`` and ``sl1conf sweep`` print when they end: their results in words.

Why apart from the commands: the commands parse arguments and run the engines; these turn
what the engines return (a fuzz summary, a replayed batch, a sweep state with its summary)
into the lines a person reads (docs/fuzzing.md and docs/sweeps.md quote them).
"""

from __future__ import annotations

import numpy as np

from sl1conf.conformance.common.commands import explain_command
from sl1conf.conformance.reports.view import Failure, distance_text, failure_text, reasons_text
from sl1conf.conformance import requirements
from sl1conf.conformance.requirements import by_id
from sl1conf.conformance.requirements import open_behaviour
from sl1conf.conformance.requirements.records import ElementRecord
from sl1conf.conformance.search import fuzz, fuzz_campaign, sweep

__all__ = ["describe_pattern", "fuzz_lines", "replay_lines", "vectors_replay_lines", "sweep_lines"]


def describe_pattern(text: str) -> str:
    """A pattern (search.fuzz.pattern, as text) in words."""
    parts = text.split("/")
    head = " ".join(parts[:3])
    if len(parts) == 5 and parts[3] == fuzz.NOT_WRITTEN:
        where = {"end": "the last elements of a call", "start": "the first elements of a call",
                 "scattered": "elements here and there in a call"}.get(parts[4], parts[4])
        return f"{head}: {where} left unwritten"
    if len(parts) == 5 and parts[3] in ("wrong", "nan"):
        what = "NaN results" if parts[3] == "nan" else "wrong values"
        branch = {"gt": "x1 - x2 > beta", "lt": "x1 - x2 < -beta", "mid": "|x1 - x2| <= beta",
                  "nan": "x1 - x2 or beta NaN"}.get(parts[4], parts[4])
        return f"{head}: {what} where {branch}"
    return text


def _record(d: "dict | None", kind: bool = False) -> "ElementRecord | None":
    """An element a fuzz summary or a sweep state wrote (read from its JSON file) as the one element
    record the report's words take; ``kind``: a sweep's kind of distance, where it has one, said in
    place of the distance."""
    if d is None:
        return None
    return ElementRecord(*(d.get(n) for n in ("dy", "x1", "x2", "beta", "expected", "got")),
                         ulp=(d.get("kind") if kind else None) or d.get("ulp"), distance=d.get("ulp_value", -1),
                         not_written=bool(d.get("not_written")),
                         **{n: d.get(n) for n in ("case", "element", "length", "detail", "reason", "accepted_as")})


def _said(f: Failure, first: str, rest: str) -> list:
    """A failure in the one formatter's words (reports.view.failure_text, brief: heading, cause,
    commonest error, over the run, the element or the first failure), its first line after
    ``first`` and the others after ``rest``."""
    lines = [line.strip() for line in failure_text(f, brief=True).splitlines()]
    return [first + lines[0]] + [rest + line for line in lines[1:]]


def _statistic_failures(entries: dict, s, counted: str) -> list:
    """The Failures of a statistic's failing runs (``entries``: "dtype/variant" -> its judgement)."""
    req, out = by_id(s.requirement), []
    for run, e in entries.items():
        if e["findings"]:
            dtype, variant = run.split("/")
            out.append(Failure(dtype, variant, req.id, req.title, req.statement, None, "", variants=[variant],
                               counted=counted, over_the_run="; ".join(e["findings"])))
    return out


def fuzz_lines(summary: dict, out: Path) -> list:
    """A fuzz output's summary (a campaign's or a merge's, written into ``out``) in words: the
    counts, each finding in certify's words (reports.view.failure_text) with its smallest
    reproducer and how to look at it again, the certify commands that run the saved vectors."""
    f = summary["failures"]
    lines = [f"fuzz {summary['implementation']['adapter']} on {summary['profile']['name']}: "
             f"{summary['elements']:,} elements in {summary['batches']['count']} batches "
             f"({summary['elements_per_second'] / 1e6:.2f} M elements/s), seed {summary['campaign']['seed']}, "
             f"shard(s) {', '.join(summary['shards'])}"
             + "".join(f" ({shard} missing)" for shard in summary.get("missing_shards", []))
             + (" (interrupted)" if summary.get("interrupted") else "")
             + f": {len(f['patterns'])} finding(s) ({f['distinct']} distinct failure(s), {f['findings']} in all), "
               f"{len(summary['saved'])} saved"]
    if summary.get("reasons"):
        lines.append("by the judge's reason: " + reasons_text(summary["reasons"]))
    found = [(rid, e) for rid, e in summary["requirements"].items() if e["elements"] or e["calls"]]
    if found:  # every element and call each requirement failed on, not only the first of each finding
        lines.append("  by requirement: " + "; ".join(
            f"{rid} " + ", ".join(part for part in (
                f"{e['elements']:,} element(s) rejected (worst {distance_text(_record(e['worst']))})" if e["elements"] else "",
                f"{e['calls']:,} call(s) failed" if e["calls"] else "") if part) for rid, e in found))
    for i, e in enumerate(summary["saved"], 1):
        where = f"batch {e['found']['batch']}, case {e['found']['case']}" + (
            f", element {e['found']['element']}" if e["found"]["element"] is not None else "")
        shown = "got" in e
        failure = Failure(e["dtype"], e["variant"], e["requirement"], e["title"], by_id(e["requirement"]).statement,
                          _record(e) if shown else None, "" if shown else f"{e['kind']}: {e['detail']}", variants=[e["variant"]],
                          counted=f"{e['distinct']} distinct failure(s), {e['findings']} in all",
                          shown_as="Smallest reproducer")
        lines += _said(failure, f"  [{i}] ", "      ")
        if shown and e["kind"] != "element":  # a call compared with its twin: both versions' bits
            lines.append(f"      {e['kind']}: {e['detail']}")
        call = (f"element {e['element']} of a call of {e['length']}" if e["element"] is not None
                else f"a call of {e['length']}")
        lines.append(f"      Pattern: {describe_pattern(e['pattern']).split(': ', 1)[-1]}; {call} "
                     f"(found in {where}; vectors-{e['dtype']} case {', '.join(e['cases'])})")
        if "dy" in e:
            lines.append(f"      {explain_command(e['dtype'], e['dy'], e['x1'], e['x2'], e['beta'])}")
        if e.get("replay"):
            lines.append(f"      {e['replay']}")
    shown = {e["pattern"] for e in summary["saved"]}
    counted = fuzz_campaign.statistic_keys(summary)  # said below, with their counts
    rest = [r for r in f["patterns"] if r["pattern"] not in shown and r["pattern"] not in counted]
    for r in rest:
        lines.append(f"  [-] {describe_pattern(r['pattern'])}: {len(r['keys'])} distinct failure(s), "
                     f"{r['findings']} in all (no reproducer of its own saved: --max-cases, or the same as one above)")
    for s in requirements.STATISTICS:
        for failure in _statistic_failures(summary.get(s.name, {}), s, "over the campaign"):
            lines += _said(failure, "  [-] ", "      ")
    for cmd in summary["certify"]:
        lines.append(f"  certify: {cmd}")
    lines.append(f"summary: {out / 'summary.json'}")
    return lines


def replay_lines(campaign, batch: int, cases: list, findings: list) -> list:
    """A replayed batch (``sl1conf fuzz replay``) in words: its size and each finding."""
    lines = [f"batch {batch} of seed {campaign.seed}: {len(cases)} cases, {sum(c.n for c in cases):,} elements, "
             f"{len(findings)} finding(s)"]
    for f in findings:
        c = cases[f.case]
        lines.append(f"  {f.kind} case {f.case} ({c.dtype} {c.variant}, length {c.n}"
                     + (f", element {f.element}" if f.element is not None else "") + f"): {f.detail}")
    return lines


def vectors_replay_lines(vs, spec: str, platform: str, config: "dict | None", cases: list, findings: list,
                         evidence: dict, reasons: dict) -> list:
    """A vector set replayed (``sl1conf fuzz replay SWEEP_OUT``: a sweep's rejected elements, ``config``
    the sweep's configuration, or None for a set no sweep wrote) in words: what ran, every requirement
    that rejected elements again (certify's words, its worst element) or failed calls, each finding as
    ``replay_lines`` says it, and the verdict."""
    elements = sum(c.n for c in cases)
    rows = len(vs.case_rows())
    whose = (f"the rejections of the sweep of {config['impl']} (beta {config['beta']}, dy {config['dy']}, "
             f"subset {config['subset']})" if config else "a vector set")
    lines = [f"replay of {vs.path} ({whose}) on {spec}, judged on {platform}: {len(cases)} call(s)"
             + (f" of {rows} (the others are of a variant {spec} does not offer)" if len(cases) < rows else "")
             + f", {elements:,} elements, {len(findings)} finding(s)"]
    lines.append("by the judge's reason: " + reasons_text(reasons))
    for rid, e in sorted(evidence.items()):
        req = by_id(rid)
        if e.elements:
            variant = cases[e.worst.at[1]].variant
            failure = Failure(cases[0].dtype, variant, rid, req.title, req.statement, e.worst, "", variants=[variant],
                              counted=f"{e.elements:,} of {elements:,} elements rejected")
            lines += _said(failure, "  ", "    ")
        if e.calls:
            at, c = e.first_call["at"], cases[e.first_call["at"][1]]
            failure = Failure(c.dtype, c.variant, rid, req.title, req.statement, None,
                              f"call {at[1]}: {e.first_call['kind']}: {e.first_call['detail']}", variants=[c.variant],
                              counted=f"{e.calls:,} call(s) failed")
            lines += _said(failure, "  ", "    ")
    for f in findings:
        c = cases[f.case]
        lines.append(f"  {f.requirement} {f.kind} call {f.case} ({c.dtype} {c.variant}, length {c.n}"
                     + (f", element {f.element}" if f.element is not None else "") + f"): {f.detail}")
    lines.append(f"verdict: {'FAIL' if findings else 'PASS'}" + (
        f" ({reasons['rejected']:,} of {elements:,} elements rejected again)" if findings else
        f" (none of the {elements:,} elements fails again)"))
    return lines


def _value(hex_text: str) -> str:
    """An fp16 bit pattern with its value: ``0x3c00 (1)``."""
    return f"{hex_text} ({float(np.uint16(int(hex_text, 16)).view(np.float16)):.6g})"


def sweep_lines(state: dict, note: str = "") -> list:
    """The human summary of a state with its ``summary`` (also what docs/sweeps.md quotes). One
    plane: its dy with its value and the pairs of the plane; a volume of planes (``planes`` > 1): the
    dy set and how many planes, the elements of the volume, and the explain line at the worst
    element's own dy."""
    c, s, v = state["config"], state["summary"], state["summary"]["verdict"]
    planes = state.get("planes", 1)
    rate = f", {s['elements_per_second'] / 1e6:.1f} M elements/s" if s["elements_per_second"] else ""
    done = "complete" if state["complete"] else f"{len(state['done'])} of {state['blocks']} blocks"
    dy = _value(c["dy"]) if planes == 1 else f"{c['dy']} ({planes:,} planes)"
    counted = f"{state['pairs']:,} pairs" if planes == 1 else f"{state['pairs'] * planes:,} elements"
    lines = [f"sweep of {c['impl']}: fp16 {c['variant']}, beta {_value(c['beta'])}, dy {dy}, "
             f"subset {c['subset']}",
             f"{s['elements']:,} of {counted} ({done}) in {s['seconds']:.1f} s{rate}",
             "  ULP distance  elements"]
    lines += [f"  {b:<12}  {n:>14,}" for b, n in s["histogram"].items()]
    w = s["worst"]
    if not v["checked_elements"]:  # no call returned a result: no distance to speak of
        lines.append("worst: none: nothing was checked (" + ("no call returned a result" if v["failed_elements"]
                                                            else "every call was refused") + ")")
    elif w is None:
        no_distance = sum(n for b, n in s["histogram"].items() if b in ("nan", "zero-sign"))
        if no_distance:
            are = f"{no_distance:,} results are" if no_distance > 1 else "1 result is"
            lines.append(f"worst finite distance: 0 ULP; {are} no distance (NaN against a number, or a zero of "
                         "the other sign): below")
        elif v["beyond_budget"]:
            lines.append("worst finite distance: 0 ULP (see the elements accepted beyond the budget below)")
        else:
            lines.append("worst: 0 ULP (every element correctly rounded, NaN as a class)")
    else:
        lines.append(f"worst: {distance_text(_record(w, kind=True))} at x1 {_value(w['x1'])}, x2 {_value(w['x2'])}: expected "
                     f"{w['expected']}, got {w['got']}")
        lines.append("  " + explain_command("fp16", c["dy"] if planes == 1 else w["dy"], w["x1"], w["x2"], c["beta"]))
    lines.append(f"judged as certify judges on {v['platform']} (fp16 budget {v['budget_ulp']} ULP): "
                 f"{v['rejected']:,} elements rejected"
                 + (f"; calls without a result: {v['failed_elements']:,} elements" if v["failed_elements"] else ""))
    for rid, r in v["requirements"].items():  # certify's words (reports.view.failure_text)
        failure = Failure("fp16", c["variant"], rid, r["title"], by_id(rid).statement, _record(r["worst"], kind=True), "",
                          variants=[c["variant"]],
                          counted=f"{r['elements']:,} of {v['checked_elements']:,} elements rejected")
        lines += _said(failure, "  ", "    ")
    for rid, r in v["call_failures"].items():
        f = r["first"]
        failure = Failure("fp16", c["variant"], rid, r["title"], by_id(rid).statement, None,
                          f"block {f['at']}: {f['kind']}: {f['detail']}", variants=[c["variant"]],
                          counted=f"{r['calls']:,} blocks failing as calls")
        lines += _said(failure, "  ", "    ")
    lines.append("by the judge's reason: " + reasons_text(v["reasons"]))
    if v["beyond_budget"]:
        e = v["beyond_budget"]["worst"]
        lines.append(f"accepted beyond the budget: {v['beyond_budget']['elements']:,} elements with a distance, "
                     f"up to {distance_text(_record(e, kind=True))} ({e['reason']}: {e['accepted_as']}; x1 {e['x1']}, x2 {e['x2']})")
    for question, answers in v["open_answers"].items():
        lines.append(f"open ({question}, {open_behaviour.ID}): "
                     + ", ".join(f"{name} {n:,} elements" for name, n in answers.items()))
    for st in requirements.STATISTICS:
        for failure in _statistic_failures({f"fp16/{c['variant']}": v.get(st.name, {"findings": []})}, st,
                                           f"over the blocks sampled (every {sweep.SAMPLE_EVERY}th)"):
            lines += _said(failure, "  ", "    ")
    if note:
        lines.append(note)
    failure = _first_failure(state)
    if failure:
        lines.append(f"first call without a result: block {failure['block']}, {failure['status']}"
                     + (f": {failure['detail']}" if failure["detail"] else ""))
    if not v["checked_elements"]:
        lines.append("nothing was checked: " + ("no call returned a result" if v["failed_elements"]
                                                else "every call was refused") + " (not a pass)")
    # (an unfinished sweep is no pass: what it checked so far is said, not a verdict on the rest)
    lines.append("verdict: " + ("FAIL" if not v["pass"] else "PASS" if state["complete"] else
                                "INCOMPLETE: none rejected so far, not every block is done (not a pass)"))
    return lines


def _first_failure(state: dict) -> "dict | None":
    """The first call that returned no result (block, status, detail), from the tally (an object
    while a command runs, its JSON in a saved state)."""
    tally = state["tally"]
    return tally.failure if hasattr(tally, "failure") else tally.get("first_failure")
