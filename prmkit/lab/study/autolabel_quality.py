"""How automatic step labels compare with the oracle's truth, and why they differ: pure functions.

For every step of a ledger solution the oracle gives its rating (is the step right?) and the lab knows
more: whether the solution is still *on track* after it (its running value equals the true one, so
right steps from here reach the right answer) and whether a ``set to`` transaction lies ahead (which
wipes any error before it). Rollouts estimate the first, a value; a labeller should report the
second... the oracle's rating. Where they differ, the reason is one of :data:`REASONS`.

>>> from prmkit.schema import Problem, Solution
>>> p = Problem("Start at 5.\\nA + 3\\nB set to 2\\nC + 1\\nWhat is the final value?", answer="3")
>>> s = Solution.from_steps(p, ["A + 3 : 5 + 3 = 9", "B set 2 : 2", "C + 1 : 2 + 1 = 3", "# Answer\\n\\n3"])
>>> [(t.rating, t.on_track, t.set_ahead) for t in step_truth(s)]
[(-1, False, True), (1, True, False), (1, True, False), (1, True, False)]
>>> reason(step_truth(s)[0], 1)  # rated +1 (as rollouts would: the set repairs it)
'missed: a later set wipes it'
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

REASONS = {
    "missed: the value is still right": "a wrong step that leaves the running value right (a wrong check "
                                         "line, or a slip that cancels an earlier one)",
    "missed: a later set wipes it": "a wrong step before a 'set to' transaction, which makes every later "
                                    "value right again",
    "missed: off track": "a wrong step that leaves the solution off track with no 'set to' ahead (rollouts "
                         "miss it only when a continuation repairs it: a silent fix or a cancelling slip)",
    "false alarm: after an earlier error": "a right step that faithfully carries an earlier error: the "
                                           "right answer is out of reach, but the step is correct",
    "false alarm: on track": "a right step with the solution still on track: every continuation failed "
                             "(a problem the policy rarely solves from here) or the labeller erred",
}
"""Every disagreement with the oracle, by what the lab knows of the step."""


@dataclass(frozen=True)
class StepTruth:
    rating: int
    """The oracle's rating (+1, 0, -1)."""
    on_track: bool
    """The running value after the step is the true one (an answer step: the answer is right)."""
    set_ahead: bool
    """A ``set to`` transaction is still to come."""


def step_truth(solution) -> list[StepTruth]:
    """What the lab knows of every step of a ledger ``solution``."""
    from prmkit.lab.generator import resume_point
    from prmkit.lab.oracle import grade_answer, ledger_of, oracle_labels

    led = ledger_of(solution.problem.problem)
    true = [led.start, *led.values()]
    texts, out = solution.texts, []
    for i, label in enumerate(oracle_labels(solution)):
        state = resume_point(led, texts[:i + 1])
        if state is None:  # the answer has been given: on track iff it is right
            answer = texts[i].split("\n\n", 1)[1].strip() if "\n\n" in texts[i] else None
            out.append(StepTruth(label.rating, grade_answer(solution.problem, answer) == "correct", False))
            continue
        track = state.cur is None or (state.start < len(true) and state.cur == true[state.start])
        ahead = any(t.kind == "set" for t in led.txns[state.start:])
        out.append(StepTruth(label.rating, bool(track), ahead))
    return out


def reason(truth: StepTruth, label: int) -> str | None:
    """Why a label of a step disagrees with the oracle (None: it agrees). Only "wrong or not" counts: a
    neutral step rated +1 agrees."""
    wrong = truth.rating == -1
    if wrong == (label == -1):
        return None
    if wrong:
        if truth.on_track:
            return "missed: the value is still right"
        return "missed: a later set wipes it" if truth.set_ahead else "missed: off track"
    return "false alarm: on track" if truth.on_track else "false alarm: after an earlier error"


def padded(ratings: list, n: int) -> list:
    """``ratings`` to ``n`` steps (a phase-2 record stops at its first error: the rest are unlabelled)."""
    return list(ratings[:n]) + [None] * max(0, n - len(ratings))


