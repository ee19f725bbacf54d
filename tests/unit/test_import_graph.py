"""The import graph of the project's code, file by file (imports at a module's top or inside a
function alike): no cycle, and no import that runs up the layers: `sweetflow/core` imports only
itself, the library never imports a stage, and one domain's package never imports another's. Folded
into one node per package (`sweetflow/backend`, `sweetflow/rl`, ...), the graph has no cycle either:
a package as a whole sits on one layer."""

from __future__ import annotations

import ast
from pathlib import Path

from sweetflow.core.params import DOMAINS
from tests.support.project import ROOT


def module_file(name: str) -> Path | None:
    base = ROOT.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def imports(path: Path) -> set[Path]:
    """The project's files that `path` imports (`from a.b import c`: a/b/c.py where c is a module, else a/b.py)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
        else:
            continue
        for name in names:
            if name.split(".")[0] in ("sweetflow", "stages") and (file := module_file(name)):
                found.add(file.relative_to(ROOT))
                break  # the first name that is a module: `c` of `from a.b import c`, else a.b
    return found


GRAPH = {
    path.relative_to(ROOT): imports(path)
    for folder in ("sweetflow", "stages")
    for path in sorted((ROOT / folder).rglob("*.py"))
}


def cycle_in(graph: dict[Path, set[Path]]) -> list[Path] | None:
    """A cycle of `graph` (its files in order, the first again at the end), or None."""
    done: set[Path] = set()

    def visit(node: Path, trail: list[Path]) -> list[Path] | None:
        if node in trail:
            return trail[trail.index(node) :] + [node]
        if node in done:
            return None
        for target in sorted(graph.get(node, ())):
            if cycle := visit(target, [*trail, node]):
                return cycle
        done.add(node)
        return None

    return next((cycle for node in graph if (cycle := visit(node, []))), None)


def test_the_import_graph_has_no_cycle():
    a, b, c = Path("a.py"), Path("b.py"), Path("c.py")
    assert cycle_in({a: {b}, b: {c}, c: {a}}) == [a, b, c, a] and cycle_in({a: {b, c}, b: {c}}) is None
    cycle = cycle_in(GRAPH)
    assert cycle is None, "import cycle: " + " -> ".join(p.as_posix() for p in cycle)


def folded(graph: dict[Path, set[Path]]) -> dict[Path, set[Path]]:
    """`graph` with each package under sweetflow/ one node (its folder), imports within it left out."""

    def node(path: Path) -> Path:
        return Path(*path.parts[:2]) if path.parts[0] == "sweetflow" and len(path.parts) > 2 else path

    nodes: dict[Path, set[Path]] = {}
    for source, targets in graph.items():
        nodes.setdefault(node(source), set()).update(node(t) for t in targets if node(t) != node(source))
    return nodes


def test_each_package_sits_on_one_layer():
    """A domain's code takes its own params section, so that the assembler of params.yaml
    (sweetflow/params.py) imports the domain packages and not the other way round."""
    a, b, top = Path("sweetflow/d/a.py"), Path("sweetflow/d/b.py"), Path("sweetflow/top.py")
    assert cycle_in(folded({a: {top}, top: {b}})) == [Path("sweetflow/d"), top, Path("sweetflow/d")]
    cycle = cycle_in(folded(GRAPH))
    assert cycle is None, "packages import each other: " + " -> ".join(p.as_posix() for p in cycle)


def test_no_import_runs_up_the_layers():
    upward = []
    for source, targets in GRAPH.items():
        for target in targets:
            parts, to = source.parts, target.parts
            if parts[:2] == ("sweetflow", "core") and to[:2] != ("sweetflow", "core"):
                upward.append((source, target))
            if parts[0] == "sweetflow" and to[0] == "stages":
                upward.append((source, target))
            if parts[1:2] != to[1:2] and parts[1] in DOMAINS and to[1] in DOMAINS:
                upward.append((source, target))
    assert not upward, [f"{s.as_posix()} -> {t.as_posix()}" for s, t in upward]


def test_the_graph_reads_the_imports_it_checks():
    """The checks above see what they check: the stages' preamble imports params, core imports itself."""
    assert Path("sweetflow/params.py") in GRAPH[Path("sweetflow/stage.py")]
    assert Path("sweetflow/core/errors.py") in GRAPH[Path("sweetflow/core/params.py")]
