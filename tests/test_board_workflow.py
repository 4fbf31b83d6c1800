"""validate-target end to end: pytest corpus --stedge-board socket://... with the fake tool
and the board simulator (loader step, board locks under xdist, board faults, per-layer)."""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import SIMPLE_CASE, CorpusFactory, make_conv_model

from pytest_stedge.board.sim.simulator import BoardSimulator, Faults
from pytest_stedge.store.database import Store

BOARD_CASE = SIMPLE_CASE.replace('stages = ["generate"]', 'stages = ["generate", "validate-target"]')
NODES = ["conv0", "relu0", "conv1", "relu1"]


def named_model(path: Path) -> Path:
    """The corpus' Conv+Relu chain with node names, as a board reports its layers."""
    import onnx

    path.parent.mkdir(parents=True, exist_ok=True)
    make_conv_model(path)
    model = onnx.load(str(path))
    for node, name in zip(model.graph.node, NODES):
        node.name = name
    onnx.save(model, str(path))
    return path


@pytest.fixture
def corpus(pytester: pytest.Pytester, make_corpus: CorpusFactory) -> Path:
    root = pytester.path / "corpus"
    named_model(root / "cnn" / "model.onnx")
    return make_corpus({"cnn": BOARD_CASE + "[expect]\nval_cos = { min = 0.9 }\n"}, root=root)


def start_sim(model: Path, **kwargs: Any) -> BoardSimulator:
    sim = BoardSimulator(model, **kwargs)
    sim.signature = ""  # like the N6 firmware: no signature to compare
    sim.start_socket()
    return sim


@pytest.fixture
def sim(corpus: Path) -> Iterator[BoardSimulator]:
    with start_sim(corpus / "cnn" / "model.onnx") as s:
        yield s


def run(pytester: pytest.Pytester, corpus: Path, installs: Path, *args: str) -> Any:
    # the ini file makes pytester.path the rootdir (an explicit --rootdir skips ini files)
    if not (pytester.path / "tox.ini").is_file():
        pytester.makeini("[pytest]\n")
    return pytester.runpytest_subprocess(
        str(corpus), "--stedge-root", str(installs), "--stedge-version", "4.0.1",
        "--stedge-db", str(pytester.path / "results.duckdb"), "-p", "no:cacheprovider", *args)


def stored_items(pytester: pytest.Pytester, stage: str) -> list[dict[str, Any]]:
    with Store.open(pytester.path / "results.duckdb", create=False) as store:
        items = store.get_run(1)["items"]
    return sorted((i for i in items if i["stage"] == stage), key=lambda i: i["nodeid"])


def loader_log(installs: Path) -> str:
    log = installs / "4.0" / "scripts" / "N6_scripts" / "n6_loader.log"
    return log.read_text(encoding="utf-8") if log.is_file() else ""


def test_validate_target_loads_the_network_validates_and_stores(
        pytester: pytest.Pytester, corpus: Path, sim: BoardSimulator,
        fake_installs: Path) -> None:
    result = run(pytester, corpus, fake_installs, "--stedge-board", sim.url)
    result.assert_outcomes(passed=3)  # oracle, generate, validate-target
    [item] = stored_items(pytester, "validate-target")
    assert item["outcome"] == "passed"
    assert item["metrics"]["val_cos"] > 0.9 and "val_l2r" in item["metrics"]
    board = item["result"]["board"]
    assert board["port"] == sim.url and board["device"] == "STM32N6"
    assert board["network"] == "network" and board["chosen_because"] == ""
    assert item["result"]["validation"]["mode"].lower() == "target"
    # the built-in loader ran the install's n6_loader.py with a config in the item's folder
    workdir = next((pytester.path / ".stedge" / "work").glob("run-1-*/cnn/validate-target-4.0.1"))
    assert f"config={workdir / 'config_n6l.json'}" in loader_log(fake_installs)
    config = json.loads((workdir / "config_n6l.json").read_text())
    assert config["network.c"] == str(workdir / "st_ai_output" / "network.c")
    assert config["project_build_conf"] == "N6-DK"  # the rest comes from the install's config
    # the lock was taken and given back
    [held] = [json.loads(x) for x in (pytester.path / ".stedge" / "locks" / "journal.jsonl")
              .read_text().splitlines()]
    assert held["port"] == sim.url and held["released"] >= held["acquired"]


class FlashedFirmware(Faults):
    """Faults decided by what the loader 'flashed': a case named bad flashes firmware
    that does not speak the validation protocol."""

    def __init__(self, marker: Path) -> None:
        super().__init__()
        self.marker = marker

    @property  # type: ignore[override]
    def mute(self) -> bool:
        return self.marker.is_file() and "bad" in self.marker.read_text()

    @mute.setter
    def mute(self, value: bool) -> None:
        pass


