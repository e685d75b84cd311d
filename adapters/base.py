"""The adapter interface: how the suite talks to any implementation under test.

An adapter says what it offers (dtypes, variants, capabilities) and runs a batch
of :class:`Case` objects, returning one :class:`Outcome` per case. Everything
crosses this interface as bit patterns (numpy unsigned arrays), so no host
float conversion can blur a result. An outcome carries the result and what the
adapter observed about the call: a crash, a hang, memory written outside dx1,
inputs changed. Judging those is the conformance engine's job, not the adapter's.

Implementations are named by one string (see :func:`sl1conf.adapters.load`):
``builtin:oracle``, ``builtin:fast-oracle``, ``builtin:kernel``,
``builtin:model:<name>``, ``ctypes:<path.so>``, ``sim:<command template>``,
``torch``, ``torch:cpu``, ``torch:cuda``, ``torch:inductor``, ``mindspore``, ``mindspore:cpu``,
``python:<file.py or module>:<function>``; third parties add prefixes through the
``sl1conf.adapters`` entry point group.
"""

from __future__ import annotations

import abc
import dataclasses
import time
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from sl1conf.reference.formats import Format, format_by_name

__all__ = ["DTYPES", "VARIANTS", "ALIASES", "FILL_BYTE", "fill_bits", "Case", "Outcome", "OBSERVATIONS", "Capabilities",
           "Adapter", "AdapterError", "ArrayFunction", "one_line"]

DTYPES = ("fp16", "fp32")
VARIANTS = ("s", "p")  # shared storage with core_mask, private storage
ALIASES = ("dy", "x1", "x2")  # inputs dx1 may be written over (in-place use)

STATUSES = ("ok", "crash", "timeout", "error", "unsupported", "rejected")
"""How a call ended (docs/adapters.md has how each is judged): ``ok`` it returned dx1;
``crash`` the process died; ``timeout`` it did not return in time; ``error`` the adapter or the
implementation failed in a way that is not an answer (a broken harness, a wrong result shape);
``unsupported`` the implementation does not offer this dtype, variant or use (nothing is
judged, and a run with such calls is incomplete); ``rejected`` the implementation refused
this input on purpose (an error code, a documented exception): an acceptable answer where the
manual leaves the input open (beta <= 0, NaN beta, core_mask = 0), a failure elsewhere."""
FILL_BYTE = 0x5A
"""dx1 holds this byte everywhere before a call (unless it aliases an input), so a call
that writes nothing (length 0, core_mask 0) is visible: fp16 0x5a5a, fp32 0x5a5a5a5a."""


def fill_bits(fmt) -> int:
    """One dx1 element's bits before a call (FILL_BYTE in each of its bytes) in format ``fmt``."""
    return int.from_bytes(bytes([FILL_BYTE]) * fmt.dtype.itemsize, "little")


class AdapterError(Exception):
    """The implementation cannot be used at all (missing library, symbol, compiler, torch)."""


