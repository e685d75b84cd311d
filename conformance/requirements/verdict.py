"""Verdicts from requirement entries: a run's (fail, incomplete, pass) and a report's, and why
a run that failed nothing still checked too little to pass."""

from __future__ import annotations


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


def settle_verdicts(runs: list, missing=()) -> str:
    """Every run's verdict from its requirements' statuses, then the report's (returned): the
    one place verdicts are computed, once every status is final (the run's checks, the shared
    against private comparison, the waivers: in that order)."""
    for run in runs:
        run["verdict"] = run_verdict(run["requirements"], run.get("incomplete", ()))
    return report_verdict(runs, missing)


def report_verdict(runs: list, missing=()) -> str:
    """A report's verdict: fail when a run fails or nothing ran; incomplete when a run is, or
    ``missing`` names runs the profile lists that the implementation lacks; else pass."""
    if not runs or any(r["verdict"] == "fail" for r in runs):
        return "fail"
    return "incomplete" if missing or any(r["verdict"] == "incomplete" for r in runs) else "pass"
