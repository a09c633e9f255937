"""Cut a solution written as one long text (a long chain of thought) into steps.

Models that think at length write one block of prose, not a list of steps, and a PRM needs steps.
:func:`segment` cuts a text into pieces losslessly (``"".join(segment(text)) == text`` for every
string: each piece keeps its trailing whitespace); :func:`split_long` gives the steps (the pieces,
stripped, empty ones dropped); :func:`resplit` replaces the steps of a :class:`~prmkit.schema.Solution`.

Modes (:data:`LONG_MODES`):

- ``"paragraphs"``: a piece ends after a run of blank lines (lines holding only whitespace);
- ``"sentences"``: a piece ends after ``.``, ``!`` or ``?`` (and any closing quotes or brackets)
  followed by whitespace, and at every paragraph break; not after a number's decimal point (``3.14``
  has no whitespace after its ``.``), a common abbreviation (:data:`ABBREVIATIONS`: ``e.g.``, ``Fig.``)
  or a list number at the start of a line (``1. Expand``);
- ``"lines"``: a piece ends after each newline.

With ``max_tokens > 0``, consecutive pieces are packed greedily into one segment while its token
count stays within ``max_tokens``. A piece longer than the budget on its own stays whole, one segment
over budget: a sentence is never cut. In ``"sentences"`` mode a paragraph break is always a boundary,
so sentences of different paragraphs are never packed together (pack with ``"paragraphs"`` to merge
paragraphs). Tokens are counted by ``count_tokens`` (default :func:`count_words`); pass a tokenizer's
length, e.g. ``lambda s: len(tok(s).input_ids)``.

>>> text = "First, 2+2 = 4.\\n\\nThen 4*3 = 12. So the answer is 12.\\n"
>>> split_long(text)
['First, 2+2 = 4.', 'Then 4*3 = 12. So the answer is 12.']
>>> split_long(text, "sentences")
['First, 2+2 = 4.', 'Then 4*3 = 12.', 'So the answer is 12.']
>>> segment(text, "sentences", max_tokens=9)
['First, 2+2 = 4.\\n\\n', 'Then 4*3 = 12. So the answer is 12.\\n']
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

from prmkit.schema import Solution, Step

LONG_MODES = ("paragraphs", "sentences", "lines")
"""How :func:`segment` cuts a text: after blank lines, after sentences, after newlines."""

ABBREVIATIONS = frozenset({"e.g", "i.e", "cf", "vs", "al", "fig", "figs", "eq", "eqs", "dr", "mr", "mrs",
                           "ms", "prof", "approx", "resp", "ch", "sec", "thm", "def", "prop", "lem"})
"""Words (lower case, without their final dot) after which ``.`` does not end a sentence.

