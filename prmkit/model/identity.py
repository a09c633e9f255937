"""What a model *is*, for resumable commands: a digest of the files its outputs depend on.

A rerun that skips work already done must know that the work was done by the same model: a folder
retrained in place keeps its path but not its weights. :func:`weights_digest` hashes a local model
folder's weights, configuration and tokenizer (training checkpoints and partial files aside), so
``prmkit score`` and ``prmkit generate`` can key what they skip by it.

Hashing a multi-gigabyte folder on every rerun would cost seconds, so the digest of each file is
remembered in a small cache beside the folder's files (``.prmkit-digests.json``), keyed by the file's
size and modification time; a rewritten file has a new time and is hashed again.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp()); _ = (d / "config.json").write_text("{}")
>>> _ = (d / "model.safetensors").write_bytes(b"weights")
>>> a = weights_digest(d); len(a)
16
>>> _ = (d / "model.safetensors").write_bytes(b"other weights"); weights_digest(d) != a
True
>>> weights_digest(d / "missing") is None
True
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

CACHE_NAME = ".prmkit-digests.json"
_SKIP_DIRS = {"checkpoints", "restarts", "runs", "eval", "__pycache__", ".git"}
_WEIGHTS = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".model")
_TEXT = {"vocab.json", "merges.txt", "vocab.txt", "added_tokens.json", "special_tokens_map.json"}
"""Weights, configs and tokenizer files only: logs, metrics and evaluation outputs written into a run
folder say nothing about what the model computes, and must not make a resume refuse."""


def weights_digest(folder: str | os.PathLike) -> str | None:
    """A 16-hex digest of a local model folder's files, or None when ``folder`` is no folder (a hub
    name, a served model's name: nothing local to hash)."""
    root = Path(folder)
    if not root.is_dir():
        return None
    cache = _read_cache(root)
    total = hashlib.sha256()
    fresh = {}
    for path in _model_files(root):
        rel = path.relative_to(root).as_posix()
        stat = path.stat()
        stamp = [stat.st_size, stat.st_mtime_ns]
        entry = cache.get(rel)
        digest = entry[1] if entry and entry[0] == stamp else file_digest(path)
        fresh[rel] = [stamp, digest]
        total.update(f"{rel}\0{digest}\n".encode())
    if fresh != cache:
        _write_cache(root, fresh)
    return total.hexdigest()[:16]


def _model_files(root: Path) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            if not name.startswith(".") and _is_model_file(name):
                out.append(Path(dirpath, name))
    return out


def _is_model_file(name: str) -> bool:
    return (name.endswith(_WEIGHTS) or name in _TEXT or name.endswith("config.json")
            or (name.startswith("tokenizer") and name.endswith(".json")))


def file_digest(path: str | os.PathLike) -> str:
    """The sha256 of a file's bytes (hex), read a megabyte at a time."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _read_cache(root: Path) -> dict:
    try:
        value = json.loads((root / CACHE_NAME).read_text())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _write_cache(root: Path, cache: dict) -> None:
    try:  # a read-only folder (a shared model) is hashed every time, which is only slower
        tmp = root / f"{CACHE_NAME}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(cache))
        os.replace(tmp, root / CACHE_NAME)
    except OSError:
        pass


__all__ = ["file_digest", "weights_digest"]
