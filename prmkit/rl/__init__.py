"""Reward models as RL rewards: a prmkit PRM or ORM scoring a policy's completions during training.

- :mod:`prmkit.rl.credit`: credit rules (``min``, ``product``, ``sum``, ``last``) turning per-step scores
  into one reward per completion or one per step, pure functions.
- :mod:`prmkit.rl.reward`: :class:`PRMReward`, a callable with TRL's reward-function signature
  (``GRPOTrainer(reward_funcs=[PRMReward(model_dir)])``), with per-step rewards for other trainers.
- :mod:`prmkit.rl.grpo`: a causal LM trained against those rewards by TRL's ``GRPOTrainer``, with
  prmkit's own sampler for rollouts, a KL penalty to the initial policy and an evaluation hook (what
  ``prmkit lab study pressure`` runs).

Importing ``prmkit.rl`` imports no RL library (``prmkit.rl.grpo`` imports TRL when it trains); ``docs/rl.md``
shows TRL, verl and OpenRLHF usage.
"""

from prmkit.rl.credit import CREDIT_RULES, solution_reward, step_rewards
from prmkit.rl.reward import PRMReward, step_char_ends, step_token_ends

__all__ = ["CREDIT_RULES", "PRMReward", "solution_reward", "step_char_ends", "step_rewards", "step_token_ends"]
