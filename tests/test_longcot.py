"""Long chains of thought cut into steps: lossless segmentation, packing budget, re-split in ``data convert``."""

from __future__ import annotations

import json
from itertools import accumulate

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prmkit import cli
from prmkit.longcot import LONG_MODES, count_words, resplit, segment, split_long
from prmkit.schema import Problem, Solution

# Pieces that exercise every rule: blank lines with spaces, \r\n, decimals, abbreviations, list
# numbers, closing quotes, unicode; mixed with arbitrary text.
TOKENS = ["word", "x", " ", "  ", "\n", "\r\n", "\n\n", " \n", "\t", ". ", ".", "3.14", "e.g. ", "Fig. ", "! ",
          "?\" ", ") ", "1. ", "é", "中文", "\u2028", "\x0c"]
TEXTS = st.one_of(st.text(), st.lists(st.sampled_from(TOKENS), max_size=40).map("".join))


def _bounds(pieces: list[str]) -> set[int]:
    return set(accumulate(len(p) for p in pieces))


@settings(max_examples=300, deadline=None)
@given(TEXTS, st.sampled_from(LONG_MODES), st.integers(0, 6))
def test_segments_concatenate_back_to_the_text(text, how, max_tokens):
    pieces = segment(text, how, max_tokens)
    assert "".join(pieces) == text
    assert all(pieces)  # no empty segment


@pytest.mark.parametrize("text", ["", " ", "\n\n\n", " \r\n\t\n", "\r\n\r\n"])
@pytest.mark.parametrize("how", LONG_MODES)
def test_whitespace_only_text_gives_no_steps(text, how):
    assert "".join(segment(text, how)) == text
    assert split_long(text, how) == [] and split_long(text, how, max_tokens=3) == []


@settings(max_examples=300, deadline=None)
@given(TEXTS, st.sampled_from(LONG_MODES), st.integers(1, 6))
def test_packing_keeps_the_budget_except_for_single_oversize_pieces(text, how, max_tokens):
    pieces, packed = segment(text, how), segment(text, how, max_tokens)
    assert _bounds(packed) <= _bounds(pieces)  # packing only merges whole pieces
    for seg in packed:
        assert count_words(seg) <= max_tokens or seg in pieces, seg
    if how == "sentences":  # paragraph breaks stay boundaries when packing
        assert _bounds(segment(text, "paragraphs")) <= _bounds(packed)
    else:  # greedy: the next piece would not have fitted
        starts = dict(zip(accumulate([0] + [len(p) for p in pieces]), pieces))
        ends = list(accumulate(len(s) for s in packed))
        for seg, end in zip(packed, ends[:-1]):
            assert count_words(seg + starts[end]) > max_tokens


def test_packing_by_a_custom_token_count():
    text = "ab. cd. efgh. i."
    assert segment(text, "sentences", 8, count_tokens=len) == ["ab. cd. ", "efgh. i."]
    assert segment(text, "sentences", 2) == ["ab. cd. ", "efgh. i."]
    assert segment(text, "sentences", 1) == ["ab. ", "cd. ", "efgh. ", "i."]


def test_oversize_sentence_stays_whole():
    text = "One two three four five six. Seven."
    assert segment(text, "sentences", max_tokens=2) == ["One two three four five six. ", "Seven."]


def test_sentences_do_not_split_decimals_abbreviations_or_list_numbers():
    text = ("Take pi as 3.14 here. Use a bound, e.g. the triangle inequality (see Fig. 2). Done!\n"
            "1. Expand the square.\n2. Collect terms? Yes.")
    assert split_long(text, "sentences") == [
        "Take pi as 3.14 here.", "Use a bound, e.g. the triangle inequality (see Fig. 2).", "Done!",
        "1. Expand the square.", "2. Collect terms?", "Yes."]
    assert split_long('He said "stop." Then i.e. we stop.', "sentences") == ['He said "stop."', "Then i.e. we stop."]


def test_paragraphs_split_on_blank_lines_with_spaces_and_crlf():
    text = "a\nb\n  \n\nc\r\n\r\nd"
    assert segment(text) == ["a\nb\n  \n\n", "c\r\n\r\n", "d"]
    assert segment(text, "lines") == ["a\n", "b\n", "  \n", "\n", "c\r\n", "\r\n", "d"]


COT = """Okay, so I need to find the sum of the roots of x^2 - 5x + 6 = 0.
Hmm, let me think. By Vieta's formulas, the sum of the roots is -b/a.

Here a = 1 and b = -5, so the sum is 5. Wait, let me double-check by factoring.
x^2 - 5x + 6 = (x - 2)(x - 3), so the roots are 2 and 3.

2 + 3 = 5. That matches! Is there any catch, e.g. repeated roots? No, 2 and 3 differ.


So the sum of the roots is 5.
"""


