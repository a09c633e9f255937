"""One self-contained HTML page for a run folder: tables of every number, figures embedded as base64.

A run folder holds what ``prmkit eval bon`` and ``prmkit eval steps`` wrote: JSON results (``kind``
``"bon"`` or ``"steps"``) naming their figures under ``"figures"``. The page needs no other file. Top to
bottom: what produced the numbers (:func:`provenance_rows`, from the ``provenance`` that ``eval bon``
records with :func:`read_provenance`), the warnings the command printed (:func:`result_warnings`), then
per best-of-N result each scorer against majority voting at each N (:func:`comparison_groups`, narrow
enough for any page), the figure, and every number in the wide table, collapsed.

>>> import os, tempfile
>>> run = tempfile.mkdtemp()
>>> html = render_report(run, [{"kind": "steps", "source": ["x.json"], "threshold": 0.5, "mean_f1": 0.8,
...     "subsets": {"x": {"n": 2, "n_erroneous": 1, "n_correct": 1, "acc_erroneous": 1.0, "acc_correct": 0.5,
...     "f1": 0.667}}, "figures": []}])
>>> "ProcessBench" in html and "0.500" in html
True
"""

from __future__ import annotations

import datetime
import json
import os
from collections import Counter
from pathlib import Path

import numpy as np
from markupsafe import Markup

from prmkit.evaluate.bootstrap import bootstrap_ci
from prmkit.evaluate.curves import missing_score_notes
from prmkit.evaluate.html import (
    bon_table,
    collapsed,
    comparison_table,
    figure,
    page,
    pct,
    provenance_block,
    steps_section,
    table,
    warnings_box,
)
from prmkit.io import atomic_output, iter_json

PROVENANCE_RECORDS = 10_000
"""Records :func:`read_provenance` reads from the top of a pool file: enough to name its models, cheap
next to evaluating a million samples (the page says when it stopped short of the end)."""
_PER_RECORD_META = {"prmkit_score_position"}  # a record's own position, not provenance
_MAX_META_VALUES = 5  # a key with more distinct values is per-record (an id), not provenance


def load_results(run_dir: str | os.PathLike) -> list[dict]:
    """Every prmkit result JSON in ``run_dir`` (files with a ``kind`` of ``bon``, ``steps`` or ``rl``), sorted by
    name."""
    out = []
    for path in sorted(Path(run_dir).glob("*.json")):
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
        if isinstance(value, dict) and value.get("kind") in ("bon", "steps", "rl"):
            value["_file"] = path.name
            out.append(value)
    return out


def write_report(run_dir: str | os.PathLike, out: str | os.PathLike | None = None) -> Path:
    """Write ``RUN_DIR/report.html`` (or ``out``); raise ValueError when the folder has no results."""
    results = load_results(run_dir)
    if not results:
        raise ValueError(f"no evaluation results (*.json from prmkit eval) in {run_dir}")
    target = Path(out) if out else Path(run_dir) / "report.html"
    with atomic_output(target) as f:
        f.write(render_report(run_dir, results))
    return target


def render_report(run_dir: str | os.PathLike, results: list[dict]) -> str:
    """The HTML text of the report for ``results`` (figures are read from ``run_dir``)."""
    body = [Markup("<p class='note'>run folder <code>{}</code>; definitions in docs/evaluation.md.</p>").format(
        str(run_dir)), provenance_block([(_label(r), provenance_rows(r)) for r in results])]
    warnings = [(_label(r), line) for r in results for line in result_warnings(r)]
    if warnings:
        body.append(warnings_box(warnings))
    for result in results:
        if result["kind"] == "bon":
            body.extend(bon_part(run_dir, result))
        elif result["kind"] == "rl":
            body.extend(rl_part(run_dir, result))
        else:
            body.append(steps_section(result))
            body.extend(figure(Path(run_dir) / name) for name in result.get("figures", []))
    return page(f"prmkit report: {Path(run_dir).name}", body, heading="prmkit evaluation report")


def _label(result: dict) -> str:
    return result.get("_file") or ", ".join(result.get("source", [])) or result["kind"]


