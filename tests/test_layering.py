"""The import layering of the code, read from the source with ``ast`` (nothing is imported).

Every ``.py`` file of reference/, adapters/ and conformance/ is parsed; its imports at any
depth (module level and inside functions; relative ones resolved to absolute names) give
the import graph between sl1conf modules. Checked on that graph:

* no arrow from a lower layer to a higher one (:data:`LAYERS`), and no arrow between the
  sibling sub-packages of a layer that keeps its siblings apart (certify, search, reports);
* no import cycle between sub-packages, nor between modules;
* no module imports another sl1conf module's private (``_name``) name, by
  ``from m import _name`` or by ``m._name`` on an imported module (tests/ are exempt);
* no module-level alias that only renames a function or class (``name = other``).

The helpers are tested on small synthetic sources and graphs first, so that a red check
means the code, not the checker.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Source folder -> the package it is installed as (meson.build).
FOLDERS = {
    "reference": "sl1conf.reference",
    "adapters": "sl1conf.adapters",
    "conformance": "sl1conf.conformance",
}

LAYERS = (
    # (layer, members, whether the members of this layer may import each other)
    ("entry points", ("sl1conf.conformance.cli", "sl1conf.conformance.pytest_plugin",
                      "sl1conf.conformance.__main__", "sl1conf.conformance", "sl1conf.conformance.selftest"), True),
    ("engines", ("sl1conf.conformance.certify", "sl1conf.conformance.search",
                 "sl1conf.conformance.reports"), False),
    ("vectors", ("sl1conf.conformance.vectors",), True),
    ("rules", ("sl1conf.conformance.requirements", "sl1conf.conformance.rules"), True),
    ("common", ("sl1conf.conformance.common",), True),
    ("adapters", ("sl1conf.adapters",), True),
    ("reference", ("sl1conf.reference",), True),
    ("namespace root", ("sl1conf",), True),
)
"""The layers, top to bottom: a module imports only from its own layer or a lower one.

Why: the ground truth (reference) must not depend on what is tested against it (adapters),
nor either on the suite that judges them (conformance); inside conformance, the rulebook
(rules, and the requirements built on it) is what vectors, the engines and the command line share, so it must not know any
of them, and the three engines (certify, search, reports) stay independent so that each
can change, or be used alone, without the others. The command line and the pytest plugin
sit on top and may use everything. A member is a module or package (a package holds its
sub-modules); ``sl1conf.conformance`` (a docstring-only ``__init__``) and ``sl1conf``
(the namespace root, generated from conformance/root_init.py.in, only ``__version__``)
are members as exact names only, so that a new module is never placed by accident.
"""

EXACT_ONLY = frozenset({"sl1conf", "sl1conf.conformance"})


# --------------------------------------------------------------------------- helpers


@dataclass(frozen=True)
class Import:
    """One imported sl1conf module (and, for ``from m import n``, the name n)."""

    source: str  # the importing module
    target: str  # the imported module, absolute
    name: str | None  # the name taken from target (``from target import name``), if any
    line: int
    path: str  # the importing file, relative to the repository


def module_name(relpath: str) -> str:
    """reference/X.py -> sl1conf.reference.X; a package's __init__.py -> the package."""
    parts = Path(relpath).with_suffix("").parts
    package = FOLDERS[parts[0]].split(".")
    rest = list(parts[1:])
    if rest and rest[-1] == "__init__":
        rest.pop()
    return ".".join(package + rest)


def resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    """The absolute name of ``from <level dots><target> import ...`` written in module."""
    if level == 0:
        return target or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    if level > 1:
        if level - 1 >= len(base):
            raise ValueError(f"relative import beyond the top package in {module}")
        base = base[: -(level - 1)]
    return ".".join(base + ([target] if target else []))


def known_module(name: str, modules) -> str | None:
    """The longest prefix of a dotted name that is a known module."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        candidate = ".".join(parts[:n])
        if candidate in modules:
            return candidate
    return None


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def imports_of(tree: ast.AST, module: str, is_package: bool, modules, path: str = "<source>"):
    """Every import of an sl1conf module in tree, at any depth, resolved to absolute names."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "sl1conf" or alias.name.startswith("sl1conf."):
                    target = known_module(alias.name, modules) or alias.name
                    found.append(Import(module, target, None, node.lineno, path))
        elif isinstance(node, ast.ImportFrom):
            base = resolve_relative(module, is_package, node.level, node.module)
            if not (base == "sl1conf" or base.startswith("sl1conf.")):
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if alias.name != "*" and sub in modules:
                    found.append(Import(module, sub, None, node.lineno, path))
                else:
                    found.append(Import(module, base, alias.name, node.lineno, path))
    return found


