"""``GenerateConfig``: every setting of ``prmkit generate`` (a recipe file or flags set them; inert, no I/O).

>>> GenerateConfig().backend, GenerateConfig(backend="openai", model="m").concurrency
('hf', 8)
>>> GenerateConfig(n=0)
Traceback (most recent call last):
...
ValueError: n must be at least 1, got 0
"""

from __future__ import annotations

from dataclasses import dataclass, field

STEP_MODES = ("auto", "newline", "blank", "marker", "custom", "paragraphs", "sentences")
"""How a sampled text becomes steps (:func:`prmkit.steps.split_steps`)."""


@dataclass(frozen=True)
class GenerateConfig:
    """Settings of ``prmkit generate``: which model, how many samples, how they are sampled, prompted and split."""

    backend: str = field(default="hf", metadata={"help": "hf (transformers, CPU or GPU), vllm, openai (any "
                                                         "OpenAI-compatible server), lab (rule-based), lab-lm, or "
                                                         "one another package registers (prmkit.backends entry "
                                                         "points)"})
    model: str = field(default="", metadata={
        "help": "hf/vllm: a local model folder; openai: the served model's name; lab, lab-lm: a lab preset "
                "(default: default)"})
    n: int = field(default=4, metadata={"help": "solutions sampled per problem"})
    temperature: float = field(default=1.0, metadata={"help": "sampling temperature (0: greedy)"})
    top_p: float = field(default=1.0, metadata={"help": "nucleus sampling: keep the smallest set of tokens "
                                                        "with this much probability"})
    max_new_tokens: int = field(default=256, metadata={"help": "most tokens per sampled solution"})
    seed: int = field(default=0, metadata={
        "help": "sampling seed: each sample has its own stream (seed, problem, sample index), so a sample does "
                "not depend on its batch (hf, lab, lab-lm; openai/vllm pass it on)"})
    steps: str = field(default="auto", metadata={
        "help": "how a sample becomes steps: newline (the paper's format: one step per line, '# Answer' "
                "closes), blank (blank lines), marker (the format's marker token), custom (--step-separator), "
                "paragraphs/sentences (long chains of thought); auto: marker when the format has one, else "
                "newline", "choices": STEP_MODES})
    step_separator: str = field(default="", metadata={"help": "the separator of --steps custom"})
    prompt: str = field(default="{problem}", metadata={
        "help": "prompt template; {problem} is the problem's text (few-shot examples go before it)"})
    few_shot: str = field(default="", metadata={
        "help": "a prmkit solution file whose first --few-shot-n records are worked examples in the prompt"})
    few_shot_n: int = field(default=0, metadata={"help": "worked examples in the prompt (0: none)"})
    chat_template: bool = field(default=False, metadata={
        "help": "put the prompt in a user turn through the tokenizer's chat template (openai: the chat endpoint)"})
    problem_suffix: str = field(default="\n", metadata={"help": "text between the prompt and the first step"})
    separator: str = field(default="\n", metadata={"help": "text after every step of a prefix (and of examples)"})
    marker: str = field(default="", metadata={
        "help": "a token that ends every step, as in a prmkit model's format (e.g. <step>); empty: none"})
    stop: list = field(default_factory=list, metadata={
        "help": "strings that end a sample (cut there, finish_reason stop)"})
    batch_size: int = field(default=16, metadata={"help": "hf: sequences per generate call"})
    device: str = field(default="auto", metadata={"help": "hf: auto (CUDA when visible), cpu or cuda",
                                                  "choices": ("auto", "cpu", "cuda")})
    base_url: str = field(default="http://127.0.0.1:8000/v1", metadata={"help": "openai: the server's /v1 URL"})
    api_key_env: str = field(default="OPENAI_API_KEY", metadata={
        "help": "openai: environment variable holding the API key (unset: a dummy key, fine for local servers)"})
    concurrency: int = field(default=8, metadata={"help": "openai: requests in flight at once"})
    retries: int = field(default=3, metadata={"help": "openai: retries of a failed request (429, 5xx, "
                                                      "connection), with exponential backoff"})
    timeout: float = field(default=60.0, metadata={"help": "openai: seconds before a request is abandoned"})
    tensor_parallel: int = field(default=1, metadata={"help": "vllm: GPUs per model replica"})
    data_parallel: int = field(default=1, metadata={"help": "vllm: model replicas"})
    shard: str = field(default="0/1", metadata={
        "help": "I/K: generate only problems whose index modulo K is I (one shard per process or machine)"})
    resume: bool = field(default=True, metadata={"help": "skip samples already in the output or its partial "
                                                         "file (a rerun never duplicates a sample)"})
    flush_every: int = field(default=8, metadata={"help": "most problems per write to the partial file (hf, "
                                                          "lab-lm: at most one batch's worth, or one problem when "
                                                          "--n exceeds the batch: a killed run loses little)"})
    progress: bool = field(default=True, metadata={"help": "show a progress bar (samples/s, tokens/s)"})

    def __post_init__(self):
        for name in ("n", "max_new_tokens", "batch_size", "concurrency", "tensor_parallel", "data_parallel",
                     "flush_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.temperature < 0 or not 0 < self.top_p <= 1:
            raise ValueError(f"temperature must be >= 0 and top_p in (0, 1], got {self.temperature}, {self.top_p}")
        if self.retries < 0 or self.timeout <= 0 or self.few_shot_n < 0:
            raise ValueError("retries and few_shot_n must be >= 0 and timeout > 0")
        if self.steps == "custom" and not self.step_separator:
            raise ValueError("--steps custom needs --step-separator")
        if "{problem}" not in self.prompt:
            raise ValueError(f"the prompt template must contain {{problem}}: {self.prompt!r}")
        if self.few_shot_n and not self.few_shot:
            raise ValueError("few_shot_n needs a few_shot file")
        shard_of(self.shard)

    @property
    def sampling(self) -> dict:
        """The settings a sample depends on, recorded in every record's ``generator.sampling``."""
        always = ("n", "temperature", "top_p", "max_new_tokens", "seed", "prompt", "chat_template", "problem_suffix",
                  "separator")
        when_set = ("few_shot", "few_shot_n", "marker", "stop")
        return {**{k: getattr(self, k) for k in always}, **{k: getattr(self, k) for k in when_set if getattr(self, k)}}


def shard_of(text: str) -> tuple[int, int]:
    """``"I/K"`` as ``(I, K)``, checked.

    >>> shard_of("1/4")
    (1, 4)
    """
    try:
        i, k = (int(x) for x in text.split("/"))
    except ValueError:
        raise ValueError(f"shard must be I/K (e.g. 0/4), got {text!r}") from None
    if not 0 <= i < k:
        raise ValueError(f"shard {text!r}: need 0 <= I < K")
    return i, k
