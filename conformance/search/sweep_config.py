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
    dy: int
    subset: str = "all"
    variant: str = "p"
    block: int = BLOCK
    platform: str = DEFAULT_PLATFORM  # the profile that judges (a checkpoint resumes only under the same one)

    def key(self, subset) -> dict:
        """The configuration as the state records it; ``subset`` (a ``sweep_subsets.Subset``) names
        the pairs by its canonical name."""
        h = lambda b: formats.hex_bits(formats.FP16, b)  # noqa: E731
        return {"impl": self.impl, "dtype": "fp16", "beta": h(self.beta), "dy": h(self.dy),
                "subset": subset.name, "variant": self.variant, "block_elements": self.block,
                "platform": self.platform}
