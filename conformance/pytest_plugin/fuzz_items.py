"""The property the plugin adds with ``--sl1-fuzz``: ``sl1conf / fuzz / <dtype>-<variant>``.

Hypothesis draws whole calls (``search.strategies.calls``) and every one must pass
``search.fuzz.check_cases``; a failure shrinks to the shortest, simplest call and is printed
as a reproducer.
"""

from __future__ import annotations

import pytest

from sl1conf.conformance.common.commands import explain_command

__all__ = ["Fuzz", "PropertyItem", "PropertyFailed", "FUZZ_EXAMPLES"]

FUZZ_EXAMPLES = 200  # examples per property item, unless --sl1-fuzz-examples says


class PropertyFailed(Exception):
    """A drawn call failed a check (the reproducer is written once, for the shrunk call)."""

    def __init__(self, case, findings):
        super().__init__(f"{findings[0].kind}: {findings[0].detail}")
        self.case, self.findings = case, findings


class Fuzz(pytest.Collector):
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
                raise PropertyFailed(case, findings)

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
            lines.append("  " + explain_command(self.dtype, hx(case.dy[k]), hx(case.x1[k]), hx(case.x2[k]), hx(case.beta)))
        return "\n".join(lines)

    def repr_failure(self, excinfo, style=None):
        exc = excinfo.value
        if isinstance(exc, PropertyFailed):
            notes = [n for n in getattr(exc, "__notes__", []) if "seed" in n or "reproduce_failure" in n]
            return "\n".join([self._reproducer(exc.case, exc.findings), *notes])
        return super().repr_failure(excinfo, style=style)
