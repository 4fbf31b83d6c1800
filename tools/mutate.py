#!/usr/bin/env python3
"""Mutation testing of the modules that decide verdicts: how many small bugs do the tests catch?

    python tools/mutate.py                       # every module in SELECTION, 2 workers
    python tools/mutate.py expect gate -j 1      # some modules (names as in SELECTION)
    python tools/mutate.py compare --list           # the mutants, without running anything
    python tools/mutate.py compare --only 12,40     # rerun some mutants (numbers from a report)

Each mutant is one small change to one line of a module (a comparison flipped at its
edge, ``*`` for ``/``, a constant moved by one, a condition negated, a statement dropped,
a return value replaced by None ...). The module's selected tests run against it in a scratch
copy of the project (``PYTHONPATH`` points there, so subprocesses the tests start see the
mutant too); a failing test run kills the mutant, a run past the time limit kills it as a
hang. A mutant that survives is either a gap in the tests or equivalent (no test could
tell it apart); ``tools/mutation_equivalent.toml`` lists the ones judged equivalent, with
why, and they leave the score's denominator.

The report (``--out``, default ``.stedge/mutation/``) has one JSON file per module and a
summary table printed at the end. Our own AST mutator, not mutmut or cosmic-ray: it needs
no configuration of the package layout, leaves the working tree alone, and its operators
are listed here in one place.
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# module -> the tests that should notice a change to it (fast unit tests first: ``-x`` stops
# at the first failure, so a killed mutant costs little).
SELECTION: dict[str, tuple[str, list[str]]] = {
    "expect": ("pytest_stedge/verdict/expect.py", ["tests/test_expect.py", "tests/test_gate.py"]),
    "gate": ("pytest_stedge/verdict/gate.py", ["tests/test_gate.py", "tests/test_gate_user.py"]),
    "compare": (
        "pytest_stedge/verdict/compare.py",
        ["tests/test_diff.py", "tests/test_diff_bands.py", "tests/test_cli_diff.py"],
    ),
    "classify": (
        "pytest_stedge/verdict/classify.py",
        ["tests/test_classify.py", "tests/test_diff.py", "tests/test_parse_exact_figures.py"],
    ),
    "identity": (
        "pytest_stedge/verdict/identity.py",
        ["tests/test_gate.py", "tests/test_diff.py", "tests/test_change_counts.py"],
    ),
    "bug_verdict": (
        "pytest_stedge/bugs/verdict.py",
        ["tests/test_bug_verdict.py", "tests/test_html_reports.py"],
    ),
    "bands": (
        "pytest_stedge/verdict/bands.py",
        ["tests/test_diff_bands.py", "tests/test_diff.py", "tests/test_cli_diff.py"],
    ),
    "store_diff": (
        "pytest_stedge/verdict/store_diff.py",
        ["tests/test_diff.py", "tests/test_cli_diff.py", "tests/test_diff_bands.py"],
    ),
    "signature": (
        "pytest_stedge/bugs/signature.py",
        ["tests/test_signature.py", "tests/test_bugs.py", "tests/test_bug_edges.py"],
    ),
    "grammar": (
        "pytest_stedge/bugs/grammar.py",
        ["tests/test_signature.py", "tests/test_bug_edges.py"],
    ),
    "tokens": (
        "pytest_stedge/bugs/tokens.py",
        ["tests/test_signature.py", "tests/test_bug_edges.py"],
    ),
    "registry": (
        "pytest_stedge/bugs/registry.py",
        ["tests/test_bugs.py", "tests/test_bug_edges.py"],
    ),
    "ddmin": ("pytest_stedge/bisect/ddmin.py", ["tests/test_bisect_units.py"]),
    "bisect_options": ("pytest_stedge/bisect/options.py", ["tests/test_bisect_units.py"]),
    "epoch_layout": ("pytest_stedge/oracle/accuracy/epoch_layout.py", ["tests/test_epoch_layout.py"]),
    "liveness": (
        "pytest_stedge/oracle/memory/liveness.py",
        ["tests/test_oracle_liveness.py", "tests/test_oracle_memory.py"],
    ),
    "floor": (
        "pytest_stedge/oracle/memory/floor.py",
        ["tests/test_oracle_floor.py", "tests/test_oracle_floor_properties.py",
         "tests/test_oracle_memory.py", "tests/test_oracle_tflite_types.py",
         "tests/test_oracle_float_weights.py"],
    ),
    "opclass": (
        "pytest_stedge/oracle/memory/opclass.py",
        ["tests/test_oracle_floor.py", "tests/test_oracle_floor_properties.py",
         "tests/test_oracle_memory.py"],
    ),
    "explain_parts": (
        "pytest_stedge/oracle/memory/explain_parts.py",
        ["tests/test_oracle_cinfo_measure.py", "tests/test_oracle_cinfo.py"],
    ),
    "tool_buffers": (
        "pytest_stedge/oracle/memory/tool_buffers.py",
        ["tests/test_oracle_cinfo.py"],
    ),
    "pools": (
        "pytest_stedge/oracle/memory/pools.py",
        ["tests/test_oracle_pools.py", "tests/test_oracle_expected.py"],
    ),
    "metrics": (
        "pytest_stedge/oracle/accuracy/metrics.py",
        ["tests/test_oracle_metrics.py", "tests/test_oracle_metric_edges.py"],
    ),
    "c_info": (
        "pytest_stedge/parsers/c_info.py",
        ["tests/test_parse_samples.py", "tests/test_parsers_real_cases.py"],
    ),
    "report_n6": (
        "pytest_stedge/parsers/report_n6.py",
        ["tests/test_parse_samples.py", "tests/test_parsers_real_cases.py"],
    ),
    "pool_split": (
        "pytest_stedge/parsers/pool_split.py",
        ["tests/test_parse_shared_pools.py", "tests/test_parse_samples.py"],
    ),
    "text_runs": (
        "pytest_stedge/parsers/text_runs.py",
        ["tests/test_text_runs.py", "tests/test_parsers_real_cases.py"],
    ),
    "placement": (
        "pytest_stedge/oracle/placement/predict.py",
        ["tests/test_placement_plan.py", "tests/test_placement_attributes.py",
         "tests/test_placement.py"],
    ),
    "placement_attributes": (
        "pytest_stedge/oracle/placement/attributes.py",
        ["tests/test_placement_attributes.py", "tests/test_placement.py"],
    ),
    "epoch_kinds": (
        "pytest_stedge/parsers/epoch_kinds.py",
        ["tests/test_epoch_kinds.py", "tests/test_placement_views.py", "tests/test_placement.py"],
    ),
    "verdict_placement": (
        "pytest_stedge/verdict/placement.py",
        ["tests/test_epoch_kinds.py", "tests/test_placement_views.py", "tests/test_placement.py"],
    ),
}

EQUIVALENT_FILE = ROOT / "tools" / "mutation_equivalent.toml"

_CMP_SWAP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In,
    ast.Is: ast.IsNot, ast.IsNot: ast.Is,
}
_BIN_SWAP: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div, ast.Mod: ast.FloorDiv, ast.Pow: ast.Mult,
    ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd, ast.LShift: ast.RShift, ast.RShift: ast.LShift,
}
_SYMBOL = {
    ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
    ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not", ast.Add: "+",
    ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**",
    ast.BitAnd: "&", ast.BitOr: "|", ast.LShift: "<<", ast.RShift: ">>", ast.And: "and",
    ast.Or: "or",
}


@dataclass
class Mutant:
    """One change to one line."""

    number: int
    line: int
    what: str  # e.g. "`<` -> `<=`"
    source_line: str
    function: str
    status: str = "pending"  # killed | survived | timeout | equivalent | error
    seconds: float = 0.0


class _Points(ast.NodeVisitor):
    """Walk a module and list every mutation point as (node path, description) in a fixed order."""

    def __init__(self) -> None:
        self.points: list[tuple[ast.AST, str, str]] = []  # (node, kind, description)
        self._function: list[str] = []
        self.functions: dict[int, str] = {}

    # -- what is never mutated: docstrings, annotations, type-checking blocks, asserts --------

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._function.append(node.name)
        for stmt in _body_without_docstring(node.body):
            self.visit(stmt)
        for default in node.args.defaults + [d for d in node.args.kw_defaults if d]:
            self.visit(default)
        self._function.pop()

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._function.append(node.name)
        for stmt in _body_without_docstring(node.body):
            if isinstance(stmt, ast.AnnAssign) and stmt.value is None:
                continue
            self.visit(stmt)
        self._function.pop()

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)

    def visit_arg(self, node: ast.arg) -> None:
        return

    def visit_Assert(self, node: ast.Assert) -> None:
        return  # type narrowing for mypy; not behaviour

    def visit_If(self, node: ast.If) -> None:
        if isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            return
        self._add(node, "negate-if", "`if c` -> `if not c`")
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        return

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        return

    def visit_Module(self, node: ast.Module) -> None:
        for stmt in _body_without_docstring(node.body):
            if isinstance(stmt, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in stmt.targets
            ):
                continue
            self.visit(stmt)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                self.visit(value.value)  # the expression, not its format spec

    # -- the operators ------------------------------------------------------------------

    def visit_Compare(self, node: ast.Compare) -> None:
        for i, op in enumerate(node.ops):
            swap = _CMP_SWAP.get(type(op))
            if swap:
                self._add(node, f"cmp:{i}", f"`{_SYMBOL[type(op)]}` -> `{_SYMBOL[swap]}`")
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        swap = _BIN_SWAP.get(type(node.op))
        if swap and not _is_string_format(node):
            self._add(node, "bin", f"`{_SYMBOL[type(node.op)]}` -> `{_SYMBOL[swap]}`")
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        swap = _BIN_SWAP.get(type(node.op))
        if swap:
            self._add(node, "aug", f"`{_SYMBOL[type(node.op)]}=` -> `{_SYMBOL[swap]}=`")
        self.generic_visit(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        other = "or" if isinstance(node.op, ast.And) else "and"
        self._add(node, "bool", f"`{_SYMBOL[type(node.op)]}` -> `{other}`")
        self.generic_visit(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if isinstance(node.op, ast.Not):
            self._add(node, "drop-not", "`not x` -> `x`")
        elif isinstance(node.op, ast.USub):
            self._add(node, "drop-minus", "`-x` -> `x`")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        value = node.value
        if isinstance(value, bool):
            self._add(node, "const", f"`{value}` -> `{not value}`")
        elif isinstance(value, int):
            self._add(node, "const", f"`{value}` -> `{value + 1}`")
        elif isinstance(value, float):
            self._add(node, "const", f"`{value!r}` -> `{_float_mutant(value)!r}`")

    def visit_Return(self, node: ast.Return) -> None:
        if node.value is not None and not (
            isinstance(node.value, ast.Constant) and node.value.value is None
        ):
            self._add(node, "return-none", "`return x` -> `return None`")
        self.generic_visit(node)

    def visit_Break(self, node: ast.Break) -> None:
        self._add(node, "break", "`break` -> `continue`")

    def visit_Continue(self, node: ast.Continue) -> None:
        self._add(node, "continue", "`continue` -> `break`")

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Call):
            self._add(node, "drop-call", "call statement dropped")
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        self.generic_visit(node)

    def _add(self, node: ast.AST, kind: str, what: str) -> None:
        self.points.append((node, kind, what))
        self.functions[len(self.points) - 1] = ".".join(self._function) or "<module>"


def _body_without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and (
        isinstance(body[0].value.value, str)
    ):
        return body[1:]
    return body


def _is_string_format(node: ast.BinOp) -> bool:
    return isinstance(node.left, ast.Constant) and isinstance(node.left.value, str)


def _float_mutant(value: float) -> float:
    return value * 2 if value else 1.0


def _mutate(node: ast.AST, kind: str) -> ast.AST | None:
    """The mutated replacement of ``node`` (None: drop the statement)."""
    new = copy.deepcopy(node)
    if kind.startswith("cmp:"):
        assert isinstance(new, ast.Compare)
        i = int(kind.split(":")[1])
        new.ops[i] = _CMP_SWAP[type(new.ops[i])]()
    elif kind == "bin":
        assert isinstance(new, ast.BinOp)
        new.op = _BIN_SWAP[type(new.op)]()
    elif kind == "aug":
        assert isinstance(new, ast.AugAssign)
        new.op = _BIN_SWAP[type(new.op)]()
    elif kind == "bool":
        assert isinstance(new, ast.BoolOp)
        new.op = ast.Or() if isinstance(new.op, ast.And) else ast.And()
    elif kind in ("drop-not", "drop-minus"):
        assert isinstance(new, ast.UnaryOp)
        return new.operand
    elif kind == "const":
        assert isinstance(new, ast.Constant)
        v = new.value
        new.value = (not v) if isinstance(v, bool) else (v + 1 if isinstance(v, int) else _float_mutant(v))
    elif kind == "negate-if":
        assert isinstance(new, ast.If)
        new.test = ast.UnaryOp(op=ast.Not(), operand=new.test)
    elif kind == "return-none":
        assert isinstance(new, ast.Return)
        new.value = ast.Constant(value=None)
    elif kind == "break":
        return ast.Continue()
    elif kind == "continue":
        return ast.Break()
    elif kind == "drop-call":
        return ast.Pass()
    return new


class _Replace(ast.NodeTransformer):
    def __init__(self, target: ast.AST, replacement: ast.AST | None) -> None:
        self.target, self.replacement = target, replacement

    def visit(self, node: ast.AST) -> ast.AST | None:
        if node is self.target:
            return ast.copy_location(self.replacement, node) if self.replacement else None
        return super().visit(node)


def mutants_of(path: Path) -> tuple[str, list[Mutant]]:
    """The module's source and its mutants, numbered in source order from 1."""
    source = path.read_text(encoding="utf-8")
    points = _Points()
    points.visit(ast.parse(source))
    lines = source.splitlines()
    mutants = []
    for i, (node, _kind, what) in enumerate(points.points):
        line = getattr(node, "lineno", 0)
        mutants.append(
            Mutant(
                number=i + 1,
                line=line,
                what=what,
                source_line=lines[line - 1].strip() if line else "",
                function=points.functions[i],
            )
        )
    return source, mutants


