"""Waivers: known failures a team has decided to ship with, each with a reason.

A waiver file is TOML::

    [[waiver]]
    id = "Rnn"                       # a requirement id (docs/requirements.md)
    families = ["signed-zero"]       # optional: only failures in these families (of a per-family requirement)
    dtypes = ["fp16"]                # optional
    variants = ["s"]                 # optional
    pattern = "beta-negative"        # optional: a diagnosis pattern's key (rules.diagnosis.pattern_keys)
    reason = "the board's libm returns +0 for -0 results; tracked as BUG-123"

A failure a waiver covers is reported as ``waived`` (with the reason) and no longer fails
the verdict; a waiver that matches no failure is reported too, so stale ones get removed.
A waiver with a ``pattern`` is as narrow as the diagnosis: it covers a requirement's failures
only where the report's diagnosis of them shows that pattern, and waives the requirement only
when the pattern holds every one of its failures; otherwise the requirement still fails, and
the entry says how many of its failures the waiver would cover (``waiver_partial``). Each
waiver reports the requirements it waived (``matched``) and the failures they held
(``failures``).

A file is checked completely before anything runs (conformance/schemas/waiver.schema.json,
then the ids and family names); the fields are documented in docs/conformance.md.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from sl1conf.conformance.common.errors import SuiteError
from sl1conf.conformance.common.tomlfiles import read_toml, schema_problem, toml_path, toml_value
from sl1conf.conformance.requirements import CATALOG, by_id
from sl1conf.conformance.requirements.results import Report

__all__ = ["WaiverError", "load_waivers", "apply_waivers", "waive"]


class WaiverError(SuiteError):
    """An unusable waiver file: one line naming the file and the problem."""


SCHEMA = "waiver.schema.json"  # conformance/schemas/: every key, its type and range (docs/conformance.md)


def load_waivers(path) -> list[dict]:
    """The waivers of the TOML file ``path``, each a dict with the keys the file gives (id and
    reason always; families, dtypes and variants where given), checked completely before
    anything runs: against the committed schema, then that each id is a requirement of the
    catalog and each family one of the suite's. WaiverError (one line) otherwise."""
    from sl1conf.conformance.rules.diagnosis import pattern_keys
    from sl1conf.conformance.vectors.families import FAMILY_NAMES

    p = Path(path)
    _, data = read_toml(p, WaiverError, "a waiver file")
    known = [r.id for r in CATALOG]

    def bad(where, problem):
        """WaiverError(one line): the file, the waiver (counted from 1, with its id if that is
        one), the field and the problem."""
        head = [str(p)]
        if where[:1] == ["waiver"] and len(where) > 1:
            w = data["waiver"][where[1]]
            rid = w.get("id") if isinstance(w, dict) and where[2:] != ["id"] else None
            head.append(f"waiver {where[1] + 1}" + (f" ({rid})" if rid in known else ""))
            where = where[2:]
        return WaiverError(": ".join(head + ([toml_path(where)] if where else []) + [problem]))

    problem = schema_problem(data, SCHEMA)
    if problem:
        raise bad(*problem)
    waivers = data.get("waiver", [])
    for k, w in enumerate(waivers):  # what the schema cannot say: ids and families of this suite
        if w["id"] not in known:
            raise bad(["waiver", k, "id"],
                      f"unknown requirement id {w['id']!r} (the catalog has {known[0]} to {known[-1]})")
        if "pattern" in w and w["pattern"] not in pattern_keys() and w["pattern"].removeprefix("family-") not in (
                FAMILY_NAMES if w["pattern"].startswith("family-") else ()):
            raise bad(["waiver", k, "pattern"], f"unknown pattern {toml_value(w['pattern'])} (a diagnosis pattern's "
                      "key, as a report's diagnosis entries carry it: beta-negative, diff-subnormal, not-written, "
                      "length-65536, family-underflow, ...)")
        for f in w.get("families", []):
            if f not in FAMILY_NAMES:
                raise bad(["waiver", k, "families"],
                          f"unknown family {toml_value(f)} (the suite's families: {', '.join(FAMILY_NAMES)})")
    return waivers


def _covers(w: dict, run, rid: str, families: "list | None") -> bool:
    """Whether waiver ``w`` covers a failure of ``rid`` in ``run`` (RunResult) within ``families``."""
    return (w["id"] == rid and run.dtype in w.get("dtypes", [run.dtype])
            and run.variant in w.get("variants", [run.variant])
            and ("families" not in w or bool(set(w["families"]) & set(families or ()))))


def _pattern_holds(w: dict, result) -> "tuple[bool, int]":
    """(whether waiver ``w``'s pattern, if it has one, holds every failure of ``result``
    (RequirementResult), how many of them it holds): from its diagnosis."""
    if "pattern" not in w:
        return True, result.failed
    d = next((d for d in result.diagnosis or () if d.key == w["pattern"]), None)
    if d is None:
        return False, 0
    return d.failed == d.of, d.failed


def apply_waivers(report: Report, waivers: list[dict]) -> Report:
    """A finished report (read back, ``reports.write.load_report``) with ``waivers`` applied
    (:func:`waive`), its statuses and verdicts following (``certify(waivers=...)`` applies them
    as it certifies): a new report; the one given is left as it was."""
    runs, used = waive(report.runs, waivers)
    return replace(report, runs=runs, waivers=used)


def waive(runs: list, waivers: list[dict]) -> tuple:
    """``runs`` (RunResult each) with the waivers that cover their failures given to them: new
    results (a result is never changed once built), each RequirementResult or FamilyResult a
    waiver covers built with its reason, a requirement a narrower waiver names with how far that
    reaches (``waiver_partial``); their statuses, and the verdicts, follow
    (results.RequirementResult.status). (The new runs, each waiver with its use.)"""
    used, failures = [0] * len(waivers), [0] * len(waivers)

    def waived(run, result):
        partial = result.waiver_partial

        def cover(failed: int, families) -> str:
            """The reason of the first waiver that covers ``failed`` failures of ``result`` in
            ``families`` ("" where none does)."""
            nonlocal partial
            for k, w in enumerate(waivers):
                if _covers(w, run, result.id, families):
                    whole, held = _pattern_holds(w, result)
                    if not whole:  # narrower than the failures: they still fail; say how far it reaches
                        partial = f"{w['reason']}: pattern {w['pattern']} " + (
                            f"holds {held:,} of its {result.failed:,} failures; the others still fail" if held
                            else "is not among the patterns its failures share (it holds under half of them, or "
                                 "none): they still fail")
                        continue
                    used[k] += 1
                    failures[k] += failed
                    return w["reason"]
            return ""

        if result.status != "fail":
            return result
        if any(f.status == "fail" for f in result.families):  # judged per family: waive family by family
            families = [replace(f, waiver=cover(f.failed, [f.family]) or f.waiver) if f.status == "fail" else f
                        for f in result.families]
            return replace(result, families=tuple(families), waiver_partial=partial)
        reason = cover(result.failed, list(by_id(result.id).families))
        return replace(result, waiver=reason or result.waiver, waiver_partial=partial)

    out = [replace(run, requirements=[waived(run, r) for r in run.requirements]) for run in runs]
    return out, [{**w, "matched": n, "failures": f} for w, n, f in zip(waivers, used, failures)]
