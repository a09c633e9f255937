"""Automatic step labels (:mod:`prmkit.label.auto`): Monte-Carlo rollouts, OmegaPRM, the cache, resume,
consensus with a judge, the CLI, and training on the soft values they write.

Tiers: pure functions on hand-computed cases and hypothesis properties (mc_labels, the binary search);
then the real pipeline on hand-written ledger problems with the lab's generator switched to exactly
the behaviour a case needs (every error rate 0, so rollouts are deterministic and the right counts can
be worked out by hand); then the lab's default generator on its quick pool (OmegaPRM against exhaustive
rollouts on one shared cache); then files: the rollout cache, a run killed and resumed, a judge served
by ``prmkit serve --critic``, and ``prmkit label auto`` itself.
"""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prmkit.generate.backend import Backend
from prmkit.generate.config import GenerateConfig
from prmkit.io import read_solutions, write_records
from prmkit.lab import preset
from prmkit.lab.backend import LabBackend
from prmkit.lab.domain import parse_problem
from prmkit.lab.generator import GeneratorConfig, continue_samples
from prmkit.lab.oracle import extract_answer, grade_answer, oracle_labels
from prmkit.lab.pools import generate_pool
from prmkit.label.auto.config import AutoLabelConfig
from prmkit.label.auto.judge import JudgeResult, critique_prompt, parse_critique
from prmkit.label.auto.mc import first_wrong, mc_labels, prefix_steps_to_roll
from prmkit.label.auto.methods import label_mc, label_omegaprm
from prmkit.label.auto.omegaprm import Search, binary_first_error, exhaustive_first_error, search_labels
from prmkit.label.auto.rollouts import RolloutCache, Rollouts, generator_id, prefix_key
from prmkit.label.auto.run import label_file, label_solutions
from prmkit.model.labels import step_targets
from prmkit.schema import Problem, Solution

OFF = GeneratorConfig(misconception_rate=0.0, misreading_rate=0.0, arithmetic_slip_rate=0.0, stale_operand_rate=0.0,
                      flipped_operator_rate=0.0, silent_fix_rate=0.0, check_rate=0.0, no_answer_rate=0.0)
"""The lab's generator, error-free: every continuation finishes the true solution from the prefix's value."""
NEVER_DONE = dataclasses.replace(OFF, no_answer_rate=1.0)
"""Error-free but never answers: every continuation stops before ``# Answer``."""

P1 = Problem("Start at 12.\nA + 2\nB less 6\nC + 3\nWhat is the final value?", answer="11", id="p1")
RIGHT = ["A + 2 : 12 + 2 = 14", "B - 6 : 14 - 6 = 8", "C + 3 : 8 + 3 = 11", "# Answer\n\n11"]
SLIP = ["A + 2 : 12 + 2 = 14", "B - 6 : 14 - 6 = 9", "C + 3 : 9 + 3 = 12", "# Answer\n\n12"]  # 14 - 6 = 9
P2 = Problem("Start at 12.\nA + 2\nB less 6\nC set to 20\nD + 3\nWhat is the final value?", answer="23", id="p2")
WIPED = ["A + 2 : 12 + 2 = 14", "B - 6 : 14 - 6 = 9", "C set 20 : 20", "D + 3 : 20 + 3 = 23", "# Answer\n\n23"]


def lab(generator: GeneratorConfig | None = None, seed: int = 0) -> LabBackend:
    return LabBackend(GenerateConfig(backend="lab", model="quick", seed=seed), generator=generator)


def sol(problem: Problem, texts: list[str], sid: str) -> Solution:
    return Solution.from_steps(problem, texts, id=sid)


def mc(solutions, k=4, generator=OFF, **kw) -> tuple[list[Solution], dict]:
    return label_solutions(solutions, AutoLabelConfig(k=k, progress=False, **kw), backend=lab(generator),
                           grade=grade_answer)


@pytest.fixture(scope="module")
def pool() -> list[Solution]:
    """The quick preset's 2,000 training solutions (500 problems x 4), default generator."""
    return generate_pool(preset("quick"), 0, "train")


def rolled_prefixes(solutions) -> list[tuple[str, tuple[str, ...]]]:
    """Every (problem, prefix) mc rolls out: each step's, but the last where the solution gives an answer
    (graded; one cut off before its answer may still reach one, so its last prefix is rolled out)."""
    out = []
    for s in solutions:
        n = len(s.texts)
        last = n - 1 if extract_answer(s.texts) is not None else n
        out += [(s.problem.problem, tuple(s.texts[:i + 1])) for i in range(last)]
    return out


