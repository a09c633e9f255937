"""The one formatter and label placement: hand-made cases and properties."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prmkit.model.formatter import FormatConfig, TruncationReport, encode, encode_many, prepare_tokenizer
from prmkit.model.labels import first_error, p_correct, step_targets
from prmkit.model.tiny import toy_tokenizer
from prmkit.testing.toydata import make_solutions
from prmkit.train.data import build_examples, micro_batches, plan_epoch

TOK = toy_tokenizer()
prepare_tokenizer(TOK, FormatConfig(), ("+", "-", "="))

step_text = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20).filter(lambda s: s.strip())


def test_hand_made_layout():
    cfg = FormatConfig(separator="\n", marker="<step>", max_length=100)
    enc = encode(TOK, "1+1?", ["1 + 1 = 2", "# Answer 2"], cfg, targets=["a", "b"])
    assert TOK.decode(enc.input_ids) == "<s>1+1?\n1 + 1 = 2\n<step># Answer 2\n<step>"
    assert [TOK.decode([enc.input_ids[e]]) for e in enc.step_ends] == ["<step>", "<step>"]
    assert enc.step_ends[-1] == len(enc) - 1 and enc.targets == ["a", "b"] and enc.n_lost == 0


def test_no_marker_ends_at_separator():
    cfg = FormatConfig(separator="\n", marker=None)
    enc = encode(TOK, "q", ["a", "b"], cfg)
    assert [TOK.decode([enc.input_ids[e]]) for e in enc.step_ends] == ["\n", "\n"]


def test_truncation_drops_whole_steps_and_counts():
    cfg = FormatConfig(max_length=16)
    enc = encode(TOK, "q", ["1 2 3", "4 5 6", "7 8 9"], cfg, targets=[1, 2, 3])
    assert len(enc) <= 16 and enc.n_steps == 3 and len(enc.step_ends) == len(enc.targets) == 3 - enc.n_lost
    assert enc.n_lost >= 1
    report = TruncationReport()
    report.add(enc)
    assert report.steps_lost == enc.n_lost and "lost" in report.summary()


def test_problem_too_long_keeps_nothing():
    enc = encode(TOK, "x" * 50, ["a"], FormatConfig(max_length=8))
    assert enc.step_ends == [] and enc.n_lost == 1 and len(enc) == 8


def test_targets_must_match_steps():
    with pytest.raises(ValueError, match="2 steps but 1 targets"):
        encode(TOK, "q", ["a", "b"], FormatConfig(), targets=[1])


def test_chat_template():
    tok = toy_tokenizer()
    tok.chat_template = "{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}<assistant>"
    cfg = FormatConfig(chat_template=True)
    prepare_tokenizer(tok, cfg)
    enc = encode(tok, "2+2?", ["2 + 2 = 4"], cfg)
    assert tok.decode(enc.input_ids) == "<user>2+2?\n<assistant>2 + 2 = 4\n<step>"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=step_text, steps=st.lists(step_text, min_size=1, max_size=6),
       max_length=st.integers(4, 80), marker=st.sampled_from(["<step>", None]), sep=st.sampled_from(["\n", " ", ""]))
def test_properties(problem, steps, max_length, marker, sep):
    if marker is None and not sep:
        sep = "\n"
    cfg = FormatConfig(separator=sep, marker=marker, max_length=max_length)
    enc = encode(TOK, problem, steps, cfg, targets=list(range(len(steps))))
    assert len(enc.step_ends) == len(enc.targets) == len(enc.spans) == enc.n_steps - enc.n_lost
    assert enc.targets == list(range(len(enc.step_ends)))  # the kept steps are a prefix
    assert len(enc) <= max_length
    assert all(a < b for a, b in zip(enc.step_ends, enc.step_ends[1:]))
    for (start, end), text in zip(enc.spans, steps):
        assert TOK.decode(enc.input_ids[start:end]) == text  # each step's tokens decode back to its text
    full = encode(TOK, problem, steps, FormatConfig(separator=sep, marker=marker, max_length=10_000))
    assert enc.input_ids == full.input_ids[: len(enc)]  # truncation only cuts, never re-tokenises
    assert enc.step_ends == full.step_ends[: len(enc.step_ends)]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sols=st.lists(st.tuples(step_text, st.lists(step_text, min_size=0, max_size=5)), min_size=1, max_size=5),
       max_length=st.integers(4, 60), marker=st.sampled_from(["<step>", None]))
def test_encode_many_equals_one_at_a_time_and_piece_by_piece(sols, max_length, marker):
    cfg = FormatConfig(marker=marker, max_length=max_length)
    many = encode_many(TOK, sols, cfg)
    assert many == [encode(TOK, p, steps, cfg) for p, steps in sols]
    tail = TOK.encode("\n", add_special_tokens=False) + ([TOK.convert_tokens_to_ids(marker)] if marker else [])
    for (problem, steps), enc in zip(sols, many):  # the layout rebuilt from one tokenizer call per piece
        ids = TOK.encode(problem + "\n")
        for text in steps[: len(enc.step_ends)]:
            ids += TOK.encode(text, add_special_tokens=False) + tail
        assert enc.input_ids == (ids if enc.step_ends else ids[:max_length])


def test_a_tokenizer_that_pads_its_batches_still_gives_each_text_its_own_ids(tmp_path):
    """A ``tokenizer.json`` may switch padding on, and transformers leaves it on after loading: the batched
    tokenisation must not pad a short text to its neighbours' length."""
    import json

    from transformers import AutoTokenizer

    TOK.save_pretrained(tmp_path)
    spec = json.loads((tmp_path / "tokenizer.json").read_text())
    spec["padding"] = {"strategy": "BatchLongest", "direction": "Right", "pad_to_multiple_of": None,
                       "pad_id": 0, "pad_type_id": 0, "pad_token": TOK.convert_ids_to_tokens(0)}
    (tmp_path / "tokenizer.json").write_text(json.dumps(spec))
    padding = AutoTokenizer.from_pretrained(tmp_path)
    assert padding.backend_tokenizer.padding is not None  # the case under test: loaded with padding on
    sols = [("1+1?", ["1 + 1 = 2"]), ("a much longer problem than the first one?", ["a longer step than that", "x"])]
    assert encode_many(padding, sols, FormatConfig()) == encode_many(TOK, sols, FormatConfig())


