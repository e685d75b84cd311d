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

The modules, one per group of families (by what they aim at), and the two they share:

* ``boundary``: x1 - x2 at, beside and (rounded) across +-beta (families 1-3).
* ``ranges``: the edge of the format's range, and gradual underflow (4-6).
* ``specials``: NaN and infinity, signed zeros, special betas (7-9).
* ``lengths``: lengths against vector widths and core counts, and core masks (10, 11, 16).
* ``random``: the seeded families: weighted bit patterns, random data near the boundary,
  one large call, inputs hard to round (12-15).
* ``bits``: bit patterns of a format and random draws of them; ``finish``: how a case is
  made (:func:`make_case`) and finished (:func:`finish_case`).

This module holds the registry (:data:`FAMILIES`: id, name, description, and the generator
of each family) and :func:`generate`.

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
Where the manual leaves the answer open, :func:`finish_case` attaches the alternatives of
``rules.openbehaviour`` (the one policy) that differ from the expected answer; ``finish``
says which are kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np

from sl1conf.conformance.vectors.cases import Family
from sl1conf.conformance.vectors.families.boundary import (
    boundary_exact_cases, boundary_neighbours_cases, boundary_rounded_diff_cases,
)
from sl1conf.conformance.vectors.families.finish import finish_case
from sl1conf.conformance.vectors.families.lengths import (
    COMPACT_LENGTHS, CORE_MASKS, LARGE_LENGTH, MAX_TABLE_LENGTH, VECTOR_WIDTHS,
    calls_crossed_cases, core_masks_cases, lengths_cases, lengths_compact_cases, lengths_long_cases, required_lengths,
)
from sl1conf.conformance.vectors.families.random import (
    large_random_cases, random_boundary_cases, random_weighted_cases, rounding_hard_cases,
)
from sl1conf.conformance.vectors.families.ranges import overflow_cases, underflow_cases
from sl1conf.conformance.vectors.families.specials import beta_special_cases, nan_inf_cases, signed_zero_cases
from sl1conf.reference import formats
from sl1conf.reference.formats import Format

