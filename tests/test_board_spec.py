"""Board specs (--stedge-board values) and serial port discovery."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from pytest_stedge.board.errors import BoardNotFoundError
from pytest_stedge.board.specs import (
    BoardSpec,
    PortInfo,
    choose_auto_port,
    list_ports,
    parse_board_spec,
    resolve_board_spec,
)
from pytest_stedge.errors import BoardError, StedgeError


@pytest.mark.parametrize(("text", "port", "baud", "desc"), [
    ("serial:/dev/ttyACM0:921600", "/dev/ttyACM0", 921600, "serial:/dev/ttyACM0:921600"),
    ("serial:COM7", "COM7", 921600, "serial:COM7:921600"),
    ("serial:COM7:115200", "COM7", 115200, "serial:COM7:115200"),
    ("serial:921600", None, 921600, "serial:921600"),
    ("serial", None, 921600, "serial:921600"),
    ("auto", None, 921600, "serial:921600"),
    ("serial::460800", None, 460800, "serial:460800"),
])
def test_serial_specs(text: str, port: str | None, baud: int, desc: str) -> None:
    spec = parse_board_spec(text)
    assert (spec.kind, spec.port, spec.baud) == ("serial", port, baud)
    assert spec.desc == desc


@pytest.mark.parametrize("text", ["socket://127.0.0.1:5555", "socket:127.0.0.1:5555"])
def test_socket_specs_become_pyserial_urls(text: str) -> None:
    spec = parse_board_spec(text)
    assert spec == BoardSpec("socket", "socket://127.0.0.1:5555", spec.baud, text)
    assert spec.desc == "socket:127.0.0.1:5555"


@pytest.mark.parametrize(("text", "why"), [
    ("usb:COM7", "must start with 'serial'"),
    ("/dev/ttyACM0", "must start with 'serial'"),
    ("serial:COM7:12", "outside 1200..20000000"),
    ("serial:115200:921600", "two numbers"),
    ("socket://localhost", "needs a host and a port"),
    ("socket://:99999", "needs a host and a port"),
])
def test_bad_specs_name_the_value_and_what_is_accepted(text: str, why: str) -> None:
    with pytest.raises(BoardError) as info:
        parse_board_spec(text)
    message = str(info.value)
    assert repr(text) in message and why in message
    assert "serial[:PORT][:BAUD]" in message and "socket://HOST:PORT" in message
    assert isinstance(info.value, StedgeError)


@dataclass
class FakePort:
    device: str
    description: str
    hwid: str = ""
    vid: int | None = None
    pid: int | None = None
    serial_number: str | None = None


def fake_comports(monkeypatch: pytest.MonkeyPatch, ports: list[FakePort]) -> None:
    from serial.tools import list_ports as lp

    monkeypatch.setattr(lp, "comports", lambda *a, **k: list(ports))


def test_stlink_ports_come_first_and_pci_uarts_are_left_out(
        monkeypatch: pytest.MonkeyPatch) -> None:
    fake_comports(monkeypatch, [
        FakePort("/dev/ttyS0", "16550A UART"),  # no USB id
        FakePort("/dev/ttyUSB0", "FT232R USB UART", vid=0x0403, pid=0x6001),
        FakePort("/dev/ttyACM1", "STM32 Virtual ComPort", vid=0x0483, pid=0x5740),
        FakePort("/dev/ttyACM0", "STLINK-V3", vid=0x0483, pid=0x3754),
    ])
    ports = list_ports()
    assert [p.device for p in ports] == ["/dev/ttyACM0", "/dev/ttyACM1", "/dev/ttyUSB0"]
    assert [p.is_stlink for p in ports] == [True, False, False]
    chosen = choose_auto_port()
    assert chosen.device == "/dev/ttyACM0"
    assert "first ST-LINK" in chosen.reason and "0483:3754" in chosen.reason
    assert "2 other port(s)" in chosen.reason


def test_without_stlink_the_first_usb_port_is_chosen_and_the_reason_says_so() -> None:
    chosen = choose_auto_port([PortInfo("COM9", "USB Serial Device", vid=0x0403, pid=0x6001)])
    assert chosen.device == "COM9" and "no ST-LINK port found" in chosen.reason


def test_no_port_at_all_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_comports(monkeypatch, [FakePort("/dev/ttyS0", "16550A UART")])
    with pytest.raises(BoardNotFoundError, match="no USB serial port found.*serial:/dev/ttyACM0"):
        choose_auto_port()


def test_auto_spec_is_pinned_to_the_chosen_port(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_comports(monkeypatch, [FakePort("/dev/ttyACM3", "STLINK-V3", vid=0x0483, pid=0x374E)])
    spec, reason = resolve_board_spec(parse_board_spec("serial:460800"))
    assert (spec.port, spec.baud, spec.desc) == ("/dev/ttyACM3", 460800,
                                                 "serial:/dev/ttyACM3:460800")
    assert "first ST-LINK" in reason
    named = parse_board_spec("serial:COM7")
    assert resolve_board_spec(named) == (named, "")
