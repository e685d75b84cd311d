"""The suite's own implementations as adapters: the oracles, the models, the kernel.

They run in this process (trusted code), so they observe no memory errors; they
are what the shared adapter tests and the engine's self-tests compare against.
"""

from __future__ import annotations


from sl1conf.reference import fast_oracle, kernel, oracle
from sl1conf.reference.models import get_model

from .base import DTYPES, Adapter, AdapterError, Capabilities, Case, Outcome, ArrayFunction

__all__ = ["KernelAdapter", "builtin"]


class KernelAdapter(Adapter):
    """The Cython kernel, shared variant splitting the work by core_mask like the C API."""

    capabilities = Capabilities(in_place=True, core_masks=None)

    def __init__(self, model: "str | None" = None):
        self.model = model
        self.name = "builtin:kernel" + (f":{model}" if model else "")
        if model:
            try:
                m = get_model(model)
            except ValueError as exc:  # an unknown model is a bad name: one line, no type name
                raise AdapterError(str(exc)) from None
            self.dtypes = tuple(d for d in DTYPES if m.applies_to(d))

    def run_case(self, case: Case) -> Outcome:
        fmt, m = case.format, case.elements_written
        out = case.initial_out()
        if m:
            dy, x1, x2, beta = case.floats()
            kernel.smoothl1lossgrad(dy[:m], x1[:m], x2[:m], beta, out=out[:m].view(fmt.dtype),
                                    model=self.model, core_mask=case.core_mask if case.variant == "s" else None)
        return Outcome("ok", out=out)

    def describe(self) -> dict:
        return {**super().describe(), "model": self.model or "divmul in the data precision",
                "isa": kernel.ISA}


def builtin(rest: str) -> Adapter:
    """``builtin:oracle``, ``builtin:oracle-ftz``, ``builtin:fast-oracle``,
    ``builtin:kernel[:<model>]``, ``builtin:model:<name>``, ``builtin:sample[:<defect>]``
    (the bundled C sample library built and run through ctypes)."""
    if rest == "oracle":
        return ArrayFunction("builtin:oracle", oracle.smoothl1lossgrad)
    if rest == "oracle-ftz":
        return ArrayFunction("builtin:oracle-ftz", oracle.smoothl1lossgrad_ftz)
    if rest == "fast-oracle":
        return ArrayFunction("builtin:fast-oracle", fast_oracle.smoothl1lossgrad)
    if rest == "kernel" or rest.startswith("kernel:"):
        return KernelAdapter(rest.partition(":")[2] or None)
    if rest == "sample" or rest.startswith("sample:"):  # the bundled C library, through ctypes
        from .ctypes_lib import CtypesAdapter
        from .sample import build_library

        return CtypesAdapter(str(build_library(bug=rest.partition(":")[2] or None)))
    if rest.startswith("model:"):
        name = rest.partition(":")[2]
        try:
            model = get_model(name)
        except ValueError as exc:
            raise AdapterError(str(exc)) from None
        return ArrayFunction(f"builtin:model:{name}", model,
                              dtypes=tuple(d for d in DTYPES if model.applies_to(d)))
    raise AdapterError(f"unknown builtin implementation {rest!r}: expected oracle, oracle-ftz, "
                       "fast-oracle, kernel, kernel:<model>, model:<name> or sample[:<defect>]")
