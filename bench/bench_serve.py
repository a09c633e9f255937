"""``prmkit serve`` under load: scoring solutions/s with 16 concurrent clients against the in-process
``Scorer``, and generation with 32 concurrent clients (no request lost or duplicated). Prints ratios
from one run (not a timed test).

The server is a real ``prmkit serve`` process on loopback (1 torch thread, as the in-process baseline);
clients are the official ``openai`` client (generation) and httpx (scoring), each in its own thread.
Scoring: 512 toy solutions of 1-10 steps on a tiny-llama PRM (random weights), each request one
problem's 16 candidates (a best-of-16 set), the baseline ``Scorer.probabilities`` in batches of 32.

    .venv/bin/python bench/bench_serve.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import openai
import torch
from bench_score import build as build_prm  # the same untrained tiny PRM as the scoring benchmark

from prmkit.model.tiny import build_preset
from prmkit.score import Scorer
from prmkit.serve import free_port
from prmkit.testing.toydata import make_solutions

torch.set_num_threads(1)


def build_lm(folder: Path) -> Path:
    model, tok = build_preset("tiny-llama", [f"{a} + {b} = {a + b}" for a in range(20) for b in range(10)],
                              "AutoModelForCausalLM", 300, seed=0)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def start_server(prm: Path, lm: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "prmkit", "serve", "--scorer", str(prm), "--generator", str(lm),
                             "--port", str(port), "--max-batch", "64"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            httpx.get(base + "/health", timeout=1)
            return proc, base
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("prmkit serve did not start")


def served_scoring(base: str, sols, clients: int = 16, per_request: int = 16) -> float:
    requests = [sols[i:i + per_request] for i in range(0, len(sols), per_request)]
    bodies = [{"solutions": [{"problem": s.problem.problem, "steps": s.texts} for s in r]} for r in requests]
    local = [httpx.Client(base_url=base, timeout=60) for _ in range(clients)]

    def post(i):
        r = local[i % clients].post("/v1/score", json=bodies[i])
        r.raise_for_status()
        return len(r.json()["solutions"])

    post(0)  # warm-up
    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        scored = sum(pool.map(post, range(len(bodies))))
    seconds = time.perf_counter() - start
    assert scored == len(sols)
    return seconds


def served_generation(base: str, clients: int = 32) -> tuple[bool, float]:
    c = openai.OpenAI(base_url=base + "/v1", api_key="none", max_retries=0, timeout=120)

    def ask(seed):
        r = c.completions.create(model="lm", prompt=f"{seed % 20} + {seed % 10} =", n=2, max_tokens=24, seed=seed)
        return [ch.text for ch in r.choices]

    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        together = list(pool.map(ask, range(clients)))
    seconds = time.perf_counter() - start
    alone = [ask(seed) for seed in range(clients)]
    ok = together == alone and len({t for pair in together for t in pair}) == 2 * clients
    return ok, seconds


def main() -> None:
    sols = make_solutions(512, seed=12, n_steps=(1, 10))
    with tempfile.TemporaryDirectory() as tmp:
        prm, lm = build_prm(Path(tmp) / "prm", sols), build_lm(Path(tmp) / "lm")
        scorer = Scorer(prm, device="cpu")
        args = ([s.problem.problem for s in sols], [s.texts for s in sols])
        scorer.probabilities(args[0][:32], args[1][:32], batch_size=32)  # warm-up
        start = time.perf_counter()
        scorer.probabilities(*args, batch_size=32)
        local_t = time.perf_counter() - start
        proc, base = start_server(prm, lm)
        try:
            served_t = served_scoring(base, sols)
            ok, gen_t = served_generation(base)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    n = len(sols)
    print(f"scoring, {n} solutions: in-process Scorer {n / local_t:.0f} sol/s; prmkit serve, 16 concurrent clients "
          f"{n / served_t:.0f} sol/s; ratio {local_t / served_t:.2f}x (target >= 0.8x)")
    print(f"generation, 32 concurrent clients x 2 samples: {64 / gen_t:.1f} samples/s; every client got its own "
          f"samples, none lost or duplicated (equal to the same requests made one by one): {ok}")
    if not ok:
        raise SystemExit("served generation lost, duplicated or mixed up samples")


if __name__ == "__main__":
    main()