def mutated_source(source: str, number: int) -> str:
    """``source`` with mutant ``number`` applied (the walk over a fresh parse visits the
    points in the same order, so the number finds the node)."""
    tree = ast.parse(source)
    points = _Points()
    points.visit(tree)
    target, kind, _ = points.points[number - 1]
    new_tree = _Replace(target, _mutate(target, kind)).visit(tree)
    ast.fix_missing_locations(new_tree)
    return ast.unparse(new_tree) + "\n"


# -- running ------------------------------------------------------------------------------


def _scratch_copy(into: Path) -> Path:
    """A copy of what the tests need: the package, the tests, the corpus, pyproject.toml."""
    for name in ("pytest_stedge", "tests", "corpus"):
        shutil.copytree(ROOT / name, into / name, ignore=shutil.ignore_patterns(
            "__pycache__", "*.pyc", ".hypothesis", "*.duckdb"))
    shutil.copy2(ROOT / "pyproject.toml", into / "pyproject.toml")
    # ../shared sits beside the project: the tests find it from the copy's parent
    shared = ROOT.parent / "shared"
    if shared.is_dir() and not (into.parent / "shared").exists():
        (into.parent / "shared").symlink_to(shared, target_is_directory=True)
    return into


def _pytest_argv(tests: list[str], per_test_timeout: int) -> list[str]:
    return [
        sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
        f"--timeout={per_test_timeout}", *tests,
    ]


