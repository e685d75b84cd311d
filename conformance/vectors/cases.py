"""What a golden vector set is made of: families of cases, each case one API call.

A *family* is a group of cases aimed at one place where implementations go
wrong (the boundary diff = +-beta, fp16 overflow, subnormals, ...). Its ``id``
is a stable number: ids are never renumbered, and a removed family leaves a gap.
A *case* is one call of the C API (variant, core_mask, length, beta and the
three input arrays, as bit patterns), with Wycheproof-style ``flags`` naming
its edge cases and a ``result``: "valid" when the documentation settles the
answer (the oracle's), "acceptable" when it leaves it open and the case lists
the other acceptable answers as named ``alternatives`` (each a full dx1 array).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

__all__ = ["VectorCase", "Family"]


@dataclass
class VectorCase:
    """One call. Arrays are unsigned bit patterns of the set's dtype."""

    dy: np.ndarray
    x1: np.ndarray
    x2: np.ndarray
    beta: int
    variant: str = "p"
    core_mask: int = 0xFF
    length: Optional[int] = None  # the C API's length argument; None means len(dy)
    flags: tuple = ()
    result: str = "valid"  # "valid" or "acceptable"
    alternatives: dict = field(default_factory=dict)  # name -> dx1 bits (acceptable cases)
    note: str = ""  # why the alternatives are acceptable

    @property
    def n(self) -> int:
        return int(self.dy.shape[0])

    @property
    def call_length(self) -> int:
        return self.n if self.length is None else int(self.length)

    def call(self, dtype: str, *, variant=None, core_mask=None, id: str = ""):
        """This case as the API call an adapter runs (its fill, its elements written), on its own
        variant and core_mask or the ones given (a shared case run on the private version)."""
        from sl1conf.adapters.base import Case

        return Case(dtype, self.dy, self.x1, self.x2, self.beta, variant=variant or self.variant,
                    core_mask=self.core_mask if core_mask is None else core_mask, length=self.length, id=id)


@dataclass
class Family:
    """A stable-id group of cases aimed at one kind of edge."""

    id: int
    name: str
    description: str
    flags: tuple = ()
    cases: list = field(default_factory=list)
    large: bool = False  # generated only with --large
