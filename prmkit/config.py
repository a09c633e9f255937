"""prmkit's one config system: stage dataclasses, recipe files over them, dotted overrides, one parser.

Every stage has one inert config dataclass (``TrainConfig``, ``ScoreConfig``, ``LabConfig`` and the
dataclasses inside it). Settings come from three places, in this order of precedence:

    dataclass defaults  <  a recipe file (YAML, TOML or JSON)  <  command-line settings

A recipe is a mapping of field names to values; a nested dataclass is a nested mapping (or dotted
keys, ``rm.max_steps: 400``). On the command line, ``--set KEY=VALUE`` (dotted keys, values as text) and
the flags ``prmkit train`` derives from its dataclass's fields go through the same :func:`apply`, which
checks every key against the fields (a typo is an error naming the known fields) and converts text to
the field's type (``true``/``false``, numbers, comma lists, ``none`` for an unset optional field).

>>> from dataclasses import dataclass, field
>>> @dataclass(frozen=True)
... class Inner:
...     steps: int = 10
...     name: str | None = None
>>> @dataclass(frozen=True)
... class Outer:
...     inner: Inner = field(default_factory=Inner)
...     ns: tuple[int, ...] = (1, 2)
>>> apply(Outer(), {"inner": {"steps": "20"}, "ns": "4,8", "inner.name": "x"})
Outer(inner=Inner(steps=20, name='x'), ns=(4, 8))
>>> apply(Outer(), {"inner.step": 3})
Traceback (most recent call last):
...
ValueError: unknown setting 'inner.step' (at 'step'; known: steps, name)
"""

from __future__ import annotations

import argparse
import builtins
import dataclasses
import json
import types
import typing
import warnings
from pathlib import Path


def read_recipe(path: str | Path) -> dict:
    """A recipe file's mapping (YAML ``.yaml``/``.yml``, TOML ``.toml``, else JSON)."""
    path = Path(path)
    text = path.read_text()
    if path.suffix == ".toml":
        import tomllib

        data = tomllib.loads(text)
    elif path.suffix in (".yaml", ".yml"):
        import yaml

        data = yaml.safe_load(text) or {}
    else:
        data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a recipe is a mapping of field names to values")  # noqa: TRY004
    return data


def parse_sets(pairs: list[str]) -> dict[str, str]:
    """``["a.b=1", "c=x"]`` (``--set`` arguments) -> ``{"a.b": "1", "c": "x"}``.

    >>> parse_sets(["rm.max_steps=400", "rm.features="])
    {'rm.max_steps': '400', 'rm.features': ''}
    """
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--set expects KEY=VALUE, got {pair!r}")
        out[key.strip()] = value.strip()
    return out


def flatten(mapping: dict, prefix: str = "") -> dict:
    """Nested mappings -> dotted keys: ``{"rm": {"lr": 1}}`` -> ``{"rm.lr": 1}``."""
    out = {}
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


def apply(obj, settings: dict, _prefix: str = ""):
    """A copy of dataclass ``obj`` with ``settings`` (nested or dotted keys) applied, values converted.

    All the settings of one dataclass are applied at once (one ``replace``), so a check between fields
    (``classes: 3`` needs ``neutral: class``) sees them together, whatever their order."""
    fields = {f.name: f for f in dataclasses.fields(obj)}
    groups: dict[str, dict] = {}
    changes = {}
    for key, value in flatten(settings).items():
        head, _, rest = key.partition(".")
        full = f"{_prefix}{key}"
        if head not in fields:
            raise ValueError(f"unknown setting {full!r} (at {head!r}; known: {', '.join(fields)})")
        current = getattr(obj, head)
        if rest:
            if not dataclasses.is_dataclass(current):
                raise ValueError(f"setting {full!r}: {head!r} has no sub-fields")
            groups.setdefault(head, {})[rest] = value
        elif dataclasses.is_dataclass(current):
            raise ValueError(f"setting {full!r} is a group; set one of its fields ({full}.<field>)")
        else:
            changes[head] = convert(field_type(type(obj), fields[head]), value, full)
    for head, sub in groups.items():
        changes[head] = apply(getattr(obj, head), sub, f"{_prefix}{head}.")
    return dataclasses.replace(obj, **changes) if changes else obj


def field_type(cls, f: dataclasses.Field):
    """The evaluated type of a dataclass field (annotations are strings under ``from __future__``)."""
    if not isinstance(f.type, str):
        return f.type
    import sys

    namespace = {**vars(typing), **vars(builtins), **vars(sys.modules.get(cls.__module__, typing))}
    return eval(f.type, namespace)  # a field annotation of our own dataclasses, not user input


def _split(text: str, item_type) -> list[str]:
    """A list from text: comma-separated; numbers may also be separated by spaces (``"5 9"``), while text
    items keep their spaces (a label token may be ``" +"``)."""
    if item_type is str:
        return text.split(",") if text else []
    return text.replace(",", " ").split()


def resolve(cls, recipe: dict | None = None, flags: dict | None = None):
    """``cls()`` with the recipe and the flags applied together: defaults < recipe < flags."""
    return apply(cls(), {**flatten(recipe or {}), **flatten(flags or {})})


