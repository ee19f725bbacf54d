"""Values that cross the sandbox boundary as plain data, never as live objects.

The sandboxed child encodes each test output into JSON with a few type tags; the scorer decodes
it into builtin objects it built itself. Python's own `==` then decides a test exactly as ColBench's
in-process comparison would for plain values (1 == 1.0, (1, 2) != [1, 2], nan != nan), while an
object whose `__eq__` always returns True arrives as an `Opaque` that equals nothing.

A subclass of a builtin value type travels as its value, read with the builtin's own methods, so that
an honest one (a namedtuple, a defaultdict, a str subclass) compares as `==` compares it with the
builtin, and a lying one (`__eq__` always True) is held to its value. `Counter` and `OrderedDict`,
whose `==` differs from a dict's (zero counts, order), arrive as themselves, and so do numpy's numeric
scalars: numpy compares a Python number at the scalar's own precision (16.914 == float16(16.9)).

Standard library only in the sandbox: the worker imports this module before any agent code runs, and
only the scorer, decoding, imports numpy (for a numpy scalar).
"""

from __future__ import annotations

import base64
import datetime as _dt
import decimal
import fractions
import json
import math
from collections import Counter, OrderedDict

TAG = "__t"
BIG_INT_BITS = 4096
# Keys of one set or dict that may share a hash. The answer's code writes the text the host decodes,
# outside every timeout: ints equal modulo 2**61 - 1 all hash alike, and building a set of n of them
# costs n**2 / 2 comparisons (13 s of host CPU for 1 MB). Plain values rarely share a hash: 2**p and
# 2**(p + 61) do, so {2**p for p in range(3904)} is the largest set of powers of 2 that decodes.
MAX_SAME_HASH = 64
# Bits of an int (sent in hex beyond BIG_INT_BITS): comparing one with a Decimal converts it in
# quadratic time, 1.7 s for 1.1 Mbit. 2**17 bits hold factorial(10_000).
MAX_INT_BITS = 1 << 17
# Bits of a fraction's numerator or denominator: the encoder writes them as JSON numbers, of at most
# 4,300 digits (14,285 bits). Normalising a fraction takes a gcd, quadratic in the digits: a crafted
# fraction of two 1.9-Mbit parts cost 4 s.
FRACTION_BITS = 14_285


class Opaque:
    """Stand-in for a value of a type we do not carry across (class instances, numpy arrays...).

    ColBench compares such objects with default identity equality, so two of them never match.
    """

    __slots__ = ("type_name",)

    def __init__(self, type_name: str):
        self.type_name = type_name

    def __eq__(self, other: object) -> bool:
        return False

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return f"<opaque {self.type_name}>"


class EncodingError(ValueError):
    pass


# Exact types only: a subclass of int or str could override __eq__, so it is first reduced to its
# builtin base value with the base type's own methods.
_BASE_REDUCERS = (
    (bool, bool.__bool__),
    (int, lambda x: int.__add__(x, 0)),
    (float, lambda x: float.__add__(x, 0.0)),
    (str, lambda x: str.__getitem__(x, slice(None))),
    (bytes, lambda x: bytes.__getitem__(x, slice(None))),
)
# Containers, most derived first: a subclass travels as the first of these it derives from, its
# items read with that base's own methods (never the subclass's `__iter__` or `items`).
CONTAINERS = (Counter, OrderedDict, dict, list, tuple, set, frozenset)
MAPPING_TAGS = {Counter: "counter", OrderedDict: "ordereddict", dict: "dict"}
# numpy's numeric scalars, by dtype name (float64 and bool_ included: their == against another numpy
# scalar is numpy's). Others (str_, datetime64...) travel as their Python value.
NUMPY_SCALARS = frozenset(
    ["bool", "float16", "float32", "float64", "complex64", "complex128"]
    + [f"{sign}int{bits}" for sign in ("", "u") for bits in (8, 16, 32, 64)]
)


def encode(value: object, max_depth: int = 64) -> object:
    """Return a JSON-serialisable structure describing `value` (see module docstring)."""
    return _encode(value, max_depth, set())


