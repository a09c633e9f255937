"""The paper's small-scale studies in the lab: ``prmkit lab study active | autolabel | budget | pressure | synthetic``.

- :mod:`prmkit.lab.study.protocol`: a study is a :class:`~prmkit.lab.study.protocol.Study` (named stages
  of job dataclasses, each keyed by the fields it reads and its inputs' keys, a summary, its pages), and
  one driver, :func:`~prmkit.lab.study.protocol.run_study`, runs every study the same way.
- :mod:`prmkit.lab.study.core`: the maths every study shares: best-of-N per problem from step
  probabilities, log-linear fits of accuracy against labels and the slope ratio with a bootstrap CI.
- :mod:`prmkit.lab.study.budget`, :mod:`~prmkit.lab.study.active`, :mod:`~prmkit.lab.study.synthetic`,
  :mod:`~prmkit.lab.study.autolabel`, :mod:`~prmkit.lab.study.pressure`: the studies (each a ``STUDY``); each writes ``RUN_DIR/study-<name>/`` (``summary.json``, ``report.html``,
  ``section.html``, ``figures/``), and the lab report shows every study section it finds.

Settings: :mod:`prmkit.lab.study.config` (fields ``budget``, ``active``, ``synthetic`` of ``LabConfig``).
"""
