"""Credit rules: a solution's per-step PRM scores ``p_1..p_T`` (P(step correct)) as RL rewards, pure functions.

A policy-gradient trainer needs either one reward per completion (GRPO, RLOO: :func:`solution_reward`)
or one per step (PPO-style trainers with token-level rewards: :func:`step_rewards`). Both forms agree:
the step rewards of a rule sum to its solution reward, so a trainer that sums them sees the same return.

- ``min``: the weakest step (PURE's min-form credit). Its dense form makes the return-to-go from step
  ``t`` the minimum of the scores from ``t`` on: a step is credited with what the rest of the solution
  can still be worth, and adding steps can never raise the return.
- ``product``: P(all steps correct) when the step scores are independent; never above ``min``.
- ``sum``: summed credit, ``sum_t p_t``, in ``[0, T]``. It pays for every extra step that looks fine,
  so a policy learns to write more, shorter steps: the reward hack PURE reports. Here for comparison.
- ``last``: the score of the final step alone (what a Monte-Carlo-trained PRM estimates there).

An empty solution (no steps) earns 0.0 under every rule: an empty completion has done nothing, and
rewarding it with a neutral value would make silence a safe choice for the policy.

>>> p = [0.9, 0.5, 0.8]
>>> [round(solution_reward(p, rule), 3) for rule in CREDIT_RULES]
[0.5, 0.36, 2.2, 0.8]
>>> [round(r, 3) for r in step_rewards(p, "min")]
[0.0, -0.3, 0.8]
>>> [round(r, 3) for r in step_rewards(p, "product")]
[0.9, -0.45, -0.09]
>>> solution_reward([], "min"), step_rewards([], "sum")
(0.0, [])
"""

from __future__ import annotations

import numpy as np

CREDIT_RULES = ("min", "product", "sum", "last")
"""Names accepted by :func:`solution_reward` and :func:`step_rewards`."""


def _scores(step_scores, rule: str) -> np.ndarray:
    if rule not in CREDIT_RULES:
        raise ValueError(f"unknown credit rule {rule!r} (expected one of {', '.join(CREDIT_RULES)})")
    p = np.asarray(step_scores, dtype=float).reshape(-1)
    # Out-of-range scores would break every bound below (and a NaN would silently spread through a batch).
    if p.size and not ((p >= 0) & (p <= 1)).all():
        raise ValueError(f"step scores must be probabilities in [0, 1], got {p.tolist()}")
    return p


def solution_reward(step_scores, rule: str) -> float:
    """One reward for a solution from its step scores under credit ``rule`` (one of :data:`CREDIT_RULES`).

    >>> solution_reward([0.9, 0.5, 0.8], "min"), solution_reward([0.9, 0.5, 0.8], "last")
    (0.5, 0.8)
    >>> solution_reward([0.5], "max")
    Traceback (most recent call last):
    ...
    ValueError: unknown credit rule 'max' (expected one of min, product, sum, last)
    """
    p = _scores(step_scores, rule)
    if p.size == 0:
        return 0.0
    if rule == "min":
        return float(p.min())
    if rule == "product":
        return float(np.prod(p))
    if rule == "sum":
        return float(p.sum())
    return float(p[-1])


def step_rewards(step_scores, rule: str) -> list[float]:
    """Dense rewards, one per step, that sum to :func:`solution_reward` under the same ``rule``.

    - ``last``: everything on the final step.
    - ``sum``: ``p_t`` on step ``t``.
    - ``min``: ``r_t = m_t - m_{t+1}`` with ``m_t = min_{k>=t} p_k`` and ``m_{T+1} = 0``, so the return-to-go
      from step ``t`` (``sum_{k>=t} r_k``) is ``m_t``.
    - ``product``: ``r_1 = P_1``, ``r_t = P_t - P_{t-1}`` with ``P_t = prod_{k<=t} p_k``, so the return from
      the start up to step ``t`` is ``P_t``.

    >>> step_rewards([0.9, 0.5, 0.8], "last"), step_rewards([0.25, 0.5], "sum")
    ([0.0, 0.0, 0.8], [0.25, 0.5])
    >>> return_to_go = np.cumsum(step_rewards([0.4, 0.9, 0.7], "min")[::-1])[::-1]
    >>> return_to_go.round(3).tolist()   # the suffix minima of the scores
    [0.4, 0.7, 0.7]
    """
    p = _scores(step_scores, rule)
    if p.size == 0:
        return []
    if rule == "sum":
        return p.tolist()
    if rule == "last":
        return [0.0] * (p.size - 1) + [float(p[-1])]
    if rule == "min":
        suffix_min = np.minimum.accumulate(p[::-1])[::-1]
        return (suffix_min - np.append(suffix_min[1:], 0.0)).tolist()
    running = np.cumprod(p)
    return np.diff(running, prepend=0.0).tolist()


__all__ = ["CREDIT_RULES", "solution_reward", "step_rewards"]
