"""Waivers: known failures a team has decided to ship with, each with a reason.

A waiver file is TOML::

    [[waiver]]
    id = "R05"                       # a requirement id (docs/requirements.md)
    families = ["signed-zero"]       # optional: only failures in these families (R01 is per family)
    dtypes = ["fp16"]                # optional
    variants = ["s"]                 # optional
    reason = "the board's libm returns +0 for -0 results; tracked as BUG-123"

A failure a waiver covers is reported as ``waived`` (with the reason) and no longer fails
the verdict; a waiver that matches no failure is reported too, so stale ones get removed.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from sl1conf.conformance.common.errors import SuiteError
from sl1conf.conformance.rules.catalog import CATALOG, by_id, report_verdict, run_verdict

__all__ = ["WaiverError", "load_waivers", "apply_waivers"]


class WaiverError(SuiteError):
    """An unusable waiver file: one line naming the file and the problem."""


def load_waivers(path) -> list[dict]:
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text())
    except OSError as exc:
        raise WaiverError(f"{p}: cannot read ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise WaiverError(f"{p}: not valid TOML ({exc})") from None
    known = {r.id for r in CATALOG}
    waivers = data.get("waiver", [])
    if not isinstance(waivers, list) or set(data) - {"waiver"}:
        raise WaiverError(f"{p}: expected [[waiver]] tables only")
    for k, w in enumerate(waivers, 1):
        if not isinstance(w, dict) or set(w) - {"id", "families", "dtypes", "variants", "reason"}:
            raise WaiverError(f"{p}: waiver {k}: keys are id, families, dtypes, variants, reason")
        if w.get("id") not in known:
            raise WaiverError(f"{p}: waiver {k}: unknown requirement id {w.get('id')!r}")
        if not str(w.get("reason", "")).strip():
            raise WaiverError(f"{p}: waiver {k} ({w['id']}): a reason is required")
        for key in ("families", "dtypes", "variants"):
            if key in w and not (isinstance(w[key], list) and all(isinstance(x, str) for x in w[key])):
                raise WaiverError(f"{p}: waiver {k} ({w['id']}): {key} must be a list of names")
    return waivers


def _covers(w: dict, run: dict, rid: str, families: "list | None") -> bool:
    """Whether waiver ``w`` covers a failure of ``rid`` in ``run`` within ``families``."""
    return (w["id"] == rid and run["dtype"] in w.get("dtypes", [run["dtype"]])
            and run["variant"] in w.get("variants", [run["variant"]])
            and ("families" not in w or bool(set(w["families"]) & set(families or ()))))


def apply_waivers(report: dict, waivers: list[dict]) -> dict:
    """Mark covered failures waived, recompute the verdicts, list each waiver's use."""
    used = [0] * len(waivers)

    def waive(target: dict, run: dict, rid: str, families) -> None:
        for k, w in enumerate(waivers):
            if _covers(w, run, rid, families):
                target["status"], target["waiver"] = "waived", w["reason"]
                used[k] += 1
                return

    for run in report["runs"]:
        for entry in run["requirements"]:
            if entry["status"] != "fail":
                continue
            per_family = [f for f in entry.get("families", []) if f["status"] == "fail"]
            if per_family:  # R01 is judged per family: waive family by family
                for f in per_family:
                    waive(f, run, entry["id"], [f["family"]])
                if all(f["status"] != "fail" for f in entry["families"]):
                    entry["status"] = "waived"
            else:
                waive(entry, run, entry["id"], list(by_id(entry["id"]).families))
        run["verdict"] = run_verdict(run["requirements"], run.get("incomplete", ()))
    report["verdict"] = report_verdict(report["runs"], report.get("missing_runs", ()))
    report["waivers"] = [{**w, "matched": n} for w, n in zip(waivers, used)]
    return report
