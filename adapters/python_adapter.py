"""A Python function as an implementation under test: ``python:MODULE:FUNCTION``, ``python:FILE.py:FUNCTION``.

The simplest way to certify a kernel reachable from Python: no package, no entry point.
``FUNCTION`` is ``fn(dy, x1, x2, beta) -> dx1`` on numpy arrays, run through
:class:`~sl1conf.adapters.base.ArrayFunction` (it gets copies of the elements a call computes
as float16 or float32 arrays and ``beta`` as a numpy scalar of that type; its result is
rounded to the type; an exception it raises is the call's ``error``, or ``rejected`` for one
of its ``rejects`` types).

- ``python:path/to/file.py:grad`` imports that file by its path, relative to the current
  directory (any name ending in ``.py``, or holding a ``/``, is a path);
- ``python:package.module:grad`` imports the module by name with the current directory
  first on ``sys.path``, as ``python -m`` does (for the import only).

The name splits at its last colon, so a path may hold colons. Optional attributes, read
from the function, else from its module, say what it offers (else ArrayFunction's defaults:
both dtypes, both variants, no refusals):

- ``dtypes``: a subset of ``("fp16", "fp32")``;
- ``variants``: a subset of ``("s", "p")`` (``s`` computes every element whatever the
  non-zero core_mask);
- ``rejects``: exception types that mean the function refuses the input on purpose
  (an acceptable answer where the manual leaves it open: R16).

A missing file or module, an import that fails, a missing or non-callable function, or a
malformed attribute is an :class:`~sl1conf.adapters.base.AdapterError` of one line (the
command line prints it and exits 2).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from pathlib import Path

from .base import DTYPES, VARIANTS, AdapterError, ArrayFunction, one_line

__all__ = ["PythonFunction", "load_function"]

_EXAMPLE = "python:my_kernel.py:grad or python:my_package.kernels:grad"


def _import_file(path: str):
    file = Path(path)
    if not file.is_file():
        raise AdapterError(f"no such file {path!r} (a path is relative to the current "
                           f"directory, {os.getcwd()})")
    name = f"sl1conf_python_impl_{hashlib.sha256(str(file.resolve()).encode()).hexdigest()[:12]}_{file.stem}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise AdapterError(f"{path!r} cannot be imported as a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # as an import would: dataclasses, pickling and the like look it up
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        sys.modules.pop(name, None)
        raise AdapterError(f"importing {path} failed: {one_line(exc)}") from None
    return module


def _import_module(name: str):
    here = os.getcwd()
    added = here not in sys.path
    if added:
        sys.path.insert(0, here)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):  # the module named, not one it imports
            raise AdapterError(f"no module named {exc.name!r} (looked in the current directory and sys.path; "
                               f"a file is named by its path, e.g. {name.replace('.', '/')}.py)") from None
        raise AdapterError(f"importing {name} failed: {one_line(exc)}") from None
    except (Exception, SystemExit) as exc:
        raise AdapterError(f"importing {name} failed: {one_line(exc)}") from None
    finally:
        if added and here in sys.path:
            sys.path.remove(here)


def load_function(rest: str):
    """(module, function, where) for the part of the name after ``python:``."""
    where, colon, fname = rest.rpartition(":")
    if not colon or not where or not fname:
        raise AdapterError(f"name a module or file and a function after python:, e.g. {_EXAMPLE}")
    if where.endswith(".py") or "/" in where or os.sep in where:
        module = _import_file(where)
    else:
        module = _import_module(where)
    if not hasattr(module, fname):
        found = sorted(n for n, v in vars(module).items() if callable(v) and not n.startswith("_")
                       and getattr(v, "__module__", None) == module.__name__)
        raise AdapterError(f"{where} has no function {fname!r}"
                           + (f" (it defines {', '.join(found)})" if found else ""))
    fn = getattr(module, fname)
    if not callable(fn):
        raise AdapterError(f"{where}:{fname} is not callable (its type is {type(fn).__name__})")
    return module, fn, where


def _attribute(fn, module, attr: str, allowed: tuple):
    """An attribute of the function, else of its module, as a tuple of allowed strings; None if neither has it."""
    for owner in (fn, module):
        if hasattr(owner, attr):
            value = getattr(owner, attr)
            values = (value,) if isinstance(value, str) else value
            try:
                values = tuple(values)
            except TypeError:
                values = None
            if not values or not all(isinstance(v, str) and v in allowed for v in values):
                raise AdapterError(f"{attr} = {value!r}: expected a non-empty subset of {allowed}")
            return tuple(dict.fromkeys(values))
    return None


def _rejects(fn, module):
    for owner in (fn, module):
        if hasattr(owner, "rejects"):
            value = getattr(owner, "rejects")
            values = (value,) if isinstance(value, type) else value
            try:
                values = tuple(values)
            except TypeError:
                values = None
            if values is None or not all(isinstance(v, type) and issubclass(v, BaseException) for v in values):
                raise AdapterError(f"rejects = {value!r}: expected exception types")
            return values
    return None


class PythonFunction(ArrayFunction):
    """``fn(dy, x1, x2, beta) -> dx1`` named by ``python:MODULE:FUNCTION`` or ``python:FILE.py:FUNCTION``."""

    def __init__(self, rest: str):
        module, fn, where = load_function(rest)
        super().__init__(f"python:{rest}", fn, _attribute(fn, module, "dtypes", DTYPES),
                         variants=_attribute(fn, module, "variants", VARIANTS), rejects=_rejects(fn, module))
        self._where, self._module = where, module

    def describe(self) -> dict:
        info = {**super().describe(), "function": getattr(self.fn, "__qualname__", repr(self.fn)),
                "module": self._module.__name__}
        source = getattr(self._module, "__file__", None)
        if source and Path(source).is_file():
            info["source"] = str(Path(source).resolve())
            info["source_sha256"] = hashlib.sha256(Path(source).read_bytes()).hexdigest()
        if self.rejects:
            info["rejects"] = [t.__name__ for t in self.rejects]
        return info
