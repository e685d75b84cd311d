"""The one judge: is an element acceptable, and if not, which requirement does it break.

Why one: certify, ``sl1conf fuzz``, ``sl1conf sweep``, the pytest plugin and the reports all
decide here, so an element gets the same verdict wherever and whenever it is judged. An
element is accepted when it is the correctly rounded result (``oracle``), within the
profile's ULP budget of it, one of the open-behaviour alternatives where the manual leaves
the answer open (``rules.openbehaviour``), or **reachable under the profile's error model**
(``reference.reachable``: the evaluation orders and precisions it allows, each operation's
accuracy, flushing where it may happen; docs/conformance.md). The enumerated evaluation
models and the flush-to-zero oracle are points of that set, not separate gates; their bits
are still computed, to name the model an implementation matches (R17) and to measure the
lean of its roundings (R01). Which elements each rule is about and which of them it accepts
is :data:`ELEMENT_RULES` here (the rules of the catalog's R01 to R06). The tolerance policy is
this file plus the profile: nothing else accepts or rejects an element.

Each element gets one :class:`Reason`, decided here once: exact, within the budget, reachable,
an alternative, within an open input's bounds, or rejected; certify's tallies and error
statistics, the sweep and fuzz count by it (``requirements.reasons``), so every report says
the same of the same element.

The reachable set is computed only for the elements nothing cheaper accepts (not the
oracle's bits, beyond the budget or on the boundary, no alternative's), so its cost is the
unexplained elements'.

Which rounding happens where: the oracle is correctly rounded (round to nearest even,
gradual underflow); the error model's operations round as the profile says
(reference/reachable.py). NaN is compared as a class (any NaN equals any NaN); the sign of
zero counts where the profile is strict.
"""

from __future__ import annotations

import enum
import functools

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from sl1conf.conformance.rules import openbehaviour
from sl1conf.reference import exact as exact_math  # 'exact' is a Judgement's mask here
from sl1conf.reference import fast_oracle, kernel
from sl1conf.reference import formats
from sl1conf.reference import reachable
from sl1conf.reference.models import accepted_models

__all__ = ["Reason", "REASONS", "BEYOND_BUDGET", "Expected", "Judgement", "ElementRule", "ELEMENT_RULES", "expected_for", "flush_match", "judge", "is_special", "is_zero",
           "SPECIALS", "special_class", "is_subnormal", "InputFacts", "input_facts", "ALONE_RULES",
           "within_budget_alone", "model_match", "overflow_prone", "OPEN_INPUT", "OVERFLOW_NOT_ACCEPTED"]


class Reason(enum.IntEnum):
    """Why the judge accepted an element, or that it did not: one per element, decided once here
    (as Vulkan CTS states each result's acceptance once) and counted by every driver (certify's
    tallies and error statistics, the sweep, fuzz). The weakest acceptance any deciding rule
    needed: an element within the budget but on the boundary (no budget there: R02), or an
    infinity one step past the largest finite value (no rounding: R03), is accepted only as
    reachable, an alternative or an open input's bounds, and is said so."""

    EXACT = 0  # the correctly rounded result (NaN as a class)
    WITHIN_BUDGET = 1  # within the profile's ULP budget of it (the zero's sign included where strict)
    REACHABLE = 2  # reachable under the profile's error model (the order, the approximate operation or the flush it took)
    ALTERNATIVE = 3  # an open-behaviour alternative's bits (rules.openbehaviour: its name)
    OPEN_BOUNDS = 4  # an open input's answer within its stated bounds (which question)
    REJECTED = 5  # a deciding rule rejects it (the kind: the requirements it breaks)


REASONS = tuple(r.name.lower() for r in Reason)
"""Each reason's name in reports, sweep states and fuzz summaries (exact, within_budget,
reachable, alternative, open_bounds, rejected): one vocabulary in code, schema and prose."""
BEYOND_BUDGET = (Reason.REACHABLE, Reason.ALTERNATIVE, Reason.OPEN_BOUNDS)
"""The reasons reports call "accepted beyond the budget": shown apart, each with what it took."""


