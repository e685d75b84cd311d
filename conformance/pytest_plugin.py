"""The pytest plugin: ``pytest --sl1-impl SPEC --sl1-platform NAME`` as a CI gate.

Installed with the package (entry point ``sl1conf`` in the ``pytest11`` group), so every
pytest run in the environment loads this module. Without ``--sl1-impl`` it only adds its
options: nothing is collected, nothing of the suite is imported, nothing is slowed down.

With ``--sl1-impl`` it certifies the implementation the way ``sl1conf certify`` does and
reports the result as test items, one per (dtype, variant, requirement) and, for R01
(accuracy, judged per family), one per (dtype, variant, family)::

    sl1conf::fp16-s::R02
    sl1conf::fp16-s::R01::boundary-exact
    sl1conf::fp16-s::completeness     (fails when the run is incomplete: nothing checked, unsupported calls)
    sl1conf::missing-runs             (only when the profile lists runs the implementation lacks, not narrowed)

so CI systems get JUnit XML from ``--junitxml`` and parallel runs from pytest-xdist.

Design (docs/ci-examples.md says it for users):

* Collection needs no test file. A ``pytest_make_collect_report`` wrapper appends one
  collector, ``sl1conf``, to the session's own collection result, so the items are found
  in an empty folder, next to the project's own tests, and by every pytest feature that
  walks the collection tree (``-k``, ``--deselect``, ``--collect-only``, ``--lf``, xdist's
  identical-collection check). Paths on the command line are collected as usual.
* Which (dtype, variant) runs exist is settled at configure time without running the
  implementation: the profile's dtypes and variants, those asked for, and those the
  adapter offers (loading the adapter is cheap; running cases is not). The families are
  those the engine will judge: the manifest's with ``--sl1-vectors``, else
  ``engine.quick_families()`` (quick) or ``engine.default_families()`` (every non-large family,
  and lengths-long) that apply to the dtype, as ``families.generate`` picks them.
* A run is certified once per process, lazily, by its first item, and cached (a failure
  to certify is cached too). Every item of a run carries ``xdist_group("sl1conf-D-V")``,
  so with ``--dist loadgroup`` a run is computed once across workers.
* An item passes when its requirement (or family) is ``pass``, ``recorded``,
  ``not-applicable`` or ``waived``; status, counts, observations and waiver reasons are
  attached as user properties (JUnit ``<properties>``). A failure reads like a report
  entry: the statement, the counts, the worst input in hex, up to five examples with
  their ``sl1conf explain`` commands, and the ``sl1conf certify`` command for the run.
* Bad option values are a ``pytest.UsageError`` (one line, exit status 4).
* ``--sl1-fuzz`` adds the property test, one item per run (``sl1conf::fuzz::fp32-p``):
  hypothesis draws whole calls (``strategies.calls``: bit patterns weighted toward
  +-beta, overflow, underflow and special values, 1 to 64 elements) and every one must
  pass ``fuzz.check_cases`` (certify's judgement of every element, memory, core_mask and
  determinism). A failure shrinks to the shortest, simplest call and is printed as a
  reproducer. ``--sl1-fuzz-examples N`` (default 200), ``--sl1-hypothesis-db DIR`` (the
  example database, shared safely by pytest-xdist workers, and used even with a seed) and
  hypothesis' own ``--hypothesis-seed`` make runs reproducible. ``-k fuzz`` runs the property alone.
* ``--sl1-report DIR`` writes the report folder ``sl1conf certify --out DIR`` writes (report.json,
  report.md, report.html, junit.xml, through ``reports.write.write_report``) after the session,
  from the runs certified in it, so ``sl1conf gate DIR --baseline OLD`` needs no second
  certification. It is written once, by the process that is not an xdist worker: without xdist
  the one process; under ``-n`` the controller, after every worker has finished. Each worker
  hands the per-run reports it certified (and the runs whose certification failed) to the
  controller through xdist's ``workeroutput`` (JSON text), which ``pytest_testnodedown``
  collects. The folder is checked (created, writable) at configure time, before anything runs.
  The report holds every run certified in the session, whole (requirements deselected with
  ``-k`` included); a run none of whose items ran is absent; a run whose certification failed
  is a failed run with no requirement, saying why. The property items are not in it.
"""

from __future__ import annotations

from sl1conf.conformance.common.commands import certify_command, explain_command

import pytest

__all__ = ["pytest_addoption", "pytest_configure", "pytest_unconfigure"]

