"""Training throughput against TRL's PRMTrainer on the same tiny model, data, batch size and steps, over
several seeds; held-out step AUROC of both.

TRL removed PRMTrainer after 1.13.0 (1.14.0 ships no ``trl/experimental/prm/prm_trainer.py``; 0.24 and
earlier had it in ``trl/trainer/``), so the benchmark pins ``trl==1.13.0`` in its own environment,
``bench/.venv-trl``. :func:`ensure_trl_env` builds it when missing: a venv that sees this project's venv
(torch, transformers, accelerate) through a ``.pth`` file, plus TRL and its ``datasets`` dependency from
PyPI. So, on a fresh clone::

    .venv/bin/python bench/bench_train.py                      # the lab's solutions, seeds 0-4
    .venv/bin/python bench/bench_train.py --data processbench  # real solutions from ../shared/data

Two data sets, because what packing saves depends on how much solution lengths vary (see
:func:`make_data`): the lab's solutions are 60-250 tokens (90% within 160-220), so random batches of 16
are ~21% padding; ProcessBench's real model-written solutions run from 300 to 3,200 tokens, ~53% padding.
``--shuffles`` measures how much the batch order alone moves prmkit's held-out AUROC.

What is the same on both sides (checked, not assumed, where marked):
- the model: for each seed, one tiny-llama folder (tokenizer trained on the training texts, weights
  seeded by the seed) loaded as ``AutoModelForTokenClassification`` with 2 labels, the new layer
  initialised under ``torch.manual_seed(seed)``: the initial weights are equal (checked); no dropout
  (TRL's ``disable_dropout``; for prmkit, ``classifier_dropout: 0.0`` in the folder's config, since
  ``AutoModelForTokenClassification`` otherwise adds a dropout of 0.1 that prmkit leaves on);
- the tokens and label positions: prmkit with ``marker=''`` and ``problem_suffix=''`` formats exactly as
  TRL's ``tokenize_row`` (BOS, prompt, then each step followed by "\\n", read at the "\\n"), on every
  training and held-out solution (checked);
- the supervision: every step, rating >= 0 counts as correct (TRL's default; prmkit ``supervise=all``,
  ``neutral=positive``); cross-entropy summed over the batch's labelled steps / their count;
- the optimisation: AdamW (betas 0.9/0.999, eps 1e-8, no weight decay), lr 3e-3, linear decay without
  warm-up, gradient clipping at 1.0, batch 16, 300 steps (2.4 epochs of the lab's 2,000 solutions), fp32,
  one torch thread. TRL's own defaults of bf16 autocast and gradient checkpointing are turned off: prmkit
  does neither on a CPU, and checkpointing trades speed for memory.

What differs: the batches (prmkit's seeded shuffler; TRL's RandomSampler), their layout (prmkit packs a
batch's solutions end to end with no padding, TRL pads them to the longest), and the summation order of
floats. The run ``prmkit-trl-batches`` trains prmkit on the very batches TRL drew for the seed, so that
only the two trainers' code differs; ``--more`` adds prmkit on padded batches, shuffled and
length-grouped. Time is end to end on both sides: from the data file and model folder on disk to the
trained model saved (tokenisation, training, saving; imports and a first load of the model code excluded
on both sides); the training loop alone is printed too. Held out (see :func:`make_data`): both models
read by the same plain-transformers code at the same positions.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TRL_ENV = HERE / ".venv-trl"
TRL_VERSION = "1.13.0"
STEPS, BATCH, LR = 300, 16, 3e-3
SHARED_DATA = Path(os.environ.get("PRMKIT_SHARED_DATA", HERE.parents[1] / "shared" / "data"))


# --- the TRL environment ------------------------------------------------------------------------------

def ensure_trl_env(env: Path = TRL_ENV, version: str = TRL_VERSION) -> Path:
    """The python of ``env``, a venv with ``trl==version`` that reuses this venv's packages; built if missing.

    A ``.pth`` file puts this interpreter's site-packages (torch, transformers, accelerate) after the new
    venv's own, so pip installs only TRL and what this venv lacks, and torch is not downloaded twice.
    """
    python = env / "bin" / "python"
    check = [str(python), "-c", f"import trl, sys; sys.exit(trl.__version__ != {version!r})"]
    if python.exists() and subprocess.run(check, capture_output=True, check=False).returncode == 0:
        return python
    print(f"building {env} (trl=={version}) ...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
    (env / ".gitignore").write_text("*\n")
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "zz_main_venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    f"trl=={version}"], check=True)
    subprocess.run(check, check=True)
    return python


# --- data, base model, formatting ----------------------------------------------------------------------

def make_data(folder: Path, data: str) -> None:
    """``train.jsonl`` and ``held.jsonl`` in ``folder``, and ``bench.json``: the settings every worker reads.

    ``lab``: 2,000 lab solutions (seed 0, train split) and 1,000 held out (seed 1, eval split), every step
    rated by the oracle; up to 512 tokens, none truncated. ``processbench``: real model-written solutions,
    ProcessBench's MATH part to train on (the first 992, so that batches of 16 tile an epoch as on the lab)
    and its GSM8K part held out, each cut after its first wrong step, so that every step it keeps is rated
    (the usual way to train on first-error labels); up to 4,096 tokens, none truncated.
    """
    from prmkit.io import write_records

    if data == "lab":
        from prmkit import lab

        cfg = lab.preset("default")
        train = [lab.oracle_label(s) for s in lab.generate_pool(cfg, 0, "train")]
        held = [lab.oracle_label(s) for s in lab.generate_pool(cfg, 1, "eval")[:1000]]
        max_length = 512
    else:
        from prmkit.convert import processbench

        source = SHARED_DATA / "processbench"
        if not source.is_dir():
            raise SystemExit(f"--data processbench reads {source}, which is not there (set PRMKIT_SHARED_DATA)")
        train = [up_to_first_error(s) for s in processbench.read(source / "math.json")][:992]
        held = [up_to_first_error(s) for s in processbench.read(source / "gsm8k.json")]
        max_length = 4096
    write_records(folder / "train.jsonl", train)
    write_records(folder / "held.jsonl", held)
    (folder / "bench.json").write_text(json.dumps({"data": data, "max_length": max_length, "train": len(train)}))


def up_to_first_error(sol):
    """``sol`` without the (unrated) steps after its first wrong one."""
    import dataclasses

    wrong = sol.first_error()
    kept = sol.steps if wrong is None else sol.steps[: wrong + 1]
    if any(r is None for r in (step.rating for step in kept)):
        raise ValueError(f"{sol.id}: a step before the first wrong one has no rating")
    return dataclasses.replace(sol, steps=list(kept))


def settings(folder: Path) -> dict:
    return json.loads((folder / "bench.json").read_text())


def make_base(folder: Path, seed: int) -> Path:
    from prmkit.io import read_solutions
    from prmkit.model.tiny import build_preset

    sols = list(read_solutions(folder / "train.jsonl"))
    model, tok = build_preset("tiny-llama", [t for s in sols for t in [s.problem.problem, *s.texts]],
                              "AutoModelForCausalLM", seed=seed)
    # AutoModelForTokenClassification puts a dropout of 0.1 before its new layer unless the config says
    # otherwise; TRL switches every dropout off (PRMConfig.disable_dropout), and so does prmkit (head_dropout 0)
    model.config.classifier_dropout = 0.0
    model.config.max_position_embeddings = max(model.config.max_position_embeddings, settings(folder)["max_length"])
    base = folder / f"base-{seed}"
    model.save_pretrained(base)
    tok.save_pretrained(base)
    return base


def encoded(path: Path, tokenizer, max_length: int) -> list[tuple[list[int], list[int], list[int]]]:
    """(input_ids, step-end positions, labels 1 = correct) of every solution in ``path``, as prmkit
    formats them for this benchmark (TRL's layout)."""
    from prmkit.io import read_solutions
    from prmkit.model.formatter import FormatConfig, encode

    fmt = FormatConfig(separator="\n", marker=None, problem_suffix="", max_length=max_length)
    out = []
    for s in read_solutions(path):
        enc = encode(tokenizer, s.problem.problem, s.texts, fmt)
        if len(enc.step_ends) != len(s.texts):
            raise AssertionError(f"{path}: solution {s.id} loses steps to truncation at {max_length} tokens")
        out.append((enc.input_ids, enc.step_ends, [int(r >= 0) for r in s.ratings[: len(enc.step_ends)]]))
    return out


def warm_up(base: Path) -> None:
    """Load the base once before timing, so neither side's time includes importing the model code."""
    from transformers import AutoModelForTokenClassification, AutoTokenizer
    from transformers.utils import logging

    logging.set_verbosity_error()
    logging.disable_progress_bar()
    AutoTokenizer.from_pretrained(base)
    AutoModelForTokenClassification.from_pretrained(base, num_labels=2)


def checksum(model) -> float:
    import torch

    with torch.no_grad():
        return float(sum(p.double().abs().sum() for p in model.parameters()))


# --- the two trainers (each in its own process) --------------------------------------------------------

def trl_row(sol) -> dict:
    """A solution as TRL's PRM dataset row. The label is True for a *wrong* step, so that class 0 means
    correct on both sides (prmkit's output 0 is positive) and each class starts from the same row of the
    new layer."""
    return {"prompt": sol.problem.problem, "completions": sol.texts, "labels": [r < 0 for r in sol.ratings]}


def trl_worker(folder: Path, base: Path, seed: int, steps: int) -> dict:
    """Runs inside bench/.venv-trl (it sees the main venv's packages, not the editable prmkit)."""
    sys.path.insert(0, str(HERE.parent))
    import torch
    from datasets import Dataset
    from transformers import AutoModelForTokenClassification, AutoTokenizer
    from trl.experimental.prm import PRMConfig, PRMTrainer

    from prmkit.io import read_solutions

    torch.set_num_threads(1)
    warm_up(base)
    max_length = settings(folder)["max_length"]
    start = time.perf_counter()
    rows = [trl_row(s) for s in read_solutions(folder / "train.jsonl")]
    tok = AutoTokenizer.from_pretrained(base)
    torch.manual_seed(seed)
    model = AutoModelForTokenClassification.from_pretrained(base, num_labels=2)
    initial = checksum(model)
    args = PRMConfig(output_dir=str(folder / "trl-run"), per_device_train_batch_size=BATCH, max_steps=steps,
                     learning_rate=LR, lr_scheduler_type="linear", warmup_steps=0, weight_decay=0.0,
                     max_grad_norm=1.0, max_length=max_length, step_separator="\n", bf16=False,
                     gradient_checkpointing=False, logging_steps=steps, save_strategy="no", report_to=[],
                     use_cpu=True, seed=seed, dataloader_num_workers=0, disable_tqdm=True)
    trainer = PRMTrainer(model=model, args=args, processing_class=tok, train_dataset=Dataset.from_list(rows))
    index = {tuple(ids): i for i, ids in enumerate(trainer.train_dataset["input_ids"])}
    batches, collate = [], trainer.data_collator

    def recording_collator(features):  # the batch order, so that prmkit can be run on exactly the same batches
        batches.append([index[tuple(f["input_ids"])] for f in features])
        return collate(features)

    trainer.data_collator = recording_collator
    loop_start = time.perf_counter()
    trainer.train()
    loop = time.perf_counter() - loop_start
    trainer.save_model(str(folder / f"trl-{seed}"))
    seconds = time.perf_counter() - start
    data = trainer.train_dataset
    held = [PRMTrainer.tokenize_row(trl_row(s), tok, "\n", max_length, None, False, True)
            for s in read_solutions(folder / "held.jsonl")]
    (folder / f"trl-batches-{seed}.json").write_text(json.dumps(batches))
    (folder / f"trl-tokens-{seed}.json").write_text(json.dumps({
        "train": [{"input_ids": r["input_ids"], "labels": r["labels"]} for r in data], "held": held}))
    return {"seconds": seconds, "loop_seconds": loop, "initial_checksum": initial,
            "optimizer": type(trainer.optimizer.optimizer if hasattr(trainer.optimizer, "optimizer")
                              else trainer.optimizer).__name__}


def prmkit_worker(folder: Path, base: Path, seed: int, steps: int, variant: dict) -> dict:
    """``variant``: settings over prmkit's defaults; ``batches: trl`` trains on TRL's recorded batches;
    ``shuffle: N`` draws the batches with shuffle seed N instead of the training seed (nothing else moves)."""
    # imported before timing, as TRL's worker imports them (and the rest of transformers' Trainer) through trl
    import accelerate  # noqa: F401
    import torch
    import tqdm.auto  # noqa: F401
    import transformers.optimization  # noqa: F401

    from prmkit.train import loop as train_loop
    from prmkit.train.config import TrainConfig

    torch.set_num_threads(1)
    warm_up(base)
    out = folder / f"prmkit-{seed}-{variant['name']}"
    cfg = TrainConfig(data=str(folder / "train.jsonl"), out=str(out), base_model=str(base), head="classify",
                      classes=2, supervise="all", neutral="positive", marker="", problem_suffix="", separator="\n",
                      max_steps=steps, batch_size=BATCH, lr=LR, warmup_steps=0, scheduler="linear",
                      weight_decay=0.0, max_grad_norm=1.0, max_length=settings(folder)["max_length"], seed=seed,
                      mixed_precision="no", eval_fraction=0, save_every=0, resume=False, progress=False,
                      tensorboard=False, log_every=steps, **variant.get("settings", {}))
    seen: dict = {}
    build, inner = train_loop.build_model, train_loop._loop

    def build_and_record(*a, **kw):
        built = build(*a, **kw)
        seen["initial_checksum"] = checksum(built[0].backbone)
        seen["packed"] = built[4]
        return built

    def timed_loop(*a, **kw):
        loop_start = time.perf_counter()
        result = inner(*a, **kw)
        seen["loop_seconds"] = time.perf_counter() - loop_start
        return result

    train_loop.build_model, train_loop._loop = build_and_record, timed_loop
    if variant.get("batches") == "trl":
        order = json.loads((folder / f"trl-batches-{seed}.json").read_text())
        per_epoch = settings(folder)["train"] // BATCH
        train_loop.plan_epoch = lambda lengths, size, seed, epoch, by_length: order[epoch * per_epoch:][:per_epoch]
    if "shuffle" in variant:
        plan = train_loop.plan_epoch
        train_loop.plan_epoch = lambda lengths, size, seed, epoch, by_length: plan(
            lengths, size, variant["shuffle"], epoch, by_length)
    start = time.perf_counter()
    train_loop.train(cfg)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "loop_seconds": seen["loop_seconds"], "initial_checksum": seen["initial_checksum"],
            "packed": seen["packed"], "out": str(out)}


