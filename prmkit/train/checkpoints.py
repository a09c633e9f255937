"""Checkpoints of a training run: ``OUT/checkpoints/step-N`` (the whole state, for exact resume; a killed
save leaves no ``COMPLETE`` file, so it is never resumed from) and ``OUT/checkpoints/best`` (early
stopping's best evaluated state)."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

from prmkit.train.early_stop import EarlyStop


class _TiedWeightsNote(logging.Filter):
    """accelerate warns at every checkpoint that tied weights (an LM head sharing the embeddings) are saved
    once; loading ties them again (resume is tested exact), so the warning only hides real messages."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Removed shared tensor" not in record.getMessage()


logging.getLogger("accelerate.utils.other").addFilter(_TiedWeightsNote())


def checkpoint_dir(out: str | Path, step: int) -> Path:
    return Path(out) / "checkpoints" / f"step-{step:07d}"


def latest_checkpoint(out: str | Path) -> Path | None:
    """The newest complete checkpoint under ``out`` (a killed save leaves no ``COMPLETE`` file)."""
    found = sorted(p for p in (Path(out) / "checkpoints").glob("step-*") if (p / "COMPLETE").exists())
    return found[-1] if found else None


def best_dir(out: str | Path) -> Path:
    """Where early stopping keeps the best evaluated state (not a resume point: resuming reads ``step-*``)."""
    return Path(out) / "checkpoints" / "best"


def save_checkpoint(run, step: int, folder: Path | None = None) -> None:
    """The run's whole state (model, optimiser, scheduler, RNGs; and the early-stopping state) at ``step``."""
    acc = run.accelerator
    folder = folder or checkpoint_dir(run.cfg.out, step)
    acc.save_state(str(folder))
    acc.wait_for_everyone()
    if acc.is_main_process:
        state = {"step": step, "config": run.cfg.to_dict()}
        if run.stopper is not None:
            state["early_stop"] = run.stopper.to_dict()
        (folder / "trainer_state.json").write_text(json.dumps(state, indent=2))
        (folder / "COMPLETE").write_text("")
        done = sorted(p for p in folder.parent.glob("step-*") if (p / "COMPLETE").exists())
        for old in done[: max(0, len(done) - run.cfg.keep_checkpoints)]:
            shutil.rmtree(old)
    acc.wait_for_everyone()


def resume(run) -> int:
    """Load the latest complete checkpoint when resuming (and the early-stopping state it holds); its step."""
    if not run.cfg.resume:
        return 0
    folder = latest_checkpoint(run.cfg.out)
    if folder is None:
        return 0
    run.accelerator.load_state(str(folder))
    state = json.loads((folder / "trainer_state.json").read_text())
    step = state["step"]
    if run.stopper is not None and "early_stop" in state:
        run.stopper = EarlyStop.from_dict(state["early_stop"])
    run.accelerator.print(f"resumed from {folder} (step {step})")
    return step


__all__ = ["best_dir", "checkpoint_dir", "latest_checkpoint", "resume", "save_checkpoint"]