PLUGIN_NAME = "sl1conf-conformance"
ROOT = "sl1conf"  # the collector's name, first part of every node id
_OPTIONS = ("sl1_impl", "sl1_platform", "sl1_profile", "sl1_dtype", "sl1_variant", "sl1_vectors",
            "sl1_quick", "sl1_waivers", "sl1_fuzz", "sl1_fuzz_examples", "sl1_hypothesis_db", "sl1_report")
FUZZ_EXAMPLES = 200
WORKEROUTPUT_KEY = "sl1conf_report_parts"  # a worker's certified runs, for the controller's --sl1-report


def pytest_addoption(parser):
    g = parser.getgroup("sl1conf", "SmoothL1LossGrad conformance (sl1conf certify as test items)")
    g.addoption("--sl1-impl", metavar="SPEC",
                help="certify this implementation: builtin:kernel, ctypes:lib.so, sim:'cmd {case} {result}', "
                     "torch:cpu, ... (without it the plugin does nothing)")
    g.addoption("--sl1-platform", metavar="NAME", help="platform profile: ieee, ft78ne or mt7004")
    g.addoption("--sl1-profile", metavar="FILE", help="a profile TOML file instead of --sl1-platform")
    g.addoption("--sl1-dtype", action="append", choices=("fp16", "fp32"),
                help="fp16 or fp32 (repeatable; default: all the profile and the implementation share)")
    g.addoption("--sl1-variant", action="append", choices=("s", "p"),
                help="s or p (repeatable; default: all the profile and the implementation share)")
    g.addoption("--sl1-vectors", action="append", metavar="DIR",
                help="a vector set folder (repeatable, one per dtype; default: the canonical families, "
                     "generated)")
    g.addoption("--sl1-quick", action="store_true", help="edge families only, no random ones")
    g.addoption("--sl1-waivers", metavar="FILE", help="known failures to waive, with reasons (TOML)")
    g.addoption("--sl1-fuzz", action="store_true",
                help="add the hypothesis property test (sl1conf::fuzz::<dtype>-<variant>); -k fuzz runs it alone")
    g.addoption("--sl1-fuzz-examples", type=int, metavar="N",
                help=f"examples per property item (default {FUZZ_EXAMPLES})")
    g.addoption("--sl1-hypothesis-db", metavar="DIR",
                help="hypothesis example database folder for the property (default: hypothesis' setting)")
    g.addoption("--sl1-report", metavar="DIR",
                help="also write the report folder sl1conf certify --out DIR writes (report.json, report.md, "
                     "report.html, junit.xml) for the runs certified, once, after the session (for sl1conf gate)")


def pytest_configure(config):
    opt = config.option
    if not getattr(opt, "sl1_impl", None):
        given = [f"--{name.replace('_', '-')}" for name in _OPTIONS[1:] if getattr(opt, name, None)]
        if given:
            raise pytest.UsageError(f"{', '.join(given)} given without --sl1-impl SPEC")
        return
    if not config.pluginmanager.hasplugin("xdist"):  # xdist registers its marker itself
        config.addinivalue_line("markers", "xdist_group(name): run these tests in one pytest-xdist worker")
    plugin = _Conformance(config)
    config.pluginmanager.register(plugin, PLUGIN_NAME)


def pytest_unconfigure(config):
    plugin = config.pluginmanager.get_plugin(PLUGIN_NAME)
    if plugin is not None:
        plugin.close()


# --------------------------------------------------------------------------
# The session's plugin: options checked, runs known, certifications cached
# --------------------------------------------------------------------------


class _CertifyError(Exception):
    """Certifying a run failed before any requirement could be judged."""


class _RequirementFailed(Exception):
    """A requirement (or an R01 family) failed; the message is the whole report."""


