"""Mutated real reports: a parser returns a Result or raises ReportParseError, nothing else.

Seeds are real files of ../shared/stedgeai-samples and ../shared/real-cases; hypothesis
truncates them, drops lines, swaps numbers for garbage, re-encodes them and puts wrong types
into c_info.json values. The deadline catches a parser that would hang or go quadratic.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_stedge.cli.parse import json_safe
from pytest_stedge.errors import ReportParseError
from pytest_stedge.parsers import parse_file
from pytest_stedge.result import flat_metrics

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
TEXT_SEEDS = [
    "stedgeai-samples/stm32-v2.2.0-validate-host-mlp/network_validate_report.txt",
    "stedgeai-samples/n6-v2.2.0-xcubeai10.2-generate-many-sw-epochs/network_generate_report.txt",
    "stedgeai-samples/stm32-v5.0.0-validate-error-analyze-generate/network_validate_report.txt",
    "stedgeai-samples/stm32u3-v4.0.0-generate-yamnet-hsp/network_generate_report.txt",
    "stedgeai-samples/n6-v4.0.0-console-analyze-tcn/analyze_report.txt",
    "stedgeai-samples/stm32h7-v7.2.0-validate-console-logs-cubemx/validation_on_platform.txt",
    "real-cases/n6-micro-convs-4flows/conv2d_3x3/4.0.0-devcloud/conv2d_3x3_report.txt",
    "stedgeai-samples/stm32-v2.2.0-validate-host-mlp/network_c_info.json",
    "stedgeai-samples/stm32h7-v7.2.0-validate-console-logs-cubemx/network_model.h5_report.json",
    "stedgeai-samples/stm32-v2.2.0-validate-host-mlp/network_val_c_outputs_1.csv",
]
N6_C_INFO = "stedgeai-samples/n6-v2.2.0-xcubeai10.2-generate-many-sw-epochs/network_model.tflite_c_info.json"

SETTINGS = settings(
    max_examples=25,
    deadline=10_000,  # catches a hang; linear cost itself is tested in test_parse_robustness
    derandomize=True,
    database=None,  # fixed examples: nothing to replay from earlier runs
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(scope="module")
def seeds() -> dict[str, bytes]:
    if not (SHARED / "stedgeai-samples").is_dir():
        pytest.skip(f"real stedgeai samples not available: {SHARED} is absent")
    return {name: (SHARED / name).read_bytes() for name in TEXT_SEEDS}


@pytest.fixture(scope="module")
def n6_doc() -> dict[str, Any]:
    if not (SHARED / N6_C_INFO).is_file():
        pytest.skip(f"real stedgeai samples not available: {SHARED} is absent")
    return json.loads((SHARED / N6_C_INFO).read_text())


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mutants")


def _check(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    try:
        result = parse_file(path)
    except ReportParseError as exc:
        assert exc.path == path
        return
    assert isinstance(result, dict) and result["schema"] == "stedge.result/1"
    json.dumps(result)  # still a JSON-serialisable Result
    json.dumps(json_safe(result), allow_nan=False)  # and `stedge parse --json` prints JSON
    flat_metrics(result)  # every figure converts to a float


def _target(workdir: Path, seed: str) -> Path:
    return workdir / Path(seed).name


@SETTINGS
@given(seed=st.sampled_from(TEXT_SEEDS), cut=st.floats(0, 1))
def test_truncated(seeds: dict[str, bytes], workdir: Path, seed: str, cut: float) -> None:
    data = seeds[seed]
    _check(_target(workdir, seed), data[: int(len(data) * cut)])


@SETTINGS
@given(seed=st.sampled_from(TEXT_SEEDS), keep=st.lists(st.booleans(), min_size=1, max_size=64))
def test_dropped_lines(seeds: dict[str, bytes], workdir: Path, seed: str, keep: list[bool]) -> None:
    lines = seeds[seed].split(b"\n")
    kept = [line for i, line in enumerate(lines) if keep[i % len(keep)]]
    _check(_target(workdir, seed), b"\n".join(kept))


_GARBAGE = st.sampled_from(
    ["", "--", "n.a.", "nan", "inf", "-1", "1e999", "x", "9" * 40, "0x", ",,,", "(", "%"]
)


@SETTINGS
@given(
    seed=st.sampled_from(TEXT_SEEDS),
    garbage=st.lists(_GARBAGE, min_size=1, max_size=8),
    stride=st.integers(1, 7),
)
def test_numbers_swapped_for_garbage(
    seeds: dict[str, bytes], workdir: Path, seed: str, garbage: list[str], stride: int
) -> None:
    text = seeds[seed].decode("utf-8", errors="replace")
    counter = iter(range(10**9))

    def swap(match: re.Match[str]) -> str:
        index = next(counter)
        return garbage[index % len(garbage)] if index % stride == 0 else match.group(0)

    _check(_target(workdir, seed), re.sub(r"\d[\d,.]*", swap, text).encode("utf-8"))


@SETTINGS
@given(
    seed=st.sampled_from(TEXT_SEEDS),
    encoding=st.sampled_from(
        ["utf-16", "utf-16-le", "utf-16-be", "latin-1", "utf-8-sig", "cp1252"]
    ),
    noise=st.binary(max_size=16),
    at=st.floats(0, 1),
)
def test_reencoded_with_noise(
    seeds: dict[str, bytes], workdir: Path, seed: str, encoding: str, noise: bytes, at: float
) -> None:
    text = seeds[seed].decode("utf-8", errors="replace")
    data = text.encode(encoding, errors="replace")
    pos = int(len(data) * at)
    _check(_target(workdir, seed), data[:pos] + noise + data[pos:])


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


def _paths(doc: Any, prefix: tuple[Any, ...] = (), depth: int = 0) -> list[tuple[Any, ...]]:
    out = [prefix]
    if depth > 4:
        return out
    if isinstance(doc, dict):
        for key, value in doc.items():
            out += _paths(value, prefix + (key,), depth + 1)
    elif isinstance(doc, list):
        for index, value in enumerate(doc[:3]):
            out += _paths(value, prefix + (index,), depth + 1)
    return out


@SETTINGS
@given(data=st.data())
def test_c_info_values_of_the_wrong_type(
    n6_doc: dict[str, Any], workdir: Path, data: st.DataObject
) -> None:
    doc = copy.deepcopy(n6_doc)
    paths = _paths(doc)[1:]
    for _ in range(data.draw(st.integers(1, 4))):
        path = data.draw(st.sampled_from(paths))
        parent = doc
        try:
            for key in path[:-1]:
                parent = parent[key]
            parent[path[-1]] = data.draw(_JSON_VALUES)
        except (KeyError, IndexError, TypeError):
            continue
    _check(workdir / "network_c_info.json", json.dumps(doc).encode("utf-8"))


# Figures no float can hold: more digits than int() converts, integers beyond 2**1024,
# exponents beyond a double. Each is a ReportParseError (naming the file), or lands where no
# figure is read; never a ValueError or OverflowError.
_HUGE = st.sampled_from(
    ["9" * 400, "9" * 4301, "1" + "0" * 5000, "1e999", "-1e400", "2" * 309, "1.5e308" + "9"]
)


@SETTINGS
@given(
    seed=st.sampled_from(TEXT_SEEDS),
    huge=st.lists(_HUGE, min_size=1, max_size=4),
    stride=st.integers(1, 5),
)
def test_numbers_swapped_for_figures_no_float_holds(
    seeds: dict[str, bytes], workdir: Path, seed: str, huge: list[str], stride: int
) -> None:
    text = seeds[seed].decode("utf-8", errors="replace")
    counter = iter(range(10**9))

    def swap(match: re.Match[str]) -> str:
        index = next(counter)
        return huge[index % len(huge)] if index % stride == 0 else match.group(0)

    _check(_target(workdir, seed), re.sub(r"\d[\d,]*", swap, text).encode("utf-8"))


def _numbers(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(doc, dict):
        return [p for key, value in doc.items() for p in _numbers(value, prefix + (key,))]
    if isinstance(doc, list):
        return [p for i, value in enumerate(doc[:4]) for p in _numbers(value, prefix + (i,))]
    if isinstance(doc, (int, float)) and not isinstance(doc, bool):
        return [prefix]
    return []


@SETTINGS
@given(data=st.data())
def test_c_info_numbers_no_float_holds(
    n6_doc: dict[str, Any], workdir: Path, data: st.DataObject
) -> None:
    doc = copy.deepcopy(n6_doc)
    paths = _numbers(doc)
    marker = 7_654_321_987_654_321  # replaced by a literal json.dumps cannot write
    literal = data.draw(st.sampled_from(["1e999", "-1e400", "9" * 4301]))
    for _ in range(data.draw(st.integers(1, 4))):
        path = data.draw(st.sampled_from(paths))
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = data.draw(st.sampled_from([10**400, -(10**500), marker]))
    text = json.dumps(doc).replace(str(marker), literal)
    _check(workdir / "network_c_info.json", text.encode("utf-8"))
