"""The README tells the truth: its two set-up commands are what CI runs, word for word, on a
fresh clone; every option and command it documents exists (pytest's, argparse's) and every
one that exists is documented; hypothesis' plugin stays out of processes that do not need it."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from pytest_stedge.cli.main import build_parser

PROJECT = Path(__file__).resolve().parents[1]
README = (PROJECT / "README.md").read_text(encoding="utf-8")
CI = (PROJECT / ".ci" / "run").read_text(encoding="utf-8")
WORKFLOWS = PROJECT / ".github" / "workflows"


def _quick_start() -> list[str]:
    """The lines of the README's first code block."""
    block = re.search(r"^```\n(.*?)^```", README, re.MULTILINE | re.DOTALL)
    assert block, "the README opens with a code block"
    return block.group(1).splitlines()


def _executed_lines(script: str) -> list[str]:
    return [line.strip() for line in script.splitlines() if not line.strip().startswith("#")]


def test_the_readme_starts_with_two_commands_that_set_everything_up() -> None:
    main_job, tests = _quick_start()
    for command in (main_job, tests):
        # stock Debian has no `python` and refuses pip outside a virtual environment
        assert command.startswith("python3 -m venv .venv && . .venv/bin/activate && "), command
    assert main_job.endswith("python -m pip install -e . && pytest corpus")
    assert tests.endswith('python -m pip install -e ".[test]" && pytest')
    assert README.index(main_job) < README.index("## What it does")


def test_ci_runs_the_readme_commands_word_for_word() -> None:
    main_job, tests = _quick_start()
    lines = _executed_lines(CI)
    ran = [i for i, line in enumerate(lines) if line.startswith((main_job + " ", tests + " "))]
    assert [lines[i].split(" || ")[0] for i in ran] == [main_job, tests], (
        ".ci/run must run the README's two commands, in order, as written"
    )
    assert "apt-get install" in CI and "chromium" in CI and "python3-venv" in CI
    subprocess.run(["bash", "-n", str(PROJECT / ".ci" / "run")], check=True)


def test_workflows_that_run_the_main_job_run_it_as_written() -> None:
    main_job = _quick_start()[0]
    for workflow in sorted(WORKFLOWS.glob("*.yml")):
        text = workflow.read_text(encoding="utf-8")
        runs = re.findall(r"^\s*run: (.*pytest corpus.*)$", text, re.MULTILINE)
        assert all(run == main_job for run in runs), f"{workflow.name}: {runs}"
        if "stedge " in text:  # a later step is a new shell: it activates the environment
            later = re.findall(r"^\s*run: (.*\bstedge .*)$", text, re.MULTILINE)
            assert all(run.startswith(". .venv/bin/activate && ") for run in later), later


def _pytest_options() -> tuple[set[str], set[str], dict[str, str]]:
    """(--stedge-* flags, stedge_* ini keys, help by flag) the plugin registers."""
    from pytest_stedge import plugin

    parser = pytest.Parser(_ispytest=True)
    plugin.pytest_addoption(parser)
    flags, helps = set(), {}
    for group in parser._groups:
        for option in group.options:
            for name in option.names():
                if name.startswith("--stedge-"):
                    flags.add(name)
                    helps[name] = str(option.attrs().get("help", ""))
    return flags, set(parser._inidict), helps


def test_documented_pytest_options_are_the_plugins_options() -> None:
    flags, inis, _ = _pytest_options()
    documented_flags = set(re.findall(r"--stedge-[a-z-]*[a-z]", README))
    documented_inis = set(re.findall(r"(?<![\w-])(stedge_[a-z_]*[a-z])", README)) - {
        name for name in re.findall(r"pytest_(stedge_[a-z_]*[a-z])", README)
    }
    assert documented_flags - flags == set(), "documented but not an option"
    assert flags - documented_flags == set(), "an option the README does not document"
    assert documented_inis - inis == set(), "documented but not an ini key"
    assert inis - documented_inis == set(), "an ini key the README does not document"


def test_board_specs_in_pytest_help_and_readme_name_every_form() -> None:
    _, _, helps = _pytest_options()
    for form in ("serial:PORT[:BAUD]", "serial:BAUD", "auto", "socket://HOST:PORT"):
        assert form in helps["--stedge-board"], form
        assert form in README, form


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("stedge has subcommands")


def test_documented_stedge_commands_and_options_exist() -> None:
    commands = _commands()
    documented = set(re.findall(r"\bstedge ([a-z][a-z-]+)", README))
    assert set(commands) - documented == set(), "a command the README does not document"
    for line in re.findall(r"^stedge .*$", README, re.MULTILINE):
        words = line.split("#")[0].split()
        if words[1].startswith("--"):
            assert words[1] in ("--version",)
            continue
        parser = commands[words[1]]
        own = {s for a in parser._actions for s in a.option_strings}
        flags = {w.strip("[]").split("=")[0] for w in words[2:] if w.strip("[]").startswith("--")}
        assert flags <= own, f"{line!r}: {sorted(flags - own)} not options of stedge {words[1]}"


