"""Building a reward model from a base, and saving / loading the output folder.

An output folder is a plain transformers model folder plus one file::

    DIR/config.json, model.safetensors      the backbone (save_pretrained): AutoModelForCausalLM for the
                                            lm head, AutoModelForTokenClassification otherwise
    DIR/tokenizer.json, tokenizer_config.json   the tokenizer, with the marker and label tokens
    DIR/prmkit_config.json                  how to read it: ModelCard below

so ``AutoModelForCausalLM.from_pretrained(DIR)`` (or ``...ForTokenClassification``) works without
prmkit; ``docs/training.md`` shows how to read step scores that way.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from prmkit.model.formatter import FormatConfig, prepare_tokenizer, token_id
from prmkit.model.spec import HeadSpec
from prmkit.model.tiny import PRESETS, build_preset, is_preset

CARD_NAME = "prmkit_config.json"

HUB_NAME = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
"""A Hugging Face Hub model id: ``org/name``, one slash."""


def looks_local(name: str) -> bool:
    """Whether a model name can only mean a folder: it starts with ``.``, ``/`` or ``~``, has a backslash
    or more than one slash, or its first part is a folder here (``runs/prm`` when ``runs/`` exists).

    >>> [looks_local(n) for n in ("./my-model", "~/m", "runs/a/b", "Qwen/Qwen2.5-Math-7B", "gpt2")]
    [True, True, True, False, False]
    """
    if name.startswith((".", "/", "~")) or "\\" in name or (os.sep in name and not HUB_NAME.fullmatch(name)):
        return True
    return "/" in name and Path(name).parent.is_dir()


def model_location(name: str) -> str:
    """Where a model name points, checked before transformers sees it (it would retry the Hub for about a
    minute first): ``"local"`` for an existing folder, ``"hub"`` for a Hugging Face Hub name. A name that
    can only be a folder and is none, or a near miss of a preset name, raises ValueError.

    >>> model_location("./no-such-model")
    Traceback (most recent call last):
    ValueError: no such folder: ./no-such-model
    >>> model_location("tiny-lama")
    Traceback (most recent call last):
    ValueError: unknown model 'tiny-lama' (did you mean tiny-llama?)
    >>> model_location("Qwen/Qwen2.5-Math-7B")
    'hub'
    """
    if Path(name).expanduser().is_dir():
        return "local"
    if looks_local(name):
        raise ValueError(f"no such folder: {name}")
    near = difflib.get_close_matches(name, sorted(PRESETS), n=1, cutoff=0.8)
    if near:
        raise ValueError(f"unknown model {name!r} (did you mean {near[0]}?)")
    return "hub"


def pretrained_options(name: str) -> dict:
    """The ``from_pretrained`` keywords for ``name`` (checked by :func:`model_location`): a local folder is
    read with ``local_files_only``, so the network is never touched for it. (``HF_HUB_OFFLINE`` would do
    the same but is read once, when huggingface_hub is imported: setting it here would change nothing.)"""
    return {"local_files_only": True} if model_location(name) == "local" else {}


def local_folder(name: str) -> str:
    """``name``, checked to be an existing folder (a model this command can only read from disk)."""
    if not Path(name).expanduser().is_dir():
        raise ValueError(f"no such folder: {name}")
    return str(Path(name).expanduser())


@dataclass
class ModelCard:
    """Everything needed to score with a saved model (``prmkit_config.json``).

    ``kind``: prm or orm. ``head``: :class:`HeadSpec` as a dict. ``format``: :class:`FormatConfig` as a
    dict. ``neutral``: the policy used in training; ``score_neutral``: how a 3-class model's neutral
    probability counts when scoring (positive or negative). ``aggregations``: the solution scores
    written by default (``prmkit score``'s default); ``default_aggregation``: the one a single-number
    consumer should use. ``features``: the per-token inputs (:class:`prmkit.model.features.FeatureSpec`
    as a dict, its ``model`` relative to the folder), None for a model without.
    """

    kind: str
    head: dict
    format: dict
    neutral: str = "positive"
    score_neutral: str = "positive"
    supervise: str = "first_error"
    label_source: str = "rating"
    aggregations: list[str] = field(default_factory=lambda: ["product", "min", "last", "mean"])
    default_aggregation: str = "min"
    base_model: str = ""
    features: dict | None = None
    auto_class: str = ""
    prmkit_version: str = ""

    @property
    def head_spec(self) -> HeadSpec:
        return HeadSpec(**self.head)

    @property
    def format_config(self) -> FormatConfig:
        return FormatConfig.from_dict(self.format)

    def save(self, folder: str | os.PathLike) -> None:
        Path(folder, CARD_NAME).write_text(json.dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def load(cls, folder: str | os.PathLike) -> ModelCard:
        path = Path(local_folder(str(folder)), CARD_NAME)
        if not path.is_file():
            raise ValueError(f"{folder} is not a prmkit model folder (no {CARD_NAME})")
        return cls(**json.loads(path.read_text()))


def load_base(base_model: str, head: HeadSpec, texts_for_tokenizer=None, vocab_size: int = 512, seed: int = 0,
              head_dropout: float = 0.0, preset_positions: int | None = None):
    """(backbone, tokenizer) for ``base_model``: a preset built locally, or a name / folder loaded with
    ``from_pretrained`` as the head's auto class. Presets train their tokenizer on ``texts_for_tokenizer``.
    ``head_dropout`` is transformers' ``classifier_dropout`` before a classify/regress layer (Llama's own
    default is 0.1, which makes a run depend on how its batches are split over processes).
    ``preset_positions``: the position limit a preset is built with (its own default when None)."""
    import torch
    import transformers

    extra = {"num_labels": head.n_outputs} if head.kind != "lm" else {}
    if is_preset(base_model):
        if texts_for_tokenizer is None:
            raise ValueError(f"preset {base_model!r} needs texts to train its tokenizer on")
        drop = {"classifier_dropout": head_dropout} if extra else {}
        if preset_positions:
            drop["max_position_embeddings"] = preset_positions
        return build_preset(base_model, texts_for_tokenizer, head.auto_class, vocab_size, seed, **extra, **drop)
    where = pretrained_options(base_model)
    tokenizer = transformers.AutoTokenizer.from_pretrained(base_model, **where)
    torch.manual_seed(seed)  # a new classification layer is initialised from this seed
    kwargs = dict(where)
    if extra:
        kwargs["config"] = transformers.AutoConfig.from_pretrained(base_model, **extra, **where)
        kwargs["config"].classifier_dropout = head_dropout
    model, info = getattr(transformers, head.auto_class).from_pretrained(base_model, output_loading_info=True, **kwargs)
    # what the checkpoint did not hold starts from nothing (a classification layer): TrainConfig.new_lr
    model.prmkit_new_parameters = sorted(info.get("missing_keys", ()))
    if getattr(model.config, "pad_token_id", None) is None:
        model.config.pad_token_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    return model, tokenizer


def attach_tokens(backbone, tokenizer, head: HeadSpec, fmt: FormatConfig) -> HeadSpec:
    """Add the marker and label tokens (when missing), resize and initialise embeddings; return the head
    with ``label_token_ids`` filled in."""
    labels = head.used_label_tokens
    added = prepare_tokenizer(tokenizer, fmt, tuple(labels))
    init_from = {t: t for t in labels}
    if fmt.marker:
        init_from[fmt.marker] = fmt.separator or fmt.problem_suffix
    from prmkit.model.heads import init_new_tokens

    init_new_tokens(backbone, tokenizer, added, init_from)
    if getattr(backbone.config, "pad_token_id", None) is None:
        backbone.config.pad_token_id = tokenizer.pad_token_id
    ids = [token_id(tokenizer, t) for t in labels]
    return HeadSpec(head.kind, head.n_outputs, list(head.label_tokens), ids)


def save_model(folder: str | os.PathLike, backbone, tokenizer, card: ModelCard, state_dict=None,
               save_function=None) -> None:
    """Write the folder (backbone with ``save_pretrained``, tokenizer, ``prmkit_config.json``).

    ``state_dict``: the backbone's full weights when they live elsewhere (gathered from FSDP / ZeRO-3).
    """
    from prmkit import __version__

    Path(folder).mkdir(parents=True, exist_ok=True)
    kwargs = {"save_function": save_function} if save_function is not None else {}
    if state_dict is not None:
        kwargs["state_dict"] = state_dict
    backbone.save_pretrained(folder, **kwargs)
    tokenizer.save_pretrained(folder)
    card.prmkit_version = __version__
    card.auto_class = card.head_spec.auto_class
    card.save(folder)


def load_model(folder: str | os.PathLike, device=None, dtype=None):
    """(RewardModel in eval mode, tokenizer, card) from a saved folder (with its feature adapter, if any)."""
    import transformers

    from prmkit.model.heads import RewardModel

    card = ModelCard.load(folder)
    if card.kind not in ("prm", "orm"):
        raise ValueError(f"{folder} is a {card.kind!r} model, not a reward model (load it with transformers)")
    head = card.head_spec
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)
    kwargs = {"dtype": dtype} if dtype is not None else {}
    backbone = getattr(transformers, head.auto_class).from_pretrained(folder, local_files_only=True, **kwargs)
    adapter = None
    if card.features:
        from prmkit.model.features import load_adapter

        adapter = load_adapter(folder, card.features, backbone.config.hidden_size)[0]
        if dtype is not None:
            adapter.to(dtype)
    model = RewardModel(backbone, head, adapter).eval()
    if device is not None:
        model.to(device)
    return model, tokenizer, card
