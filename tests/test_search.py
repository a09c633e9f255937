"""PRM-guided search (``prmkit.search``) on a toy world where every number can be worked out by hand or by
enumeration: the strategies' bookkeeping against brute force, the reference implementations' known faults as
regression tests, the final picks against ``prmkit.evaluate``, and the adapters on the lab's generator and a
real tiny PRM."""

from __future__ import annotations

import hashlib
import itertools
import json

import numpy as np
import pytest

from prmkit.schema import Problem
from prmkit.search import SearchConfig, search
from prmkit.search.core import Candidate, Extension
from prmkit.search.strategies import Run, pick

DEPTH = 3


def value_of(problem: str, steps: tuple[str, ...]) -> float:
    """The toy PRM: a fixed pseudo-random P(correct) of a prefix's last step."""
    digest = hashlib.blake2b("|".join((problem, *steps)).encode(), digest_size=4).digest()
    return int.from_bytes(digest) / 2 ** 32


class Toy:
    """Child ``j`` of a prefix is the step ``<problem>:<depth>.<j>``; a solution ends at depth 3 with an answer
    step (its answer ``j % 3``). Greedy steps are child 0. Records every request it gets."""

    def __init__(self, values=value_of):
        self.requests, self.values = [], values

    def step(self, problem: Problem, depth: int, j: int) -> Extension:
        if depth == DEPTH - 1:
            return Extension([f"# Answer\n\n{j % 3}"], True, 2)
        return Extension([f"{problem.id}:{depth}.{j}"], False, 3)

    def extend(self, requests):
        self.requests.append(requests)
        return [[self.step(p, len(prefix), 0 if greedy else j) for j in range(k)] for p, prefix, k, greedy in requests]

    def rollout(self, requests):
        out = []
        for p, prefix, k in requests:
            out.append([Extension([*[f"{p.id}:{d}.{j}" for d in range(len(prefix), DEPTH - 1)],
                                   f"# Answer\n\n{j % 3}"], True, 5) for j in range(k)])
        return out

    def score(self, items):
        return [(np.array([self.values(p.id, tuple(steps[:i + 1])) for i in range(len(steps))]), len(steps))
                for p, steps in items]


PROBLEMS = [Problem(f"problem {i}", answer="1", id=f"p{i}") for i in range(3)]


