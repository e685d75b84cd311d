"""One progress bar for every long job (certify, fuzz, sweep), on a terminal only.

Why one module: certify, fuzz and sweep each drew their own ``\\r`` status line; now each
makes a :class:`Progress` and tells it what was done. On a terminal it is one tqdm line on
stderr: done of total (when the total is known), the units' ETA, elements per second (from
the elements the caller reports: tqdm's own rate counts units, a batch or a block, not
elements) and the failures so far. Off a terminal (CI logs, a pipe) it writes nothing at
all, and :meth:`Progress.update` returns at its first line.

Why it throttles itself: a caller may update once per element group in a tight loop. The
bar keeps the counts and hands them to tqdm at most every ``mininterval`` seconds (one
clock read per update in between), so an enabled bar costs about a microsecond an update
and a disabled one a method call.
"""

from __future__ import annotations

import sys
import time

__all__ = ["Progress", "MININTERVAL"]

MININTERVAL = 0.25
"""Seconds between redraws of an enabled bar."""


def _bar_class():
    from tqdm import tqdm

    class Bar(tqdm):
        monitor_interval = 0  # no monitor thread: a redraw happens only in update(), in the caller's thread

    return Bar


class Progress:
    """A one-line tqdm bar on stderr while stderr is a terminal; nothing at all otherwise.

    ``desc``: what runs ("fuzz", "sweep"); ``total``: units to do (None: unknown, then the
    bar shows the count and the rates, no ETA); ``unit``: what one unit is ("batch",
    "block", "case"); ``enabled``: None for "stderr is a terminal"; ``file``: where an
    enabled bar draws (default stderr); ``initial``: units done before this run (a resumed
    job: the ETA counts only what this run does)."""

    def __init__(self, desc: str, total: "int | None", unit: str = "case", *, enabled: "bool | None" = None,
                 file=None, initial: int = 0, mininterval: float = MININTERVAL):
        self.file = file
        self.enabled = bool((file or sys.stderr).isatty()) if enabled is None else bool(enabled)
        self.elements = 0
        self.failures = None
        self._pending = 0
        self._bar = None
        if not self.enabled:
            return
        self._mininterval = mininterval
        self._t0 = self._last = time.monotonic()
        counts = ("{percentage:3.0f}%|{bar:12}| {n_fmt}/{total_fmt} " + unit + " [{elapsed}<{remaining}{postfix}]"
                  if total is not None else "{n_fmt} " + unit + " [{elapsed}{postfix}]")
        self._bar = _bar_class()(total=total, initial=initial, desc=desc, unit=unit, file=file or sys.stderr,
                                 bar_format="{desc}: " + counts, mininterval=0, miniters=0, leave=False,
                                 dynamic_ncols=file is None, smoothing=0.1, postfix=self._postfix(self._t0))

    # ------------------------------------------------------------------ the API

    def update(self, n: int = 1, *, elements: int = 0, failures: "int | None" = None) -> None:
        """``n`` units done, ``elements`` checked with them, ``failures`` found so far (None:
        unchanged). Redraws at most every ``mininterval`` seconds."""
        if self._bar is None:
            return
        self._pending += n
        self.elements += elements
        if failures is not None:
            self.failures = failures
        now = time.monotonic()
        if now - self._last >= self._mininterval:
            self._last = now
            self._flush(now)

    def describe(self, text: str) -> None:
        """Say ``text`` in place of the bar's label (``desc``: what runs, and how far, in words: the
        sweep's planes complete) from the next redraw on; nothing when disabled."""
        if self._bar is not None:
            self._bar.set_description_str(text, refresh=False)

    def write(self, text: str) -> None:
        """A line above the bar (the bar is redrawn under it); a plain stderr line when disabled."""
        if self._bar is None:
            print(text, file=self.file or sys.stderr, flush=True)
        else:
            self._bar.write(text, file=self._bar.fp)

    def close(self) -> None:
        """Draw the last counts and take the bar off the terminal (idempotent)."""
        if self._bar is None:
            return
        self._flush(time.monotonic())
        bar, self._bar = self._bar, None
        bar.close()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ drawing

    def _postfix(self, now: "float | None" = None) -> str:
        from tqdm import tqdm

        seconds = (now if now is not None else time.monotonic()) - self._t0
        rate = self.elements / seconds if seconds > 0 else 0.0
        text = f"{tqdm.format_sizeof(rate)} elem/s"
        if self.failures is not None:
            text += f", {self.failures:,} failure" + ("" if self.failures == 1 else "s")
        return text

    def _flush(self, now: float) -> None:
        self._bar.set_postfix_str(self._postfix(now), refresh=False)
        n, self._pending = self._pending, 0
        self._bar.update(n)  # mininterval=0, miniters=0: tqdm redraws now (n = 0 too)
