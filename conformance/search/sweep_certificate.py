"""A sweep's certificate: what an exhaustive sweep (one plane or a volume of dy planes) proved,
in a file people can cite (OUT/certificate.json, schemas/sweep-certificate.schema.json, and
OUT/certificate.md to read).

Why apart from the state: sweep.json is a checkpoint, shaped for resuming and merging; a
certificate is the claim, shaped for a reader: which implementation (with the SHA-256 of its
library file), which profile, beta, dy set and subset, how many elements were checked, accepted
by each of the judge's reasons and rejected (the worst, the first few, a vector set of them),
and how much is missing. An unfinished sweep writes one too, and it says what is missing and
claims nothing it did not check: its result is ``incomplete`` (or ``fail`` once an element is
rejected). Everything but ``run`` (the time, the sessions) is a function of the blocks done, so
shards merged, a resumed run and a run on a cluster give the same certificate as one run.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from pathlib import Path

from sl1conf.conformance.common import jsonfiles
from sl1conf.conformance.common.files import write_atomic
from sl1conf.conformance.search.sweep_config import SweepError
from sl1conf.conformance.search.sweep_verdict import elapsed

__all__ = ["CERTIFICATE_FILE", "CERTIFICATE_MD", "SCHEMA_VERSION", "certificate", "write_certificate", "resume_command",
           "load_certificate", "render_markdown", "library_identity", "render_folder", "INDEX_HEADER", "index_row",
           "index_lines"]

CERTIFICATE_FILE = "certificate.json"
CERTIFICATE_MD = "certificate.md"
SCHEMA = "sweep-certificate.schema.json"
SCHEMA_VERSION = 1
"""1: the first certificate (issue 38)."""
FIRST = 8
"""Rejected elements the certificate lists (the first by their number in the volume)."""


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def library_identity(spec: str) -> "dict | None":
    """The file an implementation spec names, with its size and SHA-256: a ``ctypes:`` library, a
    ``python:`` file; None for a built-in or a spec that names no file here."""
    prefix, _, rest = spec.partition(":")
    path = None
    if prefix == "ctypes":
        path = Path(rest)
    elif prefix == "python" and ":" in rest:
        path = Path(rest.rpartition(":")[0])
    if path is None or not path.is_file():
        return None
    return {"path": str(path), "bytes": path.stat().st_size, "sha256": _sha256(path)}


def _profile(platform: str) -> dict:
    """The profile by name, and a profile file's SHA-256 (a file can change under the same name)."""
    path = Path(platform)
    out = {"name": platform}
    if path.suffix == ".toml" and path.is_file():
        out["sha256"] = _sha256(path)
    return out


def _coverage(state: dict) -> dict:
    """How much of the sweep was checked, and what is missing (never more than the blocks done)."""
    tally = state["tally"]
    elements = state["pairs"] * state["planes"]
    from sl1conf.conformance.search.sweep_planes import Planes

    done = state["done"]
    planes = Planes.of_state(state).planes_complete(done)
    return {"planes": state["planes"], "planes_complete": planes, "pairs_per_plane": state["pairs"],
            "elements": elements, "elements_done": tally.elements, "elements_missing": elements - tally.elements,
            "elements_checked": tally.elements - tally.failed - tally.refused_elements,
            "elements_without_result": tally.failed, "elements_refused": tally.refused_elements,
            "blocks": state["blocks"], "blocks_done": len(done), "complete": bool(state["complete"])}


def _rejected(state: dict, verdict: dict, vectors: "str | None") -> dict:
    tally = state["tally"]
    first = [e.to_json(internal=True) for e in tally.rejections[:FIRST]]
    return {"elements": verdict["rejected"], "worst": verdict["example"], "first": first,
            "by_requirement": {rid: r["elements"] for rid, r in verdict["requirements"].items()},
            "kept": len(tally.rejections), "vectors": vectors,
            "calls_failing": sum(r["calls"] for r in verdict["call_failures"].values())}


