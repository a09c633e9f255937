"""Reward models: the one formatter, label targets, heads on any transformers backbone, tiny presets, save/load.

Modules: :mod:`~prmkit.model.formatter` ((problem, steps) -> tokens and step ends), :mod:`~prmkit.model.labels`
(ratings/values -> targets, probabilities -> step scores), :mod:`~prmkit.model.spec` and
:mod:`~prmkit.model.heads` (lm / classify / regress heads), :mod:`~prmkit.model.hub` (output folders),
:mod:`~prmkit.model.tiny` (locally built presets and tokenizers); the tests' toy data is
:mod:`prmkit.testing.toydata`. ``docs/training.md`` is the guide.
"""
