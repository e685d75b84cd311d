"""What an exported self-test printed on the board, read back so certify can judge it.

Why: the self-test (``sl1_selftest.c``) judges what a C program on a target can; the rest
(the error model, rounding bias, the memory report, the open inputs) needs the suite. Built
with ``-DSL1_DUMP`` it prints every element of every call, so its output is a *results file*
that ``sl1conf certify --results FILE --vectors DIR`` judges with the one judge, as if the
suite had made the calls itself (docs/vector-format.md, "Judging the board's output").

The lines read (anything else, a login banner, the program's own PASS/FAIL lines, is
skipped; a ``\\r`` from a serial console is dropped):

    # sl1_selftest <dtype>: ...; vectors <set id>         once, first: which set, which guard
    = <case id> <i> <hex>                                  every element, i from -guard to n + guard - 1
    = <case id> end <dy,x1,x2 or ->                        the call returned; the inputs it changed
    ALL PASS | FAILED <n> families                         the program's own verdict (kept for the report)

A last result line without its line end that is not whole is what a cut transfer left: it is
left out (``SelftestResults.cut``) and the output judged as one that stops there (R13 for the
case it cuts, the cases after it not run), not refused as a damaged file.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sl1conf.conformance.common.errors import SuiteError

__all__ = ["ResultsError", "CaseResult", "SelftestResults", "read_results"]

_HEADER = re.compile(r"^# sl1_selftest (\w+): .*\bguard (\d+); vectors (\S+)\s*$")
_ELEMENT = re.compile(r"^= (\S+) (-?\d+) ([0-9a-fA-F]+)\s*$")
_END = re.compile(r"^= (\S+) end (\S+)\s*$")
_VERDICT = re.compile(r"^(ALL PASS|FAILED \d+ famil(?:y|ies))\s*$")
INPUTS = ("dy", "x1", "x2")


class ResultsError(SuiteError):
    """A results file that cannot be judged: not the self-test's output, another vector set, damaged."""


@dataclass
class CaseResult:
    """One call as the self-test saw it: dx1 (``n`` elements), the guard zones before and after
    it, and the inputs the call changed (``ended`` False: the output stops inside this case)."""

    id: str
    dx1: np.ndarray
    before: np.ndarray
    after: np.ndarray
    ended: bool
    inputs_changed: tuple = ()


@dataclass
class SelftestResults:
    """A self-test's output: its configuration line, its verdict line (None when the output
    stops before it), the guard zone's size, and one CaseResult per case it printed, in the
    order the program ran them."""

    path: Path
    sha256: str
    dtype: str
    set_id: str
    guard: int
    config: str
    verdict: "str | None"
    cases: dict = field(default_factory=dict)  # case id -> CaseResult, in run order
    cut: str = ""  # the unterminated last line left out: the output was cut mid-line (a cut transfer)

    def stopped_at(self, order: list) -> "str | None":
        """The first case id of ``order`` (the set's cases in the program's order) with no
        complete result: where the program died, hung or its output was cut; None if none."""
        return next((cid for cid in order if cid not in self.cases or not self.cases[cid].ended), None)


def _whole(line: str, digits: int) -> bool:
    """Whether an unterminated last line is one the program printed whole (the verdict, a
    result line, anything not the program's): else it is what a cut left of one."""
    if not line.startswith("="):
        return True  # skipped, or read as it is
    m = _END.match(line)
    if m:
        return m.group(2) == "-" or all(n in INPUTS for n in m.group(2).split(","))
    m = _ELEMENT.match(line)
    return bool(m) and len(m.group(3)) == digits


@dataclass
class _Printed:
    """What the result lines of an output say, before they are checked against the vector set."""

    header: "re.Match | None" = None
    verdict: "str | None" = None
    values: dict = field(default_factory=dict)  # case id -> {index: bits}
    ends: dict = field(default_factory=dict)  # case id -> the inputs the call changed
    order: list = field(default_factory=list)  # case ids, as the program ran them

    def end(self, path: Path, no: int, cid: str, changed: str) -> None:
        """A ``= <case id> end <inputs>`` line."""
        names = () if changed == "-" else tuple(changed.split(","))
        if any(n not in INPUTS for n in names):
            raise ResultsError(f"--results {path}: line {no}: unknown input in {changed!r} (expected dy, x1, x2 or -)")
        if cid in self.ends:
            raise ResultsError(f"--results {path}: line {no}: case {cid} ends twice")
        self.ends[cid] = names

    def element(self, path: Path, no: int, cid: str, index: int, bits: int) -> None:
        """A ``= <case id> <index> <hex>`` line."""
        if cid not in self.values:
            if cid in self.ends:
                raise ResultsError(f"--results {path}: line {no}: case {cid} appears again after its end")
            self.values[cid] = {}
            self.order.append(cid)
        if index in self.values[cid]:
            raise ResultsError(f"--results {path}: line {no}: case {cid} element {index} appears twice")
        self.values[cid][index] = bits


