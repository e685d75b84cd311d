"""A recorded run: the exported self-test's output on a board, answering certify's calls.

Why an adapter: certify judges outcomes, wherever they come from. The board made each case's
call once, in the case's own variant and core mask, and printed dx1 with the guard zones
around it and the inputs it changed (``-DSL1_DUMP``); this adapter hands those back as the
outcomes of the same calls, so the one judge and every requirement that reads outcomes judge
the board's results exactly as the host's. It makes no call of its own
(``Capabilities.recorded``): the calls the board did not make are outside the run (``holds``),
and the requirements that need calls of their own (R14 history, R15 in place, R18 positions)
say they are not observed.
"""

from __future__ import annotations

import numpy as np

from sl1conf.adapters.base import Adapter, Capabilities, Case, Outcome, fill_bits

__all__ = ["Recorded"]

NOTES = (
    ("writes-outside",
     "observed from the self-test's output: it fills guard zones of SL1_GUARD elements before and after dx1 with "
     "the fill pattern and prints them after every call; a write farther away, or of the fill's own bytes, is not "
     "seen"),
    ("reads-outside",
     "not observed by the self-test: it puts nothing around dy, x1 and x2 that a read would change; reads are "
     "observed by the ctypes adapter's guard pages"),
    ("inputs-changed",
     "observed from the self-test's output: it compares dy, x1 and x2 with the golden vectors after every call"),
)


class Recorded(Adapter):
    """The outcomes a self-test printed (``vectors.results.SelftestResults``) for the calls of
    vector set ``vs`` it made."""

    name = "results"
    variants = ("s", "p")
    capabilities = Capabilities(observes=("writes-outside", "inputs-changed"), notes=NOTES, recorded=True,
                                core_masks=None)

    def __init__(self, results, vs):
        self.results, self.vs = results, vs
        self.name = f"results:{results.path.name}"
        self.dtypes = (results.dtype,)
        self.rows = {row["id"]: row for row in vs.manifest["cases"]}
        self.order = [row["id"] for fam in vs.manifest["families"] for row in vs.manifest["cases"]
                      if row["family"] == fam["id"]]  # the self-test runs family by family
        self.stopped = results.stopped_at(self.order)
        self.unreached = set(self.order[self.order.index(self.stopped) + 1:]) if self.stopped else set()

    def holds(self, case: Case) -> bool:
        """The call the self-test made for the case: its own variant, core mask and length,
        dx1 apart from the inputs."""
        row = self.rows.get(case.id)
        return (row is not None and case.dtype == self.results.dtype and case.variant == row["variant"]
                and case.n == row["n"] and case.call_length == row["length"] and case.out_alias is None
                and case.guard == "end" and (case.variant == "p" or case.core_mask == int(row["core_mask"], 16)))

    def not_run(self, case: Case) -> str:
        """Why a call the board would have made was not: the self-test's output stops before it
        (a crash, a hang or a cut transfer on an earlier case): not an R13 failure of its own."""
        if case.id in self.unreached and self.holds(case):
            return f"the self-test's output stops at case {self.stopped}"
        return ""

    def run_case(self, case: Case) -> Outcome:
        if not self.holds(case) or self.not_run(case):
            return Outcome("error", detail=f"the results file holds no such call of case {case.id}")
        r = self.results.cases.get(case.id)
        if r is None or not r.ended:
            cut = self.results.cut
            if cut:
                why = (f"inside this call's results: its last line is cut ({cut[:40]!r}): a cut transfer, or the "
                       "program killed while printing")
            elif r is not None:
                why = "inside this call's results: the output was cut or the program was killed while printing"
            else:
                why = "before this call's results: the program crashed or hung in this call, or its output was cut"
            return Outcome("error", detail="the self-test's output stops " + why)
        fill = fill_bits(case.format)
        out = r.dx1.copy()
        parts = []
        if (r.before != fill).any():
            parts.append(f"wrote before the start of dx1 (up to {r.before.size - int(np.flatnonzero(r.before != fill)[0])} "
                         "elements before it)")
        if (r.after != fill).any():
            parts.append(f"wrote past the end of dx1 (up to {int(np.flatnonzero(r.after != fill)[-1]) + 1} elements "
                         "past it)")
        fault = "; ".join(parts) + f", in the self-test's guard zones of {self.results.guard} elements" if parts else None
        return Outcome("ok", out=out, wrote_outside=bool(parts), fault=fault, inputs_changed=r.inputs_changed)

    def describe(self) -> dict:
        r = self.results
        return {"adapter": self.name, "results": str(r.path), "results_sha256": r.sha256,
                "program": r.config.lstrip("# "), "program_verdict": r.verdict or "none (the output stops before it)",
                "dtypes": list(self.dtypes), "variants": list(self.variants),
                "files": [{"path": str(r.path), "sha256": r.sha256}],
                "answered_dtypes": [r.dtype] if any(c.ended for c in r.cases.values()) else []}
