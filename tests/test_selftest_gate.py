"""The exported self-test's verdict is the suite's (issue 36): it can be a gate.

1. The record the header carries per element (rules.acceptance, through
   ``export.set_acceptance``) holds exactly what ``judge(...).ok`` accepts: on the quick
   families of fp32 and fp16 under ieee, ft78ne and mt7004, every written element is judged
   by the judge itself (call by call, each case with its own alternatives, as certify judges)
   at dense points around everything the record says: lo - 1, lo, hi, hi + 1 of every
   interval in bits, the correctly rounded result and its neighbours past the budget, both
   zeros, NaNs, the infinities, the largest finite values, the fill, dy and -dy, the
   alternatives, the flush-to-zero column, the evaluation models' bits and random patterns;
   the record must say the same (unwritten elements: the fill only).
2. For every member of the self-test zoo (conformance/selftest/zoo/zoo.toml, each built as
   selftest/zoo.py builds it, on its own profile and dtype), the exported program (the quick
   set, exported with the member's ``--platform``, built with -DSL1_DUMP) prints per family
   the verdict ``sl1conf certify --results`` gives of the same printed results: on the host,
   and built with aarch64-linux-gnu-gcc and run under qemu-aarch64. A member that crashes or
   hangs stops the output: every family it printed a line for agrees, and certify passes none
   of the families it did not reach.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from sl1conf.adapters import sample as S
from sl1conf.adapters.base import fill_bits
from sl1conf.conformance.cli import main
from sl1conf.conformance.rules import acceptance as A
from sl1conf.conformance.rules.judge import Expected, judge
from sl1conf.conformance.rules.profiles import load_profile
from sl1conf.conformance.selftest import zoo
from sl1conf.conformance.vectors import export as E
from sl1conf.conformance.vectors import store as V
from sl1conf.reference import formats as F
from sl1conf.reference.models import accepted_models

SEED = 2026
PROFILED = [("fp32", "ieee"), ("fp32", "ft78ne"), ("fp32", "mt7004"), ("fp16", "ieee"), ("fp16", "mt7004")]
QEMU_TOOLS = ("aarch64-linux-gnu-gcc", "qemu-aarch64")
RUN_TIMEOUT = 10  # seconds: every member but the one that hangs ends in well under one


class Board:
    """The quick vector sets, their exports per (platform, dtype) and the self-test's objects
    per target, each made once for the module."""

    def __init__(self, root: Path):
        self.root = root
        self.made: dict = {}

    def _once(self, key, make):
        if key not in self.made:
            self.made[key] = make()
        return self.made[key]

    def vectors(self, dtype: str) -> Path:
        from sl1conf.conformance.certify.engine import quick_families
        from sl1conf.conformance.vectors.families import generate

        return self._once(("set", dtype), lambda: V.write(self.root / f"set-{dtype}", dtype,
                                                          generate(dtype, SEED, list(quick_families())), seed=SEED))

    def export(self, platform: str, dtype: str) -> Path:
        def make():
            out = self.root / f"board-{platform}-{dtype}"
            assert main(["vectors", "export", str(self.vectors(dtype)), "--format", "c-header", "--platform",
                         platform, "--out", str(out)]) == 0
            return out
        return self._once(("export", platform, dtype), make)

    def program(self, member, target: str) -> Path:
        """The self-test linked with the member's library, both built for ``target``."""
        cc = ["aarch64-linux-gnu-gcc"] if target == "qemu" else ["cc"]
        board = self.export(member.platform, member.dtype)
        nohalf = ["-DSL1_NO_HALF"] if member.dtype == "fp32" else []
        obj = self._once(("obj", board, target), lambda: _compile(cc, board, nohalf, target))
        lib = zoo.build_library(member, self.root / f"lib-{target}", cc=cc)
        prog = self.root / f"selftest-{member.name}-{target}"
        subprocess.run([*cc, str(obj), str(lib), f"-Wl,-rpath,{lib.parent}", *member.flags, "-lm", "-o", str(prog)],
                       check=True, capture_output=True, text=True)
        return prog


