"""One acceptance reason per element (rules.judge.Reason), decided once by the judge, and the one
aggregator every driver counts with (requirements.reasons.ReasonTally).

Every expected reason is derived by hand beside its element (fp16, the ieee profile: budget 2 ULP,
the zero's sign strict), never read from the code under test."""

from __future__ import annotations

import numpy as np

from sl1conf.conformance.requirements.reasons import ReasonTally
from sl1conf.conformance.rules.judge import BEYOND_BUDGET, REASONS, Reason, expected_for, judge
from sl1conf.conformance.rules.profiles import load_profile
from sl1conf.reference import formats as F

FP16 = F.FP16
ONE, HALF, ZERO, MAX = 0x3C00, 0x3800, 0x0000, 0x7BFF  # 1, 0.5, +0, 65504
TINY = 0x0400  # 2**-14, the smallest normal

# (dy, x1, x2, beta, got, reason, why)
ELEMENTS = [
    (ONE, HALF, ZERO, ONE, HALF, Reason.EXACT,
     "diff 0.5 < beta 1: 0.5 / 1 * 1 = 0.5, the correctly rounded result itself"),
    (ONE, HALF, ZERO, ONE, HALF + 1, Reason.WITHIN_BUDGET,
     "0x3801 is 1 ULP above 0.5, within the 2 ULP budget, and no rule without a budget applies (not the "
     "boundary, finite, not zero)"),
    (ONE, ONE, ZERO, ONE, ONE + 1, Reason.REJECTED,
     "diff = beta = 1: the boundary, where there is no budget (R02); every evaluation the profile allows "
     "computes 1 / 1 * 1 or 1 * 1 / 1 exactly, so 0x3c01, 1 ULP off, is reached by none"),
    (MAX, TINY, ZERO, MAX, ZERO, Reason.REACHABLE,
     "diff 2**-14 < beta 65504: exactly 2**-14 * 65504 / 65504 = 2**-14 (0x0400); divmul in half divides "
     "first, 2**-14 / 65504 < 2**-25 (half the smallest subnormal) rounds to +0, and +0 * 65504 = +0"),
    (ONE, HALF, ZERO, 0xBC00, HALF, Reason.ALTERNATIVE,
     "beta = -1, an input the manual leaves open: |0.5| < -1 never holds, so the formula's outer line gives "
     "sign(diff) * dy = 1; the alternative abs-beta (beta read as |beta|) gives 0.5 / 1 * 1 = 0.5"),
]


def _judged():
    dy, x1, x2, beta, got = (np.array(c, np.uint16) for c in list(zip(*ELEMENTS))[:5])
    profile = load_profile("ieee")
    out = []
    for i in range(len(ELEMENTS)):  # one call per element: each has its own beta
        s = slice(i, i + 1)
        exp = expected_for(FP16, dy[s], x1[s], x2[s], int(beta[i]))
        out.append(judge(FP16, profile, got[s], exp, dy[s], x1[s], x2[s], int(beta[i])))
    return out


def test_each_element_has_the_reason_derived_by_hand():
    for j, (*_, reason, why) in zip(_judged(), ELEMENTS):
        assert j.reason.tolist() == [reason], why
        assert bool(j.ok[0]) == (reason != Reason.REJECTED), why
        assert bool(j.beyond_budget[0]) == (reason in BEYOND_BUDGET), why


def test_what_accepted_an_element_beyond_the_budget_is_named_with_its_reason():
    js = _judged()
    assert js[3].accepted_as().tolist() == ["divmul-fp16"] or js[3].accepted_as()[0].startswith("divmul-fp16")
    assert js[4].accepted_as().tolist() == ["abs-beta"]
    assert js[0].accepted_as().tolist() == [""]  # exact: nothing beyond the budget to name


def test_the_one_aggregator_counts_every_element_once_and_merges_in_any_order():
    js = _judged()
    a, b, whole = ReasonTally(), ReasonTally(), ReasonTally()
    for k, j in enumerate(js):
        (a if k % 2 else b).add(j, None, lambda i, k=k: {"element": k})
        whole.add(j, None, lambda i, k=k: {"element": k})
    a.merge(b)
    want = {name: 1 for name in ("exact", "within_budget", "reachable", "alternative", "rejected")}
    assert a.reasons() == whole.reasons() == {**dict.fromkeys(REASONS, 0), **want}
    assert a.beyond == 2 and a.named == whole.named == {"reachable": {js[3].accepted_as()[0]: 1},
                                                         "alternative": {"abs-beta": 1}}
    # the reachable +0 for 2**-14 is no distance (zero where the result is normal): counted by kind
    assert a.not_a_distance == {"zero where the result is normal": 1}
    assert a.far == 1 and a.worst[2] == "alternative" and a.worst[1] == {"element": 4}
    back = ReasonTally.from_json(a.to_json())
    assert back.to_json() == a.to_json()
