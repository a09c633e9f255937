"""Metrics during training: step-level AUROC / accuracy / ECE of held-out predictions, and where they go.

The metrics reuse :mod:`prmkit.evaluate.steps` (the same AUROC and calibration as ``prmkit eval``).
A step's binary label is whether its target's P(correct) is at least 0.5, with a neutral class counted
as the scoring neutral policy says.

Logging goes through one object whatever the process: :class:`MetricsLogger` on the main process
(``metrics.jsonl``, and TensorBoard when installed), :class:`NullLogger` elsewhere, so the loop never
branches on whether logging is on.

>>> import numpy as np
>>> m = step_metrics(np.array([0.9, 0.8, 0.2, 0.6]), np.array([1, 1, 0, 0]))
>>> m["step_auroc"], m["step_accuracy"]
(1.0, 0.75)
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from prmkit.evaluate.steps import auroc, reliability


def step_metrics(p_correct: np.ndarray, labels: np.ndarray, bins: int = 10) -> dict:
    """AUROC, accuracy at 0.5 and expected calibration error of step P(correct) against 0/1 labels."""
    if p_correct.size == 0:
        return {"step_auroc": float("nan"), "step_accuracy": float("nan"), "step_ece": float("nan"), "eval_steps": 0}
    return {"step_auroc": auroc(p_correct, labels),
            "step_accuracy": float(np.mean((p_correct >= 0.5) == (labels == 1))),
            "step_ece": reliability(np.clip(p_correct, 0.0, 1.0), labels, bins)["ece"],
            "eval_steps": int(p_correct.size)}


def read_losses(folder: str | Path) -> list[float]:
    """The training losses a run logged (``metrics.jsonl`` of its output folder), in step order."""
    lines = (Path(folder) / "metrics.jsonl").read_text().splitlines()
    return [row["loss"] for row in map(json.loads, lines) if "loss" in row]


class NullLogger:
    """Accepts everything, writes nothing (non-main processes)."""

    def log(self, step: int, values: dict) -> None:
        pass

    def close(self) -> None:
        pass


class MetricsLogger:
    """Appends ``{"step": ..., "time": ..., **values}`` lines to ``metrics.jsonl``; mirrors scalars to
    TensorBoard when ``tensorboard`` is set and the package is installed.

    On resume, lines from steps after the resumed step (written by the killed run) are dropped first, so
    the file reads as one uninterrupted run.
    """

    def __init__(self, folder: str | Path, tensorboard: bool = True, resume_step: int = 0):
        self.path = Path(folder) / "metrics.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._trim(resume_step)
        self.file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115  (open while logging)
        self.start = time.time()
        self.tb = _tensorboard_writer(Path(folder) / "tensorboard", resume_step) if tensorboard else None

    def _trim(self, resume_step: int) -> None:
        if not self.path.exists():
            return
        keep = [line for line in self.path.read_text().splitlines()
                if line.strip() and _complete_json(line) and json.loads(line).get("step", 0) <= resume_step]
        self.path.write_text("".join(line + "\n" for line in keep) if resume_step else "")

    def log(self, step: int, values: dict) -> None:
        record = {"step": step, "time": round(time.time() - self.start, 3), **values}
        self.file.write(json.dumps(record) + "\n")
        self.file.flush()
        if self.tb is not None:
            for key, value in values.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    self.tb.add_scalar(key, value, step)

    def close(self) -> None:
        self.file.close()
        if self.tb is not None:
            self.tb.close()


def _complete_json(line: str) -> bool:
    try:
        json.loads(line)
    except json.JSONDecodeError:
        return False
    return True


def _tensorboard_writer(folder: Path, resume_step: int = 0):
    """A SummaryWriter, or None without the tensorboard package. On resume it purges the killed run's
    events after ``resume_step``, as :meth:`MetricsLogger._trim` drops its lines."""
    try:
        import tensorboard  # noqa: F401  (torch's SummaryWriter needs it)
    except ImportError:
        return None
    from torch.utils.tensorboard import SummaryWriter

    return SummaryWriter(str(folder), purge_step=resume_step + 1 if resume_step else None)
