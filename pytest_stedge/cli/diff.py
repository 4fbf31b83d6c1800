"""``stedge diff BASE HEAD``: what changed between two toolchain versions, from the store."""

from __future__ import annotations

import argparse
import configparser
import json
import sys
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_stedge.options import add_store_options

if TYPE_CHECKING:
    from ..verdict.bands import BandSettings

EPILOG = """\
examples:
  stedge diff 3.0.0 4.0.1
  stedge diff 3.0.0 4.0.1 --json > diff.json
  stedge diff 3.0.0 4.0.1 --band +2% --db ci/results.duckdb
  stedge diff 3.0.0 4.0.1 --html reports/diff-3.0.0-4.0.1.html
  stedge diff 3.0.0 4.0.1 --group nightly-41 --group $CI_PIPELINE_ID --db postgresql://ci@db/stedge

exit status: 0 nothing regressed, 1 a metric regressed beyond its band or newly
misses its expectation, 2 usage error (e.g. a version without stored results)."""


def add_commands(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Register ``diff``."""
    diff = subparsers.add_parser(
        "diff",
        help="Compare the stored results of two toolchain versions",
        description="Compare, case by case, the newest stored results of BASE and HEAD "
        "without running anything. Each metric change gets one kind: regressed, newly "
        "failing, improved, fixed, not comparable (other model or options) or unchanged. "
        "Bands come from each case's [baseline] table (--corpus), else --band. On the N6, "
        "operators that moved between the NPU and the Cortex-M55 are listed apart (to "
        "software, to hardware, software <-> hybrid; --json placement_moves): never a failure.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    diff.add_argument("base", metavar="BASE", help="Baseline toolchain version, e.g. 3.0.0")
    diff.add_argument("head", metavar="HEAD", help="Toolchain version to judge, e.g. 4.0.1")
    add_store_options(diff.add_argument, prefix="")
    diff.add_argument("--json", action="store_true", help="Print the diff as JSON")
    diff.add_argument(
        "--corpus",
        metavar="DIR",
        default=None,
        help="Corpus whose case [baseline] bands and [expect] bounds apply. "
        "Default: ./corpus when it exists",
    )
    add_band_option(diff)
    diff.add_argument(
        "--all", action="store_true", dest="show_unchanged", help="List unchanged metrics too"
    )
    diff.add_argument("--html", metavar="PATH", default=None, help="Also write an HTML page")
    diff.add_argument(
        "--group",
        metavar="ID",
        action="append",
        default=[],
        dest="groups",
        help="Compare only the runs of these run groups (--stedge-run-group; repeatable: "
        "e.g. the baseline's pipeline and this one); a group missing a shard is refused",
    )
    diff.set_defaults(handler=run_diff)


def run_diff(args: argparse.Namespace) -> int:
    """Handler of ``stedge diff``; returns the exit status."""
    from pytest_stedge.report.table import format_table
    from pytest_stedge.store.database import Store

    from ..verdict.store_diff import diff_store
    from .store import db_path

    settings = band_settings(args.band)
    default_band, metric_bands = settings.default_band, dict(settings.metric_bands or {})
    cases = load_corpus_cases(args.corpus)
    with Store.open(db_path(args), create=False, read_only=True) as store:
        report = diff_store(store, args.base, args.head, default_band=default_band, cases=cases,
                            metric_bands=metric_bands, run_groups=args.groups or None)
        if args.html:
            from pytest_stedge.report import render_diff_page

            page = render_diff_page(report, store, Path(args.html))
            print(f"wrote {page}", file=sys.stderr)
        from ..verdict.placement import format_placement_changes, store_placement_changes

        pairs = {(c.case_name, c.stage) for c in report.changes}
        placement = store_placement_changes(store, args.base, args.head, pairs)
    if args.json:
        print(json.dumps({**report.to_json(), "placement_moves": placement}, indent=2))
    else:
        print(format_table(report, show_unchanged=args.show_unchanged))
        for line in format_placement_changes(placement, args.base, args.head):
            print(line)
    return 1 if report.regressed() else 0


def add_band_option(parser: argparse.ArgumentParser) -> None:
    """``--band [METRIC=]BAND`` (repeatable), as ``stedge diff`` reads it."""
    parser.add_argument(
        "--band",
        metavar="[METRIC=]BAND",
        action="append",
        default=[],
        help="Band of metrics a case does not band ('+3%%', '+1024', '0'); METRIC=BAND sets one "
        "metric's (repeatable). Default: ini stedge_baseline_band, else 0; validation metrics "
        "have their own (ini stedge_metric_bands, README 'Bands')",
    )


def band_settings(bands: list[str], folder: Path | None = None) -> BandSettings:
    """The bands of ``--band`` over the ini keys pytest reads in ``folder`` (default: the
    current folder), over the built-in noisy-metric bands: what the gate uses in a session.

    :raises BandError: naming a malformed band, before any store is opened.
    """
    from ..verdict.bands import BandSettings, parse_band, parse_metric_bands

    where = folder or Path.cwd()
    general = [b for b in bands if "=" not in b]
    default_band = general[-1] if general else ini_band(where)
    parse_band(default_band)
    metric_bands = parse_metric_bands(
        ini_lines(where, "stedge_metric_bands") + [b for b in bands if "=" in b]
    )
    return BandSettings(default_band=default_band, metric_bands=metric_bands)


def load_corpus_cases(folder: str | None) -> dict[str, Any]:
    """Cases by name from ``folder`` (default ./corpus if present); {} without a corpus."""
    from pytest_stedge.errors import StedgeError

    from ..case.load import load_cases
    from ..case.scan import iter_case_files

    if folder is None:
        default = Path("corpus")
        if not default.is_dir():
            return {}
        root = default
    else:
        root = Path(folder)
        if not root.is_dir():
            raise StedgeError(f"--corpus {folder}: no such folder")
    cases: dict[str, Any] = {}
    for case_toml in iter_case_files(root):
        for case in load_cases(case_toml, root):
            cases[case.name] = case
    return cases


def ini_band(folder: Path) -> str:
    """``stedge_baseline_band`` from the pytest ini file pytest would read in ``folder`` ("0")."""
    value = _ini_value(folder, "stedge_baseline_band")
    return value.strip() if value and value.strip() else "0"


def ini_lines(folder: Path, key: str) -> list[str]:
    """A linelist ini key (e.g. ``stedge_metric_bands``), one entry a line; [] when unset."""
    value = _ini_value(folder, key)
    if value is None:
        return []
    if isinstance(value, list):
        return [str(v) for v in value]
    return [line.strip() for line in str(value).splitlines() if line.strip()]


def _ini_value(folder: Path, key: str) -> Any:
    """``key`` from the pytest ini file pytest would read in ``folder`` (None when unset).

    pytest's order: pytest.ini, .pytest.ini, pyproject.toml ([tool.pytest.ini_options]),
    tox.ini ([pytest]), setup.cfg ([tool:pytest]); the first file that has a pytest
    section decides.
    """
    for name, section in (
        ("pytest.ini", "pytest"),
        (".pytest.ini", "pytest"),
        ("pyproject.toml", None),
        ("tox.ini", "pytest"),
        ("setup.cfg", "tool:pytest"),
    ):
        path = folder / name
        if not path.is_file():
            continue
        if section is None:
            try:
                data = tomllib.loads(path.read_text(encoding="utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError):
                continue
            options = data.get("tool", {}).get("pytest", {}).get("ini_options")
            if isinstance(options, dict):
                value = options.get(key)
                return value if isinstance(value, (str, list)) or value is None else str(value)
            continue
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(path, encoding="utf-8")
        except configparser.Error:
            continue
        if parser.has_section(section) or name in ("pytest.ini", ".pytest.ini"):
            if parser.has_section(section):
                return parser.get(section, key, fallback=None)
            return None
    return None
