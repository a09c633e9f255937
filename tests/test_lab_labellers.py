"""Simulated labellers: noise rates, per-labeller bias, time, the phase-2 flow, PRM800K export."""

from __future__ import annotations

import dataclasses
import math

import pytest

from prmkit.convert import convert_file, read
from prmkit.io import read_solutions, write_records
from prmkit.lab import LabellerConfig, generate_pool, label, oracle_labels, preset
from prmkit.lab.labellers import labeller_lenience

EXACT = LabellerConfig(flip_rate=0.0, neutral_confusion=0.0, bias=0.0, stop_at_first_error=False, time_spread=0.0)


@pytest.fixture(scope="module")
def train():
    return generate_pool(preset("quick"), 0, "train", problems=400)  # 1,600 solutions


def pairs(sols, labelled):
    """(true rating, labeller's rating, labeller) of every rated step."""
    out = []
    for s, lab in zip(sols, labelled):
        truth = [x.rating for x in oracle_labels(s)]
        out += [(t, r, lab.labeller) for t, r in zip(truth, lab.ratings)]
    return out


def within(hits: int, n: int, p: float, sigmas: float = 4.5) -> bool:
    return abs(hits - n * p) <= sigmas * math.sqrt(n * p * (1 - p)) + 1


def test_noise_free_labellers_give_the_oracle_truth(train):
    out = label(train, EXACT, seed=0)
    assert all(t == r for t, r, _ in pairs(train, out))
    assert all(len(lab.steps) == len(s.steps) for s, lab in zip(train, out))


@pytest.mark.parametrize("flip", [0.05, 0.2])
def test_flip_rate_both_ways(train, flip):
    got = pairs(train, label(train, dataclasses.replace(EXACT, flip_rate=flip), seed=1))
    for true, wrong in ((-1, 1), (1, -1)):
        rated = [r for t, r, _ in got if t == true]
        assert within(sum(r == wrong for r in rated), len(rated), flip)


def test_neutral_confusion(train):
    got = pairs(train, label(train, dataclasses.replace(EXACT, neutral_confusion=0.3), seed=2))
    rated = [r for t, r, _ in got if t == 0]
    assert within(sum(r == 1 for r in rated), len(rated), 0.3) and set(rated) == {0, 1}


def test_bias_makes_lenient_labellers_miss_errors_and_strict_ones_see_errors(train):
    cfg = dataclasses.replace(EXACT, flip_rate=0.2, bias=0.9, labellers=8)
    got = pairs(train, label(train, cfg, seed=3))
    lenience = labeller_lenience(cfg, seed=3)
    lenient, strict = f"sim-{lenience.argmax():02d}", f"sim-{lenience.argmin():02d}"

    def rate(who, true, wrong):
        rated = [r for t, r, w in got if w == who and t == true]
        return sum(r == wrong for r in rated) / len(rated)

    assert rate(lenient, -1, 1) > rate(strict, -1, 1)
    assert rate(strict, 1, -1) > rate(lenient, 1, -1)


def test_phase_two_stops_at_the_first_step_rated_wrong(train):
    out = label(train, LabellerConfig(), seed=4)
    for s, lab in zip(train, out):
        assert lab.texts == s.texts[:len(lab.steps)] and lab.prelabel.steps == s.texts
        assert lab.prelabel.answer == s.answer
        assert -1 not in lab.ratings[:-1]
        if lab.finish_reason == "found_error":
            assert lab.ratings[-1] == -1
        else:
            assert len(lab.steps) == len(s.steps)
            assert lab.finish_reason == ("solution" if s.answer is not None else "give_up")
    reasons = {lab.finish_reason for lab in out}
    assert reasons == {"found_error", "solution", "give_up"}


def test_provenance_time_generations_and_determinism(train):
    cfg = dataclasses.replace(EXACT, generations=3, first_generation=2, ms_per_step=1000, ms_per_solution=5000)
    out = label(train, cfg, seed=5)
    assert all(lab.total_time_ms == 5000 + 1000 * len(lab.steps) for lab in out)
    gens = [lab.generation for lab in out]
    assert gens == sorted(gens) and set(gens) == {2, 3, 4}
    assert {lab.labeller for lab in out} == {f"sim-{i:02d}" for i in range(8)}
    assert all(lab.label_source == "human" and lab.meta["lab"]["simulated"] for lab in out)
    by_labeller = {}
    for lab in out:  # each labeller's clock only moves forward
        assert lab.timestamp > by_labeller.get(lab.labeller, "")
        by_labeller[lab.labeller] = lab.timestamp
    assert label(train, LabellerConfig(), seed=6) == label(train, LabellerConfig(), seed=6)


def test_a_second_stream_is_the_same_labellers_with_draws_of_its_own(train, monkeypatch):
    first, second = label(train, LabellerConfig(), seed=6), label(train, LabellerConfig(), seed=6, stream=1)
    assert label(train, LabellerConfig(), seed=6, stream=0) == first  # stream 0 is the call without one
    assert [r.labeller for r in first] != [r.labeller for r in second]
    assert label(train, LabellerConfig(), seed=6, stream=1) == second
    seen = []
    monkeypatch.setattr("prmkit.lab.labellers.labeller_lenience", lambda cfg, seed: seen.append(seed) or
                        labeller_lenience(cfg, seed))
    label(train[:2], LabellerConfig(), seed=6, stream=1)
    assert seen == [6]  # the same population: its lenience comes from the seed alone


def test_times_scatter_around_the_medians(train):
    out = label(train, LabellerConfig(stop_at_first_error=False), seed=7)
    per_step = sorted((lab.total_time_ms - 30_000) / len(lab.steps) for lab in out)
    assert 8_000 < per_step[len(per_step) // 2] < 16_000 and len(set(per_step)) > 100


def test_prm800k_export_through_the_converter_and_back(train, tmp_path):
    labelled = label(train[:300], LabellerConfig(generations=2), seed=8)
    src, raw, again = tmp_path / "lab.jsonl", tmp_path / "prm800k.jsonl", tmp_path / "again.jsonl"
    write_records(src, labelled)
    report = convert_file(src, raw, "prmkit", "prm800k")
    assert report.rows_out == 300 and not report.dropped
    back = list(read(raw, "prm800k"))
    for a, b in zip(labelled, back):
        assert (b.problem.problem, b.problem.answer) == (a.problem.problem, a.problem.answer)
        assert (b.texts, b.ratings) == (a.texts, a.ratings)
        assert (b.labeller, b.timestamp, b.generation, b.total_time_ms, b.finish_reason, b.label_source) == \
            (a.labeller, a.timestamp, a.generation, a.total_time_ms, a.finish_reason, a.label_source)
        assert (b.prelabel.steps, b.prelabel.answer) == (a.prelabel.steps, a.prelabel.answer)
        assert (b.quality_control, b.screening) == (False, False)
    convert_file(raw, again, "prm800k", "prm800k")
    assert again.read_bytes() == raw.read_bytes()
    assert [s.ratings for s in read_solutions(src)] == [s.ratings for s in labelled]


@pytest.mark.parametrize("bad", [{"flip_rate": 2.0}, {"labellers": 0}, {"label_source": "crowd"},
                                 {"start_time": "yesterday"}, {"ms_per_step": -1}])
def test_config_is_checked(bad):
    with pytest.raises(ValueError):
        LabellerConfig(**bad)
