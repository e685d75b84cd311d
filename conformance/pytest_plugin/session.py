"""The session's plugin: the options checked, the runs known, each run's certification made
once and cached, and ``--sl1-report``'s one report of the session.

Every certification is kept typed (``requirements.results.Report``); JSON appears only where a
worker hands its runs to the xdist controller, and in the report folder written at the end.
"""

from __future__ import annotations

import pytest

from sl1conf.conformance.common.commands import certify_command
from sl1conf.conformance.pytest_plugin.fuzz_items import FUZZ_EXAMPLES
from sl1conf.conformance.pytest_plugin.items import (
    ROOT, CertifyError, CompletenessItem, OverTheRunItem, RequirementItem, Suite,
)

__all__ = ["Conformance", "WORKEROUTPUT_KEY", "WAIVERS_KEY", "REPRODUCE_OUT", "junit_name"]

WORKEROUTPUT_KEY = "sl1conf_report_parts"  # a worker's certified runs, for the controller's --sl1-report
WAIVERS_KEY = "sl1conf_waivers"  # a worker's runs' use of the waivers, for the controller's summary and JUnit
REPRODUCE_OUT = "sl1conf-reproduce-{dtype}-{variant}"
"""Where a reproduce command the plugin prints writes: never the --sl1-report folder (a reproduction
must not overwrite the report it came from), nor the docs' ``sl1conf-report``."""


