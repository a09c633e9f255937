"""Reading and writing records: JSONL (``.gz`` transparently), streamed, with errors that say where.

Reading yields one record at a time, so memory stays flat on files of any size. A bad record raises
:class:`RecordError` naming the file, the line and the field; with ``rejects=...`` it is written to a
side file instead and reading goes on. Writing goes to a temporary file in the same folder that is
renamed into place only when complete, so an interrupted run never leaves half a file behind, and an
output path equal to an input path is refused.

>>> import tempfile, os
>>> from prmkit.schema import Solution
>>> path = os.path.join(tempfile.mkdtemp(), "x.jsonl.gz")
>>> write_records(path, [Solution.from_steps("2+2?", ["4"], ratings=[1])])
1
>>> [s.ratings for s in read_solutions(path)]
[[1]]
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, TypeVar

from prmkit.schema import Problem, SchemaError, Solution

T = TypeVar("T")


class RecordError(ValueError):
    """A record that cannot be read: where it is (file, line) and what is wrong (field, message)."""

    def __init__(self, path: str | os.PathLike, line: int | None, field: str | None, message: str):
        self.path, self.line, self.field, self.message = str(path), line, field, message
        where = f"{self.path}:{line}" if line is not None else self.path
        what = f" field '{field}':" if field else ""
        super().__init__(f"{where}:{what} {message}")


@dataclass
class Raw:
    """One JSON value as read from a file, with the line it starts on."""

    line: int
    value: Any
    text: str


def open_text(path: str | os.PathLike, mode: str = "rt") -> TextIO:
    """Open a text file, through gzip when the name ends in ``.gz``."""
    if str(path).endswith(".gz"):
        return gzip.open(path, mode, encoding="utf-8")  # type: ignore[return-value]
    return open(path, mode, encoding="utf-8")


def iter_json(path: str | os.PathLike, rejects: RejectWriter | None = None) -> Iterator[Raw]:
    """Yield every JSON value of a file: JSON Lines, one JSON array, or concatenated JSON objects.

    A malformed line of a JSON Lines file raises :class:`RecordError`, or, with ``rejects``, is
    written there and reading goes on (in an array or concatenated objects, where one bad character
    loses the framing of everything after it, a malformed value always stops the read).

    JSON Lines are streamed line by line. A file whose first character is ``[`` is read as one array;
    a file of pretty-printed objects one after another (as some PRM800K examples are; its first line
    is a lone ``{``) is decoded object by object from a sliding buffer.
    """
    kind = _sniff(path)
    with open_text(path) as f:
        if kind == "lines":
            yield from _iter_lines(f, path, rejects)
        else:
            yield from (_iter_array if kind == "array" else _iter_concatenated)(f, path)


def _sniff(path: str | os.PathLike) -> str:
    with open_text(path) as f:
        for line in f:
            if line.strip():
                first = line.strip()
                return "array" if first.startswith("[") else "concatenated" if first == "{" else "lines"
    return "lines"


def _iter_lines(f: TextIO, path, rejects: RejectWriter | None) -> Iterator[Raw]:
    for number, line in enumerate(f, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as e:
            error = RecordError(path, number, None, f"malformed JSON ({e.msg} at column {e.colno})")
            _reject(rejects, error, Raw(number, line.rstrip("\n"), line.rstrip("\n")))
            continue
        yield Raw(number, value, line.rstrip("\n"))


def _iter_array(f: TextIO, path) -> Iterator[Raw]:
    text = f.read()
    try:
        values = json.loads(text)
    except json.JSONDecodeError as e:
        raise RecordError(path, e.lineno, None, f"malformed JSON ({e.msg} at column {e.colno})") from None
    for i, value in enumerate(values):
        # The line of an array element is not kept by json; the element's position stands in.
        yield Raw(i + 1, value, json.dumps(value, ensure_ascii=False))


def _iter_concatenated(f: TextIO, path, chunk: int = 1 << 16) -> Iterator[Raw]:
    decoder = json.JSONDecoder()
    buf, line, eof = "", 1, False
    while True:
        stripped = buf.lstrip()
        line += buf[: len(buf) - len(stripped)].count("\n")
        buf = stripped
        try:
            if not buf:
                raise json.JSONDecodeError("end of buffer", buf, 0)
            value, end = decoder.raw_decode(buf)
        except json.JSONDecodeError as e:
            if eof:
                if not buf:
                    return
                raise RecordError(path, line + e.lineno - 1, None, f"malformed JSON ({e.msg})") from None
            more = f.read(chunk)
            eof, buf = not more, buf + more
            continue
        yield Raw(line, value, buf[:end])
        line += buf[:end].count("\n")
        buf = buf[end:]


def read_records(path: str | os.PathLike, parse: Callable[[Any, str], T], *,
                 rejects: RejectWriter | None = None) -> Iterator[T]:
    """Parse every JSON value of ``path`` with ``parse(value, field_path)``.

    A :class:`SchemaError` (or a :class:`RecordError` from a converter) becomes a
    :class:`RecordError` naming file and line, or goes to ``rejects`` when one is given.
    """
    for raw in iter_json(path, rejects):
        try:
            yield parse(raw.value, "")
        except (SchemaError, RecordError) as e:
            _reject(rejects, RecordError(path, raw.line, e.field, e.message), raw)


def _reject(rejects: RejectWriter | None, error: RecordError, raw: Raw) -> None:
    if rejects is None:
        raise error
    rejects.add(error, raw)


def read_solutions(path: str | os.PathLike, rejects: RejectWriter | None = None) -> Iterator[Solution]:
    """Stream the :class:`Solution` records of a prmkit file."""
    return read_records(path, Solution.from_dict, rejects=rejects)


def read_problems(path: str | os.PathLike, rejects: RejectWriter | None = None) -> Iterator[Problem]:
    """Stream the :class:`Problem` records of a prmkit problem file."""
    return read_records(path, lambda d, p: Problem.from_dict(d, p or "record"), rejects=rejects)


# --- writing --------------------------------------------------------------------------------------

def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    a, b = Path(a), Path(b)
    if a.exists() and b.exists():
        return a.samefile(b)
    return a.resolve() == b.resolve()


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike, inputs: Iterable[str | os.PathLike] = ()) -> Iterator[TextIO]:
    """Write a text file (gzip for ``.gz``) through a temporary file renamed into place on success.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "out.txt")
    >>> with atomic_output(p) as f:
    ...     _ = f.write("hello")
    >>> open(p).read()
    'hello'
    """
    for inp in inputs:
        if same_file(path, inp):
            raise ValueError(f"output {path} is the same file as input {inp}; refusing to overwrite the input")
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    os.close(fd)
    try:
        gz = str(path).endswith(".gz")
        with (_reproducible_gzip(tmp) if gz else open(tmp, "w", encoding="utf-8")) as f:
            yield f
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes files owner-only; outputs get normal permissions
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


@contextlib.contextmanager
def _reproducible_gzip(path: str) -> Iterator[TextIO]:
    """gzip text whose bytes depend on the content only (no name or time in the header): a rerun that
    writes the same records writes the same file."""
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz, \
            io.TextIOWrapper(gz, encoding="utf-8") as f:
        yield f


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def output_keys(path: str | os.PathLike, key: Callable[[dict], Any]) -> set:
    """``key`` of every record of a finished output (written whole and renamed into place; gzip read
    transparently); nothing when there is no such file. :func:`finished_lines` is its partial-file twin."""
    if not os.path.exists(path):
        return set()
    with open_text(path) as f:
        return {key(json.loads(line)) for line in f if line.strip()}


def finished_lines(path: str | os.PathLike, key: Callable[[dict], Any]) -> set:
    """``key`` of every complete record of an append-only partial file (plain text, one JSON object per
    line); a torn last line, left by a killed writer, is cut off the file so that appending goes on cleanly.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "part.jsonl")
    >>> _ = open(p, "w").write('{"id": "a"}\\n{"id": "b"}\\n{"id": "c"')
    >>> sorted(finished_lines(p, lambda r: r["id"])), open(p).read()
    (['a', 'b'], '{"id": "a"}\\n{"id": "b"}\\n')
    """
    keys: set = set()
    if not os.path.exists(path):
        return keys
    good = 0
    with open(path, "rb") as f:
        for raw in f:
            if not raw.endswith(b"\n"):
                break
            keys.add(key(json.loads(raw)))
            good += len(raw)
    os.truncate(path, good)
    return keys


def merge_partial(out: str | os.PathLike, part: str | os.PathLike, key: Callable[[dict], Any],
                  inputs: Iterable[str | os.PathLike] = ()) -> None:
    """``out`` = its records, then those of the partial file ``part`` it does not hold yet (by ``key``: a run
    killed between the two renames left some), in order; then ``part`` goes. Writers sharing ``out`` (shards)
    take turns under a lock file beside it."""
    import fcntl

    out, part = Path(out), Path(part)
    with open(out.with_name(f".{out.name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        previous = output_keys(out, key)
        with atomic_output(out, inputs) as w:
            if previous:
                with open_text(out) as old:
                    for line in old:
                        w.write(line)
            with open(part, encoding="utf-8") as f:
                for line in f:
                    if line.strip() and key(json.loads(line)) not in previous:
                        w.write(line)
        part.unlink()


def dumps(record: Any) -> str:
    """One record as one line of JSON (dataclasses through their ``to_dict``)."""
    value = record.to_dict() if hasattr(record, "to_dict") else record
    return json.dumps(value, ensure_ascii=False)


def write_records(path: str | os.PathLike, records: Iterable[Any], inputs: Iterable[str | os.PathLike] = ()) -> int:
    """Write records as JSON Lines, atomically; return how many were written."""
    count = 0
    with atomic_output(path, inputs) as f:
        for record in records:
            f.write(dumps(record) + "\n")
            count += 1
    return count


def write_json(path: str | os.PathLike, value: Any, inputs: Iterable[str | os.PathLike] = ()) -> None:
    """Write one pretty-printed JSON document, atomically."""
    with atomic_output(path, inputs) as f:
        json.dump(value, f, ensure_ascii=False, indent=2)
        f.write("\n")


def rejects_path(output: str | os.PathLike) -> Path:
    """Where ``--skip-invalid`` puts the rejects of ``output``: ``OUT.rejects.jsonl`` beside it."""
    out = Path(output)
    name = out.name.removesuffix(".gz")
    stem = name[: -len(".jsonl")] if name.endswith(".jsonl") else name.rsplit(".", 1)[0]
    return out.with_name(f"{stem}.rejects.jsonl")


class RejectWriter:
    """Collects rejected records with their error, written as JSONL when closed (only if any)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.errors: list[dict] = []

    def add(self, error: RecordError, raw: Raw) -> None:
        self.errors.append({"file": error.path, "line": error.line, "field": error.field,
                            "error": error.message, "record": raw.value})

    @property
    def count(self) -> int:
        return len(self.errors)

    def close(self) -> None:
        if self.errors:
            write_records(self.path, self.errors)

    def __enter__(self) -> RejectWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
