"""What prmkit's own tests and benchmarks are built from, kept out of the stages they exercise.

- :mod:`~prmkit.testing.toydata`: seeded toy arithmetic problems and step-labelled solutions, where
  checking a step needs a multi-digit addition (a tiny model really has to learn it);
- :mod:`~prmkit.testing.labelling`: simulated labellers over the labelling app's real HTTP API, a server
  runner and the checks the load benchmark makes.

Nothing in the library imports this package; a user's own tests may.
"""