# --- 1. hard and soft labels ------------------------------------------------------------------------------

def test_mc_labels_by_hand():
    assert mc_labels([8, 3, 0, None], k=8) == ([1, 1, -1, None], [1.0, 0.375, 0.0, None])
    assert mc_labels([1, 0], k=1) == ([1, -1], [1.0, 0.0])
    assert mc_labels([], k=4) == ([], [])
    for counts, k, message in [([9], 8, "a count of 9 right rollouts out of 8"), ([-1], 8, "a count of -1"),
                               ([0], 0, "k must be at least 1")]:
        with pytest.raises(ValueError, match=message):
            mc_labels(counts, k)
    assert first_wrong([1, None, -1, 1]) == 2 and first_wrong([None, 1]) is None


@given(st.integers(1, 60), st.integers(0, 60))
def test_prefixes_to_roll_are_evenly_spaced_and_end_at_the_last_step(n, m):
    roll = prefix_steps_to_roll(n, m)
    assert roll == sorted(set(roll)) and roll[-1] == n - 1 and 0 <= roll[0]
    assert len(roll) == (n if m == 0 else min(n, m))


def test_an_error_free_generator_values_every_prefix_of_a_right_solution_at_one():
    (right, slip), summary = mc([sol(P1, RIGHT, "right"), sol(P1, SLIP, "slip")], k=4)
    assert right.ratings == [1, 1, 1, 1] and right.values == [1.0, 1.0, 1.0, 1.0]
    assert slip.ratings == [1, -1, -1, -1] and slip.values == [1.0, 0.0, 0.0, 0.0]  # nothing repairs the slip
    info = slip.meta["autolabel"]
    assert info["right_rollouts"] == [4, 0, 0, 0] and info["first_error"] == 1
    assert info["cost"]["rollouts"] == 4 * 3  # the last prefix is the solution itself: its answer is graded
    settings = info["settings"]
    assert {k: settings[k] for k in ("method", "k", "max_prefixes")} == {"method": "mc", "k": 4, "max_prefixes": 0}
    assert settings["generator"][0] == "lab-ledger-v1" and settings["grader"].endswith("grade_answer")
    assert slip.label_source == "rollout" and slip.labeller == "auto-mc" and slip.texts == SLIP
    # the slip's first prefix is shared with the right solution's: sampled once, then served from the cache
    assert summary["rollouts"] == 24 and summary["rollouts_sampled"] == 20 and summary["rollouts_cached"] == 4


def test_a_later_set_to_wipes_the_slip_out_values_are_not_correctness():
    assert parse_problem(P2.problem).answer == 23
    (wiped,), _ = mc([sol(P2, WIPED, "wiped")], k=4)
    assert [label.rating for label in oracle_labels(wiped)][1] == -1  # 14 - 6 = 9 is wrong ...
    assert wiped.ratings == [1, 1, 1, 1, 1] and wiped.values == [1.0] * 5  # ... but the answer stays reachable
    (cut,), _ = mc([sol(P2, WIPED[:2], "cut")], k=4)  # no answer: its last prefix is rolled out too
    assert cut.ratings == [1, 1] and cut.meta["autolabel"]["cost"]["rollouts"] == 8


def test_a_policy_that_never_finishes_rates_right_steps_wrong():
    (right,), _ = mc([sol(P1, RIGHT, "right")], k=4, generator=NEVER_DONE)
    assert right.ratings == [-1, -1, -1, 1] and right.values == [0.0, 0.0, 0.0, 1.0]
    assert [label.rating for label in oracle_labels(right)] == [1, 1, 1, 1]


def test_max_prefixes_rolls_out_only_some_prefixes():
    (right,), _ = mc([sol(P1, RIGHT, "right")], k=4, max_prefixes=2)  # prefixes 1 and 3; 3 is the graded answer
    assert right.ratings == [None, 1, None, 1] and right.values == [None, 1.0, None, 1.0]
    assert right.meta["autolabel"]["cost"]["rollouts"] == 4


def test_prmkits_grader_labels_as_the_oracles_grader():
    sols = [sol(P1, RIGHT, "right"), sol(P1, SLIP, "slip"), sol(P2, WIPED, "wiped")]
    ours, _ = label_solutions(sols, AutoLabelConfig(k=4, progress=False), backend=lab(OFF))  # default grader
    lab_graded, _ = mc(sols, k=4)
    assert [s.ratings for s in ours] == [s.ratings for s in lab_graded]
    assert [s.values for s in ours] == [s.values for s in lab_graded]


