"""What ``--platform`` means on every command: a built-in profile's name or a profile .toml file,
and ieee's profile when none is given (``--profile FILE``, where a command has it, names a file
the same way).

Why here, below the rules: certify and the pytest plugin, fuzz, sweep (its configuration's
default), the vector export and the self-test all name a platform, and each read the option its
own way (a name only; a name or a file; ieee by default). The rule is text only: the profile is
read by ``rules.profiles.load_profile`` (one loader for names and files), and
``certify.session.platform_profile`` puts the two together for every entry point, its error the
one line this module words.
"""

from __future__ import annotations

from typing import Callable

__all__ = ["DEFAULT_PLATFORM", "chosen_platform"]

DEFAULT_PLATFORM = "ieee"
"""The profile of a command given neither ``--platform`` nor ``--profile``: the correctly rounded
arithmetic of IEEE 754, no flushing, every dtype and variant."""


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
