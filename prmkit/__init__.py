"""prmkit: process supervision toolkit.

Step-labelled data (:mod:`prmkit.schema`, :mod:`prmkit.io`, :mod:`prmkit.convert`), answer
grading (:mod:`prmkit.grade`), and evaluation of reward models (:mod:`prmkit.evaluate`).
"""

__version__ = "0.1.0"