class Conformance:
    """The plugin registered for a session given ``--sl1-impl``."""

    def __init__(self, config):
        from sl1conf.conformance.certify.session import InputError, open_session, plugin_option

        opt = config.option
        self.config, self.adapter = config, None
        self.spec, self.quick = opt.sl1_impl, bool(opt.sl1_quick)
        self.profile_arg = opt.sl1_platform or opt.sl1_profile
        try:  # the session, checked as the command line checks it (certify.session), the implementation last
            session = open_session(opt.sl1_platform, opt.sl1_profile, dtypes=opt.sl1_dtype,
                                   vector_dirs=opt.sl1_vectors or (), waivers_file=opt.sl1_waivers,
                                   option=plugin_option)
        except InputError as exc:
            raise pytest.UsageError(str(exc)) from None
        self.profile, self.waivers = session.profile, session.waivers
        # dtype -> (folder, family names): what an xdist worker loads again and collects
        self.vectors = None if session.vectors is None else {
            d: (str(vs.path), [f["name"] for f in vs.manifest["families"]]) for d, vs in session.vectors.items()}
        self.worker = hasattr(config, "workerinput")
        self.report_dir = self._report_dir(opt)
        try:
            self.adapter = session.open_implementation(self.spec)
        except InputError as exc:
            raise pytest.UsageError(str(exc)) from None
        self.parts = {}  # (dtype, variant) -> the one-run Report certify gave (for --sl1-report)
        self.errors = {}  # (dtype, variant) -> why its certification failed (for --sl1-report)
        self.report_note = None  # the terminal summary's line about --sl1-report
        # (dtype, variant) -> {"waived": [requirement ids], "use": [[matched, failures] per waiver]}
        self.waiver_use = {}
        from datetime import datetime, timezone

        self.started = datetime.now(timezone.utc)
        try:
            self.implementation = self.adapter.describe()  # the report's, should no run be certified
            self._runs(session, opt)
            self._fuzz_options(opt)
        except BaseException:
            self.close()
            raise
        self.results = {}  # (dtype, variant) -> RunResult or CertifyError
        self.reports = {}  # (dtype, variant) -> the one-run Report certify gave
        self.failures = {}  # (dtype, variant) -> its reports.view Failures, made at the first failing item
        if getattr(opt, "dist", "no") != "no" and not self.worker:
            # An xdist controller only hands out items: it never runs the implementation.
            if opt.dist != "loadgroup":
                config.issue_config_time_warning(pytest.PytestConfigWarning(
                    f"sl1conf: --dist {opt.dist} spreads one certification over several workers, each "
                    "computing it again; pass --dist loadgroup"), stacklevel=2)
            self.close()

    def _report_dir(self, opt):
        """Where --sl1-report writes (checked now, before anything runs): never in an xdist worker."""
        if not opt.sl1_report or self.worker:
            return None
        from pathlib import Path

        from sl1conf.conformance.common.files import writable_folder

        return writable_folder(Path(self.config.invocation_params.dir, opt.sl1_report), pytest.UsageError)

    def _runs(self, session, opt) -> None:
        """The (dtype, variant) runs, the runs the profile lists that were asked for and the
        implementation lacks (the suite is incomplete) and those narrowing left out (another
        scope): certify's ``missing_runs``, the catalog and each dtype's families."""
        from sl1conf.conformance.certify.engine import default_families, dtypes_to_run, missing_runs, quick_families
        from sl1conf.conformance.certify.session import InputError, selected_runs
        from sl1conf.conformance.requirements import CATALOG
        from sl1conf.conformance.vectors.families import family_by_name

        try:
            dtypes, variants = selected_runs(session, self.adapter, opt.sl1_variant)
        except InputError as exc:
            raise pytest.UsageError(str(exc)) from None
        self.runs = [(d, v) for d in dtypes for v in variants]
        self.missing, self.not_asked = missing_runs(
            self.profile, self.adapter, dtypes_to_run(self.profile, session.dtypes, session.vectors), opt.sl1_variant)
        self.catalog = CATALOG
        names = quick_families() if self.quick else default_families()
        self.families = {d: list(self.vectors[d][1]) if self.vectors is not None
                         else [n for n in names if d in family_by_name(n).dtypes] for d in dtypes}

    def _fuzz_options(self, opt) -> None:
        self.fuzz = bool(opt.sl1_fuzz)
        self.fuzz_examples = FUZZ_EXAMPLES if opt.sl1_fuzz_examples is None else opt.sl1_fuzz_examples
        if self.fuzz_examples < 1:
            raise pytest.UsageError(f"--sl1-fuzz-examples must be at least 1, not {self.fuzz_examples}")
        if (opt.sl1_fuzz_examples is not None or opt.sl1_hypothesis_db) and not self.fuzz:
            raise pytest.UsageError("--sl1-fuzz-examples and --sl1-hypothesis-db go with --sl1-fuzz")
        self.hypothesis_db = opt.sl1_hypothesis_db

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
                rep.result.append(Suite.from_parent(collector, name=ROOT, nodeid=ROOT, plugin=self))

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
                               quick=self.quick, waivers=opt.sl1_waivers, out=self.reproduce_out(dtype, variant))

    def reproduce_out(self, dtype, variant) -> str:
        """The --out of a reproduce command: a folder of its own, never the --sl1-report folder
        (nor the docs' ``sl1conf-report``), so a reproduction never overwrites the report it came from."""
        from pathlib import Path

        here = Path(self.config.invocation_params.dir)
        report = self.config.option.sl1_report
        taken = {(here / "sl1conf-report").resolve()} | ({(here / report).resolve()} if report else set())
        out = REPRODUCE_OUT.format(dtype=dtype, variant=variant)
        while (here / out).resolve() in taken:
            out += "-again"
        return out

    def run(self, dtype, variant, nodeid):
        """The run's result (``requirements.results.RunResult``), certified on first use and
        cached for the process."""
        key = (dtype, variant)
        if key not in self.results:
            try:
                self.results[key] = self._certify(dtype, variant)
            except Exception as exc:
                import traceback

                head = (f"certifying {self.spec} ({dtype}, variant {variant}) on {self.profile.name} failed: "
                        f"{type(exc).__name__}: {exc}\nreproduce: {self.certify_command(dtype, variant)}")
                self.results[key] = CertifyError(f"{head}\n(traceback: under {nodeid})")
                self.errors[key] = f"{type(exc).__name__}: {exc}".splitlines()[0]
                # The traceback from here down (the engine and the adapter), not pytest's frames.
                raise CertifyError(f"{head}\n\n" + "".join(traceback.format_exception(exc)).rstrip()) from None
        got = self.results[key]
        if isinstance(got, CertifyError):
            raise got
        return got

    def _certify(self, dtype, variant):
        from sl1conf.adapters import load

        from sl1conf.conformance.certify.engine import certify

        if self.adapter is None:  # closed in an xdist controller, which should not get here
            self.adapter = load(self.spec)
        vectors = {dtype: self.vectors[dtype][0]} if self.vectors is not None else None
        report = certify(self.adapter, self.profile, dtypes=[dtype], variants=[variant], vectors=vectors,
                         quick=self.quick, waivers=self.waivers)
        [run] = report.runs
        self.reports[(dtype, variant)] = report
        if self.waivers is not None:
            self.waiver_use[(dtype, variant)] = {
                "waived": [r.id for r in run.requirements if r.status == "waived"],
                "use": [[w.get("matched", 0), w.get("failures", 0)] for w in report.waivers or []]}
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

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session):
        if self.worker and self.waivers is not None:  # each run's use of the waivers, for the controller
            import json

            self.config.workeroutput[WAIVERS_KEY] = json.dumps([[list(k), v] for k, v in self.waiver_use.items()])
        if not self.worker:  # before junitxml writes its file (this hook runs first)
            self._junit_waivers()
        if not self.config.option.sl1_report:
            return
        if self.worker:  # handed to the controller with xdist's workerfinished event (sent after this hook)
            import json

            self.config.workeroutput[WORKEROUTPUT_KEY] = json.dumps(
                {"parts": [[list(k), v.to_json()] for k, v in self.parts.items()],
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
        runs = ", ".join(f"{r.dtype}-{r.variant}" for r in report.runs)
        self.report_note = (f"sl1conf: verdict {report.verdict.upper()} for {self.spec} on {self.profile.name} "
                            f"({runs}); report: "
                            f"{self.report_dir / 'report.json'} (and report.md, report.html, junit.xml)")

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        """An xdist worker finished (the controller): keep the runs it certified and their use of the waivers."""
        import json

        if self.worker:
            return
        for k, use in json.loads(getattr(node, "workeroutput", {}).get(WAIVERS_KEY) or "[]"):
            self.waiver_use.setdefault(tuple(k), use)
        text = getattr(node, "workeroutput", {}).get(WORKEROUTPUT_KEY)
        if not text:
            return

        from sl1conf.conformance.requirements.results import Report

        got = json.loads(text)
        for k, part in got["parts"]:
            self.parts.setdefault(tuple(k), Report.from_json(part))  # --dist load may certify a run on two workers
        for k, why in got["errors"]:
            self.errors.setdefault(tuple(k), why)

    def pytest_terminal_summary(self, terminalreporter):
        for line in self.waiver_lines():
            terminalreporter.write_line(f"sl1conf: {line}")
        if self.report_note:
            terminalreporter.write_line(self.report_note)

    # --- waivers: what certify prints of them, in the summary and in JUnit ----------------------

    def waiver_lines(self) -> list:
        """What certify prints of the waivers, for the runs certified in this session (in every
        process: under xdist the controller has each worker's): the requirements each run waived
        (``fp16 p: waived: R03``), each waiver that waived something (``waiver R03 waived 1
        requirement (392 failures): reason``) and, as certify says it, each that matched nothing
        (``waiver R05 matched nothing: reason``). None without --sl1-waivers or a run certified."""
        keys = [k for k in self.runs if k in self.waiver_use]
        if self.waivers is None or not keys:
            return []
        from sl1conf.conformance.requirements.results import use_lines, waived_line

        out = [waived_line(d, v, self.waiver_use[(d, v)]["waived"]) for d, v in keys if self.waiver_use[(d, v)]["waived"]]
        uses = [self.waiver_use[k]["use"] for k in keys]
        return out + use_lines([{**w, "matched": sum(u[i][0] for u in uses if i < len(u)),
                                 "failures": sum(u[i][1] for u in uses if i < len(u))}
                                for i, w in enumerate(self.waivers)])

    def _junit_waivers(self) -> None:
        """The waiver lines as properties of pytest's --junitxml test suite (``sl1conf_waiver``),
        as record_testsuite_property writes them; nothing without --junitxml."""
        xml = _junit_xml(self.config)
        if xml is None:
            return
        for line in self.waiver_lines():
            xml.add_global_property("sl1conf_waiver", line)

    # --- JUnit names: certify's, under --dist loadgroup too ----------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report):
        """Under --dist loadgroup xdist appends ``@<group>`` to the node ids, and junitxml would
        name the case ``R03@sl1conf-fp16-s``; certify's junit.xml names it ``R03``. The controller
        (or the one process) names the case as certify does, through junitxml's own testcase
        attributes (what record_xml_attribute sets), so both routes' names are equal."""
        name = junit_name(report.nodeid)
        if name is None or self.worker:
            return
        xml = _junit_xml(self.config)
        if xml is not None:
            xml.node_reporter(report).add_attribute("name", name)

    def report(self):
        """The session's report (``requirements.results.Report``), as certify would make it for
        the same options, from the runs certified (None when none was): the runs in certify's
        order, the top-level verdict, missing runs and waiver counts recomputed over them all."""
        from pathlib import Path

        from sl1conf.conformance.certify.engine import narrowed_by, report_of
        from sl1conf.conformance.requirements.results import RunResult

        keys = [k for k in self.runs if k in self.parts or k in self.errors]
        if not keys:
            return None
        opt, here = self.config.option, self.config.invocation_params.dir
        first = next((self.parts[k] for k in keys if k in self.parts), None)
        runs, vectors = [], {}
        used = [{"matched": 0, "failures": 0} for _ in self.waivers or []]  # each waiver's use, summed over the runs
        for k in keys:
            part = self.parts.get(k)
            if part is None:  # certifying it failed: a failed run that judged nothing, saying why
                runs.append(RunResult(k[0], k[1], 0, 0, [], incomplete=[f"the certification failed: {self.errors[k]}"],
                                      broke=True))
                continue
            runs.append(part.runs[0])
            for d, vs in part.vectors.items():
                vectors.setdefault(d, vs)
            for i, w in enumerate(part.waivers or []):
                for k in used[i]:
                    used[i][k] += w.get(k, 0)
        if first is None:
            from sl1conf.conformance.common.hostinfo import describe_host

            host, implementation = describe_host(), self.implementation
        else:
            host, implementation = first.host, first.implementation
        narrowed = narrowed_by(self.profile, opt.sl1_dtype, opt.sl1_variant,
                               set(self.vectors) if self.vectors is not None and not opt.sl1_dtype else None)
        invocation = {"impl": self.spec, "platform": opt.sl1_platform,
                      "profile": str(Path(here, opt.sl1_profile).resolve()) if opt.sl1_profile else None,
                      "vectors": [str(Path(here, p).resolve()) for p in opt.sl1_vectors] if opt.sl1_vectors else None}
        waivers = [{**w, **u} for w, u in zip(self.waivers, used)] if self.waivers is not None else None
        return report_of(runs, started=self.started, implementation=implementation, profile=self.profile,
                         invocation=invocation, only=(), host=host, vectors=vectors, quick=self.quick,
                         missing=self.missing, narrowed=narrowed, not_asked=self.not_asked, waivers=waivers)


def junit_name(nodeid: str):
    """The JUnit name of one of the plugin's items whose node id carries xdist's group suffix
    (``sl1conf::fp16-s::R03@sl1conf-fp16-s`` -> ``R03``), None for any other node id."""
    if not nodeid.startswith(f"{ROOT}::") or "@" not in nodeid:
        return None
    last, _, group = nodeid.rsplit("::", 1)[-1].rpartition("@")
    return last if group.startswith(f"{ROOT}-") and last else None


def _junit_xml(config):
    """pytest's --junitxml writer of this session (the controller's under xdist), or None."""
    try:
        from _pytest.junitxml import xml_key
    except ImportError:  # pragma: no cover - a pytest without it
        return None
    return config.stash.get(xml_key, None)