# --- evaluation, one code path for both models ---------------------------------------------------------

def held_out_auroc(model_dir: Path, examples, batch: int = 32) -> float:
    """Step AUROC of P(correct) (output 0) read at the given positions by plain transformers, in
    length-sorted batches."""
    import numpy as np
    import torch
    from transformers import AutoModelForTokenClassification

    from prmkit.evaluate.steps import auroc

    model = AutoModelForTokenClassification.from_pretrained(model_dir).eval()
    order = sorted(range(len(examples)), key=lambda i: len(examples[i][0]))
    scores, labels = [], []
    for b in range(0, len(order), batch):
        chunk = [examples[i] for i in order[b:b + batch]]
        width = max(len(ids) for ids, _, _ in chunk)
        ids = torch.zeros((len(chunk), width), dtype=torch.long)
        mask = torch.zeros_like(ids)
        for r, (x, _, _) in enumerate(chunk):
            ids[r, : len(x)], mask[r, : len(x)] = torch.tensor(x), 1
        with torch.no_grad():
            probs = torch.softmax(model(input_ids=ids, attention_mask=mask).logits.float(), -1)
        for r, (_, ends, labs) in enumerate(chunk):
            scores.extend(probs[r, ends, 0].tolist())
            labels.extend(labs)
    return auroc(np.asarray(scores), np.asarray(labels))


