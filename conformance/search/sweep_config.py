"""What identifies a sweep: its configuration (a checkpoint resumes and merges only the same one),
the block size, and the one error a sweep's bad input raises.

Why a module of its own: the subsets, the state, the merge and the run all name the sweep by
its key and refuse bad input with the same error; none of them should have to import the
others for that.
"""

from __future__ import annotations

from dataclasses import dataclass

from sl1conf.reference import formats

from sl1conf.conformance.common.errors import SuiteError
from sl1conf.conformance.common.platforms import DEFAULT_PLATFORM

__all__ = ["BLOCK", "SweepConfig", "SweepError"]

BLOCK = 1 << 20
"""Elements of a block: one adapter call, one task, the unit of shards and of the checkpoint."""


class SweepError(SuiteError):
    """Bad input for a sweep (a subset, a checkpoint of another sweep): one line, no traceback."""


@dataclass(frozen=True)
class SweepConfig:
    """What identifies a sweep: a checkpoint resumes only the same one."""

    impl: str
    beta: int
    dy: "int | str"  # one pattern (one plane), or a dy set's canonical text (sweep_dy: a volume of planes)
    subset: str = "all"
    variant: str = "p"
    block: int = BLOCK
    platform: str = DEFAULT_PLATFORM  # the profile that judges (a checkpoint resumes only under the same one)

    def __post_init__(self):
        if isinstance(self.dy, str):  # canonical text; one plane is its pattern, as sweeps of one dy always were
            from sl1conf.conformance.search.sweep_dy import dys_text, parse_dys

            values = parse_dys(self.dy)
            object.__setattr__(self, "dy", values[0] if len(values) == 1 else dys_text(values))

    @property
    def planes(self):
        """The dy patterns of the sweep's planes, in increasing order (uint16; one for a plane)."""
        from sl1conf.conformance.search.sweep_dy import plane_values

        return plane_values(formats.hex_bits(formats.FP16, self.dy) if isinstance(self.dy, int) else self.dy)

    def dy_text(self) -> str:
        """The dy (set) as the state records it: a pattern ``0x3c01``, ``all`` or runs of patterns."""
        return formats.hex_bits(formats.FP16, self.dy) if isinstance(self.dy, int) else self.dy

    def key(self, subset) -> dict:
        """The configuration as the state records it; ``subset`` (a ``sweep_subsets.Subset``) names
        the pairs by its canonical name."""
        h = lambda b: formats.hex_bits(formats.FP16, b)  # noqa: E731
        return {"impl": self.impl, "dtype": "fp16", "beta": h(self.beta), "dy": self.dy_text(),
                "subset": subset.name, "variant": self.variant, "block_elements": self.block,
                "platform": self.platform}
