"""The golden vector families: what is generated, and why.

Each family is aimed at one place where implementations of SmoothL1LossGrad go
wrong. The models:

* Wycheproof: every case carries ``flags`` naming its edge case, and a
  ``result`` of "valid" (the documentation settles the answer: the oracle's) or
  "acceptable" (the documentation leaves it open: the case lists every other
  acceptable answer as a named, full dx1 array in ``alternatives``, and says
  why in ``note``).
* Berkeley TestFloat: boundary exponent and significand patterns crossed with
  each other, plus weighted random over bit patterns.
* CMSIS-DSP's pattern files: lengths that hit the vector body only, the tail
  only, and both, for every plausible vector width.

Identifiers are stable: a family's ``id`` is never renumbered and a removed
family leaves a gap (ids are what vector files and reports refer to, e.g. case
"3.12" is case 12 of family 3). Names are stable too.

Determinism
-----------
:func:`generate` is a pure function of ``(dtype, seed, names, large)``. Each
family draws from its own ``numpy.random.Generator`` seeded from the family id
and the format (and the seed, for the *random* families only), so selecting a
subset of families never changes a family's content, and the canonical
(non-random) families are the same for every seed. The streams are those of
numpy's PCG64 ``Generator``; numpy does not promise that every ``Generator``
method draws the same numbers across numpy versions, so a vector set records
the numpy version it was made with (the writer's job) and is reproduced with it.

Element-level flags
-------------------
A flag that makes a claim about the elements (``diff-eq-beta``,
``rounded-diff-crosses-boundary``, ``pos-zero-result``, ...) holds for *every*
element of the case. Flags added by :func:`finish_case` from the data describe the
case as a whole (``subnormal-input``: some input is subnormal; ``ftz-sensitive``:
flushing changes some element; ``rounded-diff-sensitive``: rounding ``diff``
first changes some element).

Open behaviour: the alternatives
--------------------------------
:func:`finish_case` attaches, to every case, each alternative of
``rules.openbehaviour`` (the one policy: which other answers are acceptable where the
manual leaves the answer open, and why) whose array differs from the expected answer in at
least one element, and is not the same array as one already attached. Each alternative is
a whole dx1 array for one reason; the families that target one reason keep the others out
(no beta = 0 case has subnormal inputs, the lengths and core-mask data have no open element).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Optional, Sequence

import numpy as np

from sl1conf.conformance.vectors.sampling import hard_batch, random_batch
from sl1conf.adapters.base import FILL_BYTE
from sl1conf.conformance.vectors.cases import Family, VectorCase
from sl1conf.conformance.rules.openbehaviour import NOTES
from sl1conf.conformance.rules.openbehaviour import alternatives as open_alternatives
from sl1conf.reference import exact as X
from sl1conf.reference import formats as F
from sl1conf.reference.formats import Format

__all__ = [
    "FamilySpec", "FAMILIES", "FAMILY_NAMES", "family_by_name", "generate",
    "VECTOR_WIDTHS", "MAX_TABLE_LENGTH", "required_lengths", "COMPACT_LENGTHS", "CORE_MASKS", "LARGE_LENGTH",
    "finish_case",
]

VECTOR_WIDTHS = (4, 8, 16, 32, 64)
"""Plausible SIMD widths (elements): lengths one below, at and above each multiple."""

MAX_TABLE_LENGTH = 1025
"""The lengths family covers every multiple of the widths up to here (m + 1 <= 1025)."""

EXTRA_PRIME_LENGTHS = (1031, 2053, 4099)
"""Primes past the table (the table already holds every prime up to 1025)."""

LARGE_LENGTH = 1_000_003
"""The large family's length: prime, so no width or core count divides it."""

CORE_MASKS = (
    0xFF,                                                    # all eight cores
    0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80,          # every single core
    0x03, 0x07, 0x0F, 0x1F, 0x3F, 0x7F, 0xF0, 0x3C, 0xFE,    # contiguous
    0x55, 0xAA, 0x81, 0x5A, 0x24, 0x96,                      # non-contiguous
    0x00,                                                    # no core at all
)


# --------------------------------------------------------------------------
# Bit-pattern helpers
# --------------------------------------------------------------------------

def _u(fmt: Format, values) -> np.ndarray:
    """Bit patterns (Python ints or arrays of them) as the format's uint array."""
    return np.asarray(values, dtype=np.int64).astype(fmt.uint)


def _f(fmt: Format, bits) -> np.ndarray:
    return np.ascontiguousarray(bits, dtype=fmt.uint).view(fmt.dtype)