def check_same_tokens(trl_tokens: dict, train, held) -> None:
    """prmkit's encoding of every solution equals TRL's tokenize_row: same ids, labels at the same places."""
    for name, ours, theirs in (("train", train, trl_tokens["train"]), ("held", held, trl_tokens["held"])):
        for i, ((ids, ends, labs), row) in enumerate(zip(ours, theirs, strict=True)):
            where = [p for p, lab in enumerate(row["labels"]) if lab != -100]
            if ids != row["input_ids"] or ends != where or labs != [1 - row["labels"][p] for p in where]:
                raise AssertionError(f"{name} solution {i}: prmkit and TRL format it differently")


# --- driver --------------------------------------------------------------------------------------------

def run_worker(python: str, *args: str) -> dict:
    env = {**os.environ, "TRL_EXPERIMENTAL_SILENCE": "1", "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run([python, __file__, "--worker", *args], env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"worker {args[:1]} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


VARIANTS = {
    "prmkit": {},
    "prmkit-trl-batches": {"batches": "trl"},
    "prmkit-padded": {"settings": {"packing": "off", "group_by_length": False}},
    "prmkit-grouped": {"settings": {"packing": "off", "group_by_length": True}},
}
"""prmkit's runs: its defaults (packed batches, shuffled); TRL's own batches (recorded in TRL's run of the
same seed: then only the trainers' code differs); and, with ``--more``, padded batches, shuffled or
length-grouped (the default before packing), to show where the time goes."""


def run_seed(folder: Path, trl_python: Path, seed: int, steps: int, more: bool) -> dict:
    """Train TRL and prmkit's variants from one base; return per-run figures."""
    from transformers import AutoTokenizer

    base = make_base(folder, seed)
    # alternate who runs first, so drift in the shared machine's load does not favour one side
    names = ["trl", "prmkit"] if seed % 2 == 0 else ["prmkit", "trl"]
    names += ["prmkit-trl-batches"] + (["prmkit-padded", "prmkit-grouped"] if more else [])
    runs = {}
    for name in names:
        if name == "trl":
            runs[name] = run_worker(str(trl_python), "trl", str(folder), str(base), str(seed), str(steps))
        else:
            runs[name] = run_worker(sys.executable, name, str(folder), str(base), str(seed), str(steps))
    tok = AutoTokenizer.from_pretrained(base)
    max_length = settings(folder)["max_length"]
    train, held = (encoded(folder / f"{part}.jsonl", tok, max_length) for part in ("train", "held"))
    check_same_tokens(json.loads((folder / f"trl-tokens-{seed}.json").read_text()), train, held)
    mean_tokens = sum(len(ids) for ids, _, _ in train) / len(train)  # the same for both: checked just above
    for name, r in runs.items():
        if r["initial_checksum"] != runs["trl"]["initial_checksum"]:
            raise AssertionError(f"seed {seed}: {name} starts from other weights than TRL")
        r["step_auroc"] = held_out_auroc(folder / f"trl-{seed}" if name == "trl" else Path(r["out"]), held)
        r["examples_per_s"] = steps * BATCH / r["seconds"]
        r["tokens_per_s"] = steps * BATCH * mean_tokens / r["seconds"]
        r["loop_examples_per_s"] = steps * BATCH / r["loop_seconds"]
    runs["prmkit-trl-batches"]["max_weight_diff_vs_trl"] = max_weight_diff(
        folder / f"trl-{seed}", Path(runs["prmkit-trl-batches"]["out"]))
    return runs


def batch_order_spread(folder: Path, seeds: list[int], shuffles: list[int], steps: int) -> int:
    """prmkit's held-out AUROC for each seed's model trained on batches drawn with each shuffle seed."""
    from transformers import AutoTokenizer

    for seed in seeds:
        base = make_base(folder, seed)
        held = encoded(folder / "held.jsonl", AutoTokenizer.from_pretrained(base), settings(folder)["max_length"])
        scores = []
        for shuffle in shuffles:
            run = run_worker(sys.executable, f"shuffle:{shuffle}", str(folder), str(base), str(seed), str(steps))
            scores.append(held_out_auroc(Path(run["out"]), held))
            print(f"seed {seed} shuffle {shuffle}: held-out step AUROC {scores[-1]:.3f}", flush=True)
        print(f"seed {seed}, {len(shuffles)} batch orders: held-out step AUROC {spread(scores)}")
    return 0


def max_weight_diff(a: Path, b: Path) -> float:
    from transformers import AutoModelForTokenClassification

    ma, mb = (AutoModelForTokenClassification.from_pretrained(x) for x in (a, b))
    return max(float((p - q).detach().abs().max()) for p, q in zip(ma.parameters(), mb.parameters(), strict=True))


def spread(values: list[float]) -> str:
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.3f} ± {sd:.3f} (min {min(values):.3f}, max {max(values):.3f})"


