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
from sl1conf.reference import formats as F

__all__ = ["EXIT_OK", "EXIT_FAIL", "EXIT_USAGE", "UsageError", "Parser", "dtype_arg", "seed_arg", "join_negative_values"]

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


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


def dtype_arg(text: str) -> F.Format:
    """argparse type: fp16 or fp32."""
    try:
        return F.format_by_name(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
