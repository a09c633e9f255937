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
import itertools
import json
import os
import re
import tempfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, TypeVar

import orjson

from prmkit.schema import Problem, SchemaError, Solution

T = TypeVar("T")


class RecordError(ValueError):
    """A record that cannot be read: where it is (file, line) and what is wrong (field, message)."""

    def __init__(self, path: str | os.PathLike, line: int | None, field: str | None, message: str):
        self.path, self.line, self.field, self.message = str(path), line, field, message
        where = f"{self.path}:{line}" if line is not None else self.path
        what = f" field '{field}':" if field else ""
        super().__init__(f"{where}:{what} {message}")


class NoRecords(ValueError):
    """A file that holds no record. Commands refuse it rather than write an empty output and succeed (where an
    empty output is wanted, their ``--allow-empty`` says so); ``hint`` is the way out, when there is one."""

    def __init__(self, path: str | os.PathLike, hint: str = ""):
        self.path = str(path)
        super().__init__(f"no records in {path}" + (f" ({hint})" if hint else ""))


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


READ_BUFFER = 1 << 22
"""Bytes read at a time: a released pool's lines run to megabytes (one problem's 1,860 solutions), and reading
them through the default 8 KiB buffer took twice as long (measured on 753 MiB of them)."""


def open_binary(path: str | os.PathLike):
    """Open a file for reading bytes, through gzip when the name ends in ``.gz``."""
    return gzip.open(path, "rb") if str(path).endswith(".gz") else open(path, "rb", buffering=READ_BUFFER)


