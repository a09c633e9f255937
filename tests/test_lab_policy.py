"""The lab's generators behind the generator interface: the rule-based one continues partial solutions,
and the base model as the ``lm`` policy samples graded pools through ``prmkit generate``."""

from __future__ import annotations

import pytest

from prmkit.generate import GenerateConfig, generate_file
from prmkit.io import read_solutions, write_records
from prmkit.lab import GeneratorConfig, LedgerConfig, generate, make_problems, oracle_labels, preset
from prmkit.lab.backend import lab_backend, lab_text
from prmkit.lab.generator import continue_samples, resume_point
from prmkit.lab.oracle import ledger_of

OFF = GeneratorConfig(misconception_rate=0.0, misreading_rate=0.0, arithmetic_slip_rate=0.0, stale_operand_rate=0.0,
                      flipped_operator_rate=0.0, silent_fix_rate=0.0, check_rate=0.0, no_answer_rate=0.0)


def test_an_error_free_continuation_finishes_the_true_solution():
    for problem in make_problems(LedgerConfig(), 30, seed=3):
        full = generate([problem], OFF, 1, seed=0)[0].texts
        for k in range(len(full)):
            rest = continue_samples(problem, full[:k], OFF, 2, seed=5)
            assert rest == [full[k:], full[k:]]


def test_continuations_carry_the_prefix_state_and_differ_by_draw():
    cfg = preset("default").generator
    problem = make_problems(LedgerConfig(), 1, seed=0)[0]
    led = ledger_of(problem.problem)
    wrong = [f"A + 1 : {led.start} + 1 = {led.start + 50}"]  # a slip the continuation must carry on from
    state = resume_point(led, wrong)
    assert (state.start, state.cur) == (1, led.start + 50)
    rest = continue_samples(problem, wrong, cfg, 32, seed=1)
    assert len({tuple(r) for r in rest}) > 8
    assert resume_point(led, ["# Answer\n\n3"]) is None and continue_samples(problem, ["# Answer\n\n3"], cfg, 2, 0) == [[], []]
    labels = [oracle_labels_of(problem, wrong + r) for r in rest]
    assert all(lab[0] == -1 for lab in labels)  # the prefix's slip stays a -1 step
    firsts = [next(t for t in r if not t.startswith("check")) for r in rest]
    carried = [t.startswith("B") and f": {led.start + 50} " in t for t in firsts]
    assert sum(carried) >= 28  # B starts from the prefix's (wrong) value, but for a rare silent fix


def oracle_labels_of(problem, texts):
    from prmkit.schema import Solution

    return [lab.rating for lab in oracle_labels(Solution.from_steps(problem, texts))]


def test_the_lab_backend_through_generate_file(tmp_path):
    src, out = tmp_path / "problems.jsonl", tmp_path / "out.jsonl"
    problems = make_problems(LedgerConfig(), 5, seed=2)
    write_records(src, problems)
    generate_file(src, out, GenerateConfig(backend="lab", model="quick", n=4, seed=2, progress=False))
    via_file = [s.texts for s in read_solutions(out)]
    direct = [s.texts for s in generate(problems, preset("quick").generator, 4, seed=2)]
    assert via_file == direct
    b = lab_backend(GenerateConfig(backend="lab"))
    rest = b.complete(problems[0], [], 6)
    assert rest == b.complete(problems[0], [], 6) and len({r.text for r in rest}) > 1  # seeded, and samples differ
    with pytest.raises(ValueError, match="takes no --temperature, --stop"):
        lab_backend(GenerateConfig(backend="lab", temperature=0.5, stop=["x"]))
    with pytest.raises(ValueError, match="lab-lm backend prompts its base in the lab's layout: it takes no --prompt"):
        lab_backend(GenerateConfig(backend="lab-lm", prompt="Q: {problem}"))


def test_lab_text_undoes_the_word_level_decoder():
    assert lab_text("B + 2 : 5 + 2 = 7 \n <step> # Answer \n \n 7 \n <step>") == "B + 2 : 5 + 2 = 7\n<step># Answer\n\n7\n<step>"


@pytest.mark.slow
def test_the_lm_policy_samples_graded_pools_of_the_domain(lab_cache):
    from prmkit.lab.pools import generate_pool
    from prmkit.lab.stats import pool_stats

    cfg = preset("quick-lm")
    pool = generate_pool(cfg, seed=0, split="eval", problems=12, samples=16)
    assert len(pool) == 192 and pool[0].generator.name.startswith("lab-lm/")
    d = pool_stats(pool)
    assert d["step_reasons"].get("unparseable step", 0) < 0.05  # it writes the domain's lines
    assert d["maj_acc@16"] < d["pass@16"] and d["pass@1"] < d["pass@16"]
    assert 5 <= d["steps_per_solution"] <= 12 and d["no_answer"] < 0.1
    ends = [s.meta["generation"]["finish_reason"] for s in pool]
    assert ends.count("stop") >= 0.95 * len(ends)  # it stops after its "# Answer" step: no EOS needed
    assert all(s.texts[-1].startswith("# Answer\n\n") for s in pool if s.answer is not None)
    again = generate_pool(cfg, seed=0, split="eval", problems=12, samples=16)
    assert [s.texts for s in again] == [s.texts for s in pool]  # the seed decides the samples
    backend = lab_backend(GenerateConfig(backend="lab-lm", model="quick", max_new_tokens=200))
    problem = pool[0].problem
    rest = backend.complete(problem, pool[0].texts[:2], 4)
    assert all(r.text.split("\n")[0].strip() != pool[0].texts[1] for r in rest)  # continues after the prefix
