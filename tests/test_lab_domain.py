"""The ledger problem family: determinism, difficulty, values in range, the held-out family, splits."""

from __future__ import annotations

from collections import Counter

import pytest

from prmkit.lab import OOD, LedgerConfig, make_problems, parse_problem, preset
from prmkit.lab.domain import KINDS


def test_same_seed_same_problems_other_seed_other_problems():
    a = make_problems(LedgerConfig(), 50, seed=0)
    assert a == make_problems(LedgerConfig(), 50, seed=0)
    assert make_problems(LedgerConfig(), 20, seed=0) == a[:20]
    assert len({p.problem for p in a} & {p.problem for p in make_problems(LedgerConfig(), 50, seed=1)}) == 0


def test_splits_and_families_never_share_problems():
    cfg = preset("default")
    texts = {split: {p.problem for p in make_problems(cfg.family(split), 300, 0, split)}
             for split in ("eval", "train", "ood", "pretrain")}
    for a, ta in texts.items():
        for b, tb in texts.items():
            if a < b:
                assert not ta & tb, (a, b)


@pytest.mark.parametrize("cfg", [LedgerConfig(), OOD, LedgerConfig(steps=(3, 3), max_operand=3, max_value=40)],
                         ids=["default", "ood", "small"])
def test_difficulty_and_range(cfg):
    for p in make_problems(cfg, 200, seed=3):
        led = parse_problem(p.problem)
        assert cfg.steps[0] <= len(led.txns) <= cfg.steps[1]
        assert all(0 <= v <= cfg.max_value for v in [led.start, *led.values()])
        assert all(t.k is None or 1 <= t.k <= cfg.max_operand for t in led.txns if t.kind != "set")
        assert p.answer == str(led.answer) and p.level == len(led.txns)
        assert led.text() == p.problem


def test_every_kind_of_the_family_occurs():
    kinds = Counter(t.kind for p in make_problems(LedgerConfig(), 300, 0) for t in parse_problem(p.problem).txns)
    assert set(kinds) == {"+", "-", "less", "twice", "again", "set"}
    ood = Counter(t.kind for p in make_problems(OOD, 300, 0, "ood") for t in parse_problem(p.problem).txns)
    assert set(ood) == set(KINDS)


def test_the_ood_family_differs_new_operations_and_longer_chains():
    main = [parse_problem(p.problem) for p in make_problems(LedgerConfig(), 200, 0)]
    ood = [parse_problem(p.problem) for p in make_problems(OOD, 200, 0, "ood")]
    assert max(len(led.txns) for led in main) < min(len(led.txns) for led in ood)
    new = {"thrice", "half", "undo"}
    assert not any(t.kind in new for led in main for t in led.txns)
    assert sum(any(t.kind in new for t in led.txns) for led in ood) > 0.7 * len(ood)


@pytest.mark.parametrize("bad", [{"steps": (0, 3)}, {"steps": (5, 4)}, {"max_operand": 0},
                                 {"weights": (("twice", 1.0),)}, {"weights": (("+", 1.0), ("times", 1.0))}])
def test_config_is_checked(bad):
    with pytest.raises(ValueError):
        LedgerConfig(**bad)


@pytest.mark.parametrize("text", ["Start at 12.\nA + 2", "Start at x.\nA + 2\nWhat is the final value?",
                                  "Start at 1.\nA times 2\nWhat is the final value?"])
def test_parse_problem_refuses_other_text(text):
    with pytest.raises(ValueError):
        parse_problem(text)
