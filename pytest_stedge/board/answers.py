"""Reading the board's answers: an answer checked against the request it answers, the
name of a node report, a duration as the firmware meant it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import protocol as bp
from .errors import BoardProtocolError, BoardRequestError
from .messages import SyncInfo


def checked_answer(msg: Mapping[str, Any], reqid: int, payload: str, states: tuple[int, ...],
                   where: str) -> dict[str, Any]:
    """The ``payload`` of an answer to request ``reqid``, in one of ``states``.

    :raises BoardRequestError: the board refused the request (an error ack).
    :raises BoardProtocolError: an answer to another request (the link is out of step), or
        another payload or state than expected.
    """
    if msg["reqid"] != reqid:
        raise BoardProtocolError(f"{where}: answer to request {msg['reqid']} while "
                                 f"waiting for request {reqid} (link out of step)")
    kind = next((k for k in bp.PAYLOADS if msg.get(k) is not None), "nothing")
    if msg["state"] == bp.S_ERROR and kind == "ack":
        err = msg["ack"]
        name = bp.ERROR_NAMES.get(err["error"], err["error"])
        raise BoardRequestError(f"{where} refused the request: {name} (param "
                                f"{err['param']}) while {payload!r} was expected")
    if kind != payload or msg["state"] not in states:
        raise BoardProtocolError(
            f"{where}: received {kind!r} in state "
            f"{bp.STATE_NAMES.get(msg['state'], msg['state'])} while {payload!r} in "
            f"{'/'.join(bp.STATE_NAMES[s] for s in states)} was expected")
    return dict(msg[payload])


def node_name(op: Mapping[str, Any], position: int, sync: SyncInfo | None) -> str:
    """A node report's name: its own, else ``epoch_<n>`` on the N6 (whose id is
    ``last_epoch << 16 | epoch``), else ``node_<id or position>``."""
    if op["name"]:
        return str(op["name"])
    if sync and sync.rtid & 0xFF == 4:
        return f"epoch_{op['id'] & 0xFFFF}"
    return f"node_{op['id'] if op['id'] else position}"


def duration_ms(value: float) -> float:
    """A float32 duration without its binary noise (0.01016 rather than 0.010160000063)."""
    return float(f"{value:.7g}")