def _b(fmt: Format, values) -> np.ndarray:
    """Bits of binary64 values rounded once to the format (exact for the values used as such)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(values, dtype=np.float64).astype(fmt.dtype).view(fmt.uint)


def _v(fmt: Format, text: str) -> int:
    """Bits of a decimal or hex-float text (parse_value) or a fraction like "1/3", rounded once."""
    if "/" in text:
        return F.round_to_format(fmt, Fraction(text))
    return F.parse_value(fmt, text)[0]


def _f64(fmt: Format, bits) -> np.ndarray:
    with np.errstate(invalid="ignore"):  # signalling NaNs convert quietly
        return _f(fmt, bits).astype(np.float64)


def _one(fmt: Format) -> int:
    return fmt.emax << fmt.frac_bits


def _max(fmt: Format) -> int:
    return fmt.inf_bits - 1


def _min_normal(fmt: Format) -> int:
    return 1 << fmt.frac_bits


def _quiet_bit(fmt: Format) -> int:
    return 1 << (fmt.frac_bits - 1)


def _neg(fmt: Format, bits) -> "int | np.ndarray":
    """Sign flipped (exact negation, NaN payload kept)."""
    if isinstance(bits, np.ndarray):
        return (bits ^ np.array(fmt.sign_mask, fmt.uint)).astype(fmt.uint)
    return int(bits) ^ fmt.sign_mask


def _step(fmt: Format, bits: int, k: int) -> int:
    """The value k steps along the ordered line (-inf .. -0=+0 .. +inf)."""
    o = int(F.ordered(fmt, np.array([bits], fmt.uint))[0]) + k
    return o if o >= 0 else (-o) | fmt.sign_mask


def _quantum(fmt: Format, bits: int) -> float:
    """The spacing of the format at a finite value (its ulp), as binary64."""
    field = (int(bits) & fmt.exp_mask) >> fmt.frac_bits
    return 2.0 ** (max(field, 1) - fmt.emax - fmt.frac_bits)


def _is_sub(fmt: Format, bits) -> np.ndarray:
    b = np.asarray(bits).astype(fmt.uint)
    return ((b & fmt.exp_mask) == 0) & ((b & fmt.frac_mask) != 0)


def _cls(fmt: Format, bits: int) -> F.FloatClass:
    return F.classify(fmt, int(bits))[0]


def _cat(fmt: Format, *parts) -> np.ndarray:
    return np.concatenate([np.asarray(p, dtype=np.int64).reshape(-1) for p in parts]).astype(fmt.uint)


def _signs(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.where(rng.random(n) < 0.5, -1.0, 1.0)


def _rand_sig(fmt: Format, rng: np.random.Generator, n: int) -> np.ndarray:
    """Random significands in [1, 2) with every fraction bit random (binary64)."""
    return 1.0 + rng.integers(0, 1 << fmt.frac_bits, n) / float(1 << fmt.frac_bits)


def _dy_pool(fmt: Format, rng: np.random.Generator, n: int, *, big: bool = True) -> np.ndarray:
    """Finite normal dy: +-1, full-significand values on 2**[-6, 6], some +-max."""
    vals = _signs(rng, n) * _rand_sig(fmt, rng, n) * 2.0 ** rng.integers(-6, 7, n)
    bits = _b(fmt, vals)
    kind = rng.random(n)
    one = _u(fmt, np.where(rng.random(n) < 0.5, _one(fmt), _one(fmt) | fmt.sign_mask))
    bits = np.where(kind < 0.15, one, bits)
    if big:
        mx = _u(fmt, np.where(rng.random(n) < 0.5, _max(fmt), _max(fmt) | fmt.sign_mask))
        bits = np.where(kind > 0.96, mx, bits)
    return bits.astype(fmt.uint)


def _solve_x1(fmt: Format, x2: np.ndarray, target: int) -> tuple[np.ndarray, np.ndarray]:
    """x1 = x2 + target rounded to the format, and where x1 - x2 == target exactly."""
    t = float(_f64(fmt, _u(fmt, [target]))[0])
    with np.errstate(all="ignore"):
        x1 = _b(fmt, _f64(fmt, x2) + t)
    s, e = X.exact_diff(fmt, x1, x2)
    ok = X.eq(s, e, t) & np.isfinite(_f64(fmt, x1))
    return x1, ok


# --------------------------------------------------------------------------
# The cases' common post-pass: flags from the data, and the open alternatives
# --------------------------------------------------------------------------

def _beta_flags(fmt: Format, beta: int) -> list[str]:
    cls, sign = F.classify(fmt, beta)
    if cls is F.FloatClass.QNAN:
        return ["nan-beta"]
    if cls is F.FloatClass.SNAN:
        return ["snan-beta"]
    if cls is F.FloatClass.ZERO:
        return ["beta-zero"] + (["beta-neg-zero"] if sign else [])
    flags = ["beta-negative"] if sign else []
    if cls is F.FloatClass.INF:
        flags.append("beta-neg-inf" if sign else "beta-inf")
    elif cls is F.FloatClass.SUBNORMAL:
        flags.append("beta-subnormal")
    return flags


def _oracle(fmt: Format, dy, x1, x2, beta: int, ftz: bool = False) -> np.ndarray:
    from sl1conf.reference.fast_oracle import smoothl1lossgrad

    out = smoothl1lossgrad(_f(fmt, dy), _f(fmt, x1), _f(fmt, x2), _f(fmt, _u(fmt, [beta]))[0],
                           flush_subnormals=ftz)
    return np.ascontiguousarray(out).view(fmt.uint)


def _expected(fmt: Format, case: VectorCase) -> np.ndarray:
    """The answer the alternatives are compared with: the oracle's, or dx1 untouched
    (FILL_BYTE) where a correct call writes nothing (core_mask 0)."""
    if case.variant == "s" and case.core_mask == 0:
        return np.full(case.n * fmt.dtype.itemsize, FILL_BYTE, np.uint8).view(fmt.uint)
    return _oracle(fmt, case.dy, case.x1, case.x2, case.beta)


def finish_case(fmt: Format, case: VectorCase) -> VectorCase:
    """Flags from the data, and the alternatives that differ from the expected answer somewhere."""
    flags = list(case.flags) + _beta_flags(fmt, case.beta)
    if case.n and (_is_sub(fmt, case.dy) | _is_sub(fmt, case.x1) | _is_sub(fmt, case.x2)).any():
        flags.append("subnormal-input")
    if case.n and case.call_length == case.n:  # (a shorter call's data is chosen plain: nothing open)
        oracle = _expected(fmt, case)
        kept: dict = {}
        for name, alt in open_alternatives(fmt, case.dy, case.x1, case.x2, case.beta, variant=case.variant,
                                               core_mask=case.core_mask).items():
            if alt.shape != oracle.shape:
                raise AssertionError(f"alternative {name} has the wrong length")
            if (~F.same_result(fmt, alt, oracle)).any() and not any(
                    F.same_result(fmt, alt, other).all() for other in kept.values()):
                kept[name] = alt.astype(fmt.uint)
        if (~F.same_result(fmt, _oracle(fmt, case.dy, case.x1, case.x2, case.beta, ftz=True), oracle)).any():
            flags.append("ftz-sensitive")
        if "rounded-diff" in kept:
            flags.append("rounded-diff-sensitive")
        if kept:
            case.result = "acceptable"
            case.alternatives = kept
            case.note = "; ".join(f"{name}: {NOTES[name]}" for name in kept)
        elif case.variant == "s" and case.core_mask == 0:
            case.result = "acceptable"
            case.note = ("core_mask = 0 selects no core: nothing written is the expected answer; the manual "
                         "does not say, so certify records what an implementation does (R16) and the C "
                         "self-test demands nothing written")
    case.flags = tuple(dict.fromkeys(flags))
    return case


def _case(fmt: Format, dy, x1, x2, beta: int, flags, **kw) -> VectorCase:
    return VectorCase(dy=_u(fmt, dy), x1=_u(fmt, x1), x2=_u(fmt, x2), beta=int(beta),
                      flags=tuple(flags), **kw)


# --------------------------------------------------------------------------
# Family generators: (fmt, rng) -> list of VectorCase (before finish_case)
# --------------------------------------------------------------------------

def _boundary_betas(fmt: Format) -> list[tuple[int, tuple]]:
    """Betas for the boundary families: the documented range and around it, powers of two
    and not, tiny, subnormal and large ones. (bits, flags)."""
    texts = ["0.1", "0.2", "0.25", "0.3", "1/3", "0.5", "0.7", "0.75", "0.9", "1", "1.1",
             "1.5", "2", "3", "10", "100", "1000"]
    texts += ["30000"] if fmt.bits == 16 else ["1e-3", "1e6", "1e30"]
    out = []
    for text in texts:
        bits = _v(fmt, text)
        pow2 = (bits & fmt.frac_mask) == 0
        flags = ("beta-pow2",) if pow2 else ("beta-not-pow2",)
        if text in ("0.1", "0.2", "0.3", "1/3", "0.7", "0.9", "1.1"):
            flags += ("beta-inexact-decimal",)
        if 0.1 <= float(_f64(fmt, _u(fmt, [bits]))[0]) <= 1.0:
            flags += ("beta-documented-range",)
        out.append((bits, flags))
    mn = _min_normal(fmt)
    out += [(mn, ("beta-pow2", "beta-min-normal")), (3 * mn + 1, ("beta-not-pow2", "beta-tiny")),
            (fmt.frac_mask, ("beta-not-pow2",)), (_max(fmt), ("beta-not-pow2", "beta-max"))]
    return out


def _x2_candidates(fmt: Format, rng: np.random.Generator, target: int, m: int) -> np.ndarray:
    """Candidate x2 for x1 = x2 + target: zeros and +-target first, then multiples of the
    target's ulp and random values on its scale (most of which _solve_x1 keeps)."""
    tau = abs(float(_f64(fmt, _u(fmt, [target]))[0]))
    q = _quantum(fmt, target)
    ints = rng.integers(-(1 << (fmt.precision + 1)), 1 << (fmt.precision + 1), m)
    mult = _b(fmt, ints * q)
    scale = _b(fmt, _signs(rng, m) * _rand_sig(fmt, rng, m) * tau * 2.0 ** rng.integers(-8, 9, m))
    pick = rng.random(m) < 0.5
    head = [0, fmt.sign_mask, _neg(fmt, target), target]
    return _cat(fmt, head, np.where(pick, mult, scale))


def _exact_pairs(fmt: Format, rng: np.random.Generator, target: int, n: int):
    """n pairs with x1 - x2 == target exactly (fewer if the format has fewer)."""
    x2 = _x2_candidates(fmt, rng, target, 8 * n)
    x1, ok = _solve_x1(fmt, x2, target)
    idx = np.flatnonzero(ok)[:n]
    return x1[idx], x2[idx]


def _fam_boundary_exact(fmt: Format, rng: np.random.Generator) -> list:
    cases = []
    for beta, bflags in _boundary_betas(fmt):
        for sign, flag in ((1, "diff-eq-beta"), (-1, "diff-eq-neg-beta")):
            target = beta if sign > 0 else _neg(fmt, beta)
            x1, x2 = _exact_pairs(fmt, rng, target, 48)
            dy = _dy_pool(fmt, rng, len(x1))
            cases.append(_case(fmt, dy, x1, x2, beta, (flag, "middle-branch") + bflags))
    return cases


