"""The self-test: every member of the zoo built with the user's toolchain, certified through the
user's path (``ctypes:`` for host builds, ``sim:`` with their simulator or board script), and
the kill matrix that says whether each defect was caught and each honest member passed.

A defect is caught when its certification fails and the requirement it was written for is among
the failing ones; an honest member is right when its certification passes. Anything else is a
broken link in the pipeline (the compiler, the harness, the board script, the suite) and is
named. Members run in a process pool, one certification each.
"""

from __future__ import annotations

import os
import shlex
import time
from concurrent.futures import as_completed
from dataclasses import dataclass
from pathlib import Path

from sl1conf.conformance.common.errors import SuiteError
from sl1conf.conformance.selftest.zoo import Member, build_harness, build_library, members

__all__ = ["Target", "SelftestError", "SCHEMA_VERSION", "PLACEHOLDERS", "select", "check_target", "member_session",
           "run_selftest", "judge_member", "broken_lines"]

SCHEMA_VERSION = 1
PLACEHOLDERS = ("{harness}", "{case}", "{result}")
"""What a ``--sim`` template must contain: the harness the self-test built for the member, and the
simulator protocol's two files (docs/simulator-protocol.md)."""


class SelftestError(SuiteError):
    """Bad input to the self-test (a template, a member name): one line, exit 2."""


@dataclass(frozen=True)
class Target:
    """Where the zoo runs: built by ``cc`` with ``cflags``; through ``ctypes:`` when ``sim`` is
    empty, else through ``sim:`` with ``sim`` (a template with :data:`PLACEHOLDERS`).
    ``timeout``: seconds a call may take before it counts as a hang."""

    cc: "str | None" = None
    cflags: tuple = ()
    sim: str = ""
    timeout: float = 5.0

    @property
    def kind(self) -> str:
        return "sim" if self.sim else "host"

    def spec(self, built: Path) -> str:
        """The implementation's name for the member built at ``built`` (a library or a harness)."""
        if not self.sim:
            return f"ctypes:{built}?timeout={self.timeout:g}"
        options, template = "", self.sim.strip()
        if template.startswith("[") and "]" in template:
            options, template = template[1:template.index("]")], template[template.index("]") + 1:].strip()
        if "timeout=" not in options:
            options = ",".join(o for o in (options, f"timeout={self.timeout:g}") if o)
        return f"sim:[{options}] " + template.replace("{harness}", shlex.quote(str(built)))


def select(only=None, path=None) -> list:
    """The zoo's members, or those named in ``only`` (every name must exist)."""
    table = members(path)
    if not only:
        return table
    names = {m.name for m in table}
    unknown = [n for n in only if n not in names]
    if unknown:
        raise SelftestError(f"--only: no member {', '.join(unknown)} in the zoo (members: {', '.join(sorted(names))})")
    return [m for m in table if m.name in set(only)]


def check_target(target: Target, build_dir: Path, zoo: list) -> None:
    """Bad input before anything long runs: a compiler that cannot build the first member, a
    template without its placeholders or whose program cannot start. Raises SelftestError, the
    adapters' AdapterError (a build) or the session's InputError (the first member's session:
    its platform, its build loaded), each one line, exit 2."""
    from sl1conf.adapters.cbuild import find_compiler

    find_compiler(target.cc)
    if target.sim:
        missing = [p for p in PLACEHOLDERS if p not in target.sim]
        if missing:
            raise SelftestError(f"--sim {target.sim!r}: the template must contain {', '.join(PLACEHOLDERS)} "
                                f"(missing: {', '.join(missing)}), e.g. \"qemu-aarch64 {{harness}} {{case}} {{result}}\"")
    first = next((m for m in zoo if not (target.sim and m.host_only)), None)
    if first is not None:
        with member_session(first, target.spec(_build(first, target, build_dir))).implementation:
            pass


def member_session(member: Member, spec: str):
    """The member's session, opened as every command opens one (``certify.session.open_session``:
    one profile loader, one wording of a problem): the platform its zoo.toml row names, and the
    implementation ``spec`` (its build); each problem one line naming the member's row."""
    from sl1conf.conformance.certify.session import open_session

    return open_session(member.platform, impl=spec, option=lambda name: f"zoo.toml member {member.name}: {name}")


def _build(member: Member, target: Target, build_dir: Path) -> Path:
    """The member built for the target: the harness linked with it for sim:, else a shared library."""
    build = build_harness if target.sim else build_library
    return build(member, build_dir, cc=target.cc, cflags=target.cflags)


