"""Reading the files users give us (JSONL rows, YAML parameters): every problem is an `InputError`
naming the file, the line and the field, never a traceback.

A JSONL file is read with bounds (`FileLimits`, params section `inputs`): only a regular file (a device such
as /dev/zero, a named pipe or a socket is refused by name before it is opened for reading, since reading one
has no end or blocks for ever), at most `max_file_bytes` in all and `max_line_bytes` a line, objects nested
at most `max_depth` deep, and every value one a table can hold: integers that fit 64 bits, finite floats
(JSON's NaN and Infinity are refused), strings that are valid Unicode (no lone surrogate).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import yaml
from pydantic import BaseModel, ConfigDict, Field

from sweetflow.core.errors import InputError


class FileLimits(BaseModel):
    """Bounds on the JSONL files users give the pipeline (ColBench task files, offline trajectories, rows to
    score): a file past one is refused with its name, line and field before anything is written."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_file_bytes: int = Field(
        gt=0, description="The largest file read, in bytes (the official 15,000 offline trajectories are under 1 GiB)."
    )
    max_line_bytes: int = Field(
        gt=0,
        description="The longest line, in bytes (an official trajectory line is tens of KB). A line is read no further "
        "than this, so memory stays bounded whatever the file holds.",
    )
    max_depth: int = Field(gt=0, description="How deeply objects and lists may nest in a line (a trajectory: 4).")


INT64 = 2**63


class ImportRowError(InputError):
    def __init__(self, path: Path | str, line: int, field: str, problem: str):
        field = field if len(field) <= 120 else f"{field[:117]}..."  # a path through deep nesting
        super().__init__(f"{path}: line {line}: field {field!r}: {problem}")


def iter_jsonl(
    path: Path | str, limit: int | None = None, bounds: FileLimits | None = None
) -> Iterator[tuple[int, dict]]:
    """Yield (line number, object) for each non-blank line, within `bounds` (params `inputs`; None: no size or depth
    bound); a line that isn't a JSON object, or holds a value no table can hold, is an error naming its line (and
    field)."""
    max_line = bounds.max_line_bytes if bounds else None
    with open_regular(path, bounds) as fh:
        n = 0
        for lineno in itertools.count(1):
            raw = fh.readline(max_line + 1 if max_line else -1)
            if not raw:
                return
            if max_line and len(raw) > max_line and not raw.endswith(b"\n"):
                raise ImportRowError(
                    path, lineno, "(line)", f"longer than {bounds.max_line_bytes:,} bytes (inputs.max_line_bytes)"
                )
            try:  # line by line, so that bad UTF-8 is named with its line
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ImportRowError(path, lineno, "(line)", f"not valid UTF-8 ({e.reason})") from None
            if not line.strip():
                continue
            if limit is not None and n >= limit:
                return
            obj = _parse(line, path, lineno, bounds.max_depth if bounds else None)
            if not isinstance(obj, dict):
                raise ImportRowError(path, lineno, "(line)", f"expected a JSON object, got {type(obj).__name__}")
            n += 1
            yield lineno, obj


def _parse(line: str, path: Path | str, lineno: int, max_depth: int | None) -> object:
    """One line's JSON value, every value checked (`_check`); an error names the line and the field."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as e:
        raise ImportRowError(path, lineno, "(line)", f"not valid JSON: {e.msg}") from None
    except RecursionError:
        raise ImportRowError(path, lineno, "(line)", "nested too deeply to read (inputs.max_depth)") from None
    except ValueError as e:  # an integer of over 4,300 digits, which Python refuses to convert
        raise ImportRowError(path, lineno, "(line)", f"not a value a table can hold: {str(e)[:120]}") from None
    _check(obj, path, lineno, max_depth)
    return obj


def _check(
    value: object, path: Path | str, lineno: int, max_depth: int | None, field: str = "", depth: int = 0
) -> None:
    """Refuse what no table can hold, naming its field: nesting past `max_depth`, an integer past 64 bits, a
    float that is not finite, a string with a lone surrogate (valid JSON, not valid Unicode)."""
    if max_depth is not None and depth > max_depth:
        raise ImportRowError(path, lineno, field or "(line)", f"nested more than {max_depth} deep (inputs.max_depth)")
    if isinstance(value, dict):
        for key, item in value.items():
            name = key.encode("utf-8", "backslashreplace").decode()[:40]  # printable, whatever the key holds
            inner = f"{field}.{name}" if field else name
            _check_text(key, path, lineno, inner)
            _check(item, path, lineno, max_depth, inner, depth + 1)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check(item, path, lineno, max_depth, f"{field}[{i}]", depth + 1)
    elif isinstance(value, str):
        _check_text(value, path, lineno, field or "(line)")
    elif isinstance(value, bool):
        pass
    elif isinstance(value, int) and not -INT64 <= value < INT64:
        raise ImportRowError(path, lineno, field or "(line)", "an integer too large for a table (64 bits)")
    elif isinstance(value, float) and not math.isfinite(value):  # JSON's NaN and Infinity, or 1e999
        raise ImportRowError(path, lineno, field or "(line)", f"{value} is not a finite number")


def _check_text(text: str, path: Path | str, lineno: int, field: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ImportRowError(path, lineno, field, "a string with a lone UTF-16 surrogate (not valid Unicode)") from None


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


# What a path may be instead of a regular file, as an error names it.
_NOT_REGULAR = {
    stat.S_ISDIR: "a directory",
    stat.S_ISCHR: "a character device",
    stat.S_ISBLK: "a block device",
    stat.S_ISFIFO: "a named pipe",
    stat.S_ISSOCK: "a socket",
}


def open_regular(path: Path | str, bounds: FileLimits | None = None) -> BinaryIO:
    """`path` opened for reading if it is a regular file (through any links) of at most `bounds.max_file_bytes`
    (None: any size):
    checked before opening (opening a named pipe blocks until a writer comes) and again on what was opened."""
    try:
        info = os.stat(path)
    except OSError as e:
        raise InputError(f"{path}: cannot be read ({e.strerror})") from None
    _regular(path, info, bounds)
    try:  # O_NONBLOCK: should the path have become a pipe since, opening it does not wait for a writer
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        raise InputError(f"{path}: cannot be read ({e.strerror})") from None
    try:
        _regular(path, os.fstat(fd), bounds)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def file_kind(path: Path | str) -> str:
    """What a path is, as an error names it: "a regular file", "a named pipe", "a character device", ..."""
    mode = os.stat(path).st_mode
    return "a regular file" if stat.S_ISREG(mode) else _kind(mode)


def _kind(mode: int) -> str:
    return next((name for test, name in _NOT_REGULAR.items() if test(mode)), "not a regular file")


def _regular(path: Path | str, info: os.stat_result, bounds: FileLimits | None) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise InputError(f"{path}: {_kind(info.st_mode)}, not a file to read")
    if bounds and info.st_size > bounds.max_file_bytes:
        raise InputError(f"{path}: {info.st_size:,} bytes, more than inputs.max_file_bytes ({bounds.max_file_bytes:,})")


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
    with open_regular(path) as fh:
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
