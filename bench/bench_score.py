"""Scoring throughput: one pass per solution (length-sorted batches) against per-prefix scoring and against
unsorted padded batches. Prints ratios from one run (not a timed test).

Model: the tiny-llama preset (untrained weights cost the same as trained ones), 1 torch thread.
- vs per-prefix: 300 solutions of exactly 10 steps. Per-prefix scoring (RLHFlow style) runs one forward
  pass per step prefix; it is measured both one prefix at a time (as those scripts do) and with the
  prefixes batched, the fairer baseline.
- vs unsorted padded batches: 1,000 solutions of 1-20 steps, batch 32: prmkit's default (sorted by length,
  packed with no padding) against input order padded to the longest, and against sorted padded batches.

    .venv/bin/python bench/bench_score.py
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import torch

from prmkit.model.formatter import FormatConfig, encode
from prmkit.model.hub import ModelCard, attach_tokens, load_base, save_model
from prmkit.model.spec import HeadSpec
from prmkit.score import Scorer
from prmkit.testing.toydata import make_solutions

torch.set_num_threads(1)


def build(folder: Path, sols) -> Path:
    head = HeadSpec("lm", 2)
    backbone, tok = load_base("tiny-llama", head, [t for s in sols for t in [s.problem.problem, *s.texts]])
    fmt = FormatConfig(max_length=1024)
    head = attach_tokens(backbone, tok, head, fmt)
    save_model(folder, backbone, tok, ModelCard("prm", head.to_dict(), fmt.to_dict()))
    return folder


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def per_prefix_batched(scorer: Scorer, sols, batch_size: int) -> None:
    encs = [encode(scorer.tokenizer, s.problem.problem, s.texts[:k], scorer.fmt)
            for s in sols for k in range(1, len(s.texts) + 1)]
    encs.sort(key=len)
    for i in range(0, len(encs), batch_size):
        scorer._forward(encs[i:i + batch_size])


def main() -> None:
    ten = make_solutions(300, seed=11, n_steps=(10, 10))
    mixed = make_solutions(1000, seed=12, n_steps=(1, 20))
    with tempfile.TemporaryDirectory() as tmp:
        scorer = Scorer(build(Path(tmp) / "m", ten + mixed), device="cpu")
        args = ([s.problem.problem for s in ten], [s.texts for s in ten])
        scorer.probabilities(*args)  # warm-up
        one_pass = timed(lambda: scorer.probabilities(*args, batch_size=32))
        prefix_seq = timed(lambda: [scorer.per_prefix_probabilities(s.problem.problem, s.texts) for s in ten[:60]]) * 5
        prefix_batched = timed(lambda: per_prefix_batched(scorer, ten, 32))
        margs = ([s.problem.problem for s in mixed], [s.texts for s in mixed])
        default_t = timed(lambda: scorer.probabilities(*margs, batch_size=32))
        scorer.packed = False
        unsorted_t = timed(lambda: scorer.probabilities(*margs, batch_size=32, sort_by_length=False))
        sorted_t = timed(lambda: scorer.probabilities(*margs, batch_size=32, sort_by_length=True))
    print(f"10-step solutions, 300: one pass {len(ten) / one_pass:.0f} sol/s; per-prefix one at a time "
          f"{len(ten) / prefix_seq:.0f} sol/s (ratio {prefix_seq / one_pass:.1f}x); per-prefix batched "
          f"{len(ten) / prefix_batched:.0f} sol/s (ratio {prefix_batched / one_pass:.1f}x)")
    print(f"1-20-step solutions, 1000, batch 32: sorted and packed (default) {len(mixed) / default_t:.0f} sol/s; "
          f"unsorted padded {len(mixed) / unsorted_t:.0f} sol/s (ratio {unsorted_t / default_t:.2f}x); "
          f"sorted padded {len(mixed) / sorted_t:.0f} sol/s (ratio {sorted_t / default_t:.2f}x)")


if __name__ == "__main__":
    main()