def _certify_member(member: Member, target: Target, build_dir: str, quick: bool) -> dict:
    """One member's row of the matrix: built, certified on its profile, judged (in a pool worker)."""
    from sl1conf.adapters import AdapterError
    from sl1conf.conformance.certify.engine import certify

    started = time.perf_counter()
    row = {"name": member.name, "kind": member.kind, "meant_for": member.meant_for or None,
           "platform": member.platform, "dtype": member.dtype, "variants": list(member.variants),
           "what": member.what, "verdict": None, "failed": [], "problem": None, "skipped": None}
    if target.sim and member.host_only:
        row["skipped"] = f"host only: {member.host_only}"
        row.update(judge_member(row), seconds=0.0)
        return row
    try:
        built = _build(member, target, Path(build_dir))
        session = member_session(member, target.spec(built))
        with session.implementation as adapter:
            report = certify(adapter, session.profile, dtypes=[member.dtype],
                             variants=list(member.variants), quick=quick)
        row["verdict"] = report.verdict
        row["failed"] = sorted({r.id for run in report.runs for r in run.requirements if r.status == "fail"})
    except (AdapterError, SuiteError, OSError) as exc:
        row["problem"] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    row.update(judge_member(row), seconds=round(time.perf_counter() - started, 2))
    return row


def judge_member(row: dict) -> dict:
    """``{"status": ok|broken|skipped, "why": ...}`` of a row: a defect is caught when its
    verdict is fail and the requirement meant for it failed; an honest member must pass."""
    if row["skipped"]:
        return {"status": "skipped", "why": row["skipped"]}
    name, verdict, failed = row["name"], row["verdict"], row["failed"]
    if row["problem"]:
        return {"status": "broken", "why": f"{row['kind']} {name} did not run: {row['problem']}"}
    if row["kind"] == "defect":
        if verdict == "fail" and row["meant_for"] in failed:
            return {"status": "ok", "why": f"caught by {', '.join(failed)}"}
        by = f" (failed only {', '.join(failed)})" if failed else ""
        return {"status": "broken", "why": f"defect {name} (meant for {row['meant_for']}) was not caught: "
                                           f"verdict {verdict}{by}"}
    if verdict == "pass":
        return {"status": "ok", "why": "passed"}
    return {"status": "broken", "why": f"honest {name} " + (f"failed {', '.join(failed)}" if failed else
                                                             f"did not pass: verdict {verdict}")}


def run_selftest(target: Target, zoo: list, build_dir: Path, *, quick: bool = False, workers: "int | None" = None,
                 progress=None) -> dict:
    """The self-test's document (conformance/schemas/selftest.schema.json): one row per member,
    in the zoo's order. ``progress(row, done, total)`` is called as each member finishes."""
    from datetime import datetime, timezone

    from sl1conf import __version__
    from sl1conf.adapters.cbuild import compiler_identity, find_compiler

    check_target(target, build_dir, zoo)
    started, clock = datetime.now(timezone.utc), time.perf_counter()
    workers = max(1, min(workers or os.cpu_count() or 1, len(zoo) or 1))
    rows: dict = {}
    if workers == 1:
        for m in zoo:
            rows[m.name] = _certify_member(m, target, str(build_dir), quick)
            if progress:
                progress(rows[m.name], len(rows), len(zoo))
    else:
        from sl1conf.conformance.common.pool import process_pool

        with process_pool(workers) as pool:  # Ctrl-C ends the workers at once, as fuzz's and sweep's
            futures = [pool.submit(_certify_member, m, target, str(build_dir), quick) for m in zoo]
            for future in as_completed(futures):
                row = future.result()
                rows[row["name"]] = row
                if progress:
                    progress(row, len(rows), len(zoo))
    ordered = [rows[m.name] for m in zoo]
    compiler = find_compiler(target.cc)
    return {
        "schema_version": SCHEMA_VERSION,
        "sl1conf_version": __version__,
        "started": started.isoformat(timespec="seconds"),
        "seconds": round(time.perf_counter() - clock, 1),
        "quick": quick,
        "workers": workers,
        "target": {"kind": target.kind, "cc": shlex.join(compiler),
                   "compiler": (compiler_identity(tuple(compiler)).split("\n", 3)[3].splitlines() or ["?"])[0],
                   "cflags": list(target.cflags), "sim": target.sim or None, "timeout": target.timeout},
        "ok": all(r["status"] != "broken" for r in ordered),
        "members": ordered,
    }


def broken_lines(doc: dict) -> list:
    """One line per broken member, naming it and what went wrong."""
    return [r["why"] for r in doc["members"] if r["status"] == "broken"]

