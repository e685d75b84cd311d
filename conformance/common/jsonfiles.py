"""JSON documents of the suite (vector manifests, reports): read against a committed
schema. One place, so every reader gives the same one-line errors (writing: common.files)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

__all__ = ["schema", "read_checked", "validate", "validator", "REPORT_SCHEMA_VERSION"]

SCHEMA_DIR = Path(__file__).parent.parent / "schemas"


@cache
def schema(name: str) -> dict:
    """A committed JSON Schema by file name (conformance/schemas/NAME)."""
    return json.loads((SCHEMA_DIR / name).read_text())


REPORT_SCHEMA_VERSION = 3
"""report.json's schema version (conformance/schemas/report.schema.json): what certify and the
pytest plugin write, and what the report readers read (version 1 is upgraded as it is read)."""


def read_checked(path, schema_name: str, version: int, error: type, upgrades: "dict | None" = None) -> dict:
    """``path`` parsed and validated against ``schema_name`` at ``schema_version`` ``version``;
    ``error(one line)`` if it is missing, not JSON, of another version or not valid. ``upgrades``:
    older version -> the function that turns such a document into one of ``version``."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise error(f"{path}: missing") from None
    except IsADirectoryError:
        raise error(f"{path}: is a folder, not a JSON file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise error(f"{path}: not valid JSON ({exc})") from None
    except RecursionError:  # json's decoder recurses once per level of nesting
        raise error(f"{path}: nested too deeply to be a document of this suite") from None
    found = doc.get("schema_version") if isinstance(doc, dict) else None
    while found in (upgrades or {}) and found != version:  # one version at a time: 1 -> 2 -> 3
        doc = upgrades[found](doc)
        found = doc.get("schema_version")
    if found != version:
        raise error(f"{path}: unknown schema version {found!r} (this sl1conf reads {version})")
    validate(doc, schema_name, error, str(path))
    return doc


@cache
def validator(name: str):
    """One compiled validator per committed schema (the schema itself checked once): checking a
    document is then milliseconds, cheap enough for every sweep checkpoint."""
    import jsonschema

    doc = schema(name)
    cls = jsonschema.validators.validator_for(doc)
    cls.check_schema(doc)
    return cls(doc)


def validate(doc, schema_name: str, error: type, label: str) -> None:
    """``error("LABEL: does not match the schema at WHERE: WHY")`` unless ``doc`` matches (the
    first error, as ``jsonschema.validate`` reports it: the most relevant one)."""
    import jsonschema

    try:
        best = jsonschema.exceptions.best_match(validator(schema_name).iter_errors(doc))
    except RecursionError:  # a value nested deeper than Python's stack (jsonschema recurses per level)
        raise error(f"{label}: nested too deeply to match the schema") from None
    if best is not None:
        where = "/".join(str(p) for p in best.absolute_path) or "(top)"
        raise error(f"{label}: does not match the schema at {where}: {best.message}")
