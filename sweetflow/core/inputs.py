"""Reading the files users give us (JSONL rows, YAML parameters): every problem is an `InputError`
naming the file, the line and the field, never a traceback."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import yaml

from sweetflow.core.errors import InputError


class ImportRowError(InputError):
    def __init__(self, path: Path | str, line: int, field: str, problem: str):
        super().__init__(f"{path}: line {line}: field {field!r}: {problem}")


def iter_jsonl(path: Path | str, limit: int | None = None) -> Iterator[tuple[int, dict]]:
    """Yield (line number, object) for each non-blank line; a line that isn't a JSON object is an error."""
    with _open(path) as fh:
        n = 0
        for lineno, raw in enumerate(fh, start=1):
            try:  # line by line, so that bad UTF-8 is named with its line
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ImportRowError(path, lineno, "(line)", f"not valid UTF-8 ({e.reason})") from None
            if not line.strip():
                continue
            if limit is not None and n >= limit:
                return
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise ImportRowError(path, lineno, "(line)", f"not valid JSON: {e.msg}") from None
            if not isinstance(obj, dict):
                raise ImportRowError(path, lineno, "(line)", f"expected a JSON object, got {type(obj).__name__}")
            n += 1
            yield lineno, obj


@dataclass(frozen=True)
class Row:
    """One object of a user's file, read field by field: what is missing or of the wrong kind is an
    `ImportRowError` naming the file, the line and the field."""

    fields: dict
    path: Path | str = "<row>"
    line: int = 0

    def text(self, field: str) -> str:
        """The field's value, a string that is not blank."""
        value = self.fields.get(field)
        if not isinstance(value, str) or not value.strip():
            raise self.error(field, f"expected a non-empty string, got {value!r:.80}")
        return value

    def error(self, field: str, problem: str) -> ImportRowError:
        return ImportRowError(self.path, self.line, field, problem)


def content_id(kind: str, *parts: str) -> str:
    """`kind-<12 hex digits>` from the parts' content (joined by newlines): an imported row has the same
    id in every file that holds it."""
    digest = hashlib.sha1("\n".join(parts).encode()).hexdigest()[:12]
    return f"{kind}-{digest}"


def _open(path: Path | str) -> BinaryIO:
    try:
        return open(path, "rb")
    except OSError as e:  # missing, a directory, unreadable
        raise InputError(f"{path}: cannot be read ({e.strerror})") from None


# Values a YAML file may expand to, aliases (*name) counted at every place they stand: a file of
# nested aliases ("billion laughs") is small on disk and would otherwise be walked, validated and
# printed in full. params.yaml has about 400.
MAX_VALUES = 100_000


class _BoundedLoader(yaml.SafeLoader):
    """yaml.safe_load that refuses a document expanding to more than MAX_VALUES values."""

    def __init__(self, stream, path: Path):
        super().__init__(stream)
        self.path = path

    def get_single_node(self):
        node = super().get_single_node()
        if node is not None and _expanded_size(node, {}) > MAX_VALUES:
            raise InputError(
                f"{self.path}: holds more than {MAX_VALUES:,} values (an alias, *name, counts at every place it stands)"
            )
        return node


def _expanded_size(node: yaml.Node, sizes: dict[int, int]) -> int:
    """How many values `node` stands for once every alias is expanded (memoised: linear in the file)."""
    if id(node) not in sizes:
        sizes[id(node)] = 1  # a node that contains itself counts once
        if isinstance(node, yaml.SequenceNode):
            sizes[id(node)] = 1 + sum(_expanded_size(child, sizes) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            sizes[id(node)] = 1 + sum(_expanded_size(k, sizes) + _expanded_size(v, sizes) for k, v in node.value)
    return sizes[id(node)]


def read_yaml(path: Path | str) -> object:
    """A YAML file's data (safe types only); malformed YAML, bad UTF-8, an integer too long to
    convert and an alias bomb are InputErrors naming the file and line."""
    path = Path(path)
    with _open(path) as fh:
        data = fh.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise InputError(f"{path}: line {line}: not valid UTF-8 ({e.reason})") from None
    loader = _BoundedLoader(text, path)
    try:
        return loader.get_single_data()
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise InputError(f"{path}: {where}not valid YAML: {e.problem or e.context}") from None
    except yaml.YAMLError as e:
        raise InputError(f"{path}: not valid YAML: {e}") from None
    except RecursionError:
        raise InputError(f"{path}: nested too deeply to read") from None
    except InputError:
        raise
    except ValueError as e:  # int('9' * 5000): Python refuses integers of over 4,300 digits
        raise InputError(f"{path}: a value cannot be read: {str(e)[:200]}") from None
    finally:
        loader.dispose()