def test_right_counts_are_the_lab_continuations_graded(pool):
    """The rollout engine against the lab's continuations graded by hand, on the default generator."""
    backend = lab()
    rollouts = Rollouts(backend, grade=grade_answer)
    requests = [(s.problem, s.texts[:i + 1]) for s in pool[:12] for i in range(len(s.texts) - 1)]
    got = rollouts.right_counts(requests, 8)
    expected = []
    for problem, prefix in requests:
        rest = continue_samples(problem, prefix, backend.generator, 8, seed=0)
        expected.append(sum(grade_answer(problem, extract_answer([*prefix, *r])) == "correct" for r in rest))
    assert [c for c, _ in got] == expected
    assert 0 < sum(expected) < 8 * len(expected)  # some right, some wrong: the comparison means something


# --- 2. OmegaPRM's binary search against exhaustive rollouts -------------------------------------------------

def probed(pattern: list[bool]):
    calls: list[int] = []

    def reachable(i: int) -> bool:
        calls.append(i)
        return pattern[i]

    return reachable, calls


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 64), st.data(), st.booleans())
def test_binary_search_finds_the_first_error_of_monotone_values(n, data, last_known_wrong):
    first = data.draw(st.integers(0, n - 1 if last_known_wrong else n))  # n: no error
    pattern = [i < first for i in range(n)]
    reachable, calls = probed(pattern)
    search = binary_first_error(n, reachable, last_known_wrong=last_known_wrong)
    expected = None if first == n else first
    assert search.first_error == exhaustive_first_error(n, pattern.__getitem__) == expected
    assert len(search.probes) <= math.ceil(math.log2(n)) + (0 if last_known_wrong else 1)
    assert search.probes == [(i, pattern[i]) for i in calls] and len(set(calls)) == len(calls)
    assert not (last_known_wrong and n - 1 in calls)
    assert search_labels(search, n) == ([1] * n if expected is None else [1] * first + [-1] + [None] * (n - first - 1))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=40), st.booleans())
def test_binary_search_on_non_monotone_values_stops_at_an_error_after_a_reachable_prefix(pattern, last_known_wrong):
    n = len(pattern)
    if last_known_wrong:
        pattern[-1] = False
    search = binary_first_error(n, pattern.__getitem__, last_known_wrong=last_known_wrong)
    if not last_known_wrong and pattern[-1]:
        assert search.first_error is None and search.low == n and search.probes == [(n - 1, True)]
        return
    r = search.first_error
    assert r is not None and not pattern[r] and (r == 0 or pattern[r - 1])
    assert r == 0 or (r - 1, True) in search.probes  # the search saw its predecessor reachable
    assert (r, False) in search.probes or (last_known_wrong and r == n - 1)
    assert exhaustive_first_error(n, pattern.__getitem__) <= r


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 64), st.data(), st.integers(1, 8))
def test_a_search_cut_short_labels_only_what_it_settled(n, data, max_probes):
    first = data.draw(st.integers(0, n - 1))
    pattern = [i < first for i in range(n)]
    search = binary_first_error(n, pattern.__getitem__, max_probes=max_probes)
    assert len(search.probes) <= max_probes
    truth = [1] * first + [-1] + [None] * (n - first - 1)
    labels = search_labels(search, n)
    assert all(got is None or got == want for got, want in zip(labels, truth))  # never a wrong label
    if not search.resolved:
        assert search.low <= first and labels == [1] * search.low + [None] * (n - search.low)
        assert max_probes < math.ceil(math.log2(n))
    assert search_labels(Search(None, [], 0), 3) == [None, None, None]


