"""Generation throughput of the ``hf`` backend: batched (rows of many problems and samples in one
``generate`` call, KV cache) against one sample at a time, on the same tiny model and seed. Prints the
ratio from one run and checks that both give the same samples (not a timed test).

Model: the tiny-llama preset (random weights: sampling costs the same as with trained ones) saved to a
folder and loaded with ``from_pretrained``; 32 problems x 4 samples, 48 new tokens; 1 torch thread.

    .venv/bin/python bench/bench_generate.py
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from pathlib import Path

import torch

from prmkit.generate import GenerateConfig
from prmkit.generate.hf import HFBackend
from prmkit.model.tiny import build_preset
from prmkit.schema import Problem

torch.set_num_threads(1)


def build(folder: Path) -> Path:
    texts = [f"{a} + {b} = {a + b}\n# Answer\n\n{a + b}" for a in range(20) for b in range(10)]
    model, tok = build_preset("tiny-llama", texts, "AutoModelForCausalLM", 300, seed=0)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def run(cfg: GenerateConfig, problems, n: int):
    backend = HFBackend.from_config(cfg)
    backend.generate(problems[:1], 1)  # warm-up
    start = time.perf_counter()
    out = backend.generate(problems, n)
    return time.perf_counter() - start, out


def main() -> None:
    problems = [Problem(f"{a} + {b} =", id=f"p{a}-{b}") for a in range(8) for b in range(4)]
    n = 4
    with tempfile.TemporaryDirectory() as tmp:
        cfg = GenerateConfig(model=str(build(Path(tmp) / "m")), n=n, max_new_tokens=48, seed=0)
        batched_t, batched = run(dataclasses.replace(cfg, batch_size=64), problems, n)
        single_t, single = run(dataclasses.replace(cfg, batch_size=1), problems, n)
    same = [[s.text for s in p] for p in batched] == [[s.text for s in p] for p in single]
    samples = len(problems) * n
    tokens = sum(s.tokens for p in batched for s in p)
    print(f"hf backend, {samples} samples ({tokens} tokens): batched {samples / batched_t:.1f} samples/s "
          f"({tokens / batched_t:.0f} tokens/s); one at a time {samples / single_t:.1f} samples/s; "
          f"ratio {single_t / batched_t:.1f}x (target >= 3x); same samples under the same seed: {same}")
    if not same:
        raise SystemExit("batched and one-at-a-time samples differ")


if __name__ == "__main__":
    main()
