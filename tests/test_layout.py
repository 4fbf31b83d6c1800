"""The package's shape: wings that say what they own, no import circles, light imports."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from import_graph import cycle_from as _cycle_from
from import_graph import import_graph

PACKAGE = Path(__file__).resolve().parents[1] / "pytest_stedge"
WINGS = ["bisect", "board", "board/sim", "bugreport", "bugs", "case", "cli", "oracle", "parsers",
         "report", "store", "tool", "verdict", *(f"oracle/{w}" for w in ("model", "deployment",
         "memory", "placement", "accuracy"))]
# The oracle: one wing per user question over a shared model reader and the deployment.
ORACLE_SHARED = ("model", "deployment")
ORACLE_QUESTIONS = ("memory", "placement", "accuracy")
# The pytest flow: what stays at the top of the package (DESIGN.md section 2).
FLOW = {
    "plugin", "options", "hookspecs", "defaults", "items", "steps", "session", "state", "result",
    "errors",
    "folders",  # the corpus folders' collectors: pytest collection nodes, beside items
    "shard",  # --stedge-shard K/N: which items this process keeps
    "heap",  # the garbage collector around a corpus session's collection
    "stop",  # SIGINT/SIGTERM of a session: what is raised, when, and the stop's watchdog
}
MAX_TOP_MODULES = 14
MAX_LINES = 460  # ~450


def _import_graph() -> dict[str, set[str]]:
    """Every import between the package's modules, module-level or inside functions."""
    return import_graph()[0]


def test_no_module_imports_itself_back() -> None:
    graph = _import_graph()
    assert len(graph) > 60  # the walk found the package
    cycles = [c for name in sorted(graph) if (c := _cycle_from(graph, name))]
    assert not cycles, "import circles: " + "; ".join(" -> ".join(c) for c in cycles[:5])


def test_the_graph_sees_lazy_imports() -> None:
    # the report entry points import their page modules inside functions
    assert "pytest_stedge.report.site" in _import_graph()["pytest_stedge.report"]


@pytest.mark.parametrize("wing", WINGS)
def test_each_wing_says_what_it_owns_and_may_import(wing: str) -> None:
    init = PACKAGE / wing / "__init__.py"
    doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
    assert doc and len(doc.split()) >= 25, f"{init}: a paragraph on what the wing owns"
    assert "import" in doc, f"{init}: say what the wing may import"


def test_the_oracle_answers_one_question_per_wing() -> None:
    # a newcomer sees from the folder which question a module answers; a question wing
    # reads the model and the deployment, never a sibling question's internals
    oracle = PACKAGE / "oracle"
    assert {p.stem for p in oracle.glob("*.py")} == {"__init__"}, "oracle modules outside a wing"
    assert {p.name for p in oracle.iterdir() if p.is_dir() and p.name != "__pycache__"} == {
        *ORACLE_SHARED, *ORACLE_QUESTIONS}
    allowed = {"model": {"model"}, "deployment": {"deployment"}}
    allowed.update({q: {q, *ORACLE_SHARED} for q in ORACLE_QUESTIONS})
    crossing = sorted(
        f"{name} -> {target}"
        for name, targets in _import_graph().items()
        if name.startswith("pytest_stedge.oracle.")
        for target in targets
        if target.startswith("pytest_stedge.oracle.")
        and target.split(".")[2] not in allowed[name.split(".")[2]]
    )
    assert not crossing, f"oracle wings importing a sibling they may not: {crossing}"
    upward = sorted(f"{n} -> {t}" for n, ts in _import_graph().items()
                    if n.startswith("pytest_stedge.oracle.") for t in ts if t == "pytest_stedge.oracle")
    assert not upward, f"oracle wings importing the oracle's entry points: {upward}"


