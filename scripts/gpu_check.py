"""Prove the GPU path: bf16 training and scoring of a small (not tiny) model, through the same commands as on a CPU.

    python scripts/gpu_check.py --out runs/gpu-check             # on a machine with a CUDA GPU
    python scripts/gpu_check.py --out /tmp/gc --size tiny --steps 20   # a dry run of the same path on a CPU

What it does, each stage timed and written to ``OUT/gpu_check.json``:

1. lab data: 2,000 training solutions labelled by the simulated labellers, a held-out pool of
   100 problems x 16 samples labelled exactly by the oracle (for step AUROC and best-of-16);
2. a base model *folder*: a Qwen2-style config (``--size small``: 8 layers, width 512, ~26M parameters)
   with a tokenizer trained on the data, saved with ``save_pretrained``, so training goes through the real
   ``from_pretrained`` path;
3. ``prmkit train prm`` and ``prmkit train orm`` (bf16 autocast on CUDA: ``--mixed-precision auto``),
   through ``accelerate launch`` with every visible GPU as one process;
4. ``prmkit score`` of the held-out pool with both models (bf16 on CUDA), then step AUROC against the
   oracle and best-of-16 of PRM, ORM and majority voting;
5. the GPU tier, every test marked ``gpu`` (``-m gpu``): CPU and GPU scores agree; a bf16 run trains and saves;
6. generation (``prmkit generate``) of 100 problems x 16 samples from the base folder: the ``hf``
   backend on the device (bf16), and the ``vllm`` backend where vLLM is installed, samples/s and tokens/s;
7. automatic labels (``prmkit label auto --method mc``) of 50 held-out solutions with k = 8 rollouts per
   prefix from the base folder through the ``hf`` backend on the device: rollouts/s, the path a user runs
   with a real policy (the base's weights are untrained, so its rollouts measure speed, not labels);
8. RL (``prmkit.rl``): 5 GRPO steps (TRL's GRPOTrainer, prmkit's rollouts, the PRM as the reward) of the
   base folder on the device, 16 prompts x 8 samples per step: seconds per step;
9. search (``prmkit search``, beam N = 8, M = 4, the step separator as the stop string) of 20 held-out problems:
   the generator through ``hf`` on the device and ``vllm`` where it is installed, the PRM on the device, whole
   prefixes and ``--incremental`` (``hf`` only; its picks' step scores against whole-prefix scoring): problems/s,
   tokens, PRM tokens;
10. the lab on the GPU (``--lab true``): ``prmkit lab run --preset quick --seeds 0 --device cuda``, the same
   product path as on a CPU (base pretraining, PRM and ORM with surprise features, scoring), with its
   headline numbers and wall time per stage.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIZES = {
    "small": {"hidden_size": 512, "intermediate_size": 1536, "num_hidden_layers": 8, "num_attention_heads": 8,
              "num_key_value_heads": 2},
    "tiny": {},  # the tiny-qwen2 preset as it is
}


def sh(cmd: list[str], log: Path, **kw) -> float:
    """Run ``cmd`` from the repository root, output appended to ``log``; return its wall seconds."""
    start = time.perf_counter()
    with open(log, "a") as f:
        f.write(f"\n$ {' '.join(cmd)}\n")
        f.flush()
        done = subprocess.run(cmd, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, check=False, **kw)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}) after {seconds:.0f} s: {' '.join(cmd)}; see {log}")
    return seconds


def make_data(out: Path) -> dict:
    from prmkit.io import write_records
    from prmkit.lab import label, oracle_label, preset
    from prmkit.lab.pools import generate_pool

    cfg = preset("default")
    train = label(generate_pool(cfg, 0, "train"), cfg.labellers, seed=0)
    held = [oracle_label(s) for s in generate_pool(cfg, 0, "eval", problems=100, samples=16)]
    write_records(out / "train.jsonl", train)
    write_records(out / "heldout.jsonl", held)
    return {"train": len(train), "heldout": len(held)}


def make_base(out: Path, size: str) -> dict:
    import transformers

    from prmkit.io import read_solutions
    from prmkit.model.tiny import preset_config, train_tokenizer

    texts = [s.problem.problem + "\n" + "\n".join(s.texts) for s in read_solutions(out / "train.jsonl")]
    tok = train_tokenizer(texts, vocab_size=1024)
    config = preset_config("tiny-qwen2", len(tok), tok, **SIZES[size])
    model = transformers.AutoModelForCausalLM.from_config(config)
    model.save_pretrained(out / "base")
    tok.save_pretrained(out / "base")
    return {"parameters": sum(p.numel() for p in model.parameters()), "config": SIZES[size] or "tiny-qwen2"}


GPU_TESTS = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "gpu", "tests"]
"""The GPU tier: every test marked ``gpu``, whichever file it is in (tests/conftest.py skips them without CUDA)."""


def launcher(gpus: int) -> list[str]:
    if gpus == 0:
        return [sys.executable, "-m", "prmkit"]
    return [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", str(gpus), "--mixed_precision",
            "bf16", "--dynamo_backend", "no", "-m", "prmkit"]


def train(out: Path, kind: str, args, gpus: int, log: Path) -> dict:
    cmd = [*launcher(gpus), "train", kind, "--data", str(out / "train.jsonl"), "--eval-data", str(out / "heldout.jsonl"),
           "--base-model", str(out / "base"), "--out-dir", str(out / kind), "--max-steps", str(args.steps),
           "--batch-size", str(args.batch_size), "--lr", str(args.lr), "--warmup-steps", "20", "--eval-every", "0",
           "--save-every", "0", "--no-progress", "--cpu-threads", "0"]
    seconds = sh(cmd, log)
    rows = [json.loads(x) for x in (out / kind / "metrics.jsonl").read_text().splitlines()]
    final = {k: v for r in rows for k, v in r.items()}
    examples = args.steps * args.batch_size * max(gpus, 1)
    return {"wall_seconds": round(seconds, 1), "examples_per_second_incl_startup": round(examples / seconds, 1),
            "final": {k: final[k] for k in sorted(final) if k.startswith(("step_", "loss", "eval"))}}


def score(out: Path, kind: str, gpus: int, log: Path) -> dict:
    target = out / f"scored-{kind}.jsonl"
    source = out / "heldout.jsonl" if kind == "prm" else out / "scored-prm.jsonl"
    seconds = sh([*launcher(gpus), "score", "--model", str(out / kind), str(source), str(target),
                  "--no-progress", "--batch-size", "64", "--cpu-threads", "0"], log)
    with open(source) as f:
        n = sum(1 for _ in f)
    return {"wall_seconds": round(seconds, 1), "solutions": n, "solutions_per_second_incl_startup": round(n / seconds, 1)}


def evaluate(out: Path) -> dict:
    import numpy as np

    from prmkit.evaluate.curves import evaluate_pool
    from prmkit.evaluate.pool import load_pool
    from prmkit.evaluate.steps import auroc
    from prmkit.io import read_solutions

    p, y = [], []
    for s in read_solutions(out / "scored-orm.jsonl"):
        for st in s.steps:
            p.append(st.scores["p_correct"])
            y.append(1 if st.rating >= 0 else 0)
    pool = load_pool(out / "scored-orm.jsonl", answer_key="exact")
    result = evaluate_pool(pool, ["prm_min", "orm"], ns=[1, 4, 16], vote=False, n_boot=200, seed=0)
    m = result["metrics"]
    return {"step_auroc_vs_oracle": auroc(np.array(p), np.array(y)),
            **{k: round(100 * m[k]["estimate"], 1) for k in ("bon_acc@16[prm_min]", "bon_acc@16[orm]", "maj_acc@16",
                                                               "pass@16", "first_acc") if k in m}}


def generate(out: Path, gpus: int, log: Path) -> dict:
    """``prmkit generate`` from the base folder: hf on the device, and vllm where it is installed."""
    import importlib.util

    from prmkit.io import read_solutions, write_records

    problems = out / "problems.jsonl"
    write_records(problems, list({s.problem.problem: s.problem for s in read_solutions(out / "heldout.jsonl")}.values()))
    res = {}
    backends = ["hf"] + (["vllm"] if gpus and importlib.util.find_spec("vllm") else [])
    for backend in backends:
        target = out / f"generated-{backend}.jsonl"
        cmd = [sys.executable, "-m", "prmkit", "generate", "--backend", backend, "--model", str(out / "base"),
               "--n", "16", "--max-new-tokens", "128", "--batch-size", "256", "--no-progress", str(problems), str(target)]
        seconds = sh(cmd + (["--device", "cuda"] if backend == "hf" and gpus else []), log)
        summary = json.loads(log.read_text().strip().splitlines()[-1])
        res[backend] = {"wall_seconds": round(seconds, 1), **{k: summary[k] for k in ("written", "samples_per_s",
                                                                                      "tokens_per_s")}}
    res["vllm"] = res.get("vllm", "not installed" if gpus else "no GPU")
    return res


def autolabel(out: Path, gpus: int, log: Path) -> dict:
    """``prmkit label auto --method mc`` of 50 held-out solutions, rollouts through ``hf`` on the device."""
    from prmkit.io import read_solutions, write_records

    src, target = out / "autolabel-in.jsonl", out / "autolabel-mc.jsonl"
    write_records(src, list(read_solutions(out / "heldout.jsonl"))[:50])
    cmd = [sys.executable, "-m", "prmkit", "label", "auto", str(src), str(target), "--method", "mc", "--rollouts", "8",
           "--backend", "hf", "--model", str(out / "base"), "--max-new-tokens", "64", "--batch-size", "256",
           "--no-progress", "--no-resume"]
    seconds = sh(cmd + (["--device", "cuda"] if gpus else ["--device", "cpu"]), log)
    summary = json.loads(log.read_text().strip().splitlines()[-1])
    return {"wall_seconds": round(seconds, 1), **{k: summary[k] for k in ("labelled", "rollouts_sampled",
                                                                          "rollouts_per_s", "cache_hit_rate")}}


def rl(out: Path, gpus: int, steps: int = 5) -> dict:
    """GRPO of the base folder against the trained PRM (``prmkit.rl``: TRL's GRPOTrainer, prmkit's rollouts and
    reward) for a few steps on the device: seconds per step and the reward it logged (the base is untrained, so
    this measures the path and its speed, not learning)."""
    import transformers

    from prmkit.io import read_solutions
    from prmkit.rl.grpo import RLConfig, train_grpo
    from prmkit.rl.reward import PRMReward

    reward = PRMReward(out / "prm", device="cuda" if gpus else "cpu", batch_size=128)
    tok = transformers.AutoTokenizer.from_pretrained(out / "base")
    model = transformers.AutoModelForCausalLM.from_pretrained(out / "base")
    problems = list(dict.fromkeys(s.problem.problem for s in read_solutions(out / "heldout.jsonl")))
    cfg = RLConfig(steps=steps, prompts_per_step=16, group=8, max_new_tokens=96, eval_every=0)
    start = time.perf_counter()
    fmt = dataclasses.replace(reward.scorer.fmt, marker="")  # the policy writes a step per line, with no marker token
    history, _ = train_grpo(model, tok, fmt, [{"problem": p} for p in problems], [reward], cfg, str(out / "rl"),
                            cpu=not gpus)
    rows = [h for h in history if "reward" in h]
    return {"wall_seconds": round(time.perf_counter() - start, 1), "steps": len(rows),
            "seconds_per_step": round(sum(h["step_time"] for h in rows) / max(1, len(rows)), 2),
            "completions_per_step": cfg.batch, "reward": [round(h["reward"], 4) for h in rows]}


def search(out: Path, gpus: int, log: Path) -> dict:
    """``prmkit search`` (beam) with the base folder as the generator and the trained PRM, both on the device: hf
    (whole prefixes, then ``--incremental``, whose picks are scored again whole) and vllm where it is installed."""
    import importlib.util

    from prmkit.io import read_solutions, write_records

    problems = out / "search-problems.jsonl"
    write_records(problems, list({s.problem.problem: s.problem for s in read_solutions(out / "heldout.jsonl")}.values())[:20])
    device = "cuda" if gpus else "cpu"
    runs = [("hf", []), ("hf", ["--incremental"])] + ([("vllm", [])] if gpus and importlib.util.find_spec("vllm") else [])
    res, picks = {}, {}
    for backend, extra in runs:
        name = backend + "".join(e.replace("--", "-") for e in extra)
        target = out / f"search-{name}.jsonl"
        target.unlink(missing_ok=True)  # searched afresh: a rerun into the same --out times the search, not a resume
        cmd = [sys.executable, "-m", "prmkit", "search", str(problems), str(target), "--prm", str(out / "prm"),
               "--prm-device", device, "--backend", backend, "--model", str(out / "base"), "--strategy", "beam",
               "--n", "8", "--m", "4", "--max-depth", "12", "--stop", "\n", "--max-new-tokens", "64", "--no-progress",
               *extra, *(["--device", device] if backend == "hf" else [])]
        seconds = sh(cmd, log)
        summary = json.loads(log.read_text().strip().splitlines()[-1])
        picks[name] = [json.loads(line)["chosen"] for line in target.open()]
        res[name] = {"wall_seconds": round(seconds, 1), "problems_per_s": round(summary["problems"] / seconds, 2),
                     **{k: summary[k] for k in ("mean_generated_tokens", "mean_prm_tokens")}}
    # the incremental run's picks scored again whole: their step scores as the search recorded them against the PRM's
    # whole-prefix scores (a near-constant PRM's picks may differ between the runs by ties; the scores may not)
    import numpy as np

    from prmkit.schema import Problem
    from prmkit.search.adapters import PRMScorer

    whole = PRMScorer(str(out / "prm"), device=device)
    chosen = [(json.loads(line)["problem"], c) for line, c in zip(problems.open(), picks["hf-incremental"]) if c]
    rescored = whole.score([(Problem(p), c["steps"]) for p, c in chosen])
    res["incremental_largest_score_difference"] = max(
        (float(np.max(np.abs(np.asarray(c["scores"]) - s))) for (_, c), (s, _) in zip(chosen, rescored) if len(s)),
        default=0.0)
    res["vllm"] = res.get("vllm", "not installed" if gpus else "no GPU")
    return res


def lab_quick(out: Path, gpus: int, log: Path) -> dict:
    """``prmkit lab run --preset quick --seeds 0`` on the device; its headline and stage wall times."""
    run = out / "lab-quick"
    env = {**os.environ, "PRMKIT_CACHE": str(out / "cache")}
    seconds = sh([sys.executable, "-m", "prmkit", "lab", "run", "--preset", "quick", "--seeds", "0", "--out-dir", str(run),
                  "--no-progress", "--device", "cuda" if gpus else "cpu"], log, env=env)
    summary = json.loads((run / "summary.json").read_text())
    head = summary["results"]["0"]["eval"]
    return {"wall_seconds": round(seconds, 1), "stages": {k: v["wall_seconds"] for k, v in summary["timings"].items()},
            **{k: head[k] for k in ("prm_min@16", "orm@16", "majority@16", "prm_step_auroc")}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output folder (results in gpu_check.json, commands in log.txt)")
    ap.add_argument("--size", choices=sorted(SIZES), default="small", help="base model size")
    ap.add_argument("--steps", type=int, default=400, help="optimiser steps of each reward model")
    ap.add_argument("--batch-size", type=int, default=32, help="solutions per micro-batch per process")
    ap.add_argument("--lr", type=float, default=3e-4, help="peak learning rate")
    ap.add_argument("--tests", choices=("true", "false"), default="true", help="also run the GPU-marked tests")
    ap.add_argument("--lab", choices=("true", "false"), default="true",
                    help="also run the lab's quick preset on the device (cache and run folder under --out)")
    args = ap.parse_args()
    import torch

    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    log = out / "log.txt"
    gpus = torch.cuda.device_count()
    res: dict = {"torch": torch.__version__, "cuda": torch.version.cuda, "gpus": gpus,
                 "device": torch.cuda.get_device_name(0) if gpus else "cpu",
                 "bf16": bool(gpus and torch.cuda.is_bf16_supported()), "args": vars(args)}
    stages = [("data", lambda: make_data(out)), ("base", lambda: make_base(out, args.size)),
              ("train_prm", lambda: train(out, "prm", args, gpus, log)),
              ("train_orm", lambda: train(out, "orm", args, gpus, log)),
              ("score_prm", lambda: score(out, "prm", gpus, log)), ("score_orm", lambda: score(out, "orm", gpus, log)),
              ("evaluate", lambda: evaluate(out)), ("generate", lambda: generate(out, gpus, log)),
              ("autolabel", lambda: autolabel(out, gpus, log)), ("rl", lambda: rl(out, gpus)),
              ("search", lambda: search(out, gpus, log))]
    if args.tests == "true":
        stages.append(("gpu_tests", lambda: {"wall_seconds": round(sh(
            GPU_TESTS, log), 1)}))
    if args.lab == "true":
        stages.append(("lab_quick", lambda: lab_quick(out, gpus, log)))
    for name, fn in stages:
        start = time.perf_counter()
        res[name] = fn()
        print(f"{name}: {time.perf_counter() - start:.1f} s {json.dumps(res[name])}", flush=True)
        (out / "gpu_check.json").write_text(json.dumps(res, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
