"""One type for a call: ``adapters.base.Case``. A vector record is a call plus what the set
says about it (flags, result, alternatives, note), and a draw of inputs is a call too, so
no second type can drift from the one adapters run."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from sl1conf.adapters.base import Case
from sl1conf.conformance.vectors import sampling
from sl1conf.conformance.vectors import store as V
from sl1conf.conformance.vectors.cases import Family, VectorCase
from sl1conf.conformance.vectors.families import finish_case
from sl1conf.conformance.vectors.families.finish import make_case
from sl1conf.reference import formats as F

ROOT = Path(__file__).resolve().parents[1]
CALL_INPUTS = {"dy", "x1", "x2", "beta"}


def _records(fmt) -> list:
    rng = np.random.default_rng(3)
    b = sampling.random_batch(fmt, 11, rng)
    return [finish_case(fmt, VectorCase(b.replace(variant="s", core_mask=0x5, length=7), flags=("mine",))),
            finish_case(fmt, make_case(fmt, [0x0] * 3, [0x1, 0x2, 0x3], [0x0] * 3, int(b.beta), ("small",))),
            VectorCase(sampling.hard_batch(fmt, 6, rng), result="acceptable",
                       alternatives={"zeros": np.zeros(6, fmt.uint)}, note="a test alternative")]


@pytest.mark.parametrize("fmt", [F.FP16, F.FP32], ids=lambda f: f.name)
def test_a_record_holds_a_case_that_survives_save_and_load(fmt, tmp_path):
    records = _records(fmt)
    vs = V.load(V.write(tmp_path / "set", fmt, [Family(2, "two", "test", cases=records)], seed=1))
    for index, (record, row) in enumerate(zip(records, vs.manifest["cases"])):
        back = vs.case(row)
        assert type(back.call) is Case and type(record.call) is Case
        want = record.call.replace(id=f"2.{index}")  # the set gives the call its id
        # length None ("all of dy") is stored as the number it means
        for name in ("dtype", "variant", "core_mask", "call_length", "beta", "id", "out_alias", "guard"):
            assert getattr(back.call, name) == getattr(want, name), (index, name)
        for name in ("dy", "x1", "x2"):
            got = getattr(back.call, name)
            assert got.dtype == fmt.uint and np.array_equal(got, getattr(want, name)), (index, name)
        assert (back.flags, back.result, back.note) == (record.flags, record.result, record.note)
        assert sorted(back.alternatives) == sorted(record.alternatives)
        # the call's fields read through the record are the call's, not a copy
        assert back.dy is back.call.dy and back.call_length == back.call.call_length


def test_a_record_refuses_a_call_of_another_dtype():
    fp16 = _records(F.FP16)[0]
    with pytest.raises(ValueError, match="fp16 call in a fp32 set"):
        V.in_memory("fp32", [Family(1, "one", "test", cases=[fp16])], seed=1)
    with pytest.raises(ValueError, match="fp16 call finished as fp32"):
        finish_case(F.FP32, fp16)


def test_a_draw_is_a_case_of_its_format():
    rng = np.random.default_rng(5)
    for fmt in (F.FP16, F.FP32):
        for draw in (sampling.random_batch(fmt, 9, rng), sampling.fast_batch(fmt, 9, rng),
                     sampling.hard_batch(fmt, 9, rng)):
            assert type(draw) is Case and draw.dtype == fmt.name and draw.n == 9
            assert draw.floats(fmt)[0].dtype == fmt.dtype
        with pytest.raises(ValueError, match="read as"):
            sampling.random_batch(F.FP16, 3, rng).floats(F.FP32)


def _dataclass_like(node: ast.ClassDef) -> bool:
    names = {ast.unparse(d).split("(")[0].rsplit(".", 1)[-1] for d in node.decorator_list}
    bases = {ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases}
    return "dataclass" in names or "NamedTuple" in bases or "TypedDict" in bases


def _fields(node: ast.ClassDef) -> set:
    return {s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}


def _a_call_type(node: ast.ClassDef) -> bool:
    """A dataclass (or NamedTuple) holding a call's inputs: dy, x1, x2 and beta as fields, dy not
    one element's bits as hex text (requirements.records.ElementRecord: one element of a call,
    its record, not a call)."""
    if not (_dataclass_like(node) and CALL_INPUTS <= _fields(node)):
        return False
    dy = next(s for s in node.body if isinstance(s, ast.AnnAssign) and getattr(s.target, "id", "") == "dy")
    return ast.unparse(dy.annotation) != "str"


def test_no_module_defines_another_type_for_a_call():
    """An AST scan of conformance/ and adapters/: Case is the only dataclass (or NamedTuple)
    with a call's inputs as fields; a record or a draw that repeats them has come back."""
    found = []
    for folder in ("conformance", "adapters"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.ClassDef) and _a_call_type(node):
                    found.append(f"{path.relative_to(ROOT)}:{node.name}")
    assert found == ["adapters/base.py:Case"], found


def test_the_scan_would_see_a_second_call_type():
    """The scan's own check: a dataclass repeating the call's inputs is found."""
    tree = ast.parse("@dataclass(frozen=True)\nclass Draw:\n    dy: int\n    x1: int\n    x2: int\n    beta: int\n")
    (node,) = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    assert _a_call_type(node)
    record = ast.parse("@dataclass\nclass Element:\n    dy: str\n    x1: str\n    x2: str\n    beta: str\n")
    assert not _a_call_type([n for n in ast.walk(record) if isinstance(n, ast.ClassDef)][0])  # one element's record


def test_a_record_is_made_of_a_case_only():
    """The field-by-field form ``VectorCase(dy, x1, x2, beta, ...)`` is gone: a record's call is a
    Case, and its fields belong to the Case."""
    b = sampling.random_batch(F.FP16, 4, np.random.default_rng(8))
    with pytest.raises(TypeError, match="adapters.base.Case"):
        VectorCase(b.dy, b.x1, b.x2, b.beta)
    with pytest.raises(TypeError):
        VectorCase(b, variant="s")
    rec = VectorCase(b.replace(variant="s", core_mask=0x3), flags=("fuzz",))
    assert (rec.variant, rec.core_mask, rec.beta) == ("s", 0x3, b.beta) and rec.dy is rec.call.dy