@dataclass
class Expected:
    """Everything acceptable for the elements of one call (bit arrays of equal length)."""

    oracle: np.ndarray
    oracle_ftz: np.ndarray
    models: dict  # accepted model name -> bits
    alternatives: dict = field(default_factory=dict)  # open-behaviour alternative name -> bits
    diff: "tuple | None" = None  # exact_diff(x1, x2) of these elements, where expected_for computed it

    def at(self, idx) -> "Expected":
        """The same, for some of the elements."""
        return Expected(self.oracle[idx], self.oracle_ftz[idx], {k: v[idx] for k, v in self.models.items()},
                        {k: v[idx] for k, v in self.alternatives.items()},
                        None if self.diff is None else (self.diff[0][idx], self.diff[1][idx]))


def expected_for(fmt: formats.Format, dy, x1, x2, beta: int, *, variant: str = "p", core_mask: int = 0xFF,
                 oracle: "np.ndarray | None" = None) -> Expected:
    """Everything acceptable for these inputs, computed afresh (fuzz and sweep; certify reads
    the same columns from the vector set). ``oracle``: the correctly rounded bits, where the
    caller has them already. The models come from the kernel, which gives the numpy
    emulation's bits (``reference.models``, what the vector sets hold) but for NaN payloads,
    and NaN is compared as a class: the same judgement, many times faster."""
    f = lambda b: np.ascontiguousarray(b, dtype=fmt.uint).view(fmt.dtype)  # noqa: E731
    args = (f(dy), f(x1), f(x2))
    b = f(np.array([beta], fmt.uint))[0]
    bits = lambda a: np.ascontiguousarray(np.asarray(a, fmt.dtype)).view(fmt.uint)  # noqa: E731
    if oracle is None:
        oracle = bits(fast_oracle.smoothl1lossgrad(*args, b))
    with np.errstate(all="ignore"):
        diff = exact_math.exact_diff(fmt, x1, x2)
    return Expected(oracle, _flushed_oracle(fmt, args, b, beta, oracle), model_bits(fmt, args, b),
                    openbehaviour.alternatives(fmt, dy, x1, x2, beta, variant=variant, core_mask=core_mask, oracle=oracle,
                                               diff=diff), diff)


def model_bits(fmt: formats.Format, args, b, names=None) -> dict:
    """Every accepted model's bits (the kernel's: the numpy emulation's but for NaN payloads) for
    ``args`` (dy, x1, x2 as arrays of the format's dtype) and ``b`` (beta, a scalar of it);
    ``names``: only those models."""
    return {m.name: np.ascontiguousarray(kernel.smoothl1lossgrad(*args, b, model=m.name, threads=1)).view(fmt.uint)
            for m in accepted_models(fmt) if names is None or m.name in names}


def model_match(fmt: formats.Format, got, dy, x1, x2, beta: int, names=None) -> np.ndarray:
    """Where ``got`` is some accepted model's result (NaN as a class): a Judgement's ``models``
    ORed, for elements judged without :func:`expected_for` (:func:`within_budget_alone`);
    ``names``: of those models only."""
    f = lambda a: np.ascontiguousarray(a, dtype=fmt.uint).view(fmt.dtype)  # noqa: E731
    bits = model_bits(fmt, (f(dy), f(x1), f(x2)), f(np.array([beta], fmt.uint))[0], names)
    return np.logical_or.reduce([formats.same_result(fmt, got, m) for m in bits.values()] or [np.zeros(np.shape(got), bool)])


def flush_match(fmt: formats.Format, got, dy, x1, x2, beta: int, oracle) -> np.ndarray:
    """Where ``got`` is the flush-to-zero oracle's result (NaN as a class): a Judgement's ``ftz``,
    for elements judged without :func:`expected_for` (:func:`within_budget_alone`; ``oracle``:
    their correctly rounded bits)."""
    f = lambda a: np.ascontiguousarray(a, dtype=fmt.uint).view(fmt.dtype)  # noqa: E731
    args = (f(dy), f(x1), f(x2))
    return formats.same_result(fmt, got, _flushed_oracle(fmt, args, f(np.array([beta], fmt.uint))[0], beta,
                                                         np.asarray(oracle, fmt.uint)))