def module_bindings(tree: ast.AST, module: str, is_package: bool, modules) -> dict:
    """Local name -> the sl1conf module it is bound to by an import (any depth)."""
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "sl1conf" or alias.name.startswith("sl1conf."):
                    if alias.asname:
                        bound[alias.asname] = alias.name
                    else:
                        bound[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = resolve_relative(module, is_package, node.level, node.module)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in modules:
                    bound[alias.asname or alias.name] = sub
    return bound


def dotted(node: ast.AST) -> list[str] | None:
    """``a.b.c`` -> ["a", "b", "c"]; None unless the expression is names and attributes only."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def private_uses(tree: ast.AST, module: str, is_package: bool, modules, path: str = "<source>"):
    """(line, description) for each private name taken from another sl1conf module."""
    found = []
    for imp in imports_of(tree, module, is_package, modules, path):
        if imp.name and is_private(imp.name) and imp.target != module:
            found.append((imp.line, f"from {imp.target} import {imp.name}"))
    bound = module_bindings(tree, module, is_package, modules)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            chain = dotted(node.value)
            if not chain or chain[0] not in bound:
                continue
            owner = ".".join([bound[chain[0]]] + chain[1:])
            if owner in modules and owner != module:
                found.append((node.lineno, f"{ast.unparse(node)} (private name of {owner})"))
    return sorted(found)


def strongly_connected(graph: dict) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index, low, on_stack, stack, components = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    nodes = set(graph) | {w for targets in graph.values() for w in targets}
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return sorted(components)


def member_of(module: str) -> tuple[int, str] | None:
    """(layer number, 0 on top; the LAYERS member) that holds module; None if none does."""
    best = None
    for number, (_, members, _) in enumerate(LAYERS):
        for member in members:
            exact = module == member
            inside = member not in EXACT_ONLY and module.startswith(member + ".")
            if (exact or inside) and (best is None or len(member) > len(best[1])):
                best = (number, member)
    return best


def layer_violations(edges) -> list[str]:
    """The imports that go upwards, or across siblings of a layer that keeps them apart."""
    bad = []
    for imp in edges:
        src, dst = member_of(imp.source), member_of(imp.target)
        if src is None or dst is None:
            bad.append(f"{imp.path}:{imp.line}: {imp.source} -> {imp.target}: not in LAYERS")
            continue
        what = f"{imp.path}:{imp.line}: {imp.source} imports {imp.target}" + (
            f" ({imp.name})" if imp.name else "")
        if dst[0] < src[0]:
            bad.append(f"{what}: {LAYERS[src[0]][0]!r} layer imports the higher "
                       f"{LAYERS[dst[0]][0]!r} layer")
        elif dst[0] == src[0] and dst[1] != src[1] and not LAYERS[src[0]][2]:
            bad.append(f"{what}: {src[1]} and {dst[1]} are siblings that may not import each other")
    return bad


def definitions(tree: ast.Module) -> dict:
    """Module-level name -> "function" / "class" for each def and class statement."""
    kinds = {}
    for node in module_level(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            kinds[node.name] = "function"
        elif isinstance(node, ast.ClassDef):
            kinds[node.name] = "class"
    return kinds


def module_level(tree: ast.Module):
    """The statements run at import time (into if/try/with blocks, not into defs/classes)."""
    todo = list(tree.body)
    while todo:
        node = todo.pop(0)
        yield node
        if isinstance(node, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
            for field in ("body", "orelse", "finalbody"):
                todo.extend(getattr(node, field, []))
            for handler in getattr(node, "handlers", []):
                todo.extend(handler.body)


def external_kind(qualified: str) -> str | None:
    """"function" / "class" for a dotted name outside sl1conf, by importing its module."""
    parts = qualified.split(".")
    for n in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:n]))
        except Exception:
            continue
        try:
            for attr in parts[n:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        if inspect.isclass(obj):
            return "class"
        if inspect.isroutine(obj):
            return "function"
        return None
    return None


class Source:
    """The parsed sl1conf modules: name -> (tree, is_package, path)."""

    def __init__(self, files: dict):
        self.files = files  # module -> (tree, is_package, relative path)
        self.modules = set(files) | {"sl1conf"}

    def imported_names(self, module: str) -> dict:
        """Module-level ``from m import n [as a]``: a -> qualified "m.n" (absolute m)."""
        tree, is_package, _ = self.files[module]
        names = {}
        for node in module_level(tree):
            if isinstance(node, ast.ImportFrom):
                base = resolve_relative(module, is_package, node.level, node.module)
                for alias in node.names:
                    names[alias.asname or alias.name] = f"{base}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        names[alias.asname] = alias.name
                    else:
                        root = alias.name.split(".")[0]
                        names[root] = root
        return names

    def kind(self, qualified: str, depth: int = 0) -> str | None:
        """"function" / "class" / None for what a qualified name refers to."""
        if depth > 10 or qualified in self.modules:
            return None
        owner = known_module(qualified, self.modules)
        if owner is None:
            return external_kind(qualified)
        if owner not in self.files:  # sl1conf root, or a compiled module: unknown, not an alias
            return None
        rest = qualified[len(owner) + 1:].split(".")
        tree = self.files[owner][0]
        if len(rest) == 1:
            if rest[0] in definitions(tree):
                return definitions(tree)[rest[0]]
            reexport = self.imported_names(owner).get(rest[0])
            return self.kind(reexport, depth + 1) if reexport else None
        return None  # an attribute of something inside a module: not resolved

    def aliases(self, module: str):
        """(line, text, kind) for each module-level ``name = other`` that renames a def/class."""
        tree, _, _ = self.files[module]
        local = definitions(tree)
        names = self.imported_names(module)
        found = []
        for node in module_level(tree):
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets, value = [node.target], node.value
            else:
                continue
            if not all(isinstance(t, ast.Name) for t in targets):
                continue
            chain = dotted(value)
            if chain is None:
                continue
            root = chain[0]
            if len(chain) == 1 and root in local:
                kind = local[root]
            elif root in names:
                kind = self.kind(".".join([names[root]] + chain[1:]))
            elif len(chain) == 1 and hasattr(builtins, root):
                kind = external_kind(f"builtins.{root}")
            else:
                kind = None
            if kind:
                found.append((node.lineno, ast.unparse(node), kind))
        return found


def parse_sources(sources: dict) -> Source:
    """{relative path: text} -> Source."""
    files = {}
    for path, text in sources.items():
        files[module_name(path)] = (ast.parse(text, filename=path), path.endswith("__init__.py"), path)
    return Source(files)


@lru_cache(maxsize=None)
def repository() -> tuple[Source, tuple[Import, ...]]:
    """The repository's modules and every import edge between sl1conf modules."""
    sources = {}
    for folder in FOLDERS:
        for file in sorted((ROOT / folder).rglob("*.py")):
            sources[file.relative_to(ROOT).as_posix()] = file.read_text(encoding="utf-8")
    source = parse_sources(sources)
    for folder in FOLDERS:  # compiled modules (the Cython kernel) exist, but are not parsed
        for file in (ROOT / folder).rglob("*.pyx"):
            source.modules.add(module_name(file.relative_to(ROOT).with_suffix(".py").as_posix()))
    edges = []
    for module, (tree, is_package, path) in sorted(source.files.items()):
        edges += [imp for imp in imports_of(tree, module, is_package, source.modules, path)
                  if imp.target != module]
    return source, tuple(edges)


def unit_of(module: str) -> str:
    """The sub-package (the LAYERS member) that holds a module."""
    member = member_of(module)
    return member[1] if member else module


# --------------------------------------------------------------- tests of the helpers

MODULES = {"sl1conf", "sl1conf.adapters", "sl1conf.adapters.base", "sl1conf.reference",
           "sl1conf.reference.formats", "sl1conf.conformance.rules",
           "sl1conf.conformance.rules.catalog", "sl1conf.conformance.vectors",
           "sl1conf.conformance.vectors.store", "sl1conf.conformance.vectors.cases"}


@pytest.mark.parametrize("path, name", [
    ("reference/formats.py", "sl1conf.reference.formats"),
    ("reference/__init__.py", "sl1conf.reference"),
    ("adapters/base.py", "sl1conf.adapters.base"),
    ("conformance/rules/catalog.py", "sl1conf.conformance.rules.catalog"),
    ("conformance/vectors/families/__init__.py", "sl1conf.conformance.vectors.families"),
    ("conformance/__main__.py", "sl1conf.conformance.__main__"),
])
def test_module_name(path, name):
    assert module_name(path) == name


@pytest.mark.parametrize("module, is_package, level, target, expected", [
    ("sl1conf.adapters.builtin", False, 1, "base", "sl1conf.adapters.base"),
    ("sl1conf.adapters", True, 1, "base", "sl1conf.adapters.base"),
    ("sl1conf.reference.fast_oracle", False, 1, None, "sl1conf.reference"),
    ("sl1conf.conformance.vectors.store", False, 2, "rules.catalog", "sl1conf.conformance.rules.catalog"),
    ("sl1conf.conformance.vectors", True, 2, None, "sl1conf.conformance"),
    ("sl1conf.adapters.base", False, 0, "sl1conf.reference", "sl1conf.reference"),
])
def test_resolve_relative(module, is_package, level, target, expected):
    assert resolve_relative(module, is_package, level, target) == expected


def test_imports_at_every_depth_relative_ones_resolved():
    text = (
        "import os\n"
        "from . import cases\n"                                  # a sub-module
        "from .cases import Family\n"                            # a name of a module
        "from ..rules import catalog as C\n"
        "import sl1conf.reference.formats\n"
        "def f():\n"
        "    from sl1conf.adapters.base import Case\n"           # inside a function
        "    class K:\n"
        "        def g(self):\n"
        "            from sl1conf.reference import formats\n"    # deeper still
        "from numpy import float16\n"
    )
    found = imports_of(ast.parse(text), "sl1conf.conformance.vectors.store", False, MODULES)
    assert [(i.target, i.name, i.line) for i in found] == [
        ("sl1conf.conformance.vectors.cases", None, 2),
        ("sl1conf.conformance.vectors.cases", "Family", 3),
        ("sl1conf.conformance.rules.catalog", None, 4),
        ("sl1conf.reference.formats", None, 5),
        ("sl1conf.adapters.base", "Case", 7),
        ("sl1conf.reference.formats", None, 10),
    ]


def test_private_uses():
    text = (
        "from sl1conf import __version__\n"                      # dunder: fine
        "from sl1conf.adapters.base import Case, _ArrayFunction\n"
        "from ..rules import catalog as C\n"
        "import sl1conf.reference.formats\n"
        "from .store import _own\n"                              # the module itself: fine
        "def f(x):\n"
        "    from sl1conf.reference import formats as F\n"
        "    x._private, C.__doc__\n"                             # not a module; dunder
        "    return F._as_fraction(x), sl1conf.reference.formats._bits\n"
    )
    found = private_uses(ast.parse(text), "sl1conf.conformance.vectors.store", False, MODULES)
    assert [(line, what.split(" (")[0]) for line, what in found] == [
        (2, "from sl1conf.adapters.base import _ArrayFunction"),
        (9, "F._as_fraction"),
        (9, "sl1conf.reference.formats._bits"),
    ]


def test_strongly_connected():
    graph = {"a": {"b"}, "b": {"c", "a"}, "c": set(), "d": {"d", "a"}, "e": {"f"}, "f": {"e"}}
    assert strongly_connected(graph) == [["a", "b"], ["e", "f"]]
    assert strongly_connected({"a": {"b"}, "b": {"c"}}) == []


def test_member_of_and_layer_violations():
    assert member_of("sl1conf.conformance.vectors.families.bits") == (2, "sl1conf.conformance.vectors")
    assert member_of("sl1conf.conformance") == (0, "sl1conf.conformance")
    assert member_of("sl1conf.conformance.newthing") is None      # exact-only members hold nothing
    assert member_of("sl1conf") == (7, "sl1conf")
    edges = [Import(s, t, None, n, "f.py") for n, (s, t) in enumerate([
        ("sl1conf.conformance.vectors.store", "sl1conf.conformance.rules.catalog"),   # down: fine
        ("sl1conf.conformance.rules.catalog", "sl1conf.conformance.vectors.store"),   # up
        ("sl1conf.conformance.search.fuzz", "sl1conf.conformance.certify.engine"),    # siblings
        ("sl1conf.conformance.search.fuzz", "sl1conf.conformance.search.shards"),     # same unit
        ("sl1conf.conformance.__main__", "sl1conf.conformance.cli"),                  # same layer
        ("sl1conf.reference.oracle", "sl1conf.adapters.base"),                        # up
        ("sl1conf.reference.oracle", "sl1conf"),                                      # root: fine
    ], start=1)]
    assert [v.split(":")[1] for v in layer_violations(edges)] == ["2", "3", "6"]


def test_aliases():
    source = parse_sources({
        "reference/formats.py": "class Format: pass\nFP16 = Format()\ndef decode(b): pass\n",
        "reference/__init__.py": "from .formats import decode\n",
        "adapters/base.py": (
            "import numpy as np\n"
            "from sl1conf.reference import formats as F\n"
            "from sl1conf.reference import decode as dec\n"
            "from sl1conf.reference.formats import Format\n"
            "def load(): pass\n"
            "class Adapter: pass\n"
            "LIMIT = 3\n"
            "get = load\n"                # 8: function
            "Base = Adapter\n"            # 9: class
            "FMT = F.Format\n"            # 10: class in another module
            "Fmt: type = Format\n"        # 11: class, imported name
            "decode = dec\n"              # 12: function re-exported by a package
            "HALF = np.float16\n"         # 13: external class
            "FP16 = F.FP16\n"             # an instance: fine
            "MAX = LIMIT\n"               # a constant: fine
            "DT = np.dtype('f2')\n"       # a call: fine
            "a, b = load, Adapter\n"      # a tuple: not a rename of one name
            "if True:\n"
            "    say = print\n"           # 19: builtin function
            "def f():\n"
            "    inner = load\n"          # not module level: fine
        ),
    })
    assert [(line, kind) for line, _, kind in source.aliases("sl1conf.adapters.base")] == [
        (8, "function"), (9, "class"), (10, "class"), (11, "class"), (12, "function"),
        (13, "class"), (19, "function"),
    ]


# ------------------------------------------------------------- tests of the repository


def _where(imp: Import) -> str:
    return f"{imp.path}:{imp.line}: {imp.source} -> {imp.target}" + (f" ({imp.name})" if imp.name else "")


def test_the_graph_is_read():
    source, edges = repository()
    assert len(source.files) > 50
    pairs = {(imp.source, imp.target) for imp in edges}
    assert ("sl1conf.adapters.base", "sl1conf.reference.formats") in pairs
    assert ("sl1conf.reference.fast_oracle", "sl1conf.reference.kernel") in pairs  # `from . import kernel`
    assert ("sl1conf.conformance.certify.engine", "sl1conf.conformance.vectors.families") in pairs  # in a function


def test_every_module_has_a_layer():
    source, edges = repository()
    missing = sorted(m for m in source.modules if member_of(m) is None)
    missing += sorted({_where(i) for i in edges if member_of(i.target) is None})
    assert not missing, "not placed in LAYERS:\n" + "\n".join(missing)


def test_no_import_goes_up_a_layer():
    _, edges = repository()
    bad = layer_violations(edges)
    assert not bad, "imports against the layering (LAYERS, top to bottom):\n" + "\n".join(bad)


def _cycles(key) -> list[str]:
    _, edges = repository()
    graph = {}
    for imp in edges:
        a, b = key(imp.source), key(imp.target)
        if a != b:
            graph.setdefault(a, set()).add(b)
    report = []
    for component in strongly_connected(graph):
        inside = sorted({_where(i) for i in edges
                         if key(i.source) in component and key(i.target) in component
                         and key(i.source) != key(i.target)})
        report.append(" <-> ".join(component) + ":\n    " + "\n    ".join(inside))
    return report


def test_no_cycle_between_sub_packages():
    cycles = _cycles(unit_of)
    assert not cycles, "import cycles between sub-packages:\n" + "\n".join(cycles)


def test_no_cycle_between_modules():
    cycles = _cycles(lambda module: module)
    assert not cycles, "import cycles between modules:\n" + "\n".join(cycles)


def test_no_private_name_of_another_module():
    source, _ = repository()
    bad = []
    for module, (tree, is_package, path) in sorted(source.files.items()):
        bad += [f"{path}:{line}: {what}"
                for line, what in private_uses(tree, module, is_package, source.modules, path)]
    assert not bad, "private names used outside their module:\n" + "\n".join(bad)


def test_no_module_level_alias_of_a_function_or_class():
    source, _ = repository()
    bad = []
    for module, (_, _, path) in sorted(source.files.items()):
        bad += [f"{path}:{line}: {text} (renames a {kind})" for line, text, kind in source.aliases(module)]
    assert not bad, "module-level aliases that only rename a function or class:\n" + "\n".join(bad)


# --------------------------------------------------------------- requirement ids stay in requirements/

DRIVERS = ("sl1conf.conformance.certify", "sl1conf.conformance.search", "sl1conf.conformance.cli",
           "sl1conf.conformance.selftest")
"""The drivers: they run what the requirements ask and print it; a requirement's id (and so its
logic) lives in its module of ``conformance/requirements/`` (issue 26)."""
_RID = __import__("re").compile(r"\bR\d\d\b")


def requirement_ids_in_code(tree: ast.AST) -> list:
    """(line, text) of every string in the code (not a docstring, not a comment) naming a
    requirement id: a literal or an f-string's literal part."""
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    # an attribute docstring: a string statement after an assignment
    docstrings |= {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    # a command's own help (argparse's help=, description=, epilog=): documentation too
    docstrings |= {id(c) for k in ast.walk(tree) if isinstance(k, ast.keyword) and k.arg in ("help", "description", "epilog")
                   for c in ast.walk(k.value) if isinstance(c, ast.Constant)}
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings and _RID.search(n.value)]


def test_requirement_ids_in_code_are_found():
    tree = ast.parse('"""R01 in a docstring"""\nx = "R09"\ny = f"{x}/R13/"\n"R02 a statement"\n'
                     'def f():\n    """R05"""\n    return "see R18"\np.add_argument("--only", help="ids (R02)")\n')
    assert [line for line, _ in requirement_ids_in_code(tree)] == [2, 3, 7]


def test_no_requirement_id_in_a_driver():
    source, _ = repository()
    bad = []
    for module, (tree, _, path) in sorted(source.files.items()):
        if module.startswith(DRIVERS):
            bad += [f"{path}:{line}: {text!r}" for line, text in requirement_ids_in_code(tree)]
    assert not bad, "requirement ids in driver code (they belong in conformance/requirements/):\n" + "\n".join(bad)


# --------------------------------------------------------------- drivers use each other's public names only

DRIVER_UNITS = ("sl1conf.conformance.certify", "sl1conf.conformance.search", "sl1conf.conformance.cli",
                "sl1conf.conformance.pytest_plugin", "sl1conf.conformance.selftest")
"""The drivers and the entry points: one of them uses another's modules only through the names
those modules list in ``__all__`` (their public face), never a helper the module keeps to itself
(issue 26: a driver that reaches into another's internals is two drivers welded together)."""


def public_names(tree: ast.AST) -> "set | None":
    """The names a module's ``__all__`` lists (a literal list or tuple), None without one."""
    for node in getattr(tree, "body", ()):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            if isinstance(node.value, (ast.List, ast.Tuple)):
                return {e.value for e in node.value.elts if isinstance(e, ast.Constant)}
    return None


def internal_uses(source, module: str) -> list:
    """(line, description) for each name ``module`` takes from another driver unit's module that
    the module does not list in ``__all__`` (by ``from m import name`` or ``m.name``)."""
    tree, is_package, path = source.files[module]
    mine = next((u for u in DRIVER_UNITS if module == u or module.startswith(u + ".")), None)

    def foreign(target):
        unit = next((u for u in DRIVER_UNITS if target == u or target.startswith(u + ".")), None)
        return unit is not None and unit != mine and target in source.files

    found = []
    for imp in imports_of(tree, module, is_package, source.modules, path):
        if imp.name and foreign(imp.target) and imp.name not in (public_names(source.files[imp.target][0]) or ()):
            found.append((imp.line, f"from {imp.target} import {imp.name}"))
    bound = module_bindings(tree, module, is_package, source.modules)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain = dotted(node.value)
            if not chain or chain[0] not in bound:
                continue
            owner = ".".join([bound[chain[0]]] + chain[1:])
            if foreign(owner) and f"{owner}.{node.attr}" not in source.modules \
                    and node.attr not in (public_names(source.files[owner][0]) or ()):
                found.append((node.lineno, f"{ast.unparse(node)} (not in {owner}.__all__)"))
    return sorted(set(found))


def test_internal_uses_are_found():
    files = {"conformance/certify/engine.py": '__all__ = ["certify"]\ndef certify(): pass\ndef helper(): pass\n',
             "conformance/certify/__init__.py": "",
             "conformance/cli/run.py": "from sl1conf.conformance.certify.engine import certify, helper\n"
                                       "from sl1conf.conformance.certify import engine\nengine.helper()\nengine.certify()\n",
             "conformance/cli/__init__.py": ""}
    source = parse_sources(files)
    assert [line for line, _ in internal_uses(source, "sl1conf.conformance.cli.run")] == [1, 3]


def test_no_driver_uses_another_drivers_internals():
    source, _ = repository()
    bad = []
    for module, (_, _, path) in sorted(source.files.items()):
        if module.startswith(DRIVER_UNITS):
            bad += [f"{path}:{line}: {what}" for line, what in internal_uses(source, module)]
    assert not bad, "a driver uses another driver's internals (names outside its __all__):\n" + "\n".join(bad)


# --------------------------------------------------------------- typed from the engine to the page

TYPED_CONSUMERS = ("sl1conf.conformance.reports", "sl1conf.conformance.pytest_plugin", "sl1conf.conformance.cli.certify",
                   "sl1conf.conformance.cli.reports")
"""What reads a certification's results after the engine: the renderers, the gate and compare,
the pytest plugin, the command line's summary. They read the typed results
(``requirements.results``: Report, RunResult, RequirementResult, FamilyResult), never the
report's JSON rebuilt as dicts (issue 37: one data type from ``sl1conf certify`` to report.html)."""
RESULT_KEYS = ("runs", "requirements", "verdict", "status", "incomplete", "missing_runs", "not_asked")
"""Keys of the report's JSON that only a dict-typed result is read by: a typed one has attributes."""
JSON_READERS = {"sl1conf.conformance.reports.write": ("upgraded_from_1", "upgraded_from_2")}
"""Functions that work on the JSON itself, at a file's boundary: reading an older schema's report."""


def dict_result_reads(tree: ast.AST, allowed=()) -> list:
    """(line, text) of each ``x["runs"]``, ``x.get("status")`` and the like (RESULT_KEYS) outside
    the functions named in ``allowed``."""
    skip = {id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name in allowed for n in ast.walk(f)}
    found = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        key = None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            key = node.slice.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and node.args and isinstance(node.args[0], ast.Constant)):
            key = node.args[0].value
        if key in RESULT_KEYS:
            found.append((node.lineno, ast.unparse(node)))
    return found