__all__ = [
    "FamilySpec", "FAMILIES", "FAMILY_NAMES", "family_by_name", "generate",
    "VECTOR_WIDTHS", "MAX_TABLE_LENGTH", "required_lengths", "COMPACT_LENGTHS", "CORE_MASKS", "LARGE_LENGTH",
    "finish_case",
]


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
    by_default: bool = False  # a large family certify's default run generates (never committed)


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
               ("boundary",), BOTH, boundary_exact_cases),
    FamilySpec(2, "boundary-neighbours",
               "x1 - x2 exactly one or two ULPs (of the format, at +-beta) on either side of +beta "
               "and -beta: the elements just inside take the middle line with a quotient within "
               "a few ULPs of +-1, those just outside the outer lines; off-by-one comparisons and "
               "a rounded 1/beta show up here.",
               ("boundary",), BOTH, boundary_neighbours_cases),
    FamilySpec(3, "boundary-rounded-diff",
               "The exact x1 - x2 and x1 - x2 rounded to the format lie differently against +-beta "
               "(the rounded diff lands on the boundary from inside or outside): the oracle tests "
               "the exact diff, an implementation the rounded one. Open for implementations "
               "(docs/special-values.md row 18): where the branches give different results the "
               "case is acceptable with the rounded-diff answer.",
               ("boundary", "rounding"), BOTH, boundary_rounded_diff_cases),
    FamilySpec(4, "fp16-overflow",
               "fp16's narrow range: x1 - x2 beyond 65504 (with finite, huge and infinite beta), "
               "diff * dy beyond 65504 while diff / beta * dy is finite, 1 / beta beyond 65504 "
               "(beta below 2^-16), dy at and next to +-65504 and +-inf in every branch, results "
               "at the largest finite value. Native-half implementations overflow in "
               "intermediate steps where the formula does not.",
               ("overflow",), ("fp16",), overflow_cases),
    FamilySpec(5, "range-overflow",
               "The fp32 analogue of fp16-overflow at the fp32 range: diff beyond FLT_MAX, "
               "diff * dy beyond FLT_MAX with a finite result, 1 / beta beyond FLT_MAX (subnormal "
               "beta), dy at +-FLT_MAX and +-inf, results at FLT_MAX.",
               ("overflow",), ("fp32",), overflow_cases),
    FamilySpec(6, "underflow",
               "Gradual underflow: subnormal dy, x1, x2 (each and together), normal inputs with a "
               "subnormal diff, subnormal and underflowing results (ties at half the smallest "
               "subnormal), diff * dy underflowing before the division by a tiny beta scales it "
               "back to a normal result, diff / beta underflowing before the multiplication, "
               "subnormal betas. Flush-to-zero platforms get the ftz oracle's answer accepted.",
               ("subnormal",), BOTH, underflow_cases),
    FamilySpec(7, "nan-inf",
               "Quiet and signalling NaNs of both signs (with and without payload) and +-inf in "
               "dy, x1, x2 and beta, against a grid covering every branch, inf - inf, and every "
               "input special at once. NaN must propagate (any NaN matches); infinities follow "
               "the branches.",
               ("special",), BOTH, nan_inf_cases),
    FamilySpec(8, "signed-zero",
               "+-0 in each input, grouped by the sign of the zero result every element must "
               "have: x - x = +0, (-0) - (+0) = -0, a zero middle result has the sign "
               "sign(diff) xor sign(beta) xor sign(dy), -(+0) = -0 in the -dy line, and an "
               "underflowed result keeps the exact result's sign.",
               ("signed-zero",), BOTH, signed_zero_cases),
    FamilySpec(9, "beta-special",
               "beta tiny, subnormal, across the documented 0.1..1.0 range, large, the largest "
               "finite, +-0, negative (finite, -inf, the negative subnormal), +-inf, quiet and "
               "signalling NaN, each against a grid covering every branch. beta <= 0 and "
               "beta = inf with an infinite diff are open: those cases list every acceptable "
               "result and say why.",
               ("beta",), BOTH, beta_special_cases),
    FamilySpec(10, "lengths",
               "Lengths 0, 1, 2, 3, and one below, at and above every multiple of the vector "
               "widths 4, 8, 16, 32, 64 up to 1025 (the vector body only, the tail only, both), "
               "primes past that, and, for the shared version, lengths that do not split evenly "
               "across 2 to 8 cores (fewer elements than cores included). Data: boundary-weighted "
               "random. About 410,000 elements, so generated only when asked (--large); the "
               "canonical set has lengths-compact instead.",
               ("length",), BOTH, lengths_cases, large=True),
    FamilySpec(11, "core-masks",
               "The shared version with the same data under core_mask 0xFF, every single core, "
               "contiguous and non-contiguous masks (0x55, 0xAA, 0x81, ...), and 0, at the "
               "manual's length 1000 and at 5: the result must not depend on which cores take "
               "part. core_mask = 0 is open: nothing written is expected; certify records what an "
               "implementation does there.",
               ("core-mask",), BOTH, core_masks_cases),
    FamilySpec(12, "random-weighted",
               "TestFloat-style weighted random over bit patterns: exponent classes (zero, "
               "subnormal, lowest and highest binades, around 1, inf, NaN) crossed with "
               "significand patterns (zero, all ones, one bit, runs, sparse, random), a third "
               "of x1 near x2, positive finite betas (typical, tiny, subnormal, largest, random).",
               ("random",), BOTH, random_weighted_cases, seeded=True),
    FamilySpec(13, "random-boundary",
               "Random data concentrated around the boundary (sampling.random_batch): x1 built "
               "from x2 so that x1 - x2 falls on or within two ULPs of +-beta, mixed with values "
               "on beta's scale, raw patterns and special values.",
               ("random", "boundary"), BOTH, random_boundary_cases, seeded=True),
    FamilySpec(14, "large-random",
               "One call of 1,000,003 elements (prime: no width or core count divides it) of "
               "boundary-weighted random data on the shared version with all eight cores: "
               "throughput-sized runs, thread splits, long tails. Generated only when asked.",
               ("random", "large"), BOTH, large_random_cases, seeded=True, large=True),
    FamilySpec(15, "rounding-hard",
               "Inputs where correct rounding is hardest (sampling.hard_batch): power-of-two beta "
               "and dy with diffs that make exact ties and near-ties of the result, down into the "
               "subnormals, and huge exponent gaps at the boundary. Double rounding (fp16 "
               "computed in fp32, then rounded) shows up here.",
               ("random", "rounding"), BOTH, rounding_hard_cases, seeded=True),
    FamilySpec(16, "lengths-compact",
               "The lengths family in small: 0, 1, 2, 3, one below, at and above 4, 8, 16, 32, 64 "
               "and 128, 256, 512, 1024 (body only, tail only, both for every vector width), "
               "primes, 1025, and for the shared version lengths that do not split evenly across "
               "2 to 8 cores.",
               ("length",), BOTH, lengths_compact_cases),
    FamilySpec(17, "lengths-long",
               "Long calls: one below, at and above 1,024, 2,048, 4,096, 8,192, 16,384, 32,768 and "
               "65,536 elements, one call of 2^20 + 1 (1,048,577), and for the shared version "
               "uneven core_mask splits of 4,097 to 1,048,577 elements. Tile, DMA-block and "
               "thread-chunk boundaries, and code paths taken only for DDR-sized data, show up "
               "here. Data: boundary-weighted random with a subnormal x1 every 997th and a "
               "subnormal dy every 1009th element. About 1,500,000 elements: part of certify's "
               "default run (generated there, in memory), never committed; --large generates it "
               "into a vector set.",
               ("length", "large"), BOTH, lengths_long_cases, large=True, by_default=True),
    FamilySpec(18, "calls-crossed",
               "Every pair of call parameters in at least one call (a covering array of strength 2, "
               "30 calls): length classes 7, 65, 4,097, 65,537 and 1,048,577 against beta classes a "
               "power of two (2), not one (3.3), the manual's range (0.1), a tiny normal, a huge "
               "normal (1 / beta subnormal) and a subnormal, each on the private variant, the "
               "shared one with a mask with holes (0x55) and with one high core (0x80), so that "
               "a code path taken only for long calls (a DDR path) meets betas whose reciprocal "
               "rounds, and every variant meets every length. Data: boundary-weighted random "
               "(outer lines only for the subnormal beta). About 6,600,000 elements: part of "
               "certify's default run, never committed.",
               ("length", "beta", "large"), BOTH, calls_crossed_cases, large=True, by_default=True),
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
    fmt = formats.format_by_name(dtype)
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
