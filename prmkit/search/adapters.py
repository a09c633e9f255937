"""The world behind a search: any ``prmkit generate`` backend as an :class:`~prmkit.search.core.Expander`, and a
``prmkit train`` PRM as a :class:`~prmkit.search.core.PrefixScorer`, in this process (:class:`PRMScorer`) or served
by ``prmkit serve --scorer`` (:class:`ServedScorer`, over ``/v1/score``).

One step is the step splitter's step: a backend continues a prefix as far as it samples, and the continuation is
cut after its first step (the tokens it generated past that are counted: they were paid for; give a backend the
step separator as ``--stop`` and it writes one step per call). A continuation whose first step is the answer
step, or whose sample ended after its first step on its own, has finished the solution.
"""

from __future__ import annotations

import numpy as np

from prmkit.search.core import Extension


class BackendExpander:
    """A :class:`~prmkit.generate.backend.Backend` as an expander. ``greedy`` asks are sampled once and the one
    continuation repeated (a backend samples at its own temperature; give it temperature 0 for true greedy
    steps)."""

    def __init__(self, backend, step_mode: str = "auto"):
        self.backend, self.step_mode = backend, step_mode
        self.stops = bool(getattr(getattr(backend, "cfg", None), "stop", None))

    def _steps(self, text: str) -> list[str]:
        from prmkit.steps import split_steps

        cfg = getattr(self.backend, "cfg", None)
        return split_steps(text, self.step_mode, separator=getattr(cfg, "step_separator", "") or "",
                           marker=getattr(cfg, "marker", "") or "")

    def rollout(self, requests):
        outs = self.backend.complete_many([(problem, list(prefix), k, 0) for problem, prefix, k in requests])
        return [[Extension(self._steps(s.text), True, s.tokens or 0) for s in samples] for samples in outs]

    def extend(self, requests):
        asks = [(problem, list(prefix), 1 if greedy else k, 0) for problem, prefix, k, greedy in requests]
        out = []
        for (_, _, k, greedy), samples in zip(requests, self.backend.complete_many(asks), strict=True):
            exts = []
            for s in samples:
                steps = self._steps(s.text)
                # the first step is the answer, or the sample ended after it: not cut short by max_new_tokens, nor
                # by a stop string (a backend given the step separator as --stop writes one step per call, so
                # there only the answer step ends a solution)
                ended = s.finish_reason == "stop" and not self.stops
                finished = steps[0].lstrip().startswith("# Answer") if steps else True  # nothing more: it ended
                finished = finished or (len(steps) == 1 and ended)
                exts.append(Extension(steps[:1], finished, s.tokens or 0))
            out.append(exts * k if greedy else exts)
        return out


class PRMScorer:
    """A trained PRM (a ``prmkit train`` folder, or a loaded :class:`~prmkit.score.Scorer`) as a prefix scorer:
    P(correct) of each step as ``prmkit score`` reads it, and the tokens each prefix took."""

    def __init__(self, model, device=None, batch_size: int = 32):
        from prmkit.score import Scorer

        self.scorer = model if isinstance(model, Scorer) else Scorer(model, device=device)
        self.batch_size = batch_size

    def score(self, items):
        from prmkit.model.labels import step_scores as class_scores

        encs = self.scorer.encodings([p.problem for p, _ in items], [list(s) for _, s in items])
        out = []
        for enc, rows in zip(encs, self.scorer.probabilities_of(encs, batch_size=self.batch_size)):
            p = np.array([class_scores(list(r), self.scorer.neutral)["p_correct"] for r in rows], dtype=float)
            out.append((p, len(enc.input_ids)))  # the tokens this prefix cost the PRM, from the one encoding
        return out


class ServedScorer:
    """A PRM served by ``prmkit serve --scorer`` as a prefix scorer, through its ``/v1/score`` endpoint (httpx):
    the same step P(correct) and token counts as :class:`PRMScorer` on the same folder, ``batch_size`` prefixes per
    request. ``url`` is the server's API root (``http://host:port/v1``)."""

    def __init__(self, url: str, batch_size: int = 32, timeout: float = 300.0):
        import httpx

        self.url, self.batch_size = url.rstrip("/"), batch_size
        self.client = httpx.Client(timeout=timeout)
        try:
            health = self._call("GET", "/health", root=True)
            self.identity = {k: health.get(k) for k in ("scorer_kind", "scorer_weights")}
            if self.identity["scorer_kind"] != "prm":
                raise ValueError(f"{self.url} serves no PRM to search with (its scorer: {self.identity['scorer_kind']}; "
                                 "start it with prmkit serve --scorer PRM_FOLDER)")
            if not self.identity["scorer_weights"]:  # nothing to key results by: a resume could mix two PRMs
                raise ValueError(f"{self.url} does not say which weights it serves (no scorer_weights at /health)")
        except Exception:
            self.client.close()
            raise

    def _call(self, method: str, path: str, body: dict | None = None, root: bool = False) -> dict:
        """``path`` under the API root (``root``: under the server's root, where ``/health`` is)."""
        import httpx

        where = (self.url.removesuffix("/v1") if root else self.url) + path
        try:
            reply = self.client.request(method, where, json=body)
        except httpx.HTTPError as e:
            raise ConnectionError(f"{method} {where}: {type(e).__name__}: {e} (is prmkit serve running there?)") from e
        if reply.status_code != 200:
            raise ConnectionError(f"{method} {where}: HTTP {reply.status_code}: {reply.text[:500]}")
        try:
            body = reply.json()
        except ValueError as e:
            raise ConnectionError(f"{method} {where}: not a JSON reply ({e}): {reply.text[:200]!r}") from e
        if not isinstance(body, dict):
            raise ConnectionError(f"{method} {where}: a JSON {type(body).__name__}, not an object")
        return body

    def score(self, items):
        out = []
        for s in range(0, len(items), self.batch_size):
            chunk = items[s:s + self.batch_size]
            body = {"solutions": [{"problem": p.problem, "steps": list(st)} for p, st in chunk]}
            replies = self._call("POST", "/score", body).get("solutions") or []
            if len(replies) != len(chunk):  # a short reply would put every later score on the wrong prefix
                raise ConnectionError(f"POST {self.url}/score: {len(replies)} solutions back for {len(chunk)} sent")
            for reply in replies:
                p = np.array([st["p_correct"] for st in reply["steps"] if "p_correct" in st], dtype=float)
                out.append((p, int(reply["tokens"])))
        return out

    def close(self) -> None:
        self.client.close()


__all__ = ["BackendExpander", "PRMScorer", "ServedScorer"]
