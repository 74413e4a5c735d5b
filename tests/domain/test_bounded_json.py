"""The one bounded JSON decoder (domain/strict_json.py, issue #24): deep, huge, wide or
malformed input is a ValueError with a one-line reason, never another exception."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from magicstick_host.domain.strict_json import (
    KUBE_ANSWER,
    loads_bounded,
    loads_strict,
)

LIMITS = {"max_bytes": 1 << 20, "max_depth": 10, "max_items": 1000}


def refused(data: bytes | str, **limits: Any) -> str:
    with pytest.raises(ValueError) as caught:
        loads_bounded(data, **{**LIMITS, **limits})
    reason = str(caught.value)
    assert reason and "\n" not in reason and len(reason) <= 200, reason
    return reason


def nested(depth: int, leaf: str = "1") -> str:
    return '{"a":' * depth + leaf + "}" * depth


@pytest.mark.parametrize("text", [nested(2000), "[" * 200_000, "[" * 200_000 + "]" * 200_000,
                                  '{"a":' * 100_000])
def test_nesting_far_over_the_interpreter_limit_is_a_value_error(text: str) -> None:
    assert "nested deeper than" in refused(text)


def test_a_kube_answer_nested_2000_levels_is_refused_and_one_at_the_limit_is_read() -> None:
    with pytest.raises(ValueError, match="nested deeper than 100 levels"):
        KUBE_ANSWER.loads(nested(2000).encode())
    with pytest.raises(ValueError, match="nested deeper than 100 levels"):
        KUBE_ANSWER.loads(nested(101).encode())  # below the recursion limit, over ours
    assert KUBE_ANSWER.loads(nested(100).encode()) is not None


def test_depth_counts_where_the_deepest_value_sits() -> None:
    assert loads_bounded(nested(10), **LIMITS) is not None
    assert "nested deeper than 10" in refused(nested(11))
    assert loads_bounded("[" * 11 + "]" * 11, **LIMITS) is not None  # the innermost is empty
    assert loads_bounded("7", **{**LIMITS, "max_depth": 0}) == 7


def test_size_is_checked_before_decoding() -> None:
    assert "larger than 10 bytes" in refused(b'"' + b"x" * 10 + b'"', max_bytes=10)
    assert "larger than 10 bytes" in refused('"' + "x" * 10 + '"', max_bytes=10)


def test_count_of_values_over_all_levels() -> None:
    wide = json.dumps([[0] * 600, [0] * 600])
    assert "more than 1000 values" in refused(wide)
    assert loads_bounded(json.dumps([[0] * 400, [0] * 400]), **LIMITS) is not None
    assert "more than 1000 values" in refused(json.dumps({str(i): i for i in range(1001)}))


@pytest.mark.parametrize("text", [
    "NaN", "[Infinity]", '{"a": -Infinity}', "1e999", "[-1e400]",
    '"\\ud800"', '{"\\udfff": 1}', '["ok", "\\uDBFF x"]',
    "1" * 5000,  # int digits limit
    "", "{", "[1,]", '{"a" 1}', "\ufeff{}", "tru", "nul", "[1] [2]",
])
def test_what_is_not_plain_json_is_a_value_error(text: str) -> None:
    refused(text)


def test_invalid_utf8_and_lone_surrogates_in_str_are_value_errors() -> None:
    assert "not UTF-8" in refused(b'"\xff"')
    assert "not UTF-8" in refused(b"\xfe\xff\x00[\x00]")  # UTF-16: json.loads would guess it
    assert "lone surrogate" in refused('"\udc80"')


def test_a_surrogate_pair_is_one_character_and_fine() -> None:
    assert loads_bounded('"\\ud83d\\ude00"', **LIMITS) == "\U0001f600"


def test_duplicates_only_with_unique_keys() -> None:
    assert loads_bounded('{"a":1,"a":2}', **LIMITS) == {"a": 2}
    assert "duplicate key 'a'" in refused('{"a":1,"a":2}', unique_keys=True)
    with pytest.raises(ValueError, match="duplicate key"):
        loads_strict(b'{"a":1,"a":2}')


def test_not_text_at_all() -> None:
    refused(12)  # type: ignore[arg-type]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=4), inner,
                                                               max_size=5),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_any_json_within_the_limits_reads_as_json_loads_reads_it(doc: Any) -> None:
    text = json.dumps(doc)
    assert loads_bounded(text, max_bytes=1 << 20, max_depth=100, max_items=10_000) == \
        json.loads(text)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300) | st.text(max_size=300),
       st.integers(0, 40), st.integers(0, 40))
def test_any_bytes_or_text_are_json_or_a_value_error(
    data: bytes | str, depth: int, items: int
) -> None:
    try:
        loads_bounded(data, max_bytes=1 << 20, max_depth=depth, max_items=items)
    except ValueError as exc:
        assert "\n" not in str(exc)


fragments = st.sampled_from(["[", "]", "{", "}", '"a":', ",", "1", '"\\ud800"', "1e999",
                             "NaN", " ", '"x"', "null"])


@settings(max_examples=300, deadline=None)
@given(st.lists(fragments, max_size=200), st.integers(1, 5000))
def test_bracket_soups_of_any_depth_are_json_or_a_value_error(
    parts: list[str], repeat: int
) -> None:
    text = "".join(parts) * (repeat if len(parts) < 4 else 1)
    try:
        doc = loads_bounded(text, max_bytes=1 << 20, max_depth=50, max_items=100_000)
    except ValueError:
        return
    # what is returned can be written again, exactly
    again = json.dumps(doc, allow_nan=False, ensure_ascii=False).encode("utf-8")
    assert json.loads(again) == doc or (isinstance(doc, float) and math.isnan(doc))