@dataclass(frozen=True)
class Case:
    """One call of the operator, as bit patterns.

    ``length`` is normally ``len(dy)``; a different value (e.g. negative) is
    passed to the C API as is, for the "what does length < 0 do" checks.
    ``out_alias`` names the input that dx1 is written over (in-place use). ``guard``: for
    adapters that guard buffers, which end of every array touches a guard page ("end": a
    read or write past the end faults; "start": one before the start faults).
    """

    dtype: str
    dy: np.ndarray
    x1: np.ndarray
    x2: np.ndarray
    beta: int
    variant: str = "p"
    core_mask: int = 0xFF
    out_alias: Optional[str] = None
    length: Optional[int] = None
    id: str = ""
    guard: str = "end"

    def __post_init__(self):
        fmt = self.format
        for name in ("dy", "x1", "x2"):
            a = np.ascontiguousarray(getattr(self, name), dtype=fmt.uint)
            object.__setattr__(self, name, a)
        if not (self.dy.shape == self.x1.shape == self.x2.shape) or self.dy.ndim != 1:
            raise ValueError(f"case {self.id}: dy, x1, x2 must be 1-d arrays of one length")
        if self.variant not in VARIANTS:
            raise ValueError(f"case {self.id}: variant must be one of {VARIANTS}")
        if self.guard not in ("end", "start"):
            raise ValueError(f"case {self.id}: guard must be 'end' or 'start'")
        if self.out_alias not in (None, *ALIASES):
            raise ValueError(f"case {self.id}: out_alias must be None or one of {ALIASES}")
        if not 0 <= int(self.beta) < (1 << fmt.bits):
            raise ValueError(f"case {self.id}: beta {int(self.beta):#x} is not a {fmt.name} bit pattern")
        if not 0 <= int(self.core_mask) < (1 << 32):
            raise ValueError(f"case {self.id}: core_mask {int(self.core_mask):#x} does not fit the C int")
        if self.length is not None and not -(1 << 31) <= int(self.length) < (1 << 31):
            raise ValueError(f"case {self.id}: length {self.length} does not fit the C int")

    @property
    def format(self) -> Format:
        return format_by_name(self.dtype)

    @property
    def n(self) -> int:
        """Elements in the arrays."""
        return self.dy.shape[0]

    @property
    def call_length(self) -> int:
        """The ``length`` argument the C API receives."""
        return self.n if self.length is None else self.length

    @property
    def elements_written(self) -> int:
        """How many leading elements of dx1 a correct implementation computes."""
        if self.variant == "s" and self.core_mask == 0:
            return 0
        return max(0, min(self.call_length, self.n))

    def initial_out(self) -> np.ndarray:
        """dx1's bits before the call: the aliased input, or FILL_BYTE everywhere."""
        if self.out_alias:
            return getattr(self, self.out_alias).copy()
        return np.full(self.n * self.format.dtype.itemsize, FILL_BYTE, np.uint8).view(self.format.uint)

    def replace(self, **changes) -> "Case":
        """This call with some fields changed (checked again): a vector record's call run on
        another variant or core_mask, a drawn batch given its variant, a shrunk case."""
        return dataclasses.replace(self, **changes)

    def floats(self, fmt: "Format | None" = None):
        """(dy, x1, x2, beta) as float arrays and a float scalar of the case's format. ``fmt``,
        where given, must be that format (callers that drew a batch for ``fmt`` say which they
        expect; bits read as another format would be nonsense, so that raises)."""
        if fmt is not None and fmt.name != self.dtype:
            raise ValueError(f"case {self.id}: a {self.dtype} call read as {fmt.name}")
        fmt = self.format
        beta = np.array([self.beta], dtype=fmt.uint).view(fmt.dtype)[0]
        return self.dy.view(fmt.dtype), self.x1.view(fmt.dtype), self.x2.view(fmt.dtype), beta


@dataclass
class Outcome:
    """What one call did. ``out`` is dx1's bit patterns (None unless status is "ok").

    Memory observations are None where the adapter cannot observe them (an
    in-process reference has no guard pages); the engine treats None as "not
    checked", never as "passed".
    """

    status: str
    out: Optional[np.ndarray] = None
    detail: str = ""
    wrote_outside: Optional[bool] = None  # bytes around dx1 changed
    inputs_changed: Optional[tuple] = None  # names of inputs whose bytes changed
    fault: Optional[str] = None  # e.g. "write past the end of dx1" from a guard page
    seconds: float = 0.0

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"unknown outcome status {self.status!r}")


OBSERVATIONS = ("writes-outside", "reads-outside", "inputs-changed")
"""What an adapter may observe about a call's memory use: a write outside dx1 (R10), a read
outside an input (R11), an input changed (R12)."""


@dataclass(frozen=True)
class Capabilities:
    """What an adapter claims; claims are tested, never trusted.

    Memory: ``memory_checked`` means guard pages (in both guard layouts), canaries and input
    checksums are in place, so every one of :data:`OBSERVATIONS` is made (the ctypes
    adapter). Without it, ``observes`` names the observations the adapter makes all the same
    (a simulator harness's memory report: writes outside, inputs changed), and ``notes`` says,
    per observation, how it is made or why it is not ((observation, text) pairs; the report
    prints the text in the requirement's entry). ``recorded``: the adapter replays results
    recorded elsewhere and can make no call of its own (the requirements that need one say so)."""

    in_place: bool = False  # dx1 may alias dy, x1 or x2
    core_masks: Optional[int] = 0xFF  # mask of cores the shared variant may use (None: any)
    alignment: int = 1  # bytes each array's start must be aligned to
    isolated: bool = False  # runs in a separate process: crashes and hangs are survivable
    memory_checked: bool = False  # guard pages, canaries and input checksums are in place
    observes: tuple = ()  # OBSERVATIONS made without guard pages (memory_checked implies them all)
    notes: tuple = ()  # (observation, how it is made or why not) pairs, for the report
    recorded: bool = False  # answers from results recorded elsewhere (a board's self-test): makes no new call
    independent_runs: bool = False  # every run() starts the implementation afresh (a simulator's batches): nothing
    # carries over from one run to the next, so certify makes the next run's calls while it judges this one's

    def __post_init__(self):
        unknown = [o for o in (*self.observes, *(k for k, _ in self.notes)) if o not in OBSERVATIONS]
        if unknown:
            raise ValueError(f"unknown memory observation(s) {unknown}; known: {OBSERVATIONS}")

    def observed(self) -> frozenset:
        """The OBSERVATIONS this adapter makes."""
        return frozenset(OBSERVATIONS) if self.memory_checked else frozenset(self.observes)

    def note(self, observation: str) -> str:
        """How ``observation`` is made, or why it is not: the adapter's note, else, for one it
        does not make, "not observed by this adapter" with the reason."""
        for key, text in self.notes:
            if key == observation:
                return text
        if observation in self.observed():
            return ""
        return ("not observed by this adapter: it puts no guard pages, canaries or memory report "
                "around the implementation's arrays")


