"""The HTML of every prmkit page (evaluation report, lab report, study pages), from Jinja2 templates.

The templates live in ``prmkit/templates/`` and are autoescaped: text passed in is escaped, and the
HTML these functions return is marked safe (``markupsafe.Markup``), so blocks nest without double
escaping. The blocks: :func:`table` (in a container that scrolls sideways when the table is wider than
the page, its first column, the row names, staying in view), :func:`figure` (a PNG embedded as base64,
so a page needs no other file), :func:`bon_section` and :func:`steps_section` (the results of
``prmkit eval bon`` / ``steps``), :func:`comparison_table` (each scorer against majority voting, narrow:
it fits the page whatever the number of scorers), :func:`warnings_box` and :func:`provenance_block`
(boxes that stand out at the top of a report), :func:`collapsed` and :func:`config_block` (a
configuration, collapsed) and :func:`page` (a whole self-contained page around them).

>>> str(table(["N", "acc"], [["1", "<b>"]]))
"<div class='table-wrap'><table><tr><th>N</th><th>acc</th></tr><tr><td>1</td><td>&lt;b&gt;</td></tr></table></div>"
>>> "Reproduce with <code>prmkit x</code>" in page("t", [table(["a"], [])], command="prmkit x")
True
"""

from __future__ import annotations

import base64
import functools
import json
import os
from pathlib import Path

from markupsafe import Markup


@functools.cache
def environment():
    """The Jinja2 environment over ``prmkit/templates`` (autoescaping, undefined names are errors)."""
    import jinja2

    return jinja2.Environment(loader=jinja2.PackageLoader("prmkit", "templates"), autoescape=True,
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=False)


def render(template: str, **context) -> Markup:
    """One template rendered, as safe HTML."""
    return Markup(environment().get_template(template).render(**context).strip())


@functools.cache
def css() -> str:
    """The style sheet every page embeds."""
    return environment().loader.get_source(environment(), "style.css")[0].strip()


def table(header: list[str], rows: list[list[str]], cls: str = "") -> Markup:
    """An HTML table in a sideways-scrolling container; cells are text (escaped) or HTML from these
    functions; ``cls`` is the table's class (``kv``: a key/value table, text left-aligned and wrapped)."""
    return render("table.html.j2", header=header, rows=rows, cls=cls)


def compact(value) -> str:
    """A configuration value on one line: JSON, nested mappings as ``key=value``.

    >>> compact({"steps": [6, 8], "family": "ledger", "rm": {"lr": 0.001}})
    'steps=[6, 8], family="ledger", rm={"lr": 0.001}'
    """
    if isinstance(value, dict):
        return ", ".join(f"{k}={json.dumps(v, default=str, separators=(', ', ': '))}" for k, v in value.items())
    return json.dumps(value, default=str, separators=(", ", ": "))


def config_block(config: dict | str) -> Markup:
    """A configuration (``dataclasses.asdict``, or its JSON text) under a "Configuration" heading, collapsed
    in a ``<details>``: one row per field, the value :func:`compact`."""
    if isinstance(config, str):
        config = json.loads(config)
    rows = [[key, compact(value)] for key, value in config.items()]
    return render("config.html.j2", fields=len(rows), table=table(["field", "value"], rows, cls="kv"))


def figure(path: str | os.PathLike) -> Markup:
    """A PNG embedded as base64, or a note when the file is missing."""
    path = Path(path)
    data = base64.b64encode(path.read_bytes()).decode("ascii") if path.exists() else ""
    return render("figure.html.j2", name=path.name, data=data)


def page(title: str, body: list, heading: str | None = None, command: str | None = None,
         config: dict | str | None = None) -> str:
    """A self-contained page: ``heading`` (default ``title``), the command that reproduces it (when given),
    the ``body`` fragments (HTML from these functions, or text), the configuration (when given, a dict or
    its JSON text: :func:`config_block`)."""
    return str(render("page.html.j2", title=title, heading=heading, command=command, body=body,
                      config=None if config is None else config_block(config), css=Markup(css())))