def _compile(cc, board: Path, flags, target: str) -> Path:
    obj = board / f"selftest-{target}.o"
    subprocess.run([*cc, "-std=c11", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-O1", "-DSL1_DUMP", *flags,
                    f"-I{S.sources_dir()}", "-c", str(board / E.SELFTEST_NAME), "-o", str(obj)],
                   check=True, capture_output=True, text=True)
    return obj


@pytest.fixture(scope="module")
def board(tmp_path_factory) -> Board:
    return Board(tmp_path_factory.mktemp("gate"))


# ---- 1. the record is the judge's set ----------------------------------------------------------

def _candidates(fmt: F.Format, acc: A.Accepted, vs: V.VectorSet, lo: int, hi: int, budget: int) -> tuple:
    """(element, bits) pairs: the dense points around what elements lo..hi-1 accept, and others."""
    idx = np.arange(lo, hi)
    top = fmt.exp_mask
    key = lambda bits: F.ordered(fmt, bits)  # noqa: E731
    bits = lambda k: np.where(k < 0, fmt.sign_mask | -np.asarray(k), k).astype(fmt.uint)  # noqa: E731
    at, got = [], []

    def add(where, values):
        at.append(np.asarray(where))
        got.append(np.asarray(values).astype(fmt.uint))
    for end in (acc.lo[lo:hi], acc.hi[lo:hi]):
        for step in (-1, 0, 1):
            add(idx, bits(np.clip(key(end) + step, -top, top)))
    mine = (acc.extra_at >= lo) & (acc.extra_at < hi)
    for end in (acc.extra_lo[mine], acc.extra_hi[mine]):
        for step in (-1, 0, 1):
            add(acc.extra_at[mine], bits(np.clip(key(end) + step, -top, top)))
    oracle = vs.arrays["expected-oracle"][lo:hi]
    for step in range(-budget - 2, budget + 3):
        add(idx, bits(np.clip(key(oracle) + step, -top, top)))
    specials = (0, fmt.sign_mask, fmt.qnan_bits, fmt.exp_mask | 1, fmt.qnan_bits | fmt.sign_mask, fmt.exp_mask,
                fmt.exp_mask | fmt.sign_mask, fmt.exp_mask - 1, (fmt.exp_mask - 1) | fmt.sign_mask, 1,
                fmt.sign_mask | 1, fill_bits(fmt))
    for b in specials:
        add(idx, np.full(idx.size, b))
    dy = vs.arrays["dy"][lo:hi]
    add(idx, dy)
    add(idx, dy ^ np.array(fmt.sign_mask, fmt.uint))
    add(idx, vs.arrays["expected-oracle-ftz"][lo:hi])
    for m in accepted_models(fmt):
        add(idx, vs.arrays[f"expected-model-{m.name}"][lo:hi])
    add(idx, np.random.default_rng(lo).integers(0, 1 << fmt.bits, idx.size))
    return np.concatenate(at), np.concatenate(got)


