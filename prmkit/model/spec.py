"""What a reward-model head outputs, as plain data (no torch import: configs and the CLI use it).

>>> HeadSpec("classify", 3).auto_class
'AutoModelForTokenClassification'
>>> HeadSpec("lm", 2).used_label_tokens
['+', '-']
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

HEADS = ("lm", "classify", "regress")
AUTO_CLASSES = {"lm": "AutoModelForCausalLM", "classify": "AutoModelForTokenClassification",
                "regress": "AutoModelForTokenClassification"}


@dataclass
class HeadSpec:
    """What a head outputs. ``label_tokens`` (lm head only): positive, negative[, neutral] token strings;
    ``label_token_ids`` their ids, filled in once the tokenizer is known."""

    kind: str = "lm"
    n_outputs: int = 2
    label_tokens: list[str] = field(default_factory=lambda: ["+", "-", "="])
    label_token_ids: list[int] = field(default_factory=list)

    def __post_init__(self):
        if self.kind not in HEADS:
            raise ValueError(f"unknown head {self.kind!r} (expected one of {', '.join(HEADS)})")
        if self.kind == "regress" and self.n_outputs != 1:
            raise ValueError("the regress head has exactly one output")
        if self.kind != "regress" and self.n_outputs not in (2, 3):
            raise ValueError(f"the {self.kind} head has 2 or 3 classes, not {self.n_outputs}")
        if self.kind == "lm" and len(self.label_tokens) < self.n_outputs:
            raise ValueError(f"{self.n_outputs} classes need {self.n_outputs} label tokens, got {self.label_tokens}")

    @property
    def auto_class(self) -> str:
        return AUTO_CLASSES[self.kind]

    @property
    def used_label_tokens(self) -> list[str]:
        return list(self.label_tokens[: self.n_outputs]) if self.kind == "lm" else []

    def to_dict(self) -> dict:
        return asdict(self)