def bon_part(run_dir, result: dict) -> list[Markup]:
    """A best-of-N result on the page: the comparison with majority voting first (it fits the page), the
    figure, then every number (the wide table, collapsed)."""
    kept = result.get("per_problem", {})
    parts = [comparison_table(", ".join(Path(s).name for s in result.get("source", [])), comparison_groups(result),
                              majority="maj_acc" in result["curves"], paired="maj_acc" in kept)]
    parts.extend(figure(Path(run_dir) / name) for name in result.get("figures", []))
    parts.append(collapsed("Every number: each method at each N (a wide table that scrolls sideways)",
                           bon_table(result)))
    return parts


def rl_part(run_dir, result: dict) -> list[Markup]:
    """An RL run (``prmkit rl``): its evaluations on held-out problems, the figure, TRL's per-step log."""
    header = ["step", "proxy", "gold", "KL (nats)", "steps", "tokens", "answerless", "repeated steps", "samples"]
    rows = [[str(r["step"]), f"{r['proxy']:.3f}", "-" if r.get("gold") is None else pct(r["gold"]), f"{r['kl']:.3f}",
             f"{r['steps']:.1f}", f"{r['tokens']:.1f}", pct(r["answerless"]), pct(r["repeated_steps"]),
             str(r["samples"])] for r in result["records"]]
    parts = [Markup("<h2>RL against {}</h2>").format(result["config"]["reward"]), table(header, rows)]
    parts.extend(figure(Path(run_dir) / name) for name in result.get("figures", []))
    keys = ("step", "reward", "reward_std", "kl", "loss", "completions/mean_length")
    history = [[f"{h[k]:.4g}" if isinstance(h.get(k), float) else str(h.get(k, "-")) for k in keys]
               for h in result.get("history", [])]
    parts.append(collapsed("TRL's log, every optimiser step", table(list(keys), history)))
    return parts


# --- each scorer against majority voting --------------------------------------------------------------

def comparison_curves(columns: list[str], vote: bool = True) -> tuple[str, ...]:
    """The curves whose per-problem values the comparison needs for paired intervals of the difference:
    ``evaluate_pool(..., per_problem=comparison_curves(columns))``.

    >>> comparison_curves(["prm_min", "orm"])
    ('bon_acc[prm_min]', 'bon_acc[orm]', 'maj_acc')
    >>> comparison_curves(["orm"], vote=False)
    ()
    """
    return (*(f"bon_acc[{c}]" for c in columns), "maj_acc") if vote else ()


def scorer_curves(result: dict) -> list[str]:
    """The best-of-N curves of a result, in the order of its score columns."""
    return [k for k in result["curves"] if k.startswith("bon_acc[")]


def comparison_groups(result: dict) -> list[dict]:
    """Per N: pass@N, majority vote, and per scorer its best-of-N and the difference from majority, as text
    (percent; points for the difference). ``sign`` is ``better``/``worse`` when the difference's paired 95%
    interval excludes 0, which needs the per-problem values (:func:`comparison_curves`); else ``""``.

    >>> from prmkit.evaluate.curves import evaluate_pool
    >>> from prmkit.evaluate.pool import pool_from_lists
    >>> pool = pool_from_lists([["1", "2", "2"]] * 4, [[1, 0, 0]] * 4, {"rm": [[.9, .1, .2]] * 4}, answer_key="exact")
    >>> res = evaluate_pool(pool, ["rm"], [3], n_boot=50, per_problem=comparison_curves(["rm"]))
    >>> g = comparison_groups(res)[0]
    >>> g["n"], g["majority"], g["rows"][0]["bon"], g["rows"][0]["diff"], g["rows"][0]["sign"]
    (3, '0.0 [0.0, 0.0]', '100.0 [100.0, 100.0]', '+100.0 [+100.0, +100.0]', 'better')
    """
    curves, groups = result["curves"], []
    for j, n in enumerate(result["ns"]):
        rows = [{"scorer": name[len("bon_acc["):-1], "bon": _with_ci(curves[name], j),
                 "valid": _with_ci(curves[f"valid_acc[{name[8:-1]}]"], j) if "step_limit" in curves else "",
                 **_difference(result, name, j)} for name in scorer_curves(result)]
        groups.append({"n": n, "pass": pct(curves["pass"]["estimate"][j]) if "pass" in curves else "",
                       "step_limit": pct(curves["step_limit"]["estimate"][j]) if "step_limit" in curves else "",
                       "majority": _with_ci(curves["maj_acc"], j) if "maj_acc" in curves else "not computed",
                       "rows": rows})
    return groups


