"""JSON documents of the suite (vector manifests, reports): read against a committed
schema, written atomically. One place, so every reader gives the same one-line errors
and no writer ever leaves a half-written file where a good one was."""

from __future__ import annotations

import json
import os
import tempfile
from functools import cache
from pathlib import Path

__all__ = ["schema", "read_checked", "validate", "write_atomic", "writable_folder"]

SCHEMA_DIR = Path(__file__).parent.parent / "schemas"


@cache
def schema(name: str) -> dict:
    """A committed JSON Schema by file name (conformance/schemas/NAME)."""
    return json.loads((SCHEMA_DIR / name).read_text())


def read_checked(path, schema_name: str, version: int, error: type) -> dict:
    """``path`` parsed and validated against ``schema_name`` at ``schema_version`` ``version``;
    ``error(one line)`` if it is missing, not JSON, of another version or not valid."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise error(f"{path}: missing") from None
    except IsADirectoryError:
        raise error(f"{path}: is a folder, not a JSON file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise error(f"{path}: not valid JSON ({exc})") from None
    found = doc.get("schema_version") if isinstance(doc, dict) else None
    if found != version:
        raise error(f"{path}: unknown schema version {found!r} (this sl1conf reads {version})")
    validate(doc, schema_name, error, str(path))
    return doc


def validate(doc, schema_name: str, error: type, label: str) -> None:
    """``error("LABEL: does not match the schema at WHERE: WHY")`` unless ``doc`` matches."""
    import jsonschema

    try:
        jsonschema.validate(doc, schema(schema_name))
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top)"
        raise error(f"{label}: does not match the schema at {where}: {exc.message}") from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path, text: str) -> Path:
    """Write ``text`` to a temporary file beside ``path``, then rename it over ``path``."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it private; a report is for everyone
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def writable_folder(path, error: type) -> Path:
    """Create folder ``path`` if needed and prove a file can be written in it, before any
    long run writes there; ``error("PATH: cannot write there (why)")`` otherwise."""
    path = Path(path)
    try:
        if path.exists() and not path.is_dir():
            raise error(f"{path} exists and is not a folder")
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".sl1conf-probe.", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise error(f"{path}: cannot write there ({exc.strerror or exc})") from None
    return path
