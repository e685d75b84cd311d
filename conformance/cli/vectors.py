"""``sl1conf vectors generate | verify | list | show | export``: golden vectors from the command line."""

from __future__ import annotations

from sl1conf.conformance.cli.args import Parser, UsageError, add_platform, dtype_arg, names_arg, path_arg, seed_arg
from sl1conf.reference import formats

from sl1conf.conformance.vectors import store

__all__ = ["generate", "verify", "list_set", "show", "export", "register"]


def generate(dtype: formats.Format, out, *, seed: int, names, large: bool, force: bool, echo=print) -> int:
    from sl1conf.conformance.vectors.families import generate as make_families

    try:
        families = make_families(dtype.name, seed, names or None, large=large)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not families:
        raise UsageError(f"none of the families asked for applies to {dtype.name}")
    path = store.write(out, dtype, families, seed=seed, large=large, force=force)
    cases = sum(len(f.cases) for f in families)
    elements = sum(c.n for f in families for c in f.cases)
    echo(f"wrote {path}: {dtype.name}, {len(families)} families, {cases} cases, {elements} elements, seed {seed}")
    return 0


def verify(path, echo=print) -> int:
    vs = store.load(path)
    problems = store.verify(vs)
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
    vs = store.load(path)
    m = vs.manifest
    echo(f"{vs.path}: {m['dtype']}, seed {m['seed']}, generator {m['generator']['name']} "
         f"{m['generator']['version']}, {len(m['cases'])} cases, {m['elements']} elements")
    echo(f"  {'id':>3}  {'name':<24}{'cases':>6}{'elements':>10}  flags")
    for fam in m["families"]:
        echo(f"  {fam['id']:>3}  {fam['name']:<24}{fam['cases']:>6}{fam['elements']:>10}  {', '.join(fam['flags'])}")
    return 0


def show(path, key: str, echo=print, limit: int = 8) -> int:
    vs = store.load(path)
    fmt = vs.format
    hx = lambda b: formats.hex_bits(fmt, b)  # noqa: E731
    if "." in key:  # a case id
        rows = [r for r in vs.manifest["cases"] if r["id"] == key]
        if not rows:
            raise UsageError(f"{vs.path}: no case {key!r} (case ids look like 3.12: family 3, case 12)")
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
    except store.VectorSetError as exc:
        raise UsageError(f"{exc} (give a family id or name, or a case id like 3.12)") from None
    echo(f"family {fam['id']} {fam['name']}: {fam['cases']} cases, {fam['elements']} elements")
    echo(f"  {fam['description']}")
    echo(f"  {'case':<8}{'var':<5}{'mask':<8}{'length':>8}{'beta':>12}  {'result':<11}flags")
    for row in vs.case_rows(fam["id"]):
        echo(f"  {row['id']:<8}{row['variant']:<5}{row['core_mask']:<8}{row['length']:>8}{row['beta']:>12}  "
             f"{row['result']:<11}{', '.join(row['flags'])}")
    return 0


def export(path, fmt_name: str, out, *, force: bool, platform=None, profile_file=None, echo=print) -> int:
    from sl1conf.conformance.vectors.export import export as write_export

    if (platform or profile_file) and fmt_name != "c-header":
        raise UsageError("--platform and --profile apply to --format c-header only")
    session = None
    if fmt_name == "c-header":  # the profile whose accepted results it carries: ieee's when neither is given
        from sl1conf.conformance.certify.session import open_session

        session = open_session(platform, profile_file)
    vs = store.load(path)
    try:
        written = write_export(vs, fmt_name, out or ("sl1_vectors_c" if fmt_name == "c-header" else "sl1_vectors.txt"),
                               force=force, profile=session.profile if session else None,
                               given=session.given if session else None)
    except OSError as exc:
        raise UsageError(f"{out}: cannot write the export ({exc.strerror or exc})") from None
    for p in written:
        echo(f"wrote {p}")
    if session is not None:  # what the self-test will accept is the profile's: never left unsaid
        echo(f"the self-test judges as certify --platform {session.profile.name} does" if session.given else
             f"the self-test judges as certify --platform {session.profile.name} does (the default: export with "
             "--platform NAME or --profile FILE to judge as the profile you certify on)")
    return 0


def _run(args) -> int:
    if args.action == "generate":
        names = [n for part in (args.families or []) for n in part]
        return generate(args.dtype, args.out, seed=args.seed, names=names, large=args.large, force=args.force)
    if args.action == "verify":
        return verify(args.dir)
    if args.action == "list":
        return list_set(args.dir)
    if args.action == "show":
        return show(args.dir, args.id)
    return export(args.dir, args.format, args.out, force=args.force, platform=args.platform,
                  profile_file=args.profile)


def register(sub) -> None:
    """Add ``vectors generate | verify | list | show | export`` to the ``sl1conf`` parser."""
    p = sub.add_parser("vectors", help="golden test vectors: generate, verify, list, show, export",
                       description="Golden test vectors (docs/vector-format.md): generate a set, verify it, "
                                   "list or show what it holds, export it for a board or simulator.")
    vsub = p.add_subparsers(dest="action", required=True, parser_class=Parser, metavar="ACTION")
    g = vsub.add_parser("generate", help="write a vector set folder (docs/vector-format.md)",
                        description="Write a vector set folder: the families' cases, the exact oracle's results "
                                    "and every accepted alternative (docs/vector-format.md).")
    g.add_argument("--dtype", type=dtype_arg, required=True, help="fp16 or fp32")
    g.add_argument("--out", type=path_arg, required=True, metavar="DIR", help="folder to create")
    g.add_argument("--seed", type=seed_arg, default=2026, help="random seed (default 2026)")
    g.add_argument("--families", type=names_arg, action="append", metavar="NAMES",
                   help="comma-separated family names (repeatable; default: all; `sl1conf vectors list` "
                        "on a set shows them)")
    g.add_argument("--large", action="store_true", help="include the large (1,000,000+ element) family")
    g.add_argument("--force", action="store_true",
                   help="replace the vector set in an existing folder (its manifest and the files it lists; "
                        "other files there are kept)")
    set_help = "a vector set folder (one with a manifest.json written by `sl1conf vectors generate`)"
    for name, text in (("verify", "check checksums and schema, recompute every expected result"),
                       ("list", "summarize the families of a set")):
        v = vsub.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")
        v.add_argument("dir", metavar="DIR", help=set_help)
    v = vsub.add_parser("show", help="one family (id or name) or one case (id like 3.12)",
                        description="Show one family (its cases) or one case (its first elements and "
                                    "expected results).")
    v.add_argument("dir", metavar="DIR", help=set_help)
    v.add_argument("id", metavar="ID", help="a family id (3) or name (signed-zero), or a case id (3.12)")
    v = vsub.add_parser("export", help="a C header with a self-test program, or TestFloat-style hex text",
                        description="Export a vector set for a board or simulator (docs/vector-format.md).")
    v.add_argument("dir", metavar="DIR", help=set_help)
    v.add_argument("--format", choices=("c-header", "hex"), required=True,
                   help="c-header: a folder with a C header of the vectors and a self-test program; "
                        "hex: one TestFloat-style text file, one element per line")
    v.add_argument("--out", type=path_arg, metavar="PATH",
                   help="output folder (c-header; default sl1_vectors_c) or file (hex; default sl1_vectors.txt)")
    v.add_argument("--force", action="store_true", help="replace output this command wrote before")
    add_platform(v, "c-header: the profile whose accepted results the self-test checks (what certify accepts "
                    "under it, per element)")
    p.set_defaults(run=_run)