def _flushed_oracle(fmt: formats.Format, args, b, beta: int, oracle: np.ndarray) -> np.ndarray:
    """The flush-to-zero oracle's bits: computed where flushing can change the element (a
    subnormal input or a subnormal correctly rounded result), the oracle's bits elsewhere,
    which is what flushing nothing gives (all of it computed when beta is subnormal)."""
    if is_subnormal(fmt, np.array([beta], fmt.uint))[0]:
        return np.ascontiguousarray(fast_oracle.smoothl1lossgrad(*args, b, flush_subnormals=True)).view(fmt.uint)
    bits = [a.view(fmt.uint) for a in args]
    idx = np.flatnonzero(is_subnormal(fmt, oracle) | is_subnormal(fmt, bits[0]) | is_subnormal(fmt, bits[1])
                         | is_subnormal(fmt, bits[2]))
    out = oracle.copy()
    if idx.size:
        out[idx] = np.ascontiguousarray(fast_oracle.smoothl1lossgrad(*(a[idx] for a in args), b,
                                                                     flush_subnormals=True)).view(fmt.uint)
    return out


SPECIALS = ("infinity where the result is finite", "NaN where the result is a number",
            "finite where the result is infinite", "a number where the result is NaN", "the other infinity",
            "the other sign", "zero where the result is normal", "a normal number where the result is zero")
"""Results that are not a distance from the correctly rounded one: named and counted apart,
never folded into the largest ULP error. An overflow to infinity is not "1 ULP past the
largest finite value"; nor is a result of the other sign (where either is normal: the ULP
count would run through every smaller value of both signs), a normal result flushed to zero,
or a normal number where the result is zero (counting the format's whole range, about 2**31
steps for fp32). Between subnormals of either sign, or a subnormal and zero, the steps are
few and the distance means what it says."""


