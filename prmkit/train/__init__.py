"""Training PRMs and ORMs: :mod:`~prmkit.train.config` (TrainConfig, recipes), :mod:`~prmkit.train.data`
(examples, length-grouped batches), :mod:`~prmkit.train.loop` (one accelerate loop, checkpoints, resume),
:mod:`~prmkit.train.metrics` (held-out step metrics, metrics.jsonl). ``docs/training.md`` is the guide.
"""
