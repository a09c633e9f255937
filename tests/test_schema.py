"""The schema: field checking names the field; round trips through dicts and files are exact."""

from __future__ import annotations

import gzip
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from prmkit.io import RecordError, RejectWriter, atomic_output, iter_json, read_solutions, write_records
from prmkit.schema import Completion, Problem, SchemaError, Solution, Step

texts = st.text(min_size=1, max_size=20).filter(lambda t: t.strip())
ratings = st.sampled_from([-1, 0, 1, None])


@st.composite
def solutions(draw):
    n = draw(st.integers(0, 6))
    steps = []
    for _ in range(n):
        comps = draw(st.lists(st.builds(Completion, texts, ratings, st.sampled_from([None, True, False]),
                                        st.one_of(st.none(), st.floats(0, 1))), min_size=1, max_size=3))
        chosen = draw(st.one_of(st.none(), st.integers(0, len(comps) - 1)))
        human = Completion(draw(texts)) if chosen is None else None
        steps.append(Step(comps, chosen, human))
    return Solution(Problem(draw(texts), answer=draw(st.one_of(st.none(), texts))), steps,
                    id=draw(st.one_of(st.none(), texts)), grade=draw(st.sampled_from([None, "correct", "incorrect"])),
                    generation=draw(st.one_of(st.none(), st.integers(-1, 12))))


@given(solutions())
def test_dict_round_trip(sol):
    assert Solution.from_dict(json.loads(json.dumps(sol.to_dict()))) == sol


@given(solutions())
def test_one_rating_per_taken_step(sol):
    assert len(sol.ratings) == len(sol.texts) == len([s for s in sol.steps if s.taken is not None])


@pytest.mark.parametrize("record, field", [
    ({"steps": []}, "problem"),
    ({"problem": {"problem": 3}}, "problem.problem"),
    ({"problem": {"problem": "x"}, "steps": [{"completions": [{"text": "a", "rating": 2}]}]}, "steps[0].completions[0].rating"),
    ({"problem": {"problem": "x"}, "steps": [{"completions": [{"text": "a", "rating": True}]}]}, "steps[0].completions[0].rating"),
    ({"problem": {"problem": "x"}, "steps": [{"completions": [{"text": "  "}]}]}, "steps[0].completions"),
    ({"problem": {"problem": "x"}, "steps": [{"completions": [{"text": "a", "value": 1.5}]}]}, "steps[0].completions[0].value"),
    ({"problem": {"problem": "x"}, "steps": [{"completions": [{"text": "a"}], "chosen": 3}]}, "steps[0].chosen"),
    ({"problem": {"problem": "x"}, "grade": "maybe"}, "grade"),
    ({"problem": {"problem": "x"}, "labeler": "typo"}, "labeler"),
])
def test_errors_name_the_field(record, field):
    with pytest.raises(SchemaError) as e:
        Solution.from_dict(record)
    assert e.value.field == field


def test_file_errors_name_file_line_and_field(tmp_path):
    path = tmp_path / "bad.jsonl"
    good = json.dumps(Solution.from_steps("p", ["a"]).to_dict())
    path.write_text(f"{good}\n{{not json\n")
    with pytest.raises(RecordError) as e:
        list(read_solutions(path))
    assert e.value.line == 2 and str(path) in str(e.value)
    path.write_text(f'{good}\n\n{{"problem": {{"problem": "p"}}, "steps": [{{"completions": [{{"text": "a", "rating": 5}}]}}]}}\n')
    with pytest.raises(RecordError) as e:
        list(read_solutions(path))
    assert (e.value.line, e.value.field) == (3, "steps[0].completions[0].rating")


def test_skip_invalid_keeps_going(tmp_path):
    path = tmp_path / "mixed.jsonl"
    good = json.dumps(Solution.from_steps("p", ["a"]).to_dict())
    path.write_text(f'{good}\n{{broken\n{good}\n{{"problem": {{}}}}\n{good}\n')
    with pytest.raises(RecordError):
        list(read_solutions(path))
    with RejectWriter(tmp_path / "rejects.jsonl") as rejects:
        got = list(read_solutions(path, rejects=rejects))
    assert len(got) == 3 and rejects.count == 2
    malformed, missing = [json.loads(line) for line in (tmp_path / "rejects.jsonl").read_text().splitlines()]
    assert (malformed["line"], malformed["record"]) == (2, "{broken")
    assert (missing["line"], missing["field"]) == (4, "problem.problem")