def _with_ci(curve: dict, j: int) -> str:
    return f"{pct(curve['estimate'][j])} [{pct(curve['ci_low'][j])}, {pct(curve['ci_high'][j])}]"


def _difference(result: dict, name: str, j: int) -> dict:
    """``scorer - majority`` at the j-th N, with its paired bootstrap interval when the result kept the
    per-problem values: the same seed and resample count as the evaluation, so the same resamples of
    problems, which is what makes the two curves' intervals paired."""
    curves = result["curves"]
    if "maj_acc" not in curves:
        return {"diff": "", "sign": ""}
    diff = curves[name]["estimate"][j] - curves["maj_acc"]["estimate"][j]
    kept = result.get("per_problem", {})
    if name not in kept or "maj_acc" not in kept:
        return {"diff": f"{100 * diff:+.1f}", "sign": ""}
    per_problem = np.asarray(kept[name], float)[:, j] - np.asarray(kept["maj_acc"], float)[:, j]
    settings = result.get("settings", {})
    low, high = bootstrap_ci(per_problem, settings.get("bootstrap_resamples", 2000), settings.get("ci_level", 0.95),
                             settings.get("seed", 0))
    sign = "better" if low[0] > 0 else "worse" if high[0] < 0 else ""
    return {"diff": f"{100 * diff:+.1f} [{100 * low[0]:+.1f}, {100 * high[0]:+.1f}]", "sign": sign}


# --- what the command warned about --------------------------------------------------------------------

def result_warnings(result: dict) -> list[str]:
    """The warnings ``prmkit eval`` printed with this result, as sentences: samples without a score (and
    why, when truncation at scoring is the cause), samples left out as ungradable, answer groups whose
    grades disagree, no majority vote to compare with; for ``eval steps``, unlabelled solutions skipped.

    >>> result_warnings({"kind": "steps", "skipped_unlabelled": {"gsm8k": 3, "math": 0}})
    ['3 solutions of gsm8k have no labelled step and were left out']
    """
    if result["kind"] == "steps":
        return [f"{n} solutions of {name} have no labelled step and were left out"
                for name, n in result.get("skipped_unlabelled", {}).items() if n]
    if result["kind"] == "rl":
        return ["the held-out problems have no answers: gold is not measured"] if all(
            r.get("gold") is None for r in result["records"]) else []
    lines: list[str] = []
    for note in missing_score_notes(result):
        if note.startswith(" ") and lines:  # an indented note explains the warning above it
            lines[-1] += " " + note.strip()
        else:
            lines.append(note.removeprefix("warning: "))
    pool = result["pool"]
    if pool.get("ungradable_left_out"):
        lines.append(f"{pool['ungradable_left_out']} samples left out as ungradable (grade unparseable: the grader "
                     "could not decide them); they use no budget and count neither right nor wrong")
    if pool.get("answer_groups_with_mixed_grades"):
        lines.append(f"{pool['answer_groups_with_mixed_grades']} answer groups hold both correct and incorrect "
                     "samples (the grader's equivalence and the file's grades disagree): a vote for such a group "
                     "counts as the share of its drawn members graded correct")
    for name, stamps in (result.get("provenance") or {}).get("scored_by", {}).items():
        if len(stamps) > 1:
            lines.append(f"the scores named {name} come from {len(stamps)} different models or settings "
                         "(meta.scored_by differs between records): one column mixes them")
    if "maj_acc" not in result["curves"]:
        lines.append("majority voting was not computed (eval bon --no-vote): the scorers have no baseline here")
    return lines


# --- what produced the numbers ------------------------------------------------------------------------