``etc.`` and ``no.`` are left out on purpose: they end sentences as often as not.
"""

_LINE = re.compile(r"[^\n]*\n|[^\n]+\Z")
_SENTENCE_END = re.compile(r"([.!?]+)[\"'”’)\]}»]*\s+")


def count_words(text: str) -> int:
    """The default token count: whitespace-separated words.

    >>> count_words("  x = 3.14,\\n so  y = 2x. ")
    7
    """
    return len(text.split())


def _lines(text: str) -> list[str]:
    """Lines with their newline (the last one without, if the text does not end in one)."""
    return _LINE.findall(text)


def _paragraphs(text: str) -> list[str]:
    """Pieces ending after a run of blank lines; blank lines before any text stay with the first piece.

    >>> _paragraphs("\\na\\nb\\n \\n\\nc\\r\\n\\r\\nd")
    ['\\na\\nb\\n \\n\\n', 'c\\r\\n\\r\\n', 'd']
    """
    out, start, pos, content, prev_blank = [], 0, 0, False, False
    for line in _lines(text):
        blank = line.isspace()
        if not blank and prev_blank and content:
            out.append(text[start:pos])
            start = pos
        content, prev_blank, pos = content or not blank, blank, pos + len(line)
    if start < len(text):
        out.append(text[start:])
    return out


def _continues(before: str) -> bool:
    """Whether a ``.`` right after ``before`` (the sentence so far) ends an abbreviation or a list number.

    >>> [_continues(s) for s in ("see (e.g", "Fig", "\\n  2", "x = 3", "pi is 3.14")]
    [True, True, True, False, False]
    """
    if not before or before[-1].isspace():
        return False
    word = before.rsplit(None, 1)[-1]
    if word.isdigit():  # "1. Expand" at the start of a line or sentence numbers a list
        return before[:-len(word)].rstrip(" \t")[-1:] in ("", "\n")
    return word.lstrip("([{\"'").lower() in ABBREVIATIONS


def _sentences(paragraph: str) -> list[str]:
    """Sentences of one paragraph, each with the whitespace that follows it.

    >>> _sentences("Pi is 3.14. Use it, e.g. twice! Done?\\n")
    ['Pi is 3.14. ', 'Use it, e.g. twice! ', 'Done?\\n']
    """
    out, start = [], 0
    for m in _SENTENCE_END.finditer(paragraph):
        if m.group(1) == "." and _continues(paragraph[start:m.start()]):
            continue
        out.append(paragraph[start:m.end()])
        start = m.end()
    if start < len(paragraph):
        out.append(paragraph[start:])
    return out


def _groups(text: str, how: str) -> list[list[str]]:
    """The pieces of ``text``, in groups that packing never merges across."""
    if how == "paragraphs":
        return [_paragraphs(text)]
    if how == "sentences":
        return [_sentences(p) for p in _paragraphs(text)]
    if how == "lines":
        return [_lines(text)]
    raise ValueError(f"unknown split mode {how!r} (expected one of {', '.join(LONG_MODES)})")


def _pack(pieces: list[str], max_tokens: int, count: Callable[[str], int]) -> list[str]:
    """Greedy packing: a piece joins the segment before it while the joined text fits ``max_tokens``.

    >>> _pack(["a b ", "c ", "d e f g ", "h"], 3, count_words)
    ['a b c ', 'd e f g ', 'h']
    """
    packed: list[str] = []
    for piece in pieces:
        if packed and count(packed[-1] + piece) <= max_tokens:
            packed[-1] += piece
        else:
            packed.append(piece)
    return packed


def segment(text: str, how: str = "paragraphs", max_tokens: int = 0,
            count_tokens: Callable[[str], int] | None = None) -> list[str]:
    """Cut ``text`` into pieces that concatenate back to exactly ``text`` (see the module docstring).

    >>> segment("Step one.\\nStep two.\\n\\nStep three.", "lines")
    ['Step one.\\n', 'Step two.\\n', '\\n', 'Step three.']
    >>> segment("a b. c d. e f g h.", "sentences", max_tokens=3)
    ['a b. ', 'c d. ', 'e f g h.']
    >>> segment("")
    []
    """
    if max_tokens < 0:
        raise ValueError(f"max_tokens must be >= 0 (0: no packing), got {max_tokens}")
    groups = _groups(text, how)
    if max_tokens == 0:
        return [piece for group in groups for piece in group]
    count = count_tokens or count_words
    return [seg for group in groups for seg in _pack(group, max_tokens, count)]


def split_long(text: str, how: str = "paragraphs", max_tokens: int = 0,
               count_tokens: Callable[[str], int] | None = None) -> list[str]:
    """The steps of a long text: :func:`segment`'s pieces with surrounding whitespace stripped, empty ones dropped.

    >>> split_long("Let x = 2.\\nThen x^2 = 4.\\n\\n\\n  So the answer is 4.  ", "lines")
    ['Let x = 2.', 'Then x^2 = 4.', 'So the answer is 4.']
    >>> split_long(" \\r\\n\\n\\t")
    []
    """
    return [s.strip() for s in segment(text, how, max_tokens, count_tokens) if s.strip()]


def resplit(record: Any, how: str = "paragraphs", max_tokens: int = 0,
            count_tokens: Callable[[str], int] | None = None) -> Any:
    """A solution's steps re-cut: their texts joined by a blank line, split by :func:`split_long`.

    The new steps are unlabelled (the old ratings, values and step scores do not map onto them, and
    ``label_source`` is cleared); ``meta["prmkit_resplit"]`` records how, and how many steps there were.
    Any other record (a problem) is returned as it is.

    >>> s = resplit(Solution.from_steps("1+1?", ["1+1 = 2. So 2.", "# Answer\\n\\n2"], ratings=[1, 1]),
    ...             "sentences")
    >>> s.texts, s.ratings
    (['1+1 = 2.', 'So 2.', '# Answer', '2'], [None, None, None, None])
    >>> s.meta
    {'prmkit_resplit': {'how': 'sentences', 'max_tokens': 0, 'steps_before': 2}}
    """
    if not isinstance(record, Solution):
        return record
    texts = split_long("\n\n".join(record.texts), how, max_tokens, count_tokens)
    note = {"how": how, "max_tokens": max_tokens, "steps_before": len(record.steps)}
    return dataclasses.replace(record, steps=[Step.of(t) for t in texts], label_source=None,
                               meta={**record.meta, "prmkit_resplit": note})