def test_stedge_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    from pytest_stedge.cli.main import main

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"stedge (pytest-stedge) {version('pytest-stedge')}"


def test_the_readme_says_what_a_fresh_machine_shows() -> None:
    section = README[README.index("### What `pytest corpus` shows on a fresh machine") :]
    section = section[: section.index("\n## ")]
    for words in ("**oracle**", "**skipped**", "**replayed runs**", "--stedge-root",
                  "(#real-public-runs-replayed)", "An install"):
        assert words in section, words
    assert "## Real public runs, replayed" in README


def _in_a_pytest_process(*args: str) -> str:
    code = (
        "import sys, pytest\n"
        f"pytest.main({list(args)!r} + ['-q', '-p', 'no:cacheprovider', '--co'])\n"
        "print('hypothesis imported:', 'hypothesis' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=PROJECT, capture_output=True,
                          text=True, timeout=300, check=False)
    return done.stdout


@pytest.mark.slow
def test_hypothesis_stays_out_of_processes_without_property_tests() -> None:
    # the project's own pytest config (pyproject addopts), as `pytest corpus` sees it
    assert "hypothesis imported: False" in _in_a_pytest_process("tests/test_layout.py")
    # where property tests are collected, hypothesis' plugin is back: it marks them
    out = _in_a_pytest_process("tests/test_signature.py", "-m", "hypothesis")
    assert re.search(r"[1-9]\d*/\d+ tests collected", out), out


def test_the_main_job_runs_without_the_test_extras_plugins(tmp_path: Path) -> None:
    """`pip install -e . && pytest corpus` has none of the test extra's pytest plugins: the
    project's pytest configuration must not need them (an ini key of pytest-timeout was an
    unknown option there, and `filterwarnings = error` made it an INTERNALERROR)."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "corpus/light", "--collect-only", "-q",
         "-p", "no:timeout", "-p", "no:hypothesispytest", "-p", "no:cacheprovider",
         "--stedge-db", str(tmp_path / "db.duckdb"), "--stedge-workdir", str(tmp_path / "w"),
         "--stedge-report", "none"],
        cwd=PROJECT, capture_output=True, text=True, timeout=240, check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "INTERNALERROR" not in done.stdout + done.stderr
    assert "corpus/light/vgg19/case.toml::oracle" in done.stdout


def test_the_main_job_passes_on_this_checkout(tmp_path: Path) -> None:
    """README command 1 ends in `pytest corpus`: on a machine without stedgeai (CI) every case
    the corpus holds must pass, replay or skip saying why. An oracle change that moves a
    figure the corpus expects (the admissible floor halved nine `== B` expectations) fails
    here, not first in CI's main job."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "corpus", "-q", "-p", "no:cacheprovider",
         "--stedge-db", str(tmp_path / "db.duckdb"), "--stedge-workdir", str(tmp_path / "w"),
         "--stedge-report", "none"],
        cwd=PROJECT, capture_output=True, text=True, timeout=900, check=False,
        env={**os.environ, "STEDGEAI_CORE_DIR": str(tmp_path / "no-install")},
    )
    tail = done.stdout[-3000:] + done.stderr[-2000:]
    assert done.returncode == 0, tail
    assert " passed" in done.stdout and "INTERNALERROR" not in done.stdout + done.stderr, tail


def test_the_two_readme_commands_in_either_order_keep_one_duckdb() -> None:
    """README command 2 (`pip install -e ".[test]"`) used to downgrade the DuckDB command 1
    installed, leaving its store unreadable (`stedge runs`: "IO Error ... version number
    999"): the test extra pinned DuckDB's postgres extension, built for one release, while
    the core took the newest. With DuckDB pinned to one release in the core dependencies,
    every resolution of either command holds that release or fails, so neither can move
    it; every extra that names DuckDB or one of its extensions must name that release.
    CI runs command 1 then command 2 in one venv for real (.ci/run)."""
    from packaging.requirements import Requirement

    project = tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    core = {r.name: r for r in map(Requirement, project["dependencies"])}
    pins = [s for s in core["duckdb"].specifier if s.operator == "=="]
    assert len(pins) == 1, f"the core dependencies must pin one DuckDB release: {core['duckdb']}"
    release = pins[0].version
    for extra, requirements in project["optional-dependencies"].items():
        for requirement in map(Requirement, requirements):
            if requirement.name == "duckdb" or requirement.name.startswith("duckdb-extension"):
                assert str(requirement.specifier) == f"=={release}", (extra, str(requirement))