def test_omegaprm_finds_mcs_first_error_wherever_the_values_are_monotone(pool):
    wrong = [s for s in pool if s.grade != "correct"][:150]
    rollouts = Rollouts(lab(), RolloutCache(), grade_answer)  # one cache: both read the same rollouts
    by_mc = label_mc(wrong, rollouts, AutoLabelConfig(k=8))
    mc_sampled = rollouts.counts.sampled
    by_omega = label_omegaprm(wrong, rollouts, AutoLabelConfig(method="omegaprm", k=8))
    assert rollouts.counts.sampled == mc_sampled  # every prefix OmegaPRM probes, mc rolled out: no new rollouts
    monotone = agree = 0
    for m, o in zip(by_mc, by_omega):
        counts, info = m.meta["autolabel"]["right_rollouts"], o.meta["autolabel"]
        reach = [c > 0 for c in counts]
        is_monotone = reach == sorted(reach, reverse=True)  # once out of reach, it stays out
        mc_first, omega_first = m.meta["autolabel"]["first_error"], info["first_error"]
        monotone += is_monotone
        agree += mc_first == omega_first
        n = len(o.texts)
        assert len(info["probes"]) <= math.ceil(math.log2(n)) + (o.answer is None)
        assert info["cost"]["rollouts"] == 8 * len(info["probes"]) < m.meta["autolabel"]["cost"]["rollouts"] + 8
        assert all(o.values[i] == m.values[i] for i in info["probes"])  # the same rollouts, the same values
        if is_monotone:
            assert omega_first == mc_first, (counts, info["probes"])
        elif omega_first is not None:  # a first error of the stretch searched: later than, or at, mc's
            assert counts[omega_first] == 0 and (omega_first == 0 or counts[omega_first - 1] > 0)
            assert omega_first >= mc_first
        else:  # only an unanswered solution whose last prefix still reaches the answer
            assert o.answer is None and counts[-1] > 0
    assert monotone >= len(wrong) // 3, "too few monotone cases for the comparison to mean anything"
    assert agree >= monotone, f"omegaprm agrees with mc on {agree}/{len(wrong)} ({agree / len(wrong):.0%})"
    assert sum(len(o.meta["autolabel"]["probes"]) for o in by_omega) < 0.6 * sum(
        len(m.texts) - 1 for m in by_mc)  # and it probes far fewer prefixes


# --- 3. the rollout cache ------------------------------------------------------------------------------------

def test_a_larger_k_samples_only_the_new_continuations(pool, tmp_path):
    sols, path = pool[:40], tmp_path / "rollouts.jsonl"
    prefixes = rolled_prefixes(sols)
    requests, distinct = len(prefixes), len(set(prefixes))
    assert distinct < requests  # samples of one problem share prefixes: the dedup is exercised

    def run(k, cache):
        return label_solutions(sols, AutoLabelConfig(k=k, progress=False), backend=lab(), grade=grade_answer,
                               cache=cache)

    first, s8 = run(8, path)
    assert (s8["rollouts_sampled"], s8["rollouts_cached"], s8["rollouts"]) == (distinct * 8, (requests - distinct) * 8,
                                                                             requests * 8)
    held8 = {k: list(v) for k, v in RolloutCache(path).outcomes.items()}
    assert len(held8) == distinct and {len(v) for v in held8.values()} == {8}
    lines8 = len(path.read_text().splitlines())

    again, s16 = run(16, path)
    assert s16["rollouts_sampled"] == distinct * 8
    assert s16["rollouts_cached"] == distinct * 8 + (requests - distinct) * 16  # = requests * 16 - sampled
    assert s16["cache_hit_rate"] == round(s16["rollouts_cached"] / (requests * 16), 4)
    held16 = RolloutCache(path).outcomes
    assert all(held16[k][:8] == v and len(held16[k]) == 16 for k, v in held8.items())  # the first 8 unchanged
    starts = [json.loads(line)["start"] for line in path.read_text().splitlines()[lines8:]]
    assert starts == [8] * distinct

    cold, _ = run(16, None)  # continuation j does not depend on where the batch starts
    assert [s.to_dict() for s in cold] == [s.to_dict() for s in again]
    assert [s.meta["autolabel"]["settings"]["k"] for s in first] == [8] * len(sols)

    _, s_warm = run(16, path)
    assert s_warm["rollouts_sampled"] == 0 and s_warm["cache_hit_rate"] == 1.0


def test_a_torn_last_line_is_cut_and_ignored(pool, tmp_path):
    sols, path = pool[:8], tmp_path / "rollouts.jsonl"
    label_solutions(sols, AutoLabelConfig(k=4, progress=False), backend=lab(), grade=grade_answer, cache=path)
    held, size = RolloutCache(path).outcomes, path.stat().st_size
    with open(path, "a") as f:
        f.write('{"key": "torn", "start": 0, "outcomes": [[1, 3], [0')  # a writer killed mid-line
    cache = RolloutCache(path)
    assert cache.outcomes == held and "torn" not in cache.outcomes and path.stat().st_size == size
    _, s = label_solutions(sols, AutoLabelConfig(k=6, progress=False), backend=lab(), grade=grade_answer, cache=path)
    assert s["rollouts_sampled"] == len(held) * 2  # appends after the cut go on cleanly
    assert {len(v) for v in RolloutCache(path).outcomes.values()} == {6}


