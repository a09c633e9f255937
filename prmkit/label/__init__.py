"""The step-labelling app: people rate each step of model-written solutions, PRM800K style.

A small library under a web app (``prmkit label serve``):

- :mod:`~prmkit.label.models`, :mod:`~prmkit.label.migrations`, :mod:`~prmkit.label.db`: one set of
  SQLAlchemy models for SQLite (WAL) and PostgreSQL, and versioned migrations;
- :mod:`~prmkit.label.auth`: accounts (admin, labeller), scrypt passwords, session cookies and bearer tokens;
- :mod:`~prmkit.label.queue`: selection strategies (``Strategy = Callable[[list[Solution], int, Random],
  list[Solution]]``), registered by name; ``random`` now, PRM-driven ones later;
- :mod:`~prmkit.label.projects`: projects, generations, pushing candidates, QC and screening sets;
- :mod:`~prmkit.label.flow`: the labelling flows (phase 1 alternatives, phase 2 stop at the first Bad step);
- :mod:`~prmkit.label.agreement`: Cohen's and Fleiss' kappa as pure functions;
- :mod:`~prmkit.label.stats`, :mod:`~prmkit.label.export`: the admin figures and the prmkit records;
- :mod:`~prmkit.label.app`: the FastAPI app (pages and the JSON API); :mod:`~prmkit.label.client`: a
  client for that API (the simulated labellers over it, for tests and benchmarks, are
  :mod:`prmkit.testing.labelling`).

This package's ``__init__`` imports nothing, so ``import prmkit.label.agreement`` works without the
``serve`` extra. See ``docs/labelling.md``.
"""