def certificate(state: dict, *, vectors: "str | None" = None, written: "str | None" = None) -> dict:
    """The certificate of ``state`` (with its ``summary``, as ``sweep_verdict.finish`` gives it):
    ``vectors`` the folder of its rejections' vector set (None when there are none)."""
    from sl1conf import __version__

    c, verdict = state["config"], state["summary"]["verdict"]
    coverage = _coverage(state)
    failed = verdict["rejected"] or verdict["failed_elements"] or verdict["call_failures"]
    result = ("fail" if failed or (coverage["complete"] and not verdict["pass"]) else
              "pass" if coverage["complete"] else "incomplete")
    return {
        "schema": "sl1conf-sweep-certificate", "schema_version": SCHEMA_VERSION,
        "suite": {"name": "sl1conf", "version": __version__},
        "implementation": {"spec": c["impl"], "adapter": state["adapter"].get("adapter", ""),
                           "library": library_identity(c["impl"])},
        "profile": {**_profile(c["platform"]), "budget_ulp": verdict["budget_ulp"]},
        "dtype": "fp16", "variant": c["variant"], "beta": c["beta"], "dy": c["dy"], "subset": c["subset"],
        "block_elements": c["block_elements"],
        "coverage": coverage,
        "accepted": {r: n for r, n in verdict["reasons"].items() if r != "rejected"},
        "beyond_budget": verdict["beyond_budget"],
        "rejected": _rejected(state, verdict, vectors),
        "rounding_bias_findings": list((verdict.get("rounding_bias") or {}).get("findings", [])),
        "result": result, "statement": _statement(result, c, coverage, verdict),
        "run": {"seconds": round(elapsed(state), 2), "sessions": len(state["sessions"]),
                "shards": list(state.get("shards") or []),  # how it was run: merged shards certify as one run
                "written": written or datetime.now(timezone.utc).isoformat(timespec="seconds")},
    }


def _statement(result: str, c: dict, coverage: dict, verdict: dict) -> str:
    """The claim in one sentence: what was checked, and nothing more."""
    what = (f"{coverage['elements_checked']:,} fp16 elements (beta {c['beta']}, dy {c['dy']}, subset {c['subset']}, "
            f"variant {c['variant']}) of {c['impl']}")
    if result == "pass":
        return (f"Every one of the {what} was accepted under the {verdict['platform']} profile: each is the correctly "
                "rounded result or accepted for the reason counted here.")
    if result == "incomplete":
        return (f"No claim: {coverage['elements_missing']:,} of {coverage['elements']:,} elements are not checked yet; "
                f"of the {what} checked so far none was rejected.")
    return (f"Not conformant under the {verdict['platform']} profile: {verdict['rejected']:,} elements rejected"
            + (f", {verdict['failed_elements']:,} without a result" if verdict["failed_elements"] else "")
            + (" (the sweep is not complete)" if not coverage["complete"] else "") + ".")


def write_certificate(out, state: dict, *, vectors: "str | None" = None) -> dict:
    """Write OUT/certificate.json (checked against its schema: a mismatch is a bug) and
    OUT/certificate.md, each atomically; the certificate."""
    cert = certificate(state, vectors=vectors)
    jsonfiles.validate(cert, SCHEMA, RuntimeError, f"the certificate for {out}")
    try:
        write_atomic(Path(out) / CERTIFICATE_FILE, [json.dumps(cert, indent=1), "\n"])
        write_atomic(Path(out) / CERTIFICATE_MD, render_markdown(cert))
    except OSError as exc:
        raise SweepError(f"{Path(out)}: cannot write there ({exc.strerror or exc})") from None
    return cert


def load_certificate(folder) -> "dict | None":
    """FOLDER/certificate.json checked against its schema (None when there is none); SweepError,
    one line, when it is not one."""
    path = Path(folder) / CERTIFICATE_FILE
    if not path.exists():
        return None
    try:
        cert = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise SweepError(f"{path} is not a readable certificate ({type(exc).__name__})") from None
    jsonfiles.validate(cert, SCHEMA, SweepError, str(path))
    return cert


def _element(e: dict) -> str:
    return (f"dy {e['dy']}, x1 {e['x1']}, x2 {e['x2']}: expected {e['expected']}, got {e['got']} "
            f"({e['ulp']}{' ULP' if isinstance(e['ulp'], int) else ''})")


def resume_command(cert: dict) -> str:
    """The command that continues the sweep of ``cert`` (without its ``--out``): the options that
    identify a sweep (``sweep_config``), as a shell reads them."""
    import shlex

    shards = cert["run"].get("shards") or []
    shard = ["--shard", shards[0]] if len(shards) == 1 and shards[0] != "1/1" else []  # a shard's folder: its blocks only
    return " ".join(["sl1conf sweep", "--impl", shlex.quote(cert["implementation"]["spec"]), "--beta", cert["beta"],
                     "--dy", shlex.quote(cert["dy"]), "--subset", shlex.quote(cert["subset"]), "--variant",
                     cert["variant"], "--platform", shlex.quote(cert["profile"]["name"]), *shard])


