#!/usr/bin/env python3
"""The package's import graph in figures: modules and lines per folder, arrows that point
up, circles, modules over the size bound.

    python tools/import_graph.py                 # this checkout
    python tools/import_graph.py --rev 827398d   # a commit, read from git without a checkout

Levels, lowest first: the shared base (``errors``, ``result``, ``options``), the wings, the
pytest flow at the top of the package, the command layer (``cli``). An arrow up is an
import of a higher level (a wing importing the flow or a command), or, inside the oracle, a
question wing (memory, placement, accuracy) importing another question, or the shared
reader and deployment importing a question. Imports inside functions count: they are
arrows all the same. ``tests/test_layout.py`` holds the rules; this prints the figures.
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASE = {"errors", "result", "options"}
ORACLE_SHARED = {"model", "deployment"}
MAX_LINES = 460


def _sources(rev: str | None) -> Iterator[tuple[str, str]]:
    """(path relative to the repository, text) of every module of the package."""
    if rev is None:
        for path in sorted((ROOT / "pytest_stedge").rglob("*.py")):
            yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")
        return
    listing = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev, "pytest_stedge"],
                             cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for name in sorted(n for n in listing.splitlines() if n.endswith(".py")):
        yield name, subprocess.run(["git", "show", f"{rev}:{name}"], cwd=ROOT,
                                   capture_output=True, text=True, check=True).stdout


def import_graph(rev: str | None = None) -> tuple[dict[str, set[str]], dict[str, int]]:
    """Module -> the package modules it imports; module -> its line count. A package is
    named by its folder (``pytest_stedge.oracle``), as ``import`` names it."""
    texts: dict[str, tuple[str, bool]] = {}
    for rel, text in _sources(rev):
        parts = list(Path(rel).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        texts[".".join(parts[:-1] if is_package else parts)] = (text, is_package)
    graph: dict[str, set[str]] = {}
    for name, (text, is_package) in texts.items():
        package = name if is_package else name.rsplit(".", 1)[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in texts]
                found |= set(subs) | ({target} if len(subs) < len(node.names) else set())
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
        graph[name] = {t for t in found if t in texts and t != name}
    return graph, {name: len(text.splitlines()) for name, (text, _) in texts.items()}


def cycle_from(graph: dict[str, set[str]], start: str) -> list[str] | None:
    """A path start -> ... -> start, if one exists (depth-first, iterative)."""
    stack = [(start, [start])]
    seen: set[str] = set()
    while stack:
        node, path = stack.pop()
        for nxt in sorted(graph.get(node, ())):
            if nxt == start:
                return [*path, start]
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, [*path, nxt]))
    return None


def _packages(graph: dict[str, set[str]]) -> set[str]:
    return {m for m in graph if any(o.startswith(m + ".") for o in graph)}


def folder_of(module: str, packages: set[str]) -> str:
    """``pytest_stedge.oracle.memory.floor`` -> ``oracle/memory``; the flow -> ``(top)``."""
    folder = module if module in packages else module.rsplit(".", 1)[0]
    parts = folder.split(".")[1:]
    if not parts:
        return "(top)"
    return "/".join(parts[:2]) if parts[0] == "oracle" else parts[0]


def _level(module: str, packages: set[str]) -> int:
    parts = module.split(".")[1:]
    if not parts or parts[0] in BASE:
        return 0
    if parts[0] == "cli":
        return 3
    return 1 if f"pytest_stedge.{parts[0]}" in packages else 2


def upward(graph: dict[str, set[str]]) -> list[str]:
    """Every arrow that points up (see the module's docstring)."""
    packages = _packages(graph)
    found = []
    for name, targets in graph.items():
        for target in sorted(targets):
            if name != "pytest_stedge" and _level(target, packages) > _level(name, packages):
                found.append(f"{name} -> {target}")
            a, b = name.split("."), target.split(".")
            if (len(a) >= 4 and len(b) >= 3 and a[1] == b[1] == "oracle" and a[2] != b[2]
                    and b[2] not in ORACLE_SHARED):
                found.append(f"{name} -> {target}")
    return sorted(set(found))


def main(argv: list[str] | None = None) -> int:
    """Print the figures of this checkout or of ``--rev``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", help="a git revision to read instead of the working tree")
    args = parser.parse_args(argv)
    graph, lines = import_graph(args.rev)
    packages = _packages(graph)
    modules = Counter(folder_of(m, packages) for m in graph)
    sizes: Counter[str] = Counter()
    for module, n in lines.items():
        sizes[folder_of(module, packages)] += n
    print(f"{len(graph)} modules, {sum(lines.values()):,} lines ({args.rev or 'working tree'})")
    print("| folder | modules | lines | largest |")
    print("|---|---|---|---|")
    for folder in sorted(modules):
        largest = max((m for m in graph if folder_of(m, packages) == folder),
                      key=lambda m: lines[m])
        print(f"| {folder} | {modules[folder]} | {sizes[folder]:,} | "
              f"{largest.rsplit('.', 1)[-1]} ({lines[largest]}) |")
    arrows = upward(graph)
    print(f"arrows up: {len(arrows)}")
    for arrow in arrows:
        print(f"  {arrow}")
    circles = {tuple(sorted(set(c))) for m in sorted(graph) if (c := cycle_from(graph, m))}
    print(f"circles: {len(circles)}")
    for circle in sorted(circles):
        print(f"  {' <-> '.join(circle)}")
    long = sorted((n, m) for m, n in lines.items() if n > MAX_LINES)
    print(f"modules over {MAX_LINES} lines: {len(long)}" + "".join(f"\n  {m} ({n})" for n, m in long))
    return 0


if __name__ == "__main__":
    sys.exit(main())