def brute_beam(problem: Problem, toy: Toy, n: int, m: int, how: str = "min") -> list[str]:
    """Beam search by enumeration: every level's children, the n/m best unfinished kept, to the end."""
    from prmkit.evaluate.aggregate import aggregate

    def val(steps):
        return aggregate([toy.values(problem.id, tuple(steps[:i + 1])) for i in range(len(steps))], how)

    level = [[toy.step(problem, 0, j).steps[0]] for j in range(n)]
    done = []
    for depth in range(1, DEPTH + 1):
        ended = [s for s in level if s[-1].startswith("# Answer")]
        done += ended
        open_ = sorted((s for s in level if s not in ended), key=val, reverse=True)[: n // m]  # stable, as search's
        if not open_ or len(done) >= n:
            break
        level = [[*s, toy.step(problem, depth, j).steps[0]] for s in open_ for j in range(m)]
    return max(done, key=val)


@pytest.mark.parametrize("n,m,how", [(4, 2, "min"), (6, 3, "product"), (4, 4, "last"), (8, 2, "mean")])
def test_beam_search_is_beam_search_by_enumeration(n, m, how):
    toy = Toy()
    results = search(PROBLEMS, toy, toy, SearchConfig(strategy="beam", n=n, m=m, aggregation=how))
    for problem, result in zip(PROBLEMS, results):
        assert result.chosen.steps == brute_beam(problem, toy, n, m, how)


def test_keeping_every_prefix_finds_the_best_leaf_of_the_tree():
    """With n/m no smaller than any level of the tree (the root's n children, then m of each kept one, all kept),
    beam search is exhaustive: it returns the best leaf of every path."""
    toy = Toy()
    n, m = 2, 1  # the tree: 2 first steps, 1 child each: every prefix is kept
    [result] = search(PROBLEMS[:1], toy, toy, SearchConfig(strategy="beam", n=n, m=m))
    leaves = [[toy.step(PROBLEMS[0], 0, j).steps[0], toy.step(PROBLEMS[0], 1, 0).steps[0],
               toy.step(PROBLEMS[0], 2, 0).steps[0]] for j in range(n)]
    best = max(leaves, key=lambda s: min(value_of("p0", tuple(s[:i + 1])) for i in range(3)))
    assert result.chosen.steps == best


def test_each_problem_gets_its_own_continuations_in_a_shared_batch():
    """search-and-learn #28: completions of interleaved prompts went to the wrong problems."""
    toy = Toy()
    for strategy in ("beam", "dvts", "particles", "best_of_n"):
        for problem, result in zip(PROBLEMS, search(PROBLEMS, toy, toy, SearchConfig(strategy=strategy, n=4, m=2))):
            assert all(s.startswith(f"{problem.id}:") for s in result.chosen.steps[:-1]), strategy
            assert all(t["step"].startswith((f"{problem.id}:", "# Answer")) for t in result.trace), strategy
    assert any(len({p.id for p, *_ in batch}) == len(PROBLEMS) for batch in toy.requests)  # one batch, every problem


def test_lookahead_scores_the_steps_it_looks_ahead():
    """search-and-learn's beam search generated lookahead steps but scored the prefix without them. Here a
    first step that looks bad and leads somewhere good is kept only when the look ahead is scored."""
    def values(problem, steps):
        if len(steps) == 1:
            return 0.4 if steps[0].endswith(".0") else 0.6  # child 0 looks worse ...
        return 0.95 if steps[0].endswith(".0") else 0.1  # ... but its continuations are far better

    toy = Toy(values)
    plain = search(PROBLEMS[:1], toy, toy, SearchConfig(strategy="beam", n=2, m=2, aggregation="last"))[0]
    ahead = search(PROBLEMS[:1], toy, toy, SearchConfig(strategy="beam", n=2, m=2, aggregation="last", lookahead=1))[0]
    assert plain.chosen.steps[0].endswith(".1") and ahead.chosen.steps[0].endswith(".0")
    assert ahead.cost.prm_calls > plain.cost.prm_calls and ahead.cost.generated_tokens > plain.cost.generated_tokens


def test_particles_are_resampled_against_particles_of_their_own_depth(monkeypatch):
    """its_hub #54: a particle's whole-solution weight was compared with others' partial weights."""
    seen = []
    original = Run.resample

    def recording(self, pop, rng, p):
        seen.append({len(c.steps) for c in pop})
        return original(self, pop, rng, p)

    class Early(Toy):  # odd children end at once, with an answer: particles finish at every depth
        def step(self, problem, depth, j):
            return Extension([f"# Answer\n\n{j}"], True, 2) if j % 2 else super().step(problem, depth, j)

    monkeypatch.setattr(Run, "resample", recording)
    toy = Early()
    results = search(PROBLEMS, toy, toy, SearchConfig(strategy="particles", n=6))
    ended = {len(t["step"]) and t["round"] for r in results for t in r.trace if t["finished"]}
    assert len(ended) > 1  # solutions ended at several depths ...
    assert seen and all(len(depths) == 1 for depths in seen)  # ... and each resampling saw one depth


def test_particle_filtering_repeats_under_its_seed():
    toy = Toy()
    runs = [[r.record() for r in search(PROBLEMS, toy, toy, SearchConfig(strategy="particles", n=8, seed=s))]
            for s in (0, 0, 1)]
    assert runs[0] == runs[1] and runs[0] != runs[2]


def test_answers_are_grouped_as_the_grader_groups_them():
    """its_hub #51/#53: answers were grouped before they were normalised."""
    cands = [Candidate(["x", "# Answer\n\n\\frac{1}{2}"], [0.5, 0.5], True),
             Candidate(["y", "# Answer\n\n0.5"], [0.4, 0.4], True),
             Candidate(["z", "# Answer\n\n3"], [0.8, 0.8], True)]
    chosen = pick(cands, SearchConfig(strategy="weighted", aggregation="min"))
    assert chosen is cands[0]  # 1/2 and 0.5 together (0.9) outweigh 3 (0.8)
    assert pick(cands, SearchConfig(strategy="weighted", vote="max")) is cands[2]
    assert pick(cands, SearchConfig(strategy="best_of_n")) is cands[2]


def test_the_weighted_pick_is_prmkit_evaluate_s_weighted_vote():
    """At N = M (every sample drawn) ``prmkit.evaluate``'s weighted vote is exact: the same group must win."""
    from prmkit.evaluate.pool import pool_from_lists
    from prmkit.evaluate.vote import vote_curve

    rng = np.random.default_rng(0)
    for _ in range(30):
        answers = [str(a) for a in rng.integers(0, 4, 6)]
        scores = rng.random(6)
        gold = answers[int(rng.integers(6))]
        cands = [Candidate(["s", f"# Answer\n\n{a}"], [float(x)], True) for a, x in zip(answers, scores)]
        chosen = pick(cands, SearchConfig(strategy="weighted", aggregation="last"))
        pool = pool_from_lists([answers], [[a == gold for a in answers]], scores={"w": [list(scores)]})
        voted = vote_curve(pool, [6], weights=pool.column("w")).per_problem[0, 0]
        assert voted == float(chosen.steps[-1].endswith(f"\n{gold}"))


def test_cost_is_what_the_search_asked_for():
    toy = Toy()
    [r] = search(PROBLEMS[:1], toy, toy, SearchConfig(strategy="beam", n=4, m=2))
    # three rounds of 4 candidates each (the answer step at depth 3): 4 + 4 one-step continuations of 3 tokens,
    # 4 answer steps of 2; every candidate scored once, reading its whole prefix (the toy counts steps)
    assert len(r.trace) == 12 and r.cost.generated_tokens == 8 * 3 + 4 * 2
    assert r.cost.prm_calls == 12 and r.cost.prm_tokens == 4 * (1 + 2 + 3)
    assert sum(t["kept"] for t in r.trace) == 2 + 2  # n/m kept after each of the first two rounds


def test_dvts_keeps_one_prefix_per_subtree():
    toy = Toy()
    [r] = search(PROBLEMS[:1], toy, toy, SearchConfig(strategy="dvts", n=6, m=3))
    first = [t for t in r.trace if t["round"] == 0]
    assert len(first) == 2  # n/m subtrees
    kept = [t for t in r.trace if t["kept"]]
    assert len(kept) == 2 * (DEPTH - 1)  # each subtree keeps one child a round
    assert {t["parent"] for t in r.trace if t["round"] == 1} == {t["id"] for t in first}


def test_bad_settings_are_refused():
    for bad in ({"strategy": "mcts"}, {"aggregation": "max"}, {"n": 6, "m": 4}, {"final": "vote"}, {"lookahead": -1}):
        with pytest.raises(ValueError):
            SearchConfig(**bad)


def test_the_lab_generator_and_a_real_prm_search_together(tiny_prm):
    """The adapters: the lab's rule-based generator continuing prefixes one step at a time, a trained PRM scoring
    them; every chosen solution ended (with an answer, or where the generator stopped without one), and its steps
    are ledger steps the oracle rates."""
    from prmkit.generate.config import GenerateConfig
    from prmkit.lab.backend import LabBackend
    from prmkit.lab.config import preset
    from prmkit.lab.domain import make_problems
    from prmkit.lab.domains import oracle_labels
    from prmkit.schema import Solution
    from prmkit.search.adapters import BackendExpander, PRMScorer

    problems = make_problems(preset("quick").domain, 3, seed=0)
    expander = BackendExpander(LabBackend(GenerateConfig(backend="lab", model="quick", seed=0)))
    scorer = PRMScorer(tiny_prm, device="cpu")
    for strategy in ("beam", "best_of_n", "particles"):
        results = search(problems, expander, scorer, SearchConfig(strategy=strategy, n=4, m=2, max_depth=12))
        for problem, r in zip(problems, results):
            assert r.chosen is not None and r.chosen.finished, strategy
            assert len(r.chosen.scores) == len(r.chosen.steps)
            labels = oracle_labels(Solution.from_steps(problem, r.chosen.steps))
            assert len(labels) == len(r.chosen.steps) and "unparseable step" not in {lab.reason for lab in labels}
            assert r.cost.prm_calls >= 4 and r.cost.prm_tokens > 0 and r.cost.generated_tokens > 0


def test_trace_parents_are_earlier_candidates():
    toy = Toy()
    for strategy, n, m in itertools.product(("beam", "dvts", "particles"), (4,), (2,)):
        [r] = search(PROBLEMS[:1], toy, toy, SearchConfig(strategy=strategy, n=n, m=m))
        assert all(t["parent"] is None or t["parent"] < t["id"] for t in r.trace), strategy


def test_prmkit_search_writes_resumes_and_refuses_another_search(tmp_path, tiny_prm, capsys):
    from prmkit.cli import main
    from prmkit.io import write_records
    from prmkit.lab.config import preset
    from prmkit.lab.domain import make_problems

    write_records(tmp_path / "problems.jsonl", make_problems(preset("quick").domain, 3, seed=0))
    argv = ["search", str(tmp_path / "problems.jsonl"), str(tmp_path / "out.jsonl"), "--prm", str(tiny_prm),
            "--backend", "lab", "--model", "quick", "--strategy", "beam", "--n", "4", "--m", "2", "--chunk", "2",
            "--no-progress"]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert first["searched"] == 3 and [r["id"] for r in lines] == ["ledger-eval-0-0", "ledger-eval-0-1", "ledger-eval-0-2"]
    assert all(r["chosen"]["steps"] and r["cost"]["prm_calls"] > 0 and r["stamp"]["search"]["strategy"] == "beam"
               for r in lines)
    assert main(argv) == 0 and json.loads(capsys.readouterr().out)["skipped"] == 3  # resumed: nothing searched again
    out = tmp_path / "out.jsonl"  # a run stopped after its first chunk: its partial file holds two results
    (tmp_path / ".out.jsonl.part").write_text("".join(line + "\n" for line in out.read_text().splitlines()[:2]))
    out.unlink()
    assert main(argv) == 0 and json.loads(capsys.readouterr().out)["searched"] == 1
    assert [json.loads(line) for line in out.read_text().splitlines()] == lines  # the same results, in order
    assert main([*argv, "--strategy", "dvts"]) == 2  # another strategy into the same OUT
    assert "a result of another search (it differs in search)" in capsys.readouterr().err


def test_a_step_at_a_time_from_a_model_with_a_stop_string(tmp_path, tiny_lm, tiny_prm, capsys):
    """The hf backend with the step separator as a stop string writes one step per call; a solution then ends
    only at its answer step or at max_depth."""
    from prmkit.cli import main

    (tmp_path / "p.jsonl").write_text(json.dumps({"problem": "1 + 1 =", "answer": "2", "id": "a"}) + "\n")
    argv = ["search", str(tmp_path / "p.jsonl"), str(tmp_path / "out.jsonl"), "--prm", str(tiny_prm), "--backend",
            "hf", "--model", str(tiny_lm), "--stop", "\n", "--max-new-tokens", "6", "--strategy", "beam", "--n", "2",
            "--m", "1", "--max-depth", "3", "--device", "cpu", "--prm-device", "cpu", "--no-progress"]
    assert main(argv) == 0
    [record] = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    rounds = max(t["round"] for t in record["trace"]) + 1
    assert len(record["chosen"]["steps"]) <= 3 and rounds <= 3
    assert record["cost"]["generated_tokens"] <= 6 * len(record["trace"])


def test_a_served_prm_searches_as_the_same_prm_in_process(tmp_path, tiny_prm, capsys):
    """``--prm-url``: the PRM behind ``prmkit serve --scorer`` (a real server, httpx) gives the in-process scorer's
    step scores and token counts, so the same search picks the same solutions; the stamp keys the weights the
    server reports; a dead server is named."""
    from prmkit.cli import main
    from prmkit.io import write_records
    from prmkit.lab.config import preset
    from prmkit.lab.domain import make_problems
    from prmkit.search.adapters import PRMScorer, ServedScorer
    from prmkit.serve import background, free_port
    from prmkit.serve.app import ServeConfig, Service

    problems = make_problems(preset("quick").domain, 3, seed=0)
    items = [(p, ["A + 1 : 67 + 1 = 68", "B - 2 : 68 - 2 = 66"][:k]) for p in problems for k in (1, 2)]
    service = Service(ServeConfig(scorer=str(tiny_prm), max_batch=8))
    try:
        with background(service) as url:
            served = ServedScorer(url, batch_size=4)
            assert served.identity["scorer_kind"] == "prm" and served.identity["scorer_weights"]
            here = PRMScorer(tiny_prm, device="cpu").score(items)
            there = served.score(items)
            assert [t for _, t in there] == [t for _, t in here]
            assert all(np.allclose(a, b, atol=1e-6) for (a, _), (b, _) in zip(there, here))
            write_records(tmp_path / "p.jsonl", problems)
            common = ["--backend", "lab", "--model", "quick", "--strategy", "beam", "--n", "4", "--m", "2", "--no-progress"]
            assert main(["search", str(tmp_path / "p.jsonl"), str(tmp_path / "a.jsonl"), "--prm-url", url, *common]) == 0
            assert main(["search", str(tmp_path / "p.jsonl"), str(tmp_path / "b.jsonl"), "--prm", str(tiny_prm),
                         *common]) == 0
    finally:
        service.close()
    capsys.readouterr()
    a, b = ([json.loads(line) for line in (tmp_path / f"{x}.jsonl").read_text().splitlines()] for x in "ab")
    assert [r["chosen"] for r in a] == [r["chosen"] for r in b]
    assert [r["cost"] for r in a] == [r["cost"] for r in b]
    assert a[0]["stamp"]["prm_weights"] == b[0]["stamp"]["prm_weights"] and a[0]["stamp"]["prm"] == "served"
    assert main(["search", str(tmp_path / "p.jsonl"), str(tmp_path / "i.jsonl"), "--prm", str(tiny_prm),
                 "--incremental", *common]) == 0  # the key/value cache kept between rounds: the same picks
    inc = [json.loads(line) for line in (tmp_path / "i.jsonl").read_text().splitlines()]
    assert [r["chosen"]["steps"] for r in inc] == [r["chosen"]["steps"] for r in b]
    assert all(np.allclose(x["chosen"]["scores"], y["chosen"]["scores"], atol=1e-5) for x, y in zip(inc, b))
    for x, y in zip(inc, b):  # the same work asked of the PRM, for fewer tokens run
        assert x["cost"]["prm_calls"] == y["cost"]["prm_calls"] and x["cost"]["prm_tokens"] < y["cost"]["prm_tokens"]
    assert inc[0]["stamp"]["prm_incremental"] and "prm_incremental" not in b[0]["stamp"]
    dead = f"http://127.0.0.1:{free_port()}/v1"
    assert main(["search", str(tmp_path / "p.jsonl"), str(tmp_path / "c.jsonl"), "--prm-url", dead, *common]) != 0
    assert f"GET {dead.removesuffix('/v1')}/health" in capsys.readouterr().err
    assert main(["search", str(tmp_path / "p.jsonl"), str(tmp_path / "c.jsonl"), *common]) != 0
    assert "needs one PRM" in capsys.readouterr().err


def test_incremental_batches_read_right_under_eager_attention(tiny_prm):
    """A batch's custom mask is additive, so an attention that adds the mask to its scores (eager) reads it as SDPA
    does: the same scores as whole-prefix scoring, for prefixes of different cache lengths in one batch."""
    from prmkit.score import Scorer
    from prmkit.search.adapters import PRMScorer
    from prmkit.search.incremental import IncrementalPRMScorer

    scorer = Scorer(tiny_prm, device="cpu")
    rounds = [[["1 + 2 = 3"], ["40 + 5 = 45, carried"]], [["1 + 2 = 3", "3 + 4 = 7"], ["40 + 5 = 45, carried", "45 + 1 = 46"],
                                                           ["7 = 7"]]]
    want = [PRMScorer(scorer).score([(PROBLEMS[0], c) for c in r]) for r in rounds]
    scorer.model.backbone.set_attn_implementation("eager")
    incremental = IncrementalPRMScorer(scorer)
    for r, expected in zip(rounds, want, strict=True):
        got = incremental.score([(PROBLEMS[0], c) for c in r])
        for (p, _), (q, _) in zip(got, expected, strict=True):
            assert np.allclose(p, q, atol=1e-5)
    assert all(ran < tokens for (_, ran), (_, tokens) in zip(got[:2], want[1][:2]))  # the second round used the caches


def test_incremental_repeats_and_windowed_models(tiny_prm):
    """A prefix asked twice in one call runs once (the repeat costs no tokens, the same scores); a model whose layers
    would build their own mask (a sliding window) is scored whole, since the batch's mask would replace its window."""
    from transformers import MistralConfig, MistralForCausalLM

    from prmkit.score import Scorer
    from prmkit.search.adapters import PRMScorer
    from prmkit.search.incremental import IncrementalPRMScorer, cache_problem

    scorer = Scorer(tiny_prm, device="cpu")
    assert cache_problem(scorer.model.backbone) is None
    items = [(PROBLEMS[0], ["1 + 2 = 3"]), (PROBLEMS[0], ["1 + 2 = 3"]), (PROBLEMS[1], ["4 = 4"])]
    got, want = IncrementalPRMScorer(scorer).score(items), PRMScorer(scorer).score(items)
    assert [ran for _, ran in got] == [want[0][1], 0, want[2][1]]
    assert all(np.allclose(p, q, atol=1e-5) for (p, _), (q, _) in zip(got, want, strict=True))

    windowed = MistralForCausalLM(MistralConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                                num_attention_heads=2, num_key_value_heads=2, sliding_window=4))
    assert "sliding-window" in cache_problem(windowed)
    scorer.model.backbone.config.sliding_window = 4  # this Llama now reads as windowed: every prefix scored whole
    try:
        whole_only = IncrementalPRMScorer(scorer)
        assert whole_only.whole_only
        assert [ran for _, ran in whole_only.score(items)] == [tokens for _, tokens in want]
    finally:
        scorer.model.backbone.config.sliding_window = None


