"""``AutoLabelConfig``: the settings of ``prmkit label auto`` (inert: checked on creation, no I/O).

Rollouts are sampled by a generator backend (a :class:`~prmkit.generate.config.GenerateConfig`: the
``--backend``, ``--model``, ``--temperature`` ... of ``prmkit generate``); this config says how they
become labels, and where the judge is.

>>> AutoLabelConfig().method, AutoLabelConfig(method="judge", judge_model="m").settings["judge"]
('mc', 'm')
>>> AutoLabelConfig(k=0)
Traceback (most recent call last):
...
ValueError: k must be at least 1, got 0
"""

from __future__ import annotations

from dataclasses import dataclass, field

METHODS = ("mc", "omegaprm", "judge", "consensus")
"""Labellers (``--method``): Math-Shepherd's Monte-Carlo rollouts, OmegaPRM's binary search, an LLM judge
with ProcessBench's critique prompt, and Qwen's consensus of rollouts and judge."""
ROLLOUT_METHODS = ("mc", "omegaprm", "consensus")
JUDGE_METHODS = ("judge", "consensus")


@dataclass(frozen=True)
class AutoLabelConfig:
    """How automatic labels are made from rollouts and a judge."""

    method: str = field(default="mc", metadata={
        "help": "mc: k rollouts from every step prefix (Math-Shepherd); omegaprm: binary search for the first "
                "error with rollouts; judge: an LLM judge's first wrong step (ProcessBench prompt); consensus: "
                "mc labels kept only where the judge agrees on the first error (Qwen)", "choices": METHODS})
    k: int = field(default=8, metadata={"help": "rollouts per step prefix", "flag": "--rollouts", "was": "--k",
                                        "metavar": "K"})
    max_prefixes: int = field(default=0, metadata={
        "help": "mc: roll out from at most this many prefixes per solution, evenly spaced and ending at the last "
                "step; the others stay unlabelled (0: every step)"})
    max_probes: int = field(default=0, metadata={
        "help": "omegaprm: most prefixes probed per solution (0: as many as the search needs, about log2 of the "
                "steps); a search cut short labels only what it settled"})
    judge_model: str = field(default="", metadata={"help": "judge, consensus: the served judge model's name"})
    judge_base_url: str = field(default="http://127.0.0.1:8000/v1", metadata={
        "help": "judge, consensus: the judge server's /v1 URL (any OpenAI-compatible server, prmkit serve included)"})
    judge_max_tokens: int = field(default=8192, metadata={"help": "judge: most tokens of a critique (ProcessBench's 8192)"})
    judge_temperature: float = field(default=0.0, metadata={"help": "judge: sampling temperature (0: greedy)"})
    judge_seed: int = field(default=42, metadata={"help": "judge: sampling seed sent with every request (ProcessBench's 42)"})
    judge_concurrency: int = field(default=8, metadata={"help": "judge: requests in flight at once"})
    judge_timeout: float = field(default=120.0, metadata={"help": "judge: seconds before a request is abandoned"})
    cache: str = field(default="", metadata={
        "help": "rollout cache (JSONL; default: OUT's name + .rollouts.jsonl beside it): a rerun, or one with a "
                "larger --k, reuses every rollout it holds"})
    resume: bool = field(default=True, metadata={
        "help": "skip solutions already in OUT or its partial file (a killed run goes on where it stopped)"})
    flush_every: int = field(default=8, metadata={"help": "solutions per write to the partial file"})
    progress: bool = field(default=True, metadata={"help": "show a progress bar (solutions, rollouts/s)"})

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}, got {self.method!r}")
        for name in ("k", "flush_every", "judge_max_tokens", "judge_concurrency"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.max_prefixes < 0 or self.max_probes < 0:
            raise ValueError("max_prefixes and max_probes must be 0 (no limit) or positive")
        if self.method in JUDGE_METHODS and not self.judge_model:
            raise ValueError(f"method {self.method} needs --judge-model, the served judge's name")

    @property
    def rollouts(self) -> bool:
        return self.method in ROLLOUT_METHODS

    @property
    def settings(self) -> dict:
        """What the records say the labeller used (the method's own settings only)."""
        out = {"method": self.method}
        if self.rollouts:
            out["k"] = self.k
        if self.method in ("mc", "consensus"):
            out["max_prefixes"] = self.max_prefixes
        if self.method == "omegaprm":
            out["max_probes"] = self.max_probes
        if self.method in JUDGE_METHODS:
            out.update(judge=self.judge_model, judge_temperature=self.judge_temperature)
        return out