def test_cache_batches_overlapping_what_is_held_add_their_tail(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"key": "x", "start": 0, "outcomes": [[1, 5], [0, 6]]}\n'
                    '{"key": "x", "start": 1, "outcomes": [[0, 6], [1, 7]]}\n')
    cache = RolloutCache(path)
    assert cache.get("x") == [(True, 5), (False, 6), (True, 7)] and cache.get("y") == []
    with pytest.raises(ValueError, match="rollouts 1.. of prefix x added, but the cache holds 3"):
        cache.add("x", 1, [(True, 1)])


class Settings(Backend):
    """A backend of which only the name and settings matter (for cache keys)."""

    name = "policy"

    def __init__(self, cfg):
        self.cfg = cfg


def test_another_generator_or_setting_gets_other_keys(pool, tmp_path):
    ids = [generator_id(b) for b in (lab(), lab(seed=1), lab(OFF), Settings(GenerateConfig(temperature=1.0)),
                                     Settings(GenerateConfig(temperature=0.7)), Settings(GenerateConfig(top_p=0.9)))]
    assert len(set(ids)) == len(ids)
    assert generator_id(Settings(GenerateConfig(n=4))) == generator_id(Settings(GenerateConfig(n=64)))  # n is not one
    assert generator_id(lab()) == generator_id(LabBackend(GenerateConfig(backend="lab", model="easy", n=16)))
    assert generator_id(lab()) != generator_id(LabBackend(GenerateConfig(backend="lab", model="default")))  # other rules
    g = ids[0]
    keys = {prefix_key(g, P1, RIGHT[:1]), prefix_key(g, P1, RIGHT[:2]), prefix_key(ids[1], P1, RIGHT[:1]),
            prefix_key(g, dataclasses.replace(P1, answer="12"), RIGHT[:1])}
    assert len(keys) == 4 and prefix_key(g, dataclasses.replace(P1, id="other"), RIGHT[:1]) in keys
    sols, path = pool[:8], tmp_path / "rollouts.jsonl"
    for seed, cached in [(0, False), (1, False), (0, True)]:
        _, s = label_solutions(sols, AutoLabelConfig(k=4, progress=False), backend=lab(seed=seed), grade=grade_answer,
                               cache=path)
        assert (s["rollouts_sampled"] == 0) == cached, (seed, s)


# --- 4. resume ----------------------------------------------------------------------------------------------

class Counting(Backend):
    """The lab backend, counting what it samples, raising KeyboardInterrupt at call ``fail_at`` (a Ctrl-C)."""

    def __init__(self, inner, fail_at: int | None = None):
        self.inner, self.fail_at, self.calls, self.sampled = inner, fail_at, 0, 0
        self.name, self.cfg = inner.name, inner.cfg

    def identity(self):
        return self.inner.identity()

    def complete_many(self, requests):
        self.calls += 1
        if self.calls == self.fail_at:
            raise KeyboardInterrupt
        out = self.inner.complete_many(requests)
        self.sampled += sum(len(b) for b in out)
        return out


