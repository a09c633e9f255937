"""Reward-model heads on any Hugging Face backbone, read at the step-end positions of the formatter.

Three heads (``HeadSpec.kind``):

``lm``
    The paper's: the backbone is an ``AutoModelForCausalLM`` and its own language-model head, read at each
    step end, is restricted to the label tokens (positive, negative and, with a neutral class, neutral).
    Nothing new is learned from scratch: the head starts from the LM's own next-token predictions.
``classify``
    An ``AutoModelForTokenClassification`` with 2 or 3 classes (a new linear layer on the last hidden
    state), as TRL's PRMTrainer did.
``regress``
    The same with one output: P(step correct) = sigmoid(logit), trained with binary (soft)
    cross-entropy on floats in [0, 1], for Monte-Carlo values.

Whatever the head, :class:`RewardModel` returns logits ``[batch, steps, outputs]`` at the given
positions, and :func:`soft_cross_entropy` / :func:`probabilities` turn them into a loss and
probabilities in the output order of :mod:`prmkit.model.labels`.
"""

from __future__ import annotations

import functools
import inspect

import torch
import torch.nn.functional as F
from torch import nn

from prmkit.model.packing import backbone_kwargs, unwrapped
from prmkit.model.spec import AUTO_CLASSES, HEADS, HeadSpec  # noqa: F401  (re-exported)


class RewardModel(nn.Module):
    """A backbone plus a head spec: ``forward(input_ids, attention_mask, positions) -> logits [B, S, C]``.

    ``positions`` is ``[B, S]`` with the step-end positions of each row, padded with -1 (padded entries
    give logits that the loss and the scorer ignore). A packed batch (:mod:`prmkit.model.packing`) passes
    ``input_ids`` ``[1, N]`` with ``position_ids`` and ``cu_seq_lens``; ``positions`` still count from each
    solution's own start, so the output is the same ``[B, S, C]`` either way.
    """

    def __init__(self, backbone: nn.Module, head: HeadSpec, adapter: nn.Module | None = None):
        super().__init__()
        self.backbone = backbone
        self.head = head
        self.adapter = adapter  # per-token features (prmkit.model.features), added to the input embeddings
        if head.kind == "lm":
            if len(head.label_token_ids) != head.n_outputs:
                raise ValueError("lm head: label_token_ids not set (see prmkit.model.hub.attach_tokens)")
            self.register_buffer("label_ids", torch.tensor(head.label_token_ids, dtype=torch.long), persistent=False)

    def forward(self, input_ids, attention_mask=None, positions=None, position_ids=None, cu_seq_lens=None,
                features=None):
        index = positions.clamp(min=0)
        tokens = self._inputs(input_ids, features)
        if cu_seq_lens is None:
            logits = self.backbone(**tokens, attention_mask=attention_mask).logits
            rows = torch.arange(logits.shape[0], device=logits.device)[:, None]
        else:
            index = index + cu_seq_lens[:-1, None]
            kwargs = backbone_kwargs(position_ids, cu_seq_lens)
            if self.head.kind == "lm" and _keeps_logits(self.backbone):
                # the LM head only at the step ends: [1, B*S, V] instead of [1, N, V], often most of the
                # memory and a good share of the compute of a step with a large vocabulary
                logits = self.backbone(**tokens, logits_to_keep=index.flatten(), **kwargs).logits
                index = torch.arange(index.numel(), device=index.device).view_as(index)
            else:
                logits = self.backbone(**tokens, **kwargs).logits
            rows = torch.zeros_like(index)
        picked = logits[rows, index]  # [B, S, V] or [B, S, C]
        if self.head.kind == "lm":
            picked = picked.index_select(-1, self.label_ids)
        return picked.float()

    def _inputs(self, input_ids, features) -> dict:
        """The backbone's token input: ids, or with an adapter, embeddings plus the adapted features."""
        if self.adapter is None:
            return {"input_ids": input_ids}
        if features is None:
            raise ValueError("this reward model reads per-token features: pass features [B, T, F]")
        embeds = self.backbone.get_input_embeddings()(input_ids)
        return {"inputs_embeds": embeds + self.adapter(features.to(embeds.dtype))}


