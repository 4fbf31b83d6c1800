"""A board simulator: ST's validation firmware protocol, byte for byte, serving an ONNX model.

It listens on a loopback TCP port (pyserial URL ``socket://127.0.0.1:PORT``) or a
pseudo-terminal, runs inferences with onnxruntime, and in per-layer modes reports each
ONNX node as one operator with its output tensors. Faults can be injected (see
:class:`Faults`). Optionally throttles what it sends to a UART's line rate (baud/10 B/s).

    python -m pytest_stedge.board.sim model.onnx --socket 127.0.0.1:0   # prints the URL
    python -m pytest_stedge.board.sim model.onnx --pty --baud 921600    # prints the device
"""

from __future__ import annotations

import argparse
import hashlib
import ipaddress
import os
import select
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Self

from pytest_stedge.board import protocol as bp
from pytest_stedge.errors import BoardError

from .engine import Faults, LinkClosed, Session
from .model import SimModel

_CATCH_UP = 0.02
BANNER = (b"\r\n#\r\n# aiValidation simulator (pytest-stedge)\r\n#\r\n"
          b"READY to receive a CMD from the HOST... (protobuf)\r\n")



class _Stream:
    """Blocking byte stream over a file descriptor or a socket, throttled on write."""

    def __init__(self, stop: threading.Event, rate: float | None, fd: int | None = None,
                 sock: socket.socket | None = None) -> None:
        self.stop, self.rate, self.fd, self.sock = stop, rate, fd, sock
        self._next = 0.0
        self._buf = bytearray()

    def _fileno(self) -> int:
        return self.fd if self.fd is not None else self.sock.fileno()  # type: ignore[union-attr]

    def read(self, n: int) -> bytes:
        while len(self._buf) < n:
            if self.stop.is_set():
                raise LinkClosed()
            ready, _, _ = select.select([self._fileno()], [], [], 0.1)
            if not ready:
                continue
            try:
                chunk = (os.read(self.fd, 65536) if self.fd is not None
                         else self.sock.recv(65536))  # type: ignore[union-attr]
            except OSError as exc:
                raise LinkClosed() from exc
            if not chunk:
                raise LinkClosed()
            self._buf += chunk
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    def write(self, data: bytes) -> None:
        step = len(data) if not self.rate else max(64, int(self.rate / 500))  # ~2 ms slices
        view = memoryview(data)
        for start in range(0, len(data), step):
            piece = view[start:start + step]
            if self.rate:
                now = time.monotonic()
                if self._next > now:
                    time.sleep(self._next - now)
                # A late simulator thread (CPU contention, encoding a large message) may
                # catch up on at most _CATCH_UP s: a UART's FIFO would have kept the line busy.
                self._next = max(self._next, now - _CATCH_UP) + len(piece) / self.rate
            self._write_all(piece)

    def _write_all(self, piece: memoryview) -> None:
        while len(piece):
            if self.stop.is_set():
                raise LinkClosed()
            _, ready, _ = select.select([], [self._fileno()], [], 0.1)
            if not ready:
                continue
            try:
                sent = (os.write(self.fd, piece) if self.fd is not None
                        else self.sock.send(piece))  # type: ignore[union-attr]
            except (BlockingIOError, InterruptedError):
                continue
            except OSError as exc:
                raise LinkClosed() from exc
            piece = piece[sent:]