class Adapter(abc.ABC):
    """Base of every implementation under test."""

    name: str = "adapter"
    dtypes: tuple = DTYPES
    variants: tuple = VARIANTS
    capabilities: Capabilities = Capabilities()

    def supports(self, case: Case) -> bool:
        return case.dtype in self.dtypes and case.variant in self.variants and (
            case.out_alias is None or self.capabilities.in_place)

    def holds(self, case: Case) -> bool:
        """Whether this call is in the adapter's reach at all: always, except for a recorded run
        (``capabilities.recorded``), which holds only the calls that were made; the engine leaves
        the others out of the run (they are outside it, not unsupported)."""
        return True

    def not_run(self, case: Case) -> str:
        """Why a call in the adapter's reach was never made, or "" (always, except for a recorded
        run whose output stops before the call: the engine leaves it out of the run, counted as
        not run, which makes the run incomplete, not failed)."""
        return ""

    calls_made: int = 0  # supported calls run since the adapter was made or last restarted
    observer = None
    """``observer(case, outcome)``, if set, is told of each outcome as soon as it is known (the
    command line's progress bar); the engine sets it around its own runs only."""

    def _observed(self, case: Case, outcome: Outcome) -> Outcome:
        if self.observer is not None:
            self.observer(case, outcome)
        return outcome

    def run(self, cases: Sequence[Case]) -> list[Outcome]:
        """One outcome per case, in order; unsupported cases are reported as such. Every
        supported case counts one call (``calls_made``): call history is numbered by it.
        Adapters implement :meth:`run_case`; override this only to batch calls (and then tell
        :attr:`observer` of each outcome through ``_observed``)."""
        out = []
        for c in cases:
            if self.supports(c):
                self.calls_made += 1
                out.append(self._observed(c, self.run_case(c)))
            else:
                out.append(self._observed(c, Outcome(
                    "unsupported", detail=f"{self.name} does not offer {c.dtype}/{c.variant}"
                    + (f" with dx1 over {c.out_alias}" if c.out_alias else ""))))
        return out

    def restart(self) -> bool:
        """Make the next call the first of a fresh process (no state left from earlier calls)
        and count calls from zero; False where that cannot be done (the implementation runs in
        the suite's own process), True where it was done. Determinism checks (R14) call it."""
        return False

    def interrupt(self) -> None:
        """Stop the run in progress in another thread as soon as it can be (its run() raises
        KeyboardInterrupt, leaving nothing running behind it); nothing where a run cannot be
        stopped from outside. The engine calls it when it is interrupted while a worker
        thread makes calls."""

    def late_writes(self) -> list:
        """(case id, what changed) of the calls seen changing memory after they returned, since
        the last ask (waiting, where the adapter watches, until the latest calls have been
        watched long enough). Empty where the adapter cannot see it: only the ctypes worker
        watches each call's dx1 after the return (R13)."""
        return []

    @abc.abstractmethod
    def run_case(self, case: Case) -> Outcome:
        """Make one call the adapter supports and say what happened (the one method every
        adapter implements). Return ``Outcome("ok", out=dx1 bits)`` with dx1 as long as the
        case's arrays: start from ``case.initial_out()`` and write its first
        ``case.elements_written`` elements. Never raise for what the implementation did:
        report it as the Outcome's status (docs/adapters.md, "How each status is judged")."""

    def describe(self) -> dict:
        """Identity for reports (subclasses add library paths, hashes, symbols)."""
        return {"adapter": self.name, "dtypes": list(self.dtypes), "variants": list(self.variants)}

    def close(self) -> None:
        """Release workers and resources; the adapter is unusable afterwards."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def one_line(exc: BaseException) -> str:
    """An exception as the one line an Outcome's detail holds: its type and first line."""
    return f"{type(exc).__name__}: {exc}".splitlines()[0]