def test_commands_share_nothing_but_their_helpers() -> None:
    # the command layer parses and prints; logic two commands share lives in a wing, so no
    # command imports another, and no wing imports a command
    graph = _import_graph()
    cli = "pytest_stedge.cli"
    between = sorted(
        f"{name} -> {target}"
        for name, targets in graph.items()
        if name.startswith(f"{cli}.")
        for target in targets
        if target.startswith(f"{cli}.") and target != f"{cli}.shared"
    )
    assert not between, f"commands importing commands: {between}"
    upward = sorted(f"{n} -> {t}" for n, ts in graph.items() if not n.startswith(cli)
                    for t in ts if t == cli or t.startswith(f"{cli}."))
    assert not upward, f"wings importing the command layer: {upward}"


def _script_graph(folder: Path) -> dict[str, set[str]]:
    """Imports between the scripts of one folder (they import each other by bare name)."""
    names = {p.stem for p in folder.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in folder.glob("*.py"):
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and not node.level and node.module in names:
                found.add(node.module)
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name in names}
        graph[path.stem] = found - {path.stem}
    return graph


def test_no_script_folder_imports_itself_back() -> None:
    # corpus scripts, tools, benchmarks and test helpers: no circle anywhere in the repository
    root = PACKAGE.parent
    folders = {p.parent for p in root.rglob("*.py")
               if not {".venv", ".git", "pytest_stedge", ".stedge"} & set(p.relative_to(root).parts)}
    assert (root / "corpus" / "real") in folders
    cycles = []
    for folder in sorted(folders):
        graph = _script_graph(folder)
        cycles += [f"{folder.relative_to(root)}: {' -> '.join(c)}"
                   for name in sorted(graph) if (c := _cycle_from(graph, name))]
    assert not cycles, f"import circles between scripts: {cycles}"


def test_top_level_holds_only_the_pytest_flow() -> None:
    top = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__"}
    assert top <= FLOW, f"modules outside a wing: {sorted(top - FLOW)}"
    assert len(top) <= MAX_TOP_MODULES


def test_each_family_has_its_wing() -> None:
    # a newcomer finds case.toml -> Case -> item -> tool run -> parser -> Result -> verdict
    # -> store -> report in the folder names alone
    for module in ("case/model", "case/load", "tool/runner", "tool/discovery", "parsers/folder",
                   "verdict/gate", "verdict/compare", "store/database", "report/render"):
        assert (PACKAGE / f"{module}.py").is_file(), module


def test_no_module_outgrows_one_job() -> None:
    # split a module by concern before it passes ~400 lines (DESIGN.md section 2)
    long = {
        str(path.relative_to(PACKAGE)): n
        for path in PACKAGE.rglob("*.py")
        if (n := len(path.read_text(encoding="utf-8").splitlines()))
        > MAX_LINES
    }
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_lower_wings_never_import_the_pytest_flow() -> None:
    # the flow imports the wings, never the other way round (hookspecs name types only)
    graph = _import_graph()
    flow = {f"pytest_stedge.{name}" for name in FLOW - {"errors", "result", "options"}}
    upward = sorted(
        f"{name} -> {target}"
        for name, targets in graph.items()
        if name.count(".") >= 2 and not name.startswith(("pytest_stedge.cli", "pytest_stedge.board.plugin"))
        for target in targets & flow
    )
    assert not upward, f"wing modules importing the pytest flow: {upward}"


def test_importing_the_wings_loads_nothing_heavy() -> None:
    code = (
        "import sys\n"
        "import pytest_stedge.plugin, pytest_stedge.store, pytest_stedge.report, "
        "pytest_stedge.board, pytest_stedge.cli, pytest_stedge.bugs, pytest_stedge.oracle, "
        "pytest_stedge.case, pytest_stedge.tool, pytest_stedge.verdict\n"
        "heavy = [m for m in ('duckdb', 'numpy', 'onnx', 'onnxruntime', 'jinja2', 'serial')"
        " if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_old_public_names_still_import() -> None:
    # hook implementations receive a Store; it was pytest_stedge.store.Store before the wings
    from pytest_stedge.store import DEFAULT_PATH, Store
    from pytest_stedge.store.database import Store as Moved

    assert Store is Moved and str(DEFAULT_PATH).endswith("results.duckdb")
