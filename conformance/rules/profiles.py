"""Platform profiles: what a platform's implementation must meet (TOML files in profiles/).

A profile names its dtypes and variants, the number of cores, whether flushing subnormals
to zero is accepted, whether the sign of zero results is checked, and the accuracy budget
(ULPs from the correctly rounded result on ordinary elements). Facts the manual does not
give are marked as assumptions in the file, with the reason for the default chosen.

A file is checked completely before anything runs: against the committed JSON Schema
(conformance/schemas/profile.schema.json: every key, its type and range, no unknown keys),
then for what a schema cannot say (a budget for every dtype listed). Every problem is a
:class:`ProfileError` of one line naming the file, the field and what is wrong with it; the
fields are documented in docs/conformance.md.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from sl1conf.conformance.common.errors import SuiteError
from sl1conf.conformance.common.tomlfiles import read_toml, schema_problem, toml_path, toml_value
from sl1conf.reference.error_model import known_order
from sl1conf.reference.orders import SHAPES
from sl1conf.reference.reachable import FLUSH_PLACES, IEEE, OPS, ErrorModel

__all__ = ["Profile", "ProfileError", "PROFILE_DIR", "SCHEMA", "builtin_profiles", "load_profile"]

PROFILE_DIR = Path(__file__).with_name("profiles")
SCHEMA = "profile.schema.json"  # conformance/schemas/: every field, its type and range (docs/conformance.md)


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
    error_model: ErrorModel = IEEE
    assumptions: dict = field(default_factory=dict)
    path: str = ""
    sha256: str = ""

    @property
    def core_mask(self) -> int:
        """The mask of every core the platform has."""
        return (1 << self.cores) - 1

    def lacks_cores(self, mask: int) -> bool:
        """Whether ``mask`` names a core the platform does not have: certify makes no shared call
        with it (and the exported self-test judges none)."""
        return bool(mask & ~self.core_mask)

    def require_dtype(self, dtype: str) -> None:
        if dtype not in self.dtypes:
            raise ProfileError(f"profile {self.name} has no {dtype} (it documents {', '.join(self.dtypes)})")

    def select(self, adapter, dtypes=None, variants=None, *, what: str = "certify") -> tuple[list, list]:
        """The dtypes and variants to run: those asked for (default: the profile's), each one the
        profile documents, that the implementation offers. One rule for certify, fuzz, sweep and
        the pytest plugin; ProfileError (one line) when a dtype is not the profile's, when a
        dtype or variant asked for (not None) is one the implementation lacks, or when nothing
        is left to ``what``."""
        asked = list(dict.fromkeys(self.dtypes if dtypes is None else dtypes))
        for d in asked:
            self.require_dtype(d)
        wanted = list(dict.fromkeys(self.variants if variants is None else variants))
        for given, names, offered, what_ in ((dtypes, asked, adapter.dtypes, "dtype"),
                                             (variants, wanted, adapter.variants, "variant")):
            lacking = [n for n in names if n not in offered] if given is not None else []
            if lacking:  # asked for by name: not silently left out (the default run reports it incomplete)
                raise ProfileError(f"{adapter.name} does not offer the {what_} {', '.join(lacking)} asked for "
                                   f"(it offers {', '.join(adapter.dtypes)} ({', '.join(adapter.variants)}))")
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
                "max_ulp": dict(self.max_ulp), "error_model": self.error_model.summary(),
                "assumptions": dict(self.assumptions)}


def builtin_profiles() -> list[str]:
    return sorted(p.stem for p in PROFILE_DIR.glob("*.toml"))


def _parse(path: Path) -> Profile:
    raw, data = read_toml(path, ProfileError, "a profile")

    def bad(where, problem):
        return ProfileError(f"{path}: {toml_path(where)}: {problem}" if where else f"{path}: {problem}")

    orders = data.get("error_model", {}).get("orders") if isinstance(data.get("error_model"), dict) else None
    for order in orders if isinstance(orders, dict) else ():  # said before the schema's pattern is
        if not known_order(order):
            raise bad(["error_model", "orders", order], "unknown evaluation order: clamp-recipmul, clamp-divmul, or "
                      f"one of the grammar's, <shape>[-ge][-plus0|-plus0diff|-plus0abs|-grad|-gradfma] with the shape {', '.join(SHAPES)} "
                      "(docs/evaluation-models.md)")
    problem = schema_problem(data, SCHEMA)
    if problem:
        raise bad(*problem)
    # what the schema cannot say: counts written as TOML integers (jsonschema takes 2.0 for an
    # integer, as JSON Schema has since draft 6), and a budget for every dtype listed
    if isinstance(data["cores"], float):
        raise bad(["cores"], f"must be a whole number, not {toml_value(data['cores'])}")
    for d, ulps in data["max_ulp"].items():
        if isinstance(ulps, float):
            raise bad(["max_ulp", d], f"must be a whole number, not {toml_value(ulps)}")
    for d in data["dtypes"]:
        if d not in data["max_ulp"]:
            raise bad(["max_ulp", d], f"missing (dtypes lists {d}: each dtype listed needs its budget)")
    for op, steps in data.get("error_model", {}).get("ulp", {}).items():
        if isinstance(steps, float):
            raise bad(["error_model", "ulp", op], f"must be a whole number, not {toml_value(steps)}")
    name = data.get("name", path.stem)
    ftz = data.get("flush_to_zero", "forbidden")
    if ftz == "forbidden" and data.get("error_model", {}).get("flush"):
        raise bad(["error_model", "flush"], "names places to flush, but flush_to_zero is \"forbidden\" "
                  "(set it to \"accepted\", or leave flush empty)")
    return Profile(name=name, title=data.get("title", name), description=data.get("description", ""),
                   dtypes=tuple(data["dtypes"]), variants=tuple(data["variants"]), cores=data["cores"],
                   flush_to_zero=ftz, error_model=_error_model(data.get("error_model", {}), ftz),
                   strict_zero_sign=data.get("strict_zero_sign", False),
                   max_ulp={d: data["max_ulp"][d] for d in data["dtypes"]},
                   assumptions=dict(data.get("assumptions", {})), path=str(path),
                   sha256=hashlib.sha256(raw).hexdigest())


def load_profile(name_or_path: str) -> Profile:
    """A built-in profile by name (ieee, ft78ne, mt7004) or a TOML file by path: a file where
    one is there (or the text ends in .toml), else the built-in of that name; a folder that
    shares a built-in's name (an ``--out ieee``) is not read as a file."""
    candidate = Path(name_or_path)
    unnamed = candidate.exists() and name_or_path not in builtin_profiles()  # there, and no built-in's name
    if candidate.suffix == ".toml" or candidate.is_file() or unnamed:
        if not candidate.is_file():
            raise ProfileError(f"{candidate}: no such profile file")
        return _parse(candidate)
    path = PROFILE_DIR / f"{name_or_path}.toml"
    if not path.is_file():
        raise ProfileError(f"unknown platform {name_or_path!r}: built-in profiles are "
                           f"{', '.join(builtin_profiles())}, or give a .toml file")
    return _parse(path)


def _error_model(table: dict, flush_to_zero: str) -> ErrorModel:
    """The [error_model] table (validated by the schema), its defaults filled in: IEEE's orders,
    every operation correctly rounded, flushing everywhere where flush_to_zero is accepted, no
    overflow accepted where the exact result is finite (R03). An
    order may be any of the grammar's (reference.orders: one R17 found, accepted on purpose)."""
    default_flush = FLUSH_PLACES if flush_to_zero == "accepted" else ()
    orders = table.get("orders")
    return ErrorModel(orders={o: tuple(p) for o, p in orders.items()} if orders else dict(IEEE.orders),
                      ulp={op: table.get("ulp", {}).get(op, 0) for op in OPS},
                      flush=tuple(table.get("flush", default_flush)), overflow=tuple(table.get("overflow", ())))
