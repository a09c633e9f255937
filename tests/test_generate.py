"""``prmkit generate``: the hf backend on a tiny local model, records, resume, shards, prompts, the CLI.

The model is a tiny Llama built from a config and saved to a folder, so every test goes through the
real ``from_pretrained`` path; its weights are random (what is tested is how it is sampled, not what it says).
"""

from __future__ import annotations

import json

import pytest

from prmkit.generate import GenerateConfig, generate_file, split_steps
from prmkit.generate.backend import Backend, GenerationError, Sample
from prmkit.generate.hf import HFBackend, top_p_filter
from prmkit.generate.run import part_path
from prmkit.io import read_solutions, write_records
from prmkit.schema import Problem, Solution

PROBLEMS = [Problem(f"{a} + {b} =", answer=str(a + b), id=f"p{a}-{b}") for a, b in [(1, 2), (13, 4), (7, 7), (2, 9)]]


@pytest.fixture(scope="module")
def lm_dir(tiny_lm):
    return tiny_lm


@pytest.fixture
def problems_file(tmp_path):
    path = tmp_path / "problems.jsonl"
    write_records(path, PROBLEMS)
    return path


def texts(samples):
    return [[s.text for s in per] for per in samples]


def test_batched_equals_one_at_a_time_and_seed_decides(lm_dir):
    cfg = GenerateConfig(model=str(lm_dir), n=3, max_new_tokens=12)
    one = HFBackend.from_config(GenerateConfig(**{**cfg.__dict__, "batch_size": 1})).generate(PROBLEMS, 3)
    many = HFBackend.from_config(GenerateConfig(**{**cfg.__dict__, "batch_size": 16})).generate(PROBLEMS, 3)
    other = HFBackend.from_config(GenerateConfig(**{**cfg.__dict__, "seed": 1})).generate(PROBLEMS, 3)
    assert texts(one) == texts(many)
    assert texts(one) != texts(other)
    assert len({t for per in texts(one) for t in per}) == 12  # 12 different samples, not one repeated
    ends = [(s.tokens, s.finish_reason) for per in one for s in per]
    assert all(t <= 12 and (t == 12) == (reason == "length") for t, reason in ends)  # EOS or the token budget
    assert sum(reason == "length" for _, reason in ends) >= 6


def test_noise_in_blocks_with_no_draws_after_a_row_ends_gives_the_samples_of_one_draw_per_token(lm_dir, monkeypatch):
    """The samples of drawing every row's noise a token at a time to the last token (as before blocks) are those of
    drawing several tokens' noise at once and nothing once a row has ended; rows end at different tokens here."""
    from prmkit.generate import hf

    cfg = GenerateConfig(model=str(lm_dir), n=4, max_new_tokens=40, stop=["1", "2"], batch_size=16)
    backend = HFBackend.from_config(cfg)
    plain_init, plain_uniform = hf.RowNoise.__init__, hf.RowNoise._uniform
    with monkeypatch.context() as m:
        m.setattr(hf, "NOISE_NUMBERS", 1)  # one token's noise per draw
        m.setattr(hf.RowNoise, "__init__", lambda self, seeds, sampling, done=None: plain_init(self, seeds, sampling))
        before = backend.generate(PROBLEMS, 4)
    refills = []

    def counting(self, width, device):  # how many rows had ended at each new block
        if self.block is None or self.used == self.block.shape[1]:
            refills.append(sum(d is not None for d in self.done))
        return plain_uniform(self, width, device)

    monkeypatch.setattr(hf.RowNoise, "_uniform", counting)
    width = backend.sampler.model.config.vocab_size
    for numbers in (hf.NOISE_NUMBERS, 3 * width):  # the default, and blocks of 3 tokens that end mid-sample
        monkeypatch.setattr(hf, "NOISE_NUMBERS", numbers)
        assert texts(backend.generate(PROBLEMS, 4)) == texts(before)
    assert len({s.tokens for per in before for s in per}) > 2 and max(refills) > 0


