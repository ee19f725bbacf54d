"""The procedural task generator and its families.

References are executed here with plain exec/eval, independently of the generator's own checks.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
import keyword
import os
import re
import string
import subprocess
import sys
from collections import Counter, defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweetflow.backend.tasks.families import FAMILIES, FAMILIES_BY_NAME
from sweetflow.backend.tasks.procedural import generate_tasks, render_reference
from sweetflow.backend.tasks.themes.scores import LETTER_GRADE

RECORD_KEYS = {
    "task_id",
    "family",
    "function_name",
    "signature",
    "problem_description",
    "ground_truth",
    "template",
    "test_cases",
    "facts",
}
FACT_KEYS = {"parameter", "topic", "fact", "value", "guess"}
FAMILY_NAMES = [family.name for family in FAMILIES]
RAISED = "<raised>"  # stands for an exception among test outputs


class NameTemplate(string.Template):
    """The `@fn` / `@<role>` placeholders of family texts."""

    delimiter = "@"


@pytest.fixture(scope="module")
def splits() -> tuple[list[dict], list[dict]]:
    return generate_tasks(n_train=600, n_test=200, seed=7)


@pytest.fixture(scope="module")
def by_family(splits) -> dict[str, list[dict]]:
    grouped = defaultdict(list)
    for task in splits[0] + splits[1]:
        grouped[task["family"]].append(task)
    return grouped


def load(code: str) -> dict:
    namespace: dict = {}
    exec(code, namespace)
    return namespace


def run_tests(code: str, test_cases: list[str]) -> list[object]:
    namespace = load(code)
    outputs = []
    for call in test_cases:
        try:
            outputs.append(eval(call, namespace))
        except Exception:
            outputs.append(RAISED)
    return outputs


def is_plain(value: object) -> bool:
    if type(value) in (list, tuple):
        return all(map(is_plain, value))
    if type(value) is dict:
        return all(is_plain(k) and is_plain(v) for k, v in value.items())
    return type(value) in (bool, int, float, str)


def true_values(task: dict) -> dict[str, object]:
    return {fact["parameter"]: ast.literal_eval(fact["value"]) for fact in task["facts"]}


# --- determinism and splits ------------------------------------------------------------------


def test_same_seed_gives_same_tasks():
    assert generate_tasks(30, 10, seed=1) == generate_tasks(30, 10, seed=1)


def test_different_seeds_give_different_tasks():
    first, second = generate_tasks(30, 10, seed=1), generate_tasks(30, 10, seed=2)
    assert {t["ground_truth"] for t in first[0]} != {t["ground_truth"] for t in second[0]}
    assert [t["task_id"] for t in first[1]] != [t["task_id"] for t in second[1]]


@settings(max_examples=10, deadline=None)
@given(test_seed=st.integers(min_value=1, max_value=2**31))
def test_another_test_seed_draws_fresh_test_tasks_beside_the_same_training_tasks(test_seed):
    train, test = generate_tasks(60, 20, seed=0)
    same_train, other_test = generate_tasks(60, 20, seed=0, test_seed=test_seed)
    assert same_train == train
    assert len(other_test) == 20
    assert not {t["ground_truth"] for t in other_test} & {t["ground_truth"] for t in train + test}
    assert generate_tasks(60, 20, seed=0, test_seed=0) == (train, test)


def test_output_does_not_depend_on_string_hashing():
    script = (
        "import json; from sweetflow.backend.tasks.procedural import generate_tasks;"
        "train, test = generate_tasks(20, 10, seed=5);"
        "print(json.dumps([t['task_id'] for t in train + test]))"
    )
    runs = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        runs.append(json.loads(result.stdout))
    train, test = generate_tasks(20, 10, seed=5)
    assert runs[0] == runs[1] == [t["task_id"] for t in train + test]


def test_no_duplicate_references_within_or_across_splits(splits):
    train, test = splits
    assert (len(train), len(test)) == (600, 200)
    references = [t["ground_truth"] for t in train + test]
    assert len(set(references)) == len(references)
    assert len({t["task_id"] for t in train + test}) == len(references)


def test_every_split_has_every_family_evenly(splits):
    for tasks in splits:
        counts = Counter(t["family"] for t in tasks)
        assert set(counts) == set(FAMILY_NAMES)
        assert max(counts.values()) - min(counts.values()) <= 1


def test_family_selection():
    train, test = generate_tasks(6, 4, seed=3, families=["letter_grade", "is_open"])
    assert {t["family"] for t in train} == {t["family"] for t in test} == {"letter_grade", "is_open"}
    with pytest.raises(ValueError, match="unknown task families"):
        generate_tasks(1, 1, seed=3, families=["no_such_family"])


def test_a_family_with_a_parameter_that_never_matters_is_reported(monkeypatch):
    template = LETTER_GRADE.template.replace("${d_cutoff}", "60")
    broken = dataclasses.replace(LETTER_GRADE, name="broken", template=template)
    monkeypatch.setitem(FAMILIES_BY_NAME, "broken", broken)
    with pytest.raises(RuntimeError, match="'broken' failed .*'d_cutoff'"):
        generate_tasks(0, 1, seed=0, families=["broken"])


def test_a_used_up_family_is_reported(monkeypatch):
    tiny = dataclasses.replace(LETTER_GRADE, name="tiny", function_names=("grade",), arguments={"score": ("score",)})
    monkeypatch.setitem(FAMILIES_BY_NAME, "tiny", tiny)
    assert tiny.capacity == 256
    with pytest.raises(RuntimeError, match="'tiny' is used up"):
        generate_tasks(0, 300, seed=0, families=["tiny"])


@pytest.mark.slow
def test_full_capacity_without_duplicates():
    train, test = generate_tasks(n_train=10_000, n_test=1_000, seed=0)
    references = [t["ground_truth"] for t in train + test]
    assert (len(train), len(test)) == (10_000, 1_000)
    assert len(set(references)) == len(references)
    assert {t["family"] for t in test} == set(FAMILY_NAMES)


# --- the records ---------------------------------------------------------------------------------


def test_record_shape(splits):
    for task in splits[0][:50] + splits[1][:50]:
        assert set(task) == RECORD_KEYS
        digest = hashlib.sha1((task["ground_truth"] + "\n".join(task["test_cases"])).encode()).hexdigest()[:12]
        assert task["task_id"] == f"{task['family']}-{digest}"
        assert task["signature"].startswith(f"def {task['function_name']}(")
        assert render_reference(task["template"], true_values(task)) == task["ground_truth"]
        for fact in task["facts"]:
            assert set(fact) == FACT_KEYS
            assert all(isinstance(fact[key], str) for key in FACT_KEYS)
            assert fact["value"] != fact["guess"]
        assert json.loads(json.dumps(task)) == task  # plain data all the way down


@pytest.mark.parametrize("family_name", FAMILY_NAMES)
def test_family_tasks_are_well_formed(by_family, family_name):
    tasks = by_family[family_name]
    assert len(tasks) >= 20
    for task in tasks:
        reference, name = task["ground_truth"], task["function_name"]
        assert len(reference.splitlines()) <= 50
        compile(reference, "<reference>", "exec")
        assert task["problem_description"].endswith(f"The signature of the function is: {task['signature']}")
        assert f"def {name}(" in reference

        calls = task["test_cases"]
        assert len(calls) == len(set(calls)) == 10
        for call in calls:
            node = ast.parse(call, mode="eval").body
            assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name
            for arg in node.args:
                ast.literal_eval(arg)  # literal arguments only
            assert not node.keywords

        outputs = run_tests(reference, calls)
        assert all(output is not None and output != RAISED and is_plain(output) for output in outputs), outputs


def _spellings(value: object) -> list[str]:
    """How a hidden value would show up if a description leaked it."""
    if isinstance(value, (tuple, list)):
        return [spelling for item in value for spelling in _spellings(item)]
    if isinstance(value, str):
        return [repr(value)]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if abs(value) >= 10:
            return [repr(value)]
        if 0 < abs(value) < 1:
            return [f"{value * 100:g}%"]
    return []


@pytest.mark.parametrize("family_name", FAMILY_NAMES)
def test_descriptions_do_not_reveal_hidden_values(by_family, family_name):
    for task in by_family[family_name]:
        description = task["problem_description"]
        for fact in task["facts"]:
            for spelling in _spellings(ast.literal_eval(fact["value"])):
                assert not re.search(rf"(?<![\w.]){re.escape(spelling)}(?![\w%])", description), (spelling, description)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), family_name=st.sampled_from(FAMILY_NAMES))
def test_every_hidden_parameter_matters(seed, family_name):
    (task,) = generate_tasks(0, 1, seed=seed, families=[family_name])[1]
    values = true_values(task)
    expected = run_tests(task["ground_truth"], task["test_cases"])
    for fact in task["facts"]:
        guessed = render_reference(task["template"], {**values, fact["parameter"]: ast.literal_eval(fact["guess"])})
        assert run_tests(guessed, task["test_cases"]) != expected, f"guessing {fact['parameter']} changes nothing"


# --- the registry --------------------------------------------------------------------------------


def test_registry_size_and_variety():
    assert len(FAMILIES) >= 22
    assert len(set(FAMILY_NAMES)) == len(FAMILIES) == len(FAMILIES_BY_NAME)
    assert len({family.domain for family in FAMILIES}) >= 20


@pytest.mark.parametrize("family", FAMILIES, ids=FAMILY_NAMES)
def test_family_definition(family):
    assert 2 <= len(family.params) <= 5
    assert family.capacity >= 1000, "the family cannot supply its share of 11,000 distinct tasks"
    param_names = [p.name for p in family.params]
    assert set(string.Template(family.template).get_identifiers()) == set(param_names)
    assert set(NameTemplate(family.template).get_identifiers()) == {"fn", *family.arguments}
    assert set(NameTemplate(family.request).get_identifiers()) == set(family.arguments)
    assert len({p.topic for p in family.params}) == len(family.params)

    # Argument and function names must be usable and must not shadow names the code relies on.
    code_without_placeholders = re.sub(r"@\{?\w+\}?", "", family.template)
    alternatives = [name for names in family.arguments.values() for name in names] + list(family.function_names)
    assert len(set(alternatives)) == len(alternatives)
    for name in alternatives:
        assert name.isidentifier() and not keyword.iskeyword(name)
        assert not re.search(rf"\b{name}\b", code_without_placeholders), name

    for param in family.params:
        assert param.guess not in param.choices
        assert len(param.choices) >= 2
        for value in param.choices:
            fact = param.fact_for(value)
            assert fact.endswith(".") and "{" not in fact
            assert _fact_states(fact, value), (fact, value)

    names = {role: alternatives[0] for role, alternatives in family.arguments.items()}
    template = family.fill_names(family.template, family.function_names[0], names)
    compile(render_reference(template, {p.name: p.guess for p in family.params}), "<all guesses>", "exec")


def _fact_states(fact: str, value: object) -> bool:
    """Whether the fact spells out the value exactly, so the code can be written from it."""
    if isinstance(value, tuple):
        return all(repr(item) in fact for item in value)
    if isinstance(value, str):
        return value in fact or all(repr(char) in fact for char in value)
    spellings = {str(value), f"{value:g}", f"{value:.2f}", f"{value:+}", f"{value * 100:g}%"}
    return any(spelling in fact for spelling in spellings)


def test_render_reference_substitutes_reprs():
    template = "def f(x):\n    return x * ${rate} + len(${words}) if x != ${name} else ${flag}\n"
    code = render_reference(template, {"rate": 0.5, "words": ("a", "b"), "name": "it's", "flag": True})
    assert code == "def f(x):\n    return x * 0.5 + len(('a', 'b')) if x != \"it's\" else True\n"
    with pytest.raises(KeyError):
        render_reference(template, {"rate": 0.5})
