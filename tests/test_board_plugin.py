"""The pieces of the validate-target stage: board locks, the loader step, board checks,
per-layer runs and how board errors become item failures."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import SIMPLE_CASE, CorpusFactory
from test_board_workflow import NODES, named_model

from pytest_stedge.board import plugin as board_plugin
from pytest_stedge.board import specs as board
from pytest_stedge.board.errors import (
    BoardBusyError,
    BoardDisconnectedError,
    BoardNetworkMismatchError,
    BoardNotValidationFirmwareError,
    BoardProtocolVersionError,
    BoardTimeoutError,
)
from pytest_stedge.board.lock import acquire_board, lock_key
from pytest_stedge.board.plugin import (
    BoardLoaderError,
    board_failure,
    check_board,
    generated_signature,
    header_bytes,
    loader_argv,
    per_layer,
    resolve_boards,
    run_loader,
    write_n6_loader_config,
)
from pytest_stedge.board.sim.simulator import BoardSimulator, Faults
from pytest_stedge.board.specs import PortInfo, parse_board_spec
from pytest_stedge.case.load import load_cases
from pytest_stedge.case.model import Case

PROJECT = Path(__file__).resolve().parents[1]


@pytest.fixture
def case(make_corpus: CorpusFactory, tmp_path: Path) -> Case:
    named_model(tmp_path / "corpus" / "cnn" / "model.onnx")
    corpus = make_corpus({"cnn": SIMPLE_CASE})
    return load_cases(corpus / "cnn" / "case.toml")[0]


@pytest.fixture
def sim(case: Case) -> Iterator[BoardSimulator]:
    with BoardSimulator(case.model) as s:
        s.signature = ""
        s.start_socket()
        yield s


# --- locks ----------------------------------------------------------------------------
HOLDER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from pytest_stedge.board.specs import parse_board_spec
    from pytest_stedge.board.lock import acquire_board
    lock = acquire_board([parse_board_spec(sys.argv[2])], Path(sys.argv[1]),
                         owner="other session", wait=5)
    print("held", flush=True)
    sys.stdin.read()  # hold the board until the test closes our stdin
""")


def test_a_board_held_by_another_process_is_skipped_then_waited_for(tmp_path: Path) -> None:
    locks = tmp_path / "locks"
    a = parse_board_spec("socket://127.0.0.1:7001")
    b = parse_board_spec("socket://127.0.0.1:7002")
    other = subprocess.Popen([sys.executable, "-c", HOLDER, str(locks), a.text],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             cwd=PROJECT)
    try:
        assert other.stdout is not None and other.stdout.readline().strip() == "held"
        mine = acquire_board([a, b], locks, owner="me", wait=5)
        assert mine.spec == b  # the free board, at once
        with pytest.raises(BoardBusyError, match=r"held by other session") as busy:
            acquire_board([a, b], locks, owner="me too", wait=0.3)
        assert "held by me" in str(busy.value)  # both holders are named
        mine.release()
        again = acquire_board([a, b], locks, owner="me", wait=5)
        assert again.spec == b
        again.release()
    finally:
        other.communicate(timeout=10)  # closes its stdin: it exits, the OS drops its lock
    last = acquire_board([a], locks, owner="me", wait=1)
    assert last.spec == a
    last.release()
    journal = [json.loads(x) for x in (locks / "journal.jsonl").read_text().splitlines()]
    assert [j["port"] for j in journal] == [b.port, b.port, a.port]  # the other is not ours
    assert all(j["released"] >= j["acquired"] for j in journal)


def test_a_port_named_twice_is_one_board(tmp_path: Path) -> None:
    device = tmp_path / "ttyACM0"
    device.touch()
    alias = tmp_path / "by-id-stlink"
    alias.symlink_to(device)
    one = parse_board_spec(f"serial:{device}:921600")
    two = parse_board_spec(f"serial:{alias}")
    assert lock_key(one) == lock_key(two)
    held = acquire_board([one], tmp_path / "locks", owner="me", wait=1)
    with pytest.raises(BoardBusyError):
        acquire_board([two], tmp_path / "locks", owner="me", wait=0.2)
    held.release()


