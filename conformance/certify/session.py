"""The inputs of a certification, checked once before anything runs.

Why one module: the command line's ``certify`` and the pytest plugin read the same inputs (a
platform or a profile file, dtypes, vector sets, waivers, the implementation and its variants)
and must refuse the same bad ones with the same one line, each naming the option as its
driver spells it (``--vectors``, ``--sl1-vectors``): :class:`InputError`, before any call is
made or any file written. The platform is every command's: :func:`platform_profile` is how
certify, the plugin, fuzz, sweep, the vector export and the self-test load the profile
``--platform`` names (``common.platforms``: a name or a .toml file, ieee's by default), with the
same one-line error; the entry points sit above this module, and the search engine, which
cannot import it, is handed a platform already loaded here and loads it again in its workers
by the same name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from sl1conf.conformance.common.errors import SuiteError
from sl1conf.conformance.common.platforms import chosen_platform

__all__ = ["InputError", "Inputs", "checked_inputs", "platform_profile", "loaded_implementation", "selected_runs",
           "cli_option", "plugin_option"]


class InputError(SuiteError):
    """A certification's input that cannot be used: one line naming the option and the problem."""


def cli_option(name: str) -> str:
    return f"--{name}"


def plugin_option(name: str) -> str:
    return f"--sl1-{name}"


@dataclass
class Inputs:
    """What a certification runs on, checked: the ``profile``, the ``dtypes`` asked for (None:
    the profile's), the vector sets (dtype -> VectorSet; None: the suite's own vectors) and the
    ``waivers`` (None: none given)."""

    profile: object
    dtypes: Optional[list]
    vectors: Optional[dict]
    waivers: Optional[list]


def platform_profile(platform: "str | None" = None, profile_file: "str | None" = None, *, dtypes=(),
                     option: Callable[[str], str] = cli_option):
    """The profile ``--platform`` (a built-in name or a .toml file) or ``--profile FILE`` names, at
    most one of them (neither: ``common.platforms.DEFAULT_PLATFORM``), checked to document each
    of ``dtypes``: InputError, one line naming the option as ``option`` spells it, for an unknown
    name, a file that is missing or malformed, or a dtype the profile lacks."""
    from sl1conf.conformance.rules.profiles import ProfileError, load_profile

    chosen, where = chosen_platform(platform, profile_file, option=option, error=InputError)
    try:
        profile = load_profile(chosen)
        for d in dtypes:
            profile.require_dtype(d)
    except ProfileError as exc:
        raise InputError(f"{where}: {exc}") from None
    return profile


def checked_inputs(*, platform: "str | None", profile_file: "str | None", dtypes=None, vector_dirs=(),
                   waivers_file=None, option: Callable[[str], str] = cli_option) -> Inputs:
    """The inputs, each checked: the profile (:func:`platform_profile`: at most one of a platform
    and a profile file, ieee's by default), each dtype one the profile documents, the vector sets
    (schema, checksums; one per dtype, each of a dtype of the profile, one for each dtype asked
    for) and the waivers file."""
    asked = list(dict.fromkeys(dtypes)) if dtypes else None
    profile = platform_profile(platform, profile_file, dtypes=asked or (), option=option)
    vectors = _vector_sets(vector_dirs, asked, profile, option) if vector_dirs else None
    waivers = None
    if waivers_file:
        from sl1conf.conformance.certify.waivers import WaiverError, load_waivers

        try:
            waivers = load_waivers(waivers_file)
        except WaiverError as exc:
            raise InputError(f"{option('waivers')}: {exc}") from None
    return Inputs(profile, asked, vectors, waivers)


def _vector_sets(paths, dtypes, profile, option) -> dict:
    """dtype -> VectorSet of the vector folders (one per dtype); each dtype asked for must have one."""
    from sl1conf.conformance.vectors.store import VectorSetError, load_per_dtype

    try:
        sets = load_per_dtype(paths)
    except VectorSetError as exc:
        raise InputError(f"{option('vectors')}: {exc}") from None
    for d, vs in sets.items():
        if d not in profile.dtypes:
            raise InputError(f"{option('vectors')} {vs.path}: holds {d} vectors, and profile {profile.name} has no "
                             f"{d} (it documents {', '.join(profile.dtypes)})")
    for d in dtypes or []:
        if d not in sets:
            raise InputError(f"{option('dtype')} {d}: no {option('vectors')} set holds {d} vectors (given: "
                             + ", ".join(f"{k} in {vs.path}" for k, vs in sets.items()) + ")")
    return sets


def loaded_implementation(spec: str, option: Callable[[str], str] = cli_option):
    """The adapter ``spec`` names; a spec that names none, or a plugin that fails to load, is one
    line naming the option (a third-party adapter's own exception too)."""
    from sl1conf.adapters import AdapterError, load

    try:
        return load(spec)
    except AdapterError as exc:
        text = str(exc)
        raise InputError(text if text.startswith(option("impl")) else f"{option('impl')} {spec}: {text}") from None
    except Exception as exc:  # a third-party adapter's own failure: still one line
        raise InputError(f"{option('impl')} {spec}: {type(exc).__name__}: {exc}") from None


def selected_runs(inputs: Inputs, adapter, variants=None) -> tuple:
    """(dtypes, variants) to run: those asked for (default: the profile's, or the vector sets'
    dtypes where sets are given), each one the profile documents and the implementation offers
    (``Profile.select``: one rule for every driver); InputError when nothing is left."""
    from sl1conf.conformance.certify.engine import dtypes_to_run
    from sl1conf.conformance.rules.profiles import ProfileError

    try:
        return inputs.profile.select(adapter, dtypes_to_run(inputs.profile, inputs.dtypes, inputs.vectors), variants)
    except ProfileError as exc:
        raise InputError(str(exc)) from None
