"""Automatic step labels: Monte-Carlo rollouts, OmegaPRM, an LLM judge, consensus."""
