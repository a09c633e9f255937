"""``prmkit rl``: a causal LM trained by GRPO (TRL's trainer, :mod:`prmkit.rl.grpo`) against a prmkit PRM or
ORM (:class:`~prmkit.rl.reward.PRMReward`), on a file of problems, into a run folder.

The folder (``OUT``):

- ``run.json``: what the run is (its config, and digests of the policy's and the reward model's weights and of
  the problem file); a rerun into ``OUT`` resumes only the same run, and refuses another, naming what differs.
  ``steps`` and ``save_every`` may change: a larger ``steps`` extends a finished run from its last checkpoint.
- ``trl/checkpoint-S/``: TRL's checkpoints (weights, optimiser, schedule, random states) every
  ``save_every`` steps and at the end; a run stopped by anything resumes from the last one. Rollout seeds
  follow the optimiser step, so a resumed run samples what the uninterrupted run would have.
- ``metrics.jsonl``: one evaluation per line, before the first step, every ``eval_every`` steps and after the
  last, on held-out problems: the proxy (the reward), gold (the answer graded against the problem's answer,
  where the file gives answers), KL(policy || initial) per sample, and what hacking looks like (steps and
  tokens per solution, answerless samples, repeated steps). Written as each is measured.
- ``policy/``: the trained policy (``save_pretrained``, with its tokenizer); ``summary.json``: the config,
  the evaluations, TRL's per-step log (reward, KL, loss, length), the command, the stack and the commit; and
  ``report.html`` (``prmkit report OUT`` renders it again).

The policy's prompts are laid out by the reward model's own formatter (its saved ``FormatConfig``), so the
policy writes steps in the layout the reward model reads (:func:`policy_format`). The last ``eval_problems`` problems of the file are
held out of training for the evaluations.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from prmkit.config import differing
from prmkit.rl.credit import CREDIT_RULES
from prmkit.rl.grpo import RLConfig

RUN_ONLY = ("steps", "save_every")
"""Settings that do not change what a step computes: a rerun may change them (more steps extend a run)."""


@dataclass(frozen=True)
class RunConfig(RLConfig):
    """``prmkit rl``: GRPO's settings (:class:`~prmkit.rl.grpo.RLConfig`) and the run's. Inert."""

    policy: str = field(default="", metadata={"help": "the policy to train: a causal LM folder (save_pretrained)"})
    reward: str = field(default="", metadata={"help": "the reward: a PRM or ORM folder written by `prmkit train`"})
    credit: str | None = field(default=None, metadata={
        "help": f"how a PRM's step scores make one reward ({', '.join(CREDIT_RULES)}; default: min for a PRM, "
                "last for an ORM)"})
    answer_weight: float = field(default=0.0, metadata={
        "help": "added to the reward when the completion's answer grades right against the problem's answer "
                "(prmkit.grade; every training problem needs an answer)"})
    eval_problems: int = field(default=16, metadata={"help": "problems held out of training for the evaluations "
                                                             "(the file's last ones)"})
    eval_samples: int = field(default=4, metadata={"help": "samples per held-out problem in each evaluation"})
    save_every: int = field(default=10, metadata={"help": "optimiser steps between checkpoints (and at the end)"})
    device: str = field(default="auto", metadata={"help": "auto, cpu, cuda or cuda:N"})

    def __post_init__(self):
        super().__post_init__()
        if self.credit is not None and self.credit not in CREDIT_RULES:
            raise ValueError(f"credit must be one of {', '.join(CREDIT_RULES)}, not {self.credit!r}")
        if self.answer_weight < 0 or self.eval_problems < 1 or self.eval_samples < 1 or self.save_every < 1:
            raise ValueError("answer_weight must be >= 0; eval_problems, eval_samples and save_every at least 1")

    @property
    def rl(self) -> RLConfig:
        """GRPO's own settings."""
        names = {f.name for f in dataclasses.fields(RLConfig)}
        return RLConfig(**{k: v for k, v in dataclasses.asdict(self).items() if k in names})


def run_identity(cfg: RunConfig, problems: str) -> dict:
    """What a run's outputs depend on: every setting but :data:`RUN_ONLY`, the policy's and the reward model's
    weights, the problem file."""
    from prmkit.model.identity import file_digest, weights_digest

    settings = {k: v for k, v in dataclasses.asdict(cfg).items() if k not in RUN_ONLY}
    return {"settings": settings, "policy_weights": weights_digest(cfg.policy),
            "reward_weights": weights_digest(cfg.reward), "problems": file_digest(problems)[:16]}