def _fam_boundary_neighbours(fmt: Format, rng: np.random.Generator) -> list:
    cases = []
    for beta, bflags in _boundary_betas(fmt):
        if beta == _max(fmt):
            continue  # its upper neighbours are not finite
        for sign in (1, -1):
            edge = beta if sign > 0 else _neg(fmt, beta)
            for k in (-2, -1, 1, 2):
                target = _step(fmt, edge, k)
                above = k > 0
                where = "beta" if sign > 0 else "neg-beta"
                flag = f"diff-{'above' if above else 'below'}-{where}-{abs(k)}ulp"
                branch = "outer-branch" if (above == (sign > 0)) else "middle-branch"
                x1, x2 = _exact_pairs(fmt, rng, target, 24)
                dy = _dy_pool(fmt, rng, len(x1))
                cases.append(_case(fmt, dy, x1, x2, beta, (flag, branch) + bflags))
    return cases


def _fam_boundary_rounded(fmt: Format, rng: np.random.Generator) -> list:
    """x1 near +-beta and x2 about half an ulp of it (or the roles swapped), kept where the
    exact diff and the diff rounded to the format lie differently against +-beta."""
    cases = []
    for beta, bflags in _boundary_betas(fmt):
        if beta in (_max(fmt), fmt.frac_mask):
            continue  # subnormal diffs are exact; max has no room above
        beta_f = float(_f64(fmt, _u(fmt, [beta]))[0])
        for sign in (1, -1):
            edge = beta if sign > 0 else _neg(fmt, beta)
            m = 1200
            near = _u(fmt, [_step(fmt, edge, int(k)) for k in rng.integers(-1, 2, m)])
            q = np.array([_quantum(fmt, int(b)) for b in near])
            delta = _b(fmt, _signs(rng, m) * _rand_sig(fmt, rng, m) * q * 2.0 ** rng.integers(-4, 1, m))
            swap = rng.random(m) < 0.5
            x1 = np.where(swap, delta, near).astype(fmt.uint)
            x2 = np.where(swap, _neg(fmt, near), delta).astype(fmt.uint)
            s, e = X.exact_diff(fmt, x1, x2)
            r = X.rounded_diff(fmt, x1, x2).astype(np.float64)
            pe, pr = X.position(s, e, beta_f), X.position(r, np.zeros(m), beta_f)
            inside = pe == 0
            for side, sel in (("exact-diff-inside", (pe != pr) & inside),
                              ("exact-diff-outside", (pe != pr) & ~inside)):
                idx = np.flatnonzero(sel)[:32]
                if not len(idx):
                    continue
                where = "diff-near-beta" if sign > 0 else "diff-near-neg-beta"
                dy = _dy_pool(fmt, rng, len(idx), big=False)
                cases.append(_case(fmt, dy, x1[idx], x2[idx], beta,
                                   ("rounded-diff-crosses-boundary", where, side) + bflags))
    return cases


def _fam_overflow(fmt: Format, rng: np.random.Generator) -> list:
    """The edge of the format's range (fp16-overflow for fp16, range-overflow for fp32)."""
    cases = []
    mx, one = _max(fmt), _one(fmt)
    mxf = float(_f64(fmt, _u(fmt, [mx]))[0])
    prev = mx - 1
    n = 32
    # x1 - x2 beyond the largest finite value, both signs of the overflow.
    big1 = _b(fmt, mxf * (0.5 + 0.5 * rng.random(n)))
    big2 = _b(fmt, mxf * (0.5 + 0.5 * rng.random(n)))
    big1[:4] = [mx, mx, prev, mx]
    big2[:4] = [mx, prev, mx, 1]  # 1: the tiniest subtrahend, exact diff just above max
    x1 = _cat(fmt, big1, _neg(fmt, big1))
    x2 = _cat(fmt, _neg(fmt, big2), big2)
    x1[n + 3], x2[n + 3] = mx, _neg(fmt, _min_normal(fmt))  # diff = max + tiny: rounds to max
    dy = _dy_pool(fmt, rng, 2 * n)
    for beta, flags in ((one, ()), (_v(fmt, "0.1"), ()), (mx, ("beta-max",)),
                        (fmt.inf_bits, ())):
        cases.append(_case(fmt, dy, x1, x2, beta, ("diff-overflow", "input-max") + flags))

    # diff * dy beyond the range while diff / beta * dy is finite (beta > 1, 1 < |diff| <= beta).
    betas = ["4", "64", "1000", "30000"] if fmt.bits == 16 else ["4", "1048576", "1e30", "1e38"]
    for text in betas:
        beta = _v(fmt, text)
        bf = float(_f64(fmt, _u(fmt, [beta]))[0])
        mag = bf * (0.5 + 0.5 * rng.random(n))
        mag = np.maximum(mag, 1.5)
        d = _b(fmt, _signs(rng, n) * mag)
        d[:2] = [beta, _neg(fmt, beta)]
        dmag = np.abs(_f64(fmt, d))
        lo = np.minimum(mxf / dmag * 1.01, mxf)
        dyv = _signs(rng, n) * (lo + (mxf - lo) * rng.random(n))
        dyb = _b(fmt, dyv)
        dyb[2:4] = [mx, mx | fmt.sign_mask]
        keep = np.abs(_f64(fmt, d) * _f64(fmt, dyb)) > mxf
        x2 = np.zeros(n, np.int64)
        cases.append(_case(fmt, dyb[keep], d[keep], x2[keep], beta,
                           ("product-overflow", "middle-branch", "result-finite")))

    # 1 / beta beyond the range: beta below 1 / max (a subnormal in both formats).
    sub_betas = ([_v(fmt, "0x1p-17"), _v(fmt, "0x1p-20"), 5, 1] if fmt.bits == 16
                 else [_v(fmt, "0x1p-129"), _v(fmt, "0x1p-140"), 5, 1])
    for beta in sub_betas:
        k = rng.integers(-3 * beta - 3, 3 * beta + 4, n)
        base = rng.integers(0, 1 << (fmt.frac_bits + 2), n)
        x2 = _u(fmt, np.where(rng.random(n) < 0.5, 0, base))
        x1 = _b(fmt, _f64(fmt, x2) + k * 2.0 ** (fmt.emin - fmt.frac_bits))
        x1[:2] = [beta, _neg(fmt, beta)]
        x2[:2] = [0, 0]
        dy = _dy_pool(fmt, rng, n)
        cases.append(_case(fmt, dy, x1, x2, beta, ("recip-overflow",)))

    # dy at and near +-max and +-inf, diff in every branch (beta = 1): results at the largest
    # finite value come from dy = +-max with diff/beta at or within half an ulp of 1.
    eps = 2.0 ** -(fmt.precision + 2)  # exact diff/beta = 1 - eps: the product rounds to max
    tiny = _b(fmt, [eps])[0]
    x1_list = [2.0, -2.0, 1.0, -1.0, 0.5, -0.5, 0.0, 1.0, -1.0, 0.999, 3.0]
    x1b = _b(fmt, x1_list)
    x2b = np.zeros(len(x1_list), np.int64)
    x2b[7], x2b[8] = tiny, _neg(fmt, tiny)
    for dyv, flags in ((mx, ("dy-max",)), (mx | fmt.sign_mask, ("dy-neg-max",)),
                       (prev, ("dy-near-max",)), (prev | fmt.sign_mask, ("dy-near-neg-max",)),
                       (fmt.inf_bits, ("inf-dy",)), (fmt.inf_bits | fmt.sign_mask, ("neg-inf-dy",))):
        dy = np.full(len(x1_list), dyv, np.int64)
        cases.append(_case(fmt, dy, x1b, x2b, one, flags))
    # results at the largest finite value, every element
    dy = np.array([mx, mx | fmt.sign_mask, mx, mx | fmt.sign_mask, mx, mx], np.int64)
    x1r = _cat(fmt, [one, one, _neg(fmt, one), one, _b(fmt, [3.0])[0], _b(fmt, [-3.0])[0]])
    x2r = _cat(fmt, [0, 0, 0, tiny, 0, 0])
    cases.append(_case(fmt, dy, x1r, x2r, one, ("result-max",)))
    # inputs at +-max without overflow of the diff
    x1m = _cat(fmt, [mx, mx, prev, mx | fmt.sign_mask, mx, 0])
    x2m = _cat(fmt, [mx, prev, mx, mx | fmt.sign_mask, 0, mx])
    cases.append(_case(fmt, _dy_pool(fmt, rng, 6), x1m, x2m, one, ("input-max",)))
    return cases