def text_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of every line of a file (gzip for ``.gz``; a UTF-8 byte-order mark dropped).

    Each line is decoded on its own, so that a file that is not text, or a gzip file that is cut short or
    corrupt, raises :class:`RecordError` naming the file and the line reached, not a codec's or zlib's
    error with no file in it.
    """
    number = 0
    try:
        with open_binary(path) as f:
            for number, raw in enumerate(f, start=1):
                yield number, _decode(raw, path, number)
    except EOFError:  # gzip's "Compressed file ended before the end-of-stream marker was reached"
        raise RecordError(path, number + 1, None, "the gzip data ends here, before its end-of-stream marker: the "
                                                  "file was cut short (an interrupted download or copy?)") from None
    except gzip.BadGzipFile:
        raise RecordError(path, None, None, "not a gzip file, though its name ends in .gz") from None
    except zlib.error as e:
        raise RecordError(path, number + 1, None, f"corrupt gzip data ({e})") from None


def _decode(raw: bytes, path, number: int) -> str:
    if number == 1 and raw.startswith(b"\x1f\x8b"):  # gzip's magic number
        raise RecordError(path, None, None, "gzip data, though the name does not end in .gz: add .gz to its name")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RecordError(path, number, None, f"not UTF-8 text (byte 0x{raw[e.start]:02x} at byte {e.start + 1} "
                                              "of the line): is it a binary file?") from None
    return text.removeprefix("\ufeff") if number == 1 else text


_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
"""Characters that no JSON text holds outside a string (where they must be escaped): binary data."""


def iter_json(path: str | os.PathLike, rejects: RejectWriter | None = None) -> Iterator[Raw]:
    """Yield every JSON value of a file: JSON Lines, one JSON array, or concatenated JSON objects.

    A malformed line of a JSON Lines file raises :class:`RecordError`, or, with ``rejects``, is
    written there and reading goes on (in an array or concatenated objects, where one bad character
    loses the framing of everything after it, a malformed value always stops the read).

    JSON Lines are streamed line by line. A file whose first character is ``[`` is read as one array;
    a file of pretty-printed objects one after another (as some PRM800K examples are; its first line
    is a lone ``{``) is decoded object by object from a sliding buffer.
    """
    lines = text_lines(path)
    head = []  # the lines up to the first one with text, which tells the layout
    for item in lines:
        head.append(item)
        if item[1].strip():
            break
    first = head[-1][1].strip() if head else ""
    lines = itertools.chain(head, lines)
    if first.startswith("["):
        yield from _iter_array(lines, path)
    elif first == "{":
        yield from _iter_concatenated(lines, path)
    else:
        yield from _iter_lines(lines, path, rejects)


def malformed(e: json.JSONDecodeError, column: int | None = None, last_line_open: bool = False) -> str:
    """What a :class:`json.JSONDecodeError` says, for people. Some of Python's messages end in "at" (their
    position follows): those take the column directly, so it is said once.

    >>> malformed(json.JSONDecodeError("Unterminated string starting at", '{"a": "b', 6), 7)
    'malformed JSON (Unterminated string starting at column 7)'
    >>> malformed(json.JSONDecodeError("Expecting value", '{"a": ', 6), 7, last_line_open=True)
    "malformed JSON (Expecting value at column 7); the file's last line has no line end: was it cut short?"
    """
    if column is None:
        what = e.msg.removesuffix(" at")
    else:
        what = f"{e.msg} column {column}" if e.msg.endswith(" at") else f"{e.msg} at column {column}"
    cut = "; the file's last line has no line end: was it cut short?" if last_line_open else ""
    return f"malformed JSON ({what}){cut}"


def _not_json(e: json.JSONDecodeError, line: str) -> str:
    """Why a line of a JSON Lines file is not JSON: binary data, or malformed JSON (said where)."""
    control = _CONTROL.search(line)
    if control:
        return (f"not JSON text: byte 0x{ord(control.group()):02x} at column {control.start() + 1}, which JSON holds "
                "only escaped: is it a binary file?")
    return malformed(e, e.colno, last_line_open=not line.endswith("\n"))


def _iter_lines(lines: Iterable[tuple[int, str]], path, rejects: RejectWriter | None) -> Iterator[Raw]:
    for number, line in lines:
        if not line.strip():
            continue
        text = line.rstrip("\r\n")
        try:
            value = loads(line)
        except json.JSONDecodeError as e:
            error = RecordError(path, number, None, _not_json(e, line))
            _reject(rejects, error, Raw(number, text, text))
            continue
        yield Raw(number, value, text)


def loads(text: str | bytes) -> Any:
    """One JSON value, as :func:`json.loads` reads it, several times as fast: orjson first, and the standard
    library where orjson refuses what it accepts (``NaN``, ``1e400``, lone surrogates) or reads otherwise
    (an integer past 64 bits, which orjson makes a float), so that what is read and the errors raised
    (``json.JSONDecodeError``, with its message) are the same.

    >>> loads('{"a": [1, 2.5, null]}'), loads('[NaN]'), loads('[-18446744073709551616]'), loads(b'[1e400]')
    ({'a': [1, 2.5, None]}, [nan], [-18446744073709551616], [inf])
    """
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    shape = b" " + raw.translate(_NUMBER_SHAPE)
    if _LONG_INTEGER in shape:
        # orjson reads an integer past 64 bits as a float, silently: the standard library keeps it whole
        return json.loads(text)
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(text)


_NUMBER_SHAPE = bytes(48 if 48 <= b <= 57 else 46 if b in b".eE" else 32 for b in range(256))
"""Digits as ``0``, a decimal point or exponent mark as ``.``, anything else as a space: 19 digits after a
space are an integer that may not fit 64 bits (or digits in a string, read the slow way for nothing); after
a ``.`` they are a fraction's or an exponent's, which orjson reads as json does."""
_LONG_INTEGER = b" " + b"0" * 19


def _iter_array(lines: Iterable[tuple[int, str]], path) -> Iterator[Raw]:
    text = "".join(line for _, line in lines)
    try:
        values = json.loads(text)
    except json.JSONDecodeError as e:
        raise RecordError(path, e.lineno, None, malformed(e, e.colno)) from None
    for i, value in enumerate(values):
        # The line of an array element is not kept by json; the element's position stands in.
        yield Raw(i + 1, value, json.dumps(value, ensure_ascii=False))


def _chunks(lines: Iterable[tuple[int, str]], size: int) -> Iterator[str]:
    """The text of ``lines`` in pieces of about ``size`` characters (whole lines)."""
    piece: list[str] = []
    length = 0
    for _, line in lines:
        piece.append(line)
        length += len(line)
        if length >= size:
            yield "".join(piece)
            piece, length = [], 0
    if piece:
        yield "".join(piece)


def _iter_concatenated(lines: Iterable[tuple[int, str]], path, chunk: int = 1 << 16) -> Iterator[Raw]:
    decoder = json.JSONDecoder()
    pieces = _chunks(lines, chunk)
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
                # a column counts from the buffer's start on its first line, which may be mid-line: only later ones
                raise RecordError(path, line + e.lineno - 1, None,
                                  malformed(e, e.colno if e.lineno > 1 else None)) from None
            more = next(pieces, "")
            eof, buf = not more, buf + more
            continue
        yield Raw(line, value, buf[:end])
        line += buf[:end].count("\n")
        buf = buf[end:]


def has_records(path: str | os.PathLike) -> bool:
    """Whether a file holds a record: not only blank lines, nor an empty JSON array. Reads up to the first
    character of the first record, so a missing, binary or broken gzip file fails here, before any work.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "x.json")
    >>> _ = open(p, "w").write("\\n[\\n  ]\\n")
    >>> has_records(p)
    False
    """
    text = ""
    for _, line in text_lines(path):
        text = (text + line).strip()
        if text and text != "[":
            return not (text.startswith("[") and text[1:].lstrip().startswith("]"))
    return False


def require_records(path: str | os.PathLike, hint: str = "") -> None:
    """Raise :class:`NoRecords` when ``path`` holds no record (see :func:`has_records`)."""
    if not has_records(path):
        raise NoRecords(path, hint)


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


GZIP_LEVEL = 6
"""The compression level of every ``.gz`` file prmkit writes."""


@contextlib.contextmanager
def _reproducible_gzip(path: str) -> Iterator[TextIO]:
    """gzip text whose bytes depend on the content only (no name or time in the header): a rerun that
    writes the same records writes the same file. Level 6, the gzip tool's own default: Python's 9 took
    twice as long for files a few per cent smaller (a scored pool: most of the time it took to write it)."""
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0,
                                                compresslevel=GZIP_LEVEL) as gz, \
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


@contextlib.contextmanager
def append_partial(path: str | os.PathLike) -> Iterator[TextIO]:
    """Append to a partial file (made, with its folder, when missing). When the block stops on an error, a
    partial file left empty is deleted: a run that stopped before finishing anything (a missing or bad input,
    an early error, SIGTERM under ``prmkit``) leaves nothing behind, while finished records stay for a rerun
    to resume from. (A block that ends well leaves the file to its caller, who merges it into the output.)

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), ".out.jsonl.part")
    >>> with append_partial(p):
    ...     raise RuntimeError("stopped")
    Traceback (most recent call last):
    RuntimeError: stopped
    >>> os.path.exists(p)
    False
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(path, "a", encoding="utf-8") as f:
            yield f
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            if path.stat().st_size == 0:
                path.unlink()
        raise