SCORED_BY = "scored_by"
"""The records' ``meta`` key where ``prmkit score`` names, per score name (``prm``, ``orm``), the model and
settings that wrote those scores (``prmkit.score.SCORED_BY``; its value, the stamp, is shown as written)."""


def read_provenance(path: str | os.PathLike, fmt: str, columns: list[str],
                    limit: int = PROVENANCE_RECORDS) -> dict:
    """What the records of a pool file say about their origin, for the report's provenance block.

    The file (name, bytes, time modified) and the score columns evaluated; from up to ``limit`` prmkit
    records: the model behind each score name (``meta.scored_by``, each distinct stamp with the number of
    records carrying it), the models that wrote the solutions (``generator.name``), and the other metadata
    the records share (``meta``, one level flattened to ``key.sub``; keys with many distinct values are ids,
    not provenance). Other formats carry none of this.
    """
    stat = Path(path).stat()
    out = {"inputs": [{"path": str(path), "bytes": stat.st_size, "modified": datetime.datetime.fromtimestamp(
        stat.st_mtime, datetime.UTC).isoformat(timespec="seconds")}], "format": fmt, "columns": list(columns)}
    if fmt != "prmkit":
        return out
    generators, scored_by, meta, read = Counter(), {}, {}, 0
    for raw in iter_json(path):
        if read == limit:
            out["stopped_after"] = limit
            break
        read += 1
        record_meta = raw.value.get("meta") or {}
        generators[(raw.value.get("generator") or {}).get("name", "")] += 1
        for name, stamp in (record_meta.get(SCORED_BY) or {}).items():
            scored_by.setdefault(name, Counter())[stamp_text(stamp)] += 1
        for key, value in _flat_meta(record_meta):
            meta.setdefault(key, Counter())[value] += 1
    out.update(records_read=read, scored_by={k: dict(v) for k, v in scored_by.items()},
               generators={k: n for k, n in generators.items() if k},
               meta={k: dict(v) for k, v in meta.items() if len(v) <= _MAX_META_VALUES})
    return out


def stamp_text(stamp) -> str:
    """One ``meta.scored_by`` stamp on a line: the model, then its other fields (a digest cut to 12 characters).

    >>> stamp_text({"model": "/runs/prm", "weights": "ab" * 32, "kind": "prm", "aggregations": ["min"]})
    '/runs/prm (weights ababababab…, kind prm, aggregations min)'
    """
    if not isinstance(stamp, dict):
        return str(stamp)
    rest = []
    for key, value in stamp.items():
        if key == "model" or value in ("", [], None):
            continue
        text = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
        rest.append(f"{key} {text[:10] + '…' if key == 'weights' and len(text) > 12 else text}")
    return f"{stamp.get('model', '?')} ({', '.join(rest)})" if rest else str(stamp.get("model", "?"))


def _flat_meta(meta: dict, prefix: str = ""):
    """``(key, text)`` of every scalar in ``meta`` but the scorers' stamps, one level of nesting as ``key.sub``."""
    for key, value in meta.items():
        if f"{prefix}{key}" in _PER_RECORD_META or (not prefix and key == SCORED_BY):
            continue
        if isinstance(value, dict) and not prefix:
            yield from _flat_meta(value, f"{key}.")
        elif isinstance(value, (str, int, float, bool)):
            yield f"{prefix}{key}", str(value)[:200]


def score_name_of(column: str, names) -> str | None:
    """The score name (``prmkit score --name``) among ``names`` that wrote ``column``: ``prm_min`` and the step
    spec ``prm2_p_correct:min`` by their prefix, ``orm`` by itself, unprefixed step keys (``p_correct:min``) by ``prm``.

    >>> score_name_of("prm_min", ["prm", "orm"]), score_name_of("p_correct:min", ["prm"]), score_name_of("x", ["prm"])
    ('prm', 'prm', None)
    """
    base = column.split(":")[0]
    found = [n for n in names if base == n or base.startswith(f"{n}_")]
    if found:
        return max(found, key=len)
    return "prm" if ":" in column and "prm" in names else None