def _read_lines(path: Path, lines: list, digits: int) -> _Printed:
    """The header, verdict and result lines of an output (anything else skipped), each checked
    for its form; ResultsError at the first that is not the self-test's."""
    out = _Printed()
    for no, raw in enumerate(lines, 1):
        line = raw.rstrip("\r")
        m = _HEADER.match(line)
        if m:
            if out.header is not None:
                raise ResultsError(f"--results {path}: line {no}: a second '# sl1_selftest' line: the file holds "
                                   "more than one run of the self-test; give the output of one")
            out.header = m
            continue
        if line.startswith("# sl1_selftest "):
            raise ResultsError(f"--results {path}: line {no}: the self-test's first line names no vector set: it "
                               "was exported by an older sl1conf; export the set again and rebuild the program")
        m = _VERDICT.match(line)
        if m:
            out.verdict = m.group(1)
            continue
        if not line.startswith("= "):
            continue
        if out.header is None:
            raise ResultsError(f"--results {path}: line {no}: a result before the '# sl1_selftest' line")
        m = _END.match(line)
        if m:
            out.end(path, no, *m.groups())
            continue
        m = _ELEMENT.match(line)
        if not m or len(m.group(3)) != digits:
            raise ResultsError(f"--results {path}: line {no}: not '= <case id> <index> <{digits} hex digits>' "
                               f"nor '= <case id> end <inputs>': {line[:60]!r}")
        out.element(path, no, m.group(1), int(m.group(2)), int(m.group(3), 16))
    return out


def _case_result(path: Path, cid: str, got: dict, n: int, guard: int, fmt, ends: dict) -> CaseResult:
    """One case's printed elements as a CaseResult; ResultsError where a case that ended lacks
    an element or has one outside its guard zones."""
    ended = cid in ends
    want = range(-guard, n + guard)
    if ended and sorted(got) != list(want):
        missing = [i for i in want if i not in got]
        extra = [i for i in got if i not in set(want)]
        raise ResultsError(f"--results {path}: case {cid}: " + (
            f"element {missing[0]} missing ({len(missing)} missing)" if missing else
            f"element {extra[0]} is outside -{guard} .. {n + guard - 1}") + ": the output is damaged")
    arr = np.full(n + 2 * guard, 0, fmt.uint)
    for i, b in got.items():
        if -guard <= i < n + guard:
            arr[i + guard] = b
    return CaseResult(cid, arr[guard:guard + n], arr[:guard], arr[guard + n:], ended, ends.get(cid, ()))


def read_results(path, vs) -> SelftestResults:
    """The results file at ``path``, checked against the vector set ``vs`` it must come from
    (the same set id, every case id known, every case's element count its n plus the guard
    zones). ResultsError, one line, for anything else."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ResultsError(f"--results {path}: cannot read it ({exc.strerror or exc})") from None
    text = data.decode("ascii", errors="replace")
    fmt = vs.format
    digits = fmt.bits // 4
    lines = text.splitlines()
    cut = ""
    if lines and not text.endswith(("\n", "\r")) and not _whole(lines[-1].rstrip("\r"), digits):
        cut = lines.pop()  # a transfer cut mid-line: judged as an output that stops there (R13), not refused
    printed = _read_lines(path, lines, digits)
    header = printed.header
    if header is None:
        raise ResultsError(f"--results {path}: no '# sl1_selftest' line: not the output of the self-test that "
                           "sl1conf vectors export --format c-header writes")
    dtype, guard, set_id = header.group(1), int(header.group(2)), header.group(3)
    if dtype != fmt.name or set_id != vs.set_id:
        raise ResultsError(f"--results {path}: the self-test ran vector set {set_id}, and --vectors "
                           f"{vs.path or '(generated)'} is {vs.set_id}: judge the results against the set they "
                           "were exported from")
    if not printed.values:
        raise ResultsError(f"--results {path}: no element results ('= <case id> <index> <hex>' lines): build the "
                           "self-test with -DSL1_DUMP")
    rows = {row["id"]: row for row in vs.manifest["cases"]}
    out = SelftestResults(path, hashlib.sha256(data).hexdigest(), dtype, set_id, guard, header.group(0),
                          printed.verdict, cut=cut)
    for cid in printed.order:
        if cid not in rows:
            raise ResultsError(f"--results {path}: case {cid} is not in vector set {vs.set_id}")
        out.cases[cid] = _case_result(path, cid, printed.values[cid], rows[cid]["n"], guard, fmt, printed.ends)
    for cid in printed.ends:
        if cid not in printed.values:
            raise ResultsError(f"--results {path}: case {cid} ends without any element")
    return out
