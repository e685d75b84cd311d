"""A hand-worked table of edge cases for the oracle (docs/special-values.md).

Every expected bit pattern below was derived by hand from the formula

    diff = x1 - x2 (exact);  dx1 = dy if diff > beta; -dy if diff < -beta;
                             else diff / beta * dy, rounded once (RNE, gradual underflow)

and the rules of docs/special-values.md; the ``why`` column is the derivation.
Nothing from ``sl1conf`` is used to produce an expected value: the oracle is
only called as the thing under test. NaN results are compared as a class (any
pattern with an all-ones exponent and a nonzero fraction); everything else is
compared bit for bit, sign of zero included.

Notation: fp16 ulp in [2^e, 2^(e+1)) is 2^(e-10); fp32 ulp there is 2^(e-23).
Smallest subnormal: fp16 2^-24 = 0x0001, fp32 2^-149 = 0x00000001.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest

from sl1conf.reference.oracle import evaluate_element, smoothl1lossgrad

NAN = "NaN"  # expected result: any NaN


class Row(NamedTuple):
    id: str
    fmt: str
    dy: int
    x1: int
    x2: int
    beta: int
    expected: "int | str"
    why: str
    flush: bool = False
    xfail: "str | None" = None


# fp16 constants used below (each checked by hand: sign | exp(5, bias 15) | frac(10))
#   0x3c00 1    0x4000 2    0x4200 3    0x4500 5 (1.25*4)   0x3800 0.5   0x3a00 0.75
#   0x3400 0.25 0x3000 0.125 0x3e00 1.5  0x7bff 65504  0x7c00 inf  0x7e00 qNaN
#   0x7d00 sNaN (quiet bit clear)  0xfe00 negative qNaN
#   0x2e66 = 2^-4 * 1638/1024 = 819/8192 = fp16(0.1)
#   0x3333 = 2^-3 * 1843/1024 = 1843/8192 = 0.125 + 819/8192
ROWS: list[Row] = [
    # ------------------------------------------------------------------ fp16: boundary
    Row("h-diff-eq-beta-1", "fp16", 0x4500, 0x3a00, 0xb400, 0x3c00, 0x4500,
        "diff = 0.75 - (-0.25) = 1 = beta exactly; middle branch; 1/1*5 = 5 = 0x4500"),
    Row("h-diff-eq-neg-beta-1", "fp16", 0x4500, 0xb400, 0x3a00, 0x3c00, 0xc500,
        "diff = -0.25 - 0.75 = -1 = -beta; middle; -1/1*5 = -5 = 0xc500"),
    Row("h-diff-eq-beta-0.1", "fp16", 0x4500, 0x3333, 0x3000, 0x2e66, 0x4500,
        "diff = 1843/8192 - 1024/8192 = 819/8192 = beta (0x2e66) exactly; middle; "
        "quotient exactly 1; 1*5 = 5 = 0x4500"),
    Row("h-diff-eq-neg-beta-0.1", "fp16", 0x4500, 0x3000, 0x3333, 0x2e66, 0xc500,
        "diff = 1024/8192 - 1843/8192 = -819/8192 = -beta; middle; -1*5 = -5 = 0xc500"),
    Row("h-diff-eq-beta-0.1-dy-third", "fp16", 0x3555, 0x3333, 0x3000, 0x2e66, 0x3555,
        "diff == beta exactly, quotient 1, so the result is dy bit for bit: 0x3555"),
    Row("h-diff-half-beta-0.1", "fp16", 0x4200, 0x2a66, 0x0000, 0x2e66, 0x3e00,
        "0x2a66 = 2^-5*1638/1024 = 819/16384 = beta/2; middle; 0.5*3 = 1.5 = 0x3e00"),
    Row("h-one-ulp-outside-beta-0.1", "fp16", 0x3c00, 0x3334, 0x3000, 0x2e66, 0x3c00,
        "x1 = 1844/8192 (one ulp above 0x3333); diff = 820/8192 > beta -> dy = 1 = 0x3c00 "
        "(the middle line would give 820/819 = 1.00122 -> 0x3c01, so the branch shows)"),
    Row("h-one-ulp-inside-beta-0.1", "fp16", 0x3c00, 0x3332, 0x3000, 0x2e66, 0x3bfd,
        "diff = 818/8192; middle; 818/819 = 1 - 1/819; in [0.5,1) ulp = 2^-11, "
        "1/819 = 2.5006 ulp below 1 -> nearest is 3 ulp below: 2045/2048 = 0x3bfd"),
    Row("h-one-ulp-inside-neg-beta-0.1", "fp16", 0x3c00, 0x3000, 0x3332, 0x2e66, 0xbbfd,
        "diff = -818/8192; middle; -818/819 -> -(2045/2048) = 0xbbfd (mirror of the above)"),
    Row("h-one-ulp-outside-neg-beta-0.1", "fp16", 0x3c00, 0x3000, 0x3334, 0x2e66, 0xbc00,
        "diff = -820/8192 < -beta -> -dy = -1 = 0xbc00"),
    Row("h-rounded-diff-would-hit-beta-from-inside", "fp16", 0x3c00, 0x3e00, 0x1000, 0x3e00,
        0x3bff,
        "exact diff = 1.5 - 2^-11, which fp16 would round (tie, to even) to 1.5 = beta; "
        "exact branch is middle: (1.5-2^-11)/1.5 = 1 - (2/3)*2^-11; ulp below 1 is 2^-11, "
        "so 0.667 ulp below 1 -> 1 - 2^-11 = 0x3bff (a rounded-diff evaluation gives 0x3c00)"),
    Row("h-rounded-diff-would-hit-beta-from-outside", "fp16", 0x4200, 0x3e00, 0x9000, 0x3e00,
        0x4200,
        "exact diff = 1.5 + 2^-11 (fp16 would round it to 1.5); exact diff > beta -> dy = 3"),
    Row("h-result-rounds-down-to-below-one", "fp16", 0x3c00, 0x41ff, 0x0000, 0x4200, 0x3bff,
        "diff = 3 - 2^-9 (0x41ff, one ulp below beta = 3); /3 = 1 - 2^-9/3 = 1 - (4/3)*2^-11: "
        "1.333 ulp of [0.5,1) below 1 -> 1 - 2^-11 = 0x3bff"),
    Row("h-result-rounds-up-into-next-binade", "fp16", 0x3c01, 0x46fe, 0x0000, 0x4700, 0x3c00,
        "diff = 7 - 2^-7 (0x46fe, two ulps of [4,8) below beta = 7 = 0x4700); ratio = "
        "1 - (8/7)*2^-10; *dy (1+2^-10) = 1 - (1/7)*2^-10 - (8/7)*2^-20 = 1 - 0.571*2^-12 - "
        "tiny: less than half an ulp (2^-12) below 1 -> rounds up across the binade to 1.0 "
        "= 0x3c00"),
    # ------------------------------------------------------------------ fp16: rounding
    Row("h-tie-rounds-up-to-even", "fp16", 0x3c01, 0x3a00, 0x0000, 0x3c00, 0x3a02,
        "0.75*(1+2^-10) = 0.75 + 3*2^-12 = 0.75 + 1.5 ulp (ulp 2^-11); tie between frac "
        "0x201 (odd) and 0x202 (even) -> 0x3a02 (rounds up)"),
    Row("h-tie-rounds-down-to-even", "fp16", 0x3c03, 0x3a00, 0x0000, 0x3c00, 0x3a04,
        "0.75*(1+3*2^-10) = 0.75 + 4.5 ulp; tie between frac 0x204 (even) and 0x205 -> 0x3a04 "
        "(rounds down)"),
    Row("h-tie-via-beta-2", "fp16", 0x3c01, 0x4000, 0x3800, 0x4000, 0x3a02,
        "diff = 2 - 0.5 = 1.5; /2 = 0.75; *(1+2^-10) = 0.75 + 1.5 ulp, tie -> even 0x3a02"),
    Row("h-third", "fp16", 0x3c00, 0x3c00, 0x0000, 0x4200, 0x3555,
        "1/3 = 2^-2 * 1.010101...b; frac 0101010101 then 0 -> round down: 0x3555"),
    Row("h-two-thirds", "fp16", 0x3c00, 0x4000, 0x0000, 0x4200, 0x3955,
        "2/3 = 2^-1 * 1.0101...b; frac 0x155, next bit 0 -> 0x3955"),
    # ------------------------------------------------------------------ fp16: overflow
    Row("h-diff-overflows-fp16-outer", "fp16", 0x4200, 0x7bff, 0xfbff, 0x3c00, 0x4200,
        "diff = 65504 - (-65504) = 131008 exactly (beyond fp16) > 1 -> dy = 3 = 0x4200"),
    Row("h-diff-overflows-fp16-neg-outer", "fp16", 0x4200, 0xfbff, 0x7bff, 0x3c00, 0xc200,
        "diff = -131008 exactly < -1 -> -dy = -3 = 0xc200"),
    Row("h-diff-overflows-fp16-beta-inf", "fp16", 0x4200, 0x7bff, 0xfbff, 0x7c00, 0x0000,
        "diff = 131008 finite (exact); beta = +inf -> middle; 131008/inf*3 = +0 (rule 15/19)"),
    Row("h-product-overflows-fp16", "fp16", 0x6000, 0x5c00, 0x0000, 0x6400, 0x5800,
        "diff = 256, dy = 512, beta = 1024; diff*dy = 131072 > 65504 but 256/1024*512 = 128 "
        "= 2^7 = 0x5800 (rule 16)"),
    Row("h-max-times-max-over-max", "fp16", 0x7bff, 0x7bff, 0x0000, 0x7bff, 0x7bff,
        "diff = 65504 = beta -> middle, quotient 1, *65504 = 65504 = 0x7bff (diff*dy ~ 4.3e9)"),
    Row("h-recip-beta-overflows-1", "fp16", 0x4200, 0x0002, 0x0000, 0x0003, 0x4000,
        "beta = 3*2^-24 (1/beta ~ 5.6e6 overflows fp16); diff = 2*2^-24; 2/3*3 = 2 = 0x4000"),
    Row("h-recip-beta-overflows-2", "fp16", 0x63d0, 0x0080, 0x0000, 0x0100, 0x5fd0,
        "beta = 2^-16 (0x0100, 1/beta = 65536 overflows), diff = 2^-17 (0x0080): ratio 1/2; "
        "dy = 1000 (0x63d0) -> 500 = 2^8*1.953125 = 0x5fd0"),
    # ------------------------------------------------------------------ fp16: subnormal results
    Row("h-smallest-subnormal", "fp16", 0x1400, 0x0400, 0x0000, 0x3c00, 0x0001,
        "diff = 2^-14, dy = 2^-10, beta = 1 -> 2^-24 = smallest subnormal 0x0001"),
    Row("h-half-smallest-ties-to-zero", "fp16", 0x1000, 0x0400, 0x0000, 0x3c00, 0x0000,
        "2^-14*2^-11 = 2^-25 = half of 2^-24; tie between 0 (even) and 0x0001 (odd) -> +0"),
    Row("h-half-smallest-neg-ties-to-neg-zero", "fp16", 0x9000, 0x0400, 0x0000, 0x3c00,
        0x8000,
        "2^-14*(-2^-11) = -2^-25; tie -> zero, with the sign of the exact value: -0 = 0x8000"),
    Row("h-just-over-half-smallest", "fp16", 0x1001, 0x0400, 0x0000, 0x3c00, 0x0001,
        "dy = 2^-11*(1+2^-10) (0x1001); result 2^-25*(1+2^-10) > half ulp -> 0x0001"),
    Row("h-one-and-half-smallest-tie", "fp16", 0x1600, 0x0400, 0x0000, 0x3c00, 0x0002,
        "dy = 1.5*2^-10 (0x1600); result 1.5*2^-24, tie between 1 (odd) and 2 (even) -> 0x0002"),
    Row("h-two-and-half-smallest-tie", "fp16", 0x1900, 0x0400, 0x0000, 0x3c00, 0x0002,
        "dy = 2.5*2^-10 = 1.25*2^-9 (0x1900); result 2.5*2^-24, tie 2 (even) / 3 -> 0x0002"),
    Row("h-underflow-to-neg-zero", "fp16", 0x0400, 0x0000, 0x0400, 0x3c00, 0x8000,
        "diff = -2^-14, dy = 2^-14 -> -2^-28, far below half of 2^-24 -> -0 = 0x8000"),
    Row("h-gradual-underflow-third", "fp16", 0x0400, 0x3c00, 0x0000, 0x4200, 0x0155,
        "1/3*2^-14 = 2^-24 * 1024/3 = 341.33 * 2^-24 -> 341 = 0x155 (subnormal) = 0x0155"),
    Row("h-subnormal-beta-tie", "fp16", 0x0003, 0x0001, 0x0000, 0x0002, 0x0002,
        "beta = 2*2^-24, diff = 2^-24: ratio 1/2; dy = 3*2^-24 -> 1.5*2^-24, tie -> even 2: "
        "0x0002"),
    Row("h-subnormal-beta-boundary", "fp16", 0x0001, 0x0001, 0x0000, 0x0001, 0x0001,
        "diff = 2^-24 = beta (subnormal, rule 24) -> middle, quotient 1 -> dy = 0x0001"),
    Row("h-subnormal-dy-outer", "fp16", 0x8001, 0x4000, 0x0000, 0x3c00, 0x8001,
        "diff = 2 > 1 -> dy bit for bit, the negative subnormal 0x8001"),
    Row("h-subnormal-dy-neg-outer", "fp16", 0x8001, 0xc000, 0x0000, 0x3c00, 0x0001,
        "diff = -2 < -1 -> -dy = -(-2^-24) = 0x0001"),
    # ------------------------------------------------------------------ fp16: signed zeros
    Row("h-negzero-minus-poszero", "fp16", 0x3c00, 0x8000, 0x0000, 0x3c00, 0x8000,
        "diff = (-0) - (+0) = -0 (rule 11); sign -0 xor beta+ xor dy+ -> -0 = 0x8000"),
    Row("h-poszero-minus-negzero", "fp16", 0x3c00, 0x0000, 0x8000, 0x3c00, 0x0000,
        "diff = (+0) - (-0) = +0; all signs + -> +0"),
    Row("h-negzero-minus-negzero", "fp16", 0x3c00, 0x8000, 0x8000, 0x3c00, 0x0000,
        "diff = (-0) - (-0) = (-0) + (+0) = +0 in RNE -> +0"),
    Row("h-negzero-diff-neg-dy", "fp16", 0xbc00, 0x8000, 0x0000, 0x3c00, 0x0000,
        "diff = -0, dy = -1: sign 1 xor 0 xor 1 = 0 -> +0"),
    Row("h-x-minus-x-neg-dy", "fp16", 0xc000, 0x3c00, 0x3c00, 0x3c00, 0x8000,
        "diff = 1 - 1 = +0; dy = -2 -> sign 0 xor 0 xor 1 -> -0 = 0x8000 (rule 10)"),
    Row("h-negzero-dy-middle", "fp16", 0x8000, 0x3800, 0x0000, 0x3c00, 0x8000,
        "diff = 0.5 middle; 0.5/1*(-0) = -0 (rule 12)"),
    Row("h-negzero-dy-middle-neg-diff", "fp16", 0x8000, 0xb800, 0x0000, 0x3c00, 0x0000,
        "diff = -0.5; -0.5/1*(-0) = +0"),
    Row("h-poszero-dy-neg-outer", "fp16", 0x0000, 0xc000, 0x0000, 0x3c00, 0x8000,
        "diff = -2 < -1 -> -dy = -(+0) = -0 = 0x8000 (rule 6)"),
    Row("h-negzero-dy-neg-outer", "fp16", 0x8000, 0xc000, 0x0000, 0x3c00, 0x0000,
        "diff = -2 < -1 -> -dy = -(-0) = +0"),
    Row("h-poszero-dy-outer", "fp16", 0x0000, 0x4000, 0x0000, 0x3c00, 0x0000,
        "diff = 2 > 1 -> dy = +0 bit for bit (rule 5)"),
    Row("h-zero-diff-neg-beta-large", "fp16", 0x3c00, 0x3c00, 0x3c00, 0xbc00, 0x3c00,
        "beta = -1 (rule 23): diff = +0 > -1 -> first line, dy = 1"),
    # ------------------------------------------------------------------ fp16: NaN
    Row("h-nan-dy-middle", "fp16", 0x7e00, 0x3800, 0x0000, 0x3c00, NAN,
        "dy qNaN, diff = 0.5 middle -> 0.5*NaN = NaN (rule 1)"),
    Row("h-nan-dy-outer", "fp16", 0x7d00, 0x4000, 0x0000, 0x3c00, NAN,
        "dy sNaN 0x7d00, diff = 2 > 1 -> dy, a NaN (rule 1/5; payload open, rule 27)"),
    Row("h-nan-neg-dy-neg-outer", "fp16", 0xfe00, 0xc000, 0x0000, 0x3c00, NAN,
        "dy = negative qNaN, diff = -2 -> -dy, still NaN"),
    Row("h-nan-x1-snan", "fp16", 0x3c00, 0x7d00, 0x0000, 0x3c00, NAN,
        "x1 sNaN -> diff NaN -> comparisons false -> middle -> NaN"),
    Row("h-nan-x2-negative", "fp16", 0x3c00, 0x0000, 0xfe00, 0x3c00, NAN,
        "x2 = negative qNaN -> diff NaN -> NaN"),
    Row("h-nan-beta-large-diff", "fp16", 0x3c00, 0x7bff, 0x0000, 0x7e01, NAN,
        "beta NaN (0x7e01): 65504 > NaN false, < -NaN false -> middle: 65504/NaN -> NaN"),
    Row("h-nan-beta-negative-snan", "fp16", 0x3c00, 0x3800, 0x0000, 0xfd00, NAN,
        "beta = negative sNaN 0xfd00 -> NaN"),
    # ------------------------------------------------------------------ fp16: infinities
    Row("h-inf-minus-inf", "fp16", 0x3c00, 0x7c00, 0x7c00, 0x3c00, NAN,
        "x1 = x2 = +inf: inf - inf invalid -> NaN (rule 2)"),
    Row("h-neginf-minus-neginf", "fp16", 0x3c00, 0xfc00, 0xfc00, 0x3c00, NAN,
        "x1 = x2 = -inf -> NaN (rule 2)"),
    Row("h-x1-inf", "fp16", 0x4200, 0x7c00, 0x3c00, 0x3c00, 0x4200,
        "diff = +inf > 1 -> dy = 3 (rule 3)"),
    Row("h-x2-neginf", "fp16", 0x4200, 0x0000, 0xfc00, 0x3c00, 0x4200,
        "diff = 0 - (-inf) = +inf -> dy = 3 (rule 3)"),
    Row("h-inf-minus-neginf", "fp16", 0x4200, 0x7c00, 0xfc00, 0x3c00, 0x4200,
        "diff = +inf - (-inf) = +inf -> dy = 3"),
    Row("h-x1-neginf", "fp16", 0x4200, 0xfc00, 0x3c00, 0x3c00, 0xc200,
        "diff = -inf < -1 -> -dy = -3 = 0xc200 (rule 4)"),
    Row("h-x2-inf", "fp16", 0x4200, 0x3c00, 0x7c00, 0x3c00, 0xc200,
        "diff = 1 - inf = -inf -> -dy = 0xc200 (rule 4)"),
    Row("h-dy-inf-middle", "fp16", 0x7c00, 0x3800, 0x0000, 0x3c00, 0x7c00,
        "middle, diff = 0.5: 0.5*inf = +inf (rule 13)"),
    Row("h-dy-neginf-middle", "fp16", 0xfc00, 0x3800, 0x0000, 0x3c00, 0xfc00,
        "0.5*(-inf) = -inf (rule 13)"),
    Row("h-dy-inf-middle-neg-diff", "fp16", 0x7c00, 0xb800, 0x0000, 0x3c00, 0xfc00,
        "diff = -0.5: -0.5*inf = -inf (rule 13)"),
    Row("h-dy-inf-zero-diff", "fp16", 0x7c00, 0x3c00, 0x3c00, 0x3c00, NAN,
        "diff = +0, 0/1*inf = 0*inf invalid -> NaN (rule 14)"),
    Row("h-dy-neginf-neg-outer", "fp16", 0xfc00, 0xc000, 0x0000, 0x3c00, 0x7c00,
        "diff = -2 -> -dy = -(-inf) = +inf (rule 6)"),
    Row("h-beta-inf-pos", "fp16", 0x4200, 0x3800, 0x0000, 0x7c00, 0x0000,
        "beta = +inf: 0.5 in [-inf, inf] -> middle; 0.5/inf = +0; *3 = +0 (rule 19)"),
    Row("h-beta-inf-neg-diff", "fp16", 0x4200, 0xb800, 0x0000, 0x7c00, 0x8000,
        "beta = +inf, diff = -0.5 -> -0 * 3 = -0 (rule 19)"),
    Row("h-beta-inf-dy-inf", "fp16", 0x7c00, 0x3800, 0x0000, 0x7c00, NAN,
        "beta = +inf: 0.5/inf = 0; 0*inf -> NaN (rule 19)"),
    Row("h-beta-inf-diff-inf", "fp16", 0x3c00, 0x7c00, 0x0000, 0x7c00, NAN,
        "beta = +inf, diff = +inf: inf > inf false, inf < -inf false -> inf/inf NaN (rule 20)"),
    # ------------------------------------------------------------------ fp16: odd beta
    Row("h-beta-poszero-pos-diff", "fp16", 0x4200, 0x3800, 0x0000, 0x0000, 0x4200,
        "beta = +0, diff = 0.5 > 0 -> dy = 3 (rule 21)"),
    Row("h-beta-poszero-neg-diff", "fp16", 0x4200, 0xb800, 0x0000, 0x0000, 0xc200,
        "beta = +0, diff = -0.5 < -0 -> -dy = 0xc200 (rule 21)"),
    Row("h-beta-poszero-zero-diff", "fp16", 0x4200, 0x3c00, 0x3c00, 0x0000, NAN,
        "beta = +0, diff = 0: neither strict inequality holds -> 0/0 -> NaN (rule 22)"),
    Row("h-beta-negzero-pos-diff", "fp16", 0x4200, 0x3800, 0x0000, 0x8000, 0x4200,
        "beta = -0, diff = 0.5 > -0 -> dy (rule 21)"),
    Row("h-beta-negzero-zero-diff", "fp16", 0x4200, 0x8000, 0x0000, 0x8000, NAN,
        "beta = -0, diff = -0: 0/0 -> NaN (rule 22)"),
    Row("h-beta-neg-diff-between", "fp16", 0x4200, 0x3800, 0x0000, 0xbc00, 0x4200,
        "beta = -1: 0.5 > -1 -> first line, dy = 3 (rule 23; both outer conditions hold)"),
    Row("h-beta-neg-diff-below", "fp16", 0x4200, 0xc000, 0x0000, 0xbc00, 0xc200,
        "beta = -1, diff = -2: -2 > -1 false; -2 < 1 true -> -dy = 0xc200 (rule 23)"),
    Row("h-beta-neg-diff-eq-beta", "fp16", 0x4200, 0xbc00, 0x0000, 0xbc00, 0xc200,
        "beta = -1, diff = -1: -1 > -1 false; -1 < 1 true -> -dy = 0xc200 (rule 23)"),
    Row("h-beta-neginf-finite-diff", "fp16", 0x4200, 0xfbff, 0x0000, 0xfc00, 0x4200,
        "beta = -inf, diff = -65504 > -inf -> dy = 3 (rule 25)"),
    Row("h-beta-neginf-neginf-diff", "fp16", 0x4200, 0xfc00, 0x0000, 0xfc00, 0xc200,
        "beta = -inf, diff = -inf: not > -inf; -inf < +inf -> -dy = 0xc200 (rule 25)"),
    # ------------------------------------------------------------------ fp16: flush-to-zero
    Row("h-ftz-subnormal-x1", "fp16", 0x6400, 0x0001, 0x0000, 0x3c00, 0x0000,
        "FTZ: x1 = 2^-24 read as +0 -> diff = +0 -> +0 (without flushing: 2^-24*1024 = "
        "2^-14 = 0x0400)", flush=True),
    Row("h-ftz-neg-subnormal-x1", "fp16", 0x6400, 0x8001, 0x0000, 0x3c00, 0x8000,
        "FTZ: x1 = -2^-24 read as -0 -> diff = (-0) - (+0) = -0 -> -0*1024 = -0", flush=True),
    Row("h-ftz-subnormal-beta-zero-diff", "fp16", 0x3c00, 0x3c00, 0x3c00, 0x0003, NAN,
        "FTZ: beta 3*2^-24 read as +0; diff = 0 -> 0/0 -> NaN (rule 26 -> 22; "
        "without flushing it is +0)", flush=True),
    Row("h-ftz-subnormal-result", "fp16", 0x1400, 0x0400, 0x0000, 0x3c00, 0x0000,
        "FTZ: inputs normal, exact result 2^-24 is subnormal -> flushed to +0", flush=True),
    Row("h-ftz-neg-subnormal-result", "fp16", 0x9400, 0x0400, 0x0000, 0x3c00, 0x8000,
        "FTZ: result -2^-24 subnormal -> flushed to -0 = 0x8000", flush=True),
    Row("h-ftz-subnormal-dy-neg-outer", "fp16", 0x0001, 0xc000, 0x0000, 0x3c00, 0x8000,
        "FTZ: dy = 2^-24 read as +0; diff = -2 -> -dy = -0 = 0x8000", flush=True),
    Row("h-ftz-normal-result-kept", "fp16", 0x4200, 0x3800, 0x0000, 0x3c00, 0x3e00,
        "FTZ changes nothing for normal data: 0.5*3 = 1.5 = 0x3e00", flush=True),

    # ================================================================== fp32
    # fp32 constants: 0x3f800000 1, 0x40000000 2, 0x40400000 3, 0x40e00000 7 (1.75*4),
    # 0x40200000 2.5, 0x3f000000 0.5, 0x3f400000 0.75, 0x3d800000 2^-4,
    # 0x3dcccccd = fp32(0.1) = 13421773 * 2^-27, 0x7f7fffff FLT_MAX, 0x7f800000 inf
    Row("s-diff-eq-beta-0.1", "fp32", 0x40e00000, 0x3d800000, 0xbd19999a, 0x3dcccccd,
        0x40e00000,
        "x2 = 0xbd19999a = -(2^-5*(1+0x19999a/2^23)) = -5033165*2^-27; diff = 2^-4 + that = "
        "(8388608 + 5033165)*2^-27 = 13421773*2^-27 = beta exactly; middle, quotient 1 -> 7"),
    Row("s-diff-eq-neg-beta-0.1", "fp32", 0x40e00000, 0xbd19999a, 0x3d800000, 0x3dcccccd,
        0xc0e00000,
        "diff = -beta exactly -> -1*7 = -7 = 0xc0e00000"),
    Row("s-one-ulp-inside-beta-1", "fp32", 0x3f800000, 0x3f800000, 0x33800000, 0x3f800000,
        0x3f7fffff,
        "diff = 1 - 2^-24 (exact, middle); *1 = 1 - 2^-24, representable (ulp in [0.5,1) is "
        "2^-24) = 0x3f7fffff"),
    Row("s-one-ulp-outside-beta-1", "fp32", 0x40400000, 0x3f800000, 0xb4000000, 0x3f800000,
        0x40400000,
        "diff = 1 + 2^-23 > 1 -> dy = 3 = 0x40400000 (middle would give 3 + 1.5*2^-22 -> "
        "tie -> 0x40400002)"),
    Row("s-tie-rounds-up-to-even", "fp32", 0x3f800001, 0x3f400000, 0x00000000, 0x3f800000,
        0x3f400002,
        "0.75*(1+2^-23) = 0.75 + 1.5 ulp (ulp 2^-24): tie between frac 0x400001 and "
        "0x400002 (even) -> 0x3f400002"),
    Row("s-tie-rounds-down-to-even", "fp32", 0x3f800003, 0x3f400000, 0x00000000, 0x3f800000,
        0x3f400004,
        "0.75*(1+3*2^-23) = 0.75 + 4.5 ulp: tie 0x400004 (even) / 0x400005 -> 0x3f400004"),
    Row("s-third", "fp32", 0x3f800000, 0x3f800000, 0x00000000, 0x40400000, 0x3eaaaaab,
        "1/3 = 2^-2*1.0101...b; frac 0x2aaaaa, remainder 0.101..b > 1/2 -> up: 0x3eaaaaab"),
    Row("s-diff-overflows-beta-inf", "fp32", 0x40400000, 0x7f7fffff, 0xff7fffff, 0x7f800000,
        0x00000000,
        "exact diff = 2*FLT_MAX finite; beta = +inf -> middle; finite/inf*3 = +0"),
    Row("s-diff-overflows-outer", "fp32", 0x40400000, 0xff7fffff, 0x7f7fffff, 0x3f800000,
        0xc0400000,
        "exact diff = -2*FLT_MAX < -1 -> -dy = -3 = 0xc0400000"),
    Row("s-product-overflows", "fp32", 0x71800000, 0x71800000, 0x00000000, 0x76800000,
        0x6c800000,
        "diff = dy = 2^100 (exp 227), beta = 2^110: diff*dy = 2^200 overflows fp32, "
        "but 2^100/2^110*2^100 = 2^90 (exp 217 = 0xd9) = 0x6c800000"),
    Row("s-recip-beta-overflows", "fp32", 0x40400000, 0x00000002, 0x00000000, 0x00000003,
        0x40000000,
        "beta = 3*2^-149, diff = 2*2^-149: 2/3*3 = 2 = 0x40000000"),
    Row("s-smallest-subnormal", "fp32", 0x34000000, 0x00800000, 0x00000000, 0x3f800000,
        0x00000001,
        "2^-126 * 2^-23 = 2^-149 = 0x00000001"),
    Row("s-half-smallest-ties-to-zero", "fp32", 0x33800000, 0x00800000, 0x00000000,
        0x3f800000, 0x00000000,
        "2^-126 * 2^-24 = 2^-150, tie between 0 (even) and 2^-149 -> +0"),
    Row("s-half-smallest-neg", "fp32", 0xb3800000, 0x00800000, 0x00000000, 0x3f800000,
        0x80000000,
        "-2^-150 -> tie -> -0 = 0x80000000 (sign of exact value)"),
    Row("s-just-over-half-smallest", "fp32", 0x33800001, 0x00800000, 0x00000000, 0x3f800000,
        0x00000001,
        "2^-150*(1+2^-23) > half ulp -> 2^-149 = 0x00000001"),
    Row("s-one-and-half-smallest-tie", "fp32", 0x34400000, 0x00800000, 0x00000000,
        0x3f800000, 0x00000002,
        "1.5*2^-149: tie between 1 (odd) and 2 (even) -> 0x00000002"),
    Row("s-negzero-minus-poszero", "fp32", 0x3f800000, 0x80000000, 0x00000000, 0x3f800000,
        0x80000000,
        "diff = (-0) - (+0) = -0 -> -0/1*1 = -0"),
    Row("s-x-minus-x", "fp32", 0x3f800000, 0x40400000, 0x40400000, 0x3f800000, 0x00000000,
        "diff = 3 - 3 = +0 -> +0"),
    Row("s-nan-inputs", "fp32", 0x7fa00000, 0x7fc00000, 0x7f800001, 0xffc00000, NAN,
        "dy sNaN, x1 qNaN, x2 sNaN, beta negative qNaN -> NaN"),
    Row("s-nan-beta", "fp32", 0x3f800000, 0x3f000000, 0x00000000, 0x7fc00000, NAN,
        "beta NaN -> comparisons false -> 0.5/NaN -> NaN"),
    Row("s-inf-minus-inf", "fp32", 0x3f800000, 0xff800000, 0xff800000, 0x3f800000, NAN,
        "(-inf) - (-inf) -> NaN (rule 2)"),
    Row("s-x1-inf", "fp32", 0xc0200000, 0x7f800000, 0x00000000, 0x3f800000, 0xc0200000,
        "diff = +inf > 1 -> dy = -2.5 = 0xc0200000"),
    Row("s-x2-inf", "fp32", 0xc0200000, 0x00000000, 0x7f800000, 0x3f800000, 0x40200000,
        "diff = -inf < -1 -> -dy = 2.5 = 0x40200000"),
    Row("s-dy-inf-middle", "fp32", 0xff800000, 0x3f000000, 0x00000000, 0x3f800000,
        0xff800000,
        "0.5*(-inf) = -inf"),
    Row("s-beta-zero-zero-diff", "fp32", 0x3f800000, 0x00000000, 0x00000000, 0x00000000, NAN,
        "beta = +0, diff = +0 -> 0/0 -> NaN (rule 22)"),
    Row("s-beta-negzero-neg-diff", "fp32", 0x40400000, 0xbf000000, 0x00000000, 0x80000000,
        0xc0400000,
        "beta = -0, diff = -0.5 < +0 -> -dy = -3 (rule 21)"),
    Row("s-beta-neg", "fp32", 0x40400000, 0x00000000, 0x00000000, 0xbf800000, 0x40400000,
        "beta = -1, diff = +0 > -1 -> dy = 3 (rule 23)"),
    Row("s-beta-inf", "fp32", 0x40400000, 0xbf000000, 0x00000000, 0x7f800000, 0x80000000,
        "beta = +inf, diff = -0.5 -> -0.5/inf*3 = -0 (rule 19)"),
    Row("s-beta-neginf", "fp32", 0x40400000, 0xff7fffff, 0x00000000, 0xff800000, 0x40400000,
        "beta = -inf, diff = -FLT_MAX > -inf -> dy = 3 (rule 25)"),
    Row("s-ftz-subnormal-x1", "fp32", 0x7e800000, 0x00000001, 0x00000000, 0x3f800000,
        0x00000000,
        "FTZ: x1 = 2^-149 read as +0 -> diff = +0 -> +0 (unflushed: 2^-149*2^126 = 2^-23)",
        flush=True),
    Row("s-ftz-subnormal-result", "fp32", 0x3f000000, 0x00800000, 0x00000000, 0x3f800000,
        0x00000000,
        "FTZ: 2^-126*0.5 = 2^-127 subnormal -> +0", flush=True),
    Row("s-ftz-neg-subnormal-result", "fp32", 0xbf000000, 0x00800000, 0x00000000, 0x3f800000,
        0x80000000,
        "FTZ: -2^-127 subnormal -> -0", flush=True),
    Row("s-ftz-subnormal-beta-and-x1", "fp32", 0x40400000, 0x00000002, 0x00000000,
        0x00000003, NAN,
        "FTZ: x1 = 2*2^-149 and beta = 3*2^-149 both read as +0; diff = +0, beta = +0 -> "
        "0/0 -> NaN (rule 26 -> 22; unflushed: 2/3*3 = 2)", flush=True),
]


def _is_nan(fmt: str, bits: int) -> bool:
    if fmt == "fp16":
        return (bits & 0x7C00) == 0x7C00 and (bits & 0x03FF) != 0
    return (bits & 0x7F800000) == 0x7F800000 and (bits & 0x007FFFFF) != 0


def _param(row: Row):
    marks = [pytest.mark.xfail(strict=True, reason=row.xfail)] if row.xfail else []
    return pytest.param(row, id=row.id, marks=marks)


@pytest.mark.parametrize("row", [_param(r) for r in ROWS])
def test_hand_table_row(row: Row):
    got = evaluate_element(row.fmt, row.dy, row.x1, row.x2, row.beta,
                           flush_subnormals=row.flush).bits
    width = 4 if row.fmt == "fp16" else 8
    if row.expected == NAN:
        assert _is_nan(row.fmt, got), f"expected NaN, got 0x{got:0{width}x}: {row.why}"
    else:
        assert got == row.expected, (
            f"expected 0x{row.expected:0{width}x}, got 0x{got:0{width}x}: {row.why}")


@pytest.mark.parametrize("fmt", ["fp16", "fp32"])
def test_hand_table_through_array_api(fmt: str):
    """The non-flush rows of one format, all at once, through the numpy entry point."""
    rows = [r for r in ROWS if r.fmt == fmt and not r.flush and not r.xfail]
    dt, ut = (np.float16, np.uint16) if fmt == "fp16" else (np.float32, np.uint32)
    for beta in sorted({r.beta for r in rows}):
        sel = [r for r in rows if r.beta == beta]
        arr = lambda name: np.array([getattr(r, name) for r in sel], dtype=ut).view(dt)
        out = smoothl1lossgrad(arr("dy"), arr("x1"), arr("x2"),
                               np.array(beta, dtype=ut).view(dt)[()])
        got = np.asarray(out).view(ut)
        for r, g in zip(sel, got.tolist()):
            if r.expected == NAN:
                assert _is_nan(fmt, g), r.id
            else:
                assert g == r.expected, (r.id, hex(g))


def test_hand_table_size():
    assert len(ROWS) >= 50
    assert sum(r.flush for r in ROWS) >= 4
    n16 = sum(r.fmt == "fp16" for r in ROWS)
    assert n16 > len(ROWS) - n16 > 0
    assert len({r.id for r in ROWS}) == len(ROWS)
