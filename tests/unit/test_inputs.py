"""Files users give us that cannot be read as text: named with the file (and line), no traceback."""

from __future__ import annotations

import hashlib
import json
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweetflow.backend.tasks.colbench import task_from_row as backend_task
from sweetflow.cli import main
from sweetflow.core.errors import InputError
from sweetflow.core.inputs import FileLimits, ImportRowError, Row, content_id, iter_jsonl, read_yaml
from sweetflow.frontend.tasks import task_from_row as frontend_task


@given(
    st.lists(
        st.dictionaries(st.text(max_size=3), st.integers(-(2**63), 2**63 - 1), max_size=2), min_size=1, max_size=5
    ),
    st.data(),
)
def test_bad_utf8_in_a_jsonl_line_is_named_with_its_line(tmp_path_factory, rows, data):
    bad = data.draw(st.integers(1, len(rows)))
    lines = [json.dumps(row, ensure_ascii=False).encode() for row in rows]
    lines[bad - 1] = lines[bad - 1][:-1] + b"\xff}"  # a byte no UTF-8 text holds
    path = tmp_path_factory.mktemp("jsonl") / "rows.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(ImportRowError, match=rf"rows.jsonl: line {bad}: field '\(line\)': not valid UTF-8"):
        list(iter_jsonl(path))


def test_a_directory_is_no_file(tmp_path):
    with pytest.raises(InputError, match=r": a directory, not a file to read"):
        list(iter_jsonl(tmp_path))
    with pytest.raises(InputError, match=r": a directory, not a file to read"):
        read_yaml(tmp_path)


def test_the_cli_names_a_directory_given_as_a_file(tmp_path, capsys):
    for args in (["params", "--file", str(tmp_path)], ["import-trajectories", str(tmp_path), "--out", str(tmp_path)]):
        assert main(args) == 2
        assert capsys.readouterr().out == f"error: {tmp_path}: a directory, not a file to read\n"


# --- one row, read field by field (the official task rows of both domains) -----------------------

_NOT_TEXT = st.one_of(
    st.none(),
    st.integers(),
    st.floats(allow_nan=False),
    st.lists(st.text(max_size=3), max_size=2),
    st.text(alphabet=" \t\n", max_size=4),
)


@given(value=_NOT_TEXT, field=st.text(min_size=1, max_size=12), line=st.integers(1, 10_000))
def test_a_field_that_is_not_text_is_named_with_file_and_line(value, field, line):
    row = Row({field: value}, "rows.jsonl", line)
    with pytest.raises(ImportRowError) as err:
        row.text(field)
    assert str(err.value).startswith(f"rows.jsonl: line {line}: field {field!r}: expected a non-empty string")
    with pytest.raises(ImportRowError, match="expected a non-empty string, got None"):
        Row({}, "rows.jsonl", line).text(field)


@given(value=st.text(min_size=1).filter(str.strip))
def test_a_text_field_is_given_back_unchanged(value):
    assert Row({"problem_description": value}).text("problem_description") is value


@given(parts=st.lists(st.text(), min_size=1, max_size=4), kind=st.sampled_from(["colbench", "frontend", "order_total"]))
def test_a_content_id_is_the_kind_and_a_digest_of_the_newline_joined_parts(parts, kind):
    digest = hashlib.sha1("\n".join(parts).encode()).hexdigest()
    assert content_id(kind, *parts) == f"{kind}-{digest[:12]}"
    assert content_id(kind, *parts) != content_id(kind, "\n".join(parts) + "\n")


def test_both_domains_read_an_official_row_through_the_same_row_reader():
    """The backend's and the frontend's task_from_row name a bad field alike, and derive their ids from
    the content the same way (official ids must not move: a trajectory line finds its task by them)."""
    reference, page = "def f(x):\n    return x", "<html><body></body></html>"
    backend_row = {"problem_description": "p", "ground_truth": reference, "test_cases": {"test1": "f(1)"}}
    frontend_row = {"problem_description": "Bakery: warm.", "ground_truth": page}
    assert backend_task(backend_row)["task_id"] == content_id("colbench", reference, "f(1)")
    assert frontend_task(frontend_row)["task_id"] == content_id("colbench", "Bakery: warm.", page)
    blank = r"^in.jsonl: line 7: field 'ground_truth': expected a non-empty string"
    for read, row in ((backend_task, backend_row), (frontend_task, frontend_row)):
        with pytest.raises(ImportRowError, match=blank):
            read({**row, "ground_truth": "  "}, "in.jsonl", 7)


# --- every JSONL reader, fed anything ---------------------------------------------------------------

# The fields the readers look for, so that the generated objects reach past the first check.
FIELDS = [
    "task",
    "answer",
    "reward",
    "dialogue_history",
    "role",
    "content",
    "input",
    "output",
    "problem_description",
    "ground_truth",
    "test_cases",
    "hidden_information",
]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=3), inner),
    max_leaves=15,
)
lines = st.one_of(
    st.binary(max_size=120),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=6).map(lambda v: json.dumps(v).encode()),
)
BOUNDS = FileLimits(max_file_bytes=1 << 20, max_line_bytes=1 << 12, max_depth=16)


def readers(path: Path) -> dict:
    """Every reader of a user's JSONL, bounded as params.yaml's `inputs` bounds them."""
    from sweetflow.backend.scorefile import read_trajectories
    from sweetflow.backend.tasks.colbench import read_backend_jsonl
    from sweetflow.colbench import import_official
    from sweetflow.frontend.scorefile import read_frontend_trajectories
    from sweetflow.frontend.tasks import read_frontend_jsonl

    return {
        "iter_jsonl": lambda: list(iter_jsonl(path, bounds=BOUNDS)),
        "backend tasks": lambda: read_backend_jsonl(path, bounds=BOUNDS),
        "frontend tasks": lambda: read_frontend_jsonl(path, bounds=BOUNDS),
        "import-trajectories": lambda: import_official(path, BOUNDS),
        "score, backend": lambda: read_trajectories(path, BOUNDS),
        "score, frontend": lambda: read_frontend_trajectories(path, BOUNDS),
    }


@settings(max_examples=150, deadline=None)
@given(st.lists(lines, max_size=6))
def test_any_bytes_give_every_reader_rows_or_one_input_error(tmp_path_factory, drawn):
    path = tmp_path_factory.mktemp("any") / "rows.jsonl"
    path.write_bytes(b"\n".join(drawn))
    for name, read in readers(path).items():
        try:
            read()
        except InputError as e:
            assert str(e).startswith(str(path)) and "\n" not in str(e), (name, str(e))


def test_a_line_past_the_bound_is_refused_without_reading_it_whole(tmp_path):
    path = tmp_path / "long.jsonl"
    with path.open("wb") as fh:  # one 64 MB line: the bound is 4 KB
        fh.write(b'{"answer": "' + b"x" * (64 << 20) + b'"}\n')
    tracemalloc.start()
    with pytest.raises(ImportRowError, match=r"long.jsonl: line 1: field '\(line\)': longer than 4,096 bytes"):
        list(iter_jsonl(path, bounds=BOUNDS.model_copy(update={"max_file_bytes": 1 << 30})))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 1 << 20, peak
    with pytest.raises(InputError, match=r"long.jsonl: 67,108,879 bytes, more than inputs.max_file_bytes"):
        list(iter_jsonl(path, bounds=BOUNDS))
