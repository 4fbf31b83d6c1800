"""Entry point of the fake `stedgeai`: parse, inject faults, compile, write, print."""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from .faults import FaultConfigError, load_faults
from .options import TARGETS, CliError, parse
from .versions import ToolVersion, tool_version


def _err(code: str, kind: str, message: str) -> str:
    return f"{code}({kind}): {message}"


def _injected(faults: dict[str, Any]) -> int | None:
    """Apply run-level faults; returns an exit status when the run must stop here."""
    sys.stdout.flush()  # a killed run must still show what it printed
    mark = str(faults.get("spawn_mark") or HELPER_MARK)
    pids = str(faults.get("spawn_pids") or "")
    helpers = 0
    if faults.get("spawn"):
        _spawn_helpers(float(faults["spawn"]), mark, pids)
        helpers += 2
    if faults.get("spawn_clean"):
        _spawn_clean_helper(float(faults["spawn_clean"]), mark, pids)
        helpers += 1
    if pids and helpers:
        _wait_settled(Path(pids), helpers)
    if faults.get("sleep"):
        time.sleep(float(faults["sleep"]))
    if faults.get("hang"):
        while True:  # until killed, like a stuck compiler
            time.sleep(3600)
    if faults.get("crash"):
        _crash_in_compiler()
    if faults.get("error"):
        msg = (
            faults["error"]
            if isinstance(faults["error"], str)
            else "injected failure while compiling the network"
        )
        if re.match(r"^(E\d{3}\(\w+\)|INTERNAL ERROR|TOOL ERROR):? ", msg):
            print(msg)  # already a complete tool error line
        else:
            code = str(faults.get("error_code", "E103"))
            print(_err(code, str(faults.get("error_kind", "CompilerError")), msg))
        return int(faults.get("exit_code", 1))
    return None


HELPER_MARK = "fake-stedgeai-helper"


# What a helper runs once settled (in its own session, after its forks): with a folder
# given (argv[-1] not empty), an empty file named by its pid there; then it sleeps.
_SETTLED = (
    "if sys.argv[-1]:\n"
    "    open(os.path.join(sys.argv[-1], str(os.getpid())), 'x').close()\n"
    "time.sleep(float(sys.argv[1]))\n"
)


