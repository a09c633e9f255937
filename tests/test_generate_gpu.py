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


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["hf", pytest.param("vllm", marks=pytest.mark.skipif(
    importlib.util.find_spec("vllm") is None, reason="vLLM is not installed (extra: vllm)"))])
def test_gpu_search_through_a_backend_with_the_prm_on_the_gpu(backend, tiny_lm, tiny_prm, tmp_path):
    """`prmkit search` (beam) with the generator on the GPU (``hf`` in bf16, or vLLM) and the PRM on the GPU: every
    problem searched, its cost counted, and a rerun of the same search reads the same output (nothing redone)."""
    import json

    from prmkit.io import write_records
    from prmkit.search.run import SearchRunConfig, search_file

    write_records(tmp_path / "p.jsonl", PROBLEMS)
    cfg = SearchRunConfig(strategy="beam", n=4, m=2, max_depth=3, prm=str(tiny_prm), prm_device="cuda",
                          generate=GenerateConfig(backend=backend, model=str(tiny_lm), device="cuda", stop=["\n"],
                                                  max_new_tokens=8, temperature=1.0))
    summary = search_file(str(tmp_path / "p.jsonl"), str(tmp_path / "out.jsonl"), cfg, progress=False)
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").open()]
    assert summary["searched"] == 2 and len(lines) == 2
    assert all(r["cost"]["generated_tokens"] > 0 and r["cost"]["prm_calls"] > 0 for r in lines)
    again = search_file(str(tmp_path / "p.jsonl"), str(tmp_path / "out.jsonl"), cfg, progress=False)
    assert again["skipped"] == 2 and [json.loads(line) for line in (tmp_path / "out.jsonl").open()] == lines