def _keeps_logits(backbone: nn.Module) -> bool:
    """Whether a causal LM's forward can compute logits at chosen positions only (``logits_to_keep``)."""
    return _forward_takes(type(unwrapped(backbone)), "logits_to_keep")


@functools.cache
def _forward_takes(cls: type, name: str) -> bool:
    return name in inspect.signature(cls.forward).parameters


class NextTokenModel(nn.Module):
    """A causal LM trained on its own next-token objective (``TrainConfig.kind="lm"``, e.g. the lab's base):
    ``forward(input_ids, ...) -> logits [B, T, V]`` (``[1, N, V]`` packed), the same batches as a reward model."""

    def __init__(self, backbone: nn.Module):
        super().__init__()
        self.backbone = backbone

    def forward(self, input_ids, attention_mask=None, positions=None, position_ids=None, cu_seq_lens=None,
                features=None):
        if cu_seq_lens is None:
            return self.backbone(input_ids=input_ids, attention_mask=attention_mask).logits.float()
        return self.backbone(input_ids=input_ids, **backbone_kwargs(position_ids, cu_seq_lens)).logits.float()


def next_token_loss(logits: torch.Tensor, token_targets: torch.Tensor) -> torch.Tensor:
    """Summed cross-entropy of ``[B, T, V]`` logits against the ids each position predicts (-100: none).

    >>> logits = torch.zeros(1, 2, 4); round(next_token_loss(logits, torch.tensor([[3, -100]])).item(), 4)
    1.3863
    """
    return F.cross_entropy(logits.flatten(0, 1), token_targets.flatten(), ignore_index=-100, reduction="sum")


def soft_cross_entropy(logits: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Summed soft cross-entropy over the supervised entries (``mask``) of ``[B, S, C]`` logits.

    One output: binary cross-entropy with logits against float targets ``[B, S, 1]``. Several: the
    cross-entropy against the target distributions (one-hot for hard labels), kept as floats.

    >>> logits = torch.tensor([[[2.0, 0.0], [0.0, 0.0]]]); t = torch.tensor([[[1.0, 0.0], [0.5, 0.5]]])
    >>> round(soft_cross_entropy(logits, t, torch.tensor([[True, False]])).item(), 4)
    0.1269
    """
    if logits.shape[-1] == 1:
        per = F.binary_cross_entropy_with_logits(logits[..., 0], targets[..., 0], reduction="none")
    else:
        per = -(targets * F.log_softmax(logits, dim=-1)).sum(-1)
    return torch.where(mask, per, torch.zeros_like(per)).sum()


def probabilities(logits: torch.Tensor) -> torch.Tensor:
    """Output probabilities: softmax over classes, or sigmoid for one output."""
    return torch.sigmoid(logits) if logits.shape[-1] == 1 else torch.softmax(logits, dim=-1)


def init_new_tokens(model: nn.Module, tokenizer, new_tokens: list[str], init_from: dict[str, str]) -> None:
    """Resize ``model``'s embeddings to the tokenizer and initialise each new token's rows.

    A new token's input (and, when untied, output) embedding is the mean of the embeddings of the
    tokens of ``init_from[token]`` (e.g. the marker starts as the separator it follows), falling back to
    the mean of all old rows: a sensible start, never a random vector far from the rest.
    """
    if not new_tokens and len(tokenizer) <= model.get_input_embeddings().weight.shape[0]:
        return
    old = model.get_input_embeddings().weight.shape[0]
    model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
    matrices = [model.get_input_embeddings().weight]
    out = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if out is not None and out.weight.data_ptr() != matrices[0].data_ptr():
        matrices.append(out.weight)
    with torch.no_grad():
        for token in new_tokens:
            new_id = tokenizer.convert_tokens_to_ids(token)
            source = [i for i in tokenizer.encode(init_from.get(token, ""), add_special_tokens=False) if i < old]
            for w in matrices:
                w[new_id] = w[source].mean(0) if source else w[:old].mean(0)