def test_dict_result_reads_are_found():
    tree = ast.parse('def f(r):\n    return r["runs"], r.get("status"), r.fields["worst"], r.runs\n'
                     'def upgraded_from_1(d):\n    return d["runs"]\n')
    assert [line for line, _ in dict_result_reads(tree, ("upgraded_from_1",))] == [2, 2]
    assert len(dict_result_reads(tree)) == 3


def test_results_cross_from_the_engine_to_the_page_typed():
    source, _ = repository()
    bad = []
    for module, (tree, _, path) in sorted(source.files.items()):
        if module.startswith(TYPED_CONSUMERS):
            bad += [f"{path}:{line}: {text}" for line, text in dict_result_reads(tree, JSON_READERS.get(module, ()))]
    assert not bad, "results read as dicts after the engine (read the typed results instead):\n" + "\n".join(bad)
    # and the engine hands over the typed report: certify() and report_of() say so, as load_report() does
    returns = {}
    for module, name in (("sl1conf.conformance.certify.engine", "certify"),
                         ("sl1conf.conformance.certify.engine", "report_of"),
                         ("sl1conf.conformance.reports.write", "load_report")):
        tree = source.files[module][0]
        fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name)
        returns[name] = ast.unparse(fn.returns) if fn.returns else None
    assert returns == {"certify": "Report", "report_of": "Report", "load_report": "Report"}
    # and every renderer takes the one View built from it
    for module, name in (("sl1conf.conformance.reports.markdown", "render_markdown"),
                         ("sl1conf.conformance.reports.html", "render_html"),
                         ("sl1conf.conformance.reports.junit", "render_junit")):
        tree = source.files[module][0]
        fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name)
        assert [ast.unparse(a.annotation) if a.annotation else None for a in fn.args.args] == ["View"], name


