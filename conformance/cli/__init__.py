"""The ``sl1conf`` command line: one subcommand per job, one line per error.

Each subcommand lives in its own module of this package and adds itself to the parser with
``register(sub)``. Bad input never produces a traceback: argparse's errors and every
:class:`~sl1conf.conformance.common.errors.SuiteError` (a profile, waiver, vector set, report,
sweep checkpoint or selection that cannot be used) and the adapters' ``AdapterError`` print
one line naming the problem and exit with status 2.
"""

from __future__ import annotations

import sys

from sl1conf.conformance.cli.args import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, Parser, join_negative_values
from sl1conf.conformance.common.errors import SuiteError

__all__ = ["main", "build_parser"]

DESCRIPTION = ("Conformance suite for SmoothL1LossGrad as the FT DSP library documents it (FT78NE, MT7004): "
               "certify an implementation against a platform profile, generate and verify golden vectors, "
               "fuzz and sweep for failures, and render, gate and compare reports.")
EPILOG = ("exit status: 0 success (a pass); 1 a failure or an incomplete certification; 2 bad usage or bad "
          "input, said in one line on stderr (nothing is run and no file is changed); 130 interrupted")


def build_parser() -> Parser:
    from sl1conf import __version__
    from sl1conf.conformance.cli import certify, demo, explain, fuzz, reports, selftest, sweep, vectors

    parser = Parser(prog="sl1conf", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"sl1conf {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser, metavar="COMMAND",
                                title="commands (sl1conf COMMAND --help for each)")
    for module in (explain, demo, certify, vectors, reports, fuzz, sweep, selftest):
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
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `sl1conf vectors show ... | head`: the reader left; not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