def _encode(x: object, depth: int, seen: set[int]) -> object:
    if depth < 0:
        raise EncodingError("output nested too deeply")
    t = type(x)
    if x is None or t is bool or t is str:
        return x
    if t.__module__ == "numpy" and getattr(x, "shape", None) == () and hasattr(x, "item"):
        name = getattr(getattr(x, "dtype", None), "name", None)
        item = x.item()
        if name in NUMPY_SCALARS and type(item).__module__ != "numpy":  # longdouble's item is itself
            return {TAG: "numpy", "dtype": name, "v": _encode(item, depth, seen)}
        if type(item).__module__ != "numpy":
            return _encode(item, depth, seen)  # a 0-d array, a datetime64: their Python value
    if t is int:
        # Beyond json's digit limit (and its quadratic decimal conversion) big ints travel as hex.
        return x if x.bit_length() <= BIG_INT_BITS else {TAG: "int", "v": hex(x)}
    if t is float:
        if math.isfinite(x):
            return x
        return {TAG: "float", "v": repr(x)}  # nan, inf, -inf
    if t is bytes:
        return {TAG: "bytes", "v": base64.b64encode(x).decode()}
    for base, reduce in _BASE_REDUCERS:
        if isinstance(x, base) and t is not base:
            return _encode(reduce(x), depth, seen)
    base = next((b for b in CONTAINERS if isinstance(x, b)), None)
    if base is not None:
        if id(x) in seen:
            return {TAG: "opaque", "type": "recursive " + base.__name__}
        seen = seen | {id(x)}
        if base in MAPPING_TAGS:
            items = [[_encode(k, depth - 1, seen), _encode(v, depth - 1, seen)] for k, v in dict.items(x)]
            return {TAG: MAPPING_TAGS[base], "v": items}
        items = [_encode(v, depth - 1, seen) for v in base.__iter__(x)]
        return items if base is list else {TAG: base.__name__, "v": items}
    if t is complex:
        return {TAG: "complex", "v": [repr(x.real), repr(x.imag)]}
    if t is decimal.Decimal:
        return {TAG: "decimal", "v": str(x)}
    if t is fractions.Fraction:
        return {TAG: "fraction", "v": [x.numerator, x.denominator]}
    if t is _dt.date:
        return {TAG: "date", "v": x.isoformat()}
    if t in (_dt.datetime, _dt.time):
        # The offset travels apart: fromisoformat drops an offset's microseconds.
        offset = x.utcoffset()
        tz = None if offset is None else [offset.days, offset.seconds, offset.microseconds]
        return {TAG: t.__name__, "v": x.replace(tzinfo=None).isoformat(), "tz": tz}
    if t is _dt.timedelta:
        return {TAG: "timedelta", "v": [x.days, x.seconds, x.microseconds]}
    return {TAG: "opaque", "type": f"{t.__module__}.{t.__qualname__}"}


def _decode_tagged(obj: dict) -> object:
    tag = obj.get(TAG)
    if tag is None:
        raise EncodingError(f"untagged object in output: keys {sorted(obj)[:5]}")
    v = obj.get("v")
    if tag == "float":
        return float(v)
    if tag == "int":
        n = int(v, 16)  # linear in the digits, unlike decimal
        if n.bit_length() > MAX_INT_BITS:
            raise EncodingError(f"an int of more than {MAX_INT_BITS} bits")
        return n
    if tag == "bytes":
        return base64.b64decode(v)
    if tag == "tuple":
        return tuple(v)
    if tag == "set":
        return set(_few_collisions(v))
    if tag == "frozenset":
        return frozenset(_few_collisions(v))
    if tag in ("dict", "counter", "ordereddict"):
        pairs = [(k, val) for k, val in v]
        _few_collisions([k for k, _ in pairs])
        if tag == "counter":
            counter = Counter()
            dict.update(counter, pairs)  # the counts as sent, as Counter(mapping) would keep them
            return counter
        return OrderedDict(pairs) if tag == "ordereddict" else dict(pairs)
    if tag == "complex":
        return complex(float(v[0]), float(v[1]))
    if tag == "decimal":
        return decimal.Decimal(v)
    if tag == "fraction":
        if any(isinstance(part, int) and part.bit_length() > FRACTION_BITS for part in v):
            raise EncodingError(f"a fraction's part of more than {FRACTION_BITS} bits")
        return fractions.Fraction(v[0], v[1])
    if tag == "date":
        return _dt.date.fromisoformat(v)
    if tag in ("datetime", "time"):
        tz = obj.get("tz")
        tzinfo = None if tz is None else _dt.timezone(_dt.timedelta(days=tz[0], seconds=tz[1], microseconds=tz[2]))
        return getattr(_dt, tag).fromisoformat(v).replace(tzinfo=tzinfo)
    if tag == "timedelta":
        return _dt.timedelta(days=v[0], seconds=v[1], microseconds=v[2])
    if tag == "numpy":
        return _numpy_scalar(obj.get("dtype"), v)
    if tag == "opaque":
        return Opaque(str(obj.get("type")))
    raise EncodingError(f"unknown tag {tag!r}")


def _numpy_scalar(name: object, value: object) -> object:
    if name not in NUMPY_SCALARS or type(value) not in (bool, int, float, complex):
        raise EncodingError(f"not a numpy scalar: {name!r}")
    import numpy  # the scorer's, never the sandbox's: a numpy scalar's == is numpy's

    try:
        return numpy.dtype(name).type(value)
    except (OverflowError, TypeError, ValueError) as e:
        raise EncodingError(f"numpy {name} of {value!r:.40}: {e}") from None


def _few_collisions(keys: list) -> list:
    """`keys`, once no more than MAX_SAME_HASH of them are known to share a hash (counting is linear:
    distinct hashes are distinct ints, which never collide with each other)."""
    counts = Counter(map(hash, keys))
    if counts and max(counts.values()) > MAX_SAME_HASH:
        raise EncodingError(f"more than {MAX_SAME_HASH} keys of a set or dict share a hash")
    return keys


# One encoder for every output: `json.dumps` with separators would build a new one each time.
_ENCODER = json.JSONEncoder(separators=(",", ":"))


def dumps(value: object) -> str:
    """Encode a live value to its JSON text (used inside the sandbox)."""
    return _ENCODER.encode(encode(value))


# One decoder for every text: `json.loads` with an object_hook would build a new one each time.
_DECODER = json.JSONDecoder(object_hook=_decode_tagged)


def loads(text: str) -> object:
    """Decode JSON text produced by `dumps` into builtin objects; raise EncodingError if malformed."""
    try:
        return _DECODER.decode(text)
    except EncodingError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, RecursionError, ArithmeticError) as e:
        raise EncodingError(f"malformed output: {type(e).__name__}: {e}") from None