class BoardSimulator:
    """Serve one ONNX model over the validation protocol.

    :param model: path of the ONNX model.
    :param name: the network's C name.
    :param header_bytes: 2 (ST Edge AI Core >= 2.2, default) or 1 (<= 2.1).
    :param baud: throttle sent bytes to ``baud / 10`` per second; ``None`` = full speed.
    :param faults: faults to inject; may be replaced between connections.
    :param c_info: N6 mode: report one record per epoch of this ``network_c_info.json``,
        its buffers named, laid out and quantized as it says (:mod:`.n6`); ``model`` is
        then the ONNX model whose names the c_info uses (the tool's ``*_OE_*.onnx``).
    :param upload: N6 mode: send intermediate data (False: descriptors only, as the stock
        firmware does).
    :param banner: print a boot banner first (default: on a pseudo-terminal, where the
        board boots once, but not per TCP connection: ST's socket client does not drain).
    """

    def __init__(self, model: str | Path, *, name: str = "network", header_bytes: int = 2,
                 baud: int | None = None, faults: Faults | None = None,
                 version: int | None = None, com_param: int = 0,
                 banner: bool | None = None, c_info: str | Path | None = None,
                 upload: bool = True) -> None:
        if c_info is not None:  # N6 mode: per-layer records per epoch, as the c_info says
            from .n6 import N6SimModel

            self.model: SimModel = N6SimModel(Path(model), Path(c_info), upload=upload)
        else:
            self.model = SimModel(Path(model))
        self.name = name
        self.header_bytes = header_bytes
        self.rate = baud / 10 if baud else None
        self.faults = faults or Faults()
        self.version = version or (0x0302 if header_bytes == 2 else 0x0301)
        self.com_param = com_param
        self.banner = banner
        self.signature = model_signature(Path(model))
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._server: socket.socket | None = None
        self._fds: list[int] = []
        self.url = ""

    # --- transports ------------------------------------------------------------------
    def start_socket(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Listen on a loopback TCP port; returns the ``socket://`` URL. One host at a time."""
        check_loopback(host)
        srv = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind((host, port))
        srv.listen(4)
        srv.settimeout(0.1)
        self._server = srv
        bound = srv.getsockname()
        self.url = f"socket://{host}:{bound[1]}"
        self._spawn(self._accept_loop)
        return self.url

    def start_pty(self) -> str:
        """Open a pseudo-terminal pair; returns the device path a client opens."""
        import tty

        master, slave = os.openpty()
        tty.setraw(slave)  # no echo, no CR/LF translation: a binary line
        os.set_blocking(master, False)
        self._fds += [master, slave]
        self.url = os.ttyname(slave)
        stream = _Stream(self._stop, self.rate, fd=master)
        if self.banner is not False:
            stream.write(BANNER)
        self._spawn(lambda: self._serve(stream, close=lambda: self._close_fd(master)))
        return self.url

    def _spawn(self, target: Callable[[], None]) -> None:
        th = threading.Thread(target=target, name="board-sim", daemon=True)
        th.start()
        self._threads.append(th)

    def _accept_loop(self) -> None:
        assert self._server is not None
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.setblocking(False)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            stream = _Stream(self._stop, self.rate, sock=conn)
            try:
                if self.banner:
                    stream.write(BANNER)
            except LinkClosed:
                pass
            self._serve(stream, close=conn.close)

    def _close_fd(self, fd: int) -> None:
        if fd in self._fds:
            self._fds.remove(fd)
            os.close(fd)

    def stop(self) -> None:
        """Stop serving and release the port or pseudo-terminal."""
        self._stop.set()
        for th in self._threads:
            th.join(timeout=2)
        if self._server is not None:
            self._server.close()
        for fd in list(self._fds):
            self._close_fd(fd)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- protocol engine -------------------------------------------------------------
    def _serve(self, stream: _Stream, close: Callable[[], None]) -> None:
        session = getattr(self.model, "session_class", Session)(self, stream)
        try:
            while True:
                try:
                    session.handle(session.receive())
                except bp.WireError:
                    continue  # undecodable request: the firmware answers nothing
        except LinkClosed:
            pass
        except Exception as exc:  # noqa: BLE001 - a simulator bug or a bad fault: drop the link
            print(f"board_sim: {type(exc).__name__}: {exc}; closing the link", file=sys.stderr)
        finally:
            close()



def model_signature(path: Path) -> str:
    """The signature the simulator reports: ``0x`` + 32 hex digits of the file's sha256.

    Same shape as the ``signature`` of stedgeai's ``c_info.json`` (a 128-bit hex value);
    how stedgeai derives its own is not known.
    """
    return "0x" + hashlib.sha256(path.read_bytes()).hexdigest()[:32]


def check_loopback(host: str) -> None:
    """Refuse to listen anywhere but loopback: the simulator has no authentication."""
    try:
        ok = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        ok = False
    if not ok:
        raise BoardError(f"simulator host {host!r}: only loopback addresses are accepted "
                         "(127.0.0.1, ::1 or localhost)")


def main(argv: list[str] | None = None) -> int:
    """``python -m pytest_stedge.board.sim MODEL.onnx --socket HOST:PORT | --pty``."""
    p = argparse.ArgumentParser(
        prog="python -m pytest_stedge.board.sim",
        description="Simulate an STM32 running ST's validation firmware for an ONNX model.",
        epilog="examples:\n  python -m pytest_stedge.board.sim model.onnx --socket 127.0.0.1:0\n"
               "  python -m pytest_stedge.board.sim model.onnx --pty --baud 921600\n"
               "then: stedge board-run model.onnx --board socket://127.0.0.1:PORT --per-layer",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", type=Path, help="ONNX model to serve")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--socket", metavar="HOST:PORT", help="listen on loopback (port 0: any)")
    where.add_argument("--pty", action="store_true", help="serve on a pseudo-terminal")
    p.add_argument("--name", default="network", help="network C name (default: network)")
    p.add_argument("--baud", type=int, help="throttle to this line rate (default: no limit)")
    p.add_argument("--header-bytes", type=int, choices=(1, 2), default=2,
                   help="packet header width: 2 = ST Edge AI Core >= 2.2 (default), 1 = <= 2.1")
    p.add_argument("--version", default=None, help="msg version to report, e.g. 3.1")
    p.add_argument("--banner", action="store_true", help="print a boot banner per connection")
    p.add_argument("--c-info", type=Path, metavar="JSON",
                   help="N6 mode: one record per epoch of this network_c_info.json (MODEL is "
                        "then the tool's *_OE_*.onnx); NODE faults take epoch names")
    p.add_argument("--no-upload", action="store_true",
                   help="N6 mode: descriptors without data, like the stock firmware")
    faults_group = p.add_argument_group("faults (NODE: ONNX node name, output name or index)")
    faults_group.add_argument("--wrong-from-node", metavar="NODE",
                              help="wrong values from this node on")
    faults_group.add_argument("--hang-at-node", metavar="NODE",
                              help="go silent after this node's report")
    faults_group.add_argument("--disconnect-at-node", metavar="NODE",
                              help="drop the link halfway through this node's report")
    faults_group.add_argument("--garbage-at-node", metavar="NODE",
                              help="send non-protocol bytes instead of this node's report")
    faults_group.add_argument("--log-flood-at", metavar="NODE",
                              help="log lines for ever in place of this answer (a node, "
                                   "'sync' or 'info')")
    faults_group.add_argument("--dribble", type=float, default=0.0, metavar="SECONDS",
                              help="send every byte of every answer this many seconds apart")
    faults_group.add_argument("--mute", action="store_true", help="never answer")
    args = p.parse_args(argv)
    version = None
    if args.version:
        major, _, minor = args.version.partition(".")
        version = int(major) << 8 | int(minor or 0)
    faults = Faults(wrong_from_node=args.wrong_from_node, hang_at_node=args.hang_at_node,
                    disconnect_at_node=args.disconnect_at_node,
                    garbage_at_node=args.garbage_at_node, mute=args.mute,
                    log_flood_at=args.log_flood_at, dribble=args.dribble)
    try:
        sim = BoardSimulator(args.model, name=args.name, header_bytes=args.header_bytes,
                             baud=args.baud, faults=faults, version=version,
                             banner=True if args.banner else None, c_info=args.c_info,
                             upload=not args.no_upload)
        if args.pty:
            url = sim.start_pty()
        else:
            host, _, port = args.socket.rpartition(":")
            url = sim.start_socket(host.strip("[]") or "127.0.0.1", int(port or 0))
    except (BoardError, OSError, ValueError) as exc:
        print(f"board_sim: error: {exc}", file=sys.stderr)
        return 2
    print(url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        sim.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