@pytest.mark.parametrize("dtype, platform", PROFILED)
def test_the_record_holds_exactly_what_the_judge_accepts(dtype, platform, board):
    """Every written element at dense points: judge(...).ok (call by call, the case's own
    alternatives) equals the record's ``contains``; an unwritten element's record is the fill."""
    vs = V.load(board.vectors(dtype))
    fmt, profile = vs.format, load_profile(platform)
    acc = E.set_acceptance(vs, profile)
    budget = profile.max_ulp[fmt.name]
    seen = {"accepted": 0, "rejected": 0, "by a further interval": 0, "boundary": 0}
    for row in vs.manifest["cases"]:
        off, written, n = row["offset"], E.written_elements(vs, row), row["n"]
        fill = np.full(n - written, fill_bits(fmt), fmt.uint)
        rest = slice(off + written, off + n)
        unwritten = A.Accepted(fmt, acc.lo[rest], acc.hi[rest], acc.flags[rest], np.zeros(0, np.int64),
                               acc.extra_lo[:0], acc.extra_hi[:0])
        assert unwritten.contains(fill).all() and not unwritten.contains(fill ^ 1).any(), row["id"]
        assert not ((acc.extra_at >= rest.start) & (acc.extra_at < rest.stop)).any(), row["id"]
        if not written:
            continue
        at, got = _candidates(fmt, acc, vs, off, off + written, budget)
        case = vs.case(row)
        pick = lambda a: np.asarray(a)[at - off]  # noqa: E731
        expected = Expected(pick(vs.arrays["expected-oracle"][off:off + written]),
                            pick(vs.arrays["expected-oracle-ftz"][off:off + written]),
                            {m.name: pick(vs.arrays[f"expected-model-{m.name}"][off:off + written])
                             for m in accepted_models(fmt)},
                            {name: pick(bits[:written]) for name, bits in case.alternatives.items()})
        with np.errstate(all="ignore"):
            ok = judge(fmt, profile, got, expected, *(pick(vs.arrays[a][off:off + written]) for a in ("dy", "x1", "x2")),
                       int(row["beta"], 16)).ok
        # the record's own answer, one element at a time (its further intervals by element)
        sel = A.Accepted(fmt, acc.lo[at], acc.hi[at], acc.flags[at], np.zeros(0, np.int64), acc.extra_lo[:0],
                         acc.extra_hi[:0])
        mine = sel.contains(got)
        k = F.ordered(fmt, got)
        number = ~F.is_nan_bits(fmt, got) & ((got & ~np.array(fmt.sign_mask, fmt.uint)) != 0)
        for e, elo, ehi in zip(acc.extra_at, F.ordered(fmt, acc.extra_lo), F.ordered(fmt, acc.extra_hi)):
            if off <= e < off + written:
                hit = (at == e) & number & (elo <= k) & (k <= ehi)
                seen["by a further interval"] += int((hit & ~mine).sum())
                mine |= hit
        bad = np.flatnonzero(mine != ok)
        assert not bad.size, (f"case {row['id']} element {at[bad[0]] - off}: got {F.hex_bits(fmt, got[bad[0]])}, judge "
                              f"{'accepts' if ok[bad[0]] else 'rejects'}, the record "
                              f"{F.hex_bits(fmt, acc.lo[at[bad[0]]])}..{F.hex_bits(fmt, acc.hi[at[bad[0]]])} flags "
                              f"{acc.flags[at[bad[0]]]} says otherwise ({bad.size} such)")
        seen["accepted"] += int(ok.sum())
        seen["rejected"] += int((~ok).sum())
        seen["boundary"] += int(((acc.flags[off:off + written] & A.BOUNDARY) != 0).sum())
    # not vacuous: both answers, elements only a further interval accepts, the boundary
    assert all(v > 0 for v in seen.values()), seen


# ---- 2. the program's verdict is certify's, for every member of the zoo ----------------------------

def _run(prog: Path, target: str) -> tuple:
    """(stdout, return code or None where it hung and was killed)."""
    argv = ["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", str(prog)] if target == "qemu" else [str(prog)]
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout or b""
        return (out.decode("ascii", "replace") if isinstance(out, bytes) else out), None
    return proc.stdout.decode("ascii", "replace"), proc.returncode


def _program_verdicts(output: str, families: dict) -> dict:
    """{family name: PASS, FAIL, or None where the output stops before its line}."""
    said = {}
    for line in output.splitlines():
        if line.startswith(("PASS ", "FAIL ")):
            said[line.split(":")[0].split()[2]] = line.split()[0]
    return {name: said.get(name) for name in families.values()}


def _report(capsys, board: Board, member, results: Path, out: Path, only=()) -> dict:
    argv = ["certify", "--results", str(results), "--platform", member.platform, "--vectors",
            str(board.vectors(member.dtype)), "--out", str(out), "--format", "md"]
    main(argv + (["--only", ",".join(only)] if only else []))
    capsys.readouterr()
    return json.loads((out / "report.json").read_text())


def _failing(report: dict, family: "str | None") -> list:
    """The requirements that fail the family in a report: R01 by its family's entry (its rounding
    bias is a statistic of a whole run, which the program does not judge), any other required one
    by its status."""
    out = set()
    for run in report["runs"]:
        for req in run["requirements"]:
            if req["id"] == "R01":
                out |= {"R01" for f in req.get("families", []) if f["family"] == family and f["status"] == "fail"}
            elif req.get("kind") == "required" and req["status"] == "fail":
                out.add(req["id"])
    return sorted(out)