@contextlib.contextmanager
def file_lock(path: str | os.PathLike) -> Iterator[None]:
    """Hold an exclusive lock on the lock file ``path`` (made for it), deleted on every way out.

    A waiter can wake up holding a lock file its holder has just deleted; it then takes the new one, so
    deleting the file never lets two writers in at once.
    """
    import fcntl

    path = Path(path)
    while True:
        f = open(path, "a")  # noqa: SIM115  (closed below or after the block)
        try:
            fcntl.flock(f, fcntl.LOCK_EX)
            if _still_there(f, path):
                break
        except BaseException:
            f.close()
            raise
        f.close()
    try:
        yield
    finally:
        path.unlink(missing_ok=True)  # while holding it: a waiter then finds its file gone and retries
        f.close()


def _still_there(f, path: Path) -> bool:
    """Whether the open file ``f`` is still the file at ``path`` (not deleted or replaced meanwhile)."""
    try:
        return os.path.samestat(os.fstat(f.fileno()), os.stat(path))
    except FileNotFoundError:
        return False


def merge_partial(out: str | os.PathLike, part: str | os.PathLike, key: Callable[[dict], Any],
                  inputs: Iterable[str | os.PathLike] = ()) -> None:
    """``out`` = its records, then those of the partial file ``part`` it does not hold yet (by ``key``: a run
    killed between the two renames left some), in order; then ``part`` goes. Writers sharing ``out`` (shards)
    take turns under a lock file beside it (``.OUT.lock``, removed when done)."""
    out, part = Path(out), Path(part)
    with file_lock(out.with_name(f".{out.name}.lock")):
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