def from_args(cls, args, recipe: dict | None = None):
    """``cls`` from a command's parsed arguments, the one way every command builds its config: defaults <
    ``--recipe FILE`` (or ``recipe``, a mapping already read) < ``--set KEY=VALUE`` < the flags given
    (the fields of ``cls`` that ``args`` holds; flags left unset are absent, not defaults).

    >>> import argparse
    >>> @dataclasses.dataclass(frozen=True)
    ... class C:
    ...     a: int = 1
    ...     b: str = "x"
    >>> from_args(C, argparse.Namespace(recipe=None, set=["a=2", "b=y"], b="z"))
    C(a=2, b='z')
    """
    if recipe is None:
        recipe = read_recipe(args.recipe) if getattr(args, "recipe", None) else {}
    names = {f.name for f in dataclasses.fields(cls)}
    flags = {k: v for k, v in vars(args).items() if k in names}
    return resolve(cls, {**flatten(recipe), **parse_sets(getattr(args, "set", None) or [])}, flags)


def convert(tp, value, key: str = "value"):
    """``value`` (text from a command line, or a recipe's YAML value) as type ``tp``.

    >>> convert(bool, "false"), convert(int | None, "none"), convert(list, "a, b"), convert(tuple[int, ...], "4 8")
    (False, None, ['a', ' b'], (4, 8))

    A fixed-length tuple written as text may separate its values with ``:``, so a list of pairs reads
    ``"+:3,set:0.25"``:

    >>> convert(tuple[tuple[str, float], ...], "+:3,set:0.25"), convert(tuple[int, int], "5,9")
    ((('+', 3.0), ('set', 0.25)), (5, 9))
    """
    optional = isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union
    if optional:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null")):
            return None
        tp = args[0]
    origin = typing.get_origin(tp) or tp
    if value is None:
        raise ValueError(f"setting {key!r} cannot be unset (none); give a value")
    if origin in (list, tuple):
        args = typing.get_args(tp)
        fixed = bool(args) and Ellipsis not in args and origin is tuple  # one type per position
        if isinstance(value, str):
            pair = fixed and ":" in value  # a pair inside a list of pairs; "5,9" (a range) stays comma-separated
            items = value.split(":") if pair else _split(value, args[0] if args else str)
        else:
            items = list(value)
        if fixed:
            if len(items) != len(args):
                raise ValueError(f"setting {key!r} expects {len(args)} values (text: separated by ':'), got {value!r}")
            items = [convert(a, v, key) for a, v in zip(args, items)]
        elif args:
            items = [convert(args[0], v, key) for v in items]
        return tuple(items) if origin is tuple else items
    if origin is bool:
        if isinstance(value, bool):
            return value
        if str(value).lower() in ("1", "true", "yes", "on"):
            return True
        if str(value).lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"setting {key!r} expects true or false, got {value!r}")
    if origin in (int, float, str):
        try:
            return origin(value)
        except (TypeError, ValueError):
            raise ValueError(f"setting {key!r} expects {origin.__name__}, got {value!r}") from None
    return value


# --- renamed flags: an old spelling kept for one release (the CLI's vocabulary, docs/cli.md) ---------------

class Renamed(argparse.Action):
    """An old spelling: warns, then does what ``new`` (an action of the same parser) does."""

    def __init__(self, option_strings, dest, new: argparse.Action, **kwargs):
        self.new = new
        nargs = new.nargs if new.option_strings else None  # a renamed positional takes its one value
        super().__init__(option_strings, dest, nargs=nargs, const=new.const, type=new.type,
                         choices=new.choices, default=argparse.SUPPRESS, help=argparse.SUPPRESS)

    def __call__(self, parser, namespace, values, option_string=None):
        name = self.new.option_strings[0] if self.new.option_strings else (self.new.metavar or self.new.dest).upper()
        warnings.warn(f"prmkit {parser.prog.removeprefix('prmkit ')}: {option_string} is renamed {name}; the old "
                      "spelling goes in the next release", FutureWarning, stacklevel=2)
        self.new(parser, namespace, values, option_string)


def differing(ours: dict | None, theirs: dict | None) -> list[str]:
    """The keys whose values differ between two settings mappings (a missing mapping is empty), sorted: what a
    resumable command names when it refuses another run's output.

    >>> differing({"lr": 1, "steps": 5}, {"lr": 2, "steps": 5, "seed": 0}), differing(None, {"a": 1})
    (['lr', 'seed'], ['a'])
    """
    ours, theirs = ours or {}, theirs or {}
    return sorted(k for k in {*ours, *theirs} if ours.get(k) != theirs.get(k))


def renamed(parser, old: str, new: str) -> None:
    """Keep ``old`` working as ``new`` (an option of ``parser`` already added) for one release."""
    action = parser._option_string_actions[new]  # argparse's one table of options; it has no public lookup
    parser.add_argument(old, dest=action.dest, action=Renamed, new=action)


__all__ = ["Renamed", "apply", "convert", "differing", "flatten", "from_args", "parse_sets", "read_recipe", "renamed", "resolve"]