# --- specs ----------------------------------------------------------------------------
def test_auto_is_pinned_to_a_port_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    port = PortInfo("/dev/ttyACM3", "STLINK-V3", vid=0x0483, pid=0x3754, is_stlink=True)
    monkeypatch.setattr(board, "list_ports", lambda: [port])
    [(spec, why)] = resolve_boards(["auto"])
    assert spec.port == "/dev/ttyACM3" and spec.desc == "serial:/dev/ttyACM3:921600"
    assert why.startswith("first ST-LINK virtual COM port")


def test_no_board_and_bad_specs_are_errors() -> None:
    with pytest.raises(board.BoardNotFoundError, match="--stedge-board"):
        resolve_boards([])
    with pytest.raises(board.BoardError, match="accepted"):
        resolve_boards(["usb:3"])


def test_other_stages_are_left_to_the_builtin_runner(tmp_path: Path) -> None:
    for stage in ("generate", "validate-host", "analyze"):
        assert board_plugin.pytest_stedge_run_stage(
            config=None, case=None, stage=stage, install=None,  # type: ignore[arg-type]
            workdir=tmp_path, timeout=1.0, board_desc="serial:COM7") is None


def test_header_width_follows_the_tool_version() -> None:
    assert header_bytes("2.1.0") == 1 and header_bytes("1.0") == 1
    assert header_bytes("2.2.0") == 2 and header_bytes("4.0.1") == 2


# --- loader ---------------------------------------------------------------------------
def test_loader_command_fills_placeholders_and_never_uses_a_shell(
        case: Case, tmp_path: Path) -> None:
    spec = parse_board_spec("serial:/dev/ttyACM0:115200")
    argv = loader_argv("flash.sh --elf '{output}/net work.elf' {port}@{baud} {name} {x}; rm x",
                       case=case, workdir=tmp_path, spec=spec)
    assert argv == ["flash.sh", "--elf", f"{tmp_path}/st_ai_output/net work.elf",
                    "/dev/ttyACM0@115200", "network", "{x};", "rm", "x"]
    with pytest.raises(BoardLoaderError, match="stedge_board_loader"):
        loader_argv("flash 'unclosed", case=case, workdir=tmp_path, spec=spec)


def test_loader_failure_names_the_command_status_and_last_lines(tmp_path: Path) -> None:
    script = "print('connecting to ST-LINK'); print('Error: no ST-LINK detected'); exit(3)"
    with pytest.raises(BoardLoaderError) as err:
        run_loader([sys.executable, "-c", script], cwd=tmp_path, timeout=30)
    text = str(err.value)
    assert "exited with status 3" in text and "Error: no ST-LINK detected" in text
    assert sys.executable in text
    assert "Error: no ST-LINK detected" in (tmp_path / "board-loader.log").read_text()
    failure = board_failure(["stedgeai", "validate"], err.value)
    assert failure.reason is not None and failure.reason.startswith("board loader failed: ")
    with pytest.raises(BoardLoaderError, match="cannot start"):
        run_loader([str(tmp_path / "no-such-flasher")], cwd=tmp_path, timeout=5)


def test_n6_loader_config_keeps_the_install_settings_and_points_at_the_item(
        case: Case, tmp_path: Path) -> None:
    template = tmp_path / "config_n6l.json"
    template.write_text(json.dumps({"network.c": "x.c", "project_build_conf": "N6-DK"}))
    workdir = tmp_path / "item"
    workdir.mkdir()
    cfg = json.loads(write_n6_loader_config(template, case, workdir).read_text())
    assert cfg == {"network.c": str(workdir / "st_ai_output" / "network.c"),
                   "project_build_conf": "N6-DK"}
    template.write_text("{not json")
    with pytest.raises(BoardLoaderError, match="not valid JSON"):
        write_n6_loader_config(template, case, workdir)


