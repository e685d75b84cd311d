"""The ``sl1conf`` command line: one subcommand per job, one line per error.

Each subcommand lives in its own module of this package and adds itself to the parser with
``register(sub)``. Bad input never produces a traceback: argparse's errors and every
:class:`~sl1conf.conformance.common.errors.SuiteError` (a profile, waiver, vector set, report,
sweep checkpoint or selection that cannot be used) and the adapters' ``AdapterError`` print
one line naming the problem and exit with status 2.
"""

from __future__ import annotations

import sys

from sl1conf.conformance.cli.args import EXIT_OK, EXIT_USAGE, Parser, join_negative_values
from sl1conf.conformance.common.errors import SuiteError

__all__ = ["main", "build_parser"]


def build_parser() -> Parser:
    from sl1conf import __version__
    from sl1conf.conformance.cli import certify, demo, explain, fuzz, reports, sweep, vectors

    parser = Parser(prog="sl1conf", description=__doc__.splitlines()[0].replace("``", ""))
    parser.add_argument("--version", action="version", version=f"sl1conf {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for module in (explain, demo, certify, vectors, reports, fuzz, sweep):
        module.register(sub)
    return parser


def main(argv=None) -> int:
    from sl1conf.adapters import AdapterError

    try:
        argv = join_negative_values(list(sys.argv[1:] if argv is None else argv))
        args = build_parser().parse_args(argv)
        return args.run(args)
    except (SuiteError, AdapterError) as exc:
        print(f"sl1conf: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("sl1conf: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `sl1conf vectors show ... | head`: the reader left; not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
