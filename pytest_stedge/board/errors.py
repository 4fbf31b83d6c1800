"""What can go wrong with a board, one class per cause, so callers and the pytest stage
can say what to do (flash the firmware, free the port, check the cable)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_stedge.errors import BoardError

if TYPE_CHECKING:
    from .messages import RunOutput

FLASH_HINT = ("flash it with ST's validation firmware: `stedgeai generate` for the model, then "
              "the install's loader (STM32N6: scripts/N6_scripts/n6_loader.py, which pytest "
              "runs in the validate-target loader step) or STM32CubeProgrammer")

class BoardNotFoundError(BoardError):
    """No such port, no port at all, or nothing listening at a socket URL."""


class BoardBusyError(BoardError):
    """The port is held by another program (a terminal, STM32CubeIDE, another test)."""


class BoardNotValidationFirmwareError(BoardError):
    """Something answered, but not the validation firmware's sync."""


class BoardProtocolVersionError(BoardError):
    """The firmware speaks a message version this client does not know."""


class BoardNetworkMismatchError(BoardError):
    """The board holds another network than the one the case expects."""


class BoardRequestError(BoardError):
    """The board refused a request (``S_ERROR``), e.g. wrong input size or unknown model."""


class BoardCommunicationError(BoardError):
    """The link broke mid-transaction; ``partial`` holds what arrived before (run only)."""

    partial: RunOutput | None = None


class BoardTimeoutError(BoardCommunicationError):
    """The board went silent longer than the phase's time limit."""


class BoardDisconnectedError(BoardCommunicationError):
    """The port or socket closed under us (cable pulled, board reset, relay died)."""


class BoardProtocolError(BoardCommunicationError):
    """Bytes that are not the protocol: garbage, wrong framing, wrong request id."""