class _Conformance:
    def __init__(self, config):
        from sl1conf.conformance.vectors.families import family_by_name
        from sl1conf.conformance.certify.engine import default_families, quick_families
        from sl1conf.conformance.certify.session import (
            InputError, checked_inputs, loaded_implementation, plugin_option, selected_runs,
        )
        from sl1conf.conformance.requirements import CATALOG

        opt = config.option
        self.config = config
        self.spec, self.quick = opt.sl1_impl, bool(opt.sl1_quick)
        self.profile_arg = opt.sl1_platform or opt.sl1_profile
        try:  # the inputs, checked as the command line checks them (certify.session)
            inputs = checked_inputs(platform=opt.sl1_platform, profile_file=opt.sl1_profile, dtypes=opt.sl1_dtype,
                                    vector_dirs=opt.sl1_vectors or (), waivers_file=opt.sl1_waivers,
                                    option=plugin_option)
        except InputError as exc:
            raise pytest.UsageError(str(exc)) from None
        self.profile, self.waivers = inputs.profile, inputs.waivers
        # dtype -> (folder, family names): what an xdist worker loads again and collects
        self.vectors = None if inputs.vectors is None else {
            d: (str(vs.path), [f["name"] for f in vs.manifest["families"]]) for d, vs in inputs.vectors.items()}
        self.worker = hasattr(config, "workerinput")
        self.report_dir = None  # where --sl1-report writes: never in an xdist worker
        if opt.sl1_report and not self.worker:
            from pathlib import Path

            from sl1conf.conformance.common.files import writable_folder

            self.report_dir = writable_folder(Path(config.invocation_params.dir, opt.sl1_report), pytest.UsageError)
        self.parts = {}  # (dtype, variant) -> the one-run report certify gave (for --sl1-report)
        self.errors = {}  # (dtype, variant) -> why its certification failed (for --sl1-report)
        self.report_note = None  # the terminal summary's line about --sl1-report
        from datetime import datetime, timezone

        self.started = datetime.now(timezone.utc)

        self.adapter = None
        try:
            self.adapter = loaded_implementation(self.spec, plugin_option)
        except InputError as exc:
            raise pytest.UsageError(str(exc)) from None
        try:
            self.implementation = self.adapter.describe()  # the report's, should no run be certified
            try:
                dtypes, variants = selected_runs(inputs, self.adapter, opt.sl1_variant)
            except InputError as exc:
                raise pytest.UsageError(str(exc)) from None
        except BaseException:
            self.close()
            raise
        self.runs = [(d, v) for d in dtypes for v in variants]
        # runs the profile lists and the implementation lacks: the suite is incomplete unless narrowed
        self.missing = [] if (opt.sl1_dtype or opt.sl1_variant or self.vectors is not None) else [
            f"{d} {v}" for d in self.profile.dtypes for v in self.profile.variants if (d, v) not in self.runs]
        self.catalog = CATALOG

        def family_names(dtype):
            if self.vectors is not None:
                return list(self.vectors[dtype][1])
            if self.quick:
                return [n for n in quick_families() if dtype in family_by_name(n).dtypes]
            return [n for n in default_families() if dtype in family_by_name(n).dtypes]

        self.families = {d: family_names(d) for d in dtypes}
        self.fuzz = bool(opt.sl1_fuzz)
        self.fuzz_examples = FUZZ_EXAMPLES if opt.sl1_fuzz_examples is None else opt.sl1_fuzz_examples
        if self.fuzz_examples < 1:
            self.close()
            raise pytest.UsageError(f"--sl1-fuzz-examples must be at least 1, not {self.fuzz_examples}")
        if (opt.sl1_fuzz_examples is not None or opt.sl1_hypothesis_db) and not self.fuzz:
            self.close()
            raise pytest.UsageError("--sl1-fuzz-examples and --sl1-hypothesis-db go with --sl1-fuzz")
        self.hypothesis_db = opt.sl1_hypothesis_db
        self.results = {}  # (dtype, variant) -> run dict or _CertifyError
        self.reports = {}  # (dtype, variant) -> the one-run report certify gave
        self.failures = {}  # (dtype, variant) -> its reports.view Failures, made at the first failing item

        controller = getattr(opt, "dist", "no") != "no" and not self.worker
        if controller:
            # An xdist controller only hands out items: it never runs the implementation.
            if opt.dist != "loadgroup":
                config.issue_config_time_warning(pytest.PytestConfigWarning(
                    f"sl1conf: --dist {opt.dist} spreads one certification over several workers, each "
                    "computing it again; pass --dist loadgroup"), stacklevel=2)
            self.close()

    def close(self):
        if self.adapter is not None:
            adapter, self.adapter = self.adapter, None
            adapter.close()

    # --- reporting and collection --------------------------------------------------

    def pytest_report_header(self, config):
        source = (", ".join(f"{d} from {p}" for d, (p, _) in self.vectors.items()) if self.vectors
                  else "canonical families, generated" + (" (quick)" if self.quick else ""))
        return [f"sl1conf: {self.spec} on {self.profile.name}; runs: "
                f"{', '.join(f'{d}-{v}' for d, v in self.runs)}; vectors: {source}"]

    @pytest.hookimpl(hookwrapper=True)
    def pytest_make_collect_report(self, collector):
        outcome = yield
        if isinstance(collector, pytest.Session):
            rep = outcome.get_result()
            if rep.passed:
                rep.result.append(_Suite.from_parent(collector, name=ROOT, nodeid=ROOT, plugin=self))

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        """In an xdist worker under --dist loadgroup: make sure the group suffix xdist's own hook
        appends to the node id is there. pytest 9.2 keeps node ids in a structured form that
        xdist <= 3.8 does not update, so its suffix is silently lost and every item is scheduled
        on its own (pytest-xdist issue 1386); this puts it where pytest reads it."""
        if not hasattr(config, "workerinput") or not config.getvalue("loadgroup"):
            return
        for item in items:
            if isinstance(item, (RequirementItem, OverTheRunItem, CompletenessItem)) and "@" not in item.nodeid:
                wanted = f"{item.nodeid}@{item.group}"
                if hasattr(item, "_id"):  # structured node ids (pytest >= 9.2)
                    item._id = type(item._id).parse(wanted)
                else:
                    item._nodeid = wanted
                if item.nodeid != wanted:  # pragma: no cover - a pytest we do not know
                    return

    # --- running ---------------------------------------------------------------------

    def certify_command(self, dtype, variant) -> str:
        opt = self.config.option
        return certify_command(self.spec, platform=opt.sl1_platform, profile=None if opt.sl1_platform else self.profile_arg,
                               dtype=dtype, variant=variant,
                               vectors=self.vectors[dtype][0] if self.vectors is not None else None,
                               quick=self.quick, waivers=opt.sl1_waivers, out="sl1conf-report")

    def run(self, dtype, variant, nodeid) -> dict:
        """The run's report entry, certified on first use and cached for the process."""
        key = (dtype, variant)
        if key not in self.results:
            try:
                self.results[key] = self._certify(dtype, variant)
            except Exception as exc:
                import traceback

                head = (f"certifying {self.spec} ({dtype}, variant {variant}) on {self.profile.name} failed: "
                        f"{type(exc).__name__}: {exc}\nreproduce: {self.certify_command(dtype, variant)}")
                self.results[key] = _CertifyError(f"{head}\n(traceback: under {nodeid})")
                self.errors[key] = f"{type(exc).__name__}: {exc}".splitlines()[0]
                # The traceback from here down (the engine and the adapter), not pytest's frames.
                raise _CertifyError(f"{head}\n\n" + "".join(traceback.format_exception(exc)).rstrip()) from None
        got = self.results[key]
        if isinstance(got, _CertifyError):
            raise got
        return got

    def _certify(self, dtype, variant) -> dict:
        from sl1conf.adapters import load

        from sl1conf.conformance.certify.engine import certify

        if self.adapter is None:  # closed in an xdist controller, which should not get here
            self.adapter = load(self.spec)
        vectors = {dtype: self.vectors[dtype][0]} if self.vectors is not None else None
        report = certify(self.adapter, self.profile, dtypes=[dtype], variants=[variant], vectors=vectors,
                         quick=self.quick, waivers=self.waivers)
        [run] = report["runs"]
        self.reports[(dtype, variant)] = report
        if self.config.option.sl1_report:
            self.parts[(dtype, variant)] = report
        return run

    def failure(self, dtype, variant, rid):
        """The report's Failure of requirement ``rid`` in this run (reports.view), None if it holds."""
        from sl1conf.conformance.reports.view import view

        key = (dtype, variant)
        if key not in self.failures and key in self.reports:  # the view of a run, once for all its items
            self.failures[key] = view(self.reports[key]).failures
        return next((f for f in self.failures.get(key, ()) if f.id == rid and variant in f.variants), None)

    def failure_lines(self, dtype, variant, rid) -> list:
        """The failure in the report's words (reports.view.failure_text: cause, statement, the
        commonest error, the patterns, the worst input), reproduced by this session's command;
        its heading left to the item, which says where."""
        from sl1conf.conformance.reports.view import failure_text

        f = self.failure(dtype, variant, rid)
        if f is None:
            return []
        text = failure_text(f, commands=[self.certify_command(dtype, variant), *f.commands[1:]])
        return ["  " + line for line in text.splitlines()[1:]]

    # --- --sl1-report: one report folder for the whole session ---------------------------

    def pytest_sessionfinish(self, session):
        if not self.config.option.sl1_report:
            return
        if self.worker:  # handed to the controller with xdist's workerfinished event (sent after this hook)
            import json

            self.config.workeroutput[WORKEROUTPUT_KEY] = json.dumps(
                {"parts": [[list(k), v] for k, v in self.parts.items()],
                 "errors": [[list(k), v] for k, v in self.errors.items()]})
            return
        from sl1conf.conformance.reports.write import ReportError, write_report

        report = self.report()
        if report is None:
            self.report_note = (f"sl1conf: no run was certified in this session (its items deselected or not run); "
                                f"--sl1-report {self.report_dir}: nothing written")
            return
        try:
            write_report(report, self.report_dir, replace_all=True)
        except ReportError as exc:
            self.report_note = f"sl1conf: --sl1-report: the report could not be written: {exc}"
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
            return
        runs = ", ".join(f"{r['dtype']}-{r['variant']}" for r in report["runs"])
        self.report_note = (f"sl1conf: verdict {report['verdict'].upper()} for {self.spec} on {self.profile.name} "
                            f"({runs}); report: "
                            f"{self.report_dir / 'report.json'} (and report.md, report.html, junit.xml)")

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        """An xdist worker finished (the controller): keep the runs it certified."""
        text = getattr(node, "workeroutput", {}).get(WORKEROUTPUT_KEY)
        if not text or self.worker:
            return
        import json

        got = json.loads(text)
        for k, part in got["parts"]:
            self.parts.setdefault(tuple(k), part)  # --dist load may certify a run on two workers
        for k, why in got["errors"]:
            self.errors.setdefault(tuple(k), why)

    def pytest_terminal_summary(self, terminalreporter):
        if self.report_note:
            terminalreporter.write_line(self.report_note)

    def report(self):
        """The session's report, as certify would write it for the same options, from the
        runs certified (None when none was): the runs in certify's order, the top-level
        verdict, missing runs and waiver counts recomputed over them all."""
        from pathlib import Path

        from sl1conf.conformance.certify.engine import narrowed_by, report_of
        from sl1conf.conformance.requirements.results import RunResult

        keys = [k for k in self.runs if k in self.parts or k in self.errors]
        if not keys:
            return None
        opt, here = self.config.option, self.config.invocation_params.dir
        first = next((self.parts[k] for k in keys if k in self.parts), None)
        runs, vectors = [], {}
        matched = [0] * len(self.waivers or [])
        for k in keys:
            part = self.parts.get(k)
            if part is None:  # certifying it failed: a failed run that judged nothing, saying why
                runs.append(RunResult(k[0], k[1], 0, 0, [], incomplete=[f"the certification failed: {self.errors[k]}"],
                                      broke=True))
                continue
            runs.append(RunResult.from_json(part["runs"][0]))
            for d, vs in part["vectors"].items():
                vectors.setdefault(d, vs)
            for i, w in enumerate(part.get("waivers", [])):
                matched[i] += w["matched"]
        if first is None:
            from sl1conf.conformance.common.hostinfo import describe_host

            host, implementation = describe_host(), self.implementation
        else:
            host, implementation = first["host"], first["implementation"]
        narrowed = narrowed_by(self.profile, opt.sl1_dtype, opt.sl1_variant,
                               set(self.vectors) if self.vectors is not None and not opt.sl1_dtype else None)
        invocation = {"impl": self.spec, "platform": opt.sl1_platform,
                      "profile": str(Path(here, opt.sl1_profile).resolve()) if opt.sl1_profile else None,
                      "vectors": [str(Path(here, p).resolve()) for p in opt.sl1_vectors] if opt.sl1_vectors else None}
        waivers = [{**w, "matched": n} for w, n in zip(self.waivers, matched)] if self.waivers is not None else None
        return report_of(runs, started=self.started, implementation=implementation, profile=self.profile,
                         invocation=invocation, only=(), host=host, vectors=vectors, quick=self.quick,
                         missing=self.missing, narrowed=narrowed, waivers=waivers).to_json()


