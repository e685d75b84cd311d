"""What the accuracy budget measures: per model and data format, how far each element lands
from the correctly rounded result, by class (Tally); the sweeps run through every model (Run);
and every reported element checked again against the mpmath oracle (verify).
"""

from __future__ import annotations

import time

import numpy as np

from sl1conf.reference import fast_oracle, kernel
from sl1conf.reference import formats as F
from sl1conf.reference.models import ACCEPTED, get_model
from sl1conf.reference.oracle import evaluate_element

from budget_classes import NCAT, classify
from budget_sweeps import scalar

BINS = ("0", "1", "2", "3", "4+", "nan-vs-number", "inf-vs-finite")
NBIN = len(BINS)
B_NAN, B_INF = 5, 6


def models_for_dtype(dtype: str) -> list[str]:
    return [m for m in ACCEPTED if get_model(m).applies_to(dtype)]


# --------------------------------------------------------------------------------------
# tallies


class Tally:
    """One model on one data format: histograms, maxima and worst elements per class."""

    def __init__(self, fmt: F.Format, model: str):
        self.fmt, self.model = fmt, model
        self.hist = np.zeros((NCAT, NBIN), np.int64)
        self.max = np.full(NCAT, -1, np.int64)
        self.worst: list = [None] * NCAT
        self.mismatch: dict = {}  # (class, bin) -> first example
        self.zero_sign = np.zeros(NCAT, np.int64)

    def _example(self, sweep, dy, x1, x2, beta_bits, got, want, i, ulp):
        h = lambda v: F.hex_bits(self.fmt, int(v))  # noqa: E731
        return {"sweep": sweep, "dy": h(dy[i]), "x1": h(x1[i]), "x2": h(x2[i]), "beta": h(beta_bits),
                "got": h(got[i]), "want": h(want[i]), "ulp": ulp}

    def add(self, sweep, cat, counts, got, want, dy, x1, x2, beta_bits):
        fmt = self.fmt
        self.hist[:, 0] += counts
        neq = np.flatnonzero(got != want)
        if neq.size == 0:
            return
        g, w, c = got[neq], want[neq], cat[neq].astype(np.int64)
        gn, wn = F.is_nan_bits(fmt, g), F.is_nan_bits(fmt, w)
        mag = fmt.exp_mask | fmt.frac_mask
        ginf, winf = (g & mag) == fmt.inf_bits, (w & mag) == fmt.inf_bits
        nanmis = gn ^ wn
        infmis = ~gn & ~wn & (ginf | winf)  # g != w here: one side infinite, the other not the same inf
        dist = np.abs(F.ordered(fmt, g) - F.ordered(fmt, w))
        dist[gn & wn] = 0
        bins = np.minimum(dist, 4)
        bins[nanmis] = B_NAN
        bins[infmis] = B_INF
        self.hist -= np.bincount(c * NBIN, minlength=NCAT * NBIN).reshape(NCAT, NBIN)  # undo their bin 0
        self.hist += np.bincount(c * NBIN + bins, minlength=NCAT * NBIN).reshape(NCAT, NBIN)
        self.zero_sign += np.bincount(c[(dist == 0) & ~(gn & wn) & ~nanmis & ~infmis], minlength=NCAT)
        valid = ~nanmis & ~infmis
        dv = np.where(valid, dist, -1)
        for k in np.unique(c):
            dk = np.where(c == k, dv, -1)
            i = int(np.argmax(dk))
            if dk[i] > self.max[k]:
                self.max[k] = dk[i]
                self.worst[k] = self._example(sweep, dy, x1, x2, beta_bits, got, want, neq[i], int(dk[i]))
        for b_, mask in ((B_NAN, nanmis), (B_INF, infmis)):
            if mask.any():
                for k in np.unique(c[mask]):
                    if (int(k), b_) not in self.mismatch:
                        i = int(np.flatnonzero(mask & (c == k))[0])
                        self.mismatch[int(k), b_] = self._example(sweep, dy, x1, x2, beta_bits, got, want,
                                                                  neq[i], BINS[b_])

    def examples(self):
        """(class, kind, example) for every recorded element."""
        out = [(k, "worst", self.worst[k]) for k in range(NCAT) if self.worst[k] is not None]
        out += [(k, BINS[b], ex) for (k, b), ex in sorted(self.mismatch.items())]
        return out


