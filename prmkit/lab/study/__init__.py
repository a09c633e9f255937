"""The paper's small-scale studies in the lab: ``prmkit lab study active | synthetic | budget``.

- :mod:`prmkit.lab.study.core`: what every study shares: train a lab reward model on a set of
  solutions and score pools with it (the same job ``prmkit lab run`` uses), best-of-N per problem from
  step probabilities, log-linear fits of accuracy against labels and the slope ratio with a bootstrap CI.
- :mod:`prmkit.lab.study.budget`, :mod:`~prmkit.lab.study.active`, :mod:`~prmkit.lab.study.synthetic`:
  the studies; each writes ``RUN_DIR/study-<name>/`` (``summary.json``, ``report.html``,
  ``section.html``, ``figures/``), and the lab report shows every study section it finds.

Settings: :mod:`prmkit.lab.study.config` (fields ``budget``, ``active``, ``synthetic`` of ``LabConfig``).
"""