def report(results: dict[int, dict]) -> None:
    print(f"\n{'seed':>4} {'trainer':16s} {'examples/s':>10} {'tokens/s':>9} {'loop ex/s':>9} {'AUROC':>6}")
    for seed, runs in results.items():
        for name, r in runs.items():
            print(f"{seed:>4} {name:16s} {r['examples_per_s']:10.1f} {r['tokens_per_s']:9.0f} "
                  f"{r['loop_examples_per_s']:9.1f} {r['step_auroc']:6.3f}")
    print()
    names = list(next(iter(results.values())))
    for name in names:
        print(f"{name:16s} held-out step AUROC {spread([r[name]['step_auroc'] for r in results.values()])}")
    for name in (n for n in names if n != "trl"):
        for key, label in (("examples_per_s", "examples/s"), ("tokens_per_s", "tokens/s"),
                           ("loop_examples_per_s", "loop examples/s")):
            ratios = [r[name][key] / r["trl"][key] for r in results.values()]
            print(f"ratio {name}/TRL {label:16s} {spread(ratios)}")
        diffs = [r[name]["step_auroc"] - r["trl"]["step_auroc"] for r in results.values()]
        print(f"AUROC {name} - TRL            {spread(diffs)}")
    weights = ", ".join(f"{r['prmkit-trl-batches']['max_weight_diff_vs_trl']:.1e}" for r in results.values())
    print(f"prmkit on TRL's batches vs TRL, largest weight difference after training, per seed: {weights}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", default="0,1,2,3,4", help="comma list of seeds (model init, new layer, batch order)")
    parser.add_argument("--steps", type=int, default=STEPS, help="optimiser steps of each training run")
    parser.add_argument("--data", choices=("lab", "processbench"), default="lab",
                        help="lab: the lab's solutions (lengths vary little); processbench: real model-written "
                             "solutions from ../shared/data (lengths vary as in real PRM data)")
    parser.add_argument("--more", action="store_true",
                        help="also train prmkit on padded batches, shuffled and length-grouped")
    parser.add_argument("--shuffles", help="instead of the comparison: for each seed, train prmkit alone with "
                        "these batch-shuffle seeds (comma list) and print the spread of held-out AUROC that the "
                        "batch order alone makes")
    parser.add_argument("--json", help="write every run's figures to this file")
    args = parser.parse_args()
    import torch
    from transformers.utils import logging

    torch.set_num_threads(1)
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    trl_python = None if args.shuffles else ensure_trl_env()  # --shuffles trains prmkit alone
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        make_data(folder, args.data)
        if args.shuffles:
            return batch_order_spread(folder, [int(s) for s in args.seeds.split(",")],
                                      [int(s) for s in args.shuffles.split(",")], args.steps)
        for seed in (int(s) for s in args.seeds.split(",")):
            results[seed] = run_seed(folder, trl_python, seed, args.steps, args.more)
            print(f"seed {seed}: " + ", ".join(f"{n} {r['examples_per_s']:.1f} ex/s AUROC {r['step_auroc']:.3f}"
                                               for n, r in results[seed].items()), flush=True)
    print(f"TRL {TRL_VERSION} PRMTrainer vs prmkit on {args.data} data: tiny-llama token classification, "
          f"{args.steps} steps of batch {BATCH}, "
          "fp32, 1 thread; time from files on disk to the saved model")
    report(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "--worker":
        kind, folder, base, seed, steps = sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]), *map(int, sys.argv[5:7])
        if kind == "trl":
            result = trl_worker(folder, base, seed, steps)
        elif kind.startswith("shuffle:"):
            result = prmkit_worker(folder, base, seed, steps, {"name": kind.replace(":", "-"),
                                                                "shuffle": int(kind.split(":")[1])})
        else:
            result = prmkit_worker(folder, base, seed, steps, {"name": kind, **VARIANTS[kind]})
        print(json.dumps(result))
    else:
        sys.exit(main())
