"""Bad input and faults (issue 8): each one a clear error, and the next user can reconnect."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import serial
from test_board_sim import NODES, make_model, reference

from pytest_stedge.board.client import BoardClient
from pytest_stedge.board.errors import (
    BoardBusyError,
    BoardDisconnectedError,
    BoardNetworkMismatchError,
    BoardNotFoundError,
    BoardNotValidationFirmwareError,
    BoardProtocolError,
    BoardProtocolVersionError,
    BoardTimeoutError,
)
from pytest_stedge.board.messages import Timeouts
from pytest_stedge.board.sim.simulator import BoardSimulator, Faults

FAST = Timeouts(sync=0.3, info=1.0, run_ack=1.0, input_ack=1.0, op=0.5, packet_sync=1.0)


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_model(tmp_path_factory.mktemp("faults") / "sim.onnx")


@pytest.fixture
def sim(model: Path) -> Iterator[BoardSimulator]:
    with BoardSimulator(model) as s:
        s.start_socket()
        yield s


FEEDS = {"x": np.full((1, 8), 0.5, np.float32), "k": np.arange(8, dtype=np.int8).reshape(1, 8)}


def test_no_such_port() -> None:
    with pytest.raises(BoardNotFoundError, match="cannot open serial port '/dev/ttyNOPE9'"):
        BoardClient("serial:/dev/ttyNOPE9:921600").connect()


def test_nothing_listening_at_a_socket_url(sim: BoardSimulator) -> None:
    sim.stop()
    with pytest.raises(BoardNotFoundError, match="is the simulator or relay running"):
        BoardClient(sim.url, timeouts=FAST).connect()


def test_port_held_by_another_program(model: Path) -> None:
    with BoardSimulator(model) as sim:
        path = sim.start_pty()
        with (serial.Serial(path, exclusive=True),  # e.g. a terminal left open
              pytest.raises(BoardBusyError, match="held by another program")):
            BoardClient(f"serial:{path}", timeouts=FAST).connect()
        with BoardClient(f"serial:{path}", timeouts=FAST) as board:  # released: works again
            assert board.network_info().name == "network"


@pytest.mark.parametrize("faults", [Faults(mute=True),
                                    Faults(garbage_on_sync=b"Hello from my blinky app\r\n" * 3)],
                         ids=["silent", "other-program-output"])
def test_board_without_the_validation_firmware(sim: BoardSimulator, faults: Faults) -> None:
    sim.faults = faults
    with pytest.raises(BoardNotValidationFirmwareError) as info:
        BoardClient(sim.url, timeouts=FAST).connect()
    assert "not running the validation firmware" in str(info.value)
    assert "flash it with" in str(info.value)


def test_unknown_protocol_version_names_both_versions(sim: BoardSimulator) -> None:
    sim.faults = Faults(version=0x0401)
    with pytest.raises(BoardProtocolVersionError) as info:
        BoardClient(sim.url, timeouts=FAST).connect()
    assert "msg v4.1" in str(info.value) and "v3.0 to v3.2" in str(info.value)


def test_board_running_a_different_network(sim: BoardSimulator) -> None:
    with BoardClient(sim.url, timeouts=FAST) as board:
        with pytest.raises(BoardNetworkMismatchError, match="signature '0x.*expected '0x1234"):
            board.check_network(signature="0x1234abcd")
        with pytest.raises(BoardNetworkMismatchError, match="name 'network', expected 'kws'"):
            board.check_network(name="kws")
        # the c_info.json form ("0x", any case, longer than the board keeps) matches
        full = sim.signature.upper().replace("0X", "0x") + "ffff"
        assert board.check_network(name="network", signature=full).name == "network"


def _partial(exc: pytest.ExceptionInfo[BaseException]) -> object:
    return getattr(exc.value, "partial", None)


def test_timeout_mid_inference_reports_what_arrived_then_the_next_user_reconnects(
        sim: BoardSimulator) -> None:
    sim.faults = Faults(hang_at_node="matmul")
    board = BoardClient(sim.url, timeouts=FAST)
    board.connect()
    with pytest.raises(BoardTimeoutError) as info:
        board.run(FEEDS, mode="per-layer-data")
    partial = _partial(info)
    assert [n.name for n in partial.nodes] == NODES[:3]  # type: ignore[attr-defined]
    assert "no answer for 0.5 s" in str(info.value)
    assert "received so far: 3 node report(s) (last: 'matmul')" in str(info.value)
    sim.faults = Faults()
    with BoardClient(sim.url, timeouts=FAST) as again:  # port was released by the failure
        assert again.run(FEEDS).outputs["probs"].shape == (1, 8)


def test_io_only_run_that_never_answers_times_out(sim: BoardSimulator) -> None:
    sim.faults = Faults(hang_at_node=0)
    with (BoardClient(sim.url, timeouts=FAST) as board,
          pytest.raises(BoardTimeoutError, match="waiting for 'op'.*0 node report")):
        board.run(FEEDS)


def test_disconnect_in_the_middle_of_a_message(sim: BoardSimulator) -> None:
    sim.faults = Faults(disconnect_at_node="relu")
    with (BoardClient(sim.url, timeouts=FAST) as board,
          pytest.raises(BoardDisconnectedError) as info):
        board.run(FEEDS, mode="per-layer")
    assert "link lost" in str(info.value) and "last: 'matmul'" in str(info.value)
    assert len(_partial(info).nodes) == 3  # type: ignore[attr-defined]
    sim.faults = Faults()
    with BoardClient(sim.url, timeouts=FAST) as board:
        assert len(board.run(FEEDS, mode="per-layer").nodes) == len(NODES)


def test_disconnect_of_a_serial_device(model: Path) -> None:
    with BoardSimulator(model, faults=Faults(disconnect_at_node="add")) as sim:
        path = sim.start_pty()
        with BoardClient(f"serial:{path}", timeouts=FAST) as board:
            with pytest.raises(BoardDisconnectedError) as info:
                board.run(FEEDS, mode="per-layer")
            assert not board.connected  # closed, so the port is free for the next user
    # A hung-up pseudo-terminal drops what it still buffered, like an unplugged USB VCP.
    assert "link lost" in str(info.value) and "received so far:" in str(info.value)


def test_garbage_bytes_in_place_of_a_report(sim: BoardSimulator) -> None:
    sim.faults = Faults(garbage_at_node="softmax")
    with (BoardClient(sim.url, timeouts=FAST) as board,
          pytest.raises(BoardProtocolError, match="garbage on the line") as info):
        board.run(FEEDS, mode="per-layer-data")
    assert [n.name for n in _partial(info).nodes] == NODES[:4]  # type: ignore[attr-defined]


def test_wrong_output_from_one_node_onward(sim: BoardSimulator, model: Path) -> None:
    sim.faults = Faults(wrong_from_node="relu")
    ref = reference(model, FEEDS)
    with BoardClient(sim.url, timeouts=FAST) as board:
        out = board.run(FEEDS, mode="per-layer-data")
    same = [all(np.array_equal(v, ref[k]) for k, v in n.tensors.items()) for n in out.nodes]
    assert same == [True, True, True, False, False, False]
    assert not np.allclose(out.outputs["probs"], ref["probs"])