def label_quality(solutions, records) -> dict:
    """Every measure of one label set: ``records[i]`` labels ``solutions[i]`` (same steps; unlabelled
    steps None). Steps are compared where labelled; "wrong" (-1) is the positive class.

    - ``wrong_precision`` / ``wrong_recall``: of steps labelled -1, the share the oracle rates -1; of the
      oracle's -1 steps among the labelled ones, the share labelled -1;
    - ``first_error_accuracy``: over labelled solutions, the labels' first -1 is the oracle's first -1
      (or neither has one);
    - ``agreement_correctness`` / ``agreement_value``: the share of labelled steps whose "wrong or not"
      equals the oracle's rating / equals "off track" (the value a rollout estimates);
    - ``reasons``: disagreements by :data:`REASONS`;
    - ``solve_rate_on_track_alarms`` against ``solve_rate``: the share of right answers among the pool's
      samples of the problems, weighted by their on-track false alarms, against all problems' (a "hard
      problem" shows as a lower rate).
    """
    solved: dict[str, list[bool]] = {}
    for sol in solutions:
        solved.setdefault(sol.problem.problem, []).append(sol.grade == "correct")
    rate = {p: float(np.mean(v)) for p, v in solved.items()}
    alarm_rates: list[float] = []
    tp = fp = fn = steps = 0
    first_ok, labelled, reasons = [], 0, dict.fromkeys(REASONS, 0)
    agree_c = agree_v = 0
    for sol, rec in zip(solutions, records):
        truth = step_truth(sol)
        ratings = padded(rec.ratings, len(truth))
        if all(r is None for r in ratings):
            continue
        labelled += 1
        for t, r in zip(truth, ratings):
            if r is None:
                continue
            steps += 1
            said, wrong = r == -1, t.rating == -1
            tp, fp, fn = tp + (said and wrong), fp + (said and not wrong), fn + (wrong and not said)
            agree_c += said == wrong
            agree_v += said == (not t.on_track)
            if (why := reason(t, r)) is not None:
                reasons[why] += 1
                if why == "false alarm: on track":
                    alarm_rates.append(rate[sol.problem.problem])
        mine = next((i for i, r in enumerate(ratings) if r == -1), None)
        oracle = next((i for i, t in enumerate(truth) if t.rating == -1), None)
        first_ok.append(mine == oracle)
    return {"solutions": len(solutions), "labelled_solutions": labelled, "labelled_steps": steps,
            "wrong_precision": tp / (tp + fp) if tp + fp else float("nan"),
            "wrong_recall": tp / (tp + fn) if tp + fn else float("nan"),
            "first_error_accuracy": float(np.mean(first_ok)) if first_ok else float("nan"),
            "agreement_correctness": agree_c / steps if steps else float("nan"),
            "agreement_value": agree_v / steps if steps else float("nan"), "reasons": reasons,
            "solve_rate": float(np.mean([rate[s.problem.problem] for s in solutions])) if solutions else float("nan"),
            "solve_rate_on_track_alarms": float(np.mean(alarm_rates)) if alarm_rates else float("nan")}


def examples(solutions, records, per_reason: int = 1) -> list[dict]:
    """Up to ``per_reason`` solutions showing each disagreement reason: problem, steps, oracle, labels, values."""
    from prmkit.lab.domains import oracle_labels

    out, seen = [], dict.fromkeys(REASONS, 0)
    for sol, rec in zip(solutions, records):
        truth = step_truth(sol)
        ratings = padded(rec.ratings, len(truth))
        values = padded(rec.values, len(truth))
        for i, (t, r) in enumerate(zip(truth, ratings)):
            why = reason(t, r) if r is not None else None
            if why is None or seen[why] >= per_reason:
                continue
            seen[why] += 1
            out.append({"reason": why, "step": i, "problem": sol.problem.problem, "steps": sol.texts,
                        "oracle": [lab.rating for lab in oracle_labels(sol)], "labels": ratings, "values": values})
            break
    return out
