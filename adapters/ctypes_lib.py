"""``ctypes:<path>``: a host build of the DSP library's C API, called in a guarded worker.

The library must export some of ``fp_smoothl1lossgrad_s``, ``fp_smoothl1lossgrad_p``,
``hp_smoothl1lossgrad_s``, ``hp_smoothl1lossgrad_p`` with the documented argument order;
the adapter offers the dtypes and variants it finds. Calls go through a small C
shim (built with the system compiler on first use and cached), because ctypes
cannot pass a ``half`` by value; without a compiler only fp32 is offered.

Options follow the path: ``ctypes:lib.so?align=64&timeout=5&start_timeout=30``
(alignment in bytes the library needs for its arrays, per-call timeout and
library-loading timeout in seconds).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from urllib.parse import parse_qs

from .base import AdapterError, Adapter, Capabilities, Case, Outcome
from .cbuild import build_shared
from .isolation import Worker, symbol_for

__all__ = ["CtypesAdapter", "build_shim"]

DEFAULT_TIMEOUT = 10.0
DEFAULT_START_TIMEOUT = 60.0  # loading the library, in a fresh Python that imports numpy


def build_shim() -> Path:
    """The call shim and fault reporter (adapters/shim.c), built once per compiler and machine."""
    return build_shared("sl1conf-shim", [Path(__file__).with_name("shim.c")])


def _options(text: str) -> tuple[int, float, float]:
    try:
        opts = {k: v[-1] for k, v in parse_qs(text, strict_parsing=bool(text)).items()}
    except ValueError:
        raise AdapterError(f"cannot read the options {text!r}: expected align=N&timeout=S") from None
    unknown = set(opts) - {"align", "timeout", "start_timeout"}
    if unknown:
        raise AdapterError(f"unknown option(s) {', '.join(sorted(unknown))}: expected align, timeout "
                           "and start_timeout")
    try:
        align = int(opts.get("align", 1))
        timeout = float(opts.get("timeout", DEFAULT_TIMEOUT))
        start_timeout = float(opts.get("start_timeout", DEFAULT_START_TIMEOUT))
    except ValueError:
        raise AdapterError(f"bad option value in {text!r}") from None
    if align < 1 or align & (align - 1) or align > 4096:
        raise AdapterError(f"align={align}: expected a power of two from 1 to 4096")
    if not (timeout > 0 and start_timeout > 0):
        raise AdapterError(f"timeout={timeout}, start_timeout={start_timeout}: expected positive seconds")
    return align, timeout, start_timeout


class CtypesAdapter(Adapter):
    """A shared library exporting the documented API, isolated and memory-guarded."""

    def __init__(self, spec: str):
        path_text, _, opt_text = spec.partition("?")
        self.path = Path(path_text).expanduser()
        if not self.path.is_file():
            raise AdapterError(f"no such library: {self.path}")
        align, timeout, start_timeout = _options(opt_text)
        self.name = f"ctypes:{self.path}"
        self.sha256 = hashlib.sha256(self.path.read_bytes()).hexdigest()
        self.shim_note = ""
        try:
            shim = str(build_shim())
        except AdapterError as exc:
            shim, self.shim_note = None, str(exc)
        self.worker = Worker(str(self.path.resolve()), shim, timeout, align, start_timeout)
        self._late: list = []  # late writes of workers replaced by restart(), not yet asked for
        found = self.worker.symbols
        if not found:
            self.worker.close()
            raise AdapterError(f"{self.path} exports none of the documented functions "
                               "(fp_smoothl1lossgrad_s/_p, hp_smoothl1lossgrad_s/_p)")
        usable = [s for s in found if shim or s.startswith("fp_")]
        if not usable:
            self.worker.close()
            raise AdapterError(f"{self.path} has only the fp16 API, which needs the call shim: {self.shim_note}")
        self.symbols = usable
        self.dtypes = tuple(d for d, p in (("fp16", "hp_"), ("fp32", "fp_")) if any(s.startswith(p) for s in usable))
        self.variants = tuple(v for v in ("s", "p") if any(s.endswith(f"_{v}") for s in usable))
        self.capabilities = Capabilities(in_place=True, core_masks=None, alignment=align, isolated=True,
                                         memory_checked=True)

    def supports(self, case: Case) -> bool:
        return symbol_for(case) in self.symbols and super().supports(case)

    def run_case(self, case: Case) -> Outcome:
        return self.worker.call(case)

    def late_writes(self) -> list:
        late, self._late = self._late + self.worker.late_writes(), []
        return late

    def restart(self) -> bool:
        """A new worker process: the library loaded afresh, nothing left of earlier calls."""
        restarts = self.worker.restarts
        self._late += self.worker.late_writes()  # what the old worker still watches
        self.worker.close()
        self.worker = Worker(self.worker.library, self.worker.shim, self.worker.timeout, self.worker.align,
                             self.worker.start_timeout)
        self.worker.restarts = restarts  # restarts after crashes and hangs, over the adapter's life
        self.calls_made = 0
        return True

    def describe(self) -> dict:
        return {**super().describe(), "library": str(self.path), "sha256": self.sha256,
                "symbols": self.symbols, "alignment": self.capabilities.alignment,
                "timeout_s": self.worker.timeout, "worker_restarts": self.worker.restarts,
                **({"note": self.shim_note} if self.shim_note else {})}

    def close(self) -> None:
        self.worker.close()
