"""Property tests of plaindata: outputs cross the sandbox boundary as plain values that compare, under
Python's `==`, as the originals would, keep their types, and never smuggle a live object across."""

from __future__ import annotations

import datetime as dt
import decimal
import fractions
import json
import math
import time

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from sweetflow.backend.sandbox import plaindata
from sweetflow.backend.sandbox.plaindata import EncodingError, Opaque

# Hypothesis describes its nested recursive strategies when it retries unique set members; harmless.
pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")


def round_trip(x: object) -> object:
    return plaindata.loads(plaindata.dumps(x))


def same(a: object, b: object) -> bool:
    """`a == b` all the way down with identical types, except that nan matches nan and -0.0 only -0.0."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return repr(a) == repr(b)  # repr is exact for floats and spells nan, inf and -0.0
    if type(a) is complex:
        return same(a.real, b.real) and same(a.imag, b.imag)
    if type(a) is decimal.Decimal:
        return a.compare_total(b) == 0  # total order: NaNs and exponents ("1.0" vs "1.00") included
    if type(a) in (dt.datetime, dt.time):
        return a == b and a.utcoffset() == b.utcoffset()
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(map(same, a, b))
    if type(a) in (set, frozenset, dict):
        # Look each key up in b: equal keys may still differ in type (1 and True) or sign (0.0, -0.0).
        b_keys = {k: k for k in b}
        if len(a) != len(b) or not all(k in b_keys and same(k, b_keys[k]) for k in a):
            return False
        return type(a) is not dict or all(same(a[k], b[k]) for k in a)
    return a == b


DAY = dt.timedelta(hours=23, minutes=59)
fixed_offsets = st.builds(dt.timezone, st.timedeltas(min_value=-DAY, max_value=DAY))


def scalars(nan: bool) -> st.SearchStrategy:
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.builds(lambda n, shift: n << shift, st.integers(), st.integers(0, 4000)),  # far beyond 64 bits
        st.floats(allow_nan=nan),  # inf, -inf and -0.0 included
        st.text(st.characters(exclude_categories=())),  # lone surrogates included
        st.binary(),
        st.complex_numbers(allow_nan=nan),
        st.decimals(allow_nan=nan),
        st.fractions(),
        st.dates(),
        st.datetimes(timezones=st.none() | fixed_offsets),
        st.times(timezones=st.none() | fixed_offsets),
        st.timedeltas(),
    )


def hashables() -> st.SearchStrategy:
    # No nan in sets or keys: a nan is found again only by identity, which no copy keeps.
    return st.recursive(scalars(nan=False), lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=4))


def values(nan: bool) -> st.SearchStrategy:
    keys = hashables()
    return st.recursive(
        scalars(nan),
        lambda inner: st.one_of(
            st.lists(inner, max_size=5),
            st.lists(inner, max_size=5).map(tuple),
            st.dictionaries(keys, inner, max_size=5),
            st.sets(keys, max_size=5),
            st.frozensets(keys, max_size=5),
        ),
        max_leaves=30,
    )


@given(values(nan=True))
@example(dt.time(0, 0, tzinfo=dt.timezone(dt.timedelta(microseconds=1))))  # fromisoformat drops it
@example(dt.datetime(2000, 1, 1, tzinfo=dt.timezone(-dt.timedelta(hours=5, microseconds=7))))
def test_round_trip_keeps_values_and_types(x):
    assert same(round_trip(x), x)


@given(values(nan=False))
def test_round_trip_compares_equal_as_the_scorer_sees_it(x):
    assert round_trip(x) == x


def test_nan_never_equals_itself_after_the_trip():
    # As in ColBench, where a reference's and an answer's nan are two distinct objects.
    assert round_trip([float("nan")]) != round_trip([float("nan")])


def test_int_just_under_the_string_digit_limit_round_trips():
    assert same(round_trip([10**4299, -(10**4299)]), [10**4299, -(10**4299)])


def test_int_beyond_the_string_digit_limit_round_trips():
    assert round_trip(10**5000) == 10**5000


def always_equal(base: type) -> type:
    """A subclass of `base` that claims equality with everything."""
    return type(f"AlwaysEqual{base.__name__}", (base,), {"__eq__": lambda s, o: True, "__hash__": base.__hash__})


@given(st.integers())
def test_int_subclass_is_reduced_to_its_plain_value(n):
    out = round_trip([always_equal(int)(n)])
    assert same(out, [n]) and out != [n + 1]


@given(st.text())
def test_str_subclass_is_reduced_to_its_plain_value(s):
    out = round_trip({always_equal(str)(s): always_equal(str)(s)})
    assert same(out, {s: s}) and out != {s: s + "x"}


@given(st.floats(allow_nan=False), st.binary())
def test_float_and_bytes_subclasses_are_reduced_to_plain_values(f, b):
    out = round_trip((always_equal(float)(f), always_equal(bytes)(b)))
    assert out == (f, b) and (type(out[0]), type(out[1])) == (float, bytes)


class Point:
    def __init__(self, x):
        self.x = x


@pytest.mark.parametrize(
    "x",
    [
        Point(1),
        always_equal(object)(),
        np.arange(3),
        len,
        iter([1]),
    ],
    ids=lambda x: type(x).__name__,
)
def test_other_objects_arrive_opaque_and_equal_to_nothing(x):
    out = round_trip(x)
    assert isinstance(out, Opaque)
    assert not any(out == other for other in (out, round_trip(x), x, 1, None, [], Point(1)))


def test_numpy_scalars_arrive_as_numpy_scalars_of_their_type():
    values = [np.int64(3), np.float32(0.5), np.bool_(True), np.float16(-0.0), np.complex64(1j), np.uint8(255)]
    out = round_trip(values)
    assert [type(v) for v in out] == [type(v) for v in values]
    assert all(repr(a) == repr(b) for a, b in zip(out, values))
    assert same(round_trip([np.str_("a"), np.array(2.5)]), ["a", np.float64(2.5)])


def test_recursive_containers_encode_their_loop_as_opaque():
    a: list = [1]
    a.append(a)
    d: dict = {}
    d["self"] = [d]
    out_a, out_d = round_trip(a), round_trip(d)
    assert out_a[0] == 1 and isinstance(out_a[1], Opaque)
    assert isinstance(out_d["self"][0], Opaque)


def test_nesting_beyond_the_depth_limit_is_an_encoding_error():
    x: list = []
    for _ in range(100):
        x = [x]
    with pytest.raises(EncodingError):
        plaindata.dumps(x)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{",
        "[1, 2",
        "NaN x",
        '{"a": 1}',
        '{"__t": "bogus", "v": 1}',
        '{"__t": "set", "v": [[1]]}',
        '{"__t": "dict", "v": [[1, 2, 3]]}',
        '{"__t": "bytes", "v": "abc"}',  # bad base64 padding
        '{"__t": "date", "v": "yesterday"}',
        '{"__t": "timedelta", "v": 5}',
        "1" * 5000,  # over the int digit limit
        "[" * 100_000 + "]" * 100_000,  # deeper than the recursion limit
    ],
)
def test_loads_rejects_malformed_text_with_encoding_error(text):
    with pytest.raises(EncodingError):
        plaindata.loads(text)


@given(st.text())
def test_loads_on_arbitrary_text_raises_nothing_but_encoding_error(text):
    try:
        plaindata.loads(text)
    except EncodingError:
        pass  # any other exception fails the test


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)
TAGS = [
    "float",
    "bytes",
    "tuple",
    "set",
    "frozenset",
    "dict",
    "complex",
    "decimal",
    "fraction",
    "datetime",
    "date",
    "time",
    "timedelta",
    "opaque",
    "bogus",
]
tagged = st.fixed_dictionaries({plaindata.TAG: st.sampled_from(TAGS), "v": json_values})


@given(st.lists(tagged, max_size=3))
@example([{plaindata.TAG: "fraction", "v": [1, 0]}])
@example([{plaindata.TAG: "decimal", "v": "abc"}])
def test_loads_on_any_tagged_value_raises_nothing_but_encoding_error(items):
    try:
        plaindata.loads(json.dumps(items))
    except EncodingError:
        pass  # any other exception fails the test


# --- crafted outputs: the answer's code writes the text the host decodes, outside every timeout ------

M61 = 2**61 - 1  # ints equal modulo it share a hash


def tagged(tag: str, v: object) -> dict:
    return {plaindata.TAG: tag, "v": v}


CRAFTED = {
    "set of colliding ints": tagged("set", [k * M61 for k in range(1, 40_001)]),
    "frozenset of colliding ints": tagged("frozenset", [k * M61 for k in range(1, 40_001)]),
    "dict keyed by colliding ints": tagged("dict", [[k * M61, 0] for k in range(1, 40_001)]),
    "set of colliding tuples": tagged("set", [tagged("tuple", [k * M61]) for k in range(1, 30_001)]),
    "fraction of 1.9-Mbit parts": tagged(
        "fraction", [tagged("int", hex(7**680_000)), tagged("int", hex(3**1_200_000 + 2))]
    ),
    "int of 3.9 Mbit": tagged("int", hex(7**1_390_000)),
}


@pytest.mark.parametrize("payload", CRAFTED.values(), ids=list(CRAFTED))
def test_a_crafted_output_of_1_mb_is_refused_at_once(payload):
    text = json.dumps(payload, separators=(",", ":"))
    assert len(text) < 1_400_000
    started = time.process_time()
    with pytest.raises(EncodingError):
        plaindata.loads(text)
    assert time.process_time() - started < 2  # before: 13 s for each set, 4 s for the fraction


@given(st.integers(1, 3 * plaindata.MAX_SAME_HASH), st.sampled_from(["set", "frozenset", "dict"]))
def test_keys_sharing_a_hash_decode_up_to_the_limit(n, tag):
    keys = [k * M61 for k in range(1, n + 1)]
    text = json.dumps(tagged(tag, [[k, 0] for k in keys] if tag == "dict" else keys))
    if n > plaindata.MAX_SAME_HASH:
        with pytest.raises(EncodingError, match="share a hash"):
            plaindata.loads(text)
    else:
        assert plaindata.loads(text) == ({k: 0 for k in keys} if tag == "dict" else set(keys))


def test_plain_values_within_the_limits_still_round_trip():
    powers = {2**p for p in range(64 * 61)}  # 64 of them share each hash
    big = math.factorial(10_000)  # 118,459 bits
    widest = fractions.Fraction(10**4300 - 1, 10**4299 + 7)  # parts as long as JSON carries them
    assert same(round_trip([powers, big, widest]), [powers, big, widest])