# -- the README renders as written (CommonMark) -------------------------------------------

_FENCE_CLOSE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*$")
# a command as a reader would type it: `stedge CMD`, `pytest corpus|tests|-x`, `python -m`,
# `python script.py`, `pip install`
_COMMAND = re.compile(r"^(stedge [a-z-]+\b|pytest (corpus|tests|-)|python3? (-m |[\w/.]+\.py)|pip install )")


def _commonmark() -> tuple[list[str], list[object]]:
    markdown_it = pytest.importorskip("markdown_it", reason="markdown-it-py is a test extra")
    tokens = markdown_it.MarkdownIt("commonmark").parse(README)
    return README.splitlines(), tokens


def test_every_code_fence_of_the_readme_is_closed_by_a_bare_fence() -> None:
    """A closing fence with text after it (```` ``` A baseline version ````) is no closing
    fence in CommonMark: the block runs on and swallows the sections that follow."""
    lines, tokens = _commonmark()
    fences = [t for t in tokens if t.type == "fence"]  # type: ignore[attr-defined]
    assert fences, "the README has code blocks"
    for token in fences:
        start, end = token.map  # type: ignore[attr-defined]
        closing = lines[end - 1] if end <= len(lines) and end - 1 > start else ""
        inner = [line for line in token.content.splitlines() if line.lstrip().startswith("```")]  # type: ignore[attr-defined]
        assert inner == [], f"the code block opened on README line {start + 1} holds a fence line"
        assert _FENCE_CLOSE.match(closing), (
            f"the code block opened on README line {start + 1} is not closed by a bare fence "
            f"(it ends at line {end}: {closing!r})"
        )


def test_every_section_heading_of_the_readme_is_a_heading() -> None:
    lines, tokens = _commonmark()
    headings = {t.map[0] for t in tokens if t.type == "heading_open"}  # type: ignore[attr-defined]
    code = [range(*t.map) for t in tokens if t.type in ("fence", "code_block")]  # type: ignore[attr-defined]
    for number, line in enumerate(lines):
        if re.match(r"^#{2,6} \S", line):
            assert number in headings, f"README line {number + 1} {line!r} is not rendered as a heading"
            assert not any(number in r for r in code), line
    assert len(headings) >= 15


def test_every_command_line_of_the_readme_is_in_a_code_block() -> None:
    lines, tokens = _commonmark()
    code = [range(*t.map) for t in tokens if t.type in ("fence", "code_block")]  # type: ignore[attr-defined]
    commands = [n for n, line in enumerate(lines) if _COMMAND.match(line.strip())]
    assert len(commands) >= 25
    stray = [lines[n] for n in commands if not any(n in r for r in code)]
    assert stray == [], "command lines rendered as prose"
    # and every block of commands is a code block (its first line is a command)
    blocks = [t for t in tokens if t.type == "fence" and not t.info]  # type: ignore[attr-defined]
    assert sum(1 for t in blocks if _COMMAND.match(t.content.strip())) >= 10  # type: ignore[attr-defined]


def test_the_readme_names_the_report_file_the_session_writes() -> None:
    from pytest_stedge.store.rows import run_label

    label = run_label(1, "0123456789abcdef" * 2)
    assert re.fullmatch(r"run-1-[0-9a-f]{8}", label)
    assert "reports/run-1-<8 hex>.html" in README
    assert "reports/run-1.html" not in README
    assert "run-<id>-<uuid>" not in README


def test_the_readme_failure_table_is_what_the_corpus_case_prints() -> None:
    """The example failure is mvs-cnn/int8 as the forum report's tool planned it: the
    table is recomputed from the case file, never pasted."""
    from pytest_stedge.case.load import load_cases
    from pytest_stedge.verdict.expect import check, format_misses

    start = README.index("A failing item shows every metric that missed")
    block = re.search(r"^```\n(.*?)^```", README[start:], re.MULTILINE | re.DOTALL)
    assert block
    shown = block.group(1).rstrip("\n")
    title = shown.splitlines()[0].split(":")[0]
    case = {c.name: c for c in load_cases(PROJECT / "corpus" / "mvs-cnn" / "case.toml")}["mvs-cnn/int8"]
    floor = [b for b in case.bounds_for("oracle") if b.metric == "activations_lower_bound_bytes"]
    assert floor and floor[0].exact == 2_457_600  # the case's own pin of the floor
    reported = 22_937_600  # the forum report's 22.9 MB
    measured = {"activations_bytes": reported, "activations_ratio": reported / floor[0].exact}
    printed = format_misses(title, check(case.bounds_for("generate"), measured),
                            hint="To accept the measured values, rerun with --stedge-update.")
    assert shown == printed
