"""The element record (requirements.records.ElementRecord): one typed record everywhere, whose
to_json alone decides what is written (its keys and their order are the schemas'), read back by
from_json; and no driver strips its internal fields from a dict by hand."""

import ast
import json
from pathlib import Path

import numpy as np

from sl1conf.conformance.requirements.evidence import Evidence
from sl1conf.conformance.requirements.records import ElementRecord, element_record
from sl1conf.conformance.search.sweep_tally import element_example
from sl1conf.reference import formats

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "conformance" / "schemas"
F16 = formats.FP16
TAIL = ("not_written", "detail", "reason", "accepted_as")  # written after the result, in this order


def _defs(name: str, key: str) -> dict:
    return json.loads((SCHEMAS / f"{name}.schema.json").read_text())["$defs"][key]


def _records():
    one = np.uint16(0x3C00)
    yield element_record(F16, one, 0x3555, 0x3000, one, 0x3554, np.uint16(0x3556))  # a distance
    yield element_record(F16, one, 0x3555, 0x3000, one, 0x3554, np.uint16(0x7E00))  # NaN against a number
    yield element_record(F16, one, 0x3555, 0x3000, one, 0x3554, 0x7C00, case="4.2", element=3, length=7,
                         detail="said", reason="reachable", accepted_as="fma")
    from sl1conf.adapters.base import fill_bits
    yield element_record(F16, one, 0x3555, 0x3000, one, 0x3554, fill_bits(F16), case="1.1", element=0, length=1)


def _in_schema_order(keys: list, props: list) -> bool:
    return keys == [k for k in props if k in keys]


def test_internal_json_is_the_checkpoint_and_summary_schema():
    sweep, fuzz = _defs("sweep-state", "example"), _defs("fuzz-summary", "element")
    for schema, at in ((sweep, 0x3555), (fuzz, [1, 2, 3])):
        for rec in _records():
            rec = rec.but(at=at, case=None, element=None, length=None, detail=None, reason=None, accepted_as=None)
            out = rec.to_json(internal=True)
            assert set(schema["required"]) <= set(out) <= set(schema["properties"])
            assert _in_schema_order(list(out), list(schema["properties"]))
            assert out["ulp_value"] == rec.distance and out["at"] == at


def test_report_json_keys_and_order():
    schema = _defs("report", "element")
    for rec in _records():
        out = rec.but(at=(1, 2)).to_json()
        assert "ulp_value" not in out and "at" not in out  # internal: never in a report
        assert set(out) <= set(schema["properties"])
        head = [k for k in out if k not in TAIL]
        assert _in_schema_order(head, list(schema["properties"]))
        assert [k for k in out if k in TAIL] == [k for k in TAIL if k in out]
        assert list(out)[: len(head)] == head  # the tail after the rest
    flagged = list(_records())[3]
    assert flagged.not_written and flagged.to_json()["not_written"] is True
    assert "not_written" not in list(_records())[0].to_json()


def test_round_trip():
    for rec in _records():
        for at in (7, [0, 1, 2]):
            r = rec.but(at=at)
            back = ElementRecord.from_json(json.loads(json.dumps(r.to_json(internal=True))))
            assert back == r
    e = element_example(0x1234, 0x3C00, 0x3555, 0x3000, 0x3C00, np.uint16(0x3554), np.uint16(0x3556), 2)
    ev = Evidence(3, 1, 0, e, None)
    again = Evidence.from_json(json.loads(json.dumps(ev.to_json())))
    assert again == ev and again.to_json() == ev.to_json()


def test_result_left_out_for_no_result():
    rec = next(_records())
    assert list(rec.to_json(result=False)) == ["dy", "x1", "x2", "beta", "expected"]


INTERNAL = {"ulp_value", "at"}


def _strips(node) -> bool:
    """Whether ``node`` takes an internal key out of a dict by hand: ``.pop("at")``, ``del d["at"]``,
    ``k != "ulp_value"``, ``k not in ("ulp_value", "at")``."""
    def names(n):
        if isinstance(n, ast.Constant):
            return {n.value} if isinstance(n.value, str) else set()
        if isinstance(n, (ast.Tuple, ast.List, ast.Set)):
            return {e.value for e in n.elts if isinstance(e, ast.Constant)}
        return set()
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "pop":
        return bool(node.args) and bool(names(node.args[0]) & INTERNAL)
    if isinstance(node, ast.Delete):
        return any(isinstance(t, ast.Subscript) and names(t.slice) & INTERNAL for t in node.targets)
    if isinstance(node, ast.Compare):
        return any(isinstance(op, (ast.NotEq, ast.NotIn, ast.Eq, ast.In)) and names(c) & INTERNAL
                   for op, c in zip(node.ops, node.comparators))
    return False


def test_no_driver_strips_internal_fields_by_hand():
    found = []
    for pkg in ("requirements", "search", "certify"):
        for path in sorted((ROOT / "conformance" / pkg).glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if _strips(node):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, found
