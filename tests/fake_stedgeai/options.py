"""The `stedgeai` command line (4.0.1 `--help` option set), with the tool's error style."""

from __future__ import annotations

import argparse

COMMANDS = ("analyze", "generate", "validate", "supported-ops")
TARGETS = {
    "stm32",
    "stm32n6",
    "stm32wl",
    "stm32u5",
    "stm32l5",
    "stm32h5",
    "stm32c5",
    "stm32mp157c",
    "stm32f4",
    "stm32l4",
    "stm32l4p",
    "stm32g4",
    "stm32f3",
    "stm32wb",
    "stm32v8",
    "stm32h7",
    "stm32f7",
    "stm32u3",
    "stm32f0",
    "stm32l0",
    "stm32g0",
    "stm32c0",
    "ispu",
    "mlc",
}


class CliError(Exception):
    """A command-line problem, printed as `E102(CliArgumentError): <message>`."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise CliError(message)


def build_parser() -> argparse.ArgumentParser:
    """The parser; its option names and short forms follow the real tool."""
    p = _Parser(prog="stedgeai", add_help=False, allow_abbrev=False)
    a = p.add_argument
    a("command", nargs="?", default="analyze", choices=COMMANDS)
    a("-m", "--model", action="append", default=[])
    a("-t", "--type", choices=["keras", "onnx", "tflite"])
    a("--target")
    a("--device")
    a("-n", "--name", default="network")
    a("-c", "--compression", choices=["none", "lossless", "low", "medium", "high"])
    for flag in (
        "--allocate-inputs",
        "--allocate-outputs",
        "--no-inputs-allocation",
        "--no-outputs-allocation",
        "--split-weights",
        "--no-onnx-optimizer",
        "--use-onnx-simplifier",
        "--prefetch-compressed-weights",
        "--allocate-activations",
        "--allocate-states",
        "--binary",
        "--dll",
        "--ihex",
        "--full",
        "--io-only",
        "--save-csv",
        "--classifier",
        "--no-check",
        "--no-exec-model",
        "--with-report",
        "--no-report",
        "--no-workspace",
        "--version",
        "--tools-version",
        "--quiet",
        "--no-c-files",
        "-h",
        "--help",
    ):
        a(flag, action="store_true")
    a("--input-memory-alignment", type=int)
    a("--output-memory-alignment", type=int)
    a("-w", "--workspace", default="st_ai_ws")
    a("-o", "--output", default="st_ai_output")
    a("-O", "--optimization", choices=["time", "ram", "balanced"])
    a("--memory-pool", "--memory_pool", action="append")
    a("--fix-parametric-shapes")
    a("--input-data-type", choices=["float32", "int8", "uint8"])
    a("--output-data-type", choices=["float32", "int8", "uint8"])
    a("--inputs-ch-position", choices=["chfirst", "chlast"])
    a("--outputs-ch-position", choices=["chfirst", "chlast"])
    a("--custom")
    a("--c-api", choices=["st-ai", "legacy"])
    for cut in (
        "--cut-input-tensors",
        "--cut-output-tensors",
        "--cut-input-layers",
        "--cut-output-layers",
    ):
        a(cut)
    a("--hsp", nargs="?", const="4096")
    a("--st-neural-art", nargs="?", const="default")
    a("--address")
    a("--copy-weights-at")
    a("-r", "--reloc", "--relocatable", dest="relocatable", nargs="?", const="")
    a("--eec", "--enable-epoch-controller", dest="enable_epoch_controller", action="store_true")
    a("-l", "--lib")
    a("-b", "--batch-size", type=int)
    a("--mode", choices=["host", "target", "host-io-only", "target-io-only"])
    a("-d", "--desc")
    a("--val-json")
    a("-vi", "--valinput", nargs="+")
    a("-vo", "--valoutput", nargs="+")
    a("--range", nargs="+", type=float)
    a("--seed", type=int)
    a("--ispu-conf")
    a("-v", "--verbosity", "--verbose", nargs="?", const="1")
    a("--series")
    return p


def parse(argv: list[str]) -> argparse.Namespace:
    """Parse ``argv``.

    :raises CliError: for unknown options or bad values, with the tool's wording.
    """
    parser = build_parser()
    ns, extra = parser.parse_known_args(argv)
    if extra:
        raise CliError(f"unrecognized arguments: {' '.join(extra)}")
    if ns.target is None and ns.series:
        ns.target = ns.series
    return ns