def pct(x: float) -> str:
    """A fraction as a percentage with one decimal: ``0.1234`` -> ``12.3``."""
    return f"{100 * x:.1f}"


def bon_section(result: dict) -> Markup:
    """Every number of a ``prmkit eval bon`` result under a heading naming its source (:func:`bon_table`)."""
    return render("bon.html.j2", source=result.get("source", []), body=bon_table(result))


def bon_table(result: dict) -> Markup:
    """Every number of a ``prmkit eval bon`` result: each curve at each N with its CI, and the first sample."""
    from prmkit.evaluate.curves import curve_rows

    names, rows = curve_rows(result)
    first = result["curves"]["first_acc"]
    return render("bon_table.html.j2", pool=result["pool"], table=table(["N", *names], rows),
                  first=f"{pct(first['estimate'][0])} [{pct(first['ci_low'][0])}, {pct(first['ci_high'][0])}]")


def comparison_table(source: str, groups: list[dict], majority: bool = True, paired: bool = False) -> Markup:
    """Each scorer against majority voting: one block of rows per N (``N``, pass@N and majority once, then
    a row per scorer: its best-of-N and the difference), from ``prmkit.evaluate.report.comparison_groups``.
    Six columns whatever the number of scorers, so it fits the page. ``majority``: the result has a
    majority vote; ``paired``: the differences carry paired intervals (coloured where they exclude 0). Where
    the pool knew each sample's step validity, the step-judge limit and each scorer's valid-solution
    accuracy join it (two columns more)."""
    return render("compare.html.j2", source=source, groups=groups, majority=majority, paired=paired,
                  scorers=any(g["rows"] for g in groups), gold=any(g.get("step_limit") for g in groups))


def warnings_box(items: list[tuple[str, str]]) -> Markup:
    """A box of warnings, ``(where, sentence)`` each; ``where`` (a result file) is shown when there are several."""
    return render("warnings.html.j2", items=items, many=len({where for where, _ in items}) > 1)


def provenance_block(blocks: list[tuple[str, list[list[str]]]]) -> Markup:
    """What produced the numbers: per result (``(name, [[what, value], ...])``) a key/value table."""
    return render("provenance.html.j2", blocks=[(name, table([], rows, cls="kv")) for name, rows in blocks])


def collapsed(summary: str, body) -> Markup:
    """``body`` in a closed ``<details>`` whose ``summary`` says what it holds."""
    return render("collapsed.html.j2", summary=summary, body=body)


def steps_section(result: dict) -> Markup:
    """A ``prmkit eval steps`` result: per subset accuracies and F1, the threshold, AUROC and calibration."""
    rows = [[name, str(s["n"]), pct(s["acc_erroneous"]), pct(s["acc_correct"]), pct(s["f1"])]
            for name, s in result["subsets"].items()]
    lines = [Markup("mean F1 over subsets: <b>{}</b>").format(pct(result["mean_f1"])),
             f"threshold {result['threshold']:.3f}, chosen on {', '.join(result.get('threshold_chosen_on', []))}"]
    for key, label in (("step_auroc", "step AUROC"), ("step_accuracy", "step accuracy at the threshold")):
        if key in result:
            lines.append(f"{label}: {result[key]:.3f}")
    if result.get("calibration"):
        lines.append(f"expected calibration error: {result['calibration']['ece']:.3f}")
    return render("steps.html.j2", source=result.get("source", []), lines=lines,
                  table=table(["subset", "solutions", "acc. erroneous", "acc. correct", "F1"], rows))


__all__ = ["bon_section", "bon_table", "collapsed", "compact", "comparison_table", "config_block", "css", "environment",
           "figure", "page", "pct", "provenance_block", "render", "steps_section", "table", "warnings_box"]
