"""The numeric stack a run's numbers depend on, recorded in its ``summary.json``.

The same reward-model recipe on another torch or transformers can land on other numbers (other kernels,
other initialisation order), so each summary says what it ran on, and the repository's
``constraints.txt`` pins what the published numbers were measured with.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

PACKAGES = ("torch", "transformers", "tokenizers", "accelerate", "peft", "safetensors", "numpy")
"""What the lab's numbers depend on (training, features, scoring, the estimators)."""
GRADE_PACKAGES = ("math-verify", "latex2sympy2_extended", "sympy")
"""What the grading benchmark's numbers also depend on (``bench/bench_grade.py``: the symbolic step)."""
READ_PACKAGES = ("orjson",)
"""What the pool-reading benchmark's numbers also depend on (``bench/bench_bon_read.py``: the JSON parser)."""
RL_PACKAGES = ("trl",)
"""What the numbers of a study that trains a policy also depend on (``prmkit lab study pressure``: TRL's GRPO)."""


def numeric_stack(extra: tuple[str, ...] = ()) -> dict[str, str]:
    """Installed version of each of :data:`PACKAGES` and ``extra``, without a local tag (``2.13.0+cpu`` -> ``2.13.0``)."""
    out = {}
    for name in (*PACKAGES, *extra):
        try:
            out[name] = metadata.version(name).split("+")[0]
        except metadata.PackageNotFoundError:
            out[name] = "absent"
    return out


def source_commit() -> dict[str, str | bool] | None:
    """The commit the code ran from, and whether the checkout had uncommitted changes (a run's numbers are a
    claim about that code); None outside a git checkout (an installed package).

    >>> info = source_commit(); info is None or (len(info["commit"]) == 40 and isinstance(info["dirty"], bool))
    True
    """
    import subprocess

    root = Path(__file__).resolve().parents[1]  # prmkit/stack.py: the checkout holds prmkit/
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": bool(status.strip())}


def run_record(extra: tuple[str, ...] = ()) -> dict:
    """What every run's ``summary.json`` records of where its numbers came from: the numeric stack and the
    source commit (the command and the seeds are the run's own)."""
    source = source_commit()
    # the commit at the top level too, where a reader of the summary looks for it (None outside a checkout)
    return {"stack": numeric_stack(extra), "source": source, "commit": (source or {}).get("commit")}


def read_pins(path: str | Path) -> dict[str, str]:
    """``name==version`` lines of a pip constraints file (comments and blank lines skipped).

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
    ...     _ = f.write("# pins\\ntorch==2.13.0\\n\\nnumpy==2.4.6  # why\\n")
    >>> read_pins(f.name)
    {'torch': '2.13.0', 'numpy': '2.4.6'}
    >>> os.unlink(f.name)
    """
    pins = {}
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        line = line.split("#")[0].strip()
        if not line:
            continue
        if "==" not in line:
            raise ValueError(f"{path}:{n}: expected name==version, got {line!r}")
        name, version = (p.strip() for p in line.split("==", 1))
        pins[name] = version
    return pins


__all__ = ["PACKAGES", "numeric_stack", "read_pins", "run_record", "source_commit"]
