"""The one error type the command line turns into "one line naming the problem, exit 2".

Why one type: every module that reads user input (profiles, waivers, vector sets, reports,
sweep checkpoints, selections) raises a subclass of :class:`SuiteError` with a message that
names the file or option and the problem; ``sl1conf`` catches this one type (and the
adapters' ``AdapterError``), prints the message and exits 2. No module needs the CLI to
report an error, and no error type can be forgotten.
"""

__all__ = ["SuiteError"]


class SuiteError(Exception):
    """Bad input from the user (a file, a name, an option): one line, exit status 2."""