def test_results_are_built_once():
    """The typed results are frozen dataclasses: what is learnt after one is built (the
    shared-against-private comparison, a waiver) makes a new one, never edits it (issue 37)."""
    source, _ = repository()
    tree = source.files["sl1conf.conformance.requirements.results"][0]
    frozen = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name in ("FamilyResult", "RequirementResult", "RunResult", "Report"):
            frozen[node.name] = any(isinstance(d, ast.Call) and ast.unparse(d.func) == "dataclass"
                                    and any(k.arg == "frozen" and ast.unparse(k.value) == "True" for k in d.keywords)
                                    for d in node.decorator_list)
    assert frozen == dict.fromkeys(("FamilyResult", "RequirementResult", "RunResult", "Report"), True)


def test_certify_renders_and_prints_one_view():
    """The report's files and certify's terminal lines come from one View (reports.write.written_view),
    built once: cli/certify.py builds no View of its own."""
    tree = ast.parse((ROOT / "conformance" / "cli" / "certify.py").read_text())
    called = [n.func.id if isinstance(n.func, ast.Name) else n.func.attr for n in ast.walk(tree)
              if isinstance(n, ast.Call) and isinstance(n.func, (ast.Name, ast.Attribute))]
    assert "view" not in called and called.count("written_view") == 1, called