# --------------------------------------------------------------------------
# Collection tree: sl1conf / <dtype>-<variant> / R.. [/ family]
# --------------------------------------------------------------------------


class _Suite(pytest.Collector):
    def __init__(self, *, plugin, **kw):
        super().__init__(**kw)
        self.plugin = plugin

    def collect(self):
        runs = [_Run.from_parent(self, name=f"{d}-{v}", dtype=d, variant=v) for d, v in self.plugin.runs]
        missing = [MissingRunsItem.from_parent(self, name="missing-runs")] if self.plugin.missing else []
        return runs + missing + ([_Fuzz.from_parent(self, name="fuzz")] if self.plugin.fuzz else [])


class _Run(pytest.Collector):
    def __init__(self, *, dtype, variant, **kw):
        super().__init__(**kw)
        self.dtype, self.variant = dtype, variant
        self.plugin = self.parent.plugin
        self.group = f"{ROOT}-{dtype}-{variant}"
        self.add_marker(pytest.mark.xdist_group(self.group))

    def collect(self):
        out = []
        for req in self.plugin.catalog:
            if req.per_family:
                out.append(_Families.from_parent(self, name=req.id, requirement=req))
            else:
                out.append(RequirementItem.from_parent(self, name=req.id, requirement=req, family=None))
        out.append(CompletenessItem.from_parent(self, name="completeness"))
        return out


