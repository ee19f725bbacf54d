"""Offline procedural generator of ColBench-style backend tasks.

Each task is drafted from a family (`sweetflow.backend.tasks.families`): names, persona and hidden values are
drawn, the reference is rendered, and ten test calls are chosen so that every hidden parameter
matters: substituting its guess (with the other parameters at their true values) changes at least one
test's output. The references are our own templates, so they are executed in-process here.
"""

from __future__ import annotations

import math
import random
import string
from collections.abc import Callable
from dataclasses import dataclass
from types import CodeType

from tqdm import tqdm

from sweetflow.backend.tasks.families import FAMILIES, FAMILIES_BY_NAME
from sweetflow.backend.tasks.family import Family
from sweetflow.core.inputs import content_id

N_TESTS = 10
MAX_INPUT_DRAWS = 120  # random inputs tried when choosing one set of tests
TEST_ATTEMPTS = 3  # sets of tests tried before a draft is given up
MAX_REJECTED_DRAFTS = 50  # rejected drafts in a row that mean the family itself is broken
MAX_DUPLICATE_DRAWS = 2000  # duplicate references in a row that mean the family is used up

_RAISED = object()  # stands for "the call raised" among outputs


class _Rejected(Exception):
    """A draft that cannot become a valid task (the message says why)."""


def render_reference(template: str, values: dict[str, object]) -> str:
    """Substitute repr(value) for each ${name}.

    The expert/no_ask agents of a later issue use this with guessed values.
    """
    return string.Template(template).substitute({name: repr(value) for name, value in values.items()})


def _is_plain_data(value: object) -> bool:
    """Whether `value` is built only from bool/int/finite float/str/list/tuple/dict (None is not)."""
    kind = type(value)
    if kind is float:
        return math.isfinite(value)
    if kind in (bool, int, str):
        return True
    if kind in (list, tuple):
        return all(map(_is_plain_data, value))
    if kind is dict:
        return all(_is_plain_data(k) and _is_plain_data(v) for k, v in value.items())
    return False


