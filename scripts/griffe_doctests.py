"""A griffe extension for the documentation site: a docstring's doctest blocks (``>>>`` lines and their
output) become fenced ``pycon`` code, as they read in a terminal. Without it Markdown reads an output such
as ``['a', 'b']`` after a ``[...]`` line as a reference link, and mkdocs's strict build fails on it."""

from __future__ import annotations

import griffe


def fence_doctests(text: str) -> str:
    """Every run of lines from a ``>>>`` line to the next blank line, fenced (indentation kept).

    >>> fence_doctests("Text.\\n\\n>>> [1][0]\\n1\\n\\nMore.")
    'Text.\\n\\n```pycon\\n>>> [1][0]\\n1\\n```\\n\\nMore.'
    """
    out, block = [], []
    for line in [*text.split("\n"), ""]:
        if block and not line.strip():
            indent = block[0][: len(block[0]) - len(block[0].lstrip())]
            out += [f"{indent}```pycon", *block, f"{indent}```"]
            block = []
        if block or line.lstrip().startswith(">>>"):
            block.append(line)
        else:
            out.append(line)
    return "\n".join(out[:-1])


class FenceDoctests(griffe.Extension):
    def on_object(self, *, obj, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = fence_doctests(obj.docstring.value)
