"""Where work runs: the one reading of a ``device`` setting (``auto``, ``cpu``, ``cuda``) that training,
scoring, generation, serving and the lab share.

A module of its own, below every stage, so that a generator or a server can ask where to run without
importing the training loop.
"""

from __future__ import annotations

import torch


def uses_cuda(device: str) -> bool:
    """Whether a ``device`` setting (auto, cpu, cuda) runs on CUDA here; cuda without a GPU is an error.

    >>> uses_cuda("cpu")
    False
    """
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device cuda asked, but torch sees no CUDA GPU")
    return device == "cuda" or (device == "auto" and torch.cuda.is_available())


def torch_device(device: str) -> str:
    """The torch device of a ``device`` setting (auto, cpu, cuda): ``"cuda"`` or ``"cpu"``.

    >>> torch_device("cpu")
    'cpu'
    """
    return "cuda" if uses_cuda(device) else "cpu"


__all__ = ["torch_device", "uses_cuda"]