class _ReadsLikeAReport:
    """Items whose failure message is the whole report entry (no pytest traceback)."""

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, (_RequirementFailed, _CertifyError)):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)


class CompletenessItem(_ReadsLikeAReport, pytest.Item):
    """One run checked enough to pass (requirements.results.incomplete_reasons): a run that failed
    nothing because it checked nothing fails here, as certify's verdict ``incomplete`` does."""

    def __init__(self, **kw):
        super().__init__(**kw)
        run = self.parent
        self.plugin, self.dtype, self.variant, self.group = run.plugin, run.dtype, run.variant, run.group

    def reportinfo(self):
        return self.path, None, f"{self.dtype} {self.variant}: completeness"

    def runtest(self):
        run = self.plugin.run(self.dtype, self.variant, self.nodeid)
        if run.get("incomplete"):
            raise _RequirementFailed(f"{self.dtype} {self.variant} is incomplete, not a pass: "
                                     + "; ".join(run["incomplete"]) + "\nreproduce: "
                                     + self.plugin.certify_command(self.dtype, self.variant))


class MissingRunsItem(_ReadsLikeAReport, pytest.Item):
    """The dtypes and variants the profile lists and the implementation does not offer (unless
    --sl1-dtype or --sl1-variant narrowed the runs): an incomplete certification."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.plugin = self.parent.plugin

    def reportinfo(self):
        return self.path, None, "runs the profile lists"

    def runtest(self):
        raise _RequirementFailed(f"not offered by {self.plugin.spec}, though profile {self.plugin.profile.name} lists "
                                 f"them: {', '.join(self.plugin.missing)} (narrow with --sl1-dtype/--sl1-variant "
                                 "to certify less on purpose)")


class _Families(pytest.Collector):
    def __init__(self, *, requirement, **kw):
        super().__init__(**kw)
        self.requirement = requirement
        self.extra_keyword_matches.add(requirement.title)

    def collect(self):
        return [RequirementItem.from_parent(self, name=f, requirement=self.requirement, family=f)
                for f in self.parent.plugin.families[self.parent.dtype]] + [
                OverTheRunItem.from_parent(self, name="over-the-run", requirement=self.requirement)]


class OverTheRunItem(_ReadsLikeAReport, pytest.Item):
    """A per-family requirement's finding about the whole run, in no family (R01's rounding
    bias): without this item every family could pass while certify's verdict fails."""

    def __init__(self, *, requirement, **kw):
        super().__init__(**kw)
        self.requirement = requirement
        run = self.parent.parent
        self.plugin, self.dtype, self.variant, self.group = run.plugin, run.dtype, run.variant, run.group
        self.extra_keyword_matches.add(requirement.title)

    def reportinfo(self):
        return self.path, None, f"{self.dtype} {self.variant}: {self.requirement.id} {self.requirement.title}, over the run"

    def runtest(self):
        from sl1conf.conformance.reports.view import over_the_run

        run = self.plugin.run(self.dtype, self.variant, self.nodeid)
        entry = next(r for r in run["requirements"] if r["id"] == self.requirement.id)
        status, found = over_the_run(entry)
        self.user_properties.append(("sl1conf_status", status))
        if status == "waived":
            print(f"{self.requirement.id} over the run waived: {entry.get('waiver', '')}")
        if status == "fail":
            req = self.requirement
            raise _RequirementFailed("\n".join([
                f"{req.id} {req.title}, over the run, failed for {self.plugin.spec} ({self.dtype} variant "
                f"{self.variant} on {self.plugin.profile.name})", f"  {found}",
                *self.plugin.failure_lines(self.dtype, self.variant, req.id)]))