class Run:
    """Everything measured: per data format, the sweeps and one Tally per model."""

    def __init__(self):
        self.tallies = {d: {m: Tally(F.format_by_name(d), m) for m in models_for_dtype(d)} for d in ("fp16", "fp32")}
        self.cat_counts = {d: np.zeros(NCAT, np.int64) for d in ("fp16", "fp32")}
        self.sweeps: list[dict] = []
        self.timing = {"oracle": 0.0, "models": 0.0, "classify": 0.0, "tally": 0.0, "inputs": 0.0}

    def sweep(self, name, dtype, description, chunks):
        fmt = F.format_by_name(dtype)
        rec = {"name": name, "dtype": dtype, "description": description, "elements": 0, "chunks": 0,
               "fallbacks": 0, "seconds": 0.0}
        t0 = time.perf_counter()
        it = iter(chunks)
        while True:
            ti = time.perf_counter()
            try:
                dy, x1, x2, beta_bits = next(it)
            except StopIteration:
                break
            self.timing["inputs"] += time.perf_counter() - ti
            self.chunk(fmt, name, rec, dy, x1, x2, beta_bits)
        rec["seconds"] = round(time.perf_counter() - t0, 2)
        self.sweeps.append(rec)
        print(f"  {name:<18} {rec['elements']:>12,} elements  {rec['seconds']:7.1f} s"
              f"  (mpmath fallbacks {rec['fallbacks']:,})", flush=True)

    def chunk(self, fmt, name, rec, dy, x1, x2, beta_bits):
        """dy, x1, x2: bit-pattern arrays (fmt.uint); beta_bits an int."""
        dyf, x1f, x2f = (np.ascontiguousarray(a, dtype=fmt.uint).view(fmt.dtype) for a in (dy, x1, x2))
        beta = scalar(fmt, beta_bits)
        t = time.perf_counter()
        res = fast_oracle.evaluate(dyf, x1f, x2f, beta)
        want = res.out.view(fmt.uint)
        self.timing["oracle"] += time.perf_counter() - t
        t = time.perf_counter()
        cat = classify(fmt, dyf, x1f, x2f, beta)
        counts = np.bincount(cat, minlength=NCAT)
        self.cat_counts[fmt.name] += counts
        self.timing["classify"] += time.perf_counter() - t
        out = np.empty_like(dyf)
        for m, tally in self.tallies[fmt.name].items():
            t = time.perf_counter()
            got = kernel.smoothl1lossgrad(dyf, x1f, x2f, beta, out=out, model=m).view(fmt.uint)
            t2 = time.perf_counter()
            self.timing["models"] += t2 - t
            tally.add(name, cat, counts, got, want, dyf.view(fmt.uint), x1f.view(fmt.uint),
                      x2f.view(fmt.uint), beta_bits)
            self.timing["tally"] += time.perf_counter() - t2
        rec["elements"] += int(dyf.size)
        rec["chunks"] += 1
        rec["fallbacks"] += int(res.fallbacks)


# --------------------------------------------------------------------------------------
# verification of the reported elements


def verify(run: Run) -> int:
    """Recompute every reported element with the mpmath oracle and the numpy emulation."""
    bad = 0
    for dtype, tallies in run.tallies.items():
        fmt = F.format_by_name(dtype)
        for m, tally in tallies.items():
            for _, _, ex in tally.examples():
                vals = [int(ex[k], 16) for k in ("dy", "x1", "x2", "beta")]
                want = evaluate_element(fmt, *vals).bits
                arrs = [np.array([v], fmt.uint).view(fmt.dtype) for v in vals[:3]]
                got = int(get_model(m)(*arrs, scalar(fmt, vals[3])).view(fmt.uint)[0])
                ok = bool(F.same_result(fmt, np.array([want], fmt.uint), np.array([int(ex["want"], 16)], fmt.uint))[0]
                          and F.same_result(fmt, np.array([got], fmt.uint), np.array([int(ex["got"], 16)], fmt.uint))[0])
                ex["verified"] = ok
                bad += not ok
    return bad

