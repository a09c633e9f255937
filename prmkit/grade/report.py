"""The grading benchmark's tables (``bench/bench_grade.py``), from its summary: printed by the bench and
generated into ``docs/grading.md`` from the committed ``docs/results/bench-grade.json``.

>>> s = {"graders": ["a"], "sources": {"x": {"pairs": 4, "a": {"right": 3, "accepts_wrong": 1, "rejects_right": 0}}}}
>>> agreement_rows(s)
(['source', 'pairs', 'a right', 'a accepts wrong', 'a rejects right'], [['x', '4', '3 (75.0%)', '1', '0']])
"""

from __future__ import annotations

SOURCE_NAMES = {"mv-cases": "Math-Verify's test cases", "math500": "MATH-500 reference solutions",
                "qwen-pool": "Qwen2.5-Math candidate pool", "regression": "regression table (strict)", "all": "all"}


def agreement_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    """Per source: pairs, then for each grader how many it gets right, wrong acceptances, wrong rejections."""
    graders = summary["graders"]
    header = ["source", "pairs"] + [f"{g} {what}" for g in graders for what in ("right", "accepts wrong", "rejects right")]
    rows = []
    for source, counts in summary["sources"].items():
        row = [SOURCE_NAMES.get(source, source), f"{counts['pairs']:,}"]
        for g in graders:
            c = counts[g]
            row += [f"{c['right']:,} ({c['right'] / counts['pairs']:.1%})", f"{c['accepts_wrong']:,}",
                    f"{c['rejects_right']:,}"]
        rows.append(row)
    return header, rows


def speed_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    """Seconds and pairs per second of each grader, cold and warm, and prmkit's ratio to Math-Verify."""
    n, t = summary["pairs"], summary["seconds"]
    header = ["grader", "how", "cold s", "cold pairs/s", "warm s", "warm pairs/s"]
    rows = [[g, summary["how"][g], f"{t[g]['cold']:.2f}", f"{n / t[g]['cold']:,.1f}", f"{t[g]['warm']:.2f}",
             f"{n / t[g]['warm']:,.1f}"] for g in summary["graders"]]
    ratio = {k: t["math-verify"][k] / t["prmkit"][k] for k in ("cold", "warm")}
    rows.append(["prmkit / math-verify", "throughput ratio", "", f"**{ratio['cold']:.2f}x**", "",
                 f"**{ratio['warm']:.2f}x**"])
    one = summary.get("single_thread")
    if one:  # summaries from before the one-thread row have none
        rows.append(["prmkit, one thread", "grade_many with InProcess: no workers", f"{one['cold']:.2f}",
                     f"{n / one['cold']:,.1f}", f"{one['warm']:.2f}", f"{n / one['warm']:,.1f}"])
        rows.append(["prmkit one thread / math-verify", "throughput ratio", "",
                     f"**{t['math-verify']['cold'] / one['cold']:.2f}x**", "",
                     f"**{t['math-verify']['warm'] / one['warm']:.2f}x**"])
    return header, rows


STAGES = {"fast_path_s": "string fast path and exact reader, every pair, one thread, caches empty (s)",
          "decided_in_process": "pairs decided in the process",
          "decided_by_exact_values": "of which by exact values (prmkit.grade.exact)",
          "to_parser": "pairs left to Math-Verify's parser",
          "parser_s_after_warm_up": "their seconds in the parser, one process, after a warm-up pass",
          "worker_start_s": "one worker's start-up and a first one-digit pair (s)"}


def stages_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    """Where prmkit's time goes (the bench's ``stages``, medians over its runs)."""
    stages = summary.get("stages", {})
    return ["stage", "value"], [[STAGES[k], f"{v:,}" if isinstance(v, int) else f"{v:.2f}"]
                                for k, v in stages.items() if k in STAGES]
