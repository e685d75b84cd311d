"""What every subcommand shares: the parser that fails in one line, argument types, exit codes.

Why a module of its own: each subcommand module (``cli/certify.py``, ``cli/fuzz.py``, ...)
registers itself with ``register(sub)`` and imports what it needs from here, so no module
needs the package's ``main`` and every one reports bad input the same way: it raises a
:class:`~sl1conf.conformance.common.errors.SuiteError` (or lets one through), and ``main``
prints it as one line and exits 2.
"""

from __future__ import annotations

import argparse

from sl1conf.conformance.common.errors import SuiteError
from sl1conf.conformance.common.platforms import PLATFORM_HELP, platform_options
from sl1conf.reference import formats

__all__ = ["EXIT_OK", "EXIT_FAIL", "EXIT_USAGE", "EXIT_INTERRUPTED", "UsageError", "Parser", "dtype_arg", "seed_arg", "join_negative_values",
           "path_arg", "names_arg", "workers_arg", "count_arg", "max_workers", "WORKERS_PER_CPU", "add_action",
           "add_platform", "PLATFORM_HELP"]

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130  # Ctrl-C: what was done is kept (a shell's 128 + SIGINT)


class UsageError(SuiteError):
    """Bad command-line usage: one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not argparse's usage block
        raise UsageError(message)


VALUE_OPTIONS = ("--dy", "--x1", "--x2", "--beta")


def join_negative_values(argv: list) -> list:
    """``--x1 -inf`` as ``--x1=-inf``: argparse would read ``-inf`` (or -1e-5, -0x1p-3) as an option."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] in VALUE_OPTIONS and i + 1 < len(argv) and argv[i + 1].startswith("-"):
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


def seed_arg(text: str) -> int:
    """argparse type: a whole number from 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative: seeds are whole numbers from 0")
    return value


def dtype_arg(text: str) -> formats.Format:
    """argparse type: fp16 or fp32."""
    try:
        return formats.format_by_name(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def path_arg(text: str) -> str:
    """argparse type: a path, to read or to write, that is not empty (``--out ""`` would mean the
    current folder, ``--vectors ""`` the same)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path: name a folder or file")
    return text


def names_arg(text: str) -> list:
    """argparse type: comma-separated names, at least one (``--families ""`` or ``","`` would
    silently mean "all")."""
    names = [n.strip() for n in text.split(",")]
    if not any(names) or not all(names):
        raise argparse.ArgumentTypeError(f"{text!r}: expected comma-separated names, none empty")
    return names


WORKERS_PER_CPU = 4
"""--workers above this many per available CPU is refused: beyond it processes only compete."""


def max_workers() -> int:
    """The most worker processes a command starts on this machine."""
    import os

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return WORKERS_PER_CPU * cpus


def workers_arg(text: str) -> int:
    """argparse type: a number of local worker processes, 1 to :func:`max_workers`."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    limit = max_workers()
    if not 1 <= value <= limit:
        raise argparse.ArgumentTypeError(f"{value}: expected 1 to {limit} ({WORKERS_PER_CPU} per CPU available here)")
    return value


def count_arg(limit: int, what: str = "elements"):
    """argparse type factory: a whole number from 1 to ``limit`` (a count the run holds in memory
    or would take for ever beyond)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            try:
                value = float(text)
            except ValueError:
                raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
            if value != int(value):
                raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
            value = int(value)
        if not 1 <= value <= limit:
            raise argparse.ArgumentTypeError(f"{value}: expected 1 to {limit:,} {what}")
        return value
    parse.__name__ = what  # argparse names the type in "invalid ... value"
    return parse


def add_action(actions, name: str, help_text: str, usage: str, description: str, folders: str, nargs: str = "*"):
    """The parser of an action on output folders (``sl1conf fuzz merge``, ``fuzz replay``,
    ``sweep merge``), its folders the positional ``DIR`` arguments (``folders`` says what they are)."""
    parser = actions.add_parser(name, help=help_text, usage=usage, description=description)
    parser.add_argument("dirs", nargs=nargs, metavar="DIR", help=folders)
    return parser


def add_platform(parser, role: str = "the profile that judges, as certify does", note: str = "") -> None:
    """``--platform NAME|FILE`` and ``--profile FILE`` on a subcommand's parser, with the one help
    text (``common.platforms.platform_options``; ``role``: what the profile does there; ``note``:
    anything the subcommand adds). Neither has a default: ``certify.session.open_session`` loads
    ieee's when neither is given (the one default rule) and says which it loaded."""
    for flag, keywords in platform_options(role, note):
        parser.add_argument(flag, **keywords, **({"type": path_arg} if flag == "--profile" else {}))
