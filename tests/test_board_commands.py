"""``stedge boards`` and ``stedge board-run`` against the simulator."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from test_board_sim import make_model, reference

from pytest_stedge.board.dump_run import default_stimulus
from pytest_stedge.board.sim.simulator import BoardSimulator, Faults
from pytest_stedge.board.tensors import TensorDesc
from pytest_stedge.cli.main import main


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_model(tmp_path_factory.mktemp("cmd") / "sim.onnx")


@pytest.fixture
def sim(model: Path) -> Iterator[BoardSimulator]:
    with BoardSimulator(model) as s:
        s.start_socket()
        yield s


def test_board_run_per_layer_writes_a_dump_keyed_by_onnx_tensor_names(
        sim: BoardSimulator, model: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "dump.npz"
    assert main(["board-run", str(model), "--board", sim.url, "--per-layer",
                 "--out", str(out)]) == 0
    with np.load(out) as dump:
        arrays = {k: dump[k] for k in dump.files}
    assert set(arrays) == {"x", "k", "kf", "s", "mm", "r", "probs", "label"}
    ref = reference(model, {"x": arrays["x"], "k": arrays["k"]})
    for name in ("kf", "s", "mm", "r", "probs", "label"):
        np.testing.assert_array_equal(arrays[name], ref[name], err_msg=name)
    # the input is validate's default stimulus: RandomState(42).uniform(0, 1) first
    np.testing.assert_array_equal(
        arrays["x"], np.random.RandomState(42).uniform(0, 1, (1, 8)).astype(np.float32))
    meta = json.loads(out.with_suffix(".json").read_text())
    assert meta["schema"] == "stedge.board-dump/1" and meta["mode"] == "per-layer-data"
    assert [n["name"] for n in meta["nodes"]][:3] == ["cast", "add", "matmul"]
    assert meta["nodes"][2]["tensors"] == ["mm"] and meta["nodes"][2]["duration_ms"] > 0
    printed = capsys.readouterr().out
    assert "6 node(s)" in printed and f"stedge diverge {model}" in printed


def test_board_run_io_only_with_given_inputs(sim: BoardSimulator, model: Path,
                                             tmp_path: Path) -> None:
    given = {"x": np.ones((1, 8), np.float32), "k": np.full((1, 8), -3, np.int8)}
    np.savez(tmp_path / "in.npz", **given)
    out = tmp_path / "io.npz"
    assert main(["board-run", str(model), "--board", sim.url, "--inputs",
                 str(tmp_path / "in.npz"), "--out", str(out)]) == 0
    with np.load(out) as dump:
        assert set(dump.files) == {"x", "k", "probs", "label"}
        np.testing.assert_array_equal(dump["probs"], reference(model, given)["probs"])


def test_board_run_against_another_network_fails_with_status_2(
        sim: BoardSimulator, model: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["board-run", str(model), "--board", sim.url, "--name", "kws",
                   "--out", str(tmp_path / "d.npz")])
    assert status == 2 and "holds another network" in capsys.readouterr().err
    assert not (tmp_path / "d.npz").exists()


def test_boards_probe_describes_what_answers(sim: BoardSimulator,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["boards", "--probe", "--board", sim.url]) == 0
    out = capsys.readouterr().out
    assert "validation firmware msg v3.2, STM32N6 (0x486)" in out
    assert "network 'network': signature 0x" in out
    sim.faults = Faults(mute=True)
    assert main(["boards", "--probe", "--board", sim.url]) == 1
    assert "not running the validation firmware" in capsys.readouterr().out


def test_default_stimulus_for_quantised_inputs_covers_the_int8_range() -> None:
    desc = TensorDesc("in", np.dtype(np.int8), (1, 4096), scale=0.00784312, zero_point=0)
    (x,) = default_stimulus([desc], 42)
    assert x.dtype == np.int8 and x.min() == -128 and x.max() == 127


def test_board_run_takes_a_case_folder_and_checks_its_c_name(
        sim: BoardSimulator, model: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    case = tmp_path / "corpus" / "tiny"
    case.mkdir(parents=True)
    (case / "model.onnx").write_bytes(model.read_bytes())
    (case / "case.toml").write_text('model = "model.onnx"\ntarget = "stm32n6"\nname = "kws"\n')
    status = main(["board-run", str(case), "--board", sim.url, "--out", str(tmp_path / "d.npz")])
    assert status == 2 and "name 'network', expected 'kws'" in capsys.readouterr().err
    (case / "case.toml").write_text('model = "model.onnx"\ntarget = "stm32n6"\n')
    assert main(["board-run", str(case), "--board", sim.url,
                 "--out", str(tmp_path / "d.npz")]) == 0
