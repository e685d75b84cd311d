"""The vector families: deterministic, stable, and each case really is what its flags say.

Element-level claims are checked independently of the generator: exact values with
``fractions.Fraction`` (formats.decode), rounded diffs with numpy, expected signs and
magnitudes with the fast oracle.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from sl1conf.conformance.vectors import families as FM
from sl1conf.conformance.vectors.families import FAMILIES, generate
from sl1conf.conformance.vectors.families.lengths import EXTRA_PRIME_LENGTHS
from sl1conf.reference import formats as F
from sl1conf.reference.fast_oracle import smoothl1lossgrad

DTYPES = ("fp16", "fp32")
SEED = 7
OTHER_SEED = 8

# The exact id -> name table: ids are never renumbered, a removed family leaves a gap.
# Changing this table changes the meaning of every vector file: append, never edit.
ID_TABLE = {
    1: "boundary-exact",
    2: "boundary-neighbours",
    3: "boundary-rounded-diff",
    4: "fp16-overflow",
    5: "range-overflow",
    6: "underflow",
    7: "nan-inf",
    8: "signed-zero",
    9: "beta-special",
    10: "lengths",
    11: "core-masks",
    12: "random-weighted",
    13: "random-boundary",
    14: "large-random",
    15: "rounding-hard",
    16: "lengths-compact",
    17: "lengths-long",
    18: "calls-crossed",
}
RANDOM_FAMILIES = {"random-weighted", "random-boundary", "large-random", "rounding-hard"}

# All non-large families together, per dtype: the committed canonical set must stay a few MB.
# (The full lengths sweep, ~410k elements, is a large family generated only when asked.)
CANONICAL_ELEMENTS_MAX = 60_000


@pytest.fixture(scope="module", params=DTYPES)
def full(request):
    dtype = request.param
    return dtype, generate(dtype, SEED)


def _fmt(dtype):
    return F.format_by_name(dtype)


def _same_case(a, b) -> bool:
    if (a.beta, a.variant, a.core_mask, a.length, a.flags, a.result, a.note) != (
            b.beta, b.variant, b.core_mask, b.length, b.flags, b.result, b.note):
        return False
    if any(not np.array_equal(getattr(a, k), getattr(b, k)) for k in ("dy", "x1", "x2")):
        return False
    return a.alternatives.keys() == b.alternatives.keys() and all(
        np.array_equal(a.alternatives[k], b.alternatives[k]) for k in a.alternatives)


def _same_family(a, b) -> bool:
    return ((a.id, a.name, a.description, a.flags, a.large) == (b.id, b.name, b.description, b.flags, b.large)
            and len(a.cases) == len(b.cases) and all(_same_case(x, y) for x, y in zip(a.cases, b.cases)))


def _value(fmt, bits):
    cls, sign = F.classify(fmt, int(bits))
    if cls.is_nan:
        return None
    if cls is F.FloatClass.INF:
        return "-inf" if sign else "inf"
    return F.decode(fmt, int(bits))


def _exact_diff(fmt, a, b):
    x, y = _value(fmt, a), _value(fmt, b)
    if isinstance(x, Fraction) and isinstance(y, Fraction):
        return x - y
    return None


# ---------------------------------------------------------------- registry and ids

def test_id_table_is_stable():
    assert {s.id: s.name for s in FAMILIES} == ID_TABLE
    assert [s.id for s in FAMILIES] == sorted(ID_TABLE)
    assert FM.FAMILY_NAMES == tuple(ID_TABLE.values())


def test_registry_entries_are_complete():
    for spec in FAMILIES:
        assert spec.description and len(spec.description) > 60, spec.name
        assert spec.flags and set(spec.dtypes) <= set(DTYPES), spec.name
        assert spec.seeded == (spec.name in RANDOM_FAMILIES), spec.name
        assert spec.large == (spec.name in ("large-random", "lengths", "lengths-long", "calls-crossed")), spec.name
        assert spec.by_default == (spec.name in ("lengths-long", "calls-crossed")), spec.name
    assert FM.family_by_name("fp16-overflow").dtypes == ("fp16",)
    assert FM.family_by_name("range-overflow").dtypes == ("fp32",)


def test_generated_families_carry_registry_ids(full):
    dtype, fams = full
    expected = [s for s in FAMILIES if dtype in s.dtypes and not s.large]
    assert [(f.id, f.name) for f in fams] == [(s.id, s.name) for s in expected]
    assert all(f.cases for f in fams)


# ---------------------------------------------------------------- determinism

def test_same_seed_gives_identical_families(full):
    dtype, fams = full
    again = generate(dtype, SEED)
    assert len(again) == len(fams)
    for a, b in zip(fams, again):
        assert _same_family(a, b), a.name


def test_other_seed_changes_random_families_only(full):
    dtype, fams = full
    other = {f.name: f for f in generate(dtype, OTHER_SEED)}
    for fam in fams:
        same = _same_family(fam, other[fam.name])
        assert same == (fam.name not in RANDOM_FAMILIES), fam.name


def test_subset_selection_does_not_change_a_family(full):
    dtype, fams = full
    by_name = {f.name: f for f in fams}
    for subset in (["underflow"], ["random-weighted", "boundary-exact"], ["rounding-hard", "nan-inf"]):
        got = generate(dtype, SEED, subset)
        assert [f.name for f in got] == [n for n in by_name if n in subset]
        for f in got:
            assert _same_family(f, by_name[f.name]), f.name


def test_unknown_family_name_raises():
    with pytest.raises(ValueError) as err:
        generate("fp16", 1, ["boundary-exact", "no-such-family"])
    text = str(err.value)
    assert "no-such-family" in text and "boundary-exact" in text and "core-masks" in text
    with pytest.raises(ValueError, match="seed"):
        generate("fp16", -1)


def test_family_for_the_other_dtype_is_left_out():
    assert generate("fp32", 1, ["fp16-overflow"]) == []
    assert [f.name for f in generate("fp16", 1, ["fp16-overflow", "signed-zero"])] == [
        "fp16-overflow", "signed-zero"]


# ---------------------------------------------------------------- case shape

def test_every_case_has_uint_arrays_of_one_length(full):
    dtype, fams = full
    fmt = _fmt(dtype)
    for fam in fams:
        for i, c in enumerate(fam.cases):
            for name in ("dy", "x1", "x2"):
                a = getattr(c, name)
                assert a.dtype == fmt.uint and a.ndim == 1 and a.shape == c.dy.shape, (fam.name, i, name)
            assert 0 <= c.beta < (1 << fmt.bits)
            assert c.variant in ("p", "s") and c.result in ("valid", "acceptable")
            assert c.flags and len(set(c.flags)) == len(c.flags)
            if c.variant == "p":
                assert c.core_mask == 0xFF


def test_acceptable_cases_list_alternatives_and_why(full):
    dtype, fams = full
    fmt = _fmt(dtype)
    seen = set()
    for fam in fams:
        for c in fam.cases:
            if c.result == "valid":
                assert not c.alternatives and not c.note
                continue
            assert c.note and (c.alternatives or (c.variant == "s" and c.core_mask == 0))
            for name, alt in c.alternatives.items():
                assert alt.dtype == fmt.uint and alt.shape == c.dy.shape, name
                assert f"{name}:" in c.note
                seen.add(name)
    # every open behaviour of docs/special-values.md that the families aim at shows up
    assert {"zero", "dy", "neg-dy", "neg-branch-first", "sign-of-diff", "abs-beta",
            "outer-branch", "rounded-diff"} <= seen


def test_canonical_size(full):
    dtype, fams = full
    total = sum(c.n for f in fams for c in f.cases)
    assert total <= CANONICAL_ELEMENTS_MAX
    assert not any(f.large for f in fams) and "lengths" not in {f.name for f in fams}


# ---------------------------------------------------------------- boundary families

def _cases_flagged(fams, family, flag):
    fam = next(f for f in fams if f.name == family)
    return [c for c in fam.cases if flag in c.flags]


def test_boundary_exact_is_exact(full):
    dtype, fams = full
    fmt = _fmt(dtype)
    checked = 0
    for flag, sign in (("diff-eq-beta", 1), ("diff-eq-neg-beta", -1)):
        cases = _cases_flagged(fams, "boundary-exact", flag)
        assert len(cases) >= 20
        for c in cases:
            beta = _value(fmt, c.beta)
            assert c.n >= 24
            for a, b in zip(c.x1, c.x2):
                assert _exact_diff(fmt, a, b) == sign * beta
                checked += 1
    fam = next(f for f in fams if f.name == "boundary-exact")
    assert all({"diff-eq-beta", "diff-eq-neg-beta"} & set(c.flags) for c in fam.cases)
    # betas that are not powers of two, 0.1 rounded to the format among them
    betas = {c.beta for c in fam.cases}
    assert F.parse_value(fmt, "0.1")[0] in betas and F.parse_value(fmt, "0.3")[0] in betas
    assert checked > 1500


def test_boundary_neighbours_are_one_and_two_ulps_off(full):
    dtype, fams = full
    fmt = _fmt(dtype)
    fam = next(f for f in fams if f.name == "boundary-neighbours")
    kinds = set()
    for c in fam.cases:
        (flag,) = [f for f in c.flags if f.startswith("diff-above-") or f.startswith("diff-below-")]
        k = int(flag[-4])
        up = flag.startswith("diff-above-")
        edge = c.beta | (fmt.sign_mask if "neg-beta" in flag else 0)
        o = int(F.ordered(fmt, np.array([edge], fmt.uint))[0]) + (k if up else -k)
        target = _value(fmt, o if o >= 0 else (-o) | fmt.sign_mask)
        for a, b in zip(c.x1, c.x2):
            assert _exact_diff(fmt, a, b) == target, flag
        kinds.add(flag.replace("neg-", ""))
        assert c.n
    assert len(kinds) == 4 and len(fam.cases) >= 100


def _positions(beta, d):
    return (d > beta, d < -beta, d == beta, d == -beta)


def test_rounded_diff_crosses_the_boundary(full):
    dtype, fams = full
    fmt = _fmt(dtype)
    cases = _cases_flagged(fams, "boundary-rounded-diff", "rounded-diff-crosses-boundary")
    assert len(cases) >= 40
    sides = set()
    for c in cases:
        beta = _value(fmt, c.beta)
        with np.errstate(all="ignore"):
            rounded = (c.x1.view(fmt.dtype) - c.x2.view(fmt.dtype)).astype(fmt.dtype)
        for a, b, r in zip(c.x1, c.x2, rounded):
            exact = _exact_diff(fmt, a, b)
            r = Fraction(float(r))
            assert _positions(beta, exact) != _positions(beta, r)
            assert (-beta < exact < beta) == ("exact-diff-inside" in c.flags)
        sides.add(("exact-diff-inside" in c.flags, "diff-near-beta" in c.flags))
    assert len(sides) == 4
    # where the branches disagree, the rounded-diff answer is listed as acceptable
    assert any("rounded-diff" in c.alternatives for c in cases if "exact-diff-inside" in c.flags)


# ---------------------------------------------------------------- flags against the oracle

def _oracle(fmt, c):
    beta = np.array([c.beta], fmt.uint).view(fmt.dtype)[0]
    return smoothl1lossgrad(c.dy.view(fmt.dtype), c.x1.view(fmt.dtype), c.x2.view(fmt.dtype),
                            beta).view(fmt.uint)


def test_element_flags_hold(full):
    """Flags of the targeted families, checked element by element with exact values."""
    dtype, fams = full
    fmt = _fmt(dtype)
    mx = fmt.max_finite
    hits = {}
    for fam in fams:
        if fam.id > 9:
            continue
        for c in fam.cases:
            out = _oracle(fmt, c)
            beta = _value(fmt, c.beta)
            fl = set(c.flags)
            for j in range(c.n):
                d = _exact_diff(fmt, c.x1[j], c.x2[j])
                dy = _value(fmt, c.dy[j])
                cls, sign = F.classify(fmt, int(out[j]))
                checks = {
                    "pos-zero-result": lambda: int(out[j]) == 0,
                    "neg-zero-result": lambda: int(out[j]) == fmt.sign_mask,
                    "result-max": lambda: int(out[j]) & ~fmt.sign_mask == fmt.inf_bits - 1,
                    "diff-overflow": lambda: abs(d) > mx,
                    "product-overflow": lambda: abs(d * dy) > mx and cls is F.FloatClass.NORMAL,
                    "recip-overflow": lambda: 1 / beta > mx,
                    "product-underflow": lambda: abs(d * dy) < fmt.min_normal and cls is F.FloatClass.NORMAL,
                    "quotient-underflow": lambda: (abs(d / beta) < fmt.min_subnormal / 2
                                                   and cls is not F.FloatClass.ZERO),
                    "subnormal-result": lambda: cls in (F.FloatClass.SUBNORMAL, F.FloatClass.ZERO),
                    "subnormal-diff": lambda: d != 0 and abs(d) < fmt.min_normal,
                    "middle-branch": lambda: -beta <= d <= beta,
                    "outer-branch": lambda: not -beta <= d <= beta,
                }
                for flag in fl & checks.keys():
                    assert checks[flag](), (fam.name, c.flags, j)
                    hits[flag] = hits.get(flag, 0) + 1
    assert set(hits) == {"pos-zero-result", "neg-zero-result", "result-max", "diff-overflow",
                         "product-overflow", "recip-overflow", "product-underflow",
                         "quotient-underflow", "subnormal-result", "subnormal-diff",
                         "middle-branch", "outer-branch"}


def test_special_value_cases_hold_their_specials(full):
    dtype, fams = full
    fmt = _fmt(dtype)
    fam = next(f for f in fams if f.name == "nan-inf")
    flags = {f for c in fam.cases for f in c.flags}
    for slot in ("dy", "x1", "x2", "beta"):
        for kind in ("nan", "neg-nan", "snan", "neg-snan", "inf", "neg-inf"):
            assert f"{kind}-{slot}" in flags
    for c in fam.cases:
        for flag in c.flags:
            kind, _, slot = flag.rpartition("-")
            if slot in ("dy", "x1", "x2") and kind in ("nan", "neg-nan", "snan", "neg-snan"):
                vals = getattr(c, slot)
                cls = [F.classify(fmt, int(v)) for v in vals]
                want = F.FloatClass.SNAN if "snan" in kind else F.FloatClass.QNAN
                assert all(k is want and s == ("neg" in kind) for k, s in cls), flag


# ---------------------------------------------------------------- open cases: the alternatives' rules

def test_beta_zero_and_negative_alternatives_follow_their_rules(full):
    dtype, fams = full
    fmt = _fmt(dtype)
    fam = next(f for f in fams if f.name == "beta-special")
    neg = lambda b: int(b) ^ fmt.sign_mask  # noqa: E731
    seen = set()
    for c in fam.cases:
        beta = _value(fmt, c.beta)
        zero = "beta-zero" in c.flags
        negative = "beta-negative" in c.flags
        if not (zero or negative):
            continue
        assert c.result == "acceptable"
        mag = -beta if isinstance(beta, Fraction) else math.inf  # |beta|
        for j in range(c.n):
            d = _exact_diff(fmt, c.x1[j], c.x2[j])
            x1v, x2v = _value(fmt, c.x1[j]), _value(fmt, c.x2[j])
            if d is None:  # an infinite diff: its sign from the infinite operand
                if x1v is None or x2v is None or x1v == x2v:
                    continue
                d = math.inf if x1v == "inf" or x2v == "-inf" else -math.inf
            dy, ndy = int(c.dy[j]), neg(c.dy[j])
            alts = {k: int(v[j]) for k, v in c.alternatives.items()}
            if zero and d == 0:
                assert alts.get("dy", dy) == dy and alts.get("neg-dy", ndy) == ndy
                assert alts.get("zero", 0) == 0
                seen.add("zero")
            if negative:
                below = d < mag
                if "neg-branch-first" in alts:
                    assert alts["neg-branch-first"] == (ndy if below else dy)
                if "sign-of-diff" in alts:
                    assert alts["sign-of-diff"] == (dy if d > 0 else ndy)
                if "neg-branch-first-inclusive" in alts:
                    inside = d <= mag
                    assert alts["neg-branch-first-inclusive"] == (ndy if inside else dy)
                seen.add("negative")
    assert seen == {"zero", "negative"}


def test_beta_inf_outer_branch_alternative():
    fmt = F.FP16
    (fam,) = generate("fp16", 1, ["nan-inf"])
    (c,) = [c for c in fam.cases if c.beta == fmt.inf_bits]
    alt = c.alternatives["outer-branch"]
    for j in range(c.n):
        x1, x2 = int(c.x1[j]), int(c.x2[j])
        if x1 == fmt.inf_bits and F.classify(fmt, x2)[0] is not F.FloatClass.INF:
            assert alt[j] == c.dy[j]
        if x2 == fmt.inf_bits and F.classify(fmt, x1)[0] is not F.FloatClass.INF:
            assert alt[j] == c.dy[j] ^ fmt.sign_mask


def test_ftz_sensitive_flag_and_no_ftz_alternative(full):
    """Flushing is the profile's decision (the oracle-ftz column), never an alternative."""
    dtype, fams = full
    fmt = _fmt(dtype)
    fam = next(f for f in fams if f.name == "underflow")
    n = 0
    for c in fam.cases:
        assert "ftz" not in c.alternatives
        beta = np.array([c.beta], fmt.uint).view(fmt.dtype)[0]
        args = (c.dy.view(fmt.dtype), c.x1.view(fmt.dtype), c.x2.view(fmt.dtype), beta)
        from sl1conf.reference.oracle import smoothl1lossgrad as exact
        differs = (exact(*args, flush_subnormals=True).view(fmt.uint) != exact(*args).view(fmt.uint)).any()
        assert ("ftz-sensitive" in c.flags) == bool(differs)
        n += bool(differs)
    assert n >= 8