def _same_output(a: object, b: object) -> bool:
    """Equality that ignores float noise, so a guess only "matters" if it changes a result for real."""
    if type(a) in (int, float) and type(b) in (int, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    if type(a) is not type(b):
        return False
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(map(_same_output, a, b))
    if type(a) is dict:
        return a.keys() == b.keys() and all(_same_output(a[k], b[k]) for k in a)
    return a == b


def generate_tasks(
    n_train: int,
    n_test: int,
    seed: int,
    families: list[str] | None = None,
    progress: bool = False,
    test_seed: int | None = None,
) -> tuple[list[dict], list[dict]]:
    """Return (train, test) task records, deterministic for a given seed.

    No task appears in both splits and there are no duplicates within a split (compared on the
    reference). Families take turns in a shuffled order, so each split holds them evenly.
    `test_seed` (default: `seed`) draws another test split, distinct from the default one, beside
    exactly the same training tasks.
    """
    chosen = _select_families(families)
    seen_references: set[str] = set()
    redraw = test_seed is not None and test_seed != seed
    with tqdm(total=n_train + n_test * (1 + redraw), desc="generating tasks", disable=not progress) as bar:
        # The test split comes first from its own stream, so it does not depend on n_train.
        test = _generate_split(n_test, random.Random(f"{seed}:test"), chosen, seen_references, bar.update)
        train = _generate_split(n_train, random.Random(f"{seed}:train"), chosen, seen_references, bar.update)
        if redraw:  # last, so that the training tasks stay exactly as they are
            test = _generate_split(n_test, random.Random(f"{test_seed}:test"), chosen, seen_references, bar.update)
    return train, test


def _select_families(names: list[str] | None) -> list[Family]:
    if names is None:
        return list(FAMILIES)
    if not names:
        raise ValueError("no task families selected")
    unknown = [name for name in names if name not in FAMILIES_BY_NAME]
    if unknown:
        raise ValueError(f"unknown task families {unknown}; known: {sorted(FAMILIES_BY_NAME)}")
    return [FAMILIES_BY_NAME[name] for name in dict.fromkeys(names)]


def _generate_split(
    n: int, rng: random.Random, families: list[Family], seen_references: set[str], advance: Callable[[], object]
) -> list[dict]:
    """Round-robin over the families in a shuffled order, so every family is equally represented."""
    order = list(families)
    rng.shuffle(order)
    tasks = []
    for i in range(n):
        tasks.append(_new_task(order[i % len(order)], rng, seen_references))
        advance()
    return tasks


def _new_task(family: Family, rng: random.Random, seen_references: set[str]) -> dict:
    rejected = duplicates = 0
    while True:
        draft = _Draft.sample(family, rng)
        if draft.ground_truth in seen_references:
            duplicates += 1
            if duplicates > MAX_DUPLICATE_DRAWS:
                raise RuntimeError(f"task family {family.name!r} is used up (capacity {family.capacity} references)")
            continue
        try:
            test_cases = _choose_test_cases(draft, rng)
        except _Rejected as reason:
            rejected += 1
            if rejected >= MAX_REJECTED_DRAFTS:
                raise RuntimeError(
                    f"task family {family.name!r} failed {rejected} drafts in a row, last because {reason}; "
                    "the family's template, values or inputs are probably wrong"
                ) from None
            continue
        seen_references.add(draft.ground_truth)
        return draft.record(test_cases)


@dataclass(frozen=True)
class _Draft:
    """One drawn combination of names, persona and hidden values, before tests are chosen."""

    family: Family
    function_name: str
    arg_names: dict[str, str]
    persona: str
    values: dict[str, object]
    template: str  # names filled in, hidden parameters still ${...}
    ground_truth: str

    @classmethod
    def sample(cls, family: Family, rng: random.Random) -> _Draft:
        function_name = rng.choice(family.function_names)
        arg_names = {role: rng.choice(names) for role, names in family.arguments.items()}
        values = {param.name: rng.choice(param.choices) for param in family.params}
        template = family.fill_names(family.template, function_name, arg_names)
        return cls(
            family=family,
            function_name=function_name,
            arg_names=arg_names,
            persona=rng.choice(family.personas),
            values=values,
            template=template,
            ground_truth=render_reference(template, values),
        )

    def guessed_references(self) -> dict[str, str]:
        """For each hidden parameter, the reference with only that parameter at its guess."""
        return {
            param.name: render_reference(self.template, {**self.values, param.name: param.guess})
            for param in self.family.params
        }

    def call_text(self, args: tuple) -> str:
        return f"{self.function_name}({', '.join(map(repr, args))})"

    def record(self, test_cases: list[str]) -> dict:
        signature = f"def {self.function_name}({', '.join(self.arg_names.values())})"
        request = self.family.fill_names(self.family.request, self.function_name, self.arg_names)
        tests_text = "\n".join(test_cases)
        return {
            "task_id": content_id(self.family.name, self.ground_truth + tests_text),
            "family": self.family.name,
            "function_name": self.function_name,
            "signature": signature,
            "problem_description": f"{self.persona} {request} The signature of the function is: {signature}",
            "ground_truth": self.ground_truth,
            "template": self.template,
            "test_cases": test_cases,
            "facts": [
                {
                    "parameter": param.name,
                    "topic": param.topic,
                    "fact": param.fact_for(self.values[param.name]),
                    "value": repr(self.values[param.name]),
                    "guess": repr(param.guess),
                }
                for param in self.family.params
            ],
        }


def _choose_test_cases(draft: _Draft, rng: random.Random) -> list[str]:
    """Ten test calls on which the reference behaves and every guessed variant is caught at least once."""
    reference = _load(draft.ground_truth)
    guessed = {name: _load(code) for name, code in draft.guessed_references().items()}
    problem = "no attempt made"
    for _ in range(TEST_ATTEMPTS):
        try:
            inputs = _pick_inputs(draft, rng, reference, guessed)
            rng.shuffle(inputs)  # the inputs catching guesses should not always come first
            test_cases = [draft.call_text(args) for args in inputs]
            _check_test_cases(test_cases, reference, guessed)
            return test_cases
        except _Rejected as reason:
            problem = str(reason)
    raise _Rejected(problem)


def _pick_inputs(draft: _Draft, rng: random.Random, reference: dict, guessed: dict[str, dict]) -> list[tuple]:
    """Random inputs, keeping the first that catch each guess and filling the remaining places with others.

    Inputs are drawn independently, so keeping the first suitable ones is as random as sampling a pool.
    """
    function = reference[draft.function_name]
    variants = {name: namespace[draft.function_name] for name, namespace in guessed.items()}
    picked: dict[str, tuple] = {}  # call text -> arguments
    for _ in range(MAX_INPUT_DRAWS):
        if not variants and len(picked) == N_TESTS:
            break
        args = draft.family.make_args(rng)
        text = draft.call_text(args)
        if text in picked:
            continue
        expected = _call(function, args)
        if not _is_plain_data(expected):
            raise _Rejected(f"the reference raised or returned something other than plain data on {text}")
        caught = [name for name, variant in variants.items() if not _same_output(expected, _call(variant, args))]
        if caught or len(picked) + len(variants) < N_TESTS:
            picked[text] = args
            for name in caught:
                del variants[name]
    if variants:
        uncaught = ", ".join(map(repr, variants))
        raise _Rejected(f"no input out of {MAX_INPUT_DRAWS} tells apart the guesses for {uncaught}")
    if len(picked) < N_TESTS:
        raise _Rejected(f"the family's inputs gave fewer than {N_TESTS} distinct calls")
    return list(picked.values())


def _check_test_cases(test_cases: list[str], reference: dict, guessed: dict[str, dict]) -> None:
    """Run the test texts themselves, as the scorer will, and enforce the task rules on them."""
    if len(set(test_cases)) != N_TESTS:
        raise _Rejected("test calls are not distinct")
    # One expression for all calls compiles much faster than ten. If any call raises, the whole list
    # does: never acceptable for the reference, and for a guessed variant it means the guess is caught.
    all_calls = compile("[" + ", ".join(test_cases) + "]", "<tests>", "eval")
    expected = _evaluate(all_calls, reference)
    if not _is_plain_data(expected):
        raise _Rejected("a test raised or returned something other than plain data")
    if all(_same_output(expected[0], output) for output in expected[1:]):
        raise _Rejected("all tests give the same output")
    for name, namespace in guessed.items():
        if _same_output(expected, _evaluate(all_calls, namespace)):
            raise _Rejected(f"the guess for {name!r} changes no test output")


def _load(code: str) -> dict:
    namespace: dict = {}
    exec(compile(code, "<reference>", "exec"), namespace)
    return namespace


def _call(function: Callable, args: tuple) -> object:
    try:
        return function(*args)
    except Exception:
        return _RAISED


def _evaluate(call: CodeType, namespace: dict) -> object:
    try:
        return eval(call, namespace)
    except Exception:
        return _RAISED