def _fam_underflow(fmt: Format, rng: np.random.Generator) -> list:
    cases = []
    n = 48
    one = _one(fmt)
    sub_min = 2.0 ** (fmt.emin - fmt.frac_bits)
    min_n = 2.0 ** fmt.emin

    def subs(k):  # random subnormal patterns, both signs
        mags = rng.integers(1, fmt.frac_mask + 1, k)
        mags[:3] = [1, fmt.frac_mask, 1 << (fmt.frac_bits - 1)][:k]
        return _u(fmt, np.where(rng.random(k) < 0.5, mags, mags | fmt.sign_mask))

    # subnormal inputs, one slot at a time and all together, diff in every branch (beta = 1)
    grid = _b(fmt, np.tile([2.0, -2.0, 0.5, -0.5, 1.0, -1.0, 0.0, 0.25], n // 8))
    for slot in ("dy", "x1", "x2", "all"):
        dy = _dy_pool(fmt, rng, n, big=False)
        x1, x2 = grid.copy(), np.zeros(n, fmt.uint)
        if slot in ("dy", "all"):
            dy = subs(n)
        if slot in ("x1", "all"):
            x1 = subs(n)
            x2 = grid.copy() if slot == "x1" else x2
        if slot in ("x2", "all"):
            x2 = subs(n)
        flag = "subnormal-inputs" if slot == "all" else f"subnormal-{slot}"
        cases.append(_case(fmt, dy, x1, x2, one, (flag,)))

    # normal inputs whose difference is subnormal; beta and dy keep the result normal
    k1 = rng.integers(0, 1 << fmt.frac_bits, n)
    k2 = rng.integers(0, 1 << fmt.frac_bits, n)
    x1 = _u(fmt, (1 << fmt.frac_bits) | k1)
    x2 = _u(fmt, (1 << fmt.frac_bits) | k2)
    x2[0] = fmt.frac_mask  # the largest subnormal: min normal minus it is the smallest one
    x1[0] = 1 << fmt.frac_bits
    beta = _b(fmt, [min_n])[0]
    dy = _b(fmt, _signs(rng, n) * _rand_sig(fmt, rng, n) * 2.0 ** rng.integers(0, 4, n))
    cases.append(_case(fmt, dy, x1, x2, beta, ("subnormal-diff", "middle-branch")))

    # subnormal results from the middle line (normal inputs), ties and underflow to zero included
    e_d = rng.integers(fmt.emin // 2 - 2, fmt.emin // 2 + 2, n)
    d = _b(fmt, _signs(rng, n) * _rand_sig(fmt, rng, n) * 2.0 ** e_d)
    e_y = (fmt.emin - fmt.frac_bits // 2) - e_d + rng.integers(-2, 3, n)
    dy = _b(fmt, _signs(rng, n) * _rand_sig(fmt, rng, n) * 2.0 ** e_y)
    cases.append(_case(fmt, dy, d, np.zeros(n, np.int64), one, ("subnormal-result", "middle-branch")))
    # exact results of half the smallest subnormal (a tie: rounds to zero) and 0.75 of it
    half = 2.0 ** ((fmt.emin - fmt.frac_bits - 1) // 2)
    other = sub_min / 2 / half
    dt = _b(fmt, [half, -half, half * 1.5, -half * 1.5, half * 0.5, -half * 0.5])
    yt = _b(fmt, [other, other, other, -other, other, -other])
    cases.append(_case(fmt, yt, dt, np.zeros(6, np.int64), one,
                       ("subnormal-result", "underflow-tie", "middle-branch")))
    # outer branches pass subnormal dy through (sign flipped for -dy)
    dsub = subs(16)
    x1o = _b(fmt, np.tile([2.0, -2.0], 8))
    cases.append(_case(fmt, dsub, x1o, np.zeros(16, np.int64), one,
                       ("subnormal-dy", "subnormal-result", "outer-branch")))

    # diff * dy underflows (into the subnormals, or below half the smallest subnormal) while
    # diff / beta * dy is normal: a tiny beta scales it back up.
    for e_b in (fmt.emin // 2 + 1, (fmt.emin - fmt.frac_bits) // 2 + 1):
        beta = _b(fmt, [2.0 ** e_b])[0]
        frac = 0.5 + 0.5 * rng.random(n)
        d = _b(fmt, _signs(rng, n) * frac * 2.0 ** e_b)
        dy = _b(fmt, _signs(rng, n) * _rand_sig(fmt, rng, n) * 2.0 ** rng.integers(fmt.emin, fmt.emin + 4, n))
        prod = np.abs(_f64(fmt, d) * _f64(fmt, dy))
        keep = (prod < min_n) & (np.abs(_f64(fmt, d) / 2.0 ** e_b * _f64(fmt, dy)) >= min_n)
        cases.append(_case(fmt, dy[keep], d[keep], np.zeros(int(keep.sum()), np.int64), beta,
                           ("product-underflow", "middle-branch", "result-normal")))

    # diff / beta underflows (tiny diff, large beta) while diff / beta * dy is representable
    beta = _b(fmt, [2.0 ** (fmt.frac_bits + 3)])[0]  # diff / beta below half the smallest subnormal
    d = _b(fmt, _signs(rng, n) * _rand_sig(fmt, rng, n) * min_n)
    d[:4] = [1, 1 | fmt.sign_mask, fmt.frac_mask, 1 << fmt.frac_bits]
    dy = _b(fmt, _signs(rng, n) * _rand_sig(fmt, rng, n) * 2.0 ** (fmt.emax - 1))
    cases.append(_case(fmt, dy, d, np.zeros(n, np.int64), beta,
                       ("quotient-underflow", "middle-branch")))

    # subnormal betas at the boundary and inside it
    for beta in (1, 3, fmt.frac_mask):
        bf = float(_f64(fmt, _u(fmt, [beta]))[0])
        ks = np.array([1, -1, 2, -2, 0.5, -0.5, 0, 3, -3, 1, -1, 0.25])
        x1 = _b(fmt, ks * bf)
        dy = _dy_pool(fmt, rng, len(ks), big=False)
        cases.append(_case(fmt, dy, x1, np.zeros(len(ks), np.int64), beta, ("subnormal-beta",)))
    return cases


def _specials(fmt: Format) -> list[tuple[str, int]]:
    q = _quiet_bit(fmt)
    payload = int("55" * 8, 16) & (q - 1)
    return [("nan", fmt.qnan_bits), ("neg-nan", fmt.qnan_bits | fmt.sign_mask),
            ("snan", fmt.inf_bits | 1), ("neg-snan", fmt.inf_bits | 1 | fmt.sign_mask),
            ("nan-payload", fmt.qnan_bits | payload), ("snan-payload", fmt.inf_bits | payload),
            ("inf", fmt.inf_bits), ("neg-inf", fmt.inf_bits | fmt.sign_mask)]


def _branch_grid(fmt: Format, rng: np.random.Generator, scale: float, n_rand: int = 8):
    """(x1, x2) covering every branch for a beta of magnitude ``scale``: diffs of +-4, +-2,
    +-1 (exact), +-1/2, 0 times the scale with x2 = 0 and with x1 = 0, random x2 with
    x1 = x2 + d rounded, equal inputs, and (-0) - (+0)."""
    ks = np.array([4.0, -4.0, 2.0, -2.0, 1.0, -1.0, 0.5, -0.5, 0.999, -0.999, 1.001, -1.001, 0.0])
    with np.errstate(over="ignore"):
        d = _b(fmt, ks * scale)
    x1 = [d, np.zeros(len(ks), np.int64)]
    x2 = [np.zeros(len(ks), np.int64), _neg(fmt, d)]
    r = _b(fmt, _signs(rng, n_rand) * _rand_sig(fmt, rng, n_rand) * scale * 2.0 ** rng.integers(-3, 4, n_rand))
    kk = ks[rng.integers(0, len(ks), n_rand)]
    with np.errstate(over="ignore", invalid="ignore"):
        x1.append(_b(fmt, _f64(fmt, r) + kk * scale))
    x2.append(r)
    x1.append(r)
    x2.append(r)  # diff = +0
    x1.append([fmt.sign_mask])
    x2.append([0])  # diff = -0
    return _cat(fmt, *x1), _cat(fmt, *x2)


def _fam_nan_inf(fmt: Format, rng: np.random.Generator) -> list:
    cases = []
    one = _one(fmt)
    x1g, x2g = _branch_grid(fmt, rng, 1.0, n_rand=4)
    m = len(x1g)
    for slot in ("dy", "x1", "x2"):
        for kind, bits in _specials(fmt):
            dy, x1, x2 = _dy_pool(fmt, rng, m, big=False), x1g.copy(), x2g.copy()
            {"dy": dy, "x1": x1, "x2": x2}[slot][:] = bits
            cases.append(_case(fmt, dy, x1, x2, one, (f"{kind}-{slot}",)))
    # inf - inf, both orders and signs, and infinities against finite values
    infs = [fmt.inf_bits, fmt.inf_bits | fmt.sign_mask]
    x1 = _cat(fmt, [infs[0], infs[1], infs[0], infs[1]])
    x2 = _cat(fmt, [infs[0], infs[1], infs[1], infs[0]])
    cases.append(_case(fmt, _dy_pool(fmt, rng, 4, big=False), x1, x2, one,
                       ("inf-x1", "inf-x2", "inf-minus-inf")))
    # special values in beta, with infinite diffs among the elements
    x1s = _cat(fmt, x1g, infs, [0, 0])
    x2s = _cat(fmt, x2g, [0, 0], infs)
    for kind, bits in _specials(fmt):
        dy = _dy_pool(fmt, rng, len(x1s), big=False)
        cases.append(_case(fmt, dy, x1s, x2s, bits, (f"{kind}-beta",)))
    # every input special at once: {qnan, snan, +inf, -inf, 1} cubed
    vals = [fmt.qnan_bits, fmt.inf_bits | 1, fmt.inf_bits, fmt.inf_bits | fmt.sign_mask, one]
    grid = np.array(np.meshgrid(vals, vals, vals, indexing="ij")).reshape(3, -1)
    cases.append(_case(fmt, grid[0], grid[1], grid[2], one, ("special-cross",)))
    return cases


def _fam_signed_zero(fmt: Format, rng: np.random.Generator) -> list:
    """Cases grouped by the sign of the zero every element must return (beta = 1):
    x1 == x2 (diff = +0) and (-0) - (+0) (diff = -0), and dy = +-0 in every branch."""
    cases = []
    one, sm = _one(fmt), fmt.sign_mask
    pz, nz = 0, sm
    r = _b(fmt, _signs(rng, 6) * _rand_sig(fmt, rng, 6) * 2.0 ** rng.integers(-8, 8, 6))
    # diff = +0: x1 == x2 (nonzero or zero), (+0) - (-0), (-0) - (-0), (+0) - (+0)
    x1p = _cat(fmt, r, [pz, nz, pz, _max(fmt)])
    x2p = _cat(fmt, r, [nz, nz, pz, _max(fmt)])
    k = len(x1p)

    def pos_dy(n):
        return _b(fmt, _rand_sig(fmt, rng, n) * 2.0 ** rng.integers(-6, 6, n))

    cases.append(_case(fmt, pos_dy(k), x1p, x2p, one, ("zero-diff", "pos-zero-result")))
    cases.append(_case(fmt, _neg(fmt, pos_dy(k)), x1p, x2p, one, ("zero-diff", "neg-zero-result")))
    # diff = -0: (-0) - (+0) only
    cases.append(_case(fmt, pos_dy(3), [nz] * 3, [pz] * 3, one,
                       ("neg-zero-diff", "neg-zero-x1", "neg-zero-result")))
    cases.append(_case(fmt, _neg(fmt, pos_dy(3)), [nz] * 3, [pz] * 3, one,
                       ("neg-zero-diff", "neg-zero-x1", "pos-zero-result")))
    # dy = +-0: middle line (sign of diff xor sign of dy), outer lines (dy, -dy)
    mid_p = _b(fmt, [0.5, 0.25, 0.999, 1.0])  # diff > 0 inside, diff == beta
    mid_n = _neg(fmt, mid_p)
    out_p = _b(fmt, [2.0, 1.5, 100.0])
    out_n = _neg(fmt, out_p)
    for dyz, dyflag in ((pz, "pos-zero-dy"), (nz, "neg-zero-dy")):
        for x1, flags, res_sign in (
                (mid_p, ("middle-branch",), 0), (mid_n, ("middle-branch",), 1),
                (out_p, ("outer-branch",), 0), (out_n, ("outer-branch",), 1)):
            sign = res_sign ^ (1 if dyz else 0)
            res = "neg-zero-result" if sign else "pos-zero-result"
            cases.append(_case(fmt, [dyz] * len(x1), x1, np.zeros(len(x1), np.int64), one,
                               (dyflag,) + flags + (res,)))
    # a middle result that underflows to zero keeps the exact result's sign
    tiny_d = 2.0 ** (fmt.emin // 2)
    tiny_y = 2.0 ** ((fmt.emin - fmt.frac_bits) - fmt.emin // 2 - 3)
    for sign, res in ((1.0, "pos-zero-result"), (-1.0, "neg-zero-result")):
        d = _b(fmt, [tiny_d, -tiny_d, tiny_d * 1.5, -tiny_d * 1.25])
        y = _b(fmt, sign * np.array([tiny_y, -tiny_y, tiny_y, -tiny_y]))
        cases.append(_case(fmt, y, d, np.zeros(4, np.int64), one, ("underflow-to-zero", res)))
    # +-0 in x1 or x2 alone (nonzero results), for completeness of "+-0 in each input"
    x_other = _b(fmt, [2.0, -2.0, 0.5, -0.5, 1.0, -1.0])
    for z, zflag in ((pz, "zero-x1"), (nz, "neg-zero-x1")):
        cases.append(_case(fmt, _dy_pool(fmt, rng, 6, big=False), [z] * 6, x_other, one, (zflag,)))
    for z, zflag in ((pz, "zero-x2"), (nz, "neg-zero-x2")):
        cases.append(_case(fmt, _dy_pool(fmt, rng, 6, big=False), x_other, [z] * 6, one, (zflag,)))
    return cases


def _fam_beta_special(fmt: Format, rng: np.random.Generator) -> list:
    mn, mx = _min_normal(fmt), _max(fmt)
    large = ["100", "1000", "30000"] if fmt.bits == 16 else ["1000", "1e10", "1e30"]
    tiny = _v(fmt, "0x1p-10") if fmt.bits == 16 else _v(fmt, "0x1p-100")
    betas = [(mn, ("beta-tiny", "beta-min-normal")), (2 * mn + 5, ("beta-tiny",)), (tiny, ("beta-tiny",)),
             (1, ("beta-min-subnormal",)), (3, ()), (fmt.frac_mask, ("beta-max-subnormal",)),
             (1 << (fmt.frac_bits - 1), ())]
    betas += [(_v(fmt, f"0.{i}" if i < 10 else "1"), ("beta-documented-range",)) for i in range(1, 11)]
    betas += [(_v(fmt, t), ("beta-large",)) for t in large] + [(mx, ("beta-large", "beta-max"))]
    betas += [(0, ()), (fmt.sign_mask, ())]
    betas += [(_neg(fmt, _v(fmt, t)), ()) for t in ("0.1", "0.5", "1", "2")]
    betas += [(mx | fmt.sign_mask, ("beta-neg-max",)), (1 | fmt.sign_mask, ("beta-neg-subnormal",))]
    betas += [(bits, ()) for _, bits in _specials(fmt)]
    cases = []
    for beta, flags in betas:
        cls = _cls(fmt, beta)
        bf = abs(float(_f64(fmt, _u(fmt, [beta]))[0]))
        scale = bf if cls in (F.FloatClass.NORMAL, F.FloatClass.SUBNORMAL) else 1.0
        x1, x2 = _branch_grid(fmt, rng, scale)
        infs = [fmt.inf_bits, fmt.inf_bits | fmt.sign_mask]
        x1, x2 = _cat(fmt, infs, [0, 0], x1), _cat(fmt, [0, 0], infs, x2)  # infinite diffs
        if cls is F.FloatClass.SUBNORMAL or scale < 2.0 ** (fmt.emin + fmt.frac_bits):
            dy = _dy_pool(fmt, rng, len(x1), big=False)
        else:
            dy = _dy_pool(fmt, rng, len(x1))
        dy[-3:] = [0, fmt.sign_mask, _one(fmt)]  # zero dy at a zero diff too
        cases.append(_case(fmt, dy, x1, x2, beta, flags))
    return cases


def required_lengths(limit: int = MAX_TABLE_LENGTH) -> list[int]:
    """0, 1, 2, 3 and m - 1, m, m + 1 for every multiple m of every width with m + 1 <= limit."""
    out = {0, 1, 2, 3}
    for w in VECTOR_WIDTHS:
        for m in range(w, limit, w):
            out.update((m - 1, m, m + 1))
    return sorted(n for n in out if n <= limit)


def _plain_batch(fmt: Format, n: int, rng: np.random.Generator, beta: int):
    """random_batch data with every element whose answer is open replaced by a settled one.

    The lengths and core-mask families test *where* an element sits, not what it holds:
    their cases stay "valid" (no alternative arrays to store) when no element depends on
    flushing or on rounding diff first. Such an element (ftz oracle != oracle, or the
    rounded diff on another side of +-beta) becomes x1 = +-1.5 * beta, x2 = +0 (an outer
    line, exact diff) with a normal dy. beta must be positive and normal.
    """
    bt = random_batch(fmt, n, rng, beta=beta)
    dy, x1, x2 = bt.dy.copy(), bt.x1.copy(), bt.x2.copy()
    if not n:
        return dy, x1, x2
    beta_f = float(_f64(fmt, _u(fmt, [beta]))[0])
    s, e = X.exact_diff(fmt, x1, x2)
    r = X.rounded_diff(fmt, x1, x2).astype(np.float64)
    moved = X.position(s, e, beta_f) != X.position(r, np.zeros(n), beta_f)
    ftz = ~F.same_result(fmt, _oracle(fmt, dy, x1, x2, beta), _oracle(fmt, dy, x1, x2, beta, ftz=True))
    bad = moved | ftz | _is_sub(fmt, dy) | _is_sub(fmt, x1) | _is_sub(fmt, x2)
    k = int(bad.sum())
    if k:
        x1[bad] = _b(fmt, _signs(rng, k) * 1.5 * beta_f)
        x2[bad] = 0
        dy[bad] = _b(fmt, _signs(rng, k) * _rand_sig(fmt, rng, k))
    return dy, x1, x2


def _is_prime(n: int) -> bool:
    return n > 1 and all(n % d for d in range(2, int(n ** 0.5) + 1))


def _length_flags(n: int) -> list[str]:
    flags = []
    if n == 0:
        flags.append("length-zero")
    elif n < VECTOR_WIDTHS[0]:
        flags.append("tail-only")  # shorter than every width
    elif n % VECTOR_WIDTHS[-1] == 0:
        flags.append("body-only")  # a whole number of vectors of every width
    else:
        flags.append("body-and-tail")
    if n:
        for w in VECTOR_WIDTHS:
            flags.append(f"w{w}-" + ("tail-only" if n < w else "body-only" if n % w == 0 else "body-and-tail"))
    if _is_prime(n):
        flags.append("prime-length")
    return flags


def _sliced(fmt: Format, rng: np.random.Generator, lengths: list[int], beta: int) -> list:
    """One _plain_batch for all the lengths, cut into consecutive pieces (one draw, not many)."""
    dy, x1, x2 = _plain_batch(fmt, sum(lengths), rng, beta)
    cuts = np.cumsum([0] + list(lengths))
    return [(dy[a:b].copy(), x1[a:b].copy(), x2[a:b].copy()) for a, b in zip(cuts[:-1], cuts[1:])]


COMPACT_LENGTHS = (0, 1, 2, 3, 4, 5, 7, 8, 9, 11, 13, 15, 16, 17, 19, 23, 29, 31, 32, 33, 37, 63, 64, 65, 127, 128, 129,
                   255, 256, 257, 511, 512, 513, 1023, 1024, 1025)
"""The canonical set's lengths: the body only, the tail only and both for every width
(m - 1, m, m + 1 around 4, 8, 16, 32, 64 and 128..1024), and primes."""


def _fam_lengths(fmt: Format, rng: np.random.Generator) -> list:
    return _length_cases(fmt, rng, required_lengths() + list(EXTRA_PRIME_LENGTHS))


def _fam_lengths_compact(fmt: Format, rng: np.random.Generator) -> list:
    cases = _length_cases(fmt, rng, list(COMPACT_LENGTHS))
    # The length argument below the buffers: 0 and negative must write nothing at all, 5 of 9
    # nothing past the fifth element (the buffers are longer than the call, as on a board).
    one = _one(fmt)
    for length, flags in ((0, ["length-zero", "buffers-longer-than-length"]),
                          (-1, ["negative-length", "buffers-longer-than-length"]),
                          (5, ["buffers-longer-than-length"])):
        dy, x1, x2 = _plain_batch(fmt, 9, rng, one)
        for variant in ("p", "s"):
            cases.append(_case(fmt, dy, x1, x2, one, flags, variant=variant, core_mask=0xFF, length=length))
    return cases


def _length_cases(fmt: Format, rng: np.random.Generator, lengths: list) -> list:
    betas = [_v(fmt, t) for t in ("1", "0.1", "0.5", "0.25", "0.3", "2", "1/3")]  # TYPICAL_BETAS
    calls = [(n, "p", 0xFF, _length_flags(n)) for n in lengths]
    # shared variant: lengths that do not split evenly across 2..8 cores
    for c in range(2, 9):
        for n in dict.fromkeys([1, c - 1, c + 1, 2 * c + 1, 4 * c - 1, 65, 255, 1001]):
            if n > 0 and n % c:
                flags = ["uneven-core-split"] + (["fewer-elements-than-cores"] if n < c else [])
                calls.append((n, "s", (1 << c) - 1, flags + _length_flags(n)))
    # beta cycles through the typical ones; each beta's data is one draw, sliced in call order
    data: dict = {}
    for k, beta in enumerate(betas):
        mine = [i for i in range(len(calls)) if i % len(betas) == k]
        for i, piece in zip(mine, _sliced(fmt, rng, [calls[i][0] for i in mine], beta)):
            data[i] = (beta, piece)
    cases = []
    for i, (n, variant, mask, flags) in enumerate(calls):
        beta, (dy, x1, x2) = data[i]
        cases.append(_case(fmt, dy, x1, x2, beta, flags, variant=variant, core_mask=mask))
    return cases


def _mask_flags(mask: int) -> list[str]:
    bits = bin(mask).count("1")
    if mask == 0:
        return ["core-mask-zero"]
    flags = ["core-mask-all"] if mask == 0xFF else []
    if bits == 1:
        flags.append("single-core")
    else:
        low = mask & -mask
        contiguous = ((mask // low) & ((mask // low) + 1)) == 0
        flags.append("contiguous-mask" if contiguous else "non-contiguous-mask")
    return flags


def _fam_core_masks(fmt: Format, rng: np.random.Generator) -> list:
    """The same data under every mask: results must not depend on which cores take part."""
    beta = _one(fmt)
    manual = _plain_batch(fmt, 1000, rng, beta)  # the manual's example length, under a few masks
    mid = _plain_batch(fmt, 257, rng, beta)      # prime: uneven under every mask of 2+ cores
    small = _plain_batch(fmt, 5, rng, beta)      # fewer elements than most masks' cores
    cases = []
    for (dy, x1, x2), masks in ((manual, (0xFF, 0x55, 0xAA, 0x81, 0x00)), (mid, CORE_MASKS),
                                (small, CORE_MASKS)):
        for mask in masks:
            cores = bin(mask).count("1")
            flags = _mask_flags(mask)
            if cores and len(dy) % cores:
                flags.append("uneven-core-split")
            if cores > len(dy):
                flags.append("fewer-elements-than-cores")
            cases.append(_case(fmt, dy, x1, x2, beta, flags, variant="s", core_mask=mask))
    return cases


def _weighted_bits(fmt: Format, rng: np.random.Generator, n: int) -> np.ndarray:
    """TestFloat-style random patterns: an exponent class crossed with a significand pattern.

    Exponent classes (weights): zero 4%, subnormal 10%, the lowest normal binades 10%,
    around 1.0 30%, uniform over the normals 28%, the highest binades 10%, inf 4%, NaN 4%.
    Significand patterns: zero, all ones, one bit, a run of ones from the top or the bottom,
    random sparse, random (TestFloat's "boundary significands" crossed with everything).
    """
    p, top = fmt.frac_bits, (1 << fmt.exp_bits) - 1
    cls = rng.choice(8, n, p=[0.04, 0.10, 0.10, 0.30, 0.28, 0.10, 0.04, 0.04])
    field = np.select(
        [cls <= 1, cls == 2, cls == 3, cls == 4, cls == 5],
        [np.zeros(n, np.int64), rng.integers(1, 4, n), fmt.emax + rng.integers(-4, 5, n),
         rng.integers(1, top, n), rng.integers(top - 3, top, n)],
        default=np.full(n, top, np.int64))
    kind = rng.integers(0, 7, n)
    bitpos = rng.integers(0, p, n)
    run = rng.integers(1, p + 1, n)
    full = (1 << p) - 1
    rand = rng.integers(0, 1 << p, n)
    sparse = rand & rng.integers(0, 1 << p, n) & rng.integers(0, 1 << p, n)
    sig = np.select(
        [kind == 0, kind == 1, kind == 2, kind == 3, kind == 4, kind == 5],
        [np.zeros(n, np.int64), np.full(n, full, np.int64), np.left_shift(1, bitpos),
         full ^ (np.left_shift(1, p - run) - 1), np.left_shift(1, run) - 1, sparse],
        default=rand)
    sig = np.where(cls == 0, 0, sig)
    sig = np.where((cls == 1) & (sig == 0), 1, sig)           # subnormal: nonzero
    sig = np.where(cls == 6, 0, sig)                          # inf
    sig = np.where((cls == 7) & (sig == 0), _quiet_bit(fmt), sig)  # NaN: nonzero
    sign = (rng.random(n) < 0.5).astype(np.int64) * fmt.sign_mask
    return _u(fmt, sign | (field << p) | sig)


def _random_betas(fmt: Format, rng: np.random.Generator, k: int) -> list[int]:
    """Positive finite betas: typical ones, then weighted-random positive finite patterns."""
    fixed = [_one(fmt), _v(fmt, "0.1"), _v(fmt, "0.5"), _v(fmt, "0.3"), _b(fmt, [2.0])[0],
             _v(fmt, "1/3"), _min_normal(fmt), fmt.frac_mask, _max(fmt)]
    out = list(fixed)
    while len(out) < k:
        b = int(_weighted_bits(fmt, rng, 1)[0]) & ~fmt.sign_mask
        if b and _cls(fmt, b) in (F.FloatClass.NORMAL, F.FloatClass.SUBNORMAL):
            out.append(b)
    return out[:k]


def _fam_random_weighted(fmt: Format, rng: np.random.Generator) -> list:
    cases = []
    n = 512
    for beta in _random_betas(fmt, rng, 12):
        dy = _weighted_bits(fmt, rng, n)
        x2 = _weighted_bits(fmt, rng, n)
        x1 = _weighted_bits(fmt, rng, n)
        # a third of x1 close to x2 in the pattern order (small diffs of every exponent)
        near = np.clip(x2.astype(np.int64) + rng.integers(-4, 5, n), 0, (1 << fmt.bits) - 1)
        x1 = np.where(rng.random(n) < 0.33, near, x1).astype(fmt.uint)
        cases.append(_case(fmt, dy, x1, x2, beta, ("random-bits",)))
    return cases


def _fam_random_boundary(fmt: Format, rng: np.random.Generator) -> list:
    cases = []
    for beta in _random_betas(fmt, rng, 10):
        bt = random_batch(fmt, 512, rng, beta=beta)
        cases.append(_case(fmt, bt.dy, bt.x1, bt.x2, beta, ("random-near-boundary",)))
    return cases


def _fam_large(fmt: Format, rng: np.random.Generator) -> list:
    beta = _one(fmt)
    flags = ["large", "uneven-core-split"] + _length_flags(LARGE_LENGTH)
    return [_case(fmt, *_plain_batch(fmt, LARGE_LENGTH, rng, beta), beta, flags,
                  variant="s", core_mask=0xFF)]


def _fam_rounding_hard(fmt: Format, rng: np.random.Generator) -> list:
    cases = []
    for _ in range(4):
        bt = hard_batch(fmt, 1024, rng)
        cases.append(_case(fmt, bt.dy, bt.x1, bt.x2, bt.beta, ("rounding-ties",)))
    return cases


# --------------------------------------------------------------------------
# The registry
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class FamilySpec:
    """A family generator. ``seeded``: its content depends on the seed (random families);
    the others are canonical, the same for every seed."""

    id: int
    name: str
    description: str
    flags: tuple
    dtypes: tuple
    build: Callable[[Format, np.random.Generator], list]
    seeded: bool = False
    large: bool = False


BOTH = ("fp16", "fp32")

# Ids are never renumbered: a removed family leaves a gap, a new one takes the next number.
FAMILIES: tuple = (
    FamilySpec(1, "boundary-exact",
               "x1 - x2 equals +beta or -beta exactly, for betas in and around the documented "
               "0.1..1.0 range, powers of two and not (0.1, 0.3, 1/3 rounded to the format), "
               "tiny, subnormal and the largest finite. The middle line includes the boundary, "
               "where diff / beta is exactly +-1 and the result must be +-dy bit for bit; an "
               "implementation that uses >= or <= in the outer tests, or computes the middle "
               "line in an order that rounds, misses it.",
               ("boundary",), BOTH, _fam_boundary_exact),
    FamilySpec(2, "boundary-neighbours",
               "x1 - x2 exactly one or two ULPs (of the format, at +-beta) on either side of +beta "
               "and -beta: the elements just inside take the middle line with a quotient within "
               "a few ULPs of +-1, those just outside the outer lines; off-by-one comparisons and "
               "a rounded 1/beta show up here.",
               ("boundary",), BOTH, _fam_boundary_neighbours),
    FamilySpec(3, "boundary-rounded-diff",
               "The exact x1 - x2 and x1 - x2 rounded to the format lie differently against +-beta "
               "(the rounded diff lands on the boundary from inside or outside): the oracle tests "
               "the exact diff, an implementation the rounded one. Open for implementations "
               "(docs/special-values.md row 18): where the branches give different results the "
               "case is acceptable with the rounded-diff answer.",
               ("boundary", "rounding"), BOTH, _fam_boundary_rounded),
    FamilySpec(4, "fp16-overflow",
               "fp16's narrow range: x1 - x2 beyond 65504 (with finite, huge and infinite beta), "
               "diff * dy beyond 65504 while diff / beta * dy is finite, 1 / beta beyond 65504 "
               "(beta below 2^-16), dy at and next to +-65504 and +-inf in every branch, results "
               "at the largest finite value. Native-half implementations overflow in "
               "intermediate steps where the formula does not.",
               ("overflow",), ("fp16",), _fam_overflow),
    FamilySpec(5, "range-overflow",
               "The fp32 analogue of fp16-overflow at the fp32 range: diff beyond FLT_MAX, "
               "diff * dy beyond FLT_MAX with a finite result, 1 / beta beyond FLT_MAX (subnormal "
               "beta), dy at +-FLT_MAX and +-inf, results at FLT_MAX.",
               ("overflow",), ("fp32",), _fam_overflow),
    FamilySpec(6, "underflow",
               "Gradual underflow: subnormal dy, x1, x2 (each and together), normal inputs with a "
               "subnormal diff, subnormal and underflowing results (ties at half the smallest "
               "subnormal), diff * dy underflowing before the division by a tiny beta scales it "
               "back to a normal result, diff / beta underflowing before the multiplication, "
               "subnormal betas. Flush-to-zero platforms get the ftz oracle's answer accepted.",
               ("subnormal",), BOTH, _fam_underflow),
    FamilySpec(7, "nan-inf",
               "Quiet and signalling NaNs of both signs (with and without payload) and +-inf in "
               "dy, x1, x2 and beta, against a grid covering every branch, inf - inf, and every "
               "input special at once. NaN must propagate (any NaN matches); infinities follow "
               "the branches.",
               ("special",), BOTH, _fam_nan_inf),
    FamilySpec(8, "signed-zero",
               "+-0 in each input, grouped by the sign of the zero result every element must "
               "have: x - x = +0, (-0) - (+0) = -0, a zero middle result has the sign "
               "sign(diff) xor sign(beta) xor sign(dy), -(+0) = -0 in the -dy line, and an "
               "underflowed result keeps the exact result's sign.",
               ("signed-zero",), BOTH, _fam_signed_zero),
    FamilySpec(9, "beta-special",
               "beta tiny, subnormal, across the documented 0.1..1.0 range, large, the largest "
               "finite, +-0, negative (finite, -inf, the negative subnormal), +-inf, quiet and "
               "signalling NaN, each against a grid covering every branch. beta <= 0 and "
               "beta = inf with an infinite diff are open: those cases list every acceptable "
               "result and say why.",
               ("beta",), BOTH, _fam_beta_special),
    FamilySpec(10, "lengths",
               "Lengths 0, 1, 2, 3, and one below, at and above every multiple of the vector "
               "widths 4, 8, 16, 32, 64 up to 1025 (the vector body only, the tail only, both), "
               "primes past that, and, for the shared version, lengths that do not split evenly "
               "across 2 to 8 cores (fewer elements than cores included). Data: boundary-weighted "
               "random. About 410,000 elements, so generated only when asked (--large); the "
               "canonical set has lengths-compact instead.",
               ("length",), BOTH, _fam_lengths, large=True),
    FamilySpec(11, "core-masks",
               "The shared version with the same data under core_mask 0xFF, every single core, "
               "contiguous and non-contiguous masks (0x55, 0xAA, 0x81, ...), and 0, at the "
               "manual's length 1000 and at 5: the result must not depend on which cores take "
               "part. core_mask = 0 is open: nothing written is expected; certify records what an "
               "implementation does there.",
               ("core-mask",), BOTH, _fam_core_masks),
    FamilySpec(12, "random-weighted",
               "TestFloat-style weighted random over bit patterns: exponent classes (zero, "
               "subnormal, lowest and highest binades, around 1, inf, NaN) crossed with "
               "significand patterns (zero, all ones, one bit, runs, sparse, random), a third "
               "of x1 near x2, positive finite betas (typical, tiny, subnormal, largest, random).",
               ("random",), BOTH, _fam_random_weighted, seeded=True),
    FamilySpec(13, "random-boundary",
               "Random data concentrated around the boundary (sampling.random_batch): x1 built "
               "from x2 so that x1 - x2 falls on or within two ULPs of +-beta, mixed with values "
               "on beta's scale, raw patterns and special values.",
               ("random", "boundary"), BOTH, _fam_random_boundary, seeded=True),
    FamilySpec(14, "large-random",
               "One call of 1,000,003 elements (prime: no width or core count divides it) of "
               "boundary-weighted random data on the shared version with all eight cores: "
               "throughput-sized runs, thread splits, long tails. Generated only when asked.",
               ("random", "large"), BOTH, _fam_large, seeded=True, large=True),
    FamilySpec(15, "rounding-hard",
               "Inputs where correct rounding is hardest (sampling.hard_batch): power-of-two beta "
               "and dy with diffs that make exact ties and near-ties of the result, down into the "
               "subnormals, and huge exponent gaps at the boundary. Double rounding (fp16 "
               "computed in fp32, then rounded) shows up here.",
               ("random", "rounding"), BOTH, _fam_rounding_hard, seeded=True),
    FamilySpec(16, "lengths-compact",
               "The lengths family in small: 0, 1, 2, 3, one below, at and above 4, 8, 16, 32, 64 "
               "and 128, 256, 512, 1024 (body only, tail only, both for every vector width), "
               "primes, 1025, and for the shared version lengths that do not split evenly across "
               "2 to 8 cores.",
               ("length",), BOTH, _fam_lengths_compact),
)

FAMILY_NAMES = tuple(spec.name for spec in FAMILIES)


def family_by_name(name: str) -> FamilySpec:
    for spec in FAMILIES:
        if spec.name == name:
            return spec
    raise ValueError(f"unknown family {name!r}; known families: {', '.join(FAMILY_NAMES)}")


def _check_registry() -> None:
    ids = [s.id for s in FAMILIES]
    if ids != sorted(set(ids)) or len(set(FAMILY_NAMES)) != len(FAMILY_NAMES):
        raise AssertionError("family ids must be unique and ascending, names unique")


_check_registry()


def generate(dtype: str, seed: int, names: "Sequence[str] | None" = None,
             large: bool = False) -> list[Family]:
    """The families (in id order) for one dtype, deterministic in all four arguments.

    ``names`` selects families by name (None or empty: all that apply to the dtype);
    a named family that does not apply to the dtype is left out. Unknown names raise
    ValueError naming them and listing the known ones. Large families are generated
    only with ``large=True``; naming one without it raises ValueError.
    """
    fmt = F.format_by_name(dtype)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, not {seed!r}")
    if isinstance(names, str):
        names = [names]
    wanted: Optional[set] = None
    if names:
        unknown = [n for n in names if n not in FAMILY_NAMES]
        if unknown:
            raise ValueError(f"unknown famil{'y' if len(unknown) == 1 else 'ies'} "
                             f"{', '.join(map(repr, unknown))}; known families: {', '.join(FAMILY_NAMES)}")
        wanted = set(names)
        big = [n for n in names if family_by_name(n).large]
        if big and not large:
            raise ValueError(f"{', '.join(big)} is a large family: ask for it with large=True (--large)")
    out = []
    for spec in FAMILIES:
        if wanted is not None and spec.name not in wanted:
            continue
        if fmt.name not in spec.dtypes or (spec.large and not large):
            continue
        rng = np.random.default_rng([1 if spec.seeded else 0, int(seed) if spec.seeded else 0,
                                     spec.id, fmt.bits])
        cases = [finish_case(fmt, c) for c in spec.build(fmt, rng)]
        out.append(Family(id=spec.id, name=spec.name, description=spec.description,
                          flags=spec.flags, cases=cases, large=spec.large))
    return out
