"""The length and core-mask families: where an element sits, not what it holds.

lengths (10, large) and lengths-compact (16) hit the vector body only, the tail only and
both for every plausible vector width (CMSIS-DSP's pattern files), and the shared version's
uneven splits across cores; core-masks (11) runs the same data under every kind of mask;
lengths-long (17) long calls; calls-crossed (18) every pair of call parameters (length class,
beta class, variant and core mask) in at least one call, a covering array.
Their data is :func:`plain_batch`: random near the boundary, with no open element.
"""

from __future__ import annotations

import numpy as np

from sl1conf.conformance.vectors.families.bits import (
    bits_of, bits_of_text, is_subnormal, one_bits, random_significands, random_signs, value_of,
)
from sl1conf.conformance.vectors.families.finish import make_case, oracle_bits
from sl1conf.conformance.vectors.sampling import fast_batch, random_batch
from sl1conf.reference import exact
from sl1conf.reference import formats
from sl1conf.reference.formats import Format

__all__ = [
    "VECTOR_WIDTHS", "MAX_TABLE_LENGTH", "EXTRA_PRIME_LENGTHS", "LARGE_LENGTH", "CORE_MASKS", "COMPACT_LENGTHS",
    "required_lengths", "plain_batch", "length_flags",
    "lengths_cases", "lengths_compact_cases", "core_masks_cases", "lengths_long_cases",
    "LONG_MULTIPLES", "HUGE_LENGTH", "LONG_SPLITS",
    "CROSSED_LENGTHS", "CROSSED_BETAS", "CROSSED_CALLS", "crossed_beta", "crossed_calls", "calls_crossed_cases",
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


def required_lengths(limit: int = MAX_TABLE_LENGTH) -> list[int]:
    """0, 1, 2, 3 and m - 1, m, m + 1 for every multiple m of every width with m + 1 <= limit."""
    out = {0, 1, 2, 3}
    for w in VECTOR_WIDTHS:
        for m in range(w, limit, w):
            out.update((m - 1, m, m + 1))
    return sorted(n for n in out if n <= limit)


def plain_batch(fmt: Format, n: int, rng: np.random.Generator, beta: int, draw=random_batch):
    """``draw``'s data (random_batch, or fast_batch for the long calls) with every element whose
    answer is open replaced by a settled one.

    The lengths and core-mask families test *where* an element sits, not what it holds:
    their cases stay "valid" (no alternative arrays to store) when no element depends on
    flushing or on rounding diff first. Such an element (ftz oracle != oracle, or the
    rounded diff on another side of +-beta) becomes x1 = +-1.5 * beta, x2 = +0 (an outer
    line, exact diff) with a normal dy. beta must be positive and normal.
    """
    bt = draw(fmt, n, rng, beta=beta)
    dy, x1, x2 = bt.dy.copy(), bt.x1.copy(), bt.x2.copy()
    if not n:
        return dy, x1, x2
    beta_f = value_of(fmt, beta)
    s, e = exact.exact_diff(fmt, x1, x2)
    r = exact.rounded_diff(fmt, x1, x2).astype(np.float64)
    moved = exact.position(s, e, beta_f) != exact.position(r, np.zeros(n), beta_f)
    ftz = ~formats.same_result(fmt, oracle_bits(fmt, dy, x1, x2, beta), oracle_bits(fmt, dy, x1, x2, beta, ftz=True))
    bad = moved | ftz | is_subnormal(fmt, dy) | is_subnormal(fmt, x1) | is_subnormal(fmt, x2)
    k = int(bad.sum())
    if k:
        x1[bad] = bits_of(fmt, random_signs(rng, k) * 1.5 * beta_f)
        x2[bad] = 0
        dy[bad] = bits_of(fmt, random_signs(rng, k) * random_significands(fmt, rng, k))
    return dy, x1, x2


def _is_prime(n: int) -> bool:
    return n > 1 and all(n % d for d in range(2, int(n ** 0.5) + 1))


def length_flags(n: int) -> list[str]:
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
    """One plain_batch for all the lengths, cut into consecutive pieces (one draw, not many)."""
    dy, x1, x2 = plain_batch(fmt, sum(lengths), rng, beta)
    cuts = np.cumsum([0] + list(lengths))
    return [(dy[a:b].copy(), x1[a:b].copy(), x2[a:b].copy()) for a, b in zip(cuts[:-1], cuts[1:])]


COMPACT_LENGTHS = (0, 1, 2, 3, 4, 5, 7, 8, 9, 11, 13, 15, 16, 17, 19, 23, 29, 31, 32, 33, 37, 63, 64, 65, 127, 128, 129,
                   255, 256, 257, 511, 512, 513, 1023, 1024, 1025)
"""The canonical set's lengths: the body only, the tail only and both for every width
(m - 1, m, m + 1 around 4, 8, 16, 32, 64 and 128..1024), and primes."""


def lengths_cases(fmt: Format, rng: np.random.Generator) -> list:
    return _length_cases(fmt, rng, required_lengths() + list(EXTRA_PRIME_LENGTHS))


def lengths_compact_cases(fmt: Format, rng: np.random.Generator) -> list:
    cases = _length_cases(fmt, rng, list(COMPACT_LENGTHS))
    # The length argument below the buffers: 0 and negative must write nothing at all, 5 of 9
    # nothing past the fifth element (the buffers are longer than the call, as on a board).
    one = one_bits(fmt)
    for length, flags in ((0, ["length-zero", "buffers-longer-than-length"]),
                          (-1, ["negative-length", "buffers-longer-than-length"]),
                          (5, ["buffers-longer-than-length"])):
        dy, x1, x2 = plain_batch(fmt, 9, rng, one)
        for variant in ("p", "s"):
            cases.append(make_case(fmt, dy, x1, x2, one, flags, variant=variant, core_mask=0xFF, length=length))
    return cases


def _length_cases(fmt: Format, rng: np.random.Generator, lengths: list) -> list:
    betas = [bits_of_text(fmt, t) for t in ("1", "0.1", "0.5", "0.25", "0.3", "2", "1/3")]  # TYPICAL_BETAS
    calls = [(n, "p", 0xFF, length_flags(n)) for n in lengths]
    # shared variant: lengths that do not split evenly across 2..8 cores
    for c in range(2, 9):
        for n in dict.fromkeys([1, c - 1, c + 1, 2 * c + 1, 4 * c - 1, 65, 255, 1001]):
            if n > 0 and n % c:
                flags = ["uneven-core-split"] + (["fewer-elements-than-cores"] if n < c else [])
                calls.append((n, "s", (1 << c) - 1, flags + length_flags(n)))
    # beta cycles through the typical ones; each beta's data is one draw, sliced in call order
    data: dict = {}
    for k, beta in enumerate(betas):
        mine = [i for i in range(len(calls)) if i % len(betas) == k]
        for i, piece in zip(mine, _sliced(fmt, rng, [calls[i][0] for i in mine], beta)):
            data[i] = (beta, piece)
    cases = []
    for i, (n, variant, mask, flags) in enumerate(calls):
        beta, (dy, x1, x2) = data[i]
        cases.append(make_case(fmt, dy, x1, x2, beta, flags, variant=variant, core_mask=mask))
    return cases


LONG_MULTIPLES = (1024, 2048, 4096, 8192, 16384, 32768, 65536)
"""lengths-long: one below, at and above each of these (tile, DMA block and thread-chunk sizes)."""

HUGE_LENGTH = (1 << 20) + 1
"""lengths-long's DDR-sized call: 2^20 + 1 elements (a tail of one for every power-of-two width)."""

LONG_SPLITS = ((4097, 0x07), (16385, 0x7F), (65537, 0x55), (HUGE_LENGTH, 0x7F))
"""lengths-long's shared-version calls: (length, core_mask), uneven splits of long calls."""

SUBNORMAL_EVERY = (997, 1009)
"""lengths-long's data carries a subnormal x1 every 997th element and a subnormal dy every
1009th, so flushing only in long calls changes results there (the rest is plain_batch)."""


def _with_subnormals(fmt: Format, rng: np.random.Generator, dy, x1, x2):
    """Subnormal x1 (x2 = 0: the diff is that subnormal, exactly) and subnormal dy (an outer or
    middle line with a normal diff) at fixed strides: no open element, flushing changes each."""
    sub = np.arange(0, dy.size, SUBNORMAL_EVERY[0])
    sign = np.where(rng.random(sub.size) < 0.5, fmt.sign_mask, 0).astype(fmt.uint)
    x1[sub] = sign | rng.integers(1, 1 << fmt.frac_bits, sub.size).astype(fmt.uint)
    x2[sub] = 0
    sub = np.arange(5, dy.size, SUBNORMAL_EVERY[1])
    dy[sub] = rng.integers(1, 1 << fmt.frac_bits, sub.size).astype(fmt.uint)
    return dy, x1, x2


def lengths_long_cases(fmt: Format, rng: np.random.Generator) -> list:
    """Lengths around multiples of 1,024 to 65,536, a call of 2^20 + 1, and shared-version
    splits of long calls, on plain_batch data with subnormals at fixed strides."""
    betas = [bits_of_text(fmt, t) for t in ("1", "0.1", "0.5", "0.3", "2")]
    calls = [(m + d, "p", 0xFF) for m in LONG_MULTIPLES for d in (-1, 0, 1)] + [(n, "s", m) for n, m in LONG_SPLITS]
    cases = []
    for k, (n, variant, mask) in enumerate(calls):
        beta = betas[k % len(betas)]
        dy, x1, x2 = _with_subnormals(fmt, rng, *plain_batch(fmt, n, rng, beta, draw=fast_batch))
        flags = ["long-call"] + length_flags(n)
        if variant == "s":
            flags.append("uneven-core-split")
        cases.append(make_case(fmt, dy, x1, x2, beta, flags, variant=variant, core_mask=mask))
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


def core_masks_cases(fmt: Format, rng: np.random.Generator) -> list:
    """The same data under every mask: results must not depend on which cores take part."""
    beta = one_bits(fmt)
    manual = plain_batch(fmt, 1000, rng, beta)  # the manual's example length, under a few masks
    mid = plain_batch(fmt, 257, rng, beta)      # prime: uneven under every mask of 2+ cores
    small = plain_batch(fmt, 5, rng, beta)      # fewer elements than most masks' cores
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
            cases.append(make_case(fmt, dy, x1, x2, beta, flags, variant="s", core_mask=mask))
    return cases


CROSSED_LENGTHS = (("short", 7), ("width-neighbour", 65), ("tile", 4097), ("long", 65_537), ("ddr", HUGE_LENGTH))
"""calls-crossed's length classes: shorter than most vector widths, one past a vector-width multiple,
one past a 1,024-multiple (tiles, DMA blocks), past 65,536 (thread chunks), past 2^20 (DDR-sized data)."""

CROSSED_BETAS = ("pow2", "not-pow2", "usual", "tiny", "huge", "subnormal")
"""calls-crossed's beta classes (:func:`crossed_beta`)."""

CROSSED_CALLS = (("p", 0xFF, "private"), ("s", 0x55, "mask-with-holes"), ("s", 0x80, "single-high-core"))
"""calls-crossed's variant and core-mask classes. certify calls every case through both variants
(a private case through the shared one with every core), so these three give the shared variant
all cores, a mask with holes and one high core, and the private variant every call."""


def crossed_beta(fmt: Format, cls: str) -> int:
    """A positive beta of each class: a power of two (2, reciprocal exact), not one outside the
    usual range (3.3), the manual's usual range (0.1), a tiny normal (1.5 times 2^(emin + 1): 1 / beta
    still finite), a huge normal (1.5 times 2^-emin: 1 / beta subnormal), a subnormal."""
    if cls == "subnormal":
        return (1 << (fmt.frac_bits - 1)) | 0x5  # mid-range subnormal, not a power of two
    text = {"pow2": "2", "not-pow2": "3.3", "usual": "0.1", "tiny": f"0x1.8p{fmt.emin + 1}",
            "huge": f"0x1.8p{-fmt.emin}"}[cls]
    return bits_of_text(fmt, text)


def _outer_lines(fmt: Format, n: int, rng: np.random.Generator):
    """Data for a subnormal beta: every diff a normal number (x1 in +-[1, 2), x2 = +0), so every
    element takes an outer line (+-dy, exact) whether or not beta or anything else is flushed."""
    dy = bits_of(fmt, random_signs(rng, n) * random_significands(fmt, rng, n))
    x1 = bits_of(fmt, random_signs(rng, n) * random_significands(fmt, rng, n))
    return dy, x1, np.zeros(n, fmt.uint)


def crossed_calls() -> list:
    """(length class, length, beta class, variant, core_mask, mask class) of every call: each
    length class against each beta class (all 30 pairs), the variant and mask class the
    (length + beta) index modulo 3, so that every pair of values of the three parameters is in
    at least one call (a covering array of strength 2 in 30 calls; 5 x 6 x 3 = 90 would be all)."""
    out = []
    for i, (lcls, n) in enumerate(CROSSED_LENGTHS):
        for j, bcls in enumerate(CROSSED_BETAS):
            variant, mask, mcls = CROSSED_CALLS[(i + j) % len(CROSSED_CALLS)]
            out.append((lcls, n, bcls, variant, mask, mcls))
    return out


def calls_crossed_cases(fmt: Format, rng: np.random.Generator) -> list:
    """Every pair of call parameters in one call at least (:func:`crossed_calls`), on
    boundary-weighted random data (outer lines only for the subnormal beta)."""
    cases = []
    for lcls, n, bcls, variant, mask, mcls in crossed_calls():
        beta = crossed_beta(fmt, bcls)
        if bcls == "subnormal":
            dy, x1, x2 = _outer_lines(fmt, n, rng)
        else:
            dy, x1, x2 = plain_batch(fmt, n, rng, beta, draw=fast_batch)
        flags = ["crossed", f"length-{lcls}", f"beta-{bcls}", mcls] + length_flags(n)
        cases.append(make_case(fmt, dy, x1, x2, beta, flags, variant=variant, core_mask=mask))
    return cases