DICT_FIELDS_ALLOWED = {("Counted", "not_a_distance"), ("RequirementResult", "not_a_distance"),
                       ("RequirementResult", "extra"), ("Report", "envelope"), ("Report", "extra")}
"""The typed results' fields that may be dicts: counts by kind, what one requirement alone records
(no renderer reads it as a tree), and the report's envelope (what, where, how it was asked for)."""


def dict_typed_fields(tree: ast.AST, classes: tuple) -> list:
    """(class, field) of each field of ``classes`` annotated as a dict (``dict``, ``dict | None``, ...)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name in classes:
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    text = ast.unparse(item.annotation).strip("'\"")
                    if re.search(r"\bdict\b", text) and "InitVar" not in text:
                        out.append((node.name, item.target.id))
    return out


def entry_reads(tree: ast.AST) -> list:
    """(line, text) of each read of a result's JSON-level fields: ``x.fields``, ``x.errors[...]``, ``x.errors.get(...)``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "fields":
            found.append((node.lineno, ast.unparse(node)))
        target = (node.value if isinstance(node, ast.Subscript) else node.func.value
                  if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                  else None)
        if isinstance(target, ast.Attribute) and target.attr == "errors" and ast.unparse(target.value) != "self":
            found.append((node.lineno, ast.unparse(node)))
    return found


