"""Files users give us that cannot be read as text: named with the file (and line), no traceback."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sweetflow.cli import main
from sweetflow.errors import InputError
from sweetflow.inputs import ImportRowError, iter_jsonl, read_yaml


@given(st.lists(st.dictionaries(st.text(max_size=3), st.integers(), max_size=2), min_size=1, max_size=5), st.data())
def test_bad_utf8_in_a_jsonl_line_is_named_with_its_line(tmp_path_factory, rows, data):
    bad = data.draw(st.integers(1, len(rows)))
    lines = [json.dumps(row, ensure_ascii=False).encode() for row in rows]
    lines[bad - 1] = lines[bad - 1][:-1] + b"\xff}"  # a byte no UTF-8 text holds
    path = tmp_path_factory.mktemp("jsonl") / "rows.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(ImportRowError, match=rf"rows.jsonl: line {bad}: field '\(line\)': not valid UTF-8"):
        list(iter_jsonl(path))


def test_a_directory_is_no_file(tmp_path):
    with pytest.raises(InputError, match=r": cannot be read \(Is a directory\)"):
        list(iter_jsonl(tmp_path))
    with pytest.raises(InputError, match=r": cannot be read \(Is a directory\)"):
        read_yaml(tmp_path)


def test_the_cli_names_a_directory_given_as_a_file(tmp_path, capsys):
    for args in (["params", "--file", str(tmp_path)], ["import-trajectories", str(tmp_path), "--out", str(tmp_path)]):
        assert main(args) == 2
        assert capsys.readouterr().out == f"error: {tmp_path}: cannot be read (Is a directory)\n"
