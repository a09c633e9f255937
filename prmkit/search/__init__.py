"""PRM-guided search at test time: best-of-N, weighted best-of-N, beam search, DVTS, lookahead and particle
filtering (:mod:`prmkit.search.strategies`), through any generator and any PRM (:mod:`prmkit.search.adapters`),
with a trace of every candidate and the compute each search spent (:mod:`prmkit.search.core`)."""

from prmkit.search.core import Candidate, Cost, Extension, SearchResult
from prmkit.search.strategies import STRATEGIES, SearchConfig, pick, search

__all__ = ["STRATEGIES", "Candidate", "Cost", "Extension", "SearchConfig", "SearchResult", "pick", "search"]