def test_split_long_of_a_chain_of_thought():
    assert split_long(COT) == [
        ("Okay, so I need to find the sum of the roots of x^2 - 5x + 6 = 0.\n"
         "Hmm, let me think. By Vieta's formulas, the sum of the roots is -b/a."),
        ("Here a = 1 and b = -5, so the sum is 5. Wait, let me double-check by factoring.\n"
         "x^2 - 5x + 6 = (x - 2)(x - 3), so the roots are 2 and 3."),
        "2 + 3 = 5. That matches! Is there any catch, e.g. repeated roots? No, 2 and 3 differ.",
        "So the sum of the roots is 5."]
    sentences = split_long(COT, "sentences")
    assert sentences[:3] == ["Okay, so I need to find the sum of the roots of x^2 - 5x + 6 = 0.",
                             "Hmm, let me think.", "By Vieta's formulas, the sum of the roots is -b/a."]
    assert sentences[-4:] == ["That matches!", "Is there any catch, e.g. repeated roots?", "No, 2 and 3 differ.",
                              "So the sum of the roots is 5."]
    assert len(sentences) == 11
    packed = split_long(COT, "sentences", max_tokens=14)
    assert packed[:2] == ["Okay, so I need to find the sum of the roots of x^2 - 5x + 6 = 0.",  # 19 words: alone
                          "Hmm, let me think. By Vieta's formulas, the sum of the roots is -b/a."]  # 4 + 10
    assert packed[-3:] == ["2 + 3 = 5. That matches! Is there any catch, e.g. repeated roots?",  # 7 + 7
                           "No, 2 and 3 differ.", "So the sum of the roots is 5."]
    assert len(packed) == 8
    wide = split_long(COT, "sentences", max_tokens=30)  # 10 + 13 words would fit, but a paragraph ends between
    assert wide[1:3] == ["By Vieta's formulas, the sum of the roots is -b/a.",
                         "Here a = 1 and b = -5, so the sum is 5. Wait, let me double-check by factoring."]
    assert len(wide) == 6
    assert len(split_long(COT, "lines")) == 6


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="unknown split mode 'words'"):
        segment("a", "words")
    with pytest.raises(ValueError, match="max_tokens must be >= 0"):
        segment("a", max_tokens=-1)


def test_resplit_drops_labels_and_keeps_problems():
    sol = Solution.from_steps("1+1?", ["1+1 = 2. Good.", "# Answer\n\n2"], ratings=[1, 1], values=[0.9, 1.0],
                              answer="2", label_source="human", meta={"keep": 1})
    out = resplit(sol, "sentences")
    assert out.texts == ["1+1 = 2.", "Good.", "# Answer", "2"]
    assert out.ratings == [None] * 4 and out.values == [None] * 4 and out.label_source is None
    assert out.answer == "2" and out.meta == {"keep": 1, "prmkit_resplit": {
        "how": "sentences", "max_tokens": 0, "steps_before": 2}}
    assert sol.ratings == [1, 1]  # the input is not modified
    problem = Problem("2+2?")
    assert resplit(problem, "lines") is problem


@pytest.fixture
def run(monkeypatch, capsys):
    monkeypatch.setattr(cli, "GROUPS", (("data", "data"),))

    def run(*argv) -> tuple[int, str, str]:
        status = cli.main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return status, out, err
    return run


def test_convert_split_long_sentences(run, tmp_path):
    long = Solution.from_steps("Sum of roots?", [COT], ratings=[1], id="cot")
    short = Solution.from_steps("1+1?", ["1+1 = 2. So 2.", "# Answer\n\n2"], ratings=[1, -1], id="two")
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r.to_dict()) + "\n" for r in (long, short, Problem("2+2?", answer="4"))))
    out = tmp_path / "out.jsonl"
    status, stdout, err = run("data", "convert", "--from", "prmkit", "--split-long", "sentences",
                              "--step-tokens", "14", src, out)
    assert status == 0, err
    assert "read 3 records, wrote 3 rows" in stdout
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    texts = [[s["completions"][0]["text"] for s in r["steps"]] for r in rows[:2]]
    assert texts[0] == split_long(COT, "sentences", 14) and len(texts[0]) == 8
    assert texts[1] == ["1+1 = 2. So 2.", "# Answer", "2"]
    assert all("rating" not in s["completions"][0] for r in rows[:2] for s in r["steps"])
    assert rows[0]["meta"] == {"prmkit_resplit": {"how": "sentences", "max_tokens": 14, "steps_before": 1}}
    assert rows[1]["meta"]["prmkit_resplit"]["steps_before"] == 2
    assert rows[2] == {"problem": "2+2?", "answer": "4"}


def test_convert_step_tokens_needs_split_long(run, tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps(Solution.from_steps("q", ["a"]).to_dict()) + "\n")
    status, _, err = run("data", "convert", "--from", "prmkit", "--step-tokens", "5", src, tmp_path / "out.jsonl")
    assert status == 2 and "--split-long" in err and not (tmp_path / "out.jsonl").exists()
