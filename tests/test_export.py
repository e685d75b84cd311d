"""Exports of a golden vector set: the C header with its self-test program, and hex text.

- For fp16 and fp32, the exported self-test compiles cleanly (-std=c11 -Wall -Wextra
  -Wpedantic -Werror), links the sample (its source, or the shared library of
  build_library()), runs and prints ALL PASS with exit status 0; its report equals the
  one predicted here, in Python, from the results it dumps with -DSL1_DUMP: every written
  element judged by the suite's judge (rules.judge) under the header's profile, the rest
  the fill, the FAIL line's words as docs/vector-format.md gives them.
- The program judges by the header's record alone: a narrowed record fails exactly its
  element's family; the oracle it reports changes no verdict; the alternatives are accepted.
- Wrong implementations fail: one that returns dy; the sample with its write-past-end
  and clobber-input defects; a flushing one fails under ieee and passes under mt7004; one
  that loses the sign of zeros fails where the profile is strict; one ULP off fails on the
  boundary only. The old judging options (-DSL1_MAX_ULP ...) stop the build.
- The quick set costs what the header says (25 bytes per fp32 element, 13 per fp16 one, plus
  the further intervals): about 1 MB and 0.5 MB.
- The hex text has one line per element and parses back to the stored bits.
- Both exports refuse to replace existing output without force, and are deterministic.
- An empty set and a family without cases; an fp32 set builds with -DSL1_NO_HALF.
- On a target: built with aarch64-linux-gnu-gcc -static, run under qemu-aarch64 (required in CI).
- With the vector families (conformance/vectors/families/): a realistic generated set, report as predicted.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from sl1conf.adapters import sample as S
from sl1conf.adapters.base import Case
from sl1conf.conformance.rules import acceptance as A
from sl1conf.conformance.rules.judge import Expected, judge
from sl1conf.conformance.rules.profiles import load_profile
from sl1conf.conformance.vectors import export as E
from sl1conf.conformance.vectors import store as V
from sl1conf.conformance.vectors.cases import Family, VectorCase
from sl1conf.reference import exact as X
from sl1conf.reference import formats as F
from sl1conf.reference.models import accepted_models
from sl1conf.reference.models import evaluate

DTYPES = ("fp16", "fp32")
GUARD = 16  # the self-test's default SL1_GUARD
STRICT = ["-std=c11", "-Wall", "-Wextra", "-Wpedantic", "-Werror"]
LIB_FLAGS = list(S.HARNESS_FLAGS)


# ---- a small hand-made vector set ---------------------------------------------------------

def _bits(fmt: F.Format, *values) -> np.ndarray:
    return F.to_bits(fmt, np.array(values, dtype=np.float64).astype(fmt.dtype))


def _raw(fmt: F.Format, *patterns) -> np.ndarray:
    return np.array(patterns, dtype=fmt.uint)


def _case(fmt, dy, x1, x2, beta, **kw) -> VectorCase:
    """A record: the call (``kw``'s variant, core_mask, length) plus the record's own ``kw``."""
    record = {k: kw.pop(k) for k in ("flags", "result", "alternatives", "note") if k in kw}
    call = Case(fmt.name, np.asarray(dy, fmt.uint), np.asarray(x1, fmt.uint), np.asarray(x2, fmt.uint),
                int(beta) if isinstance(beta, np.integer) else int(_bits(fmt, beta)[0]), **kw)
    return VectorCase(call, **record)


def small_families(dtype: str) -> list[Family]:
    fmt = F.format_by_name(dtype)
    rng = np.random.default_rng(7)
    rnd = lambda n: _bits(fmt, *rng.uniform(-2, 2, n))  # noqa: E731
    one, half = _bits(fmt, 1.0)[0], _bits(fmt, 0.5)[0]
    zero, nzero = _raw(fmt, 0)[0], _raw(fmt, fmt.sign_mask)[0]
    inf, ninf = _bits(fmt, np.inf)[0], _bits(fmt, -np.inf)[0]
    nan = _bits(fmt, np.nan)[0]
    snan = _raw(fmt, fmt.exp_mask | 1)[0]  # a signalling NaN with payload 1
    tiny = _raw(fmt, 1)[0]  # the smallest subnormal
    min_normal = _raw(fmt, 1 << fmt.frac_bits)[0]
    sub = _raw(fmt, 1 << (fmt.frac_bits - 1))[0]  # min_normal / 2, subnormal
    arr = lambda *v: np.array(v, fmt.uint)  # noqa: E731

    plain = Family(1, "plain", "random finite values, both variants", cases=[
        _case(fmt, rnd(9), rnd(9), rnd(9), 1.0),
        _case(fmt, rnd(13), rnd(13), rnd(13), 0.5, variant="s", core_mask=0xFF),
        _case(fmt, rnd(7), rnd(7), rnd(7), 2.0, variant="s", core_mask=0x5),
    ])
    lengths = Family(2, "lengths", "length 0, negative, shorter than the arrays; core_mask 0", cases=[
        _case(fmt, arr(), arr(), arr(), 1.0),
        _case(fmt, rnd(4), rnd(4), rnd(4), 1.0, length=0),
        _case(fmt, rnd(3), rnd(3), rnd(3), 1.0, variant="s", length=-3),
        _case(fmt, rnd(5), rnd(5), rnd(5), 1.0, variant="s", core_mask=0),
        _case(fmt, rnd(6), rnd(6), rnd(6), 1.0, length=3),
        _case(fmt, rnd(19), rnd(19), rnd(19), 1.0),  # the sample's WRITE_PAST_END length
        _case(fmt, rnd(29), rnd(29), rnd(29), 1.0, variant="s", core_mask=0xFF),  # CLOBBER_INPUT
    ])
    specials = Family(3, "specials", "NaN, infinities and signed zeros", flags=("nan", "inf", "signed-zero"), cases=[
        _case(fmt,
              arr(nan, one, one, one, one, _bits(fmt, -1.0)[0], one, zero, nzero, nzero, inf, inf, snan),
              arr(one, nan, inf, one, inf, one, nzero, half, half, _bits(fmt, 3.0)[0], half, one, one),
              arr(zero, zero, one, ninf, inf, one, zero, zero, zero, zero, zero, one, snan),
              1.0, flags=("nan", "inf", "signed-zero")),
        _case(fmt, arr(_bits(fmt, -1.0)[0], one), arr(one, zero), arr(one, nzero), 1.0, variant="s", core_mask=0x3),
    ])
    subnormal = Family(4, "subnormal", "subnormal inputs and results", flags=("subnormal",), cases=[
        _case(fmt, arr(min_normal, sub, one, one, _bits(fmt, -1.0)[0]),
              arr(half, _bits(fmt, 3.0)[0], sub, tiny, zero),
              arr(zero, zero, zero, zero, tiny), 1.0, flags=("subnormal",)),
        _case(fmt, arr(one), arr(one), arr(one), tiny, flags=("subnormal-beta",)),
    ])
    # q = diff / beta underflows to 0 in the spec order, the exact result does not:
    # diff = tiny, beta = 3, dy = 3 * 2**k with the exact result 2**k * tiny.
    big = 3.0 * 2.0 ** (10 if dtype == "fp16" else 20)
    dy, x1, x2 = arr(_bits(fmt, big)[0], one), arr(tiny, one), arr(zero, half)
    three = _bits(fmt, 3.0)[0]
    spec_order = F.to_bits(fmt, evaluate(f"divmul-{dtype}", *(F.from_bits(fmt, a) for a in (dy, x1, x2)),
                                         F.from_bits(fmt, arr(three))[0]))
    beta0 = _case(fmt, arr(one, _bits(fmt, -2.0)[0]), arr(half, one), arr(half, one), 0.0,
                  result="acceptable", alternatives={"zero": arr(zero, nzero), "dy": arr(one, _bits(fmt, -2.0)[0])},
                  note="0/0 with beta 0: the manual leaves it open")
    open_ = Family(6, "open", "cases the manual leaves open, with alternatives", cases=[
        _case(fmt, dy, x1, x2, three, result="acceptable", alternatives={"spec-order": spec_order},
              note="q = diff/beta underflows in the spec order"),
        beta0,
    ])
    return [plain, lengths, specials, subnormal, open_]


@pytest.fixture(scope="module", params=DTYPES)
def vset(request, tmp_path_factory) -> V.VectorSet:
    root = tmp_path_factory.mktemp(f"set-{request.param}") / "set"
    V.write(root, request.param, small_families(request.param), seed=1)
    return V.load(root)


# ---- building and running the self-test -----------------------------------------------------

def build(cc, out_dir: Path, impl: "list[str | Path]", flags=(), name="selftest") -> Path:
    """Compile sl1_selftest.c (strict warnings) and link it with ``impl`` (sources or libraries)."""
    obj = out_dir / f"{name}.o"
    src = S.sources_dir()
    subprocess.run([*cc, *STRICT, "-O1", f"-I{src}", *flags, "-c", str(out_dir / E.SELFTEST_NAME), "-o", str(obj)],
                   check=True, capture_output=True, text=True)
    prog = out_dir / name
    rpaths = [f"-Wl,-rpath,{Path(p).parent}" for p in impl if str(p).endswith(".so")]
    proc = subprocess.run([*cc, *LIB_FLAGS, f"-I{src}", str(obj), *map(str, impl), *rpaths, "-o", str(prog)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return prog


def run(prog: Path) -> tuple[int, list[str], dict]:
    """(exit status, report lines, {case id: dx1 bits (n + GUARD)} from the SL1_DUMP lines; the
    guard zone before dx1 (negative indices) must hold the fill, and every case ends with its
    'end' line)."""
    proc = subprocess.run([str(prog)], capture_output=True, text=True, timeout=300)
    report, dumps, ended = [], {}, set()
    fill = {4: 0x5A5A, 8: 0x5A5A5A5A}
    for line in proc.stdout.splitlines():
        if line.startswith("= "):
            _, cid, i, bits = line.split()
            if i == "end":
                assert bits == "-", line  # no test implementation here changes its inputs
                ended.add(cid)
            elif int(i) < 0:
                assert int(bits, 16) == fill[len(bits)], line
            else:
                dumps.setdefault(cid, []).append((int(i), int(bits, 16)))
        elif not line.startswith("#"):
            report.append(line)
    got = {cid: np.array([b for _, b in sorted(v)], dtype=np.uint64) for cid, v in dumps.items()}
    assert ended == set(got), "a case's results without its end line"
    return proc.returncode, report, got


DEFAULT_ULP = {"fp16": 2, "fp32": 3}  # the ieee profile's: the header's defaults
WHY = {"outside": "outside lo..hi", "boundary": "outside lo..hi; on the boundary: no budget (exact or reachable only)",
       "nan expected": "NaN expected", "nan": "NaN where a number is expected", "zero sign": "a zero of the wrong sign",
       "zero": "a zero where none is accepted",
       "unwritten": "not to be written (length, core_mask, past length): must keep the fill",
       "past": "written past the case's elements: must keep the fill"}


def _accepted_words(fmt: F.Format, acc, e: int) -> str:
    """What the program says is accepted at element e, from its record (docs/vector-format.md)."""
    h = lambda b: F.hex_bits(fmt, b)  # noqa: E731
    lo, hi, flags = int(acc.lo[e]), int(acc.hi[e]), int(acc.flags[e])
    words = f"{h(lo)}..{h(hi)}" if F.ordered(fmt, np.array([lo, hi], fmt.uint)).tolist() == sorted(
        F.ordered(fmt, np.array([lo, hi], fmt.uint)).tolist()) else "no number"
    words += "".join(w for bit, w in ((A.NAN, ", NaN"), (A.PLUS_ZERO, ", +0"), (A.MINUS_ZERO, ", -0")) if flags & bit)
    more = int((acc.extra_at == e).sum())
    return words + (f", and {more} more interval{'' if more == 1 else 's'}" if more else "")


def _why(fmt: F.Format, acc, e: int, got: int, oracle: int) -> str:
    """Why the program says element e fails (the documented words, in their order)."""
    g = np.array([got], fmt.uint)
    if F.is_nan_bits(fmt, g)[0]:
        return WHY["nan"]
    if (got & ~fmt.sign_mask) == 0:
        return WHY["zero sign"] if acc.flags[e] & (A.PLUS_ZERO | A.MINUS_ZERO) else WHY["zero"]
    if F.is_nan_bits(fmt, np.array([oracle], fmt.uint))[0]:
        return WHY["nan expected"]
    return WHY["boundary"] if acc.flags[e] & A.BOUNDARY else WHY["outside"]


def predict(vs: V.VectorSet, got: dict, *, profile: str = "ieee"):
    """The report the documented rules give for these results, independent of the C code: each
    written element judged by the suite's judge (rules.judge, the case's own alternatives) under
    ``profile``, the rest must hold the fill; the FAIL line's words from the header's record."""
    fmt = vs.format
    prof = load_profile(profile)
    budget = prof.max_ulp[fmt.name]
    acc = E.set_acceptance(vs, prof)
    fill = int.from_bytes(b"\x5a" * fmt.dtype.itemsize, "little")
    width = fmt.bits // 4
    lines, failed = [], 0
    for fam in vs.manifest["families"]:
        bad, worst, beyond, first = 0, 0, 0, None
        for row in vs.case_rows(fam["id"]):
            written, off, n = E.written_elements(vs, row), row["offset"], row["n"]
            x = got[row["id"]].astype(fmt.uint)
            assert x.size == n + GUARD
            ok = x == fill
            if written:
                w = slice(off, off + written)
                oracle = vs.arrays["expected-oracle"][w]
                expected = Expected(oracle, vs.arrays["expected-oracle-ftz"][w],
                                    {m.name: vs.arrays[f"expected-model-{m.name}"][w] for m in accepted_models(fmt)},
                                    {k: v[:written] for k, v in vs.case(row).alternatives.items()})
                with np.errstate(all="ignore"):
                    ok[:written] = judge(fmt, prof, x[:written], expected, vs.arrays["dy"][w], vs.arrays["x1"][w],
                                         vs.arrays["x2"][w], int(row["beta"], 16)).ok
                d = F.ulp_distance(fmt, x[:written], oracle)
                on = X.at_boundary(fmt, vs.arrays["x1"][w], vs.arrays["x2"][w], int(row["beta"], 16))
                took = ok[:written] & (d != F.NAN_MISMATCH)
                worst = max([worst, *d[took].tolist()])
                beyond += int((ok[:written] & (d > 0) & ((d > budget) | on)).sum())
            bad += int((~ok).sum())
            if first is None and not ok.all():
                i = int(np.flatnonzero(~ok)[0])
                e = off + i
                if i >= written:
                    said = (f"accepted 0x{fill:0{width}x} only: "
                            f"{WHY['unwritten'] if i < n else WHY['past']}")
                else:
                    o = int(vs.arrays["expected-oracle"][e])
                    said = (f"correctly rounded 0x{o:0{width}x}, accepted {_accepted_words(fmt, acc, e)}: "
                            f"{_why(fmt, acc, e, int(x[i]), o)}")
                first = f"first: case {row['id']} element {i} got 0x{int(x[i]):0{width}x}, {said}"
        if not bad:
            lines.append(f"PASS {fam['id']} {fam['name']}: {fam['elements']} elements, worst {worst} ulp, "
                         f"{beyond} beyond the budget")
            continue
        failed += 1
        lines.append(f"FAIL {fam['id']} {fam['name']}: {bad} of {fam['elements']} elements fail; {first}")
    lines.append(f"FAILED {failed} families" if failed else "ALL PASS")
    return lines


def export_to(vs, tmp_path, profile: "str | None" = None) -> Path:
    out = tmp_path / (f"c-{profile}" if profile else "c")
    E.export_c_header(vs, out, profile=load_profile(profile) if profile else None)
    return out


IMPL_C = r"""
/* Wrong implementations for the tests, chosen with -DRETURN_DY, -DFLUSH, -DPOS_ZERO. */
#include "smoothl1lossgrad.h"
#include <stdint.h>
#include <string.h>
#ifndef RETURN_DY
#define RETURN_DY 0
#endif
#ifndef FLUSH
#define FLUSH 0
#endif
#ifndef POS_ZERO
#define POS_ZERO 0
#endif
#define DEFINE(T, U, PFX, EXPM, SIGNM)                                                      \
static T PFX##_flush(T v) {                                                                 \
    U b; memcpy(&b, &v, sizeof b);                                                          \
    if (FLUSH && (b & EXPM) == 0) b &= SIGNM;                                               \
    memcpy(&v, &b, sizeof b); return v;                                                     \
}                                                                                           \
static void PFX##_loop(T *dy, T *dx1, T *x1, T *x2, int length, T beta) {                   \
    for (int i = 0; i < length; i++) {                                                      \
        const T g = PFX##_flush(dy[i]), b = PFX##_flush(beta);                              \
        const T d = PFX##_flush(x1[i]) - PFX##_flush(x2[i]);                                \
        T r;                                                                                \
        if (RETURN_DY) r = dy[i];                                                           \
        else if (d > b) r = g;                                                              \
        else if (d < -b) r = -g;                                                            \
        else { const T q = d / b; r = q * g; }                                              \
        r = PFX##_flush(r);                                                                 \
        if (POS_ZERO && r == 0) r = 0;                                                      \
        dx1[i] = r;                                                                         \
    }                                                                                       \
}                                                                                           \
void PFX##_smoothl1lossgrad_s(T *dy, T *dx1, T *x1, T *x2, int length, T beta, int mask) { \
    if (mask) PFX##_loop(dy, dx1, x1, x2, length, beta);                                    \
}                                                                                           \
void PFX##_smoothl1lossgrad_p(T *dy, T *dx1, T *x1, T *x2, int length, T beta) {            \
    PFX##_loop(dy, dx1, x1, x2, length, beta);                                              \
}
DEFINE(float, uint32_t, fp, 0x7f800000u, 0x80000000u)
DEFINE(half, uint16_t, hp, 0x7c00u, 0x8000u)
"""


def wrong_impl(tmp_path: Path, cc, define: str) -> Path:
    src = tmp_path / "wrong.c"
    src.write_text(IMPL_C)
    obj = tmp_path / f"wrong-{define.lower()}.o"
    subprocess.run([*cc, *LIB_FLAGS, f"-I{S.sources_dir()}", f"-D{define}=1", "-c", str(src), "-o", str(obj)],
                   check=True)
    return obj


SAMPLE = [S.sources_dir() / "smoothl1lossgrad.c"]


def check(vs, prog, profile: str = "ieee"):
    """Run, compare with the prediction; the report lines and exit status."""
    rc, report, got = run(prog)
    assert report == predict(vs, got, profile=profile)
    assert rc == (0 if report[-1] == "ALL PASS" else 1)
    return rc, report


# ---- the self-test --------------------------------------------------------------------------

def test_selftest_passes_the_sample(vset, tmp_path, cc):
    out = export_to(vset, tmp_path)
    rc, report = check(vset, build(cc, out, SAMPLE, ["-DSL1_DUMP"]))
    assert rc == 0 and report[-1] == "ALL PASS"
    fams = vset.manifest["families"]
    assert [line.split(":")[0] for line in report[:-1]] == [f"PASS {f['id']} {f['name']}" for f in fams]
    # the same without the dump (the form used on a target): the same report
    proc = subprocess.run([str(build(cc, out, SAMPLE, name="plain"))], capture_output=True, text=True)
    assert proc.returncode == 0
    assert [ln for ln in proc.stdout.splitlines() if not ln.startswith("#")] == report


def test_selftest_links_the_sample_library(vset, tmp_path, cc):
    out = export_to(vset, tmp_path)
    proc = subprocess.run([str(build(cc, out, [S.build_library(tmp_path / "cache")]))], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.splitlines()[-1] == "ALL PASS"
    assert proc.stdout.startswith(f"# sl1_selftest {vset.format.name}: 5 families")


def _mutate(header: Path, array: str, index: int, new: int, width: int) -> None:
    text = header.read_text()
    m = re.search(rf"static const sl1_bits_t {array}\[\d+\] = \{{\n(.*?)\}};", text, re.S)
    values = [v.strip() for v in m.group(1).split(",") if v.strip()]
    values[index] = f"0x{new:0{width}x}"
    body = "".join(f"    {', '.join(values[i:i + 8])},\n" for i in range(0, len(values), 8))
    header.write_text(text[:m.start(1)] + body + text[m.end(1):])


def test_the_program_judges_by_the_record_alone(vset, tmp_path, cc):
    """A record narrowed in the header to one value the sample does not give fails exactly its
    family, at that element, as outside lo..hi; a changed oracle (what the lines report, not what
    they judge by) changes nothing else."""
    fmt = vset.format
    out = export_to(vset, tmp_path)
    row = vset.case_rows(1)[0]
    e = row["offset"] + 2
    far = int(vset.arrays["expected-oracle"][e]) ^ (1 << (fmt.bits - 2))  # the top exponent bit: still finite
    for array in ("sl1_lo", "sl1_hi"):
        _mutate(out / E.HEADER_NAME, array, e, far, fmt.bits // 4)
    rc, report, _ = run(build(cc, out, SAMPLE, ["-DSL1_DUMP"]))
    assert rc == 1 and [ln.split(":")[0] for ln in report if ln.startswith("FAIL ")] == ["FAIL 1 plain"]
    h = f"0x{far:0{fmt.bits // 4}x}"
    assert report[0].startswith(f"FAIL 1 plain: 1 of {vset.family(1)['elements']} elements fail; first: case "
                                f"{row['id']} element 2 got ")
    assert report[0].endswith(f", accepted {h}..{h}: outside lo..hi"), report[0]
    assert report[1:-1] == [ln for ln in predict(vset, run(build(cc, export_to(vset, tmp_path / "b"), SAMPLE,
                                                                  ["-DSL1_DUMP"], name="plain"))[2])[1:-1]]
    E.export_c_header(vset, out, force=True)
    _mutate(out / E.HEADER_NAME, "sl1_oracle", e, far, fmt.bits // 4)
    rc, report, _ = run(build(cc, out, SAMPLE, ["-DSL1_DUMP"], name="oracle"))
    assert rc == 0 and report[-1] == "ALL PASS"


def test_alternatives_are_accepted(vset, tmp_path, cc):
    """The q-underflow case's alternative (not the oracle's bits, not within the budget) is in the
    element's record, and the sample, which gives it, passes the family."""
    fmt = vset.format
    row = vset.case_rows(6)[0]
    alt = vset.case(row).alternatives["spec-order"][:1]
    assert vset.expected("oracle", row)[0] != alt[0]
    acc = E.set_acceptance(vset, load_profile("ieee"))
    one = A.Accepted(fmt, acc.lo[row["offset"]:row["offset"] + 1], acc.hi[row["offset"]:row["offset"] + 1],
                     acc.flags[row["offset"]:row["offset"] + 1], acc.extra_at[:0], acc.extra_lo[:0], acc.extra_hi[:0])
    more = acc.extra_at == row["offset"]
    assert one.contains(alt)[0] or any(F.ordered(fmt, acc.extra_lo[more]) <= F.ordered(fmt, alt)[0])
    out = export_to(vset, tmp_path)
    rc, report = check(vset, build(cc, out, SAMPLE, ["-DSL1_DUMP"]))
    assert rc == 0 and f"PASS 6 open: {vset.family(6)['elements']} elements" in "\n".join(report)


