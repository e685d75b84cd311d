"""Platform profiles: what a platform's implementation must meet (TOML files in profiles/).

A profile names its dtypes and variants, the number of cores, whether flushing subnormals
to zero is accepted, whether the sign of zero results is checked, and the accuracy budget
(ULPs from the correctly rounded result on ordinary elements). Facts the manual does not
give are marked as assumptions in the file, with the reason for the default chosen.
"""

from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from sl1conf.conformance.common.errors import SuiteError

__all__ = ["Profile", "ProfileError", "PROFILE_DIR", "builtin_profiles", "load_profile"]

PROFILE_DIR = Path(__file__).with_name("profiles")
_FTZ = ("forbidden", "accepted")


class ProfileError(SuiteError):
    """An unknown or malformed profile; one line naming the file and the problem."""


@dataclass(frozen=True)
class Profile:
    name: str
    title: str
    description: str
    dtypes: tuple
    variants: tuple
    cores: int
    flush_to_zero: str
    strict_zero_sign: bool
    max_ulp: dict
    assumptions: dict = field(default_factory=dict)
    path: str = ""
    sha256: str = ""

    @property
    def core_mask(self) -> int:
        """The mask of every core the platform has."""
        return (1 << self.cores) - 1

    def require_dtype(self, dtype: str) -> None:
        if dtype not in self.dtypes:
            raise ProfileError(f"profile {self.name} has no {dtype} (it documents {', '.join(self.dtypes)})")

    def select(self, adapter, dtypes=None, variants=None, *, what: str = "certify") -> tuple[list, list]:
        """The dtypes and variants to run: those asked for (default: the profile's), each one the
        profile documents, that the implementation offers. One rule for certify, fuzz, sweep and
        the pytest plugin; ProfileError (one line) when a dtype is not the profile's or nothing
        is left to ``what``."""
        asked = list(dict.fromkeys(self.dtypes if dtypes is None else dtypes))
        for d in asked:
            self.require_dtype(d)
        wanted = list(dict.fromkeys(self.variants if variants is None else variants))
        chosen = [d for d in asked if d in adapter.dtypes], [v for v in wanted if v in adapter.variants]
        if not chosen[0] or not chosen[1]:
            raise ProfileError(f"{adapter.name} offers {', '.join(adapter.dtypes)} ({', '.join(adapter.variants)}); "
                               f"profile {self.name} wants {', '.join(asked) or 'nothing'} ({', '.join(wanted) or 'nothing'}): "
                               f"nothing to {what}")
        return chosen

    def summary(self) -> dict:
        return {"name": self.name, "title": self.title, "path": self.path, "sha256": self.sha256,
                "dtypes": list(self.dtypes), "variants": list(self.variants), "cores": self.cores,
                "flush_to_zero": self.flush_to_zero, "strict_zero_sign": self.strict_zero_sign,
                "max_ulp": dict(self.max_ulp), "assumptions": dict(self.assumptions)}


def builtin_profiles() -> list[str]:
    return sorted(p.stem for p in PROFILE_DIR.glob("*.toml"))


def _parse(path: Path) -> Profile:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ProfileError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        data = tomllib.loads(raw.decode())
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ProfileError(f"{path}: not valid TOML ({exc})") from None

    def need(key, kind):
        if key not in data:
            raise ProfileError(f"{path}: missing {key!r}")
        if not isinstance(data[key], kind):
            raise ProfileError(f"{path}: {key!r} must be a {kind.__name__}")
        return data[key]

    dtypes = tuple(need("dtypes", list))
    variants = tuple(need("variants", list))
    if not dtypes or set(dtypes) - {"fp16", "fp32"}:
        raise ProfileError(f"{path}: dtypes must be a non-empty list of fp16 and fp32")
    if not variants or set(variants) - {"s", "p"}:
        raise ProfileError(f"{path}: variants must be a non-empty list of s and p")
    cores = need("cores", int)
    if not 1 <= cores <= 32:
        raise ProfileError(f"{path}: cores must be 1 to 32")
    ftz = data.get("flush_to_zero", "forbidden")
    if ftz not in _FTZ:
        raise ProfileError(f"{path}: flush_to_zero must be one of {', '.join(_FTZ)}")
    max_ulp = need("max_ulp", dict)
    for d in dtypes:
        if not isinstance(max_ulp.get(d), int) or max_ulp[d] < 0:
            raise ProfileError(f"{path}: max_ulp.{d} must be a whole number >= 0")
    unknown = set(data) - {"name", "title", "description", "dtypes", "variants", "cores", "flush_to_zero",
                           "strict_zero_sign", "max_ulp", "assumptions"}
    if unknown:
        raise ProfileError(f"{path}: unknown key(s) {', '.join(sorted(unknown))}")
    return Profile(name=str(data.get("name", path.stem)), title=str(data.get("title", path.stem)),
                   description=str(data.get("description", "")), dtypes=dtypes, variants=variants,
                   cores=cores, flush_to_zero=ftz, strict_zero_sign=bool(data.get("strict_zero_sign", False)),
                   max_ulp={d: max_ulp[d] for d in dtypes}, assumptions=dict(data.get("assumptions", {})),
                   path=str(path), sha256=hashlib.sha256(raw).hexdigest())


def load_profile(name_or_path: str) -> Profile:
    """A built-in profile by name (ieee, ft78ne, mt7004) or a TOML file by path."""
    candidate = Path(name_or_path)
    if candidate.suffix == ".toml" or candidate.exists():
        if not candidate.is_file():
            raise ProfileError(f"{candidate}: no such profile file")
        return _parse(candidate)
    path = PROFILE_DIR / f"{name_or_path}.toml"
    if not path.is_file():
        raise ProfileError(f"unknown platform {name_or_path!r}: built-in profiles are "
                           f"{', '.join(builtin_profiles())}, or give a .toml file")
    return _parse(path)