def _verdict(report: dict, family: str) -> str:
    """FAIL where a requirement fails the family; NOT RUN where calls of it were not run (the
    output stops before them); else PASS."""
    if _failing(report, family):
        return "FAIL"
    if any("calls not run" in why for run in report["runs"] for why in run.get("incomplete", [])):
        return "NOT RUN"
    return "PASS"


def _certify_verdicts(capsys, board: Board, member, results: Path, families: dict) -> dict:
    """{family name: PASS, FAIL or NOT RUN}: certify --results on the whole output; where a
    requirement other than R01 fails it, or calls were not run, once more on each family's cases
    alone (--only) for what holds of that family."""
    whole = _report(capsys, board, member, results, results.parent / "whole")
    alone = [r for r in _failing(whole, None) if r != "R01"] or _verdict(whole, "") == "NOT RUN"
    vs = V.load(board.vectors(member.dtype))
    out = {}
    for fid, name in families.items():
        if "R01" in _failing(whole, name) or not alone:
            out[name] = _verdict(whole, name)
            continue
        ids = [row["id"] for row in vs.manifest["cases"] if row["family"] == fid]
        out[name] = _verdict(_report(capsys, board, member, results, results.parent / f"family-{fid}", ids), name)
    return out


_certified: dict = {}  # (platform, dtype, sha256 of the output) -> certify's verdicts: host and qemu often print the same


@pytest.mark.parametrize("target", ["host", "qemu"])
@pytest.mark.parametrize("member", zoo.members(), ids=lambda m: m.name)
def test_the_programs_verdict_per_family_is_certifys(member, target, board, capsys, tmp_path):
    if target == "qemu":
        missing = [t for t in QEMU_TOOLS if shutil.which(t) is None]
        if missing:
            message = f"{' and '.join(missing)} not found: install gcc-aarch64-linux-gnu, libc6-dev-arm64-cross, qemu-user"
            if os.environ.get("CI"):
                pytest.fail(f"CI must run the aarch64 self-test: {message}")
            pytest.skip(message)
    vs = V.load(board.vectors(member.dtype))
    families = {fam["id"]: fam["name"] for fam in vs.manifest["families"]}
    output, code = _run(board.program(member, target), target)
    program = _program_verdicts(output, families)
    results = tmp_path / "results.txt"
    results.write_text(output)
    key = (member.platform, member.dtype, hashlib.sha256(output.encode()).hexdigest())
    if key not in _certified:
        _certified[key] = _certify_verdicts(capsys, board, member, results, families)
    certified = _certified[key]
    assert all(line.startswith("# sl1_selftest ") for line in output.splitlines()[:1]), output[:200]
    reached = {name: said for name, said in program.items() if said is not None}
    assert {name: certified[name] for name in reached} == reached, (member.name, target, output[-2000:])
    assert all(certified[name] != "PASS" for name, said in program.items() if said is None), (certified, program)
    if code is not None and code >= 0:  # it ran to its end: every family said, and the exit status is the verdict
        assert None not in program.values(), output[-2000:]
        assert code == (0 if set(program.values()) == {"PASS"} else 1)
    if member.kind == "honest":  # the zoo's honest members pass everywhere
        assert set(program.values()) == {"PASS"}, [ln for ln in output.splitlines() if ln.startswith("FAIL ")]


def test_a_fail_line_says_why(board, capsys):
    """The FAIL lines of a defect name the first failing element, what is accepted there and why."""
    member = next(m for m in zoo.members() if m.name == "boundary-sign")
    output, code = _run(board.program(member, "host"), "host")
    fails = [ln for ln in output.splitlines() if ln.startswith("FAIL ")]
    assert code == 1 and fails
    assert all("; first: case " in ln and " got 0x" in ln and ", accepted " in ln for ln in fails), fails
    assert any(ln.endswith("outside lo..hi; on the boundary: no budget (exact or reachable only)") for ln in fails), fails
