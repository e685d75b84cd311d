"""Shrink a failing call to the shortest array and the simplest values that still fail.

Why: a fuzzer's failure is one element among 65,536 random ones; the regression vector it
leaves behind should be one element (or the shortest call that still fails, for a defect
that needs length 13), with the other elements zeros and the failing one made of round
numbers wherever the defect allows. Every step is kept only if the call still fails with a
finding of the same kind (and, for a wrong result, on the same branch of the formula).

Order: (1) the failing element alone, then in the shortest window that still fails (with
the element last, as in a tail, or first); (2) chunks of the call removed, halving the
chunk size (delta debugging), under a budget of calls; (3) the other elements replaced by
``dy = 1, x1 = x2 = 0`` (all at once, else one by one); (4) the failing element's x2 made 0
with x1 the rounded diff, then its dy, beta, x2 and x1 replaced by simpler patterns (the
canonical values first: 1.0, 0, for beta 1.0 then the smallest subnormal; then an exponent
nearer 1.0's, fewer significant bits). Canonical values make one defect seen with many
betas (or values) minimize to one case, which the caller then saves once.

Why ``give_up``: an interrupted campaign still saves what it found, in bounded time; once
``give_up()`` is true, steps (2) to (4) keep what they have. Step (1) always runs: at most
2 * MAX_WINDOW calls of at most MAX_WINDOW elements, and it turns 65,536 elements into few.
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from sl1conf.adapters.base import Case
from sl1conf.reference import formats

__all__ = ["minimize", "simpler_patterns", "take", "MAX_WINDOW"]

MAX_WINDOW = 64  # longest window tried around the failing element
MAX_CALLS = 2000  # budget of predicate calls for the chunk removal

Predicate = Callable[[Case], Optional[object]]  # a finding on the case, or None


def take(case: Case, idx) -> Case:
    """The call on the elements ``idx`` of ``case`` (same beta, variant, core_mask)."""
    idx = np.asarray(idx, dtype=np.int64)
    return case.replace(dy=case.dy[idx], x1=case.x1[idx], x2=case.x2[idx], length=None)


def _windows(n: int, element: int, length: int):
    """Starts of windows of ``length`` holding ``element``: with it last, then first."""
    starts = [element - length + 1, element]
    return [s for i, s in enumerate(starts) if 0 <= s <= n - length and s not in starts[:i]]


def _shortest(case: Case, found, fails: Predicate, element: int):
    for length in range(1, min(case.n, MAX_WINDOW) + 1):
        for start in _windows(case.n, element, length):
            cand = take(case, range(start, start + length))
            f = fails(cand)
            if f is not None:
                return cand, f
    return case, found


def _drop_chunks(case: Case, found, fails: Predicate):
    idx, calls = np.arange(case.n), 0
    size = len(idx) // 2
    while size >= 1 and calls < MAX_CALLS:
        i = 0
        while i < len(idx) and calls < MAX_CALLS:
            keep = np.concatenate([idx[:i], idx[i + size:]])
            calls += 1
            f = fails(take(case, keep)) if keep.size else None
            if f is not None:
                idx, found = keep, f
            else:
                i += size
        size //= 2
    return take(case, idx), found


def simpler_patterns(fmt: formats.Format, bits: int, pool=()) -> list[int]:
    """Patterns simpler than ``bits``: those of ``pool`` (canonical values, simplest first:
    each is simpler than any pattern not in it) and ``bits`` with an exponent nearer 1.0's
    or fewer significant bits, simplest first; each strictly simpler, so shrinking ends."""
    rank = {int(p): i for i, p in reversed(list(enumerate(pool)))}

    def cost(b):
        frac = b & fmt.frac_mask
        trailing = (frac & -frac).bit_length() - 1 if frac else fmt.frac_bits
        exp = (b & fmt.exp_mask) >> fmt.frac_bits
        return (rank.get(b, len(pool)), fmt.frac_bits - trailing, abs(exp - ((1 << (fmt.exp_bits - 1)) - 1)),
                b >> (fmt.bits - 1))

    frac = bits & fmt.frac_mask
    shorter = [bits & ~((1 << k) - 1) for k in range(fmt.frac_bits, 0, -1) if frac & ((1 << k) - 1)]
    exp, bias = (bits & fmt.exp_mask) >> fmt.frac_bits, (1 << (fmt.exp_bits - 1)) - 1
    closer = []  # the same sign and significand, the exponent nearer to 1.0's
    if 0 < exp < (1 << fmt.exp_bits) - 1:
        step = 1
        while step < abs(exp - bias):
            e = bias + step if exp > bias else bias - step
            closer.append((bits & ~fmt.exp_mask) | (e << fmt.frac_bits))
            step *= 2
    mine = cost(bits)
    out = [int(p) for p in (*pool, *closer, *shorter) if cost(int(p)) < mine]
    return list(dict.fromkeys(out))


def _with(case: Case, k: int, **values) -> Case:
    arrays = {name: getattr(case, name).copy() for name in ("dy", "x1", "x2")}
    for name, v in values.items():
        arrays[name][k] = v
    return case.replace(**arrays)


def _rounded_diff(case: Case, k: int) -> Optional[int]:
    """fl(x1 - x2) of element ``k`` as a bit pattern (None if it is not finite)."""
    fmt = case.format
    _, x1, x2, _ = case.floats()
    with np.errstate(all="ignore"):
        d = (x1[k:k + 1] - x2[k:k + 1]).astype(fmt.dtype)
    return int(d.view(fmt.uint)[0]) if np.isfinite(d[0]) else None


def _with_beta(case: Case, k: int, beta: int) -> Case:
    """``case`` with another beta; an element ``k`` on the boundary as the minimizer leaves it
    (x2 = 0, x1 = +-beta) stays there, its x1 moved with beta."""
    cand = case.replace(beta=beta)
    sign = case.format.sign_mask
    x1 = int(case.x1[k])
    if int(case.x2[k]) == 0 and x1 & ~sign == case.beta:
        cand = _with(cand, k, x1=(x1 & sign) | beta)
    return cand


def _simplify(case: Case, found, fails: Predicate, element: Optional[int]):
    fmt = case.format
    one = int(np.array([1.0], fmt.dtype).view(fmt.uint)[0])
    filler = {"dy": one, "x1": 0, "x2": 0}
    others = [k for k in range(case.n) if k != element]
    cand = case
    for k in others:
        cand = _with(cand, k, **filler)
    f = fails(cand) if others else None
    if f is not None:
        case, found = cand, f
    else:
        for k in others:
            cand = _with(case, k, **filler)
            f = fails(cand)
            if f is not None:
                case, found = cand, f
    if element is None:
        return case, found
    diff = _rounded_diff(case, element)  # x2 = 0 with x1 = fl(x1 - x2): the same rounded diff
    if diff is not None and int(case.x2[element]) != 0:
        cand = _with(case, element, x1=diff, x2=0)
        f = fails(cand)
        if f is not None:
            case, found = cand, f
    pools = {"dy": (one, one | fmt.sign_mask), "beta": (one, 1), "x2": (0,), "x1": (0, one, one | fmt.sign_mask)}
    for _ in range(3):  # passes until nothing changes
        changed = False
        for name, pool in pools.items():
            now = case.beta if name == "beta" else int(getattr(case, name)[element])
            for p in simpler_patterns(fmt, now, pool):
                cand = (_with_beta(case, element, p) if name == "beta" else _with(case, element, **{name: p}))
                f = fails(cand)
                if f is not None:
                    case, found, changed = cand, f, True
                    break
        if not changed:
            break
    return case, found


def minimize(case: Case, found, fails: Predicate, element: Optional[int] = None, *,
             give_up: "Callable[[], bool] | None" = None):
    """(smallest case, its finding): ``fails(case)`` returns a finding of the same failure or
    None; ``element`` is the failing element of ``case`` (None for a failure of the whole call).
    The finding's ``element`` attribute, where it has one, follows the element as it moves.
    Once ``give_up()`` is true, no further step is tried (the window search excepted)."""
    if element is not None:
        case, found = _shortest(case, found, fails, element)
    if give_up is not None:
        if give_up():
            return case, found
        raw = fails
        fails = lambda c: None if give_up() else raw(c)  # noqa: E731
    case, found = _drop_chunks(case, found, fails)
    element = getattr(found, "element", None)
    return _simplify(case, found, fails, element)
