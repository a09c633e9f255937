"""The generation backends on a CUDA GPU (skipped elsewhere; ``scripts/gpu_check.py`` runs them): ``hf`` in
bf16 through the same code as on a CPU, and ``vllm`` where it is installed."""

from __future__ import annotations

import importlib.util

import pytest

from prmkit.generate import GenerateConfig, make_backend
from prmkit.schema import Problem

torch = pytest.importorskip("torch")
PROBLEMS = [Problem(f"{a} + {b} =", id=f"p{a}") for a, b in [(1, 2), (13, 4)]]


@pytest.mark.gpu
def test_gpu_hf_backend_samples_in_bf16(tiny_lm):
    backend = make_backend(GenerateConfig(model=str(tiny_lm), device="cuda", n=4, max_new_tokens=16))
    assert backend.sampler.device == "cuda" and next(backend.sampler.model.parameters()).dtype == torch.bfloat16
    first, again = backend.generate(PROBLEMS, 4), backend.generate(PROBLEMS, 4)
    assert [[s.text for s in p] for p in first] == [[s.text for s in p] for p in again]
    assert len({s.text for p in first for s in p}) == 8


@pytest.mark.gpu
@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vLLM is not installed (extra: vllm)")
def test_gpu_vllm_backend_samples_under_a_seed(tiny_lm):
    cfg = GenerateConfig(backend="vllm", model=str(tiny_lm), n=4, max_new_tokens=16, seed=3)
    backend = make_backend(cfg)
    first, again = backend.generate(PROBLEMS, 4), backend.generate(PROBLEMS, 4)
    assert [len(p) for p in first] == [4, 4]
    assert [[s.text for s in p] for p in first] == [[s.text for s in p] for p in again]
    rest = backend.complete(PROBLEMS[0], ["1 + 2 = 3"], 2)
    assert len(rest) == 2 and all(s.tokens <= 16 for s in rest)