def check_resume(out: Path, identity: dict) -> None:
    """Refuse a folder that holds another run, naming what differs."""
    path = out / "run.json"
    if not path.is_file():
        return
    theirs = json.loads(path.read_text()).get("identity")
    if not isinstance(theirs, dict):
        raise ValueError(f"{path}: no 'identity' (not a prmkit rl run folder, or a damaged one): choose another "  # noqa: TRY004  (bad input: the CLI's user error)
                         f"--out-dir, or delete {out}")
    if theirs != identity:
        ours = {**identity.pop("settings"), **identity}
        theirs = {**theirs.pop("settings"), **theirs}
        differ = differing(ours, theirs)
        raise ValueError(f"{out} holds another run (it differs in {', '.join(differ)}): choose another --out-dir, "
                         f"or delete {out} to start again")


def split_problems(problems: list, cfg: RunConfig) -> tuple[list, list]:
    """Training problems and the held-out ones (the last ``eval_problems``)."""
    if len(problems) <= cfg.eval_problems:
        raise ValueError(f"{len(problems)} problems: need more than eval_problems={cfg.eval_problems} (the last "
                         "ones are held out for the evaluations)")
    train, held = problems[: -cfg.eval_problems], problems[-cfg.eval_problems:]
    if cfg.answer_weight and any(p.answer is None for p in train):
        raise ValueError("answer_weight needs an answer for every training problem; some have none")
    return train, held


def last_checkpoint(folder: Path) -> str | None:
    """TRL's newest checkpoint folder under ``folder``, or None."""
    marks = sorted((int(p.name.split("-")[1]), p) for p in folder.glob("checkpoint-*") if p.name.split("-")[1].isdigit())
    return str(marks[-1][1]) if marks else None


def policy_format(reward_fmt, tokenizer):
    """The policy's prompt and step layout: the reward model's (its problem suffix, its separator), so the policy
    writes steps as the reward model reads them; its step marker only where the policy's tokenizer holds it as
    one token (a policy that never saw the marker ends steps at the separator, which the reward also splits on).
    """
    marker = reward_fmt.marker
    if marker and len(tokenizer(marker, add_special_tokens=False)["input_ids"]) != 1:
        return dataclasses.replace(reward_fmt, marker=None)
    return reward_fmt


def repeated_steps(steps: list[str]) -> float:
    """The share of a solution's steps that repeat an earlier one (padding a summed credit looks like this).

    >>> repeated_steps(["a", "b", "a", "a"]), repeated_steps([])
    (0.5, 0.0)
    """
    seen: set[str] = set()
    repeats = 0
    for s in steps:
        repeats += s.strip() in seen
        seen.add(s.strip())
    return repeats / len(steps) if steps else 0.0


