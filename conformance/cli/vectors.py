"""``sl1conf vectors generate | verify | list | show | export``: golden vectors from the command line."""

from __future__ import annotations

from sl1conf.reference import formats as F

from sl1conf.conformance.vectors import store as V

__all__ = ["generate", "verify", "list_set", "show", "export"]


class CommandError(Exception):
    """Bad input: the command line prints it as one line and exits 2."""


def _load(path) -> V.VectorSet:
    try:
        return V.load(path)
    except V.VectorSetError as exc:
        raise CommandError(str(exc)) from None


def generate(dtype: F.Format, out, *, seed: int, names, large: bool, force: bool, echo=print) -> int:
    from sl1conf.conformance.vectors.families import generate as make_families

    try:
        families = make_families(dtype.name, seed, names or None, large=large)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    if not families:
        raise CommandError(f"none of the families asked for applies to {dtype.name}")
    try:
        path = V.write(out, dtype, families, seed=seed, large=large, force=force)
    except V.VectorSetError as exc:
        raise CommandError(str(exc)) from None
    cases = sum(len(f.cases) for f in families)
    elements = sum(c.n for f in families for c in f.cases)
    echo(f"wrote {path}: {dtype.name}, {len(families)} families, {cases} cases, {elements} elements, seed {seed}")
    return 0


def verify(path, echo=print) -> int:
    vs = _load(path)
    problems = V.verify(vs)
    for line in problems:
        echo(f"{vs.path}/{line}")
    m = vs.manifest
    if problems:
        echo(f"FAILED: {len(problems)} case/column pairs do not hold")
        return 1
    echo(f"OK: {vs.path}: checksums and schema hold; {len(m['cases'])} cases, {m['elements']} elements, "
         f"{len(m['columns'])} expected columns recomputed from the oracle and the models")
    return 0


def list_set(path, echo=print) -> int:
    vs = _load(path)
    m = vs.manifest
    echo(f"{vs.path}: {m['dtype']}, seed {m['seed']}, generator {m['generator']['name']} "
         f"{m['generator']['version']}, {len(m['cases'])} cases, {m['elements']} elements")
    echo(f"  {'id':>3}  {'name':<24}{'cases':>6}{'elements':>10}  flags")
    for fam in m["families"]:
        echo(f"  {fam['id']:>3}  {fam['name']:<24}{fam['cases']:>6}{fam['elements']:>10}  {', '.join(fam['flags'])}")
    return 0


def show(path, key: str, echo=print, limit: int = 8) -> int:
    vs = _load(path)
    fmt = vs.format
    hx = lambda b: F.hex_bits(fmt, b)  # noqa: E731
    if "." in key:  # a case id
        rows = [r for r in vs.manifest["cases"] if r["id"] == key]
        if not rows:
            raise CommandError(f"{vs.path}: no case {key!r} (case ids look like 3.12: family 3, case 12)")
        row = rows[0]
        fam = vs.family(row["family"])
        echo(f"case {row['id']} of family {fam['id']} {fam['name']}: {row['variant']} variant, "
             f"core_mask {row['core_mask']}, length {row['length']}, {row['n']} elements, beta {row['beta']}")
        echo(f"  result {row['result']}; flags: {', '.join(row['flags']) or '-'}")
        if row["note"]:
            echo(f"  note: {row['note']}")
        case = vs.case(row)
        alts = sorted(case.alternatives)
        echo(f"  {'i':>5}  {'dy':<12}{'x1':<12}{'x2':<12}{'oracle':<12}" + "".join(f"{a:<12}" for a in alts))
        oracle = vs.expected("oracle", row)
        for i in range(min(row["n"], limit)):
            echo(f"  {i:>5}  {hx(case.dy[i]):<12}{hx(case.x1[i]):<12}{hx(case.x2[i]):<12}{hx(oracle[i]):<12}"
                 + "".join(f"{hx(case.alternatives[a][i]):<12}" for a in alts))
        if row["n"] > limit:
            echo(f"  ... {row['n'] - limit} more")
        return 0
    try:
        fam = vs.family(key)
    except V.VectorSetError as exc:
        raise CommandError(f"{exc} (give a family id or name, or a case id like 3.12)") from None
    echo(f"family {fam['id']} {fam['name']}: {fam['cases']} cases, {fam['elements']} elements")
    echo(f"  {fam['description']}")
    echo(f"  {'case':<8}{'var':<5}{'mask':<8}{'length':>8}{'beta':>12}  {'result':<11}flags")
    for row in vs.case_rows(fam["id"]):
        echo(f"  {row['id']:<8}{row['variant']:<5}{row['core_mask']:<8}{row['length']:>8}{row['beta']:>12}  "
             f"{row['result']:<11}{', '.join(row['flags'])}")
    return 0


def export(path, fmt_name: str, out, *, force: bool, echo=print) -> int:
    from sl1conf.conformance.vectors import export as E

    vs = _load(path)
    try:
        written = E.export(vs, fmt_name, out or ("sl1_vectors_c" if fmt_name == "c-header" else "sl1_vectors.txt"),
                           force=force)
    except (V.VectorSetError, OSError) as exc:
        raise CommandError(str(exc) if isinstance(exc, V.VectorSetError)
                           else f"{out}: cannot write the export ({exc.strerror or exc})") from None
    for p in written:
        echo(f"wrote {p}")
    return 0
