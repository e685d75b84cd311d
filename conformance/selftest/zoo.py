"""The self-test zoo: its table (``zoo/zoo.toml``) and how a member is built for a target.

A member is a small C library of the FT DSP API (``zoo/NAME.c``, or the bundled sample with
one of its deliberate defects), defective in one way or honest but unusual. It is built with
the user's compiler, as a shared library for ``ctypes:`` or into the simulator harness for
``sim:``, so the self-test exercises the user's toolchain as well as the suite.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from sl1conf.adapters import sample
from sl1conf.adapters.cbuild import build_shared
from sl1conf.conformance.common.errors import SuiteError

__all__ = ["Member", "ZooError", "zoo_dir", "members", "build_library", "build_harness"]

KINDS = ("defect", "honest")
_KEYS = {"name", "kind", "meant_for", "platform", "dtype", "variants", "bug", "flags", "host_only", "what"}


class ZooError(SuiteError):
    """A zoo table that cannot be used, or a member asked for that it lacks: one line, exit 2."""


@dataclass(frozen=True)
class Member:
    """One library of the zoo, as its table row says (zoo/zoo.toml explains each field)."""

    name: str
    kind: str
    platform: str
    what: str
    meant_for: str = ""
    dtype: str = "fp32"
    variants: tuple = ("p",)
    bug: "str | None" = None  # the sample's defect ("" the sample as shipped); None: zoo/NAME.c
    flags: tuple = field(default_factory=tuple)
    host_only: str = ""

    def source(self) -> Path:
        """The member's C file."""
        return sample.sources_dir() / "smoothl1lossgrad.c" if self.bug is not None else zoo_dir() / f"{self.name}.c"

    def defines(self) -> list:
        """Flags every build of the member takes: no fp16 functions for an fp32 member."""
        return ([] if self.dtype == "fp16" else ["-DSL1_NO_HALF"]) + list(self.flags)


def zoo_dir() -> Path:
    """The folder of the zoo's C sources and table (package data beside this module)."""
    return Path(__file__).resolve().parent / "zoo"


def members(path: "Path | None" = None) -> list:
    """The zoo's members, in the table's order (``path``: another table, for tests)."""
    path = Path(path) if path is not None else zoo_dir() / "zoo.toml"
    try:
        rows = tomllib.loads(path.read_text()).get("member", [])
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ZooError(f"{path}: cannot read the zoo's table ({exc})") from None
    found, names = [], set()
    for row in rows:
        unknown = set(row) - _KEYS
        name = row.get("name", "?")
        if unknown or row.get("kind") not in KINDS or "platform" not in row or name in names:
            raise ZooError(f"{path}: member {name!r}: needs name, kind (defect or honest) and platform, once each; "
                           f"unknown keys: {', '.join(sorted(unknown)) or 'none'}")
        if row["kind"] == "defect" and not row.get("meant_for"):
            raise ZooError(f"{path}: defect {name!r} names no requirement meant to catch it (meant_for)")
        names.add(name)
        found.append(Member(name=name, kind=row["kind"], platform=row["platform"], what=row.get("what", ""),
                            meant_for=row.get("meant_for", ""), dtype=row.get("dtype", "fp32"),
                            variants=tuple(row.get("variants", ("p",))), bug=row.get("bug"),
                            flags=tuple(row.get("flags", ())), host_only=row.get("host_only", "")))
    return found


def build_library(member: Member, build_dir: Path, cc=None, cflags=()) -> Path:
    """The member as a shared library for ``ctypes:`` (cached in ``build_dir``)."""
    if member.bug is not None:
        flags = [f"-DSL1_BUG={sample.bug_number(member.bug)}"] if member.bug else []
    else:
        flags = [f"-I{zoo_dir()}", f"-I{sample.sources_dir()}"]
    return build_shared(f"zoo-{member.name}", [member.source()], [*flags, *member.defines(), *cflags],
                        cc=cc, out_dir=build_dir, what=f"the zoo's {member.name}")


def build_harness(member: Member, build_dir: Path, cc=None, cflags=()) -> Path:
    """The simulator harness linked with the member (cached in ``build_dir``)."""
    flags = [*member.defines(), *cflags]
    if member.bug is not None:
        return sample.build_harness(cc=cc, out_dir=build_dir, flags=flags, bug=member.bug or None)
    return sample.build_harness(member.source(), cc=cc, out_dir=build_dir, flags=flags, include_dirs=[zoo_dir()])