def test_dict_typed_results_are_found():
    tree = ast.parse("class RunResult:\n    errors: 'dict | None' = None\n    n: int = 0\n"
                     "def f(r, run):\n    return r.fields['worst'], run.errors['max_ulp'], run.errors.max_ulp\n")
    assert dict_typed_fields(tree, ("RunResult",)) == [("RunResult", "errors")]
    assert [line for line, _ in entry_reads(tree)] == [5, 5]


def test_no_dict_typed_result_crosses_from_the_engine_to_the_renderers():
    """The results hold typed records, not the report's JSON as dicts (issue 37: an entry's
    counts, worst, examples, diagnosis and a run's error statistics are typed), and nothing after
    the engine reads a result's JSON-level ``fields`` or ``errors`` as a dict."""
    source, _ = repository()
    tree = source.files["sl1conf.conformance.requirements.results"][0]
    classes = ("Counted", "FamilyResult", "RequirementResult", "RunResult", "Report")
    assert set(dict_typed_fields(tree, classes)) <= DICT_FIELDS_ALLOWED, dict_typed_fields(tree, classes)
    bad = []
    for module, (tree, _, path) in sorted(source.files.items()):
        if module.startswith((*TYPED_CONSUMERS, "sl1conf.conformance.cli.summaries")):
            bad += [f"{path}:{line}: {text}" for line, text in entry_reads(tree)]
    assert not bad, "a result's fields read as dicts after the engine:\n" + "\n".join(bad)