# ---------------------------------------------------------------- lengths, core masks, large

@pytest.fixture(scope="module", params=DTYPES)
def lengths_family(request):
    return request.param, generate(request.param, SEED, ["lengths"], large=True)


def test_compact_lengths_hit_body_tail_and_both(full):
    dtype, fams = full
    fam = next(f for f in fams if f.name == "lengths-compact")
    p_lengths = {c.n for c in fam.cases if c.variant == "p"}
    assert {0, 1, 2, 3, 1025} <= p_lengths
    for w in (4, 8, 16, 32, 64):
        assert {w - 1, w, w + 1} <= p_lengths  # tail only, body only, both
    split = {c.core_mask for c in fam.cases if c.variant == "s"}
    assert {(1 << k) - 1 for k in range(2, 9)} <= split


def test_lengths_family_has_the_required_lengths(lengths_family):
    dtype, fams = lengths_family
    fam = next(f for f in fams if f.name == "lengths")
    p_lengths = {c.n for c in fam.cases if c.variant == "p"}
    required = {0, 1, 2, 3}
    for w in (4, 8, 16, 32, 64):
        for m in range(w, 1025, w):
            required |= {m - 1, m, m + 1}
    assert required <= p_lengths
    primes = {n for n in range(2, 1026) if all(n % d for d in range(2, int(n ** 0.5) + 1))}
    assert primes <= p_lengths and set(EXTRA_PRIME_LENGTHS) <= p_lengths
    for c in fam.cases:
        assert c.call_length == c.n
        if c.n in primes:
            assert "prime-length" in c.flags
        if 0 < c.n < 4:
            assert "tail-only" in c.flags
        if c.n == 0:
            assert "length-zero" in c.flags
    # lengths that do not split evenly across 2..8 cores, on the shared version
    split = [(c.n, c.core_mask) for c in fam.cases if c.variant == "s"]
    for cores in range(2, 9):
        mask = (1 << cores) - 1
        ns = [n for n, m in split if m == mask]
        assert ns and all(n % cores for n in ns)
        assert any(n < cores for n in ns) or cores == 2
    assert all("uneven-core-split" in c.flags for c in fam.cases if c.variant == "s")
    # position data, not open values: no alternative arrays to store
    assert all(c.result == "valid" for c in fam.cases)


