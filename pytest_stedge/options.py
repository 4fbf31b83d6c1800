"""Options, defined once and shared by the pytest plugin (``--stedge-x``) and ``stedge`` (``--x``).

Help text follows pytest's rules: start with a capital; one phrase has no period.
Every value is a plain string or number so that pytest-xdist can ship it to workers.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

AddOption = Callable[..., Any]


MAX_TIMEOUT_S = 86_400.0  # one day: longer is a typo (1e30) or no limit at all (inf)
TIMEOUT_HELP = f"a positive number of seconds, at most {MAX_TIMEOUT_S:,.0f} (one day)"


def timeout_problem(value: object) -> str | None:
    """Why ``value`` is not a usable tool timeout (None when it is): nan never expires,
    inf and 1e30 never come, and subprocess timers overflow on the latter."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"expected {TIMEOUT_HELP}, got {value!r}"
    if not 0 < value <= MAX_TIMEOUT_S:  # False for nan too
        return f"expected {TIMEOUT_HELP}, got {value!r}"
    return None


def parse_timeout(text: str) -> float:
    """``--stedge-timeout`` converter: a positive number of seconds, at most one day."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number of seconds (e.g. 600 or 0.5)"
        ) from None
    problem = timeout_problem(value)
    if problem:
        raise argparse.ArgumentTypeError(f"{text!r}: {problem.split(', got')[0]}")
    return value


def _shard(text: str) -> str:
    """Check ``K/N`` and keep it a string (xdist ships options to workers as data)."""
    from .shard import parse_shard

    return str(parse_shard(text))


def add_store_options(addoption: AddOption, prefix: str = "stedge-") -> None:
    """The store location, for pytest (``--stedge-db``) and ``stedge`` (``--db``)."""
    addoption(
        f"--{prefix}db",
        dest=f"{prefix.replace('-', '_')}db",
        metavar="PATH",
        default=None,
        help="Results store: a DuckDB file, or a shared PostgreSQL database "
        "(postgresql://USER@HOST:PORT/DB). Default: ini stedge_db, else .stedge/results.duckdb",
    )


def add_run_options(addoption: AddOption) -> None:
    """Options of a pytest run over the corpus."""
    addoption(
        "--stedge-version",
        dest="stedge_version",
        metavar="VERSION",
        action="append",
        default=[],
        help="Run this stedgeai version (repeatable). Default: every install found",
    )
    addoption(
        "--stedge-root",
        dest="stedge_root",
        metavar="DIR",
        action="append",
        default=[],
        help="Look for stedgeai installs in DIR first (repeatable)",
    )
    addoption(
        "--stedge-models",
        dest="stedge_models",
        metavar="DIR",
        action="append",
        default=[],
        help="Look for the models of record-only cases in DIR, matched by hash (repeatable)",
    )
    addoption(
        "--stedge-timeout",
        dest="stedge_timeout",
        metavar="SECONDS",
        type=parse_timeout,
        default=None,
        help="Kill a stedgeai run after this many seconds; wins over a case's timeout key. "
        "Default: the case's timeout, else ini stedge_timeout, else 600",
    )
    addoption(
        "--stedge-shard",
        dest="stedge_shard",
        metavar="K/N",
        type=_shard,
        default=None,
        help="Run the K-th of N shards of the corpus (whole cases, dealt by case file), "
        "for a CI matrix of N jobs",
    )
    addoption(
        "--stedge-run-group",
        dest="stedge_run_group",
        metavar="ID",
        default=None,
        help="Store this run as part of the logical run ID (e.g. $CI_PIPELINE_ID): diff, "
        "gate and dashboard read the runs of a group, one per shard, as one run",
    )
    addoption(
        "--stedge-workdir",
        dest="stedge_workdir",
        metavar="DIR",
        default=None,
        help="Folder for the tool's outputs, one sub-folder per item. Default: .stedge/work",
    )


def add_report_options(addoption: AddOption) -> None:
    """Where the session's HTML report goes."""
    addoption(
        "--stedge-report",
        dest="stedge_report",
        metavar="PATH",
        default=None,
        help="Write the run's HTML report to PATH ('none' for no report). "
        "Default: reports/run-<id>-<8 hex>.html under the rootdir",
    )


