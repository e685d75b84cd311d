"""TOML files the user writes (platform profiles, waivers): read, then checked against a
committed JSON Schema, with every problem said in one line and in TOML's terms.

Why one module: profiles and waivers are read the same way (a file that cannot be read, is
not TOML, or is nested too deeply, is one line) and checked the same way; jsonschema's own
messages are Python reprs ("True is not of type 'integer'"), these say ``cores: must be a
whole number, not true``. The schemas themselves and their compiled validators are
common.jsonfiles'.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from sl1conf.conformance.common.jsonfiles import validator

__all__ = ["read_toml", "schema_problem", "toml_value", "toml_key", "toml_path"]


def read_toml(path, error: type, what: str) -> tuple:
    """(the file's bytes, its TOML parsed); ``error(one line)`` when it cannot be read, is not
    UTF-8 TOML, or is nested too deeply (``what``: "a profile", "a waiver file")."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise error(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        return raw, tomllib.loads(raw.decode())
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise error(f"{path}: not valid TOML ({' '.join(str(exc).split())})") from None
    except RecursionError:  # tomllib recurses once per level of nesting
        raise error(f"{path}: nested too deeply to be {what}") from None


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
        err = jsonschema.exceptions.best_match(validator(schema_name).iter_errors(doc))
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
        # JSON Schema's equality: 0 and 0.0 are the same number, true and 1 are not
        same = lambda a, b: (type(a) is type(b) if bool in (type(a), type(b)) else True) and a == b  # noqa: E731
        twice = next(k for k in range(len(got)) if any(same(got[k], v) for v in got[:k]))
        return where, f"lists {toml_value(got[twice])} more than once" + (
            f" ({' and '.join(toml_value(v) for v in got if same(v, got[twice]))} are the same number)"
            if len({toml_value(v) for v in got if same(v, got[twice])}) > 1 else "")
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