def provenance_rows(result: dict) -> list[list[str]]:
    """The provenance block's rows for one result: ``[what, value]``, from its recorded ``provenance``
    (:func:`read_provenance`), else what the result itself names (its sources and score columns).

    >>> provenance_rows({"kind": "steps", "source": ["a.json"], "score_key": "p_correct"})
    [['data', 'a.json'], ['scores', 'p_correct (per step)']]
    """
    if result["kind"] == "steps":
        return [["data", ", ".join(result.get("source", []))], ["scores", f"{result.get('score_key', '?')} (per step)"]]
    if result["kind"] == "rl":
        cfg, ident = result["config"], result["identity"]
        reward = (f"{cfg['reward']} (weights {ident['reward_weights']}; credit {cfg['credit'] or 'default'}, "
                  f"answer weight {cfg['answer_weight']})")
        problems = (f"{result['problems']} ({ident['problems']}): {result['train_problems']} trained on, "
                    f"{result['held_out_problems']} held out")
        return [["policy", f"{cfg['policy']} (weights {ident['policy_weights']})"], ["reward", reward],
                ["problems", problems], ["command", result.get("command") or "(from Python)"]]
    prov, pool = result.get("provenance") or {}, result["pool"]
    columns = result.get("settings", {}).get("columns") or [k[len("bon_acc["):-1] for k in scorer_curves(result)]
    rows = [["data", "; ".join(_file_text(f) for f in prov.get("inputs", [])) or ", ".join(result.get("source", []))],
            ["pool", f"{pool['problems']} problems, {pool['samples']} samples, format {pool.get('format', '?')}"]]
    if "records_read" not in prov:
        why = (f"the {prov.get('format')} format names no models" if prov
               else "this result was written before eval bon recorded provenance")
        return rows + [["scores evaluated", ", ".join(columns)], ["models", f"not recorded ({why})"]]
    rows += [["scored by", f"{', '.join(cols)}: {text}"] for cols, text in _scorers(prov, columns)]
    rows.append(["solutions written by", _tally(prov.get("generators", {})) or "not named in the records"])
    rows.append(["record metadata", _counts(prov.get("meta", {})) or "none shared by the records"])
    rows.append(["records read for this block", f"{prov['records_read']}" + (
        f" (the first {prov['stopped_after']}; the file has more)" if "stopped_after" in prov else " (all)")])
    return rows


def _scorers(prov: dict, columns: list[str]) -> list[tuple[list[str], str]]:
    """The evaluated columns grouped by the model the records name for them: ``[(columns, that model)]``."""
    scored_by = prov.get("scored_by", {})
    groups: dict[str | None, list[str]] = {}
    for col in columns:
        groups.setdefault(score_name_of(col, scored_by), []).append(col)
    out = []
    for name, cols in groups.items():
        if name is None:
            out.append((cols, "not named in the records (no meta.scored_by for them)"))
            continue
        stamps = scored_by[name]
        where = "" if sum(stamps.values()) == prov["records_read"] else f" in {sum(stamps.values())} records"
        out.append((cols, f"{name}{where}: " + (next(iter(stamps)) if len(stamps) == 1 else _tally(stamps))))
    return out


def _file_text(entry: dict) -> str:
    return f"{entry['path']} ({entry['bytes']:,} bytes, modified {entry['modified']})"


def _tally(values: dict) -> str:
    """``{"a": 3, "b": 1}`` -> ``"a (3), b (1)"``, most frequent first."""
    return ", ".join(f"{k} ({n})" for k, n in sorted(values.items(), key=lambda kv: -kv[1]))


def _counts(meta: dict) -> str:
    """Metadata keys with their values: ``key: value`` when all records agree, else each value's count."""
    return "; ".join(f"{k}: {next(iter(v))}" if len(v) == 1 else f"{k}: {_tally(v)}" for k, v in meta.items())


__all__ = ["PROVENANCE_RECORDS", "SCORED_BY", "bon_part", "comparison_curves", "comparison_groups", "load_results",
           "provenance_rows", "read_provenance", "render_report", "result_warnings", "score_name_of", "scorer_curves",
           "stamp_text", "write_report"]
