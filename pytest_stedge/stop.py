"""How a session stops: SIGTERM like Ctrl-C, an ending no signal cuts, a stop that cannot hang.

- During the run, the first SIGINT or SIGTERM raises KeyboardInterrupt (pytest stops, the
  items that finished are kept, the run is marked interrupted) - except inside the
  controller's few lines that hand a finished item to the journal and the writer
  (:meth:`SessionStop.shielded`): an interrupt there could leave a lock of the writer's
  queue taken for ever (the stop then waits for ever); it is raised once the item is handed
  over. Nor between the run's record and the session's start
  (:meth:`SessionStop.hold_until_started`): pytest skips the session's end for a session
  that never started (the run stayed `running`, no summary); it is raised as collection
  begins.
- From the session's end on (``pytest_sessionfinish``, then ``pytest_unconfigure``) and
  after the first signal, a signal is noted and said, never raised: the end is what a stop
  does anyway (store the rest, mark the run, print the summary), and cutting it left a raw
  KeyboardInterrupt traceback and a finished run recorded ``killed``.
- The first signal arms a watchdog (:func:`faulthandler.dump_traceback_later`, a C thread
  that needs no interpreter lock): a stop still running after ``stedge_stop_timeout``
  seconds (ini, default 60) prints every thread's stack and exits with status 1. The journal
  stays on disk: the next session on the store merges it.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import threading
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import pytest

DEFAULT_STOP_TIMEOUT_S = 60.0
STOP_TIMEOUT_HELP = (
    "Seconds a stopped session (SIGTERM, Ctrl-C) may take to end before it prints every "
    "thread's stack and exits with status 1, its journal kept (default 60)"
)
_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def stop_timeout(config: pytest.Config) -> float:
    """ini ``stedge_stop_timeout`` in seconds; a usage error names a bad value."""
    text = str(config.getini("stedge_stop_timeout") or "").strip()
    if not text:
        return DEFAULT_STOP_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 86400:  # nan fails too
        raise pytest.UsageError(
            f"ini stedge_stop_timeout: {text!r}: expected a positive number of seconds, at "
            "most 86,400 (one day)"
        )
    return value


class SessionStop:
    """Registered on the controller: owns SIGINT and SIGTERM for the session."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.received: list[str] = []
        self.ending = False
        self._shield = 0
        self._starting = False  # between the run's record and the session's start
        self._pending: str | None = None
        self._previous: dict[int, Any] = {}
        self._armed = False
        self._err = -1  # the terminal's stderr, taken before pytest captures anything

    def install(self) -> None:
        """Take SIGINT and SIGTERM (main thread only). A handler someone else installed
        is kept (Python's own Ctrl-C handler is ours to replace)."""
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in _SIGNALS:
            current = signal.getsignal(signum)
            if current not in (signal.SIG_DFL, signal.default_int_handler):
                continue
            self._previous[signum] = current
            signal.signal(signum, self._on_signal)
        if self._previous:
            try:
                self._err = os.dup(2)
            except OSError:
                self._err = -1

    def uninstall(self) -> None:
        """Give the signals back and disarm the watchdog (the session has ended)."""
        for signum, previous in self._previous.items():
            if signal.getsignal(signum) == self._on_signal:
                signal.signal(signum, previous)
        self._previous.clear()
        if self._armed:
            faulthandler.cancel_dump_traceback_later()
            self._armed = False
        if self._err >= 0:
            os.close(self._err)
            self._err = -1

    @contextmanager
    def shielded(self) -> Iterator[None]:
        """A block no signal interrupts: one that arrives meanwhile is raised at its end."""
        self._shield += 1
        try:
            yield
        finally:
            self._unshield()

    def hold_until_started(self) -> None:
        """Shield the session's start, from the run's record until pytest has started the
        session (its first collection hook): pytest runs the session's end (the run marked
        interrupted, the summary) only for a session that started, so a signal that lands
        meanwhile is raised then."""
        if not self._starting:
            self._starting = True
            self._shield += 1

    def _unshield(self) -> None:
        self._shield -= 1
        if not self._shield and self._pending is not None and not self.ending:
            name, self._pending = self._pending, None
            raise KeyboardInterrupt(f"signal {name}")

    # -- hooks -------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self) -> None:
        if self._starting:  # the session has started: a signal held since is raised here
            self._starting = False
            self._unshield()

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self) -> Generator[None, object, object]:
        self.ending = True  # from here on a signal is said, never raised
        if self._armed:  # again: pytest's faulthandler_timeout cancels it after each test
            self._arm()
        return (yield)

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self) -> None:
        self.uninstall()

    # -- the handler -----------------------------------------------------------------

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        self.received.append(name)
        first = len(self.received) == 1
        if first:
            self._arm()
        if first and not self.ending:
            self._say(f"{name}: stopping the session (a stop longer than "
                      f"{self.timeout_s:g} s prints every thread's stack and exits, the "
                      "journal kept; ini stedge_stop_timeout)")
        if self.ending:
            self._say(f"{name} during the session's end: finishing it (at most "
                      f"{self.timeout_s:g} s, ini stedge_stop_timeout)")
            return
        if not first:
            self._say(f"{name}: the session is already stopping (at most {self.timeout_s:g} s, "
                      "ini stedge_stop_timeout)")
            return
        if self._shield:
            self._pending = name
            return
        raise KeyboardInterrupt(f"signal {signum} ({name})")

    def _arm(self) -> None:
        """After the timeout: every thread's stack, then exit 1 (a C thread does it)."""
        if self._err < 0:
            return
        try:
            faulthandler.dump_traceback_later(self.timeout_s, exit=True, file=self._err)
        except (OSError, ValueError, RuntimeError):
            return
        self._armed = True

    def _say(self, line: str) -> None:
        if self._err >= 0:
            try:
                os.write(self._err, f"\nstedge: {line}\n".encode())
            except OSError:
                pass


__all__ = ["DEFAULT_STOP_TIMEOUT_S", "STOP_TIMEOUT_HELP", "SessionStop", "stop_timeout"]
