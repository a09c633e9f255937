"""Training throughput against TRL's PRMTrainer, same tiny model, data, batch size and steps; held-out step AUROC.

TRL removed PRMTrainer after 1.13.0 (1.14.0 ships no ``trl/experimental/prm/prm_trainer.py``; 0.24 and
earlier had it in ``trl/trainer/``), so the benchmark pins ``trl==1.13.0`` in its own environment,
``bench/.venv-trl``, which sees this project's venv (torch 2.13.0 CPU, transformers) through a ``.pth``
file and adds TRL and its ``datasets`` dependency::

    .venv/bin/python -m venv bench/.venv-trl && echo '*' > bench/.venv-trl/.gitignore
    echo "$PWD/.venv/lib/python3.11/site-packages" > bench/.venv-trl/lib/python3.11/site-packages/zz_main.pth
    bench/.venv-trl/bin/pip install trl==1.13.0
    .venv/bin/python bench/bench_train.py

Both trainers start from the same folder (tiny-llama preset, tokenizer trained on the training texts,
saved with save_pretrained) as ``AutoModelForTokenClassification`` with 2 labels, on the lab's
``default`` train split (2,000 oracle-labelled solutions; neutral counts as correct; every step
supervised, as TRL does), batch 16, 300 steps, lr 3e-3, linear schedule, one torch thread. Held out: the
first 1,000 solutions of the lab's eval split of seed 1; AUROC of P(correct) over every labelled step,
each model formatted by its own trainer's formatting. prmkit's time covers its whole ``train()`` call
(data preparation, model building, saving); TRL's covers ``trainer.train()`` only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TRL_PYTHON = HERE / ".venv-trl" / "bin" / "python"
STEPS, BATCH, LR, MAX_LENGTH = 300, 16, 3e-3, 512


def make_data(folder: Path) -> None:
    from prmkit import lab
    from prmkit.io import write_records

    cfg = lab.preset("default")
    write_records(folder / "train.jsonl", [lab.oracle_label(s) for s in lab.generate_pool(cfg, 0, "train")])
    write_records(folder / "held.jsonl", [lab.oracle_label(s) for s in lab.generate_pool(cfg, 1, "eval")[:1000]])


def make_base(folder: Path) -> None:
    from prmkit.io import read_solutions
    from prmkit.model.tiny import build_preset

    sols = list(read_solutions(folder / "train.jsonl"))
    model, tok = build_preset("tiny-llama", [t for s in sols for t in [s.problem.problem, *s.texts]],
                              "AutoModelForCausalLM")
    model.save_pretrained(folder / "base")
    tok.save_pretrained(folder / "base")


def run_prmkit(folder: Path) -> dict:
    import numpy as np

    from prmkit.evaluate.steps import auroc
    from prmkit.io import read_solutions
    from prmkit.score import Scorer
    from prmkit.train.config import TrainConfig
    from prmkit.train.loop import train

    cfg = TrainConfig(data=str(folder / "train.jsonl"), out=str(folder / "prmkit"), base_model=str(folder / "base"),
                      head="classify", supervise="all", max_steps=STEPS, batch_size=BATCH, lr=LR, warmup_steps=0,
                      max_length=MAX_LENGTH, eval_fraction=0, save_every=0, progress=False, tensorboard=False,
                      log_every=STEPS)
    start = time.perf_counter()
    train(cfg)
    seconds = time.perf_counter() - start
    scorer = Scorer(folder / "prmkit", device="cpu")
    held = list(read_solutions(folder / "held.jsonl"))
    probs = scorer.probabilities([s.problem.problem for s in held], [s.texts for s in held])
    scores = np.concatenate([p[:, 0] for p in probs])
    labels = np.concatenate([[int(r >= 0) for r in s.ratings] for s in held])
    train_sols = list(read_solutions(folder / "train.jsonl"))
    tokens = np.mean([len(scorer.encode(s.problem.problem, s.texts).input_ids) for s in train_sols])
    return {"seconds": seconds, "examples_per_s": STEPS * BATCH / seconds,
            "tokens_per_s": STEPS * BATCH * tokens / seconds, "step_auroc": auroc(scores, labels)}


def trl_worker(folder: Path) -> dict:
    """Runs inside bench/.venv-trl (which sees the main venv's packages, but not the editable prmkit)."""
    sys.path.insert(0, str(HERE.parent))
    import numpy as np
    import torch
    from datasets import Dataset
    from transformers import AutoModelForTokenClassification, AutoTokenizer
    from trl.experimental.prm import PRMConfig, PRMTrainer

    from prmkit.evaluate.steps import auroc
    from prmkit.io import read_solutions

    torch.set_num_threads(1)
    rows = lambda path: [{"prompt": s.problem.problem, "completions": s.texts, "labels": [r >= 0 for r in s.ratings]}
                         for s in read_solutions(path)]
    tok = AutoTokenizer.from_pretrained(folder / "base")
    torch.manual_seed(0)
    model = AutoModelForTokenClassification.from_pretrained(folder / "base", num_labels=2)
    args = PRMConfig(output_dir=str(folder / "trl"), per_device_train_batch_size=BATCH, max_steps=STEPS,
                     learning_rate=LR, lr_scheduler_type="linear", warmup_steps=0, max_length=MAX_LENGTH,
                     logging_steps=STEPS, save_strategy="no", report_to=[], use_cpu=True, seed=0,
                     dataloader_num_workers=0, disable_tqdm=True, step_separator="\n")
    trainer = PRMTrainer(model=model, args=args, processing_class=tok, train_dataset=Dataset.from_list(rows(folder / "train.jsonl")))
    start = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - start
    model.eval()
    scores, labels = [], []
    for row in rows(folder / "held.jsonl"):
        enc = PRMTrainer.tokenize_row(row, tok, "\n", MAX_LENGTH, None, False, True)
        with torch.no_grad():
            logits = model(torch.tensor([enc["input_ids"]])).logits[0]
        lab = torch.tensor(enc["labels"])
        scores.extend(torch.softmax(logits[lab != -100], -1)[:, 1].tolist())
        labels.extend(lab[lab != -100].tolist())
    tokens = np.mean([len(x) for x in trainer.train_dataset["input_ids"]])
    return {"seconds": seconds, "examples_per_s": STEPS * BATCH / seconds,
            "tokens_per_s": STEPS * BATCH * tokens / seconds,
            "step_auroc": auroc(np.asarray(scores), np.asarray(labels))}


def main() -> int:
    import torch

    torch.set_num_threads(1)
    if not TRL_PYTHON.exists():
        print(f"no TRL environment at {TRL_PYTHON}: build it as this file's docstring says")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        make_data(folder)
        make_base(folder)
        env = {**os.environ, "TRL_EXPERIMENTAL_SILENCE": "1", "OMP_NUM_THREADS": "1"}
        done = subprocess.run([str(TRL_PYTHON), __file__, "--trl-worker", str(folder)], env=env,
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            print(done.stderr[-4000:])
            return 1
        trl = json.loads(done.stdout.strip().splitlines()[-1])
        ours = run_prmkit(folder)
    for name, r in (("TRL 1.13.0 PRMTrainer", trl), ("prmkit", ours)):
        print(f"{name:22s} {r['examples_per_s']:7.1f} examples/s {r['tokens_per_s']:9.0f} tokens/s "
              f"({r['seconds']:.1f} s)  held-out step AUROC {r['step_auroc']:.3f}")
    print(f"ratio prmkit/TRL: {ours['examples_per_s'] / trl['examples_per_s']:.2f}x examples/s, "
          f"{ours['tokens_per_s'] / trl['tokens_per_s']:.2f}x tokens/s")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--trl-worker":
        print(json.dumps(trl_worker(Path(sys.argv[2]))))
    else:
        sys.exit(main())
