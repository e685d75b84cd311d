"""What ``--platform`` and ``--profile`` mean on every command: ``--platform`` a built-in
profile's name or a profile .toml file, ``--profile FILE`` the same as ``--platform FILE``, at
most one of the two, and ieee's profile when neither is given; how each driver spells them
(``--platform``, ``--sl1-platform``) and what their help says.

Why here, in the shared layer below the rules: certify and the pytest plugin, fuzz, sweep, the
vector export and the self-test all name a platform, and each once read the options its own
way (a name only; a name or a file; ``--profile`` on two commands). The rule is text only, so
every layer can read it: the profile is read by ``rules.profiles.load_profile`` (one loader for
names and files), and ``certify.session.open_session`` puts the two together for every entry
point, its errors the one line this module words.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

__all__ = ["DEFAULT_PLATFORM", "PLATFORM_HELP", "PROFILE_HELP", "chosen_platform", "cli_option", "plugin_option",
           "platform_options", "profile_file_problem"]

DEFAULT_PLATFORM = "ieee"
"""The profile of a command given neither ``--platform`` nor ``--profile``: the correctly rounded
arithmetic of IEEE 754, no flushing, every dtype and variant."""

PLATFORM_HELP = "a built-in profile (ieee, ft78ne, mt7004) or a profile .toml file"
"""What ``--platform`` takes, on every command and in the plugin."""


def cli_option(name: str) -> str:
    """An option as the command line spells it: ``--platform``."""
    return f"--{name}"


def plugin_option(name: str) -> str:
    """An option as the pytest plugin spells it: ``--sl1-platform``."""
    return f"--sl1-{name}"


PROFILE_HELP = "a profile .toml file: the same as {platform} FILE (give one of the two)"
"""What ``--profile`` takes (``{platform}``: the driver's spelling of ``--platform``)."""


def platform_options(role: str, note: str = "", option: Callable[[str], str] = cli_option) -> tuple:
    """((flag, keywords), ...) of ``--platform NAME|FILE`` and ``--profile FILE`` as ``option``
    spells them, with the one help text (``role``: what the profile does there; ``note``: what
    the command adds): the declaration the command line (``cli.args.add_platform``) and the
    plugin share. Neither has a default: the session loads ieee's when neither is given."""
    return ((option("platform"), {"metavar": "NAME|FILE",
                                  "help": f"{role}: {PLATFORM_HELP} (default {DEFAULT_PLATFORM}{note})"}),
            (option("profile"), {"metavar": "FILE", "help": PROFILE_HELP.format(platform=option("platform"))}))


def chosen_platform(platform: "str | None", profile_file: "str | None" = None, *,
                    option: Callable[[str], str], error: type) -> "tuple[str, str]":
    """(the profile to load: a built-in name or a .toml path; the words an error about it starts
    with, naming the option as the driver spells it, ``option("platform")``). Neither given: the
    :data:`DEFAULT_PLATFORM`; both: ``error`` (one line)."""
    if platform and profile_file:
        raise error(f"give one of {option('platform')} NAME|FILE and {option('profile')} FILE, not both")
    if profile_file:
        return profile_file, f"{option('profile')} {profile_file}"
    chosen = platform or DEFAULT_PLATFORM
    return chosen, f"{option('platform')} {chosen}"


def profile_file_problem(profile_file: str, *, option: Callable[[str], str], builtin=()) -> "str | None":
    """The one line for ``--profile FILE`` naming no file (None where it names one): ``--profile``
    takes a file everywhere, so a built-in name (one of ``builtin``) is not read as one but named
    back with the option that takes it, ``--platform NAME``.

    Why: ``--profile ft78ne`` once loaded the built-in ft78ne, so two options meant one thing on
    some commands and a mistyped file name could load a built-in profile unnoticed."""
    if Path(profile_file).is_file():
        return None
    where = f"{option('profile')} {profile_file}: {profile_file}: no such profile file"
    if profile_file in builtin:
        return (f"{where} ({option('profile')} takes a profile .toml file; {profile_file} is a built-in profile: "
                f"give {option('platform')} {profile_file})")
    return where
