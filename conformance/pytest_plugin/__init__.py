"""The pytest plugin: ``pytest --sl1-impl SPEC --sl1-platform NAME`` as a CI gate.

Its modules: this one (the options and the hooks pytest calls first), ``session`` (the
session's plugin: each run certified once, ``--sl1-report``), ``items`` (the collection tree
and its items), ``fuzz_items`` (the hypothesis property of ``--sl1-fuzz``).

Installed with the package (entry point ``sl1conf`` in the ``pytest11`` group), so every
pytest run in the environment loads this module. Without ``--sl1-impl`` it only adds its
options: nothing is collected, nothing of the suite is imported, nothing is slowed down.

With ``--sl1-impl`` it certifies the implementation the way ``sl1conf certify`` does and
reports the result as test items, one per (dtype, variant, requirement) and, for R01
(accuracy, judged per family), one per (dtype, variant, family)::

    sl1conf::fp16-s::R02
    sl1conf::fp16-s::R01::boundary-exact
    sl1conf::fp16-s::completeness     (fails when the run is incomplete: nothing checked, unsupported calls)
    sl1conf::missing-runs             (only when runs asked for (all the profile lists, unless narrowed) are ones the implementation lacks)

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
* Under ``--dist loadgroup`` xdist appends ``@sl1conf-<dtype>-<variant>`` to the items' node ids;
  the controller names their JUnit cases without it (junitxml's testcase attributes), so the names
  equal certify's junit.xml. With ``--sl1-waivers`` the terminal summary and the JUnit test
  suite's properties (``sl1conf_waiver``) say what certify prints of the waivers (each run's waived
  requirements, each waiver's use, each that matched nothing); workers hand their runs' use over
  through ``workeroutput``. A reproduce command writes to ``sl1conf-reproduce-<dtype>-<variant>``,
  never the ``--sl1-report`` folder.
"""

from __future__ import annotations

import pytest

from sl1conf.conformance.common.platforms import platform_options, plugin_option
from sl1conf.conformance.pytest_plugin.fuzz_items import FUZZ_EXAMPLES

__all__ = ["pytest_addoption", "pytest_configure", "pytest_unconfigure"]

PLUGIN_NAME = "sl1conf-conformance"
_OPTIONS = ("sl1_impl", "sl1_platform", "sl1_profile", "sl1_dtype", "sl1_variant", "sl1_vectors",
            "sl1_quick", "sl1_waivers", "sl1_fuzz", "sl1_fuzz_examples", "sl1_hypothesis_db", "sl1_report")


def pytest_addoption(parser):
    g = parser.getgroup("sl1conf", "SmoothL1LossGrad conformance (sl1conf certify as test items)")
    g.addoption("--sl1-impl", metavar="SPEC",
                help="certify this implementation: builtin:kernel, ctypes:lib.so, sim:'cmd {case} {result}', "
                     "torch:cpu, ... (without it the plugin does nothing)")
    for flag, keywords in platform_options("the profile that judges, as in sl1conf certify", option=plugin_option):
        g.addoption(flag, **keywords)  # --sl1-platform NAME|FILE, --sl1-profile FILE: as every command's
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
    from sl1conf.conformance.pytest_plugin.session import Conformance

    config.pluginmanager.register(Conformance(config), PLUGIN_NAME)


def pytest_unconfigure(config):
    plugin = config.pluginmanager.get_plugin(PLUGIN_NAME)
    if plugin is not None:
        plugin.close()
