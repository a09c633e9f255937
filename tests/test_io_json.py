"""prmkit.io.loads reads every JSON text exactly as json.loads does (orjson is only a faster road to it)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prmkit.io import loads

scalars = (st.none() | st.booleans() | st.integers(min_value=-(2**80), max_value=2**80)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text())
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                      max_leaves=20)


def same(a, b) -> bool:
    """Equal, with NaN equal to NaN and types compared (1 and 1.0 are different reads)."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b


@settings(max_examples=300, deadline=None)
@given(values, st.booleans())
def test_loads_reads_what_json_reads(value, as_bytes):
    text = json.dumps(value)
    assert same(loads(text.encode() if as_bytes else text), json.loads(text))


@pytest.mark.parametrize("text", ['{"a": 1', "[1, 2", '{"a": nan}', "", "tru", '"\\x"', "[1] [2]"])
def test_loads_raises_what_json_raises(text):
    with pytest.raises(json.JSONDecodeError) as ours:
        loads(text)
    with pytest.raises(json.JSONDecodeError) as theirs:
        json.loads(text)
    assert (ours.value.msg, ours.value.pos) == (theirs.value.msg, theirs.value.pos)


def test_lone_surrogates_and_duplicate_keys_as_json_reads_them():
    assert loads('"\\ud800"') == "\ud800"
    assert loads('{"a": 1, "a": 2}') == {"a": 2}