# --- board checks ---------------------------------------------------------------------
def test_check_board_describes_the_firmware(sim: BoardSimulator, case: Case,
                                            tmp_path: Path) -> None:
    info = check_board(parse_board_spec(sim.url), case, tmp_path, 2)
    assert info == {"device": "STM32N6", "protocol": "3.2", "runtime": info["runtime"],
                    "network": "network"}


def test_another_network_on_the_board_is_refused(sim: BoardSimulator, case: Case,
                                                 tmp_path: Path) -> None:
    sim.name = "kws"
    with pytest.raises(BoardNetworkMismatchError, match="'kws', expected 'network'"):
        check_board(parse_board_spec(sim.url), case, tmp_path, 2)
    sim.name, sim.signature = "network", "0x1234abcd"
    (tmp_path / "st_ai_output").mkdir()
    (tmp_path / "st_ai_output" / "network_c_info.json").write_text(
        json.dumps({"network_signature": "0xfeedbeef"}))
    assert generated_signature(tmp_path) == "0xfeedbeef"
    with pytest.raises(BoardNetworkMismatchError, match="signature") as err:
        check_board(parse_board_spec(sim.url), case, tmp_path, 2)
    assert board_failure(["v"], err.value).reason.startswith(  # type: ignore[union-attr]
        "wrong network on the board: ")


@pytest.mark.parametrize(("faults", "error", "label"), [
    (Faults(mute=True), BoardNotValidationFirmwareError, "not the validation firmware"),
    (Faults(version=0x0501), BoardProtocolVersionError, "unknown validation protocol version"),
])
def test_boards_that_are_not_usable_fail_with_what_they_are(
        sim: BoardSimulator, case: Case, tmp_path: Path, faults: Faults,
        error: type[Exception], label: str) -> None:
    sim.faults = faults
    with pytest.raises(error) as err:
        check_board(parse_board_spec(sim.url), case, tmp_path, 2)
    failure = board_failure(["stedgeai", "validate"], err.value)  # type: ignore[arg-type]
    assert failure.reason == f"{label}: {err.value}"
    assert failure.short().startswith(f"stedgeai validate failed: {label}: ")


# --- per-layer ------------------------------------------------------------------------
@pytest.mark.parametrize(("faults", "error", "label"), [
    (Faults(disconnect_at_node="conv1"), BoardDisconnectedError, "board disconnected"),
    (Faults(hang_at_node="conv1"), BoardTimeoutError, "board timed out"),
])
def test_a_board_lost_mid_inference_fails_with_what_arrived_then_reconnects(
        sim: BoardSimulator, case: Case, tmp_path: Path, faults: Faults,
        error: type[Exception], label: str) -> None:
    spec = parse_board_spec(sim.url)
    sim.faults = faults
    with pytest.raises(error, match=r"received so far: \d node report\(s\) \(last: '") as err:
        per_layer({}, spec, case, tmp_path, 2, timeout=1.0)
    assert "relu0" in str(err.value) or "conv1" in str(err.value)
    assert board_failure(["v"], err.value).reason.startswith(label)  # type: ignore[arg-type]
    sim.faults = Faults()  # the next item connects again and gets a full dump
    result: dict[str, object] = {}
    per_layer(result, spec, case, tmp_path, 2, timeout=5.0)
    assert [t["name"] for t in result["board_timings"]] == NODES  # type: ignore[union-attr]
    assert result["divergence"]["first_diverging"] is None  # type: ignore[index]
    assert not result.get("diagnostics")


def test_a_board_still_booting_after_the_loader_is_given_time_to_answer(
        sim: BoardSimulator, case: Case, tmp_path: Path) -> None:
    import threading

    sim.faults = Faults(mute=True)
    boot = threading.Timer(0.7, lambda: setattr(sim, "faults", Faults()))
    boot.start()
    try:
        info = check_board(parse_board_spec(sim.url), case, tmp_path, 2, settle=5.0)
    finally:
        boot.cancel()
    assert info["network"] == "network"
