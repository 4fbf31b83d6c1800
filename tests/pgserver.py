"""A throwaway PostgreSQL server for the shared-store tests and benchmark.

Debian's server binaries (``/usr/lib/postgresql/<major>/bin``, or ``PG_BIN``), a fresh
data directory (``initdb -A trust``), listening on 127.0.0.1 only, on a free port, run
as the ``postgres`` user when we are root (PostgreSQL refuses to run as root).
Stopped and deleted at the end. No mock: this is the real server.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


def server_bin() -> Path | None:
    """The folder of PostgreSQL's server binaries, if any is installed."""
    given = os.environ.get("PG_BIN")
    candidates = [Path(given)] if given else []
    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
    found = shutil.which("initdb")
    if found:
        candidates.append(Path(found).parent)
    for folder in candidates:
        if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file():
            return folder
    return None


def why_not() -> str | None:
    """Why no server can be started here (None when one can)."""
    if server_bin() is None:
        return ("no PostgreSQL server binaries (initdb, pg_ctl) found in PG_BIN or "
                "/usr/lib/postgresql/*/bin: apt-get install postgresql")
    if os.geteuid() == 0:
        try:
            import pwd

            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and no 'postgres' user to run the server as"
    try:
        import duckdb_extension_postgres_scanner  # noqa: F401
    except ImportError:
        return "DuckDB's postgres extension is not installed: pip install -e '.[team]'"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PostgresServer:
    """One server: ``start()``, ``create_database(name)`` -> URL, ``stop()``."""

    def __init__(self) -> None:
        folder = server_bin()
        if folder is None:
            raise RuntimeError(why_not() or "no PostgreSQL")
        self.bin = folder
        self.root = Path(tempfile.mkdtemp(prefix="stedge-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.as_postgres = os.geteuid() == 0

    def _run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        command = list(argv)
        if self.as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)

    def start(self) -> PostgresServer:
        """initdb, then start on 127.0.0.1 (sockets in the throwaway folder)."""
        if self.as_postgres:
            shutil.chown(self.root, user="postgres")
        done = self._run(str(self.bin / "initdb"), "-A", "trust", "-U", "postgres",
                         "-E", "UTF8", "--no-sync", "-D", str(self.data))
        if done.returncode:
            raise RuntimeError(f"initdb failed: {done.stderr.strip()[-800:]}")
        options = f"-h 127.0.0.1 -p {self.port} -k {self.root} -F"
        done = self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-o", options,
                         "-l", str(self.root / "server.log"), "-w", "-t", "60", "start")
        if done.returncode:
            log = (self.root / "server.log")
            tail = log.read_text(errors="replace")[-800:] if log.exists() else ""
            raise RuntimeError(f"pg_ctl start failed: {done.stderr.strip()} {tail}")
        return self

    def url(self, database: str = "postgres") -> str:
        """The connection string of ``database`` on this server."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """CREATE DATABASE ``name``; returns its URL."""
        done = self._run(str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port),
                         "-U", "postgres", name)
        if done.returncode:
            raise RuntimeError(f"createdb {name} failed: {done.stderr.strip()}")
        return self.url(name)

    def stop(self) -> None:
        """Stop the server (fast shutdown) and delete its folder."""
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)
