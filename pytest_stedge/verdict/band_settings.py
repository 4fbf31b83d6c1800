"""The bands a command judges with: ``--band`` over the ini keys pytest reads, as in a session.

``stedge diff`` and ``stedge report`` must band a metric exactly as the gate of a pytest
session in the same folder did, so they read the same ini keys (``stedge_baseline_band``,
``stedge_metric_bands``) from the file pytest would read, in pytest's order.
"""

from __future__ import annotations

import configparser
import tomllib
from pathlib import Path
from typing import Any

from .bands import BandSettings, parse_band, parse_metric_bands


def band_settings(bands: list[str], folder: Path | None = None) -> BandSettings:
    """The bands of ``--band`` over the ini keys pytest reads in ``folder`` (default: the
    current folder), over the built-in noisy-metric bands: what the gate uses in a session.

    :raises BandError: naming a malformed band, before any store is opened.
    """
    where = folder or Path.cwd()
    general = [b for b in bands if "=" not in b]
    default_band = general[-1] if general else ini_band(where)
    parse_band(default_band)
    metric_bands = parse_metric_bands(
        ini_lines(where, "stedge_metric_bands") + [b for b in bands if "=" in b]
    )
    return BandSettings(default_band=default_band, metric_bands=metric_bands)


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