def records(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("method", ["mc", "omegaprm"])
def test_a_killed_run_resumes_where_it_stopped(pool, tmp_path, method):
    src = tmp_path / "in.jsonl"
    write_records(src, pool[:24])  # 6 problems x 4 samples
    cfg = AutoLabelConfig(method=method, k=4, flush_every=4, progress=False)
    whole = Counting(lab())
    label_file(src, tmp_path / "whole.jsonl", cfg, backend=whole, grade=grade_answer)

    out, part = tmp_path / "out.jsonl", tmp_path / ".out.jsonl.part"
    fail_at = 3 if method == "mc" else whole.calls // 2  # mc asks once per chunk; omegaprm once per probe
    killed, said = Counting(lab(), fail_at=fail_at), []
    with pytest.raises(KeyboardInterrupt):
        label_file(src, out, cfg, backend=killed, grade=grade_answer, log=said.append)
    kept = [r["id"] for r in records(part)]
    assert not out.exists() and len(set(kept)) == len(kept) and 0 < len(kept) < 24
    assert len(kept) % 4 == 0 and (method != "mc" or len(kept) == 8)  # whole chunks only
    assert str(part) in said[0]

    rest = Counting(lab())
    summary = label_file(src, out, cfg, backend=rest, grade=grade_answer)
    assert summary["skipped_already_done"] == len(kept) and summary["labelled"] == 24 - len(kept)
    assert killed.sampled + rest.sampled == whole.sampled  # nothing sampled twice
    assert summary["rollouts_sampled"] == rest.sampled and not part.exists()
    assert records(out) == records(tmp_path / "whole.jsonl")  # the same file as a run never stopped
    cache = out.with_name(out.name + ".rollouts.jsonl")
    assert sum(len(r["outcomes"]) for r in records(cache)) == whole.sampled

    again = Counting(lab())
    assert label_file(src, out, cfg, backend=again, grade=grade_answer)["labelled"] == 0 and again.calls == 0


def test_a_rerun_with_other_settings_into_the_same_output_is_refused(pool, tmp_path):
    src, out = tmp_path / "in.jsonl", tmp_path / "mc.jsonl"
    write_records(src, pool[:8])
    s4 = label_file(src, out, AutoLabelConfig(k=4, progress=False), backend=lab(), grade=grade_answer)
    with pytest.raises(ValueError, match=r"holds labels made with .*\"k\": 4.*not .*\"k\": 8.*--cache"):
        label_file(src, out, AutoLabelConfig(k=8, progress=False), backend=lab(), grade=grade_answer)
    cache = str(out.with_name("mc.jsonl.rollouts.jsonl"))
    s8 = label_file(src, tmp_path / "mc8.jsonl", AutoLabelConfig(k=8, cache=cache, progress=False), backend=lab(),
                    grade=grade_answer)  # what the refusal says to do: a new OUT reusing the first 4
    assert s8["labelled"] == 8 and s8["rollouts_sampled"] == s4["rollouts_sampled"]
    assert {r.meta["autolabel"]["settings"]["k"] for r in read_solutions(tmp_path / "mc8.jsonl")} == {8}


# --- 5. consensus and the judge -----------------------------------------------------------------------------

class FakeJudge:
    """A judge whose reply to each solution (by id) is written in the test; read by the real parser."""

    def __init__(self, replies: dict[str, str]):
        self.replies, self.asked = replies, []

    def judge(self, solutions):
        self.asked += [s.id for s in solutions]
        return [JudgeResult(parse_critique(self.replies[s.id], len(s.texts)), self.replies[s.id], 7,
                            len(critique_prompt(s.problem.problem, s.texts))) for s in solutions]


REPLIES = {"right": "Every paragraph checks out. \\boxed{-1}", "slip-agree": "14 - 6 is 8, not 9. \\boxed{1}",
           "slip-disagree": "Paragraph 2 is wrong. \\boxed{2}", "slip-garbled": "Paragraph 1 is wrong, so"}
JUDGED = [sol(P1, RIGHT, "right"), sol(P1, SLIP, "slip-agree"), sol(P1, SLIP, "slip-disagree"),
          sol(P1, SLIP, "slip-garbled")]


def no_label_anywhere(record: Solution) -> bool:
    return all(c.get("rating") is None and c.get("value") is None
               for step in record.to_dict()["steps"] for c in step["completions"])


def test_consensus_keeps_agreed_labels_and_drops_the_rest():
    judge = FakeJudge(REPLIES)
    cfg = AutoLabelConfig(method="consensus", k=4, judge_model="fake", progress=False)
    out, summary = label_solutions(JUDGED, cfg, backend=lab(OFF), judge=judge, grade=grade_answer)
    right, agree, disagree, garbled = out
    assert judge.asked == [s.id for s in JUDGED]
    assert right.ratings == [1, 1, 1, 1] and right.meta["autolabel"]["consensus"] is True
    assert agree.ratings == [1, -1, -1, -1] and agree.values == [1.0, 0.0, 0.0, 0.0]
    info = disagree.meta["autolabel"]
    assert no_label_anywhere(disagree) and info["consensus"] is False
    assert info["first_error"] == 1 and info["judge"]["index"] == 2  # both locations kept
    assert info["right_rollouts"] == [4, 0, 0, 0] and info["judge"]["reply"] == REPLIES["slip-disagree"]
    info = garbled.meta["autolabel"]
    assert no_label_anywhere(garbled) and info["consensus"] is False and info["judge"]["index"] is None
    assert info["judge"]["reply"] == REPLIES["slip-garbled"]
    assert info["judge"]["unparseable"] == "no \\boxed{} in the reply"
    assert info["cost"] == {"rollouts": 12, "rollout_tokens": info["cost"]["rollout_tokens"], "judge_calls": 1,
                            "judge_tokens": 7}
    assert (summary["consensus_kept"], summary["judge_calls"], summary["judge_unparseable"]) == (2, 4, 1)


def test_the_judge_alone_labels_phase_2_style_and_never_labels_an_unreadable_reply():
    cfg = AutoLabelConfig(method="judge", judge_model="fake", progress=False)
    out, summary = label_solutions(JUDGED, cfg, judge=FakeJudge(REPLIES))  # no generator needed
    assert [s.ratings for s in out] == [[1, 1, 1, 1], [1, -1, None, None], [1, 1, -1, None], [None] * 4]
    assert {s.label_source for s in out} == {"judge"} and all(v is None for s in out for v in s.values)
    garbled = out[3].meta["autolabel"]
    assert no_label_anywhere(out[3]) and garbled["first_error"] is None and "unparseable" in garbled["judge"]
    assert [s.meta["autolabel"]["first_error"] for s in out] == [None, 1, 2, None]
    assert summary["judge_unparseable"] == 1 and "rollouts_sampled" not in summary


@pytest.fixture(scope="module")
def critic_dir(tiny_prm):
    return tiny_prm


def test_judge_and_consensus_through_a_served_critic(critic_dir, pool, tmp_path):
    from prmkit.serve import background
    from prmkit.serve.app import ServeConfig, Service

    src = tmp_path / "in.jsonl"
    write_records(src, [sol(P1, RIGHT, "right"), sol(P2, WIPED, "wiped"), sol(P1, SLIP, "slip"),
                        *[s for s in pool if s.grade != "correct"][:3]])
    # threshold 0: no paragraph scores below it, so the critic always answers \boxed{-1} ("no error")
    svc = Service(ServeConfig(critic=str(critic_dir), name="critic", device="cpu", critic_threshold=0.0))
    try:
        with background(svc) as url:
            short = AutoLabelConfig(method="judge", judge_model="critic", judge_base_url=url, judge_max_tokens=3,
                                    progress=False)
            cut = label_file(src, tmp_path / "judged.jsonl", short)
            both = AutoLabelConfig(method="consensus", judge_model="critic", judge_base_url=url, judge_max_tokens=512,
                                   k=4, progress=False)
            agreed = label_file(src, tmp_path / "agreed.jsonl", both, backend=lab(OFF), grade=grade_answer)
    finally:
        svc.close()
    assert (cut["labelled"], cut["judge_calls"], cut["judge_unparseable"]) == (6, 6, 6)
    for r in read_solutions(tmp_path / "judged.jsonl"):  # cut before its \boxed{}: recorded, never a label
        judge = r.meta["autolabel"]["judge"]
        assert no_label_anywhere(r) and judge["index"] is None and judge["reply"].strip()
        assert judge["unparseable"] == "no \\boxed{} in the reply; the reply hit max_new_tokens"
        assert r.meta["autolabel"]["cost"] == {"judge_calls": 1, "judge_tokens": 3}
    kept = 0
    for r in read_solutions(tmp_path / "agreed.jsonl"):
        info = r.meta["autolabel"]
        assert info["judge"]["index"] == -1 and info["judge"]["reply"].endswith("\\boxed{-1}")
        same = info["first_error"] is None  # kept where the rollouts find no error either
        assert info["consensus"] is same and no_label_anywhere(r) is not same
        assert same is (r.ratings == [1] * len(r.texts))
        kept += same
    assert agreed["consensus_kept"] == kept == 2 and agreed["judge_unparseable"] == 0  # right and wiped


# --- 6. the CLI ---------------------------------------------------------------------------------------------

def test_cli_label_auto_omegaprm(pool, tmp_path, capsys):
    from prmkit.cli import main

    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_records(src, pool[:12])
    rc = main(["label", "auto", str(src), str(out), "--method", "omegaprm", "--backend", "lab", "--model", "quick",
               "--rollouts", "4", "--no-progress"])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    got = list(read_solutions(out))
    assert summary["labelled"] == len(got) == 12 and [r.id for r in got] == [s.id for s in pool[:12]]
    for r in got:
        info = r.meta["autolabel"]
        settings = info["settings"]
        assert r.label_source == "rollout" and settings["grader"] == "prmkit.label.auto.rollouts.answer_grader"
        assert {k: settings[k] for k in ("method", "k", "max_probes")} == {"method": "omegaprm", "k": 4, "max_probes": 0}
        assert info["cost"]["rollouts"] == 4 * len(info["probes"]) and len(r.ratings) == len(r.texts)
    assert summary["rollouts"] == sum(r.meta["autolabel"]["cost"]["rollouts"] for r in got) > 0
    assert out.with_name("out.jsonl.rollouts.jsonl").exists()


@pytest.mark.parametrize("flags, message", [
    (["--method", "nope"], "invalid choice: 'nope'"),
    (["--rollouts", "0"], "prmkit: error: k must be at least 1, got 0"),
    (["--method", "judge"], "needs --judge-model"),
    (["--temperature", "0.5"], ("the lab backend samples by its rules (lab-lm samples a model): it takes no "
                               "--temperature")),
])
def test_cli_label_auto_bad_flags_fail_clearly(pool, tmp_path, capsys, flags, message):
    from prmkit.cli import main

    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_records(src, pool[:2])
    argv = ["label", "auto", str(src), str(out), "--backend", "lab", "--model", "quick", "--no-progress", *flags]
    try:
        rc = main(argv)
    except SystemExit as e:  # argparse's own errors
        rc = e.code
    assert rc == 2 and message in capsys.readouterr().err
    assert not out.exists()


# --- 7. training on soft labels -----------------------------------------------------------------------------

def test_step_targets_from_soft_values():
    ratings, values = [1, 1, -1, -1], [1.0, 0.5, 0.0, 0.0]  # an mc record: hard ratings, soft values
    assert step_targets(ratings, values, n_outputs=1, source="value") == [[1.0], [0.5], [0.0], None]
    assert step_targets(ratings, values, n_outputs=2, source="value") == [[1.0, 0.0], [0.5, 0.5], [0.0, 1.0], None]
    # threshold 0 is Math-Shepherd's hard label (the rating); a higher one cuts earlier
    assert step_targets(ratings, values, n_outputs=1, source="value", threshold=0.0) == [[1.0], [1.0], [0.0], None]
    assert step_targets(ratings, values, n_outputs=1, source="value", threshold=0.5) == [[1.0], [0.0], None, None]
    assert step_targets(ratings, values, n_outputs=1, source="value", threshold=0.5, supervise="all") == [
        [1.0], [0.0], [0.0], [0.0]]
    # an OmegaPRM record: steps it did not probe have a rating but no value, and fall back to the rating
    assert step_targets([1, 1, -1, None], [None, 1.0, 0.0, None], n_outputs=1, source="value", threshold=0.0) == [
        [1.0], [1.0], [0.0], None]
    assert step_targets(ratings, values, n_outputs=1, source="rating") == [[1.0], [1.0], [0.0], None]
    with pytest.raises(ValueError, match="needs label source 'value'"):
        step_targets(ratings, values, n_outputs=1, threshold=0.0)


def test_train_config_takes_a_value_threshold_only_with_soft_labels():
    from prmkit.train.config import TrainConfig
    from prmkit.train.data import solution_targets

    assert TrainConfig(label_source="value", value_threshold=0.0).value_threshold == 0.0
    for bad in [{"value_threshold": 0.0}, {"label_source": "value", "value_threshold": 1.0},
                {"label_source": "value", "value_threshold": -0.1}]:
        with pytest.raises(ValueError, match="--value-threshold needs --label-source value"):
            TrainConfig(**bad)
    (slip,), _ = mc([sol(P1, SLIP, "slip")], k=4)  # what the trainer reads from a label auto record
    assert solution_targets(slip, "prm", 1, "positive", "first_error", "value", "auto", 0.0) == [
        [1.0], [0.0], None, None]
    soft = Solution.from_steps(P1, SLIP, ratings=[1, 1, -1, -1], values=[1.0, 0.25, 0.0, 0.0])  # k=4, 1 right
    assert solution_targets(soft, "prm", 1, "positive", "first_error", "value", "auto") == [[1.0], [0.25], [0.0], None]
    assert solution_targets(soft, "prm", 2, "positive", "first_error", "value", "auto", 0.5) == [
        [1.0, 0.0], [0.0, 1.0], None, None]


def test_a_cache_that_is_the_output_is_refused(pool, tmp_path):
    from prmkit.label.auto.run import label_file

    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_records(src, pool[:2])
    with pytest.raises(ValueError, match="give the cache its own file"):
        label_file(src, out, AutoLabelConfig(k=2, progress=False, cache=str(out)), GenerateConfig(backend="lab", model="quick"))
    assert not out.exists()


def test_solutions_without_ids_resume_by_their_text(pool, tmp_path):
    from prmkit.label.auto.run import label_file

    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_records(src, [dataclasses.replace(s, id=None) for s in pool[:4]])
    gen = GenerateConfig(backend="lab", model="quick")
    assert label_file(src, out, AutoLabelConfig(k=2, progress=False), gen)["labelled"] == 4
    again = label_file(src, out, AutoLabelConfig(k=2, progress=False), gen)
    distinct = len({tuple(s.texts) for s in pool[:4]})  # two samples may be the same text: the same solution
    assert again["labelled"] == 0 and again["skipped_already_done"] == distinct
    assert len(list(read_solutions(out))) == 4