def test_incremental_scores_equal_whole_prefix_scores_on_random_trees(tiny_prm):
    """The key/value cache kept between rounds (issue 35 item 2): on random trees grown a step at a time, every
    prefix's step scores and token count equal scoring the prefix whole (to 1e-5), and an extension runs the
    backbone on its new tokens only, every prefix of a round in one batch (caches of different lengths padded)."""
    import random

    from prmkit.score import Scorer
    from prmkit.search.adapters import PRMScorer
    from prmkit.search.incremental import IncrementalPRMScorer

    scorer = Scorer(tiny_prm, device="cpu")
    incremental, whole = IncrementalPRMScorer(scorer, keep=64), PRMScorer(scorer)
    backbone = scorer.model.backbone
    forward, seen = backbone.forward, []

    def counting(*args, **kwargs):
        seen.append(tuple((kwargs["input_ids"] if "input_ids" in kwargs else args[0]).shape))
        return forward(*args, **kwargs)

    rng = random.Random(7)
    for tree in range(3):
        problem = PROBLEMS[tree % len(PROBLEMS)]
        frontier = [[]]
        for depth in range(5):
            children = [pre + [f"{rng.randint(0, 99)} + {rng.randint(0, 9)} = {rng.randint(0, 120)}"]
                        for pre in frontier for _ in range(rng.randint(1, 3))]
            # beside the children, a prefix of another problem nothing cached: one batch mixes caches and none
            items = [(problem, c) for c in children] + [(PROBLEMS[-1], [f"{rng.randint(0, 99)} = {tree}{depth}"])]
            backbone.forward, seen[:] = counting, []
            got = incremental.score(items)
            backbone.forward = forward
            want = whole.score(items)
            for (p, ran), (q, tokens), (_, steps) in zip(got, want, items, strict=True):
                assert len(p) == len(q) == len(steps) and np.allclose(p, q, atol=1e-5), (tree, depth)
                assert ran < tokens if depth and len(steps) > 1 else ran == tokens  # a child runs its new tokens only
            ran = [r for _, r in got if r]
            assert seen == [(len(ran), max(ran))]  # ... and that is what the backbone saw, all in one batch
            frontier = rng.sample(children, min(2, len(children)))
