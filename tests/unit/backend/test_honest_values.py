"""Honest answers are scored as ColBench scores them: a test passes when `reference == output` on the
real values (and the reference is not None), whatever container or number type carries the value.

ColBench's rule is applied here in process, to the live values; ours to what crosses the sandbox
(`plaindata.dumps` in the child, `passes_test` in the scorer), and, end to end, to answers run in the
sandbox. Lying objects still score 0."""

from __future__ import annotations

import collections
import textwrap

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sweetflow.backend.sandbox import plaindata
from sweetflow.backend.sandbox.pool import Sandbox
from sweetflow.backend.scoring import check_references, passes_test, score_answers
from tests.support.params import sandbox_params

Pair = collections.namedtuple("Pair", "first second")
Other = collections.namedtuple("Other", "x y")


def official(reference: object, output: object) -> bool:
    """ColBench's rule on live values (`ground_truth_output == test_output and ... is not None`)."""
    return bool(reference == output) and reference is not None


def ours(reference: object, output: object) -> bool:
    return passes_test(plaindata.dumps(reference), plaindata.dumps(output))


# Each way an honest answer may carry a mapping of counts.
MAPPINGS = {
    "dict": dict,
    "Counter": collections.Counter,
    "defaultdict": lambda d: collections.defaultdict(int, d),
    "OrderedDict": collections.OrderedDict,
    "reversed OrderedDict": lambda d: collections.OrderedDict(reversed(list(d.items()))),
}
counts = st.dictionaries(st.text(max_size=4), st.integers(-3, 3), max_size=6)


@given(counts, counts, st.sampled_from(sorted(MAPPINGS)), st.sampled_from(sorted(MAPPINGS)))
def test_mappings_compare_as_python_compares_them(a, b, ref_kind, out_kind):
    """Counter ignores zero counts against a Counter, OrderedDict minds order against an OrderedDict,
    every other pair compares as dicts: all of it as `==` says, for equal and unequal values."""
    reference, output = MAPPINGS[ref_kind](a), MAPPINGS[out_kind](b)
    assert ours(reference, output) == official(reference, output)
    same_value = MAPPINGS[out_kind](a)
    assert ours(reference, same_value) == official(reference, same_value)


def test_counters_differing_by_a_zero_count_pass_as_in_python():
    reference, output = collections.Counter(a=1), collections.Counter(a=1, b=0)
    assert official(reference, output) and ours(reference, output)
    assert not official(reference, dict(output)) and not ours(reference, dict(output))


def test_ordered_dicts_in_another_order_fail_as_in_python():
    reference, output = collections.OrderedDict(a=1, b=2), collections.OrderedDict(b=2, a=1)
    assert not official(reference, output) and not ours(reference, output)
    assert official(dict(reference), output) and ours(dict(reference), output)


pairs = st.tuples(st.integers(), st.text(max_size=5))


@given(pairs, pairs)
def test_namedtuples_compare_as_tuples(a, b):
    for reference, output in [(a, Pair(*a)), (Pair(*a), a), (Pair(*a), Other(*a)), (a, Pair(*b)), ([a], [Pair(*a)])]:
        assert ours(reference, output) == official(reference, output)
    assert ours(a, Pair(*a)) and not ours(list(a), Pair(*a))  # a namedtuple is a tuple, not a list


NUMPY = [np.int64, np.int32, np.uint8, np.float64, np.float32, np.float16, np.bool_]


@given(st.integers(0, 200), st.floats(0, 200, width=32), st.sampled_from(NUMPY))
def test_numpy_scalars_compare_as_python_numbers(n, x, kind):
    for reference in (n, x, float(n), n % 2 == 0):
        output = kind(reference)
        assert ours(reference, output) == official(reference, output)
        assert ours({"v": reference}, {"v": output}) == official({"v": reference}, {"v": output})


# End to end: the answer runs in the sandbox and returns the right value in another carrier.
REFERENCE = """
def tally(words):
    out = {}
    for w in words:
        out[w] = out.get(w, 0) + 1
    return out

def bounds(xs):
    return (min(xs), max(xs))

def mean(xs):
    return sum(xs) / len(xs)
"""
HONEST = {
    "Counter": "from collections import Counter\ndef tally(words):\n    return Counter(words)\n",
    "defaultdict": textwrap.dedent("""
        from collections import defaultdict
        def tally(words):
            out = defaultdict(int)
            for w in words:
                out[w] += 1
            return out
        """),
    "OrderedDict": textwrap.dedent("""
        from collections import OrderedDict
        def tally(words):
            out = OrderedDict()
            for w in sorted(words):
                out[w] = out.get(w, 0) + 1
            return out
        """),
    "namedtuple": "from collections import namedtuple\nB = namedtuple('B', 'lo hi')\n"
    "def bounds(xs):\n    return B(min(xs), max(xs))\n",
    "numpy scalar": "import numpy as np\ndef mean(xs):\n    return np.mean(np.array(xs, dtype=np.float64))\n",
}
LYING = {
    "dict subclass equal to everything": textwrap.dedent("""
        class Yes(dict):
            def __eq__(self, other):
                return True
            __hash__ = None
        def tally(words):
            return Yes(wrong=1)
        """),
    "namedtuple equal to everything": textwrap.dedent("""
        from collections import namedtuple
        class Yes(namedtuple('B', 'lo hi')):
            def __eq__(self, other):
                return True
            __hash__ = tuple.__hash__
        def bounds(xs):
            return Yes(0, 0)
        """),
    "Counter whose items lie": textwrap.dedent("""
        from collections import Counter
        class Liar(Counter):
            def items(self):
                return [('a', 2), ('b', 1)]
            def __eq__(self, other):
                return True
            __hash__ = None
        def tally(words):
            return Liar(wrong=1)
        """),
}
CALLS = {
    "tally": ["tally(['a', 'b', 'a'])", "tally(['x'])", "tally([])"],
    "bounds": ["bounds([3, 1, 2])", "bounds([5])"],
    "mean": ["mean([1, 2, 3, 4])", "mean([0.5])"],
}


def calls_of(code: str) -> list[str]:
    return next(calls for name, calls in CALLS.items() if f"def {name}(" in code)


@pytest.fixture(scope="module")
def scored() -> dict[str, float]:
    answers = {**HONEST, **LYING}
    with Sandbox(sandbox_params(workers=2, task_timeout_s=10)) as sandbox:
        calls = [calls_of(code) for code in answers.values()]
        checks = check_references([{"ground_truth": REFERENCE, "test_cases": c} for c in calls], sandbox)
    with Sandbox(sandbox_params(workers=2, task_timeout_s=10)) as sandbox:
        scores = score_answers(list(answers.values()), [c.expected for c in checks], calls, sandbox)
    return {name: s.tests_passed for name, s in zip(answers, scores)}


def in_process(code: str) -> float:
    """ColBench's rule on live values in this process: the share of tests where reference == answer."""
    reference, answer = {}, {}
    exec(REFERENCE, reference)
    exec(code, answer)
    calls = calls_of(code)
    return sum(official(eval(c, reference), eval(c, answer)) for c in calls) / len(calls)


@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_answers_score_as_under_the_official_rule(scored, name):
    assert in_process(HONEST[name]) == 1.0  # the official rule passes every test...
    assert scored[name] == 1.0  # ...and so do we


@pytest.mark.parametrize("name", sorted(LYING))
def test_lying_answers_still_score_nothing(scored, name):
    assert in_process(LYING[name]) == 1.0  # in process, the lie wins
    assert scored[name] == 0.0