class Evaluation:
    """The evaluation hook: the live policy's samples of the held-out problems, measured (see the module
    docstring); each record is appended to ``metrics.jsonl`` as soon as it is measured."""

    def __init__(self, held: list, cfg: RunConfig, tokenizer, fmt, reference, reward, metrics: Path):
        from prmkit.generate.hf import Sampling

        self.held, self.cfg, self.tokenizer, self.fmt = held, cfg, tokenizer, fmt
        self.reference, self.reward, self.metrics = reference, reward, metrics
        self.sampling = Sampling(max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature)

    def __call__(self, step: int, model) -> dict:
        from prmkit.generate.backend import sample_seed
        from prmkit.grade import extract_answer
        from prmkit.rl.grpo import completion_steps, prompt_ids, sample_rows, sequence_logprobs
        from prmkit.rl.reward import grader_check

        start = time.perf_counter()
        laid = [p for p in self.held for _ in range(self.cfg.eval_samples)]
        prompts = [prompt_ids(self.tokenizer, self.fmt, p.problem) for p in laid]
        seeds = [sample_seed(self.cfg.seed, "rl-eval", [p.problem], j) for j, p in enumerate(laid)]
        rows = sample_rows(model, self.tokenizer, self.fmt, prompts, seeds, self.sampling)
        texts = [t for _, t in rows]
        steps = [completion_steps(t, self.fmt) for t in texts]
        proxy = np.asarray(self.reward([p.problem for p in laid], texts, problem=[p.problem for p in laid],
                                       steps=steps, answer=[p.answer for p in laid]))
        kl = (sequence_logprobs(model, prompts, [c for c, _ in rows])
              - sequence_logprobs(self.reference, prompts, [c for c, _ in rows]))
        verdicts = [grader_check(p.problem, t, answer=p.answer) if p.answer is not None else None
                    for p, t in zip(laid, texts)]
        graded = [v for v in verdicts if v is not None]
        record = {"step": step, "proxy": float(proxy.mean()), "kl": float(kl.mean()),
                  "gold": float(np.mean(graded)) if graded else None, "samples": len(laid),
                  "steps": float(np.mean([len(s) for s in steps])),
                  "tokens": float(np.mean([len(c) for c, _ in rows])),
                  "answerless": float(np.mean([extract_answer(t) is None for t in texts])),
                  "repeated_steps": float(np.mean([repeated_steps(s) for s in steps])),
                  "seconds": round(time.perf_counter() - start, 2)}
        with open(self.metrics, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
        return record


def kept_records(metrics: Path, upto: int, every: int) -> list[dict]:
    """The evaluations a resumed run keeps: those at or before its checkpoint's step and on the ``every``-step grid
    (a finished run's evaluation after its last step is off the grid when it is extended; later ones are measured
    again, from the same weights). A line a kill cut short is dropped. The file is rewritten to hold the kept."""
    if not metrics.is_file():
        return []
    records = []
    for number, line in enumerate(metrics.read_text().splitlines(keepends=True), 1):
        if not line.endswith("\n"):
            break  # torn by a kill while it was written
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise ValueError(f"{metrics}, line {number}: not an evaluation record ({e.msg})") from None
    kept = [r for r in records if r["step"] <= upto and (r["step"] == 0 or (every and r["step"] % every == 0))]
    metrics.write_text("".join(json.dumps(r) + "\n" for r in kept))
    return kept


def run_rl(cfg: RunConfig, problems_path: str, out_dir: str, command: str = "", progress: bool = True) -> dict:
    """Train (or resume) one run into ``out_dir``; returns its summary (also written as ``summary.json``)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from prmkit.device import torch_device
    from prmkit.io import read_problems, write_json
    from prmkit.rl.grpo import train_grpo
    from prmkit.rl.reward import PRMReward
    from prmkit.stack import RL_PACKAGES, run_record

    if not cfg.policy or not cfg.reward:
        raise ValueError("prmkit rl needs --policy (a causal LM folder) and --reward (a PRM or ORM folder)")
    out = Path(out_dir)
    identity = run_identity(cfg, problems_path)
    check_resume(out, dict(identity))
    train, held = split_problems(list(read_problems(problems_path)), cfg)
    out.mkdir(parents=True, exist_ok=True)
    (out / "run.json").write_text(json.dumps({"identity": identity}, indent=1) + "\n")
    resume = last_checkpoint(out / "trl")
    done_step = int(Path(resume).name.split("-")[1]) if resume else 0
    if done_step > cfg.steps:
        raise ValueError(f"{out} has trained {done_step} steps, more than --steps {cfg.steps}: a run can be extended, "
                         "not cut back (choose another --out-dir)")
    kept = kept_records(out / "metrics.jsonl", done_step, cfg.eval_every)
    device = str(torch_device(cfg.device))
    torch.manual_seed(cfg.seed)
    policy = AutoModelForCausalLM.from_pretrained(cfg.policy)
    reference = AutoModelForCausalLM.from_pretrained(cfg.policy).to(device).eval()
    tokenizer = AutoTokenizer.from_pretrained(cfg.policy)
    reward = PRMReward(cfg.reward, credit=cfg.credit, answer_weight=cfg.answer_weight,
                       answer_check="grader" if cfg.answer_weight else None, device=device)
    fmt = policy_format(reward.scorer.fmt, tokenizer)
    hook = Evaluation(held, cfg, tokenizer, fmt, reference, reward, out / "metrics.jsonl")
    start = time.perf_counter()
    history, records = train_grpo(policy, tokenizer, fmt, [{"problem": p.problem, "answer": p.answer} for p in train],
                                  [reward], cfg.rl, str(out / "trl"), hook=hook, cpu=not device.startswith("cuda"),
                                  save_every=cfg.save_every, resume=resume, done_steps={r["step"] for r in kept},
                                  progress=progress)
    policy.save_pretrained(out / "policy")
    tokenizer.save_pretrained(out / "policy")
    records = sorted([*kept, *records], key=lambda r: r["step"])
    summary = {"kind": "rl", "config": dataclasses.asdict(cfg), "identity": identity, "problems": problems_path,
               "train_problems": len(train), "held_out_problems": len(held), "records": records,
               "history": [{k: h[k] for k in HISTORY_KEYS if k in h} for h in history if "reward" in h],
               "resumed_from": resume, "seconds": round(time.perf_counter() - start, 1),
               "command": command, **run_record(RL_PACKAGES)}
    from prmkit.evaluate.plots import plot_rl
    from prmkit.evaluate.report import write_report

    summary["figures"] = [Path(plot_rl(records, out / "rl.png")).name]
    write_json(out / "summary.json", summary)
    write_report(out)
    return summary


HISTORY_KEYS = ("step", "reward", "reward_std", "kl", "loss", "entropy", "completions/mean_length", "step_time")
"""TRL's per-step log, the fields the summary keeps."""


__all__ = ["RUN_ONLY", "Evaluation", "RunConfig", "check_resume", "repeated_steps", "run_identity", "run_rl"]
