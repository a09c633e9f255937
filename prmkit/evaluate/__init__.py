"""Evaluation of reward models: best-of-N, voting, pass@N with confidence intervals; step-level metrics.

Modules: :mod:`~prmkit.evaluate.pool` (loading scored candidate pools), :mod:`~prmkit.evaluate.aggregate`
(step scores to a solution score), :mod:`~prmkit.evaluate.bon` (exact best-of-N and pass@N),
:mod:`~prmkit.evaluate.vote` (majority and weighted vote), :mod:`~prmkit.evaluate.bootstrap`
(confidence intervals), :mod:`~prmkit.evaluate.curves` (everything for one pool),
:mod:`~prmkit.evaluate.steps` (ProcessBench F1, AUROC, calibration), :mod:`~prmkit.evaluate.plots`,
:mod:`~prmkit.evaluate.report`. Definitions and formulas: ``docs/evaluation.md``.
"""