def test_core_mask_family(full):
    dtype, fams = full
    fam = next(f for f in fams if f.name == "core-masks")
    masks = {c.core_mask for c in fam.cases}
    assert {0, 0x55, 0xAA, 0x81, 0xFF} | {1 << i for i in range(8)} <= masks
    assert all(c.variant == "s" for c in fam.cases)
    # the same data under every mask of one length
    by_len = {}
    for c in fam.cases:
        by_len.setdefault(c.n, []).append(c)
    for n, cases in by_len.items():
        first = cases[0]
        assert len(cases) == (5 if n == 1000 else len(FM.CORE_MASKS))  # 1000: the manual's length, 5 masks
        for c in cases:
            assert np.array_equal(c.dy, first.dy) and np.array_equal(c.x1, first.x1)
            assert np.array_equal(c.x2, first.x2) and c.beta == first.beta
    zero = [c for c in fam.cases if c.core_mask == 0]
    assert zero and all("core-mask-zero" in c.flags and c.result == "acceptable" and not c.alternatives
                        and "R16" in c.note for c in zero)
    flags = {f for c in fam.cases for f in c.flags}
    assert {"single-core", "contiguous-mask", "non-contiguous-mask", "core-mask-all",
            "uneven-core-split"} <= flags


def test_large_family_only_when_asked(full):
    dtype, fams = full
    assert all(not f.large for f in fams)
    with pytest.raises(ValueError, match="large"):
        generate(dtype, SEED, ["large-random"])
    small, big = generate(dtype, SEED, ["signed-zero", "large-random"], large=True)
    assert small.name == "signed-zero" and not small.large
    assert big.large and big.id == 14 and big.name == "large-random"
    assert sum(c.n for c in big.cases) >= 1_000_000
    assert all(c.dy.dtype == _fmt(dtype).uint for c in big.cases)


@pytest.mark.parametrize("dtype", ["fp16", "fp32"])
def test_lengths_long_hits_tile_boundaries_ddr_sized_calls_and_splits(dtype):
    """lengths-long (certify's default run, never committed): one below, at and above every
    multiple it names, a call of 2^20 elements or more, uneven shared splits of long calls, and
    subnormals in every call so that flushing only in long calls shows."""
    from sl1conf.conformance.certify.engine import default_families, quick_families
    from sl1conf.conformance.vectors.families.lengths import LONG_MULTIPLES

    [fam] = generate(dtype, SEED, ["lengths-long"], large=True)
    private = {c.n for c in fam.cases if c.variant == "p"}
    for m in LONG_MULTIPLES:
        assert {m - 1, m, m + 1} <= private, m
    assert max(c.n for c in fam.cases) >= 1 << 20
    shared = [c for c in fam.cases if c.variant == "s"]
    assert shared and all(c.n % bin(c.core_mask).count("1") for c in shared)
    assert all({"subnormal-input", "ftz-sensitive"} <= set(c.flags) for c in fam.cases)
    assert all(c.result == "valid" for c in fam.cases)  # nothing open: no alternative arrays
    assert "lengths-long" in default_families() and "lengths-long" not in quick_families()