def test_an_implementation_returning_dy_fails(vset, tmp_path, cc):
    out = export_to(vset, tmp_path)
    rc, report = check(vset, build(cc, out, [wrong_impl(tmp_path, cc, "RETURN_DY")], ["-DSL1_DUMP"]))
    assert rc == 1
    assert "FAIL 1 plain" in [ln.split(":")[0] for ln in report]


@pytest.mark.parametrize("bug, family, detail", [
    ("WRITE_PAST_END", "2 lengths", "element 19 got 0x{past}, accepted 0x{fill} only: written past the case's elements"),
    ("CLOBBER_INPUT", "2 lengths", "changed input x2 element 0"),
])
def test_sample_defects_fail_their_family(vset, tmp_path, cc, bug, family, detail):
    fmt = vset.format
    number, length = S.defects()[bug]
    out = export_to(vset, tmp_path)
    obj = tmp_path / f"sample-bug{number}.o"
    subprocess.run([*cc, *LIB_FLAGS, f"-DSL1_BUG={number}", f"-I{S.sources_dir()}", "-c", str(SAMPLE[0]),
                    "-o", str(obj)], check=True)
    proc = subprocess.run([str(build(cc, out, [obj], name=f"bug{number}"))], capture_output=True, text=True)
    lines = [ln for ln in proc.stdout.splitlines() if not ln.startswith("#")]
    assert proc.returncode == 1
    fails = [ln for ln in lines if ln.startswith("FAIL ")]
    assert len(fails) == 1 and fails[0].startswith(f"FAIL {family}:")
    width = fmt.bits // 4
    past = "12345678"[-width:] if width == 8 else "5678"
    want = detail.format(past=past, fill="5a" * (width // 2))
    assert want in fails[0]
    case_id = next(r["id"] for r in vset.case_rows(2) if r["length"] == length)
    assert f"case {case_id} " in fails[0]
    assert lines[-1] == "FAILED 1 families"


def test_flushing_is_accepted_where_the_profile_accepts_it(vset, tmp_path, cc):
    """A library that flushes subnormal inputs and results fails the subnormal family under ieee
    (flushing forbidden) and passes under mt7004 (flushing accepted at every place)."""
    impl = [wrong_impl(tmp_path, cc, "FLUSH")]
    rc, report = check(vset, build(cc, export_to(vset, tmp_path), impl, ["-DSL1_DUMP"], name="ieee"))
    assert rc == 1 and "FAIL 4 subnormal" in [ln.split(":")[0] for ln in report]
    rc, report = check(vset, build(cc, export_to(vset, tmp_path, "mt7004"), impl, ["-DSL1_DUMP"], name="mt7004"),
                       profile="mt7004")
    assert rc == 0 and report[-1] == "ALL PASS"


def test_zero_sign_is_judged_where_the_profile_is_strict(vset, tmp_path, cc):
    """Every zero +0: a zero of the wrong sign under ieee (strict), accepted under mt7004."""
    impl = [wrong_impl(tmp_path, cc, "POS_ZERO")]
    rc, report = check(vset, build(cc, export_to(vset, tmp_path), impl, ["-DSL1_DUMP"], name="strict"))
    assert rc == 1 and "FAIL 3 specials" in [ln.split(":")[0] for ln in report]
    assert re.search(r"got 0x0+, correctly rounded 0x80*, accepted .*-0: a zero of the wrong sign$",
                     next(ln for ln in report if ln.startswith("FAIL 3 "))), report
    rc, _ = check(vset, build(cc, export_to(vset, tmp_path, "mt7004"), impl, ["-DSL1_DUMP"], name="lax"),
                  profile="mt7004")
    assert rc == 0
    rc, _ = check(vset, build(cc, export_to(vset, tmp_path / "again"), SAMPLE, ["-DSL1_DUMP"], name="sample"))
    assert rc == 0  # the sample keeps signs


@pytest.mark.parametrize("macro", ["SL1_MAX_ULP=0", "SL1_ACCEPT_FTZ", "SL1_LAX_ZERO_SIGN", "SL1_NO_MODELS",
                                   "SL1_NO_BOUNDARY"])
def test_the_old_judging_options_stop_the_build(vset, tmp_path, cc, macro):
    """What is accepted is the profile's: an option that would judge otherwise is refused, saying so."""
    out = export_to(vset, tmp_path)
    proc = subprocess.run([*cc, "-std=c11", f"-I{S.sources_dir()}", f"-D{macro}", "-c", str(out / E.SELFTEST_NAME),
                           "-o", str(tmp_path / "x.o")], capture_output=True, text=True)
    assert proc.returncode != 0 and "export again with --platform NAME or --profile FILE" in proc.stderr


def test_header_compiles_without_half_for_fp32(tmp_path, cc):
    root = tmp_path / "set"
    V.write(root, "fp32", small_families("fp32"), seed=1)
    out = export_to(V.load(root), tmp_path)
    subprocess.run([*cc, *STRICT, "-DSL1_NO_HALF", "-DSL1_SELFTEST_NO_MAIN", f"-I{S.sources_dir()}", "-c",
                    str(out / E.SELFTEST_NAME), "-o", str(tmp_path / "x.o")], check=True)


# ---- hex text -------------------------------------------------------------------------------

def test_hex_lines_parse_back_to_the_stored_bits(vset, tmp_path):
    fmt = vset.format
    path = E.export_hex(vset, tmp_path / "v.hex")
    lines = path.read_text().splitlines()
    body = [ln for ln in lines if not ln.startswith("#")]
    assert len(body) == vset.manifest["elements"]
    assert sum(ln.startswith("# case ") for ln in lines) == len(vset.manifest["cases"])
    width = fmt.bits // 4
    assert all(re.fullmatch(rf"\d+\.\d+ \d+( [0-9a-f]{{{width}}}){{5}}( \S+)*", ln) for ln in body)
    k = 0
    for row in vset.manifest["cases"]:
        case, written = vset.case(row), E.written_elements(vset, row)
        for i in range(row["n"]):
            rec = E.parse_hex_line(body[k])
            k += 1
            j = row["offset"] + i
            assert (rec["case"], rec["index"]) == (row["id"], i)
            for name in ("dy", "x1", "x2"):
                assert rec[name] == vset.arrays[name][j]
            assert rec["beta"] == int(row["beta"], 16)
            assert rec["oracle"] == vset.arrays["expected-oracle"][j]
            assert rec["ftz"] == vset.arrays["expected-oracle-ftz"][j]
            assert rec["acceptable"] == {a: int(v[i]) for a, v in case.alternatives.items()}
            assert rec["fill"] == (i >= written)
    assert k == len(body)
    ftz_lines = [ln for ln in body if " ftz=" in ln]
    assert ftz_lines, "the subnormal family has elements where the FTZ oracle differs"


# ---- writing --------------------------------------------------------------------------------

def test_exports_refuse_to_overwrite_without_force(vset, tmp_path):
    out = tmp_path / "c"
    header, selftest = E.export_c_header(vset, out)
    header.write_text("mine")
    with pytest.raises(V.VectorSetError, match="exists.*--force"):
        E.export_c_header(vset, out)
    assert header.read_text() == "mine"
    assert E.export_c_header(vset, out, force=True) == [header, selftest]
    assert header.read_text().startswith("/* sl1_vectors.h")
    hexfile = tmp_path / "v.hex"
    hexfile.write_text("mine")
    with pytest.raises(V.VectorSetError, match="exists"):
        E.export_hex(vset, hexfile)
    assert hexfile.read_text() == "mine"
    E.export_hex(vset, hexfile, force=True)
    assert hexfile.read_text().startswith("# sl1conf golden vectors")
    assert sorted(p.name for p in tmp_path.rglob("*")) == sorted(["c", E.HEADER_NAME, E.SELFTEST_NAME, "v.hex"])
    with pytest.raises(V.VectorSetError, match="not a folder"):
        E.export_c_header(vset, hexfile)


def test_exports_are_deterministic(vset, tmp_path):
    a = E.export(vset, "c-header", tmp_path / "a")
    b = E.export(vset, "c-header", tmp_path / "b")
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]
    assert a[1].read_bytes() == E.SELFTEST_SOURCE.read_bytes()  # the fixed program, copied as it is
    h1, h2 = E.export(vset, "hex", tmp_path / "a.hex"), E.export(vset, "hex", tmp_path / "b.hex")
    assert h1[0].read_bytes() == h2[0].read_bytes()
    assert str(tmp_path) not in h1[0].read_text() + a[0].read_text()


# ---- a realistic set ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_generated_families(dtype, tmp_path, cc):
    families = pytest.importorskip("sl1conf.conformance.vectors.families")
    root = tmp_path / "set"
    V.write(root, dtype, families.generate(dtype, seed=1), seed=1)
    vs = V.load(root)
    out = export_to(vs, tmp_path)
    rc, report = check(vs, build(cc, out, SAMPLE, ["-DSL1_DUMP"]))
    assert rc == 0 and report[-1] == "ALL PASS"  # the sample is an accepted model: it passes every family
    body = [ln for ln in E.export_hex(vs, tmp_path / "v.hex").read_text().splitlines() if not ln.startswith("#")]
    assert len(body) == vs.manifest["elements"]


def test_empty_set_and_empty_family(tmp_path, cc):
    root = tmp_path / "set"
    V.write(root, "fp32", [Family(3, "nothing", "no cases")], seed=1)
    vs = V.load(root)
    out = export_to(vs, tmp_path)
    rc, report = check(vs, build(cc, out, SAMPLE, ["-DSL1_DUMP"]))
    assert rc == 0 and report == ["PASS 3 nothing: 0 elements, worst 0 ulp, 0 beyond the budget", "ALL PASS"]
    V.write(root, "fp16", [], seed=1, force=True)
    vs = V.load(root)
    E.export_c_header(vs, out, force=True)
    rc, report = check(vs, build(cc, out, SAMPLE, name="none"))
    assert rc == 0 and report == ["ALL PASS"]
    assert [ln for ln in E.export_hex(vs, tmp_path / "v.hex").read_text().splitlines() if not ln.startswith("#")] == []


# ---- on a target: aarch64 (native fp16 arithmetic) under qemu-user ---------------------------

def test_selftest_on_aarch64_under_qemu(vset, tmp_path):
    missing = [t for t in ("aarch64-linux-gnu-gcc", "qemu-aarch64") if shutil.which(t) is None]
    if missing:
        message = f"{' and '.join(missing)} not found: install gcc-aarch64-linux-gnu, libc6-dev-arm64-cross, qemu-user"
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the aarch64 self-test: {message}")
        pytest.skip(message)
    out = export_to(vset, tmp_path)
    prog = build(["aarch64-linux-gnu-gcc", "-static"], out, SAMPLE, ["-DSL1_DUMP"], name="selftest-aarch64")
    wrapper = out / "run-under-qemu"
    wrapper.write_text(f"#!/bin/sh\nexec qemu-aarch64 {prog}\n")
    wrapper.chmod(0o755)
    rc, report = check(vset, wrapper)
    assert rc == 0 and report[-1] == "ALL PASS"


# ---- the profile in the header (issue 24) --------------------------------------------------------

def _regenerate_line(header: Path) -> str:
    return next(ln for ln in header.read_text().splitlines() if "regenerate with" in ln)


def _macros(header: Path) -> dict:
    return dict(re.findall(r"^#define (SL1_PROFILE_\w+) (\S+)", header.read_text(), re.M))


def test_header_carries_the_profile_or_says_it_uses_the_defaults(vset, tmp_path, capsys):
    from sl1conf.conformance.cli import main
    from sl1conf.conformance.rules.profiles import PROFILE_DIR, load_profile

    fmt = vset.format
    plain = _macros(E.export_c_header(vset, tmp_path / "plain")[0])
    assert plain == {"SL1_PROFILE_NAME": '"ieee"', "SL1_PROFILE_GIVEN": "0",
                     "SL1_PROFILE_MAX_ULP": f"{DEFAULT_ULP[fmt.name]}u", "SL1_PROFILE_STRICT_ZERO_SIGN": "1",
                     "SL1_PROFILE_ACCEPT_FTZ": "0"}
    platform = "mt7004" if fmt.name in load_profile("mt7004").dtypes else "ieee"
    prof = load_profile(platform)
    toml = tmp_path / "mine.toml"
    toml.write_bytes((PROFILE_DIR / f"{platform}.toml").read_bytes())
    for args, name in ((["--platform", platform], "by-name"), (["--profile", str(toml)], "by-file"),
                       (["--profile", str(toml)], "by-file-again")):
        assert main(["vectors", "export", str(vset.path), "--format", "c-header", "--out", str(tmp_path / name),
                     *args]) == 0
        got = _macros(tmp_path / name / E.HEADER_NAME)
        assert got == {"SL1_PROFILE_NAME": f'"{prof.name}"', "SL1_PROFILE_GIVEN": "1",
                       "SL1_PROFILE_MAX_ULP": f"{prof.max_ulp[fmt.name]}u",
                       "SL1_PROFILE_STRICT_ZERO_SIGN": str(int(prof.strict_zero_sign)),
                       "SL1_PROFILE_ACCEPT_FTZ": str(int(prof.flush_to_zero == "accepted"))}
        # the command that writes it again names the profile (a copy of a built-in one's bytes: by its name)
        assert f"--format c-header --platform {platform}`" in _regenerate_line(tmp_path / name / E.HEADER_NAME)
    a, b = (tmp_path / n / E.HEADER_NAME for n in ("by-file", "by-file-again"))
    assert a.read_bytes() == b.read_bytes() and str(tmp_path) not in a.read_text()
    assert "--format c-header --platform ieee`" in _regenerate_line(tmp_path / "plain" / E.HEADER_NAME)
    # the command says which profile the program judges as, and that ieee's is only the default
    capsys.readouterr()
    assert main(["vectors", "export", str(vset.path), "--format", "c-header", "--out", str(tmp_path / "said")]) == 0
    assert "judges as certify --platform ieee does (the default: export with --platform" in capsys.readouterr().out
    assert main(["vectors", "export", str(vset.path), "--format", "c-header", "--out", str(tmp_path / "said2"),
                 "--platform", platform]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"the self-test judges as certify --platform {platform} does"
    toml.write_bytes(toml.read_bytes() + b"\n# a profile of my own: other bytes, the same name\n")
    mine = load_profile(str(toml))
    assert main(["vectors", "export", str(vset.path), "--format", "c-header", "--out", str(tmp_path / "mine"),
                 "--profile", str(toml)]) == 0
    assert (f"--format c-header --profile FILE (FILE: the profile {mine.name}, sha256 {mine.sha256})"
            in _regenerate_line(tmp_path / "mine" / E.HEADER_NAME))
    capsys.readouterr()
    # usage: one profile at most, and only for the C header; a profile without the set's dtype
    assert main(["vectors", "export", str(vset.path), "--format", "hex", "--out", str(tmp_path / "v.hex"),
                 "--platform", "ieee"]) == 2
    assert main(["vectors", "export", str(vset.path), "--format", "c-header", "--out", str(tmp_path / "x"),
                 "--platform", "ieee", "--profile", str(toml)]) == 2
    if fmt.name == "fp16":
        assert main(["vectors", "export", str(vset.path), "--format", "c-header", "--out", str(tmp_path / "y"),
                     "--platform", "ft78ne"]) == 2
        assert "ft78ne has no fp16" in capsys.readouterr().err


NUDGED = r"""
#include <stdint.h>
#include <string.h>
#include "smoothl1lossgrad.h"
/* the manual's lines in double, each result then one ULP away from zero (its bits plus one) */
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{
    for (int i = 0; i < n; i++) {
        const double d = (double)x1[i] - (double)x2[i];
        const float r = d > beta ? dy[i] : d < -beta ? -dy[i] : (float)(d / beta * dy[i]);
        uint32_t b;
        memcpy(&b, &r, sizeof b);
        b += r != 0;
        memcpy(&dx1[i], &b, sizeof b);
    }
}
void fp_smoothl1lossgrad_s(float *dy, float *dx1, float *x1, float *x2, int n, float beta, int mask)
{ if (mask) fp_smoothl1lossgrad_p(dy, dx1, x1, x2, n, beta); }
"""


def test_boundary_elements_are_judged_without_budget(tmp_path, cc):
    """One ULP off on a boundary element fails, saying the boundary has no budget (certify's R02);
    one ULP off inside passes."""
    fmt = F.format_by_name("fp32")
    one, two, half = (_bits(fmt, v)[0] for v in (1.0, 2.0, 0.5))
    arr = lambda *v: np.array(v, fmt.uint)  # noqa: E731
    # x1 - x2 == beta on elements 0 and 2, == -beta on element 3; element 1 is inside
    edge = Family(1, "edge", "on the boundary", cases=[
        _case(fmt, arr(one, two, two, half), arr(one, half, two, one), arr(0, 0, one, two), 1.0)])
    root = tmp_path / "set"
    V.write(root, fmt.name, [edge], seed=1)
    vs = V.load(root)
    acc = E.set_acceptance(vs, load_profile("ieee"))
    assert ((acc.flags & A.BOUNDARY) != 0).tolist() == [True, False, True, True]
    out = export_to(vs, tmp_path)
    assert "#define SL1_VEC_BOUNDARY 3u" in (out / E.HEADER_NAME).read_text()
    src = tmp_path / "nudged.c"
    src.write_text(NUDGED)
    rc, report = check(vs, build(cc, out, [src], ["-DSL1_DUMP", "-DSL1_NO_HALF"], name="nudged"))
    assert rc == 1
    assert report[0].startswith("FAIL 1 edge: 3 of 4 elements fail; first: case 1.0 element 0 got 0x3f800001, "
                                "correctly rounded 0x3f800000, accepted 0x3f800000..0x3f800000: outside lo..hi; "
                                "on the boundary: no budget (exact or reachable only)"), report


def _quick_set(tmp_path, dtype: str) -> V.VectorSet:
    from sl1conf.conformance.certify.engine import quick_families
    from sl1conf.conformance.vectors.families import generate

    return V.load(V.write(tmp_path / f"quick-{dtype}", dtype, generate(dtype, 2026, list(quick_families())), seed=2026))


@pytest.mark.parametrize("dtype, platform, most", [("fp32", "ieee", 1_100_000), ("fp32", "mt7004", 1_100_000),
                                                   ("fp16", "ieee", 600_000), ("fp16", "mt7004", 600_000)])
def test_the_quick_set_loads_on_a_board_with_a_few_mb(dtype, platform, most, tmp_path, cc):
    """What the header says it costs is what its arrays hold (the bytes per element and per
    further interval docs/vector-format.md states), and the quick set's stays near 1 MB for fp32
    and 0.5 MB for fp16; the program's object file holds it."""
    vs = _quick_set(tmp_path, dtype)
    out = export_to(vs, tmp_path, platform)
    text = (out / E.HEADER_NAME).read_text()
    extra = int(re.search(r"#define SL1_VEC_EXTRA (\d+)u", text).group(1))
    cost = int(re.search(r"#define SL1_VEC_BYTES (\d+)u", text).group(1))
    assert E.bytes_per_element(vs.format) == {"fp32": 25, "fp16": 13}[dtype]
    assert cost == E.bytes_per_element(vs.format) * vs.manifest["elements"] + E.bytes_per_extra(vs.format) * extra
    arrays = dict(re.findall(r"static const (?:sl1_bits_t|uint8_t|uint32_t) (sl1_\w+)\[(\d+)\]", text))
    s = vs.format.dtype.itemsize
    held = sum(int(arrays[a]) * s for a in ("sl1_dy", "sl1_x1", "sl1_x2", "sl1_oracle", "sl1_lo", "sl1_hi")) + \
        int(arrays["sl1_accept"]) + int(arrays["sl1_extra_at"]) * 4 + \
        sum(int(arrays[a]) * s for a in ("sl1_extra_lo", "sl1_extra_hi"))
    assert held == cost and cost < most, (cost, most)
    obj = tmp_path / "selftest.o"
    subprocess.run([*cc, "-std=c11", "-O1", f"-I{S.sources_dir()}", *(["-DSL1_NO_HALF"] if dtype == "fp32" else []),
                    "-c", str(out / E.SELFTEST_NAME), "-o", str(obj)], check=True)
    assert obj.stat().st_size < 2 * most


def test_a_call_certify_does_not_make_on_the_profile_is_not_judged(tmp_path, cc):
    """On a profile of 4 cores a shared call naming cores 4 to 7 is one certify leaves out: the
    program calls it and prints its results, and judges nothing of it (a library returning dy
    fails it on the 8 cores of ieee)."""
    from sl1conf.conformance.rules.profiles import PROFILE_DIR

    fmt = F.format_by_name("fp32")
    arr = lambda *v: _bits(fmt, *v)  # noqa: E731
    fam = Family(1, "masks", "cores 4 to 7", cases=[
        _case(fmt, arr(1.0, 2.0), arr(0.25, 0.5), arr(0.0, 0.0), 1.0, variant="s", core_mask=0xF0)])
    root = tmp_path / "set"
    V.write(root, fmt.name, [fam], seed=1)
    vs = V.load(root)
    four = tmp_path / "four.toml"
    four.write_text((PROFILE_DIR / "ieee.toml").read_text().replace("cores = 8", "cores = 4"))
    impl = [wrong_impl(tmp_path, cc, "RETURN_DY")]
    out = tmp_path / "c-four"
    E.export_c_header(vs, out, profile=load_profile(str(four)))
    assert "#define SL1_VEC_NOT_JUDGED 1u" in (out / E.HEADER_NAME).read_text()
    rc, report, got = run(build(cc, out, impl, ["-DSL1_DUMP", "-DSL1_NO_HALF"], name="four"))
    assert rc == 0 and report == ["PASS 1 masks: 2 elements, worst 0 ulp, 0 beyond the budget", "ALL PASS"]
    assert got["1.0"][:2].tolist() == arr(1.0, 2.0).tolist()  # called and printed all the same
    rc, report = check(vs, build(cc, export_to(vs, tmp_path), impl, ["-DSL1_DUMP", "-DSL1_NO_HALF"], name="eight"))
    assert rc == 1 and report[0].startswith("FAIL 1 masks: ")