def special_class(fmt: formats.Format, got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Index into SPECIALS per element (-1: a distance: both finite and not one of the classes
    above, or the same special value, NaN as a class)."""
    def kind(b):
        b = np.asarray(b)
        special = (b & fmt.exp_mask) == fmt.exp_mask
        nan = special & ((b & fmt.frac_mask) != 0)
        exp = b & fmt.exp_mask
        return (special & ~nan, nan, (b & fmt.sign_mask) != 0, ~special & (exp != 0),
                (b & ~np.array(fmt.sign_mask, fmt.uint)) == 0)
    gi, gn, gs, g_normal, g_zero = kind(got)
    wi, wn, ws, w_normal, w_zero = kind(want)
    finite = ~gi & ~gn & ~wi & ~wn
    out = np.full(np.shape(got), -1, np.int64)
    for k, mask in enumerate((gi & ~wi & ~wn, gn & ~wn, ~gi & ~gn & wi, ~gn & wn, gi & wi & (gs != ws),
                              finite & ~g_zero & ~w_zero & (gs != ws) & (g_normal | w_normal),
                              finite & g_zero & w_normal, finite & g_normal & w_zero)):
        out[mask & (out < 0)] = k
    return out


def is_special(fmt: formats.Format, bits) -> np.ndarray:
    """Infinity or NaN."""
    return (np.asarray(bits) & fmt.exp_mask) == fmt.exp_mask


def is_zero(fmt: formats.Format, bits) -> np.ndarray:
    """+0 or -0."""
    return (np.asarray(bits) & ~np.array(fmt.sign_mask, fmt.uint)) == 0


def is_subnormal(fmt: formats.Format, bits) -> np.ndarray:
    """A nonzero subnormal."""
    b = np.asarray(bits)
    return ((b & fmt.exp_mask) == 0) & ((b & fmt.frac_mask) != 0)


@dataclass
class Judgement:
    """One call's elements against everything acceptable (arrays over the judged elements).

    The masks the element rules read: ``exact`` (the correctly rounded result, NaN as a
    class), ``dist`` (ULPs from it; ``formats.NAN_MISMATCH`` where one side is NaN),
    ``within`` (within the profile's budget, zero sign included where strict), ``ftz`` (the
    flush-to-zero oracle's bits), ``reach`` (reachable under the error model, and how: stage 0
    where not, or where something cheaper accepted the element first), ``models`` and ``alt``
    (equal to each enumerated model and alternative), ``boundary`` (the exact diff is +-beta). ``ok``: accepted by every rule
    that applies; ``rejected``: requirement id -> elements that rule rejects; ``breaks``: the
same for the rules that decide under the profile (a strict-only rule is recorded elsewhere).
    """

    fmt: formats.Format
    got: np.ndarray
    expected: Expected
    exact: np.ndarray
    dist: np.ndarray
    within: np.ndarray
    ftz: np.ndarray
    reach: reachable.Reach
    models: dict
    alt: dict
    boundary: np.ndarray
    subnormal_inputs: np.ndarray
    overflow_prone: np.ndarray  # an intermediate (x1 - x2, diff * dy, 1 / beta) overflows the format
    open_q: np.ndarray = None  # the open question the element's input raises (openbehaviour.BOUNDED index, -1: none)
    bounded: np.ndarray = None  # an open input's answer within its bounds (openbehaviour.within_bounds)
    inputs: tuple = ()  # (dy, x1, x2, beta) bits of the judged elements (beta: one, or one per element)
    ok: np.ndarray = None
    rejected: dict = field(default_factory=dict)
    breaks: dict = field(default_factory=dict)  # the rejections that make an element unacceptable here
    checked: dict = field(default_factory=dict)  # requirement id -> elements its rule applies to
    reason: np.ndarray = None  # the Reason of every element (uint8): why it was accepted, or that it was not
    case: object = None  # the call judged, where the caller knows it (its unwritten elements, the diagnosis's patterns)

    def part(self, lo: int, hi: int) -> "Judgement":
        """The judgement of elements lo..hi-1 (views): one call's share of a judgement made
        over a whole run at once (every rule is a function of the element alone)."""
        s = slice(lo, hi)
        cut = lambda d: {k: v[s] for k, v in d.items()}  # noqa: E731
        return Judgement(self.fmt, self.got[s], self.expected.at(s), self.exact[s], self.dist[s], self.within[s],
                         self.ftz[s], reachable.Reach(self.reach.stage[s], self.reach.how[s], self.reach.blocked_at(s)),
                         cut(self.models), cut(self.alt), self.boundary[s],
                         self.subnormal_inputs[s], self.overflow_prone[s], self.open_q[s], self.bounded[s],
                         tuple(a if np.ndim(a) == 0 else a[s] for a in self.inputs), self.ok[s], cut(self.rejected),
                         cut(self.breaks), cut(self.checked), self.reason[s])

    @functools.cached_property
    def acceptable_beyond_budget(self) -> np.ndarray:
        """Reachable under the error model, an open alternative's bits, or an open input's answer
        within its bounds (whatever the distance); computed once per judgement (every rule reads it)."""
        return (self.reach.stage > 0) | self.alternative | self.bounded

    @functools.cached_property
    def alternative(self) -> np.ndarray:
        """An open alternative's bits (any of them)."""
        out = np.zeros(self.got.shape, bool)
        for mask in self.alt.values():
            out |= mask
        return out

    @functools.cached_property
    def unwritten(self) -> np.ndarray:
        """Elements whose dx1 bits are still those the call began with (the fill, or the aliased
        input): never written. All False where the judgement is of no known call."""
        if self.case is None:
            return np.zeros(self.got.shape, bool)
        return self.got == self.case.initial_out()[:self.got.size]

    @property
    def flushed(self) -> np.ndarray:
        """Reachable only through a flush (an input read as zero, an intermediate or the result flushed)."""
        return self.reach.stage == 3

    @functools.cached_property
    def flush_explained(self) -> np.ndarray:
        """Rejected elements (written ones) whose result flushing gives: reachable by IEEE arithmetic
        in an order the default error model lists with a subnormal input read as zero, or an
        intermediate or the result flushed (reachable.FLUSHING), and not without a flush. Zeros
        are compared without their sign (DAZ reads -tiny as -0, and -0 - -0 is +0: the sign depends
        on the path, which the reachable set does not follow), so a zero of the wrong sign where the
        result is zero is never put down to flushing: arithmetic without a flush reaches a zero too. What
        a diagnosis names as the cause where it holds a requirement's failures: an FPU in flush
        mode certified on a profile that forbids flushing fails many requirements for one reason.
        Computed once per judgement, and only where a subnormal can arise (reachable.may_flush)."""
        out = np.zeros(self.got.shape, bool)
        if self.ok is None or not self.inputs:
            return out
        n = self.got.size
        dy, x1, x2, beta = (np.broadcast_to(np.asarray(a, self.fmt.uint), (n,)) for a in self.inputs)
        idx = np.flatnonzero(~self.ok & ~self.unwritten)
        if idx.size:
            idx = idx[reachable.may_flush(self.fmt, dy[idx], x1[idx], x2[idx], beta[idx])]
        if idx.size:
            r = reachable.reach(self.fmt, reachable.FLUSHING, self.got[idx], dy[idx], x1[idx], x2[idx], beta[idx],
                                self.expected.oracle[idx], stages=(1, 3))
            out[idx[r.stage == 3]] = True
        return out

    @functools.cached_property
    def beyond_budget(self) -> np.ndarray:
        """Accepted beyond the budget (:data:`BEYOND_BUDGET`: reachable, an alternative's bits or an
        open input's bounds; reports show these apart from the largest error, with what it took).
        Computed once per judgement (every element requirement's tally and the error statistics read it)."""
        return (self.reason >= Reason.REACHABLE) & (self.reason <= Reason.OPEN_BOUNDS)

    def accepted_as(self, at: "np.ndarray | None" = None) -> np.ndarray:
        """Per element, what accepted it beyond the budget (object array, "" elsewhere): what the
        error model took (the evaluation, and the approximation or flush), else the first
        alternative whose bits it is. Computed once per judgement; ``at``: only those elements
        (indices: a whole run's few beyond the budget, without an array over all of them)."""
        if at is not None:
            return self._name_accepted(at)
        if "_accepted_as" not in self.__dict__:
            self.__dict__["_accepted_as"] = self._name_accepted(slice(None))
        return self.__dict__["_accepted_as"]

    def _name_accepted(self, at) -> np.ndarray:
        reason = self.reason[at]
        out = np.full(reason.shape, "", object)
        todo = reason == Reason.ALTERNATIVE
        for name, hit in self.alt.items():
            take = todo & hit[at]
            out[take] = name
            todo &= ~take
        take = reason == Reason.OPEN_BOUNDS
        open_q = self.open_q[at]
        for q in np.unique(open_q[take]).tolist():
            out[take & (open_q == q)] = f"{openbehaviour.BOUNDED[q]}: {openbehaviour.WITHIN_BOUNDS}"
        take = reason == Reason.REACHABLE
        out[take] = self.reach.how[at][take]
        return out


@dataclass(frozen=True)
class ElementRule:
    """A rule about single elements, named by the requirement it checks (``sl1conf.conformance.requirements``):
    ``applies(j)`` the elements it is about, ``own(j)`` those of them it accepts on its own (the
    correctly rounded result, the budget, ...: masks over a Judgement's elements). Every rule
    also accepts what the error model reaches, an alternative's bits and an open input's
    answer within its bounds (:meth:`accepts`), so which of those an element needed is one
    fact, its :class:`Reason`."""

    id: str
    applies: Callable
    own: Callable
    strict_only: bool = False

    def accepts(self, j) -> np.ndarray:
        """The elements it accepts: on its own, or as reachable, an alternative or within open bounds."""
        return self.own(j) | j.acceptable_beyond_budget

    def decides(self, profile) -> bool:
        """Whether a rejection makes the element unacceptable under ``profile`` (a rule
        required only on strict profiles is only recorded elsewhere)."""
        return not self.strict_only or profile.strict_zero_sign


def _within_budget(j) -> np.ndarray:
    """Exact or within the budget."""
    return j.exact | j.within


def _exactly(j) -> np.ndarray:
    """No budget: exact."""
    return j.exact


ELEMENT_RULES: tuple = (
    # Most specific first: an element that breaks several rules is filed under the first (the
    # fuzzer keys its findings so); certify counts it under each. Each rule accepts besides what
    # the error model reaches (an approximate division, a reciprocal order's beta * fl(1/beta) * dy
    # on the boundary), an alternative's bits and an open input's answer within its bounds.
    # R02: on the boundary no budget: +-dy exactly.
    ElementRule("R02", lambda j: j.boundary, _exactly),
    # R03: where the exact result is finite and an intermediate overflows (or the result is
    # infinite or NaN anyway): no infinity or NaN.
    ElementRule("R03", lambda j: ~is_special(j.fmt, j.expected.oracle) & (j.overflow_prone | is_special(j.fmt, j.got)),
                lambda j: ~is_special(j.fmt, j.got)),
    # R04: where the exact result is NaN or infinite: that (any NaN), no budget.
    ElementRule("R04", lambda j: is_special(j.fmt, j.expected.oracle), _exactly),
    # R05: a zero result where the exact result is zero: its sign (strict profiles decide on it).
    ElementRule("R05", lambda j: is_zero(j.fmt, j.expected.oracle) & is_zero(j.fmt, j.got),
                lambda j: j.got == j.expected.oracle, strict_only=True),
    # R06: elements flushing would change, or with a subnormal input: R01's rule, reported apart.
    ElementRule("R06", lambda j: ~formats.same_result(j.fmt, j.expected.oracle, j.expected.oracle_ftz) | j.subnormal_inputs,
                _within_budget),
    # R01: every element, within the budget.
    ElementRule("R01", lambda j: np.ones(j.exact.shape, bool), _within_budget),
)
"""The element rules: together with the profile, the whole tolerance policy of the suite."""


ALONE_RULES = ("R02", "R03", "R04", "R05", "R06", "R01")
"""The element rules :func:`within_budget_alone` was derived for (a test fails when ELEMENT_RULES
changes, so that the derivation is made again)."""


def within_budget_alone(fmt: formats.Format, profile, got, oracle, dist, dy, x1, x2, beta,
                        diff: "tuple | None" = None) -> np.ndarray:
    """Where :func:`judge` gives :attr:`Reason.WITHIN_BUDGET`, told from the few facts that decide
    it, for elements that are not exact (``got`` differs from ``oracle`` as a class; ``dist``:
    their ULP distances): a sweep judges 2^48 elements and most of the wrong ones are a rounding
    away, so it asks the whole judge (expected_for's models and alternatives, the error model)
    only about the others. Derivation, rule by rule of ELEMENT_RULES (an element is WITHIN_BUDGET
    when no deciding rule that applies falls short on its own, and it is not exact):
    R02 applies on the boundary only (excluded here); R03 applies, with a finite result, and
    accepts every finite result (an infinity or NaN on either side is excluded); R04 applies where
    the exact result is special (excluded); R05 where both are zeros (excluded: they differ in
    sign); R06 and R01 accept what is within the budget (required, the sign of a zero too where
    the profile is strict); R06, where it applies (a subnormal input, or a result flushing would
    change), is R01's rule, so a subnormal input or result changes nothing here (the histogram's
    row, whether the flush-to-zero oracle gives the result, is :func:`flush_match`'s). With a
    subnormal beta nothing is decided here (every element's flush-to-zero oracle differs then).
    ``diff``: exact.exact_diff of x1 and x2, where the caller has it."""
    g, w = np.asarray(got, fmt.uint), np.asarray(oracle, fmt.uint)
    alone = _within(fmt, profile, g, w, dist, profile.max_ulp[fmt.name])
    alone &= ~is_special(fmt, g) & ~is_special(fmt, w) & ~(is_zero(fmt, g) & is_zero(fmt, w))
    if is_subnormal(fmt, np.array([beta], fmt.uint))[0]:
        return np.zeros(g.shape, bool)
    at = np.flatnonzero(alone)
    if at.size:
        alone[at] = ~exact_math.at_boundary(fmt, np.asarray(x1, fmt.uint)[at], np.asarray(x2, fmt.uint)[at], beta,
                                            diff=None if diff is None else (diff[0][at], diff[1][at]))
    return alone


def _within(fmt: formats.Format, profile, got, want, dist, budget) -> np.ndarray:
    """Within ``budget`` ULPs of ``want``, the sign of a zero included where the profile is strict."""
    within = dist <= budget
    if profile.strict_zero_sign:
        within &= ~((is_zero(fmt, got) | is_zero(fmt, want)) & (((got ^ want) & fmt.sign_mask) != 0))
    return within


@dataclass
class InputFacts:
    """What the judge knows of elements from their inputs alone (no result needed): the exact
    diff (s, e), an intermediate that overflows the format, a subnormal input, diff = +-beta, the
    open question the input raises. Computed while the results are still being made, where a
    caller can (certify, waiting for a simulator)."""

    diff: tuple
    overflow_prone: np.ndarray
    subnormal: np.ndarray
    boundary: np.ndarray
    open_q: np.ndarray


def input_facts(fmt: formats.Format, dy, x1, x2, beta, diff: "tuple | None" = None) -> InputFacts:
    """The :class:`InputFacts` of the elements (``beta``: one pattern, or one per element;
    ``diff``: their exact diff where the caller has it)."""
    with np.errstate(all="ignore"):  # diff exactly (binary64 holds it)
        s, e = diff if diff is not None else exact_math.exact_diff(fmt, x1, x2)
    sub = is_subnormal(fmt, dy) | is_subnormal(fmt, x1) | is_subnormal(fmt, x2) | is_subnormal(fmt, beta)
    return InputFacts((s, e), overflow_prone(fmt, s, dy, beta), np.broadcast_to(sub, np.shape(x1)),
                      exact_math.at_boundary(fmt, x1, x2, beta, diff=(s, e)),
                      openbehaviour.open_question(fmt, x1, x2, beta, diff=(s, e)))


def overflow_prone(fmt: formats.Format, s, dy, beta) -> np.ndarray:
    """Where an intermediate overflows the format (:class:`InputFacts`' ``overflow_prone``): the
    exact diff ``s`` (binary64), ``s * dy`` (in binary64) or ``1 / beta`` beyond its largest
    finite value."""
    with np.errstate(all="ignore"):
        top = exact_math.beta_value(fmt, fmt.inf_bits - 1)
        if np.ndim(beta) == 0:  # one beta: 1 / beta asked once (a sampled block asks it of 10^5 elements)
            if np.float64(1.0) / np.abs(np.float64(exact_math.beta_value(fmt, int(beta)))) > top:  # (NaN: not)
                return np.ones(np.broadcast_shapes(np.shape(s), np.shape(dy)), bool)
            return (np.abs(s) > top) | (np.abs(s * exact_math.as_f64(fmt, dy)) > top)
        b = np.abs(exact_math.as_f64(fmt, np.broadcast_to(np.asarray(beta, fmt.uint), np.shape(s))))
        return (np.abs(s) > top) | (np.abs(s * exact_math.as_f64(fmt, dy)) > top) | (1.0 / b > top)


def judge(fmt: formats.Format, profile, got, expected: Expected, dy, x1, x2, beta,
          facts: "InputFacts | None" = None) -> Judgement:
    """Every element of ``got`` (bits, as many as ``expected`` has) under ``profile``: the
    masks, then each element rule of the catalog; ``ok`` is where none rejects. ``beta``: the
    call's bit pattern, or one per element (many calls judged at once); ``facts``: the
    elements' :func:`input_facts`, where the caller computed them already."""
    got = np.asarray(got, fmt.uint)
    oracle = expected.oracle
    exact = formats.same_result(fmt, got, oracle)
    dist = np.zeros(got.shape, np.int64)  # measured where it is not 0: the few elements that are not exact
    off = np.flatnonzero(~exact)
    dist[off] = formats.ulp_distance(fmt, got[off], oracle[off])
    budget = profile.max_ulp[fmt.name]
    within = _within(fmt, profile, got, oracle, dist, budget)
    if facts is None:
        facts = input_facts(fmt, dy, x1, x2, beta, expected.diff)
    (s, e), prone, sub, boundary, open_q = facts.diff, facts.overflow_prone, facts.subnormal, facts.boundary, facts.open_q
    alt = {name: formats.same_result(fmt, got, bits) for name, bits in expected.alternatives.items()}
    bounded = openbehaviour.within_bounds(fmt, got, dy, x1, x2, np.where(exact, -1, open_q), oracle, budget,
                                          diff=(s, e))
    # the error model's set, where nothing cheaper accepts the element (the budget does not on the
    # boundary, nor for an infinity or NaN: one step past the largest finite value is no rounding)
    idx = off[~within[off] | boundary[off] | is_special(fmt, got[off]) | is_special(fmt, oracle[off])]
    taken = bounded[idx]
    for mask in alt.values():
        taken |= mask[idx]
    idx = idx[~taken]
    stage, how, blocked = np.zeros(got.shape, np.int8), np.full(got.shape, "", object), None
    if idx.size:
        pick = lambda a: np.broadcast_to(np.asarray(a, fmt.uint), got.shape)[idx]  # noqa: E731
        r = reachable.reach(fmt, profile.error_model, got[idx], pick(dy), pick(x1), pick(x2), pick(beta), oracle[idx],
                     strict_zero_sign=profile.strict_zero_sign)
        stage[idx], how[idx] = r.stage, r.how
        if r.blocked is not None:
            blocked = np.full(got.shape, "", object)
            blocked[idx] = r.blocked
        _open_reach(fmt, profile, got, dy, x1, x2, beta, idx[(r.stage == 0) & (open_q[idx] >= 0)], open_q, stage, how)
        if blocked is not None:
            blocked[stage > 0] = ""
    j = Judgement(fmt, got, expected, exact, dist, within, formats.same_result(fmt, got, expected.oracle_ftz), reachable.Reach(stage, how, blocked),
                  {name: formats.same_result(fmt, got, bits) for name, bits in expected.models.items()}, alt,
                  boundary, sub, prone, open_q, bounded,
                  tuple(np.asarray(a, fmt.uint) for a in (dy, x1, x2)) + (beta if np.ndim(beta) == 0 else np.asarray(beta, fmt.uint),))
    ok = np.ones(got.shape, bool)
    needs = np.zeros(got.shape, bool)  # a deciding rule does not accept it on its own
    otherwise = j.acceptable_beyond_budget
    for rule in ELEMENT_RULES:
        applies = rule.applies(j)
        short = applies & ~rule.own(j)
        bad = short & ~otherwise
        j.checked[rule.id] = applies
        j.rejected[rule.id] = bad
        if rule.decides(profile):
            ok &= ~bad
            needs |= short
            j.breaks[rule.id] = bad
    j.ok = ok
    j.reason = _reasons(j, needs)
    return j


OVERFLOW_NOT_ACCEPTED = "reached only through an overflow the profile does not accept (error_model.overflow)"
"""What an element's record says where the error model reaches its infinity or NaN only through an
overflow the profile does not list (reachable.Reach.blocked: the evaluation and the intermediate,
``muldiv-fp32: diff * dy overflows``): R03 fails it, and its record names what overflowed."""


OPEN_INPUT = "on an open input"
"""What the error model's label adds where an element's input is open (the order evaluated as written there)."""


def _open_reach(fmt, profile, got, dy, x1, x2, beta, idx, open_q, stage, how) -> None:
    """Where the manual leaves the input open (``idx``: elements no cheaper acceptance took and the error
    model's sets, which judge a positive beta only, did not reach): the bits an order the profile allows
    gives there, evaluated as written (reachable.open_reach), are reachable too (issue 39, item 3: the
    acceptable set of an open input is the reachable set together with the stated bounds, never less
    than either). Said ``clamp-divmul-fp16, as min(max(diff, -beta), beta) / beta * dy, on an open
    input (beta < 0)``, so a report tells an answer reachable there from one within the bounds."""
    if not idx.size:
        return
    pick = lambda a: np.broadcast_to(np.asarray(a, fmt.uint), got.shape)[idx]  # noqa: E731
    r = reachable.open_reach(fmt, profile.error_model, got[idx], pick(dy), pick(x1), pick(x2), pick(beta),
                             strict_zero_sign=profile.strict_zero_sign)
    hit = r.stage > 0
    at = idx[hit]
    stage[at] = r.stage[hit]
    how[at] = [f"{h}, {OPEN_INPUT} ({openbehaviour.BOUNDED[q]})" for h, q in zip(r.how[hit], open_q[at].tolist())]


def _reasons(j: Judgement, needs: np.ndarray) -> np.ndarray:
    """The :class:`Reason` of every element: rejected, exact, within the budget where every
    deciding rule accepts it on its own, else what accepted it, in the order the judge looks: an
    alternative's bits, then an open input's bounds, then the error model (asked only where
    neither accepts the element)."""
    out = np.where(j.ok, np.where(j.exact, Reason.EXACT, Reason.WITHIN_BUDGET), Reason.REJECTED).astype(np.uint8)
    beyond = j.ok & ~j.exact & needs
    if beyond.any():
        out[beyond] = np.where(j.alternative[beyond], Reason.ALTERNATIVE,
                               np.where(j.bounded[beyond], Reason.OPEN_BOUNDS, Reason.REACHABLE))
    return out