def render_markdown(cert: dict) -> str:
    """certificate.md: the certificate for a reader (what ``sl1conf report DIR`` prints for a sweep)."""
    cov, rej, impl = cert["coverage"], cert["rejected"], cert["implementation"]
    lib = impl["library"]
    lines = [f"# Sweep certificate: {cert['result'].upper()}", "", cert["statement"], "",
             "| | |", "|---|---|",
             f"| implementation | `{impl['spec']}` ({impl['adapter']})" + (f", SHA-256 `{lib['sha256']}`" if lib else "")
             + " |",
             f"| profile | {cert['profile']['name']} (fp16 budget {cert['profile']['budget_ulp']} ULP) |",
             f"| beta, dy, subset, variant | {cert['beta']}, {cert['dy']}, {cert['subset']}, {cert['variant']} |",
             f"| planes | {cov['planes_complete']:,} of {cov['planes']:,} complete |",
             f"| elements | {cov['elements_done']:,} of {cov['elements']:,} done, {cov['elements_checked']:,} checked, "
             f"{cov['elements_missing']:,} missing |",
             f"| suite | sl1conf {cert['suite']['version']}, certificate schema {cert['schema_version']} |",
             f"| time | {cert['run']['seconds']:,} s over {cert['run']['sessions']} session(s), "
             f"written {cert['run']['written']} |", "",
             "## By the judge's reason", "", "| reason | elements |", "|---|---|"]
    lines += [f"| {r} | {n:,} |" for r, n in cert["accepted"].items()]
    lines += [f"| rejected | {rej['elements']:,} |", ""]
    if rej["elements"]:
        lines += ["## Rejected", "", f"Worst: {_element(rej['worst'])}." if rej["worst"] else "", ""]
        lines += [f"- {_element(e)}" for e in rej["first"]]
        if rej["vectors"]:
            lines += ["", f"The first {rej['kept']} are the vector set `{rej['vectors']}`: "
                      f"`sl1conf certify --impl {impl['spec']} --vectors {rej['vectors']}`, or "
                      f"`sl1conf fuzz replay {rej['vectors']}` (each element judged again, every failure named)."]
        elif rej["kept"] == 0:
            lines += ["", "No rejected element was kept whole (blocks counted by an older sl1conf)."]
    if not cov["complete"]:
        lines += ["", f"**Incomplete**: {cov['blocks'] - cov['blocks_done']:,} of {cov['blocks']:,} blocks "
                  "not done. The same sweep, run again on its folder, does the rest and nothing twice:", "",
                  f"    {resume_command(cert)} --out DIR", "",
                  "(DIR: this certificate's folder, holding its sweep.json. Add `--scheduler ADDRESS` to run the "
                  "blocks on a Dask cluster, or `--shard I/N` on N machines and `sl1conf sweep merge`; "
                  "docs/sweeps.md.)"]
    return "\n".join(lines) + "\n"


def render_folder(folder) -> "Path | None":
    """``sl1conf report DIR`` for a sweep's folder: certificate.md written again from
    certificate.json alone (checked against its schema); its path, or None when DIR holds none."""
    cert = load_certificate(folder)
    if cert is None:
        return None
    path = Path(folder) / CERTIFICATE_MD
    try:
        write_atomic(path, render_markdown(cert))
    except OSError as exc:
        raise SweepError(f"{Path(folder)}: cannot write there ({exc.strerror or exc})") from None
    return path


INDEX_HEADER = ("| `--impl` | platform | beta | dy | subset | variant | result | elements checked of all | rejected "
                "| certificate |",
                "|---|---|---|---|---|---|---|---|---|---|")
"""The reports index's table of sweep certificates (quickstart's reports/README.md), beside certifications."""


def index_row(cert: dict, link: str) -> str:
    """One certificate's row under :data:`INDEX_HEADER`; ``link``: its folder, relative to the index."""
    cov, impl = cert["coverage"], cert["implementation"]
    return (f"| `{impl['spec']}` | {cert['profile']['name']} | {cert['beta']} | `{cert['dy']}` | `{cert['subset']}` | "
            f"{cert['variant']} | **{cert['result'].upper()}** | {cov['elements_checked']:,} of {cov['elements']:,} | "
            f"{cert['rejected']['elements']:,} | [md]({link}/{CERTIFICATE_MD}) · [json]({link}/{CERTIFICATE_FILE}) |")


def index_lines(folder) -> list:
    """The table of every certificate under ``folder`` (FOLDER/**/certificate.json, by path; each
    checked against its schema), its links relative to ``folder``: :data:`INDEX_HEADER` and a row
    each (``sl1conf sweep index``, for quickstart's reports/README.md); empty when there is none."""
    root = Path(folder)
    found = sorted(p.parent for p in root.rglob(CERTIFICATE_FILE) if p.is_file())
    rows = [index_row(load_certificate(d), d.relative_to(root).as_posix() or ".") for d in found]
    return [*INDEX_HEADER, *rows] if rows else []
