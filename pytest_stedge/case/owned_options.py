"""stedgeai options a case may not pass in ``options``: those the harness sets itself
(where the tool reads the model and writes its outputs, the target, the board) and those
that make it read files a case cannot name inside the corpus."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..errors import CaseError

# stedgeai options the harness sets itself (its 4.0.1 --help, ../shared/stedgeai-formats.md
# §2.1), with what sets them; refused in `options`, as are their argparse abbreviations.
OWNED_OPTIONS: dict[str, str] = {
    "--model": "the case's 'model' key", "-m": "the case's 'model' key",
    "--target": "the case's 'target' key",
    "--name": "the case's 'name' key (it also names every output file)",
    "-n": "the case's 'name' key (it also names every output file)",
    "--output": "the harness (each item's own work folder)",
    "-o": "the harness (each item's own work folder)",
    "--workspace": "the harness (each item's own work folder)",
    "-w": "the harness (each item's own work folder)",
    "--memory-pool": "the case's 'memory_pool' key", "--memory_pool": "the case's 'memory_pool' key",
    "--st-neural-art": "the case's [neural_art] table",
    "--mode": "the case's 'stages' (validate-host, validate-target)",
    "--desc": "--stedge-board", "-d": "--stedge-board",
}
# Options that make the tool read files or folders a case cannot name inside the corpus.
READING_OPTIONS: dict[str, str] = {
    "--val-json": "a c_info JSON file", "--valinput": "validation input files",
    "-vi": "validation input files", "--valoutput": "validation output files",
    "-vo": "validation output files", "--custom": "a custom-layer file",
    "--ispu-conf": "an ISPU configuration file", "--lib": "a library folder", "-l": "a library folder",
}
_OWNED_WHY = "is set by {}; remove it from options"
_READING_WHY = "makes the tool read {}, which a case cannot name inside the corpus; not accepted"


def refuse_owned_options(path: Path, key: str, options: Sequence[str]) -> None:
    """Raise :class:`CaseError` naming the first option of ``options`` (the case file's
    ``key``) that the harness owns, or that reads files from anywhere."""
    for option in options:
        if not option.startswith("-") or option[1:2].isdigit() or option == "-":
            continue  # a value (a number such as -1 included), not an option
        flag = option.split("=", 1)[0]
        found = _match(flag, exact=True) or _match(flag, exact=False)
        if found:
            owned, reason = found
            shown = owned if option == owned else f"{owned} (as {option!r})"
            raise CaseError(path, key, f"option {shown} {reason}")


def _match(flag: str, *, exact: bool) -> tuple[str, str] | None:
    """The option ``flag`` means, with why it is refused. argparse (which stedgeai's --help
    shows) takes an exact name first, then a unique prefix of a long option, or a short
    option with its value attached (``-o/tmp``)."""
    for table, why in ((OWNED_OPTIONS, _OWNED_WHY), (READING_OPTIONS, _READING_WHY)):
        for owned, what in table.items():
            if exact:
                hit = flag == owned
            elif owned.startswith("--"):
                hit = flag.startswith("--") and len(flag) > 3 and owned.startswith(flag)
            else:
                hit = not flag.startswith("--") and flag.startswith(owned)
            if hit:
                return owned, why.format(what)
    return None
