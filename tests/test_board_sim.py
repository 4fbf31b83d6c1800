"""The native client against the board simulator: sync, info, and runs in all three modes."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from pytest_stedge.board.client import BoardClient
from pytest_stedge.board.errors import BoardNotValidationFirmwareError, BoardRequestError
from pytest_stedge.board.messages import Timeouts
from pytest_stedge.board.sim.simulator import BoardSimulator, check_loopback, model_signature
from pytest_stedge.board.specs import BoardError

FAST = Timeouts(sync=0.3, info=1.0, run_ack=1.0, input_ack=1.0, op=1.0, packet_sync=1.0)
NODES = ["cast", "add", "matmul", "relu", "softmax", "argmax"]


def make_model(path: Path, width: int = 8) -> Path:
    """Two inputs (float32, int8), two outputs (float32 probabilities, int64 argmax)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = np.linspace(-1, 1, width * width, dtype=np.float32).reshape(width, width)
    nodes = [
        helper.make_node("Cast", ["k"], ["kf"], name="cast", to=TensorProto.FLOAT),
        helper.make_node("Add", ["x", "kf"], ["s"], name="add"),
        helper.make_node("MatMul", ["s", "W"], ["mm"], name="matmul"),
        helper.make_node("Relu", ["mm"], ["r"], name="relu"),
        helper.make_node("Softmax", ["r"], ["probs"], name="softmax", axis=-1),
        helper.make_node("ArgMax", ["probs"], ["label"], name="argmax", axis=-1, keepdims=1),
    ]
    graph = helper.make_graph(
        nodes, "sim",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width]),
         helper.make_tensor_value_info("k", TensorProto.INT8, [1, width])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, width]),
         helper.make_tensor_value_info("label", TensorProto.INT64, [1, 1])],
        [numpy_helper.from_array(w, "W")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def reference(model: Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every node output computed directly with onnxruntime (independent of the simulator)."""
    import onnx
    import onnxruntime as ort

    m = onnx.shape_inference.infer_shapes(onnx.load(str(model)))
    known = {v.name for v in m.graph.output}
    m.graph.output.extend([v for v in m.graph.value_info if v.name not in known])
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds)))


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_model(tmp_path_factory.mktemp("board") / "sim.onnx")


@pytest.fixture
def sim(model: Path) -> Iterator[BoardSimulator]:
    with BoardSimulator(model) as s:
        s.start_socket()
        yield s


@pytest.fixture
def feeds() -> dict[str, np.ndarray]:
    return {"x": np.linspace(0, 1, 8, dtype=np.float32).reshape(1, 8),
            "k": np.array([[1, -2, 3, -4, 5, -6, 7, 127]], np.int8)}


def test_sync_system_and_network_info(sim: BoardSimulator, model: Path) -> None:
    logs: list[str] = []
    with BoardClient(sim.url, timeouts=FAST, on_log=logs.append) as board:
        sync = board.sync()
        assert (sync.version, sync.capabilities, sync.runtime) == (
            "3.2", ["observer"], "ATONN (Neural-ART)")
        info = board.system_info()
        assert info.device == "STM32N6" and info.sclock_hz == 800_000_000
        net = board.network_info()
        assert net.name == "network" and net.signature == model_signature(model)
        assert [(d.name, d.dtype, d.shape) for d in net.inputs] == [
            ("x", np.float32, (1, 8)), ("k", np.int8, (1, 8))]
        assert [(d.name, d.dtype, d.shape) for d in net.outputs] == [
            ("probs", np.float32, (1, 8)), ("label", np.int64, (1, 1))]
        assert net.macc is None and net.params_bytes == 256 and net.n_nodes == len(NODES)
        assert [n.name for n in board.networks()] == ["network"]
        with pytest.raises(BoardRequestError, match="E_INVALID_PARAM"):
            board.network_info(1)  # no second network: the board refuses
    assert logs and logs[0].startswith("s:config:")  # logs were acknowledged, not lost


def test_io_only_run_returns_the_model_outputs(sim: BoardSimulator, model: Path,
                                               feeds: dict[str, np.ndarray]) -> None:
    ref = reference(model, feeds)
    with BoardClient(sim.url, timeouts=FAST) as board:
        out = board.run(feeds, mode="io")
        again = board.run([feeds["x"], feeds["k"]])  # by position, same link
    assert list(out.outputs) == ["probs", "label"] and out.nodes == []
    np.testing.assert_array_equal(out.outputs["probs"], ref["probs"])
    np.testing.assert_array_equal(out.outputs["label"], ref["label"])
    np.testing.assert_array_equal(again.outputs["probs"], ref["probs"])
    assert out.duration_ms is not None and out.duration_ms > 0 and out.counters[0] > 0


def test_per_layer_run_reports_every_node_without_data(sim: BoardSimulator,
                                                       feeds: dict[str, np.ndarray]) -> None:
    with BoardClient(sim.url, timeouts=FAST) as board:
        out = board.run(feeds, mode="per-layer")
    assert [n.name for n in out.nodes] == NODES
    matmul = out.nodes[2]
    assert matmul.tensors["mm"].size == 0 and matmul.descs["mm"].shape == (1, 8)
    assert len(matmul.counters) == 3 and matmul.duration_ms > 0
    assert out.duration_ms == pytest.approx(sum(n.duration_ms for n in out.nodes), rel=1e-4)
    assert out.outputs["probs"].shape == (1, 8)


def test_per_layer_data_run_carries_every_intermediate_tensor(
        sim: BoardSimulator, model: Path, feeds: dict[str, np.ndarray]) -> None:
    ref = reference(model, feeds)
    with BoardClient(sim.url, timeouts=FAST) as board:
        out = board.run(feeds, mode="per-layer-data")
    tensors = {k: v for n in out.nodes for k, v in n.tensors.items()}
    assert list(tensors) == ["kf", "s", "mm", "r", "probs", "label"]
    for name, value in tensors.items():
        np.testing.assert_array_equal(value, ref[name], err_msg=name)


def test_pseudo_terminal_and_one_byte_header_firmware(model: Path,
                                                      feeds: dict[str, np.ndarray]) -> None:
    with BoardSimulator(model, header_bytes=1) as sim:
        path = sim.start_pty()
        with BoardClient(f"serial:{path}:921600", header_bytes=1, timeouts=FAST) as board:
            assert board.sync().version == "3.1"
            assert board.system_info().extra == (0, 1_000_000_000, 900_000_000, 0)
            out = board.run(feeds, mode="per-layer-data")
    assert len(out.nodes) == len(NODES) and out.outputs["label"].shape == (1, 1)


def test_boot_banner_is_swallowed_before_sync(model: Path,
                                               feeds: dict[str, np.ndarray]) -> None:
    with BoardSimulator(model, banner=True) as sim:
        sim.start_socket()
        with BoardClient(sim.url, timeouts=FAST) as board:
            assert board.run(feeds).outputs["probs"].shape == (1, 8)


def test_usb_cdc_packet_size_switch_after_system_info(model: Path,
                                                      feeds: dict[str, np.ndarray]) -> None:
    with BoardSimulator(model, com_param=382) as sim:
        sim.start_socket()
        with BoardClient(sim.url, timeouts=FAST) as board:
            assert board.system_info().com_param == 382
            out = board.run(feeds, mode="per-layer-data")  # messages now in 384-byte packets
            board.sync()  # v3.2: DISCONNECT, then SYNC at 32-byte packets
            assert board.run(feeds).outputs["probs"].shape == (1, 8)
    assert [n.name for n in out.nodes] == NODES


def test_client_with_the_wrong_header_width_is_told_about_it(sim: BoardSimulator) -> None:
    with pytest.raises(BoardNotValidationFirmwareError, match="2-byte packet headers"):
        BoardClient(sim.url, header_bytes=1, timeouts=FAST).connect()


def test_inputs_of_the_wrong_dtype_or_count_are_refused_before_sending(
        sim: BoardSimulator, feeds: dict[str, np.ndarray]) -> None:
    with BoardClient(sim.url, timeouts=FAST) as board:
        with pytest.raises(BoardError, match="input 'k': dtype float32, the board expects int8"):
            board.run({"x": feeds["x"], "k": feeds["k"].astype(np.float32)})
        with pytest.raises(BoardError, match="1 input\\(s\\) given"):
            board.run([feeds["x"]])
        with pytest.raises(BoardError, match="run mode 'fast'"):
            board.run(feeds, mode="fast")
        assert board.run(feeds).outputs  # the link is still usable


def test_simulator_command_prints_its_url_and_serves(model: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "pytest_stedge.board.sim", str(model),
                             "--socket", "127.0.0.1:0"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("socket://127.0.0.1:")
        with BoardClient(url, timeouts=Timeouts(sync=2.0)) as board:
            assert board.network_info().name == "network"
    finally:
        proc.terminate()
        proc.communicate(timeout=5)  # also closes the pipe


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.4", "example.com"])
def test_simulator_listens_on_loopback_only(host: str) -> None:
    with pytest.raises(BoardError, match="only loopback"):
        check_loopback(host)


def test_simulator_sends_one_sync_byte_per_consumed_packet_and_none_after_the_last(
        sim: BoardSimulator) -> None:
    import socket

    from pytest_stedge.board import protocol as bp
    host, port = sim.url.removeprefix("socket://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=2) as raw:
        def recv_exact(n: int) -> bytes:
            data = b""
            while len(data) < n:
                data += raw.recv(n - len(data))
            return data

        def quiet() -> bool:
            raw.settimeout(0.2)
            try:
                return raw.recv(1) == b""
            except TimeoutError:
                return True
            finally:
                raw.settimeout(2)

        raw.sendall(bp.host_packets(bp.request(1, bp.CMD_SYNC), 32, 2)[0])
        answer = recv_exact(34)
        assert answer[:2] == bytes([0x80, 15]) and answer[2:17] == bp.encode(
            bp.resp_schema(2), {"reqid": 1, "state": 0,
                                "sync": {"version": 0x0302, "capability": 1, "rtid": 0x10004}})
        assert quiet()
        raw.sendall(bp.host_packets(bp.request(2, bp.CMD_NETWORK_RUN, 1, "network", 1), 32, 2)[0])
        assert recv_exact(34)[:2] == bytes([0x80, 10])  # ack S_WAITING{32 bytes}
        packets = bp.host_packets(bp.host_data(bytes(32)), 32, 2)  # 41 bytes: 2 packets
        assert len(packets) == 2
        raw.sendall(packets[0])
        assert recv_exact(1) == bytes([bp.SYNC_BYTE])
        raw.sendall(packets[1])
        ack = recv_exact(34)  # straight to the ack: no sync byte after the last packet
        assert ack[:2] == bytes([0x80, 10])
        assert bp.decode(bp.resp_schema(2), ack[2:12])["ack"] == {"param": 32, "error": 0}
