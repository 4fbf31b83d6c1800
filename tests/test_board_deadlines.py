"""Hostile boards (issue 16): every client call returns or raises a board error within its
deadline + 1 s, whatever arrives (log text, dribbled bytes, huge sizes, garbage), and its
memory stays under the cap :class:`Limits` documents.

Boards are the simulator with its fault modes and :mod:`hostile_board`, a loopback server
that misbehaves on purpose. Each call runs in a worker thread, so a client that would hang
fails the test instead of hanging it.
"""

from __future__ import annotations

import re
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hostile_board import (
    SHAPE,
    Conn,
    HostileBoard,
    after,
    answers,
    dribble,
    endless,
    minfo,
    text_stream,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_board_sim import make_model

from pytest_stedge.board import protocol as bp
from pytest_stedge.board import tensors as bt
from pytest_stedge.board.client import BoardClient
from pytest_stedge.board.errors import (
    BoardNotValidationFirmwareError,
    BoardProtocolError,
    BoardTimeoutError,
)
from pytest_stedge.board.messages import Limits, Timeouts
from pytest_stedge.board.sim.simulator import BoardSimulator, Faults
from pytest_stedge.errors import BoardError

FAST = Timeouts(sync=0.3, info=0.5, run_ack=0.5, input_ack=0.5, op=0.5, packet_sync=0.5,
                per_layer=2.0)
# Tests that expect a cap or a protocol error give an honest exchange time even on a loaded
# machine: the in-process hostile board shares the interpreter with the client.
PATIENT = Timeouts(sync=5.0, info=5.0, run_ack=5.0, input_ack=5.0, op=5.0, packet_sync=5.0,
                   per_layer=60.0)
SMALL = Limits(message_bytes=256 << 10, info_bytes=16 << 10, tensor_bytes=256 << 10,
               run_bytes=1 << 20, node_reports=2000, node_tensors=64, log_lines=64,
               log_chars=256)
RATE = 921600 / 20  # bytes/s the deadlines assume on a socket: half of 921,600 baud's line
X = np.full(SHAPE, 0.5, np.float32)


def memory_cap(limits: Limits) -> int:
    """What the Limits docstring promises: run data + two messages in flight + kept logs,
    plus ~2 KiB per node report and 4 MiB for the interpreter, threads and the servers."""
    return (limits.run_bytes + 2 * limits.message_bytes + 4 * limits.log_lines * limits.log_chars
            + 2048 * limits.node_reports + (4 << 20))


@dataclass
class Outcome:
    value: Any = None
    error: BaseException | None = None
    elapsed: float = 0.0
    peak: int = 0


def timed(call: Callable[[], Any], deadline: float) -> Outcome:
    """Run ``call`` in a thread; fail unless it ended within ``deadline`` + 1 s. Only board
    errors may escape it; records its memory peak."""
    out = Outcome()

    def work() -> None:
        start = time.monotonic()
        try:
            out.value = call()
        except BaseException as exc:  # noqa: BLE001 - checked below
            out.error = exc
        out.elapsed = time.monotonic() - start

    tracemalloc.start()
    try:
        worker = threading.Thread(target=work, daemon=True)
        worker.start()
        worker.join(deadline + 6.0)
        out.peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert not worker.is_alive(), f"still running {deadline + 6:.1f} s in (deadline {deadline:.2f} s)"
    assert out.elapsed <= deadline + 1.0, f"took {out.elapsed:.2f} s, deadline {deadline:.2f} s"
    if out.error is not None and not isinstance(out.error, BoardError):
        raise out.error
    return out


def connected(url: str, limits: Limits = SMALL, timeouts: Timeouts = PATIENT) -> BoardClient:
    client = BoardClient(url, timeouts=timeouts, limits=limits)
    timed(client.connect, client.deadline("connect"))
    return client


# --- the deadline figures, by hand ------------------------------------------------------
def test_deadlines_follow_the_documented_formula() -> None:
    client = BoardClient("socket://127.0.0.1:9", timeouts=FAST)
    slack = 65536 / 46080  # one small message (64 KiB) at half of 921,600 baud's 92,160 B/s
    assert client.deadline("sync") == pytest.approx(0.3 + slack)
    assert client.deadline("network_info") == pytest.approx(0.5 + slack)
    assert client.deadline("connect") == pytest.approx(2.0 + 0.1 + 0.3 + slack)
    x = bt.TensorDesc("x", np.dtype(np.float32), (1, 64))  # 256 bytes: 9 packets of 34
    y = bt.TensorDesc("y", np.dtype(np.float32), (1, 10))  # 40 bytes + 512 of descriptor
    info = _info((x,), (y,))
    io = 0.5 + 0.5 + slack + (0.5 + 0.5 + 9 * 34 / 46080) + 552 / 46080
    assert client.deadline("run", info, "io") == pytest.approx(io)
    # per-layer: min(per_layer 2.0, 1 node x (op 0.5 + one small message))
    assert client.deadline("run", info, "per-layer") == pytest.approx(io + 0.5 + slack)
    with pytest.raises(BoardError, match="accepted connect, sync"):
        client.deadline("flash")


def _info(inputs: tuple[bt.TensorDesc, ...], outputs: tuple[bt.TensorDesc, ...]) -> Any:
    from pytest_stedge.board.messages import NetworkInfo

    return NetworkInfo("net", "", "", "", "", None, 1, inputs, outputs, None, None, "", 4)


# --- hostile boards, one behaviour each ---------------------------------------------------
@pytest.fixture
def hostile() -> Iterator[Callable[[Callable[[Conn], None]], HostileBoard]]:
    boards: list[HostileBoard] = []

    def start(script: Callable[[Conn], None]) -> HostileBoard:
        boards.append(HostileBoard(script))
        return boards[-1]

    yield start
    for board in boards:
        board.close()


def test_board_printing_text_at_line_rate_fails_the_sync_in_time(hostile: Any) -> None:
    # Today's client: every packet of text resets its silence timer, and a text packet
    # never carries the end-of-message bit: it read for ever.
    board = hostile(text_stream())
    client = BoardClient(board.url, timeouts=PATIENT, limits=SMALL)
    out = timed(client.connect, client.deadline("connect"))
    assert isinstance(out.error, BoardNotValidationFirmwareError)
    assert "no end-of-message packet in 16384 bytes while waiting for 'sync'" in str(out.error)
    assert re.search(r"the line carries text '[^']*(sensor 17|value 0\.4213|all good)",
                     str(out.error))


def test_text_slower_than_half_the_line_rate_ends_the_wait(hostile: Any) -> None:
    board = hostile(text_stream(rate=2000.0))  # 2 kB/s: its bytes earn less than they take
    client = BoardClient(board.url, timeouts=FAST, limits=SMALL)
    out = timed(client.connect, client.deadline("connect"))
    assert isinstance(out.error, BoardNotValidationFirmwareError)
    assert "'sync' not complete after" in str(out.error)
    assert re.search(r"starting with text '[^']*(sensor|value|good|app)", str(out.error))
    assert out.peak < memory_cap(SMALL)


@pytest.mark.parametrize("command", [bp.CMD_SYNC, bp.CMD_NETWORK_INFO])
def test_board_dribbling_a_byte_every_quarter_second_fails_in_time(hostile: Any,
                                                                   command: int) -> None:
    answer = ({"state": bp.S_IDLE, "sync": {"version": 0x0302}} if command == bp.CMD_SYNC
              else {"state": bp.S_IDLE, "minfo": minfo()})
    board = hostile(dribble(command, 0.25, answer))
    client = BoardClient(board.url, timeouts=replace(FAST, sync=1.0, info=1.0), limits=SMALL)
    if command == bp.CMD_SYNC:
        out = timed(client.connect, client.deadline("connect"))
        assert isinstance(out.error, BoardNotValidationFirmwareError)
    else:
        timed(client.connect, client.deadline("connect"))
        out = timed(client.network_info, client.deadline("network_info"))
        assert isinstance(out.error, BoardTimeoutError)
    # 0.25 s per byte: the 1 s limit passes with a few bytes of the answer received
    assert "not complete after" in str(out.error) and "byte(s) of a message" in str(out.error)


def test_packet_size_of_two_gigabytes_is_refused_without_allocating(hostile: Any) -> None:
    sinfo = {"devid": 0x486, "sclock": 1, "hclock": 1, "cache": 0, "com_param": 2**31}
    board = hostile(answers(bp.CMD_SYS_INFO, lambda i: {"state": bp.S_IDLE, "sinfo": sinfo}))
    client = connected(board.url, Limits())
    out = timed(client.system_info, client.deadline("system_info"))
    assert isinstance(out.error, BoardProtocolError)
    assert "packets of 2147483648 bytes (com_param); accepted 0 (keep 32) or 32..4094" in str(
        out.error)
    assert out.peak < 1 << 20 and not client.connected


def test_message_without_end_is_cut_at_its_cap(hostile: Any) -> None:
    full = bp.header(P := bp.DEFAULT_PAYLOAD, False, 2) + bytes(range(P))
    board = hostile(after(bp.CMD_SYNC, endless(full * 256)))
    client = BoardClient(board.url, timeouts=PATIENT, limits=SMALL)
    out = timed(client.connect, client.deadline("connect"))
    assert isinstance(out.error, BoardNotValidationFirmwareError)
    assert "no end-of-message packet in 16384 bytes" in str(out.error)
    assert "(a message here holds at most 16384 bytes); the line carries bytes 00 20" in str(
        out.error)
    assert out.peak < memory_cap(SMALL)


def test_tensor_message_without_end_is_cut_at_its_cap(hostile: Any) -> None:
    full = bp.header(bp.DEFAULT_PAYLOAD, False, 2) + bytes(32)
    board = hostile(after(bp.CMD_NETWORK_RUN, endless(full * 1024)))
    client = connected(board.url)
    info = timed(client.network_info, client.deadline("network_info")).value
    out = timed(lambda: client.run([X]), client.deadline("run", info))
    assert isinstance(out.error, BoardProtocolError)
    assert "no end-of-message packet in 16384 bytes while waiting for 'op'" in str(out.error)
    assert out.peak < memory_cap(SMALL)


def test_descriptor_of_a_huge_tensor_is_refused(hostile: Any) -> None:
    huge = bt.tensor_desc_msg("x", np.dtype(np.float32), (65536, 65536, 65536, 3), 1)
    board = hostile(answers(bp.CMD_NETWORK_INFO,
                            lambda i: {"state": bp.S_IDLE, "minfo": minfo([huge])}))
    client = connected(board.url, Limits())
    out = timed(client.network_info, client.deadline("network_info"))
    assert isinstance(out.error, BoardProtocolError)
    assert "announces float32[65536, 65536, 65536, 3] = 3377699720527872 bytes" in str(out.error)
    assert f"at most {64 << 20} bytes per tensor" in str(out.error)


def test_field_announcing_two_gigabytes_is_refused(hostile: Any) -> None:
    body = bp.encode(bp.resp_schema(2), {"reqid": 1, "state": 0})
    body += bp.varint(22 << 3 | 2) + bp.varint(2**31) + b"net"  # minfo of 2 GiB, 3 bytes sent
    board = hostile(after(bp.CMD_SYNC, bp.target_packets(body, 32, 2)))
    client = BoardClient(board.url, timeouts=PATIENT)
    out = timed(client.connect, client.deadline("connect"))
    assert isinstance(out.error, BoardNotValidationFirmwareError)
    assert "field 22: 2147483648 bytes announced, 3 left" in str(out.error)


def test_log_flood_does_not_extend_the_wait(hostile: Any) -> None:
    board = hostile(answers(bp.CMD_SYNC, lambda i: {
        "state": bp.S_WAITING, "log": {"level": 1, "str": f"busy {i}"}}))
    client = BoardClient(board.url, timeouts=replace(FAST, sync=2.0), limits=SMALL)
    out = timed(client.connect, client.deadline("connect"))
    assert isinstance(out.error, BoardNotValidationFirmwareError)
    assert "no answer for 2 s while waiting for 'sync'" in str(out.error)
    assert "log line(s) instead, last 'busy" in str(out.error)
    assert out.peak < memory_cap(SMALL)


def _op(i: int, flags: int = bp.OP_WITHOUT_TENSOR) -> dict[str, Any]:
    return {"state": bp.S_PROCESSING, "op": {"name": f"n{i}", "type": flags << 24 | 1,
                                             "id": i, "duration": 0.1}}


def test_endless_node_reports_stop_at_their_cap(hostile: Any) -> None:
    board = hostile(answers(bp.CMD_NETWORK_RUN, _op, n_nodes=1_000_000))
    client = connected(board.url)  # patient: the cap, not the deadline, ends it
    info = timed(client.network_info, client.deadline("network_info")).value
    out = timed(lambda: client.run([X], mode="per-layer"), client.deadline("run", info, "per-layer"))
    assert isinstance(out.error, BoardProtocolError)
    assert ("more than 2000 node reports in one run (the network has 1000000 node(s))"
            in str(out.error))
    assert len(out.error.partial.nodes) == 2000  # type: ignore[attr-defined]
    assert out.peak < memory_cap(SMALL)


def test_more_node_reports_than_the_network_has_nodes_are_refused(hostile: Any) -> None:
    """A 1-node network's board sending node reports every 0.4 s ran > 1,100 s before (a
    per-layer budget of 3,600 s whatever the network): one report, then the refusal."""
    board = hostile(answers(bp.CMD_NETWORK_RUN, _op, interval=0.4))
    client = connected(board.url, timeouts=Timeouts())  # ST's limits: op 50 s, per-layer 1 h
    info = timed(client.network_info, client.deadline("network_info")).value
    assert info.n_nodes == 1
    out = timed(lambda: client.run([X], mode="per-layer"), 5.0)
    assert isinstance(out.error, BoardProtocolError)
    assert "more than 1 node reports in one run (the network has 1 node(s))" in str(out.error)
    assert len(out.error.partial.nodes) == 1  # type: ignore[attr-defined]
    assert out.elapsed < 2.0  # two reports, 0.4 s apart


def test_the_per_layer_budget_is_bounded_by_the_network_size() -> None:
    """By hand, from ST's limits (op 50 s, per-layer 3,600 s) at 921,600 baud (46,080 B/s
    assumed): per node one op wait and one 64 KiB message, with data every buffer too."""
    from pytest_stedge.board.budgets import per_layer_budget

    client = BoardClient("socket://127.0.0.1:9", timeouts=Timeouts())
    slack = 65536 / 46080

    def budget(info: Any, mode: str) -> float:
        return per_layer_budget(client.timeouts, client.limits, 46080, info, mode)

    x = bt.TensorDesc("x", np.dtype(np.float32), (1, 64))  # 256 bytes
    y = bt.TensorDesc("y", np.dtype(np.float32), (1, 10))  # 40 bytes
    one = _info((x,), (y,))
    assert budget(one, "per-layer") == pytest.approx(50 + slack)
    sized = replace(one, activations_bytes=46080 * 3 - 296, params_bytes=0)
    assert budget(sized, "per-layer-data") == pytest.approx(50 + slack + 3)
    unknown = replace(one, activations_bytes=None)  # no size said: no bound but the ceiling
    assert budget(unknown, "per-layer-data") == 3600
    many = replace(one, n_nodes=200)  # 200 x 51.4 s: the ceiling holds
    assert budget(many, "per-layer") == 3600
    ten = replace(one, n_nodes=10)
    assert budget(ten, "per-layer") == pytest.approx(10 * (50 + slack))
    io = client.deadline("run", one, "io")
    assert client.deadline("run", one, "per-layer") == pytest.approx(io + 50 + slack)


def test_slow_node_reports_end_at_the_run_deadline(hostile: Any) -> None:
    # each within op=1.5, to a network of many nodes: the run's deadline ends it
    board = hostile(answers(bp.CMD_NETWORK_RUN, _op, interval=0.4, n_nodes=1_000_000))
    client = connected(board.url, timeouts=replace(FAST, sync=2.0, info=2.0, op=1.5))
    info = timed(client.network_info, client.deadline("network_info")).value
    deadline = client.deadline("run", info, "per-layer")
    out = timed(lambda: client.run([X], mode="per-layer"), deadline)
    assert isinstance(out.error, BoardTimeoutError)
    assert "the operation's deadline passed while waiting for 'op'" in str(out.error)


def test_tensors_never_flagged_last_stop_at_their_cap(hostile: Any) -> None:
    desc = bt.tensor_desc_msg("t", np.dtype(np.int8), (4,), bp.TENSOR_INTERNAL)
    tensor = {"desc": desc, "data": {"type": 0, "size": 4, "addr": 0, "datas": bytes(4)}}
    board = hostile(answers(bp.CMD_NETWORK_RUN, lambda i: _op(0, bp.OP_INTERNAL) if i == 0 else {
        "state": bp.S_PROCESSING, "tensor": tensor}))
    client = connected(board.url)
    info = timed(client.network_info, client.deadline("network_info")).value
    out = timed(lambda: client.run([X], mode="per-layer-data"),
                client.deadline("run", info, "per-layer-data"))
    assert isinstance(out.error, BoardProtocolError)
    assert "node 'n0' sent more than 64 tensors without one flagged LAST" in str(out.error)


def test_run_sending_more_than_its_byte_cap_is_refused(hostile: Any) -> None:
    data = bytes(64_000)  # 17 of them pass the 1 MiB cap
    desc = bt.tensor_desc_msg("t", np.dtype(np.int8), (len(data),), bp.TENSOR_INTERNAL
                              | bp.TENSOR_LAST)
    tensor = {"desc": desc, "data": {"type": 0, "size": len(data), "addr": 0, "datas": data}}
    board = hostile(answers(bp.CMD_NETWORK_RUN, lambda i: _op(i, bp.OP_INTERNAL) if i % 2 == 0 else {
        "state": bp.S_PROCESSING, "tensor": tensor}, n_nodes=1_000_000))
    client = connected(board.url)  # patient: the cap, not the deadline, ends it
    info = timed(client.network_info, client.deadline("network_info")).value
    out = timed(lambda: client.run([X], mode="per-layer-data"),
                client.deadline("run", info, "per-layer-data"))
    assert isinstance(out.error, BoardProtocolError)
    assert f"more than {1 << 20} bytes received in one run" in str(out.error)
    assert out.peak < memory_cap(SMALL)


def test_flow_control_bytes_trickling_in_end_at_the_run_deadline(hostile: Any) -> None:
    big = bt.tensor_desc_msg("x", np.dtype(np.float32), (1, 256), bp.TENSOR_INPUT)

    def script(conn: Conn) -> None:
        while True:
            req = conn.request()
            if req["cmd"] == bp.CMD_NETWORK_INFO:
                conn.answer(bp.S_IDLE, minfo=minfo([big]))
            elif req["cmd"] == bp.CMD_NETWORK_RUN:
                conn.answer(bp.S_WAITING, ack={"param": 1024, "error": 0})
                while True:  # one sync byte per packet, each just inside packet_sync
                    conn._read(34)
                    time.sleep(0.45)
                    conn.raw(bytes((bp.SYNC_BYTE,)))
            else:
                honest = {bp.CMD_SYNC: {"sync": {"version": 0x0302}}}.get(req["cmd"], {})
                conn.answer(bp.S_IDLE, **honest)

    board = hostile(script)
    client = connected(board.url, timeouts=replace(FAST, sync=2.0, info=2.0, packet_sync=1.5))
    info = timed(client.network_info, client.deadline("network_info")).value
    deadline = client.deadline("run", info)
    out = timed(lambda: client.run([np.zeros((1, 256), np.float32)]), deadline)
    assert isinstance(out.error, BoardTimeoutError) and "deadline passed" in str(out.error)
    # 1 KiB of input is 33 packets: today's client waits out 32 sync bytes (14.4 s)
    assert 32 * 0.45 > deadline


# --- property tests ---------------------------------------------------------------------
POINTS = [bp.CMD_SYNC, bp.CMD_SYS_INFO, bp.CMD_NETWORK_INFO, bp.CMD_NETWORK_RUN]


@st.composite
def hostile_scripts(draw: st.DrawFn) -> tuple[str, Callable[[Conn], None]]:
    """Something bad in place of one answer: garbage (once, for ever, or dribbled), text,
    endless packets, or huge announced sizes."""
    point = draw(st.sampled_from(POINTS))
    kind = draw(st.sampled_from(["garbage", "garbage-forever", "dribble", "text", "endless",
                                 "huge-size"]))
    if kind == "text":
        return f"text at {point}", text_stream(draw(st.sampled_from([4.0, 1000.0, 92160.0])))
    if kind == "endless":
        full = bp.header(32, False, 2) + bytes(32)
        return f"endless at {point}", after(point, endless(full * 64))
    if kind == "huge-size":
        size = draw(st.integers(1 << 20, (1 << 32) - 1))
        field = draw(st.sampled_from([10, 11, 12, 13, 16, 17, 22]))
        body = (bp.encode(bp.resp_schema(2), {"reqid": 1, "state": 0})
                + bp.varint(field << 3 | 2) + bp.varint(size) + bytes(8))
        return f"field {field} of {size} bytes at {point}", after(
            point, bp.target_packets(body, 32, 2))
    garbage = draw(st.binary(min_size=1, max_size=300))
    if kind == "garbage":
        return f"garbage {garbage[:8].hex()} at {point}", after(point, garbage)
    if kind == "garbage-forever":
        return f"garbage for ever at {point}", after(point, endless(garbage), interval=0.01)
    interval = draw(st.sampled_from([0.05, 0.15, 0.3]))
    return f"garbage dribbled at {point}", after(
        point, iter([bytes((b,)) for b in garbage]), interval=interval)


def _session(client: BoardClient, mode: str) -> list[Outcome]:
    """connect, system_info, network_info, run: each within its deadline, stop at the first
    board error (as a user would)."""
    results = [timed(client.connect, client.deadline("connect"))]
    for name in ("system_info", "network_info"):
        if results[-1].error is not None:
            return results
        results.append(timed(getattr(client, name), client.deadline(name)))
    if results[-1].error is None:
        info = results[-1].value
        inputs = [np.zeros(d.shape, d.dtype) for d in info.inputs]
        results.append(timed(lambda: client.run(inputs, mode=mode),
                             client.deadline("run", info, mode)))
    client.close()
    return results


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(hostile_scripts(), st.sampled_from(["io", "per-layer", "per-layer-data"]))
def test_any_hostile_answer_ends_in_time_within_the_memory_cap(
        scenario: tuple[str, Callable[[Conn], None]], mode: str) -> None:
    _, script = scenario
    with HostileBoard(script) as board:
        results = _session(BoardClient(board.url, timeouts=FAST, limits=SMALL), mode)
    assert all(r.peak < memory_cap(SMALL) for r in results)
    assert any(r.error is not None for r in results)  # no hostile board passes for a good one


@pytest.fixture(scope="module")
def sim_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_model(tmp_path_factory.mktemp("deadlines") / "sim.onnx")


# A healthy simulator must pass even on a loaded machine: a second per phase.
SIM = Timeouts(sync=1.0, info=1.0, run_ack=1.0, input_ack=1.0, op=1.0, packet_sync=1.0,
               per_layer=3.0)
NODE_REFS = st.sampled_from([0, 2, "relu", "softmax", "outputs"])


@st.composite
def fault_modes(draw: st.DrawFn) -> Faults:
    """One fault of the simulator's, anywhere it can happen."""
    kind = draw(st.sampled_from(["hang", "disconnect", "garbage", "flood", "dribble", "mute",
                                 "garbage_on_sync", "version", "none"]))
    if kind == "hang":
        return Faults(hang_at_node=draw(NODE_REFS))
    if kind == "disconnect":
        return Faults(disconnect_at_node=draw(NODE_REFS))
    if kind == "garbage":
        return Faults(garbage_at_node=draw(NODE_REFS))
    if kind == "flood":
        return Faults(log_flood_at=draw(st.one_of(NODE_REFS, st.sampled_from(["sync", "info"]))))
    if kind == "dribble":
        return Faults(dribble=draw(st.sampled_from([0.02, 0.1, 0.25])))
    if kind == "mute":
        return Faults(mute=True)
    if kind == "garbage_on_sync":
        return Faults(garbage_on_sync=draw(st.binary(min_size=1, max_size=200)))
    if kind == "version":
        return Faults(version=draw(st.integers(0, 0xFFFF)))
    return Faults()


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(fault_modes(), st.sampled_from(["io", "per-layer", "per-layer-data"]))
def test_simulator_faults_end_in_time_within_the_memory_cap(
        sim_model: Path, faults: Faults, mode: str) -> None:
    with BoardSimulator(sim_model, faults=faults) as sim:
        sim.start_socket()
        results = _session(BoardClient(sim.url, timeouts=SIM, limits=SMALL), mode)
    assert all(r.peak < memory_cap(SMALL) for r in results)
    if faults == Faults():
        assert [r.error for r in results] == [None] * 4
        assert results[-1].value.outputs["probs"].shape == (1, 8)
