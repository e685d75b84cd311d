"""Evaluation models: how real implementations compute the formula, emulated bit for bit.

An implementation does not compute the exact value: it rounds ``diff``, tests the
branches on the *rounded* diff, and evaluates the middle line in some order at
some precision. A model fixes both choices:

=========  ===========================================  ==========================
order      middle line, each step rounded to ``compute``  typical source
=========  ===========================================  ==========================
divmul     ``(diff / beta) * dy``                        the manual's text (spec order)
recipmul   ``(diff * (1 / beta)) * dy``                  division hoisted out of the loop
muldiv     ``(diff * dy) / beta``                        one rounding fewer before the divide
=========  ===========================================  ==========================

``compute`` is fp16, fp32 or fp64 (never narrower than the data). Every step is
rounded to nearest-even in ``compute``; the result is then rounded once more to the
data format (a second rounding, which is what such an implementation does). The
model is named ``<order>-<compute>``: ``divmul-fp16`` is the manual's formula in
native half precision, ``divmul-fp32`` is the same computed in float and rounded
to half at the end.

Where rounding happens in the emulation: numpy rounds every float32 and float64
operation correctly (IEEE), and every float16 operation too (it computes in
float32 and rounds once, which is exact for + - * / because 24 >= 2 * 11 + 2);
``astype`` between these dtypes rounds to nearest-even once. Branch selection is
the C if / else-if chain: ``diff > beta`` first, then ``diff < -beta``, else the
middle line, so NaN falls through to the middle line as in C.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .formats import Format, format_by_name

__all__ = ["ORDERS", "SPEC_ORDER", "Model", "MODELS", "ACCEPTED", "models_for", "accepted_models",
           "get_model", "evaluate"]

ORDERS = {
    "divmul": "(diff / beta) * dy",
    "recipmul": "(diff * (1 / beta)) * dy",
    "muldiv": "(diff * dy) / beta",
}
SPEC_ORDER = "divmul"
_COMPUTE = {"fp16": np.float16, "fp32": np.float32, "fp64": np.float64}


@dataclass(frozen=True)
class Model:
    """One evaluation model: an order of operations and a compute precision."""

    order: str
    compute: str

    @property
    def name(self) -> str:
        return f"{self.order}-{self.compute}"

    @property
    def description(self) -> str:
        return f"{ORDERS[self.order]}, every step rounded to {self.compute}"

    def applies_to(self, fmt: "Format | str") -> bool:
        """A model never computes in a format narrower than the data."""
        return np.dtype(_COMPUTE[self.compute]).itemsize >= format_by_name(fmt).dtype.itemsize

    def __call__(self, dy, x1, x2, beta) -> np.ndarray:
        dy = np.asarray(dy)
        fmt = format_by_name(dy.dtype)
        if not self.applies_to(fmt):
            raise ValueError(f"model {self.name} computes in a narrower format than {fmt.name}")
        ct = _COMPUTE[self.compute]
        with np.errstate(all="ignore"):
            cdy = dy.astype(ct)
            diff = np.asarray(x1, dtype=fmt.dtype).astype(ct) - np.asarray(x2, dtype=fmt.dtype).astype(ct)
            b = np.asarray(beta, dtype=fmt.dtype).astype(ct)
            if self.order == "divmul":
                middle = (diff / b) * cdy
            elif self.order == "recipmul":
                middle = (diff * (ct(1) / b)) * cdy
            else:
                middle = (diff * cdy) / b
            middle = middle.astype(fmt.dtype)
            return np.where(diff > b, dy, np.where(diff < -b, -dy, middle)).astype(fmt.dtype)


MODELS: dict[str, Model] = {
    m.name: m for m in (Model(o, c) for o in ORDERS for c in _COMPUTE)
}


ACCEPTED = ("divmul-fp16", "divmul-fp32", "recipmul-fp32", "muldiv-fp32")
"""Honest evaluations a conformant implementation may be, bit for bit, even where they
stray from the correctly rounded result (underflowing intermediates, 0 * inf): the
manual's order in the data's own precision, fp16 computed in fp32 and rounded once,
a correctly rounded fp32 reciprocal of beta, and (diff * dy) / beta in fp32."""


def accepted_models(fmt: "Format | str") -> list[Model]:
    """The ACCEPTED models that apply to a data format."""
    return [MODELS[name] for name in ACCEPTED if MODELS[name].applies_to(fmt)]


def models_for(fmt: "Format | str") -> list[Model]:
    """The models that apply to a data format, in a stable order."""
    return [m for m in MODELS.values() if m.applies_to(fmt)]


def get_model(name: str) -> Model:
    try:
        return MODELS[name]
    except KeyError:
        raise ValueError(f"unknown evaluation model {name!r}; known: {', '.join(MODELS)}") from None


def evaluate(name: str, dy, x1, x2, beta) -> np.ndarray:
    """dx1 of the named model for numpy arrays of float16 or float32."""
    return get_model(name)(dy, x1, x2, beta)