def add_gate_options(addoption: AddOption) -> None:
    """Options that compare with a baseline version and update expectations."""
    addoption(
        "--stedge-baseline",
        dest="stedge_baseline",
        metavar="VERSION",
        default=None,
        help="Compare every toolchain item with this version's result (stored, or run in "
        "this session) and fail on regressions beyond the case's band",
    )
    addoption(
        "--stedge-strict-baseline",
        dest="stedge_strict_baseline",
        action="store_true",
        default=False,
        help="Also fail on improvements beyond the band (the expectations need updating)",
    )
    addoption(
        "--stedge-bisect",
        dest="stedge_bisect",
        action="store_true",
        default=False,
        help="When a stage fails, re-run it with subsets of the compiler options of the "
        "case's Neural-ART profile and of the case (delta debugging) and name the smallest "
        "set that makes it fail (as stedge bisect); slow",
    )
    addoption(
        "--stedge-update",
        dest="stedge_update",
        action="store_true",
        default=False,
        help="Write measured values into the [expect] and [baseline] tables of the cases "
        "that ran and missed them (comments and layout are kept)",
    )


def add_ini(addini: AddOption) -> None:
    """ini keys; each falls back to its flag, and the flag wins."""
    addini("stedge_db", "DuckDB results store (--stedge-db)", type="string", default="")
    addini(
        "stedge_timeout",
        "Seconds before a stedgeai run is killed, for cases without a timeout key (default 600)",
        type="string",
        default="",
    )
    addini("stedge_roots", "Folders holding stedgeai installs", type="paths", default=[])
    addini("stedge_workdir", "Folder for the tool's outputs", type="string", default="")
    addini("stedge_models", "Folders holding the models of record-only cases", type="paths",
           default=[])
    addini(
        "stedge_keep_runs",
        "Work folders of this many newest runs are kept ('all': never remove); default 10",
        type="string",
        default="10",
    )
    addini(
        "stedge_keep_failed_runs",
        "A run with a failed item keeps its work folder while among this many newest runs "
        "('all': for ever); default 50",
        type="string",
        default="50",
    )
    addini(
        "stedge_baseline_band",
        "Default band against the baseline version ('+3%', '+1024', '0')",
        type="string",
        default="0",
    )
    addini(
        "stedge_metric_bands",
        "Per-metric default bands, one METRIC=BAND a line (over the built-in bands of the "
        "validation metrics, e.g. val_cos=+0.001)",
        type="linelist",
        default=[],
    )


def add_board_options(addoption: AddOption, addini: AddOption) -> None:
    """Register ``--stedge-board``, ``--stedge-per-layer`` and the board ini keys."""
    addoption(
        "--stedge-board",
        dest="stedge_board",
        metavar="SPEC",
        action="append",
        default=[],
        help="Validate on this board: serial:PORT[:BAUD], serial:BAUD, auto, or "
        "socket://HOST:PORT (the simulator, a TCP relay) (repeatable)",
    )
    addoption(
        "--stedge-per-layer",
        dest="stedge_per_layer",
        action="store_true",
        default=False,
        help="After target validation, run one per-layer inference on the board and report "
        "the first layer that diverges from the reference (slow)",
    )
    addini(
        "stedge_board_loader",
        "Command that puts the generated network on the board (no shell; placeholders "
        "{workdir} {output} {port} {baud} {model} {name} {desc}); default: the install's "
        "scripts/N6_scripts/n6_loader.py",
        default="",
    )
    addini("stedge_board_wait", "Seconds a validate-target item waits for a free board",
           default="1800")