ratings = st.lists(st.sampled_from([-1, 0, 1, None]), min_size=0, max_size=12)


@given(ratings, st.sampled_from(["positive", "negative"]), st.sampled_from(["first_error", "all"]))
def test_step_targets_properties(rs, neutral, supervise):
    ts = step_targets(rs, n_outputs=2, neutral=neutral, supervise=supervise)
    assert len(ts) == len(rs)  # one target slot per step
    stop = first_error(rs)
    for i, (r, t) in enumerate(zip(rs, ts)):
        if r is None or (supervise == "first_error" and stop is not None and i > stop):
            assert t is None
        else:
            assert t is not None and sum(t) == 1.0
            assert t[0] == (1.0 if r == 1 or (r == 0 and neutral == "positive") else 0.0)


@given(st.lists(st.floats(0, 1), min_size=1, max_size=8))
def test_soft_values_stay_floats(values):
    ts = step_targets([None] * len(values), values, n_outputs=2, source="value", supervise="all")
    assert [t[0] for t in ts] == values


def test_neutral_class_and_policies():
    assert step_targets([0], n_outputs=3, neutral="class") == [[0.0, 0.0, 1.0]]
    assert step_targets([0], n_outputs=2, neutral="negative") == [[0.0, 1.0]]
    with pytest.raises(ValueError, match="needs exactly 3 outputs"):
        step_targets([0], n_outputs=2, neutral="class")
    assert p_correct([0.5, 0.2, 0.3], "positive") == pytest.approx(0.8)
    assert p_correct([0.5, 0.2, 0.3], "negative") == pytest.approx(0.5)


def test_orm_examples_target_the_final_step_only():
    sols = make_solutions(8, seed=0)
    examples, _report = build_examples(sols, TOK, FormatConfig(), kind="orm")
    for ex, sol in zip(examples, sols):
        assert len(ex.positions) == len(sol.texts) and ex.n_supervised == 1 and ex.targets[-1] is not None
        assert ex.targets[-1][0] == (1.0 if sol.grade == "correct" else 0.0)


def test_orm_target_lost_to_truncation_is_counted():
    sols = make_solutions(4, seed=0)
    examples, report = build_examples(sols, TOK, FormatConfig(max_length=20), kind="orm")
    assert report.no_targets == 4 and not examples and report.truncation.steps_lost > 0


@given(st.lists(st.integers(1, 50), min_size=8, max_size=60), st.integers(1, 4), st.integers(0, 3),
       st.booleans())
def test_batch_plan_partitions(lengths, group, epoch, by_length):
    groups = plan_epoch(lengths, group * 2, seed=1, epoch=epoch, by_length=by_length)
    flat = [i for g in groups for i in g]
    assert len(flat) == len(set(flat)) == (len(lengths) // (group * 2)) * group * 2
    for g in groups:
        parts = micro_batches(g, lengths, 2)
        assert sorted(i for p in parts for i in p) == sorted(g)


def test_orm_leaves_ungradable_solutions_out_and_counts_them():
    """A grade of unparseable (the grader could not decide) is no label unless asked for as a negative."""
    import dataclasses
    sols = make_solutions(6, seed=0)
    sols = [dataclasses.replace(s, grade="unparseable", outcome=None) if i % 3 == 0 else s for i, s in enumerate(sols)]
    examples, report = build_examples(sols, TOK, FormatConfig(), kind="orm")
    assert report.ungradable == 2 and len(examples) == 4 and "2 ungradable" in report.summary()
    assert report.to_dict()["ungradable"] == 2
    examples, report = build_examples(sols, TOK, FormatConfig(), kind="orm", ungradable="negative")
    assert report.ungradable == 0 and len(examples) == 6
    assert [ex.targets[-1][0] for ex in examples][0] == 0.0