def test_gzip_and_formats(tmp_path):
    sols = [Solution.from_steps(f"p{i}", ["a", "b"], ratings=[1, -1]) for i in range(3)]
    gz = tmp_path / "x.jsonl.gz"
    assert write_records(gz, sols) == 3
    assert gzip.open(gz, "rt").read().count("\n") == 3
    assert list(read_solutions(gz)) == sols
    pretty = tmp_path / "x.json"
    pretty.write_text("\n".join(json.dumps(s.to_dict(), indent=4) for s in sols))
    assert [r.line for r in iter_json(pretty)][:2] == [1, 1 + json.dumps(sols[0].to_dict(), indent=4).count("\n") + 1]
    assert list(read_solutions(pretty)) == sols
    array = tmp_path / "a.json"
    array.write_text(json.dumps([s.to_dict() for s in sols]))
    assert list(read_solutions(array)) == sols


def test_atomic_output_never_leaves_half_a_file(tmp_path):
    out = tmp_path / "out.jsonl"
    out.write_text("previous\n")
    with pytest.raises(RuntimeError), atomic_output(out) as f:
        f.write("half")
        raise RuntimeError("interrupted")
    assert out.read_text() == "previous\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]
    write_records(out, [])
    assert out.stat().st_mode & 0o044  # readable by others, as any file the user writes
    with pytest.raises(ValueError, match="same file"):
        write_records(out, [], inputs=[out])


# --- the fast paths: plainly valid records read without the full checks, with the same result --------------

_ODD = st.one_of(st.none(), st.booleans(), st.integers(-2, 3), st.floats(allow_nan=True), st.text(max_size=3),
                 st.just([]), st.just({}))
_COMPLETION = st.fixed_dictionaries({}, optional={
    "text": st.one_of(st.sampled_from(["A + 1 : 2 + 1 = 3", " ", ""]), _ODD),
    "rating": st.one_of(st.sampled_from([-1, 0, 1]), _ODD), "flagged": _ODD,
    "value": st.one_of(st.floats(0, 1), _ODD), "source": st.one_of(st.sampled_from(["oracle", "human", "x"]), _ODD),
    "meta": _ODD, "typo": _ODD})
_STEP = st.fixed_dictionaries({}, optional={
    "completions": st.one_of(st.lists(_COMPLETION, max_size=3), _ODD), "chosen": _ODD, "human": st.one_of(_COMPLETION, _ODD),
    "scores": st.one_of(st.just({"p_pos": 0.5}), _ODD), "meta": _ODD, "typo": _ODD})


def _full(cls, d):
    """What the full checks make of ``d``: the object, or the error's text."""
    from unittest import mock

    from prmkit import schema

    with mock.patch.object(schema, "_plain_completion", lambda d: None), mock.patch.object(schema, "_plain_step", lambda d: None):
        try:
            return cls.from_dict(d)
        except SchemaError as e:
            return str(e)


def _fast(cls, d):
    try:
        return cls.from_dict(d)
    except SchemaError as e:
        return str(e)


@given(_COMPLETION)
def test_a_completion_read_by_the_fast_path_is_what_the_full_checks_make(d):
    assert _fast(Completion, d) == _full(Completion, d)


@given(_STEP)
def test_a_step_read_by_the_fast_path_is_what_the_full_checks_make(d):
    assert _fast(Step, d) == _full(Step, d)


@given(st.lists(_STEP, max_size=3))
def test_a_solution_s_steps_read_by_the_fast_path_are_what_the_full_checks_make(steps):
    d = {"problem": {"problem": "Start at 2."}, "steps": steps}
    assert _fast(Solution, d) == _full(Solution, d)
