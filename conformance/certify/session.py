"""The session every command opens: its options' inputs checked once, before anything runs.

Every command that judges (certify, fuzz, sweep, the c-header export, the self-test's
members) and the pytest plugin call :func:`open_session` and get a :class:`Session`: the
profile ``--platform NAME|FILE`` or ``--profile FILE`` names (at most one; neither: ieee's,
``common.platforms``), the dtypes, vector sets and waivers where the command has them, the
implementation where it has one, and how the driver spells its options. A bad input is
:class:`InputError`, one line naming the option as the driver spells it (``--platform``,
``--sl1-platform``, ``zoo.toml member M: platform``), before any call is made or file written.

Why here, in certify/: opening a session reads a profile (``rules``), vector sets
(``vectors``), waivers (``certify.waivers``) and an adapter (``adapters``), so it cannot sit in
``common/``, which is below the rules; certify is the lowest layer that sees every piece, and
every opener is an entry point above it (cli, pytest_plugin, selftest). The search engine, a
sibling that may not import it, is handed ``Session.profile`` and stores ``Session.platform``
(the built-in name or the file's path, ``--profile``'s too), by which its workers load the
profile again (``rules.profiles.load_profile``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from sl1conf.conformance.common.errors import SuiteError
from sl1conf.conformance.common.platforms import chosen_platform, cli_option, plugin_option, profile_file_problem

__all__ = ["InputError", "Session", "open_session", "loaded_implementation", "selected_runs",
           "cli_option", "plugin_option"]


class InputError(SuiteError):
    """A session's input that cannot be used: one line naming the option and the problem."""


@dataclass
class Session:
    """What a command runs on, checked. ``profile``: the rules.profiles.Profile that judges;
    ``platform``: what names it, a built-in name or a .toml path, ieee's name when neither
    option was given (what a record keeps and a worker loads again); ``given``: whether
    ``--platform`` or ``--profile`` named it; ``option``: how the driver spells an option;
    ``dtypes`` asked for (None: the profile's), vector sets (dtype -> VectorSet; None: the
    suite's own), ``waivers`` (None: none given); ``implementation``: the adapter, once opened."""

    profile: object
    platform: str
    given: bool
    option: Callable[[str], str] = cli_option
    dtypes: Optional[list] = None
    vectors: Optional[dict] = None
    waivers: Optional[list] = None
    implementation: object = None

    def open_implementation(self, spec: str):
        """The adapter ``spec`` names, kept as ``implementation`` (:func:`loaded_implementation`:
        its error names the option as this session's driver spells it)."""
        self.implementation = loaded_implementation(spec, self.option)
        return self.implementation


def open_session(platform: "str | None" = None, profile_file: "str | None" = None, *, dtypes=None,
                 vector_dirs=(), waivers_file=None, impl: "str | None" = None,
                 option: Callable[[str], str] = cli_option) -> Session:
    """The session of a command: the profile ``platform`` (a built-in name or a .toml file) or
    ``profile_file`` names (``common.platforms.chosen_platform``: at most one, ieee's when
    neither; ``profile_file`` a file, never a built-in name: ``profile_file_problem``), checked
    to document each dtype asked for; the vector sets (schema, checksums; one per dtype, each of
    a dtype of the profile, one for each dtype asked for); the waivers file; then the
    implementation ``impl``, when given (a command that must do more first opens it later,
    :meth:`Session.open_implementation`). Each bad one: InputError, one line."""
    from sl1conf.conformance.rules.profiles import ProfileError, builtin_profiles, load_profile

    asked = list(dict.fromkeys(dtypes)) if dtypes else None
    chosen, where = chosen_platform(platform, profile_file, option=option, error=InputError)
    problem = profile_file and profile_file_problem(profile_file, option=option, builtin=builtin_profiles())
    if problem:
        raise InputError(problem)
    try:
        profile = load_profile(chosen)
        for d in asked or ():
            profile.require_dtype(d)
    except ProfileError as exc:
        raise InputError(f"{where}: {exc}") from None
    session = Session(profile, chosen, bool(platform or profile_file), option, asked)
    session.vectors = _vector_sets(vector_dirs, asked, profile, option) if vector_dirs else None
    if waivers_file:
        from sl1conf.conformance.certify.waivers import WaiverError, load_waivers

        try:
            session.waivers = load_waivers(waivers_file)
        except WaiverError as exc:
            raise InputError(f"{option('waivers')}: {exc}") from None
    if impl is not None:
        session.open_implementation(impl)
    return session


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


def selected_runs(session: Session, adapter, variants=None) -> tuple:
    """(dtypes, variants) to run: those asked for (default: the profile's, or the vector sets'
    dtypes where sets are given), each one the profile documents and the implementation offers
    (``Profile.select``: one rule for every driver); InputError when nothing is left."""
    from sl1conf.conformance.certify.engine import dtypes_to_run
    from sl1conf.conformance.rules.profiles import ProfileError

    try:
        return session.profile.select(adapter, dtypes_to_run(session.profile, session.dtypes, session.vectors),
                                      variants)
    except ProfileError as exc:
        raise InputError(str(exc)) from None
