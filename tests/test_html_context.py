"""The template contract: documented page contexts, autoescape, StrictUndefined."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jinja2
import pytest

from pytest_stedge.report import atlas as report_atlas
from pytest_stedge.report import board as report_board
from pytest_stedge.report import bug_pages as report_bug_pages
from pytest_stedge.report import case_pages as report_case_pages
from pytest_stedge.report import data as report_data
from pytest_stedge.report import diff as report_diff
from pytest_stedge.report import placement_views as report_placement_views
from pytest_stedge.report import site as report_site
from pytest_stedge.report.render import environment, render

CONTEXTS = [
    obj
    for module in (report_data, report_diff, report_site, report_board, report_bug_pages,
                   report_case_pages, report_atlas, report_placement_views)
    for obj in vars(module).values()
    if dataclasses.is_dataclass(obj) and obj.__module__ == module.__name__
]


def test_every_context_field_is_documented() -> None:
    assert len(CONTEXTS) >= 15
    for cls in CONTEXTS:
        assert cls.__doc__, cls
        for f in dataclasses.fields(cls):
            assert f.metadata.get("help"), f"{cls.__name__}.{f.name} has no help"


def test_every_page_template_exists() -> None:
    names = set(environment().list_templates())
    for page in ("run", "diff", "index", "matrix", "bug", "case", "atlas"):
        assert f"{page}.html.j2" in names


def test_a_missing_context_key_is_an_error_not_a_blank(tmp_path: Path) -> None:
    with pytest.raises(jinja2.UndefinedError, match="page"):
        render("diff.html.j2", tmp_path / "x.html", title="t", root="")


def test_autoescape_is_on() -> None:
    template = environment().from_string("{{ name }}")
    assert template.render(name="<b>") == "&lt;b&gt;"
