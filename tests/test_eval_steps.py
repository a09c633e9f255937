"""Step-level metrics: ProcessBench F1 and its threshold search, AUROC, calibration, loaders."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prmkit.evaluate.stepdata import load_step_set
from prmkit.evaluate.steps import (
    StepSet,
    auroc,
    choose_threshold,
    f1_at_thresholds,
    processbench_f1,
    reliability,
    split_dev,
    step_metrics,
)
from prmkit.io import RecordError, write_records
from prmkit.schema import Solution


@st.composite
def step_set(draw):
    n = draw(st.integers(1, 12))
    scores, labels = [], []
    for _ in range(n):
        k = draw(st.integers(1, 5))
        scores.append(draw(st.lists(st.sampled_from([0.1, 0.3, 0.5, 0.7, 0.9]), min_size=k, max_size=k)))
        labels.append(draw(st.integers(-1, k - 1)))
    return StepSet("s", scores, labels)


@settings(max_examples=150, deadline=None)
@given(step_set())
def test_vectorised_f1_equals_direct_computation(data):
    grid = np.array([0.05, 0.1, 0.2, 0.3, 0.31, 0.5, 0.7, 0.9, 0.95])
    fast = f1_at_thresholds(data, grid)
    slow = [processbench_f1(data, t)["f1"] for t in grid]
    slow = [0.0 if np.isnan(x) else x for x in slow]
    np.testing.assert_allclose(np.nan_to_num(fast), slow, atol=1e-12)


@settings(max_examples=100, deadline=None)
@given(step_set())
def test_chosen_threshold_is_optimal_over_a_fine_grid(data):
    t, best, _, _ = choose_threshold([data])
    grid = np.linspace(0, 1, 201)
    direct = np.nan_to_num(f1_at_thresholds(data, grid))
    assert best >= direct.max() - 1e-12
    assert processbench_f1(data, t)["f1"] == pytest.approx(best) or np.isnan(processbench_f1(data, t)["f1"])


@settings(max_examples=100)
@given(st.lists(st.tuples(st.sampled_from([0.1, 0.4, 0.6, 0.9]), st.booleans()), min_size=2, max_size=20))
def test_auroc_equals_pair_counting(pairs):
    s = np.array([p[0] for p in pairs])
    y = np.array([int(p[1]) for p in pairs])
    pos, neg = s[y == 1], s[y == 0]
    if not pos.size or not neg.size:
        assert np.isnan(auroc(s, y))
        return
    expected = np.mean([(a > b) + 0.5 * (a == b) for a in pos for b in neg])
    assert auroc(s, y) == pytest.approx(expected)


def test_reliability_and_ece():
    probs = np.array([0.05, 0.15, 0.95, 0.95])
    r = reliability(probs, np.array([0, 0, 1, 1]), bins=10)
    assert r["count"][0] == 1 and r["count"][9] == 2
    assert r["ece"] == pytest.approx((0.05 + 0.15 + 2 * 0.05) / 4)
    with pytest.raises(ValueError, match="probabilities"):
        reliability(np.array([1.5]), np.array([1]))


def synthetic_processbench(records, seed):
    """Seeded per-step scores correlated with the labels: high before the first error, low at it."""
    rng = np.random.default_rng(seed)
    for rec in records:
        n, label = len(rec["steps"]), rec["label"]
        scores = rng.beta(5, 2, n)
        if label >= 0:
            scores[label] = rng.beta(2, 5)
            scores[label + 1:] = rng.random(n - label - 1)
        rec["p_correct"] = scores.round(4).tolist()
    return records


@pytest.mark.shared_data
def test_processbench_files_with_synthetic_scores(shared_data, tmp_path):
    sets = []
    for i, name in enumerate(["gsm8k", "math"]):
        records = json.loads((shared_data / "processbench" / f"{name}.json").read_text())
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(synthetic_processbench(records, i)))
        data, skipped = load_step_set(path, "p_correct")
        assert data.name == name and skipped == 0 and len(data) == len(records)
        sets.append(data)
    dev, test = zip(*(split_dev(s, 0.2, seed=0) for s in sets))
    result = step_metrics(list(test), list(dev))
    assert 0 < result["threshold"] < 1
    assert set(result["subsets"]) == {"gsm8k", "math"}
    assert 0.3 < result["mean_f1"] < 1 and result["step_auroc"] > 0.7
    assert result["calibration"]["ece"] >= 0
    with pytest.raises(RecordError, match="ProcessBench ships none"):
        load_step_set(shared_data / "processbench" / "gsm8k.json", "p_correct")


def test_prmkit_step_files(tmp_path):
    sols = []
    for i in range(10):
        ratings = [1, 1, -1] if i % 2 else [1, 0, 1]
        sol = Solution.from_steps("q", ["a", "b", "c"], ratings=ratings, id=str(i))
        for step, p in zip(sol.steps, [0.9, 0.8, 0.2] if i % 2 else [0.9, 0.7, 0.8]):
            step.scores["p_correct"] = p
        sols.append(sol)
    sols.append(Solution.from_steps("q", ["unrated"]))  # no rated step: skipped
    path = tmp_path / "mine.jsonl"
    write_records(path, sols)
    data, skipped = load_step_set(path, "p_correct")
    assert skipped == 1 and data.labels[:2] == [-1, 2]
    assert processbench_f1(data, 0.5)["f1"] == 1.0
    scores, labels = data.flat_step_labels()
    assert labels.size == 30 and auroc(scores, labels) == 1.0
