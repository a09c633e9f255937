"""Packed batches: a micro-batch's solutions laid end to end in one row, with no padding.

A padded batch of solutions of different lengths spends compute on pad tokens in every linear layer, and
its attention runs under a padding mask over the longest row. Packed, the same solutions form one row of
``N = sum of lengths`` tokens; ``position_ids`` restart at 0 for each solution and ``cu_seq_lens`` (the
cumulative lengths, ``[0, l0, l0 + l1, ...]``) tells the attention where one ends and the next begins. The
attention registered here (:data:`PACKED_ATTENTION`) runs transformers' own SDPA attention on each
solution's slice with a causal mask, so no token sees another solution's tokens, and no pad is computed.

Every position then gets the same logits as in a padded batch (to float rounding; the tests hold them to
1e-5), so training, evaluation and scoring may use either layout. It applies to causal decoders that use
transformers' attention interface (Llama, Qwen2, Mistral, Gemma and most current models) without
sliding-window attention; :func:`packing_problem` says why any other model cannot be packed, and the
trainer's ``packing: auto`` then falls back to padded batches.

The keyword arguments are the names transformers' flash-attention path uses (``cu_seq_lens_q`` ...), so a
model set to ``flash_attention_2`` reads a packed batch the same way.
"""

from __future__ import annotations

import torch

PACKED_ATTENTION = "prmkit_packed"


def packed_sdpa(module, query, key, value, attention_mask, cu_seq_lens_q=None, **kwargs):
    """transformers' SDPA attention, run on each packed solution alone (causal, no mask).

    Without ``cu_seq_lens_q`` it is plain SDPA attention. transformers builds no mask for an attention
    it does not know, so an ordinary batch must be right-padded, as prmkit's ``collate`` pads: then the
    causal mask alone keeps every real token from seeing a pad, and only pads (never read) see pads. New tokens
    run after a key/value cache (:mod:`prmkit.search.incremental`) get a causal mask aligned to the cache's end.
    """
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    if cu_seq_lens_q is None:
        q, k = query.shape[2], key.shape[2]
        # new tokens after a key/value cache: the causal mask must end at the last key (SDPA's own is_causal aligns
        # it to the first, which hides the cache from all but its start); one new token sees every key, unmasked
        if attention_mask is None and k > q > 1:
            attention_mask = torch.ones(q, k, dtype=torch.bool, device=query.device).tril(k - q)[None, None]
        return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)
    for name in ("cu_seq_lens_k", "max_length_q", "max_length_k", "is_causal"):
        kwargs.pop(name, None)
    lengths = (cu_seq_lens_q[1:] - cu_seq_lens_q[:-1]).tolist()
    # split, not slicing: its backward is one concatenation, where each slice's would write a zero-filled
    # copy of the whole row. query [1, heads, N, dim]; each part comes back as [1, n, heads, dim].
    parts = [sdpa_attention_forward(module, q, k, v, None, is_causal=True, **kwargs)[0]
             for q, k, v in zip(*(x.split(lengths, dim=2) for x in (query, key, value)))]
    return torch.cat(parts, dim=1), None


def register() -> None:
    """Make :data:`PACKED_ATTENTION` a transformers attention implementation (idempotent)."""
    from transformers import AttentionInterface

    AttentionInterface.register(PACKED_ATTENTION, packed_sdpa)


def unwrapped(backbone):
    """The transformers model under a peft wrapper (or ``backbone`` itself)."""
    return backbone.get_base_model() if hasattr(backbone, "get_base_model") else backbone


def packing_problem(backbone) -> str | None:
    """Why ``backbone`` cannot read packed batches, or None when it can."""
    import transformers

    model = unwrapped(backbone)
    config = model.config
    if not hasattr(transformers, "AttentionInterface") or not hasattr(model, "set_attn_implementation"):
        return f"transformers {transformers.__version__} cannot switch a model's attention (a newer transformers can)"
    if not getattr(model, "_supports_attention_backend", False):
        return f"{type(model).__name__} does not use transformers' attention interface"
    if getattr(config, "is_encoder_decoder", False):
        return "an encoder-decoder model"
    attention = [m for m in model.modules() if hasattr(m, "is_causal")]
    if not attention or not all(m.is_causal is True for m in attention):
        return "its attention is not causal (a padded solution would see its neighbours)"
    return mask_problem(config) or (None if config._attn_implementation in ("sdpa", "eager", PACKED_ATTENTION)
                                    else f"it is set to attention {config._attn_implementation!r}")


def mask_problem(config) -> str | None:
    """Why a model's layers build a mask other than one causal mask over every token (None where they do not):
    a mask prmkit passes (a packed row's, a cached batch's) would replace theirs."""
    if getattr(config, "sliding_window", None) and getattr(config, "use_sliding_window", True):
        return "it uses sliding-window attention"
    if any(t != "full_attention" for t in (getattr(config, "layer_types", None) or [])):
        return "it has layers other than full attention"
    return None


def enable(backbone) -> None:
    """Switch ``backbone`` to :data:`PACKED_ATTENTION` (ordinary padded batches still work with it)."""
    register()
    backbone.set_attn_implementation(PACKED_ATTENTION)


def choose(setting: str, backbone) -> bool:
    """Whether to pack batches for ``setting`` (auto, on, off); switches the backbone's attention if so.

    ``auto`` packs when :func:`packing_problem` finds nothing against it; ``on`` raises ValueError saying
    why when it does.
    """
    if setting not in ("auto", "on", "off"):
        raise ValueError(f"packing must be auto, on or off, not {setting!r}")
    if setting == "off":
        return False
    problem = packing_problem(backbone)
    if problem and setting == "on":
        raise ValueError(f"packing: on, but this model cannot read packed batches: {problem}")
    if not problem:
        enable(backbone)
    return problem is None


def pack(token_lists: list[list[int]]) -> dict[str, torch.Tensor]:
    """``input_ids`` and ``position_ids`` ``[1, N]`` and ``cu_seq_lens`` ``[B + 1]`` of solutions end to end.

    >>> out = pack([[5, 6, 7], [8, 9]])
    >>> out["input_ids"].tolist(), out["position_ids"].tolist(), out["cu_seq_lens"].tolist()
    ([[5, 6, 7, 8, 9]], [[0, 1, 2, 0, 1]], [0, 3, 5])
    """
    lengths = torch.tensor([len(t) for t in token_lists], dtype=torch.long)
    ids = torch.tensor([t for tokens in token_lists for t in tokens], dtype=torch.long)[None]
    positions = torch.cat([torch.arange(n) for n in lengths.tolist()])[None]
    cu = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)])
    return {"input_ids": ids, "position_ids": positions, "cu_seq_lens": cu}


def backbone_kwargs(position_ids: torch.Tensor, cu_seq_lens: torch.Tensor) -> dict:
    """What a backbone's forward takes for a packed row."""
    longest = int((cu_seq_lens[1:] - cu_seq_lens[:-1]).max())
    return {"position_ids": position_ids, "cu_seq_lens_q": cu_seq_lens, "cu_seq_lens_k": cu_seq_lens,
            "max_length_q": longest, "max_length_k": longest}
