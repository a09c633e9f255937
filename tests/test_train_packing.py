"""Packed batches (no padding) give the same logits, gradients and trained weights as padded ones."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file

from prmkit.io import write_records
from prmkit.model import packing
from prmkit.model.heads import HeadSpec, RewardModel, soft_cross_entropy
from prmkit.model.tiny import build_preset
from prmkit.testing.toydata import make_solutions
from prmkit.train.config import TrainConfig
from prmkit.train.data import Example, collate, model_inputs
from prmkit.train.loop import train

torch.set_num_threads(1)


def _examples(n: int = 6, seed: int = 0) -> list[Example]:
    """Solutions of very different lengths (the case padding wastes most on), with step-end targets."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(n):
        length = int(torch.randint(5, 60, (1,), generator=g))
        ids = torch.randint(3, 200, (length,), generator=g).tolist()
        ends = sorted({int(p) for p in torch.randint(0, length, (3,), generator=g)} | {length - 1})
        targets = [[1.0, 0.0] if (i + j) % 3 else [0.0, 1.0] for j in range(len(ends))]
        out.append(Example(ids, ends, targets, i))
    return out


@pytest.mark.parametrize("preset", ["tiny-llama", "tiny-qwen2"])
@pytest.mark.parametrize("auto_class, head", [("AutoModelForTokenClassification", HeadSpec("classify", 2)),
                                              ("AutoModelForCausalLM", HeadSpec("lm", 2, ["+", "-"], [10, 11]))])
def test_packed_logits_and_gradients_equal_padded(preset, auto_class, head):
    backbone, _ = build_preset(preset, ["a b c 1 2 3 + - ="], auto_class, vocab_size=260, seed=1,
                               num_labels=2 if head.kind != "lm" else None)
    assert packing.packing_problem(backbone) is None
    packing.enable(backbone)
    model = RewardModel(backbone, head).eval()  # eval: no dropout, so both passes compute the same function
    examples = _examples()
    results = []
    for packed in (False, True):
        model.zero_grad()
        batch = collate(examples, 0, 2, packed=packed)
        logits = model(**model_inputs(batch))
        soft_cross_entropy(logits, batch["targets"], batch["mask"]).backward()
        grads = {n: p.grad.clone() for n, p in model.named_parameters()}
        results.append((logits.detach(), batch["mask"], grads))
    (padded, mask, g_pad), (packed_logits, mask_packed, g_packed) = results
    assert torch.equal(mask, mask_packed)
    assert packed_logits.shape == padded.shape
    assert (packed_logits - padded)[mask].abs().max() < 1e-5
    assert max((g_pad[n] - g_packed[n]).abs().max().item() for n in g_pad) < 1e-5
    assert collate(examples, 0, 2, packed=True)["input_ids"].shape[1] == sum(len(e.input_ids) for e in examples)


def test_packed_solutions_do_not_see_each_other():
    """Changing one solution's tokens changes no other solution's logits in the same packed row."""
    backbone, _ = build_preset("tiny-llama", ["a b c"], "AutoModelForTokenClassification", vocab_size=260,
                               num_labels=2)
    packing.enable(backbone)
    model = RewardModel(backbone, HeadSpec("classify", 2)).eval()
    examples = _examples(4)
    changed = [Example([t + 1 for t in e.input_ids] if i == 1 else e.input_ids, e.positions, e.targets)
               for i, e in enumerate(examples)]
    with torch.no_grad():
        a, b = (model(**model_inputs(collate(x, 0, 2, packed=True))) for x in (examples, changed))
    for i in (0, 2, 3):
        assert torch.allclose(a[i], b[i], atol=1e-6)
    assert not torch.allclose(a[1], b[1], atol=1e-3)


def test_models_that_cannot_pack_say_why():
    from transformers import BertConfig, BertForTokenClassification

    bert = BertForTokenClassification(BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1,
                                                 num_attention_heads=2, intermediate_size=32))
    assert "not causal" in packing.packing_problem(bert)
    assert packing.choose("auto", bert) is False
    with pytest.raises(ValueError, match="cannot read packed batches: .*not causal"):
        packing.choose("on", bert)
    qwen, _ = build_preset("tiny-qwen2", ["a"], "AutoModelForCausalLM", vocab_size=260)
    qwen.config.use_sliding_window, qwen.config.sliding_window = True, 16
    assert "sliding-window" in packing.packing_problem(qwen)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("data")
    write_records(folder / "train.jsonl", make_solutions(96, seed=1, n_steps=(1, 12)))
    return folder


@pytest.mark.parametrize("extra", [{}, {"lora": True, "lr": 1e-2}])
def test_packed_training_equals_padded_training(data, tmp_path, extra):
    """Same batches (grouping fixed), packed or padded: the trained weights agree to float rounding."""
    common = {"data": str(data / "train.jsonl"), "max_steps": 4, "batch_size": 8, "eval_fraction": 0.2,
              "eval_every": 2, "save_every": 0, "progress": False, "tensorboard": False, "group_by_length": False}
    metrics = {}
    for mode in ("on", "off"):
        metrics[mode] = train(TrainConfig(out=str(tmp_path / mode), packing=mode, **common, **extra))
    a, b = (load_file(str(tmp_path / m / "model.safetensors")) for m in ("on", "off"))
    assert max((a[k] - b[k]).abs().max().item() for k in a) < 1e-5
    assert abs(metrics["on"]["step_auroc"] - metrics["off"]["step_auroc"]) < 1e-6
    assert "prmkit_packed" not in (tmp_path / "on" / "config.json").read_text()


@pytest.mark.gpu
def test_packed_equals_padded_on_gpu():
    backbone, _ = build_preset("tiny-llama", ["a b c 1 2 3"], "AutoModelForTokenClassification", vocab_size=260,
                               num_labels=2)
    packing.enable(backbone)
    model = RewardModel(backbone, HeadSpec("classify", 2)).eval().cuda()
    examples = _examples()
    with torch.no_grad():
        padded, packed = (model(**model_inputs(collate(examples, 0, 2, packed=p), "cuda")) for p in (False, True))
    mask = collate(examples, 0, 2)["mask"].cuda()
    assert (packed - padded)[mask].abs().max() < 1e-4