class ArrayFunction(Adapter):
    """An in-process adapter over a function of float arrays: the base for wrapping any
    Python-reachable kernel (a framework op, a pybind11 module), as the torch and MindSpore
    adapters do.

    Either pass ``fn(dy, x1, x2, beta) -> dx1`` or subclass and override :meth:`compute`.
    ``dy``, ``x1``, ``x2`` arrive as numpy float16 or float32 arrays of the
    ``case.elements_written`` elements the call computes (copies: the case's own bits are
    never handed out), ``beta`` as a numpy scalar of the same type holding the exact value
    (NaN payloads and -0.0 kept). Return an array-like of that many elements; it is converted
    to the case's type with numpy (round to nearest) and its bits written into dx1, whose
    other elements keep ``Case.initial_out()``'s fill. The base checks the result's shape,
    reports an input the function changed (``inputs_changed``), and turns an exception into
    ``rejected`` when :meth:`refuses` says it is the implementation refusing the input on
    purpose (by default: one of the ``rejects`` types; MindSpore's adapter reads the message
    of its RuntimeError for beta <= 0) and into ``error`` otherwise. ``variants``:
    with ``("p",)`` the shared variant is reported unsupported; offering ``s`` means computing
    every element whatever the (non-zero) core_mask, which is what a kernel without cores does.
    """

    capabilities = Capabilities(in_place=True, core_masks=None)
    rejects: tuple = ()  # exception types that mean "the implementation refused this input"

    def __init__(self, name: "str | None" = None, fn=None, dtypes: "tuple | None" = None, *,
                 variants: "tuple | None" = None, rejects: "tuple | None" = None):
        if name is not None:
            self.name = name
        self.fn = fn
        if dtypes is not None:
            self.dtypes = tuple(dtypes)
        if variants is not None:
            self.variants = tuple(variants)
        if rejects is not None:
            self.rejects = tuple(rejects)

    def compute(self, dy: np.ndarray, x1: np.ndarray, x2: np.ndarray, beta, out_alias: "str | None" = None):
        """dx1 for the elements given (override this, or pass ``fn``). ``out_alias``: for an
        in-place call, the name of the argument ("dy", "x1" or "x2") dx1 is written over; an
        override that has an in-place form uses it (and returns that array), one that has not
        ignores it (the base writes the result over the alias either way)."""
        if self.fn is None:
            raise NotImplementedError(f"{type(self).__name__}: pass fn or override compute()")
        return self.fn(dy, x1, x2, beta)

    def refuses(self, exc: BaseException) -> bool:
        """Whether an exception :meth:`compute` raised is the implementation refusing the input
        (status ``rejected``) rather than failing (``error``): one of ``rejects`` by default;
        override to look at the message."""
        return isinstance(exc, self.rejects)

    def run_case(self, case: Case) -> Outcome:
        fmt, m = case.format, case.elements_written
        out = case.initial_out()
        if not m:
            return Outcome("ok", out=out)
        dy, x1, x2, beta = case.floats()
        given = {"dy": dy[:m].copy(), "x1": x1[:m].copy(), "x2": x2[:m].copy()}
        start = time.perf_counter()
        try:
            result = self.compute(given["dy"], given["x1"], given["x2"], beta, out_alias=case.out_alias)
            seconds = time.perf_counter() - start
            with np.errstate(all="ignore"):
                result = np.asarray(result, dtype=fmt.dtype)
        except Exception as exc:
            return Outcome("rejected" if self.refuses(exc) else "error", detail=one_line(exc),
                           seconds=time.perf_counter() - start)
        if result.shape != (m,):
            return Outcome("error", detail=f"{self.name} returned shape {result.shape}, expected ({m},)",
                           seconds=seconds)
        out[:m] = result.view(fmt.uint)
        changed = tuple(a for a in ALIASES if a != case.out_alias
                        and not np.array_equal(given[a].view(fmt.uint), getattr(case, a)[:m]))
        return Outcome("ok", out=out, inputs_changed=changed, seconds=seconds)
