"""A case's common post-pass: flags from the data, and the open alternatives.

Every generator builds its cases with :func:`make_case` (bit patterns and the flags it
claims); :func:`generate` then passes each through :func:`finish_case`, which adds the flags
that describe the case as a whole and the acceptable alternatives.

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

import numpy as np

from sl1conf.adapters.base import FILL_BYTE, Case
from sl1conf.conformance.rules.openbehaviour import NOTES
from sl1conf.conformance.rules.openbehaviour import alternatives as open_alternatives
from sl1conf.conformance.vectors.cases import VectorCase
from sl1conf.conformance.vectors.families.bits import bit_array, float_view, is_subnormal
from sl1conf.reference import formats
from sl1conf.reference.formats import Format

__all__ = ["make_case", "finish_case", "oracle_bits"]


def _beta_flags(fmt: Format, beta: int) -> list[str]:
    cls, sign = formats.classify(fmt, beta)
    if cls is formats.FloatClass.QNAN:
        return ["nan-beta"]
    if cls is formats.FloatClass.SNAN:
        return ["snan-beta"]
    if cls is formats.FloatClass.ZERO:
        return ["beta-zero"] + (["beta-neg-zero"] if sign else [])
    flags = ["beta-negative"] if sign else []
    if cls is formats.FloatClass.INF:
        flags.append("beta-neg-inf" if sign else "beta-inf")
    elif cls is formats.FloatClass.SUBNORMAL:
        flags.append("beta-subnormal")
    return flags


def oracle_bits(fmt: Format, dy, x1, x2, beta: int, ftz: bool = False) -> np.ndarray:
    """The fast oracle's dx1 for bit-pattern inputs, as bits (``ftz``: subnormals flushed)."""
    from sl1conf.reference.fast_oracle import smoothl1lossgrad

    out = smoothl1lossgrad(float_view(fmt, dy), float_view(fmt, x1), float_view(fmt, x2),
                           float_view(fmt, bit_array(fmt, [beta]))[0], flush_subnormals=ftz)
    return np.ascontiguousarray(out).view(fmt.uint)


def _expected(fmt: Format, call: Case) -> np.ndarray:
    """The answer the alternatives are compared with: the oracle's, or dx1 untouched
    (FILL_BYTE) where a correct call writes nothing (core_mask 0)."""
    if call.variant == "s" and call.core_mask == 0:
        return np.full(call.n * fmt.dtype.itemsize, FILL_BYTE, np.uint8).view(fmt.uint)
    return oracle_bits(fmt, call.dy, call.x1, call.x2, call.beta)


def _kept(fmt: Format, oracle: np.ndarray, candidates: dict) -> dict:
    """The alternatives that differ from ``oracle`` somewhere and from every one kept before."""
    kept: dict = {}
    for name, alt in candidates.items():
        if alt.shape != oracle.shape:
            raise AssertionError(f"alternative {name} has the wrong length")
        if (~formats.same_result(fmt, alt, oracle)).any() and not any(
                formats.same_result(fmt, alt, other).all() for other in kept.values()):
            kept[name] = alt.astype(fmt.uint)
    return kept


def finish_case(fmt: Format, case: VectorCase) -> VectorCase:
    """Flags from the data, and the alternatives that differ from the expected answer somewhere.
    ``fmt`` must be the call's format (it is said where the record is made, and checked)."""
    c = case.call
    if c.dtype != fmt.name:
        raise ValueError(f"finish_case: a {c.dtype} call finished as {fmt.name}")
    flags = list(case.flags) + _beta_flags(fmt, c.beta)
    if c.n and (is_subnormal(fmt, c.dy) | is_subnormal(fmt, c.x1) | is_subnormal(fmt, c.x2)).any():
        flags.append("subnormal-input")
    if c.n and c.call_length == c.n:
        oracle = _expected(fmt, c)
        kept = _kept(fmt, oracle, open_alternatives(fmt, c.dy, c.x1, c.x2, c.beta, variant=c.variant,
                                                    core_mask=c.core_mask))
        if (~formats.same_result(fmt, oracle_bits(fmt, c.dy, c.x1, c.x2, c.beta, ftz=True), oracle)).any():
            flags.append("ftz-sensitive")
        if "rounded-diff" in kept:
            flags.append("rounded-diff-sensitive")
        if kept:
            case.result = "acceptable"
            case.alternatives = kept
            case.note = "; ".join(f"{name}: {NOTES[name]}" for name in kept)
        elif c.variant == "s" and c.core_mask == 0:
            case.result = "acceptable"
            case.note = ("core_mask = 0 selects no core: nothing written is the expected answer; the manual "
                         "does not say, so certify records what an implementation does (R16) and the C "
                         "self-test demands nothing written")
    elif 0 < c.call_length < c.n:  # the elements a shorter call writes may be open too
        L = c.call_length
        fill = np.full(c.n * fmt.dtype.itemsize, FILL_BYTE, np.uint8).view(fmt.uint)
        oracle = np.concatenate([oracle_bits(fmt, c.dy[:L], c.x1[:L], c.x2[:L], c.beta), fill[L:]])
        shorter = open_alternatives(fmt, c.dy[:L], c.x1[:L], c.x2[:L], c.beta, variant=c.variant,
                                    core_mask=c.core_mask)
        kept = _kept(fmt, oracle, {name: np.concatenate([alt, fill[L:]]).astype(fmt.uint)
                                   for name, alt in shorter.items()})
        if kept:
            case.result = "acceptable"
            case.alternatives = kept
            case.note = "; ".join(f"{name}: {NOTES[name]}" for name in kept)
    case.flags = tuple(dict.fromkeys(flags))
    return case


def make_case(fmt: Format, dy, x1, x2, beta: int, flags, **call_fields) -> VectorCase:
    """A record (before :func:`finish_case`): the call of these bit patterns in ``fmt`` (with
    ``call_fields``: variant, core_mask, length) and the flags it claims."""
    call = Case(fmt.name, bit_array(fmt, dy), bit_array(fmt, x1), bit_array(fmt, x2), int(beta), **call_fields)
    return VectorCase(call, flags=tuple(flags))