@pytest.mark.parametrize("width", [7, 300, 1058, 4096])
def test_one_cpu_draw_of_several_tokens_is_the_draws_of_one_token_each(width):
    import torch

    from prmkit.generate.hf import NOISE_NUMBERS

    tokens = max(1, NOISE_NUMBERS // width)
    one, each = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    block = torch.rand(tokens * width, generator=one).view(tokens, width)
    assert torch.equal(block, torch.stack([torch.rand(width, generator=each) for _ in range(tokens)]))
    assert torch.equal(torch.rand(width, generator=one), torch.rand(width, generator=each))  # and in step after


def test_greedy_is_the_argmax_and_top_p_keeps_the_head(lm_dir):
    import torch

    from prmkit.generate.hf import Sampling

    greedy = HFBackend.from_config(GenerateConfig(model=str(lm_dir), temperature=0, max_new_tokens=3))
    prompt = greedy.prompt_ids(PROBLEMS[0], [])
    (ids, _), = greedy.sampler.sample([prompt], [0], Sampling(3, 0.0, 1.0))
    with torch.no_grad():
        logits = greedy.sampler.model(torch.tensor([prompt + ids[:1]])).logits[0]
    assert ids[:2] == [int(logits[-2].argmax()), int(logits[-1].argmax())]  # the model's own argmax, twice
    scores = torch.tensor([[3.0, 2.0, 1.0, -5.0]])
    kept = torch.isfinite(top_p_filter(scores, 0.8))[0].tolist()
    assert kept == [True, True, False, False]  # 0.67 then 0.91 of the mass: two tokens reach 0.8


def test_complete_continues_a_prefix_through_the_formatter(lm_dir):
    from prmkit.model.formatter import encode

    b = HFBackend.from_config(GenerateConfig(model=str(lm_dir), max_new_tokens=6, marker=""))
    ids = b.prompt_ids(PROBLEMS[0], ["1 + 2 = 3"])
    assert ids == encode(b.sampler.tokenizer, PROBLEMS[0].problem, ["1 + 2 = 3"], b.fmt).input_ids
    assert b.sampler.tokenizer.decode(ids, skip_special_tokens=True) == "1 + 2 =\n1 + 2 = 3\n"
    out = b.complete(PROBLEMS[0], ["1 + 2 = 3"], 2)
    assert len(out) == 2 and out[0].text != out[1].text


def test_records_are_split_graded_and_described(lm_dir, problems_file, tmp_path):
    out = tmp_path / "out.jsonl.gz"
    cfg = GenerateConfig(model=str(lm_dir), n=2, max_new_tokens=8, temperature=0.7, progress=False)
    summary = generate_file(problems_file, out, cfg)
    sols = list(read_solutions(out))
    assert summary["written"] == len(sols) == 8
    assert summary["tokens"] == sum(s.meta["generation"]["tokens"] for s in sols) > 40
    assert [s.id for s in sols[:2]] == ["p1-2/0-0", "p1-2/0-1"]
    assert sols[0].generator.name == str(lm_dir)
    assert sols[0].generator.sampling["temperature"] == 0.7 and sols[0].generator.sampling["backend"] == "hf"
    assert set(sols[0].meta["generation"]) == {"finish_reason", "tokens"}
    assert {s.grade for s in sols} <= {"incorrect", "unparseable", "correct"}
    assert not part_path(out).exists()


class ScriptedBackend(Backend):
    """Samples whose text is known (an answer line), dying after ``die_after`` generate calls."""

    name = "scripted"

    def __init__(self, die_after: int | None = None):
        self.calls, self.die_after, self.asked = 0, die_after, []

    def generate(self, problems, n):
        self.calls += 1
        if self.die_after is not None and self.calls > self.die_after:
            raise GenerationError("server went away")
        self.asked += [p.id for p in problems]
        return [[Sample(f"{p.problem} {j}\n# Answer\n\n{p.answer if j == 0 else 0}", 5, "stop") for j in range(n)]
                for p in problems]


def test_a_killed_run_keeps_its_samples_and_a_rerun_never_duplicates(problems_file, tmp_path):
    out = tmp_path / "out.jsonl"
    cfg = GenerateConfig(backend="lab", n=3, flush_every=1, progress=False)
    logs = []
    with pytest.raises(GenerationError, match="server went away"):
        generate_file(problems_file, out, cfg, backend=ScriptedBackend(die_after=2), log=logs.append)
    assert not out.exists() and "rerun resumes" in logs[0]
    kept = [json.loads(line)["id"] for line in part_path(out).read_text().splitlines()]
    assert len(kept) == 6  # the two problems finished before the failure
    with open(part_path(out), "a") as f:
        f.write('{"id": "p7-7/0-0", "torn')  # a writer killed mid-line
    again = ScriptedBackend()
    summary = generate_file(problems_file, out, cfg, backend=again)
    assert again.asked == ["p7-7", "p2-9"] and summary["written"] == 6
    sols = list(read_solutions(out))
    assert [s.id for s in sols] == [f"{p.id}/0-{j}" for p in PROBLEMS for j in range(3)]
    assert [s.grade for s in sols[:3]] == ["correct", "incorrect", "incorrect"]
    assert sols[0].texts == ["1 + 2 = 0", "# Answer\n\n3"]
    assert generate_file(problems_file, out, cfg, backend=ScriptedBackend())["written"] == 0


def test_shards_partition_the_problems(problems_file, tmp_path):
    ids = []
    for i in range(3):
        cfg = GenerateConfig(backend="lab", n=1, shard=f"{i}/3", progress=False)
        generate_file(problems_file, tmp_path / f"s{i}.jsonl", cfg, backend=ScriptedBackend())
        ids += [s.id for s in read_solutions(tmp_path / f"s{i}.jsonl")]
    assert sorted(ids) == sorted(f"{p.id}/0-0" for p in PROBLEMS)


def test_few_shot_prompt_from_a_recipe_file(lm_dir, tmp_path):
    shots = tmp_path / "shots.jsonl"
    write_records(shots, [Solution.from_steps("1 + 1 =", ["1 + 1 = 2", "# Answer\n\n2"])])
    cfg = GenerateConfig(model=str(lm_dir), prompt="Q: {problem}", few_shot=str(shots), few_shot_n=1, marker="")
    b = HFBackend.from_config(cfg)
    text = b.sampler.tokenizer.decode(b.prompt_ids(PROBLEMS[0], []), skip_special_tokens=True)
    assert text == "Q: 1 + 1 =\n1 + 1 = 2\n# Answer\n\n2\n\nQ: 1 + 2 =\n"
    with pytest.raises(ValueError, match="few_shot_n is 2"):
        HFBackend.from_config(GenerateConfig(**{**cfg.__dict__, "few_shot_n": 2}))


def test_the_cli_reads_a_math_file_and_a_recipe(lm_dir, tmp_path, capsys):
    from prmkit.cli import main

    src = tmp_path / "math.jsonl"
    src.write_text(json.dumps({"problem": "What is $1+1$?", "solution": "$\\boxed{2}$", "unique_id": "t/1"}) + "\n")
    recipe = tmp_path / "gen.yaml"
    recipe.write_text(f"backend: hf\nmodel: {lm_dir}\nn: 2\nmax_new_tokens: 4\n")
    out = tmp_path / "out.jsonl"
    assert main(["generate", "--from", "math", "--recipe", str(recipe), "--n", "3", "--no-progress",
                 str(src), str(out)]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["written"] == 3
    sols = list(read_solutions(out))
    assert [s.id for s in sols] == ["t/1/0-0", "t/1/0-1", "t/1/0-2"] and sols[0].problem.answer == "2"
    assert main(["generate", "--backend", "hf", str(src), str(out)]) == 2  # no --model: a clear error


@pytest.mark.parametrize("text, mode, steps", [
    ("a\n\nb\n# Answer\n\n5\n", "newline", ["a", "b", "# Answer\n\n5"]),
    ("a\nb\n\nc", "blank", ["a\nb", "c"]),
    ("a ;; b ;; # Answer\n\n1", "custom", ["a", "b", "# Answer\n\n1"]),
    ("no answer here", "newline", ["no answer here"]),
    ("x # Answer is not a closing line\ny", "newline", ["x # Answer is not a closing line", "y"]),
])
def test_split_steps_modes(text, mode, steps):
    assert split_steps(text, mode, separator=" ;; ") == steps


def test_the_few_shot_recipe_in_the_repository_prompts_in_the_papers_format(lm_dir):
    from pathlib import Path

    from prmkit.config import read_recipe
    from prmkit.generate.prompt import load_shots, prompt_text
    from prmkit.train.config import resolve

    root = Path(__file__).resolve().parents[1]
    recipe = read_recipe(root / "recipes" / "generate-fewshot.yaml")
    recipe["few_shot"] = str(root / recipe["few_shot"])
    cfg = resolve(GenerateConfig, recipe, {"model": str(lm_dir)})
    shots = load_shots(cfg)
    text = prompt_text("What is 2+3?", [], cfg, shots)
    assert text.startswith("Problem: What is the sum of the first 10 positive odd integers?\nSolution:\nThe first")
    assert text.endswith("# Answer\n\n6\n\nProblem: What is 2+3?\nSolution:\n")
    assert cfg.stop == ["\nProblem:"] and HFBackend.from_config(cfg).generate(PROBLEMS[:1], 2)


def test_stop_strings_end_generation(lm_dir):
    free = HFBackend.from_config(GenerateConfig(model=str(lm_dir), n=4, max_new_tokens=24)).generate(PROBLEMS[:1], 4)[0]
    text = next(s.text for s in free if len(s.text) > 10)
    stop = text[6:8]
    cut = HFBackend.from_config(GenerateConfig(model=str(lm_dir), n=4, max_new_tokens=24, stop=[stop])).generate(
        PROBLEMS[:1], 4)[0]
    for a, b in zip(free, cut):
        if stop in a.text:
            assert b.text == a.text[: a.text.index(stop)] and b.finish_reason == "stop" and b.tokens < a.tokens
        else:
            assert (b.text, b.tokens) == (a.text, a.tokens)


def test_a_rerun_after_a_kill_between_the_two_renames_writes_no_duplicate(problems_file, tmp_path):
    out = tmp_path / "out.jsonl"
    cfg = GenerateConfig(backend="lab", n=2, progress=False)
    generate_file(problems_file, out, cfg, backend=ScriptedBackend())
    part_path(out).write_text(out.read_text())  # killed after OUT was replaced, before its partial file went
    assert generate_file(problems_file, out, cfg, backend=ScriptedBackend())["written"] == 0
    ids = [s.id for s in read_solutions(out)]
    assert len(ids) == len(set(ids)) == 8 and not part_path(out).exists()


def test_shards_may_share_one_output_and_more_samples_extend_it(problems_file, tmp_path):
    out = tmp_path / "out.jsonl"
    for i in range(2):
        cfg = GenerateConfig(backend="lab", n=1, shard=f"{i}/2", progress=False)
        generate_file(problems_file, out, cfg, backend=ScriptedBackend())
    assert sorted(s.id for s in read_solutions(out)) == sorted(f"{p.id}/0-0" for p in PROBLEMS)
    summary = generate_file(problems_file, out, GenerateConfig(backend="lab", n=3, progress=False),
                            backend=ScriptedBackend())
    assert summary["written"] == 8 and summary["skipped_already_done"] == 4
    assert sorted(s.id for s in read_solutions(out)) == sorted(f"{p.id}/0-{j}" for p in PROBLEMS for j in range(3))


def test_a_rerun_with_other_settings_is_refused(lm_dir, problems_file, tmp_path):
    out = tmp_path / "out.jsonl"
    cfg = GenerateConfig(model=str(lm_dir), n=1, max_new_tokens=4, progress=False)
    generate_file(problems_file, out, cfg)
    with pytest.raises(ValueError, match=r"temperature: 1.0 there, 0.5 now.*--no-resume"):
        generate_file(problems_file, out, GenerateConfig(**{**cfg.__dict__, "n": 2, "temperature": 0.5}))
    assert generate_file(problems_file, out, GenerateConfig(**{**cfg.__dict__, "n": 2, "temperature": 0.5,
                                                               "resume": False}))["written"] == 8


def test_an_ungradable_sample_keeps_why_in_its_record(monkeypatch):
    """A grader that could not decide leaves its reason and error text in the record, not only the verdict."""
    from prmkit import grade as grading
    from prmkit.generate import run as generate_run
    from prmkit.generate.backend import Sample
    from prmkit.schema import Problem

    def undecided(given, gold, *args, **kwargs):
        return grading.GradeResult("unparseable", "given-unparsed", given, gold, detail="LaTeXParseError: bad")

    monkeypatch.setattr(grading, "grade", undecided)
    sample = Sample(text="Step one.\n\n# Answer\n\n\\frac{", tokens=9, finish_reason="stop")
    sol = generate_run.to_solution(Problem("q", answer="1"), "q/0", sample, generate_run.GenerateConfig(), None)
    assert sol.grade == "unparseable"
    assert sol.meta["grading"] == {"reason": "given-unparsed", "detail": "LaTeXParseError: bad"}
    monkeypatch.undo()
    graded = generate_run.to_solution(Problem("q", answer="1"), "q/0", sample, generate_run.GenerateConfig(), None)
    assert graded.grade in ("correct", "incorrect") and "grading" not in graded.meta


PLUGIN = '''
from prmkit.generate.backend import Backend, Sample


class Echo(Backend):
    name = "echo"

    def __init__(self, cfg):
        self.cfg = cfg

    def complete(self, problem, prefix_steps, n, start=0):
        return [Sample(f"I copy it.\\n# Answer\\n\\n{problem.answer}", 5, "stop") for _ in range(n)]
'''


def test_a_backend_another_package_registers_is_a_backend_like_prmkits(problems_file, tmp_path, monkeypatch, capsys):
    """An installed package's ``prmkit.backends`` entry point (a real distribution's metadata on sys.path) is
    found, named in the error for an unknown backend, and generates through the CLI."""
    from prmkit.cli import main
    from prmkit.generate.backend import backend_factories

    site = tmp_path / "site"
    (site / "echo_backend-0.1.dist-info").mkdir(parents=True)
    (site / "echo_backend-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: echo-backend\nVersion: 0.1\n")
    (site / "echo_backend-0.1.dist-info" / "entry_points.txt").write_text("[prmkit.backends]\necho = echo_backend:Echo\n")
    (site / "echo_backend.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(site))
    assert backend_factories()["echo"] == "echo_backend:Echo"
    assert {"hf", "vllm", "openai", "lab", "lab-lm"} <= set(backend_factories())  # the lab's by its entry points
    out = tmp_path / "echo.jsonl"
    assert main(["generate", str(problems_file), str(out), "--backend", "echo", "--n", "2", "--no-progress"]) == 0
    records = list(read_solutions(out))
    assert len(records) == 2 * len(PROBLEMS) and {r.grade for r in records} == {"correct"}
    assert records[0].generator.name == "echo"
    with pytest.raises(ValueError, match=r"unknown backend 'ech' \(known: echo, hf, lab"):
        generate_file(problems_file, tmp_path / "x.jsonl", GenerateConfig(backend="ech", progress=False))
