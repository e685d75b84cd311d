"""Exports of a golden vector set: the C header with its self-test program, and hex text.

- For fp16 and fp32, the exported self-test compiles cleanly (-std=c11 -Wall -Wextra
  -Wpedantic -Werror), links the sample (its source, or the shared library of
  build_library()), runs and prints ALL PASS with exit status 0; its report equals the
  one predicted here, in Python, from the same rules (docs/vector-format.md) and the
  results it dumps with -DSL1_DUMP (so every line, worst ulp and place included, is
  checked against an independent implementation of the judgement).
- A changed oracle value (or alternative) in the header fails exactly its family.
- Wrong implementations fail: one that returns dy; the sample with its write-past-end
  and clobber-input defects; a flushing one fails unless -DSL1_ACCEPT_FTZ; one that loses
  the sign of zeros passes unless -DSL1_STRICT_ZERO_SIGN; SL1_MAX_ULP=0 matches the prediction.
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
    return VectorCase(np.asarray(dy, fmt.uint), np.asarray(x1, fmt.uint), np.asarray(x2, fmt.uint),
                      int(beta) if isinstance(beta, np.integer) else int(_bits(fmt, beta)[0]), **kw)


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
        VectorCase(dy, x1, x2, int(three), result="acceptable", alternatives={"spec-order": spec_order},
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


def predict(vs: V.VectorSet, got: dict, *, max_ulp=None, ftz=False, strict=True, oracle=None, alternatives=None,
            models=True, boundary=True):
    """The report the documented rules give for these results (independent of the C code).
    Defaults: the header's without a profile (ieee's budget, strict zero sign, no flushing),
    no budget on the boundary (the exact x1 - x2 is +-beta)."""
    fmt = vs.format
    max_ulp = DEFAULT_ULP[fmt.name] if max_ulp is None else max_ulp
    fill = int.from_bytes(b"\x5a" * fmt.dtype.itemsize, "little")
    oracle = vs.arrays["expected-oracle"] if oracle is None else oracle
    alternatives = vs.arrays["alternatives"] if alternatives is None else alternatives
    sign = fmt.uint.type(fmt.sign_mask)
    width = fmt.bits // 4
    lines, failed = [], 0
    for fam in vs.manifest["families"]:
        bad, worst_pass, worst = 0, 0, None
        for row in vs.case_rows(fam["id"]):
            written, off, n = E.written_elements(vs, row), row["offset"], row["n"]
            x = got[row["id"]].astype(fmt.uint)
            assert x.size == n + GUARD
            want = np.full(n + GUARD, fill, fmt.uint)
            want[:written] = oracle[off:off + written]
            same = F.same_result(fmt, x, want)
            d = np.where(same, 0, F.ulp_distance(fmt, x, want))
            ok = same | (d <= max_ulp)
            if strict:
                zero = ((x & ~sign) == 0) | ((want & ~sign) == 0)
                ok = same | (ok & ~(zero & ((x ^ want) & sign != 0)))
            if boundary and n:
                on = np.zeros(n + GUARD, bool)
                on[:n] = X.at_boundary(fmt, vs.arrays["x1"][off:off + n], vs.arrays["x2"][off:off + n],
                                       int(row["beta"], 16))
                ok &= same | ~on
            w = slice(0, written)
            for alt in row["alternatives"]:
                hit = ~ok[w] & F.same_result(fmt, x[w], alternatives[alt["offset"]:alt["offset"] + written])
                ok[w] |= hit
                d[w][hit] = 0
            if ftz:
                hit = ~ok[w] & F.same_result(fmt, x[w], vs.arrays["expected-oracle-ftz"][off:off + written])
                ok[w] |= hit
                d[w][hit] = 0
            for m in (accepted_models(fmt) if models else ()):  # bit for bit an accepted model
                hit = ~ok[w] & F.same_result(fmt, x[w], vs.arrays[f"expected-model-{m.name}"][off:off + written])
                ok[w] |= hit
                d[w][hit] = 0
            ok[written:] = x[written:] == fill  # nothing to write: the fill, exactly
            if ok.any():
                worst_pass = max(worst_pass, int(d[ok].max()))
            if not ok.all():
                bad += int((~ok).sum())
                i = int(np.flatnonzero(~ok)[np.argmax(d[~ok])])  # the first of the largest
                if worst is None or d[i] > worst[0]:
                    worst = (int(d[i]), row["id"], i, int(x[i]), int(want[i]))
        if not bad:
            lines.append(f"PASS {fam['id']} {fam['name']}: {fam['elements']} elements, worst {worst_pass} ulp")
            continue
        failed += 1
        dist, cid, i, x, want = worst
        shown = "nan" if dist == F.NAN_MISMATCH else dist
        lines.append(f"FAIL {fam['id']} {fam['name']}: {bad} of {fam['elements']} elements, worst {shown} ulp "
                     f"at case {cid} element {i} (got 0x{x:0{width}x}, expected 0x{want:0{width}x})")
    lines.append(f"FAILED {failed} families" if failed else "ALL PASS")
    return lines


def export_to(vs, tmp_path) -> Path:
    out = tmp_path / "c"
    E.export_c_header(vs, out)
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


def check(vs, prog, **rules):
    """Run, compare with the prediction; the report lines and exit status."""
    rc, report, got = run(prog)
    assert report == predict(vs, got, **rules)
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


def test_changed_oracle_value_fails_exactly_its_family(vset, tmp_path, cc):
    fmt = vset.format
    out = export_to(vset, tmp_path)
    row = vset.case_rows(1)[0]
    index = row["offset"] + 2
    oracle = vset.arrays["expected-oracle"].copy()
    oracle[index] ^= 1 << (fmt.bits - 2)  # the top exponent bit: a large change, still finite
    _mutate(out / E.HEADER_NAME, "sl1_oracle", index, int(oracle[index]), fmt.bits // 4)
    # Judged by the oracle alone: the sample would otherwise still match its own model's column.
    rc, report = check(vset, build(cc, out, SAMPLE, ["-DSL1_DUMP", "-DSL1_NO_MODELS"]), oracle=oracle,
                       models=False)
    assert rc == 1
    assert [ln.split(":")[0] for ln in report if ln.startswith("FAIL ")] == ["FAIL 1 plain"]
    assert report[0].startswith(f"FAIL 1 plain: 1 of {vset.family(1)['elements']} elements, worst ")
    assert f"at case {row['id']} element 2 " in report[0]
    assert report[-1] == "FAILED 1 families"


def test_alternatives_are_accepted_and_only_them(vset, tmp_path, cc):
    """The sample passes the q-underflow case by its alternative; a changed alternative fails it."""
    fmt = vset.format
    row = vset.case_rows(6)[0]
    assert vset.expected("oracle", row)[0] != vset.case(row).alternatives["spec-order"][0]
    out = export_to(vset, tmp_path)
    alts = vset.arrays["alternatives"].copy()
    index = row["alternatives"][0]["offset"]
    alts[index] ^= 1 << (fmt.bits - 2)
    _mutate(out / E.HEADER_NAME, "sl1_alternatives", index, int(alts[index]), fmt.bits // 4)
    rc, report = check(vset, build(cc, out, SAMPLE, ["-DSL1_DUMP", "-DSL1_NO_MODELS"]), alternatives=alts,
                       models=False)
    assert rc == 1 and [ln.split(":")[0] for ln in report if ln.startswith("FAIL ")] == ["FAIL 6 open"]
    assert f"at case {row['id']} element 0 " in report[-2]


def test_an_implementation_returning_dy_fails(vset, tmp_path, cc):
    out = export_to(vset, tmp_path)
    rc, report = check(vset, build(cc, out, [wrong_impl(tmp_path, cc, "RETURN_DY")], ["-DSL1_DUMP"]))
    assert rc == 1
    assert "FAIL 1 plain" in [ln.split(":")[0] for ln in report]


@pytest.mark.parametrize("bug, family, detail", [
    ("WRITE_PAST_END", "2 lengths", "element 19 (got 0x{past}, expected 0x{fill})"),
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


def test_flush_to_zero_accepted_only_with_the_macro(vset, tmp_path, cc):
    out = export_to(vset, tmp_path)
    impl = [wrong_impl(tmp_path, cc, "FLUSH")]
    rc, report = check(vset, build(cc, out, impl, ["-DSL1_DUMP"], name="ftz-off"))
    assert rc == 1 and "FAIL 4 subnormal" in [ln.split(":")[0] for ln in report]
    rc, report = check(vset, build(cc, out, impl, ["-DSL1_DUMP", "-DSL1_ACCEPT_FTZ"], name="ftz-on"), ftz=True)
    assert rc == 0 and report[-1] == "ALL PASS"


def test_zero_sign_strict_only_with_the_macro(vset, tmp_path, cc):
    out = export_to(vset, tmp_path)
    impl = [wrong_impl(tmp_path, cc, "POS_ZERO")]
    rc, report = check(vset, build(cc, out, impl, ["-DSL1_DUMP", "-DSL1_LAX_ZERO_SIGN"], name="lax"), strict=False)
    assert rc == 0
    rc, report = check(vset, build(cc, out, impl, ["-DSL1_DUMP"], name="default"), strict=True)
    assert rc == 1  # the defaults are the ieee profile's: strict
    rc, report = check(vset, build(cc, out, impl, ["-DSL1_DUMP", "-DSL1_STRICT_ZERO_SIGN"], name="strict"),
                       strict=True)
    assert rc == 1 and "FAIL 3 specials" in [ln.split(":")[0] for ln in report]
    assert re.search(r"worst 0 ulp at case 3\.\d+ element \d+ \(got 0x0+, expected 0x80*\)", report[2])
    # the sample keeps signs: strict passes
    rc, _ = check(vset, build(cc, out, SAMPLE, ["-DSL1_DUMP", "-DSL1_STRICT_ZERO_SIGN"], name="sample"), strict=True)
    assert rc == 0


def test_max_ulp_macro(vset, tmp_path, cc):
    out = export_to(vset, tmp_path)
    for k in (0, 1):
        check(vset, build(cc, out, SAMPLE, ["-DSL1_DUMP", f"-DSL1_MAX_ULP={k}"], name=f"ulp{k}"), max_ulp=k)


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
    rc, report = check(vs, build(cc, out, SAMPLE, ["-DSL1_DUMP", "-DSL1_NO_MODELS"], name="no-models"),
                       models=False)
    body = [ln for ln in E.export_hex(vs, tmp_path / "v.hex").read_text().splitlines() if not ln.startswith("#")]
    assert len(body) == vs.manifest["elements"]


def test_empty_set_and_empty_family(tmp_path, cc):
    root = tmp_path / "set"
    V.write(root, "fp32", [Family(3, "nothing", "no cases")], seed=1)
    vs = V.load(root)
    out = export_to(vs, tmp_path)
    rc, report = check(vs, build(cc, out, SAMPLE, ["-DSL1_DUMP"]))
    assert rc == 0 and report == ["PASS 3 nothing: 0 elements, worst 0 ulp", "ALL PASS"]
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
    a, b = (tmp_path / n / E.HEADER_NAME for n in ("by-file", "by-file-again"))
    assert a.read_bytes() == b.read_bytes() and str(tmp_path) not in a.read_text()
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


def test_boundary_elements_are_judged_without_budget(vset, tmp_path, cc):
    """A result 1 ULP off on a boundary element fails (certify's R02), 1 ULP off elsewhere passes."""
    fmt = vset.format
    one, two, half = (_bits(fmt, v)[0] for v in (1.0, 2.0, 0.5))
    arr = lambda *v: np.array(v, fmt.uint)  # noqa: E731
    # x1 - x2 == beta on elements 0 and 2, == -beta on element 3; element 1 is inside
    edge = Family(1, "edge", "on the boundary", cases=[
        _case(fmt, arr(one, two, two, half), arr(one, half, two, one), arr(0, 0, one, two), 1.0)])
    root = tmp_path / "set"
    V.write(root, fmt.name, [edge], seed=1)
    vs = V.load(root)
    first, index = E.boundary_elements(vs)
    assert list(first) == [0, 3] and list(index) == [0, 2, 3]
    out = export_to(vs, tmp_path)
    assert "#define SL1_VEC_BOUNDARY 3u" in (out / E.HEADER_NAME).read_text()
    for j, fails in ((2, True), (1, False)):  # the header's oracle 1 ULP off the sample's exact result
        oracle = vs.arrays["expected-oracle"].copy()
        oracle[j] += 1
        E.export_c_header(vs, out, force=True)
        _mutate(out / E.HEADER_NAME, "sl1_oracle", j, int(oracle[j]), fmt.bits // 4)
        rc, report = check(vs, build(cc, out, SAMPLE, ["-DSL1_DUMP", "-DSL1_NO_MODELS"], name=f"b{j}"), oracle=oracle,
                           models=False)
        assert rc == (1 if fails else 0), report
        if fails:
            assert report[0] == (f"FAIL 1 edge: 1 of 4 elements, worst 1 ulp at case 1.0 element 2 "
                                 f"(got 0x{int(vs.arrays['expected-oracle'][2]):0{fmt.bits // 4}x}, "
                                 f"expected 0x{int(oracle[2]):0{fmt.bits // 4}x})")
            # without the boundary rule the same element is within the budget
            rc, _ = check(vs, build(cc, out, SAMPLE, ["-DSL1_DUMP", "-DSL1_NO_MODELS", "-DSL1_NO_BOUNDARY"],
                                    name="nb"), oracle=oracle, models=False, boundary=False)
            assert rc == 0