def test_ini_loader_replaces_the_builtin_and_a_mute_board_fails_only_its_item(
        pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path) -> None:
    root = pytester.path / "corpus"
    for name in ("bad", "good"):
        named_model(root / name / "model.onnx")
    corpus = make_corpus({"bad": BOARD_CASE, "good": BOARD_CASE}, root=root)
    marker = pytester.path / "flashed.txt"
    write = "import sys, pathlib; pathlib.Path(sys.argv[1]).write_text(' '.join(sys.argv[2:]))"
    pytester.makeini(f"[pytest]\nstedge_board_loader = {sys.executable} -c \"{write}\" "
                     f"{marker} {{model}} {{port}} {{baud}} {{name}}\n")
    before = loader_log(fake_installs)
    with start_sim(root / "good" / "model.onnx", faults=FlashedFirmware(marker)) as sim:
        result = run(pytester, corpus, fake_installs, "--stedge-board", sim.url)
    result.assert_outcomes(passed=5, failed=1)
    result.stdout.fnmatch_lines(["*validate-target*not the validation firmware: *did not "
                                 + "answer the validation protocol's sync*"])
    assert "Traceback" not in result.stdout.str()
    bad, good = stored_items(pytester, "validate-target")
    assert bad["outcome"] == "failed" and good["outcome"] == "passed"
    assert "not the validation firmware" in bad["result"]["diagnostics"][0]["message"]
    # the ini command ran with its placeholders filled in, and replaced n6_loader.py
    assert marker.read_text() == f"{root / 'good' / 'model.onnx'} {sim.url} 921600 network"
    assert loader_log(fake_installs) == before
    journal = (pytester.path / ".stedge" / "locks" / "journal.jsonl").read_text().splitlines()
    assert len(journal) == 2  # released after the failure, taken again by the next item


def test_two_boards_under_xdist_never_serve_two_items_at_once(
        pytester: pytest.Pytester, make_corpus: CorpusFactory, fake_installs: Path) -> None:
    root = pytester.path / "corpus"
    names = [f"m{i}" for i in range(4)]
    for name in names:
        named_model(root / name / "model.onnx")
    corpus = make_corpus({name: BOARD_CASE for name in names}, root=root)
    pytester.makeini(f"[pytest]\nstedge_board_loader = {sys.executable} -c "
                     "\"import time; time.sleep(0.3)\"\n")
    model = root / "m0" / "model.onnx"
    with start_sim(model) as one, start_sim(model) as two:
        result = run(pytester, corpus, fake_installs, "-n", "2",
                     "--stedge-board", one.url, "--stedge-board", two.url)
    result.assert_outcomes(passed=12)
    held = [json.loads(x) for x in (pytester.path / ".stedge" / "locks" / "journal.jsonl")
            .read_text().splitlines()]
    assert len(held) == 4 and {h["port"] for h in held} <= {one.url, two.url}
    for port in {h["port"] for h in held}:
        spans = sorted((h["acquired"], h["released"]) for h in held if h["port"] == port)
        for (_, end), (start, _) in itertools.pairwise(spans):
            assert start >= end, f"{port} served two items at once: {spans}"
    ports = {item["result"]["board"]["port"] for item in stored_items(pytester,
                                                                       "validate-target")}
    assert ports <= {one.url, two.url}


def test_per_layer_names_the_first_diverging_node_and_stores_board_timings(
        pytester: pytest.Pytester, corpus: Path, fake_installs: Path) -> None:
    with start_sim(corpus / "cnn" / "model.onnx", faults=Faults(wrong_from_node="conv1")) as sim:
        result = run(pytester, corpus, fake_installs, "--stedge-board", sim.url,
                     "--stedge-per-layer")
    result.assert_outcomes(passed=3)
    [item] = stored_items(pytester, "validate-target")
    res = item["result"]
    divergence = res["divergence"]
    assert divergence["first_diverging"] == "conv1" and divergence["tensor"] == "c1"
    assert divergence["cos"] < 0.9
    assert [row["board_node"] for row in divergence["table"]] == ["conv0", "relu0", "conv1"]
    assert all(row["ok"] for row in divergence["table"][:2])
    [diag] = [d for d in res["diagnostics"] if d["kind"] == "FirstDivergence"]
    assert diag["level"] == "warning"
    assert diag["message"].startswith("first diverging epoch/node: conv1 (cos ")
    assert [t["name"] for t in res["board_timings"]] == NODES
    assert all(t["duration_ms"] > 0 for t in res["board_timings"])
    assert set(res["extra_metrics"]) == {f"board_ms:{n}" for n in NODES}
    assert Path(divergence["dump"]).is_file()


def test_a_conftest_loader_hook_replaces_the_builtin(
        pytester: pytest.Pytester, corpus: Path, sim: BoardSimulator,
        fake_installs: Path) -> None:
    (corpus / "conftest.py").write_text(
        "from pathlib import Path\n"
        "def pytest_stedge_load_board(config, case, install, workdir, board):\n"
        "    (Path(config.rootpath) / 'flashed-by-conftest.txt').write_text(\n"
        "        f'{case.name} {install.version} {board} {workdir.name}')\n"
        "    return True\n"
    )
    before = loader_log(fake_installs)
    run(pytester, corpus, fake_installs, "--stedge-board", sim.url).assert_outcomes(passed=3)
    flashed = (pytester.path / "flashed-by-conftest.txt").read_text()
    assert flashed.startswith("cnn 4.0.1 ") and "validate-target-4.0.1" in flashed
    assert loader_log(fake_installs) == before  # the install's loader did not run
