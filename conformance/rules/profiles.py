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
import json
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from sl1conf.conformance.common.errors import SuiteError

__all__ = ["Profile", "ProfileError", "PROFILE_DIR", "SCHEMA", "builtin_profiles", "load_profile",
           "schema_problem", "toml_path", "toml_value"]

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
                "max_ulp": dict(self.max_ulp), "assumptions": dict(self.assumptions)}


def builtin_profiles() -> list[str]:
    return sorted(p.stem for p in PROFILE_DIR.glob("*.toml"))


_KINDS = {"integer": "a whole number", "number": "a number", "string": "a string", "boolean": "true or false",
          "array": "a list", "object": "a table"}


def toml_value(value, limit: int = 60, _depth: int = 0) -> str:
    """``value`` as TOML writes it, on one line and at most ``limit`` characters (for messages)."""
    if _depth > 3:
        return "..."
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = json.dumps(value)  # escaped: one line whatever the string holds
    elif isinstance(value, (int, float)):
        text = repr(value)
    elif isinstance(value, list):
        items = [toml_value(v, limit, _depth + 1) for v in value[:8]] + (["..."] if value[8:] else [])
        text = "[" + ", ".join(items) + "]"
    elif isinstance(value, dict):
        pairs = list(value.items())
        items = [f"{toml_key(k)} = {toml_value(v, limit, _depth + 1)}" for k, v in pairs[:8]]
        items += ["..."] if pairs[8:] else []
        text = "{" + ", ".join(items) + "}"
    else:  # TOML dates and times
        text = json.dumps(str(value))
    return text if len(text) <= limit else text[:limit - 3] + "..."


def toml_key(key) -> str:
    key = str(key)
    return key if key and all(c.isascii() and (c.isalnum() or c in "_-") for c in key) else json.dumps(key)


def toml_path(path) -> str:
    """A place in a TOML document as its author writes it: ``max_ulp.fp16``, ``dtypes[0]``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (("." if out else "") + toml_key(part))
    return out


def schema_problem(doc, schema_name: str) -> "tuple[list, str] | None":
    """The most relevant place where ``doc`` does not match the committed schema ``schema_name``
    (conformance/schemas/) and what is wrong there, in one short line; None if it matches.
    Shared by profiles and waivers: jsonschema's own messages are Python reprs ("True is not of
    type 'integer'", "Additional properties are not allowed ..."), these say it in TOML."""
    import jsonschema

    try:
        err = jsonschema.exceptions.best_match(_validator(schema_name).iter_errors(doc))
    except RecursionError:  # jsonschema recurses once per level of nesting
        return [], "nested too deeply to match the schema"
    if err is None:
        return None
    where, kind, want, got, sch = list(err.absolute_path), err.validator, err.validator_value, err.instance, err.schema
    if kind == "type":
        return where, f"must be {_KINDS.get(want, want)}, not {toml_value(got)}"
    if kind == "enum":
        return where, f"must be one of {', '.join(map(str, want))}, not {toml_value(got)}"
    if kind in ("minimum", "maximum"):
        lo, hi = sch.get("minimum"), sch.get("maximum")
        span = f"{lo} to {hi}" if lo is not None and hi is not None else (f">= {lo}" if hi is None else f"<= {hi}")
        return where, f"must be {span}, not {toml_value(got)}"
    if kind == "minItems":
        return where, "must not be empty" if want == 1 else f"must list at least {want}, not {toml_value(got)}"
    if kind == "uniqueItems":
        seen = [toml_value(v) for v in got]
        twice = next(v for k, v in enumerate(seen) if v in seen[:k])
        return where, f"lists {twice} more than once"
    if kind == "minLength":
        return where, "must not be empty"
    if kind == "not" and "pattern" in want:
        return where, f"must be one line (no line breaks or control characters), not {toml_value(got)}"
    if kind == "pattern" and want == "\\S":
        return where, "must not be blank"
    if kind == "required":
        missing = [k for k in want if k not in got]
        return where + missing[:1], "missing (required)"
    if kind == "additionalProperties":
        known = list(sch.get("properties", {}))
        unknown = [k for k in got if k not in known]
        keys = f"the keys are {', '.join(known)}"
        if len(unknown) == 1:
            return where + unknown, f"unknown key ({keys})"
        return where, f"unknown keys {', '.join(toml_key(k) for k in unknown)} ({keys})"
    return where, " ".join(err.message.split())[:200]  # a keyword this suite's schemas do not use


@cache
def _validator(name: str):
    """One compiled validator per schema, the schema itself checked once."""
    import jsonschema

    from sl1conf.conformance.common.jsonfiles import schema

    doc = schema(name)
    cls = jsonschema.validators.validator_for(doc)
    cls.check_schema(doc)
    return cls(doc)


def _parse(path: Path) -> Profile:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ProfileError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        data = tomllib.loads(raw.decode())
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ProfileError(f"{path}: not valid TOML ({' '.join(str(exc).split())})") from None
    except RecursionError:  # tomllib recurses once per level of nesting
        raise ProfileError(f"{path}: nested too deeply to be a profile") from None

    def bad(where, problem):
        return ProfileError(f"{path}: {toml_path(where)}: {problem}" if where else f"{path}: {problem}")

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
    name = data.get("name", path.stem)
    return Profile(name=name, title=data.get("title", name), description=data.get("description", ""),
                   dtypes=tuple(data["dtypes"]), variants=tuple(data["variants"]), cores=data["cores"],
                   flush_to_zero=data.get("flush_to_zero", "forbidden"),
                   strict_zero_sign=data.get("strict_zero_sign", False),
                   max_ulp={d: data["max_ulp"][d] for d in data["dtypes"]},
                   assumptions=dict(data.get("assumptions", {})), path=str(path),
                   sha256=hashlib.sha256(raw).hexdigest())


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
