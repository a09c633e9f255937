"""Tiny models built locally: architecture presets and a tokenizer trained on the data.

``--base-model tiny-llama`` (or ``tiny-qwen2``) builds a few-layer model from a config, with a
byte-level BPE tokenizer trained on the training texts by ``tokenizers``; no download anywhere. A real
model name or folder goes through ``from_pretrained`` instead (:func:`prmkit.model.hub.load_base`), and
everything downstream is the same code.

>>> sorted(PRESETS)
['tiny-llama', 'tiny-qwen2']
>>> tok = train_tokenizer(["a + 1 = 2", "b - 3 = 4"], vocab_size=300)
>>> tok.decode(tok.encode("a + 1 = 2", add_special_tokens=False))
'a + 1 = 2'
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

SPECIAL_TOKENS = ("<pad>", "<s>", "</s>")

PRESETS: dict[str, dict] = {
    "tiny-llama": {"model_type": "llama", "hidden_size": 64, "intermediate_size": 172, "num_hidden_layers": 2,
                   "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 1024,
                   "rms_norm_eps": 1e-6, "tie_word_embeddings": True},
    "tiny-qwen2": {"model_type": "qwen2", "hidden_size": 64, "intermediate_size": 172, "num_hidden_layers": 2,
                   "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 1024,
                   "rms_norm_eps": 1e-6, "tie_word_embeddings": True},
}
"""Few-layer Llama- and Qwen2-style configs (~70k parameters plus the embeddings); fit a CPU in seconds."""


def is_preset(name: str) -> bool:
    return name in PRESETS


def train_tokenizer(texts: Iterable[str], vocab_size: int = 512):
    """A byte-level BPE tokenizer trained on ``texts``, as a transformers fast tokenizer.

    Byte-level, so any text round-trips through encode/decode; BOS is prepended by
    ``add_special_tokens=True``; ``<pad>``, ``<s>``, ``</s>`` are special tokens.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    # Spaces and digits stand alone, as in Llama/Qwen tokenizers: a number is the same tokens wherever it
    # appears (" 21" and "21" do not become unrelated ids), which a tiny model needs to compare values.
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(" ", behavior="isolated"), pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    bos = tok.token_to_id("<s>")
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                       special_tokens=[("<s>", bos)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                   clean_up_tokenization_spaces=False)


@functools.lru_cache(maxsize=1)
def _toy_texts() -> tuple[str, ...]:
    return tuple(f"{a} + {b} = {a + b}\n# Answer {a}" for a in range(20) for b in range(10))


def toy_tokenizer():
    """A small tokenizer for examples and tests (a fresh object each call, trained in milliseconds)."""
    return train_tokenizer(_toy_texts(), vocab_size=300)


def preset_config(name: str, vocab_size: int, tokenizer=None, **overrides):
    """The transformers config of preset ``name`` for a vocabulary of ``vocab_size``."""
    from transformers import AutoConfig

    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r} (known: {', '.join(sorted(PRESETS))})")
    spec = {**PRESETS[name], **overrides}
    model_type = spec.pop("model_type")
    ids = {}
    if tokenizer is not None:
        ids = {"bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id,
               "pad_token_id": tokenizer.pad_token_id}
    return AutoConfig.for_model(model_type, vocab_size=vocab_size, **ids, **spec)


def build_preset(name: str, texts: Iterable[str], auto_class: str, vocab_size: int = 512, seed: int = 0,
                 num_labels: int | None = None, **config_overrides):
    """(model, tokenizer) of preset ``name``, the tokenizer trained on ``texts``, weights seeded by ``seed``.

    ``auto_class`` is ``"AutoModelForCausalLM"`` or ``"AutoModelForTokenClassification"``.
    """
    import torch
    import transformers

    tokenizer = train_tokenizer(texts, vocab_size)
    extra = {"num_labels": num_labels} if num_labels else {}
    config = preset_config(name, len(tokenizer), tokenizer, **extra, **config_overrides)
    torch.manual_seed(seed)
    model = getattr(transformers, auto_class).from_config(config)
    return model, tokenizer
