"""The ``vllm`` backend: vLLM's offline engine on GPUs, tensor parallel (``--tensor-parallel``) and data
parallel (``--data-parallel``) (extra ``vllm``: ``pip install 'prmkit[gpu,vllm]'``).

Prompts are :func:`prmkit.generate.prompt.prompt_text` (through the tokenizer's chat template with
``--chat-template``); each request carries its own seed (:func:`prmkit.generate.backend.sample_seed`),
so a sample does not depend on what else is in the engine's batch. Its tests are marked ``gpu``.
"""

from __future__ import annotations

from prmkit.generate.backend import Backend, Sample, problem_key, sample_seed
from prmkit.generate.prompt import load_shots, prompt_text, render_problem, steps_text


class VLLMBackend(Backend):
    """Samples with ``vllm.LLM``; see the module docstring."""

    def __init__(self, cfg, llm=None):
        try:
            import vllm
        except ImportError:
            raise ValueError("the vllm backend needs vLLM on a CUDA machine: pip install 'prmkit[gpu,vllm]'") from None
        if not cfg.model:
            raise ValueError("the vllm backend needs --model, a local model folder")
        if llm is None:
            from prmkit.model.hub import model_location

            model_location(cfg.model)  # a missing folder is said at once, not after the Hub's retries
        self.cfg, self.name, self.shots, self.vllm = cfg, cfg.model, load_shots(cfg), vllm
        self.llm = llm or vllm.LLM(model=cfg.model, tensor_parallel_size=cfg.tensor_parallel,
                                   data_parallel_size=cfg.data_parallel, seed=cfg.seed)

    def fingerprint(self) -> dict:
        from prmkit.model.identity import weights_digest

        return {"weights": weights_digest(self.cfg.model)}

    def _prompt(self, problem, prefix_steps: list[str]) -> str:
        if not self.cfg.chat_template:
            return prompt_text(problem.problem, prefix_steps, self.cfg, self.shots)
        tok = self.llm.get_tokenizer()
        turn = [{"role": "user", "content": render_problem(problem.problem, self.cfg, self.shots)}]
        return tok.apply_chat_template(turn, tokenize=False, add_generation_prompt=True) + \
            steps_text(prefix_steps, self.cfg)

    def _params(self, problem, prefix_steps: list[str], n: int, start: int = 0):
        cfg = self.cfg
        return self.vllm.SamplingParams(n=n, temperature=cfg.temperature, top_p=cfg.top_p,
                                        max_tokens=cfg.max_new_tokens, stop=cfg.stop or None,
                                        seed=sample_seed(cfg.seed, problem_key(problem), prefix_steps, start))

    def _run(self, requests: list[tuple]) -> list[list[Sample]]:
        """Every ``(problem, prefix, n, start)`` request in one engine call: vLLM batches their rows."""
        prompts = [self._prompt(p, prefix) for p, prefix, _, _ in requests]
        params = [self._params(p, prefix, n, start) for p, prefix, n, start in requests]
        outputs = self.llm.generate(prompts, params, use_tqdm=False)
        return [[Sample(o.text, len(o.token_ids), o.finish_reason or "stop") for o in out.outputs] for out in outputs]

    def generate(self, problems, n):
        return self._run([(p, [], n, 0) for p in problems])

    def complete(self, problem, prefix_steps, n, start=0):
        return self._run([(problem, list(prefix_steps), n, start)])[0]

    def complete_many(self, requests):
        return self._run([(p, list(prefix), n, start) for p, prefix, n, start in requests])