def _spawn_helpers(seconds: float, mark: str = HELPER_MARK, pids: str = "") -> None:
    """Start two helper processes that outlive a plain kill of the tool: one that calls
    setsid (a session of its own), and one that double-forks away (its parent exits,
    it is re-parented), as compilers and license daemons do. Each sleeps ``seconds``; its
    command line carries ``mark`` (a test finds its own helpers in /proc by it); with
    ``pids``, each writes its pid file there once settled."""
    import subprocess

    code = (
        "import os, sys, time\n"
        "os.setsid()\n"
        "if sys.argv[2] == 'detach' and os.fork():\n"
        "    os._exit(0)\n"
    ) + _SETTLED
    for how in ("setsid", "detach"):
        proc = subprocess.Popen(
            [sys.executable, "-c", code, str(seconds), how, mark, pids],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        if how == "detach":
            proc.wait()  # the forked grandchild lives on, re-parented


def _spawn_clean_helper(seconds: float, mark: str = HELPER_MARK, pids: str = "") -> None:
    """A helper that leaves every trace of the run: it double-forks, calls setsid and execs
    with a cleared environment (so without the harness's token), then sleeps ``seconds``;
    its command line carries ``mark`` (and ``pids``: see :func:`_spawn_helpers`). What a
    license daemon may do."""
    if os.fork() == 0:
        try:
            os.setsid()
            if os.fork() == 0:
                code = "import os, sys, time\n" + _SETTLED
                os.execve(sys.executable, [sys.executable, "-c", code, str(seconds), mark,
                                           "clean-env", pids], {"PATH": "/usr/bin:/bin"})
        finally:
            os._exit(0)
    os.wait()


def _wait_settled(pids: Path, helpers: int, seconds: float = 120.0) -> None:
    """Return once ``helpers`` pid files are in ``pids`` (every helper settled), so that a
    test sees them all while the tool still runs, however loaded the machine; after
    ``seconds`` without them, go on (the test counts the files and says so)."""
    deadline = time.monotonic() + seconds
    while len(list(pids.iterdir())) < helpers and time.monotonic() < deadline:
        time.sleep(0.02)


def _crash_in_compiler() -> None:
    table: dict[str, int] = {}
    print("fake stedgeai: injected crash", file=sys.stderr)
    raise KeyError(f"layer index {len(table)} missing in the c-graph")


def _print_version(ver: ToolVersion) -> None:
    print(ver.banner)
    for line in ver.components():
        print(f"   {line}")


def main(
    argv: list[str] | None = None,
    version: str = "4.0.1",
    config_path: str | None = None,
    root: str | None = None,
) -> int:
    """Run the fake tool as ``version``; ``config_path`` is the baked fault file."""
    args = list(sys.argv[1:] if argv is None else argv)
    ver = tool_version(version)
    start = time.monotonic()
    try:
        ns = parse(args)
    except CliError as exc:
        print(ver.banner)
        print(_err("E102", "CliArgumentError", str(exc)))
        return 1
    if ns.version:
        _print_version(ver)
        return 0
    if ns.help or ns.h:
        print(ver.banner)
        print(
            "usage: stedgeai --model FILE --target TARGET [options] analyze|generate|validate|"
            "supported-ops"
        )
        return 0
    if ns.tools_version:
        print(ver.banner)
        import numpy
        import onnx

        print(f"   numpy {numpy.__version__}\n   onnx {onnx.__version__}")
        return 0
    print(ver.banner)
    print()
    if ns.command == "supported-ops":
        print("ONNX operators (fake list): Add, AveragePool, Conv, Gemm, MatMul, Relu, Softmax")
        return 0
    model = Path(ns.model[0]) if ns.model else None
    try:
        faults = load_faults(
            Path(config_path) if config_path else None, model.stem if model else "", ns.command,
            _run_options(args, ns, Path(root) if root else None),
        )
    except FaultConfigError as exc:
        print(f"fake stedgeai: {exc}", file=sys.stderr)
        return 2
    stop = _injected(faults)
    if stop is not None:
        return stop
    try:
        problem = _check(ns, ver, model)
    except CliError as exc:
        problem = str(exc)
    if problem:
        print(problem)
        return 1
    assert model is not None
    from .pipeline import execute

    return execute(ns, args, ver, model, faults, Path(root) if root else None, start)


def _run_options(args: list[str], ns: Any, root: Path | None) -> set[str]:
    """The option words of a run: its command line's and its Neural-ART profile's."""
    words = {a for a in args if a.startswith("-")}
    spec = getattr(ns, "st_neural_art", None)
    if spec and not str(spec).startswith("-"):
        from .pipeline import _builtin_profiles
        from .profiles import ProfileError, resolve_profile

        try:
            words |= set(resolve_profile(spec, _builtin_profiles(root)).options.split())
        except ProfileError:
            pass  # the run itself reports it
    return words


def _check(ns: Any, ver: ToolVersion, model: Path | None) -> str | None:
    """Argument checks the real tool makes before loading the model."""
    if model is None:
        return _err("E102", "CliArgumentError", "the following argument is required: --model")
    if ns.target is None:
        return _err("E102", "CliArgumentError", "the following argument is required: --target")
    if ns.target not in TARGETS:
        return _err(
            "E102",
            "CliArgumentError",
            f'unsupported target "{ns.target}" - expected one of {", ".join(sorted(TARGETS))}',
        )
    if not model.is_file():
        return _err("E102", "CliArgumentError", f"model file '{model}' does not exist")
    if model.suffix.lower() != ".onnx":
        return _err(
            "E010",
            "InvalidModelError",
            f"'{model.name}': only ONNX models are handled by this installation",
        )
    if ns.st_neural_art is not None and ns.target != "stm32n6":
        return _err(
            "E102",
            "CliArgumentError",
            "--st-neural-art is only supported with the 'stm32n6' target",
        )
    if ns.c_api == "st-ai" and (ns.address or ns.copy_weights_at):
        return _err(
            "E102",
            "CliArgumentError",
            "--address/--copy-weights-at arguments are not supported with the 'st-ai' c-api.",
        )
    if ns.command == "validate":
        mode = ns.mode or "host"
        if mode.startswith("target"):
            if not ns.desc:
                return _err(
                    "E801", "HwIOError", "No SERIAL COM port detected (STM board is not connected!)"
                )
            # serial[:PORT][:BAUD], or socket:HOST:PORT (a TCP relay or the board simulator)
            if not ns.desc.startswith(("serial", "socket:")):
                return _err(
                    "E102", "CliArgumentError", f'invalid/unsupported "{ns.desc}" descriptor'
                )
        elif ns.target == "stm32n6" and ver.key >= (4, 0, 0):
            return _err(
                "E102",
                "CliArgumentError",
                "Validation on host is not supported for devices based on Arm Cortex M55/M85 core.",
            )
    return None


if __name__ == "__main__":  # pragma: no cover - the install script calls main() itself
    sys.exit(main())