class RequirementItem(_ReadsLikeAReport, pytest.Item):
    """One requirement of one run, or (R01) one family of it."""

    def __init__(self, *, requirement, family, **kw):
        super().__init__(**kw)
        self.requirement, self.family = requirement, family
        run = self.parent if family is None else self.parent.parent
        self.plugin, self.dtype, self.variant, self.group = run.plugin, run.dtype, run.variant, run.group
        self.extra_keyword_matches.add(requirement.title)

    def reportinfo(self):
        what = f"{self.requirement.id} {self.requirement.title}" + (f", family {self.family}" if self.family else "")
        return self.path, None, f"{self.dtype} {self.variant}: {what}"

    def runtest(self):
        run = self.plugin.run(self.dtype, self.variant, self.nodeid)
        entry = next(r for r in run["requirements"] if r["id"] == self.requirement.id)
        target = entry
        if self.family is not None:
            target = next((f for f in entry.get("families", []) if f["family"] == self.family), None)
            if target is None:
                self.user_properties.append(("sl1conf_status", "not-judged"))
                pytest.skip(f"no element of family {self.family} was judged in {self.dtype} {self.variant} "
                            "(no case applies to this variant, or every call failed: see R13)")
        status = target["status"]
        self.user_properties.append(("sl1conf_status", status))
        self.user_properties.append(("sl1conf_kind", entry["kind"]))
        for key in ("checked", "failed"):
            if key in target:
                self.user_properties.append((f"sl1conf_{key}", target[key]))
        if "observed" in target:
            import json

            observed = target["observed"]
            text = observed if isinstance(observed, str) else json.dumps(observed, sort_keys=True)
            self.user_properties.append(("sl1conf_observed", text))
            print(f"{self.requirement.id} {self.requirement.title} observed: {text}")
        if status == "recorded" and target.get("failed"):
            print(f"{self.requirement.id} {self.requirement.title} recorded, not required on "
                  f"{self.plugin.profile.name}: {target['failed']} of {target.get('checked', '?')} checked "
                  "differ from what a strict profile requires")
        if "waiver" in target:
            self.user_properties.append(("sl1conf_waiver", target["waiver"]))
            print(f"{self.requirement.id} waived: {target['waiver']}")
        if status == "fail":
            raise _RequirementFailed(self._failure(entry, target))

    def _failure(self, entry: dict, target: dict) -> str:
        req, dtype = self.requirement, self.dtype
        where = f"{dtype} variant {self.variant} on {self.plugin.profile.name}"
        what = f"{req.id} {req.title}" + (f", family {self.family}" if self.family else "")
        lines = [f"{what} failed for {self.plugin.spec} ({where})",
                 f"  {target.get('failed', '?')} of {target.get('checked', '?')} checked failed"]
        shared = self.plugin.failure_lines(dtype, self.variant, req.id)
        if self.family is not None and target.get("worst"):  # the family's own worst; the report's is the requirement's
            lines.append("  worst in this family: " + _example(target["worst"]))
        lines += shared or [f"  {entry.get('statement', req.statement)}"]
        examples = target.get("examples", [])
        if examples:
            lines.append(f"  examples (first {min(len(examples), 5)} of {target.get('failed', len(examples))}):")
            for ex in examples[:5]:
                lines.append("    " + _example(ex))
                if "dy" in ex:
                    lines.append("      " + _explain(dtype, ex))
        if not shared:
            lines.append(f"  reproduce: {self.plugin.certify_command(dtype, self.variant)}")
        return "\n".join(lines)


