"""What a golden vector set is made of: families of records, each record one API call.

A *family* is a group of records aimed at one place where implementations go
wrong (the boundary diff = +-beta, fp16 overflow, subnormals, ...). Its ``id``
is a stable number: ids are never renumbered, and a removed family leaves a gap.
A *record* (:class:`VectorCase`) is Wycheproof's shape: a call plus what the set says
about it. The call is an :class:`sl1conf.adapters.base.Case`, the one type for a call of
the operator (dtype, variant, core_mask, length, beta and the three input arrays, as bit
patterns), so a record's call is run as it is, never rebuilt field by field. The record
adds ``flags`` naming its edge cases and a ``result``: "valid" when the documentation
settles the answer (the oracle's), "acceptable" when it leaves it open and the record
lists the other acceptable answers as named ``alternatives`` (each a full dx1 array).
"""

from __future__ import annotations

from dataclasses import dataclass, field


from sl1conf.adapters.base import Case

__all__ = ["VectorCase", "Family"]

_CALL_FIELDS = ("dy", "x1", "x2", "beta", "variant", "core_mask", "length", "n", "call_length")


def _of_call(name: str) -> property:
    return property(lambda self: getattr(self.call, name),
                    doc=f"The call's ``{name}`` (read-only: a record's call is changed by replacing it).")


@dataclass(init=False)
class VectorCase:
    """One record of a vector set: ``call`` (the API call, whose arrays are bit patterns of
    the set's dtype) plus the record's own fields. The call's fields read through the
    record (``record.dy``, ``record.variant``, ...) because certify, fuzz campaigns and the
    tests read records that way; they are views of ``call``, never a second copy."""

    call: Case
    flags: tuple = ()
    result: str = "valid"  # "valid" or "acceptable"
    alternatives: dict = field(default_factory=dict)  # name -> dx1 bits (acceptable cases)
    note: str = ""  # why the alternatives are acceptable

    def __init__(self, call: Case, flags=(), result: str = "valid", alternatives: "dict | None" = None,
                 note: str = ""):
        if not isinstance(call, Case):
            raise TypeError("VectorCase(call, ...): a record's call is an adapters.base.Case")
        self.call = call
        self.flags = tuple(flags)
        self.result = result
        self.alternatives = {} if alternatives is None else alternatives
        self.note = note

    dy, x1, x2, beta, variant, core_mask, length, n, call_length = (_of_call(name) for name in _CALL_FIELDS)


@dataclass
class Family:
    """A stable-id group of records aimed at one kind of edge."""

    id: int
    name: str
    description: str
    flags: tuple = ()
    cases: list = field(default_factory=list)
    large: bool = False  # generated only with --large
