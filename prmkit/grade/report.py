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
    if "cold_no_snapshot" in t["prmkit"]:  # summaries from before the parser snapshot have none
        rows += _without_snapshot("prmkit without the parser snapshot", n, t["prmkit"]["cold_no_snapshot"], t)
    one = summary.get("single_thread")
    if one:  # summaries from before the one-thread row have none
        rows.append(["prmkit, one thread", "grade_many with InProcess: no workers", f"{one['cold']:.2f}",
                     f"{n / one['cold']:,.1f}", f"{one['warm']:.2f}", f"{n / one['warm']:,.1f}"])
        rows.append(["prmkit one thread / math-verify", "throughput ratio", "",
                     f"**{t['math-verify']['cold'] / one['cold']:.2f}x**", "",
                     f"**{t['math-verify']['warm'] / one['warm']:.2f}x**"])
        if "cold_no_snapshot" in one:
            rows += _without_snapshot("prmkit, one thread, without the parser snapshot", n, one["cold_no_snapshot"], t)
    return header, rows


def _without_snapshot(name: str, n: int, cold: float, t: dict) -> list[list[str]]:
    """A cold timing's baseline row in the parser-snapshot trial's summary (the same cold start without the
    snapshot, c60b696) and its ratio."""
    return [[name, "its cold start's baseline", f"{cold:.2f}", f"{n / cold:,.1f}", "", ""],
            ["... / math-verify", "throughput ratio", "", f"{t['math-verify']['cold'] / cold:.2f}x", "", ""]]


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


TARGETS = (("with workers, cold", ("prmkit", "cold"), 3.0), ("with workers, warm", ("prmkit", "warm"), 4.0),
           ("one thread, cold", ("single_thread", "cold"), 2.0), ("one thread, warm", ("single_thread", "warm"), 2.0))
"""Issue 36's throughput targets: prmkit's pairs per second over Math-Verify's, in the same run."""


def targets_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    """Each throughput target against the medians' ratio, and the range of the runs' own ratios (the medians'
    alone where a summary keeps no runs; the one-thread targets only where it has that row).

    >>> s = {"seconds": {"math-verify": {"cold": 6.0, "warm": 4.0}, "prmkit": {"cold": 2.0, "warm": 1.0}}}
    >>> [r[2:] for r in targets_rows(s)[1]]
    [['3.00x', '3.00x', 'met'], ['4.00x', '4.00x', 'met']]
    """
    medians = dict(summary["seconds"], single_thread=summary.get("single_thread"))
    runs = summary.get("runs") or [medians]
    rows = []
    for name, (who, when), target in TARGETS:
        if not all(_prmkit(r, who) for r in [medians, *runs]):
            continue  # summaries from before the one-thread row
        median = medians["math-verify"][when] / _prmkit(medians, who)[when]
        each = [r["math-verify"][when] / _prmkit(r, who)[when] for r in runs]
        spread = f"{min(each):.2f}-{max(each):.2f}x" if len(each) > 1 else f"{each[0]:.2f}x"
        rows.append([name, f"{target:g}x", f"{median:.2f}x", spread, "met" if median >= target else "missed"])
    return ["target", "asked", "measured (medians)", "each run", "verdict"], rows


def _prmkit(seconds: dict, who: str) -> dict | None:
    """prmkit's cold and warm seconds of one run (or of the medians): with workers, or on one thread."""
    return seconds.get("single_thread") if who == "single_thread" else seconds.get("prmkit")


def snapshot_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    """The parser-snapshot trial's held-out timing (``bench/bench_grade_snapshot.py`` at c60b696, since removed):
    cold, one thread, with and without the snapshot."""
    runs = summary["runs"]
    return (["parser snapshot", "jobs", "seconds (median)", "each run", "DFA states after", "same answers"],
            [[arm, f"{summary['jobs']:,}", f"{summary['seconds'][arm]:.2f}",
              ", ".join(f"{s:.2f}" for s in runs[arm]), f"{summary['dfa_states'][arm]['parser']:,}",
              "yes" if summary["same_answers"] else "**no**"] for arm in ("without", "with")]
            + [["ratio (without / with)", "", f"**{summary['ratio']:.2f}x**", "", "", ""]])