def run_tests(copy_root: Path, tests: list[str], limit: float, per_test: int) -> tuple[str, float]:
    """Run ``tests`` in ``copy_root``: ("passed" | "failed" | "timeout", seconds)."""
    env = dict(os.environ, PYTHONPATH=str(copy_root), PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTEST_XDIST_WORKER", None)
    started = time.monotonic()
    with subprocess.Popen(
        _pytest_argv(tests, per_test), cwd=copy_root, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    ) as proc:
        try:
            code = proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            return "timeout", time.monotonic() - started
    return ("passed" if code == 0 else "failed"), time.monotonic() - started


def load_equivalent(path: Path = EQUIVALENT_FILE) -> dict[str, list[dict[str, str]]]:
    """Survivors judged equivalent, by module: entries with function, line (its text), what, why."""
    if not path.is_file():
        return {}
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return {k: list(v) for k, v in data.items()}


def is_equivalent(module: str, mutant: Mutant, judged: dict[str, list[dict[str, str]]]) -> str | None:
    """The reason a survivor is equivalent, when the list has it (matched by function, the
    line's text and the change, so edits elsewhere in the file keep the judgement)."""
    for entry in judged.get(module, []):
        if (
            entry.get("function") == mutant.function
            and entry.get("line") == mutant.source_line
            and entry.get("what") == mutant.what
        ):
            return entry.get("why", "")
    return None


def mutate_module(
    name: str, workers: int, out: Path, only: set[int] | None, list_only: bool
) -> dict[str, object]:
    """Mutate one module of SELECTION and run its tests against every mutant."""
    rel, tests = SELECTION[name]
    tests = [t for t in tests if (ROOT / t).is_file()]
    source, mutants = mutants_of(ROOT / rel)
    if list_only:
        for m in mutants:
            print(f"{name} #{m.number} L{m.line} {m.function}: {m.what}   | {m.source_line}")
        return {}
    chosen = [m for m in mutants if only is None or m.number in only]
    judged = load_equivalent()
    with tempfile.TemporaryDirectory(prefix="stedge-mutate-") as tmp:
        copies = []
        for w in range(workers):
            base = Path(tmp) / f"w{w}"
            base.mkdir()
            copies.append(_scratch_copy(base / "project"))
        # the unmutated code must pass, and its time sets the per-mutant limit
        status, seconds = run_tests(copies[0], tests, limit=3600, per_test=300)
        if status != "passed":
            raise SystemExit(f"{name}: the selected tests fail without any mutant ({tests})")
        limit = max(60.0, 4 * seconds)
        print(f"{name}: {len(chosen)} mutants, tests {' '.join(tests)} take {seconds:.1f} s", flush=True)
        free = list(copies)

        def one(m: Mutant) -> Mutant:
            where = free.pop()
            try:
                text = mutated_source(source, m.number)
                (where / rel).write_text(text, encoding="utf-8")
                result, m.seconds = run_tests(where, tests, limit=limit, per_test=int(limit))
                m.status = {"passed": "survived", "failed": "killed"}.get(result, result)
                if m.status == "survived":
                    reason = is_equivalent(name, m, judged)
                    if reason is not None:
                        m.status = "equivalent"
            except (OSError, SyntaxError, ValueError, TypeError, LookupError) as exc:
                # a mutant that cannot be built is reported, not fatal
                m.status = f"error: {exc}"
            finally:
                (where / rel).write_text(source, encoding="utf-8")
                free.append(where)
            return m

        with ThreadPoolExecutor(max_workers=workers) as pool:
            for m in pool.map(one, chosen):
                if m.status not in ("killed",):
                    print(f"  #{m.number} L{m.line} {m.function}: {m.what} -> {m.status}"
                          f"   | {m.source_line}", flush=True)
    everything = chosen
    previous = out / f"{name}.json"
    if only is not None and previous.is_file():
        # a rerun of some mutants updates the module's last full report
        known = {m["number"]: Mutant(**m) for m in json.loads(previous.read_text())["mutants"]}
        known.update({m.number: m for m in chosen})
        everything = [known[k] for k in sorted(known)]
    for m in everything:  # the equivalence list may have grown since the last full run
        if m.status == "survived" and is_equivalent(name, m, judged) is not None:
            m.status = "equivalent"
    counts = {s: sum(1 for m in everything if m.status == s) for s in
              ("killed", "timeout", "survived", "equivalent")}
    counts["error"] = sum(1 for m in everything if m.status.startswith("error"))
    relevant = counts["killed"] + counts["timeout"] + counts["survived"]
    score = (counts["killed"] + counts["timeout"]) / relevant if relevant else 1.0
    report = {"module": rel, "tests": tests, "counts": counts, "score": score,
              "mutants": [asdict(m) for m in everything]}
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    return report


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("modules", nargs="*", help=f"default: all of {', '.join(SELECTION)}")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="parallel mutants (default 2)")
    parser.add_argument("--out", type=Path, default=ROOT / ".stedge" / "mutation")
    parser.add_argument("--only", default="", help="comma-separated mutant numbers")
    parser.add_argument("--list", action="store_true", help="list the mutants and stop")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run, print the table of scores; exit 1 when a module is below 90%."""
    args = _parse_args(argv)
    names = args.modules or list(SELECTION)
    unknown = [n for n in names if n not in SELECTION]
    if unknown:
        print(f"unknown module(s) {', '.join(unknown)}; known: {', '.join(SELECTION)}", file=sys.stderr)
        return 2
    only = {int(x) for x in args.only.split(",") if x.strip()} or None
    reports = [mutate_module(n, args.jobs, args.out, only, args.list) for n in names]
    if args.list:
        return 0
    print()
    print(f"{'module':<36} {'mutants':>7} {'killed':>6} {'hang':>5} {'survived':>8} {'equiv':>5} {'score':>6}")
    low = False
    for r in reports:
        c = r["counts"]
        assert isinstance(c, dict)
        total = sum(c.values())
        score = float(r["score"])  # type: ignore[arg-type]
        low |= score < 0.9
        print(f"{r['module']!s:<36} {total:>7} {c['killed']:>6} {c['timeout']:>5} "
              f"{c['survived']:>8} {c['equivalent']:>5} {score:>6.1%}")
    return 1 if low else 0


def iter_survivors(report: dict[str, object]) -> Iterator[dict[str, object]]:
    """The survivors of a module report (for writing up the equivalent ones)."""
    for m in report.get("mutants", []):  # type: ignore[union-attr]
        if isinstance(m, dict) and m.get("status") == "survived":
            yield m


if __name__ == "__main__":
    sys.exit(main())