def _example(ex: dict) -> str:
    from sl1conf.conformance.reports.view import element_text

    if "dy" not in ex:
        return f"case {ex['case']}: {ex.get('detail', '')}" if "case" in ex else f"over the run: {ex.get('detail', '')}"
    return f"case {ex['case']} element {ex['element']}: {element_text(ex)}"


def _explain(dtype: str, ex: dict) -> str:
    return explain_command(dtype, ex["dy"], ex["x1"], ex["x2"], ex["beta"])


# --------------------------------------------------------------------------
# The property: sl1conf / fuzz / <dtype>-<variant>
# --------------------------------------------------------------------------


class _PropertyFailed(Exception):
    """A drawn call failed a check (the reproducer is written once, for the shrunk call)."""

    def __init__(self, case, findings):
        super().__init__(f"{findings[0].kind}: {findings[0].detail}")
        self.case, self.findings = case, findings


class _Fuzz(pytest.Collector):
    def collect(self):
        return [PropertyItem.from_parent(self, name=f"{d}-{v}", dtype=d, variant=v) for d, v in self.parent.plugin.runs]


class PropertyItem(pytest.Item):
    """Every call hypothesis draws for one (dtype, variant) passes every fuzzing check."""

    def __init__(self, *, dtype, variant, **kw):
        super().__init__(**kw)
        self.dtype, self.variant, self.plugin = dtype, variant, self.parent.parent.plugin

    def reportinfo(self):
        return self.path, None, f"{self.dtype} {self.variant}: property (hypothesis) of {self.plugin.spec}"

    def runtest(self):
        from hypothesis import HealthCheck, given, settings

        from sl1conf.conformance.search import fuzz
        from sl1conf.conformance.search.strategies import calls

        plugin = self.plugin
        if plugin.adapter is None:
            from sl1conf.adapters import load

            plugin.adapter = load(plugin.spec)
        adapter, profile = plugin.adapter, plugin.profile
        extra = {}
        if plugin.hypothesis_db:
            from hypothesis.database import DirectoryBasedExampleDatabase

            extra["database"] = DirectoryBasedExampleDatabase(plugin.hypothesis_db)

        @settings(max_examples=plugin.fuzz_examples, deadline=None, report_multiple_bugs=False,
                  suppress_health_check=list(HealthCheck), **extra)
        @given(calls(self.dtype, self.variant, profile.core_mask))
        def prop(case):
            findings = fuzz.check_cases(adapter, profile, [case])
            if findings:
                raise _PropertyFailed(case, findings)

        key = f"sl1conf-property\0{self.nodeid}\0{plugin.spec}\0{profile.name}".encode()
        prop.hypothesis.inner_test._hypothesis_internal_add_digest = key  # one database key per item
        if plugin.hypothesis_db:  # a database asked for is used even under --hypothesis-seed
            import hashlib

            prop._hypothesis_internal_database_key = hashlib.sha384(key).digest()
        prop()

    def _reproducer(self, case, findings) -> str:
        """The call hypothesis shrank to, minimized further (shortest array, simplest values)."""
        from sl1conf.reference import fast_oracle
        from sl1conf.reference import formats

        from sl1conf.conformance.search import fuzz
        from sl1conf.conformance.search.minimize import minimize

        f = findings[0]
        case, f = minimize(case, f, fuzz.same_failure(self.plugin.adapter, self.plugin.profile, f), f.element)
        fmt = case.format
        hx = lambda b: formats.hex_bits(fmt, b)  # noqa: E731
        lines = [f"property failed for {self.plugin.spec} ({self.dtype} variant {self.variant} on "
                 f"{self.plugin.profile.name}): {f.kind}: {f.detail}",
                 f"  minimal call: length {case.n}, beta {hx(case.beta)}" + (
                     f", core_mask {case.core_mask:#x}" if case.variant == "s" else "")]
        for k in range(min(case.n, 8)):
            lines.append(f"  [{k}] dy={hx(case.dy[k])} x1={hx(case.x1[k])} x2={hx(case.x2[k])}")
        if f.element is not None:
            k = f.element
            dy, x1, x2, beta = case.floats()
            got = self.plugin.adapter.run([case])[0]
            want = fast_oracle.smoothl1lossgrad(dy[k:k + 1], x1[k:k + 1], x2[k:k + 1], beta).view(fmt.uint)[0]
            if got.status == "ok":
                lines.append(f"  element {k}: got {hx(got.out[k])}, expected {hx(want)}")
            lines.append("  " + _explain(self.dtype, {"dy": hx(case.dy[k]), "x1": hx(case.x1[k]),
                                                       "x2": hx(case.x2[k]), "beta": hx(case.beta)}))
        return "\n".join(lines)

    def repr_failure(self, excinfo, style=None):
        exc = excinfo.value
        if isinstance(exc, _PropertyFailed):
            notes = [n for n in getattr(exc, "__notes__", []) if "seed" in n or "reproduce_failure" in n]
            return "\n".join([self._reproducer(exc.case, exc.findings), *notes])
        return super().repr_failure(excinfo, style=style)
